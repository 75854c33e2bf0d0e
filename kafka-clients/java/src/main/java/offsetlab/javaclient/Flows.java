package offsetlab.javaclient;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client's everyday flows, each step asserting what Kafka guarantees and printing one
 * line: the admin client on a cluster and a topic, the idempotent producer with every codec,
 * a consumer group through a rebalance and the admin operations on its offsets, and Kafka
 * transactions (a read-process-write loop, an abort, fencing, read_committed). A failed step
 * prints {@code FAIL step: why}, skips the rest of its section (the later sections still run)
 * and makes the exit status 1; the last line names every failed step.
 */
final class Flows {
    static final String[] CODECS = {"gzip", "lz4", "zstd", "snappy"};
    static final int PER_CODEC = 100, PARTITIONS = 3, MORE = 60, TX_INPUT = 20, TX_ABORTED = 5;

    private final String bootstrap;
    private final String sfx = Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
    private final List<String> failed = new ArrayList<>();
    private int passed;
    private Admin admin;

    /** A broken guarantee. */
    static final class Check extends RuntimeException {
        Check(String m) {
            super(m);
        }
    }

    private static final class SectionAborted extends RuntimeException {
        SectionAborted() {
            super(null, null, false, false);
        }
    }

    @FunctionalInterface
    interface Body {
        String run() throws Exception;
    }

