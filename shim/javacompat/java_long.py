"""Java's long arithmetic: Kafka adds periods to clocks and deltas to bases in 64-bit longs that wrap silently.

Where Kafka does so without an overflow check (a retention or expiry period near Long.MAX_VALUE added to the clock,
a record's timestamp delta added to its batch's base), the wrapped value is what its answers carry, so kafka-shim
wraps the same sums the same way.
"""

from __future__ import annotations

_LONG_MIN, _LONG_RANGE = -(2**63), 2**64


def java_long(value: int) -> int:
    """``value`` wrapped to a Java long (two's complement, 64 bits)."""
    return (value - _LONG_MIN) % _LONG_RANGE + _LONG_MIN
