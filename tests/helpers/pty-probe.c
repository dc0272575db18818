/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pty-probe: allocate one pty the way a user program does and report what the
 * kernel gave us, as one JSON line on stdout. The scenario tests run it as an
 * unprivileged user to prove what users see (the group and mode of a new
 * slave, or the errno of a failed open), and with --hold to keep a pty open
 * on an instance that is then covered or remounted.
 *
 *   pty-probe [--ptmx PATH] [--hold]
 *
 * Success: {"ok":true,"index":0,"uid":1000,"gid":5,"mode":"0620",
 *           "dev":"0:45","rdev":"136:0","by_name":"same"}, exit 0. by_name is what opening
 *           the slave by the name ptsname() gives yields: "same", "other" (another
 *           pty: the wrong instance) or an errno name (EACCES).
 * Failure: {"ok":false,"step":"open","errno":13,"error":"EACCES"}, exit 1;
 *          step is one of open, unlock, index, peer, fstat.
 * Bad usage: a message on stderr, exit 2.
 *
 * With --hold, after the line is printed and flushed, both descriptors stay
 * open until stdin reaches end of file or SIGTERM (or SIGINT) arrives; then
 * the exit status is 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define EXIT_USAGE 2

struct errno_name {
	int code;
	const char *name;
};

/* The errors an open of /dev/ptmx and its ioctls can plausibly return. */
static const struct errno_name errno_names[] = {
	{ EPERM, "EPERM" },   { ENOENT, "ENOENT" },   { EIO, "EIO" },
	{ ENXIO, "ENXIO" },   { EBADF, "EBADF" },     { ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" }, { EFAULT, "EFAULT" },   { EBUSY, "EBUSY" },
	{ ENODEV, "ENODEV" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
	{ EINVAL, "EINVAL" }, { ENFILE, "ENFILE" },   { EMFILE, "EMFILE" },
	{ ENOTTY, "ENOTTY" }, { ENOSPC, "ENOSPC" },   { EROFS, "EROFS" },
	{ ELOOP, "ELOOP" },   { EAGAIN, "EAGAIN" },   { ENAMETOOLONG, "ENAMETOOLONG" },
};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static const char *errno_to_name(int code)
{
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].code == code)
			return errno_names[i].name;
#ifdef HAVE_STRERRORNAME_NP
	{
		const char *name = strerrorname_np(code);

		if (name)
			return name;
	}
#endif
	return "EUNKNOWN";
}

static int print_line(const char *line)
{
	if (fputs(line, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
		fprintf(stderr, "pty-probe: cannot write to stdout: %s\n", strerror(errno));
		return -EIO;
	}
	return 0;
}

static int report_failure(const char *step, int code)
{
	char line[160];

	snprintf(line, sizeof(line), "{\"ok\":false,\"step\":\"%s\",\"errno\":%d,\"error\":\"%s\"}",
		 step, code, errno_to_name(code));
	print_line(line);
	return EXIT_FAILURE;
}

/* What a program that reopens its slave by the name ptsname() gives (/dev/pts/N) gets:
 * "same" (the pty TIOCGPTPEER gave), "other" (another pty), or the errno's name. */
static const char *open_by_name(unsigned int index, const struct stat *peer)
{
	char name[64];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "/dev/pts/%u", index);
	fd = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno_to_name(errno);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return errno_to_name(errno);
	}
	close(fd);
	return st.st_dev == peer->st_dev && st.st_rdev == peer->st_rdev ? "same" : "other";
}

static int report_success(unsigned int index, const struct stat *st)
{
	char line[320];

	snprintf(line, sizeof(line),
		 "{\"ok\":true,\"index\":%u,\"uid\":%u,\"gid\":%u,\"mode\":\"%04o\","
		 "\"dev\":\"%u:%u\",\"rdev\":\"%u:%u\",\"by_name\":\"%s\"}",
		 index, (unsigned int)st->st_uid, (unsigned int)st->st_gid,
		 (unsigned int)(st->st_mode & 07777), major(st->st_dev), minor(st->st_dev),
		 major(st->st_rdev), minor(st->st_rdev), open_by_name(index, st));
	return print_line(line) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Wait for end of file on stdin or SIGTERM/SIGINT. The signals stay blocked
 * except inside ppoll(), so one that arrives between two checks of the flag
 * is not lost.
 */
static int hold(const sigset_t *waitmask)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	char buf[256];

	for (;;) {
		ssize_t n;
		int r;

		if (got_signal)
			return 0;
		r = ppoll(&pfd, 1, NULL, waitmask);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd.revents & POLLNVAL)
			return 0; /* no stdin at all: nothing will ever tell us to go on */
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return 0; /* a broken stdin counts as its end */
	}
}

static void usage(FILE *f)
{
	fputs("usage: pty-probe [--ptmx PATH] [--hold]\n", f);
}

int main(int argc, char *argv[])
{
	const char *ptmx_path = "/dev/ptmx";
	bool want_hold = false;
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t blocked, waitmask;
	unsigned int index = 0;
	struct stat st;
	int unlock = 0;
	int master, slave, r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ptmx") == 0 && i + 1 < argc) {
			ptmx_path = argv[++i];
		} else if (strcmp(argv[i], "--hold") == 0) {
			want_hold = true;
		} else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return EXIT_SUCCESS;
		} else {
			fprintf(stderr, "pty-probe: bad argument '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}

	/* Block the signals before anything is printed: a test may send SIGTERM as
	 * soon as it has read our line. */
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGINT);
	if (sigprocmask(SIG_BLOCK, &blocked, &waitmask) < 0) {
		fprintf(stderr, "pty-probe: sigprocmask: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0) {
		fprintf(stderr, "pty-probe: sigaction: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}

	master = open(ptmx_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return report_failure("open", errno);
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return report_failure("unlock", errno);
	if (ioctl(master, TIOCGPTN, &index) < 0)
		return report_failure("index", errno);
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return report_failure("peer", errno);
	if (fstat(slave, &st) < 0)
		return report_failure("fstat", errno);

	r = report_success(index, &st);
	if (r != EXIT_SUCCESS || !want_hold)
		return r;

	r = hold(&waitmask);
	if (r < 0) {
		fprintf(stderr, "pty-probe: waiting on stdin: %s\n", strerror(-r));
		return EXIT_FAILURE;
	}
	close(slave);
	close(master);
	return EXIT_SUCCESS;
}
