"""`hivex train` / `hivex sweep` over several processes on JAX's own runtime (`jax.distributed`, gloo
CPU collectives): two local processes with one CPU device each give the numbers of one process with two
devices (the same mesh size), up to float summation order; bad multi-process input fails as one line."""

import argparse
import csv
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.config import from_dict
from baselines.core.ppo import make_train
from baselines.run import checkpoint
from baselines.run import distributed as dist
from baselines.run.population import Population
from hivex_jax.core.errors import UserError

HERE = Path(__file__).resolve().parent
#: `hivex train|sweep ARGS` with the tiny test env registered (a process of its own)
LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv[1]); import trainer_fake_env; trainer_fake_env.register(); "
    "from baselines.cli.train import train_main; from baselines.cli.sweep import sweep_main; "
    "raise SystemExit({'train': train_main, 'sweep': sweep_main}[sys.argv[2]](sys.argv[3:]))"
)
PROCESS_TIMEOUT_S = 240  # per launch: a hung collective fails the test instead of the CI job
SLOW_TIMEOUT_S = 600  # per launch of the -m slow tests (a compilation takes ~90 s at load average 20)
_LAUNCHES = itertools.count()  # numbers the log files of the launches
#: 4 updates = 2 chunks of 2; a checkpoint after each chunk
CONFIG = {**TINY_CONFIG, "total_env_steps": 128, "gif_frames": 0, "eval_every": 1}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _slurm_job_id_on_a_free_port() -> int:
    """A job id whose coordinator port (JAX: 61440 + job id % 4096) nobody listens on now."""
    for job in np.random.default_rng().integers(10**5, 10**6, 50):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", int(job % 2**12 + 65535 - 2**12 + 1)))
                return int(job)
            except OSError:
                continue
    raise RuntimeError("no free port in 61440..65535")


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(JAX_PLATFORMS="cpu", HIVEX_JAX_CACHE_DIR=str(tmp_path / "xla_cache"))
    env.pop("XLA_FLAGS", None)  # no forced device count inherited: --local-devices says it
    return env


def _launch(
    tmp_path: Path,
    command: str,
    args: list[str],
    processes: int,
    timeout_s: int = PROCESS_TIMEOUT_S,
    slurm: bool = False,
) -> list[tuple[int, str, str]]:
    """Run `hivex <command> args` as `processes` processes (ids 0..n-1 on one free local port), each
    with a hard timeout and killed in the end whatever happens; `[(returncode, stdout, stderr)]`.
    `slurm`: `--distributed auto` with the variables a Slurm step sets, for JAX to read."""
    extra: list[list[str]] = [["--local-devices", "2"]]  # one process: two CPU devices
    envs = [_env(tmp_path) for _ in range(processes)]
    if slurm:  # JAX's Slurm detection: coordinator on the step's first node, port from the job id
        extra = [["--distributed", "auto", "--init-timeout", "60"] for _ in range(processes)]
        job = str(_slurm_job_id_on_a_free_port())
        for i, env in enumerate(envs):
            env.update(
                SLURM_JOB_ID=job,
                SLURM_STEP_NODELIST="localhost",
                SLURM_NTASKS=str(processes),
                SLURM_PROCID=str(i),
                SLURM_LOCALID=str(i),
            )
    elif processes > 1:
        coordinator = f"127.0.0.1:{_free_port()}"
        extra = [
            ["--coordinator", coordinator, "--num-processes", str(processes), "--process-id", str(i)]
            + ["--init-timeout", "60"]
            for i in range(processes)
        ]
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    procs, files = [], []
    launch = next(_LAUNCHES)
    try:
        for i, (more, env) in enumerate(zip(extra, envs, strict=True)):  # output to files: a full
            # pipe must not stall a process
            out, err = (open(logs / f"{command}{launch}_process{i}.{k}", "w+") for k in ("out", "err"))
            files.append((out, err))
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", LAUNCH, str(HERE), command, *args, *more],
                    env=env,
                    cwd=HERE.parent.parent,
                    stdout=out,
                    stderr=err,
                    text=True,
                )
            )
        results = []
        for p, (out, err) in zip(procs, files, strict=True):
            code = p.wait(timeout=timeout_s)
            out.seek(0)
            err.seek(0)
            results.append((code, out.read(), err.read()))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for pair in files:
            for f in pair:
                f.close()


