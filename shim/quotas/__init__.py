"""Client quotas and throttling (issue 17; issue 16's fault injection throttles through it too).

What belongs here: the quota configuration (user / client id entities and their defaults, as
DescribeClientQuotas / AlterClientQuotas see them) and the arithmetic that turns produce and fetch byte rates and
request rates into ``throttle_time_ms``. Plain state and numbers: no asyncio transports, no decoded wire messages.

May import (README, Layout; tests/test_layering.py checks it): layer 2 of shim. The stdlib, ``kafka_shim.protocol``,
``kafka_shim.authorizer``, and the shim layers below it (``javacompat``, ``config``); never its layer-2 siblings,
``requests``, ``handlers``, ``net`` or ``broker``.
"""
