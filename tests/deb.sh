#!/bin/sh
# `make deb`: build the Debian package from a copy of the tree, so that
# dpkg-buildpackage's output (written to the parent directory) and
# debian/'s build directories never land in the source tree, then run
# lintian on it.  The packages end up in build/deb/; lintian's errors fail
# the build, its warnings are printed.

set -eu

cd "$(dirname "$0")/.."
root=$PWD
out=$root/build/deb
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
source=$(dpkg-parsechangelog -l debian/changelog -S Source)

# The package's version is rowq's own.
code=$(sed -n 's/^#define ROWQ_VERSION[[:space:]]*"\(.*\)"$/\1/p' src/rowq.h)
if [ "$code" != "$version" ]; then
	echo "deb: debian/changelog says $version, src/rowq.h says $code" >&2
	exit 1
fi

tmp=$(mktemp -d /tmp/rowq-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
copy=$tmp/$source-$version
mkdir "$copy"
# The tree as it is (uncommitted changes included), without what a build
# of it left behind.
tar -C "$root" --exclude=./.git --exclude=./build --exclude=./rowq -cf - . |
    tar -C "$copy" -xf -

(cd "$copy" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 || {
	tail -n 40 "$tmp/build.log" >&2
	echo "deb: dpkg-buildpackage failed; the end of its log is above" >&2
	exit 1
}

rm -rf "$out"
mkdir -p "$out"
for f in "$tmp"/*.deb "$tmp"/*.ddeb "$tmp"/*.buildinfo "$tmp"/*.changes; do
	[ ! -e "$f" ] || cp "$f" "$out/"
done
deb=$out/${source}_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb
[ -f "$deb" ] || { echo "deb: no $deb" >&2; exit 1; }

# Errors fail the build; warnings and the rest are shown and kept in
# build/deb/lintian.txt.  (As root, which CI runs as, lintian also says
# it would rather not be.)
status=0
lintian --fail-on error --display-info "$out"/*.changes \
    >"$out/lintian.txt" 2>&1 || status=$?
cat "$out/lintian.txt"
if [ "$status" -ne 0 ]; then
	echo "deb: lintian found errors (exit $status)" >&2
	exit 1
fi
echo "deb: $deb"
