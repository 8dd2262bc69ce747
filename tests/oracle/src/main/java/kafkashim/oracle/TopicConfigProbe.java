package kafkashim.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

import kafka.server.ConfigHelper;
import kafka.server.ControllerConfigurationValidator;
import kafka.server.KafkaConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsResourceResult;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsSynonym;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.storage.internals.log.LogConfig;

/**
 * Kafka 3.9's own topic config code, for tests/differential/test_topic_config_defs.py to compare kafka-shim with.
 *
 *   defs       one line per LogConfig key: name, type, default, validator, broker synonyms; then "broker" lines
 *              for each synonym: name, type, default (KafkaConfig's definitions)
 *   validate   per stdin case (broker RS existing RS configs): "OK" or "ERR" TAB exception class TAB message, from
 *              ControllerConfigurationValidator, which the controller runs for CreateTopics and (Incremental)AlterConfigs
 *   describe   per stdin case (broker RS overrides): one line per key from ConfigHelper.createTopicConfigEntry, then "END"
 *
 * A case's sections are separated by U+001E; a section's entries by U+001F; key and value by U+001D; a value of
 * U+0000 alone is null. Output fields are tab-separated; synonyms are "name|value|source" joined by U+001F.
 */
public final class TopicConfigProbe {
    private static final String RS = "\u001e", US = "\u001f", GS = "\u001d";

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "defs": defs(); break;
            case "validate": perCase(TopicConfigProbe::validate); break;
            case "describe": perCase(TopicConfigProbe::describe); break;
            default: throw new IllegalArgumentException(args[0]);
        }
        System.out.flush();
    }

    interface Case { void run(String[] sections) throws Exception; }

    private static void perCase(Case handler) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) handler.run(line.split(RS, -1));
    }

    private static Map<String, String> section(String text) {
        Map<String, String> map = new LinkedHashMap<>();
        if (text.isEmpty()) return map;
        for (String entry : text.split(US, -1)) {
            String[] kv = entry.split(GS, 2);
            map.put(kv[0], kv[1].equals("\u0000") ? null : kv[1]);
        }
        return map;
    }

    private static KafkaConfig broker(Map<String, String> extra) {
        Properties props = new Properties();
        props.setProperty("process.roles", "broker,controller");
        props.setProperty("node.id", "1");
        props.setProperty("controller.quorum.voters", "1@127.0.0.1:9093");
        props.setProperty("controller.listener.names", "CONTROLLER");
        props.setProperty("listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093");
        props.putAll(extra);
        return KafkaConfig.fromProps(props);
    }

    private static String clean(String s) {
        return s == null ? "\u0000" : s.replace('\t', ' ').replace('\n', ' ');
    }

    private static void defs() {
        ConfigDef def = LogConfig.configDefCopy();
        Map<String, ConfigDef.ConfigKey> brokerKeys = KafkaConfig.configDef().configKeys();
        StringBuilder brokerLines = new StringBuilder();
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            StringBuilder synonyms = new StringBuilder();
            for (ConfigSynonym s : ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.getOrDefault(key.name, java.util.List.of())) {
                if (synonyms.length() > 0) synonyms.append(US);
                synonyms.append(s.name());
                ConfigDef.ConfigKey b = brokerKeys.get(s.name());
                brokerLines.append("broker\t").append(b.name).append('\t').append(b.type).append('\t')
                    .append(clean(ConfigDef.convertToString(b.defaultValue, b.type))).append('\t')
                    .append(b.validator == null ? "" : b.validator.toString()).append('\n');
            }
            System.out.println("topic\t" + key.name + "\t" + key.type + "\t" + clean(ConfigDef.convertToString(key.defaultValue, key.type))
                + "\t" + (key.validator == null ? "" : key.validator.toString()) + "\t" + synonyms);
        }
        System.out.print(brokerLines);
    }

    private static void validate(String[] sections) {
        KafkaConfig config = broker(section(sections[0]));
        try {
            new ControllerConfigurationValidator(config).validate(
                new ConfigResource(ConfigResource.Type.TOPIC, "probe"), section(sections[2]), section(sections[1]));
            System.out.println("OK");
        } catch (ConfigException | ApiException e) {
            System.out.println("ERR\t" + e.getClass().getSimpleName() + "\t" + clean(e.getMessage()));
        }
    }

    private static void describe(String[] sections) {
        KafkaConfig config = broker(section(sections[0]));
        Properties overrides = new Properties();
        overrides.putAll(section(sections[1]));
        LogConfig logConfig = LogConfig.fromProps(config.extractLogConfigMap(), overrides);
        ConfigHelper helper = new ConfigHelper(null, config, null);
        Map<String, ?> values = logConfig.values();
        for (String name : LogConfig.configNames()) {
            DescribeConfigsResourceResult entry = helper.createTopicConfigEntry(logConfig, overrides, true, false, name, values.get(name));
            StringBuilder synonyms = new StringBuilder();
            for (DescribeConfigsSynonym s : entry.synonyms()) {
                if (synonyms.length() > 0) synonyms.append(US);
                synonyms.append(s.name()).append('|').append(clean(s.value())).append('|').append(s.source());
            }
            System.out.println(name + "\t" + clean(entry.value()) + "\t" + entry.configSource() + "\t" + entry.isSensitive()
                + "\t" + entry.configType() + "\t" + synonyms);
        }
        System.out.println("END");
    }
}
