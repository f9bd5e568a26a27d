# Sourced by scripts/test and scripts/bench-*: installs Debian's PostgreSQL if missing and
# starts a throw-away cluster on a free loopback port, stopped when the calling script exits.
#
#   start_postgres [extra postgres -c settings...]   sets PG_URL (database "postgres")

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_postgres() {
  if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
    printf 'installing postgresql\n' >&2
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
  PG_BIN=$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -n 1)")
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_postgres() {
  install_postgres
  PG_WORK=$(mktemp -d /tmp/bindery-pg.XXXXXX)
  chmod 755 "$PG_WORK"
  PG_DATA="$PG_WORK/data"
  PG_RUN=()
  if [ "$(id -u)" = 0 ]; then PG_RUN=(runuser -u postgres --); fi
  mkdir -p "$PG_DATA"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$PG_DATA"; fi
  "${PG_RUN[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U bindery --auth=trust -E UTF8 --no-instructions >/dev/null
  local port settings=() s
  port=$(free_port)
  for s in "$@"; do settings+=(-c "$s"); done
  "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $PG_DATA -c max_connections=300 ${settings[*]}" >/dev/null
  trap stop_postgres EXIT
  PG_URL="postgres://bindery@127.0.0.1:$port/postgres"
  export PG_URL
}

stop_postgres() {
  local code=$?
  if [ -n "${PG_DATA:-}" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
    "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate stop >/dev/null 2>&1 || true
  fi
  [ -n "${PG_WORK:-}" ] && rm -rf "$PG_WORK"
  exit "$code"
}
