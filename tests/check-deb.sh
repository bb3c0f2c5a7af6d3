#!/usr/bin/env bash
# make check-deb: install the Debian package on this machine, see that what
# it installed is in place and works, purge it, and see that nothing is
# left but what the purge keeps (README.Debian): the rowq user and group.
#
#   tests/check-deb.sh [--root DIR] build/deb/rowq_VERSION_ARCH.deb
#
# As root (CI runs as root); it refuses to run where rowq is installed
# already, whose purge would not be its to do.  The package's rowq check
# talks to a throwaway MariaDB server of the test's own.
#
# With --root, the system checked is the chroot DIR instead of this
# machine (check-deb-trixie.sh's Debian 13): the package is installed
# there, every command that looks at the system runs there, and so does
# the server (ROWQ_TEST_SERVER and ROWQ_TEST_SERVER_ROOT, lib.sh).  The
# chroot's /tmp must be this machine's, so that the test's files under
# ROWQ_TEST_TMP have the same paths in it.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/servers.sh"

usage="usage: check-deb.sh [--root DIR] PACKAGE.deb"
sysroot=
if [ "${1:-}" = --root ]; then
	sysroot=${2:?$usage}
	shift 2
	[ -d "$sysroot/tmp" ] || fail "no chroot at $sysroot"
	[[ $ROWQ_TEST_TMP == /tmp/* ]] ||
	    fail "the chroot sees the test's files under /tmp, not in $ROWQ_TEST_TMP"
fi
deb=${1:?$usage}
[ -f "$deb" ] || fail "no package $deb"
[ "$(id -u)" -eq 0 ] || fail "installing a package needs root"
# The package from where the system checked sees it.
cp "$deb" "$ROWQ_TEST_TMP/"
deb=$ROWQ_TEST_TMP/$(basename "$deb")
cd "$ROWQ_TEST_TMP"

# in_sys COMMAND ARG...: run COMMAND on the system checked: here, or in
# the chroot with a clean environment and this directory as its own.
sys=()
if [ -n "$sysroot" ]; then
	sys=(chroot "$sysroot" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin
	    HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
	    /bin/sh -c 'cd "$0" && exec "$@"' "$PWD")
fi
in_sys()
{
	"${sys[@]}" "$@"
}
where=${sysroot:-this machine}

if in_sys dpkg-query -W -f='${Status}\n' rowq 2>/dev/null | grep -q ' installed$'; then
	fail "rowq is installed on $where already; not replacing it"
fi

# Where the system's systemd has its own units, as dpkg knows them
# (/lib/systemd/system on Debian 12, /usr/lib/systemd/system on 13): the
# package's belong there, not in the other of two aliased directories.
unitdir=$(in_sys dpkg -L systemd |
    sed -n 's|^\(/.*/systemd/system\)/systemd-journald\.service$|\1|p')
[ -n "$unitdir" ] ||
    fail "no systemd-journald.service in dpkg -L systemd on $where"
version=$(dpkg-deb -f "$deb" Version)
watch=(/etc /usr /lib /var/lib /run)

# Every path named *rowq* before: after the purge there must be no other.
find_rowq()
{
	find "${watch[@]/#/$sysroot}" -xdev -name '*rowq*' 2>/dev/null | sort
}
find_rowq >before.txt

# ---- what the package says of itself -----------------------------------

depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libmariadb3 libyaml-0-2 libsystemd0 libcrypt1; do
	assert_match "(^|, )$lib( |,|$)" "$depends" "Depends names $lib"
done
[[ $depends != *libmicrohttpd* ]] || fail "libmicrohttpd in Depends: $depends"
assert_eq "libmicrohttpd12t64 | libmicrohttpd12" "$(dpkg-deb -f "$deb" Recommends)" \
    "Recommends"
# ldd's view: what the binary links is what Depends names, and no more.
mkdir x
dpkg-deb -x "$deb" x
needed=$(objdump -p x/usr/bin/rowq | awk '$1 == "NEEDED" { print $2 }' | sort | tr '\n' ' ')
assert_eq "libc.so.6 libcrypt.so.1 libmariadb.so.3 libsystemd.so.0 libyaml-0.so.2 " "$needed" "libraries the binary links"

# ---- install -----------------------------------------------------------

installed=
purge()
{
	[ -n "$installed" ] || return 0
	installed=
	in_sys dpkg --purge rowq
}
on_exit 'purge >/dev/null 2>&1 || true'
installed=1
in_sys dpkg -i "$deb" >install.log 2>&1 || fail "dpkg -i: $(cat install.log)"
cat install.log
in_sys dpkg -L rowq >files.txt

assert_eq "rowq $version" "$(in_sys /usr/bin/rowq --version)" "rowq --version"
[ -x "$sysroot/usr/bin/rowq" ] || fail "no /usr/bin/rowq"
for m in /usr/share/man/man8/rowq.8.gz /usr/share/man/man5/rowq.yaml.5.gz; do
	[ -f "$sysroot$m" ] || fail "no manual page $m"
done
in_sys env MANPAGER=cat man -l /usr/share/man/man8/rowq.8.gz 2>/dev/null |
    grep -q "rowq" || fail "man rowq does not read"

# The example configuration, as a conffile, and its include directory.
cmp -s "$REPO_ROOT/config/rowq.yaml" "$sysroot/etc/rowq/rowq.yaml" ||
    fail "/etc/rowq/rowq.yaml is not config/rowq.yaml"
assert_match "/etc/rowq/rowq.yaml [0-9a-f]{32}" \
    "$(in_sys dpkg-query -W -f='${Conffiles}' rowq)" "rowq.yaml is a conffile"
[ -d "$sysroot/etc/rowq/queues.d" ] || fail "no /etc/rowq/queues.d"

# The system user, from sysusers.d.
[ -f "$sysroot/usr/lib/sysusers.d/rowq.conf" ] ||
    fail "no /usr/lib/sysusers.d/rowq.conf"
IFS=: read -r _ _ uid gid _ home shell < <(in_sys getent passwd rowq) ||
    fail "no user rowq"
assert_le "$uid" 999 "rowq's uid is a system uid"
assert_eq rowq "$(in_sys getent group "$gid" | cut -d: -f1)" "rowq's group"
assert_match "nologin$" "$shell" "rowq's shell"
[ ! -e "$sysroot$home" ] || fail "rowq's home $home exists"

# The units: in systemd's directory, running the installed binary, and
# neither enabled nor started.
for u in rowq.service rowq@.service; do
	grep -qx "$unitdir/$u" files.txt ||
	    fail "the package's $u is not in $unitdir: $(grep "/$u$" files.txt)"
	f=$sysroot$unitdir/$u
	[ -f "$f" ] || fail "no $f"
	assert_match "^/usr/bin/rowq -c /etc/rowq/[^ ]+\.yaml run$" \
	    "$(sed -n 's/^ExecStart=//p' "$f")" "$u ExecStart"
done
if ls "$sysroot"/etc/systemd/system/*.wants/rowq* 2>/dev/null; then
	fail "the install enabled rowq"
fi
for s in postinst preinst; do
	f=$sysroot/var/lib/dpkg/info/rowq.$s
	[ ! -f "$f" ] || ! grep -Eq 'deb-systemd-invoke (start|restart)|systemctl (start|restart|enable)' "$f" ||
	    fail "$s starts or enables rowq: $(cat "$f")"
done
if in_sys systemd-analyze --version >/dev/null 2>&1; then
	out=$(in_sys systemd-analyze verify "$unitdir/rowq.service" 2>&1) ||
	    fail "systemd-analyze verify rowq.service: $out"
	assert_eq "" "$out" "systemd-analyze verify rowq.service says"
	out=$(in_sys systemd-analyze verify "$unitdir/rowq@example.service" 2>&1) ||
	    fail "systemd-analyze verify rowq@example.service: $out"
	assert_eq "" "$out" "systemd-analyze verify rowq@example.service says"
else
	echo "systemd-analyze cannot run on $where: units not verified" >&2
fi

# ---- rowq check on the installed example -------------------------------

# The examples are shipped (read from the repository below: a system may
# leave /usr/share/doc out).
for f in schema.sql queues.d/images.yaml handlers/send-email; do
	grep -qx "/usr/share/doc/rowq/examples/$f" files.txt ||
	    fail "the package does not ship examples/$f"
done

# The example's database, user and tables on a server of our own (with
# --root, the chroot's); the configuration is the installed one with only
# its socket and password file pointing here.
db_start
db_create shop
sql <"$REPO_ROOT/config/schema.sql"
# The grants config/schema.sql tells the operator to give, read from its
# comment, so that an example queue needing more fails here.
grants=$(sed -n 's/^--     \(GRANT .*;\)$/\1/p' "$REPO_ROOT/config/schema.sql")
[ "$(grep -c . <<<"$grants")" -ge 4 ] ||
    fail "config/schema.sql's comment gives no GRANT lines: $grants"
sql "CREATE USER 'rowq'@'localhost' IDENTIFIED BY 'deb-test'; $grants"
(umask 077; echo deb-test >db.password)
mkdir -p etc/queues.d
sed -e "s|^  socket: /run/mysqld/mysqld.sock|  socket: $ROWQ_TEST_SOCKET|" \
    -e "s|^  password_file: /etc/rowq/db.password|  password_file: $PWD/db.password|" \
    "$sysroot/etc/rowq/rowq.yaml" >etc/rowq.yaml
assert_eq 2 "$(diff "$sysroot/etc/rowq/rowq.yaml" etc/rowq.yaml | grep -c '^>')" \
    "lines changed in the copy of rowq.yaml"

# Everything checks out but the handler, which is the operator's to
# install where the example says.
status=0
out=$(in_sys /usr/bin/rowq -c etc/rowq.yaml check 2>&1) || status=$?
echo "$out"
assert_eq 78 "$status" "rowq check without the example's handler"
exec_line=$(grep -n '^    exec: \[/usr/local/bin/send-email' etc/rowq.yaml | cut -d: -f1)
assert_eq "etc/rowq.yaml:$exec_line: queues.email.exec: cannot run /usr/local/bin/send-email: No such file or directory" \
    "$(grep -v ': claim plan: ' <<<"$out" | sed 's/^rowq: //')" "rowq check's only complaint"

# With the handlers where the examples say (here: a copy of the
# repository's), and the example queues.d, it passes.
cp -R "$REPO_ROOT/config/handlers" handlers
sed -i "s|/usr/local/bin/|$PWD/handlers/|" etc/rowq.yaml
for f in "$REPO_ROOT"/config/queues.d/*.yaml; do
	sed "s|/usr/local/bin/|$PWD/handlers/|" "$f" >"etc/queues.d/${f##*/}"
