/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/privileges.h"
#include "util/macro.h"

#define CAP(c) (UINT64_C(1) << (c))

static const struct {
	unsigned cap;
	const char *name;
} cap_names[] = {
	{ CAP_CHOWN, "CAP_CHOWN" },
	{ CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE" },
	{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH" },
	{ CAP_FOWNER, "CAP_FOWNER" },
	{ CAP_KILL, "CAP_KILL" },
	{ CAP_SETGID, "CAP_SETGID" },
	{ CAP_SETUID, "CAP_SETUID" },
	{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
	{ CAP_MKNOD, "CAP_MKNOD" },
};

/* CapabilityBoundingSet= and AmbientCapabilities= of units/ptsguard.service.in: the daemon
 * suite's `no-systemd` case compares the two. */
const uint64_t privileges_service_set =
    CAP(CAP_SYS_ADMIN) | CAP(CAP_MKNOD) | CAP(CAP_CHOWN) | CAP(CAP_FOWNER) | CAP(CAP_SYS_PTRACE) |
    CAP(CAP_DAC_READ_SEARCH) | CAP(CAP_SETUID) | CAP(CAP_SETGID);

uint64_t privileges_needed(const struct config *c)
{
	uint64_t caps = CAP(CAP_SYS_PTRACE) | CAP(CAP_DAC_READ_SEARCH);

	/* The allocation probe's child takes another user's effective uid and gid. It keeps the
	 * daemon's real uid, so the daemon kills it past its deadline without CAP_KILL. */
	if (c->probe_enabled)
		caps |= CAP(CAP_SETUID) | CAP(CAP_SETGID);

	/* listmount(2) of another mount namespace answers ENOENT, as for one that is gone, to a
	 * caller without CAP_SYS_ADMIN over it; NS_MNT_GET_NEXT answers EPERM. */
	if (c->namespaces_audit == NAMESPACES_AUDIT_ALL)
		caps |= CAP(CAP_SYS_ADMIN);

	if (c->repair_policy == REPAIR_POLICY_SAFE) {
		caps |= CAP(CAP_SYS_ADMIN) | CAP(CAP_CHOWN) | CAP(CAP_FOWNER) | CAP(CAP_SETUID) |
			CAP(CAP_SETGID);
		if (!c->ptmx_symlink)
			caps |= CAP(CAP_MKNOD);
	}
	return caps;
}

int privileges_limit(uint64_t keep, uint64_t *ret_dropped, uint64_t *ret_missing)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	uint64_t permitted, want;

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	permitted = (uint64_t)d[0].permitted | ((uint64_t)d[1].permitted << 32);
	want = permitted & keep;
	*ret_missing = keep & ~permitted;
	*ret_dropped = permitted & ~keep;
	/* Only the effective set: the permitted one stays, so that a reload to Policy=safe can
	 * raise what repair needs again, as `systemctl reload` is documented to do. */
	for (int i = 0; i < 2; i++) {
		d[i].effective = (uint32_t)(want >> (32 * i));
		d[i].inheritable = 0;
	}
	h = (struct __user_cap_header_struct){ .version = _LINUX_CAPABILITY_VERSION_3 };
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	/* Ambient capabilities would survive an exec (the daemon runs none; cheap to be sure). */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

static int caps_get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capget, &h, d) < 0 ? -errno : 0;
}

static int caps_set(uint64_t permitted, uint64_t effective)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	for (int i = 0; i < 2; i++) {
		d[i].permitted = (uint32_t)(permitted >> (32 * i));
		d[i].effective = (uint32_t)(effective >> (32 * i));
	}
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int privileges_become_user(const char *name, uid_t *ret_uid, gid_t *ret_gid)
{
	struct __user_cap_data_struct d[2] = { 0 };
	uint64_t permitted;
	struct passwd *pw;
	uid_t uid;
	gid_t gid;
	int r;

	errno = 0;
	pw = getpwnam(name);
	if (!pw)
		return errno > 0 ? -errno : -ESRCH;
	uid = pw->pw_uid;
	gid = pw->pw_gid;
	*ret_uid = uid;
	*ret_gid = gid;
	if (uid == 0)
		return -EINVAL; /* root keeps everything: not what the option is for */
	if (getuid() != 0 || geteuid() != 0) {
		if (getuid() != uid || geteuid() != uid)
			return -EPERM;
		/* Started as that user already (by systemd, or su): no new privileges all the same.
		 */
		return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
	}

	/* The bounding set first (dropping needs CAP_SETPCAP, which the switch takes away): what
	 * is not in it can never come back, not through a reload nor an exec. */
	for (unsigned c = 0; c < 64; c++) {
		if (privileges_service_set & CAP(c))
			continue;
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) < 0)
			break; /* past the kernel's last capability */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
			return -errno;
	}
	/* Keep the permitted set across the change of uid; the effective set is emptied by it. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return -errno;
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	r = caps_get(d);
	if (r < 0)
		return r;
	permitted =
	    ((uint64_t)d[0].permitted | ((uint64_t)d[1].permitted << 32)) & privileges_service_set;
	r = caps_set(permitted, permitted);
	if (r < 0)
		return r;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	umask(0077);
	return 1;
}

const char *privileges_to_string(uint64_t caps, char buf[static 256])
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(cap_names); i++)
		if (caps & CAP(cap_names[i].cap))
			n += (size_t)snprintf(buf + n, 256 - n, "%s%s", n ? " " : "",
					      cap_names[i].name);
	for (unsigned c = 0; c < 64; c++) {
		bool named = false;

		for (size_t i = 0; i < ELEMENTSOF(cap_names); i++)
			named |= cap_names[i].cap == c;
		if ((caps & CAP(c)) && !named && n < 240)
			n += (size_t)snprintf(buf + n, 256 - n, "%scap_%u", n ? " " : "", c);
	}
	if (!n)
		snprintf(buf, 256, "none");
	return buf;
}
