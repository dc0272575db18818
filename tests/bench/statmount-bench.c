/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * statmount-bench: what one enumeration of the mount table costs through mountinfo text and
 * through listmount(2)/statmount(2), measured in one run on the same table. A benchmark, not a
 * test: it prints numbers and asserts nothing about time.
 *
 * It measures the mount namespace it runs in; for a large table run it in the one
 * tests/bench/audit-bench prepares (10,000 tmpfs + 500 devpts by default):
 *
 *   tests/bench/audit-bench --exec 'build/tests/bench/statmount-bench --runs 21'
 *
 * Each round times, in-process and interleaved:
 *
 *   read        read(2) of /proc/self/mountinfo: the kernel's own cost, the floor
 *   mountinfo   read + mount_table_parse(): the table as ptsguard builds it today
 *   kernel      mount_table_from_kernel(): the same table from listmount + statmount
 *   listmount   listmount() alone: the unique ids of every mount
 *   basic       listmount + statmount(SB_BASIC | MNT_BASIC) per mount: ids, parent, device,
 *               superblock magic and flags, mount flags; no strings
 *   basic+mp    the same plus MNT_POINT: the least a table for the stack analysis needs
 *   two-phase   basic+mp for every mount, then every string for the mounts that matter (devpts
 *               by superblock magic, mounts at /dev, /dev/pts, /dev/ptmx, and their parents)
 *   kernel/Nt   statmount() with every field, the ids split over N threads (--threads,
 *               default: the online CPUs, at most 8); syscalls only, no table
 *   prefer?     mount_table_prefer_kernel(): what choosing between the two costs
 *
 * and prints the median, p90 and minimum wall time, the median CPU time of the process, and
 * the median as a multiple of read's and of mountinfo's.
 *
 * With --peer-group N (root) it builds its own table instead: a shared tmpfs bind-mounted N
 * times (one peer group, as kubelet's bind mounts of shared volumes make), measured in the
 * namespace that owns it and then in a namespace whose mounts are all its slaves, where
 * mountinfo's "propagate_from:" walks the peer group for every mount:
 *
 *   build/tests/bench/statmount-bench --peer-group 10000 --runs 5
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "snapshot/mountinfo.h"
#include "probe/statmount-abi.h"
#include "probe/statmount.h"
#include "util/alloc.h"
#include "util/fileio.h"
#include "util/string-util.h"

#define SM_STRINGS                                                                                 \
	(SM_MNT_ROOT | SM_MNT_POINT | SM_FS_TYPE | SM_MNT_OPTS | SM_FS_SUBTYPE | SM_SB_SOURCE)
#define SM_ALL	    (SM_SB_BASIC | SM_MNT_BASIC | SM_STRINGS)
#define MAX_THREADS 8

struct sm_buf {
	struct statmount_reply *reply;
	size_t size;
};

static int sm_call(struct sm_buf *b, uint64_t id, uint64_t mask)
{
	struct mount_id_request req = { .size = MOUNT_ID_REQUEST_SIZE_VER0,
					.mnt_id = id,
					.param = mask };

	while (sys_statmount(&req, b->reply, b->size) < 0) {
		void *p;

		if (errno != EOVERFLOW)
			return -errno;
		p = realloc(b->reply, b->size * 2);
		if (!p)
			return -ENOMEM;
		b->reply = p;
		b->size *= 2;
	}
	return 0;
}

static int list_ids(uint64_t **ret, size_t *ret_n)
{
	uint64_t *ids = NULL;
	size_t n = 0, allocated = 0;

	for (;;) {
		struct mount_id_request req = { .size = MOUNT_ID_REQUEST_SIZE_VER0,
						.mnt_id = LSMT_ROOT_ID,
						.param = n ? ids[n - 1] : 0 };
		long k;

		if (GROW(ids, allocated, n + 4096) < 0)
			return -ENOMEM;
		k = sys_listmount(&req, ids + n, 4096);
		if (k < 0) {
			free(ids);
			return -errno;
		}
		n += (size_t)k;
		if (k < 4096)
			break;
	}
	*ret = ids;
	*ret_n = n;
	return 0;
}

/* What the lighter variants keep per mount. */
struct light {
	uint64_t id, parent;
	uint64_t magic;
	size_t mountpoint; /* offset into the arena, or SIZE_MAX */
};

static struct sm_buf buf;

static int run_read(void)
{
	_cleanup_free_ char *text = NULL;
	size_t size;

	return read_full_file("/proc/self/mountinfo", 256u << 20, &text, &size);
}

static int run_mountinfo(void)
{
	_cleanup_(mount_table_freep) struct mount_table *t = NULL;
	_cleanup_free_ char *text = NULL;
	struct parse_error err;
	size_t size;
	int r = read_full_file("/proc/self/mountinfo", 256u << 20, &text, &size);

	return r < 0 ? r : mount_table_parse(text, size, &t, &err);
}

static int run_kernel(void)
{
	_cleanup_(mount_table_freep) struct mount_table *t = NULL;

	return mount_table_from_kernel(&t);
}

static int run_prefer(void)
{
	(void)mount_table_prefer_kernel();
	return 0;
}

static int run_listmount(void)
{
	_cleanup_free_ uint64_t *ids = NULL;
	size_t n;

	return list_ids(&ids, &n);
}

/* basic, basic+mp and two-phase: the light records, then (two-phase) the mounts that matter. */
static int run_light(uint64_t mask, bool second_phase)
{
	_cleanup_free_ uint64_t *ids = NULL;
	_cleanup_free_ struct light *l = NULL;
	_cleanup_free_ char *arena = NULL;
	size_t n, used = 0, allocated = 0;
	int r = list_ids(&ids, &n);

	if (r < 0)
		return r;
	l = calloc(n ?: 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct statmount_reply *sm;

		r = sm_call(&buf, ids[i], mask);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		sm = buf.reply;
		l[i] = (struct light){ .id = sm->mnt_id,
				       .parent = sm->mnt_parent_id,
				       .magic = sm->sb_magic,
				       .mountpoint = SIZE_MAX };
		if (mask & SM_MNT_POINT && sm->mask & SM_MNT_POINT) {
			size_t len = strlen(sm->str + sm->mnt_point) + 1;

			if (GROW(arena, allocated, used + len) < 0)
				return -ENOMEM;
			memcpy(arena + used, sm->str + sm->mnt_point, len);
			l[i].mountpoint = used;
			used += len;
		}
	}
	if (!second_phase)
		return 0;

	/* The ids are ascending: find parents by binary search. */
	for (size_t i = 0; i < n; i++) {
		const char *mp = l[i].mountpoint == SIZE_MAX ? "" : arena + l[i].mountpoint;
		bool matters = l[i].magic == DEVPTS_MAGIC || streq(mp, "/dev") ||
			       streq(mp, "/dev/pts") || streq(mp, "/dev/ptmx");
		size_t lo = 0, hi = n;

		if (!matters)
			continue;
		r = sm_call(&buf, ids[i], SM_ALL);
		if (r < 0 && r != -ENOENT)
			return r;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (ids[mid] < l[i].parent)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && ids[lo] == l[i].parent && (r = sm_call(&buf, ids[lo], SM_ALL)) < 0 &&
		    r != -ENOENT)
			return r;
	}
	return 0;
}

