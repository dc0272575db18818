/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Messages for people, on standard error. Only the command line and the daemon log
 * (HACKING.md, Logging). */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/macro.h"

_printf_(1, 2) static inline void log_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ptsguard: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Log with ": <strerror>" appended; returns r (a negative errno) for `return log_error_errno(...)`.
 */
#define log_error_errno(r, fmt, ...)                                                               \
	({                                                                                         \
		int _r = (r);                                                                      \
		log_error(fmt ": %s", ##__VA_ARGS__, strerror(_r < 0 ? -_r : _r));                 \
		_r;                                                                                \
	})
