/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "probe/allocation.h"
#include "probe/cgroup.h"
#include "probe/holder-scan.h"
#include "snapshot/initramfs-record.h"
#include "probe/namespace.h"
#include "probe/probe.h"
#include "probe/statmount.h"
#include "util/caps.h"
#include "util/clock.h"
#include "util/group.h"
#include "util/limits.h"
#include "util/procfs.h"
#include "util/strv.h"
#include "util/util.h"

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

static enum node_type type_of(mode_t m)
{
	if (S_ISCHR(m))
		return NODE_CHAR;
	if (S_ISLNK(m))
		return NODE_SYMLINK;
	if (S_ISDIR(m))
		return NODE_DIR;
	if (S_ISREG(m))
		return NODE_FILE;
	return NODE_OTHER;
}

/* lstat path (in ns's root) into a new node; a path that vanished is recorded as missing. */
static int stat_new_node(const struct namespace_target *ns, struct snapshot *s, const char *path)
{
	struct node *n = snapshot_add_node(s, path);
	struct stat st;
	int r;

	if (!n)
		return -ENOMEM;
	r = ns_lstat(ns, path, &st, &n->target);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		n->type = NODE_MISSING;
		return 0;
	}
	ns_translate_ids(ns, &st);
	n->type = type_of(st.st_mode);
	n->mode = st.st_mode & 07777;
	n->uid = st.st_uid;
	n->gid = st.st_gid;
	n->rdev = st.st_rdev;
	n->dev = st.st_dev;
	n->ino = st.st_ino;
	n->ctime = st.st_ctim;
	return 0;
}

/* The same, once per path. */
static int add_node(const struct namespace_target *ns, struct snapshot *s, const char *path)
{
	if (snapshot_find_node(s, path))
		return 0;
	return stat_new_node(ns, s, path);
}

/* The hop after *cur (a probed node) on a symlink chain, the way open() walks it: 1 and *cur
 * replaced, 0 at the end of the chain, or -ENOMEM. */
static int next_hop(const struct snapshot *s, char **cur)
{
	const struct node *n = snapshot_find_node(s, *cur);
	char *next;

	if (!n || n->type != NODE_SYMLINK || !n->target)
		return 0;
	next = path_resolve_lexical(*cur, n->target);
	if (!next)
		return -ENOMEM;
	free(*cur);
	*cur = next;
	return 1;
}

/* The most hops of a /dev/ptmx symlink chain followed. */
#define PTMX_HOPS_MAX 8

/* A node and every hop of its symlink chain: /dev/ptmx, /dev/tty. */
static int probe_chain(const struct namespace_target *ns, struct snapshot *s, const char *path)
{
	_cleanup_free_ char *cur = strdup(path);
	int r = 1;

	if (!cur)
		return -ENOMEM;
	for (int hops = 0; r > 0 && hops < PTMX_HOPS_MAX; hops++) {
		r = add_node(ns, s, cur);
		if (r >= 0)
			r = next_hop(s, &cur);
	}
	return r < 0 ? r : 0;
}

/* A directory and its ancestors, each once. */
static int probe_dir_chain(const struct namespace_target *ns, struct snapshot *s, const char *dir)
{
	_cleanup_free_ char *cur = strdup(dir);
	int r;

	if (!cur)
		return -ENOMEM;
	for (;;) {
		char *next;

		r = add_node(ns, s, cur);
		if (r < 0 || streq(cur, "/"))
			return r;
		next = path_dirname(cur);
		if (!next)
			return -ENOMEM;
		free(cur);
		cur = next;
	}
}

/* The directories a non-root open walks through (pty-path-blocked): those holding each hop of
 * /dev/ptmx's symlink chain, and /dev/pts, where ptsname() names the slaves. */
