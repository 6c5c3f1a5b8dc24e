"""toolreel.web.app end to end through httpx's ASGI transport, with the scripted calculator model.

Tool rounds, parallel calls, a tool error, the cap, a model error, sessions, continuing
a chat by its id, the plain event stream, mounting, and the errors of bad requests.
(A client that disconnects is tested over a real socket: test_web_serve.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount, Route
from web_support import check_ui

from toolreel.adapters import MemoryJournal
from toolreel.shell import AgentOptions, Client, scripted
from toolreel.shell.demo import SYSTEM, TOOLS
from toolreel.shell.scripted import ScriptedServer
from toolreel.testing import MakeScriptedModel, http_error
from toolreel.web import app, chat_response


@pytest.fixture(scope="module")
def calculator() -> Iterator[ScriptedServer]:
    """The scripted calculator model, on 127.0.0.1."""
    with ScriptedServer(scripted.calculator) as server:
        yield server


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    """The calculator agent's options, pointed at `server`."""
    return AgentOptions(
        model="scripted-calculator",
        base_url=server.url,
        tools=TOOLS,
        system_prompt=SYSTEM,
        **extra,
    )


def chat_body(text: str, chat_id: str | None = "chat-1", **extra: Any) -> dict[str, Any]:
    """The body DefaultChatTransport posts for a new user message."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {
        "id": chat_id,
        "messages": [user],
        "trigger": "submit-message",
        "messageId": None,
        **extra,
    }


def ui_parts_of(response: httpx2.Response) -> list[dict[str, Any]]:
    """The parts of a UI message stream response (which must end with `data: [DONE]`)."""
    assert response.status_code == 200, response.text
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [e for e in response.text.split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    return [json.loads(e.removeprefix("data: ")) for e in events[:-1]]


def plain_events_of(response: httpx2.Response) -> list[tuple[str, dict[str, Any]]]:
    """The (type, data) pairs of a plain event stream response."""
    assert response.status_code == 200, response.text
    pairs = []
    for event in (e for e in response.text.split("\n\n") if e):
        kind, data = event.split("\n")
        pairs.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return pairs


def call(web: Any, method: str, path: str, body: Any = None) -> httpx2.Response:
    """One request to the ASGI app."""

    async def send() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=web)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            if isinstance(body, bytes):
                return await client.request(
                    method, path, content=body, headers={"content-type": "application/json"}
                )
            return await client.request(method, path, json=body)

    return anyio.run(send)


def answer(parts: list[dict[str, Any]]) -> str:
    """The text of the message's last step."""
    last = max(i for i, p in enumerate(parts) if p["type"] == "start-step")
    return "".join(p["delta"] for p in parts[last:] if p["type"] == "text-delta")


def test_chat_streams_parallel_calls_chained_rounds_and_the_answer(calculator) -> None:
    web = app(options(calculator))
    parts = ui_parts_of(
        call(web, "POST", "/api/chat", chat_body("What's 7 times 8 and 2 plus 3, then add 5?"))
    )
    check_ui(parts)
    kinds = [p["type"] for p in parts]
    first_step = kinds[: kinds.index("finish-step")]
    assert first_step.count("tool-input-available") == 2  # parallel, in one step
    inputs = [p for p in parts if p["type"] == "tool-input-available"]
    assert [(p["toolName"], p["input"]) for p in inputs] == [
        ("multiply", {"a": 7, "b": 8}),
        ("add", {"a": 2, "b": 3}),
        ("add", {"a": 5, "b": 5}),
    ]
    outputs = [p for p in parts if p["type"] == "tool-output-available"]
    assert [p["output"] for p in outputs] == [
        '{"result": 56.0}',
        '{"result": 5.0}',
        '{"result": 10.0}',
    ]
    assert all(p["providerMetadata"]["toolreel"]["duration_ms"] >= 0 for p in outputs)
    assert kinds.count("start-step") == 3
    assert answer(parts) == "The answer is 10."
    assert parts[-2] == {"type": "data-usage", "data": {"input_tokens": 30, "output_tokens": 15}}
    assert parts[-1]["finishReason"] == "stop"


