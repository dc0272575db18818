/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listmount(2) gives the unique ids of the namespace's mounts in ascending
 * order, and that is mountinfo's order too: since Linux 6.8 both walk the
 * namespace's tree of mounts sorted by unique id. statmount(2) gives each
 * mount's fields; the two option strings are composed from flags in the
 * order and spelling of fs/proc_namespace.c.
 *
 * The table is not one atomic picture, and neither is mountinfo: a mount
 * unmounted between listmount() and its statmount() is left out, as a later
 * read of mountinfo would leave it out.
 *
 * The kernel ABI is in statmount-abi.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "probe/statmount-abi.h"
#include "probe/statmount.h"
#include "util/alloc.h"
#include "util/hashindex.h"
#include "util/limits.h"
#include "util/string-util.h"

/* Everything mountinfo prints but propagate_from and unbindable among its optional fields (the
 * peer groups come with STATMOUNT_MNT_BASIC); STATMOUNT_PROPAGATE_FROM is what makes mountinfo
 * quadratic among slaves (see mount_table_prefer_kernel()). The kernel leaves a string's bit out of
 * the returned mask when the string is empty, so only supported_mask says whether a field exists at
 * all. */
#define SM_WANTED                                                                                  \
	(SM_SB_BASIC | SM_MNT_BASIC | SM_MNT_ROOT | SM_MNT_POINT | SM_FS_TYPE | SM_MNT_OPTS |      \
	 SM_FS_SUBTYPE | SM_SB_SOURCE)
/* Never empty when the mount is visible from our root. */
#define SM_ALWAYS (SM_SB_BASIC | SM_MNT_BASIC | SM_MNT_ROOT | SM_FS_TYPE)

#define LISTMOUNT_BATCH	   4096
#define STATMOUNT_BUF_INIT (16u << 10) /* a 4,000-byte mountpoint and root fit */

struct strbuf {
	char *data;
	size_t used, allocated;
};

static void strbuf_done(struct strbuf *b)
{
	free(b->data);
}

static int strbuf_add(struct strbuf *b, const char *s, size_t len)
{
	if (GROW(b->data, b->allocated, b->used + len + 1) < 0)
		return -ENOMEM;
	memcpy(b->data + b->used, s, len);
	b->used += len;
	return 0;
}

static int strbuf_adds(struct strbuf *b, const char *s)
{
	return strbuf_add(b, s, strlen(s));
}

/* End the string being added with its NUL. */
static int strbuf_end(struct strbuf *b)
{
	return strbuf_add(b, "", 1);
}

/* Where each string of an entry starts in the table's buffer, until the buffer stops moving. */
struct entry_offsets {
	size_t root, mountpoint, fstype, source, mount_options, super_options;
};

static int list_mount_ids(uint64_t **ret, size_t *ret_n)
{
	_cleanup_free_ uint64_t *ids = NULL;
	size_t n = 0, allocated = 0;

	for (;;) {
		struct mount_id_request req = {
			.size = MOUNT_ID_REQUEST_SIZE_VER0,
			.mnt_id = LSMT_ROOT_ID,
			.param = n > 0 ? ids[n - 1] : 0,
		};
		long k;

		if (GROW(ids, allocated, n + LISTMOUNT_BATCH) < 0)
			return -ENOMEM;
		k = sys_listmount(&req, ids + n, LISTMOUNT_BATCH);
		if (k < 0)
			return -errno;
		n += (size_t)k;
		if (k < LISTMOUNT_BATCH)
			break;
	}
	*ret = TAKE_PTR(ids);
	*ret_n = n;
	return 0;
}

/* statmount() into *buf, growing it while the strings do not fit. */
static int statmount_fetch(uint64_t id, uint64_t mask, struct statmount_reply **buf, size_t *size)
{
	struct mount_id_request req = {
		.size = MOUNT_ID_REQUEST_SIZE_VER0,
		.mnt_id = id,
		.param = mask,
	};

	for (;;) {
		struct statmount_reply *bigger;

		if (sys_statmount(&req, *buf, *size) >= 0)
			break;
		if (errno != EOVERFLOW)
			return -errno;
		if (*size >= STATMOUNT_BUFFER_SIZE_MAX)
			return -E2BIG;
		bigger = realloc(*buf, *size * 2);
		if (!bigger)
			return -ENOMEM;
		*buf = bigger;
		*size *= 2;
	}
	if ((*buf)->size < sizeof(**buf) || (*buf)->size > *size)
		return -EBADMSG;
	return 0;
}

