"""Scenarios checked against Apache Kafka: each story of scenarios/oracle/ run on the lab's model
and performed on a real Kafka by real clients, the figures compared.

Usage:
  oracle_scenarios.py --bootstrap HOST:PORT [--offsetlab BIN] [--listener] [--jobs N] [--report FILE]
                      [--scenarios DIR] [NAME ...]

A scenario is a file of the lab's scenario language (docs/SCENARIOS.md). Its `expect` and
`expect-error` lines state Kafka's behaviour. Each file is

  1. run on the model: `offsetlab run FILE --json` must hold every line (exit 0);
  2. performed on the Kafka at --bootstrap (already started; `scripts/apache-kafka.sh start`),
     line by line, by real clients: a confluent-kafka (librdkafka) consumer process per
     `consumer` (killed with SIGKILL for `crash`), confluent-kafka's Producer (transactional
     for `init-txn`) and AdminClient, kafka-python for what confluent-kafka lacks (OffsetDelete,
     an OffsetCommit from a member id and generation of our choosing), and Kafka's own
     kafka-consumer-groups tool (ConsumerGroupCommand from the release apache-kafka.sh runs)
     for `reset-offsets`. Every `expect` line is evaluated there at the same point of the
     story, every `expect-error` line must meet that error code, and at the end the final
     figures of the model (`--json`: committed offsets, group states, log start and end
     offsets, what each group applied, lost and duplicated) are compared with Kafka's;
  3. with --listener, performed the same way on the lab's own Kafka listener
     (`offsetlab serve --ephemeral --kafka 127.0.0.1:0`); a `broker` line, the lab's own broker
     setting, goes to that lab through its HTTP API. A scenario with a line
     `# oracle: not-on-listener REASON` is not performed there, and the run says so; one with
     `# oracle: listener-disagrees REASON` is, and its disagreement is printed as KNOWN on every
     run without failing it (the listener has another owner) — until the listener agrees,
     which fails the run until the line is removed.

A line `# oracle: needs-broker-config KEY=VALUE …` names broker settings the story depends on
(offsets.retention.minutes for offsets that expire within it): the Kafka's are read
(DescribeConfigs) first, and a broker configured otherwise fails the scenario, saying how to
start one that is not.

One line per scenario and target: PASS or FAIL, with the figures side by side on a failure.
A JSON report (--report, default target/oracle-report.json) holds every figure. Exit status 1
when any scenario disagrees anywhere (a listener disagreement included), 2 for a usage error.

Time: a `tick` sleeps for real (the broker's timers — session timeouts, offset expiry — run on
wall time), so the stories keep their ticks short. The lab's clock starts at
2026-01-01T00:00:00Z; on Kafka it is mapped onto the wall clock at the story's start, and
records are produced with the lab's timestamps so mapped (a seek to `@2s` is a ListOffsets for
the story's start + 2 s). Names get a suffix per run (`orders` → `orders-k3f9a`), so runs never
meet on one broker; the report uses the scenario's names.
"""
import argparse
import collections
import datetime
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid

LAB_EPOCH_MS = 1_767_225_600_000
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Broker-side figures (committed offsets, group states) settle on the broker's own timers: a
# check that disagrees is read again for this long before it counts.
SETTLE_S = 6.0
HEARTBEAT_MS = 500


class ScenarioError(Exception):
    """The driver cannot perform a line (unsupported, malformed): the scenario fails."""


# --- the scenario language, as docs/SCENARIOS.md and crates/scenario/src/token.rs read it -------

def tokenize(line):
    tokens, cur, depth, quote, escaped = [], "", 0, None, False
    for ch in line:
        if quote:
            cur += ch
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch == "#" and depth == 0:
            break
        if ch in "\"'":
            quote = ch
            cur += ch
        elif ch in "{[":
            depth += 1
            cur += ch
        elif ch in "}]":
            depth -= 1
            cur += ch
        elif ch.isspace() and depth == 0:
            if cur:
                tokens.append(cur)
                cur = ""
        else:
            cur += ch
    if quote or depth:
        raise ScenarioError(f"unbalanced quote or bracket in: {line}")
    if cur:
        tokens.append(cur)
    return tokens


def decode(raw):
    if raw.startswith("'") and raw.endswith("'") and len(raw) >= 2:
        return raw[1:-1]
    if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
        return json.loads(re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: "\\u00" + m.group(1), raw))
    return raw


class Line:
    def __init__(self, number, text, tokens):
        self.number, self.text = number, text
        self.cmd = tokens[0]
        self.words, self.opts = [], {}
        for t in tokens[1:]:
            if t[0] not in "\"'" and "=" in t:
                k, v = t.split("=", 1)
                self.opts[k] = decode(v)
            else:
                self.words.append(decode(t))

    def word(self, i, what):
        if len(self.words) <= i:
            raise ScenarioError(f"line {self.number}: {self.cmd} needs {what}")
        return self.words[i]


