/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/devpts-options.h"
#include "snapshot/idmap.h"
#include "snapshot/initramfs-record.h"
#include "snapshot/snapshot.h"
#include "util/alloc.h"
#include "util/group.h"
#include "util/parse.h"
#include "util/path.h"
#include "util/string-table.h"
#include "util/string-util.h"

static const char *const node_type_table[_NODE_TYPE_MAX] = {
	[NODE_MISSING] = "missing", [NODE_CHAR] = "char", [NODE_SYMLINK] = "symlink",
	[NODE_DIR] = "dir",	    [NODE_FILE] = "file", [NODE_OTHER] = "other",
};
DEFINE_STRING_TABLE_LOOKUP(node_type, enum node_type);

static const char *const holder_end_table[_HOLDER_END_MAX] = {
	[HOLDER_END_UNKNOWN] = "unknown",
	[HOLDER_END_SLAVE] = "slave",
	[HOLDER_END_MASTER] = "master",
	[HOLDER_END_BOTH] = "both",
};
DEFINE_STRING_TABLE_LOOKUP(holder_end, enum holder_end);

static const char *const holders_scanner_table[_HOLDERS_SCANNER_MAX] = {
	[HOLDERS_SCANNER_UNKNOWN] = NULL, /* not written, not read */
	[HOLDERS_SCANNER_USER] = "user",
	[HOLDERS_SCANNER_NO_PTRACE] = "root-without-cap-sys-ptrace",
	[HOLDERS_SCANNER_PRIVILEGED] = "cap-sys-ptrace",
};
DEFINE_STRING_TABLE_LOOKUP(holders_scanner, enum holders_scanner);

struct snapshot *snapshot_new(void)
{
	struct snapshot *s = calloc(1, sizeof(*s));

	if (s) {
		s->tty_gid = TTY_GID_FALLBACK;
		s->probe.status = ALLOC_NOT_RECORDED;
	}
	return s;
}

struct device_cgroup *device_cgroup_free(struct device_cgroup *d)
{
	if (!d)
		return NULL;
	free(d->path);
	free(d->list);
	free(d->container_manager);
	free(d->container_name);
	free(d);
	return NULL;
}

struct snapshot *snapshot_free(struct snapshot *s)
{
	if (!s)
		return NULL;
	free(s->hostname);
	free(s->kernel_release);
	free(s->mountinfo);
	mount_table_free(s->mounts);
	free(s->fstab);
	free(s->uid_map);
	free(s->gid_map);
	FOREACH_ARRAY (n, s->nodes, s->n_nodes) {
		free(n->path);
		free(n->target);
	}
	free(s->nodes);
	FOREACH_ARRAY (h, s->holders, s->n_holders)
		free(h->comm);
	free(s->holders);
	FOREACH_ARRAY (h, s->helpers, s->n_helpers)
		free(h->path);
	free(s->helpers);
	FOREACH_ARRAY (t, s->tty_sessions, s->n_tty_sessions) {
		free(t->leader_comm);
		free(t->holder_comm);
	}
	free(s->tty_sessions);
	initramfs_record_free(s->initramfs);
	snapshot_namespace_free(s->ns);
	device_cgroup_free(s->device_cgroup);
	free(s->userland.libc);
	free(s->captured_by);
	free(s->captured_by_git);
	FOREACH_ARRAY (m, s->tty_members, s->n_tty_members)
		free(m->name);
	free(s->tty_members);
	free(s);
	return NULL;
}

int snapshot_set_mountinfo(struct snapshot *s, char *text, size_t size, struct parse_error *err)
{
	struct mount_table *t = NULL;
	int r;

	free(s->mountinfo);
	s->mountinfo = text;
	s->mountinfo_size = size;
	s->mounts = mount_table_free(s->mounts);
	r = mount_table_parse(text, size, &t, err);
	if (r < 0)
		return r;
	s->mounts = t;
	return 0;
}

void snapshot_set_mount_table(struct snapshot *s, struct mount_table *t)
{
	free(s->mountinfo);
	s->mountinfo = NULL;
	s->mountinfo_size = 0;
	mount_table_free(s->mounts);
	s->mounts = t;
}

struct node *snapshot_add_node(struct snapshot *s, const char *path)
{
	struct node *n;

	if (GROW(s->nodes, s->allocated_nodes, s->n_nodes + 1) < 0)
		return NULL;
	n = &s->nodes[s->n_nodes];
	*n = (struct node){ .type = NODE_MISSING };
	n->path = strdup(path);
	if (!n->path)
		return NULL;
	s->n_nodes++;
	return n;
}

