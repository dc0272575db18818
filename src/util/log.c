/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>

#include "util/log.h"
#include "util/string-util.h"

static log_sink_fn sink;

void log_set_sink(log_sink_fn s)
{
	sink = s;
}

void log_fields(int priority, const char *const *fields, const char *fmt, ...)
{
	char *msg;

	FORMAT_VA(msg, fmt);
	if (!msg)
		return;
	if (sink)
		sink(priority, fields, msg);
	else
		fprintf(stderr, "ptsguard: %s\n", msg);
	free(msg);
}
