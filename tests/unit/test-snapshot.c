/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Snapshot loading (every error names the key or line), the small helpers the analysis relies
 * on, and the analysis on hostile mount tables (cycles, very deep stacks). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "snapshot/idmap.h"
#include "snapshot/snapshot-json.h"
#include "snapshot/snapshot.h"
#include "test.h"
#include "util/escape.h"
#include "util/parse.h"
#include "util/path.h"

#define GOOD_HEAD                                                                                  \
	"{\"schema\":\"ptsguard.snapshot/1\",\"hostname\":\"h\","                                  \
	"\"kernel\":{\"release\":\"6.1.0\",\"user_namespaces_max\":0,\"pty_max\":4096,"            \
	"\"pty_reserve\":1024,\"pty_nr\":0},\"tty_gid\":5,"
#define GOOD_MOUNTINFO                                                                             \
	"\"mountinfo\":\"24 1 0:5 / /dev rw - devtmpfs udev rw\\n29 24 0:26 / /dev/pts rw - "      \
	"devpts devpts rw,gid=5,mode=620\\n\","
#define GOOD_TAIL                                                                                  \
	"\"fstab\":null,\"nodes\":[{\"path\":\"/dev/ptmx\",\"type\":\"char\",\"mode\":\"0666\","   \
	"\"uid\":0,\"gid\":0,\"rdev\":\"5:2\",\"dev\":\"0:5\",\"target\":null}],"                  \
	"\"holders\":[],\"setuid_helpers\":[]}"

static void load_fails(const char *text, const char *needle)
{
	struct snapshot *s = NULL;
	struct load_error err = { { 0 } };
	int r = snapshot_parse(text, strlen(text), &s, &err);

	CHECK_MSG(r == -EINVAL, "expected -EINVAL, got %d for %s", r, text);
	CHECK_MSG(strstr(err.message, needle), "error \"%s\" does not mention \"%s\"", err.message,
		  needle);
	snapshot_free(s);
}

static void test_load(void)
{
	struct snapshot *s = NULL;
	struct load_error err = { { 0 } };
	const char *good = GOOD_HEAD GOOD_MOUNTINFO GOOD_TAIL;

	EXPECT_INT(snapshot_parse(good, strlen(good), &s, &err), 0);
	if (s) {
		EXPECT_INT(s->mounts->n_entries, 2);
		EXPECT_INT(s->n_nodes, 1);
		EXPECT_INT(major(s->nodes[0].rdev), 5);
		EXPECT(s->initial_mount_ns); /* absent key: the default */
	}
	snapshot_free(s);

	load_fails("", "empty");
	load_fails("{", "truncated");
	load_fails("[1,2]", "object");
	load_fails("{\"schema\": 5}", "schema");
	load_fails("{\"schema\":\"other/1\"}", "schema");
	load_fails(GOOD_HEAD GOOD_MOUNTINFO "\"fstab\":null}", "'nodes'");
	load_fails("{\"schema\":\"ptsguard.snapshot/1\",\"hostname\":\"h\",\"kernel\":{}}",
		   "'kernel.release'");
	load_fails(
	    GOOD_HEAD
	    "\"mountinfo\":\"24 1 0:5 / /dev rw - devtmpfs udev rw\\nbad line\\n\"," GOOD_TAIL,
	    "line 2");
	load_fails(GOOD_HEAD "\"mountinfo\":17," GOOD_TAIL, "'mountinfo': expected a string");
	{
		char buf[2048];

		snprintf(buf, sizeof(buf), "%s", GOOD_HEAD GOOD_MOUNTINFO GOOD_TAIL);
		*strstr(buf, "\"tty_gid\":5") = 0;
		strcat(buf, "\"tty_gid\":\"five\"," GOOD_MOUNTINFO GOOD_TAIL);
		load_fails(buf, "'tty_gid'");
	}
	load_fails(GOOD_HEAD GOOD_MOUNTINFO
		   "\"fstab\":null,\"nodes\":[{\"path\":\"/dev/ptmx\",\"type\":\"char\","
		   "\"mode\":\"0999\",\"uid\":0,\"gid\":0,\"rdev\":\"5:2\",\"dev\":\"0:5\"}],"
		   "\"holders\":[],\"setuid_helpers\":[]}",
		   "nodes[0].mode");
	load_fails(GOOD_HEAD GOOD_MOUNTINFO
		   "\"fstab\":null,\"nodes\":[{\"path\":\"/dev/ptmx\",\"type\":\"char\","
		   "\"mode\":\"0666\",\"uid\":0,\"gid\":0,\"dev\":\"0:5\"}],"
		   "\"holders\":[],\"setuid_helpers\":[]}",
		   "nodes[0].rdev");
	load_fails(GOOD_HEAD GOOD_MOUNTINFO
		   "\"fstab\":null,\"nodes\":[{\"path\":\"/dev/ptmx\",\"type\":\"fifo\"}],"
		   "\"holders\":[],\"setuid_helpers\":[]}",
		   "nodes[0].type");
	load_fails(GOOD_HEAD GOOD_MOUNTINFO "\"fstab\":null,\"nodes\":[],\"holders\":[{\"pid\":-4,"
					    "\"comm\":\"x\",\"dev\":\"0:1\",\"index\":0}],"
					    "\"setuid_helpers\":[]}",
		   "holders[0].pid");
	load_fails(GOOD_HEAD GOOD_MOUNTINFO GOOD_TAIL "xyz", "trailing");
}

