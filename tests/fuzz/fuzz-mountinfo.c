/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mountinfo text from anywhere: the parser, then the analysis of whatever table it accepts. */
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot *s = snapshot_new();
	struct parse_error err;
	char *text = malloc(size + 1);

	if (!s || !text) {
		free(text);
		snapshot_free(s);
		return 0;
	}
	memcpy(text, data, size);
	text[size] = 0;
	s->kernel_release = strdup(size && data[0] & 1 ? "3.10.0" : "6.1.0");
	if (snapshot_set_mountinfo(s, text, size, &err) == 0) {
		fuzz_add_nodes(s);
		fuzz_audit(s);
	}
	snapshot_free(s);
	return 0;
}
