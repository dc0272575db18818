/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mountinfo parsing: escapes, long lines, optional fields, empty sources, malformed lines, and
 * the real samples captured on other hosts (tests/data/mountinfo). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmount.h>
#include <stdio.h>

#include "snapshot/mountinfo.h"
#include "test.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/path.h"
#include "util/string-util.h"

static struct mount_table *parse_ok(const char *text)
{
	struct mount_table *t = NULL;
	struct parse_error err;
	int r = mount_table_parse(text, strlen(text), &t, &err);

	CHECK_MSG(r == 0, "parse failed (%d) at line %u: %s\n%s", r, err.line, err.message, text);
	return t;
}

static void parse_fails_at(const char *text, unsigned line)
{
	struct mount_table *t = NULL;
	struct parse_error err;
	int r = mount_table_parse(text, strlen(text), &t, &err);

	CHECK_MSG(r == -EINVAL, "expected -EINVAL, got %d for:\n%s", r, text);
	CHECK_MSG(err.line == line, "error at line %u (%s), expected line %u", err.line,
		  err.message, line);
	CHECK_MSG(err.message[0] != 0, "error without a message");
	mount_table_free(t);
}

/* Write text into a pipe in pieces of awkward sizes, so that lines are cut at every kind of
 * place (within a field, at a newline, a line longer than the reader's buffer), and return the
 * pipe's read end. */
static int pipe_in_pieces(const char *text, size_t size)
{
	static const size_t pieces[] = { 1, 7, 64, 100, 4095, 65537, 13, 65535, 2 };
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(fds[0]);
		for (size_t off = 0, k = 0; off < size; k++) {
			size_t n = pieces[k % ELEMENTSOF(pieces)];

			if (n > size - off)
				n = size - off;
			if (write(fds[1], text + off, n) != (ssize_t)n)
				_exit(1);
			off += n;
		}
		_exit(0);
	}
	close(fds[1]);
	return fds[0];
}

static int read_in_pieces(const char *text, size_t size, size_t max_size, struct mount_table **ret,
			  struct parse_error *err)
{
	int fd = pipe_in_pieces(text, size), r, status;

	if (fd < 0)
		return fd;
	r = mount_table_read_fd(fd, max_size, ret, err);
	close(fd);
	(void)wait(&status);
	return r;
}

/* The table read from a descriptor in pieces is the one parsed from the whole text. */
static void compare_read_fd(const char *what, const char *text, size_t size,
			    const struct mount_table *t)
{
	_cleanup_(mount_table_freep) struct mount_table *o = NULL;
	struct parse_error err;

	if (!t)
		return;
	CHECK_MSG(read_in_pieces(text, size, size, &o, &err) == 0, "%s: read: line %u: %s", what,
		  err.line, err.message);
	if (!o)
		return;
	CHECK_MSG(o->n_entries == t->n_entries, "%s: read: %zu entries, not %zu", what,
		  o->n_entries, t->n_entries);
	for (size_t i = 0; i < o->n_entries && i < t->n_entries; i++)
		CHECK_MSG(mount_entry_equal(&t->entries[i], &o->entries[i]),
			  "%s[%zu]: the table read in pieces differs", what, i);
}

/*
 * libmount is the reference parser: every table both accept must give the same entries, field
 * for field. (The product parses mountinfo itself for speed; see src/mountinfo.c.)
 */
