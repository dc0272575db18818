/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/idmap.h"
#include "util/macro.h"

/* Each line of a map: "INSIDE OUTSIDE COUNT". Calls fn until it returns true. */
static bool idmap_each(const char *map,
		       bool (*fn)(unsigned long long in, unsigned long long out,
				  unsigned long long count, void *arg),
		       void *arg)
{
	for (const char *p = map; p && *p;) {
		unsigned long long in, out, count;
		const char *nl = strchr(p, '\n');

		if (sscanf(p, "%llu %llu %llu", &in, &out, &count) == 3 && fn(in, out, count, arg))
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

struct idmap_query {
	unsigned long long id;
	unsigned result;
};

static bool outside_matches(unsigned long long in, unsigned long long out, unsigned long long count,
			    void *arg)
{
	struct idmap_query *q = arg;

	if (q->id < out || q->id - out >= count)
		return false;
	q->result = (unsigned)(in + (q->id - out));
	return true;
}

static bool inside_matches(unsigned long long in, unsigned long long out, unsigned long long count,
			   void *arg)
{
	struct idmap_query *q = arg;

	if (q->id < in || q->id - in >= count)
		return false;
	q->result = (unsigned)(out + (q->id - in));
	return true;
}

int idmap_from_initial(const char *map, unsigned id, unsigned *ret)
{
	struct idmap_query q = { .id = id };

	if (!map) {
		*ret = id;
		return 0;
	}
	if (!idmap_each(map, outside_matches, &q))
		return -ENOENT;
	*ret = q.result;
	return 0;
}

int idmap_to_initial(const char *map, unsigned id, unsigned *ret)
{
	struct idmap_query q = { .id = id };

	if (!map) {
		*ret = id;
		return 0;
	}
	if (!idmap_each(map, inside_matches, &q))
		return -ENOENT;
	*ret = q.result;
	return 0;
}

/* The kernel's overflow id (/proc/sys/kernel/overflowuid): what a namespace sees for an id it
 * has no number for. */
unsigned idmap_from_initial_or_overflow(const char *map, unsigned id)
{
	unsigned v;

	return idmap_from_initial(map, id, &v) == 0 ? v : IDMAP_OVERFLOW_ID;
}

static bool add_count(unsigned long long in, unsigned long long out, unsigned long long count,
		      void *arg)
{
	*(unsigned long long *)arg += count;
	return false; /* on to the next line */
}

unsigned long long idmap_size(const char *map)
{
	unsigned long long n = 0;

	if (!map)
		return 4294967296ULL;
	(void)idmap_each(map, add_count, &n);
	return n;
}

static bool note_highest(unsigned long long in, unsigned long long out, unsigned long long count,
			 void *arg)
{
	unsigned long long *high = arg;

	if (count > 0 && in + count - 1 > *high && in + count - 1 <= UINT32_MAX)
		*high = in + count - 1;
	return false;
}

int idmap_highest_inside(const char *map, unsigned *ret)
{
	unsigned long long high = 0;

	if (!map)
		return -EINVAL;
	(void)idmap_each(map, note_highest, &high);
	if (high == 0)
		return -ENOENT;
	*ret = (unsigned)high;
	return 0;
}

bool idmap_has_inside(const char *map, unsigned id)
{
	struct idmap_query q = { .id = id };

	return !map || idmap_each(map, inside_matches, &q);
}

struct idmap_shift {
	long long delta;
	FILE *out;
	bool bad;
};

static bool shift_line(unsigned long long in, unsigned long long out, unsigned long long count,
		       void *arg)
{
	struct idmap_shift *sh = arg;
	long long first = (long long)out + sh->delta;

	if (first < 0 || (unsigned long long)first + count > 4294967296ULL)
		sh->bad = true;
	else
		fprintf(sh->out, "%llu %llu %llu\n", in, (unsigned long long)first, count);
	return sh->bad;
}

/* map with every outside id moved by delta, malloc'ed into *ret; -ERANGE when one would leave
 * the 32-bit range, -ENOMEM. */
int idmap_shifted(const char *map, long long delta, char **ret)
{
	_cleanup_free_ char *text = NULL;
	size_t size = 0;
	struct idmap_shift sh = { .delta = delta };

	sh.out = open_memstream(&text, &size);
	if (!sh.out)
		return -ENOMEM;
	(void)idmap_each(map, shift_line, &sh);
	if (fclose(sh.out) != 0 || !text)
		return -ENOMEM;
	if (sh.bad)
		return -ERANGE;
	*ret = TAKE_PTR(text);
	return 0;
}

/* One id of the judged namespace's map checked against the probe's slave: want, as mountinfo
 * prints it (the initial namespace's number), is seen there as seen. What the map's outside ids
 * are off by: 0 when they are right, or when that cannot be told (the identity; an id the
 * namespace cannot name, which tells nothing). */
long long idmap_offset(const char *map, unsigned want, unsigned seen)
{
	unsigned v, outside;

	if (!map || seen == IDMAP_OVERFLOW_ID ||
	    (idmap_from_initial(map, want, &v) == 0 && v == seen) ||
	    idmap_to_initial(map, seen, &outside) < 0)
		return 0;
	return (long long)want - (long long)outside;
}
