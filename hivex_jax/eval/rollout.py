"""Full-episode rollouts on given worlds, compiled as one loop over steps that steps all worlds side by
side (vmapped) and ends when every episode has (and over a batch of policy parameters, e.g. training
seeds).

A policy is `policy(policy_params, key, obs, state) -> action` for one env (`obs` leaves `[A, ...]`).
Every call with the same `key` and worlds sees the same worlds and the same environment randomness, so
all training seeds (and the scripted / random baselines) are scored on identical episodes.

With `params_axis=True` the env params are an argument too: a stack of `EnvParams` (`stack_params`,
e.g. every task x level) is vmapped in one compiled program, and the policy is given as a factory
`make_policy(env_params) -> Policy` that receives each entry's (traced) params, as scripted controllers
need them (`lambda p: scripted_policy(env, p)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from hivex_jax.core.seeding import rollout_key, rollout_step_keys, seed_range, world_key

Policy = Callable[[Any, jax.Array, dict, Any], dict]
#: `make_policy(env_params) -> Policy`, called inside the trace with each entry's (traced) env params
PolicyFactory = Callable[[Any], Policy]
#: `final_metrics(state, env_params) -> {name: array}`, read from the state the episode ended in
FinalMetrics = Callable[[Any, Any], dict]


def _episode_parts(env: Any, make_policy: PolicyFactory, final_metrics: FinalMetrics | None):
    """`(start, step)` of one world's episode: `start(policy_params, env_params, world_seed, key) -> carry`
    and `step(policy_params, env_params, carry, t) -> carry`, carry `(obs, state, totals, finished,
    episode_key)`. An episode that ended keeps stepping with its totals frozen, so its totals do not depend
    on when the episodes beside it end."""

    def start(policy_params: Any, env_params: Any, world_seed: jax.Array, key: jax.Array) -> tuple:
        a = env.num_agents
        obs, state = env.reset(world_key(world_seed), env_params)
        episode_key = rollout_key(key, world_seed)
        zero_info = jax.eval_shape(
            lambda: env.step(episode_key, state, env.action_space().noop(), env_params)[5]
        )
        totals = {
            "return": jnp.zeros(a, jnp.float32),
            "length": jnp.zeros((), jnp.int32),
            "active_steps": jnp.zeros(a, jnp.int32),
            "reward_terms": jnp.zeros((a, len(env.reward_term_names)), jnp.float32),
            "stats": jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), zero_info.get("stats", {})),
        }
        if final_metrics is not None:
            totals["final"] = final_metrics(state, env_params)
        return obs, state, totals, jnp.zeros((), bool), episode_key

    def step(policy_params: Any, env_params: Any, carry: tuple, t: jax.Array) -> tuple:
        obs, state, totals, finished, episode_key = carry
        k_act, k_env = rollout_step_keys(episode_key, t)
        action = make_policy(env_params)(policy_params, k_act, obs, state)
        obs, state, reward, _, _, info = env.step(k_env, state, action, env_params)
        live = (~finished).astype(jnp.float32)  # count each episode once, then stop
        new_totals = {
            "return": totals["return"] + live * reward,
            "length": totals["length"] + (~finished).astype(jnp.int32),
            "active_steps": totals["active_steps"] + (live * info["active"]).astype(jnp.int32),
            "reward_terms": totals["reward_terms"] + live * info.get("reward_terms", 0.0),
            "stats": jax.tree.map(
                lambda x, y: x + live * y.astype(jnp.float32), totals["stats"], info.get("stats", {})
            ),
        }
        if final_metrics is not None:  # follow the state while the episode runs, then freeze
            new_totals["final"] = jax.tree.map(
                lambda old, new: jnp.where(finished, old, new),
                totals["final"],
                final_metrics(state, env_params),
            )
        return obs, state, new_totals, finished | info["done"], episode_key

    return start, step


def _until_all_ended(start: Callable, step: Callable, num_steps: int) -> Callable:
    """`run(policy_params, env_params, world_seeds, key) -> totals` from a batched `start` and `step`: one
    loop that steps every episode of the batch until all have ended or `num_steps` steps have passed. The
    loop sits outside every vmap, so its condition is one flag (a condition vmapped per row would make
    XLA select every carry each step)."""

    def run(policy_params: Any, env_params: Any, world_seeds: jax.Array, key: jax.Array) -> dict:
        def some_running(loop: tuple) -> jax.Array:
            t, carry = loop
            return (t < num_steps) & ~jnp.all(carry[3])

        def step_all(loop: tuple) -> tuple:
            t, carry = loop
            return t + 1, step(policy_params, env_params, carry, t)

        # stop once every episode has ended: the random baseline's planes and vessels leave the map within
        # a few hundred of AWS's 3,000 and OPC's 1,000 steps, a goal task's agents sooner
        first = (jnp.zeros((), jnp.int32), start(policy_params, env_params, world_seeds, key))
        _, (_, _, totals, _, _) = jax.lax.while_loop(some_running, step_all, first)
        return totals

    return run


def _in_turn(fn: Callable) -> Callable:
    """`fn(policy_params, *rest)` over the leading axis of `policy_params`, one row after another."""
    return lambda policy_params, *rest: jax.lax.map(lambda p: fn(p, *rest), policy_params)


class Evaluator:
    """Compiled held-out evaluation: `evaluator(policy_params)` -> totals shaped `[W, ...]`, or
    `[P, W, ...]` with `batched=True` (P = leading axis of `policy_params`, e.g. training seeds), the P
    policies vmapped or, with `in_turn=True`, one after another in the same program (`lax.map`: on the
    CPU a network vmapped over seeds runs slower per seed than one seed's own; and each policy's worlds
    stop when its own episodes have ended, vmapped ones when all policies' have).

    With `params_axis=True`, `env_params` is a stack `[E, ...]` (`stack_params`) and `policy` a factory
    `make_policy(env_params) -> Policy`; totals are `[E, W, ...]` (`[P, E, W, ...]` with `batched`), all
    E entries (tasks, levels) in one compiled program; `evaluator(..., env_params=other_stack)` reuses
    it for another stack of the same size. `final_metrics(state, env_params)`, if given, adds
    `totals["final"]`: its value on the state each episode ended in.
    Built once and called many times (e.g. during training) without recompiling.
    """

    def __init__(
        self,
        env: Any,
        env_params: Any,
        policy: Policy | PolicyFactory,
        worlds: str | Sequence[int],
        key: jax.Array | int = 0,
        num_steps: int | None = None,
        batched: bool = False,
        params_axis: bool = False,
        final_metrics: FinalMetrics | None = None,
        in_turn: bool = False,
    ):
        self.worlds = seed_range(worlds)
        self.env = env
        self.params_axis = params_axis
        self.in_turn = batched and in_turn  # rows one after another: each row's numbers, whatever its company
        # a stack's episodes end at their own max_steps (the env's `done`); loop to the longest at most
        self.num_steps = (
            int(np.max(np.asarray(env_params.max_steps))) if num_steps is None else int(num_steps)
        )
        self.key = jax.random.PRNGKey(key) if isinstance(key, int) else key
        start, step = _episode_parts(
            env,
            cast(PolicyFactory, policy) if params_axis else (lambda _: cast(Policy, policy)),
            final_metrics,
        )
        # batch the parts (the worlds side by side; the env params stack; the policy rows, if vmapped),
        # then loop over them all at once; rows played in turn loop each on its own
        start = jax.vmap(start, in_axes=(None, None, 0, None))
        step = jax.vmap(step, in_axes=(None, None, 0, None))
        if params_axis:
            start = jax.vmap(start, in_axes=(None, 0, None, None))
            step = jax.vmap(step, in_axes=(None, 0, 0, None))
        if batched and not in_turn:
            start = jax.vmap(start, in_axes=(0, None, None, None))
            step = jax.vmap(step, in_axes=(0, None, 0, None))
        run = _until_all_ended(start, step, self.num_steps)
        if batched and in_turn:
            run = _in_turn(run)
        if params_axis:
            self.env_params = env_params
            fn = run
        else:  # env params fixed at compile time (constants in the program), as before params_axis
            self.env_params = None

            def fn(policy_params, world_seeds, key):
                return run(policy_params, env_params, world_seeds, key)

        def held_out_episodes(*args: Any) -> dict[str, Any]:
            """The compiled program (its name in compile logs and events): one episode per world."""
            return fn(*args)

        self._fn = jax.jit(held_out_episodes)
        self.loaded: list[Any] = []  # programs compiled elsewhere (`load`)
        self.loaded_calls = 0  # calls they served
        self._seeds = jnp.asarray(self.worlds.astype(np.uint32))

    def load(self, compiled: Any) -> None:
        """Play calls of `compiled`'s argument shapes with it instead of compiling them here: this
        evaluator's program as `program` compiled it in another process (a helper's, sent through
        `jax.experimental.serialize_executable`: the same executable, so the same numbers)."""
        self.loaded.append(compiled)

    def _call(self, *args: Any) -> Any:
        """The program on `args`: a loaded one made for their shapes, else the jitted one."""
        for compiled in self.loaded:
            try:
                out = compiled(*args)
            except TypeError:  # compiled for other shapes
                continue
            self.loaded_calls += 1
            return out
        return self._fn(*args)

    def program(self, policy_params: Any = None) -> tuple[Any, tuple]:
        """`(compiled, args)`: the compiled program and the arguments of a call on the evaluator's own
        worlds (and params stack): `compiled(*args)` is that call, `compiled.as_text()` its HLO (profiles)."""
        if self.params_axis:
            args = (policy_params, self.env_params, self._seeds, self.key)
        else:
            args = (policy_params, self._seeds, self.key)
        return self._fn.lower(*args).compile(), args

    def __call__(
        self, policy_params: Any = None, worlds: str | Sequence[int] | None = None, env_params: Any = None
    ) -> dict[str, Any]:
        """Totals on the evaluator's worlds, or on `worlds` (recompiles only if their count differs);
        with `params_axis`, on the constructor's params stack or on `env_params` (same recompile rule)."""
        seeds = self._seeds if worlds is None else jnp.asarray(seed_range(worlds).astype(np.uint32))
        if self.params_axis:
            stack = self.env_params if env_params is None else env_params
            out = self._call(policy_params, stack, seeds, self.key)
        else:
            if env_params is not None:
                raise ValueError("env_params at call time needs Evaluator(..., params_axis=True)")
            out = self._call(policy_params, seeds, self.key)
        return jax.tree.map(np.asarray, out)


