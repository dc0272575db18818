/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard initramfs-record`: what the initramfs hooks run just before the switch to the real
 * root (dracut pre-pivot, initramfs-tools init-bottom). One probe of the initramfs, with the new
 * root's /etc/fstab in place of the initramfs's own, the checks, and the record
 * (snapshot/initramfs-record.h) that analysis/boot-predict.h builds: the devpts instances and where
 * each mount lands after switch-root, the devpts lines of the new root's fstab, the CentOS 6
 * prediction; with the findings and the snapshot. Written atomically to
 * /run/ptsguard/initramfs.json, since /run is carried across switch-root. Exit 0 when the record
 * is written, 3 when not; the hooks log and go on either way, a boot never waits for or fails on
 * ptsguard.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analysis/analysis.h"
#include "analysis/boot-predict.h"
#include "checks/checks.h"
#include "cli/cli.h"
#include "snapshot/fstab.h"
#include "snapshot/initramfs-record.h"
#include "probe/newroot-init.h"
#include "probe/probe.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot.h"
#include "report/report.h"
#include "util/fileio.h"
#include "util/json-util.h"
#include "util/limits.h"
#include "util/output-file.h"
#include "util/log.h"
#include "util/path.h"
#include "util/string-util.h"

static void help(void)
{
	printf("Usage: ptsguard initramfs-record --newroot DIR [--phase NAME] [--cmdline FILE]\n"
	       "                                 [--output FILE|-]\n"
	       "\n"
	       "Run by the initramfs hooks just before switch-root: audit the initramfs with the\n"
	       "new root's /etc/fstab, foresee what the boot does to devpts, and write the record\n"
	       "to " INITRAMFS_RECORD_PATH " (/run is kept across switch-root).\n"
	       "\n"
	       "  --newroot DIR   where the real root is mounted ($NEWROOT, $rootmnt)\n"
	       "  --phase NAME    the hook point, recorded as is (pre-pivot, init-bottom)\n"
	       "  --cmdline FILE  the kernel command line (init=, systemd.mask=, fstab=); the\n"
	       "                  default is /proc/cmdline\n"
	       "  --output FILE   write there instead (absent or a regular file); - for\n"
	       "                  standard output\n"
	       "  -h --help       show this help\n"
	       "\n"
	       "Exit status: 0 record written, 3 not written. Notes for the kernel log go to\n"
	       "standard output, each with its level as <N>: the prediction (<4> when it\n"
	       "foresees a second instance or lost options, else <6>), findings at warning or\n"
	       "above (<4>).\n");
}

struct initramfs_args {
	char *newroot; /* absolute, without trailing slashes */
	const char *phase;
	const char *cmdline; /* the file holding the kernel command line */
	const char *output;  /* "-": standard output */
};

static void initramfs_args_done(struct initramfs_args *args)
{
	free(args->newroot);
	args->newroot = NULL;
}

/* 0: run; 1: done (help shown); negative: a usage error, logged. */
static int initramfs_parse(int argc, char **argv, struct initramfs_args *ret)
{
	static const struct option options[] = {
		{ "newroot", required_argument, NULL, 'r' },
		{ "phase", required_argument, NULL, 'p' },
		{ "cmdline", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	*ret = (struct initramfs_args){
		.phase = "initramfs",
		.cmdline = "/proc/cmdline",
		.output = INITRAMFS_RECORD_PATH,
	};
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'r':
			free(ret->newroot);
			ret->newroot = strdup(optarg);
			if (!ret->newroot)
				return log_error("initramfs-record: out of memory"), -ENOMEM;
			break;
		case 'p':
			ret->phase = optarg;
			break;
		case 'c':
			ret->cmdline = optarg;
			break;
		case 'o':
			ret->output = optarg;
			break;
		case 'h':
			help();
			return 1;
		default:
			return bad_option("initramfs-record", c, argv);
		}
	}
	if (no_more_arguments("initramfs-record", argc, argv) < 0)
		return -EINVAL;
	if (!ret->newroot || ret->newroot[0] != '/') {
		log_error("initramfs-record: --newroot needs the absolute path of the new root");
		return -EINVAL;
	}
	if (!*ret->phase) {
		log_error("initramfs-record: --phase needs a name");
		return -EINVAL;
	}
	path_strip_trailing_slashes(ret->newroot);
	return 0;
}

/* The new root's /etc/fstab into snap->fstab (NULL when there is none): the checks and the
 * prediction read it, as it is what the boot goes on with. Returns why it could not be read,
 * logged, or 0. */
static int read_newroot_fstab(const char *newroot, struct snapshot *snap)
{
	_cleanup_free_ char *fstab = NULL, *path = path_join(newroot, "etc/fstab");
	struct stat st;
	int r, error = 0;

	if (stat(newroot, &st) < 0 || !S_ISDIR(st.st_mode)) {
		error = errno ?: ENOTDIR;
		log_error_errno(-error, "initramfs-record: new root %s", newroot);
	} else {
		r = fstab_read_in_root(newroot, &fstab);
		if (r < 0 && r != -ENOENT) {
			error = -r;
			log_error("initramfs-record: cannot read %s: %s", path ?: "etc/fstab",
				  read_error_string(r));
		}
	}
	free(snap->fstab);
	snap->fstab = TAKE_PTR(fstab);
	return error;
}

/* The record with the audit's findings and summary, and the snapshot it was made from. */
static char *record_text(struct initramfs_record *rec, const struct snapshot *snap,
			 const struct analysis *a, const struct findings *findings)
{
	json_object *report, *o;
	char *text;

	report = report_to_json(&(struct report){
	    .snap = snap,
	    .a = a,
	    .findings = findings,
	    .source = "live",
	    .generated_at = now_usec(CLOCK_REALTIME),
	});
	json_object_object_get_ex(report, "findings", &rec->findings);
	json_object_object_get_ex(report, "summary", &rec->summary);
	if (json_object_object_get_ex(report, "generated_at", &o) && o)
		rec->generated_at = strdup(json_object_get_string(o));
	json_object_get(rec->findings);
	json_object_get(rec->summary);
	json_object_put(report);

	o = initramfs_record_to_json(rec);
	json_object_object_add(o, "snapshot", snapshot_to_json(snap));
	text = json_to_text(o, 1);
	json_object_put(o);
	return text;
}

/* The new root's init (probe/newroot-init.h), with the kernel command line of args->cmdline; one
 * that cannot be read is logged and counts as empty: the init is then judged by its files. */
static int read_newroot_init(const struct initramfs_args *args, struct initramfs_init *ret)
{
	_cleanup_free_ char *cmdline = NULL;
	int r = read_full_file(args->cmdline, CMDLINE_SIZE_MAX, &cmdline, NULL);

	if (r < 0)
		log_error("initramfs-record: cannot read the kernel command line %s: %s",
			  args->cmdline, read_error_string(r));
	r = newroot_init_read(args->newroot, cmdline, ret);
	if (r < 0)
		log_error_errno(r, "initramfs-record: the new root's init");
	return r;
}

static int initramfs_run(const struct initramfs_args *args)
{
	_cleanup_(initramfs_init_done) struct initramfs_init init = { 0 };
	_cleanup_(audit_result_done) struct audit_result probed = { 0 }, res = { 0 };
	_cleanup_(initramfs_record_freep) struct initramfs_record *rec = NULL;
	_cleanup_free_ char *text = NULL;
	int fstab_errno, r;

	/* This root as it is, judged with the new root's fstab: what the boot goes on with. */
	if (run_probe(true, &probed) < 0)
		return EXIT_UNKNOWN;
	fstab_errno = read_newroot_fstab(args->newroot, probed.snap);
	if (run_pipeline(&(struct audit_target){ .snapshot = TAKE_PTR(probed.snap) }, NULL, &res) <
	    0)
		return EXIT_UNKNOWN;
	if (read_newroot_init(args, &init) < 0)
		return EXIT_UNKNOWN;
	r = initramfs_record_build(res.a, args->newroot, args->phase, fstab_errno, &init, &rec);
	if (r < 0) {
		log_error_errno(r, "initramfs-record: audit failed");
		return EXIT_UNKNOWN;
	}
	text = record_text(rec, res.snap, res.a, &res.findings);
	if (!text) {
		log_error("initramfs-record: out of memory");
		return EXIT_UNKNOWN;
	}
	if (write_output("initramfs-record", args->output, text, true) < 0)
		return EXIT_UNKNOWN;

	/* Notes for the kernel log, where a person reads about the boot: a prediction that
	 * something breaks is a warning, one that nothing does a note; nothing about a boot with
	 * nothing to foresee. */
	if (!output_file_is_stdout(args->output)) {
		if (rec->prediction.effect != EFFECT_NONE)
			printf("<%d>prediction: %s\n",
			       initramfs_prediction_warns(&rec->prediction) ? 4 : 6,
			       rec->prediction.reason);
		FOREACH_ARRAY (f, res.findings.items, res.findings.n_items)
			if (f->severity >= SEVERITY_WARNING)
				printf("<4>%s: %s\n", f->check->id, f->summary);
	}
	/* The record is written: a lost note does not change that (nor main()'s check of
	 * standard output at exit, which is for the record when it goes there). */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("initramfs-record: the notes for the kernel log were lost: %s",
			  strerror(errno));
		clearerr(stdout);
	}
	return 0;
}

int cmd_initramfs(int argc, char **argv)
{
	_cleanup_(initramfs_args_done) struct initramfs_args args = { 0 };
	int r = initramfs_parse(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return initramfs_run(&args);
}
