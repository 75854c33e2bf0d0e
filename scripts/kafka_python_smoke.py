"""kafka-python against the lab's Kafka listener: a second client implementation, not librdkafka.

Usage: kafka_python_smoke.py HOST:PORT  (a lab started from the seed: topic `orders` with 12
orders, group `analytics-prod` with member c1). Exits non-zero on the first broken expectation.
It consumes the lab's records, produces into the lab (an existing topic and one created on first
use) and reads those back, lists and describes the lab's groups, and deletes offsets, groups and a
topic.
"""
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

bootstrap = sys.argv[1]
tp = TopicPartition("orders", 0)

consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
consumer.assign([tp])
consumer.seek_to_beginning(tp)
records = list(consumer)
assert [r.offset for r in records] == list(range(12)), [r.offset for r in records]
assert records[0].key == b"o-1" and b'"order_id":"o-1"' in records[0].value, records[0]
assert consumer.end_offsets([tp]) == {tp: 12}
assert consumer.beginning_offsets([tp]) == {tp: 0}
consumer.close()

# Produce: into the lab's topic after its twelve orders, and into a topic created on first use.
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip")
sent = producer.send("orders", key=b"o-1", value=b'{"order_id":"o-1","status":"refunded"}', partition=0).get(timeout=10)
assert sent.offset == 12, sent
for i in range(5):
    producer.send("payments-py", key=f"p-{i}".encode(), value=f"paid {i}".encode())
producer.flush(timeout=10)
producer.close()
consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
payments = TopicPartition("payments-py", 0)
consumer.assign([payments, tp])
consumer.seek_to_beginning(payments)
consumer.seek(tp, 12)
consumed = list(consumer)
got = [(r.topic, r.offset, r.key, r.value) for r in consumed]
# The topics are CreateTime (type 0, Kafka's default): a client's records keep the timestamp its
# producer gave them (kafka-python stamps wall time), the lab's own records carry the lab's clock.
assert {r.timestamp_type for r in consumed} == {0}, [(r.offset, r.timestamp_type) for r in consumed]
assert all(abs(r.timestamp - time.time() * 1000) < 60_000 for r in consumed), [r.timestamp for r in consumed]
assert {r.timestamp_type for r in records} == {0}, records[0]
assert sorted(got) == sorted(
    [("orders", 12, b"o-1", b'{"order_id":"o-1","status":"refunded"}')]
    + [("payments-py", i, f"p-{i}".encode(), f"paid {i}".encode()) for i in range(5)]
), got
consumer.close()

# A consumer group of real clients: kafka-python joins, is assigned orders-0, commits, leaves.
group = KafkaConsumer(
    "orders", bootstrap_servers=bootstrap, group_id="py-group", auto_offset_reset="earliest",
    enable_auto_commit=False, consumer_timeout_ms=5000,
)
got = [r.offset for r in group]
assert got == list(range(13)), got
group.commit()
# A commit with metadata: the coordinator keeps the string and OffsetFetch hands it back.
from kafka.structs import OffsetAndMetadata

group.commit({tp: OffsetAndMetadata(13, "app v1 # 'quoted'", -1)})
watcher = KafkaAdminClient(bootstrap_servers=bootstrap)
live = watcher.describe_groups(["py-group"])["py-group"]
assert live["group_state"] == "Stable", live
assert [m["member_assignment"]["assigned_partitions"] for m in live["members"]] == [[{"topic": "orders", "partitions": [0]}]], live
group.close()
after = watcher.describe_groups(["py-group"])["py-group"]
assert after["group_state"] == "Empty" and after["members"] == [], after
committed = watcher.list_group_offsets("py-group")["py-group"][tp]
assert (committed.offset, committed.metadata) == (13, "app v1 # 'quoted'"), committed
watcher.close()

admin = KafkaAdminClient(bootstrap_servers=bootstrap)
groups = admin.list_groups()
assert sorted(g["group_id"] for g in groups) == ["analytics-prod", "py-group"], groups
offsets = admin.list_group_offsets("analytics-prod")["analytics-prod"]
assert offsets[tp].offset == 0, offsets
described = admin.describe_groups(["analytics-prod"])["analytics-prod"]
assert described["group_state"] == "Stable", described
members = described["members"]
assert [m["member_id"] for m in members] == ["c1#1"], members
assert members[0]["member_assignment"]["assigned_partitions"] == [{"topic": "orders", "partitions": [0]}], members
# The member's metadata is its subscription (what Sarama and kafka-consumer-groups decode).
assert members[0]["member_metadata"]["topics"] == ["orders"], members

