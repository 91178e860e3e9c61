"""`check_env`: the conformance checker every registered environment must pass."""

from __future__ import annotations

import weakref
from types import SimpleNamespace
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.registry import stack_params, world_key

ROLLOUT_STEPS = 8


class ConformanceError(AssertionError):
    """An environment broke the API contract."""


def _fail(env: Any, msg: str) -> NoReturn:
    raise ConformanceError(f"{getattr(env, 'env_id', type(env).__name__)}: {msg}")


def _check_obs(env: Any, obs: Any, params: Any, where: str) -> None:
    space = env.observation_space(params)
    if set(obs.keys()) != set(space.keys()):
        _fail(env, f"{where}: obs keys {sorted(obs)} != space keys {sorted(space.keys())}")
    for k, s in space.spaces.items():
        x = obs[k]
        if tuple(x.shape) != tuple(s.shape) or x.dtype != jnp.dtype(s.dtype):
            _fail(env, f"{where}: obs[{k!r}] is {x.dtype}{x.shape}, space says {s.dtype}{s.shape}")
        if jnp.issubdtype(x.dtype, jnp.floating) and not bool(jnp.all(jnp.isfinite(x))):
            _fail(env, f"{where}: obs[{k!r}] has non-finite values")
        if not bool(s.contains(x)):
            _fail(env, f"{where}: obs[{k!r}] outside [{s.low}, {s.high}]")


def _rollout(env: Any, params: Any, key: jax.Array, num_steps: int):
    """Random-action rollout without reset; returns stacked (obs, reward, terminated, truncated)."""
    k_reset, k_run = jax.random.split(key)
    obs, state = env.reset(k_reset, params)
    space = env.action_space(params)

    def body(carry, k):
        state = carry
        k_act, k_step = jax.random.split(k)
        action = space.sample(k_act)
        obs, state, reward, term, trunc, info = env.step(k_step, state, action, params)
        return state, (obs, reward, term, trunc)

    _, traj = jax.lax.scan(body, state, jax.random.split(k_run, num_steps))
    return obs, traj


_JIT_CACHE: weakref.WeakKeyDictionary[Any, SimpleNamespace] = weakref.WeakKeyDictionary()


def _jitted(env: Any) -> SimpleNamespace:
    """Compiled reset/step/render/rollout for `env`, built once per env object."""
    if env not in _JIT_CACHE:
        _JIT_CACHE[env] = SimpleNamespace(
            reset=jax.jit(env.reset),
            step=jax.jit(env.step),
            render=jax.jit(env.render),
            global_state=jax.jit(env.global_state),
            rollout=jax.jit(lambda k, p: _rollout(env, p, k, ROLLOUT_STEPS)),
            batched_reset=jax.jit(jax.vmap(env.reset, in_axes=(0, None))),
        )
    return _JIT_CACHE[env]


