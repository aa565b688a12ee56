"""The payment provider's receipt host as the browser reaches it. The fake Paddle's receipt
links name https://sandbox-invoice.paddle.test, which does not exist, and the console sends
the browser there by a redirect: the browser's network stack follows redirects beyond
Playwright's request routing, so it would look that name up in DNS. Chromium is told instead
(--host-resolver-rules) that the name is a TLS server on loopback, which serves a PDF for any
path and records the paths asked for; its certificate is its own (the one context that
downloads a receipt ignores certificate errors)."""

from __future__ import annotations

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

from tests.fakes.paddle import INVOICE_HOST
from tests.fakes.server import QuietHandler
from tests.tls import self_signed

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


@contextmanager
def receipt_host() -> Iterator[ReceiptHost]:
    with tempfile.TemporaryDirectory() as directory:
        host = str(urlsplit(INVOICE_HOST).hostname)
        certificate, key = self_signed(Path(directory), "receipts", x509.DNSName(host))
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
