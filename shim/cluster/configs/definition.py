"""Kafka's ``ConfigDef`` rules for one value: its type, how a string parses to it, and its validators.

Every failure is a ``ConfigValueError`` whose message is Kafka's ``ConfigException`` text,
``Invalid value <value> for configuration <name>: <reason>``, with ``<value>`` printed as Java prints it (the raw
string for a parse failure, the parsed value for a validator's). Kafka answers these with INVALID_CONFIG (40).
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.javacompat.strings import java_trim

# A parsed value: BOOLEAN -> bool, INT/SHORT/LONG -> int, DOUBLE -> float, STRING/CLASS/PASSWORD -> str,
# LIST -> list[str]; None only for keys whose default is null.
Value = bool | int | float | str | list[str] | None


class ConfigType(enum.IntEnum):
    """ConfigDef.Type, numbered as DescribeConfigs (v3+) reports ``config_type``."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9

    @property
    def sensitive(self) -> bool:
        # KafkaConfig.maybeSensitive: a PASSWORD, or a key whose type is unknown, is never shown.
        return self in (ConfigType.PASSWORD, ConfigType.UNKNOWN)


class ConfigSource(enum.IntEnum):
    """DescribeConfigsResponse.ConfigSource ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7


class ConfigValueError(ValueError):
    """A config Kafka refuses; ``message`` is what Kafka puts in the response's error message."""

    error_code = ErrorCode.INVALID_CONFIG

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @classmethod
    def invalid(cls, name: str, shown: str, reason: str | None = None) -> ConfigValueError:
        # ConfigException(name, value, message)
        return cls(f"Invalid value {shown} for configuration {name}" + ("" if reason is None else f": {reason}"))


INT_RANGE = (-(2**31), 2**31 - 1)
SHORT_RANGE = (-(2**15), 2**15 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
LONG_MAX = LONG_RANGE[1]

# Java's String.trim() drops every char up to U+0020 at both ends (control characters too, Unicode spaces not).
# ConfigDef.COMMA_WITH_WHITESPACE is "\\s*,\\s*"; Java's \s is ASCII whitespace only.
_LIST_SPLIT = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
# Integer.parseInt / Long.parseLong: an optional sign and decimal digits (Character.digit takes any Nd digit).
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
# Double.parseDouble (FloatingDecimal.readJavaFormatString): ASCII digits, optional exponent and f/d suffix,
# NaN, Infinity, and hexadecimal floats with a mandatory binary exponent.
_JAVA_DECIMAL = re.compile(r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)", re.ASCII)
_JAVA_HEX = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+)[fFdD]?", re.ASCII)


def parse_csv_map(name: str, raw: str) -> dict[str, str]:
    """KafkaConfig.getMap: Csv.parseCsvMap (pairs split at their last ``:``, both sides trimmed, a repeated key's last
    value kept where it first came), its failure (a pair without ``:`` fails String.substring) wrapped as Kafka words
    it. The keys in the order the pairs came; Kafka's HashMap order is the caller's to apply."""
    text = java_trim(raw)
    pairs: dict[str, str] = {}
    pieces = _LIST_SPLIT.split(text) if text else []
    while pieces and not pieces[-1]:  # String.split drops trailing empty strings
        pieces.pop()
    for piece in pieces:
        colon = piece.rfind(":")
        if colon < 0:
            raise ConfigValueError(f"Error parsing configuration property '{name}': "
                                   f"begin 0, end -1, length {len(piece.encode('utf-16-le')) // 2}")
        pairs[java_trim(piece[:colon])] = java_trim(piece[colon + 1:])
    return pairs


def java_double_str(value: float) -> str:
    """Double.toString: shortest digits, plain between 1e-3 and 1e7, else computerized notation ``d.dddE<n>``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(magnitude)
        if "e" in text:  # repr switches to exponents below 1e-4; Java does not until 1e-3
            text = format(Decimal(text), "f")
        return sign + (text if "." in text else text + ".0")
    digits_tuple = Decimal(repr(magnitude)).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = digits_tuple.exponent + len(digits) - 1
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def java_str(value: Value) -> str:
    """A parsed value as Java's toString prints it inside a ConfigException message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def to_config_string(value: Value, kind: ConfigType) -> str | None:
    """ConfigDef.convertToString: how DescribeConfigs shows a parsed value (lists comma-joined, no spaces)."""
    if value is None:
        return None
    if kind is ConfigType.LIST:
        assert isinstance(value, list)
        return ",".join(value)
    return java_str(value)


