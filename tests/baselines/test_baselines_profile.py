"""`hivex bench --train CONFIG --profile` (`baselines.cli.profile.train_profile`): one update's pieces
compiled and timed apart, the evaluation and host rows, the learner's FLOPs. Structure and invariants only: no
wall-clock thresholds."""

import json
import math
import statistics
from pathlib import Path

import jax.numpy as jnp
import pytest
from trainer_fake_env import TINY_CONFIG

from baselines.cli.commands import bench_train
from baselines.cli.profile import PIECES, train_profile
from baselines.cli.profile_report import (
    NO_FLOP_COUNT,
    camera_summary,
    camera_text,
    learner_cell,
    profile_table,
)
from baselines.core.ppo import Transition
from hivex_jax.core.errors import UserError

pytestmark = pytest.mark.timeout(600)

WFC_CONFIG = str(Path(__file__).resolve().parents[2] / "configs" / "ippo_wind_farm_control.yaml")

# few envs and steps, one seed: every piece compiles in a second or two
SMALL = {**TINY_CONFIG, "num_seeds": 1, "num_envs": 2, "num_steps": 4, "num_minibatches": 2, "level": None}


def _overrides(config: dict) -> list[str]:
    return [f"{k}={json.dumps(v)}" for k, v in config.items()]


@pytest.fixture(scope="module")
def profile() -> dict:
    return train_profile(None, _overrides(SMALL), 2, repeats=2)


@pytest.fixture(scope="module")
def two_variants() -> dict:
    return train_profile(
        None, _overrides(SMALL), 1, variants=[["shared_encoder=true"]], repeats=1, evaluate=False
    )


def test_the_profile_splits_an_update_into_its_pieces(profile):
    assert profile["repeats"] == 2 and profile["num_updates"] == 2 and profile["matmul"]["side"] == 2048
    # one matmul rate per round and variant, taken right before that round's PPO epochs
    matmul = profile["matmul"]
    assert len(matmul["all"]) == 2 and matmul["gflops_per_s"] == statistics.median(matmul["all"]) > 0
    (first,) = profile["variants"]
    assert first["overrides"] == []
    for variant in profile["variants"]:
        pieces = variant["pieces"]
        assert list(pieces) == list(PIECES)
        for piece in pieces.values():  # the median of the rounds
            assert len(piece["all"]) == 2 and min(piece["all"]) <= piece["seconds"] <= max(piece["all"])
            assert 0 < piece["share"] < 1
        # the shares are of the pieces' sum; the whole update and host time stand apart
        assert math.isclose(sum(p["share"] for p in pieces.values()), 1.0)
        assert math.isclose(variant["sum_of_pieces_s"], sum(p["seconds"] for p in pieces.values()))
        assert math.isclose(variant["pieces_over_update"], variant["sum_of_pieces_s"] / variant["update_s"])
        agent_steps = SMALL["num_envs"] * SMALL["num_steps"] * 3
        assert math.isclose(variant["agent_steps_per_s"], agent_steps / variant["update_s"])
        assert variant["host_s_per_update"] > 0 and variant["rollout_s"] > 0
        evaluation = variant["evaluation"]
        assert evaluation["worlds"] == 2 and evaluation["seconds"] > 0
        # 192 env steps of 2 envs x 4 steps: 24 updates in 12 chunks of 2, evaluated every 2 chunks
        assert evaluation["per_run"] == 6
        assert math.isclose(evaluation["per_update_s"], evaluation["seconds"] * 6 / 24)
        learner = variant["learner"]
        assert learner["flops_per_update"] > 0
        assert math.isclose(
            learner["gflops_per_s"], learner["flops_per_update"] / pieces["ppo_epochs"]["seconds"] / 1e9
        )
        # each round's learner rate over the matmul's of the same round; the median of the rounds
        paired = zip(pieces["ppo_epochs"]["all"], matmul["all"], strict=True)
        ratios = [learner["flops_per_update"] / s / 1e9 / rate for s, rate in paired]
        assert learner["of_matmul_all"] == pytest.approx(ratios)
        assert learner["of_matmul"] == statistics.median(learner["of_matmul_all"])
    assert first["camera"] == {
        "shape": [8, 8, 1],
        "buffer_dtype": "uint8",
        "visual_encoder": "strided3",
        "cnn_channels": [4],
        "features": 4 * 4 * 4,  # one 3x3/2 SAME convolution of 4 channels over 8 x 8
        "shared_encoder": False,
    }


