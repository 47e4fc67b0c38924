#!/usr/bin/env bash
# deps.sh — make sure what a make target needs is on this machine, installing
# it when it is missing (Debian/Ubuntu with apt-get, as root or with sudo), or
# say exactly what to install and exit non-zero. The make targets call it, so
# `make run` and `make test` work on a fresh machine with only Go, make and
# root; .ci/run relies on nothing else.
#
# Usage: deps.sh NEED...
#
#   curl        curl (make run's demo seed)
#   chromium    /usr/bin/chromium (the status page's browser test)
#   promtool    promtool (make check-rules; Debian package prometheus, its
#               server is kept from starting)
#   staticcheck staticcheck $STATICCHECK_VERSION in $(go env GOPATH)/bin
#   iproute2    ip (the fault suite's network namespaces; Debian iproute2)
#   node        node >= $NODE_MIN_MAJOR (default 20) and npm (the TypeScript client's
#               build and tests; Debian nodejs and npm); an older node than
#               apt-get gives is an error naming what to install
#   postgres    a PostgreSQL for the ledger tests; prints its DSN on stdout:
#                 1. $RANKGATE_TEST_PG_DSN when set (it must answer);
#                 2. else the local trust-auth server postgres@127.0.0.1:5432/test
#                    when it answers (skipped with RANKGATE_PG_PRIVATE=1);
#                 3. else a private server of our own: initdb (trust auth, as
#                    the postgres user) in $RANKGATE_PG_DIR (default
#                    /tmp/rankgate-pg-$RANKGATE_PG_PORT) on 127.0.0.1:$RANKGATE_PG_PORT
#                    (default 55432), installing Debian's postgresql when no
#                    server binaries exist. Idempotent: a running one is reused.
#   postgres-down  stop the private server of step 3 and delete its data
#
# Progress goes to stderr; only the DSN goes to stdout.
set -euo pipefail

PROG=$(basename "$0")
STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}
NODE_MIN_MAJOR=${NODE_MIN_MAJOR:-20}
PG_PORT=${RANKGATE_PG_PORT:-55432}
PG_DIR=${RANKGATE_PG_DIR:-/tmp/rankgate-pg-$PG_PORT}
DEFAULT_DSN="postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "$PROG" "$*" >&2
	exit 1
}

SUDO=
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		SUDO=
		return 0
	fi
	command -v sudo >/dev/null && sudo -n true 2>/dev/null && SUDO=sudo && return 0
	return 1
}

# apt_install PKG... — install Debian packages without starting their services
# (policy-rc.d 101 = action forbidden), or die with the command to run.
apt_install() {
	local what="$*"
	if ! command -v apt-get >/dev/null || ! as_root; then
		die "missing: $what. Install it (Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y $what) and run again"
	fi
	log "installing $what with apt-get"
	local policy=/usr/sbin/policy-rc.d created=0 rc=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod 755 "$policy" && created=1
	fi
	{
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq &&
			$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
				--no-install-recommends "$@"
	} >&2 || rc=$?
	((created)) && $SUDO rm -f "$policy"
	((rc == 0)) || die "apt-get install $what failed (exit $rc)"
}

need_curl() {
	command -v curl >/dev/null || apt_install curl ca-certificates
	command -v curl >/dev/null || die "curl still missing after apt-get install curl"
}

need_chromium() {
	local p
	for p in /usr/bin/chromium chromium chromium-browser; do
		command -v "$p" >/dev/null && return 0
	done
	apt_install chromium
	[[ -x /usr/bin/chromium ]] || die "chromium still missing after apt-get install chromium"
	/usr/bin/chromium --version >&2 || die "chromium is installed but does not start"
}

need_promtool() {
	command -v promtool >/dev/null && return 0
	apt_install prometheus
	if pgrep -x prometheus >/dev/null; then
		log "the prometheus package started a server; stopping it"
		$SUDO service prometheus stop >&2 || log "service prometheus stop failed"
	fi
	command -v promtool >/dev/null || die "promtool still missing after apt-get install prometheus"
}

need_staticcheck() {
	local gobin
	gobin="$(go env GOPATH)/bin"
	if [[ -x $gobin/staticcheck ]] && "$gobin/staticcheck" -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
		return 0
	fi
	log "go install honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
	go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" >&2 ||
		die "go install staticcheck@$STATICCHECK_VERSION failed (needs the Go module proxy)"
}