/* A string of the reply, or "" when its bit is missing (the kernel's way of saying empty). */
static const char *reply_string(const struct statmount_reply *sm, uint64_t bit, uint32_t off)
{
	size_t room = sm->size - sizeof(*sm);

	if (!(sm->mask & bit))
		return "";
	if (off >= room || !memchr(sm->str + off, 0, room - off))
		return NULL;
	return sm->str + off;
}

/* The per-mount options as show_mnt_opts() prints them. */
static int put_mount_options(struct strbuf *b, uint64_t attr)
{
	uint64_t atime = attr & ATTR_ATIME_MASK;
	int r;

	r = strbuf_adds(b, attr & ATTR_RDONLY ? "ro" : "rw");
	if (r >= 0 && attr & ATTR_NOSUID)
		r = strbuf_adds(b, ",nosuid");
	if (r >= 0 && attr & ATTR_NODEV)
		r = strbuf_adds(b, ",nodev");
	if (r >= 0 && attr & ATTR_NOEXEC)
		r = strbuf_adds(b, ",noexec");
	if (r >= 0 && atime == ATTR_NOATIME)
		r = strbuf_adds(b, ",noatime");
	if (r >= 0 && attr & ATTR_NODIRATIME)
		r = strbuf_adds(b, ",nodiratime");
	if (r >= 0 && atime == ATTR_RELATIME)
		r = strbuf_adds(b, ",relatime");
	if (r >= 0 && attr & ATTR_NOSYMFOLLOW)
		r = strbuf_adds(b, ",nosymfollow");
	if (r >= 0 && attr & ATTR_IDMAP)
		r = strbuf_adds(b, ",idmapped");
	return r < 0 ? r : strbuf_end(b);
}

/* The superblock options as show_mountinfo() prints them: ro/rw, show_sb_opts()'s flags (but
 * "mand", which statmount() does not report), then the security and filesystem options. */
static int put_super_options(struct strbuf *b, uint32_t sb_flags, const char *opts)
{
	int r;

	r = strbuf_adds(b, sb_flags & SBF_RDONLY ? "ro" : "rw");
	if (r >= 0 && sb_flags & SBF_SYNCHRONOUS)
		r = strbuf_adds(b, ",sync");
	if (r >= 0 && sb_flags & SBF_DIRSYNC)
		r = strbuf_adds(b, ",dirsync");
	if (r >= 0 && sb_flags & SBF_LAZYTIME)
		r = strbuf_adds(b, ",lazytime");
	if (r >= 0 && *opts && (r = strbuf_add(b, ",", 1)) >= 0)
		r = strbuf_adds(b, opts);
	return r < 0 ? r : strbuf_end(b);
}

static int put_string(struct strbuf *b, const char *s, size_t *ret_offset)
{
	*ret_offset = b->used;
	return strbuf_add(b, s, strlen(s) + 1);
}

/* Append one mount. Returns 0, or 1 when mountinfo would not list it. */
static int add_entry(const struct statmount_reply *sm, struct mount_entry *e,
		     struct entry_offsets *o, struct strbuf *b)
{
	const char *root = reply_string(sm, SM_MNT_ROOT, sm->mnt_root),
		   *mountpoint = reply_string(sm, SM_MNT_POINT, sm->mnt_point),
		   *fstype = reply_string(sm, SM_FS_TYPE, sm->fs_type),
		   *subtype = reply_string(sm, SM_FS_SUBTYPE, sm->fs_subtype),
		   *source = reply_string(sm, SM_SB_SOURCE, sm->sb_source),
		   *opts = reply_string(sm, SM_MNT_OPTS, sm->mnt_opts);
	int r;

	if (!root || !mountpoint || !fstype || !subtype || !source || !opts)
		return -EBADMSG;
	/* No mountpoint: not reachable from our root (chroot), which mountinfo skips too. */
	if (!*mountpoint)
		return 1;
	if ((sm->mask & SM_ALWAYS) != SM_ALWAYS)
		return -EBADMSG;

