/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdlib.h>
#include <syslog.h>

#include "daemon/log-once.h"
#include "util/log.h"
#include "util/string-util.h"

void log_once_fail(struct log_once *l, const char *fmt, ...)
{
	char *msg;

	FORMAT_VA(msg, fmt);
	if (!msg)
		return;
	if (streq(msg, l->last)) {
		free(msg);
		return;
	}
	log_error("%s", msg);
	free(l->last);
	l->last = msg;
}

void log_once_ok(struct log_once *l)
{
	free(l->last);
	l->last = NULL;
}
