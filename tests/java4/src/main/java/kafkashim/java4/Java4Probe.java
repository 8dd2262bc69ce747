package kafkashim.java4;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ClassicGroupDescription;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Apache Kafka's 4.x Java clients against one broker, as a user runs them: each scenario prints one JSON line
 * {"scenario": NAME, "result": {...}} on stdout (what the user sees: values, offsets, states, or an error's class and
 * message), then {"done": true}. Names made by a run start with --prefix and are printed with it replaced by "P", so
 * two brokers' outputs compare as text. The broker is configured like scripts/real-kafka's Kafka (SASL_PLAINTEXT with
 * PLAIN/SCRAM users admin, alice, bob; StandardAuthorizer; super user admin; PLAINTEXT is User:ANONYMOUS).
 *
 * Usage: Java4Probe --plaintext HOST:PORT --sasl HOST:PORT --prefix P [--scenarios a,b,...]
 */
public final class Java4Probe {
    private static String plaintext;
    private static String sasl;
    private static String prefix;
    // record timestamps of a run: recent (an old one would fall to retention.ms), printed as offsets from T0
    private static final long T0 = System.currentTimeMillis() - 60_000;

    public static void main(String[] args) throws Exception {
        String scenarios = String.join(",", SCENARIOS.keySet());
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--plaintext": plaintext = args[i + 1]; break;
                case "--sasl": sasl = args[i + 1]; break;
                case "--prefix": prefix = args[i + 1]; break;
                case "--scenarios": scenarios = args[i + 1]; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (plaintext == null || sasl == null || prefix == null) {
            throw new IllegalArgumentException("usage: --plaintext HOST:PORT --sasl HOST:PORT --prefix P [--scenarios a,b]");
        }
        for (String name : scenarios.split(",")) {
            Scenario s = SCENARIOS.get(name);
            if (s == null) {
                throw new IllegalArgumentException("no scenario " + name + "; known: " + SCENARIOS.keySet());
            }
            Map<String, Object> result = new LinkedHashMap<>();
            long t0 = System.nanoTime();
            try {
                s.run(result);
            } catch (Throwable t) {
                result.put("failed", error(t));
            }
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("scenario", name);
            line.put("result", result);
            line.put("ms", (System.nanoTime() - t0) / 1_000_000);
            System.out.println(json(line));
            System.out.flush();
        }
        System.out.println("{\"done\": true}");
        System.out.flush();
        System.exit(0); // no lingering client threads
    }

    interface Scenario {
        void run(Map<String, Object> out) throws Exception;
    }

