#!/usr/bin/env bash
# make check-deb on Debian 13 (trixie): the Debian package built in a
# trixie chroot from a copy of the tree (tests/deb.sh run there, so that
# trixie's lintian fails it on an error), then installed, checked and
# purged there by tests/check-deb.sh --root, whose rowq check talks to
# trixie's MariaDB 11.8 run in the chroot.
#
#   tests/check-deb-trixie.sh
#
# As root.  The chroot is tests/chroot-server.sh's deb-trixie: Debian 13
# with MariaDB 11.8, debian/control's Build-Depends and lintian, built once
# under /var/tmp/rowq-servers (a few minutes the first time) and never
# changed by a run: the run works on an overlay of it, mounted in a mount
# namespace of the script's own, so that each run installs on the same
# fresh chroot and no mount outlives the run; what the run changed is in
# its directory under /tmp, removed at exit.  The package, what its build
# wrote beside it and lintian's report are left in build/deb-trixie/.

# A mount namespace of our own: the overlay and the chroot's mounts go
# with its last process, however the run ends.
if [ "${ROWQ_DEB_TRIXIE_NS:-}" != "$$" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "check-deb-trixie.sh: a chroot and its mounts need root" >&2
		exit 1
	fi
	# unshare execs bash in the same process: $$ stays the same.
	ROWQ_DEB_TRIXIE_NS=$$ exec unshare --mount --propagation private \
	    bash "$0" "$@"
fi
unset ROWQ_DEB_TRIXIE_NS

. "$(dirname "$0")/lib.sh"

# The chroot, built if it is not yet (its log's end when it cannot be).
lower=$(bash "$TESTS_DIR/chroot-server.sh" deb-trixie) ||
    fail "no Debian 13 chroot (tests/chroot-server.sh deb-trixie)"
cd "$ROWQ_TEST_TMP"

# The overlay, unmounted at exit before lib.sh removes this directory
# (lazily, should a process of the run still be in it), so that the
# removal does not go through it.
sysroot=$ROWQ_TEST_TMP/root
mkdir root upper work
on_exit 'umount --lazy "$sysroot" 2>/dev/null || true'
mount -t overlay overlay \
    -o "lowerdir=$lower,upperdir=$PWD/upper,workdir=$PWD/work" "$sysroot"
mount --bind /tmp "$sysroot/tmp"
mount -t proc proc "$sysroot/proc"

# in_root COMMAND ARG...: run COMMAND in the chroot, with a clean
# environment (no make variables of ours reach its build).
in_root()
{
	chroot "$sysroot" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	    HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
echo "check-deb-trixie: Debian $(cat "$sysroot/etc/debian_version") in $lower"

# The tree as it is (uncommitted changes included), without what a build
# of it left behind, where the chroot sees it (its /tmp is ours).
tree=$ROWQ_TEST_TMP/rowq
mkdir "$tree"
tar -C "$REPO_ROOT" --exclude=./.git --exclude=./build --exclude=./rowq \
    -cf - . | tar -C "$tree" -xf -

# satisfy WHAT ARG...: install on the overlay, for this run only, what
# `dpkg-checkbuilddeps ARG...` finds missing in the chroot: what
# debian/control or the package has come to ask for since the chroot was
# built.
satisfy()
{
	local what=$1 unmet apt=(apt-get -o Acquire::Check-Valid-Until=false)
	shift
	in_root dpkg-checkbuilddeps "$@" >deps.log 2>&1 && return 0
	unmet=$(sed -n \
	    's/^dpkg-checkbuilddeps: error: [Uu]nmet build dependencies: //p' \
	    deps.log)
	[ -n "$unmet" ] || fail "dpkg-checkbuilddeps $*: $(cat deps.log)"
	echo "check-deb-trixie: the chroot lacks $what: $unmet;" \
	    "installing it for this run (remove $lower.built to build" \
	    "the chroot again with it)" >&2
	{
		in_root "${apt[@]}" update &&
		    in_root "${apt[@]}" satisfy -y --no-install-recommends "$unmet"
	} >>deps.log 2>&1 || {
		tail -n 25 deps.log >&2
		fail "could not install $what in the chroot;" \
		    "the end of apt-get's log is above"
	}
}
satisfy "debian/control's Build-Depends" "$tree/debian/control"

# Built and linted as on this machine, by trixie's tools.
in_root sh "$tree/tests/deb.sh" ||
    fail "the package does not build on Debian 13"
version=$(dpkg-parsechangelog -l "$REPO_ROOT/debian/changelog" -S Version)
arch=$(in_root dpkg --print-architecture)
deb=$tree/build/deb/rowq_${version}_$arch.deb
rm -rf "$REPO_ROOT/build/deb-trixie"
mkdir -p "$REPO_ROOT/build"
cp -R "$tree/build/deb" "$REPO_ROOT/build/deb-trixie"

# Installed, checked and purged there, its Depends from trixie's archive.
# The server is lib.sh's mariadb-11.8 kind, run from this chroot.
satisfy "the package's Depends" -d "$(dpkg-deb -f "$deb" Depends)" /dev/null
mkdir check
ROWQ_TEST_TMP=$PWD/check ROWQ_TEST_SERVER=mariadb-11.8 \
    ROWQ_TEST_SERVER_ROOT=$sysroot \
    bash "$TESTS_DIR/check-deb.sh" --root "$sysroot" "$deb" ||
    fail "the package does not check out on Debian 13"
echo "check-deb-trixie: ok, Debian $(cat "$sysroot/etc/debian_version")"
