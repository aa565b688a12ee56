"""Receivers and their integrations (Alertmanager 0.25 config/notifiers.go)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tenantplane.alerting.validation.errors import ConfigError, join
from tenantplane.alerting.validation.schema import (
    Check,
    boolean,
    duration,
    go_duration,
    host_port,
    http_config,
    integer,
    list_of,
    map_of_strings,
    not_allowed,
    obj,
    secret_url,
    string,
    string_list,
    tls_config,
    unsigned,
    url,
)

GLOBAL = obj(
    {
        "resolve_timeout": duration,
        "http_config": http_config,
        "smtp_from": string,
        "smtp_hello": string,
        "smtp_smarthost": host_port,
        "smtp_auth_username": string,
        "smtp_auth_password": string,
        "smtp_auth_secret": string,
        "smtp_auth_identity": string,
        "smtp_require_tls": boolean,
        "slack_api_url": secret_url,
        "slack_api_url_file": not_allowed,
        "pagerduty_url": url,
        "opsgenie_api_url": url,
        "opsgenie_api_key": string,
        "opsgenie_api_key_file": not_allowed,
        "wechat_api_url": url,
        "wechat_api_secret": string,
        "wechat_api_corp_id": string,
        "victorops_api_url": url,
        "victorops_api_key": string,
        "victorops_api_key_file": not_allowed,
        "telegram_api_url": url,
        "webex_api_url": url,
    }
)

_COMMON: dict[str, Check] = {"send_resolved": boolean, "http_config": http_config}

_WEBHOOK = obj({**_COMMON, "url": url, "max_alerts": unsigned})

_EMAIL = obj(
    {
        "send_resolved": boolean,
        "to": string,
        "from": string,
        "hello": string,
        "smarthost": host_port,
        "auth_username": string,
        "auth_password": string,
        "auth_secret": string,
        "auth_identity": string,
        "headers": map_of_strings,
        "html": string,
        "text": string,
        "require_tls": boolean,
        "tls_config": tls_config,
    }
)

_SLACK_CONFIRM = obj({"text": string, "dismiss_text": string, "ok_text": string, "title": string})
_SLACK_ACTION = obj(
    {
        "type": string,
        "text": string,
        "url": string,
        "style": string,
        "name": string,
        "value": string,
        "confirm": _SLACK_CONFIRM,
    }
)
_SLACK_FIELD = obj({"title": string, "value": string, "short": boolean})
_SLACK = obj(
    {
        **_COMMON,
        "api_url": secret_url,
        "api_url_file": not_allowed,
        "channel": string,
        "username": string,
        "color": string,
        "title": string,
        "title_link": string,
        "pretext": string,
        "text": string,
        "fields": list_of(_SLACK_FIELD),
        "short_fields": boolean,
        "footer": string,
        "fallback": string,
        "callback_id": string,
        "icon_emoji": string,
        "icon_url": string,
        "image_url": string,
        "thumb_url": string,
        "link_names": boolean,
        "mrkdwn_in": string_list,
        "actions": list_of(_SLACK_ACTION),
    }
)

_PAGERDUTY = obj(
    {
        **_COMMON,
        "service_key": string,
        "service_key_file": not_allowed,
        "routing_key": string,
        "routing_key_file": not_allowed,
        "url": url,
        "client": string,
        "client_url": string,
        "description": string,
        "details": map_of_strings,
        "images": list_of(obj({"src": string, "alt": string, "href": string})),
        "links": list_of(obj({"href": string, "text": string})),
        "source": string,
        "severity": string,
        "class": string,
        "component": string,
        "group": string,
    }
)

_OPSGENIE = obj(
    {
        **_COMMON,
        "api_key": string,
        "api_key_file": not_allowed,
        "api_url": url,
        "message": string,
        "description": string,
        "source": string,
        "details": map_of_strings,
        "entity": string,
        "responders": list_of(
            obj({"id": string, "name": string, "username": string, "type": string})
        ),
        "actions": string,
        "tags": string,
        "note": string,
        "priority": string,
        "update_alerts": boolean,
    }
)


_DISCORD = obj({**_COMMON, "webhook_url": url, "title": string, "message": string})

_TELEGRAM = obj(
    {
        **_COMMON,
        "api_url": url,
        "bot_token": string,
        "chat_id": integer,
        "message": string,
        "disable_notifications": boolean,
        "parse_mode": string,
    }
)

_PUSHOVER = obj(
    {
        **_COMMON,
        "user_key": string,
        "token": string,
        "title": string,
        "message": string,
        "url": string,
        "url_title": string,
        "sound": string,
        "priority": string,
        "retry": go_duration,
        "expire": go_duration,
        "html": boolean,
    }
)

_VICTOROPS = obj(
    {
        **_COMMON,
        "api_key": string,
        "api_key_file": not_allowed,
        "api_url": url,
        "routing_key": string,
        "message_type": string,
        "state_message": string,
        "entity_display_name": string,
        "monitoring_tool": string,
        "custom_fields": map_of_strings,
    }
)

_WEBEX = obj({**_COMMON, "api_url": url, "room_id": string, "message": string})


def _canonical_header(key: str) -> str:
    """Go's textproto.CanonicalMIMEHeaderKey for ordinary header names."""
    if not key or any(not (c.isalnum() or c in "-!#$%&'*+.^_`|~") for c in key):
        return key
    return "-".join(part[:1].upper() + part[1:].lower() for part in key.split("-"))


