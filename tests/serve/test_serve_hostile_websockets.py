"""Idle and hoarded WebSockets against a real `hivex serve` subprocess (small limits: 40 connections,
6 WebSockets per client address, 16 in all, a 3 s WebSocket idle timeout): one client opening as many
/ws connections as it can gets its 6 and a one-line 429 for each further one, while /health and another
client's steps still answer; several clients fill the total and HTTP still answers; a connection that
sends nothing (pings included) is closed with code 1001 after the idle timeout, one that talks is not.
Clients get distinct addresses (127.0.0.N)."""

from __future__ import annotations

import contextlib
import json
import time

import pytest
from server_process import rss_reported, running_server

httpx = pytest.importorskip("httpx")
websockets_sync = pytest.importorskip("websockets.sync.client")

from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402

WFC = "WindFarmControl-v0"
MAX_CONNECTIONS, PER_CLIENT, TOTAL, IDLE_S = 40, 6, 16, 3
ACTION = [{"discrete": [1]}] * 8


@pytest.fixture(scope="module")
def url():
    flags = [
        "--env",
        WFC,
        "--max-sessions",
        "8",
        "--initial-slots",
        "8",
        "--max-connections",
        str(MAX_CONNECTIONS),
    ]
    flags += [
        "--max-ws-per-client",
        str(PER_CLIENT),
        "--max-websockets",
        str(TOTAL),
        "--ws-idle-timeout",
        str(IDLE_S),
    ]
    with running_server(*flags) as (proc, _, base):
        steps_answer(base, 1)  # the pool compiled before the memory is read
        with rss_reported("hoarded and idle WebSockets", proc.pid):
            yield base


def ws_from(url: str, address: int):
    """A /ws connection from 127.0.0.`address` (raises `InvalidStatus` when the handshake is refused)."""
    ws_url = url.replace("http://", "ws://") + "/ws"
    return websockets_sync.connect(ws_url, source_address=(f"127.0.0.{address}", 0), open_timeout=30)


def hoard(stack: contextlib.ExitStack, url: str, address: int, attempts: int) -> tuple[list, list]:
    """Open `attempts` WebSockets from one address, held until `stack` closes: (the open ones, the
    refusals, each an `InvalidStatus`)."""
    opened, refused = [], []
    for _ in range(attempts):
        try:
            opened.append(stack.enter_context(ws_from(url, address)))
        except InvalidStatus as exc:
            refused.append(exc)
    return opened, refused


def http_client(url: str, address: int) -> httpx.Client:
    return httpx.Client(
        base_url=url, timeout=120, transport=httpx.HTTPTransport(local_address=f"127.0.0.{address}")
    )


def steps_answer(url: str, address: int) -> None:
    """Another client opens a session and steps it: every reply a 200."""
    with http_client(url, address) as c:
        r = c.post("/reset", json={"env_id": WFC, "options": {"max_steps": 10}})
        assert r.status_code == 200, r.text
        session = r.json()["session_id"]
        for _ in range(3):
            r = c.post("/step", json={"session_id": session, "action": ACTION})
            assert r.status_code == 200, r.text
        assert c.delete(f"/session/{session}").status_code == 200


def test_a_client_hoarding_websockets_gets_its_cap_and_http_still_answers(url):
    with contextlib.ExitStack() as stack:
        # a hostile client: far more connections than the server holds
        held, refused = hoard(stack, url, 2, 3 * MAX_CONNECTIONS)
        assert len(held) == PER_CLIENT and len(refused) == 3 * MAX_CONNECTIONS - PER_CLIENT
        for exc in refused:
            detail = json.loads(exc.response.body)["detail"]
            assert exc.response.status_code == 429 and "client 127.0.0.2 holds its maximum of 6" in detail, (
                detail
            )
        assert httpx.get(f"{url}/health", timeout=60).json()["status"] == "healthy"
        steps_answer(url, 3)
        # other clients fill the total: a further one is refused, HTTP still answers
        for address in (4, 5):
            held += hoard(stack, url, address, PER_CLIENT)[0]
        assert len(held) == TOTAL
        with pytest.raises(InvalidStatus) as full, ws_from(url, 6):
            pass
        assert (
            full.value.response.status_code == 429 and b"maximum of 16 WebSockets" in full.value.response.body
        )
        assert httpx.get(f"{url}/health", timeout=60).status_code == 200
        steps_answer(url, 7)
        held[0].send(json.dumps({"type": "state"}))  # the held connections still work
        assert json.loads(held[0].recv(timeout=60))["type"] == "state"
    # their places are free again once closed (the server counts the disconnects)
    deadline = time.monotonic() + 60
    while True:
        try:
            with ws_from(url, 2):
                break
        except InvalidStatus:
            assert time.monotonic() < deadline, "closed WebSockets still counted"
            time.sleep(0.2)


def test_an_idle_websocket_is_closed_and_a_talking_one_is_not(url):
    with ws_from(url, 8) as idle, ws_from(url, 9) as talking:
        closed, began = None, time.monotonic()
        while closed is None and time.monotonic() - began < 120:
            try:
                idle.ping()  # pings are no messages: they keep the transport, not the connection, alive
            except ConnectionClosed as exc:
                closed = exc
            talking.send(json.dumps({"type": "state"}))  # talking every 0.3 s, past the idle timeout
            assert json.loads(talking.recv(timeout=60))["type"] == "state"
            time.sleep(0.3)
        assert closed is not None and closed.rcvd.code == 1001 and "idle timeout" in closed.rcvd.reason
        talking.send(json.dumps({"type": "state"}))
        assert json.loads(talking.recv(timeout=60))["type"] == "state"
