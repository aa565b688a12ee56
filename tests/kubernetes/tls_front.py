"""A TLS front on loopback for a plain-HTTP `tenantplane serve`, as a load balancer or ingress
terminates TLS before the API in a deployment: kube-apiserver sends its webhook credential over
TLS only. Its certificate (for 127.0.0.1) is signed by the bed's stand-in tenant cluster CA,
which the webhook kubeconfig then names (TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_CA_FILE)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CHUNK = 64 * 1024


def loopback_certificate(ca_certificate: Path, ca_key: Path, directory: Path) -> tuple[Path, Path]:
    """A serving certificate for 127.0.0.1 signed by the CA; (certificate, key) files."""
    authority = x509.load_pem_x509_certificate(ca_certificate.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tenantplane")]))
        .issuer_name(authority.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    certificate_file, key_file = directory / "front.crt", directory / "front.key"
    certificate_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certificate_file, key_file


def _pipe(source: socket.socket, destination: socket.socket) -> None:
    try:
        while chunk := source.recv(CHUNK):
            destination.sendall(chunk)
    except OSError:
        pass
    finally:
        for side in (source, destination):
            with suppress(OSError):
                side.shutdown(socket.SHUT_RDWR)


@contextmanager
def tls_front(port: int, upstream_port: int, certificate: Path, key: Path) -> Iterator[str]:
    """TLS on loopback ``port``, each connection piped to ``upstream_port``; its URL."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            try:
                secured = context.wrap_socket(self.request, server_side=True)
            except (ssl.SSLError, OSError):
                return
            with secured, socket.create_connection(("127.0.0.1", upstream_port)) as upstream:
                back = threading.Thread(target=_pipe, args=(upstream, secured), daemon=True)
                back.start()
                _pipe(secured, upstream)
                back.join(timeout=30)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    with Server(("127.0.0.1", port), Handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"https://127.0.0.1:{port}"
        finally:
            server.shutdown()
            thread.join(timeout=10)
