"""`hivex bench --train CONFIG --profile`: one update of a config split into its pieces (env step, rollout
inference, GAE, PPO epochs), each compiled apart and timed after a warm-up, with the run's evaluation and
host time apart and the learner's GFLOP/s beside a float32 matmul's on the same machine. The seeds run as
the trainer runs them: vmapped, or in turn on one CPU device (`baselines.run.population.over_seeds`)."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from baselines.cli.profile_report import PIECES, camera_summary
from hivex_jax.cli_support import prepare_jax

prepare_jax()  # PJRT_NPROC before jax starts a backend


MATMUL_SIDE = 2048  # the float32 matmul the learner's GFLOP/s is set beside


def _compiled(fn: Callable, *args: Any, options: dict[str, Any] | None = None) -> tuple[Any, float]:
    """`(jit(fn) compiled for args with XLA's compiler `options`, compile seconds)`."""
    start = time.perf_counter()
    compiled = jax.jit(fn, compiler_options=options).lower(*args).compile()
    return compiled, time.perf_counter() - start


def _flops(compiled: Any) -> float:
    """XLA's FLOP count of a compiled program (`cost_analysis`; a loop body is counted once)."""
    analysis = compiled.cost_analysis()
    if isinstance(analysis, (list, tuple)):  # older jax: one dict per computation
        analysis = analysis[0] if analysis else {}
    return float((analysis or {}).get("flops", float("nan")))


class MatmulReference:
    """A float32 `side x side` matmul on the default device, compiled once: the machine's dense rate the
    learner's is set beside. `rate()` is taken right before each round's PPO epochs (`time_round`), so
    each ratio pairs the two at the same minute (a shared CPU's rate moved by a third within an hour)."""

    def __init__(self, side: int = MATMUL_SIDE):
        self.side = side
        self.args = tuple(jax.random.normal(jax.random.PRNGKey(i), (side, side), jnp.float32) for i in (0, 1))
        self.compiled, _ = _compiled(jnp.matmul, *self.args)

    def rate(self, calls: int = 3) -> float:
        """GFLOP/s now: 2 side^3 FLOPs over the median of `calls` runs after a warm-up."""
        return 2 * self.side**3 / median_run(self.compiled, self.args, calls) / 1e9