def evaluate(
    env: Any,
    env_params: Any,
    policy: Policy,
    worlds: str | Sequence[int],
    policy_params: Any = None,
    key: jax.Array | int = 0,
    num_steps: int | None = None,
    batched: bool = False,
) -> dict[str, Any]:
    """One-shot `Evaluator(...)(policy_params)`: per-world (and per-agent) episode totals as numpy."""
    return Evaluator(env, env_params, policy, worlds, key, num_steps, batched)(policy_params)


def evaluate_params(
    env: Any,
    params_batch: Any,
    make_policy: PolicyFactory,
    worlds: str | Sequence[int],
    policy_params: Any = None,
    key: jax.Array | int = 0,
    num_steps: int | None = None,
    batched: bool = False,
    final_metrics: FinalMetrics | None = None,
) -> dict[str, Any]:
    """One-shot `Evaluator(..., params_axis=True)(policy_params)`: totals `[E, W, ...]` as numpy for a
    stack of E `EnvParams` (one compile for all of them)."""
    evaluator = Evaluator(
        env,
        params_batch,
        make_policy,
        worlds,
        key,
        num_steps,
        batched,
        params_axis=True,
        final_metrics=final_metrics,
    )
    return evaluator(policy_params)


# ------------------------------------------------------------------------------------ baselines
def random_policy(env: Any) -> Policy:
    """Uniform random hybrid actions (the HIVEX random baseline)."""
    space = env.action_space()
    return lambda policy_params, key, obs, state: space.sample(key)


