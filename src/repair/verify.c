/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "repair/verify.h"
#include "util/macro.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

struct wire {
	int error;
	int step;
	unsigned index;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

static const char *const steps[] = { "", "privileges", "open", "unlock", "index", "peer", "fstat" };

_Noreturn static void child(int out, const char *ptmx, uid_t uid, gid_t gid)
{
	struct wire w = { 0 };
	int fd, peer, unlock = 0;
	struct stat st;

	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		w.step = 1;
	else if ((fd = open(ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		w.step = 2;
	else if (ioctl(fd, TIOCSPTLCK, &unlock) < 0)
		w.step = 3;
	else if (ioctl(fd, TIOCGPTN, &w.index) < 0)
		w.step = 4;
	else if ((peer = ioctl(fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		w.step = 5;
	else if (fstat(peer, &st) < 0)
		w.step = 6;
	else {
		w.uid = st.st_uid;
		w.gid = st.st_gid;
		w.mode = st.st_mode & 07777;
	}
	if (w.step)
		w.error = errno;
	(void)!write(out, &w, sizeof(w));
	_exit(0);
}

int pty_check_as(const char *ptmx, uid_t uid, gid_t gid, struct pty_check *ret)
{
	_cleanup_close_ int rd = -EBADF, wr = -EBADF;
	struct wire w;
	int p[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	rd = p[0];
	wr = p[1];
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(wr, ptmx, uid, gid);
	close(TAKE_FD(wr));
	do
		n = read(rd, &w, sizeof(w));
	while (n < 0 && errno == EINTR);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(w))
		return -EPROTO;
	*ret = (struct pty_check){
		.error = w.error,
		.step = w.step > 0 && w.step < (int)ELEMENTSOF(steps) ? steps[w.step] : NULL,
		.index = w.index,
		.uid = w.uid,
		.gid = w.gid,
		.mode = w.mode,
	};
	return 0;
}
