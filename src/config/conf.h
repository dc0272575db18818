/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration of the daemon, audit and repair (ptsguard.conf(5)): vendor
 * defaults under /usr, the /etc file that replaces them, then the *.conf
 * drop-ins of the vendor ptsguard.conf.d and then of the /etc one, each in
 * lexical order: read and merged by libeconf (0.5), applied key by key. Every key is validated; an
 * unknown section or key, or a bad value, is an error that names the file and the line. Loading
 * never logs: the caller does.
 *
 * (The file is conf.h, not config.h: that name is the build's generated header.)
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "checks/checks.h"
#include "util/macro.h"

enum repair_policy {
	REPAIR_POLICY_OFF,
	REPAIR_POLICY_SAFE,
	_REPAIR_POLICY_MAX,
};

/* How the daemon learns of mount changes ([Daemon] MountEvents=). */
enum mount_events {
	MOUNT_EVENTS_AUTO,	/* fanotify where the kernel and the seccomp filter allow it */
	MOUNT_EVENTS_FANOTIFY,	/* incremental tracking, or refuse to start */
	MOUNT_EVENTS_MOUNTINFO, /* re-read the whole table on every change */
	_MOUNT_EVENTS_MAX,
};

/* Which mount namespaces besides its own the daemon audits ([Namespaces] Audit=). */
enum namespaces_audit {
	NAMESPACES_AUDIT_NONE, /* its own only */
	NAMESPACES_AUDIT_ALL,  /* every mount namespace of the host, followed as they come and go */
	_NAMESPACES_AUDIT_MAX,
};

#define CONFIG_NAMESPACES_SCAN_USEC_DEFAULT (5 * 1000000ULL)
#define CONFIG_NAMESPACES_SCAN_SEC_MAX	    3600
#define CONFIG_COALESCE_USEC_DEFAULT	    (20 * 1000ULL)
#define CONFIG_COALESCE_MSEC_MAX	    10000
#define CONFIG_AUDIT_CPU_PERCENT_DEFAULT    25
#define CONFIG_HOLDER_RESCAN_USEC_DEFAULT   (30 * 1000000ULL)
#define CONFIG_HEARTBEAT_SEC_MAX	    3600
#define CONFIG_HEARTBEAT_USEC_DEFAULT	    (60 * 1000000ULL)
#define CONFIG_HOLDER_RESCAN_SEC_MAX	    3600
#define CONFIG_STATE_FILE_DEFAULT	    "/run/ptsguard/report.json"

struct config {
	/* [Devpts] */
	char *tty_group;		  /* TTYGroup= as written, NULL when not set */
	bool has_tty_gid;		  /* TTYGroup= set: it overrides the probe's "tty" lookup */
	gid_t tty_gid;			  /* resolved when the configuration is loaded */
	struct check_policy check_policy; /* Mode= pins the slave mode */

	/* [Repair] */
	enum repair_policy repair_policy;
	bool ptmx_symlink; /* CreatePtmx=symlink */

	/* [Ignore]: NULL-terminated lists, or NULL */
	char **ignore_checks;	   /* catalog ids, validated */
	char **ignore_mountpoints; /* absolute paths, no trailing slash */

	/* [Probe] */
	bool probe_enabled; /* Enabled=, default yes: run the allocation probe in audits as root */
	char *probe_user;   /* User= as written, NULL when not set (then "nobody") */
	bool has_probe_user;
	uid_t probe_uid; /* resolved when the configuration is loaded */
	gid_t probe_gid;

	/* [Daemon] */
	enum mount_events mount_events;
	uint64_t coalesce_usec;
	unsigned audit_cpu_percent; /* share of one CPU audits may use during a burst */
	uint64_t
	    holder_rescan_usec; /* while an instance is covered: how old a holder scan may be */
	char *state_file;	/* NULL: no state file */
	char *prometheus_file;	/* NULL: no textfile */
	uint64_t prometheus_heartbeat_usec; /* how often the textfile says it is current */

	/* [Namespaces] */
	enum namespaces_audit namespaces_audit;
	uint64_t namespaces_scan_usec; /* how often /proc is walked for new namespaces */

	char **sources; /* the files read, in the order they were applied; NULL-terminated */
};

struct config_error {
	char file[4096]; /* empty when the error is not about one file */
	unsigned line;	 /* 1-based; 0 when not about one line */
	char message[512];
};

/* Where and what, for a person: "file:line: message", "file: message", or "configuration:
 * message" when no file is to blame. Fills buf (CONFIG_ERROR_TEXT_MAX bytes) and returns it. */
#define CONFIG_ERROR_TEXT_MAX (sizeof(((struct config_error *)0)->file) + 512 + 32)
const char *config_error_format(const struct config_error *err,
				char buf[static CONFIG_ERROR_TEXT_MAX]);

/* Load the configuration. path NULL reads the standard locations (vendor dir, /etc, drop-ins;
 * none of them need exist), else exactly that file (which must exist). On -EINVAL (bad content)
 * or -ENOENT (path missing), *err says where and why. */
int config_load(const char *path, struct config **ret, struct config_error *err);
int config_new_default(struct config **ret);
struct config *config_free(struct config *c);
DEFINE_POINTER_CLEANUP(struct config, config_free)

/* Is this finding suppressed by [Ignore] Checks= or Mountpoints=? */
bool config_ignores(const struct config *c, const struct finding *f);
/* The user the allocation probe and repair's verification allocate as: [Probe] User=, else
 * "nobody" (c may be NULL). */
void config_probe_identity(const struct config *c, uid_t *uid, gid_t *gid);
/* Remove (and free) the findings config_ignores(). */
int config_drop_ignored(const struct config *c, struct findings *f);
/* "VERB configuration from FILES: KEY=VALUE ...": every key of the table (config/conf-keys.h)
 * with the value in effect, for the daemon's journal when it loads or reloads c. 0 and *ret
 * (malloc'ed), or -ENOMEM. */
int config_format_loaded(const struct config *c, const char *verb, char **ret);
const char *repair_policy_to_string(enum repair_policy p);
const char *mount_events_to_string(enum mount_events m);
const char *namespaces_audit_to_string(enum namespaces_audit a);

/* The standard locations, for messages and the man page. */
extern const char config_vendor_dir[];
extern const char config_admin_dir[];
