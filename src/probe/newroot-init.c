/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/newroot-init.h"
#include "util/fileio.h"
#include "util/path.h"
#include "util/string-util.h"

#define LINKS_MAX 40
/* The rc scripts read for their settings (Debian's are a few KiB). */
#define RC_SCRIPT_SIZE_MAX (64u << 10)

/* path (absolute) as the new root will see it: every symlink on the way resolved inside root,
 * an absolute target from root's top. *ret is the path inside root ("/usr/lib/systemd/systemd").
 * -ENOENT when something on the way is missing, -ELOOP after LINKS_MAX links. */
static int resolve_in_root(const char *root, const char *path, char **ret)
{
	_cleanup_free_ char *done = strdup(""), *todo = strdup(path);
	unsigned links = 0;

	if (!done || !todo)
		return -ENOMEM;
	while (*todo) {
		char *rest = todo + strspn(todo, "/"), *end = rest + strcspn(rest, "/");
		_cleanup_free_ char *comp = strndup(rest, (size_t)(end - rest)), *next = NULL,
				    *full = NULL;
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (!comp)
			return -ENOMEM;
		if (!*comp)
			break;
		if (streq(comp, ".")) {
			memmove(todo, end, strlen(end) + 1);
			continue;
		}
		if (streq(comp, "..")) {
			char *slash = strrchr(done, '/');

			if (slash)
				*slash = 0;
			memmove(todo, end, strlen(end) + 1);
			continue;
		}
		if (asprintf(&next, "%s/%s", done, comp) < 0 ||
		    asprintf(&full, "%s%s", root, next) < 0)
			return -ENOMEM;
		if (lstat(full, &st) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode)) {
			free(done);
			done = TAKE_PTR(next);
			memmove(todo, end, strlen(end) + 1);
			continue;
		}
		if (++links > LINKS_MAX)
			return -ELOOP;
		n = readlink(full, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = 0;
		if (target[0] == '/')
			done[0] = 0;
		free(next);
		if (asprintf(&next, "%s/%s", target, end) < 0)
			return -ENOMEM;
		free(todo);
		todo = TAKE_PTR(next);
	}
	*ret = *done ? TAKE_PTR(done) : strdup("/");
	return *ret ? 0 : -ENOMEM;
}

/* Is path (inside root) there, of the type wanted (S_IFREG, S_IFDIR; 0 for any)? */
static bool exists_in_root(const char *root, const char *path, mode_t type)
{
	_cleanup_free_ char *in = NULL, *full = NULL;
	struct stat st;

	if (resolve_in_root(root, path, &in) < 0 || !(full = path_join(root, in)) ||
	    stat(full, &st) < 0)
		return false;
	return !type || (st.st_mode & S_IFMT) == type;
}

/* The next word of the kernel command line at *p, its length in *n; NULL at the end or at "--",
 * after which the words are init's arguments, not parameters. */
static const char *cmdline_word(const char **p, size_t *n)
{
	const char *w;

	if (!*p)
		return NULL;
	w = *p + strspn(*p, " \t\n");
	*n = strcspn(w, " \t\n");
	*p = w + *n;
	if (*n == 0 || (*n == 2 && strncmp(w, "--", 2) == 0))
		return NULL;
	return w;
}

/* The value of the last word key=VALUE of the command line, malloc'ed; NULL when absent. */
static char *cmdline_value(const char *cmdline, const char *key)
{
	size_t k = strlen(key), n;
	char *found = NULL;

	for (const char *p = cmdline, *w; (w = cmdline_word(&p, &n));)
		if (n > k && strncmp(w, key, k) == 0 && w[k] == '=') {
			free(found);
			found = strndup(w + k + 1, n - k - 1);
		}
	return found;
}

/* Is unit masked by a systemd.mask= word (the unit's name, with or without .service)? */
static bool cmdline_masks(const char *cmdline, const char *unit)
{
	static const char key[] = "systemd.mask=";
	size_t u = strlen(unit), k = strlen(key), n;

	for (const char *p = cmdline, *w; (w = cmdline_word(&p, &n));) {
		const char *v = w + k;

		if (n <= k || strncmp(w, key, k) != 0 || strncmp(v, unit, u) != 0)
			continue;
		if (n - k == u || (n - k == u + 8 && strncmp(v + u, ".service", 8) == 0))
			return true;
	}
	return false;
}

