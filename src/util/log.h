/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one way the program speaks to people: a syslog priority, a message and, for the journal,
 * extra "KEY=value" fields. Only the command line and the daemon log (HACKING.md, Logging).
 * Messages go to standard error as "ptsguard: MESSAGE" until a program installs another sink:
 * the daemon installs the journal's (report/journal.h), which falls back to standard error and
 * syslog itself.
 */
#pragma once

#include <string.h>
#include <syslog.h>

#include "util/macro.h"

/* Where messages go: priority (LOG_ERR...), fields (NULL-terminated, or NULL), the message. */
typedef void (*log_sink_fn)(int priority, const char *const *fields, const char *message);

/* Install sink for every later message; NULL: standard error again. */
void log_set_sink(log_sink_fn sink);

/* Format a message and hand it to the sink. */
_printf_(3, 4) void log_fields(int priority, const char *const *fields, const char *fmt, ...);

#define log_error(...)	 log_fields(LOG_ERR, NULL, __VA_ARGS__)
#define log_warning(...) log_fields(LOG_WARNING, NULL, __VA_ARGS__)
#define log_info(...)	 log_fields(LOG_INFO, NULL, __VA_ARGS__)
#define log_debug(...)	 log_fields(LOG_DEBUG, NULL, __VA_ARGS__)

/* Log with ": <strerror>" appended; returns r (a negative errno) for `return log_error_errno(...)`.
 */
#define log_error_errno(r, fmt, ...)                                                               \
	({                                                                                         \
		int _r = (r);                                                                      \
		log_error(fmt ": %s", ##__VA_ARGS__, strerror(_r < 0 ? -_r : _r));                 \
		_r;                                                                                \
	})
