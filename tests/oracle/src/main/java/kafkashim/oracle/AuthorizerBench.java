package kafkashim.oracle;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.SecurityUtils;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.security.authorizer.AclEntry;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * Kafka's own StandardAuthorizer on the ACLs and requests bench/authorizer.py wrote, timed after JIT warm-up.
 *
 * <pre>
 * java -Xmx2g -cp "$(scripts/real-kafka classpath)" kafkashim.oracle.AuthorizerBench \
 *      --acls acls.tsv --requests requests.tsv --by-type bytype.tsv --super-users 'User:admin' \
 *      --out-dir DIR [--check-seconds 4] [--warmup-seconds 3] [--measure-seconds 2]
 * </pre>
 *
 * Input (tab-separated, enum codes as Kafka's wire codes):
 *   acls.tsv      resourceType patternType name principal host operation permissionType
 *   requests.tsv  principal host operation resourceType name
 *   bytype.tsv    principal host operation resourceType
 *
 * Phases: load (StandardAuthorizer.configure, loadSnapshot, completeInitialLoad; heap delta after System.gc());
 * check (one untimed pass per call kind over the streams, as far as --check-seconds allows, writing each answer
 * to DIR/kafka-authorize.txt, kafka-ops.txt and kafka-bytype.txt for the Python side to compare); warm-up (each kind
 * again, untimed, for --warmup-seconds / 4, cycling through its stream); measure (each call kind for
 * --measure-seconds, cycling through its stream). Prints one JSON object on stdout. Each measurement records wall time
 * and the JVM's process CPU time (timing thread plus GC and JIT threads; unlike wall time it does not count time other
 * processes on a shared machine took), and the timing thread's own CPU time.
 *
 * Calls, as the broker makes them:
 *   authorize                authorize(ctx, [Action(op, LITERAL name, 1, logIfAllowed=true, logIfDenied=true)])
 *   authorize_nolog          the same Action with both log flags false (the pure decision cost)
 *   authorized_operations    AuthHelper.authorizedOperations: one authorize call with an Action(op, name, 1, false, false)
 *                            per AclEntry.supportedOperations(type), folded into the KIP-430 bitfield
 *   by_resource_type         authorizeByResourceType(ctx, op, type) (Authorizer's default method in 3.9)
 */
public final class AuthorizerBench {
    private AuthorizerBench() {}

    /** The request context the broker builds for a connection: principal, client address, listener. */
    static final class Ctx implements AuthorizableRequestContext {
        private final KafkaPrincipal principal;
        private final InetAddress address;

        Ctx(KafkaPrincipal principal, InetAddress address) {
            this.principal = principal;
            this.address = address;
        }

        @Override public String listenerName() { return "SASL_PLAINTEXT"; }
        @Override public SecurityProtocol securityProtocol() { return SecurityProtocol.SASL_PLAINTEXT; }
        @Override public KafkaPrincipal principal() { return principal; }
        @Override public InetAddress clientAddress() { return address; }
        @Override public int requestType() { return 0; } // Produce: the audit line names a real API
        @Override public int requestVersion() { return 0; }
        @Override public String clientId() { return "bench"; }
        @Override public int correlationId() { return 0; }
    }

    static final class Request {
        Ctx ctx;
        List<Action> logged;
        List<Action> unlogged;
        List<Action> supported;
        List<AclOperation> supportedOps;
    }

    static final class ByType {
        Ctx ctx;
        AclOperation op;
        ResourceType type;
    }

    /** A call kind over its stream; returns 1 for ALLOWED (or the bitfield for authorized operations). */
    interface Kind {
        int size();
        int call(int i);
    }

    private static final Map<String, String> STRINGS = new HashMap<>();
    private static final Map<String, Ctx> CONTEXTS = new HashMap<>();

    static String intern(String s) {
        String seen = STRINGS.putIfAbsent(s, s);
        return seen == null ? s : seen;
    }

    static Ctx ctx(String principal, String host) throws IOException {
        String key = principal + "\t" + host;
        Ctx c = CONTEXTS.get(key);
        if (c == null) {
            c = new Ctx(SecurityUtils.parseKafkaPrincipal(principal), InetAddress.getByName(host));
            CONTEXTS.put(key, c);
        }
        return c;
    }

    static List<String[]> readTsv(String path, int columns) throws IOException {
        List<String[]> rows = new ArrayList<>();
        try (BufferedReader in = Files.newBufferedReader(Paths.get(path), StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty()) continue;
                String[] f = line.split("\t", -1);
                if (f.length != columns) throw new IOException(path + ": expected " + columns + " columns: " + line);
                for (int i = 0; i < f.length; i++) f[i] = intern(f[i]);
                rows.add(f);
            }
        }
        return rows;
    }

    /** CPU time of the whole JVM (timing thread, GC and JIT threads), immune to other processes on the machine. */
    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static long threadCpuNanos() {
        return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }

    static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 2; i++) System.gc();
        return rt.totalMemory() - rt.freeMemory();
    }

    public static void main(String[] args) throws Exception {
        String aclsPath = null, requestsPath = null, byTypePath = null, outDir = null, superUsers = "";
        boolean allowEveryone = false;
        double checkSeconds = 4, warmupSeconds = 3, measureSeconds = 2;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--acls": aclsPath = args[++i]; break;
                case "--requests": requestsPath = args[++i]; break;
                case "--by-type": byTypePath = args[++i]; break;
                case "--out-dir": outDir = args[++i]; break;
                case "--super-users": superUsers = args[++i]; break;
                case "--allow-everyone-if-no-acl-found": allowEveryone = true; break;
                case "--check-seconds": checkSeconds = Double.parseDouble(args[++i]); break;
                case "--warmup-seconds": warmupSeconds = Double.parseDouble(args[++i]); break;
                case "--measure-seconds": measureSeconds = Double.parseDouble(args[++i]); break;
                default:
                    System.err.println("AuthorizerBench: unknown argument " + a);
                    System.exit(64);
            }
        }
        if (aclsPath == null || requestsPath == null || byTypePath == null || outDir == null) {
            System.err.println("AuthorizerBench: --acls, --requests, --by-type and --out-dir are required");
            System.exit(64);
        }

        // ---- load
        List<String[]> aclRows = readTsv(aclsPath, 7);
        long heapBefore = usedHeap();
        long t0 = System.nanoTime();
        long c0 = processCpuNanos();
        Map<Uuid, StandardAcl> snapshot = new HashMap<>(aclRows.size() * 2);
        long id = 1;
        for (String[] f : aclRows) {
            StandardAcl acl = new StandardAcl(
                ResourceType.fromCode(Byte.parseByte(f[0])), f[2], PatternType.fromCode(Byte.parseByte(f[1])),
                f[3], f[4], AclOperation.fromCode(Byte.parseByte(f[5])), AclPermissionType.fromCode(Byte.parseByte(f[6])));
            snapshot.put(new Uuid(0x5EEDL, id++), acl);
        }
        long t1 = System.nanoTime();
        long c1 = processCpuNanos();
        StandardAuthorizer authorizer = new StandardAuthorizer();
        Map<String, Object> config = new HashMap<>();
        config.put("super.users", superUsers);
        config.put("allow.everyone.if.no.acl.found", Boolean.toString(allowEveryone));
        authorizer.configure(config);
        authorizer.loadSnapshot(snapshot);
        authorizer.completeInitialLoad();
        long t2 = System.nanoTime();
        long c2 = processCpuNanos();
        snapshot = null;
        long heapAfter = usedHeap();
        if (authorizer.aclCount() != aclRows.size()) {
            throw new IllegalStateException("StandardAuthorizer holds " + authorizer.aclCount() + " ACLs, expected " + aclRows.size());
        }

        // ---- streams (Action objects and contexts built up front: the timed loops measure the authorizer)
        List<Request> requests = new ArrayList<>();
        for (String[] f : readTsv(requestsPath, 5)) {
            Request r = new Request();
            r.ctx = ctx(f[0], f[1]);
            AclOperation op = AclOperation.fromCode(Byte.parseByte(f[2]));
            ResourceType type = ResourceType.fromCode(Byte.parseByte(f[3]));
            ResourcePattern pattern = new ResourcePattern(type, f[4], PatternType.LITERAL);
            r.logged = Collections.singletonList(new Action(op, pattern, 1, true, true));
            r.unlogged = Collections.singletonList(new Action(op, pattern, 1, false, false));
            r.supportedOps = new ArrayList<>(AclEntry.supportedOperations(type));
            List<Action> actions = new ArrayList<>();
            for (AclOperation s : r.supportedOps) actions.add(new Action(s, pattern, 1, false, false));
            r.supported = actions;
            requests.add(r);
        }
        List<ByType> byTypes = new ArrayList<>();
        for (String[] f : readTsv(byTypePath, 4)) {
            ByType b = new ByType();
            b.ctx = ctx(f[0], f[1]);
            b.op = AclOperation.fromCode(Byte.parseByte(f[2]));
            b.type = ResourceType.fromCode(Byte.parseByte(f[3]));
            byTypes.add(b);
        }

        final StandardAuthorizer az = authorizer;
        Map<String, Kind> kinds = new LinkedHashMap<>();
        kinds.put("authorize", new Kind() {
            public int size() { return requests.size(); }
            public int call(int i) {
                Request r = requests.get(i);
                return az.authorize(r.ctx, r.logged).get(0) == AuthorizationResult.ALLOWED ? 1 : 0;
            }
        });
        kinds.put("authorize_nolog", new Kind() {
            public int size() { return requests.size(); }
            public int call(int i) {
                Request r = requests.get(i);
                return az.authorize(r.ctx, r.unlogged).get(0) == AuthorizationResult.ALLOWED ? 1 : 0;
            }
        });
        kinds.put("authorized_operations", new Kind() {
            public int size() { return requests.size(); }
            public int call(int i) {
                Request r = requests.get(i);
                List<AuthorizationResult> results = az.authorize(r.ctx, r.supported);
                int bits = 0;
                for (int k = 0; k < results.size(); k++) {
                    if (results.get(k) == AuthorizationResult.ALLOWED) bits |= 1 << r.supportedOps.get(k).code();
                }
                return bits;
            }
        });
        kinds.put("by_resource_type", new Kind() {
            public int size() { return byTypes.size(); }
            public int call(int i) {
                ByType b = byTypes.get(i);
                return az.authorizeByResourceType(b.ctx, b.op, b.type) == AuthorizationResult.ALLOWED ? 1 : 0;
            }
        });

        // ---- check: one untimed pass per kind, answers to files (also the first part of the warm-up)
        long warmStart = System.nanoTime();
        Map<String, int[]> checked = new LinkedHashMap<>(); // kind -> {count, allowed}
        String[][] files = {{"authorize", "kafka-authorize.txt"}, {"authorized_operations", "kafka-ops.txt"},
                            {"by_resource_type", "kafka-bytype.txt"}};
        for (String[] kf : files) {
            Kind kind = kinds.get(kf[0]);
            long deadline = System.nanoTime() + (long) (checkSeconds * 1e9);
            int n = 0, allowed = 0;
            try (BufferedWriter out = Files.newBufferedWriter(Paths.get(outDir, kf[1]), StandardCharsets.UTF_8)) {
                for (; n < kind.size(); n++) {
                    if ((n & 15) == 0 && n > 0 && System.nanoTime() > deadline) break;
                    int v = kind.call(n);
                    if (v != 0) allowed++;
                    out.write(Integer.toString(v));
                    out.write('\n');
                }
            }
            checked.put(kf[0], new int[] {n, allowed});
        }
        // ---- warm-up: after the check, every kind again for warmupSeconds / kinds, cycling through its stream
        long sink = 0;
        long warmCalls = 0;
        for (Kind kind : kinds.values()) {
            long deadline = System.nanoTime() + (long) (warmupSeconds / kinds.size() * 1e9);
            int i = 0;
            do {
                sink += kind.call(i);
                warmCalls++;
                if (++i == kind.size()) i = 0;
            } while ((warmCalls & 15) != 0 || System.nanoTime() < deadline);
        }
        double warmedSeconds = (System.nanoTime() - warmStart) / 1e9;

        // ---- measure
        Map<String, double[]> measured = new LinkedHashMap<>(); // kind -> {calls, wall s, process CPU s, thread CPU s}
        for (Map.Entry<String, Kind> e : kinds.entrySet()) {
            Kind kind = e.getValue();
            int size = kind.size();
            System.gc();
            long cpuStart = processCpuNanos();
            long threadStart = threadCpuNanos();
            long start = System.nanoTime();
            long deadline = start + (long) (measureSeconds * 1e9);
            long calls = 0;
            int i = 0;
            long now = start;
            while (true) {
                sink += kind.call(i);
                calls++;
                if (++i == size) i = 0;
                if ((calls & 15) == 0 && (now = System.nanoTime()) > deadline) break;
            }
            long cpuEnd = processCpuNanos();
            long threadEnd = threadCpuNanos();
            measured.put(e.getKey(), new double[] {calls, (now - start) / 1e9, (cpuEnd - cpuStart) / 1e9, (threadEnd - threadStart) / 1e9});
        }

        // ---- report
        StringBuilder json = new StringBuilder();
        json.append('{');
        json.append("\"acls\":").append(aclRows.size());
        json.append(",\"requests\":").append(requests.size());
        json.append(",\"by_type_keys\":").append(byTypes.size());
        json.append(",\"java\":\"").append(System.getProperty("java.vm.name")).append(' ')
            .append(System.getProperty("java.version")).append('"');
        json.append(",\"build_acl_objects_seconds\":").append(fmt((t1 - t0) / 1e9));
        json.append(",\"build_acl_objects_cpu_seconds\":").append(fmt((c1 - c0) / 1e9));
        json.append(",\"load_seconds\":").append(fmt((t2 - t1) / 1e9));
        json.append(",\"load_cpu_seconds\":").append(fmt((c2 - c1) / 1e9));
        json.append(",\"heap_delta_bytes\":").append(heapAfter - heapBefore);
        json.append(",\"warmup_seconds\":").append(fmt(warmedSeconds));
        json.append(",\"warmup_calls\":").append(warmCalls);
        json.append(",\"check\":{");
        boolean first = true;
        for (Map.Entry<String, int[]> e : checked.entrySet()) {
            if (!first) json.append(',');
            first = false;
            json.append('"').append(e.getKey()).append("\":{\"count\":").append(e.getValue()[0])
                .append(",\"allowed\":").append(e.getValue()[1]).append('}');
        }
        json.append("},\"measure\":{");
        first = true;
        for (Map.Entry<String, double[]> e : measured.entrySet()) {
            if (!first) json.append(',');
            first = false;
            double[] v = e.getValue();
            json.append('"').append(e.getKey()).append("\":{\"calls\":").append((long) v[0])
                .append(",\"seconds\":").append(fmt(v[1])).append(",\"per_second\":").append(fmt(v[0] / v[1]))
                .append(",\"cpu_seconds\":").append(fmt(v[2])).append(",\"per_cpu_second\":").append(fmt(v[0] / v[2]))
                .append(",\"thread_cpu_seconds\":").append(fmt(v[3])).append('}');
        }
        json.append("},\"sink\":").append(sink).append('}');
        System.out.println(json);
    }

    static String fmt(double v) {
        return String.format(Locale.ROOT, "%.6g", v);
    }
}
