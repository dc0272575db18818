/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#include "report/journal-queue.h"
#include "report/journal.h"
#include "util/escape.h"
#include "util/json-util.h"
#include "util/parse.h"
#include "util/string-util.h"
#include "util/systemd-dl.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

int transition_priority(enum transition t, enum severity s)
{
	if (t == TRANSITION_RESOLVED || t == TRANSITION_REPAIRED)
		return 5; /* LOG_NOTICE */
	switch (s) {
	case SEVERITY_CRITICAL:
		return 2; /* LOG_CRIT */
	case SEVERITY_WARNING:
		return 4; /* LOG_WARNING */
	default:
		return 6; /* LOG_INFO */
	}
}

/* The daemon's queue (journal_use_queue()); NULL: libsystemd's blocking send, which the
 * one-shot commands are content with. */
static struct journal_queue *queue;

void journal_use_queue(struct journal_queue *q)
{
	queue = q;
}

int journal_open_queue(struct journal_queue **ret)
{
	return journal_queue_new(JOURNAL_SOCKET, JOURNAL_QUEUE_MAX, ret);
}

static int journal_sendv(const struct iovec *iov, size_t n)
{
	int r;

	if (queue)
		return journal_queue_send(queue, iov, n);
	r = systemd_dl_load(NULL);
	return r < 0 ? r : sd_journal_sendv(iov, (int)n);
}

/* journal_use_syslog(): entries of a moment without a journal socket go to syslog too. */
static bool to_syslog;

void journal_use_syslog(bool on)
{
	if (on && !to_syslog)
		openlog("ptsguard", LOG_PID, LOG_DAEMON);
	else if (!on && to_syslog)
		closelog();
	to_syslog = on;
}

bool journal_available(void)
{
	return access(JOURNAL_SOCKET, W_OK) == 0;
}

/* asprintf into a growing iovec array; the strings are freed by the caller. */
_printf_(3, 4) static int add_field(struct iovec *iov, size_t *n, const char *fmt, ...)
{
	char *s;

	FORMAT_VA(s, fmt);
	if (!s)
		return -ENOMEM;
	iov[*n].iov_base = s;
	iov[*n].iov_len = strlen(s);
	(*n)++;
	return 0;
}

/*
 * The words for people: MESSAGE=, and without a journal a line on standard error and, for the
 * daemon, syslog. A consumer finds a transition by its bracketed tag ("[STATE]" on standard
 * error, "[ptsguard check=...]" in syslog, where a journal's MESSAGE= may be forwarded too), so
 * whatever a name put in the words (the context, a mountpoint in the summary, the detail) is
 * escaped with its brackets (util/escape.h): the only tag in a line is the one written here.
 * stderr_line: standard error's layout, else MESSAGE='s.
 */
static char *transition_words(const struct transition_event *e, bool stderr_line)
{
	const struct finding *f = e->finding;
	enum transition t = e->transition;
	const char *state = transition_to_string(t), *sev = severity_to_string(f->severity);
	_cleanup_free_ char *summary = cescape_brackets(f->summary ?: f->check->summary),
			    *detail = e->detail ? cescape_brackets(e->detail) : NULL,
			    *context = e->context ? cescape_brackets(e->context) : NULL;
	char *line = NULL;
	int r;

	if (!summary || (e->detail && !detail) || (e->context && !context))
		return NULL;
	if (stderr_line)
		r = asprintf(&line, "ptsguard: %s%s%s[%s] %s (%s): %s%s%s", context ? "[" : "",
			     context ?: "", context ? "] " : "", state, f->check->id, sev, summary,
			     detail ? ": " : "", detail ?: "");
	else
		r = asprintf(&line, "%s%s%s%s: %s%s%s", context ? "[" : "", context ?: "",
			     context ? "] " : "", t == TRANSITION_DETECTED ? f->check->id : state,
			     summary, detail ? "; " : "", detail ?: "");
	return r < 0 ? NULL : line;
}

char *journal_syslog_line(const struct transition_event *e)
{
	const struct finding *f = e->finding;
	_cleanup_free_ char *words = transition_words(e, false);
	char *line;

	/* the journal's MESSAGE= words, then a tag of fixed form to match on */
	if (!words || asprintf(&line, "%s [ptsguard check=%s state=%s severity=%s message_id=%s]",
			       words, f->check->id, transition_to_string(e->transition),
			       severity_to_string(f->severity), f->check->message_id) < 0)
		return NULL;
	return line;
}

char *journal_stderr_line(const struct transition_event *e)
{
	return transition_words(e, true);
}

