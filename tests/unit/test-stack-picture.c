/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The picture of a stack (report/stack-picture.h) from hand-built snapshots and findings: the
 * exact lines for a CentOS 6 stack with its holders, a stack hidden under a new /dev below the
 * reachable one, the host's instance in a namespace audit; which findings draw and which do
 * not, each place once per block, long stacks cut short, and nothing but printable ASCII and
 * newlines whatever the mountpoints and process names hold (colour adds only the bold marker).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "analysis/analysis.h"
#include "report/stack-picture.h"
#include "snapshot/snapshot.h"
#include "test.h"

struct fixture {
	struct snapshot *s;
	struct analysis *a;
};

static void fixture_done(struct fixture *fx)
{
	analysis_free(fx->a);
	snapshot_free(fx->s);
}

static int fixture_init(struct fixture *fx, const char *mountinfo)
{
	struct parse_error err = { 0 };

	*fx = (struct fixture){ .s = snapshot_new() };
	if (!fx->s)
		return -1;
	fx->s->kernel_release = strdup("6.1.0");
	/* It takes the text over. */
	if (snapshot_set_mountinfo(fx->s, strdup(mountinfo), strlen(mountinfo), &err) < 0)
		return -1;
	return 0;
}

/* A char node at /dev/ptmx: it allocates on the devpts reachable at /dev/pts. */
static int fixture_analyse(struct fixture *fx)
{
	struct node *n = snapshot_add_node(fx->s, PTMX_PATH);

	if (!n)
		return -1;
	n->type = NODE_CHAR;
	n->mode = 0666;
	n->rdev = makedev(PTMX_RDEV_MAJOR, PTMX_RDEV_MINOR);
	n->dev = makedev(0, 5);
	return analysis_new(fx->s, &fx->a);
}

static void hold(struct fixture *fx, pid_t pid, const char *comm, unsigned minor, unsigned index)
{
	struct holder h = {
		.pid = pid, .comm = (char *)comm, .dev = makedev(0, minor), .index = index
	};

	EXPECT_INT(snapshot_add_holder(fx->s, &h), 0);
	fx->s->holders_scanned = true;
}

/* What stack_picture_write() prints for a finding naming these mounts (id and device minor,
 * pairs ended by 0), through drawn; *ret its return value. Malloc'ed. */
static char *picture(struct fixture *fx, const char *mountpoint, struct stack_pictures *drawn,
		     bool color, int *ret, const unsigned *mounts)
{
	struct finding fi = { .mountpoint = (char *)mountpoint };
	unsigned ids[16];
	dev_t devs[16];
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	for (; mounts[0]; mounts += 2) {
		bool have = false;

		ids[fi.n_mount_ids++] = mounts[0];
		for (size_t i = 0; i < fi.n_devices; i++)
			have = have || devs[i] == makedev(0, mounts[1]);
		if (!have)
			devs[fi.n_devices++] = makedev(0, mounts[1]);
	}
	fi.mount_ids = ids;
	fi.devices = devs;
	f = open_memstream(&buf, &size);
	if (!f)
		abort();
	*ret = stack_picture_write(f, fx->a, &fi, drawn, color);
	fclose(f);
	return buf;
}

/* Only printable ASCII and newlines; with color, the marker's two sequences besides. */
static bool plain(const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if (*p != '\n' && (*p < 0x20 || *p >= 0x7f))
			return false;
	return true;
}

#define BASE                                                                                       \
	"1 0 254:1 / / rw - ext4 /dev/vda1 rw\n"                                                   \
	"24 1 0:5 / /dev rw shared:2 - devtmpfs udev rw,mode=755\n"