	*e = (struct mount_entry){
		.id = sm->mnt_id_old,
		.parent_id = sm->mnt_parent_id_old,
		.dev = makedev(sm->sb_dev_major, sm->sb_dev_minor),
		/* the peer groups mountinfo prints as shared:N and master:N (STATMOUNT_MNT_BASIC)
		 */
		.shared =
		    sm->mnt_propagation & SM_PROPAGATION_SHARED ? (unsigned)sm->mnt_peer_group : 0,
		.master = sm->mnt_propagation & SM_PROPAGATION_SLAVE ? (unsigned)sm->mnt_master : 0,
	};
	if ((r = put_string(b, root, &o->root)) < 0 ||
	    (r = put_string(b, mountpoint, &o->mountpoint)) < 0)
		return r;
	/* show_type(): "fuse.sshfs" */
	o->fstype = b->used;
	if ((r = strbuf_adds(b, fstype)) < 0 ||
	    (*subtype && ((r = strbuf_add(b, ".", 1)) < 0 || (r = strbuf_adds(b, subtype)) < 0)) ||
	    (r = strbuf_end(b)) < 0)
		return r;
	if ((r = put_string(b, source, &o->source)) < 0)
		return r;
	o->mount_options = b->used;
	r = put_mount_options(b, sm->mnt_attr);
	if (r < 0)
		return r;
	o->super_options = b->used;
	return put_super_options(b, sm->sb_flags, opts);
}

/* Fill *ret from statmount() of each id, skipping mounts gone since the ids were listed. */
static int table_from_ids(const uint64_t *ids, size_t n_ids, struct mount_table **ret)
{
	_cleanup_(mount_table_freep) struct mount_table *t = NULL;
	_cleanup_free_ struct statmount_reply *sm = NULL;
	_cleanup_free_ struct entry_offsets *offsets = NULL;
	_cleanup_(strbuf_done) struct strbuf b = { 0 };
	size_t sm_size = STATMOUNT_BUF_INIT;
	bool checked = false;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->entries = calloc(n_ids ?: 1, sizeof(*t->entries));
	t->unique_ids = calloc(n_ids ?: 1, sizeof(*t->unique_ids));
	offsets = calloc(n_ids ?: 1, sizeof(*offsets));
	sm = malloc(sm_size);
	/* About 100 bytes of strings per mount on a typical host; grown as needed. */
	if (!t->entries || !t->unique_ids || !offsets || !sm ||
	    GROW(b.data, b.allocated, n_ids * 128 + 1) < 0)
		return -ENOMEM;

	for (size_t i = 0; i < n_ids; i++) {
		r = statmount_fetch(ids[i], SM_WANTED | SM_SUPPORTED_MASK, &sm, &sm_size);
		if (r == -ENOENT)
			continue; /* unmounted since listmount() */
		if (r < 0)
			return r;
		/* Before 6.15 there is no supported mask, and no telling an empty field from one
		 * the kernel does not have. */
		if (!checked && (!(sm->mask & SM_SUPPORTED_MASK) ||
				 (sm->supported_mask & SM_WANTED) != SM_WANTED))
			return -EOPNOTSUPP;
		checked = true;
		r = add_entry(sm, &t->entries[t->n_entries], &offsets[t->n_entries], &b);
		if (r < 0)
			return r;
		if (r == 0)
			t->unique_ids[t->n_entries++] = ids[i];
	}

	/* The buffer has stopped moving: turn offsets into pointers. */
	t->buffer = TAKE_PTR(b.data);
	for (size_t i = 0; i < t->n_entries; i++) {
		struct mount_entry *e = &t->entries[i];
		const struct entry_offsets *o = &offsets[i];

		e->root = t->buffer + o->root;
		e->mountpoint = t->buffer + o->mountpoint;
		e->fstype = t->buffer + o->fstype;
		e->source = t->buffer + o->source;
		e->mount_options = t->buffer + o->mount_options;
		e->super_options = t->buffer + o->super_options;
	}
	*ret = TAKE_PTR(t);
	return 0;
}

