/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pieces every subcommand shares: option errors, formats, loading input, colour. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "config/conf.h"
#include "pipeline/namespace-audit.h"
#include "probe/namespace.h"
#include "probe/probe.h"
#include "snapshot/snapshot-json.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/output-file.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/string-util.h"

/* getopt_long with our own messages: every usage error exits 3 naming the option. */
int bad_option(const char *cmd, int c, char **argv)
{
	if (c == ':')
		log_error("%s: option '%s' needs a value", cmd, argv[optind - 1]);
	else
		log_error("%s: unknown option '%s' (see ptsguard %s --help)", cmd, argv[optind - 1],
			  cmd);
	return -EINVAL;
}

int parse_format_option(const char *cmd, int c, bool allow_prometheus, enum format *ret)
{
	/* The format option met first on this command line (a process parses one), as given. */
	static char first[32];
	static enum format first_format;
	enum format f;
	char given[32];
	int r;

	if (c == 'j') {
		f = FORMAT_JSON;
		snprintf(given, sizeof(given), "--json");
	} else if (c == 'f') {
		r = parse_format(cmd, optarg, allow_prometheus, &f);
		if (r < 0)
			return r;
		snprintf(given, sizeof(given), "--format %s", optarg);
	} else
		return 0;
	if (first[0] && f != first_format) {
		log_error("%s: %s and %s name different formats: give one", cmd, first, given);
		return -EINVAL;
	}
	if (!first[0]) {
		snprintf(first, sizeof(first), "%s", given);
		first_format = f;
	}
	*ret = f;
	return 1;
}

int parse_color_option(const char *cmd, int c, enum color_when *ret)
{
	if (c == 'C') {
		*ret = COLOR_NEVER;
		return 1;
	}
	if (c != 'K')
		return 0;
	if (!optarg || streq(optarg, "always"))
		*ret = COLOR_ALWAYS;
	else if (streq(optarg, "auto"))
		*ret = COLOR_AUTO;
	else if (streq(optarg, "never"))
		*ret = COLOR_NEVER;
	else {
		log_error("%s: --color: unknown value '%s' (expected auto, always or never)", cmd,
			  optarg);
		return -EINVAL;
	}
	return 1;
}

