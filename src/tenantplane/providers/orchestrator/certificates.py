"""Per-cluster certificate authorities, as a vCluster deployment generates them."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CA_VALIDITY = timedelta(days=3650)


def new_cluster_ca(common_name: str, now: datetime) -> str:
    """A fresh self-signed CA certificate: PEM, base64-encoded (kubeconfig's
    certificate-authority-data), valid from ``now``. The private key stays with the cluster
    (here: discarded).

    Validity orders no work of ours: it is judged by the clients that connect to the
    cluster, by their own clocks. ``now`` is still the database's time (the simulator's
    clock), which costs nothing and is the best guess of theirs: a worker whose clock ran
    ten minutes ahead would otherwise hand out a CA that correct clients refuse as not yet
    valid for five minutes (the five minutes' margin below is for their skew)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tenantplane"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64]),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    return base64.b64encode(pem).decode("ascii")