def median_run(compiled: Any, args: tuple, repeats: int) -> float:
    """Median wall seconds of `compiled(*args)` over `repeats` runs after one warm-up run."""
    jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class UpdateProfile:
    """One config's update, its pieces compiled apart on the population's state: `pieces` maps a name
    of `PIECES` (and "update", "rollout": the whole update and the rollout as the trainer compiles them)
    to `(compiled, args)`. Build it, then time it (`time_round`) interleaved with other profiles."""

    def __init__(self, config: Any, evaluate: bool = True):
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.core.ppo import make_train
        from baselines.core.ppo_update import ppo_epochs, trainable
        from baselines.run.population import Population, chunk_compiler_options, over_seeds

        self.config = config
        self.train = train = make_train(config)
        self.population = population = Population(train)
        policy = train.policy
        state = population.init()
        self.compile_s: dict[str, float] = {}
        self.times: dict[str, list[float]] = {}
        # the trainer's chunk without donating its input (the pieces read the same state); it and its pieces
        # at the config's compile level (`cpu_compile_level`), as training compiles them
        options = chunk_compiler_options(config, population.devices)
        seeds_of = functools.partial(over_seeds, in_turn=population.in_turn)  # as training runs them
        chunk, self.compile_s["update"] = _compiled(seeds_of(train.update_chunk), state, options=options)
        state, metrics = chunk(state)  # warm-up: the state a run has after some updates
        jax.block_until_ready(state)
        self.state = state
        self.host_s = self._host_seconds(metrics)

        rollout, self.compile_s["rollout"] = _compiled(seeds_of(train.rollout), state, options=options)
        after, (traj, _) = rollout(state)
        prepare = jax.jit(seeds_of(train.advantages))
        gae_runner, gae_traj, advantages, targets = prepare(after, traj)
        self.traj = traj
        seeds = config.num_seeds
        keys = jax.random.split(jax.random.PRNGKey(1), seeds)
        space = train.env.action_space(train.env_params)
        env_params = train.training_env.params_for(train.train_params, None)

        def env_steps(env_state: Any, key: jax.Array) -> Any:
            """`num_steps` steps of the `num_envs` envs with random actions; the observations kept as a
            rollout keeps them."""

            def step(carry: tuple, _: Any) -> tuple[tuple, Any]:
                env_state, key = carry
                key, k_action, k_step = jax.random.split(key, 3)
                action = jax.vmap(space.sample)(jax.random.split(k_action, config.num_envs))
                obs, env_state, reward, *_ = jax.vmap(train.training_env.step, (0, 0, 0, None))(
                    jax.random.split(k_step, config.num_envs), env_state, action, env_params
                )
                return (env_state, key), (obs, reward)

            return jax.lax.scan(step, (env_state, key), None, config.num_steps)[1]

        def inference(runner: Any, traj: Any, key: jax.Array) -> Any:
            """The rollout's networks over its observations: the policy's sample and log-prob, V(s_t), and
            the bootstrap: V of the next observation at every step, or with cut slots once after the
            rollout over the last observation and the slots (`baselines.core.bootstrap`)."""
            critic_obs = traj.obs if traj.critic_obs is None else traj.critic_obs
            next_obs = jax.tree.map(lambda x: jnp.roll(x, -1, axis=0), critic_obs)
            slots = train.cut_slots

            def step(memory: Any, inputs: tuple) -> tuple[Any, tuple]:
                obs, critic, next_critic, done, k = inputs
                memory, dist, _ = policy.act(runner.params, obs, memory)
                action = dist.sample(k)
                value = train.value(runner.params, critic)
                next_value = value if slots is not None else train.value(runner.params, next_critic)
                return policy.next_memory(memory, done), (action, dist.log_prob(action), value, next_value)

            done = traj.episode_end[..., 0]
            inputs = (traj.obs, critic_obs, next_obs, done, jax.random.split(key, config.num_steps))
            out = jax.lax.scan(step, runner.memory, inputs)[1]
            if slots is None:
                return out
            # as many inputs as the last observation and the slots (of the first steps: the same cost)
            after = jax.tree.map(lambda x: x[: 1 + slots].reshape(-1, *x.shape[2:]), critic_obs)
            return out, train.value(runner.params, after)

        def gae(runner: Any, traj: Any) -> tuple:
            returns_runner, _, advantages, targets = train.advantages(runner, traj)
            return returns_runner.returns, advantages, targets

        def epochs(runner: Any, traj: Any, advantages: Any, targets: Any, memory0: Any) -> tuple:
            batch = policy.batch((traj, advantages, targets), memory0)
            _, key = jax.random.split(runner.rng)
            params, opt_state = trainable(runner.params), runner.opt_state
            step = train.learner(runner)
            sizes = (config.update_epochs, config.num_minibatches)
            return ppo_epochs(step, policy, *sizes, params, opt_state, key, batch)

        self.pieces = {
            "update": (chunk, (state,)),
            "rollout": (rollout, (state,)),
        }
        arguments = {
            "env_step": (seeds_of(env_steps), (state.env_state, keys)),
            "rollout_inference": (seeds_of(inference), (state, traj, keys)),
            "gae": (seeds_of(gae), (after, traj)),
            "ppo_epochs": (seeds_of(epochs), (gae_runner, gae_traj, advantages, targets, state.memory)),
        }
        for name, (fn, args) in arguments.items():
            compiled, self.compile_s[name] = _compiled(fn, *args, options=options)
            self.pieces[name] = (compiled, args)
            jax.block_until_ready(compiled(*args))  # warm-up

        # the epochs' FLOPs: XLA counts a loop body once: one minibatch step's (all seeds'), times the steps
        def first_minibatch(traj: Any, advantages: Any, targets: Any, memory0: Any, key: jax.Array) -> Any:
            batch = policy.batch((traj, advantages, targets), memory0)
            return jax.tree.map(lambda x: x[0], policy.minibatches(key, batch, config.num_minibatches))

        minibatch = jax.jit(jax.vmap(first_minibatch))(gae_traj, advantages, targets, state.memory, keys)
        one_step = jax.vmap(lambda r, mb: train.learner(r)((trainable(r.params), r.opt_state), mb))
        step_compiled, _ = _compiled(one_step, gae_runner, minibatch)
        self.learner_flops = _flops(step_compiled) * config.update_epochs * config.num_minibatches
        if config.recurrent != "none":  # the minibatch replays its sequences in a loop, counted once
            self.learner_flops = float("nan")
        self.actor_params = jax.tree.map(lambda x: x[0], state.params["actor"])
        self.evaluation = self._evaluation() if evaluate else None

    def time_round(self, matmul: MatmulReference) -> None:
        """Time every piece once (each already warmed up), and the evaluation, into `times`; the matmul's
        rate right before the PPO epochs into `times["matmul_gflops_per_s"]`."""
        for name, (compiled, args) in self.pieces.items():
            if name == "ppo_epochs":
                self.times.setdefault("matmul_gflops_per_s", []).append(matmul.rate())
            start = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            self.times.setdefault(name, []).append(time.perf_counter() - start)
        if self.evaluation is not None:
            start = time.perf_counter()
            self.evaluation["evaluate"]()
            self.times.setdefault("evaluation", []).append(time.perf_counter() - start)

    def _host_seconds(self, metrics: dict) -> float:
        """What the host loop does with a chunk's `metrics`, per update: fetch them, the finite check,
        per-update rows and a metrics.csv row (checkpoints and evaluations not included)."""
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        import tempfile
        from pathlib import Path

        from baselines.run.distributed import fetch
        from baselines.run.files import MetricsCSV, metric_names, per_update_metrics
        from baselines.run.guards import first_nonfinite

        jax.block_until_ready(metrics)
        with tempfile.TemporaryDirectory() as folder:
            csv_file = MetricsCSV(
                Path(folder) / "metrics.csv", self.config.num_seeds, metric_names(self.config)
            )
            for _ in range(2):  # the second time: the first one's imports and file creation done
                start = time.perf_counter()
                raw = fetch(metrics)
                first_nonfinite(raw, 0)
                csv_file.append(0, self.config.steps_per_update, 0.0, per_update_metrics(raw))
                seconds = time.perf_counter() - start
        return seconds / self.config.chunk_updates

    def _evaluation(self) -> dict[str, Any]:
        """The held-out evaluation of the config's test worlds (greedy and stochastic, every seed) by the
        trained-policy evaluator a run uses, after its first call (compile and play), which is timed here;
        `evaluate()` plays it again (`time_round`)."""
        # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
        from baselines.run.evaluation import get_evaluation

        evaluation = get_evaluation(self.population, self.config.test_worlds)
        start = time.perf_counter()
        evaluation.trained_totals(self.state.params)
        return {
            "worlds": len(evaluation.worlds),
            "first_call_s": time.perf_counter() - start,
            "evaluate": lambda: evaluation.trained_totals(self.state.params),
        }

    def summary(self, run_config: Any) -> dict[str, Any]:
        """The medians, shares and rates (`run_config`: the config as a run uses it, for how often it
        evaluates and how many updates it runs)."""
        config, train = self.config, self.train
        times = self.times
        median = {name: statistics.median(values) for name, values in times.items()}
        update_s = median["update"] / config.chunk_updates
        pieces_s = sum(median[name] for name in PIECES)
        agent_steps = config.steps_per_update * config.num_seeds * train.env.num_agents
        out: dict[str, Any] = {
            "env_id": config.env_id,
            "algo": config.algo,
            "num_seeds": config.num_seeds,
            "num_envs": config.num_envs,
            "num_steps": config.num_steps,
            "num_agents": train.env.num_agents,
            "update_epochs": config.update_epochs,
            "num_minibatches": config.num_minibatches,
            "visual_encoder": config.visual_encoder,
            "shared_encoder": config.shared_encoder,
            "camera": camera_summary(config, self.traj, self.actor_params),
            "pieces": {
                name: {
                    "seconds": median[name],
                    "share": median[name] / pieces_s,
                    "compile_s": self.compile_s[name],
                    "all": self.times[name],
                }
                for name in PIECES
            },
            "sum_of_pieces_s": pieces_s,
            "update_s": update_s,  # the whole update as the trainer compiles it (a chunk / its updates)
            "rollout_s": median["rollout"],  # env step and inference in the trainer's one program
            "pieces_over_update": pieces_s / update_s,
            "update_compile_s": self.compile_s["update"],
            "agent_steps_per_s": agent_steps / update_s,
            "host_s_per_update": self.host_s,
            "learner": {
                "flops_per_update": self.learner_flops,
                "gflops_per_s": self.learner_flops / median["ppo_epochs"] / 1e9,
                "flops_per_agent_step": self.learner_flops / agent_steps,
                # per round: the learner's rate over the matmul's taken just before it; their median
                "of_matmul_all": [
                    self.learner_flops / seconds / 1e9 / matmul
                    for seconds, matmul in zip(times["ppo_epochs"], times["matmul_gflops_per_s"], strict=True)
                ],
            },
        }
        if self.evaluation is not None:
            chunks, every = run_config.num_chunks, run_config.eval_every  # as baselines.run.runner evaluates
            evaluations = sum(1 for c in range(1, chunks + 1) if (every and c % every == 0) or c == chunks)
            evaluation = {k: v for k, v in self.evaluation.items() if k != "evaluate"}
            evaluation.update(per_run=evaluations, seconds=median["evaluation"], all=self.times["evaluation"])
            evaluation["per_update_s"] = evaluation["seconds"] * evaluations / run_config.num_updates
            out["evaluation"] = evaluation
        return out


