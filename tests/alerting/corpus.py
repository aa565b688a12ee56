"""Configurations Alertmanager accepts and configurations it refuses, as API wrappers.

Every VALID one must be accepted by the API and pass `amtool check-config` once rendered;
every INVALID one must be refused by the API (with the given code) and by amtool.
"""

from __future__ import annotations

from typing import Any

import yaml

Wrapper = dict[str, Any]

HOOK = {"url": "https://hooks.example.com/alerts"}


def wrapper(
    *,
    receivers: list[Any] | None = None,
    route: Any = None,
    glob: Any = None,
    templates: Any = None,
    time_intervals: Any = None,
) -> Wrapper:
    return {
        "global": glob if glob is not None else {},
        "receivers": receivers if receivers is not None else [{"name": "default"}],
        "route": route if route is not None else {"receiver": "default"},
        "templates": templates if templates is not None else {},
        "time_intervals": time_intervals if time_intervals is not None else [],
    }


def child(**route: Any) -> Wrapper:
    """A configuration whose only child route is ``route`` (receiver default unless given)."""
    return wrapper(route={"receiver": "default", "routes": [{"receiver": "default", **route}]})


def receiver(**integrations: Any) -> Wrapper:
    return wrapper(receivers=[{"name": "default", **integrations}])


# Every field of every supported integration, of the global section and of the HTTP client.
EVERY_FIELD_YAML = """
global:
  resolve_timeout: 5m
  http_config:
    follow_redirects: false
    enable_http2: true
    tls_config:
      server_name: x
      insecure_skip_verify: false
      min_version: TLS12
  smtp_from: a@b.c
  smtp_hello: localhost
  smtp_smarthost: a:25
  smtp_auth_username: u
  smtp_auth_password: p
  smtp_auth_secret: s
  smtp_auth_identity: i
  smtp_require_tls: true
  slack_api_url: https://s.example.com/
  pagerduty_url: https://p.example.com/
  opsgenie_api_url: https://o.example.com/
  opsgenie_api_key: k
  wechat_api_url: https://w.example.com/
  wechat_api_secret: s
  wechat_api_corp_id: c
  victorops_api_url: https://v.example.com/
  victorops_api_key: k
  telegram_api_url: https://t.example.com/
  webex_api_url: https://x.example.com/
route:
  receiver: a
receivers:
- name: a
  email_configs:
  - send_resolved: true
    to: a
    from: b
    hello: h
    smarthost: a:25
    auth_username: u
    auth_password: p
    auth_secret: s
    auth_identity: i
    headers:
      X: y
    html: h
    text: t
    require_tls: false
    tls_config:
      server_name: x
  slack_configs:
  - send_resolved: true
    http_config:
      bearer_token: t
    api_url: https://s/
    channel: c
    username: u
    color: c
    title: t
    title_link: l
    pretext: p
    text: t
    fields:
    - title: a
      value: b
      short: true
    short_fields: true
    footer: f
    fallback: f
    callback_id: c
    icon_emoji: e
    icon_url: u
    image_url: i
    thumb_url: t
    link_names: true
    mrkdwn_in:
    - text
    actions:
    - type: button
      text: t
      url: u
      style: s
      name: n
      value: v
      confirm:
        text: t
        dismiss_text: d
        ok_text: o
        title: t
  webhook_configs:
  - send_resolved: true
    http_config:
      basic_auth:
        username: u
        password: p
    url: https://w/
    max_alerts: 3
  - url: https://w/
    http_config:
      authorization:
        type: Token
        credentials: c
  - url: https://w/
    http_config:
      oauth2:
        client_id: a
        client_secret: b
        scopes:
        - x
        token_url: https://t/
        endpoint_params:
          a: b
        tls_config:
          insecure_skip_verify: true
  pagerduty_configs:
  - send_resolved: true
    service_key: s
    routing_key: r
    url: https://p/
    client: c
    client_url: u
    description: d
    details:
      a: b
    images:
    - src: s
      alt: a
      href: h
    links:
    - href: h
      text: t
    source: s
    severity: s
    class: c
    component: c
    group: g
  opsgenie_configs:
  - send_resolved: true
    api_key: k
    api_url: https://o/
    message: m
    description: d
    source: s
    details:
      a: b
    entity: e
    responders:
    - id: i
      name: n
      username: u
      type: user
    actions: a
    tags: t
    note: n
    priority: P1
    update_alerts: true
"""


