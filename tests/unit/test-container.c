/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Attribution of a process to its container from /proc/PID/cgroup, with the paths the
 * runtimes really write (cgroup v2, v1 and hybrid), and the enumeration of namespaces. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe/container.h"
#include "probe/mntns.h"
#include "test.h"
#include "util/fileio.h"
#include "util/string-util.h"

#define ID1 "d6701ec289c56e4391acb11d07474b3139466857a305490575508a8b7a9fcf22"
#define ID2 "0ba8ac17e4e7a31fb82279503552fe94e64bab4745bf6fd2ff231e7c8ca8bed0"

/* PF_KTHREAD in field 9 of /proc/PID/stat. */
static bool is_kthread(pid_t pid)
{
	_cleanup_free_ char *text = NULL, *path = NULL;
	unsigned long flags = 0;
	const char *p;

	if (asprintf(&path, "/proc/%d/stat", (int)pid) < 0 ||
	    read_full_file(path, 4096, &text, NULL) < 0 || !(p = strrchr(text, ')')))
		return false;
	return sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x00200000UL);
}

/* A known-namespace callback that knows them all, and counts what it is asked. */
struct asked {
	uint64_t child, kthreadd;
	unsigned child_asked, kthreadd_asked, total;
};

static bool knows_all(void *userdata, uint64_t ino)
{
	struct asked *a = userdata;

	a->total++;
	a->child_asked += ino == a->child;
	a->kthreadd_asked += ino == a->kthreadd;
	return true;
}

