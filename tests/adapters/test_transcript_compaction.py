"""How a transcript shows compaction: the policy under the model, each compaction in its turn."""

from __future__ import annotations

import pytest

from toolreel.adapters import Session, TurnSummary, render_transcript
from toolreel.core import LoopConfig, Phase
from toolreel.core.compaction import KeepTokens, KeepTurns, Summarise
from toolreel.core.notices import ContextCompacted


def shown(policy: object, *compactions: ContextCompacted) -> str:
    """The transcript of a one-turn session under `policy` that compacted so."""
    turn = TurnSummary(prompt="hi", compactions=compactions)
    config = LoopConfig(model="m", compaction=policy)  # type: ignore[arg-type]
    session = Session(
        session_id="s", config=config, history=(), turns=(turn,), events=1, phase=Phase.IDLE
    )
    return render_transcript(session, hide=("usage",))


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        (KeepTurns(turns=1), "the last 1 turn"),
        (KeepTurns(turns=3, pinned=2), "the last 3 turns, the first 2 messages pinned"),
        (KeepTokens(tokens=4000), "the latest turns within 4,000 tokens"),
        (
            Summarise(within=KeepTurns(turns=2, pinned=1), model="mini"),
            "the last 2 turns, the first 1 message pinned, older turns summarised by mini",
        ),
        (Summarise(within=KeepTokens(tokens=10)), "the latest turns within 10 tokens, older"),
    ],
)
def test_the_policy_is_said_under_the_model(policy: object, said: str) -> None:
    assert f"compaction: {said}" in shown(policy)


def test_no_policy_says_nothing() -> None:
    assert "compaction" not in shown(None)


def test_each_compaction_is_marked_in_its_turn() -> None:
    text = shown(
        KeepTokens(tokens=100),
        ContextCompacted(first=0, start=4, tokens=90),
        ContextCompacted(first=4, start=5, too_long=True),
        ContextCompacted(first=5, start=7, summary="They talked."),
    )
    assert text.split("**User:** hi\n\n")[1].split("\n\n_")[0].splitlines() == [
        "✂ context compacted: messages 1 to 4 of the history left out, ~90 tokens carried",
        "",
        "✂ context compacted: message 5 of the history left out "
        "(the provider said the context was too long)",
        "",
        "✂ context compacted: messages 6 to 7 of the history left out",
        "  summary: They talked.",
    ]
