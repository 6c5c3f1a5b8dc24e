"""One stable, human-readable rendering of an agent run (the Markdown-like style of
adapters/_transcript.py): its config, each attempt with its iterations' calls and
results and the validation problems that ended it, then the output or the error.

An attempt begins at each user message of the run's history (the prompt, then each
validation feedback); each tool round of an attempt's assistant message is one
iteration.
"""

from __future__ import annotations

from toolreel.adapters._transcript import _fenced, _pretty, _round_lines, _usage
from toolreel.core import AgentError, AgentOutput, AgentState, ChatMessage

from ._replay import AgentSession


def _attempts(history: tuple[ChatMessage, ...]) -> list[list[ChatMessage]]:
    """The history cut at every user message: one list per attempt."""
    attempts: list[list[ChatMessage]] = []
    for message in history:
        if message.role == "user" or not attempts:
            attempts.append([])
        attempts[-1].append(message)
    return attempts


def _attempt_lines(
    number: int, messages: list[ChatMessage], state: AgentState, ids: bool
) -> list[str]:
    """One attempt: its prompt (the first), its iterations, the problems found in its output."""
    lines = [f"## Attempt {number}", ""]
    if number == 1 and messages and messages[0].role == "user":
        lines += [f"**User:** {messages[0].content}", ""]
    rounds = [r for message in messages if message.role == "assistant" for r in message.tool_rounds]
    for index, tool_round in enumerate(rounds, start=1):
        lines += _round_lines(index, tool_round, ids)
    texts = [m.content for m in messages if m.role == "assistant" and m.content.strip()]
    lines += [line for text in texts for line in (f"**Assistant:** {text.strip()}", "")]
    for errors in state.errors:
        if errors.attempt == number:
            lines += ["Validation failed:", *(f"- {problem}" for problem in errors.problems), ""]
    return lines


def _outcome_lines(session: AgentSession) -> list[str]:
    """How the run ended: the output, the error, or unfinished."""
    finish = session.finish
    if finish is None:
        return ["_unfinished_", ""]
    outcome = finish.outcome
    if isinstance(outcome, AgentOutput):
        return ["## Output", "", *_fenced(_pretty(outcome.output), "json"), ""]
    assert isinstance(outcome, AgentError)
    return [f"## Error {outcome.code.value}", "", outcome.message, ""]


def render_agent_transcript(session: AgentSession, *, ids: bool = False) -> str:
    """The agent run as stable Markdown-like text."""
    config = session.config
    lines = [f"# Agent run {session.session_id}" if ids else "# Agent run", ""]
    lines.append(f"model: {config.model}")
    if config.system_prompt:
        lines.append(f"system: {config.system_prompt}")
    lines.append(f"output: {config.output.tool.name}")
    if config.helpers:
        lines.append("helpers: " + ", ".join(spec.name for spec in config.helpers))
    lines.append("")
    history = session.finish.history if session.finish else session.state.history
    for number, messages in enumerate(_attempts(history), start=1):
        lines += _attempt_lines(number, messages, session.state, ids)
    lines += _outcome_lines(session)
    state = session.state
    lines.append(
        f"Total: {state.attempt} attempt{'s' if state.attempt != 1 else ''} · "
        f"{state.iterations} iterations · {_usage(state.usage)}"
    )
    return "\n".join(lines) + "\n"
