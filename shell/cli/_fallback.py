"""`--fallback-model` and `--fallback-on` for run and chat (docs/guides/fallback.md).

`--fallback-model NAME` (repeatable, tried in order) asks the same server
with the same key for another model; `--fallback-model PROVIDER:NAME` asks
that provider at its own URL, with the key of its environment variable
(`anthropic:claude-haiku-4-5`). A name whose part before the first ":" is no
provider is a name as it is (Ollama's `llama3:8b`). `--fallback-on STATUS`
(repeatable; or `context_length`) moves on at once for that failure. Both are
recorded in the session's config: `approve`/`deny` take them from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from toolreel.adapters import PROVIDERS
from toolreel.core import LoopConfig
from toolreel.shell import Connection

#: The `fallback_on` word for a request too long for the model's context.
CONTEXT_LENGTH = "context_length"

OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--fallback-model",
        "fallback_models",
        multiple=True,
        metavar="[PROVIDER:]NAME",
        help="A model to fall back to when a call fails after its retries (repeatable, in "
        "order); PROVIDER: asks that provider at its own URL.",
    ),
    click.option(
        "--fallback-on",
        "fallback_on",
        multiple=True,
        metavar="STATUS",
        help="An HTTP status (or context_length) that falls back at once (repeatable).",
    ),
]


def fallbacks(params: dict[str, Any]) -> list[Connection]:
    """The fallback connections `--fallback-model` names (checked by `Connection`)."""
    made = []
    for given in params.get("fallback_models") or ():
        provider, _, name = given.partition(":")
        if name and provider in PROVIDERS:
            made.append(Connection(provider=provider, model=name))
        else:
            made.append(
                Connection(
                    provider=params["provider"],
                    base_url=params["base_url"],
                    api_key=params["api_key"],
                    model=given,
                )
            )
    return made


def fallback_on(params: dict[str, Any]) -> list[int | str]:
    """The statuses (and `context_length`) `--fallback-on` gives; a bad one: BadParameter."""
    found: list[int | str] = []
    for given in params.get("fallback_on") or ():
        if given == CONTEXT_LENGTH:
            found.append(given)
        elif given.isdigit():
            found.append(int(given))
        else:
            raise click.BadParameter(
                f"{given!r}: an HTTP status (400-599) or {CONTEXT_LENGTH}",
                param_hint="'--fallback-on'",
            )
    return found


def recorded(config: LoopConfig, given: Callable[[str], bool]) -> dict[str, Any]:
    """The fallback settings the session recorded, for the flags not `given` again."""
    policy = config.fallback
    if policy is None:
        return {}
    found: dict[str, Any] = {}
    if not given("fallback_models"):
        found["fallback_models"] = policy.models
    if not given("fallback_on"):
        on = [str(status) for status in sorted(policy.on_status)]
        found["fallback_on"] = (*on, CONTEXT_LENGTH) if policy.on_context_length else tuple(on)
    return found
