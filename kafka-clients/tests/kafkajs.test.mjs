// kafkajs — a pure JavaScript Kafka client, sharing no code with librdkafka or kafka-python —
// against the lab's Kafka listener: OFFSETLAB_KAFKA=host:port (scripts/test.sh starts the lab).
// Each test uses topics and groups of its own, so it can share a lab with the other suites.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';

const broker = process.env.OFFSETLAB_KAFKA;
if (!broker) throw new Error('OFFSETLAB_KAFKA (host:port of the lab\'s Kafka listener) is not set');
const kafka = new Kafka({ clientId: 'kafkajs-suite', brokers: [broker], logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
after(() => admin.disconnect());

async function produce(topic, messages) {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    return await producer.send({ topic, messages });
  } finally {
    await producer.disconnect();
  }
}

test('a topic created, written and read back, then grown with CreatePartitions', async () => {
  assert.equal(await admin.createTopics({ topics: [{ topic: 'js-orders', numPartitions: 1 }] }), true);
  await produce('js-orders', [{ key: 'o-1', value: 'created' }, { key: 'o-2', value: 'paid' }]);
  const offsets = await admin.fetchTopicOffsets('js-orders');
  assert.deepEqual(offsets.map((o) => [o.partition, o.high, o.low]), [[0, '2', '0']]);

  await admin.createPartitions({ topicPartitions: [{ topic: 'js-orders', count: 3 }] });
  const { topics } = await admin.fetchTopicMetadata({ topics: ['js-orders'] });
  assert.equal(topics[0].partitions.length, 3);
  await assert.rejects(
    admin.createPartitions({ topicPartitions: [{ topic: 'js-orders', count: 2 }] }),
    (e) => /INVALID_PARTITIONS|partitions/i.test(`${e.type} ${e.message} ${JSON.stringify(e.errors ?? [])}`),
  );
});

test('a group consumes and commits; the lab keeps what it committed', async () => {
  await admin.createTopics({ topics: [{ topic: 'js-events', numPartitions: 1 }] });
  await produce('js-events', ['a', 'b', 'c'].map((value) => ({ value })));
  const consumer = kafka.consumer({ groupId: 'js-group', sessionTimeout: 10_000 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js-events', fromBeginning: true });
  const seen = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${seen.length} record(s) in 20 s`)), 20_000);
    consumer
      .run({
        autoCommit: false,
        eachMessage: async ({ topic, partition, message }) => {
          seen.push(message.value.toString());
          await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
          if (seen.length === 3) {
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  assert.deepEqual(seen, ['a', 'b', 'c']);
  const [committed] = await admin.fetchOffsets({ groupId: 'js-group', topics: ['js-events'] });
  assert.deepEqual(committed.partitions.map((p) => [p.partition, p.offset]), [[0, '3']]);
});

test('offsets set from outside any group make an Empty group that is listed and described', async () => {
  await admin.createTopics({ topics: [{ topic: 'js-audit', numPartitions: 1 }] });
  await produce('js-audit', ['x', 'y'].map((value) => ({ value })));
  await admin.setOffsets({ groupId: 'js-offsets-only', topic: 'js-audit', partitions: [{ partition: 0, offset: '1' }] });
  const { groups } = await admin.listGroups();
  assert.ok(groups.some((g) => g.groupId === 'js-offsets-only'), JSON.stringify(groups));
  const described = await admin.describeGroups(['js-offsets-only']);
  assert.equal(described.groups[0].state, 'Empty');
  const [committed] = await admin.fetchOffsets({ groupId: 'js-offsets-only', topics: ['js-audit'] });
  assert.equal(committed.partitions[0].offset, '1');
});

test('the broker describes its listeners and limits', async () => {
  const { resources } = await admin.describeConfigs({
    resources: [{ type: 4 /* BROKER */, name: '0', configNames: ['advertised.listeners', 'message.max.bytes'] }],
    includeSynonyms: false,
  });
  const configs = Object.fromEntries(resources[0].configEntries.map((c) => [c.configName, c.configValue]));
  assert.equal(configs['advertised.listeners'], `PLAINTEXT://${broker}`);
  assert.equal(configs['message.max.bytes'], '1048588');
});

test('a binary Avro-framed key and value, and binary headers, read back byte for byte', async () => {
  await admin.createTopics({ topics: [{ topic: 'js-payments', numPartitions: 1 }] });
  // What a Schema Registry serializer writes: magic byte 0, a 4-byte schema id, the Avro payload.
  // The key is not UTF-8 at all; neither is a header's value.
  const key = Buffer.from([0xff, 0x00, 0x9c, 0x80]);
  const value = Buffer.concat([Buffer.from([0, 0, 0, 0, 42]), Buffer.from([0x02, 0xc8, 0x01, 0xfe, 0x00])]);
  const trace = Buffer.from([0xc3, 0x28, 0x00, 0xa0]);
  await produce('js-payments', [{ key, value, headers: { trace } }, { key: 'p-2', value: null }]);
  const consumer = kafka.consumer({ groupId: 'js-payments-reader', sessionTimeout: 10_000 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js-payments', fromBeginning: true });
  const seen = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${seen.length} record(s) in 20 s`)), 20_000);
    consumer
      .run({
        eachMessage: async ({ message }) => {
          seen.push(message);
          if (seen.length === 2) {
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  assert.deepEqual(seen[0].key, key);
  assert.deepEqual(seen[0].value, value);
  assert.deepEqual(seen[0].headers.trace, trace);
  assert.equal(seen[1].key.toString(), 'p-2');
  assert.equal(seen[1].value, null);
});

/** Consumes `count` records of `topic` in `groupId` (committing as it goes) and returns their values. */
async function consume(groupId, topic, count, fromBeginning) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10_000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning });
  const seen = [];
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${seen.length} of ${count} record(s) in 20 s`)), 20_000);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.push(message.value.toString());
            if (seen.length === count) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

test('admin.resetOffsets to earliest and latest: the offsets are stored as sent, and the group starts over', async () => {
  await admin.createTopics({ topics: [{ topic: 'js-replay', numPartitions: 1 }] });
  await produce('js-replay', ['r1', 'r2', 'r3'].map((value) => ({ value })));
  assert.deepEqual(await consume('js-replayer', 'js-replay', 3, true), ['r1', 'r2', 'r3']);
  const fetched = async () => (await admin.fetchOffsets({ groupId: 'js-replayer', topics: ['js-replay'] }))[0].partitions[0].offset;
  assert.equal(await fetched(), '3');

  // kafkajs commits −2 for earliest (OffsetCommit from outside the group): Kafka stores it as given.
  await admin.resetOffsets({ groupId: 'js-replayer', topic: 'js-replay', earliest: true });
  assert.equal(await fetched(), '-2');
  assert.deepEqual(await consume('js-replayer', 'js-replay', 3, true), ['r1', 'r2', 'r3'], 'read again from the start');

  // −1 for latest: the group skips what is there and reads only what comes next.
  await admin.resetOffsets({ groupId: 'js-replayer', topic: 'js-replay' });
  assert.equal(await fetched(), '-1');
  const later = consume('js-replayer', 'js-replay', 1, false);
  await new Promise((r) => setTimeout(r, 3000));
  await produce('js-replay', [{ value: 'r4' }]);
  assert.deepEqual(await later, ['r4']);
});

test('producer timestamps are kept (CreateTime), unless the topic says LogAppendTime', async () => {
  await admin.createTopics({
    topics: [
      { topic: 'js-created', numPartitions: 1 },
      { topic: 'js-appended', numPartitions: 1, configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }] },
    ],
  });
  const stamp = '1700000000123';
  await produce('js-created', [{ value: 'c', timestamp: stamp }]);
  await produce('js-appended', [{ value: 'a', timestamp: stamp }]);
  const read = async (topic) => {
    const consumer = kafka.consumer({ groupId: `${topic}-reader`, sessionTimeout: 10_000 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    try {
      return await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`nothing from ${topic} in 20 s`)), 20_000);
        consumer.run({ eachMessage: async ({ message }) => { clearTimeout(timer); resolve(message); } }).catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
  };
  assert.equal((await read('js-created')).timestamp, stamp, 'the producer\'s timestamp');
  assert.notEqual((await read('js-appended')).timestamp, stamp, 'the broker\'s time of the append');
  const { resources } = await admin.describeConfigs({
    resources: [{ type: 2 /* TOPIC */, name: 'js-appended', configNames: ['message.timestamp.type'] }],
    includeSynonyms: false,
  });
  assert.equal(resources[0].configEntries[0].configValue, 'LogAppendTime');
});

test('a transaction its producer abandoned is aborted after transaction.timeout.ms of wall time', async () => {
  await admin.createTopics({ topics: [{ topic: 'js-txn-out', numPartitions: 1 }] });
  await produce('js-txn-out', [{ value: 'before' }]);
  const abandoned = kafka.producer({ transactionalId: 'js-abandoned', idempotent: true, maxInFlightRequests: 1, transactionTimeout: 2000 });
  await abandoned.connect();
  const txn = await abandoned.transaction();
  await txn.send({ topic: 'js-txn-out', messages: [{ value: 'in-txn' }] });
  const opened = Date.now();
  // The producer goes silent with its transaction open, as a killed one would.
  await produce('js-txn-out', [{ value: 'after' }]);
  const consumer = kafka.consumer({ groupId: 'js-txn-reader', sessionTimeout: 10_000, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js-txn-out', fromBeginning: true });
  const seen = [];
  let afterAt = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read_committed still stalled: ${JSON.stringify(seen)}`)), 20_000);
    consumer
      .run({
        eachMessage: async ({ message }) => {
          seen.push(message.value.toString());
          if (message.value.toString() === 'after') {
            afterAt = Date.now();
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  await abandoned.disconnect().catch(() => {});
  assert.deepEqual(seen, ['before', 'after'], 'the aborted record is never read');
  assert.ok(afterAt - opened >= 1500, `held behind the open transaction until its timeout (${afterAt - opened} ms)`);
});
