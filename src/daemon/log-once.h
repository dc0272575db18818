/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A recurring failure of one operation of the daemon, journaled once (LOG_ERR) until the
 * operation succeeds again, not on every wake-up while it lasts. */
#pragma once

#include "util/macro.h"

struct log_once {
	char *last; /* the message last journaled, NULL since the last success */
};

/* Journal the message unless it is the one journaled last. */
_printf_(2, 3) void log_once_fail(struct log_once *l, const char *fmt, ...);
/* The operation worked: its next failure is journaled again. Frees. */
void log_once_ok(struct log_once *l);
