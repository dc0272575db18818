/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The helpers of src/util: the hash index, string lists, the path prefix test, the group and
 * user lookups, the directory reader, set_printf(), the reading of kernel files, and modes and
 * device numbers as text (the digits printf would write, without printf). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/group.h"
#include "util/hashindex.h"
#include "util/json-util.h"
#include "util/parse.h"
#include "util/path.h"
#include "util/string-table.h"
#include "util/string-util.h"
#include "util/strv.h"

/* Every position added under hash, in the order the index walks them. */
static size_t walk(const struct hash_index *x, uint64_t hash, size_t *out, size_t max)
{
	struct hash_cursor c = { 0 };
	size_t n = 0, v;

	while ((v = hash_index_next(x, hash, &c)) != HASH_INDEX_NONE)
		if (n < max)
			out[n++] = v;
	return n;
}

static void test_hash_index_basic(void)
{
	struct hash_index x = { 0 };
	size_t got[4];

	/* An index nothing was added to answers every lookup. */
	EXPECT_INT(walk(&x, hash_u64(1), got, 4), 0);

	EXPECT_INT(hash_index_add(&x, hash_u64(10), 0), 0);
	EXPECT_INT(hash_index_add(&x, hash_u64(20), 1), 0);
	EXPECT_INT(hash_index_add(&x, hash_path("/dev/pts", 8, 0), 2), 0);
	EXPECT_INT(x.n, 3);

	EXPECT_INT(walk(&x, hash_u64(10), got, 4), 1);
	EXPECT_INT(got[0], 0);
	EXPECT_INT(walk(&x, hash_u64(20), got, 4), 1);
	EXPECT_INT(got[0], 1);
	EXPECT_INT(walk(&x, hash_path("/dev/pts", 8, 0), got, 4), 1);
	EXPECT_INT(got[0], 2);

	/* Missing keys: another number, another path, the same path with another seed. */
	EXPECT_INT(walk(&x, hash_u64(30), got, 4), 0);
	EXPECT_INT(walk(&x, hash_path("/dev/ptmx", 9, 0), got, 4), 0);
	EXPECT_INT(walk(&x, hash_path("/dev/pts", 8, 7), got, 4), 0);
	/* A prefix of a path is another key. */
	EXPECT(hash_path("/dev/pts", 4, 0) != hash_path("/dev/pts", 8, 0));
	EXPECT(hash_path("/dev/pts", 4, 0) == hash_path("/dev", 4, 0));

	hash_index_done(&x);
	EXPECT(x.slots == NULL);
	EXPECT_INT(x.n, 0);
	EXPECT_INT(walk(&x, hash_u64(10), got, 4), 0);
}

static void test_hash_index_collisions(void)
{
	struct hash_index x = { 0 };
	struct hash_cursor c = { 0 };
	size_t got[8];

	/* Five positions under one hash (keys that collide), with others in between: all are
	 * walked, the oldest first, and nothing else. */
	for (size_t i = 0; i < 10; i++)
		EXPECT_INT(hash_index_add(&x, i % 2 ? hash_u64(i) : 42, i), 0);
	EXPECT_INT(walk(&x, 42, got, 8), 5);
	for (size_t k = 0; k < 5; k++)
		EXPECT_INT(got[k], 2 * k);

	/* Replacing one of them in place. */
	EXPECT_INT(hash_index_next(&x, 42, &c), 0);
	EXPECT_INT(hash_index_next(&x, 42, &c), 2);
	hash_index_set(&x, &c, 7);
	EXPECT_INT(walk(&x, 42, got, 8), 5);
	EXPECT_INT(got[0], 0);
	EXPECT_INT(got[1], 7);
	EXPECT_INT(got[2], 4);

	/* Hashes equal in the 32 bits a slot keeps still only differ by their keys: the caller
	 * compares. Both positions are offered for either hash. */
	hash_index_done(&x);
	EXPECT_INT(hash_index_add(&x, 0x0000000100000000ULL, 0), 0);
	EXPECT_INT(hash_index_add(&x, 0x0000000000000001ULL, 1), 0);
	EXPECT_INT(walk(&x, 0x0000000100000000ULL, got, 8), 2);
	hash_index_done(&x);

	/* Positions the slots cannot hold. */
	EXPECT_INT(hash_index_add(&x, 1, (size_t)UINT32_MAX), -E2BIG);
	EXPECT_INT(x.n, 0);
	hash_index_done(&x);
}

