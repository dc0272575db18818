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

static void caps_save(struct fsids_saved *saved, const struct __user_cap_data_struct d[static 2])
{
	for (int i = 0; i < 2; i++) {
		saved->effective[i] = d[i].effective;
		saved->permitted[i] = d[i].permitted;
		saved->inheritable[i] = d[i].inheritable;
	}
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
	caps_save(saved, d);
	saved->changed = true;
	saved->uid_changed = saved->uid != 0;
	saved->gid_changed = saved->gid != 0;
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
	caps_save(saved, d);
	/* No group to set aside (root's usual case): none to give back either. */
	if (n > 0 && syscall(SYS_setgroups, 0, NULL) < 0)
		return -errno;
	saved->changed = true;
	saved->groups_changed = n > 0;
	/* Each answers the id it replaced, whether or not it could: what to go back to. An id
	 * that was already the one asked for is in place whatever the call did: only one that
	 * changed is checked. */
	saved->gid = (gid_t)setfsgid(gid);
	saved->uid = (uid_t)setfsuid(uid);
	saved->gid_changed = saved->gid != gid;
	saved->uid_changed = saved->uid != uid;
	d[0].effective = d[1].effective = 0;
	if ((saved->uid_changed && (uid_t)setfsuid((uid_t)-1) != uid) ||
	    (saved->gid_changed && (gid_t)setfsgid((gid_t)-1) != gid) ||
	    syscall(SYS_capset, &h, d) < 0) {
		fsids_restore(saved);
		*saved = (struct fsids_saved){ 0 };
		return -EPERM;
	}
	return 0;
}

/* The effective set saved. Nothing here changes the permitted or inheritable set, so the ones
 * saved are still the process's: no capget(2) first. */
static void effective_restore(const struct fsids_saved *saved)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	for (int i = 0; i < 2; i++)
		d[i] = (struct __user_cap_data_struct){
			.effective = saved->effective[i] & saved->permitted[i],
			.permitted = saved->permitted[i],
			.inheritable = saved->inheritable[i],
		};
	(void)syscall(SYS_capset, &h, d);
}

/* Whether going back to the saved file system uid left the effective set as saved, with no
 * second capset(2) needed. The kernel raises the file capabilities of the permitted set into
 * the effective set when the file system uid returns to 0, and drops them when it leaves 0
 * (a daemon running as its own user with capabilities, back from root's ids). Only the first
 * is harmless, and only to a set that held all of the permitted set already. */
static bool effective_kept(const struct fsids_saved *saved)
{
	return saved->uid == 0 && saved->effective[0] == saved->permitted[0] &&
	       saved->effective[1] == saved->permitted[1];
}

void fsids_restore(const struct fsids_saved *saved)
{
	if (!saved->changed)
		return;
	/* CAP_SETUID and CAP_SETGID first (fsids_become_user() emptied the set), then the ids
	 * that changed (a file system uid back to 0 raises the file capabilities again, one
	 * leaving 0 drops them), then the set as it was where that may have changed it. */
	effective_restore(saved);
	if (saved->uid_changed)
		(void)setfsuid(saved->uid);
	if (saved->gid_changed)
		(void)setfsgid(saved->gid);
	if (saved->groups_changed &&
	    syscall(SYS_setgroups, (size_t)saved->n_groups, saved->groups) < 0)
		abort();
	if ((saved->uid_changed && (uid_t)setfsuid((uid_t)-1) != saved->uid) ||
	    (saved->gid_changed && (gid_t)setfsgid((gid_t)-1) != saved->gid))
		abort();
	if (saved->uid_changed && !effective_kept(saved))
		effective_restore(saved);
}
