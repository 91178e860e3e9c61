"""The memorisation probe (`baselines.studies.memorisation`, run by scripts/memorisation_probe.py) on the tiny
count-free env: pools train and are scored on their training and held-out worlds, the statistics are
per-seed means with a t CI, and a second call resumes (skips finished pools, evaluates only new ones,
refuses other settings)."""

import json

import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG
from transfer_fake_env import register

from baselines.studies import memorisation as probe
from baselines.studies import memorisation_report as report

ENV_ID = register()


def test_side_and_gap_are_per_seed_statistics():
    # 2 seeds x 2 worlds; scripted 10 on both worlds
    side = report.side([[4.0, 6.0], [8.0, 10.0]], [10.0, 10.0], [1.0, 3.0])
    assert side["return"]["per_seed"] == [5.0, 9.0] and side["return"]["mean"] == 7.0
    assert side["return"]["ci95"] == pytest.approx(12.706 * 2.0, rel=1e-3)  # t(1) * sd 2.83 / sqrt(2)
    assert side["fraction_of_scripted"]["per_seed"] == [0.5, 0.9] and side["random"] == 2.0
    assert side["normalised_score"]["per_seed"] == pytest.approx([3 / 8, 7 / 8])  # (R - 2) / (10 - 2)
    other = report.side([[3.0, 3.0], [5.0, 5.0]], [10.0, 10.0], [2.0, 2.0])
    gap = report.gap(side, other)
    assert gap["return"]["per_seed"] == [2.0, 4.0]  # paired by seed, not a difference of means' CIs
    assert gap["fraction_of_scripted"]["per_seed"] == pytest.approx([0.2, 0.4])
    assert gap["normalised_score"]["per_seed"] == pytest.approx([0.25, 0.5])
    upside_down = report.side([[1.0]], [-2.0], [0.0])  # scripted below random and below zero
    assert upside_down["fraction_of_scripted"] is None and upside_down["normalised_score"] is None
    assert "normalised_score" not in report.gap(upside_down, upside_down)
    negative = report.side([[-1.0]], [-2.0], [-10.0])  # scripted negative but above random
    assert negative["normalised_score"]["per_seed"] == [1.125] and negative["fraction_of_scripted"] is None


def test_probe_table_and_figure_show_the_normalised_score(tmp_path):
    train = report.side([[9.0, 9.0], [7.0, 7.0]], [10.0, 10.0], [2.0, 2.0])
    heldout = report.side([[4.0, 6.0], [8.0, 10.0]], [10.0, 10.0], [1.0, 3.0])
    cell = {"pool_size": 10, "train_eval_worlds": "100:102", "train": train, "heldout": heldout}
    record = {
        "env_id": ENV_ID,
        "algo": "ippo",
        "num_seeds": 2,
        "total_env_steps": 64,
        "heldout_worlds": "200:202",
    }
    record.update(statistic=report.STATISTIC, cells={"10": {**cell, "gap": report.gap(train, heldout)}})
    row = report.markdown(record).splitlines()[4].split(" | ")
    # normalised per seed: train (9 - 2) / 8, (7 - 2) / 8; held-out 3 / 8, 7 / 8; gap 0.5, -0.25; ± = 12.706
    # (t, 1 dof) * sd / sqrt(2)
    assert row[5:8] == ["0.750 ± 1.588", "0.625 ± 3.176", "0.125 ± 4.765"]
    assert report.plot(tmp_path / "probe.png", record).stat().st_size > 0


def _main(argv: list[str]) -> None:
    """What the script does: parse its arguments, run the probe."""
    probe.run_probe(probe.parse_args(argv))


@pytest.mark.slow  # two tiny trainings with their compiles: minutes on the 2-core CPU (975 s at load 20)
@pytest.mark.timeout(1800)
def test_probe_trains_each_pool_scores_both_sides_and_resumes(tmp_path, monkeypatch):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "env_id": ENV_ID, "total_env_steps": 64}))
    out = tmp_path / "probe"
    common = ["--env", ENV_ID, "--config", str(config), "--out", str(out), "--seeds", "2"]
    common += ["--heldout", "200:203", "--train-base", "100", "--max-train-eval", "1", "--no-progress"]
    _main([*common, "--pools", "2"])
    record = json.loads((out / "probe.json").read_text())
    two = record["cells"]["2"]
    assert sorted(record["cells"]) == ["2"] and two["train_eval_worlds"] == "100:101"  # capped at 1
    assert two["train"]["num_worlds"] == 1 and two["heldout"]["num_worlds"] == 3
    assert np.shape(two["heldout"]["return_per_seed_world"]) == (2, 3)
    assert yaml.safe_load((out / "pool_2" / "config.yaml").read_text())["train_worlds"] == "100:102"
    # the cell's held-out numbers are what the run's greedy policy scores there (a fresh evaluation)
    fresh = probe.greedy_returns(out / "pool_2", "200:203", None)
    np.testing.assert_allclose(two["heldout"]["return_per_seed_world"], fresh, rtol=1e-5)
    assert two["heldout"]["scripted"] == pytest.approx(np.mean(record["baselines"]["200:203"]["scripted"]))
    assert (out / "probe.png").stat().st_size > 0 and "| 2 | 100:101 |" in (out / "probe.md").read_text()

    # resume with one more pool: pool 2 is neither trained nor evaluated again; pool 1 is
    trained, scored = [], []
    real_train, real_greedy = probe.train_pool, probe.greedy_returns
    monkeypatch.setattr(
        probe, "train_pool", lambda c, d, p, r: trained.append(d.name) or real_train(c, d, p, r)
    )
    monkeypatch.setattr(
        probe, "greedy_returns", lambda d, w, s: scored.append(d.name) or real_greedy(d, w, s)
    )
    _main([*common, "--pools", "1,2"])
    assert trained == ["pool_1"] and scored == ["pool_1", "pool_1"]
    again = json.loads((out / "probe.json").read_text())
    assert again["cells"]["2"] == two and sorted(again["cells"]) == ["1", "2"]
    # a finished run folder without its cell is evaluated, not retrained
    one = again["cells"].pop("1")
    (out / "probe.json").write_text(json.dumps(again))
    summary = (out / "pool_1" / "summary.json").read_text()
    _main([*common, "--pools", "1"])
    assert (out / "pool_1" / "summary.json").read_text() == summary  # run_training would rewrite it
    assert json.loads((out / "probe.json").read_text())["cells"]["1"]["heldout"] == one["heldout"]
    # other settings are refused, not mixed into the same file
    with pytest.raises(SystemExit, match="other settings"):
        _main([*common, "--seeds", "3", "--pools", "1"])
