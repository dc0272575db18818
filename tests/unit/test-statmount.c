/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount_table_from_kernel() against mount_table_parse() of /proc/self/mountinfo read just
 * before it: every field of every entry, in order.
 *
 *   test-statmount            the test's own mount table; and, under a seccomp filter that
 *                             denies the syscalls, the errors that send the caller to mountinfo
 *   test-statmount --hostile  as root, in a private mount namespace filled with what breaks
 *                             naive code: escapes in paths and sources, a 4,000-byte path,
 *                             options longer than the first statmount() buffer, stacked devpts,
 *                             bind roots, every flag mountinfo prints, a fuse subtype, an
 *                             idmapped mount, propagation copies, a moved mount, more mounts
 *                             than one listmount() batch; then from a chroot, and from a
 *                             namespace whose mounts are all slaves; and
 *                             mount_table_prefer_kernel() with and without a big peer group
 *
 * Exits 77 (skipped) without a statmount() that has every field, or, for --hostile, without root.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snapshot/mountinfo.h"
#include "probe/statmount-abi.h"
#include "probe/statmount.h"
#include "test.h"
#include "util/fileio.h"
#include "util/string-util.h"

#define EXIT_SKIP 77

/* Remove the flag "mand" from mountinfo's super options: statmount() cannot report it
 * (statmount.h), so the kernel table never has it. */
static void strip_mand(char *opts)
{
	char *out = opts;

	for (const char *p = opts; *p;) {
		size_t len = strcspn(p, ",");

		if (len != 4 || strncmp(p, "mand", 4) != 0) {
			if (out != opts)
				*out++ = ',';
			for (size_t i = 0; i < len; i++)
				*out++ = p[i];
		}
		p += len;
		if (*p == ',')
			p++;
	}
	*out = 0;
}

/* Compare field for field; print up to 20 differences when report is set. */
static unsigned compare_tables(const struct mount_table *text, const struct mount_table *kernel,
			       bool report)
{
	unsigned diffs = 0;
	size_t n = text->n_entries < kernel->n_entries ? text->n_entries : kernel->n_entries;

#define DIFF(...)                                                                                  \
	do {                                                                                       \
		if (report && diffs < 20)                                                          \
			fprintf(stderr, __VA_ARGS__);                                              \
		diffs++;                                                                           \
	} while (0)
#define DIFF_STR(field)                                                                            \
	do {                                                                                       \
		if (!streq(a->field, b->field))                                                    \
			DIFF("entry %zu (mount %u): " #field " '%s' in mountinfo, '%s' from "      \
			     "statmount\n",                                                        \
			     i, a->id, a->field, b->field);                                        \
	} while (0)

	if (text->n_entries != kernel->n_entries)
		DIFF("%zu entries in mountinfo, %zu from statmount\n", text->n_entries,
		     kernel->n_entries);
	for (size_t i = 0; i < n; i++) {
		const struct mount_entry *a = &text->entries[i], *b = &kernel->entries[i];

		if (a->id != b->id || a->parent_id != b->parent_id)
			DIFF("entry %zu: mount %u parent %u in mountinfo, %u parent %u from "
			     "statmount\n",
			     i, a->id, a->parent_id, b->id, b->parent_id);
		if (a->dev != b->dev)
			DIFF("entry %zu (mount %u): device differs\n", i, a->id);
		DIFF_STR(root);
		DIFF_STR(mountpoint);
		DIFF_STR(fstype);
		DIFF_STR(source);
		DIFF_STR(mount_options);
		strip_mand(a->super_options);
		DIFF_STR(super_options);
	}
#undef DIFF_STR
#undef DIFF
	return diffs;
}

/* Both tables back to back; *ret_diffs differences. A negative errno from either side. */
static int compare_once(bool report, unsigned *ret_diffs, struct mount_table **ret_kernel)
{
	_cleanup_(mount_table_freep) struct mount_table *text = NULL, *kernel = NULL;
	_cleanup_free_ char *buf = NULL;
	struct parse_error err;
	size_t size;
	int r;

	r = read_full_file("/proc/self/mountinfo", 256u << 20, &buf, &size);
	if (r < 0)
		return r;
	r = mount_table_parse(buf, size, &text, &err);
	if (r < 0) {
		fprintf(stderr, "mountinfo line %u: %s\n", err.line, err.message);
		return r;
	}
	r = mount_table_from_kernel(&kernel);
	if (r < 0)
		return r;
	*ret_diffs = compare_tables(text, kernel, report);
	if (ret_kernel)
		*ret_kernel = TAKE_PTR(kernel);
	return 0;
}

