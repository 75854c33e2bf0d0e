#!/usr/bin/env bash
# A real Apache Kafka on loopback, for tests and benchmarks: the oracle the lab is measured
# against. The release is the one pinned in apache-kafka/pom.xml (the property kafka.version),
# resolved from Maven Central by Maven and kept in target/apache-kafka/<version>/libs.
#
#   scripts/apache-kafka.sh start [--brokers N] [--dir DIR] [--config KEY=VALUE]...
#       Fetches the release if it is not cached yet, formats KRaft storage under DIR (a fresh
#       temporary directory by default) with a random cluster id, starts the cluster and waits
#       until every broker has started (90 s at most; APACHE_KAFKA_START_TIMEOUT=SECONDS to
#       change it). Prints the bootstrap servers (127.0.0.1:PORT,...) as the only line on
#       stdout, so `bs=$(scripts/apache-kafka.sh start)` works; progress goes to stderr. One
#       process by default: node 1, a broker that is also the KRaft controller. With
#       --brokers N, N processes with broker ids 1..N: node 1 as before, the only voter of
#       the controller quorum, and N-1 plain brokers; partitions are led by all of them (kill
#       node 2 or 3, not 1, to watch a broker fail while the controller stays). Each node logs
#       to DIR/node-ID/server.log. A start that fails prints the ends of the logs, stops what
#       it started, removes DIR and exits non-zero. Each --config KEY=VALUE (repeatable) is a
#       broker setting written last into every node's server.properties, so it overrides the
#       settings below: e.g. --config offsets.retention.minutes=1 --config
#       offsets.retention.check.interval.ms=1000 for offsets that expire within a test.
#   scripts/apache-kafka.sh stop [--dir DIR]
#       Stops what `start` started in DIR, brokers first and node 1 last (SIGTERM; SIGKILL
#       after 20 s), and removes DIR. Without --dir: the cluster of the last `start` from this
#       checkout.
#   scripts/apache-kafka.sh fetch
#       Only fills the cache (for a CI set-up step): the release, and the class archive that
#       makes brokers start faster (below). Prints the directory of the jars.
#
# Settings are the ones fast tests want: internal topics replicated min(N, 3) times (min ISR
# min(N, 2)), no initial rebalance delay, topics created on first use with one partition, a
# 512 MiB heap and the serial collector per node (kind to two cores). Every feature of the
# release is at its default level: Kafka 4.4 formats with group.version=1 (KIP-848's consumer
# protocol) and share.version=2 (KIP-932's share groups), so both are on without a flag.
# Needs Java 17 or newer (JAVA or JAVA_HOME to pick one), Maven (`mvn`) for the first fetch,
# and python3 (to find free ports).
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
repo=$PWD

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$self"; }
say() { echo "apache-kafka: $*" >&2; }
die() { echo "apache-kafka: error: $*" >&2; exit 1; }

# The pinned version, read from the pom: there is no second copy of it.
pom=apache-kafka/pom.xml
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -n 1)
[ -n "$version" ] || die "no <kafka.version> property in $pom"
cache=target/apache-kafka/$version
libs=$repo/$cache/libs
# The run directory of the last `start`, for a `stop` without --dir.
last_run=target/apache-kafka/last-run

java=${JAVA:-${JAVA_HOME:+$JAVA_HOME/bin/}java}
# Per node. The serial collector and a small heap keep three brokers light on two cores.
# log4j2's own shutdown hook is off, so a node's log goes on to the end of its shutdown
# (with it, log4j stops first and the log ends as the shutdown begins).
# APACHE_KAFKA_JVM_OPTS adds to them (split on spaces), e.g. "-Xmx2g" for a benchmark.
jvm_opts=(-Xms128m -Xmx512m -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
  -Dlog4j2.shutdownHookEnabled=false)
read -r -a extra_jvm_opts <<<"${APACHE_KAFKA_JVM_OPTS:-}"
jvm_opts+=("${extra_jvm_opts[@]}")
# Seconds to wait for every broker to start (a slow or busy machine may want more), and for
# the nodes to exit on SIGTERM before SIGKILL.
start_timeout=${APACHE_KAFKA_START_TIMEOUT:-90}
stop_timeout=20

