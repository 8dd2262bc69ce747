package kafkashim.oracle;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;

/**
 * A Kafka Connect 3.9 distributed worker (ConnectDistributed's own start-up, in this JVM) run the way a team runs one
 * against a broker in CI: the worker creates its config, offset and status topics (compacted), a FileStreamSource
 * connector and a FileStreamSink connector are created through the REST API (on an ephemeral port), lines written to
 * the source file must come out in the sink file exactly (and be in the topic exactly once); then the worker is
 * stopped, more lines are appended, the worker is started again and must resume from its stored offsets (the
 * connectors restored from the config topic, the source position from the offsets topic, the sink position from its
 * consumer group) without a duplicate.
 *
 * <pre>
 * java -cp "$(scripts/real-kafka classpath)" kafkashim.oracle.ConnectProbe --bootstrap 127.0.0.1:9092 \
 *      --id c1 --dir /tmp/connect [--eos] [--log-file F] [--wait-ms 60000] [--lines 50]
 * </pre>
 *
 * {@code --eos}: the worker runs with {@code exactly.once.source.support=enabled} (the leader writes the config topic
 * transactionally, the source task's producer is transactional and fenced through the admin client's fenceProducers
 * before the task starts), the source connector requires exactly-once support and the sink and the checks read
 * read_committed.
 *
 * Output, one JSON object per line on stdout: {"event":"ready","phase":1,"ms":...} (startConnect() to the REST
 * API's first answer), {"event":"running","phase":1,"ms":...} (startConnect() to both connectors and their tasks
 * RUNNING), {"event":"output","phase":1,"file":{...},"topic":{...}}, {"event":"offsets","phase":2,...},
 * {"event":"topics","topics":{name:{...}}}, {"event":"done","ok":true|false}; on an exception
 * {"event":"error","class":...,"message":...} (exit 2). Exit 0 when every check held, 1 when one did not.
 */
public final class ConnectProbe {
    private ConnectProbe() {}

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static boolean ok = true;
    private static long waitMs = 60_000;
    // the offset after the last record readTopic read (with --eos a transaction marker may follow it)
    private static long nextAfterLast = -1;

