"""Every program in examples/ runs as a user would run it: offline, and prints what it says.

Each runs as a subprocess (`python examples/NAME.py`) in a temporary folder, with no
provider key and no TOOLREEL_* setting in its environment, so it takes its offline
stand-in model; the lines checked are the ones its guide quotes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: What each example prints (lines that must appear in its output, in this order).
PRINTS: dict[str, list[str]] = {
    "first_agent": [
        '-> multiply({"a": 7, "b": 8})',
        "<- 56.0",
        '-> add({"a": 56, "b": 5})',
        "The answer is 61.",
        "[completed]",
        "replayed ",
        "## Turn 1",
    ],
    "typed_tools": [
        "Get the weather forecast for a place and a day.",
        '{"type": "string", "format": "date", "description": "The day to forecast."}',
        "tool: Invalid arguments for tool weather: argument 'loc': String should have at most 2 "
        "characters, got 'NLD' @ $.country; argument 'day': expected an ISO 8601 date, got "
        "'June'. Fix the arguments and call the tool again.",
        "tool: Delft (NL), Sunday: sunny, 21 °C",
        "The forecast: Delft (NL), Sunday: sunny, 21 °C",
    ],
    "local_model": ['tool call: get_weather {"city": "Paris"}', "It is sunny in Paris, 21 °C."],
    "structured_output": ["INV-2024-117 610.0 USD = 561.2 EUR", "2 attempts, 3 iterations"],
    "browser_chat": [
        "session ",
        "tool_call    {'id': 'call_1_1', 'name': 'add', 'arguments': {'a': 25, 'b': 17}}",
        "done         {'reason': 'completed', 'max_turns_reached': False, "
        "'text': 'The answer is 42.'}",
    ],
    "agui_frontend": [
        "RUN_STARTED        thread thread-1, run run-1",
        "TOOL_CALL_START    multiply (call_1_1)",
        'TOOL_CALL_ARGS     {"a"',  # one per fragment, as the model writes them
        "TOOL_CALL_ARGS     : 7,",
        'TOOL_CALL_ARGS      "b"',
        "TOOL_CALL_ARGS     : 8}",
        "RUN_FINISHED       interrupt: call_1_1 (tool_approval)",
        "RUN_STARTED        thread thread-1, run run-2",
        "TOOL_CALL_RESULT   56.0",
        "RUN_FINISHED       completed: The answer is 56.",
    ],
    "budgets": [
        "so far: 15 tokens, $0.000005",
        "so far: 30 tokens, $0.000009",
        "over_budget over budget: tool_calls limit 1 per turn, used 2",
    ],
    "images": [
        "I have seen 2 images: your photo and the screenshot.",
        "[image image/png, 16 bytes]",
    ],
    "mcp_tools": ["multiply -> 56.0", "add -> 61.0", "The answer is 61."],
    "mcp_server": [
        "tools: chat",
        "progress 1: round 1: multiply",
        "progress 2: round 2: add",
        "answer: The answer is 61.",
        "replayed: identical",
    ],
    "a2a_server": [
        "skills: chat, add, multiply",
        "state: TASK_STATE_WORKING",
        "state: TASK_STATE_COMPLETED",
        "answer: The answer is 61.",
        "tasks/get: TASK_STATE_COMPLETED (turn 0 of the session)",
    ],
    "replay_and_test": [
        "1. recorded: The answer is 42.",
        "2. replayed: identical, 2 messages",
        "3. with another system prompt, step 1 differs:",
        "  -Be brief.",
        "  +Be verbose.",
        "4. rerun offline: the same requests",
        "model call 1 differs from the recording:",
    ],
    "crash_safe": [
        "the first process died with exit code 9",
        "resumed: About the payment: interrupted; outcome unknown",
        "→ charge_card",
        "← error:",
    ],
    "scaling": [
        "sessions in the journal: worker0-0, worker0-1, worker1-0, worker1-1, worker2-0, worker2-1",
        "second writer refused: session 'worker0-0' is in use by pid",
    ],
    "traces": ["The answer is 61.", "invoke_agent", "  chat calculator", "  execute_tool add"],
    "security": [
        "no token                     401  this server needs its access token",
        "a wrong token                401  the access token is wrong",
        "a rebinding host name        400  the host 'rebind.example:8000' is not served here",
        "another site's page          403  a request from another site is refused",
        "a form, not JSON             403  POST takes a JSON body",
        "the token, JSON, no Origin   200  a chat streams",
    ],
    "evaluate": [
        "session        same outcome  same answer  quotes_a_price  tokens        cost",
        "q01-lamp-EUR   pass          pass         pass            45 → 45 (+0)  "
        "$0.000013 → $0.000225 (+$0.000211)  2 → 2 (+0)",
        "q03-lamp-JPY   pass          FAIL         FAIL",
        "q03-lamp-JPY: same answer: answer 'Sorry, I could not convert the price of the lamp.', "
        "not 'The lamp costs 6000.0 JPY.'",
        "q03-lamp-JPY: quotes_a_price",
        "15/20 sessions passed (75%); candidates eval-new/* (model new, tools recorded)",
        "pass rate 0.75: under --min-pass 0.9 the command would exit 1",
    ],
    "what_if": [
        "1. original: The lamp costs 36.0 EUR.",
        "2. forked: The lamp costs 45.0 EUR.",
        "sessions original and forked part at step 8, turn 1",
        "    price result changed:",
        "      +50.0",
        "3. rerun: I could not convert the price: no recording has a call of convert",
        "   1 call served from the recording, 1 unmatched",
        '      +  "currency": "eur",',
    ],
    "reducer": [
        "1. CallModel with 1 message",
        '2. RunTool add {"a": 25, "b": 17}',
        "4. completed '25 plus 17 is 42.' 1 round",
    ],
}


def offline_environment() -> dict[str, str]:
    """This environment without provider keys or toolreel settings: the stand-ins answer."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and not key.startswith("TOOLREEL_")
    }


