package offsetlab.javaclient;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The consumer process of crash-vs-model: the lab's {@code auto-poll} strategy for real, the
 * Java KafkaConsumer with {@code enable.auto.commit=true} (classic group protocol). Its
 * {@code ConsumerCoordinator.poll()}, at the start of every {@code poll()}, commits
 * {@code subscriptions.allConsumed()} — the positions after the records earlier polls returned
 * — once {@code auto.commit.interval.ms} has passed since the last auto-commit or since the
 * group was joined ({@code onJoinComplete} resets the timer).
 *
 * <p>It runs a plan, the same steps the lab's scenario gets: {@code poll} (one poll(); its
 * records join the in-flight queue: processing is handed off), {@code process N} (the next N
 * in-flight records written to the sink as {@code partition offset key} lines, flushed),
 * {@code tick MS} (sleeps MS plus a margin, so the auto-commit interval has surely passed),
 * {@code crash} (prints {@code TRACE crash-point} and waits for the SIGKILL). Or
 * {@code plan=drain}: a restarted process that reads to the end of the log processing each
 * batch before the next poll, then closes.
 *
 * <p>Every poll prints a {@code TRACE poll} line: the offsets it returned and whether the
 * auto-commit was due inside it, as measured from this process's clock. The auto-commit timer
 * is private to the client, so the process brackets it: it was reset between the poll's entry
 * and return (or, for the join, just before {@code onPartitionsAssigned}); a poll is
 * {@code due=yes} when it began more than the interval after the latest possible reset,
 * {@code due=no} when it returned well within the interval of the earliest possible one, and
 * {@code due=unclear} otherwise (a disturbed run: the driver tries again).
 */
final class CrashRun {
    /** A tick sleeps this much longer than asked: the interval has surely passed. */
    static final long TICK_MARGIN_MS = 300;
    /** How far from the interval a poll must be to be told due or not due. */
    static final long DUE_MARGIN_MS = 20;
    static final long NOT_DUE_MARGIN_MS = 100;

    private CrashRun() {}

