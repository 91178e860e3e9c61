"""OpenEnv's manifest (openenv.yaml) of `hivex serve --env ID`, and the name of the module-level app
(`hivex_jax.serve.asgi`) its `app:` line points at. No FastAPI, uvicorn or server import here."""

from __future__ import annotations

import re


def app_name(env_id: str) -> str:
    """The `hivex_jax.serve.asgi` attribute serving `env_id`: `WindFarmControl-v0` -> `wind_farm_control`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", env_id.split("-v")[0]).lower()


def manifest(env_id: str, port: int = 8000) -> str:
    """The OpenEnv manifest (openenv.yaml, spec_version 1) of `hivex serve --env env_id`."""
    import hivex_jax
    from hivex_jax.envs import BUNDLED_ENV_IDS

    if env_id not in hivex_jax.registered_envs():
        raise ValueError(f"unknown environment id {env_id!r}; registered: {hivex_jax.registered_envs()}")
    if env_id not in BUNDLED_ENV_IDS:
        raise ValueError(
            f"a manifest names a module-level app, which exists for the bundled envs only: {BUNDLED_ENV_IDS}"
        )
    name = env_id.lower().replace("_", "-")
    return (
        f"# started with: hivex serve --env {env_id} --port {port}\n"
        "spec_version: 1\n"
        f"name: {name}\n"
        "type: space\n"
        "runtime: fastapi\n"
        f"app: hivex_jax.serve.asgi:{app_name(env_id)}\n"
        f"port: {port}\n"
        f"description: HIVEX {env_id} (hivex_jax), multi-agent; joint action keyed by agent id, "
        "team reward\n"
    )