static int run_basic(void)
{
	return run_light(SM_SB_BASIC | SM_MNT_BASIC, false);
}

static int run_basic_mp(void)
{
	return run_light(SM_SB_BASIC | SM_MNT_BASIC | SM_MNT_POINT, false);
}

static int run_two_phase(void)
{
	return run_light(SM_SB_BASIC | SM_MNT_BASIC | SM_MNT_POINT, true);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

struct slice {
	const uint64_t *ids;
	size_t n;
	int r;
};

static void *statmount_slice(void *arg)
{
	struct slice *s = arg;
	struct sm_buf b = { .reply = malloc(16384), .size = 16384 };

	s->r = b.reply ? 0 : -ENOMEM;
	for (size_t i = 0; s->r == 0 && i < s->n; i++) {
		int r = sm_call(&b, s->ids[i], SM_ALL);

		if (r < 0 && r != -ENOENT)
			s->r = r;
	}
	free(b.reply);
	return NULL;
}

static unsigned n_threads;

static int run_threads(void)
{
	_cleanup_free_ uint64_t *ids = NULL;
	struct slice slices[MAX_THREADS];
	pthread_t threads[MAX_THREADS];
	size_t n, per;
	int r = list_ids(&ids, &n);

	if (r < 0)
		return r;
	per = (n + n_threads - 1) / n_threads;
	for (unsigned t = 0; t < n_threads; t++) {
		size_t from = min_size(t * per, n), to = min_size(from + per, n);

		slices[t] = (struct slice){ .ids = ids + from, .n = to - from };
		if (t > 0 && pthread_create(&threads[t], NULL, statmount_slice, &slices[t]) != 0)
			return -EAGAIN;
	}
	statmount_slice(&slices[0]);
	for (unsigned t = 1; t < n_threads; t++)
		pthread_join(threads[t], NULL);
	for (unsigned t = 0; t < n_threads; t++)
		if (slices[t].r < 0)
			return slices[t].r;
	return 0;
}

struct variant {
	const char *name;
	int (*run)(void);
	double *wall, *cpu; /* ms per round */
	int error;
};

static double now_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), compare_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nearest rank, on a sorted array. */
static double p90(const double *v, unsigned n)
{
	unsigned k = (n * 90 + 99) / 100;

	return v[k ? k - 1 : 0];
}

