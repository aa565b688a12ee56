"""The event as the API shows it (documentation: the list answers the stored JSON itself)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tenantplane.http.schemas import Continue, OutputModel


class EventResource(OutputModel):
    kind: str = Field(description="e.g. `cluster`, `secret`, `alerting.receiver`")
    name: str


class EventActor(OutputModel):
    kind: Literal["member", "apikey", "operator", "system"]
    email: str | None = Field(None, description="The member's (kind `member`).")
    id: str | None = Field(None, description="The API key's id (kind `apikey`).")


class ResourceVersions(OutputModel):
    before: str | None = Field(None, description="The If-Match the write was made under.")
    after: str | None = Field(None, description="The version the write answered (ETag).")


class EventRead(OutputModel):
    id: str = Field(description="Unique, sortable by creation time (a ULID).")
    time: str = Field(description="RFC 3339, UTC (`Z`).")
    type: Literal["audit", "platform"]
    action: str = Field(description="e.g. `cluster.create`, `cluster.phase_changed`.")
    resource: EventResource
    actor: EventActor
    data: dict[str, Any] = Field(description="Platform events: what changed (`from`, `to`, …).")
    source_ip: str | None = Field(None, description="Audit events: the client's address.")
    request_id: str | None = Field(None, description="Audit events: the X-Request-Id answered.")
    status: int | None = Field(None, description="Audit events: the HTTP status answered.")
    resource_version: ResourceVersions | None = None
    hash: str = Field(
        description="SHA-256 (hex) over the previous event's hash and this event's canonical "
        "JSON (docs/events.md)."
    )


class EventPage(OutputModel):
    items: list[EventRead]
    continue_: Continue = None