def parse_scenario(path):
    lines, directives = [], {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            stripped = text.strip()
            m = re.match(r"#\s*oracle:\s*([a-z-]+)\s*(.*)$", stripped)
            if m:
                directives[m.group(1)] = m.group(2).strip()
                continue
            tokens = tokenize(text)
            if not tokens:
                continue
            line = Line(n, stripped, tokens)
            if line.cmd == "expect-error":
                code = line.word(0, "an error code")
                inner = Line(n, stripped, tokens[2:])
                inner.expect_error = code
                line = inner
            lines.append(line)
    return lines, directives


UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(text):
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise ScenarioError(f"not a duration: {text}")
    return sum(int(a) * UNITS_MS[b] for a, b in parts)


def instant_ms(text):
    """An instant of the lab's clock: RFC 3339 (UTC without a zone) or a duration after its start."""
    if re.match(r"^\d{4}-\d\d-\d\d", text):
        t = text.replace("Z", "+00:00")
        d = datetime.datetime.fromisoformat(t)
        if d.tzinfo is None:
            d = d.replace(tzinfo=datetime.timezone.utc)
        return int(d.timestamp() * 1000)
    return LAB_EPOCH_MS + duration_ms(text)


def offsets_spec(text):
    """`t:0=5,u:1=7` → [(t, 0, 5), …]."""
    out = []
    for part in text.split(","):
        m = re.match(r"^(.+):(\d+)=(-?\d+)$", part)
        if not m:
            raise ScenarioError(f"not T:P=OFFSET: {part}")
        out.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return out


def ranges(offsets):
    """[0,1,2,4] → '0..2,4'; [] → '-' (how the `polled` expect key writes offsets)."""
    if not offsets:
        return "-"
    offsets, out = sorted(offsets), []
    start = prev = offsets[0]
    for o in offsets[1:] + [None]:
        if o is not None and o == prev + 1:
            prev = o
            continue
        out.append(str(start) if start == prev else f"{start}..{prev}")
        if o is not None:
            start = prev = o
    return ",".join(out)


# --- a consumer process: one librdkafka consumer, driven over stdin/stdout -----------------------

def child_main():
    """The consumer process. One JSON request a line on stdin, one JSON answer a line on stdout.

    Records are handed over only inside a `poll` — the lab's poll(): up to max-poll records,
    ending early at the end of the log (partition EOF at the end offset the broker gave when the
    poll began: the high watermark, or the last stable offset under read_committed). A poll
    while the group rebalances rejoins (the revoke hook runs; what it commits is the parent's
    business) and, once the new assignment comes, goes on to fetch — as a Java poll() does, and
    the lab's; while the group still waits for other members it hands nothing over.

    Between polls the consumer's callbacks are served by consuming (librdkafka has no other
    way); a record that comes out meanwhile is kept for the next poll and its partition paused
    then — never before: a partition is not paused or resumed before its fetcher has started.
    librdkafka starts a newly assigned partition's fetcher, once its committed offset is
    known, with a versioned op, and a pause made in that instant — a newer version reaching the
    partition first — makes the start outdated: dropped, and the partition is never fetched
    (librdkafka #2190, #5591). Paused right after assign(), as this process once did, one
    oracle run in some hundreds on the lab's listener lost its partition so: the listener's
    OffsetFetch answer comes back as the pause is made.

    ORACLE_DEBUG=1 in the environment prints each request to stderr."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition, OFFSET_END, OFFSET_BEGINNING

    out = sys.stdout
    sys.stdout = sys.stderr
    # "sought": per partition a seek moved since the last rebalance, the offset its next record
    # must be at least. librdkafka looks a newly assigned partition's committed offset up
    # asynchronously and starts fetching from it (or from auto.offset.reset) when the answer
    # comes — after a seek made meanwhile, which it then overrides (one oracle run in a few:
    # `seek c1 to=@1s` right after the consumer joined, then records 0..5). A record before that
    # offset is such a late start's, or a repeat of one, and is dropped; what the late start
    # fetches from the seek's offset on is what the seek would have fetched.
    # "early": records that came out while callbacks were served, in order, the next poll's.
    # "held": the partitions this process paused (librdkafka keeps a partition's pause across
    # a revocation and a new assignment, and so does this set).
    state = {"consumer": None, "assigned": [], "revoked": 0, "assigns": 0, "events": [], "pending_errors": [],
             "eof": {}, "sought": {}, "early": [], "held": set()}

    def answer(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    # A flight recorder: librdkafka's group and partition debug lines (assignments, op versions,
    # fetch starts, pauses), the last few hundred kept in memory and printed only when a poll
    # comes back empty although the log holds records past the consumer's position — the shape
    # of a partition whose fetcher never started, and of anything else that would look like it.
    import logging
    recorded = collections.deque(maxlen=400)

    class Recorder(logging.Handler):
        def emit(self, record):
            recorded.append(record.getMessage())

    recorder = logging.getLogger(f"oracle-child-{os.getpid()}")
    recorder.propagate = False
    recorder.setLevel(logging.DEBUG)
    recorder.addHandler(Recorder())

    def dump_recorder(why):
        print(f"oracle child {os.getpid()}: {why}; librdkafka's last {len(recorded)} group/partition lines:",
              file=sys.stderr)
        for line in recorded:
            print("    " + line, file=sys.stderr)

    def on_assign(c, parts):
        state["sought"] = {}
        c.assign(parts)
        state["assigned"] = [(p.topic, p.partition) for p in parts]
        state["eof"] = {}
        state["early"] = []
        state["assigns"] += 1
        state["events"].append("assign")

    def on_revoke(c, parts):
        state["sought"] = {}
        state["early"] = []
        state["revoked"] += 1
        state["events"].append("revoke")
        state["assigned"] = []

    def tps():
        return [TopicPartition(t, p) for t, p in state["assigned"]]

    def admitted(m):
        """The record as the application sees it, or None for one a seek made obsolete."""
        tp = (m.topic(), m.partition())
        if tp in state["sought"]:
            if m.offset() < state["sought"][tp]:
                return None
            state["sought"][tp] = m.offset() + 1
        key = m.key()
        return [m.topic(), m.partition(), m.offset(), key.decode("utf-8", "replace") if key is not None else None]

    def early_of(tp):
        return [r for r in state["early"] if (r[0], r[1]) == tp]

    def generation(c):
        # librdkafka's serialized group metadata: "CGMDv2:" then the generation (int32, host order).
        meta = bytes(c.consumer_group_metadata())
        return int.from_bytes(meta[7:11], sys.byteorder, signed=True) if meta.startswith(b"CGMDv2:") else None

    def snapshot(c):
        # librdkafka's position() is the offset after the last record handed over; before the
        # first one it knows none, and the end of the log it fetched to (a partition EOF) is
        # where it is.
        # A record kept for the next poll has not been handed over: the position is its offset.
        positions = {}
        if state["assigned"]:
            for tp in c.position(tps()):
                kept = early_of((tp.topic, tp.partition))
                pos = tp.offset if tp.offset >= 0 else state["eof"].get((tp.topic, tp.partition))
                positions[f"{tp.topic}:{tp.partition}"] = kept[0][2] if kept else pos
        return {"assigned": state["assigned"], "positions": positions, "generation": generation(c),
                "member": c.memberid()}

    def serve(c, seconds, until):
        """Serves the consumer's callbacks until `until()` or `seconds` pass. A record that comes
        out meanwhile is kept for the next poll and its partition paused — its fetcher has
        started, so the pause cannot outdate the start. An error the consumer reports meanwhile
        (an offset reset refused) is kept for the next poll, which hands it to the application."""
        deadline = time.time() + seconds
        while time.time() < deadline and not until():
            for m in c.consume(num_messages=1, timeout=0.1):
                if m.error() is None:
                    record = admitted(m)
                    if record is not None:
                        state["early"].append(record)
                    tp = (m.topic(), m.partition())
                    if tp not in state["held"]:
                        c.pause([TopicPartition(*tp)])
                        state["held"].add(tp)
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    state["eof"][(m.topic(), m.partition())] = m.offset()
                else:
                    state["pending_errors"].append(m.error().name())

    def seek_once_started(c, tp):
        """librdkafka refuses a seek (_STATE) on a partition it has not started fetching: right
        after the assignment, while it still looks the committed offset up. Tried again, the
        consumer's callbacks served meanwhile, until the partition has started."""
        deadline = time.time() + 10
        while True:
            try:
                c.seek(tp)
                return
            except KafkaException as e:
                if e.args[0].code() != KafkaError._STATE or time.time() >= deadline:
                    raise
                serve(c, 0.1, lambda: False)

    debug = os.environ.get("ORACLE_DEBUG")
    for raw in sys.stdin:
        if debug:
            print("child", os.getpid(), raw.strip(), state["events"], state["assigned"], file=sys.stderr)
        req = json.loads(raw)
        op = req["op"]
        try:
            if op == "start":
                c = Consumer({**req["conf"], "debug": "cgrp,topic"}, logger=recorder)
                state["consumer"] = c
                c.subscribe([req["topic"]], on_assign=on_assign, on_revoke=on_revoke)
                serve(c, req["wait"], lambda: state["assigns"] > 0)
                answer({"ok": True, **snapshot(c)})
            elif op == "poll":
                c = state["consumer"]
                result = {"records": [], "rebalanced": False, "error": None}
                before = len(state["events"])
                if req.get("rejoin"):
                    # The group is rebalancing: this poll rejoins (the revoke hook, then the new
                    # assignment). While the group still waits for other members it hands
                    # nothing over; once the assignment comes, the same poll goes on to fetch.
                    serve(c, req["rejoin_wait"], lambda: "assign" in state["events"][before:])
                    result["rebalanced"] = True
                    if "assign" not in state["events"][before:]:
                        answer({"ok": True, **result, **snapshot(c)})
                        continue
                    before = len(state["events"])
                if state["pending_errors"]:
                    result["error"] = state["pending_errors"].pop(0)
                    answer({"ok": True, **result, **snapshot(c)})
                    continue
                if not state["assigned"]:
                    # Not assigned yet (the group waited for others): take the assignment first.
                    serve(c, req["timeout"], lambda: state["assigns"] > 0)
                ends = {}
                for tp in tps():
                    lo, hi = c.get_watermark_offsets(tp, timeout=10, cached=False)
                    ends[(tp.topic, tp.partition)] = hi
                # What came out while callbacks were served goes first; a partition resumes
                # once nothing of it is left kept (else its next records would overtake).
                take = min(req["max"], len(state["early"]))
                result["records"], state["early"] = state["early"][:take], state["early"][take:]
                kept = {(r[0], r[1]) for r in state["early"]}
                for tp in [tp for tp in state["held"] if tp not in kept]:
                    c.resume([TopicPartition(*tp)])
                    state["held"].discard(tp)
                # A partition already at the end its EOF said: librdkafka says an EOF once.
                eof = {tp: state["eof"][tp] for tp, end in ends.items()
                       if tp not in kept and state["eof"].get(tp, -1) >= end}
                deadline = time.time() + req["timeout"]
                while len(result["records"]) < req["max"] and time.time() < deadline:
                    if "revoke" in state["events"][before:]:
                        result["rebalanced"] = True
                        break
                    for m in c.consume(num_messages=req["max"] - len(result["records"]), timeout=0.1):
                        err = m.error()
                        if err is None:
                            record = admitted(m)
                            if record is not None:
                                result["records"].append(record)
                        elif err.code() == KafkaError._PARTITION_EOF:
                            eof[(m.topic(), m.partition())] = m.offset()
                            state["eof"][(m.topic(), m.partition())] = m.offset()
                        else:
                            result["error"] = err.name()
                            break
                    if result["error"]:
                        break
                    if all(tp in eof and eof[tp] >= end for tp, end in ends.items()) and ends:
                        break
                else:
                    if len(result["records"]) < req["max"] and ends:
                        result["timed_out"] = True
                        at = {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else state["eof"].get(
                            (tp.topic, tp.partition)) for tp in c.position(tps())}
                        behind = {tp: (at.get(tp), end) for tp, end in ends.items()
                                  if end > 0 and (at.get(tp) is None or at[tp] < end)}
                        if not result["records"] and behind:
                            dump_recorder(f"a poll ended on its timeout with nothing, behind the log end: "
                                          f"{behind} (partition: (position, end))")
                answer({"ok": True, **result, **snapshot(c)})
            elif op == "commit":
                c = state["consumer"]
                offsets = [TopicPartition(t, p, o, metadata=meta) for t, p, o, meta in req["offsets"]]
                try:
                    res = c.commit(offsets=offsets, asynchronous=False)
                    errors = [tp.error.name() for tp in res if tp.error is not None]
                    answer({"ok": True, "error": errors[0] if errors else None})
                except KafkaException as e:
                    answer({"ok": True, "error": e.args[0].name()})
            elif op == "seek":
                c = state["consumer"]
                t, p = req["tp"]
                to = req["to"]
                if to == "earliest":
                    offset = OFFSET_BEGINNING
                elif to == "latest":
                    offset = OFFSET_END
                elif isinstance(to, dict):
                    found = c.offsets_for_times([TopicPartition(t, p, to["timestamp"])], timeout=10)[0]
                    # No record that recent: Kafka answers -1, which librdkafka seeks as the end.
                    offset = found.offset if found.offset >= 0 else OFFSET_END
                else:
                    offset = to
                seek_once_started(c, TopicPartition(t, p, offset))
                state["eof"].pop((t, p), None)
                state["early"] = [r for r in state["early"] if (r[0], r[1]) != (t, p)]
                if offset >= 0:
                    state["sought"][(t, p)] = offset
                else:
                    lo, hi = c.get_watermark_offsets(TopicPartition(t, p), timeout=10, cached=False)
                    state["sought"][(t, p)] = lo if offset == OFFSET_BEGINNING else hi
                answer({"ok": True, "resolved": offset if offset >= 0 else None, **snapshot(c)})
            elif op == "snapshot":
                answer({"ok": True, **snapshot(state["consumer"])})
            elif op == "close":
                if state["consumer"] is not None:
                    state["consumer"].close()
                answer({"ok": True})
                return
            else:
                answer({"ok": False, "error": f"unknown op {op}"})
        except Exception as e:  # reported to the parent, which fails the scenario
            answer({"ok": False, "error": f"{type(e).__name__}: {e}"})


# --- the story on a Kafka ------------------------------------------------------------------------

class ConsumerProc:
    """The parent's side of one consumer: its process and what its application holds."""

    def __init__(self, name, opts):
        self.name, self.opts = name, opts
        self.incarnation, self.state, self.proc = 0, "running", None
        self.in_flight, self.processed, self.last_polled = [], {}, []
        self.snapshot = {"assigned": [], "positions": {}, "generation": None, "member": None}

    def request(self, obj, timeout=90):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise ScenarioError(f"consumer {self.name}'s process died (exit {self.proc.poll()})")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ScenarioError(f"consumer {self.name}: {answer.get('error')}")
        for k in ("assigned", "positions", "generation", "member"):
            if k in answer:
                self.snapshot[k] = answer[k]
        return answer


class Story:
    """One scenario performed on one Kafka (Apache Kafka, or the lab's listener)."""

    def __init__(self, target, bootstrap, tag, java_libs, lab_http=None):
        from confluent_kafka.admin import AdminClient
        self.target, self.bootstrap, self.tag, self.java_libs = target, bootstrap, tag, java_libs
        # The lab's HTTP API, when the Kafka is the lab's own listener: where a `broker` line
        # goes (the lab's broker settings are scenario lines).
        self.lab_http = lab_http
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.kadmin = None
        self.producer = None
        self.txn = {}
        self.consumers = {}
        self.topics = {}                     # name → partitions
        self.groups = collections.OrderedDict()  # name → its consumers' isolation, for the audit
        self.produced = collections.defaultdict(dict)   # (topic, p) → {offset: key}
        self.aborted = collections.defaultdict(set)     # (topic, p) → offsets of aborted records
        self.orders = collections.Counter()  # per topic: orders created by `produce` without a key
        self.delivered = collections.defaultdict(collections.Counter)  # group → (t, p, o) → n
        self.first_start = collections.defaultdict(dict)  # group → (t, p) → offset
        self.skipped = collections.defaultdict(set)        # group → {(t, p, o)}
        self.aborted_read = collections.Counter()          # group → records of aborted txns handed over
        self.clock_ms = LAB_EPOCH_MS
        self.wall_start_ms = int(time.time() * 1000)
        self.checks = []        # every expect check: line, key, expected, kafka's value
        self.errors = []        # every expect-error line: line, expected code, kafka's code
        self.notes = []

    # names on the broker
    def t(self, name):
        return f"{name}-{self.tag}"

    def g(self, name):
        return f"{name}-{self.tag}"

    def lab_ts_to_wall(self, lab_ms):
        return self.wall_start_ms + (lab_ms - LAB_EPOCH_MS)

    def kafka_admin(self):
        if self.kadmin is None:
            from kafka.admin import KafkaAdminClient
            self.kadmin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=30000)
        return self.kadmin

    def close(self):
        for c in self.consumers.values():
            if c.proc and c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
        for p in self.txn.values():
            p["producer"].flush(5)
        if self.producer:
            self.producer.flush(5)
        if self.kadmin:
            self.kadmin.close()

    # --- lines ---
    def perform(self, line):
        handler = getattr(self, "do_" + line.cmd.replace("-", "_"), None)
        if handler is None:
            raise ScenarioError(f"line {line.number}: the oracle does not perform '{line.cmd}'")
        expected_error = getattr(line, "expect_error", None)
        code = handler(line)
        if line.cmd == "expect":
            return
        if expected_error is not None or code is not None:
            self.errors.append({"line": line.number, "text": line.text, "expected": expected_error,
                                self.target: code})

    def do_broker(self, line):
        if self.lab_http:
            import urllib.request
            body = json.dumps({"lines": [line.text]}).encode()
            req = urllib.request.Request(self.lab_http + "/api/actions", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                if r.status != 200:
                    raise ScenarioError(f"line {line.number}: the lab refused {line.text}: {r.read()[:300]}")
            self.notes.append(f"line {line.number}: {line.text} — applied to the lab through its HTTP API")
            return
        self.notes.append(f"line {line.number}: {line.text} — the broker was started so "
                          "(scripts/apache-kafka.sh start --config …; the scenario's needs-broker-config line is checked)")

    def do_topic(self, line):
        from confluent_kafka.admin import NewTopic
        name = line.word(0, "a topic")
        partitions = int(line.opts.pop("partitions", 1))
        config = {k: str(duration_ms(v)) if k.endswith(".ms") and not v.lstrip("-").isdigit() else v
                  for k, v in line.opts.items()}
        self.admin.create_topics([NewTopic(self.t(name), partitions, 1, config=config)])[self.t(name)].result()
        self.topics[name] = partitions
        self.wait_for_metadata(name, partitions)

    def wait_for_metadata(self, name, partitions):
        deadline = time.time() + 20
        while time.time() < deadline:
            md = self.admin.list_topics(self.t(name), timeout=10).topics.get(self.t(name))
            if md is not None and md.error is None and len(md.partitions) == partitions \
                    and all(p.leader >= 0 for p in md.partitions.values()):
                return
            time.sleep(0.1)
        raise ScenarioError(f"topic {name} did not appear in the metadata")

    def ensure_producer(self):
        from confluent_kafka import Producer
        if self.producer is None:
            # murmur2, as Kafka's Java producer partitions a keyed record (and the lab's produce).
            self.producer = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random",
                                      "linger.ms": 0, "acks": "all"})
        return self.producer

    def record_delivery(self, store):
        def cb(err, msg):
            if err is not None:
                store.append(("error", err.name()))
            else:
                store.append((msg.topic(), msg.partition(), msg.offset(),
                              msg.key().decode() if msg.key() is not None else None))
        return cb

    def now_ts(self):
        return self.lab_ts_to_wall(self.clock_ms)

    def do_produce(self, line):
        topic = line.word(0, "a topic")
        count = int(line.opts.get("count", 1))
        p = self.ensure_producer()
        delivered = []
        for _ in range(count):
            if "key" in line.opts:
                key = line.opts["key"]
            else:
                self.orders[topic] += 1
                key = f"o-{self.orders[topic]}"
            value = line.opts.get("value") or json.dumps({"order_id": key})
            kwargs = {"key": key, "value": value, "timestamp": self.now_ts(), "on_delivery": self.record_delivery(delivered)}
            if "partition" in line.opts:
                kwargs["partition"] = int(line.opts["partition"])
            p.produce(self.t(topic), **kwargs)
            p.poll(0)
        if p.flush(30) != 0:
            raise ScenarioError(f"line {line.number}: not every record was acknowledged")
        for d in delivered:
            if d[0] == "error":
                raise ScenarioError(f"line {line.number}: produce failed with {d[1]}")
            self.produced[(topic, d[1])][d[2]] = d[3]

    def do_init_txn(self, line):
        from confluent_kafka import Producer
        txn_id = line.word(0, "a transactional.id")
        conf = {"bootstrap.servers": self.bootstrap, "transactional.id": self.g(txn_id), "linger.ms": 0}
        if "timeout" in line.opts:
            conf["transaction.timeout.ms"] = duration_ms(line.opts["timeout"])
        p = Producer(conf)
        p.init_transactions(30)
        self.txn[txn_id] = {"producer": p, "open": False, "written": []}

    def do_txn_send(self, line):
        txn_id = line.word(0, "a transactional.id")
        tx = self.txn[txn_id]
        p = tx["producer"]
        if not tx["open"]:
            p.begin_transaction()
            tx["open"] = True
        topic, partition = line.opts["topic"], int(line.opts["partition"])
        delivered = []
        for r in json.loads(line.opts["records"]):
            p.produce(self.t(topic), key=r.get("key"), value=r.get("value"), partition=partition,
                      timestamp=self.now_ts(), on_delivery=self.record_delivery(delivered))
        p.flush(30)
        for d in delivered:
            if d[0] == "error":
                raise ScenarioError(f"line {line.number}: a transactional send failed with {d[1]}")
            self.produced[(topic, d[1])][d[2]] = d[3]
            tx["written"].append((topic, d[1], d[2]))

    def do_end_txn(self, line):
        txn_id = line.word(0, "a transactional.id")
        tx = self.txn[txn_id]
        commit = "commit" in line.words
        if commit:
            tx["producer"].commit_transaction(30)
        else:
            tx["producer"].abort_transaction(30)
            for topic, p, o in tx["written"]:
                self.aborted[(topic, p)].add(o)
        tx["open"], tx["written"] = False, []

    def do_tick(self, line):
        ms = duration_ms(line.word(0, "a duration"))
        self.clock_ms += ms
        # Real time: the broker's timers (sessions, offset expiry) run on it. The story's clock
        # and the wall clock part by the time the lines themselves take; never the other way.
        time.sleep(ms / 1000)

    # consumers
    def consumer_conf(self, c):
        o = c.opts
        reset = o.get("reset", "latest")
        conf = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.g(o["group"]),
            "enable.auto.commit": False,
            # The lab's consumers are Java-like: read_uncommitted unless told (librdkafka's own
            # default is read_committed).
            "isolation.level": o.get("isolation", "read_uncommitted"),
            "auto.offset.reset": {"none": "error"}.get(reset, reset),
            "enable.partition.eof": True,
            "partition.assignment.strategy": {"range": "range", "cooperative-sticky": "cooperative-sticky"}[o.get("assignor", "range")],
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "session.timeout.ms": duration_ms(o.get("session-timeout", "45s")),
            "max.poll.interval.ms": duration_ms(o.get("max-poll-interval", "5m")),
            "client.id": f"{c.name}#{c.incarnation}",
        }
        if "instance-id" in o:
            conf["group.instance.id"] = self.g(o["instance-id"])
        return conf

    def spawn(self, c):
        c.incarnation += 1
        c.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        c.state, c.in_flight, c.processed, c.last_polled = "running", [], {}, []
        answer = c.request({"op": "start", "conf": self.consumer_conf(c), "topic": self.t(c.opts["topic"]),
                            "wait": 15 if self.alone(c) else 2})
        self.note_assignment(c)
        return answer

    def alone(self, c):
        """Whether c's group has no other running member: then its join completes at once."""
        return not any(o is not c and o.state == "running" and o.opts["group"] == c.opts["group"]
                       for o in self.consumers.values())

    def do_consumer(self, line):
        name = line.word(0, "a consumer")
        strategy = line.opts.get("commit", "auto-timer")
        if strategy not in ("manual-batch", "manual-record"):
            raise ScenarioError(f"line {line.number}: the oracle's consumers commit with manual-batch or manual-record, not {strategy}")
        if line.opts.get("sink", "append") != "append":
            raise ScenarioError(f"line {line.number}: the oracle's application writes to an append sink")
        c = ConsumerProc(name, dict(line.opts))
        self.consumers[name] = c
        self.groups.setdefault(c.opts["group"], c.opts.get("isolation", "read_uncommitted"))
        self.spawn(c)

    def consumer(self, line):
        name = line.word(0, "a consumer")
        if name not in self.consumers:
            raise ScenarioError(f"line {line.number}: unknown consumer {name}")
        return self.consumers[name]

    def note_assignment(self, c):
        group = c.opts["group"]
        for t, p in c.snapshot["assigned"]:
            topic = self.untag(t)
            pos = c.snapshot["positions"].get(f"{t}:{p}")
            if (topic, p) not in self.first_start[group] and pos is not None:
                self.first_start[group][(topic, p)] = pos

    def untag(self, name):
        suffix = "-" + self.tag
        return name[: -len(suffix)] if name.endswith(suffix) else name

    def group_state(self, group):
        from confluent_kafka import KafkaException
        try:
            d = self.admin.describe_consumer_groups([self.g(group)])[self.g(group)].result()
        except KafkaException as e:
            if e.args[0].name() == "GROUP_ID_NOT_FOUND":
                return "Dead"
            raise
        # confluent-kafka's names (ConsumerGroupState) → Kafka's.
        names = {"STABLE": "Stable", "EMPTY": "Empty", "DEAD": "Dead", "PREPARING_REBALANCING": "PreparingRebalance",
                 "COMPLETING_REBALANCING": "CompletingRebalance"}
        return names.get(d.state.name, d.state.name)

    def do_poll(self, line):
        c = self.consumer(line)
        if c.state != "running":
            raise ScenarioError(f"line {line.number}: consumer {c.name} is {c.state}")
        max_poll = int(c.opts.get("max-poll", 500))
        rejoin = bool(c.snapshot["assigned"]) and self.group_state(c.opts["group"]) == "PreparingRebalance"
        if rejoin:
            # The revoke hook of a manual strategy commits what was processed.
            self.commit_processed(c, only_changes=True)
        if rejoin:
            c.in_flight, c.processed = [], {}
        answer = c.request({"op": "poll", "max": max_poll, "timeout": 20, "rejoin": rejoin, "rejoin_wait": 10})
        if answer.get("timed_out"):
            self.notes.append(f"line {line.number}: poll {c.name} ended on its timeout, short of the log end")
        if answer.get("rebalanced") and not rejoin:
            self.notes.append(f"line {line.number}: poll {c.name} met a rebalance the group's state did not show "
                              "when the poll began: it ended there")
        records = answer.get("records", [])
        c.last_polled = [(self.untag(t), p, o) for t, p, o, _ in records]
        if records:
            for i, (t, p, o, key) in enumerate(records):
                c.in_flight.append({"tp": (self.untag(t), p), "offset": o, "last": i == len(records) - 1})
                if o in self.aborted[(self.untag(t), p)]:
                    self.aborted_read[c.opts["group"]] += 1
        self.note_assignment(c)
        for t, p, o, _ in records[:1]:
            self.first_start[c.opts["group"]].setdefault((self.untag(t), p), o)
        if answer.get("error"):
            if answer["error"] == "_AUTO_OFFSET_RESET":
                # auto.offset.reset=none: the application stops on the error and closes.
                c.request({"op": "close"})
                c.proc.wait()
                c.state = "failed"
                c.last_error = answer["error"]
            else:
                raise ScenarioError(f"line {line.number}: poll {c.name} failed with {answer['error']}")

    def commit(self, c, offsets, why):
        """A synchronous commit from the consumer, with the metadata the lab writes."""
        if not offsets:
            return None
        metadata = f"{c.name}#{c.incarnation} {c.opts['commit']}"
        answer = c.request({"op": "commit", "offsets": [[self.t(t), p, o, metadata] for (t, p), o in offsets]})
        return answer.get("error")

    def committed_now(self, group, tp):
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        req = ConsumerGroupTopicPartitions(self.g(group), [TopicPartition(self.t(tp[0]), tp[1])])
        res = self.admin.list_consumer_group_offsets([req])[self.g(group)].result()
        o = res.topic_partitions[0]
        return (o.offset if o.offset >= 0 else None), o.metadata

    def commit_processed(self, c, only_changes):
        offsets = []
        for tp, o in sorted(c.processed.items()):
            if only_changes and self.committed_now(c.opts["group"], tp)[0] == o:
                continue
            offsets.append((tp, o))
        return self.commit(c, offsets, "processed")

    def do_process(self, line):
        c = self.consumer(line)
        if not c.in_flight:
            raise ScenarioError(f"line {line.number}: consumer {c.name} has nothing in flight")
        count = line.opts.get("count", "1")
        n = len(c.in_flight) if count == "all" else min(int(count), len(c.in_flight))
        group = c.opts["group"]
        for _ in range(n):
            item = c.in_flight.pop(0)
            (t, p), o = item["tp"], item["offset"]
            self.delivered[group][(t, p, o)] += 1
            c.processed[(t, p)] = o + 1
            if c.opts["commit"] == "manual-record":
                self.commit(c, [((t, p), o + 1)], "record")
            elif item["last"]:
                self.commit(c, sorted(c.processed.items()), "batch")

    def do_commit(self, line):
        c = self.consumer(line)
        # commitSync() with no arguments: the positions (everything poll handed over).
        positions = [((self.untag(k.rsplit(":", 1)[0]), int(k.rsplit(":", 1)[1])), v)
                     for k, v in c.snapshot["positions"].items() if v is not None]
        return self.commit(c, sorted(positions), "positions")

    def do_close(self, line):
        c = self.consumer(line)
        self.commit_processed(c, only_changes=True)
        c.request({"op": "close"})
        c.proc.wait()
        c.state, c.in_flight = "closed", []

    def do_crash(self, line):
        c = self.consumer(line)
        c.proc.send_signal(signal.SIGKILL)
        c.proc.wait()
        c.state, c.in_flight = "crashed", []

    def do_restart(self, line):
        c = self.consumer(line)
        if c.state == "running":
            raise ScenarioError(f"line {line.number}: consumer {c.name} is running")
        self.spawn(c)

    def do_seek(self, line):
        c = self.consumer(line)
        to = line.opts["to"]
        if to.startswith("@-"):
            target = {"timestamp": self.lab_ts_to_wall(self.clock_ms - duration_ms(to[2:]))}
        elif to.startswith("@"):
            target = {"timestamp": self.lab_ts_to_wall(instant_ms(to[1:]))}
        elif to in ("earliest", "latest"):
            target = to
        else:
            target = int(to)
        parts = c.snapshot["assigned"]
        if "partition" in line.opts:
            parts = [tp for tp in parts if tp[1] == int(line.opts["partition"])]
        for t, p in parts:
            before = c.snapshot["positions"].get(f"{t}:{p}")
            answer = c.request({"op": "seek", "tp": [t, p], "to": target})
            resolved = answer.get("resolved")
            if resolved is None:
                resolved = self.log_offsets(self.untag(t), p)[0 if target == "earliest" else 1]
            if before is not None and resolved > before:
                for o in range(before, resolved):
                    self.skipped[c.opts["group"]].add((self.untag(t), p, o))

    # admin
    def do_alter_offsets(self, line):
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition, KafkaException
        group = line.word(0, "a group")
        metadata = json.loads(line.opts["metadata"]) if "metadata" in line.opts else {}
        parts = []
        for t, p, o in offsets_spec(line.opts["offsets"]):
            self.note_admin_skip(group, (t, p), o)
            parts.append(TopicPartition(self.t(t), p, o, metadata=metadata.get(f"{t}:{p}", "")))
        self.groups.setdefault(group, "read_uncommitted")
        try:
            res = self.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(self.g(group), parts)])
            done = res[self.g(group)].result()
        except KafkaException as e:
            return e.args[0].name()
        codes = sorted({tp.error.name() for tp in done.topic_partitions if tp.error is not None})
        return codes[0] if codes else None

    def note_admin_skip(self, group, tp, target):
        current = self.committed_now(group, tp)[0]
        if current is not None and target > current:
            lo, hi = self.log_offsets(*tp)
            for o in range(max(current, lo), min(target, hi)):
                self.skipped[group].add((tp[0], tp[1], o))

    def do_reset_offsets(self, line):
        group = line.word(0, "a group")
        topic = line.opts.pop("topic")
        specs = [w for w in line.words[1:] if w != "execute"] + [f"{k}={v}" for k, v in line.opts.items()]
        if len(specs) != 1:
            raise ScenarioError(f"line {line.number}: reset-offsets needs exactly one spec")
        spec = specs[0]
        name, _, value = spec.partition("=")
        args = [f"--{name}"]
        if name == "to-datetime":
            wall = self.lab_ts_to_wall(instant_ms(value))
            args.append(datetime.datetime.fromtimestamp(wall / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3])
        elif value:
            args.append(value)
        tname = self.t(topic.split(":")[0]) + (":" + topic.split(":")[1] if ":" in topic else "")
        cmd = [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", os.path.join(self.java_libs, "*"),
               "-Dlog4j2.level=WARN", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
               "--bootstrap-server", self.bootstrap, "--group", self.g(group), "--topic", tname,
               "--reset-offsets", *args, "--execute" if "execute" in line.words else "--dry-run"]
        tps = [(topic.split(":")[0], p) for p in range(self.topics.get(topic.split(":")[0], 1))]
        before = {tp: self.committed_now(group, tp)[0] for tp in tps}
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "TZ": "UTC"})
        if run.returncode != 0 or "Error" in run.stdout:
            raise ScenarioError(f"line {line.number}: kafka-consumer-groups refused: {run.stdout.strip()} {run.stderr.strip()[-400:]}")
        self.notes.append(f"line {line.number}: kafka-consumer-groups {' '.join(args)}: {' '.join(run.stdout.split())}")
        if "execute" in line.words:
            self.groups.setdefault(group, "read_uncommitted")
            for tp in tps:
                after = self.committed_now(group, tp)[0]
                if before[tp] is not None and after is not None and after > before[tp]:
                    for o in range(before[tp], after):
                        self.skipped[group].add((tp[0], tp[1], o))

    def do_delete_records(self, line):
        from confluent_kafka import TopicPartition, KafkaException
        topic = line.word(0, "a topic")
        tp = TopicPartition(self.t(topic), int(line.opts.get("partition", 0)), int(line.opts["before"]))
        try:
            self.admin.delete_records([tp])[tp].result()
        except KafkaException as e:
            return e.args[0].name()
        return None

    def do_delete_topic(self, line):
        from confluent_kafka import KafkaException
        topic = line.word(0, "a topic")
        try:
            self.admin.delete_topics([self.t(topic)])[self.t(topic)].result()
        except KafkaException as e:
            return e.args[0].name()
        deadline = time.time() + 30
        while time.time() < deadline and self.t(topic) in self.admin.list_topics(timeout=10).topics:
            time.sleep(0.2)
        # A topic created again starts from nothing: the story's records of it are gone.
        for key in [k for k in self.produced if k[0] == topic]:
            del self.produced[key]
            self.aborted.pop(key, None)
        self.orders[topic] = 0
        for g in self.delivered:
            for k in [k for k in self.delivered[g] if k[0] == topic]:
                del self.delivered[g][k]
            self.first_start[g] = {k: v for k, v in self.first_start[g].items() if k[0] != topic}
        return None

    def do_delete_group(self, line):
        from confluent_kafka import KafkaException
        group = line.word(0, "a group")
        try:
            self.admin.delete_consumer_groups([self.g(group)])[self.g(group)].result()
        except KafkaException as e:
            return e.args[0].name()
        return None

    def do_delete_offsets(self, line):
        from kafka.structs import TopicPartition as KTP
        group = line.word(0, "a group")
        topic = line.opts["topic"]
        parts = [KTP(self.t(topic), int(p)) for p in line.opts["partitions"].split(",")]
        res = self.kafka_admin().delete_group_offsets(self.g(group), parts)
        codes = sorted({getattr(err, "message", type(err).__name__) for err in res.values()
                        if err is not None and getattr(err, "errno", 0) != 0})
        return codes[0] if codes else None

    def do_commit_offsets(self, line):
        """An OffsetCommit with a member id and generation of the scenario's choosing (kafka-python's
        protocol classes, straight to the group's coordinator). `member=NAME` of one of the story's
        consumers stands for that consumer's current member id."""
        from kafka.protocol.consumer import OffsetCommitRequest
        group = line.word(0, "a group")
        member = line.opts["member"]
        if member in self.consumers:
            member = self.consumers[member].snapshot["member"]
        generation = int(line.opts["generation"])
        metadata = json.loads(line.opts["metadata"]) if "metadata" in line.opts else {}
        by_topic = collections.defaultdict(list)
        for t, p, o in offsets_spec(line.opts["offsets"]):
            by_topic[t].append((p, o, metadata.get(f"{t}:{p}", "")))
        admin = self.kafka_admin()
        _Topic = OffsetCommitRequest.OffsetCommitRequestTopic
        _Partition = _Topic.OffsetCommitRequestPartition
        request = OffsetCommitRequest(
            group_id=self.g(group), generation_id_or_member_epoch=generation, member_id=member,
            group_instance_id=None, retention_time_ms=-1,
            topics=[_Topic(name=self.t(t), partitions=[_Partition(partition_index=p, committed_offset=o,
                                                                  committed_leader_epoch=-1, committed_metadata=m)
                                                       for p, o, m in parts])
                    for t, parts in by_topic.items()],
            max_version=8)

        async def send():
            node = await admin._find_coordinator_id(self.g(group))
            return await admin._manager.send(request, node_id=node)
        response = admin._manager.run(send)
        from kafka.errors import for_code
        codes = sorted({for_code(p.error_code).message for t in response.topics for p in t.partitions if p.error_code})
        return codes[0] if codes else None

    # --- figures ---
    def log_offsets(self, topic, p, isolation=None):
        from confluent_kafka import TopicPartition, IsolationLevel
        from confluent_kafka.admin import OffsetSpec
        tp = TopicPartition(self.t(topic), p)
        lo = self.admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result().offset
        kwargs = {"isolation_level": IsolationLevel.READ_COMMITTED} if isolation == "read_committed" else {}
        hi = self.admin.list_offsets({tp: OffsetSpec.latest()}, **kwargs)[tp].result().offset
        return lo, hi

    def group_topics(self, group):
        topics = []
        for c in self.consumers.values():
            if c.opts["group"] == group and c.opts["topic"] not in topics:
                topics.append(c.opts["topic"])
        return topics

    def resolve(self, line, need_group):
        group, topic = line.opts.get("group"), line.opts.get("topic")
        if need_group and group is None:
            if len(self.groups) != 1:
                raise ScenarioError(f"line {line.number}: name the group (group=G)")
            group = next(iter(self.groups))
        if topic is None and group is not None:
            topics = self.group_topics(group)
            if len(topics) == 1:
                topic = topics[0]
        if topic is None and len(self.topics) == 1:
            topic = next(iter(self.topics))
        partitions = [int(line.opts["partition"])] if "partition" in line.opts else \
            list(range(self.topics.get(topic, 1)))
        return group, topic, partitions

    def audit(self, group, topic, partitions):
        """What the group applied, and what it lost: records it passed (below the offset it
        resumes from, from where it first started) that it never applied, did not skip on
        purpose, and that were records for it (not markers; not aborted, under read_committed)."""
        lost = 0
        read_committed = self.groups.get(group) == "read_committed"
        for p in partitions:
            tp = (topic, p)
            start = self.first_start[group].get(tp)
            if start is None:
                continue
            # Where the group would resume: its committed offset — or, while a running owner
            # will still deliver records below it (after a rewind), the first of those.
            committed = self.committed_now(group, tp)[0]
            resume = committed
            for c in self.consumers.values():
                if c.state == "running" and c.opts["group"] == group and resume is not None:
                    pos = c.snapshot["positions"].get(f"{self.t(topic)}:{p}")
                    pending = [i["offset"] for i in c.in_flight if i["tp"] == tp]
                    nxt = [x for x in [pos] + pending if x is not None]
                    if nxt:
                        resume = min(resume, min(nxt))
            lo, hi = self.log_offsets(topic, p)
            frontier = min(max(resume if resume is not None else start, lo), hi)
            for o in range(start, frontier):
                if o not in self.produced[tp] or (read_committed and o in self.aborted[tp]):
                    continue
                if self.delivered[group][(topic, p, o)] == 0 and (topic, p, o) not in self.skipped[group]:
                    lost += 1
        counts = [n for (t, p, o), n in self.delivered[group].items() if t == topic and p in partitions]
        return {"lost": lost, "deliveries": sum(counts), "duplicates": sum(max(0, n - 1) for n in counts),
                "sink-rows": sum(counts), "skipped": len([1 for (t, p, o) in self.skipped[group] if t == topic and p in partitions])}

    def figure(self, line, key):
        if key in ("state", "position", "in-flight", "generation", "polled"):
            name = line.opts.get("consumer")
            if name is None:
                if len(self.consumers) != 1:
                    raise ScenarioError(f"line {line.number}: name the consumer (consumer=C)")
                name = next(iter(self.consumers))
            c = self.consumers[name]
            if key == "state":
                return c.state
            if key == "in-flight":
                return str(len(c.in_flight))
            if key == "generation":
                return str(c.snapshot["generation"])
            if key == "polled":
                return ranges([o for t, p, o in c.last_polled])
            positions = c.snapshot["positions"] if c.state == "running" else {}
            if "partition" in line.opts:
                v = positions.get(f"{self.t(c.opts['topic'])}:{line.opts['partition']}")
            elif len(positions) == 1:
                v = next(iter(positions.values()))
            elif not positions:
                v = None
            else:
                raise ScenarioError(f"line {line.number}: consumer {name} has several partitions: add partition=P")
            return "-" if v is None else str(v)
        if key in ("log-end-offset", "log-start-offset", "last-stable-offset"):
            _, topic, partitions = self.resolve(line, need_group=False)
            if len(partitions) != 1:
                raise ScenarioError(f"line {line.number}: name the partition")
            lo, hi = self.log_offsets(topic, partitions[0], "read_committed" if key == "last-stable-offset" else None)
            return str(lo if key == "log-start-offset" else hi)
        group, topic, partitions = self.resolve(line, need_group=True)
        if key == "group-state":
            return self.group_state(group)
        if key in ("committed", "lag", "metadata"):
            values = [self.committed_now(group, (topic, p)) for p in partitions]
            if key == "metadata":
                return values[0][1] if values[0][0] is not None else "-"
            if key == "committed":
                if any(v is None for v, _ in values):
                    return "-" if all(v is None for v, _ in values) else "?"
                return str(sum(v for v, _ in values))
            return str(sum(self.log_offsets(topic, p)[1] - v for p, (v, _) in zip(partitions, values) if v is not None))
        if key == "aborted-read":
            return str(self.aborted_read[group])
        if key in ("lost", "deliveries", "duplicates", "sink-rows", "skipped"):
            return str(self.audit(group, topic, partitions)[key])
        raise ScenarioError(f"line {line.number}: the oracle cannot observe '{key}' on Kafka")

    BROKER_KEYS = {"committed", "lag", "metadata", "group-state", "log-end-offset", "log-start-offset",
                   "last-stable-offset"}

    def do_expect(self, line):
        checks = {k: v for k, v in line.opts.items() if k not in ("group", "topic", "partition", "consumer")}
        for key, expected in checks.items():
            actual = self.figure(line, key)
            deadline = time.time() + SETTLE_S
            while actual != expected and key in self.BROKER_KEYS and time.time() < deadline:
                time.sleep(0.25)
                actual = self.figure(line, key)
            self.checks.append({"line": line.number, "text": line.text, "key": key, "expected": expected,
                                self.target: actual})