/* Do both paths give the same table right now? Field for field, as the unit test checks. */
static const char *tables_identical(size_t *ret_n)
{
	_cleanup_(mount_table_freep) struct mount_table *a = NULL, *b = NULL;
	_cleanup_free_ char *text = NULL;
	struct parse_error err;
	size_t size;

	if (read_full_file("/proc/self/mountinfo", 256u << 20, &text, &size) < 0 ||
	    mount_table_parse(text, size, &a, &err) < 0)
		return "mountinfo unreadable";
	if (mount_table_from_kernel(&b) < 0)
		return "statmount unusable";
	*ret_n = a->n_entries;
	if (a->n_entries != b->n_entries)
		return "no: entry counts differ";
	for (size_t i = 0; i < a->n_entries; i++) {
		const struct mount_entry *x = &a->entries[i], *y = &b->entries[i];

		if (x->id != y->id || x->parent_id != y->parent_id || x->dev != y->dev ||
		    !streq(x->root, y->root) || !streq(x->mountpoint, y->mountpoint) ||
		    !streq(x->fstype, y->fstype) || !streq(x->source, y->source) ||
		    !streq(x->mount_options, y->mount_options) ||
		    !streq(x->super_options, y->super_options))
			return "NO: run build/tests/unit/test-statmount here";
	}
	return "yes";
}

static unsigned runs = 21;

/* Time every variant in the namespace we are in and print the table. */
static int measure(const char *title)
{
	struct variant v[] = {
		{ "read", run_read },		{ "mountinfo", run_mountinfo },
		{ "kernel", run_kernel },	{ "listmount", run_listmount },
		{ "basic", run_basic },		{ "basic+mp", run_basic_mp },
		{ "two-phase", run_two_phase }, { "kernel/Nt", run_threads },
		{ "prefer?", run_prefer },
	};
	double floor_read, floor_mountinfo;
	char threads_name[16];
	unsigned n_devpts = 0;
	size_t n_mounts = 0;
	const char *identical;
	int r = 0;

	snprintf(threads_name, sizeof(threads_name), "kernel/%ut", n_threads);
	v[ELEMENTSOF(v) - 2].name = threads_name;
	FOREACH_ARRAY (x, v, ELEMENTSOF(v)) {
		x->wall = calloc(runs, sizeof(double));
		x->cpu = calloc(runs, sizeof(double));
		if (!x->wall || !x->cpu)
			r = -ENOMEM;
	}
	if (r < 0)
		goto out;

	identical = tables_identical(&n_mounts);
	{
		_cleanup_(mount_table_freep) struct mount_table *t = NULL;

		if (mount_table_from_kernel(&t) >= 0)
			FOREACH_ARRAY (e, t->entries, t->n_entries)
				n_devpts += streq(e->fstype, "devpts");
	}

	/* One untimed round warms the caches; then the variants interleave, so that noise from
	 * the rest of the machine spreads over all of them. */
	FOREACH_ARRAY (x, v, ELEMENTSOF(v))
		x->error = x->run();
	for (unsigned i = 0; i < runs; i++)
		FOREACH_ARRAY (x, v, ELEMENTSOF(v)) {
			double w0, c0;

			if (x->error < 0)
				continue;
			w0 = now_ms(CLOCK_MONOTONIC);
			c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
			r = x->run();
			x->cpu[i] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
			x->wall[i] = now_ms(CLOCK_MONOTONIC) - w0;
			if (r < 0)
				x->error = r;
		}
	r = 0;

	printf("== %s\n", title);
	printf("mount table: %zu mounts, %u devpts\n", n_mounts, n_devpts);
	printf("identical:   %s (mountinfo table vs mount_table_from_kernel())\n", identical);
	printf("prefer:      %s (mount_table_prefer_kernel())\n",
	       mount_table_prefer_kernel() ? "kernel" : "mountinfo");
	printf("runs:        %u of each, interleaved, after one untimed round\n\n", runs);
	printf("%-10s %9s %9s %9s %9s %8s %11s\n", "what", "median ms", "p90 ms", "min ms",
	       "cpu ms", "x read", "x mountinfo");
	floor_read = v[0].error < 0 ? 0 : median(v[0].wall, runs);
	floor_mountinfo = v[1].error < 0 ? 0 : median(v[1].wall, runs);
	FOREACH_ARRAY (x, v, ELEMENTSOF(v)) {
		double med, cpu;

		if (x->error < 0) {
			printf("%-10s failed: %s\n", x->name, strerror(-x->error));
			continue;
		}
		med = median(x->wall, runs); /* sorts: wall[0] is the minimum */
		cpu = median(x->cpu, runs);
		printf("%-10s %9.2f %9.2f %9.2f %9.2f %8.2f %11.2f\n", x->name, med,
		       p90(x->wall, runs), x->wall[0], cpu, floor_read ? med / floor_read : 0,
		       floor_mountinfo ? med / floor_mountinfo : 0);
	}
	printf("\n");
out:
	FOREACH_ARRAY (x, v, ELEMENTSOF(v)) {
		free(x->wall);
		free(x->cpu);
	}
	return r;
}

