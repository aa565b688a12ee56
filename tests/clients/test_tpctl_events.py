"""tpctl events (list, filters, --follow as a running process) and tpctl webhooks against a
real server; the webhooks' messages received by a real loopback receiver."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tenantplane_client import Tenantplane
from tests.clients.conftest import TPCTL, Run, Tenant, ok, tpctl_environment, tpctl_for
from tests.clients.test_sdk import FAST
from tests.event.webhook.receiver import Received, Receiver, running_receiver

DEADLINE_SECONDS = 60.0


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def test_events_list_filters_outputs_and_refusals(tpctl: Run) -> None:
    ok(tpctl("members", "create", "dev@example.com", "--role", "readonly"))
    ok(tpctl("members", "update", "dev@example.com", "--role", "admin"))
    ok(tpctl("secrets", "create", "db", "--path", "apps/db"))

    listed = ok(tpctl("events", "list", "--kind", "member"))
    assert [e["action"] for e in listed] == ["member.update", "member.create"]
    assert {e["resource"]["name"] for e in listed} == {"dev@example.com"}
    assert listed[0]["actor"]["kind"] == "apikey"
    assert "hash" in listed[0]
    key_id = listed[0]["actor"]["id"]
    assert [e["action"] for e in ok(tpctl("events", "list", "--action", "secret.*"))] == [
        "secret.create"
    ]
    assert ok(tpctl("events", "list", "--kind", "member", "--limit", "1"))[0]["action"] == (
        "member.update"
    )
    assert len(ok(tpctl("events", "list", "--actor", key_id, "--limit", "0"))) == 3
    assert ok(tpctl("events", "list", "--type", "audit", "--name", "nobody")) == []
    since = listed[0]["time"]
    assert [
        e["action"] for e in ok(tpctl("events", "list", "--kind", "member", "--since", since))
    ] == ["member.update"]

    table = tpctl("events", "list", "--kind", "member", "-o", "table", env={"COLUMNS": "60"})
    assert table.returncode == 0, table.stderr
    assert "ACTION" in table.stdout
    assert "member.update" in table.stdout
    assert "dev@example.com" in table.stdout  # whole, however narrow the terminal
    assert key_id in table.stdout

    bad = tpctl("events", "list", "--since", "yesterday")
    assert bad.returncode == 7
    assert "Error: 400 invalid" in bad.stderr
    assert "field: since" in bad.stderr
    assert tpctl("events", "list", "--type", "other").returncode == 2
    assert tpctl("events", "list", "--follow", "--until", since).returncode == 2
    assert tpctl("events", "list", "--follow", "--limit", "5").returncode == 2
    assert tpctl("events", "list", "--follow", "--since", "yesterday").returncode == 2
    assert tpctl("events", "list", "--follow", "--since", "2026-12-01T10:00:00").returncode == 2


class Lines:
    """A stream's lines as a reader thread sees them, waited for with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def next(self, what: str) -> str:
        try:
            line = self.lines.get(timeout=DEADLINE_SECONDS)
        except queue.Empty:
            pytest.fail(f"gave up waiting for {what}; had {self.seen}")
        self.seen.append(line)
        return line

    def rest(self) -> list[str]:
        """The lines after those taken, once the stream has ended."""
        self.reader.join(DEADLINE_SECONDS)
        assert not self.reader.is_alive(), "the stream did not end"
        rest = []
        while not self.lines.empty():
            rest.append(self.lines.get())
        return rest


