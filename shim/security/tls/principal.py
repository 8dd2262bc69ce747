"""The principal of a TLS client, as Kafka's DefaultKafkaPrincipalBuilder makes it.

``User:`` + the client certificate's subject, rendered as Java's ``X500Principal.getName()`` renders it (RFC 2253
form), then rewritten by ``ssl.principal.mapping.rules``; ``User:ANONYMOUS`` when the client sent no certificate.
"""

from __future__ import annotations

import codecs
import re
import ssl
from collections.abc import Mapping

from cryptography import x509

from kafka_shim.authorizer.model import ANONYMOUS
from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.java_regex import JavaRegexError, compile_java_regex, expand_java_replacement
from kafka_shim.shim.javacompat.strings import java_trim

log = get_logger("kafka_shim.ssl_principal")

# Attribute types Java writes by keyword in RFC 2253 form; every other type is written as its dotted OID with the
# value's DER encoding in hex (as are values that are not of a string type, after a keyword too).
_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# DER string types Java renders as text: PrintableString, T61String, IA5String, GeneralString, BMPString, UTF8String.
_STRING_TAGS = {0x13, 0x14, 0x16, 0x1B, 0x1E, 0x0C}
_ESCAPED = set(',=+<>#;"\\')
# Java's DerValue.isPrintableStringChar: the characters a PrintableString may hold.
_PRINTABLE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 '()+,-./:=?")


class SslPrincipalMappingError(Exception):
    """No ssl.principal.mapping.rules rule gives a name for a DN (Kafka fails the client's authentication)."""


# -- the subject DN, as Java writes it -----------------------------------------------------------------------------


def certificate_dn(der: bytes) -> str:
    """The subject of a DER certificate as Java's ``X500Principal.getName()`` writes it."""
    try:
        tbs = x509.load_der_x509_certificate(der).tbs_certificate_bytes
    except ValueError as exc:
        raise ValueError(f"not a DER X.509 certificate: {exc}") from None
    # TBSCertificate: [0] version (optional), serial, signature algorithm, issuer, validity, subject, ...
    fields = list(_children(tbs, *_tlv(tbs, 0)[1:]))
    if fields and tbs[fields[0][0]] == 0xA0:
        fields = fields[1:]
    start, _, end = fields[4]
    return name_dn(tbs[start:end])


def name_dn(name_der: bytes) -> str:
    """An X.501 Name (DER) in Java's RFC 2253 form: RDNs last first, ``+`` inside multi-valued RDNs in DER order."""
    _, content, end = _tlv(name_der, 0)
    rdns = []
    for _, rdn_content, rdn_end in _children(name_der, content, end):
        avas = []
        for _, ava_content, ava_end in _children(name_der, rdn_content, rdn_end):
            (_, oid_content, oid_end), (value_start, value_content, value_end) = list(_children(name_der, ava_content, ava_end))[:2]
            avas.append(_ava(_oid(name_der[oid_content:oid_end]), name_der[value_start:value_end], name_der[value_content:value_end]))
        rdns.append("+".join(avas))
    return ",".join(reversed(rdns))


def _ava(oid: str, value_tlv: bytes, value_content: bytes) -> str:
    keyword = _KEYWORDS.get(oid)
    if keyword is None or value_tlv[0] not in _STRING_TAGS:
        return f"{keyword or oid}=#{value_tlv.hex()}"
    # Java reads the content bytes as UTF-8 whatever the string type (so BMPString and T61String come out garbled).
    text = value_content.decode("utf-8", errors="java_utf8_replace")
    out = []
    for ch in text:
        if ch in _ESCAPED:
            out.append("\\" + ch)
        elif ch == "\x00":
            out.append("\\00")
        else:
            out.append(ch)
    chars = list("".join(out))
    lead = next((i for i, c in enumerate(chars) if c not in " \r"), len(chars))
    trail = next((i for i in range(len(chars) - 1, -1, -1) if chars[i] not in " \r"), -1)
    return keyword + "=" + "".join("\\" + c if i < lead or i > trail else c for i, c in enumerate(chars))


