"""One million records through a Kafka broker with confluent-kafka (librdkafka 2.x), both ways.

Usage: listener_bench.py HOST:PORT TOPIC [RECORDS] [per-record|batch|latency]
       (BROKER_PID=… to measure the broker's CPU)

`latency` measures what a waiting application feels instead: a consumer polling with
librdkafka's default fetch.wait.max.ms (500), a producer sending one record every 50 ms
(RECORDS of them, 200 by default), and for each record the time from produce() to the
consumer's receipt — p50, p99 and the worst. A broker that answers a waiting fetch only when
fetch.wait.max.ms runs out shows about 450 ms whatever the load; one that completes the fetch
when the record arrives (Kafka's DelayedFetch) shows a few milliseconds.

Creates TOPIC (one partition), produces RECORDS 100-byte values (acks=all, no compression), then
consumes them in a consumer group that commits after every batch it gets. Prints one JSON
object: records/s and MB/s each way (client included: the Python loop, librdkafka, the
broker), produce latency percentiles (one record in a hundred carries a delivery callback: the
time from produce() to its acknowledgement, under full load), and how long the group took to
join. `per-record` (the default) calls produce() once per record, as applications do — the
Python loop is then the bottleneck on two cores, for any broker; `batch` hands librdkafka ten
thousand records per produce_batch() call, so the broker's own cost shows. With BROKER_PID, the broker process's CPU seconds in each phase (user + system, from
/proc). `scripts/bench_listener.sh` runs it against the lab's listener and against tansu.
"""
import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
mode = sys.argv[4] if len(sys.argv) > 4 else "per-record"
if mode not in ("per-record", "batch", "latency"):
    sys.exit(f"unknown mode {mode!r}: per-record, batch or latency")
VALUE = b"v" * 100
SAMPLE = 100
BROKER_PID = os.environ.get("BROKER_PID")


