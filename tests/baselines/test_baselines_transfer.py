"""Zero-shot transfer: `hivex evaluate RUN key=value` in another env setting (agent count, level, any
option), the refusals before anything compiles, and the `hivex transfer` matrix (one program per
evaluation setting, resumable)."""

import json

import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG
from transfer_fake_env import register

from baselines.cli.evaluate import evaluate_main
from baselines.cli.train import train_main
from baselines.cli.transfer import transfer_main
from baselines.config import from_dict
from baselines.run.transfer import eval_config
from hivex_jax.core.errors import UserError
from hivex_jax.eval import rollout

pytestmark = pytest.mark.timeout(300)
ENV_ID = register()
TRANSFER_CONFIG = {**TINY_CONFIG, "env_id": ENV_ID, "total_env_steps": 64, "gif_frames": 0, "eval_every": 0}


def _refusal(config, *overrides) -> str:
    with pytest.raises(UserError) as info:
        eval_config(config, list(overrides))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_overrides_route_and_bad_ones_are_refused_before_compiling():
    tiny = from_dict({**TRANSFER_CONFIG})
    moved = eval_config(tiny, ["num_agents=7", "env_params.max_steps=5", "task=0"])
    assert (moved.num_agents, moved.env_params, moved.task) == (7, {"max_steps": 5}, 0)
    assert "num_agents" in _refusal(tiny, "num_agnets=4")  # the closest name
    assert "training setting" in _refusal(tiny, "lr=1e-3")
    assert "another env" in _refusal(tiny, "env_id=WindFarmControl-v0")
    # the trainer env's observation has a one-hot agent id: its width is the agent count
    with_id = from_dict({**TRANSFER_CONFIG, "env_id": TINY_CONFIG["env_id"]})
    message = _refusal(with_id, "num_agents=5")
    assert "cannot transfer" in message and "(6,)" in message and "(8,)" in message and "agent_id" in message
    wfc = from_dict({"env_id": "WindFarmControl-v0", "level": 1})
    assert eval_config(wfc, ["pattern=3"]).level == 3  # the env's level field is the config's level
    assert eval_config(wfc, ["env_params.pattern=4"]).level == 4
    assert eval_config(wfc, ["num_agents=12"]).num_agents == 12  # no agent id in WFC's observation
    assert "values are (0, 1, 2, 3, 4, 5, 6, 7, 8)" in _refusal(wfc, "level=99")
    assert "bounds [3, 25]" in _refusal(wfc, "wind_speed=-5")
    assert "must be one of (1, 2, 4, 8, 12, 16)" in _refusal(wfc, "num_agents=5")
    assert "pattern" in _refusal(wfc, "patern=2")
    assert "(did you mean num_agents?)" in _refusal(wfc, "num_agnets=4")  # each name suggested once


def _train(tmp_path, name, **changes):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**TRANSFER_CONFIG, **changes}))
    out = tmp_path / "sweep"
    assert train_main(["--config", str(path), "--out-dir", str(out), "--name", name, "--no-progress"]) == 0
    return out / name


