/*
 * check_child.c: check_config in a short-lived child process.
 *
 * Connecting and preparing every statement leaves its traces in a
 * process: the heap the client library and the checks used, and the pages
 * of its code they ran through, kept for the rest of the process's life.
 * The supervisor lives long and never queries the database itself, so the
 * check of `rowq run` and `rowq drain` at start-up and the check of every
 * reload run in a child that exits with the verdict.  (The supervisor does
 * initialise the client library, once, for its workers: db_library_init.)
 * `rowq check` is short-lived and checks in its own process.
 */
#include "rowq.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child: check, and say how it went in the exit status. */
static _Noreturn void
checker_child(const struct config *cfg, const struct checker *how,
    pid_t parent)
{
	enum check_verdict verdict;

	if (how->close_fd != -1)
		close(how->close_fd);
	proc_child_signals();
	/* A check that outlives its parent would only hold a connection. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(ROWQ_EXIT_FAILURE);
	if (how->name != NULL)
		log_procinit("%s", how->name);
	proc_title("rowq: checking %s", cfg->path);
	if (how->error != NULL)
		log_capture(how->error, how->errlen);
	verdict = check_config(cfg, false);
	_exit(verdict == CHECK_PASSED ? ROWQ_EXIT_OK :
	    verdict == CHECK_UNREACHABLE ? ROWQ_EXIT_FAILURE : ROWQ_EXIT_CONFIG);
}

pid_t
checker_start(const struct config *cfg, const struct checker *how)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0)
		checker_child(cfg, how, parent);
	return pid;
}

/*
 * A check child's wait status as check_config's verdict, and CHECK_DIED
 * when it ended any other way.
 */
enum check_verdict
checker_verdict(int status)
{
	if (!WIFEXITED(status))
		return CHECK_DIED;
	switch (WEXITSTATUS(status)) {
	case ROWQ_EXIT_OK:
		return CHECK_PASSED;
	case ROWQ_EXIT_CONFIG:
		return CHECK_PROBLEMS;
	case ROWQ_EXIT_FAILURE:
		return CHECK_UNREACHABLE;
	default:
		return CHECK_DIED;
	}
}

/*
 * Check in a child and wait for it: check_config's result, without its
 * libraries' pages in this process.  A check that cannot be forked or that
 * dies counts as a database that could not be reached, so that `rowq run`
 * tries again: never CHECK_DIED.
 */
enum check_verdict
checker_run(const struct config *cfg, const struct checker *how)
{
	pid_t pid = checker_start(cfg, how);
	struct buf why = { 0 };
	enum check_verdict verdict;
	int status;

	if (pid == -1) {
		log_warn("fork for the check of %s", cfg->path);
		return CHECK_UNREACHABLE;
	}
	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR)
			fatal("waitpid for the check of %s", cfg->path);
	}
	verdict = checker_verdict(status);
	if (verdict != CHECK_DIED)
		return verdict;
	describe_wait_status(status, &why);
	log_error("%s: the check ended badly (%s)", cfg->path, why.data);
	buf_free(&why);
	return CHECK_UNREACHABLE;
}
