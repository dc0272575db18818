/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which container a process belongs to, told from the host without asking any runtime: its
 * cgroup path (/proc/PID/cgroup, cgroup v2, v1 or both), and the machine name systemd-machined
 * registered for its scope (/run/systemd/machines/unit:<scope>). What each runtime's path looks
 * like is listed in container.c.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* At most this much of /proc/PID/cgroup is read: one line per hierarchy. */
#define CGROUP_FILE_SIZE_MAX (64u << 10)

struct container {
	/* "docker", "podman", "containerd", "crio", "lxc", "nspawn", "systemd" or "unknown";
	 * NULL when nothing matched (then id and name are NULL too). */
	const char *manager;
	char *id;   /* the runtime's container id (64 hex digits), or NULL */
	char *name; /* a name: the LXC or machine name, the systemd unit, the pod; or NULL */
	/* The systemd unit (a .scope or .service) the match was found in, for machined. */
	char *unit;
};

void container_done(struct container *c);

/* The container the text of a /proc/PID/cgroup file names: 1 and *ret filled when a path
 * matches, 0 (and *ret empty) when none does, -ENOMEM. */
int container_from_cgroup(const char *text, struct container *ret);

/* Unescape systemd's \xNN escapes of a unit name in place ("foo\x2dbar" -> "foo-bar"). */
void unit_name_unescape(char *s);

/* The container of process pid under proc ("/proc"); machines is machined's directory
 * ("/run/systemd/machines", NULL not to look): a machine registered for the scope found names
 * it, and makes an unmatched scope an nspawn machine. 1, 0 (nothing matched) or -errno (the
 * process is gone: -ENOENT or -ESRCH). */
int container_probe(const char *proc, pid_t pid, const char *machines, struct container *ret);
