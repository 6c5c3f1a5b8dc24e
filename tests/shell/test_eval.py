"""`evaluate` reruns recorded sessions under new options and checks each rerun.

End to end over HTTP on 127.0.0.1 on a SQLite journal: the sessions were recorded
with the scripted "arith-a"; the new model "arith-c" answers the odd-numbered ones
otherwise (tests/shell/eval_models.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from eval_models import GatedServer, numbered, prompt, record_sessions
from whatif_tools import RUNS, options, record

from toolreel.adapters import Session, SessionOrigin, SQLiteJournal, load_session
from toolreel.shell import (
    AgentDefinition,
    AgentSuccess,
    Connection,
    OutputTool,
    Verdict,
    evaluate,
    execute_agent,
    replay,
)
from toolreel.shell import checks as ck
from toolreel.testing import ScriptedServer, tool_calls

SESSIONS = 20


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(numbered) as running:
        yield running


@pytest.fixture
def journal(server: ScriptedServer, tmp_path: Path) -> Iterator[SQLiteJournal]:
    store = SQLiteJournal(tmp_path / "sessions.db")
    record_sessions(server, store, SESSIONS)
    RUNS.clear()
    yield store
    store.close()


def evaluate_now(journal: Any, server: ScriptedServer, *sessions: str, **kwargs: Any) -> Any:
    """Evaluate with arith-c (tools as the recording declared them), the sessions given or all."""
    opts = kwargs.pop("options", None) or options(server, None, model="arith-c", tools=[])
    ids = list(sessions) or None
    return anyio.run(lambda: evaluate(journal, ids, opts, **kwargs))


def odd_ones(count: int) -> list[str]:
    """The sessions arith-c answers otherwise."""
    return [f"s{number:02d}" for number in range(1, count + 1, 2)]


def test_an_eval_reruns_every_recorded_session_and_checks_each(
    server: ScriptedServer, journal: SQLiteJournal
) -> None:
    def answered_a_number(original: Session, candidate: Session) -> float:
        return 1.0 if candidate.turns[-1].text.rstrip(".").split()[-1].isdigit() else 0.0

    report = evaluate_now(
        journal, server, checks=[ck.same_outcome(), ck.same_answer(), answered_a_number]
    )

    assert [case.session_id for case in report.cases] == [f"s{n:02d}" for n in range(1, 21)]
    assert report.checks == ("same outcome", "same answer", "answered_a_number")
    assert report.model == "arith-c" and report.name == "eval-arith-c/"
    failed = [case.session_id for case in report.cases if not case.passed]
    assert failed == odd_ones(SESSIONS)
    assert (report.passed, report.failed, report.pass_rate) == (10, 10, 0.5)
    odd = report.cases[0]
    assert dict(odd.verdicts)["same outcome"] == Verdict(passed=True, reason="completed")
    assert dict(odd.verdicts)["answered_a_number"] == Verdict(passed=False, score=0.0)
    assert odd.failures()[0].startswith("same answer: answer 'could not compute: no recording")
    assert odd.candidate_id == "eval-arith-c/s01" and not odd.resumed
    assert odd.seconds is not None and odd.seconds > 0
    assert odd.tool_calls == (2, 2) and odd.tokens is not None
    assert RUNS == []  # recorded tools: nothing ran
    origin = load_session(journal, "eval-arith-c/s01").origin
    assert origin == SessionOrigin(
        kind="rerun", session_id="s01", note="eval eval-arith-c/: model arith-c, tools recorded"
    )
    assert isinstance(replay(journal, "eval-arith-c/s02"), Session)


def test_an_eval_run_again_reruns_nothing_and_checks_again(
    server: ScriptedServer, journal: SQLiteJournal
) -> None:
    first = evaluate_now(journal, server, "s01", "s02", "s03", "s01")  # each session once
    asked = len(server.requests)
    again = evaluate_now(journal, server, "s01", "s02", "s03", "s04", checks=[ck.same_answer()])

    prompts = {request["messages"][0]["content"] for request in server.requests[asked:]}
    assert prompts == {prompt(4)}  # only s04 was asked: s01-s03 were done
    assert [case.resumed for case in again.cases] == [True, True, True, False]
    assert [case.passed for case in first.cases] == [True, True, True]  # outcome alone
    assert [case.passed for case in again.cases] == [False, True, False, True]
    assert again.cases[0].seconds is None


def test_an_unknown_session_a_crashing_check_and_an_agent_run_are_reported_per_session(
    server: ScriptedServer, journal: SQLiteJournal
) -> None:
    with ScriptedServer([tool_calls(("c1", "output", {"value": 3}))]) as agent_server:
        connection = Connection(base_url=agent_server.url, model="agent", api_key="none")
        made = anyio.run(
            lambda: execute_agent(
                _agent(), "three", connection, journal=journal, session_id="agent-run"
            )
        )
    assert isinstance(made, AgentSuccess)

    def crashes(original: Session, candidate: Session) -> bool:
        raise KeyError("no such field")

    report = evaluate_now(
        journal, server, "s02", "nope", "agent-run", checks=[crashes, ck.same_answer()]
    )

    ok, unknown, agent = report.cases
    assert dict(ok.verdicts)["crashes"] == Verdict(
        passed=False, reason="the check raised KeyError: 'no such field'"
    )
    assert dict(ok.verdicts)["same answer"].passed
    assert unknown.error == "no session 'nope' in the journal"
    assert agent.error == (
        "session 'agent-run' is an agent run: give its definition (agent=, --agent MODULE:ATTR) "
        "to evaluate it"
    )
    assert report.passed == 0 and report.failed == 3


def _agent() -> Any:
    schema = {"type": "object", "properties": {"value": {"type": "integer"}}}
    return AgentDefinition(build_prompt=str, output=OutputTool.from_schema(schema))


def test_sessions_are_rerun_concurrently_within_the_limit(tmp_path: Path) -> None:
    with GatedServer(numbered) as server:
        store = SQLiteJournal(tmp_path / "sessions.db")
        record_sessions(server, store, 7)
        server.gate, server.most = 3, 0
        report = evaluate_now(store, server, concurrency=3)
        store.close()
    assert report.passed == 7  # same outcome, the default check
    assert server.most == 3


def test_without_sessions_named_an_eval_leaves_out_forks_and_reruns(
    server: ScriptedServer, journal: SQLiteJournal
) -> None:
    evaluate_now(journal, server, "s01")
    report = evaluate_now(journal, server, into_prefix="again/")
    assert len(report.cases) == SESSIONS  # not eval-arith-c/s01, a rerun
    assert report.cases[0].candidate_id == "again/s01"


def test_a_candidate_there_but_not_a_rerun_of_the_session_or_made_otherwise_is_reported(
    server: ScriptedServer, journal: SQLiteJournal
) -> None:
    record(options(server, journal, session_id="eval-arith-c/s01"), "What is 1+1 then times 1?")
    report = evaluate_now(journal, server, "s01")
    assert report.cases[0].error == "session 'eval-arith-c/s01' exists and is not a rerun of s01"
    evaluate_now(journal, server, "s02")
    other_model = options(server, None, model="arith-b", tools=[])
    report = evaluate_now(journal, server, "s02", options=other_model, into_prefix="eval-arith-c/")
    assert report.cases[0].error == (
        "eval-arith-c/s02 was made with another model or system prompt ('arith-c'): "
        "evaluate under another prefix"
    )


def test_the_report_as_markdown_and_html_escapes_what_sessions_hold(
    server: ScriptedServer, tmp_path: Path
) -> None:
    store = SQLiteJournal(tmp_path / "odd.db")
    record(options(server, store, session_id="a|<b>"), prompt(1))
    report = evaluate_now(store, server, checks=[ck.same_answer(), ck.contains("<20>")])
    store.close()
    markdown = report.markdown()
    assert "| a\\|&lt;b&gt; | FAIL | FAIL |" in markdown
    assert "# Evaluation eval-arith-c/" in markdown
    assert "0/1 sessions passed (0%)" in markdown
    assert "- **a\\|&lt;b&gt;**: contains '&lt;20&gt;': answer 'could not compute" in markdown
    page = report.html()
    assert "<td>a|&lt;b&gt;</td>" in page and "a|<b>" not in page
    assert '<td class="FAIL">FAIL</td>' in page


def test_the_options_may_be_a_function_of_the_originals_config(
    server: ScriptedServer, journal: SQLiteJournal
) -> None:
    seen = []

    def per_session(config: Any) -> Any:
        seen.append(config.model)
        return options(server, None, model="arith-c", tools=[], system_prompt="be brief")

    report = evaluate_now(journal, server, "s02", options=per_session, into_prefix="sys/")
    assert seen == ["arith-a"]
    assert report.cases[0].candidate is not None
    assert report.cases[0].candidate.config.system_prompt == "be brief"
    with pytest.raises(Exception, match="into_prefix"):
        evaluate_now(journal, server, "s02", options=per_session)


def test_a_strict_rerun_that_stops_is_that_sessions_error_and_stays_unfinished(
    server: ScriptedServer, journal: SQLiteJournal
) -> None:
    first = evaluate_now(journal, server, "s01", "s02", tools="strict")
    stopped, done = first.cases
    assert stopped.error is not None
    assert stopped.error.startswith("the rerun stopped: no recording has a call of multiply")
    assert done.passed
    again = evaluate_now(journal, server, "s01", "s02", tools="strict")
    assert again.cases[0].error == (
        "eval-arith-c/s01 did not finish (an earlier eval was interrupted, or a strict rerun "
        "stopped): evaluate again under another prefix"
    )
    assert again.cases[1].resumed and again.cases[1].passed
