/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe/cgroup.h"
#include "probe/namespace.h"
#include "repair/repair.h"
#include "snapshot/idmap.h"
#include "snapshot/mountinfo.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/path.h"
#include "util/procfs.h"
#include "util/string-util.h"

/* The outcomes of the child, one record per action in plan order: result, then the detail and
 * the command as length-prefixed strings (length -1 for NULL). */
#define OUTCOMES_SIZE_MAX (16u << 20)

static int put_string(int fd, const char *s)
{
	int32_t len = s ? (int32_t)strlen(s) : -1;

	if (write(fd, &len, sizeof(len)) != sizeof(len))
		return -EIO;
	if (len > 0 && write(fd, s, (size_t)len) != len)
		return -EIO;
	return 0;
}

static int get_string(const char **p, const char *end, char **ret)
{
	int32_t len;

	if ((size_t)(end - *p) < sizeof(len))
		return -EBADMSG;
	memcpy(&len, *p, sizeof(len));
	*p += sizeof(len);
	if (len < 0) {
		*ret = NULL;
		return 0;
	}
	if ((size_t)(end - *p) < (size_t)len)
		return -EBADMSG;
	*ret = strndup(*p, (size_t)len);
	*p += len;
	return *ret ? 0 : -ENOMEM;
}

_Noreturn static void act_child(int out, struct repair_plan *p, struct repair_options *o,
				const struct namespace_target *ns)
{
	int r;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	r = namespace_enter(ns);
	if (r < 0) {
		FOREACH_ARRAY (a, p->actions, p->n_actions)
			if (a->result == ACTION_PLANNED) {
				a->result = ACTION_REFUSED;
				free(a->detail);
				a->detail = NULL;
				(void)!asprintf(&a->detail,
						"refused: cannot enter the namespace: %s",
						strerror(-r));
			}
	} else if (repair_act(p, o) < 0)
		_exit(2);
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		int32_t res = (int32_t)a->result;

		if (write(out, &res, sizeof(res)) != sizeof(res) ||
		    put_string(out, a->detail) < 0 || put_string(out, a->command) < 0)
			_exit(2);
	}
	_exit(0);
}

static int read_outcomes(int fd, struct repair_plan *p)
{
	_cleanup_free_ char *buf = NULL;
	const char *q, *end;
	size_t size;
	int r = read_full_fd(fd, OUTCOMES_SIZE_MAX, &buf, &size);

	if (r < 0)
		return r;
	q = buf;
	end = buf + size;
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		int32_t res;
		char *detail, *command;

		if ((size_t)(end - q) < sizeof(res))
			return -EBADMSG;
		memcpy(&res, q, sizeof(res));
		q += sizeof(res);
		if (res < 0 || res >= _ACTION_RESULT_MAX)
			return -EBADMSG;
		if ((r = get_string(&q, end, &detail)) < 0)
			return r;
		if ((r = get_string(&q, end, &command)) < 0) {
			free(detail);
			return r;
		}
		a->result = (enum action_result)res;
		free(a->detail);
		a->detail = detail;
		free(a->command);
		a->command = command;
	}
	return 0;
}

/* Is the file at path in the namespace the very inode the host has at the same path? */
static bool same_on_host(const struct namespace_target *ns, const char *path)
{
	struct stat in, host;

	return ns_lstat(ns, path, &in, NULL) == 0 && lstat(path, &host) == 0 &&
	       in.st_dev == host.st_dev && in.st_ino == host.st_ino;
}

static bool dev_mounted_on_host(const struct mount_table *t, dev_t dev)
{
	for (size_t i = 0; t && i < t->n_entries; i++)
		if (t->entries[i].dev == dev)
			return true;
	return false;
}