def java():
    home = os.environ.get("JAVA_HOME")
    return os.environ.get("JAVA") or (os.path.join(home, "bin", "java") if home else "java")


def kafka_libs():
    pom = open(os.path.join(REPO, "apache-kafka", "pom.xml")).read()
    version = re.search(r"<kafka.version>(.*?)</kafka.version>", pom).group(1)
    return os.path.join(REPO, "target", "apache-kafka", version, "libs")


# --- the model ----------------------------------------------------------------------------------

def run_model(offsetlab, path):
    run = subprocess.run([offsetlab, "run", path, "--json", "--color", "never"], capture_output=True, text=True, timeout=120)
    result = {"exit": run.returncode, "message": run.stderr.strip()}
    if run.returncode == 0:
        result["state"] = json.loads(run.stdout)
    return result


def final_figures_model(state):
    """The final figures of the model's --json: per group its state and committed offsets, per
    partition its log start and end, per group what it applied."""
    figures = {}
    for name, g in state["groups"].items():
        figures[f"group {name}: state"] = g["state"]
        for p in g["partitions"]:
            tp = f"{p['topic']}-{p['partition']}"
            c = p.get("kafka_committed")
            figures[f"group {name}: committed {tp}"] = "-" if c is None else str(c)
    for t in state["topics"]:
        if t["name"].startswith("__"):
            continue
        for p in t["partitions"]:
            tp = f"{t['name']}-{p['partition']}"
            figures[f"log {tp}: start..end"] = f"{p['log_start_offset']}..{p['log_end_offset']}"
    return figures


