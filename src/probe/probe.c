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
#include "snapshot/initramfs-record.h"
#include "probe/namespace.h"
#include "probe/probe.h"
#include "probe/statmount.h"
#include "util/caps.h"
#include "util/group.h"
#include "util/limits.h"
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

/* /dev/ptmx and every hop of its symlink chain. */
static int probe_ptmx(const struct namespace_target *ns, struct snapshot *s)
{
	_cleanup_free_ char *cur = strdup(PTMX_PATH);
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

/* The uid the allocation probes run as (ours, and a daemon's beside us). */
static uid_t probe_uid(const struct probe_options *opts)
{
	uid_t uid;
	gid_t gid;

	if (opts && opts->has_alloc_user)
		return opts->alloc_uid;
	return user_lookup(PROBE_USER_DEFAULT, &uid, &gid) < 0 ? (uid_t)-1 : uid;
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
	DIR *d;
	struct dirent *de;
	int r = 0, fd;

	if (!(e = analysis_serving_mount(a)))
		return 0;
	fd = ns_open(ns, e->mountpoint, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0; /* reported through the checks' view of the nodes, not an error */
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *p = NULL;
		unsigned idx;

		if (parse_uint(de->d_name, &idx) < 0)
			continue;
		p = path_join(e->mountpoint, de->d_name);
		if (!p) {
			r = -ENOMEM;
			break;
		}
		/* Slaves are unique by construction: no lookup before adding. */
		r = stat_new_node(ns, s, p);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r >= 0 && s->n_nodes > from) /* the user lookup only when a slave was listed */
		drop_transient_slaves(ns, s, from, probe_uid(opts));
	return r;
}

static bool dev_in(dev_t dev, const dev_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == dev)
			return true;
	return false;
}

static bool holder_seen(const struct snapshot *s, size_t from, dev_t dev, unsigned index)
{
	for (size_t i = from; i < s->n_holders; i++)
		if (s->holders[i].dev == dev && s->holders[i].index == index)
			return true;
	return false;
}

