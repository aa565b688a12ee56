"""A small schema language for Alertmanager's YAML structures, checked over JSON values.

Alertmanager unmarshals strictly: unknown keys and values of the wrong YAML type are errors.
Each field kind below checks one Go type (string, bool, uint, duration, URL, host:port…).
Fields that name files on the server are refused: a tenant must never make the service or
a shared Alertmanager read local files (Mimir refuses them for the same reason).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tenantplane.alerting.validation.addresses import parse_host_port, parse_http_url
from tenantplane.alerting.validation.durations import parse_duration, parse_go_duration
from tenantplane.alerting.validation.errors import ConfigError, join

Check = Callable[[Any, str], None]


def string(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise ConfigError("must be a string", path)


def boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise ConfigError("must be a boolean", path)


def unsigned(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= 2**64:
        raise ConfigError("must be a non-negative integer", path)


def duration(value: Any, path: str) -> None:
    string(value, path)
    try:
        parse_duration(value)
    except ValueError as exc:
        raise ConfigError(str(exc), path, "INVALID_DURATION") from None


def go_duration(value: Any, path: str) -> None:
    """A Go time.Duration (`1.5h`, `300ms`), as Pushover's retry and expire are."""
    string(value, path)
    try:
        parse_go_duration(value)
    except ValueError as exc:
        raise ConfigError(str(exc), path, "INVALID_DURATION") from None


