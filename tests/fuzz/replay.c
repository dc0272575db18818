/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Replays files (or every file of directories) through a fuzz target's entry
 * point without libFuzzer, so the normal test suite, under the sanitizer
 * build, runs the seed corpus and every crasher ever found.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz-common.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/path.h"

static int replay_file(const char *path)
{
	_cleanup_free_ char *data = NULL;
	size_t size;

	if (read_full_file(path, 64 << 20, &data, &size) < 0) {
		fprintf(stderr, "cannot read %s\n", path);
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)data, size);
	return 1;
}

int main(int argc, char **argv)
{
	size_t n = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "missing %s\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			n++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d)
			return 1;
		while ((de = readdir(d))) {
			_cleanup_free_ char *p = NULL;

			if (de->d_name[0] == '.')
				continue;
			p = path_join(argv[i], de->d_name);
			if (!p || replay_file(p) < 0) {
				closedir(d);
				return 1;
			}
			n++;
		}
		closedir(d);
	}
	printf("replayed %zu inputs\n", n);
	return n > 0 ? 0 : 1;
}
