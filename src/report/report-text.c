/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "analysis/boot.h"
#include "report/report.h"
#include "report/stack-picture.h"
#include "util/escape.h"
#include "util/json-util.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/string-util.h"

#define ANSI_RED    "\033[1;31m"
#define ANSI_YELLOW "\033[1;33m"
#define ANSI_BLUE   "\033[1;34m"
#define ANSI_BOLD   "\033[1m"
#define ANSI_DIM    "\033[2m"
#define ANSI_RESET  "\033[0m"

static const char *severity_color(enum severity s)
{
	switch (s) {
	case SEVERITY_CRITICAL:
		return ANSI_RED;
	case SEVERITY_WARNING:
		return ANSI_YELLOW;
	default:
		return ANSI_BLUE;
	}
}

static void write_ptmx_line(FILE *f, const struct analysis *a)
{
	const struct node *n = a->ptmx;
	char mode[8], dev[24];

	fprintf(f, "%s: %s", PTMX_PATH, ptmx_kind_to_string(a->ptmx_kind));
	if (n && n->type == NODE_SYMLINK) {
		fputs(" -> ", f);
		fputs_escaped(n->target ?: "?", f);
	}
	if (a->ptmx_final && a->ptmx_final->type != NODE_MISSING)
		fprintf(f, ", mode %s", format_mode(a->ptmx_final->mode, mode));
	if (a->serving) {
		const struct mount_entry *e = analysis_serving_mount(a);
		fprintf(f, "; serving devpts %s", format_devnum(a->serving->dev, dev));
		if (e) {
			fputs(" at ", f);
			fputs_escaped(e->mountpoint, f);
			fprintf(f, " (mount %u, ", e->id);
			fputs_escaped(e->super_options, f);
			fputc(')', f);
		}
	} else if (a->route == ROUTE_UNKNOWN)
		fprintf(f, "; serving the kernel's internal devpts (none mounted)");
	else if (a->route == ROUTE_BIND_NO_INSTANCE)
		fprintf(f, "; a bind of a node from outside devpts: reaches no devpts instance");
	else
		fprintf(f, "; no devpts instance is reachable");
	fputc('\n', f);
}

/* What the allocation probe got, in one line. */
static void write_probe_line(FILE *f, const struct snapshot *s)
{
	char probe[256];

	fputs("allocation probe: ", f);
	fputs_escaped(alloc_probe_describe(&s->probe, probe, sizeof(probe)), f);
	fputc('\n', f);
}

/* One line on where a boot-born instance's options come from (the evidence's "origin"). */
static void write_origin_line(FILE *f, const struct finding *i, const char *dim, const char *reset)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	json_object *v;
	const char *by = NULL;

	if (!finding_evidence_get(i, "origin", &o) || !json_object_is_type(o, json_type_object))
		return;
	if (json_object_object_get_ex(o, "changed_by", &v) &&
	    json_object_is_type(v, json_type_string))
		by = json_object_get_string(v);
	fprintf(f, "    %sorigin:%s ", dim, reset);
	if (json_object_object_get_ex(o, "before_switch_root", &v) && v)
		fputs_escaped(json_object_get_string(v), f);
	else
		fputs("(no options)", f);
	fputs(" before switch-root, ", f);
	if (json_object_object_get_ex(o, "now", &v) && v)
		fputs_escaped(json_object_get_string(v), f);
	fputs(" now: ", f);
	if (by) {
		fputs("changed by ", f);
		fputs_escaped(by, f);
	} else
		fputs("unchanged since the initramfs", f);
	fputc('\n', f);
}

/* The findings by severity, each with its remedy and the picture of the stack it is about;
 * counts[] gets how many of each. */
static void write_findings(FILE *f, const struct report *r, bool color,
			   size_t counts[static _SEVERITY_MAX])
{
	const struct findings *fs = r->findings;
	struct stack_pictures drawn = { 0 };
	static const enum severity order[] = { SEVERITY_CRITICAL, SEVERITY_WARNING, SEVERITY_INFO };
	static const char *const heading[] = {
		[SEVERITY_CRITICAL] = "Critical",
		[SEVERITY_WARNING] = "Warning",
		[SEVERITY_INFO] = "Info",
	};
	const char *reset = color ? ANSI_RESET : "", *dim = color ? ANSI_DIM : "";

	FOREACH_ARRAY (i, fs->items, fs->n_items)
		counts[i->severity]++;

	for (size_t k = 0; k < ELEMENTSOF(order); k++) {
		enum severity s = order[k];
		const char *c = color ? severity_color(s) : "";

		if (counts[s] == 0)
			continue;
		fprintf(f, "\n%s%s%s\n", c, heading[s], reset);
		FOREACH_ARRAY (i, fs->items, fs->n_items) {
			if (i->severity != s)
				continue;
			fprintf(f, "  %s%s%s: ", c, i->check->id, reset);
			fputs_escaped(i->summary ?: i->check->summary, f);
			fputc('\n', f);
			if (i->remedy) {
				fprintf(f, "    %sremedy:%s ", dim, reset);
				fputs_escaped(i->remedy, f);
				fputc('\n', f);
			}
			write_origin_line(f, i, dim, reset);
			(void)stack_picture_write(f, r->a, i, &drawn, color);
		}
	}
}

