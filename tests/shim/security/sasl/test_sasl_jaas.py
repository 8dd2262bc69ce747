"""sasl.jaas.config parsing: Kafka's JaasConfig grammar (java.io.StreamTokenizer rules) and its error texts."""

from __future__ import annotations

import pytest

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.security.sasl.jaas import EXAMPLE, parse_jaas_config

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def one(text: str):
    entries = parse_jaas_config(text)
    assert len(entries) == 1
    return entries[0]


def test_the_server_properties_form() -> None:
    entry = one(f'{PLAIN} required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
    assert entry.login_module == PLAIN
    assert entry.control_flag == "REQUIRED"
    assert entry.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}


def test_no_options_and_other_control_flags() -> None:
    assert one("org.apache.kafka.common.security.scram.ScramLoginModule required;").options == {}
    for flag in ("Requisite", "SUFFICIENT", "optional"):
        assert one(f"M {flag};").control_flag == flag.upper()


def test_unquoted_values_and_single_quotes() -> None:
    assert one("M required user_bob=bob-secret user_carol='c\"arol';").options == {"user_bob": "bob-secret", "user_carol": 'c"arol'}


def test_java_escapes_inside_quotes() -> None:
    entry = one(r'M required a="x\"y" b="tab\there" c="back\\slash" d="\101\7" e="\q";')
    assert entry.options == {"a": 'x"y', "b": "tab\there", "c": "back\\slash", "d": "A\x07", "e": "q"}


def test_octal_escape_takes_three_digits_only_up_to_377() -> None:
    assert one(r'M required a="\377" b="\477";').options == {"a": "\xff", "b": "'7"}


def test_quoted_value_may_hold_spaces_semicolons_equals_and_slashes() -> None:
    entry = one('M required user_x="a b;c=d//e/*f*/";')
    assert entry.options == {"user_x": "a b;c=d//e/*f*/"}


def test_comments_are_skipped() -> None:
    entry = one('M /* a block\n comment */ required // to the end of the line\n user_a="1"; // trailing')
    assert entry.options == {"user_a": "1"}


def test_a_slash_ends_an_unquoted_word_and_comments_out_the_rest_of_the_line() -> None:
    # Why Kafka's docs quote every value: an unquoted path loses everything from the "/".
    with pytest.raises(ConfigError, match="Value not specified for key 'a'"):
        parse_jaas_config("M required a=/tmp/x;")
    assert one("M required a=b/c\n;").options == {"a": "b"}


def test_whitespace_and_line_breaks_between_tokens() -> None:
    assert one(f'\n  {PLAIN}\n\trequired\r\n  user_a = "1"  \n ;\n').options == {"user_a": "1"}


def test_later_duplicate_option_wins() -> None:
    assert one('M required user_a="1" user_a="2";').options == {"user_a": "2"}


def test_several_entries() -> None:
    entries = parse_jaas_config("A required x=1; B optional;")
    assert [(e.login_module, e.control_flag) for e in entries] == [("A", "REQUIRED"), ("B", "OPTIONAL")]


def test_an_unterminated_quote_ends_at_the_line_end_as_in_java() -> None:
    assert one('M required a="abc\n;').options == {"a": "abc"}


@pytest.mark.parametrize(("text", "kafka_says"), [
    ("", "Login module not specified in JAAS config"),
    ("   // only a comment", "Login module not specified in JAAS config"),
    (PLAIN, "Login module control flag not specified in JAAS config"),
    (f"{PLAIN} ;", "Login module control flag is not available in the JAAS config"),
    (f"{PLAIN} mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
    (f'{PLAIN} required user_a="1"', "JAAS config entry not terminated by semi-colon"),
    (f"{PLAIN} required user_a;", "Value not specified for key 'user_a' in JAAS config"),
    (f"{PLAIN} required user_a=;", "Value not specified for key 'user_a' in JAAS config"),
    (f"{PLAIN} required user_a=", "Value not specified for key 'user_a' in JAAS config"),
    (f'{PLAIN} required user_a "1";', "Value not specified for key 'user_a' in JAAS config"),
])
def test_bad_syntax_is_a_config_error_with_kafkas_words_and_the_expected_form(text: str, kafka_says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_jaas_config(text, "listener.name.sasl_plaintext.plain.sasl.jaas.config")
    message = str(raised.value)
    assert message.startswith("listener.name.sasl_plaintext.plain.sasl.jaas.config: " + kafka_says)
    assert EXAMPLE in message


def test_an_entry_without_a_module_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="does not start with a login module"):
        parse_jaas_config('"" required;')
