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
# Cleanup stops the servers and waits for them to exit before removing their directories (a
# lab still flushing its log while `rm -rf` runs makes rm fail), and never changes the exit
# status the suites earned.
tansu_pid=
tansu_dir=
cleanup() {
  local rc=$?
  kill $serve_pid $tansu_pid 2>/dev/null || true
  # Ten seconds to exit (the lab takes about two); then SIGKILL, so a server that hangs on
  # SIGTERM fails nothing and holds nothing up.
  local pid alive
  for _ in $(seq 1 100); do
    alive=
    for pid in $serve_pid $tansu_pid; do if kill -0 "$pid" 2>/dev/null; then alive=1; fi; done
    [ -n "$alive" ] || break
    sleep 0.1
  done
  kill -9 $serve_pid $tansu_pid 2>/dev/null || true
  wait $serve_pid $tansu_pid 2>/dev/null || true
  rm -rf "$data" ${tansu_dir:+"$tansu_dir"} || echo "warning: could not remove $data $tansu_dir" >&2
  exit $rc
}
trap cleanup EXIT
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
for _ in $(seq 1 100); do grep -q "ready in" "$tansu_dir/log" 2>/dev/null && break; sleep 0.1; done
grep -q "ready in" "$tansu_dir/log" || { echo "error: tansu did not start:" >&2; cat "$tansu_dir/log" >&2; exit 1; }
# tansu's memory engine reports a wrong log end offset for a batch of several records (Kafka
# does not): the run's producer sends one record per batch here. And tansu did not drop a
# crashed member while the survivor heartbeat every 500 ms (the agents' interval): its clients
# keep librdkafka's default 3 s here. docs/CLUSTER.md says more.
bash scripts/cluster_runs.sh ./target/debug/offsetlab "127.0.0.1:$tansu_port" -X batch.num.messages=1 \
  -X heartbeat.interval.ms=3000