/* Why processes were skipped by the holder scan, as far as the snapshot says: the advice to run
 * as root only to an audit that was not. */
static void write_skipped_note(FILE *f, const struct snapshot *s)
{
	int e = s->holders_skipped_errno;

	fprintf(f,
		"\nNote: %u process(es) could not be inspected for ptys held on covered devpts "
		"instances",
		s->holders_skipped);
	switch (s->holders_scanner) {
	case HOLDERS_SCANNER_USER:
		fputs(" (run as root for a complete devpts-orphan-in-use check)", f);
		break;
	case HOLDERS_SCANNER_NO_PTRACE:
		fputs(" (the audit ran as root without CAP_SYS_PTRACE, which reading another "
		      "user's /proc/PID/fd takes: give it that capability for a complete "
		      "devpts-orphan-in-use check)",
		      f);
		break;
	case HOLDERS_SCANNER_PRIVILEGED:
		fprintf(f,
			" although the audit had CAP_SYS_PTRACE: %s (a security module such as "
			"AppArmor or SELinux, or a seccomp filter, refuses it)",
			e > 0 ? strerror(e) : "refused");
		break;
	default:
		if (e > 0)
			fprintf(f, ": %s", strerror(e));
		break;
	}
	fputs(".\n", f);
}

/* Whether the report's filters could have left anything out. */
static bool filter_narrows(const struct report *r)
{
	for (int s = 0; s < _SEVERITY_MAX; s++)
		if (r->hidden[s] > 0)
			return true;
	return r->filter && (r->filter->min_severity > SEVERITY_INFO || r->filter->excluded);
}

/* "1 critical, 0 warning, 0 info"; with filters, only the severities they show, then what they
 * left out: "1 critical; not shown: 1 warning". */
static void write_counts(FILE *f, const size_t counts[static _SEVERITY_MAX],
			 const size_t hidden[static _SEVERITY_MAX],
			 const struct report_filter *filter)
{
	enum severity min = filter ? filter->min_severity : SEVERITY_INFO;
	bool first = true;

	for (int s = _SEVERITY_MAX - 1; s >= (int)min; s--) {
		fprintf(f, "%s%zu %s", first ? "" : ", ", counts[s], severity_to_string(s));
		first = false;
	}
	first = true;
	for (int s = _SEVERITY_MAX - 1; s >= 0; s--) {
		if (hidden[s] == 0)
			continue;
		fprintf(f, "%s%zu %s", first ? "; not shown: " : ", ", hidden[s],
			severity_to_string(s));
		first = false;
	}
	fputc('\n', f);
}

/* The first line: the verdict the exit status gives, in words, over the report and its
 * namespaces: "ptsguard: CRITICAL: 1 critical, 1 warning", "ptsguard: OK: no findings". */
static void write_verdict(FILE *f, const struct report *r)
{
	static const char *const word[] = { "OK", "WARNING", "CRITICAL" };
	size_t counts[_SEVERITY_MAX] = { 0 }, hidden = 0;
	int status = report_exit_status_all(r);
	bool first = true;

	FOREACH_ARRAY (i, r->findings->items, r->findings->n_items)
		counts[i->severity]++;
	for (int s = 0; s < _SEVERITY_MAX; s++)
		hidden += r->hidden[s];
	FOREACH_ARRAY (n, r->namespaces, r->n_namespaces) {
		if (!n->report.findings)
			continue;
		FOREACH_ARRAY (i, n->report.findings->items, n->report.findings->n_items)
			counts[i->severity]++;
		for (int s = 0; s < _SEVERITY_MAX; s++)
			hidden += n->report.hidden[s];
	}
	fprintf(f, "ptsguard: %s: ", word[status < 0 || status > 2 ? 0 : status]);
	for (int s = _SEVERITY_MAX - 1; s >= 0; s--) {
		if (counts[s] == 0)
			continue;
		fprintf(f, "%s%zu %s", first ? "" : ", ", counts[s], severity_to_string(s));
		first = false;
	}
	if (first)
		fputs("no findings", f);
	if (hidden > 0)
		fprintf(f, " (%zu not shown)", hidden);
	if (r->namespaces_follow)
		fputs(" on the host (other mount namespaces below)", f);
	fputc('\n', f);
}

