from __future__ import annotations

from tenantplane.apikey.models import ApiKey
from tenantplane.http.schemas import InputDateTime, InputModel, OutputModel, UtcDateTime
from tenantplane.http.text import DisplayText
from tenantplane.member.models import Role


class ApiKeyCreate(InputModel):
    display_name: DisplayText
    role: Role
    expires_at: InputDateTime | None = None


class ApiKeyRead(OutputModel):
    id: str
    display_name: str
    role: Role
    expires_at: UtcDateTime | None = None
    created_at: UtcDateTime
    created_by: str
    last_used_at: UtcDateTime | None = None

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyRead:
        return cls(
            id=key.id,
            display_name=key.display_name,
            role=key.role,
            expires_at=key.expires_at,
            created_at=key.created_at,
            created_by=key.created_by,
            last_used_at=key.last_used_at,
        )


class ApiKeyCreated(OutputModel):
    id: str
    display_name: str
    role: Role
    expires_at: UtcDateTime | None = None
    created_at: UtcDateTime
    created_by: str
    key: str

    @classmethod
    def of(cls, key: ApiKey, raw_key: str) -> ApiKeyCreated:
        return cls(
            id=key.id,
            display_name=key.display_name,
            role=key.role,
            expires_at=key.expires_at,
            created_at=key.created_at,
            created_by=key.created_by,
            key=raw_key,
        )
