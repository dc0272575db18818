/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ptmx-replaced across audits: the baseline, each kind of replacement, a fix of a missing node,
 * a reset, and the udev event that came with a replacement, in the evidence and as typed
 * journal fields. */
#include <errno.h>
#include <string.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "checks/ptmx-replaced.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot.h"
#include "report/transitions.h"
#include "test.h"
#include "util/json-util.h"
#include "util/macro.h"

#define HEAD                                                                                       \
	"{\"schema\":\"ptsguard.snapshot/1\",\"hostname\":\"h\","                                  \
	"\"kernel\":{\"release\":\"6.1.0\",\"user_namespaces_max\":0,\"pty_max\":4096,"            \
	"\"pty_reserve\":1024,\"pty_nr\":0},\"tty_gid\":5,"                                        \
	"\"mountinfo\":\"24 1 0:5 / /dev rw - devtmpfs udev rw\\n29 24 0:26 / /dev/pts rw - "      \
	"devpts devpts rw,gid=5,mode=620,ptmxmode=666\\n\",\"fstab\":null,\"nodes\":["
#define TAIL "],\"holders\":[],\"setuid_helpers\":[]}"
#define PTS_PTMX                                                                                   \
	"{\"path\":\"/dev/pts/ptmx\",\"type\":\"char\",\"mode\":\"0666\",\"uid\":0,\"gid\":0,"     \
	"\"rdev\":\"5:2\",\"dev\":\"0:26\",\"target\":null}"

static const char *const CHAR_NODE =
    "{\"path\":\"/dev/ptmx\",\"type\":\"char\",\"mode\":\"0666\",\"uid\":0,\"gid\":0,"
    "\"rdev\":\"5:2\",\"dev\":\"0:5\",\"target\":null}," PTS_PTMX;
static const char *const SYMLINK_PTS =
    "{\"path\":\"/dev/ptmx\",\"type\":\"symlink\",\"mode\":\"0777\",\"uid\":0,\"gid\":0,"
    "\"rdev\":null,\"dev\":\"0:5\",\"target\":\"pts/ptmx\"}," PTS_PTMX;
static const char *const SYMLINK_NULL =
    "{\"path\":\"/dev/ptmx\",\"type\":\"symlink\",\"mode\":\"0777\",\"uid\":0,\"gid\":0,"
    "\"rdev\":null,\"dev\":\"0:5\",\"target\":\"/dev/null\"},"
    "{\"path\":\"/dev/null\",\"type\":\"char\",\"mode\":\"0666\",\"uid\":0,\"gid\":0,"
    "\"rdev\":\"1:3\",\"dev\":\"0:5\",\"target\":null}," PTS_PTMX;
static const char *const MISSING =
    "{\"path\":\"/dev/ptmx\",\"type\":\"missing\",\"mode\":null,\"uid\":null,\"gid\":null,"
    "\"rdev\":null,\"dev\":null,\"target\":null}," PTS_PTMX;

/* One audit of /dev/ptmx as nodes has it: the findings it leaves in *out (cleared first). */
static int audit(struct ptmx_replaced *p, const char *nodes, const struct ptmx_udev_event *udev,
		 struct findings *out)
{
	_cleanup_free_ char *text = NULL;
	struct snapshot *s = NULL;
	struct analysis *a = NULL;
	struct load_error err = { { 0 } };
	int r;

	findings_done(out);
	if (asprintf(&text, HEAD "%s" TAIL, nodes) < 0)
		return -ENOMEM;
	r = snapshot_parse(text, strlen(text), &s, &err);
	CHECK_MSG(r == 0, "snapshot_parse: %d %s", r, err.message);
	if (r == 0)
		r = analysis_new(s, &a);
	if (r == 0)
		r = ptmx_replaced_check(p, a, udev, out);
	analysis_free(a);
	snapshot_free(s);
	return r;
}

