/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <libmount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mountinfo.h"
#include "util/util.h"

struct parse_state {
	unsigned bad_line;
};

static int on_parse_error(struct libmnt_table *tb, const char *filename, int line)
{
	struct parse_state *st = mnt_table_get_userdata(tb);

	if (st && st->bad_line == 0)
		st->bad_line = (unsigned)line;
	return -EINVAL; /* every malformed line is fatal: a silently dropped devpts line lies */
}

/* Skip digits followed by `then`; NULL if there are none or something else follows. Parsed
 * here by hand: sscanf() on a long unterminated buffer costs a strlen() per line. */
static const char *skip_number(const char *p, const char *end, char then)
{
	const char *start = p;

	while (p < end && *p >= '0' && *p <= '9' && p - start < 10)
		p++;
	if (p == start || p >= end || *p != then)
		return NULL;
	return p + 1;
}

/*
 * libmount guesses the format from the first line and would read a garbage
 * first line as fstab. Insist on the mountinfo shape ("ID PARENT MAJ:MIN ...")
 * for every line ourselves before libmount sees the text, and let libmount do
 * the field parsing and unescaping.
 */
static int check_shape(const char *text, size_t size, struct parse_error *err)
{
	unsigned line = 0;

	for (const char *p = text, *end = text + size; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *sep, *q;

		if (!eol)
			eol = end;
		line++;
		if (memchr(p, 0, (size_t)(eol - p))) {
			err->line = line;
			snprintf(err->message, sizeof(err->message), "NUL byte in line");
			return -EINVAL;
		}
		if (eol > p) {
			size_t pre = 1, post = 1;

			q = skip_number(p, eol, ' ');
			q = q ? skip_number(q, eol, ' ') : NULL;
			q = q ? skip_number(q, eol, ':') : NULL;
			q = q ? skip_number(q, eol, ' ') : NULL;
			if (!q) {
				err->line = line;
				snprintf(err->message, sizeof(err->message),
					 "expected \"ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ...\"");
				return -EINVAL;
			}
			sep = memmem(p, (size_t)(eol - p), " - ", 3);
			if (!sep) {
				err->line = line;
				snprintf(err->message, sizeof(err->message),
					 "missing \" - \" separator before the filesystem type");
				return -EINVAL;
			}
			/* Before " - ": ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...];
			 * after it exactly FSTYPE SOURCE SUPER-OPTIONS (the source may be empty).
			 */
			for (const char *c = p; c < sep; c++)
				pre += *c == ' ';
			for (const char *c = sep + 3; c < eol; c++)
				post += *c == ' ';
			if (pre < 6 || post != 3) {
				err->line = line;
				snprintf(err->message, sizeof(err->message),
					 pre < 6 ? "too few fields before \" - \""
						 : "expected FSTYPE SOURCE OPTIONS after \" - \"");
				return -EINVAL;
			}
		}
		p = eol + 1;
	}
	return 0;
}

struct mount_table *mount_table_free(struct mount_table *t)
{
	if (!t)
		return NULL;
	for (size_t i = 0; i < t->n_entries; i++) {
		struct mount_entry *e = &t->entries[i];
		free(e->root);
		free(e->mountpoint);
		free(e->fstype);
		free(e->source);
		free(e->mount_options);
		free(e->super_options);
	}
	free(t->entries);
	free(t);
	return NULL;
}

static int copy_entry(struct libmnt_fs *fs, struct mount_entry *e)
{
	const char *fstype = mnt_fs_get_fstype(fs), *target = mnt_fs_get_target(fs);

	if (mnt_fs_get_id(fs) < 0 || !fstype || !target)
		return -EINVAL;
	e->id = (unsigned)mnt_fs_get_id(fs);
	e->parent_id = (unsigned)mnt_fs_get_parent_id(fs);
	e->dev = mnt_fs_get_devno(fs);
	e->root = strdup_or_null(mnt_fs_get_root(fs));
	e->mountpoint = strdup(target);
	e->fstype = strdup(fstype);
	e->source = strdup(mnt_fs_get_source(fs) ?: "");
	e->mount_options = strdup(mnt_fs_get_vfs_options(fs) ?: "");
	e->super_options = strdup(mnt_fs_get_fs_options(fs) ?: "");
	if (!e->mountpoint || !e->fstype || !e->source || !e->mount_options || !e->super_options)
		return -ENOMEM;
	if (!e->root && !(e->root = strdup("/")))
		return -ENOMEM;
	return 0;
}

int mount_table_parse(const char *text, size_t size, struct mount_table **ret,
		      struct parse_error *err)
{
	_cleanup_(mount_table_freep) struct mount_table *t = NULL;
	struct libmnt_table *tb = NULL;
	struct libmnt_iter *itr = NULL;
	struct libmnt_fs *fs;
	struct parse_state st = { 0 };
	size_t allocated = 0;
	FILE *f = NULL;
	int r;

	*err = (struct parse_error){ 0 };
	r = check_shape(text, size, err);
	if (r < 0)
		return r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (size == 0) {
		*ret = TAKE_PTR(t);
		return 0;
	}

	tb = mnt_new_table();
	itr = mnt_new_iter(MNT_ITER_FORWARD);
	f = fmemopen((void *)text, size, "r");
	if (!tb || !itr || !f) {
		r = -ENOMEM;
		goto out;
	}
	mnt_table_set_userdata(tb, &st);
	mnt_table_set_parser_errcb(tb, on_parse_error);
	r = mnt_table_parse_stream(tb, f, "mountinfo");
	if (r < 0 || st.bad_line) {
		err->line = st.bad_line;
		snprintf(err->message, sizeof(err->message), "malformed mountinfo line");
		r = -EINVAL;
		goto out;
	}

	while (mnt_table_next_fs(tb, itr, &fs) == 0) {
		if (GROW(t->entries, allocated, t->n_entries + 1) < 0) {
			r = -ENOMEM;
			goto out;
		}
		r = copy_entry(fs, &t->entries[t->n_entries]);
		t->n_entries++;
		if (r < 0) {
			if (r == -EINVAL) {
				err->line = (unsigned)t->n_entries;
				snprintf(err->message, sizeof(err->message),
					 "mount id, type or mountpoint missing");
			}
			goto out;
		}
	}
	*ret = TAKE_PTR(t);
	r = 0;
out:
	if (f)
		fclose(f);
	mnt_free_iter(itr);
	mnt_unref_table(tb);
	return r;
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
