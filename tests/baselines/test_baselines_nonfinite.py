"""The NaN guard: finite flags computed inside the chunk, the host's reading of them, and `hivex train`
on a real divergence (lr = 1e30: the first Adam step makes the parameters ~1e30 and the next loss NaN)
stopping with exit status 3, keeping its last finite checkpoint, and resuming with a saner lr."""

import csv
import json

import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.train import train_main
from baselines.core.kernels import finite_flags
from baselines.run import checkpoint
from baselines.run.guards import check_resume_config, first_nonfinite

pytestmark = pytest.mark.timeout(300)


def _flags(num_seeds, k):
    names = ("finite_loss", "finite_grads", "finite_params")
    return {name: np.ones((num_seeds, k), bool) for name in names}


def test_first_nonfinite_names_the_first_update_its_seeds_and_quantity():
    flags = _flags(3, 4)
    assert first_nonfinite(flags, 8) is None
    flags["finite_loss"][0, 3] = False  # seed 0 goes bad later
    flags["finite_params"][2, 2] = False  # seed 2 first, at the chunk's 3rd update: params and grads
    flags["finite_grads"][2, 2:] = False
    assert first_nonfinite(flags, 8) == {"update": 11, "seeds": [2], "quantity": "gradients"}
    flags["finite_params"][1, 2] = False  # a second seed at the same update: the quantity is seed 1's
    assert first_nonfinite(flags, 0) == {"update": 3, "seeds": [1, 2], "quantity": "parameters"}


def test_finite_flags_see_each_quantity():
    params = {"actor": {"w": jnp.ones((2, 2))}, "critic": {"b": jnp.zeros(3)}}
    opt_state = ({"mu": jnp.zeros(3), "count": jnp.int32(4)},)  # integer leaves are skipped
    ok = jnp.ones((2, 3))
    assert {k: bool(v) for k, v in finite_flags(ok, opt_state, params).items()} == {
        "finite_loss": True,
        "finite_grads": True,
        "finite_params": True,
    }
    assert not finite_flags(ok.at[1, 2].set(jnp.inf), opt_state, params)["finite_loss"]
    nan_moments = ({"mu": jnp.array([0.0, jnp.nan, 0.0]), "count": jnp.int32(4)},)
    assert not finite_flags(ok, nan_moments, params)["finite_grads"]
    poisoned = {**params, "critic": {"b": jnp.array([0.0, jnp.nan, 0.0])}}
    flags = finite_flags(ok, opt_state, poisoned)
    assert not flags["finite_params"] and flags["finite_loss"] and flags["finite_grads"]


def test_resume_refuses_shape_changes_and_allows_hyperparameters():
    from baselines.config import from_dict

    config = from_dict(TINY_CONFIG)
    saved = config.to_dict()
    for change in ({"lr": 1e-5}, {"total_env_steps": 960}, {"max_grad_norm": 0.1}, {"num_minibatches": 4}):
        check_resume_config(saved, config.replace(**change))  # allowed
    with pytest.raises(ValueError, match=r"cannot change num_envs on --resume \(4 -> 8\)"):
        check_resume_config(saved, config.replace(num_envs=8))
    with pytest.raises(ValueError, match="cannot change hidden_sizes"):
        check_resume_config(saved, config.replace(hidden_sizes=(32,)))


def _rows(run_dir):
    with open(run_dir / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in csv.DictReader(f)]


