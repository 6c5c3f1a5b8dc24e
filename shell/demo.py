"""`make demo`: the calculator agent run through the reducer, with real Python tools.

The model is the scripted calculator model (no network, no key needed): it
streams real tool calls and answers. This minimal synchronous interpreter of
the core's effects stands in until the async shell (issue 4) takes over.
"""

from __future__ import annotations

import json
import operator
import sys
from collections.abc import Callable

from toolreel.core import (
    CallModel,
    ChatMessage,
    Effect,
    Emit,
    Finish,
    LoopConfig,
    Persist,
    PromptSubmitted,
    RoundFinished,
    RunTool,
    State,
    TextStreamed,
    ToolCallAnnounced,
    ToolFinished,
    ToolResultReady,
    ToolSpec,
    initial_state,
    step,
)

from ._calculator_model import respond

PROMPTS = (
    "What is 25 plus 17?",
    "Calculate 144 divided by 12",
    "What's 7 times 8, then add 5?",
)
_NUMBERS = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
TOOLS: dict[str, Callable[[float, float], float]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
}


def config() -> LoopConfig:
    """The calculator agent's loop configuration."""
    specs = tuple(
        ToolSpec(name=name, description=f"{name.capitalize()} two numbers", parameters=_NUMBERS)
        for name in TOOLS
    )
    return LoopConfig(
        model="scripted-calculator", system_prompt="You are a calculator.", tools=specs
    )


def run_tool(call_name: str, arguments: str) -> tuple[str, bool]:
    """Run one calculator tool; an exception becomes an error result."""
    try:
        args = json.loads(arguments)
        value = TOOLS[call_name](args["a"], args["b"])
    except Exception as exc:  # a tool failure is data for the model
        return f"{type(exc).__name__}: {exc}", True
    return json.dumps(int(value) if float(value).is_integer() else value), False


def interpret(state: State, effects: tuple[Effect, ...], out: list[ChatMessage]) -> State:
    """Carry out effects depth-first, feeding each outcome back into `step`."""
    for effect in effects:
        match effect:
            case CallModel(request=request):
                for event in respond(request):
                    state, more = step(state, event)
                    state = interpret(state, more, out)
            case RunTool(call=call):
                output, is_error = run_tool(call.name, call.arguments)
                event = ToolFinished(call_id=call.id, output=output, is_error=is_error)
                state, more = step(state, event)
                state = interpret(state, more, out)
            case Emit(notice=notice):
                show(notice)
            case Persist(message=message):
                out.append(message)
            case Finish() as finish:
                print(
                    f"\n   [{finish.reason.value}: {finish.iterations} model calls, "
                    f"{len(finish.rounds)} tool rounds, {finish.usage.total_tokens} tokens]"
                )
            case _:
                pass
    return state


class _Screen:
    """Prints what a chat UI would show: text as it streams, each call with its result."""

    after_round = False

    def show(self, notice: object) -> None:
        """Print one notice."""
        match notice:
            case TextStreamed(text=text):
                prefix = "\n   " if self.after_round else ""
                self.after_round = False
                print(prefix + text, end="", flush=True)
            case ToolCallAnnounced(call=call):
                print(f"\n   -> {call.name}({call.arguments})", end="")
            case ToolResultReady(result=result):
                print(f" = {result.content}" + (" (error)" if result.is_error else ""), end="")
            case RoundFinished():
                self.after_round = True
            case _:
                pass


show = _Screen().show


def main() -> int:
    """Run the three calculator prompts as one conversation."""
    print("toolreel demo: a scripted calculator model answered (no network, no API key).")
    print("Every step went through toolreel.core.step; the tools are real Python functions.\n")
    state = initial_state(config())
    stored: list[ChatMessage] = []
    for prompt in PROMPTS:
        print(f"user> {prompt}\nassistant> ", end="")
        state, effects = step(state, PromptSubmitted(text=prompt))
        state = interpret(state, effects, stored)
        print()
    print(f"History: {len(state.history)} messages; {len(stored)} persisted.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
