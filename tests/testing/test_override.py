"""override(model=...): every Client, run and agent made inside uses that model."""

from __future__ import annotations

import contextvars
import functools
import threading
from typing import Any

import anyio
import anyio.to_thread
import attrs
import pytest

from toolreel.core import ConfigError, ModelRequest, UsageError
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    Client,
    Connection,
    OutputTool,
    execute_agent,
    run,
)
from toolreel.testing import FunctionModel, TestModel, override, overriding


def go(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run an async API call to its end."""
    return anyio.run(functools.partial(function, *args, **kwargs))


def saying(text: str) -> FunctionModel:
    """A model that always answers `text`."""
    return FunctionModel(lambda messages, info: text)


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key: only an override lets a Client reach a model."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@attrs.frozen
class Answer:
    value: int


def test_app_code_without_model_plumbing_uses_the_overriding_model() -> None:
    async def app(question: str) -> tuple[str, Any]:  # knows nothing of testing
        answered = await run(question, AgentOptions(model="gpt-4o"))
        definition = AgentDefinition(build_prompt=str, output=OutputTool.of(Answer))
        agent = await execute_agent(definition, question, Connection(provider="anthropic"))
        return answered.text, agent

    with pytest.raises(ConfigError, match="no API key"):
        anyio.run(app, "Hi")
    with override(model=TestModel(text="hello", output={"value": 4})):
        text, agent = anyio.run(app, "Hi")
    assert text == "hello"
    assert isinstance(agent, AgentSuccess) and agent.output == Answer(value=4)
    assert overriding() is None


def test_overrides_nest_and_each_restores_the_one_outside_even_on_error() -> None:
    outer, inner = saying("outer"), saying("inner")
    with override(model=outer):
        with pytest.raises(RuntimeError), override(model=inner):
            assert go(run, "Hi", AgentOptions()).text == "inner"
            raise RuntimeError("boom")
        assert overriding() is outer
        assert go(run, "Hi", AgentOptions()).text == "outer"
    assert overriding() is None


def test_tasks_started_inside_see_it_and_so_do_worker_threads_but_not_bare_threads() -> None:
    model = saying("x")
    found: dict[str, Any] = {}

    async def in_task() -> None:
        found["task"] = (await run("Hi", AgentOptions())).text

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(in_task)
        found["worker"] = await anyio.to_thread.run_sync(overriding)
        bare = threading.Thread(target=lambda: found.setdefault("bare", overriding()))
        bare.start()
        bare.join()
        copied = contextvars.copy_context()
        found["copied"] = await anyio.to_thread.run_sync(copied.run, overriding)

    with override(model=model):
        anyio.run(main)
    assert found == {"task": "x", "worker": model, "bare": None, "copied": model}


def test_an_explicit_model_still_wins_and_the_lent_model_is_never_closed() -> None:
    closed: list[str] = []

    class Closing(FunctionModel):
        async def aclose(self) -> None:
            closed.append("closed")

    lent = Closing(lambda messages, info: "lent")
    with override(model=lent):
        assert go(run, "Hi", AgentOptions(), model=saying("mine")).text == "mine"

        async def chat() -> str:
            async with Client(AgentOptions()) as client:
                await client.query("Hi")
                finish = await client.wait()
                assert finish is not None
                return finish.text

        assert anyio.run(chat) == "lent"
    assert closed == []
    assert [r.messages[-1].content for r in lent.requests] == ["Hi"]


def test_use_swaps_the_model_for_the_rest_of_the_override_only() -> None:
    with override(model=saying("first")) as active:
        assert go(run, "Hi", AgentOptions()).text == "first"
        active.use(saying("second"))
        assert go(run, "Hi", AgentOptions()).text == "second"
    with pytest.raises(UsageError, match="this override has ended"):
        active.use(saying("third"))


def test_leaving_it_in_another_context_than_it_was_entered_in_is_a_usage_error() -> None:
    scope = override(model=saying("x"))
    contextvars.copy_context().run(scope.__enter__)  # entered elsewhere (another task)
    with pytest.raises(UsageError, match="left in another context"):
        scope.__exit__(None, None, None)
    assert overriding() is None


def test_something_that_is_not_a_model_is_refused() -> None:
    with pytest.raises(ConfigError) as raised, override(model="gpt-4o"):  # type: ignore[arg-type]
        pass
    assert raised.value.field == "model"


def test_the_request_reaches_the_lent_model_as_the_app_built_it() -> None:
    model = TestModel(text="ok")
    with override(model=model):
        go(run, "Hi", AgentOptions(model="gpt-4o", system_prompt="Be brief."))
    [request] = model.requests
    assert isinstance(request, ModelRequest)
    assert (request.model, request.system) == ("gpt-4o", "Be brief.")
