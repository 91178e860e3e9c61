"""Shared fixtures: one unwrapped env whose reset/step are compiled once for the whole folder, and a
helper that arranges vessels and pebbles by hand for the reward and dynamics tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.envs.ocean_plastic_collection import OceanPlasticCollection
from hivex_jax.envs.ocean_plastic_collection.params import PARKED


class Harness:
    """The default env (3 vessels, 256 pebbles) with jitted reset/step and scene-building helpers."""

    def __init__(self):
        self.env = OceanPlasticCollection()
        self.params = self.env.default_params()
        self.reset = jax.jit(self.env.reset)
        self.step = jax.jit(self.env.step)
        self.base_obs, self.base_state = self.reset(hivex_jax.world_key(0), self.params)

    def scene(
        self,
        positions,
        forward=None,
        velocities=None,
        pebbles=(),
        alive=None,
        collected_total=None,
    ):
        """A state with the given vessels; `pebbles` [(x, z), ...] afloat, the rest parked far away."""
        a = self.env.num_agents
        n = self.env.num_pebbles
        px = np.full(n, PARKED, np.float32)
        pz = np.full(n, PARKED, np.float32)
        for i, (x, z) in enumerate(pebbles):
            px[i], pz[i] = x, z
        s = self.base_state
        return s.replace(
            positions=jnp.asarray(positions, jnp.float32),
            forward=jnp.asarray(forward if forward is not None else [[1.0, 0.0]] * a, jnp.float32),
            velocities=jnp.asarray(velocities if velocities is not None else [[0.0, 0.0]] * a, jnp.float32),
            pebble_x=jnp.asarray(px),
            pebble_z=jnp.asarray(pz),
            alive=jnp.asarray(alive if alive is not None else [True] * a),
            collected_total=jnp.asarray(
                collected_total if collected_total is not None else [0.0] * a, jnp.float32
            ),
            nearby_reference=jnp.zeros(a, jnp.float32),
            # respawns go far away (parked), so they never touch a hand-built scene
            respawn_x=jnp.full_like(s.respawn_x, PARKED),
            respawn_z=jnp.full_like(s.respawn_z, PARKED),
        )

    def act(self, throttle, steer):
        """Discrete action (per-vessel throttle and steer lists)."""
        return {
            "continuous": jnp.zeros((self.env.num_agents, 0), jnp.float32),
            "discrete": jnp.stack([jnp.asarray(throttle), jnp.asarray(steer)], -1).astype(jnp.int32),
        }

    def run(self, state, action, params=None, key=0):
        return self.step(jax.random.PRNGKey(key), state, action, params or self.params)


@pytest.fixture(scope="session")
def opc():
    return Harness()
