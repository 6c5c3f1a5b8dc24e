"""What if, over the app's API: fork a session at a round, continue the fork live, diff the two.

Through httpx's ASGI transport with the scripted calculator model on 127.0.0.1:
`POST /api/sessions/{id}/fork` writes the fork and answers its id,
`POST /api/sessions/{id}/continue` streams the turn it owes, `GET /api/sessions`
pairs it with its original (`from`), `GET /api/sessions/{a}/diff/{b}` says what
differs; and every bad request is a JSON error with its status, nothing written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import attrs
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from test_web_app import answer, call, chat_body, options, ui_parts_of
from web_support import check_ui

from toolreel.adapters import MemoryJournal
from toolreel.shell.scripted import ScriptedServer
from toolreel.shell.scripted import calculator as calculator_model
from toolreel.web import app
from toolreel.web._respond import continue_response

FIFTY = '{"result": 50}'


@pytest.fixture(scope="module")
def calculator() -> Iterator[ScriptedServer]:
    """The scripted calculator model, on 127.0.0.1."""
    with ScriptedServer(calculator_model) as server:
        yield server


def recorded(calculator: ScriptedServer, *prompts: str) -> tuple[Any, MemoryJournal]:
    """An app whose journal holds session "s1": the prompts' turns, each completed."""
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    for prompt in prompts:
        ui_parts_of(call(web, "POST", "/api/chat", chat_body(prompt, chat_id="s1")))
    return web, journal


def first_call(web: Any, session: str = "s1", turn: int = 0) -> dict[str, Any]:
    """The first tool call of a turn's first round, as the session detail shows it."""
    detail = call(web, "GET", f"/api/sessions/{session}").json()
    first: dict[str, Any] = detail["turns"][turn]["rounds"][0]["calls"][0]
    return first


def test_a_fork_with_an_edited_result_goes_on_live_and_is_paired_with_its_original(
    calculator: ScriptedServer,
) -> None:
    web, journal = recorded(calculator, "What is 25 plus 17?")
    before = list(journal.entries("s1"))
    add = first_call(web)
    assert add["content"] == '{"result": 42.0}'

    made = call(
        web,
        "POST",
        "/api/sessions/s1/fork",
        {"at_round": 1, "results": {add["id"]: FIFTY}, "into": "s1-50"},
    )
    assert made.status_code == 201, made.text
    assert made.json() == {
        "id": "s1-50",
        "continues": True,
        "from": {
            "kind": "fork",
            "session_id": "s1",
            "seq": made.json()["from"]["seq"],
            "turn": 1,
            "round": 1,
            "note": f"result of {add['id']} replaced",
            "text": made.json()["from"]["text"],
        },
    }
    assert made.json()["from"]["text"].startswith("fork of s1 at step ")

    # Nothing ran yet: the fork owes the model call after the edited round.
    listed = {row["id"]: row for row in call(web, "GET", "/api/sessions").json()["sessions"]}
    assert listed["s1-50"]["outcome"] == "unfinished"
    assert listed["s1-50"]["from"]["session_id"] == "s1"
    assert listed["s1"]["from"] is None

    # Continued live: the model reads the edited result, and the turn ends with it.
    parts = ui_parts_of(call(web, "POST", "/api/sessions/s1-50/continue", {}))
    check_ui(parts)
    assert answer(parts) == "The answer is 50."
    assert not [p for p in parts if p["type"].startswith("tool-")]  # no call is made again
    detail = call(web, "GET", "/api/sessions/s1-50").json()
    assert [turn["outcome"] for turn in detail["turns"]] == ["completed"]
    assert detail["turns"][0]["rounds"][0]["calls"][0]["content"] == FIFTY
    assert detail["from"]["session_id"] == "s1"
    assert list(journal.entries("s1")) == before  # the original is untouched

    # Nothing more is owed: a second continue is refused.
    again = call(web, "POST", "/api/sessions/s1-50/continue", {})
    assert again.status_code == 409
    assert "no turn to continue" in again.json()["error"]

    diff = call(web, "GET", "/api/sessions/s1/diff/s1-50")
    assert diff.status_code == 200
    data = diff.json()
    assert (data["a"], data["b"], data["differ"], data["parted_turn"]) == ("s1", "s1-50", True, 1)
    assert data["parted_at"] == made.json()["from"]["seq"] + 1  # the edited result's step
    turn = data["turns"][0]
    assert turn["answer"] == ["The answer is 42.", "The answer is 50."]
    assert "-The answer is 42." in turn["answer_diff"]
    assert "+The answer is 50." in turn["answer_diff"]
    assert turn["calls"] == [
        {
            "kind": "changed",
            "name": "add",
            "field": "result",
            "a": '{"result": 42.0}',
            "b": FIFTY,
        }
    ]
    assert data["from"] == [None, made.json()["from"]]
    assert call(web, "GET", "/api/sessions/s1/diff/s1").json()["differ"] is False


