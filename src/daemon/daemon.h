/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon (spec/interface.md, Daemon). A struct daemon owns the sd-event
 * loop and every source in it: the libmount monitor, the udev monitor, the
 * inotify watches on /dev and /dev/pts, the coalescing timer and the signals.
 * Each burst of events becomes one audit (probe -> checks -> Ignore=), whose
 * findings are diffed against the previous audit's: one journal entry per
 * transition, the state file and the Prometheus textfile rewritten, and the
 * repair policy applied. It raises ptmx-replaced itself, by comparing
 * /dev/ptmx with what it was when the daemon started (or was reloaded).
 */
#pragma once

#include "util/macro.h"

struct daemon;

struct daemon_options {
	const char *config_path; /* NULL: the standard locations */
};

/* Load the configuration and set up the loop and its sources. Logs what went wrong. */
int daemon_new(const struct daemon_options *opts, struct daemon **ret);
/* Audit once, tell the service manager READY=1, then loop until SIGTERM or SIGINT. */
int daemon_run(struct daemon *d);
struct daemon *daemon_free(struct daemon *d);
DEFINE_POINTER_CLEANUP(struct daemon, daemon_free)

/* `ptsguard daemon [--config FILE]` */
int cmd_daemon(int argc, char **argv);
