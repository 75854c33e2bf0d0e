#!/usr/bin/env bash
# The real-cluster runs against one broker: lessons 1, 2, 3, 4, 5 and 10 and the scenarios made
# for a cluster (crates/cluster/scenarios: rebalances, seek, reset=none, topic settings) with
# `offsetlab run --bootstrap-server … --compare`, and the explorer's auto-timer × append,
# manual-batch × append and before-process × append cells (two crash points each: the model's
# worst and the first). Every figure on the cluster must equal the model's; the wall time of
# each is printed (docs/CLUSTER.md records them).
#   usage: scripts/cluster_runs.sh OFFSETLAB_BIN HOST:PORT [-X key=value …]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1
bootstrap=$2
shift 2
seconds_since() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }
# Runs "$@" (one run of offsetlab) into $out. A run that stops because the broker put a
# produced record at another offset than the model's — tansu 0.6 has reordered records of one
# idempotent producer under load (docs/CLUSTER.md) — is run once more, saying so; any other
# failure, or a second one, is the run's result.
attempt() {
  if out=$("$@" 2>&1); then return 0; fi
  case "$out" in
    *"the cluster put them at offsets"*)
      echo "  (the broker reordered produced records; running it once more)" >&2
      out=$("$@" 2>&1) ;;
    *) return 1 ;;
  esac
}
for lesson in lessons/01-auto-commit-timer-loses lessons/02-commit-after-duplicates lessons/03-upsert-converges \
              lessons/04-rewind-to-earliest lessons/05-new-group-from-zero lessons/10-java-vs-librdkafka-auto-commit \
              crates/cluster/scenarios/restart-into-a-dead-session crates/cluster/scenarios/seek-and-rewind \
              crates/cluster/scenarios/reset-none-stops crates/cluster/scenarios/topic-settings \
              crates/cluster/scenarios/rebalance-two-members crates/cluster/scenarios/rebalance-on-close; do
  started=$(date +%s%N)
  if ! attempt "$bin" run "$lesson.scn" --bootstrap-server "$bootstrap" --compare --quiet "$@"; then
    echo "$out" >&2
    echo "error: $lesson on $bootstrap: the cluster's figures are not the model's (above)" >&2
    exit 1
  fi
  printf '  %-47s %6s s  the cluster equals the model\n' "${lesson#*/}" "$(seconds_since "$started")"
done
for strategy in auto-timer manual-batch before-process; do
  started=$(date +%s%N)
  if ! attempt "$bin" explore crates/cluster/scenarios/seed-6s-session.scn --bootstrap-server "$bootstrap" \
              --strategy "$strategy" --sink append --sample 2 --compare "$@"; then
    echo "$out" >&2
    echo "error: explorer cell $strategy × append on $bootstrap differs from the model (above)" >&2
    exit 1
  fi
  printf '  explore %-39s %6s s  every crash point equals the explorer\n' "$strategy × append" "$(seconds_since "$started")"
done
