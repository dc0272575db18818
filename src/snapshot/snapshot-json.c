/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "snapshot/devpts-options.h"
#include "snapshot/initramfs-record.h"
#include "snapshot/snapshot-json.h"
#include "util/alloc.h"
#include "util/escape.h"
#include "util/json-util.h"
#include "util/macro.h"

#define SNAPSHOT_SCHEMA "ptsguard.snapshot/1"

/* Optional map text; every line must be three numbers. */
static int load_idmap(json_object *root, const char *key, char **ret, struct load_error *err)
{
	const char *text;
	int r;

	r = json_get_string(root, "", key, JSON_OPTIONAL | JSON_NULLABLE, &text, err);
	if (r < 0 || !text)
		return r;
	for (const char *p = text; *p;) {
		unsigned long long a, b, c;
		const char *nl = strchr(p, '\n');
		int used = 0;

		if (sscanf(p, " %llu %llu %llu%n", &a, &b, &c, &used) != 3 ||
		    (p[used] && p[used] != '\n'))
			return load_fail(
			    err, "key '%s': each line must be \"INSIDE OUTSIDE COUNT\"", key);
		p = nl ? nl + 1 : p + strlen(p);
	}
	*ret = strdup(text);
	return *ret ? 0 : -ENOMEM;
}

json_object *devpts_seen_healthy_to_json(const struct devpts_seen_healthy *h)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "device", json_new_devnum(h->dev));
	json_object_object_add(o, "mode", json_new_mode(h->mode));
	return o;
}

int devpts_seen_healthy_from_json(json_object *o, const char *where,
				  struct devpts_seen_healthy *ret, struct load_error *err)
{
	struct devpts_seen_healthy h = { .known = true };
	int r;

	if ((r = json_get_dev(o, where, "device", JSON_REQUIRED, &h.dev, err)) < 0 ||
	    (r = json_get_mode(o, where, "mode", JSON_REQUIRED, &h.mode, err)) < 0)
		return r;
	if (!devpts_mode_healthy(NULL, h.mode))
		return load_fail(err,
				 "key '%s.mode': %04o is not a healthy slave mode (0620 or 0600)",
				 where, (unsigned)h.mode);
	*ret = h;
	return 0;
}

/* "namespace": { "mntns", "pid", "root_is_host" (optional), "host": { "mntns", "serving": {
 * "device", "mount_id", "mountpoint" } or null } } */
static int load_namespace(json_object *root, struct snapshot *s, struct load_error *err)
{
	json_object *o, *host, *serving;
	const char *mp;
	long mntns = 0, pid = 0, host_mntns = 0, id = 0;
	bool root_is_host = false;
	int r;

	if ((r = json_get(root, "", "namespace", json_type_object, JSON_OPTIONAL | JSON_NULLABLE,
			  &o, err)) < 0 ||
	    !o)
		return r;
	if ((r = json_get_long(o, "namespace", "mntns", 0, INT64_MAX, JSON_REQUIRED, &mntns, err)) <
		0 ||
	    (r = json_get_long(o, "namespace", "pid", 0, INT32_MAX, JSON_REQUIRED, &pid, err)) <
		0 ||
	    (r = json_get_bool(o, "namespace", "root_is_host", JSON_OPTIONAL, &root_is_host, err)) <
		0 ||
	    (r = json_get(o, "namespace", "host", json_type_object, JSON_REQUIRED, &host, err)) <
		0 ||
	    (r = json_get_long(host, "namespace.host", "mntns", 0, INT64_MAX, JSON_REQUIRED,
			       &host_mntns, err)) < 0 ||
	    (r = json_get(host, "namespace.host", "serving", json_type_object, JSON_NULLABLE,
			  &serving, err)) < 0)
		return r;
	s->ns = calloc(1, sizeof(*s->ns));
	if (!s->ns)
		return -ENOMEM;
	s->ns->mntns = (uint64_t)mntns;
	s->ns->pid = (pid_t)pid;
	s->ns->root_is_host = root_is_host;
	s->ns->host.mntns = (uint64_t)host_mntns;
	if (!serving)
		return 0;
	if ((r = json_get_dev(serving, "namespace.host.serving", "device", JSON_REQUIRED,
			      &s->ns->host.dev, err)) < 0 ||
	    (r = json_get_long(serving, "namespace.host.serving", "mount_id", 0, UINT32_MAX,
			       JSON_REQUIRED, &id, err)) < 0 ||
	    (r = json_get_string(serving, "namespace.host.serving", "mountpoint", JSON_REQUIRED,
				 &mp, err)) < 0)
		return r;
	s->ns->host.known = true;
	s->ns->host.mount_id = (unsigned)id;
	s->ns->host.mountpoint = strdup(mp);
	return s->ns->host.mountpoint ? 0 : -ENOMEM;
}

