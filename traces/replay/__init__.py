"""Replay: re-send a trace's requests per original connection to a broker (kafka-shim or Apache Kafka) and diff
the answers field by field (``kafka-shim replay TRACE --bootstrap-server HOST:PORT``). Imports protocol and
authorizer, never shim."""
