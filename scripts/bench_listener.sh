#!/usr/bin/env bash
# The listener's benchmark, side by side with Apache Kafka in one run: the same client
# (confluent-kafka, librdkafka 2.x) against the lab's Kafka listener and against a real Apache
# Kafka (scripts/apache-kafka.sh: the release pinned in apache-kafka/pom.xml, one KRaft broker),
# and — when $TANSU names a tansu binary — against tansu 0.6 too; when $LAB_BEFORE names another
# offsetlab binary (an earlier build), against it too, as `lab-before`: a change's before and
# after measured in the same rounds.
#
#   scripts/bench_listener.sh [ROUNDS] [RECORDS] [MODES]
#
# MODES (default "batch latency"):
#   per-record  produce() per record, as applications do (the Python loop is the bottleneck)
#   batch       produce_batch() of 10,000 records: the broker's own cost shows; RECORDS of them
#               produced and then consumed in a group that commits after every batch, with the
#               broker process's CPU seconds for each phase
#   latency     a consumer waiting with fetch.wait.max.ms=500 while a producer sends one record
#               every 50 ms (200 records): the time from send to receipt, p50 / p99 / worst
#   contention  reads under load (scripts/contention_bench.py): 4 producers at full speed and 20
#               consumers in 4 groups, and — on the lab — two pages following /api/events; the
#               p50 / p99 of a Fetch, a Metadata and (the lab) a GET /api/state meanwhile
# Each round starts every broker afresh, in an order that alternates between rounds. The
# machine is noisy: compare the brokers' figures within a round (ratios), not across runs.
# Results go in docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
records="${2:-1000000}"
modes="${3:-batch latency}"
brokers="lab kafka"
if [ -n "${LAB_BEFORE:-}" ]; then
  [ -x "$LAB_BEFORE" ] || { echo "error: LAB_BEFORE=$LAB_BEFORE is not an executable offsetlab binary" >&2; exit 1; }
  brokers="lab-before $brokers"
fi
if [ -n "${TANSU:-}" ]; then
  [ -x "$TANSU" ] || { echo "error: TANSU=$TANSU is not an executable tansu binary" >&2; exit 1; }
  brokers="$brokers tansu"
fi
venv=target/kafka-python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import confluent_kafka' 2>/dev/null || "$venv/bin/pip" install -q "confluent-kafka==2.16.1"
cargo build --release --locked -p offsetlab
scripts/apache-kafka.sh fetch >/dev/null
work=$(mktemp -d)
pids=()
kafka_dir=
cleanup() {
  # A broker already stopped is no failure: the trap must not turn a complete run into exit 1.
  kill "${pids[@]}" 2>/dev/null || true
  if [ -n "$kafka_dir" ] && [ -f "$kafka_dir/apache-kafka.state" ]; then scripts/apache-kafka.sh stop --dir "$kafka_dir" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "client: confluent-kafka $("$venv/bin/python" -c 'import confluent_kafka as c; print(c.version()[0], "/ librdkafka", c.libversion()[0])')"
echo "apache kafka: $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' apache-kafka/pom.xml | head -n 1), java: $(java -version 2>&1 | head -n 1)"

# Starts BROKER in DIR; sets `addr` and `pid` (the process whose CPU is measured).
start() {
  local broker=$1 dir=$2
  http=
  mkdir -p "$dir"
  case "$broker" in
    lab|lab-before)
      local bin=./target/release/offsetlab
      [ "$broker" = lab-before ] && bin=$LAB_BEFORE
      "$bin" serve --data "$dir/lab" --http 127.0.0.1:0 --kafka 127.0.0.1:0 >"$dir/log" 2>&1 &
      pid=$!
      pids=("$pid")
      for _ in $(seq 1 100); do grep -qs "Kafka listener on" "$dir/log" && grep -qs "offsetlab lab on" "$dir/log" && break; sleep 0.1; done
      addr=$(sed -n 's/^Kafka listener on \([^ ]*\).*/\1/p' "$dir/log")
      http=$(sed -n 's|^offsetlab lab on http://\([^ ]*\).*|\1|p' "$dir/log")
      ;;
    kafka)
      # A 1 GiB heap, as Kafka's own start script gives a broker.
      kafka_dir="$dir/kafka"
      addr=$(APACHE_KAFKA_JVM_OPTS="-Xmx1g" scripts/apache-kafka.sh start --dir "$kafka_dir")
      pid=$(sed -n 's/^pid=//p' "$kafka_dir/apache-kafka.state" | head -n 1)
      ;;
    tansu)
      local port
      port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      (cd "$dir" && exec "$TANSU" broker --listener-url "tcp://127.0.0.1:$port" \
        --advertised-listener-url "tcp://127.0.0.1:$port" --storage-engine memory://tansu/ >"$dir/log" 2>&1) &
      pid=$!
      pids=("$pid")
      for _ in $(seq 1 100); do grep -q "ready in" "$dir/log" 2>/dev/null && break; sleep 0.1; done
      addr="127.0.0.1:$port"
      ;;
  esac
  [ -n "$addr" ] || { echo "error: $broker did not start:" >&2; cat "$dir/log" >&2 2>/dev/null; exit 1; }
}

stop() {
  local broker=$1
  if [ "$broker" = kafka ]; then
    scripts/apache-kafka.sh stop --dir "$kafka_dir" >/dev/null 2>&1 || true
    kafka_dir=
  else
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pids=()
  fi
}

for round in $(seq 1 "$rounds"); do
  # Rotate the order of the brokers from one round to the next.
  read -r -a order <<<"$brokers"
  shift_by=$(( (round - 1) % ${#order[@]} ))
  order=("${order[@]:shift_by}" "${order[@]:0:shift_by}")
  for mode in $modes; do
    for broker in "${order[@]}"; do
      dir="$work/$broker-$round-$mode"
      start "$broker" "$dir"
      printf '%-10s round %s: ' "$broker" "$round"
      if [ "$mode" = contention ]; then
        "$venv/bin/python" scripts/contention_bench.py "$addr" "$([ -n "$http" ] && echo "$http" || echo -)" 20
      elif [ "$mode" = latency ]; then
        BROKER_PID=$pid "$venv/bin/python" scripts/listener_bench.py "$addr" "latency-$round" 200 latency
      else
        BROKER_PID=$pid "$venv/bin/python" scripts/listener_bench.py "$addr" "bench-$round" "$records" "$mode"
      fi
      stop "$broker"
      rm -rf "$dir"
    done
  done
done