# Admin: create topics (one broker: replication factor 1), describe their configs, delete records.
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError

admin.create_topics({"audit": {"num_partitions": 3, "replication_factor": 1, "configs": {"cleanup.policy": "compact"}}})
for bad, error in [
    ({"audit": {"num_partitions": 1, "replication_factor": 1}}, TopicAlreadyExistsError),
    ({"wide": {"num_partitions": 1, "replication_factor": 3}}, InvalidReplicationFactorError),
]:
    try:
        admin.create_topics(bad)
        raise AssertionError(f"{bad} was accepted")
    except error:
        pass
described = {t["name"]: t for t in admin.describe_topics(["audit"])}
assert len(described["audit"]["partitions"]) == 3, described
configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "audit")], config_filter="all")
assert configs["topic"]["audit"]["cleanup.policy"]["value"] == "compact", configs
# One broker answers what it truthfully can: one log directory holding every partition, and no
# authorizer (SECURITY_DISABLED).
from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePatternFilter, ResourceType
from kafka.errors import SecurityDisabledError

dirs = admin.describe_log_dirs()[0]["log_dirs"]
assert len(dirs) == 1 and "orders" in [t["name"] for t in dirs[0]["topics"]], dirs
try:
    admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                                  resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
    raise AssertionError("ACLs described without an authorizer")
except SecurityDisabledError:
    pass

# CreatePartitions: a topic grows, never shrinks (Kafka's INVALID_PARTITIONS).
from kafka.admin import NewPartitions
from kafka.errors import InvalidPartitionsError

admin.create_partitions({"audit": NewPartitions(total_count=5)}, validate_only=True)
assert len({t["name"]: t for t in admin.describe_topics(["audit"])}["audit"]["partitions"]) == 3
admin.create_partitions({"audit": NewPartitions(total_count=5)})
assert len({t["name"]: t for t in admin.describe_topics(["audit"])}["audit"]["partitions"]) == 5
try:
    admin.create_partitions({"audit": NewPartitions(total_count=2)})
    raise AssertionError("a topic shrank")
except InvalidPartitionsError:
    pass
low = admin.delete_records({tp: 4})
assert low[tp]["low_watermark"] == 4, low

# Deletions: an active group is neither deleted nor stripped of the offsets of a topic it reads;
# once it is Empty both go. A deleted topic is gone for clients.
from kafka.errors import GroupSubscribedToTopicError, NoError

live = KafkaConsumer(
    "payments-py", bootstrap_servers=bootstrap, group_id="py-del", auto_offset_reset="earliest",
    enable_auto_commit=False, consumer_timeout_ms=3000,
)
assert len(list(live)) == 5
live.commit()
refused = admin.delete_groups(["py-del"])
assert refused == {"py-del": "NonEmptyGroupError"}, refused
payments_0 = TopicPartition("payments-py", 0)
kept = admin.delete_group_offsets("py-del", [payments_0])
assert kept == {payments_0: GroupSubscribedToTopicError}, kept
live.close()
dropped = admin.delete_group_offsets("py-del", [payments_0])
assert dropped == {payments_0: NoError}, dropped
assert payments_0 not in admin.list_group_offsets("py-del")["py-del"]
deleted = admin.delete_groups(["py-del", "py-group", "no-such-group"])
assert deleted == {"py-del": "OK", "py-group": "OK", "no-such-group": "GroupIdNotFoundError"}, deleted
assert sorted(g["group_id"] for g in admin.list_groups()) == ["analytics-prod"]
admin.delete_topics(["audit"])
assert "audit" not in admin.list_topics()
admin.close()
consumer = KafkaConsumer(bootstrap_servers=bootstrap)
assert consumer.beginning_offsets([tp]) == {tp: 4}
consumer.close()
print("kafka-python smoke test: consumed 12 records, produced 6 and read them back, consumed in a group with a commit, listed and described analytics-prod, created a topic and grew it (CreatePartitions), described its configs, deleted records, deleted offsets, groups and a topic as Kafka allows — ok")
