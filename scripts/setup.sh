#!/usr/bin/env bash
# Installs what the test command needs, and only what is missing — the one set-up step, run by
# scripts/test.sh itself (and safe to run again):
#   - Debian packages: chromium (browser tests), kcat (Kafka listener tests), a C toolchain (the
#     rdkafka crate builds its bundled librdkafka), python3-venv (the Python client tests),
#     nodejs and npm (Playwright);
#   - npm packages from web-tests/package-lock.json (playwright-core) and
#     kafka-clients/package-lock.json (kafkajs);
#   - a Python venv with kafka-python and confluent-kafka, pinned, from PyPI.
# System packages need root: run as root, or with sudo available. Anything it cannot install
# is named, and the script fails; no suite is skipped for want of a tool.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
command -v kcat >/dev/null || missing+=(kcat)
command -v script >/dev/null || missing+=(bsdutils) # `script`: the CLI's colour tests run it on a terminal
{ command -v make >/dev/null && command -v cc >/dev/null; } || missing+=(build-essential)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    echo "error: the tests need these Debian packages, and installing them needs root: ${missing[*]}" >&2
    echo "  run: sudo apt-get install -y ${missing[*]}   (or run scripts/setup.sh as root)" >&2
    exit 1
  fi
  echo "== setup: apt-get install ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -d web-tests/node_modules/playwright-core ] || [ ! -d web-tests/node_modules/axe-core ]; then
  echo "== setup: npm ci (web-tests/package-lock.json)"
  (cd web-tests && npm ci --no-audit --no-fund)
fi

if [ ! -d kafka-clients/node_modules/kafkajs ]; then
  echo "== setup: npm ci (kafka-clients/package-lock.json)"
  (cd kafka-clients && npm ci --no-audit --no-fund)
fi

venv=target/kafka-python-venv
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p target
  python3 -m venv "$venv"
fi
# kafka-python (pure Python) and confluent-kafka (its wheels bundle librdkafka), from PyPI.
if ! "$venv/bin/python" -c 'import kafka, confluent_kafka' 2>/dev/null; then
  echo "== setup: pip install kafka-python confluent-kafka into $venv"
  "$venv/bin/pip" install -q "kafka-python==3.0.12" "confluent-kafka==2.16.1"
fi

# tansu 0.6 (https://crates.io/crates/tansu): a Kafka-compatible broker the lab did not write,
# for the real-cluster runs (scripts/cluster_runs.sh). Built from crates.io with its memory
# storage engine (the default build has only a null one): about 11 minutes on two cores.
tansu="${TANSU:-target/tools/tansu/bin/tansu}"
if [ ! -x "$tansu" ]; then
  echo "== setup: cargo install tansu 0.6.0 --features dynostore (about 11 minutes on two cores)"
  cargo install tansu --version 0.6.0 --features dynostore --locked --root target/tools/tansu --quiet
fi
