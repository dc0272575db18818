/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A direct parser of the kernel's mountinfo format (proc(5)): one pass over the
 * text in pieces, each line split and unescaped in place in its piece and its
 * strings kept in blocks of the table's own. libmount's parser is
 * the reference: tests/unit/test-mountinfo.c compares both on every sample, a
 * generated 50,000-line table and the live table. Profiling an audit of a
 * 10,000-mount host showed libmount's per-entry allocations and its format
 * guessing (a garbage first line reads as fstab) cost more than reading the
 * file; a direct parser also names the field at fault.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "snapshot/mountinfo.h"
#include "util/alloc.h"
#include "util/escape.h"
#include "util/string-util.h"

bool mount_entry_equal(const struct mount_entry *x, const struct mount_entry *y)
{
	return x->id == y->id && x->parent_id == y->parent_id && x->dev == y->dev &&
	       streq(x->root, y->root) && streq(x->mountpoint, y->mountpoint) &&
	       streq(x->fstype, y->fstype) && streq(x->source, y->source) &&
	       streq(x->mount_options, y->mount_options) &&
	       streq(x->super_options, y->super_options) && x->shared == y->shared &&
	       x->master == y->master;
}

int mount_table_copy(const struct mount_table *t, const size_t *idx, size_t n,
		     struct mount_table **ret)
{
	_cleanup_(mount_table_freep) struct mount_table *c = calloc(1, sizeof(*c));
	size_t size = 0;
	char *p;

	if (!idx)
		n = t->n_entries;
	if (!c || !(c->entries = calloc(n ?: 1, sizeof(*c->entries))))
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const struct mount_entry *e = &t->entries[idx ? idx[k] : k];

		size += strlen(e->root) + strlen(e->mountpoint) + strlen(e->fstype) +
			strlen(e->source) + strlen(e->mount_options) + strlen(e->super_options) + 6;
	}
	c->buffer = p = malloc(size ?: 1);
	if (!c->buffer)
		return -ENOMEM;
	if (t->unique_ids) {
		c->unique_ids = malloc(sizeof(*c->unique_ids) * (n ?: 1));
		if (!c->unique_ids)
			return -ENOMEM;
		for (size_t k = 0; k < n; k++)
			c->unique_ids[k] = t->unique_ids[idx ? idx[k] : k];
	}
#define COPY_FIELD(field)                                                                          \
	do {                                                                                       \
		size_t _len = strlen(e->field) + 1;                                                \
		d->field = memcpy(p, e->field, _len);                                              \
		p += _len;                                                                         \
	} while (0)
	for (size_t k = 0; k < n; k++) {
		const struct mount_entry *e = &t->entries[idx ? idx[k] : k];
		struct mount_entry *d = &c->entries[k];

		*d = *e;
		COPY_FIELD(root);
		COPY_FIELD(mountpoint);
		COPY_FIELD(fstype);
		COPY_FIELD(source);
		COPY_FIELD(mount_options);
		COPY_FIELD(super_options);
	}
#undef COPY_FIELD
	c->n_entries = n;
	*ret = TAKE_PTR(c);
	return 0;
}

/* Cut the next space-separated field off *p (the source may be empty: two spaces). */
static char *next_field(char **p, char *end)
{
	char *start = *p, *sp;

	if (start > end)
		return NULL;
	sp = memchr(start, ' ', (size_t)(end - start));
	if (!sp) {
		*p = end + 1;
		*end = 0;
		return start;
	}
	*sp = 0;
	*p = sp + 1;
	return start;
}

static int parse_u32(const char *s, unsigned *ret)
{
	unsigned long v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > UINT_MAX)
			return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

static int fail(struct parse_error *err, unsigned line, const char *what)
{
	err->line = line;
	snprintf(err->message, sizeof(err->message), "%s", what);
	return -EINVAL;
}

/* Parse one line (NUL-terminated at end) into e. */
/* The first " - " in [p, end), as memmem() would find it, NULL when none: each '-' looked at,
 * which a line has few of, is cheaper than memmem()'s search on a 100-byte line. */
static char *find_separator(char *p, char *end)
{
	for (char *q = p + 1; q + 1 < end; q++) {
		q = memchr(q, '-', (size_t)(end - 1 - q));
		if (!q)
			return NULL;
		if (q[-1] == ' ' && q[1] == ' ')
			return q - 1;
	}
	return NULL;
}

static int parse_line(char *p, char *end, struct mount_entry *e, unsigned line,
		      struct parse_error *err)
{
	char *id, *parent, *devno, *colon, *sep;
	unsigned ma, mi;

	sep = find_separator(p, end);
	if (!sep)
		return fail(err, line, "missing \" - \" separator before the filesystem type");
	*sep = 0;