def broker_cpu():
    """The broker's CPU seconds so far (user + system), or None without BROKER_PID."""
    if not BROKER_PID:
        return None
    with open(f"/proc/{BROKER_PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_since(start):
    return None if start is None else round(broker_cpu() - start, 2)

admin = AdminClient({"bootstrap.servers": bootstrap})
for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
    future.result(30)


def latency(count):
    """One record every 50 ms to a consumer that waits for it: send-to-receipt times."""
    import threading
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"latency-{topic}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 500,
    })
    consumer.subscribe([topic])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    seen = []
    done = threading.Event()

    def receive():
        while not done.is_set():
            m = consumer.poll(0.1)
            if m is None or m.error() is not None:
                continue
            sent = int(m.value())
            if sent:
                seen.append(time.monotonic_ns() - sent)
    # A first record, received before anything is timed: the group has joined and fetches wait.
    producer.produce(topic, b"0", partition=0)
    producer.flush(30)
    while True:
        m = consumer.poll(1)
        if m is not None and m.error() is None:
            break
    reader = threading.Thread(target=receive)
    reader.start()
    cpu = broker_cpu()
    for _ in range(count):
        producer.produce(topic, str(time.monotonic_ns()).encode(), partition=0)
        producer.poll(0)
        time.sleep(0.05)
    producer.flush(30)
    deadline = time.monotonic() + 10
    while len(seen) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    done.set()
    reader.join()
    consumer.close()
    if len(seen) < count:
        sys.exit(f"received only {len(seen)} of {count} records")
    ms = sorted(x / 1e6 for x in seen)
    print(json.dumps({
        "records": count,
        "mode": "latency",
        "latency_p50_ms": round(ms[len(ms) // 2], 1),
        "latency_p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 1),
        "latency_max_ms": round(ms[-1], 1),
        "broker_cpu_s": cpu_since(cpu),
    }))


if mode == "latency":
    latency(n if len(sys.argv) > 3 else 200)
    sys.exit(0)

producer = Producer({
    "bootstrap.servers": bootstrap,
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 2_000_000,
    "queue.buffering.max.kbytes": 2_097_151,
    "compression.type": "none",
    "acks": "all",
})
latencies = []
failed = []


def sampled(sent_at):
    def done(err, _msg):
        if err is not None:
            failed.append(err)
        latencies.append(time.perf_counter() - sent_at)
    return done


cpu = broker_cpu()
started = time.perf_counter()
if mode == "batch":
    chunk = [{"value": VALUE} for _ in range(10_000)]
    sent = 0
    while sent < n:
        part = chunk[: n - sent]
        # One record in a hundred reports its delivery, stamped with this call's time.
        stamp = sampled(time.perf_counter())
        for m in part[::SAMPLE]:
            m["callback"] = stamp
        try:
            queued = producer.produce_batch(topic, part, partition=0)
        except BufferError:
            queued = 0
        sent += queued
        if queued < len(part):
            # The queue was full: the records it refused carry an "_error"; send them again.
            for m in part:
                m.pop("_error", None)
            producer.poll(0.001)
        producer.poll(0)
for i in range(n if mode == "per-record" else 0):
    while True:
        try:
            if i % SAMPLE == 0:
                producer.produce(topic, VALUE, partition=0, on_delivery=sampled(time.perf_counter()))
            else:
                producer.produce(topic, VALUE, partition=0)
            break
        except BufferError:
            producer.poll(0.001)
    if i % 20_000 == 0:
        producer.poll(0)
left = producer.flush(300)
produce_s = time.perf_counter() - started
produce_cpu = cpu_since(cpu)
if left or failed:
    sys.exit(f"produce failed: {left} record(s) unacknowledged, errors: {failed[:3]}")
latencies.sort()

consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": f"bench-{topic}",
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    # librdkafka stops fetching when its local queue holds queued.min.messages (100,000) and
    # then waits fetch.queue.backoff.ms (default 1 s) before fetching again: a broker that
    # fetches faster than Python consumes would be measured by that pause.
    "fetch.queue.backoff.ms": 10,
})
cpu = broker_cpu()
subscribed = time.perf_counter()
consumer.subscribe([topic])
got = 0
first = None
commits = 0
deadline = time.perf_counter() + 300
while got < n and time.perf_counter() < deadline:
    # consume() waits until it has num_messages or the timeout passes: never ask for more than
    # are left, or the last call would sit out its timeout.
    batch = consumer.consume(num_messages=min(10_000, n - got), timeout=1)
    good = 0
    for m in batch:
        if m.error() is None:
            good += 1
        elif m.error().fatal():
            raise KafkaException(m.error())
    if good:
        if first is None:
            first = time.perf_counter()
        got += good
        consumer.commit(asynchronous=True)
        commits += 1
consumed_at = time.perf_counter()
consume_cpu = cpu_since(cpu)
committed = consumer.committed([__import__("confluent_kafka").TopicPartition(topic, 0)], timeout=30)
consumer.close()
if got < n:
    sys.exit(f"consumed only {got} of {n} records")
consume_s = consumed_at - first
mb = n * len(VALUE) / 1e6
print(json.dumps({
    "records": n,
    "mode": mode,
    "produce_s": round(produce_s, 3),
    "produce_records_per_s": round(n / produce_s),
    "produce_mb_per_s": round(mb / produce_s, 1),
    "produce_latency_p50_ms": round(latencies[len(latencies) // 2] * 1e3, 1),
    "produce_latency_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1e3, 1),
    "produce_broker_cpu_s": produce_cpu,
    "group_join_s": round(first - subscribed, 3),
    "consume_s": round(consume_s, 3),
    "consume_records_per_s": round(n / consume_s),
    "consume_mb_per_s": round(mb / consume_s, 1),
    "consume_broker_cpu_s": consume_cpu,
    "commits": commits,
    "committed_offset": committed[0].offset,
}))
