# Sourced by scripts/test: installs Azurite (Microsoft's Azure Storage emulator, pinned in
# tests/azurite/package-lock.json) if missing and starts its blob service on a free loopback
# port, stopped when the calling script exits.
#
#   install_azurite   installs it only (tests that start their own, as the chaos run does)
#   start_azurite     sets AZURITE_ENDPOINT (http://127.0.0.1:PORT/devstoreaccount1)

stop_azurite() {
  local code=$?
  # The next stop in the EXIT trap must run even though this one hands on a failing code.
  set +e
  if [ -n "${AZURITE_PID:-}" ]; then
    kill "$AZURITE_PID" 2>/dev/null || true
    wait "$AZURITE_PID" 2>/dev/null || true
  fi
  [ -n "${AZURITE_WORK:-}" ] && rm -rf "$AZURITE_WORK"
  return "$code"
}

install_azurite() {
  if [ ! -x tests/azurite/node_modules/.bin/azurite-blob ]; then
    printf 'installing azurite from npm\n' >&2
    (cd tests/azurite && npm ci --silent --no-audit --no-fund)
  fi
}

start_azurite() {
  install_azurite
  AZURITE_WORK=$(mktemp -d /tmp/bindery-azurite.XXXXXX)
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # Run from its temp directory: Azurite writes state and a telemetry config (AzuriteConfig, with
  # this machine's paths) into its working directory, which was the repository's root.
  local bin="$PWD/tests/azurite/node_modules/.bin/azurite-blob"
  (cd "$AZURITE_WORK" && exec "$bin" --blobHost 127.0.0.1 --blobPort "$port" \
    --location "$AZURITE_WORK" --silent --skipApiVersionCheck --disableTelemetry \
    >"$AZURITE_WORK/azurite.log" 2>&1) &
  AZURITE_PID=$!
  # Runs before whatever the script trapped already (PostgreSQL's stop), keeping the exit code.
  local previous
  previous=$(trap -p EXIT | sed "s/^trap -- '\(.*\)' EXIT$/\1/")
  trap "stop_azurite; ${previous:-true}" EXIT
  local _
  for _ in $(seq 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/"; then break; fi
    sleep 0.1
  done
  AZURITE_ENDPOINT="http://127.0.0.1:$port/devstoreaccount1"
  export AZURITE_ENDPOINT
}
