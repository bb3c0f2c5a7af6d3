/*
 * proc.c: clocks, signals read through a descriptor, and process titles.
 *
 * Supervisor and workers block the signals they care about and read them
 * from a signalfd inside poll(), so that no signal is lost between a check
 * of a flag and a sleep.  Children undo this before anything else.
 */
#include "rowq.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
proc_signalfd(const int *signals, size_t n)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	for (size_t i = 0; i < n; i++)
		sigaddset(&set, signals[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		fatal("sigprocmask");
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd == -1)
		fatal("signalfd");
	return fd;
}

/*
 * Every signal back to its default and unblocked: a blocked SIGTERM or an
 * ignored SIGPIPE would otherwise survive exec into a handler.  Only
 * async-signal-safe calls, since it runs in a vfork child.
 */
void
proc_child_signals(void)
{
	sigset_t none;
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		(void)sigaction(sig, &dfl, NULL);
	}
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * Close every descriptor from 3 up.  For a child forked to run rowq's own
 * code (a worker, the metrics probe), which never execs, so that O_CLOEXEC
 * does not help: the supervisor's signalfd, its status and metrics
 * listeners and their clients are not the child's to hold.
 */
void
proc_close_inherited(void)
{
	if (syscall(SYS_close_range, 3U, ~0U, 0) == -1)
		for (int fd = 3; fd < 4096; fd++)
			(void)close(fd);
}

/*
 * As proc_close_inherited, but one descriptor is kept, as PROC_KEPT_FD
 * (close-on-exec, so that no handler inherits it); -1: none kept.
 */
void
proc_close_inherited_but(int keep)
{
	if (keep >= 0 && keep != PROC_KEPT_FD &&
	    dup3(keep, PROC_KEPT_FD, O_CLOEXEC) == -1)
		keep = -1;
	if (keep < 0) {
		proc_close_inherited();
		return;
	}
	(void)fcntl(PROC_KEPT_FD, F_SETFD, FD_CLOEXEC);
	if (syscall(SYS_close_range, PROC_KEPT_FD + 1U, ~0U, 0) == -1)
		for (int fd = PROC_KEPT_FD + 1; fd < 4096; fd++)
			(void)close(fd);
}

/*
 * The start of a helper child of the supervisor that runs rowq's own code
 * (the metrics probe, a prune run, the pause and wake watchers): none of
 * the supervisor's descriptors or signal setup, SIGPIPE ignored (a
 * database that hangs up is a failed read, not a death), and it dies with
 * the supervisor, even one that died before PR_SET_PDEATHSIG was set.
 */
void
proc_helper_child(pid_t parent)
{
	proc_close_inherited();
	proc_child_signals();
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
}

/*
 * Standard input, output and error open, on /dev/null where they were
 * closed: else the next descriptor opened (a signalfd, a socket) would
 * take their number, and a stray write to stdout or stderr would land in
 * it.  First thing in main; on failure there is nowhere to say so.
 */
void
proc_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		int null = open("/dev/null", O_RDWR);
		if (null == -1)
			_exit(ROWQ_EXIT_FAILURE);
		if (null != fd) {
			/* The lowest free one is fd, unless something raced. */
			(void)dup2(null, fd);
			(void)close(null);
		}
	}
}

void
stopper_init(struct stopper *s, bool term_aborts)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1 };

	memset(s, 0, sizeof(*s));
	s->term_aborts = term_aborts;
	s->stop_deadline_ms = INT64_MAX;
	s->fd = proc_signalfd(sigs, sizeof(sigs) / sizeof(sigs[0]));
}

/*
 * A deadline travels as a signal's int (sigqueue): its low 31 bits, read
 * back as the time nearest to the reader's clock with those bits, which
 * is exact while the two are less than 2^30 ms (12 days) apart; a
 * deadline farther than PROC_DEADLINE_SPAN_MS is sent as that.
 */
int
proc_deadline_encode(int64_t deadline_ms, int64_t now)
{
	if (deadline_ms - now > PROC_DEADLINE_SPAN_MS)
		deadline_ms = now + PROC_DEADLINE_SPAN_MS;
	return (int)(deadline_ms & INT32_MAX);
}

int64_t
proc_deadline_decode(int value, int64_t now)
{
	const int64_t span = (int64_t)1 << 31;
	int64_t t = (now & ~(int64_t)INT32_MAX) | (int64_t)value;

	if (t > now + span / 2)
		t -= span;
	else if (t < now - span / 2)
		t += span;
	return t;
}

