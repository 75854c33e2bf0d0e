"""What a durable lab keeps while real clients write to it at full speed (issue 29's figure).

Usage: keeps_soak.py OFFSETLAB_BINARY [MINUTES] [RETENTION_BYTES]

Starts `offsetlab serve --data DIR` (a temporary directory beside the binary's target), creates
a one-partition topic with `retention.bytes` (50 MB by default) and `segment.bytes` of a tenth
of it, then for MINUTES (10 by default) a confluent-kafka producer sends 100-byte records as
fast as it can while a consumer group reads them and commits every second. Every 15 s it
samples the data directory's size (`du -sb`: the bytes of its files, a hard link counted once)
and the server's resident memory (VmRSS, and the peak VmHWM) — samples, so a peak between two
is not seen. Prints one JSON object: the series, the
maxima, the records produced and consumed. Exit 1 when the server died.

The issue's bound: the data directory under 200 MB and resident memory under 150 MB
throughout. The script reports; it does not judge (docs/BENCHMARKS.md records the run).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

binary = sys.argv[1]
minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
retention = int(sys.argv[3]) if len(sys.argv) > 3 else 50_000_000
SAMPLE_EVERY = 15.0
VALUE = b"v" * 100

work = tempfile.mkdtemp(prefix="keeps-soak-", dir=os.path.dirname(os.path.abspath(binary)))
data = os.path.join(work, "data")
log_path = os.path.join(work, "serve.log")
log = open(log_path, "w")
server = subprocess.Popen(
    [binary, "serve", "--data", data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"],
    stdout=log, stderr=subprocess.STDOUT,
)


def listener():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(log_path) as f:
            m = re.search(r"^Kafka listener on (\S+)", f.read(), re.M)
        if m:
            return m.group(1)
        if server.poll() is not None:
            break
        time.sleep(0.1)
    sys.exit(f"the lab did not start: {open(log_path).read()}")


def disk_bytes():
    # A file retention deletes while du walks the tree makes du exit 1 ("cannot access"); the
    # total it prints is still the directory's.
    out = subprocess.run(["du", "-sb", data], capture_output=True, text=True).stdout
    if not out.strip():
        sys.exit(f"du printed nothing for {data}")
    return int(out.split()[0])


def memory():
    """(VmRSS, VmHWM) of the server in bytes."""
    with open(f"/proc/{server.pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    kib = lambda k: int(fields[k].split()[0]) * 1024
    return kib("VmRSS"), kib("VmHWM")


bootstrap = listener()
topic = "soak"
admin = AdminClient({"bootstrap.servers": bootstrap})
config = {"retention.bytes": str(retention), "segment.bytes": str(max(retention // 10, 1 << 20))}
for future in admin.create_topics([NewTopic(topic, 1, 1, config=config)]).values():
    future.result(30)

stop = threading.Event()
counts = {"produced": 0, "consumed": 0, "produce_errors": 0, "commit_errors": 0}


def produce():
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "queue.buffering.max.messages": 200_000})

    def delivered(err, _msg):
        if err is None:
            counts["produced"] += 1
        else:
            counts["produce_errors"] += 1

    while not stop.is_set():
        for _ in range(1000):
            try:
                producer.produce(topic, VALUE, partition=0, on_delivery=delivered)
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(60)


def consume():
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-readers",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    last_commit = time.monotonic()
    while not stop.is_set():
        for m in consumer.consume(10_000, 0.5):
            if m.error() is None:
                counts["consumed"] += 1
        if time.monotonic() - last_commit >= 1.0:
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as e:
                # Nothing consumed since the last commit is no failure.
                if e.args[0].code() != KafkaError._NO_OFFSET:
                    counts["commit_errors"] += 1
            last_commit = time.monotonic()
    consumer.close()


threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
for t in threads:
    t.start()
series = []
started = time.monotonic()
try:
    while time.monotonic() - started < minutes * 60:
        time.sleep(SAMPLE_EVERY - (time.monotonic() - started) % SAMPLE_EVERY)
        if server.poll() is not None:
            break
        try:
            rss, hwm = memory()
        except OSError:  # the server died since
            break
        series.append({"t_s": round(time.monotonic() - started), "disk_mb": round(disk_bytes() / 1e6, 1),
                       "rss_mb": round(rss / 1e6, 1), "peak_rss_mb": round(hwm / 1e6, 1),
                       "produced": counts["produced"], "consumed": counts["consumed"]})
        print(json.dumps(series[-1]), file=sys.stderr, flush=True)
finally:
    stop.set()
    for t in threads:
        t.join(120)
    died = server.poll() is not None
    if not died:
        server.terminate()
        try:
            server.wait(120)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
print(json.dumps({
    "minutes": minutes, "retention_bytes": retention, "value_bytes": len(VALUE),
    "produced": counts["produced"], "consumed": counts["consumed"],
    "produce_errors": counts["produce_errors"], "commit_errors": counts["commit_errors"],
    "max_disk_mb": max((s["disk_mb"] for s in series), default=None),
    "max_rss_mb": max((s["rss_mb"] for s in series), default=None),
    "peak_rss_mb": max((s["peak_rss_mb"] for s in series), default=None),
    "server_died": died, "series": series,
}, indent=1))
log.close()
if died:
    print(open(log_path).read()[-4000:], file=sys.stderr)
    sys.exit(1)
shutil.rmtree(work, ignore_errors=True)