int mount_table_from_kernel(struct mount_table **ret)
{
	_cleanup_free_ uint64_t *ids = NULL;
	size_t n_ids = 0;
	int r;

	r = list_mount_ids(&ids, &n_ids);
	if (r < 0)
		return r;
	return table_from_ids(ids, n_ids, ret);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int mount_table_from_ids(const uint64_t *ids, size_t n_ids, struct mount_table **ret)
{
	_cleanup_free_ uint64_t *sorted = malloc(sizeof(uint64_t) * (n_ids ?: 1));

	if (!sorted)
		return -ENOMEM;
	if (n_ids) {
		memcpy(sorted, ids, sizeof(uint64_t) * n_ids);
		qsort(sorted, n_ids, sizeof(uint64_t), compare_u64);
	}
	return table_from_ids(sorted, n_ids, ret);
}

/* statmount() of what the tracker looks at: the parent (in *buf), the mountpoint (pointing
 * into *buf) and whether it is devpts. */
static int fetch_brief(uint64_t id, struct statmount_reply **buf, size_t *size,
		       const char **ret_mountpoint, bool *ret_devpts)
{
	const char *fstype;
	int r;

	r = statmount_fetch(id, SM_MNT_BASIC | SM_MNT_POINT | SM_FS_TYPE, buf, size);
	if (r < 0)
		return r;
	*ret_mountpoint = reply_string(*buf, SM_MNT_POINT, (*buf)->mnt_point);
	fstype = reply_string(*buf, SM_FS_TYPE, (*buf)->fs_type);
	if (!*ret_mountpoint || !fstype || !((*buf)->mask & SM_MNT_BASIC))
		return -EBADMSG;
	*ret_devpts = streq(fstype, "devpts");
	return 0;
}

int mount_briefs_from_kernel(struct mount_brief **ret, size_t *ret_n)
{
	_cleanup_free_ uint64_t *ids = NULL;
	_cleanup_free_ struct mount_brief *b = NULL;
	size_t n_ids = 0, n = 0, size = STATMOUNT_BUF_INIT;
	_cleanup_free_ struct statmount_reply *sm = malloc(size);
	int r;

	if (!sm)
		return -ENOMEM;
	r = list_mount_ids(&ids, &n_ids);
	if (r < 0)
		return r;
	b = calloc(n_ids ?: 1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n_ids; i++) {
		const char *mountpoint;
		bool devpts;

		r = fetch_brief(ids[i], &sm, &size, &mountpoint, &devpts);
		if (r == -ENOENT)
			continue; /* unmounted since listmount() */
		if (r < 0)
			return r;
		if (!*mountpoint)
			continue; /* not reachable from our root, as in mountinfo */
		b[n++] = (struct mount_brief){
			.id = ids[i],
			.parent = sm->mnt_parent_id,
			.mountpoint_hash = hash_path(mountpoint, strlen(mountpoint), 0),
			.devpts = devpts,
		};
	}
	*ret = TAKE_PTR(b);
	*ret_n = n;
	return 0;
}

int mount_peek(uint64_t id, struct mount_peek *ret)
{
	size_t size = STATMOUNT_BUF_INIT;
	_cleanup_free_ struct statmount_reply *sm = malloc(size);
	const char *mountpoint;
	bool devpts;
	int r;

	if (!sm)
		return -ENOMEM;
	r = fetch_brief(id, &sm, &size, &mountpoint, &devpts);
	if (r < 0)
		return r;
	*ret = (struct mount_peek){
		.id = id,
		.parent = sm->mnt_parent_id,
		.mountpoint = strdup(mountpoint),
		.devpts = devpts,
	};
	return ret->mountpoint ? 0 : -ENOMEM;
}

/*
 * mountinfo's cost beyond the text is get_dominating_id() for every slave mount: it walks the
 * ring of its master's peer group, about 6 ns a peer here. The kernel path costs about 2.5 us
 * a mount more than the text (tests/bench/statmount-bench.c), so it wins once the average
 * mount walks a ring of some 400 peers.
 */
#define PREFER_SAMPLES	       64
#define PREFER_SMALL_TABLE     256
#define PREFER_PEERS_PER_MOUNT 400

/* The peer group a mount receives from, as a slave, into *ret (0: none). 0, -ENOENT when it is
 * gone, or -errno. */
static int mount_master(uint64_t id, uint64_t *ret)
{
	struct mount_id_request req = {
		.size = MOUNT_ID_REQUEST_SIZE_VER0,
		.mnt_id = id,
		.param = SM_MNT_BASIC,
	};
	struct statmount_reply sm;

	if (sys_statmount(&req, &sm, sizeof(sm)) < 0)
		return -errno;
	*ret = sm.mnt_propagation & SM_PROPAGATION_SLAVE ? sm.mnt_master : 0;
	return 0;
}

/* Whether two of masters[0..n) name the same peer group. */
static bool masters_repeat(const uint64_t *masters, size_t n)
{
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n && masters[a]; b++)
			if (masters[b] == masters[a])
				return true;
	return false;
}

