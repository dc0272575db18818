/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/fstab.h"
#include "util/alloc.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/macro.h"

void fstab_iter_init(struct fstab_iter *it, const char *text, size_t size)
{
	const char *nul = text ? memchr(text, 0, size) : NULL;

	*it = (struct fstab_iter){
		.p = text,
		.end = text ? (nul ?: text + size) : NULL,
	};
}

void fstab_iter_done(struct fstab_iter *it)
{
	free(it->buf);
	*it = (struct fstab_iter){ 0 };
}

/* Split the line in place into at most 4 fields; returns the count. */
static int split_fields(char *line, char *field[static 4])
{
	int n = 0;

	for (char *q = line; *q && n < 4;) {
		q += strspn(q, " \t");
		if (!*q || *q == '#')
			break;
		field[n++] = q;
		q += strcspn(q, " \t");
		if (*q)
			*q++ = 0;
	}
	return n;
}

int fstab_iter_next(struct fstab_iter *it, struct fstab_entry *ret)
{
	while (it->p && it->p < it->end) {
		const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
		size_t len = (size_t)((nl ?: it->end) - it->p);
		char *field[4] = { 0 };

		if (GROW(it->buf, it->allocated, len + 1) < 0)
			return -ENOMEM;
		memcpy(it->buf, it->p, len);
		it->buf[len] = 0;
		it->p = nl ? nl + 1 : it->end;
		it->line++;
		if (split_fields(it->buf, field) < 3)
			continue;
		for (int i = 0; i < 4; i++)
			if (field[i])
				unescape_octal(field[i]);
		*ret = (struct fstab_entry){
			.line = it->line,
			.spec = field[0],
			.file = field[1],
			.vfstype = field[2],
			.options = field[3],
		};
		return 1;
	}
	return 0;
}

int fstab_read_in_root(const char *root, char **ret)
{
	/* a FIFO there must not stall the boot: only a regular file is read */
	return read_file_in_root(root, "etc/fstab", FSTAB_SIZE_MAX, ret);
}
