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

/* Written digit by digit: a report formats a few for every devpts instance, and printf's
 * machinery costs twenty times as much as the digits. */
const char *format_mode(mode_t mode, char buf[static 8])
{
	for (int i = 3; i >= 0; i--, mode >>= 3)
		buf[i] = (char)('0' + (mode & 7));
	buf[4] = 0;
	return buf;
}

char *format_decimal(char *p, unsigned v)
{
	char digits[10];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0)
		*p++ = digits[--n];
	return p;
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
	char *p = format_decimal(buf, major(dev));

	*p++ = ':';
	*format_decimal(p, minor(dev)) = 0;
	return buf;
}

bool kernel_at_least(const char *release, unsigned want_major, unsigned want_minor)
{
	unsigned ma, mi;

	if (!release || sscanf(release, "%u.%u", &ma, &mi) != 2)
		return true;
	return ma > want_major || (ma == want_major && mi >= want_minor);
}