def _email_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if not config.get("to"):
        raise ConfigError("missing to address in email config", join(path, "to"))
    seen: set[str] = set()
    for key in config.get("headers", {}):
        canonical = _canonical_header(key)
        if canonical in seen:
            raise ConfigError(
                f'duplicate header "{canonical}" in email config', join(path, "headers")
            )
        seen.add(canonical)
    if not config.get("smarthost") and not glob.get("smtp_smarthost"):
        raise ConfigError("no global SMTP smarthost set", join(path, "smarthost"))
    if not config.get("from") and not glob.get("smtp_from"):
        raise ConfigError("no global SMTP from set", join(path, "from"))


def _slack_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    for index, action in enumerate(config.get("actions", [])):
        action_path = join(join(path, "actions"), index)
        if not action.get("type"):
            raise ConfigError("missing type in Slack action configuration", action_path)
        if not action.get("text"):
            raise ConfigError("missing text in Slack action configuration", action_path)
        if not action.get("url") and not action.get("name"):
            raise ConfigError("missing name or url in Slack action configuration", action_path)
        confirm = action.get("confirm")
        if confirm is not None and not confirm.get("text"):
            raise ConfigError(
                "missing text in Slack confirmation configuration", join(action_path, "confirm")
            )
    for index, item in enumerate(config.get("fields", [])):
        field_path = join(join(path, "fields"), index)
        if not item.get("title"):
            raise ConfigError("missing title in Slack field configuration", field_path)
        if not item.get("value"):
            raise ConfigError("missing value in Slack field configuration", field_path)
    if not config.get("api_url") and not glob.get("slack_api_url"):
        raise ConfigError(
            "no global Slack API URL set either inline or in a file", join(path, "api_url")
        )


def _webhook_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if "url" not in config:
        raise ConfigError("one of url or url_file must be configured", join(path, "url"))


def _pagerduty_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if not config.get("routing_key") and not config.get("service_key"):
        raise ConfigError("missing service or routing key in PagerDuty config", path)


_OPSGENIE_TYPES = re.compile(r"^(team|teams|user|escalation|schedule)$")


def _opsgenie_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    for index, responder in enumerate(config.get("responders", [])):
        responder_path = join(join(path, "responders"), index)
        if not (responder.get("id") or responder.get("name") or responder.get("username")):
            raise ConfigError(
                "opsGenieConfig responder has to have at least one of id, username or name "
                "specified",
                responder_path,
            )
        kind = responder.get("type", "")
        if "{{" in kind:
            continue  # a template, resolved when the notification is sent
        if not _OPSGENIE_TYPES.match(kind.lower()):
            raise ConfigError(
                "opsGenieConfig responder type does not match valid options "
                "team, teams, user, escalation, schedule",
                join(responder_path, "type"),
            )
    if not config.get("api_key") and not glob.get("opsgenie_api_key"):
        raise ConfigError(
            "no global OpsGenie API Key set either inline or in a file", join(path, "api_key")
        )


