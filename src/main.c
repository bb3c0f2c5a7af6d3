/*
 * main.c: options, subcommands and exit codes.  The only file that exits
 * the process on purpose, apart from fatal() on a broken invariant.
 */
#include "rowq.h"
#include "schedule.h"
#include "console.h"
#include "commands.h"
#include "prune.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
"usage: rowq [-c FILE] [-d] run\n"
"       rowq [-c FILE] check [--strict]\n"
"       rowq [-c FILE] drain QUEUE... [-w N]\n"
"       rowq [-c FILE] status [QUEUE...] [--json]\n"
"       rowq [-c FILE] status QUEUE --by [--limit N] [--json]\n"
"       rowq [-c FILE] prune QUEUE [--dry-run]\n"
"       rowq [-c FILE] failed QUEUE [--json] [--limit N]\n"
"       rowq [-c FILE] requeue QUEUE KEY... | --all [--where-error TEXT]\n"
"       rowq [-c FILE] discard QUEUE KEY... | --all [--where-error TEXT]\n"
"       rowq [-c FILE] cancel QUEUE KEY...\n"
"       rowq [-c FILE] pause QUEUE [--for DURATION] [--reason TEXT]\n"
"       rowq [-c FILE] resume QUEUE\n"
"       rowq [-c FILE] pause --schedule NAME [--reason TEXT]\n"
"       rowq [-c FILE] resume --schedule NAME\n"
"       rowq [-c FILE] wake QUEUE\n"
"       rowq [-c FILE] schedules [--json]\n"
"       rowq [-c FILE] schedule run NAME\n"
"       rowq [-c FILE] schedule runs NAME [--limit N] [--json]\n"
"       rowq console-user NAME [--role viewer|operator]\n"
"       rowq --version | --help\n"
"\n"
"  run     supervise the workers of every queue, in the foreground\n"
"  check   validate the configuration against the database; exit 0 or 78\n"
"          (--strict: 1 when it warned of anything)\n"
"  drain   work the named queues until their select finds nothing\n"
"  status  ready rows, rows in progress, oldest age, and the daemon's\n"
"          counters; exit 1 when a queue is older than its alert_age\n"
"          or has more failed rows than its alert_failed; --by: per\n"
"          group_by: value, rows waiting, running and failed\n"
"  prune   run the queue's prune: once; --dry-run counts what it removes\n"
"  failed  the newest failed rows of a queue, from its failed_select\n"
"  requeue make failed rows waiting again, with the queue's requeue\n"
"  discard give failed rows up, with the queue's discard\n"
"  cancel  cancel rows, waiting or running (lease mode), with the queue's cancel\n"
"  pause   stop the queue's workers in every daemon (within 2s), for good\n"
"          or --for a while\n"
"  resume  start them again\n"
"  wake    tell the running daemon that the queue has rows (a hint)\n"
"  schedules  each schedule: its expression, zone, last and next slot\n"
"  schedule run  insert one slot of the schedule now, by hand\n"
"  schedule runs  its latest slots, and what became of each one's row\n"
"  console-user  read a password on standard input and print the line\n"
"          of the console's users_file for NAME (viewer by default)\n"
"\n"
"  -c FILE   configuration (default " ROWQ_DEFAULT_CONFIG ")\n"
"  -d        debug logging\n"
"  -w N      drain: N workers per queue instead of the configured count\n"
"\n"
"See rowq(8) and rowq.yaml(5).\n";

static int
usage(FILE *out, int code)
{
	fputs(usage_text, out);
	return code;
}

/*
 * `rowq check` explains the claims' plans and checks in this process; run
 * and drain check in a child, so that what connecting leaves behind stays
 * out of the supervisor and of the workers it forks (check_child.c).
 */
static enum check_verdict
load_check(const struct config *cfg, bool explain, struct stopper *stopper)
{
	struct checker how = { .close_fd = stopper ? stopper->fd : -1 };

	if (explain)
		return check_config(cfg, true);
	return checker_run(cfg, &how);
}

/* load_checked's return when SIGTERM came first: no exit status. */
#define LOAD_STOPPED	(-1)

/*
 * Load and check; on failure the reasons are already logged.  With
 * stopper (rowq run), a database that is down only delays the start: wait
 * with backoff, keep systemd from giving up on us, and leave early on
 * SIGTERM (returning LOAD_STOPPED).  A SIGHUP then reads the file again.
 */