/* tty-index of a pty master, from /proc/<pid>/fdinfo/<fd>. */
static int master_index(int pid_dir, const char *fd, unsigned *ret)
{
	char path[300], buf[1024];
	_cleanup_close_ int f = -EBADF;
	ssize_t l;
	char *p;

	snprintf(path, sizeof(path), "fdinfo/%s", fd);
	f = openat(pid_dir, path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	l = read(f, buf, sizeof(buf) - 1);
	if (l < 0)
		return -errno;
	buf[l] = 0;
	p = strstr(buf, "tty-index:");
	if (!p || sscanf(p + 10, "%u", ret) != 1)
		return -ENOENT;
	return 0;
}

/* Only a refusal means a process we could not inspect; anything else (ENOENT, ESRCH, a zombie
 * half gone) is a process that exited while we looked. */
static int not_allowed(int err)
{
	return err == EACCES || err == EPERM ? -err : 0;
}

static int scan_process(struct snapshot *s, int proc_fd, const char *pid_name, const dev_t *devs,
			size_t n_devs)
{
	_cleanup_close_ int pid_dir = -EBADF, fd_dir = -EBADF;
	_cleanup_free_ char *comm = NULL;
	DIR *d;
	struct dirent *de;
	unsigned pid;
	size_t first;

	if (parse_uint(pid_name, &pid) < 0)
		return 0;
	pid_dir = openat(proc_fd, pid_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pid_dir < 0)
		return not_allowed(errno); /* exited meanwhile: not an error */
	fd_dir = openat(pid_dir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd_dir < 0)
		return not_allowed(errno);
	d = fdopendir(fd_dir);
	if (!d)
		return -errno;
	fd_dir = -EBADF; /* owned by d */
	first = s->n_holders;
	while ((de = readdir(d))) {
		struct stat st;
		unsigned index;
		struct holder *h;

		if (de->d_name[0] == '.')
			continue;
		/* stat() follows the magic link to the open file itself, whatever its path; one
		 * on a hung NFS server or FUSE daemon answers from what the kernel cached. */
		if (stat_nosync(dirfd(d), de->d_name, 0, &st) < 0 || !S_ISCHR(st.st_mode) ||
		    !dev_in(st.st_dev, devs, n_devs))
			continue;
		if (major(st.st_rdev) >= PTY_SLAVE_MAJOR_FIRST &&
		    major(st.st_rdev) <= PTY_SLAVE_MAJOR_LAST)
			index =
			    (major(st.st_rdev) - PTY_SLAVE_MAJOR_FIRST) * 256 + minor(st.st_rdev);
		else if (major(st.st_rdev) == PTMX_RDEV_MAJOR &&
			 minor(st.st_rdev) == PTMX_RDEV_MINOR) {
			if (master_index(pid_dir, de->d_name, &index) < 0)
				continue;
		} else
			continue;

		if (!comm) {
			_cleanup_close_ int cf = openat(pid_dir, "comm", O_RDONLY | O_CLOEXEC);
			char buf[64] = "";
			ssize_t l = cf >= 0 ? read(cf, buf, sizeof(buf) - 1) : -1;

			buf[l > 0 ? l : 0] = 0;
			buf[strcspn(buf, "\n")] = 0;
			comm = strdup(buf);
			if (!comm)
				break;
		}
		/* A process holding both ends (or several fds) of one pty counts once. */
		if (holder_seen(s, first, st.st_dev, index))
			continue;
		if (GROW(s->holders, s->allocated_holders, s->n_holders + 1) < 0)
			break;
		h = &s->holders[s->n_holders];
		*h = (struct holder){ .pid = (pid_t)pid, .dev = st.st_dev, .index = index };
		h->comm = strdup(comm);
		if (!h->comm)
			break;
		s->n_holders++;
	}
	closedir(d);
	return 0;
}

int probe_holders(struct snapshot *s, const struct analysis *a, const char *proc)
{
	return probe_holders_in(s, a, proc, 0);
}

/* The devices of a's covered instances into *ret (n of them; 0: nothing to scan for). */
static int covered_devs(const struct analysis *a, dev_t **ret, size_t *n)
{
	*n = 0;
	*ret = calloc(a->n_instances ?: 1, sizeof(dev_t));
	if (!*ret)
		return -ENOMEM;
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		if (in->covered)
			(*ret)[(*n)++] = in->dev;
	return 0;
}

int probe_holders_pids(struct snapshot *s, const struct analysis *a, const char *proc,
		       const pid_t *pids, size_t n_pids, uint64_t mntns)
{
	_cleanup_free_ dev_t *devs = NULL;
	_cleanup_close_ int proc_fd = -EBADF;
	size_t n;
	int r = covered_devs(a, &devs, &n);

	if (r < 0 || n == 0)
		return r;
	s->holders_scanned = true;
	proc_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	for (size_t i = 0; i < n_pids; i++) {
		char name[16];

		snprintf(name, sizeof(name), "%d", (int)pids[i]);
		/* Listed a moment ago: still there, and still of the namespace? */
		r = ns_process_in(proc_fd, name, mntns);
		if (r == 0 || r == -ENOENT || r == -ESRCH)
			continue;
		if (r >= 0)
			r = scan_process(s, proc_fd, name, devs, n);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			s->holders_skipped++;
	}
	return 0;
}

/* Only when a covered instance exists (the common case stays cheap). */
int probe_holders_in(struct snapshot *s, const struct analysis *a, const char *proc, uint64_t mntns)
{
	_cleanup_free_ dev_t *devs = NULL;
	_cleanup_close_ int proc_fd = -EBADF;
	size_t n = 0;
	DIR *d;
	struct dirent *de;
	int k = covered_devs(a, &devs, &n);

	if (k < 0 || n == 0)
		return k;

	s->holders_scanned = true;
	proc_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	d = opendir(proc);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int r;

		/* A namespace's holders are its own processes; one that cannot be told is one
		 * more that could not be inspected. */
		if (mntns && de->d_name[0] >= '1' && de->d_name[0] <= '9') {
			r = ns_process_in(proc_fd, de->d_name, mntns);
			if (r == 0 || r == -ENOENT || r == -ESRCH)
				continue;
			if (r < 0) {
				if (not_allowed(-r) < 0)
					s->holders_skipped++;
				continue;
			}
		}
		r = scan_process(s, proc_fd, de->d_name, devs, n);

		if (r == -ENOMEM) {
			closedir(d);
			return r;
		}
		if (r < 0)
			s->holders_skipped++;
	}
	closedir(d);
	return 0;
}

