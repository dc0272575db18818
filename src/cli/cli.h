/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the subcommands share. Each command is a cmd-*.c of its own, parse -> run: a parse
 * function fills a small options struct (usage errors are logged and exit 3), a run function
 * does the work and returns the exit status; main.c dispatches by name. The helpers here log,
 * as the edge does.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "pipeline/conf.h"
#include "probe/probe.h"
#include "probe/snapshot.h"

#define EXIT_UNKNOWN 3 /* could not run: bad usage, bad input, internal error */

enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_PROMETHEUS };

uint64_t now_usec(clockid_t clock);
/* Report a getopt_long error ('?' or ':') for cmd; returns -EINVAL. */
int bad_option(const char *cmd, int c, char **argv);
int parse_format(const char *cmd, const char *s, bool allow_prometheus, enum format *ret);
int load_snapshot_file(const char *path, struct snapshot **ret);
/* Probe the live system; opts may be NULL. Logs what went wrong. */
int probe_live(const struct probe_options *opts, struct snapshot **ret,
	       struct analysis **ret_analysis);
/* Write text to path, replaced atomically with mode 0644 (creating its directory first when
 * make_dir), or to standard output when path is NULL or "-". Logs what went wrong. */
int write_output(const char *cmd, const char *path, const char *text, bool make_dir);
/* The configuration (ptsguard.conf(5)): exactly path, else the standard locations (none need
 * exist). Logs what is wrong, with file and line, prefixed by cmd. */
int load_config(const char *cmd, const char *path, struct config **ret);
bool want_color(bool no_color);

/* What one audit produced. */
struct audit_result {
	struct snapshot *snap;
	struct analysis *a;
	struct findings findings;
};

void audit_result_clear(struct audit_result *r);

/* The audit composition, probe -> analysis -> checks, shared by audit and repair until a
 * library pipeline owns it: the live system (or the snapshot at snapshot_path, "-" for
 * standard input), analysed, checked with config's policy, tty group and ignore rules. On
 * failure ret is cleared except for ret->snap when the input was had: a NULL ret->snap means
 * the probe or the snapshot failed (already logged), otherwise the analysis or the checks
 * did, which the caller words. */
int run_audit(const struct config *config, const char *snapshot_path, struct audit_result *ret);

/* main.c: the top-level usage, which --help of audit, snapshot, checks and explain prints. */
void usage(void);

/* The commands: argv[0] is the command's name. Each returns the exit status. */
int cmd_audit(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_checks(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_initramfs(int argc, char **argv);
