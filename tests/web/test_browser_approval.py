"""Approve and Deny on the page's tool card, in a real browser (as test_browser_page.py).

`toolreel serve` holds the calculator's `multiply` for approval: the card shows the
buttons, a click decides the call, and the turn goes on in a new message.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

pytest.importorskip("playwright.sync_api")
# The same Chromium and serve helpers; importing it skips this module where it skips.
from playwright.sync_api import Browser, Page, expect
from test_browser_page import (
    _ask,
    _environment,
    _screenshot,
    _wait_until_serving,
    browser,  # noqa: F401 - a fixture
)


@pytest.fixture(scope="module")
def held_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolreel serve` with `multiply` held for approval; its base URL."""
    folder = tmp_path_factory.mktemp("serve-approval")
    log = folder / "serve.log"
    command = [
        sys.executable,
        "-c",
        "import sys; from toolreel.cli import main; sys.exit(main())",
        *("serve", "--host", "127.0.0.1", "--port", "0", "--journal", str(folder / "web.db")),
        *("--tools", "browser_approval_tools:TOOLS"),
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=folder, env=_environment(), stdout=output, stderr=subprocess.STDOUT
        )
    try:
        yield _wait_until_serving(process, log)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def held_page(browser: Browser, held_server: str) -> Iterator[Page]:  # noqa: F811
    """A fresh page of the held server, failing the test on any script error."""
    errors: list[str] = []
    opened = browser.new_page(viewport={"width": 1180, "height": 860})
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(held_server)
    yield opened
    opened.close()
    assert errors == [], f"the page raised: {errors}"


def test_the_card_of_a_held_call_approves_and_denies(held_page: Page) -> None:
    page = held_page
    _ask(page, "What is 7 times 8?")
    card = page.locator(".turn.live").nth(0).locator(".card[data-tool=multiply]")
    expect(card.locator(".state")).to_contain_text("awaiting approval", timeout=30_000)
    expect(page.locator(".turn.live").nth(0).locator(".outcome")).to_contain_text(
        "waiting for approval"
    )
    _screenshot(page, "approval-held.png")
    card.get_by_role("button", name="Approve").click()
    after = page.locator(".turn.live").nth(1)
    expect(after.locator(".card[data-tool=multiply] .output")).to_contain_text("56")
    expect(after.locator(".outcome")).to_contain_text("completed")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()  # the stream has closed

    _ask(page, "What is 6 times 7?")
    card = page.locator(".turn.live").nth(2).locator(".card[data-tool=multiply]")
    expect(card.locator(".state")).to_contain_text("awaiting approval", timeout=30_000)
    card.get_by_label("Reason").fill("not now")
    card.get_by_role("button", name="Deny").click()
    denied = page.locator(".turn.live").nth(3)
    expect(denied.locator(".card[data-tool=multiply] .output")).to_contain_text("not now")


def test_a_session_waiting_for_approval_is_badged_and_decided_after_a_reload(
    held_page: Page, held_server: str
) -> None:
    page = held_page
    _ask(page, "What is 3 times 4?")
    card = page.locator(".turn.live").nth(0).locator(".card[data-tool=multiply]")
    expect(card.locator(".state")).to_contain_text("awaiting approval", timeout=30_000)
    chat_url = page.url  # #chat=ID: a reload continues this session
    page.get_by_role("button", name="Refresh the list of sessions").click()
    current = page.locator('#sessions button[aria-current="true"]')
    expect(current.locator(".badge")).to_have_text("waiting for approval (1)")
    _screenshot(page, "approval-sidebar.png")
    page.goto(held_server)
    page.goto(chat_url)
    page.reload()
    held = page.locator(".turn.recorded .card[data-tool=multiply]")
    expect(held.locator(".state")).to_contain_text("awaiting approval", timeout=30_000)
    held.get_by_role("button", name="Approve").click()
    after = page.locator(".turn.live").nth(0)
    expect(after.locator(".card[data-tool=multiply] .output")).to_contain_text("12")
    expect(after.locator(".outcome")).to_contain_text("completed")
    page.get_by_role("button", name="Refresh the list of sessions").click()
    expect(page.locator('#sessions button[aria-current="true"] .badge')).to_have_count(0)
