"""`text_run` and `fragment_run`: a run of deltas folded at once is exactly `step` on each.

A replay checks a stored run of deltas with one call (adapters/_fold.py), so
these must agree with folding every delta through `step`, in every phase the
loop reaches (`simulate` of test_properties.py): where they answer, the state
is the one `step` reaches and each delta's effects are exactly what the run
records (its `Emit(TextStreamed)`, or for a fragment its `Emit(ToolArgumentsStreamed)`,
none for an empty one); where `step` would
refuse a delta or do anything else, they decline (None), and the fold then
takes the run one step at a time.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import FRAGMENTS, SETTINGS, configs, simulate

from toolreel.core import (
    Emit,
    Event,
    LoopConfig,
    Phase,
    PromptSubmitted,
    State,
    StepError,
    TextDelta,
    ToolCallArgumentsDelta,
    initial_state,
    step,
)
from toolreel.core.bulk import fragment_run, text_run
from toolreel.core.notices import TextStreamed, ToolArgumentsStreamed

TEXTS = ["", "Hel", "lo", " wörld", "\n"]
FEWER = settings(SETTINGS, max_examples=120)  # each example simulates a whole session


def stepwise(state: State, events: list[Event], recorded: list[tuple]) -> State | None:
    """`step` on each event: the end state if each gives exactly its recorded effects, else None."""
    for event, effects in zip(events, recorded, strict=True):
        try:
            state, made = step(state, event)
        except StepError:
            return None
        if made != effects:
            return None
    return state


def told_fragment(index: int, fragment: str) -> tuple[Emit, ...]:
    """What `step` emits for a fragment: its notice, none for an empty one."""
    return (Emit(notice=ToolArgumentsStreamed(index=index, fragment=fragment)),) if fragment else ()


def some_state(data: st.DataObject, config: LoopConfig) -> State:
    """A state the loop reaches, in any phase."""
    states = [initial_state(config), *(state for _, state, _ in simulate(data, config))]
    return data.draw(st.sampled_from(states))


@FEWER
@given(config=configs, data=st.data())
def test_a_text_run_is_each_text_delta_emitting_its_text(config, data) -> None:
    state = some_state(data, config)
    texts = data.draw(st.lists(st.sampled_from(TEXTS), max_size=6))
    events = [TextDelta(text=text) for text in texts]
    recorded = [(Emit(notice=TextStreamed(text=text)),) for text in texts]
    folded = stepwise(state, events, recorded)
    assert text_run(state, texts) == folded
    assert text_run(state, tuple(texts)) == folded


@FEWER
@given(config=configs, data=st.data())
def test_a_fragment_run_is_each_fragment_telling_it(config, data) -> None:
    state = some_state(data, config)
    index = data.draw(st.integers(0, 2))
    fragments = data.draw(st.lists(st.sampled_from(FRAGMENTS), max_size=6))
    events = [ToolCallArgumentsDelta(index=index, fragment=f) for f in fragments]
    told = [told_fragment(index, fragment) for fragment in fragments]
    folded = stepwise(state, events, told)
    batch = fragment_run(state, index, fragments)
    if batch is not None or state.phase is Phase.STREAMING:
        assert batch == folded  # answered: exactly `step`'s state (declined only off-stream)
    else:
        assert fragments  # declined only where there is something to fold step by step


def test_a_run_declines_where_step_refuses_a_delta() -> None:
    idle = initial_state(LoopConfig(model="m"))
    assert text_run(idle, ["a"]) is None
    assert fragment_run(idle, 0, ["{"]) is None
    assert text_run(idle, []) == idle


def test_an_empty_text_in_a_run_makes_it_decline() -> None:
    state, _ = step(initial_state(LoopConfig(model="m")), PromptSubmitted(text="hi"))
    assert state.phase is Phase.STREAMING
    assert text_run(state, ["a", "", "b"]) is None
    assert text_run(state, ["a", "b"]) == stepwise(
        state,
        [TextDelta(text="a"), TextDelta(text="b")],
        [(Emit(notice=TextStreamed(text=t)),) for t in "ab"],
    )
