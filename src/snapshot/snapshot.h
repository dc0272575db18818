/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * struct snapshot: everything the checks read, as plain data (docs/architecture.md).
 * probe.c fills one from the live system; snapshot-json.h reads the JSON form of
 * docs/snapshot.md and validates it, and writes it; idmap.h reads the user namespace's id maps.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "snapshot/allocation.h"
#include "snapshot/devpts-options.h"
#include "snapshot/mountinfo.h"
#include "util/macro.h"

struct initramfs_record;

enum node_type {
	NODE_MISSING,
	NODE_CHAR,
	NODE_SYMLINK,
	NODE_DIR,
	NODE_FILE,
	NODE_OTHER,
	_NODE_TYPE_MAX,
};

struct node {
	char *path;
	enum node_type type;
	mode_t mode; /* permission bits and setuid/setgid/sticky; 0 when missing */
	uid_t uid;
	gid_t gid;
	dev_t rdev;
	dev_t dev;    /* device of the filesystem holding the node */
	ino_t ino;    /* 0 when unknown (optional in JSON); repair checks it did not change */
	char *target; /* symlink target, as read */
	/* Change time, live probes only (not in JSON; zero when unknown): devpts reuses a slave's
	 * inode number with its index, so repair tells a new pty from the probed one by this. */
	struct timespec ctime;
};

/* Which end of a pty a holder's fd is: a slave (its terminal) or a master (the side a terminal
 * emulator, sshd or a container manager keeps); both, in one process, for the pty's keeper
 * (lxc-start keeps each of its container's ttys so), its fd the slave's. Unknown in a snapshot
 * that does not say. */
enum holder_end {
	HOLDER_END_UNKNOWN,
	HOLDER_END_SLAVE,
	HOLDER_END_MASTER,
	HOLDER_END_BOTH,
	_HOLDER_END_MAX,
};

/* With what rights the holder scan read other processes' /proc/PID/fd, which takes
 * CAP_SYS_PTRACE for another user's: what a skipped process says about the audit. Unknown in a
 * snapshot that does not say. */
enum holders_scanner {
	HOLDERS_SCANNER_UNKNOWN,
	HOLDERS_SCANNER_USER,	    /* neither root nor CAP_SYS_PTRACE */
	HOLDERS_SCANNER_NO_PTRACE,  /* root, without CAP_SYS_PTRACE */
	HOLDERS_SCANNER_PRIVILEGED, /* CAP_SYS_PTRACE: refused all the same when skipped */
	_HOLDERS_SCANNER_MAX,
};

struct holder {
	pid_t pid;
	char *comm;
	dev_t dev; /* the devpts instance */
	unsigned index;
	int fd; /* the fd found first (optional in JSON: -1 unknown) */
	enum holder_end end;
};

/* A session whose controlling terminal is a slave of the serving instance owned by root (the
 * probe looks for them only when such a slave exists): who runs in it, and who holds the master.
 * Ids are the judged namespace's; pids are those of the auditing process's /proc. */
struct tty_session {
	dev_t dev;	/* the devpts instance */
	unsigned index; /* the slave's pty number */
	pid_t sid;	/* the session's id */
	pid_t leader;	/* the session leader (sid), or 0 when it is not seen */
	char *leader_comm;
	/* The session's real uid and gid: its leader's, or, with no leader seen, those of its
	 * foreground process group's leader. */
	uid_t uid;
	gid_t gid;
	pid_t holder; /* a process holding the pty's master, or 0 when none was found */
	char *holder_comm;
	uid_t holder_uid;
};

struct setuid_helper {
	char *path;
	mode_t mode;
	uid_t uid;
};

/* A member of the tty group (its member list, not those whose primary group it is), with its
 * uid where the user database says (uid_known). */
struct tty_member {
	char *name;
	bool uid_known;
	uid_t uid;
};

/* The devpts instance serving /dev/ptmx in the caller's own mount namespace ("the host" of a
 * namespace audit): what devpts-host-instance compares a namespace's serving instance with. */
struct host_serving {
	bool known; /* the host has a serving instance, and it was read */
	dev_t dev;
	unsigned mount_id;
	char *mountpoint;
	uint64_t mntns; /* the host's mount namespace inode */
};