static const char *evidence_text(const struct finding *f, const char *key, char *buf, size_t n)
{
	_cleanup_(json_object_putp) json_object *v = NULL;

	if (!finding_evidence_get(f, key, &v))
		return "(absent)";
	snprintf(buf, n, "%s",
		 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	return buf;
}

static void test_unchanged(void)
{
	struct ptmx_replaced p = { 0 };
	struct findings f = { 0 };

	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(f.n_items, 0); /* the baseline */
	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(f.n_items, 0);
	findings_done(&f);
	ptmx_replaced_reset(&p);
}

static void test_char_to_symlink(void)
{
	struct ptmx_replaced p = { 0 };
	struct findings f = { 0 };
	char buf[512];

	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(audit(&p, SYMLINK_PTS, NULL, &f), 0);
	EXPECT_INT(f.n_items, 1);
	if (f.n_items == 1) {
		const struct finding *x = &f.items[0];

		EXPECT_STR(x->check->id, "ptmx-replaced");
		EXPECT(x->check->transition);
		EXPECT_INT(x->severity, SEVERITY_WARNING);
		EXPECT_STR(x->mountpoint, "/dev/ptmx");
		EXPECT_INT(x->n_mount_ids, 0);
		EXPECT_STR(x->summary, "/dev/ptmx was replaced: it was a character node 5:2, it is "
				       "now a symlink to pts/ptmx");
		EXPECT_STR(x->remedy,
			   "mknod -m 0666 /dev/ptmx.new c 5 2 && mv -T /dev/ptmx.new /dev/ptmx");
		EXPECT_STR(evidence_text(x, "path", buf, sizeof(buf)), "\"/dev/ptmx\"");
		EXPECT_STR(
		    evidence_text(x, "before", buf, sizeof(buf)),
		    "{\"kind\":\"char\",\"type\":\"char\",\"mode\":\"0666\",\"rdev\":\"5:2\","
		    "\"target\":null,\"instance\":null}");
		EXPECT_STR(evidence_text(x, "after", buf, sizeof(buf)),
			   "{\"kind\":\"symlink\",\"type\":\"symlink\",\"mode\":\"0777\",\"rdev\":"
			   "\"5:2\",\"target\":\"pts/ptmx\",\"instance\":null}");
		EXPECT_STR(evidence_text(x, "udev_event", buf, sizeof(buf)), "null");
		EXPECT(x->journal_fields == NULL); /* no udev event came with it */
	}

	/* Back to what it was: nothing to report, and nothing remembered of the replacement. */
	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(f.n_items, 0);
	EXPECT(!p.replaced.valid);
	findings_done(&f);
	ptmx_replaced_reset(&p);
}

static void test_udev_event(void)
{
	struct ptmx_replaced p = { 0 };
	struct findings f = { 0 };
	struct ptmx_udev_event ev = { .valid = true, .action = "change", .seqnum = 4242 };
	struct ptmx_udev_event later = { .valid = true, .action = "add", .seqnum = 4300 };
	char buf[512];

	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(audit(&p, SYMLINK_PTS, &ev, &f), 0);
	EXPECT_INT(f.n_items, 1);
	if (f.n_items == 1) {
		char **jf = f.items[0].journal_fields;

		EXPECT_STR(evidence_text(&f.items[0], "udev_event", buf, sizeof(buf)),
			   "{\"action\":\"change\",\"seqnum\":4242}");
		EXPECT(jf != NULL);
		if (jf) {
			EXPECT_STR(jf[0], "PTSGUARD_UDEV_ACTION=change");
			EXPECT_STR(jf[1], "PTSGUARD_UDEV_SEQNUM=4242");
			EXPECT(jf[2] == NULL);
		}
	}

	/* The same replacement, a later event: the event of the replacement stays. */
	EXPECT_INT(audit(&p, SYMLINK_PTS, &later, &f), 0);
	EXPECT_INT(f.n_items, 1);
	if (f.n_items == 1 && f.items[0].journal_fields)
		EXPECT_STR(f.items[0].journal_fields[1], "PTSGUARD_UDEV_SEQNUM=4242");
	else
		CHECK_MSG(false, "the replacement lost its udev event");

	/* Replaced again: this replacement's event, or none. */
	EXPECT_INT(audit(&p, SYMLINK_NULL, NULL, &f), 0);
	EXPECT_INT(f.n_items, 1);
	if (f.n_items == 1) {
		EXPECT(f.items[0].journal_fields == NULL);
		EXPECT_STR(evidence_text(&f.items[0], "udev_event", buf, sizeof(buf)), "null");
	}
	findings_done(&f);
	ptmx_replaced_reset(&p);
}

/* A new target is a new occurrence for the transition diff; a later udev event is not. */
static void test_target_change(void)
{
	struct ptmx_replaced p = { 0 };
	struct findings first = { 0 }, again = { 0 }, other = { 0 }, scratch = { 0 };
	struct ptmx_udev_event ev = { .valid = true, .action = "change", .seqnum = 7 };

	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &scratch), 0);
	EXPECT_INT(audit(&p, SYMLINK_PTS, NULL, &first), 0);
	EXPECT_INT(audit(&p, SYMLINK_PTS, &ev, &again), 0);
	EXPECT_INT(audit(&p, SYMLINK_NULL, NULL, &other), 0);
	EXPECT_INT(first.n_items, 1);
	EXPECT_INT(again.n_items, 1);
	EXPECT_INT(other.n_items, 1);
	if (first.n_items == 1 && again.n_items == 1 && other.n_items == 1) {
		_cleanup_free_ char *k1 = finding_key(&first.items[0]),
				    *k2 = finding_key(&other.items[0]);

		EXPECT_STR(other.items[0].summary,
			   "/dev/ptmx was replaced: it was a character node 5:2, it is now a "
			   "symlink to /dev/null");
		EXPECT_STR(k1, k2); /* the same finding for the journal... */
		EXPECT(finding_same_occurrence(&again.items[0], &first.items[0]));
		EXPECT(!finding_same_occurrence(&other.items[0], &first.items[0])); /* ...anew */
	}
	findings_done(&first);
	findings_done(&again);
	findings_done(&other);
	findings_done(&scratch);
	ptmx_replaced_reset(&p);
}

