#!/bin/sh
# The Debian packages the benchmark needs beyond the build and test ones
# (tests/deps.sh): PHP with PDO/MySQL for the design article's worker, and
# gnuplot for the chart.  Silent when nothing is missing; as root it
# installs what is, otherwise it prints the command and fails.
PACKAGES="php-cli php-mysql gnuplot-nox"

set -eu

command -v dpkg-query >/dev/null 2>&1 || exit 0
need=
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' ||
	    need="$need $p"
done
[ -n "$need" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "bench/deps.sh: missing Debian packages:$need" >&2
	echo "run as root: apt-get update && apt-get install -y$need" >&2
	exit 1
fi
echo "bench/deps.sh: installing$need" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086 # one word per package
apt-get install -y --no-install-recommends $need
