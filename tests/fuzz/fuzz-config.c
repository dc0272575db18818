/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A configuration file as root might write it, broken in every way: libeconf's reader and our
 * validation of every section, key and value. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/conf.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *c = NULL;
	struct config_error err;
	char path[64];
	int fd = memfd_create("ptsguard.conf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (config_load(path, &c, &err) == 0)
			config_free(c);
	}
	close(fd);
	return 0;
}