/* The allocation probe's object: each field checked against the others. */
#define PROBE_TAIL(probe)                                                                          \
	GOOD_HEAD GOOD_MOUNTINFO                                                                   \
	    "\"fstab\":null,\"nodes\":[],\"holders\":[],\"setuid_helpers\":[],\"probe\":" probe    \
	    "}"
#define OK_STEP(n)   "{\"step\":\"" n "\",\"ok\":true}"
#define FAIL_STEP(n) "{\"step\":\"" n "\",\"ok\":false}"
#define IDS	     "\"uid\":65534,\"gid\":65534,"

static void test_load_probe(void)
{
	struct snapshot *s = NULL;
	struct load_error err = { { 0 } };
	const char *good = PROBE_TAIL(
	    "{\"performed\":true,\"reason\":null," IDS
	    "\"steps\":[" OK_STEP("open_ptmx") "," OK_STEP("grantpt") "," FAIL_STEP(
		"unlockpt") "],\"failed_step\":\"unlockpt\","
			    "\"errno\":{\"name\":\"EPERM\",\"number\":1},\"ptsname\":null}");
	enum alloc_step step;

	EXPECT_INT(snapshot_parse(good, strlen(good), &s, &err), 0);
	if (s) {
		EXPECT_INT(s->probe.status, ALLOC_PERFORMED);
		EXPECT(alloc_probe_failed(&s->probe, &step));
		EXPECT_INT(step, ALLOC_STEP_UNLOCKPT);
		EXPECT_INT(s->probe.error, EPERM);
		EXPECT_INT(s->probe.uid, 65534);
	}
	snapshot_free(s);

	load_fails(PROBE_TAIL("{\"performed\":\"yes\"}"), "'probe.performed'");
	load_fails(PROBE_TAIL("{\"performed\":true,\"reason\":\"not-root\"," IDS
			      "\"steps\":[],\"failed_step\":null,\"errno\":null,\"ptsname\":null}"),
		   "'probe.reason'");
	load_fails(
	    PROBE_TAIL("{\"performed\":false,\"reason\":\"sleepy\",\"uid\":null,\"gid\":null,"
		       "\"steps\":[],\"failed_step\":null,\"errno\":null,\"ptsname\":null}"),
	    "'probe.reason'");
	/* Steps out of order, a failure before the last step, a failure with no errno. */
	load_fails(PROBE_TAIL("{\"performed\":true,\"reason\":null," IDS "\"steps\":[" OK_STEP(
		       "grantpt") "],\"failed_step\":null,\"errno\":null,\"ptsname\":null}"),
		   "probe.steps[0].step");
	load_fails(PROBE_TAIL("{\"performed\":true,\"reason\":null," IDS
			      "\"steps\":[" FAIL_STEP("open_ptmx") "," OK_STEP(
				  "grantpt") "],\"failed_step\":\"open_ptmx\","
					     "\"errno\":{\"name\":\"EACCES\",\"number\":13},"
					     "\"ptsname\":null}"),
		   "only the last step may fail");
	load_fails(PROBE_TAIL("{\"performed\":true,\"reason\":null," IDS "\"steps\":[" FAIL_STEP(
		       "open_ptmx") "],\"failed_step\":\"open_ptmx\",\"errno\":null,"
				    "\"ptsname\":null}"),
		   "'probe.errno'");
	load_fails(PROBE_TAIL("{\"performed\":true,\"reason\":null," IDS "\"steps\":[" FAIL_STEP(
		       "open_ptmx") "],\"failed_step\":\"open_ptmx\","
				    "\"errno\":{\"name\":\"EACCES\",\"number\":1},"
				    "\"ptsname\":null}"),
		   "is not errno 1");
	/* Not all steps taken, yet none failed. */
	load_fails(PROBE_TAIL("{\"performed\":true,\"reason\":null," IDS "\"steps\":[" OK_STEP(
		       "open_ptmx") "],\"failed_step\":null,\"errno\":null,\"ptsname\":null}"),
		   "the last step taken must have failed");
	load_fails(PROBE_TAIL("{\"performed\":false,\"reason\":\"not-root\",\"uid\":0,\"gid\":0,"
			      "\"steps\":[],\"failed_step\":null,\"errno\":null,\"ptsname\":null}"),
		   "must be null");
}

