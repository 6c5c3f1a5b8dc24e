"""Journals as bfd8293 wrote them: run with bfd8293's code (test_bfd8293_journals.py sets that up).

Usage: python old_journals_writer.py DIR [crash-chat | crash-agent]

Without a scenario it writes chat sessions to DIR/chat.db (two to DIR/chat.jsonl too) and
agent runs to DIR/agents.db (two to DIR/agents.jsonl too), some finished, some paused for
approval, then DIR/manifest.json: what bfd8293 itself made of each session (its
transcript, history, phase, outcome and whether it replayed). A crash scenario runs one
session into DIR/crash.db until a tool ends the process mid-call (`os._exit`), as a
crash would: the journal holds the started call and no outcome.

Only the public API of that commit is used (plus its scripted server), so the journals
are what users of bfd8293 have on disk.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import attrs

from toolreel.adapters import (
    JSONLJournal,
    SQLiteJournal,
    load_session,
    render_transcript,
    unstructure,
)
from toolreel.core import RetryPolicy
from toolreel.shell import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    AgentSuccess,
    ApprovalPending,
    Budget,
    Client,
    HookDecision,
    OutputTool,
    PreToolUseEvent,
    image,
    load_agent_session,
    replay,
    resume_agent,
    tool,
)
from toolreel.shell._scripted import ScriptedServer, http_error, text, tool_calls

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
NO_RETRY_WAIT = RetryPolicy(max_retries=3, base_delay=0, max_delay=0)


# --- tools ------------------------------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (nothing is deleted: a test)."""
    return f"deleted {path}"


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool
def screenshot() -> list[Any]:
    """Take a screenshot."""
    return ["the login page", image(PNG)]


@tool
def currency_rate(currency: str) -> float:
    """Euros per unit of `currency`."""
    return {"USD": 0.92, "EUR": 1.0}[currency]


@tool(requires_approval=True)
def delete_row(row: int) -> str:
    """Delete a row (nothing is deleted: a test)."""
    return f"deleted row {row}"


@tool
def boom(n: int) -> str:
    """Ends the process mid-call, as a crash would."""
    os._exit(0)


def gate(event: PreToolUseEvent) -> HookDecision | None:
    """PreToolUse: block `look` on secrets, ask about /etc, rewrite `add`'s b=0 to b=1."""
    path = str(event.tool_input.get("path", ""))
    if path.startswith("/secret"):
        return HookDecision(continue_=False, reason="secrets stay secret")
    if path.startswith("/etc") or event.tool_input.get("currency") == "GBP":
        return HookDecision(ask=True, reason="a human should look")
    if event.tool_name == "add" and event.tool_input.get("b") == 0:
        return HookDecision(modified_input={"a": event.tool_input["a"], "b": 1})
    return None


def noted(event: Any) -> None:
    """PostToolUse: told, answers nothing."""


HOOKS = {HOOK_PRE_TOOL_USE: [gate], HOOK_POST_TOOL_USE: [noted]}


# --- agents -------------------------------------------------------------------------


@attrs.frozen
class Invoice:
    number: str
    total: float


def show(invoice: Invoice) -> str:
    """Reflection: the invoice as a person would read it."""
    return f"Invoice {invoice.number}: {invoice.total:.2f}"


def totals(invoice: Invoice) -> list[str]:
    """The total must be positive and whole cents."""
    return [] if invoice.total > 0 else [f"total is {invoice.total}, expected > 0"]


def agent(*, reflective: bool = False, **overrides: Any) -> AgentDefinition[str, Invoice]:
    """The invoice agent: currency_rate, look, delete_row (needs approval), boom."""
    output = OutputTool.of(
        Invoice, name="record_invoice", reflection_handler=show if reflective else None
    )
    overrides.setdefault("helpers", [currency_rate, look, delete_row, boom])
    return AgentDefinition(
        build_prompt=lambda text: f"Extract the invoice from: {text}",
        output=output,
        validators=[totals],
        system_prompt="You extract invoices.",
        **overrides,
    )


# --- the sessions -------------------------------------------------------------------


def chat_options(url: str, journal: Path, sid: str, **extra: Any) -> AgentOptions:
    """A chat session's options (its tools, hooks and journal)."""
    extra.setdefault("tools", [add, delete, look, screenshot, boom])
    return AgentOptions(
        model="old-chat",
        base_url=url,
        api_key="sk-old",
        auto_execute_tools=True,
        journal=journal,
        session_id=sid,
        retry=NO_RETRY_WAIT,
        hooks=HOOKS,
        **extra,
    )


def agent_options(url: str, journal: Path, sid: str, **extra: Any) -> AgentOptions:
    """An agent run's options."""
    return AgentOptions(
        model="old-agent",
        base_url=url,
        api_key="sk-old",
        journal=journal,
        session_id=sid,
        retry=NO_RETRY_WAIT,
        hooks=HOOKS,
        **extra,
    )