def run_example(name: str, *arguments: str, cwd: Path) -> str:
    """Run examples/NAME.py; its stdout (the test fails with its stderr if it fails)."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *arguments],
        cwd=cwd,
        env=offline_environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_prints_in_order(out: str, expected: list[str]) -> None:
    """Each expected piece is in `out`, after the one before it."""
    position = 0
    for piece in expected:
        found = out.find(piece, position)
        assert found >= 0, f"{piece!r} not printed (after position {position}) in:\n{out}"
        position = found + len(piece)


def test_every_example_is_run_here() -> None:
    examples = {path.stem for path in EXAMPLES.glob("*.py")}
    assert examples == set(PRINTS) | {"approval"}
    assert len(examples) >= 12


@pytest.mark.parametrize("name", sorted(PRINTS))
def test_example_runs_offline_and_prints_what_its_guide_says(name: str, tmp_path: Path) -> None:
    assert_prints_in_order(run_example(name, cwd=tmp_path), PRINTS[name])


def test_approval_example_pauses_then_another_process_approves(tmp_path: Path) -> None:
    asked = run_example("approval", cwd=tmp_path)
    assert 'waiting for approval: delete_file {"path": "old.log"}' in asked
    assert (tmp_path / "old.log").exists()  # nothing ran before the approval
    command = asked.splitlines()[-1].split()
    assert command[-2:] == ["yes", "call_1"]
    assert run_example("approval", "yes", "call_1", cwd=tmp_path) == "Done: old.log is gone.\n"
    assert not (tmp_path / "old.log").exists()


def test_approval_example_denied_keeps_the_file(tmp_path: Path) -> None:
    run_example("approval", cwd=tmp_path)
    denied = run_example("approval", "no", "call_1", cwd=tmp_path)
    assert denied == "Could not delete it: keep it: it is the only copy\n"
    assert (tmp_path / "old.log").exists()
