"""HIVEX's test protocol (`hivex_jax.eval.hivex_protocol`): summary windows over agent steps, one world
after another from the test seed, the cell = mean over runs of each run's mean summary point."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from hivex_jax.core import spaces
from hivex_jax.core.environment import Environment, EnvState, StepOutput
from hivex_jax.eval.hivex_protocol import (
    HIVEX_TEST_RUNS,
    HivexTestRun,
    evaluate_hivex_protocol,
    hivex_test_run,
)


@struct.dataclass
class CountParams:
    task: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    max_steps: jax.Array = struct.field(default_factory=lambda: jnp.int32(3))


@struct.dataclass
class CountState(EnvState):
    world_value: jax.Array  # f32[], the world's seed minus 6000


class CountEnv(Environment):
    """Each agent earns `world_seed - 6000` per decision; the episode lasts `max_steps` decisions.
    Agent 1 retires after its first decision when `retire` is set (an inactive agent takes no steps)."""

    env_id = "ProtocolCount-v0"
    reward_term_names = ("value",)
    params_type = CountParams
    static_options: ClassVar[tuple[str, ...]] = ()
    discrete_branches = (2,)

    def __init__(self, num_agents: int = 2, retire: bool = False):
        self.num_agents = num_agents
        self.retire = retire

    def default_params(self) -> CountParams:
        return CountParams()

    def observation_space(self, params=None) -> spaces.Dict:
        return spaces.Dict({"vector": spaces.Box(-1e9, 1e9, (self.num_agents, 1), jnp.float32)})

    def _obs(self, state: CountState) -> dict:
        return {"vector": jnp.broadcast_to(state.world_value, (self.num_agents, 1))}

    def reset_env(self, key, params):
        seed = jax.random.key_data(key)[-1] if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key[-1]
        state = CountState(
            step=jnp.int32(0),
            alive=jnp.ones(self.num_agents, bool),
            world_value=seed.astype(jnp.float32) - 6000.0,
        )
        return self._obs(state), state

    def step_env(self, key, state, action, params):
        reward = jnp.full((self.num_agents,), state.world_value)
        terminated = jnp.zeros(self.num_agents, bool)
        if self.retire:
            terminated = terminated.at[1].set(True)
        new_state = state.replace(step=state.step + 1)
        return StepOutput(
            self._obs(new_state), new_state, reward, terminated, {"reward_terms": reward[:, None]}
        )


def _noop(params, key, obs, state):
    return {
        "continuous": jnp.zeros((obs["vector"].shape[0], 0)),
        "discrete": jnp.zeros((obs["vector"].shape[0], 1), jnp.int32),
    }


def test_summary_windows_by_hand():
    # 2 agents x 3 decisions = 6 agent steps per episode; windows of 12 agent steps hold 2 episodes each;
    # episode k plays world 6000 + k, so each agent's return is 3k: windows (0+3)/2, (6+9)/2, (12+15)/2.
    env = CountEnv()
    protocol = HivexTestRun(agent_steps=36, summary_freq=12, runs=2)
    out = evaluate_hivex_protocol(env, env.default_params(), _noop, None, protocol, chunk=5)
    for run in out["runs"]:
        assert run["summary_points"] == pytest.approx([1.5, 7.5, 13.5])
        assert run["episode_length_points"] == pytest.approx([3.0, 3.0, 3.0])
        assert run["agent_episode_length_points"] == pytest.approx([3.0, 3.0, 3.0])
        assert run["agent_steps"] == 36
    assert out["cell"] == pytest.approx(7.5)
    assert out["protocol"] == "hivex"
    assert out["test_run"]["summary_freq"] == 12


def test_inactive_agents_take_no_agent_steps():
    # agent 1 retires after its first decision: an episode is 3 + 1 = 4 agent steps, so 12-step windows
    # hold 3 episodes; per-agent returns of episode k: agent 0 3k, agent 1 k (one rewarded decision).
    env = CountEnv(retire=True)
    protocol = HivexTestRun(agent_steps=24, summary_freq=12, runs=1)
    out = evaluate_hivex_protocol(env, env.default_params(), _noop, None, protocol, chunk=7)
    # window 0: episodes 0,1,2 -> (0+0 + 3+1 + 6+2) / 6 = 2; window 1: episodes 3,4,5 -> (12+16+20)/6 = 8
    assert out["runs"][0]["summary_points"] == pytest.approx([2.0, 8.0])
    assert out["cell"] == pytest.approx(5.0)
    # episode lengths: the world's episode lasts 3 decisions for both agents; agent 0 is active for 3 of
    # them, agent 1 for 1, so the per-agent length (HIVEX's, logged per agent) is (3 + 1) / 2 = 2
    assert out["runs"][0]["episode_length_points"] == pytest.approx([3.0, 3.0])
    assert out["runs"][0]["agent_episode_length_points"] == pytest.approx([2.0, 2.0])
    assert out["world_episode_length"] == pytest.approx(3.0)
    assert out["agent_episode_length"] == pytest.approx(2.0)


def test_windows_without_an_episode_write_no_point():
    # episodes of 6 agent steps, windows of 4: window 0 (steps 0-3) ends none; window 1 (4-7) ends episode 0
    env = CountEnv()
    protocol = HivexTestRun(agent_steps=12, summary_freq=4, runs=1)
    out = evaluate_hivex_protocol(env, env.default_params(), _noop, None, protocol, chunk=3)
    assert out["runs"][0]["summary_points"] == pytest.approx([0.0, 3.0])


def test_runs_use_their_own_policy_params():
    # a policy whose params scale nothing still runs once per run: per-run outputs exist for each run
    env = CountEnv()
    protocol = HivexTestRun(agent_steps=12, summary_freq=12, runs=3)
    out = evaluate_hivex_protocol(env, env.default_params(), _noop, jnp.arange(3.0), protocol)
    assert len(out["runs"]) == 3
    assert np.allclose([r["mean"] for r in out["runs"]], 1.5)


def test_budgets_and_bad_input():
    assert set(HIVEX_TEST_RUNS) == {
        "WindFarmControl-v0",
        "WildfireResourceManagement-v0",
        "DroneBasedReforestation-v0",
        "OceanPlasticCollection-v0",
        "AerialWildfireSuppression-v0",
    }
    assert HIVEX_TEST_RUNS["WindFarmControl-v0"].agent_steps == 8_000_000  # reference §2.1 table
    assert HIVEX_TEST_RUNS["WildfireResourceManagement-v0"].summary_freq == 4_500
    assert hivex_test_run("WindFarmControl-v0", agent_steps=80_000).agent_steps == 80_000
    with pytest.raises(ValueError, match="at least one summary window"):
        hivex_test_run("WindFarmControl-v0", agent_steps=10)
    with pytest.raises(ValueError, match="needs both"):
        hivex_test_run("jaxmarl/MPE_simple_spread_v3")
    custom = hivex_test_run("jaxmarl/MPE_simple_spread_v3", agent_steps=300, summary_freq=100, runs=2)
    assert (custom.agent_steps, custom.summary_freq, custom.runs, custom.test_seed) == (300, 100, 2, 6000)
    with pytest.raises(ValueError, match="runs must be"):
        hivex_test_run("WindFarmControl-v0", runs=0)
