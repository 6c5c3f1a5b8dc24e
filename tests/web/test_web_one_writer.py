"""The served loop under concurrent requests and a failing journal (issue 20, items 1, 2, 5).

N `POST /api/chat` on one session at once: one stream, N-1 409s; N `POST /api/approvals`
of one held call: one decision runs the tool, the others 409 at once; a journal that
cannot be opened is a 503, one that fails mid-turn or after the turn's `Finish` ends the
stream with one error and one terminal event; after a PostgreSQL outage the server
continues its own session; a client leaving while a resumed turn finishes ends it.
Every session replays clean afterwards. SQLite and PostgreSQL (tests/conftest.py's
throwaway server; skipped without one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
import pytest
from one_writer import Opened, clean, one_round, opener
from test_web_app import chat_body, plain_events_of, ui_parts_of
from web_support import check_ui

from toolreel.adapters import JournalUnavailable, MemoryJournal, Session, Step
from toolreel.core import (
    LoopConfig,
    ModelResponded,
    PromptSubmitted,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    initial_state,
    step,
)
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, replay, tool
from toolreel.testing import FunctionModel, ToolCalls, call
from toolreel.web import app


@pytest.fixture
def journal_of(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Opened]]:
    """Open a journal of a kind (tests/one_writer.py), PostgreSQL on the test's own schema."""
    opened: list[Opened] = []

    def open_kind(kind: str) -> Opened:
        dsn = request.getfixturevalue("postgres_dsn") if kind.startswith("postgres") else None
        opened.append(opener(kind, tmp_path, dsn))
        return opened[-1]

    yield open_kind
    for item in opened:
        item.close()


async def post_all(
    web: Any, requests: Sequence[tuple[str, dict[str, Any]]], *, answered: Callable[[], None]
) -> list[httpx2.Response]:
    """Send the requests at once; `answered()` after each response (in the order they come)."""
    responses: list[httpx2.Response | None] = [None] * len(requests)
    transport = httpx2.ASGITransport(app=web)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:

        async def one(index: int, path: str, body: dict[str, Any]) -> None:
            responses[index] = await client.post(path, json=body)
            answered()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                for index, (path, body) in enumerate(requests):
                    tasks.start_soon(one, index, path, body)
    assert all(response is not None for response in responses)
    return [response for response in responses if response is not None]


def post(web: Any, path: str, body: dict[str, Any]) -> httpx2.Response:
    """One request."""
    [response] = anyio.run(lambda: post_all(web, [(path, body)], answered=lambda: None))
    return response


