/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every check from hand-built snapshots (tests/data/snapshots, one JSON file each). Each
 * fixture is a valid snapshot whose "_expect" key (ignored by the loader, as
 * unknown keys are) gives the exact ordered list of findings, with a subset of
 * their evidence and remedy, and optionally a subset of the whole report. The
 * test also checks that the report is deterministic and that a snapshot
 * written back out and re-read gives the same findings.
 *
 * Each fixture goes through pipeline_run(), as every command's audit does, with the
 * configuration its optional "_config" key holds (the text of a ptsguard.conf: [Devpts] Mode=,
 * [Ignore] Checks=, ...), else the built-in defaults: what the configuration changes about the
 * findings and their remedies is tested here too.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "config/conf.h"
#include "pipeline/pipeline.h"
#include "report/report.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot.h"
#include "test.h"
#include "util/fileio.h"
#include "util/json-util.h"
#include "util/path.h"
#include "util/string-util.h"

/* Is every key of `want` in `have` with a matching value (arrays: same length, element-wise)? */
static bool json_subset(json_object *want, json_object *have, const char *where, const char *file)
{
	bool ok = true;

	if (!want || !have) {
		if (want != have)
			fprintf(stderr, "%s: %s: expected %s, got %s\n", file, where,
				json_object_to_json_string(want), json_object_to_json_string(have));
		return want == have;
	}
	if (json_object_get_type(want) != json_object_get_type(have)) {
		fprintf(stderr, "%s: %s: expected %s, got %s\n", file, where,
			json_object_to_json_string(want), json_object_to_json_string(have));
		return false;
	}
	switch (json_object_get_type(want)) {
	case json_type_object: {
		json_object_object_foreach(want, key, value)
		{
			json_object *hv = NULL;
			char sub[512];

			snprintf(sub, sizeof(sub), "%s.%s", where, key);
			if (!json_object_object_get_ex(have, key, &hv)) {
				fprintf(stderr, "%s: %s: missing\n", file, sub);
				ok = false;
				continue;
			}
			ok = json_subset(value, hv, sub, file) && ok;
		}
		return ok;
	}
	case json_type_array:
		if (json_object_array_length(want) != json_object_array_length(have)) {
			fprintf(stderr, "%s: %s: expected %zu items, got %s\n", file, where,
				json_object_array_length(want), json_object_to_json_string(have));
			return false;
		}
		for (size_t i = 0; i < json_object_array_length(want); i++) {
			char sub[512];

			snprintf(sub, sizeof(sub), "%s[%zu]", where, i);
			ok = json_subset(json_object_array_get_idx(want, i),
					 json_object_array_get_idx(have, i), sub, file) &&
			     ok;
		}
		return ok;
	default:
		if (!json_object_equal(want, have)) {
			fprintf(stderr, "%s: %s: expected %s, got %s\n", file, where,
				json_object_to_json_string(want), json_object_to_json_string(have));
			return false;
		}
		return true;
	}
}

/* The report's text written with no tree (report_to_text(), report_write_json()) is the tree's
 * text byte for byte: for the report itself, and as the host of two namespaces, one audited (its
 * report inside) and one that failed, with a journal, each field's other branch. */
