"""A share consumer agent: one real share consumer (librdkafka's, through confluent-kafka's
ShareConsumer, 2.16 or later) in a process of its own, doing what the runner's requests say.

The runner (crates/cluster/src/run/share/) starts it as `PYTHON -c <this file>` and speaks
the agent protocol of crates/cluster/src/protocol.rs to it: its settings as the first line of
stdin (never on the command line: they may hold `sasl.password`), then one JSON request per
line; one JSON reply per line on stdout. It is a process so that a crash is one: SIGKILL ends
it with no acknowledgement sent and its connections closed by the kernel.

    settings  {"mode": "consumer", "bootstrap_servers", "group", "topic", "client_id",
               "acknowledgement_mode", "max_poll_records", "extra": [[k, v], ...]}
    ← {"event": "ready", "client_id": ...}
    → {"op": "share-poll", "want": N, "timeout_ms": T, "settle_ms": S}
    ← {"event": "share-records", "records": [{"topic", "partition", "offset", "key", "value",
                                              "delivery_count"}, ...]}
    → {"op": "share-ack", "acks": [{"partition", "offset", "type": "accept|release|reject"}]}
    ← {"event": "acknowledged"}
    → {"op": "close"}
    ← {"event": "closed"}

    settings  {"mode": "alter-configs", "bootstrap_servers", "group", "configs": [[k, v], ...],
               "extra": [...]}   (IncrementalAlterConfigs on the GROUP resource)
    ← {"event": "closed"}

Any failure is {"event": "failed", "message": ...}, and the agent goes on.
"""

import base64
import json
import sys
import time


def say(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def as_json_bytes(b):
    """Bytes as the protocol carries them: a string when UTF-8, {"base64": …} otherwise."""
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode("ascii")}


def properties(settings):
    conf = {"bootstrap.servers": settings["bootstrap_servers"]}
    for k, v in settings.get("extra", []):
        conf[k] = v
    return conf


def alter_configs(settings):
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient(properties(settings))
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in settings["configs"]]
    resource = ConfigResource(ResourceType.GROUP, settings["group"], incremental_configs=entries)
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(30)
    say({"event": "closed"})


def consumer(settings):
    from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

    kinds = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
    conf = properties(settings)
    conf.update(
        {
            "group.id": settings["group"],
            "client.id": settings["client_id"],
            "share.acknowledgement.mode": settings["acknowledgement_mode"],
            "max.poll.records": int(settings["max_poll_records"]),
            # The share consumer's "Preview" notice on stderr, which nobody reads here.
            "log_level": 3,
        }
    )
    c = ShareConsumer(conf)
    c.subscribe([settings["topic"]])
    topic = settings["topic"]
    say({"event": "ready", "client_id": settings["client_id"]})
    for line in sys.stdin:
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "share-poll":
                # One poll() that hands out records, as an application's loop calls it: the next
                # poll() would acknowledge these (implicit mode) or refuse (explicit mode). Empty
                # polls before it — a first join, a fetch in flight — are waited through, for up
                # to timeout_ms; with nothing wanted, for settle_ms.
                want = int(request["want"])
                wait = request["timeout_ms"] if want > 0 else request["settle_ms"]
                end = time.time() + wait / 1000
                got = []
                while not got and time.time() < end:
                    for m in c.poll(max(0.05, min(0.5, end - time.time()))) or []:
                        if m.error():
                            raise KafkaException(m.error())
                        got.append(m)
                say(
                    {
                        "event": "share-records",
                        "records": [
                            {
                                "topic": m.topic(),
                                "partition": m.partition(),
                                "offset": m.offset(),
                                "key": as_json_bytes(m.key()),
                                "value": as_json_bytes(m.value()),
                                "delivery_count": m.delivery_count(),
                            }
                            for m in got
                        ],
                    }
                )
            elif op == "share-ack":
                for a in request["acks"]:
                    c.acknowledge_offset(topic, int(a["partition"]), int(a["offset"]), kinds[a["type"]])
                refused = [f"{tp.topic}-{tp.partition}: {e}" for tp, e in (c.commit_sync(30) or {}).items() if e]
                if refused:
                    say({"event": "failed", "message": "the broker refused the acknowledgements of " + "; ".join(refused)})
                else:
                    say({"event": "acknowledged"})
            elif op == "close":
                c.close()
                say({"event": "closed"})
                return
            else:
                say({"event": "failed", "message": f"not a share agent request: {op!r}"})
        except Exception as e:  # the client's complaint, told to the runner; the agent goes on
            say({"event": "failed", "message": f"{type(e).__name__}: {e}"})
    c.close()


def main():
    settings = json.loads(sys.stdin.readline())
    try:
        if settings.get("mode") == "alter-configs":
            alter_configs(settings)
        else:
            consumer(settings)
    except Exception as e:
        say({"event": "failed", "message": f"{type(e).__name__}: {e}"})


main()
