"""`MCPServer`: where an MCP server is; `MCPConnection`: it connected, its tools as toolreel Tools.

An `MCPServer` is a description (frozen): a command to run (stdio) or a URL
(streamable HTTP), a name prefix, a timeout. Each `open()` is one connection,
held by a background task of its own so that whatever the SDK's transport does
when the server dies (closed pipes, a failed HTTP stream) ends that connection
only: the calls in flight and those after become error results; the caller's
own tasks are never cancelled by it.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import attrs
import httpx2
import mcp.types as mcp_types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from returns.result import Failure, Result

from toolreel.core import ConfigError, ToolreelError
from toolreel.core.record import Record, Value
from toolreel.shell import Tool
from toolreel.shell.engine import ToolOutput, describe

from ._results import result_text

#: Seconds to start a server, shake hands and list its tools before giving up.
CONNECT_TIMEOUT = 30.0


class MCPConnectError(ToolreelError, ConnectionError):
    """An MCP server that cannot be started or reached, or that does not answer as one."""


class MCPToolError(ToolreelError):
    """An MCP tool called directly (`await tool(args)`) that answered with an error."""


def _timeout(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None or a number of seconds > 0."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
    ):
        raise ConfigError(attribute.name, value, "a number of seconds > 0, or None")


def _text(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A str (the prefix may be empty)."""
    if not isinstance(value, str):
        raise ConfigError(attribute.name, value, "a str")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class MCPServer(Value):
    """An MCP server whose tools a Client offers: `MCPServer.stdio(...)` or `MCPServer.http(...)`.

    `prefix` goes before each tool's name (`prefix="fs_"`: `fs_read_file`);
    `timeout` (seconds) is its tools' own timeout (None: the run's
    `tool_timeout`). `async with server as connection:` connects once;
    `AgentOptions(mcp_servers=[server])` connects for each Client's lifetime.
    """

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = attrs.field(default=None, repr=False)
    prefix: str = attrs.field(default="", validator=_text)
    timeout: float | None = attrs.field(default=None, validator=_timeout)
    connect_timeout: float = attrs.field(default=CONNECT_TIMEOUT, validator=_timeout)
    _entered: list[contextlib.AbstractAsyncContextManager[MCPConnection]] = attrs.field(
        factory=list, init=False, repr=False, eq=False
    )

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        prefix: str = "",
        timeout: float | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> MCPServer:
        """A server run as `command args...`, spoken to over its stdin and stdout.

        `env` is added to the few variables the SDK passes on (HOME, PATH, ...):
        the server does not see the rest of your environment (API keys included).
        """
        if not isinstance(command, str) or not command.strip():
            raise ConfigError("command", command, "the server's program, a non-empty str")
        if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
            raise ConfigError("args", args, "a list of str (split a command line with shlex)")
        return cls(
            command=command,
            args=tuple(args),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            prefix=prefix,
            timeout=timeout,
            connect_timeout=connect_timeout,
        )

    @classmethod
    def command_line(cls, line: str, **options: Any) -> MCPServer:
        """A stdio server from one command line, `"npx -y @scope/server /tmp"` (shell quoting)."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise ConfigError("command line", line, f"a command line ({exc})") from exc
        if not words:
            raise ConfigError("command line", line, "a program and its arguments")
        return cls.stdio(words[0], words[1:], **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        prefix: str = "",
        timeout: float | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> MCPServer:
        """A server at `url` over streamable HTTP (`headers` sent with every request)."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError("url", url, "an http:// or https:// URL")
        return cls(
            url=url,
            headers=dict(headers) if headers is not None else None,
            prefix=prefix,
            timeout=timeout,
            connect_timeout=connect_timeout,
        )

    @property
    def label(self) -> str:
        """The server as messages name it: its URL or its command line."""
        return self.url or shlex.join([self.command or "", *self.args])

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[MCPConnection]:
        """Connect (start the server, shake hands, list its tools); disconnect at the end.

        A server that cannot be started or reached is a `ConfigError` (no such
        program) or an `MCPConnectError`, raised here.
        """
        try:
            async with anyio.create_task_group() as tasks:
                stop = anyio.Event()
                connection: MCPConnection = await tasks.start(self._serve, stop)
                try:
                    yield connection
                finally:
                    stop.set()
        except BaseExceptionGroup as group:  # the task group wraps the one error there is
            inner = _first(group)
            raise inner from inner.__cause__

    async def __aenter__(self) -> MCPConnection:
        """`async with server as connection`: one connection for the block."""
        opening = self.open()
        connection = await opening.__aenter__()
        self._entered.append(opening)
        return connection

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Disconnect the connection the matching `__aenter__` made."""
        await self._entered.pop().__aexit__(kind, exc, tb)

    async def _serve(
        self, stop: anyio.Event, *, task_status: anyio.abc.TaskStatus[MCPConnection]
    ) -> None:
        """Hold one connection until `stop`; what ends it early is kept, never raised."""
        connection: MCPConnection | None = None
        try:
            async with self._transport() as (read, write), ClientSession(read, write) as session:
                connection = await self._handshake(session)
                task_status.started(connection)
                await stop.wait()
        except Exception as exc:
            cause = _first(exc)
            if connection is not None:
                connection.lost = describe(cause)
            elif isinstance(cause, ToolreelError):  # ours already (no such program)
                raise cause from cause.__cause__
            else:
                raise self._connect_error(cause) from cause

    async def _handshake(self, session: ClientSession) -> MCPConnection:
        """Initialize the session and list every tool (all pages), within `connect_timeout`."""
        with anyio.fail_after(self.connect_timeout):
            await session.initialize()
            listed: list[mcp_types.Tool] = []
            cursor: str | None = None
            while True:
                params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                listed.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return MCPConnection(server=self, session=session, listed=tuple(listed))

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """The SDK's transport for this server: a child process, or an HTTP client."""
        if self.url is not None:
            client = httpx2.AsyncClient(
                headers=dict(self.headers or {}), timeout=httpx2.Timeout(30.0, read=300.0)
            )
            return _http(self.url, client)
        assert self.command is not None  # stdio() or http() made it
        path = (self.env or {}).get("PATH")
        if shutil.which(self.command, path=path) is None:
            raise ConfigError(
                "command",
                self.command,
                "a program on PATH, or a path to an executable file (not found)",
            )
        params = StdioServerParameters(
            command=self.command,
            args=list(self.args),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )
        return stdio_client(params)

    def _connect_error(self, cause: BaseException) -> MCPConnectError:
        """What went wrong while connecting, as an error naming the server."""
        if isinstance(cause, TimeoutError):
            detail = f"no answer within {self.connect_timeout:g} s (is it an MCP server?)"
        elif isinstance(cause, MCPError):
            detail = cause.message
        else:
            detail = describe(cause)
        return MCPConnectError(f"cannot connect to MCP server {self.label}: {detail}")