static void test_helpers(void)
{
	char *p;
	mode_t m;
	dev_t d;
	char buf[64] = "a\\040b\\134c\\0";

	p = path_resolve_lexical("/dev/ptmx", "pts/ptmx");
	EXPECT_STR(p, "/dev/pts/ptmx");
	free(p);
	p = path_resolve_lexical("/dev/ptmx", "../run/./x//y/../ptmx");
	EXPECT_STR(p, "/run/x/ptmx");
	free(p);
	p = path_resolve_lexical("/dev/ptmx", "/abs/ptmx");
	EXPECT_STR(p, "/abs/ptmx");
	free(p);
	p = path_resolve_lexical("/dev/ptmx", "../../..");
	EXPECT_STR(p, "/");
	free(p);

	EXPECT_INT(parse_mode("620", &m), 0);
	EXPECT_INT(m, 0620);
	EXPECT_INT(parse_mode("4755", &m), 0);
	EXPECT_INT(m, 04755);
	EXPECT_INT(parse_mode("0999", &m), -EINVAL);
	EXPECT_INT(parse_mode("", &m), -EINVAL);
	EXPECT_INT(parse_mode("17777", &m), -EINVAL);
	EXPECT_INT(parse_devnum("136:12", &d), 0);
	EXPECT(major(d) == 136 && minor(d) == 12);
	EXPECT_INT(parse_devnum("136", &d), -EINVAL);
	EXPECT_INT(parse_devnum(":1", &d), -EINVAL);
	EXPECT_INT(parse_devnum("1:x", &d), -EINVAL);

	EXPECT(kernel_at_least("4.7.0", 4, 7));
	EXPECT(kernel_at_least("6.18.44-fc-v1147", 4, 7));
	EXPECT(!kernel_at_least("4.6.7", 4, 7));
	EXPECT(!kernel_at_least("2.6.32-754.el6.x86_64", 4, 7));
	EXPECT(!kernel_at_least("3.10.0", 4, 7));
	EXPECT(kernel_at_least("10.0", 4, 7));

	unescape_octal(buf);
	EXPECT_STR(buf, "a b\\c\\0");
	{
		char none[] = "/dev/pts", first[] = "\\040x", last[] = "x\\011";

		unescape_octal(none);
		EXPECT_STR(none, "/dev/pts");
		unescape_octal(first);
		EXPECT_STR(first, " x");
		unescape_octal(last);
		EXPECT_STR(last, "x\t");
	}
}

static struct snapshot *snapshot_with_mounts(char *mountinfo)
{
	struct snapshot *s = snapshot_new();
	struct parse_error err;
	int r = snapshot_set_mountinfo(s, mountinfo, strlen(mountinfo), &err);

	CHECK_MSG(r == 0, "line %u: %s", err.line, err.message);
	s->kernel_release = strdup("6.1.0");
	return s;
}

