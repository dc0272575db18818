/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fstab parser (snapshot/fstab.h): comments, blank lines, escapes, missing fields, long lines,
 * the size bound and NUL bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot/fstab.h"
#include "test.h"

#define MAX_ENTRIES 8

struct parsed {
	size_t n;
	struct {
		unsigned line;
		char *spec, *file, *vfstype, *options;
	} e[MAX_ENTRIES];
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void parse(const char *text, size_t size, struct parsed *ret)
{
	struct fstab_iter it;
	struct fstab_entry e;
	int r;

	memset(ret, 0, sizeof(*ret));
	fstab_iter_init(&it, text, size);
	while ((r = fstab_iter_next(&it, &e)) > 0) {
		if (ret->n == MAX_ENTRIES) {
			CHECK_MSG(false, "more than %d entries", MAX_ENTRIES);
			break;
		}
		ret->e[ret->n].line = e.line;
		ret->e[ret->n].spec = strdup(e.spec);
		ret->e[ret->n].file = strdup(e.file);
		ret->e[ret->n].vfstype = strdup(e.vfstype);
		ret->e[ret->n].options = dup_or_null(e.options);
		ret->n++;
	}
	EXPECT(r >= 0);
	fstab_iter_done(&it);
}

static void parsed_free(struct parsed *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->e[i].spec);
		free(p->e[i].file);
		free(p->e[i].vfstype);
		free(p->e[i].options);
	}
}

static void test_comments_and_blank_lines(void)
{
	static const char text[] = "# /etc/fstab: static file system information.\n"
				   "\n"
				   "   \t  \n"
				   "UUID=abc / ext4 errors=remount-ro 0 1\n"
				   "  # indented comment devpts /dev/pts devpts\n"
				   "devpts /dev/pts devpts gid=5,mode=620 0 0 # trailing\n"
				   "proc /proc proc#notacomment defaults\n"
				   "none /x # devpts\n";
	struct parsed p;

	parse(text, strlen(text), &p);
	EXPECT_INT(p.n, 3);
	if (p.n == 3) {
		EXPECT_INT(p.e[0].line, 4);
		EXPECT_STR(p.e[0].spec, "UUID=abc");
		EXPECT_STR(p.e[0].file, "/");
		EXPECT_STR(p.e[0].vfstype, "ext4");
		EXPECT_STR(p.e[0].options, "errors=remount-ro");
		EXPECT_INT(p.e[1].line, 6);
		EXPECT_STR(p.e[1].vfstype, "devpts");
		EXPECT_STR(p.e[1].options, "gid=5,mode=620");
		/* '#' starts a comment only at the start of a field */
		EXPECT_INT(p.e[2].line, 7);
		EXPECT_STR(p.e[2].vfstype, "proc#notacomment");
	}
	parsed_free(&p);
}

static void test_escapes(void)
{
	static const char text[] = "my\\040disk /mnt/with\\040space\\011tab ext4 a\\054b\n"
				   "x /back\\134slash devpts\n"
				   "x /not\\08\\400\\04 devpts\n";
	struct parsed p;

	parse(text, strlen(text), &p);
	EXPECT_INT(p.n, 3);
	if (p.n == 3) {
		EXPECT_STR(p.e[0].spec, "my disk");
		EXPECT_STR(p.e[0].file, "/mnt/with space\ttab");
		EXPECT_STR(p.e[0].options, "a,b");
		EXPECT_STR(p.e[1].file, "/back\\slash");
		/* not three octal digits, or above \377: left as written */
		EXPECT_STR(p.e[2].file, "/not\\08\\400\\04");
	}
	parsed_free(&p);
}

static void test_missing_fields(void)
{
	static const char text[] = "lonely\n"
				   "two fields\n"
				   "devpts /dev/pts devpts\n"
				   "devpts /dev/pts devpts rw 0\n"
				   "last /line ext4 ro"; /* no final newline */
	struct parsed p;

	parse(text, strlen(text), &p);
	EXPECT_INT(p.n, 3);
	if (p.n == 3) {
		EXPECT_INT(p.e[0].line, 3);
		EXPECT(p.e[0].options == NULL);
		EXPECT_INT(p.e[1].line, 4);
		EXPECT_STR(p.e[1].options, "rw");
		EXPECT_INT(p.e[2].line, 5);
		EXPECT_STR(p.e[2].file, "/line");
		EXPECT_STR(p.e[2].options, "ro");
	}
	parsed_free(&p);

	parse("", 0, &p);
	EXPECT_INT(p.n, 0);
	parse(NULL, 0, &p);
	EXPECT_INT(p.n, 0);
}

static void test_long_lines(void)
{
	size_t n = 1u << 20, k;
	char *text = malloc(n * 2 + 64), *q = text;
	struct parsed p;

	if (!text)
		return;
	q += sprintf(q, "devpts /");
	memset(q, 'a', n);
	q += n;
	q += sprintf(q, " devpts ");
	memset(q, 'o', n);
	q += n;
	q += sprintf(q, "\nx /y devpts\n");
	k = (size_t)(q - text);
	parse(text, k, &p);
	EXPECT_INT(p.n, 2);
	if (p.n == 2) {
		EXPECT_INT(strlen(p.e[0].file), n + 1);
		EXPECT_INT(strlen(p.e[0].options), n);
		EXPECT_INT(p.e[1].line, 2);
		EXPECT_STR(p.e[1].file, "/y");
	}
	parsed_free(&p);
	free(text);
}

static void test_bounds(void)
{
	static const char text[] = "a /b devpts rw\nc /d devpts ro\n";
	static const char with_nul[] = "a /b devpts rw\n\0c /d devpts ro\n";
	struct parsed p;

	/* size cuts the text: the second entry is cut to "c /d de" */
	parse(text, strlen("a /b devpts rw\nc /d de"), &p);
	EXPECT_INT(p.n, 2);
	if (p.n == 2) {
		EXPECT_STR(p.e[1].vfstype, "de");
		EXPECT(p.e[1].options == NULL);
	}
	parsed_free(&p);

	/* a NUL ends the text, as it ends a C string */
	parse(with_nul, sizeof(with_nul) - 1, &p);
	EXPECT_INT(p.n, 1);
	parsed_free(&p);
}

static void test_read_in_root(void)
{
	char dir[] = "/tmp/test-fstab-XXXXXX";
	char *text = NULL;

	if (!mkdtemp(dir))
		return;
	EXPECT_INT(fstab_read_in_root(dir, &text), -ENOENT);
	EXPECT(fstab_read_in_root("/nonexistent-root-for-test", &text) < 0);
	rmdir(dir);
}

int main(void)
{
	test_comments_and_blank_lines();
	test_escapes();
	test_missing_fields();
	test_long_lines();
	test_bounds();
	test_read_in_root();
	return test_result("test-fstab");
}
