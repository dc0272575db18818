/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation probe's result as plain data (docs/snapshot.md, "probe"): whether a child
 * running as an unprivileged user got a working pty the way programs get one, and if not, at
 * which step and with which errno; or why the probe was not performed. The snapshot keeps it,
 * so an audit of a snapshot judges the same result; the report shows the same object. The
 * probe itself is probe/allocation.h.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "util/json-load.h"

/* The steps, in the order a program takes them. */
enum alloc_step {
	ALLOC_STEP_OPEN_PTMX,  /* open("/dev/ptmx", O_RDWR|O_NOCTTY|O_CLOEXEC) */
	ALLOC_STEP_GRANTPT,    /* grantpt() */
	ALLOC_STEP_UNLOCKPT,   /* unlockpt(): TIOCSPTLCK */
	ALLOC_STEP_PTSNAME,    /* ptsname_r(): TIOCGPTN, the name /dev/pts/N */
	ALLOC_STEP_OPEN_SLAVE, /* open() of that name */
	ALLOC_STEP_PEER,       /* ioctl(TIOCGPTPEER): the slave of the master itself */
	ALLOC_STEP_COMPARE,    /* the slave by name is that slave (same device and rdev) */
	_ALLOC_STEP_MAX,
};

#define ALLOC_STEP_BIT(s) (1u << (s))

/* After the allocation, when asked: what ssh or sudo do to ask for a password. */
enum alloc_tty_step {
	ALLOC_TTY_SETSID, /* setsid() */
	ALLOC_TTY_CTTY,	  /* ioctl(slave, TIOCSCTTY): the pty the session's terminal */
	ALLOC_TTY_OPEN,	  /* open("/dev/tty") */
	_ALLOC_TTY_MAX,
};

/* Performed, or why not. */
enum alloc_status {
	ALLOC_PERFORMED,
	ALLOC_NOT_ROOT,	    /* the audit did not run as root */
	ALLOC_DISABLED,	    /* --no-probe, or [Probe] Enabled=no */
	ALLOC_NOT_RECORDED, /* a snapshot without a probe (not in JSON: the key is absent) */
	ALLOC_INTERFERED,   /* the child was stopped or killed past its deadline, every time */
	ALLOC_SETUP_FAILED, /* no child could start, or become the user (error, setup_step) */
	/* /dev/ptmx is not the pty multiplexer (c 5:2, directly or through a link to a devpts
	 * ptmx): never opened, whatever it is (ptmx-not-device says what) */
	ALLOC_NOT_PTMX,
	ALLOC_SKIPPED, /* the run's probes had used their time (--all-namespaces) */
	/* Root (or given capabilities) but without CAP_SETUID, or with it but without
	 * CAP_SETGID, in the effective set (a unit's CapabilityBoundingSet=, setpriv): the probe's
	 * child could not take the probe user's ids. A process with neither that is not root is
	 * ALLOC_NOT_ROOT. */
	ALLOC_NO_CAP_SETUID,
	ALLOC_NO_CAP_SETGID,
	_ALLOC_STATUS_MAX,
};

struct alloc_probe {
	enum alloc_status status;
	uid_t uid; /* the ids the child allocated (or was to allocate) as */
	gid_t gid;
	/* Performed: the steps taken; the last one failed when error or mismatch is set. */
	unsigned n_steps;
	int error;     /* errno of the failed step; 0 when none failed with an errno */
	bool mismatch; /* ALLOC_STEP_COMPARE failed: the name leads to another pty */
	/* The kernel has no TIOCGPTPEER (before 4.13: ENOTTY, or EINVAL): the peer step is no
	 * failure, and the slave was judged by its path instead (the slave of this index, on the
	 * master's instance). 0: it was compared with TIOCGPTPEER's. In JSON "slave_via" and
	 * "peer_errno". */
	int peer_error;
	char ptsname[64]; /* what ptsname() answered, "" before that step */
	/* The index of the pty the child allocated (once /dev/ptmx opened), -1 when unknown; only
	 * meaningful when performed, live (not in JSON): the daemon knows its own /dev/pts/N by
	 * it. */
	int index;
	/* The slave it opened by name, as stat() showed it to the probe (its ids numbered as the
	 * auditing process's user namespace numbers them); live only, not in JSON, as index. */
	struct alloc_slave {
		bool known;
		dev_t dev;
		uid_t uid;
		gid_t gid;
		mode_t mode; /* its permission bits */
	} slave;
	/* Asked for (alloc_options.tty), once the pty worked: /dev/tty opened from a session whose
	 * controlling terminal is that pty; live only. */
	struct alloc_tty {
		unsigned n_steps; /* 0: not tried; the last failed when error is set */
		int error;
		bool not_tty; /* /dev/tty is not c 5:0: never opened */
	} tty;
	/* ALLOC_SETUP_FAILED: what failed ("start": no child; "cgroup": it could not join the
	 * namespace's cgroup; "namespace", "root", "privileges": the child's setup) and error. */
	char setup_step[16];
};

const char *alloc_step_to_string(enum alloc_step s);
int alloc_step_from_string(const char *s);
const char *alloc_status_to_string(enum alloc_status s);

/* Did the probe run and fail? *step is then the failed step. */
bool alloc_probe_failed(const struct alloc_probe *p, enum alloc_step *step);
/* Did the probe run and every step pass? */
bool alloc_probe_succeeded(const struct alloc_probe *p);

/* "EACCES" for 13 (NULL when unknown), and back (-EINVAL when unknown). */
const char *errno_name(int e);
int errno_from_name(const char *name);
/* {"name": "EACCES", "number": 13}, or NULL (JSON null) for 0. */
json_object *errno_to_json(int e);

/* One line for a person: "uid 65534 gid 65534 got a working pty (/dev/pts/3)", "... failed at
 * open_slave (/dev/pts/3): EACCES", "not performed: not root". Returns buf. */
const char *alloc_probe_describe(const struct alloc_probe *p, char *buf, size_t size);

json_object *alloc_probe_to_json(const struct alloc_probe *p);
/* Strict: every field checked against the others (steps in order, errno on the last one only).
 * where names o in messages ("probe"). */
int alloc_probe_from_json(json_object *o, const char *where, struct alloc_probe *ret,
			  struct load_error *err);