def test_events_follow_prints_what_arrives_until_interrupted(tenant: Tenant, home: Path) -> None:
    with Tenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as api:
        api.members.add("before@example.com", "readonly")
        process = subprocess.Popen(
            [TPCTL, "events", "list", "--follow", "--kind", "member", "--interval", "0.05"],
            env={**tpctl_environment(tenant, home), "TPCTL_RETRY_BASE_SECONDS": "0.01"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        stdout, stderr = Lines(process.stdout), Lines(process.stderr)
        try:
            assert stderr.next("follow to start") == "Following events (Ctrl-C to stop)…"
            api.members.add("one@example.com", "readonly")
            api.members.update("one@example.com", "admin")
            printed: list[dict[str, Any]] = [json.loads(stdout.next("an event")) for _ in range(2)]
        finally:
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=DEADLINE_SECONDS)
    # One JSON object a line, oldest first; the member made before it started is not printed.
    assert [(e["action"], e["resource"]["name"]) for e in printed] == [
        ("member.create", "one@example.com"),
        ("member.update", "one@example.com"),
    ]
    assert code == 0
    assert stdout.rest() == []
    assert stderr.rest() == []  # no traceback, no KeyboardInterrupt


def received(
    receiver: Receiver, until: Callable[[list[Received]], bool], what: str
) -> list[Received]:
    """The receiver's requests once ``until`` holds for them (a deadline only turns a hang
    into a failure)."""
    with receiver.changed:
        if not receiver.changed.wait_for(lambda: until(receiver.requests), DEADLINE_SECONDS):
            pytest.fail(f"gave up waiting for {what}; received {receiver.requests}")
        return list(receiver.requests)


def wait_for_delivery(tpctl: Run, webhook_id: str, delivery_id: str) -> dict[str, Any]:
    """The delivery once it succeeded (polled through tpctl; the deadline only turns a hang
    into a failure)."""
    give_up = time.monotonic() + DEADLINE_SECONDS
    while True:
        delivery: dict[str, Any] = ok(
            tpctl("webhooks", "deliveries", webhook_id, delivery_id, "-o", "json")
        )
        if delivery["state"] == "succeeded":
            return delivery
        if time.monotonic() > give_up:
            pytest.fail(f"the delivery did not succeed: {delivery}")
        time.sleep(0.05)  # polling a condition with a deadline


def test_webhooks_commands(webhook_tenant: Tenant, home: Path, receiver: Receiver) -> None:
    tpctl = tpctl_for(webhook_tenant, home)
    url = f"{receiver.url}/hook"
    assert tpctl("webhooks", "create", "--url", url).returncode == 2  # no --event
    made = tpctl(
        "webhooks",
        "create",
        "--url",
        url,
        "--event",
        "secret.*",
        "--event",
        "member.create",
        "--description",
        "ops",
    )
    created = ok(made)
    secret = created["secret"]
    assert secret.startswith("whsec_")
    assert created["events"] == ["secret.*", "member.create"]
    assert "shown this once and cannot be read again" in made.stderr
    webhook_id = created["id"]
    got = ok(tpctl("webhooks", "get", webhook_id))
    assert "secret" not in got
    assert got["description"] == "ops"
    assert [item["id"] for item in ok(tpctl("webhooks", "list"))] == [webhook_id]
    table = tpctl("webhooks", "list", "-o", "table", env={"COLUMNS": "60"})
    assert webhook_id in table.stdout
    assert url in table.stdout

    ping = ok(tpctl("webhooks", "ping", webhook_id))
    assert ping["eventType"] == "webhook.ping"
    [message] = received(receiver, lambda found: bool(found), "the ping")
    assert message.verified(secret)["type"] == "webhook.ping"
    delivered = wait_for_delivery(tpctl, webhook_id, ping["id"])
    assert [attempt["statusCode"] for attempt in delivered["history"]] == [200]
    listed = ok(tpctl("webhooks", "deliveries", webhook_id))
    assert [item["id"] for item in listed] == [ping["id"]]

    again = ok(tpctl("webhooks", "redeliver", webhook_id, ping["id"]))
    assert again["eventId"] == ping["eventId"]
    pings = received(receiver, lambda found: len(found) == 2, "the redelivery")
    assert pings[0].id == pings[1].id

    disabled = ok(tpctl("webhooks", "update", webhook_id, "--disable"))
    assert disabled["enabled"] is False
    refused = tpctl("webhooks", "ping", webhook_id)
    assert refused.returncode == 5
    assert "WEBHOOK_DISABLED" in refused.stderr
    enabled = ok(tpctl("webhooks", "update", webhook_id, "--enable", "--event", "cluster.*"))
    assert (enabled["enabled"], enabled["events"]) == (True, ["cluster.*"])
    assert tpctl("webhooks", "update", webhook_id).returncode == 2  # nothing to change

    rotation = tpctl("webhooks", "rotate-secret", webhook_id)
    rotated = ok(rotation)
    assert rotated["secret"].startswith("whsec_")
    assert rotated["secret"] != secret
    assert "cannot be read again" in rotation.stderr

    deleted = tpctl("webhooks", "delete", webhook_id)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stderr.strip() == f"Webhook {webhook_id} deleted"
    assert tpctl("webhooks", "get", webhook_id).returncode == 4
