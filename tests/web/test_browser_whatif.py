"""What if in a real browser (as test_browser_page.py): fork at a round, go on live, compare.

Against `toolreel serve` (the offline scripted calculator model): a session is
recorded in the chat; in the viewer, "Fork from this round" opens the editor of
round 1's tool result, which is changed from 42 to 50; "Fork and continue"
forks it, opens the fork in the chat with the edited card marked, and the
model's answer to the edited result streams in live ("The answer is 50."); a
next message continues the fork in the chat; the viewer's "Compare" shows the
original and the fork side by side, the answers' differing words and the changed
result marked. Screenshots under build/web/.
"""

from __future__ import annotations

import re

import httpx2
import pytest

pytest.importorskip("playwright.sync_api")
# The same Chromium and serve helpers; importing it skips this module where it skips.
from playwright.sync_api import Page, expect
from test_browser_page import (
    _ask,
    _screenshot,
    browser,  # noqa: F401 - a fixture
    page,  # noqa: F401 - a fixture
    server,  # noqa: F401 - a fixture (this module's own serve and journal)
)

FIFTY = '{"result": 50}'


def test_fork_a_round_with_an_edited_result_go_on_live_and_compare(
    page: Page,  # noqa: F811
    server: str,  # noqa: F811
) -> None:
    _ask(page, "What is 25 plus 17?")
    first = page.locator(".turn.live").nth(0)
    expect(first.locator(".outcome")).to_have_text("completed")
    expect(first.locator(".assistant .text").last).to_contain_text("The answer is 42.")
    (original,) = [row["id"] for row in httpx2.get(server + "api/sessions").json()["sessions"]]

    # The viewer: round 1's "Fork from this round" opens the editor of its result.
    page.get_by_role("button", name="Refresh the list of sessions").click()
    page.locator(f"#sessions button[data-id='{original}']").click()
    page.get_by_role("button", name="Fork from turn 1, round 1").click()
    editor = page.get_by_role("form", name="Fork from turn 1, round 1")
    result = editor.get_by_label(re.compile(r"^Result of add"))
    expect(result).to_have_value('{"result": 42.0}')
    result.fill(FIFTY)
    _screenshot(page, "whatif-fork-editor.png")
    editor.get_by_role("button", name="Fork and continue").click()

    # The chat holds the fork: the recorded round with the edited result, then the live answer.
    forked = page.locator(".turn.forked")
    expect(forked.locator(".outcome")).to_have_text("completed")
    expect(forked.locator(".assistant .text").last).to_have_text("The answer is 50.")
    edited = forked.locator(".card.edited[data-tool=add]")
    expect(edited.locator(".state")).to_have_text("edited")
    expect(edited.locator(".output")).to_contain_text('"result": 50')
    expect(forked.locator(".fork-note")).to_contain_text(f"Fork of {original} at step")
    expect(page.locator("#chat")).to_be_visible()
    rows = {row["id"]: row for row in httpx2.get(server + "api/sessions").json()["sessions"]}
    (fork,) = [sid for sid, row in rows.items() if row["from"] is not None]
    assert rows[fork]["from"]["session_id"] == original
    assert rows[fork]["outcome"] == "completed"
    assert page.evaluate("location.hash") == "#chat=" + fork
    _screenshot(page, "whatif-fork-live.png")

    # The next message continues the fork, live, in the chat.
    _ask(page, "What is 6 times 7?")
    nxt = page.locator(".turn.live").nth(1)  # after the fork's own turn
    expect(nxt.locator(".card[data-tool=multiply] .output")).to_contain_text("42")
    expect(nxt.locator(".outcome")).to_have_text("completed")
    turns = httpx2.get(f"{server}api/sessions/{fork}").json()["turns"]
    assert [t["answer"] for t in turns] == ["The answer is 50.", "The answer is 42."]
    original_turns = httpx2.get(f"{server}api/sessions/{original}").json()["turns"]
    assert [t["answer"] for t in original_turns] == ["The answer is 42."]  # untouched

    # The sidebar pairs the fork with its original; the viewer compares them side by side.
    page.get_by_role("button", name="Refresh the list of sessions").click()
    row = page.locator(f"#sessions button[data-id='{fork}']")
    expect(row.locator(".origin")).to_have_text(f"fork of {original}")
    row.click()
    expect(page.locator("#viewer-origin")).to_contain_text(f"fork of {original}")
    expect(page.get_by_label("Compare with")).to_have_value(original)  # its origin, chosen
    page.get_by_role("button", name="Compare", exact=True).click()

    compare = page.locator("#compare")
    expect(compare).to_be_visible()
    expect(page.locator("#compare-a")).to_have_text(original)  # the original left
    expect(page.locator("#compare-b")).to_have_text(fork)  # the fork right
    expect(page.locator("#compare-summary")).to_contain_text("They part at step")
    one = compare.get_by_role("region", name="Turn 1 of both")
    expect(one.locator("h3").first).to_have_text("Turn 1 — differs")
    left, right = one.locator(".side").nth(0), one.locator(".side").nth(1)
    expect(left.locator(".answer del.diff-del")).to_have_text(["42."])
    expect(right.locator(".answer ins.diff-ins")).to_have_text(["50."])
    for side in (left, right):
        card = side.locator(".card[data-tool=add]")
        expect(card).to_have_class(re.compile(r"\bdiff-changed\b"))
        expect(card.locator(".change")).to_have_text("result changed")
    expect(left.locator(".card .output del")).to_have_text(["42"])  # shown pretty: {"result": 42}
    expect(right.locator(".card .output ins")).to_have_text(["50"])
    two = compare.get_by_role("region", name="Turn 2 of both")
    expect(two.locator("h3").first).to_have_text("Turn 2 — differs")
    expect(two.locator(".side").nth(0)).to_contain_text(f"{original} has no turn 2.")
    expect(two.locator(".side").nth(1).locator(".card[data-tool=multiply]")).to_be_visible()
    _screenshot(page, "whatif-compare.png")
    page.set_viewport_size({"width": 380, "height": 740})  # a phone: the sides stack
    assert page.evaluate("document.documentElement.scrollWidth") <= 380
    left_box, right_box = left.bounding_box(), right.bounding_box()
    assert left_box is not None and right_box is not None
    assert right_box["y"] >= left_box["y"] + left_box["height"]
    page.set_viewport_size({"width": 1180, "height": 860})

    page.get_by_role("button", name="Back to the session").click()
    expect(page.locator("#viewer-id")).to_have_text(fork)