def train_profile(
    config_path: str | None,
    overrides: list[str],
    num_updates: int,
    variants: list[list[str]] | None = None,
    repeats: int = 3,
    evaluate: bool = True,
) -> dict[str, Any]:
    """Profile one update of the config (with `overrides`), and of each of `variants` (more overrides on
    top), in this process: each piece compiled apart and timed after a warm-up, `repeats` rounds
    interleaved over the variants (so each ratio is taken on the same machine state), the whole update
    as a chunk of `num_updates`; the learner's GFLOP/s beside a float32 2,048^2 matmul's taken right before
    its PPO epochs in each round (`MatmulReference`)."""
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.config import load_config

    variants = [[]] + [list(v) for v in variants or []]
    profiles, run_configs = [], []
    for extra in variants:
        run_configs.append(load_config(config_path, [*overrides, *extra]))
        config = load_config(config_path, [*overrides, *extra, f"chunk_updates={int(num_updates)}"])
        profiles.append(UpdateProfile(config, evaluate))
    matmul = MatmulReference()
    for _ in range(repeats):
        for profile in profiles:
            profile.time_round(matmul)
    results = []
    for extra, profile, run_config in zip(variants, profiles, run_configs, strict=True):
        summary = {"overrides": extra, **profile.summary(run_config)}
        summary["learner"]["of_matmul"] = statistics.median(summary["learner"]["of_matmul_all"])
        results.append(summary)
    rates = [rate for profile in profiles for rate in profile.times["matmul_gflops_per_s"]]
    first = results[0]
    for summary in results:
        summary["ratio_to_first"] = {
            name: summary["pieces"][name]["seconds"] / first["pieces"][name]["seconds"] for name in PIECES
        } | {"update": summary["update_s"] / first["update_s"]}
    return {
        "config": config_path,
        "overrides": list(overrides),
        "num_updates": int(num_updates),
        "repeats": int(repeats),
        "backend": jax.default_backend(),
        "device": jax.devices()[0].device_kind,
        "jax_version": jax.__version__,
        "matmul": {"side": matmul.side, "gflops_per_s": statistics.median(rates), "all": rates},
        "variants": results,
    }
