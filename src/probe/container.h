/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which container a process belongs to, told from the host without asking any runtime: its
 * cgroup path (/proc/PID/cgroup, cgroup v2, v1 or both), and the machine name systemd-machined
 * registered for its scope (/run/systemd/machines/unit:<scope>). What each runtime's path looks
 * like is listed in container.c. Only names root chose count: below a cgroup directory delegated
 * to another user (who may name its children anything) nothing is taken for a runtime's.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Where systemd-machined registers machines: the machines_dir of container_probe(). */
#define MACHINES_DIR "/run/systemd/machines"

struct container {
	/* "docker", "podman", "containerd", "crio", "lxc", "nspawn", "systemd", "unknown", or
	 * "delegated" (below a directory another user owns, no runtime above it; name: that
	 * directory, e.g. "user@1000.service"); NULL when nothing matched (then id and name are
	 * NULL too). */
	const char *manager;
	/* the runtime's container id (64 hex digits; a containerd task's own id), or NULL */
	char *id;
	char *name; /* a name: the LXC or machine name, the systemd unit; or NULL */
	/* The Kubernetes pod the container is in (its uid, a lowercase UUID with dashes, as the
	 * API server and kube-state-metrics write it), or NULL. */
	char *pod_uid;
	/* The systemd unit (a .scope or .service) the match was found in, for machined. */
	char *unit;
};

void container_done(struct container *c);

/* One component of a cgroup path (not NUL-terminated). */
struct cgroup_component {
	const char *s;
	size_t n;
};

/* Who chose the names of a cgroup path's components, in the hierarchy of controllers (empty:
 * cgroup v2): returns k, the number of leading components whose parent directory root owns
 * (n: all), with *delegated set when component k-1 is a directory delegated to another user
 * (so the names below it are that user's); negative when the hierarchy cannot be checked (the
 * line is then not used). */
typedef int (*cgroup_trust_fn)(void *userdata, const struct cgroup_component *controllers,
			       const struct cgroup_component *comps, size_t n, bool *delegated);

/* Whether containerd runs a task id in its namespace ns (a cgroup path /<ns>/<id>, what ctr and
 * containerd's own clients give a task under cgroupfs, names a task only when containerd has
 * one by those names). */
typedef bool (*containerd_task_fn)(void *userdata, const struct cgroup_component *ns,
				   const struct cgroup_component *id);

/* What the live system says, for the two functions below. */
struct cgroup_sources {
	/* containerd's task state directory; -EBADF: not opened yet (containerd_task_fs() opens
	 * it, the caller closes it); another negative value: none */
	int tasks_fd;
};

/* The root of our mount of the hierarchy of controllers (as /proc/PID/cgroup's second field
 * names them; empty: the unified hierarchy), beneath /sys/fs/cgroup and checked to be a cgroup
 * file system of its version: a descriptor kept for the process's life (not the caller's to
 * close), or -errno. */
int cgroup_hierarchy_root(const struct cgroup_component *controllers);

/* The same told from the cgroup file systems under /sys/fs/cgroup (userdata unused). */
int cgroup_trust_fs(void *userdata, const struct cgroup_component *controllers,
		    const struct cgroup_component *comps, size_t n, bool *delegated);

/* The container the text of a /proc/PID/cgroup file names, each path trusted as far as trust
 * says (NULL: whole): 1 and *ret filled when a path matches, 0 (and *ret empty) when none does,
 * -ENOMEM. A file where a hierarchy appears twice was forged with a newline in a cgroup's name
 * (printed raw; newer kernels refuse such names), which only one who may create cgroups,
 * a delegated user, can make: "delegated". */
int container_from_cgroup(const char *text, cgroup_trust_fn trust, containerd_task_fn task,
			  void *userdata, struct container *ret);

/* The same told from containerd's state directory (userdata: a struct cgroup_sources *): a
 * directory <ns>/<id> root owns under it. */
bool containerd_task_fs(void *userdata, const struct cgroup_component *ns,
			const struct cgroup_component *id);

/* containerd's default state directory of its runc shims' tasks. */
#define CONTAINERD_TASKS_DIR "/run/containerd/io.containerd.runtime.v2.task"

/* Unescape systemd's \xNN escapes of a unit name in place ("foo\x2dbar" -> "foo-bar"). */
void unit_name_unescape(char *s);

/* The container of a process, from the text of its /proc/PID/cgroup (namespace_target's, read
 * when the target was opened); machines is machined's directory ("/run/systemd/machines", NULL
 * not to look at the host's registries, machined's or containerd's): a machine registered for
 * the scope found names it, and makes an unmatched scope an nspawn machine; containerd's tasks
 * (CONTAINERD_TASKS_DIR) confirm a /<ns>/<id> path. 1, 0 (nothing matched) or -ENOMEM. */
int container_probe(const char *cgroup, const char *machines, struct container *ret);
