/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the kernel would do with a snapshot: which mounts are reachable, which
 * are covered and by what, the devpts instances, what /dev/ptmx is, and which
 * instance serves open("/dev/ptmx") under the running kernel's rules
 * (docs/checks.md, Terms). Pure: the snapshot in, facts out. The probe uses it
 * to decide what else to stat; the checks and sinks read it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot/devpts-options.h"
#include "snapshot/snapshot.h"
#include "util/hashindex.h"

/* No mount. A position in the table fits in 32 bits (analysis_new() refuses a larger table), and
 * the per-mount arrays below keep positions in 32 bits: at 10,000 mounts they are 120 KiB, not
 * 240. NO_MOUNT is the same value held in either width, and compares equal in both. */
#define NO_MOUNT ((size_t)UINT32_MAX)

struct instance {
	dev_t dev;
	size_t *mounts; /* indices into snapshot->mounts, in mountinfo order */
	size_t n_mounts, allocated_mounts;
	struct devpts_options options;	 /* gid= and uid= in the judged user namespace's numbers */
	bool gid_unmapped, uid_unmapped; /* gid= or uid= has no number there (options keep the
					  * initial namespace's) */
	bool covered;			 /* no mount of the instance is reachable by path */
	size_t visible_mount;		 /* first reachable mount, or NO_MOUNT */
	bool serving;
};

enum ptmx_kind {
	PTMX_CHAR,
	PTMX_SYMLINK,
	PTMX_BIND,
	PTMX_MISSING,
	PTMX_OTHER,
};

/* Why open("/dev/ptmx") does or does not reach an instance. */
enum ptmx_route {
	ROUTE_OK,	   /* serving instance found */
	ROUTE_MISSING,	   /* /dev/ptmx does not exist */
	ROUTE_NOT_DEVICE,  /* not a char 5:2 nor a devpts ptmx node */
	ROUTE_NO_DEVPTS,   /* char node, nothing devpts at pts beside it */
	ROUTE_PTS_COVERED, /* char node, the devpts at pts beside it is covered */
	ROUTE_UNKNOWN,	   /* old kernel, no devpts mounted: the kernel's internal instance */
	/* kernel >= 4.7, a bind mount of a ptmx node from outside devpts at /dev/ptmx: the kernel
	 * looks for pts beside the node on the bind's own mount, a file, where nothing is
	 * mounted, and every open fails with ENOENT */
	ROUTE_BIND_NO_INSTANCE,
};

struct analysis {
	const struct snapshot *snap;
	bool multi_instance; /* kernel >= 4.7 */

	/* per mount entry */
	bool *reachable;
	uint32_t *covered_by; /* the mount stacked on it or over an ancestor, or NO_MOUNT */
	uint32_t *stacked_on; /* the mount directly on top at the same mountpoint, or NO_MOUNT */
	uint32_t *parent;     /* the parent mount, or NO_MOUNT at the root of the table */

	struct instance *instances; /* devpts instances, ordered by first mount */
	size_t n_instances;
	struct hash_index instances_by_dev; /* positions in instances, by device */

	enum ptmx_kind ptmx_kind;
	const struct node *ptmx;       /* lstat of /dev/ptmx, NULL if not probed */
	const struct node *ptmx_final; /* after following symlinks; NULL if dangling */
	size_t ptmx_bind_mount;	       /* mount at /dev/ptmx, or NO_MOUNT */
	char *pts_path;		       /* the "pts" the kernel looks up beside a char node */
	enum ptmx_route route;
	struct instance *serving;
	size_t serving_mount;	   /* the mount through which the serving instance is reached */
	size_t pts_covering_mount; /* ROUTE_PTS_COVERED: the mount that hides devpts */

	size_t cover_work; /* bytes of mountpoints hashed looking for covering siblings (tests) */
};

/* Mount i of the analysed table; NULL for NO_MOUNT. */
static inline const struct mount_entry *analysis_mount(const struct analysis *a, size_t i)
{
	return i == NO_MOUNT ? NULL : &a->snap->mounts->entries[i];
}

/* The mount the serving instance is reached through; NULL when there is no serving instance or
 * it is reached through no mount. */
static inline const struct mount_entry *analysis_serving_mount(const struct analysis *a)
{
	return a->serving ? analysis_mount(a, a->serving_mount) : NULL;
}

int analysis_new(const struct snapshot *snap, struct analysis **ret);
/* The snapshot's nodes changed (were added, and so may have moved), its mounts did not: redo
 * what depends on the nodes, the route of /dev/ptmx. Cheaper than a new analysis. */
int analysis_update_nodes(struct analysis *a);
struct analysis *analysis_free(struct analysis *a);
DEFINE_POINTER_CLEANUP(struct analysis, analysis_free)

/* The mounts that every fact of the analysis and every check depends on, as ascending indices
 * into the table: devpts mounts, whatever is at /dev/ptmx or at the pts directory the kernel
 * looks in, and everything their reachability depends on (parents, mounts stacked on them,
 * siblings hiding them). An analysis of a table of only these mounts, in the same order, gives
 * the same findings. */
int analysis_relevant_mounts(const struct analysis *a, size_t **ret, size_t *ret_n);
/* The mount that path leads to, when one is mounted right there: the reachable mount at
 * mountpoint path, the last listed if a hostile table has several (the top of a stack), or
 * NO_MOUNT. */
size_t analysis_mount_at(const struct analysis *a, const char *path);
struct instance *analysis_find_instance(const struct analysis *a, dev_t dev);
const char *ptmx_kind_to_string(enum ptmx_kind k);

#define PTMX_PATH	"/dev/ptmx"
#define PTMX_DIR	"/dev"	   /* the directory of PTMX_PATH */
#define PTS_PATH	"/dev/pts" /* where ptsname() names the slaves */
#define PTMX_RDEV_MAJOR 5
#define PTMX_RDEV_MINOR 2
/* The controlling terminal of whoever opens it (dev-tty-broken). */
#define DEV_TTY_PATH	   "/dev/tty"
#define DEV_TTY_RDEV_MAJOR 5
#define DEV_TTY_RDEV_MINOR 0
/* Unix98 pty slaves use majors 136..143, 256 minors each. */
#define PTY_SLAVE_MAJOR_FIRST 136
#define PTY_SLAVE_MAJOR_LAST  143