static void test_centos6(void)
{
	struct fixture fx;
	struct stack_pictures drawn = { 0 };
	_cleanup_free_ char *orphan = NULL, *overmount = NULL, *serving = NULL;
	int r;

	EXPECT_INT(fixture_init(&fx, BASE "29 24 0:26 / /dev/pts rw - devpts devpts "
					  "rw,gid=5,mode=620,ptmxmode=000\n"
					  "41 29 0:41 / /dev/pts rw - devpts devpts "
					  "rw,mode=600,ptmxmode=000\n"),
		   0);
	/* A holder that named itself with terminal controls, and five more than are shown. */
	hold(&fx, 812, "sshd", 26, 0);
	hold(&fx, 901, "\033]0;pwn\007", 26, 3);
	for (unsigned k = 0; k < 5; k++)
		hold(&fx, 1000 + (pid_t)k, "bash", 26, 4 + k);
	hold(&fx, 77, "elsewhere", 99, 1);
	EXPECT_INT(fixture_analyse(&fx), 0);

	/* The orphan finding names the covered instance: the whole stack is drawn. */
	orphan = picture(&fx, "/dev/pts", &drawn, false, &r, (const unsigned[]){ 29, 26, 0 });
	EXPECT_INT(r, 1);
	EXPECT_STR(orphan,
		   "    stack at /dev/pts, bottom to top:\n"
		   "      1 mount 29 devpts 0:26 rw,gid=5,mode=620,ptmxmode=000 [covered]\n"
		   "          held by pid 812 (sshd) pts/0, pid 901 (\\x1b]0;pwn\\x07) pts/3, "
		   "pid 1000 (bash) pts/4, pid 1001 (bash) pts/5, and 3 more\n"
		   "      2 mount 41 devpts 0:41 rw,mode=600,ptmxmode=000 [reachable] <- "
		   "/dev/ptmx\n");
	EXPECT(plain(orphan));
	/* The overmount finding is about the same place: drawn once per block. */
	overmount =
	    picture(&fx, "/dev/pts", &drawn, false, &r, (const unsigned[]){ 29, 26, 41, 41, 0 });
	EXPECT_INT(r, 0);
	EXPECT_STR(overmount, "");
	/* A finding about the serving instance alone (options lost) draws nothing, even in a
	 * fresh block. */
	drawn = (struct stack_pictures){ 0 };
	serving = picture(&fx, "/dev/pts", &drawn, false, &r, (const unsigned[]){ 41, 41, 0 });
	EXPECT_INT(r, 0);
	EXPECT_STR(serving, "");
	fixture_done(&fx);
}

/* The old /dev/pts stack under a container's new /dev, the new /dev/pts reachable above it; an
 * evil mountpoint elsewhere; colour. */
static void test_hidden(void)
{
	struct fixture fx;
	struct stack_pictures drawn = { 0 };
	_cleanup_free_ char *text = NULL, *colored = NULL, *evil = NULL;
	int r;

	EXPECT_INT(fixture_init(&fx, BASE
				"29 24 0:26 / /dev/pts rw - devpts devpts "
				"rw,gid=5,mode=620,ptmxmode=000\n"
				"30 29 0:27 / /dev/pts rw - devpts devpts "
				"rw,gid=5,mode=620,ptmxmode=000\n"
				"50 24 0:50 / /dev rw - tmpfs tmpfs rw,mode=755\n"
				"51 50 0:51 / /dev/pts rw - devpts devpts "
				"rw,gid=5,mode=620,ptmxmode=666\n"
				"60 1 0:60 / /srv/a\\012b\\033c rw - devpts devpts rw,mode=600\n"
				"61 60 0:61 / /srv/a\\012b\\033c rw - devpts devpts rw,mode=600\n"),
		   0);
	fx.s->holders_scanned = true; /* searched, nothing found */
	EXPECT_INT(fixture_analyse(&fx), 0);

	text = picture(&fx, "/dev/pts", &drawn, false, &r, (const unsigned[]){ 29, 26, 30, 27, 0 });
	EXPECT_INT(r, 1);
	EXPECT_STR(text, "    stack at /dev/pts, bottom to top:\n"
			 "      1 mount 29 devpts 0:26 rw,gid=5,mode=620,ptmxmode=000 [covered]\n"
			 "          no pty held on it\n"
			 "      2 mount 30 devpts 0:27 rw,gid=5,mode=620,ptmxmode=000 [hidden]\n"
			 "          no pty held on it\n"
			 "        hidden by mount 50, tmpfs on /dev\n"
			 "      3 mount 51 devpts 0:51 rw,gid=5,mode=620,ptmxmode=666 [reachable] "
			 "<- /dev/ptmx\n");

	/* The mountpoint's newline and ESC come out as \x0a and \x1b. */
	evil = picture(&fx, NULL, &drawn, false, &r, (const unsigned[]){ 60, 60, 61, 61, 0 });
	EXPECT_INT(r, 1);
	EXPECT(plain(evil));
	EXPECT(evil && strstr(evil, "stack at /srv/a\\x0ab\\x1bc, bottom to top:\n"));
	fixture_done(&fx);

	/* Colour: the same lines, the marker in bold. */
	EXPECT_INT(fixture_init(&fx, BASE "29 24 0:26 / /dev/pts rw - devpts devpts rw,gid=5\n"
					  "41 29 0:41 / /dev/pts rw - devpts devpts rw,gid=5\n"),
		   0);
	EXPECT_INT(fixture_analyse(&fx), 0);
	drawn = (struct stack_pictures){ 0 };
	colored =
	    picture(&fx, "/dev/pts", &drawn, true, &r, (const unsigned[]){ 29, 26, 41, 41, 0 });
	EXPECT_INT(r, 1);
	EXPECT(colored && strstr(colored, "[reachable] \033[1m<- /dev/ptmx\033[0m\n"));
	fixture_done(&fx);
}

