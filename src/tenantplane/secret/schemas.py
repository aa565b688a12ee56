from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from tenantplane.http.names import ResourceName, is_dns_label, is_dns_subdomain
from tenantplane.http.schemas import InputModel, OutputModel, UtcDateTime
from tenantplane.secret.models import Secret

MAX_SYNC_TARGETS = 100
MAX_SECRET_PATH_LENGTH = 255
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9._-]+$")


def check_secret_path(value: str) -> str:
    """A KV v2 path relative to the tenant's mount: ``apps/db/credentials``."""
    if not 1 <= len(value) <= MAX_SECRET_PATH_LENGTH:
        raise ValueError(f"must be 1-{MAX_SECRET_PATH_LENGTH} characters")
    if value.startswith("/"):
        raise ValueError("must be relative to the tenant's vault mount: no leading '/'")
    if value.endswith("/"):
        raise ValueError("must name a secret, not a folder: no trailing '/'")
    for segment in value.split("/"):
        if segment in {"", ".", ".."}:
            raise ValueError("must not contain empty, '.' or '..' segments")
        if not _PATH_SEGMENT.fullmatch(segment):
            raise ValueError(
                "segments may contain only letters, digits, '.', '_' and '-', separated by '/'"
            )
    return value


def check_namespace(value: str) -> str:
    if not is_dns_label(value):
        raise ValueError(
            "must be an RFC 1123 label: 1-63 lower-case letters, digits or '-', "
            "starting and ending with a letter or digit"
        )
    return value


def check_object_name(value: str) -> str:
    if not is_dns_subdomain(value):
        raise ValueError(
            "must be an RFC 1123 subdomain: up to 253 lower-case letters, digits, '-' or '.', "
            "each dot-separated part starting and ending with a letter or digit"
        )
    return value


SecretPath = Annotated[str, AfterValidator(check_secret_path)]
Namespace = Annotated[str, AfterValidator(check_namespace)]
ObjectName = Annotated[str, AfterValidator(check_object_name)]


class SyncTargetIn(InputModel):
    cluster: ResourceName
    namespace: Namespace
    # Defaults to the managed secret's name.
    secret_name: ObjectName | None = None


SyncTargets = Annotated[list[SyncTargetIn], Field(max_length=MAX_SYNC_TARGETS)]


class SecretCreate(InputModel):
    name: ResourceName
    secret_path: SecretPath
    sync: SyncTargets | None = None


class SecretUpdate(InputModel):
    """PATCH: the targets only, and the list replaces the existing one."""

    sync: SyncTargets


class SyncTargetRead(OutputModel):
    cluster: str
    namespace: str
    secret_name: str


class SecretStatusRead(OutputModel):
    phase: str
    conditions: list[dict[str, Any]]
    sync_statuses: list[dict[str, Any]]


class SecretRead(OutputModel):
    name: str
    secret_path: str
    sync: list[SyncTargetRead]
    created_at: UtcDateTime
    resource_version: str
    status: SecretStatusRead

    @classmethod
    def of(cls, secret: Secret) -> SecretRead:
        return cls(
            name=secret.name,
            secret_path=secret.secret_path,
            sync=[SyncTargetRead.model_validate(target) for target in secret.sync],
            created_at=secret.created_at,
            resource_version=str(secret.resource_version),
            status=SecretStatusRead(
                phase=secret.phase,
                conditions=list(secret.conditions),
                sync_statuses=list(secret.sync_statuses),
            ),
        )
