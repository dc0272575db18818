/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cgroup paths the runtimes give a container's processes, as they appear in
 * /proc/PID/cgroup ("0::<path>" on cgroup v2, "N:<controllers>:<path>" on v1, both on a hybrid
 * host):
 *
 *   docker      .../docker-<id>.scope (systemd driver), /docker/<id> (cgroupfs driver)
 *   podman      .../libpod-<id>.scope[/container], /libpod_parent/libpod-<id> (cgroupfs);
 *               libpod-conmon-<id>.scope is conmon, on the host's side
 *   containerd  .../cri-containerd-<id>.scope (CRI, systemd driver), /containerd/<id>;
 *               /<namespace>/<id> (ctr and other clients under cgroupfs: containerd's default
 *               spec), counted only when containerd's state has that task (containerd_task_fs)
 *   CRI-O       .../crio-<id>.scope, /.../pod<uid>/crio-<id>; crio-conmon-<id> is conmon
 *   kubernetes  kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice/<runtime>,
 *               /kubepods/<qos>/pod<uid>/<id> (cgroupfs: the runtime is not named); the
 *               guaranteed class has no <qos> level. The pod's uid is a UUID (its dashes
 *               underscores in the systemd driver's slices), the container's cgroup a child
 *               of the pod's
 *   LXC         /lxc.payload.<name>[/...] (LXC 4 and later), /lxc/<name>; lxc.monitor.<name> is
 *               the monitor, on the host's side
 *   nspawn      /machine.slice/machine-<name>.scope[/payload/...], the name escaped by systemd
 *               (machine-foo\x2dbar.scope is machine foo-bar)
 *   systemd     .../<unit>.service: a service with a mount namespace of its own
 *               (PrivateDevices=, ProtectSystem=, ...), when no runtime matched
 *
 * Whoever may create directories in a cgroup names its children: root, or the user it was
 * delegated to (a user's systemd instance, user@1000.service, is that user's, and so is every
 * rootless container below it). So a path counts only down to the first directory that is not
 * root's (cgroup_trust_fs(): its name root chose, its children's it did not), and the outermost
 * runtime's component there wins: a container cannot make itself another by the names of the
 * cgroups it makes (docker inside an nspawn machine, or in a kind node, is the machine's or the
 * node's). With no runtime above it, a path cut by a delegation is "delegated", named by the
 * delegated directory. A systemd service counts only when nothing else matched in any
 * hierarchy.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "probe/container.h"
#include "util/fileio.h"
#include "util/string-util.h"

#define CONTAINER_ID_LEN 64
#define CGROUP_DEPTH_MAX 64
#define MACHINE_FILE_MAX (16u << 10)
/* More lines than hierarchies a kernel has (v2, the v1 controllers, named ones): forged. */
#define CGROUP_HIERARCHIES_MAX 64

void container_done(struct container *c)
{
	free(c->id);
	free(c->name);
	free(c->unit);
	free(c->pod_uid);
	*c = (struct container){ 0 };
}

static bool is_hex_id(const char *s, size_t n)
{
	if (n != CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);

	return n >= p && memcmp(s, prefix, p) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t p = strlen(suffix);

	return n >= p && memcmp(s + n - p, suffix, p) == 0;
}

static bool same_component(const struct cgroup_component *a, const struct cgroup_component *b)
{
	return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
}

void unit_name_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] == 'x' && isxdigit((unsigned char)r[2]) &&
		    isxdigit((unsigned char)r[3])) {
			char hex[3] = { r[2], r[3], 0 };
			char c = (char)strtoul(hex, NULL, 16);

			if (c != 0) {
				*w++ = c;
				r += 3;
				continue;
			}
		}
		*w++ = *r;
	}
	*w = 0;
}

/* "<prefix><64 hex>[.scope]" -> the id, or NULL. */
static const char *match_id(const struct cgroup_component *c, const char *prefix, bool scope_only)
{
	size_t p = strlen(prefix), n = c->n;

	if (!has_prefix(c->s, n, prefix))
		return NULL;
	if (has_suffix(c->s, n, ".scope"))
		n -= strlen(".scope");
	else if (scope_only)
		return NULL;
	return is_hex_id(c->s + p, n - p) ? c->s + p : NULL;
}

/* What a path says, the best of a file's paths winning. */
enum rank {
	RANK_NONE,
	RANK_SERVICE,	/* a systemd service */
	RANK_DELEGATED, /* cut by a delegation, no runtime above it */
	RANK_RUNTIME,
};

