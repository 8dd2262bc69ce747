"""Invalid UTF-8 becomes the U+FFFD count Java's String constructor makes of it (Kafka 3.9 on JDK 17 is the judge:
tests/differential/test_acl_field_sweep.py stores these bytes in ACL principals on both brokers)."""

from __future__ import annotations

import pytest

from kafka_shim.protocol.java_utf8 import java_decode
from kafka_shim.protocol.messages import DescribeAclsRequest

R = "\ufffd"


@pytest.mark.parametrize(("data", "text"), [
    (b"\xed\xa0\x80", R),                  # an encoded surrogate: one U+FFFD for three bytes (Python: three)
    (b"\xed\xa0\x80\xed\xb0\x80", R * 2),  # a CESU-8 pair: two (Python: six)
    (b"\xed\xa0x", R + "x"),               # two bytes of a surrogate, then text: one (Python: two)
    (b"\xed\xa0", R),                      # cut short at the end: one for the rest (Python: two)
    (b"\xe2\x82", R), (b"\xe2\x82x", R + "x"), (b"\xc0\x80", R * 2), (b"\xe0\x80\x80", R * 3),
    (b"\xf0\x9f\x98", R), (b"\xf0\x9f\x98x", R + "x"), (b"\xf4\x90\x80\x80", R * 4), (b"\xff", R), (b"a\x80b", "a" + R + "b"),
    (b"caf\xc3\xa9", "café"),
])
def test_java_replacement_counts(data: bytes, text: str) -> None:
    assert java_decode(data) == text


def test_the_codec_decodes_broken_strings_as_java() -> None:
    body = DescribeAclsRequest(resource_name_filter="\x01x\x01").encode(1).replace(b"\x01x\x01", b"\xed\xa0\x80")
    assert DescribeAclsRequest.decode(body, 1).resource_name_filter == R
