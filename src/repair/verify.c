/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>

#include "repair/action.h"
#include "repair/verify.h"
#include "util/string-table.h"
#include "util/macro.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

enum {
	STEP_NONE,
	STEP_PRIVILEGES,
	STEP_OPEN,
	STEP_UNLOCK,
	STEP_INDEX,
	STEP_PEER,
	STEP_FSTAT,
};

struct wire {
	int error;
	int step;
	unsigned index;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

static const char *const steps[] = { "", "privileges", "open", "unlock", "index", "peer", "fstat" };

/* The slave of master: TIOCGPTPEER, or (kernels before 4.13 have none) its name. -1 with errno. */
static int open_slave(int master, unsigned index)
{
	const int flags = O_RDWR | O_NOCTTY | O_CLOEXEC;
	char name[32];
	int fd = ioctl(master, TIOCGPTPEER, flags);

	if (fd >= 0 || (errno != ENOTTY && errno != EINVAL))
		return fd;
	snprintf(name, sizeof(name), "/dev/pts/%u", index);
	return open(name, flags);
}

/* In the guarded child: open, unlock, the slave (TIOCGPTPEER, or by its name), fstat. */
static void allocate(void *userdata, void *answer)
{
	const char *ptmx = userdata;
	struct wire *w = answer;
	int fd, peer, unlock = 0;
	struct stat st;

	if ((fd = open(ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		w->step = STEP_OPEN;
	else if (ioctl(fd, TIOCSPTLCK, &unlock) < 0)
		w->step = STEP_UNLOCK;
	else if (ioctl(fd, TIOCGPTN, &w->index) < 0)
		w->step = STEP_INDEX;
	else if ((peer = open_slave(fd, w->index)) < 0)
		w->step = STEP_PEER;
	else if (fstat(peer, &st) < 0)
		w->step = STEP_FSTAT;
	else {
		w->uid = st.st_uid;
		w->gid = st.st_gid;
		w->mode = st.st_mode & 07777;
	}
	if (w->step != STEP_NONE)
		w->error = errno;
}

/* Run work as uid:gid in a guarded child under the verification's deadline; its answer (of
 * answer_size bytes) in answer, the child's ids and setup error in *g. As guarded_child_run(). */
static int verify_child_run(uid_t uid, gid_t gid, void (*work)(void *userdata, void *answer),
			    void *userdata, void *answer, size_t answer_size,
			    struct guarded_result *g)
{
	struct guarded_child c = {
		.uid = uid,
		.gid = gid,
		.mntns_fd = -1,
		.root_fd = -1,
		.deadline_usec = VERIFY_DEADLINE_USEC,
		.work = work,
		.userdata = userdata,
		.answer_size = answer_size,
	};

	return guarded_child_run(&c, answer, g);
}

/* The name of step (index into names, n of them; 0 is none): NULL for none or one unknown. */
static const char *step_name(const char *const *names, size_t n, int step)
{
	return step > 0 && (size_t)step < n ? names[step] : NULL;
}

int pty_check_as(const char *ptmx, uid_t uid, gid_t gid, struct pty_check *ret)
{
	struct guarded_result g;
	struct wire w = { 0 };
	int r;

	r = verify_child_run(uid, gid, allocate, (void *)ptmx, &w, sizeof(w), &g);
	if (r < 0)
		return r;
	if (g.setup_error) {
		w.error = g.setup_error;
		w.step = STEP_PRIVILEGES;
	}
	*ret = (struct pty_check){
		.error = w.error,
		.step = step_name(steps, ELEMENTSOF(steps), w.step),
		.as_uid = g.as_uid,
		.as_gid = g.as_gid,
		.index = w.index,
		.uid = w.uid,
		.gid = w.gid,
		.mode = w.mode,
	};
	return 0;
}

enum {
	TTY_STEP_NONE,
	TTY_STEP_PRIVILEGES,
	TTY_STEP_OPEN,
	TTY_STEP_UNLOCK,
	TTY_STEP_INDEX,
	TTY_STEP_SLAVE,
	TTY_STEP_SETSID,
	TTY_STEP_CTTY,
	TTY_STEP_OPEN_TTY,
};

static const char *const tty_steps[] = { "",	  "privileges", "open", "unlock",  "index",
					 "slave", "setsid",	"ctty", "open_tty" };

struct tty_paths {
	const char *ptmx, *tty;
};

struct tty_wire {
	int error;
	int step;
};

/* In the guarded child: a pty, a session with it as controlling terminal, then the node. */
static void open_tty(void *userdata, void *answer)
{
	const struct tty_paths *p = userdata;
	struct tty_wire *w = answer;
	int fd, slave, tty, unlock = 0;
	unsigned index;

	if ((fd = open(p->ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		w->step = TTY_STEP_OPEN;
	else if (ioctl(fd, TIOCSPTLCK, &unlock) < 0)
		w->step = TTY_STEP_UNLOCK;
	else if (ioctl(fd, TIOCGPTN, &index) < 0)
		w->step = TTY_STEP_INDEX;
	else if ((slave = open_slave(fd, index)) < 0)
		w->step = TTY_STEP_SLAVE;
	else if (setsid() < 0)
		w->step = TTY_STEP_SETSID;
	else if (ioctl(slave, TIOCSCTTY, 0) < 0)
		w->step = TTY_STEP_CTTY;
	else if ((tty = open(p->tty, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)) < 0)
		w->step = TTY_STEP_OPEN_TTY;
	else
		close(tty);
	if (w->step != TTY_STEP_NONE)
		w->error = errno;
}

int tty_check_as(const char *ptmx, const char *tty, uid_t uid, gid_t gid, struct tty_check *ret)
{
	struct tty_paths paths = { .ptmx = ptmx, .tty = tty };
	struct guarded_result g;
	struct tty_wire w = { 0 };
	int r;

	r = verify_child_run(uid, gid, open_tty, &paths, &w, sizeof(w), &g);
	if (r < 0)
		return r;
	if (g.setup_error) {
		w.error = g.setup_error;
		w.step = TTY_STEP_PRIVILEGES;
	}
	*ret = (struct tty_check){
		.error = w.error,
		.step = step_name(tty_steps, ELEMENTSOF(tty_steps), w.step),
		.as_uid = g.as_uid,
		.as_gid = g.as_gid,
	};
	return 0;
}

struct open_wire {
	int error;
};

static void open_by_name(void *userdata, void *answer)
{
	struct open_wire *w = answer;
	int fd = open(userdata, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		w->error = errno;
	else
		close(fd);
}

int slave_open_as(const char *path, uid_t uid, gid_t gid, struct slave_open *ret)
{
	struct guarded_result g;
	struct open_wire w = { 0 };
	int r;

	r = verify_child_run(uid, gid, open_by_name, (void *)path, &w, sizeof(w), &g);
	if (r < 0)
		return r;
	*ret = (struct slave_open){
		.error = g.setup_error ?: w.error,
		.as_uid = g.as_uid,
		.as_gid = g.as_gid,
	};
	return 0;
}

int action_verify_unanswered(struct repair_action *a, int r)
{
	if (r == -ECANCELED)
		return action_outcome(
		    a, ACTION_INCONCLUSIVE,
		    "not verified: the verification child was stopped or killed by "
		    "another process %u times",
		    VERIFY_ATTEMPTS);
	return action_outcome(a, ACTION_INCONCLUSIVE,
			      "not verified: cannot run the verification child: %s", strerror(-r));
}

int action_verify_pty(struct repair_action *a, const struct repair_options *o, bool check_owner,
		      mode_t want_mode)
{
	struct pty_check c;
	int r = -ECANCELED;

	/* A child that was stopped or killed says nothing about the repair: try again, a few
	 * times, then say the repair is unverified rather than right or wrong. */
	for (unsigned i = 0; r == -ECANCELED && i < VERIFY_ATTEMPTS; i++)
		r = pty_check_as(PTMX_PATH, o->verify_uid, o->verify_gid, &c);
	if (r < 0)
		return action_verify_unanswered(a, r);
	if (c.error)
		return action_outcome(
		    a, ACTION_FAILED,
		    "verification: uid %u cannot allocate a pty: %s failed with %s",
		    (unsigned)c.as_uid, c.step ?: "?", strerrorname_np(c.error));
	if (check_owner && (c.gid != o->tty_gid || (c.mode & 0777) != (want_mode & 0777)))
		return action_outcome(
		    a, ACTION_FAILED,
		    "verification: a pty opened by uid %u got group %u and mode %04o, "
		    "expected group %u and mode %04o",
		    (unsigned)c.as_uid, (unsigned)c.gid, (unsigned)c.mode, (unsigned)o->tty_gid,
		    (unsigned)want_mode);
	return action_outcome(a, ACTION_DONE,
			      "verified: a pty opened by uid %u got group %u and mode %04o",
			      (unsigned)c.as_uid, (unsigned)c.gid, (unsigned)c.mode);
}