def _parse_integer(text: str, bounds: tuple[int, int]) -> int | None:
    if not _JAVA_INTEGER.fullmatch(text):
        return None
    number = int(text)
    return number if bounds[0] <= number <= bounds[1] else None


def _parse_double(text: str) -> float | None:
    if _JAVA_DECIMAL.fullmatch(text):
        body = text.rstrip("fFdD") if not text.endswith("Infinity") else text
        if body.lstrip("+-") == "NaN":
            return math.nan
        if body.lstrip("+-") == "Infinity":
            return -math.inf if body.startswith("-") else math.inf
        return float(body)
    hex_match = _JAVA_HEX.fullmatch(text)
    if hex_match:
        magnitude = float.fromhex("0x" + hex_match[2])
        return -magnitude if hex_match[1] == "-" else magnitude
    return None


def parse_type(name: str, raw: str, kind: ConfigType) -> Value:
    """ConfigDef.parseType for a string value: the trimmed text converted to ``kind``, or Kafka's error."""
    text = java_trim(raw)
    if kind is ConfigType.BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ConfigValueError.invalid(name, raw, "Expected value to be either true or false")
    if kind in (ConfigType.STRING, ConfigType.PASSWORD, ConfigType.CLASS):
        # A CLASS would be loaded by Kafka; kafka-shim has no classes to load, so its name is kept as given.
        return text
    if kind is ConfigType.LIST:
        return [] if not text else _LIST_SPLIT.split(text)
    if kind is ConfigType.DOUBLE:
        number: Value = _parse_double(text)
    else:
        bounds = {ConfigType.INT: INT_RANGE, ConfigType.SHORT: SHORT_RANGE, ConfigType.LONG: LONG_RANGE}[kind]
        number = _parse_integer(text, bounds)
    if number is None:
        raise ConfigValueError.invalid(name, raw, f"Not a number of type {kind.name}")
    return number


class Validator(Protocol):
    def ensure_valid(self, name: str, value: Value) -> None: ...


@dataclass(frozen=True)
class Range:
    """ConfigDef.Range: inclusive bounds; ``None`` is open. Kafka compares as doubles, so NaN passes."""

    minimum: int | None = None
    maximum: int | None = None

    def ensure_valid(self, name: str, value: Value) -> None:
        if value is None:
            raise ConfigValueError.invalid(name, "null", "Value must be non-null")
        assert isinstance(value, (int, float))
        if self.minimum is not None and value < self.minimum:
            raise ConfigValueError.invalid(name, java_str(value), f"Value must be at least {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigValueError.invalid(name, java_str(value), f"Value must be no more than {self.maximum}")

    def __str__(self) -> str:
        low = "..." if self.minimum is None else f"{self.minimum},..."
        return f"[{low}]" if self.maximum is None else f"[{low},{self.maximum}]"


@dataclass(frozen=True)
class ValidString:
    """ConfigDef.ValidString: one of the given strings, case-sensitive."""

    choices: tuple[str, ...]

    def ensure_valid(self, name: str, value: Value) -> None:
        if value not in self.choices:
            raise ConfigValueError.invalid(name, java_str(value), "String must be one of: " + ", ".join(self.choices))

    def __str__(self) -> str:
        return "[" + ", ".join(self.choices) + "]"


@dataclass(frozen=True)
class ValidList:
    """ConfigDef.ValidList: every element one of the choices (an empty list passes); names the bad element."""

    choices: tuple[str, ...]

    def ensure_valid(self, name: str, value: Value) -> None:
        assert isinstance(value, list)
        for element in value:
            ValidString(self.choices).ensure_valid(name, element)

    def __str__(self) -> str:
        return str(ValidString(self.choices))


def parse_and_validate(name: str, raw: str, kind: ConfigType, validator: Validator | None) -> Value:
    value = parse_type(name, raw, kind)
    if validator is not None:
        validator.ensure_valid(name, value)
    return value