def _ok(results: list[tuple[int, str, str]]) -> None:
    for i, (code, out, err) in enumerate(results):
        assert code == 0, f"process {i}:\n{out[-2000:]}\n{err[-4000:]}"


def _rows(path: Path) -> list[dict[str, float]]:
    with path.open() as f:
        return [
            {k: float(v) if v else float("nan") for k, v in r.items() if k != "wall_s"}
            for r in csv.DictReader(f)
        ]


def _close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=2e-4, atol=2e-5)


def _compare_members(one: Path, two: Path, members: tuple[str, ...]) -> dict[str, list[dict[str, float]]]:
    """Each member's folder in sweep `two` (2 processes) holds what it holds in sweep `one`: the same
    files, metrics.csv (less wall_s) and eval.json up to float summation order; `{member: one's rows}`."""
    rows = {}
    for member in members:
        a, b = one / member, two / member
        assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
        assert checkpoint.read_meta(b)["process_count"] == 2 and checkpoint.latest_step(b) == 4
        rows[member], rows_b = _rows(a / "metrics.csv"), _rows(b / "metrics.csv")
        assert len(rows[member]) == len(rows_b) == 4
        for ra, rb in zip(rows[member], rows_b, strict=True):
            assert ra.keys() == rb.keys()
            _close(list(ra.values()), list(rb.values()))
        eval_a, eval_b = (json.loads((d / "eval.json").read_text()) for d in (a, b))
        for name in ("greedy", "stochastic", "scripted", "random"):
            _close(
                [w["return_mean"] for w in eval_a["policies"][name]["per_world"]],
                [w["return_mean"] for w in eval_b["policies"][name]["per_world"]],
            )
    return rows