static void compare_with_libmount(const char *what, const char *text, size_t size)
{
	struct libmnt_table *tb = mnt_new_table();
	struct libmnt_iter *itr = mnt_new_iter(MNT_ITER_FORWARD);
	FILE *f = fmemopen((void *)text, size, "r");
	struct mount_table *t = NULL;
	struct parse_error err;
	struct libmnt_fs *fs;
	size_t i = 0;

	CHECK_MSG(mount_table_parse(text, size, &t, &err) == 0, "%s: line %u: %s", what, err.line,
		  err.message);
	compare_read_fd(what, text, size, t);
	CHECK_MSG(mnt_table_parse_stream(tb, f, what) == 0, "%s: libmount cannot parse it", what);
	while (t && mnt_table_next_fs(tb, itr, &fs) == 0) {
		const struct mount_entry *e = &t->entries[i];

		if (i++ >= t->n_entries)
			break;
		CHECK_MSG((int)e->id == mnt_fs_get_id(fs), "%s[%zu]: id %u vs %d", what, i, e->id,
			  mnt_fs_get_id(fs));
		CHECK_MSG((int)e->parent_id == mnt_fs_get_parent_id(fs), "%s[%zu]: parent", what,
			  i);
		CHECK_MSG(e->dev == mnt_fs_get_devno(fs), "%s[%zu]: devno", what, i);
		CHECK_MSG(streq(e->root, mnt_fs_get_root(fs)), "%s[%zu]: root %s vs %s", what, i,
			  e->root, mnt_fs_get_root(fs));
		CHECK_MSG(streq(e->mountpoint, mnt_fs_get_target(fs)), "%s[%zu]: target %s vs %s",
			  what, i, e->mountpoint, mnt_fs_get_target(fs));
		CHECK_MSG(streq(e->fstype, mnt_fs_get_fstype(fs)), "%s[%zu]: fstype", what, i);
		CHECK_MSG(streq(e->source, mnt_fs_get_source(fs) ?: ""),
			  "%s[%zu]: source '%s' vs '%s'", what, i, e->source,
			  mnt_fs_get_source(fs));
		CHECK_MSG(streq(e->mount_options, mnt_fs_get_vfs_options(fs) ?: ""),
			  "%s[%zu]: vfs options '%s' vs '%s'", what, i, e->mount_options,
			  mnt_fs_get_vfs_options(fs));
		CHECK_MSG(streq(e->super_options, mnt_fs_get_fs_options(fs) ?: ""),
			  "%s[%zu]: fs options '%s' vs '%s'", what, i, e->super_options,
			  mnt_fs_get_fs_options(fs));
	}
	CHECK_MSG(t && i == t->n_entries, "%s: libmount read %zu entries, we read %zu", what, i,
		  t ? t->n_entries : 0);
	mount_table_free(t);
	fclose(f);
	mnt_free_iter(itr);
	mnt_unref_table(tb);
}

static void test_against_libmount(void)
{
	_cleanup_free_ char *live = NULL, *big = NULL;
	size_t size, n = 50000;
	char *p;

	if (read_full_file("/proc/self/mountinfo", 64 << 20, &live, &size) == 0)
		compare_with_libmount("/proc/self/mountinfo", live, size);
	compare_with_libmount("escapes",
			      "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
			      "40 27 0:40 / /mnt/with\\040space\\011tab\\134bs rw shared:7 "
			      "master:3 - tmpfs my\\040src rw,size=4k\n"
			      "41 27 0:41 /sub\\040dir /srv/bind rw - ext4 /dev/vda1 rw\n"
			      "42 27 0:42 / /srv/empty-src rw - tmpfs  rw\n",
			      strlen("22 27 0:21 / /proc rw,relatime - proc proc rw\n"
				     "40 27 0:40 / /mnt/with\\040space\\011tab\\134bs rw shared:7 "
				     "master:3 - tmpfs my\\040src rw,size=4k\n"
				     "41 27 0:41 /sub\\040dir /srv/bind rw - ext4 /dev/vda1 rw\n"
				     "42 27 0:42 / /srv/empty-src rw - tmpfs  rw\n"));
	big = malloc(n * 128);
	p = big;
	for (size_t i = 1; i <= n; i++)
		p += sprintf(p,
			     "%zu %zu 0:%zu / /srv/m\\040%zu rw,nosuid,relatime shared:%zu - %s %s "
			     "rw,gid=5,mode=620\n",
			     i + 100, i == 1 ? 1 : i + 99, i + 50, i, i, i % 3 ? "tmpfs" : "devpts",
			     i % 7 ? "src" : "");
	compare_with_libmount("generated 50,000 lines", big, (size_t)(p - big));
}

static void test_basic_and_escapes(void)
{
	struct mount_table *t =
	    parse_ok("22 27 0:21 / /proc rw,relatime - proc proc rw\n"
		     "40 27 0:40 / /mnt/with\\040space\\011tab\\012nl\\134bs rw shared:7 master:3 "
		     "propagate_from:2 unbindable - tmpfs my\\040src rw,size=4k\n"
		     "41 27 0:41 /sub\\040dir /srv/bind rw - ext4 /dev/vda1 rw\n");

	if (!t)
		return;
	EXPECT_INT(t->n_entries, 3);
	EXPECT_INT(t->entries[0].id, 22);
	EXPECT_INT(t->entries[0].parent_id, 27);
	EXPECT_INT(major(t->entries[0].dev), 0);
	EXPECT_INT(minor(t->entries[0].dev), 21);
	EXPECT_STR(t->entries[0].fstype, "proc");
	EXPECT_STR(t->entries[1].mountpoint, "/mnt/with space\ttab\nnl\\bs");
	EXPECT_STR(t->entries[1].source, "my src");
	EXPECT_STR(t->entries[1].super_options, "rw,size=4k");
	EXPECT_STR(t->entries[1].mount_options, "rw");
	EXPECT_STR(t->entries[2].root, "/sub dir");
	mount_table_free(t);
}