static bool unusable(int r)
{
	return r == -ENOSYS || r == -EPERM || r == -EOPNOTSUPP;
}

/* The table may change between the two reads: another mount or umount in this namespace.
 * Identical once in five tries passes; the last try reports what differed. Returns 0, 1
 * (differences), EXIT_SKIP, or a negative errno. */
static int compare_until_equal(const char *what, struct mount_table **ret_kernel)
{
	for (int attempt = 1; attempt <= 5; attempt++) {
		unsigned diffs = 0;
		int r = compare_once(attempt == 5, &diffs, ret_kernel);

		if (unusable(r)) {
			printf("%s: statmount() unusable here (%s): skipped\n", what, strerror(-r));
			return EXIT_SKIP;
		}
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", what, strerror(-r));
			return r;
		}
		if (diffs == 0)
			return 0;
		if (ret_kernel)
			*ret_kernel = mount_table_free(*ret_kernel);
		if (attempt == 5)
			fprintf(stderr, "%s: %u differences\n", what, diffs);
	}
	return 1;
}

/* Deny one syscall with errno err, in this process only. */
static int deny_syscall(long nr, int err)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ELEMENTSOF(filter), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

/* What mount_table_from_kernel() returns under a filter denying nr with err. */
static void test_denied(const char *name, long nr, int err)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct mount_table *t = NULL;
		int r = deny_syscall(nr, err);

		if (r < 0)
			_exit(200);
		r = mount_table_from_kernel(&t);
		mount_table_free(t);
		_exit(r < 0 ? -r : 0);
	}
	CHECK_MSG(pid > 0, "fork: %m");
	if (pid <= 0 || waitpid(pid, &status, 0) < 0)
		return;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 200) {
		printf("seccomp unavailable: %s not tested\n", name);
		return;
	}
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == err,
		  "%s denied with %s: mount_table_from_kernel() gave %s, not -%s", name,
		  strerrorname_np(err),
		  WIFEXITED(status) ? strerror(WEXITSTATUS(status)) : "a crash",
		  strerrorname_np(err));
}

/* The kernel's table has a unique id for each entry, kept apart from the entries; a copy of some
 * entries, in another order, keeps each one's id; a table read from text has none. */
static void test_unique_ids(const struct mount_table *kernel)
{
	_cleanup_(mount_table_freep) struct mount_table *copy = NULL, *text = NULL,
							*text_copy = NULL;
	_cleanup_free_ size_t *idx = NULL;
	struct parse_error err;
	size_t n = kernel->n_entries;
	static const char line[] = "22 1 0:21 / / rw - tmpfs tmpfs rw\n";

	CHECK_MSG(kernel->unique_ids, "the kernel's table has no unique ids");
	if (!kernel->unique_ids)
		return;
	for (size_t i = 0; i < n; i++) {
		CHECK_MSG(kernel->unique_ids[i] != 0, "entry %zu (mount %u) has unique id 0", i,
			  kernel->entries[i].id);
		for (size_t j = 0; j < i; j++)
			CHECK_MSG(kernel->unique_ids[i] != kernel->unique_ids[j],
				  "entries %zu and %zu share unique id %" PRIu64, j, i,
				  kernel->unique_ids[i]);
	}
	idx = calloc(n ?: 1, sizeof(*idx));
	CHECK_MSG(idx, "out of memory");
	if (!idx)
		return;
	for (size_t k = 0; k < n; k++)
		idx[k] = n - 1 - k;
	CHECK_MSG(mount_table_copy(kernel, idx, n, &copy) == 0,
		  "the kernel's table reversed: no copy");
	if (!copy)
		return;
	CHECK_MSG(copy->unique_ids, "the copy lost the unique ids");
	for (size_t k = 0; copy->unique_ids && k < n; k++) {
		CHECK_MSG(copy->unique_ids[k] == kernel->unique_ids[n - 1 - k],
			  "copy's entry %zu: unique id %" PRIu64 ", not %" PRIu64, k,
			  copy->unique_ids[k], kernel->unique_ids[n - 1 - k]);
		CHECK_MSG(mount_entry_equal(&copy->entries[k], &kernel->entries[n - 1 - k]),
			  "copy's entry %zu differs from its original", k);
	}
	CHECK_MSG(mount_table_parse(line, sizeof(line) - 1, &text, &err) == 0,
		  "a one-line text table does not parse");
	CHECK_MSG(text && text->n_entries == 1 && !text->unique_ids, "a text table has unique ids");
	CHECK_MSG(text && mount_table_copy(text, NULL, 0, &text_copy) == 0,
		  "a text table: no copy");
	CHECK_MSG(text_copy && text_copy->n_entries == 1 && !text_copy->unique_ids,
		  "a text table's copy has unique ids");
}

