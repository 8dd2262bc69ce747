"""Real TLS handshakes over loopback with contexts built from Kafka's keys: client authentication modes, the principal
the server derives, protocols and cipher suites."""

from __future__ import annotations

import datetime
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kafka_shim.shim.security.tls.context import client_ssl_context, listener_ssl_context
from kafka_shim.shim.security.tls.principal import SslPrincipalMapper, certificate_dn
from tests.support.tls_loopback import MAPPING_FAILED, exchange
from tests.support.tls_material import TlsMaterial

ALICE = "User:CN=alice,OU=eng,O=Example"


def server(m: TlsMaterial, client_auth: str = "none", **extra: str) -> ssl.SSLContext:
    return listener_ssl_context("SSL", m.broker_properties("SSL", client_auth) | extra)


def client(m: TlsMaterial, identity=None, **extra: str) -> ssl.SSLContext:
    return client_ssl_context(m.client_properties(identity) | extra)


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
async def test_required_rejects_a_client_without_a_certificate(tls_material, version):
    result = await exchange(server(tls_material, "required", **{"ssl.enabled.protocols": version}), client(tls_material))
    assert result.principals == []  # the server never accepted the connection
    assert not result.reply  # on TLS 1.3 the client learns it only when reading: an alert or the connection closed


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
async def test_required_accepts_a_client_certificate_and_names_its_subject(tls_material, version):
    result = await exchange(server(tls_material, "required", **{"ssl.enabled.protocols": version}), client(tls_material, tls_material.alice))
    assert result.principals == [ALICE]
    assert result.reply == ALICE.encode()
    assert result.version == version


async def test_required_rejects_a_certificate_from_an_untrusted_issuer(tls_material, tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mallory")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    keystore = tmp_path / "mallory.pem"
    keystore.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        + cert.public_bytes(serialization.Encoding.PEM)
    )
    mallory = client_ssl_context(tls_material.client_properties() | {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)})
    for auth in ("required", "requested"):
        result = await exchange(server(tls_material, auth), mallory)
        assert result.principals == [], auth
        assert not result.reply, auth


async def test_requested_accepts_clients_with_and_without_a_certificate(tls_material):
    ctx = server(tls_material, "requested")
    anonymous = await exchange(ctx, client(tls_material))
    assert anonymous.principals == ["User:ANONYMOUS"]
    assert anonymous.reply == b"User:ANONYMOUS"
    bob = await exchange(ctx, client(tls_material, tls_material.bob))
    assert bob.principals == ["User:CN=bob,OU=ops,O=Example"]


async def test_none_does_not_ask_for_the_certificate_a_client_has(tls_material):
    result = await exchange(server(tls_material, "none"), client(tls_material, tls_material.alice))
    assert result.principals == ["User:ANONYMOUS"]


async def test_mapping_rules_rewrite_the_subject(tls_material):
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=([^,]*),OU=eng,.*$/$1/, RULE:^CN=([^,]*),.*$/$1@other/U")
    ctx = server(tls_material, "required")
    assert (await exchange(ctx, client(tls_material, tls_material.alice), mapper)).principals == ["User:alice"]
    assert (await exchange(ctx, client(tls_material, tls_material.bob), mapper)).principals == ["User:BOB@OTHER"]


async def test_a_subject_no_rule_maps_fails_the_authentication(tls_material):
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=([^,]*),OU=eng,.*$/$1/")
    result = await exchange(server(tls_material, "required"), client(tls_material, tls_material.bob), mapper)
    assert result.principals == [MAPPING_FAILED]


async def test_the_server_presents_its_certificate_chain_from_the_keystore(tls_material):
    result = await exchange(server(tls_material), client(tls_material))
    assert certificate_dn(result.server_certificate) == "CN=localhost,O=Example"


@pytest.mark.parametrize(("server_protocols", "client_protocols", "negotiated"), [
    ("TLSv1.2", "TLSv1.2,TLSv1.3", "TLSv1.2"),
    ("TLSv1.3", "TLSv1.2,TLSv1.3", "TLSv1.3"),
    ("TLSv1.2,TLSv1.3", "TLSv1.2", "TLSv1.2"),
    ("TLSv1.1,TLSv1.2", "TLSv1.2,TLSv1.3", "TLSv1.2"),  # TLSv1.1 is known to Java but disabled: ignored
])
async def test_enabled_protocols_decide_the_version(tls_material, server_protocols, client_protocols, negotiated):
    result = await exchange(
        server(tls_material, **{"ssl.enabled.protocols": server_protocols}),
        client(tls_material, **{"ssl.enabled.protocols": client_protocols}),
    )
    assert result.version == negotiated


async def test_no_common_protocol_fails_the_handshake(tls_material):
    result = await exchange(server(tls_material, **{"ssl.enabled.protocols": "TLSv1.3"}), client(tls_material, **{"ssl.enabled.protocols": "TLSv1.2"}))
    assert result.error is not None and result.version is None  # an alert or a reset, before any session exists
    assert result.principals == []


async def test_cipher_suites_named_as_java_names_them_are_used(tls_material):
    suites = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
    result = await exchange(server(tls_material, **{"ssl.cipher.suites": suites}), client(tls_material))
    # Java keeps TLS 1.3 off when no TLS 1.3 suite is listed; so does kafka-shim.
    assert (result.version, result.cipher) == ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384")


async def test_a_tls13_only_suite_list_keeps_tls12_clients_out(tls_material):
    ctx = server(tls_material, **{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"})
    assert (await exchange(ctx, client(tls_material))).version == "TLSv1.3"
    refused = await exchange(ctx, client(tls_material, **{"ssl.enabled.protocols": "TLSv1.2"}))
    assert refused.error is not None and refused.version is None


async def test_client_checks_the_host_name_by_default(tls_material):
    ctx = server(tls_material)
    wrong_name = await exchange(ctx, client(tls_material), server_hostname="kafka.example.com")
    assert isinstance(wrong_name.error, ssl.SSLCertVerificationError)
    assert "Hostname mismatch" in str(wrong_name.error)
    unchecked = await exchange(ctx, client(tls_material, **{"ssl.endpoint.identification.algorithm": ""}), server_hostname="kafka.example.com")
    assert unchecked.reply == b"User:ANONYMOUS"


async def test_client_without_a_truststore_does_not_trust_the_test_ca(tls_material):
    result = await exchange(server(tls_material), client_ssl_context({}))
    assert isinstance(result.error, ssl.SSLCertVerificationError)


async def test_truststore_may_hold_the_server_certificate_itself(tls_material):
    # Java trusts any certificate of its trust store as an anchor, not only a self-signed root.
    ctx = client_ssl_context({"ssl.truststore.type": "PEM", "ssl.truststore.certificates": tls_material.server.cert_pem})
    assert (await exchange(server(tls_material), ctx)).reply == b"User:ANONYMOUS"
