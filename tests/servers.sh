# shellcheck shell=bash
# More servers than the run's shared one, for tests that need a server of
# their own settings (a binary log, TLS, replication, Galera) or several
# of them, each of ROWQ_TEST_SERVER's kind (lib.sh).  Sourced after lib.sh:
#
#     . "$TESTS_DIR/servers.sh"
#     server_start a --log-bin --binlog-format=ROW
#     server_sql a 'SELECT @@log_bin'
#
# Each server lives in $ROWQ_TEST_TMP/srv-NAME (data, socket, error log),
# answers root on its unix socket ($(server_sock NAME)), and is shut down
# at exit however the test ends.  Options after NAME go to the server after
# DB_SERVER_OPTS, so they win (--log-bin undoes --skip-log-bin); they are
# MariaDB's, said to MySQL in its words where they differ (lib.sh's
# _lib_server_args).  A server listens on TCP only when given
# --bind-address and --port; SERVER_NETNS set to a namespace's name
# (tests/netns.sh) starts it inside that one.  A MySQL server given a
# --server-id, one of a replication's pair, has GTIDs on, by which
# server_replicate replicates.

declare -A _srv_pid=() _srv_opts=() _srv_ns=()

_srv_dir()
{
	echo "$ROWQ_TEST_TMP/srv-$1"
}

# server_sock NAME: the server's unix socket.
server_sock()
{
	echo "$(_srv_dir "$1")/s.sock"
}

# server_pid NAME: the running server's pid.
server_pid()
{
	echo "${_srv_pid[$1]}"
}

# server_sql NAME 'STATEMENTS' [DATABASE]: run them as root; rows come out
# tab-separated without column names.
server_sql()
{
	mariadb --no-defaults -S "$(server_sock "$1")" -uroot -N -B \
	    -e "$2" ${3:+"$3"}
}

# server_value NAME 'SELECT ...' [DATABASE]: the one value it returns.
server_value()
{
	local out
	out=$(server_sql "$@") || fail "query on server $1 failed: $2"
	one_value "$out" "server $1: $2"
}

