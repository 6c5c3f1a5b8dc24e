"""Journals and crash safety: a process dies inside a tool; another finishes the turn.

    python examples/crash_safe.py                  # offline: a function plays the model
    OPENAI_API_KEY=sk-... python examples/crash_safe.py --model gpt-4o-mini

It starts itself again with `--crash`: that process runs a journaled session whose
`charge_card` tool kills the process as it runs (as a power cut would). This process
then resumes the session from the journal: the call that had started but left no outcome
is not run again (it is not idempotent): the model is told its outcome is unknown, and
the turn finishes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import anyio

from toolreel.adapters import load_session, render_transcript
from toolreel.core import ChatMessage
from toolreel.shell import AgentOptions, Client, open_journal, tool
from toolreel.testing import FunctionModel, ModelInfo, ToolCalls, call

JOURNAL = "orders.db"
SESSION = "order-1"


@tool(idempotent=True)  # safe to run again after a crash
def price(item: str) -> float:
    """The price of an item in euros."""
    return 12.5


@tool  # not idempotent: never run twice without anyone knowing
def charge_card(amount: float) -> str:
    """Charge the customer's card."""
    if "--crash" in sys.argv:
        os._exit(9)  # the process dies here, mid-call
    return f"charged {amount:.2f} EUR"


def stand_in(messages: tuple[ChatMessage, ...], info: ModelInfo) -> str | ToolCalls:
    """The offline model: look up the price, charge it, then report what happened."""
    rounds = messages[-1].tool_rounds
    if not rounds:
        return ToolCalls([call("price", item="book")])
    if len(rounds) == 1:
        return ToolCalls([call("charge_card", amount=float(rounds[0].results[0].content))])
    return f"About the payment: {rounds[-1].results[0].content}"


def options(model: str) -> AgentOptions:
    """The session's options: the same in the crashing process and the resuming one."""
    return AgentOptions(
        model=model,
        tools=[price, charge_card],
        auto_execute_tools=True,
        journal=JOURNAL,
        session_id=SESSION,
    )


async def start(opts: AgentOptions, model: FunctionModel | None) -> None:
    """The first process: ask; it dies inside charge_card."""
    async with Client(opts, model=model) as client:
        await client.query("Buy the book for me.")
        await client.wait()


async def resume(opts: AgentOptions, model: FunctionModel | None) -> None:
    """A later process: finish the interrupted turn from the journal."""
    async with Client.resume(SESSION, opts, model=model) as client:
        finish = await client.wait()
        print("resumed:", finish.text if finish else "nothing was left to do")


def main() -> None:
    """Crash in a child process, then resume here and print the transcript."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crash", action="store_true", help="be the process that dies")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    real = bool(os.environ.get("OPENAI_API_KEY"))
    opts = options(args.model if real else "")
    model = None if real else FunctionModel(stand_in)
    if args.crash:
        anyio.run(start, opts, model)
        return

    if os.path.exists(JOURNAL):
        os.remove(JOURNAL)
    command = [sys.executable, __file__, "--crash", "--model", args.model]
    child = subprocess.run(command, check=False)
    print("the first process died with exit code", child.returncode)
    anyio.run(resume, opts, model)
    journal = open_journal(JOURNAL)
    print(render_transcript(load_session(journal, SESSION), hide=["usage"]))
    journal.close()


if __name__ == "__main__":
    main()
