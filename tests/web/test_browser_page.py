"""The page at `/` in a real browser: Playwright drives Debian's Chromium against `toolreel serve`.

A real `toolreel serve` runs on 127.0.0.1 with a temporary journal, the offline
scripted calculator model (no key) and `browser_tools` (the calculator, whose
`divide` waits until its turn is stopped). The page is driven as a person would:
type the calculator prompt and see the tool card and "42"; stop a turn while its
tool runs (the Stop button, then Escape); open the session in the viewer and
step through its rounds. Screenshots are kept under build/web/ (paths printed).

Skipped, saying why, where /usr/bin/chromium, Playwright or `toolreel.web` is
missing (`.ci/run` installs Chromium where it can).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HERE = Path(__file__).parent
ARTEFACTS = HERE.parent.parent / "build" / "web"
#: Playwright's waits (ms): generous for a busy machine; never reached when all is well.
WAIT_MS = 30_000  # generous: a loaded 2-core CI machine also runs the rest of the suite


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (Debian's `chromium`; .ci/run installs it as root)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install -e '.[dev]')"
    for module in ("starlette", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install toolreel[web])"
    try:
        found = importlib.util.find_spec("toolreel.web")
    except ModuleNotFoundError:
        found = None
    if found is None:
        return "toolreel.web is not installed"
    return None


MISSING = _missing()
if MISSING is not None:
    pytest.skip(MISSING, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402

from toolreel.shell.scripted import Reply, ScriptedServer, calculator, http_error  # noqa: E402


def _environment() -> dict[str, str]:
    """This environment without provider keys or toolreel defaults: the scripted model serves."""
    dropped = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in dropped and not key.startswith("TOOLREEL_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return env


def _wait_until_serving(process: subprocess.Popen[bytes], log: Path) -> str:
    """The URL `toolreel serve` announces once it listens (it picks the port: --port 0)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        announced = re.search(r"on (http://127\.0\.0\.1:\d+)/?", log.read_text())
        if announced:
            return announced[1] + "/"
        if process.poll() is not None:
            pytest.fail(f"toolreel serve exited {process.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    pytest.fail(f"toolreel serve did not start within 30 s:\n{log.read_text()}")


def _serve(folder: Path, *flags: str, scripted: bool = True) -> Iterator[str]:
    """A real `toolreel serve` on 127.0.0.1 (journal in `folder`; the offline scripted model
    unless `flags` name a server); its URL."""
    log = folder / "serve.log"
    command = [
        sys.executable,
        "-c",
        "import sys; from toolreel.cli import main; sys.exit(main())",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--journal",
        str(folder / "web.db"),
        *flags,
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=folder, env=_environment(), stdout=output, stderr=subprocess.STDOUT
        )
    try:
        url = _wait_until_serving(process, log)
        assert httpx2.get(url + "api/info", timeout=5).json()["scripted"] is scripted
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolreel serve` with `browser_tools` (its `divide` waits until stopped)."""
    yield from _serve(tmp_path_factory.mktemp("serve"), "--tools", "browser_tools:TOOLS")


@pytest.fixture(scope="module")
def compacting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolreel serve --keep-turns 1`: each request carries the running turn only."""
    yield from _serve(tmp_path_factory.mktemp("compacting"), "--keep-turns", "1")


def _busy_main(body: dict[str, Any]) -> Reply:
    """The calculator, but model "main" is busy (503) and any other answers."""
    return http_error(503, "main is busy") if body.get("model") == "main" else calculator(body)


@pytest.fixture(scope="module")
def falling_back(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolreel serve` of model "main" on a server where it is busy, falling back to "backup"."""
    with ScriptedServer(_busy_main) as provider:
        flags = ["--base-url", provider.url, "--api-key", "sk-test", "--model", "main"]
        fallback = ["--fallback-model", "backup", "--fallback-on", "503"]
        folder = tmp_path_factory.mktemp("fallback")
        yield from _serve(
            folder, *flags, *fallback, "--tools", "browser_tools:TOOLS", scripted=False
        )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright (never a downloaded browser)."""
    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    """A fresh page at the server's `/`, failing the test on any script error."""
    expect.set_options(timeout=WAIT_MS)
    errors: list[str] = []
    opened = browser.new_page(viewport={"width": 1180, "height": 860})
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(server)
    yield opened
    opened.close()
    assert errors == [], f"the page raised: {errors}"


def _screenshot(page: Page, name: str) -> None:
    """Keep a screenshot under build/web/ as a test artefact and print where."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / name
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")


def _ask(page: Page, prompt: str) -> None:
    """Type a prompt in the message box and send it with Enter."""
    box = page.get_by_label("Message")
    box.fill(prompt)
    box.press("Enter")


def _journaled_outcomes(server: str, session: str, count: int) -> list[str]:
    """The outcomes of the session's turns once the journal holds `count` of them."""
    deadline = time.monotonic() + WAIT_MS / 1000
    outcomes: list[str] = []
    while time.monotonic() < deadline:
        answer = httpx2.get(f"{server}api/sessions/{session}", timeout=5)
        if answer.status_code == 200:
            outcomes = [turn["outcome"] for turn in answer.json()["turns"]]
            if len(outcomes) == count and outcomes[-1] != "running":
                return outcomes
        time.sleep(0.1)
    return outcomes


def test_chat_streams_tool_cards_stops_and_replays_round_by_round(page: Page, server: str) -> None:
    """The whole loop in the browser: a tool round and its answer, two stops, then the replay."""
    expect(page.locator("#scripted")).to_contain_text("scripted")

    # Shift+Enter is a new line, not a send.
    box = page.get_by_label("Message")
    box.fill("draft")
    box.press("Shift+Enter")
    expect(box).to_have_value("draft\n")
    expect(page.locator(".turn")).to_have_count(0)

    # The calculator prompt: one round with an `add` card (arguments, result), then "42".
    _ask(page, "What is 25 plus 17?")
    first = page.locator(".turn.live").nth(0)
    add = first.locator(".round .card[data-tool=add]")
    expect(add.locator(".arguments")).to_contain_text('"a": 25')
    expect(add.locator(".output")).to_contain_text("42")
    expect(add.locator(".state")).to_have_text("done")
    expect(add.locator(".duration")).to_contain_text("ms")
    expect(first.locator(".round-title").first).to_have_text("Round 1")
    expect(first.locator(".outcome")).to_have_text("completed")
    expect(first.locator(".assistant .text").last).to_contain_text("42")
    expect(first.locator(".usage")).to_contain_text("tokens")
    expect(page.get_by_role("button", name="Stop")).to_be_disabled()
    _screenshot(page, "chat.png")

    # Stop while `divide` runs: the turn stops, the card says so, Send works again.
    _ask(page, "What is 144 divided by 12?")
    second = page.locator(".turn.live").nth(1)
    expect(second.locator(".card[data-tool=divide] .state")).to_have_text("running…")
    page.get_by_role("button", name="Stop").click()
    expect(second.locator(".outcome")).to_have_text("stopped")
    expect(second.locator(".card[data-tool=divide] .state")).to_have_text("stopped")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()

    # Escape stops too; the same chat id continues the same session.
    _ask(page, "What is 99 divided by 9?")
    third = page.locator(".turn.live").nth(2)
    expect(third.locator(".card[data-tool=divide] .state")).to_have_text("running…")
    page.keyboard.press("Escape")
    expect(third.locator(".outcome")).to_have_text("stopped")

    # The server cancelled both turns (journaled as cancelled) in one session.
    listed = httpx2.get(server + "api/sessions", timeout=5).json()["sessions"]
    assert len(listed) == 1
    session = listed[0]["id"]
    assert _journaled_outcomes(server, session, 3) == ["completed", "cancelled", "cancelled"]

    # The viewer: open the session from the sidebar and step through its rounds.
    page.get_by_role("button", name="Refresh the list of sessions").click()
    page.locator(f"#sessions button[data-id='{session}']").click()
    position = page.locator("#position")
    replay = page.locator("#replay")
    expect(position).to_have_text("Step 1 of 6 · turn 1, round 1 of 1")
    expect(replay.locator(".card[data-tool=add]")).to_be_visible()
    expect(replay.locator(".card[data-tool=add] .output")).to_contain_text("42")
    expect(replay.get_by_text("What is 144 divided by 12?")).to_be_hidden()
    expect(page.get_by_role("button", name="Previous round")).to_be_disabled()

    page.get_by_role("button", name="Next round").click()
    expect(position).to_have_text("Step 2 of 6 · turn 1, answer (completed)")
    expect(replay.locator(".answer").nth(0)).to_contain_text("42")

    page.get_by_role("button", name="Next round").click()
    expect(position).to_have_text("Step 3 of 6 · turn 2, round 1 of 1")
    expect(replay.get_by_text("What is 144 divided by 12?")).to_be_visible()
    stopped = replay.locator(".card[data-tool=divide]").nth(0)
    expect(stopped).to_have_class(re.compile(r"\berror\b"))  # journaled as an error result
    expect(stopped.locator(".output")).to_contain_text("Cancelled")

    page.keyboard.press("ArrowRight")
    expect(position).to_have_text("Step 4 of 6 · turn 2, answer (cancelled)")
    page.get_by_role("button", name="Previous round").click()
    expect(position).to_have_text("Step 3 of 6 · turn 2, round 1 of 1")
    page.get_by_role("button", name="Show all").click()
    expect(position).to_have_text("Step 6 of 6 · turn 3, answer (cancelled)")
    expect(page.get_by_role("button", name="Next round")).to_be_disabled()
    _screenshot(page, "viewer.png")


def test_a_compacted_context_is_told_in_the_turn_it_happened(
    browser: Browser, compacting: str
) -> None:
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1180, "height": 860})
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(compacting)
        _ask(page, "What is 25 plus 17?")
        first = page.locator(".turn.live").nth(0)
        expect(first.locator(".outcome")).to_have_text("completed")
        expect(first.locator(".note")).to_have_count(0)
        _ask(page, "What is 2 plus 3?")
        second = page.locator(".turn.live").nth(1)
        expect(second.locator(".outcome")).to_have_text("completed")
        expect(second.locator(".note")).to_have_text(
            "Context compacted: messages 1 to 2 of the chat left out"
        )
        expect(second.locator(".assistant .text").last).to_contain_text("5")
    finally:
        page.close()
    assert errors == [], f"the page raised: {errors}"


def test_a_fallback_to_another_model_is_told_and_the_turn_goes_on(
    browser: Browser, falling_back: str
) -> None:
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1180, "height": 860})
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(falling_back)
        _ask(page, "What is 25 plus 17?")
        turn = page.locator(".turn.live").nth(0)
        expect(turn.locator(".outcome")).to_have_text("completed")
        expect(turn.locator(".note")).to_have_text(
            re.compile(r"^main failed \(HTTP 503: main is busy.*\): asking backup$")
        )
        expect(turn.locator(".assistant .text").last).to_contain_text("42")
    finally:
        page.close()
    assert errors == [], f"the page raised: {errors}"


def test_narrow_screens_fold_the_sidebar_behind_a_button(page: Page) -> None:
    """At phone width the sessions list is one tap away, folds after use, never scrolls sideways."""
    page.set_viewport_size({"width": 380, "height": 740})
    toggle = page.get_by_role("button", name="Sessions", exact=True)
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#sidebar")).to_be_hidden()
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#sidebar")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 380
    page.get_by_role("button", name="New chat").click()  # a choice made: the list folds away
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