/* The first id of our mounts after the id after (0: the very first), or with LISTMOUNT_REVERSE
 * and after 0 the last; 0 when there is none, -1 when the kernel cannot say. */
static int64_t mount_id_from(uint64_t after, unsigned flags)
{
	struct mount_id_request req = {
		.size = MOUNT_ID_REQUEST_SIZE_VER0,
		.mnt_id = LSMT_ROOT_ID,
		.param = after,
	};
	uint64_t id;
	long k = sys_listmount_flags(&req, &id, 1, flags);

	return k < 0 ? -1 : k == 0 ? 0 : (int64_t)(id & INT64_MAX);
}

/* Whether a sample spread over the ids from lo, the first, to the last rather than over the
 * mounts themselves has two mounts receiving from one master; -1 where the kernel cannot say
 * (before Linux 6.14). Without listing every id (a walk of the whole tree, 5% of an audit of
 * 10,000 mounts): the last id, and each sample one listmount(2) of a single id. A table whose
 * big peer group this misses (a burst of bind mounts made long after the rest, in a sliver of
 * the ids) is read as text: slower, the same table. */
static int spread_masters_repeat(uint64_t lo)
{
	uint64_t masters[PREFER_SAMPLES];
	int64_t hi = mount_id_from(0, LISTMOUNT_REVERSE), prev = 0;
	size_t n = 0;

	if (hi < 0)
		return -1;
	for (size_t k = 0; k < PREFER_SAMPLES && (uint64_t)hi >= lo; k++) {
		uint64_t at =
		    lo + (uint64_t)((unsigned __int128)((uint64_t)hi - lo) * k / PREFER_SAMPLES);
		int64_t id = mount_id_from(at - 1, 0);
		int r;

		if (id < 0)
			return -1;
		if (id == 0 || id == prev)
			continue; /* none left there, or the sample before's again */
		prev = id;
		r = mount_master((uint64_t)id, &masters[n]);
		if (r == -ENOENT)
			continue; /* unmounted since */
		if (r < 0)
			return -1;
		n++;
	}
	return masters_repeat(masters, n);
}

/* The estimate itself, over every id of the table: PREFER_SAMPLES of them, evenly spaced. */
static bool samples_prefer_kernel(const uint64_t *ids, size_t n_ids)
{
	uint64_t masters[PREFER_SAMPLES];
	size_t n_samples = n_ids < PREFER_SAMPLES ? n_ids : PREFER_SAMPLES, n = 0;
	double peers = 0;

	for (size_t k = 0; k < n_samples; k++) {
		int r = mount_master(ids[k * n_ids / n_samples], &masters[n]);

		if (r == -ENOENT)
			continue;
		if (r < 0)
			return false;
		n++;
	}
	/* A peer group that c of the n samples receive from holds about c / n of the table. A
	 * group seen once may be of any size below that: count it as small. */
	for (size_t a = 0; a < n; a++) {
		unsigned c = 0;

		if (masters[a] == 0)
			continue;
		for (size_t b = 0; b < n; b++)
			c += masters[b] == masters[a];
		if (c >= 2)
			peers += (double)c * (double)n_ids / (double)n;
	}
	return n > 0 && peers / (double)n >= PREFER_PEERS_PER_MOUNT;
}

bool mount_table_prefer_kernel(void)
{
	_cleanup_free_ uint64_t *ids = NULL;
	uint64_t first[PREFER_SMALL_TABLE];
	struct mount_id_request req = {
		.size = MOUNT_ID_REQUEST_SIZE_VER0,
		.mnt_id = LSMT_ROOT_ID,
	};
	long k = sys_listmount(&req, first, PREFER_SMALL_TABLE);
	size_t n_ids;

	/* A small table is listed whole in one call, as cheaply as sampled. */
	if (k <= 0)
		return false;
	if (k < PREFER_SMALL_TABLE)
		return samples_prefer_kernel(first, (size_t)k);
	/* A host's mounts are shared, seldom slaves: most big tables are told so without a
	 * listing. */
	if (spread_masters_repeat(first[0]) == 0)
		return false;
	if (list_mount_ids(&ids, &n_ids) < 0 || n_ids == 0)
		return false;
	return samples_prefer_kernel(ids, n_ids);
}
