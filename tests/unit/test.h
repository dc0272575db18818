/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal assertions for the unit tests: report file:line and what differed, keep going,
 * exit non-zero at the end if anything failed. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;

#define CHECK_MSG(cond, ...)                                                                       \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                      \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			test_failures++;                                                           \
		}                                                                                  \
	} while (0)

#define EXPECT(cond) CHECK_MSG(cond, "%s", #cond)
#define EXPECT_INT(a, b)                                                                           \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		CHECK_MSG(_a == _b, "%s == %lld, expected %lld", #a, _a, _b);                      \
	} while (0)
#define EXPECT_STR(a, b)                                                                           \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		CHECK_MSG(_a &&_b &&strcmp(_a, _b) == 0, "%s == \"%s\", expected \"%s\"", #a,      \
			  _a ? _a : "(null)", _b ? _b : "(null)");                                 \
	} while (0)

static inline int test_result(const char *name)
{
	if (test_failures)
		fprintf(stderr, "%s: %d failure(s)\n", name, test_failures);
	else
		printf("%s: all passed\n", name);
	return test_failures ? 1 : 0;
}
