/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /etc/fstab text: the fstab-devpts-options check's own line parser. */
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"

static const char mountinfo[] = "24 1 0:5 / /dev rw - devtmpfs udev rw\n"
				"29 24 0:26 / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot *s = snapshot_new();
	struct parse_error err;
	char *text = strdup(mountinfo);

	if (!s || !text || snapshot_set_mountinfo(s, text, strlen(mountinfo), &err) < 0) {
		snapshot_free(s);
		return 0;
	}
	s->kernel_release = strdup("6.1.0");
	s->fstab = malloc(size + 1);
	if (s->fstab) {
		memcpy(s->fstab, data, size);
		s->fstab[size] = 0;
		fuzz_add_nodes(s);
		fuzz_audit(s);
	}
	snapshot_free(s);
	return 0;
}
