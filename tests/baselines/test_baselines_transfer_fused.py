"""`hivex transfer` plays the settings that differ only in data (task, level, `EnvParams` fields) in one
compiled program, as a stack of env params: one program for the grid, and each cell what
`hivex evaluate` finds in that setting alone on the same worlds and key."""

import json

import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.cli.transfer import transfer_main
from baselines.run.transfer_matrix import settings_per_program
from hivex_jax.eval import rollout

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow  # an exact-equality check of fused and alone evaluations (21 s of the default suite)
def test_data_settings_share_one_program_and_match_each_setting_alone(tmp_path, monkeypatch):
    config = tmp_path / "tiny.yaml"
    config.write_text(
        yaml.safe_dump({**TINY_CONFIG, "total_env_steps": 64, "gif_frames": 0, "eval_every": 0})
    )
    run = tmp_path / "runs" / "tiny"
    assert (
        train_main(["--config", str(config), "--out-dir", str(run.parent), "--name", "tiny", "--no-progress"])
        == 0
    )

    built = []
    real = rollout.Evaluator

    def counting(*args, **kwargs):
        built.append(kwargs.get("params_axis", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(rollout, "Evaluator", counting)
    grid = ["--eval-grid", "env_params.max_steps=4,9,12", "--worlds", "200:203", "--no-progress"]
    assert transfer_main([str(run), *grid]) == 0
    assert built == [True]  # three settings, one program
    cells = json.loads((run / "transfer" / "transfer.json").read_text())["cells"]["tiny"]
    monkeypatch.setattr(rollout, "Evaluator", real)
    for steps in (4, 12):
        assert evaluate_main([str(run), "--worlds", "200:203", f"env_params.max_steps={steps}"]) == 0
        alone = json.loads((run / f"eval_200-202__env_params.max_steps={steps}.json").read_text())["policies"]
        cell = cells[f"env_params.max_steps={steps}"]
        greedy = np.mean([w["return_per_seed"] for w in alone["greedy"]["per_world"]], axis=0)
        np.testing.assert_allclose(cell["return_per_seed"], greedy, rtol=1e-5)
        assert cell["scripted"] == pytest.approx(alone["scripted"]["summary"]["mean"], rel=1e-5)
        assert cell["eval_setting"]["env_params"] == {"max_steps": steps}
    # episodes end at their own max_steps in the stack: a longer episode earns more here
    returns = [np.mean(cells[f"env_params.max_steps={s}"]["return_per_seed"]) for s in (4, 9, 12)]
    assert returns[0] < returns[1] < returns[2]


def test_a_program_plays_at_most_its_episode_budget():
    assert settings_per_program(rows=4, worlds=32) == 32  # 4096 episodes / 128 per setting
    assert settings_per_program(rows=11, worlds=32) == 11
    assert settings_per_program(rows=200, worlds=32) == 1  # never fewer than one setting