def kinds(parts: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The parts of one type."""
    return [part for part in parts if part["type"] == kind]


# --- one writer ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 10])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_n_chat_requests_on_one_session_at_once_give_one_stream_and_n_minus_1_409(
    journal_of: Callable[[str], Opened], kind: str, n: int
) -> None:
    opened = journal_of(kind)
    refused = anyio.Event()
    done: list[int] = []

    @tool
    async def hold() -> str:
        """Hold the session until every other request has been answered."""
        await refused.wait()
        return "held"

    def answered() -> None:
        done.append(1)
        if len(done) == n - 1:
            refused.set()

    web = app(AgentOptions(model="m", tools=[hold]), journal=opened.given, model=one_round("hold"))
    requests = [("/api/chat", chat_body(f"turn {i}", "chat-1")) for i in range(n)]
    responses = anyio.run(lambda: post_all(web, requests, answered=answered))
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200] + [409] * (n - 1), [r.text for r in responses]
    for response in responses:
        if response.status_code == 409:
            assert "session 'chat-1' is in use by" in response.json()["error"]
        else:
            parts = ui_parts_of(response)
            check_ui(parts)
            [finish] = kinds(parts, "finish")
            assert finish["messageMetadata"]["reason"] == "completed"
    clean(opened.reader(), "chat-1", turns=1)


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_n_approvals_of_one_held_call_at_once_run_it_once_and_the_others_are_409(
    journal_of: Callable[[str], Opened], kind: str, n: int
) -> None:
    opened = journal_of(kind)
    refused = anyio.Event()
    ran: list[str] = []
    done: list[int] = []

    @tool(requires_approval=True)
    async def delete() -> str:
        """Delete (noted), once every other request has been answered."""
        ran.append("delete")
        await refused.wait()
        return "deleted"

    def answered() -> None:
        done.append(1)
        if len(done) == n - 1:
            refused.set()

    web = app(
        AgentOptions(model="m", tools=[delete]), journal=opened.given, model=one_round("delete")
    )
    paused = ui_parts_of(post(web, "/api/chat", chat_body("delete it", "chat-1")))
    [request] = kinds(paused, "tool-approval-request")
    decision = {"id": "chat-1", "call_id": request["approvalId"], "approved": True}
    responses = anyio.run(
        lambda: post_all(web, [("/api/approvals", decision)] * n, answered=answered)
    )
    assert sorted(response.status_code for response in responses) == [200] + [409] * (n - 1)
    [winner] = [response for response in responses if response.status_code == 200]
    parts = ui_parts_of(winner)
    check_ui(parts)
    [output] = kinds(parts, "tool-output-available")
    assert output["output"] == "deleted"
    assert len(kinds(parts, "finish")) == 1
    assert ran == ["delete"]
    journal = opened.reader()
    outputs = [
        e.event.output for e in journal.entries("chat-1") if isinstance(e.event, ToolFinished)
    ]
    assert outputs == ["deleted"]  # what really ran: never "Cancelled before the tool finished."
    clean(journal, "chat-1", turns=1)


# --- a journal that fails -------------------------------------------------------------------


class FailingJournal(MemoryJournal):
    """A journal whose disk fills up: at `begin`, or at the first write `full(steps)` picks."""

    def __init__(
        self, *, at_begin: bool = False, full: Callable[[Sequence[Step]], bool] | None = None
    ) -> None:
        super().__init__()
        self.at_begin = at_begin
        self.full = full

    def begin(self, session_id: str, config: Any, *, from_seq: int = 0) -> Any:
        if self.at_begin:
            raise JournalUnavailable("cannot write journal disk.db: No space left on device")
        return super().begin(session_id, config, from_seq=from_seq)

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        if self.full is not None and self.full(steps):
            raise JournalUnavailable("cannot write journal disk.db: No space left on device")
        super().append(session_id, steps)


def after_the_tool(steps: Sequence[Step]) -> bool:
    """The write of the tool's outcome."""
    return any(isinstance(s.event, ToolFinished) for s in steps)


def at_the_finish(steps: Sequence[Step]) -> bool:
    """The write of the turn's end (its `Finish`)."""
    return any(type(effect).__name__ == "Finish" for s in steps for effect in s.effects)


@tool
def note() -> str:
    """A tool."""
    return "noted"


def failing_app(journal: FailingJournal) -> Any:
    """The app over `journal`, with a model calling `note` once."""
    return app(AgentOptions(model="m", tools=[note]), journal=journal, model=one_round("note"))


@pytest.mark.parametrize("path", ["/api/chat", "/api/events"])
def test_a_journal_that_cannot_be_written_when_a_turn_opens_is_a_503(path: str) -> None:
    web = failing_app(FailingJournal(at_begin=True))
    body = chat_body("hi") if path == "/api/chat" else {"id": "chat-1", "message": "hi"}
    response = post(web, path, body)
    assert response.status_code == 503
    assert "No space left on device" in response.json()["error"]


@pytest.mark.parametrize("full", [after_the_tool, at_the_finish], ids=["mid-turn", "at-finish"])
def test_a_journal_failing_during_a_turn_ends_the_ui_stream_with_one_error_and_one_finish(
    full: Callable[[Sequence[Step]], bool],
) -> None:
    web = failing_app(FailingJournal(full=full))
    parts = ui_parts_of(post(web, "/api/chat", chat_body("hi")))
    check_ui(parts)
    [error] = kinds(parts, "error")
    assert "No space left on device" in error["errorText"]
    [finish] = kinds(parts, "finish")  # one terminal part, after the error
    assert parts[-1] == finish and finish["finishReason"] == "error"
    assert parts.index(error) < parts.index(finish)


@pytest.mark.parametrize("full", [after_the_tool, at_the_finish], ids=["mid-turn", "at-finish"])
def test_a_journal_failing_during_a_turn_ends_the_plain_stream_with_one_error_and_one_done(
    full: Callable[[Sequence[Step]], bool],
) -> None:
    web = failing_app(FailingJournal(full=full))
    events = plain_events_of(post(web, "/api/events", {"id": "chat-1", "message": "hi"}))
    [error] = [data for kind, data in events if kind == "error"]
    assert error["code"] == "journal_unavailable" and "No space left" in error["message"]
    [done] = [data for kind, data in events if kind == "done"]
    assert events[-1] == ("done", done) and done["reason"] == "failed"


# --- PostgreSQL: an outage -----------------------------------------------------------------


class Outage:
    """The database unreachable for a while: its connections cut, new ones refused."""

    def __init__(self, dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
        """Nothing cut yet; `psycopg.connect` refuses while the outage lasts."""
        self.dsn = dsn
        self.down = False
        self.connect = psycopg.connect

        def connect(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise psycopg.OperationalError("connection refused (the server is down)")
            return self.connect(*args, **kwargs)

        monkeypatch.setattr(psycopg, "connect", connect)

    def begin(self) -> None:
        """Cut toolreel's connections and refuse new ones."""
        with self.connect(self.dsn, autocommit=True) as db:
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'toolreel' AND pid <> pg_backend_pid()"
            )
        self.down = True

    def end(self) -> None:
        """Connections are accepted again."""
        self.down = False


def test_after_a_postgres_outage_the_server_continues_its_own_idle_session(
    journal_of: Callable[[str], Opened], postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outage = Outage(postgres_dsn, monkeypatch)
    opened = journal_of("postgres")

    @tool
    def cut() -> str:
        """The database goes down while this tool runs."""
        outage.begin()
        return "cut"

    def answer(messages: Any, info: Any) -> Any:
        """Call `cut` for the prompt "second", `note` for the others; then answer."""
        last = messages[-1]
        if last.role == "user":
            return ToolCalls([call("cut" if last.content == "second" else "note")])
        return "done"

    web = app(
        AgentOptions(model="m", tools=[cut, note]),
        journal=opened.given,
        model=FunctionModel(answer),
    )
    assert post(web, "/api/chat", chat_body("first")).status_code == 200
    parts = ui_parts_of(post(web, "/api/chat", chat_body("second")))
    assert "cannot write journal" in kinds(parts, "error")[0]["errorText"]
    assert len(kinds(parts, "finish")) == 1
    assert post(web, "/api/chat", chat_body("while down")).status_code == 503
    outage.end()
    parts = ui_parts_of(post(web, "/api/chat", chat_body("third")))  # ours: not a 409
    [finish] = kinds(parts, "finish")
    assert finish["messageMetadata"]["reason"] == "completed"
    replayed = clean_but_the_cut(opened.reader())
    assert [turn.prompt for turn in replayed.turns] == ["first", "second", "third"]


def clean_but_the_cut(journal: Any) -> Session:
    """The session replayed: the turn the outage cut is journaled cancelled, the others
    completed, nothing diverges or is missing."""
    replayed = replay(journal, "chat-1")
    assert isinstance(replayed, Session), replayed
    assert replayed.warnings == ()
    reasons = [turn.reason for turn in replayed.turns]
    assert reasons == [FinishReason.COMPLETED, FinishReason.CANCELLED, FinishReason.COMPLETED]
    return replayed


# --- a client that leaves before its turn has begun ------------------------------------------


def test_a_client_leaving_while_a_crashed_turn_is_finished_ends_its_request() -> None:
    started, released = anyio.Event(), anyio.Event()

    @tool(idempotent=True)
    async def slow() -> str:
        """Runs again when the crashed turn is finished; never ends on its own."""
        started.set()
        await released.wait()
        return "slow"  # pragma: no cover

    journal = MemoryJournal()
    crashed(journal, "chat-1", slow.spec)

    web = app(AgentOptions(model="m", tools=[slow]), journal=journal, model=one_round("slow"))
    sent: list[dict[str, Any]] = []
    gone = anyio.Event()
    body = json.dumps(chat_body("next", "chat-1")).encode()
    received = False

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/chat",
        "raw_path": b"/api/chat",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }

    async def main() -> None:
        with anyio.fail_after(30):  # the request ends once its client has left
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(web, scope, receive, send)
                await started.wait()  # the crashed turn's tool runs again, before the prompt
                gone.set()

    anyio.run(main)
    assert not released.is_set()
    replayed = replay_of(journal)
    assert [turn.reason for turn in replayed.turns] == [FinishReason.CANCELLED]


def replay_of(journal: Any) -> Session:
    """The session "chat-1" replayed (it must not diverge)."""
    replayed = replay(journal, "chat-1")
    assert isinstance(replayed, Session), replayed
    return replayed


def crashed(journal: MemoryJournal, session_id: str, spec: ToolSpec) -> None:
    """A session whose process died while its first turn's call of the tool `spec` ran."""
    config = LoopConfig(model="m", tools=(spec,), auto_execute=True)
    events = [
        PromptSubmitted(text="first"),
        ToolCallStarted(index=0, call_id="call_1", name=spec.name),
        ToolCallArgumentsDelta(index=0, fragment="{}"),
        ModelResponded(finish_reason="tool_calls"),
    ]
    lease = journal.begin(session_id, config)
    state, steps = initial_state(config), []
    for seq, event in enumerate(events, start=1):
        state, effects = step(state, event)
        steps.append(Step(seq=seq, event=event, effects=effects))
    journal.append(session_id, steps)
    journal.release(lease)


def test_the_next_message_after_a_client_left_waits_for_the_session_to_be_given_back() -> None:
    """Stop, then send at once: the stopped turn is still giving the session back (its tool
    takes a moment to stop), so the new request waits for that instead of a 409."""
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Never ends on its own; stopping it takes a moment (its clean-up)."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.3)
        return "slow"  # pragma: no cover

    journal = MemoryJournal()
    web = app(AgentOptions(model="m", tools=[slow]), journal=journal, model=one_round("slow"))
    gone = anyio.Event()
    first_body = json.dumps(chat_body("first", "chat-1")).encode()
    answered: list[int] = []

    def scope_of() -> dict[str, Any]:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/api/chat",
            "raw_path": b"/api/chat",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
        }

    def receiver(body: bytes, leave: anyio.Event | None) -> Callable[[], Any]:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await (leave or anyio.Event()).wait()
            return {"type": "http.disconnect"}

        return receive

    async def second_send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answered.append(message["status"])

    async def ignore(message: dict[str, Any]) -> None:
        pass

    async def main() -> None:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(web, scope_of(), receiver(first_body, gone), ignore)
                await started.wait()
                gone.set()  # the browser's Stop
                await anyio.sleep(0)  # the first request sees its client leave
                second = json.dumps(chat_body("next", "chat-1")).encode()
                leave_second = anyio.Event()
                tasks.start_soon(web, scope_of(), receiver(second, leave_second), second_send)
                while not answered:
                    await anyio.sleep(0.01)
                leave_second.set()

    anyio.run(main)
    assert answered == [200]
