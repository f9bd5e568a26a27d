# Sourced by scripts/test: installs moto's S3-compatible server (pinned, from PyPI) if missing and
# starts it on a free loopback port, stopped when the calling script exits. moto 5.2 honours
# `If-None-Match: *` (412 on an existing key), which the blob store's create-if-absent needs.
#
#   start_moto     sets MOTO_ENDPOINT (http://127.0.0.1:PORT)

MOTO_VERSION=5.2.1

stop_moto() {
  local code=$?
  # Each stop returns the exit code for the next one in the EXIT trap to read; under errexit a
  # failed run's code would end the trap here, before Azurite and PostgreSQL were stopped.
  set +e
  if [ -n "${MOTO_PID:-}" ]; then
    kill "$MOTO_PID" 2>/dev/null || true
    wait "$MOTO_PID" 2>/dev/null || true
  fi
  [ -n "${MOTO_WORK:-}" ] && rm -rf "$MOTO_WORK"
  return "$code"
}

start_moto() {
  # (sed reads all of pip's output: `grep -q` would stop early, and pipefail would see pip fail.)
  if [ "$(python3 -m pip show moto 2>/dev/null | sed -n 's/^Version: //p')" != "$MOTO_VERSION" ] \
    || ! python3 -c 'import flask, flask_cors' 2>/dev/null; then
    printf 'installing moto[server] %s from PyPI\n' "$MOTO_VERSION" >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "moto[server]==$MOTO_VERSION"
  fi
  MOTO_WORK=$(mktemp -d /tmp/bindery-moto.XXXXXX)
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m moto.server -H 127.0.0.1 -p "$port" >"$MOTO_WORK/moto.log" 2>&1 &
  MOTO_PID=$!
  # Runs before whatever the script trapped already (Azurite's and PostgreSQL's stops), keeping
  # the exit code.
  local previous
  previous=$(trap -p EXIT | sed "s/^trap -- '\(.*\)' EXIT$/\1/")
  trap "stop_moto; ${previous:-true}" EXIT
  local _
  for _ in $(seq 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/"; then break; fi
    sleep 0.1
  done
  MOTO_ENDPOINT="http://127.0.0.1:$port"
  export MOTO_ENDPOINT
}
