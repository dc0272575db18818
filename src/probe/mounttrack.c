/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/mounttrack.h"
#include "probe/statmount.h"
#include "util/alloc.h"
#include "util/hashindex.h"
#include "util/limits.h"
#include "util/path.h"
#include "util/string-util.h"

/* Linux 6.15's fanotify mount events; Debian 12's headers predate them. Our own names, so that
 * newer headers do not clash. */
#define MT_FAN_REPORT_MNT	   0x00004000U
#define MT_FAN_MARK_MNTNS	   0x00000110U
#define MT_FAN_MNT_ATTACH	   0x01000000ULL
#define MT_FAN_MNT_DETACH	   0x02000000ULL
#define MT_FAN_EVENT_INFO_TYPE_MNT 7
#define MT_STATX_MNT_ID_UNIQUE	   0x00004000U

struct mt_event_info_mnt { /* struct fanotify_event_info_mnt */
	struct fanotify_event_info_header hdr;
	uint64_t mnt_id;
};

struct mount_tracker {
	int fd;
	char *ptmx_dir;
	uint64_t *ids; /* the followed mounts */
	size_t n_ids, allocated_ids;
	struct mount_table *last; /* the followed mounts as the last audit saw them */
	/* Mounts that joined since then: a mount appearing before the audit that will include them
	 * is judged against them too. */
	struct mount_peek *joined;
	size_t n_joined, allocated_joined;
	bool need_full;
	struct mount_tracker_stats stats;
};

int mount_tracker_new(struct mount_tracker **ret)
{
	_cleanup_(mount_tracker_freep) struct mount_tracker *t = calloc(1, sizeof(*t));
	_cleanup_close_ int ns = -EBADF;
	struct mount_peek root;
	struct statx sx;
	int r;

	if (!t)
		return -ENOMEM;
	t->fd = -EBADF;
	t->need_full = true;
	t->ptmx_dir = path_dirname(PTMX_PATH);
	if (!t->ptmx_dir)
		return -ENOMEM;

	/* Deciding where a mount appeared needs the unique id of what a path leads to (6.8). */
	if (statx(AT_FDCWD, "/", AT_STATX_DONT_SYNC, MT_STATX_MNT_ID_UNIQUE, &sx) < 0)
		return -errno;
	if (!(sx.stx_mask & MT_STATX_MNT_ID_UNIQUE))
		return -EOPNOTSUPP;
	/* And statmount() to see what a mount is (6.8; a seccomp filter may deny it). */
	r = mount_peek(sx.stx_mnt_id, &root);
	if (r < 0)
		return r;
	free(root.mountpoint);

	t->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | MT_FAN_REPORT_MNT,
			      O_RDONLY | O_CLOEXEC);
	if (t->fd < 0)
		return -errno;
	ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return -errno;
	if (fanotify_mark(t->fd, FAN_MARK_ADD | MT_FAN_MARK_MNTNS,
			  MT_FAN_MNT_ATTACH | MT_FAN_MNT_DETACH, ns, NULL) < 0)
		return -errno;
	*ret = TAKE_PTR(t);
	return 0;
}

static void clear_joined(struct mount_tracker *t)
{
	for (size_t i = 0; i < t->n_joined; i++)
		free(t->joined[i].mountpoint);
	t->n_joined = 0;
}

struct mount_tracker *mount_tracker_free(struct mount_tracker *t)
{
	if (!t)
		return NULL;
	clear_joined(t);
	free(t->joined);
	if (t->fd >= 0)
		close(t->fd);
	free(t->ptmx_dir);
	free(t->ids);
	mount_table_free(t->last);
	free(t);
	return NULL;
}

int mount_tracker_fd(const struct mount_tracker *t)
{
	return t->fd;
}

static bool followed(const struct mount_tracker *t, uint64_t id)
{
	for (size_t i = 0; i < t->n_ids; i++)
		if (t->ids[i] == id)
			return true;
	return false;
}

static int follow_id(struct mount_tracker *t, uint64_t id)
{
	if (followed(t, id))
		return 0;
	if (GROW(t->ids, t->allocated_ids, t->n_ids + 1) < 0)
		return -ENOMEM;
	t->ids[t->n_ids++] = id;
	return 0;
}

static bool unfollow_id(struct mount_tracker *t, uint64_t id)
{
	for (size_t i = 0; i < t->n_ids; i++)
		if (t->ids[i] == id) {
			t->ids[i] = t->ids[--t->n_ids];
			return true;
		}
	return false;
}