def _java_utf8_replace(error: UnicodeDecodeError) -> tuple[str, int]:
    # Java's decoder takes ED A0..BF (the start of an encoded surrogate) and one more continuation byte as one
    # malformed sequence, where Python's stops at ED; otherwise both replace the same bytes with one U+FFFD.
    data, start = error.object, error.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        end = start + 3 if start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF else start + 2
        return "\ufffd", end
    return "\ufffd", error.end


codecs.register_error("java_utf8_replace", _java_utf8_replace)


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(start, content start, end) of the DER element at ``pos``."""
    start = pos
    if data[pos] & 0x1F == 0x1F:  # high tag number: base-128 digits follow
        pos += 1
        while data[pos] & 0x80:
            pos += 1
    pos += 1
    length = data[pos]
    pos += 1
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[pos : pos + count], "big")
        pos += count
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return start, pos, pos + length


def _children(data: bytes, pos: int, end: int):
    while pos < end:
        element = _tlv(data, pos)
        yield element
        pos = element[2]


def _oid(content: bytes) -> str:
    arcs, value = [], 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = min(arcs[0] // 40, 2)
    return ".".join(str(a) for a in [first, arcs[0] - 40 * first, *arcs[1:]])


# -- ssl.principal.mapping.rules -----------------------------------------------------------------------------------

# Kafka's grammar: DEFAULT, or RULE:pattern/replacement/ with an optional L or U, rules separated by commas; a
# backslash escapes the next character inside pattern and replacement. Java's "." and "$" (no line terminators)
# are spelled out so that Python's re finds the same splits.
_DOT = r"[^\n\r\u0085\u2028\u2029]"
_END = r"(?=(?:\r\n|[\n\r\u0085\u2028\u2029])?\Z)"
_RULE = rf"(DEFAULT)|RULE:((?:\\{_DOT}|[^\\/])*)/((?:\\{_DOT}|[^\\/])*)/([LU]?){_DOT}*?|({_DOT}*?)"
_RULE_SPLITTER = re.compile(rf"\s*({_RULE})\s*(?:,\s*|{_END})", re.ASCII)
_RULE_PARSER = re.compile(_RULE, re.ASCII)


class _Rule:
    def __init__(self, pattern: str | None = None, replacement: str = "", case: str = "") -> None:
        self.source_pattern = pattern
        self.replacement = replacement
        self.case = case
        self.regex = compile_java_regex(pattern) if pattern is not None else None

    def apply(self, dn: str) -> str | None:
        if self.regex is None:
            return dn
        if not self.regex.fullmatch(dn):
            return None
        result = _replace_all(self.regex, dn, _escape_missing_groups(self.replacement, self.regex.groups))
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result

    def __str__(self) -> str:
        # Kafka's Rule.toString, which its tests (and its error message) show.
        if self.regex is None:
            return "DEFAULT"
        text = f"RULE:{self.source_pattern}/{self.replacement}"
        return text + {"L": "/L", "U": "/U"}.get(self.case, "")


def _replace_all(regex: re.Pattern[str], text: str, replacement: str) -> str:
    """Java's String.replaceAll with a Java replacement string ($n, ${name}, backslash escapes)."""
    out, pos, search_from = [], 0, 0
    while search_from <= len(text):
        match = regex.search(text, search_from)
        if match is None:
            break
        out.append(text[pos : match.start()])
        out.append(expand_java_replacement(match, replacement))
        pos = match.end()
        # Java's find() moves one character on after an empty match; Python's finditer would try a longer match at
        # the same place instead, which "(.*?)" shows.
        search_from = match.end() + (1 if match.end() == match.start() else 0)
    out.append(text[pos:])
    return "".join(out)


