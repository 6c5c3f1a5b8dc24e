"""Shared connection pools: the HTTP models of one event loop that agree on provider and base
URL send through one httpx2 client, closed when the last of them closes; a caller's own client
(httpx2's, or httpx's while both exist) is used as given and never closed; a new event loop gets
a new pool. Against the scripted OpenAI-compatible server on 127.0.0.1 (or an
httpx2.MockTransport where headers matter)."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import textwrap
from typing import Any

import anyio
import httpx
import httpx2
import pytest

from toolreel.adapters import HttpModel, OpenAICodec, Secret, http_model
from toolreel.adapters._providers._pools import SHARD_LEASES, tls_context
from toolreel.core import ConfigError, ModelCallFailed, ModelRequest, ModelResponded
from toolreel.shell import AgentOptions, Client
from toolreel.shell.scripted import Reply, ScriptedServer, text

REQUEST = ModelRequest(model="m", system=None, messages=(), tools=())


def replies(n: int) -> list[Any]:
    return [text(f"answer {i}") for i in range(n)]


async def call(model: HttpModel) -> list[Any]:
    return [event async for event in model.stream(REQUEST)]


def answered(events: list[Any]) -> bool:
    return isinstance(events[-1], ModelResponded)


def test_two_models_with_the_same_settings_share_one_client_and_connection() -> None:
    with ScriptedServer(replies(2)) as server:
        a = http_model("openai", base_url=server.url, key="sk-a")
        b = http_model("openai", base_url=server.url, key="sk-b")  # keys go per request

        async def main() -> None:
            assert answered(await call(a)) and answered(await call(b))
            assert a._client is b._client
            await a.aclose()
            await b.aclose()

        anyio.run(main)
        assert server.connections == 1


def test_models_with_different_base_urls_do_not_share() -> None:
    with ScriptedServer(replies(1)) as one, ScriptedServer(replies(1)) as two:
        a = http_model("openai", base_url=one.url, key="k")
        b = http_model("openai", base_url=two.url, key="k")

        async def main() -> None:
            assert answered(await call(a)) and answered(await call(b))
            assert a._client is not b._client
            await a.aclose()
            await b.aclose()

        anyio.run(main)


def test_the_pool_closes_when_its_last_user_closes() -> None:
    with ScriptedServer(replies(2)) as server:
        a = http_model("openai", base_url=server.url, key="k")
        b = http_model("openai", base_url=server.url, key="k")

        async def main() -> None:
            await call(a)
            await call(b)
            shared = a._client
            assert shared is not None
            await a.aclose()
            assert not shared.is_closed  # b still uses it
            await b.aclose()
            assert shared.is_closed

        anyio.run(main)


def test_a_model_closed_and_used_again_takes_a_new_pool() -> None:
    with ScriptedServer(replies(2)) as server:
        model = http_model("openai", base_url=server.url, key="k")

        async def main() -> None:
            await call(model)
            first = model._client
            await model.aclose()
            assert answered(await call(model))
            assert model._client is not first
            await model.aclose()

        anyio.run(main)


def test_a_second_event_loop_gets_a_fresh_client() -> None:
    with ScriptedServer(replies(2)) as server:
        model = http_model("openai", base_url=server.url, key="k")
        seen: list[Any] = []

        async def once() -> bool:
            events = await call(model)  # no aclose: the lease outlives the first loop
            seen.append(model._client)
            return answered(events)

        assert anyio.run(once)
        assert anyio.run(once)  # not the first loop's client, whose connection died with it
        assert seen[0] is not seen[1]


def test_a_model_made_inside_an_event_loop_takes_its_pool_at_once() -> None:
    async def main() -> bool:
        model = http_model("openai", base_url="http://127.0.0.1:9/v1", key="k")
        taken = model._client is not None and not model._client.is_closed  # before any call
        await model.aclose()
        return taken

    assert anyio.run(main)


def test_a_model_made_in_one_event_loop_works_in_the_next() -> None:
    with ScriptedServer(replies(1)) as server:

        async def make() -> HttpModel:
            return http_model("openai", base_url=server.url, key="k")

        model = anyio.run(make)  # its pool was taken in a loop that has ended

        async def use() -> bool:
            try:
                return answered(await call(model))
            finally:
                await model.aclose()

        assert anyio.run(use)


#: A caller may bring a client of either library while both exist.
LIBRARIES = pytest.mark.parametrize("library", [httpx2, httpx], ids=["httpx2", "httpx"])


@LIBRARIES
def test_the_callers_client_is_used_and_never_closed(library: Any) -> None:
    sent: list[str] = []

    async def record(request: Any) -> None:
        sent.append(str(request.url))

    with ScriptedServer(replies(1)) as server:

        async def main() -> Any:
            mine = library.AsyncClient(event_hooks={"request": [record]})
            model = http_model("openai", base_url=server.url, key="k", client=mine)
            assert answered(await call(model))
            await model.aclose()
            assert not mine.is_closed
            await mine.aclose()
            return mine

        anyio.run(main)
    assert sent == [f"{server.url}/chat/completions"]


@LIBRARIES
def test_a_client_from_the_options_is_used_by_the_session_and_left_open(library: Any) -> None:
    sent: list[str] = []

    async def record(request: Any) -> None:
        sent.append(request.method)

    with ScriptedServer(replies(1)) as server:

        async def main() -> bool:
            mine = library.AsyncClient(event_hooks={"request": [record]})
            options = AgentOptions(model="m", base_url=server.url, api_key="k", http_client=mine)
            async with Client(options) as client:
                await client.query("hi")
                await client.wait()
            still_open = not mine.is_closed
            await mine.aclose()
            return still_open

        assert anyio.run(main)
    assert sent == ["POST"]


@LIBRARIES
def test_the_options_refuse_a_client_that_is_not_an_async_client(library: Any) -> None:
    with pytest.raises(ConfigError, match=r"http_client.*httpx2\.AsyncClient"):
        AgentOptions(model="m", http_client=library.Client())


@LIBRARIES
def test_transport_trouble_through_a_callers_client_is_a_retryable_failure(library: Any) -> None:
    def refuse(request: Any) -> Any:
        raise library.ConnectError("connection refused", request=request)

    async def main() -> list[Any]:
        async with library.AsyncClient(transport=library.MockTransport(refuse)) as mine:
            model = http_model("openai", base_url="http://127.0.0.1:9/v1", key="k", client=mine)
            return await call(model)

    (failure,) = anyio.run(main)
    assert isinstance(failure, ModelCallFailed)
    assert failure.retryable
    assert (
        failure.message
        == "ConnectError: connection refused (http://127.0.0.1:9/v1/chat/completions)"
    )


@LIBRARIES
def test_a_pool_over_a_transport_of_either_library_serves_calls(library: Any) -> None:
    def serve(request: Any) -> Any:
        body = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        headers = {"content-type": "text/event-stream"}
        return library.Response(200, content=body + b"data: [DONE]\n\n", headers=headers)

    model = HttpModel(OpenAICodec(), api_key=Secret("sk-a"), transport=library.MockTransport(serve))

    async def main() -> list[Any]:
        try:
            return await call(model)
        finally:
            await model.aclose()

    assert answered(anyio.run(main))


def test_sessions_of_one_loop_share_a_connection() -> None:
    with ScriptedServer(replies(2)) as server:
        options = AgentOptions(model="m", base_url=server.url, api_key="k")

        async def main() -> None:
            async with Client(options) as first, Client(options) as second:
                for client in (first, second):
                    await client.query("hi")
                    await client.wait()

        anyio.run(main)
        assert server.connections == 1


def test_a_pool_spreads_many_models_over_shards_of_bounded_size() -> None:
    async def main() -> None:
        models = [
            http_model("openai", base_url="http://127.0.0.1:9/v1", key="k")
            for _ in range(2 * SHARD_LEASES + 1)
        ]
        clients = [model._client for model in models]
        shards = {id(client): clients.count(client) for client in clients}
        assert sorted(shards.values()) == [1, SHARD_LEASES, SHARD_LEASES]
        for model in (models[0], models[1], models[-1]):  # the third shard empties: closed
            await model.aclose()
        assert clients[-1] is not None and clients[-1].is_closed
        newcomer = http_model("openai", base_url="http://127.0.0.1:9/v1", key="k")
        assert newcomer._client is clients[0]  # the emptiest shard left
        for model in [*models[2:-1], newcomer]:
            await model.aclose()
        assert all(client is not None and client.is_closed for client in clients)

    anyio.run(main)


def test_a_pool_does_not_carry_cookies_from_one_model_to_another() -> None:
    cookies: list[str | None] = []

    def serve(request: httpx2.Request) -> httpx2.Response:
        cookies.append(request.headers.get("cookie"))
        body = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        headers = {"content-type": "text/event-stream", "set-cookie": "affinity=user-a; Path=/"}
        return httpx2.Response(200, content=body + b"data: [DONE]\n\n", headers=headers)

    transport = httpx2.MockTransport(serve)
    a = HttpModel(OpenAICodec(), api_key=Secret("sk-a"), transport=transport)
    b = HttpModel(OpenAICodec(), api_key=Secret("sk-b"), transport=transport)

    async def main() -> None:
        await call(a)
        await call(b)
        assert a._client is b._client
        await a.aclose()
        await b.aclose()

    anyio.run(main)
    assert cookies == [None, None]


def test_a_pool_admits_more_than_httpx2_default_hundred_connections() -> None:
    streams = 101  # httpx2's default pool would make the last one wait for a free connection
    with ScriptedServer([Reply(text="x", delay=1.0)] * streams) as server:
        models = [http_model("openai", base_url=server.url, key="k") for _ in range(streams)]

        async def main() -> None:
            async with anyio.create_task_group() as tasks:
                for model in models:
                    tasks.start_soon(call, model)
            for model in models:
                await model.aclose()

        anyio.run(main)
        assert server.connections == streams


def test_plain_http_loads_no_ca_bundle_and_https_pools_load_one(monkeypatch) -> None:
    loads: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def counting(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    tls_context.cache_clear()
    closed = "127.0.0.1:9"  # nothing listens: each call fails at connect, after its pool is made
    urls = [f"http://{closed}/a", f"https://{closed}/b", f"https://{closed}/c"]
    models = [http_model("openai", base_url=url, key="k") for url in urls]

    async def main() -> None:
        await call(models[0])
        assert loads == []
        for model in models[1:]:
            await call(model)
        for model in models:
            await model.aclose()

    anyio.run(main)
    assert len(loads) == 1
    tls_context.cache_clear()


def test_sessions_leave_no_connection_open_at_exit() -> None:
    program = textwrap.dedent(
        """
        import anyio
        from toolreel.shell import AgentOptions, Client
        from toolreel.shell.scripted import ScriptedServer, text

        with ScriptedServer([text("a"), text("b")]) as server:
            options = AgentOptions(model="m", base_url=server.url, api_key="k")

            async def main():
                async with Client(options) as one, Client(options) as two:
                    for client in (one, two):
                        await client.query("hi")
                        await client.wait()

            anyio.run(main)
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    leaks = [
        line
        for line in done.stderr.splitlines()
        # the warning's text, not the file path before it (which may name a folder "httpx2")
        if re.search(
            r"Warning: .*(unclosed (transport|<socket|<ssl)|httpx|httpcore)", line, re.IGNORECASE
        )
    ]
    assert leaks == []
