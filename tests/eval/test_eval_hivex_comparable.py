"""`hivex evaluate --protocol hivex` on a run whose env is not a published HIVEX cell's: one
line naming the cell, exit 2, unless `--allow-uncomparable` (then the output says it is not comparable)."""

from __future__ import annotations

import json

import pytest

from baselines.config import load_config
from baselines.run import checkpoint
from hivex_jax.eval.hivex_cells import hivex_cell_of, uncomparable_reasons

DBR = "DroneBasedReforestation-v0"


def test_reasons_by_hand():
    assert uncomparable_reasons(DBR, 0, None, 3) == (hivex_cell_of(DBR, 0, 1), [])
    assert uncomparable_reasons("WindFarmControl-v0", 1, 4, 8)[1] == []
    assert hivex_cell_of("WindFarmControl-v0", 0, None).level == 0  # pattern 0 is the default
    assert hivex_cell_of("OceanPlasticCollection-v0", 2, None).level is None
    cell, reasons = uncomparable_reasons(
        DBR,
        0,
        2,
        num_agents=5,
        env_options={"stress_worlds": "all", "wake": "x"},
        env_params={"max_steps": 10},
        world_files="w/*.npz",
    )
    assert cell.label() == f"{DBR} task 0 level 2"
    assert reasons == [
        "num_agents=5 (HIVEX: 3)",
        "stress worlds (all)",
        "worlds from files (w/*.npz)",
        "env_options wake=x",
        "env_params max_steps=10",
    ]
    # OPC's observation options leave the env (dynamics, reward, worlds) as HIVEX's; another option does not
    opc_options = {"approach_features": True, "border_features": True}
    assert uncomparable_reasons("OceanPlasticCollection-v0", 0, None, 3, opc_options)[1] == []
    assert uncomparable_reasons(DBR, 0, 1, 3, {"approach_features": True})[1] == [
        "env_options approach_features=True"
    ]
    # task 7 (Group-up) is our reading of Table 11: HIVEX published no cell for it
    assert uncomparable_reasons(DBR, 7, 1)[1] == ["HIVEX published no such cell"]
    assert uncomparable_reasons(DBR, 0, 11)[1] == ["HIVEX published no such cell"]


@pytest.fixture
def fake_checkpoint(monkeypatch):
    """A run folder passes the checkpoint checks; the evaluation itself is replaced by a stub result."""
    import baselines.run.hivex_eval

    monkeypatch.setattr(checkpoint, "latest_step", lambda run_dir: 1)
    monkeypatch.setattr(checkpoint, "read_meta", lambda run_dir: {})
    length = {"agent_episode_length": 2.0, "world_episode_length": 3.0, "episode_length": 3.0}
    stub = {
        "protocol": "hivex",
        "env_id": DBR,
        "task": 0,
        "level": 1,
        "test_run": {"agent_steps": 10, "summary_freq": 10, "test_seed": 6000, "runs": 1},
        "policies": {"stochastic": {"cell": 1.0, "runs": [{"mean": 1.0}], **length}},
    }
    monkeypatch.setattr(baselines.run.hivex_eval, "evaluate_run_hivex", lambda *a, **k: dict(stub))


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("num_agents: 6", "num_agents=6 (HIVEX: 3)"),
        ("env_params: {max_steps: 100}", "env_params max_steps=100"),
        ("env_options: {stress_worlds: all}", "stress worlds (all)"),
    ],
)
def test_uncomparable_run_is_refused_in_one_line(tmp_path, capsys, fake_checkpoint, line, why):
    from baselines.cli.evaluate import evaluate_main

    run = tmp_path / "run"
    run.mkdir()
    text = load_config().to_yaml()
    text = "\n".join(
        ln
        for ln in text.splitlines()
        if not ln.startswith(("env_id:", "num_agents:", "env_params:", "level:"))
    )
    (run / "config.yaml").write_text(f"{text}\nenv_id: {DBR}\nlevel: 1\n{line}\n")
    assert evaluate_main([str(run), "--protocol", "hivex", "--no-baselines"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"cannot be compared with HIVEX cell {DBR} task 0 level 1: {why}" in err
    assert not (run / "eval_hivex.json").exists()
    # with the flag it runs, and both the printed table and the JSON say what it is not comparable with
    assert evaluate_main([str(run), "--protocol", "hivex", "--no-baselines", "--allow-uncomparable"]) == 0
    out = capsys.readouterr().out
    assert f"not comparable with HIVEX cell {DBR} task 0 level 1: {why}" in out
    saved = json.loads((run / "eval_hivex.json").read_text())
    assert saved["not_comparable"].startswith(f"not comparable with HIVEX cell {DBR} task 0 level 1")


def test_comparable_run_runs_without_the_flag(tmp_path, capsys, fake_checkpoint):
    from baselines.cli.evaluate import evaluate_main

    run = tmp_path / "run"
    run.mkdir()
    text = load_config().to_yaml()
    text = "\n".join(
        ln for ln in text.splitlines() if not ln.startswith(("env_id:", "num_agents:", "level:"))
    )
    (run / "config.yaml").write_text(f"{text}\nenv_id: {DBR}\nlevel: 1\nnum_agents: 3\n")
    assert evaluate_main([str(run), "--protocol", "hivex", "--no-baselines"]) == 0
    assert "not comparable" not in capsys.readouterr().out
    assert "not_comparable" not in json.loads((run / "eval_hivex.json").read_text())