def test_the_table_has_a_row_per_piece(profile):
    table = profile_table(profile)
    lines = table.splitlines()
    assert lines[0].split() == ["seconds", "per", "update", "config"]
    for label in PIECES.values():
        assert any(line.startswith(label) for line in lines), label
    assert "float32 2,048^2 matmul" in lines[-1] and "median of 2 rounds" in lines[-1]
    assert "8x8x1 uint8, strided3" in table
    assert any(line.startswith("evaluation: one, test worlds") and "(2 worlds)" in line for line in lines)


@pytest.mark.slow  # a second variant's programs (~30 s)
def test_variants_are_profiled_side_by_side(two_variants):
    """A column and ratios per variant; a shared encoder does less learner arithmetic (XLA's FLOP count, not
    a timing: the critic's head reuses the actor encoder's forward pass)."""
    first, shared = two_variants["variants"]
    assert first["overrides"] == [] and shared["overrides"] == ["shared_encoder=true"]
    assert shared["camera"]["shared_encoder"] is True and "evaluation" not in shared
    assert shared["learner"]["flops_per_update"] < first["learner"]["flops_per_update"]
    # each variant's ratio over the matmul rate taken right before its own PPO epochs
    assert len(two_variants["matmul"]["all"]) == 2
    assert all(len(v["learner"]["of_matmul_all"]) == 1 for v in (first, shared))
    ratio = shared["pieces"]["ppo_epochs"]["seconds"] / first["pieces"]["ppo_epochs"]["seconds"]
    assert shared["ratio_to_first"]["ppo_epochs"] == ratio and first["ratio_to_first"]["update"] == 1.0
    lines = profile_table(two_variants).splitlines()
    assert lines[0] == "variant 1: shared_encoder=true"
    assert lines[1].split() == ["seconds", "per", "update", "config", "variant", "1"]


def test_an_env_without_a_camera_says_none():
    traj = Transition(
        obs={"vector": jnp.zeros((4, 2, 3, 5))},
        critic_obs=None,
        action={},
        log_prob=None,
        value=None,
        next_value=None,
        reward=None,
        terminated=None,
        episode_end=None,
        active=None,
    )
    assert camera_summary(None, traj, {}) == "none"


def test_a_camera_without_convolutions_says_flattened():
    """Drone-Based Reforestation's shipped camera has `cnn_channels: []`: the image goes into the dense layer
    as it is, so the row names no convolution (the `visual_encoder` key keeps its default there)."""
    camera = {"shape": [16, 16, 1], "buffer_dtype": "uint8", "visual_encoder": "strided3", "features": 256}
    assert camera_text({**camera, "cnn_channels": []}) == "16x16x1 uint8, flattened"
    assert camera_text({**camera, "cnn_channels": [16, 32]}) == "16x16x1 uint8, strided3"
    assert camera_text("none") == "none"


def test_a_recurrent_learner_has_no_flop_count():
    """A GRU actor's replay loop is counted once by XLA, so the profile stores NaN (Ocean Plastic Collection's
    shipped config): the table says so instead of printing nan."""
    assert [learner_cell(float("nan")), learner_cell(float("nan"), ".2f")] == [NO_FLOP_COUNT] * 2
    assert NO_FLOP_COUNT == "n/a (recurrent)"
    assert [learner_cell(31.72), learner_cell(6.71e7), learner_cell(0.4871, ".2f")] == [
        "31.7",
        "6.71e+07",
        "0.49",
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"variants": [["visual_encoder=nope"]], "profile": True}, "visual_encoder must be one of"),
        ({"variants": [["lr=1e-3"]]}, "--compare adds variants to the profile: give --profile too"),
        ({"overrides": ["algo=mappo", "shared_encoder=true"]}, "shared_encoder is IPPO only"),
    ],
)
def test_bench_train_checks_the_config_and_each_variant_before_compiling(arguments, message):
    with pytest.raises(UserError, match=message):
        bench_train(None, 1, **{"overrides": _overrides(SMALL), **arguments})