static void test_empty_source(void)
{
	/* The kernel prints an empty source as nothing between two spaces. */
	struct mount_table *t = parse_ok("19 17 0:16 / /dev/shm rw,relatime - tmpfs  rw\n");

	if (!t)
		return;
	EXPECT_INT(t->n_entries, 1);
	EXPECT_STR(t->entries[0].fstype, "tmpfs");
	EXPECT_STR(t->entries[0].super_options, "rw");
	mount_table_free(t);
}

static void test_long_lines(void)
{
	size_t mp_len = 4000, opt_len = 200000;
	char *text = malloc(mp_len + opt_len + 256), *p = text;
	struct mount_table *t;

	p += sprintf(p, "1 0 0:1 / /");
	memset(p, 'm', mp_len);
	p += mp_len;
	p += sprintf(p, " rw - tmpfs tmpfs rw,");
	for (size_t i = 0; i + 8 < opt_len; i += 8)
		p += sprintf(p, "opt%04zu,", (i / 8) % 10000);
	p += sprintf(p, "size=1k\n");
	t = parse_ok(text);
	compare_read_fd("a 200 KB line", text, strlen(text), t);
	if (t) {
		EXPECT_INT(t->n_entries, 1);
		EXPECT_INT(strlen(t->entries[0].mountpoint), mp_len + 1);
		EXPECT(strlen(t->entries[0].super_options) > opt_len - 16);
		EXPECT(option_get(t->entries[0].super_options, "size", NULL));
	}
	mount_table_free(t);
	free(text);
}

static void test_malformed(void)
{
	const char *ok = "22 27 0:21 / /proc rw,relatime - proc proc rw\n";
	char buf[1024];

	parse_fails_at("garbage\n", 1);
	snprintf(buf, sizeof(buf), "%s%sthis is not mountinfo\n", ok, ok);
	parse_fails_at(buf, 3);
	/* no " - " separator */
	snprintf(buf, sizeof(buf), "%s23 27 0:22 / /sys rw sysfs sysfs rw\n", ok);
	parse_fails_at(buf, 2);
	/* truncated after the separator */
	snprintf(buf, sizeof(buf), "%s23 27 0:22 / /sys rw - sysfs\n", ok);
	parse_fails_at(buf, 2);
	/* too few fields before the separator */
	snprintf(buf, sizeof(buf), "%s%s23 27 0:22 /sys - sysfs sysfs rw\n", ok, ok);
	parse_fails_at(buf, 3);
	/* dashes that are not the separator: at the start of a line, a field's end or start */
	parse_fails_at("- 22 27 0:21 / /proc rw proc proc rw\n", 1);
	parse_fails_at("22 27 0:21 / /proc- rw -proc proc rw\n", 1);
	parse_fails_at("22 27 0:21 / /proc rw -\n", 1);
	/* bad device number */
	parse_fails_at("22 27 0-21 / /proc rw - proc proc rw\n", 1);
	/* a NUL byte inside a line */
	{
		static const char nul[] = "22 27 0:21 / /proc rw - proc proc rw\n23 27 0:2\0 / /x "
					  "rw - proc proc rw\n";
		struct mount_table *t = NULL;
		struct parse_error err;

		EXPECT_INT(mount_table_parse(nul, sizeof(nul) - 1, &t, &err), -EINVAL);
		EXPECT_INT(err.line, 2);
	}
}

/* The separator is the first " - ", however many dashes come before it. */
static void test_dashes(void)
{
	struct mount_table *t =
	    parse_ok("36 35 98:0 /a-b /mnt-2--x rw,noatime master:1 - ext3 /dev/root-1 rw,x-y\n"
		     "37 36 0:5 / /x\\040-\\040y rw - tmpfs - rw\n"
		     "38 36 0:6 / /- rw - t-fs - -\n");

	if (t) {
		EXPECT_INT(t->n_entries, 3);
		EXPECT_STR(t->entries[0].root, "/a-b");
		EXPECT_STR(t->entries[0].mountpoint, "/mnt-2--x");
		EXPECT_INT(t->entries[0].master, 1);
		EXPECT_STR(t->entries[0].fstype, "ext3");
		EXPECT_STR(t->entries[0].source, "/dev/root-1");
		EXPECT_STR(t->entries[0].super_options, "rw,x-y");
		EXPECT_STR(t->entries[1].mountpoint, "/x - y");
		EXPECT_STR(t->entries[1].source, "-");
		EXPECT_STR(t->entries[2].mountpoint, "/-");
		EXPECT_STR(t->entries[2].fstype, "t-fs");
		EXPECT_STR(t->entries[2].source, "-");
		EXPECT_STR(t->entries[2].super_options, "-");
	}
	mount_table_free(t);
}

