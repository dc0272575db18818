/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The transition diff between two audits' findings (what the daemon journals), and repair
 * outcomes as transitions (what the daemon and `ptsguard repair` journal). */
#include <errno.h>
#include <string.h>

#include "checks/checks.h"
#include "repair/outcomes.h"
#include "report/transitions.h"
#include "test.h"
#include "util/json-util.h"
#include "util/string-util.h"

/* A finding of check id at mountpoint, first mount mount_id (0: none), evidence as JSON text. */
static struct finding *add(struct findings *f, const char *id, enum severity sev,
			   const char *mountpoint, unsigned mount_id, const char *evidence)
{
	const struct check_info *info = check_find(id);
	struct finding *x;

	CHECK_MSG(info, "no check %s", id);
	if (!info)
		return NULL;
	x = findings_add(f, info, sev, json_tokener_parse(evidence ?: "{}"));
	CHECK_MSG(x, "findings_add");
	if (!x)
		return NULL;
	x->mountpoint = strdup_or_null(mountpoint);
	if (mount_id)
		EXPECT_INT(finding_add_mount(x, mount_id, 0), 0);
	return x;
}

/* The diff as "state check mountpoint" lines, in order. */
static char *diff(const struct findings *before, const struct findings *now, char *const *quiet)
{
	struct transitions t = { 0 };
	char *out = NULL;
	size_t size = 0;
	FILE *m;

	EXPECT_INT(transitions_diff(before, now, quiet, &t), 0);
	m = open_memstream(&out, &size);
	if (!m)
		abort();
	FOREACH_ARRAY (e, t.items, t.n_items) {
		EXPECT(e->detail == NULL);
		fprintf(m, "%s %s %s@%u;", transition_to_string(e->transition),
			e->finding->check->id, e->finding->mountpoint ?: "-",
			e->finding->n_mount_ids ? e->finding->mount_ids[0] : 0);
	}
	fclose(m);
	transitions_done(&t);
	return out;
}

#define EXPECT_DIFF(before, now, quiet, want)                                                      \
	do {                                                                                       \
		char *_d = diff(before, now, quiet);                                               \
		EXPECT_STR(_d, want);                                                              \
		free(_d);                                                                          \
	} while (0)

static void test_key(void)
{
	struct findings f = { 0 };
	struct finding *x = add(&f, "pts-covered", SEVERITY_CRITICAL, "/dev/pts", 29, NULL);
	struct finding *y = add(&f, "ptmx-no-devpts", SEVERITY_CRITICAL, NULL, 0, NULL);
	char *k;

	if (x && y) {
		k = finding_key(x);
		EXPECT_STR(k, "pts-covered\t/dev/pts\t29");
		free(k);
		k = finding_key(y);
		EXPECT_STR(k, "ptmx-no-devpts\t\t0");
		free(k);
	}
	findings_done(&f);
}

static void test_detected_resolved_unchanged(void)
{
	struct findings empty = { 0 }, one = { 0 }, same = { 0 };

	add(&one, "pts-covered", SEVERITY_CRITICAL, "/dev/pts", 29, "{\"by\":31}");
	add(&same, "pts-covered", SEVERITY_CRITICAL, "/dev/pts", 29, "{\"by\":31}");

	EXPECT_DIFF(&empty, &empty, NULL, "");
	EXPECT_DIFF(&empty, &one, NULL, "detected pts-covered /dev/pts@29;");
	EXPECT_DIFF(&one, &empty, NULL, "resolved pts-covered /dev/pts@29;");
	EXPECT_DIFF(&one, &same, NULL, "");
	findings_done(&one);
	findings_done(&same);
}

