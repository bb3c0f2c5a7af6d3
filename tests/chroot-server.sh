#!/usr/bin/env bash
# A database server that Debian 12 does not package, installed once into a
# chroot of a newer Debian suite, for the tests (ROWQ_TEST_SERVER, lib.sh):
#
#   tests/chroot-server.sh KIND     KIND: mysql-9.7, mariadb-11.8 or
#                                   deb-trixie
#
# deb-trixie is Debian 13 with its MariaDB 11.8, what building the Debian
# package there needs (debian/control's Build-Depends, lintian) and
# systemd, for tests/check-deb-trixie.sh.
#
# prints the chroot's directory, /var/tmp/rowq-servers/KIND, after
# building it if it is not built yet: debootstrap --variant=minbase of the
# suite from this machine's own Debian mirror, then the server's packages
# with apt-get (a minute or two, about 600 MB; deb-trixie a few minutes,
# 1.1 GB; as root).  A built chroot has the stamp file KIND.built beside
# it, written last, holding the server's version; until then the directory
# is a half-built one that the next run removes and builds again.  Two
# runs at once take turns (flock on KIND.lock), the second finding the
# first's chroot built.  A chroot that cannot be built is an error, with
# the end of the build's log (KIND.log).
#
# The server runs in the chroot with the host's /tmp bound onto the
# chroot's /tmp, in a mount namespace of its own (lib.sh), so that its
# data directory and socket under /tmp have the same path for the host's
# clients as for the server.

set -eu -o pipefail

ROWQ_SERVERS_DIR=${ROWQ_SERVERS_DIR:-/var/tmp/rowq-servers}

kind=${1:-}
# want: the server's version the chroot must have, if not the kind's;
# build_deps: a debian/control whose Build-Depends it must have.
want=
build_deps=
case $kind in
mysql-9.7)
	suite=sid
	packages=(mysql-server-core mysql-client-core)
	version_cmd=(mysqld --version)
	;;
mariadb-11.8)
	suite=trixie
	packages=(mariadb-server)
	version_cmd=(mariadbd --version)
	;;
deb-trixie)
	# systemd: the system the package's units are for, which its Depends
	# asks for (sysusers), and systemd-analyze for check-deb.sh.
	suite=trixie
	packages=(mariadb-server build-essential dpkg-dev lintian systemd)
	build_deps=$(cd "$(dirname "$0")/.." && pwd)/debian/control
	version_cmd=(mariadbd --version)
	want=11.8
	;;
*)
	echo "usage: chroot-server.sh mysql-9.7|mariadb-11.8|deb-trixie" >&2
	exit 2
	;;
esac

[ -n "$want" ] || want=${kind#*-}
root=$ROWQ_SERVERS_DIR/$kind
stamp=$root.built
log=$root.log

# Built already: nothing to wait for.
if [ -s "$stamp" ] && [ -d "$root" ]; then
	echo "$root"
	exit 0
fi

die()
{
	echo "chroot-server.sh: $kind: $*" >&2
	if [ -s "$log" ]; then
		echo "chroot-server.sh: the end of $log:" >&2
		tail -n 25 "$log" >&2
	fi
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "building a chroot needs root"
if ! command -v debootstrap >/dev/null 2>&1; then
	sh "$(dirname "$0")/deps.sh" debootstrap ||
	    die "debootstrap is missing and tests/deps.sh could not install it"
fi

mkdir -p "$ROWQ_SERVERS_DIR"
exec 9>"$root.lock"
flock 9

# Another run built it while we waited for the lock.
if [ -s "$stamp" ] && [ -d "$root" ]; then
	echo "$root"
	exit 0
fi

# The machine's own Debian mirror: the first URIs of a source that is not
# the security archive.
mirror=$(awk '
    /^[ \t]*$/ { if (uri != "" && !sec) { print uri; exit } uri = ""; sec = 0 }
    /^URIs:/ { uri = $2 }
    /^Suites:/ && /-security/ { sec = 1 }
    END { if (uri != "" && !sec) print uri }' \
    /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] ||
    mirror=$(awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' \
	/etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] ||
    die "no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"

# A half-built chroot from a run that failed or was killed.  Nothing can
# be mounted in it (the servers' mounts live in namespaces of their own,
# debootstrap's are gone with it), and --one-file-system makes sure that
# rm stays out of one if there were.
if [ -e "$root" ]; then
	rm -rf --one-file-system "$root" ||
	    die "could not remove the half-built $root"
fi

echo "chroot-server.sh: building $kind ($suite from $mirror) in $root, a few minutes" >&2
: >"$log"
in_root()
{
	chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"
}
apt_opts=(-o Acquire::Check-Valid-Until=false)
# The Build-Depends of debian/control, for a chroot that builds the
# package: apt-get build-dep of a directory that holds a copy of it.
# (check-deb-trixie.sh adds what a control changed since asks for to its
# overlay of the chroot.)
install_build_deps()
{
	[ -n "$build_deps" ] || return 0
	mkdir -p "$root/tmp/rowq-build-deps/debian" &&
	    cp "$build_deps" "$root/tmp/rowq-build-deps/debian/control" &&
	    in_root apt-get "${apt_opts[@]}" build-dep -y \
		--no-install-recommends /tmp/rowq-build-deps &&
	    rm -r "$root/tmp/rowq-build-deps"
}
{
	debootstrap --variant=minbase "$suite" "$root" "$mirror" &&
	    cp /etc/hosts "$root/etc/hosts" &&
	    # No service starts from a package's scripts in here.
	    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" &&
	    chmod 755 "$root/usr/sbin/policy-rc.d" &&
	    in_root apt-get "${apt_opts[@]}" update &&
	    in_root apt-get "${apt_opts[@]}" install -y \
		--no-install-recommends "${packages[@]}" &&
	    install_build_deps &&
	    in_root apt-get clean
} >>"$log" 2>&1 || die "building the chroot failed"

version=$(in_root "${version_cmd[@]}" 2>>"$log") ||
    die "the server in the chroot does not run: ${version_cmd[*]}"
[[ $version == *" Ver $want."* || $version == *" Ver $want-"* ]] ||
    die "the chroot's server is not $kind: $version"
echo "$version" >"$stamp.tmp"
mv "$stamp.tmp" "$stamp"
echo "chroot-server.sh: built $root: $version" >&2
echo "$root"
