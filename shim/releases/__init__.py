"""Older Kafka releases to emulate: ``kafka.version`` / ``--kafka-version`` (issue 16).

What belongs here: one profile per Kafka release, from the project's release facts (``kafka-release-apis.json``,
``kafka-release-rules.md``): the API ranges that release's broker advertised (the per-broker API table intersects
them with what the handlers serve, so dispatch and ApiVersions agree) and which authorization rules it applied
(OffsetFetch before KIP-163, InitProducerId before KIP-679, no prefixed ACLs before KIP-290, ...). Data and
lookups only.

May import (README, Layout; tests/test_layering.py checks it): layer 2 of shim. The stdlib, ``kafka_shim.protocol``
(``codes`` for the API keys), ``kafka_shim.authorizer``, and the shim layers below it (``javacompat``, ``config``);
never its layer-2 siblings, ``requests``, ``handlers``, ``net`` or ``broker``.
"""
