"""`hivex serve`: start the HTTP server (docs/serve.md) on 127.0.0.1:8000 unless told otherwise."""

from __future__ import annotations

from hivex_jax.core.errors import ArgumentParser, UserError, check_positive, reports_user_errors


def _parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="hivex serve",
        description="Serve registered environments over HTTP (OpenEnv-style routes: /reset, /step, "
        "/state/{session}, /grade/{session}, DELETE /session/{session}); see docs/serve.md.",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    p.add_argument("--env", action="append", default=None, help="serve only this env id (repeatable)")
    p.add_argument("--max-sessions", type=int, default=64, help="open sessions at most (default 64)")
    p.add_argument(
        "--idle-timeout", type=float, default=600.0, help="seconds before an untouched session closes (600)"
    )
    p.add_argument(
        "--batch-window-ms",
        type=float,
        default=5.0,
        help="how long a step waits for other sessions' steps to batch with (default 5 ms)",
    )
    p.add_argument("--initial-slots", type=int, default=16, help="a pool's first slot count (default 16)")
    p.add_argument(
        "--max-pools", type=int, default=8, help="distinct (env id, static options) programs at most (8)"
    )
    p.add_argument(
        "--allow-static-options",
        action="store_true",
        help="accept reset options that change array shapes (num_agents, ...), one compiled program each",
    )
    return p


@reports_user_errors("hivex serve")
def main(argv: list[str] | None = None) -> int:
    """Entry point of `hivex serve`: parse, check, run uvicorn until interrupted."""
    args = _parser().parse_args(argv)
    check_positive(max_sessions=args.max_sessions, initial_slots=args.initial_slots, max_pools=args.max_pools)
    if not 0 <= args.port < 65536:
        raise UserError(f"--port must be in [0, 65536); got {args.port}")
    if args.idle_timeout <= 0 or args.batch_window_ms < 0:
        raise UserError("--idle-timeout must be > 0 and --batch-window-ms >= 0")
    try:
        import uvicorn

        from hivex_jax.serve.app import ServeConfig, create_app
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
    )
    try:
        app = create_app(config)
    except ValueError as exc:  # an unknown --env
        raise UserError(str(exc)) from exc
    print(f"hivex serve: http://{args.host}:{args.port} ({', '.join(app.state.server.env_ids)})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