/* Which namespace a namespace audit (--namespace PID) judged. Optional in JSON. */
struct snapshot_namespace {
	uint64_t mntns; /* inode number of the mount namespace */
	pid_t pid;	/* the process whose namespace and root were read */
	/* Its root directory is the host's own (the same inode: a copy or bind of the host's /),
	 * as in a systemd service's sandbox or under a plain unshare -m, never in a container of
	 * its own tree. Optional in JSON, default false. */
	bool root_is_host;
	struct host_serving host;
};

/* How far the search for holders went (probe/holder-scan.h). partial: it stopped at its time
 * budget with processes_left not looked at, so a holder may be missing. Optional in JSON. */
struct holders_progress {
	bool partial;
	unsigned processes_scanned, processes_left;
	uint64_t fds_scanned;
};

/* The device cgroup of the judged namespace's process (ptsguard's own for its own namespace), read
 * only when the allocation probe's open of /dev/ptmx or of its slave failed with EPERM: what the
 * check names as the denial's likely source. Optional in JSON ("device_cgroup"). */
struct device_cgroup {
	/* 1: the v1 devices controller, whose rules devices.list shows; 2: the unified hierarchy,
	 * whose device rules are BPF programs nothing lists */
	unsigned version;
	char *path; /* the cgroup, as /proc/PID/cgroup names it */
	char *list; /* version 1: devices.list as read; NULL when not read */
	/* The container the process belongs to (probe/container.h), or NULL */
	char *container_manager;
	char *container_name; /* its name, else its id */
};

struct device_cgroup *device_cgroup_free(struct device_cgroup *d);
DEFINE_POINTER_CLEANUP(struct device_cgroup, device_cgroup_free)

struct snapshot {
	char *hostname;
	char *kernel_release;
	long user_namespaces_max;
	long pty_max, pty_reserve, pty_nr;
	bool
	    initial_mount_ns; /* optional in JSON: was the snapshot taken in the initial mount ns */
	bool initial_mount_ns_unknown; /* null in JSON: that could not be told (initial_mount_ns
					* is then false: the reserve is assumed not to apply) */
	/* The judged user namespace's id maps, the text of /proc/PID/uid_map and gid_map; NULL
	 * is the identity (the initial user namespace). Optional in JSON. */
	char *uid_map, *gid_map;
	gid_t tty_gid;

	char *mountinfo;
	size_t mountinfo_size;
	struct mount_table *mounts; /* parsed mountinfo */
	char *fstab;		    /* NULL when there is none */

	struct node *nodes;
	size_t n_nodes, allocated_nodes;
	struct holder *holders;
	size_t n_holders, allocated_holders;
	unsigned holders_skipped;  /* processes whose fds could not be read */
	int holders_skipped_errno; /* why the first of them could not (EACCES, EPERM), 0 unknown */
	enum holders_scanner holders_scanner;
	bool holders_scanned;
	struct holders_progress holders_progress;
	/* The ptys the kernel counts (kernel.pty.nr, every instance's) less the slaves the
	 * instances mounted here list, when the probe counted them (probe/holder-scan.h); above
	 * 0, some pty lives on an instance not mounted here, and the holder scan looks for
	 * processes here that hold one. Not in JSON: a snapshot carries the holders found. */
	long ptys_unseen;
	struct setuid_helper *helpers;
	size_t n_helpers, allocated_helpers;
	/* Sessions on root-owned slaves (above). Optional in JSON ("tty_sessions"). */
	struct tty_session *tty_sessions;
	size_t n_tty_sessions, allocated_tty_sessions;

	/* The initramfs record (snapshot/initramfs-record.h), or NULL: which devpts instances
	 * the initramfs made and what it predicted. Optional. */
	struct initramfs_record *initramfs;
	/* The daemon's record of the serving instance last seen healthy. Optional in JSON
	 * ("last_healthy"). */
	struct devpts_seen_healthy last_healthy;

	/* A namespace audit: which namespace, and the host's serving instance; NULL when the
	 * snapshot is of the caller's own namespace. */
	struct snapshot_namespace *ns;

	/* The allocation probe (snapshot/allocation.h); ALLOC_NOT_RECORDED when the snapshot has
	 * none. Optional in JSON. */
	struct alloc_probe probe;
	/* NULL unless that probe failed an open with EPERM and the cgroup could be read. */
	struct device_cgroup *device_cgroup;