# server_start NAME [SERVER-OPTION...]: create a data directory (a copy
# of SERVER_DATA_FROM when set) and start a server on it; wait until it
# answers.
server_start()
{
	local name=$1 dir
	shift
	dir=$(_srv_dir "$name")
	[ "${#dir}" -lt 100 ] || fail "server dir too long for a socket: $dir"
	mkdir -p "$dir"
	if [ -n "${SERVER_DATA_FROM:-}" ]; then
		cp -a "$SERVER_DATA_FROM" "$dir/data"
		# For a Galera joiner's rsync daemon, which runs as nobody.
		chmod o+x "$ROWQ_TEST_TMP" "$dir"
		chmod o+rwx "$dir/data"
	else
		_lib_server_init "$dir"
	fi
	_srv_opts[$name]=
	[ $# -eq 0 ] || _srv_opts[$name]="$(printf '%q ' "$@")"
	_srv_ns[$name]=${SERVER_NETNS:-}
	server_restart "$name"
}

# server_restart NAME: start NAME again on its data directory, with the
# options it was first started with (after server_kill9 or server_stop).
server_restart()
{
	local name=$1 dir opts networking=(--skip-networking)
	dir=$(_srv_dir "$name")
	eval "opts=(${_srv_opts[$name]})"
	[[ " ${opts[*]} " != *" --port"* ]] || networking=()
	if [ "$(server_family)" = mysql ] &&
	    [[ " ${opts[*]} " == *" --server-id="* ]]; then
		networking+=(--gtid-mode=ON --enforce-gtid-consistency=ON)
	fi
	_lib_server_root
	_lib_server_run "${_srv_ns[$name]}" "$dir" "$dir/s.sock" \
	    "$dir/mariadbd.pid" "${networking[@]}" "${opts[@]}" &
	_srv_pid[$name]=$!
	_lib_server_up "${_srv_pid[$name]}" "$dir/s.sock" "$dir/error.log" \
	    "$ROWQ_TEST_SERVER server $name"
}

# server_replicate REPLICA PRIMARY PORT: REPLICA (started with a
# --server-id of its own) replicates PRIMARY (started with --log-bin, a
# --server-id and listening on 127.0.0.1:PORT) over TCP, by GTID, from the
# start of PRIMARY's binary log, as user repl, without TLS (which the
# servers have only when given a certificate).  MySQL's replica asks for
# the primary's RSA key: caching_sha2_password's first login over TCP
# without TLS needs it.
server_replicate()
{
	local replica=$1 primary=$2 port=$3
	server_sql "$primary" "CREATE USER IF NOT EXISTS repl@'%'
	    IDENTIFIED BY 'repl-pw'; GRANT REPLICATION SLAVE ON *.* TO repl@'%'"
	if [ "$(server_family)" = mysql ]; then
		server_sql "$replica" "CHANGE REPLICATION SOURCE TO
		    SOURCE_HOST = '127.0.0.1', SOURCE_PORT = $port,
		    SOURCE_USER = 'repl', SOURCE_PASSWORD = 'repl-pw',
		    SOURCE_CONNECT_RETRY = 1, SOURCE_AUTO_POSITION = 1,
		    SOURCE_SSL = 0, GET_SOURCE_PUBLIC_KEY = 1; START REPLICA"
	else
		server_sql "$replica" "CHANGE MASTER TO MASTER_HOST = '127.0.0.1',
		    MASTER_PORT = $port, MASTER_USER = 'repl',
		    MASTER_PASSWORD = 'repl-pw', MASTER_CONNECT_RETRY = 1,
		    MASTER_SSL = 0, MASTER_USE_GTID = slave_pos; START SLAVE"
	fi
}

# server_replica_delay REPLICA SECONDS: REPLICA applies what it receives
# SECONDS after the primary wrote it.
server_replica_delay()
{
	if [ "$(server_family)" = mysql ]; then
		server_sql "$1" "STOP REPLICA; CHANGE REPLICATION SOURCE TO
		    SOURCE_DELAY = $2; START REPLICA"
	else
		server_sql "$1" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = $2;
		    START SLAVE"
	fi
}

# server_promote REPLICA: REPLICA stops replicating and takes writes
# (read_only off): the failover of a dead or demoted primary.
server_promote()
{
	server_sql "$1" "STOP REPLICA; SET GLOBAL read_only = 0"
}

# server_caught_up REPLICA PRIMARY: wait (30 s at most) until REPLICA has
# applied all that PRIMARY has written.
server_caught_up()
{
	local pos wait
	if [ "$(server_family)" = mysql ]; then
		pos=$(server_value "$2" "SELECT REPLACE(@@GLOBAL.gtid_executed, '\n', '')")
		wait="SELECT WAIT_FOR_EXECUTED_GTID_SET('$pos', 30)"
	else
		pos=$(server_value "$2" 'SELECT @@gtid_binlog_pos')
		wait="SELECT MASTER_GTID_WAIT('$pos', 30)"
	fi
	[ "$(server_value "$1" "$wait")" = 0 ] ||
	    fail "server $1 did not catch up with $2 ($pos) in 30 s"
}

# server_stop NAME: shut NAME down cleanly (SIGKILL if it ignores that).
server_stop()
{
	local name=$1 pid=${_srv_pid[$1]:-}
	[ -n "$pid" ] || return 0
	_lib_server_shutdown "$(server_sock "$name")" "$pid" "server $name"
	_srv_pid[$name]=
}

# server_kill9 NAME: SIGKILL NAME and wait until it is gone.
server_kill9()
{
	local name=$1 pid=${_srv_pid[$1]:-}
	[ -n "$pid" ] || fail "server $name is not running"
	kill -KILL "$pid"
	wait_until 30 '! _lib_alive "$pid"' ||
	    fail "server $name ($pid) survived SIGKILL"
	wait "$pid" 2>/dev/null || true
	_srv_pid[$name]=
}

_srv_stop_all()
{
	local name
	for name in "${!_srv_pid[@]}"; do
		# A frozen server must be thawed to shut down.
		[ -z "${_srv_pid[$name]}" ] || kill -CONT "${_srv_pid[$name]}" 2>/dev/null
		server_stop "$name"
	done
}
on_exit _srv_stop_all

# ---- Galera ----------------------------------------------------------
# A Galera cluster of nodes on 127.0.0.1 (Debian's galera-4), each node a
# server of this file named gN:
#
#     galera_require               # skips the test (77) without galera-4
#     galera_cluster_start 3       # nodes g1, g2, g3, all synced
#     server_sql g2 'SHOW STATUS LIKE "wsrep_cluster_size"'
#
# Node N listens on 127.0.0.1 on four ports of its own: SQL, group
# communication, incremental (IST) and full state transfer (SST).  Their
# base is picked from the test's pid and checked free, so that tests
# running at once do not meet.  The joiners start from a copy of the first
# node's data directory, taken while it was stopped, so they join by IST,
# without copying a data directory while it is in use.  Even so the rsync
# method's daemon receives a marker file, as nobody (rsync's daemon drops
# root): the joiner's data directory is open to it.

GALERA_PROVIDER=${GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
_galera_base=

# galera_require: skip the test (77) on a server of a chroot (the
# provider is the host's, for the host's MariaDB), and where the provider
# is missing.
galera_require()
{
	skip_on_server mysql "Galera is MariaDB's"
	skip_on_server mariadb-11.8 "the Galera provider is the host's galera-4, for the host's MariaDB 10.11"
	if [ ! -r "$GALERA_PROVIDER" ]; then
		echo "no Galera provider at $GALERA_PROVIDER (Debian: galera-4)" >&2
		exit 77
	fi
}

# galera_port N WHAT: node N's port for sql, gcomm, ist or sst.
galera_port()
{
	local i
	case $2 in
	sql) i=0 ;; gcomm) i=1 ;; ist) i=2 ;; sst) i=3 ;;
	*) fail "galera_port: no such port: $2" ;;
	esac
	[ -n "$_galera_base" ] || fail "galera_port before galera_cluster_start"
	echo $((_galera_base + $1 * 4 + i))
}

