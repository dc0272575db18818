/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /etc/fstab text: the one fstab parser (snapshot/fstab.h) over the raw bytes, then the whole audit
 * with it as the snapshot's fstab (the fstab-devpts-options check reads it through the same
 * parser). */
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "snapshot/fstab.h"

static const char mountinfo[] = "24 1 0:5 / /dev rw - devtmpfs udev rw\n"
				"29 24 0:26 / /dev/pts rw - devpts devpts rw,gid=5,mode=620\n";

/* Every entry has its three fields, none longer than the input, in ascending line order. */
static void parse_raw(const uint8_t *data, size_t size)
{
	struct fstab_iter it;
	struct fstab_entry e;
	unsigned last = 0;
	int r;

	fstab_iter_init(&it, (const char *)data, size);
	while ((r = fstab_iter_next(&it, &e)) > 0) {
		if (!e.spec || !e.file || !e.vfstype || e.line <= last || strlen(e.spec) > size ||
		    strlen(e.file) > size || strlen(e.vfstype) > size ||
		    (e.options && strlen(e.options) > size))
			abort();
		last = e.line;
	}
	fstab_iter_done(&it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot *s;
	struct parse_error err;
	char *text;

	parse_raw(data, size);

	s = snapshot_new();
	text = strdup(mountinfo);
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
