/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "report/journal-queue.h"
#include "util/macro.h"

struct entry {
	char *data;
	size_t size;
};

struct journal_queue {
	int fd;
	struct sockaddr_un addr;
	struct entry *entries; /* a ring of max entries */
	size_t max, head, n;
	uint64_t dropped;
};

static int connect_socket(struct journal_queue *q)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* Connected, so that poll() says when journald has room again. */
	if (connect(fd, (struct sockaddr *)&q->addr, sizeof(q->addr)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (q->fd >= 0)
		close(q->fd);
	q->fd = fd;
	return 0;
}

int journal_queue_new(const char *socket_path, size_t max_entries, struct journal_queue **ret)
{
	_cleanup_(journal_queue_freep) struct journal_queue *q = calloc(1, sizeof(*q));
	int r;

	if (!q)
		return -ENOMEM;
	q->fd = -EBADF;
	if (strlen(socket_path) >= sizeof(q->addr.sun_path))
		return -ENAMETOOLONG;
	q->addr.sun_family = AF_UNIX;
	strcpy(q->addr.sun_path, socket_path);
	q->max = max_entries ?: 1;
	q->entries = calloc(q->max, sizeof(struct entry));
	if (!q->entries)
		return -ENOMEM;
	r = connect_socket(q);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(q);
	return 0;
}

struct journal_queue *journal_queue_free(struct journal_queue *q)
{
	if (!q)
		return NULL;
	for (size_t i = 0; i < q->n; i++)
		free(q->entries[(q->head + i) % q->max].data);
	free(q->entries);
	if (q->fd >= 0)
		close(q->fd);
	free(q);
	return NULL;
}

/* The native protocol: KEY=value\n, or, for a value with a newline in it, KEY\n, the value's
 * length as 64-bit little-endian, the value and \n. */
static int serialize(const struct iovec *fields, size_t n, struct entry *ret)
{
	size_t size = 0, off = 0;
	char *buf;

	for (size_t i = 0; i < n; i++)
		size += fields[i].iov_len + 1 + 8 + 1;
	buf = malloc(size ?: 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *f = fields[i].iov_base, *eq = memchr(f, '=', fields[i].iov_len);
		size_t len = fields[i].iov_len;

		if (!eq)
			continue; /* not a field */
		if (!memchr(f, '\n', len)) {
			memcpy(buf + off, f, len);
			off += len;
		} else {
			size_t klen = (size_t)(eq - f), vlen = len - klen - 1;
			uint64_t le = htole64((uint64_t)vlen);

			memcpy(buf + off, f, klen);
			off += klen;
			buf[off++] = '\n';
			memcpy(buf + off, &le, sizeof(le));
			off += sizeof(le);
			memcpy(buf + off, eq + 1, vlen);
			off += vlen;
		}
		buf[off++] = '\n';
	}
	*ret = (struct entry){ .data = buf, .size = off };
	return 0;
}

/* 1 sent, 0 would block, or -errno (journald refused it for good). */
static int send_entry(struct journal_queue *q, const struct entry *e)
{
	for (int attempt = 0;; attempt++) {
		if (send(q->fd, e->data, e->size, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return 1;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;
		/* journald restarted: its socket is a new one. Connect again, once. */
		if ((errno == ECONNREFUSED || errno == ENOTCONN || errno == ECONNRESET) &&
		    attempt == 0 && connect_socket(q) >= 0)
			continue;
		return -errno;
	}
}

size_t journal_queue_flush(struct journal_queue *q)
{
	while (q->n > 0) {
		struct entry *e = &q->entries[q->head];
		int r = send_entry(q, e);

		if (r == 0)
			break;
		if (r < 0)
			q->dropped++;
		free(e->data);
		*e = (struct entry){ 0 };
		q->head = (q->head + 1) % q->max;
		q->n--;
	}
	return q->n;
}

int journal_queue_send(struct journal_queue *q, const struct iovec *fields, size_t n)
{
	struct entry e;
	int r;

	r = serialize(fields, n, &e);
	if (r < 0) {
		q->dropped++;
		return r;
	}
	/* In order: behind what waits, if anything does. */
	if (journal_queue_flush(q) == 0) {
		r = send_entry(q, &e);
		if (r != 0) {
			free(e.data);
			if (r < 0)
				q->dropped++;
			return r < 0 ? r : 0;
		}
	}
	if (q->n == q->max) {
		free(e.data);
		q->dropped++;
		return -ENOBUFS;
	}
	q->entries[(q->head + q->n) % q->max] = e;
	q->n++;
	return 0;
}

int journal_queue_fd(const struct journal_queue *q)
{
	return q->fd;
}

size_t journal_queue_pending(const struct journal_queue *q)
{
	return q->n;
}

uint64_t journal_queue_dropped(const struct journal_queue *q)
{
	return q->dropped;
}
