"""Bad input is refused where it is given, with one `ToolreelError` that says what is allowed.

Options are checked as they are built (and on `attrs.evolve`): a `ConfigError`
naming the field, the value and what the field accepts. A journal path that
cannot be a journal is a `JournalError` naming the path; a recording or a
replay of a session that is not there is `SessionNotFound`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import EventModel, MemoryJournal, SQLiteJournal
from toolreel.core import (
    ConfigError,
    LoopConfig,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    OutputTool,
    Recording,
    execute_agent,
    export_session,
    open_journal,
    replay,
    run,
    tool,
    verify,
)
from toolreel.shell.errors import JournalCorrupt, JournalError, JournalUnavailable, SessionNotFound


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@attrs.frozen
class Invoice:
    total: float


# --- AgentOptions ---------------------------------------------------------------------------

BAD_OPTIONS: list[tuple[str, Any, str]] = [
    ("provider", "mistral", "one of anthropic, gemini, ollama, openai"),
    ("provider", None, "one of anthropic"),
    ("model", 5, "a model name (str), not an int"),
    ("base_url", "localhost:11434", "an http:// or https:// URL with a host"),
    ("base_url", "ftp://example.com", "an http:// or https:// URL"),
    ("base_url", "http://", "an http:// or https:// URL with a host"),
    ("base_url", "http://host:port/v1", "an http:// or https:// URL"),
    ("max_tool_iterations", 0, "an int >= 1"),
    ("max_tool_iterations", -3, "an int >= 1"),
    ("max_tool_iterations", "5", "an int >= 1, not a str"),
    ("max_tool_iterations", True, "an int >= 1, not a bool"),
    ("max_tool_iterations", 2.5, "an int >= 1, not a float"),
    ("max_tokens", 0, "an int >= 1 or None"),
    ("temperature", -0.1, "a finite number in [0, 2] or None"),
    ("temperature", 2.5, "a finite number in [0, 2] or None"),
    ("temperature", math.nan, "not infinity or NaN"),
    ("temperature", "hot", "not a str"),
    ("timeout", 0, "a finite number > 0"),
    ("timeout", math.inf, "not infinity or NaN"),
    ("tool_timeout", -1.0, "a finite number > 0"),
    ("max_concurrent_tools", 0, "an int >= 1 or None"),
    ("on_max_iterations", "explode", "one of 'stop', 'raise', 'final_answer'"),
    ("tool_choice", "multiply", "one of 'auto', 'none', 'required', 'add'"),
    ("tool_choice", None, "'auto', 'none', 'required' or a tool name"),
    ("tools", add, "a list or tuple of a Tool or a function, not a Tool"),
    ("tools", "add", "a list or tuple of a Tool or a function, not a str"),
    ("hooks", [print], "a mapping, not a list"),
    ("hooks", {"before_tool": [print]}, "hook point keys are 'pre_tool_use'"),
    ("on_tool_call", "print", "a callable or None, not a str"),
    ("on_finish", 3, "a callable or None, not an int"),
    ("journal", "", "a file path, not an empty str"),
    ("journal", 42, "None, a path (.db for SQLite, .jsonl for JSON lines) or a Journal"),
    ("session_id", "", "a non-empty str without control characters"),
    ("session_id", "a\nb", "a non-empty str without control characters"),
    ("session_id", 7, "a non-empty str or None, not an int"),
    ("retry", {"max_retries": 1}, "a RetryPolicy, not a dict"),
    ("stream", "no", "a bool, not a str"),
    ("auto_execute_tools", 1, "a bool, not an int"),
    ("system_prompt", ["be brief"], "a str or None, not a list"),
]


@pytest.mark.parametrize(("field", "value", "allowed"), BAD_OPTIONS)
def test_a_bad_option_is_refused_naming_field_value_and_what_is_allowed(
    field: str, value: Any, allowed: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        AgentOptions(**{"tools": [add], field: value})
    assert raised.value.field.partition("[")[0] == field
    message = str(raised.value)
    assert message.startswith(f"{raised.value.field}=")
    assert " is not allowed: " in message
    assert allowed in message
    assert "\n" not in message


@pytest.mark.parametrize(("field", "value", "allowed"), BAD_OPTIONS[:12])
def test_evolve_checks_the_new_value_too(field: str, value: Any, allowed: str) -> None:
    options = AgentOptions(tools=[add])
    with pytest.raises(ConfigError, match=allowed.replace("(", r"\(").replace(")", r"\)")):
        attrs.evolve(options, **{field: value})


def test_assignment_checks_the_value() -> None:
    options = AgentOptions()
    with pytest.raises(ConfigError, match="max_tool_iterations=0 is not allowed"):
        options.max_tool_iterations = 0


def test_a_bad_tool_in_the_list_is_named_by_its_index() -> None:
    with pytest.raises(ConfigError) as raised:
        AgentOptions(tools=[add, "multiply"])
    assert str(raised.value) == (
        "tools[1]='multiply' is not allowed: a Tool or a function, not a str"
    )


def test_a_hook_that_is_not_callable_is_named_by_its_point() -> None:
    with pytest.raises(ConfigError, match=r"hooks\['pre_tool_use'\]='gate' is not allowed"):
        AgentOptions(hooks={"pre_tool_use": ["gate"]})


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({"base_url": "http://127.0.0.1:11434/v1"}, "the server at http://127.0.0.1:11434/v1"),
        ({"provider": "ollama"}, "'ollama'"),
    ],
)
def test_an_empty_model_is_refused_where_there_is_no_default(
    options: dict[str, Any], where: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        AgentOptions(**options)
    assert (
        str(raised.value) == f"model='' is not allowed: a model name: {where} has no default model"
    )


def test_good_options_are_accepted() -> None:
    def on_call(*args: Any) -> None:
        pass

    options = AgentOptions(
        provider="anthropic",  # a hosted provider: its default model applies
        tools=[add, lambda x: x],
        tool_choice="add",
        max_tool_iterations=1,
        max_tokens=10,
        temperature=0,
        timeout=0.5,
        on_max_iterations="final_answer",
        max_concurrent_tools=2,
        hooks={"pre_tool_use": on_call, "PostToolUse": [on_call]},
        journal=Path("x.db"),
        session_id="s-1",
        on_tool_call=on_call,
    )
    assert attrs.evolve(options, base_url="https://example.com/v1", model="m").model == "m"
    assert AgentOptions(journal=MemoryJournal()).journal is not None


# --- agents ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("max_attempts", 0, "an int >= 1"),
        ("max_iterations_per_attempt", -1, "an int >= 1"),
        ("max_attempts", "3", "an int >= 1, not a str"),
        ("tool_choice", "none", "'auto' or 'required'"),
        ("build_prompt", "Extract: {text}", "a callable, not a str"),
        ("output", Invoice, "an OutputTool"),
        ("helpers", add, "a list or tuple of a Tool or a function"),
        ("validators", [None], "a callable, not a NoneType"),
        ("on_attempt_start", 1, "a callable or None"),
    ],
)
def test_a_bad_agent_definition_is_refused(field: str, value: Any, allowed: str) -> None:
    given: dict[str, Any] = {"build_prompt": str, "output": OutputTool.of(Invoice)}
    with pytest.raises(ConfigError) as raised:
        AgentDefinition(**{**given, field: value})
    assert raised.value.field.partition("[")[0] == field
    assert allowed in str(raised.value)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: OutputTool.of(int), "output_type=<class 'int'> is not allowed"),
        (lambda: OutputTool.of(Invoice, name=""), "name='' is not allowed: a non-empty str"),
        (lambda: OutputTool.from_schema("{}"), "schema='{}' is not allowed: a JSON Schema"),
        (
            lambda: OutputTool.from_schema({"type": "array"}),
            "of type 'object'",
        ),
        (
            lambda: OutputTool.of(Invoice, reflection_handler="show"),
            "reflection_handler='show' is not allowed: a callable or None",
        ),
    ],
)
def test_a_bad_output_tool_is_refused(build: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


# --- journal paths --------------------------------------------------------------------------


def bad_paths(tmp_path: Path) -> dict[str, tuple[Path, type[JournalError]]]:
    """Paths that cannot be journals, and the error each is."""
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("hello\n")
    not_json = tmp_path / "notes.jsonl"
    not_json.write_text("hello\n")
    folder = tmp_path / "folder.db"
    folder.mkdir()
    return {
        "a directory": (folder, JournalUnavailable),
        "a missing folder (SQLite)": (tmp_path / "missing" / "s.db", JournalUnavailable),
        "a missing folder (JSONL)": (tmp_path / "missing" / "s.jsonl", JournalUnavailable),
        "a .db that is not SQLite": (not_sqlite, JournalCorrupt),
        "a .jsonl that is not JSON": (not_json, JournalCorrupt),
    }


@pytest.mark.parametrize(
    "case",
    [
        "a directory",
        "a missing folder (SQLite)",
        "a missing folder (JSONL)",
        "a .db that is not SQLite",
        "a .jsonl that is not JSON",
    ],
)
def test_a_path_that_cannot_be_a_journal_is_a_journal_error_naming_it(
    tmp_path: Path, case: str
) -> None:
    path, kind = bad_paths(tmp_path)[case]
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(kind) as raised:
        open_journal(path)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)
    assert (path.read_bytes() if path.is_file() else None) == before  # left as it was


def test_an_unwritable_journal_is_unavailable(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        probe = folder / "probe"
        try:
            probe.touch()
        except PermissionError:
            pass
        else:
            pytest.skip("running as a user who may write anywhere")
        with pytest.raises(JournalUnavailable, match="locked"):
            open_journal(folder / "s.jsonl")
    finally:
        folder.chmod(0o700)


def test_open_journal_refuses_what_is_not_a_journal() -> None:
    with pytest.raises(ConfigError, match="journal=42 is not allowed"):
        open_journal(42)  # type: ignore[arg-type]


# --- recordings and replays -----------------------------------------------------------------


def one_session(journal: Any) -> None:
    """A journal holding session "s" with a config and no steps."""
    journal.begin("s", LoopConfig(model="m"))


def test_a_recording_reads_a_sqlite_journal_too(tmp_path: Path) -> None:
    journal = SQLiteJournal(tmp_path / "sessions.db")
    one_session(journal)
    journal.close()
    assert Recording.from_file(tmp_path / "sessions.db", session_id="s").session_id == "s"


def test_a_recording_of_a_missing_damaged_or_empty_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(JournalUnavailable, match=r"no recording at .*missing.jsonl"):
        Recording.from_file(tmp_path / "missing.jsonl")
    assert not (tmp_path / "missing.jsonl").exists()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"\xff\xfe not json\n")
    with pytest.raises(JournalCorrupt, match=r"damaged.jsonl is damaged"):
        Recording.from_file(damaged)
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    with pytest.raises(ConfigError, match=r"session_id=None is not allowed: .* holds none"):
        Recording.from_file(empty)


def test_a_recording_of_an_unknown_session_is_session_not_found(tmp_path: Path) -> None:
    journal = MemoryJournal()
    one_session(journal)
    path = export_session(journal, "s", tmp_path / "s.jsonl")
    with pytest.raises(SessionNotFound, match="no session 'nope' in"):
        Recording.from_file(path, session_id="nope")


def test_replay_and_verify_of_an_unknown_session_are_session_not_found() -> None:
    journal = MemoryJournal()
    one_session(journal)
    for check in (replay, verify):
        with pytest.raises(SessionNotFound, match="no session 'nope'"):
            check(journal, "nope")


def test_a_damaged_sqlite_journal_is_corrupt_not_a_raw_sqlite_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    journal = SQLiteJournal(path)
    one_session(journal)
    journal.close()
    data = bytearray(path.read_bytes())
    data[100:] = b"\xa5" * (len(data) - 100)  # every page after the header scrambled
    path.write_bytes(bytes(data))
    with pytest.raises(JournalCorrupt, match=r"s.db is damaged"):
        open_journal(path)


def test_an_empty_model_for_a_hosted_provider_asks_for_its_default() -> None:
    seen: list[str] = []

    def model(request: ModelRequest) -> list[object]:
        seen.append(request.model)
        return [TextDelta(text="hi"), ModelResponded()]

    options = AgentOptions(provider="anthropic")
    assert options.model_name == "claude-3-5-haiku-latest"
    anyio.run(lambda: run("hello", options, model=EventModel(model)))
    assert seen == ["claude-3-5-haiku-latest"]


def test_an_agent_with_an_empty_model_asks_for_the_providers_default_too() -> None:
    seen: list[str] = []

    @attrs.frozen
    class Answer:
        value: int

    def model(request: ModelRequest) -> list[object]:
        seen.append(request.model)
        return [
            ToolCallStarted(index=0, call_id="c1", name="answer"),
            ToolCallArgumentsDelta(index=0, fragment='{"value": 42}'),
            ModelResponded(finish_reason="tool_calls"),
        ]

    definition = AgentDefinition(
        build_prompt=lambda text: text, output=OutputTool.of(Answer, name="answer")
    )
    options = AgentOptions(provider="gemini")
    result = anyio.run(
        lambda: execute_agent(definition, "the answer?", options, model=EventModel(model))
    )
    assert isinstance(result, AgentSuccess) and result.output == Answer(42)
    assert seen == ["gemini-2.5-flash"]
