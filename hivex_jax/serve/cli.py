"""`hivex serve`: start the HTTP server (docs/serve.md) on 127.0.0.1:8000 unless told otherwise."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable

from hivex_jax.cli_support import ArgumentParser, check_positive, reports_user_errors
from hivex_jax.core.errors import UserError
from hivex_jax.serve.config import TOKEN_VARIABLE, parse_tokens

#: upper bounds of the size options (docs/serve.md): a pool's arrays grow to --max-sessions rows, each
#: pool is a compiled program, and a grade plays up to --max-grade-steps steps
SIZE_LIMITS = {
    "--max-sessions": 4096,
    "--initial-slots": 4096,
    "--max-pools": 64,
    "--max-connections": 65536,
    "--max-grade-steps": 1_000_000,
    "--max-sessions-per-client": 4096,
    "--max-ws-per-client": 65536,
    "--max-websockets": 65536,
}


def finite_number(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite float in [low, high] (or (low, high] with `low_open`); nan, inf and
    values outside are refused in one line (nan compares false, so `x <= 0` alone let it through)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        below = value <= low if low_open else value < low
        if not math.isfinite(value) or below or value > high:
            interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number in {interval}")
        return value

    return parse


def _parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="hivex serve",
        description="Serve registered environments over HTTP (routes: /reset, /step, /state/{session}, "
        "/grade/{session}, DELETE /session/{session}) and OpenEnv's protocol (/ws, /schema, /mcp); "
        "see docs/serve.md.",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1: this machine only; any other prints a warning)",
    )
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    p.add_argument("--env", action="append", default=None, help="serve only this env id (repeatable)")
    p.add_argument("--max-sessions", type=int, default=64, help="open sessions at most (default 64)")
    p.add_argument(
        "--idle-timeout",
        type=finite_number(0, 7 * 86400, low_open=True),
        default=600.0,
        help="seconds before an untouched session closes (600; at most a week)",
    )
    p.add_argument(
        "--batch-window-ms",
        type=finite_number(0, 10_000),
        default=5.0,
        help="how long a step waits for other sessions' steps to batch with (default 5 ms; at most 10 s)",
    )
    p.add_argument("--initial-slots", type=int, default=16, help="a pool's first slot count (default 16)")
    p.add_argument(
        "--max-pools", type=int, default=8, help="distinct (env id, static options) programs at most (8)"
    )
    p.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=None,
        help="open sessions one client address may hold (default: all of --max-sessions)",
    )
    p.add_argument(
        "--max-grade-steps",
        type=int,
        default=5000,
        help="scripted steps one /grade plays at most; a longer episode is graded incomplete (5000)",
    )
    p.add_argument(
        "--allow-static-options",
        action="store_true",
        help="accept reset options that change array shapes (num_agents, ...), one compiled program each",
    )
    p.add_argument(
        "--token",
        action="append",
        default=None,
        help="require this token on every route but /health, as 'Authorization: Bearer TOKEN' or the "
        "password of HTTP Basic authentication (repeatable: one per client, whose sessions are its own; "
        f"or set {TOKEN_VARIABLE}, comma-separated)",
    )
    p.add_argument(
        "--expose-state",
        action="store_true",
        help="serve the full simulator state (/state, the state message and tool) and use the public, "
        "reproducible step keys: for debugging and local research, never for graded play",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="also accept requests and WebSockets from web pages of this origin (scheme://host[:port], "
        "repeatable; '*' for any); pages served from loopback are accepted",
    )
    p.add_argument(
        "--ws-idle-timeout",
        type=finite_number(0, 7 * 86400, low_open=True),
        default=300.0,
        help="seconds a WebSocket may go without a message before it is closed (default 300)",
    )
    p.add_argument(
        "--max-ws-per-client",
        type=int,
        default=32,
        help="open WebSockets one client address may hold; more are refused (default 32)",
    )
    p.add_argument(
        "--max-websockets",
        type=int,
        default=None,
        help="open WebSockets in all (default: half of --max-connections, so HTTP keeps room)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="NAME",
        help="also accept this Host header name (repeatable); bound to loopback, only localhost, "
        "127.0.0.1 and [::1] are accepted (DNS rebinding guard)",
    )
    p.add_argument(
        "--read-timeout",
        type=finite_number(0, 600, low_open=True),
        default=10.0,
        help="seconds a request's head, then its body, may take to arrive (default 10; else 408/closed)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=1024,
        help="open connections and requests in flight at most; further requests get 503 (default 1024)",
    )
    p.add_argument(
        "--manifest",
        action="store_true",
        help="print the OpenEnv manifest (openenv.yaml) of the one --env and exit",
    )
    return p


@reports_user_errors("hivex serve")
def main(argv: list[str] | None = None) -> int:
    """Entry point of `hivex serve`: parse, check, run uvicorn until interrupted."""
    args = _parser().parse_args(argv)
    check_positive(
        max_sessions=args.max_sessions,
        initial_slots=args.initial_slots,
        max_pools=args.max_pools,
        max_connections=args.max_connections,
        max_grade_steps=args.max_grade_steps,
        max_sessions_per_client=args.max_sessions_per_client,
        max_ws_per_client=args.max_ws_per_client,
        max_websockets=args.max_websockets,
    )
    if not 0 <= args.port < 65536:
        raise UserError(f"--port must be in [0, 65536); got {args.port}")
    for option, value in (
        ("--max-sessions", args.max_sessions),
        ("--initial-slots", args.initial_slots),
        ("--max-pools", args.max_pools),
        ("--max-connections", args.max_connections),
        ("--max-grade-steps", args.max_grade_steps),
        ("--max-sessions-per-client", args.max_sessions_per_client),
        ("--max-ws-per-client", args.max_ws_per_client),
        ("--max-websockets", args.max_websockets),
    ):
        if value is not None and value > SIZE_LIMITS[option]:  # before any pool is sized by it
            raise UserError(f"{option} must be at most {SIZE_LIMITS[option]:,}; got {value:,}")
    if args.manifest:
        if not args.env or len(args.env) != 1:
            raise UserError("--manifest needs exactly one --env ID (an OpenEnv server serves one env)")
        from hivex_jax.serve.manifest import manifest

        try:
            print(manifest(args.env[0], args.port), end="")
        except ValueError as exc:  # an unknown --env
            raise UserError(str(exc)) from exc
        return 0
    from_environment = [os.environ[TOKEN_VARIABLE]] if os.environ.get(TOKEN_VARIABLE) else []
    given = args.token if args.token is not None else from_environment
    try:
        tokens = parse_tokens(given, "--token" if args.token is not None else TOKEN_VARIABLE)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    max_websockets = args.max_websockets or max(1, args.max_connections // 2)
    if max_websockets >= args.max_connections:
        raise UserError(
            f"--max-websockets ({max_websockets}) must be below --max-connections ({args.max_connections}): "
            "WebSockets filling every connection would lock HTTP out"
        )
    try:
        import uvicorn

        from hivex_jax.serve.app import create_app
        from hivex_jax.serve.config import ServeConfig
        from hivex_jax.serve.guard import allowed_hosts_for, head_timeout_protocol, is_loopback
    except ImportError as exc:
        raise UserError(f'needs the serve extra ({exc.name} is missing): pip install -e ".[serve]"') from exc
    config = ServeConfig(
        max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout,
        batch_window_s=args.batch_window_ms / 1000.0,
        initial_slots=args.initial_slots,
        max_pools=args.max_pools,
        envs=tuple(args.env or ()),
        allow_static_options=args.allow_static_options,
        max_sessions_per_client=args.max_sessions_per_client,
        max_grade_steps=args.max_grade_steps,
        read_timeout_s=args.read_timeout,
        allowed_hosts=allowed_hosts_for(args.host, args.allowed_host or ()),
        expose_state=args.expose_state,
        allowed_origins=tuple(args.allow_origin or ()),
        ws_idle_timeout_s=args.ws_idle_timeout,
        max_ws_per_client=args.max_ws_per_client,
        max_websockets=max_websockets,
    )
    try:
        app = create_app(config, token=tokens)
    except ValueError as exc:  # an unknown --env
        raise UserError(str(exc)) from exc
    print(f"hivex serve: http://{args.host}:{args.port} ({', '.join(app.state.server.env_ids)})", flush=True)
    if not is_loopback(args.host):
        print(
            f"hivex serve: warning: --host {args.host} lets other machines open sessions"
            f"{'' if tokens else ' without a token (see --token)'}",
            file=sys.stderr,
            flush=True,
        )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        http=head_timeout_protocol(args.read_timeout),  # h11, closing connections that send no head
        ws="websockets-sansio",  # OpenEnv's clients talk /ws (hivex_jax.serve.openenv)
        ws_max_size=config.max_body_bytes,  # a larger WebSocket message closes the connection (1009)
        timeout_keep_alive=5,  # an idle keep-alive connection is closed after 5 s
        limit_concurrency=args.max_connections,
        h11_max_incomplete_event_size=16 * 1024,  # a request head (line and headers) is 16 KiB at most
    )
    return 0