@pytest.mark.slow
def test_divergence_stops_keeps_the_finite_checkpoint_and_resumes(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0}))
    common = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress"]
    assert train_main([*common, "--name", "straight"]) == 0
    capsys.readouterr()

    # diverges in its 2nd chunk (update 3): stops there, checkpoint 2 stays the latest
    late = tmp_path / "late"
    assert train_main([*common, "--name", "late", "--max-chunks", "1"]) == 0
    assert train_main(["--resume", str(late), "--no-progress", "lr=1e30"]) == 3
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err, err
    err = err.splitlines()[-1]  # after the CLI's warning that lr changed on resume: one line
    assert err.startswith("hivex train: seeds 0, 1 of 2")
    assert "seeds 0, 1 of 2: loss not finite (NaN/inf) at update 3" in err
    assert "last finite checkpoint is update 2" in err and "lower lr (now 1e+30)" in err
    assert checkpoint.latest_step(late) == 2
    summary = json.loads((late / "summary.json").read_text())
    assert not summary["finished"] and summary["nonfinite"]["update"] == 3
    assert not (late / "eval.json").exists()
    assert len(_rows(late)) == 4  # the poisoned chunk's rows are written (diagnosis), then dropped on resume
    # back to the run's own lr: the continued run is the uninterrupted one, bit for bit
    assert train_main(["--resume", str(late), "--no-progress", "lr=0.001"]) == 0
    assert _rows(late) == _rows(tmp_path / "straight")
    straight_eval = json.loads((tmp_path / "straight" / "eval.json").read_text())["policies"]
    assert json.loads((late / "eval.json").read_text())["policies"] == straight_eval

    # diverges before any checkpoint: the initial state becomes checkpoint 0
    early = tmp_path / "early"
    assert train_main([*common, "--name", "early", "lr=1e30"]) == 3
    assert "at update 1;" in capsys.readouterr().err
    assert checkpoint.latest_step(early) == 0
    assert train_main(["--resume", str(early), "--no-progress", "num_envs=8"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and err.startswith("hivex train: cannot change num_envs")
    assert len(err.splitlines()) == 1  # refused before the override warning
    assert train_main(["--resume", str(early), "--no-progress", "lr=0.001"]) == 0
    assert _rows(early) == _rows(tmp_path / "straight")
    assert json.loads((early / "eval.json").read_text())["policies"] == straight_eval


def test_sweep_records_a_diverged_combination_and_goes_on(tmp_path, capsys, monkeypatch):
    # training stubbed out: lr=1e30 "diverges", any other lr "finishes" with hand-made summaries
    import baselines.run.runner
    from baselines.cli.sweep import sweep_main
    from baselines.run.guards import NonFiniteError

    trained = []

    def fake_run_training(config, run_dir, progress=True):
        trained.append(config.lr)
        if config.lr > 1.0:
            raise NonFiniteError("seed 0 of 2: loss not finite (NaN/inf) at update 1; stopped.")
        block = {"mean": 7.5, "ci95": 0.5, "iqm": 7.5, "num_seeds": 2}
        policies = {"greedy": {"summary": block}, "stochastic": {"summary": block}}
        return {"run_dir": str(run_dir), "eval": {"policies": policies}}

    monkeypatch.setattr(baselines.run.runner, "run_training", fake_run_training)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0}))
    # one program per combination: run_training is what is stubbed (test_baselines_fused: fused members)
    args = ["--config", str(config), "--out-dir", str(tmp_path), "--no-progress", "--no-fuse"]
    assert sweep_main([*args, "--grid", "lr=1e30,0.001"]) == 0
    assert trained == [1e30, 0.001]  # the sweep went on after the divergence
    assert "hivex sweep: lr=1e30: seed 0 of 2: loss not finite" in capsys.readouterr().err
    rows = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [r["combination"] for r in rows] == ["lr=1e30", "lr=0.001"]
    assert "loss not finite" in rows[0]["diverged"] and "greedy" not in rows[0]
    assert rows[1]["greedy"]["mean"] == 7.5
    table = (tmp_path / "sweep" / "sweep.md").read_text().splitlines()
    assert table[2] == "| lr=1e30 | diverged (NaN/inf) | diverged (NaN/inf) |"
    assert table[3] == "| lr=0.001 | 7.5 ± 0.5 | 7.5 ± 0.5 |"
    assert (tmp_path / "sweep" / "sweep.png").stat().st_size > 0

    # every combination diverged: the table says so, no plot, exit status 3
    assert sweep_main([*args, "--name", "all", "--grid", "lr=1e30,1e31"]) == 3
    table = (tmp_path / "all" / "sweep.md").read_text().splitlines()
    assert table[0] == "| combination | result |" and table[3] == "| lr=1e31 | diverged (NaN/inf) |"
    assert not (tmp_path / "all" / "sweep.png").exists()
