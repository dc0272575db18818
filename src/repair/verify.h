/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Repair's verification: what an unprivileged user gets now. A pty, and /dev/tty on it, are
 * asked of the allocation probe itself (probe/allocation.h: the one answer to "can a user get a
 * pty here"): it looks at /dev/ptmx with O_PATH and opens only a c 5:2 through that descriptor,
 * never blocking, in the namespace's cgroups (repair_options.verify_cgroup_fds), as the
 * verification user, in a guarded child with a deadline; for /dev/tty it takes the pty as the
 * controlling terminal of a session of its own and opens /dev/tty only once it is c 5:0. This
 * file reads its answer (action_verify_pty(), action_verify_tty(): repair/action.h).
 *
 * A slave given to its session's user is opened by that user as programs do, by its name; the
 * name is looked at with O_PATH first and opened only when it is still the pty slave repaired
 * (the same device and inode), through that descriptor (slave_open_as()).
 *
 * The children are guarded ones (util/guarded-child.h): their real and saved uid stay their
 * parent's, so processes of the user cannot signal or trace them; not dumpable, with a deadline;
 * one that is stopped or killed is reported as interfered with (-ECANCELED), never as an
 * outcome.
 *
 * Returns negative errno and does not log.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "util/guarded-child.h"

/* How long one verification child may take from its start to its exit. */
#define VERIFY_DEADLINE_USEC (3ULL * 1000000ULL)

struct slave_open {
	int error;	/* 0, or the errno of the open */
	bool not_slave; /* the name no longer leads to the slave repaired: not opened */
	uid_t as_uid;
	gid_t as_gid;
};

/* As uid/gid, open the slave at path (device dev, inode ino: what was repaired) by its name for
 * reading and writing (no controlling terminal taken): what gpg's pinentry or screen do with the
 * user's terminal. 0 when the child answered (*ret); -ECANCELED when it was stopped past the
 * deadline, killed, or died without answering (the caller may try again); another negative errno
 * when it could not be started. */
int slave_open_as(const char *path, dev_t dev, ino_t ino, uid_t uid, gid_t gid,
		  struct slave_open *ret);