int mount_tracker_follow(struct mount_tracker *t, const struct analysis *a)
{
	const struct mount_table *table = a->snap->mounts;
	_cleanup_free_ size_t *idx = NULL;
	struct mount_table *copy = NULL;
	size_t n = 0;
	int r;

	r = analysis_relevant_mounts(a, &idx, &n);
	if (r < 0)
		return r;
	/* A table read from mountinfo text has no unique ids: statmount() is not usable here. */
	if (!table->unique_ids)
		return -EOPNOTSUPP;
	r = mount_table_copy(table, idx, n, &copy);
	if (r < 0)
		return r;
	t->n_ids = 0;
	for (size_t k = 0; k < n; k++)
		if ((r = follow_id(t, copy->unique_ids[k])) < 0) {
			mount_table_free(copy);
			return r;
		}
	mount_table_free(t->last);
	t->last = copy;
	clear_joined(t);
	t->need_full = false;
	t->stats.followed = n;
	return 0;
}

/* Could a new mount at mountpoint change a finding, given a followed mount at followed? */
static bool touches(const char *mountpoint, const char *followed, bool followed_devpts)
{
	return path_at_or_below(followed, mountpoint) ||
	       (followed_devpts && path_at_or_below(mountpoint, followed));
}

/* Could this new mount change a finding? See mounttrack.h. */
static bool relevant(const struct mount_tracker *t, const struct mount_peek *p)
{
	if (p->devpts)
		return true;
	if (!*p->mountpoint)
		return false; /* outside our root */
	if (path_at_or_below(p->mountpoint, t->ptmx_dir))
		return true;
	for (size_t i = 0; t->last && i < t->last->n_entries; i++) {
		const struct mount_entry *e = &t->last->entries[i];

		if (touches(p->mountpoint, e->mountpoint, streq(e->fstype, "devpts")))
			return true;
	}
	for (size_t i = 0; i < t->n_joined; i++)
		if (touches(p->mountpoint, t->joined[i].mountpoint, t->joined[i].devpts))
			return true;
	return false;
}

static int join(struct mount_tracker *t, const struct mount_peek *p)
{
	char *mountpoint = strdup(p->mountpoint);

	if (!mountpoint || GROW(t->joined, t->allocated_joined, t->n_joined + 1) < 0) {
		free(mountpoint);
		return -ENOMEM;
	}
	t->joined[t->n_joined] = *p;
	t->joined[t->n_joined++].mountpoint = mountpoint;
	return follow_id(t, p->id);
}

/* Is the mount what its mountpoint leads to? Then nothing hides it or is stacked on it, and
 * nothing hides its parents: it joins the followed set with its parent chain alone. */
static bool visible(const struct mount_peek *p)
{
	struct statx sx;

	if (statx(AT_FDCWD, p->mountpoint,
		  AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
		  MT_STATX_MNT_ID_UNIQUE, &sx) < 0)
		return false;
	return (sx.stx_mask & MT_STATX_MNT_ID_UNIQUE) && sx.stx_mnt_id == p->id;
}

/* A relevant visible mount appeared: follow it and its parents up to one already followed. */
static int follow_with_parents(struct mount_tracker *t, const struct mount_peek *p)
{
	uint64_t id = p->id, parent = p->parent;
	int r;

	r = join(t, p);
	for (unsigned depth = 0; r >= 0 && parent != id && !followed(t, parent); depth++) {
		struct mount_peek up;

		if (depth >= MOUNT_PARENT_WALK_MAX)
			return -ELOOP;
		r = mount_peek(parent, &up);
		if (r < 0)
			return r;
		if (!*up.mountpoint) { /* above our root */
			free(up.mountpoint);
			break;
		}
		r = join(t, &up);
		id = parent;
		parent = up.parent;
		free(up.mountpoint);
	}
	return r;
}

/* > 0 when the followed set changed or a full read is due. */
static int on_attach(struct mount_tracker *t, uint64_t id)
{
	struct mount_peek p;
	int r;

	r = mount_peek(id, &p);
	if (r == -ENOENT)
		return 0; /* gone again; a mount that is not there changes nothing */
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		t->need_full = true;
		return 1;
	}
	if (relevant(t, &p)) {
		r = visible(&p) ? follow_with_parents(t, &p) : -EREMOTE;
		if (r == -ENOMEM) {
			free(p.mountpoint);
			return r;
		}
		if (r < 0)
			t->need_full = true;
		r = 1;
	} else
		r = 0;
	free(p.mountpoint);
	return r;
}