	id = next_field(&p, sep);
	parent = next_field(&p, sep);
	devno = next_field(&p, sep);
	e->root = next_field(&p, sep);
	e->mountpoint = next_field(&p, sep);
	e->mount_options = next_field(&p, sep);
	if (!e->mount_options || !*e->mount_options || !*e->root || !*e->mountpoint)
		return fail(err, line,
			    "expected \"ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS\"");
	/* optional fields (shared:N master:N propagate_from:N unbindable) run up to the
	 * separator; only the peer groups are kept, anything else is skipped */
	for (char *opt; (opt = next_field(&p, sep));) {
		if (strncmp(opt, "shared:", 7) == 0 && parse_u32(opt + 7, &e->shared) < 0)
			return fail(err, line, "shared:N must be a number");
		if (strncmp(opt, "master:", 7) == 0 && parse_u32(opt + 7, &e->master) < 0)
			return fail(err, line, "master:N must be a number");
	}
	if (parse_u32(id, &e->id) < 0 || parse_u32(parent, &e->parent_id) < 0)
		return fail(err, line, "mount id and parent id must be numbers");
	colon = strchr(devno, ':');
	if (!colon)
		return fail(err, line, "device must be MAJOR:MINOR");
	*colon = 0;
	if (parse_u32(devno, &ma) < 0 || parse_u32(colon + 1, &mi) < 0)
		return fail(err, line, "device must be MAJOR:MINOR");
	e->dev = makedev(ma, mi);

	p = sep + 3;
	e->fstype = next_field(&p, end);
	e->source = next_field(&p, end);
	e->super_options = next_field(&p, end);
	if (!e->fstype || !e->source || !e->super_options || !*e->fstype || p <= end)
		return fail(err, line, "expected FSTYPE SOURCE OPTIONS after \" - \"");

	unescape_octal(e->root);
	unescape_octal(e->mountpoint);
	unescape_octal(e->fstype);
	unescape_octal(e->source);
	return 0;
}

/*
 * The strings of a table read in pieces: copied out of each piece into blocks that never move,
 * and shared with the entry before when equal (a table's neighbours mostly have the same type,
 * source and options), so that mostly what differs from the line before, the mountpoint, is
 * written a second time.
 */
struct mount_strings {
	struct mount_strings *next;
	size_t used, size;
	char data[];
};

#define STRINGS_BLOCK (64u << 10)
/* The text is read through a buffer of this size, grown only for a longer line. */
#define READ_PIECE (64u << 10)

static void strings_free(struct mount_strings *b)
{
	while (b) {
		struct mount_strings *next = b->next;

		free(b);
		b = next;
	}
}

struct mount_table *mount_table_free(struct mount_table *t)
{
	if (!t)
		return NULL;
	free(t->buffer);
	strings_free(t->strings);
	free(t->entries);
	free(t->unique_ids);
	free(t);
	return NULL;
}

static char *strings_add(struct mount_table *t, const char *s)
{
	size_t len = strlen(s) + 1;
	struct mount_strings *b = t->strings;
	char *p;

	if (!b || b->size - b->used < len) {
		/* 4 KiB first, then twice the last up to STRINGS_BLOCK: a container's table of 30
		 * mounts takes one small block, a host's of 10,000 a few dozen large ones. */
		size_t size = b ? b->size * 2 : 4096;

		if (size > STRINGS_BLOCK)
			size = STRINGS_BLOCK;
		if (size < len)
			size = len;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		*b = (struct mount_strings){ .next = t->strings, .size = size };
		t->strings = b;
	}
	p = memcpy(b->data + b->used, s, len);
	b->used += len;
	return p;
}

/* s, kept: the previous entry's copy when it is the same string. */
static int keep_string(struct mount_table *t, char **s, const char *prev)
{
	if (prev && streq(*s, prev)) {
		*s = (char *)prev;
		return 0;
	}
	*s = strings_add(t, *s);
	return *s ? 0 : -ENOMEM;
}

struct table_reader {
	struct mount_table *t;
	size_t allocated;
	unsigned line; /* lines parsed so far */
	int fd;	       /* read from it, or copy from text */
	const char *text;
	size_t size, offset;
};

static ssize_t reader_fill(struct table_reader *rd, char *buf, size_t n)
{
	ssize_t k;

	if (!rd->text) {
		do
			k = read(rd->fd, buf, n);
		while (k < 0 && errno == EINTR);
		return k < 0 ? -errno : k;
	}
	if (n > rd->size - rd->offset)
		n = rd->size - rd->offset;
	memcpy(buf, rd->text + rd->offset, n);
	rd->offset += n;
	return (ssize_t)n;
}

