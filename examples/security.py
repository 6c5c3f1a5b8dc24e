"""Security: what the served loop refuses, request by request.

    python examples/security.py

`toolreel.web.app` (and `toolreel serve`) answers only to the host names it is served
by, takes a POST only as JSON from its own page (or a CORS origin you allow), and, given
a token (required off loopback), only from a caller that holds it. Each request below is
sent to the app in-process; the status and the error say which check refused it.
"""

from __future__ import annotations

import secrets

import anyio
import httpx2

from toolreel.shell import AgentOptions
from toolreel.testing import ScriptedServer, calculator
from toolreel.web import app

MESSAGE = {"message": "What is 25 plus 17?"}


async def probe(base_url: str) -> None:
    """Send a few requests, honest and not, and print how each is answered."""
    token = secrets.token_urlsafe(16)
    served = app(AgentOptions(base_url=base_url, model="calculator", api_key="none"), token=token)
    transport = httpx2.ASGITransport(app=served)
    bearer = {"Authorization": f"Bearer {token}"}
    attempts: list[tuple[str, str, dict[str, str], dict[str, str] | str]] = [
        ("no token", "127.0.0.1", {}, MESSAGE),
        ("a wrong token", "127.0.0.1", {"Authorization": "Bearer guess"}, MESSAGE),
        ("a rebinding host name", "rebind.example", bearer, MESSAGE),
        ("another site's page", "127.0.0.1", {**bearer, "Origin": "https://evil.example"}, MESSAGE),
        ("a form, not JSON", "127.0.0.1", bearer, "message=hi"),
        ("the token, JSON, no Origin", "127.0.0.1", bearer, MESSAGE),
    ]
    async with httpx2.AsyncClient(transport=transport) as http:
        for what, host, headers, body in attempts:
            url = f"http://{host}:8000/api/events"
            if isinstance(body, str):
                form = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
                answer = await http.post(url, headers=form, content=body)
            else:
                answer = await http.post(url, headers=headers, json=body)
            said = answer.json()["error"] if answer.status_code != 200 else "a chat streams"
            print(f"{what:<28} {answer.status_code}  {said[:70]}")


def main() -> None:
    """Probe an app with a token, the scripted calculator as its model."""
    with ScriptedServer(calculator) as server:
        anyio.run(probe, server.url)


if __name__ == "__main__":
    main()
