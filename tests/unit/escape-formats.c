/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The writer side of the escape-formats test (escape-formats.py reads what it writes with real
 * parsers): COUNT random names, each of any bytes (invalid UTF-8, brackets, quotes, backslashes,
 * newlines, a forged syslog tag), put where a namespace puts its names: a devpts mountpoint in
 * the base snapshot's mount table, a chroot's root, a container's name and id, a transition's
 * context and detail. For name N it writes into DIR:
 *   N.name     the name's bytes
 *   N.json     the report (report_write_json()) with three namespace items named by it
 *   N.prom     the same report as Prometheus exposition
 *   N.syslog   per finding, "CHECK STATE " and the syslog line of its transition
 *   N.stderr   per finding, "CHECK STATE " and the standard error line of its transition
 *   N.snapshot the snapshot with that mount table (snapshot_to_json())
 * and DIR/catalog-size, the number of checks (of the host's ptsguard_finding series). It checks
 * itself that the snapshot read back gives the same mount table and report.
 *
 * test-escape-formats SNAPSHOT DIR COUNT SEED
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "report/journal.h"
#include "report/report.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot.h"
#include "test.h"
#include "util/fileio.h"
#include "util/json-util.h"
#include "util/string-util.h"

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Pieces a hostile name is made of, besides single random bytes. */
static const char *const pieces[] = {
	"[ptsguard check=x state=resolved]",
	"[ptsguard check=ptmx-missing state=resolved severity=info message_id=0]",
	"] [resolved] ptmx-missing (critical): ",
	"\\",
	"\\x41",
	"\"",
	"\n",
	"[",
	"]",
	"\xff",
	"\xfe",
	"\xc3\xa9",
	"\xc3",
	"\xed\xa0\x80",
	"\xf4\x90\x80\x80",
	"\xe2\x82\xac",
	"\xf0\x9f\x98\x80",
	"\xc0\xaf",
	"\x1b]0;x\x07",
	"/",
	" ",
	"\t",
	"\x7f",
	"=",
	",",
	"}",
	"{",
	"#",
	"\\134",
	"\\012",
};

/* A name of 1 to about 60 bytes, no NUL and no '/' at its start. */
static void random_name(uint64_t *seed, char *buf, size_t size)
{
	size_t n = 0, parts = 1 + xorshift(seed) % 8;

	for (size_t i = 0; i < parts; i++) {
		uint64_t r = xorshift(seed);
		char one[2] = { (char)(1 + (r >> 8) % 255), 0 };
		const char *p = r % 3 == 0 ? one : pieces[(r >> 8) % ELEMENTSOF(pieces)];
		size_t k = strlen(p);

		if (n + k >= size)
			break;
		memcpy(buf + n, p, k);
		n += k;
	}
	if (n == 0)
		buf[n++] = 'x';
	buf[n] = 0;
}

/* The name as the kernel writes a path into mountinfo: space, tab, newline and backslash as
 * octal escapes, every other byte as it is. */
static void mangle(const char *s, FILE *f)
{
	for (; *s; s++)
		if (strchr(" \t\n\\", *s))
			fprintf(f, "\\%03o", (unsigned char)*s);
		else
			fputc(*s, f);
}

static int write_file(const char *dir, int i, const char *ext, const char *data, size_t size)
{
	char path[4096];
	FILE *f;
	int r;

	if (i < 0) /* DIR/catalog-size */
		snprintf(path, sizeof(path), "%s/catalog-%s", dir, ext);
	else
		snprintf(path, sizeof(path), "%s/%d.%s", dir, i, ext);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	r = fwrite(data, 1, size, f) == size ? 0 : -EIO;
	return fclose(f) < 0 ? -EIO : r;
}

/* The snapshot with the mount table of text. */
static struct snapshot *with_mounts(const char *base, size_t base_size, const char *text,
				    size_t size)
{
	struct snapshot *s = NULL;
	struct load_error lerr;
	struct parse_error perr;
	char *copy;

	if (snapshot_parse(base, base_size, &s, &lerr) < 0) {
		fprintf(stderr, "the base snapshot: %s\n", lerr.message);
		return NULL;
	}
	copy = strndup(text, size);
	if (!copy || snapshot_set_mountinfo(s, copy, size, &perr) < 0) {
		fprintf(stderr, "the mount table: line %u: %s\n", perr.line, perr.message);
		return snapshot_free(s);
	}
	return s;
}

/* The report of s, its text, with a fixed time. */
static char *report_text(const struct snapshot *s)
{
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	struct findings f = { 0 };
	char *text = NULL;

	if (analysis_new(s, &a) >= 0 && checks_run(a, NULL, &f) >= 0)
		text = report_to_text(&(struct report){
		    .snap = s, .a = a, .findings = &f, .source = "snapshot", .generated_at = 1 });
	findings_done(&f);
	return text;
}

static void one(const char *base, size_t base_size, const char *dir, int i, uint64_t *seed)
{
	_cleanup_(snapshot_freep) struct snapshot *s = NULL, *back = NULL;
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	_cleanup_free_ char *mounts = NULL, *prom = NULL, *json = NULL, *lines = NULL,
			    *errlines = NULL, *snap_text = NULL, *want = NULL, *got = NULL;
	size_t mounts_size = 0, prom_size = 0, json_size = 0, lines_size = 0, errlines_size = 0;
	char name[96], context[256];
	struct findings f = { 0 };
	struct load_error lerr;
	json_object *o;
	FILE *m;

	random_name(seed, name, sizeof(name));
	CHECK_MSG(write_file(dir, i, "name", name, strlen(name)) == 0, "%d: writing", i);

	/* the base table and a devpts stacked on /dev/pts, and one at a path named by the name */
	{
		_cleanup_(snapshot_freep) struct snapshot *b = NULL;

		if (snapshot_parse(base, base_size, &b, &lerr) < 0) {
			CHECK_MSG(false, "the base snapshot: %s", lerr.message);
			return;
		}
		m = open_memstream(&mounts, &mounts_size);
		if (!m)
			return;
		fwrite(b->mountinfo, 1, b->mountinfo_size, m);
		fputs("900 1 0:90 / /srv/", m);
		mangle(name, m);
		fputs(" rw,nosuid,noexec - devpts devpts rw,mode=600,ptmxmode=000\n", m);
		fputs("901 900 0:91 / /srv/", m);
		mangle(name, m);
		fputs(" rw,nosuid,noexec - devpts devpts rw,mode=600,ptmxmode=000\n", m);
		fclose(m);
	}
	s = with_mounts(base, base_size, mounts, mounts_size);
	if (!s) {
		CHECK_MSG(false, "%d: the snapshot", i);
		return;
	}
	if (analysis_new(s, &a) < 0 || checks_run(a, NULL, &f) < 0) {
		CHECK_MSG(false, "%d: the audit", i);
		return;
	}

	snprintf(context, sizeof(context), "docker/%s, mount namespace 3, root %s", name, name);
	{
		struct report rep = { .snap = s, .a = a, .findings = &f, .source = "snapshot" };
		struct report_namespace ns[] = {
			{ .mntns = 1, .pid = 2, .pids_total = 1, .root = name, .report = rep },
			{ .mntns = 3,
			  .pid = 4,
			  .pids_total = 1,
			  .container_manager = "docker",
			  .container_name = name,
			  .container_id = name,
			  .report = rep },
			{ .mntns = 5,
			  .pid = 6,
			  .pids_total = 1,
			  .container_manager = "containerd",
			  .container_id = name,
			  .report = rep },
			{ .mntns = 7, .pid = 8, .root = name, .error = name, .report = rep },
		};
		struct report host = rep;

		host.namespaces = ns;
		host.n_namespaces = ELEMENTSOF(ns);
		m = open_memstream(&json, &json_size);
		CHECK_MSG(m && report_write_json(m, &host) == 0, "%d: report_write_json()", i);
		if (m)
			fclose(m);
		m = open_memstream(&prom, &prom_size);
		CHECK_MSG(m && report_write_prometheus(m, &host) == 0, "%d: Prometheus", i);
		if (m)
			fclose(m);
	}

	m = open_memstream(&lines, &lines_size);
	{
		FILE *e = open_memstream(&errlines, &errlines_size);

		FOREACH_ARRAY (x, f.items, f.n_items) {
			enum transition t =
			    (x - f.items) % 2 ? TRANSITION_RESOLVED : TRANSITION_DETECTED;
			struct transition_event ev = { .finding = x,
						       .transition = t,
						       .detail = (x - f.items) % 3 ? name : NULL,
						       .context =
							   (x - f.items) % 4 ? context : NULL };
			_cleanup_free_ char *line = journal_syslog_line(&ev),
					    *err = journal_stderr_line(&ev);

			CHECK_MSG(line && err, "%d: the lines", i);
			if (m && line)
				fprintf(m, "%s %s %s\n", x->check->id, transition_to_string(t),
					line);
			if (e && err)
				fprintf(e, "%s %s %s\n", x->check->id, transition_to_string(t),
					err);
		}
		if (e)
			fclose(e);
	}
	if (m)
		fclose(m);

	o = snapshot_to_json(s);
	snap_text = o ? json_to_text(o, 1) : NULL;
	json_object_put(o);
	CHECK_MSG(snap_text, "%d: the snapshot's text", i);

	CHECK_MSG(write_file(dir, i, "json", json ?: "", json_size) == 0 &&
		      write_file(dir, i, "prom", prom ?: "", prom_size) == 0 &&
		      write_file(dir, i, "syslog", lines ?: "", lines_size) == 0 &&
		      write_file(dir, i, "stderr", errlines ?: "", errlines_size) == 0 &&
		      write_file(dir, i, "snapshot", snap_text ?: "", strlen(snap_text ?: "")) == 0,
		  "%d: writing", i);

	/* The snapshot read back: the same mounts, byte for byte, and the same report. */
	if (snap_text && snapshot_parse(snap_text, strlen(snap_text), &back, &lerr) < 0)
		CHECK_MSG(false, "%d: the snapshot does not load: %s", i, lerr.message);
	if (back) {
		const struct mount_table *x = s->mounts, *y = back->mounts;

		CHECK_MSG(x->n_entries == y->n_entries, "%d: mounts read back", i);
		for (size_t k = 0; k < x->n_entries && k < y->n_entries; k++)
			CHECK_MSG(streq(x->entries[k].mountpoint, y->entries[k].mountpoint) &&
				      streq(x->entries[k].root, y->entries[k].root),
				  "%d: mount %zu read back as another path", i, k);
		want = report_text(s);
		got = report_text(back);
		CHECK_MSG(want && got && streq(want, got), "%d: the report differs read back", i);
	}
	findings_done(&f);
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *base = NULL;
	size_t base_size = 0;
	uint64_t seed;
	int count;

	if (argc != 5) {
		fprintf(stderr, "usage: %s SNAPSHOT DIR COUNT SEED\n", argv[0]);
		return 2;
	}
	if (read_full_file(argv[1], 1 << 24, &base, &base_size) < 0) {
		fprintf(stderr, "cannot read %s\n", argv[1]);
		return 2;
	}
	{
		char n[24];

		snprintf(n, sizeof(n), "%zu\n", check_catalog_size);
		if (write_file(argv[2], -1, "size", n, strlen(n)) < 0)
			return 2;
	}
	count = atoi(argv[3]);
	seed = strtoull(argv[4], NULL, 0) ?: 1;
	for (int i = 0; i < count; i++)
		one(base, base_size, argv[2], i, &seed);
	return test_result("test-escape-formats");
}