/* One line, [p, end) with *end writable, parsed in place, then its strings copied out. */
static int reader_line(struct table_reader *rd, char *p, char *end, struct parse_error *err)
{
	struct mount_table *t = rd->t;
	const struct mount_entry *prev = t->n_entries ? &t->entries[t->n_entries - 1] : NULL;
	struct mount_entry e = { 0 };
	int r;

	*end = 0;
	rd->line++;
	if (end == p)
		return 0;
	r = parse_line(p, end, &e, rd->line, err);
	if (r < 0)
		return r;
	if (keep_string(t, &e.root, prev ? prev->root : NULL) < 0 ||
	    keep_string(t, &e.mountpoint, prev ? prev->mountpoint : NULL) < 0 ||
	    keep_string(t, &e.fstype, prev ? prev->fstype : NULL) < 0 ||
	    keep_string(t, &e.source, prev ? prev->source : NULL) < 0 ||
	    keep_string(t, &e.mount_options, prev ? prev->mount_options : NULL) < 0 ||
	    keep_string(t, &e.super_options, prev ? prev->super_options : NULL) < 0)
		return -ENOMEM;
	if (t->n_entries == rd->allocated) {
		size_t n = rd->allocated ? rd->allocated * 2 : 64;
		struct mount_entry *x = reallocarray(t->entries, n, sizeof(*x));

		if (!x)
			return -ENOMEM;
		t->entries = x;
		rd->allocated = n;
		/* Faulted in ahead, as much again as the entries: the heap that the next doubling,
		 * the strings, the analysis and the report carve up (nothing for a small table,
		 * or in the daemon).
		 */
		heap_prefault(n * sizeof(*x));
	}
	t->entries[t->n_entries++] = e;
	return 0;
}

/*
 * Read the text in pieces through one small buffer and keep only what was parsed out of it.
 * Reading it whole into one buffer, as large as the text, cost more than the parse: each fresh
 * page of it is faulted in by the kernel writing to it and, in a virtual machine that shadows
 * the guest's page tables, trapped again at our first read of it (about 3 ms of a 30 ms audit at
 * 10,000 mounts, tests/bench/README.md).
 */
static int table_read(struct table_reader *rd, size_t max_size, struct mount_table **ret,
		      struct parse_error *err)
{
	_cleanup_(mount_table_freep) struct mount_table *t = calloc(1, sizeof(*t));
	_cleanup_free_ char *buf = NULL;
	size_t cap = READ_PIECE, have = 0, total = 0;
	bool eof = false;

	*err = (struct parse_error){ 0 };
	if (cap > max_size + 1)
		cap = max_size + 1;
	/* One more byte than the piece: the last line may lack its newline. */
	if (!t || !(buf = malloc(cap + 1)))
		return -ENOMEM;
	rd->t = t;
	while (!eof) {
		char *p, *end, *nul;
		ssize_t n;
		int r;

		if (have == cap) {
			/* A line longer than the buffer: twice the buffer, within the limit. */
			size_t nc = cap > (max_size + 1) / 2 ? max_size + 1 : cap * 2;
			char *x;

			if (nc <= cap)
				return -EFBIG;
			x = realloc(buf, nc + 1);
			if (!x)
				return -ENOMEM;
			buf = x;
			cap = nc;
		}
		n = reader_fill(rd, buf + have, cap - have);
		if (n < 0)
			return (int)n;
		eof = n == 0;
		total += (size_t)n;
		if (total > max_size)
			return -EFBIG;
		nul = memchr(buf + have, 0, (size_t)n);
		if (nul) {
			unsigned line = rd->line + 1;

			for (const char *q = buf; q < nul; q++)
				line += *q == '\n';
			return fail(err, line, "NUL byte in line");
		}
		have += (size_t)n;

		end = buf + have;
		for (p = buf; p < end;) {
			char *eol = memchr(p, '\n', (size_t)(end - p));

			if (!eol && !eof)
				break;
			r = reader_line(rd, p, eol ?: end, err);
			if (r < 0)
				return r;
			p = eol ? eol + 1 : end;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
	*ret = TAKE_PTR(t);
	return 0;
}

int mount_table_parse(const char *text, size_t size, struct mount_table **ret,
		      struct parse_error *err)
{
	struct table_reader rd = { .fd = -EBADF, .text = text, .size = size };

	return table_read(&rd, size, ret, err);
}

int mount_table_read_fd(int fd, size_t max_size, struct mount_table **ret, struct parse_error *err)
{
	struct table_reader rd = { .fd = fd };

	return table_read(&rd, max_size, ret, err);
}

bool option_get(const char *options, const char *name, char **ret_value)
{
	size_t nl = strlen(name);

	if (ret_value)
		*ret_value = NULL;
	for (const char *p = options; p && *p;) {
		const char *e = strchrnul(p, ',');
		size_t len = (size_t)(e - p);

		if (len >= nl && strncmp(p, name, nl) == 0 && (len == nl || p[nl] == '=')) {
			if (ret_value && len > nl)
				*ret_value = strndup(p + nl + 1, len - nl - 1);
			return true;
		}
		p = *e ? e + 1 : e;
	}
	return false;
}