static void test_hostile_tables(void)
{
	struct analysis *a = NULL;
	struct snapshot *s;
	size_t n = 100000, len = 0;
	char *text = malloc(n * 96), *p = text;

	/* A parent cycle must terminate and leave something reachable. */
	s = snapshot_with_mounts(strdup("1 2 0:1 / /a rw - tmpfs t rw\n2 1 0:2 / /a rw - tmpfs t "
					"rw\n"));
	EXPECT_INT(analysis_new(s, &a), 0);
	analysis_free(a);
	snapshot_free(s);

	/* A mount whose parent chain runs into a cycle further up (found by fuzzing: the cycle
	 * was cut at the wrong end and a child read its parent's unset state). */
	s = snapshot_with_mounts(strdup("1 2 0:1 / /a/b rw - tmpfs t rw\n2 3 0:2 / /a rw - tmpfs t "
					"rw\n3 2 0:3 / /a rw - tmpfs t rw\n"));
	a = NULL;
	EXPECT_INT(analysis_new(s, &a), 0);
	if (a)
		for (size_t i = 0; i < 3; i++)
			EXPECT(a->covered_by[i] == NO_MOUNT || a->covered_by[i] < 3);
	analysis_free(a);
	snapshot_free(s);

	/* A repeated id: the stacking on the first mount of id 5 is seen although the search for
	 * id 5 lands on the second (the analysis looks for what is stacked on every mount then,
	 * not only on those it found to be parents). */
	s = snapshot_with_mounts(
	    strdup("1 0 0:1 / / rw - ext4 /dev/vda rw\n"
		   "5 1 0:20 / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n"
		   "5 1 0:21 / /x rw - tmpfs t rw\n"
		   "6 5 0:22 / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n"));
	a = NULL;
	EXPECT_INT(analysis_new(s, &a), 0);
	if (a) {
		EXPECT(!a->reachable[1]);
		EXPECT_INT(a->stacked_on[1], 3);
		EXPECT_INT(a->covered_by[1], 3);
		EXPECT(a->reachable[2]);
		EXPECT_INT(a->stacked_on[2], NO_MOUNT);
		EXPECT(a->reachable[3]);
	}
	analysis_free(a);
	snapshot_free(s);

	/* Ids out of order and of several bytes (the sort by id runs one pass per byte): each
	 * mount finds its parent. */
	s = snapshot_with_mounts(strdup("70000 1 0:40 / /big rw - tmpfs t rw\n"
					"300 70000 0:41 / /big/x rw - tmpfs t rw\n"
					"1 0 0:1 / / rw - ext4 /dev/vda rw\n"
					"16777217 300 0:42 / /big/x/y rw - tmpfs t rw\n"
					"2 16777217 0:43 / /big/x/y rw - tmpfs t rw\n"));
	a = NULL;
	EXPECT_INT(analysis_new(s, &a), 0);
	if (a) {
		EXPECT_INT(a->parent[0], 2);
		EXPECT_INT(a->parent[1], 0);
		EXPECT_INT(a->parent[2], NO_MOUNT);
		EXPECT_INT(a->parent[3], 1);
		EXPECT_INT(a->parent[4], 3);
		EXPECT_INT(a->stacked_on[3], 4);
		EXPECT(!a->reachable[3]);
		EXPECT(a->reachable[4]);
	}
	analysis_free(a);
	snapshot_free(s);

	/* Stacked on a mount listed after the one stacked on it, and a leaf beside them. */
	s = snapshot_with_mounts(
	    strdup("1 0 0:1 / / rw - ext4 /dev/vda rw\n"
		   "8 7 0:30 / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n"
		   "9 1 0:31 / /y rw - tmpfs t rw\n"
		   "7 1 0:32 / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n"));
	a = NULL;
	EXPECT_INT(analysis_new(s, &a), 0);
	if (a) {
		EXPECT_INT(a->parent[1], 3);
		EXPECT_INT(a->stacked_on[3], 1);
		EXPECT(!a->reachable[3]);
		EXPECT(a->reachable[1]);
		EXPECT(a->reachable[2]);
		EXPECT_INT(a->stacked_on[2], NO_MOUNT);
	}
	analysis_free(a);
	snapshot_free(s);

	/* 100,000 devpts stacked on one mountpoint: no recursion, only the top is reachable. */
	p += sprintf(p, "1 0 0:1 / / rw - ext4 /dev/vda rw\n");
	for (size_t i = 2; i <= n; i++)
		p += sprintf(p, "%zu %zu 0:%zu / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n",
			     i, i - 1, i + 10);
	len = (size_t)(p - text);
	(void)len;
	s = snapshot_with_mounts(text);
	a = NULL;
	EXPECT_INT(analysis_new(s, &a), 0);
	if (a) {
		size_t reachable = 0;

		for (size_t i = 0; i < s->mounts->n_entries; i++)
			reachable += a->reachable[i];
		EXPECT_INT(reachable, 2); /* / and the top devpts */
		EXPECT(a->reachable[n - 1]);
		EXPECT_INT(s->mounts->entries[a->covered_by[1]].id, 3); /* the next one up */
	}
	analysis_free(a);
	snapshot_free(s);
}

/* A snapshot taken in a nested user namespace: mountinfo prints the host's gid, the maps read
 * number their outside ids as the parent namespace does, and the probe's slave says which group
 * that gid is there. */