static void same_text(const struct report *rep, const char *what)
{
	struct report_namespace ns[2] = {
		{ .mntns = 4026532000,
		  .pid = 42,
		  .pids_total = 3,
		  .report = *rep,
		  .container_manager = "docker",
		  .container_id = "c0ffee" },
		{ .mntns = 4026532001, .pid = 43, .root = "/srv/chroot", .error = "it exited" },
	};
	struct journal_stats journal = { .queued = 7, .dropped = 1 };
	struct report host = *rep;
	const struct report *both[] = { rep, &host };

	host.namespaces = ns;
	host.n_namespaces = ELEMENTSOF(ns);
	host.journal = &journal;
	for (size_t i = 0; i < ELEMENTSOF(both); i++) {
		json_object *o = report_to_json(both[i]);
		_cleanup_free_ char *tree = json_to_text(o, 1), *text = report_to_text(both[i]),
				    *written = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&written, &size);

		CHECK_MSG(f && report_write_json(f, both[i]) == 0, "%s: report_write_json failed",
			  what);
		if (f)
			fclose(f);
		CHECK_MSG(tree && text && streq(tree, text),
			  "%s%s: the text without a tree differs from the tree's:\n%s\n---\n%s",
			  what, i ? " (with namespaces)" : "", text ?: "(null)", tree ?: "(null)");
		CHECK_MSG(tree && written && streq(tree, written),
			  "%s%s: the text written to a file differs from the tree's", what,
			  i ? " (with namespaces)" : "");
		json_object_put(o);
	}
	/* Each item of "namespaces" written alone, at the nesting of audit --all-namespaces's
	 * items (level 2: every line after the first indented by four more spaces). */
	{
		json_object *o = report_to_json(&host), *arr = NULL;

		json_object_object_get_ex(o, "namespaces", &arr);
		for (size_t i = 0; i < host.n_namespaces; i++) {
			_cleanup_free_ char *tree =
						json_to_text(json_object_array_get_idx(arr, i), 1),
					    *item = NULL, *want = NULL;
			size_t size = 0, wsize = 0;
			FILE *f = open_memstream(&item, &size), *w = open_memstream(&want, &wsize);

			CHECK_MSG(f && report_namespace_write_json(f, &ns[i], 2) == 0,
				  "%s: namespace %zu: report_namespace_write_json failed", what, i);
			for (const char *p = tree; w && p && *p; p++) {
				if (*p != '\n')
					fputc(*p, w);
				else if (p[1])
					fputs("\n    ", w);
			}
			if (f)
				fclose(f);
			if (w)
				fclose(w);
			CHECK_MSG(item && want && streq(item, want),
				  "%s: namespace %zu written alone differs:\n%s\n---\n%s", what, i,
				  item ?: "(null)", want ?: "(null)");
		}
		json_object_put(o);
	}
}

/* The configuration of the fixture being run: its "_config", or the built-in defaults. */
static struct config *fixture_config;

/* Load "_config" (a string: a configuration file's text) of root into fixture_config, through a
 * file as config_load() reads every configuration. */
static int load_fixture_config(json_object *root, const char *path)
{
	char tmp[] = "/tmp/ptsguard-fixture-XXXXXX";
	struct config_error err = { 0 };
	json_object *conf = NULL;
	const char *text;
	int fd, r;

	fixture_config = config_free(fixture_config);
	if (!json_object_object_get_ex(root, "_config", &conf))
		return config_new_default(&fixture_config);
	text = json_object_get_string(conf);
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -EIO;
	close(fd);
	if (r == 0)
		r = config_load(tmp, &fixture_config, &err);
	unlink(tmp);
	CHECK_MSG(r == 0, "%s: _config: line %u: %s", path, err.line, err.message);
	return r;
}

/* Audit s through the pipeline (s taken over) and return the report JSON with generated_at
 * removed. */
static json_object *audit_taken(struct snapshot *s, int *exit_status)
{
	struct audit_target t = { .snapshot = s };
	struct audit_result res = { 0 };
	struct parse_error perr = { 0 };
	struct report rep;
	json_object *o;

	if (pipeline_run(&t, fixture_config, &res, &perr) < 0)
		return NULL;
	rep = (struct report){
		.snap = res.snap, .a = res.a, .findings = &res.findings, .source = "snapshot"
	};
	same_text(&rep, res.snap->hostname ?: "a fixture");
	o = report_to_json(&rep);
	json_object_object_del(o, "generated_at");
	*exit_status = report_exit_status(&res.findings);
	audit_result_done(&res);
	return o;
}

/* The same for a snapshot that stays the caller's: audited from a copy (its JSON read back,
 * which the round trip below proves is the same snapshot). */
static json_object *audit(const struct snapshot *s, int *exit_status)
{
	json_object *o = snapshot_to_json(s);
	_cleanup_free_ char *text = json_to_text(o, 0);
	struct load_error err = { { 0 } };
	struct snapshot *copy = NULL;

	json_object_put(o);
	if (!text || snapshot_parse(text, strlen(text), &copy, &err) < 0)
		return NULL;
	return audit_taken(copy, exit_status);
}

static int worst_exit(json_object *findings)
{
	int worst = 0;

	for (size_t i = 0; i < json_object_array_length(findings); i++) {
		const char *sev = json_object_get_string(
		    json_object_object_get(json_object_array_get_idx(findings, i), "severity"));
		int e = streq(sev, "critical") ? 2 : streq(sev, "warning") ? 1 : 0;
		worst = e > worst ? e : worst;
	}
	return worst;
}

/* The daemon's incremental tracking audits only analysis_relevant_mounts(): a table of those
 * alone must give the same report, byte for byte. s is taken over. */
