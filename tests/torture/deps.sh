#!/bin/sh
# What `make torture` needs beyond `make check`: clang and its libFuzzer
# runtime for the config fuzzer.  As root, installs them from Debian if
# missing; otherwise says what to run.
set -eu
PACKAGES="clang libclang-rt-dev"
command -v dpkg-query >/dev/null 2>&1 || exit 0
need=
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
	    need="$need $p"
done
[ -n "$need" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "torture/deps.sh: missing:$need; as root: apt-get install$need" >&2
	exit 1
fi
echo "torture/deps.sh: installing$need" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends $need
