/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A short piece of work done in a child as an unprivileged user, safe from other processes of
 * that user: what repair's verification runs in; and the same guarded process as a worker
 * serving many requests (below): what the allocation probes of a run are made in.
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
 * but 0, 1 and 2 (and the one the work is handed, if any). (Under valgrind, which runs no such
 * clone, it is a fork sharing only the answer.) The work therefore runs in the caller's address
 * space with the caller's thread-local storage: it must only make system calls and lock-free
 * library calls (no malloc, no stdio, no glibc set*id(), which signal every thread of the caller).
 * errno is the caller's too; while the child runs the caller blocks every signal and makes no call
 * that can fail, so the two never write it at once, and the caller's errno is restored afterwards.
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
 *
 * A guarded worker (guarded_worker_*) is the same guarded process serving many requests: what the
 * allocation probes of --all-namespaces run in. It is one fork of the caller
 * (not a clone sharing its memory: it works while the caller goes on, and must not share its
 * errno, its malloc or a sanitizer's state), started at the first request, with exactly the
 * credentials, capabilities and flags above; of the caller's descriptors it keeps only its end of
 * a SOCK_SEQPACKET socket pair (as 0, 1 and 2: a worker left behind must hold no pipe or terminal
 * of the caller's). Each request is one datagram on it, with at most
 * one descriptor (SCM_RIGHTS: a namespace's root, say); each answer is one datagram back, numbered
 * like its request. Everything the request handed over and the work opened is closed before the
 * answer is sent. The work runs in the worker's own copy of the caller's memory, so it must not
 * rely on anything the caller changes after the worker started, and runs with every signal
 * blocked. While a request is out, its answer is awaited on the socket (poll() only when it is not
 * there yet) until the request's deadline; the socket's end of file says the worker died (its end
 * is the worker's alone). A worker stopped or hung past the deadline, killed, or gone without
 * answering is killed and reaped (or, when it cannot die, waiting on a FUSE daemon that read the
 * request and will not answer, left behind and reaped later), the request reported -ECANCELED, and
 * the next request starts a new worker; so does the next request after a worker that died between
 * requests. The bounding-set loop and the other prctl calls of the drop are thus paid once per
 * worker, not once per request.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/macro.h"

/* The most an answer may hold. */
#define GUARD_ANSWER_MAX 1024

struct guarded_child {
	uid_t uid;    /* the effective uid the work runs as (not 0) */
	gid_t gid;    /* its real, effective and saved gid */
	int mntns_fd; /* >= 0: setns(CLONE_NEWNS) into it first; -1: stay */
	int root_fd;  /* >= 0: then make it the root and the working directory; -1: stay */
	int keep_fd;  /* >= 3: left open for the work (all others above 2 are closed); -1: none */
	/* cgroup.procs files (opened for writing) the child joins first, by writing "0" to each,
	 * while it is still privileged: the cgroups whose device rules its work must meet. Entries
	 * below 0 are skipped; n_join_fds 0: none. */
	const int *join_fds;
	unsigned n_join_fds;
	/* A fork with memory of its own rather than a clone sharing ours (the answer and whatever
	 * userdata points to in MAP_SHARED memory are what is shared): for work that may block
	 * where even SIGKILL cannot end it at once (a request a FUSE daemon has taken and does
	 * not answer). Past the deadline such a child is killed and, when it does not die within
	 * a moment, left behind (reaped by a later run): the caller never waits on it. Costs a
	 * fork (page tables copied). */
	bool separate;
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
	 * zeroes), and what it was doing: "cgroup", "namespace", "root" or "privileges". */
	int setup_error;
	const char *setup_step;
};

/* Run c->work in a guarded child. Returns 0 when the child answered (answer filled, or
 * ret->setup_error set); -ECANCELED when it was stopped past the deadline, killed, or died
 * without answering (the caller may try again); another negative errno when it could not be
 * started. */
int guarded_child_run(const struct guarded_child *c, void *answer, struct guarded_result *ret);

/* The most a request to a worker may hold. */
#define GUARD_REQUEST_MAX 256

struct guarded_worker;

struct guarded_request {
	uid_t uid; /* as for struct guarded_child; a worker running as another */
	gid_t gid; /* user, or another work, is stopped and a new one started */
	/* In the worker, privileges dropped: fill answer (answer_size bytes, zeroed before) from
	 * the request's bytes and its descriptor (-1: none), which is closed afterwards. */
	void (*work)(int fd, const void *request, void *answer);
	int fd; /* >= 0: handed to the worker with the request (ours stays open) */
	const void *request;
	size_t request_size;	/* at most GUARD_REQUEST_MAX */
	size_t answer_size;	/* at most GUARD_ANSWER_MAX */
	uint64_t deadline_usec; /* from submission to answer */
};

/* A worker with no process yet: one starts at the first request. */
int guarded_worker_new(struct guarded_worker **ret);
/* Kill and reap its process, if any. NULL-safe. */
struct guarded_worker *guarded_worker_free(struct guarded_worker *w);
DEFINE_POINTER_CLEANUP(struct guarded_worker, guarded_worker_free)

/* Start the worker q would be served by now, with no request: a process forked early, while
 * ours is small, copies little and makes few copy-on-write faults later. 0 when one runs
 * already; -EBUSY with a request out. */
int guarded_worker_start(struct guarded_worker *w, const struct guarded_request *q);
/* Hand q to the worker, starting one when there is none (or it runs as another user, or was
 * found gone), and return at once: the worker works while the caller goes on. One request is
 * out at a time: the answer of one still out is awaited and dropped first. 0, or a negative
 * errno when no worker could be started or given the request (the caller may report it as
 * guarded_child_run() failing to start). q and what it points to need not outlive the call. */
int guarded_worker_submit(struct guarded_worker *w, const struct guarded_request *q);
/* The answer to the request out: as guarded_child_run() (0 with answer filled or
 * ret->setup_error set; -ECANCELED when the worker was stopped or hung past the deadline,
 * killed, or died without answering: it is gone, the next submission starts a new one).
 * -ENOENT when no request is out. */
int guarded_worker_collect(struct guarded_worker *w, void *answer, struct guarded_result *ret);
/* Both. */
int guarded_worker_request(struct guarded_worker *w, const struct guarded_request *q, void *answer,
			   struct guarded_result *ret);