struct match {
	enum rank rank;
	const char *manager;
	struct cgroup_component id, name, unit, pod;
	bool task; /* a containerd task's (match_task()) */
};

/* What matching a file's paths asks the live system (or a test), and its last answer about a
 * containerd task (each hierarchy of a v1 host has the same path). */
struct oracle {
	cgroup_trust_fn trust;
	containerd_task_fn task;
	void *userdata;
	struct cgroup_component asked_ns, asked_id;
	bool asked, answer;
};

static bool is_named(const struct cgroup_component *c, const char *name)
{
	return c->n == strlen(name) && memcmp(c->s, name, c->n) == 0;
}

/* A pod's uid as kubelet names its cgroup: a UUID in lowercase, dash the separator ('-', or
 * '_' in a systemd slice's name, where '-' is the slice hierarchy's). */
static bool is_pod_uid(const char *s, size_t n, char dash)
{
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != dash)
				return false;
		} else if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	}
	return true;
}

/* Component k as a pod's cgroup, where kubelet makes them: pod<uid> in kubepods[/<qos>]
 * (cgroupfs driver); kubepods[-<qos>]-pod<uid>.slice in kubepods.slice[/kubepods-<qos>.slice]
 * (systemd driver). The uid's first character, or NULL. */
static const char *pod_component(const struct cgroup_component *comps, size_t k)
{
	static const char *const classes[] = { "burstable", "besteffort" };
	const struct cgroup_component *c = &comps[k];
	char prefix[32], parent[32];

	if (has_prefix(c->s, c->n, "pod")) {
		if (!is_pod_uid(c->s + 3, c->n - 3, '-') || k < 1)
			return NULL;
		if (is_named(&comps[k - 1], "kubepods"))
			return c->s + 3;
		for (size_t q = 0; q < ELEMENTSOF(classes); q++)
			if (k >= 2 && is_named(&comps[k - 1], classes[q]) &&
			    is_named(&comps[k - 2], "kubepods"))
				return c->s + 3;
		return NULL;
	}
	if (!has_prefix(c->s, c->n, "kubepods-") || !has_suffix(c->s, c->n, ".slice") ||
	    c->n < strlen("kubepods-pod.slice") + 36 || k < 1)
		return NULL;
	if (!is_pod_uid(c->s + c->n - strlen(".slice") - 36, 36, '_'))
		return NULL;
	if (c->n == strlen("kubepods-pod.slice") + 36 && has_prefix(c->s, c->n, "kubepods-pod"))
		return is_named(&comps[k - 1], "kubepods.slice") ? c->s + strlen("kubepods-pod")
								 : NULL;
	for (size_t q = 0; q < ELEMENTSOF(classes); q++) {
		snprintf(prefix, sizeof(prefix), "kubepods-%s-pod", classes[q]);
		snprintf(parent, sizeof(parent), "kubepods-%s.slice", classes[q]);
		if (c->n == strlen(prefix) + 36 + strlen(".slice") &&
		    has_prefix(c->s, c->n, prefix) && k >= 2 && is_named(&comps[k - 1], parent) &&
		    is_named(&comps[k - 2], "kubepods.slice"))
			return c->s + strlen(prefix);
	}
	return NULL;
}

/* containerd's rule for namespace and container names: letters and digits, single '.', '_' or
 * '-' between them, at most 76 characters. */
static bool is_containerd_name(const struct cgroup_component *c)
{
	bool sep = true;

	if (c->n == 0 || c->n > 76)
		return false;
	for (size_t i = 0; i < c->n; i++) {
		char ch = c->s[i];

		if (isalnum((unsigned char)ch))
			sep = false;
		else if ((ch == '.' || ch == '_' || ch == '-') && !sep)
			sep = true;
		else
			return false;
	}
	return !sep;
}

/* /<namespace>/<id>[/...]: a task of containerd's, when containerd says it has one. */
static bool match_task(const struct cgroup_component *comps, size_t n, struct oracle *o,
		       struct match *m)
{
	if (!o->task || n < 2 || !is_containerd_name(&comps[0]) || !is_containerd_name(&comps[1]))
		return false;
	if (!o->asked || !same_component(&o->asked_ns, &comps[0]) ||
	    !same_component(&o->asked_id, &comps[1])) {
		o->asked = true;
		o->asked_ns = comps[0];
		o->asked_id = comps[1];
		o->answer = o->task(o->userdata, &comps[0], &comps[1]);
	}
	if (!o->answer)
		return false;
	m->rank = RANK_RUNTIME;
	m->manager = "containerd";
	m->id = comps[1];
	m->task = true;
	return true;
}

