/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/namespace.h"
#include "probe/setuid-helpers.h"
#include "util/alloc.h"
#include "util/fileio.h"
#include "util/path.h"
#include "util/string-util.h"
#include "util/strv.h"

const char *const pt_chown_paths[] = {
	"/usr/lib/pt_chown",
	"/usr/libexec/pt_chown",
	"/usr/lib64/pt_chown",
	"/usr/lib/misc/pt_chown",
	"/usr/libexec/glibc/pt_chown",
	"/lib/pt_chown",
	/* Multiarch (/usr/lib/x86_64-linux-gnu/pt_chown): GNU triplets only, not each of the
	 * hundred-odd directories of /usr/lib (a stat each, in every namespace audited). */
	"/usr/lib/*-linux-*/pt_chown",
	"/lib/*-linux-*/pt_chown",
	NULL,
};

/* glob(), except that a pattern without wildcards is its own only match, unchecked: glob()
 * would stat(2) it, which waits for a hung NFS server or FUSE daemon; the callers check each
 * match with stat_nosync(). 0, GLOB_NOMATCH or GLOB_NOSPACE, as glob(); globfree() after. */
static int glob_nosync(const char *pattern, int flags, glob_t *g)
{
	*g = (glob_t){ 0 };
	if (strpbrk(pattern, "*?[\\"))
		return glob(pattern, flags, NULL, g);
	g->gl_pathv = calloc(2, sizeof(char *));
	if (!g->gl_pathv || !(g->gl_pathv[0] = strdup(pattern)))
		return GLOB_NOSPACE;
	g->gl_pathc = 1;
	return 0;
}

