/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The analysis on a table of deep mountpoints: 1,000 tmpfs mounts 2,000 directories down, half of
 * them hidden by a sibling mounted on a common ancestor directory, with a covered devpts among
 * them. The facts must be the ones the table was built to have, and the work spent looking for
 * covering siblings (bytes hashed) must stay within the size of the table: hashing every prefix
 * of every mountpoint anew, as the analysis once did, costs about a thousand times more here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "snapshot/snapshot.h"
#include "test.h"
#include "util/macro.h"

#define DEPTH	 2000
#define N_MOUNTS 1000

struct text {
	char *buf;
	size_t len, cap;
};

static void put(struct text *t, const char *s)
{
	size_t n = strlen(s);

	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->buf = realloc(t->buf, t->cap);
		if (!t->buf)
			abort();
	}
	memcpy(t->buf + t->len, s, n + 1);
	t->len += n;
}

static void line(struct text *t, unsigned id, const char *mp, const char *fstype, unsigned minor)
{
	char head[64], tail[160];

	snprintf(head, sizeof(head), "%u 1 0:%u / ", id, minor);
	snprintf(tail, sizeof(tail), " rw - %s %s rw%s\n", fstype, fstype,
		 strcmp(fstype, "devpts") == 0 ? ",gid=5,mode=620,ptmxmode=666" : "");
	put(t, head);
	put(t, mp);
	put(t, tail);
}

static char *join(const char *a, const char *b)
{
	char *r = malloc(strlen(a) + strlen(b) + 1);

	if (r)
		strcat(strcpy(r, a), b);
	return r;
}

int main(void)
{
	_cleanup_(snapshot_freep) struct snapshot *s = snapshot_new();
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	_cleanup_free_ size_t *rel = NULL;
	struct text t = { 0 }, base = { 0 };
	struct parse_error err = { 0 };
	size_t table_bytes = 0, n_rel = 0, cover, devpts;
	char name[32];

	if (!s)
		return 1;
	/* /d/a/a/.../a: DEPTH directories; the cover is mounted on base/c. */
	put(&base, "/d");
	for (int i = 1; i < DEPTH - 2; i++)
		put(&base, "/a");

	put(&t, "1 1 0:1 / / rw - ext4 /dev/root rw\n");
	for (unsigned k = 0; k < N_MOUNTS; k++) {
		_cleanup_free_ char *mp = NULL;

		snprintf(name, sizeof(name), k % 2 ? "/m%u" : "/c/m%u", k);
		mp = join(base.buf, name);
		EXPECT(mp != NULL);
		line(&t, 2 + k, mp, "tmpfs", 100 + k);
		table_bytes += strlen(mp);
	}
	{
		_cleanup_free_ char *c = join(base.buf, "/c");
		_cleanup_free_ char *pts = join(base.buf, "/c/pts");

		line(&t, 2 + N_MOUNTS, pts, "devpts", 50);
		line(&t, 3 + N_MOUNTS, c, "tmpfs", 51);
		table_bytes += strlen(c) + strlen(pts);
	}
	devpts = 1 + N_MOUNTS;
	cover = 2 + N_MOUNTS;

	s->kernel_release = strdup("6.1.0");
	EXPECT_INT(snapshot_set_mountinfo(s, t.buf, t.len, &err), 0);
	free(base.buf);
	EXPECT_INT(s->mounts->n_entries, N_MOUNTS + 3);
	EXPECT_INT(analysis_new(s, &a), 0);
	if (!a)
		return test_result("test-analysis-deep");

	for (unsigned k = 0; k < N_MOUNTS; k++) {
		size_t i = 1 + k;

		if (k % 2) {
			EXPECT(a->reachable[i]);
			EXPECT_INT(a->covered_by[i], NO_MOUNT);
		} else {
			EXPECT(!a->reachable[i]);
			EXPECT_INT(a->covered_by[i], cover);
		}
	}
	EXPECT(a->reachable[cover]);
	EXPECT(!a->reachable[devpts]);
	EXPECT_INT(a->covered_by[devpts], cover);
	EXPECT_INT(a->n_instances, 1);
	EXPECT(a->n_instances == 1 && a->instances[0].covered);

	/* Linear: every byte of every mountpoint hashed at most once. */
	printf("table: %zu mountpoint bytes, %zu hashed looking for covers\n", table_bytes,
	       a->cover_work);
	EXPECT(a->cover_work <= table_bytes);

	/* The devpts, its parent and the sibling hiding it; nothing else matters. */
	EXPECT_INT(analysis_relevant_mounts(a, &rel, &n_rel), 0);
	EXPECT_INT(n_rel, 3);
	if (n_rel == 3) {
		EXPECT_INT(rel[0], 0);
		EXPECT_INT(rel[1], devpts);
		EXPECT_INT(rel[2], cover);
	}
	return test_result("test-analysis-deep");
}
