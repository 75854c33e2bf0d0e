#!/usr/bin/env bash
# The real-cluster runs against one broker, each with `offsetlab run/explore --bootstrap-server …
# --compare`: every figure on the cluster must equal the model's, and the wall time of each is
# printed (docs/CLUSTER.md records them).
#   - lessons 1, 2, 3, 4, 5, 10 and 12 (12's share consumers are confluent-kafka's ShareConsumer,
#     run with OFFSETLAB_PYTHON — the test command's venv — or python3);
#   - the scenarios made for a cluster (crates/cluster/scenarios): a restart into a dead
#     member's session, seek and rewind, reset=none, topic settings, rebalances (two members,
#     on close, with a transactional sink), a zombie past max.poll.interval.ms, a static
#     member's restart, seek and reset by time, a consumer-protocol (KIP-848) scale-out and
#     scale-in with its epochs;
#   - the explorer's auto-timer, manual-batch and before-process × append cells, and
#     manual-batch × transactional and × kafka-tx (two crash points each: the model's worst and
#     the first).
#
#   usage: scripts/cluster_runs.sh [--tansu] OFFSETLAB_BIN HOST:PORT [-X key=value …]
#
# The test command runs it against Apache Kafka (scripts/apache-kafka.sh), the reference. Any
# other Kafka-compatible broker can be given; `--tansu` is for tansu 0.6, whose deviations
# (docs/CLUSTER.md, "Where tansu deviates from Kafka") it works around or leaves out, saying
# which: its producer sends one record per batch and its consumers heartbeat every 3 s (-X
# batch.num.messages=1 -X heartbeat.interval.ms=3000), the runs that need transactions,
# timestamp lookups, a fenced zombie or a static member are left out, and a run that stops
# because tansu reordered produced records is run once more. Against Kafka none of that
# applies: a reordering fails the run like any other difference.
set -euo pipefail
cd "$(dirname "$0")/.."
tansu=
if [ "${1:-}" = --tansu ]; then
  tansu=1
  shift
fi
[ $# -ge 2 ] || { sed -n '14p' "$0" | sed 's/^# *//' >&2; exit 2; }
bin=$1
bootstrap=$2
shift 2
extra=("$@")
if [ -n "$tansu" ]; then extra+=(-X batch.num.messages=1 -X heartbeat.interval.ms=3000); fi

seconds_since() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }
all_started=$(date +%s%N)

# Runs "$@" (one run of offsetlab) into $out. On tansu, a run that stops because the broker put
# a produced record at another offset than the model's is run once more, saying so; any other
# failure, or a second one, is the run's result.
attempt() {
  if out=$("$@" 2>&1); then return 0; fi
  case "$tansu:$out" in
    1:*"the cluster put them at offsets"*)
      echo "  (tansu reordered produced records; running it once more)" >&2
      out=$("$@" 2>&1) ;;
    *) return 1 ;;
  esac
}

# A line that ran late for an auto-commit timer where no figure could change is a warning, not
# a failure: shown with the run's time, so a slow machine is seen before it fails.
warnings() { grep -h '^warning: ' <<<"$out" | sed 's/^/    /' || true; }

scenarios=(lessons/01-auto-commit-timer-loses lessons/02-commit-after-duplicates lessons/03-upsert-converges
           lessons/04-rewind-to-earliest lessons/05-new-group-from-zero lessons/10-java-vs-librdkafka-auto-commit
           lessons/12-share-group-acks-keep-the-log
           crates/cluster/scenarios/restart-into-a-dead-session crates/cluster/scenarios/seek-and-rewind
           crates/cluster/scenarios/reset-none-stops crates/cluster/scenarios/topic-settings
           crates/cluster/scenarios/rebalance-two-members crates/cluster/scenarios/rebalance-on-close
           crates/cluster/scenarios/rebalance-transactional-sink crates/cluster/scenarios/max-poll-interval-zombie
           crates/cluster/scenarios/static-member-restart crates/cluster/scenarios/seek-and-reset-by-time
           crates/cluster/scenarios/consumer-protocol-scale-out)
cells=(auto-timer:append manual-batch:append before-process:append manual-batch:transactional manual-batch:kafka-tx)
# What tansu 0.6 cannot run as Kafka does (docs/CLUSTER.md says why for each).
declare -A not_on_tansu=(
  [crates/cluster/scenarios/rebalance-transactional-sink]="not run on tansu before"
  [crates/cluster/scenarios/max-poll-interval-zombie]="tansu accepts the zombie's commit"
  [crates/cluster/scenarios/static-member-restart]="tansu gives a restarted static member nothing back"
  [crates/cluster/scenarios/seek-and-reset-by-time]="tansu's ListOffsets ignores timestamps"
  [manual-batch:transactional]="not run on tansu before"
  [manual-batch:kafka-tx]="tansu has no EndTxn"
  [lessons/12-share-group-acks-keep-the-log]="tansu has no share groups"
  [crates/cluster/scenarios/consumer-protocol-scale-out]="tansu has no consumer protocol (KIP-848)"
)
left_out=()

for scenario in "${scenarios[@]}"; do
  if [ -n "$tansu" ] && [ -n "${not_on_tansu[$scenario]:-}" ]; then
    left_out+=("${scenario#*/} (${not_on_tansu[$scenario]})")
    continue
  fi
  started=$(date +%s%N)
  if ! attempt "$bin" run "$scenario.scn" --bootstrap-server "$bootstrap" --compare --quiet "${extra[@]}"; then
    echo "$out" >&2
    echo "error: $scenario on $bootstrap: the cluster's figures are not the model's (above)" >&2
    exit 1
  fi
  printf '  %-47s %6s s  the cluster equals the model\n' "${scenario#*/}" "$(seconds_since "$started")"
  warnings
done
for cell in "${cells[@]}"; do
  if [ -n "$tansu" ] && [ -n "${not_on_tansu[$cell]:-}" ]; then
    left_out+=("explore ${cell/:/ × } (${not_on_tansu[$cell]})")
    continue
  fi
  strategy=${cell%%:*}
  sink=${cell#*:}
  started=$(date +%s%N)
  if ! attempt "$bin" explore crates/cluster/scenarios/seed-6s-session.scn --bootstrap-server "$bootstrap" \
              --strategy "$strategy" --sink "$sink" --sample 2 --compare "${extra[@]}"; then
    echo "$out" >&2
    echo "error: explorer cell $strategy × $sink on $bootstrap differs from the model (above)" >&2
    exit 1
  fi
  printf '  explore %-39s %6s s  every crash point equals the explorer\n' "$strategy × $sink" "$(seconds_since "$started")"
  warnings
done
for l in "${left_out[@]}"; do echo "  left out on tansu: $l"; done
echo "  all the runs above: $(seconds_since "$all_started") s"
