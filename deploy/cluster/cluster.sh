#!/usr/bin/env bash
# cluster.sh — a real local Redis Cluster (3 masters + 3 replicas) on 127.0.0.1,
# built from the redis-server binary. Used by `make run`, the integration tests
# (internal/testcluster) and the load tests.
#
# Usage: cluster.sh [-p BASE_PORT] up|down|status|addrs|flush
#
#   up      start the cluster on ports BASE..BASE+5 (idempotent; prints the seed addrs)
#   down    stop the nodes of BASE and remove their data dir
#   status  print the cluster info summary and the node table (exit 1 when unhealthy)
#   addrs   print the comma-separated seed addrs
#   flush   delete every key (FLUSHALL on each master; the replicas follow)
#
# Environment:
#   RANKGATE_CLUSTER_PORT          base port (default 7000; -p overrides)
#   RANKGATE_CLUSTER_NODE_TIMEOUT  cluster-node-timeout in ms (default 3000)
#   RANKGATE_CLUSTER_EXTRA_ARGS    extra redis-server arguments, split on whitespace,
#                                  appended to every node (e.g. "--maxmemory 64mb")
#   RANKGATE_CLUSTER_LOCK_TIMEOUT  seconds to wait for another cluster.sh on the same
#                                  base (default 300)
#   REDIS_SERVER, REDIS_CLI        binaries to use (default: redis-server, redis-cli on PATH)
#
# Data, logs, pidfiles and nodes.conf live in deploy/cluster/.data/<BASE>/.
# `up` prints only the addrs on stdout; progress and errors go to stderr.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=$(basename "$0")

BASE=${RANKGATE_CLUSTER_PORT:-7000}
NODE_TIMEOUT=${RANKGATE_CLUSTER_NODE_TIMEOUT:-3000}
EXTRA_ARGS_STR=${RANKGATE_CLUSTER_EXTRA_ARGS:-}
LOCK_TIMEOUT=${RANKGATE_CLUSTER_LOCK_TIMEOUT:-300}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}

HOST=127.0.0.1
NODES=6
PING_WAIT=10     # seconds per node to answer PING after start
CLUSTER_WAIT=30  # seconds for the cluster to become healthy after create
CREATE_WAIT=60   # seconds for `redis-cli --cluster create`
STOP_WAIT=10     # seconds per node to exit after SHUTDOWN

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	exit 1
}

