/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon/log-once.h"
#include "daemon/policy.h"
#include "daemon/watches.h"
#include "probe/probe.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/string-table.h"
#include "util/string-util.h"
#include "util/strv.h"

/* Entries of /dev that matter: the multiplexer, and the directory its devpts is found in. (The
 * /dev of another mount namespace is watched otherwise: daemon/nsfollow-watch.c.) */
#define DEV_WATCH_MASK                                                                             \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR |            \
	 IN_EXCL_UNLINK)
#define PTS_WATCH_MASK DEV_WATCH_MASK
/* The root: a change of mode or owner of itself or of /dev (pty-path-blocked). */
#define ROOT_WATCH_MASK (IN_ATTRIB | IN_ONLYDIR)
/* A helper directory: a file appearing, changing mode or owner, being written or going away. */
#define HELPER_WATCH_MASK (DEV_WATCH_MASK | IN_CLOSE_WRITE)

/* What a failure to watch is journaled as (once each, daemon/log-once.h). */
enum watch_failure {
	WATCH_FAILURE_DEV,
	WATCH_FAILURE_PTS,
	WATCH_FAILURE_HELPERS,
	_WATCH_FAILURE_MAX,
};

struct watch {
	const char *path;
	uint32_t mask;
	enum watch_failure failure;
	int wd;
	dev_t dev;
	ino_t ino;
};

struct dev_watches {
	sd_event *event;
	sd_event_source *source;
	dev_watches_fn on_change;
	void *userdata;
	int fd;
	struct watch root_watch, dev_watch, pts_watch;
	/* The serving instance's directory when /dev/ptmx leads elsewhere than /dev/pts: its
	 * slaves come and go there. serving_watch.path is serving_path, or NULL. */
	struct watch serving_watch;
	char *serving_path;
	/* The directories where a setuid pt_chown would be installed (setuid_helper_dirs()). */
	char **helper_dirs;
	struct watch *helper_watches;
	size_t n_helper_watches;
	/* The /dev/pts/N entries the allocation probe of our own audits made and removed: their
	 * inotify events are ours, not a change to audit. */
	struct probe_echo {
		unsigned index;
		unsigned creates, deletes;
	} probe_echoes[4];
	struct log_once failures[_WATCH_FAILURE_MAX];
	uint64_t wakeups;
};

int dev_watches_new(sd_event *event, dev_watches_fn on_change, void *userdata,
		    struct dev_watches **ret)
{
	struct dev_watches *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->event = sd_event_ref(event);
	w->on_change = on_change;
	w->userdata = userdata;
	w->fd = -EBADF;
	w->root_watch = (struct watch){
		.path = "/", .mask = ROOT_WATCH_MASK, .failure = WATCH_FAILURE_DEV, .wd = -1
	};
	w->dev_watch = (struct watch){
		.path = "/dev", .mask = DEV_WATCH_MASK, .failure = WATCH_FAILURE_DEV, .wd = -1
	};
	w->pts_watch = (struct watch){
		.path = "/dev/pts", .mask = PTS_WATCH_MASK, .failure = WATCH_FAILURE_PTS, .wd = -1
	};
	w->serving_watch =
	    (struct watch){ .mask = PTS_WATCH_MASK, .failure = WATCH_FAILURE_PTS, .wd = -1 };
	*ret = w;
	return 0;
}

