package offsetlab.javaclient;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.Properties;

/**
 * Apache Kafka's Java client (kafka-clients, the same release as the Apache Kafka the tests
 * start) against the lab's Kafka listener or any Kafka.
 *
 * <pre>
 *   crash-vs-model BOOTSTRAP OFFSETLAB [--points A,B,…]
 *       A real KafkaConsumer with enable.auto.commit=true (the lab's auto-poll strategy) killed
 *       with SIGKILL at chosen instants, restarted, read to the end; the lab's engine, told the
 *       same story (offsetlab run --json), must predict exactly what it lost and duplicated.
 *   flows BOOTSTRAP
 *       The producer, a consumer group, the admin client and transactions: each step asserts
 *       what Kafka guarantees and prints one line; exit 1 naming the failing steps.
 *   crash-run …
 *       The consumer process crash-vs-model starts and kills (not for direct use).
 * </pre>
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage();
            System.exit(2);
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        int rc;
        switch (args[0]) {
            case "crash-run" -> rc = CrashRun.main(rest);
            case "crash-vs-model" -> rc = CrashVsModel.main(rest);
            case "flows" -> rc = Flows.main(rest);
            case "-h", "--help", "help" -> {
                usage();
                rc = 0;
            }
            default -> {
                System.err.println("error: unknown subcommand " + args[0]);
                usage();
                rc = 2;
            }
        }
        System.out.flush();
        // Kafka's clients leave no non-daemon thread behind once closed, but a failed step may
        // leave one open: exit explicitly.
        System.exit(rc);
    }

    /** The kafka-clients release on the class path (its kafka/kafka-version.properties). */
    static String kafkaVersion() {
        try (InputStream in = Main.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static void usage() {
        System.err.println("usage: java -jar offsetlab-java-client.jar crash-vs-model BOOTSTRAP OFFSETLAB [--points A,B,...]");
        System.err.println("       java -jar offsetlab-java-client.jar flows BOOTSTRAP");
    }
}