/* 20 devpts stacked: 12 layers drawn, the rest counted. */
static void test_long_stack(void)
{
	struct fixture fx;
	struct stack_pictures drawn = { 0 };
	_cleanup_free_ char *text = NULL, *table = NULL;
	size_t len = 0, lines = 0;
	FILE *f = open_memstream(&table, &len);
	int r;

	if (!f)
		abort();
	fputs(BASE, f);
	for (unsigned k = 0; k < 20; k++)
		fprintf(f, "%u %u 0:%u / /dev/pts rw - devpts devpts rw,mode=600\n", 100 + k,
			k ? 99 + k : 24, 100 + k);
	fclose(f);
	EXPECT_INT(fixture_init(&fx, table), 0);
	EXPECT_INT(fixture_analyse(&fx), 0);
	text = picture(&fx, "/dev/pts", &drawn, false, &r, (const unsigned[]){ 100, 100, 0 });
	EXPECT_INT(r, 1);
	for (const char *p = text; p && *p; p++)
		lines += *p == '\n';
	EXPECT_INT(lines, 14);
	EXPECT(text && strstr(text, "      12 mount 111 devpts 0:111 rw,mode=600 [covered]\n"
				    "      (8 more layers not drawn)\n"));
	fixture_done(&fx);
}

/* A namespace audit served by the host's instance, bound alone at its /dev/pts. */
static void test_host_instance(void)
{
	struct fixture fx;
	struct stack_pictures drawn = { 0 };
	_cleanup_free_ char *text = NULL;
	int r;

	EXPECT_INT(fixture_init(&fx, BASE "603 24 0:26 / /dev/pts rw - devpts devpts "
					  "rw,gid=5,mode=620,ptmxmode=000\n"),
		   0);
	fx.s->ns = calloc(1, sizeof(*fx.s->ns));
	if (!fx.s->ns)
		abort();
	fx.s->ns->mntns = 4026532451u;
	fx.s->ns->pid = 81234;
	fx.s->ns->host.known = true;
	fx.s->ns->host.mntns = 4026531841u;
	fx.s->ns->host.dev = makedev(0, 26);
	fx.s->ns->host.mount_id = 25;
	EXPECT_INT(fixture_analyse(&fx), 0);
	text = picture(&fx, "/dev/pts", &drawn, false, &r, (const unsigned[]){ 603, 26, 0 });
	EXPECT_INT(r, 1);
	EXPECT_STR(text, "    stack at /dev/pts, bottom to top:\n"
			 "      1 mount 603 devpts 0:26 rw,gid=5,mode=620,ptmxmode=000 [reachable] "
			 "(the host's instance) <- /dev/ptmx\n");
	fixture_done(&fx);
}

int main(void)
{
	test_centos6();
	test_hidden();
	test_long_stack();
	test_host_instance();
	return test_result("test-stack-picture");
}
