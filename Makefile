# rowq: plain GNU make.  `make` builds ./rowq, `make check` runs every test
# (installing what is missing on Debian first), `make demo` shows it working.

PREFIX	?= /usr/local
BINDIR	?= $(PREFIX)/bin
MANDIR	?= $(PREFIX)/share/man
UNITDIR	?= $(PREFIX)/lib/systemd/system
DESTDIR	?=

CC	?= cc
PKGS	 = libmariadb yaml-0.1 libsystemd libcrypt
# Headers only: metrics.c loads the library itself when metrics: is set.
PKGS_DLOPEN = libmicrohttpd
WARN	 = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wpointer-arith -Wformat=2 -Wno-format-nonliteral
CFLAGS	?= -O2 -g
CFLAGS	+= -std=c11 -D_GNU_SOURCE $(WARN) \
	   $(shell pkg-config --cflags $(PKGS) $(PKGS_DLOPEN) 2>/dev/null)
# dlopen: in libc since glibc 2.34 (libdl.a is empty there), libdl before.
LDLIBS	+= $(shell pkg-config --libs $(PKGS) 2>/dev/null) -ldl
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)
SANITIZE = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Everything but main.o, so that the tests can link it.
OBJS =	build/backoff.o \
	build/buf.o \
	build/check.o \
	build/check_child.o \
	build/check_flow.o \
	build/check_galera.o \
	build/check_plan.o \
	build/check_shape.o \
	build/config.o \
	build/config_columns.o \
	build/config_console.o \
	build/config_env.o \
	build/config_hosts.o \
	build/config_limit.o \
	build/config_queue.o \
	build/config_retry.o \
	build/config_schedule.o \
	build/config_tls.o \
	build/config_walk.o \
	build/config_yaml.o \
	build/console.o \
	build/console_auth.o \
	build/console_bulk.o \
	build/console_chart.o \
	build/console_failed.o \
	build/console_group.o \
	build/console_html.o \
	build/console_http.o \
	build/console_page.o \
	build/console_row.o \
	build/console_schedule.o \
	build/console_search.o \
	build/console_session.o \
	build/console_throttle.o \
	build/cron.o \
	build/cursor.o \
	build/db.o \
	build/db_stmt.o \
	build/db_bulk.o \
	build/db_connect.o \
	build/db_limits.o \
	build/dialect.o \
	build/duration.o \
	build/failed.o \
	build/handler.o \
	build/handler_end.o \
	build/handler_child.o \
	build/handler_identity.o \
	build/handler_pipe.o \
	build/handler_retry_in.o \
	build/heartbeat.o \
	build/helper_child.o \
	build/history.o \
	build/json.o \
	build/keyed.o \
	build/limit.o \
	build/log.o \
	build/metrics.o \
	build/mhd.o \
	build/mhd_guard.o \
	build/notify.o \
	build/on_failed.o \
	build/pause.o \
	build/pause_watch.o \
	build/proc.o \
	build/prune.o \
	build/runs.o \
	build/row_story.o \
	build/runs_cmd.o \
	build/prune_daemon.o \
	build/prune_sql.o \
	build/reload.o \
	build/reason.o \
	build/report.o \
	build/requeue.o \
	build/scale.o \
	build/schedule.o \
	build/schedule_cmd.o \
	build/schedule_runs.o \
	build/schedule_db.o \
	build/schedule_daemon.o \
	build/slot.o \
	build/sql.o \
	build/sql_update.o \
	build/stats.o \
	build/status.o \
	build/status_db.o \
	build/status_group.o \
	build/status_others.o \
	build/status_group_done.o \
	build/status_socket.o \
	build/supervisor.o \
	build/supervisor_parts.o \
	build/supervisor_totals.o \
	build/trace.o \
	build/tz.o \
	build/wake_binlog.o \
	build/wake_socket.o \
	build/wake_watch.o \
	build/worker.o \
	build/worker_claim.o \
	build/worker_db.o \
	build/worker_finish.o \
	build/worker_finish_text.o \
	build/worker_lease.o \
	build/worker_lease_ride.o \
	build/worker_limit.o \
	build/worker_limit_key.o \
	build/worker_limit_lease.o \
	build/worker_limit_wait.o \
	build/worker_on_failed.o \
	build/worker_pickup.o \
	build/worker_recent.o \
	build/worker_runs.o \
	build/worker_row.o \
	build/worker_turn.o