json_object *snapshot_namespace_to_json(const struct snapshot_namespace *ns)
{
	json_object *o = json_object_new_object(), *host = json_object_new_object(),
		    *serving = NULL;

	json_object_object_add(o, "mntns", json_object_new_int64((int64_t)ns->mntns));
	json_object_object_add(o, "pid", json_object_new_int64(ns->pid));
	json_object_object_add(o, "root_is_host", json_object_new_boolean(ns->root_is_host));
	json_object_object_add(host, "mntns", json_object_new_int64((int64_t)ns->host.mntns));
	if (ns->host.known) {
		serving = json_object_new_object();
		json_object_object_add(serving, "device", json_new_devnum(ns->host.dev));
		json_object_object_add(serving, "mount_id",
				       json_object_new_int64(ns->host.mount_id));
		json_object_object_add(serving, "mountpoint",
				       json_new_string_or_null(ns->host.mountpoint));
	}
	json_object_object_add(host, "serving", serving);
	json_object_object_add(o, "host", host);
	return o;
}

/* ---- writing ---- */

static json_object *device_cgroup_to_json(const struct device_cgroup *d)
{
	json_object *o = json_object_new_object(), *c = NULL;

	json_object_object_add(o, "version", json_object_new_int64(d->version));
	json_object_object_add(o, "path", json_object_new_string(d->path));
	json_object_object_add(o, "list", json_new_string_or_null(d->list));
	if (d->container_manager) {
		c = json_object_new_object();
		json_object_object_add(c, "manager", json_object_new_string(d->container_manager));
		json_object_object_add(c, "name", json_new_string_or_null(d->container_name));
	}
	json_object_object_add(o, "container", c);
	return o;
}

/*
 * The text of mountinfo or fstab as a JSON string, which is UTF-8 (util/json-util.h writes any
 * other byte as U+FFFD): a byte of a name that is not part of well-formed UTF-8 is written with
 * the tables' own octal escape, which their readers decode, so the snapshot read back gives the
 * same mounts, byte for byte.
 */
static json_object *table_text_to_json(const char *text, size_t size)
{
	_cleanup_free_ char *escaped = NULL;
	size_t n;

	if (utf8_valid(text, size))
		return json_object_new_string_len(text, (int)size);
	escaped = octal_escape_invalid_utf8(text, size, &n);
	return escaped && n <= INT_MAX ? json_object_new_string_len(escaped, (int)n) : NULL;
}

