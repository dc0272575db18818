/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * namespaces-floor: the kernel's own cost of the ground truth of `ptsguard audit
 * --all-namespaces` (a benchmark's floor, not a test).
 *
 *   build/tests/bench/namespaces-floor [--user NAME] PID...
 *
 * One process. As root, for its own mount namespace and then for that of each PID: one read of
 * /proc/PID/mountinfo to its end and an open of /proc/PID/root (O_PATH), kept. Then, having
 * dropped its supplementary groups, gid and uid to an unprivileged user (default nobody), for
 * each root kept: one pty allocated through it (openat2() of dev/ptmx with RESOLVE_IN_ROOT, so
 * that a /dev/ptmx linked to pts/ptmx resolves inside that root), unlocked, its slave opened
 * with TIOCGPTPEER, both closed. No fork, no setns() per namespace. Exit status 0 when every
 * namespace gave its table and a pty, 1 otherwise (each failure on stderr).
 * tests/bench/namespaces-bench runs it beside `ptsguard audit --all-namespaces --json`.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

static char buf[1 << 20];

static int read_all(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

static int allocate_in(int root)
{
	struct open_how how = {
		.flags = O_RDWR | O_NOCTTY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int ptmx, pts, unlock = 0, r = 0;

	ptmx = (int)syscall(SYS_openat2, root, "dev/ptmx", &how, sizeof(how));
	if (ptmx < 0)
		return -errno;
	if (ioctl(ptmx, TIOCSPTLCK, &unlock) < 0)
		r = -errno;
	else {
		pts = ioctl(ptmx, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (pts < 0)
			r = -errno;
		else
			close(pts);
	}
	close(ptmx);
	return r;
}

int main(int argc, char **argv)
{
	const char *user = "nobody";
	struct passwd *pw;
	uid_t uid = 65534;
	gid_t gid = 65534;
	int first = 1, n, *roots, failed = 0;

	if (argc >= 3 && strcmp(argv[1], "--user") == 0) {
		user = argv[2];
		first = 3;
	}
	pw = getpwnam(user);
	if (pw) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	n = argc - first + 1;
	roots = calloc((size_t)n, sizeof(int));
	if (!roots)
		return 1;
	for (int i = 0; i < n; i++) {
		const char *pid = i == 0 ? "self" : argv[first + i - 1];
		char path[64];
		int r;

		snprintf(path, sizeof(path), "/proc/%s/mountinfo", pid);
		r = read_all(path);
		snprintf(path, sizeof(path), "/proc/%s/root", pid);
		roots[i] = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (r < 0 || roots[i] < 0) {
			fprintf(stderr, "namespaces-floor: %s: %s\n", pid,
				strerror(r < 0 ? -r : errno));
			failed = 1;
		}
	}
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0) {
		perror("namespaces-floor: dropping to the user");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int r;

		if (roots[i] < 0)
			continue;
		r = allocate_in(roots[i]);
		if (r < 0) {
			fprintf(stderr, "namespaces-floor: no pty in %s as %s: %s\n",
				i == 0 ? "self" : argv[first + i - 1], user, strerror(-r));
			failed = 1;
		}
		close(roots[i]);
	}
	free(roots);
	return failed;
}
