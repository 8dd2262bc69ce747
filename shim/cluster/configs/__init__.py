"""Kafka 3.9's topic and broker configs as plain data, and the config APIs' work on them.

``definition`` parses and validates values as Kafka's ``ConfigDef`` does; ``topic_configs`` holds the topic keys
(``LogConfig``) and Kafka's cross-key checks; ``broker_configs`` every ``KafkaConfig`` key with its update mode;
``describe`` / ``broker_describe`` compute the DescribeConfigs entries (values, sources, synonyms) and
``scala_order`` their order; ``dynamic_broker`` keeps the dynamic broker configs (KIP-226) with Kafka's checks;
``alter_ops`` applies IncrementalAlterConfigs' operations; ``loggers`` and ``client_metrics`` are the BROKER_LOGGER
and CLIENT_METRICS resources; ``admin`` (ConfigAdmin) puts them together as Kafka's broker and controller do.
No wire types and no handlers here: handlers/configs.py adapts these answers to the protocol.
"""
