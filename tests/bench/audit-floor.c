/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audit-floor: the kernel's own cost of what one `ptsguard audit` must at least ask of it (a
 * benchmark's floor, not a test).
 *
 *   build/tests/bench/audit-floor [--user NAME]
 *
 * As root: one read of /proc/self/mountinfo to its end, then one pty allocated and freed as an
 * unprivileged user (default nobody): fork, the child drops its supplementary groups, gid and
 * uid, opens /dev/ptmx, unlocks the pty, opens the slave by its number under /dev/pts, closes
 * both and exits; the parent waits for it. Nothing else: no parsing, no checks, no output. Exit
 * status 0 when both happened, 1 otherwise (with a message on stderr). tests/bench/audit-bench
 * runs it beside `ptsguard audit --json` and /bin/true, whose cost (an exec) it subtracts from
 * both.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[1 << 20];

static int read_mountinfo(void)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return 0;
}

/* In the child: 0 when a pty was allocated, unlocked and its slave opened, else an errno. */
static int allocate_as(uid_t uid, gid_t gid)
{
	char slave[32];
	int ptmx, pts, unlock = 0;
	unsigned n;

	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return errno;
	ptmx = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (ptmx < 0)
		return errno;
	if (ioctl(ptmx, TIOCSPTLCK, &unlock) < 0 || ioctl(ptmx, TIOCGPTN, &n) < 0)
		return errno;
	snprintf(slave, sizeof(slave), "/dev/pts/%u", n);
	pts = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (pts < 0)
		return errno;
	close(pts);
	close(ptmx);
	return 0;
}

int main(int argc, char **argv)
{
	const char *user = "nobody";
	struct passwd *pw;
	uid_t uid = 65534;
	gid_t gid = 65534;
	int r, status;
	pid_t pid;

	if (argc == 3 && strcmp(argv[1], "--user") == 0)
		user = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: audit-floor [--user NAME]\n");
		return 2;
	}
	/* Looked up before the clock matters as much as after: ptsguard looks the user up too. */
	pw = getpwnam(user);
	if (pw) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	r = read_mountinfo();
	if (r < 0) {
		fprintf(stderr, "audit-floor: /proc/self/mountinfo: %s\n", strerror(-r));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("audit-floor: fork");
		return 1;
	}
	if (pid == 0)
		_exit(allocate_as(uid, gid));
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "audit-floor: no pty as %s: %s\n", user,
			WIFEXITED(status) ? strerror(WEXITSTATUS(status)) : "killed");
		return 1;
	}
	return 0;
}