static void test_hash_index_growth(void)
{
	struct hash_index x = { 0 };
	const size_t n = 50000;
	size_t got[4], cap_small;
	bool ok = true;

	EXPECT_INT(hash_index_add(&x, hash_u64(0), 0), 0);
	cap_small = x.mask + 1;
	for (size_t i = 1; i < n; i++)
		if (hash_index_add(&x, hash_u64(i), i) < 0)
			ok = false;
	EXPECT(ok);
	EXPECT_INT(x.n, n);
	EXPECT(x.mask + 1 > cap_small);
	EXPECT(x.mask + 1 >= 2 * n); /* at most half full */
	for (size_t i = 0; i < n; i++)
		if (walk(&x, hash_u64(i), got, 4) != 1 || got[0] != i) {
			CHECK_MSG(false, "position %zu lost when the index grew", i);
			break;
		}
	EXPECT_INT(walk(&x, hash_u64(n), got, 4), 0);
	hash_index_done(&x);

	/* Growth keeps the order of the positions of one hash. */
	for (size_t i = 0; i < 1000; i++)
		EXPECT_INT(hash_index_add(&x, i % 3 ? hash_u64(i) : 0xfffffffeULL, i), 0);
	{
		size_t all[400], m = 0, v;
		struct hash_cursor c = { 0 };
		bool ordered = true;

		while ((v = hash_index_next(&x, 0xfffffffeULL, &c)) != HASH_INDEX_NONE && m < 400)
			all[m++] = v;
		EXPECT_INT(m, 334);
		for (size_t k = 0; k < m; k++)
			ordered = ordered && all[k] == 3 * k;
		EXPECT(ordered);
	}
	hash_index_done(&x);

	/* Reserving first: no growth while adding. */
	EXPECT_INT(hash_index_reserve(&x, 1000), 0);
	cap_small = x.mask + 1;
	for (size_t i = 0; i < 1000; i++)
		EXPECT_INT(hash_index_add(&x, hash_u64(i), i), 0);
	EXPECT_INT(x.mask + 1, cap_small);
	hash_index_done(&x);
}

static void test_strv(void)
{
	_cleanup_strv_free_ char **l = NULL;
	char **empty = NULL;

	EXPECT_INT(strv_length(empty), 0);
	EXPECT(!strv_contains(empty, "a"));
	EXPECT(strv_free(empty) == NULL);

	EXPECT_INT(strv_extend(&l, "devpts-covered"), 0);
	EXPECT_INT(strv_push(&l, strdup("/dev/pts")), 0);
	EXPECT_INT(strv_extend(&l, ""), 0);
	EXPECT_INT(strv_length(l), 3);
	EXPECT_STR(l[0], "devpts-covered");
	EXPECT_STR(l[1], "/dev/pts");
	EXPECT_STR(l[2], "");
	EXPECT(l[3] == NULL);
	EXPECT(strv_contains(l, "/dev/pts"));
	EXPECT(strv_contains(l, ""));
	EXPECT(!strv_contains(l, "/dev"));
	EXPECT(!strv_contains(l, NULL));

	/* strv_push() of a failed allocation reports it and leaves the list as it was. */
	EXPECT_INT(strv_push(&l, NULL), -ENOMEM);
	EXPECT_INT(strv_length(l), 3);
}

