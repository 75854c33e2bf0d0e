#!/usr/bin/env bash
# The project's test command: every suite, in order. Fails on the first failing suite.
#   1. clippy (warnings are errors through the workspace lints)
#   2. cargo test: unit, property, integration, CLI and HTTP API tests
#   3. the browser tests: Playwright (playwright-core from web-tests/package-lock.json) driving
#      Debian's Chromium against a real `offsetlab serve`
#   4. a kafka-python smoke test against the lab's Kafka listener (the kcat and librdkafka
#      (`rdkafka` crate) tests of the listener run in step 2)
#   5. kafkajs (kafka-clients/, locked in its package-lock.json): a pure JavaScript client
#   6. crash vs model: a real librdkafka consumer (confluent-kafka) killed mid-batch with
#      auto-commit on; the lab's engine must predict exactly what it lost and duplicated
#   7. real-cluster runs on tansu 0.6, a Kafka-compatible broker the lab did not write: the
#      lessons and explorer cells of `offsetlab run/explore --bootstrap-server --compare` (the
#      same runs against the lab's own listener are cargo tests, step 2)
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything the suites need, installed if missing (see scripts/setup.sh).
bash scripts/setup.sh

echo "== lint: clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== unit, property, integration, CLI and API tests"
cargo test --workspace --locked

echo "== browser tests (Playwright + Chromium)"
chromium="${CHROMIUM:-/usr/bin/chromium}"
cargo build --locked -p offsetlab
(cd web-tests && OFFSETLAB_BIN="$PWD/../target/debug/offsetlab" CHROMIUM="$chromium" npm test)

echo "== kafka-python smoke test (a second, non-librdkafka client against the Kafka listener)"
venv=target/kafka-python-venv
data=$(mktemp -d)
log="$data/serve.log"
./target/debug/offsetlab serve --data "$data/lab" --http 127.0.0.1:0 --kafka 127.0.0.1:0 >"$log" 2>&1 &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 50); do grep -q "Kafka listener on" "$log" && break; sleep 0.1; done
kafka=$(sed -n 's/^Kafka listener on \([^ ]*\).*/\1/p' "$log")
[ -n "$kafka" ] || { echo "error: the lab did not start its Kafka listener:" >&2; cat "$log" >&2; exit 1; }
"$venv/bin/python" scripts/kafka_python_smoke.py "$kafka"

echo "== kafkajs (a JavaScript client, no librdkafka) against the Kafka listener"
(cd kafka-clients && OFFSETLAB_KAFKA="$kafka" npm test)

echo "== crash vs model: librdkafka (confluent-kafka) killed mid-batch with auto-commit, against the lab's prediction"
"$venv/bin/python" scripts/crash_vs_model.py "$kafka" ./target/debug/offsetlab


echo "== real-cluster runs on tansu 0.6 (a broker the lab did not write): the cluster's figures equal the model's"
tansu="${TANSU:-$PWD/target/tools/tansu/bin/tansu}"
tansu_dir=$(mktemp -d)
tansu_port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$tansu_dir" && exec "$tansu" broker --listener-url "tcp://127.0.0.1:$tansu_port" \
   --advertised-listener-url "tcp://127.0.0.1:$tansu_port" --storage-engine memory://tansu/ >"$tansu_dir/log" 2>&1) &
tansu_pid=$!
trap 'kill $serve_pid $tansu_pid 2>/dev/null; rm -rf "$data" "$tansu_dir"' EXIT
for _ in $(seq 1 100); do grep -q "ready in" "$tansu_dir/log" 2>/dev/null && break; sleep 0.1; done
grep -q "ready in" "$tansu_dir/log" || { echo "error: tansu did not start:" >&2; cat "$tansu_dir/log" >&2; exit 1; }
# tansu's memory engine reports a wrong log end offset for a batch of several records (Kafka
# does not): the run's producer sends one record per batch here. docs/CLUSTER.md says more.
bash scripts/cluster_runs.sh ./target/debug/offsetlab "127.0.0.1:$tansu_port" -X batch.num.messages=1
