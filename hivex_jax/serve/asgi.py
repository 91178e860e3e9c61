"""One module-level ASGI app per bundled env, for tools that start a server from an import string: the
`app:` line of OpenEnv's manifest (`hivex serve --env ID --manifest`), or
`uvicorn hivex_jax.serve.asgi:wind_farm_control`. Each is `create_app` serving that one env with the
default limits, built on first access (importing this module builds nothing).

The app carries the request-level guard (body limits, JSON only, read timeout, Host and Origin checks,
WebSocket caps and idle timeout, tokens from `HIVEX_SERVE_TOKEN`, comma-separated for one per client);
the connection-level limits (request-head timeout, keep-alive, connection cap, the WebSocket message
size) are uvicorn options that `hivex serve` sets, so `hivex serve --env ID` is the
hardened way to run one. `HIVEX_SERVE_ALLOWED_HOSTS` (comma-separated) adds Host names to the loopback
ones the app accepts (a container reached by name needs it).
"""

from __future__ import annotations

import os
from typing import Any

from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.serve.app import create_app
from hivex_jax.serve.config import HOSTS_VARIABLE, TOKEN_VARIABLE, ServeConfig, parse_tokens
from hivex_jax.serve.guard import allowed_hosts_for
from hivex_jax.serve.manifest import app_name

#: attribute name -> the env id its app serves
APPS = {app_name(env_id): env_id for env_id in BUNDLED_ENV_IDS}
_built: dict[str, Any] = {}


def build(env_id: str) -> Any:
    """`create_app` for `env_id` alone, with the tokens and extra Host names from the environment."""
    extra_hosts = [h for h in os.environ.get(HOSTS_VARIABLE, "").split(",") if h.strip()]
    config = ServeConfig(envs=(env_id,), allowed_hosts=allowed_hosts_for("127.0.0.1", extra_hosts))
    tokens = os.environ.get(TOKEN_VARIABLE)
    return create_app(config, token=parse_tokens([tokens], TOKEN_VARIABLE) if tokens else None)


def __getattr__(name: str) -> Any:
    if name not in APPS:
        raise AttributeError(f"module {__name__!r} has no app {name!r}; apps: {sorted(APPS)}")
    if name not in _built:
        _built[name] = build(APPS[name])
    return _built[name]
