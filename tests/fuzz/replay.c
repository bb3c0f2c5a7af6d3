/*
 * replay: run the fuzz target over files without libFuzzer, so that the
 * checked-in corpus is a regression test in `make check` (built with gcc
 * and ASan from the same objects as build/asan/rowq):
 *
 *     build/fuzz/replay_config tests/fuzz/corpus/FILE...
 *
 * Exits 0 when every file loaded without a sanitizer report; ASan's leak
 * checker runs at exit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
main(int argc, char **argv)
{
	int n = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *data = NULL;
		size_t len = 0, cap = 0, got;

		if (f == NULL) {
			perror(argv[i]);
			return 2;
		}
		do {
			if (len == cap) {
				cap = cap ? cap * 2 : 65536;
				if ((data = realloc(data, cap)) == NULL)
					return 2;
			}
			got = fread(data + len, 1, cap - len, f);
			len += got;
		} while (got > 0);
		fclose(f);
		LLVMFuzzerTestOneInput(data, len);
		free(data);
		n++;
	}
	fprintf(stdout, "replay: %d inputs\n", n);
	return 0;
}
