/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation probe in another mount namespace and root (what audit --namespace will use):
 * as root, in a private mount namespace of its own, this test builds a healthy /dev; a child
 * process then unshares a second mount namespace whose /dev has no ptmx, and holds it open.
 *
 *   - the probe here (no namespace, no root) gets a working pty;
 *   - the probe resolving its paths under the child's root (the worker never enters the
 *     namespace) fails at open_ptmx with ENOENT, though ours has a ptmx;
 *   - the probe under a healthy root of the child's namespace (a tmpfs with a ptmx node and a
 *     devpts) works, and ptsname() names the slave inside that root.
 *
 * Exits 77 (skipped) when not root or without mount namespaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe/allocation.h"
#include "test.h"
#include "util/group.h"

#define EXIT_SKIP 77

static ino_t mntns_ino(void)
{
	struct stat st;

	return stat("/proc/self/ns/mnt", &st) == 0 ? st.st_ino : 0;
}

/* A /dev at dir: tmpfs, a ptmx node 5:2 (unless !ptmx), devpts at pts. */
static int build_dev(const char *dir, bool ptmx)
{
	char path[256];

	if (mount("tmpfs", dir, "tmpfs", 0, "mode=755") < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/ptmx", dir);
	if (ptmx && (mknod(path, S_IFCHR | 0666, makedev(5, 2)) < 0 || chmod(path, 0666) < 0))
		return -errno;
	snprintf(path, sizeof(path), "%s/pts", dir);
	if (mkdir(path, 0755) < 0 ||
	    mount("devpts", path, "devpts", 0, "newinstance,gid=5,mode=620,ptmxmode=000") < 0)
		return -errno;
	return 0;
}

static void probe_expect(const char *what, int root_fd, int want_step, int want_errno,
			 const char *want_name)
{
	struct alloc_options o = { .root_fd = root_fd };
	struct alloc_probe p = { 0 };
	enum alloc_step step = _ALLOC_STEP_MAX;
	char buf[256];
	int r;

	user_lookup(PROBE_USER_DEFAULT, &o.uid, &o.gid);
	r = probe_allocation(&o, &p);
	CHECK_MSG(r == 0, "%s: probe_allocation: %s", what, strerror(-r));
	CHECK_MSG(p.status == ALLOC_PERFORMED, "%s: %s", what,
		  alloc_probe_describe(&p, buf, sizeof(buf)));
	if (want_step < 0) {
		CHECK_MSG(alloc_probe_succeeded(&p), "%s: expected a working pty: %s", what,
			  alloc_probe_describe(&p, buf, sizeof(buf)));
		EXPECT_STR(p.ptsname, want_name);
	} else {
		CHECK_MSG(alloc_probe_failed(&p, &step) && (int)step == want_step &&
			      p.error == want_errno,
			  "%s: expected %s to fail with %s: %s", what,
			  alloc_step_to_string(want_step), errno_name(want_errno),
			  alloc_probe_describe(&p, buf, sizeof(buf)));
	}
	EXPECT_INT(p.uid, o.uid);
}

int main(void)
{
	int ready[2], hold[2], status, root_fd, good_root_fd;
	char c, path[64];
	ino_t before;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: needs root (mount namespaces, devpts mounts)\n");
		return EXIT_SKIP;
	}
	before = mntns_ino();
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		printf("SKIP: no private mount namespace: %m\n");
		return EXIT_SKIP;
	}
	/* Only in a namespace of our own is /dev ours to replace. */
	if (mntns_ino() == before) {
		fprintf(stderr, "still in the original mount namespace: stopping\n");
		return 1;
	}
	/* A tmpfs over /tmp first: nothing is created on the host's file systems. */
	if (mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777") < 0 || build_dev("/dev", true) < 0 ||
	    mkdir("/tmp/ptsguard-alloc-root", 0755) < 0 ||
	    mount("tmpfs", "/tmp/ptsguard-alloc-root", "tmpfs", 0, "mode=755") < 0 ||
	    mkdir("/tmp/ptsguard-alloc-root/dev", 0755) < 0) {
		fprintf(stderr, "cannot build the test's /dev: %m\n");
		return 1;
	}
	probe_expect("this namespace", -1, -1, 0, "/dev/pts/0");

	if (pipe(ready) < 0 || pipe(hold) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		/* A second namespace: /dev without ptmx; a healthy /dev under the other root. */
		close(ready[0]);
		close(hold[1]);
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    build_dev("/dev", false) < 0 ||
		    build_dev("/tmp/ptsguard-alloc-root/dev", true) < 0)
			_exit(1);
		(void)!write(ready[1], "r", 1);
		(void)!read(hold[0], &c, 1);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	CHECK_MSG(read(ready[0], &c, 1) == 1, "the child could not build its namespace");
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/root/tmp/ptsguard-alloc-root", (int)pid);
	good_root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_MSG(root_fd >= 0 && good_root_fd >= 0, "cannot open the child's: %m");

	probe_expect("the child's namespace", root_fd, ALLOC_STEP_OPEN_PTMX, ENOENT, NULL);
	probe_expect("the child's namespace, a healthy root", good_root_fd, -1, 0, "/dev/pts/0");
	/* And here again: entering another namespace in the child left ours alone. */
	probe_expect("this namespace, after", -1, -1, 0, "/dev/pts/0");

	close(hold[1]);
	waitpid(pid, &status, 0);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the namespace child failed");
	return test_result("test-allocation");
}
