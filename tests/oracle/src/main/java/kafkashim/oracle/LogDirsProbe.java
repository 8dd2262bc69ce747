package kafkashim.oracle;

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartitionReplica;

/**
 * The Java admin client's log-directory calls against a broker (real Kafka or kafka-shim): alterReplicaLogDirs
 * (AlterReplicaLogDirs, key 34) for each {@code --move TOPIC:PARTITION:DIR}, then describeReplicaLogDirs
 * (DescribeLogDirs, key 35) for the same replicas, all on broker {@code --broker} (default 1). One JSON object on
 * stdout, replicas in name order:
 *
 * <pre>
 * java -cp "$(scripts/real-kafka classpath)" kafkashim.oracle.LogDirsProbe --bootstrap HOST:PORT
 *      [--command-config FILE] [--broker 1] --move orders:0:/data [--move ...]
 * {"alter":{"orders-0":"ok"|"&lt;exception class&gt;"}, "describe":{"orders-0":{"current":DIR|null,"lag":N,"future":DIR|null}|"&lt;class&gt;"}}
 * </pre>
 */
public final class LogDirsProbe {
    private LogDirsProbe() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = null, commandConfig = null;
        int broker = 1;
        Map<TopicPartitionReplica, String> moves = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--command-config": commandConfig = args[++i]; break;
                case "--broker": broker = Integer.parseInt(args[++i]); break;
                case "--move": {
                    String[] parts = args[++i].split(":", 3);
                    moves.put(new TopicPartitionReplica(parts[0], Integer.parseInt(parts[1]), broker), parts[2]);
                    break;
                }
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Properties props = new Properties();
        if (commandConfig != null) {
            try (InputStream in = new FileInputStream(commandConfig)) { props.load(in); }
        }
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        try (Admin admin = Admin.create(props)) {
            Map<String, String> altered = new TreeMap<>();
            for (Map.Entry<TopicPartitionReplica, KafkaFuture<Void>> e : admin.alterReplicaLogDirs(moves).values().entrySet()) {
                altered.put(name(e.getKey()), outcome(e.getValue()));
            }
            Map<String, String> described = new TreeMap<>();
            for (Map.Entry<TopicPartitionReplica, KafkaFuture<ReplicaLogDirInfo>> e
                    : admin.describeReplicaLogDirs(moves.keySet()).values().entrySet()) {
                String text;
                try {
                    ReplicaLogDirInfo info = e.getValue().get(30, TimeUnit.SECONDS);
                    text = "{\"current\":" + quote(info.getCurrentReplicaLogDir()) + ",\"lag\":" + info.getCurrentReplicaOffsetLag()
                            + ",\"future\":" + quote(info.getFutureReplicaLogDir()) + "}";
                } catch (ExecutionException ex) {
                    text = quote(ex.getCause().getClass().getName());
                }
                described.put(name(e.getKey()), text);
            }
            StringBuilder out = new StringBuilder("{\"alter\":{");
            altered.forEach((k, v) -> out.append(quote(k)).append(':').append(quote(v)).append(','));
            trim(out).append("},\"describe\":{");
            described.forEach((k, v) -> out.append(quote(k)).append(':').append(v).append(','));
            System.out.println(trim(out).append("}}"));
        }
    }

    private static String outcome(KafkaFuture<Void> future) throws Exception {
        try {
            future.get(30, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getName();
        }
    }

    private static String name(TopicPartitionReplica r) {
        return r.topic() + "-" + r.partition();
    }

    private static StringBuilder trim(StringBuilder b) {
        if (b.charAt(b.length() - 1) == ',') b.setLength(b.length() - 1);
        return b;
    }

    private static String quote(String s) {
        if (s == null) return "null";
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