	/* The C library the judged root has, read only where its user namespace maps a single
	 * gid (probe/userland.h): libc is the path looked at with its symlink's target (NULL: none
	 * found), glibc_minor the 2.N it names (0: not told by the name, as from 2.34 on, where
	 * libc.so.6 is the library itself). Optional in JSON ("userland"). */
	struct userland {
		char *libc;
		unsigned glibc_minor;
	} userland;

	/* The tty group's members; tty_members_known false when they were not read (an older
	 * snapshot, a group file that could not be read). Optional in JSON ("tty_members"). */
	struct tty_member *tty_members;
	size_t n_tty_members, allocated_tty_members;
	bool tty_members_known;

	/* When and by which ptsguard it was captured (ptsguard snapshot): CLOCK_REALTIME in
	 * microseconds, 0 when not recorded; captured_by the version and captured_by_git its git
	 * description (NULL when not recorded). Optional in JSON ("captured_at", "generator"). */
	uint64_t captured_at;
	char *captured_by, *captured_by_git;
};

struct snapshot *snapshot_new(void);
struct snapshot_namespace *snapshot_namespace_free(struct snapshot_namespace *ns);
struct snapshot *snapshot_free(struct snapshot *s);
DEFINE_POINTER_CLEANUP(struct snapshot, snapshot_free)

/* Set the raw mountinfo text and parse it (takes ownership of text). */
int snapshot_set_mountinfo(struct snapshot *s, char *text, size_t size, struct parse_error *err);

/* Use a table read another way (listmount/statmount): no raw text then. Takes ownership. */
void snapshot_set_mount_table(struct snapshot *s, struct mount_table *t);

/* Append a node (copies path and target). Returns the node or NULL on OOM. */
struct node *snapshot_add_node(struct snapshot *s, const char *path);
const struct node *snapshot_find_node(const struct snapshot *s, const char *path);
/* Is n a pty slave of the devpts instance dev mounted at mp: a char node mp/N on dev? Sets
 * *index to N. */
bool node_is_slave(const struct node *n, const char *mp, dev_t dev, unsigned *index);
/* Append a copy of h (comm copied). */
int snapshot_add_holder(struct snapshot *s, const struct holder *h);
/* Append a copy of t (its strings copied; NULL ones stay NULL). */
int snapshot_add_tty_session(struct snapshot *s, const struct tty_session *t);

/* Inside a user namespace nested in another, /proc/self/uid_map and gid_map number their outside
 * ids as the parent namespace does, while mountinfo prints gid= and uid= as the initial one does,
 * and nothing a process there can read tells how the parent numbers them. The allocation probe's
 * slave tells it for one id: the serving instance's gid= as mountinfo prints it is the slave's
 * group as stat() shows it there. When the recorded gid_map (of the auditing process's own user
 * namespace) translates it to another group, its outside ids are moved by the difference, so
 * that they are the initial namespace's (one offset: LXC, LXD and podman give a nested namespace
 * one contiguous range); the same for uid= and uid_map, which also follows gid_map when the two
 * maps were alike. Only for a snapshot of the auditing process's own namespaces. Returns 1 when
 * a map changed, 0 when not, -ENOMEM. */
int snapshot_calibrate_idmaps(struct snapshot *s);

/* "initial", "other" or "unknown": the mount namespace the snapshot was taken in. */
const char *snapshot_mount_ns_kind(const struct snapshot *s);
/* A namespace judged from the host, which knows the host's serving instance. */
bool snapshot_judged_from_host(const struct snapshot *s);
/* Judged from the host, dev is the host's own serving instance, seen from another namespace. */
bool snapshot_is_host_instance(const struct snapshot *s, dev_t dev);
/* The judged user namespace is the host's (identity maps). */
bool snapshot_in_host_userns(const struct snapshot *s);

const char *node_type_to_string(enum node_type t);
const char *holder_end_to_string(enum holder_end e);
const char *holders_scanner_to_string(enum holders_scanner s);
int holders_scanner_from_string(const char *s);
int holder_end_from_string(const char *s);
int node_type_from_string(const char *s);