json_object *snapshot_to_json(const struct snapshot *s)
{
	json_object *root = json_object_new_object(), *k = json_object_new_object();
	json_object *nodes = json_object_new_array(), *holders = json_object_new_array();
	json_object *helpers = json_object_new_array();

	json_object_object_add(root, "schema", json_object_new_string(SNAPSHOT_SCHEMA));
	json_object_object_add(root, "hostname", json_object_new_string(s->hostname ?: ""));
	json_object_object_add(k, "release", json_object_new_string(s->kernel_release ?: ""));
	json_object_object_add(k, "user_namespaces_max",
			       json_object_new_int64(s->user_namespaces_max));
	json_object_object_add(k, "pty_max", json_object_new_int64(s->pty_max));
	json_object_object_add(k, "pty_reserve", json_object_new_int64(s->pty_reserve));
	json_object_object_add(k, "pty_nr", json_object_new_int64(s->pty_nr));
	json_object_object_add(
	    k, "initial_mount_ns",
	    s->initial_mount_ns_unknown ? NULL : json_object_new_boolean(s->initial_mount_ns));
	json_object_object_add(root, "kernel", k);
	json_object_object_add(root, "tty_gid", json_object_new_int64(s->tty_gid));
	json_object_object_add(root, "mountinfo",
			       table_text_to_json(s->mountinfo ?: "", s->mountinfo_size));
	json_object_object_add(root, "fstab",
			       s->fstab ? table_text_to_json(s->fstab, strlen(s->fstab)) : NULL);
	if (s->uid_map)
		json_object_object_add(root, "uid_map", json_object_new_string(s->uid_map));
	if (s->gid_map)
		json_object_object_add(root, "gid_map", json_object_new_string(s->gid_map));

	FOREACH_ARRAY (n, s->nodes, s->n_nodes) {
		json_object *o = json_object_new_object();
		bool present = n->type != NODE_MISSING;

		json_object_object_add(o, "path", json_object_new_string(n->path));
		json_object_object_add(o, "type",
				       json_object_new_string(node_type_to_string(n->type)));
		json_object_object_add(o, "mode", present ? json_new_mode(n->mode) : NULL);
		json_object_object_add(o, "uid", present ? json_object_new_int64(n->uid) : NULL);
		json_object_object_add(o, "gid", present ? json_object_new_int64(n->gid) : NULL);
		json_object_object_add(o, "rdev",
				       n->type == NODE_CHAR ? json_new_devnum(n->rdev) : NULL);
		json_object_object_add(o, "dev", present ? json_new_devnum(n->dev) : NULL);
		json_object_object_add(o, "target", json_new_string_or_null(n->target));
		if (present && n->ino)
			json_object_object_add(o, "ino", json_object_new_int64((int64_t)n->ino));
		json_object_array_add(nodes, o);
	}
	json_object_object_add(root, "nodes", nodes);

	FOREACH_ARRAY (h, s->holders, s->n_holders) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "pid", json_object_new_int64(h->pid));
		json_object_object_add(o, "comm", json_object_new_string(h->comm ?: ""));
		json_object_object_add(o, "dev", json_new_devnum(h->dev));
		json_object_object_add(o, "index", json_object_new_int64(h->index));
		if (h->fd >= 0)
			json_object_object_add(o, "fd", json_object_new_int64(h->fd));
		if (h->end != HOLDER_END_UNKNOWN)
			json_object_object_add(
			    o, "end", json_object_new_string(holder_end_to_string(h->end)));
		json_object_array_add(holders, o);
	}
	json_object_object_add(root, "holders", holders);
	json_object_object_add(root, "holders_scanned",
			       json_object_new_boolean(s->holders_scanned));
	json_object_object_add(root, "holders_skipped", json_object_new_int64(s->holders_skipped));
	if (s->holders_skipped_errno > 0)
		json_object_object_add(root, "holders_skipped_errno",
				       json_object_new_int64(s->holders_skipped_errno));
	if (s->holders_scanner != HOLDERS_SCANNER_UNKNOWN)
		json_object_object_add(
		    root, "holders_scanner",
		    json_object_new_string(holders_scanner_to_string(s->holders_scanner)));
	if (s->holders_scanned) {
		const struct holders_progress *p = &s->holders_progress;

		json_object_object_add(root, "holders_complete",
				       json_object_new_boolean(!p->partial));
		json_object_object_add(root, "holders_processes_scanned",
				       json_object_new_int64(p->processes_scanned));
		json_object_object_add(root, "holders_processes_left",
				       json_object_new_int64(p->processes_left));
		json_object_object_add(root, "holders_fds_scanned",
				       json_object_new_int64((int64_t)p->fds_scanned));
	}

	if (s->n_tty_sessions) {
		json_object *sessions = json_object_new_array();

		FOREACH_ARRAY (t, s->tty_sessions, s->n_tty_sessions) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "dev", json_new_devnum(t->dev));
			json_object_object_add(o, "index", json_object_new_int64(t->index));
			json_object_object_add(o, "sid", json_object_new_int64(t->sid));
			json_object_object_add(o, "leader_pid",
					       t->leader ? json_object_new_int64(t->leader) : NULL);
			json_object_object_add(o, "leader_comm",
					       json_new_string_or_null(t->leader_comm));
			json_object_object_add(o, "uid", json_object_new_int64(t->uid));
			json_object_object_add(o, "gid", json_object_new_int64(t->gid));
			json_object_object_add(o, "holder_pid",
					       t->holder ? json_object_new_int64(t->holder) : NULL);
			json_object_object_add(o, "holder_comm",
					       json_new_string_or_null(t->holder_comm));
			json_object_object_add(o, "holder_uid",
					       t->holder ? json_object_new_int64(t->holder_uid)
							 : NULL);
			json_object_array_add(sessions, o);
		}
		json_object_object_add(root, "tty_sessions", sessions);
	}

	FOREACH_ARRAY (h, s->helpers, s->n_helpers) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "path", json_object_new_string(h->path));
		json_object_object_add(o, "mode", json_new_mode(h->mode));
		json_object_object_add(o, "uid", json_object_new_int64(h->uid));
		json_object_array_add(helpers, o);
	}
	json_object_object_add(root, "setuid_helpers", helpers);
	if (s->initramfs)
		json_object_object_add(root, "initramfs", initramfs_record_to_json(s->initramfs));
	if (s->last_healthy.known)
		json_object_object_add(root, "last_healthy",
				       devpts_seen_healthy_to_json(&s->last_healthy));
	if (s->ns)
		json_object_object_add(root, "namespace", snapshot_namespace_to_json(s->ns));
	if (s->probe.status != ALLOC_NOT_RECORDED)
		json_object_object_add(root, "probe", alloc_probe_to_json(&s->probe));
	if (s->device_cgroup)
		json_object_object_add(root, "device_cgroup",
				       device_cgroup_to_json(s->device_cgroup));
	if (s->captured_at) {
		time_t t = (time_t)(s->captured_at / 1000000);
		struct tm tm;
		char buf[32];

		if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
			json_object_object_add(root, "captured_at", json_object_new_string(buf));
	}
	if (s->captured_by) {
		json_object *g = json_object_new_object();

		json_object_object_add(g, "name", json_object_new_string("ptsguard"));
		json_object_object_add(g, "version", json_object_new_string(s->captured_by));
		json_object_object_add(g, "git", json_new_string_or_null(s->captured_by_git));
		json_object_object_add(root, "generator", g);
	}
	if (s->tty_members_known) {
		json_object *members = json_object_new_array();

		FOREACH_ARRAY (m, s->tty_members, s->n_tty_members) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "name", json_object_new_string(m->name));
			json_object_object_add(o, "uid",
					       m->uid_known ? json_object_new_int64(m->uid) : NULL);
			json_object_array_add(members, o);
		}
		json_object_object_add(root, "tty_members", members);
	}
	if (s->userland.libc) {
		json_object *u = json_object_new_object();

		json_object_object_add(u, "libc", json_object_new_string(s->userland.libc));
		json_object_object_add(u, "glibc_minor",
				       s->userland.glibc_minor
					   ? json_object_new_int64(s->userland.glibc_minor)
					   : NULL);
		json_object_object_add(root, "userland", u);
	}
	return root;
}