# A block of 32 ports, none of them listened on yet.
_galera_pick_base()
{
	local try base
	for try in 0 1 2 3 4 5 6 7; do
		base=$((30000 + (($$ + try * 97) % 900) * 32))
		if ! ss -Hltn | awk -v lo="$base" -v hi=$((base + 31)) '
		    { n = split($4, a, ":"); p = a[n] + 0
		      if (p >= lo && p <= hi) found = 1 }
		    END { exit !found }'; then
			_galera_base=$base
			return 0
		fi
	done
	fail "no free block of ports for the Galera nodes"
}

# galera_node_start N NODES [SERVER-OPTION...]: start node N (server
# gN) of a cluster of NODES and wait until it is synced; node 1
# bootstraps the cluster (--wsrep-new-cluster).
galera_node_start()
{
	local n=$1 nodes=$2 peers='' i new=()
	shift 2
	for i in $(seq 1 "$nodes"); do
		peers+=${peers:+,}127.0.0.1:$(galera_port "$i" gcomm)
	done
	[ "$n" -ne 1 ] || new=(--wsrep-new-cluster)
	server_start "g$n" --bind-address=127.0.0.1 \
	    --port="$(galera_port "$n" sql)" \
	    --binlog-format=ROW --innodb-autoinc-lock-mode=2 \
	    --wsrep-on=ON --wsrep-provider="$GALERA_PROVIDER" \
	    --wsrep-cluster-name="rowq$$" --wsrep-node-name="g$n" \
	    --wsrep-cluster-address="gcomm://$peers" \
	    --wsrep-node-address="127.0.0.1:$(galera_port "$n" gcomm)" \
	    --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$(galera_port "$n" gcomm);ist.recv_addr=127.0.0.1:$(galera_port "$n" ist);gcache.size=32M" \
	    --wsrep-sst-method=rsync \
	    --wsrep-sst-receive-address="127.0.0.1:$(galera_port "$n" sst)" \
	    "${new[@]}" "$@"
	galera_wait_synced "$n"
}

# galera_wait_synced N: wait until node N says it is synced.
galera_wait_synced()
{
	local node=$1
	# wait_until evaluates this in its own frame: $1 is not ours there.
	wait_until 60 '[ "$(server_sql "g$node" "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '"'WSREP_LOCAL_STATE_COMMENT'"'" 2>/dev/null)" = Synced ]' || {
		tail -n 30 "$(_srv_dir "g$node")/error.log" >&2
		fail "Galera node $node did not reach Synced; the end of its log is above"
	}
}

# galera_cluster_start NODES [SERVER-OPTION...]: nodes g1 to gNODES,
# all synced, in a cluster of their own.
galera_cluster_start()
{
	local nodes=$1 n seed=$ROWQ_TEST_TMP/galera-seed
	shift
	_galera_pick_base
	galera_node_start 1 "$nodes" "$@"
	# Stopped cleanly, node 1's state (cluster id and position) is in
	# its grastate.dat: a copy joins at that position.  Its last view
	# (gvwstate.dat) is node 1's own and stays behind.
	server_stop g1
	cp -a "$(_srv_dir g1)/data" "$seed"
	rm -f "$seed/gvwstate.dat"
	server_restart g1
	galera_wait_synced 1
	for n in $(seq 2 "$nodes"); do
		SERVER_DATA_FROM=$seed galera_node_start "$n" "$nodes" "$@"
	done
	rm -rf "$seed"
}