# --- fetch -------------------------------------------------------------------------------------
# Resolves the release through Maven into the cache, once: a cache is complete only when the
# marker file is there (an interrupted fetch starts again from scratch). A lock keeps two
# concurrent starts from filling the same directory.
fetch() {
  [ -f "$cache/complete" ] && return 0
  command -v mvn >/dev/null || die "Apache Kafka $version is not cached in $cache and Maven is missing: apt-get install maven"
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  flock 9
  if [ ! -f "$cache/complete" ]; then
    say "fetching Apache Kafka $version through Maven (mvn -f $pom package) into $cache/libs"
    # New jars: a class archive made from the old ones would no longer be used (below).
    rm -rf "$libs" "$cache/cds"
    local out=$cache/mvn.log
    if ! mvn -B -q -f "$pom" package >"$out" 2>&1; then
      sed 's/\x1b\[[0-9;]*m//g' "$out" >&2   # without the colour codes Maven 3.8 prints anyway
      rm -rf "$cache"
      die "Maven could not fetch Apache Kafka $version (org.apache.kafka:kafka_2.13, kafka-clients, kafka-tools; see $pom): its output is above"
    fi
    [ -f "$libs/kafka_2.13-$version.jar" ] || die "Maven succeeded but $libs/kafka_2.13-$version.jar is missing"
    touch "$cache/complete"
  fi
  exec 9>&-
}

# Java 17 or newer: Kafka 4's broker is built for it. Sets java_vm (the JVM's exact version).
java_vm=
check_java() {
  command -v "$java" >/dev/null || die "no Java found ($java); Kafka $version needs Java 17 or newer"
  local props v
  props=$("$java" -XshowSettings:properties -version 2>&1)
  v=$(sed -n 's/^ *java.specification.version = //p' <<<"$props")
  [ "${v%%.*}" -ge 17 ] 2>/dev/null || die "$java is Java ${v:-of unknown version}; Kafka $version needs Java 17 or newer"
  java_vm=$(sed -n 's/^ *java.vm.version = //p' <<<"$props")
}

# --- class data sharing ------------------------------------------------------------------------
# A JVM starting a broker spends most of its 5 s of CPU loading and verifying classes. Once per
# Java, a first one-broker run records the classes it loaded in a CDS archive
# (-XX:ArchiveClassesAtExit, written as it exits); every JVM started here then maps it
# (-XX:SharedArchiveFile): about half the CPU, a faster start (most of all for three brokers
# on two cores). The archive only caches class loading, it changes nothing Kafka does; a JVM
# that cannot use it (another Java, another class path) ignores it. APACHE_KAFKA_CDS=off does
# without. Sets cds_opts.
cds_opts=()
prepare_cds() {
  [ "${APACHE_KAFKA_CDS:-on}" != off ] || return 0
  local archive
  archive=$repo/$cache/cds/broker-$(tr -c 'A-Za-z0-9.+-' _ <<<"$java_vm" | sed 's/_$//').jsa
  if [ ! -f "$archive" ] && [ ! -f "$archive.failed" ]; then
    mkdir -p "${archive%/*}"
    exec 8>"$archive.lock"
    flock 8
    if [ ! -f "$archive" ] && [ ! -f "$archive.failed" ]; then
      say "once for this Java: one broker run to record the classes it loads in $archive"
      local run tmp=$archive.tmp.$$ log=$archive.log saved_last_run
      saved_last_run=$(cat "$last_run" 2>/dev/null || true)
      run=$(mktemp -d "${TMPDIR:-/tmp}/apache-kafka-cds.XXXXXX")
      if APACHE_KAFKA_CDS=off APACHE_KAFKA_JVM_OPTS="${APACHE_KAFKA_JVM_OPTS:-} -XX:ArchiveClassesAtExit=$tmp" \
           "$self" start --dir "$run" >"$log" 2>&1 \
         && "$self" stop --dir "$run" >>"$log" 2>&1 \
         && "$java" -Xshare:on -XX:SharedArchiveFile="$tmp" -cp "$libs/*" -version >>"$log" 2>&1; then
        mv "$tmp" "$archive"
        rm -f "$log"
      else
        cat "$log" >&2
        say "warning: no class archive was made (the output is above); brokers start without one (remove $archive.failed to try again)"
        rm -rf "$run" "$tmp"
        touch "$archive.failed"
      fi
      if [ -n "$saved_last_run" ]; then echo "$saved_last_run" >"$last_run"; fi
    fi
    exec 8>&-
  fi
  if [ -f "$archive" ]; then cds_opts=(-XX:SharedArchiveFile="$archive"); fi
}