/* Resolved first, in the previous order; then detected, in the new order. */
static void test_order(void)
{
	struct findings before = { 0 }, now = { 0 };

	add(&before, "ptmx-mode", SEVERITY_WARNING, "/dev/ptmx", 0, NULL);
	add(&before, "ptmx-no-devpts", SEVERITY_CRITICAL, NULL, 0, NULL);
	add(&now, "pty-slave-perms", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	add(&now, "pts-covered", SEVERITY_CRITICAL, "/dev/pts", 29, NULL);
	EXPECT_DIFF(&before, &now, NULL,
		    "resolved ptmx-mode /dev/ptmx@0;resolved ptmx-no-devpts -@0;"
		    "detected pty-slave-perms /dev/pts@29;detected pts-covered /dev/pts@29;");
	findings_done(&before);
	findings_done(&now);
}

/* The same check at two mounts: two findings, each with its own life. */
static void test_two_mounts(void)
{
	struct findings before = { 0 }, now = { 0 }, later = { 0 };

	add(&before, "devpts-options-lost", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	add(&now, "devpts-options-lost", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	add(&now, "devpts-options-lost", SEVERITY_WARNING, "/srv/c/dev/pts", 41, NULL);
	add(&later, "devpts-options-lost", SEVERITY_WARNING, "/srv/c/dev/pts", 41, NULL);
	EXPECT_DIFF(&before, &now, NULL, "detected devpts-options-lost /srv/c/dev/pts@41;");
	EXPECT_DIFF(&now, &later, NULL, "resolved devpts-options-lost /dev/pts@29;");
	/* Same mountpoint, another mount (remounted anew): another finding. */
	findings_done(&later);
	add(&later, "devpts-options-lost", SEVERITY_WARNING, "/dev/pts", 52, NULL);
	EXPECT_DIFF(&before, &later, NULL,
		    "resolved devpts-options-lost /dev/pts@29;"
		    "detected devpts-options-lost /dev/pts@52;");
	findings_done(&before);
	findings_done(&now);
	findings_done(&later);
}

static void test_occurrence(void)
{
	struct findings before = { 0 }, now = { 0 };

	/* An ordinary check: other evidence is the same finding. */
	add(&before, "pts-covered", SEVERITY_CRITICAL, "/dev/pts", 29, "{\"by\":31}");
	add(&now, "pts-covered", SEVERITY_CRITICAL, "/dev/pts", 29, "{\"by\":77}");
	EXPECT_DIFF(&before, &now, NULL, "");
	/* Another severity is a new occurrence: detected, never resolved. */
	findings_done(&now);
	add(&now, "pts-covered", SEVERITY_WARNING, "/dev/pts", 29, "{\"by\":31}");
	EXPECT_DIFF(&before, &now, NULL, "detected pts-covered /dev/pts@29;");
	findings_done(&before);
	findings_done(&now);

	/* A check raised on a change: a new "after" is a new occurrence... */
	add(&before, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0,
	    "{\"before\":{\"kind\":\"char\"},\"after\":{\"kind\":\"symlink\",\"target\":\"pts/"
	    "ptmx\"},\"udev_event\":null}");
	add(&now, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0,
	    "{\"before\":{\"kind\":\"char\"},\"after\":{\"kind\":\"symlink\",\"target\":\"/dev/"
	    "null\"},\"udev_event\":null}");
	EXPECT_DIFF(&before, &now, NULL, "detected ptmx-replaced /dev/ptmx@0;");
	/* ...anything else in the evidence is not. */
	findings_done(&now);
	add(&now, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0,
	    "{\"before\":{\"kind\":\"bind\"},\"after\":{\"kind\":\"symlink\",\"target\":\"pts/"
	    "ptmx\"},\"udev_event\":{\"action\":\"change\",\"seqnum\":3}}");
	EXPECT_DIFF(&before, &now, NULL, "");
	/* Without an "after" there is nothing to tell them apart by: a new occurrence. */
	findings_done(&now);
	add(&now, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0, "{}");
	EXPECT_DIFF(&before, &now, NULL, "detected ptmx-replaced /dev/ptmx@0;");
	findings_done(&before);
	findings_done(&now);
}

/* f's evidence written alone, pretty, at level 2 (where a report puts it). */
static char *emitted(const struct finding *f)
{
	struct json_emit e;

	emit_start_text(&e, NULL, 1, 2);
	finding_emit_evidence(f, &e, NULL);
	return emit_take_text(&e, true);
}

/* A finding's evidence is sealed as text when the next finding is added, or by findings_seal(),
 * and reads, writes and compares the same either way. */
static void test_evidence_sealed(void)
{
	static const char ev[] = "{\"path\":\"/dev/pts/0\",\"after\":null,\"n\":1}";
	struct findings f = { 0 }, other = { 0 };
	_cleanup_free_ char *open_text = NULL, *open_emitted = NULL, *text = NULL, *e2 = NULL;
	json_object *v = NULL;
	struct finding *x;

	x = add(&f, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0, ev);
	if (!x)
		return;
	CHECK_MSG(x->evidence && !x->evidence_text, "the last finding is sealed already");
	open_text = finding_evidence_text(x);
	open_emitted = emitted(x);
	EXPECT_STR(open_text, ev);
	add(&f, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0, "{\"after\":2}");
	x = &f.items[0];
	CHECK_MSG(!x->evidence && x->evidence_text, "adding the next did not seal the first");
	text = finding_evidence_text(x);
	EXPECT_STR(text, ev);
	e2 = emitted(x);
	EXPECT_STR(e2, open_emitted);

	/* present and null, absent, present */
	CHECK_MSG(finding_evidence_get(x, "after", &v) && !v, "\"after\": null, sealed");
	CHECK_MSG(!finding_evidence_get(x, "before", &v) && !v, "no \"before\", sealed");
	CHECK_MSG(finding_evidence_get(x, "path", &v) && v &&
		      streq(json_object_get_string(v), "/dev/pts/0"),
		  "\"path\", sealed");
	json_object_put(v);
	/* a key that is only a value's text is not a key */
	CHECK_MSG(!finding_evidence_get(x, "dev", &v), "\"dev\" found in \"/dev/pts/0\"");

	/* Added to once sealed (the probe's check does so), then sealed again with the rest. */
	EXPECT_INT(finding_evidence_add(x, "confirmed_by_probe", json_object_new_boolean(true)), 0);
	findings_seal(&f);
	CHECK_MSG(!f.items[0].evidence && !f.items[1].evidence, "findings_seal() left an object");
	free(text);
	text = finding_evidence_text(&f.items[0]);
	EXPECT_STR(text,
		   "{\"path\":\"/dev/pts/0\",\"after\":null,\"n\":1,\"confirmed_by_probe\":true}");

	/* A sealed "after" and an open one compare as values (json_object_equal()). */
	add(&other, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0, "{\"after\":null}");
	CHECK_MSG(finding_same_occurrence(&f.items[0], &other.items[0]),
		  "null \"after\", sealed and open: another occurrence");
	CHECK_MSG(!finding_same_occurrence(&f.items[1], &other.items[0]),
		  "\"after\" 2 and null: the same occurrence");
	findings_done(&other);
	add(&other, "ptmx-replaced", SEVERITY_WARNING, "/dev/ptmx", 0, "{\"after\":2}");
	CHECK_MSG(finding_same_occurrence(&f.items[1], &other.items[0]),
		  "\"after\" 2, sealed and open: another occurrence");
	findings_done(&other);
	findings_done(&f);
}

/* A finding journaled as repaired leaves quietly; one still there is not affected. */
static void test_quiet_keys(void)
{
	struct findings before = { 0 }, now = { 0 };
	char *quiet[] = { (char *)"devpts-options-lost\t/dev/pts\t29",
			  (char *)"pty-slave-perms\t/dev/pts\t29", NULL };

	add(&before, "devpts-options-lost", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	add(&before, "pty-slave-perms", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	add(&before, "ptmx-mode", SEVERITY_WARNING, "/dev/ptmx", 0, NULL);
	add(&now, "pty-slave-perms", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	EXPECT_DIFF(&before, &now, quiet, "resolved ptmx-mode /dev/ptmx@0;");
	EXPECT_DIFF(&before, &now, NULL,
		    "resolved devpts-options-lost /dev/pts@29;resolved ptmx-mode /dev/ptmx@0;");
	findings_done(&before);
	findings_done(&now);
}

static void test_repair_outcomes(void)
{
	struct findings f = { 0 };
	struct repair_action actions[4] = { 0 };
	struct repair_plan plan = { .actions = actions, .n_actions = 4, .allocated = 4 };
	struct transitions t = { 0 };

	add(&f, "devpts-options-lost", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	add(&f, "ptmx-mode", SEVERITY_WARNING, "/dev/ptmx", 0, NULL);
	add(&f, "pts-covered", SEVERITY_CRITICAL, "/dev/pts", 29, NULL);
	add(&f, "pty-slave-perms", SEVERITY_WARNING, "/dev/pts", 29, NULL);
	if (f.n_items != 4)
		return;
	actions[0] = (struct repair_action){ .finding = &f.items[0],
					     .kind = ACTION_REMOUNT,
					     .result = ACTION_DONE,
					     .detail = (char *)"remounted" };
	actions[1] = (struct repair_action){ .finding = &f.items[1],
					     .kind = ACTION_CHMOD,
					     .result = ACTION_REFUSED,
					     .detail = (char *)"not a char node" };
	actions[2] = (struct repair_action){ .finding = &f.items[2],
					     .kind = ACTION_MANUAL,
					     .result = ACTION_REFUSED };
	actions[3] = (struct repair_action){ .finding = &f.items[3],
					     .kind = ACTION_SLAVE,
					     .result = ACTION_PLANNED };

	EXPECT_INT(repair_outcomes(&plan, &t), 0);
	EXPECT_INT(t.n_items, 2);
	if (t.n_items == 2) {
		EXPECT(t.items[0].finding == &f.items[0]);
		EXPECT_INT(t.items[0].transition, TRANSITION_REPAIRED);
		EXPECT_STR(t.items[0].detail, "remounted");
		EXPECT(t.items[1].finding == &f.items[1]);
		EXPECT_INT(t.items[1].transition, TRANSITION_REPAIR_FAILED);
		EXPECT_STR(t.items[1].detail, "not a char node");
	}
	EXPECT_STR(transition_to_string(TRANSITION_REPAIR_FAILED), "repair-failed");
	transitions_done(&t);
	findings_done(&f);
}

int main(void)
{
	test_key();
	test_detected_resolved_unchanged();
	test_order();
	test_two_mounts();
	test_occurrence();
	test_evidence_sealed();
	test_quiet_keys();
	test_repair_outcomes();
	return test_result("test-transitions");
}
