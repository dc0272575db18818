/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A way to the journal that never blocks, for the daemon: a journald that stops reading (hung,
 * stopped, overloaded) must not stop audits. Entries go out in journald's native protocol over
 * a non-blocking datagram socket connected to its socket; what the socket cannot take now waits
 * in a bounded queue, sent when the socket is writable again (the owner polls journal_queue_fd()
 * for EPOLLOUT while journal_queue_pending()); what does not fit the queue is dropped and
 * counted. Nothing here logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/macro.h"

/* Entries that may wait for a journald that does not read: a burst of transitions fits. */
#define JOURNAL_QUEUE_MAX 1024

struct journal_queue;

int journal_queue_new(const char *socket_path, size_t max_entries, struct journal_queue **ret);
struct journal_queue *journal_queue_free(struct journal_queue *q);
DEFINE_POINTER_CLEANUP(struct journal_queue, journal_queue_free)

/* Send one entry ("KEY=value" fields), or queue it behind those waiting. 0 when sent or queued,
 * -ENOBUFS when the queue was full and it was dropped, another -errno when journald refused it
 * (it is dropped then too). */
int journal_queue_send(struct journal_queue *q, const struct iovec *fields, size_t n);
/* Send what waits, until the socket would block. The number of entries still waiting. */
size_t journal_queue_flush(struct journal_queue *q);

int journal_queue_fd(const struct journal_queue *q);
size_t journal_queue_pending(const struct journal_queue *q);
uint64_t journal_queue_dropped(const struct journal_queue *q);
