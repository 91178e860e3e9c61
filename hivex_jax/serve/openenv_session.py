"""One OpenEnv episode handle (a `/ws` connection, or an MCP session): the hivex session it plays now, and
OpenEnv's single-agent replies made from the project's multi-agent ones.

Multi-agent inside OpenEnv's single-agent replies: the action is the joint action keyed by agent id (the
project's own action JSON), `reward` is the team reward (the mean over agents) as a float, `done` is the
episode's done (every agent terminated or truncated), and the per-agent rewards, ends and info are in the
observation's `metadata`. Every request goes through `HivexServer` as the handle's `Caller`, so a handle
reaches only its owner's sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hivex_jax.serve.config import Caller
from hivex_jax.serve.sessions import RequestError

RESET_FIELDS = ("seed", "world_seed", "episode_id", "task", "level", "options", "visual_encoding", "env_id")


class OpenEnvSession:
    """One OpenEnv episode handle: plays one hivex session at a time as `caller`."""

    def __init__(self, server: Any, caller: Caller):
        self.server, self.caller = server, caller
        self.session_id: str | None = None
        self.episode_id: str | None = None

    def _env_id(self, data: Mapping[str, Any]) -> str:
        env_id = data.get("env_id")
        if env_id is None and len(self.server.env_ids) == 1:
            return self.server.env_ids[0]
        if env_id is None:
            raise RequestError(
                400, f"this server serves several envs; reset needs env_id, one of {self.server.env_ids}"
            )
        return env_id

    async def reset(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Close the episode being played (if any) and open a new one: OpenEnv's reset reply data."""
        if not isinstance(data, Mapping):
            raise RequestError(400, f"reset data must be an object; got {type(data).__name__}")
        unknown = sorted(set(data) - set(RESET_FIELDS))
        if unknown:
            raise RequestError(400, f"unknown reset fields {unknown}; fields are {sorted(RESET_FIELDS)}")
        episode_id = data.get("episode_id")
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 200):
            raise RequestError(400, "episode_id must be a string of at most 200 characters")
        body = {k: v for k, v in data.items() if k not in ("episode_id", "env_id")}
        body["env_id"] = self._env_id(data)
        try:  # the new episode opens first: a refused reset leaves the one being played as it was
            reply = await self.server.reset(body, self.caller)
        except RequestError as exc:
            if exc.status != 429 or self.session_id is None:
                raise
            await self.close()  # at a session limit: the old episode's place is the new one's
            reply = await self.server.reset(body, self.caller)
        else:
            await self.close()
        self.session_id = reply["session_id"]
        self.episode_id = episode_id or self.session_id
        observation = reply["observation"]
        observation["metadata"] = {"episode_id": self.episode_id, **reply["info"]}
        observation["metadata"]["session_id"] = self.session_id
        return {"observation": observation, "reward": None, "done": False}

    def _open(self) -> str:
        if self.session_id is None:
            raise RequestError(409, "no episode: send a reset first")
        return self.session_id

    async def step(self, action: Any) -> dict[str, Any]:
        """One joint action (keyed by agent id): OpenEnv's step reply data, team reward as `reward`."""
        reply = await self.server.step({"session_id": self._open(), "action": action}, self.caller)
        rewards = reply["reward"]
        agent_ids = list(self.server.sessions[self.session_id].pool.env.agent_ids)
        observation = reply["observation"]
        observation["metadata"] = {
            "episode_id": self.episode_id,
            "session_id": self.session_id,
            "step": reply["info"]["step"],
            "rewards": dict(zip(agent_ids, rewards, strict=True)),
            "terminated": dict(zip(agent_ids, reply["terminated"], strict=True)),
            "truncated": dict(zip(agent_ids, reply["truncated"], strict=True)),
            "info": reply["info"],
        }
        team = float(np.mean([np.nan if r is None else r for r in rewards]))
        return {
            "observation": observation,
            "reward": team if np.isfinite(team) else None,
            "done": reply["done"],
        }

    async def state(self) -> dict[str, Any]:
        """OpenEnv's `State` (episode_id, step_count) with the hivex state reply (`HivexServer.state`)."""
        if self.session_id is None:
            return {"episode_id": None, "step_count": 0}
        state = await self.server.state(self.session_id, self.caller)
        return {"episode_id": self.episode_id, "step_count": state["step"], **state}

    async def grade(self) -> dict[str, Any]:
        """The episode's grade (the project's /grade reply)."""
        return await self.server.grade(self._open(), self.caller)

    async def close(self) -> dict[str, Any]:
        """End the episode being played, if any."""
        session_id, self.session_id = self.session_id, None
        if session_id is not None and session_id in self.server.sessions:
            return await self.server.close(session_id, self.caller)
        return {"session_id": session_id, "closed": session_id is not None}
