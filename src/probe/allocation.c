/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "probe/allocation.h"
#include "util/guarded-child.h"
#include "util/macro.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

struct answer {
	unsigned n_steps; /* steps taken; the last failed when error or mismatch */
	int error;
	bool mismatch;
	int index; /* -1: unknown */
	char ptsname[64];
};

/* In the guarded child, as the user: each step as a program takes it. Returns false (with
 * errno) when the step failed. */
static bool step(struct answer *a, enum alloc_step s, bool ok)
{
	a->n_steps = (unsigned)s + 1;
	if (!ok)
		a->error = errno ?: EIO;
	return ok;
}

static void allocate(void *userdata, void *answer)
{
	struct answer *a = answer;
	struct stat by_name, peer;
	int master, slave, p;

	(void)userdata;
	errno = 0;
	a->index = -1;
	master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (!step(a, ALLOC_STEP_OPEN_PTMX, master >= 0))
		return;
	/* Not a step of its own (ptsname() asks the same): which /dev/pts/N this probe makes and
	 * removes, whatever fails next. */
	if (ioctl(master, TIOCGPTN, &p) < 0)
		p = -1;
	a->index = p;
	errno = 0;
	if (!step(a, ALLOC_STEP_GRANTPT, grantpt(master) == 0) ||
	    !step(a, ALLOC_STEP_UNLOCKPT, unlockpt(master) == 0))
		return;
	errno = ptsname_r(master, a->ptsname, sizeof(a->ptsname));
	if (!step(a, ALLOC_STEP_PTSNAME, errno == 0)) {
		a->ptsname[0] = 0;
		return;
	}
	slave = open(a->ptsname, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (!step(a, ALLOC_STEP_OPEN_SLAVE, slave >= 0 && fstat(slave, &by_name) == 0))
		return;
	p = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (!step(a, ALLOC_STEP_PEER, p >= 0 && fstat(p, &peer) == 0))
		return;
	/* The same pty: one devpts instance (st_dev) and one index (st_rdev); two instances
	 * number their slaves alike. */
	a->n_steps = ALLOC_STEP_COMPARE + 1;
	a->mismatch = !S_ISCHR(by_name.st_mode) || by_name.st_dev != peer.st_dev ||
		      by_name.st_rdev != peer.st_rdev;
	/* Every descriptor closes as the child exits. */
}

int probe_allocation(const struct alloc_options *o, struct alloc_probe *ret)
{
	struct guarded_child c = {
		.uid = o->uid,
		.gid = o->gid,
		.mntns_fd = o->mntns_fd,
		.root_fd = o->root_fd,
		.deadline_usec = ALLOC_DEADLINE_USEC,
		.work = allocate,
		.answer_size = sizeof(struct answer),
	};
	struct guarded_result g = { 0 };
	struct answer a = { 0 };
	int r = -ECANCELED;

	/* A child stopped or killed by someone says nothing about ptys: try again, a few times,
	 * then say so rather than report an outcome. */
	for (unsigned i = 0; r == -ECANCELED && i < ALLOC_ATTEMPTS; i++)
		r = guarded_child_run(&c, &a, &g);
	if (r == -ECANCELED) {
		*ret = (struct alloc_probe){ .status = ALLOC_INTERFERED,
					     .uid = o->uid,
					     .gid = o->gid };
		return 0;
	}
	if (r < 0)
		return r;
	*ret = (struct alloc_probe){ .uid = g.as_uid, .gid = g.as_gid, .index = -1 };
	if (g.setup_error) {
		ret->status = ALLOC_SETUP_FAILED;
		ret->error = g.setup_error;
		snprintf(ret->setup_step, sizeof(ret->setup_step), "%s",
			 g.setup_step ?: "privileges");
		return 0;
	}
	ret->status = ALLOC_PERFORMED;
	ret->n_steps = a.n_steps > _ALLOC_STEP_MAX ? _ALLOC_STEP_MAX : a.n_steps;
	ret->error = a.error;
	ret->mismatch = a.mismatch;
	ret->index = a.n_steps > 0 ? a.index : -1;
	a.ptsname[sizeof(a.ptsname) - 1] = 0;
	memcpy(ret->ptsname, a.ptsname, sizeof(ret->ptsname));
	return 0;
}