static int add_helper(const struct namespace_target *ns, struct snapshot *s, const char *path)
{
	struct setuid_helper *h;
	struct stat st;

	/* On the host, a helper directory may be on NFS or FUSE: what the kernel cached. */
	if ((ns ? ns_lstat(ns, path, &st, NULL)
		: stat_nosync(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &st)) < 0 ||
	    !S_ISREG(st.st_mode))
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

/* The names of the last directory helpers_in_root() listed that matched a component: with a
 * merged /usr, /lib is /usr/lib, listed once. */
struct listed_dir {
	dev_t dev;
	ino_t ino;
	char *component;
	char **names;
};

static void listed_dir_done(struct listed_dir *l)
{
	free(l->component);
	strv_free(l->names);
	*l = (struct listed_dir){ 0 };
}

/* glob(3) would walk the host's tree: in a namespace, the one component of a pattern with a
 * wildcard ("/usr/lib/ *-linux-* /pt_chown") is matched against the directory before it, read
 * under the namespace's root. */
static int helpers_in_root(const struct namespace_target *ns, struct snapshot *s,
			   const char *pattern, struct listed_dir *last)
{
	const char *star = strchr(pattern, '*'), *rest;
	_cleanup_free_ char *dir = NULL, *component = NULL;
	size_t from, to; /* the component with the wildcard: pattern[from, to) */
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, r = 0;

	if (!star)
		return add_helper(ns, s, pattern);
	from = (size_t)(star - pattern);
	while (from > 0 && pattern[from - 1] != '/')
		from--;
	to = (size_t)(star - pattern) + strcspn(star, "/");
	rest = pattern + to;
	dir = strndup(pattern, from);
	component = strndup(pattern + from, to - from);
	if (!dir || !component)
		return -ENOMEM;
	fd = ns_open(ns, dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || st.st_dev != last->dev || st.st_ino != last->ino ||
	    !streq_ptr(last->component, component)) {
		listed_dir_done(last);
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return 0;
		}
		fd = -EBADF; /* owned by d */
		while (r >= 0 && (de = readdir(d)))
			if (de->d_name[0] != '.' && fnmatch(component, de->d_name, FNM_PERIOD) == 0)
				r = strv_extend(&last->names, de->d_name);
		closedir(d);
		if (r < 0)
			return r;
		last->dev = st.st_dev;
		last->ino = st.st_ino;
		last->component = TAKE_PTR(component);
	}
	if (fd >= 0)
		close(fd);
	for (char **n = last->names; r >= 0 && n && *n; n++) {
		_cleanup_free_ char *p = NULL;

		if (asprintf(&p, "%s%s%s", dir, *n, rest) < 0)
			return -ENOMEM;
		r = add_helper(ns, s, p);
	}
	return r;
}