def test_a_call_streamed_in_fragments_is_sent_as_its_arguments_arrive(calculator) -> None:
    web = app(options(calculator))
    parts = ui_parts_of(call(web, "POST", "/api/chat", chat_body("What is 25 plus 17?")))
    check_ui(parts)
    of_call = [p for p in parts if p.get("toolCallId")]
    kinds = [p["type"] for p in of_call]
    deltas = kinds.count("tool-input-delta")
    assert deltas >= 2  # one per fragment the model streamed, not one with the whole text
    assert kinds == [
        "tool-input-start",
        *["tool-input-delta"] * deltas,
        "tool-input-available",
        "tool-output-available",
    ]
    written = "".join(p["inputTextDelta"] for p in of_call if p["type"] == "tool-input-delta")
    assert json.loads(written) == of_call[-2]["input"] == {"a": 25, "b": 17}
    events = plain_events_of(call(web, "POST", "/api/events", {"message": "What is 25 plus 17?"}))
    told = [(kind, data) for kind, data in events if kind.startswith("tool_call")]
    begun = {"index": 0, "id": of_call[0]["toolCallId"], "name": "add"}
    assert told[0] == ("tool_call_start", begun)
    fragments = [data["fragment"] for kind, data in told if kind == "tool_call_delta"]
    assert len(fragments) >= 2 and json.loads("".join(fragments)) == {"a": 25, "b": 17}
    assert told[-1][0] == "tool_call"


def test_a_tool_error_is_a_tool_output_error_and_the_loop_goes_on(calculator) -> None:
    parts = ui_parts_of(
        call(app(options(calculator)), "POST", "/api/chat", chat_body("What is 1 divided by 0?"))
    )
    check_ui(parts)
    [error] = [p for p in parts if p["type"] == "tool-output-error"]
    assert error["errorText"] == "ValueError: Cannot divide by zero"
    assert answer(parts).startswith("The calculation did not give a number")


def test_the_iteration_cap_finishes_with_tool_calls(calculator) -> None:
    web = app(options(calculator, max_tool_iterations=1))
    parts = ui_parts_of(call(web, "POST", "/api/chat", chat_body("What's 7 times 8, then add 5?")))
    check_ui(parts)
    assert parts[-1] == {
        "type": "finish",
        "finishReason": "tool-calls",
        "messageMetadata": {"reason": "max_iterations", "max_iterations_reached": True},
    }


def test_a_model_error_is_an_error_part_then_finish(scripted_model: MakeScriptedModel) -> None:
    model = scripted_model([http_error(400, "this model does not exist")])
    parts = ui_parts_of(call(app(model.options()), "POST", "/api/chat", chat_body("hi")))
    check_ui(parts)
    [error] = [p for p in parts if p["type"] == "error"]
    assert "this model does not exist" in error["errorText"]
    assert parts[-1]["finishReason"] == "error"


def test_a_second_message_with_the_chat_id_continues_the_session(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    ui_parts_of(call(web, "POST", "/api/chat", chat_body("What is 25 plus 17?", "chat-a")))
    second = ui_parts_of(call(web, "POST", "/api/chat", chat_body("Calculate 144 / 12", "chat-a")))
    assert answer(second) == "The answer is 12."
    sent = calculator.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "What is 25 plus 17?",
        "Calculate 144 / 12",
    ]
    assert journal.sessions() == ["chat-a"]


def test_sessions_lists_newest_first_and_details_turns_rounds_and_transcript(calculator) -> None:
    web = app(options(calculator))
    call(web, "POST", "/api/chat", chat_body("What is 25 plus 17?", "older"))
    call(web, "POST", "/api/chat", chat_body("What's 7 times 8, then add 5? " + "x" * 90, "newer"))
    call(web, "POST", "/api/chat", chat_body("What is 1 divided by 0?", "older"))
    listed = call(web, "GET", "/api/sessions").json()["sessions"]
    assert listed == [
        {"id": "newer", "title": "What's 7 times 8, then add 5? " + "x" * 49 + "…", "turns": 1,
         "rounds": 2, "outcome": "completed", "approvals": 0, "from": None},
        {"id": "older", "title": "What is 25 plus 17?", "turns": 2, "rounds": 2,
         "outcome": "completed", "approvals": 0, "from": None},
    ]  # fmt: skip
    detail = call(web, "GET", "/api/sessions/older").json()
    assert detail["id"] == "older"
    first, second = detail["turns"]
    assert first == {
        "prompt": "What is 25 plus 17?",
        "answer": "The answer is 42.",
        "outcome": "completed",
        "usage": {"input_tokens": 20, "output_tokens": 10},
        "rounds": [
            {
                "number": 1,
                "text": "Let me work that out. ",
                "calls": [
                    {
                        "id": "call_1_1",
                        "name": "add",
                        "arguments": {"a": 25, "b": 17},
                        "content": '{"result": 42.0}',
                        "is_error": False,
                    }
                ],
            }
        ],
    }
    assert second["rounds"][0]["calls"][0]["is_error"] is True
    assert "**User:** What is 25 plus 17?" in detail["transcript"]
    assert call(web, "GET", "/api/sessions/nobody").status_code == 404