static bool false_word(const char *v)
{
	return v && (streq(v, "0") || streq(v, "no") || streq(v, "n") || streq(v, "false") ||
		     streq(v, "off"));
}

/* N of the first libsystemd-shared-N[.x...].so in dir (inside root); 0 when none. */
static unsigned shared_version_in(const char *root, const char *dir)
{
	_cleanup_free_ char *in = NULL, *full = NULL;
	unsigned version = 0;
	struct dirent *de;
	DIR *d;

	if (resolve_in_root(root, dir, &in) < 0 || !(full = path_join(root, in)))
		return 0;
	d = opendir(full);
	if (!d)
		return 0;
	while (!version && (de = readdir(d))) {
		const char *v = de->d_name;

		if (strncmp(v, "libsystemd-shared-", 18) != 0 || !strstr(v, ".so"))
			continue;
		v += 18;
		while (*v >= '0' && *v <= '9' && version < 100000)
			version = version * 10 + (unsigned)(*v++ - '0');
	}
	closedir(d);
	return version;
}

/* The version of the systemd at path (inside root): its private library sits beside it, in
 * lib64 (Fedora) or in the multiarch directory (Debian's /usr/lib/x86_64-linux-gnu/systemd). */
static unsigned systemd_version(const char *root, const char *path)
{
	_cleanup_free_ char *dir = path_dirname(path), *usrlib = path_join(root, "usr/lib");
	unsigned v = 0;
	struct dirent *de;
	DIR *d;

	if (dir && (v = shared_version_in(root, dir)))
		return v;
	if ((v = shared_version_in(root, "/usr/lib/systemd")) ||
	    (v = shared_version_in(root, "/usr/lib64/systemd")))
		return v;
	d = usrlib ? opendir(usrlib) : NULL;
	while (d && !v && (de = readdir(d))) {
		_cleanup_free_ char *multi = NULL;

		if (strstr(de->d_name, "-linux-") &&
		    asprintf(&multi, "/usr/lib/%s/systemd", de->d_name) >= 0)
			v = shared_version_in(root, multi);
	}
	if (d)
		closedir(d);
	return v;
}

/* Whether systemd-remount-fs.service runs at boot, and why not (set_printf into *off). */
static int remount_fs_runs(const char *root, const char *cmdline, char **off)
{
	static const char unit[] = "systemd-remount-fs";
	_cleanup_free_ char *mask =
				path_join(root, "etc/systemd/system/systemd-remount-fs.service"),
			    *fstab = cmdline_value(cmdline, "fstab");
	char target[PATH_MAX];
	ssize_t n;

	if (!mask)
		return -ENOMEM;
	if (!exists_in_root(root, "/usr/lib/systemd/system/systemd-remount-fs.service", S_IFREG) &&
	    !exists_in_root(root, "/lib/systemd/system/systemd-remount-fs.service", S_IFREG))
		return set_printf(off, "the new root has no systemd-remount-fs.service") < 0
			   ? -ENOMEM
			   : 0;
	n = readlink(mask, target, sizeof(target) - 1);
	if (n >= 0 && (target[n] = 0, streq(target, "/dev/null")))
		return set_printf(off, "systemd-remount-fs.service is masked in "
				       "/etc/systemd/system") < 0
			   ? -ENOMEM
			   : 0;
	if (cmdline_masks(cmdline, unit))
		return set_printf(off, "systemd.mask= on the kernel command line masks "
				       "systemd-remount-fs.service") < 0
			   ? -ENOMEM
			   : 0;
	/* Pulled in statically (older releases), or by systemd-fstab-generator, which fstab=no
	 * turns off. */
	if (false_word(fstab) &&
	    !exists_in_root(
		root, "/usr/lib/systemd/system/local-fs.target.wants/systemd-remount-fs.service",
		0) &&
	    !exists_in_root(
		root, "/lib/systemd/system/local-fs.target.wants/systemd-remount-fs.service", 0))
		return set_printf(off,
				  "fstab=%s on the kernel command line: nothing pulls in "
				  "systemd-remount-fs.service",
				  fstab) < 0
			   ? -ENOMEM
			   : 0;
	return 1;
}

