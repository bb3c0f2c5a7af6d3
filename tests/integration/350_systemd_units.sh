#!/usr/bin/env bash
# contrib/systemd: rowq.service and rowq@.service pass `systemd-analyze
# verify` without a word (ExecStart pointed at the built binary, the man
# pages looked up in man/), also with every setting of the drop-in example
# switched on; their `systemd-analyze security` exposure is 2.5 or lower;
# they carry the settings the contract names, differ only where an
# instance must; and `make install` puts them in place.
. "$(dirname "$0")/../lib.sh"
cd "$ROWQ_TEST_TMP"
units=$REPO_ROOT/contrib/systemd

if ! systemd-analyze --version >/dev/null 2>&1; then
	echo "systemd-analyze cannot run here: units not verified"
	exit 77
fi

# Copies with ExecStart pointing at the binary under test.
mkdir -p u
for f in rowq.service rowq@.service; do
	sed "s|^ExecStart=/usr/local/bin/rowq |ExecStart=$ROWQ |" "$units/$f" >"u/$f"
	grep -q "^ExecStart=$ROWQ " "u/$f" || fail "$f: no ExecStart=/usr/local/bin/rowq to point at $ROWQ"
done

# The man pages of Documentation=, from the repository when man can read them.
man_opt=(--man=no)
if command -v man >/dev/null 2>&1 && [ -f "$REPO_ROOT/man/rowq.8" ] &&
    [ -f "$REPO_ROOT/man/rowq.yaml.5" ]; then
	mkdir -p man/man8 man/man5
	cp "$REPO_ROOT/man/rowq.8" man/man8/
	cp "$REPO_ROOT/man/rowq.yaml.5" man/man5/
	export MANPATH=$ROWQ_TEST_TMP/man
	man_opt=()
fi

verify()
{
	local out status=0
	out=$(systemd-analyze verify "${man_opt[@]}" "$@" 2>&1) || status=$?
	assert_eq 0 "$status" "systemd-analyze verify $* ($out)"
	assert_eq "" "$out" "systemd-analyze verify $* says"
}
verify u/rowq.service
verify u/rowq@example.service

for unit in rowq.service rowq@example.service; do
	out=$(systemd-analyze security --offline=true "u/$unit" 2>&1) ||
		fail "systemd-analyze security $unit: $out"
	score=$(echo "$out" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
	echo "$unit: exposure $score"
	assert_le "$score" 2.5 "exposure of $unit"
done

# Every setting the drop-in example offers, switched on, still verifies.
mkdir -p d/rowq.service.d
cp u/rowq.service d/
{ echo "[Service]"; sed -n 's/^#\([A-Z][A-Za-z]*=\)/\1/p' "$units/handlers.conf.example"; } >d/rowq.service.d/handlers.conf
assert_ge "$(wc -l <d/rowq.service.d/handlers.conf)" 10 "settings in the drop-in example"
verify d/rowq.service

# With the drop-in's section for user: (capabilities to switch users),
# both units still rate 2.5 or lower.
mkdir -p c/rowq.service.d c/rowq@.service.d
cp u/rowq.service u/rowq@.service c/
{ echo "[Service]"; sed -n '/^# --- handlers as their own user/,/^# --- /s/^#\([A-Z][A-Za-z]*=\)/\1/p' "$units/handlers.conf.example"; } >c/user.conf
grep -q '^CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL$' c/user.conf ||
	fail "the drop-in example's user: section: $(cat c/user.conf)"
cp c/user.conf c/rowq.service.d/
cp c/user.conf c/rowq@.service.d/
verify c/rowq.service
for unit in rowq.service rowq@example.service; do
	out=$(systemd-analyze security --offline=true "c/$unit" 2>&1) ||
		fail "systemd-analyze security $unit with user: $out"
	score=$(echo "$out" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
	echo "$unit with the user: drop-in: exposure $score"
	assert_le "$score" 2.5 "exposure of $unit with the user: drop-in"
done

# What the contract and the issue ask of both.
for f in rowq.service rowq@.service; do
	for want in '^Type=notify$' '^ExecReload=/bin/kill -HUP \$MAINPID$' '^KillMode=mixed$' \
	    '^Restart=on-failure$' '^RestartPreventExitStatus=78$' '^TimeoutStopSec=' \
	    '^WatchdogSec=' '^User=rowq$' '^LoadCredential=db\.password:/etc/rowq/' \
	    '^NoNewPrivileges=yes$' '^ProtectSystem=strict$' '^ProtectHome=yes$' \
	    '^PrivateTmp=yes$' '^PrivateDevices=yes$' \
	    '^RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6$'; do
		grep -Eq "$want" "$units/$f" || fail "$f: no line matching $want"
	done
done
assert_eq "ExecStart=/usr/local/bin/rowq -c /etc/rowq/%i.yaml run" \
	"$(grep '^ExecStart=' "$units/rowq@.service")" "the template's ExecStart"

# The two differ only in what names the instance.
settings() { grep -Ev '^(#|$|Description=|ExecStart=|LoadCredential=)' "$1"; }
assert_eq "$(settings "$units/rowq.service")" "$(settings "$units/rowq@.service")" "settings of rowq.service and rowq@.service"

# make install puts both where systemd looks for units.
make -s -C "$REPO_ROOT" install DESTDIR="$ROWQ_TEST_TMP/dest" PREFIX=/usr/local >make.log 2>&1 ||
	fail "make install: $(cat make.log)"
for f in rowq.service rowq@.service; do
	cmp "$units/$f" "dest/usr/local/lib/systemd/system/$f" || fail "$f not installed"
done