static int test_live(void)
{
	_cleanup_(mount_table_freep) struct mount_table *kernel = NULL;
	int r = compare_until_equal("live table", &kernel);

	if (r == EXIT_SKIP)
		return EXIT_SKIP;
	CHECK_MSG(r == 0, "the live table differs between mountinfo and statmount");
	if (kernel)
		test_unique_ids(kernel);
	test_denied("listmount", __NR_listmount, ENOSYS);
	test_denied("listmount", __NR_listmount, EPERM);
	test_denied("statmount", __NR_statmount, EPERM);
	test_denied("statmount", __NR_statmount, ENOSYS);
	return test_result("test-statmount");
}

/* --hostile: everything below runs in the child's private mount namespace. */

static char base[64];

static const char *at(const char *rel)
{
	static char paths[8][8192];
	static unsigned next;
	char *p = paths[next++ % ELEMENTSOF(paths)];

	snprintf(p, sizeof(paths[0]), "%s/%s", base, rel);
	return p;
}

static int mkdir_p(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	for (char *p = strchr(copy + 1, '/');; p = strchr(p + 1, '/')) {
		if (p)
			*p = 0;
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (!p)
			return 0;
		*p = '/';
	}
}

/* mount(2) on dir (created first); a failure is a test failure unless optional. */
static bool do_mount(const char *source, const char *dir, const char *type, unsigned long flags,
		     const char *data)
{
	if (!(flags & (MS_REMOUNT | MS_SHARED | MS_SLAVE)))
		CHECK_MSG(mkdir_p(dir) == 0, "mkdir %s: %m", dir);
	if (mount(source, dir, type, flags, data) == 0)
		return true;
	CHECK_MSG(false, "mount -t %s %s %s (flags %#lx, %s): %m", type ?: "-", source ?: "(null)",
		  dir, flags, data ?: "");
	return false;
}

static bool touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* A directory whose path is n bytes long, below base/name. */
static const char *long_dir(const char *name, size_t n)
{
	static char path[4096];
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", base, name);
	for (len = strlen(path); len + 1 < n;) {
		size_t part = n - len - 1 < 200 ? n - len - 1 : 200;

		path[len++] = '/';
		memset(path + len, 'a' + (char)(len % 26), part);
		len += part;
		path[len] = 0;
	}
	CHECK_MSG(mkdir_p(path) == 0, "mkdir %zu-byte path: %m", strlen(path));
	return path;
}

/* A user namespace fd mapping 0..65535 to 100000..165535, or -errno. */
static int userns_fd(void)
{
	int go[2], done[2], fd;
	char path[64], buf[1];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(go[0]);
		close(done[1]);
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		(void)!write(go[1], "x", 1);
		(void)!read(done[0], buf, 1);
		_exit(0);
	}
	close(go[1]);
	close(done[0]);
	fd = -EIO;
	if (read(go[0], buf, 1) == 1) {
		static const char map[] = "0 100000 65536\n";
		int ok = 1;

		for (int i = 0; i < 2; i++) {
			int m;

			snprintf(path, sizeof(path), "/proc/%d/%s", pid, i ? "gid_map" : "uid_map");
			m = open(path, O_WRONLY | O_CLOEXEC);
			ok &= m >= 0 && write(m, map, strlen(map)) == (ssize_t)strlen(map);
			if (m >= 0)
				close(m);
		}
		snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
		fd = ok ? open(path, O_RDONLY | O_CLOEXEC) : -EPERM;
		if (fd < 0 && ok)
			fd = -errno;
	}
	close(done[1]);
	close(go[0]);
	waitpid(pid, NULL, 0);
	return fd;
}

