/*
 * fuzz_config: libFuzzer target for config_load, the one parser of input
 * that comes from outside the database.
 *
 * Each input is written to fuzz.yaml in a private directory and loaded;
 * whatever it holds, config_load must return a configuration or NULL,
 * without a crash, a sanitizer report or a leak (ASan's leak checker runs
 * at the end).  Built with clang's -fsanitize=fuzzer,address,undefined by
 * `make build/fuzz/fuzz_config`; `make torture` runs it for a bounded time
 * on the corpus in tests/fuzz/corpus, which it then keeps.
 *
 * The loader logs every problem to stderr: run with -close_fd_mask=2, so
 * that libFuzzer's and the sanitizers' reports stay and rowq's messages
 * go.  Inputs may name other files (include:, password_file:); they are
 * read-only to config_load, and standard input should be /dev/null.
 */
#include "rowq.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	fuzz_dir[PATH_MAX - 16];
static char	fuzz_path[PATH_MAX];

/* The private directory goes at exit, so that runs leave nothing behind. */
static void
remove_fuzz_dir(void)
{
	unlink(fuzz_path);
	rmdir(fuzz_dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/rowq-fuzz-XXXXXX",
	    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(fuzz_dir) == NULL)
		abort();
	atexit(remove_fuzz_dir);
	/* Not chdir: libFuzzer opens the corpus by relative paths later. */
	snprintf(fuzz_path, sizeof(fuzz_path), "%s/fuzz.yaml", fuzz_dir);
	/* A credential: key needs it to say something other than "unset". */
	setenv("CREDENTIALS_DIRECTORY", fuzz_dir, 1);
	log_init("fuzz");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg;
	int fd;

	fd = open(fuzz_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1)
		abort();
	for (size_t off = 0; off < size;) {
		ssize_t n = write(fd, data + off, size - off);
		if (n <= 0)
			abort();
		off += (size_t)n;
	}
	close(fd);
	cfg = config_load(fuzz_path);
	if (cfg != NULL) {
		/* What a valid configuration is used for before any database. */
		for (size_t i = 0; i < cfg->nqueues; i++) {
			const struct queue *q = &cfg->queues[i];
			if (config_queue(cfg, q->name) != q)
				abort();
			char *claim = sql_claim(q->select.positional, q->batch);
			free(claim);
		}
		config_free(cfg);
	}
	return 0;
}
