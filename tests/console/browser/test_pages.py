"""Every page of pages.PAGES, in the browser: no serious or critical accessibility
violation (axe) in the light and the dark theme, photographed at 1280x800 and 390x844 in
both (the artifacts), something to read in its main region, no horizontal scrolling on a
390 px phone, and the skip link first in the tab order with its focus visible."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser.accessibility import blocking_violations
from tests.console.browser.pages import PAGES, SIZES, THEMES
from tests.console.browser.steps import ConsoleServer

pytestmark = pytest.mark.console

Theme = Literal["light", "dark"]


def visit(page: Page, server: ConsoleServer, path: str, page_values: dict[str, str]) -> None:
    answer = page.goto(server.url(path.format(**page_values)))
    assert answer is not None
    assert answer.ok, f"{path}: {answer.status}"
    expect(page.locator("main")).to_be_visible()


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_the_page_is_accessible_and_photographed(
    admin_page: Page,
    console_server: ConsoleServer,
    page_values: dict[str, str],
    axe: str,
    artifacts: Path,
    name: str,
    path: str,
    theme: Theme,
) -> None:
    page = admin_page
    page.emulate_media(color_scheme=theme)
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        visit(page, console_server, path, page_values)
        page.screenshot(path=artifacts / f"{name}-{width}x{height}-{theme}.png", full_page=True)
        violations = blocking_violations(page, axe)
        assert violations == [], f"{name} at {width}px, {theme}:\n" + "\n".join(violations)


@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_the_page_shows_content_and_fits_a_phone(
    admin_page: Page,
    console_server: ConsoleServer,
    page_values: dict[str, str],
    name: str,
    path: str,
) -> None:
    page = admin_page
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        visit(page, console_server, path, page_values)
        main = page.locator("main")
        assert main.inner_text().strip(), f"{name} renders nothing to read in <main>"
        expect(page.get_by_role("heading", level=1)).to_have_count(1)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        overflow = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert overflow[0] <= overflow[1], (
            f"{name} scrolls sideways at {width}px: {overflow[0]} px wide in {overflow[1]} px"
        )


@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_tab_reaches_the_skip_link_first_with_a_visible_focus(
    admin_page: Page,
    console_server: ConsoleServer,
    page_values: dict[str, str],
    name: str,
    path: str,
) -> None:
    page = admin_page
    visit(page, console_server, path, page_values)
    page.keyboard.press("Tab")

    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    outline = page.evaluate(
        """() => {
            const style = getComputedStyle(document.activeElement);
            return [style.outlineStyle, style.outlineWidth];
        }"""
    )
    assert outline[0] != "none", f"{name}: the focused skip link has no outline"
    assert outline[1] != "0px", f"{name}: the focused skip link's outline is 0 px wide"

    # Following it puts the focus in the page's main region.
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
