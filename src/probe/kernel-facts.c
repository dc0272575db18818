/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "probe/kernel-facts.h"
#include "probe/namespace.h"
#include "util/fileio.h"
#include "util/string-util.h"

/* Is pid a kernel thread (PF_KTHREAD in the flags, field 9 of stat)? Kernel threads share
 * the initial namespaces; /proc shows them only when it belongs to the initial pid namespace.
 * 1, 0 (a process, or none: for good when /proc is another pid namespace's, which has no kernel
 * threads), or -errno when it could not be told (try again at the next audit). */
static int is_kernel_thread(const char *pid)
{
	_cleanup_free_ char *text = NULL, *path = NULL;
	const char *p;
	unsigned long flags;
	int r;

	if (asprintf(&path, "/proc/%s/stat", pid) < 0)
		return -ENOMEM;
	r = read_full_file(path, 4096, &text, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
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
	/* kthreadd's namespace, once found; or that there is no kthreadd to find */
	static struct stat initial;
	static bool no_kthreadd;
	struct stat self, kthread;
	int r;

	s->initial_mount_ns_unknown = false;
	if (ns && !ns->own)
		self = (struct stat){ .st_dev = ns->mntns_dev, .st_ino = ns->mntns };
	else if (stat("/proc/self/ns/mnt", &self) < 0) {
		s->initial_mount_ns = true; /* no namespaces at all */
		return;
	}
	/* A kernel thread never changes namespace: once found, kthreadd's is known for good; and
	 * a /proc of another pid namespace never shows one (not looked for again each audit). */
	if (!initial.st_ino) {
		r = no_kthreadd ? 0 : is_kernel_thread("2");
		if (r == 0)
			no_kthreadd = true;
		if (r <= 0 || stat("/proc/2/ns/mnt", &kthread) < 0) {
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

/* The sysctls of ours read again at every audit (of every namespace): each file is opened once
 * and kept, each read one pread(2). -1 until opened. */
enum { SYSCTL_PTY_MAX, SYSCTL_PTY_RESERVE, SYSCTL_PTY_NR, SYSCTL_USERNS_MAX, N_SYSCTLS };
static const char *const sysctl_paths[N_SYSCTLS] = {
	[SYSCTL_PTY_MAX] = "/proc/sys/kernel/pty/max",
	[SYSCTL_PTY_RESERVE] = "/proc/sys/kernel/pty/reserve",
	[SYSCTL_PTY_NR] = "/proc/sys/kernel/pty/nr",
	[SYSCTL_USERNS_MAX] = "/proc/sys/user/max_user_namespaces",
};
static int sysctl_fds[N_SYSCTLS] = { -1, -1, -1, -1 };

static int read_sysctl(unsigned which, long *ret)
{
	int *fd = &sysctl_fds[which];

	if (*fd < 0)
		*fd = open(sysctl_paths[which], O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (*fd < 0)
		return -errno;
	return read_long_fd(*fd, ret);
}

long probe_pty_nr(void)
{
	long nr;

	if (read_sysctl(SYSCTL_PTY_NR, &nr) < 0 || nr < 0)
		return -1;
	return nr;
}

int probe_kernel_facts_from_snapshot(const struct snapshot *s, struct probe_kernel_facts *ret)
{
	*ret = (struct probe_kernel_facts){
		.hostname = strdup_or_null(s->hostname),
		.kernel_release = strdup_or_null(s->kernel_release),
		.pty_max = s->pty_max,
		.pty_reserve = s->pty_reserve,
		.pty_nr = s->pty_nr,
		.user_namespaces_max = s->user_namespaces_max,
	};
	if ((s->hostname && !ret->hostname) || (s->kernel_release && !ret->kernel_release)) {
		probe_kernel_facts_done(ret);
		return -ENOMEM;
	}
	return 0;
}

void probe_kernel_facts_done(struct probe_kernel_facts *k)
{
	free(k->hostname);
	free(k->kernel_release);
	*k = (struct probe_kernel_facts){ 0 };
}

/* The pty sysctls are the kernel's, one set for every namespace (kernel.pty.* are plain globals
 * of devpts, shared by all its instances, whatever instance a pty comes from): always read from
 * the caller's /proc/sys, never from a namespace's own (which may be anything); given, when the
 * caller read them once for many namespaces. user.max_user_namespaces is per user namespace,
 * but read as ours, the caller's, as it always was. */
int probe_kernel(const struct probe_kernel_facts *given, const struct namespace_target *ns,
		 struct snapshot *s)
{
	if (given) {
		s->pty_max = given->pty_max;
		s->pty_reserve = given->pty_reserve;
		s->pty_nr = given->pty_nr;
		s->user_namespaces_max = given->user_namespaces_max;
	} else {
		(void)read_sysctl(SYSCTL_PTY_MAX, &s->pty_max);
		(void)read_sysctl(SYSCTL_PTY_RESERVE, &s->pty_reserve);
		(void)read_sysctl(SYSCTL_PTY_NR, &s->pty_nr);
		if (read_sysctl(SYSCTL_USERNS_MAX, &s->user_namespaces_max) < 0)
			s->user_namespaces_max = 0;
	}
	probe_initial_mount_ns(ns, s);
	return probe_idmaps(ns, s);
}