int mount_tracker_read_events(struct mount_tracker *t)
{
	union {
		struct fanotify_event_metadata m;
		char bytes[16384];
	} buf;
	int changed = 0;

	for (;;) {
		ssize_t n = read(t->fd, &buf, sizeof(buf));
		const char *p = buf.bytes, *end;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		end = p + n;
		while (end - p >= (ssize_t)sizeof(struct fanotify_event_metadata)) {
			const struct fanotify_event_metadata *m = (const void *)p;
			const char *info = p + m->metadata_len, *info_end = p + m->event_len;
			uint64_t id = 0;
			int r;

			if (m->event_len < sizeof(*m) || m->event_len > (size_t)(end - p) ||
			    m->vers != FANOTIFY_METADATA_VERSION) {
				t->need_full = true; /* not an event we can read: trust nothing */
				return 1;
			}
			p += m->event_len;
			if (m->mask & FAN_Q_OVERFLOW) {
				t->need_full = true;
				changed = 1;
				continue;
			}
			while (info_end - info >= (ssize_t)sizeof(struct mt_event_info_mnt)) {
				const struct mt_event_info_mnt *im = (const void *)info;

				if (im->hdr.len < sizeof(im->hdr) || im->hdr.len > info_end - info)
					break;
				if (im->hdr.info_type == MT_FAN_EVENT_INFO_TYPE_MNT)
					id = im->mnt_id;
				info += im->hdr.len;
			}
			if (id == 0)
				continue;
			t->stats.events++;
			/* A move is both: it left one place and appeared in another. */
			r = (m->mask & MT_FAN_MNT_DETACH) && unfollow_id(t, id);
			if (m->mask & MT_FAN_MNT_ATTACH) {
				int k = on_attach(t, id);

				if (k < 0)
					return k;
				r |= k;
			}
			t->stats.relevant += r;
			changed |= r;
		}
	}
	return changed;
}

bool mount_tracker_needs_full(const struct mount_tracker *t)
{
	return t->need_full || !t->last;
}

/*
 * The full read. A table of 50,000 mounts with its strings and its analysis takes some 15 MB;
 * a brief of each (id, parent, a hash of the mountpoint, devpts or not) takes 1.6, and is enough
 * to find the mounts analysis_relevant_mounts() would keep: the same seeds and the same rules,
 * with every candidate that a hash points to checked by its mountpoint before it is taken. Two
 * open-addressing indexes over the briefs: by id, and by (parent, mountpoint hash) for "what is
 * mounted at this path inside that mount".
 */
struct briefs {
	struct mount_brief *b;
	size_t n;
	struct hash_index by_id, by_child; /* positions in b */
	bool *in;
	size_t *work, n_work;
};

static void briefs_done(struct briefs *x)
{
	free(x->b);
	hash_index_done(&x->by_id);
	hash_index_done(&x->by_child);
	free(x->in);
	free(x->work);
}

static uint64_t child_hash(uint64_t parent, uint64_t mountpoint_hash)
{
	return hash_u64_pair(parent, mountpoint_hash);
}

static int briefs_index(struct briefs *x)
{
	int r;

	x->in = calloc(x->n ?: 1, sizeof(bool));
	x->work = malloc(sizeof(size_t) * (x->n ?: 1));
	if (!x->in || !x->work || x->n >= UINT32_MAX)
		return -ENOMEM;
	if ((r = hash_index_reserve(&x->by_id, x->n)) < 0 ||
	    (r = hash_index_reserve(&x->by_child, x->n)) < 0)
		return r;
	for (size_t i = 0; i < x->n; i++)
		if ((r = hash_index_add(&x->by_id, hash_u64(x->b[i].id), i)) < 0 ||
		    (r = hash_index_add(
			 &x->by_child, child_hash(x->b[i].parent, x->b[i].mountpoint_hash), i)) < 0)
			return r;
	return 0;
}

static size_t briefs_find(const struct briefs *x, uint64_t id)
{
	struct hash_cursor c = { 0 };
	size_t i;

	while ((i = hash_index_next(&x->by_id, hash_u64(id), &c)) != HASH_INDEX_NONE)
		if (x->b[i].id == id)
			return i;
	return NO_MOUNT;
}

static void briefs_add(struct briefs *x, size_t i)
{
	if (i != NO_MOUNT && !x->in[i]) {
		x->in[i] = true;
		x->work[x->n_work++] = i;
	}
}

/* Take mount i if its mountpoint is path[0..len), which its hash only suggested. A mount gone
 * meanwhile is not taken: its event will come. */
static int briefs_add_if_at(struct briefs *x, size_t i, const char *path, size_t len)
{
	struct mount_peek p;
	int r = mount_peek(x->b[i].id, &p);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (strlen(p.mountpoint) == len && memcmp(p.mountpoint, path, len) == 0)
		briefs_add(x, i);
	free(p.mountpoint);
	return 0;
}

