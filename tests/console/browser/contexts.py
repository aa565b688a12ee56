"""Browsing contexts (fresh browser profiles) whose traffic a test records (traffic.py)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Browser, BrowserContext, StorageState

from tests.console.browser.traffic import Traffic

TIMEOUT_MS = 30_000


def new_context(
    browser: Browser, traffic: Traffic, storage_state: StorageState | None, **options: Any
) -> BrowserContext:
    options.setdefault("viewport", {"width": 1280, "height": 800})
    context = browser.new_context(storage_state=storage_state, **options)
    context.set_default_timeout(TIMEOUT_MS)
    traffic.attach(context)
    return context


class OpenContext:
    """``open_context(storage_state=None, **options)``: a new browsing context (a fresh
    browser profile) whose traffic is recorded in the test's ``traffic``."""

    def __init__(self, browser: Browser, traffic: Traffic) -> None:
        self.browser = browser
        self.traffic = traffic
        self.opened: list[BrowserContext] = []

    def __call__(self, storage_state: StorageState | None = None, **options: Any) -> BrowserContext:
        context = new_context(self.browser, self.traffic, storage_state, **options)
        self.opened.append(context)
        return context