const struct node *snapshot_find_node(const struct snapshot *s, const char *path)
{
	FOREACH_ARRAY (n, s->nodes, s->n_nodes)
		if (streq(n->path, path))
			return n;
	return NULL;
}

const char *snapshot_mount_ns_kind(const struct snapshot *s)
{
	return s->initial_mount_ns_unknown ? "unknown" : s->initial_mount_ns ? "initial" : "other";
}

bool snapshot_judged_from_host(const struct snapshot *s)
{
	return s->ns && s->ns->host.known;
}

bool snapshot_is_host_instance(const struct snapshot *s, dev_t dev)
{
	return snapshot_judged_from_host(s) && dev == s->ns->host.dev &&
	       s->ns->mntns != s->ns->host.mntns;
}

bool snapshot_in_host_userns(const struct snapshot *s)
{
	return !s->uid_map && !s->gid_map;
}

struct snapshot_namespace *snapshot_namespace_free(struct snapshot_namespace *ns)
{
	if (ns)
		free(ns->host.mountpoint);
	free(ns);
	return NULL;
}

int snapshot_calibrate_idmaps(struct snapshot *s)
{
	const struct alloc_slave *sl = &s->probe.slave;
	struct devpts_options o = { 0 };
	_cleanup_free_ char *gid_map = NULL, *uid_map = NULL;
	long long gid_delta = 0, uid_delta = 0;
	bool found = false;
	int r;

	if (s->probe.status != ALLOC_PERFORMED || !sl->known || !s->mounts)
		return 0;
	for (size_t i = 0; i < s->mounts->n_entries && !found; i++) {
		const struct mount_entry *e = &s->mounts->entries[i];

		if (e->dev == sl->dev && streq(e->fstype, "devpts")) {
			devpts_options_parse(e->super_options, &o);
			found = true;
		}
	}
	if (!found)
		return 0;
	if (o.has_gid)
		gid_delta = idmap_offset(s->gid_map, o.gid, sl->gid);
	if (o.has_uid)
		uid_delta = idmap_offset(s->uid_map, o.uid, sl->uid);
	/* Maps alike, off alike: LXC, LXD and podman give uids and gids the same ranges. */
	if (gid_delta && !o.has_uid && s->uid_map && s->gid_map && streq(s->uid_map, s->gid_map))
		uid_delta = gid_delta;
	if (!gid_delta && !uid_delta)
		return 0;
	if ((gid_delta && (r = idmap_shifted(s->gid_map, gid_delta, &gid_map)) < 0) ||
	    (uid_delta && (r = idmap_shifted(s->uid_map, uid_delta, &uid_map)) < 0))
		return r == -ERANGE ? 0 : r;
	if (gid_map) {
		free(s->gid_map);
		s->gid_map = TAKE_PTR(gid_map);
	}
	if (uid_map) {
		free(s->uid_map);
		s->uid_map = TAKE_PTR(uid_map);
	}
	return 1;
}

int snapshot_add_holder(struct snapshot *s, const struct holder *h)
{
	char *comm = strdup(h->comm);

	if (!comm || GROW(s->holders, s->allocated_holders, s->n_holders + 1) < 0) {
		free(comm);
		return -ENOMEM;
	}
	s->holders[s->n_holders] = *h;
	s->holders[s->n_holders++].comm = comm;
	return 0;
}

int snapshot_add_tty_session(struct snapshot *s, const struct tty_session *t)
{
	char *leader = t->leader_comm ? strdup(t->leader_comm) : NULL,
	     *holder = t->holder_comm ? strdup(t->holder_comm) : NULL;

	if ((t->leader_comm && !leader) || (t->holder_comm && !holder) ||
	    GROW(s->tty_sessions, s->allocated_tty_sessions, s->n_tty_sessions + 1) < 0) {
		free(leader);
		free(holder);
		return -ENOMEM;
	}
	s->tty_sessions[s->n_tty_sessions] = *t;
	s->tty_sessions[s->n_tty_sessions].leader_comm = leader;
	s->tty_sessions[s->n_tty_sessions++].holder_comm = holder;
	return 0;
}

bool node_is_slave(const struct node *n, const char *mp, dev_t dev, unsigned *index)
{
	const char *name;

	if (n->type != NODE_CHAR || n->dev != dev)
		return false;
	name = path_startswith(n->path, mp);
	if (!name || *name != '/')
		return false;
	name++;
	if (!isdigit((unsigned char)*name) || strchr(name, '/'))
		return false;
	return parse_uint(name, index) == 0;
}
