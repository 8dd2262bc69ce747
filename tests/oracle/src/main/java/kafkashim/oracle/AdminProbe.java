package kafkashim.oracle;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.acl.AclOperation;

/**
 * Asks a broker (real Kafka or kafka-shim) for describeCluster with the Java admin client and prints it
 * as one JSON object on stdout.
 *
 * <pre>
 * java -cp "$(scripts/real-kafka classpath)" kafkashim.oracle.AdminProbe --bootstrap 127.0.0.1:9092 \
 *      [--user admin --password admin-secret [--mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512]] \
 *      [--security-protocol PLAINTEXT|SASL_PLAINTEXT] [--command-config FILE] \
 *      [--include-authorized-operations] [--timeout-ms 15000]
 * </pre>
 *
 * Success: {"ok":true,"cluster_id":...,"controller":{node}|null,"nodes":[{node}...],
 *           "authorized_operations":[...]|null}, exit 0.
 * Failure: {"ok":false,"error":{"class":"org.apache.kafka.common.errors....","message":...}}, exit 2.
 * Bad usage: message on stderr, exit 64.
 */
public final class AdminProbe {
    private AdminProbe() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = null, user = null, password = null, mechanism = "PLAIN", protocol = null, commandConfig = null;
        boolean authorizedOps = false;
        int timeoutMs = 15000;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--bootstrap": case "--bootstrap-server": bootstrap = value(args, ++i, a); break;
                case "--user": user = value(args, ++i, a); break;
                case "--password": password = value(args, ++i, a); break;
                case "--mechanism": mechanism = value(args, ++i, a); break;
                case "--security-protocol": protocol = value(args, ++i, a); break;
                case "--command-config": commandConfig = value(args, ++i, a); break;
                case "--include-authorized-operations": authorizedOps = true; break;
                case "--timeout-ms": timeoutMs = Integer.parseInt(value(args, ++i, a)); break;
                default: usage("unknown argument " + a);
            }
        }
        if (bootstrap == null) usage("--bootstrap is required");
        if ((user == null) != (password == null)) usage("--user and --password go together");

        Properties props = new Properties();
        if (commandConfig != null) {
            try (InputStream in = new FileInputStream(commandConfig)) { props.load(in); }
        }
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(timeoutMs));
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Integer.toString(timeoutMs));
        props.putIfAbsent(AdminClientConfig.CLIENT_ID_CONFIG, "kafka-shim-admin-probe");
        if (user != null) {
            String module = mechanism.startsWith("SCRAM-")
                    ? "org.apache.kafka.common.security.scram.ScramLoginModule"
                    : "org.apache.kafka.common.security.plain.PlainLoginModule";
            props.put("sasl.mechanism", mechanism);
            props.put("sasl.jaas.config", module + " required username=\"" + jaasEscape(user)
                    + "\" password=\"" + jaasEscape(password) + "\";");
            props.putIfAbsent(AdminClientConfig.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        }
        if (protocol != null) props.put(AdminClientConfig.SECURITY_PROTOCOL_CONFIG, protocol);

        int exit;
        StringBuilder out = new StringBuilder();
        try (Admin admin = Admin.create(props)) {
            DescribeClusterResult r = admin.describeCluster(
                    new DescribeClusterOptions().timeoutMs(timeoutMs).includeAuthorizedOperations(authorizedOps));
            String clusterId = r.clusterId().get(timeoutMs, TimeUnit.MILLISECONDS);
            Node controller = r.controller().get(timeoutMs, TimeUnit.MILLISECONDS);
            Collection<Node> nodes = r.nodes().get(timeoutMs, TimeUnit.MILLISECONDS);
            Set<AclOperation> ops = r.authorizedOperations().get(timeoutMs, TimeUnit.MILLISECONDS);
            out.append("{\"ok\":true,\"cluster_id\":").append(str(clusterId));
            out.append(",\"controller\":").append(node(controller));
            out.append(",\"nodes\":[");
            List<Node> sorted = new ArrayList<>(nodes);
            sorted.sort((x, y) -> Integer.compare(x.id(), y.id()));
            for (int i = 0; i < sorted.size(); i++) out.append(i == 0 ? "" : ",").append(node(sorted.get(i)));
            out.append("],\"authorized_operations\":");
            if (ops == null) {
                out.append("null");
            } else {
                List<String> names = new ArrayList<>();
                for (AclOperation op : ops) names.add(op.name());
                names.sort(null);
                out.append('[');
                for (int i = 0; i < names.size(); i++) out.append(i == 0 ? "" : ",").append(str(names.get(i)));
                out.append(']');
            }
            out.append('}');
            exit = 0;
        } catch (ExecutionException e) {
            out.setLength(0);
            out.append(error(e.getCause() != null ? e.getCause() : e));
            exit = 2;
        } catch (Exception e) {
            out.setLength(0);
            out.append(error(e));
            exit = 2;
        }
        System.out.println(out);
        System.out.flush();
        System.exit(exit);
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length) usage(flag + " needs a value");
        return args[i];
    }

    private static void usage(String why) {
        System.err.println("AdminProbe: " + why);
        System.err.println("usage: AdminProbe --bootstrap HOST:PORT [--user U --password P [--mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512]]"
                + " [--security-protocol P] [--command-config FILE] [--include-authorized-operations] [--timeout-ms N]");
        System.exit(64);
    }

    private static String error(Throwable t) {
        return "{\"ok\":false,\"error\":{\"class\":" + str(t.getClass().getName())
                + ",\"message\":" + str(t.getMessage()) + "}}";
    }

    private static String node(Node n) {
        if (n == null || n.isEmpty()) return "null";
        return "{\"id\":" + n.id() + ",\"host\":" + str(n.host()) + ",\"port\":" + n.port()
                + ",\"rack\":" + str(n.rack()) + "}";
    }

    private static String jaasEscape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    /** A JSON string literal (or null). */
    static String str(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