@pytest.mark.slow  # three processes, each starting jax and compiling: ~45 s of the default run
@pytest.mark.timeout(600)
def test_two_processes_train_like_one_process_with_two_devices(tmp_path):
    """The smallest two-process check (two launches): 2 processes x 1 device give the metrics and final
    parameters of 1 process x 2 devices; the test below adds checkpoints, resume and the evaluation."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "eval_every": 0, "total_env_steps": 64}))
    common = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress"]
    _ok(_launch(tmp_path, "train", [*common, "--name", "one"], 1))
    two = _launch(tmp_path, "train", [*common, "--name", "two"], 2)
    _ok(two)
    assert "2 device(s) of 2 processes" in two[0][1] and "finished:" not in two[1][1]
    a, b = _rows(tmp_path / "one" / "metrics.csv"), _rows(tmp_path / "two" / "metrics.csv")
    assert len(a) == len(b) == 2
    for ra, rb in zip(a, b, strict=True):
        _close(list(ra.values()), list(rb.values()))
    abstract = Population(make_train(from_dict(CONFIG)), jax.devices()[:1]).abstract_state()
    state_a, _ = checkpoint.restore(tmp_path / "one", abstract)
    state_b, _ = checkpoint.restore(tmp_path / "two", abstract)
    for x, y in zip(jax.tree.leaves(state_a.params), jax.tree.leaves(state_b.params), strict=True):
        _close(x, y)


@pytest.mark.slow  # ~7 min with the 2-core CPU shared (load average ~20): three compilations
@pytest.mark.timeout(1800)
def test_two_processes_train_and_resume_like_one_process_with_two_devices(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    common = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress"]
    one = _launch(tmp_path, "train", [*common, "--name", "one"], 1, SLOW_TIMEOUT_S)
    _ok(one)
    # two processes x one device: a chunk, then (after a refused one-process resume) the rest
    first = _launch(tmp_path, "train", [*common, "--name", "two", "--max-chunks", "1"], 2, SLOW_TIMEOUT_S)
    _ok(first)
    two = tmp_path / "two"
    assert checkpoint.latest_step(two) == 2 and not (two / "eval.json").exists()
    assert checkpoint.read_meta(two)["process_count"] == 2
    [(code, _, err)] = _launch(tmp_path, "train", ["--resume", str(two), "--no-progress"], 1, SLOW_TIMEOUT_S)
    assert code == 2 and "written by 2 process(es); resume it with 2" in err, err[-2000:]
    rest = _launch(tmp_path, "train", ["--resume", str(two), "--no-progress"], 2, SLOW_TIMEOUT_S)
    _ok(rest)

    # process 0 alone reports; the per-update metrics, evaluation and final parameters agree
    assert "finished:" in rest[0][1] and "finished:" not in rest[1][1]
    assert "2 device(s) of 2 processes, sharded over seeds" in first[0][1]
    a, b = _rows(tmp_path / "one" / "metrics.csv"), _rows(two / "metrics.csv")
    assert len(a) == len(b) == 4 and a[0].keys() == b[0].keys()
    for ra, rb in zip(a, b, strict=True):
        _close(list(ra.values()), list(rb.values()))
    eval_a, eval_b = (json.loads((d / "eval.json").read_text()) for d in (tmp_path / "one", two))
    for name in ("greedy", "stochastic", "scripted", "random"):
        _close(
            [w["return_mean"] for w in eval_a["policies"][name]["per_world"]],
            [w["return_mean"] for w in eval_b["policies"][name]["per_world"]],
        )
    abstract = Population(make_train(from_dict(CONFIG)), jax.devices()[:1]).abstract_state()
    state_a, _ = checkpoint.restore(tmp_path / "one", abstract)
    state_b, meta_b = checkpoint.restore(two, abstract)  # written as two processes' shards
    assert meta_b["updates_done"] == 4
    for x, y in zip(jax.tree.leaves(state_a.params), jax.tree.leaves(state_b.params), strict=True):
        _close(x, y)
    # the run folder holds what one process writes, nothing per process beside orbax's shards
    names = sorted(p.name for p in two.iterdir())
    assert names == sorted(p.name for p in (tmp_path / "one").iterdir())
    assert not any(".tmp" in p.name for p in two.rglob("*"))


@pytest.mark.slow  # ~10 min with the 2-core CPU shared (load average ~20)
@pytest.mark.timeout(1800)
def test_two_process_sweep_equals_one_process_sweep_and_reruns_skip(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    # --no-fuse: the combinations one after another, each sharded over both processes (seed is a data
    # key: without it the two fuse, the path test_two_process_fused_sweep_equals_... checks)
    args = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress", "--grid", "seed=0,1"]
    args.append("--no-fuse")
    _ok(_launch(tmp_path, "sweep", [*args, "--name", "one"], 1, SLOW_TIMEOUT_S))
    two = _launch(tmp_path, "sweep", [*args, "--name", "two"], 2, SLOW_TIMEOUT_S)
    _ok(two)
    assert "=== seed=0 ===" in two[0][1] and "===" not in two[1][1]  # process 0 reports
    rows = {n: json.loads((tmp_path / n / "sweep.json").read_text()) for n in ("one", "two")}
    assert [r["combination"] for r in rows["two"]] == ["seed=0", "seed=1"]
    assert rows["one"][0]["greedy"]["mean"] != rows["one"][1]["greedy"]["mean"]  # two distinct runs
    for ra, rb in zip(rows["one"], rows["two"], strict=True):
        for name in ("greedy", "stochastic", "scripted", "random"):
            _close([ra[name]["mean"], ra[name]["ci95"]], [rb[name]["mean"], rb[name]["ci95"]])
    # a rerun: seed=0 finished (skipped), seed=1 stopped before its final files (resumed from its
    # last checkpoint, already at the end: nothing to train); the summary is the same
    (tmp_path / "one" / "seed=1" / "summary.json").unlink()
    [(code, out, err)] = _launch(tmp_path, "sweep", [*args, "--name", "one"], 1, SLOW_TIMEOUT_S)
    assert code == 0, err[-3000:]
    assert "=== seed=0 === finished earlier" in out and "resuming" in out
    assert json.loads((tmp_path / "one" / "sweep.json").read_text()) == rows["one"]


@pytest.mark.slow  # two fused sweeps (3 processes), each compiling a 4-row program and 2 evaluations
@pytest.mark.timeout(1800)
def test_two_process_fused_sweep_equals_one_process_fused_sweep(tmp_path):
    """A 2-member fused sweep as 2 processes x 1 device: the 4 rows (members x seeds) shard over both
    processes, process 0 says the plan and writes every member's folder, and each member's metrics.csv
    and eval.json equal those of the same fused sweep in 1 process with 2 devices."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    args = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress", "--grid", "lr=1e-3,3e-4"]
    one = _launch(tmp_path, "sweep", [*args, "--name", "one"], 1, SLOW_TIMEOUT_S)
    _ok(one)
    two = _launch(tmp_path, "sweep", [*args, "--name", "two"], 2, SLOW_TIMEOUT_S)
    _ok(two)
    plan = "hivex sweep: 1 program: 2 members x 2 seeds"
    assert one[0][1].count(plan) == 1 and two[0][1].count(plan) == 1, two[0][1][-2000:]
    assert "=== lr=1e-3 | lr=3e-4 === (one program)" in two[0][1]
    assert "members x" not in two[1][1] and "===" not in two[1][1]  # process 1 prints nothing of it
    rows = _compare_members(tmp_path / "one", tmp_path / "two", ("lr=1e-3", "lr=3e-4"))
    # the members are distinct runs (their lr), so a mix-up of members' rows would show
    assert rows["lr=1e-3"][-1] != rows["lr=3e-4"][-1]
    # stopped after its first chunk (final files and last checkpoint gone): the rerun resumes both
    # members as one population from their 2-process checkpoints and ends with the same numbers
    for member in ("lr=1e-3", "lr=3e-4"):
        (tmp_path / "two" / member / "summary.json").unlink()
        (tmp_path / "two" / member / "eval.json").unlink()
        shutil.rmtree(tmp_path / "two" / member / "checkpoints" / "4")
    rerun = _launch(tmp_path, "sweep", [*args, "--name", "two"], 2, SLOW_TIMEOUT_S)
    _ok(rerun)
    assert "resuming 2 members at update 2 of 4" in rerun[0][1] and "resuming" not in rerun[1][1]
    _compare_members(tmp_path / "one", tmp_path / "two", ("lr=1e-3", "lr=3e-4"))
    tables = [json.loads((tmp_path / n / "sweep.json").read_text()) for n in ("one", "two")]
    assert [r["combination"] for r in tables[1]] == ["lr=1e-3", "lr=3e-4"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "slurm", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["explicit_options", "slurm_variables"]
)
def test_population_that_does_not_divide_over_two_processes_fails_before_compiling(tmp_path, slurm):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "num_seeds": 1, "num_envs": 1, "num_minibatches": 1}))
    results = _launch(
        tmp_path, "train", ["--config", str(config), "--out-dir", str(tmp_path)], 2, slurm=slurm
    )
    for code, out, err in results:  # both processes joined (gloo), then refused as one line
        assert code == 2, err[-3000:]
        assert err.strip().splitlines()[-1] == (
            "hivex train: num_seeds=1 and num_envs=1 do not divide over the 2 devices of the 2 processes; "
            "make num_seeds (or num_envs) a multiple of 2"
        )
        assert "compiled" not in out
    assert not list(tmp_path.glob("*/checkpoints"))