static void test_relevant_subset(const char *path, struct snapshot *s, const char *full_text)
{
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	_cleanup_free_ size_t *idx = NULL;
	_cleanup_free_ char *text = NULL;
	struct mount_table *subset = NULL;
	size_t n = 0, n_all;
	json_object *rep;
	int status;

	if (!s || analysis_new(s, &a) < 0 || analysis_relevant_mounts(a, &idx, &n) < 0 ||
	    mount_table_copy(s->mounts, idx, n, &subset) < 0) {
		CHECK_MSG(false, "%s: cannot take the relevant mounts", path);
		snapshot_free(s);
		return;
	}
	n_all = s->mounts->n_entries;
	a = analysis_free(a);
	snapshot_set_mount_table(s, subset);
	rep = audit_taken(s, &status);
	text = json_to_text(rep, 1);
	CHECK_MSG(text && streq(text, full_text),
		  "%s: the %zu relevant mounts of %zu audit differently:\n%s", path, n, n_all,
		  text ?: "(nothing)");
	json_object_put(rep);
}

static bool seen[64];

static void test_fixture(const char *path)
{
	_cleanup_free_ char *text = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL;
	_cleanup_(snapshot_freep) struct snapshot *s = NULL, *again = NULL;
	struct load_error err = { { 0 } };
	json_object *root, *expect, *want_findings, *want_report = NULL, *rep, *rep2, *rep3,
						    *findings, *written;
	size_t size;
	int r, status = -1, status2 = -1;

	r = read_full_file(path, 16 << 20, &text, &size);
	CHECK_MSG(r == 0, "%s: cannot read", path);
	if (r < 0)
		return;
	r = snapshot_parse(text, size, &s, &err);
	CHECK_MSG(r == 0, "%s: %s", path, err.message);
	if (r < 0)
		return;
	root = json_tokener_parse(text);
	if (load_fixture_config(root, path) < 0) {
		json_object_put(root);
		return;
	}
	expect = json_object_object_get(root, "_expect");
	want_findings = json_object_object_get(expect, "findings");
	json_object_object_get_ex(expect, "report", &want_report);
	CHECK_MSG(want_findings != NULL, "%s: no _expect.findings", path);

	rep = audit(s, &status);
	CHECK_MSG(rep != NULL, "%s: audit failed", path);
	if (!rep || !want_findings) {
		json_object_put(root);
		return;
	}
	findings = json_object_object_get(rep, "findings");

	/* The exact ordered list of ids first, for a readable failure. */
	{
		char want_ids[1024] = "", have_ids[1024] = "";

		for (size_t i = 0; i < json_object_array_length(want_findings); i++)
			snprintf(want_ids + strlen(want_ids), sizeof(want_ids) - strlen(want_ids),
				 "%s ",
				 json_object_get_string(json_object_object_get(
				     json_object_array_get_idx(want_findings, i), "id")));
		for (size_t i = 0; i < json_object_array_length(findings); i++)
			snprintf(have_ids + strlen(have_ids), sizeof(have_ids) - strlen(have_ids),
				 "%s ",
				 json_object_get_string(json_object_object_get(
				     json_object_array_get_idx(findings, i), "id")));
		CHECK_MSG(streq(want_ids, have_ids), "%s: findings [%s], expected [%s]", path,
			  have_ids, want_ids);
	}
	for (size_t i = 0; i < json_object_array_length(want_findings); i++) {
		const struct check_info *ci = check_find(json_object_get_string(
		    json_object_object_get(json_object_array_get_idx(want_findings, i), "id")));
		for (size_t c = 0; ci && c < check_catalog_size; c++)
			seen[c] = seen[c] || check_catalog[c] == ci;
	}
	CHECK_MSG(json_subset(want_findings, findings, "findings", path), "%s: findings differ",
		  path);
	if (want_report)
		CHECK_MSG(json_subset(want_report, rep, "report", path), "%s: report differs",
			  path);
	EXPECT_INT(status, worst_exit(want_findings));

	/* Every finding names a catalog check with its MESSAGE_ID and a remedy. */
	for (size_t i = 0; i < json_object_array_length(findings); i++) {
		json_object *f = json_object_array_get_idx(findings, i);
		const struct check_info *ci =
		    check_find(json_object_get_string(json_object_object_get(f, "id")));

		CHECK_MSG(ci != NULL, "%s: unknown id", path);
		if (ci)
			EXPECT_STR(json_object_get_string(json_object_object_get(f, "message_id")),
				   ci->message_id);
		CHECK_MSG(json_object_get_string(json_object_object_get(f, "remedy")) != NULL,
			  "%s: finding %zu has no remedy", path, i);
	}

	/* Under a pinned Mode=, every slave mode a remedy sets (mode=NNN, chmod NNN) is that mode:
	 * the one rule, whatever check wrote the remedy. */
	if (fixture_config->check_policy.pin_mode)
		for (size_t i = 0; i < json_object_array_length(findings); i++) {
			const char *remedy = json_object_get_string(json_object_object_get(
			    json_object_array_get_idx(findings, i), "remedy"));
			unsigned pinned = fixture_config->check_policy.mode & 0777;

			for (const char *p = remedy; p && *p; p++) {
				bool opt = strncmp(p, "mode=", 5) == 0 &&
					   (p == remedy || (p[-1] != 'x' && p[-1] != 'e'));
				bool chmod = strncmp(p, "chmod ", 6) == 0;
				unsigned v;

				if (!opt && !chmod)
					continue;
				v = (unsigned)strtoul(p + (opt ? 5 : 6), NULL, 8);
				CHECK_MSG(v == pinned,
					  "%s: finding %zu's remedy sets mode %03o, not "
					  "the pinned %03o: %s",
					  path, i, v, pinned, remedy);
			}
		}

	/* Deterministic: the same input gives the same bytes. */
	rep2 = audit(s, &status2);
	t1 = json_to_text(rep, 1);
	t2 = json_to_text(rep2, 1);
	CHECK_MSG(t1 && t2 && streq(t1, t2), "%s: report is not deterministic", path);

	/* Round trip: write the snapshot out, read it back, same report. */
	written = snapshot_to_json(s);
	{
		_cleanup_free_ char *wt = json_to_text(written, 1);
		r = snapshot_parse(wt, strlen(wt), &again, &err);
		CHECK_MSG(r == 0, "%s: re-reading the written snapshot: %s", path, err.message);
	}
	if (again) {
		rep3 = audit(again, &status2);
		t3 = json_to_text(rep3, 1);
		/* hostname and the rest are carried; the reports must be identical */
		CHECK_MSG(t3 && streq(t1, t3), "%s: round-tripped snapshot audits differently",
			  path);
		json_object_put(rep3);
	}
	test_relevant_subset(path, TAKE_PTR(again), t1);

	json_object_put(written);
	json_object_put(rep2);
	json_object_put(rep);
	json_object_put(root);
}