static bool mount_idmapped(const char *from, const char *to)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	int ns = userns_fd(), fd;
	bool ok;

	if (ns < 0)
		return false;
	attr.userns_fd = (uint64_t)ns;
	fd = open_tree(AT_FDCWD, from, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	ok = fd >= 0 && mkdir_p(to) == 0 &&
	     mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) == 0 &&
	     move_mount(fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH) == 0;
	if (fd >= 0)
		close(fd);
	close(ns);
	return ok;
}

/* An overlay whose options run past 16 KiB (the first statmount() buffer): five 3,900-byte
 * lower directories, given one by one as fds ("lowerdir+", Linux 6.13): mount(2) takes one page
 * of options, fsconfig() strings 256 bytes. */
static bool mount_long_overlay(const char *to)
{
	int fs = fsopen("overlay", FSOPEN_CLOEXEC), mnt = -1;
	bool ok = fs >= 0;
	char name[16];

	for (int i = 0; ok && i < 5; i++) {
		int dir;

		snprintf(name, sizeof(name), "lower%d", i);
		dir = open(long_dir(name, 3900), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ok = dir >= 0 && fsconfig(fs, FSCONFIG_SET_FD, "lowerdir+", NULL, dir) == 0;
		if (dir >= 0)
			close(dir);
	}
	ok = ok && fsconfig(fs, FSCONFIG_SET_STRING, "source", "overlay long", 0) == 0 &&
	     fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0 &&
	     (mnt = fsmount(fs, FSMOUNT_CLOEXEC, 0)) >= 0 && mkdir_p(to) == 0 &&
	     move_mount(mnt, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH) == 0;
	if (mnt >= 0)
		close(mnt);
	if (fs >= 0)
		close(fs);
	return ok;
}

static const struct mount_entry *find_mountpoint(const struct mount_table *t, const char *mp)
{
	const struct mount_entry *found = NULL;

	FOREACH_ARRAY (e, t->entries, t->n_entries)
		if (streq(e->mountpoint, mp))
			found = e; /* the last: the top of a stack */
	return found;
}

#define N_MANY 4200 /* more than one listmount() batch (4096) */

static void build_hostile_table(int *fuse_fd, bool *have_fuse, bool *have_idmap, bool *have_overlay)
{
	char data[128];

	CHECK_MSG(mount("hostile base", base, "tmpfs", 0, "mode=0755") == 0, "tmpfs on %s: %m",
		  base);
	do_mount("tmpfs", at("to-move"), "tmpfs", 0, NULL);

	/* Escapes in mountpoints and sources: mountinfo writes \040 \011 \012 \134. */
	do_mount("src with space", at("with space"), "tmpfs", 0, NULL);
	do_mount("src\ttab", at("tab\there"), "tmpfs", 0, NULL);
	do_mount("src\nnewline", at("new\nline"), "tmpfs", 0, NULL);
	do_mount("src\\back", at("back\\slash"), "tmpfs", 0, NULL);
	do_mount("lit\\134eral", at("lit\\134eral"), "tmpfs", 0, NULL);
	do_mount("hash#", at("hash#,comma=x"), "tmpfs", 0, NULL);
	do_mount("", at("empty-source"), "tmpfs", 0, NULL);
	do_mount(NULL, at("no-source"), "tmpfs", 0, NULL);
	do_mount("long path", long_dir("long", 4000), "tmpfs", 0, NULL);

	/* devpts: three instances, two stacked on one mountpoint, and pts/ptmx bound on a file */
	do_mount("devpts", at("pts"), "devpts", 0, "newinstance,gid=5,mode=620,ptmxmode=666");
	do_mount("devpts", at("pts"), "devpts", 0, "newinstance");
	do_mount("devpts", at("other/pts"), "devpts", 0, "newinstance,max=10");
	CHECK_MSG(touch(at("ptmx")), "touch ptmx: %m");
	do_mount(at("pts/ptmx"), at("ptmx"), NULL, MS_BIND, NULL);

	/* Bind mounts with a root other than "/", among them the long path */
	CHECK_MSG(mkdir_p(at("tree/sub/dir")) == 0, "mkdir tree: %m");
	do_mount(at("tree/sub"), at("bind-root"), NULL, MS_BIND, NULL);
	do_mount(long_dir("long", 4000), at("bind-long-root"), NULL, MS_BIND, NULL);

	/* Per-mount flags, and a rw mount of a read-only superblock */
	do_mount(at("tree"), at("ro"), NULL, MS_BIND, NULL);
	do_mount(NULL, at("ro"), NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
	do_mount(at("tree"), at("nsx"), NULL, MS_BIND, NULL);
	do_mount(NULL, at("nsx"), NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		 NULL);
	do_mount("tmpfs", at("noatime"), "tmpfs", MS_NOATIME | MS_NODIRATIME, NULL);
	do_mount("tmpfs", at("strictatime"), "tmpfs", MS_STRICTATIME, NULL);
	do_mount("tmpfs", at("nosymfollow"), "tmpfs", MS_NOSYMFOLLOW, NULL);
	do_mount("tmpfs", at("sb-ro"), "tmpfs", 0, "size=1m");
	do_mount(at("sb-ro"), at("sb-ro-bind"), NULL, MS_BIND, NULL);
	do_mount(NULL, at("sb-ro"), NULL, MS_REMOUNT | MS_RDONLY, "size=1m");
	do_mount("tmpfs", at("sb-flags"), "tmpfs", MS_SYNCHRONOUS | MS_DIRSYNC | MS_LAZYTIME, NULL);
	do_mount("tmpfs", at("mand"), "tmpfs", MS_MANDLOCK, NULL);

	/* Stacked and covering tmpfs */
	do_mount("tmpfs", at("stack"), "tmpfs", 0, NULL);
	do_mount("tmpfs", at("stack"), "tmpfs", 0, "mode=0700");
	do_mount("tmpfs", at("cover/a/b"), "tmpfs", 0, NULL);
	do_mount("tmpfs", at("cover/a"), "tmpfs", 0, NULL);

	/* Propagation copies get later ids than the mounts around them */
	do_mount("tmpfs", at("shared"), "tmpfs", 0, NULL);
	do_mount(NULL, at("shared"), NULL, MS_SHARED, NULL);
	do_mount(at("shared"), at("slave"), NULL, MS_BIND, NULL);
	do_mount(NULL, at("slave"), NULL, MS_SLAVE, NULL);
	do_mount("tmpfs", at("shared/inner"), "tmpfs", 0, NULL);

	/* An early mount moved late */
	do_mount(at("to-move"), at("moved/here"), NULL, MS_MOVE, NULL);

	/* A fuse superblock with a subtype: no daemon needed, nothing here touches its files */
	*fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (*fuse_fd >= 0) {
		snprintf(data, sizeof(data), "fd=%d,rootmode=40000,user_id=0,group_id=0", *fuse_fd);
		*have_fuse =
		    mkdir_p(at("fuse")) == 0 && mount("fuse source", at("fuse"), "fuse.hostile",
						      MS_NOSUID | MS_NODEV, data) == 0;
	}
	*have_idmap = mount_idmapped(at("tree"), at("idmapped"));
	*have_overlay = mount_long_overlay(at("overlay"));

	CHECK_MSG(mkdir_p(at("many")) == 0, "mkdir many: %m");
	for (int i = 0; i < N_MANY; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "many/%04d", i);
		if (!do_mount(at("tree"), at(rel), NULL, MS_BIND, NULL))
			break;
	}
}

/* The same comparison from inside a chroot, where mounts outside the new root disappear. */
static void test_chroot(void)
{
	pid_t pid;
	int status;

	do_mount("tmpfs", at("chroot"), "tmpfs", 0, NULL);
	do_mount("proc", at("chroot/proc"), "proc", 0, NULL);
	do_mount("devpts", at("chroot/dev/pts"), "devpts", 0, "newinstance");
	do_mount(at("with space"), at("chroot/inner space"), NULL, MS_BIND, NULL);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct mount_table *t = NULL;
		int r;

		if (chroot(at("chroot")) < 0 || chdir("/") < 0)
			_exit(100);
		r = compare_until_equal("chroot", &t);
		/* proc, devpts, the bind and the chroot's own tmpfs: nothing from outside */
		if (r == 0 && (!t || t->n_entries != 4)) {
			fprintf(stderr, "chroot: %zu mounts visible, expected 4\n",
				t ? t->n_entries : 0);
			r = 1;
		}
		mount_table_free(t);
		fflush(NULL);
		_exit(r == 0 ? 0 : 101);
	}
	CHECK_MSG(pid > 0, "fork: %m");
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "the tables differ inside a chroot (status %d)", status);
}

