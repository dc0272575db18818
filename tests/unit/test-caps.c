/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fsids_become_user() and fsids_restore() (util/caps.c): the identity taken is the one the
 * kernel checks, and everything it set aside comes back exactly: file system ids, supplementary
 * groups, the effective set. Root only (exit 77 otherwise); each case runs in a child of its
 * own, whose credentials are its own to change. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "util/caps.h"

#define NOBODY 65534

static char secret[] = "/tmp/ptsguard-test-caps-XXXXXX";

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

/* One become-and-restore with the groups given and, when drop is >= 0, that capability taken
 * out of the effective set first. */
static void one_round(const gid_t *groups, int n, int drop)
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

	EXPECT_INT(fsids_become_user(NOBODY, NOBODY, &saved), 0);
	EXPECT_INT(setfsuid((uid_t)-1), NOBODY);
	EXPECT_INT(setfsgid((gid_t)-1), NOBODY);
	EXPECT_INT(n_groups(now), 0);
	caps_read(during);
	EXPECT_INT(during[0].effective, 0);
	EXPECT_INT(during[1].effective, 0);
	EXPECT_INT(during[0].permitted, before[0].permitted);
	/* The kernel's own check: a file of root's, mode 0600, is not nobody's to open. */
	fd = open(secret, O_RDONLY | O_CLOEXEC);
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
	fd = open(secret, O_RDONLY | O_CLOEXEC);
	EXPECT(fd >= 0);
	if (fd >= 0)
		close(fd);
}

static void in_child(const char *what, const gid_t *groups, int n, int drop)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		abort();
	if (pid == 0) {
		one_round(groups, n, drop);
		/* Twice: what the first gave back must serve the second. */
		one_round(groups, n, drop);
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

	in_child("no supplementary group", NULL, 0, -1);
	in_child("two supplementary groups", two, 2, -1);
	/* An effective set short of a file capability: going back to fsuid 0 raises it, and the
	 * restore must take it out again. */
	in_child("effective set without CAP_DAC_OVERRIDE", two, 2, CAP_DAC_OVERRIDE);
	in_child("effective set without CAP_NET_ADMIN", NULL, 0, CAP_NET_ADMIN);

	unlink(secret);
	return test_result("test-caps");
}
