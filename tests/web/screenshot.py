"""Regenerate docs/screenshot.png, the docs' picture of `toolreel serve`, from the real page.

Starts `toolreel serve` on 127.0.0.1 (the offline scripted calculator model, a
temporary journal), asks the page the two calculator prompts in headless
Chromium (Debian's, driven by Playwright, as tests/web/test_browser_page.py
does), waits until both turns say "completed", and saves the window.

    .venv/bin/python tests/web/screenshot.py [--out docs/screenshot.png]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
PROMPTS = ("What is 25 plus 17?", "What's 7 times 8, then add 5?")
VIEWPORT = {"width": 1200, "height": 1000}
WAIT_MS = 30_000


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A `toolreel serve` with no key (the scripted model answers); it and its URL."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env = {k: v for k, v in env.items() if not k.startswith("TOOLREEL_")}
    log = folder / "serve.log"
    command = [sys.executable, "-m", "toolreel", "serve", "--port", "0"]
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*command, "--journal", str(folder / "web.db")],
            cwd=folder,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        announced = re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())
        if announced:
            return process, announced[1] + "/"
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"toolreel serve did not start:\n{log.read_text()}")


def chat(page: Page) -> None:
    """Ask each prompt and wait until its turn has completed."""
    expect.set_options(timeout=WAIT_MS)
    for number, prompt in enumerate(PROMPTS):
        box = page.get_by_label("Message")
        box.fill(prompt)
        box.press("Enter")
        turn = page.locator(".turn.live").nth(number)
        expect(turn.locator(".outcome")).to_have_text("completed")
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
    page.get_by_role("button", name="Refresh the list of sessions").dispatch_event("click")
    expect(page.locator("#sessions")).to_contain_text("2 turns")
    page.get_by_label("Message").focus()


def main() -> None:
    """Serve, chat, save the screenshot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        process, url = serve(Path(scratch))
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
                )
                page = browser.new_page(viewport=VIEWPORT)
                page.goto(url)
                chat(page)
                page.screenshot(path=str(args.out))
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=10)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