    static int main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq < 0) {
                System.err.println("crash-run: expected key=value, got " + a);
                return 2;
            }
            o.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String bootstrap = req(o, "bootstrap"), topic = req(o, "topic"), group = req(o, "group");
        Path sink = Path.of(req(o, "sink"));
        long interval = Long.parseLong(o.getOrDefault("interval-ms", "1000"));
        String plan = req(o, "plan");

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, o.getOrDefault("client-id", "java-crash"));
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
        p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, Long.toString(interval));
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, o.getOrDefault("max-poll", "4"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, o.getOrDefault("session-timeout-ms", "6000"));
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());

        try (BufferedWriter out = Files.newBufferedWriter(sink, StandardCharsets.UTF_8,
                     StandardOpenOption.CREATE, StandardOpenOption.APPEND);
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            Timer timer = new Timer(interval);
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    timer.joined(System.nanoTime());
                }
            });
            if (plan.equals("drain")) {
                return drain(consumer, out);
            }
            return runPlan(consumer, out, timer, plan.split(";"));
        }
    }

    private static String req(Map<String, String> o, String key) {
        String v = o.get(key);
        if (v == null) {
            throw new IllegalArgumentException("crash-run: missing " + key + "=");
        }
        return v;
    }

    /** What this process can know of the client's auto-commit timer: when it was last reset. */
    static final class Timer {
        final long intervalNanos;
        /** The last reset happened between these instants (nanoTime); -1 before the join. */
        long resetLo = -1, resetHi = -1;
        boolean joinedDuringPoll;

        Timer(long intervalMs) {
            this.intervalNanos = intervalMs * 1_000_000L;
        }

        void joined(long now) {
            // onJoinComplete resets the timer, then invokes the listener.
            resetLo = now - 5_000_000L;
            resetHi = now;
            joinedDuringPoll = true;
        }

        /** Whether a poll that began at {@code entry} and returned at {@code exit} ran the commit. */
        String judge(long entry, long exit) {
            if (joinedDuringPoll) {
                return "join";
            }
            if (resetHi < 0) {
                return "unclear";
            }
            if (entry - resetHi >= intervalNanos + DUE_MARGIN_MS * 1_000_000L) {
                resetLo = entry;
                resetHi = exit;
                return "yes";
            }
            if (exit - resetLo <= intervalNanos - NOT_DUE_MARGIN_MS * 1_000_000L) {
                return "no";
            }
            return "unclear";
        }
    }

    private static int runPlan(KafkaConsumer<String, String> consumer, BufferedWriter out, Timer timer,
                               String[] steps) throws IOException, InterruptedException {
        Deque<ConsumerRecord<String, String>> inFlight = new ArrayDeque<>();
        int polls = 0, processed = 0;
        for (String raw : steps) {
            String[] step = raw.trim().split("\\s+");
            switch (step[0]) {
                case "poll" -> {
                    polls++;
                    timer.joinedDuringPoll = false;
                    long entry = System.nanoTime();
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofSeconds(30));
                    long exit = System.nanoTime();
                    String due = timer.judge(entry, exit);
                    if (records.isEmpty()) {
                        System.out.println("TRACE error poll " + polls + " returned nothing in 30 s");
                        System.out.flush();
                        return 1;
                    }
                    long first = Long.MAX_VALUE, last = -1;
                    for (ConsumerRecord<String, String> r : records) {
                        inFlight.addLast(r);
                        first = Math.min(first, r.offset());
                        last = Math.max(last, r.offset());
                    }
                    System.out.printf("TRACE poll n=%d first=%d last=%d count=%d due=%s took-ms=%d%n",
                            polls, first, last, records.count(), due, (exit - entry) / 1_000_000L);
                }
                case "process" -> {
                    int n = Integer.parseInt(step[1]);
                    for (int i = 0; i < n; i++) {
                        ConsumerRecord<String, String> r = inFlight.pollFirst();
                        if (r == null) {
                            System.out.println("TRACE error process: nothing in flight");
                            System.out.flush();
                            return 1;
                        }
                        write(out, r);
                        processed++;
                    }
                    System.out.printf("TRACE process count=%d in-flight=%d%n", n, inFlight.size());
                }
                case "tick" -> Thread.sleep(Long.parseLong(step[1]) + TICK_MARGIN_MS);
                case "crash" -> {
                    // The auto-commit a poll sends is on the wire when poll() returns (it calls
                    // pollNoWakeup after queueing it); half a second more lets the heartbeat
                    // thread read its answer too. Time passing here changes nothing: only a
                    // poll commits.
                    Thread.sleep(500);
                    System.out.printf("TRACE crash-point processed=%d in-flight=%d%n", processed, inFlight.size());
                    System.out.flush();
                    Thread.sleep(120_000);
                    System.out.println("TRACE error nobody killed this process");
                    System.out.flush();
                    Runtime.getRuntime().halt(1); // no close(): it would commit
                    return 1;
                }
                default -> throw new IllegalArgumentException("crash-run: unknown step " + raw);
            }
            System.out.flush();
        }
        return 0;
    }

    /** A restarted process: reads to the end, each batch processed before the next poll. */
    private static int drain(KafkaConsumer<String, String> consumer, BufferedWriter out) throws IOException {
        long deadline = System.nanoTime() + 90_000_000_000L;
        Map<TopicPartition, Long> end = null;
        long first = -1, last = -1;
        int n = 0;
        while (System.nanoTime() < deadline) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
            for (ConsumerRecord<String, String> r : records) {
                write(out, r);
                if (first < 0) {
                    first = r.offset();
                }
                last = r.offset();
                n++;
            }
            Set<TopicPartition> assigned = consumer.assignment();
            if (assigned.isEmpty()) {
                continue;
            }
            if (end == null) {
                end = consumer.endOffsets(assigned, Duration.ofSeconds(10));
            }
            boolean done = true;
            for (TopicPartition tp : assigned) {
                if (consumer.position(tp, Duration.ofSeconds(10)) < end.getOrDefault(tp, 0L)) {
                    done = false;
                }
            }
            if (done) {
                System.out.printf("TRACE drained count=%d first=%d last=%d%n", n, first, last);
                System.out.flush();
                return 0; // close() (try-with-resources) commits the positions and leaves the group
            }
        }
        System.out.println("TRACE error the restarted consumer did not reach the end of the log in 90 s");
        System.out.flush();
        return 1;
    }

    private static void write(BufferedWriter out, ConsumerRecord<String, String> r) throws IOException {
        out.write(r.partition() + " " + r.offset() + " " + r.key() + "\n");
        out.flush();
    }
}
