/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Paths of another root (probe/namespace.h): stat_in_dir() refuses any name but a single
 * component and never follows a symlink; ns_lstat() of a target below another root resolves
 * every path under that root, through its directory cache (ns_dirs_begin() to ns_dirs_end())
 * as without it, whatever the symlinks there point at.
 *
 * The second part needs root (chroot(2)): a child chroots into a scratch tree and waits; it is
 * the target. Without root only the first part runs.
 *
 * openat2_scoped() (util/fileio.h) resolves a path with ".." under a root while another process
 * renames as fast as it can: the kernel answers such a lookup EAGAIN whenever a rename lands in
 * it, and not one of the helper's opens may fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe/namespace.h"
#include "test.h"
#include "util/fileio.h"
#include "util/macro.h"

static char base[] = "/tmp/ptsguard-nspaths-XXXXXX";

static void path_at(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", base, rel);
}

static void make_file(const char *rel)
{
	char p[PATH_MAX];
	int fd;

	path_at(p, sizeof(p), rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	EXPECT(fd >= 0);
	if (fd >= 0)
		close(fd);
}

static void make_dir(const char *rel)
{
	char p[PATH_MAX];

	path_at(p, sizeof(p), rel);
	EXPECT_INT(mkdir(p, 0755), 0);
}

static void make_link(const char *target, const char *rel)
{
	char p[PATH_MAX];

	path_at(p, sizeof(p), rel);
	EXPECT_INT(symlink(target, p), 0);
}

static ino_t ino_of(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	path_at(p, sizeof(p), rel);
	return lstat(p, &st) == 0 ? st.st_ino : 0;
}

static void test_stat_in_dir(void)
{
	char p[PATH_MAX];
	struct stat st;
	int fd;

	path_at(p, sizeof(p), "root/dev");
	fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	EXPECT(fd >= 0);

	EXPECT_INT(stat_in_dir(fd, "ptmx", &st), 0);
	EXPECT(S_ISREG(st.st_mode));
	EXPECT_INT(st.st_ino, ino_of("root/dev/ptmx"));
	/* Only one component: nothing that could climb out of the directory or walk through it. */
	EXPECT_INT(stat_in_dir(fd, "..", &st), -EINVAL);
	EXPECT_INT(stat_in_dir(fd, ".", &st), -EINVAL);
	EXPECT_INT(stat_in_dir(fd, "", &st), -EINVAL);
	EXPECT_INT(stat_in_dir(fd, "sub/file", &st), -EINVAL);
	EXPECT_INT(stat_in_dir(fd, "/etc", &st), -EINVAL);
	EXPECT_INT(stat_in_dir(fd, "../root", &st), -EINVAL);
	/* A symlink is the link itself, never where it points (the host's / here). */
	EXPECT_INT(stat_in_dir(fd, "up", &st), 0);
	EXPECT(S_ISLNK(st.st_mode));
	EXPECT_INT(stat_in_dir(fd, "missing", &st), -ENOENT);
	close(fd);
}

/* ns_lstat() of path in t against the inode the host sees at rel (0: it must be missing). */
static void expect_node(const struct namespace_target *t, const char *path, const char *rel,
			mode_t type, const char *target)
{
	_cleanup_free_ char *got = NULL;
	struct stat st;
	int r = ns_lstat(t, path, &st, &got);

	if (!rel) {
		CHECK_MSG(r < 0, "%s: %d, expected missing", path, r);
		return;
	}
	CHECK_MSG(r == 0, "%s: %s", path, strerror(-r));
	if (r < 0)
		return;
	CHECK_MSG(st.st_ino == ino_of(rel), "%s: inode %lu, expected %s's %lu", path,
		  (unsigned long)st.st_ino, rel, (unsigned long)ino_of(rel));
	CHECK_MSG((st.st_mode & S_IFMT) == type, "%s: mode %o", path, st.st_mode);
	if (target)
		EXPECT_STR(got, target);
	else
		EXPECT(!got);
}

static void check_root_paths(const struct namespace_target *t)
{
	expect_node(t, "/", "root", S_IFDIR, NULL);
	expect_node(t, "/dev", "root/dev", S_IFDIR, NULL);
	expect_node(t, "/dev/ptmx", "root/dev/ptmx", S_IFREG, NULL);
	expect_node(t, "/dev/up", "root/dev/up", S_IFLNK, "/");
	/* Absolute symlinks and ".." are resolved under the root: /escape -> /../.. is the root,
	 * so /escape/dev/ptmx is the root's, not the host's. */
	expect_node(t, "/escape/dev/ptmx", "root/dev/ptmx", S_IFREG, NULL);
	expect_node(t, "/dev/up/dev/ptmx", "root/dev/ptmx", S_IFREG, NULL);
	expect_node(t, "/escape/outside", NULL, 0, NULL);
	expect_node(t, "/dev/..", "root", S_IFDIR, NULL);
	expect_node(t, "/dev/../..", "root", S_IFDIR, NULL);
	/* A directory that is not there, asked twice (the cache keeps the answer). */
	expect_node(t, "/none/ptmx", NULL, 0, NULL);
	expect_node(t, "/none/ptmx", NULL, 0, NULL);
	expect_node(t, "/dev/ptmx/x", NULL, 0, NULL);
	/* The host's file of the same name is not the root's. */
	expect_node(t, "/outside", NULL, 0, NULL);
}

static void test_ns_lstat_in_root(void)
{
	_cleanup_(namespace_target_freep) struct namespace_target *t = NULL;
	int ready[2], status;
	char root[PATH_MAX];
	pid_t pid;
	char c;

	path_at(root, sizeof(root), "root");
	EXPECT_INT(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		if (chroot(root) < 0 || chdir("/") < 0)
			_exit(1);
		(void)!write(ready[1], "x", 1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	EXPECT_INT(read(ready[0], &c, 1), 1);
	close(ready[0]);

	EXPECT_INT(namespace_target_open(pid, &t), 0);
	if (t) {
		EXPECT(!t->own);
		check_root_paths(t); /* each path resolved whole */
		ns_dirs_begin(t);
		check_root_paths(t); /* through the directory cache */
		check_root_paths(t); /* and again, from what it kept */
		ns_dirs_end(t);
		check_root_paths(t);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

#define CHURN_OPENS 20000

static void test_openat2_churn(void)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
	unsigned failed = 0, raw_eagain = 0;
	int root_fd, status;
	pid_t pid;

	path_at(root, sizeof(root), "root");
	path_at(a, sizeof(a), "churn-a");
	path_at(b, sizeof(b), "churn-b");
	make_dir("churn-a");
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	EXPECT(root_fd >= 0);
	pid = fork();
	if (pid == 0) {
		for (;;)
			if (rename(a, b) < 0 || rename(b, a) < 0)
				_exit(1);
	}
	EXPECT(pid > 0);
	if (root_fd < 0 || pid < 0)
		return;
	for (unsigned i = 0; i < CHURN_OPENS; i++) {
		int fd = openat2_scoped(root_fd, "dev/../dev/ptmx", &how);

		if (fd < 0 && failed++ == 0)
			printf("a scoped open failed: %s\n", strerror(-fd));
		if (fd >= 0)
			close(fd);
		fd = (int)syscall(SYS_openat2, root_fd, "dev/../dev/ptmx", &how, sizeof(how));
		raw_eagain += fd < 0 && errno == EAGAIN;
		if (fd >= 0)
			close(fd);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(root_fd);
	CHECK_MSG(failed == 0, "%u of %u scoped opens failed while another process renamed", failed,
		  CHURN_OPENS);
	printf("openat2 under renames: %u of %u bare calls answered EAGAIN, none of the helper's\n",
	       raw_eagain, CHURN_OPENS);
}

int main(void)
{
	char p[PATH_MAX];

	if (!mkdtemp(base))
		return 1;
	make_dir("root");
	make_dir("root/dev");
	make_file("root/dev/ptmx");
	make_link("/", "root/dev/up");
	make_link("/../..", "root/escape");
	make_file("outside");

	test_stat_in_dir();
	test_openat2_churn();
	if (geteuid() == 0)
		test_ns_lstat_in_root();
	else
		printf("not root: ns_lstat() below another root not tested\n");

	snprintf(p, sizeof(p), "rm -rf '%s'", base);
	(void)!system(p);
	return test_result("test-namespace-paths");
}
