#!/usr/bin/env bash
# The project's test command: every suite, in order. Fails on the first failing suite.
#   1. clippy (warnings are errors through the workspace lints)
#   2. cargo test: unit, property, integration, CLI and HTTP API tests
#   3. the browser tests: Playwright (playwright-core from web-tests/package-lock.json) driving
#      Debian's Chromium against a real `offsetlab serve`
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== lint: clippy"
cargo clippy --workspace --all-targets --locked

command -v kcat >/dev/null || { echo "error: the Kafka listener tests drive kcat (apt-get install kcat)" >&2; exit 1; }

echo "== unit, property, integration, CLI and API tests"
cargo test --workspace --locked

echo "== browser tests (Playwright + Chromium)"
command -v node >/dev/null || { echo "error: the browser tests need Node.js (apt-get install nodejs npm)" >&2; exit 1; }
chromium="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$chromium" ] || { echo "error: the browser tests need Debian's chromium at $chromium (apt-get install chromium)" >&2; exit 1; }
if [ ! -d web-tests/node_modules/playwright-core ]; then
  (cd web-tests && npm ci --no-audit --no-fund)
fi
cargo build --locked -p offsetlab
(cd web-tests && OFFSETLAB_BIN="$PWD/../target/debug/offsetlab" CHROMIUM="$chromium" npm test)
