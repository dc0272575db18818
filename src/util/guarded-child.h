/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A short piece of work done in a child as an unprivileged user, safe from other processes of
 * that user: what repair's verification and the allocation probe run in.
 *
 * The child keeps its parent's real and saved uid (0 for root; for a caller that is another
 * user with capabilities, that user) and takes the user asked for as its effective uid, hence
 * its filesystem uid: what it opens, and the owner of a pty it allocates, are exactly that
 * user's. Its real, effective and saved gid are the user's gid, with no supplementary groups.
 * It then drops every capability (effective, permitted, inheritable, ambient, and the bounding
 * set when the caller may change it), sets no_new_privs, and is not dumpable. A process may
 * signal another only when its real or effective uid is the target's real or saved uid, and
 * trace it only when all of them match: so processes of the user the work runs as cannot stop,
 * kill or inspect the child, while the parent (whose effective uid is the child's real one)
 * can kill it past its deadline without CAP_KILL. Whatever the number of processes, there is
 * nothing to look up before starting it.
 *
 * The child is a clone(CLONE_VM) of the caller on a stack of its own: it shares the caller's
 * memory (no page tables copied, the cost of a fork several times over) but not its
 * descriptors, filesystem context or credentials, so it may enter a mount namespace and a
 * root (both as file descriptors) before dropping its privileges; it closes every descriptor
 * but 0, 1 and 2. (Under valgrind, which runs no such clone, it is a fork sharing only the
 * answer.) The work therefore runs in the caller's address space with the caller's
 * thread-local storage: it must only make system calls and lock-free library calls (no
 * malloc, no stdio, no glibc set*id(), which signal every thread of the caller). errno is the
 * caller's too; while the child runs the caller blocks every signal and makes no call that can
 * fail, so the two never write it at once, and the caller's errno is restored afterwards.
 * Changing its effective uid makes the shared memory not dumpable: the caller's dumpable flag
 * is restored once the child is gone.
 *
 * The answer is written into memory the two share, and counts only when the child marked it
 * complete and then exited normally. Every wait on it has a deadline (poll on a pidfd): a child
 * that is stopped or hung past the deadline is killed, and one that dies without answering is
 * reported as interfered with (-ECANCELED), never as an outcome. The child exits after
 * answering, so whatever it opened is closed.
 *
 * Returns negative errno and does not log.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The most an answer may hold. */
#define GUARD_ANSWER_MAX 1024

struct guarded_child {
	uid_t uid;    /* the effective uid the work runs as (not 0) */
	gid_t gid;    /* its real, effective and saved gid */
	int mntns_fd; /* >= 0: setns(CLONE_NEWNS) into it first; -1: stay */
	int root_fd;  /* >= 0: then make it the root and the working directory; -1: stay */
	uint64_t deadline_usec; /* from clone to exit */
	/* In the child, privileges dropped: fill answer (answer_size bytes, zeroed before). See
	 * above for what it may call. */
	void (*work)(void *userdata, void *answer);
	void *userdata;
	size_t answer_size; /* at most GUARD_ANSWER_MAX */
};

struct guarded_result {
	uid_t as_uid; /* the effective ids the work ran (or was to run) as */
	gid_t as_gid;
	/* 0; or the errno with which the child could not start its work (the answer is then
	 * zeroes), and what it was doing: "namespace", "root" or "privileges". */
	int setup_error;
	const char *setup_step;
};

/* Run c->work in a guarded child. Returns 0 when the child answered (answer filled, or
 * ret->setup_error set); -ECANCELED when it was stopped past the deadline, killed, or died
 * without answering (the caller may try again); another negative errno when it could not be
 * started. */
int guarded_child_run(const struct guarded_child *c, void *answer, struct guarded_result *ret);
