/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the subcommands share. Each command is a cmd-*.c of its own, parse -> run: a parse
 * function fills a small options struct (usage errors are logged and exit 3), a run function
 * does the work and returns the exit status; main.c dispatches by name. The helpers here log,
 * as the edge does.
 */
#pragma once

#include <stdbool.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "config/conf.h"
#include "pipeline/pipeline.h"
#include "probe/namespace.h"
#include "probe/probe.h"
#include "snapshot/snapshot.h"
#include "util/clock.h"

#define EXIT_UNKNOWN 3 /* could not run: bad usage, bad input, internal error */

enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_PROMETHEUS, FORMAT_PLUGIN };

/* Report a getopt_long error ('?' or ':') for cmd; returns -EINVAL. */
int bad_option(const char *cmd, int c, char **argv);
int parse_format(const char *cmd, const char *s, bool allow_prometheus, enum format *ret);
/* --format FORMAT and --json, which audit, repair and checks take alike. */
#define FORMAT_OPTIONS                                                                             \
	{ "format", required_argument, NULL, 'f' },                                                \
	{                                                                                          \
		"json", no_argument, NULL, 'j'                                                     \
	}
/* When getopt's c is one of FORMAT_OPTIONS, sets *ret from it: 1, or negative for a bad value
 * or for one that names another format than an earlier format option of the command line
 * (`--json --format text`: a usage error, not the last one winning); logged. 0 when c is
 * another option. */
int parse_format_option(const char *cmd, int c, bool allow_prometheus, enum format *ret);
/* Nothing may follow a command's options: -EINVAL (logged) when something does. */
int no_more_arguments(const char *cmd, int argc, char **argv);
int load_snapshot_file(const char *path, struct snapshot **ret);
/* fflush(stdout), keeping the errno of the first failure for close_stdout(): 0 or negative
 * errno. Commands flush through it. */
int flush_stdout(void);
/* At exit (main()): standard output flushed and closed. A write that failed there or earlier
 * (a full disk, /dev/full) is logged as "write error: REASON" and makes the status 3, as GNU
 * tools do at close; otherwise status. */
int close_stdout(int status);
/* Write text to path, replaced atomically with mode 0644 (creating its directory first when
 * make_dir) when it is absent or a regular file, or to standard output when path is NULL or
 * means it (output_file_is_stdout()). Logs what went wrong with path; a failed write to
 * standard output is left to main()'s check at exit. */
int write_output(const char *cmd, const char *path, const char *text, bool make_dir);
/* The configuration (ptsguard.conf(5)): exactly path, else the standard locations (none need
 * exist). Logs what is wrong, with file and line, prefixed by cmd. */
int load_config(const char *cmd, const char *path, struct config **ret);
/* --color[=WHEN] and --no-color (--color=never), which audit and repair take alike. */
enum color_when { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };
#define COLOR_OPTIONS                                                                              \
	{ "color", optional_argument, NULL, 'K' },                                                 \
	{                                                                                          \
		"no-color", no_argument, NULL, 'C'                                                 \
	}
/* When getopt's c is one of COLOR_OPTIONS, sets *ret from it (--color alone: always): 1, or
 * negative for a bad value (logged); 0 when c is another option. */
int parse_color_option(const char *cmd, int c, enum color_when *ret);
/* Colour on standard output? always, never, or auto: when it is a terminal, NO_COLOR is unset
 * or empty, and TERM is not "dumb". */
bool want_color(enum color_when when);

/* The guarded worker the allocation probes of --all-namespaces share (util/guarded-child.h),
 * and its end (main() calls it once the command is done). */
struct guarded_worker *cli_probe_worker(void);
void cli_probe_worker_done(void);
/* The audit pipeline (pipeline/pipeline.h) for target; logs what went wrong. */
int run_pipeline(const struct audit_target *t, const struct config *c, struct audit_result *ret);
/* The audit pipeline over the live system, or the snapshot at
 * snapshot_path ("-" for standard input), with config's policy, tty group, [Probe] and [Ignore];
 * no_probe (--no-probe): without the allocation probe. Logs what went wrong. */
int run_audit(const struct config *config, const char *snapshot_path, bool no_probe,
	      struct audit_result *ret);
/* The live system as a snapshot (with the raw mountinfo text), analysed, not checked; with the
 * allocation probe (as nobody) unless no_probe. Logs what went wrong. */
int run_probe(bool no_probe, struct audit_result *ret);

/* --namespace PID: the process id, or -EINVAL (logged). */
int parse_namespace_pid(const char *cmd, const char *s, pid_t *ret);
/* When getopt's c is 'N' (--namespace PID) or 'P' (--no-probe), which audit and snapshot take
 * alike, sets *namespace_pid or *no_probe from it: 1, or negative for a bad value (logged); 0
 * when c is another option. */
int parse_target_option(const char *cmd, int c, pid_t *namespace_pid, bool *no_probe);
/* Open the namespace of pid (probe/namespace.h); logs why not, naming the process. */
int open_namespace(const char *cmd, pid_t pid, struct namespace_target **ret);
/* The pipeline for t, a namespace target (t->probe.ns set); logs what went wrong, naming the
 * process: -ESRCH when it exited meanwhile. */
int run_namespace(const char *cmd, const struct audit_target *t, const struct config *c,
		  struct audit_result *ret);

/* The test suites' hooks (meson option test-hooks; compiled out otherwise): is the variable env
 * "1"? test_hook_pause() then says so on stderr and waits for a line on stdin. */
bool test_hook_enabled(const char *env);
void test_hook_pause(const char *env, const char *what);

/* main.c: the top-level usage (ptsguard --help); each command's --help is its own. */
void usage(void);

/* The commands: argv[0] is the command's name. Each returns the exit status. */
int cmd_audit(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_checks(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_initramfs(int argc, char **argv);

/* One catalog row as JSON, as ptsguard checks --json and explain --json write it. */
json_object *check_info_to_json(const struct check_info *ci);