/* Take every mount at exactly path[0..len) inside the mount parent. */
static int briefs_add_children(struct briefs *x, uint64_t parent, const char *path, size_t len)
{
	uint64_t h = hash_path(path, len, 0);
	struct hash_cursor c = { 0 };
	size_t i;

	while ((i = hash_index_next(&x->by_child, child_hash(parent, h), &c)) != HASH_INDEX_NONE) {
		int r;

		if (x->in[i] || x->b[i].parent != parent || x->b[i].mountpoint_hash != h)
			continue;
		r = briefs_add_if_at(x, i, path, len);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Where the kernel looks for pts beside /dev/ptmx: next to the node its symlinks lead to. */
static char *pts_beside_ptmx(void)
{
	_cleanup_free_ char *path = strdup(PTMX_PATH), *dir = NULL;

	for (int hops = 0; path && hops < 8; hops++) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		char *next;

		if (n < 0)
			break;
		target[n] = 0;
		next = path_resolve_lexical(path, target);
		free(path);
		path = next;
	}
	dir = path ? path_dirname(path) : NULL;
	return dir ? path_join(dir, "pts") : NULL;
}

static int briefs_seed(struct briefs *x, const char *ptmx_dir)
{
	_cleanup_free_ char *pts = path_join(ptmx_dir, "pts"), *beside = pts_beside_ptmx();
	const char *paths[] = { PTMX_PATH, pts, beside };
	uint64_t hashes[ELEMENTSOF(paths)];

	if (!pts || !beside)
		return -ENOMEM;
	for (size_t k = 0; k < ELEMENTSOF(paths); k++)
		hashes[k] = hash_path(paths[k], strlen(paths[k]), 0);
	for (size_t i = 0; i < x->n; i++) {
		if (x->b[i].devpts) {
			briefs_add(x, i);
			continue;
		}
		for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
			int r;

			if (x->b[i].mountpoint_hash != hashes[k] || x->in[i])
				continue;
			r = briefs_add_if_at(x, i, paths[k], strlen(paths[k]));
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* A member's parent, what is stacked on it, and every sibling that hides it. */
static int briefs_expand(struct briefs *x, size_t m)
{
	const struct mount_brief *b = &x->b[m];
	size_t p = b->parent != b->id ? briefs_find(x, b->parent) : NO_MOUNT, plen = 0;
	_cleanup_free_ char *mp = NULL;
	struct mount_peek peek;
	int r;

	briefs_add(x, p);
	r = mount_peek(b->id, &peek);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	mp = peek.mountpoint;
	r = briefs_add_children(x, b->id, mp, strlen(mp));
	if (r < 0)
		return r;
	if (p != NO_MOUNT) {
		r = mount_peek(x->b[p].id, &peek);
		if (r < 0 && r != -ENOENT)
			return r;
		plen = r < 0 ? 0 : strlen(peek.mountpoint);
		if (r >= 0)
			free(peek.mountpoint);
	}
	for (const char *q = strchr(mp + 1, '/'); q; q = strchr(q + 1, '/')) {
		size_t len = (size_t)(q - mp);

		if (len > plen && (r = briefs_add_children(x, b->parent, mp, len)) < 0)
			return r;
	}
	return 0;
}

static int read_relevant_ids(struct mount_tracker *t)
{
	_cleanup_(briefs_done) struct briefs x = { 0 };
	int r;

	r = mount_briefs_from_kernel(&x.b, &x.n);
	if (r < 0)
		return r;
	r = briefs_index(&x);
	if (r >= 0)
		r = briefs_seed(&x, t->ptmx_dir);
	while (r >= 0 && x.n_work > 0)
		r = briefs_expand(&x, x.work[--x.n_work]);
	if (r < 0)
		return r;
	t->n_ids = 0;
	for (size_t i = 0; i < x.n; i++)
		if (x.in[i] && (r = follow_id(t, x.b[i].id)) < 0)
			return r;
	return 0;
}

int mount_tracker_table(struct mount_tracker *t, struct mount_table **ret)
{
	bool full = mount_tracker_needs_full(t);
	int r;

	if (full) {
		t->stats.full_reads++;
		r = read_relevant_ids(t);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return -ESTALE;
	}
	r = mount_table_from_ids(t->ids, t->n_ids, ret);
	return r < 0 ? r : full;
}

void mount_tracker_forget(struct mount_tracker *t)
{
	t->need_full = true;
}

int mount_tracker_refresh(struct mount_tracker *t)
{
	_cleanup_(mount_table_freep) struct mount_table *now = NULL;
	int r;

	if (mount_tracker_needs_full(t))
		return 1;
	t->stats.refreshes++;
	r = mount_table_from_ids(t->ids, t->n_ids, &now);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		t->need_full = true;
		return 1;
	}
	if (now->n_entries != t->last->n_entries || !now->unique_ids || !t->last->unique_ids)
		return 1;
	for (size_t i = 0; i < now->n_entries; i++)
		if (now->unique_ids[i] != t->last->unique_ids[i] ||
		    !mount_entry_equal(&now->entries[i], &t->last->entries[i]))
			return 1;
	return 0;
}

void mount_tracker_get_stats(const struct mount_tracker *t, struct mount_tracker_stats *ret)
{
	*ret = t->stats;
}
