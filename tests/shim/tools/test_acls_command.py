"""``kafka-shim acls``: kafka-acls.sh's flags and what they expand to, then add / list / remove against kafka-shim.

The expected texts and expansions are kafka.admin.AclCommand's (Kafka 3.9), checked against the real tool in
tests/differential/test_acls_cli.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.authorizer import AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourceType
from kafka_shim.shim.client.auth import ScramClient
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.shim.tools.acls import (
    CommandError,
    UsageError,
    filter_to_acls,
    parse_args,
    parse_operation,
    resource_filters,
    resource_to_acls,
)
from tests.support.cli_helpers import client_config, run_acls
from tests.support.sasl_setup import listener_address, sasl_properties

BOOT = ["--bootstrap-server", "127.0.0.1:9"]
R, W, C, D = AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def plan(*args: str) -> dict[tuple[str, str, str], set[tuple[str, str, str, str]]]:
    """What --add would create, as plain text tuples."""
    result = resource_to_acls(parse_args([*BOOT, "--add", *args]))
    return {(p.resource_type.name, p.name, p.pattern_type.name):
            {(e.principal, e.host, e.operation.name, e.permission_type.name) for e in entries}
            for p, entries in result.items()}


def allow(principal: str, *ops: AclOperation, host: str = "*") -> set[tuple[str, str, str, str]]:
    return {(principal, host, op.name, "ALLOW") for op in ops}


# -- expansions -----------------------------------------------------------------------------------------------------


def test_producer_gets_write_describe_create_on_each_topic() -> None:
    assert plan("--producer", "--topic", "t1", "--topic", "t2", "--allow-principal", "User:p") == {
        ("TOPIC", "t1", "LITERAL"): allow("User:p", W, D, C),
        ("TOPIC", "t2", "LITERAL"): allow("User:p", W, D, C),
    }


def test_producer_with_transactional_id_and_idempotent() -> None:
    assert plan("--producer", "--topic", "t", "--transactional-id", "tx", "--idempotent", "--allow-principal", "User:p") == {
        ("TOPIC", "t", "LITERAL"): allow("User:p", W, D, C),
        ("TRANSACTIONAL_ID", "tx", "LITERAL"): allow("User:p", W, D),
        ("CLUSTER", "kafka-cluster", "LITERAL"): allow("User:p", AclOperation.IDEMPOTENT_WRITE),
    }


def test_prefixed_producer_keeps_idempotent_write_on_the_literal_cluster() -> None:
    assert plan("--producer", "--topic", "pay", "--idempotent", "--resource-pattern-type", "prefixed",
                "--allow-principal", "User:p") == {
        ("TOPIC", "pay", "PREFIXED"): allow("User:p", W, D, C),
        ("CLUSTER", "kafka-cluster", "LITERAL"): allow("User:p", AclOperation.IDEMPOTENT_WRITE),
    }


def test_consumer_gets_read_describe_on_topics_and_read_on_groups() -> None:
    assert plan("--consumer", "--topic", "t", "--group", "g", "--allow-principal", "User:c") == {
        ("TOPIC", "t", "LITERAL"): allow("User:c", R, D),
        ("GROUP", "g", "LITERAL"): allow("User:c", R),
    }


def test_producer_and_consumer_together_merge_on_the_topic() -> None:
    assert plan("--producer", "--consumer", "--topic", "t", "--group", "g", "--allow-principal", "User:x") == {
        ("TOPIC", "t", "LITERAL"): allow("User:x", R, W, D, C),
        ("GROUP", "g", "LITERAL"): allow("User:x", R),
    }


def test_every_principal_operation_and_host_allow_then_deny() -> None:
    got = plan("--topic", "t", "--operation", "Read", "--operation", "write", "--allow-principal", "User:a",
               "--allow-principal", "User:b", "--allow-host", "10.0.0.1", "--deny-principal", "User:c")
    assert got == {("TOPIC", "t", "LITERAL"): (
        allow("User:a", R, W, host="10.0.0.1") | allow("User:b", R, W, host="10.0.0.1")
        | {("User:c", "*", "READ", "DENY"), ("User:c", "*", "WRITE", "DENY")})}


def test_operation_defaults_to_all_and_host_to_star() -> None:
    assert plan("--group", "g", "--allow-principal", "User:a") == {("GROUP", "g", "LITERAL"): {("User:a", "*", "ALL", "ALLOW")}}


def test_names_are_trimmed_except_transactional_ids() -> None:
    assert plan("--topic", " t ", "--transactional-id", " tx ", "--allow-principal", " User:a ", "--allow-host", " h ",
                "--operation", " Write ") == {
        ("TOPIC", "t", "LITERAL"): allow("User:a", W, host="h"),
        ("TRANSACTIONAL_ID", " tx ", "LITERAL"): allow("User:a", W, host="h"),
    }


def test_cluster_counts_only_with_the_literal_pattern_type() -> None:
    # Kafka drops --cluster silently when the pattern type is not literal.
    assert plan("--cluster", "--topic", "x", "--resource-pattern-type", "prefixed", "--operation", "Describe",
                "--allow-principal", "User:a") == {("TOPIC", "x", "PREFIXED"): allow("User:a", D)}


def test_user_principal_and_delegation_token_resources() -> None:
    assert plan("--user-principal", "User:bob", "--operation", "CreateTokens", "--allow-principal", "User:a") == {
        ("USER", "User:bob", "LITERAL"): allow("User:a", AclOperation.CREATE_TOKENS)}
    assert plan("--delegation-token", "tok", "--operation", "Describe", "--allow-principal", "User:a") == {
        ("DELEGATION_TOKEN", "tok", "LITERAL"): allow("User:a", D)}


@pytest.mark.parametrize(("text", "expected"), [
    ("literal", PatternType.LITERAL), ("Prefixed", PatternType.PREFIXED), ("ANY", PatternType.ANY), ("match", PatternType.MATCH)])
def test_pattern_types_for_listing(text: str, expected: PatternType) -> None:
    ns = parse_args([*BOOT, "--list", "--topic", "t", "--resource-pattern-type", text])
    assert [(f.resource_type, f.name, f.pattern_type) for f in resource_filters(ns)] == [(ResourceType.TOPIC, "t", expected)]


def test_remove_without_principals_removes_everything_on_the_resource() -> None:
    ns = parse_args([*BOOT, "--remove", "--topic", "t", "--resource-pattern-type", "match", "--operation", "Read"])
    assert {(f.name, f.pattern_type): entries for f, entries in filter_to_acls(ns).items()} == {("t", PatternType.MATCH): []}


def test_remove_with_principals_targets_those_entries() -> None:
    ns = parse_args([*BOOT, "--remove", "--topic", "t", "--operation", "Read", "--deny-principal", "User:x"])
    assert list(filter_to_acls(ns).values()) == [[AccessControlEntry("User:x", "*", R, DENY)]]


@pytest.mark.parametrize(("text", "op"), [
    ("idempotentwrite", AclOperation.IDEMPOTENT_WRITE), ("IdempotentWrite", AclOperation.IDEMPOTENT_WRITE),
    ("ALTERCONFIGS", AclOperation.ALTER_CONFIGS), (" Describe ", AclOperation.DESCRIBE),
    # Kafka's SecurityUtils.operation knows only the PascalCase names: the enum constant's name is not one.
    ("IDEMPOTENT_WRITE", AclOperation.UNKNOWN), ("reed", AclOperation.UNKNOWN)])
def test_operation_names_as_kafka_reads_them(text: str, op: AclOperation) -> None:
    assert parse_operation(text) == op


# -- mistakes: Kafka's messages -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["--list", "--add"], "Command must include exactly one action: --list, --add, --remove. "),
    ([], "Command must include exactly one action: --list, --add, --remove. "),
    (["--list", "--producer", "--topic", "t"], 'Option "[list]" can\'t be used with option "[producer]"'),
    (["--list", "--allow-principal", "User:a"], 'Option "[list]" can\'t be used with option "[allow-principal]"'),
    (["--add", "--producer", "--topic", "t", "--operation", "Read"], 'Option "[producer]" can\'t be used with option "[operation]"'),
    (["--add", "--consumer", "--topic", "t", "--group", "g", "--deny-principal", "User:a"],
     'Option "[consumer]" can\'t be used with option "[deny-principal]"'),
    (["--add", "--principal", "User:a", "--topic", "t"], "The --principal option is only available if --list is set"),
    (["--add", "--producer", "--group", "g", "--allow-principal", "User:a"], "With --producer you must specify a --topic"),
    (["--add", "--idempotent", "--topic", "t", "--allow-principal", "User:a"],
     "The --idempotent option is only available if --producer is set"),
    (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"],
     "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified."),
    (["--add", "--consumer", "--topic", "t", "--group", "g", "--cluster", "--allow-principal", "User:a"],
     "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified."),
])
def test_flag_combinations_kafka_refuses(args: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_args([*BOOT, *args])
    assert str(info.value) == message


@pytest.mark.parametrize(("args", "message"), [
    (["--topic", "t"], "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
    (["--allow-principal", "User:a"], "You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
                                      "or --delegation-token <Delegation Token ID>"),
    (["--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "any"],
     "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls."),
    (["--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "match"],
     "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (["--group", "g", "--allow-principal", "User:a", "--operation", "Write"],
     "ResourceType GROUP only supports operations Read, Delete, Describe, All"),
    (["--topic", "t", "--allow-principal", "User:a", "--operation", "IDEMPOTENT_WRITE"],
     "ResourceType TOPIC only supports operations Read, All, AlterConfigs, DescribeConfigs, Delete, Write, Alter, Create, Describe"),
    (["--cluster", "--allow-principal", "User:a", "--operation", "Read"],
     "ResourceType CLUSTER only supports operations All, AlterConfigs, DescribeConfigs, IdempotentWrite, Alter, ClusterAction, "
     "Create, Describe"),
])
def test_add_plans_kafka_refuses(args: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        resource_to_acls(parse_args([*BOOT, "--add", *args]))
    assert str(info.value) == message


@pytest.mark.parametrize(("args", "message"), [
    (["--topic", "t", "--allow-principal", "alice"], "expected a string in format principalType:principalName but got alice"),
    (["--topic", "t", "--allow-principal", "User:a", "--operation", "Any"], "operation must not be ANY"),
])
def test_add_errors_while_executing(args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as info:
        resource_to_acls(parse_args([*BOOT, "--add", *args]))
    assert str(info.value) == message


def test_usage_errors_exit_1_with_the_message_on_stderr() -> None:
    result = run_acls(*BOOT, "--add", "--topic", "t")
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.\n")


def test_unknown_flag_and_missing_value_exit_1() -> None:
    for args in (["--list", "--bogus"], ["--list", "--topic"], ["--list", "--resource-pattern-type", "bogus"]):
        result = run_acls(*BOOT, *args)
        assert result.code == 1 and result.err, args
    assert "resource-pattern-type" in run_acls(*BOOT, "--list", "--resource-pattern-type", "bogus").err


def test_bootstrap_server_is_required() -> None:
    result = run_acls("--list")
    assert result.code == 1 and "bootstrap-server" in result.err


def test_unreachable_broker_fails_at_once_with_a_readable_message(unused_port: int) -> None:
    result = run_acls("--bootstrap-server", f"127.0.0.1:{unused_port}", "--list")
    assert result.code == 1
    assert result.err == (f"Error while executing ACL command: cannot connect to the broker at 127.0.0.1:{unused_port} "
                          "(Connection refused); check --bootstrap-server and that the broker is running\n")


def test_unreadable_command_config(tmp_path: Path) -> None:
    result = run_acls(*BOOT, "--list", "--command-config", str(tmp_path / "missing.properties"))
    assert result.code == 1 and "cannot read --command-config" in result.err


def test_unsupported_mechanism_in_command_config(tmp_path: Path) -> None:
    config = tmp_path / "c.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\n")  # Kafka's default mechanism is GSSAPI
    result = run_acls(*BOOT, "--list", "--command-config", str(config))
    assert result.code == 1 and "sasl.mechanism=GSSAPI is not supported" in result.err


# -- SCRAM client (RFC 7677's example exchange) ---------------------------------------------------------------------


def test_scram_sha_256_matches_rfc_7677() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.final_message(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client.verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def test_scram_refuses_a_wrong_server_signature_and_few_iterations() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    client.final_message(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(Exception, match="signature is wrong"):
        client.verify_server_final(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(Exception, match="less than the minimum 4096"):
        ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc").final_message(b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000")
    with pytest.raises(Exception, match="does not extend ours"):
        ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc").final_message(b"r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


# -- against kafka-shim ---------------------------------------------------------------------------------------------


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def shim() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        yield broker


@pytest.fixture(scope="module")
def admin(shim: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    host, port = listener_address(shim.broker, "SASL_PLAINTEXT")
    config = client_config(tmp_path_factory.mktemp("acls-cli"), "admin", "admin-secret", "SCRAM-SHA-512")
    return ["--bootstrap-server", f"{host}:{port}", "--command-config", str(config)]


def listing(admin: list[str], *args: str) -> str:
    result = run_acls(*admin, "--list", *args)
    assert (result.code, result.err) == (0, ""), result
    return result.out


def current(pattern: str, *entries: str) -> str:
    return f"Current ACLs for resource `{pattern}`: \n " + "\n".join("\t" + e for e in entries) + " \n\n"


@pytest.mark.parametrize("pattern_type", ["literal", "prefixed"])
def test_add_list_remove(admin: list[str], pattern_type: str) -> None:
    name = f"orders-{pattern_type}"
    pattern = f"ResourcePattern(resourceType=TOPIC, name={name}, patternType={pattern_type.upper()})"
    entry = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    added = run_acls(*admin, "--add", "--topic", name, "--resource-pattern-type", pattern_type, "--operation", "Read",
                     "--allow-principal", "User:alice")
    assert (added.code, added.out, added.err) == (0, f"Adding ACLs for resource `{pattern}`: \n \t{entry} \n\n", "")
    assert listing(admin, "--topic", name, "--resource-pattern-type", pattern_type) == current(pattern, entry)
    assert listing(admin, "--topic", name, "--resource-pattern-type", "any") == current(pattern, entry)
    # The default pattern type of --list is literal, as in Kafka 3.9.
    assert listing(admin, "--topic", name) == (current(pattern, entry) if pattern_type == "literal" else "")
    removed = run_acls(*admin, "--remove", "--force", "--topic", name, "--resource-pattern-type", pattern_type)
    assert (removed.code, removed.out, removed.err) == (0, "", "")
    assert listing(admin, "--topic", name, "--resource-pattern-type", "any") == ""


def test_match_lists_every_acl_that_applies(admin: list[str]) -> None:
    assert run_acls(*admin, "--add", "--topic", "pay", "--resource-pattern-type", "prefixed", "--operation", "Write",
                    "--allow-principal", "User:bob").code == 0
    assert run_acls(*admin, "--add", "--topic", "payments", "--topic", "*", "--operation", "Read",
                    "--allow-principal", "User:bob").code == 0
    out = listing(admin, "--topic", "payments", "--resource-pattern-type", "match")
    assert "name=pay, patternType=PREFIXED" in out and "name=payments, patternType=LITERAL" in out and "name=*, patternType=LITERAL" in out
    assert run_acls(*admin, "--remove", "--force", "--topic", "payments", "--resource-pattern-type", "match").code == 0
    assert listing(admin, "--topic", "payments", "--resource-pattern-type", "match") == ""


def test_remove_asks_first_and_respects_no(admin: list[str]) -> None:
    run_acls(*admin, "--add", "--group", "g-ask", "--allow-principal", "User:carol")
    pattern = "ResourcePattern(resourceType=GROUP, name=g-ask, patternType=LITERAL)"
    answer_no = run_acls(*admin, "--remove", "--group", "g-ask", stdin="n\n")
    assert answer_no.out == f"Are you sure you want to delete all ACLs for resource filter `{pattern}`? (y/n)\n"
    assert listing(admin, "--group", "g-ask") != ""
    no_answer = run_acls(*admin, "--remove", "--group", "g-ask")
    assert no_answer.code == 1 and "--force" in no_answer.err
    answer_yes = run_acls(*admin, "--remove", "--group", "g-ask", "--allow-principal", "User:carol", stdin="Y\n")
    assert answer_yes.out == ("Are you sure you want to remove ACLs: \n \t(principal=User:carol, host=*, operation=ALL, "
                              f"permissionType=ALLOW) \n from resource filter `{pattern}`? (y/n)\n")
    assert listing(admin, "--group", "g-ask") == ""


def test_list_by_principal(admin: list[str]) -> None:
    run_acls(*admin, "--add", "--producer", "--consumer", "--topic", "by-principal", "--group", "gp",
             "--allow-principal", "User:dave", "--allow-principal", "User:erin")
    out = listing(admin, "--topic", "by-principal", "--principal", "User:erin")
    assert out.startswith("ACLs for principal `User:erin`\nCurrent ACLs for resource `ResourcePattern(resourceType=TOPIC, "
                          "name=by-principal, patternType=LITERAL)`: \n ")
    assert "User:erin" in out and "User:dave" not in out and out.count("\t(") == 4


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_and_a_wrong_password(shim: EmbeddedBroker, tmp_path: Path, mechanism: str) -> None:
    host, port = listener_address(shim.broker, "SASL_PLAINTEXT")
    good = client_config(tmp_path, "admin", "admin-secret", mechanism)
    assert run_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(good), "--list").code == 0
    bad = client_config(tmp_path, "admin", "wrong", mechanism)
    result = run_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(bad), "--list")
    assert result.code == 1
    assert result.err.startswith("Error while executing ACL command: org.apache.kafka.common.errors.SaslAuthenticationException: ")


def test_a_user_without_rights_gets_cluster_authorization_failed(shim: EmbeddedBroker, tmp_path: Path) -> None:
    host, port = listener_address(shim.broker, "SASL_PLAINTEXT")
    alice = client_config(tmp_path, "alice", "alice-secret")
    result = run_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(alice), "--list")
    assert result.code == 1
    assert result.err.startswith("Error while executing ACL command: org.apache.kafka.common.errors.ClusterAuthorizationException: ")


def test_oauthbearer_unsecured_tokens_as_kafkas_default_login_makes_them(tmp_path: Path) -> None:
    props = sasl_properties()
    props["listener.name.sasl_plaintext.sasl.enabled.mechanisms"] = "PLAIN,OAUTHBEARER"
    props["listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"] = (
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin" '
        'unsecuredValidatorRequiredScope="kafka";')
    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

    def acls_as(name: str, options: str) -> object:
        config = tmp_path / f"{name}.properties"
        config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                          f"sasl.jaas.config={module} required unsecuredLoginStringClaim_sub=\"{name}\" {options};\n")
        return run_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(config), "--list")

    with EmbeddedBroker(BrokerConfig.from_properties(props)) as broker:
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
        assert acls_as("admin", 'unsecuredLoginListClaim_scope=",kafka"').code == 0  # the token names a super user
        alice = acls_as("alice", 'unsecuredLoginListClaim_scope=",kafka"')
        assert alice.code == 1 and "ClusterAuthorizationException" in alice.err
        unscoped = acls_as("admin", "")  # the broker requires the scope kafka
        assert unscoped.code == 1
        assert unscoped.err == ("Error while executing ACL command: org.apache.kafka.common.errors.SaslAuthenticationException: "
                                '{"status":"insufficient_scope", "scope":"[kafka]"}\n')


def test_no_authorizer_is_security_disabled() -> None:
    with EmbeddedBroker(BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0"})) as broker:
        result = run_acls("--bootstrap-server", broker.bootstrap_servers, "--list")
    assert result.code == 1
    assert result.err.startswith("Error while executing ACL command: org.apache.kafka.common.errors.SecurityDisabledException: ")
    assert "No Authorizer is configured" in result.err


def test_an_acl_the_broker_refuses_is_reported(admin: list[str]) -> None:
    result = run_acls(*admin, "--add", "--topic", "", "--allow-principal", "User:a")
    assert result.code == 1
    assert result.err == ("Error while executing ACL command: org.apache.kafka.common.errors.InvalidRequestException: "
                          "Invalid empty resource name\n")


def test_plaintext_client_on_a_sasl_listener_is_told_to_check_security_protocol(shim: EmbeddedBroker) -> None:
    host, port = listener_address(shim.broker, "SASL_PLAINTEXT")
    result = run_acls("--bootstrap-server", f"{host}:{port}", "--list")
    assert result.code == 1 and "security.protocol" in result.err



# -- TLS: SSL with a client certificate, and SASL_SSL -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_broker() -> Iterator[tuple[EmbeddedBroker, object]]:
    from tests.support.sasl_setup import jaas
    from tests.support.tls_material import shared_tls_material

    material = shared_tls_material()
    scram = jaas("org.apache.kafka.common.security.scram.ScramLoginModule", {"admin": "admin-secret"})
    props = {
        "listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        **material.broker_properties("SSL", client_auth="required"),
        **material.broker_properties("SASL_SSL"),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"{material.alice.principal};User:admin",
    }
    with EmbeddedBroker(BrokerConfig.from_properties(props)) as broker:
        yield broker, material


def _properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def test_ssl_with_a_client_certificate(tls_broker: tuple[EmbeddedBroker, object], tmp_path: Path) -> None:
    broker, material = tls_broker
    host, port = listener_address(broker.broker, "SSL")
    alice = _properties(tmp_path / "alice.properties", material.client_properties(material.alice))
    boot = ["--bootstrap-server", f"{host}:{port}", "--command-config", str(alice)]
    assert run_acls(*boot, "--add", "--topic", "tls", "--allow-principal", "User:bob").code == 0
    result = run_acls(*boot, "--list", "--topic", "tls")
    assert (result.code, result.err) == (0, "")
    assert "(principal=User:bob, host=*, operation=ALL, permissionType=ALLOW)" in result.out
    # Without a client certificate the broker (ssl.client.auth=required) refuses the handshake.
    anonymous = _properties(tmp_path / "anon.properties", material.client_properties())
    refused = run_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(anonymous), "--list")
    assert refused.code == 1 and refused.err.startswith("Error while executing ACL command: ") and "ssl.keystore" in refused.err


def test_ssl_needs_the_ca_in_the_trust_store(tls_broker: tuple[EmbeddedBroker, object], tmp_path: Path) -> None:
    broker, material = tls_broker
    host, port = listener_address(broker.broker, "SSL")
    untrusting = _properties(tmp_path / "u.properties", {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                                                          "ssl.truststore.location": str(material.alice.cert_path)})
    result = run_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(untrusting), "--list")
    assert result.code == 1 and "TLS handshake with" in result.err and "ssl.truststore" in result.err


def test_sasl_ssl_with_scram(tls_broker: tuple[EmbeddedBroker, object], tmp_path: Path) -> None:
    broker, material = tls_broker
    host, port = listener_address(broker.broker, "SASL_SSL")
    props = {**material.client_properties(), "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
             "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
                                 'password="admin-secret";'}
    config = _properties(tmp_path / "admin.properties", props)
    result = run_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(config), "--list")
    assert (result.code, result.err) == (0, "")


# -- an older broker: version negotiation ---------------------------------------------------------------------------


def test_an_older_broker_gets_the_versions_it_supports() -> None:
    """A broker knowing ApiVersions 0-2 and the ACL APIs 0-1 (Kafka 2.x): v0 error 35 first, then v2, then v1 requests."""
    import socket
    import threading

    from kafka_shim.protocol.framing import encode_response, parse_request
    from kafka_shim.protocol.messages import ApiVersionsResponse, DescribeAclsResponse

    seen: list[tuple[int, int]] = []
    Key = ApiVersionsResponse.ApiVersion

    def answer(api_key: int, version: int, cid: int, conn: socket.socket) -> None:
        seen.append((api_key, version))
        if api_key == 18 and version > 2:
            body, version = ApiVersionsResponse(error_code=35, api_keys=[Key(api_key=18, min_version=0, max_version=2)]), 0
        elif api_key == 18:
            body = ApiVersionsResponse(api_keys=[Key(api_key=k, min_version=0, max_version=2 if k == 18 else 1) for k in (18, 29, 30, 31)])
        else:
            acl = DescribeAclsResponse.AclDescription(principal="User:old", host="*", operation=3, permission_type=3)
            body = DescribeAclsResponse(resources=[DescribeAclsResponse.DescribeAclsResource(
                resource_type=2, resource_name="legacy", pattern_type=3, acls=[acl])])
        conn.sendall(encode_response(api_key, version, cid, body))

    def serve(listener: socket.socket) -> None:
        conn, _ = listener.accept()
        with conn:
            while head := conn.recv(4):
                size = int.from_bytes(head, "big")
                payload = b""
                while len(payload) < size:
                    payload += conn.recv(size - len(payload))
                frame = parse_request(payload)
                answer(frame.api_key, frame.api_version, frame.correlation_id, conn)

    with socket.create_server(("127.0.0.1", 0)) as listener:
        thread = threading.Thread(target=serve, args=(listener,), daemon=True)
        thread.start()
        result = run_acls("--bootstrap-server", f"127.0.0.1:{listener.getsockname()[1]}", "--list", "--topic", "legacy")
        thread.join(timeout=10)
    assert seen == [(18, 3), (18, 2), (29, 1)]
    assert (result.code, result.err) == (0, "")
    assert result.out == ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=legacy, patternType=LITERAL)`: \n"
                          " \t(principal=User:old, host=*, operation=READ, permissionType=ALLOW) \n\n")