def find_scripted_policy(env: Any) -> Callable | None:
    """The environment's `scripted_policy(obs, params)` (the env class attribute every package sets from
    its `heuristics.py`, looked up through wrappers: the outermost wrapper that defines one, e.g.
    `MessageChannel`'s, which adds the message part), or None if it has none."""
    fn = getattr(env, "scripted_policy", None)
    return fn if callable(fn) else None


def scripted_policy(env: Any, env_params: Any) -> Policy | None:
    """The environment's scripted controller as a `Policy`, or None."""
    fn = find_scripted_policy(env)
    if fn is None:
        return None
    return lambda policy_params, key, obs, state: fn(obs, env_params)


def summarize_totals(totals: dict[str, Any], reward_term_names: Sequence[str]) -> dict[str, Any]:
    """Per-world numbers from `Evaluator` output `[W, A, ...]`: mean-over-agents return, per-term sums,
    statistics (agent means), length."""
    out = {
        "return": np.asarray(totals["return"]).mean(-1).tolist(),
        "return_per_agent": np.asarray(totals["return"]).tolist(),
        "length": np.asarray(totals["length"]).tolist(),
        "reward_terms": {
            name: np.asarray(totals["reward_terms"])[..., i].mean(-1).tolist()
            for i, name in enumerate(reward_term_names)
        },
        "stats": {k: np.asarray(v).mean(-1).tolist() for k, v in totals["stats"].items()},
    }
    return out
