"""A structured-output turn of `step` says what bfd8293's agent reducer said, event for event.

bfd8293 ran agents on a reducer of their own, `agent_step`. Its core (a `git archive` of
the commit, imported under a private name: it imports only itself) and today's `step`
are fed the same random valid events — as a shell, a model, a validator, a human and a
caller would send them, with bad JSON, unknown tools, `submit` anywhere, failing tools,
budgets, calls held for approval (a tool that requires it, or a PreToolUse `Ask` fed as
bfd8293's shell fed it), failed validations, provider failures, cancels and stragglers.
Each step, today's effects minus what only the loop says (`Persist`, the loop's notices)
must be the old ones; the old `FinishAgent` must agree with the new `Finish` as the agent
API reads it (outcome, code, message, context), with usage, attempts, iterations and the
whole conversation. This is the rule old agent journals replay by (adapters/_legacy.py).
"""

from __future__ import annotations

import enum
import importlib.util
import io
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolreel.core as new
from toolreel.adapters import agent_outcome
from toolreel.core.budget import Budget
from toolreel.core.hooks import Ask
from toolreel.core.notices import AttemptStarted, ValidationFailed
from toolreel.core.policies import RetryPolicy

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "bfd8293"
RECORD = {"name": "record_invoice", "description": "Record the invoice"}
RATE = {"name": "currency_rate", "description": "Euros per unit"}
DELETE = {"name": "delete_row", "description": "Delete a row"}


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """bfd8293's core, imported as `toolreel_bfd8293_core` (skip without git)."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", COMMIT, "core"],
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot read commit {COMMIT} from git: {exc}")
    where = tmp_path_factory.mktemp("bfd8293-core")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    name = "toolreel_bfd8293_core"
    init = where / "core" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    for key in [key for key in sys.modules if key.startswith(name)]:
        del sys.modules[key]


#: Fields bfd8293's records lacked, left out while they hold their default: a usage's
#: prompt-cache counters (0), a request's cache key (None).
UNSET_LATER = {
    "Usage": {"cache_read_tokens": 0, "cache_write_tokens": 0},
    "ModelRequest": {"cache_key": None},
    "CallModel": {"model": 0, "summary": False},
    "Reasoning": {"provider": ""},
    "ReasoningDelta": {"provider": ""},
    "ModelCallFailed": {"context_too_long": False},
}


def to_old(core: ModuleType, value: Any) -> Any:
    """A value of today's core as the same value of the old core (same class names, fields)."""
    if isinstance(value, tuple):
        return tuple(to_old(core, item) for item in value)
    if isinstance(value, enum.Enum):
        return getattr(core, type(value).__name__)(value.value)
    if attrs.has(type(value)):
        kind = getattr(core, type(value).__name__)
        fields = {f.name: to_old(core, getattr(value, f.name)) for f in attrs.fields(type(value))}
        for name, default in UNSET_LATER.get(type(value).__name__, {}).items():
            if fields[name] == default:
                del fields[name]
        return kind(**fields)
    return value


def plain(value: Any) -> Any:
    """Any value of either core as plain data: class names, fields, enum values (a result's
    `reason` left out: bfd8293's results had none; nor fields added since, left unset)."""
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if isinstance(value, frozenset):
        return sorted(plain(item) for item in value)
    if isinstance(value, enum.Enum):
        return value.value
    if attrs.has(type(value)):
        fields = {f.name: plain(getattr(value, f.name)) for f in attrs.fields(type(value))}
        if type(value).__name__ == "ToolResult":
            fields.pop("reason", None)
        for name, default in UNSET_LATER.get(type(value).__name__, {}).items():
            if fields.get(name, default) == default:
                fields.pop(name, None)
        return {"type": type(value).__name__, **fields}
    return value


def said(effects: tuple[Any, ...]) -> list[Any]:
    """Today's effects an agent run said too: not `Persist`, `TellHook`, `AskHook`, the
    loop's notices, nor the `Finish` (compared apart)."""
    kept = []
    for effect in effects:
        if isinstance(effect, new.Persist | new.TellHook | new.AskHook | new.Finish):
            continue
        if isinstance(effect, new.Emit) and not isinstance(
            effect.notice, AttemptStarted | ValidationFailed
        ):
            continue
        kept.append(effect)
    return kept


# --- the random world -------------------------------------------------------------------

budgets = st.one_of(
    st.none(),
    st.builds(Budget, max_model_calls=st.integers(0, 3)),
    st.builds(Budget, max_tool_calls=st.integers(0, 2)),
    st.builds(Budget, max_total_tokens=st.integers(20, 120)),
    st.builds(Budget, max_calls_per_tool=st.just({"currency_rate": 1})),
)


