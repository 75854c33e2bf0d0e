"""A share group (KIP-932) of real share consumers — confluent-kafka's ShareConsumer, librdkafka's
— played on one broker; prints what each member was handed, as JSON, so the test command can
play it on the lab's listener and on Apache Kafka and compare the two.

    python scripts/share_consumers.py BOOTSTRAP                 # the story, its figures on stdout
    python scripts/share_consumers.py BOOTSTRAP --expect FILE   # …and exit 1 unless they are FILE's
    python scripts/share_consumers.py BOOTSTRAP --member …      # (internal) the member a crash kills

The story, on a topic of one partition and six records, each its own batch:
  1. the group's configs: share.auto.offset.reset=earliest, share.delivery.count.limit=2,
     share.record.lock.duration.ms=15000 (IncrementalAlterConfigs on the GROUP resource);
  2. a and b, two members, both assigned the one partition (a share group shares it);
  3. a polls three records and acknowledges them one of each way: accept, release, reject;
  4. b polls: the released record comes back first, its delivery count 2, then two new ones;
     b releases it again — its second delivery was its last (the limit is 2): archived — and
     accepts the two others;
  5. c, in a process of its own, polls the last record and is killed (SIGKILL) holding it;
  6. a polls until the record comes back — the dead member's delivery counted, so its count is 2
     — and accepts it; nothing is left to deliver;
  7. a consumer group reads the topic from offset 0: all six records are still in the log;
  8. four more records, produced in one batch: d, a new member with max.poll.records=3, is
     handed all four in one poll — a share fetch acquires whole batches (Kafka's default
     share.acquire.mode, batch_optimized), which librdkafka 2.16 does not let a client change.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

LOCK_MS = 15_000


def share_consumer(bootstrap, group, client_id):
    c = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": client_id,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": 3,
            "log_level": 3,
        }
    )
    return c


def poll_until(c, want, seconds):
    """Polls `c` until it holds `want` records (or `seconds` pass); what it got, in order."""
    got = []
    end = time.time() + seconds
    while len(got) < want and time.time() < end:
        for m in c.poll(0.5) or []:
            if m.error():
                raise SystemExit(f"poll: {m.error()}")
            got.append(m)
    return got


def seen(messages):
    return [[m.offset(), m.delivery_count(), m.value().decode()] for m in messages]


def member(bootstrap, group, topic):
    """The member the story kills: polls one record, says so, and waits to be killed."""
    c = share_consumer(bootstrap, group, "c")
    c.subscribe([topic])
    got = poll_until(c, 1, 60)
    print(json.dumps(seen(got)), flush=True)
    time.sleep(600)


def story(bootstrap, expect=None):
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"share-story-{suffix}", f"share-story-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    configs = [
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.delivery.count.limit", "2", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.record.lock.duration.ms", str(LOCK_MS), incremental_operation=AlterConfigOpType.SET),
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=configs)
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(6):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
        p.flush(30)  # one batch each: a fetch acquires whole batches on Kafka

    figures = {}
    a = share_consumer(bootstrap, group, "a")
    b = share_consumer(bootstrap, group, "b")
    a.subscribe([topic])
    b.subscribe([topic])

    got = poll_until(a, 3, 60)
    figures["a polls"] = seen(got)
    for m, how in zip(got, [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT]):
        a.acknowledge(m, how)
    a.commit_sync()

    got = poll_until(b, 3, 60)
    figures["b polls"] = seen(got)
    for m in got:
        b.acknowledge(m, AcknowledgeType.RELEASE if m.delivery_count() > 1 else AcknowledgeType.ACCEPT)
    b.commit_sync()

    killed = subprocess.Popen(
        [sys.executable, __file__, bootstrap, "--member", group, topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = killed.stdout.readline()
    figures["c polls, then is killed"] = json.loads(line) if line else None
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    killed_at = time.time()

    got = poll_until(a, 1, LOCK_MS / 1000 + 30)
    back_after = time.time() - killed_at
    figures["a polls after the kill"] = seen(got)
    for m in got:
        a.acknowledge(m, AcknowledgeType.ACCEPT)
    a.commit_sync()
    figures["nothing left"] = seen(poll_until(a, 1, 3) + poll_until(b, 1, 1))
    a.close()
    b.close()

    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{group}-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    reader.subscribe([topic])
    log = []
    end = time.time() + 30
    while len(log) < 6 and time.time() < end:
        m = reader.poll(0.5)
        if m is not None and not m.error():
            log.append(m.offset())
    reader.close()
    figures["a consumer group reads from offset 0"] = log

    batched = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    for i in range(6, 10):
        batched.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    batched.flush(30)
    d = share_consumer(bootstrap, group, "d")
    d.subscribe([topic])
    got = poll_until(d, 3, 60)
    figures["d (max.poll.records=3) polls a batch of four"] = seen(got)
    for m in got:
        d.acknowledge(m, AcknowledgeType.ACCEPT)
    d.commit_sync()
    d.close()
    admin.delete_topics([topic])
    print(json.dumps(figures, indent=1))
    # Not a figure to compare, but the broker's rule shows in it: a share session is its
    # connection's, so a killed member's records are released when its connection closes —
    # well before their acquisition locks would run out.
    print(f"the killed member's record came back after {back_after:.1f} s (lock: {LOCK_MS / 1000:.0f} s)", file=sys.stderr)
    if back_after >= LOCK_MS / 1000:
        raise SystemExit("the killed member's record waited for its lock: its connection's close did not release it")
    if expect is not None:
        with open(expect) as f:
            expected = json.load(f)
        differ = [k for k in expected.keys() | figures.keys() if expected.get(k) != figures.get(k)]
        for k in sorted(differ):
            print(f"DIFFERS: {k}: expected {expected.get(k)}, got {figures.get(k)}", file=sys.stderr)
        if differ:
            raise SystemExit(1)
        print("the same figures as the other broker's", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--member":
        member(sys.argv[1], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 3 and sys.argv[2] == "--expect":
        story(sys.argv[1], sys.argv[3])
    else:
        story(sys.argv[1])
