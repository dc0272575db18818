/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "probe/namespace.h"
#include "probe/ptmx-route.h"
#include "probe/slaves.h"
#include "snapshot/idmap.h"
#include "util/fileio.h"
#include "util/group.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/path.h"

/* The default probe user where our user namespace does not map it (a container given 1,024
 * ids, as podman --userns=auto does, or a nested one given fewer than 65,535): the highest id
 * the namespace maps, uid and gid each, so that the probe runs as someone other than root
 * there. A namespace that maps only 0 has no one else: the probe then fails to become nobody,
 * and says so. */
void probe_user_mapped(uid_t *uid, gid_t *gid)
{
	static const char *const paths[] = { "/proc/self/uid_map", "/proc/self/gid_map" };
	/* Our user namespace's maps: each is written once, before we ran, and stays (the kernel
	 * refuses a second write), and we never leave that namespace: read once a process. */
	static char *maps[ELEMENTSOF(paths)];
	static bool done;
	unsigned *ids[] = { uid, gid };

	if (!done) {
		for (size_t i = 0; i < ELEMENTSOF(paths); i++)
			(void)read_full_file(paths[i], 64 * 1024, &maps[i], NULL);
		done = true;
	}
	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		unsigned high;

		if (maps[i] && !idmap_has_inside(maps[i], *ids[i]) &&
		    idmap_highest_inside(maps[i], &high) == 0)
			*ids[i] = high;
	}
}

/* The uid the allocation probes run as (ours, and a daemon's beside us). */
static uid_t probe_uid(const struct namespace_target *ns, const uid_t *alloc_uid)
{
	uid_t uid;
	gid_t gid;

	if (alloc_uid)
		return *alloc_uid;
	if (user_lookup(PROBE_USER_DEFAULT, &uid, &gid) < 0)
		return (uid_t)-1;
	if (!ns || ns->own)
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

int probe_slaves(const struct namespace_target *ns, const uid_t *alloc_uid, struct snapshot *s,
		 const struct analysis *a, struct slave_listing *listed)
{
	const struct mount_entry *e;
	size_t from = s->n_nodes;
	_cleanup_close_ int fd = -EBADF;
	struct dir_reader d;
	const char *name;
	long n = 0;
	int r;

	*listed = (struct slave_listing){ 0 };
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
		n++;
		p = path_join(e->mountpoint, name);
		if (!p) {
			r = -ENOMEM;
			break;
		}
		/* Slaves are unique by construction: no lookup before adding. */
		r = probe_stat_new_node(ns, s, p);
		if (r < 0)
			break;
	}
	dir_reader_done(&d);
	if (r == 0)
		*listed = (struct slave_listing){ e, n };
	if (r < 0 && r != -ENOMEM)
		r = 0; /* a listing cut short: what was read is what there is to judge */
	if (r >= 0 && s->n_nodes > from) /* the user lookup only when a slave was listed */
		drop_transient_slaves(ns, s, from, probe_uid(ns, alloc_uid));
	return r;
}
