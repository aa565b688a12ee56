"""One secret, one purpose: API-key hashes and stored credentials use different keys derived
from the secret key; rows made before the upgrade, or under an earlier secret key listed as a
fallback, keep working; `tenantplane keys rotate` re-encrypts."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy import create_engine, select, text
from typer.testing import CliRunner

from tenantplane.alerting import secrets
from tenantplane.alerting.models import AlertingCredentials
from tenantplane.apikey.models import ApiKey
from tenantplane.apikey.tokens import new_key_id, new_raw_key
from tenantplane.cli import app as cli_app
from tenantplane.db.engine import Database
from tenantplane.db.migrate import sync_url, upgrade
from tenantplane.event.webhook.models import Webhook
from tenantplane.keys import LEGACY, KeyRing, Purpose, decrypt_stored
from tests.conftest import TEST_SECRET, make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app

NEW_SECRET = "the-secret-key-after-rotation"
# How credentials were encrypted before keys were derived with HKDF.
LEGACY_CREDENTIALS_PURPOSE = b"tenantplane alerting backend credentials v1"


def legacy_api_key_hash(secret: str, raw_key: str) -> bytes:
    return hmac.new(secret.encode(), raw_key.encode(), hashlib.sha256).digest()


def legacy_fernet(secret: str) -> Fernet:
    key = hmac.new(secret.encode(), LEGACY_CREDENTIALS_PURPOSE, hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


async def api_key_row(database: Database, raw_key: str) -> ApiKey | None:
    from tenantplane.apikey.tokens import candidate_hashes

    ring = KeyRing(TEST_SECRET.encode(), [NEW_SECRET.encode()])
    async with database.sessionmaker() as session:
        statement = select(ApiKey).where(ApiKey.key_hash.in_(candidate_hashes(ring, raw_key)))
        return (await session.execute(statement)).scalar_one_or_none()


async def credentials_row(database: Database, tenant_id: int) -> AlertingCredentials:
    async with database.sessionmaker() as session:
        row = await session.get(AlertingCredentials, tenant_id)
        assert row is not None
        return row


def cli(database_url: str, *args: str, fallbacks: str = "") -> tuple[int, Any]:
    env = {
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SECRET_KEY": NEW_SECRET,
        "TENANTPLANE_SECRET_KEY_FALLBACKS": fallbacks,
    }
    result = CliRunner().invoke(cli_app, [*args, "--json"], env=env)
    return result.exit_code, json.loads(result.stdout)


def test_each_purpose_has_its_own_key() -> None:
    ring = KeyRing(TEST_SECRET.encode())
    derived = [ring.current.key(purpose) for purpose in Purpose]
    assert len({*derived, TEST_SECRET.encode()}) == len(Purpose) + 1
    assert all(len(key) == 32 for key in derived)
    # Another secret key derives other keys, and is told apart by its derivation label.
    other = KeyRing(NEW_SECRET.encode())
    assert other.current.derivation != ring.current.derivation
    assert not {other.current.key(purpose) for purpose in Purpose} & set(derived)


async def test_new_rows_are_made_with_the_derived_keys(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name, secret="mimir-password")
    ring = KeyRing(TEST_SECRET.encode())
    key = await api_key_row(database, tenant.admin_key)
    assert key is not None
    assert key.key_derivation == ring.current.derivation
    assert key.key_hash != legacy_api_key_hash(TEST_SECRET, tenant.admin_key)
    row = await credentials_row(database, tenant.id)
    assert row.key_derivation == ring.current.derivation
    assert row.secret_ciphertext is not None
    # The API-key hashing key does not decrypt credentials (nor does the secret key's old
    # derivation): the two purposes share nothing.
    hash_key = ring.current.key(Purpose.api_key_hash)
    for wrong in (Fernet(base64.urlsafe_b64encode(hash_key)), legacy_fernet(TEST_SECRET)):
        with pytest.raises(InvalidToken):
            wrong.decrypt(row.secret_ciphertext)
    assert secrets.decrypt(ring, row.secret_ciphertext, row.key_derivation) == "mimir-password"


def _insert_pre_upgrade_rows(url: str, raw_key: str) -> None:
    """A tenant, an API key and Mimir credentials as the previous release stored them."""
    engine = create_engine(sync_url(url))
    ciphertext = legacy_fernet(TEST_SECRET).encrypt(b"old-password")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO tenants (id, name, plan, enforce_metrics_limit, enforce_log_limit,"
                " members_version, created_at, resource_version)"
                " VALUES (1, 'legacy', 'starter', 0, 0, 1, '2026-09-01 00:00:00', 1)"
            )
        )
        connection.execute(
            text(
                "INSERT INTO api_keys (id, tenant_id, display_name, role, key_hash,"
                " created_at, created_by, resource_version)"
                " VALUES (:id, 1, 'old', 'admin', :hash, '2026-09-01 00:00:00', 'a@b.c', 1)"
            ),
            {"id": new_key_id(), "hash": legacy_api_key_hash(TEST_SECRET, raw_key)},
        )
        connection.execute(
            text(
                "INSERT INTO alerting_credentials (tenant_id, org_id, auth, username,"
                " secret_ciphertext, updated_at)"
                " VALUES (1, 'legacy', 'basic', 'u', :secret, '2026-09-01 00:00:00')"
            ),
            {"secret": ciphertext},
        )
    engine.dispose()


async def test_rows_made_before_the_upgrade_keep_working(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'upgrade.db'}"
    upgrade(url, "0008_tenant_state")
    raw_key = new_raw_key()
    _insert_pre_upgrade_rows(url, raw_key)
    upgrade(url)
    database = Database.connect(url)
    try:
        assert (await api_key_row(database, raw_key)).key_derivation == LEGACY  # type: ignore[union-attr]
        settings = make_settings(url, tmp_path, run_reconcilers=False)
        async with running_app(settings) as app, api_client(app) as client:
            response = await client.get("/tenants/legacy", headers=bearer(raw_key))
            assert response.status_code == 200, response.text
        # Re-hashed under the derived key on that first use; it keeps working.
        key = await api_key_row(database, raw_key)
        assert key is not None
        assert key.key_derivation == settings.keyring().current.derivation
        async with running_app(settings) as app, api_client(app) as client:
            assert (await client.get("/tenants/legacy", headers=bearer(raw_key))).status_code == 200

        ring = KeyRing(TEST_SECRET.encode())
        row = await credentials_row(database, 1)
        assert row.secret_ciphertext is not None
        assert secrets.decrypt(ring, row.secret_ciphertext, row.key_derivation) == "old-password"
    finally:
        await database.dispose()


async def test_rotating_the_secret_key(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()  # API keys and credentials made under TEST_SECRET
    await factory.alerting_credentials(tenant.name, secret="mimir-password")
    unused_key = await factory.api_key(tenant.id)
    # A webhook whose secret was rotated: two signing secrets stored.
    original = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(original) as app, api_client(app) as client:
        hook = {"url": "https://hooks.example.invalid/t", "events": ["*"]}
        created = await client.post(
            f"{tenant.path}/webhooks", json=hook, headers=bearer(tenant.admin_key)
        )
        assert created.status_code == 201, created.text
        webhook_id, first_secret = created.json()["id"], created.json()["secret"]
        rotated_secret = await client.post(
            f"{tenant.path}/webhooks/{webhook_id}/rotate-secret", headers=bearer(tenant.admin_key)
        )
        second_secret = rotated_secret.json()["secret"]

    # Without the old key as a fallback, rotating refuses and changes nothing.
    code, refused = await asyncio.to_thread(cli, database_url, "keys", "rotate")
    assert (code, refused["error"]["code"]) == (1, "UNKNOWN_KEY")
    before = await credentials_row(database, tenant.id)

    # The new secret key with the old one as a fallback: every key still authenticates,
    # and one that is used is re-hashed under the new key.
    rotated = make_settings(
        database_url, tmp_path, secret_key=NEW_SECRET, secret_key_fallbacks=TEST_SECRET
    )
    new_ring = rotated.keyring()
    async with running_app(rotated) as app, api_client(app) as client:
        for raw_key in (tenant.admin_key, tenant.readonly_key):
            assert (await client.get(tenant.path, headers=bearer(raw_key))).status_code == 200
    used = await api_key_row(database, tenant.admin_key)
    assert used is not None
    assert used.key_derivation == new_ring.current.derivation

    code, report = await asyncio.to_thread(
        cli, database_url, "keys", "rotate", fallbacks=TEST_SECRET
    )
    assert code == 0, report
    assert report == {
        "keyDerivation": new_ring.current.derivation,
        # The alerting backend's credentials and the webhook's secrets.
        "credentialsReencrypted": 2,
        # The admin and readonly keys were used and re-hashed; the third was not.
        "apiKeysAwaitingRehash": 1,
    }
    after = await credentials_row(database, tenant.id)
    assert after.key_derivation == new_ring.current.derivation
    assert after.secret_ciphertext != before.secret_ciphertext
    assert (
        secrets.decrypt(
            KeyRing(NEW_SECRET.encode()), after.secret_ciphertext or b"", after.key_derivation
        )
        == "mimir-password"
    )

    async with database.transaction() as session:
        webhook = await session.get(Webhook, webhook_id)
        assert webhook is not None
        assert webhook.key_derivation == new_ring.current.derivation
        new_only = KeyRing(NEW_SECRET.encode())
        assert decrypt_stored(new_only, webhook.secret, webhook.key_derivation) == second_secret
        assert webhook.previous_secret is not None
        previous = decrypt_stored(new_only, webhook.previous_secret, webhook.key_derivation)
        assert previous == first_secret

    # The old key dropped: what was re-hashed or re-encrypted works, the unused key does not.
    final = make_settings(database_url, tmp_path, secret_key=NEW_SECRET)
    async with running_app(final) as app, api_client(app) as client:
        assert (await client.get(tenant.path, headers=bearer(tenant.admin_key))).status_code == 200
        assert (await client.get(tenant.path, headers=bearer(unused_key))).status_code == 401
