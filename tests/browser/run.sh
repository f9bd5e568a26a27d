#!/usr/bin/env bash
# Builds the sample book's reader site, serves it on the loopback and runs the browser check.
#   tests/browser/run.sh [screenshot-dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
shots="${1:-$here/screenshots}"
site="$(mktemp -d)"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$site"
}
trap cleanup EXIT

(cd "$here" && [ -d node_modules/playwright-core ] || PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
(cd "$repo" && BINDERY_READER_DEMO_DIR="$site" cargo test --quiet --lib \
  ebook::reader::tests::write_demo_site -- --ignored --exact >/dev/null)

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 "$here/serve.py" "$port" "$site" >/dev/null 2>&1 &
server=$!
# Until the server answers (polled every 0.1 s, for 5 s at most); else say so and stop.
ready=""
for _ in $(seq 50); do
  if curl -fsS "http://127.0.0.1:$port/index.html" >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.1
done
if [ -z "$ready" ]; then
  echo "run.sh: the reader site's server did not answer on port $port within 5 s" >&2
  exit 1
fi
node "$here/reader-offline.mjs" "http://127.0.0.1:$port/index.html" "$shots"
