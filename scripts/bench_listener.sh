#!/usr/bin/env bash
# The listener's benchmark: one million 100-byte records produced and consumed in a group (with a
# commit after every batch) by confluent-kafka (librdkafka 2.x), against the lab's Kafka listener
# and, in the same run with the same client, against tansu.
#
#   scripts/bench_listener.sh [ROUNDS] [RECORDS] [MODES]
#
# MODES: "per-record batch" (default) — produce() per record as applications do, or
# produce_batch() of 10,000 records, which takes the Python loop out of the way.
#
# Needs a tansu binary: $TANSU, or `tansu` on PATH (see ../shared/NOTES.md:
# `cargo install tansu --version 0.6.0 --features dynostore`, about 11 minutes on 2 cores).
# Results go in docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
records="${2:-1000000}"
modes="${3:-per-record batch}"
tansu="${TANSU:-$(command -v tansu || true)}"
[ -x "$tansu" ] || { echo "error: no tansu binary (set TANSU=/path/to/tansu or put it on PATH)" >&2; exit 1; }
venv=target/kafka-python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import confluent_kafka' 2>/dev/null || "$venv/bin/pip" install -q "confluent-kafka==2.16.1"
cargo build --release --locked -p offsetlab
work=$(mktemp -d)
pids=()
# A broker already stopped is no failure: the trap must not turn a complete run into exit 1.
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
echo "client: confluent-kafka $("$venv/bin/python" -c 'import confluent_kafka as c; print(c.version()[0], "/ librdkafka", c.libversion()[0])')"
# Each round starts both brokers afresh (an empty lab, an empty tansu), so every round measures
# one million records into an empty broker, alternating which broker goes first.
for round in $(seq 1 "$rounds"); do
 for mode in $modes; do
  order="lab tansu"
  [ $((round % 2)) -eq 0 ] && order="tansu lab"
  for broker in $order; do
    dir="$work/$broker-$round"
    mkdir -p "$dir"
    if [ "$broker" = lab ]; then
      ./target/release/offsetlab serve --data "$dir" --http 127.0.0.1:0 --kafka 127.0.0.1:0 >"$dir/log" 2>&1 &
      pid=$!
      for _ in $(seq 1 50); do grep -q "Kafka listener on" "$dir/log" && break; sleep 0.1; done
      addr=$(sed -n 's/^Kafka listener on \([^ ]*\).*/\1/p' "$dir/log")
    else
      port=$((20000 + RANDOM % 20000))
      (cd "$dir" && exec "$tansu" broker --listener-url "tcp://127.0.0.1:$port" \
        --advertised-listener-url "tcp://127.0.0.1:$port" --storage-engine memory://tansu/ >"$dir/log" 2>&1) &
      pid=$!
      sleep 2
      addr="127.0.0.1:$port"
    fi
    pids=("$pid")
    printf '%-5s round %s: ' "$broker" "$round"
    BROKER_PID=$pid "$venv/bin/python" scripts/listener_bench.py "$addr" bench "$records" "$mode"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
  done
 done
done
