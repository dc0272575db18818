/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the subcommands (main.c, cmd-*.c); they log, as the edge does. */
#pragma once

#include <stdbool.h>

#include "checks/checks.h"
#include "pipeline/conf.h"
#include "probe/probe.h"
#include "probe/snapshot.h"
#include "util/clock.h"

#define EXIT_UNKNOWN 3 /* could not run: bad usage, bad input, internal error */

enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_PROMETHEUS };

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

int cmd_repair(int argc, char **argv);
int cmd_initramfs(int argc, char **argv);
