/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fsids_become_user() and fsids_restore() (util/caps.c): the identity taken is the one the
 * kernel checks, and everything it set aside comes back exactly: file system ids, supplementary
 * groups, the effective set; from root to nobody's ids and to ids 0 (which change none of the
 * ids, only the set), and from a user of its own with capabilities as the daemon runs. Root only
 * (exit 77 otherwise); each case runs in a child of its own, whose credentials are its own to
 * change. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "util/caps.h"

#define NOBODY 65534
/* in_child()'s drop: the case of service_user_rounds() */
#define SERVICE_USER (-2)

static char secret[] = "/tmp/ptsguard-test-caps-XXXXXX";
/* the same, nobody's: what root's ids without root's capabilities may not open */
static char nobodys[] = "/tmp/ptsguard-test-caps-XXXXXX";

static void caps_read(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	if (syscall(SYS_capget, &h, d) < 0)
		abort();
}

static void caps_write(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	if (syscall(SYS_capset, &h, d) < 0)
		abort();
}

static int n_groups(gid_t *groups)
{
	return getgroups(FSIDS_GROUPS_MAX, groups);
}

/* One become-and-restore to the ids as (nobody's, or 0's: a namespace whose root is the host's)
 * with the groups given and, when drop is >= 0, that capability taken out of the effective set
 * first. */
static void one_round(uid_t as, const gid_t *groups, int n, int drop)
{
	struct __user_cap_data_struct before[2], during[2], after[2];
	struct fsids_saved saved;
	gid_t now[FSIDS_GROUPS_MAX];
	int fd;

	if (setgroups((size_t)n, groups) < 0)
		abort();
	caps_read(before);
	if (drop >= 0) {
		before[drop / 32].effective &= ~(1u << (drop % 32));
		caps_write(before);
	}

	EXPECT_INT(fsids_become_user(as, as, &saved), 0);
	EXPECT_INT(setfsuid((uid_t)-1), as);
	EXPECT_INT(setfsgid((gid_t)-1), as);
	EXPECT_INT(n_groups(now), 0);
	caps_read(during);
	EXPECT_INT(during[0].effective, 0);
	EXPECT_INT(during[1].effective, 0);
	EXPECT_INT(during[0].permitted, before[0].permitted);
	/* The kernel's own check: a file of another's, mode 0600, is not ours to open (root's
	 * ids with none of root's capabilities are any user's). */
	fd = open(as == 0 ? nobodys : secret, O_RDONLY | O_CLOEXEC);
	EXPECT_INT(fd < 0 ? errno : 0, EACCES);
	if (fd >= 0)
		close(fd);
	fsids_restore(&saved);

	EXPECT_INT(setfsuid((uid_t)-1), 0);
	EXPECT_INT(setfsgid((gid_t)-1), 0);
	EXPECT_INT(n_groups(now), n);
	for (int i = 0; i < n && i < FSIDS_GROUPS_MAX; i++)
		EXPECT_INT(now[i], groups[i]);
	caps_read(after);
	for (int i = 0; i < 2; i++) {
		EXPECT_INT(after[i].effective, before[i].effective);
		EXPECT_INT(after[i].permitted, before[i].permitted);
		EXPECT_INT(after[i].inheritable, before[i].inheritable);
	}
	fd = open(as == 0 ? nobodys : secret, O_RDONLY | O_CLOEXEC);
	EXPECT(fd >= 0);
	if (fd >= 0)
		close(fd);
}

static void expect_caps(const struct __user_cap_data_struct want[2], const char *when)
{
	struct __user_cap_data_struct now[2];

	caps_read(now);
	for (int i = 0; i < 2; i++) {
		CHECK_MSG(now[i].effective == want[i].effective,
			  "%s: effective[%d] %#x, expected %#x", when, i, now[i].effective,
			  want[i].effective);
		CHECK_MSG(now[i].permitted == want[i].permitted,
			  "%s: permitted[%d] %#x, expected %#x", when, i, now[i].permitted,
			  want[i].permitted);
	}
}

/* The daemon as ptsguard.service runs it: a user of its own with capabilities. Going to root's
 * file system ids and back (repair), or to another identity and back (a namespace's reads),
 * must leave the ids and the effective set as they were: the kernel drops the file
 * capabilities from the effective set when the file system uid leaves 0. */
static void service_user_rounds(void)
{
	struct __user_cap_data_struct before[2];
	struct fsids_saved saved;
	const uid_t user = 4242;

	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setgroups(0, NULL) < 0 ||
	    setresgid(user, user, user) < 0 || setresuid(user, user, user) < 0)
		abort();
	caps_read(before);
	before[0].effective = before[0].permitted;
	before[1].effective = before[1].permitted;
	caps_write(before);

	EXPECT_INT(fsids_become_root(&saved), 0);
	EXPECT_INT(setfsuid((uid_t)-1), 0);
	EXPECT_INT(setfsgid((gid_t)-1), 0);
	fsids_restore(&saved);
	EXPECT_INT(setfsuid((uid_t)-1), user);
	EXPECT_INT(setfsgid((gid_t)-1), user);
	expect_caps(before, "back from root's ids");

	for (int i = 0; i < 2; i++) {
		uid_t as = i == 0 ? NOBODY : 0;

		EXPECT_INT(fsids_become_user(as, as, &saved), 0);
		EXPECT_INT(setfsuid((uid_t)-1), as);
		fsids_restore(&saved);
		EXPECT_INT(setfsuid((uid_t)-1), user);
		EXPECT_INT(setfsgid((gid_t)-1), user);
		expect_caps(before, as ? "back from nobody's ids" : "back from ids 0");
	}
}

static void in_child(const char *what, uid_t as, const gid_t *groups, int n, int drop)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		abort();
	if (pid == 0) {
		if (drop == SERVICE_USER)
			service_user_rounds();
		else {
			one_round(as, groups, n, drop);
			/* Twice: what the first gave back must serve the second. */
			one_round(as, groups, n, drop);
		}
		_exit(test_failures ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		abort();
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child failed", what);
}

int main(void)
{
	static const gid_t two[] = { 5, 100 };
	int fd;

	if (geteuid() != 0) {
		printf("test-caps: needs root, skipped\n");
		return 77;
	}
	fd = mkstemp(secret);
	if (fd < 0 || fchmod(fd, 0600) < 0)
		abort();
	close(fd);
	fd = mkstemp(nobodys);
	if (fd < 0 || fchmod(fd, 0600) < 0 || fchown(fd, NOBODY, NOBODY) < 0)
		abort();
	close(fd);

	for (int i = 0; i < 2; i++) {
		uid_t as = i == 0 ? NOBODY : 0;

		in_child(as ? "no supplementary group" : "no supplementary group, to ids 0", as,
			 NULL, 0, -1);
		in_child(as ? "two supplementary groups" : "two supplementary groups, to ids 0", as,
			 two, 2, -1);
		/* An effective set short of a file capability: going back to fsuid 0 raises it,
		 * and the restore must take it out again. */
		in_child(as ? "effective set without CAP_DAC_OVERRIDE"
			    : "effective set without CAP_DAC_OVERRIDE, to ids 0",
			 as, two, 2, CAP_DAC_OVERRIDE);
		in_child(as ? "effective set without CAP_NET_ADMIN"
			    : "effective set without CAP_NET_ADMIN, to ids 0",
			 as, NULL, 0, CAP_NET_ADMIN);
	}
	in_child("a service user with capabilities", NOBODY, NULL, 0, SERVICE_USER);

	unlink(secret);
	unlink(nobodys);
	return test_result("test-caps");
}
