"""At DEBUG, a real `tenantplane serve` (and the operator command beside it) logs no
credential, on SQLite and on PostgreSQL (docs/security.md: someone who reads a log must not
recover an API key or a stored credential).

Every credential the API accepts is written: every credential field of every receiver
integration and of the global section (as one configuration, receiver by receiver and the
global section alone), a webhook URL carrying a password, API keys (created by the operator
and through the API, replayed by Idempotency-Key and used); then the whole output of the
processes is searched for each value, and for the service's own secret key and database
password. With each alerting backend: the database, Mimir (a loopback fake, reached with the
basic-auth password the operator stores) and the shared Alertmanager (its files, its
reload), which are sent every credential; and a vault (its token, a secret's value there)
that a managed secret points at. The drivers (aiosqlite, psycopg), SQLAlchemy,
the HTTP clients and uvicorn all log at DEBUG unless quieted; their parameters carry the
values.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from tenantplane.db.engine import Database
from tenantplane.logging import configure_logging
from tests.alerting.test_secret_redaction import SENTINEL, every_credential
from tests.backends import postgres_database, redis_url
from tests.conftest import TEST_SECRET
from tests.contract.server import TENANTPLANE, free_port, server_env, wait_until_serving
from tests.fakes.alertmanager_reload import running_refusing_alertmanager
from tests.fakes.mimir import running_fake_mimir
from tests.fakes.vault import FakeVault, serve

DATABASE_PASSWORD = "dbpass" + secrets.token_hex(8)


def token() -> str:
    """A credential no other line of the log can contain by chance."""
    return "cred" + secrets.token_hex(12)


def with_fresh_values(document: Any, values: list[str]) -> Any:
    """``document`` with each credential (a string holding the redaction tests' sentinel)
    made unique, the values collected in ``values``."""
    if isinstance(document, dict):
        return {key: with_fresh_values(value, values) for key, value in document.items()}
    if isinstance(document, list):
        return [with_fresh_values(value, values) for value in document]
    if isinstance(document, str) and SENTINEL in document:
        value = token()
        values.append(value)
        prefix = document.partition(SENTINEL)[0]
        return f"{prefix}{value}"
    return document


@contextmanager
def database_url(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'tenantplane.db'}"
        return
    with postgres_database("tenantplane_logsecrets") as url:
        # The test server trusts local connections: the password is sent and ignored.
        yield make_url(url).set(password=DATABASE_PASSWORD).render_as_string(hide_password=False)


def write_every_credential(api: httpx.Client, tenant: str, values: list[str]) -> None:
    base = f"/api/v1/tenants/{tenant}/alerting"
    document = with_fresh_values(every_credential(), values)
    receiver = document["receivers"][1]
    userinfo = token()
    values.append(userinfo)
    receiver["webhook_configs"].append({"url": f"https://am:{userinfo}@hooks.example.com/in"})
    written = api.put(f"{base}/config", json=document)
    assert written.status_code == 200, written.text
    # The same kinds again through the narrower writes.
    again = with_fresh_values(every_credential(), values)
    replaced = api.put(f"{base}/receivers/everything", json=again["receivers"][1])
    assert replaced.status_code == 200, replaced.text
    glob = api.put(f"{base}/global", json=again["global"])
    assert glob.status_code == 200, glob.text
    read = api.get(f"{base}/config")
    assert read.status_code == 200, read.text
    assert values[-1] in read.text  # stored, and shown to the admin


def create_api_keys(api: httpx.Client, tenant: str, values: list[str]) -> None:
    path = f"/api/v1/tenants/{tenant}/apikeys"
    body = {"displayName": "ci", "role": "admin"}
    idempotent = {"Idempotency-Key": token()}
    created = api.post(path, json=body, headers=idempotent)
    assert created.status_code == 201, created.text
    replayed = api.post(path, json=body, headers=idempotent)
    assert replayed.json() == created.json()
    readonly = api.post(path, json={"displayName": "ro", "role": "readonly"})
    assert readonly.status_code == 201, readonly.text
    for raw in (created.json()["key"], readonly.json()["key"]):
        values.append(raw)
        used = api.get(f"/api/v1/tenants/{tenant}", headers={"Authorization": f"Bearer {raw}"})
        assert used.status_code == 200, used.text


@contextmanager
def alerting_backend(kind: str, values: list[str]) -> Iterator[tuple[dict[str, str], str]]:
    """The server's settings for the alerting backend ``kind`` (a loopback fake, which the
    server sends every credential to) and the password the operator stores for it."""
    password = token()
    if kind == "database":
        yield {}, password
    elif kind == "mimir":
        with running_fake_mimir(None) as mimir:
            mimir.expect_basic("acme", "mimir-user", password)
            values.append(password)
            settings = {"TENANTPLANE_ALERTING_BACKEND": "mimir", "TENANTPLANE_MIMIR_URL": mimir.url}
            yield settings, password
            # Applied, through the gateway's basic auth with the stored password.
            assert "smtp_auth_password" in mimir.configs["acme"]["alertmanager_config"]
    else:
        with running_refusing_alertmanager(refusals=0) as alertmanager:
            settings = {
                "TENANTPLANE_ALERTING_BACKEND": "alertmanager",
                "TENANTPLANE_ALERTMANAGER_URL": alertmanager.url,
            }
            yield settings, password
            assert alertmanager.reloads >= 1


def operator(env: dict[str, str], log: Path, *arguments: str, stdin: str = "") -> str:
    """Runs an operator command: its output (stdout); its log appended to ``log``."""
    done = subprocess.run(
        [TENANTPLANE, *arguments], env=env, input=stdin.encode(), capture_output=True, check=False
    )
    with log.open("ab") as output:
        output.write(done.stderr)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


@contextmanager
def vault_with_a_secret(values: list[str]) -> Iterator[dict[str, str]]:
    """A fake vault on loopback, its token and the value of a secret at ``apps/db`` of the
    tenant's mount among ``values``: the server's settings to reach it."""
    vault = FakeVault(token=token())
    vault.enable_kv2("tenant-acme")
    value = token()
    vault.put("tenant-acme", "apps/db", {"password": value})
    values += [vault.token, value]
    with serve(vault) as address:
        yield {"TENANTPLANE_VAULT_ADDR": address, "TENANTPLANE_VAULT_TOKEN": vault.token}
    assert ("GET", "tenant-acme/metadata/apps/db") in vault.requests


CASES = [
    ("sqlite", "database", "json"),
    ("postgresql", "database", "json"),
    ("sqlite", "mimir", "json"),
    ("postgresql", "alertmanager", "json"),
    # The readable lines of a terminal (TENANTPLANE_LOG_FORMAT=console) render the same
    # records: no more may be in them.
    ("sqlite", "mimir", "console"),
]


def levels_and_loggers(logged: str, log_format: str, leaked: list[str]) -> tuple[set[str], str]:
    """The levels logged, and the loggers of the lines holding a leaked value (console:
    those lines themselves)."""
    lines = logged.splitlines()
    if log_format == "console":
        levels = set(re.findall(r"^\S+ \[(\w+)\s*\]", logged, re.MULTILINE))
        return levels, repr([line for line in lines if any(v in line for v in leaked)][:5])
    records = [json.loads(line) for line in lines]
    culprits = {r["logger"] for r in records if any(v in json.dumps(r) for v in leaked)}
    return {record["level"] for record in records}, repr(sorted(culprits))


@pytest.mark.parametrize(("database", "alerting", "log_format"), CASES)
def test_debug_logs_hold_no_credential(
    database: str, alerting: str, log_format: str, tmp_path: Path
) -> None:
    values: list[str] = [TEST_SECRET]
    log, operator_log = tmp_path / "stderr", tmp_path / "operator"
    with (
        database_url(database, tmp_path) as url,
        alerting_backend(alerting, values) as backend,
        vault_with_a_secret(values) as vault,
    ):
        if database == "postgresql":
            values.append(DATABASE_PASSWORD)
        settings, mimir_password = backend
        env = {
            **server_env(tmp_path, url),
            **settings,
            **vault,
            "TENANTPLANE_LOG_LEVEL": "DEBUG",
            "TENANTPLANE_LOG_FORMAT": log_format,
            "TENANTPLANE_REDIS_URL": redis_url(),
        }
        env.pop("TENANTPLANE_LOG_JSON", None)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        with log.open("wb") as err:
            process = subprocess.Popen(
                [TENANTPLANE, "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdout=err,
                stderr=err,
            )
            try:
                wait_until_serving(base_url, process, log)
                created = operator(env, operator_log, "tenant", "create", "acme", "--json")
                admin_key = json.loads(created)["apiKey"]["key"]
                values.append(admin_key)
                if alerting == "mimir":
                    operator(
                        env,
                        operator_log,
                        *("alerting", "set-credentials", "acme", "--username", "mimir-user"),
                        "--secret-stdin",
                        stdin=mimir_password + "\n",
                    )
                headers = {"Authorization": f"Bearer {admin_key}"}
                with httpx.Client(base_url=base_url, headers=headers, timeout=30) as api:
                    write_every_credential(api, "acme", values)
                    create_api_keys(api, "acme", values)
                    managed = api.post(
                        "/api/v1/tenants/acme/secrets", json={"name": "db", "secretPath": "apps/db"}
                    )
                    assert managed.status_code == 201, managed.text
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)

    logged = log.read_text(errors="replace") + operator_log.read_text(errors="replace")
    leaked = [value for value in values if value in logged]
    levels, culprits = levels_and_loggers(logged, log_format, leaked)
    assert "debug" in levels  # the processes did log at DEBUG, in the format asked for
    assert len(values) > 60
    assert leaked == [], f"{len(leaked)} of {len(values)} credentials logged by {culprits}"


def test_quieted_loggers_stay_quiet_below_warning_whatever_their_level(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A library (or a configuration file) setting a quieted logger's level again does not
    bring its records back; other libraries keep their debug output; warnings pass."""
    configure_logging("DEBUG", json=True)
    value = token()
    for name in ("aiosqlite", "sqlalchemy.engine.Engine", "httpx", "urllib3.connectionpool"):
        library = logging.getLogger(name)
        library.setLevel(logging.DEBUG)
        library.debug("executing %s", value)
        library.info("executing %s", value)
    logging.getLogger("aiosqlite").warning("a warning")
    logging.getLogger("alembic.runtime.migration").debug("a step")
    logged = capsys.readouterr().err
    configure_logging("INFO", json=True)
    assert value not in logged
    events = [(r["logger"], r["event"]) for r in map(json.loads, logged.splitlines())]
    assert events == [("aiosqlite", "a warning"), ("alembic.runtime.migration", "a step")]