done
status=0
out=$(in_sys /usr/bin/rowq -c etc/rowq.yaml check 2>&1) || status=$?
echo "$out"
assert_eq 0 "$status" "rowq check with the handlers and queues.d in place"
for q in email webhooks images video; do
	assert_match "queues\.$q\." "$out" "rowq check names queue $q"
done

# ---- metrics, with the library the package recommends ------------------

# rowq loads libmicrohttpd.so.12 to serve the metrics and the console: the
# package that has it on this system is one that Recommends names
# (libmicrohttpd12 on Debian 12, libmicrohttpd12t64 on 13), and with it
# the installed rowq serves /metrics.
owner=$(in_sys dpkg -S '*/libmicrohttpd.so.12' 2>/dev/null |
    sed 's/[:,].*//' | sort -u)
[ -n "$owner" ] || fail "no package has libmicrohttpd.so.12 on $where"
echo "libmicrohttpd.so.12: $owner"
assert_match "(^|\| )$owner( \||$)" "$(dpkg-deb -f "$deb" Recommends)" \
    "Recommends names $owner, whose libmicrohttpd.so.12 rowq loads"
port=$(free_port)
sed -e "s|^#metrics: 127.0.0.1:9464$|metrics: 127.0.0.1:$port|" \
    -e "s|^#status_socket: /run/rowq/rowq.sock$|status_socket: $PWD/rowq.sock|" \
    etc/rowq.yaml >etc/metrics.yaml