/* A child in a mount namespace of its own, once it is there; it waits to be killed. */
static pid_t child_in_own_mntns(void)
{
	int ready[2];
	pid_t child;
	char c;

	EXPECT_INT(pipe2(ready, O_CLOEXEC), 0);
	child = fork();
	if (child == 0) {
		if (unshare(CLONE_NEWNS) < 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	EXPECT_INT(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return child;
}

/* A child of our mount namespace chrooted into dir, once it is there; it waits to be killed. */
static pid_t child_chrooted(const char *dir)
{
	int ready[2];
	pid_t child;
	char c;

	EXPECT_INT(pipe2(ready, O_CLOEXEC), 0);
	child = fork();
	if (child == 0) {
		if (chroot(dir) < 0 || chdir("/") < 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	EXPECT_INT(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return child;
}

/* What the cgroup file systems would say, told by names: the directory named userdata is
 * delegated (a user's); "gone" is no directory; the hierarchy "unmounted" cannot be checked. */
static int fake_trust(void *userdata, const struct cgroup_component *controllers,
		      const struct cgroup_component *comps, size_t n, bool *delegated)
{
	const char *owned = userdata;

	*delegated = false;
	if (controllers->n == 9 && memcmp(controllers->s, "unmounted", 9) == 0)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		if (comps[i].n == 4 && memcmp(comps[i].s, "gone", 4) == 0)
			return (int)i;
		if (owned && comps[i].n == strlen(owned) &&
		    memcmp(comps[i].s, owned, comps[i].n) == 0) {
			*delegated = true;
			return (int)(i + 1);
		}
	}
	return (int)n;
}

/* containerd's tasks, told by names: every id in the namespaces "default" and "k8s.io". */
static bool fake_task(void *userdata, const struct cgroup_component *ns,
		      const struct cgroup_component *id)
{
	(void)userdata;
	(void)id;
	return (ns->n == 7 && memcmp(ns->s, "default", 7) == 0) ||
	       (ns->n == 6 && memcmp(ns->s, "k8s.io", 6) == 0);
}

/* With the directory named delegated (NULL: none) delegated to a user; pod: the pod's uid. */
static void expect_full(const char *text, const char *delegated, const char *manager,
			const char *id, const char *name, const char *pod)
{
	struct container c;
	int r = container_from_cgroup(text, fake_trust, fake_task, (void *)delegated, &c);

	CHECK_MSG(r == (manager ? 1 : 0), "%s: returned %d", text, r);
	CHECK_MSG(streq_ptr(c.manager, manager), "%s: manager %s, expected %s", text,
		  c.manager ?: "(null)", manager ?: "(null)");
	CHECK_MSG(streq_ptr(c.id, id), "%s: id %s, expected %s", text, c.id ?: "(null)",
		  id ?: "(null)");
	CHECK_MSG(streq_ptr(c.name, name), "%s: name %s, expected %s", text, c.name ?: "(null)",
		  name ?: "(null)");
	CHECK_MSG(streq_ptr(c.pod_uid, pod), "%s: pod_uid %s, expected %s", text,
		  c.pod_uid ?: "(null)", pod ?: "(null)");
	container_done(&c);
}

static void expect_owned(const char *text, const char *delegated, const char *manager,
			 const char *id, const char *name)
{
	expect_full(text, delegated, manager, id, name, NULL);
}

static void expect_pod(const char *text, const char *manager, const char *id, const char *pod)
{
	expect_full(text, NULL, manager, id, NULL, pod);
}

static void expect(const char *text, const char *manager, const char *id, const char *name)
{
	expect_owned(text, NULL, manager, id, name);
}

/* fake_trust(), each call counted. */
static unsigned trust_calls;

static int counting_trust(void *userdata, const struct cgroup_component *controllers,
			  const struct cgroup_component *comps, size_t n, bool *delegated)
{
	trust_calls++;
	return fake_trust(userdata, controllers, comps, n, delegated);
}

/* The hierarchies walked for text (each a walk of the cgroup file system in the live oracle). */
static unsigned walks(const char *text, const char *manager, const char *id)
{
	struct container c;
	int r;

	trust_calls = 0;
	r = container_from_cgroup(text, counting_trust, fake_task, NULL, &c);
	CHECK_MSG(r == 1 && streq_ptr(c.manager, manager) && streq_ptr(c.id, id), "%s: %d, %s %s",
		  text, r, c.manager ?: "(null)", c.id ?: "(null)");
	container_done(&c);
	return trust_calls;
}

/* A trust that differs from one hierarchy to the next: a path cut, or delegated, at a depth
 * the hierarchy's name and the seed (userdata) choose. */
static int varied_trust(void *userdata, const struct cgroup_component *controllers,
			const struct cgroup_component *comps, size_t n, bool *delegated)
{
	unsigned h = *(const unsigned *)userdata;

	for (size_t i = 0; i < controllers->n; i++)
		h = h * 31 + (unsigned char)controllers->s[i];
	/* mixed, so that "ctl0" and "ctl1" differ in every bit used below */
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	*delegated = false;
	if ((h & 15) == 0)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		unsigned v = (h >> (4 + 3 * i)) & 7;

		if (v == 0)
			return (int)i;
		if (v == 1) {
			*delegated = true;
			return (int)(i + 1);
		}
	}
	return (int)n;
}

/* containerd's tasks, varied too: any namespace of an odd length, so that a runtime's own
 * component can be one. */
static bool varied_task(void *userdata, const struct cgroup_component *ns,
			const struct cgroup_component *id)
{
	(void)userdata;
	(void)id;
	return ns->n % 2 == 1;
}

static int rank_of(const struct container *c)
{
	if (!c->manager)
		return 0;
	if (streq(c->manager, "systemd"))
		return 1;
	return streq(c->manager, "delegated") ? 2 : 3;
}

/* A file's container is that of its best line, each line judged alone: a runtime over a
 * delegation over a service, and at the same rank the first with a unit. What the walks
 * container_from_cgroup() leaves out (settled()) must not change that. Random files of
 * hierarchies that often repeat the line before, over names every rule looks at. */
static void check_best_of_lines(void)
{
	static const char *const names[] = {
		"system.slice",
		"docker-" ID1 ".scope",
		"docker",
		ID1,
		ID2,
		"containerd",
		"default",
		"k8s.io",
		"libpod-" ID2 ".scope",
		"machine-web.scope",
		"user@1000.service",
		"cron.service",
		"kubepods",
		"pod2ca4a155-3599-498d-bb9d-4446693fa3ea",
		"lxc.payload.web",
		"lxc",
		"payload",
		"docker-" ID2 ".scope",
		"cri-containerd-" ID1,
	};
	unsigned seed = 1, differ = 0;

	for (unsigned round = 0; round < 20000; round++) {
		char text[4096], paths[8][512];
		struct container whole, best = { 0 };
		int lines = 1 + (int)(seed % 7), len = 0, best_rank = -1;
		unsigned trust_seed;

		seed = seed * 1103515245 + 12345;
		trust_seed = seed >> 8;
		for (int l = 0; l < lines; l++) {
			seed = seed * 1103515245 + 12345;
			if (l > 0 && (seed >> 16) % 2)
				memcpy(paths[l], paths[l - 1], sizeof(paths[l]));
			else {
				int depth = (int)((seed >> 8) % 5), p = 0;

				paths[l][0] = 0;
				for (int d = 0; d < depth; d++) {
					seed = seed * 1103515245 + 12345;
					p += snprintf(paths[l] + p, sizeof(paths[l]) - (size_t)p,
						      "/%s",
						      names[(seed >> 16) % ELEMENTSOF(names)]);
				}
				if (depth == 0)
					strcpy(paths[l], "/");
			}
			len += snprintf(text + len, sizeof(text) - (size_t)len, "%d:ctl%d:%s\n",
					lines - l, l, paths[l]);
		}
		EXPECT(container_from_cgroup(text, varied_trust, varied_task, &trust_seed,
					     &whole) >= 0);
		for (int l = 0; l < lines; l++) {
			char one[4200];
			struct container c;
			int rank;

			snprintf(one, sizeof(one), "%d:ctl%d:%s\n", lines - l, l, paths[l]);
			EXPECT(container_from_cgroup(one, varied_trust, varied_task, &trust_seed,
						     &c) >= 0);
			rank = rank_of(&c);
			if (rank > best_rank || (!best.unit && c.unit && rank == best_rank)) {
				container_done(&best);
				best = c;
				best_rank = rank;
			} else
				container_done(&c);
		}
		if (!streq_ptr(whole.manager, best.manager) || !streq_ptr(whole.id, best.id) ||
		    !streq_ptr(whole.name, best.name) || !streq_ptr(whole.unit, best.unit) ||
		    !streq_ptr(whole.pod_uid, best.pod_uid)) {
			if (differ++ < 5)
				CHECK_MSG(false, "%s: %s/%s, its best line %s/%s", text,
					  whole.manager ?: "-", whole.id ?: whole.name ?: "-",
					  best.manager ?: "-", best.id ?: best.name ?: "-");
		}
		container_done(&whole);
		container_done(&best);
	}
	EXPECT_INT(differ, 0);
}

/* A user's systemd instance, as systemd delegates it: user@1000.service is uid 1000's. */
#define USER_DIR    "user@1000.service"
#define USER_PREFIX "0::/user.slice/user-1000.slice/" USER_DIR

int main(void)
{
	/* A runtime found settles the file: the hierarchies after it are not walked, where they
	 * cannot change it (check_best_of_lines()). Ten v1 hierarchies of a docker container: */
	EXPECT_INT(walks("10:cpu:/system.slice/docker-" ID1 ".scope\n"
			 "9:memory:/system.slice/docker-" ID1 ".scope\n"
			 "8:pids:/system.slice/docker-" ID1 ".scope\n"
			 "1:name=systemd:/system.slice/docker-" ID1 ".scope\n"
			 "0::/system.slice/docker-" ID1 ".scope\n",
			 "docker", ID1),
		   1);
	/* the cgroupfs driver: no unit, the same path settles it */
	EXPECT_INT(walks("10:cpu:/docker/" ID1 "\n9:memory:/docker/" ID1
			 "\n1:name=systemd:/docker/" ID1 "\n0::/\n",
			 "docker", ID1),
		   2);
	/* a containerd task settles nothing: its path trusted one component less may say more */
	EXPECT_INT(walks("3:cpu:/default/web\n2:memory:/default/web\n", "containerd", "web"), 2);
	check_best_of_lines();
	/* docker, systemd driver (v2), and cgroupfs driver on a hybrid host */
	expect("0::/system.slice/docker-" ID1 ".scope\n", "docker", ID1, NULL);
	expect("12:memory:/docker/" ID1 "\n11:name=systemd:/docker/" ID1
	       "\n0::/system.slice/containerd.service\n",
	       "docker", ID1, NULL);
	/* rootless docker: below the user's delegated cgroup, where the user names everything */
	expect_owned(USER_PREFIX "/user.slice/docker-" ID1 ".scope\n", USER_DIR, "delegated", NULL,
		     USER_DIR);
	/* podman: rootful, rootless (delegated, as rootless docker), the split container cgroup,
	 * cgroupfs, and conmon alone */
	expect("0::/machine.slice/libpod-" ID1 ".scope\n", "podman", ID1, NULL);
	expect_owned(USER_PREFIX "/user.slice/libpod-" ID1 ".scope/container\n", USER_DIR,
		     "delegated", NULL, USER_DIR);
	expect("4:memory:/libpod_parent/libpod-" ID1 "\n0::/\n", "podman", ID1, NULL);
	expect("0::/machine.slice/libpod-conmon-" ID1 ".scope\n", NULL, NULL, NULL);
	/* kubernetes: containerd, CRI-O, docker under the systemd driver; cgroupfs; the pod's uid
	 * beside the container's id */
	expect_pod(
	    "0::/kubepods.slice/kubepods-burstable.slice/"
	    "kubepods-burstable-pod414cbe69_8d5a_4d9f_8ad4_6606f7f69e33.slice/cri-containerd-" ID2
	    ".scope\n",
	    "containerd", ID2, "414cbe69-8d5a-4d9f-8ad4-6606f7f69e33");
	expect_pod("13:freezer:/kubepods.slice/kubepods-burstable.slice/"
		   "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-" ID2
		   ".scope\n1:name=systemd:/kubepods.slice/kubepods-burstable.slice/"
		   "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-" ID2
		   ".scope\n",
		   "crio", ID2, "a5c1f8d5-1919-434d-add7-4afaafdaef89");
	expect_pod("0::/kubepods.slice/kubepods-besteffort.slice/"
		   "kubepods-besteffort-pod9692aa0e_748e_11e8_8dfa_76d458035df6.slice/docker-" ID1
		   ".scope\n",
		   "docker", ID1, "9692aa0e-748e-11e8-8dfa-76d458035df6");
	expect_pod("0::/kubepods/besteffort/pod2ca4a155-3599-498d-bb9d-4446693fa3ea/" ID2 "\n",
		   "unknown", ID2, "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	expect_pod("0::/kubepods/burstable/pod2ca4a155-3599-498d-bb9d-4446693fa3ea/crio-" ID2 "\n",
		   "crio", ID2, "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	/* the guaranteed class: no qos level, on either driver */
	expect_pod("0::/kubepods.slice/kubepods-pod2ca4a155_3599_498d_bb9d_4446693fa3ea.slice/"
		   "cri-containerd-" ID2 ".scope\n",
		   "containerd", ID2, "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	expect_pod("0::/kubepods/pod2ca4a155-3599-498d-bb9d-4446693fa3ea/" ID2 "\n", "unknown", ID2,
		   "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	/* kubepods below another cgroup (a kubelet with a --cgroup-root of its own) */
	expect_pod("0::/k8s.slice/kubepods.slice/kubepods-besteffort.slice/"
		   "kubepods-besteffort-pod2ca4a155_3599_498d_bb9d_4446693fa3ea.slice/"
		   "cri-containerd-" ID2 ".scope\n",
		   "containerd", ID2, "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	/* no pod unless its cgroup is a pod's, in kubepods, and the container's parent: a uid not
	 * a UUID (uppercase, short, quotes, a newline's worth of label), the wrong separator, a
	 * slice outside kubepods.slice, a class that is none, the pod not the parent */
	expect_pod(
	    "0::/kubepods.slice/kubepods-burstable.slice/"
	    "kubepods-burstable-pod414CBE69_8d5a_4d9f_8ad4_6606f7f69e33.slice/cri-containerd-" ID2
	    ".scope\n",
	    "containerd", ID2, NULL);
	expect_pod("0::/kubepods.slice/kubepods-burstable.slice/"
		   "kubepods-burstable-pod414cbe69_8d5a_4d9f_8ad4.slice/cri-containerd-" ID2
		   ".scope\n",
		   "containerd", ID2, NULL);
	expect_pod(
	    "0::/kubepods.slice/kubepods-burstable.slice/"
	    "kubepods-burstable-pod414cbe69_8d5a_4d9f_8ad4_6606f7f6\"}x.slice/cri-containerd-" ID2
	    ".scope\n",
	    "containerd", ID2, NULL);
	expect_pod(
	    "0::/kubepods.slice/kubepods-burstable.slice/"
	    "kubepods-burstable-pod414cbe69-8d5a-4d9f-8ad4-6606f7f69e33.slice/cri-containerd-" ID2
	    ".scope\n",
	    "containerd", ID2, NULL);
	expect_pod(
	    "0::/system.slice/kubepods-burstable.slice/"
	    "kubepods-burstable-pod414cbe69_8d5a_4d9f_8ad4_6606f7f69e33.slice/cri-containerd-" ID2
	    ".scope\n",
	    "containerd", ID2, NULL);
	expect_pod("0::/kubepods.slice/kubepods-evil.slice/"
		   "kubepods-evil-pod414cbe69_8d5a_4d9f_8ad4_6606f7f69e33.slice/cri-containerd-" ID2
		   ".scope\n",
		   "containerd", ID2, NULL);
	expect_pod("0::/kubepods.slice/kubepods-burstable.slice/"
		   "kubepods-burstable-pod414cbe69_8d5a_4d9f_8ad4_6606f7f69e33.slice/extra/"
		   "cri-containerd-" ID2 ".scope\n",
		   "containerd", ID2, NULL);
	expect_pod("0::/system.slice/pod2ca4a155-3599-498d-bb9d-4446693fa3ea/crio-" ID2 "\n",
		   "crio", ID2, NULL);
	/* cgroupfs kubepods needs the pod: an id below some other pod-named cgroup is nothing */
	expect_pod("0::/pods/pod2ca4a155-3599-498d-bb9d-4446693fa3ea/" ID2 "\n", NULL, NULL, NULL);
	/* a delegated user's cgroups named as a pod's: delegated, no pod */
	expect_full(USER_PREFIX "/kubepods.slice/kubepods-burstable.slice/"
				"kubepods-burstable-pod414cbe69_8d5a_4d9f_8ad4_6606f7f69e33.slice/"
				"cri-containerd-" ID2 ".scope\n",
		    USER_DIR, "delegated", NULL, USER_DIR, NULL);
	expect("0::/kubepods.slice/kubepods-besteffort.slice/"
	       "kubepods-besteffort-pod2ca4a155_3599_498d_bb9d_4446693fa3ea.slice/crio-conmon-" ID2
	       ".scope\n",
	       NULL, NULL, NULL);
	/* containerd without kubernetes: /containerd/<id>; ctr's /<namespace>/<id> (cgroupfs)
	 * when containerd has that task, on v2 and on every v1 hierarchy, also with cgroups the
	 * container made below its own; not a task: nothing (a name containerd would refuse is
	 * never asked about) */
	expect("0::/containerd/redis\n", "containerd", "redis", NULL);
	expect("0::/default/ptsct-plain-1\n", "containerd", "ptsct-plain-1", NULL);
	expect("9:name=systemd:/default/web.1\n8:pids:/default/web.1\n0::/\n", "containerd",
	       "web.1", NULL);
	expect("0::/default/web/init.scope\n", "containerd", "web", NULL);
	expect("0::/other/web\n", NULL, NULL, NULL);
	expect("0::/default/-web\n", NULL, NULL, NULL);
	expect("0::/default\n", NULL, NULL, NULL);
	/* ... outermost: a docker container inside a task is the task's */
	expect("0::/default/web/docker-" ID1 ".scope\n", "containerd", "web", NULL);
	/* ... and a task's path beside a service of the host is still the task */
	expect("0::/default/web\n1:name=systemd:/system.slice/cron.service\n", "containerd", "web",
	       NULL);
	/* docker inside kind (a container in a container): the outermost, the kind node, whose
	 * root names the cgroups inside; no pod (it is inside) */
	expect("0::/docker/" ID1 "/kubepods.slice/kubepods-besteffort.slice/"
	       "kubepods-besteffort-pod2ca4a155_3599_498d_bb9d_4446693fa3ea.slice/crio-" ID2
	       ".scope\n",
	       "docker", ID1, NULL);
	/* the outermost wins: a container naming a cgroup inside it like a runtime's is still
	 * itself */
	expect("0::/lxc.payload.evil/docker-" ID1 ".scope\n", "lxc", NULL, "evil");
	expect("0::/machine.slice/machine-deb12.scope/payload/libpod-" ID1 ".scope\n", "nspawn",
	       NULL, "deb12");
	/* a delegated user naming its cgroups like runtimes': delegated, never docker or lxc */
	expect_owned(USER_PREFIX "/lxc.payload.evil/docker-" ID1 ".scope\n", USER_DIR, "delegated",
		     NULL, USER_DIR);
	expect_owned("0::/delegated.slice/docker-" ID1 ".scope\n", "delegated.slice", "delegated",
		     NULL, "delegated.slice");
	/* ... also on a hybrid host, the v1 hierarchies at the user's slice */
	expect_owned("4:memory:/user.slice/user-1000.slice\n1:name=systemd:" USER_PREFIX
		     "/docker-" ID1 ".scope\n" USER_PREFIX "/docker-" ID1 ".scope\n",
		     USER_DIR, "delegated", NULL, USER_DIR);
	/* a runtime above the delegation point, or at it (unprivileged LXC: lxc.payload.<name>
	 * belongs to the container's root), is the runtime's */
	expect_owned("0::/machine.slice/machine-deb12.scope/payload/docker-" ID1 ".scope\n",
		     "payload", "nspawn", NULL, "deb12");
	expect_owned("0::/lxc.payload.web1/system.slice/docker-" ID1 ".scope\n", "lxc.payload.web1",
		     "lxc", NULL, "web1");
	/* a runtime's own directory delegated to its container's root: still the runtime's */
	expect_owned("0::/docker-" ID1 ".scope\n", "docker-" ID1 ".scope", "docker", ID1, NULL);
	/* a path that leads to no directory counts down to there; a hierarchy that cannot be
	 * checked is not used */
	expect_owned("0::/system.slice/gone/docker-" ID1 ".scope\n", NULL, NULL, NULL, NULL);
	expect_owned("0::/system.slice/gone/sshd.service\n", NULL, NULL, NULL, NULL);
	expect_owned("3:unmounted:/docker/" ID1 "\n0::/\n", NULL, NULL, NULL, NULL);
	/* newlines in a cgroup's name (the kernel prints it raw) forge a second line for a
	 * hierarchy: the file is not believed, whatever the forged line names */
	expect(USER_PREFIX "/x\n0::/system.slice/docker-" ID1 ".scope\n", "delegated", NULL, NULL);
	expect("4:memory:/x\n4:memory:/docker/" ID1 "\n0::/\n", "delegated", NULL, NULL);
	expect("4:memory:/x\n5:memory:/docker/" ID1 "\n0::/\n", "delegated", NULL, NULL);
	/* LXC 4+, nested units inside it, older LXC, and the monitor on the host's side */
	expect("0::/lxc.payload.web1\n", "lxc", NULL, "web1");
	expect("0::/lxc.payload.web-1/system.slice/systemd-logind.service\n", "lxc", NULL, "web-1");
	expect("5:devices:/lxc/build\n1:name=systemd:/lxc/build\n0::/\n", "lxc", NULL, "build");
	expect("0::/lxc.monitor.web1\n", NULL, NULL, NULL);
	/* systemd-nspawn: escaped names, the payload split */
	expect("0::/machine.slice/machine-foo\\x2dbar.scope/payload/init.scope\n", "nspawn", NULL,
	       "foo-bar");
	expect("0::/machine.slice/machine-deb12.scope\n", "nspawn", NULL, "deb12");
	/* a systemd service of its own namespace, also a user's */
	expect("0::/system.slice/systemd-logind.service\n", "systemd", NULL,
	       "systemd-logind.service");
	expect("0::/system.slice/system-getty.slice/getty\\x40tty1.service\n", "systemd", NULL,
	       "getty@tty1.service");
	expect("0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
	       "dbus-broker.service\n",
	       "systemd", NULL, "dbus-broker.service");
	/* ... where the user names its services: the delegation, not a service */
	expect_owned(USER_PREFIX "/app.slice/dbus-broker.service\n", USER_DIR, "delegated", NULL,
		     USER_DIR);
	/* nothing: a login session, the root, garbage */
	expect("0::/user.slice/user-1000.slice/session-3.scope\n", NULL, NULL, NULL);
	expect("0::/\n", NULL, NULL, NULL);
	expect("", NULL, NULL, NULL);
	expect("garbage without colons\n::\n0::\n", NULL, NULL, NULL);
	/* not 64 hex digits: not an id */
	expect("0::/system.slice/docker-1234.scope\n", NULL, NULL, NULL);

	{
		char s[] = "foo\\x2dbar\\x40x\\xZZ\\x00";

		unit_name_unescape(s);
		EXPECT_STR(s, "foo-bar@x\\xZZ\\x00");
	}
	{
		struct mntns_list l;
		struct stat st;

		EXPECT_INT(mntns_enumerate("/proc", NULL, NULL, &l), 0);
		EXPECT_INT(stat("/proc/self/ns/mnt", &st), 0);
		EXPECT_INT(l.self_ino, st.st_ino);
		EXPECT(l.pids_self >= 1);
		EXPECT(mntns_find(&l, l.self_ino) == NULL);
		for (size_t i = 0; i < l.n; i++) {
			/* Of our own namespace only its chroots are listed. */
			EXPECT(l.items[i].ino != l.self_ino || l.items[i].chroot);
			EXPECT(l.items[i].n_pids <= l.items[i].pids_total);
			EXPECT(mntns_find_root(&l, l.items[i].ino, l.items[i].root_dev,
					       l.items[i].root_ino) == &l.items[i]);
			if (!l.items[i].chroot)
				EXPECT(mntns_find(&l, l.items[i].ino) == &l.items[i]);
		}
		mntns_list_done(&l);
		EXPECT_INT(mntns_enumerate("/nonexistent", NULL, NULL, &l), -ENOENT);
	}
	/* A namespace's id says whether it still exists: yes while a process is in it, no once the
	 * last one has exited (what the daemon asks instead of walking /proc). */
	if (geteuid() == 0) {
		_cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		uint64_t id = 0, self_id = 0;
		struct stat st;
		pid_t child;

		child = child_in_own_mntns();
		if (mntns_id_of_pid(proc_fd, getpid(), &self_id) == -ENOTTY)
			fprintf(stderr, "NS_GET_MNTNS_ID not supported: ids not checked\n");
		else {
			EXPECT_INT(stat("/proc/self/ns/mnt", &st), 0);
			EXPECT_INT(mntns_id_of_pid(proc_fd, getpid(), &self_id),
				   (int64_t)st.st_ino);
			EXPECT(mntns_id_of_pid(proc_fd, child, &id) > 0);
			EXPECT(id != 0 && id != self_id);
			if (mntns_id_exists(self_id) < 0)
				fprintf(stderr,
					"listmount(2) of a namespace not supported: not checked\n");
			else {
				EXPECT_INT(mntns_id_exists(self_id), 1);
				EXPECT_INT(mntns_id_exists(id), 1);
				kill(child, SIGKILL);
				EXPECT_INT(waitpid(child, NULL, 0), child);
				child = 0;
				EXPECT_INT(mntns_id_exists(id), 0);
			}
		}
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
	}
	/* A namespace the caller knows from an earlier walk (the daemon's followed ones) is asked
	 * about once and listed as without it; kthreadd's, where its kernel threads are told apart
	 * by their own stat, is never asked. */
	if (geteuid() == 0) {
		struct asked a = { 0 };
		struct mntns_list l, plain;
		const struct mntns *ns;
		struct stat st;
		pid_t child;

		child = child_in_own_mntns();
		{
			char path[64];

			snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)child);
			EXPECT_INT(stat(path, &st), 0);
			a.child = st.st_ino;
		}
		if (stat("/proc/2/ns/mnt", &st) == 0 && is_kthread(2))
			a.kthreadd = st.st_ino;
		EXPECT_INT(mntns_enumerate("/proc", knows_all, &a, &l), 0);
		EXPECT_INT(mntns_enumerate("/proc", NULL, NULL, &plain), 0);
		EXPECT_INT(a.child_asked, 1);
		EXPECT_INT(a.kthreadd_asked, 0);
		EXPECT(a.total <= l.n);
		ns = mntns_find(&l, a.child);
		CHECK_MSG(ns != NULL, "the child's namespace %llu not listed",
			  (unsigned long long)a.child);
		if (ns) {
			EXPECT_INT(ns->pids_total, 1);
			EXPECT_INT(ns->n_pids, 1);
			EXPECT_INT(ns->pids[0], child);
			EXPECT(!ns->kernel);
		}
		ns = mntns_find(&plain, a.child);
		EXPECT(ns != NULL && ns->n_pids == 1 && ns->pids[0] == child);
		mntns_list_done(&l);
		mntns_list_done(&plain);
		kill(child, SIGKILL);
		EXPECT_INT(waitpid(child, NULL, 0), child);
	}
	/* Chroots in our own namespace are listed, one item for each distinct root, with the
	 * processes below it; our namespace at its own root is not. */
	if (geteuid() == 0) {
		char one[] = "/tmp/ptsguard-test-chroot-XXXXXX",
		     two[] = "/tmp/ptsguard-test-chroot-XXXXXX";
		const struct mntns *a, *b;
		struct mntns_list l;
		struct stat s1, s2;
		pid_t kids[3] = { 0 };

		EXPECT(mkdtemp(one) != NULL);
		EXPECT(mkdtemp(two) != NULL);
		EXPECT_INT(stat(one, &s1), 0);
		EXPECT_INT(stat(two, &s2), 0);
		kids[0] = child_chrooted(one);
		kids[1] = child_chrooted(one);
		kids[2] = child_chrooted(two);
		EXPECT_INT(mntns_enumerate("/proc", NULL, NULL, &l), 0);
		a = mntns_find_root(&l, l.self_ino, s1.st_dev, s1.st_ino);
		b = mntns_find_root(&l, l.self_ino, s2.st_dev, s2.st_ino);
		CHECK_MSG(a != NULL && b != NULL, "the chroots of our namespace not listed");
		if (a && b) {
			EXPECT(a->chroot && b->chroot);
			EXPECT_INT(a->pids_total, 2);
			EXPECT_INT(a->n_pids, 2);
			EXPECT(a->pids[0] == kids[0] && a->pids[1] == kids[1]);
			EXPECT_INT(b->pids_total, 1);
			EXPECT_INT(b->pids[0], kids[2]);
		}
		EXPECT(mntns_find(&l, l.self_ino) == NULL);
		mntns_list_done(&l);
		for (int i = 0; i < 3; i++) {
			kill(kids[i], SIGKILL);
			EXPECT_INT(waitpid(kids[i], NULL, 0), kids[i]);
		}
		EXPECT_INT(rmdir(one), 0);
		EXPECT_INT(rmdir(two), 0);
	}
	/* Seen from a mount namespace of our own, the kernel threads are another namespace's
	 * processes (kthreadd's): none of them may be a candidate to audit it through. */
	if (geteuid() == 0 && is_kthread(2) && unshare(CLONE_NEWNS) == 0) {
		struct mntns_list l;
		struct stat st;
		const struct mntns *init;

		EXPECT_INT(stat("/proc/2/ns/mnt", &st), 0);
		EXPECT_INT(mntns_enumerate("/proc", NULL, NULL, &l), 0);
		init = mntns_find(&l, st.st_ino);
		CHECK_MSG(init != NULL, "kthreadd's namespace %llu not listed",
			  (unsigned long long)st.st_ino);
		if (init) {
			EXPECT(init->pids_total > init->n_pids); /* kernel threads counted ... */
			for (unsigned i = 0; i < init->n_pids; i++)
				CHECK_MSG(!is_kthread(init->pids[i]),
					  "kernel thread %d is a candidate", (int)init->pids[i]);
		}
		mntns_list_done(&l);
	}
	return test_result("test-container");
}
