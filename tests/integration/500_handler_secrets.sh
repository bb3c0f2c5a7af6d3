#!/usr/bin/env bash
# Handlers are untrusted code: the database password never reaches them.
# rowq runs as a system user of its own (as under the shipped units),
# with the password in a credential directory ($CREDENTIALS_DIRECTORY,
# as systemd's LoadCredential= makes it) or a password_file.  A hostile
# handler (tests/handlers/hunt.c) looks everywhere:
#   1. Same user as rowq, exec and pipe, credential: and password_file:
#      it finds no password in its environment, its argv, a descriptor it
#      inherited (it has none beyond 0-2), the worker's and the
#      supervisor's environ, cmdline, memory or descriptors, and
#      $CREDENTIALS_DIRECTORY is not set.
#   2. user: another system user, rowq holding CAP_SETUID, CAP_SETGID and
#      CAP_KILL as the units' drop-in gives them: the handler runs as that
#      user (its uid checked), cannot read the credential or the password
#      file even by their paths, nor the worker's memory; its HOME and
#      USER are its own; a handler of that user that hangs is still killed
#      at its timeout.
#   3. rowq check refuses a user: it cannot switch to (no capability),
#      and one that does not exist, with the reason (exit 78).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"

[ "$(id -u)" = 0 ] || skip "not root: cannot create users"
command -v useradd >/dev/null && command -v setpriv >/dev/null ||
	skip "no useradd or setpriv"
db_start
db_create
T=$ROWQ_TEST_TMP
cd "$T"

# Two system users, unique to this run, removed at exit.
daemon=rowqd$$
huser=rowqh$$
for u in "$daemon" "$huser"; do
	useradd --system --no-create-home --home-dir "/nonexistent-$u" \
	    --shell /usr/sbin/nologin "$u" || fail "useradd $u"
	on_exit "userdel $u 2>/dev/null"
done
huid=$(id -u "$huser")
duid=$(id -u "$daemon")

