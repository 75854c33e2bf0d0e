"""A real librdkafka consumer killed mid-batch with auto-commit on, against the lab's model.

Usage: crash_vs_model.py KAFKA_HOST:PORT OFFSETLAB_BINARY

The consumer is confluent-kafka (librdkafka 2.x, a C client nobody here wrote) with the
defaults that make lesson 1 of the lab: `enable.auto.commit=true` (a background timer commits
every `auto.commit.interval.ms`) and `enable.auto.offset.store=true` (an offset is stored the
moment `consume()` hands the record over, before the application has processed it). It takes
batches of 10 and processes a record every 150 ms, so the 1 s timer fires in the middle of
batches; it is killed with SIGKILL after processing 15 records. A second consumer of the group
then reads on from the committed offset.

What happened is measured from the outside: which offsets were processed (files written by the
consumers), and the committed offset after the kill. Where the timer fired relative to the
batches varies from run to run — but the committed offset says where: a multiple of 10, because
a batch's offsets are stored all at once. The same story is then told to the lab's engine as a
scenario (`commit=auto-timer interval=1s max-poll=10`, the timer firing at that point, a crash
after 15 processed records) and its audit must predict exactly the records the real consumer
lost and duplicated.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition

TOPIC, GROUP, RECORDS, BATCH, KILL_AFTER = "crash-orders", "crashy", 30, 10, 15


def child(bootstrap, out_path, slow):
    """A consumer of GROUP that appends each processed offset to out_path."""
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
        "enable.auto.commit": True, "enable.auto.offset.store": True,
        "auto.commit.interval.ms": 1000, "session.timeout.ms": 6000,
    })
    c.subscribe([TOPIC])
    # The fast reader stops once it has read on to the end (nothing new for 2 s); it may first
    # wait for the killed member's session to time out.
    last_record, give_up = None, time.time() + 45
    with open(out_path, "a", buffering=1) as out:
        while time.time() < give_up:
            batch = c.consume(num_messages=BATCH, timeout=0.5)
            batch = [m for m in batch if m.error() is None]
            if not batch:
                if not slow and last_record is not None and time.time() - last_record > 2:
                    break
                continue
            last_record = time.time()
            for m in batch:
                out.write(f"{m.offset()}\n")  # processed: in the "database"
                if slow:
                    time.sleep(0.15)
    c.close()


def processed(path):
    with open(path) as f:
        return [int(line) for line in f if line.strip()]


def main():
    bootstrap, offsetlab = sys.argv[1], sys.argv[2]
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        p.produce(TOPIC, key=f"o-{i}", value=f"order {i}", partition=0)
    assert p.flush(10) == 0, "not every record was acknowledged"

    work = tempfile.mkdtemp()
    first, second = os.path.join(work, "first"), os.path.join(work, "second")
    proc = subprocess.Popen([sys.executable, __file__, "--child", bootstrap, first, "slow"])
    deadline = time.time() + 30
    while time.time() < deadline and (not os.path.exists(first) or len(processed(first)) < KILL_AFTER):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = processed(first)
    assert len(done_before) == KILL_AFTER, f"killed after {len(done_before)} records, not {KILL_AFTER}"

    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    committed = probe.committed([TopicPartition(TOPIC, 0)], timeout=10)[0].offset
    probe.close()
    assert committed in (BATCH, 2 * BATCH), (
        f"committed {committed}: librdkafka stores a whole batch's offsets when consume() returns it")

    # The dead member holds the partition until its session times out; then a new one reads on.
    subprocess.run([sys.executable, __file__, "--child", bootstrap, second, "fast"], check=True, timeout=60)
    done_after = processed(second)
    every = done_before + done_after
    real_lost = sorted(set(range(RECORDS)) - set(every))
    real_duplicates = sorted(o for o in set(every) if every.count(o) > 1)

    # The lab's model, told the same story.
    timer_before_second_poll = committed == BATCH
    lines = [
        f"topic {TOPIC}",
        f"produce {TOPIC} count={RECORDS}",
        f"consumer c group={GROUP} topic={TOPIC} commit=auto-timer interval=1s max-poll={BATCH} reset=earliest",
        "poll c",
        f"process c count={BATCH}",
    ]
    if timer_before_second_poll:
        lines += ["tick 1s", "poll c"]  # the timer commits batch 1's stored offsets, then batch 2
    else:
        lines += ["poll c", "tick 1s"]  # batch 2 is handed over (stored), then the timer commits it
    lines += [f"process c count={KILL_AFTER - BATCH}", "crash c", "tick 45s", "restart c"]
    lines += ["poll c", "process c count=all"] * ((RECORDS - committed + BATCH - 1) // BATCH)
    scenario = os.path.join(work, "story.scn")
    with open(scenario, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = subprocess.run([offsetlab, "run", scenario, "--json"], check=True, capture_output=True, text=True)
    audit = json.loads(out.stdout)["groups"][GROUP]["audit"]

    print(f"librdkafka {subprocess.run([sys.executable, '-c', 'import confluent_kafka; print(confluent_kafka.libversion()[0])'], capture_output=True, text=True).stdout.strip()}: "
          f"killed after {KILL_AFTER} processed, committed {committed}; "
          f"lost {len(real_lost)} {real_lost}, duplicated {len(real_duplicates)} {real_duplicates}")
    print(f"the lab's model:    lost {audit['lost']}, duplicated {audit['duplicates']}")
    assert (audit["lost"], audit["duplicates"]) == (len(real_lost), len(real_duplicates)), (
        "the lab's model and librdkafka disagree")
    print("crash vs model: the lab predicted exactly what librdkafka lost and duplicated — ok")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4] == "slow")
    else:
        main()