/* ---- reading ---- */

static int load_node(json_object *o, const char *where, struct snapshot *s, struct load_error *err)
{
	const char *path, *type, *target;
	struct node *n;
	long uid = 0, gid = 0, ino = 0;
	int t, r, need;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	r = json_get_string(o, where, "path", JSON_REQUIRED, &path, err);
	if (r < 0)
		return r;
	r = json_get_string(o, where, "type", JSON_REQUIRED, &type, err);
	if (r < 0)
		return r;
	t = node_type_from_string(type);
	if (t < 0)
		return load_fail(err,
				 "key '%s.type': \"%s\" is not one of char, symlink, dir, file, "
				 "missing, other",
				 where, type);
	n = snapshot_add_node(s, path);
	if (!n)
		return -ENOMEM;
	n->type = t;
	need = t == NODE_MISSING ? JSON_NULLABLE : JSON_REQUIRED;
	if ((r = json_get_mode(o, where, "mode", need, &n->mode, err)) < 0 ||
	    (r = json_get_long(o, where, "uid", 0, UINT32_MAX, need, &uid, err)) < 0 ||
	    (r = json_get_long(o, where, "gid", 0, UINT32_MAX, need, &gid, err)) < 0 ||
	    (r = json_get_dev(o, where, "rdev",
			      t == NODE_CHAR ? JSON_REQUIRED : JSON_NULLABLE | JSON_OPTIONAL,
			      &n->rdev, err)) < 0 ||
	    (r = json_get_dev(o, where, "dev", need | JSON_OPTIONAL, &n->dev, err)) < 0 ||
	    (r = json_get_string(o, where, "target",
				 t == NODE_SYMLINK ? JSON_REQUIRED : JSON_NULLABLE | JSON_OPTIONAL,
				 &target, err)) < 0)
		return r;
	if ((r = json_get_long(o, where, "ino", 0, LONG_MAX, JSON_OPTIONAL, &ino, err)) < 0)
		return r;
	n->ino = (ino_t)ino;
	n->uid = (uid_t)uid;
	n->gid = (gid_t)gid;
	if (target && !(n->target = strdup(target)))
		return -ENOMEM;
	return 0;
}

/* The optional keys of how far the search for holders went: absent, it was complete. */
static int load_holders_progress(json_object *root, struct holders_progress *p,
				 struct load_error *err)
{
	static const char *const counts[] = { "holders_processes_scanned", "holders_processes_left",
					      "holders_fds_scanned" };
	json_object *v;
	int64_t n[3] = { 0 };
	int r;

	r = json_get(root, "", "holders_complete", json_type_boolean, JSON_OPTIONAL, &v, err);
	if (r < 0)
		return r;
	p->partial = v && !json_object_get_boolean(v);
	for (size_t i = 0; i < ELEMENTSOF(counts); i++) {
		r = json_get(root, "", counts[i], json_type_int, JSON_OPTIONAL, &v, err);
		if (r < 0)
			return r;
		n[i] = v ? json_object_get_int64(v) : 0;
		if (n[i] < 0 || (i < 2 && n[i] > UINT32_MAX))
			return load_fail(err, "key '%s': out of range", counts[i]);
	}
	p->processes_scanned = (unsigned)n[0];
	p->processes_left = (unsigned)n[1];
	p->fds_scanned = (uint64_t)n[2];
	return 0;
}

