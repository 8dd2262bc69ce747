"""Importers: Kafka's request log, Kafka's authorizer log and packet captures turned into the trace format
(``kafka-shim import request-log|authorizer-log|pcap FILE... --out TRACE``). Imports protocol and authorizer, never
shim."""
