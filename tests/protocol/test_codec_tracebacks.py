"""Generated codecs read like files in a traceback: each names its message, version and direction, and shows its line."""

from __future__ import annotations

import linecache
import subprocess
import sys
import traceback

import pytest

from kafka_shim.protocol import codegen
from kafka_shim.protocol.errors import DecodeError, EncodeError
from kafka_shim.protocol.messages import message_class
from kafka_shim.protocol.schema import message_spec


def _innermost(exc: BaseException) -> traceback.FrameSummary:
    return traceback.extract_tb(exc.__traceback__)[-1]


def test_a_wrong_typed_field_fails_on_a_named_encoder_line() -> None:
    cls = message_class("DescribeAclsResponse")
    msg = cls(throttle_time_ms="soon")  # an int32 field given a str
    with pytest.raises(Exception) as info:
        cls.encoder(3)(msg, [])
    frame = _innermost(info.value)
    assert frame.filename == "<kafka-shim codec DescribeAclsResponse v3 encode>"
    assert frame.name == "encode"
    assert "o.throttle_time_ms" in frame.line
    text = "".join(traceback.format_exception(info.value))
    assert 'File "<kafka-shim codec DescribeAclsResponse v3 encode>", line' in text
    assert frame.line in text


def test_the_public_encode_error_keeps_the_generated_frame_for_debugging() -> None:
    # encode() raises a tidy EncodeError (its context suppressed, as before); the codec's own failure stays attached.
    cls = message_class("MetadataResponse")
    topic = cls.MetadataResponseTopic(name="orders", partitions=[cls.MetadataResponsePartition(leader_id="one")])
    with pytest.raises(EncodeError, match="MetadataResponse v12") as info:
        cls(topics=[topic]).encode(12)
    cause = info.value.__context__
    assert cause is not None and info.value.__suppress_context__
    frame = _innermost(cause)
    assert frame.filename == "<kafka-shim codec MetadataResponse v12 encode>"
    assert "leader_id" in frame.line


def test_a_truncated_body_fails_on_a_named_decoder_line() -> None:
    cls = message_class("MetadataResponse")
    data = cls(topics=[cls.MetadataResponseTopic(name="orders")]).encode(12)
    with pytest.raises(Exception) as info:
        cls.decoder(12)(data[:9], 0)
    frame = _innermost(info.value)
    assert frame.filename == "<kafka-shim codec MetadataResponse v12 decode>"
    assert frame.name == "decode"
    assert frame.line  # the generated source line, read back from linecache
    # The public API still reports the field, from the traced twin, which has a name of its own.
    with pytest.raises(DecodeError, match="MetadataResponse v12"):
        cls.decode(data[:9], 12)
    assert linecache.getlines("<kafka-shim codec MetadataResponse v12 decode, traced>")


def test_generated_constructors_are_named_by_their_message() -> None:
    cls = message_class("MetadataResponse")
    with pytest.raises(TypeError) as info:
        cls.MetadataResponseTopic(colour="blue")
    # The failure is in the call itself, but the constructor's source is registered under its own name.
    assert "colour" in str(info.value)
    assert linecache.getlines("<kafka-shim class MetadataResponse.MetadataResponseTopic __init__>")[0].startswith("def __init__")


def test_module_entry_point_prints_the_source_tracebacks_show() -> None:
    cls = message_class("MetadataResponse")
    cls.decoder(12)
    registered = "".join(linecache.getlines("<kafka-shim codec MetadataResponse v12 decode>"))
    result = subprocess.run(
        [sys.executable, "-m", "kafka_shim.protocol.codegen", "MetadataResponse", "12"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout == registered
    assert result.stdout.startswith("def decode(buf, pos):")


def test_module_entry_point_prints_encoders_and_refuses_unknown_input() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafka_shim.protocol.codegen", "DescribeAclsResponse", "3", "encode"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout == codegen.codec_source(message_spec("DescribeAclsResponse"), 3, "encode")
    assert result.stdout.startswith("def encode(o, out):")
    for args, complaint in ((["NoSuchResponse", "1"], "no Kafka message schema"), (["MetadataResponse", "99"], "0-12")):
        refused = subprocess.run(
            [sys.executable, "-m", "kafka_shim.protocol.codegen", *args], capture_output=True, text=True, timeout=60
        )
        assert refused.returncode == 2
        assert complaint in refused.stderr