# slow: two trainings, then an evaluation program per agent count (~30 s); the default run keeps the
# refusals above and test_baselines_transfer_order's matrix layout
@pytest.mark.slow
def test_evaluate_in_another_agent_count_and_the_transfer_matrix(tmp_path, capsys, monkeypatch):
    run_a = _train(tmp_path, "a", seed=0)
    _train(tmp_path, "b", seed=1)
    capsys.readouterr()
    assert evaluate_main([str(run_a), "num_agnets=4"]) == 2  # refused before loading anything
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "num_agents" in err

    assert evaluate_main([str(run_a), "--worlds", "200:202", "num_agents=5"]) == 0
    results = json.loads((run_a / "eval_200-201__num_agents=5.json").read_text())
    assert results["train_setting"]["num_agents"] == 3 and results["eval_setting"]["num_agents"] == 5
    assert results["env_overrides"] == ["num_agents=5"]
    assert "num_agents 3 -> 5" in capsys.readouterr().out
    assert evaluate_main([str(run_a), "--worlds", "200:201", "--no-baselines", "env_params.max_steps=5"]) == 0
    assert "env_params.max_steps (env default) -> 5" in capsys.readouterr().out  # not "None -> 5"
    from baselines.run.evaluation import get_transfer_evaluation, load_run

    config, population, state = load_run(run_a)
    evaluation = get_transfer_evaluation(population, eval_config(config, ["num_agents=5"]), "200:202")
    totals = evaluation.trained_totals(state.params)  # the cached program of the call above
    assert totals["greedy"]["return"].shape == (2, 2, 5)  # [seeds, worlds, agents]
    assert evaluation.baseline_totals()["scripted"]["return"].shape == (2, 5)

    built = []
    real = rollout.Evaluator

    def counting(*args, **kwargs):
        built.append(args[0].num_agents)
        return real(*args, **kwargs)

    monkeypatch.setattr(rollout, "Evaluator", counting)
    sweep = tmp_path / "sweep"
    grid = ["--eval-grid", "num_agents=1,5", "--worlds", "200:202", "--no-progress"]
    assert transfer_main([str(sweep), *grid]) == 0
    assert built == [1, 5]  # one program per evaluation setting: both runs' params stacked in it
    matrix = json.loads((sweep / "transfer" / "transfer.json").read_text())
    assert set(matrix["cells"]) == {"a", "b"}
    for run in ("a", "b"):
        assert set(matrix["cells"][run]) == {"num_agents=1", "num_agents=5"}
        assert matrix["runs"][run]["train_setting"]["num_agents"] == 3
        for setting, agents in (("num_agents=1", 1), ("num_agents=5", 5)):
            c = matrix["cells"][run][setting]
            assert c["num_agents"] == agents and c["eval_setting"]["num_agents"] == agents
            fraction = np.asarray(c["return_per_seed"]) / c["scripted"]
            np.testing.assert_allclose(c["fraction_of_scripted"]["per_seed"], fraction, rtol=1e-6)
            assert c["fraction_of_scripted"]["mean"] == pytest.approx(fraction.mean())
            normalised = (np.asarray(c["return_per_seed"]) - c["random"]) / (c["scripted"] - c["random"])
            np.testing.assert_allclose(c["normalised_score"]["per_seed"], normalised, rtol=1e-6)
    # the matrix cell is the greedy result `hivex evaluate` found on the same worlds and key
    greedy = np.mean([w["return_per_seed"] for w in results["policies"]["greedy"]["per_world"]], axis=0)
    np.testing.assert_allclose(matrix["cells"]["a"]["num_agents=5"]["return_per_seed"], greedy, rtol=1e-5)
    scripted = np.mean([w["return_mean"] for w in results["policies"]["scripted"]["per_world"]])
    assert matrix["cells"]["b"]["num_agents=5"]["scripted"] == pytest.approx(scripted, rel=1e-5)
    md = (sweep / "transfer" / "transfer.md").read_text()
    assert "| a |" in md and "num_agents=5" in md
    assert (sweep / "transfer" / "transfer.png").stat().st_size > 0

    # resumed with one more setting: only that one is evaluated, the others are kept as they were
    built.clear()
    assert transfer_main([str(sweep), "--eval-grid", "num_agents=1,5,2", *grid[2:]]) == 0
    assert built == [2]
    again = json.loads((sweep / "transfer" / "transfer.json").read_text())
    assert again["cells"]["a"]["num_agents=5"] == matrix["cells"]["a"]["num_agents=5"]
    assert set(again["cells"]["b"]) == {"num_agents=1", "num_agents=5", "num_agents=2"}
    capsys.readouterr()
    assert transfer_main([str(sweep), "--eval-grid", "num_agents=2", "--worlds", "200:205"]) == 2
    assert "other worlds" in capsys.readouterr().err
    # several folders need --out; one run folder writes into RUN/transfer like a sweep folder
    assert transfer_main([str(sweep / "a"), str(sweep / "b"), "--eval-grid", "num_agents=2"]) == 2
    assert "--out is needed for several folders" in capsys.readouterr().err
    assert transfer_main([str(sweep / "a"), "--eval-grid", "num_agents=2", "--worlds", "200:202"]) == 0
    assert (sweep / "a" / "transfer" / "transfer.json").is_file()