# --- state -------------------------------------------------------------------------------------
# DIR/apache-kafka.state records what a start started, one `key=value` a line:
#   version=…  brokers=N  bootstrap=host:port,…  cluster_id=…  and one pid=… per node, node 1
#   first.
state_get() { sed -n "s/^$1=//p" "$2/apache-kafka.state"; }

# A node is alive while its process exists, is not a zombie (nothing may reap it here), and
# still runs from this cluster's directory (a recycled pid is somebody else's).
alive() {
  local pid=$1 dir=$2
  [ -r "/proc/$pid/cmdline" ] || return 1
  [ "$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$pid/status" 2>/dev/null)" != Z ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/node-"
}

# Stops the processes $2… of the cluster in $1: SIGTERM, up to $stop_timeout s to exit, then
# SIGKILL.
stop_pids() {
  local dir=$1 pid left killed
  shift
  for pid in "$@"; do if alive "$pid" "$dir"; then kill -TERM "$pid" 2>/dev/null || true; fi; done
  for _ in $(seq 1 $((stop_timeout * 10))); do
    left=
    for pid in "$@"; do if alive "$pid" "$dir"; then left+=" $pid"; fi; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  say "still running after ${stop_timeout}s, killing:$left"
  killed=$left
  for pid in $killed; do kill -KILL "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 50); do
    left=
    for pid in $killed; do if alive "$pid" "$dir"; then left+=" $pid"; fi; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
}