def test_a_refused_fork_says_why_in_the_editor(page: Page, server: str) -> None:  # noqa: F811
    _ask(page, "What is 2 plus 3?")
    expect(page.locator(".turn.live").nth(0).locator(".outcome")).to_have_text("completed")
    rows = httpx2.get(server + "api/sessions").json()["sessions"]
    session = page.evaluate("decodeURIComponent(location.hash.slice(6))")
    taken = next(row["id"] for row in rows if row["id"] != session) if len(rows) > 1 else session
    page.get_by_role("button", name="Refresh the list of sessions").click()
    page.locator(f"#sessions button[data-id='{session}']").click()
    page.get_by_role("button", name="Fork from the start of turn 1").click()
    editor = page.get_by_role("form", name="Fork from the start of turn 1")
    expect(editor.get_by_label("Prompt", exact=True)).to_have_value("What is 2 plus 3?")
    editor.get_by_label("New session id").fill(taken)
    editor.get_by_role("button", name="Fork and continue").click()
    expect(editor.get_by_role("alert")).to_contain_text("already exists")
    expect(page.locator("#viewer")).to_be_visible()  # still in the viewer, nothing opened
    after = {row["id"] for row in httpx2.get(server + "api/sessions").json()["sessions"]}
    assert after == {row["id"] for row in rows}


def test_continue_this_session_carries_on_a_fork_made_elsewhere_live(
    page: Page,  # noqa: F811
    server: str,  # noqa: F811
) -> None:
    _ask(page, "What is 25 plus 17?")
    expect(page.locator(".turn.live").nth(0).locator(".outcome")).to_have_text("completed")
    session = page.evaluate("decodeURIComponent(location.hash.slice(6))")
    detail = httpx2.get(f"{server}api/sessions/{session}").json()
    add = detail["turns"][0]["rounds"][0]["calls"][0]["id"]
    made = httpx2.post(
        f"{server}api/sessions/{session}/fork",
        json={"at_round": 1, "results": {add: FIFTY}, "into": f"{session}-api"},
    )
    assert made.status_code == 201, made.text  # written, not yet continued: it owes its turn

    page.get_by_role("button", name="Refresh the list of sessions").click()
    page.locator(f"#sessions button[data-id='{session}-api']").click()
    expect(page.locator("#viewer-origin")).to_contain_text(f"fork of {session}")
    page.get_by_role("button", name="Continue this session").click()
    owed = page.locator(".turn.owed")
    expect(owed.locator(".outcome")).to_have_text("completed")
    expect(owed.locator(".assistant .text").last).to_have_text("The answer is 50.")
    turns = httpx2.get(f"{server}api/sessions/{session}-api").json()["turns"]
    assert [t["outcome"] for t in turns] == ["completed"]
