"""What `hivex serve` is started with, and who is asking: `ServeConfig` (every limit docs/serve.md lists)
and `Caller` (the address a request came from, for quotas, and the owner its sessions belong to).

No FastAPI, uvicorn or JAX here: the command, the app and the ASGI module all read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

TOKEN_VARIABLE = "HIVEX_SERVE_TOKEN"  # one token, or several separated by commas (one per client)
HOSTS_VARIABLE = "HIVEX_SERVE_ALLOWED_HOSTS"  # comma-separated Host names the ASGI apps also accept


@dataclasses.dataclass(frozen=True)
class ServeConfig:
    """What `hivex serve` was started with (docs/serve.md documents each limit)."""

    max_sessions: int = 64  # open sessions over all envs; also the most slots one pool grows to
    idle_timeout_s: float = 600.0  # a session untouched this long is closed and its slot freed
    batch_window_s: float = 0.005  # how long the first step request of a batch waits for the others
    initial_slots: int = 16  # a pool's first slot count (doubles when full, up to max_sessions)
    max_pools: int = 8  # distinct (env id, static options) combinations, each its own compiled program
    max_body_bytes: int = 1 << 20  # a larger declared or streamed body is refused (413) while it is read
    read_timeout_s: float = 10.0  # a request's head, and then its body, must arrive within this (408)
    allowed_hosts: tuple[str, ...] | None = None  # Host header names accepted (DNS rebinding); None: any
    envs: tuple[str, ...] = ()  # the env ids served; empty = every registered id
    allow_static_options: bool = False  # reset options that change shapes (num_agents...): a pool each
    max_sessions_per_client: int | None = None  # sessions one client address may hold; None: max_sessions
    max_grade_steps: int = 5000  # steps each baseline episode of a grade plays at most (then incomplete)
    # nothing hidden: /state serves the simulator state and step keys follow the public in-process rule
    expose_state: bool = False
    allowed_origins: tuple[str, ...] = ()  # Origin headers accepted beside loopback pages; "*": any
    ws_idle_timeout_s: float = 300.0  # a WebSocket that sends no message this long is closed
    max_ws_per_client: int = 32  # open WebSockets one client address may hold
    max_websockets: int = 512  # open WebSockets in all (kept below uvicorn's connection limit)


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who sent a request: `address` (the peer's, for the per-client quotas) and `owner` (the token it
    presented, else its address; a WebSocket connection is an owner of its own), whose sessions it may use."""

    address: str
    owner: str


def http_caller(address: str, token_index: int | None) -> Caller:
    """The caller of an HTTP request from `address` that presented token number `token_index` (or none)."""
    owner = f"address {address}" if token_index is None else f"token {token_index + 1}"
    return Caller(address, owner)


def parse_tokens(values: Sequence[str], name: str = "--token") -> tuple[str, ...]:
    """Tokens from `--token` values or `HIVEX_SERVE_TOKEN` (each may hold several, comma-separated);
    a `ValueError` naming `name` for an empty one, one with spaces or commas inside, or non-ASCII."""
    tokens = []
    for value in values:
        for token in value.split(","):
            if not token or not token.isascii() or not token.isprintable() or " " in token:
                raise ValueError(f"{name} must be non-empty printable ASCII without spaces or commas")
            tokens.append(token)
    return tuple(dict.fromkeys(tokens))
