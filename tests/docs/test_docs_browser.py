"""The built docs site in a real browser: Playwright drives Debian's Chromium against it.

The site is served from its folder on 127.0.0.1 (search runs in a web worker, which
Chromium refuses to start from file:// pages). Skipped, saying why, where /usr/bin/chromium
or Playwright is missing (`.ci/run` installs Chromium where it can). Screenshots are kept
under build/docs-browser/.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTEFACTS = Path(__file__).resolve().parents[2] / "build" / "docs-browser"
WAIT_MS = 30_000  # generous for a loaded machine; never reached when all is well

if not CHROMIUM.exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (Debian's `chromium`)", allow_module_level=True)
if importlib.util.find_spec("playwright") is None:
    pytest.skip("Playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site's folder without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        """Say nothing."""


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free port of 127.0.0.1; its base URL."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def page() -> Iterator[Page]:
    """A Chromium page that may reach nothing but 127.0.0.1."""
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context()
        outside: list[str] = []

        def only_loopback(route):  # type: ignore[no-untyped-def]
            url = route.request.url
            if url.startswith(("http://127.0.0.1", "data:", "blob:")):
                route.continue_()
            else:
                outside.append(url)
                route.abort()

        context.route("**/*", only_loopback)
        yield context.new_page()
        context.close()
        browser.close()
        assert not outside, f"the site asked the network for {outside}"


def test_the_search_box_finds_the_approval_guide(page: Page, served: str) -> None:
    page.goto(served, wait_until="networkidle")
    page.keyboard.press("s")  # Material's shortcut to the search box
    page.locator("input.md-search__input").press_sequentially("approve", delay=20)
    results = page.locator(".md-search-result__item")
    expect(results.first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".md-search-result__meta")).to_contain_text(re.compile(r"\d+ matching"))
    guide = page.locator('.md-search-result__link[href*="guides/approval/"]').first
    expect(guide).to_contain_text("Human approval")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / "search.png"))
    print("screenshot:", ARTEFACTS / "search.png")


def test_a_code_block_has_its_copy_button(page: Page, served: str) -> None:
    page.goto(served + "getting-started/", wait_until="networkidle")
    block = page.locator("div.highlight").first
    block.hover()
    expect(block.get_by_title("Copy to clipboard")).to_be_visible(timeout=WAIT_MS)
    page.screenshot(path=str(ARTEFACTS / "getting-started.png"), full_page=False)
