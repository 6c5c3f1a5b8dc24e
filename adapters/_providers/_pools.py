"""Connection pools shared by the HTTP models of one event loop.

A session's model used to build its own `httpx2.AsyncClient`, and with it a TLS
context that loads the CA bundle: most of what opening a session cost, and
most of the memory an open one held. Here the models of one event loop that
agree on provider, base URL and transport share a pool (its connections and
its TLS context), reference-counted: `acquire` hands out a `Lease` on one of
the pool's clients, and a client is closed when its last lease is released.

Theory of operation:
1. An `httpx2.AsyncClient` is bound to the event loop it first ran in, so the
   pools live in an anyio `RunVar` (one table per running loop, dropped with
   the loop): a second `anyio.run` starts with none, never a dead loop's client.
2. A lease taken in one loop and used in another is abandoned there (its count
   goes down; the client, bound to the other loop, is not awaited from this one)
   and a fresh lease is taken in the loop at hand.
3. Settings that differ per model — the key, headers, timeouts — travel with
   each request, so they need not split pools.
4. No pool keeps cookies: sessions of different users share it.
5. TLS: one context for the process, made when the first https pool is, as
   httpx2 makes it (`create_ssl_context`, which honours SSL_CERT_FILE); an
   http:// pool gets one that trusts nothing (it is never asked for TLS, and
   costs no CA bundle), so a plain-HTTP server never loads the bundle at all.
6. A pool admits any number of connections (a web backend may stream
   hundreds of answers at once), spread over shards: clients of at most
   `SHARD_LEASES` leases each. httpcore2 scans every connection of a client
   each time a request is queued or done (and probes each idle one's socket),
   so one client for a hundred sessions in flight spent a third of their CPU
   there; a shard holds about as many connections as its leases make requests
   at once. A lease goes to the shard with the fewest, a new shard is made when
   all are full, so sessions one after another still share one connection.
   Each shard keeps `KEEPALIVE` idle connections.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import anyio
import attrs

from toolreel.core.record import Record, Value

from ._clients import library_of

if TYPE_CHECKING:
    import ssl

    import anyio.lowlevel
    import httpx2
    from anyio.lowlevel import RunVar

    from ._clients import AsyncTransport

#: Idle connections a shard keeps open for reuse.
KEEPALIVE = 100
#: Leases (models: one per session) a shard's client serves before a new shard is made.
SHARD_LEASES = 16


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PoolKey(Value):
    """What models must agree on to share a pool (a transport: the same object)."""

    provider: str
    base_url: str
    transport: AsyncTransport | None = None


@attrs.define(eq=False, repr=False)
class _Shared(Record):
    """One shard of a pool: a client and how many leases hold it."""

    client: httpx2.AsyncClient  # or httpx's, over an httpx transport: the same API
    users: int = 0


#: Each key's shards, in the order they were made.
_Pools = dict[PoolKey, list[_Shared]]


@functools.cache
def _pools_var() -> RunVar[_Pools]:
    """The loop-local variable holding the pools: made at the first request, with
    anyio.lowlevel (which `import toolreel.shell` so leaves unloaded, as httpx2 does)."""
    return anyio.lowlevel.RunVar("toolreel_http_pools")


def _loop_pools() -> _Pools:
    """The running loop's pools (an empty table the first time)."""
    pools = _pools_var().get(None)
    if pools is None:
        pools = {}
        _pools_var().set(pools)
    return pools


class Lease:
    """One model's hold on a pooled client; `release` it when done."""

    def __init__(self, pools: _Pools, key: PoolKey, shared: _Shared) -> None:
        """Hold `shared` (already counted)."""
        self._pools = pools
        self._key = key
        self._shared: _Shared | None = shared
        self.client = shared.client

    def here(self) -> bool:
        """Whether the lease belongs to the running event loop."""
        return self._shared is not None and _pools_var().get(None) is self._pools

    def _drop(self) -> _Shared | None:
        """Count this lease out; its shard if it was the last one (the shard leaves the table)."""
        shared, self._shared = self._shared, None
        if shared is None:
            return None
        shared.users -= 1
        if shared.users > 0:
            return None
        shards = self._pools.get(self._key, [])
        if shared in shards:
            shards.remove(shared)
            if not shards:
                del self._pools[self._key]
        return shared

    def abandon(self) -> None:
        """Let go from another event loop: the client, bound to its own, is not closed here."""
        self._drop()

    async def release(self) -> None:
        """Let go; the last lease closes the client (if this is still its loop)."""
        here = self.here()
        shared = self._drop()
        if shared is not None and here:
            await shared.client.aclose()


def acquire(key: PoolKey) -> Lease:
    """A lease on the running loop's pool for `key`: its emptiest shard, or a new one if full."""
    pools = _loop_pools()
    shards = pools.setdefault(key, [])
    shared = min(shards, key=_users, default=None)
    if shared is None or shared.users >= SHARD_LEASES:
        shared = _Shared(client=_new_client(key))
        shards.append(shared)
    shared.users += 1
    return Lease(pools, key, shared)


def _users(shared: _Shared) -> int:
    """How many leases hold a shard (to pick the emptiest)."""
    return shared.users


def _new_client(key: PoolKey) -> httpx2.AsyncClient:
    """A client for one pool: shared TLS context, no cookies, no cap on connections.

    httpx2's, or httpx's for an httpx transport (only tests pass one).
    """
    import http.cookiejar  # noqa: PLC0415 - loaded with httpx2, by the first HTTP model

    httpx = library_of(key.transport)
    https = key.base_url.startswith("https:")
    refuse_all = http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
    client: httpx2.AsyncClient = httpx.AsyncClient(
        transport=key.transport,
        verify=tls_context() if https else _no_tls(),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=KEEPALIVE),
        cookies=http.cookiejar.CookieJar(refuse_all),
    )
    return client


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's TLS context for https pools, made as httpx2 makes its default one."""
    import httpx2  # noqa: PLC0415 - see _new_client

    return httpx2.create_ssl_context()


@functools.cache
def _no_tls() -> ssl.SSLContext:
    """For http:// pools: verifies certificates but trusts none (and loads no bundle)."""
    import ssl  # noqa: PLC0415 - see _new_client

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