async def chat(url: str, journal: Path, sid: str, prompts: list[Any], **extra: Any) -> None:
    """Run each prompt (text, or (text, images)) as a turn; stop quietly at a pause."""
    async with Client(chat_options(url, journal, sid, **extra)) as client:
        for prompt in prompts:
            words, images = prompt if isinstance(prompt, tuple) else (prompt, None)
            await client.query(words, images=images)
            if await client.wait() is None:
                return  # paused for approval


async def decide(url: str, journal: Path, sid: str, approve: list[str], deny: dict) -> None:
    """A later process decides a paused chat turn and lets it finish."""
    async with Client.resume(sid, chat_options(url, journal, sid)) as client:
        for call_id in approve:
            await client.approve(call_id)
        for call_id, reason in deny.items():
            await client.deny(call_id, reason)
        await client.wait()


async def run_agent(url: str, journal: Path, sid: str, **extra: Any) -> None:
    """Run the invoice agent; a pause for approval is left as it is."""
    definition = agent(**extra.pop("definition", {}))
    images = extra.pop("images", None)
    with contextlib.suppress(ApprovalPending):
        await execute_agent_quietly(definition, url, journal, sid, images, **extra)


async def execute_agent_quietly(
    definition: AgentDefinition[str, Invoice],
    url: str,
    journal: Path,
    sid: str,
    images: list[Any] | None,
    **extra: Any,
) -> AgentSuccess[Invoice] | AgentFailure:
    """`execute_agent` on INV-1's email."""
    from toolreel.shell import execute_agent  # noqa: PLC0415 - beside its one use

    options = agent_options(url, journal, sid, **extra)
    return await execute_agent(definition, "INV-1, 2 x 50 USD", options, images=images)


GOOD = {"number": "INV-1", "total": 92}
NEGATIVE = {"number": "INV-1", "total": -1}


def chats(directory: Path) -> None:
    """The chat sessions (SQLite; the first two in JSONL too)."""
    scripts: dict[str, tuple[list[Any], list[Any], dict[str, Any]]] = {
        "tools": (
            [
                http_error(429, "slow down", retry_after=0),
                tool_calls(
                    ("c1", "add", {"a": 2, "b": 0}),
                    ("c2", "nope", {}),
                    ("c3", "add", '{"a": 2'),
                    ("c4", "look", {"path": "/secret/key"}),
                    text="Let me add.",
                ),
                text("2 + 1 = 3."),
                text("Bye."),
            ],
            ["What is 2 + 0?", "Thanks"],
            {},
        ),
        "images": (
            [tool_calls(("s1", "screenshot", {})), text("A login page.")],
            [("What is on screen? Compare with this.", [image(PNG)])],
            {},
        ),
        "budget": (
            [
                tool_calls(("b1", "add", {"a": 1, "b": 2}), ("b2", "add", {"a": 3, "b": 4})),
                text("unused"),
            ],
            ["Add twice"],
            {"budget": Budget(max_tool_calls=1)},
        ),
        "capped": (
            [tool_calls(("m1", "add", {"a": 1, "b": 1})), text("It is 2, I think.")],
            ["Add"],
            {"max_tool_iterations": 1, "on_max_iterations": "final_answer"},
        ),
        "approval-paused": (
            [tool_calls(("p1", "delete", {"path": "a.txt"}), ("p2", "look", {"path": "b"}))],
            ["Clean up"],
            {},
        ),
        "ask-paused": (
            [tool_calls(("q1", "look", {"path": "/etc/passwd"}))],
            ["Read it"],
            {},
        ),
        "approval-decided": (
            [
                tool_calls(("d1", "delete", {"path": "a.txt"}), ("d2", "delete", {"path": "b"})),
                text("Deleted a.txt, kept b."),
            ],
            ["Clean up"],
            {},
        ),
    }
    for name, (script, prompts, extra) in scripts.items():
        journals = [directory / "chat.db"]
        if name in ("tools", "images"):
            journals.append(directory / "chat.jsonl")
        for journal in journals:
            with ScriptedServer(script) as server:
                anyio.run(functools.partial(chat, server.url, journal, name, prompts, **extra))
                if name == "approval-decided":
                    deny = {"d2": "keep b"}
                    anyio.run(decide, server.url, journal, name, ["d1"], deny)