def integer(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise ConfigError("must be an integer", path)


def url(value: Any, path: str) -> None:
    string(value, path)
    try:
        parse_http_url(value)
    except ValueError as exc:
        raise ConfigError(str(exc), path, "INVALID_URL") from None


def secret_url(value: Any, path: str) -> None:
    """A SecretURL also takes `<secret>` (so a redacted config read back still loads)."""
    if value != "<secret>":
        url(value, path)


def host_port(value: Any, path: str) -> None:
    string(value, path)
    try:
        parse_host_port(value)
    except ValueError as exc:
        raise ConfigError(str(exc), path) from None


def not_allowed(value: Any, path: str) -> None:
    raise ConfigError(
        "fields naming files or proxies on the server are not allowed",
        path,
        "FILE_REFERENCE_NOT_ALLOWED",
    )


def oauth2_token_url(value: Any, path: str) -> None:
    """A string, as Alertmanager takes it (parsed only when a token is fetched); declared
    apart so that the firewall knows it names a destination."""
    string(value, path)


# Field kinds whose values name where Alertmanager connects to (the firewall checks them).
URL_KINDS: frozenset[Check] = frozenset({url, secret_url, oauth2_token_url})
HOST_PORT_KINDS: frozenset[Check] = frozenset({host_port})


class ListOf:
    """An array whose elements are each checked by ``item``."""

    def __init__(self, item: Check) -> None:
        self.item = item

    def __call__(self, value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise ConfigError("must be an array", path)
        for index, element in enumerate(value):
            self.item(element, join(path, index))


def list_of(item: Check) -> Check:
    return ListOf(item)


def map_of_strings(value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise ConfigError("must be an object with string values", path)
    for key, element in value.items():
        string(element, join(path, key))


string_list = list_of(string)


class Obj:
    """An object with exactly these optional fields (unknown keys are errors), then the
    object's own ``rules`` over the fields together."""

    def __init__(self, fields: Mapping[str, Check], rules: Check | None = None) -> None:
        self.fields = fields
        self.rules = rules

    def __call__(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise ConfigError("must be an object", path)
        for key, element in value.items():
            field_path = join(path, key)
            if key not in self.fields:
                raise ConfigError(f"unknown field: {key}", field_path, "UNKNOWN_FIELD")
            self.fields[key](element, field_path)
        if self.rules is not None:
            self.rules(value, path)


def obj(fields: Mapping[str, Check], rules: Check | None = None) -> Check:
    return Obj(fields, rules)


def fields_of_kinds(
    check: Check, value: Any, path: str, kinds: frozenset[Check]
) -> Iterator[tuple[Check, str, str]]:
    """(kind, value, path) of every string in ``value`` that ``check`` declares as one of
    ``kinds``, at any depth (``value`` already passed ``check``)."""
    if isinstance(check, Obj) and isinstance(value, dict):
        for key, element in value.items():
            if key in check.fields:
                yield from fields_of_kinds(check.fields[key], element, join(path, key), kinds)
    elif isinstance(check, ListOf) and isinstance(value, list):
        for index, element in enumerate(value):
            yield from fields_of_kinds(check.item, element, join(path, index), kinds)
    elif check in kinds and isinstance(value, str):
        yield check, value, path


def no_redirects(value: Any, path: str) -> None:
    """``follow_redirects``: only false. A receiver answering a redirect would lead
    Alertmanager past the receivers firewall; rendered configurations set false anyway."""
    boolean(value, path)
    if value:
        raise ConfigError(
            "redirects are never followed: follow_redirects may only be false",
            path,
            "REDIRECTS_NOT_ALLOWED",
        )


TLS_VERSIONS = frozenset({"TLS10", "TLS11", "TLS12", "TLS13"})


def tls_version(value: Any, path: str) -> None:
    string(value, path)
    if value not in TLS_VERSIONS:
        raise ConfigError(f"unknown TLS version: {value}", path)


tls_config = obj(
    {
        "ca_file": not_allowed,
        "cert_file": not_allowed,
        "key_file": not_allowed,
        "server_name": string,
        "insecure_skip_verify": boolean,
        "min_version": tls_version,
    }
)

_HTTP_FIELDS: dict[str, Check] = {
    "basic_auth": obj({"username": string, "password": string, "password_file": not_allowed}),
    "authorization": obj({"type": string, "credentials": string, "credentials_file": not_allowed}),
    "oauth2": obj(
        {
            "client_id": string,
            "client_secret": string,
            "client_secret_file": not_allowed,
            "scopes": string_list,
            "token_url": oauth2_token_url,
            "endpoint_params": map_of_strings,
            "tls_config": tls_config,
            "proxy_url": not_allowed,
        }
    ),
    "bearer_token": string,
    "bearer_token_file": not_allowed,
    "proxy_url": not_allowed,
    "tls_config": tls_config,
    "follow_redirects": no_redirects,
    "enable_http2": boolean,
}


def _http_config_rules(value: Any, path: str) -> None:
    """prometheus/common HTTPClientConfig.Validate()."""
    bearer = bool(value.get("bearer_token"))
    basic = value.get("basic_auth") is not None
    oauth2 = value.get("oauth2")
    authorization = value.get("authorization")
    if (basic or oauth2 is not None) and bearer:
        raise ConfigError(
            "at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be "
            "configured",
            path,
        )
    if authorization is not None:
        if bearer:
            raise ConfigError(
                "authorization is not compatible with bearer_token & bearer_token_file", path
            )
        kind = authorization.get("type", "").strip()
        if kind.lower() == "basic":
            raise ConfigError(
                'authorization type cannot be set to "basic", use "basic_auth" instead',
                join(path, "authorization.type"),
            )
        if basic or oauth2 is not None:
            raise ConfigError(
                "at most one of basic_auth, oauth2 & authorization must be configured", path
            )
    if oauth2 is not None:
        if basic:
            raise ConfigError(
                "at most one of basic_auth, oauth2 & authorization must be configured", path
            )
        for key, message in (
            ("client_id", "oauth2 client_id must be configured"),
            (
                "client_secret",
                "either oauth2 client_secret or client_secret_file must be configured",
            ),
            ("token_url", "oauth2 token_url must be configured"),
        ):
            if not oauth2.get(key):
                raise ConfigError(message, join(path, f"oauth2.{key}"))


http_config = obj(_HTTP_FIELDS, _http_config_rules)
