"""A sweep of the public API with bad input: every refusal is a `ToolreelError` with one line.

For each public function or constructor of `toolreel.core`, `toolreel.adapters`
and `toolreel.shell` that takes user input, a handful of bad values must raise
a `ToolreelError` subclass — never a raw foreign exception (httpx, sqlite3,
orjson, json, KeyError, AssertionError, ExceptionGroup, UnicodeDecodeError,
OSError) and never a bare ValueError. The one built-in allowed is Python's own
`TypeError` for a call of the wrong shape (a missing or unknown argument),
which the interpreter raises before toolreel runs; a value of the wrong type
given to an option is a `ConfigError` like any other bad value.

Cases that another branch makes pass are marked `xfail(strict=True)` with
the branch named: when it lands, the mark must go (a strict xfail that passes fails).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolreel.adapters import (
    EventModel,
    JSONLJournal,
    MemoryJournal,
    SQLiteJournal,
    Timeouts,
    codec_for,
    event_from_json,
    http_model,
    load_session,
)
from toolreel.core import (
    LoopConfig,
    PlainOutput,
    ToolFinished,
    ToolreelError,
    ToolSpec,
    initial_state,
    step,
)
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    Client,
    OutputTool,
    Recording,
    export_session,
    import_session,
    open_journal,
    replay,
    tool,
    verify,
)

Case = Callable[[Path], Any]


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def journal_with_session() -> MemoryJournal:
    """A journal holding session "s" (a config, no steps)."""
    journal = MemoryJournal()
    journal.begin("s", LoopConfig(model="m"))
    return journal


def not_json(folder: Path) -> Path:
    """A .jsonl file that is not JSON lines (nor UTF-8)."""
    path = folder / "notes.jsonl"
    path.write_bytes(b"\xff\xfe these are notes\n")
    return path


def not_sqlite(folder: Path) -> Path:
    """A .db file that is not SQLite."""
    path = folder / "notes.db"
    path.write_text("these are notes\n")
    return path


def empty(folder: Path) -> Path:
    """An empty file."""
    path = folder / "empty.jsonl"
    path.touch()
    return path


def client() -> Client:
    """A client whose model is a function (no network)."""
    return Client(AgentOptions(), model=EventModel(lambda request: []))


async def query_unopened() -> None:
    """`query` without `async with`."""
    await client().query("hi")


async def resume_unknown() -> None:
    """Resume a session the journal does not hold."""
    async with Client.resume("nope", AgentOptions(), model=EventModel(lambda r: [])):
        pass


SPEC = ToolSpec(name="a")
OUTPUT = PlainOutput(tool=ToolSpec(name="out"))

CORE: dict[str, Case] = {
    "LoopConfig(max_iterations=0)": lambda _: LoopConfig(max_iterations=0),
    "LoopConfig(max_iterations='5')": lambda _: LoopConfig(max_iterations="5"),  # type: ignore[arg-type]
    "LoopConfig(duplicate tools)": lambda _: LoopConfig(tools=(SPEC, SPEC)),
    "LoopConfig(tool_choice unknown)": lambda _: LoopConfig(tool_choice="mul"),
    "ToolSpec(name='')": lambda _: ToolSpec(name=""),
    "ToolSpec(name=None)": lambda _: ToolSpec(name=None),  # type: ignore[arg-type]
    "RetryPolicy(max_retries=-1)": lambda _: RetryPolicy(max_retries=-1),
    "RetryPolicy(multiplier=0.5)": lambda _: RetryPolicy(multiplier=0.5),
    "RetryPolicy(base_delay='1')": lambda _: RetryPolicy(base_delay="1"),  # type: ignore[arg-type]
    "PlainOutput(max_attempts=0)": lambda _: PlainOutput(tool=SPEC, max_attempts=0),
    "LoopConfig(structured, max_iterations=-1)": lambda _: LoopConfig(
        output=OUTPUT, max_iterations=-1
    ),
    "LoopConfig(structured, tool_choice='none')": lambda _: LoopConfig(
        output=OUTPUT, tool_choice="none"
    ),
    "LoopConfig(structured, duplicate tools)": lambda _: LoopConfig(
        output=OUTPUT, tools=(SPEC, SPEC)
    ),
    "step(event impossible now)": lambda _: step(
        initial_state(LoopConfig()), ToolFinished(call_id="x", output="", is_error=False)
    ),
}

ADAPTERS: dict[str, Case] = {
    "SQLiteJournal(a directory)": SQLiteJournal,
    "SQLiteJournal(a missing folder)": lambda tmp: SQLiteJournal(tmp / "gone" / "s.db"),
    "JSONLJournal(a missing folder)": lambda tmp: JSONLJournal(tmp / "gone" / "s.jsonl"),
    "SQLiteJournal(not SQLite)": lambda tmp: SQLiteJournal(not_sqlite(tmp)),
    "JSONLJournal(not JSON).sessions()": lambda tmp: JSONLJournal(not_json(tmp)).sessions(),
    "load_session(unknown)": lambda _: load_session(MemoryJournal(), "nope"),
    "event_from_json('{')": lambda _: event_from_json("{"),
    "Timeouts(read=-1)": lambda _: Timeouts(read=-1),
    "codec_for('mistral')": lambda _: codec_for("mistral"),
    "http_model('mistral')": lambda _: http_model("mistral"),
    "http_model(hosted, no key)": lambda _: http_model("anthropic", environ={}),
}

#: Cases other branches fix (journal constructors, sessions, serde, the driver, the runner).
ELSEWHERE: dict[str, tuple[Case, str]] = {}

SHELL: dict[str, Case] = {
    "tool(5)": lambda _: tool(5),  # type: ignore[call-overload]
    "tool(timeout=-1)": lambda _: tool(timeout=-1),
    "Client(a dict)": lambda _: Client({"model": "m"}),  # type: ignore[arg-type]
    "query() without async with": lambda _: anyio.run(query_unopened),
    "Client.resume(unknown session)": lambda _: anyio.run(resume_unknown),
    "AgentOptions(max_tool_iterations=0)": lambda _: AgentOptions(max_tool_iterations=0),
    "AgentOptions(max_tool_iterations='5')": lambda _: AgentOptions(max_tool_iterations="5"),  # type: ignore[arg-type]
    "AgentOptions(provider='mistral')": lambda _: AgentOptions(provider="mistral"),
    "AgentOptions(model='', base_url=...)": lambda _: AgentOptions(base_url="http://127.0.0.1:1"),
    "AgentOptions(base_url='localhost')": lambda _: AgentOptions(base_url="localhost", model="m"),
    "AgentOptions(temperature=3)": lambda _: AgentOptions(temperature=3),
    "AgentOptions(timeout=0)": lambda _: AgentOptions(timeout=0),
    "AgentOptions(tools=[1])": lambda _: AgentOptions(tools=[1]),  # type: ignore[list-item]
    "AgentOptions(tool_choice='mul')": lambda _: AgentOptions(tools=[add], tool_choice="mul"),
    "AgentOptions(hooks={'nope': ...})": lambda _: AgentOptions(hooks={"nope": [print]}),
    "AgentOptions(session_id='')": lambda _: AgentOptions(session_id=""),
    "AgentOptions(journal=3)": lambda _: AgentOptions(journal=3),  # type: ignore[arg-type]
    "Client(duplicate tools)": lambda _: Client(AgentOptions(tools=[add, add])),
    "AgentDefinition(max_attempts=0)": lambda _: AgentDefinition(
        build_prompt=str, output=OutputTool.from_schema({}), max_attempts=0
    ),
    "OutputTool.of(int)": lambda _: OutputTool.of(int),
    "OutputTool.from_schema('x')": lambda _: OutputTool.from_schema("x"),  # type: ignore[arg-type]
    "open_journal(a directory)": open_journal,
    "open_journal(a missing folder)": lambda tmp: open_journal(tmp / "gone" / "s.db"),
    "open_journal(not SQLite)": lambda tmp: open_journal(not_sqlite(tmp)),
    "open_journal(not JSON)": lambda tmp: open_journal(not_json(tmp)),
    "open_journal(42)": lambda _: open_journal(42),  # type: ignore[arg-type]
    "Recording.from_file(missing)": lambda tmp: Recording.from_file(tmp / "none.jsonl"),
    "Recording.from_file(not JSON)": lambda tmp: Recording.from_file(not_json(tmp)),
    "Recording.from_file(empty)": lambda tmp: Recording.from_file(empty(tmp)),
    "Recording(unknown session)": lambda _: Recording(journal_with_session(), "nope"),
    "replay(unknown session)": lambda _: replay(journal_with_session(), "nope"),
    "verify(unknown session)": lambda _: verify(journal_with_session(), "nope"),
    "export_session(unknown session)": lambda tmp: export_session(
        journal_with_session(), "nope", tmp / "o.jsonl"
    ),
    "export_session(not .jsonl)": lambda tmp: export_session(
        journal_with_session(), "s", tmp / "o.txt"
    ),
    "import_session(missing)": lambda tmp: import_session(tmp / "none.jsonl", MemoryJournal()),
    "import_session(not JSON)": lambda tmp: import_session(not_json(tmp), MemoryJournal()),
    "import_session(unknown session)": lambda tmp: import_session(
        export_session(journal_with_session(), "s", tmp / "o.jsonl"), MemoryJournal(), "nope"
    ),
}


def cases() -> list[Any]:
    """Every case, the ones other branches fix marked as strict expected failures."""
    found = [pytest.param(case, id=name) for name, case in {**CORE, **ADAPTERS, **SHELL}.items()]
    for name, (case, branch) in ELSEWHERE.items():
        mark = pytest.mark.xfail(strict=True, reason=f"fixed on the {branch}")
        found.append(pytest.param(case, id=name, marks=mark))
    return found


@pytest.mark.parametrize("case", cases())
def test_bad_input_raises_a_one_line_toolreel_error(case: Case, tmp_path: Path) -> None:
    try:
        case(tmp_path)
    except ToolreelError as exc:
        assert str(exc) and "\n" not in str(exc), repr(exc)
    except BaseException as exc:  # anything else is a leak
        pytest.fail(f"raised {type(exc).__module__}.{type(exc).__qualname__}: {exc}")
    else:
        pytest.fail("accepted the bad input")


def test_a_call_of_the_wrong_shape_is_pythons_type_error() -> None:
    with pytest.raises(TypeError):
        AgentOptions(modle="m")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        open_journal()  # type: ignore[call-arg]