def test_a_fork_at_a_turn_with_an_edited_prompt_runs_the_new_prompt_s_tools(
    calculator: ScriptedServer,
) -> None:
    web, _ = recorded(calculator, "What is 25 plus 17?", "What is 6 times 7?")
    made = call(web, "POST", "/api/sessions/s1/fork", {"at_turn": 2, "prompt": "What is 2 plus 3?"})
    assert made.status_code == 201, made.text
    fork = made.json()["id"]
    assert fork.startswith("s1~fork-") and made.json()["continues"] is True
    parts = ui_parts_of(call(web, "POST", f"/api/sessions/{fork}/continue", {}))
    inputs = [(p["toolName"], p["input"]) for p in parts if p["type"] == "tool-input-available"]
    assert inputs == [("add", {"a": 2, "b": 3})]
    assert answer(parts) == "The answer is 5."
    prompts = [turn["prompt"] for turn in call(web, "GET", f"/api/sessions/{fork}").json()["turns"]]
    assert prompts == ["What is 25 plus 17?", "What is 2 plus 3?"]
    calls = call(web, "GET", f"/api/sessions/s1/diff/{fork}").json()["turns"][1]["calls"]
    assert [(c["kind"], c["name"]) for c in calls] == [("added", "add"), ("removed", "multiply")]


def test_a_round_of_a_later_turn_is_named_with_its_turn_as_the_page_does(
    calculator: ScriptedServer,
) -> None:
    web, _ = recorded(calculator, "What is 25 plus 17?", "What is 6 times 7?")
    multiply = first_call(web, turn=1)
    body = {"at_turn": 2, "at_round": 1, "results": {multiply["id"]: FIFTY}, "into": "f"}
    made = call(web, "POST", "/api/sessions/s1/fork", body)
    assert made.status_code == 201, made.text
    assert (made.json()["from"]["turn"], made.json()["from"]["round"]) == (2, 1)
    assert answer(ui_parts_of(call(web, "POST", "/api/sessions/f/continue", {}))) == (
        "The answer is 50."
    )
    turns = call(web, "GET", "/api/sessions/f").json()["turns"]
    assert [t["answer"] for t in turns] == ["The answer is 42.", "The answer is 50."]
    alone = call(web, "POST", "/api/sessions/s1/fork", {"at_round": 1, "into": "g"})
    assert alone.status_code == 400  # two turns: the round needs its turn
    assert "several" in alone.json()["error"]


def test_the_next_prompt_continues_a_fork_as_any_session(calculator: ScriptedServer) -> None:
    web, _ = recorded(calculator, "What is 25 plus 17?")
    add = first_call(web)
    body = {"at_round": 1, "results": {add["id"]: FIFTY}, "into": "f"}
    assert call(web, "POST", "/api/sessions/s1/fork", body).status_code == 201
    parts = ui_parts_of(call(web, "POST", "/api/chat", chat_body("What is 6 times 7?", "f")))
    assert answer(parts) == "The answer is 42."
    turns = call(web, "GET", "/api/sessions/f").json()["turns"]
    assert [t["answer"] for t in turns] == ["The answer is 50.", "The answer is 42."]


