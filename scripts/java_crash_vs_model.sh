#!/usr/bin/env bash
# The Java client for real: Apache Kafka's own kafka-clients (the release apache-kafka/pom.xml
# pins) against the lab's Kafka listener and against Apache Kafka, the oracle.
#
#   scripts/java_crash_vs_model.sh [--lab BOOTSTRAP|start|skip] [--apache BOOTSTRAP|start|skip]
#                                  [--only crash|flows] [OFFSETLAB]
#
#   crash   A KafkaConsumer with enable.auto.commit=true (the lab's auto-poll strategy) killed
#           with SIGKILL at five planned instants, restarted, read to the end; the lab's engine,
#           told the same plan (OFFSETLAB run --json), must give the same committed offset at the
#           kill and the same delivery count for every offset (so the same loss and duplicates).
#   flows   The admin client, the idempotent producer with every codec, a consumer group through
#           a rebalance and the admin operations on its offsets, transactions: every step
#           asserts what Kafka guarantees. On the lab's listener, the steps listed in
#           KNOWN_DIFFERENCES below must fail and nothing else may (docs/CLIENTS.md, "The Java
#           client"); on Apache Kafka every step must pass.
#
# Each broker is a bootstrap address, `start` (the default: the lab from OFFSETLAB serve
# --ephemeral, Apache Kafka from scripts/apache-kafka.sh; both stopped on exit) or `skip`.
# OFFSETLAB defaults to ./target/debug/offsetlab. The jar is built when missing or older than
# its sources (mvn -q -f kafka-clients/java/pom.xml package). Prints the crash figures of both
# brokers beside the model's, and the time of every run; exit 1 if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Steps of `flows` that fail on the lab's listener (docs/CLIENTS.md): none today. The two there
# were (CreateTopics v7's topic id and configs) went when the listener answered as Kafka 4.4 does.
# A step listed here that passes makes `flows` fail until it is taken out of this list.
KNOWN_DIFFERENCES=()

lab=start apache=start only= offsetlab=./target/debug/offsetlab
while [ $# -gt 0 ]; do
  case $1 in
    --lab) lab=$2; shift 2 ;;
    --apache) apache=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    -*) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) offsetlab=$1; shift ;;
  esac
done
case $only in ''|crash|flows) ;; *) echo "error: --only crash or --only flows" >&2; exit 2 ;; esac
[ -x "$offsetlab" ] || { echo "error: $offsetlab is missing: cargo build -p offsetlab" >&2; exit 2; }

