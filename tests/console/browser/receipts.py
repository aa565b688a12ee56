"""The payment provider's receipt host as the browser reaches it. The fake Paddle's receipt
links name https://sandbox-invoice.paddle.test, which does not exist, and the console sends
the browser there by a redirect: the browser's network stack follows redirects beyond
Playwright's request routing, so it would look that name up in DNS. Chromium is told instead
(--host-resolver-rules) that the name is a TLS server on loopback, which serves a PDF for any
path and records the paths asked for; its certificate is its own (the one context that
downloads a receipt ignores certificate errors)."""

from __future__ import annotations

import datetime
import ssl
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.fakes.paddle import INVOICE_HOST
from tests.fakes.server import QuietHandler

RECEIPT = b"%PDF-1.4\n% the provider's receipt\n%%EOF\n"


@dataclass
class ReceiptHost:
    port: int
    # The paths (with their queries) the browser asked for, in order.
    asked: list[str] = field(default_factory=list)

    @property
    def resolver_rule(self) -> str:
        # Every other name fails to resolve: a redirect off the origin (which request
        # routing does not see) cannot reach the network either.
        host = urlsplit(INVOICE_HOST).hostname
        return (
            f"MAP {host} 127.0.0.1:{self.port}, MAP * ~NOTFOUND, "
            "EXCLUDE localhost, EXCLUDE 127.0.0.1"
        )


def _self_signed(directory: Path, host: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    certificate_file, key_file = directory / "receipts.crt", directory / "receipts.key"
    certificate_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certificate_file, key_file


@contextmanager
def receipt_host() -> Iterator[ReceiptHost]:
    with tempfile.TemporaryDirectory() as directory:
        certificate, key = _self_signed(Path(directory), str(urlsplit(INVOICE_HOST).hostname))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
    asked: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/pdf")
            self.send_header("Content-Disposition", 'attachment; filename="receipt.pdf"')
            self.send_header("Content-Length", str(len(RECEIPT)))
            self.end_headers()
            self.wfile.write(RECEIPT)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield ReceiptHost(server.server_address[1], asked)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
