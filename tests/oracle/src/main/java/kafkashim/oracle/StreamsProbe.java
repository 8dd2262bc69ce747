package kafkashim.oracle;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;

/**
 * A small Kafka Streams application run the way a team runs one against a broker in CI: it creates its input and
 * output topics, feeds them with a plain producer, runs a topology that needs what Streams needs from a broker, reads
 * the output back with a read_committed consumer and checks it exactly, then restarts with its state directory wiped
 * (restored from the changelogs) and checks that the counts go on from where they were.
 *
 * <pre>
 * java -cp "$(scripts/real-kafka classpath)" kafkashim.oracle.StreamsProbe --bootstrap 127.0.0.1:9092 \
 *      --app-id wc1 --state-dir /tmp/streams [--guarantee exactly_once_v2|at_least_once] [--log-file F]
 *      [--wait-ms 60000] [--threads 1] [--scenario full|crash|recover|stall] [--base-ms MS] [--repeat 1]
 * </pre>
 *
 * Scenarios: {@code full} (the default) as above; {@code crash} processes the words inside a transaction it never
 * commits and halts the JVM; {@code recover}, run next on the same state directory, fences the crashed producer and
 * checks that the output holds each count exactly once (see {@link #crash} and {@link #recover}); give it the
 * crash's {@code --base-ms} (its first line, {"event":"base","ms":...}: the clicks' event time).
 *
 * The topology (one stream thread):
 * <ul>
 *   <li>word count: lines of {@code <app>-words} split into words, {@code groupBy} word (a repartition topic),
 *       {@code count} into the store {@code word-counts} (a compacted changelog), to {@code <app>-word-counts};</li>
 *   <li>a stream-table join: {@code <app>-clicks} (user -> page) joined with the table {@code <app>-users}
 *       (user -> region; its own changelog, as topology optimization is off), to {@code <app>-enriched};</li>
 *   <li>a windowed aggregation: clicks counted per user in 10 s tumbling windows of the records' own timestamps
 *       (store {@code clicks-per-window}, a compact,delete changelog), to {@code <app>-clicks-per-window} keyed
 *       {@code user@N}, N the window's start in seconds after the first click's window.</li>
 * </ul>
 * The record cache is off, so every update is forwarded: the outputs are exactly determined by the input.
 *
 * Output, one JSON object per line on stdout: {"event":"running","phase":1,"ms":...} (start() to RUNNING),
 * {"event":"output","phase":1,"topic":...,"got":{key:[values in order]},"expected":{...}},
 * {"event":"restored","stores":{store:records}}, {"event":"queried","store":...,"got":{...},"expected":{...}},
 * {"event":"purged","partitions":{"topic-p":[earliest,committed,end]}}, {"event":"topics","topics":{name:{...}}},
 * {"event":"done","ok":true|false}; on an exception {"event":"error","class":...,"message":...} (exit 2).
 * Exit 0 when every check held, 1 when one did not.
 */
public final class StreamsProbe {
    private StreamsProbe() {}

    static final long WINDOW_MS = 10_000L;
    // The clicks' event time: a minute ago, on a window boundary. Not a fixed date: the window store's changelog is
    // compact,delete with retention.ms = window size + grace, and a broker's log cleaner deletes records older than
    // that from it (Kafka 3.9 does, within log.cleaner.backoff.ms), so restoring old clicks would restore nothing.
    // --base-ms gives recover the crashed run's (printed as {"event":"base"}), so both expect the same windows.
    static long BASE = (System.currentTimeMillis() - 60_000) / WINDOW_MS * WINDOW_MS;
    static final int PARTITIONS = 2;