# One Kafka release for the broker and the client.
version_of() { sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$1" | head -n 1; }
broker_version=$(version_of apache-kafka/pom.xml)
client_version=$(version_of kafka-clients/java/pom.xml)
if [ -z "$client_version" ] || [ "$client_version" != "$broker_version" ]; then
  echo "error: kafka-clients/java/pom.xml pins kafka.version ${client_version:-(none)}, apache-kafka/pom.xml $broker_version: keep them equal" >&2
  exit 1
fi

# Seconds since $1 (a `date +%s.%N`), one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

java=${JAVA:-${JAVA_HOME:+$JAVA_HOME/bin/}java}

work=$(mktemp -d)
serve_pid=
apache_dir=
cleanup() {
  local rc=$?
  if [ -n "$serve_pid" ]; then
    kill "$serve_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  if [ -n "$apache_dir" ]; then scripts/apache-kafka.sh stop --dir "$apache_dir" || true; fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

jar=kafka-clients/java/target/offsetlab-java-client.jar
if [ ! -f "$jar" ] || [ -n "$(find kafka-clients/java/pom.xml kafka-clients/java/src -newer "$jar" -print -quit)" ]; then
  echo "== building $jar (mvn -q -f kafka-clients/java/pom.xml package)"
  t0=$(date +%s.%N)
  if ! mvn -B -q -f kafka-clients/java/pom.xml package >"$work/mvn.log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$work/mvn.log" >&2   # Maven 3.8 colours its output even with -B
    echo "error: the build of kafka-clients/java failed (its output is above)" >&2
    exit 1
  fi
  echo "   built in $(since "$t0") s"
fi

if [ "$lab" = start ]; then
  "$offsetlab" serve --ephemeral --http 127.0.0.1:0 --kafka 127.0.0.1:0 >"$work/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 100); do grep -q "Kafka listener on" "$work/serve.log" && break; sleep 0.1; done
  lab=$(sed -n 's/^Kafka listener on \([^ ]*\).*/\1/p' "$work/serve.log")
  [ -n "$lab" ] || { echo "error: the lab did not start its Kafka listener:" >&2; cat "$work/serve.log" >&2; exit 1; }
  echo "== the lab's Kafka listener on $lab ($offsetlab serve --ephemeral)"
fi

failed=()
timings=()
# run NAME BROKER-LABEL COMMAND...: runs a client, keeps its output and time.
run() {
  local name=$1 label=$2 t0 rc secs
  shift 2
  echo "== $name on $label"
  t0=$(date +%s.%N)
  set +e
  "$@" 2>&1 | tee "$work/$name-$label.out"
  rc=${PIPESTATUS[0]}
  set -e
  secs=$(since "$t0")
  timings+=("$(printf '%-6s %-13s %6s s  %s' "$name" "$label" "$secs" "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  [ "$rc" -eq 0 ] || failed+=("$name on $label")
}

jvm=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -jar "$jar")
for target in lab apache; do
  if [ $target = apache ] && [ "$apache" = start ]; then
    # Started when its turn comes: the lab's runs have the machine to themselves.
    apache_dir=$work/apache-kafka
    t0=$(date +%s.%N)
    apache=$(scripts/apache-kafka.sh start --dir "$apache_dir")
    echo "== Apache Kafka $broker_version on $apache (started in $(since "$t0") s)"
  fi
  bootstrap=${!target}
  [ "$bootstrap" != skip ] || continue
  label=$([ $target = lab ] && echo lab-listener || echo apache-kafka)
  if [ "$only" != flows ]; then
    run crash "$label" "$java" "${jvm[@]}" crash-vs-model "$bootstrap" "$offsetlab"
  fi
  if [ "$only" != crash ]; then
    known=()
    if [ $target = lab ]; then
      for k in ${KNOWN_DIFFERENCES[@]+"${KNOWN_DIFFERENCES[@]}"}; do known+=(--known-difference "$k"); done
    fi
    run flows "$label" "$java" "${jvm[@]}" flows "$bootstrap" "${known[@]}"
  fi
done

# The crash figures side by side: the model, then each broker's real run.
if [ "$only" != flows ]; then
  echo "== crash points: lost / duplicated (committed at the kill)"
  printf '%-20s %-18s %-18s %-18s\n' "CRASH POINT" "MODEL" "LAB LISTENER" "APACHE KAFKA"
  points=$(cat "$work"/crash-*.out 2>/dev/null | sed -n 's/^ *FIGURES \([^ ]*\) .*/\1/p' | awk '!seen[$0]++')
  for p in $points; do
    cell() { # FILE FIELD-PREFIX
      sed -n "s/^ *FIGURES $p .*$2-lost=\([^ ]*\) $2-duplicated=\([^ ]*\) $2-committed=\([^ ]*\).*/\1 \/ \2 (\3)/p" "$1" 2>/dev/null | head -n 1
    }
    model=$(cell "$work/crash-lab-listener.out" model); [ -n "$model" ] || model=$(cell "$work/crash-apache-kafka.out" model)
    printf '%-20s %-18s %-18s %-18s\n' "$p" "${model:--}" "$(cell "$work/crash-lab-listener.out" java)" \
      "$(cell "$work/crash-apache-kafka.out" java)"
  done
fi
echo "== timings"
printf '%s\n' "${timings[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "error: failed: $(IFS=,; echo "${failed[*]}")" >&2
  exit 1
fi
echo "the Java client: every run passed"
