/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Snapshot JSON from another host: the loader, every check, every sink, and a round trip. */
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "snapshot/snapshot-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot *s = NULL, *again = NULL;
	struct load_error err;
	json_object *o;
	char *text;

	if (snapshot_parse((const char *)data, size, &s, &err) < 0)
		return 0;
	fuzz_audit(s);
	o = snapshot_to_json(s);
	text = json_to_text(o, 0);
	json_object_put(o);
	if (text && snapshot_parse(text, strlen(text), &again, &err) < 0)
		abort(); /* what we write must read back */
	free(text);
	snapshot_free(again);
	snapshot_free(s);
	return 0;
}