static int
load_checked(const char *path, struct config **out, bool explain,
    struct stopper *stopper)
{
	/* check reads the console's files where it may, run must. */
	enum config_private private_files = explain ? CONFIG_PRIVATE_WARN :
	    stopper != NULL ? CONFIG_PRIVATE_READ : CONFIG_PRIVATE_SKIP;
	struct config *cfg = config_load_private(path, private_files);
	enum check_verdict verdict;
	int tries = 0;

	if (cfg == NULL)
		return ROWQ_EXIT_CONFIG;
	while ((verdict = load_check(cfg, explain, stopper)) ==
	    CHECK_UNREACHABLE && stopper) {
		int64_t delay = backoff_capped_ms(1000, 30000, ++tries);
		char d[32];
		duration_format(delay, d, sizeof(d));
		log_warnx("waiting for the database; next try in %s", d);
		notify_status("waiting for the database (try %d)", tries);
		notify_extend_timeout(delay + 30000);
		if (stopper_sleep(stopper, delay)) {
			config_free(cfg);
			return LOAD_STOPPED;
		}
		if (stopper->hup) {
			struct config *fresh = config_load_private(path,
			    private_files);
			stopper->hup = false;
			if (fresh == NULL)
				continue;	/* keep waiting with what we had */
			config_free(cfg);
			cfg = fresh;
		}
	}
	if (verdict != CHECK_PASSED) {
		config_free(cfg);
		return verdict == CHECK_UNREACHABLE ? ROWQ_EXIT_FAILURE :
		    ROWQ_EXIT_CONFIG;
	}
	*out = cfg;
	return ROWQ_EXIT_OK;
}

/*
 * With --strict, a warning fails the check too (exit 1): a deploy can
 * refuse a queue whose claim is slow or whose semantics are doubtful.
 */
static int
cmd_check(const char *path, int argc, char **argv)
{
	struct config *cfg;
	bool strict = argc == 2 && strcmp(argv[1], "--strict") == 0;
	unsigned long warnings = log_warning_count();
	int rc;

	if (argc > 2 || (argc == 2 && !strict)) {
		fprintf(stderr, "rowq: check: unknown argument %s\n", argv[1]);
		return usage(stderr, ROWQ_EXIT_USAGE);
	}
	if ((rc = load_checked(path, &cfg, true, NULL)) != ROWQ_EXIT_OK)
		return rc;
	warnings = log_warning_count() - warnings;
	if (strict && warnings > 0) {
		fprintf(stderr, "%s: %lu warning%s, and --strict: not ok\n",
		    path, warnings, warnings == 1 ? "" : "s");
		rc = ROWQ_EXIT_FAILURE;
	} else {
		printf("%s: ok, %zu queue%s", path, cfg->nqueues,
		    cfg->nqueues == 1 ? "" : "s");
		if (cfg->nschedules > 0)
			printf(", %zu schedule%s", cfg->nschedules,
			    cfg->nschedules == 1 ? "" : "s");
		putchar('\n');
	}
	config_free(cfg);
	return rc;
}

static int
cmd_run(const char *path)
{
	struct run_options opts = { .config_path = path };
	struct config *cfg;
	int rc;

	struct stopper stopper;

	log_set_timestamps(true);
	notify_init();
	/* Signals are blocked from here on; the supervisor reads them next. */
	stopper_init(&stopper, true);
	rc = load_checked(path, &cfg, false, &stopper);
	close(stopper.fd);
	if (rc == LOAD_STOPPED) {
		notify_stopping();
		log_info("stopped before the database could be reached");
		return ROWQ_EXIT_OK;
	}
	if (rc != ROWQ_EXIT_OK)
		return rc;
	return supervisor_run(cfg, &opts);
}

static int
parse_workers(const char *arg, int *workers)
{
	char *end;
	long n = strtol(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || n < 1 || n > WORKERS_MAX) {
		fprintf(stderr, "rowq: drain: -w takes a number from 1 to %d\n",
		    WORKERS_MAX);
		return -1;
	}
	*workers = (int)n;
	return 0;
}