@st.composite
def setups(draw: st.DrawFn) -> dict[str, Any]:
    """The run's settings, as both configs take them.

    Not a tool-call limit together with approval (a tool that requires it, or a hook's
    `Ask`): bfd8293's agent refused a call past the limit before it could be held, and
    counted an asked call twice; today a held call is admitted once, when it is
    approved, as a chat turn's always was (the one order of both).
    """
    budget = draw(budgets)
    limits_tools = budget is not None and (
        budget.max_tool_calls is not None or budget.max_calls_per_tool
    )
    return {
        "reflective": draw(st.booleans()),
        "max_attempts": draw(st.integers(1, 3)),
        "limit": draw(st.integers(1, 3)),
        "retries": draw(st.integers(0, 2)),
        "budget": budget,
        "approval": draw(st.booleans()) and not limits_tools,
        "asks": not limits_tools,
    }


def configs(core: ModuleType, setup: dict[str, Any]) -> tuple[Any, new.LoopConfig]:
    """The old `AgentConfig` and today's `LoopConfig` of one setup."""
    record, rate, delete = (new.ToolSpec(**spec) for spec in (RECORD, RATE, DELETE))
    kind = new.ReflectiveOutput if setup["reflective"] else new.PlainOutput
    approval = frozenset({"delete_row"}) if setup["approval"] else frozenset()
    retry = RetryPolicy(max_retries=setup["retries"])
    today = new.LoopConfig(
        output=kind(tool=record, max_attempts=setup["max_attempts"]),
        tools=(rate, delete),
        max_iterations=setup["limit"],
        retry=retry,
        budget=setup["budget"],
        approval_required=approval,
    )
    then = core.AgentConfig(
        output=getattr(core, kind.__name__)(tool=to_old(core, record)),
        helpers=to_old(core, (rate, delete)),
        max_attempts=setup["max_attempts"],
        max_iterations_per_attempt=setup["limit"],
        retry=to_old(core, retry),
        budget=to_old(core, setup["budget"]),
        approval_required=approval,
    )
    return then, today


ARGUMENTS = ['{"number": "A", "total": 1}', '{"currency": "USD"}', "{}", '{"row": 3', "[1]", ""]
names = st.sampled_from(["currency_rate", "delete_row", "record_invoice", "submit", "nope"])
usages = st.builds(new.Usage, input_tokens=st.integers(0, 40), output_tokens=st.integers(0, 40))
problems = st.lists(st.sampled_from(["$.total: wrong", "number missing"]), max_size=2)
calls = st.lists(
    st.tuples(st.sampled_from(["", "c1", "c2", "c3"]), names, st.sampled_from(ARGUMENTS)),
    max_size=3,
)
failures = st.builds(
    new.ModelCallFailed,
    retryable=st.booleans(),
    message=st.just("boom"),
    retry_after=st.sampled_from([None, 0.5]),
)


@st.composite
def responses(draw: st.DrawFn) -> list[Any]:
    """A model response as streamed events: text, reasoning, calls in fragments, an end."""
    events: list[Any] = []
    if draw(st.booleans()):
        events.append(new.TextDelta(text=draw(st.sampled_from(["Hm", "ok"]))))
    if draw(st.integers(0, 4)) == 0:
        events.append(
            new.ReasoningDelta(text="think", signature=draw(st.sampled_from([None, "s"])))
        )
    for index, (call_id, name, arguments) in enumerate(draw(calls)):
        events.append(new.ToolCallStarted(index=index, call_id=call_id, name=name))
        middle = len(arguments) // 2
        for fragment in (arguments[:middle], arguments[middle:]):
            events.append(new.ToolCallArgumentsDelta(index=index, fragment=fragment))
    if draw(st.integers(0, 9)) == 0:
        events.append(draw(failures))  # the stream fails where it stands
    else:
        events.append(new.ModelResponded(usage=draw(usages)))
    return events