    private Flows(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    /** Steps known to fail on this broker: a failure of one of them is reported, not fatal. */
    private final Set<String> known = new HashSet<>();

    static int main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: flows BOOTSTRAP [--known-difference STEP]...");
            return 2;
        }
        Flows f = new Flows(args[0]);
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--known-difference") && i + 1 < args.length) {
                f.known.add(args[++i]);
            } else {
                System.err.println("error: unknown argument " + args[i]);
                return 2;
            }
        }
        return f.all();
    }

    private int all() throws Exception {
        long t0 = System.nanoTime();
        System.out.printf("flows: the Java client %s on %s (topics and groups suffixed -%s)%n",
                Main.kafkaVersion(), bootstrap, sfx);
        Properties ap = CrashVsModel.adminProps(bootstrap);
        ap.put(ConsumerConfig.CLIENT_ID_CONFIG, "flows-admin");
        try (Admin a = Admin.create(ap)) {
            admin = a;
            String topic = "flows-" + sfx;
            boolean topicMade = clusterAndTopics(topic);
            if (topicMade) {
                boolean produced = section(() -> produce(topic));
                if (produced) {
                    section(() -> group(topic));
                    section(() -> consumerProtocol(topic));
                    section(this::shareGroup);
                } else {
                    skip("group, consumer protocol", "the producer's records are missing");
                }
            } else {
                skip("produce, group", "the topic was not created");
            }
            section(this::transactions);
        }
        System.out.printf("flows: %d steps passed, %d failed (%.1f s)%s%n", passed, failed.size(),
                (System.nanoTime() - t0) / 1e9, failed.isEmpty() ? "" : ": " + String.join(", ", failed));
        if (known.isEmpty()) {
            return failed.isEmpty() ? 0 : 1;
        }
        // Known differences keep the run green only while they are exactly what fails: a new
        // failure fails it, and so does a known one that no longer shows (drop it from the list).
        List<String> unexpected = failed.stream().filter(s -> !known.contains(s)).toList();
        List<String> gone = known.stream().filter(s -> !failed.contains(s)).sorted().toList();
        if (!gone.isEmpty()) {
            System.out.println("flows: known difference(s) no longer seen — remove them from the list: " + String.join(", ", gone));
        }
        if (!unexpected.isEmpty()) {
            System.out.println("flows: unexpected failure(s): " + String.join(", ", unexpected));
        }
        if (unexpected.isEmpty() && gone.isEmpty()) {
            System.out.println("flows: every failure is a known difference of this broker: " + String.join(", ", failed));
            return 0;
        }
        return 1;
    }

    interface Section {
        void run() throws Exception;
    }

    private boolean section(Section s) throws Exception {
        try {
            s.run();
            return true;
        } catch (SectionAborted e) {
            return false;
        }
    }

    private void skip(String what, String why) {
        System.out.printf("skip %s: %s%n", what, why);
    }

    /** Runs one step: one line, ok or FAIL. A failure ends the section. */
    private void step(String name, Body body) {
        long t0 = System.nanoTime();
        String detail;
        try {
            detail = body.run();
        } catch (Throwable e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            String why = cause instanceof Check ? cause.getMessage() : cause.getClass().getName() + ": " + cause.getMessage();
            System.out.printf("FAIL %s: %s%s%n", name, why, known.contains(name) ? " (a known difference)" : "");
            System.out.flush();
            failed.add(name);
            throw new SectionAborted();
        }
        passed++;
        System.out.printf("ok   %-44s %s (%d ms)%n", name, detail, (System.nanoTime() - t0) / 1_000_000L);
        System.out.flush();
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new Check(what);
        }
    }

    /** The exception a future failed with (its cause), or a Check when it succeeded. */
    static Throwable failure(Future<?> f) throws Exception {
        try {
            f.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new Check("succeeded, but Kafka refuses it");
    }

    // ---------------------------------------------------------------------------------------
    // The admin client: the cluster, a topic.

    /** A step whose failure ends nothing else: a section of its own. */
    private boolean alone(String name, Body body) throws Exception {
        return section(() -> step(name, body));
    }

    /** Whether the topic was created: the sections that read it need it. */
    private boolean clusterAndTopics(String topic) throws Exception {
        alone("admin.describeCluster", () -> {
            DescribeClusterResult r = admin.describeCluster();
            Collection<Node> nodes = r.nodes().get(30, TimeUnit.SECONDS);
            String id = r.clusterId().get(30, TimeUnit.SECONDS);
            Node controller = r.controller().get(30, TimeUnit.SECONDS);
            check(!nodes.isEmpty(), "no broker in the cluster");
            for (Node n : nodes) {
                check(n.id() >= 0 && !n.host().isEmpty() && n.port() > 0, "a broker without an address: " + n);
            }
            check(id != null && !id.isEmpty(), "no cluster id");
            check(controller != null && nodes.stream().anyMatch(n -> n.id() == controller.id()),
                    "the controller " + controller + " is not one of the brokers " + nodes);
            return nodes.size() + " broker(s) " + nodes.stream().map(n -> n.id() + "@" + n.host() + ":" + n.port()).toList()
                    + ", cluster id " + id;
        });
        Uuid[] topicId = new Uuid[1];
        Config[] created = new Config[1];
        boolean made = alone("admin.createTopics", () -> {
            NewTopic t = new NewTopic(topic, PARTITIONS, (short) 1).configs(Map.of("retention.ms", "3600000"));
            CreateTopicsResult r = admin.createTopics(List.of(t));
            r.all().get(30, TimeUnit.SECONDS);
            int n = r.numPartitions(topic).get();
            int rf = r.replicationFactor(topic).get();
            topicId[0] = r.topicId(topic).get();
            created[0] = r.config(topic).get();
            check(n == PARTITIONS, "created with " + n + " partitions, asked " + PARTITIONS);
            check(rf == 1, "created with replication factor " + rf + ", asked 1");
            return topic + ": " + n + " partitions, replication factor " + rf + ", retention.ms=3600000";
        });
        if (!made) {
            return false;
        }
        alone("admin.createTopics (configs in the answer)", () -> {
            // CreateTopics v5+ answers with the new topic's configs (KIP-525).
            ConfigEntry retention = created[0] == null ? null : created[0].get("retention.ms");
            check(retention != null && "3600000".equals(retention.value()),
                    "the CreateTopics response's configs hold retention.ms = " + retention + " ("
                            + (created[0] == null ? "no configs" : created[0].entries().size() + " entries") + ")");
            return created[0].entries().size() + " configs, retention.ms=3600000 among them";
        });
        alone("admin.createTopics (topic id)", () -> {
            check(topicId[0] != null && !topicId[0].equals(Uuid.ZERO_UUID),
                    "the CreateTopics response gave topic id " + topicId[0] + " (zero): Kafka answers with the new topic's id");
            return "topic id " + topicId[0];
        });
        alone("admin.createTopics (exists)", () -> {
            Throwable e = failure(admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all());
            check(e instanceof TopicExistsException, "expected TopicExistsException, got " + e);
            return "TopicExistsException, as Kafka answers";
        });
        alone("admin.describeTopics", () -> {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
            check(d != null, "no description");
            check(!d.topicId().equals(Uuid.ZERO_UUID), "no topic id");
            check(topicId[0].equals(Uuid.ZERO_UUID) || d.topicId().equals(topicId[0]),
                    "topic id " + d.topicId() + ", created as " + topicId[0]);
            check(!d.isInternal(), "described as internal");
            check(d.partitions().size() == PARTITIONS, d.partitions().size() + " partitions");
            for (int i = 0; i < PARTITIONS; i++) {
                TopicPartitionInfo p = d.partitions().get(i);
                check(p.partition() == i, "partition " + i + " listed as " + p.partition());
                check(p.leader() != null && p.leader().id() >= 0, "partition " + i + " has no leader");
                check(p.replicas().size() == 1 && p.isr().contains(p.leader()),
                        "partition " + i + ": replicas " + p.replicas() + ", isr " + p.isr());
            }
            return PARTITIONS + " partitions, each with a leader in its ISR, topic id " + d.topicId();
        });
        alone("admin.describeConfigs", () -> {
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config c = admin.describeConfigs(List.of(res)).all().get(30, TimeUnit.SECONDS).get(res);
            check(c != null, "no config");
            ConfigEntry retention = c.get("retention.ms");
            check(retention != null && "3600000".equals(retention.value()), "retention.ms = " + retention);
            check(retention.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    "retention.ms's source is " + retention.source() + ", not DYNAMIC_TOPIC_CONFIG");
            ConfigEntry cleanup = c.get("cleanup.policy");
            check(cleanup != null && "delete".equals(cleanup.value()), "cleanup.policy = " + cleanup);
            check(cleanup.source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "cleanup.policy was never set on the topic");
            return c.entries().size() + " entries; retention.ms=3600000 (DYNAMIC_TOPIC_CONFIG), cleanup.policy=delete ("
                    + cleanup.source() + ")";
        });
        alone("admin.listTopics", () -> {
            Set<String> names = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            check(names.contains(topic), topic + " is not listed");
            check(names.stream().noneMatch(n -> n.startsWith("__")), "internal topics listed without listInternal: " + names);
            return names.size() + " topic(s), " + topic + " among them";
        });
        return true;
    }

    // ---------------------------------------------------------------------------------------
    // The idempotent producer, every codec; the records read back byte for byte.

    record Sent(String key, String value, String codec, int seq, long timestamp) {}

    private final Map<TopicPartition, TreeMap<Long, Sent>> sent = new HashMap<>();

    private Properties producerProps(String clientId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        return p;
    }

    private Properties consumerProps(String clientId, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        return p;
    }

    private static String value(String codec, int i) {
        // Repetitive enough for every codec to shrink it.
        return codec + " record " + i + " " + "lorem ipsum dolor sit amet ".repeat(4);
    }

    private void produce(String topic) throws Exception {
        for (String codec : CODECS) {
            step("producer idempotent acks=all " + codec, () -> {
                Properties p = producerProps("flows-producer-" + codec);
                p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
                p.put(ProducerConfig.ACKS_CONFIG, "all");
                p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
                p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                List<Sent> records = new ArrayList<>();
                try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                    for (int i = 0; i < PER_CODEC; i++) {
                        String key = "k-" + (i % 20);
                        ProducerRecord<String, String> r = new ProducerRecord<>(topic, null, key, value(codec, i), List.of(
                                new RecordHeader("codec", codec.getBytes(StandardCharsets.UTF_8)),
                                new RecordHeader("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8))));
                        futures.add(producer.send(r));
                        records.add(new Sent(key, r.value(), codec, i, -1));
                    }
                    producer.flush();
                }
                Map<String, Integer> keyPartition = new HashMap<>();
                Map<Integer, Long> lastOffset = new HashMap<>();
                for (int i = 0; i < PER_CODEC; i++) {
                    RecordMetadata m = futures.get(i).get(30, TimeUnit.SECONDS);
                    Sent s = records.get(i);
                    check(m.hasOffset() && m.offset() >= 0, "record " + i + " acknowledged without an offset");
                    Integer before = keyPartition.putIfAbsent(s.key(), m.partition());
                    check(before == null || before == m.partition(), "key " + s.key() + " went to partitions " + before + " and " + m.partition());
                    Long last = lastOffset.put(m.partition(), m.offset());
                    check(last == null || m.offset() > last, "partition " + m.partition() + ": offset " + m.offset() + " after " + last
                            + " (an idempotent producer keeps the order of its sends)");
                    TreeMap<Long, Sent> log = sent.computeIfAbsent(new TopicPartition(topic, m.partition()), k -> new TreeMap<>());
                    check(log.put(m.offset(), new Sent(s.key(), s.value(), codec, i, m.timestamp())) == null,
                            "offset " + m.offset() + " of partition " + m.partition() + " acknowledged twice");
                }
                return PER_CODEC + " records acknowledged over partitions " + new TreeMap<>(lastOffset).keySet()
                        + ", a key always to one partition, offsets rising in send order";
            });
        }
        step("consumer reads back every codec", () -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps("flows-reader", null))) {
                List<TopicPartition> tps = partitions(topic, PARTITIONS);
                c.assign(tps);
                c.seekToBeginning(tps);
                Map<TopicPartition, Long> begin = c.beginningOffsets(tps), end = c.endOffsets(tps);
                List<ConsumerRecord<String, String>> got = readTo(c, end, 30);
                long total = end.values().stream().mapToLong(Long::longValue).sum();
                check(begin.values().stream().allMatch(o -> o == 0), "log start offsets " + begin);
                check(total == (long) PER_CODEC * CODECS.length, "log end offsets " + end + " sum to " + total);
                check(got.size() == total, "read " + got.size() + " records of " + total);
                Map<TopicPartition, Long> next = new HashMap<>();
                for (ConsumerRecord<String, String> r : got) {
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    long expected = next.getOrDefault(tp, 0L);
                    check(r.offset() == expected, tp + ": offset " + r.offset() + " where " + expected + " was next");
                    next.put(tp, expected + 1);
                    Sent s = sent.getOrDefault(tp, new TreeMap<>()).get(r.offset());
                    check(s != null, tp + "@" + r.offset() + " was never acknowledged");
                    check(s.key().equals(r.key()) && s.value().equals(r.value()), tp + "@" + r.offset() + ": key/value differ");
                    check(header(r, "codec").equals(s.codec()) && header(r, "seq").equals(Integer.toString(s.seq())),
                            tp + "@" + r.offset() + ": headers " + r.headers());
                    check(r.timestampType() == TimestampType.CREATE_TIME && r.timestamp() == s.timestamp(),
                            tp + "@" + r.offset() + ": timestamp " + r.timestampType() + " " + r.timestamp() + ", acknowledged as " + s.timestamp());
                }
                return got.size() + " records, each key, value, header and CreateTime timestamp as sent, offsets 0.. in every partition";
            }
        });
    }

    static String header(ConsumerRecord<?, ?> r, String key) {
        Header h = r.headers().lastHeader(key);
        return h == null ? "<none>" : new String(h.value(), StandardCharsets.UTF_8);
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            tps.add(new TopicPartition(topic, i));
        }
        return tps;
    }

    /** Polls an assigned consumer until its positions reach {@code end}. */
    static List<ConsumerRecord<String, String>> readTo(KafkaConsumer<String, String> c, Map<TopicPartition, Long> end,
                                                       int seconds) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (true) {
            boolean done = true;
            for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
                if (c.position(e.getKey()) < e.getValue()) {
                    done = false;
                }
            }
            if (done) {
                return got;
            }
            check(System.nanoTime() < deadline, "positions " + positions(c, end.keySet()) + " short of the end " + end
                    + " after " + seconds + " s (" + got.size() + " records read)");
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                got.add(r);
            }
        }
    }

    static Map<TopicPartition, Long> positions(KafkaConsumer<?, ?> c, Collection<TopicPartition> tps) {
        Map<TopicPartition, Long> m = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
        for (TopicPartition tp : tps) {
            m.put(tp, c.position(tp));
        }
        return m;
    }

    // ---------------------------------------------------------------------------------------
    // A consumer group: subscribe, commit, a second member, a rebalance, close; the admin
    // operations on its offsets.

    /** A group member that commits what it processed after every poll and in its revoke hook. */
    private final class Member {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final List<ConsumerRecord<String, String>> processed = new ArrayList<>();

        Member(String name, String group, String topic) {
            this(name, group, topic, false);
        }

        /** A member that speaks Kafka 4's consumer protocol (KIP-848) when {@code kip848}. */
        Member(String name, String group, String topic, boolean kip848) {
            this.name = name;
            Properties props = consumerProps("flows-" + name, group);
            if (kip848) {
                // The coordinator runs the session and heartbeats: the client sets neither.
                props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                props.remove(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
                props.remove(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
            }
            this.consumer = new KafkaConsumer<>(props);
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    consumer.commitSync(); // positions = what was processed: each poll is processed at once
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
            });
        }

        int poll(long ms) {
            ConsumerRecords<String, String> rs = consumer.poll(Duration.ofMillis(ms));
            for (ConsumerRecord<String, String> r : rs) {
                processed.add(r);
            }
            if (!rs.isEmpty()) {
                consumer.commitSync();
            }
            return rs.count();
        }

        Set<TopicPartition> assignment() {
            return consumer.assignment();
        }
    }

    private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic, int n) throws Exception {
        Map<TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> spec = new HashMap<>();
        for (TopicPartition tp : partitions(topic, n)) {
            spec.put(tp, org.apache.kafka.clients.admin.OffsetSpec.latest());
        }
        Map<TopicPartition, Long> end = new HashMap<>();
        admin.listOffsets(spec).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
    }

    private Map<TopicPartition, Long> committed(String group) throws Exception {
        Map<TopicPartition, Long> m = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
                .forEach((tp, o) -> m.put(tp, o == null ? null : o.offset()));
        return m;
    }

    private ConsumerGroupDescription describe(String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS);
    }

    // listConsumerGroups (ListGroups), deprecated for removal in favour of listGroups: kept while
    // it exists, as the API applications of Kafka 3.x still call.
    @SuppressWarnings({"deprecation", "removal"})
    private Optional<Listed> listed(String group) throws Exception {
        return admin.listConsumerGroups().all().get(30, TimeUnit.SECONDS).stream()
                .filter(g -> g.groupId().equals(group)).findFirst()
                .map(g -> new Listed(g.groupState(), g.isSimpleConsumerGroup()));
    }

    /** What listConsumerGroups says of a group. */
    record Listed(Optional<GroupState> groupState, boolean isSimpleConsumerGroup) {}

    private void group(String topic) throws Exception {
        String group = "flows-group-" + sfx;
        List<TopicPartition> all = partitions(topic, PARTITIONS);
        Member[] m = new Member[2];
        try {
            step("group: subscribe, poll to the end, commitSync", () -> {
                m[0] = new Member("a", group, topic);
                Map<TopicPartition, Long> end = endOffsets(admin, topic, PARTITIONS);
                long total = end.values().stream().mapToLong(Long::longValue).sum();
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (m[0].processed.size() < total) {
                    check(System.nanoTime() < deadline, "read " + m[0].processed.size() + " of " + total + " in 60 s");
                    m[0].poll(500);
                }
                check(m[0].assignment().equals(new HashSet<>(all)), "the only member got " + m[0].assignment());
                Map<TopicPartition, Long> c = committed(group);
                for (TopicPartition tp : all) {
                    check(end.get(tp).equals(c.get(tp)), tp + ": committed " + c.get(tp) + ", log end " + end.get(tp));
                }
                Set<String> seen = new HashSet<>();
                for (ConsumerRecord<String, String> r : m[0].processed) {
                    check(seen.add(r.partition() + "@" + r.offset()), "delivered twice: " + r.partition() + "@" + r.offset());
                }
                return "member a owns " + all.size() + " partitions, read " + total + " records once each, committed " + c.values();
            });
            step("group: a second member joins, rebalance", () -> {
                try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps("flows-more"))) {
                    for (int i = 0; i < MORE; i++) {
                        p.send(new ProducerRecord<>(topic, "more-" + i, "after the commit " + i));
                    }
                    p.flush();
                }
                int before = m[0].processed.size();
                m[1] = new Member("b", group, topic);
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (true) {
                    m[0].poll(100);
                    m[1].poll(100);
                    Set<TopicPartition> a = m[0].assignment(), b = m[1].assignment();
                    int fresh = m[0].processed.size() - before + m[1].processed.size();
                    boolean split = !a.isEmpty() && !b.isEmpty() && a.size() + b.size() == PARTITIONS;
                    if (split && fresh >= MORE) {
                        Set<TopicPartition> union = new HashSet<>(a);
                        union.addAll(b);
                        check(union.equals(new HashSet<>(all)), "assignments " + a + " and " + b + " do not cover " + all);
                        break;
                    }
                    check(System.nanoTime() < deadline, "after 60 s: a owns " + a + ", b owns " + b + ", " + fresh + " of " + MORE + " new records read");
                }
                List<ConsumerRecord<String, String>> fresh = new ArrayList<>(m[0].processed.subList(before, m[0].processed.size()));
                fresh.addAll(m[1].processed);
                Set<String> seen = new HashSet<>();
                for (ConsumerRecord<String, String> r : fresh) {
                    check(r.key().startsWith("more-"), "redelivered after the rebalance: " + r.partition() + "@" + r.offset());
                    check(seen.add(r.key()), "delivered twice: " + r.key());
                }
                check(seen.size() == MORE, seen.size() + " of " + MORE + " new records");
                return "a owns " + sorted(m[0].assignment()) + ", b owns " + sorted(m[1].assignment()) + "; the " + MORE
                        + " new records read once, nothing committed redelivered";
            });
            step("admin.describeConsumerGroups (Stable)", () -> {
                ConsumerGroupDescription d = describe(group);
                check(d.groupState() == GroupState.STABLE, "state " + d.groupState());
                check(d.type() == GroupType.CLASSIC, "type " + d.type());
                check(!d.isSimpleConsumerGroup(), "described as a simple group");
                check(d.members().size() == 2, d.members().size() + " members");
                check(List.of("range", "cooperative-sticky").contains(d.partitionAssignor()), "assignor " + d.partitionAssignor());
                Set<TopicPartition> union = new HashSet<>();
                int total = 0;
                for (MemberDescription md : d.members()) {
                    union.addAll(md.assignment().topicPartitions());
                    total += md.assignment().topicPartitions().size();
                    check(md.clientId().startsWith("flows-"), "member client id " + md.clientId());
                }
                check(total == PARTITIONS && union.equals(new HashSet<>(all)), "member assignments " + d.members());
                Set<Set<TopicPartition>> real = Set.of(m[0].assignment(), m[1].assignment());
                Set<Set<TopicPartition>> described = d.members().stream().map(md -> md.assignment().topicPartitions()).collect(Collectors.toSet());
                check(real.equals(described), "described assignments " + described + ", the members own " + real);
                return "Stable, classic, assignor " + d.partitionAssignor() + ", 2 members with the assignments they own";
            });
            step("admin.listConsumerGroups", () -> {
                Listed l = listed(group).orElseThrow(() -> new Check(group + " is not listed"));
                check(l.groupState().equals(Optional.of(GroupState.STABLE)), "listed as " + l.groupState());
                check(!l.isSimpleConsumerGroup(), "listed as simple");
                return group + " listed, Stable";
            });
            step("admin.listConsumerGroupOffsets", () -> {
                Map<TopicPartition, Long> end = endOffsets(admin, topic, PARTITIONS);
                Map<TopicPartition, Long> c = committed(group);
                for (TopicPartition tp : all) {
                    check(end.get(tp).equals(c.get(tp)), tp + ": committed " + c.get(tp) + ", log end " + end.get(tp));
                }
                return "committed = log end on every partition: " + c.values();
            });
            step("admin.alterConsumerGroupOffsets (active group)", () -> {
                Throwable e = failure(admin.alterConsumerGroupOffsets(group, Map.of(all.get(0), new OffsetAndMetadata(0))).all());
                check(e instanceof UnknownMemberIdException, "expected UnknownMemberIdException, got " + e);
                return "refused: UnknownMemberIdException (a group with members owns its offsets)";
            });
            step("admin.deleteConsumerGroupOffsets (subscribed)", () -> {
                Throwable e = failure(admin.deleteConsumerGroupOffsets(group, Set.of(all.get(0))).all());
                check(e instanceof GroupSubscribedToTopicException, "expected GroupSubscribedToTopicException, got " + e);
                return "refused: GroupSubscribedToTopicException";
            });
            step("admin.deleteConsumerGroups (not empty)", () -> {
                Throwable e = failure(admin.deleteConsumerGroups(List.of(group)).all());
                check(e instanceof GroupNotEmptyException, "expected GroupNotEmptyException, got " + e);
                return "refused: GroupNotEmptyException";
            });
            step("group: close one member, rebalance", () -> {
                m[1].consumer.close(CloseOptions.timeout(Duration.ofSeconds(30)));
                m[1] = null;
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (!m[0].assignment().equals(new HashSet<>(all))) {
                    check(System.nanoTime() < deadline, "60 s after b left, a owns " + m[0].assignment());
                    m[0].poll(200);
                }
                ConsumerGroupDescription d = describe(group);
                check(d.members().size() == 1, d.members().size() + " members after b's close");
                return "b's close left the group at once: a owns all " + PARTITIONS + " partitions again, 1 member";
            });
            step("group: close the last member", () -> {
                m[0].consumer.close(CloseOptions.timeout(Duration.ofSeconds(30)));
                m[0] = null;
                ConsumerGroupDescription d = describe(group);
                check(d.groupState() == GroupState.EMPTY, "state " + d.groupState() + " after the last member closed");
                check(d.members().isEmpty(), d.members().size() + " members");
                return "Empty, no members, offsets kept";
            });
        } finally {
            for (Member x : m) {
                if (x != null) {
                    x.consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
                }
            }
        }
        step("admin.alterConsumerGroupOffsets (empty group)", () -> {
            admin.alterConsumerGroupOffsets(group, Map.of(all.get(0), new OffsetAndMetadata(5, "rewound by flows")))
                    .all().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetAndMetadata> c =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            OffsetAndMetadata o = c.get(all.get(0));
            check(o != null && o.offset() == 5 && "rewound by flows".equals(o.metadata()), all.get(0) + " committed " + o);
            return all.get(0) + " committed 5 with its metadata";
        });
        step("group: a new member resumes at the altered offset", () -> {
            Map<TopicPartition, Long> end = endOffsets(admin, topic, PARTITIONS);
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps("flows-c", group))) {
                c.subscribe(List.of(topic));
                List<ConsumerRecord<String, String>> got = new ArrayList<>();
                long deadline = System.nanoTime() + 60_000_000_000L;
                long want = end.get(all.get(0)) - 5;
                while (got.size() < want || c.assignment().size() < PARTITIONS) {
                    check(System.nanoTime() < deadline, "read " + got.size() + " of " + want + " in 60 s");
                    c.poll(Duration.ofMillis(200)).forEach(got::add);
                }
                c.poll(Duration.ofMillis(500)).forEach(got::add);
                check(got.size() == want, "read " + got.size() + ", expected " + want);
                check(got.stream().allMatch(r -> r.partition() == 0) && got.get(0).offset() == 5,
                        "read from " + got.get(0).partition() + "@" + got.get(0).offset());
                // Closed without committing (enable.auto.commit=false): the offsets stay.
            }
            return "read " + all.get(0) + " from 5 to its end, nothing from the others (at their end)";
        });
        step("admin.deleteConsumerGroupOffsets (empty group)", () -> {
            admin.deleteConsumerGroupOffsets(group, Set.of(all.get(0))).all().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, Long> c = committed(group);
            check(c.get(all.get(0)) == null, all.get(0) + " still committed " + c.get(all.get(0)));
            check(c.get(all.get(1)) != null && c.get(all.get(2)) != null, "other partitions lost their offsets: " + c);
            return all.get(0) + "'s offset deleted, the others kept: " + c;
        });
        step("admin.deleteConsumerGroups (empty group)", () -> {
            admin.deleteConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
            check(listed(group).isEmpty(), group + " is still listed");
            Map<TopicPartition, Long> c = committed(group);
            check(c.values().stream().allMatch(o -> o == null), "offsets after the delete: " + c);
            return group + " deleted: no longer listed, no offsets";
        });
    }

    // ---------------------------------------------------------------------------------------
    // Kafka 4's consumer group protocol (KIP-848): members heartbeat, the coordinator assigns and
    // moves only the partitions that change owner.

    /** Polls every member until {@code done} holds, failing after 60 s with {@code what}. */
    private static void pollUntil(Member[] members, java.util.function.BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!done.getAsBoolean()) {
            check(System.nanoTime() < deadline, what + " after 60 s");
            for (Member m : members) {
                if (m != null) {
                    m.poll(100);
                }
            }
        }
    }

    private void consumerProtocol(String topic) throws Exception {
        String group = "flows-kip848-" + sfx;
        List<TopicPartition> all = partitions(topic, PARTITIONS);
        Member[] m = new Member[3];
        try {
            step("consumer protocol: two members read everything once", () -> {
                m[0] = new Member("k1", group, topic, true);
                m[1] = new Member("k2", group, topic, true);
                Map<TopicPartition, Long> end = endOffsets(admin, topic, PARTITIONS);
                long total = end.values().stream().mapToLong(Long::longValue).sum();
                Member[] two = {m[0], m[1]};
                pollUntil(two, () -> m[0].processed.size() + m[1].processed.size() >= total
                        && m[0].assignment().size() + m[1].assignment().size() == PARTITIONS
                        && !m[0].assignment().isEmpty() && !m[1].assignment().isEmpty(),
                        "k1 owns " + m[0].assignment() + ", k2 " + m[1].assignment());
                Set<String> seen = new HashSet<>();
                for (Member x : two) {
                    for (ConsumerRecord<String, String> r : x.processed) {
                        check(seen.add(r.partition() + "@" + r.offset()), "delivered twice: " + r.partition() + "@" + r.offset());
                    }
                }
                check(seen.size() == total, seen.size() + " of " + total + " records");
                return "k1 owns " + sorted(m[0].assignment()) + ", k2 owns " + sorted(m[1].assignment()) + "; " + total + " records once each";
            });
            step("consumer protocol: a third member joins, only what moves changes owner", () -> {
                Set<TopicPartition> a = new HashSet<>(m[0].assignment()), b = new HashSet<>(m[1].assignment());
                m[2] = new Member("k3", group, topic, true);
                pollUntil(m, () -> m[0].assignment().size() == 1 && m[1].assignment().size() == 1 && m[2].assignment().size() == 1,
                        "k1 owns " + m[0].assignment() + ", k2 " + m[1].assignment() + ", k3 " + m[2].assignment());
                check(a.containsAll(m[0].assignment()) && b.containsAll(m[1].assignment()),
                        "a partition moved between the two first members: " + a + " " + b + " → " + m[0].assignment() + " " + m[1].assignment());
                return "k3 took one partition, " + sorted(m[2].assignment()) + "; k1 and k2 kept the rest";
            });
            step("admin.describeConsumerGroups (consumer protocol)", () -> {
                ConsumerGroupDescription d = describe(group);
                check(d.type() == GroupType.CONSUMER, "type " + d.type());
                check(d.groupState() == GroupState.STABLE, "state " + d.groupState());
                check(d.members().size() == 3, d.members().size() + " members");
                int epoch = d.groupEpoch().orElse(-1);
                // Created at epoch 1 (Kafka 4.4), one bump per join.
                check(epoch == 4, "group epoch " + epoch);
                check(d.targetAssignmentEpoch().orElse(-1) == epoch, "assignment epoch " + d.targetAssignmentEpoch());
                Set<Set<TopicPartition>> owned = new HashSet<>();
                for (MemberDescription md : d.members()) {
                    check(md.memberEpoch().orElse(-1) == epoch, md.consumerId() + " at epoch " + md.memberEpoch());
                    check(md.targetAssignment().map(t -> t.topicPartitions().equals(md.assignment().topicPartitions())).orElse(false),
                            md.consumerId() + " owns " + md.assignment() + ", its target is " + md.targetAssignment());
                    owned.add(md.assignment().topicPartitions());
                }
                Set<Set<TopicPartition>> real = Set.of(m[0].assignment(), m[1].assignment(), m[2].assignment());
                check(owned.equals(real), "described " + owned + ", the members own " + real);
                return "consumer, Stable, group epoch 4, 3 members at epoch 4 owning their target";
            });
            step("consumer protocol: a member leaves, the others take its partition", () -> {
                m[2].consumer.close(CloseOptions.timeout(Duration.ofSeconds(30)));
                m[2] = null;
                pollUntil(m, () -> m[0].assignment().size() + m[1].assignment().size() == PARTITIONS,
                        "k1 owns " + m[0].assignment() + ", k2 " + m[1].assignment());
                ConsumerGroupDescription d = describe(group);
                check(d.members().size() == 2, d.members().size() + " members");
                check(d.groupEpoch().orElse(-1) == 5, "group epoch " + d.groupEpoch());
                Map<TopicPartition, Long> end = endOffsets(admin, topic, PARTITIONS);
                Map<TopicPartition, Long> c = committed(group);
                for (TopicPartition tp : all) {
                    check(end.get(tp).equals(c.get(tp)), tp + ": committed " + c.get(tp) + ", log end " + end.get(tp));
                }
                return "k3's close left at once (group epoch 5); committed = log end everywhere";
            });
            step("consumer protocol: close the last members", () -> {
                for (int i = 0; i < 2; i++) {
                    m[i].consumer.close(CloseOptions.timeout(Duration.ofSeconds(30)));
                    m[i] = null;
                }
                ConsumerGroupDescription d = describe(group);
                check(d.groupState() == GroupState.EMPTY, "state " + d.groupState());
                check(d.type() == GroupType.CONSUMER, "type " + d.type());
                return "Empty, still a consumer group, offsets kept";
            });
        } finally {
            for (Member x : m) {
                if (x != null) {
                    x.consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
                }
            }
        }
    }

    // Share groups (KIP-932): KafkaShareConsumer — records acquired one member at a time,
    // acknowledged one by one, released and redelivered, rejected and archived; the log unchanged.

    private KafkaShareConsumer<String, String> shareConsumer(String clientId, String group, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put("share.acknowledgement.mode", "explicit");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(topic));
        return c;
    }

    /** A record a share consumer's poll returned, and which member's it was. */
    private record Held(int member, ConsumerRecord<String, String> r) {
    }

    /**
     * Polls both members until {@code want} records came back (or {@code millis} pass), each
     * record acknowledged as {@code how} says right after the poll that returned it — in explicit
     * mode a member's next poll refuses to run while the last one's records wait.
     */
    private static List<Held> pollShare(KafkaShareConsumer<String, String>[] members, int want, long millis,
            java.util.function.Function<ConsumerRecord<String, String>, AcknowledgeType> how) {
        List<Held> got = new ArrayList<>();
        long deadline = System.nanoTime() + millis * 1_000_000L;
        while (got.size() < want && System.nanoTime() < deadline) {
            for (int i = 0; i < members.length; i++) {
                for (ConsumerRecord<String, String> r : members[i].poll(Duration.ofMillis(200))) {
                    got.add(new Held(i, r));
                    members[i].acknowledge(r, how.apply(r));
                }
            }
        }
        for (KafkaShareConsumer<String, String> m : members) {
            m.commitSync();
        }
        return got;
    }

    @SuppressWarnings("unchecked")
    private void shareGroup() throws Exception {
        String topic = "flows-share-" + sfx, group = "flows-share-" + sfx;
        step("share group: a topic, its records, the group's configs", () -> {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            ConfigResource g = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(g, List.of(
                    new org.apache.kafka.clients.admin.AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                            org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET),
                    new org.apache.kafka.clients.admin.AlterConfigOp(new ConfigEntry("share.delivery.count.limit", "2"),
                            org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps("flows-share"))) {
                for (int i = 0; i < 4; i++) {
                    p.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
                }
            }
            return "1 partition, 4 records; share.auto.offset.reset=earliest, share.delivery.count.limit=2";
        });
        KafkaShareConsumer<String, String>[] m = new KafkaShareConsumer[2];
        try {
            step("share group: two members, each record to one of them", () -> {
                m[0] = shareConsumer("share-1", group, topic);
                m[1] = shareConsumer("share-2", group, topic);
                // Offset 0 goes back for another try; the others are done.
                List<Held> got = pollShare(m, 4, 60_000, r -> r.offset() == 0 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                check(got.size() == 4, got.size() + " of 4 records");
                Set<Long> offsets = new HashSet<>();
                for (Held h : got) {
                    ConsumerRecord<String, String> r = h.r();
                    check(offsets.add(r.offset()), "offset " + r.offset() + " delivered twice");
                    check(r.deliveryCount().orElse((short) -1) == 1, "offset " + r.offset() + " delivery " + r.deliveryCount());
                }
                return "offsets " + new java.util.TreeSet<>(offsets) + " once each; 0 released, the rest accepted";
            });
            step("share group: a released record comes back, its delivery count 2", () -> {
                List<Held> got = pollShare(m, 1, 60_000, r -> AcknowledgeType.REJECT);
                check(got.size() == 1 && got.get(0).r().offset() == 0, "got " + got.stream().map(h -> h.r().offset()).toList());
                ConsumerRecord<String, String> r = got.get(0).r();
                check(r.deliveryCount().orElse((short) -1) == 2, "delivery " + r.deliveryCount());
                return "offset 0 again, delivery 2; rejected";
            });
            step("share group: a rejected record is archived, never delivered again", () -> {
                List<Held> got = pollShare(m, 1, 3_000, r -> AcknowledgeType.ACCEPT);
                check(got.isEmpty(), "got " + got.stream().map(h -> h.r().offset()).toList());
                return "nothing in 3 s";
            });
            step("admin.describeShareGroups", () -> {
                org.apache.kafka.clients.admin.ShareGroupDescription d =
                        admin.describeShareGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS);
                check(d.groupState() == GroupState.STABLE, "state " + d.groupState());
                check(d.members().size() == 2, d.members().size() + " members");
                for (org.apache.kafka.clients.admin.ShareMemberDescription md : d.members()) {
                    check(md.assignment().topicPartitions().equals(Set.of(new TopicPartition(topic, 0))),
                            md.clientId() + " assigned " + md.assignment().topicPartitions());
                }
                return "Stable, 2 members sharing " + topic + "-0";
            });
            step("share group: close both; the log still holds every record", () -> {
                for (int i = 0; i < 2; i++) {
                    m[i].close(Duration.ofSeconds(30));
                    m[i] = null;
                }
                long end = endOffsets(admin, topic, 1).get(new TopicPartition(topic, 0));
                check(end == 4, "log end " + end);
                org.apache.kafka.clients.admin.ShareGroupDescription d =
                        admin.describeShareGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS);
                check(d.groupState() == GroupState.EMPTY, "state " + d.groupState());
                return "Empty; log end 4 — acknowledging deleted nothing";
            });
            TopicPartition tp0 = new TopicPartition(topic, 0);
            step("admin.alterShareGroupOffsets: the Empty group starts again at offset 1", () -> {
                admin.alterShareGroupOffsets(group, Map.of(tp0, 1L)).all().get(30, TimeUnit.SECONDS);
                Map<TopicPartition, org.apache.kafka.clients.admin.SharePartitionOffsetInfo> info = admin
                        .listShareGroupOffsets(Map.of(group, new org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec()))
                        .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
                check(info.get(tp0) != null && info.get(tp0).startOffset() == 1, "start offsets " + info);
                return "listShareGroupOffsets: start offset 1";
            });
            step("share group: a new member reads 1, 2, 3 again, each a first delivery", () -> {
                m[0] = shareConsumer("share-3", group, topic);
                List<Held> got = pollShare(new KafkaShareConsumer[] {m[0]}, 3, 60_000, r -> AcknowledgeType.ACCEPT);
                List<Long> offsets = got.stream().map(h -> h.r().offset()).sorted().toList();
                check(offsets.equals(List.of(1L, 2L, 3L)), "got " + offsets);
                for (Held h : got) {
                    check(h.r().deliveryCount().orElse((short) -1) == 1,
                            "offset " + h.r().offset() + " delivery " + h.r().deliveryCount());
                }
                m[0].close(Duration.ofSeconds(30));
                m[0] = null;
                return "offsets " + offsets + ", delivery 1 each: the reset gave a fresh share state";
            });
            step("admin.deleteShareGroupOffsets, then deleteShareGroups", () -> {
                admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get(30, TimeUnit.SECONDS);
                Map<TopicPartition, org.apache.kafka.clients.admin.SharePartitionOffsetInfo> info = admin
                        .listShareGroupOffsets(Map.of(group, new org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec()))
                        .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
                check(info.get(tp0) == null, "start offsets after the delete " + info);
                admin.deleteShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
                boolean listed = admin.listGroups().all().get(30, TimeUnit.SECONDS).stream()
                        .anyMatch(l -> l.groupId().equals(group));
                check(!listed, "the deleted group is still listed");
                return "no start offset left; the group deleted and no longer listed";
            });
        } finally {
            for (KafkaShareConsumer<String, String> x : m) {
                if (x != null) {
                    x.close(Duration.ofSeconds(5));
                }
            }
        }
    }

    static List<String> sorted(Set<TopicPartition> tps) {
        return tps.stream().map(TopicPartition::toString).sorted().toList();
    }

    // ---------------------------------------------------------------------------------------
    // Transactions: read-process-write, an abort, fencing, read_committed.

    private void transactions() throws Exception {
        String in = "flows-tx-in-" + sfx, out = "flows-tx-out-" + sfx, group = "flows-tx-group-" + sfx;
        String txId = "flows-tx-" + sfx;
        TopicPartition in0 = new TopicPartition(in, 0), out0 = new TopicPartition(out, 0);
        step("tx: input topic", () -> {
            admin.createTopics(List.of(new NewTopic(in, 1, (short) 1), new NewTopic(out, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps("flows-tx-input"))) {
                for (int i = 0; i < TX_INPUT; i++) {
                    p.send(new ProducerRecord<>(in, "order-" + i, "paid " + i));
                }
                p.flush();
            }
            return TX_INPUT + " input records in " + in;
        });
        Properties tp = producerProps("flows-tx-producer");
        tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txId);
        tp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(tp);
        Properties cp = consumerProps("flows-tx-consumer", group);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "7");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
        int[] transactions = new int[1];
        try {
            step("tx: initTransactions", () -> {
                producer.initTransactions();
                return "transactional.id " + txId;
            });
            step("tx: read-process-write, sendOffsetsToTransaction + commitTransaction", () -> {
                consumer.subscribe(List.of(in));
                int done = 0;
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (done < TX_INPUT) {
                    check(System.nanoTime() < deadline, done + " of " + TX_INPUT + " input records in 60 s");
                    ConsumerRecords<String, String> rs = consumer.poll(Duration.ofMillis(500));
                    if (rs.isEmpty()) {
                        continue;
                    }
                    producer.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<String, String> r : rs) {
                        producer.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        done++;
                    }
                    producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    producer.commitTransaction();
                    transactions[0]++;
                }
                // commitTransaction returns once the coordinator decided; the markers that make the
                // last transaction's offsets the group's are written after it (on Kafka, a few
                // milliseconds later): wait for them, as a reader of the group would.
                Map<TopicPartition, Long> c = committed(group);
                long until = System.nanoTime() + 10_000_000_000L;
                while (!Long.valueOf(TX_INPUT).equals(c.get(in0)) && System.nanoTime() < until) {
                    Thread.sleep(50);
                    c = committed(group);
                }
                check(Long.valueOf(TX_INPUT).equals(c.get(in0)), "the group's committed offset is " + c.get(in0) + ", not " + TX_INPUT + " (10 s after the commit)");
                return TX_INPUT + " records in " + transactions[0] + " transactions; the group's offset committed with them: " + c.get(in0);
            });
            step("tx: abortTransaction", () -> {
                producer.beginTransaction();
                for (int i = 0; i < TX_ABORTED; i++) {
                    producer.send(new ProducerRecord<>(out, "aborted-" + i, "never visible"));
                }
                producer.sendOffsetsToTransaction(Map.of(in0, new OffsetAndMetadata(3)), consumer.groupMetadata());
                producer.flush();
                producer.abortTransaction();
                Map<TopicPartition, Long> c = committed(group);
                check(Long.valueOf(TX_INPUT).equals(c.get(in0)), "after the abort the group's offset is " + c.get(in0) + ", not " + TX_INPUT);
                return TX_ABORTED + " records and an offset of 3 aborted: the group's offset stays " + c.get(in0);
            });
        } finally {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
        }
        step("tx: read_committed sees only committed output", () -> {
            Properties rp = consumerProps("flows-tx-read-committed", null);
            rp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(rp)) {
                c.assign(List.of(out0));
                c.seekToBeginning(List.of(out0));
                Map<TopicPartition, Long> lso = c.endOffsets(List.of(out0));
                List<ConsumerRecord<String, String>> got = readTo(c, lso, 30);
                check(got.size() == TX_INPUT, "read " + got.size() + " records, " + TX_INPUT + " were committed");
                for (int i = 0; i < TX_INPUT; i++) {
                    ConsumerRecord<String, String> r = got.get(i);
                    check(r.key().equals("order-" + i) && r.value().equals("PAID " + i), "record " + i + ": " + r.key() + "=" + r.value());
                }
                return TX_INPUT + " records, in input order, none of the aborted; last stable offset " + lso.get(out0);
            }
        });
        step("tx: read_uncommitted sees the aborted records, markers take offsets", () -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps("flows-tx-read-uncommitted", null))) {
                c.assign(List.of(out0));
                c.seekToBeginning(List.of(out0));
                Map<TopicPartition, Long> end = c.endOffsets(List.of(out0));
                List<ConsumerRecord<String, String>> got = readTo(c, end, 30);
                long aborted = got.stream().filter(r -> r.key().startsWith("aborted-")).count();
                check(got.size() == TX_INPUT + TX_ABORTED && aborted == TX_ABORTED,
                        "read " + got.size() + " records (" + aborted + " aborted), expected " + (TX_INPUT + TX_ABORTED));
                long markers = transactions[0] + 1;
                check(end.get(out0) == TX_INPUT + TX_ABORTED + markers, "log end offset " + end.get(out0) + ", expected "
                        + (TX_INPUT + TX_ABORTED) + " records + " + markers + " transaction markers");
                return got.size() + " records (" + aborted + " aborted); log end " + end.get(out0) + " = records + "
                        + markers + " COMMIT/ABORT markers";
            }
        });
        step("tx: a new producer with the same transactional.id fences the old one", () -> {
            try (KafkaProducer<String, String> second = new KafkaProducer<>(tp)) {
                second.initTransactions();
                KafkaException fenced = null;
                try {
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(out, "zombie", "fenced")).get(30, TimeUnit.SECONDS);
                    producer.commitTransaction();
                } catch (ProducerFencedException | InvalidProducerEpochException e) {
                    fenced = e;
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof ProducerFencedException || e.getCause() instanceof InvalidProducerEpochException) {
                        fenced = (KafkaException) e.getCause();
                    } else {
                        throw e;
                    }
                } catch (KafkaException e) {
                    if (e.getCause() instanceof ProducerFencedException || e.getCause() instanceof InvalidProducerEpochException) {
                        fenced = (KafkaException) e.getCause();
                    } else {
                        throw e;
                    }
                }
                check(fenced != null, "the old producer committed after a new one with its transactional.id initialised");
                second.beginTransaction();
                second.send(new ProducerRecord<>(out, "successor", "committed"));
                second.commitTransaction();
                return "the old producer: " + fenced.getClass().getSimpleName()
                        + (fenced instanceof ProducerFencedException ? " (its Sender logs an ERROR for it above)" : "")
                        + "; its successor commits";
            } finally {
                producer.close(Duration.ofSeconds(5));
            }
        });
        step("tx: read_committed after fencing", () -> {
            Properties rp = consumerProps("flows-tx-read-committed-2", null);
            rp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(rp)) {
                c.assign(List.of(out0));
                c.seekToBeginning(List.of(out0));
                List<ConsumerRecord<String, String>> got = readTo(c, c.endOffsets(List.of(out0)), 30);
                List<String> keys = got.stream().map(ConsumerRecord::key).toList();
                check(got.size() == TX_INPUT + 1 && keys.get(TX_INPUT).equals("successor") && !keys.contains("zombie"),
                        "read_committed sees " + keys.subList(Math.min(TX_INPUT, keys.size()), keys.size()) + " after the first " + TX_INPUT);
                return TX_INPUT + " + the successor's record; the fenced producer's record never visible";
            }
        });
    }
}
