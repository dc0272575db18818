/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One mount namespace audited through one of its processes: the one way `audit --namespace`,
 * `audit --all-namespaces` and the daemon's follower open another namespace, attribute its
 * container, run the pipeline on it, and tell a namespace that is gone (its process exited, or
 * its pid now names a process elsewhere: nothing to say) from one that cannot be judged (an
 * error of its own, said in its report item or journal entry). A chroot inside a namespace (a
 * process whose root is not its namespace's, probe/mntns.h) is audited the same way, through
 * one of its processes: the target is then judged on that root.
 *
 * Every read of the namespace's files goes through its target (probe/namespace.h), which reads
 * them with the namespace's own identity; this module adds no read of its own.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "pipeline/pipeline.h"
#include "probe/container.h"
#include "probe/namespace-handle.h"
#include "probe/namespace.h"
#include "report/report.h"

struct namespace_audit {
	struct namespace_target *target;
	bool borrowed; /* the target is the caller's (namespace_audit_borrow()) */
	struct container container;
	bool attributed;
	/* Its process's root is not its namespace's: the report item names that root. */
	bool chroot;
	struct audit_result result;
	/* Its handle's text, for the report (namespace_audit_report()). */
	char handle[NAMESPACE_HANDLE_MAX];
	struct parse_error err;
	uint64_t started; /* CLOCK_MONOTONIC, when the pipeline began */
};

/* The root a listed item was found at (probe/mntns.h): its process must still have it. */
struct namespace_root {
	dev_t dev;
	ino_t ino;
	bool chroot; /* not the namespace's own root */
};

/* Open the namespace of pid. mntns: the namespace it must still be in (0: whichever); root:
 * the root directory it must still have (NULL: whichever; a chroot's then is told only within
 * our own namespace); pidfd (or -1): the process followed, readable once it exited. 0; -ESRCH
 * when it is gone (exited, moved, its pid reused elsewhere); another -errno when it cannot be
 * opened. */
int namespace_audit_open(struct namespace_audit *a, pid_t pid, uint64_t mntns,
			 const struct namespace_root *root, int pidfd);
/* Audit a target the caller opened and keeps. */
void namespace_audit_borrow(struct namespace_audit *a, struct namespace_target *t);
/* Its container, from its process's cgroups (looked for once). */
void namespace_audit_attribute(struct namespace_audit *a);
/* The pipeline on it (target->probe.ns is set here): 0, a->result filled; -ESRCH when it went
 * away meanwhile (its process exited and took its files with it); another -errno when it cannot
 * be judged (namespace_audit_why() says why). */
int namespace_audit_run(struct namespace_audit *a, struct audit_target *target,
			const struct config *c);
/* Why it could not be judged, for a person: the mountinfo line at fault, the pipeline's
 * message, else the errno's. */
const char *namespace_audit_why(const struct namespace_audit *a, int r, char *buf, size_t size);
/* Its report for the writers (pointing into a: valid until namespace_audit_done()). */
struct report_namespace namespace_audit_report(struct namespace_audit *a, unsigned pids_total);
void namespace_audit_done(struct namespace_audit *a);