/* What would change the host: refused here, on the host's side, before anything is entered. */
static int refuse_host_objects(struct repair_plan *p, const struct namespace_target *ns)
{
	_cleanup_(mount_table_freep) struct mount_table *t = NULL;
	_cleanup_free_ char *text = NULL;
	struct parse_error err;
	size_t size;
	int r;

	r = read_full_file("/proc/self/mountinfo", MOUNTINFO_SIZE_MAX, &text, &size);
	if (r < 0 || (r = mount_table_parse(text, size, &t, &err)) < 0)
		return r;
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		_cleanup_free_ char *dir = NULL;
		const char *why = NULL;

		if (a->result != ACTION_PLANNED)
			continue;
		switch (a->kind) {
		case ACTION_REMOUNT:
			if (dev_mounted_on_host(t, a->dev))
				why = "its devpts instance is mounted on the host too";
			break;
		case ACTION_MKNOD:
		case ACTION_SYMLINK:
			dir = path_dirname(a->path);
			if (!dir)
				return -ENOMEM;
			if (same_on_host(ns, dir))
				why = "its directory is the host's own";
			break;
		case ACTION_CHMOD:
		case ACTION_SLAVE:
		case ACTION_SLAVE_OWNER:
			if (same_on_host(ns, a->path))
				why = "the node is the host's own";
			break;
		case ACTION_MANUAL:
			break;
		}
		if (!why)
			continue;
		a->result = ACTION_REFUSED;
		free(a->detail);
		a->detail = NULL;
		if (asprintf(&a->detail,
			     "refused: %s (bound into the namespace): repair --namespace never "
			     "changes the host",
			     why) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Refuse every planned action (the manual ones are refused already) with why. */
static int refuse_planned(struct repair_plan *p, const char *why)
{
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		if (a->result != ACTION_PLANNED)
			continue;
		a->result = ACTION_REFUSED;
		free(a->detail);
		a->detail = strdup(why);
		if (!a->detail)
			return -ENOMEM;
	}
	return 0;
}

/* Why the tty group of the namespace cannot be named from the initial user namespace. A map
 * of one id (unshare -r, unprivileged bubblewrap) is said as such, with its one line. */
static int tty_gid_unmapped(const struct namespace_target *ns, gid_t tty_gid, char **ret)
{
	unsigned long long in, out, count;

	if (idmap_size(ns->gid_map) == 1 && ns->gid_map &&
	    sscanf(ns->gid_map, " %llu %llu %llu", &in, &out, &count) == 3)
		return set_printf(
		    ret,
		    "refused: the namespace maps a single gid (its gid_map: %llu %llu "
		    "%llu): its tty group, gid %u, has no id outside it, so nothing "
		    "can be given that group from the host",
		    in, out, count, (unsigned)tty_gid);
	return set_printf(ret,
			  "refused: the namespace's gid_map maps no gid %u: its tty group has no "
			  "id outside it, so nothing can be given that group from the host",
			  (unsigned)tty_gid);
}

/* The plan's ids are the namespace's; the child acts from the initial user namespace. An id
 * with no number there refuses what needs it, saying so. */
static int to_initial(const struct namespace_target *ns, struct repair_plan *p,
		      struct repair_options *o)
{
	unsigned v;

	if (idmap_to_initial(ns->gid_map, o->tty_gid, &v) < 0) {
		_cleanup_free_ char *why = NULL;
		int r = tty_gid_unmapped(ns, o->tty_gid, &why);

		return r < 0 ? r : refuse_planned(p, why);
	}
	o->tty_gid = v;
	FOREACH_ARRAY (a, p->actions, p->n_actions)
		if (a->kind == ACTION_SLAVE && a->result == ACTION_PLANNED) {
			if (idmap_to_initial(ns->uid_map, a->uid, &v) < 0) {
				a->result = ACTION_REFUSED;
				free(a->detail);
				a->detail =
				    strdup("refused: its owner has no id outside the namespace");
			} else
				a->uid = v;
		}
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		unsigned u, g, r0;

		if (a->kind != ACTION_SLAVE_OWNER || a->result != ACTION_PLANNED)
			continue;
		if (idmap_to_initial(ns->uid_map, a->uid, &r0) < 0 ||
		    idmap_to_initial(ns->uid_map, a->owner, &u) < 0 ||
		    idmap_to_initial(ns->gid_map, a->owner_gid, &g) < 0) {
			a->result = ACTION_REFUSED;
			free(a->detail);
			a->detail = strdup("refused: its owner or the session's user has no id "
					   "outside the namespace");
			continue;
		}
		a->uid = r0;
		a->owner = u;
		a->owner_gid = g;
	}
	return 0;
}

static void cgroup_fds_done(int (*fds)[ALLOC_CGROUP_FDS])
{
	probe_cgroup_fds_close(*fds);
}

int repair_act_in(struct repair_plan *p, const struct repair_options *o,
		  const struct namespace_target *ns)
{
	_cleanup_(cgroup_fds_done) int cgroups[ALLOC_CGROUP_FDS] = { -1, -1 };
	_cleanup_close_ int rd = -EBADF, wr = -EBADF;
	struct repair_options child_o = *o;
	int fds[2], status, r;
	bool any = false;
	pid_t pid;

	if (!ns || ns->own)
		return repair_act(p, o);
	r = refuse_host_objects(p, ns);
	if (r < 0)
		return r;
	r = to_initial(ns, p, &child_o);
	if (r < 0)
		return r;
	r = namespace_target_owner(ns, &child_o.owner_uid, &child_o.owner_gid);
	if (r == -ESRCH)
		return refuse_planned(p, "refused: the process exited before its owner was read");
	if (r < 0)
		return r;
	child_o.check_owner = true;
	FOREACH_ARRAY (a, p->actions, p->n_actions)
		any = any || a->result == ACTION_PLANNED;
	if (!any)
		return 0;
	/* The host's /proc, opened before the child leaves it (util/procfs.h). */
	r = procfs_fd();
	if (r < 0)
		return r;
	/* The verification meets the device rules of the namespace's cgroups, found from here. */
	r = probe_cgroup_procs_of(ns, cgroups);
	if (r < 0 && r != -EACCES && r != -EPERM)
		child_o.verify_cgroup_error = -r;
	memcpy(child_o.verify_cgroup_fds, cgroups, sizeof(cgroups));
	child_o.verify_join_cgroups = cgroups[0] >= 0 || cgroups[1] >= 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	rd = fds[0];
	wr = fds[1];
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		rd = -EBADF;
		close(fds[0]);
		act_child(wr, p, &child_o, ns);
	}
	closep(&wr);
	r = read_outcomes(rd, p);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (r < 0)
		return r;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -ECHILD;
	return 0;
}
