"""The reducer by hand: feed `step` events, carry out the effects it returns.

    python examples/reducer.py

No model and no I/O: the events a model and a tool would produce are written out here,
so the whole loop of one turn (a prompt, a streamed tool call, its result, the answer)
is visible. `toolreel.shell` does exactly this with real models and tools.
"""

from __future__ import annotations

from toolreel.core import (
    CallModel,
    Finish,
    LoopConfig,
    ModelEvent,
    ModelResponded,
    PromptSubmitted,
    RunTool,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    initial_state,
    step,
)

add = ToolSpec(
    name="add",
    description="Add two numbers",
    parameters={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
state = initial_state(LoopConfig(model="gpt-4o-mini", tools=(add,), max_iterations=5))

# The user asks; the loop wants the model called.
state, effects = step(state, PromptSubmitted(text="What is 25 plus 17?"))
assert isinstance(effects[-1], CallModel)
print("1.", type(effects[-1]).__name__, "with", len(effects[-1].request.messages), "message")

# The model streams a tool call, its arguments split anywhere.
streamed: list[ModelEvent] = [
    ToolCallStarted(index=0, call_id="call_1", name="add"),
    ToolCallArgumentsDelta(index=0, fragment='{"a": 2'),
    ToolCallArgumentsDelta(index=0, fragment='5, "b": 17}'),
    ModelResponded(finish_reason="tool_calls"),
]
for event in streamed:
    state, effects = step(state, event)
[run] = [effect for effect in effects if isinstance(effect, RunTool)]
print("2. RunTool", run.call.name, run.call.arguments)

# You run the tool and report its output; the loop calls the model again.
state, effects = step(state, ToolFinished(call_id="call_1", output="42"))
assert isinstance(effects[-1], CallModel)
print("3. CallModel again, the result in the conversation")

# The model answers without tools: the turn is over.
state, effects = step(state, TextDelta(text="25 plus 17 is 42."))
state, effects = step(state, ModelResponded(finish_reason="stop"))
finish = effects[-1]
assert isinstance(finish, Finish)
print("4.", finish.reason.value, repr(finish.text), len(finish.rounds), "round")
