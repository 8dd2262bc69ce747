package kafkashim.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One Kafka consumer in a group (by default with the KIP-848 protocol, {@code group.protocol=consumer}) that
 * prints, one JSON object per line on stdout, what it is given and what it reads, until it reads "quit" on stdin
 * (then it closes, leaving the group) or its time runs out.
 *
 * <pre>
 * java -cp "$(scripts/real-kafka classpath)" kafkashim.oracle.ConsumerGroupProbe --bootstrap 127.0.0.1:9092 \
 *      --group g --topic t [--protocol consumer|classic] [--assignor uniform|range] [--instance-id ID]
 *      [--max-ms 120000] [--commit]
 * </pre>
 *
 * Lines: {"event":"assigned","partitions":[0,2]} (the whole assignment after each change),
 *        {"event":"record","partition":0,"offset":5,"value":"v5"},
 *        {"event":"closed"} after a clean close, {"event":"error","class":...,"message":...} on a failure (exit 2).
 */
public final class ConsumerGroupProbe {
    private ConsumerGroupProbe() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = null, group = null, topic = null, protocol = "consumer", assignor = null, instanceId = null;
        long maxMs = 120_000;
        boolean commit = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--group": group = args[++i]; break;
                case "--topic": topic = args[++i]; break;
                case "--protocol": protocol = args[++i]; break;
                case "--assignor": assignor = args[++i]; break;
                case "--instance-id": instanceId = args[++i]; break;
                case "--max-ms": maxMs = Long.parseLong(args[++i]); break;
                case "--commit": commit = true; break;
                default:
                    System.err.println("unknown argument " + a);
                    System.exit(64);
            }
        }
        if (bootstrap == null || group == null || topic == null) {
            System.err.println("--bootstrap, --group and --topic are required");
            System.exit(64);
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (assignor != null) props.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
        if (instanceId != null) props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);

        AtomicBoolean quit = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("quit")) break;
                }
            } catch (Exception ignored) {
                // a closed stdin means quit too
            }
            quit.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        long deadline = System.currentTimeMillis() + maxMs;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            final KafkaConsumer<String, String> c = consumer;
            consumer.subscribe(Collections.singletonList(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    if (!partitions.isEmpty()) printAssignment(c);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    printAssignment(c);
                }
            });
            while (!quit.get() && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<String, String> r : records) {
                    emit("{\"event\":\"record\",\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                        + ",\"value\":" + quote(r.value()) + "}");
                }
                if (commit && !records.isEmpty()) consumer.commitSync();
            }
        } catch (Exception e) {
            emit("{\"event\":\"error\",\"class\":" + quote(e.getClass().getName()) + ",\"message\":" + quote(String.valueOf(e.getMessage())) + "}");
            System.exit(2);
        }
        emit("{\"event\":\"closed\"}");
    }

    private static void printAssignment(KafkaConsumer<String, String> consumer) {
        List<Integer> partitions = new ArrayList<>();
        for (TopicPartition tp : consumer.assignment()) partitions.add(tp.partition());
        Collections.sort(partitions);
        emit("{\"event\":\"assigned\",\"partitions\":" + partitions + "}");
    }

    private static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
}