def _discord_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if "webhook_url" not in config:
        raise ConfigError("no discord webhook URL provided", join(path, "webhook_url"))


_TELEGRAM_PARSE_MODES = frozenset({"", "Markdown", "MarkdownV2", "HTML"})


def _telegram_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if not config.get("bot_token"):
        raise ConfigError("missing bot_token on telegram_config", join(path, "bot_token"))
    if not config.get("chat_id"):
        raise ConfigError("missing chat_id on telegram_config", join(path, "chat_id"))
    if config.get("parse_mode", "") not in _TELEGRAM_PARSE_MODES:
        raise ConfigError(
            "unknown parse_mode on telegram_config, must be Markdown, MarkdownV2, HTML or "
            "empty string",
            join(path, "parse_mode"),
        )


def _pushover_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if not config.get("user_key"):
        raise ConfigError("missing user key in Pushover config", join(path, "user_key"))
    if not config.get("token"):
        raise ConfigError("missing token in Pushover config", join(path, "token"))


_VICTOROPS_RESERVED = (
    "routing_key",
    "message_type",
    "state_message",
    "entity_display_name",
    "monitoring_tool",
    "entity_id",
    "entity_state",
)


def _victorops_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if not config.get("routing_key"):
        raise ConfigError("missing Routing key in VictorOps config", join(path, "routing_key"))
    for key in config.get("custom_fields", {}):
        if key in _VICTOROPS_RESERVED:
            raise ConfigError(
                f"victorOps config contains custom field {key} which cannot be used as it "
                "conflicts with the fixed/static fields",
                join(join(path, "custom_fields"), key),
            )
    if not config.get("api_key") and not glob.get("victorops_api_key"):
        raise ConfigError("no global VictorOps API Key set", join(path, "api_key"))


def _webex_rules(config: dict[str, Any], glob: Mapping[str, Any], path: str) -> None:
    if not config.get("room_id"):
        raise ConfigError("missing room_id on webex_config", join(path, "room_id"))
    # Checked before the global HTTP settings apply, as Alertmanager does; a bearer_token
    # counts (the HTTP client turns it into an authorization).
    http = config.get("http_config") or {}
    if not http.get("authorization") and not http.get("bearer_token"):
        raise ConfigError(
            "missing webex_configs.http_config.authorization", join(path, "http_config")
        )


Rules = Callable[[dict[str, Any], Mapping[str, Any], str], None]
INTEGRATIONS: dict[str, tuple[Check, Rules]] = {
    "email_configs": (_EMAIL, _email_rules),
    "slack_configs": (_SLACK, _slack_rules),
    "webhook_configs": (_WEBHOOK, _webhook_rules),
    "pagerduty_configs": (_PAGERDUTY, _pagerduty_rules),
    "opsgenie_configs": (_OPSGENIE, _opsgenie_rules),
    "discord_configs": (_DISCORD, _discord_rules),
    "telegram_configs": (_TELEGRAM, _telegram_rules),
    "pushover_configs": (_PUSHOVER, _pushover_rules),
    "victorops_configs": (_VICTOROPS, _victorops_rules),
    "webex_configs": (_WEBEX, _webex_rules),
}
UNSUPPORTED_INTEGRATIONS = ("wechat_configs", "sns_configs")


def check_receiver(receiver: Any, glob: Mapping[str, Any], path: str) -> None:
    if not isinstance(receiver, dict):
        raise ConfigError("must be an object", path)
    for key, value in receiver.items():
        key_path = join(path, key)
        if key == "name":
            string(value, key_path)
        elif key in INTEGRATIONS:
            shape, rules = INTEGRATIONS[key]
            list_of(shape)(value, key_path)
            for index, config in enumerate(value):
                rules(config, glob, join(key_path, index))
        elif key in UNSUPPORTED_INTEGRATIONS:
            raise ConfigError(
                f"{key} is not supported by this service; supported integrations: "
                + ", ".join(INTEGRATIONS),
                key_path,
                "UNSUPPORTED_INTEGRATION",
            )
        else:
            raise ConfigError(f"unknown field: {key}", key_path, "UNKNOWN_FIELD")
    if not receiver.get("name"):
        raise ConfigError("missing name in receiver", join(path, "name"))
