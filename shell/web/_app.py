"""`app(options)`: the loop served over HTTP — the AI SDK chat route, plain events, sessions, page.

Routes (the contract with the page; docs/guides/streaming.md):

- `GET /`: the page (shell/web/static/index.html).
- `GET /api/info`: provider, model, and whether the model is the scripted one.
- `POST /api/chat`: the body `DefaultChatTransport` sends (`{id, messages,
  trigger, messageId}`); the last user message's text is the prompt and `id`
  the session (a second message continues it). Answers with the UI message stream.
  When `messages` ends with an assistant message holding approval responses
  (useChat's `addToolApprovalResponse`), they decide the calls the paused turn
  holds and the stream continues that message (shell/web/_approvals.py).
- `GET /api/chat/{id}/stream`: 204, "no stream to resume" (what `useChat({resume:
  true})` asks on mount; a turn whose client went away was cancelled, never kept running).
- `POST /api/events`: `{id, message}`; answers with the plain event stream.
- `POST /api/approvals`: `{id, call_id, approved, reason?, protocol?}`: decide a
  call the paused turn of session `id` holds; answers with what follows, as the
  UI message stream (or `protocol: "events"`, the plain one).
- `POST /api/agui`: an AG-UI `RunAgentInput` (`threadId`: the session, new when
  unknown; `runId`: the run); answers with the AG-UI event stream
  (shell/web/_agui_stream.py), a held call as the run's interrupt, and a
  `resume` answering it continues the turn (shell/web/_agui_input.py).
  Needs the `agui` extra (`ag-ui-protocol`), loaded only here.
- `GET /api/sessions`, `GET /api/sessions/{id}`: the journal's chat sessions (a
  fork's or a rerun's with `from`, its origin).
- `POST /api/sessions/{id}/fork`: `{at_round | at_turn, results?, prompt?, system?,
  into?}`: fork the session (201 `{id, from, continues}`; shell/web/_whatif.py);
  `POST /api/sessions/{id}/continue`: stream the turn a session owes (a fork's);
  `GET /api/sessions/{a}/diff/{b}`: the two sessions compared (`diff_sessions`).

Every turn runs in a `Client` of its own over the app's one journal, or, with
`sessions=`, in a session of elsewhere: `toolreel.temporal.WorkflowChats` serves
session workflows on Temporal the same way (shell/web/_conversations.py); errors
are `{"error": message}` with a 4xx/5xx status. Before any route, a request
passes the guards (host, token, origin: shell/web/_guard.py; body limits:
shell/web/_limits.py).
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeGuard

import attrs
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from toolreel.adapters import Journal, ModelPort
from toolreel.core import ConfigError, ToolreelError, UsageError
from toolreel.core.record import Record
from toolreel.shell import AgentOptions, open_journal
from toolreel.shell.engine import MAX_JSON_DEPTH, json_depth, sources_opened

from ._approvals import ApprovalDecision, approval_responses
from ._conversations import Conversations
from ._guard import Check, Guard
from ._hosts import AllowedHosts, HostCheck
from ._json import json_text
from ._limits import BODY_TIMEOUT, MAX_BODY_BYTES, BodyLimit
from ._origins import OriginCheck
from ._respond import (
    agui_response,
    approval_response,
    chat_response,
    continue_response,
    decision_response,
    error_response,
)
from ._sessions import chat_sessions, session_detail, session_summary
from ._token import TokenCheck
from ._whatif import ForkRequest, diff_data, fork_session, owes_a_turn

#: What the page shows when the server runs the offline scripted model.
SCRIPTED_LABEL = "Offline scripted calculator model — not a real LLM"
#: The longest session id a request may name.
MAX_ID_LENGTH = 200
#: Served at `/` when the package was installed without its page.
NO_PAGE = (
    "<!doctype html><meta charset=utf-8><title>toolreel</title>"
    "<p>toolreel is serving: POST /api/chat (AI SDK UI message stream), POST /api/events, "
    "GET /api/sessions. The page itself is not installed.</p>"
)


@attrs.define(kw_only=True, repr=False)
class Served(Record):
    """What every route of one app shares (`options` gains the MCP tools once connected)."""

    options: AgentOptions
    journal: Journal
    model: ModelPort | None
    scripted: bool
    sessions: Conversations | None = None


def app(
    options: AgentOptions,
    *,
    journal: str | Path | Journal | None = None,
    model: ModelPort | None = None,
    scripted: bool = False,
    cors_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    body_timeout: float = BODY_TIMEOUT,
    sessions: Conversations | None = None,
) -> Starlette:
    """The ASGI app serving the loop with `options` (mount it in a FastAPI/Starlette app).

    `journal`: a path or a Journal (default `options.journal`, else in memory);
    a path is opened here and closed when the app's lifespan ends. `model`
    replaces the options' provider (tests, in-process models). `scripted` says
    that the model is the offline scripted one (shown by `/api/info`).
    `cors_origins`: pages on other origins that may call the API (e.g. a Next.js
    dev server's "http://localhost:3000"; none by default). The options'
    `mcp_servers` are connected once when the app's lifespan starts and shared by
    every request (an app mounted where its lifespan never runs connects per turn).

    Who may call it (docs/guides/security.md): requests naming a host other than
    127.0.0.1, localhost, [::1] and `allowed_hosts` are 400 ("*": any);
    with a `token`, every request must carry it (`Authorization: Bearer`, or the
    cookie `/?token=...` sets); a POST must be JSON from this server's page or
    a `cors_origins` page (else 403); a body over `max_body_bytes` is 413, one not
    arrived within `body_timeout` seconds 408.

    `sessions`: where the sessions live and run instead of the journal and this
    process, e.g. `toolreel.temporal.WorkflowChats(client)`: each chat a session
    workflow on Temporal, its workers holding the model and the tools (the
    options then only name the model `/api/info` shows). The routes, the streams
    and the approvals are the same.

    Args:
        options: The model, the tools and the loop's limits every chat runs with.
        journal: Where sessions are kept: a path, a `postgresql://` URL or a `Journal`.
        model: A model port to use instead of the one the options describe.
        scripted: The model is the offline scripted one (the page says so).
        cors_origins: Pages on other origins that may call the API.
        allowed_hosts: Host names served besides the loopback ones ("*": any).
        token: The access token every request must carry (required off loopback).
        max_body_bytes: The largest request body taken.
        body_timeout: Seconds a request body may take to arrive.
        sessions: Where the sessions live and run (default: the journal, in this process).

    Returns:
        A Starlette app: serve it with uvicorn, or mount it in your own site.
    """
    guards = _guards(
        cors_origins, allowed_hosts, token, max_body_bytes=max_body_bytes, timeout=body_timeout
    )
    given = journal if journal is not None else options.journal
    store = open_journal(given)
    owned = given is None or isinstance(given, str | Path)
    served = Served(
        options=attrs.evolve(options, journal=store, session_id=None),
        journal=store,
        model=model,
        scripted=scripted,
        sessions=sessions,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        """Connect the MCP servers once for every request; close what the app opened."""
        try:
            async with sources_opened(served.options) as opened:
                served.options = opened
                yield
        finally:
            if owned:
                store.close()

    routes = [
        Route("/", _page, methods=["GET"]),
        Route("/api/info", _handler(served, _info), methods=["GET"]),
        Route("/api/chat", _handler(served, _chat), methods=["POST"]),
        Route("/api/chat/{session_id}/stream", _no_stream, methods=["GET"]),
        Route("/api/events", _handler(served, _events), methods=["POST"]),
        Route("/api/approvals", _handler(served, _approval), methods=["POST"]),
        Route("/api/agui", _handler(served, _agui), methods=["POST"]),
        Route("/api/sessions", _handler(served, _sessions), methods=["GET"]),
        Route("/api/sessions/{session_id}", _handler(served, _session), methods=["GET"]),
        Route("/api/sessions/{session_id}/fork", _handler(served, _fork), methods=["POST"]),
        Route("/api/sessions/{session_id}/continue", _handler(served, _continue), methods=["POST"]),
        Route("/api/sessions/{a}/diff/{b}", _handler(served, _diff), methods=["GET"]),
    ]
    return Starlette(routes=routes, middleware=guards, lifespan=lifespan)


def _guards(
    cors_origins: Sequence[str],
    allowed_hosts: Sequence[str],
    token: str | None,
    *,
    max_body_bytes: int,
    timeout: float,
) -> list[Middleware]:
    """The middleware in front of the routes, outermost first (shell/web/_guard.py).

    The host is checked before CORS (a rebinding page gets nothing); the token and
    origin checks come after it, so a trusted page's preflight passes and it can read
    their refusals.
    """
    if max_body_bytes < 1:
        raise ConfigError("max_body_bytes", max_body_bytes, "a positive number of bytes")
    if not timeout > 0:
        raise ConfigError("body_timeout", timeout, "a positive number of seconds")
    middleware = [Middleware(Guard, checks=[HostCheck(AllowedHosts.of(allowed_hosts))])]
    if cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["content-type", "authorization"],
                expose_headers=["x-vercel-ai-ui-message-stream"],
            )
        )
    checks: list[Check] = [] if token is None else [TokenCheck(token)]
    checks.append(OriginCheck.of(cors_origins))
    middleware.append(Middleware(Guard, checks=checks))
    middleware.append(Middleware(BodyLimit, max_bytes=max_body_bytes, timeout=timeout))
    return middleware


#: A route of the app: what it answers to a request.
RouteFunction = Callable[[Served, Request], Awaitable[Response]]


def _handler(served: Served, route: RouteFunction) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint calling `route(served, request)`; toolreel errors as JSON."""

    async def endpoint(request: Request) -> Response:
        try:
            return await route(served, request)
        except ToolreelError as exc:
            return error_response(exc)

    return endpoint


async def _page(_: Request) -> Response:
    """The page, from the package's data (a short note if it is missing)."""
    page = importlib.resources.files("toolreel.web").joinpath("static", "index.html")
    if not page.is_file():
        return HTMLResponse(NO_PAGE)
    return HTMLResponse(page.read_text(encoding="utf-8"))


async def _info(served: Served, _: Request) -> Response:
    """Which model the server talks to."""
    options = served.options
    label = SCRIPTED_LABEL if served.scripted else f"{options.provider} · {options.model_name}"
    return JSONResponse(
        {
            "provider": options.provider,
            "model": options.model_name,
            "scripted": served.scripted,
            "label": label,
        }
    )


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object (a `UsageError` if it is not one)."""
    raw = await request.body()
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise UsageError(f"the body's JSON is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"the body is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError("the body must be a JSON object")
    return data


def _session_id(data: dict[str, Any]) -> str | None:
    """The session the body names (`id`), or None for a new one."""
    given = data.get("id")
    if given is None or given == "":
        return None
    if not _servable_id(given):
        raise UsageError(
            f"'id' must be a string of at most {MAX_ID_LENGTH} printable characters, "
            "not only spaces, without '/', and not '.' or '..'"
        )
    return given


def _servable_id(given: object) -> TypeGuard[str]:
    """Whether `given` can be a session id: one `/api/sessions/{id}` can open again.

    A `/` ends the path segment, `.` and `..` are resolved away by browsers and
    clients before the request is sent, and blank or non-printable ids cannot be
    told apart on the page.
    """
    return (
        isinstance(given, str)
        and len(given) <= MAX_ID_LENGTH
        and given.isprintable()
        and given.strip() != ""
        and "/" not in given
        and given not in (".", "..")
    )


def last_user_text(messages: Any) -> str:
    """The text of the last user message of an AI SDK `messages` list (its text parts)."""
    if not isinstance(messages, list):
        raise UsageError("'messages' must be a list of UI messages")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise UsageError("'messages' holds no user message")
    last = users[-1]
    parts = last.get("parts")
    if isinstance(parts, list):
        texts = [
            p["text"]
            for p in parts
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        text = "".join(texts)
    else:
        content = last.get("content")  # older AI SDK messages: `content` text
        text = content if isinstance(content, str) else ""
    if not text.strip():
        raise UsageError("the last user message has no text")
    return text


async def _chat(served: Served, request: Request) -> Response:
    """`POST /api/chat`: one turn as the AI SDK UI message stream, or the approval
    responses of useChat's closing assistant message and what follows them."""
    data = await _body(request)
    trigger = data.get("trigger", "submit-message")
    if trigger != "submit-message":
        raise UsageError(
            f"trigger {trigger!r} is not supported: the journal keeps every turn; "
            "send the prompt again as a new message"
        )
    responses = approval_responses(data.get("messages"))
    if responses is not None:
        session_id = _session_id(data)
        if session_id is None:
            raise UsageError("'id' (the session) is required with approval responses")
        return approval_response(
            served.options,
            session_id,
            responses.decisions,
            message_id=responses.message_id,
            model=served.model,
            sessions=served.sessions,
        )
    return chat_response(
        served.options,
        last_user_text(data.get("messages")),
        session_id=_session_id(data),
        model=served.model,
        sessions=served.sessions,
    )


async def _no_stream(_: Request) -> Response:
    """No stream to resume: `useChat({resume: true})` mounts and stays ready."""
    return Response(status_code=204)


async def _events(served: Served, request: Request) -> Response:
    """`POST /api/events`: one turn as the plain event stream."""
    data = await _body(request)
    message = data.get("message")
    if not isinstance(message, str) or not message.strip():
        raise UsageError("'message' must be a non-empty string")
    return chat_response(
        served.options,
        message,
        session_id=_session_id(data),
        protocol="events",
        model=served.model,
        sessions=served.sessions,
    )


async def _approval(served: Served, request: Request) -> Response:
    """`POST /api/approvals`: approve or deny a held call, and stream the turn that goes on."""
    data = await _body(request)
    session_id, call_id = _session_id(data), data.get("call_id")
    approved, reason = data.get("approved"), data.get("reason", "")
    protocol = data.get("protocol", "ui")
    if session_id is None or not isinstance(call_id, str) or not call_id:
        raise UsageError("'id' (the session) and 'call_id' are required")
    if not isinstance(approved, bool) or not isinstance(reason, str):
        raise UsageError("'approved' must be true or false, 'reason' a string")
    if protocol not in ("ui", "events"):
        raise UsageError('\'protocol\' must be "ui" or "events"')
    decision = ApprovalDecision(call_id=call_id, approve=approved, reason=reason)
    return decision_response(
        served.options,
        session_id,
        decision,
        protocol=protocol,
        model=served.model,
        sessions=served.sessions,
    )


async def _agui(served: Served, request: Request) -> Response:
    """`POST /api/agui`: an AG-UI run (a prompt, or the answers to the last run's interrupts)."""
    data = await _body(request)
    try:
        from ._agui_input import agui_request  # noqa: PLC0415 - the agui extra, loaded here only
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("ag_ui", "pydantic"):
            raise
        message = "the AG-UI route needs ag-ui-protocol: pip install 'toolreel[agui]'"
        return JSONResponse({"error": message}, status_code=501)
    asked = agui_request(data)
    if not _servable_id(asked.thread_id):
        raise UsageError(
            f"'threadId' must be a string of at most {MAX_ID_LENGTH} printable characters, "
            "not only spaces, without '/', and not '.' or '..'"
        )
    return agui_response(
        served.options,
        asked.thread_id,
        asked.run_id,
        prompt=asked.prompt,
        decisions=asked.decisions,
        model=served.model,
        sessions=served.sessions,
    )


async def _sessions(served: Served, _: Request) -> Response:
    """`GET /api/sessions`: the chat sessions, newest first."""
    journal = await _journal(served)
    rows = [session_summary(journal, sid) for sid in chat_sessions(journal)]
    return JSONResponse({"sessions": rows})


async def _session(served: Served, request: Request) -> Response:
    """`GET /api/sessions/{id}`: one session's turns, rounds and transcript."""
    session_id = request.path_params["session_id"]
    detail = session_detail(await _journal(served, session_id), session_id)
    if detail is None:
        return JSONResponse({"error": f"no session {session_id!r}"}, status_code=404)
    return Response(json_text(detail), media_type="application/json; charset=utf-8")


async def _journal(served: Served, session_id: str | None = None) -> Journal:
    """Where the sessions to show are read: the app's journal, or what `sessions` gives."""
    if served.sessions is None:
        return served.journal
    return await served.sessions.journal(session_id)


def _own_journal(served: Served) -> Journal:
    """The app's journal, where forks are written (not a `sessions=` app's: 400)."""
    if served.sessions is not None:
        raise UsageError("forks are written to the app's journal: not with sessions= elsewhere")
    return served.journal


async def _fork(served: Served, request: Request) -> Response:
    """`POST /api/sessions/{id}/fork`: write a fork of the session; 201 with its id."""
    asked = ForkRequest.of(await _body(request))
    if asked.into is not None and not _servable_id(asked.into):
        raise UsageError(
            f"'into' must be a string of at most {MAX_ID_LENGTH} printable characters, "
            "not only spaces, without '/', and not '.' or '..'"
        )
    journal = _own_journal(served)
    session_id = request.path_params["session_id"]
    made = await fork_session(journal, served.options, served.model, session_id, asked)
    return Response(json_text(made), status_code=201, media_type="application/json; charset=utf-8")


async def _continue(served: Served, request: Request) -> Response:
    """`POST /api/sessions/{id}/continue`: the turn the session owes, streamed (`{protocol?}`)."""
    data = await _body(request)
    protocol = data.get("protocol", "ui")
    if protocol not in ("ui", "events"):
        raise UsageError('\'protocol\' must be "ui" or "events"')
    session_id = request.path_params["session_id"]
    owes_a_turn(_own_journal(served), session_id)
    return continue_response(served.options, session_id, protocol=protocol, model=served.model)


async def _diff(served: Served, request: Request) -> Response:
    """`GET /api/sessions/{a}/diff/{b}`: what differs between two sessions, turn by turn."""
    a, b = request.path_params["a"], request.path_params["b"]
    data = diff_data(await _journal(served, a), a, b)
    return Response(json_text(data), media_type="application/json; charset=utf-8")