UNIT_TESTS = \
	check_backoff \
	check_config \
	check_config_hosts \
	check_console \
	check_cron \
	check_cursor \
	check_dialect \
	check_duration \
	check_handler_end \
	check_json \
	check_limit \
	check_log \
	check_prune_sql \
	check_reason \
	check_recent \
	check_retry_in \
	check_runs \
	check_slot \
	check_sql \
	check_sql_update \
	check_stats \
	check_trace

ASAN_OBJS = $(OBJS:build/%=build/asan/%)
HDRS = $(wildcard src/*.h)
# Each object's own header dependencies, written by the compiler: a change
# to a header rebuilds what includes it, and nothing else.
DEPFLAGS = -MMD -MP
# Until an object has its .d (a build from before), every header counts.
.SECONDEXPANSION:

all: rowq

rowq: build/main.o $(OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/%.o: src/%.c $$(if $$(wildcard build/$$*.d),,$$(HDRS)) | build
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<

build/asan/%.o: src/%.c $$(if $$(wildcard build/asan/$$*.d),,$$(HDRS)) | build/asan
	$(CC) $(CFLAGS) $(SANITIZE) $(DEPFLAGS) -c -o $@ $<

build/asan/rowq: build/asan/main.o $(ASAN_OBJS)
	$(CC) $(CFLAGS) $(SANITIZE) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/unit/%: tests/unit/%.c tests/unit/unit.h tests/unit/unit_dir.h $(OBJS) | build/unit
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(OBJS) $(LDLIBS) $(CHECK_LIBS)

build/asan/unit/%: tests/unit/%.c tests/unit/unit.h tests/unit/unit_dir.h $(ASAN_OBJS) | build/asan/unit
	$(CC) $(CFLAGS) $(SANITIZE) -Isrc -o $@ $< $(ASAN_OBJS) $(LDLIBS) $(CHECK_LIBS)

build/handlers/%: tests/handlers/%.c | build/handlers
	$(CC) $(CFLAGS) -o $@ $<

build build/asan build/unit build/asan/unit build/handlers build/scan:
	mkdir -p $@

HANDLERS = $(patsubst tests/handlers/%.c,build/handlers/%,$(wildcard tests/handlers/*.c))

# `make check` may be the first command on a fresh machine: deps first,
# then build, in a second make so that pkg-config flags are read afresh.
# The build in parallel, one job per CPU; the tests run as they say.
CHECK_BINS = rowq build/asan/rowq $(UNIT_TESTS:%=build/unit/%) \
	$(UNIT_TESTS:%=build/asan/unit/%) $(HANDLERS)
check:
	@sh tests/deps.sh
	@$(MAKE) --no-print-directory -j$$(nproc) $(CHECK_BINS)
	@$(MAKE) --no-print-directory check-run

check-run: $(CHECK_BINS)
	@sh tests/run-unit.sh $(UNIT_TESTS:%=build/unit/%) $(UNIT_TESTS:%=build/asan/unit/%)
	@ROWQ=$(CURDIR)/build/asan/rowq ROWQ_SCREENSHOTS=$(CURDIR)/build/screenshots \
	    sh tests/run-integration.sh

# The cluster tests (tests/cluster/): a Galera cluster of three nodes on
# this machine; a minute or so, too heavy for `make check`; CI runs both.
check-cluster:
	@sh tests/deps.sh galera-4 rsync iproute2
	@$(MAKE) --no-print-directory check-cluster-run

check-cluster-run: rowq build/asan/rowq $(HANDLERS)
	@ROWQ=$(CURDIR)/build/asan/rowq sh tests/run-cluster.sh

# The integration tests against the other servers users run, MariaDB 11.8
# and MySQL 9.7, one after the other, each from a chroot of a newer Debian
# that tests/chroot-server.sh builds once under /var/tmp/rowq-servers (a
# minute or two each the first time; debootstrap); CI runs it after
# make check.
CHECK_SERVERS = mariadb-11.8 mysql-9.7
check-servers:
	@sh tests/deps.sh debootstrap
	@$(MAKE) --no-print-directory -j$$(nproc) rowq build/asan/rowq $(HANDLERS)
	@$(MAKE) --no-print-directory check-servers-run

check-servers-run: rowq build/asan/rowq $(HANDLERS)
	@ROWQ=$(CURDIR)/build/asan/rowq bash tests/run-servers.sh $(CHECK_SERVERS)

demo:
	@sh tests/deps.sh
	@$(MAKE) --no-print-directory -j$$(nproc) rowq
	@sh tests/demo.sh

install: rowq
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(UNITDIR)
	install -m 755 rowq $(DESTDIR)$(BINDIR)/rowq
	install -m 644 man/rowq.8 $(DESTDIR)$(MANDIR)/man8/rowq.8
	install -m 644 man/rowq.yaml.5 $(DESTDIR)$(MANDIR)/man5/rowq.yaml.5
	for u in rowq.service rowq@.service; do \
		sed 's|/usr/local/bin/rowq|$(BINDIR)/rowq|g' contrib/systemd/$$u >$(DESTDIR)$(UNITDIR)/$$u && \
		chmod 644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done

clean:
	rm -rf build rowq

# The static checks (HACKING): the analyzer, cppcheck, shellcheck and
# the header check; a couple of minutes, run by CI after make check.
# clang-tools: scan-build and clang's analyzer.
lint:
	@sh tests/deps.sh clang-tools cppcheck shellcheck
	@$(MAKE) --no-print-directory lint-run

lint-run: lint-scan-build lint-cppcheck lint-shellcheck lint-headers \
	lint-portable lint-lines

# scan-build over a build of every source of its own, in build/scan (the
# objects of `make` are left alone); a report fails it and stays in
# build/scan-build for scan-view.  The two vfork checkers are off: vfork
# is handler_child.c's on purpose (no copy of a worker's page tables per
# handler, the worker held until exec), and its child makes only syscalls
# until exec, which the checkers cannot know: unix.Vfork reports the first
# of them, security.insecureAPI.vfork the vfork itself.
SCAN_BUILD = scan-build --status-bugs -o build/scan-build \
	-disable-checker unix.Vfork -disable-checker security.insecureAPI.vfork
SCAN_OBJS = $(patsubst src/%.c,build/scan/%.o,$(wildcard src/*.c))

lint-scan-build:
	rm -rf build/scan build/scan-build
	$(SCAN_BUILD) $(MAKE) --no-print-directory lint-scan-objs

lint-scan-objs: $(SCAN_OBJS)

build/scan/%.o: src/%.c | build/scan
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# cppcheck over src/ as it is built (C11, _GNU_SOURCE); warnings,
# portability and performance, not style: the style checks would move
# declarations into inner scopes, against style(9) (HACKING), and misread
# `n = a < MAX ? a : MAX` as always zero.  No --library=posix: it asks for
# getpwnam_r in a program without threads.  A finding it gets wrong is
# silenced where it is, with /* cppcheck-suppress ID */ and the reason.
CPPCHECK = cppcheck --quiet --error-exitcode=1 --inline-suppr \
	--std=c11 -D_GNU_SOURCE -Isrc --enable=warning,portability,performance

lint-cppcheck:
	$(CPPCHECK) src

# Every shell script of the tests and the benchmark, with what they
# source (tests/.shellcheckrc, bench/.shellcheckrc), and CI's own.
SHELL_SCRIPTS = $(sort $(shell find tests bench -name '*.sh')) .ci/run

lint-shellcheck:
	@echo "shellcheck -x -S warning: $(words $(SHELL_SCRIPTS)) scripts of tests/, bench/ and .ci/"
	@shellcheck -x -S warning $(SHELL_SCRIPTS)

lint-headers:
	python3 tests/lint/headers.py

# The tests' SQL runs on MariaDB and MySQL alike (tests/lint/portable.sh).
lint-portable:
	sh tests/lint/portable.sh

# No file of src/ over 900 lines (tests/lint/lines.sh).
lint-lines:
	sh tests/lint/lines.sh

.PHONY: lint lint-run lint-scan-build lint-scan-objs lint-cppcheck \
	lint-shellcheck lint-headers lint-portable lint-lines

# The benchmark (bench/README.md): about 20 minutes, not part of `make
# check`; BENCH_QUICK=1 for a quick try.
bench:
	@# PHP with PDO/MySQL for the article's worker; gnuplot for the chart;
	@# beanstalkd, the broker measured against.
	@sh tests/deps.sh php-cli php-mysql gnuplot-nox beanstalkd
	@$(MAKE) --no-print-directory rowq
	@bash bench/bench.sh

# Throughput per server (bench/servers.sh): bench's contenders on MariaDB
# 10.11, MariaDB 11.8 and MySQL 9.7 in turn, in one run; about half an
# hour, BENCH_QUICK=1 for a quick try.  debootstrap: the chroots of the
# two servers Debian 12 does not package, built the first time
# (tests/chroot-server.sh).
bench-servers:
	@sh tests/deps.sh debootstrap
	@$(MAKE) --no-print-directory rowq
	@bash bench/servers.sh

.PHONY: all check check-run check-cluster check-cluster-run check-servers \
	check-servers-run demo install clean bench bench-servers

# The Debian package (debian/), built with dpkg-buildpackage from a copy of
# the tree: build/deb/rowq_VERSION_ARCH.deb, checked by lintian.
deb:
	@sh tests/deps.sh dpkg-dev debhelper lintian
	@sh tests/deb.sh

# Build the package, install it on this machine (as root), check what it
# installed and that it works, and purge it; then the same on Debian 13
# (check-deb-trixie): a few minutes, run by CI after make check, not part
# of it.
check-deb: deb
	@bash tests/check-deb.sh build/deb/rowq_$$(dpkg-parsechangelog -l debian/changelog -S Version)_$$(dpkg-architecture -qDEB_HOST_ARCH).deb
	@$(MAKE) --no-print-directory check-deb-trixie

# The package built, linted, installed, checked and purged in a Debian 13
# chroot that tests/chroot-server.sh builds once under
# /var/tmp/rowq-servers (a few minutes more the first time; debootstrap),
# on an overlay of it: build/deb-trixie/.
check-deb-trixie:
	@sh tests/deps.sh dpkg-dev debootstrap
	@bash tests/check-deb-trixie.sh

.PHONY: deb check-deb check-deb-trixie
.SECONDARY:

# The fault suite (tests/TORTURE.md): the fault tests at full size, the
# config and cron fuzzers for a bounded time, and a summary of the
# figures; a few minutes, not part of `make check`.
torture:
	@# clang and its libFuzzer runtime, for the fuzzers; debootstrap
	@# for the chroots of the servers Debian 12 does not package.
	@sh tests/deps.sh clang libclang-rt-dev debootstrap
	@$(MAKE) --no-print-directory rowq build/asan/rowq $(HANDLERS) build/fuzz/fuzz_config build/fuzz/fuzz_cron
	@bash tests/torture/run.sh

# libFuzzer target for config_load: clang, every source but main.c.
FUZZ_CC	?= clang
FUZZ_SRCS = $(filter-out src/main.c,$(wildcard src/*.c))
build/fuzz/fuzz_config: tests/fuzz/fuzz_config.c $(FUZZ_SRCS) $(HDRS) | build/fuzz
	$(FUZZ_CC) -g -O1 -std=c11 -D_GNU_SOURCE -Isrc \
	    -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer \
	    $(shell pkg-config --cflags $(PKGS) $(PKGS_DLOPEN) 2>/dev/null) \
	    -o $@ tests/fuzz/fuzz_config.c $(FUZZ_SRCS) $(LDLIBS)

# libFuzzer target for cron_parse and the slots it gives.
build/fuzz/fuzz_cron: tests/fuzz/fuzz_cron.c $(FUZZ_SRCS) $(HDRS) | build/fuzz
	$(FUZZ_CC) -g -O1 -std=c11 -D_GNU_SOURCE -Isrc \
	    -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer \
	    $(shell pkg-config --cflags $(PKGS) $(PKGS_DLOPEN) 2>/dev/null) \
	    -o $@ tests/fuzz/fuzz_cron.c $(FUZZ_SRCS) $(LDLIBS)

# The corpora as regression tests in `make check`: gcc, the ASan objects.
build/fuzz/replay_%: tests/fuzz/replay.c tests/fuzz/fuzz_%.c $(ASAN_OBJS) | build/fuzz
	$(CC) $(CFLAGS) $(SANITIZE) -Isrc -o $@ tests/fuzz/replay.c \
	    tests/fuzz/fuzz_$*.c $(ASAN_OBJS) $(LDLIBS)

build/fuzz:
	mkdir -p $@

.PHONY: torture

-include $(wildcard build/*.d build/asan/*.d)
