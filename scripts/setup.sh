#!/usr/bin/env bash
# Installs what the test command needs, and only what is missing — the one set-up step, run by
# scripts/test.sh itself (and safe to run again):
#   - Debian packages: chromium (browser tests), kcat (Kafka listener tests), a C toolchain (the
#     rdkafka crate builds its bundled librdkafka), python3-venv (the Python client tests),
#     nodejs and npm (Playwright);
#   - npm packages from web-tests/package-lock.json (playwright-core) and
#     kafka-clients/package-lock.json (kafkajs);
#   - a Python venv with kafka-python and confluent-kafka, pinned, from PyPI;
#   - Apache Kafka (the release pinned in apache-kafka/pom.xml), the broker of the real-cluster
#     runs, fetched once through Maven by scripts/apache-kafka.sh into target/apache-kafka/;
#     it needs Java 17 or newer and Maven (Debian's openjdk-17-jre-headless and maven).
# System packages need root: run as root, or with sudo available. Anything it cannot install
# is named, and the script fails; no suite is skipped for want of a tool.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
command -v kcat >/dev/null || missing+=(kcat)
command -v script >/dev/null || missing+=(bsdutils) # `script`: the CLI's colour tests run it on a terminal
{ command -v make >/dev/null && command -v cc >/dev/null; } || missing+=(build-essential)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
# Java 17 or newer runs the brokers (JAVA or JAVA_HOME may name another); Maven fetches them.
java_bin=${JAVA:-${JAVA_HOME:+$JAVA_HOME/bin/}java}
java_major() {
  "$java_bin" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p'
}
java_version=$(java_major 2>/dev/null || true)
[ "${java_version%%.*}" -ge 17 ] 2>/dev/null || missing+=(openjdk-17-jre-headless)
# A JDK (javac) builds the Java client of kafka-clients/java.
command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    echo "error: the tests need these Debian packages, and installing them needs root: ${missing[*]}" >&2
    echo "  run: sudo apt-get install -y ${missing[*]}   (or run scripts/setup.sh as root)" >&2
    exit 1
  fi
  echo "== setup: apt-get install ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -d web-tests/node_modules/playwright-core ] || [ ! -d web-tests/node_modules/axe-core ]; then
  echo "== setup: npm ci (web-tests/package-lock.json)"
  (cd web-tests && npm ci --no-audit --no-fund)
fi

if [ ! -d kafka-clients/node_modules/kafkajs ]; then
  echo "== setup: npm ci (kafka-clients/package-lock.json)"
  (cd kafka-clients && npm ci --no-audit --no-fund)
fi

venv=target/kafka-python-venv
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p target
  python3 -m venv "$venv"
fi
# kafka-python (pure Python) and confluent-kafka (its wheels bundle librdkafka), from PyPI.
if ! "$venv/bin/python" -c 'import kafka, confluent_kafka' 2>/dev/null; then
  echo "== setup: pip install kafka-python confluent-kafka into $venv"
  "$venv/bin/pip" install -q "kafka-python==3.0.12" "confluent-kafka==2.16.1"
fi

# A Java older than 17 still first on the PATH after the install: say which, rather than let
# the broker fail to start later.
java_version=$(java_major 2>/dev/null || true)
if ! [ "${java_version%%.*}" -ge 17 ] 2>/dev/null; then
  echo "error: Apache Kafka needs Java 17 or newer; $java_bin is ${java_version:-missing} (install openjdk-17-jre-headless, or set JAVA_HOME to a Java 17+)" >&2
  exit 1
fi

# Apache Kafka for the real-cluster runs: resolved once from Maven Central into
# target/apache-kafka/<version> (and the class archive that makes its brokers start faster).
if [ ! -f "target/apache-kafka/$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' apache-kafka/pom.xml | head -n 1)/complete" ]; then
  echo "== setup: Apache Kafka through Maven (scripts/apache-kafka.sh fetch)"
fi
bash scripts/apache-kafka.sh fetch >/dev/null

# The Java client (kafka-clients/java: kafka-clients at apache-kafka/pom.xml's kafka.version), from
# Maven Central the first time, offline from ~/.m2 after; built again when its sources changed.
jar=kafka-clients/java/target/offsetlab-java-client.jar
if [ ! -f "$jar" ] || [ -n "$(find kafka-clients/java/pom.xml kafka-clients/java/src -newer "$jar" -print -quit)" ]; then
  echo "== setup: mvn package (kafka-clients/java/pom.xml: the Java client)"
  mvn -B -q -f kafka-clients/java/pom.xml package
fi