/* Component i of path, of n (the outermost first order is the caller's). */
static void match_component(const struct cgroup_component *comps, size_t n, size_t i,
			    struct match *m)
{
	const struct cgroup_component *c = &comps[i];
	const struct cgroup_component *outer = i > 0 ? &comps[i - 1] : NULL;
	const char *id;

#define RUNTIME(mgr, idp)                                                                          \
	do {                                                                                       \
		m->rank = RANK_RUNTIME;                                                            \
		m->manager = (mgr);                                                                \
		m->id = (struct cgroup_component){ (idp), CONTAINER_ID_LEN };                      \
		if (has_suffix(c->s, c->n, ".scope"))                                              \
			m->unit = *c;                                                              \
		return;                                                                            \
	} while (0)

	(void)n;
	if (has_prefix(c->s, c->n, "libpod-conmon-") || has_prefix(c->s, c->n, "crio-conmon-") ||
	    has_prefix(c->s, c->n, "lxc.monitor."))
		return;
	if ((id = match_id(c, "docker-", true)))
		RUNTIME("docker", id);
	if ((id = match_id(c, "libpod-", false)))
		RUNTIME("podman", id);
	if ((id = match_id(c, "cri-containerd-", true)))
		RUNTIME("containerd", id);
	if ((id = match_id(c, "crio-", false)))
		RUNTIME("crio", id);
	if (outer && outer->n == 6 && memcmp(outer->s, "docker", 6) == 0 && is_hex_id(c->s, c->n))
		RUNTIME("docker", c->s);
	if (outer && outer->n == 10 && memcmp(outer->s, "containerd", 10) == 0) {
		m->rank = RANK_RUNTIME;
		m->manager = "containerd";
		m->id = *c;
		return;
	}
	if (has_prefix(c->s, c->n, "lxc.payload.") && c->n > strlen("lxc.payload.")) {
		m->rank = RANK_RUNTIME;
		m->manager = "lxc";
		m->name = (struct cgroup_component){ c->s + strlen("lxc.payload."),
						     c->n - strlen("lxc.payload.") };
		return;
	}
	if (outer && outer->n == 3 && memcmp(outer->s, "lxc", 3) == 0 && i == 1) {
		m->rank = RANK_RUNTIME;
		m->manager = "lxc";
		m->name = *c;
		return;
	}
	if (has_prefix(c->s, c->n, "machine-") && has_suffix(c->s, c->n, ".scope") &&
	    c->n > strlen("machine-.scope")) {
		m->rank = RANK_RUNTIME;
		m->manager = "nspawn";
		m->name = (struct cgroup_component){ c->s + strlen("machine-"),
						     c->n - strlen("machine-.scope") };
		m->unit = *c;
		return;
	}
	/* cgroupfs kubepods: /kubepods[/<qos>]/pod<uid>/<id>, the runtime unnamed. */
	if (outer && is_hex_id(c->s, c->n) && has_prefix(outer->s, outer->n, "pod") &&
	    pod_component(comps, i - 1))
		RUNTIME("unknown", c->s);
#undef RUNTIME
}

static void match_path(const char *path, size_t len, const struct cgroup_component *controllers,
		       struct oracle *o, struct match *m)
{
	struct cgroup_component comps[CGROUP_DEPTH_MAX];
	bool delegated = false;
	size_t n = 0;

	*m = (struct match){ 0 };
	for (size_t i = 0; i < len;) {
		size_t j = i;

		while (j < len && path[j] != '/')
			j++;
		if (j > i && n < ELEMENTSOF(comps))
			comps[n++] = (struct cgroup_component){ path + i, j - i };
		i = j + 1;
	}
	if (o->trust) {
		int r = o->trust(o->userdata, controllers, comps, n, &delegated);

		if (r < 0)
			return;
		if ((size_t)r < n)
			n = (size_t)r;
	}
	/* The outermost runtime (a containerd task's is at the top); its pod is its parent. */
	if (match_task(comps, n, o, m))
		return;
	for (size_t i = 0; i < n; i++) {
		match_component(comps, n, i, m);
		if (m->rank == RANK_RUNTIME) {
			const char *uid = i > 0 ? pod_component(comps, i - 1) : NULL;

			if (uid)
				m->pod = (struct cgroup_component){ uid, 36 };
			return;
		}
	}
	if (delegated) {
		m->rank = RANK_DELEGATED;
		m->manager = "delegated";
		if (n > 0)
			m->name = comps[n - 1];
		return;
	}
	/* No runtime: the innermost service, else the innermost scope (for machined). */
	for (size_t i = n; i-- > 0;)
		if (has_suffix(comps[i].s, comps[i].n, ".service")) {
			m->rank = RANK_SERVICE;
			m->manager = "systemd";
			m->name = m->unit = comps[i];
			return;
		}
	for (size_t i = n; i-- > 0;)
		if (has_suffix(comps[i].s, comps[i].n, ".scope")) {
			m->unit = comps[i];
			return;
		}
}

