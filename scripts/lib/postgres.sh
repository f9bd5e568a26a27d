# Sourced by scripts/test and scripts/bench-*: installs Debian's PostgreSQL if missing and
# starts throw-away clusters on free loopback ports, stopped when the calling script exits.
#
#   start_postgres [extra postgres -c settings...]      sets PG_URL (database "postgres")
#   start_postgres_tls [extra postgres -c settings...]  a cluster that accepts only TLS
#       (pg_hba allows hostssl alone, with a password), its certificate issued by a test CA
#       made here and now for the host name localhost. Sets PG_TLS_URL (no TLS options),
#       PG_TLS_CA (the CA's PEM file) and PG_TLS_WRONG_CA (another CA, which issued nothing).

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

PG_CLUSTERS=()

install_postgres() {
  if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
    printf 'installing postgresql\n' >&2
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
  PG_BIN=$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -n 1)")
  PG_RUN=()
  if [ "$(id -u)" = 0 ]; then PG_RUN=(runuser -u postgres --); fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# new_cluster WORK: initdb into WORK/data, owned by the server's user. Sets CLUSTER_DATA.
new_cluster() {
  local work=$1 initdb_args=("${@:2}")
  CLUSTER_DATA="$work/data"
  mkdir -p "$CLUSTER_DATA"
  if [ "$(id -u)" = 0 ]; then chown -R postgres: "$work"; fi
  "${PG_RUN[@]}" "$PG_BIN/initdb" -D "$CLUSTER_DATA" -U bindery -E UTF8 --no-instructions \
    "${initdb_args[@]}" >/dev/null
}

# run_cluster DATA PORT [settings...]: starts it, and stops it when the script exits.
run_cluster() {
  local data=$1 port=$2 settings=() s
  for s in "${@:3}"; do settings+=(-c "$s"); done
  if [ ${#PG_CLUSTERS[@]} -eq 0 ]; then trap stop_postgres EXIT; fi
  PG_CLUSTERS+=("$data")
  "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $data -c max_connections=300 ${settings[*]}" >/dev/null
}

start_postgres() {
  install_postgres
  PG_WORK=$(mktemp -d /tmp/bindery-pg.XXXXXX)
  chmod 755 "$PG_WORK"
  new_cluster "$PG_WORK" --auth=trust
  PG_DATA=$CLUSTER_DATA
  local port
  port=$(free_port)
  run_cluster "$PG_DATA" "$port" "$@"
  PG_URL="postgres://bindery@127.0.0.1:$port/postgres"
  export PG_URL
}

start_postgres_tls() {
  install_postgres
  PG_TLS_WORK=$(mktemp -d /tmp/bindery-pg-tls.XXXXXX)
  chmod 755 "$PG_TLS_WORK"
  local certs="$PG_TLS_WORK/certs" password
  mkdir -p "$certs"
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  make_test_ca "$certs/ca" "Bindery test CA"
  make_test_ca "$certs/wrong-ca" "Some other CA"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$certs/server.key" -out "$certs/server.csr" -subj "/CN=localhost" 2>/dev/null
  printf '%s\n' 'subjectAltName=DNS:localhost' 'basicConstraints=critical,CA:FALSE' \
    'keyUsage=critical,digitalSignature' 'extendedKeyUsage=serverAuth' >"$certs/server.ext"
  openssl x509 -req -in "$certs/server.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" \
    -CAcreateserial -days 2 -extfile "$certs/server.ext" -out "$certs/server.crt" 2>/dev/null

  printf '%s\n' "$password" >"$PG_TLS_WORK/pwfile"
  if [ "$(id -u)" = 0 ]; then chown -R postgres: "$PG_TLS_WORK"; fi
  new_cluster "$PG_TLS_WORK" --auth-local=trust --auth-host=scram-sha-256 --pwfile="$PG_TLS_WORK/pwfile"
  PG_TLS_DATA=$CLUSTER_DATA
  install -m 600 "$certs/server.crt" "$PG_TLS_DATA/server.crt"
  install -m 600 "$certs/server.key" "$PG_TLS_DATA/server.key"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$PG_TLS_DATA/server.crt" "$PG_TLS_DATA/server.key"; fi
  # No `host` line: a connection without TLS finds no entry and is refused, as on managed
  # services that require it.
  printf '%s\n' 'local all all trust' \
    'hostssl all all 127.0.0.1/32 scram-sha-256' \
    'hostssl all all ::1/128 scram-sha-256' >"$PG_TLS_DATA/pg_hba.conf"
  local port
  port=$(free_port)
  run_cluster "$PG_TLS_DATA" "$port" ssl=on "$@"
  chmod 644 "$certs/ca.crt" "$certs/wrong-ca.crt"
  PG_TLS_URL="postgres://bindery:$password@localhost:$port/postgres"
  PG_TLS_CA="$certs/ca.crt"
  PG_TLS_WRONG_CA="$certs/wrong-ca.crt"
  export PG_TLS_URL PG_TLS_CA PG_TLS_WRONG_CA
}

# make_test_ca PREFIX SUBJECT: PREFIX.key and PREFIX.crt, a CA good for two days.
make_test_ca() {
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$1.key" -out "$1.crt" -days 2 -subj "/CN=$2" \
    -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign' 2>/dev/null
}

stop_postgres() {
  local code=$? data
  set +e
  for data in "${PG_CLUSTERS[@]}"; do
    if [ -f "$data/postmaster.pid" ]; then
      "${PG_RUN[@]}" "$PG_BIN/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    fi
  done
  [ -n "${PG_WORK:-}" ] && rm -rf "$PG_WORK"
  [ -n "${PG_TLS_WORK:-}" ] && rm -rf "$PG_TLS_WORK"
  exit "$code"
}