usage() {
	sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------- arguments

CMD=
while (($# > 0)); do
	case $1 in
	-p | --port)
		(($# >= 2)) || die "$1 needs a port"
		BASE=$2
		shift 2
		;;
	-p*)
		BASE=${1#-p}
		shift
		;;
	-h | --help | help) usage ;;
	up | down | status | addrs | flush)
		[[ -z $CMD ]] || die "only one command allowed (got $CMD and $1)"
		CMD=$1
		shift
		;;
	*)
		log "unknown argument: $1"
		usage
		;;
	esac
done
[[ -n $CMD ]] || usage

[[ $BASE =~ ^[0-9]+$ ]] || die "base port must be a number, got '$BASE'"
((BASE >= 1024 && BASE + NODES - 1 + 10000 <= 65535)) ||
	die "base port $BASE out of range: need 1024 <= BASE and BASE+5+10000 (cluster bus) <= 65535"
[[ $NODE_TIMEOUT =~ ^[0-9]+$ ]] || die "RANKGATE_CLUSTER_NODE_TIMEOUT must be milliseconds, got '$NODE_TIMEOUT'"
[[ $LOCK_TIMEOUT =~ ^[0-9]+$ ]] || die "RANKGATE_CLUSTER_LOCK_TIMEOUT must be seconds, got '$LOCK_TIMEOUT'"
read -r -a EXTRA_ARGS <<<"$EXTRA_ARGS_STR" || true

PORTS=()
for ((i = 0; i < NODES; i++)); do PORTS+=($((BASE + i))); done

DATA_ROOT="$SCRIPT_DIR/.data"
DATA="$DATA_ROOT/$BASE"
LOCK="$DATA/cluster.lock"
STAMP="$DATA/cluster.conf" # the settings the running cluster was started with

addrs() {
	local out='' p
	for p in "${PORTS[@]}"; do out+="${out:+,}$HOST:$p"; done
	printf '%s\n' "$out"
}

# desired_stamp describes the settings `up` starts nodes with; a running cluster
# started with other settings is restarted.
desired_stamp() {
	printf 'base=%s\nnode_timeout=%s\nextra_args=%s\n' "$BASE" "$NODE_TIMEOUT" "${EXTRA_ARGS[*]:-}"
}

# ---------------------------------------------------------------- helpers

# rcli PORT ARGS... — redis-cli against one node, never hanging.
rcli() {
	local port=$1
	shift
	timeout 5 "$REDIS_CLI" -h "$HOST" -p "$port" "$@" 2>&1 </dev/null 9>&- | tr -d '\r'
	return "${PIPESTATUS[0]}"
}

port_open() {
	timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null 9>&-
}

pid_alive() {
	[[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null
}

# is_our_redis PID PORT — the pid is a redis-server serving PORT.
is_our_redis() {
	local pid=$1 port=$2 cmd=
	pid_alive "$pid" || return 1
	if [[ -r /proc/$pid/cmdline ]]; then
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
	else
		cmd=$(ps -o args= -p "$pid" 2>/dev/null || true)
	fi
	[[ $cmd == *redis-server* && $cmd =~ :$port( |$) ]]
}

node_log_tail() {
	local port=$1 f="$DATA/$1.log"
	if [[ -s $f ]]; then
		printf -- '--- last lines of %s ---\n' "$f" >&2
		tail -n 25 "$f" >&2
		printf -- '---\n' >&2
	else
		printf -- '(no log at %s)\n' "$f" >&2
	fi
}

STARTED=0 # set once `up` has launched nodes: a failed up stops them again (logs are kept)

fail_node() { # fail_node PORT MESSAGE
	printf '%s: error: %s\n' "$PROG" "$2" >&2
	[[ -n $1 ]] && node_log_tail "$1"
	if ((STARTED)); then
		log "stopping the nodes this run started; logs stay in $DATA"
		stop_all || true
	fi
	exit 1
}

ensure_tools() {
	command -v timeout >/dev/null || die "'timeout' (coreutils) is required"
	command -v flock >/dev/null || die "'flock' (util-linux) is required: apt-get install -y util-linux"
	if command -v "$REDIS_SERVER" >/dev/null && command -v "$REDIS_CLI" >/dev/null; then
		return
	fi
	local how="install Redis 7: Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y redis-server redis-tools (then 'sudo systemctl disable --now redis-server' if you do not want the system service); macOS: brew install redis"
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		log "$REDIS_SERVER/$REDIS_CLI not found; installing redis-server and redis-tools with apt-get"
		# Keep the package from starting the Debian redis-server service (policy-rc.d 101 = action forbidden).
		local policy=/usr/sbin/policy-rc.d created=0
		if [[ ! -e $policy ]]; then
			printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && created=1
		fi
		local rc=0
		{
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -q &&
				DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q \
					--no-install-recommends redis-server redis-tools
		} >&2 9>&- || rc=$?
		((created)) && rm -f "$policy"
		((rc == 0)) || die "apt-get install redis-server redis-tools failed (exit $rc)"
		if ! command -v "$REDIS_SERVER" >/dev/null || ! command -v "$REDIS_CLI" >/dev/null; then
			die "$REDIS_SERVER/$REDIS_CLI still not found after apt-get install"
		fi
		return
	fi
	die "$REDIS_SERVER/$REDIS_CLI not found on PATH. To $how"
}

# acquire_lock — serialize cluster.sh runs on the same base (flock on $LOCK, fd 9).
# `down` removes the data dir, lock file included, so after getting the lock we make
# sure it is still the file at $LOCK and retry otherwise.
acquire_lock() {
	local deadline=$((SECONDS + LOCK_TIMEOUT)) left
	while :; do
		mkdir -p "$DATA"
		exec 9>>"$LOCK"
		left=$((deadline - SECONDS))
		((left > 0)) || left=1
		if ! flock -w "$left" 9; then
			die "timed out after ${LOCK_TIMEOUT}s waiting for $LOCK (another cluster.sh on base $BASE holds it)"
		fi
		if [[ -e $LOCK && "$(stat -L -c '%d:%i' /dev/fd/9)" == "$(stat -c '%d:%i' "$LOCK" 2>/dev/null)" ]]; then
			return
		fi
		exec 9>&-
	done
}

# owner_of PORT — prints the pidfile a redis on PORT was started with ("" if unknown).
owner_of() {
	local out
	out=$(rcli "$1" CONFIG GET pidfile 2>/dev/null) || return 0
	printf '%s\n' "$out" | sed -n '2p'
}

# ---------------------------------------------------------------- health

HEALTH_ERR=
HEALTH_PORT=
CHECK_STAMP=1 # status does not compare settings: its env may differ from the up that started the nodes

unhealthy() { # unhealthy PORT MESSAGE
	HEALTH_PORT=$1
	HEALTH_ERR=$2
	return 1
}

info_field() { # info_field NAME <<<TEXT
	sed -n "s/^$1:\(.*\)$/\1/p" | head -n1
}

# probe PORT — one redis-cli round trip (process starts are what make a check slow)
# that fills P_PONG, P_PIDFILE, P_STATE, P_ASSIGNED, P_SLOTSOK, P_KNOWN, P_SIZE,
# P_ROLE, P_LINK, P_NODES (the CLUSTER NODES lines) and P_RAW (first reply line).
probe() {
	local line next='' out
	P_PONG='' P_PIDFILE='' P_STATE='' P_ASSIGNED='' P_SLOTSOK='' P_KNOWN='' P_SIZE='' P_ROLE='' P_LINK='' P_NODES='' P_RAW=''
	out=$(printf 'PING\nCONFIG GET pidfile\nCLUSTER INFO\nINFO replication\nCLUSTER NODES\n' |
		timeout 5 "$REDIS_CLI" -h "$HOST" -p "$1" 2>&1 9>&-) || true
	while IFS= read -r line; do
		line=${line%$'\r'}
		[[ -z $P_RAW ]] && P_RAW=$line
		if [[ $next == pidfile ]]; then
			P_PIDFILE=$line
			next=
			continue
		fi
		case $line in
		PONG) P_PONG=1 ;;
		pidfile) next=pidfile ;;
		cluster_state:*) P_STATE=${line#*:} ;;
		cluster_slots_assigned:*) P_ASSIGNED=${line#*:} ;;
		cluster_slots_ok:*) P_SLOTSOK=${line#*:} ;;
		cluster_known_nodes:*) P_KNOWN=${line#*:} ;;
		cluster_size:*) P_SIZE=${line#*:} ;;
		role:*) P_ROLE=${line#*:} ;;
		master_link_status:*) P_LINK=${line#*:} ;;
		*) [[ $line =~ ^[0-9a-f]{40}\  ]] && P_NODES+=$line$'\n' ;;
		esac
	done <<<"$out"
	return 0
}

