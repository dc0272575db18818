/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/caps.h"

static int caps_get(struct __user_cap_data_struct d[static 2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capget, &h, d) < 0 ? -errno : 0;
}

uint64_t caps_effective(void)
{
	struct __user_cap_data_struct d[2] = { 0 };

	if (caps_get(d) < 0)
		return 0;
	return (uint64_t)d[0].effective | ((uint64_t)d[1].effective << 32);
}

uint64_t caps_permitted(void)
{
	struct __user_cap_data_struct d[2] = { 0 };

	if (caps_get(d) < 0)
		return 0;
	return (uint64_t)d[0].permitted | ((uint64_t)d[1].permitted << 32);
}

bool caps_may_change_ids(void)
{
	uint64_t need = CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID);

	/* Not euid 0 alone: root without them (a restricted container's root, or under
	 * `setpriv --bounding-set`) cannot take another user's ids either. */
	return (caps_effective() & need) == need;
}

int fsids_become_root(struct fsids_saved *saved)
{
	struct __user_cap_data_struct d[2] = { 0 };
	int r;

	*saved = (struct fsids_saved){ 0 };
	/* setfsuid() answers the previous id whatever happens: ask with an id it refuses. */
	saved->uid = (uid_t)setfsuid((uid_t)-1);
	saved->gid = (gid_t)setfsgid((gid_t)-1);
	if (saved->uid == 0 && saved->gid == 0)
		return 0;
	r = caps_get(d);
	if (r < 0)
		return r;
	saved->effective[0] = d[0].effective;
	saved->effective[1] = d[1].effective;
	saved->changed = true;
	(void)setfsgid(0);
	(void)setfsuid(0);
	if ((uid_t)setfsuid((uid_t)-1) != 0 || (gid_t)setfsgid((gid_t)-1) != 0) {
		fsids_restore(saved);
		*saved = (struct fsids_saved){ 0 };
		return -EPERM;
	}
	return 0;
}

int fsids_become_user(uid_t uid, gid_t gid, struct fsids_saved *saved)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	int r, n;

	*saved = (struct fsids_saved){ 0 };
	r = caps_get(d);
	if (r < 0)
		return r;
	n = getgroups(FSIDS_GROUPS_MAX, saved->groups);
	if (n < 0)
		return errno == EINVAL ? -E2BIG : -errno;
	saved->n_groups = n;
	saved->effective[0] = d[0].effective;
	saved->effective[1] = d[1].effective;
	saved->uid = (uid_t)setfsuid((uid_t)-1);
	saved->gid = (gid_t)setfsgid((gid_t)-1);
	if (syscall(SYS_setgroups, 0, NULL) < 0)
		return -errno;
	saved->changed = saved->groups_changed = true;
	(void)setfsgid(gid);
	(void)setfsuid(uid);
	d[0].effective = d[1].effective = 0;
	if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid ||
	    syscall(SYS_capset, &h, d) < 0) {
		fsids_restore(saved);
		*saved = (struct fsids_saved){ 0 };
		return -EPERM;
	}
	return 0;
}

/* The effective set saved, as far as the permitted set allows. */
static void effective_restore(const struct fsids_saved *saved)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (caps_get(d) < 0)
		return;
	d[0].effective = saved->effective[0] & d[0].permitted;
	d[1].effective = saved->effective[1] & d[1].permitted;
	(void)syscall(SYS_capset, &h, d);
}

void fsids_restore(const struct fsids_saved *saved)
{
	if (!saved->changed)
		return;
	/* CAP_SETUID and CAP_SETGID first (fsids_become_user() emptied the set), then the ids
	 * (a file system uid back to 0 raises the file capabilities again), then the set as it
	 * was. */
	effective_restore(saved);
	(void)setfsuid(saved->uid);
	(void)setfsgid(saved->gid);
	if (saved->groups_changed &&
	    syscall(SYS_setgroups, (size_t)saved->n_groups, saved->groups) < 0)
		abort();
	if ((uid_t)setfsuid((uid_t)-1) != saved->uid || (gid_t)setfsgid((gid_t)-1) != saved->gid)
		abort();
	effective_restore(saved);
}
