"""The HTTP connection pool under the SDK clients: the most recently used idle connection first.

What it is: the pool inside the httpx transport the ``openai`` and ``anthropic`` clients send
through. The SDKs, their requests, retries and errors, and httpcore's HTTP/1.1 connections are
unchanged; only the choice of connection is ours.

Why: httpcore's own pool re-examines every connection it holds each time a request arrives and
each time a response is closed, and for an idle connection that means a socket probe (a
``poll`` and a ``getpeername``). With C connections that is O(C) probes per event: against a
fast judge at high concurrency, dozens of probes per request and a large share of the client's
CPU (measured with ``benchmarks/scale.py``, see ``docs/scale.md``, "The connection pool"). Here an
idle connection is probed only when it is handed out: one probe per request.

The rules, for HTTP/1.1 (what the SDKs speak by default):

* A request takes the idle connection to its origin that was released last (a stack per
  origin); it is probed (``has_expired``: keep-alive expiry passed, or the server closed it),
  and an expired one is closed and the next one tried. None left: a new connection.
* At most ``max_connections`` requests are in flight; a further one waits for a slot, up to
  the request's ``pool`` timeout (then ``PoolTimeout``, as from httpcore's pool). Connections
  in use plus idle ones never exceed ``max_connections``: a new connection that would, first
  closes an idle one (of another origin; none of this origin was left).
* A released connection goes back on its stack while fewer than ``max_keepalive_connections``
  are idle; otherwise it is closed. An idle connection no request takes again stays open
  until :meth:`StackPool.aclose` (the SDK client's ``close``, at the end of the run); one the
  server closes meanwhile just holds its socket until then (httpcore's pool would notice at
  its next pass; at most ``max_keepalive_connections`` sockets).

Degenerate cases: a connection that fails to connect, or whose exchange raises (a dropped
connection, a malformed response, cancellation), is never reused; httpcore closes it. A request
that finds a connection busy (``ConnectionNotAvailable``, a race httpcore's pool handles by
retrying) is retried on another. Proxies configured in the environment (``HTTP_PROXY``,
``HTTPS_PROXY``, ``ALL_PROXY``) keep the SDK's default client and its pool, because a client
given a transport ignores them (:func:`sdk_http_client` returns ``None``). HTTP/2 is not used,
as by the SDKs' default clients.

The transport is httpx's own ``AsyncHTTPTransport`` (SSL context, request and response
conversion, exception mapping); the pool is swapped in for the one it built, whose
``create_connection`` still makes every connection (TLS, socket options, network backend).
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def proxies_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment names an HTTP proxy (which only the SDK's default client honours)."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name) or environ.get(name.upper()) for name in _PROXY_VARIABLES)


def _http_modules(sdk: Any) -> tuple[Any, Any] | None:
    """The httpx and httpcore modules the SDK's client is built on (httpx2/httpcore2 or httpx/httpcore)."""
    client_class = getattr(sdk, "DefaultAsyncHttpxClient", None)
    if client_class is None:
        return None
    for base in client_class.__mro__:
        root = base.__module__.split(".")[0]
        if root in ("httpx", "httpx2"):
            try:
                return importlib.import_module(root), importlib.import_module(root.replace("httpx", "httpcore"))
            except ImportError:
                return None
    return None


def sdk_http_client(sdk: Any, *, timeout: Any, limits: Any = None) -> Any | None:
    """An HTTP client for ``sdk`` (``openai`` or ``anthropic``) with the SDK's defaults and this pool.

    ``None`` when the SDK's default client should be used instead: proxies are configured in
    the environment, or the SDK doesn't expose its default client class. ``limits`` (an
    httpx ``Limits``) defaults to the SDK's own connection limits.
    """
    if proxies_configured():
        return None
    modules = _http_modules(sdk)
    if modules is None:
        return None
    http, core = modules
    limits = (
        limits
        or getattr(sdk, "DEFAULT_CONNECTION_LIMITS", None)
        or http.Limits(max_connections=1000, max_keepalive_connections=100)
    )
    transport = http.AsyncHTTPTransport(limits=limits)
    default_pool = getattr(transport, "_pool", None)
    if not isinstance(default_pool, core.AsyncConnectionPool):
        return None  # a transport laid out differently: keep its own pool
    transport._pool = StackPool(
        core,
        default_pool,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
    )
    return sdk.DefaultAsyncHttpxClient(transport=transport, timeout=timeout)


def _origin_key(origin: Any) -> tuple[bytes, bytes, int]:
    return (origin.scheme, origin.host, origin.port)


