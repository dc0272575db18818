/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe: the only code that reads the live system (docs/architecture.md). It fills a
 * struct snapshot and nothing else: mountinfo, the ptmx nodes, the serving
 * instance's slaves, sysctls, the tty group, fstab, pt_chown helpers, and the
 * holders of covered devpts instances (only when one exists). This file orders the two passes
 * and the allocation probe; each subject is read by a file of its own: ptmx-route.h (the ptmx
 * nodes and the directories to them), slaves.h, holder-scan.h, setuid-helpers.h, kernel-facts.h.
 */
#pragma once

#include "analysis/analysis.h"
#include "probe/allocation.h"
#include "probe/holder-scan.h"
#include "probe/kernel-facts.h"
#include "probe/setuid-helpers.h"
#include "snapshot/mountinfo.h"
#include "snapshot/snapshot.h"

struct namespace_target;

struct probe_options {
	bool skip_holders;	  /* never scan /proc/<pid>/fd */
	bool need_mountinfo_text; /* snapshot, initramfs-record: keep the raw text */
	bool need_unique_ids;	  /* the daemon's tracker: listmount()/statmount(), where usable */
	/* The daemon's tracker: audit these mounts (taken over) instead of reading the table. */
	struct mount_table *mounts;
	/* The tty group as the configuration resolved it (TTYGroup=); else the probe looks up
	 * group "tty". */
	bool has_tty_gid;
	gid_t tty_gid;
	/* The allocation probe (probe/allocation.h), run after the second pass in audits as root:
	 * skipped when skip_allocation (the snapshot then says ALLOC_DISABLED); as the user
	 * has_alloc_user names, else PROBE_USER_DEFAULT. */
	bool skip_allocation;
	bool has_alloc_user;
	uid_t alloc_uid;
	gid_t alloc_gid;
	/* The budget of a run over many namespaces (alloc_options.budget_left): the probe is not
	 * started once it is spent (ALLOC_SKIPPED); NULL: none. */
	uint64_t *alloc_budget;
	/* The namespace to judge, opened by the caller through pipeline/namespace-audit.h (NULL:
	 * the caller's own). Every path is read under its root, its mountinfo and id maps are its
	 * own, its holders are its own processes. */
	const struct namespace_target *ns;
	/* The host's serving instance, recorded in a namespace's snapshot for
	 * devpts-host-instance; NULL: the pipeline reads the host itself. */
	const struct host_serving *host;
	/* Those facts, read once for a run over many namespaces; NULL: read here. */
	const struct probe_kernel_facts *kernel;
	/* Our own namespace: the serving instance as last seen healthy, recorded in the snapshot
	 * (snapshot.h, last_healthy). The daemon gives its memory (last_healthy, not NULL); an
	 * audit names the daemon's state file to read it from (state_file; NULL: neither). */
	const struct devpts_seen_healthy *last_healthy;
	const char *state_file;
};

/* The "last_healthy" of the daemon's state file at path: 0 and *ret set, or -errno and *ret
 * untouched (-ENODATA:
 * the file has none, -EINVAL: not what the daemon writes). The file is the daemon's own, in
 * /run; a FIFO, a symlink or more than STATE_FILE_READ_MAX bytes is not read. */
int probe_read_last_healthy(const char *path, struct devpts_seen_healthy *ret);

/* The first pass: the mount table, hostname and kernel, the tty group, fstab, /dev/ptmx and the
 * ptmx nodes of the devpts mountpoints: what an analysis needs to say which instance serves
 * /dev/ptmx. On -EINVAL, *err names the mountinfo line at fault. */
int probe_base(const struct probe_options *opts, struct snapshot **ret, struct parse_error *err);
/* The second pass, once a analysed s: the pts directory the kernel looks in, the serving
 * instance's slaves, the holders of covered instances (unless opts->skip_holders), the setuid
 * helpers and the initramfs record. It adds nodes to s, so a's node pointers must be renewed
 * afterwards (analysis_update_nodes()). */
int probe_details(const struct probe_options *opts, struct snapshot *s, const struct analysis *a);

/* The allocation probe of an audit, from its start to its record. */
struct alloc_pending {
	struct guarded_worker *worker;
	struct alloc_options o;
	/* ALLOC_DISABLED, ALLOC_NOT_ROOT or ALLOC_NO_CAP_*: nothing was started; ALLOC_PERFORMED:
	 * it was. */
	enum alloc_status status;
	int submitted;	  /* what handing it to the worker returned */
	int cgroup_error; /* ALLOC_SETUP_FAILED: the namespace's cgroups could not be known */
};
/* Close what the probe holds of its namespace's cgroups (any time after the start). */
void alloc_pending_done(struct alloc_pending *p);

/* Start the allocation probe of opts on worker w and return at once (opts->ns another
 * namespace: every path of the probe is resolved under its root): it allocates while the caller
 * goes on reading. w NULL (a lone audit): nothing yet, probe_allocation_into() runs it in a
 * guarded child. Nothing is started when skipped, not root, or without CAP_SETUID or
 * CAP_SETGID. Cannot fail: a worker that could
 * not be started is recorded by probe_allocation_into(). */
void probe_allocation_start(const struct probe_options *opts, struct guarded_worker *w,
			    struct alloc_pending *ret);
/* Its outcome into s->probe, or why it was not performed (skipped, not root): the answer is
 * awaited (at most its deadline, retried as probe/allocation.h says). A worker that cannot be
 * started is recorded as such (ALLOC_SETUP_FAILED, "start"), not an error of the audit (but
 * -ENOMEM is returned). */
int probe_allocation_into(struct alloc_pending *p, struct snapshot *s);

/* Where the initramfs hook leaves its record; /run survives switch-root. */
#define INITRAMFS_RECORD_PATH "/run/ptsguard/initramfs.json"
/* The most of the daemon's state file read for its last_healthy: a report of a host with a
 * few thousand findings. */
#define STATE_FILE_READ_MAX (16u << 20)
