"""A throwaway certificate authority for the local control plane, made with `cryptography`.

ECDSA P-256 keys throughout: generating one takes microseconds where RSA-2048 takes tens of
milliseconds, and kube-apiserver, client-go and controller-runtime accept ECDSA for serving,
client and service-account signing keys alike.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from harness.core import atomic_write

VALIDITY = dt.timedelta(days=30)  # long enough for a person's `make cluster`, short enough to be obviously local


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def public_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@dataclass(frozen=True)
class KeyPair:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return key_pem(self.key)

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """Writes <stem>.crt and <stem>.key (or tls.crt/tls.key with stem="tls")."""
        # Written then renamed (atomic_write), so a process watching the files never reads half of one.
        return (atomic_write(directory / f"{stem}.crt", self.cert_pem),
                atomic_write(directory / f"{stem}.key", self.key_pem, mode=0o600))


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name(attrs + [x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class CA(KeyPair):
    """A self-signed CA that issues serving and client certificates."""

    @classmethod
    def create(cls, cn: str = "aks-ray-kueue-local-ca") -> "CA":
        key = new_key()
        now = dt.datetime.now(dt.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(_name(cn))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))  # tolerate small clock skew between processes
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert, key)

    def _issue(self, subject: x509.Name, usages: list, sans: list | None) -> KeyPair:
        key = new_key()
        now = dt.datetime.now(dt.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, key_cert_sign=False, crl_sign=False,
                                         content_commitment=False, data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return KeyPair(builder.sign(self.key, hashes.SHA256()), key)

    def issue_server(self, cn: str, ips: tuple[str, ...] = ("127.0.0.1",), dns: tuple[str, ...] = ("localhost",)) -> KeyPair:
        """A TLS serving certificate; Go's TLS stack checks SANs only, so every name must be listed."""
        sans = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips] + [x509.DNSName(d) for d in dns]
        return self._issue(_name(cn), [ExtendedKeyUsageOID.SERVER_AUTH], sans)

    def issue_client(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate: kube-apiserver maps CN to the user name and O to the groups."""
        return self._issue(_name(user, groups), [ExtendedKeyUsageOID.CLIENT_AUTH], None)

