"""Building listener and client contexts from every form of Kafka's PEM keys, and the errors a person gets."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.config.properties import parse_properties
from kafka_shim.shim.security.tls.ciphers import openssl_cipher_name
from kafka_shim.shim.security.tls.context import client_ssl_context, listener_ssl_context, ssl_client_auth
from kafka_shim.shim.security.tls.principal import certificate_dn
from tests.support.tls_loopback import exchange
from tests.support.tls_material import TlsMaterial


async def served_dn(m: TlsMaterial, server_ctx: ssl.SSLContext) -> str:
    """The subject of the certificate a client sees from ``server_ctx``: proof the right key and chain were loaded."""
    result = await exchange(server_ctx, client_ssl_context(m.client_properties()))
    assert result.error is None, result.error
    return certificate_dn(result.server_certificate)


def keystore_file(m: TlsMaterial, **extra: str) -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(m.server.keystore_path)} | extra


def raises(props: dict[str, str], *fragments: str, listener: str = "SSL") -> str:
    with pytest.raises(ConfigError) as info:
        listener_ssl_context(listener, props)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# -- key stores ----------------------------------------------------------------------------------------------------


async def test_keystore_file_with_key_and_chain(tls_material):
    assert await served_dn(tls_material, listener_ssl_context("SSL", keystore_file(tls_material))) == "CN=localhost,O=Example"


async def test_keystore_file_without_a_type_is_read_when_it_is_pem(tls_material):
    # Kafka's default type is JKS; a file that is plainly PEM is read anyway.
    ctx = listener_ssl_context("SSL", {"ssl.keystore.location": str(tls_material.server.keystore_path)})
    assert await served_dn(tls_material, ctx) == "CN=localhost,O=Example"


async def test_inline_key_and_chain_with_newlines(tls_material):
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": tls_material.server.key_pem,
        "ssl.keystore.certificate.chain": tls_material.server.chain_pem,
    }
    assert await served_dn(tls_material, listener_ssl_context("SSL", props)) == "CN=localhost,O=Example"


@pytest.mark.parametrize("line_end", [" \\\n    ", "\\n\\\n", "\\\n"], ids=["space", "escaped-newline", "nothing"])
async def test_inline_values_from_a_properties_file_joined_by_continuations(tls_material, line_end):
    # How KIP-651 values are written in server.properties: one line per PEM line, each ending in a backslash, after
    # a space, an escaped newline, or nothing.
    def continued(pem: str) -> str:
        return line_end.join(pem.strip().splitlines())

    text = (
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.key={continued(tls_material.server.key_pem)}\n"
        f"ssl.keystore.certificate.chain={continued(tls_material.server.chain_pem)}\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.certificates={continued(tls_material.ca_pem)}\n"
        "ssl.client.auth=required\n"
    )
    props = parse_properties(text)
    ctx = listener_ssl_context("SSL", props)
    result = await exchange(ctx, client_ssl_context(tls_material.client_properties(tls_material.alice)))
    assert result.principals == ["User:CN=alice,OU=eng,O=Example"]


async def test_inline_values_with_escaped_newlines(tls_material):
    # \n written in a properties file becomes a newline; given on a command line or in an environment variable it
    # stays a backslash and an n.
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": tls_material.server.key_pem.replace("\n", "\\n"),
        "ssl.keystore.certificate.chain": tls_material.server.chain_pem.replace("\n", "\\n"),
    }
    assert await served_dn(tls_material, listener_ssl_context("SSL", props)) == "CN=localhost,O=Example"
    from_file = parse_properties(
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.key={props['ssl.keystore.key']}\n"
        f"ssl.keystore.certificate.chain={props['ssl.keystore.certificate.chain']}\n"
    )
    assert await served_dn(tls_material, listener_ssl_context("SSL", from_file)) == "CN=localhost,O=Example"


async def test_text_around_pem_blocks_is_ignored(tls_material, tmp_path):
    # openssl pkcs12 writes "Bag Attributes" lines before each block; keytool -list -rfc writes alias lines.
    path = tmp_path / "bags.pem"
    path.write_text(
        "Bag Attributes\n    localKeyID: 01 00 00 00\nKey Attributes: <No Attributes>\n"
        + tls_material.server.key_pem
        + "Bag Attributes\n    friendlyName: server\nsubject=CN=localhost\n"
        + tls_material.server.chain_pem
    )
    ctx = listener_ssl_context("SSL", {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)})
    assert await served_dn(tls_material, ctx) == "CN=localhost,O=Example"


async def test_encrypted_pkcs8_key_with_its_password(tls_material):
    # The material's encrypted key uses PBES1 (3DES), which Kafka 3.9 on Java 17 reads too.
    props = keystore_file(tls_material, **{"ssl.keystore.location": str(tls_material.server_keystore_encrypted_path),
                                            "ssl.key.password": tls_material.key_password})
    assert await served_dn(tls_material, listener_ssl_context("SSL", props)) == "CN=localhost,O=Example"
    inline = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": tls_material.server_key_encrypted_pem,
        "ssl.keystore.certificate.chain": tls_material.server.chain_pem,
        "ssl.key.password": tls_material.key_password,
    }
    assert await served_dn(tls_material, listener_ssl_context("SSL", inline)) == "CN=localhost,O=Example"


def server_key(m: TlsMaterial):
    return serialization.load_pem_private_key(m.server.key_pem.encode(), None)


@pytest.mark.parametrize("key_format", [serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL])
async def test_encrypted_keys_in_openssl3_forms(tls_material, key_format):
    # PBES2 PKCS#8 (OpenSSL 3's default) and the traditional form with Proc-Type/DEK-Info headers.
    pem = server_key(tls_material).private_bytes(serialization.Encoding.PEM, key_format, serialization.BestAvailableEncryption(b"s3cret"))
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": pem.decode(),
        "ssl.keystore.certificate.chain": tls_material.server.chain_pem,
        "ssl.key.password": "s3cret",
    }
    assert await served_dn(tls_material, listener_ssl_context("SSL", props)) == "CN=localhost,O=Example"


def test_wrong_key_password_names_the_key_and_file(tls_material):
    props = keystore_file(tls_material, **{"ssl.keystore.location": str(tls_material.server_keystore_encrypted_path), "ssl.key.password": "nope"})
    raises(props, "ssl.key.password", str(tls_material.server_keystore_encrypted_path), "cannot be decrypted", "check the password")


def test_encrypted_key_without_a_password(tls_material):
    props = keystore_file(tls_material, **{"ssl.keystore.location": str(tls_material.server_keystore_encrypted_path)})
    raises(props, "is encrypted", "set ssl.key.password")


def test_key_password_for_an_unencrypted_key_is_refused_as_kafka_does(tls_material):
    raises(keystore_file(tls_material, **{"ssl.key.password": "x"}), "not encrypted", "remove ssl.key.password")


def test_key_not_matching_the_certificate(tls_material):
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": tls_material.alice.key_pem,
        "ssl.keystore.certificate.chain": tls_material.server.chain_pem,
    }
    raises(props, "ssl.keystore.key", "does not belong to the first certificate in ssl.keystore.certificate.chain", "CN=localhost")


def test_chain_in_the_wrong_order(tls_material, tmp_path):
    path = tmp_path / "reversed.pem"
    path.write_text(tls_material.server.key_pem + tls_material.ca_pem + tls_material.server.cert_pem)
    raises({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)}, str(path), "matches certificate 2, so put that one first")


def test_two_private_keys(tls_material, tmp_path):
    path = tmp_path / "two.pem"
    path.write_text(tls_material.server.key_pem + tls_material.alice.key_pem + tls_material.server.chain_pem)
    raises({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)}, "2 private keys")


def test_damaged_base64(tls_material):
    damaged = tls_material.server.chain_pem.replace("M", "*", 3)
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.key": tls_material.server.key_pem, "ssl.keystore.certificate.chain": damaged}
    raises(props, "ssl.keystore.certificate.chain", "not base64")


def test_missing_file(tls_material, tmp_path):
    missing = tmp_path / "nope.pem"
    raises({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(missing)}, f"ssl.keystore.location={missing}", "no such file")


def test_directory_instead_of_a_file(tmp_path):
    raises({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path)}, "is a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(tls_material, tmp_path):
    path = tmp_path / "locked.pem"
    shutil.copy(tls_material.server.keystore_path, path)
    path.chmod(0)
    raises({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)}, "permission denied")


def test_pem_type_with_a_file_that_is_not_pem(tmp_path):
    path = tmp_path / "junk.pem"
    path.write_text("hello\n")
    raises({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path)}, "is not a PEM file")


def test_keystore_password_is_refused_with_pem(tls_material):
    raises(keystore_file(tls_material, **{"ssl.keystore.password": "x"}), "ssl.keystore.password cannot be used with PEM")


def test_location_and_inline_key_together(tls_material):
    props = keystore_file(tls_material, **{"ssl.keystore.key": tls_material.server.key_pem, "ssl.keystore.certificate.chain": tls_material.server.chain_pem})
    raises(props, "keep one")


def test_inline_key_without_chain(tls_material):
    raises({"ssl.keystore.type": "PEM", "ssl.keystore.key": tls_material.server.key_pem}, "ssl.keystore.certificate.chain is not")


def test_inline_key_needs_the_pem_type(tls_material):
    props = {"ssl.keystore.key": tls_material.server.key_pem, "ssl.keystore.certificate.chain": tls_material.server.chain_pem}
    raises(props, "ssl.keystore.type=PEM", "JKS (Kafka's default)")


def test_lower_case_pem_type(tls_material):
    raises(keystore_file(tls_material, **{"ssl.keystore.type": "pem"}), "case-sensitively", "write PEM")


def test_listener_without_a_keystore():
    raises({}, "listener SSL", "set ssl.keystore.type=PEM and ssl.keystore.location")
    raises({"listener.name.ssl.ssl.client.auth": "none"}, "set listener.name.ssl.ssl.keystore.type=PEM")


# -- JKS and PKCS12 --------------------------------------------------------------------------------------------------


def jks_file(tmp_path):
    # Only the magic number matters: kafka-shim recognises a JKS store and explains; it never parses one.
    path = tmp_path / "server.keystore.jks"
    path.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + os.urandom(64))
    return path


def test_jks_keystore_gets_conversion_commands(tmp_path):
    path = jks_file(tmp_path)
    message = raises({"ssl.keystore.type": "JKS", "ssl.keystore.location": str(path), "ssl.keystore.password": "x"},
                     "JKS store", f"keytool -importkeystore -srckeystore {path}", "openssl pkcs12 -in keystore.p12", "ssl.keystore.type=PEM")
    assert "ssl.key.password" in message


def test_untyped_location_is_jks_by_default_and_says_so(tmp_path):
    raises({"ssl.keystore.location": str(jks_file(tmp_path))}, "JKS (Kafka's default", "keytool -importkeystore")


def test_pkcs12_keystore_gets_an_openssl_command(tls_material, tmp_path):
    p12 = pkcs12.serialize_key_and_certificates(b"server", server_key(tls_material), None, None, serialization.BestAvailableEncryption(b"pw"))
    path = tmp_path / "server.p12"
    path.write_bytes(p12)
    message = raises({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(path), "ssl.keystore.password": "pw"},
                     "PKCS12 store", f"openssl pkcs12 -in {path} -out keystore.pem -nodes")
    assert "keytool" not in message


def test_pem_file_declared_as_pkcs12(tls_material):
    raises(keystore_file(tls_material, **{"ssl.keystore.type": "PKCS12"}), "is a PEM file", "ssl.keystore.type=PEM")


def test_jks_truststore_gets_an_export_command(tls_material, tmp_path):
    path = jks_file(tmp_path)
    props = keystore_file(tls_material, **{"ssl.client.auth": "required", "ssl.truststore.location": str(path), "ssl.truststore.password": "x"})
    raises(props, "ssl.truststore.location", f"keytool -list -rfc -keystore {path} > truststore.pem", "ssl.truststore.type=PEM")


# -- trust stores, client auth, listener prefixes --------------------------------------------------------------------


def test_truststore_password_is_refused_with_pem(tls_material):
    props = keystore_file(tls_material, **{"ssl.client.auth": "required", "ssl.truststore.type": "PEM",
                                            "ssl.truststore.location": str(tls_material.ca_path), "ssl.truststore.password": "x"})
    raises(props, "ssl.truststore.password cannot be used with PEM")


@pytest.mark.parametrize("client_auth", ["required", "none"])
def test_truststore_without_certificates(tls_material, client_auth):
    # Kafka loads a configured trust store even when it does not ask clients for certificates.
    props = keystore_file(tls_material, **{"ssl.client.auth": client_auth, "ssl.truststore.type": "PEM",
                                            "ssl.truststore.certificates": tls_material.server.key_pem})
    raises(props, "ssl.truststore.certificates holds no PEM certificate")


def test_client_auth_values_are_kafkas():
    assert ssl_client_auth("SSL", {}) == "none"
    assert ssl_client_auth("SSL", {"ssl.client.auth": "requested"}) == "requested"
    with pytest.raises(ConfigError) as info:
        ssl_client_auth("SSL", {"ssl.client.auth": "REQUIRED"})
    assert str(info.value) == "Invalid value REQUIRED for configuration ssl.client.auth: String must be one of: required, requested, none"


def test_sasl_ssl_listeners_take_client_auth_only_from_the_listener_prefix():
    # KIP-684: the broker-wide key applies to SSL listeners only.
    props = {"ssl.client.auth": "required"}
    assert ssl_client_auth("SASL_SSL", props, "SASL_SSL") == "none"
    assert ssl_client_auth("SSL", props, "SSL") == "required"
    props["listener.name.sasl_ssl.ssl.client.auth"] = "requested"
    assert ssl_client_auth("SASL_SSL", props, "SASL_SSL") == "requested"


async def test_listener_prefixed_keys_win_and_the_prefix_is_lower_case(tls_material, tmp_path):
    missing = str(tmp_path / "missing.pem")
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": missing,
        "listener.name.internal_ssl.ssl.keystore.location": str(tls_material.server.keystore_path),
        "listener.name.INTERNAL_SSL.ssl.keystore.location": missing,  # Kafka never reads this spelling
    }
    assert await served_dn(tls_material, listener_ssl_context("INTERNAL_SSL", props)) == "CN=localhost,O=Example"
    # Another listener gets the broker-wide value, and the error names the key that was used.
    raises(props, f"ssl.keystore.location={missing}", listener="EXTERNAL")


async def test_listener_prefixed_client_auth(tls_material):
    props = keystore_file(tls_material, **{"ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls_material.ca_path),
                                            "listener.name.mtls.ssl.client.auth": "required"})
    assert listener_ssl_context("MTLS", props).verify_mode == ssl.CERT_REQUIRED
    assert listener_ssl_context("PLAIN_TLS", props).verify_mode == ssl.CERT_NONE


# -- protocols and cipher suites -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("protocols", "low", "high"), [
    (None, ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3),  # Kafka's default: TLSv1.2,TLSv1.3
    ("TLSv1.2", ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2),
    ("TLSv1.3", ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3),
    (" TLSv1.3 , TLSv1.2 ", ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3),
    ("", ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3),  # empty: what a Java server engine enables by default
])
def test_enabled_protocols_map_to_versions(tls_material, protocols, low, high):
    extra = {} if protocols is None else {"ssl.enabled.protocols": protocols}
    ctx = listener_ssl_context("SSL", keystore_file(tls_material, **extra))
    assert (ctx.minimum_version, ctx.maximum_version) == (low, high)


def test_empty_enabled_protocols_on_a_client_follow_ssl_protocol(tls_material):
    ctx = client_ssl_context({"ssl.enabled.protocols": "", "ssl.protocol": "TLSv1.2"})
    assert (ctx.minimum_version, ctx.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)


def test_only_disabled_protocols(tls_material):
    raises(keystore_file(tls_material, **{"ssl.enabled.protocols": "TLSv1,TLSv1.1"}), "leaves no usable protocol")


def test_unknown_protocol(tls_material):
    raises(keystore_file(tls_material, **{"ssl.enabled.protocols": "TLSv1.2,TLSv1.4"}), "unsupported protocols TLSv1.4")


def test_cipher_suites_none_of_which_map(tls_material):
    raises(keystore_file(tls_material, **{"ssl.cipher.suites": "TLS_KRB5_WITH_RC4_128_SHA,SOME_THING"}),
           "ssl.cipher.suites", "names differ from Java's", "no OpenSSL equivalent known for TLS_KRB5_WITH_RC4_128_SHA, SOME_THING")


def test_tls12_only_suites_with_tls13_only_protocols(tls_material):
    props = keystore_file(tls_material, **{"ssl.enabled.protocols": "TLSv1.3", "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})
    raises(props, "leaves no suite for the enabled protocols")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_cipher_name_translation_agrees_with_openssl():
    listing = subprocess.run(["openssl", "ciphers", "-stdname", "ALL:COMPLEMENTOFALL"], capture_output=True, text=True, check=True).stdout
    pairs = [line.split()[::2][:2] for line in listing.splitlines()]
    checked = 0
    for standard, openssl_name in pairs:
        if standard == openssl_name or "PSK" in standard or "SRP" in standard:
            continue  # TLS 1.3 suites (same names), and suites Kafka has no use for
        assert openssl_cipher_name(standard) == openssl_name, standard
        checked += 1
    assert checked > 40
