"""Webhooks and their deliveries as the API takes and shows them (never a stored secret)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator
from pydantic_core import PydanticCustomError

from tenantplane.event.webhook.models import DeliveryState, Webhook, WebhookDelivery
from tenantplane.event.webhook.patterns import MAX_PATTERN_LENGTH, MAX_PATTERNS, PATTERN, is_pattern
from tenantplane.http.schemas import InputModel, OutputModel, UtcDateTime
from tenantplane.http.text import check_text


def _pattern(value: str) -> str:
    if not is_pattern(value):
        raise PydanticCustomError(
            "VALIDATION_FAILED",
            "an event pattern is an action (invoice.past_due) or a prefix of one ending in * "
            "(cluster.*): lower-case letters, digits, '_' and '.', at most {length} characters",
            {"length": MAX_PATTERN_LENGTH},
        )
    return value


def _unique(patterns: list[str]) -> list[str]:
    """The patterns in their order, each once."""
    return list(dict.fromkeys(patterns))


EventPattern = Annotated[
    str,
    AfterValidator(_pattern),
    Field(
        description="An action (`invoice.past_due`) or a prefix ending in `*` (`cluster.*`)",
        json_schema_extra={"pattern": PATTERN, "maxLength": MAX_PATTERN_LENGTH},
    ),
]
EventPatterns = Annotated[
    list[EventPattern],
    Field(min_length=1, max_length=MAX_PATTERNS),
    AfterValidator(_unique),
]
Url = Annotated[
    str,
    Field(
        min_length=1,
        description="http:// or https://; no userinfo; destinations the firewall refuses are "
        "refused (docs/webhooks.md)",
    ),
]
Description = Annotated[str, Field(max_length=500), AfterValidator(check_text)]


class WebhookCreate(InputModel):
    url: Url
    events: EventPatterns
    description: Description = ""
    enabled: bool = True


class WebhookUpdate(InputModel):
    url: Url | None = None
    events: EventPatterns | None = None
    description: Description | None = None
    enabled: bool | None = None

    @field_validator("url", "events", "description", "enabled", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        # Absent means unchanged; null is not a value any of them can take.
        if value is None:
            raise PydanticCustomError("VALIDATION_FAILED", "must not be null")
        return value


class WebhookRead(OutputModel):
    id: str
    url: str
    events: list[str]
    description: str
    enabled: bool
    disabled_reason: str | None = Field(
        None, description="Why the platform disabled it (3 days of failed deliveries)."
    )
    failing_since: UtcDateTime | None = Field(
        None, description="The first failed attempt of the current run of failures."
    )
    previous_secret_expires_at: UtcDateTime | None = Field(
        None,
        description="After a rotation: until then the secret it replaced signs too (24 h).",
    )
    created_at: UtcDateTime
    updated_at: UtcDateTime
    resource_version: str = Field(description="The version ETag and If-Match name.")

    @classmethod
    def of(cls, webhook: Webhook) -> WebhookRead:
        return cls(
            id=webhook.id,
            url=webhook.url,
            events=list(webhook.events),
            description=webhook.description,
            enabled=webhook.enabled,
            disabled_reason=webhook.disabled_reason,
            failing_since=webhook.failing_since,
            previous_secret_expires_at=webhook.previous_secret_expires_at,
            created_at=webhook.created_at,
            updated_at=webhook.updated_at,
            resource_version=str(webhook.resource_version),
        )


class WebhookWithSecret(WebhookRead):
    secret: str = Field(description="The signing secret (`whsec_…`), shown in this response only.")

    @classmethod
    def with_secret(cls, webhook: Webhook, secret: str) -> WebhookWithSecret:
        return cls(**WebhookRead.of(webhook).model_dump(), secret=secret)


class Attempt(OutputModel):
    at: UtcDateTime
    status_code: int | None = None
    latency_ms: int | None = None
    error: str | None = None


class DeliveryRead(OutputModel):
    id: str
    event_id: str = Field(description="The message's id: `webhook-id` on every attempt.")
    event_type: str = Field(description="The payload's `type` (the event's action).")
    state: DeliveryState
    attempts: int
    last_status_code: int | None = None
    last_latency_ms: int | None = None
    last_error: str | None = None
    last_attempt_at: UtcDateTime | None = None
    next_attempt_at: UtcDateTime | None = None
    created_at: UtcDateTime

    @classmethod
    def fields_of(cls, delivery: WebhookDelivery) -> dict[str, Any]:
        return {
            "id": delivery.id,
            "event_id": delivery.message_id,
            "event_type": delivery.event_type,
            "state": DeliveryState(delivery.state),
            "attempts": delivery.attempts,
            "last_status_code": delivery.last_status_code,
            "last_latency_ms": delivery.last_latency_ms,
            "last_error": delivery.last_error,
            "last_attempt_at": delivery.last_attempt_at,
            "next_attempt_at": delivery.reconcile_at
            if delivery.state == DeliveryState.pending
            else None,
            "created_at": delivery.created_at,
        }

    @classmethod
    def of(cls, delivery: WebhookDelivery) -> DeliveryRead:
        return cls(**cls.fields_of(delivery))


class DeliveryDetail(DeliveryRead):
    history: list[Attempt] = Field(description="Every attempt, oldest first.")

    @classmethod
    def detail_of(cls, delivery: WebhookDelivery) -> DeliveryDetail:
        history = [Attempt.model_validate(entry) for entry in delivery.history]
        return cls(**cls.fields_of(delivery), history=history)