    static final List<String> LINES_1 = List.of(
        "the quick brown fox", "jumps over the lazy dog", "the dog barks", "a fox and a dog", "the end");
    static final List<String> LINES_2 = List.of("the fox is back", "a dog again");
    // user -> region; dave clicks but has no region, so the inner join drops his clicks
    static final Map<String, String> USERS = Map.of("alice", "eu", "bob", "us", "carol", "apac");
    // (user, page, offset from BASE in ms): windows 0 and 1 for alice, 0 and 2 for bob
    static final List<Object[]> CLICKS = List.of(
        new Object[] {"alice", "home", 1_000L}, new Object[] {"bob", "home", 2_000L},
        new Object[] {"alice", "cart", 3_000L}, new Object[] {"dave", "home", 4_000L},
        new Object[] {"alice", "pay", 12_000L}, new Object[] {"carol", "home", 13_000L},
        new Object[] {"bob", "cart", 25_000L}, new Object[] {"bob", "pay", 26_000L});

    private static final Map<String, Object> OUT = new TreeMap<>();
    private static boolean ok = true;
    private static long waitMs = 60_000;
    private static int threads = 1;
    private static int repeat = 1;

    public static void main(String[] args) throws Exception {
        String bootstrap = null, appId = null, stateDir = null, guarantee = StreamsConfig.EXACTLY_ONCE_V2, logFile = null;
        String scenario = "full";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--app-id": appId = args[++i]; break;
                case "--state-dir": stateDir = args[++i]; break;
                case "--guarantee": guarantee = args[++i]; break;
                case "--log-file": logFile = args[++i]; break;
                case "--wait-ms": waitMs = Long.parseLong(args[++i]); break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--scenario": scenario = args[++i]; break;
                case "--base-ms": BASE = Long.parseLong(args[++i]); break;
                case "--repeat": repeat = Integer.parseInt(args[++i]); break;
                default:
                    System.err.println("unknown argument " + args[i]);
                    System.exit(64);
            }
        }
        if (bootstrap == null || appId == null || stateDir == null) {
            System.err.println("--bootstrap, --app-id and --state-dir are required");
            System.exit(64);
        }
        if (logFile != null) logToFile(logFile);
        emit(Map.of("event", "base", "ms", BASE));
        try {
            switch (scenario) {
                case "full": run(bootstrap, appId, stateDir, guarantee); break;
                case "crash": crash(bootstrap, appId, stateDir); break;
                case "recover": recover(bootstrap, appId, stateDir); break;
                case "stall": stall(bootstrap, appId, stateDir); break;
                default: throw new IllegalArgumentException("--scenario full|crash|recover|stall, not " + scenario);
            }
        } catch (Exception e) {
            emit(Map.of("event", "error", "class", e.getClass().getName(), "message", String.valueOf(e.getMessage())));
            e.printStackTrace();
            System.exit(2);
        }
        emit(Map.of("event", "done", "ok", ok));
        System.exit(ok ? 0 : 1);
    }

    /** Everything at INFO into the file, for reading what Streams did; stderr keeps WARN and above. */
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
    }

    static void run(String bootstrap, String appId, String stateDir, String guarantee) throws Exception {
        String words = appId + "-words", users = appId + "-users", clicks = appId + "-clicks";
        String wordCounts = appId + "-word-counts", enriched = appId + "-enriched", perWindow = appId + "-clicks-per-window";
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps);
             KafkaProducer<String, String> producer = producer(bootstrap)) {
            setUp(admin, producer, appId);
            Topology topology = topology(words, users, clicks, wordCounts, enriched, perWindow);
            Properties props = streamsProps(bootstrap, appId, stateDir, guarantee);

            // ---- phase 1: a fresh application
            KafkaStreams streams = start(topology, props, 1, null);
            Map<String, List<Long>> expectedCounts = new TreeMap<>();
            Map<String, Long> totals = new TreeMap<>();
            long fed = System.nanoTime();
            for (int r = 0; r < repeat; r++) {
                for (int i = 0; i < LINES_1.size(); i++) {
                    producer.send(new ProducerRecord<>(words, "line-" + i, LINES_1.get(i)));
                    countWords(LINES_1.get(i), totals, expectedCounts);
                }
            }
            Map<String, List<String>> expectedEnriched = new TreeMap<>();
            Map<String, List<Long>> expectedWindows = new TreeMap<>();
            Map<String, Long> windowTotals = new TreeMap<>();
            for (Object[] c : CLICKS) {
                String user = (String) c[0], page = (String) c[1];
                long ts = BASE + (Long) c[2];
                producer.send(new ProducerRecord<>(clicks, null, ts, user, page));
                if (USERS.containsKey(user)) {
                    expectedEnriched.computeIfAbsent(user, k -> new ArrayList<>()).add(page + "@" + USERS.get(user));
                }
                String wk = windowKey(user, ts - ts % WINDOW_MS);
                long n = windowTotals.merge(wk, 1L, Long::sum);
                expectedWindows.computeIfAbsent(wk, k -> new ArrayList<>()).add(n);
            }
            producer.flush();

            Map<TopicPartition, Long> positions = new HashMap<>();
            check(1, wordCounts, readUntil(bootstrap, wordCounts, true, expectedCounts, positions), expectedCounts);
            emit(Map.of("event", "counted", "phase", 1, "ms", (System.nanoTime() - fed) / 1_000_000));
            check(1, enriched, readUntil(bootstrap, enriched, false, expectedEnriched, new HashMap<>()), expectedEnriched);
            check(1, perWindow, readUntil(bootstrap, perWindow, true, expectedWindows, new HashMap<>()), expectedWindows);

            // ---- phase 2: the same application again, its local state gone: restored from the changelogs
            closeAndLeave(streams);
            // as a new CI container starts: no local state at all (cleanUp() leaves the process id file)
            streams.cleanUp();
            deleteTree(new File(stateDir, appId));
            Map<String, Long> restored = new ConcurrentHashMap<>();
            streams = start(topology, props, 2, restored);
            emit(Map.of("event", "restored", "stores", new TreeMap<>(restored)));
            queryCounts(streams, totals);
            queryWindows(streams, windowTotals);

            Map<String, List<Long>> expectedMore = new TreeMap<>();
            for (int i = 0; i < LINES_2.size(); i++) {
                producer.send(new ProducerRecord<>(words, "more-" + i, LINES_2.get(i)));
                countWords(LINES_2.get(i), totals, expectedMore);
            }
            producer.flush();
            check(2, wordCounts, readUntil(bootstrap, wordCounts, true, expectedMore, positions), expectedMore);

            // ---- the repartition topic is purged (DeleteRecords) up to what the application committed
            purged(admin, appId);
            topicsCreatedByStreams(admin, appId);
            closeAndLeave(streams);
            streams.cleanUp();
        }
    }

    /** The application's own topics (Streams creates only its internal ones) and the users table's contents. */
    static void setUp(Admin admin, KafkaProducer<String, String> producer, String appId) throws Exception {
        // replication factor left to the broker (default.replication.factor), as Streams does for its own topics
        List<NewTopic> topics = new ArrayList<>();
        for (String t : List.of("words", "users", "clicks", "word-counts", "enriched", "clicks-per-window")) {
            topics.add(new NewTopic(appId + "-" + t, Optional.of(PARTITIONS), Optional.empty()));
        }
        admin.createTopics(topics).all().get(waitMs, TimeUnit.MILLISECONDS);
        // The table first, with timestamps before every click: a task picks the record with the lowest timestamp
        // among its partitions, so each click finds its user's region whatever the fetch order.
        for (Map.Entry<String, String> u : USERS.entrySet()) {
            producer.send(new ProducerRecord<>(appId + "-users", null, BASE - 60_000, u.getKey(), u.getValue())).get();
        }
    }

    static Topology topology(String appId) {
        return topology(appId + "-words", appId + "-users", appId + "-clicks", appId + "-word-counts",
                        appId + "-enriched", appId + "-clicks-per-window");
    }

    /** What the clicks make: the enriched clicks and the per-window counts, in their order (keys as the outputs'). */
    static void expectedFromClicks(Map<String, List<String>> enriched, Map<String, List<Long>> windows) {
        Map<String, Long> totals = new TreeMap<>();
        for (Object[] c : CLICKS) {
            String user = (String) c[0], page = (String) c[1];
            long ts = BASE + (Long) c[2];
            if (USERS.containsKey(user)) {
                enriched.computeIfAbsent(user, k -> new ArrayList<>()).add(page + "@" + USERS.get(user));
            }
            String wk = windowKey(user, ts - ts % WINDOW_MS);
            windows.computeIfAbsent(wk, k -> new ArrayList<>()).add(totals.merge(wk, 1L, Long::sum));
        }
    }

    /**
     * The first half of a crash: exactly_once_v2 with a commit interval long enough that the clicks are processed
     * inside one open transaction, whose output a read_uncommitted reader sees and a read_committed one does not (and
     * the words only reach the repartition topic: the second step reads it read_committed); then the JVM halts (no
     * close, no commit, no LeaveGroup), leaving the transaction open and the static member in the group.
     */
    static void crash(String bootstrap, String appId, String stateDir) throws Exception {
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps);
             KafkaProducer<String, String> producer = producer(bootstrap)) {
            setUp(admin, producer, appId);
            Properties props = streamsProps(bootstrap, appId, stateDir, StreamsConfig.EXACTLY_ONCE_V2);
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 60_000);
            props.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 120_000);
            start(topology(appId), props, 1, null);
            for (int i = 0; i < LINES_1.size(); i++) {
                producer.send(new ProducerRecord<>(appId + "-words", "line-" + i, LINES_1.get(i)));
            }
            for (Object[] c : CLICKS) {
                producer.send(new ProducerRecord<>(appId + "-clicks", null, BASE + (Long) c[2], (String) c[0], (String) c[1]));
            }
            producer.flush();
            Map<String, List<String>> enriched = new TreeMap<>();
            Map<String, List<Long>> windows = new TreeMap<>();
            expectedFromClicks(enriched, windows);
            String out = appId + "-clicks-per-window";
            check(1, out + " (read_uncommitted)", readUntil(bootstrap, out, true, windows, new HashMap<>(), "read_uncommitted"), windows);
            check(1, appId + "-enriched (read_uncommitted)",
                  readUntil(bootstrap, appId + "-enriched", false, enriched, new HashMap<>(), "read_uncommitted"), enriched);
            // nothing is committed yet: a read_committed reader's end (the last stable offset) is still 0
            Map<String, Long> stable = new TreeMap<>();
            try (KafkaConsumer<String, Long> reader = new KafkaConsumer<>(consumerProps(bootstrap, true, "read_committed"))) {
                List<TopicPartition> tps = new ArrayList<>();
                for (String t : List.of(out, appId + "-enriched", appId + "-word-counts-repartition")) {
                    for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(t, i));
                }
                reader.endOffsets(tps).forEach((tp, offset) -> stable.put(tp.toString(), offset));
            }
            boolean open = stable.values().stream().allMatch(o -> o == 0);
            if (!open) ok = false;
            emit(Map.of("event", "open-transaction", "last_stable_offsets", stable, "ok", open));
            emit(Map.of("event", "crashing", "ok", ok));
            Runtime.getRuntime().halt(ok ? 0 : 1);
        }
    }

    /**
     * The second half: the application again on the same state directory (so the same process id, the same
     * transactional id and the same static member): its producer fences the crashed one, whose transaction the
     * broker aborts; the crashed run's local state is wiped and restored; the input is processed once more and the
     * read_committed outputs hold each result exactly once, the aborted attempt only visible read_uncommitted.
     */
    static void recover(String bootstrap, String appId, String stateDir) throws Exception {
        Properties props = streamsProps(bootstrap, appId, stateDir, StreamsConfig.EXACTLY_ONCE_V2);
        Map<String, Long> restored = new ConcurrentHashMap<>();
        KafkaStreams streams = start(topology(appId), props, 2, restored);
        emit(Map.of("event", "restored", "stores", new TreeMap<>(restored)));
        Map<String, List<Long>> counts = new TreeMap<>();
        Map<String, Long> totals = new TreeMap<>();
        for (String line : LINES_1) countWords(line, totals, counts);
        Map<String, List<String>> enriched = new TreeMap<>();
        Map<String, List<Long>> windows = new TreeMap<>();
        expectedFromClicks(enriched, windows);
        check(2, appId + "-word-counts", readUntil(bootstrap, appId + "-word-counts", true, counts, new HashMap<>()), counts);
        check(2, appId + "-enriched", readUntil(bootstrap, appId + "-enriched", false, enriched, new HashMap<>()), enriched);
        String out = appId + "-clicks-per-window";
        check(2, out, readUntil(bootstrap, out, true, windows, new HashMap<>()), windows);
        Map<String, List<Long>> twice = new TreeMap<>();
        windows.forEach((key, values) -> {
            List<Long> both = new ArrayList<>(values);
            both.addAll(values);
            twice.put(key, both);
        });
        check(2, out + " (read_uncommitted)", readUntil(bootstrap, out, true, twice, new HashMap<>(), "read_uncommitted"), twice);
        queryCounts(streams, totals);
        closeAndLeave(streams);
        streams.cleanUp();
    }

    // stall: the stream thread sleeps this long on the first line "stall", inside an open transaction
    static long stallMs = 0;
    static final java.util.concurrent.atomic.AtomicBoolean STALLED = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * A transaction that outlives its producer's transaction.timeout.ms (2 s): the stream thread stalls on a line
     * after the clicks went out in the same transaction. The broker's coordinator aborts it (with an epoch bump) at its
     * next transaction.abort.timed.out.transaction.cleanup.interval.ms check; the application's next send or commit
     * is refused, Streams treats it as its tasks migrating, rejoins, gets a new epoch and processes again from the
     * last committed offsets. The read_committed outputs must still hold every result once. Run it against a broker
     * with a short cleanup interval (the stall lasts 2 s + 4 s).
     */
    static void stall(String bootstrap, String appId, String stateDir) throws Exception {
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps);
             KafkaProducer<String, String> producer = producer(bootstrap)) {
            setUp(admin, producer, appId);
            Properties props = streamsProps(bootstrap, appId, stateDir, StreamsConfig.EXACTLY_ONCE_V2);
            props.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 2_000);
            stallMs = 6_000;
            KafkaStreams streams = start(topology(appId), props, 1, null);
            // the clicks and the words in one batch each, the stall line last: its transaction holds both
            for (Object[] c : CLICKS) {
                producer.send(new ProducerRecord<>(appId + "-clicks", null, BASE + (Long) c[2], (String) c[0], (String) c[1]));
            }
            List<String> lines = new ArrayList<>(LINES_1);
            lines.add("stall");
            Map<String, List<Long>> counts = new TreeMap<>();
            Map<String, Long> totals = new TreeMap<>();
            for (int i = 0; i < lines.size(); i++) {
                producer.send(new ProducerRecord<>(appId + "-words", "line-" + i, lines.get(i)));
                countWords(lines.get(i), totals, counts);
            }
            producer.flush();
            Map<String, List<String>> enriched = new TreeMap<>();
            Map<String, List<Long>> windows = new TreeMap<>();
            expectedFromClicks(enriched, windows);
            check(1, appId + "-word-counts", readUntil(bootstrap, appId + "-word-counts", true, counts, new HashMap<>()), counts);
            check(1, appId + "-enriched", readUntil(bootstrap, appId + "-enriched", false, enriched, new HashMap<>()), enriched);
            String out = appId + "-clicks-per-window";
            check(1, out, readUntil(bootstrap, out, true, windows, new HashMap<>()), windows);
            if (!STALLED.get()) fail("the stream thread never stalled");
            emit(Map.of("event", "stalled", "states", new ArrayList<>(STATES)));
            queryCounts(streams, totals);
            closeAndLeave(streams);
            streams.cleanUp();
        }
    }

    static Topology topology(String words, String users, String clicks, String wordCounts, String enriched, String perWindow) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(words);
        if (stallMs > 0) {
            lines = lines.peek((key, line) -> {
                if (line.equals("stall") && !STALLED.getAndSet(true)) {
                    try {
                        Thread.sleep(stallMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
        }
        lines.flatMapValues(line -> Arrays.asList(line.split(" ")))
            .groupBy((key, word) -> word)
            .count(Materialized.as("word-counts"))
            .toStream()
            .to(wordCounts, Produced.with(Serdes.String(), Serdes.Long()));

        KTable<String, String> regions = builder.table(users, Materialized.as("users"));
        KStream<String, String> clickStream = builder.stream(clicks);
        clickStream.join(regions, (page, region) -> page + "@" + region).to(enriched);
        // a day's grace: no click of the test is ever late, whatever order the partitions are read in
        clickStream.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofDays(1)))
            .count(Materialized.as("clicks-per-window"))
            .toStream((Windowed<String> w, Long n) -> windowKey(w.key(), w.window().start()))
            .to(perWindow, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /** user@N: the window that starts N seconds after BASE, the same from run to run. */
    static String windowKey(String user, long windowStart) {
        return user + "@" + (windowStart - BASE) / 1000;
    }

    static Properties streamsProps(String bootstrap, String appId, String stateDir, String guarantee) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // every update forwarded (no record cache), so the outputs are exact
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // at_least_once commits every 30 s by default; a CI run wants its offsets (and purges) sooner
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 0);
        // A static member, closed with leaveGroup: a restarted application does not wait out the old member's
        // session (45 s), as Streams' consumer never sends LeaveGroup on close.
        p.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), appId + "-instance");
        return p;
    }

    // the client's state transitions since the last start(), for the scenarios that watch it rebalance again
    static volatile List<String> STATES = List.of();

    static KafkaStreams start(Topology topology, Properties props, int phase, Map<String, Long> restored) throws Exception {
        KafkaStreams streams = new KafkaStreams(topology, props);
        java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
        List<String> states = java.util.Collections.synchronizedList(new ArrayList<>());
        STATES = states;
        streams.setStateListener((now, before) -> {
            states.add(now.name());
            if (now == KafkaStreams.State.RUNNING) running.countDown();
        });
        if (restored != null) {
            streams.setGlobalStateRestoreListener(new StateRestoreListener() {
                @Override
                public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}

                @Override
                public void onBatchRestored(TopicPartition tp, String store, long endOffset, long n) {}

                @Override
                public void onRestoreEnd(TopicPartition tp, String store, long total) {
                    restored.merge(store, total, Long::sum);
                }
            });
        }
        long t0 = System.nanoTime();
        streams.start();
        if (!running.await(waitMs, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("phase " + phase + ": not RUNNING after " + waitMs + " ms: " + states);
        }
        emit(Map.of("event", "running", "phase", phase, "ms", (System.nanoTime() - t0) / 1_000_000, "states", new ArrayList<>(states)));
        return streams;
    }

    static void closeAndLeave(KafkaStreams streams) {
        if (!streams.close(new KafkaStreams.CloseOptions().leaveGroup(true).timeout(Duration.ofMillis(waitMs)))) {
            fail("close did not finish in " + waitMs + " ms");
        }
    }

    static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        return new KafkaProducer<>(p);
    }

    static void countWords(String line, Map<String, Long> totals, Map<String, List<Long>> expected) {
        for (String w : line.split(" ")) {
            long n = totals.merge(w, 1L, Long::sum);
            expected.computeIfAbsent(w, k -> new ArrayList<>()).add(n);
        }
    }

    /**
     * Reads {@code topic} with read_committed from {@code positions} (its start when empty) until every expected key
     * has as many values as expected, then on to the partitions' end, so that anything extra is seen too.
     */
    static Map<String, List<Object>> readUntil(String bootstrap, String topic, boolean longs,
                                               Map<String, ? extends List<?>> expected,
                                               Map<TopicPartition, Long> positions) {
        return readUntil(bootstrap, topic, longs, expected, positions, "read_committed");
    }

    static Properties consumerProps(String bootstrap, boolean longs, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, longs ? LongDeserializer.class : StringDeserializer.class);
        return p;
    }

    static Map<String, List<Object>> readUntil(String bootstrap, String topic, boolean longs,
                                               Map<String, ? extends List<?>> expected,
                                               Map<TopicPartition, Long> positions, String isolation) {
        Map<String, List<Object>> got = new TreeMap<>();
        try (KafkaConsumer<String, Object> consumer = new KafkaConsumer<>(consumerProps(bootstrap, longs, isolation))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(topic, i));
            consumer.assign(tps);
            for (TopicPartition tp : tps) {
                if (positions.containsKey(tp)) consumer.seek(tp, positions.get(tp));
                else consumer.seekToBeginning(List.of(tp));
            }
            long deadline = System.currentTimeMillis() + waitMs;
            BooleanSupplier complete = () -> expected.entrySet().stream()
                .allMatch(e -> got.getOrDefault(e.getKey(), List.of()).size() >= e.getValue().size());
            Map<TopicPartition, Long> end = null;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, Object> r : consumer.poll(Duration.ofMillis(100))) {
                    got.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                }
                if (end == null && complete.getAsBoolean()) end = consumer.endOffsets(tps);
                if (end != null) {
                    final Map<TopicPartition, Long> e = end;
                    if (tps.stream().allMatch(tp -> consumer.position(tp) >= e.get(tp))) break;
                }
            }
            for (TopicPartition tp : tps) positions.put(tp, consumer.position(tp));
        }
        return got;
    }

    static void check(int phase, String topic, Map<String, List<Object>> got, Map<String, ? extends List<?>> expected) {
        boolean same = got.equals(expected);
        if (!same) ok = false;
        emit(Map.of("event", "output", "phase", phase, "topic", topic, "got", got, "expected", expected, "ok", same));
    }

    static void queryCounts(KafkaStreams streams, Map<String, Long> expected) throws InterruptedException {
        Map<String, Long> got = new TreeMap<>();
        retryWhileMigrating(() -> {
            got.clear();
            ReadOnlyKeyValueStore<String, Long> store = streams.store(
                StoreQueryParameters.fromNameAndType("word-counts", QueryableStoreTypes.keyValueStore()));
            try (KeyValueIterator<String, Long> it = store.all()) {
                it.forEachRemaining(kv -> got.put(kv.key, kv.value));
            }
        });
        queried("word-counts", got, expected);
    }

    static void queryWindows(KafkaStreams streams, Map<String, Long> expected) throws InterruptedException {
        Map<String, Long> got = new TreeMap<>();
        retryWhileMigrating(() -> {
            got.clear();
            ReadOnlyWindowStore<String, Long> store = streams.store(
                StoreQueryParameters.fromNameAndType("clicks-per-window", QueryableStoreTypes.windowStore()));
            try (KeyValueIterator<Windowed<String>, Long> it = store.all()) {
                it.forEachRemaining((KeyValue<Windowed<String>, Long> kv) ->
                    got.put(windowKey(kv.key.key(), kv.key.window().start()), kv.value));
            }
        });
        queried("clicks-per-window", got, expected);
    }

    /** Interactive queries fail while a rebalance moves tasks between threads (Streams' own advice: retry). */
    static void retryWhileMigrating(Runnable query) throws InterruptedException {
        long deadline = System.currentTimeMillis() + waitMs;
        int attempts = 0;
        while (true) {
            try {
                attempts++;
                query.run();
                if (attempts > 1) emit(Map.of("event", "query-retried", "attempts", attempts));
                return;
            } catch (org.apache.kafka.streams.errors.InvalidStateStoreException e) {
                if (System.currentTimeMillis() > deadline) throw e;
                Thread.sleep(50);
            }
        }
    }

    static void queried(String store, Map<String, Long> got, Map<String, Long> expected) {
        boolean same = got.equals(expected);
        if (!same) ok = false;
        emit(Map.of("event", "queried", "store", store, "got", got, "expected", expected, "ok", same));
    }

    /** Waits until every repartition partition the application committed offsets for was purged (its log start
     * offset moved past 0, never past the committed offset): Streams' DeleteRecords after its commits. */
    static void purged(Admin admin, String appId) throws Exception {
        long deadline = System.currentTimeMillis() + waitMs;
        Map<String, List<Long>> state = new TreeMap<>();
        boolean done = false;
        while (!done && System.currentTimeMillis() < deadline) {
            Set<String> repartition = admin.listTopics().names().get().stream()
                .filter(n -> n.startsWith(appId + "-") && n.endsWith("-repartition")).collect(Collectors.toSet());
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(appId)
                .partitionsToOffsetAndMetadata().get();
            Map<TopicPartition, OffsetSpec> earliest = new HashMap<>(), latest = new HashMap<>();
            for (TopicPartition tp : committed.keySet()) {
                if (repartition.contains(tp.topic())) {
                    earliest.put(tp, OffsetSpec.earliest());
                    latest.put(tp, OffsetSpec.latest());
                }
            }
            var low = admin.listOffsets(earliest).all().get();
            var high = admin.listOffsets(latest).all().get();
            state.clear();
            done = !repartition.isEmpty() && !earliest.isEmpty();
            for (TopicPartition tp : earliest.keySet()) {
                long lo = low.get(tp).offset(), c = committed.get(tp).offset(), hi = high.get(tp).offset();
                state.put(tp.toString(), List.of(lo, c, hi));
                if (c > 0 && (lo == 0 || lo > c)) done = false;
            }
            if (!done) Thread.sleep(100);
        }
        if (!done) ok = false;
        emit(Map.of("event", "purged", "partitions", state, "ok", done));
    }

    /** The topics Streams created for itself (its AdminClient), with the configs it gave them. */
    static void topicsCreatedByStreams(Admin admin, String appId) throws Exception {
        Set<String> user = Set.of("words", "users", "clicks", "word-counts", "enriched", "clicks-per-window");
        List<String> internal = admin.listTopics().names().get().stream()
            .filter(n -> n.startsWith(appId + "-") && !user.contains(n.substring(appId.length() + 1)))
            .sorted().collect(Collectors.toList());
        Map<String, TopicDescription> described = admin.describeTopics(internal).allTopicNames().get();
        List<ConfigResource> resources = internal.stream()
            .map(n -> new ConfigResource(ConfigResource.Type.TOPIC, n)).collect(Collectors.toList());
        Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get();
        Map<String, Object> topics = new TreeMap<>();
        for (String name : internal) {
            Map<String, String> set = new TreeMap<>();
            for (ConfigEntry e : configs.get(new ConfigResource(ConfigResource.Type.TOPIC, name)).entries()) {
                if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) set.put(e.name(), e.value());
            }
            TopicDescription d = described.get(name);
            // the application id is a prefix: the test compares names without it
            topics.put(name.substring(appId.length() + 1), Map.of(
                "partitions", d.partitions().size(),
                "replicas", d.partitions().get(0).replicas().size(),
                "configs", set));
        }
        emit(Map.of("event", "topics", "topics", topics));
    }

    static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) for (File c : children) deleteTree(c);
        if (f.exists() && !f.delete()) fail("could not delete " + f);
    }

    static void fail(String why) {
        ok = false;
        emit(Map.of("event", "failed", "why", why));
    }

    private static void emit(Map<String, ?> object) {
        JsonLines.emit(object);
    }
}
