/* SPDX-License-Identifier: GPL-2.0-or-later */
#define SYSTEMD_DL_NO_REDIRECT
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "util/systemd-dl.h"

#define SYSTEMD_DL_DEFINE(lib, name) __typeof__(name) *systemd_dl_##name;
SYSTEMD_DL_FUNCTIONS(SYSTEMD_DL_DEFINE)
#undef SYSTEMD_DL_DEFINE

/* The sonames ptsguard was built against: both have kept theirs since 2014 and 2012. */
static const char *const sonames[] = { "libsystemd.so.0", "libudev.so.1" };
enum { SYSTEMD, UDEV };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int result;
static char message[256];

static void load(void)
{
	void *handles[2];

	for (size_t i = 0; i < 2; i++) {
		/* Never unloaded: the pointers stay good for the process's life. */
		handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (!handles[i]) {
			const char *e = dlerror();

			snprintf(message, sizeof(message), "cannot load %s: %s", sonames[i],
				 e ? e : "unknown error");
			result = -ELIBACC;
			return;
		}
	}
#define SYSTEMD_DL_RESOLVE(lib, name)                                                              \
	*(void **)&systemd_dl_##name = dlsym(handles[lib], #name);                                 \
	if (!systemd_dl_##name) {                                                                  \
		snprintf(message, sizeof(message),                                                 \
			 "%s has no %s (libsystemd 243 or later needed)", sonames[lib], #name);    \
		result = -ELIBACC;                                                                 \
		return;                                                                            \
	}
	SYSTEMD_DL_FUNCTIONS(SYSTEMD_DL_RESOLVE)
#undef SYSTEMD_DL_RESOLVE
}

int systemd_dl_load(const char **error)
{
	(void)pthread_once(&once, load);
	if (error)
		*error = result < 0 ? message : NULL;
	return result;
}
