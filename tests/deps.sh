#!/bin/sh
# Make sure the Debian packages that building and testing rowq need are
# installed.  First step of `make check` and `make demo`, so it must be
# silent and fast when nothing is missing.  As root it installs what is
# missing; otherwise it prints the command to run and fails.

# Packages named as arguments are wanted too (make bench, make torture;
# make check-cluster: galera-4, and rsync for its state transfer).
#
# systemd: for systemd-analyze verify of the units.  procps: ps, pgrep.
# prometheus: promtool, for the alert rules in contrib/prometheus.
# libmicrohttpd12: rowq loads it at run time (dlopen) to serve metrics and
# the console; the -dev package is for its header only.  libcrypt-dev: the
# console's password hashes.  curl: the console's HTTP tests; chromium,
# chromium-driver and python3-selenium: its test in a real browser.
PACKAGES="build-essential pkg-config libmariadb-dev libyaml-dev
libsystemd-dev libmicrohttpd-dev libmicrohttpd12 libcrypt-dev curl chromium chromium-driver python3-selenium check mariadb-server
mariadb-client
python3 python3-prometheus-client mandoc valgrind systemd procps prometheus $*"

set -eu

if ! command -v dpkg-query >/dev/null 2>&1; then
	# shellcheck disable=SC2086 # one line, not the list's newlines
	echo "deps.sh: not Debian; make sure these are installed:" $PACKAGES >&2
	exit 0
fi

missing()
{
	# One dpkg-query for all: a package it does not know is simply not
	# listed, and a removed one is listed without "installed".
	# shellcheck disable=SC2086 # one word per package
	dpkg-query -W -f='${Package} ${Status}\n' $PACKAGES 2>/dev/null |
	    awk -v want="$PACKAGES" '
		$NF == "installed" { ok[$1] = 1 }
		END {
			n = split(want, w, /[ \t\n]+/)
			for (i = 1; i <= n; i++)
				if (w[i] != "" && !ok[w[i]])
					out = out (out == "" ? "" : " ") w[i]
			if (out != "")
				print out
		}'
}

need=$(missing)
[ -n "$need" ] || exit 0

install="apt-get install -y --no-install-recommends $need"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing Debian packages: $need" >&2
	echo "run as root: apt-get update && $install" >&2
	exit 1
fi

echo "deps.sh: installing $need" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086 # one word per package
apt-get install -y --no-install-recommends $need

need=$(missing)
if [ -n "$need" ]; then
	echo "deps.sh: still missing after apt-get: $need" >&2
	exit 1
fi