def test_the_profile_options_need_train(capsys):
    from hivex_jax import bench

    for argv in (["--profile"], ["--compare", "lr=1"], ["--train-set", "lr=1"]):
        assert bench.main(argv) == 2
        assert "apply to --train CONFIG: give it too" in capsys.readouterr().err
    assert bench.main(["--train", WFC_CONFIG, "--train-set", "lr"]) == 2
    assert "--train-set: expected KEY=VALUE, got 'lr'" in capsys.readouterr().err
    # a variant is the words after --compare; each is checked before anything compiles
    argv = ["--train", WFC_CONFIG, "--profile", "--compare", "lr=1e-3", "visual_encoder=nope"]
    assert bench.main(argv) == 2
    assert "visual_encoder must be one of ('strided3', 'hivex_simple'); got 'nope'" in capsys.readouterr().err
    argv = ["--train", WFC_CONFIG, "--profile", "--compare", "visual_encoder=hivex_simple"]
    assert bench.main(argv) == 2
    assert (
        "visual_encoder=hivex_simple convolves obs['visual'], but WindFarmControl-v0"
        in capsys.readouterr().err
    )


def test_a_profile_is_written_under_its_configs_name():
    """`--profile` runs no env sweep, so its default file is named after the config, not the default
    `--env` (an AWS profile was written over `bench_results/WindFarmControl-v0.json`)."""
    from argparse import Namespace

    from hivex_jax.bench import output_path

    args = Namespace(json=None, train="configs/ippo_aerial_wildfire_suppression.yaml", profile=True)
    args.env = "WindFarmControl-v0"
    assert output_path(args) == Path("bench_results/ippo_aerial_wildfire_suppression_profile.json")
    assert output_path(Namespace(**{**vars(args), "profile": False})) == Path(
        "bench_results/WindFarmControl-v0.json"
    )
    assert output_path(Namespace(**{**vars(args), "json": "out/p.json"})) == Path("out/p.json")


@pytest.mark.slow  # a Wind Farm Control update's programs and a held-out episode (~40 s)
def test_hivex_bench_profiles_an_env_without_a_camera(tmp_path, capsys):
    from hivex_jax import bench

    out = tmp_path / "profile.json"
    small = ["num_seeds=1", "num_envs=2", "num_steps=8", "num_minibatches=2", "test_worlds=6000:6001"]
    argv = ["--train", WFC_CONFIG, "--profile", "--train-updates", "1"]
    argv += ["--repeats", "1", "--json", str(out)] + [x for item in small for x in ("--train-set", item)]
    assert bench.main(argv) == 0
    (variant,) = json.loads(out.read_text())["train_profile"]["variants"]
    assert variant["camera"] == "none" and variant["env_id"] == "WindFarmControl-v0"
    printed = capsys.readouterr().out
    assert any(
        line.startswith("camera (in the rollout buffer)") and line.split()[-1] == "none"
        for line in printed.splitlines()
    )


def test_the_training_pieces_compile_at_the_configs_level(monkeypatch):
    """With `cpu_compile_level` the update and each training piece compile at that level, as training does
    (`baselines.run.population.chunk_compiler_options`); the matmul reference at the process's."""
    import baselines.cli.profile as profile_module

    seen: list[dict | None] = []
    compiled = profile_module._compiled

    def recording(fn, *args, options=None):
        seen.append(options)
        return compiled(fn, *args, options=options)

    monkeypatch.setattr(profile_module, "_compiled", recording)
    train_profile(None, _overrides({**SMALL, "cpu_compile_level": 2}), 1, repeats=1, evaluate=False)
    level = {"xla_backend_optimization_level": 2}
    # the update, the rollout and the four pieces; then the FLOP count's one step and the matmul
    assert seen == [level] * 6 + [None, None]
