"""Reads under load: how long a Fetch, a Metadata and the page's GET /api/state take while the
broker is busy with writes.

Usage: contention_bench.py KAFKA_HOST:PORT [HTTP_HOST:PORT] [SECONDS]

The load is what a lab with a real application attached sees: 4 producers sending as fast as
they can (confluent-kafka, 100-byte values, to a topic of 8 partitions) and 20 consumers in
4 groups (5 each) reading it and committing every second. Beside them, with HTTP_HOST:PORT (the
lab's page; Apache Kafka has none), two "pages" follow the lab as the browser does: they listen
to /api/events and fetch /api/state once per burst of announcements (one request in flight
each), asking for at least the version announced (`?min_version=N`, which a lab from before the
read view ignores). A probe thread meanwhile sends, over its own connection, a Metadata request (v1, every
topic) and a Fetch (v4, 64 KiB of partition 0 from offset 0, max.wait.ms 0 — answerable at
once), one after the other, and times each round trip.

After a few seconds of warm-up it measures for SECONDS (20 by default) and prints one JSON
object: each probe's count, p50, p99 and worst in milliseconds, and the records produced and
consumed meanwhile. `scripts/bench_listener.sh` runs it as its `contention` mode.
"""
import json
import multiprocessing as mp
import socket
import struct
import sys
import threading
import time
import urllib.request

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "contention"
PARTITIONS = 8
PRODUCERS = 4
GROUPS = 4
PER_GROUP = 5
WARMUP = 5.0


def producer(bootstrap, stop, count):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    value = b"v" * 100
    sent = 0
    while not stop.is_set():
        try:
            p.produce(TOPIC, value)
            sent += 1
        except BufferError:
            p.poll(0.01)
        if sent % 1000 == 0:
            p.poll(0)
    p.flush(10)
    with count.get_lock():
        count.value += sent


def consumer(bootstrap, group, stop, count):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": 1000,
    })
    c.subscribe([TOPIC])
    got = 0
    while not stop.is_set():
        for m in c.consume(1000, 0.2):
            if not m.error():
                got += 1
    c.close()
    with count.get_lock():
        count.value += got


class Probe:
    """Raw Kafka requests on one connection, each timed from send to the whole answer."""

    def __init__(self, bootstrap):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.correlation = 0

    def _ask(self, api_key, version, body):
        self.correlation += 1
        client = b"contention-probe"
        header = struct.pack(">hhih", api_key, version, self.correlation, len(client)) + client
        frame = header + body
        started = time.perf_counter()
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        self._read(size)
        return (time.perf_counter() - started) * 1000

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the probe's connection")
            out += chunk
        return out

    def metadata(self):
        # Metadata v1: a null topic list asks for every topic.
        return self._ask(3, 1, struct.pack(">i", -1))

    def fetch(self):
        # Fetch v4: replica -1, max.wait.ms 0, min.bytes 1, max.bytes 1 MiB, read_uncommitted;
        # one topic, partition 0 from offset 0, up to 64 KiB.
        name = TOPIC.encode()
        body = struct.pack(">iiiib", -1, 0, 1, 1 << 20, 0)
        body += struct.pack(">ih", 1, len(name)) + name
        body += struct.pack(">iiqi", 1, 0, 0, 64 << 10)
        return self._ask(1, 4, body)


def pages(http, stop, times, n=2):
    """Two pages following the lab: a state fetched once per burst of announcements."""

    def page():
        events = urllib.request.urlopen(f"http://{http}/api/events", timeout=60)
        wanted = threading.Event()
        announced = [0]

        def listen():
            for line in events:
                if stop.is_set():
                    return
                if line.startswith(b"data: "):
                    version = json.loads(line[len(b"data: "):]).get("version", 0)
                    announced[0] = max(announced[0], version)
                    wanted.set()

        threading.Thread(target=listen, daemon=True).start()
        while not stop.is_set():
            if not wanted.wait(0.5):
                continue
            wanted.clear()
            started = time.perf_counter()
            url = f"http://{http}/api/state?min_version={announced[0]}"
            with urllib.request.urlopen(url, timeout=60) as r:
                r.read()
            times.append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=page, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def summary(samples):
    if not samples:
        return {"count": 0}
    s = sorted(samples)
    pick = lambda q: round(s[min(len(s) - 1, int(q * len(s)))], 1)
    return {"count": len(s), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "worst_ms": round(s[-1], 1)}


def main():
    bootstrap = sys.argv[1]
    http = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        future.result(30)
    stop = mp.Event()
    produced, consumed = mp.Value("q", 0), mp.Value("q", 0)
    procs = [mp.Process(target=producer, args=(bootstrap, stop, produced)) for _ in range(PRODUCERS)]
    procs += [
        mp.Process(target=consumer, args=(bootstrap, f"contention-{g}", stop, consumed))
        for g in range(GROUPS)
        for _ in range(PER_GROUP)
    ]
    for p in procs:
        p.start()
    page_stop = threading.Event()
    state_times = []
    if http:
        pages(http, page_stop, state_times)
    probe = Probe(bootstrap)
    metadata_times, fetch_times = [], []
    started = time.monotonic()
    measuring = False
    while time.monotonic() - started < WARMUP + seconds:
        if not measuring and time.monotonic() - started >= WARMUP:
            measuring = True
            state_times.clear()
        m, f = probe.metadata(), probe.fetch()
        if measuring:
            metadata_times.append(m)
            fetch_times.append(f)
        time.sleep(0.02)
    page_stop.set()
    stop.set()
    for p in procs:
        p.join(30)
    out = {
        "seconds": seconds,
        "load": f"{PRODUCERS} producers, {GROUPS * PER_GROUP} consumers in {GROUPS} groups",
        "fetch": summary(fetch_times),
        "metadata": summary(metadata_times),
        "produced": produced.value,
        "consumed": consumed.value,
    }
    if http:
        out["api_state"] = summary(state_times)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
