#!/usr/bin/env bash
# The project's test command: every suite, in order. Fails on the first failing suite.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== lint: clippy (warnings are errors via the workspace lints)"
cargo clippy --workspace --all-targets --locked

echo "== unit, property, integration and CLI tests"
cargo test --workspace --locked
