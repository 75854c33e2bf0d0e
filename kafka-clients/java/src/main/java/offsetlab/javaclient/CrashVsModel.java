package offsetlab.javaclient;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A real Java KafkaConsumer with auto-commit on (the lab's {@code auto-poll}), killed with
 * SIGKILL at chosen instants; the lab's engine, told the same story, must predict exactly what
 * it lost and duplicated.
 *
 * <p>For each crash point: a topic of {@value #RECORDS} records in one partition, a consumer
 * process ({@link CrashRun}) running the point's plan with {@code max.poll.records=}{@value
 * #MAX_POLL}, {@code auto.commit.interval.ms=}{@value #INTERVAL_MS} and
 * {@code session.timeout.ms=}{@value #SESSION_TIMEOUT_MS}, killed at its {@code crash} step; the
 * group's committed offset read with the admin client; a new process of the same group that
 * reads to the end (it waits in the rebalance until the dead member's session expires); then
 * which offsets its sink holds how often, and the offset its close() committed. The same plan,
 * as scenario lines, goes to {@code offsetlab run --json}: its committed offset at the crash (a
 * run of the plan alone), its delivery count of every offset after the restart and its committed
 * offset after the close must be the real ones.
 *
 * <p>Where the commit happens is a matter of wall time for the client: a {@code tick} sleeps
 * past the interval, and the steps between ticks take milliseconds. The consumer process
 * measures, for each poll, whether the auto-commit was due inside it; a run where that
 * measurement disagrees with the plan, or is unclear (a machine too busy), is run again with a
 * new topic and group, up to {@value #ATTEMPTS} times.
 */
final class CrashVsModel {
    static final int RECORDS = 12, MAX_POLL = 4, ATTEMPTS = 3;
    static final long INTERVAL_MS = 1000, SESSION_TIMEOUT_MS = 6000;

    /** A crash point: its name, what it shows, and the plan both the process and the model run. */
    record Point(String name, String what, String plan) {}

    static final List<Point> POINTS = List.of(
            new Point("process-then-poll",
                    "each batch processed before the next poll; killed 2 records into batch 2",
                    "poll;process 4;tick 1000;poll;process 2;crash"),
            new Point("no-commit-due",
                    "processed before polling again, but the interval had not passed at the second poll; killed 3 records into batch 2",
                    "poll;process 4;poll;process 3;crash"),
            new Point("killed-after-poll",
                    "two batches processed, a third polled (committing 8), killed before processing it",
                    "poll;process 4;tick 1000;poll;process 4;tick 1000;poll;crash"),
            new Point("handoff",
                    "records handed off, not processed: the second poll commits batch 1 unprocessed; killed",
                    "poll;tick 1000;poll;crash"),
            new Point("handoff-partial",
                    "processing lags the polls: the third poll commits 8 while 2..7 wait; killed 3 records later",
                    "poll;tick 1000;poll;process 2;tick 1000;poll;process 3;crash"));

    private CrashVsModel() {}

    static int main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: crash-vs-model BOOTSTRAP OFFSETLAB [--points A,B,...]");
            return 2;
        }
        String bootstrap = args[0];
        Path offsetlab = Path.of(args[1]);
        List<Point> points = POINTS;
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--points") && i + 1 < args.length) {
                List<String> names = Arrays.asList(args[++i].split(","));
                points = POINTS.stream().filter(p -> names.contains(p.name())).toList();
                if (points.size() != names.size()) {
                    System.err.println("error: crash points are " + POINTS.stream().map(Point::name).toList());
                    return 2;
                }
            } else {
                System.err.println("error: unknown argument " + args[i]);
                return 2;
            }
        }
        if (!Files.isExecutable(offsetlab)) {
            System.err.println("error: " + offsetlab + " is not an executable (build it: cargo build -p offsetlab)");
            return 2;
        }
        System.out.printf("crash vs model: the Java KafkaConsumer %s (enable.auto.commit=true, auto.commit.interval.ms=%d, "
                        + "max.poll.records=%d, session.timeout.ms=%d) on %s, %d crash points%n",
                Main.kafkaVersion(), INTERVAL_MS, MAX_POLL, SESSION_TIMEOUT_MS, bootstrap, points.size());
        Path work = Files.createTempDirectory("java-crash-vs-model");
        int failed = 0;
        try (Admin admin = Admin.create(adminProps(bootstrap))) {
            for (Point point : points) {
                long t0 = System.nanoTime();
                String verdict;
                try {
                    verdict = runPoint(point, bootstrap, offsetlab, admin, work);
                } catch (Exception e) {
                    verdict = "FAIL: " + e;
                }
                boolean ok = verdict.startsWith("ok");
                if (!ok) {
                    failed++;
                }
                System.out.printf("  %s %s (%.1f s)%n", ok ? "=>" : "!!", verdict, (System.nanoTime() - t0) / 1e9);
            }
        } finally {
            try (Stream<Path> files = Files.walk(work)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        if (failed > 0) {
            System.out.printf("crash vs model: %d of %d crash points FAILED%n", failed, points.size());
            return 1;
        }
        System.out.printf("crash vs model: the lab predicted exactly what the Java client lost and duplicated at all %d crash points — ok%n",
                points.size());
        return 0;
    }

    static Properties adminProps(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        return p;
    }

    /** What one run of a crash point measured. */
    record Real(List<String> dues, List<String> trace, Long committed, Long committedAtEnd, int[] counts) {}

    private static String runPoint(Point point, String bootstrap, Path offsetlab, Admin admin, Path work)
            throws Exception {
        System.out.printf("%s: %s%n    plan: %s%n", point.name(), point.what(), point.plan().replace(";", "; "));
        List<String> expectedDues = expectedDues(point.plan());
        Real real = null;
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            String name = "java-crash-" + point.name() + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffL);
            real = runReal(point, name, bootstrap, admin, work);
            if (real.dues().equals(expectedDues)) {
                break;
            }
            System.out.printf("    attempt %d: the auto-commit was due at the polls %s, the plan says %s "
                    + "(the machine was too slow for the plan's timing)%s%n", attempt, real.dues(), expectedDues,
                    attempt < ATTEMPTS ? ": again with a new topic and group" : "");
            if (attempt == ATTEMPTS) {
                return "FAIL " + point.name() + ": timing disturbed in " + ATTEMPTS + " attempts";
            }
        }
        for (String t : real.trace()) {
            System.out.println("    java  " + t);
        }
        int[] counts = real.counts();
        List<Integer> lost = new ArrayList<>(), dups = new ArrayList<>();
        int redeliveries = 0;
        for (int o = 0; o < RECORDS; o++) {
            if (counts[o] == 0) {
                lost.add(o);
            }
            if (counts[o] > 1) {
                dups.add(o);
                redeliveries += counts[o] - 1;
            }
        }
        System.out.printf("    java  committed at the kill: %s, after the restart's close(): %s; lost %d %s, duplicated %d %s%n",
                real.committed() == null ? "nothing" : real.committed(), real.committedAtEnd(), lost.size(), lost, redeliveries, dups);

        // The lab's model, told the same story.
        Model prefix = model(offsetlab, work, point.name() + "-prefix", scenario(point.plan(), -1), point.name());
        long resumeAt = prefix.committed == null ? 0 : prefix.committed;
        Model full = model(offsetlab, work, point.name(), scenario(point.plan(), resumeAt), point.name());
        System.out.printf("    model committed at the crash: %s, after the close: %s; lost %d, duplicated %d; delivery counts %s%n",
                prefix.committed == null ? "nothing" : prefix.committed, full.committed, full.lost, full.duplicates,
                Arrays.toString(full.counts));

        List<String> wrong = new ArrayList<>();
        if (!java.util.Objects.equals(real.committed(), prefix.committed)) {
            wrong.add("committed at the crash: java " + real.committed() + ", model " + prefix.committed);
        }
        if (!java.util.Objects.equals(real.committedAtEnd(), full.committed)) {
            wrong.add("committed after the restarted consumer's close(): java " + real.committedAtEnd() + ", model " + full.committed);
        }
        if (full.lost != lost.size() || full.duplicates != redeliveries) {
            wrong.add("lost/duplicated: java " + lost.size() + "/" + redeliveries + ", model " + full.lost + "/" + full.duplicates);
        }
        if (!Arrays.equals(full.counts, counts)) {
            wrong.add("deliveries of each offset: java " + Arrays.toString(counts) + ", model " + Arrays.toString(full.counts));
        }
        // One machine-readable line, for the table scripts/java_crash_vs_model.sh prints.
        System.out.printf("    FIGURES %s java-lost=%d java-duplicated=%d java-committed=%s model-lost=%d model-duplicated=%d model-committed=%s%n",
                point.name(), lost.size(), redeliveries, real.committed() == null ? "-" : real.committed(),
                full.lost, full.duplicates, prefix.committed == null ? "-" : prefix.committed);
        if (!wrong.isEmpty()) {
            return "FAIL " + point.name() + ": the lab's model and the Java client disagree: " + String.join("; ", wrong);
        }
        return String.format("ok %s: lost %d, duplicated %d — java and model agree (committed %s, every offset's delivery count)",
                point.name(), lost.size(), redeliveries, real.committed() == null ? "nothing" : real.committed());
    }

    /** Whether each poll of the plan runs the auto-commit: the join, then ticks since the last. */
    static List<String> expectedDues(String plan) {
        List<String> dues = new ArrayList<>();
        long since = 0;
        for (String step : plan.split(";")) {
            String[] s = step.trim().split("\\s+");
            if (s[0].equals("tick")) {
                since += Long.parseLong(s[1]);
            } else if (s[0].equals("poll")) {
                if (dues.isEmpty()) {
                    dues.add("join");
                    since = 0;
                } else if (since >= INTERVAL_MS) {
                    dues.add("yes");
                    since = 0;
                } else {
                    dues.add("no");
                }
            }
        }
        return dues;
    }

    private static Real runReal(Point point, String name, String bootstrap, Admin admin, Path work) throws Exception {
        admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < RECORDS; i++) {
                sent.add(producer.send(new ProducerRecord<>(name, 0, "o-" + i, "order " + i)));
            }
            producer.flush();
            for (int i = 0; i < RECORDS; i++) {
                long offset = sent.get(i).get(30, TimeUnit.SECONDS).offset();
                if (offset != i) {
                    throw new IllegalStateException("record " + i + " was written at offset " + offset);
                }
            }
        }
        Path sink = work.resolve(name + ".sink");
        List<String> common = List.of("bootstrap=" + bootstrap, "topic=" + name, "group=" + name, "sink=" + sink,
                "interval-ms=" + INTERVAL_MS, "session-timeout-ms=" + SESSION_TIMEOUT_MS, "max-poll=" + MAX_POLL);

        // The first process, killed at its crash step.
        List<String> trace = new ArrayList<>();
        List<String> dues = new ArrayList<>();
        Process first = start(common, "plan=" + point.plan(), "client-id=" + name + "-1");
        boolean killed = false;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(first.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (!line.startsWith("TRACE ")) {
                    continue;
                }
                String t = line.substring(6);
                if (t.startsWith("crash-point")) {
                    first.destroyForcibly(); // SIGKILL
                    first.waitFor(30, TimeUnit.SECONDS);
                    killed = true;
                    trace.add(t + " → SIGKILL");
                    break;
                }
                trace.add(t);
                if (t.startsWith("poll ")) {
                    dues.add(field(t, "due"));
                }
            }
        }
        if (!killed) {
            first.waitFor(30, TimeUnit.SECONDS);
            throw new IllegalStateException("the consumer process exited (" + first.exitValue() + ") before its crash step: "
                    + trace + " " + new String(first.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets(name).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        OffsetAndMetadata c = offsets.get(new TopicPartition(name, 0));
        Long committed = c == null ? null : c.offset();

        // A new process of the same group reads on to the end.
        Process second = start(common, "plan=drain", "client-id=" + name + "-2");
        String out = new String(second.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!second.waitFor(120, TimeUnit.SECONDS) || second.exitValue() != 0) {
            second.destroyForcibly();
            throw new IllegalStateException("the restarted consumer failed: " + out
                    + new String(second.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        for (String line : out.split("\n")) {
            if (line.startsWith("TRACE ")) {
                trace.add("restarted: " + line.substring(6));
            }
        }
        // Its close() committed its position: the end of the log.
        OffsetAndMetadata end = admin.listConsumerGroupOffsets(name).partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS).get(new TopicPartition(name, 0));
        Long committedAtEnd = end == null ? null : end.offset();
        int[] counts = new int[RECORDS];
        for (String line : Files.readAllLines(sink)) {
            String[] f = line.trim().split(" ");
            if (f.length >= 2) {
                counts[Integer.parseInt(f[1])]++;
            }
        }
        return new Real(dues, trace, committed, committedAtEnd, counts);
    }

    private static String field(String trace, String key) {
        for (String f : trace.split(" ")) {
            if (f.startsWith(key + "=")) {
                return f.substring(key.length() + 1);
            }
        }
        return "?";
    }

    private static Process start(List<String> common, String... more) throws IOException {
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>(List.of(java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), Main.class.getName(), "crash-run"));
        cmd.addAll(common);
        cmd.addAll(Arrays.asList(more));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    /**
     * The plan as scenario lines. With {@code resumeAt} ≥ 0, the story goes on: the session
     * expires, the consumer restarts and polls and processes until the end of the log from the
     * committed offset, and closes.
     */
    static String scenario(String plan, long resumeAt) {
        List<String> lines = new ArrayList<>(List.of(
                "topic t partitions=1",
                "produce t count=" + RECORDS,
                String.format("consumer c group=g topic=t commit=auto-poll interval=%dms max-poll=%d sink=append reset=earliest session-timeout=%dms",
                        INTERVAL_MS, MAX_POLL, SESSION_TIMEOUT_MS)));
        for (String step : plan.split(";")) {
            String[] s = step.trim().split("\\s+");
            switch (s[0]) {
                case "poll" -> lines.add("poll c");
                case "process" -> lines.add("process c count=" + s[1]);
                case "tick" -> lines.add("tick " + s[1] + "ms");
                case "crash" -> lines.add("crash c");
                default -> throw new IllegalArgumentException(step);
            }
        }
        if (resumeAt >= 0) {
            lines.add("tick " + SESSION_TIMEOUT_MS + "ms");
            lines.add("restart c");
            for (long at = resumeAt; at < RECORDS; at += MAX_POLL) {
                lines.add("poll c");
                lines.add("process c count=all");
            }
            lines.add("close c");
        }
        return lines.stream().collect(Collectors.joining("\n", "", "\n"));
    }

    /** What the lab's engine says of group g. */
    record Model(Long committed, int lost, int duplicates, int[] counts) {}

    static Model model(Path offsetlab, Path work, String name, String scenario, String label) throws Exception {
        Path file = work.resolve(name + ".scn");
        Files.writeString(file, scenario);
        Process p = new ProcessBuilder(offsetlab.toString(), "run", file.toString(), "--json").start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("offsetlab run " + label + " failed: " + err + "\n" + scenario);
        }
        Object json = Json.parse(out);
        Object committed = Json.at(json, "groups", "g", "committed", "t-0");
        Object lost = Json.at(json, "groups", "g", "audit", "lost");
        Object dups = Json.at(json, "groups", "g", "audit", "duplicates");
        Object ranges = Json.at(json, "groups", "g", "partitions", 0, "delivery_counts");
        if (lost == null || dups == null || !(ranges instanceof List<?> rs)) {
            throw new IllegalStateException("offsetlab run --json: no audit for group g in " + out);
        }
        int[] counts = new int[RECORDS];
        for (Object r : rs) {
            List<?> range = (List<?>) r;
            int from = ((Double) range.get(0)).intValue(), to = ((Double) range.get(1)).intValue();
            int n = ((Double) range.get(2)).intValue();
            for (int o = from; o < to && o < RECORDS; o++) {
                counts[o] = n;
            }
        }
        return new Model(committed == null ? null : ((Double) committed).longValue(),
                ((Double) lost).intValue(), ((Double) dups).intValue(), counts);
    }
}