/* Optional: holders_skipped_errno (a positive errno) and holders_scanner (its names). */
static int load_holders_scanner(json_object *root, struct snapshot *s, struct load_error *err)
{
	const char *name = NULL;
	json_object *v;
	int64_t e;
	int r;

	r = json_get(root, "", "holders_skipped_errno", json_type_int, JSON_OPTIONAL, &v, err);
	if (r < 0)
		return r;
	e = v ? json_object_get_int64(v) : 0;
	if (e < 0 || e > 4095)
		return load_fail(err, "key 'holders_skipped_errno': out of range");
	s->holders_skipped_errno = (int)e;
	r = json_get_string(root, "", "holders_scanner", JSON_OPTIONAL, &name, err);
	if (r < 0)
		return r;
	if (!name)
		return 0;
	r = holders_scanner_from_string(name);
	if (r < 0)
		return load_fail(err, "key 'holders_scanner': unknown value '%s'", name);
	s->holders_scanner = r;
	return 0;
}

static int load_holder(json_object *o, const char *where, struct snapshot *s,
		       struct load_error *err)
{
	struct holder h;
	const char *comm, *end = NULL;
	long pid, index, fd = -1;
	dev_t dev;
	int r, e = HOLDER_END_UNKNOWN;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	if ((r = json_get_long(o, where, "pid", 1, INT32_MAX, JSON_REQUIRED, &pid, err)) < 0 ||
	    (r = json_get_string(o, where, "comm", JSON_REQUIRED, &comm, err)) < 0 ||
	    (r = json_get_dev(o, where, "dev", JSON_REQUIRED, &dev, err)) < 0 ||
	    (r = json_get_long(o, where, "index", 0, UINT32_MAX, JSON_REQUIRED, &index, err)) < 0 ||
	    (r = json_get_long(o, where, "fd", 0, INT32_MAX, JSON_OPTIONAL, &fd, err)) < 0 ||
	    (r = json_get_string(o, where, "end", JSON_OPTIONAL, &end, err)) < 0)
		return r;
	if (end && (e = holder_end_from_string(end)) < 0)
		return load_fail(err, "key '%s.end': \"%s\" is not one of slave, master, unknown",
				 where, end);
	h = (struct holder){
		.pid = (pid_t)pid,
		.comm = (char *)comm, /* copied */
		.dev = dev,
		.index = (unsigned)index,
		.fd = (int)fd,
		.end = (enum holder_end)e,
	};
	return snapshot_add_holder(s, &h);
}

static int load_tty_session(json_object *o, const char *where, struct snapshot *s,
			    struct load_error *err)
{
	const char *leader_comm = NULL, *holder_comm = NULL;
	long index = 0, sid = 0, leader = 0, uid = 0, gid = 0, holder = 0, holder_uid = 0;
	dev_t dev = 0;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	if ((r = json_get_dev(o, where, "dev", JSON_REQUIRED, &dev, err)) < 0 ||
	    (r = json_get_long(o, where, "index", 0, UINT32_MAX, JSON_REQUIRED, &index, err)) < 0 ||
	    (r = json_get_long(o, where, "sid", 1, INT32_MAX, JSON_REQUIRED, &sid, err)) < 0 ||
	    (r = json_get_long(o, where, "leader_pid", 1, INT32_MAX, JSON_OPTIONAL | JSON_NULLABLE,
			       &leader, err)) < 0 ||
	    (r = json_get_string(o, where, "leader_comm", JSON_OPTIONAL | JSON_NULLABLE,
				 &leader_comm, err)) < 0 ||
	    (r = json_get_long(o, where, "uid", 0, UINT32_MAX, JSON_REQUIRED, &uid, err)) < 0 ||
	    (r = json_get_long(o, where, "gid", 0, UINT32_MAX, JSON_REQUIRED, &gid, err)) < 0 ||
	    (r = json_get_long(o, where, "holder_pid", 1, INT32_MAX, JSON_OPTIONAL | JSON_NULLABLE,
			       &holder, err)) < 0 ||
	    (r = json_get_string(o, where, "holder_comm", JSON_OPTIONAL | JSON_NULLABLE,
				 &holder_comm, err)) < 0 ||
	    (r = json_get_long(o, where, "holder_uid", 0, UINT32_MAX, JSON_OPTIONAL | JSON_NULLABLE,
			       &holder_uid, err)) < 0)
		return r;
	return snapshot_add_tty_session(s, &(struct tty_session){
					       .dev = dev,
					       .index = (unsigned)index,
					       .sid = (pid_t)sid,
					       .leader = (pid_t)leader,
					       .leader_comm = (char *)leader_comm, /* copied */
					       .uid = (uid_t)uid,
					       .gid = (gid_t)gid,
					       .holder = (pid_t)holder,
					       .holder_comm = (char *)holder_comm,
					       .holder_uid = (uid_t)holder_uid,
					   });
}