def _every_field() -> Wrapper:
    loaded = yaml.safe_load(EVERY_FIELD_YAML)
    return wrapper(glob=loaded["global"], receivers=loaded["receivers"], route=loaded["route"])


VALID: list[tuple[str, Wrapper]] = [
    ("every-field", _every_field()),
    ("default", wrapper()),
    (
        "every-route-field",
        wrapper(
            receivers=[{"name": "default"}, {"name": "pager", "webhook_configs": [HOOK]}],
            route={
                "receiver": "default",
                "group_by": ["alertname", "cluster"],
                "group_wait": "30s",
                "group_interval": "5m",
                "repeat_interval": "1w2d3h",
                "routes": [
                    {
                        "receiver": "pager",
                        "matchers": ['severity=~"critical|page"', 'team!="db", env=prod'],
                        "match": {"service": "api"},
                        "match_re": {"instance": "[[:alpha:]]+-\\d{1,3}\\pL*\\z"},
                        "continue": True,
                        "active_time_intervals": ["office"],
                        "mute_time_intervals": ["holidays"],
                        "routes": [{"group_by": ["..."], "group_wait": "0"}],
                    }
                ],
            },
            time_intervals=[
                {
                    "name": "office",
                    "time_intervals": [
                        {
                            "weekdays": ["Monday:friday"],
                            "times": [{"start_time": "09:00", "end_time": "17:30"}],
                            "location": "Europe/Berlin",
                        }
                    ],
                },
                {
                    "name": "holidays",
                    "time_intervals": [
                        {
                            "months": ["december"],
                            "days_of_month": ["24:26", "-1"],
                            "years": ["2026:2030"],
                        }
                    ],
                },
            ],
        ),
    ),
    (
        "email-with-globals",
        wrapper(
            glob={
                "smtp_smarthost": "smtp.example.com:587",
                "smtp_from": "alerts@example.com",
                "smtp_auth_username": "alerts",
                "smtp_auth_password": "secret",
                "smtp_require_tls": True,
                "resolve_timeout": "10m",
            },
            receivers=[
                {
                    "name": "default",
                    "email_configs": [
                        {
                            "to": "ops@example.com",
                            "headers": {"Subject": "{{ .CommonLabels.alertname }}"},
                            "send_resolved": True,
                            "tls_config": {"insecure_skip_verify": False, "min_version": "TLS12"},
                        },
                        {
                            "to": "db@example.com",
                            "smarthost": "[2001:4860:4860::8888]:25",
                            "from": "a@b.c",
                        },
                    ],
                }
            ],
        ),
    ),
    (
        "slack",
        receiver(
            slack_configs=[
                {
                    "api_url": "https://hooks.slack.com/services/T0/B0/XXXX",
                    "channel": "#alerts",
                    "title": '{{ template "slack.default.title" . }}',
                    "fields": [{"title": "env", "value": "{{ .CommonLabels.env }}", "short": True}],
                    "actions": [
                        {
                            "type": "button",
                            "text": "Runbook",
                            "url": "https://runbooks.example.com",
                        },
                        {
                            "type": "button",
                            "text": "Ack",
                            "name": "ack",
                            "value": "1",
                            "confirm": {"text": "Sure?"},
                        },
                    ],
                    "mrkdwn_in": ["text"],
                    "link_names": True,
                }
            ]
        ),
    ),
    (
        "slack-global-url",
        wrapper(
            glob={"slack_api_url": "https://hooks.slack.com/services/T0/B0/YYYY"},
            receivers=[{"name": "default", "slack_configs": [{"channel": "#ops"}]}],
        ),
    ),
    (
        "webhook-http-config",
        receiver(
            webhook_configs=[
                {
                    "url": "http://alert-sink.internal:8080/hook?x=1#frag",
                    "max_alerts": 10,
                    "send_resolved": False,
                    "http_config": {
                        "basic_auth": {"username": "u", "password": "p"},
                        "tls_config": {"server_name": "sink"},
                        "follow_redirects": False,
                        "enable_http2": True,
                    },
                },
                {
                    "url": "https://a_b.example.com/x y",
                    "http_config": {"authorization": {"credentials": "t"}},
                },
                {"url": "https://c.example.com/", "http_config": {"bearer_token": "t"}},
                {
                    "url": "https://d.example.com/",
                    "http_config": {
                        "oauth2": {
                            "client_id": "id",
                            "client_secret": "s",
                            "token_url": "https://auth.example.com/token",
                            "scopes": ["alerts"],
                        }
                    },
                },
            ]
        ),
    ),
    (
        "pagerduty-opsgenie",
        wrapper(
            glob={
                "opsgenie_api_key": "key",
                "pagerduty_url": "https://events.pagerduty.com/v2/enqueue",
            },
            receivers=[
                {
                    "name": "default",
                    "pagerduty_configs": [
                        {
                            "routing_key": "rk",
                            "severity": "critical",
                            "details": {"firing": "{{ .Alerts.Firing | len }}"},
                            "links": [{"href": "https://x.example.com", "text": "x"}],
                        },
                        {"service_key": "sk"},
                    ],
                    "opsgenie_configs": [
                        {
                            "responders": [
                                {"name": "ops", "type": "Team"},
                                {"id": "1", "type": "{{ .CommonLabels.kind }}"},
                            ],
                            "priority": "P1",
                            "update_alerts": True,
                        }
                    ],
                }
            ],
        ),
    ),
    (
        "more-integrations",
        wrapper(
            glob={"victorops_api_key": "k", "telegram_api_url": "https://api.telegram.org"},
            receivers=[
                {
                    "name": "default",
                    "discord_configs": [{"webhook_url": "https://discord.com/api/webhooks/1/x"}],
                    "telegram_configs": [
                        {"bot_token": "t", "chat_id": -100123, "parse_mode": "MarkdownV2"}
                    ],
                    "pushover_configs": [
                        {
                            "user_key": "u",
                            "token": "t",
                            "retry": "1.5m",
                            "expire": "2h",
                            "html": True,
                        }
                    ],
                    "victorops_configs": [
                        {
                            "routing_key": "ops",
                            "custom_fields": {"team": "db"},
                            "message_type": "WARNING",
                        }
                    ],
                    "webex_configs": [
                        {"room_id": "r", "http_config": {"authorization": {"credentials": "c"}}},
                        {"room_id": "r", "http_config": {"bearer_token": "t"}},
                    ],
                }
            ],
        ),
    ),
    (
        "templates",
        wrapper(
            templates={
                "slack.tmpl": (
                    '{{ define "acme.title" }}{{ range $i, $a := .Alerts }}{{ if gt $i 0 }}, '
                    "{{ end }}{{ $a.Labels.alertname | toUpper }}{{ end }}{{ end }}\n"
                    '{{/* a comment */}}{{- define "acme.text" -}}\n'
                    "{{ with .CommonAnnotations.summary }}{{ . }}{{ else }}none{{ end }}"
                    '{{ $x := "a" }}{{ $x := printf "%s-%d" $x 1 }}'
                    '{{ join "," (stringSlice $x `b`) }}'
                    "{{ end }}"
                ),
                "empty.tmpl": "",
                "plain.tmpl": 'no actions at all {{ template "acme.title" . }}',
            }
        ),
    ),
]


