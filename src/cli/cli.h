/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the subcommands (main.c, cmd-*.c); they log, as the edge does. */
#pragma once

#include <stdbool.h>

#include "checks/checks.h"
#include "pipeline/conf.h"
#include "pipeline/pipeline.h"
#include "probe/probe.h"
#include "snapshot/snapshot.h"
#include "util/clock.h"

#define EXIT_UNKNOWN 3 /* could not run: bad usage, bad input, internal error */

enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_PROMETHEUS };

/* Report a getopt_long error ('?' or ':') for cmd; returns -EINVAL. */
int bad_option(const char *cmd, int c, char **argv);
int parse_format(const char *cmd, const char *s, bool allow_prometheus, enum format *ret);
int load_snapshot_file(const char *path, struct snapshot **ret);
/* The audit pipeline (pipeline/pipeline.h); logs what went wrong. */
int run_audit(const struct audit_target *t, const struct config *c, struct audit_result *ret);
/* Write text to path, replaced atomically with mode 0644 (creating its directory first when
 * make_dir), or to standard output when path is NULL or "-". Logs what went wrong. */
int write_output(const char *cmd, const char *path, const char *text, bool make_dir);
/* The configuration (ptsguard.conf(5)): exactly path, else the standard locations (none need
 * exist). Logs what is wrong, with file and line, prefixed by cmd. */
int load_config(const char *cmd, const char *path, struct config **ret);
bool want_color(bool no_color);

int cmd_repair(int argc, char **argv);
int cmd_initramfs(int argc, char **argv);