static struct snapshot *nested(const char *options, gid_t slave_gid, const char *gid_map,
			       const char *uid_map)
{
	struct snapshot *s = snapshot_new();
	struct parse_error err = { 0 };
	char *text = NULL;

	CHECK_MSG(s && asprintf(&text,
				"1 0 0:30 / / rw - tmpfs t rw\n"
				"2 1 0:40 / /dev/pts rw - devpts devpts %s\n",
				options) > 0,
		  "setup");
	EXPECT_INT(snapshot_set_mountinfo(s, text, strlen(text), &err), 0);
	s->gid_map = gid_map ? strdup(gid_map) : NULL;
	s->uid_map = uid_map ? strdup(uid_map) : NULL;
	s->probe = (struct alloc_probe){
		.status = ALLOC_PERFORMED,
		.n_steps = _ALLOC_STEP_MAX,
		.slave = { .known = true, .dev = makedev(0, 40), .uid = 1000, .gid = slave_gid }
	};
	return s;
}

static void test_calibrate_idmaps(void)
{
	struct snapshot *s;
	unsigned v;

	/* Outer 0-131071 at 100000, inner 0-65535 at the outer's 65536: gid 5 inside is the
	 * host's 165541, and the map read inside says "0 65536 65536". */
	s = nested("rw,gid=165541,mode=620", 5, "0 65536 65536\n", "0 65536 65536\n");
	EXPECT_INT(snapshot_calibrate_idmaps(s), 1);
	EXPECT_STR(s->gid_map, "0 165536 65536\n");
	EXPECT_STR(s->uid_map, "0 165536 65536\n"); /* alike, moved alike */
	EXPECT_INT(idmap_from_initial(s->gid_map, 165541, &v), 0);
	EXPECT_INT(v, 5);
	EXPECT_INT(snapshot_calibrate_idmaps(s), 0); /* now consistent */
	snapshot_free(s);

	/* Not nested: the map already names the gid as the slave shows it. */
	s = nested("rw,gid=100005,mode=620", 5, "0 100000 65536\n", "0 100000 65536\n");
	EXPECT_INT(snapshot_calibrate_idmaps(s), 0);
	EXPECT_STR(s->gid_map, "0 100000 65536\n");
	snapshot_free(s);

	/* The slave's group is the overflow group: truly unmapped, nothing to learn. */
	s = nested("rw,gid=100005,mode=620", IDMAP_OVERFLOW_ID, "0 65536 65536\n", NULL);
	EXPECT_INT(snapshot_calibrate_idmaps(s), 0);
	EXPECT_STR(s->gid_map, "0 65536 65536\n");
	snapshot_free(s);

	/* Maps that differ: only gid_map moves; several lines move together. */
	s = nested("rw,gid=165541,mode=620", 5, "0 65536 10\n10 65546 65526\n", "0 1 1\n");
	EXPECT_INT(snapshot_calibrate_idmaps(s), 1);
	EXPECT_STR(s->gid_map, "0 165536 10\n10 165546 65526\n");
	EXPECT_STR(s->uid_map, "0 1 1\n");
	snapshot_free(s);

	/* No gid=: nothing to translate. No probe: nothing known. The identity: nothing read. */
	s = nested("rw,mode=620", 5, "0 65536 65536\n", NULL);
	EXPECT_INT(snapshot_calibrate_idmaps(s), 0);
	snapshot_free(s);
	s = nested("rw,gid=165541,mode=620", 5, "0 65536 65536\n", NULL);
	s->probe.status = ALLOC_DISABLED;
	EXPECT_INT(snapshot_calibrate_idmaps(s), 0);
	snapshot_free(s);
	s = nested("rw,gid=5,mode=620", 5, NULL, NULL);
	EXPECT_INT(snapshot_calibrate_idmaps(s), 0);
	EXPECT(s->gid_map == NULL);
	snapshot_free(s);

	/* The probe's user where nobody is not mapped: the highest id mapped. */
	EXPECT_INT(idmap_highest_inside("0 65536 1024\n", &v), 0);
	EXPECT_INT(v, 1023);
	EXPECT_INT(idmap_highest_inside("1000 1 1\n0 100000 1\n", &v), 0);
	EXPECT_INT(v, 1000);
	EXPECT_INT(idmap_highest_inside("0 1000 1\n", &v), -ENOENT); /* root alone */
	EXPECT_INT(idmap_highest_inside(NULL, &v), -EINVAL);

	/* A shift that would leave the 32-bit range is not made. */
	s = nested("rw,gid=4294967290,mode=620", 5, "0 65536 65536\n", NULL);
	EXPECT_INT(snapshot_calibrate_idmaps(s), 0);
	EXPECT_STR(s->gid_map, "0 65536 65536\n");
	snapshot_free(s);
}

int main(void)
{
	test_load();
	test_load_probe();
	test_helpers();
	test_hostile_tables();
	test_calibrate_idmaps();
	return test_result("test-snapshot");
}
