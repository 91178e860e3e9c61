"""Transport limits of `hivex serve`: who may ask (Host header, Origin, token) and what a request or a
WebSocket may cost (body size, content type, time, connections), checked before any route runs
(docs/serve.md, "Limits and exposure").

`TransportGuard` is a pure ASGI middleware (Starlette's BaseHTTPMiddleware would buffer the whole body
first): it refuses a request from its head alone where it can (Host, Origin, token, a declared
Content-Length over the limit, a Content-Type other than JSON) and otherwise reads the body itself,
stopping at the byte limit and at a deadline, so no request holds more than `max_body_bytes` of memory or
a worker for longer than `read_timeout_s`. A WebSocket is checked the same way at its handshake, refused
(429) past `max_ws_per_client` open ones from its address or `max_websockets` in all (so WebSockets never
fill uvicorn's connection limit and lock HTTP out), held to `max_body_bytes` a message, and closed after
`ws_idle_timeout_s` without a message (pings do not count). The token a request presented is recorded in
the scope (`TOKEN_INDEX`): sessions belong to it.

`head_timeout_protocol` is uvicorn's h11 protocol with a deadline for the request head, which uvicorn
has not (a connection that sends nothing, or a few header bytes a minute, was held for ever). No FastAPI
or uvicorn import at module level: `head_timeout_protocol` imports uvicorn when called.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
UNAUTHENTICATED_PATHS = frozenset({"/health"})
TOKEN_INDEX = "hivex.token_index"  # scope key: which of the server's tokens the request presented
WS_IDLE_CLOSE = 1001  # the close code of a WebSocket idle past its timeout ("going away")


MAX_JSON_DEPTH = 32  # request bodies nest 5 levels at most (an action's parts); deeper ones are refused
#: a request head's header bytes; uvicorn's h11 limit (the same figure) holds only for a head that arrives in
#: pieces: one that arrives in one read (a 70 KB header) was served
MAX_HEAD_BYTES = 16 * 1024


def json_depth(value: Any, stop_after: int = MAX_JSON_DEPTH) -> int:
    """How deeply lists and dicts nest in parsed JSON `value` (a scalar is 0), counted without recursion
    and stopping once past `stop_after` (the routes' own validation recurses)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > stop_after:
                return deepest
            stack.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class Refusal(Exception):
    """A request refused before its route runs: HTTP status and a one-line reason."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def is_loopback(host: str) -> bool:
    """Whether binding `host` serves this machine only (localhost, 127.0.0.0/8, ::1)."""
    if host.strip().lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts_for(bind_host: str, extra: Iterable[str] = ()) -> tuple[str, ...] | None:
    """The Host header names a server bound to `bind_host` accepts: the loopback names plus `extra` when
    bound to loopback (or when `extra` is given), None (any) when bound elsewhere without `extra`."""
    extra = tuple(normal_host(h) for h in extra)
    if not is_loopback(bind_host) and not extra:
        return None
    return tuple(dict.fromkeys(LOOPBACK_NAMES + extra))


def normal_host(host_header: str) -> str:
    """The host name of a Host header, lower case, without port, brackets or trailing dot."""
    host = host_header.strip().lower()
    if host.startswith("["):  # [::1]:8000
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        host = host.partition(":")[0]
    return host.rstrip(".")


def origin_allowed(origin: str, allowed: Iterable[str] = ()) -> bool:
    """Whether a browser page of `origin` (an Origin header: scheme://host[:port], or "null") may call:
    pages served from loopback, and the origins in `allowed` (compared exactly; "*" allows any)."""
    origin = origin.strip().lower().rstrip("/")
    allowed = {a.strip().lower().rstrip("/") for a in allowed}
    if "*" in allowed or origin in allowed:
        return True
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in ("http", "https") or "/" in rest or "@" in rest:
        return False
    return is_loopback(normal_host(rest))


def token_index(authorization: str | None, tokens: Sequence[bytes]) -> int | None:
    """Which of `tokens` an Authorization header presents (`Bearer TOKEN`, or HTTP Basic with TOKEN as
    the password and any user name), compared in constant time; None for none of them."""
    scheme, _, value = (authorization or "").strip().partition(" ")
    given = value.strip().encode("latin-1", "replace")
    if scheme.lower() == "basic":
        try:
            given = base64.b64decode(given, validate=True).partition(b":")[2]
        except (ValueError, binascii.Error):
            return None
    elif scheme.lower() != "bearer":
        return None
    found = None
    for i, token in enumerate(tokens):  # every token compared: the time does not tell which matched
        if secrets.compare_digest(given, token) and found is None:
            found = i
    return found


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _is_json(content_type: str) -> bool:
    """Whether a Content-Type is application/json, parameters (charset) allowed."""
    return content_type.partition(";")[0].strip().lower() == "application/json"


async def _reply(send: Send, status: int, detail: str, *, close: bool, extra_headers: tuple = ()) -> None:
    body = json.dumps({"detail": " ".join(detail.split())}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # the unread rest of the body must not be parsed as the next request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers + list(extra_headers)})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class TransportGuard:
    """ASGI middleware: Host check, bearer token, JSON-only bodies read under a size limit and a deadline."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        read_timeout_s: float,
        tokens: Sequence[str] = (),
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] = (),
        ws_idle_timeout_s: float = 300.0,
        max_ws_per_client: int = 32,
        max_websockets: int = 512,
    ):
        self.app = app
        self.max_body_bytes = int(max_body_bytes)
        self.read_timeout_s = float(read_timeout_s)
        self.tokens = tuple(t.encode() for t in tokens)
        self.allowed_hosts = (
            None if allowed_hosts is None else frozenset(normal_host(h) for h in allowed_hosts)
        )
        self.allowed_origins = tuple(allowed_origins)
        self.ws_idle_timeout_s = float(ws_idle_timeout_s)
        self.max_ws_per_client = int(max_ws_per_client)
        self.max_websockets = int(max_websockets)
        self.websockets: dict[str, int] = {}  # open WebSockets per client address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length_text = _header(scope, b"content-length")
        chunked = _header(scope, b"transfer-encoding") is not None
        has_body = chunked or (length_text is not None and length_text.strip().lstrip("0") != "")
        try:
            self._check_head(scope, length_text, has_body)
            body = await self._read_body(receive) if has_body else None
        except Refusal as refusal:
            extra = ((b"www-authenticate", b"Bearer"),) if refusal.status == 401 else ()
            await _reply(send, refusal.status, refusal.detail, close=has_body, extra_headers=extra)
            return
        except _ClientGone:
            return
        if body is None:
            await self.app(scope, receive, send)
            return
        delivered = False

        async def replay() -> Message:  # the route reads the body already read, then the real stream
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket (/ws): head checks and the connection caps at the handshake (refused with the
        one-line JSON 4xx, or close code 1008 where the server cannot send an HTTP reply); then every
        message held to `max_body_bytes` (a larger one closes with 1009, message too big) and the
        connection closed after `ws_idle_timeout_s` without a message (code 1001)."""
        address = (scope.get("client") or ("unknown",))[0]
        try:
            self._check_head(scope, None, False)
            if sum(self.websockets.values()) >= self.max_websockets:
                raise Refusal(429, f"the server holds its maximum of {self.max_websockets} WebSockets")
            if self.websockets.get(address, 0) >= self.max_ws_per_client:
                raise Refusal(
                    429,
                    f"client {address} holds its maximum of {self.max_ws_per_client} WebSockets; close one",
                )
        except Refusal as refusal:
            await _deny_websocket(receive, send, scope, refusal)
            return

        async def bounded_receive() -> Message:
            try:
                message = await asyncio.wait_for(receive(), self.ws_idle_timeout_s)
            except TimeoutError:
                reason = f"no message for {self.ws_idle_timeout_s:g} s (idle timeout)"
                await send({"type": "websocket.close", "code": WS_IDLE_CLOSE, "reason": reason})
                return {"type": "websocket.disconnect", "code": WS_IDLE_CLOSE}
            if message["type"] == "websocket.receive":
                text, data = message.get("text"), message.get("bytes")
                size = len(text.encode("utf-8", "surrogatepass")) if text is not None else len(data or b"")
                if size > self.max_body_bytes:
                    reason = f"message is {size} bytes; the limit is {self.max_body_bytes}"
                    await send({"type": "websocket.close", "code": 1009, "reason": reason})
                    return {"type": "websocket.disconnect", "code": 1009}
            return message

        self.websockets[address] = self.websockets.get(address, 0) + 1
        try:
            await self.app(scope, bounded_receive, send)
        finally:
            self.websockets[address] -= 1
            if not self.websockets[address]:
                del self.websockets[address]

    def _check_head(self, scope: Scope, length_text: str | None, has_body: bool) -> None:
        head_bytes = sum(len(k) + len(v) + 4 for k, v in scope.get("headers", ()))
        if head_bytes > MAX_HEAD_BYTES:
            raise Refusal(431, f"request headers are {head_bytes} bytes; the limit is {MAX_HEAD_BYTES}")
        if self.allowed_hosts is not None:
            host = _header(scope, b"host")
            if host is None or normal_host(host) not in self.allowed_hosts:
                raise Refusal(
                    421,
                    f"Host {host!r} is not served here (DNS rebinding guard); "
                    "start hivex serve with --allowed-host NAME to accept it",
                )
        origin = _header(scope, b"origin")
        if origin is not None and not origin_allowed(origin, self.allowed_origins):
            raise Refusal(
                403,
                f"Origin {origin[:80]!r} may not call this server (a web page elsewhere); "
                "start hivex serve with --allow-origin ORIGIN to accept it",
            )
        if self.tokens and scope.get("path") not in UNAUTHENTICATED_PATHS:
            index = token_index(_header(scope, b"authorization"), self.tokens)
            if index is None:
                raise Refusal(
                    401,
                    "this server needs a token: the header 'Authorization: Bearer <token>', or the "
                    "token as the password of HTTP Basic authentication (--token)",
                )
            scope[TOKEN_INDEX] = index
        if length_text is not None:
            try:
                declared = int(length_text)
            except ValueError:
                raise Refusal(400, f"Content-Length {length_text[:40]!r} is not a number") from None
            if declared > self.max_body_bytes:
                raise Refusal(413, f"request body is {declared} bytes; the limit is {self.max_body_bytes}")
        content_type = _header(scope, b"content-type")
        if (has_body or content_type is not None) and not _is_json(content_type or ""):
            given = (content_type or "none")[:80]
            raise Refusal(415, f"request bodies must be Content-Type application/json; got {given!r}")

    async def _read_body(self, receive: Receive) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.read_timeout_s
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise Refusal(
                    408, f"the request body did not arrive within {self.read_timeout_s:g} s"
                ) from None
            if message["type"] == "http.disconnect":
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise Refusal(413, f"request body is over {self.max_body_bytes} bytes (the limit)")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def _deny_websocket(receive: Receive, send: Send, scope: Scope, refusal: Refusal) -> None:
    """Refuse a WebSocket handshake: the one-line JSON 4xx where the server can send an HTTP reply (the
    `websocket.http.response` extension), else close code 1008."""
    message = await receive()  # websocket.connect: the handshake is answered after it
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        body = json.dumps({"detail": " ".join(refusal.detail.split())}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "websocket.http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": refusal.detail[:120]})


class _ClientGone(Exception):
    """The client disconnected while sending its body: nothing to answer."""


def head_timeout_protocol(head_timeout_s: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose request head has not arrived `head_timeout_s`
    after it opened or after its previous response (uvicorn cancels its keep-alive timer on any byte)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadTimeoutH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def _arm_head_timer(self) -> None:
            self._disarm_head_timer()
            self._head_timer = self.loop.call_later(head_timeout_s, self._head_timed_out)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_head_timer()

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # the head arrived: the body has its own deadline
                self._disarm_head_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            super().connection_lost(exc)

    return HeadTimeoutH11Protocol