@pytest.mark.slow  # ~95 s at load average ~20: the processes' shutdown after the refusal is slow
@pytest.mark.timeout(300)
def test_process_given_another_process_count_is_refused(tmp_path):
    coordinator = ["--coordinator", f"127.0.0.1:{_free_port()}", "--init-timeout", "60"]
    argv = [sys.executable, "-c", LAUNCH, str(HERE), "train", "--config", "nothing.yaml", *coordinator]
    procs = [  # process 0 declares 2 processes; process 1 thinks there are 3
        subprocess.Popen(
            [*argv, "--num-processes", n, "--process-id", i], env=_env(tmp_path), stderr=subprocess.PIPE
        )
        for n, i in (("2", "0"), ("3", "1"))
    ]
    try:
        errors = [p.communicate(timeout=PROCESS_TIMEOUT_S)[1].decode() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert procs[1].returncode == 2, errors[1][-3000:]
    assert (
        errors[1]
        .strip()
        .splitlines()[-1]
        .startswith("hivex train: --num-processes 3 given to process 1, but the job at 127.0.0.1:")
    )
    assert procs[0].returncode == 2 and "nothing.yaml" in errors[0]  # its own next error: the config


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_unreachable_coordinator_missing_processes_and_no_cluster_fail_as_one_line(tmp_path):
    port = _free_port()  # nobody listens there
    env = _env(tmp_path)
    explicit = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id"]
    cases = {
        "did not come up within 3 s": [*explicit, "1"],
        "not all 2 processes connected": [*explicit, "0"],
        "--distributed auto found no cluster JAX knows": ["--distributed", "auto"],
    }
    for name in [k for k in env if k.startswith(("SLURM_", "OMPI_", "PMI_", "TPU_"))]:
        del env[name]  # no cluster around the test, even when CI runs under one
    for expected, argv in cases.items():
        out = subprocess.run(
            [sys.executable, "-c", LAUNCH, str(HERE), "train", *argv, "--init-timeout", "3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 2, out.stderr[-3000:]
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert lines[-1].startswith("hivex train: ") and expected in lines[-1], out.stderr[-3000:]
        assert "Traceback" not in out.stderr and "Check failure" not in out.stderr


def _spec(*argv: str) -> dist.DistributedSpec:
    parser = argparse.ArgumentParser()
    dist.add_distributed_args(parser)
    return dist.spec_from_args(parser.parse_args(list(argv)))


def test_multi_process_options_are_checked():
    assert not _spec().enabled
    spec = _spec("--coordinator", "10.0.0.1:1234", "--num-processes", "4", "--process-id", "3")
    assert spec.enabled and (spec.num_processes, spec.process_id) == (4, 3)
    assert _spec("--distributed", "auto").auto
    bad = {
        ("--coordinator", "h:1", "--num-processes", "2"): "also needs --process-id",
        ("--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"): "outside 0..1",
        ("--coordinator", "h", "--num-processes", "2", "--process-id", "0"): "HOST:PORT",
        ("--coordinator", "h:99999", "--num-processes", "2", "--process-id", "0"): "HOST:PORT",
        ("--distributed", "auto", "--process-id", "0"): "drop --process-id",
        ("--init-timeout", "0"): "--init-timeout must be >= 1",
    }
    for argv, message in bad.items():
        with pytest.raises(UserError, match=message):
            _spec(*argv)


def test_population_must_divide_over_the_devices_of_several_processes():
    dist.check_population_divides(num_seeds=3, num_envs=5, num_devices=2, num_processes=1)  # one: any
    dist.check_population_divides(num_seeds=4, num_envs=5, num_devices=4, num_processes=2)  # seeds
    dist.check_population_divides(num_seeds=3, num_envs=8, num_devices=4, num_processes=2)  # envs
    with pytest.raises(UserError, match="num_seeds=3 and num_envs=6 do not divide over the 4 devices"):
        dist.check_population_divides(num_seeds=3, num_envs=6, num_devices=4, num_processes=2)
