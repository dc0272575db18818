/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/outputs.h"
#include "util/clock.h"
#include "util/json-util.h"
#include "util/output-file.h"
#include "util/string-util.h"

int state_file_write(const char *path, const struct report *rep, struct output_file_error *err)
{
	_cleanup_free_ char *text = report_to_text(rep);

	return text ? output_file_write(path, text, strlen(text), 0644, true, err) : -ENOMEM;
}

/* series, then the heartbeat gauge at now (CLOCK_REALTIME, microseconds), to path. */
static int prometheus_file_write(const char *path, const char *series, uint64_t now,
				 struct output_file_error *err)
{
	_cleanup_free_ char *text = NULL;
	int n;

	n = asprintf(&text,
		     "%s"
		     "# HELP ptsguard_daemon_heartbeat_timestamp_seconds When the daemon last said "
		     "these series are current\n"
		     "# TYPE ptsguard_daemon_heartbeat_timestamp_seconds gauge\n"
		     "ptsguard_daemon_heartbeat_timestamp_seconds %.3f\n",
		     series, (double)now / 1e6);
	if (n < 0)
		return -ENOMEM;
	return output_file_write(path, text, (size_t)n, 0644, true, err);
}

/* Write the series of one run (the report's, or a failed audit's: rep NULL, reason), with the
 * heartbeat, and keep them for the heartbeats after it under signature sig (taken over; NULL:
 * the next update writes whatever the findings). 1 written, or negative errno. */
static int prometheus_file_replace(struct prometheus_file *p, const char *path,
				   const struct report *rep, const char *reason, char *sig,
				   uint64_t now, struct output_file_error *err)
{
	_cleanup_free_ char *series = NULL, *signature = sig;
	size_t size = 0;
	FILE *m = open_memstream(&series, &size);
	int r;

	if (!m)
		return -ENOMEM;
	r = rep ? report_write_prometheus(m, rep) : report_write_prometheus_failed(m, reason);
	if (fclose(m) != 0 && r >= 0)
		r = -ENOMEM;
	if (r >= 0)
		r = prometheus_file_write(path, series, now_usec(CLOCK_REALTIME), err);
	if (r < 0)
		return r;
	free(p->signature);
	p->signature = TAKE_PTR(signature);
	free(p->series);
	p->series = TAKE_PTR(series);
	p->written = now;
	return 1;
}

int prometheus_file_update(struct prometheus_file *p, const char *path, const struct report *rep,
			   uint64_t now, struct output_file_error *err)
{
	char *sig = findings_signature(rep->findings);

	if (sig && streq(sig, p->signature) && now - p->written < PROMETHEUS_REFRESH_USEC) {
		free(sig);
		return 0;
	}
	return prometheus_file_replace(p, path, rep, NULL, sig, now, err);
}

int prometheus_file_failed(struct prometheus_file *p, const char *path, const char *reason,
			   uint64_t now, struct output_file_error *err)
{
	return prometheus_file_replace(p, path, NULL, reason, NULL, now, err);
}

int prometheus_file_heartbeat(struct prometheus_file *p, const char *path, uint64_t now,
			      struct output_file_error *err)
{
	int r;

	if (!p->series)
		return 0;
	r = prometheus_file_write(path, p->series, now, err);
	return r < 0 ? r : 1;
}

void prometheus_file_forget(struct prometheus_file *p)
{
	free(p->signature);
	p->signature = NULL;
	free(p->series);
	p->series = NULL;
}