def check_env(env: Any, params: Any, batch: int = 3, eager: bool = True, mixed: bool = True) -> None:
    """Raise `ConformanceError` unless `env` honours the API contract (docs/api.md, "Conformance").

    Checks: outputs match the spaces (shapes, dtypes, bounds); rewards and observations finite;
    jit and eager agree; vmap over keys works; vmap over a batch mixing every task and level traces
    `step` once; the same key gives a bitwise-identical rollout; different world seeds differ;
    `global_state`, `render` and `info` have the documented shapes. Compiled functions are cached
    per env object, so checking many params of one env compiles once; `eager=False` skips the
    (slow, op-by-op) eager comparison and `mixed=False` the mixed-params batch (it does not depend
    on `params`, so one run per env object is enough).
    """
    a = env.num_agents
    key = world_key(0)
    fns = _jitted(env)

    # --- reset/step outputs against the spaces
    obs, state = fns.reset(key, params)
    _check_obs(env, obs, params, "reset")
    space = env.action_space(params)
    action = space.sample(jax.random.PRNGKey(1))
    if not bool(space.contains(action)):
        _fail(env, "action_space.sample() is not contained in action_space")
    out = fns.step(jax.random.PRNGKey(2), state, action, params)
    if len(out) != 6:
        _fail(env, "step must return (obs, state, reward, terminated, truncated, info)")
    obs1, state1, reward, term, trunc, info = out
    _check_obs(env, obs1, params, "step")
    for name, x, dtype in (
        ("reward", reward, jnp.float32),
        ("terminated", term, jnp.bool_),
        ("truncated", trunc, jnp.bool_),
    ):
        if tuple(x.shape) != (a,) or x.dtype != dtype:
            _fail(env, f"{name} must be {jnp.dtype(dtype)}[{a}]; got {x.dtype}{tuple(x.shape)}")
    if not bool(jnp.all(jnp.isfinite(reward))):
        _fail(env, "reward has non-finite values")
    terms = info.get("reward_terms")
    if terms is None or tuple(terms.shape) != (a, len(env.reward_term_names)):
        _fail(env, f"info['reward_terms'] must be f32[{a}, {len(env.reward_term_names)}]")
    if not np.allclose(np.asarray(jnp.sum(terms, -1)), np.asarray(reward), rtol=1e-5, atol=1e-5):
        _fail(env, "reward != sum of info['reward_terms']")
    if "stats" not in info:
        _fail(env, "info['stats'] (HIVEX's logged statistics) is missing")
    gs = fns.global_state(state1, params)
    if gs.ndim != 1 or gs.dtype != jnp.float32 or not bool(jnp.all(jnp.isfinite(gs))):
        _fail(env, f"global_state must be finite f32[S]; got {gs.dtype}{gs.shape}")
    frame = fns.render(state1, params)
    if frame.ndim != 3 or frame.shape[-1] != 3 or frame.dtype != jnp.uint8:
        _fail(env, f"render must return uint8[H, W, 3]; got {frame.dtype}{frame.shape}")

    # --- jit and eager agree (one eager reset + step: op-by-op execution is slow)
    if eager:
        with jax.disable_jit():
            e_obs, e_state = env.reset(key, params)
            e_out = env.step(jax.random.PRNGKey(2), e_state, action, params)
        pairs = zip(
            jax.tree.leaves((e_obs, e_out[0], e_out[2:5])),
            jax.tree.leaves((obs, obs1, out[2:5])),
            strict=True,
        )
        for x, y in pairs:
            if not np.allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=1e-4, atol=1e-4):
                _fail(env, "jit and eager reset/step disagree")

    # --- determinism: the same key gives a bitwise-identical rollout
    jit_obs, jit_traj = fns.rollout(key, params)
    again_obs, again_traj = fns.rollout(key, params)
    for x, y in zip(
        jax.tree.leaves((jit_obs, jit_traj)), jax.tree.leaves((again_obs, again_traj)), strict=True
    ):
        if not np.array_equal(np.asarray(x), np.asarray(y)):
            _fail(env, "the same key gave different rollouts (not deterministic)")
    for leaf in jax.tree.leaves(jit_traj):
        if jnp.issubdtype(leaf.dtype, jnp.floating) and not bool(jnp.all(jnp.isfinite(leaf))):
            _fail(env, "non-finite values during the rollout")

    # --- different world seeds give different worlds; same seed same world in any batch
    obs_a, _ = fns.reset(world_key(1), params)
    obs_b, _ = fns.reset(world_key(2), params)
    if all(
        np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(jax.tree.leaves(obs_a), jax.tree.leaves(obs_b), strict=True)
    ):
        _fail(env, "world seeds 1 and 2 gave identical observations")
    keys = jax.vmap(world_key)(jnp.arange(batch, dtype=jnp.uint32))
    batched_obs, _ = fns.batched_reset(keys, params)
    single = jax.tree.leaves(obs_a)
    in_batch = jax.tree.leaves(jax.tree.map(lambda x: x[1], batched_obs))
    for x, y in zip(single, in_batch, strict=True):
        if not np.allclose(np.asarray(x), np.asarray(y), atol=1e-5):
            _fail(env, "world 1 differs between an unbatched reset and a batch of worlds")

    # --- vmap over a batch that mixes every task and level: one trace of step
    if not mixed:
        return
    variants = []
    levels = env.level_values or (None,)
    for t in env.task_ids:
        for lv in levels:
            variants.append(env.variant_params(params, task=t, level=lv))
    mixed = stack_params(variants)
    n = len(variants)
    traces = {"step": 0}

    def counted_step(k, s, act, p):
        traces["step"] += 1
        return env.step(k, s, act, p)

    keys = jax.random.split(key, n)
    batch_state = jax.jit(jax.vmap(env.reset))(keys, mixed)[1]
    acts = jax.vmap(space.sample)(keys)
    step = jax.jit(jax.vmap(counted_step))
    obs_m, _, rew_m, _, _, _ = step(keys, batch_state, acts, mixed)
    permuted = jax.tree.map(lambda x: x[::-1], mixed)  # other values, same shapes: no retrace
    step(keys, batch_state, acts, permuted)
    if traces["step"] != 1:
        _fail(env, f"step traced {traces['step']} times for batches of mixed params (expected 1)")
    if rew_m.shape != (n, a) or not bool(jnp.all(jnp.isfinite(rew_m))):
        _fail(env, "mixed-params batch gave wrongly shaped or non-finite rewards")
    for k, s in env.observation_space(params).spaces.items():
        if obs_m[k].shape != (n,) + tuple(s.shape):
            _fail(env, f"mixed batch obs[{k!r}] has shape {obs_m[k].shape}")