int no_more_arguments(const char *cmd, int argc, char **argv)
{
	if (optind < argc) {
		log_error("%s: unexpected argument '%s'", cmd, argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int parse_format(const char *cmd, const char *s, bool allow_prometheus, enum format *ret)
{
	if (streq(s, "text"))
		*ret = FORMAT_TEXT;
	else if (streq(s, "json"))
		*ret = FORMAT_JSON;
	else if (allow_prometheus && streq(s, "prometheus"))
		*ret = FORMAT_PROMETHEUS;
	else {
		/* Only audit allows prometheus, and the plugin line (cmd-audit.c). */
		log_error("%s: unknown format '%s' (expected text, json%s)", cmd, s,
			  allow_prometheus ? ", prometheus or plugin" : "");
		return -EINVAL;
	}
	return 0;
}

int load_snapshot_file(const char *path, struct snapshot **ret)
{
	_cleanup_free_ char *text = NULL;
	struct load_error err = { { 0 } };
	size_t size;
	int r;

	if (streq(path, "-"))
		r = read_full_fd(STDIN_FILENO, SNAPSHOT_SIZE_MAX, &text, &size);
	else
		r = read_full_file(path, SNAPSHOT_SIZE_MAX, &text, &size);
	if (r == -EFBIG)
		return log_error("%s: snapshot larger than %u MiB", path, SNAPSHOT_SIZE_MAX >> 20),
		       -EINVAL;
	if (r < 0)
		return log_error("%s: cannot read snapshot: %s", path, read_error_string(r)), r;
	r = snapshot_parse(text, size, ret, &err);
	if (r == -EINVAL) {
		log_error("%s: invalid snapshot: %s", streq(path, "-") ? "<stdin>" : path,
			  err.message);
		return r;
	}
	if (r < 0)
		return log_error_errno(r, "%s: cannot load snapshot", path);
	return 0;
}

/* One guarded worker for the allocation probes of many namespaces (--all-namespaces): started
 * at the first probe, killed by cli_probe_worker_done(). A command with one or two probes runs
 * each in a guarded child instead (probe/allocation.h). */
static struct guarded_worker *probe_worker;

struct guarded_worker *cli_probe_worker(void)
{
	/* Out of memory: NULL, and the pipeline makes one of its own (or fails the same way). */
	if (!probe_worker)
		(void)guarded_worker_new(&probe_worker);
	return probe_worker;
}

void cli_probe_worker_done(void)
{
	probe_worker = guarded_worker_free(probe_worker);
}

int run_pipeline(const struct audit_target *t, const struct config *c, struct audit_result *ret)
{
	struct parse_error err;
	int r = pipeline_run(t, c, ret, &err);

	if (r == -EINVAL && err.line)
		log_error("/proc/self/mountinfo line %u: %s", err.line, err.message);
	else if (r < 0 && t->snapshot)
		log_error_errno(r, "audit failed");
	else if (r < 0 && err.message[0])
		log_error("cannot probe the system: %s", err.message);
	else if (r < 0)
		log_error_errno(r, "cannot probe the system");
	return r;
}

int parse_namespace_pid(const char *cmd, const char *s, pid_t *ret)
{
	unsigned v;

	if (parse_uint(s, &v) < 0 || v == 0 || v > INT32_MAX) {
		log_error("%s: --namespace: '%s' is not a process id", cmd, s);
		return -EINVAL;
	}
	*ret = (pid_t)v;
	return 0;
}

int parse_target_option(const char *cmd, int c, pid_t *namespace_pid, bool *no_probe)
{
	switch (c) {
	case 'N':
		return parse_namespace_pid(cmd, optarg, namespace_pid) < 0 ? -EINVAL : 1;
	case 'P':
		*no_probe = true;
		return 1;
	default:
		return 0;
	}
}

int open_namespace(const char *cmd, pid_t pid, struct namespace_target **ret)
{
	struct namespace_audit a;
	int r = namespace_audit_open(&a, pid, 0, NULL, -1);

	if (r >= 0) {
		*ret = TAKE_PTR(a.target);
		namespace_audit_done(&a);
	}

	if (r == -ESRCH)
		log_error("%s: --namespace %d: no such process", cmd, (int)pid);
	else if (r == -EACCES || r == -EPERM)
		log_error("%s: --namespace %d: not allowed to read the namespace of process %d "
			  "(run as root)",
			  cmd, (int)pid, (int)pid);
	else if (r < 0)
		log_error("%s: --namespace %d: cannot open its namespace: %s", cmd, (int)pid,
			  strerror(-r));
	return r;
}

bool test_hook_enabled(const char *env)
{
#if PTSGUARD_TEST_HOOKS
	const char *v = getenv(env);

	return v && streq(v, "1");
#else
	(void)env;
	return false;
#endif
}

void test_hook_pause(const char *env, const char *what)
{
	char line[16];

	if (!test_hook_enabled(env))
		return;
	fprintf(stderr, "ptsguard: paused %s (test hook); send a line to go on\n", what);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		clearerr(stdin);
}

int run_namespace(const char *cmd, const struct audit_target *t, const struct config *c,
		  struct audit_result *ret)
{
	_cleanup_(namespace_audit_done) struct namespace_audit a = { 0 };
	struct audit_target target = *t;
	char why[512];
	int r;

	/* The one door into another namespace (pipeline/namespace-audit.h): the same pipeline and
	 * the same words for what went wrong as --all-namespaces and the daemon. */
	namespace_audit_borrow(&a, (struct namespace_target *)t->probe.ns);
	r = namespace_audit_run(&a, &target, c);
	if (r == -ESRCH)
		log_error("%s: process %d exited during the audit of its namespace", cmd,
			  (int)t->probe.ns->pid);
	else if (r == -EACCES || r == -EPERM)
		log_error("%s: not allowed to read the namespace of process %d (run as root)", cmd,
			  (int)t->probe.ns->pid);
	else if (r < 0)
		log_error("%s: the namespace of process %d is not judged: %s", cmd,
			  (int)t->probe.ns->pid, namespace_audit_why(&a, r, why, sizeof(why)));
	else {
		*ret = a.result;
		a.result = (struct audit_result){ 0 };
	}
	return r;
}

int run_audit(const struct config *config, const char *snapshot_path, bool no_probe,
	      struct audit_result *ret)
{
	struct audit_target t = { .probe.skip_allocation = no_probe };

	*ret = (struct audit_result){ 0 };
	if (snapshot_path && load_snapshot_file(snapshot_path, &t.snapshot) < 0)
		return -EINVAL;
	return run_pipeline(&t, config, ret);
}

int run_probe(bool no_probe, struct audit_result *ret)
{
	*ret = (struct audit_result){ 0 };
	return run_pipeline(&(struct audit_target){ .probe.need_mountinfo_text = true,
						    .probe.skip_allocation = no_probe,
						    .snapshot_only = true },
			    NULL, ret);
}

/* The errno of the first failed flush of standard output: stdio keeps only that one failed. */
static int stdout_errno;

int flush_stdout(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	if (!stdout_errno)
		stdout_errno = ferror(stdout) && errno > 0 ? errno : EIO;
	return -stdout_errno;
}

int close_stdout(int status)
{
	int r = flush_stdout();

	/* A standard output that was never open (EBADF) had nothing written to it. */
	if (fclose(stdout) != 0 && r >= 0 && errno != EBADF)
		r = -errno;
	if (r >= 0)
		return status;
	log_error("write error: %s", strerror(-r));
	return EXIT_UNKNOWN;
}

int write_output(const char *cmd, const char *path, const char *text, bool make_dir)
{
	struct output_file_error err;
	char why[OUTPUT_FILE_WHY_MAX];
	int r;

	if (!path || output_file_is_stdout(path))
		/* Said by main(), as for any other write to standard output. */
		return fputs(text, stdout) < 0 ? -EIO : flush_stdout();
	r = output_file_write(path, text, strlen(text), 0644, make_dir, &err);
	if (r < 0)
		log_error("%s: cannot write %s: %s", cmd, path,
			  output_file_strerror(r, &err, NULL, why));
	return r;
}

int load_config(const char *cmd, const char *path, struct config **ret)
{
	struct config_error err;
	char text[CONFIG_ERROR_TEXT_MAX];
	int r = config_load(path, ret, &err);

	if (r >= 0)
		return 0;
	if (r != -EINVAL && r != -ENOENT)
		log_error_errno(r, "%s: cannot load the configuration", cmd);
	else
		log_error("%s: %s", cmd, config_error_format(&err, text));
	return r;
}

bool want_color(enum color_when when)
{
	const char *term = getenv("TERM"), *no_color = getenv("NO_COLOR");

	if (when != COLOR_AUTO)
		return when == COLOR_ALWAYS;
	return isatty(STDOUT_FILENO) && !(no_color && *no_color) && !(term && streq(term, "dumb"));
}

json_object *check_info_to_json(const struct check_info *ci)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_string(ci->id));
	json_object_object_add(o, "severity",
			       json_object_new_string(severity_to_string(ci->severity)));
	json_object_object_add(o, "message_id", json_object_new_string(ci->message_id));
	json_object_object_add(o, "summary", json_object_new_string(ci->summary));
	json_object_object_add(o, "repairable", json_object_new_boolean(check_repairable(ci)));
	json_object_object_add(o, "daemon_only", json_object_new_boolean(ci->transition));
	json_object_object_add(o, "explanation", json_object_new_string(ci->explanation));
	json_object_object_add(o, "remedy", json_object_new_string(ci->remedy));
	json_object_object_add(o, "probe_predicts", probe_prediction_to_json(&ci->predicts));
	return o;
}