def test_the_plain_event_stream_names_the_session_to_continue(calculator) -> None:
    web = app(options(calculator))
    events = plain_events_of(call(web, "POST", "/api/events", {"message": "What is 25 plus 17?"}))
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "session" and kinds[-1] == "done"
    assert kinds.count("tool_call") == kinds.count("tool_result") == 1
    assert events[-1][1] == {
        "reason": "completed",
        "max_turns_reached": False,
        "text": "The answer is 42.",
    }
    session = events[0][1]["id"]
    again = plain_events_of(
        call(web, "POST", "/api/events", {"id": session, "message": "Calculate 144 / 12"})
    )
    assert again[0] == ("session", {"id": session})
    assert call(web, "GET", f"/api/sessions/{session}").json()["turns"][1]["answer"] == (
        "The answer is 12."
    )


def test_info_says_which_model_answers(calculator) -> None:
    assert call(app(options(calculator)), "GET", "/api/info").json() == {
        "provider": "openai",
        "model": "scripted-calculator",
        "scripted": False,
        "label": "openai · scripted-calculator",
    }
    scripted = call(app(options(calculator), scripted=True), "GET", "/api/info").json()
    assert scripted["scripted"] is True
    assert scripted["label"] == "Offline scripted calculator model — not a real LLM"


def test_the_page_is_html(calculator) -> None:
    page = call(app(options(calculator)), "GET", "/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/api/chat", b"{not json", "not JSON"),
        ("/api/chat", [], "JSON object"),
        ("/api/chat", {"id": "c", "messages": []}, "no user message"),
        ("/api/chat", chat_body("hi", trigger="regenerate-message"), "not supported"),
        ("/api/chat", chat_body("   "), "no text"),
        ("/api/chat", chat_body("hi", chat_id="x" * 201), "'id'"),
        ("/api/events", {"message": ""}, "'message'"),
    ],
)
def test_a_bad_request_is_a_400_naming_the_problem(calculator, path, body, says) -> None:
    response = call(app(options(calculator)), "POST", path, body)
    assert response.status_code == 400
    assert says in response.json()["error"]


def test_a_session_in_use_is_a_409(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)

    async def hold_and_post() -> httpx2.Response:
        async with Client(options(calculator, journal=journal, session_id="busy")):
            transport = httpx2.ASGITransport(app=web)
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                return await client.post("/api/chat", json=chat_body("hi", "busy"))

    response = anyio.run(hold_and_post)
    assert response.status_code == 409
    assert "busy" in response.json()["error"]


def test_the_app_mounts_under_a_prefix_and_chat_response_serves_a_users_own_route(
    calculator,
) -> None:
    opts = options(calculator)

    async def ask(request: Request) -> Any:
        return chat_response(opts, (await request.json())["q"], session_id="mine")

    outer = Starlette(routes=[Mount("/agent", app=app(opts)), Route("/ask", ask, methods=["POST"])])
    mounted = ui_parts_of(call(outer, "POST", "/agent/api/chat", chat_body("What is 2 plus 2?")))
    assert answer(mounted) == "The answer is 4."
    own = ui_parts_of(call(outer, "POST", "/ask", {"q": "What is 3 plus 3?"}))
    assert answer(own) == "The answer is 6."


def test_pages_of_the_origins_given_may_call_the_api(calculator) -> None:
    web = app(options(calculator), cors_origins=["http://localhost:3000"])

    async def requests() -> list[httpx2.Response]:
        transport = httpx2.ASGITransport(app=web)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            preflight = await client.options(
                "/api/chat",
                headers={
                    "origin": "http://localhost:3000",
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type",
                },
            )
            posted = await client.post(
                "/api/chat",
                json=chat_body("What is 2 plus 2?"),
                headers={"origin": "http://localhost:3000"},
            )
            other = await client.get("/api/info", headers={"origin": "http://evil.example"})
            return [preflight, posted, other]

    preflight, posted, other = anyio.run(requests)
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert posted.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert "x-vercel-ai-ui-message-stream" in posted.headers["access-control-expose-headers"]
    assert answer(ui_parts_of(posted)) == "The answer is 4."
    assert "access-control-allow-origin" not in other.headers