def final_figures_kafka(story, model_figures):
    figures = {}
    for key in model_figures:
        m = re.match(r"group (.+): state$", key)
        if m:
            figures[key] = story.group_state(m.group(1))
            continue
        m = re.match(r"group (.+): committed (.+)-(\d+)$", key)
        if m:
            v = story.committed_now(m.group(1), (m.group(2), int(m.group(3))))[0]
            figures[key] = "-" if v is None else str(v)
            continue
        m = re.match(r"log (.+)-(\d+): start..end$", key)
        if m:
            lo, hi = story.log_offsets(m.group(1), int(m.group(2)))
            figures[key] = f"{lo}..{hi}"
    return figures


def audit_figures_model(state):
    out = {}
    for name, g in state["groups"].items():
        if g["audit"]["deliveries"] or g["audit"]["lost"]:
            for k in ("lost", "duplicates", "deliveries"):
                out[f"group {name}: {k}"] = str(g["audit"][k])
    return out


def audit_figures_kafka(story, model_audit):
    out = {}
    for key in model_audit:
        m = re.match(r"group (.+): (lost|duplicates|deliveries)$", key)
        group = m.group(1)
        total = collections.Counter()
        for topic in story.group_topics(group) or [t for (t, _) in story.first_start[group]]:
            a = story.audit(group, topic, list(range(story.topics.get(topic, 1))))
            total.update({k: a[k] for k in ("lost", "duplicates", "deliveries")})
        out[key] = str(total[m.group(2)])
    return out