def test_console_tracebacks_show_no_local_variables(capsys: pytest.CaptureFixture[str]) -> None:
    """The readable format draws an exception's traceback without the values of its frames'
    variables (rich's, structlog's default there, shows them): a credential being checked
    when something failed stays out of the log."""
    configure_logging("INFO", json=False)
    value = token()

    def check(credential: str) -> None:
        raise ValueError("refused")

    try:
        check(value)
    except ValueError:
        structlog.get_logger("tests.console").exception("check failed")
    logged = capsys.readouterr().err
    configure_logging("INFO", json=True)
    assert value not in logged
    assert "check failed" in logged
    assert "ValueError: refused" in logged


async def test_database_errors_carry_no_parameters(database: Database) -> None:
    """An error's message (logged with the traceback of an unhandled error) names the
    statement, not the values bound to it (before: "[parameters: ('cred…',)]")."""
    value = token()
    statement = text("SELECT * FROM no_such_table WHERE secret = :value")
    with pytest.raises(DBAPIError) as raised:
        async with database.transaction() as session:
            await session.execute(statement, {"value": value})
    assert "no_such_table" in str(raised.value)
    assert value not in str(raised.value)
    # The plain reads (db/reads.py: sqlite3 or psycopg directly) raise SQLAlchemy's errors too.
    with pytest.raises(DBAPIError) as raised:
        await database.reads.all(statement, {"value": value})
    assert "no_such_table" in str(raised.value)
    assert value not in str(raised.value)