def test_a_fork_at_a_round_that_ended_its_turn_owes_nothing_and_waits_for_a_prompt(
    calculator: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    web = app(options(calculator, max_tool_iterations=1), journal=journal)
    ui_parts_of(call(web, "POST", "/api/chat", chat_body("What's 7 times 8, then add 5?", "s1")))
    made = call(web, "POST", "/api/sessions/s1/fork", {"at_round": 1, "into": "f"})
    assert made.status_code == 201, made.text
    assert made.json()["continues"] is False  # the cap ended the turn with round 1
    assert [t["outcome"] for t in call(web, "GET", "/api/sessions/f").json()["turns"]] == ["capped"]
    refused = call(web, "POST", "/api/sessions/f/continue", {})
    assert refused.status_code == 409


def test_a_continue_whose_turn_another_request_finished_meanwhile_is_409(
    calculator: ScriptedServer,
) -> None:
    """The route checks first; the response checks again once it holds the session."""
    store = MemoryJournal()
    served = options(calculator, journal=store)
    ui_parts_of(call(app(served), "POST", "/api/chat", chat_body("What is 25 plus 17?", "s1")))

    async def late(_: Request) -> Response:
        """A continue of "s1" (which owes nothing), past the route's check."""
        return continue_response(served, "s1")

    site = Starlette(routes=[Route("/late", late, methods=["POST"])])
    refused = call(site, "POST", "/late", {})
    assert refused.status_code == 409
    assert refused.json() == {"error": "session 's1' has no turn to continue"}
    assert store.sessions() == ["s1"]


def test_a_fork_of_a_session_that_does_not_replay_is_409_and_writes_nothing(
    calculator: ScriptedServer,
) -> None:
    web, journal = recorded(calculator, "What is 25 plus 17?")
    steps = list(journal.entries("s1"))
    lease = journal.begin("tampered", journal.config("s1"))
    journal.append_entries("tampered", [attrs.evolve(steps[0], effects=()), *steps[1:]])
    journal.release(lease)
    refused = call(web, "POST", "/api/sessions/tampered/fork", {"at_round": 1, "into": "f"})
    assert refused.status_code == 409
    assert "does not replay up to the fork" in refused.json()["error"]
    assert "f" not in journal.sessions()


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("/api/sessions/nope/fork", {"at_round": 1}, 404, "no session 'nope'"),
        ("/api/sessions/s1/fork", {"at_round": 5}, 400, "at_round"),
        ("/api/sessions/s1/fork", {"at_turn": 3}, 400, "at_turn"),
        ("/api/sessions/s1/fork", {}, 400, "a fork point"),
        ("/api/sessions/s1/fork", {"at_round": "1"}, 400, "'at_round' must be a whole number"),
        ("/api/sessions/s1/fork", {"at_round": True}, 400, "'at_round' must be a whole number"),
        ("/api/sessions/s1/fork", {"at_round": 0}, 400, "'at_round' must be a whole number"),
        ("/api/sessions/s1/fork", {"at_round": 1, "results": ["x"]}, 400, "'results' must map"),
        ("/api/sessions/s1/fork", {"at_round": 1, "results": {"c": 1}}, 400, "'results' must"),
        ("/api/sessions/s1/fork", {"at_round": 1, "results": {"nope": "1"}}, 400, "nope"),
        ("/api/sessions/s1/fork", {"at_round": 1, "prompt": "x"}, 400, "edit.prompt"),
        ("/api/sessions/s1/fork", {"at_turn": 1, "prompt": 7}, 400, "'prompt' must be"),
        ("/api/sessions/s1/fork", {"at_round": 1, "into": "s1"}, 409, "already exists"),
        ("/api/sessions/s1/fork", {"at_round": 1, "into": "a/b"}, 400, "'into' must be"),
        ("/api/sessions/s1/fork", {"at_round": 1, "round": 1}, 400, "not ['round']"),
        ("/api/sessions/s1/fork", [1], 400, "JSON object"),
        ("/api/sessions/nope/continue", {}, 404, "no session 'nope'"),
        ("/api/sessions/s1/continue", {}, 409, "no turn to continue"),
        ("/api/sessions/s1/continue", {"protocol": "x"}, 400, "'protocol'"),
    ],
)
def test_a_bad_fork_or_continue_is_a_json_error_and_writes_nothing(
    calculator: ScriptedServer, path: str, body: Any, status: int, says: str
) -> None:
    web, journal = recorded(calculator, "What is 25 plus 17?")
    answered = call(web, "POST", path, body)
    assert answered.status_code == status, answered.text
    assert says in answered.json()["error"]
    assert journal.sessions() == ["s1"]


def test_a_diff_of_an_unknown_session_is_404(calculator: ScriptedServer) -> None:
    web, _ = recorded(calculator, "What is 25 plus 17?")
    for path in ("/api/sessions/s1/diff/nope", "/api/sessions/nope/diff/s1"):
        answered = call(web, "GET", path)
        assert answered.status_code == 404
        assert answered.json() == {"error": "no session 'nope' in the app's journal"}


def raw(web: Any, path: str, body: bytes, headers: dict[str, str]) -> httpx2.Response:
    """One POST to the ASGI app with these headers."""

    async def send() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=web)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post(path, content=body, headers=headers)

    return anyio.run(send)


@pytest.mark.parametrize(
    "headers",
    [
        {"content-type": "application/x-www-form-urlencoded"},
        {"content-type": "application/json", "origin": "http://elsewhere.example"},
    ],
)
@pytest.mark.parametrize("route", ["fork", "continue"])
def test_the_guard_refuses_a_fork_from_a_form_or_another_origin(
    calculator: ScriptedServer, headers: dict[str, str], route: str
) -> None:
    web, journal = recorded(calculator, "What is 25 plus 17?")
    refused = raw(web, f"/api/sessions/s1/{route}", b'{"at_round": 1}', headers)
    assert refused.status_code == 403
    assert "error" in refused.json()
    assert journal.sessions() == ["s1"]