def agents(directory: Path) -> None:
    """The agent runs (SQLite; the first two in JSONL too)."""
    scripts: dict[str, tuple[list[Any], dict[str, Any]]] = {
        "invoice": (
            [
                http_error(503, "busy", retry_after=0),
                tool_calls(("r1", "currency_rate", {"currency": "USD"}), text="Checking."),
                tool_calls(("o1", "record_invoice", GOOD)),
            ],
            {},
        ),
        "reflect": (
            [
                tool_calls(("o1", "record_invoice", NEGATIVE)),
                tool_calls(("s1", "submit", {})),
                tool_calls(("o2", "record_invoice", GOOD), ("s2", "submit", {})),
            ],
            {"definition": {"reflective": True}},
        ),
        "agent-paused": (
            [
                tool_calls(
                    ("r1", "currency_rate", {"currency": "USD"}), ("d1", "delete_row", {"row": 3})
                )
            ],
            {},
        ),
        "agent-ask-paused": (
            [
                tool_calls(
                    ("r1", "currency_rate", {"currency": "GBP"}), ("l1", "look", {"path": "x"})
                )
            ],
            {},
        ),
        "agent-blocked": (
            [
                tool_calls(("l1", "look", {"path": "/secret/a"}), ("u1", "nope", {})),
                tool_calls(("o1", "record_invoice", GOOD)),
            ],
            {},
        ),
        "agent-over": (
            [tool_calls(("r1", "currency_rate", {"currency": "USD"})), text("unused")],
            {"budget": Budget(max_model_calls=1)},
        ),
        "agent-tool-limit": (
            [
                tool_calls(("r1", "currency_rate", {"currency": "USD"})),
                tool_calls(("o1", "record_invoice", GOOD)),
            ],
            {"budget": Budget(max_calls_per_tool={"currency_rate": 0})},
        ),
        "agent-images": (
            [tool_calls(("o1", "record_invoice", GOOD))],
            {"images": [image(PNG)]},
        ),
        "agent-invalid": ([text("I cannot call tools.")], {}),
        "agent-capped": (
            [tool_calls(("r1", "currency_rate", {"currency": "USD"}))],
            {"definition": {"max_iterations_per_attempt": 1}},
        ),
        "agent-decided": (
            [
                tool_calls(("d1", "delete_row", {"row": 3}), ("d2", "delete_row", {"row": 4})),
                tool_calls(("o1", "record_invoice", GOOD)),
            ],
            {},
        ),
    }
    for name, (script, extra) in scripts.items():
        journals = [directory / "agents.db"]
        if name in ("invoice", "reflect"):
            journals.append(directory / "agents.jsonl")
        for journal in journals:
            with ScriptedServer(script) as server:
                anyio.run(functools.partial(run_agent, server.url, journal, name, **extra))
                if name == "agent-decided":
                    options = agent_options(server.url, journal, name)
                    # One decision per call: bfd8293 stops after a decision that leaves
                    # calls held, whatever else it was given.
                    first = functools.partial(resume_agent, approve=["d1"])
                    with contextlib.suppress(ApprovalPending):
                        anyio.run(first, name, agent(), options)
                    last = functools.partial(resume_agent, deny={"d2": "keep row 4"})
                    anyio.run(last, name, agent(), options)


def manifest(directory: Path) -> dict[str, Any]:
    """What bfd8293 makes of every session it wrote."""
    found: dict[str, Any] = {}
    for name in ("chat.db", "chat.jsonl", "agents.db", "agents.jsonl"):
        path = directory / name
        journal = SQLiteJournal(path) if name.endswith(".db") else JSONLJournal(path)
        try:
            for sid in journal.sessions():
                found[f"{name}/{sid}"] = _described(journal, sid, name.startswith("agents"))
        finally:
            journal.close()
    return found


def _described(journal: Any, sid: str, is_agent: bool) -> dict[str, Any]:
    """One session as bfd8293 reads it."""
    replayed = replay(journal, sid)
    if is_agent:
        session = load_agent_session(journal, sid)
        finish = session.finish
        outcome = None if finish is None else unstructure(finish.outcome)
        phase = session.state.phase.value
        usage = unstructure(session.usage)
    else:
        session = load_session(journal, sid)
        outcome = [None if t.reason is None else t.reason.value for t in session.turns]
        phase = session.phase.value
        usage = unstructure(session.usage)
    return {
        "kind": "agent" if is_agent else "chat",
        "transcript": render_transcript(session),
        "history": unstructure(session.history),
        "phase": phase,
        "outcome": outcome,
        "usage": usage,
        "approvals": [request.call.id for request in session.approvals],
        "replayed": type(replayed).__name__,
    }


def crash(directory: Path, scenario: str) -> None:
    """Run one session into DIR/crash.db until `boom` ends the process mid-call."""
    journal = directory / "crash.db"
    if scenario == "crash-chat":
        script = [tool_calls(("k1", "add", {"a": 1, "b": 1})), tool_calls(("k2", "boom", {"n": 1}))]
        with ScriptedServer(script) as server:
            anyio.run(lambda: chat(server.url, journal, "crash-chat", ["Crash"]))
    else:
        script = [
            tool_calls(("k1", "currency_rate", {"currency": "USD"})),
            tool_calls(("k2", "boom", {"n": 1})),
        ]
        with ScriptedServer(script) as server:
            anyio.run(lambda: run_agent(server.url, journal, "crash-agent"))
    raise SystemExit("the tool should have ended the process")


def main(directory: Path, scenario: str) -> None:
    """Write the scenario's journals (and, for all of them, the manifest)."""
    directory.mkdir(parents=True, exist_ok=True)
    if scenario.startswith("crash"):
        crash(directory, scenario)
        return
    chats(directory)
    agents(directory)
    (directory / "manifest.json").write_text(json.dumps(manifest(directory), indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "all")
