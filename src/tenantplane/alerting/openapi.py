"""Typed descriptions of Alertmanager's configuration for the OpenAPI document.

Bodies are still parsed and checked by the validation package (which owns the error
messages and field paths equal to Alertmanager's); these models only describe the same
snake_case wire format. Every field is optional unless Alertmanager requires it in
every position, because the server returns only what the tenant set.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tenantplane.http.schemas import Continue


class Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AlertingBasicAuth(Schema):
    username: str | None = None
    password: str | None = None


class AlertingAuthorization(Schema):
    type: str | None = None
    credentials: str | None = None


class AlertingTlsConfig(Schema):
    server_name: str | None = None
    insecure_skip_verify: bool | None = None
    min_version: str | None = Field(None, description="TLS10, TLS11, TLS12 or TLS13")


class AlertingOAuth2(Schema):
    client_id: str | None = None
    client_secret: str | None = None
    scopes: list[str] | None = None
    token_url: str | None = None
    endpoint_params: dict[str, str] | None = None
    tls_config: AlertingTlsConfig | None = None


class AlertingHttpConfig(Schema):
    basic_auth: AlertingBasicAuth | None = None
    authorization: AlertingAuthorization | None = None
    oauth2: AlertingOAuth2 | None = None
    bearer_token: str | None = None
    tls_config: AlertingTlsConfig | None = None
    follow_redirects: bool | None = Field(
        None,
        description=(
            "Only false is accepted (true is 400): redirects are never followed, since a "
            "redirect could lead past the receivers firewall; the configuration applied "
            "to the backend always says false."
        ),
    )
    enable_http2: bool | None = None


class AlertingIntegration(Schema):
    send_resolved: bool | None = None
    http_config: AlertingHttpConfig | None = None


class AlertingWebhookConfig(AlertingIntegration):
    url: str
    max_alerts: int | None = Field(None, ge=0, le=2**64 - 1)


class AlertingEmailConfig(Schema):
    send_resolved: bool | None = None
    to: str
    from_: str | None = Field(None, alias="from")
    hello: str | None = None
    smarthost: str | None = Field(None, description="host:port")
    auth_username: str | None = None
    auth_password: str | None = None
    auth_secret: str | None = None
    auth_identity: str | None = None
    headers: dict[str, str] | None = None
    html: str | None = None
    text: str | None = None
    require_tls: bool | None = None
    tls_config: AlertingTlsConfig | None = None


class AlertingSlackConfirm(Schema):
    text: str | None = None
    dismiss_text: str | None = None
    ok_text: str | None = None
    title: str | None = None


class AlertingSlackAction(Schema):
    type: str | None = None
    text: str | None = None
    url: str | None = None
    style: str | None = None
    name: str | None = None
    value: str | None = None
    confirm: AlertingSlackConfirm | None = None


class AlertingSlackField(Schema):
    title: str | None = None
    value: str | None = None
    short: bool | None = None


class AlertingSlackConfig(AlertingIntegration):
    api_url: str | None = None
    channel: str | None = None
    username: str | None = None
    color: str | None = None
    title: str | None = None
    title_link: str | None = None
    pretext: str | None = None
    text: str | None = None
    fields: list[AlertingSlackField] | None = None
    short_fields: bool | None = None
    footer: str | None = None
    fallback: str | None = None
    callback_id: str | None = None
    icon_emoji: str | None = None
    icon_url: str | None = None
    image_url: str | None = None
    thumb_url: str | None = None
    link_names: bool | None = None
    mrkdwn_in: list[str] | None = None
    actions: list[AlertingSlackAction] | None = None


class AlertingPagerdutyImage(Schema):
    src: str | None = None
    alt: str | None = None
    href: str | None = None


class AlertingPagerdutyLink(Schema):
    href: str | None = None
    text: str | None = None


class AlertingPagerdutyConfig(AlertingIntegration):
    service_key: str | None = None
    routing_key: str | None = None
    url: str | None = None
    client: str | None = None
    client_url: str | None = None
    description: str | None = None
    details: dict[str, str] | None = None
    images: list[AlertingPagerdutyImage] | None = None
    links: list[AlertingPagerdutyLink] | None = None
    source: str | None = None
    severity: str | None = None
    class_: str | None = Field(None, alias="class")
    component: str | None = None
    group: str | None = None


class AlertingOpsgenieResponder(Schema):
    id: str | None = None
    name: str | None = None
    username: str | None = None
    type: str | None = None


class AlertingOpsgenieConfig(AlertingIntegration):
    api_key: str | None = None
    api_url: str | None = None
    message: str | None = None
    description: str | None = None
    source: str | None = None
    details: dict[str, str] | None = None
    entity: str | None = None
    responders: list[AlertingOpsgenieResponder] | None = None
    actions: str | None = None
    tags: str | None = None
    note: str | None = None
    priority: str | None = None
    update_alerts: bool | None = None


class AlertingDiscordConfig(AlertingIntegration):
    webhook_url: str
    title: str | None = None
    message: str | None = None


class AlertingTelegramConfig(AlertingIntegration):
    api_url: str | None = None
    bot_token: str
    chat_id: int = Field(ge=-(2**63), le=2**63 - 1)
    message: str | None = None
    disable_notifications: bool | None = None
    parse_mode: str | None = None


class AlertingPushoverConfig(AlertingIntegration):
    user_key: str
    token: str
    title: str | None = None
    message: str | None = None
    url: str | None = None
    url_title: str | None = None
    sound: str | None = None
    priority: str | None = None
    retry: str | None = None
    expire: str | None = None
    html: bool | None = None


class AlertingVictoropsConfig(AlertingIntegration):
    api_key: str | None = None
    api_url: str | None = None
    routing_key: str
    message_type: str | None = None
    state_message: str | None = None
    entity_display_name: str | None = None
    monitoring_tool: str | None = None
    custom_fields: dict[str, str] | None = None


class AlertingWebexConfig(AlertingIntegration):
    api_url: str | None = None
    room_id: str
    message: str | None = None


NAME_DESCRIPTION = "1-200 characters, not '.' or '..', no control characters, none of / \\ % ? #"


class AlertingReceiver(Schema):
    """A receiver and its integrations (Alertmanager's receiver schema)."""

    name: str | None = Field(
        None,
        description=f"{NAME_DESCRIPTION}; always present in responses, and in a PUT body "
        "the path's name wins",
    )
    email_configs: list[AlertingEmailConfig] | None = None
    slack_configs: list[AlertingSlackConfig] | None = None
    webhook_configs: list[AlertingWebhookConfig] | None = None
    pagerduty_configs: list[AlertingPagerdutyConfig] | None = None
    opsgenie_configs: list[AlertingOpsgenieConfig] | None = None
    discord_configs: list[AlertingDiscordConfig] | None = None
    telegram_configs: list[AlertingTelegramConfig] | None = None
    pushover_configs: list[AlertingPushoverConfig] | None = None
    victorops_configs: list[AlertingVictoropsConfig] | None = None
    webex_configs: list[AlertingWebexConfig] | None = None


class AlertingRoute(Schema):
    """A route; `routes` nest at most 32 levels below the root route."""

    receiver: str | None = None
    group_by: list[str] | None = None
    group_wait: str | None = Field(None, description="Prometheus duration, e.g. 30s")
    group_interval: str | None = Field(None, description="Prometheus duration, not zero")
    repeat_interval: str | None = Field(None, description="Prometheus duration, not zero")
    continue_: bool | None = Field(None, alias="continue")
    matchers: list[str] | None = None
    match: dict[str, str] | None = None
    match_re: dict[str, str] | None = None
    active_time_intervals: list[str] | None = None
    mute_time_intervals: list[str] | None = None
    routes: list[AlertingRoute] | None = None


class AlertingGlobalConfig(Schema):
    """The global section: only what the tenant set is returned."""

    resolve_timeout: str | None = None
    http_config: AlertingHttpConfig | None = None
    smtp_from: str | None = None
    smtp_hello: str | None = None
    smtp_smarthost: str | None = None
    smtp_auth_username: str | None = None
    smtp_auth_password: str | None = None
    smtp_auth_secret: str | None = None
    smtp_auth_identity: str | None = None
    smtp_require_tls: bool | None = None
    slack_api_url: str | None = None
    pagerduty_url: str | None = None
    opsgenie_api_url: str | None = None
    opsgenie_api_key: str | None = None
    wechat_api_url: str | None = None
    wechat_api_secret: str | None = None
    wechat_api_corp_id: str | None = None
    victorops_api_url: str | None = None
    victorops_api_key: str | None = None
    telegram_api_url: str | None = None
    webex_api_url: str | None = None


class AlertingTimeRange(Schema):
    start_time: str = Field(description="HH:MM")
    end_time: str = Field(description="HH:MM, after start_time")


class AlertingTimeIntervalEntry(Schema):
    times: list[AlertingTimeRange] | None = None
    weekdays: list[str] | None = None
    days_of_month: list[str] | None = None
    months: list[str] | None = None
    years: list[str] | None = None
    location: str | None = None


class AlertingTimeInterval(Schema):
    name: str = Field(description=NAME_DESCRIPTION)
    time_intervals: list[AlertingTimeIntervalEntry] | None = None


class AlertingConfig(Schema):
    """The whole wrapper. Responses carry every section; a PUT body needs only `route`."""

    global_: AlertingGlobalConfig | None = Field(None, alias="global")
    receivers: list[AlertingReceiver] | None = None
    route: AlertingRoute
    templates: dict[str, str] | None = Field(None, description="file name to contents")
    time_intervals: list[AlertingTimeInterval] | None = None


class AlertingReceiverList(Schema):
    items: list[AlertingReceiver]
    continue_: Continue = None


class AlertingRouteList(Schema):
    items: list[AlertingRoute]
    continue_: Continue = None


class AlertingTimeIntervalList(Schema):
    items: list[AlertingTimeInterval]
    continue_: Continue = None


def component(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def request_body(model: type[BaseModel]) -> dict[str, object]:
    """`openapi_extra` declaring the JSON body as ``model``'s component (which responses
    already put into the document)."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": component(model)}},
        }
    }