static int load_helper(json_object *o, const char *where, struct snapshot *s,
		       struct load_error *err)
{
	struct setuid_helper *h;
	const char *path;
	long uid;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	if (GROW(s->helpers, s->allocated_helpers, s->n_helpers + 1) < 0)
		return -ENOMEM;
	h = &s->helpers[s->n_helpers];
	*h = (struct setuid_helper){ 0 };
	if ((r = json_get_string(o, where, "path", JSON_REQUIRED, &path, err)) < 0 ||
	    (r = json_get_mode(o, where, "mode", JSON_REQUIRED, &h->mode, err)) < 0 ||
	    (r = json_get_long(o, where, "uid", 0, UINT32_MAX, JSON_REQUIRED, &uid, err)) < 0)
		return r;
	h->uid = (uid_t)uid;
	if (!(h->path = strdup(path)))
		return -ENOMEM;
	s->n_helpers++;
	return 0;
}

typedef int (*load_item_fn)(json_object *o, const char *where, struct snapshot *s,
			    struct load_error *err);

static int load_array(json_object *root, const char *key, load_item_fn fn, struct snapshot *s,
		      struct load_error *err)
{
	json_object *a;
	int r = json_get(root, "", key, json_type_array, JSON_REQUIRED, &a, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		char where[64];

		snprintf(where, sizeof(where), "%s[%zu]", key, i);
		r = fn(json_object_array_get_idx(a, i), where, s, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The optional "captured_at" (RFC 3339, UTC: what snapshot_to_json() writes) and "generator"
 * ({"name": "ptsguard", "version": ..., "git": ...}). */
static int load_captured(json_object *root, struct snapshot *s, struct load_error *err)
{
	const char *at = NULL, *version = NULL, *git = NULL;
	json_object *g = NULL;
	struct tm tm = { 0 };
	int r;

	if ((r = json_get_string(root, "", "captured_at", JSON_OPTIONAL | JSON_NULLABLE, &at,
				 err)) < 0 ||
	    (r = json_get(root, "", "generator", json_type_object, JSON_OPTIONAL, &g, err)) < 0)
		return r;
	if (at) {
		const char *end = strptime(at, "%Y-%m-%dT%H:%M:%SZ", &tm);
		time_t t;

		if (!end || *end || (t = timegm(&tm)) < 0)
			return load_fail(err,
					 "key 'captured_at': \"%s\" is not a UTC time such as "
					 "2026-12-07T23:00:00Z",
					 at);
		s->captured_at = (uint64_t)t * 1000000;
	}
	if (g &&
	    ((r = json_get_string(g, "generator", "version", JSON_REQUIRED, &version, err)) < 0 ||
	     (r = json_get_string(g, "generator", "git", JSON_OPTIONAL | JSON_NULLABLE, &git,
				  err)) < 0))
		return r;
	if ((version && !(s->captured_by = strdup(version))) ||
	    (git && !(s->captured_by_git = strdup(git))))
		return -ENOMEM;
	return 0;
}

/* The optional "tty_members": [{"name": "...", "uid": N or null}]. */
static int load_tty_members(json_object *root, struct snapshot *s, struct load_error *err)
{
	json_object *a;
	int r;

	r = json_get(root, "", "tty_members", json_type_array, JSON_OPTIONAL, &a, err);
	if (r < 0 || !a)
		return r;
	s->tty_members_known = true;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *o = json_object_array_get_idx(a, i);
		struct tty_member *m;
		const char *name;
		long uid = -1;
		char where[48];

		snprintf(where, sizeof(where), "tty_members[%zu]", i);
		if (!json_object_is_type(o, json_type_object))
			return load_fail(err, "key '%s': expected an object", where);
		if ((r = json_get_string(o, where, "name", JSON_REQUIRED, &name, err)) < 0 ||
		    (r = json_get_long(o, where, "uid", 0, UINT32_MAX, JSON_NULLABLE, &uid, err)) <
			0)
			return r;
		if (GROW(s->tty_members, s->allocated_tty_members, s->n_tty_members + 1) < 0)
			return -ENOMEM;
		m = &s->tty_members[s->n_tty_members];
		*m = (struct tty_member){ .uid_known = uid >= 0, .uid = (uid_t)uid };
		if (!(m->name = strdup(name)))
			return -ENOMEM;
		s->n_tty_members++;
	}
	return 0;
}

/* The optional "userland": {"libc": path, "glibc_minor": N or null}. */
static int load_userland(json_object *root, struct snapshot *s, struct load_error *err)
{
	const char *libc;
	json_object *o;
	long minor = 0;
	int r;

	r = json_get(root, "", "userland", json_type_object, JSON_OPTIONAL, &o, err);
	if (r < 0 || !o)
		return r;
	if ((r = json_get_string(o, "userland", "libc", JSON_REQUIRED, &libc, err)) < 0 ||
	    (r = json_get_long(o, "userland", "glibc_minor", 1, 999, JSON_NULLABLE | JSON_OPTIONAL,
			       &minor, err)) < 0)
		return r;
	s->userland.libc = strdup(libc);
	if (!s->userland.libc)
		return -ENOMEM;
	s->userland.glibc_minor = (unsigned)minor;
	return 0;
}

/* The optional "device_cgroup": a version 1 has a list or null, a version 2 none. */
static int load_device_cgroup(json_object *root, struct snapshot *s, struct load_error *err)
{
	_cleanup_(device_cgroup_freep) struct device_cgroup *d = NULL;
	const char *path, *list, *manager = NULL, *name = NULL;
	json_object *o, *c;
	long version;
	int r;

	r = json_get(root, "", "device_cgroup", json_type_object, JSON_OPTIONAL, &o, err);
	if (r < 0 || !o)
		return r;
	if ((r = json_get_long(o, "device_cgroup", "version", 1, 2, JSON_REQUIRED, &version, err)) <
		0 ||
	    (r = json_get_string(o, "device_cgroup", "path", JSON_REQUIRED, &path, err)) < 0 ||
	    (r = json_get_string(o, "device_cgroup", "list", JSON_NULLABLE | JSON_OPTIONAL, &list,
				 err)) < 0 ||
	    (r = json_get(o, "device_cgroup", "container", json_type_object,
			  JSON_NULLABLE | JSON_OPTIONAL, &c, err)) < 0)
		return r;
	if (path[0] != '/')
		return load_fail(err, "key 'device_cgroup.path': \"%s\" is not absolute", path);
	if (version == 2 && list)
		return load_fail(err, "key 'device_cgroup.list': cgroup v2 has no devices.list");
	if (c && ((r = json_get_string(c, "device_cgroup.container", "manager", JSON_REQUIRED,
				       &manager, err)) < 0 ||
		  (r = json_get_string(c, "device_cgroup.container", "name", JSON_NULLABLE, &name,
				       err)) < 0))
		return r;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->version = (unsigned)version;
	if (!(d->path = strdup(path)) || (list && !(d->list = strdup(list))) ||
	    (manager && !(d->container_manager = strdup(manager))) ||
	    (name && !(d->container_name = strdup(name))))
		return -ENOMEM;
	s->device_cgroup = TAKE_PTR(d);
	return 0;
}

int snapshot_from_json(json_object *root, struct snapshot **ret, struct load_error *err)
{
	_cleanup_(snapshot_freep) struct snapshot *s = NULL;
	const char *schema, *hostname, *release, *mountinfo, *fstab;
	json_object *kernel, *v;
	struct parse_error perr;
	char *text;
	long gid;
	int r;

	if (!json_object_is_type(root, json_type_object))
		return load_fail(err, "the top level must be a JSON object");
	s = snapshot_new();
	if (!s)
		return -ENOMEM;

	r = json_get_string(root, "", "schema", JSON_REQUIRED, &schema, err);
	if (r < 0)
		return r;
	if (strncmp(schema, SNAPSHOT_SCHEMA, strlen(SNAPSHOT_SCHEMA)) != 0)
		return load_fail(err, "key 'schema': \"%s\" is not %s", schema, SNAPSHOT_SCHEMA);
	if ((r = json_get_string(root, "", "hostname", JSON_REQUIRED, &hostname, err)) < 0 ||
	    (r = json_get(root, "", "kernel", json_type_object, JSON_REQUIRED, &kernel, err)) < 0 ||
	    (r = json_get_string(kernel, "kernel", "release", JSON_REQUIRED, &release, err)) < 0 ||
	    (r = json_get_long(kernel, "kernel", "user_namespaces_max", 0, INT32_MAX, JSON_REQUIRED,
			       &s->user_namespaces_max, err)) < 0 ||
	    (r = json_get_long(kernel, "kernel", "pty_max", 0, INT32_MAX, JSON_REQUIRED,
			       &s->pty_max, err)) < 0 ||
	    (r = json_get_long(kernel, "kernel", "pty_reserve", 0, INT32_MAX, JSON_REQUIRED,
			       &s->pty_reserve, err)) < 0 ||
	    (r = json_get_long(kernel, "kernel", "pty_nr", 0, INT32_MAX, JSON_REQUIRED, &s->pty_nr,
			       err)) < 0 ||
	    (r = json_get(kernel, "kernel", "initial_mount_ns", json_type_boolean,
			  JSON_OPTIONAL | JSON_NULLABLE, &v, err)) < 0)
		return r;
	s->initial_mount_ns = v ? json_object_get_boolean(v) : true;
	/* null, not absent: the probe could not tell */
	s->initial_mount_ns_unknown =
	    !v && json_object_object_get_ex(kernel, "initial_mount_ns", NULL);
	if (s->initial_mount_ns_unknown)
		s->initial_mount_ns = false;
	if ((r = json_get_long(root, "", "tty_gid", 0, UINT32_MAX, JSON_REQUIRED, &gid, err)) < 0 ||
	    (r = json_get_string(root, "", "mountinfo", JSON_REQUIRED, &mountinfo, err)) < 0 ||
	    (r = json_get_string(root, "", "fstab", JSON_NULLABLE, &fstab, err)) < 0)
		return r;
	s->tty_gid = (gid_t)gid;
	if (!(s->hostname = strdup(hostname)) || !(s->kernel_release = strdup(release)))
		return -ENOMEM;
	if (fstab && !(s->fstab = strdup(fstab)))
		return -ENOMEM;
	if ((r = load_idmap(root, "uid_map", &s->uid_map, err)) < 0 ||
	    (r = load_idmap(root, "gid_map", &s->gid_map, err)) < 0)
		return r;

	text = strdup(mountinfo);
	if (!text)
		return -ENOMEM;
	r = snapshot_set_mountinfo(s, text, strlen(text), &perr);
	if (r == -EINVAL) {
		if (perr.line)
			return load_fail(err, "key 'mountinfo': line %u: %s", perr.line,
					 perr.message);
		return load_fail(err, "key 'mountinfo': %s", perr.message);
	}
	if (r < 0)
		return r;

	if ((r = load_array(root, "nodes", load_node, s, err)) < 0 ||
	    (r = load_array(root, "holders", load_holder, s, err)) < 0 ||
	    (r = load_array(root, "setuid_helpers", load_helper, s, err)) < 0 ||
	    (r = json_get(root, "", "tty_sessions", json_type_array, JSON_OPTIONAL, &v, err)) < 0 ||
	    (v && (r = load_array(root, "tty_sessions", load_tty_session, s, err)) < 0) ||
	    (r = json_get(root, "", "holders_skipped", json_type_int, JSON_OPTIONAL, &v, err)) < 0)
		return r;
	if (v)
		s->holders_skipped = (unsigned)json_object_get_int64(v);
	if ((r = json_get(root, "", "holders_scanned", json_type_boolean, JSON_OPTIONAL, &v, err)) <
	    0)
		return r;
	s->holders_scanned = v ? json_object_get_boolean(v) : s->n_holders > 0;
	r = load_holders_progress(root, &s->holders_progress, err);
	if (r < 0)
		return r;
	r = load_holders_scanner(root, s, err);
	if (r < 0)
		return r;
	if ((r = json_get(root, "", "initramfs", json_type_object, JSON_OPTIONAL, &v, err)) < 0 ||
	    (v && (r = initramfs_record_from_json(v, "initramfs", &s->initramfs, err)) < 0) ||
	    (r = json_get(root, "", "last_healthy", json_type_object, JSON_OPTIONAL, &v, err)) <
		0 ||
	    (v &&
	     (r = devpts_seen_healthy_from_json(v, "last_healthy", &s->last_healthy, err)) < 0) ||
	    (r = load_namespace(root, s, err)) < 0)
		return r;
	if ((r = json_get(root, "", "probe", json_type_object, JSON_OPTIONAL, &v, err)) < 0 ||
	    (v && (r = alloc_probe_from_json(v, "probe", &s->probe, err)) < 0) ||
	    (r = load_device_cgroup(root, s, err)) < 0 || (r = load_userland(root, s, err)) < 0 ||
	    (r = load_tty_members(root, s, err)) < 0 || (r = load_captured(root, s, err)) < 0)
		return r;

	*ret = TAKE_PTR(s);
	return 0;
}

int snapshot_parse(const char *text, size_t size, struct snapshot **ret, struct load_error *err)
{
	json_tokener *tok;
	json_object *root;
	enum json_tokener_error jerr;
	size_t consumed;
	int r;

	if (size == 0)
		return load_fail(err, "empty file, expected a JSON snapshot");
	if (size > INT32_MAX)
		return load_fail(err, "file too large");
	if (memchr(text, 0, size))
		return load_fail(err, "NUL byte at offset %zu: not a JSON snapshot",
				 (size_t)((const char *)memchr(text, 0, size) - text));
	tok = json_tokener_new_ex(64);
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, text, (int)size);
	jerr = json_tokener_get_error(tok);
	consumed = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);

	if (!root || jerr != json_tokener_success) {
		unsigned line = 1, col = 1;

		for (size_t i = 0; i < consumed && i < size; i++) {
			if (text[i] == '\n') {
				line++;
				col = 1;
			} else
				col++;
		}
		json_object_put(root);
		if (jerr == json_tokener_continue)
			return load_fail(err, "line %u: unexpected end of file (truncated JSON)",
					 line);
		return load_fail(err, "line %u, column %u: %s", line, col,
				 json_tokener_error_desc(jerr));
	}
	for (size_t i = consumed; i < size; i++)
		if (text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r') {
			json_object_put(root);
			return load_fail(err, "trailing data after the JSON object at offset %zu",
					 i);
		}
	r = snapshot_from_json(root, ret, err);
	json_object_put(root);
	return r;
}
