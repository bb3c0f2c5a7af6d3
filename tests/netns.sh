# shellcheck shell=bash
# Separate hosts on one machine: network namespaces joined by veth links to
# a bridge, like hosts on one switch.  Sourced after lib.sh:
#
#     . "$TESTS_DIR/netns.sh"
#     net_require              # skips the test (77) where it cannot run
#     net_host db 10.91.0.1
#     net_host h1 10.91.0.11
#     net_exec h1 "$ROWQ" run rowq.yaml &
#     net_cut h1; net_restore h1
#
# Names are this test's own (the pid is part of every namespace's name), so
# tests running at the same time do not meet, and the addresses live only
# inside namespaces the test created: the machine's own network is never
# touched.  Everything is removed at exit.

_net_prefix=rq$$
_net_hosts=()

# net_require: skip unless we are root and can create a namespace.
net_require()
{
	if [ "$(id -u)" -ne 0 ]; then
		echo "network namespaces need root" >&2
		exit 77
	fi
	if ! ip netns add "${_net_prefix}probe" 2>/dev/null; then
		echo "network namespaces are not available here (ip netns add failed)" >&2
		exit 77
	fi
	ip netns del "${_net_prefix}probe"
}

# net_ns NAME: the namespace's real name, for `ip netns exec` and
# SERVER_NETNS (tests/servers.sh).
net_ns()
{
	echo "${_net_prefix}$1"
}

_net_switch()
{
	local sw
	sw=$(net_ns sw)
	# Not `ip netns list`: it complains of other tests' namespaces that
	# are being removed while it reads them.
	[ ! -e "/run/netns/$sw" ] || return 0
	ip netns add "$sw"
	on_exit _net_remove_all
	ip -n "$sw" link add br0 type bridge
	ip -n "$sw" link set br0 up
}

# net_host NAME ADDRESS: a namespace with loopback up and one link, eth0,
# with ADDRESS/24, to the switch.
net_host()
{
	local name=$1 addr=$2 ns sw
	_net_switch
	ns=$(net_ns "$name")
	sw=$(net_ns sw)
	ip netns add "$ns"
	_net_hosts+=("$ns")
	ip -n "$ns" link set lo up
	# Both ends are created in the switch's namespace, then one moves.
	ip -n "$sw" link add "p-$name" type veth peer name eth0 netns "$ns"
	ip -n "$sw" link set "p-$name" master br0 up
	ip -n "$ns" addr add "$addr/24" dev eth0
	ip -n "$ns" link set eth0 up
}

# net_exec NAME COMMAND...: run COMMAND inside NAME's namespace (exec'd:
# the pid of `net_exec ... &` is the command's).
net_exec()
{
	local ns
	ns=$(net_ns "$1")
	shift
	exec ip netns exec "$ns" "$@"
}

# net_cut NAME / net_restore NAME: take NAME's link down at the switch, as
# if its cable were pulled, and put it back.  Its packets are dropped, not
# refused: connections hang rather than fail, as on a real cut.
net_cut()
{
	ip -n "$(net_ns sw)" link set "p-$1" down
}

net_restore()
{
	ip -n "$(net_ns sw)" link set "p-$1" up
}

_net_remove_all()
{
	local ns
	for ns in "${_net_hosts[@]}" "$(net_ns sw)"; do
		ip netns del "$ns" 2>/dev/null || true
	done
}
