package kafkashim.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import kafka.server.ConfigHelper;
import kafka.server.DynamicBrokerConfig;
import kafka.server.KafkaConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.DescribeConfigsRequestData.DescribeConfigsResource;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsResourceResult;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsResult;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsSynonym;

/**
 * Kafka 3.9's own broker config code (KafkaConfig, DynamicBrokerConfig, ConfigHelper), for
 * tests/differential/test_broker_config_defs.py to compare kafka-shim's broker config table and answers with.
 *
 *   defs      one line per KafkaConfig key in definition order: name, type, default (U+0000 for none), update
 *             mode (read-only, per-broker, cluster-wide), internal, synonyms (U+001F-joined), validator (its class
 *             and its toString)
 *   describe  per stdin case (static RS per-broker dynamic RS default dynamic RS resource name RS wanted keys): the
 *             DescribeConfigs result ConfigHelper builds for that BROKER resource with synonyms, one line per entry,
 *             then "END"; the first line is "RESULT" TAB error code TAB error message
 *   validate  per stdin case (static RS changes RS "true" for per-broker): DynamicBrokerConfig.validate's verdict
 *
 * Separators as in TopicConfigProbe: sections by U+001E, entries by U+001F, key and value by U+001D, U+0000 = null.
 */
public final class BrokerConfigProbe {
    private static final String RS = "\u001e", US = "\u001f", GS = "\u001d";

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "defs": defs(); break;
            case "describe": perCase(BrokerConfigProbe::describe); break;
            case "validate": perCase(BrokerConfigProbe::validate); break;
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

    private static Properties props(Map<String, String> map) {
        Properties props = new Properties();
        props.putAll(map);
        return props;
    }

    static KafkaConfig broker(Map<String, String> extra) {
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
        Map<String, String> modes = kafka.server.DynamicBrokerConfig$.MODULE$.dynamicConfigUpdateModes();
        for (ConfigDef.ConfigKey key : KafkaConfig.configDef().configKeys().values()) {
            String dflt = key.hasDefault() ? ConfigDef.convertToString(key.defaultValue, key.type) : null;
            List<String> synonyms = new ArrayList<>(scala.jdk.javaapi.CollectionConverters.asJava(
                DynamicBrokerConfig.brokerConfigSynonyms(key.name, true)));
            String validator = key.validator == null ? "" : key.validator.getClass().getSimpleName() + " " + clean(key.validator.toString());
            System.out.println(key.name + "\t" + key.type + "\t" + clean(dflt) + "\t" + modes.getOrDefault(key.name, "read-only")
                + "\t" + key.internalConfig + "\t" + String.join(US, synonyms) + "\t" + validator);
        }
    }

    private static void describe(String[] sections) {
        KafkaConfig config = broker(section(sections[0]));
        config.dynamicConfig().initialize(scala.Option.empty(), scala.Option.empty());
        Map<String, String> perBroker = section(sections[1]);
        Map<String, String> defaults = section(sections[2]);
        if (!defaults.isEmpty()) config.dynamicConfig().updateDefaultConfig(props(defaults), false);
        if (!perBroker.isEmpty()) config.dynamicConfig().updateBrokerConfig(1, props(perBroker), false);
        DescribeConfigsResource resource = new DescribeConfigsResource().setResourceType((byte) 4)
            .setResourceName(sections[3].equals("\u0000") ? null : sections[3]);
        if (!sections[4].isEmpty()) resource.setConfigurationKeys(List.of(sections[4].split(US, -1)));
        ConfigHelper helper = new ConfigHelper(null, config, null);
        List<DescribeConfigsResult> results = scala.jdk.javaapi.CollectionConverters.asJava(helper.describeConfigs(
            scala.jdk.javaapi.CollectionConverters.asScala(List.of(resource)).toList(), true, false));
        DescribeConfigsResult result = results.get(0);
        System.out.println("RESULT\t" + result.errorCode() + "\t" + clean(result.errorMessage()));
        for (DescribeConfigsResourceResult entry : result.configs()) {
            StringBuilder synonyms = new StringBuilder();
            for (DescribeConfigsSynonym s : entry.synonyms()) {
                if (synonyms.length() > 0) synonyms.append(US);
                synonyms.append(s.name()).append('|').append(clean(s.value())).append('|').append(s.source());
            }
            System.out.println(entry.name() + "\t" + clean(entry.value()) + "\t" + entry.configSource() + "\t" + entry.isSensitive()
                + "\t" + entry.readOnly() + "\t" + entry.configType() + "\t" + synonyms);
        }
        System.out.println("END");
    }

    private static void validate(String[] sections) {
        KafkaConfig config = broker(section(sections[0]));
        config.dynamicConfig().initialize(scala.Option.empty(), scala.Option.empty());
        try {
            config.dynamicConfig().validate(props(section(sections[1])), Boolean.parseBoolean(sections[2]));
            System.out.println("OK");
        } catch (ConfigException | ApiException e) {
            System.out.println("ERR\t" + e.getClass().getSimpleName() + "\t" + clean(e.getMessage()));
        }
    }
}
