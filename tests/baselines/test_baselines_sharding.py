"""A population sharded over 4 (forced host) CPU devices gives the same numbers as on one device."""

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import trainer_fake_env
trainer_fake_env.register()
import jax
import numpy as np
from baselines.config import from_dict
from baselines.run.population import Population
from baselines.core.ppo import make_train

assert jax.device_count() == 4, jax.devices()
# Shard the env axis: parameters replicated, every gradient reduced across devices (the sharding that
# can change numbers; sharding seeds only partitions independent work). 4 seeds x 4 envs; the
# compilation cache is the test session's.
for axis in ("envs",):
    config = from_dict({**trainer_fake_env.TINY_CONFIG, "num_seeds": 4, "num_envs": 4})
    results = {}
    for n in (1, 4):
        devices = jax.devices()[:n]
        population = Population(make_train(config), devices, shard_axis=axis if n > 1 else "auto")
        state = population.init()
        metrics = []
        for _ in range(2):
            state, m = population.chunk(state)
            metrics.append(m)
        if n == 4:
            assert population.shard_axis == axis, population.shard_axis
            shards = state.obs["vector"].addressable_shards
            assert len({s.device for s in shards}) == 4
        results[n] = (metrics, jax.device_get(state.params))
    (m1, p1), (m4, p4) = results[1], results[4]
    for a, b in zip(m1, m4):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=2e-5, err_msg=k)
    for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p4)):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    print("agree", axis)
"""


# slow, like the two-process runs: a second process with 4 forced host devices compiles both programs (~30 s)
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_four_cpu_devices_match_one_device():
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    env["JAX_PLATFORMS"] = "cpu"
    cache = jax.config.jax_compilation_cache_dir  # share compiled programs with this session
    if cache:
        env["JAX_COMPILATION_CACHE_DIR"] = cache
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "1"
    here = Path(__file__).resolve().parent
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(here)],
        env=env,
        capture_output=True,
        text=True,
        timeout=290,
        cwd=here.parent.parent,
    )
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    assert "agree envs" in out.stdout