static void test_path_startswith(void)
{
	EXPECT_STR(path_startswith("/dev/pts", "/dev/pts"), "");
	EXPECT_STR(path_startswith("/dev/pts/0", "/dev/pts"), "/0");
	EXPECT_STR(path_startswith("/dev/pts", "/dev"), "/pts");
	EXPECT(path_startswith("/dev/ptsx", "/dev/pts") == NULL);
	EXPECT(path_startswith("/dev", "/dev/pts") == NULL);
	EXPECT(path_startswith("/devices", "/dev") == NULL);
	EXPECT(path_startswith("/run", "/dev") == NULL);
	/* Everything is below the root, and the rest is the whole path. */
	EXPECT_STR(path_startswith("/dev/pts", "/"), "/dev/pts");
	EXPECT_STR(path_startswith("/", "/"), "/");

	EXPECT(path_at_or_below("/dev/pts/ptmx", "/dev/pts"));
	EXPECT(path_at_or_below("/dev/pts", "/dev/pts"));
	EXPECT(!path_at_or_below("/dev/pts2", "/dev/pts"));
	EXPECT(path_at_or_below("/anything", "/"));
}

static void test_group_lookup(void)
{
	struct group *gr;
	gid_t gid = 12345;

	/* The root group exists everywhere, with gid 0. */
	EXPECT_INT(group_lookup("root", &gid), 0);
	EXPECT_INT(gid, 0);

	/* A decimal gid is taken as it is, group or not. */
	EXPECT_INT(group_lookup("5", &gid), 0);
	EXPECT_INT(gid, 5);
	EXPECT_INT(group_lookup("4000000", &gid), 0);
	EXPECT_INT(gid, 4000000);

	/* No such group. */
	gid = 12345;
	EXPECT_INT(group_lookup("ptsguard-no-such-group", &gid), -ESRCH);
	EXPECT_INT(gid, 12345);

	/* tty, when the database has one, agrees with getgrnam(). */
	gr = getgrnam(TTY_GROUP_NAME);
	if (gr) {
		gid_t want = gr->gr_gid;

		EXPECT_INT(group_lookup(TTY_GROUP_NAME, &gid), 0);
		EXPECT_INT(gid, want);
	}
}

static void test_cescape(void)
{
	char *e;
	char buf[128] = { 0 };
	FILE *f;

	/* Printable ASCII unchanged; a backslash doubled; control bytes, DEL and bytes above
	 * ASCII as \xNN (so no escape sequence and no line break survives). */
	e = cescape("/dev/pts");
	EXPECT_STR(e, "/dev/pts");
	free(e);
	e = cescape("a\\b");
	EXPECT_STR(e, "a\\\\b");
	free(e);
	e = cescape("\x1b]0;pwn\x07\x1b[2J\n\x7f\xc3\xa9");
	EXPECT_STR(e, "\\x1b]0;pwn\\x07\\x1b[2J\\x0a\\x7f\\xc3\\xa9");
	free(e);
	e = cescape(NULL);
	EXPECT_STR(e, "");
	free(e);

	f = fmemopen(buf, sizeof(buf) - 1, "w");
	EXPECT(f != NULL);
	if (!f)
		return;
	EXPECT_INT(fputs_escaped("ok ", f), 0);
	EXPECT_INT(fputs_escaped("\x1b[31m\\", f), 0);
	fclose(f);
	EXPECT_STR(buf, "ok \\x1b[31m\\\\");
}

/* dir_reader lists every entry once, over several getdents64 buffers; read_kernel_fd reads a
 * /proc file whole (beyond one read's worth) without an fstat. */