/* Run fn in a child that has a mount namespace of its own whose mounts are all slaves of this
 * one's (as in containers and sandboxed services); its exit status is the result. */
static int in_slave_namespace(int (*fn)(void))
{
	pid_t pid;
	int status;

	if (mount(NULL, "/", NULL, MS_REC | MS_SHARED, NULL) < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int r;

		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
			_exit(100);
		r = fn();
		fflush(NULL);
		_exit(r);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* mountinfo there carries "master:" and "propagate_from:" on every line. */
static int compare_as_slaves(void)
{
	return compare_until_equal("slave namespace", NULL) == 0 ? 0 : 1;
}

static int prefer_kernel_as_slaves(void)
{
	int r = compare_until_equal("slaves of one peer group", NULL);

	if (!mount_table_prefer_kernel()) {
		fprintf(stderr,
			"slaves of one big peer group: mount_table_prefer_kernel() said no\n");
		return 1;
	}
	return r == 0 ? 0 : 1;
}

/* mount_table_prefer_kernel(): no in the namespace holding a peer group of 1,500 bind mounts,
 * yes where those mounts are slaves and mountinfo walks the group for each. In a child, on a
 * table of its own. */
static void test_prefer_kernel(void)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int r = 0;

		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(100);
		do_mount("peers", base, "tmpfs", 0, "mode=0755");
		do_mount(NULL, base, NULL, MS_SHARED, NULL);
		CHECK_MSG(mkdir_p(at("src")) == 0, "mkdir src: %m");
		for (int i = 0; i < 1500 && test_failures == 0; i++) {
			char rel[32];

			snprintf(rel, sizeof(rel), "peer/%04d", i);
			do_mount(at("src"), at(rel), NULL, MS_BIND, NULL);
		}
		CHECK_MSG(!mount_table_prefer_kernel(), "prefer the kernel without slaves");
		r = in_slave_namespace(prefer_kernel_as_slaves);
		CHECK_MSG(r == 0, "in the slave namespace: %d", r);
		fflush(NULL);
		_exit(test_failures ? 1 : 0);
	}
	CHECK_MSG(pid > 0, "fork: %m");
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "mount_table_prefer_kernel() test failed (status %#x)", status);
}