# check_health — 0 if the 6 nodes of BASE were started by this script with the
# current settings, every node answers and sees cluster_state:ok, all 16384 slots
# are covered by 3 masters and every master has a replica whose link is up.
# Otherwise sets HEALTH_ERR (and HEALTH_PORT, the node to blame) and returns 1.
check_health() {
	HEALTH_ERR=
	HEALTH_PORT=
	FOREIGN_DIR=
	local p base_nodes=
	for p in "${PORTS[@]}"; do
		probe "$p"
		[[ -n $P_PONG ]] || unhealthy "$p" "node $HOST:$p does not answer PING (${P_RAW:-no reply})" || return 1
		if [[ $P_PIDFILE != "$DATA/$p.pid" ]]; then
			# A cluster that this script started from another checkout of the
			# repository is as good as ours: use it, leave it to its owner.
			if [[ $P_PIDFILE == */deploy/cluster/.data/$BASE/$p.pid ]]; then
				FOREIGN_DIR=${P_PIDFILE%/*}
			else
				unhealthy "" "node $HOST:$p was not started by this script for base $BASE (its pidfile is '${P_PIDFILE}')" || return 1
			fi
		fi
		[[ $P_STATE == ok ]] || unhealthy "$p" "node $HOST:$p: cluster_state:${P_STATE:-? (cluster mode off?)}" || return 1
		if [[ $P_ROLE == slave ]]; then
			[[ $P_LINK == up ]] || unhealthy "$p" "replica $HOST:$p: master_link_status:${P_LINK:-?}" || return 1
		fi
		if ((p == BASE)); then
			[[ $P_ASSIGNED == 16384 && $P_SLOTSOK == 16384 ]] ||
				unhealthy "$p" "slots not all covered: cluster_slots_assigned:$P_ASSIGNED cluster_slots_ok:$P_SLOTSOK" || return 1
			[[ $P_KNOWN == "$NODES" && $P_SIZE == 3 ]] ||
				unhealthy "$p" "expected 6 known nodes and 3 masters, got cluster_known_nodes:$P_KNOWN cluster_size:$P_SIZE" || return 1
			base_nodes=$P_NODES
		fi
	done
	if ((CHECK_STAMP)) && [[ -z $FOREIGN_DIR ]] && { [[ ! -f $STAMP ]] || [[ "$(<"$STAMP")" != "$(desired_stamp)" ]]; }; then
		unhealthy "" "settings changed, want: $(desired_stamp | tr '\n' ' ')" || return 1
	fi

	# Node table (as 127.0.0.1:BASE sees it): every node is one of ours, 3 healthy
	# masters, each with a connected, non-failed replica.
	local problem
	problem=$(awk -v host="$HOST" -v base="$BASE" -v n="$NODES" '
		NF >= 8 {
			addr = $2; sub(/@.*/, "", addr); sub(/,.*/, "", addr)
			split(addr, hp, ":")
			if (hp[1] != host || hp[2] < base || hp[2] >= base + n) { print "foreign node " $2 " in the cluster"; exit }
			if ($3 ~ /fail/) { print "node " addr " is flagged " $3; exit }
			if ($3 ~ /master/) { masters[$1] = addr; nm++ }
			else if ($3 ~ /slave/ && $8 == "connected") { reps[$4]++ }
		}
		END {
			if (nm != 3) { print "expected 3 masters, found " nm + 0; exit }
			for (id in masters) if (!reps[id]) { print "master " masters[id] " has no connected replica"; exit }
		}' <<<"$base_nodes")
	[[ -z $problem ]] || unhealthy "$BASE" "$problem" || return 1
	return 0
}

