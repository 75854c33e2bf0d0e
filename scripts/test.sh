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
#   7. real-cluster runs on Apache Kafka 4.4.0 (scripts/apache-kafka.sh), the reference: one
#      broker, the lessons, cluster scenarios and explorer cells of `offsetlab run/explore
#      --bootstrap-server --compare` (scripts/cluster_runs.sh; the same runs against the lab's
#      own listener are cargo tests, step 2)
#      ... then the Java client (kafka-clients/java): the Java consumer's auto-commit inside poll()
#      killed at five planned instants, against the model's prediction, and its producer, group,
#      admin and transactional flows, on the lab's listener and on Apache Kafka
#      ... then conformance (crates/broker/tests/conformance): the same conversations, every API
#      key at every version the lab advertises, sent to the lab's listener and to that Kafka;
#      any difference docs/CONFORMANCE.md does not explain fails it
#      ... then librdkafka with group.protocol=consumer (KIP-848) on that Kafka: three members
#      scaling out and in, a fourth SIGKILLed and dropped after the session timeout — the figures
#      the same story gives on the listener in step 2 (crates/cli/tests/consumer_protocol.rs)
#   8. the oracle scenarios (scenarios/oracle, scripts/oracle_scenarios.py): twelve stories from
#      Kafka's documentation and KIPs, on the model, on Apache Kafka and on the lab's listener
#   9. three Apache Kafka brokers: a lesson and the admin commands across partition leaders and
#      a group coordinator that is not the bootstrap broker, then a leader killed mid-run
#      (cargo tests `three_brokers_*`, left out of step 2 and run here with the cluster named by
#      OFFSETLAB_THREE_BROKERS; inside this command they fail if it is unset)
# tansu 0.6, another Kafka-compatible broker, is no longer part of it: docs/CLUSTER.md says how
# to run the same cluster runs against it by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tells the tests they run inside the test command: a suite that needs something this command
# provides fails without it instead of skipping.
export OFFSETLAB_TEST_COMMAND=1
seconds_since() { echo $((SECONDS - $1)); }

# Everything the suites need, installed if missing (see scripts/setup.sh).
bash scripts/setup.sh
# The Python with confluent-kafka's ShareConsumer that cluster runs start share agents with.
export OFFSETLAB_PYTHON="$PWD/target/kafka-python-venv/bin/python"

echo "== lint: clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== unit, property, integration, CLI and API tests"
# The three-broker tests need a cluster of their own: step 8.
cargo test --workspace --locked -- --skip three_brokers_

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
# status the suites earned. An Apache Kafka cluster still running (a step that failed) is
# stopped by its own script, which waits for its brokers and removes its directory.
kafka_dir=
cleanup() {
  local rc=$?
  kill $serve_pid 2>/dev/null || true
  # Ten seconds to exit (the lab takes about two); then SIGKILL, so a server that hangs on
  # SIGTERM fails nothing and holds nothing up.
  for _ in $(seq 1 100); do
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 $serve_pid 2>/dev/null || true
  wait $serve_pid 2>/dev/null || true
  if [ -n "$kafka_dir" ]; then
    scripts/apache-kafka.sh stop --dir "$kafka_dir" || echo "warning: could not stop the Apache Kafka cluster in $kafka_dir" >&2
  fi
  rm -rf "$data" || echo "warning: could not remove $data" >&2
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

echo "== share groups (KIP-932): confluent-kafka's ShareConsumer on the Kafka listener (acquire, accept, release, reject, the delivery limit, a member killed)"
"$venv/bin/python" scripts/share_consumers.py "$kafka" >"$data/share-story-listener.json"


echo "== real-cluster runs on Apache Kafka (one broker): the cluster's figures equal the model's"
started=$SECONDS
kafka_dir=$(mktemp -d)
bootstrap=$(scripts/apache-kafka.sh start --dir "$kafka_dir")
echo "  Apache Kafka started in $(seconds_since "$started") s at $bootstrap"
bash scripts/cluster_runs.sh ./target/debug/offsetlab "$bootstrap"

echo "== share groups: the same story on Apache Kafka, the same figures as on the listener"
"$venv/bin/python" scripts/share_consumers.py "$bootstrap" --expect "$data/share-story-listener.json" >/dev/null

echo "== the Java client (kafka-clients, Apache Kafka's release): crash vs model and flows, on the lab's listener and on Apache Kafka"
bash scripts/java_crash_vs_model.sh --lab "$kafka" --apache "$bootstrap" ./target/debug/offsetlab

echo "== conformance: the lab's listener and Apache Kafka asked the same, every API at every version the lab advertises"
started=$SECONDS
OFFSETLAB_APACHE_KAFKA=$bootstrap cargo test --locked -p offsetlab-broker --test conformance -- --ignored
echo "  conformance: $(seconds_since "$started") s (report: target/conformance-report.json, differences explained in docs/CONFORMANCE.md)"

echo "== librdkafka with group.protocol=consumer (KIP-848) on Apache Kafka: the story the workspace tests play on the listener, the same figures"
OFFSETLAB_APACHE_KAFKA=$bootstrap cargo test --locked -p offsetlab --test consumer_protocol -- --ignored --exact librdkafka_scales_a_consumer_protocol_group_on_apache_kafka
scripts/apache-kafka.sh stop --dir "$kafka_dir"
kafka_dir=

echo "== oracle: scenarios/oracle on the model, on Apache Kafka and on the lab's listener"
started=$SECONDS
kafka_dir=$(mktemp -d)
# Offsets that expire within a test (KIP-211's scenario): a one-minute retention, checked every second.
bootstrap=$(scripts/apache-kafka.sh start --dir "$kafka_dir" --config offsets.retention.minutes=1 \
  --config offsets.retention.check.interval.ms=1000)
"$venv/bin/python" scripts/oracle_scenarios.py --bootstrap "$bootstrap" --offsetlab ./target/debug/offsetlab --listener --jobs 3
scripts/apache-kafka.sh stop --dir "$kafka_dir"
kafka_dir=
echo "  oracle: $(seconds_since "$started") s"

echo "== three Apache Kafka brokers: a lesson and the admin commands across leaders, then a leader killed mid-run"
started=$SECONDS
kafka_dir=$(mktemp -d)
scripts/apache-kafka.sh start --brokers 3 --dir "$kafka_dir" >/dev/null
echo "  three brokers started in $(seconds_since "$started") s"
# One after the other: the second kills a broker.
OFFSETLAB_THREE_BROKERS=$kafka_dir cargo test --locked -p offsetlab --test cluster_brokers
OFFSETLAB_THREE_BROKERS=$kafka_dir cargo test --locked -p offsetlab --test cluster_leader_lost
scripts/apache-kafka.sh stop --dir "$kafka_dir"
kafka_dir=
echo "  three brokers, started to stopped: $(seconds_since "$started") s"
