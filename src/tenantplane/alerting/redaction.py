"""Credentials in a tenant's configuration: shown to admins, `<secret>` to everyone else.

Alertmanager's own API and Grafana show `<secret>` for the same fields (Alertmanager's
`Secret` and `SecretURL` types, and webhook URLs, which carry tokens). A write that sends
`<secret>` back keeps the value stored at the same place: the same field of the same
integration (by position) of the receiver with the same name, or of the global section.
So a configuration read by a readonly member and written back by an admin never replaces
a credential with the placeholder; a placeholder with nothing stored behind it is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from tenantplane.alerting.document import Document
from tenantplane.alerting.validation.errors import ConfigError, join

SECRET = "<secret>"  # noqa: S105 (the placeholder shown instead of a credential)
FieldPath = tuple[str, ...]

_HTTP_CONFIG: tuple[FieldPath, ...] = (
    ("http_config", "basic_auth", "password"),
    ("http_config", "authorization", "credentials"),
    ("http_config", "bearer_token"),
    ("http_config", "oauth2", "client_secret"),
)
# Every integration the validation package supports (a test keeps the two in step).
INTEGRATION_SECRETS: dict[str, tuple[FieldPath, ...]] = {
    "email_configs": (("auth_password",), ("auth_secret",)),
    "slack_configs": (("api_url",), *_HTTP_CONFIG),
    "webhook_configs": (("url",), *_HTTP_CONFIG),
    "pagerduty_configs": (("routing_key",), ("service_key",), *_HTTP_CONFIG),
    "opsgenie_configs": (("api_key",), *_HTTP_CONFIG),
    "discord_configs": (("webhook_url",), *_HTTP_CONFIG),
    "telegram_configs": (("bot_token",), *_HTTP_CONFIG),
    "pushover_configs": (("user_key",), ("token",), *_HTTP_CONFIG),
    "victorops_configs": (("api_key",), *_HTTP_CONFIG),
    "webex_configs": _HTTP_CONFIG,
}
GLOBAL_SECRETS: tuple[FieldPath, ...] = (
    ("smtp_auth_password",),
    ("smtp_auth_secret",),
    ("slack_api_url",),
    ("opsgenie_api_key",),
    ("wechat_api_secret",),
    ("victorops_api_key",),
    *_HTTP_CONFIG,
)


def _lookup(section: Any, path: FieldPath) -> tuple[dict[str, Any], str] | None:
    """The object holding the field at ``path`` and its key, when the field is set."""
    node = section
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and path[-1] in node:
        return node, path[-1]
    return None


def _global_fields(glob: Any) -> Iterator[tuple[str, FieldPath, dict[str, Any], str]]:
    for path in GLOBAL_SECRETS:
        found = _lookup(glob, path)
        if found is not None:
            yield "", path, *found


def _receiver_fields(receiver: Any) -> Iterator[tuple[str, FieldPath, dict[str, Any], str]]:
    """(integration key and index, field path, holder, key) of each credential set."""
    if not isinstance(receiver, dict):
        return
    for integration, paths in INTEGRATION_SECRETS.items():
        configs = receiver.get(integration)
        if not isinstance(configs, list):
            continue
        for index, config in enumerate(configs):
            for path in paths:
                found = _lookup(config, path)
                if found is not None:
                    yield join(integration, index), path, *found


def _redact_all(fields: Iterator[tuple[str, FieldPath, dict[str, Any], str]]) -> None:
    for _, _, holder, key in fields:
        if isinstance(holder[key], str) and holder[key]:
            holder[key] = SECRET


def redact_receiver(receiver: dict[str, Any]) -> dict[str, Any]:
    redacted = copy.deepcopy(receiver)
    _redact_all(_receiver_fields(redacted))
    return redacted


def redact_global(glob: dict[str, Any]) -> dict[str, Any]:
    redacted = copy.deepcopy(glob)
    _redact_all(_global_fields(redacted))
    return redacted


def redact_document(document: Document) -> Document:
    return {
        **document,
        "global": redact_global(document["global"]),
        "receivers": [redact_receiver(receiver) for receiver in document["receivers"]],
    }


def _stored_value(stored: Any, path: FieldPath) -> str | None:
    found = _lookup(stored, path)
    if found is None:
        return None
    value = found[0][found[1]]
    return value if isinstance(value, str) and value != SECRET else None


def _restore_fields(
    fields: Iterator[tuple[str, FieldPath, dict[str, Any], str]],
    stored_config: Any,
    where: str,
) -> None:
    for integration, path, holder, key in fields:
        if holder[key] != SECRET:
            continue
        stored = stored_config(integration)
        value = _stored_value(stored, path)
        field_path = join(where, ".".join(filter(None, (integration, *path))))
        if value is None:
            raise ConfigError(
                f"{SECRET} stands for the value stored in this field, and none is stored "
                "here: send the value itself",
                field_path,
                "SECRET_NOT_STORED",
            )
        holder[key] = value


def _integration(receiver: Any, integration: str) -> Any:
    """The stored integration config called ``slack_configs[0]`` in ``receiver``."""
    key, _, rest = integration.partition("[")
    configs = receiver.get(key) if isinstance(receiver, dict) else None
    index = int(rest.rstrip("]"))
    return configs[index] if isinstance(configs, list) and index < len(configs) else None


def restore_secrets(document: Document, stored: Document) -> None:
    """Replace each `<secret>` in ``document`` by the value ``stored`` holds at its place."""
    _restore_fields(_global_fields(document["global"]), lambda _: stored["global"], "global")
    stored_receivers = {
        receiver.get("name"): receiver
        for receiver in stored["receivers"]
        if isinstance(receiver, dict)
    }
    receivers = document["receivers"]
    for index, receiver in enumerate(receivers if isinstance(receivers, list) else []):
        name = receiver.get("name") if isinstance(receiver, dict) else None
        previous = stored_receivers.get(name)
        _restore_fields(
            _receiver_fields(receiver),
            lambda integration, previous=previous: _integration(previous, integration),
            join("receivers", index),
        )


def credential_values(document: Document) -> list[str]:
    """Every credential ``document`` holds (the values ``redact_document`` hides)."""
    glob, receivers = document.get("global"), document.get("receivers")
    fields = list(_global_fields(glob if isinstance(glob, dict) else {}))
    for receiver in receivers if isinstance(receivers, list) else []:
        fields.extend(_receiver_fields(receiver))
    return [
        holder[key] for _, _, holder, key in fields if isinstance(holder[key], str) and holder[key]
    ]


def redact_text(text: str, document: Document) -> str:
    """``text`` (what a backend answered about ``document``, which may quote it) with each
    of the document's credentials in it replaced by ``<secret>``."""
    for value in sorted(set(credential_values(document)), key=len, reverse=True):
        text = text.replace(value, SECRET)
    return text