/* Is d_name (a file of the fixtures' folder) one of names (with or without ".json")? */
static bool named(const char *d_name, char **names, int n_names)
{
	size_t l = strlen(d_name) - strlen(".json");

	for (int i = 0; i < n_names; i++)
		if (streq(names[i], d_name) ||
		    (strlen(names[i]) == l && strncmp(names[i], d_name, l) == 0))
			return true;
	return false;
}

/* test-fixtures DIR [NAME...]: every fixture of DIR, or only those named (then neither the
 * count nor the catalog's coverage is checked). */
int main(int argc, char **argv)
{
	char **names = argv + 2;
	int n_names = argc > 2 ? argc - 2 : 0;
	size_t n = 0;
	DIR *d;
	struct dirent *de;

	if (argc < 2) {
		fprintf(stderr, "usage: test-fixtures DIR [NAME...]\n");
		return 1;
	}
	d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *p = NULL;
		size_t l = strlen(de->d_name);

		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		if (n_names > 0 && !named(de->d_name, names, n_names))
			continue;
		p = path_join(argv[1], de->d_name);
		test_fixture(p);
		n++;
	}
	closedir(d);
	fixture_config = config_free(fixture_config);
	if (n_names > 0) {
		CHECK_MSG(n == (size_t)n_names, "%zu of the %d fixtures named found in %s", n,
			  n_names, argv[1]);
		printf("%zu fixtures\n", n);
		return test_result("test-fixtures");
	}
	CHECK_MSG(n >= 30, "only %zu fixtures found in %s", n, argv[1]);

	/* Every check that a one-shot audit can raise is exercised by some fixture. */
	for (size_t i = 0; i < check_catalog_size; i++)
		CHECK_MSG(seen[i] || check_catalog[i]->transition, "no fixture raises %s",
			  check_catalog[i]->id);
	printf("%zu fixtures\n", n);
	return test_result("test-fixtures");
}
