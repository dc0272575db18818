/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * page-touch: what the first write to a fresh anonymous page costs on this machine, the price
 * of every page an audit's heap grows by. For --pages (default 1024) fresh pages, --rounds
 * times (default 7), interleaved, it times:
 *
 *   fault     the first memset() of a fresh mapping: a page fault each
 *   populate  one madvise(MADV_POPULATE_WRITE) of a fresh mapping (Linux 5.14), then
 *   after     the first memset() of those populated pages
 *   again     a second memset() of the same pages (the cost of the bytes alone)
 *
 * and prints the medians in ms and per page in us. On bare metal the first touch costs a
 * fraction of a microsecond a page and "after" is close to "again"; under a hypervisor that
 * shadows the guest's page tables (no nested paging), the first touch of a page costs a
 * trap to it even once the guest's own tables are filled, and "after" stays high.
 * A benchmark: it asserts nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define ROUNDS_MAX 101

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static char *fresh(size_t size)
{
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	double fault[ROUNDS_MAX], populate[ROUNDS_MAX], after[ROUNDS_MAX], again[ROUNDS_MAX];
	long page = sysconf(_SC_PAGESIZE), pages = 1024;
	int rounds = 7;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--pages") == 0 && i + 1 < argc)
			pages = atol(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: page-touch [--pages N] [--rounds N (1-%d)]\n",
				ROUNDS_MAX);
			return 2;
		}
	}
	if (pages < 1 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "page-touch: --pages at least 1, --rounds 1 to %d\n", ROUNDS_MAX);
		return 2;
	}

	size_t size = (size_t)pages * (size_t)page;

	for (int r = 0; r < rounds; r++) {
		char *p = fresh(size), *q = fresh(size);
		double t0, t1, t2, t3;

		t0 = now_ms();
		memset(p, 1, size);
		fault[r] = now_ms() - t0;

		t1 = now_ms();
		if (madvise(q, size, MADV_POPULATE_WRITE) < 0) {
			fprintf(stderr, "page-touch: MADV_POPULATE_WRITE: %s\n", strerror(errno));
			return 1;
		}
		t2 = now_ms();
		memset(q, 1, size);
		t3 = now_ms();
		memset(q, 2, size);
		populate[r] = t2 - t1;
		after[r] = t3 - t2;
		again[r] = now_ms() - t3;
		munmap(p, size);
		munmap(q, size);
	}

	printf("%ld fresh pages of %ld bytes, medians of %d rounds:\n", pages, page, rounds);
	const struct {
		const char *name;
		double *v;
	} rows[] = {
		{ "fault", fault }, { "populate", populate }, { "after", after }, { "again", again }
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double m = median(rows[i].v, rounds);

		printf("  %-9s %8.2f ms  %7.2f us a page\n", rows[i].name, m,
		       m * 1e3 / (double)pages);
	}
	return 0;
}
