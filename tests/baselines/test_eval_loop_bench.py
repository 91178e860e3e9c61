"""`baselines.studies.eval_loop_bench` (scripts/bench_eval_loop.py) times a saved run's evaluation programs
(trained, baselines; vmapped, in turn; this tree's and another tree's rollout module) and says whether
their totals are equal."""

from pathlib import Path

import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.train import train_main
from baselines.studies.eval_loop_bench import main

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)


def test_each_program_is_timed_and_a_tree_with_the_same_module_gives_the_same_totals(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY_CONFIG, "gif_frames": 0}))
    assert (
        train_main(["--config", str(config), "--out-dir", str(tmp_path), "--no-progress", "--name", "r"]) == 0
    )
    capsys.readouterr()
    same_module = str(REPO / "hivex_jax" / "eval" / "rollout.py")
    main(["--run", str(tmp_path / "r"), "--worlds", "200:203", "--old-rollout", same_module, "--rounds", "1"])
    lines = capsys.readouterr().out.splitlines()
    firsts = [line for line in lines if "first call" in line]
    rounds = [line for line in lines if line.startswith("round 1, ")]
    assert len(firsts) == len(rounds) == 8  # {trained, baselines} x {in turn, vmapped} x {this, old} tree
    old = [line for line in firsts if "old tree" in line]
    assert len(old) == 4 and all("equal bit for bit" in line for line in old)
    assert all("longest episode" in line for line in firsts)


def test_a_folder_without_a_run_is_refused_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no config.yaml"):
        main(["--run", str(tmp_path)])


def test_an_unknown_way_is_refused_in_one_line(tmp_path):
    (tmp_path / "config.yaml").write_text("{}")
    with pytest.raises(SystemExit, match="--ways"):
        main(["--run", str(tmp_path), "--ways", "in_turn,sideways"])