static void test_empty_and_options(void)
{
	struct mount_table *t = NULL;
	struct parse_error err;
	char *v = NULL;

	EXPECT_INT(mount_table_parse("", 0, &t, &err), 0);
	EXPECT(t && t->n_entries == 0);
	mount_table_free(t);

	EXPECT(option_get("rw,gid=5,mode=620,ptmxmode=000", "gid", &v));
	EXPECT_STR(v, "5");
	free(v);
	EXPECT(option_get("rw,gid=5,mode=620,ptmxmode=000", "mode", &v));
	EXPECT_STR(v, "620");
	free(v);
	EXPECT(!option_get("rw,gid=5,mode=620,ptmxmode=000", "uid", &v));
	EXPECT(v == NULL);
	EXPECT(!option_get("rw,gidx=5", "gid", NULL));
	EXPECT(option_get("rw,newinstance", "newinstance", &v));
	EXPECT(v == NULL);
}

/* What only a reader of a descriptor meets: its limit, a NUL in a later piece, a read that
 * fails, no newline at the end; and the strings neighbours share. */
static void test_read_fd(void)
{
	static const char two[] = "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
				  "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw";
	static const char nul[] = "22 27 0:21 / /proc rw - proc proc rw\n23 27 0:2\0 / /x "
				  "rw - proc proc rw\n";
	struct mount_table *t = NULL;
	struct parse_error err;
	int fd;

	EXPECT_INT(read_in_pieces(two, sizeof(two) - 1, sizeof(two) - 1, &t, &err), 0);
	EXPECT(t && t->n_entries == 2 && streq(t->entries[1].super_options, "rw"));
	/* Equal neighbours' strings are kept once. */
	EXPECT(t && t->entries[0].mount_options == t->entries[1].mount_options);
	EXPECT(t && t->entries[0].root == t->entries[1].root);
	t = mount_table_free(t);

	EXPECT_INT(read_in_pieces(two, sizeof(two) - 1, sizeof(two) - 2, &t, &err), -EFBIG);
	EXPECT(t == NULL);
	EXPECT_INT(read_in_pieces(two, 0, 16, &t, &err), 0);
	EXPECT(t && t->n_entries == 0);
	t = mount_table_free(t);

	EXPECT_INT(read_in_pieces(nul, sizeof(nul) - 1, 1 << 20, &t, &err), -EINVAL);
	EXPECT_INT(err.line, 2);
	EXPECT(t == NULL);

	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	EXPECT_INT(mount_table_read_fd(fd, 1 << 20, &t, &err), -EISDIR);
	EXPECT_INT(err.line, 0);
	EXPECT(t == NULL);
	close(fd);
}

static void test_sample(const char *dir, const char *name, size_t lines)
{
	_cleanup_free_ char *path = path_join(dir, name), *text = NULL;
	struct mount_table *t = NULL;
	struct parse_error err;
	size_t size;
	int r;

	r = read_full_file(path, 1 << 20, &text, &size);
	CHECK_MSG(r == 0, "cannot read %s: %s", path, strerror(-r));
	if (r < 0)
		return;
	compare_with_libmount(path, text, size);
	r = mount_table_parse(text, size, &t, &err);
	CHECK_MSG(r == 0, "%s line %u: %s", path, err.line, err.message);
	if (r < 0)
		return;
	EXPECT_INT(t->n_entries, lines);
	/* Both samples have the system devpts as mount 18 with the classic options. */
	for (size_t i = 0; i < t->n_entries; i++)
		if (t->entries[i].id == 18) {
			EXPECT_STR(t->entries[i].fstype, "devpts");
			EXPECT_STR(t->entries[i].mountpoint, "/dev/pts");
			EXPECT_STR(t->entries[i].super_options, "rw,gid=5,mode=620,ptmxmode=000");
		}
	mount_table_free(t);
}

int main(int argc, char **argv)
{
	test_basic_and_escapes();
	test_empty_source();
	test_long_lines();
	test_malformed();
	test_dashes();
	test_empty_and_options();
	test_read_fd();
	if (argc < 2) {
		fprintf(stderr, "usage: test-mountinfo SAMPLE-DIR\n");
		return 1;
	}
	test_against_libmount();
	test_sample(argv[1], "fedora-2.6-util-linux.mountinfo", 33);
	test_sample(argv[1], "nosrc-util-linux.mountinfo", 7);
	return test_result("test-mountinfo");
}
