/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/namespace-handle.h"
#include "probe/namespace.h"

void namespace_handle_of(const struct namespace_target *t, struct namespace_handle *ret)
{
	*ret = (struct namespace_handle){
		.mntns = t->mntns,
		.root_dev = (uint64_t)t->root_dev,
		.root_ino = (uint64_t)t->root_ino,
		.start_time = t->start_time,
	};
}

void namespace_handle_format(const struct namespace_handle *h, char *buf, size_t size)
{
	snprintf(buf, size, "mntns:%llu,root:%llu:%llu,start:%llu", (unsigned long long)h->mntns,
		 (unsigned long long)h->root_dev, (unsigned long long)h->root_ino,
		 (unsigned long long)h->start_time);
}

/* A decimal number at *p, then the byte end (0 for the end of the text): 0 or -EINVAL. */
static int take_number(const char **p, char end, uint64_t *ret)
{
	unsigned long long v;
	char *e;

	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(*p, &e, 10);
	if (errno != 0 || *e != end)
		return -EINVAL;
	*ret = v;
	*p = end ? e + 1 : e;
	return 0;
}

static int take_key(const char **p, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(*p, key, n) != 0)
		return -EINVAL;
	*p += n;
	return 0;
}

int namespace_handle_parse(const char *s, struct namespace_handle *ret)
{
	struct namespace_handle h;
	const char *p = s;

	if (take_key(&p, "mntns:") < 0 || take_number(&p, ',', &h.mntns) < 0 || h.mntns == 0 ||
	    take_key(&p, "root:") < 0 || take_number(&p, ':', &h.root_dev) < 0 ||
	    take_number(&p, ',', &h.root_ino) < 0 || take_key(&p, "start:") < 0 ||
	    take_number(&p, 0, &h.start_time) < 0)
		return -EINVAL;
	*ret = h;
	return 0;
}

const char *namespace_handle_differs(const struct namespace_handle *want,
				     const struct namespace_handle *now, char *buf, size_t size)
{
	if (now->mntns != want->mntns)
		snprintf(buf, size, "its mount namespace is %llu, not %llu",
			 (unsigned long long)now->mntns, (unsigned long long)want->mntns);
	else if (now->root_dev != want->root_dev || now->root_ino != want->root_ino)
		snprintf(buf, size, "its root directory is %llu:%llu, not %llu:%llu",
			 (unsigned long long)now->root_dev, (unsigned long long)now->root_ino,
			 (unsigned long long)want->root_dev, (unsigned long long)want->root_ino);
	else if (now->start_time != want->start_time)
		snprintf(buf, size, "its start time is %llu, not %llu",
			 (unsigned long long)now->start_time, (unsigned long long)want->start_time);
	else
		return NULL;
	return buf;
}