/*
 * --peer-group N: in a private mount namespace, a shared tmpfs with N bind mounts of it (one
 * peer group of N + 1 mounts); measure there, then in a new namespace where all of them are
 * slaves, as in a container or a sandboxed service. Both namespaces die with us.
 */
static int peer_group(unsigned n)
{
	char scratch[] = "/tmp/statmount-bench.XXXXXX", path[64];
	double t0 = now_ms(CLOCK_MONOTONIC);
	int r = 0, status;
	pid_t pid;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (!mkdtemp(scratch))
		return -errno;
	if (mount("peers", scratch, "tmpfs", 0, "mode=0755") < 0 ||
	    mount(NULL, scratch, NULL, MS_SHARED, NULL) < 0)
		r = -errno;
	snprintf(path, sizeof(path), "%s/src", scratch);
	if (r == 0 && mkdir(path, 0755) < 0)
		r = -errno;
	for (unsigned i = 0; r == 0 && i < n; i++) {
		char target[64];

		snprintf(target, sizeof(target), "%s/b%05u", scratch, i);
		if (mkdir(target, 0755) < 0 || mount(path, target, NULL, MS_BIND, NULL) < 0)
			r = -errno;
	}
	if (r == 0) {
		printf("setup:       %.1f s to bind-mount a shared tmpfs %u times\n\n",
		       (now_ms(CLOCK_MONOTONIC) - t0) / 1e3, n);
		r = measure("the namespace that owns the peer group (shared mounts)");
	}
	fflush(NULL);
	pid = r == 0 ? fork() : -1;
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
			_exit(1);
		r = measure("a namespace whose mounts are its slaves (a container, a sandboxed "
			    "service)");
		fflush(NULL);
		_exit(r < 0 ? 1 : 0);
	}
	if (pid > 0 &&
	    (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
		r = -ECHILD;
	umount2(scratch, MNT_DETACH);
	rmdir(scratch);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "threads", required_argument, NULL, 't' },
		{ "peer-group", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	unsigned peers = 0;
	struct utsname u;
	long cpus;
	int c, r;

	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	n_threads = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (unsigned)cpus;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case 'r':
			runs = (unsigned)atoi(optarg);
			break;
		case 't':
			n_threads = (unsigned)atoi(optarg);
			break;
		case 'p':
			peers = (unsigned)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: statmount-bench [--runs N] [--threads N] "
					"[--peer-group N]\n");
			return c == 'h' ? 0 : 1;
		}
	}
	if (runs < 1 || n_threads < 1 || n_threads > MAX_THREADS || (peers && geteuid() != 0)) {
		fprintf(stderr,
			"statmount-bench: --runs >= 1, --threads 1..%d, --peer-group as "
			"root\n",
			MAX_THREADS);
		return 1;
	}
	buf.size = 16384;
	buf.reply = malloc(buf.size);
	if (!buf.reply)
		return 1;

	uname(&u);
	printf("kernel:      %s (%s), %ld CPUs online\n", u.release, u.machine, cpus);
	r = peers ? peer_group(peers) : measure("this mount namespace");
	if (r < 0)
		fprintf(stderr, "statmount-bench: %s\n", strerror(-r));
	free(buf.reply);
	return r < 0 ? 1 : 0;
}