/* Whether no further path can change the best one so far (best, from best_path), so that path
 * needs no walk of its hierarchy: a v1 host lists the same path in a dozen hierarchies, each
 * one's directories a dozen system calls to check. Only a runtime with a unit is final: a path
 * replaces the best only with a higher rank, or with a unit at the same rank. A runtime
 * without one (docker's cgroupfs driver, /docker/<id>) is final for the same path again: its
 * components are the same names, matched alike (match_component() looks at a component and
 * those above it), so the outermost runtime in any trusted part of it is the same component
 * or none; not when it was a containerd task's, where a path trusted for one component less
 * is matched by its first alone. */
static bool settled(const struct match *best, const struct cgroup_component *best_path,
		    const struct cgroup_component *path)
{
	if (best->rank != RANK_RUNTIME)
		return false;
	return best->unit.s || (!best->task && same_component(best_path, path));
}

static char *component_dup(const struct cgroup_component *c, bool unescape)
{
	char *s;

	if (!c->s)
		return NULL;
	s = strndup(c->s, c->n);
	if (s && unescape)
		unit_name_unescape(s);
	return s;
}

int container_from_cgroup(const char *text, cgroup_trust_fn trust, containerd_task_fn task,
			  void *userdata, struct container *ret)
{
	struct oracle o = { .trust = trust, .task = task, .userdata = userdata };
	/* Each line's hierarchy number and controllers, to find one listed twice. */
	struct cgroup_component seen[CGROUP_HIERARCHIES_MAX][2];
	struct match best = { 0 }, m;
	struct cgroup_component best_path = { 0 }, path;
	size_t n_seen = 0;

	*ret = (struct container){ 0 };
	for (const char *line = text; line && *line;) {
		const char *end = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t)(end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;

		/* The hierarchy's number, then its controllers, then the path. */
		if (c2 && c1 > line && strspn(line, "0123456789") == (size_t)(c1 - line)) {
			struct cgroup_component h = { line, (size_t)(c1 - line) },
						ctl = { c1 + 1, (size_t)(c2 - c1 - 1) };

			for (size_t i = 0; i < n_seen; i++)
				if (same_component(&seen[i][0], &h) ||
				    same_component(&seen[i][1], &ctl))
					goto forged;
			if (n_seen == ELEMENTSOF(seen))
				goto forged;
			seen[n_seen][0] = h;
			seen[n_seen++][1] = ctl;
			path = (struct cgroup_component){ c2 + 1, (size_t)(end - c2 - 1) };
			if (!settled(&best, &best_path, &path)) {
				match_path(path.s, path.n, &ctl, &o, &m);
				if (m.rank > best.rank ||
				    (!best.unit.s && m.unit.s && m.rank == best.rank)) {
					best = m;
					best_path = path;
				}
			}
		}
		line = *end ? end + 1 : NULL;
	}
	if (best.unit.s && !(ret->unit = component_dup(&best.unit, false)))
		goto oom;
	if (best.rank == RANK_NONE)
		return 0;
	ret->manager = best.manager;
	if (best.id.s && !(ret->id = component_dup(&best.id, false)))
		goto oom;
	if (best.name.s) {
		/* Machine names and unit names are escaped by systemd; LXC names are not. */
		ret->name = component_dup(&best.name, !streq(best.manager, "lxc"));
		if (!ret->name)
			goto oom;
	}
	if (best.pod.s) {
		if (!(ret->pod_uid = strndup(best.pod.s, best.pod.n)))
			goto oom;
		/* The systemd driver writes the uid's dashes as underscores. */
		for (char *p = ret->pod_uid; *p; p++)
			if (*p == '_')
				*p = '-';
	}
	return 1;
forged:
	container_done(ret);
	ret->manager = "delegated";
	return 1;
oom:
	container_done(ret);
	return -ENOMEM;
}
