"""Prometheus metrics (``kafka.shim.metrics.port``), named after Kafka's JMX metrics where one exists.

What belongs here: the counters the request pipeline, the connections and the authorizer checks update (plain
dicts on the event loop: a few dictionary increments per request, no locks), and the collector that turns them into
Prometheus families when scraped (prometheus-client, imported only when metrics are on).

May import (README, Layout; tests/test_layering.py checks it): layer 2 of shim. The stdlib, ``kafka_shim.protocol``,
``kafka_shim.authorizer``, and the shim layers below it (``javacompat``, ``config``); never its layer-2 siblings,
``requests``, ``handlers``, ``net`` or ``broker``.
"""