/* The assignment NAME=VALUE that starts a line of a shell file (the first one, or the last: a
 * sourced file's last assignment wins), its value unquoted into buf: 1 when the value is a
 * number, -EINVAL when it is something else, 0 when there is none. */
static int sh_number(const char *text, const char *name, bool first, char buf[static 16])
{
	size_t n = strlen(name);
	int found = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *v = l + strspn(l, " \t");
		char quote = 0;
		size_t len;
		bool ends;

		if (strncmp(v, name, n) != 0 || v[n] != '=')
			continue;
		v += n + 1;
		if (*v == '"' || *v == '\'')
			quote = *v++;
		len = strspn(v, "0123456789");
		ends = quote ? v[len] == quote : !v[len] || strchr(" \t\n;#", v[len]);
		found = len > 0 && len < 16 && ends ? 1 : -EINVAL;
		if (found > 0) {
			memcpy(buf, v, len);
			buf[len] = 0;
		}
		if (first)
			break;
	}
	return found;
}

/* Under sysvinit or OpenRC, Debian's initscripts remount /dev/pts early: checkroot.sh runs
 * "mountdevsubfs.sh reload", which runs mount -o remount with gid=$TTYGRP,mode=$TTYMODE and then
 * the options of fstab's line for it (unless that line says noauto). TTYGRP and TTYMODE are the
 * script's own (5 and 620), then those of /etc/default/devpts, which it sources (Debian ships
 * TTYMODE=600). *ret: "gid=G,mode=M", or NULL when the root has no such scripts or a value is
 * not a number (the remount would fail and change nothing). */
static int rc_devpts_read(const char *root, char **ret)
{
	_cleanup_free_ char *script = NULL, *defaults = NULL;
	char grp[16], mode[16];
	int r;

	*ret = NULL;
	if (!exists_in_root(root, "/etc/init.d/checkroot.sh", S_IFREG) ||
	    read_file_in_root(root, "etc/init.d/mountdevsubfs.sh", RC_SCRIPT_SIZE_MAX, &script) < 0)
		return 0;
	if (sh_number(script, "TTYGRP", true, grp) <= 0 ||
	    sh_number(script, "TTYMODE", true, mode) <= 0)
		return 0;
	r = read_file_in_root(root, "etc/default/devpts", RC_SCRIPT_SIZE_MAX, &defaults);
	if (r == -ENOMEM)
		return r;
	if (r >= 0 && (sh_number(defaults, "TTYGRP", false, grp) < 0 ||
		       sh_number(defaults, "TTYMODE", false, mode) < 0))
		return 0;
	return asprintf(ret, "gid=%s,mode=%s", grp, mode) < 0 ? -ENOMEM : 0;
}

int newroot_init_read(const char *newroot, const char *cmdline, struct initramfs_init *ret)
{
	_cleanup_free_ char *init = cmdline_value(cmdline, "init"), *path = NULL;
	const char *base;
	int r;

	*ret = (struct initramfs_init){ .kind = INIT_UNKNOWN, .remount_fs = -1 };
	if (!init && !(init = strdup("/sbin/init")))
		return -ENOMEM;
	r = resolve_in_root(newroot, init[0] == '/' ? init : "/sbin/init", &path);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || !exists_in_root(newroot, path, S_IFREG))
		return 0;
	base = strrchr(path, '/') + 1;
	if (streq(base, "systemd")) {
		ret->kind = INIT_SYSTEMD;
		ret->systemd_version = systemd_version(newroot, path);
		r = remount_fs_runs(newroot, cmdline, &ret->remount_fs_off);
		if (r < 0)
			return r;
		ret->remount_fs = r;
	} else if (streq(base, "openrc-init") || exists_in_root(newroot, "/sbin/openrc", S_IFREG))
		ret->kind = INIT_OPENRC;
	else if (exists_in_root(newroot, "/sbin/initctl", S_IFREG) &&
		 exists_in_root(newroot, "/etc/init", S_IFDIR))
		ret->kind = INIT_UPSTART;
	else if (exists_in_root(newroot, "/etc/inittab", S_IFREG))
		ret->kind = INIT_SYSVINIT;
	if (ret->kind == INIT_SYSVINIT || ret->kind == INIT_OPENRC) {
		r = rc_devpts_read(newroot, &ret->rc_devpts);
		if (r < 0)
			return r;
	}
	ret->path = TAKE_PTR(path);
	return 0;
}