/* Queue names and -w N in any order: `drain a b -w 4`, `drain -w4 a`. */
static int
cmd_drain(const char *path, int argc, char **argv)
{
	struct run_options opts = { .config_path = path, .drain = true };
	struct config *cfg;
	int rc = ROWQ_EXIT_OK;

	opts.queues = xcalloc((size_t)argc, sizeof(*opts.queues));
	for (int i = 1; i < argc && rc == ROWQ_EXIT_OK; i++) {
		if (strcmp(argv[i], "-w") == 0) {
			if (i + 1 >= argc ||
			    parse_workers(argv[++i], &opts.workers) == -1)
				rc = ROWQ_EXIT_USAGE;
		} else if (strncmp(argv[i], "-w", 2) == 0) {
			if (parse_workers(argv[i] + 2, &opts.workers) == -1)
				rc = ROWQ_EXIT_USAGE;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "rowq: drain: unknown option %s\n",
			    argv[i]);
			rc = ROWQ_EXIT_USAGE;
		} else
			opts.queues[opts.nqueues++] = argv[i];
	}
	if (rc == ROWQ_EXIT_OK && opts.nqueues == 0) {
		fprintf(stderr, "rowq: drain: name at least one queue\n");
		rc = ROWQ_EXIT_USAGE;
	}
	if (rc == ROWQ_EXIT_OK)
		rc = load_checked(path, &cfg, false, NULL);
	if (rc != ROWQ_EXIT_OK) {
		free(opts.queues);
		return rc;
	}
	for (size_t i = 0; i < opts.nqueues; i++) {
		if (config_queue(cfg, opts.queues[i]) == NULL) {
			log_error("%s: no queue named %s", path, opts.queues[i]);
			rc = ROWQ_EXIT_USAGE;
		}
	}
	if (rc == ROWQ_EXIT_OK)
		rc = supervisor_run(cfg, &opts);
	else
		config_free(cfg);
	free(opts.queues);
	return rc;
}

static int
cmd_status(const char *path, int argc, char **argv)
{
	char **names = xcalloc((size_t)argc, sizeof(*names));
	size_t n = 0;
	bool json = false, by = false, limited = false;
	long limit = STATUS_GROUP_LIMIT;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--by") == 0)
			by = true;
		else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
			char *end;
			limited = true;
			limit = strtol(argv[++i], &end, 10);
			if (*end != '\0' || end == argv[i] || limit < 1 ||
			    limit > STATUS_GROUP_LIMIT_MAX) {
				fprintf(stderr, "rowq: status: --limit: not a "
				    "number from 1 to %d: %s\n",
				    STATUS_GROUP_LIMIT_MAX, argv[i]);
				free(names);
				return ROWQ_EXIT_USAGE;
			}
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "rowq: status: unknown option %s\n",
			    argv[i]);
			free(names);
			return ROWQ_EXIT_USAGE;
		} else
			names[n++] = argv[i];
	}
	if (by && n != 1) {
		fprintf(stderr, "rowq: status: --by takes one queue\n");
		free(names);
		return ROWQ_EXIT_USAGE;
	}
	if (!by && limited) {
		fprintf(stderr, "rowq: status: --limit goes with --by\n");
		free(names);
		return ROWQ_EXIT_USAGE;
	}
	rc = by ? status_group_command(path, names[0], json, (int)limit) :
	    status_command(path, names, n, json);
	free(names);
	return rc;
}

/*
 * `pause QUEUE [--for DURATION] [--reason TEXT]`, `resume QUEUE`: the
 * pause table (pause.c); with --schedule NAME, a schedule's
 * (schedule_cmd.c).
 */
static int
cmd_pause(const char *path, int argc, char **argv)
{
	bool pause = strcmp(argv[0], "pause") == 0;
	const char *queue = NULL, *reason = NULL, *schedule = NULL;
	const char *for_s = NULL;
	int64_t for_ms = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--schedule") == 0 && i + 1 < argc &&
		    schedule == NULL && queue == NULL)
			schedule = argv[++i];
		else if (pause && strcmp(argv[i], "--reason") == 0 && i + 1 < argc)
			reason = argv[++i];
		else if (pause && strncmp(argv[i], "--reason=", 9) == 0)
			reason = argv[i] + 9;
		else if (pause && strcmp(argv[i], "--for") == 0 && i + 1 < argc)
			for_s = argv[++i];
		else if (pause && strncmp(argv[i], "--for=", 6) == 0)
			for_s = argv[i] + 6;
		else if (argv[i][0] == '-' || queue != NULL ||
		    schedule != NULL) {
			fprintf(stderr, "rowq: %s: unexpected argument %s\n",
			    argv[0], argv[i]);
			return usage(stderr, ROWQ_EXIT_USAGE);
		} else
			queue = argv[i];
	}
	if (queue == NULL && schedule == NULL) {
		fprintf(stderr, "rowq: %s: name the queue\n", argv[0]);
		return ROWQ_EXIT_USAGE;
	}
	if (reason != NULL && strlen(reason) > PAUSE_REASON_MAX) {
		fprintf(stderr, "rowq: pause: --reason is longer than %d bytes\n",
		    PAUSE_REASON_MAX);
		return ROWQ_EXIT_USAGE;
	}
	if (for_s != NULL && (duration_parse(for_s, &for_ms) == -1 ||
	    for_ms < 1000 || for_ms > PAUSE_FOR_MAX_MS)) {
		fprintf(stderr, "rowq: pause: --for takes a duration from 1s to "
		    "366d, such as 10m, not %s\n", for_s);
		return ROWQ_EXIT_USAGE;
	}
	if (schedule != NULL && for_s != NULL) {
		fprintf(stderr, "rowq: pause: --for is for a queue, not a "
		    "schedule\n");
		return ROWQ_EXIT_USAGE;
	}
	if (schedule != NULL)
		return schedule_pause_command(path, schedule,
		    reason != NULL ? reason : "", pause);
	return pause ? pause_command(path, queue, reason, for_ms) :
	    resume_command(path, queue);
}

