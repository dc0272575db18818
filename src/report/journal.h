/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Journal sink: one structured entry per transition of a finding, with the
 * catalog's MESSAGE_ID so that `journalctl -x` explains it, and PTSGUARD_*
 * fields (check, state, severity, evidence, where) to filter on. Without a journal socket the same
 * line goes to standard error, and to syslog when journal_use_syslog() said so.
 */
#pragma once

#include <stdbool.h>

#include "checks/checks.h"
#include "report/transitions.h"
#include "util/macro.h"

/* The PRIORITY= of an entry: critical 2, warning 4, info 6; resolved and repaired 5. */
int transition_priority(enum transition t, enum severity s);

/* Log one transition: the common fields, the detail (appended to the message, e.g. what a
 * repair did) when there is one, then the finding's own journal_fields as they are. */
int journal_log_transition(const struct transition_event *e);
/* The lines of a transition where there is no journal (malloc'ed, no newline; NULL when out of
 * memory): syslog's, the MESSAGE= words then "[ptsguard check=ID state=STATE severity=SEV
 * message_id=ID]", and standard error's, "ptsguard: [CONTEXT] [STATE] ID (SEV): SUMMARY". Names in
 * the words are escaped with their brackets (cescape_brackets()), so a name cannot spell a tag:
 * the first bracketed tag of the line is the real one. */
char *journal_syslog_line(const struct transition_event *e);
char *journal_stderr_line(const struct transition_event *e);

/* The daemon's sink for every message of the program itself (util/log.h, log_set_sink()): an
 * entry at priority with the extra "KEY=value" fields (NULL-terminated, or NULL). On a
 * terminal, or without a journal, one line on standard error instead (and syslog, see
 * journal_use_syslog()). */
void journal_log_sink(int priority, const char *const *fields, const char *message);

/* From now on send every entry through q (the daemon's non-blocking queue), or, with NULL,
 * through libsystemd's blocking send again. q stays the caller's. */
struct journal_queue;
void journal_use_queue(struct journal_queue *q);
/* A queue to the journal's socket (report/journal-queue.h). */
int journal_open_queue(struct journal_queue **ret);

/* With on, whatever would go to the journal while its socket is absent also goes to syslog
 * (openlog("ptsguard", LOG_PID, LOG_DAEMON)): a transition as its MESSAGE= words followed by
 * "[ptsguard check=ID state=STATE severity=SEV message_id=ID]" at its PRIORITY=, any other
 * message as it is but for the '[' of any "[ptsguard" in it, written \x5b (in its MESSAGE= and
 * standard error's line too): the only such tag a consumer finds is a transition's. The daemon's
 * choice, made once at start; the one-shot commands do not. */
void journal_use_syslog(bool on);

/* Where entries go: the journal if its socket exists, else standard error. libsystemd always
 * uses /run/systemd/journal/socket, so tests run journald in a mount namespace with its own /run.
 */
bool journal_available(void);
