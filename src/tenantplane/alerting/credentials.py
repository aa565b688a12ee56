"""Operators set each tenant's credentials for a multi-tenant backend (Mimir)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting import secrets
from tenantplane.alerting.models import AlertingCredentials, CredentialsAuth
from tenantplane.alerting.repository import AlertingRepository
from tenantplane.db.clock import clock_of
from tenantplane.http.errors import NotFound, ValidationFailed
from tenantplane.keys import KeyRing
from tenantplane.tenant.models import Tenant
from tenantplane.tenant.repository import TenantRepository


@dataclass(frozen=True)
class CredentialsInfo:
    """What may be shown of stored credentials (never the secret)."""

    tenant: str
    org_id: str
    auth: str
    username: str | None
    updated_at: datetime


async def _tenant(session: AsyncSession, name: str) -> Tenant:
    tenant = await TenantRepository.from_session(session).get_by_name(name)
    if tenant is None:
        raise NotFound(f"tenant {name}")
    return tenant


def _check(auth: CredentialsAuth, org_id: str, username: str | None, secret: str | None) -> None:
    if not org_id or len(org_id) > 150 or any(c in org_id for c in "|\n\r"):
        # Mimir refuses '|' in tenant ids (it separates federated tenants).
        raise ValidationFailed("org id: 1-150 characters, no '|'", field="org_id")
    if auth is CredentialsAuth.basic and (not username or not secret):
        raise ValidationFailed("basic auth needs a username and a password", field="username")
    if auth is CredentialsAuth.bearer and not secret:
        raise ValidationFailed("bearer auth needs a token", field="secret")
    if auth is CredentialsAuth.none and secret:
        raise ValidationFailed("auth none takes no secret", field="secret")


async def set_credentials(
    session: AsyncSession,
    *,
    tenant_name: str,
    org_id: str,
    auth: CredentialsAuth,
    username: str | None,
    secret: str | None,
    keys: KeyRing,
) -> CredentialsInfo:
    _check(auth, org_id, username, secret)
    tenant = await _tenant(session, tenant_name)
    repository = AlertingRepository.from_session(session)
    row = await repository.get_credentials(tenant.id)
    if row is None:
        row = AlertingCredentials(tenant_id=tenant.id)
        repository.add_credentials(row)
    row.org_id = org_id
    row.auth = auth
    row.username = username if auth is CredentialsAuth.basic else None
    row.secret_ciphertext, row.key_derivation = (
        secrets.encrypt(keys, secret) if secret else (None, keys.current.derivation)
    )
    row.updated_at = await clock_of(session).now()
    await session.flush()
    return CredentialsInfo(tenant.name, row.org_id, row.auth.value, row.username, row.updated_at)


async def reencrypt_credentials(session: AsyncSession, keys: KeyRing) -> int:
    """Encrypt every stored secret under the current secret key (after a rotation); returns
    how many rows changed. Fails, changing nothing, if one cannot be decrypted."""
    current = keys.current.derivation
    rows = await AlertingRepository.from_session(session).credentials_not_derived_with(current)
    for row in rows:
        if row.secret_ciphertext is not None:
            plaintext = secrets.decrypt(keys, row.secret_ciphertext, row.key_derivation)
            row.secret_ciphertext, _ = secrets.encrypt(keys, plaintext)
        row.key_derivation = current
    await session.flush()
    return len(rows)


async def clear_credentials(session: AsyncSession, tenant_name: str) -> bool:
    tenant = await _tenant(session, tenant_name)
    removed = await AlertingRepository.from_session(session).delete_credentials(tenant.id)
    await session.flush()
    return removed


async def describe_credentials(session: AsyncSession, tenant_name: str) -> CredentialsInfo | None:
    tenant = await _tenant(session, tenant_name)
    row = await AlertingRepository.from_session(session).get_credentials(tenant.id)
    if row is None:
        return None
    return CredentialsInfo(tenant.name, row.org_id, row.auth.value, row.username, row.updated_at)