# The daemon's user must reach the server's socket and this directory.
restore=()
for d in "$(dirname "$ROWQ_TEST_SOCKET")" "$T"; do
	while [ "$d" != / ]; do
		mode=$(stat -c %a "$d")
		if [ $((8#$mode & 1)) = 0 ]; then
			chmod o+x "$d"
			restore+=("chmod $mode '$d'")
		fi
		d=$(dirname "$d")
	done
done
for r in "${restore[@]}"; do on_exit "$r"; done
# The programs the other users run, where they can reach them: the
# checkout may lie under a directory only root can enter (mktemp -d).
mkdir bin
cp "$ROWQ" "$HANDLERS/hunt" "$HANDLERS/fake" bin/
chmod 755 bin bin/*
ROWQ=$T/bin/rowq
HANDLERS=$T/bin

secret="Hunt-$RANDOM$RANDOM-pw"
sql "DROP USER IF EXISTS rowqhsec@localhost;
    CREATE USER rowqhsec@localhost IDENTIFIED BY '$secret';
    GRANT ALL ON \`$ROWQ_TEST_DB\`.* TO rowqhsec@localhost"
# The oracle: what the hunter looks for (the test's file, not rowq's).
printf '%s\n' "$secret" >oracle
chmod 644 oracle
# As systemd makes a credential: a directory only the service user reads.
mkdir cred
printf '%s\n' "$secret" >cred/db.password
chown -R "$daemon:" cred
chmod 500 cred
chmod 400 cred/db.password
printf '%s\n' "$secret" >pw
chown "$daemon:" pw
chmod 600 pw
mkdir reports
chmod 777 reports
email_table 2

H=$HANDLERS/hunt
# conf NAME MODE (exec|pipe) SOURCE (credential|file) [HANDLER_ARGS] [QUEUE KEYS...]
conf()
{
	local name=$1 mode=$2 source=$3 args=${4:-} pwline
	shift 4 || shift $#
	if [ "$source" = credential ]; then
		pwline="  credential: db.password"
	else
		pwline="  password_file: $T/pw"
	fi
	WORKERS=1 email_config "$name.yaml" "[x]" "$@"
	sed -i "s|^  user: root|  user: rowqhsec\n$pwline|; s|^    exec: .*|    $mode: [$H, $mode, $T/oracle, $T/reports/$name$args]|" "$name.yaml"
	grep -q "^    $mode: \[$H" "$name.yaml" || fail "$name.yaml: edit did not apply"
	chmod 644 "$name.yaml"
}

# as_daemon [CAPS] -- COMMAND...: run COMMAND as the daemon's user, with
# the credential directory, and with CAPS as ambient capabilities.
as_daemon()
{
	local caps=()
	if [ "$1" != -- ]; then
		caps=(--inh-caps="$1" --ambient-caps="$1")
		shift
	fi
	shift
	setpriv --reuid="$daemon" --regid="$daemon" --init-groups "${caps[@]}" \
	    env CREDENTIALS_DIRECTORY="$T/cred" "$@"
}

# drain NAME: reset the rows, drain them with NAME.yaml as the daemon.
drain()
{
	local name=$1 status=0
	shift
	sql "UPDATE email SET status = 'waiting', attempts = 0, retry_at = NULL"
	as_daemon "$@" -- "$ROWQ" -c "$name.yaml" drain email >"$name.log" 2>&1 || status=$?
	assert_eq 0 "$status" "drain $name: $(cat "$name.log")"
	assert_eq 2 "$(email_count "status = 'sent'")" "$name: rows done ($(cat "$name.log"))"
	[ -s "reports/$name" ] || fail "$name: the hunter wrote nothing: $(cat "$name.log")"
}

# ---- 1. same user as rowq ----
for mode in exec pipe; do
	for source in credential file; do
		name=same-$mode-$source
		conf "$name" "$mode" "$source" ""
		drain "$name"
		assert_eq 0 "$(lines "reports/$name" '^found ')" "$name: the password found: $(grep '^found' "reports/$name")"
		assert_eq 0 "$(lines "reports/$name" '^fd ')" "$name: inherited descriptors: $(grep '^fd' "reports/$name" | tr '\n' ' ')"
		assert_eq 0 "$(lines "reports/$name" 'readable$')" "$name: memory of rowq readable by its handler: $(grep '^mem' "reports/$name" | tr '\n' ' ')"
		assert_eq "$duid" "$(sed -n 's/^uid //p' "reports/$name" | sort -u)" "$name: the handler's uid"
	done
done
figure "places hunted for the password, same user (exec, pipe; credential, file)" \
    "$(grep -c . reports/same-exec-credential) lines"

# ---- 2. user: another user ----
user_caps=+setuid,+setgid,+kill
name='user-exec'
conf "$name" exec credential ", $T/cred/db.password, $T/pw" "user: $huser"
drain "$name" "$user_caps"
assert_eq "$huid" "$(sed -n 's/^uid //p' "reports/$name" | sort -u)" "$name: the handler's uid"
assert_eq 0 "$(lines "reports/$name" '^found ')" "$name: the password found: $(grep '^found' "reports/$name")"
assert_eq 2 "$(lines "reports/$name" "^read $T/cred/db.password: Permission denied")" "$name: reading the credential by its path"
assert_eq 2 "$(lines "reports/$name" "^read $T/pw: Permission denied")" "$name: reading the password file by its path"
assert_eq 0 "$(lines "reports/$name" 'readable$')" "$name: memory of rowq readable"
name='user-pipe'
conf "$name" pipe file ", $T/cred/db.password, $T/pw" "user: $huser"
drain "$name" "$user_caps"
assert_eq "$huid" "$(sed -n 's/^uid //p' "reports/$name" | sort -u)" "$name: the handler's uid"
assert_eq 0 "$(lines "reports/$name" '^found ')" "$name: the password found"
assert_eq 2 "$(lines "reports/$name" "^read $T/pw: Permission denied")" "$name: reading the password file by its path"

# Its environment names it, not rowq's user.
WORKERS=1 email_config env.yaml "[$HANDLERS/fake, env, $T/reports/env.out]" "user: $huser"
sed -i "s|^  user: root|  user: rowqhsec\n  credential: db.password|" env.yaml
drain_env() { sql "UPDATE email SET status = 'waiting', attempts = 0"; as_daemon "$user_caps" -- env HOME=/root USER=root LOGNAME=root "$ROWQ" -c env.yaml drain email >env.log 2>&1 || fail "drain env: $(cat env.log)"; }
drain_env
assert_match "HOME=/nonexistent-$huser" "$(cat reports/env.out)" "HOME of a user: handler"
assert_match "USER=$huser" "$(cat reports/env.out)" "USER of a user: handler"
assert_match "LOGNAME=$huser" "$(cat reports/env.out)" "LOGNAME of a user: handler"

# A hanging handler of another user is killed at its timeout all the same.
TIMEOUT=1s MAX_ATTEMPTS=1 WORKERS=1 email_config hang.yaml "[$HANDLERS/fake, hang]" "user: $huser"
sed -i "s|^  user: root|  user: rowqhsec\n  credential: db.password|" hang.yaml
sql "UPDATE email SET status = 'waiting', attempts = 0"
as_daemon "$user_caps" -- "$ROWQ" -c hang.yaml drain email >hang.log 2>&1 || fail "drain hang: $(cat hang.log)"
assert_eq 2 "$(email_count "status = 'failed' AND last_error LIKE 'timed out%'")" "hanging handlers of $huser timed out ($(cat hang.log))"
assert_eq "" "$(pgrep -u "$huser" || true)" "processes of $huser left"

# ---- 3. rowq check refuses a user: it cannot switch to ----
status=0
as_daemon -- "$ROWQ" -c user-exec.yaml check >nocap.out 2>&1 || status=$?
assert_eq 78 "$status" "check with user: and no capability ($(cat nocap.out))"
assert_match "user-exec.yaml:[0-9]+: queues.email.user: cannot run handlers as $huser: " "$(cat nocap.out)" "no capability: message"
assert_match "CAP_SETUID" "$(cat nocap.out)" "no capability: the way out"
sed "s|user: $huser|user: no-such-user-$$|" user-exec.yaml >nouser.yaml
status=0
"$ROWQ" -c nouser.yaml check >nouser.out 2>&1 || status=$?
assert_eq 78 "$status" "check with an unknown user: ($(cat nouser.out))"
assert_match "nouser.yaml:[0-9]+: queues.email.user: no such user: no-such-user-$$" "$(cat nouser.out)" "unknown user: message"
