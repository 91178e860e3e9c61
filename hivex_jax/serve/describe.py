"""What an env looks like to a client: `describe_env` (`GET /envs/{id}`: agents, action widths and each
branch's meaning, observation layout, tasks, levels, reward terms) and `schemas` (`GET /schema`: JSON
schemas of OpenEnv's action, observation and state). Plain Python from the env's spaces; no HTTP here."""

from __future__ import annotations

from typing import Any

#: what each action part means, per bundled env (the env pages in docs/envs say more): `continuous` names
#: each continuous value (in [-1, 1]); `discrete` names each branch and its options, in order
ACTION_MEANINGS: dict[str, dict[str, Any]] = {
    "WindFarmControl-v0": {
        "continuous": [],
        "discrete": [
            {"branch": "rotate", "options": ["no-op", "left (counter-clockwise)", "right (clockwise)"]}
        ],
    },
    "WildfireResourceManagement-v0": {
        "continuous": [],
        "discrete": [
            {"branch": target, "options": ["no-op", "add resources", "remove resources"]}
            for target in ("self", "neighbour 1", "neighbour 2", "neighbour 3")
        ],
    },
    "DroneBasedReforestation-v0": {
        "continuous": ["throttle", "steer (+1 right, clockwise)", "up/down"],
        "discrete": [{"branch": "seed", "options": ["no-op", "drop seed"]}],
    },
    "OceanPlasticCollection-v0": {
        "continuous": [],
        "discrete": [
            {"branch": "throttle", "options": ["no-op", "accelerate"]},
            {"branch": "steer", "options": ["no-op", "right (clockwise)", "left"]},
        ],
    },
    "AerialWildfireSuppression-v0": {
        "continuous": ["steer (+1 right, clockwise)"],
        "discrete": [{"branch": "water", "options": ["no-op", "drop water"]}],
    },
}  # fmt: skip


def describe_env(env_id: str) -> dict[str, Any]:
    """What a client needs to act in `env_id`: agents, action and observation layout, tasks, levels."""
    import hivex_jax

    env, params = hivex_jax.make(env_id)
    space = env.observation_space()
    return {
        "env_id": env_id,
        "agent_ids": list(env.agent_ids),
        "action": {
            "continuous": env.continuous_dims,
            "discrete_branches": list(env.discrete_branches),
            "meanings": ACTION_MEANINGS.get(env_id),  # None for an env without a table here
        },
        "observation": {
            "vector_size": int(space["vector"].shape[-1]),
            "fields": {k: [v.start, v.stop] for k, v in env.observation_layout().items()},
            "visual_shape": list(space["visual"].shape[1:]) if "visual" in space.spaces else None,
        },
        "tasks": list(env.task_ids),
        "level_field": env.level_field,
        "levels": list(env.level_values),
        "reward_terms": list(env.reward_term_names),
        "max_steps": int(params.max_steps),
    }


def _numbers(width: int, kind: str = "number", **bounds: Any) -> dict[str, Any]:
    return {"type": "array", "items": {"type": kind, **bounds}, "minItems": width, "maxItems": width}


def schemas(env: Any) -> dict[str, Any]:
    """JSON schemas of `env`'s OpenEnv action, observation and state (from its spaces and layout)."""
    ids = list(env.agent_ids)
    c, branches = env.continuous_dims, list(env.discrete_branches)
    agent_action: dict[str, Any] = {
        "type": "object",
        "properties": {
            "continuous": _numbers(c, minimum=-1.0, maximum=1.0),
            "discrete": {
                "type": "array",
                "prefixItems": [{"type": "integer", "minimum": 0, "maximum": n - 1} for n in branches],
                "minItems": len(branches),
                "maxItems": len(branches),
            },
        },
        "required": [name for name, width in (("continuous", c), ("discrete", len(branches))) if width],
        "additionalProperties": False,
    }
    action = {
        "title": f"{env.env_id} joint action",
        "description": "one action per agent, keyed by agent id; continuous values are clipped to [-1, 1]",
        "type": "object",
        "properties": {agent_id: agent_action for agent_id in ids},
        "required": ids,
        "additionalProperties": False,
    }
    space = env.observation_space()
    width = int(space["vector"].shape[-1])
    fields = {name: _numbers(part.stop - part.start) for name, part in env.observation_layout().items()}
    agent_obs: dict[str, Any] = {
        "type": "object",
        "properties": {
            "id": {"enum": ids},
            "vector": _numbers(width),
            "fields": {"type": "object", "properties": fields},
        },
        "required": ["id", "vector", "fields"],
    }
    if "visual" in space.spaces:
        agent_obs["properties"]["visual"] = {
            "description": f"camera image {list(space['visual'].shape[1:])} (H, W, C) uint8, a nested list "
            "or {shape, dtype, base64} with reset's visual_encoding 'base64'"
        }
    observation = {
        "title": f"{env.env_id} observation",
        "type": "object",
        "properties": {
            "agents": {"type": "array", "items": agent_obs, "minItems": len(ids), "maxItems": len(ids)},
            "metadata": {
                "type": "object",
                "description": "episode_id, session_id, step; after a step the per-agent rewards, "
                "terminated, truncated (keyed by agent id) and info",
            },
        },
        "required": ["agents"],
    }
    state = {
        "title": f"{env.env_id} state",
        "type": "object",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
            "session_id": {"type": "string"},
            "env_id": {"const": env.env_id},
            "done": {"type": "boolean"},
            "state_exposed": {"type": "boolean"},
            "state": {
                "type": "object",
                "description": "the full simulator state, hidden parts included (a server started with "
                "--expose-state only)",
            },
            "episode": {"type": "object", "description": "length, return, return_per_agent, reward terms"},
        },
        "required": ["episode_id", "step_count"],
        "additionalProperties": True,
    }
    return {"action": action, "observation": observation, "state": state}