# ---------------------------------------------------------------- stop

# our_pid PORT — pid of our redis-server on PORT: from its pidfile, or a live node
# whose pidfile setting points into our data dir (data dir removed by hand).
# Prints nothing for anything else: we never stop a process that is not ours.
our_pid() {
	local p=$1 pidf="$DATA/$1.pid" pid=
	[[ -f $pidf ]] && pid=$(tr -dc '0-9' <"$pidf")
	if is_our_redis "$pid" "$p"; then
		echo "$pid"
		return
	fi
	command -v "$REDIS_CLI" >/dev/null || return 0
	probe "$p"
	if [[ -n $P_PIDFILE && $P_PIDFILE == "$pidf" ]]; then
		rcli "$p" INFO server | info_field process_id || true
	fi
}

wait_gone() { # wait_gone SECONDS PID... — waits until all PIDs exit; prints the survivors
	local deadline=$((SECONDS + $1)) pid alive
	shift
	while :; do
		alive=()
		for pid in "$@"; do pid_alive "$pid" && alive+=("$pid"); done
		((${#alive[@]} == 0 || SECONDS >= deadline)) && break
		sleep 0.1
	done
	echo "${alive[*]:-}"
}

# stop_all — SHUTDOWN NOSAVE NOW every node of ours in parallel (NOW: do not wait
# for replicas to catch up, the data is thrown away), then SIGTERM, then SIGKILL,
# each step bounded.
stop_all() {
	local p pid pids=()
	for p in "${PORTS[@]}"; do
		pid=$(our_pid "$p")
		if [[ -n $pid ]]; then
			pids+=("$pid")
			if command -v "$REDIS_CLI" >/dev/null &&
				[[ "$(rcli "$p" SHUTDOWN NOSAVE NOW 2>&1)" != *"Could not connect"* ]]; then
				: # shutting down
			else
				kill -TERM "$pid" 2>/dev/null || true
			fi
		fi
	done
	rm -f "$DATA"/*.pid
	((${#pids[@]} > 0)) || return 0
	local -a left
	read -r -a left <<<"$(wait_gone "$STOP_WAIT" "${pids[@]}")"
	if ((${#left[@]} > 0)); then
		log "redis-server pid(s) ${left[*]} still running ${STOP_WAIT}s after SHUTDOWN; sending SIGTERM"
		kill -TERM "${left[@]}" 2>/dev/null || true
		read -r -a left <<<"$(wait_gone 5 "${left[@]}")"
	fi
	if ((${#left[@]} > 0)); then
		log "redis-server pid(s) ${left[*]} ignored SIGTERM; sending SIGKILL"
		kill -KILL "${left[@]}" 2>/dev/null || true
		read -r -a left <<<"$(wait_gone 5 "${left[@]}")"
		((${#left[@]} == 0)) || die "could not stop redis-server pid(s) ${left[*]}"
	fi
}

# ---------------------------------------------------------------- commands

cmd_up() {
	command -v flock >/dev/null || die "'flock' (util-linux) is required: apt-get install -y util-linux"
	acquire_lock # before ensure_tools: concurrent ups must not run apt-get side by side
	ensure_tools
	if check_health; then
		if [[ -n $FOREIGN_DIR ]]; then
			log "cluster on base $BASE already up (started from another checkout, data in $FOREIGN_DIR); using it"
		else
			log "cluster on base $BASE already up"
		fi
		addrs
		return 0
	fi
	if compgen -G "$DATA/*.pid" >/dev/null || compgen -G "$DATA/nodes-*.conf" >/dev/null; then
		log "cluster on base $BASE is not healthy ($HEALTH_ERR); cleaning up and restarting"
	else
		log "starting cluster on base $BASE (ports $BASE-$((BASE + NODES - 1)))"
	fi
	stop_all

	# Anything still listening on our ports is not ours.
	local p owner
	for p in "${PORTS[@]}"; do
		for port in "$p" $((p + 10000)); do
			if port_open "$port"; then
				owner=$(owner_of "$port")
				die "port $HOST:$port is in use by another process${owner:+ (a redis-server with pidfile $owner)}; pick another base port with -p or RANKGATE_CLUSTER_PORT"
			fi
		done
	done

	# Fresh state: no stale nodes.conf, logs of this run only.
	find "$DATA" -mindepth 1 -maxdepth 1 ! -name "$(basename "$LOCK")" -exec rm -rf {} +
	desired_stamp >"$STAMP"

	local out
	STARTED=1
	for p in "${PORTS[@]}"; do
		local args=(
			--port "$p" --bind "$HOST" --protected-mode no
			--daemonize yes --pidfile "$DATA/$p.pid" --logfile "$DATA/$p.log"
			--dir "$DATA" --dbfilename "dump-$p.rdb"
			--cluster-enabled yes --cluster-config-file "nodes-$p.conf"
			--cluster-node-timeout "$NODE_TIMEOUT"
			--appendonly no --save ""
			--maxmemory-policy noeviction
			--replica-serve-stale-data no
			"${EXTRA_ARGS[@]}"
		)
		if ! out=$(timeout 10 "$REDIS_SERVER" "${args[@]}" </dev/null 2>&1 9>&-); then
			printf '%s\n' "$out" >&2
			fail_node "$p" "redis-server for port $p failed to start (args: ${args[*]})"
		fi
	done

	local deadline
	for p in "${PORTS[@]}"; do
		deadline=$((SECONDS + PING_WAIT))
		until [[ "$(rcli "$p" PING 2>/dev/null)" == PONG ]]; do
			((SECONDS < deadline)) || fail_node "$p" "node $HOST:$p did not answer PING within ${PING_WAIT}s"
			sleep 0.1
		done
	done

	local seeds=()
	for p in "${PORTS[@]}"; do seeds+=("$HOST:$p"); done
	log "creating cluster ${seeds[*]}"
	if ! timeout "$CREATE_WAIT" "$REDIS_CLI" --cluster create "${seeds[@]}" --cluster-replicas 1 --cluster-yes \
		</dev/null >"$DATA/create.log" 2>&1 9>&-; then
		tail -n 30 "$DATA/create.log" >&2 || true
		fail_node "$BASE" "redis-cli --cluster create failed or took over ${CREATE_WAIT}s (full output: $DATA/create.log)"
	fi

	deadline=$((SECONDS + CLUSTER_WAIT))
	until check_health; do
		if ((SECONDS >= deadline)); then
			rcli "$BASE" CLUSTER NODES >&2 || true
			fail_node "$HEALTH_PORT" "cluster on base $BASE not healthy within ${CLUSTER_WAIT}s: $HEALTH_ERR"
		fi
		sleep 0.2
	done
	log "cluster on base $BASE is up (3 masters, 3 replicas)"
	addrs
}

cmd_down() {
	if [[ ! -d $DATA ]]; then
		# Nothing recorded; still stop live nodes whose pidfile points into our data dir.
		local p any=0
		if command -v "$REDIS_CLI" >/dev/null; then
			for p in "${PORTS[@]}"; do
				probe "$p"
				[[ $P_PIDFILE == "$DATA/$p.pid" ]] && any=1
			done
		fi
		if ((!any)); then
			log "cluster on base $BASE is not running"
			return 0
		fi
	fi
	command -v flock >/dev/null || die "'flock' (util-linux) is required"
	acquire_lock
	stop_all
	rm -rf "$DATA"
	rmdir "$DATA_ROOT" 2>/dev/null || true
	log "cluster on base $BASE stopped"
}

cmd_status() {
	command -v "$REDIS_CLI" >/dev/null || die "$REDIS_CLI not found on PATH"
	local p out rc=0
	echo "base port: $BASE   data: $DATA"
	echo "seeds: $(addrs)"
	for p in "${PORTS[@]}"; do
		out=$(rcli "$p" PING) || true
		printf '  %s:%s  %s\n' "$HOST" "$p" "$([[ $out == PONG ]] && echo up || echo "DOWN (${out:-no reply})")"
	done
	out=$(rcli "$BASE" CLUSTER INFO) || true
	if [[ $out == *cluster_state:* ]]; then
		echo "cluster info (from $HOST:$BASE):"
		grep -E '^cluster_(state|slots_assigned|slots_ok|slots_pfail|slots_fail|known_nodes|size|current_epoch):' <<<"$out" | sed 's/^/  /'
		echo "cluster nodes:"
		rcli "$BASE" CLUSTER NODES | sort -k2 | awk '{ printf "  %s %-22s %-18s %s %s\n", substr($1,1,8), $2, $3, ($4 == "-" ? "" : "of " substr($4,1,8)), $8 }'
	else
		echo "cluster info: unavailable (${out:-no reply})"
	fi
	CHECK_STAMP=0
	if check_health; then
		echo "health: ok"
	else
		echo "health: NOT OK: $HEALTH_ERR"
		rc=1
	fi
	return $rc
}

cmd_flush() {
	command -v "$REDIS_CLI" >/dev/null || die "$REDIS_CLI not found on PATH"
	local p role n=0
	for p in "${PORTS[@]}"; do
		role=$(rcli "$p" ROLE | head -n1) || die "node $HOST:$p does not answer"
		if [[ $role == master ]]; then
			[[ $(rcli "$p" FLUSHALL) == OK ]] || die "FLUSHALL on $HOST:$p failed"
			n=$((n + 1))
		fi
	done
	((n > 0)) || die "no master answered on base $BASE"
	log "cluster on base $BASE flushed ($n masters)"
}

case $CMD in
up) cmd_up ;;
flush) cmd_flush ;;
down) cmd_down ;;
status) cmd_status ;;
addrs) addrs ;;
esac
