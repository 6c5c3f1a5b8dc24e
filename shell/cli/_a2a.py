"""`toolreel a2a-serve`: the agent the flags describe, served as an A2A server over HTTP.

toolreel.a2a (and `a2a-sdk`) is imported only when the command runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from . import (
    CONNECTION,
    JOURNAL_HELP,
    JOURNAL_TYPE,
    MAX_HELP,
    RECOVERY,
    _with,
)
from . import _budget as budgets
from ._serving import http_options, ready, served, serving


def _listening(url: str) -> str:
    """Where the server listens, and its card."""
    return f"toolreel A2A server on {url} (card: {url}.well-known/agent-card.json)"


def _ready(host: str, given: str | None) -> Callable[[str, str | None], None]:
    """What this command says once its server listens (`ready` with `_listening`)."""
    return ready(host, given, _listening)


@click.command("a2a-serve")
@_with(CONNECTION)
@click.option("--journal", type=JOURNAL_TYPE, help=JOURNAL_HELP)
@click.option("--system", metavar="TEXT", help="System prompt of the agent.")
@click.option("--max-iterations", type=click.IntRange(min=1), default=5, metavar="N", help=MAX_HELP)
@RECOVERY
@_with(budgets.options())
@_with(
    http_options(
        "",
        "The token every request but the agent card's carries (Authorization: Bearer). "
        "Off loopback one is required: made and printed if not given.",
    )
)
def a2a_serve(
    *,
    host: str,
    port: int,
    hosts: tuple[str, ...],
    token: str | None,
    max_body: int,
    **params: Any,
) -> int:
    """Serve the agent as an A2A server: its card at /.well-known/agent-card.json, JSON-RPC at /.

    Each message is a turn of the session its contextId names (in --journal);
    a task is one turn, `<contextId>-<n>`, readable with tasks/get after a
    restart. A call held for approval makes the task input-required: the next
    message decides it ("yes"/"no", or a data part {"approve": [ids], "deny":
    [ids]}). tasks/cancel interrupts the turn. Runs until Ctrl-C (exit 130).
    """
    options, journal, testing = served(params)
    try:
        from toolreel.a2a import serve  # noqa: PLC0415 - the a2a extra
    except ImportError as exc:
        raise click.UsageError(
            f"a2a-serve needs the A2A SDK: pip install 'toolreel[a2a]' ({exc})"
        ) from exc
    run = functools.partial(
        serve,
        options,
        journal=journal,
        host=host,
        port=port,
        allowed_hosts=hosts,
        token=token,
        max_body_bytes=max_body,
        ready=_ready(host, token),
    )
    return serving(run, testing)