assert_eq 2 "$(diff etc/rowq.yaml etc/metrics.yaml | grep -c '^>')" \
    "lines changed in the copy of rowq.yaml that serves metrics"
setsid "${sys[@]}" /usr/bin/rowq -c etc/metrics.yaml run </dev/null >run.log 2>&1 &
pid=$!
track_pid "$pid"
wait_until 20 'curl -fsS "http://127.0.0.1:$port/metrics" >metrics.txt 2>/dev/null' ||
    fail "rowq run serves no /metrics on 127.0.0.1:$port: $(cat run.log)"
assert_match 'rowq_workers\{queue="email"\} [0-9]' "$(cat metrics.txt)" \
    "/metrics of rowq run"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
untrack_pid "$pid"
assert_eq 0 "$status" "rowq run's exit status after SIGTERM"

# ---- purge ---------------------------------------------------------------

installed=
in_sys dpkg --purge rowq >purge.log 2>&1 || fail "dpkg --purge: $(cat purge.log)"
cat purge.log
assert_eq "" "$(in_sys dpkg-query -W -f='${Status}' rowq 2>/dev/null | grep -v 'not-installed' || true)" \
    "dpkg still knows rowq"
[ ! -e "$sysroot/etc/rowq" ] || fail "/etc/rowq left: $(find "$sysroot/etc/rowq")"
find_rowq >after.txt
left=$(comm -13 before.txt after.txt)
assert_eq "" "$left" "paths left after the purge"
in_sys getent passwd rowq >/dev/null ||
    fail "the purge removed the rowq user, whose files may remain"
echo "purged; kept by policy: user and group rowq"