static int probe_path_dirs(const struct namespace_target *ns, struct snapshot *s)
{
	_cleanup_free_ char *cur = strdup(PTMX_PATH), *dir = path_dirname(PTMX_PATH);
	_cleanup_free_ char *pts = dir ? path_join(dir, "pts") : NULL;
	int r;

	if (!cur || !pts)
		return -ENOMEM;
	r = 1;
	for (int hops = 0; r > 0 && hops < PTMX_HOPS_MAX; hops++) {
		_cleanup_free_ char *d = path_dirname(cur);

		r = d ? probe_dir_chain(ns, s, d) : -ENOMEM;
		if (r >= 0)
			r = next_hop(s, &cur);
	}
	return r < 0 ? r : probe_dir_chain(ns, s, pts);
}

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ptmx inside and beside every devpts mountpoint, each path once (hosts with thousands of
 * devpts instances: sort and skip repeats rather than search the node list each time). */
static int probe_mountpoints(const struct namespace_target *ns, struct snapshot *s)
{
	const struct mount_table *t = s->mounts;
	char **paths = NULL;
	size_t n = 0, allocated = 0, before = s->n_nodes;
	int r = 0;

	for (size_t i = 0; i < t->n_entries && r == 0; i++) {
		_cleanup_free_ char *dir = NULL;

		if (!streq(t->entries[i].fstype, "devpts"))
			continue;
		dir = path_dirname(t->entries[i].mountpoint);
		if (GROW(paths, allocated, n + 2) < 0 || !dir) {
			r = -ENOMEM;
			break;
		}
		paths[n] = path_join(t->entries[i].mountpoint, "ptmx");
		paths[n + 1] = path_join(dir, "ptmx");
		if (!paths[n] || !paths[n + 1])
			r = -ENOMEM;
		n += 2;
	}
	if (r == 0 && n > 0)
		qsort(paths, n, sizeof(char *), compare_paths);
	for (size_t i = 0; i < n && r == 0; i++) {
		bool seen = i > 0 && streq(paths[i], paths[i - 1]);

		/* only the few nodes of the ptmx chain were there before */
		for (size_t k = 0; k < before && !seen; k++)
			seen = streq(s->nodes[k].path, paths[i]);
		if (!seen)
			r = stat_new_node(ns, s, paths[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return r;
}

/* The default probe user where our user namespace does not map it (a container given 1,024
 * ids, as podman --userns=auto does, or a nested one given fewer than 65,535): the highest id
 * the namespace maps, uid and gid each, so that the probe runs as someone other than root
 * there. A namespace that maps only 0 has no one else: the probe then fails to become nobody,
 * and says so. */
static void probe_user_mapped(uid_t *uid, gid_t *gid)
{
	static const char *const paths[] = { "/proc/self/uid_map", "/proc/self/gid_map" };
	unsigned *ids[] = { uid, gid };

	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		_cleanup_free_ char *map = NULL;
		unsigned high;

		if (read_full_file(paths[i], 64 * 1024, &map, NULL) >= 0 &&
		    !idmap_has_inside(map, *ids[i]) && idmap_highest_inside(map, &high) == 0)
			*ids[i] = high;
	}
}

/* The uid the allocation probes run as (ours, and a daemon's beside us). */
static uid_t probe_uid(const struct probe_options *opts)
{
	uid_t uid;
	gid_t gid;

	if (opts && opts->has_alloc_user)
		return opts->alloc_uid;
	if (user_lookup(PROBE_USER_DEFAULT, &uid, &gid) < 0)
		return (uid_t)-1;
	if (!opts || !opts->ns || opts->ns->own)
		probe_user_mapped(&uid, &gid);
	return uid;
}

/* A slave of the probe user may be another ptsguard's probe caught in the middle of its
 * allocation (the daemon's, while the CLI lists /dev/pts): it lives a few milliseconds. Look
 * again a few times over 150 ms and drop the ones that went or were replaced; one still there
 * is a user's like any other. Costs nothing when no slave of that user was listed. */
static void drop_transient_slaves(const struct namespace_target *ns, struct snapshot *s,
				  size_t from, uid_t uid)
{
	static const unsigned wait_msec[] = { 10, 40, 100 };

	FOREACH_ARRAY (w, wait_msec, ELEMENTSOF(wait_msec)) {
		bool candidates = false;
		size_t keep = from;

		for (size_t i = from; i < s->n_nodes; i++)
			candidates |= s->nodes[i].type == NODE_CHAR && s->nodes[i].uid == uid;
		if (!candidates)
			return;
		(void)nanosleep(&(struct timespec){ .tv_nsec = (long)*w * 1000000L }, NULL);
		for (size_t i = from; i < s->n_nodes; i++) {
			struct node *n = &s->nodes[i];
			struct stat st;

			if (n->type == NODE_CHAR && n->uid == uid &&
			    (ns_lstat(ns, n->path, &st, NULL) < 0 || st.st_ino != n->ino ||
			     st.st_ctim.tv_sec != n->ctime.tv_sec ||
			     st.st_ctim.tv_nsec != n->ctime.tv_nsec)) {
				free(n->path);
				free(n->target);
				continue;
			}
			s->nodes[keep++] = *n;
		}
		s->n_nodes = keep;
	}
}

static int probe_slaves(const struct probe_options *opts, struct snapshot *s,
			const struct analysis *a)
{
	const struct namespace_target *ns = opts ? opts->ns : NULL;
	const struct mount_entry *e;
	size_t from = s->n_nodes;
	_cleanup_close_ int fd = -EBADF;
	struct dir_reader d;
	const char *name;
	int r;

	if (!(e = analysis_serving_mount(a)))
		return 0;
	fd = ns_open(ns, e->mountpoint, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd < 0)
		return 0; /* reported through the checks' view of the nodes, not an error */
	d = (struct dir_reader){ .fd = fd };
	while ((r = dir_reader_next(&d, &name)) > 0) {
		_cleanup_free_ char *p = NULL;
		unsigned idx;

		if (parse_uint(name, &idx) < 0)
			continue;
		p = path_join(e->mountpoint, name);
		if (!p) {
			r = -ENOMEM;
			break;
		}
		/* Slaves are unique by construction: no lookup before adding. */
		r = stat_new_node(ns, s, p);
		if (r < 0)
			break;
	}
	dir_reader_done(&d);
	if (r < 0 && r != -ENOMEM)
		r = 0; /* a listing cut short: what was read is what there is to judge */
	if (r >= 0 && s->n_nodes > from) /* the user lookup only when a slave was listed */
		drop_transient_slaves(ns, s, from, probe_uid(opts));
	return r;
}

int probe_holders(struct snapshot *s, const struct analysis *a, const char *proc)
{
	return probe_holders_in(s, a, proc, 0);
}

int probe_holders_pids(struct snapshot *s, const struct analysis *a, const char *proc,
		       const pid_t *pids, size_t n_pids, uint64_t mntns)
{
	static const pid_t none[1];

	/* NULL would mean every process proc lists. */
	return holder_scan_once(s, a, proc, pids ?: none, pids ? n_pids : 0, mntns,
				now_usec(CLOCK_MONOTONIC) + HOLDER_SCAN_ONESHOT_USEC);
}

/* Only when a covered instance exists (the common case stays cheap). */
int probe_holders_in(struct snapshot *s, const struct analysis *a, const char *proc, uint64_t mntns)
{
	return holder_scan_once(s, a, proc, NULL, 0, mntns,
				now_usec(CLOCK_MONOTONIC) + HOLDER_SCAN_ONESHOT_USEC);
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

static int probe_helpers(const struct namespace_target *ns, struct snapshot *s)
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

/* The initramfs hook's record, if this boot has one (its embedded snapshot is not read). A
 * record that is not JSON or not a valid ptsguard.initramfs/1 is ignored: it must never stop
 * an audit. */
static void probe_initramfs_record(struct snapshot *s)
{
	_cleanup_free_ char *text = NULL;
	struct load_error err;
	json_object *o;

	/* root writes it to /run: neither a symlink nor a FIFO there is the record */
	if (read_file_flags(INITRAMFS_RECORD_PATH, O_NOFOLLOW, INITRAMFS_RECORD_SIZE_MAX, &text,
			    NULL) < 0)
		return;
	o = json_tokener_parse(text);
	if (o && initramfs_record_from_json(o, "", &s->initramfs, &err) < 0)
		s->initramfs = NULL;
	json_object_put(o);
}

int probe_read_last_healthy(const char *path, struct devpts_seen_healthy *ret)
{
	_cleanup_free_ char *text = NULL;
	struct load_error err;
	json_object *o, *v;
	int r;

	r = read_file_flags(path, O_NOFOLLOW, STATE_FILE_READ_MAX, &text, NULL);
	if (r < 0)
		return r;
	o = json_tokener_parse(text);
	if (!o || !json_object_is_type(o, json_type_object))
		r = -EINVAL;
	else if (!json_object_object_get_ex(o, "last_healthy", &v) ||
		 !json_object_is_type(v, json_type_object))
		r = -ENODATA;
	else
		r = devpts_seen_healthy_from_json(v, "last_healthy", ret, &err);
	json_object_put(o);
	return r;
}

/* Is pid a kernel thread (PF_KTHREAD in the flags, field 9 of stat)? Kernel threads share
 * the initial namespaces; /proc shows them only when it belongs to the initial pid namespace.
 * 1, 0 (a process, or none: for good when /proc is another pid namespace's, which has no kernel
 * threads), or -errno when it could not be told (try again at the next audit). */
static int is_kernel_thread(const char *pid)
{
	_cleanup_free_ char *text = NULL, *path = NULL;
	const char *p;
	unsigned long flags;
	int r;

	if (asprintf(&path, "/proc/%s/stat", pid) < 0)
		return -ENOMEM;
	r = read_full_file(path, 4096, &text, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	p = strrchr(text, ')'); /* comm may hold anything */
	return p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
	       (flags & 0x00200000UL);
}

/*
 * Instances mounted outside the initial mount namespace cannot use kernel.pty.reserve. pid 1
 * is no witness (in a container it is the container's init); a kernel thread is: kthreadd
 * (pid 2) lives in the initial mount namespace. When /proc shows none (its own pid namespace),
 * or its namespace cannot be read, it is not known, and the reserve is assumed not to apply.
 */
static void probe_initial_mount_ns(const struct namespace_target *ns, struct snapshot *s)
{
	/* kthreadd's namespace, once found; or that there is no kthreadd to find */
	static struct stat initial;
	static bool no_kthreadd;
	struct stat self, kthread;
	int r;

	s->initial_mount_ns_unknown = false;
	if (ns && !ns->own)
		self = (struct stat){ .st_dev = ns->mntns_dev, .st_ino = ns->mntns };
	else if (stat("/proc/self/ns/mnt", &self) < 0) {
		s->initial_mount_ns = true; /* no namespaces at all */
		return;
	}
	/* A kernel thread never changes namespace: once found, kthreadd's is known for good; and
	 * a /proc of another pid namespace never shows one (not looked for again each audit). */
	if (!initial.st_ino) {
		r = no_kthreadd ? 0 : is_kernel_thread("2");
		if (r == 0)
			no_kthreadd = true;
		if (r <= 0 || stat("/proc/2/ns/mnt", &kthread) < 0) {
			s->initial_mount_ns = false;
			s->initial_mount_ns_unknown = true;
			return;
		}
		initial = kthread;
	}
	s->initial_mount_ns = self.st_ino == initial.st_ino && self.st_dev == initial.st_dev;
}

/* The maps of the user namespace the audit judges; none recorded for the initial one (a single
 * line mapping every id to itself). A namespace's were read when it was opened. */
static int probe_idmaps(const struct namespace_target *ns, struct snapshot *s)
{
	char **maps[] = { &s->uid_map, &s->gid_map };

	if (ns) {
		s->uid_map = strdup_or_null(ns->uid_map);
		s->gid_map = strdup_or_null(ns->gid_map);
		return (ns->uid_map && !s->uid_map) || (ns->gid_map && !s->gid_map) ? -ENOMEM : 0;
	}
	const char *paths[] = { "/proc/self/uid_map", "/proc/self/gid_map" };

	for (size_t i = 0; i < ELEMENTSOF(maps); i++) {
		_cleanup_free_ char *text = NULL;
		unsigned long long in, out, count;
		int used = 0;

		if (read_full_file(paths[i], 64 * 1024, &text, NULL) < 0)
			continue;
		if (sscanf(text, " %llu %llu %llu %n", &in, &out, &count, &used) == 3 &&
		    text[used] == 0 && in == 0 && out == 0 && count == 4294967295ULL)
			continue;
		*maps[i] = TAKE_PTR(text);
	}
	return 0;
}

/* A sysctl of ours, read again at every audit (of every namespace): its file is opened once and
 * kept, each read one pread(2). fd: where it is kept, -1 until opened. */
static int read_sysctl(int *fd, const char *path, long *ret)
{
	if (*fd < 0)
		*fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (*fd < 0)
		return -errno;
	return read_long_fd(*fd, ret);
}

int probe_kernel_facts_from_snapshot(const struct snapshot *s, struct probe_kernel_facts *ret)
{
	*ret = (struct probe_kernel_facts){
		.hostname = strdup_or_null(s->hostname),
		.kernel_release = strdup_or_null(s->kernel_release),
		.pty_max = s->pty_max,
		.pty_reserve = s->pty_reserve,
		.pty_nr = s->pty_nr,
		.user_namespaces_max = s->user_namespaces_max,
	};
	if ((s->hostname && !ret->hostname) || (s->kernel_release && !ret->kernel_release)) {
		probe_kernel_facts_done(ret);
		return -ENOMEM;
	}
	return 0;
}

void probe_kernel_facts_done(struct probe_kernel_facts *k)
{
	free(k->hostname);
	free(k->kernel_release);
	*k = (struct probe_kernel_facts){ 0 };
}

/* The pty sysctls are the kernel's, one set for every namespace (kernel.pty.* are plain globals
 * of devpts, shared by all its instances, whatever instance a pty comes from): always read from
 * the caller's /proc/sys, never from a namespace's own (which may be anything); given, when the
 * caller read them once for many namespaces. user.max_user_namespaces is per user namespace,
 * but read as ours, the caller's, as it always was. */
static int probe_kernel(const struct probe_options *opts, struct snapshot *s)
{
	static int fds[4] = { -1, -1, -1, -1 };
	const struct namespace_target *ns = opts->ns;

	if (opts->kernel) {
		s->pty_max = opts->kernel->pty_max;
		s->pty_reserve = opts->kernel->pty_reserve;
		s->pty_nr = opts->kernel->pty_nr;
		s->user_namespaces_max = opts->kernel->user_namespaces_max;
	} else {
		(void)read_sysctl(&fds[0], "/proc/sys/kernel/pty/max", &s->pty_max);
		(void)read_sysctl(&fds[1], "/proc/sys/kernel/pty/reserve", &s->pty_reserve);
		(void)read_sysctl(&fds[2], "/proc/sys/kernel/pty/nr", &s->pty_nr);
		if (read_sysctl(&fds[3], "/proc/sys/user/max_user_namespaces",
				&s->user_namespaces_max) < 0)
			s->user_namespaces_max = 0;
	}
	probe_initial_mount_ns(ns, s);
	return probe_idmaps(ns, s);
}

static int probe_identity(struct snapshot *s, const struct probe_options *opts,
			  struct parse_error *err)
{
	struct utsname u;
	gid_t gid;
	int r;

	if (opts->kernel) {
		s->hostname = strdup_or_null(opts->kernel->hostname);
		s->kernel_release = strdup_or_null(opts->kernel->kernel_release);
	} else if (uname(&u) == 0) {
		s->hostname = strdup(u.nodename);
		s->kernel_release = strdup(u.release);
	} else
		return -errno;
	if ((!s->hostname && (!opts->kernel || opts->kernel->hostname)) ||
	    (!s->kernel_release && (!opts->kernel || opts->kernel->kernel_release)))
		return -ENOMEM;
	/* The configuration's TTYGroup=, else group tty as grantpt() and the kernel's users
	 * understand it; 5 only when the database has no such group. A database that cannot be
	 * read is an error: guessing 5 there would report, and repair, a healthy gid= as wrong. */
	if (opts->has_tty_gid && !(opts->ns && !opts->ns->own)) {
		s->tty_gid = opts->tty_gid;
		return 0;
	}
	/* A namespace's own group file, read directly: its NSS modules are not ours to run. */
	if (opts->ns && !opts->ns->own)
		r = ns_group_lookup(opts->ns, TTY_GROUP_NAME, &gid);
	else
		r = group_lookup(TTY_GROUP_NAME, &gid);
	if (r == -ESRCH)
		gid = TTY_GID_FALLBACK;
	else if (r < 0) {
		snprintf(err->message, sizeof(err->message),
			 "cannot look up group " TTY_GROUP_NAME "%s: %s",
			 opts->ns && !opts->ns->own ? " in its /etc/group" : "",
			 opts->ns && !opts->ns->own ? ns_read_error_string(r) : strerror(-r));
		return r;
	}
	s->tty_gid = gid;
	return 0;
}

/* listmount()/statmount() where that is cheaper (statmount.h: slaves of big peer groups, where
 * mountinfo turns quadratic); the text otherwise, and whenever the text itself is wanted. Any
 * error of the kernel path but ENOMEM falls back to the text. */
static int probe_mounts(struct snapshot *s, const struct probe_options *opts,
			struct parse_error *err)
{
	struct mount_table *t = NULL;
	char *text = NULL;
	size_t size;
	int r = 0;

	if (opts->mounts) {
		snapshot_set_mount_table(s, opts->mounts);
		return 0;
	}
	if (opts->ns && !opts->ns->own) {
		/* Its mountpoints as its root sees them: what every path below resolves under. */
		r = ns_read_proc(opts->ns, "mountinfo", MOUNTINFO_SIZE_MAX, &text, &size);
		if (r < 0) {
			snprintf(err->message, sizeof(err->message),
				 "cannot read /proc/%d/mountinfo: %s", (int)opts->ns->pid,
				 r == -ENOENT || r == -ESRCH ? "the process has exited"
							     : strerror(-r));
			return r == -ENOENT ? -ESRCH : r;
		}
	} else if (!opts->need_mountinfo_text &&
		   (opts->need_unique_ids || mount_table_prefer_kernel())) {
		r = mount_table_from_kernel(&t);
		if (r >= 0) {
			snapshot_set_mount_table(s, t);
			return 0;
		}
		if (r == -ENOMEM)
			return r;
	}
	if (!text)
		r = read_full_file("/proc/self/mountinfo", MOUNTINFO_SIZE_MAX, &text, &size);
	if (r < 0) {
		/* Name the file: with nsenter -m alone, /proc may be another pid namespace's. */
		snprintf(err->message, sizeof(err->message),
			 "cannot read /proc/self/mountinfo: %s%s", strerror(-r),
			 r == -ENOENT ? " (is /proc here another pid namespace's? enter with "
					"nsenter -m -p -r)"
				      : "");
		return r;
	}
	if (opts->need_mountinfo_text)
		return snapshot_set_mountinfo(s, text, size, err);
	/* Nobody wants the text itself: parse it in place, not a copy of it. */
	r = mount_table_parse_owned(text, size, &t, err);
	if (r < 0)
		return r;
	snapshot_set_mount_table(s, t);
	return 0;
}

/* Which namespace this is, and what serves /dev/ptmx on the host, for devpts-host-instance. */
static int probe_namespace(const struct probe_options *opts, struct snapshot *s)
{
	const struct namespace_target *ns = opts->ns;

	if (!ns || ns->own)
		return 0;
	s->ns = calloc(1, sizeof(*s->ns));
	if (!s->ns)
		return -ENOMEM;
	s->ns->mntns = ns->mntns;
	s->ns->pid = ns->pid;
	s->ns->root_is_host = ns->root_is_ours;
	if (opts->host) {
		s->ns->host = *opts->host;
		s->ns->host.mountpoint = strdup_or_null(opts->host->mountpoint);
		if (opts->host->mountpoint && !s->ns->host.mountpoint)
			return -ENOMEM;
	}
	return 0;
}

int probe_base(const struct probe_options *opts, struct snapshot **ret, struct parse_error *err)
{
	static const struct probe_options defaults = { 0 };
	_cleanup_(snapshot_freep) struct snapshot *s = NULL;
	int r;

	opts = opts ?: &defaults;
	*err = (struct parse_error){ 0 };
	s = snapshot_new();
	if (!s) {
		mount_table_free(opts->mounts);
		return -ENOMEM;
	}

	if (opts->ns && opts->ns->root_outside) {
		snprintf(err->message, sizeof(err->message),
			 "its root directory lies outside its mount namespace (a chroot into "
			 "another namespace's tree): its mount table does not show what it sees, "
			 "so it is not judged");
		mount_table_free(opts->mounts);
		return -EXDEV;
	}
	/* The directories of the namespace stay open from here to the end of probe_details(). */
	ns_dirs_begin(opts->ns);
	r = probe_mounts(s, opts, err);
	if (r < 0)
		return r;
	r = probe_identity(s, opts, err);
	if (r < 0)
		return r;
	r = probe_kernel(opts, s);
	if (r < 0)
		return r;
	r = probe_namespace(opts, s);
	if (r < 0)
		return r;

	r = ns_read_file(opts->ns, "/etc/fstab", 0, FSTAB_SIZE_MAX, &s->fstab, NULL);
	if (r < 0 && r != -ENOENT)
		s->fstab = NULL; /* unreadable fstab: nothing to say about it */

	if ((r = probe_chain(opts->ns, s, PTMX_PATH)) < 0 ||
	    (r = probe_chain(opts->ns, s, DEV_TTY_PATH)) < 0 ||
	    (r = probe_path_dirs(opts->ns, s)) < 0 || (r = probe_mountpoints(opts->ns, s)) < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

static int probe_details_in(const struct probe_options *opts, struct snapshot *s,
			    const struct analysis *a)
{
	int r;

	/* Adding nodes may move s->nodes: only a's instances and mount indices are used here. */
	const struct namespace_target *ns = opts ? opts->ns : NULL;
	bool other = ns && !ns->own;

	if (a->pts_path && (r = add_node(ns, s, a->pts_path)) < 0)
		return r;
	r = probe_slaves(opts, s, a);
	if (r < 0)
		return r;
	if (!opts || !opts->skip_holders) {
		r = probe_holders_in(s, a, "/proc", other ? ns->mntns : 0);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	r = probe_helpers(ns, s);
	if (r < 0)
		return r;
	/* The record is the host's boot (its /run): it says nothing of another namespace. */
	if (!other)
		probe_initramfs_record(s);
	/* Likewise the daemon's memory: of the host's instances. A state file that cannot be read
	 * or says nothing of it is no record; it never stops an audit. */
	if (!other && opts && opts->last_healthy)
		s->last_healthy = *opts->last_healthy;
	else if (!other && opts && opts->state_file)
		(void)probe_read_last_healthy(opts->state_file, &s->last_healthy);
	/* A namespace whose process left is being torn down: what was read may be half of it. */
	if (other)
		return namespace_target_check(ns);
	return 0;
}

int probe_details(const struct probe_options *opts, struct snapshot *s, const struct analysis *a)
{
	int r = probe_details_in(opts, s, a);

	ns_dirs_end(opts ? opts->ns : NULL);
	return r;
}

void probe_allocation_start(const struct probe_options *opts, struct guarded_worker *w,
			    struct alloc_pending *ret)
{
	bool other = opts->ns && !opts->ns->own;
	int r;

	*ret = (struct alloc_pending){ .worker = w,
				       .o = { .root_fd = other ? opts->ns->root_fd : -1,
					      .cgroup_fds = { -1, -1 },
					      .budget_left = opts->alloc_budget } };
	if (opts->skip_allocation) {
		ret->status = ALLOC_DISABLED;
		return;
	}
	/* Root, or the daemon as its own user with CAP_SETUID and CAP_SETGID (util/caps.h). */
	if (!caps_may_change_ids()) {
		ret->status = ALLOC_NOT_ROOT;
		return;
	}
	if (opts->has_alloc_user) {
		ret->o.uid = opts->alloc_uid;
		ret->o.gid = opts->alloc_gid;
	} else { /* cannot fail: "nobody" always has its fallback */
		(void)user_lookup(PROBE_USER_DEFAULT, &ret->o.uid, &ret->o.gid);
		if (!other)
			probe_user_mapped(&ret->o.uid, &ret->o.gid);
	}
	ret->status = ALLOC_PERFORMED;
	if (other) {
		/* Another namespace chose its /dev/ptmx: a short deadline, and the device rules of
		 * its own cgroups. A child joins them; the one worker of a run cannot (it is
		 * unprivileged by then), so such a probe runs in a child of its own. We may not
		 * write them (the daemon as its own user, without CAP_DAC_OVERRIDE): the probe
		 * stays in our cgroup, and opens no node but a ptmx and its own pty all the same.
		 */
		ret->o.deadline_usec = ALLOC_NS_DEADLINE_USEC;
		r = probe_cgroup_procs_of(opts->ns, ret->o.cgroup_fds);
		if (r < 0 && r != -EACCES && r != -EPERM) {
			ret->status = ALLOC_SETUP_FAILED;
			ret->cgroup_error = -r;
			return;
		}
		ret->o.join_cgroups = ret->o.cgroup_fds[0] >= 0 || ret->o.cgroup_fds[1] >= 0;
		if (ret->o.join_cgroups)
			ret->worker = NULL;
	}
	if (probe_allocation_skipped(&ret->o, &(struct alloc_probe){ 0 }))
		ret->status = ALLOC_SKIPPED;
	else if (ret->worker)
		ret->submitted = probe_allocation_submit(ret->worker, &ret->o);
}

void alloc_pending_done(struct alloc_pending *p)
{
	probe_cgroup_fds_close(p->o.cgroup_fds);
}

int probe_allocation_into(struct alloc_pending *p, struct snapshot *s)
{
	int r;

	if (p->status == ALLOC_SETUP_FAILED) {
		s->probe = (struct alloc_probe){ .status = ALLOC_SETUP_FAILED,
						 .uid = p->o.uid,
						 .gid = p->o.gid,
						 .error = p->cgroup_error,
						 .setup_step = "cgroup" };
		return 0;
	}
	if (p->status != ALLOC_PERFORMED) {
		s->probe = (struct alloc_probe){ .status = p->status };
		return 0;
	}

	r = p->worker ? probe_allocation_collect(p->worker, &p->o, p->submitted, &s->probe)
		      : probe_allocation(&p->o, &s->probe);
	if (r < 0) {
		s->probe = (struct alloc_probe){
			.status = ALLOC_SETUP_FAILED,
			.uid = p->o.uid,
			.gid = p->o.gid,
			.error = -r,
			.setup_step = "start",
		};
		if (r == -ENOMEM)
			return r;
	}
	return 0;
}