static void test_dir_reader(void)
{
	char dir[] = "/tmp/ptsguard-dirreader-XXXXXX", p[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	unsigned seen = 0, dots = 0, n = 2000;
	struct dir_reader d = { 0 };
	const char *name;
	size_t size = 0;
	int fd, r;

	if (!mkdtemp(dir)) {
		EXPECT(false);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/entry-with-a-long-name-%u", dir, i);
		fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		EXPECT(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	d.fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	EXPECT(d.fd >= 0);
	while ((r = dir_reader_next(&d, &name)) > 0) {
		unsigned k;

		if (streq(name, ".") || streq(name, "..")) {
			dots++;
			continue;
		}
		EXPECT(sscanf(name, "entry-with-a-long-name-%u", &k) == 1 && k < n);
		seen++;
	}
	EXPECT_INT(r, 0);
	EXPECT_INT(seen, n);
	EXPECT_INT(dots, 2);
	dir_reader_done(&d);
	close(d.fd);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	(void)!system(p);

	/* A closed descriptor: the error, not an end. */
	d = (struct dir_reader){ .fd = -EBADF };
	EXPECT_INT(dir_reader_next(&d, &name), -EBADF);
	dir_reader_done(&d);

	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	EXPECT(fd >= 0);
	EXPECT_INT(read_kernel_fd(fd, 1 << 20, &text, &size), 0);
	EXPECT(text && size > 0 && strlen(text) == size && text[size - 1] == '\n');
	close(fd);
	free(TAKE_PTR(text));
	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	EXPECT_INT(read_kernel_fd(fd, 10, &text, &size), -EFBIG);
	close(fd);
}

enum fruit { FRUIT_APPLE, FRUIT_NONE, FRUIT_PEAR, _FRUIT_MAX };
static const char *const fruit_table[_FRUIT_MAX] = {
	[FRUIT_APPLE] = "apple", [FRUIT_PEAR] = "pear", /* FRUIT_NONE: a hole, no name */
};
static const char *fruit_to_string(enum fruit i);
static int fruit_from_string(const char *s);
DEFINE_STRING_TABLE_LOOKUP(fruit, enum fruit);

/* Both ways, a hole in the table, and values beyond it. */
static void test_string_table(void)
{
	EXPECT_STR(fruit_to_string(FRUIT_APPLE), "apple");
	EXPECT_STR(fruit_to_string(FRUIT_PEAR), "pear");
	EXPECT(fruit_to_string(FRUIT_NONE) == NULL);
	EXPECT(fruit_to_string(_FRUIT_MAX) == NULL);
	EXPECT(fruit_to_string((enum fruit) - 1) == NULL);
	EXPECT_INT(fruit_from_string("apple"), FRUIT_APPLE);
	EXPECT_INT(fruit_from_string("pear"), FRUIT_PEAR);
	EXPECT_INT(fruit_from_string("plum"), -EINVAL);
	EXPECT_INT(fruit_from_string(""), -EINVAL);
	EXPECT_INT(fruit_from_string(NULL), -EINVAL);
}

/* set_printf() with its own field among the arguments: a list grown one item at a time (ASan
 * saw the old value freed before it was read). */
static void test_set_printf_self(void)
{
	char *list = NULL;

	for (int i = 0; i < 3; i++)
		EXPECT_INT(set_printf(&list, "%s%s%d", list ?: "", list ? ", " : "", i), 0);
	EXPECT_STR(list, "0, 1, 2");
	free(list);
}

static void test_format_numbers(void)
{
	static const unsigned values[] = { 0,	1,    5,     9,	      10,	 99,	  136,
					   255, 4095, 65535, 1048575, 123456789, UINT_MAX };
	char buf[24], want[24];

	for (unsigned m = 0; m <= 07777; m++) {
		snprintf(want, sizeof(want), "%04o", m);
		EXPECT_STR(format_mode((mode_t)m, buf), want);
	}
	/* only the permission bits: a node's type is not part of its mode here */
	EXPECT_STR(format_mode(S_IFCHR | 0620, buf), "0620");
	EXPECT_STR(format_mode(S_IFDIR | 01777, buf), "1777");
	for (size_t i = 0; i < ELEMENTSOF(values); i++)
		for (size_t k = 0; k < ELEMENTSOF(values); k++) {
			snprintf(want, sizeof(want), "%u:%u", values[i], values[k]);
			EXPECT_STR(format_devnum(makedev(values[i], values[k]), buf), want);
		}
}

/* The text written to a file is json_to_text()'s, byte for byte. */
static void test_json_write(void)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	char *text, *written = NULL;
	size_t size = 0;
	FILE *f;

	json_add_new(o, "path", json_object_new_string("/dev/pts/ptmx"));
	json_add_new(o, "none", NULL);
	json_object_array_add(arr, json_object_new_int64(5));
	json_add_new(o, "list", arr);
	for (int pretty = 0; pretty <= 1; pretty++) {
		text = json_to_text(o, pretty);
		f = open_memstream(&written, &size);
		CHECK_MSG(text && f, "setup");
		EXPECT_INT(json_write(f, o, pretty), 0);
		EXPECT_INT(fclose(f), 0);
		EXPECT_STR(written, text);
		free(written);
		written = NULL;
		free(text);
	}
	/* room for none, one or many: the array grows as before */
	for (size_t n = 0; n <= 40; n += 20) {
		json_object *sized = json_new_array_sized(n / 20);

		CHECK_MSG(sized, "sized array");
		for (size_t k = 0; k < n; k++)
			json_object_array_add(sized, json_object_new_int64((int64_t)k));
		EXPECT_INT(json_object_array_length(sized), n);
		if (n == 20) {
			text = json_to_text(sized, 0);
			EXPECT_STR(text, "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]\n");
			free(text);
		}
		json_object_put(sized);
	}
	text = json_to_text(o, 1);
	EXPECT_STR(
	    text,
	    "{\n  \"path\": \"/dev/pts/ptmx\",\n  \"none\": null,\n  \"list\": [\n    5\n  ]\n}\n");
	free(text);
	json_object_put(o);
}

/* "nobody" is looked up once, until user_lookup_forget(); other users each time. Shown with a
 * passwd file of our own bound over /etc/passwd, in a mount namespace of a child's (root only:
 * the machine's file stays as it is). */
static void user_lookup_child(const char *fake)
{
	uid_t uid, real_uid;
	gid_t gid, real_gid;

	EXPECT_INT(user_lookup(PROBE_USER_DEFAULT, &real_uid, &real_gid), 0);
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(fake, "/etc/passwd", NULL, MS_BIND, NULL) < 0)
		_exit(2);
	CHECK_MSG(real_uid != 4321, "nobody is already uid 4321 here");
	/* Still the first answer: the file was not read again. */
	EXPECT_INT(user_lookup(PROBE_USER_DEFAULT, &uid, &gid), 0);
	EXPECT_INT(uid, real_uid);
	EXPECT_INT(gid, real_gid);
	/* Another user is read from the file as it is now. */
	EXPECT_INT(user_lookup("ptsguard-test-user", &uid, &gid), 0);
	EXPECT_INT(uid, 4322);
	/* Forgotten (a reload): read again. */
	user_lookup_forget();
	EXPECT_INT(user_lookup(PROBE_USER_DEFAULT, &uid, &gid), 0);
	EXPECT_INT(uid, 4321);
	EXPECT_INT(gid, 4320);
	_exit(test_failures ? 1 : 0);
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A random string for test_json_differential(): every byte value, with runs of plain text. */
static size_t random_bytes(uint64_t *seed, char *buf, size_t max)
{
	size_t n = (size_t)(xorshift(seed) % max);

	for (size_t i = 0; i < n; i++) {
		uint64_t r = xorshift(seed);

		/* the 12th of these is the literal's NUL: one inside a string too */
		buf[i] =
		    r % 4 == 0 ? (char)((r >> 8) % 256) : "a/\\\"b\n\t\x7f\xc3\xa9 "[(r >> 8) % 12];
	}
	buf[n] = 0;
	return n;
}

static json_object *random_tree(uint64_t *seed, int depth)
{
	static const int64_t ints[] = { 0, 1, -1, INT64_MIN, INT64_MAX, 4096, -77 };
	char buf[40];
	uint64_t r = xorshift(seed);
	size_t n;
	json_object *o;

	switch (depth <= 0 ? r % 6 : r % 8) {
	case 0:
		return NULL;
	case 1:
		return json_object_new_boolean(r & 0x100);
	case 2:
		return json_object_new_int64(r & 0x100 ? ints[(r >> 9) % ELEMENTSOF(ints)]
						       : (int64_t)(r >> 1) - (int64_t)(r >> 2));
	case 3:
		/* above INT64_MAX, as the kernel's 64-bit counters may be */
		return json_object_new_uint64(r & 0x100 ? (uint64_t)INT64_MAX + (r >> 9) : r >> 9);
	case 4:
		n = random_bytes(seed, buf, sizeof(buf) - 1);
		return json_object_new_string_len(buf, (int)n);
	case 5:
		/* a parsed number keeps its own text */
		return r & 0x100 ? json_object_new_double((double)(int64_t)r / 1e6)
				 : json_tokener_parse("1.50");
	case 6:
		o = json_object_new_object();
		n = xorshift(seed) % 5;
		for (size_t i = 0; i < n; i++) {
			/* keys made distinct by their first byte: two that differ only in bytes
			 * that are not UTF-8 would be one key once those are U+FFFD */
			buf[0] = (char)('0' + i);
			random_bytes(seed, buf + 1, 12);
			json_object_object_add(o, buf, random_tree(seed, depth - 1));
		}
		return o;
	default:
		o = json_object_new_array();
		n = xorshift(seed) % 5;
		for (size_t i = 0; i < n; i++)
			json_object_array_add(o, random_tree(seed, depth - 1));
		return o;
	}
}

/* A copy of o whose strings and keys are valid UTF-8: each byte that is not part of it replaced
 * by U+FFFD, as the writer does (json-c writes any byte as it is). */
static json_object *valid_copy(json_object *o)
{
	json_object *c;
	char *t;
	size_t n;

	switch (json_object_get_type(o)) {
	case json_type_string:
		t = utf8_replace_invalid(json_object_get_string(o),
					 (size_t)json_object_get_string_len(o), &n);
		c = t ? json_object_new_string_len(t, (int)n) : NULL;
		free(t);
		return c;
	case json_type_object:
		c = json_object_new_object();
		json_object_object_foreach(o, key, val)
		{
			t = utf8_replace_invalid(key, strlen(key), NULL);
			json_object_object_add(c, t ?: "", valid_copy(val));
			free(t);
		}
		return c;
	case json_type_array:
		c = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(o); i++)
			json_object_array_add(c, valid_copy(json_object_array_get_idx(o, i)));
		return c;
	default:
		return json_object_get(o);
	}
}

/* json_to_text() and json_write() against json-c's own text of the same tree, its strings made
 * valid UTF-8, over random trees of every shape and every byte in strings and keys; ours is
 * valid UTF-8 whatever the tree holds. */
static void test_json_differential(void)
{
	uint64_t seed = 0x6a736f6e;

	for (int i = 0; i < 3000 && test_failures == 0; i++) {
		json_object *o = random_tree(&seed, 1 + i % 5), *valid = valid_copy(o);

		for (int pretty = 0; pretty <= 1; pretty++) {
			int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
				    (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
					    : JSON_C_TO_STRING_PLAIN);
			size_t len, size = 0;
			const char *want = json_object_to_json_string_length(valid, flags, &len);
			char *text = json_to_text(o, pretty), *written = NULL;
			FILE *f = open_memstream(&written, &size);

			CHECK_MSG(want && text && f, "setup");
			EXPECT_INT(json_write(f, o, pretty), 0);
			EXPECT_INT(fclose(f), 0);
			CHECK_MSG(strlen(text) == len + 1 && memcmp(text, want, len) == 0 &&
				      text[len] == '\n',
				  "tree %d, pretty %d: ours\n%s\njson-c's\n%s", i, pretty, text,
				  want);
			CHECK_MSG(size == len + 1 && memcmp(written, text, size) == 0,
				  "tree %d, pretty %d: json_write() differs", i, pretty);
			CHECK_MSG(text && utf8_valid(text, strlen(text)),
				  "tree %d, pretty %d: not valid UTF-8", i, pretty);
			free(text);
			free(written);
		}
		json_object_put(valid);
		json_object_put(o);
	}
}

/* The text one emitter call writes at level (inside an object when key is given), with v either
 * as a tree or as its compact text. */
static char *emit_one(json_object *v, const char *compact, const char *key, int pretty, int level)
{
	struct json_emit e;

	emit_start_text(&e, NULL, pretty, level);
	if (key)
		emit_object(&e, NULL);
	if (compact)
		emit_json_text(&e, key, compact);
	else
		emit_value(&e, key, json_object_get(v));
	if (key)
		emit_end(&e);
	return emit_take_text(&e, true);
}

/* A value kept as compact text (a sealed finding's evidence) is written as the tree it came from
 * would be, at any nesting, pretty or not, and read back as that tree; a text the emitter did not
 * write fails, and ends. */
static void test_json_compact(void)
{
	static const char *const broken[] = { "", "[,]", "{\"a\":}", "[1,,2]" };
	uint64_t seed = 0x636f6d70;

	for (int i = 0; i < 3000 && test_failures == 0; i++) {
		json_object *o = random_tree(&seed, 1 + i % 5), *back;
		char *compact = json_to_compact(o), *plain = json_to_text(o, 0), *again;
		struct json_emit e;

		CHECK_MSG(compact && plain, "setup");
		CHECK_MSG(strlen(compact) + 1 == strlen(plain) &&
			      strncmp(compact, plain, strlen(compact)) == 0,
			  "tree %d: compact\n%s\nplain\n%s", i, compact, plain);
		for (int pretty = 0; pretty <= 1; pretty++)
			for (int level = 0; level <= 2; level += 2)
				for (int keyed = 0; keyed <= 1; keyed++) {
					const char *key = keyed ? "evidence" : NULL;
					char *want = emit_one(o, NULL, key, pretty, level),
					     *got = emit_one(NULL, compact, key, pretty, level);

					CHECK_MSG(want && got && streq(want, got),
						  "tree %d, pretty %d, level %d, key %d: from the "
						  "tree\n%s\nfrom the text\n%s",
						  i, pretty, level, keyed, want, got);
					free(want);
					free(got);
				}
		emit_start_tree(&e);
		emit_json_text(&e, NULL, compact);
		back = emit_take_tree(&e);
		/* the same text, not json_object_equal(): a boolean made of 0x100 is true too */
		again = back || streq(compact, "null") ? json_to_text(back, 0) : NULL;
		CHECK_MSG(again && streq(again, plain),
			  "tree %d: read back as another tree\n%s\n%s", i, compact,
			  again ?: "(none)");
		free(again);
		json_object_put(back);
		free(compact);
		free(plain);
		json_object_put(o);
	}
	for (size_t i = 0; i < ELEMENTSOF(broken); i++) {
		struct json_emit e;

		emit_start_text(&e, NULL, 1, 0);
		emit_json_text(&e, NULL, broken[i]);
		CHECK_MSG(!emit_take_text(&e, true), "\"%s\" was written", broken[i]);
		emit_start_tree(&e);
		emit_json_text(&e, NULL, broken[i]);
		CHECK_MSG(!emit_take_tree(&e), "\"%s\" was read", broken[i]);
	}
}

/* A text past the stream's chunk comes out whole. */
static void test_json_write_long(void)
{
	json_object *arr = json_object_new_array();
	char *text, *written = NULL;
	size_t size = 0;
	FILE *f;

	for (int i = 0; i < 20000; i++)
		json_object_array_add(arr, json_object_new_string("/dev/pts/ptmx"));
	text = json_to_text(arr, 1);
	f = open_memstream(&written, &size);
	CHECK_MSG(text && f, "setup");
	EXPECT_INT(json_write(f, arr, 1), 0);
	EXPECT_INT(fclose(f), 0);
	CHECK_MSG(size > 300000 && size == strlen(text) && memcmp(written, text, size) == 0,
		  "a long text written: %zu bytes", size);
	free(text);
	free(written);
	json_object_put(arr);
}

static void test_user_lookup(void)
{
	char fake[] = "/tmp/ptsguard-test-passwd-XXXXXX";
	const char text[] = "root:x:0:0:root:/root:/bin/sh\n"
			    "nobody:x:4321:4320:nobody:/nonexistent:/usr/sbin/nologin\n"
			    "ptsguard-test-user:x:4322:4322::/nonexistent:/usr/sbin/nologin\n";
	int fd, status;
	pid_t pid;

	if (geteuid() != 0) {
		printf("test-util: user_lookup()'s cache needs root, not checked\n");
		return;
	}
	fd = mkstemp(fake);
	if (fd < 0 || write(fd, text, sizeof(text) - 1) != (ssize_t)sizeof(text) - 1 ||
	    fchmod(fd, 0644) < 0)
		abort();
	close(fd);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0)
		user_lookup_child(fake);
	EXPECT_INT(waitpid(pid, &status, 0), pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "user_lookup(): the child failed (%#x)", status);
	unlink(fake);
}

