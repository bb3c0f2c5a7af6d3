# shellcheck shell=bash
# For the tests of the applications' job tables (tests/integration/2x_*.sh):
# the application's DDL as shipped (tests/apps/APP.sql), its example
# configuration (config/examples/APP.yaml) pointed at the test's server and
# at a pipe handler of the test's, and the probe that the claim locks only
# what it claims.  Sourced after lib.sh, once db_create has run.
#
#   app_schema APP             create the application's tables
#   app_config APP FILE        the example, with this server and the handler
#   app_handler                the pipe handler: each row's JSON goes to
#                              $ROWQ_TEST_TMP/handled, one line a row; it
#                              answers by the row's text: "hold" waits for
#                              the file $ROWQ_TEST_TMP/release, "flaky"
#                              retries once, "retry" and "fail" answer so,
#                              anything else ok
#   app_drain FILE OUT QUEUE WHAT SQL...
#                              rowq drain QUEUE (output in OUT.out and
#                              OUT.err), and while the held row's handler
#                              runs, each SQL (named WHAT) completes
#                              within 2 s: it would wait for a lock held
#                              by the claim otherwise

APP_DIR=$TESTS_DIR/apps

app_schema()
{
	sql <"$APP_DIR/$1.sql"
}

app_config()
{
	local app=$1 file=$2
	cat >"$file" <<YAML
database:
  socket: $ROWQ_TEST_SOCKET
  user: root
  name: $ROWQ_TEST_DB
YAML
	# The example without its database: block, with the test's handler.
	sed -e '/^database:/,/^queues:/{/^queues:/!d}' \
	    -e "s|^    pipe: .*|    pipe: [$ROWQ_TEST_TMP/app-handler]|" \
	    -e "s|^    exec: .*|    pipe: [$ROWQ_TEST_TMP/app-handler]|" \
	    -e 's/^    idle: .*/    idle: 100ms/' \
	    "$REPO_ROOT/config/examples/$app.yaml" >>"$file"
	app_handler
}

app_handler()
{
	# Handlers get no environment of the test's: the paths are written in.
	{
		echo '#!/bin/bash'
		echo "d=$ROWQ_TEST_TMP"
		cat <<'SH'
while IFS= read -r row; do
	printf '%s\n' "$row" >>"$d/handled"
	# A binary column comes as base64: its text counts too.
	data=$(printf '%s' "$row" | sed -n 's/.*"data":"\([^"]*\)".*/\1/p' |
	    base64 -d 2>/dev/null | tr -d '\0')
	# The row's key: the value of its first column.
	key=$(printf '%s' "$row" | sed 's/^{"[^"]*":"\{0,1\}\([^,"]*\).*/\1/')
	case "$row $data" in
	*flaky*)
		if [ -e "$d/flaky.$key" ]; then echo ok
		else : >"$d/flaky.$key"; echo "retry not yet"; fi ;;
	*hold*)
		: >"$d/holding"
		while [ ! -e "$d/release" ]; do sleep 0.05; done
		echo ok ;;
	*retry*) echo "retry the service is away" ;;
	*fail*) echo "fail this cannot work" ;;
	*) echo ok ;;
	esac
done
SH
	} >"$ROWQ_TEST_TMP/app-handler"
	chmod +x "$ROWQ_TEST_TMP/app-handler"
}

_app_not_locked()
{
	local out status=0
	out=$(mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B \
	    "$ROWQ_TEST_DB" -e "SET SESSION innodb_lock_wait_timeout = 2;
	    START TRANSACTION; $2; ROLLBACK" 2>&1) || status=$?
	assert_eq 0 "$status" "$1, while a handler runs: $out"
}

app_drain()
{
	local file=$1 out=$2 queue=$3 pid
	shift 3
	rm -f "$ROWQ_TEST_TMP"/holding "$ROWQ_TEST_TMP"/release
	"$ROWQ" -c "$file" drain "$queue" >"$out.out" 2>"$out.err" &
	pid=$!
	track_pid "$pid"
	wait_until 20 '[ -e "$ROWQ_TEST_TMP/holding" ]' ||
	    fail "the held row's handler did not start: $(cat "$out.err")"
	while [ $# -ge 2 ]; do
		_app_not_locked "$1" "$2"
		shift 2
	done
	: >"$ROWQ_TEST_TMP/release"
	wait "$pid" || fail "drain $queue: $(cat "$out.err")"
	untrack_pid "$pid"
}