static int hostile_child(void)
{
	_cleanup_(mount_table_freep) struct mount_table *t = NULL;
	bool have_fuse = false, have_idmap = false, have_overlay = false;
	const struct mount_entry *e;
	int fuse_fd = -1, r;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	build_hostile_table(&fuse_fd, &have_fuse, &have_idmap, &have_overlay);
	printf("hostile table built: fuse subtype %s, idmapped mount %s, long overlay %s\n",
	       have_fuse ? "yes" : "no (skipped)", have_idmap ? "yes" : "no (skipped)",
	       have_overlay ? "yes" : "no (skipped)");

	r = compare_until_equal("hostile table", &t);
	if (r == EXIT_SKIP)
		return EXIT_SKIP;
	CHECK_MSG(r == 0, "the hostile table differs between mountinfo and statmount");

	/* The table holds what was built: a comparison of two empty tables proves nothing. */
	if (t) {
		CHECK_MSG(t->n_entries > N_MANY, "only %zu mounts", t->n_entries);
		e = find_mountpoint(t, at("new\nline"));
		CHECK_MSG(e && streq(e->source, "src\nnewline"), "mount at new\\nline");
		e = find_mountpoint(t, at("lit\\134eral"));
		CHECK_MSG(e && streq(e->source, "lit\\134eral"), "mount at lit\\134eral");
		e = find_mountpoint(t, at("no-source"));
		CHECK_MSG(e && streq(e->source, "none"), "mount without source: '%s'",
			  e ? e->source : "(missing)");
		e = find_mountpoint(t, at("bind-root"));
		CHECK_MSG(e && streq(e->root, "/tree/sub"), "bind root");
		e = find_mountpoint(t, at("ptmx"));
		CHECK_MSG(e && streq(e->fstype, "devpts") && streq(e->root, "/ptmx"), "ptmx bind");
		e = find_mountpoint(t, at("pts"));
		CHECK_MSG(e && streq(e->super_options, "rw,mode=600,ptmxmode=000"),
			  "top devpts: '%s'", e ? e->super_options : "(missing)");
		e = find_mountpoint(t, at("nsx"));
		CHECK_MSG(e && streq(e->mount_options, "rw,nosuid,nodev,noexec,relatime"),
			  "nsx: '%s'", e ? e->mount_options : "(missing)");
		e = find_mountpoint(t, at("noatime"));
		CHECK_MSG(e && streq(e->mount_options, "rw,noatime,nodiratime"), "noatime: '%s'",
			  e ? e->mount_options : "(missing)");
		e = find_mountpoint(t, at("strictatime"));
		CHECK_MSG(e && streq(e->mount_options, "rw"), "strictatime: '%s'",
			  e ? e->mount_options : "(missing)");
		e = find_mountpoint(t, at("nosymfollow"));
		CHECK_MSG(e && streq(e->mount_options, "rw,relatime,nosymfollow"),
			  "nosymfollow: '%s'", e ? e->mount_options : "(missing)");
		e = find_mountpoint(t, at("sb-ro-bind"));
		CHECK_MSG(e && streq(e->mount_options, "rw,relatime") &&
			      strncmp(e->super_options, "ro,", 3) == 0,
			  "rw mount of a ro superblock: '%s' '%s'",
			  e ? e->mount_options : "(missing)", e ? e->super_options : "");
		e = find_mountpoint(t, at("sb-flags"));
		CHECK_MSG(e && strncmp(e->super_options, "rw,sync,dirsync,lazytime", 24) == 0,
			  "sb flags: '%s'", e ? e->super_options : "(missing)");
		e = find_mountpoint(t, at("slave/inner"));
		CHECK_MSG(e != NULL, "no propagation copy at slave/inner");
		if (have_fuse) {
			e = find_mountpoint(t, at("fuse"));
			CHECK_MSG(e && streq(e->fstype, "fuse.hostile"), "fuse subtype: '%s'",
				  e ? e->fstype : "(missing)");
		}
		if (have_idmap) {
			e = find_mountpoint(t, at("idmapped"));
			CHECK_MSG(e && strstr(e->mount_options, ",idmapped"), "idmapped: '%s'",
				  e ? e->mount_options : "(missing)");
		}
		if (have_overlay) {
			e = find_mountpoint(t, at("overlay"));
			CHECK_MSG(e && strlen(e->super_options) > 16384,
				  "overlay options: %zu bytes", e ? strlen(e->super_options) : 0);
		}
	}
	test_chroot();
	r = in_slave_namespace(compare_as_slaves);
	CHECK_MSG(r == 0, "the hostile table differs in a slave namespace (%d)", r);
	if (fuse_fd >= 0)
		close(fuse_fd);
	return test_failures ? 1 : 0;
}

static int test_hostile(void)
{
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		printf("test-statmount --hostile: needs root: skipped\n");
		return EXIT_SKIP;
	}
	snprintf(base, sizeof(base), "/tmp/test-statmount.XXXXXX");
	if (!mkdtemp(base)) {
		fprintf(stderr, "mkdtemp: %m\n");
		return 1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int r = hostile_child();

		fflush(NULL);
		_exit(r < 0 ? 102 : r);
	}
	CHECK_MSG(pid > 0, "fork: %m");
	if (pid > 0 && waitpid(pid, &status, 0) == pid) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP) {
			rmdir(base);
			return EXIT_SKIP;
		}
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "hostile namespace test failed (status %#x)", status);
	}
	test_prefer_kernel();
	/* The namespaces and their mounts died with the children. */
	CHECK_MSG(rmdir(base) == 0, "rmdir %s: %m", base);
	return test_result("test-statmount --hostile");
}

int main(int argc, char **argv)
{
	if (argc > 1 && streq(argv[1], "--hostile"))
		return test_hostile();
	return test_live();
}