# Stops the nodes of DIR and removes DIR. The brokers go first, while node 1 (the controller)
# can still approve their controlled shutdown; then node 1. (Stopped together, a broker whose
# controller is already gone waits for it for minutes.)
stop_dir() {
  local dir=$1 pids=()
  if [ -f "$dir/apache-kafka.state" ]; then
    mapfile -t pids < <(state_get pid "$dir")
  fi
  if [ ${#pids[@]} -gt 1 ]; then stop_pids "$dir" "${pids[@]:1}"; fi
  if [ ${#pids[@]} -gt 0 ]; then stop_pids "$dir" "${pids[0]}"; fi
  rm -rf "$dir"
  if [ -f "$last_run" ] && [ "$(cat "$last_run")" = "$dir" ]; then rm -f "$last_run"; fi
}

# --- start -------------------------------------------------------------------------------------
# N free loopback ports, at random below the kernel's ephemeral range: the ports it hands out
# for outgoing connections (the brokers' own, to the controller, among them) never take one
# between this choice and the broker's bind. Each is held until the last is chosen, so they
# differ. A port another program binds meanwhile makes start fail, naming the node.
free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
try:
    low, high = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
except (OSError, ValueError):
    low, high = 32768, 60999
pool = list(range(10000, low)) if low > 11000 else list(range(high + 1, 65536))
random.shuffle(pool)
held = []
for port in pool:
    if len(held) == int(sys.argv[1]):
        break
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
}

# Closes every file descriptor above 2 that this shell inherited. A node must not hold its
# caller's pipes open: `bs=$(apache-kafka.sh start 2> >(…))` would wait on the brokers forever.
close_inherited_fds() {
  local fd
  for fd in "/proc/$BASHPID/fd/"*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

# A log4j2 configuration ($1) logging level $2 and above to the process's stdout: INFO for
# the nodes (stdout is the node's server.log), WARN for the storage formatter.
write_log4j2() {
  cat >"$1" <<EOF
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = $2
rootLogger.appenderRef.out.ref = out
EOF
}

# server.properties of node $1 of $brokers. Node 1 is a broker and the controller, the only
# voter of the quorum (a static one); nodes 2..N are brokers.
write_node_config() {
  local id=$1 file=$2
  local rf=$(( brokers < 3 ? brokers : 3 ))
  local min_isr=$(( rf < 2 ? rf : 2 ))
  local roles=broker listeners=PLAINTEXT://127.0.0.1:${broker_ports[id-1]}
  if [ "$id" -eq 1 ]; then
    roles=broker,controller
    listeners+=,CONTROLLER://127.0.0.1:$controller_port
  fi
  cat >"$file" <<EOF
process.roles=$roles
node.id=$id
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=$listeners
advertised.listeners=PLAINTEXT://127.0.0.1:${broker_ports[id-1]}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$dir/node-$id/data

# Fast tests: topics on first use with one partition, no wait before the first rebalance.
auto.create.topics.enable=true
num.partitions=1
default.replication.factor=1
group.initial.rebalance.delay.ms=0

# Internal topics replicated over what there is.
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
EOF
  if [ ${#configs[@]} -gt 0 ]; then
    printf '\n# Given with --config.\n' >>"$file"
    printf '%s\n' "${configs[@]}" >>"$file"
  fi
}

# A start that failed: the last lines of every node's log, then everything started stopped
# and the directory removed, then the reason, last.
start_failed() {
  trap - EXIT
  local log
  for log in "$dir"/node-*/server.log; do
    [ -s "$log" ] || continue
    echo "---- the last lines of $log" >&2
    tail -n 40 "$log" >&2
  done
  stop_dir "$dir"
  die "$1 (the cluster's directory $dir is removed)"
}

# The cluster being started (globals: the exit trap and the helpers read them).
brokers=1
dir=
configs=()
start() {
  while [ $# -gt 0 ]; do
    case $1 in
      --brokers) [ $# -ge 2 ] || die "--brokers needs a number"; brokers=$2; shift 2 ;;
      --dir) [ $# -ge 2 ] || die "--dir needs a directory"; dir=$2; shift 2 ;;
      --config)
        [ $# -ge 2 ] || die "--config needs KEY=VALUE"
        # A broker property name, then anything on one line (a newline would start another).
        [[ $2 =~ ^[A-Za-z0-9._-]+=[^$'\n']*$ ]] || die "--config wants KEY=VALUE on one line (a broker setting such as offsets.retention.minutes=1), not '$2'"
        configs+=("$2"); shift 2 ;;
      *) die "start: unknown argument $1 (see --help)" ;;
    esac
  done
  [[ $brokers =~ ^[1-9][0-9]?$ ]] || die "--brokers wants a number from 1 to 99, not $brokers"
  command -v python3 >/dev/null || die "python3 is needed to find free ports"
  check_java
  fetch
  prepare_cds

  # The run directory: new, or an empty one the caller named. `stop` removes it whole.
  if [ -z "$dir" ]; then
    dir=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/apache-kafka.XXXXXX")" && pwd -P)
  else
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    [ -z "$(ls -A "$dir")" ] || die "$dir is not empty (a cluster may run there: stop --dir $dir)"
  fi
  mkdir -p target/apache-kafka
  echo "$dir" >"$last_run"
  # From here on a failure stops whatever started and removes the directory, after printing
  # the ends of the logs.
  trap 'start_failed "start stopped before the cluster was up"' EXIT
  trap 'exit 130' INT TERM

  local ports id
  read -r -a ports <<<"$(free_ports $((brokers + 1)))"
  broker_ports=("${ports[@]:0:brokers}")
  controller_port=${ports[brokers]}
  bootstrap=
  for id in $(seq 1 "$brokers"); do bootstrap+="${bootstrap:+,}127.0.0.1:${broker_ports[id-1]}"; done

  # A Kafka cluster id is 16 random bytes in URL-safe base64 without padding (22 characters);
  # like Kafka's own Uuid.randomUuid(), never one starting with "-", which the storage tool
  # would read as an option.
  local cluster_id=-
  while [[ $cluster_id == -* ]]; do
    cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  done
  write_log4j2 "$dir/log4j2.properties" INFO
  write_log4j2 "$dir/format-log4j2.properties" WARN
  {
    echo "version=$version"
    echo "brokers=$brokers"
    echo "bootstrap=$bootstrap"
    echo "cluster_id=$cluster_id"
  } >"$dir/apache-kafka.state"

  # Format every node's log directory (in parallel: one JVM each), every feature at the
  # release's default level.
  say "Kafka $version: formatting $brokers node(s) in $dir (cluster $cluster_id)"
  local pids=() pid
  for id in $(seq 1 "$brokers"); do
    mkdir -p "$dir/node-$id"
    write_node_config "$id" "$dir/node-$id/server.properties"
    "$java" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${cds_opts[@]}" -Dlog4j2.configurationFile="$dir/format-log4j2.properties" \
      -cp "$libs/*" kafka.tools.StorageTool format \
      --config "$dir/node-$id/server.properties" --cluster-id "$cluster_id" >"$dir/node-$id/format.log" 2>&1 &
    pids+=($!)
  done
  for id in $(seq 1 "$brokers"); do
    if ! wait "${pids[id-1]}"; then
      cat "$dir/node-$id/format.log" >&2
      start_failed "formatting node $id's storage failed (kafka.tools.StorageTool format; its output is above)"
    fi
  done

  # Start the nodes; each one's pid goes into the state file at once, so that `stop` (or the
  # trap above) finds it whatever happens next.
  say "starting $brokers node(s): broker ports ${broker_ports[*]}, controller port $controller_port (node 1)"
  pids=()
  for id in $(seq 1 "$brokers"); do
    (
      close_inherited_fds
      exec "$java" "${jvm_opts[@]}" "${cds_opts[@]}" -Dlog4j2.configurationFile="$dir/log4j2.properties" \
        -cp "$libs/*" kafka.Kafka "$dir/node-$id/server.properties"
    ) </dev/null >"$dir/node-$id/server.log" 2>&1 &
    pids+=($!)
    echo "pid=$!" >>"$dir/apache-kafka.state"
  done

  # Wait until each node says it has started (its broker is registered with the controller,
  # unfenced and serving) and its port accepts a connection. A node that dies ends the wait.
  local started=0 i deadline=$((SECONDS + start_timeout))
  while [ "$started" -lt "$brokers" ]; do
    started=0
    for i in $(seq 0 $((brokers - 1))); do
      alive "${pids[i]}" "$dir" || start_failed "node $((i + 1)) (pid ${pids[i]}) exited during start"
      if grep -q "Kafka Server started" "$dir/node-$((i + 1))/server.log" 2>/dev/null \
         && (exec 3<>"/dev/tcp/127.0.0.1/${broker_ports[i]}") 2>/dev/null; then
        started=$((started + 1))
      fi
    done
    [ "$started" -lt "$brokers" ] || break
    [ "$SECONDS" -lt "$deadline" ] || start_failed "$((brokers - started)) of $brokers node(s) had not started after ${start_timeout}s"
    sleep 0.2
  done
  trap - EXIT INT TERM
  say "started in ${SECONDS}s: $brokers broker(s) at $bootstrap; stop with: scripts/apache-kafka.sh stop --dir $dir"
  echo "$bootstrap"
}

stop() {
  local dir=
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) [ $# -ge 2 ] || die "--dir needs a directory"; dir=$2; shift 2 ;;
      *) die "stop: unknown argument $1 (see --help)" ;;
    esac
  done
  if [ -z "$dir" ]; then
    [ -f "$last_run" ] || die "no cluster recorded ($last_run is missing): name one with --dir"
    dir=$(cat "$last_run")
  fi
  if [ ! -d "$dir" ]; then
    say "nothing to stop: $dir does not exist"
    if [ -f "$last_run" ] && [ "$(cat "$last_run")" = "$dir" ]; then rm -f "$last_run"; fi
    return 0
  fi
  dir=$(cd "$dir" && pwd -P)
  [ -f "$dir/apache-kafka.state" ] || die "$dir holds no apache-kafka.state: not a cluster this script started"
  say "stopping the cluster in $dir"
  stop_dir "$dir"
}

case ${1:-} in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  fetch) shift; [ $# -eq 0 ] || die "fetch takes no argument"; check_java; fetch; prepare_cds; echo "$libs" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
