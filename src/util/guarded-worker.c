/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The guarded worker (util/guarded-child.h): one guarded process serving many requests over a
 * socket pair, each under its own deadline. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/guard-internal.h"
#include "util/guarded-child.h"
#include "util/macro.h"

/* The worker's side of a request and of an answer: a datagram each. */
struct wire_request {
	uint64_t seq;
	uint32_t answer_size;
	unsigned char data[GUARD_REQUEST_MAX];
};

struct wire_answer {
	uint64_t seq;
	int32_t setup_error;
	int32_t setup_step;
	unsigned char answer[GUARD_ANSWER_MAX];
};

struct guarded_worker {
	pid_t pid; /* 0: no worker */
	int sock;  /* our end of the pair; the other is the worker's alone */
	/* What it was started as, and for. */
	uid_t uid;
	gid_t gid;
	void (*work)(int fd, const void *request, void *answer);
	/* The request out, if any. */
	bool pending;
	bool lost; /* it could not be handed over: the worker died meanwhile */
	uint64_t seq, deadline;
	size_t answer_size;
};

/* In the worker: the socket as 0, 1 and 2; nothing else. Everything a request hands over or its
 * work opens is then above 2, closed in one call. Not even the caller's standard error: a worker
 * killed while it waits on a FUSE daemon that will not answer cannot die, is left behind, and
 * would keep the caller's pipe open (whoever reads the caller's errors would wait for its end
 * as long), or count among the holders of the caller's terminal. A sanitizer's report in it is
 * lost: its request ends cancelled. */
static void keep_only(int sock)
{
	if (sock != 0)
		(void)dup2(sock, 0);
	(void)dup2(0, 1);
	(void)dup2(0, 2);
	(void)close_range(3, ~0U, 0);
}

/* The worker: guarded like the child above, then one request after the other until the caller
 * closes its end (or kills it). A worker that could not drop its privileges says so to the first
 * request and exits. */
_Noreturn static void worker_main(const struct guarded_worker *w, int sock, pid_t parent)
{
	int step, setup_errno = 0;

	/* Nothing of the parent's but the socket. */
	keep_only(sock);
	sock = 0;
	step = guard_process(w->uid, w->gid, parent);
	if (step != SETUP_NONE)
		setup_errno = errno ?: EIO;
	for (;;) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} control;
		struct wire_request q = { 0 };
		struct wire_answer a;
		struct iovec iov = { .iov_base = &q, .iov_len = sizeof(q) };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = &control,
				     .msg_controllen = sizeof(control) };
		size_t head = offsetof(struct wire_answer, answer);
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		int fd = -1;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)offsetof(struct wire_request, data))
			_exit(0); /* the caller is done (or the request makes no sense) */
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len == CMSG_LEN(sizeof(int)))
				memcpy(&fd, CMSG_DATA(c), sizeof(int));
		memset(&a, 0, sizeof(a));
		a.seq = q.seq;
		if (step != SETUP_NONE) {
			a.setup_error = setup_errno;
			a.setup_step = step;
		} else if (q.answer_size <= sizeof(a.answer))
			w->work(fd, q.data, a.answer);
		/* Whatever the request handed us and the work opened is closed before it is
		 * answered: all of it is above 2. */
		(void)close_range(3, ~0U, 0);
		if (q.answer_size > sizeof(a.answer) ||
		    send(sock, &a, head + q.answer_size, MSG_NOSIGNAL) < 0 || step != SETUP_NONE)
			_exit(0);
	}
}

int guarded_worker_new(struct guarded_worker **ret)
{
	struct guarded_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->sock = -EBADF;
	*ret = w;
	return 0;
}

/* Kill the worker (our euid is its real uid: no CAP_KILL needed) and reap it. */
static void worker_stop(struct guarded_worker *w)
{
	int saved_errno = errno;

	if (w->pid > 0) {
		/* One waiting on a FUSE daemon that will not answer cannot die yet: left behind. */
		int pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);

		if (!guard_kill_or_leave(w->pid, &pidfd))
			while (waitid(P_PID, (id_t)w->pid, &(siginfo_t){ 0 }, WEXITED) < 0 &&
			       errno == EINTR)
				;
		if (pidfd >= 0)
			close(pidfd);
	}
	if (w->sock >= 0)
		close(w->sock);
	w->pid = 0;
	w->sock = -EBADF;
	w->pending = false;
	errno = saved_errno;
}

struct guarded_worker *guarded_worker_free(struct guarded_worker *w)
{
	if (w) {
		worker_stop(w);
		free(w);
	}
	return NULL;
}

/* A fork, not a clone sharing our memory: it runs while we go on, with an errno, a malloc and a
 * sanitizer state of its own. Every signal blocked across the fork and in it: no handler of ours
 * ever runs there. */
static int worker_start(struct guarded_worker *w, const struct guarded_request *q)
{
	sigset_t all, saved_mask;
	pid_t parent = getpid(), pid;
	int sv[2], saved_errno;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	w->uid = q->uid;
	w->gid = q->gid;
	w->work = q->work;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved_mask);
	pid = fork();
	if (pid == 0)
		worker_main(w, sv[1], parent);
	saved_errno = errno;
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	/* Its end is its alone: when it dies, ours reads end of file. */
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -saved_errno;
	}
	w->pid = pid;
	w->sock = sv[0];
	return 0;
}