@attrs.define
class World:
    """What the effects so far ask of the outside world (read off today's effects)."""

    started: bool = False
    streaming: bool = False
    stream: list[Any] = attrs.Factory(list)
    timer: str | None = None
    runs: list[str] = attrs.Factory(list)
    helpers: list[str] = attrs.Factory(list)
    held: list[str] = attrs.Factory(list)
    validating: int | None = None
    finished: bool = False
    late: list[str] = attrs.Factory(list)
    asks: bool = True
    approved: set[str] = attrs.Factory(set)

    def absorb(self, event: Any, effects: tuple[Any, ...]) -> None:
        """Update what is awaited after `event` produced `effects`."""
        if isinstance(event, new.ModelResponded | new.ModelCallFailed):
            self.streaming = False
        for effect in effects:
            match effect:
                case new.CallModel():
                    self.streaming = True
                case new.RunTool(call=call):
                    self.runs.append(call.id)
                    self.helpers.append(call.id)
                case new.Reflect(call=call):
                    self.runs.append(call.id)
                    if call.id in self.helpers:  # an id the model used before, now reflected
                        self.helpers.remove(call.id)
                case new.StartTimer(token=token):
                    self.timer = token
                case new.Validate(attempt=attempt):
                    self.validating = attempt
                case new.AwaitApproval(requests=requests):
                    self.held = [request.call.id for request in requests]
                case new.Finish():
                    self.finished = True
                    self.late.extend(self.runs)

    def next_event(self, data: st.DataObject) -> Any:
        """One event that may happen now."""
        if not self.started:
            self.started = True
            return new.PromptSubmitted(text="extract")
        if self.finished:
            if self.late and data.draw(st.booleans()):
                return new.ToolFinished(call_id=data.draw(st.sampled_from(self.late)), output="x")
            return new.Cancelled()
        if data.draw(st.integers(0, 40)) == 0:
            self.stream = []
            return new.Cancelled()
        if self.streaming:
            if not self.stream:
                self.stream = data.draw(responses())
            return self.stream.pop(0)
        if self.timer is not None:
            token, self.timer = self.timer, None
            return new.TimerFired(token=token)
        # bfd8293's shell asked PreToolUse about a tool call as it ran it, unless approved
        running = [call for call in self.runs if call in self.helpers and call not in self.approved]
        if self.asks and running and data.draw(st.integers(0, 5)) == 0:
            call_id = data.draw(st.sampled_from(running))
            self.runs.remove(call_id)
            reason = data.draw(st.sampled_from(["", "costly"]))
            return new.HookDecided(hook_id=f"pre:{call_id}", decision=Ask(reason=reason))
        if self.held and (not self.runs or data.draw(st.booleans())):
            call_id = self.held.pop(data.draw(st.integers(0, len(self.held) - 1)))
            if data.draw(st.booleans()):
                self.approved.add(call_id)
                return new.Approved(call_id=call_id)
            return new.Denied(call_id=call_id, reason=data.draw(st.sampled_from(["", "no"])))
        if self.runs:
            call_id = data.draw(st.sampled_from(self.runs))
            self.runs.remove(call_id)
            return new.ToolFinished(
                call_id=call_id, output="out", is_error=data.draw(st.booleans())
            )
        if self.validating is not None:
            attempt, self.validating = self.validating, None
            return new.ValidationFinished(attempt=attempt, problems=tuple(data.draw(problems)))
        return new.Cancelled()


def compare(core: ModuleType, setup: dict[str, Any], data: st.DataObject) -> int:
    """Run one random world through both reducers; the number of steps compared."""
    then, today = configs(core, setup)
    old_state, state = core.initial_agent_state(then), new.initial_state(today)
    world = World(asks=setup["asks"])
    after = data.draw(st.integers(0, 3))
    for number in range(1, 400):
        if world.finished:
            if after == 0:
                return number
            after -= 1
        event = world.next_event(data)
        state, effects = new.step(state, event)
        old_state, old_effects = core.agent_step(old_state, to_old(core, event))
        world.absorb(event, effects)
        ended = [effect for effect in old_effects if type(effect).__name__ == "FinishAgent"]
        where = f"step {number}: {event!r}"
        assert data_of(said(effects)) == data_of([e for e in old_effects if e not in ended]), where
        finishes = [effect for effect in effects if isinstance(effect, new.Finish)]
        assert len(finishes) == len(ended), where
        for finish, old_finish in zip(finishes, ended, strict=True):
            assert plain(agent_outcome(finish, today)) == plain(old_finish.outcome), where
            assert plain(finish.usage) == plain(old_finish.usage), where
            assert finish.attempts is not None
            assert (finish.attempts.number, finish.iterations) == (
                old_finish.attempts,
                old_finish.iterations,
            ), where
            assert plain(state.history) == plain(old_finish.history), where
    raise AssertionError("the run must end within its limits")


def data_of(effects: list[Any]) -> Any:
    """Effects as plain data."""
    return plain(tuple(effects))


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(setup=setups(), data=st.data())
def test_a_structured_turn_says_what_bfd8293s_agent_said(
    old: ModuleType, setup: dict[str, Any], data: st.DataObject
) -> None:
    assert compare(old, setup, data) > 0
