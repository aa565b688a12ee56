"""What a test's browser sent and received: every request's URL, every console page's
Content-Security-Policy header, and every CSP violation the browser reported.

The console must never make the browser request anything from another origin: its pages
load their scripts, styles and fragments from the server alone. During a member's OIDC
sign-in the browser is on the identity provider's pages (``allowing`` its origin for those
steps only); the mock provider's page also links a stylesheet on a CDN, a request of the
provider's page, not of the console's, recorded apart. A request to any origin but the
server's and the provider's is aborted, and still counted; the target of a redirect, which
request routing does not see, cannot leave the machine either: the browser resolves no name
but loopback's and the receipt host's (receipts.py, --host-resolver-rules).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.sync_api import BrowserContext, ConsoleMessage, Request, Response, Route
from playwright.sync_api import Error as PlaywrightError

CSP_VIOLATION = "Content Security Policy"


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass
class Traffic:
    server: str
    provider: str
    requests: list[str] = field(default_factory=list)
    # Requests to elsewhere that the console's pages made (must stay empty).
    outside: list[str] = field(default_factory=list)
    # Requests to elsewhere that the identity provider's own pages made during a sign-in.
    providers_own: list[str] = field(default_factory=list)
    # (URL, Content-Security-Policy or None) of every HTML answer under /console.
    console_pages: list[tuple[str, str | None]] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    _allowed: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._allowed.add(self.server)

    def attach(self, context: BrowserContext) -> None:
        context.route(self._leaves_the_machine, self._abort)
        context.on("request", self._on_request)
        context.on("response", self._on_response)
        context.on("console", self._on_console)

    @contextmanager
    def allowing(self, origin: str) -> Iterator[None]:
        """Requests to ``origin`` are expected while the block runs (a sign-in's steps)."""
        self._allowed.add(origin)
        try:
            yield
        finally:
            self._allowed.discard(origin)

    def _leaves_the_machine(self, url: str) -> bool:
        return origin_of(url) not in (self.server, self.provider)

    @staticmethod
    def _abort(route: Route) -> None:
        route.abort("blockedbyclient")

    def _on_request(self, request: Request) -> None:
        url = request.url
        self.requests.append(url)
        if origin_of(url) in self._allowed:
            return
        if self.provider in self._allowed and origin_of(_frame_url(request)) == self.provider:
            self.providers_own.append(url)
        else:
            self.outside.append(url)

    def _on_response(self, response: Response) -> None:
        url = response.url
        is_html = response.headers.get("content-type", "").startswith("text/html")
        if is_html and url.startswith(f"{self.server}/console"):
            self.console_pages.append((url, response.headers.get("content-security-policy")))

    def _on_console(self, message: ConsoleMessage) -> None:
        if CSP_VIOLATION in message.text:
            self.csp_violations.append(message.text)

    def problems(self) -> list[str]:
        """Everything wrong with what was recorded, as sentences (empty: all is well)."""
        found = [f"a request left the server's origin: {url}" for url in self.outside]
        for url, policy in self.console_pages:
            found += [f"{url}: {problem}" for problem in policy_problems(policy)]
        found += [f"the browser reported a CSP violation: {text}" for text in self.csp_violations]
        return found


# The directives every console page must carry as they are (a page may allow more in
# others: the sign-in page's form may lead to the identity provider).
REQUIRED_DIRECTIVES = {
    "default-src": "'none'",
    "script-src": "'self'",
    "style-src": "'self'",
    "connect-src": "'self'",
    "frame-ancestors": "'none'",
    "base-uri": "'none'",
}


def policy_problems(policy: str | None) -> list[str]:
    """What a Content-Security-Policy header lacks of the console's strict policy."""
    if policy is None:
        return ["served without a Content-Security-Policy header"]
    directives = dict(
        (name, value.strip())
        for name, _, value in (part.strip().partition(" ") for part in policy.split(";"))
    )
    found = [
        f"CSP {name} is {directives.get(name)!r}, not {value!r}"
        for name, value in REQUIRED_DIRECTIVES.items()
        if directives.get(name) != value
    ]
    if not directives.get("form-action", "").startswith("'self'"):
        found.append(f"CSP form-action is {directives.get('form-action')!r}")
    if "unsafe" in policy:
        found.append(f"CSP allows something unsafe: {policy}")
    return found


def _frame_url(request: Request) -> str:
    """The URL of the document that made ``request`` ("" for a service worker's: no frame)."""
    try:
        return request.frame.url
    except PlaywrightError:
        return ""