/* A worker running as another user, or for another work, is no worker for q. */
static void worker_stop_unfit(struct guarded_worker *w, const struct guarded_request *q)
{
	if (w->pid > 0 && (w->uid != q->uid || w->gid != q->gid || w->work != q->work))
		worker_stop(w);
}

int guarded_worker_start(struct guarded_worker *w, const struct guarded_request *q)
{
	if (w->pending)
		return -EBUSY;
	worker_stop_unfit(w, q);
	return w->pid > 0 ? 0 : worker_start(w, q);
}

static int worker_send(struct guarded_worker *w, const struct guarded_request *q)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} control = { 0 };
	struct wire_request m = { .seq = w->seq, .answer_size = (uint32_t)q->answer_size };
	struct iovec iov = { .iov_base = &m,
			     .iov_len = offsetof(struct wire_request, data) + q->request_size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (q->request_size > 0)
		memcpy(m.data, q->request, q->request_size);
	if (q->fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = &control;
		mh.msg_controllen = sizeof(control);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &q->fd, sizeof(int));
	}
	while (sendmsg(w->sock, &mh, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int worker_collect(struct guarded_worker *w, void *answer, struct guarded_result *ret);

static int worker_submit(struct guarded_worker *w, const struct guarded_request *q)
{
	int r;

	if (q->answer_size > GUARD_ANSWER_MAX || q->request_size > GUARD_REQUEST_MAX)
		return -EINVAL;
	if (w->pending) {
		unsigned char dropped[GUARD_ANSWER_MAX];
		struct guarded_result g;

		(void)worker_collect(w, dropped, &g);
	}
	worker_stop_unfit(w, q);
	w->seq++;
	w->lost = false;
	for (unsigned attempt = 0;; attempt++) {
		if (w->pid <= 0 && (r = worker_start(w, q)) < 0)
			return r;
		r = worker_send(w, q);
		if (r >= 0)
			break;
		/* EPIPE, ECONNRESET: it died since the last request (killed by someone): once
		 * more with a new one; then it counts as a worker that died without answering. */
		worker_stop(w);
		if (r != -EPIPE && r != -ECONNRESET)
			return r;
		if (attempt > 0) {
			w->lost = true;
			break;
		}
	}
	w->pending = true;
	w->answer_size = q->answer_size;
	w->deadline = now_usec(CLOCK_MONOTONIC) + q->deadline_usec;
	return 0;
}

static int worker_collect(struct guarded_worker *w, void *answer, struct guarded_result *ret)
{
	size_t head = offsetof(struct wire_answer, answer);
	struct wire_answer a;

	if (!w->pending)
		return -ENOENT;
	w->pending = false;
	if (w->lost)
		return -ECANCELED;
	for (bool first = true;; first = false) {
		struct pollfd p = { .fd = w->sock, .events = POLLIN };
		uint64_t now;
		ssize_t n;
		int r;

		/* The answer is there already, most of the time (the caller was busy meanwhile): it
		 * counts, even past the deadline. */
		if (first) {
			n = recv(w->sock, &a, sizeof(a), MSG_DONTWAIT);
			if (n >= 0 || (errno != EAGAIN && errno != EINTR))
				goto received;
		}
		now = now_usec(CLOCK_MONOTONIC);
		r = poll(&p, 1,
			 now >= w->deadline
			     ? 0
			     : (int)((w->deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			worker_stop(w);
			return r;
		}
		if (r == 0) {
			if (now_usec(CLOCK_MONOTONIC) < w->deadline)
				continue;
			/* Stopped, or hung: SIGKILL ends a stopped one too. */
			worker_stop(w);
			return -ECANCELED;
		}
		n = recv(w->sock, &a, sizeof(a), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
	received:
		/* End of file: it died without answering (killed, or worse). */
		if (n < (ssize_t)head || (size_t)n != head + w->answer_size) {
			worker_stop(w);
			return -ECANCELED;
		}
		if (a.seq == w->seq)
			break;
		/* The answer to an earlier request, dropped: not this one's. */
	}
	memcpy(answer, a.answer, w->answer_size);
	*ret = (struct guarded_result){
		.as_uid = w->uid,
		.as_gid = w->gid,
		.setup_error = a.setup_error,
		.setup_step = guard_setup_step_name(a.setup_step),
	};
	/* A worker that could not set itself up exits after saying so. */
	if (a.setup_error)
		worker_stop(w);
	return 0;
}

/* Neither changes errno: the caller's, as guarded_child_run() keeps it. */
int guarded_worker_submit(struct guarded_worker *w, const struct guarded_request *q)
{
	int saved_errno = errno, r = worker_submit(w, q);

	errno = saved_errno;
	return r;
}

int guarded_worker_collect(struct guarded_worker *w, void *answer, struct guarded_result *ret)
{
	int saved_errno = errno, r = worker_collect(w, answer, ret);

	errno = saved_errno;
	return r;
}

int guarded_worker_request(struct guarded_worker *w, const struct guarded_request *q, void *answer,
			   struct guarded_result *ret)
{
	int r = guarded_worker_submit(w, q);

	return r < 0 ? r : guarded_worker_collect(w, answer, ret);
}
