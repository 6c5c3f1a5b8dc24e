"""Pages on other origins, in a real browser, against a real `toolreel serve`: nothing runs.

Chromium (Debian's, driven by Playwright as tests/web does) resolves `evil.test` and
`rebind.test` to 127.0.0.1 (`--host-resolver-rules`), so:

- a page on http://evil.test:<port> (a second server, on 127.0.0.1) posts to
  the served loop as any site could: `fetch(..., {mode: "no-cors"})` with a
  text/plain body, and `<form enctype="text/plain">`s that spell JSON. They
  try to start chats and to approve a call a real chat holds (item 6);
- a page loaded from http://rebind.test:<the server's port> stands for a DNS
  rebinding page: its own origin now reaches the loop, so its requests are
  same-origin (`Sec-Fetch-Site: same-origin`, JSON allowed), and it reads the
  sessions and approves (item 7). The browser fetches its first document from
  the test (Playwright's routing) and everything after from the real server;
- the real page, opened from the `?token=` link of a server with a token,
  still chats, with the token in an HttpOnly cookie no script and no other
  site's request gets.

Each time, the journal shows that nothing started and the held call still waits.
Skipped, saying why, where /usr/bin/chromium, Playwright or toolreel.web is missing.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

CHROMIUM = Path("/usr/bin/chromium")
HERE = Path(__file__).parent
WAIT_MS = 30_000
TOKEN = "browser-token-0123456789abcdef"


def _missing() -> str | None:
    """Why these tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (Debian's `chromium`; .ci/run installs it as root)"
    for module in ("playwright", "starlette", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[dev]')"
    return None


MISSING = _missing()
if MISSING is not None:
    pytest.skip(MISSING, allow_module_level=True)

from playwright.sync_api import Browser, Page, Request, Route, expect, sync_playwright  # noqa: E402

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--host-resolver-rules=MAP evil.test 127.0.0.1, MAP rebind.test 127.0.0.1",
    # Chromium's own Private Network Access checks would stop the rebinding page (its first
    # document, from the test, counts as public); other browsers have none: the server must
    # refuse it itself.
    "--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,"
    "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks",
]


def _serve(folder: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """A real `toolreel serve` on 127.0.0.1 (scripted model, `multiply` held); process and URL."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith("TOOLREEL_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    log = folder / "serve.log"
    command = [
        *(
            sys.executable,
            "-c",
            "import sys; from toolreel.cli import main; sys.exit(main())",
        ),
        *("serve", "--host", "127.0.0.1", "--port", "0", "--journal", str(folder / "web.db")),
        *("--tools", "security_tools:TOOLS", *extra),
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        announced = re.search(r" on (http://127\.0\.0\.1:\d+)$", log.read_text(), re.MULTILINE)
        if announced:
            return process, announced[1]
        if process.poll() is not None:
            pytest.fail(f"toolreel serve exited {process.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    process.kill()
    pytest.fail(f"toolreel serve did not start within 60 s:\n{log.read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server this module started."""
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The served loop (no token: on loopback); its URL, e.g. http://127.0.0.1:41234."""
    process, url = _serve(tmp_path_factory.mktemp("serve"))
    try:
        yield url
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def held_call(server: str) -> str:
    """A real chat (`held-chat`) whose `multiply` call waits for approval; the call's id."""
    response = httpx2.post(
        f"{server}/api/events",
        json={"id": "held-chat", "message": "What is 7 times 8?"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    for event in response.text.split("\n\n"):
        if event.startswith("event: approval_requested"):
            return str(json.loads(event.split("data: ", 1)[1])["id"])
    raise AssertionError(f"no call was held:\n{response.text}")


class _Attacker(http.server.SimpleHTTPRequestHandler):
    """Serves the attacker's pages from a folder, quietly."""

    def log_message(self, *args: Any) -> None:
        """No access log on the test's output."""


@pytest.fixture(scope="module")
def attacker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A second server, on another 127.0.0.1 port: the folder it serves and its port."""
    folder = tmp_path_factory.mktemp("evil")
    handler = functools.partial(_Attacker, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield folder, httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, with the two test names resolved to 127.0.0.1."""
    with sync_playwright() as driver:
        launched = driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page in a fresh context (no cookies), failing the test on any script error."""
    expect.set_options(timeout=WAIT_MS)
    context = browser.new_context()
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], f"the page raised: {errors}"


def _state(server: str) -> list[tuple[str, str, int]]:
    """The journal's chats as (id, outcome, calls waiting), asked as the user would."""
    listed = httpx2.get(f"{server}/api/sessions", timeout=10).json()["sessions"]
    return [(s["id"], s["outcome"], s["approvals"]) for s in listed]


def _answers(page: Page, server: str) -> list[tuple[str, int]]:
    """(path, status) of each answer to a POST the page sent the served loop, as they come.

    Only POSTs: the served page's own GETs (its session list refreshing after a turn)
    may still be answered after the test navigated away, and are no forgery.
    """
    seen: list[tuple[str, int]] = []

    def note(response: Any) -> None:
        if response.url.startswith(server) and response.request.method == "POST":
            seen.append((response.url.split("/", 3)[3], response.status))

    page.on("response", note)
    return seen


def _forms(target: str, call_id: str) -> str:
    """Two `<form enctype="text/plain">`s whose bodies read as JSON: a chat and an approval."""
    chat_name = '{"id": "forged-form", "message": "What is 2 plus 2?", "pad": "'
    approve_name = f'{{"id": "held-chat", "call_id": "{call_id}", "approved": true, "pad": "'
    return f"""<!doctype html><title>forms</title>
<iframe name="sink-1"></iframe><iframe name="sink-2"></iframe>
<form id="chat" method="post" enctype="text/plain" action="{target}/api/events" target="sink-1">
<input type="hidden" name='{chat_name}' value='"}}'></form>
<form id="approve" method="post" enctype="text/plain" action="{target}/api/approvals"
 target="sink-2"><input type="hidden" name='{approve_name}' value='"}}'></form>
<script>document.getElementById("chat").submit();
document.getElementById("approve").submit();</script>
"""


def _no_cors(target: str, call_id: str) -> str:
    """A page posting text/plain JSON to every POST route with `fetch(..., {mode: "no-cors"})`."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is 2 plus 2?"}]}
    bodies = {
        "/api/chat": {"id": "forged-fetch", "messages": [user], "trigger": "submit-message"},
        "/api/events": {"id": "forged-events", "message": "What is 2 plus 2?"},
        "/api/approvals": {"id": "held-chat", "call_id": call_id, "approved": True},
    }
    sends = "".join(
        f"await fetch({target + path!r}, {{method: 'POST', mode: 'no-cors', "
        f"headers: {{'content-type': 'text/plain'}}, body: {json.dumps(json.dumps(body))}}});\n"
        for path, body in bodies.items()
    )
    return f"""<!doctype html><title>fetching</title><script>
(async () => {{ {sends} document.title = "sent"; }})();
</script>"""


def test_a_cross_site_page_starts_no_chat_and_approves_nothing(
    page: Page, server: str, held_call: str, attacker: tuple[Path, int]
) -> None:
    folder, port = attacker
    (folder / "forms.html").write_text(_forms(server, held_call), encoding="utf-8")
    (folder / "fetch.html").write_text(_no_cors(server, held_call), encoding="utf-8")
    answers = _answers(page, server)

    page.goto(f"http://evil.test:{port}/fetch.html")
    expect(page).to_have_title("sent")
    page.goto(f"http://evil.test:{port}/forms.html")
    for sink in ("sink-1", "sink-2"):  # each form's answer, shown in its frame
        frame = page.frame(name=sink)
        assert frame is not None
        expect(frame.locator("body")).to_contain_text("another site is refused")

    fetched = [("api/chat", 403), ("api/events", 403), ("api/approvals", 403)]
    posted = [("api/events", 403), ("api/approvals", 403)]
    assert sorted(answers) == sorted(fetched + posted)
    assert _state(server) == [("held-chat", "awaiting_approval", 1)]


def test_a_rebinding_page_reads_nothing_and_approves_nothing(
    page: Page, server: str, held_call: str
) -> None:
    rebound = server.replace("127.0.0.1", "rebind.test")
    script = f"""<!doctype html><title>rebinding</title><script>
(async () => {{
  const read = await fetch("/api/sessions");
  const approve = await fetch("/api/approvals", {{method: "POST",
    headers: {{"content-type": "application/json"}},
    body: JSON.stringify({{id: "held-chat", call_id: {json.dumps(held_call)}, approved: true}})}});
  window.results = [read.status, await read.text(), approve.status, await approve.text()];
  document.title = "done";
}})();
</script>"""

    def first_document(route: Route, request: Request) -> None:
        """The rebinding name's first answer: the attacker's page (later ones: the real server)."""
        route.fulfill(status=200, content_type="text/html", body=script)

    page.route(f"{rebound}/", first_document)
    page.goto(f"{rebound}/")
    expect(page).to_have_title("done")
    read_status, read_text, approve_status, approve_text = page.evaluate("window.results")
    assert (read_status, approve_status) == (400, 400)
    assert "held-chat" not in read_text
    assert "'rebind.test:" in json.loads(read_text)["error"]
    assert "is not served here" in json.loads(approve_text)["error"]
    assert _state(server) == [("held-chat", "awaiting_approval", 1)]


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolreel serve --token`: every request needs the token; its URL."""
    process, url = _serve(tmp_path_factory.mktemp("serve-token"), "--token", TOKEN)
    try:
        yield url
    finally:
        _stop(process)


def test_the_page_from_the_token_link_chats_with_a_cookie_no_script_or_site_gets(
    page: Page, token_server: str, attacker: tuple[Path, int]
) -> None:
    assert httpx2.get(f"{token_server}/api/info", timeout=10).status_code == 401
    page.goto(f"{token_server}/?token={TOKEN}")
    assert page.url == f"{token_server}/"  # the token left the address bar
    expect(page.locator("#scripted")).to_contain_text("scripted")
    box = page.get_by_label("Message")
    box.fill("What is 25 plus 17?")
    box.press("Enter")
    turn = page.locator(".turn.live").nth(0)
    expect(turn.locator(".card[data-tool=add] .output")).to_contain_text("42")
    expect(turn.locator(".outcome")).to_have_text("completed")
    assert page.evaluate("document.cookie") == ""  # HttpOnly: no script reads it

    # Another site's request, from the same browser, goes without the cookie (SameSite=Strict).
    folder, port = attacker
    (folder / "token.html").write_text(
        _no_cors(token_server, "call_1").replace("forged", "token-forged"), encoding="utf-8"
    )
    answers = _answers(page, token_server)
    page.goto(f"http://evil.test:{port}/token.html")
    expect(page).to_have_title("sent")
    assert sorted(status for _, status in answers) == [401, 401, 401]
    bearer = {"authorization": f"Bearer {TOKEN}"}
    listed = httpx2.get(f"{token_server}/api/sessions", headers=bearer, timeout=10).json()
    assert len(listed["sessions"]) == 1  # the page's own chat, nothing forged