    private static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("cluster", Java4Probe::cluster);
        SCENARIOS.put("topics", Java4Probe::topics);
        SCENARIOS.put("produce_consume", Java4Probe::produceConsume);
        SCENARIOS.put("groups_admin", Java4Probe::groupsAdmin);
        SCENARIOS.put("consumer_protocol", Java4Probe::consumerProtocol);
        SCENARIOS.put("transactions", Java4Probe::transactions);
        SCENARIOS.put("records_admin", Java4Probe::recordsAdmin);
        SCENARIOS.put("telemetry", Java4Probe::telemetry);
        SCENARIOS.put("sasl", Java4Probe::saslLogins);
        SCENARIOS.put("acls", Java4Probe::acls);
        SCENARIOS.put("admin_more", Java4Probe::adminMore);
        SCENARIOS.put("clients_more", Java4Probe::clientsMore);
    }

    // ------------------------------------------------------------------------------------------------ configs

    static Properties common(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        return p;
    }

    static Properties asUser(String mechanism, String user, String password) {
        Properties p = common(sasl);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", mechanism);
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        p.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        return p;
    }

    static Properties admin() {
        return asUser("PLAIN", "admin", "admin-secret");
    }

    static Properties with(Properties base, String... kv) {
        Properties p = new Properties();
        p.putAll(base);
        for (int i = 0; i < kv.length; i += 2) {
            p.put(kv[i], kv[i + 1]);
        }
        return p;
    }

    static KafkaProducer<String, String> producer(Properties p) {
        Properties props = with(p);
        props.putIfAbsent("max.block.ms", "20000");
        props.putIfAbsent("delivery.timeout.ms", "20000");
        props.putIfAbsent("linger.ms", "0");
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> consumer(Properties p) {
        return new KafkaConsumer<>(with(p, "auto.offset.reset", "earliest", "enable.auto.commit", "false"),
                new StringDeserializer(), new StringDeserializer());
    }

    static String n(String suffix) {
        return prefix + "-" + suffix;
    }

    static void createTopic(Admin a, String name, int partitions) throws Exception {
        a.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
    }

    // ------------------------------------------------------------------------------------------------ scenarios

    static void cluster(Map<String, Object> out) throws Exception {
        try (Admin a = Admin.create(admin())) {
            out.put("describeCluster", attempt(() -> {
                var r = a.describeCluster();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("nodes", sorted(r.nodes().get(), node -> node.id()));
                m.put("controller", r.controller().get().id());
                return m;
            }));
            out.put("describeFeatures", attempt(() -> {
                FeatureMetadata f = a.describeFeatures().featureMetadata().get();
                Map<String, Object> m = new LinkedHashMap<>();
                Map<String, Object> fin = new TreeMap<>();
                f.finalizedFeatures().forEach((k, v) -> fin.put(k, List.of(v.minVersionLevel(), v.maxVersionLevel())));
                Map<String, Object> sup = new TreeMap<>();
                f.supportedFeatures().forEach((k, v) -> sup.put(k, List.of(v.minVersion(), v.maxVersion())));
                m.put("finalized", fin);
                m.put("supported", sup);
                m.put("hasEpoch", f.finalizedFeaturesEpoch().isPresent());
                return m;
            }));
            out.put("describeMetadataQuorum", attempt(() -> {
                QuorumInfo q = a.describeMetadataQuorum().quorumInfo().get();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("leaderId", q.leaderId());
                m.put("voters", sorted(q.voters(), QuorumInfo.ReplicaState::replicaId));
                m.put("observers", sorted(q.observers(), QuorumInfo.ReplicaState::replicaId));
                m.put("nodes", new TreeSet<>(q.nodes().keySet()));
                return m;
            }));
            out.put("describeBrokerConfig", attempt(() -> {
                ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
                Config c = a.describeConfigs(List.of(broker)).all().get().get(broker);
                Map<String, Object> m = new TreeMap<>();
                for (String k : List.of("group.coordinator.rebalance.protocols", "transaction.version",
                        "unstable.api.versions.enable", "auto.create.topics.enable")) {
                    ConfigEntry e = c.get(k);
                    m.put(k, e == null ? null : e.value() + " (" + e.source() + ")");
                }
                return m;
            }));
        }
    }

    static void topics(Map<String, Object> out) throws Exception {
        try (Admin a = Admin.create(admin())) {
            String t1 = n("topic-a");
            String t2 = n("topic-b");
            out.put("create", attempt(() -> {
                a.createTopics(List.of(new NewTopic(t1, 3, (short) 1),
                        new NewTopic(t2, 2, (short) 1).configs(Map.of("cleanup.policy", "compact")))).all().get();
                return "ok";
            }));
            out.put("createAgain", attempt(() -> createTopic(a, t1, 1)));
            out.put("createBadRf", attempt(() -> a.createTopics(List.of(new NewTopic(n("bad"), 1, (short) 3))).all().get()));
            out.put("describePaged", attempt(() -> {
                Map<String, Object> m = new TreeMap<>();
                var r = a.describeTopics(List.of(t1, t2, n("missing")), new DescribeTopicsOptions().partitionSizeLimitPerResponse(1));
                for (var e : r.topicNameValues().entrySet()) {
                    m.put(e.getKey(), attempt(() -> topic(e.getValue().get())));
                }
                return m;
            }));
            out.put("describeAuthorizedOps", attempt(() -> {
                TopicDescription d = a.describeTopics(List.of(t1), new DescribeTopicsOptions().includeAuthorizedOperations(true))
                        .allTopicNames().get().get(t1);
                return new TreeSet<>(d.authorizedOperations().stream().map(Object::toString).toList());
            }));
            out.put("createPartitions", attempt(() -> {
                a.createPartitions(Map.of(t1, NewPartitions.increaseTo(4))).all().get();
                // Kafka answers once its controller has the new partitions; the broker's metadata follows a moment
                // later, so a describe right after may still count 3 (CI saw it once on Kafka 3.9)
                return eventually(() -> a.describeTopics(List.of(t1)).allTopicNames().get().get(t1).partitions().size(),
                        n -> n == 4);
            }));
            out.put("createPartitionsFewer", attempt(() -> a.createPartitions(Map.of(t1, NewPartitions.increaseTo(2))).all().get()));
            ConfigResource r1 = new ConfigResource(ConfigResource.Type.TOPIC, t2);
            out.put("alterConfigs", attempt(() -> {
                a.incrementalAlterConfigs(Map.of(r1, List.of(
                        new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)))).all().get();
                return "ok";
            }));
            out.put("alterConfigsBad", attempt(() -> a.incrementalAlterConfigs(Map.of(r1, List.of(
                    new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get()));
            out.put("describeConfigs", attempt(() -> {
                Config c = eventually(() -> a.describeConfigs(List.of(r1)).all().get().get(r1),
                        v -> v.get("retention.ms").value().equals("3600000"));
                Map<String, Object> m = new TreeMap<>();
                for (String k : List.of("cleanup.policy", "retention.ms", "segment.bytes", "min.insync.replicas")) {
                    ConfigEntry e = c.get(k);
                    m.put(k, e.value() + " (" + e.source() + ")");
                }
                return m;
            }));
            out.put("listTopics", attempt(() -> new TreeSet<>(a.listTopics().names().get().stream()
                    .filter(t -> t.startsWith(prefix)).toList())));
            out.put("delete", attempt(() -> {
                a.deleteTopics(List.of(t2)).all().get();
                return "ok";
            }));
            out.put("deleteMissing", attempt(() -> a.deleteTopics(List.of(n("missing"))).all().get()));
        }
    }

    static Map<String, Object> topic(TopicDescription d) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("internal", d.isInternal());
        m.put("hasTopicId", d.topicId() != null && !Uuid.ZERO_UUID.equals(d.topicId()));
        List<Object> parts = new ArrayList<>();
        for (TopicPartitionInfo p : d.partitions()) {
            parts.add(List.of(p.partition(), p.leader().id(), p.replicas().size(), p.isr().size()));
        }
        m.put("partitions", parts);
        return m;
    }

    static void produceConsume(Map<String, Object> out) throws Exception {
        String topic = n("pc");
        try (Admin a = Admin.create(admin())) {
            createTopic(a, topic, 2);
        }
        out.put("idempotentProduce", attempt(() -> {
            List<Object> offsets = new ArrayList<>();
            try (KafkaProducer<String, String> p = producer(with(admin(), "compression.type", "zstd"))) {
                for (int i = 0; i < 6; i++) {
                    RecordMetadata md = p.send(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i)).get();
                    offsets.add(List.of(md.partition(), md.offset()));
                }
            }
            return offsets;
        }));
        out.put("classicConsume", attempt(() -> consumeGroup(topic, n("classic-group"), "classic", 6)));
        out.put("missingTopicProduce", attempt(() -> {
            try (KafkaProducer<String, String> p = producer(with(admin(), "max.block.ms", "2000"))) {
                return p.send(new ProducerRecord<>(n("no-such-topic"), "v")).get().offset();
            }
        }));
    }

    static Object consumeGroup(String topic, String group, String protocol, int expect) {
        Map<String, Object> m = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> c = consumer(with(admin(), "group.id", group, "group.protocol", protocol))) {
            c.subscribe(List.of(topic));
            List<Object> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (got.size() < expect && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    got.add(List.of(r.partition(), r.offset(), String.valueOf(r.value())));
                }
            }
            got.sort((x, y) -> x.toString().compareTo(y.toString()));
            m.put("records", got);
            c.commitSync();
            m.put("assignment", sorted(c.assignment(), TopicPartition::partition));
            Map<String, Object> committed = new TreeMap<>();
            c.committed(c.assignment()).forEach((tp, om) -> committed.put(tp.toString(), om == null ? null : om.offset()));
            m.put("committed", committed);
            m.put("groupMetadataGeneration", c.groupMetadata().generationId() > 0);
        } catch (Exception e) {
            m.put("error", error(e));
        }
        return m;
    }

    static void consumerProtocol(Map<String, Object> out) throws Exception {
        String topic = n("kip848");
        try (Admin a = Admin.create(admin());
             KafkaProducer<String, String> p = producer(admin())) {
            createTopic(a, topic, 1);
            p.send(new ProducerRecord<>(topic, "x")).get();
        }
        out.put("consume", consumeGroup(topic, n("kip848-group"), "consumer", 1));
        out.put("regexSubscription", attempt(() -> {
            try (KafkaConsumer<String, String> c = consumer(with(admin(), "group.id", n("kip848-regex"), "group.protocol", "consumer"))) {
                c.subscribe(new org.apache.kafka.clients.consumer.SubscriptionPattern(prefix + "-kip8.*"));
                List<Object> got = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 30_000;
                while (got.isEmpty() && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                        got.add(r.topic() + ":" + r.offset());
                    }
                }
                return got;
            }
        }));
        try (Admin a = Admin.create(admin())) {
            out.put("listGroups", attempt(() -> groups(a.listGroups().all().get())));
            out.put("describe", attempt(() -> {
                ConsumerGroupDescription d = a.describeConsumerGroups(List.of(n("kip848-group"))).all().get().get(n("kip848-group"));
                return List.of(d.type().toString(), d.groupState().toString(), d.partitionAssignor(), d.members().size(),
                        String.valueOf(d.groupEpoch().isPresent()));
            }));
            out.put("describeClassic", attempt(() -> a.describeClassicGroups(List.of(n("kip848-group"))).all().get().size()));
        }
    }

    static void groupsAdmin(Map<String, Object> out) throws Exception {
        String topic = n("ga");
        String g1 = n("ga-group");
        String g2 = n("ga-other");
        try (Admin a = Admin.create(admin())) {
            createTopic(a, topic, 2);
            try (KafkaProducer<String, String> p = producer(admin())) {
                for (int i = 0; i < 4; i++) {
                    p.send(new ProducerRecord<>(topic, i % 2, "k", "v" + i)).get();
                }
            }
            TopicPartition tp0 = new TopicPartition(topic, 0);
            TopicPartition tp1 = new TopicPartition(topic, 1);
            a.alterConsumerGroupOffsets(g2, Map.of(tp0, new OffsetAndMetadata(1, "meta"))).all().get();
            try (KafkaConsumer<String, String> c = consumer(with(admin(), "group.id", g1, "group.protocol", "classic"))) {
                c.subscribe(List.of(topic));
                int seen = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while (seen < 4 && System.currentTimeMillis() < deadline) {
                    seen += c.poll(Duration.ofMillis(500)).count();
                }
                c.commitSync();
                out.put("listGroupsAll", attempt(() -> groups(a.listGroups().all().get())));
                out.put("listGroupsClassic", attempt(() -> groups(a.listGroups(new ListGroupsOptions()
                        .withTypes(Set.of(GroupType.CLASSIC))).all().get())));
                out.put("listGroupsConsumerType", attempt(() -> groups(a.listGroups(new ListGroupsOptions()
                        .withTypes(Set.of(GroupType.CONSUMER))).all().get())));
                out.put("listGroupsForConsumerGroups", attempt(() -> groups(a.listGroups(ListGroupsOptions.forConsumerGroups()).all().get())));
                out.put("listGroupsShare", attempt(() -> groups(a.listGroups(ListGroupsOptions.forShareGroups()).all().get())));
                out.put("describeClassicGroups", attempt(() -> {
                    Map<String, Object> m = new TreeMap<>();
                    for (var e : a.describeClassicGroups(List.of(g1, g2, n("ga-none"))).describedGroups().entrySet()) {
                        m.put(e.getKey(), attempt(() -> {
                            ClassicGroupDescription d = e.getValue().get();
                            return List.of(d.protocol(), d.state().toString(), d.isSimpleConsumerGroup(), d.members().size(),
                                    d.coordinator().id());
                        }));
                    }
                    return m;
                }));
                out.put("describeConsumerGroups", attempt(() -> {
                    Map<String, Object> m = new TreeMap<>();
                    for (var e : a.describeConsumerGroups(List.of(g1, g2, n("ga-none"))).describedGroups().entrySet()) {
                        m.put(e.getKey(), attempt(() -> {
                            ConsumerGroupDescription d = e.getValue().get();
                            List<Object> members = new ArrayList<>();
                            for (MemberDescription md : d.members()) {
                                members.add(List.of(md.clientId().isEmpty() ? "" : "client",
                                        sorted(md.assignment().topicPartitions(), TopicPartition::partition).toString(),
                                        String.valueOf(md.memberEpoch()), String.valueOf(md.upgraded())));
                            }
                            return List.of(d.type().toString(), d.groupState().toString(), d.isSimpleConsumerGroup(),
                                    d.partitionAssignor(), members, String.valueOf(d.groupEpoch()),
                                    String.valueOf(d.targetAssignmentEpoch()));
                        }));
                    }
                    return m;
                }));
                out.put("alterOffsetsActiveGroup", attempt(() -> a.alterConsumerGroupOffsets(g1, Map.of(tp0, new OffsetAndMetadata(0))).all().get()));
                out.put("deleteActiveGroup", attempt(() -> a.deleteConsumerGroups(List.of(g1)).all().get()));
            }
            out.put("listOffsetsSeveralGroups", attempt(() -> {
                Map<String, ListConsumerGroupOffsetsSpec> specs = new LinkedHashMap<>();
                specs.put(g1, new ListConsumerGroupOffsetsSpec());
                specs.put(g2, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp0, tp1)));
                specs.put(n("ga-none"), new ListConsumerGroupOffsetsSpec());
                var r = a.listConsumerGroupOffsets(specs);
                Map<String, Object> m = new TreeMap<>();
                for (String g : specs.keySet()) {
                    m.put(g, attempt(() -> {
                        Map<String, Object> offs = new TreeMap<>();
                        r.partitionsToOffsetAndMetadata(g).get().forEach((tp, om) ->
                                offs.put(tp.toString(), om == null ? null : om.offset() + "/" + om.metadata() + "/" + om.leaderEpoch()));
                        return offs;
                    }));
                }
                return m;
            }));
            out.put("alterOffsetsEmptyGroup", attempt(() -> {
                a.alterConsumerGroupOffsets(g1, Map.of(tp0, new OffsetAndMetadata(1), tp1, new OffsetAndMetadata(5))).all().get();
                return "ok";
            }));
            out.put("alterOffsetsMissingTopic", attempt(() -> a.alterConsumerGroupOffsets(g1,
                    Map.of(new TopicPartition(n("no-topic"), 0), new OffsetAndMetadata(1))).all().get()));
            out.put("deleteOffsets", attempt(() -> {
                a.deleteConsumerGroupOffsets(g1, Set.of(tp1)).all().get();
                return "ok";
            }));
            out.put("removeMembersNone", attempt(() -> a.removeMembersFromConsumerGroup(g1,
                    new org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions()).all().get()));
            out.put("deleteGroups", attempt(() -> {
                Map<String, Object> m = new TreeMap<>();
                for (var e : a.deleteConsumerGroups(List.of(g1, g2, n("ga-none"))).deletedGroups().entrySet()) {
                    m.put(e.getKey(), attempt(() -> e.getValue().get()));
                }
                return m;
            }));
        }
    }

    static Object groups(Collection<GroupListing> listings) {
        Map<String, Object> m = new TreeMap<>();
        for (GroupListing g : listings) {
            if (g.groupId().startsWith(prefix)) {
                m.put(g.groupId(), List.of(String.valueOf(g.type()), g.protocol(), String.valueOf(g.groupState()),
                        g.isSimpleConsumerGroup()));
            }
        }
        return m;
    }

    static void transactions(Map<String, Object> out) throws Exception {
        String topic = n("txn");
        String txnId = n("txn-id");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin a = Admin.create(admin())) {
            createTopic(a, topic, 1);
            KafkaProducer<String, String> p = producer(with(admin(), "transactional.id", txnId));
            try {
                out.put("init", attempt(() -> {
                    p.initTransactions();
                    return "ok";
                }));
                out.put("commit", attempt(() -> {
                    p.beginTransaction();
                    p.send(new ProducerRecord<>(topic, 0, "k", "committed-1")).get();
                    p.send(new ProducerRecord<>(topic, 0, "k", "committed-2")).get();
                    p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(2)),
                            new org.apache.kafka.clients.consumer.ConsumerGroupMetadata(n("txn-group")));
                    p.commitTransaction();
                    return "ok";
                }));
                out.put("abort", attempt(() -> {
                    p.beginTransaction();
                    p.send(new ProducerRecord<>(topic, 0, "k", "aborted")).get();
                    p.abortTransaction();
                    return "ok";
                }));
                out.put("open", attempt(() -> {
                    p.beginTransaction();
                    return p.send(new ProducerRecord<>(topic, 0, "k", "open")).get().offset();
                }));
                out.put("listTransactions", attempt(() -> txns(a.listTransactions().all().get())));
                out.put("listTransactionsOngoing", attempt(() -> txns(a.listTransactions(new ListTransactionsOptions()
                        .filterStates(List.of(org.apache.kafka.clients.admin.TransactionState.ONGOING))).all().get())));
                out.put("listTransactionsPattern", attempt(() -> txns(a.listTransactions(new ListTransactionsOptions()
                        .filterOnTransactionalIdPattern(prefix + ".*")).all().get())));
                out.put("listTransactionsDuration", attempt(() -> txns(a.listTransactions(new ListTransactionsOptions()
                        .filterOnDuration(1)).all().get())));
                out.put("describeTransactions", attempt(() -> {
                    Map<String, Object> m = new TreeMap<>();
                    var r = a.describeTransactions(List.of(txnId, n("no-txn")));
                    for (String id : List.of(txnId, n("no-txn"))) {
                        m.put(id, attempt(() -> {
                            TransactionDescription d = r.description(id).get();
                            return List.of(d.coordinatorId(), d.state().toString(), d.producerEpoch(), d.transactionTimeoutMs(),
                                    d.transactionStartTimeMs().isPresent(), sorted(d.topicPartitions(), TopicPartition::toString).toString());
                        }));
                    }
                    return m;
                }));
                out.put("describeProducers", attempt(() -> {
                    DescribeProducersResult.PartitionProducerState s = a.describeProducers(List.of(tp)).partitionResult(tp).get();
                    List<Object> l = new ArrayList<>();
                    for (ProducerState ps : s.activeProducers()) {
                        l.add(List.of(ps.producerEpoch(), ps.lastSequence(), String.valueOf(ps.currentTransactionStartOffset()),
                                String.valueOf(ps.coordinatorEpoch())));
                    }
                    return l;
                }));
                out.put("readCommitted", attempt(() -> readAll(tp, "read_committed")));
                out.put("readUncommitted", attempt(() -> readAll(tp, "read_uncommitted")));
                out.put("listOffsetsReadCommitted", attempt(() -> a.listOffsets(Map.of(tp, OffsetSpec.latest()),
                        new org.apache.kafka.clients.admin.ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).partitionResult(tp).get().offset()));
                out.put("abortTransactionAdmin", attempt(() -> {
                    ProducerState ps = a.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers().get(0);
                    a.abortTransaction(new AbortTransactionSpec(tp, ps.producerId(), (short) ps.producerEpoch(),
                            ps.coordinatorEpoch().orElse(0))).all().get();
                    return "ok";
                }));
                out.put("fenceProducers", attempt(() -> {
                    Map<String, Object> m = new TreeMap<>();
                    for (var e : a.fenceProducers(List.of(txnId, n("no-txn"))).fencedProducers().entrySet()) {
                        m.put(e.getKey(), attempt(() -> e.getValue().get()));
                    }
                    return m;
                }));
                out.put("commitAfterFence", attempt(() -> {
                    p.commitTransaction();
                    return "ok";
                }));
                out.put("readCommittedAfter", attempt(() -> readAll(tp, "read_committed")));
                out.put("committedOffsets", attempt(() -> {
                    Map<String, Object> m = new TreeMap<>();
                    a.listConsumerGroupOffsets(n("txn-group")).partitionsToOffsetAndMetadata().get()
                            .forEach((k, v) -> m.put(k.toString(), v.offset()));
                    return m;
                }));
            } finally {
                p.close(Duration.ofSeconds(5));
            }
            out.put("newProducerSameId", attempt(() -> {
                try (KafkaProducer<String, String> p2 = producer(with(admin(), "transactional.id", txnId))) {
                    p2.initTransactions();
                    p2.beginTransaction();
                    long off = p2.send(new ProducerRecord<>(topic, 0, "k", "second")).get().offset();
                    p2.commitTransaction();
                    return off;
                }
            }));
            out.put("readCommittedFinal", attempt(() -> readAll(tp, "read_committed")));
        }
    }

    static Object txns(Collection<TransactionListing> listings) {
        Map<String, Object> m = new TreeMap<>();
        for (TransactionListing t : listings) {
            if (t.transactionalId().startsWith(prefix)) {
                m.put(t.transactionalId(), t.state().toString());
            }
        }
        return m;
    }

    static Object readAll(TopicPartition tp, String isolation) {
        try (KafkaConsumer<String, String> c = consumer(with(admin(), "isolation.level", isolation))) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            List<Object> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(300));
                for (ConsumerRecord<String, String> r : rs) {
                    got.add(r.offset() + ":" + r.value());
                }
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("end", end);
            m.put("position", c.position(tp));
            m.put("records", got);
            return m;
        }
    }

    static void recordsAdmin(Map<String, Object> out) throws Exception {
        String topic = n("records");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin a = Admin.create(admin())) {
            createTopic(a, topic, 1);
            try (KafkaProducer<String, String> p = producer(admin())) {
                for (int i = 0; i < 5; i++) {
                    p.send(new ProducerRecord<>(topic, 0, T0 + i * (i == 2 ? 10 : 1), "k", "v" + i)).get();
                }
            }
            out.put("deleteRecords", attempt(() -> a.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(2))).lowWatermarks().get(tp).get().lowWatermark()));
            out.put("deleteRecordsBeyond", attempt(() -> a.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(99))).lowWatermarks().get(tp).get().lowWatermark()));
            // only the class: whether the 3 s pass with the call queued or in flight is a race (two texts)
            try {
                a.deleteRecords(Map.of(new TopicPartition(n("none"), 0), RecordsToDelete.beforeOffset(1)),
                        new org.apache.kafka.clients.admin.DeleteRecordsOptions().timeoutMs(3000)).all().get();
                out.put("deleteRecordsMissing", "ok");
            } catch (ExecutionException e) {
                out.put("deleteRecordsMissing", e.getCause().getClass().getSimpleName());
            }
            Map<String, OffsetSpec> specs = new LinkedHashMap<>();
            specs.put("earliest", OffsetSpec.earliest());
            specs.put("latest", OffsetSpec.latest());
            specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
            specs.put("forTimestamp", OffsetSpec.forTimestamp(T0 + 3));
            specs.put("earliestLocal", OffsetSpec.earliestLocal());
            specs.put("latestTiered", OffsetSpec.latestTiered());
            try { // KIP-1023, clients 4.2+
                specs.put("earliestPendingUpload", (OffsetSpec) OffsetSpec.class.getMethod("earliestPendingUpload").invoke(null));
            } catch (NoSuchMethodException e) {
                // an older client: not asked
            }
            Map<String, Object> lo = new LinkedHashMap<>();
            for (var e : specs.entrySet()) {
                lo.put(e.getKey(), attempt(() -> {
                    ListOffsetsResult.ListOffsetsResultInfo i = a.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp).get();
                    return List.of(i.offset(), i.timestamp() < 0 ? i.timestamp() : i.timestamp() - T0, String.valueOf(i.leaderEpoch()));
                }));
            }
            out.put("listOffsets", lo);
            out.put("electPreferred", attempt(() -> electionResult(a.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get())));
            out.put("electUnclean", attempt(() -> electionResult(a.electLeaders(ElectionType.UNCLEAN, Set.of(tp)).partitions().get())));
            out.put("electMissing", attempt(() -> electionResult(a.electLeaders(ElectionType.PREFERRED,
                    Set.of(new TopicPartition(n("none"), 0))).partitions().get())));
            out.put("describeLogDirs", attempt(() -> {
                var dirs = a.describeLogDirs(List.of(1)).allDescriptions().get().get(1);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("dirs", dirs.size());
                m.put("hasTopic", dirs.values().stream().anyMatch(d -> d.replicaInfos().containsKey(tp)));
                return m;
            }));
            out.put("listPartitionReassignments", attempt(() -> a.listPartitionReassignments().reassignments().get().size()));
            out.put("describeUserScram", attempt(() -> {
                Map<String, Object> m = new TreeMap<>();
                a.describeUserScramCredentials().all().get().forEach((u, d) -> m.put(u,
                        d.credentialInfos().stream().map(ci -> ci.mechanism() + "/" + ci.iterations()).sorted().toList()));
                return m;
            }));
            out.put("describeClientQuotas", attempt(() -> a.describeClientQuotas(
                    org.apache.kafka.common.quota.ClientQuotaFilter.all()).entities().get().size()));
        }
    }

    static Object electionResult(Map<TopicPartition, Optional<Throwable>> r) {
        Map<String, Object> m = new TreeMap<>();
        r.forEach((tp, t) -> m.put(tp.toString(), t.isPresent() ? error(t.get()) : "ok"));
        return m;
    }

    static void telemetry(Map<String, Object> out) throws Exception {
        try (Admin a = Admin.create(with(admin(), "enable.metrics.push", "true"))) {
            out.put("adminClientInstanceId", attempt(() -> a.clientInstanceId(Duration.ofSeconds(3)) != null));
            out.put("listClientMetricsResources", attempt(() -> a.listClientMetricsResources().all().get().stream()
                    .filter(r -> r.name().startsWith(prefix)).count()));
            out.put("listConfigResources", attempt(() -> new TreeSet<>(a.listConfigResources().all().get().stream()
                    .map(r -> r.type() + ":" + r.name()).filter(s -> !s.contains(prefix)).toList())));
            ConfigResource cm = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, n("metrics"));
            out.put("alterClientMetrics", attempt(() -> {
                a.incrementalAlterConfigs(Map.of(cm, List.of(
                        new AlterConfigOp(new ConfigEntry("metrics", "org.apache.kafka.producer."), AlterConfigOp.OpType.SET),
                        new AlterConfigOp(new ConfigEntry("interval.ms", "1000"), AlterConfigOp.OpType.SET)))).all().get();
                return "ok";
            }));
            out.put("listClientMetricsAfter", attempt(() -> eventually(() -> a.listClientMetricsResources().all().get().stream()
                    .map(r -> r.name()).filter(r -> r.startsWith(prefix)).sorted().toList(), v -> !v.isEmpty())));
            out.put("describeClientMetrics", attempt(() -> {
                Map<String, Object> m = new TreeMap<>();
                for (ConfigEntry e : a.describeConfigs(List.of(cm)).all().get().get(cm).entries()) {
                    m.put(e.name(), e.value() + " (" + e.source() + ")");
                }
                return m;
            }));
        }
        out.put("producerClientInstanceId", attempt(() -> {
            try (KafkaProducer<String, String> p = producer(admin())) {
                return p.clientInstanceId(Duration.ofSeconds(3)) != null;
            }
        }));
        out.put("producerNoPush", attempt(() -> {
            try (KafkaProducer<String, String> p = producer(with(admin(), "enable.metrics.push", "false"))) {
                return p.clientInstanceId(Duration.ofSeconds(3)) != null;
            }
        }));
    }

    static void saslLogins(Map<String, Object> out) {
        String[][] logins = {
            {"PLAIN", "admin", "admin-secret"}, {"SCRAM-SHA-256", "admin", "admin-secret"},
            {"SCRAM-SHA-512", "alice", "alice-secret"}, {"PLAIN", "alice", "wrong"}, {"SCRAM-SHA-256", "bob", "wrong"},
            {"SCRAM-SHA-512", "nobody", "x"},
        };
        for (String[] l : logins) {
            Properties props = asUser(l[0], l[1], l[2]);
            out.put(l[0] + ":" + l[1] + ":" + l[2], attempt(() -> {
                try (Admin a = Admin.create(with(props, "default.api.timeout.ms", "10000", "request.timeout.ms", "10000"))) {
                    return a.describeCluster().nodes().get().size();
                }
            }));
        }
    }

    static void acls(Map<String, Object> out) throws Exception {
        String topic = n("acl-topic");
        String group = n("acl-group");
        String txn = n("acl-txn");
        Properties alice = asUser("SCRAM-SHA-256", "alice", "alice-secret");
        Properties anonymous = common(plaintext);
        try (Admin a = Admin.create(admin())) {
            createTopic(a, topic, 1);
            try (Admin anon = Admin.create(anonymous); Admin al = Admin.create(alice)) {
                out.put("anonListTopics", attempt(() -> new TreeSet<>(anon.listTopics().names().get())));
                out.put("anonCreateTopic", attempt(() -> createTopic(anon, n("anon"), 1)));
                out.put("anonDescribeAcls", attempt(() -> anon.describeAcls(AclBindingFilter.ANY).values().get().size()));
                out.put("anonDescribeTopic", attempt(() -> anon.describeTopics(List.of(topic)).allTopicNames().get().size()));
                out.put("aliceDescribeCluster", attempt(() -> al.describeCluster().nodes().get().size()));
                out.put("aliceDescribeClusterOps", attempt(() -> String.valueOf(al.describeCluster(
                        new org.apache.kafka.clients.admin.DescribeClusterOptions().includeAuthorizedOperations(true)).authorizedOperations().get())));
                out.put("aliceDescribeConfigs", attempt(() -> al.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, topic))).all().get().size()));
                out.put("aliceDeleteRecords", attempt(() -> al.deleteRecords(Map.of(new TopicPartition(topic, 0), RecordsToDelete.beforeOffset(0))).all().get()));
                out.put("aliceListGroups", attempt(() -> groups(al.listGroups().all().get())));
                out.put("aliceListTransactions", attempt(() -> txns(al.listTransactions().all().get())));
                out.put("aliceDescribeTransactions", attempt(() -> al.describeTransactions(List.of(txn)).all().get().size()));
                out.put("aliceFenceProducers", attempt(() -> al.fenceProducers(List.of(txn)).all().get()));
                out.put("aliceElect", attempt(() -> al.electLeaders(ElectionType.PREFERRED, Set.of(new TopicPartition(topic, 0))).all().get()));
                out.put("aliceQuorum", attempt(() -> al.describeMetadataQuorum().quorumInfo().get().leaderId()));
                out.put("aliceScram", attempt(() -> al.describeUserScramCredentials().all().get().size()));
                out.put("aliceListOffsetsGroups", attempt(() -> al.listConsumerGroupOffsets(Map.of(group, new ListConsumerGroupOffsetsSpec()))
                        .all().get().size()));
                out.put("aliceClientMetrics", attempt(() -> al.listClientMetricsResources().all().get().size()));
                out.put("aliceInstanceId", attempt(() -> al.clientInstanceId(Duration.ofSeconds(3)) != null));
            }
            out.put("aliceProduceDenied", attempt(() -> {
                try (KafkaProducer<String, String> p = producer(with(alice, "max.block.ms", "10000"))) {
                    return p.send(new ProducerRecord<>(topic, 0, "k", "v")).get().offset();
                }
            }));
            List<AclBinding> grants = List.of(
                    new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                            new AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)),
                    new AclBinding(new ResourcePattern(ResourceType.TOPIC, prefix, PatternType.PREFIXED),
                            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)),
                    new AclBinding(new ResourcePattern(ResourceType.GROUP, group, PatternType.LITERAL),
                            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)),
                    new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                            new AccessControlEntry("User:alice", "*", AclOperation.DELETE, AclPermissionType.DENY)));
            out.put("createAcls", attempt(() -> {
                a.createAcls(grants).all().get();
                return "ok";
            }));
            out.put("describeAcls", attempt(() -> {
                List<String> l = new ArrayList<>();
                for (AclBinding b : eventually(() -> a.describeAcls(new AclBindingFilter(ResourcePatternFilter.ANY,
                        new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY))).values().get(),
                        v -> v.size() == grants.size())) {
                    l.add(b.toString());
                }
                l.sort(null);
                return l;
            }));
            out.put("aliceProduce", attempt(() -> {
                try (KafkaProducer<String, String> p = producer(with(alice, "max.block.ms", "10000"))) {
                    return p.send(new ProducerRecord<>(topic, 0, "k", "v")).get().offset();
                }
            }));
            out.put("aliceTransactionalDenied", attempt(() -> {
                try (KafkaProducer<String, String> p = producer(with(alice, "max.block.ms", "10000", "transactional.id", txn))) {
                    p.initTransactions();
                    return "ok";
                }
            }));
            out.put("aliceConsumeGroup", attempt(() -> consumeWith(with(alice, "group.id", group, "group.protocol", "classic"), topic)));
            out.put("aliceConsumeOtherGroup", attempt(() -> consumeWith(with(alice, "group.id", n("other-group"), "group.protocol", "classic"), topic)));
            out.put("aliceDescribeTopicOps", attempt(() -> {
                try (Admin al = Admin.create(alice)) {
                    return new TreeSet<>(al.describeTopics(List.of(topic), new DescribeTopicsOptions().includeAuthorizedOperations(true))
                            .allTopicNames().get().get(topic).authorizedOperations().stream().map(Object::toString).toList());
                }
            }));
            out.put("aliceDeleteTopicDenied", attempt(() -> {
                try (Admin al = Admin.create(alice)) {
                    al.deleteTopics(List.of(topic)).all().get();
                    return "ok";
                }
            }));
            out.put("deleteAcls", attempt(() -> a.deleteAcls(List.of(new AclBindingFilter(ResourcePatternFilter.ANY,
                    new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY)))).all().get().size()));
        }
    }

    static void adminMore(Map<String, Object> out) throws Exception {
        String topic = n("more");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin a = Admin.create(admin())) {
            createTopic(a, topic, 1);
            Uuid id = a.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId();
            out.put("describeByTopicId", attempt(() -> a.describeTopics(org.apache.kafka.common.TopicCollection.ofTopicIds(List.of(id)))
                    .allTopicIds().get().get(id).name()));
            out.put("describeByMissingTopicId", attempt(() -> a.describeTopics(org.apache.kafka.common.TopicCollection.ofTopicIds(
                    List.of(Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ")))).allTopicIds().get().size()));
            out.put("describeClusterFenced", attempt(() -> sorted(a.describeCluster(new org.apache.kafka.clients.admin.DescribeClusterOptions()
                    .includeFencedBrokers(true)).nodes().get(), node -> node.id() + "/" + node.isFenced())));
            out.put("describeClusterOps", attempt(() -> new TreeSet<>(a.describeCluster(new org.apache.kafka.clients.admin.DescribeClusterOptions()
                    .includeAuthorizedOperations(true)).authorizedOperations().get().stream().map(Object::toString).toList())));
            Map<String, Object> features = new LinkedHashMap<>();
            String[][] updates = {{"metadata.version", "21", "UPGRADE"}, {"metadata.version", "30", "UPGRADE"},
                {"metadata.version", "7", "SAFE_DOWNGRADE"}, {"transaction.version", "2", "UPGRADE"},
                {"group.version", "1", "UPGRADE"}, {"kraft.version", "1", "UPGRADE"}, {"no.such.feature", "1", "UPGRADE"}};
            for (String[] u : updates) {
                for (boolean validateOnly : new boolean[] {true, false}) {
                    if (!validateOnly && !u[0].equals("transaction.version") && !u[0].equals("no.such.feature")) {
                        continue;
                    }
                    features.put(String.join(":", u) + (validateOnly ? ":validate" : ""), attempt(() -> {
                        a.updateFeatures(Map.of(u[0], new org.apache.kafka.clients.admin.FeatureUpdate(Short.parseShort(u[1]),
                                org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.valueOf(u[2]))),
                                new org.apache.kafka.clients.admin.UpdateFeaturesOptions().validateOnly(validateOnly)).all().get();
                        return "ok";
                    }));
                }
            }
            out.put("updateFeatures", features);
            out.put("describeFeaturesAfter", attempt(() -> new TreeMap<>(a.describeFeatures().featureMetadata().get().finalizedFeatures()).toString()));
            out.put("unregisterBroker", attempt(() -> a.unregisterBroker(7).all().get()));
            out.put("addRaftVoter", attempt(() -> a.addRaftVoter(5, Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ"),
                    Set.of(new org.apache.kafka.clients.admin.RaftVoterEndpoint("CONTROLLER", "127.0.0.1", 1))).all().get()));
            out.put("removeRaftVoter", attempt(() -> a.removeRaftVoter(5, Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ")).all().get()));
            out.put("describeShareGroups", attempt(() -> a.describeShareGroups(List.of(n("share"))).all().get().size()));
            out.put("describeStreamsGroups", attempt(() -> a.describeStreamsGroups(List.of(n("streams"))).all().get().size()));
            out.put("createDelegationToken", attempt(() -> a.createDelegationToken().delegationToken().get().tokenInfo().owner().toString()));
            out.put("describeDelegationToken", attempt(() -> a.describeDelegationToken().delegationTokens().get().size()));
            out.put("alterScram", attempt(() -> {
                Map<String, Object> m = new TreeMap<>();
                var r = a.alterUserScramCredentials(List.of(
                        new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(n("carol"),
                                new org.apache.kafka.clients.admin.ScramCredentialInfo(org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_256, 8192), "carol-secret"),
                        new org.apache.kafka.clients.admin.UserScramCredentialDeletion(n("dave"), org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_512),
                        new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(n("erin"),
                                new org.apache.kafka.clients.admin.ScramCredentialInfo(org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_512, 1000), "x")));
                r.values().forEach((u, f) -> m.put(u, attempt(() -> f.get())));
                return m;
            }));
            out.put("describeScramCarol", attempt(() -> a.describeUserScramCredentials(List.of(n("carol"), n("nobody"))).description(n("nobody")).get().name()));
            var entity = new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("user", n("quota-user")));
            out.put("alterQuotas", attempt(() -> {
                a.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(entity,
                        List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op("producer_byte_rate", 1024.0))))).all().get();
                return "ok";
            }));
            out.put("alterQuotasBad", attempt(() -> a.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(entity,
                    List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op("no_such_quota", 1.0))))).all().get()));
            out.put("describeQuotas", attempt(() -> eventually(() -> a.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.containsOnly(
                    List.of(org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofEntity("user", n("quota-user"))))).entities().get().toString(),
                    v -> !v.equals("{}"))));
            out.put("alterReplicaLogDirs", attempt(() -> a.alterReplicaLogDirs(Map.of(new org.apache.kafka.common.TopicPartitionReplica(topic, 0, 1),
                    "/no/such/dir")).all().get()));
            out.put("describeReplicaLogDirs", attempt(() -> {
                var r = a.describeReplicaLogDirs(List.of(new org.apache.kafka.common.TopicPartitionReplica(topic, 0, 1),
                        new org.apache.kafka.common.TopicPartitionReplica(topic, 5, 1))).all().get();
                Map<String, Object> m = new TreeMap<>();
                r.forEach((k, v) -> m.put(k.toString(), (v.getCurrentReplicaLogDir() != null) + "/" + v.getFutureReplicaLogDir()));
                return m;
            }));
            out.put("reassignToMissingBroker", attempt(() -> a.alterPartitionReassignments(Map.of(tp, Optional.of(
                    new org.apache.kafka.clients.admin.NewPartitionReassignment(List.of(2))))).all().get()));
            out.put("cancelNoReassignment", attempt(() -> a.alterPartitionReassignments(Map.of(tp, Optional.empty())).all().get()));
            ConfigResource groupRes = new ConfigResource(ConfigResource.Type.GROUP, n("cfg-group"));
            out.put("alterGroupConfig", attempt(() -> {
                a.incrementalAlterConfigs(Map.of(groupRes, List.of(new AlterConfigOp(
                        new ConfigEntry("consumer.session.timeout.ms", "50000"), AlterConfigOp.OpType.SET)))).all().get();
                return "ok";
            }));
            out.put("describeGroupConfig", attempt(() -> {
                Map<String, Object> m = new TreeMap<>();
                for (ConfigEntry e : a.describeConfigs(List.of(groupRes)).all().get().get(groupRes).entries()) {
                    m.put(e.name(), e.value() + " (" + e.source() + ")");
                }
                return m;
            }));
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
            out.put("alterBrokerDynamic", attempt(() -> {
                a.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
                        new ConfigEntry("log.cleaner.backoff.ms", "15001"), AlterConfigOp.OpType.SET)))).all().get();
                return "ok";
            }));
            out.put("alterBrokerReadOnly", attempt(() -> a.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
                    new ConfigEntry("node.id", "2"), AlterConfigOp.OpType.SET)))).all().get()));
            out.put("describeBrokerSynonyms", attempt(() -> {
                // Kafka 3.9 applies a dynamic broker config when it replays the metadata record: for a moment after
                // the alter, the value is still the old one while the synonyms show the new one; wait for it
                ConfigEntry e = eventually(() -> a.describeConfigs(List.of(broker), new org.apache.kafka.clients.admin.DescribeConfigsOptions()
                        .includeSynonyms(true).includeDocumentation(true)).all().get().get(broker).get("log.cleaner.backoff.ms"),
                        v -> "15001".equals(v.value()));
                // kafka-shim answers documentation with a link to Kafka's, not Kafka's prose: only its presence here
                return List.of(e.value(), e.source().toString(), e.synonyms().stream().map(x -> x.name() + "=" + x.value() + "/" + x.source()).toList(),
                        String.valueOf(e.type()), e.documentation() != null && !e.documentation().isEmpty());
            }));
            out.put("alterBrokerDelete", attempt(() -> {
                a.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
                        new ConfigEntry("log.cleaner.backoff.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
                return "ok";
            }));
            out.put("listOffsetsRequireStable", attempt(() -> a.listConsumerGroupOffsets(n("nogroup"),
                    new org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions().requireStable(true)).partitionsToOffsetAndMetadata().get().size()));
            out.put("deleteByTopicId", attempt(() -> {
                a.deleteTopics(org.apache.kafka.common.TopicCollection.ofTopicIds(List.of(id))).all().get();
                return "ok";
            }));
        }
    }

    static void clientsMore(Map<String, Object> out) throws Exception {
        String topic = n("cm");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin a = Admin.create(admin())) {
            a.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("max.message.bytes", "2000")))).all().get();
        }
        for (String codec : List.of("gzip", "snappy", "lz4", "zstd")) {
            out.put("produce_" + codec, attempt(() -> {
                try (KafkaProducer<String, String> p = producer(with(admin(), "compression.type", codec))) {
                    return p.send(new ProducerRecord<>(topic, 0, "k", codec)).get().offset();
                }
            }));
        }
        out.put("headersAndNulls", attempt(() -> {
            try (KafkaProducer<String, String> p = producer(admin())) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, 0, null, null);
                r.headers().add("h", "v".getBytes()).add("empty", null);
                return p.send(r).get().offset();
            }
        }));
        out.put("tooLarge", attempt(() -> {
            try (KafkaProducer<String, String> p = producer(admin())) {
                return p.send(new ProducerRecord<>(topic, 0, "k", "x".repeat(5000))).get().offset();
            }
        }));
        out.put("badPartition", attempt(() -> {
            try (KafkaProducer<String, String> p = producer(with(admin(), "max.block.ms", "2000"))) {
                return p.send(new ProducerRecord<>(topic, 7, "k", "v")).get().offset();
            }
        }));
        out.put("acks0", attempt(() -> {
            try (KafkaProducer<String, String> p = producer(with(admin(), "acks", "0", "enable.idempotence", "false"))) {
                return p.send(new ProducerRecord<>(topic, 0, "k", "acks0")).get().offset();
            }
        }));
        out.put("consumeAll", attempt(() -> {
            try (KafkaConsumer<String, String> c = consumer(admin())) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                List<Object> got = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 30_000;
                while (got.size() < 6 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                        List<String> hs = new ArrayList<>();
                        r.headers().forEach(h -> hs.add(h.key() + "=" + (h.value() == null ? "null" : new String(h.value()))));
                        got.add(List.of(r.offset(), String.valueOf(r.key()), String.valueOf(r.value()), hs, r.timestampType().toString()));
                    }
                }
                return got;
            }
        }));
        out.put("offsetResetNone", attempt(() -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(with(admin(), "auto.offset.reset", "none",
                    "group.id", n("cm-none")), new StringDeserializer(), new StringDeserializer())) {
                c.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 20_000;
                while (System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(300));
                }
                return "no error";
            }
        }));
        out.put("offsetResetByDuration", attempt(() -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(with(admin(), "auto.offset.reset", "by_duration:PT1H"),
                    new StringDeserializer(), new StringDeserializer())) {
                c.assign(List.of(tp));
                long deadline = System.currentTimeMillis() + 20_000;
                while (System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(300));
                    if (c.position(tp) >= 0) {
                        return c.position(tp);
                    }
                }
                return -1;
            }
        }));
        out.put("seekOutOfRange", attempt(() -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(with(admin(), "auto.offset.reset", "none"),
                    new StringDeserializer(), new StringDeserializer())) {
                c.assign(List.of(tp));
                c.seek(tp, 100);
                long deadline = System.currentTimeMillis() + 20_000;
                while (System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(300));
                }
                return "no error";
            }
        }));
        out.put("groupReadsNulls", attempt(() -> consumeGroup(topic, n("cm-group"), "classic", 6)));
        out.put("staticMemberInstance", attempt(() -> {
            try (KafkaConsumer<String, String> c = consumer(with(admin(), "group.id", n("cm-static2"), "group.instance.id", "i-1"))) {
                c.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 30_000;
                while (c.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(300));
                }
                try (Admin a = Admin.create(admin())) {
                    var d = a.describeConsumerGroups(List.of(n("cm-static2"))).all().get().get(n("cm-static2"));
                    return d.members().stream().map(m -> String.valueOf(m.groupInstanceId())).toList();
                }
            }
        }));
    }

    static Object consumeWith(Properties props, String topic) {
        try (KafkaConsumer<String, String> c = consumer(props)) {
            c.subscribe(List.of(topic));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.isEmpty() && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    got.add(r.offset() + ":" + r.value());
                }
            }
            c.commitSync();
            return got;
        }
    }

    // ------------------------------------------------------------------------------------------------ output

    interface Call {
        Object call() throws Exception;
    }

    interface VoidCall {
        void call() throws Exception;
    }

    interface Get<T> {
        T get() throws Exception;
    }

    /**
     * Kafka 3.9 answers some reads from its metadata image, which takes an alteration (configs, quotas, ACLs, client
     * metrics) a moment after the alteration was acknowledged: read again until {@code settled}, at most 30 s.
     */
    static <T> T eventually(Get<T> read, java.util.function.Predicate<T> settled) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        T value = read.get();
        while (!settled.test(value) && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
            value = read.get();
        }
        return value;
    }

    static Object attempt(Call c) {
        try {
            Object v = c.call();
            return v == null ? "ok" : v;
        } catch (Throwable t) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("error", error(t));
            return m;
        }
    }

    static Object attempt(VoidCall c) {
        return attempt(() -> {
            c.call();
            return "ok";
        });
    }

    static Object error(Throwable t) {
        while ((t instanceof ExecutionException || t.getClass() == org.apache.kafka.common.KafkaException.class)
                && t.getCause() != null) {
            t = t.getCause();
        }
        String msg = String.valueOf(t.getMessage())
                .replaceAll("processor=\\d+", "processor=N")
                .replaceAll("connectionId=[^,]+", "connectionId=C")
                .replaceAll("Session@[0-9a-f]+", "Session@S")
                .replaceAll("deadlineMs=\\d+, tries=\\d+, nextAllowedTryMs=\\d+\\) timed out at \\d+ after \\d+ attempt", "...) timed out ... attempt");
        msg = msg.replaceAll("127\\.0\\.0\\.1:\\d+", "127.0.0.1:PORT");
        return t.getClass().getSimpleName() + ": " + msg;
    }

    static <T> List<Object> sorted(Collection<T> items, Function<T, Object> key) {
        List<Object> keys = new ArrayList<>();
        for (T t : items) {
            keys.add(key.apply(t));
        }
        keys.sort((x, y) -> x.toString().compareTo(y.toString()));
        return keys;
    }

    static String json(Object o) {
        StringBuilder sb = new StringBuilder();
        write(sb, o);
        return sb.toString().replace(prefix, "P");
    }

    @SuppressWarnings("unchecked")
    static void write(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<Object, Object> e : ((Map<Object, Object>) o).entrySet()) {
                if (!first) sb.append(", ");
                first = false;
                write(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Collection<Object>) o) {
                if (!first) sb.append(", ");
                first = false;
                write(sb, x);
            }
            sb.append(']');
        } else if (o instanceof Number || o instanceof Boolean) {
            sb.append(o);
        } else {
            String s = o.toString();
            sb.append('"');
            for (char ch : s.toCharArray()) {
                switch (ch) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
                        else sb.append(ch);
                }
            }
            sb.append('"');
        }
    }

    private Java4Probe() {
    }
}