/* (Re)watch a directory when what its path leads to changed (a mount on top, a new /dev). */
static void watch_update(struct dev_watches *w, struct watch *x)
{
	struct stat st;
	int wd;

	if (w->fd < 0)
		return;
	if (stat(x->path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		if (x->wd >= 0)
			(void)inotify_rm_watch(w->fd, x->wd);
		x->wd = -1;
		return;
	}
	if (x->wd >= 0 && st.st_dev == x->dev && st.st_ino == x->ino)
		return;
	wd = inotify_add_watch(w->fd, x->path, x->mask);
	if (wd < 0) {
		log_once_fail(&w->failures[x->failure], "Failed to watch %s: %m", x->path);
		return;
	}
	log_once_ok(&w->failures[x->failure]);
	if (x->wd >= 0 && x->wd != wd)
		(void)inotify_rm_watch(w->fd, x->wd);
	x->wd = wd;
	x->dev = st.st_dev;
	x->ino = st.st_ino;
}

void dev_watches_update(struct dev_watches *w)
{
	watch_update(w, &w->root_watch);
	watch_update(w, &w->dev_watch);
	watch_update(w, &w->pts_watch);
	if (w->serving_watch.path)
		watch_update(w, &w->serving_watch);
	for (size_t i = 0; i < w->n_helper_watches; i++)
		watch_update(w, &w->helper_watches[i]);
}

static void helper_watches_done(struct dev_watches *w)
{
	for (size_t i = 0; i < w->n_helper_watches; i++)
		if (w->fd >= 0 && w->helper_watches[i].wd >= 0)
			(void)inotify_rm_watch(w->fd, w->helper_watches[i].wd);
	free(w->helper_watches);
	w->helper_watches = NULL;
	w->n_helper_watches = 0;
	w->helper_dirs = strv_free(w->helper_dirs);
}

/* Watch where a pt_chown would be installed, chmodded or removed: nothing else tells the
 * daemon of a package putting a setuid helper in place. */
void dev_watches_find_helpers(struct dev_watches *w)
{
	int r;

	helper_watches_done(w);
	if (w->fd < 0)
		return;
	r = setuid_helper_dirs(&w->helper_dirs);
	if (r >= 0 && w->helper_dirs) {
		w->n_helper_watches = strv_length(w->helper_dirs);
		w->helper_watches = calloc(w->n_helper_watches, sizeof(struct watch));
		if (!w->helper_watches)
			r = -ENOMEM;
	}
	if (r < 0) {
		log_once_fail(&w->failures[WATCH_FAILURE_HELPERS],
			      "Failed to watch for pt_chown: %s", strerror(-r));
		w->n_helper_watches = 0;
		return;
	}
	for (size_t i = 0; i < w->n_helper_watches; i++)
		w->helper_watches[i] = (struct watch){
			.path = w->helper_dirs[i],
			.mask = HELPER_WATCH_MASK,
			.failure = WATCH_FAILURE_HELPERS,
			.wd = -1,
		};
}

void dev_watches_expect_probe(struct dev_watches *w, const struct alloc_probe *p)
{
	struct probe_echo *slot = NULL;

	if (p->status != ALLOC_PERFORMED || p->index < 0)
		return;
	for (size_t i = 0; i < ELEMENTSOF(w->probe_echoes) && !slot; i++)
		if (w->probe_echoes[i].index == (unsigned)p->index &&
		    (w->probe_echoes[i].creates || w->probe_echoes[i].deletes))
			slot = &w->probe_echoes[i];
	for (size_t i = 0; i < ELEMENTSOF(w->probe_echoes) && !slot; i++)
		if (!w->probe_echoes[i].creates && !w->probe_echoes[i].deletes)
			slot = &w->probe_echoes[i];
	if (!slot) /* more probes unheard than slots: let the oldest go (one extra audit) */
		slot = &w->probe_echoes[0];
	if (slot->index != (unsigned)p->index)
		*slot = (struct probe_echo){ .index = (unsigned)p->index };
	slot->creates++;
	slot->deletes++;
}

/* Is e (of the /dev/pts watch) the echo of our own probe? Each expected event is taken once, in
 * order: a user's pty that gets the same index after ours is gone is seen. */
static bool probe_echo_consume(struct dev_watches *w, const struct inotify_event *e)
{
	unsigned index;

	if (!e->len || parse_uint(e->name, &index) < 0)
		return false;
	FOREACH_ARRAY (x, w->probe_echoes, ELEMENTSOF(w->probe_echoes)) {
		if (x->index != index || (!x->creates && !x->deletes))
			continue;
		if ((e->mask & IN_CREATE) && x->creates && x->creates >= x->deletes) {
			x->creates--;
			return true;
		}
		if ((e->mask & IN_DELETE) && x->deletes > x->creates) {
			x->deletes--;
			return true;
		}
		/* Between its creation and removal, a change of its owner or mode is ours too. */
		if ((e->mask & IN_ATTRIB) && x->deletes > x->creates)
			return true;
	}
	return false;
}

void dev_watches_follow_serving(struct dev_watches *w, const struct analysis *a)
{
	const struct mount_entry *e = analysis_serving_mount(a);
	const char *mp = e ? e->mountpoint : NULL;

	if (mp && streq(mp, "/dev/pts"))
		mp = NULL;
	if (streq_ptr(mp, w->serving_path))
		return;
	if (w->serving_watch.wd >= 0 && w->fd >= 0)
		(void)inotify_rm_watch(w->fd, w->serving_watch.wd);
	w->serving_watch.wd = -1;
	free(w->serving_path);
	w->serving_path = mp ? strdup(mp) : NULL;
	w->serving_watch.path = w->serving_path;
	if (w->serving_path) {
		watch_update(w, &w->serving_watch);
		/* The probe of this audit came and went before the watch: no echo of it will
		 * arrive there, and a user's pty of the same index must not pass for one. */
		memset(w->probe_echoes, 0, sizeof(w->probe_echoes));
		w->on_change(w->userdata, REASON_PTS);
	}
}

/* What one event asks an audit for (enum audit_reason), 0 for nothing. */
static unsigned event_reasons(struct dev_watches *w, const struct inotify_event *e)
{
	struct watch *dir_watches[] = { &w->root_watch, &w->dev_watch, &w->pts_watch,
					&w->serving_watch };
	unsigned reasons = 0;

	if (e->mask & IN_Q_OVERFLOW)
		reasons |= REASON_PTMX | REASON_PTS;
	else if ((e->wd == w->pts_watch.wd || e->wd == w->serving_watch.wd) &&
		 !probe_echo_consume(w, e))
		reasons |= REASON_PTS;
	else if (e->wd == w->dev_watch.wd && e->len && streq(e->name, "ptmx"))
		reasons |= REASON_PTMX;
	else if (e->wd == w->dev_watch.wd && e->len &&
		 (streq(e->name, "pts") || streq(e->name, "tty")))
		reasons |= REASON_PTS;
	/* A directory on the way to the ptys changed mode or owner. */
	else if ((e->wd == w->dev_watch.wd && !e->len && (e->mask & IN_ATTRIB)) ||
		 (e->wd == w->root_watch.wd && (e->mask & IN_ATTRIB) &&
		  (!e->len || streq(e->name, "dev"))))
		reasons |= REASON_PTS;
	for (size_t i = 0; i < w->n_helper_watches; i++)
		if (e->wd == w->helper_watches[i].wd &&
		    ((e->len && streq(e->name, PT_CHOWN_NAME)) || (e->mask & IN_IGNORED))) {
			if (e->mask & IN_IGNORED)
				w->helper_watches[i].wd = -1;
			reasons |= REASON_HELPER;
		}
	/* A watched directory went away (unmounted, removed): watch anew. The IN_IGNORED of a
	 * watch replaced here is no news. */
	if (e->mask & IN_IGNORED)
		FOREACH_ARRAY (x, dir_watches, ELEMENTSOF(dir_watches))
			if (e->wd == (*x)->wd) {
				(*x)->wd = -1;
				reasons |= REASON_PTS;
			}
	return reasons;
}

/* Every event queued, into *reasons; 0, or -errno when the queue cannot be read. */
static int read_events(struct dev_watches *w, unsigned *reasons)
{
	union {
		struct inotify_event ev;
		char raw[4096];
	} buf;

	*reasons = 0;
	for (;;) {
		ssize_t n = read(w->fd, &buf, sizeof(buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		for (char *p = buf.raw; p < buf.raw + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			*reasons |= event_reasons(w, e);
			p += sizeof(struct inotify_event) + e->len;
		}
	}
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct dev_watches *w = userdata;
	unsigned reasons;
	int r = read_events(w, &reasons);

	if (r < 0) {
		/* Still readable: carrying on would spin. Let the service manager restart the
		 * daemon. */
		log_error("Failed to read inotify events: %s", strerror(-r));
		return sd_event_exit(w->event, r);
	}
	if (reasons) {
		w->wakeups++;
		w->on_change(w->userdata, reasons);
	}
	return 0;
}

unsigned dev_watches_read_now(struct dev_watches *w)
{
	unsigned reasons;

	/* An error is the event loop's to meet at its next turn (the fd stays readable). */
	if (w->fd < 0 || read_events(w, &reasons) < 0)
		return 0;
	if (reasons)
		w->wakeups++;
	return reasons;
}

int dev_watches_start(struct dev_watches *w)
{
	int r;

	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		r = -errno;
		log_warning("Failed to create an inotify instance: %s", strerror(-r));
		return r;
	}
	r = sd_event_add_io(w->event, &w->source, w->fd, EPOLLIN, on_inotify, w);
	if (r >= 0)
		r = sd_event_source_set_description(w->source, "dev-inotify");
	if (r < 0) {
		w->source = sd_event_source_disable_unref(w->source);
		close(w->fd);
		w->fd = -EBADF;
		log_warning("Failed to watch /dev: %s", strerror(-r));
		return r;
	}
	dev_watches_find_helpers(w);
	dev_watches_update(w);
	return 0;
}

uint64_t dev_watches_wakeups(const struct dev_watches *w)
{
	return w->wakeups;
}

struct dev_watches *dev_watches_free(struct dev_watches *w)
{
	if (!w)
		return NULL;
	sd_event_source_disable_unref(w->source);
	helper_watches_done(w);
	if (w->fd >= 0)
		close(w->fd);
	free(w->serving_path);
	for (size_t i = 0; i < _WATCH_FAILURE_MAX; i++)
		log_once_ok(&w->failures[i]);
	sd_event_unref(w->event);
	free(w);
	return NULL;
}
