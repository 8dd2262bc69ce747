"""Fault injection: one-shot (or counted) rules in front of the handlers (issue 16).

What belongs here: a fault rule (API key, an optional match on topic, partition, group or principal, an action:
answer an error code, delay, drop the connection; how many requests or what fraction it applies to) and the hook
that request dispatch calls between decoding a request and handing it to its handler, as kfake's ``ControlKey``.
The pytest plugin (``testing``) and ``kafka-shim serve``'s control interface set the rules.

May import (README, Layout; tests/test_layering.py checks it): layer 3 of shim. The stdlib, ``kafka_shim.protocol``,
``kafka_shim.authorizer``, and the shim layers below it (``javacompat``, ``config``, and layer 2: ``cluster``,
``log``, ``producers``, ``groups``, ``txn``, ``quotas``, ``releases``, ``security``); never ``requests`` (its
sibling, which calls it), ``handlers``, ``net`` or ``broker``.
"""
