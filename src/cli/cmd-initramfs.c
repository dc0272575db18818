/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard initramfs-record`: what the initramfs hooks run just before the switch to the real
 * root (dracut pre-pivot, initramfs-tools init-bottom). One probe of the initramfs, with the new
 * root's /etc/fstab in place of the initramfs's own, the checks, and a phase record: the devpts
 * instances and where each mount lands after switch-root, the devpts lines of the new root's
 * fstab, and the CentOS 6 prediction (an instance carried into the root with /dev while fstab
 * mounts devpts there again). Written atomically to /run/ptsguard/initramfs.json, since /run
 * is carried across switch-root. Exit 0 when the record is written, 3 when not; the hooks log
 * and go on either way, a boot never waits for or fails on ptsguard.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "cli/cli.h"
#include "probe/probe.h"
#include "report/report.h"
#include "snapshot/snapshot.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/util.h"

#define FSTAB_MAX (4u << 20)

/* The devpts lines of the new root's fstab. */
struct fstab_devpts {
	unsigned line;
	char *mountpoint; /* unescaped, without trailing slashes */
	char *options;	  /* "defaults" when the field is missing */
	bool noauto;
};

struct fstab_devpts_list {
	struct fstab_devpts *items;
	size_t n_items, allocated;
};

static void fstab_devpts_list_clear(struct fstab_devpts_list *l)
{
	FOREACH_ARRAY (e, l->items, l->n_items) {
		free(e->mountpoint);
		free(e->options);
	}
	free(l->items);
	*l = (struct fstab_devpts_list){ 0 };
}

/* Where the new root's /dev will come from at switch-root. */
enum dev_move {
	DEV_MOVE_NONE,	  /* /dev is no mount of its own (or the root has no /dev): nothing moves */
	DEV_MOVE_PENDING, /* switch_root, systemd or initramfs-tools' udev script will move it */
	DEV_MOVE_DONE,	  /* already moved (initramfs-tools: udev's init-bottom ran first) */
};

static const char *const dev_move_names[] = {
	[DEV_MOVE_NONE] = "none",
	[DEV_MOVE_PENDING] = "pending",
	[DEV_MOVE_DONE] = "done",
};

static void strip_trailing_slashes(char *p)
{
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = 0;
}

/* If path is prefix or lies below it, the rest ("" or "/..."); NULL otherwise. */
static const char *path_below(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (streq(prefix, "/"))
		return path;
	if (strncmp(path, prefix, n) != 0 || (path[n] != 0 && path[n] != '/'))
		return NULL;
	return path + n;
}

/* Open a file of the new root as the new root sees it: an absolute symlink in there points into
 * the new root, not into the initramfs. Falls back to a plain open before Linux 5.6. */
static int open_in_root(const char *root, const char *relative)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_free_ char *full = NULL;
	_cleanup_close_ int dfd = -EBADF;
	int fd;

	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, relative, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	/* Before 5.6, or a seccomp filter that refuses what it does not know. */
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	full = path_join(root, relative);
	if (!full)
		return -ENOMEM;
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

static int read_root_fstab(const char *root, char **ret)
{
	_cleanup_close_ int fd = open_in_root(root, "etc/fstab");

	if (fd < 0)
		return fd;
	return read_full_fd(fd, FSTAB_MAX, ret, NULL);
}

/* The devpts lines of fstab text: fields split on blanks, comments and short lines skipped. */
static int parse_fstab_devpts(const char *text, struct fstab_devpts_list *out)
{
	_cleanup_free_ char *copy = NULL;
	unsigned line = 0;
	char *next;

	if (!text)
		return 0;
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	for (char *p = copy; p; p = next) {
		char *field[4] = { 0 }, *nl = strchr(p, '\n');
		struct fstab_devpts *e;
		int n = 0;

		next = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		line++;
		for (char *q = p; *q && n < 4;) {
			q += strspn(q, " \t");
			if (!*q || *q == '#')
				break;
			field[n++] = q;
			q += strcspn(q, " \t");
			if (*q)
				*q++ = 0;
		}
		if (n < 3 || !streq(field[2], "devpts"))
			continue;
		if (GROW(out->items, out->allocated, out->n_items + 1) < 0)
			return -ENOMEM;
		e = &out->items[out->n_items];
		unescape_octal(field[1]);
		*e = (struct fstab_devpts){
			.line = line,
			.mountpoint = strdup(field[1]),
			.options = strdup(field[3] ?: "defaults"),
			.noauto = field[3] && option_get(field[3], "noauto", NULL),
		};
		out->n_items++;
		if (!e->mountpoint || !e->options)
			return -ENOMEM;
		strip_trailing_slashes(e->mountpoint);
	}
	return 0;
}

/* The topmost reachable mount at path, or NO_MOUNT. */
static size_t find_reachable_mount(const struct analysis *a, const char *path)
{
	const struct mount_table *t = a->snap->mounts;

	for (size_t i = t->n_entries; i > 0; i--)
		if (a->reachable[i - 1] && streq(t->entries[i - 1].mountpoint, path))
			return i - 1;
	return NO_MOUNT;
}

/* What switch-root will do with the mounts of the initramfs. */
struct switch_root {
	const char *newroot;
	enum dev_move dev_move;
	size_t dev_mount; /* DEV_MOVE_PENDING: the /dev mount that moves, with all below it */
};

static void switch_root_init(const struct analysis *a, const char *newroot, struct switch_root *ret)
{
	_cleanup_free_ char *root_dev = path_join(newroot, "dev");
	struct stat st;

	*ret = (struct switch_root){ .newroot = newroot, .dev_mount = NO_MOUNT };
	if (!root_dev)
		return;
	if (streq(newroot, "/") || find_reachable_mount(a, root_dev) != NO_MOUNT) {
		ret->dev_move = DEV_MOVE_DONE;
		return;
	}
	/* switch_root(8), systemd and initramfs-tools' udev script move /dev when it is a mount
	 * of its own and the new root has a /dev to move it onto. */
	ret->dev_mount = find_reachable_mount(a, "/dev");
	if (ret->dev_mount != NO_MOUNT && stat(root_dev, &st) == 0 && S_ISDIR(st.st_mode))
		ret->dev_move = DEV_MOVE_PENDING;
	else
		ret->dev_mount = NO_MOUNT;
}

/* Where a mount of the initramfs is seen from the new root after switch-root, or NULL when it
 * stays behind in the initramfs. Points into the mount table. */
static const char *after_switch_root(const struct analysis *a, const struct switch_root *sr,
				     size_t idx)
{
	const struct mount_table *t = a->snap->mounts;
	const char *mountpoint = t->entries[idx].mountpoint;
	const char *rest = path_below(mountpoint, sr->newroot);

	if (rest)
		return *rest ? rest : "/";
	if (sr->dev_move != DEV_MOVE_PENDING)
		return NULL;
	/* A move takes the mount and everything mounted below it, nothing else: not what the /dev
	 * mount covers, for one. The walk is bounded: a hostile table may hold a parent cycle. */
	for (size_t i = idx, n = 0; i != NO_MOUNT && n <= t->n_entries; i = a->parent[i], n++)
		if (i == sr->dev_mount)
			return mountpoint;
	return NULL;
}

static bool devpts_options_equal(const struct devpts_options *x, const struct devpts_options *y)
{
	return x->has_gid == y->has_gid && (!x->has_gid || x->gid == y->gid) &&
	       x->has_uid == y->has_uid && (!x->has_uid || x->uid == y->uid) &&
	       x->mode == y->mode && x->ptmxmode == y->ptmxmode && x->has_max == y->has_max &&
	       (!x->has_max || x->max == y->max);
}

static json_object *instances_json(const struct analysis *a, const struct switch_root *sr)
{
	const struct mount_table *t = a->snap->mounts;
	json_object *arr = json_object_new_array();

	FOREACH_ARRAY (inst, a->instances, a->n_instances) {
		json_object *o = json_object_new_object(), *mounts = json_object_new_array();
		const char *options = NULL;

		FOREACH_ARRAY (idx, inst->mounts, inst->n_mounts) {
			const struct mount_entry *e = &t->entries[*idx];
			json_object *m = json_object_new_object();

			options = options ?: e->super_options;
			json_object_object_add(m, "mount_id", json_object_new_int64(e->id));
			json_object_object_add(m, "mountpoint",
					       json_object_new_string(e->mountpoint));
			json_object_object_add(
			    m, "after_switch_root",
			    json_new_string_or_null(after_switch_root(a, sr, *idx)));
			json_object_object_add(
			    m, "covered", json_object_new_boolean(a->covered_by[*idx] != NO_MOUNT));
			json_object_array_add(mounts, m);
		}
		json_object_object_add(o, "device", json_new_devnum(inst->dev));
		json_object_object_add(o, "options", json_new_string_or_null(options));
		json_object_object_add(o, "mounts", mounts);
		json_object_array_add(arr, o);
	}
	return arr;
}

static json_object *fstab_devpts_json(const struct fstab_devpts_list *l)
{
	json_object *arr = json_object_new_array();

	FOREACH_ARRAY (e, l->items, l->n_items) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "line", json_object_new_int64(e->line));
		json_object_object_add(o, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(o, "options", json_object_new_string(e->options));
		json_object_object_add(o, "noauto", json_object_new_boolean(e->noauto));
		json_object_array_add(arr, o);
	}
	return arr;
}

struct prediction {
	bool double_mount;
	/* The visible devpts mount of the initramfs that moves into the new root, or NULL; and
	 * where it lands there. */
	const struct mount_entry *carried;
	const char *lands;
	/* The fstab line that mounts devpts there again, else the first auto devpts line, or
	 * NULL; and whether its options differ from the instance's. */
	const struct fstab_devpts *line;
	bool options_differ;
};

/* The CentOS 6 recipe: a visible devpts of the initramfs lands on a mountpoint that an auto
 * devpts line of the new root's fstab mounts again. Whether a second instance is then stacked
 * depends on the root's init, which is not running yet: the reason says so. */
static void predict(const struct analysis *a, const struct fstab_devpts_list *l,
		    const struct switch_root *sr, struct prediction *ret)
{
	const struct mount_table *t = a->snap->mounts;

	*ret = (struct prediction){ 0 };
	FOREACH_ARRAY (e, l->items, l->n_items)
		if (!e->noauto) {
			ret->line = e;
			break;
		}
	FOREACH_ARRAY (inst, a->instances, a->n_instances) {
		FOREACH_ARRAY (idx, inst->mounts, inst->n_mounts) {
			const struct mount_entry *m = &t->entries[*idx];
			const char *lands = after_switch_root(a, sr, *idx);

			if (!lands || a->covered_by[*idx] != NO_MOUNT)
				continue;
			if (!ret->carried) {
				ret->carried = m;
				ret->lands = lands;
			}
			FOREACH_ARRAY (e, l->items, l->n_items) {
				struct devpts_options mine, theirs;

				if (e->noauto || !streq(e->mountpoint, lands))
					continue;
				devpts_options_parse(m->super_options, &mine);
				devpts_options_parse(e->options, &theirs);
				*ret = (struct prediction){
					.double_mount = true,
					.carried = m,
					.lands = lands,
					.line = e,
					.options_differ = !devpts_options_equal(&mine, &theirs),
				};
				return;
			}
		}
	}
}

static int prediction_reason(const struct prediction *p, char **ret)
{
	const struct mount_entry *m = p->carried;

	if (p->double_mount)
		return set_printf(
		    ret,
		    "devpts %u:%u, mounted in the initramfs on %s (%s), is carried into the new "
		    "root to %s, and /etc/fstab line %u mounts devpts there again: an init that "
		    "mounts it regardless stacks a second instance on top (devpts-overmount, the "
		    "CentOS 6 recipe); one that skips mounted filesystems (systemd, util-linux "
		    "mount -a) keeps the initramfs options%s%s%s",
		    major(m->dev), minor(m->dev), m->mountpoint, m->super_options, p->lands,
		    p->line->line, p->options_differ ? ", not fstab's \"" : ", the same as fstab's",
		    p->options_differ ? p->line->options : "", p->options_differ ? "\"" : "");
	if (m && p->line)
		return set_printf(ret,
				  "devpts %u:%u from the initramfs lands on %s and /etc/fstab line "
				  "%u mounts devpts on %s: different places, nothing is stacked",
				  major(m->dev), minor(m->dev), p->lands, p->line->line,
				  p->line->mountpoint);
	if (m)
		return set_printf(ret,
				  "devpts %u:%u from the initramfs lands on %s and the new root's "
				  "/etc/fstab mounts no devpts at boot: it stays as it is",
				  major(m->dev), minor(m->dev), p->lands);
	if (p->line)
		return set_printf(
		    ret,
		    "no devpts of the initramfs reaches the new root; /etc/fstab line "
		    "%u mounts devpts on %s",
		    p->line->line, p->line->mountpoint);
	return set_printf(ret, "no devpts of the initramfs reaches the new root and its "
			       "/etc/fstab mounts none at boot: its init mounts its own");
}

static json_object *prediction_json(const struct prediction *p, const char *reason)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "double_mount", json_object_new_boolean(p->double_mount));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	json_object_object_add(o, "device", p->carried ? json_new_devnum(p->carried->dev) : NULL);
	json_object_object_add(o, "mount_id",
			       p->carried ? json_object_new_int64(p->carried->id) : NULL);
	json_object_object_add(o, "mountpoint", json_new_string_or_null(p->lands));
	json_object_object_add(o, "fstab_line",
			       p->line ? json_object_new_int64(p->line->line) : NULL);
	json_object_object_add(o, "options_differ",
			       p->double_mount ? json_object_new_boolean(p->options_differ) : NULL);
	return o;
}

static void help(void)
{
	printf("Usage: ptsguard initramfs-record --newroot DIR [--phase NAME] [--output FILE|-]\n"
	       "\n"
	       "Run by the initramfs hooks just before switch-root: audit the initramfs with the\n"
	       "new root's /etc/fstab, foresee what the boot does to devpts, and write the record\n"
	       "to " INITRAMFS_RECORD_PATH " (/run is kept across switch-root).\n"
	       "\n"
	       "  --newroot DIR   where the real root is mounted ($NEWROOT, $rootmnt)\n"
	       "  --phase NAME    the hook point, recorded as is (pre-pivot, init-bottom)\n"
	       "  --output FILE   write there instead; - for standard output\n"
	       "\n"
	       "Exit status: 0 record written, 3 not written. Notes for the kernel log (a\n"
	       "predicted double mount, findings at warning or above) go to standard output.\n");
}

/* Move a member of a json object to another (both keep their references right). */
static void json_move_key(json_object *from, json_object *to, const char *key)
{
	json_object *v;

	if (json_object_object_get_ex(from, key, &v))
		json_object_object_add(to, key, json_object_get(v));
}

int cmd_initramfs(int argc, char **argv)
{
	static const struct option options[] = {
		{ "newroot", required_argument, NULL, 'r' },
		{ "phase", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	_cleanup_(snapshot_freep) struct snapshot *snap = NULL;
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	_cleanup_free_ char *newroot = NULL, *fstab = NULL, *fstab_path = NULL, *reason = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_(fstab_devpts_list_clear) struct fstab_devpts_list devpts_lines = { 0 };
	_cleanup_(findings_clear) struct findings findings = { 0 };
	const char *phase = "initramfs", *output = INITRAMFS_RECORD_PATH;
	int fstab_errno = 0;
	struct stat st;
	json_object *record, *report, *fstab_o;
	struct prediction prediction;
	struct switch_root sr;
	int c, r;

	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'r':
			free(newroot);
			newroot = strdup(optarg);
			if (!newroot)
				return log_error("initramfs-record: out of memory"), EXIT_UNKNOWN;
			break;
		case 'p':
			phase = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			bad_option("initramfs-record", c, argv);
			return EXIT_UNKNOWN;
		}
	}
	if (optind < argc) {
		log_error("initramfs-record: unexpected argument '%s'", argv[optind]);
		return EXIT_UNKNOWN;
	}
	if (!newroot || newroot[0] != '/') {
		log_error("initramfs-record: --newroot needs the absolute path of the new root");
		return EXIT_UNKNOWN;
	}
	if (!*phase) {
		log_error("initramfs-record: --phase needs a name");
		return EXIT_UNKNOWN;
	}
	strip_trailing_slashes(newroot);

	{
		struct audit_result res;

		if (run_audit(&(struct audit_target){ .probe.need_mountinfo_text = true,
						      .snapshot_only = true },
			      NULL, &res) < 0)
			return EXIT_UNKNOWN;
		snap = TAKE_PTR(res.snap);
		audit_result_done(&res);
	}

	/* The checks read the new root's fstab: it is what the boot goes on with. */
	fstab_path = path_join(newroot, "etc/fstab");
	if (!fstab_path)
		return log_error("initramfs-record: out of memory"), EXIT_UNKNOWN;
	if (stat(newroot, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fstab_errno = errno ?: ENOTDIR;
		log_error_errno(-fstab_errno, "initramfs-record: new root %s", newroot);
	} else {
		r = read_root_fstab(newroot, &fstab);
		if (r < 0 && r != -ENOENT) {
			fstab_errno = -r;
			log_error_errno(r, "initramfs-record: cannot read %s", fstab_path);
		}
	}
	free(snap->fstab);
	snap->fstab = TAKE_PTR(fstab);

	r = parse_fstab_devpts(snap->fstab, &devpts_lines);
	if (r >= 0)
		r = analysis_new(snap, &a);
	if (r >= 0)
		r = checks_run(a, NULL, &findings);
	if (r >= 0) {
		switch_root_init(a, newroot, &sr);
		predict(a, &devpts_lines, &sr, &prediction);
		r = prediction_reason(&prediction, &reason);
	}
	if (r < 0) {
		log_error_errno(r, "initramfs-record: audit failed");
		return EXIT_UNKNOWN;
	}

	report = report_to_json(&(struct report){
	    .snap = snap,
	    .a = a,
	    .findings = &findings,
	    .source = "live",
	    .generated_at = now_usec(CLOCK_REALTIME),
	});
	record = json_object_new_object();
	json_object_object_add(record, "schema", json_object_new_string("ptsguard.initramfs/1"));
	json_move_key(report, record, "generated_at");
	json_object_object_add(record, "phase", json_object_new_string(phase));
	json_object_object_add(record, "newroot", json_object_new_string(newroot));
	json_object_object_add(record, "dev_moved",
			       json_object_new_boolean(sr.dev_move != DEV_MOVE_NONE));
	json_object_object_add(record, "dev_move",
			       json_object_new_string(dev_move_names[sr.dev_move]));
	json_object_object_add(record, "instances", instances_json(a, &sr));
	fstab_o = json_object_new_object();
	json_object_object_add(fstab_o, "path", json_object_new_string(fstab_path));
	json_object_object_add(fstab_o, "present", json_object_new_boolean(snap->fstab != NULL));
	json_object_object_add(fstab_o, "error",
			       json_new_string_or_null(fstab_errno ? strerror(fstab_errno) : NULL));
	json_object_object_add(record, "fstab", fstab_o);
	json_object_object_add(record, "fstab_devpts", fstab_devpts_json(&devpts_lines));
	json_object_object_add(record, "prediction", prediction_json(&prediction, reason));
	json_move_key(report, record, "findings");
	json_move_key(report, record, "summary");
	json_object_object_add(record, "snapshot", snapshot_to_json(snap));
	json_object_put(report);
	text = json_to_text(record, 1);
	json_object_put(record);
	if (!text) {
		log_error("initramfs-record: out of memory");
		return EXIT_UNKNOWN;
	}

	if (write_output("initramfs-record", output, text, true) < 0)
		return EXIT_UNKNOWN;

	/* Notes for the kernel log, where a person reads about the boot. */
	if (!streq(output, "-")) {
		if (prediction.double_mount)
			printf("prediction: %s\n", reason);
		FOREACH_ARRAY (f, findings.items, findings.n_items)
			if (f->severity >= SEVERITY_WARNING)
				printf("%s: %s\n", f->check->id, f->summary);
	}
	/* The record is written: a lost note does not change that. */
	(void)fflush(stdout);
	return 0;
}
