/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "probe/namespace.h"
#include "probe/ptmx-route.h"
#include "util/path.h"
#include "util/string-util.h"

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
int probe_stat_new_node(const struct namespace_target *ns, struct snapshot *s, const char *path)
{
	struct node *n = snapshot_add_node(s, path);
	struct stat st;
	int r;

	if (!n)
		return -ENOMEM;
	r = ns_lstat(ns, path, &st, &n->target);
	if (r == -ENOMEM || r == -EREMOTE) /* -EREMOTE: not looked up (ns_check_every_lookup()) */
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
int probe_add_node(const struct namespace_target *ns, struct snapshot *s, const char *path)
{
	if (snapshot_find_node(s, path))
		return 0;
	return probe_stat_new_node(ns, s, path);
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
int probe_chain(const struct namespace_target *ns, struct snapshot *s, const char *path)
{
	_cleanup_free_ char *cur = strdup(path);
	int r = 1;

	if (!cur)
		return -ENOMEM;
	for (int hops = 0; r > 0 && hops < PTMX_HOPS_MAX; hops++) {
		r = probe_add_node(ns, s, cur);
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

		r = probe_add_node(ns, s, cur);
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
int probe_path_dirs(const struct namespace_target *ns, struct snapshot *s)
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
