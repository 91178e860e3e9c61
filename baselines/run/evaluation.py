"""Held-out evaluation: the trained policy (greedy and stochastic, every seed) and the baselines
(scripted, random) on test worlds, as compiled programs; and a saved run scored on any worlds."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import hivex_jax
from baselines.config import PPOConfig, fit_saved_config, from_dict, make_env, read_config_file
from baselines.core.ppo import Train
from baselines.core.program_cache import ProgramKeys, cached
from baselines.run import checkpoint
from baselines.run.eval_policies import (
    BASELINES_EXACT_AS_DATA,
    BASELINES_EXACT_AS_DATA_IN_TURN,
    SettingBaselines,
    baseline_factory,
    baseline_policies,
    greedy_and_stochastic_rows,
    greedy_or_stochastic,
    policy_env,
    rows_in_turn,
)
from baselines.run.eval_worlds import distinct_worlds, world_setting
from baselines.run.population import Population, get_population, seeds_in_turn
from baselines.run.transfer import env_setting, eval_config
from hivex_jax.eval import rollout
from hivex_jax.eval.score import score_fields
from hivex_jax.eval.stats import summarize


class HeldOutEvaluation:
    """Compiled evaluations on the test worlds, two programs in all: the trained policy (greedy and
    stochastic, every seed) and the baselines (the env's scripted controller, random). One
    `eval_seed` stream for all of them, so every policy meets the same worlds and the same noise. Rows
    played in turn (the seeds' policies: `rows_in_turn`; the baselines: `seeds_in_turn`; both: `in_turn`)
    stop when their own worlds' episodes have ended (random's within a few hundred steps on AWS and OPC)."""

    def __init__(
        self,
        train: Train,
        worlds: str | Sequence[int],
        num_steps: int | None = None,
        params_as_data: bool = False,
        in_turn: bool | None = None,
    ):
        cfg = train.config
        env, params = train.env, train.env_params
        # rows one after another (None: the trained policy's on one CPU device for camera envs,
        # `rows_in_turn`; the baselines' wherever the seeds run in turn, so each controller computes only
        # its own actions and random stops when its planes or vessels have left)
        baselines_in_turn = seeds_in_turn(jax.devices()) if in_turn is None else in_turn
        in_turn = rows_in_turn(env, params) if in_turn is None else in_turn
        key = jax.random.PRNGKey(cfg.eval_seed)
        self.helpers: Any = None  # processes that play some rows and the baselines (`run.helpers`)
        self.train = train  # its env is the evaluated one (stress / file worlds): the GIF plays there too
        self.worlds = rollout.seed_range(worlds)
        self.distinct_episodes: dict[str, Any] | None = None  # seeds dropped as repeats (distinct_worlds)
        self.num_seeds = cfg.num_seeds
        self.reward_term_names = tuple(env.reward_term_names)
        self.baseline_names = baseline_policies(env, params)[0]
        # `params_as_data`: the trained policy's program takes the env params as an argument (a stack of
        # one), not as constants, so `in_setting` serves another task, level or env params without
        # compiling it again. The baselines are every run's reference: they do the same only on the envs
        # where that scores what the constant-params program scores (`BASELINES_EXACT_AS_DATA`); elsewhere
        # each setting keeps its own constant-params program (on Drone-Based Reforestation a 1e-6
        # difference in a world's reset changes a scripted episode's events)
        self.params_stack = hivex_jax.stack_params([params]) if params_as_data else None
        trained = greedy_or_stochastic(train)
        self.trained = rollout.Evaluator(
            policy_env(train),
            params if self.params_stack is None else self.params_stack,
            trained if self.params_stack is None else (lambda _: trained),
            self.worlds,
            key,
            num_steps,
            True,
            params_as_data,
            in_turn=in_turn,
        )
        self._baselines_as_data = None
        exact_as_data = cfg.env_id in BASELINES_EXACT_AS_DATA or (
            baselines_in_turn and cfg.env_id in BASELINES_EXACT_AS_DATA_IN_TURN
        )
        if params_as_data and exact_as_data:
            self._baselines_as_data = rollout.Evaluator(
                env,
                self.params_stack,
                baseline_factory(env),
                self.worlds,
                key,
                num_steps,
                True,
                True,
                in_turn=baselines_in_turn,
            )
        self._num_steps = num_steps
        self._baselines_in_turn = baselines_in_turn
        self._baselines_by_setting: dict[str, Any] = {}  # shared by copies
        self.baselines = self._setting_baselines(train)

    def _setting_baselines(self, train: Train) -> Any:
        """The baselines' program for `train`'s setting, built once per setting: the shared params-as-data
        one bound to its params, or its own constant-params one."""
        setting = train.keys.init_and_eval
        if setting not in self._baselines_by_setting:
            env, params = train.env, train.env_params
            if self._baselines_as_data is not None:
                stack = hivex_jax.stack_params([params])
                program = SettingBaselines(self._baselines_as_data, stack)
            else:
                key = jax.random.PRNGKey(train.config.eval_seed)
                _, baseline = baseline_policies(env, params)
                program = rollout.Evaluator(
                    env,
                    params,
                    baseline,
                    self.worlds,
                    key,
                    self._num_steps,
                    True,
                    in_turn=self._baselines_in_turn,
                )
            self._baselines_by_setting[setting] = program
        return self._baselines_by_setting[setting]

    def in_setting(self, train: Train) -> HeldOutEvaluation:
        """The same compiled trained-policy evaluation (built with `params_as_data`) for `train`'s env
        params (another task, level or `EnvParams` field of the same env and policy shapes), with the
        baselines' program of that setting."""
        other = copy.copy(self)
        other.train = train
        other.params_stack = hivex_jax.stack_params([train.env_params])
        other.baselines = self._setting_baselines(train)
        return other

    def play_trained(self, policy_params: Any) -> dict[str, Any]:
        """The trained program's totals `[P, W, ...]` on this evaluation's worlds (and env params)."""
        if self.params_stack is None:
            return self.trained(policy_params, self.worlds)
        totals = self.trained(policy_params, self.worlds, env_params=self.params_stack)  # [P, 1, W, ...]
        return jax.tree.map(lambda x: x[:, 0], totals)

    def on(self, worlds: Sequence[int]) -> HeldOutEvaluation:
        """The same compiled evaluation on other worlds (same count: no recompilation)."""
        other = copy.copy(self)
        other.helpers = None  # they play this evaluation's own worlds
        other.worlds = rollout.seed_range(worlds)
        return other

    def trained_totals(self, params: Any) -> dict[str, dict[str, np.ndarray]]:
        """`{"greedy": totals [S, W, A, ...], "stochastic": ...}` for population params `[S, ...]`."""
        play = self.play_trained if self.helpers is None else self.helpers.split(self)
        totals = play(greedy_and_stochastic_rows(params, self.num_seeds))
        s = self.num_seeds
        return {
            "greedy": jax.tree.map(lambda x: x[:s], totals),
            "stochastic": jax.tree.map(lambda x: x[s:], totals),
        }

    def baseline_totals(self) -> dict[str, dict[str, np.ndarray]]:
        """`{"scripted": totals [W, A, ...], "random": ...}`."""
        play = self.baselines if self.helpers is None else self.helpers.baselines_or(self.baselines)
        totals = play(jnp.arange(len(self.baseline_names)), self.worlds)
        return {n: jax.tree.map(lambda x, i=i: x[i], totals) for i, n in enumerate(self.baseline_names)}

    def full(self, params: Any, baselines: bool = True, trained: dict | None = None) -> dict[str, Any]:
        """Every policy's per-world results and summaries (the content of eval.json). `trained`: these
        params' `trained_totals` when the caller has them already (the training loop's last evaluation),
        so the trained policy is not played twice."""
        out: dict[str, Any] = {"worlds": self.worlds.tolist(), "policies": {}}
        if self.distinct_episodes is not None:
            out["distinct_episodes"] = self.distinct_episodes
        trained = self.trained_totals(params) if trained is None else trained
        for name, totals in trained.items():  # [S, W, A, ...]
            per_seed = totals["return"].mean(-1)
            per_world = [
                {
                    "world": int(w),
                    "return_mean": float(per_seed[:, i].mean()),
                    "return_per_seed": per_seed[:, i].tolist(),
                    "return_per_agent": totals["return"][:, i].tolist(),  # [S, A]
                    "reward_terms": {
                        n: totals["reward_terms"][:, i, :, k].mean(-1).tolist()
                        for k, n in enumerate(self.reward_term_names)
                    },
                    "stats": {k: v[:, i].mean(-1).tolist() for k, v in totals["stats"].items()},
                    "length": totals["length"][:, i].tolist(),
                }
                for i, w in enumerate(self.worlds)
            ]
            out["policies"][name] = {"summary": summarize(per_seed), "per_world": per_world}
        if baselines:
            for name, totals in self.baseline_totals().items():  # [W, A, ...]
                per_world_returns = totals["return"].mean(-1)
                out["policies"][name] = {
                    "summary": summarize(per_world_returns[None]),
                    "per_world": [
                        {
                            "world": int(w),
                            "return_mean": float(per_world_returns[i]),
                            "return_per_agent": totals["return"][i].tolist(),  # [A]
                            "reward_terms": {
                                n: float(totals["reward_terms"][i, :, k].mean())
                                for k, n in enumerate(self.reward_term_names)
                            },
                            "stats": {k: float(v[i].mean()) for k, v in totals["stats"].items()},
                            "length": int(totals["length"][i]),
                        }
                        for i, w in enumerate(self.worlds)
                    ],
                }
            # normalised_score (and fraction_of_scripted where the scripted return is positive) of each
            # trained policy's mean return, by the baselines' means on the same worlds
            means = {n: p["summary"]["mean"] for n, p in out["policies"].items()}
            out.update(score_fields(means, trained=tuple(trained)))
        return out


def get_evaluation(population: Population, worlds: Any, num_steps: int | None = None) -> HeldOutEvaluation:
    """`HeldOutEvaluation` for the population's policy on `worlds` (or "stress"), reused across calls;
    seeds that would repeat an episode on a file world are dropped (`distinct_worlds`)."""
    if worlds == "stress":
        evaluated, worlds, _ = world_setting(population.config, worlds)
        return get_transfer_evaluation(population, evaluated, worlds, num_steps)
    world_list, dropped = distinct_worlds(population.train.env, worlds)
    # configs that differ only in update-only keys (a fused sweep's lr x ent_coef members) share it
    key = ("evaluation", population.train.keys.init_and_eval, len(world_list), num_steps)
    found = cached(key, lambda: HeldOutEvaluation(population.train, world_list, num_steps)).on(world_list)
    found.distinct_episodes = dropped
    return found


# ------------------------------------------------------------------------------------------ evaluate
def load_run(
    run_dir: str | Path, overrides: dict[str, Any] | None = None
) -> tuple[PPOConfig, Population, Any]:
    """`(config, population, state)` of a saved run's latest checkpoint."""
    run_dir = Path(run_dir)
    values = read_config_file(run_dir / "config.yaml")  # the bounded reader of every config
    values.update(overrides or {})
    config = fit_saved_config(from_dict(values))
    population = get_population(config)
    state, _ = checkpoint.restore(run_dir, population.abstract_state())
    return config, population, state


#: `make_env` of the settings `get_transfer_evaluation` evaluated in lately (a few; not the program cache)
_TRANSFER_ENVS: dict[Any, tuple[Any, Any]] = {}


def get_transfer_evaluation(
    population: Population, evaluated: PPOConfig, worlds: Any, num_steps: int | None = None
) -> HeldOutEvaluation:
    """`HeldOutEvaluation` of the population's trained actor in the env of `evaluated` (another agent
    count, level, task, env option; `baselines.run.transfer.eval_config` checked it can act there)."""
    evaluated_keys = ProgramKeys.of(evaluated)
    env_key = evaluated_keys.compute
    if env_key not in _TRANSFER_ENVS:  # built once per setting (world files are read here), not per call
        if len(_TRANSFER_ENVS) >= 4:
            _TRANSFER_ENVS.clear()
        _TRANSFER_ENVS[env_key] = make_env(evaluated)
    env, env_params = _TRANSFER_ENVS[env_key]

    def build() -> HeldOutEvaluation:
        train = dataclasses.replace(
            population.train, config=evaluated, env=env, env_params=env_params, keys=evaluated_keys
        )
        return HeldOutEvaluation(train, world_list, num_steps)

    world_list, dropped = distinct_worlds(env, worlds)
    key = ("transfer", population.train.keys.compute, env_key, len(world_list), num_steps)
    evaluation = cached(key, build).on(world_list)
    evaluation.distinct_episodes = dropped
    return evaluation


def evaluate_run(
    run_dir: str | Path,
    worlds: str | None = None,
    baselines: bool = True,
    num_steps: int | None = None,
    env_overrides: Sequence[str] = (),
    world_files: str | None = None,
) -> dict[str, Any]:
    """Evaluate a saved run's policy (greedy and stochastic, every seed) on `worlds` (default: its test
    pool), with the scripted and random baselines on the same worlds; `env_overrides` (`num_agents=12`,
    `level=3`, ...) evaluate it zero-shot in another env setting (`baselines.run.transfer`);
    `worlds="stress"` and `world_files` (a glob) evaluate it on stress worlds / worlds from files
    (`eval_worlds.world_setting`)."""
    config, population, state = load_run(run_dir)
    updates_done = int(jax.device_get(state.update)[0])
    return evaluate_params(
        config,
        population,
        state.params,
        updates_done,
        worlds,
        baselines,
        num_steps,
        env_overrides,
        world_files,
    )


def evaluate_params(
    config: PPOConfig,
    population: Population,
    params: Any,
    updates_done: int,
    worlds: str | None = None,
    baselines: bool = True,
    num_steps: int | None = None,
    env_overrides: Sequence[str] = (),
    world_files: str | None = None,
) -> dict[str, Any]:
    """`evaluate_run` of population `params` `[S, ...]` (a run's, or a pretrained policy's with S = 1)
    trained with `config` for `updates_done` updates."""
    evaluated = eval_config(config, env_overrides)
    evaluated, worlds, world_record = world_setting(evaluated, worlds or config.test_worlds, world_files)
    if evaluated == config:
        evaluation = get_evaluation(population, worlds, num_steps)
    else:
        evaluation = get_transfer_evaluation(population, evaluated, worlds, num_steps)
    results = evaluation.full(params, baselines=baselines)
    train_pool = set(rollout.seed_range(config.train_worlds).tolist())
    results.update(
        worlds_in_train_pool=sum(int(w) in train_pool for w in results["worlds"]),
        algo=config.algo,
        env_id=config.env_id,
        task=evaluated.task,
        level=evaluated.level,
        num_seeds=config.num_seeds,
        updates_done=updates_done,
        eval_seed=config.eval_seed,
        env_overrides=list(env_overrides),
        episode_steps=num_steps,  # None: full episodes; N: each rollout cut at N decisions (--steps)
        train_setting=env_setting(config),
        eval_setting=env_setting(evaluated),
        **world_record,
    )
    return results
