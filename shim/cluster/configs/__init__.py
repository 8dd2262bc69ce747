"""Kafka 3.9's topic config definitions as plain data: names, types, defaults, ranges, broker synonyms.

``definition`` parses and validates values as Kafka's ``ConfigDef`` does; ``topic_configs`` holds the topic keys
(``LogConfig``) and Kafka's cross-key checks; ``describe`` computes a topic's effective values with their sources
and synonyms for DescribeConfigs. No wire types and no handlers here: those adapt these answers to the protocol.
"""
