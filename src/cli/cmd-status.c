/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard status [--config FILE]`: what the running daemon last found, from its state file
 * (StateFile=): whether the daemon that writes it still runs, the file's age, the last
 * transition it journaled, its journal queue, and the findings with their remedies. Exit status
 * as audit's from those findings; 3 when no daemon runs or the state file cannot be read.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/string-util.h"

struct status_args {
	const char *config_path;
};

static void status_help(void)
{
	printf("Usage: ptsguard status [OPTIONS]\n"
	       "\n"
	       "What the running daemon last found, from its state file (StateFile=): whether\n"
	       "it still runs, the file's age, the last transition, the journal queue and the\n"
	       "findings. Exit status: 0 nothing at warning or above, 1 warning, 2 critical,\n"
	       "3 no daemon runs or its state file cannot be read.\n"
	       "\n"
	       "Options:\n"
	       "     --config FILE   read only this configuration file (for StateFile=)\n"
	       "  -h --help         show this help\n");
}

static int status_parse(int argc, char **argv, struct status_args *ret)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	*ret = (struct status_args){ 0 };
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
		switch (c) {
		case 'c':
			ret->config_path = optarg;
			break;
		case 'h':
			status_help();
			return 1;
		default:
			return bad_option("status", c, argv);
		}
	return no_more_arguments("status", argc, argv);
}

/* Is pid a ptsguard daemon (its command line "…ptsguard daemon …")? */
static bool daemon_runs(long pid)
{
	char path[64], *text = NULL;
	size_t size = 0;
	bool yes = false;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	if (pid > 0 && read_full_file(path, 64 << 10, &text, &size) == 0) {
		const char *arg0 = text, *base = strrchr(arg0, '/');
		size_t l0 = strlen(arg0);

		base = base ? base + 1 : arg0;
		yes = strncmp(base, "ptsguard", 8) == 0 && l0 + 1 < size &&
		      streq(text + l0 + 1, "daemon");
	}
	free(text);
	return yes;
}

static const char *get_string(json_object *o, const char *key)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : NULL;
}

static int64_t get_int(json_object *o, const char *key, int64_t fallback)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int)
		   ? json_object_get_int64(v)
		   : fallback;
}

/* Seconds since an RFC 3339 UTC time ("2026-12-07T23:00:00Z"), or -1. */
static long age_of(const char *at)
{
	struct tm tm = { 0 };
	const char *end = at ? strptime(at, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
	time_t t;

	if (!end || *end || (t = timegm(&tm)) < 0)
		return -1;
	return (long)(now_usec(CLOCK_REALTIME) / 1000000) - (long)t;
}

static void print_escaped(const char *prefix, const char *s)
{
	fputs(prefix, stdout);
	fputs_escaped(s ?: "?", stdout);
}

static int status_show(const char *path, json_object *rep)
{
	static const char *const order[] = { "critical", "warning", "info" };
	json_object *findings = NULL, *last = NULL, *journal = NULL, *summary = NULL;
	long pid = (long)get_int(rep, "daemon_pid", 0),
	     age = age_of(get_string(rep, "generated_at"));
	bool runs = daemon_runs(pid);
	int64_t n[3];
	int status;

	json_object_object_get_ex(rep, "summary", &summary);
	for (size_t i = 0; i < 3; i++)
		n[i] = get_int(summary, order[i], 0);
	status = n[0] > 0 ? 2 : n[1] > 0 ? 1 : 0;
	printf("ptsguard: %s: ", status == 2 ? "CRITICAL" : status == 1 ? "WARNING" : "OK");
	if (n[0] + n[1] + n[2] == 0)
		fputs("no findings", stdout);
	else
		for (size_t i = 0, first = 1; i < 3; i++)
			if (n[i] > 0) {
				printf("%s%lld %s", first ? "" : ", ", (long long)n[i], order[i]);
				first = 0;
			}
	printf(" (the daemon's last audit)\n");
	if (runs)
		printf("daemon: running (pid %ld)\n", pid);
	else
		printf("daemon: not running%s\n",
		       pid > 0 ? " (the pid that wrote the file is gone)" : "");
	print_escaped("state file: ", path);
	print_escaped(", audit of ", get_string(rep, "generated_at"));
	if (age >= 0)
		printf(" (%ld s ago)", age);
	putchar('\n');
	if (json_object_object_get_ex(rep, "last_transition", &last)) {
		print_escaped("last transition: ", get_string(last, "at"));
		print_escaped(" ", get_string(last, "check"));
		print_escaped(" ", get_string(last, "state"));
		print_escaped(" (", get_string(last, "severity"));
		fputs(")\n", stdout);
	} else
		fputs("last transition: none since the daemon started\n", stdout);
	if (json_object_object_get_ex(rep, "journal", &journal))
		printf("journal: %lld queued, %lld dropped\n",
		       (long long)get_int(journal, "queued", 0),
		       (long long)get_int(journal, "dropped", 0));
	if (json_object_object_get_ex(rep, "findings", &findings) &&
	    json_object_is_type(findings, json_type_array))
		for (size_t i = 0; i < json_object_array_length(findings); i++) {
			json_object *f = json_object_array_get_idx(findings, i);

			print_escaped(i == 0 ? "\n" : "", get_string(f, "severity"));
			print_escaped(" ", get_string(f, "id"));
			print_escaped(": ", get_string(f, "summary"));
			print_escaped("\n    remedy: ", get_string(f, "remedy"));
			putchar('\n');
		}
	if (flush_stdout() < 0)
		return EXIT_UNKNOWN;
	/* A daemon that does not run makes the file a record, not a status. */
	if (!runs) {
		log_error("status: no ptsguard daemon runs for %s: what it shows may be stale",
			  path);
		return EXIT_UNKNOWN;
	}
	return status;
}

static int status_run(const struct status_args *args)
{
	_cleanup_(config_freep) struct config *c = NULL;
	_cleanup_free_ char *text = NULL;
	json_object *rep;
	size_t size = 0;
	int r;

	if (load_config("status", args->config_path, &c) < 0)
		return EXIT_UNKNOWN;
	if (!c->state_file) {
		log_error("status: StateFile= is off in the configuration: nothing to show");
		return EXIT_UNKNOWN;
	}
	r = read_file_flags(c->state_file, O_NOFOLLOW, 64 << 20, &text, &size);
	if (r == -ENOENT) {
		log_error("status: %s does not exist: no ptsguard daemon runs (systemctl status "
			  "ptsguard)",
			  c->state_file);
		return EXIT_UNKNOWN;
	}
	if (r < 0) {
		log_error_errno(r, "status: cannot read %s", c->state_file);
		return EXIT_UNKNOWN;
	}
	rep = json_tokener_parse(text);
	if (!rep || !json_object_is_type(rep, json_type_object) ||
	    !streq(get_string(rep, "schema") ?: "", "ptsguard.report/1")) {
		log_error("status: %s is not a ptsguard.report/1 JSON document", c->state_file);
		json_object_put(rep);
		return EXIT_UNKNOWN;
	}
	r = status_show(c->state_file, rep);
	json_object_put(rep);
	return r;
}

int cmd_status(int argc, char **argv)
{
	struct status_args args;
	int r = status_parse(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return status_run(&args);
}