static int log_line_transition(const struct transition_event *e)
{
	_cleanup_free_ char *line = NULL;

	if (to_syslog) {
		line = journal_syslog_line(e);
		if (!line)
			return -ENOMEM;
		syslog(transition_priority(e->transition, e->finding->severity), "%s", line);
		free(line);
		line = NULL;
	}
	line = journal_stderr_line(e);
	if (!line)
		return -ENOMEM;
	fprintf(stderr, "%s\n", line);
	return 0;
}

int journal_log_transition(const struct transition_event *e)
{
	const struct finding *f = e->finding;
	const char *const *extra_fields = (const char *const *)f->journal_fields;
	const char *detail = e->detail;
	enum transition t = e->transition;
	const char *state = transition_to_string(t), *sev = severity_to_string(f->severity);
	/* fields stay exact; the words are for people (transition_words()) */
	_cleanup_free_ char *evidence = NULL, *message = NULL;
	struct iovec iov[32];
	size_t n = 0;
	char dev[24];
	int r = 0;

	if (!journal_available())
		return log_line_transition(e);

	evidence = finding_evidence_text(f);
	message = transition_words(e, false);
	if (!evidence || !message)
		return -ENOMEM;

	if (add_field(iov, &n, "MESSAGE=%s", message) < 0 ||
	    add_field(iov, &n, "MESSAGE_ID=%s", f->check->message_id) < 0 ||
	    add_field(iov, &n, "PRIORITY=%d", transition_priority(t, f->severity)) < 0 ||
	    add_field(iov, &n, "PTSGUARD_CHECK=%s", f->check->id) < 0 ||
	    add_field(iov, &n, "PTSGUARD_STATE=%s", state) < 0 ||
	    add_field(iov, &n, "PTSGUARD_SEVERITY=%s", sev) < 0 ||
	    add_field(iov, &n, "PTSGUARD_EVIDENCE=%s", evidence) < 0 ||
	    (f->mountpoint && add_field(iov, &n, "PTSGUARD_MOUNTPOINT=%s", f->mountpoint) < 0) ||
	    (f->n_devices &&
	     add_field(iov, &n, "PTSGUARD_DEVICE=%s", format_devnum(f->devices[0], dev)) < 0) ||
	    (f->n_mount_ids && add_field(iov, &n, "PTSGUARD_MOUNT_ID=%u", f->mount_ids[0]) < 0) ||
	    (detail && add_field(iov, &n, "PTSGUARD_DETAIL=%s", detail) < 0))
		r = -ENOMEM;
	for (const char *const *x = extra_fields; r == 0 && x && *x && n < ELEMENTSOF(iov); x++)
		r = add_field(iov, &n, "%s", *x);
	for (const char *const *x = e->context_fields; r == 0 && x && *x && n < ELEMENTSOF(iov);
	     x++)
		r = add_field(iov, &n, "%s", *x);
	if (r == 0)
		r = journal_sendv(iov, n);
	for (size_t i = 0; i < n; i++)
		free(iov[i].iov_base);
	return r;
}

/* msg with the '[' of each "[ptsguard" written \x5b: the daemon's other messages name what
 * namespaces named (escaped by their writers, brackets and all else kept), and in syslog, where
 * a journal may forward MESSAGE= too, "[ptsguard ...]" is a transition's tag. NULL when out of
 * memory. */
static char *defuse_tags(const char *msg)
{
	size_t n = strlen(msg);
	char *out = malloc(4 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (const char *p = msg; *p; p++)
		if (*p == '[' && strncasecmp(p + 1, "ptsguard", 8) == 0)
			o = stpcpy(o, "\\x5b");
		else
			*o++ = *p;
	*o = 0;
	return out;
}

void journal_log_sink(int priority, const char *const *fields, const char *msg)
{
	_cleanup_free_ char *defused = defuse_tags(msg), *message = NULL, *prio = NULL;
	struct iovec iov[16];
	size_t n = 0;

	msg = defused ?: "(out of memory)";
	/* A person running it in a terminal reads the terminal; a service's stderr is the journal
	 * anyway, but through sd_journal the entry carries its fields. */
	if (!journal_available() || isatty(STDERR_FILENO)) {
		if (to_syslog && !journal_available())
			syslog(priority, "%s", msg);
		fprintf(stderr, "ptsguard: %s\n", msg);
		return;
	}
	if (asprintf(&message, "MESSAGE=%s", msg) < 0 ||
	    asprintf(&prio, "PRIORITY=%d", priority) < 0)
		return;
	iov[n++] = (struct iovec){ message, strlen(message) };
	iov[n++] = (struct iovec){ prio, strlen(prio) };
	for (const char *const *f = fields; f && *f && n < ELEMENTSOF(iov); f++)
		iov[n++] = (struct iovec){ (void *)*f, strlen(*f) };
	/* A full queue is counted, not echoed: the terminal of a service is the journal. */
	if (journal_sendv(iov, n) < 0 && !queue)
		fprintf(stderr, "ptsguard: %s\n", msg);
}