    public static void main(String[] args) throws Exception {
        String bootstrap = null, id = null, dir = null, logFile = null;
        boolean eos = false;
        int lines = 50;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--id": id = args[++i]; break;
                case "--dir": dir = args[++i]; break;
                case "--log-file": logFile = args[++i]; break;
                case "--wait-ms": waitMs = Long.parseLong(args[++i]); break;
                case "--lines": lines = Integer.parseInt(args[++i]); break;
                case "--eos": eos = true; break;
                default:
                    System.err.println("unknown argument " + args[i]);
                    System.exit(64);
            }
        }
        if (bootstrap == null || id == null || dir == null) {
            System.err.println("--bootstrap, --id and --dir are required");
            System.exit(64);
        }
        if (logFile != null) logToFile(logFile);
        try {
            run(bootstrap, id, Path.of(dir), eos, lines);
        } catch (Exception e) {
            emit(Map.of("event", "error", "class", e.getClass().getName(), "message", String.valueOf(e.getMessage())));
            e.printStackTrace();
            System.exit(2);
        }
        emit(Map.of("event", "done", "ok", ok));
        System.exit(ok ? 0 : 1);
    }

    /** Everything at INFO into the file, for reading what the worker did; stderr keeps WARN and above. */
    private static void logToFile(String path) throws Exception {
        org.apache.log4j.Logger root = org.apache.log4j.Logger.getRootLogger();
        for (java.util.Enumeration<?> e = root.getAllAppenders(); e.hasMoreElements(); ) {
            Object a = e.nextElement();
            if (a instanceof org.apache.log4j.AppenderSkeleton) {
                ((org.apache.log4j.AppenderSkeleton) a).setThreshold(org.apache.log4j.Level.WARN);
            }
        }
        root.addAppender(new org.apache.log4j.FileAppender(
            new org.apache.log4j.PatternLayout("[%d] %p [%t] %m (%c)%n"), path, false));
        root.setLevel(org.apache.log4j.Level.INFO);
        // the REST server's Jetty and Jersey chatter is of no interest here
        org.apache.log4j.Logger.getLogger("org.eclipse.jetty").setLevel(org.apache.log4j.Level.WARN);
        org.apache.log4j.Logger.getLogger("org.reflections").setLevel(org.apache.log4j.Level.ERROR);
    }

    static Map<String, String> workerProps(String bootstrap, String id, boolean eos) {
        Map<String, String> p = new HashMap<>();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", id);
        p.put("config.storage.topic", id + "-configs");
        p.put("offset.storage.topic", id + "-offsets");
        p.put("status.storage.topic", id + "-status");
        p.put("config.storage.replication.factor", "1");
        p.put("offset.storage.replication.factor", "1");
        p.put("status.storage.replication.factor", "1");
        p.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        p.put("listeners", "http://127.0.0.1:0");
        // the built-in plugins carry ServiceLoader manifests (KIP-898): no reflective scan of the whole classpath
        p.put("plugin.discovery", "service_load");
        // the sink file is flushed and both sides' offsets committed at this interval (60 s by default)
        p.put("offset.flush.interval.ms", "1000");
        if (eos) p.put("exactly.once.source.support", "enabled");
        return p;
    }

    static void run(String bootstrap, String id, Path dir, boolean eos, int lines) throws Exception {
        Files.createDirectories(dir);
        Path in = dir.resolve("in.txt"), out = dir.resolve("out.txt");
        Files.deleteIfExists(in);
        Files.deleteIfExists(out);
        Files.createFile(in);
        String topic = id + "-lines";
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        List<String> expected = new ArrayList<>();
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);

            // ---- phase 1: a fresh worker; half of the lines are there before the source starts, half come once those
            // are through (in the sink file)
            append(in, expected, 1, lines / 2);
            long t0 = System.nanoTime();
            Connect<?> connect = new ConnectDistributed().startConnect(workerProps(bootstrap, id, eos));
            String url = connect.rest().advertisedUrl().toString().replaceAll("/$", "");
            waitReady(url, 1, t0);
            Map<String, Object> source = new TreeMap<>(Map.of(
                "connector.class", "FileStreamSource", "tasks.max", "1", "file", in.toString(), "topic", topic));
            Map<String, Object> sink = new TreeMap<>(Map.of(
                "connector.class", "FileStreamSink", "tasks.max", "1", "file", out.toString(), "topics", topic));
            if (eos) {
                source.put("exactly.once.support", "required");
                source.put("transaction.boundary", "poll");
                sink.put("consumer.override.isolation.level", "read_committed");
            }
            create(url, id + "-source", source);
            create(url, id + "-sink", sink);
            waitRunning(url, id, 1, t0);
            waitForSink(out, lines / 2);
            append(in, expected, lines / 2 + 1, lines);
            checkOutput(1, bootstrap, topic, out, expected, eos);
            checkOffsets(1, url, id, in, bootstrap, topic);
            long t1 = System.nanoTime();
            connect.stop();
            emit(Map.of("event", "stopped", "phase", 1, "ms", (System.nanoTime() - t1) / 1_000_000));

            // ---- phase 2: lines appended while the worker is down; the restarted worker resumes from its offsets
            append(in, expected, lines + 1, lines + lines / 2);
            t0 = System.nanoTime();
            connect = new ConnectDistributed().startConnect(workerProps(bootstrap, id, eos));
            url = connect.rest().advertisedUrl().toString().replaceAll("/$", "");
            waitReady(url, 2, t0);
            waitRunning(url, id, 2, t0);
            waitForSink(out, lines + lines / 2);
            append(in, expected, lines + lines / 2 + 1, 2 * lines);
            checkOutput(2, bootstrap, topic, out, expected, eos);
            checkOffsets(2, url, id, in, bootstrap, topic);
            List<String> names = new ArrayList<>();
        JSON.readTree(http("GET", url + "/connectors", null).body).forEach(n -> names.add(n.asText()));
        names.sort(null);
        emit(Map.of("event", "connectors", "got", names));
            describeTopics(admin, List.of(id + "-configs", id + "-offsets", id + "-status", topic));
            t1 = System.nanoTime();
            connect.stop();
            emit(Map.of("event", "stopped", "phase", 2, "ms", (System.nanoTime() - t1) / 1_000_000));
        }
    }

    static void append(Path in, List<String> expected, int from, int to) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int i = from; i <= to; i++) {
            String line = String.format("line %04d %s", i, "x".repeat(i % 7));
            expected.add(line);
            b.append(line).append('\n');
        }
        Files.writeString(in, b, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    }

    static final class Resp {
        final int code;
        final String body;

        Resp(int code, String body) {
            this.code = code;
            this.body = body;
        }
    }

    static Resp http(String method, String url, String body) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
            .header("Content-Type", "application/json").header("Accept", "application/json");
        r.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        HttpResponse<String> resp = HTTP.send(r.build(), HttpResponse.BodyHandlers.ofString());
        return new Resp(resp.statusCode(), resp.body());
    }

    static void waitReady(String url, int phase, long t0) throws Exception {
        String[] last = {""};
        waitFor("the REST API of " + url, () -> {
            try {
                Resp r = http("GET", url + "/connectors", null);
                last[0] = r.code + " " + r.body;
                return r.code == 200;
            } catch (Exception e) {
                last[0] = e.toString();
                return false;
            }
        }, last);
        emit(Map.of("event", "ready", "phase", phase, "ms", (System.nanoTime() - t0) / 1_000_000));
    }

    /** POST /connectors, retried while the worker answers 409 (a rebalance under way) or 5xx. */
    static void create(String url, String name, Map<String, Object> config) throws Exception {
        String body = JSON.writeValueAsString(Map.of("name", name, "config", config));
        int[] code = {0};
        String[] last = {""};
        waitFor("POST /connectors " + name, () -> {
            try {
                Resp r = http("POST", url + "/connectors", body);
                code[0] = r.code;
                last[0] = r.code + " " + r.body;
                return r.code != 409 && r.code < 500;
            } catch (Exception e) {
                last[0] = e.toString();
                return false;
            }
        }, last);
        emit(Map.of("event", "created", "connector", name, "code", code[0]));
        if (code[0] != 201) fail("POST /connectors " + name + ": " + last[0]);
    }

    static void waitRunning(String url, String id, int phase, long t0) throws Exception {
        Map<String, String> states = new TreeMap<>();
        String[] last = {""};
        waitFor("both connectors and their tasks RUNNING", () -> {
            try {
                for (String name : List.of("source", "sink")) {
                    Resp r = http("GET", url + "/connectors/" + id + "-" + name + "/status", null);
                    last[0] = r.code + " " + r.body;
                    if (r.code != 200) return false;
                    JsonNode s = JSON.readTree(r.body);
                    states.put(name, s.path("connector").path("state").asText());
                    JsonNode tasks = s.path("tasks");
                    states.put(name + "-0", tasks.size() == 1 ? tasks.get(0).path("state").asText() : "tasks=" + tasks.size());
                }
                return states.values().stream().allMatch("RUNNING"::equals);
            } catch (Exception e) {
                last[0] = e.toString();
                return false;
            }
        }, last);
        emit(Map.of("event", "running", "phase", phase, "ms", (System.nanoTime() - t0) / 1_000_000, "states", states));
    }

    /**
     * Until the sink file holds {@code count} lines. RUNNING comes before the source task's first poll: lines appended
     * only after this wait come in a later poll (with --eos, a transaction of their own, as the phase means them to).
     */
    static void waitForSink(Path out, int count) throws Exception {
        String[] last = {"no file"};
        waitFor("the sink file to hold " + count + " lines", () -> {
            try {
                int got = Files.exists(out) ? Files.readAllLines(out, StandardCharsets.UTF_8).size() : 0;
                last[0] = got + " lines";
                return got >= count;
            } catch (IOException e) {
                last[0] = e.toString();
                return false;
            }
        }, last);
    }

    static void checkOutput(int phase, String bootstrap, String topic, Path out, List<String> expected, boolean eos)
            throws Exception {
        List<String> got = new ArrayList<>();
        String[] last = {""};
        boolean came = waitFor0(() -> {
            try {
                got.clear();
                if (Files.exists(out)) got.addAll(Files.readAllLines(out, StandardCharsets.UTF_8));
                last[0] = got.size() + " lines";
                return got.size() >= expected.size();
            } catch (IOException e) {
                last[0] = e.toString();
                return false;
            }
        });
        List<String> records = readTopic(bootstrap, topic, expected.size(), eos);
        Map<String, Object> o = new TreeMap<>();
        o.put("event", "output");
        o.put("phase", phase);
        o.put("file", summary(got, expected));
        o.put("topic", summary(records, expected));
        emit(o);
        if (!came || !got.equals(expected)) fail("phase " + phase + ": the sink file (" + last[0] + ") is not the input");
        if (!records.equals(expected)) fail("phase " + phase + ": the topic does not hold the input exactly once");
    }

    static Map<String, Object> summary(List<String> got, List<String> expected) {
        Map<String, Object> s = new TreeMap<>();
        s.put("count", got.size());
        s.put("expected", expected.size());
        s.put("exact", got.equals(expected));
        s.put("distinct", got.stream().distinct().count());
        if (!got.equals(expected)) {
            int i = 0;
            while (i < got.size() && i < expected.size() && got.get(i).equals(expected.get(i))) i++;
            s.put("first_difference", i);
            s.put("got_there", got.subList(i, Math.min(got.size(), i + 3)));
        }
        return s;
    }

    /** The whole topic from the beginning (read_committed with --eos), until the end offsets of its partitions. */
    static List<String> readTopic(String bootstrap, String topic, int expected, boolean eos) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, eos ? "read_committed" : "read_uncommitted");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            consumer.partitionsFor(topic).forEach(pi -> parts.add(new TopicPartition(topic, pi.partition())));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts);
            long deadline = System.currentTimeMillis() + waitMs;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : parts) done &= consumer.position(tp) >= end.get(tp);
                if (done) break;
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                    nextAfterLast = r.offset() + 1;
                }
            }
        }
        return values;
    }

    /**
     * Both connectors' offsets through GET /connectors/NAME/offsets, waited for until they are where the data is: the
     * source's position at the input file's size (the offsets topic), the sink's consumer group offset (OffsetFetch)
     * just after the topic's last record (with --eos the end offset is one more: the last transaction's marker).
     */
    static void checkOffsets(int phase, String url, String id, Path in, String bootstrap, String topic) throws Exception {
        long bytes = Files.size(in);
        long end = endOffset(bootstrap, topic), next = nextAfterLast;
        Map<String, Object> o = new TreeMap<>();
        boolean there = waitFor0(() -> {
            try {
                List<Object> source = offsets(url, id + "-source"), sink = offsets(url, id + "-sink");
                o.put("source", source);
                o.put("sink", sink);
                return canonical(source).equals(canonical(List.of(Map.of("partition", Map.of("filename", in.toString()),
                        "offset", Map.of("position", bytes)))))
                    && canonical(sink).equals(canonical(List.of(Map.of("partition",
                        Map.of("kafka_topic", topic, "kafka_partition", 0), "offset", Map.of("kafka_offset", next)))));
            } catch (Exception e) {
                o.put("error", e.toString());
                return false;
            }
        });
        o.put("event", "offsets");
        o.put("phase", phase);
        o.put("file_bytes", bytes);
        o.put("end_offset", end);
        o.put("after_last_record", next);
        o.put("ok", there);
        emit(o);
        if (!there) fail("phase " + phase + ": the connectors' offsets are not where the data is");
    }

    /** JSON text with map keys sorted: 698 read back as an Integer equals 698L. */
    static String canonical(Object v) throws Exception {
        return JSON.writer().with(com.fasterxml.jackson.databind.SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .writeValueAsString(v);
    }

    static long endOffset(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            return consumer.endOffsets(List.of(tp)).get(tp);
        }
    }

    static List<Object> offsets(String url, String name) throws Exception {
        Resp r = http("GET", url + "/connectors/" + name + "/offsets", null);
        if (r.code != 200) throw new IllegalStateException("GET /connectors/" + name + "/offsets: " + r.code + " " + r.body);
        List<Object> list = new ArrayList<>();
        for (JsonNode o : JSON.readTree(r.body).path("offsets")) {
            Map<String, Object> e = new TreeMap<>();
            e.put("partition", JSON.convertValue(o.path("partition"), Map.class));
            e.put("offset", JSON.convertValue(o.path("offset"), Map.class));
            list.add(e);
        }
        return list;
    }

    static void describeTopics(Admin admin, List<String> names) throws Exception {
        Map<String, TopicDescription> descriptions = admin.describeTopics(names).allTopicNames().get(30, TimeUnit.SECONDS);
        List<ConfigResource> resources = new ArrayList<>();
        for (String n : names) resources.add(new ConfigResource(ConfigResource.Type.TOPIC, n));
        Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get(30, TimeUnit.SECONDS);
        Map<String, Object> topics = new TreeMap<>();
        for (String n : names) {
            Map<String, Object> t = new TreeMap<>();
            t.put("partitions", descriptions.get(n).partitions().size());
            t.put("replicas", descriptions.get(n).partitions().get(0).replicas().size());
            Map<String, String> dynamic = new TreeMap<>();
            configs.get(new ConfigResource(ConfigResource.Type.TOPIC, n)).entries().stream()
                .filter(e -> e.source() == org.apache.kafka.clients.admin.ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG)
                .forEach(e -> dynamic.put(e.name(), e.value()));
            t.put("configs", dynamic);
            topics.put(n, t);
        }
        emit(Map.of("event", "topics", "topics", topics));
    }

    static void waitFor(String what, BooleanSupplier condition, String[] last) throws Exception {
        if (!waitFor0(condition)) throw new IllegalStateException("timed out waiting for " + what + ": " + last[0]);
    }

    static boolean waitFor0(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + waitMs;
        while (System.currentTimeMillis() < deadline) {
            if (condition.getAsBoolean()) return true;
            Thread.sleep(100);
        }
        return condition.getAsBoolean();
    }

    static void fail(String why) {
        ok = false;
        emit(Map.of("event", "failed", "why", why));
    }

    private static void emit(Map<String, ?> object) {
        JsonLines.emit(object);
    }
}