# node_major — the major version of the node on PATH (0: none).
node_major() {
	local v
	v=$(node --version 2>/dev/null) || {
		echo 0
		return
	}
	v=${v#v}
	echo "${v%%.*}"
}

need_node() {
	if (($(node_major) >= NODE_MIN_MAJOR)) && command -v npm >/dev/null; then
		return 0
	fi
	if command -v node >/dev/null; then
		log "node $(node --version) is older than $NODE_MIN_MAJOR or npm is missing; trying apt-get"
	fi
	apt_install nodejs npm
	local have
	have=$(node_major)
	((have >= NODE_MIN_MAJOR)) ||
		die "node >= $NODE_MIN_MAJOR is needed (the TypeScript client's tests), apt-get gave $(node --version 2>/dev/null || echo none). Install Node.js $NODE_MIN_MAJOR or later (https://nodejs.org/en/download, or NodeSource's apt repository) and run again"
	command -v npm >/dev/null || die "npm still missing after apt-get install npm"
	log "node $(node --version), npm $(npm --version)"
}

# pg_answers DSN — true when a PostgreSQL answers a query at DSN.
pg_answers() {
	PGCONNECT_TIMEOUT=3 psql "$1" -Atqc 'select 1' >/dev/null 2>&1
}

# pg_bindir — the newest installed PostgreSQL server's bin directory.
pg_bindir() {
	local d
	d=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -type d -name bin 2>/dev/null | sort -V | tail -n1)
	[[ -n $d && -x $d/initdb && -x $d/pg_ctl ]] && printf '%s\n' "$d"
}

# run_pg CMD... — run a server command as the postgres user when we are root
# (initdb and postgres refuse to run as root).
run_pg() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

need_postgres() {
	command -v psql >/dev/null || apt_install postgresql-client
	command -v psql >/dev/null || die "psql still missing after apt-get install postgresql-client"

	if [[ -n ${RANKGATE_TEST_PG_DSN:-} ]]; then
		pg_answers "$RANKGATE_TEST_PG_DSN" || die "RANKGATE_TEST_PG_DSN=$RANKGATE_TEST_PG_DSN does not answer (unset it to let make test start a PostgreSQL of its own)"
		printf '%s\n' "$RANKGATE_TEST_PG_DSN"
		return 0
	fi
	if [[ ${RANKGATE_PG_PRIVATE:-0} != 1 ]] && pg_answers "$DEFAULT_DSN"; then
		printf '%s\n' "$DEFAULT_DSN"
		return 0
	fi

	local dsn="postgres://postgres@127.0.0.1:$PG_PORT/test?sslmode=disable"
	if pg_answers "$dsn"; then
		printf '%s\n' "$dsn"
		return 0
	fi
	log "no PostgreSQL answers at $DEFAULT_DSN; starting a private one on 127.0.0.1:$PG_PORT (data in $PG_DIR)"
	local bin
	bin=$(pg_bindir || true)
	if [[ -z $bin ]]; then
		apt_install postgresql
		bin=$(pg_bindir || true)
		[[ -n $bin ]] || die "PostgreSQL server binaries still missing under /usr/lib/postgresql after apt-get install postgresql"
	fi
	if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
		die "running as root, but there is no 'postgres' user to run the private PostgreSQL as (apt-get install postgresql creates it)"
	fi
	if [[ ! -s $PG_DIR/data/PG_VERSION ]]; then
		rm -rf "$PG_DIR"
		mkdir -p "$PG_DIR/data" "$PG_DIR/run"
		[[ $(id -u) -eq 0 ]] && chown -R postgres: "$PG_DIR"
		chmod 700 "$PG_DIR/data"
		run_pg "$bin/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --no-locale >&2 ||
			die "initdb $PG_DIR/data failed"
	fi
	run_pg "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$PG_DIR/run" start >&2 ||
		die "the private PostgreSQL did not start; its log: $PG_DIR/postgres.log"
	local base="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
	if [[ $(psql "$base" -Atqc "select 1 from pg_database where datname = 'test'") != 1 ]]; then
		psql "$base" -qc 'create database test' >&2 || die "create database test failed"
	fi
	pg_answers "$dsn" || die "the private PostgreSQL does not answer at $dsn"
	printf '%s\n' "$dsn"
}

postgres_down() {
	local bin
	bin=$(pg_bindir || true)
	if [[ -n $bin && -s $PG_DIR/data/postmaster.pid ]]; then
		run_pg "$bin/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >&2 || log "pg_ctl stop failed"
	fi
	rm -rf "$PG_DIR"
}

(($# > 0)) || {
	sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
for need in "$@"; do
	case $need in
	curl) need_curl ;;
	chromium) need_chromium ;;
	promtool) need_promtool ;;
	staticcheck) need_staticcheck ;;
	iproute2) command -v ip >/dev/null || apt_install iproute2 ;;
	node) need_node ;;
	postgres) need_postgres ;;
	postgres-down) postgres_down ;;
	*) die "unknown need '$need' (want curl, chromium, promtool, staticcheck, iproute2, node, postgres, postgres-down)" ;;
	esac
done