int setuid_helper_dirs(char ***ret)
{
	_cleanup_strv_free_ char **dirs = NULL;

	for (const char *const *p = pt_chown_paths; *p; p++) {
		_cleanup_free_ char *dir = path_dirname(*p);
		glob_t g = { 0 };
		int r = 0;

		if (!dir)
			return -ENOMEM;
		if (glob_nosync(dir, GLOB_NOSORT | GLOB_ONLYDIR, &g) == 0)
			for (size_t i = 0; r >= 0 && i < g.gl_pathc; i++) {
				struct stat st;

				if (stat_nosync(AT_FDCWD, g.gl_pathv[i], 0, &st) < 0 ||
				    !S_ISDIR(st.st_mode) || strv_contains(dirs, g.gl_pathv[i]))
					continue;
				r = strv_extend(&dirs, g.gl_pathv[i]);
			}
		globfree(&g);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(dirs);
	return 0;
}

/* Record the setuid helper candidate at path, as st (a stat of the host's numbers) says. */
static int add_helper_stat(const struct namespace_target *ns, struct snapshot *s, const char *path,
			   struct stat st)
{
	struct setuid_helper *h;

	if (!S_ISREG(st.st_mode))
		return 0;
	ns_translate_ids(ns, &st);
	FOREACH_ARRAY (o, s->helpers, s->n_helpers)
		if (streq(o->path, path))
			return 0;
	if (GROW(s->helpers, s->allocated_helpers, s->n_helpers + 1) < 0)
		return -ENOMEM;
	h = &s->helpers[s->n_helpers];
	*h = (struct setuid_helper){ .mode = st.st_mode & 07777, .uid = st.st_uid };
	h->path = strdup(path);
	if (!h->path)
		return -ENOMEM;
	s->n_helpers++;
	return 0;
}

/* On the host, a helper directory may be on NFS or FUSE: what the kernel cached. */
static int add_helper(struct snapshot *s, const char *path)
{
	struct stat st;

	if (stat_nosync(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &st) < 0)
		return 0;
	return add_helper_stat(NULL, s, path, st);
}

/* What one lookup below a searched directory found (rel: "pt_chown", "x86_64-linux-gnu/pt_chown"),
 * for the next directory that is the same one. */
struct helper_lookup {
	char *rel;
	int r; /* 0: st is what is there; -errno */
	struct stat st;
};

/*
 * A directory of the pt_chown patterns in a namespace that a wildcard component is matched in
 * ("/usr/lib", "/lib"): opened once under the root, its entries read once, and the lookups
 * below it remembered. Another such directory that is the same (a symlink in the root to the
 * first, or the same mount and inode: /lib and /usr/lib with a merged /usr) is not searched
 * again: what was found in the first is what is there, under the other's name.
 */
struct helper_dir {
	char *path; /* "/usr/lib", without a trailing slash */
	int fd;	    /* -errno when it could not be opened; -EBADF when it is another's alias */
	uint64_t mnt_id;
	ino_t ino;
	struct helper_dir *same; /* an earlier one that is this directory, or NULL */
	char **names;		 /* its entries, once read (NULL before, or when empty) */
	bool listed;
	struct helper_lookup *lookups;
	size_t n_lookups, allocated_lookups;
};

struct helper_search {
	const struct namespace_target *ns;
	struct helper_dir dirs[4];
	size_t n_dirs;
};

static void helper_search_done(struct helper_search *h)
{
	for (size_t i = 0; i < h->n_dirs; i++) {
		struct helper_dir *d = &h->dirs[i];

		free(d->path);
		closep(&d->fd);
		strv_free(d->names);
		FOREACH_ARRAY (l, d->lookups, d->n_lookups)
			free(l->rel);
		free(d->lookups);
	}
	h->n_dirs = 0;
}

/* Read the entries of d (not starting with a dot, as glob(3) matches them): -ENOMEM, or 0 (a
 * listing that failed midway is used as far as it went; d->listed says it was complete). */
static int helper_dir_list(struct helper_dir *d)
{
	struct dir_reader rd = { .fd = d->fd };
	const char *name;
	int r;

	while ((r = dir_reader_next(&rd, &name)) > 0)
		if (name[0] != '.' && (r = strv_extend(&d->names, name)) < 0)
			break;
	dir_reader_done(&rd);
	if (r == -ENOMEM)
		return r;
	d->listed = r == 0;
	return 0;
}

/* The directory searched before that path names through a symlink in the root: "/lib" when it
 * is a symlink to usr/lib (a merged /usr) resolves under the root exactly as "/usr/lib" does,
 * which one readlinkat(2) tells without opening it. NULL when it is none (or not a symlink). */
static struct helper_dir *helper_dir_alias(struct helper_search *h, const char *path)
{
	char target[PATH_MAX];
	const char *t = target;
	ssize_t n;

	if (path[0] != '/' || strchr(path + 1, '/'))
		return NULL; /* a single component in the root only */
	n = readlinkat(h->ns->root_fd, path + 1, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = 0;
	if (t[0] == '/')
		t++;
	for (size_t i = 0; i < h->n_dirs; i++)
		if (h->dirs[i].fd >= 0 && streq(h->dirs[i].path + 1, t))
			return &h->dirs[i];
	return NULL;
}

/* The searched directory at path (one a wildcard pattern names, without the trailing slash),
 * opened and listed at first use; NULL when out of memory. */
static struct helper_dir *helper_dir(struct helper_search *h, const char *path)
{
	struct helper_dir *d;
	struct statx sx;

	for (size_t i = 0; i < h->n_dirs; i++)
		if (streq(h->dirs[i].path, path))
			return &h->dirs[i];
	if (h->n_dirs >= ELEMENTSOF(h->dirs))
		return NULL;
	d = &h->dirs[h->n_dirs];
	*d = (struct helper_dir){ .path = strdup(path), .fd = -EBADF };
	if (!d->path)
		return NULL;
	h->n_dirs++;
	d->same = helper_dir_alias(h, path);
	if (d->same) {
		d->same = d->same->same ?: d->same;
		return d;
	}
	d->fd = ns_open(h->ns, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (d->fd < 0)
		return d;
	/* Without a mount id it is never the same as another: searched itself. */
	if (statx(d->fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO | STATX_MNT_ID, &sx) < 0)
		sx.stx_mask = 0;
	if (sx.stx_mask & STATX_MNT_ID) {
		d->mnt_id = sx.stx_mnt_id;
		d->ino = sx.stx_ino;
	}
	for (size_t i = 0; d->mnt_id && i + 1 < h->n_dirs; i++)
		if (h->dirs[i].mnt_id == d->mnt_id && h->dirs[i].ino == d->ino &&
		    h->dirs[i].fd >= 0) {
			d->same = h->dirs[i].same ?: &h->dirs[i];
			break;
		}
	if (!d->same && helper_dir_list(d) < 0)
		return NULL;
	return d;
}

/* lstat of d's path + "/" + rel: remembered, and taken from the directory d is the same as. */
static int helper_lookup(struct helper_search *h, struct helper_dir *d, const char *rel,
			 struct stat *st)
{
	struct helper_dir *owner = d->same ?: d;
	_cleanup_free_ char *path = NULL;
	struct helper_lookup *l;

	FOREACH_ARRAY (o, owner->lookups, owner->n_lookups)
		if (streq(o->rel, rel)) {
			*st = o->st;
			return o->r;
		}
	/* Its first component is not among the entries just read: no system call to learn that
	 * rel is not there either ("misc/pt_chown" in a /usr/lib without misc). */
	if (owner->listed) {
		size_t k = strcspn(rel, "/");
		bool listed = false;

		for (char **n = owner->names; n && *n; n++)
			if (strncmp(*n, rel, k) == 0 && (*n)[k] == 0) {
				listed = true;
				break;
			}
		if (!listed)
			return -ENOENT;
	}
	if (GROW(owner->lookups, owner->allocated_lookups, owner->n_lookups + 1) < 0)
		return -ENOMEM;
	l = &owner->lookups[owner->n_lookups];
	*l = (struct helper_lookup){ .rel = strdup(rel) };
	if (!l->rel)
		return -ENOMEM;
	owner->n_lookups++;
	/* One component: looked up in the open directory. More: resolved whole under the root (a
	 * symlink among them must stay under it). */
	l->r = stat_in_dir(owner->fd, rel, &l->st);
	if (l->r == -EINVAL) {
		if (asprintf(&path, "%s/%s", d->path, rel) < 0) {
			path = NULL;
			return -ENOMEM;
		}
		l->r = ns_lstat_whole(h->ns, path, &l->st);
	}
	*st = l->st;
	return l->r;
}

/* One pattern of pt_chown_paths under the namespace's root. glob(3) would walk the host's tree:
 * the one component with a wildcard ("/usr/lib/ *-linux-* /pt_chown") is matched against the
 * entries of the directory before it, read under the root. */
static int helpers_in_root(struct helper_search *h, struct snapshot *s, const char *pattern)
{
	const char *star = strchr(pattern, '*'), *slash = strrchr(pattern, '/');
	_cleanup_free_ char *dir = NULL, *component = NULL;
	struct helper_dir *d;
	const char *rest;
	struct stat st;
	char **names;
	int r;

	if (!star) {
		/* Below a directory a wildcard is matched in ("/usr/lib/misc/pt_chown")? */
		d = NULL;
		for (const char *const *p = pt_chown_paths; !d && *p; p++) {
			const char *w = strchr(*p, '*');

			if (!w || w == *p || w[-1] != '/' ||
			    strncmp(pattern, *p, (size_t)(w - *p)) != 0)
				continue;
			dir = strndup(*p, (size_t)(w - *p) - 1);
			if (!dir)
				return -ENOMEM;
			slash = pattern + (w - *p) - 1;
			d = helper_dir(h, dir);
			if (!d)
				return -ENOMEM;
		}
		/* Else one openat2 (when missing); also when the directory could not be opened to
		 * be read, but may be searched. */
		if (d && (d->same ?: d)->fd >= 0)
			r = helper_lookup(h, d, slash + 1, &st);
		else
			r = ns_lstat_whole(h->ns, pattern, &st);
		if (r == -ENOMEM)
			return r;
		return r < 0 ? 0 : add_helper_stat(h->ns, s, pattern, st);
	}
	/* "/usr/lib/" "*-linux-*" "/pt_chown" */
	while (star > pattern && star[-1] != '/')
		star--;
	rest = star + strcspn(star, "/");
	dir = strndup(pattern, (size_t)(star - pattern) - 1);
	component = strndup(star, (size_t)(rest - star));
	if (!dir || !component)
		return -ENOMEM;
	d = helper_dir(h, dir);
	if (!d)
		return -ENOMEM; /* every wildcard pattern's directory is one */
	if ((d->same ?: d)->fd < 0)
		return 0;
	r = 0;
	names = (d->same ?: d)->names;
	for (char **n = names; r >= 0 && n && *n; n++) {
		_cleanup_free_ char *rel = NULL, *p = NULL;

		if (fnmatch(component, *n, FNM_PERIOD) != 0)
			continue;
		if (asprintf(&rel, "%s%s", *n, rest) < 0 || asprintf(&p, "%s/%s", dir, rel) < 0)
			return -ENOMEM;
		r = helper_lookup(h, d, rel, &st);
		if (r == -ENOMEM)
			return r;
		r = r < 0 ? 0 : add_helper_stat(h->ns, s, p, st);
	}
	return r;
}

int probe_helpers(const struct namespace_target *ns, struct snapshot *s)
{
	_cleanup_(helper_search_done) struct helper_search search = { .ns = ns };

	for (const char *const *p = pt_chown_paths; *p; p++) {
		glob_t g = { 0 };
		int r = 0;

		if (ns && !ns->own) {
			r = helpers_in_root(&search, s, *p);
			if (r < 0)
				return r;
			continue;
		}
		if (glob_nosync(*p, GLOB_NOSORT, &g) != 0) {
			globfree(&g);
			continue;
		}
		for (size_t i = 0; r >= 0 && i < g.gl_pathc; i++)
			r = add_helper(s, g.gl_pathv[i]);
		globfree(&g);
		if (r < 0)
			return r;
	}
	return 0;
}