INVALID: list[tuple[str, Wrapper, str]] = [
    ("no-root-receiver", wrapper(route={"group_wait": "1s"}), "VALIDATION_FAILED"),
    (
        "root-matchers",
        wrapper(route={"receiver": "default", "matchers": ["a=b"]}),
        "VALIDATION_FAILED",
    ),
    (
        "root-continue",
        wrapper(route={"receiver": "default", "continue": True}),
        "VALIDATION_FAILED",
    ),
    ("undefined-receiver", wrapper(route={"receiver": "nobody"}), "UNDEFINED_RECEIVER"),
    ("undefined-child-receiver", child(receiver="ghost"), "UNDEFINED_RECEIVER"),
    (
        "duplicate-receiver",
        wrapper(receivers=[{"name": "default"}, {"name": "default"}]),
        "VALIDATION_FAILED",
    ),
    (
        "receiver-without-name",
        wrapper(receivers=[{"name": "default"}, {"webhook_configs": [HOOK]}]),
        "VALIDATION_FAILED",
    ),
    ("duration-units", child(group_wait="5 minutes"), "INVALID_DURATION"),
    ("duration-order", child(group_wait="1h1d"), "INVALID_DURATION"),
    ("duration-fraction", child(repeat_interval="1.5h"), "INVALID_DURATION"),
    ("duration-empty", child(group_interval=""), "INVALID_DURATION"),
    ("duration-number", child(group_wait=30), "VALIDATION_FAILED"),
    ("zero-group-interval", child(group_interval="0s"), "INVALID_DURATION"),
    ("zero-repeat-interval", child(repeat_interval="0"), "INVALID_DURATION"),
    ("matcher-syntax", child(matchers=["severity critical"]), "INVALID_MATCHER"),
    ("matcher-label", child(matchers=['1abc="x"']), "INVALID_MATCHER"),
    ("matcher-quote", child(matchers=['a="b"c"']), "INVALID_MATCHER"),
    ("matcher-unterminated", child(matchers=['a="b']), "INVALID_MATCHER"),
    ("matcher-regex", child(matchers=['a=~"(unclosed"']), "INVALID_MATCHER"),
    ("matcher-lookahead", child(matchers=['a=~"x(?!y)"']), "INVALID_MATCHER"),
    ("match-label", child(match={"a-b": "c"}), "INVALID_LABEL_NAME"),
    ("match-re-label", child(match_re={"a:b": "c"}), "INVALID_LABEL_NAME"),
    ("match-re-backref", child(match_re={"a": "(x)\\1"}), "INVALID_REGEX"),
    ("match-re-lookbehind", child(match_re={"a": "(?<=x)y"}), "INVALID_REGEX"),
    ("match-re-nested-repeat", child(match_re={"a": "x**"}), "INVALID_REGEX"),
    ("match-re-repeat-count", child(match_re={"a": "x{1001}"}), "INVALID_REGEX"),
    ("match-re-bracket", child(match_re={"a": "[a-"}), "INVALID_REGEX"),
    ("match-re-range", child(match_re={"a": "[z-a]"}), "INVALID_REGEX"),
    ("match-re-escape", child(match_re={"a": "\\Z"}), "INVALID_REGEX"),
    ("match-re-paren", child(match_re={"a": "x)"}), "INVALID_REGEX"),
    ("match-re-class", child(match_re={"a": "\\p{Klingon}"}), "INVALID_REGEX"),
    ("match-re-missing-argument", child(match_re={"a": "*x"}), "INVALID_REGEX"),
    # Repetitions nested to a million copies: Go (and RE2) refuse the product.
    ("match-re-nested-repeat-count", child(match_re={"a": "(a{1000}){1000}"}), "INVALID_REGEX"),
    (
        "matcher-nested-repeat-count",
        child(matchers=['a=~"(a{1000}){1000}"']),
        "INVALID_MATCHER",
    ),
    # Go: "expression nests too deeply"; refused here by the (lower) nesting limit.
    (
        "match-re-nested-1500",
        child(match_re={"a": "(" * 1500 + "a" + ")" * 1500}),
        "REGEX_TOO_DEEP",
    ),
    ("match-re-escape-any-byte", child(match_re={"a": "\\C"}), "INVALID_REGEX"),
    ("match-re-angle-named-group", child(match_re={"a": "(?<n>x)"}), "INVALID_REGEX"),
    ("match-re-unicode-14-script", child(match_re={"a": "\\p{Vithkuqi}"}), "INVALID_REGEX"),
    ("group-by-label", child(group_by=["a.b"]), "INVALID_LABEL_NAME"),
    ("group-by-duplicate", child(group_by=["a", "a"]), "VALIDATION_FAILED"),
    ("group-by-wildcard-and-labels", child(group_by=["...", "a"]), "VALIDATION_FAILED"),
    ("undefined-mute-interval", child(mute_time_intervals=["never"]), "UNDEFINED_TIME_INTERVAL"),
    (
        "undefined-active-interval",
        child(active_time_intervals=["never"]),
        "UNDEFINED_TIME_INTERVAL",
    ),
    ("unknown-route-field", child(recevier="default"), "UNKNOWN_FIELD"),
    (
        "webhook-without-url",
        receiver(webhook_configs=[{"send_resolved": True}]),
        "VALIDATION_FAILED",
    ),
    ("webhook-scheme", receiver(webhook_configs=[{"url": "ftp://x.example.com/"}]), "INVALID_URL"),
    ("webhook-no-host", receiver(webhook_configs=[{"url": "http:/x"}]), "INVALID_URL"),
    ("webhook-host-space", receiver(webhook_configs=[{"url": "http://a b/"}]), "INVALID_URL"),
    ("webhook-port", receiver(webhook_configs=[{"url": "http://a:port/"}]), "INVALID_URL"),
    ("webhook-escape", receiver(webhook_configs=[{"url": "http://a/%zz"}]), "INVALID_URL"),
    ("webhook-ipv6", receiver(webhook_configs=[{"url": "http://[::1/x"}]), "INVALID_URL"),
    (
        "webhook-max-alerts",
        receiver(webhook_configs=[{**HOOK, "max_alerts": -1}]),
        "VALIDATION_FAILED",
    ),
    ("webhook-unknown-field", receiver(webhook_configs=[{**HOOK, "urls": []}]), "UNKNOWN_FIELD"),
    (
        "send-resolved-string",
        receiver(webhook_configs=[{**HOOK, "send_resolved": "true"}]),
        "VALIDATION_FAILED",
    ),
    (
        "email-without-to",
        receiver(email_configs=[{"smarthost": "a:25", "from": "a@b.c"}]),
        "VALIDATION_FAILED",
    ),
    (
        "email-without-smarthost",
        receiver(email_configs=[{"to": "a@b.c", "from": "a@b.c"}]),
        "VALIDATION_FAILED",
    ),
    (
        "email-without-from",
        receiver(email_configs=[{"to": "a@b.c", "smarthost": "a:25"}]),
        "VALIDATION_FAILED",
    ),
    (
        "email-empty-port",
        receiver(email_configs=[{"to": "a@b.c", "from": "a@b.c", "smarthost": "a:"}]),
        "VALIDATION_FAILED",
    ),
    (
        "email-no-port",
        receiver(email_configs=[{"to": "a@b.c", "from": "a@b.c", "smarthost": "a"}]),
        "VALIDATION_FAILED",
    ),
    (
        "email-duplicate-header",
        receiver(
            email_configs=[
                {
                    "to": "a",
                    "from": "b",
                    "smarthost": "a:25",
                    "headers": {"subject": "x", "Subject": "y"},
                }
            ]
        ),
        "VALIDATION_FAILED",
    ),
    ("slack-without-url", receiver(slack_configs=[{"channel": "#x"}]), "VALIDATION_FAILED"),
    (
        "slack-action-without-type",
        receiver(
            slack_configs=[
                {
                    "api_url": "https://s.example.com/",
                    "actions": [{"text": "x", "url": "https://y"}],
                }
            ]
        ),
        "VALIDATION_FAILED",
    ),
    (
        "slack-field-without-value",
        receiver(slack_configs=[{"api_url": "https://s.example.com/", "fields": [{"title": "x"}]}]),
        "VALIDATION_FAILED",
    ),
    ("pagerduty-without-key", receiver(pagerduty_configs=[{"severity": "x"}]), "VALIDATION_FAILED"),
    ("opsgenie-without-key", receiver(opsgenie_configs=[{"message": "x"}]), "VALIDATION_FAILED"),
    (
        "opsgenie-responder-type",
        receiver(
            opsgenie_configs=[{"api_key": "k", "responders": [{"name": "x", "type": "squad"}]}]
        ),
        "VALIDATION_FAILED",
    ),
    (
        "opsgenie-responder-empty",
        receiver(opsgenie_configs=[{"api_key": "k", "responders": [{"type": "team"}]}]),
        "VALIDATION_FAILED",
    ),
    (
        "http-basic-and-bearer",
        receiver(
            webhook_configs=[
                {**HOOK, "http_config": {"basic_auth": {"username": "u"}, "bearer_token": "t"}}
            ]
        ),
        "VALIDATION_FAILED",
    ),
    (
        "http-authorization-basic",
        receiver(
            webhook_configs=[
                {**HOOK, "http_config": {"authorization": {"type": "Basic", "credentials": "x"}}}
            ]
        ),
        "VALIDATION_FAILED",
    ),
    (
        "http-oauth2-without-token-url",
        receiver(
            webhook_configs=[
                {**HOOK, "http_config": {"oauth2": {"client_id": "a", "client_secret": "b"}}}
            ]
        ),
        "VALIDATION_FAILED",
    ),
    (
        "tls-version",
        receiver(
            webhook_configs=[{**HOOK, "http_config": {"tls_config": {"min_version": "TLS9"}}}]
        ),
        "VALIDATION_FAILED",
    ),
    ("discord-without-url", receiver(discord_configs=[{"title": "x"}]), "VALIDATION_FAILED"),
    ("discord-url", receiver(discord_configs=[{"webhook_url": "discord"}]), "INVALID_URL"),
    ("telegram-without-token", receiver(telegram_configs=[{"chat_id": 1}]), "VALIDATION_FAILED"),
    ("telegram-without-chat", receiver(telegram_configs=[{"bot_token": "t"}]), "VALIDATION_FAILED"),
    (
        "telegram-chat-zero",
        receiver(telegram_configs=[{"bot_token": "t", "chat_id": 0}]),
        "VALIDATION_FAILED",
    ),
    (
        "telegram-chat-string",
        receiver(telegram_configs=[{"bot_token": "t", "chat_id": "1"}]),
        "VALIDATION_FAILED",
    ),
    (
        "telegram-parse-mode",
        receiver(telegram_configs=[{"bot_token": "t", "chat_id": 1, "parse_mode": "html"}]),
        "VALIDATION_FAILED",
    ),
    ("pushover-without-token", receiver(pushover_configs=[{"user_key": "u"}]), "VALIDATION_FAILED"),
    (
        "pushover-retry-days",
        receiver(pushover_configs=[{"user_key": "u", "token": "t", "retry": "1d"}]),
        "INVALID_DURATION",
    ),
    (
        "pushover-retry-unitless",
        receiver(pushover_configs=[{"user_key": "u", "token": "t", "expire": "300"}]),
        "INVALID_DURATION",
    ),
    (
        "pushover-unknown-field",
        receiver(pushover_configs=[{"user_key": "u", "token": "t", "ttl": "1h"}]),
        "UNKNOWN_FIELD",
    ),
    (
        "victorops-without-routing-key",
        receiver(victorops_configs=[{"api_key": "k"}]),
        "VALIDATION_FAILED",
    ),
    (
        "victorops-without-api-key",
        receiver(victorops_configs=[{"routing_key": "r"}]),
        "VALIDATION_FAILED",
    ),
    (
        "victorops-reserved-field",
        receiver(
            victorops_configs=[
                {"api_key": "k", "routing_key": "r", "custom_fields": {"entity_id": "x"}}
            ]
        ),
        "VALIDATION_FAILED",
    ),
    (
        "webex-without-room",
        receiver(webex_configs=[{"http_config": {"bearer_token": "t"}}]),
        "VALIDATION_FAILED",
    ),
    (
        "webex-without-authorization",
        receiver(webex_configs=[{"room_id": "r"}]),
        "VALIDATION_FAILED",
    ),
    (
        "webex-global-authorization-does-not-count",
        wrapper(
            glob={"http_config": {"authorization": {"credentials": "c"}}},
            receivers=[{"name": "default", "webex_configs": [{"room_id": "r"}]}],
        ),
        "VALIDATION_FAILED",
    ),
    ("global-unknown", wrapper(glob={"smtp_server": "x"}), "UNKNOWN_FIELD"),
    ("global-resolve-timeout", wrapper(glob={"resolve_timeout": "1x"}), "INVALID_DURATION"),
    ("global-slack-url", wrapper(glob={"slack_api_url": "not a url"}), "INVALID_URL"),
    ("global-smarthost", wrapper(glob={"smtp_smarthost": "a:b:c"}), "VALIDATION_FAILED"),
    (
        "interval-weekday",
        wrapper(time_intervals=[{"name": "x", "time_intervals": [{"weekdays": ["funday"]}]}]),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-weekday-order",
        wrapper(
            time_intervals=[{"name": "x", "time_intervals": [{"weekdays": ["friday:monday"]}]}]
        ),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-time-format",
        wrapper(
            time_intervals=[
                {
                    "name": "x",
                    "time_intervals": [{"times": [{"start_time": "9:00", "end_time": "17:00"}]}],
                }
            ]
        ),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-time-order",
        wrapper(
            time_intervals=[
                {
                    "name": "x",
                    "time_intervals": [{"times": [{"start_time": "18:00", "end_time": "17:00"}]}],
                }
            ]
        ),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-day-range",
        wrapper(time_intervals=[{"name": "x", "time_intervals": [{"days_of_month": ["0"]}]}]),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-day-signs",
        wrapper(time_intervals=[{"name": "x", "time_intervals": [{"days_of_month": ["-3:5"]}]}]),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-month",
        wrapper(time_intervals=[{"name": "x", "time_intervals": [{"months": ["smarch"]}]}]),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-year-order",
        wrapper(time_intervals=[{"name": "x", "time_intervals": [{"years": ["2030:2020"]}]}]),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-year-overflow",
        wrapper(
            time_intervals=[
                {"name": "x", "time_intervals": [{"years": ["1:99999999999999999999"]}]}
            ]
        ),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-location",
        wrapper(time_intervals=[{"name": "x", "time_intervals": [{"location": "Mars/Olympus"}]}]),
        "INVALID_TIME_INTERVAL",
    ),
    (
        "interval-duplicate",
        wrapper(time_intervals=[{"name": "x"}, {"name": "x"}]),
        "VALIDATION_FAILED",
    ),
    ("template-unclosed-action", wrapper(templates={"a.tmpl": "{{ .Labels "}), "INVALID_TEMPLATE"),
    ("template-unclosed-if", wrapper(templates={"a.tmpl": "{{ if .X }}yes"}), "INVALID_TEMPLATE"),
    ("template-stray-end", wrapper(templates={"a.tmpl": "{{ end }}"}), "INVALID_TEMPLATE"),
    (
        "template-unknown-function",
        wrapper(templates={"a.tmpl": "{{ humanize 1 }}"}),
        "INVALID_TEMPLATE",
    ),
    (
        "template-undefined-variable",
        wrapper(templates={"a.tmpl": "{{ $nope }}"}),
        "INVALID_TEMPLATE",
    ),
    (
        "template-define-name",
        wrapper(templates={"a.tmpl": "{{ define x }}{{ end }}"}),
        "INVALID_TEMPLATE",
    ),
    (
        "template-redefined",
        wrapper(templates={"a.tmpl": '{{ define "x" }}a{{ end }}{{ define "x" }}b{{ end }}'}),
        "INVALID_TEMPLATE",
    ),
    (
        "template-unterminated-string",
        wrapper(templates={"a.tmpl": '{{ "abc }}'}),
        "INVALID_TEMPLATE",
    ),
    ("template-paren", wrapper(templates={"a.tmpl": "{{ (len .Alerts }}"}), "INVALID_TEMPLATE"),
    ("template-empty-action", wrapper(templates={"a.tmpl": "{{ }}"}), "INVALID_TEMPLATE"),
    (
        "template-break-outside-range",
        wrapper(templates={"a.tmpl": "{{ break }}"}),
        "INVALID_TEMPLATE",
    ),
    (
        "template-comment-spacing",
        wrapper(templates={"a.tmpl": "{{ /* no */ }}"}),
        "INVALID_TEMPLATE",
    ),
    (
        "template-else-twice",
        wrapper(templates={"a.tmpl": "{{ if 1 }}{{ else }}{{ else }}{{ end }}"}),
        "INVALID_TEMPLATE",
    ),
]