_BACK_REFERENCE = re.compile(r"\$(\d+)")


def _escape_missing_groups(replacement: str, group_count: int) -> str:
    """Kafka escapes $n references to groups the pattern lacks, so that they stay literal text.

    As in Kafka, the positions come from the original string while the escaped one grows, so with several such
    references the later backslashes land one place early per earlier insertion; kept so the results match.
    """
    if group_count == 0:
        return replacement
    value = replacement
    for match in _BACK_REFERENCE.finditer(replacement):
        digits = match.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            at = match.start(1) - 1
            value = value[:at] + "\\" + value[at:]
    return value


class SslPrincipalMapper:
    """Kafka's ``ssl.principal.mapping.rules``: the first rule that matches the DN gives the principal name."""

    def __init__(self, rules: list[_Rule]) -> None:
        self._rules = rules

    @classmethod
    def from_rules(cls, text: str | None) -> SslPrincipalMapper:
        """Parse the rules (None means Kafka's default, ``DEFAULT``); ConfigError for a rule Kafka rejects."""
        text = "DEFAULT" if text is None else text
        rules = []
        for match in _RULE_SPLITTER.finditer(java_trim(text)):
            rule_text = match.group(1)
            parsed = _RULE_PARSER.match(rule_text)
            if parsed is None or parsed.end() != len(rule_text):
                rest = rule_text[parsed.end() :] if parsed else rule_text
                raise ConfigError(
                    f"ssl.principal.mapping.rules: invalid rule `{rule_text}`, unmatched substring `{rest}`; "
                    "write DEFAULT or RULE:pattern/replacement/ (optionally followed by L or U), separated by commas"
                )
            if parsed.group(1):
                rules.append(_Rule())
            elif parsed.group(2) is not None:
                try:
                    rules.append(_Rule(parsed.group(2), parsed.group(3), parsed.group(4)))
                except JavaRegexError as exc:
                    raise ConfigError(f"ssl.principal.mapping.rules: the pattern of rule `{rule_text}` {exc}") from None
            # anything else is an empty rule, which Kafka ignores
        return cls(rules)

    @property
    def rules(self) -> list[str]:
        """The rules as Kafka prints them (``RULE:pattern/replacement/L``, ``DEFAULT``)."""
        return [str(rule) for rule in self._rules]

    def principal_name(self, dn: str) -> str:
        """The name the first matching rule gives ``dn``; SslPrincipalMappingError when no rule matches."""
        for rule in self._rules:
            try:
                name = rule.apply(dn)
            except JavaRegexError as exc:
                raise SslPrincipalMappingError(f"rule {rule} cannot map {dn}: {exc}") from None
            if name is not None:
                return name
        raise SslPrincipalMappingError(f"No rules apply to {dn}, rules [{', '.join(self.rules)}]")

    def __repr__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(self.rules)}])"


def listener_principal_mapper(listener_name: str, props: Mapping[str, str]) -> SslPrincipalMapper:
    """The mapper for a listener: ``listener.name.<name>.ssl.principal.mapping.rules``, else the broker-wide key."""
    from kafka_shim.shim.security.tls.context import Settings

    found = Settings(props, listener_name).lookup("ssl.principal.mapping.rules")
    mapper = SslPrincipalMapper.from_rules(found[1] if found else None)
    if found and not mapper.rules:
        log.warning("ssl_principal_mapping_rules_empty", key=found[0],
                    hint="with no rules no TLS client certificate can be mapped, so every such client fails authentication")
    return mapper


def tls_principal(ssl_object: ssl.SSLObject | ssl.SSLSocket | None, mapper: SslPrincipalMapper) -> str:
    """``User:`` + the mapped subject of the peer's certificate; ``User:ANONYMOUS`` when it sent none.

    Raises SslPrincipalMappingError when no rule maps the DN: Kafka then fails the authentication (close the connection).
    """
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return "User:" + mapper.principal_name(certificate_dn(der))