@contextlib.asynccontextmanager
async def _http(url: str, client: httpx2.AsyncClient) -> AsyncIterator[Any]:
    """The streamable HTTP transport over `client`, closed with it."""
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


def _first(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the exception itself when it is none)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


@attrs.define(kw_only=True, eq=False, repr=False)
class MCPConnection(Record):
    """One open connection to an MCP server: its tools, and calls to them.

    `lost` says why the connection ended early (the server died, its HTTP
    stream failed); from then on every call is an error result at once.
    """

    server: MCPServer
    session: ClientSession
    listed: tuple[mcp_types.Tool, ...]
    lost: str | None = None

    def tools(self) -> list[Tool]:
        """The server's tools as toolreel Tools, their input schemas as the server gave them."""
        return [self._tool(listed) for listed in self.listed]

    def _tool(self, listed: mcp_types.Tool) -> MCPTool:
        """One listed tool as a Tool whose runs call the server."""
        schema = dict(listed.input_schema)
        hints = listed.annotations
        name = self.server.prefix + listed.name

        async def handler(arguments: dict[str, Any]) -> str:
            """Call the tool directly: its text (images are the loop's, which shows them to
            the model), or MCPToolError with the server's message."""
            outcome = await self.call(listed.name, arguments)
            if isinstance(outcome, Failure):
                raise MCPToolError(outcome.failure())
            output = outcome.unwrap()
            return output.text if isinstance(output, ToolOutput) else output

        return MCPTool(
            name=name,
            description=listed.description or listed.title or "",
            parameters=schema,
            handler=handler,
            argument_types={},
            required=tuple(schema.get("required", ())),
            takes_args_dict=True,
            timeout=self.server.timeout,
            # Safe to run again after a crash: the server says it reads only, or is idempotent.
            idempotent=bool(hints and (hints.read_only_hint or hints.idempotent_hint)),
            call=_bind(self.call, listed.name),
        )

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Result[str | ToolOutput, str]:
        """Call the server's tool `name`: its output (text, images), or the error to read."""
        if self.lost is not None:
            return Failure(f"MCP server {self.server.label} is gone ({self.lost})")
        try:
            result = await self.session.call_tool(name, dict(arguments))
        except MCPError as exc:
            return Failure(f"MCP server {self.server.label} failed the call: {exc.message}")
        except Exception as exc:  # a closed transport, a result that breaks its schema
            return Failure(f"MCP call to {name} failed: {describe(_first(exc))}")
        return result_text(name, result)


def _bind(
    call: Callable[[str, Mapping[str, Any]], Awaitable[Result[str | ToolOutput, str]]], name: str
) -> Callable[[Mapping[str, Any]], Awaitable[Result[str | ToolOutput, str]]]:
    """`call` with the server-side tool name bound."""

    async def bound(arguments: Mapping[str, Any]) -> Result[str | ToolOutput, str]:
        """Call the bound tool."""
        return await call(name, arguments)

    return bound


@attrs.frozen(kw_only=True, eq=False, repr=False)
class MCPTool(Tool[[dict[str, Any]], Awaitable[str]]):
    """A tool of an MCP server: the model's arguments go to the server as they are.

    The server checks them against its own schema; its error text (or a
    server error, or a lost connection) is the error result the model reads.
    """

    call: Callable[[Mapping[str, Any]], Awaitable[Result[str | ToolOutput, str]]]

    async def run(self, arguments_json: str) -> Result[str | ToolOutput, str]:
        """Run one call from the model's JSON arguments (a JSON object) on the server."""
        try:
            arguments = json.loads(arguments_json or "{}")
        except ValueError as exc:
            return Failure(f"arguments are not valid JSON: {exc}")
        if not isinstance(arguments, dict):
            return Failure(f"arguments must be a JSON object, got {arguments_json}")
        return await self.call(arguments)


__all__ = ["MCPConnectError", "MCPConnection", "MCPServer", "MCPTool", "MCPToolError"]
