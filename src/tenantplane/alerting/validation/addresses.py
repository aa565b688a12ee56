"""URLs and host:port values as Alertmanager parses them (Go's net/url and net.SplitHostPort)."""

from __future__ import annotations

import string

from tenantplane.alerting.validation.hostnames import unescape_host

_HEX = frozenset(string.hexdigits)
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-_.~")
# Characters Go's url.Parse lets stand unescaped in a host (sub-delims, ':' and brackets).
_HOST_EXTRA = frozenset("!$&'()*+,;=:[]<>\"")
_USERINFO_EXTRA = frozenset("-._:~!$&'()*+,;=%@")
_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+-.")


def _check_escapes(text: str, *, host: bool) -> None:
    i = 0
    while i < len(text):
        if text[i] == "%":
            triple = text[i : i + 3]
            if len(triple) < 3 or triple[1] not in _HEX or triple[2] not in _HEX:
                raise ValueError(f'invalid URL escape "{triple}"')
            # In a host only %25 and escapes of non-ASCII bytes are allowed (RFC 6874).
            if host and int(triple[1], 16) < 8 and triple != "%25":
                raise ValueError(f'invalid URL escape "{triple}"')
            i += 3
        else:
            if host and not (
                text[i] in _UNRESERVED or text[i] in _HOST_EXTRA or ord(text[i]) >= 0x80
            ):
                raise ValueError(f'invalid character "{text[i]}" in host name')
            i += 1


def _check_port(port: str) -> None:
    if port == "":
        return
    if port[0] != ":" or any(char not in string.digits for char in port[1:]):
        raise ValueError(f'invalid port "{port}" after host')


def _check_host(host: str) -> None:
    if host.startswith("["):
        end = host.rfind("]")
        if end < 0:
            raise ValueError("missing ']' in host")
        _check_port(host[end + 1 :])
        zone = host[1:end].find("%25")
        if zone >= 0:
            _check_escapes(host[1 + zone : end], host=True)
        return
    colon = host.rfind(":")
    if colon >= 0:
        _check_port(host[colon:])
        host = host[:colon]
    _check_escapes(host, host=True)


def _split_scheme(raw: str) -> tuple[str, str]:
    for index, char in enumerate(raw):
        if char.isascii() and char.isalpha():
            continue
        if char in _SCHEME_CHARS and index > 0:
            continue
        if char == ":":
            if index == 0:
                raise ValueError("missing protocol scheme")
            return raw[:index].lower(), raw[index + 1 :]
        return "", raw
    return "", raw


def parse_http_url(raw: str) -> None:
    """Raise ValueError unless Alertmanager would accept ``raw`` as an http(s) URL."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in raw):
        raise ValueError(f'parse "{raw}": net/url: invalid control character in URL')
    try:
        rest, _, fragment = raw.partition("#")
        scheme, rest = _split_scheme(rest)
        rest = rest.partition("?")[0]
        host = ""
        if rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            path = slash + path
            userinfo, at, hostport = authority.rpartition("@")
            if at and any(c not in _USERINFO_EXTRA and not c.isalnum() for c in userinfo):
                raise ValueError("net/url: invalid userinfo")
            _check_escapes(userinfo, host=False)
            host = hostport if at else authority
            _check_host(host)
        else:
            path = rest
        _check_escapes(path, host=False)
        _check_escapes(fragment, host=False)
    except ValueError as exc:
        raise ValueError(f'parse "{raw}": {exc}') from None
    if scheme not in ("http", "https"):
        raise ValueError(f'unsupported scheme "{scheme}" for URL')
    if host == "":
        raise ValueError("missing host for URL")


def split_host_port(value: str) -> tuple[str, str]:
    """Go's net.SplitHostPort."""

    def error(reason: str) -> ValueError:
        return ValueError(f"address {value}: {reason}")

    colon = value.rfind(":")
    if colon < 0:
        raise error("missing port in address")
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            raise error("missing ']' in address")
        if end + 1 == len(value):
            raise error("missing port in address")
        if end + 1 != colon:
            raise error(
                "too many colons in address" if value[end + 1] == ":" else "missing port in address"
            )
        host, before_open, before_close = value[1:end], 1, end + 1
    else:
        host = value[:colon]
        if ":" in host:
            raise error("too many colons in address")
        before_open, before_close = 0, 0
    if "[" in value[before_open:]:
        raise error("unexpected '[' in address")
    if "]" in value[before_close:]:
        raise error("unexpected ']' in address")
    return host, value[colon + 1 :]


def parse_host_port(value: str) -> None:
    """Alertmanager's HostPort (email smarthost): empty is allowed, a port is required."""
    if value == "":
        return
    _, port = split_host_port(value)
    if port == "":
        raise ValueError(f'address "{value}": port cannot be empty')


_DEFAULT_PORTS = {"http": 80, "https": 443}


def url_host_port(raw: str) -> tuple[str, int | None]:
    """The host (brackets and IPv6 zone removed, escapes decoded) and port a URL connects
    to, as Go's URL.Hostname() and Port() give them, the scheme's port when none is written. Raise
    ValueError when ``raw`` is not an http(s) URL with a host."""
    parse_http_url(raw)
    scheme, rest = _split_scheme(raw.partition("#")[0])
    authority = rest.partition("?")[0][2:].partition("/")[0]
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.rfind("]")
        host, port = hostport[1:end], hostport[end + 2 :]
        host = host.partition("%25")[0]  # an IPv6 zone (%25eth0) names an interface
    else:
        host, _, port = hostport.partition(":") if hostport.count(":") == 1 else (hostport, "", "")
    return unescape_host(host), int(port) if port else _DEFAULT_PORTS.get(scheme)