class StackPool:
    """An httpcore request interface over connections made by ``factory.create_connection``.

    ``core`` is the httpcore module (``httpcore2`` or ``httpcore``); ``factory`` a pool of it
    whose settings (SSL context, socket options, keep-alive expiry) every connection gets.
    """

    def __init__(
        self,
        core: Any,
        factory: Any,
        *,
        max_connections: int | None = 1000,
        max_keepalive_connections: int | None = 100,
    ) -> None:
        self._core = core
        self._factory = factory
        self._max_connections = max_connections if max_connections is not None else 2**31
        keepalive = max_keepalive_connections if max_keepalive_connections is not None else self._max_connections
        self._max_idle = min(keepalive, self._max_connections)
        self._idle: dict[tuple[bytes, bytes, int], list[Any]] = {}
        self._idle_count = 0
        self._in_use = 0
        self._slots: asyncio.Semaphore | None = None
        self.connections_made = 0
        """Connections created so far."""
        self.probes = 0
        """Idle connections examined (``has_expired``, a socket probe) so far: one per reuse, plus the expired."""

    # -- the request interface -------------------------------------------------------------

    async def handle_async_request(self, request: Any) -> Any:
        await self._take_slot(request)
        try:
            key = _origin_key(request.url.origin)
            while True:
                connection = await self._connection_for(request.url.origin, key)
                try:
                    response = await connection.handle_async_request(request)
                except self._core.ConnectionNotAvailable:
                    await self._put_back(connection, key)
                    continue
                except BaseException:
                    await self._put_back(connection, key)
                    raise
                break
        except BaseException:
            self._give_slot()
            raise
        return self._core.Response(
            status=response.status,
            headers=response.headers,
            content=_ReleasingStream(response.stream, self, connection, key),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        idle = [connection for stack in self._idle.values() for connection in stack]
        self._idle.clear()
        self._idle_count = 0
        for connection in idle:
            await _close(connection)

    async def __aenter__(self) -> StackPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def idle_connections(self) -> int:
        return self._idle_count

    # -- connections -----------------------------------------------------------------------

    async def _connection_for(self, origin: Any, key: tuple[bytes, bytes, int]) -> Any:
        """A connection for ``origin``, counted as in use: a live idle one, else a new one."""
        stack = self._idle.get(key)
        while stack:
            connection = stack.pop()
            self._idle_count -= 1
            self.probes += 1
            if connection.has_expired() or not connection.is_available():
                await _close(connection)
                continue
            self._in_use += 1
            return connection
        if self._in_use + self._idle_count >= self._max_connections:
            await self._close_one_idle()
        self._in_use += 1
        self.connections_made += 1
        return self._factory.create_connection(origin)

    async def _close_one_idle(self) -> None:
        for stack in self._idle.values():
            if stack:
                connection = stack.pop(0)  # the longest idle
                self._idle_count -= 1
                await _close(connection)
                return

    async def _put_back(self, connection: Any, key: tuple[bytes, bytes, int]) -> None:
        """A connection its request is done with: no longer in use; idle again, or closed."""
        self._in_use -= 1
        if connection.is_idle() and not connection.is_closed() and self._idle_count < self._max_idle:
            self._idle.setdefault(key, []).append(connection)
            self._idle_count += 1
        elif not connection.is_closed():
            await _close(connection)

    async def _release(self, connection: Any, key: tuple[bytes, bytes, int]) -> None:
        try:
            await self._put_back(connection, key)
        finally:
            self._give_slot()

    # -- slots -----------------------------------------------------------------------------

    async def _take_slot(self, request: Any) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_connections)
        if not self._slots.locked():
            await self._slots.acquire()
            return
        timeout = request.extensions.get("timeout", {}).get("pool")
        try:
            await asyncio.wait_for(self._slots.acquire(), timeout)
        except asyncio.TimeoutError:
            raise self._core.PoolTimeout("no connection slot came free within the pool timeout") from None

    def _give_slot(self) -> None:
        assert self._slots is not None
        self._slots.release()


async def _close(connection: Any) -> None:
    # Shielded: a cancelled request still closes the socket it leaves behind.
    await asyncio.shield(connection.aclose())


class _ReleasingStream:
    """A response body that hands its connection back to the pool when closed."""

    def __init__(self, stream: Any, pool: StackPool, connection: Any, key: tuple[bytes, bytes, int]) -> None:
        self._stream = stream
        self._pool = pool
        self._connection = connection
        self._key = key
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if hasattr(self._stream, "aclose"):
                await self._stream.aclose()
        finally:
            await self._pool._release(self._connection, self._key)


def pool_of(http_client: Any) -> StackPool | None:
    """The :class:`StackPool` under a client made by :func:`sdk_http_client`, else ``None``."""
    pool = getattr(getattr(http_client, "_transport", None), "_pool", None)
    return pool if isinstance(pool, StackPool) else None