static int write_one(FILE *f, const struct report *r, bool color)
{
	size_t counts[_SEVERITY_MAX] = { 0 };
	const char *bold = color ? ANSI_BOLD : "", *reset = color ? ANSI_RESET : "";

	write_verdict(f, r);
	/* Every string from the audited system is escaped (util/escape.h): a hostname, a
	 * mountpoint or a process name in a summary may hold terminal escape sequences. */
	fprintf(f, "%sptsguard audit of ", bold);
	fputs_escaped(r->snap->hostname ?: "?", f);
	fprintf(f, "%s (kernel ", reset);
	fputs_escaped(r->snap->kernel_release ?: "?", f);
	fprintf(f, ", %s devpts, %s", r->a->multi_instance ? "multi-instance" : "single-instance",
		r->source);
	/* A snapshot says when and by what it was taken: a support engineer reads that first. */
	if (streq(r->source, "snapshot") && r->snap->captured_at) {
		time_t t = (time_t)(r->snap->captured_at / 1000000);
		struct tm tm;
		char at[32];

		if (gmtime_r(&t, &tm) && strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
			fprintf(f, " captured %s", at);
	}
	if (streq(r->source, "snapshot") && r->snap->captured_by) {
		fputs(" by ptsguard ", f);
		fputs_escaped(r->snap->captured_by, f);
	}
	fputs(")\n", f);
	if (r->snap->ns)
		fprintf(f, "mount namespace %llu of pid %d, judged from the host\n",
			(unsigned long long)r->snap->ns->mntns, (int)r->snap->ns->pid);
	write_ptmx_line(f, r->a);
	write_probe_line(f, r->snap);
	write_findings(f, r, color, counts);
	if (r->snap->initramfs) {
		const struct initramfs_prediction *p = initramfs_prediction(r->snap);
		int came = initramfs_prediction_came_true(r->a);
		char line[16] = "?";

		if (p) {
			if (p->has_fstab_line)
				snprintf(line, sizeof(line), "%u", p->fstab_line);
			if (p->effect == EFFECT_REMOUNT)
				fprintf(f, "\nBoot: the initramfs predicted that %s remounts ",
					r->snap->initramfs->init.rc_devpts
					    ? "Debian's mountdevsubfs.sh"
					    : "systemd-remount-fs");
			else if (p->effect == EFFECT_KEPT)
				fputs("\nBoot: the initramfs predicted that the init keeps the "
				      "initramfs options on ",
				      f);
			else
				fputs("\nBoot: the initramfs predicted a second devpts on ", f);
			fputs_escaped(p->mountpoint ?: "?", f);
			if (p->effect == EFFECT_REMOUNT) {
				fprintf(f, " with %s%s (", p->has_fstab_line ? "fstab line " : "",
					p->has_fstab_line ? line : "its options");
				fputs_escaped(p->options_after ?: "?", f);
				fputc(')', f);
			} else
				fprintf(f, " (fstab line %s)", line);
			fprintf(f, ": %s.\n", came == 1 ? "it came true" : "it did not happen");
		} else
			fprintf(f,
				"\nBoot: the initramfs record predicted no second devpts mount.\n");
	}
	if (r->snap->holders_scanned && r->snap->holders_progress.partial)
		fprintf(
		    f,
		    "\nNote: the search for ptys held on covered devpts instances stopped at its "
		    "time budget after %u process(es), %u left unsearched: holders may be "
		    "missing from devpts-orphan-in-use.\n",
		    r->snap->holders_progress.processes_scanned,
		    r->snap->holders_progress.processes_left);
	if (r->snap->holders_skipped > 0)
		write_skipped_note(f, r->snap);
	if (r->findings->n_items == 0 && !filter_narrows(r))
		fprintf(f,
			"\nNo findings: pty allocation works and permissions are as expected.\n");
	else if (r->findings->n_items == 0)
		fputs("\nNo findings shown.\n", f);
	fputc('\n', f);
	write_counts(f, counts, r->hidden, r->filter);
	return ferror(f) ? -EIO : 0;
}

void report_container_label(const struct report_namespace *n, char *buf, size_t size)
{
	if (!n->container_manager)
		snprintf(buf, size, "%s", "");
	else if (n->container_name)
		snprintf(buf, size, "%s/%s", n->container_manager, n->container_name);
	else if (n->container_id)
		/* A runtime's 64 hex digits are known by their first 12; a containerd task's own
		 * id (at most 76 characters) is its name, whole. */
		snprintf(buf, size, "%s/%.*s", n->container_manager,
			 strlen(n->container_id) == 64 ? 12 : (int)strlen(n->container_id),
			 n->container_id);
	else
		snprintf(buf, size, "%s", n->container_manager);
}

/* Remedies are commands for inside the namespace: how to get there, and whether repair applies
 * them from the host. Nothing when no finding has a command for a person to run. */
static void write_namespace_hint(FILE *f, const struct report_namespace *n)
{
	size_t commands = 0, repairable = 0;

	FOREACH_ARRAY (i, n->report.findings->items, n->report.findings->n_items) {
		commands += i->remedy && !i->manual;
		repairable += finding_repairable(i);
	}
	if (commands == 0)
		return;
	fprintf(f,
		"\n  remedies run inside this namespace (nsenter -t %d -a -r -w) unless one says "
		"otherwise",
		(int)n->pid);
	/* The command names the process by what was listed (its namespace, root and start time),
	 * so that a pid reused since, or a chroot gone back to the host's root, is refused. Only
	 * the host itself takes --allow-own-namespace: a chroot is repaired inside its root. */
	if (repairable > 0) {
		fprintf(f, "; ptsguard repair --namespace %d", (int)n->pid);
		if (n->target)
			fprintf(f, " --target %s", n->target);
		else
			fprintf(f, " --mntns %llu", (unsigned long long)n->mntns);
		fprintf(f, "%s applies %s", n->own ? " --allow-own-namespace" : "",
			repairable == 1 ? "the repairable one" : "the repairable ones");
	}
	fputc('\n', f);
}

int report_write_namespace_text(FILE *f, const struct report_namespace *n, bool color)
{
	const struct report *r = &n->report;
	size_t counts[_SEVERITY_MAX] = { 0 };
	const char *bold = color ? ANSI_BOLD : "", *reset = color ? ANSI_RESET : "";
	char label[CONTAINER_LABEL_MAX];

	report_container_label(n, label, sizeof(label));
	fprintf(f, "\n%s== mount namespace %llu", bold, (unsigned long long)n->mntns);
	if (n->root) {
		fputs(", root ", f);
		fputs_escaped(n->root, f);
	}
	fprintf(f, " (pid %d", (int)n->pid);
	if (n->comm && n->comm[0]) {
		fputc(' ', f);
		fputs_escaped(n->comm, f);
	}
	fprintf(f, ", %u process%s", n->pids_total, n->pids_total == 1 ? "" : "es");
	if (label[0]) {
		fputs(", ", f);
		fputs_escaped(label, f);
		if (n->container_name && n->container_id) {
			char id[13];

			snprintf(id, sizeof(id), "%s", n->container_id);
			fputs(", id ", f);
			fputs_escaped(id, f);
		}
	}
	if (n->container_pod_uid) {
		fputs(", pod ", f);
		fputs_escaped(n->container_pod_uid, f);
	}
	fprintf(f, ") ==%s\n", reset);
	write_ptmx_line(f, r->a);
	write_probe_line(f, r->snap);
	write_findings(f, r, color, counts);
	write_namespace_hint(f, n);
	fputc('\n', f);
	write_counts(f, counts, r->hidden, r->filter);
	return ferror(f) ? -EIO : 0;
}

bool report_clean(const struct report *r)
{
	for (int s = 0; s < _SEVERITY_MAX; s++)
		if (r->hidden[s] > 0)
			return false;
	return r->findings->n_items == 0;
}

void report_write_namespaces_clean(FILE *f, size_t clean)
{
	fprintf(f, "\n%zu other namespace%s: no findings\n", clean, clean == 1 ? "" : "s");
}

/* The host, then a block for each namespace with findings and one line for the rest. */
int report_write_text(FILE *f, const struct report *r, bool color)
{
	size_t clean = 0;
	int k = write_one(f, r, color);

	/* One namespace named (--namespace): its block whatever it holds. */
	FOREACH_ARRAY (n, r->namespaces, r->n_namespaces) {
		if (report_clean(&n->report) && r->n_namespaces > 1)
			clean++;
		else if (k >= 0)
			k = report_write_namespace_text(f, n, color);
	}
	if (r->n_namespaces > 1 && clean > 0)
		report_write_namespaces_clean(f, clean);
	return k < 0 ? k : ferror(f) ? -EIO : 0;
}