def _doubling(levels: int) -> str:
    lines = ['{{ define "acme.l0" }}x{{ end }}']
    for level in range(1, levels + 1):
        below = f'{{{{ template "acme.l{level - 1}" . }}}}'
        lines.append(f'{{{{ define "acme.l{level}" }}}}{below}{below}{{{{ end }}}}')
    return "\n".join(lines)


SLACK = "https://hooks.slack.com/services/T0/B0/XXXX"

# Refused by this service on purpose, loaded by Alertmanager (docs/alerting.md: limits,
# template rules, receivers firewall, credentials): API code, and amtool must accept.
STRICTER: list[tuple[str, Wrapper, str]] = [
    (
        "template-exponential",
        wrapper(templates={"bomb.tmpl": _doubling(59)}),
        "TEMPLATE_TOO_COSTLY",
    ),
    (
        "template-recursive",
        wrapper(templates={"r.tmpl": '{{ define "acme.r" }}{{ template "acme.r" . }}{{ end }}'}),
        "TEMPLATE_RECURSIVE",
    ),
    (
        "template-unknown-in-file",
        wrapper(
            templates={"t.tmpl": '{{ define "acme.t" }}{{ template "beta.secret" . }}{{ end }}'}
        ),
        "UNKNOWN_TEMPLATE",
    ),
    (
        "template-unknown-in-field",
        receiver(slack_configs=[{"api_url": SLACK, "title": '{{ template "beta.secret" . }}'}]),
        "UNKNOWN_TEMPLATE",
    ),
    (
        "webhook-own-reload",
        receiver(webhook_configs=[{"url": "http://127.0.0.1:9093/-/reload"}]),
        "DESTINATION_BLOCKED",
    ),
    (
        "webhook-metadata",
        receiver(webhook_configs=[{"url": "http://169.254.169.254/latest/meta-data/"}]),
        "DESTINATION_BLOCKED",
    ),
    (
        "smarthost-redis",
        receiver(email_configs=[{"to": "a@b.c", "from": "a@b.c", "smarthost": "127.0.0.1:6379"}]),
        "DESTINATION_BLOCKED",
    ),
    (
        "oauth2-token-url-local",
        receiver(
            webhook_configs=[
                {
                    **HOOK,
                    "http_config": {
                        "oauth2": {
                            "client_id": "a",
                            "client_secret": "b",
                            "token_url": "http://[::1]:8080/token",
                        }
                    },
                }
            ]
        ),
        "DESTINATION_BLOCKED",
    ),
    (
        "follow-redirects",
        receiver(webhook_configs=[{**HOOK, "http_config": {"follow_redirects": True}}]),
        "REDIRECTS_NOT_ALLOWED",
    ),
    (
        "global-follow-redirects",
        wrapper(glob={"http_config": {"follow_redirects": True}}),
        "REDIRECTS_NOT_ALLOWED",
    ),
    (
        "webhook-full-width-loopback",
        receiver(webhook_configs=[{"url": "http://\uff11\uff12\uff17\uff0e0\uff0e0\uff0e1/"}]),
        "DESTINATION_BLOCKED",
    ),
    (
        "webhook-ip6-localhost",
        receiver(webhook_configs=[{"url": "http://ip6-localhost/"}]),
        "DESTINATION_BLOCKED",
    ),
    ("regex-deep", child(match_re={"a": "(?:" * 101 + "a" + ")" * 101}), "REGEX_TOO_DEEP"),
    ("regex-large", child(match_re={"a": "\\pL{1000}"}), "REGEX_TOO_LARGE"),
    (
        "secret-placeholder-with-nothing-stored",
        receiver(slack_configs=[{"api_url": "<secret>"}]),
        "SECRET_NOT_STORED",
    ),
]
