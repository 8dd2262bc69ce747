"""certificate_dn renders a subject exactly as Java's X500Principal.getName() does (Kafka's default TLS principal).

Every expected string below was produced by JDK 17 from the same certificate or DER name
(CertificateFactory -> getSubjectX500Principal().getName(), and new X500Principal(der).getName()).
"""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID, ObjectIdentifier

from kafka_shim.shim.security.tls.principal import certificate_dn, name_dn

A = x509.NameAttribute
UTF8 = _ASN1Type.UTF8String
KEY = ec.generate_private_key(ec.SECP256R1())


def rdns(*attributes: x509.NameAttribute) -> list[x509.RelativeDistinguishedName]:
    """Single-valued RDNs, most significant first (the DER order; Java writes them last first)."""
    return [x509.RelativeDistinguishedName([a]) for a in attributes]


def multi(*attributes: x509.NameAttribute) -> x509.RelativeDistinguishedName:
    return x509.RelativeDistinguishedName(attributes)


def certificate(subject: list[x509.RelativeDistinguishedName]) -> bytes:
    now = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(x509.Name([x509.RelativeDistinguishedName([A(NameOID.COMMON_NAME, "issuer")])]))
        .public_key(KEY.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(KEY, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


CASES = {
    "simple": (rdns(A(NameOID.ORGANIZATION_NAME, "Example"), A(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"), A(NameOID.COMMON_NAME, "alice")),
               "CN=alice,OU=eng,O=Example"),
    "every keyword": (
        rdns(A(NameOID.DOMAIN_COMPONENT, "com"), A(NameOID.DOMAIN_COMPONENT, "example"), A(NameOID.COUNTRY_NAME, "US"),
             A(NameOID.STATE_OR_PROVINCE_NAME, "CA"), A(NameOID.LOCALITY_NAME, "Palo Alto"), A(NameOID.STREET_ADDRESS, "1 Main St"),
             A(NameOID.ORGANIZATION_NAME, "Ex"), A(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"), A(NameOID.USER_ID, "u123"),
             A(NameOID.COMMON_NAME, "alice")),
        "CN=alice,UID=u123,OU=eng,O=Ex,STREET=1 Main St,L=Palo Alto,ST=CA,C=US,DC=example,DC=com",
    ),
    "emailAddress is an OID with a hex value": (
        rdns(A(NameOID.COMMON_NAME, "alice"), A(NameOID.EMAIL_ADDRESS, "alice@example.com")),
        "1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d,CN=alice",
    ),
    "other attribute types": (
        rdns(A(NameOID.SERIAL_NUMBER, "1234"), A(NameOID.TITLE, "Dr"), A(NameOID.GIVEN_NAME, "Al"), A(NameOID.SURNAME, "Ice"),
             A(NameOID.PSEUDONYM, "ps"), A(NameOID.BUSINESS_CATEGORY, "biz"), A(NameOID.DN_QUALIFIER, "q"),
             A(NameOID.GENERATION_QUALIFIER, "III"), A(NameOID.INITIALS, "A"), A(NameOID.COMMON_NAME, "x")),
        "CN=x,2.5.4.43=#0c0141,2.5.4.44=#0c03494949,2.5.4.46=#130171,2.5.4.15=#0c0362697a,2.5.4.65=#0c027073,"
        "2.5.4.4=#0c03496365,2.5.4.42=#0c02416c,2.5.4.12=#0c024472,2.5.4.5=#130431323334",
    ),
    "unknown OID": (rdns(A(ObjectIdentifier("1.2.3.4.5"), "zz", UTF8), A(NameOID.COMMON_NAME, "y")), "CN=y,1.2.3.4.5=#0c027a7a"),
    "special characters": (rdns(A(NameOID.COMMON_NAME, 'a,b+c"d\\e<f>g;h=i#j', UTF8)), 'CN=a\\,b\\+c\\"d\\\\e\\<f\\>g\\;h\\=i\\#j'),
    "leading #": (rdns(A(NameOID.COMMON_NAME, "#x", UTF8)), "CN=\\#x"),
    "leading +": (rdns(A(NameOID.COMMON_NAME, "+x", UTF8)), "CN=\\+x"),
    "trailing backslash": (rdns(A(NameOID.COMMON_NAME, "x\\", UTF8)), "CN=x\\\\"),
    "leading and trailing spaces": (
        rdns(A(NameOID.ORGANIZATION_NAME, " lead", UTF8), A(NameOID.ORGANIZATIONAL_UNIT_NAME, "trail ", UTF8),
             A(NameOID.COMMON_NAME, "  both  ", UTF8)),
        "CN=\\ \\ both\\ \\ ,OU=trail\\ ,O=\\ lead",
    ),
    "only a space": (rdns(A(NameOID.COMMON_NAME, " ", UTF8)), "CN=\\ "),
    "inner spaces": (rdns(A(NameOID.COMMON_NAME, "a  b", UTF8)), "CN=a  b"),
    "leading and trailing CR": (rdns(A(NameOID.COMMON_NAME, "\rx\r", UTF8)), "CN=\\\rx\\\r"),
    "control characters": (rdns(A(NameOID.COMMON_NAME, "a\x00b\x01c\td\ne\x7f", UTF8)), "CN=a\\00b\x01c\td\ne\x7f"),
    "no-break spaces are not escaped": (rdns(A(NameOID.COMMON_NAME, "\u00a0x\u00a0", UTF8)), "CN=\u00a0x\u00a0"),
    "punctuation that needs no escape": (
        rdns(A(NameOID.COMMON_NAME, "a@b_c*d!e$f%g&h(i)j'k.l/m:n?o-p[q]r{s}t~u`v^w|x", UTF8)),
        "CN=a@b_c*d!e$f%g&h(i)j'k.l/m:n?o-p[q]r{s}t~u`v^w|x",
    ),
    "non-ASCII": (rdns(A(NameOID.ORGANIZATION_NAME, "Zoë Ärger", UTF8), A(NameOID.COMMON_NAME, "日本 😀", UTF8)), "CN=日本 😀,O=Zoë Ärger"),
    "BMPString is read as UTF-8 bytes": (rdns(A(NameOID.COMMON_NAME, "Ärger,x", _ASN1Type.BMPString)),
                                         "CN=\\00\ufffd\\00r\\00g\\00e\\00r\\00\\,\\00x"),
    "T61String": (rdns(A(NameOID.COMMON_NAME, "café", _ASN1Type.T61String)), "CN=café"),
    "IA5String": (rdns(A(NameOID.COMMON_NAME, "ia5", _ASN1Type.IA5String)), "CN=ia5"),
    "PrintableString": (rdns(A(NameOID.COMMON_NAME, "print", _ASN1Type.PrintableString)), "CN=print"),
    "UniversalString is not a string to Java": (rdns(A(NameOID.COMMON_NAME, "uni", _ASN1Type.UniversalString)),
                                                "CN=#1c0c000000750000006e00000069"),
    "VisibleString is not a string to Java": (rdns(A(NameOID.COMMON_NAME, "vis", _ASN1Type.VisibleString)), "CN=#1a03766973"),
    "DC as IA5String": (rdns(A(NameOID.DOMAIN_COMPONENT, "example", _ASN1Type.IA5String), A(NameOID.COMMON_NAME, "h")), "CN=h,DC=example"),
    "UID alone": (rdns(A(NameOID.USER_ID, "jdoe", UTF8)), "UID=jdoe"),
    "multi-valued RDN": ([x509.RelativeDistinguishedName([A(NameOID.ORGANIZATION_NAME, "Ex")]),
                          multi(A(NameOID.COMMON_NAME, "alice"), A(NameOID.USER_ID, "42"))], "CN=alice+UID=42,O=Ex"),
    "multi-valued RDN in DER order": ([multi(A(NameOID.USER_ID, "9"), A(NameOID.COMMON_NAME, "zed"))], "CN=zed+UID=9"),
    "multi-valued RDN with an OID": ([multi(A(NameOID.COMMON_NAME, "bob"), A(NameOID.EMAIL_ADDRESS, "b@x"),
                                            A(NameOID.ORGANIZATIONAL_UNIT_NAME, "ops"))],
                                     "CN=bob+OU=ops+1.2.840.113549.1.9.1=#1603624078"),
    "empty value": (rdns(A(NameOID.ORGANIZATION_NAME, "", UTF8), A(NameOID.COMMON_NAME, "e")), "CN=e,O="),
    "empty subject": ([], ""),
}


@pytest.mark.parametrize(("subject", "expected"), CASES.values(), ids=CASES.keys())
def test_subject_renders_as_java_does(subject, expected):
    assert certificate_dn(certificate(subject)) == expected


def der(tag: int, content: bytes) -> bytes:
    size = len(content)
    length = bytes([size]) if size < 0x80 else bytes([0x80 | ((size.bit_length() + 7) // 8)]) + size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([tag]) + length + content


CN = der(0x06, bytes([0x55, 0x04, 0x03]))


def name(*attributes: tuple[bytes, bytes]) -> bytes:
    return der(0x30, b"".join(der(0x31, der(0x30, oid + value)) for oid, value in attributes))


@pytest.mark.parametrize(("name_der", "expected"), [
    # Invalid UTF-8 becomes U+FFFD as Java's decoder does it (ED A0 80, an encoded surrogate, is one replacement).
    (name((CN, der(0x0C, b"\xed\xa0\x80x\xc3"))), "CN=\ufffdx\ufffd"),
    (name((CN, der(0x13, b"a\x80b"))), "CN=a\ufffdb"),
    (name((CN, der(0x02, b"\x01\x00"))), "CN=#02020100"),  # a non-string value after a keyword
    (name((der(0x06, bytes([0x88, 0x37, 0x01])), der(0x0C, b"v"))), "2.999.1=#0c0176"),  # a first arc of 2 with a large second
    (name((CN, der(0x0C, b"x" * 200))), "CN=" + "x" * 200),  # long-form lengths
])
def test_raw_names_render_as_java_does(name_der, expected):
    assert name_dn(name_der) == expected


def test_the_generated_clients_have_the_documented_subjects(tls_material):
    for identity in (tls_material.server, tls_material.alice, tls_material.bob):
        pem = identity.cert_pem.encode()
        der_bytes = x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
        assert certificate_dn(der_bytes) == identity.dn


def test_garbage_is_not_a_certificate():
    with pytest.raises(ValueError, match=r"not a DER X\.509 certificate"):
        certificate_dn(b"\x30\x03\x02\x01\x01")
