"""`transcript_snapshot` in a user's test suite (pytester): syrupy's update flow, hide rules,
retries in the transcript, and a failing snapshot's transcript diff shown first."""

from __future__ import annotations

from pathlib import Path

import pytest

USER = """
import anyio
import attrs

from toolreel.adapters import load_session
from toolreel.core.policies import RetryPolicy
from toolreel.shell import Client
from toolreel.testing import http_error, text

ANSWER = {answer!r}
USAGE = {usage!r}


def chat(scripted_model, replies, path):
    model = scripted_model(replies, http=False)
    options = model.options(journal=str(path / "chat.jsonl"), session_id="chat",
                            retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.01))

    async def main():
        async with Client(options, model=model.model) as client:
            await client.query("What is 2 + 3?")
            await client.wait()
            return load_session(client.journal, "chat")

    return anyio.run(main)


def test_answer(scripted_model, transcript_snapshot, tmp_path):
    session = chat(scripted_model, [attrs.evolve(text(ANSWER), usage=USAGE)], tmp_path)
    assert session == transcript_snapshot.hide("usage")


def test_retried(scripted_model, transcript_snapshot, tmp_path):
    session = chat(scripted_model, [http_error(429, "slow down"), text("5")], tmp_path)
    assert session == transcript_snapshot
"""


def user_suite(pytester: pytest.Pytester, answer: str = "5", usage=(10, 5)) -> None:
    """Write (or rewrite) the user's test module."""
    pytester.makepyfile(test_user=USER.format(answer=answer, usage=usage))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run the user's suite."""
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def stored(pytester: pytest.Pytester) -> str:
    """The user's stored snapshots."""
    return Path(pytester.path, "__snapshots__", "test_user.ambr").read_text(encoding="utf-8")


def test_snapshot_update_writes_then_refreshes_a_transcript(pytester: pytest.Pytester) -> None:
    user_suite(pytester)
    run(pytester, "--snapshot-update").assert_outcomes(passed=2)
    assert "**Assistant:** 5" in stored(pytester)
    user_suite(pytester, answer="five")
    run(pytester).assert_outcomes(passed=1, failed=1)
    run(pytester, "--snapshot-update").assert_outcomes(passed=2)
    assert "**Assistant:** five" in stored(pytester)
    run(pytester).assert_outcomes(passed=2)


def test_hidden_usage_is_left_out_so_new_token_counts_still_match(
    pytester: pytest.Pytester,
) -> None:
    user_suite(pytester)
    run(pytester, "--snapshot-update").assert_outcomes(passed=2)
    answer = stored(pytester).split("# name: test_answer")[1].split("# name:")[0]
    assert "tokens" not in answer and "_completed · 1 iteration_" in answer
    user_suite(pytester, usage=(99, 7))
    run(pytester).assert_outcomes(passed=2)


def test_a_retried_model_call_shows_in_the_stored_transcript(pytester: pytest.Pytester) -> None:
    user_suite(pytester)
    run(pytester, "--snapshot-update").assert_outcomes(passed=2)
    retried = stored(pytester).split("# name: test_retried")[1]
    assert "↻ model call 1 failed (HTTP 429: slow down" in retried
    assert "retry 1 after 0.01 s" in retried
    assert retried.index("↻ model call 1") < retried.index("**Assistant:** 5")


def test_a_failing_snapshot_prints_the_transcript_diff_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("CI", "BUILD_NUMBER"):  # pytest never truncates assertion output on CI
        monkeypatch.delenv(variable, raising=False)
    user_suite(pytester)
    run(pytester, "--snapshot-update").assert_outcomes(passed=2)
    user_suite(pytester, answer="five")
    short = run(pytester).stdout.str()  # what pytest shows without -vv: the change, first
    first = short.index("transcript diff (- snapshot, + received):")
    assert first < short.index("-**Assistant:** 5") < short.index("+**Assistant:** five")
    assert "...Full output truncated" in short
    full = run(pytester, "-vv").stdout.str()
    first = full.index("transcript diff (- snapshot, + received):")
    assert first < full.index("+**Assistant:** five") < full.index("syrupy's diff:")
    assert "five" in full[full.index("syrupy's diff:") :]