/*
 * `schedules [--json]`, `schedule run NAME` (schedule_cmd.c), `schedule
 * runs NAME [--limit N] [--json]` (schedule_runs.c).
 */
static int
cmd_schedules(const char *path, int argc, char **argv)
{
	if (strcmp(argv[0], "schedule") == 0) {
		if (argc >= 2 && strcmp(argv[1], "runs") == 0)
			return schedule_runs_command(path, argc - 2, argv + 2);
		if (argc != 3 || strcmp(argv[1], "run") != 0 ||
		    argv[2][0] == '-') {
			fprintf(stderr, "rowq: schedule: run NAME, or runs "
			    "NAME\n");
			return usage(stderr, ROWQ_EXIT_USAGE);
		}
		return schedule_run_command(path, argv[2]);
	}
	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--json") != 0)) {
		fprintf(stderr, "rowq: schedules: unexpected argument %s\n",
		    argv[1]);
		return usage(stderr, ROWQ_EXIT_USAGE);
	}
	return schedules_command(path, argc == 2);
}

/* `wake QUEUE`: a hint to the running daemon (wake_socket.c). */
static int
cmd_wake(const char *path, int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "rowq: wake: name one queue\n");
		return usage(stderr, ROWQ_EXIT_USAGE);
	}
	return wake_command(path, argv[1]);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "config", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = ROWQ_DEFAULT_CONFIG;
	int c;

	proc_std_fds();
	/*
	 * A peer that goes away (the database, a handler, a status client)
	 * is an error to handle where it happens, not a death.  Children
	 * that exec get the default back (proc_child_signals).
	 */
	signal(SIGPIPE, SIG_IGN);
	log_init("rowq");
	proc_title_init(argc, argv);
	while ((c = getopt_long(argc, argv, "+c:dhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			break;
		case 'd':
			log_set_debug(true);
			break;
		case 'h':
			return usage(stdout, ROWQ_EXIT_OK);
		case 'V':
			printf("rowq %s\n", ROWQ_VERSION);
			return ROWQ_EXIT_OK;
		default:
			return usage(stderr, ROWQ_EXIT_USAGE);
		}
	}
	if (optind >= argc)
		return usage(stderr, ROWQ_EXIT_USAGE);
	const char *cmd = argv[optind];
	if (strcmp(cmd, "run") == 0 && optind + 1 == argc)
		return cmd_run(path);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(path, argc - optind, argv + optind);
	if (strcmp(cmd, "drain") == 0)
		return cmd_drain(path, argc - optind, argv + optind);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(path, argc - optind, argv + optind);
	if (strcmp(cmd, "prune") == 0)
		return prune_command(path, argc - optind, argv + optind);
	if (strcmp(cmd, "runs") == 0)
		return runs_command(path, argc - optind, argv + optind);
	if (strcmp(cmd, "show") == 0)
		return show_command(path, argc - optind, argv + optind);
	if (strcmp(cmd, "failed") == 0)
		return failed_command(path, argc - optind, argv + optind);
	if (strcmp(cmd, "requeue") == 0 || strcmp(cmd, "discard") == 0 ||
	    strcmp(cmd, "cancel") == 0)
		return requeue_command(path, argc - optind, argv + optind);
	if (strcmp(cmd, "wake") == 0)
		return cmd_wake(path, argc - optind, argv + optind);
	if (strcmp(cmd, "schedules") == 0 || strcmp(cmd, "schedule") == 0)
		return cmd_schedules(path, argc - optind, argv + optind);
	if (strcmp(cmd, "console-user") == 0)
		return console_user_command(argc - optind, argv + optind);
	if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0)
		return cmd_pause(path, argc - optind, argv + optind);
	fprintf(stderr, "rowq: unknown command or extra arguments: %s\n", cmd);
	return usage(stderr, ROWQ_EXIT_USAGE);
}
