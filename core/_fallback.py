"""Falling back to another model when a model call fails (rule 8 of core/_step.py).

`LoopConfig.fallback` names the models tried, in order, after `LoopConfig.model`
(model 0); the shell holds one connection per model, by position, and each
`CallModel` says which (`CallModel.model`). A failed call moves the turn to the
next model when:

- it is retryable and `retry.max_retries` retries were spent on this model;
- its HTTP status is one of `on_status` (at once, without retrying);
- it says the request is longer than the model's context (`context_length`),
  under `on_context_length` (at once).

Any other fatal failure (a 400, say) fails the turn as it always did. The move
is told (`ModelChanged`; text streamed by the failed call is void) and the same
model call is made again at once through the next model, with retries of its
own. The turn stays with the model it moved to; the next turn starts with the
first again. When the last model fails too, the turn fails naming every model
tried and why (`every_model_failed`).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ._errors import ConfigError
from ._events import ModelCallFailed
from ._record import Value


def _names(models: Iterable[str]) -> tuple[str, ...]:
    """Any iterable of model names, held as a tuple (a typed converter: strict callers pass)."""
    if isinstance(models, str):
        raise ConfigError("models", models, "a list of model names, not one str")
    return tuple(models)


def _statuses(statuses: Iterable[int]) -> frozenset[int]:
    """Any iterable of HTTP statuses, held as a frozenset (a typed converter)."""
    return frozenset(statuses)


def _check_names(_: object, __: object, value: tuple[str, ...]) -> None:
    """At least one model, each a non-empty str."""
    if not value:
        raise ConfigError("models", value, "at least one model name")
    for name in value:
        if not isinstance(name, str) or not name:
            raise ConfigError("models", name, "a model name (a non-empty str)")


def _check_statuses(_: object, __: object, value: frozenset[int]) -> None:
    """HTTP error statuses: ints from 400 to 599."""
    for status in value:
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise ConfigError("on_status", status, "an HTTP error status (400-599)")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class FallbackPolicy(Value):
    """The models a failed model call falls back to, in order, and what else moves on.

    A retryable failure moves on once its retries are spent; `on_status` lists
    statuses that move on at once (a 503, a 400 the model refuses the request
    with); `on_context_length` moves on at once when the request is too long for
    the model. See core/_fallback.py.
    """

    models: tuple[str, ...] = attrs.field(converter=_names, validator=_check_names)
    on_status: frozenset[int] = attrs.field(
        default=frozenset(), converter=_statuses, validator=_check_statuses
    )
    on_context_length: bool = False

    def at_once(self, failure: ModelCallFailed) -> bool:
        """Whether `failure` moves on without retrying (a chosen status, a context too long)."""
        if failure.status is not None and failure.status in self.on_status:
            return True
        return self.on_context_length and failure.context_too_long


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelFailure(Value):
    """How one model of a turn failed, before the turn moved on (or gave up)."""

    model: str
    message: str
    status: int | None = None
    retries: int = 0

    def told(self) -> str:
        """The failure in a sentence's clause: `gpt-a: HTTP 503: busy (after 3 retries)`.

        The status is named unless the provider's message already does.
        """
        status = ""
        if self.status is not None and str(self.status) not in self.message:
            status = f"HTTP {self.status}: "
        after = f" (after {self.retries} retries)" if self.retries else ""
        return f"{self.model}: {status}{self.message}{after}"


def model_at(model: str, fallback: FallbackPolicy | None, index: int) -> str:
    """The name of model `index`: 0 the config's own, then the fallbacks in order."""
    if index == 0 or fallback is None:
        return model
    return fallback.models[index - 1]


def next_model(
    fallback: FallbackPolicy | None, index: int, failure: ModelCallFailed, retries_left: bool
) -> int | None:
    """The model to move to after `failure` of model `index`, or None: do not move.

    `retries_left`: the failure is retryable and the retry policy would try again.
    """
    if fallback is None or index >= len(fallback.models):
        return None
    if fallback.at_once(failure):
        return index + 1
    if failure.retryable and not retries_left:
        return index + 1
    return None


def every_model_failed(tried: tuple[ModelFailure, ...]) -> str:
    """The message of a turn whose every model failed: each model and why, in order."""
    return "every model failed: " + "; ".join(failure.told() for failure in tried)