static int probe_helpers(const struct namespace_target *ns, struct snapshot *s)
{
	_cleanup_(listed_dir_done) struct listed_dir last = { 0 };

	for (const char *const *p = pt_chown_paths; *p; p++) {
		glob_t g = { 0 };
		int r = 0;

		if (ns && !ns->own) {
			r = helpers_in_root(ns, s, *p, &last);
			if (r < 0)
				return r;
			continue;
		}
		if (glob_nosync(*p, GLOB_NOSORT, &g) != 0) {
			globfree(&g);
			continue;
		}
		for (size_t i = 0; r >= 0 && i < g.gl_pathc; i++)
			r = add_helper(NULL, s, g.gl_pathv[i]);
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

/* Is pid 2 a kernel thread (PF_KTHREAD in the flags, field 9 of stat)? Kernel threads share
 * the initial namespaces; /proc shows them only when it belongs to the initial pid namespace. */
static bool is_kernel_thread(const char *pid)
{
	_cleanup_free_ char *text = NULL, *path = NULL;
	const char *p;
	unsigned long flags;

	if (asprintf(&path, "/proc/%s/stat", pid) < 0 ||
	    read_full_file(path, 4096, &text, NULL) < 0)
		return false;
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
	static struct stat initial; /* kthreadd's namespace, once found */
	struct stat self, kthread;

	s->initial_mount_ns_unknown = false;
	if (ns && !ns->own) {
		if (fstat(ns->mntns_fd, &self) < 0) {
			s->initial_mount_ns = false;
			s->initial_mount_ns_unknown = true;
			return;
		}
	} else if (stat("/proc/self/ns/mnt", &self) < 0) {
		s->initial_mount_ns = true; /* no namespaces at all */
		return;
	}
	/* A kernel thread never changes namespace: once found, kthreadd's is known for good. */
	if (!initial.st_ino) {
		if (!is_kernel_thread("2") || stat("/proc/2/ns/mnt", &kthread) < 0) {
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

/* The pty sysctls are the kernel's, one set for every namespace: always read from the caller's
 * /proc/sys, never from a namespace's own (which may be anything). */
static int probe_kernel(const struct namespace_target *ns, struct snapshot *s)
{
	static int fds[4] = { -1, -1, -1, -1 };

	(void)read_sysctl(&fds[0], "/proc/sys/kernel/pty/max", &s->pty_max);
	(void)read_sysctl(&fds[1], "/proc/sys/kernel/pty/reserve", &s->pty_reserve);
	(void)read_sysctl(&fds[2], "/proc/sys/kernel/pty/nr", &s->pty_nr);
	if (read_sysctl(&fds[3], "/proc/sys/user/max_user_namespaces", &s->user_namespaces_max) < 0)
		s->user_namespaces_max = 0;
	probe_initial_mount_ns(ns, s);
	return probe_idmaps(ns, s);
}

static int probe_identity(struct snapshot *s, const struct probe_options *opts,
			  struct parse_error *err)
{
	struct utsname u;
	gid_t gid;
	int r;

	if (uname(&u) < 0)
		return -errno;
	s->hostname = strdup(u.nodename);
	s->kernel_release = strdup(u.release);
	if (!s->hostname || !s->kernel_release)
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
			 "cannot look up group " TTY_GROUP_NAME ": %s", strerror(-r));
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

	r = probe_mounts(s, opts, err);
	if (r < 0)
		return r;
	r = probe_identity(s, opts, err);
	if (r < 0)
		return r;
	r = probe_kernel(opts->ns, s);
	if (r < 0)
		return r;
	r = probe_namespace(opts, s);
	if (r < 0)
		return r;

	r = ns_read_file(opts->ns, "/etc/fstab", 0, FSTAB_SIZE_MAX, &s->fstab, NULL);
	if (r < 0 && r != -ENOENT)
		s->fstab = NULL; /* unreadable fstab: nothing to say about it */

	if ((r = probe_ptmx(opts->ns, s)) < 0 || (r = probe_path_dirs(opts->ns, s)) < 0 ||
	    (r = probe_mountpoints(opts->ns, s)) < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

int probe_details(const struct probe_options *opts, struct snapshot *s, const struct analysis *a)
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
	/* A namespace whose process left is being torn down: what was read may be half of it. */
	if (other)
		return namespace_target_check(ns);
	return 0;
}

void probe_allocation_start(const struct probe_options *opts, struct guarded_worker *w,
			    struct alloc_pending *ret)
{
	bool other = opts->ns && !opts->ns->own;

	*ret = (struct alloc_pending){ .worker = w, .o.root_fd = other ? opts->ns->root_fd : -1 };
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
	} else /* cannot fail: "nobody" always has its fallback */
		(void)user_lookup(PROBE_USER_DEFAULT, &ret->o.uid, &ret->o.gid);
	ret->status = ALLOC_PERFORMED;
	if (w)
		ret->submitted = probe_allocation_submit(w, &ret->o);
}

int probe_allocation_into(struct alloc_pending *p, struct snapshot *s)
{
	int r;

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
