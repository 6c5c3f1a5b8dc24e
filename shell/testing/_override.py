"""`override(model=...)`: every Client, `run` and agent made inside uses that model.

    with toolreel.testing.override(model=TestModel()):
        result = await my_app.answer("What is 2 plus 3?")   # no model=, no base_url

It sets a context variable that `Connection.open_model()` reads, so it
replaces the model a Client or an agent run would open from its options (no
key or server needed); a `model=` passed explicitly still wins, as replay
passes its recorded one. Overrides nest, and each restores the one outside
it on exit. Tasks started inside (anyio task groups, asyncio tasks) copy the
context and see it; another thread does not, unless it is started with the
context (`anyio.to_thread.run_sync` and `asyncio.to_thread` copy it;
a bare `threading.Thread` starts empty). The overriding model is lent, not
given: the Clients that use it never close it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

from toolreel.adapters import ModelPort
from toolreel.core import ConfigError, ModelEvent, ModelRequest, UsageError
from toolreel.shell.engine import MODEL_OVERRIDE


class Override:
    """The override in force: a model lent to the Clients made under it, never closed by them.

    `use(model)` swaps the model for the rest of the override (from any task
    or thread: the context variable keeps pointing at this one object).
    """

    def __init__(self, model: ModelPort) -> None:
        """Lend `model`."""
        self.model = _checked(model)
        self.active = True

    def use(self, model: ModelPort) -> ModelPort:
        """Lend `model` instead, from now on; returns it. After the override: UsageError."""
        if not self.active:
            raise UsageError("this override has ended: use() it inside its `with` block")
        self.model = _checked(model)
        return model

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The lent model's events."""
        return self.model.stream(request)

    async def aclose(self) -> None:
        """Nothing: the model is its owner's to close."""

    @property
    def model_name(self) -> object:
        """The lent model's own name, if it has one (a TestModel's "test")."""
        return getattr(self.model, "model_name", None)

    @property
    def redactor(self) -> object:
        """The lent model's secrets (an HTTP model's key), for the session's redactor."""
        return getattr(self.model, "redactor", None)


def _checked(model: ModelPort) -> ModelPort:
    """A model port, or a ConfigError saying what is needed."""
    if not callable(getattr(model, "stream", None)) or not callable(getattr(model, "aclose", None)):
        raise ConfigError("model", model, "a model port (stream(request) and aclose())")
    return model


@contextlib.contextmanager
def override(*, model: ModelPort) -> Iterator[Override]:
    """Make every model port opened inside be `model` (see the module docstring).

    Yields the `Override` (its `model`, and `use` to swap it). Entered and
    left in different contexts (an async fixture's setup and teardown run
    in different tasks): a UsageError saying so, rather than a stray override.
    """
    lent = Override(model)
    token = MODEL_OVERRIDE.set(lent)
    try:
        yield lent
    finally:
        lent.active = False
        try:
            MODEL_OVERRIDE.reset(token)
        except ValueError as exc:
            raise UsageError(
                "override(model=...) was left in another context than it was entered in: "
                "enter and leave it in one task (use `with`, or the toolreel_override fixture)"
            ) from exc


def overriding() -> ModelPort | None:
    """The model in force here (None: no override)."""
    lent = MODEL_OVERRIDE.get()
    return lent.model if isinstance(lent, Override) else lent