static void test_missing(void)
{
	struct ptmx_replaced p = { 0 };
	struct findings f = { 0 };

	/* Missing at start: its fix becomes the baseline, it is not a replacement. */
	EXPECT_INT(audit(&p, MISSING, NULL, &f), 0);
	EXPECT_INT(f.n_items, 0);
	EXPECT(p.baseline_broken);
	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(f.n_items, 0);
	EXPECT(!p.baseline_broken);
	EXPECT_INT(audit(&p, SYMLINK_PTS, NULL, &f), 0);
	EXPECT_INT(f.n_items, 1);

	/* A good node gone missing is a replacement. */
	EXPECT_INT(audit(&p, MISSING, NULL, &f), 0);
	EXPECT_INT(f.n_items, 1);
	if (f.n_items == 1)
		EXPECT_STR(
		    f.items[0].summary,
		    "/dev/ptmx was replaced: it was a character node 5:2, it is now missing");

	/* A symlink baseline: the remedy puts the symlink back. */
	ptmx_replaced_reset(&p);
	EXPECT_INT(audit(&p, SYMLINK_PTS, NULL, &f), 0);
	EXPECT_INT(f.n_items, 0);
	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(f.n_items, 1);
	if (f.n_items == 1)
		EXPECT_STR(f.items[0].remedy,
			   "ln -s pts/ptmx /dev/ptmx.new && mv -T /dev/ptmx.new /dev/ptmx");
	findings_done(&f);
	ptmx_replaced_reset(&p);
}

static void test_reset(void)
{
	struct ptmx_replaced p = { 0 };
	struct findings f = { 0 };

	EXPECT_INT(audit(&p, CHAR_NODE, NULL, &f), 0);
	EXPECT_INT(audit(&p, SYMLINK_PTS, NULL, &f), 0);
	EXPECT_INT(f.n_items, 1);
	ptmx_replaced_reset(&p); /* a reload: what it is now is the baseline */
	EXPECT_INT(audit(&p, SYMLINK_PTS, NULL, &f), 0);
	EXPECT_INT(f.n_items, 0);
	findings_done(&f);
	ptmx_replaced_reset(&p);
}

int main(void)
{
	test_unchanged();
	test_char_to_symlink();
	test_udev_event();
	test_target_change();
	test_missing();
	test_reset();
	return test_result("test-ptmx-replaced");
}
