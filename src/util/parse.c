/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "util/parse.h"

int parse_mode(const char *s, mode_t *ret)
{
	unsigned long v = 0;
	size_t n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++, n++) {
		if (*p < '0' || *p > '7' || n >= 6)
			return -EINVAL;
		v = v * 8 + (unsigned long)(*p - '0');
	}
	if (v > 07777)
		return -EINVAL;
	*ret = (mode_t)v;
	return 0;
}

const char *format_mode(mode_t mode, char buf[static 8])
{
	snprintf(buf, 8, "%04o", (unsigned)(mode & 07777));
	return buf;
}

int parse_uint(const char *s, unsigned *ret)
{
	unsigned long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end || v > UINT_MAX)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

int parse_devnum(const char *s, dev_t *ret)
{
	unsigned ma, mi;
	const char *colon;
	char buf[16];
	size_t n;

	if (!s)
		return -EINVAL;
	colon = strchr(s, ':');
	if (!colon)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (parse_uint(buf, &ma) < 0 || parse_uint(colon + 1, &mi) < 0)
		return -EINVAL;
	*ret = makedev(ma, mi);
	return 0;
}

const char *format_devnum(dev_t dev, char buf[static 24])
{
	snprintf(buf, 24, "%u:%u", major(dev), minor(dev));
	return buf;
}

bool kernel_at_least(const char *release, unsigned want_major, unsigned want_minor)
{
	unsigned ma, mi;

	if (!release || sscanf(release, "%u.%u", &ma, &mi) != 2)
		return true;
	return ma > want_major || (ma == want_major && mi >= want_minor);
}
