#!/usr/bin/env bash
# The real-cluster runs against one broker: lessons 1, 2, 3, 4, 5 and 10 with
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
for lesson in 01-auto-commit-timer-loses 02-commit-after-duplicates 03-upsert-converges \
              04-rewind-to-earliest 05-new-group-from-zero 10-java-vs-librdkafka-auto-commit; do
  started=$(date +%s%N)
  if ! out=$("$bin" run "lessons/$lesson.scn" --bootstrap-server "$bootstrap" --compare --quiet "$@" 2>&1); then
    echo "$out" >&2
    echo "error: lesson $lesson on $bootstrap: the cluster's figures are not the model's (above)" >&2
    exit 1
  fi
  printf '  lesson %-40s %6s s  the cluster equals the model\n' "$lesson" "$(seconds_since "$started")"
done
for strategy in auto-timer manual-batch before-process; do
  started=$(date +%s%N)
  if ! out=$("$bin" explore crates/cluster/scenarios/seed-6s-session.scn --bootstrap-server "$bootstrap" \
              --strategy "$strategy" --sink append --sample 2 "$@" 2>&1); then
    echo "$out" >&2
    echo "error: explorer cell $strategy × append on $bootstrap differs from the model (above)" >&2
    exit 1
  fi
  printf '  explore %-39s %6s s  every crash point equals the explorer\n' "$strategy × append" "$(seconds_since "$started")"
done