void
stopper_read(struct stopper *s)
{
	struct signalfd_siginfo si;

	while (read(s->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			s->stop = true;
			if (si.ssi_code == SI_QUEUE) {
				/* The supervisor's: the earliest told. */
				int64_t d = proc_deadline_decode(si.ssi_int,
				    now_ms());
				if (d < s->stop_deadline_ms)
					s->stop_deadline_ms = d;
			} else if (s->term_aborts) {
				s->abort = true;
				s->stop_deadline_ms = now_ms();
			}
			break;
		case SIGQUIT:
			s->abort = s->stop = true;
			s->stop_deadline_ms = now_ms();
			break;
		case SIGHUP:
			s->hup = true;
			break;
		case SIGUSR1:
			s->wake = true;
			break;
		default:
			break;
		}
	}
}

/* Sleep up to ms, waking early for a stop.  Returns 1 if stopping. */
int
stopper_sleep(struct stopper *s, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (!s->stop) {
		int64_t left = end - now_ms();
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)(left > 60000 ? 60000 : left)) > 0)
			stopper_read(s);
	}
	return s->stop ? 1 : 0;
}

/*
 * Process titles for ps: "rowq: email worker 2 (row 8841)".  The title is
 * written over the memory of argv and, past it, of the environment
 * strings, which is all a process may use for it (setproctitle's way): a
 * title that outgrows the arguments spills into the environment's area,
 * and the kernel shows it whole in /proc/PID/cmdline.  proc_title_init must
 * run first thing in main, before anything keeps a pointer into argv or
 * into an environment string: it moves both to the heap.  A title longer
 * than the whole area is cut.
 */
extern char **environ;

static char	*title_base;
static size_t	 title_len;	/* bytes we may write, the last NUL included */
/*
 * The environment, moved to the heap: the array environ first points to,
 * and its strings.  setenv may replace environ's array and unsetenv shifts
 * it; these keep both for as long as the process lives (`used`: nothing
 * reads them, and they must not be optimised away).
 */
static char	**title_environ __attribute__((used));
static char	**title_env __attribute__((used));

void
proc_title_init(int argc, char **argv)
{
	char *end;
	size_t n;

	if (argc < 1 || argv[0] == NULL)
		return;
	/* The kernel lays the strings out end to end: use what is. */
	end = argv[0];
	for (int i = 0; i < argc && argv[i] == end; i++)
		end = argv[i] + strlen(argv[i]) + 1;
	for (n = 0; environ[n] != NULL; n++)
		;
	if (n > 0 && environ[0] == end) {
		char **copy = xcalloc(n + 1, sizeof(*copy));
		title_env = xcalloc(n + 1, sizeof(*title_env));
		for (size_t i = 0; i < n; i++) {
			if (environ[i] == end)
				end = environ[i] + strlen(environ[i]) + 1;
			copy[i] = title_env[i] = xstrdup(environ[i]);
		}
		environ = title_environ = copy;
	}
	title_base = argv[0];
	title_len = (size_t)(end - title_base);
	for (int i = 0; i < argc; i++)
		argv[i] = xstrdup(argv[i]);
}

void
proc_title(const char *fmt, ...)
{
	static char comm[16];	/* what PR_SET_NAME keeps: 15 bytes */
	char buf[256];
	const char *name;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* A worker sets its title for every row: no system call for that. */
	name = buf + (strncmp(buf, "rowq: ", 6) == 0 ? 6 : 0);
	if (strncmp(comm, name, sizeof(comm) - 1) != 0) {
		size_t n = strnlen(name, sizeof(comm) - 1);
		memcpy(comm, name, n);
		comm[n] = '\0';
		(void)prctl(PR_SET_NAME, comm);
	}
	if (title_base == NULL || title_len < 2)
		return;
	size_t n = strlen(buf);
	if (n >= title_len)
		n = title_len - 1;
	memcpy(title_base, buf, n);
	memset(title_base + n, '\0', title_len - n);
}

/* "exit status 1", "killed by signal 9 (Killed)": for messages. */
void
describe_wait_status(int status, struct buf *b)
{
	if (WIFEXITED(status))
		buf_printf(b, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		buf_printf(b, "killed by signal %d (%s)%s", WTERMSIG(status),
		    strsignal(WTERMSIG(status)),
		    WCOREDUMP(status) ? ", core dumped" : "");
	else
		buf_printf(b, "wait status %d", status);
}