# --- the lab's listener ---------------------------------------------------------------------------

class Listener:
    def __init__(self, offsetlab):
        self.dir = tempfile.mkdtemp(prefix="oracle-listener-")
        self.log = open(os.path.join(self.dir, "serve.log"), "w+")
        self.proc = subprocess.Popen([offsetlab, "serve", "--ephemeral", "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0",
                                      "--color", "never"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        self.bootstrap = self.http = None
        while time.time() < deadline and self.bootstrap is None:
            time.sleep(0.1)
            with open(self.log.name) as f:
                text = f.read()
            m = re.search(r"Kafka listener on (\S+)", text)
            h = re.search(r"lab on (http://\S+)", text)
            if m and h:
                self.bootstrap, self.http = m.group(1), h.group(1)
            if self.proc.poll() is not None:
                break
        if self.bootstrap is None:
            self.stop()
            raise SystemExit("error: the lab's listener did not start: " + open(self.log.name).read()[-2000:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        subprocess.run(["rm", "-rf", self.dir])


# --- running and comparing ---------------------------------------------------------------------

def broker_config_problem(story, wanted):
    """Why the broker is not configured as a scenario's `# oracle: needs-broker-config K=V …`
    line says (None when it is): its figures would then be another broker's."""
    from confluent_kafka.admin import ConfigResource
    brokers = story.admin.list_topics(timeout=10).brokers
    for broker in sorted(brokers):
        res = ConfigResource(ConfigResource.Type.BROKER, str(broker))
        configs = story.admin.describe_configs([res])[res].result()
        for item in wanted.split():
            key, _, value = item.partition("=")
            have = configs[key].value if key in configs else None
            if have != value:
                return (f"broker {broker} has {key}={have}, the scenario needs {value} "
                        f"(scripts/apache-kafka.sh start --config {key}={value})")
    return None


def perform(path, target, bootstrap, java_libs, lab_http=None):
    lines, directives = parse_scenario(path)
    tag = "k" + uuid.uuid4().hex[:6]
    story = Story(target, bootstrap, tag, java_libs, lab_http)
    started = time.time()
    failure = None
    if "needs-broker-config" in directives and lab_http is None:
        problem = broker_config_problem(story, directives["needs-broker-config"])
        if problem:
            return story, problem, 0.0
    try:
        for line in lines:
            story.perform(line)
    except ScenarioError as e:
        failure = str(e)
    except Exception as e:  # a client error the story did not expect
        failure = f"{type(e).__name__}: {e}"
    return story, failure, time.time() - started


def compare(name, path, model, story, failure, target):
    problems = []
    if failure:
        problems.append(f"{target} could not perform the story: {failure}")
    for c in story.checks:
        if c[target] != c["expected"]:
            problems.append(f"line {c['line']} {c['key']}: scenario/model {c['expected']} vs {target} {c[target]}")
    for e in story.errors:
        if e["expected"] != e[target]:
            problems.append(f"line {e['line']}: expected error {e['expected'] or 'none'}, {target} answered {e[target] or 'no error'}")
    finals = {}
    if "state" in model and not failure:
        mf = final_figures_model(model["state"])
        kf = final_figures_kafka(story, mf)
        ma = audit_figures_model(model["state"])
        ka = audit_figures_kafka(story, ma)
        for key in list(mf) + list(ma):
            m, k = {**mf, **ma}[key], {**kf, **ka}[key]
            finals[key] = {"model": m, target: k}
            if m != k:
                problems.append(f"final {key}: model {m} vs {target} {k}")
    return problems, finals


def story_process(job, java_libs, sender):
    """In a process of its own: one story performed on one Kafka and compared with the model,
    its result sent back through `sender` (what `main`'s `run` reports)."""
    import faulthandler
    faulthandler.enable()  # a crash of a client library prints where it happened
    entry, path, model, target, bootstrap, lab_http = job
    try:
        story, failure, seconds = perform(path, target, bootstrap, java_libs, lab_http)
        try:
            problems, finals = compare(entry["name"], path, model, story, failure, target)
        finally:
            story.close()
        sender.send({"seconds": round(seconds, 1), "checks": story.checks, "errors": story.errors,
                     "final": finals, "notes": story.notes, "problems": problems})
    except BaseException as e:
        sender.send({"seconds": 0.0, "checks": [], "errors": [], "final": {}, "notes": [],
                     "problems": [f"{target}: the story failed to run: {type(e).__name__}: {e}"]})
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sender.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap", required=True, help="an Apache Kafka already started (scripts/apache-kafka.sh start)")
    ap.add_argument("--offsetlab", default=os.path.join(REPO, "target", "debug", "offsetlab"))
    ap.add_argument("--listener", action="store_true", help="also perform each story on the lab's own Kafka listener")
    ap.add_argument("--jobs", type=int, default=1,
                    help="stories performed at once (each names its own topics and groups; most of a story's time is "
                         "its ticks, spent sleeping)")
    ap.add_argument("--report", default=os.path.join(REPO, "target", "oracle-report.json"))
    ap.add_argument("--scenarios", default=os.path.join(REPO, "scenarios", "oracle"))
    ap.add_argument("names", nargs="*", help="scenario names (file names without .scn); all by default")
    args = ap.parse_args()
    if args.jobs < 1:
        print("error: --jobs wants 1 or more", file=sys.stderr)
        return 2
    paths = sorted(glob.glob(os.path.join(args.scenarios, "*.scn")))
    if args.names:
        paths = [p for p in paths if os.path.basename(p)[:-4] in args.names]
        missing = set(args.names) - {os.path.basename(p)[:-4] for p in paths}
        if missing:
            print(f"error: no scenario named {', '.join(sorted(missing))} in {args.scenarios}", file=sys.stderr)
            return 2
    if not paths:
        print(f"error: no scenario in {args.scenarios}", file=sys.stderr)
        return 2
    import concurrent.futures
    import multiprocessing
    import threading
    java_libs = kafka_libs()
    started = time.time()
    listener = Listener(args.offsetlab) if args.listener else None
    report = {"bootstrap": args.bootstrap, "listener": listener.bootstrap if listener else None, "scenarios": []}
    printing = threading.Lock()
    jobs = []
    for path in paths:
        name = os.path.basename(path)[:-4]
        lines, directives = parse_scenario(path)
        model = run_model(args.offsetlab, path)
        entry = {"name": name, "file": os.path.relpath(path, REPO), "model_exit": model["exit"],
                 "model_message": model["message"], "targets": {}}
        report["scenarios"].append(entry)
        entry["listener_disagrees"] = directives.get("listener-disagrees")
        jobs.append((entry, path, model, "kafka", args.bootstrap, None))
        if listener:
            reason = directives.get("not-on-listener")
            if reason:
                entry["targets"]["listener"] = {"skipped": reason}
                print(f"NOT RUN {name} on the listener: {reason}", flush=True)
            else:
                jobs.append((entry, path, model, "listener", listener.bootstrap, listener.http))

    # The longest stories (their ticks are slept through) first, so that they overlap the rest.
    def ticks_ms(job):
        return sum(duration_ms(l.word(0, "a duration")) for l in parse_scenario(job[1])[0] if l.cmd == "tick")
    jobs.sort(key=ticks_ms, reverse=True)

    def run(job):
        # Each story runs in a fresh interpreter of its own (spawned, not forked, not a thread
        # of this one): confluent-kafka's clients are not safe to create, use and collect from
        # several threads of one interpreter (confluent-kafka-python #1761, #1797) — three
        # stories at once crashed the driver with SIGSEGV one run in two — and a child forked
        # from this threaded parent died the same way at its start.
        entry, path, model, target, bootstrap, lab_http = job
        context = multiprocessing.get_context("spawn")

        def attempt():
            receiver, sender = context.Pipe(duplex=False)
            child = context.Process(target=story_process, args=(job, java_libs, sender))
            child.start()
            sender.close()
            try:
                result = receiver.recv()
            except EOFError:
                result = None
            child.join()
            return result, child.exitcode

        result, exitcode = attempt()
        if result is None and exitcode is not None and exitcode < 0:
            # Killed by a signal before it answered: the client library crashed (librdkafka
            # segfaulted once in a few dozen runs at a story's start, never reproduced alone;
            # faulthandler prints its traceback above). That says nothing of the broker's
            # answers: the story is performed once more, and the report says so.
            with printing:
                print(f"NOTE {entry['name']} on {target}: its process died by signal {-exitcode} before it "
                      f"answered (a client library crash); performing it once more", flush=True)
            signal_number = -exitcode
            result, exitcode = attempt()
            if result is not None:
                result["notes"] = result.get("notes", []) + [f"performed twice: the first process died by signal {signal_number}"]
        if result is None:
            result = {"seconds": 0.0, "checks": [], "errors": [], "final": {}, "notes": [],
                      "problems": [f"{target}: the story's process died (exit {exitcode}) before it answered"]}
        problems, seconds = result["problems"], result["seconds"]
        if model["exit"] != 0:
            problems.insert(0, f"the model does not hold the scenario (exit {model['exit']}): {model['message']}")
        entry["targets"][target] = dict(result, problems=problems)
        n_figures = len(result["checks"]) + len(result["errors"]) + len(result["final"])
        status = "FAIL" if problems else "PASS"
        known = entry["listener_disagrees"] if target == "listener" else None
        if known and problems and model["exit"] == 0:
            # A disagreement of the listener the scenario names: reported on every run, and
            # no failure of this suite (the listener's owner has it); the day the listener
            # agrees, the line must go.
            status = "KNOWN"
        elif known and not problems:
            status = "FAIL"
            problems = [f"the listener agrees now: remove the scenario's 'listener-disagrees' line ({known})"]
        entry["targets"][target]["status"] = status
        entry["targets"][target]["problems"] = problems
        with printing:
            print(f"{status} {entry['name']} on {target} ({seconds:.0f}s, {n_figures} figures)", flush=True)
            if status == "KNOWN":
                print(f"    a known disagreement of the listener: {known}", flush=True)
            for p in problems:
                print(f"    {p}", flush=True)
        return status == "FAIL"

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            bad = sum(pool.map(run, jobs))
    finally:
        if listener:
            listener.stop()
    report["seconds"] = round(time.time() - started, 1)
    os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
    with open(args.report, "w") as f:
        json.dump(report, f, indent=1)
    known = sum(1 for e in report["scenarios"] for t in e["targets"].values() if t.get("status") == "KNOWN")
    print(f"{len(paths)} scenario(s), {len(jobs)} run(s) in {report['seconds']:.0f} s; {bad} disagreement(s)"
          f"{f', {known} known of the listener' if known else ''}; report in {args.report}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main()
    else:
        sys.exit(main())