/* Well-formed UTF-8 by RFC 3629's table, against a byte at a time; the replacement and the
 * octal escape of what is not; brackets escaped for a log line. */
static void test_utf8(void)
{
	static const struct {
		const char *s;
		size_t len;
	} firsts[] = {
		{ "a", 1 },
		{ "\xc3\xa9", 2 },
		{ "\xe2\x82\xac", 3 },
		{ "\xf0\x9f\x98\x80", 4 },
		{ "\xf4\x8f\xbf\xbf", 4 }, /* U+10FFFF */
		{ "\xed\x9f\xbf", 3 },	   /* U+D7FF */
		{ "\xee\x80\x80", 3 },	   /* U+E000 */
		{ "\xc0\xaf", 0 },	   /* overlong '/' */
		{ "\xc1\xbf", 0 },
		{ "\xe0\x80\xaf", 0 },	   /* overlong */
		{ "\xf0\x80\x80\xaf", 0 }, /* overlong */
		{ "\xed\xa0\x80", 0 },	   /* a surrogate */
		{ "\xf4\x90\x80\x80", 0 }, /* above U+10FFFF */
		{ "\xf5\x80\x80\x80", 0 },
		{ "\xff", 0 },
		{ "\x80", 0 },
		{ "\xc3", 0 }, /* cut short */
		{ "\xe2\x82", 0 },
		{ "\xe2\x28\xa1", 0 },
	};
	char *t;
	size_t n;
	uint64_t seed = 0x75746638;

	for (size_t i = 0; i < ELEMENTSOF(firsts); i++)
		CHECK_MSG(utf8_char_len(firsts[i].s, strlen(firsts[i].s)) == firsts[i].len,
			  "utf8_char_len() of case %zu", i);

	t = utf8_replace_invalid("a\xff"
				 "b\xc3\xa9\xe2\x82",
				 7, &n);
	EXPECT_STR(t, "a\xef\xbf\xbd"
		      "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
	EXPECT_INT(n, 13);
	free(t);
	t = hex_bytes("/\xff\n", 3);
	EXPECT_STR(t, "2fff0a");
	free(t);
	t = cescape_brackets("[ptsguard check=x]\\\x1b");
	EXPECT_STR(t, "\\x5bptsguard check=x\\x5d\\\\\\x1b");
	free(t);

	/* The octal escape of what is not UTF-8 is read back as the same bytes, and what it
	 * writes is valid UTF-8 (mountinfo has no backslash of its own: the kernel writes \134). */
	for (int i = 0; i < 2000; i++) {
		char buf[64], *back;
		size_t len = (size_t)(xorshift(&seed) % (sizeof(buf) - 1));

		for (size_t k = 0; k < len; k++) {
			buf[k] = (char)(xorshift(&seed) % 255 + 1);
			if (buf[k] == '\\')
				buf[k] = 'x';
		}
		buf[len] = 0;
		t = octal_escape_invalid_utf8(buf, len, &n);
		CHECK_MSG(t && utf8_valid(t, n) && n == strlen(t), "octal escape %d: not UTF-8", i);
		back = t ? strdup(t) : NULL;
		if (back)
			unescape_octal(back);
		CHECK_MSG(back && streq(back, buf), "octal escape %d: not read back", i);
		EXPECT_INT(utf8_valid(buf, len), t && streq(t, buf));
		free(back);
		free(t);
	}
}

int main(void)
{
	test_user_lookup();
	test_format_numbers();
	test_json_write();
	test_json_differential();
	test_json_compact();
	test_json_write_long();
	test_set_printf_self();
	test_dir_reader();
	test_string_table();
	test_cescape();
	test_utf8();
	test_hash_index_basic();
	test_hash_index_collisions();
	test_hash_index_growth();
	test_strv();
	test_path_startswith();
	test_group_lookup();
	return test_result("test-util");
}
