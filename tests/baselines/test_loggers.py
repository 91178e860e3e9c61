"""Experiment tracking beside metrics.csv (`logger=tensorboard` / `logger=wandb`, baselines/run/loggers.py):
what the loggers wrote is read back (TensorBoard's own event reader; W&B's offline run file, record by
record) and compared with what metrics.csv and eval.json hold. No network: W&B runs offline, its folders
under the test's temporary folder."""

from __future__ import annotations

import csv
import json
import math
import shutil
import struct
import time

import numpy as np
import pytest
import yaml
from trainer_fake_env import TINY_CONFIG

from baselines.cli.sweep import sweep_main
from baselines.cli.train import train_main
from baselines.config import ConfigError, from_dict, load_config
from baselines.run import loggers
from baselines.run.loggers import (
    TensorBoardLogger,
    final_values,
    flat_hparams,
    log_chunk,
    wandb_logged_in,
    wandb_mode,
)
from baselines.run.runner import run_training

BASE = {**TINY_CONFIG, "gif_frames": 0}


# ------------------------------------------------------------------------------------ readers
def tensorboard_scalars(folder) -> dict[str, list[tuple[int, float]]]:
    """`{tag: [(step, value), ...]}` of a TensorBoard run folder as TensorBoard reads it (after purges)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def tensorboard_run(folder):
    """The loaded EventAccumulator of a TensorBoard run folder."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    return events


def session_hparams(folder) -> dict:
    """The hparams of the TensorBoard session written in `folder` (TensorBoard's hparams plugin data)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = tensorboard_run(folder).PluginTagToContent("hparams")["_hparams_/session_start_info"]
    start = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    out = {}
    for key, value in start.hparams.items():
        out[key] = getattr(value, value.WhichOneof("kind"))
    return out


def wandb_records(path) -> list:
    """The records of a W&B run file (`run-<id>.wandb`): W&B's header, then LevelDB log blocks of 32 KiB
    whose chunks (checksum, length, type: full / first / middle / last) carry `Record` protobufs."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, block, records, pending = 7, 32768, [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            pos += left
            continue
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # full, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


def written_wandb_records(path, timeout_s: float = 60.0) -> list:
    """`wandb_records` once the file holds the run's exit record: W&B's service writes the file a moment
    after `finish()` returns (the records then appear at once), so wait for it, up to `timeout_s`."""
    from google.protobuf.message import DecodeError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            records = wandb_records(path)
        except (AssertionError, DecodeError):  # not yet written (a header alone, or a part of a record)
            records = []
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.05)


def wandb_run(folder) -> dict:
    """A W&B offline run read back: its run record (`run`), config, history rows by step and summary."""
    (path,) = folder.glob("run-*.wandb")
    out = {"config": {}, "history": {}, "summary": {}}
    for record in written_wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["run"] = record.run
            for item in record.run.config.update:
                out["config"][_key(item)] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                out["config"][_key(item)] = json.loads(item.value_json)
        elif kind == "history":
            row = {_key(i): json.loads(i.value_json) for i in record.history.item}
            out["history"][record.history.step.num] = row
        elif kind == "summary":
            for item in record.summary.update:
                out["summary"][_key(item)] = json.loads(item.value_json)
    return out


def metrics_csv(run_dir) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def csv_series(rows, seed: int) -> dict[str, list[tuple[int, float]]]:
    """`{metric: [(env_steps, value), ...]}` of one seed's non-empty metrics.csv cells."""
    out: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        for column, cell in row.items():
            if column.startswith(f"seed_{seed}/") and cell != "":
                out.setdefault(column.split("/", 1)[1], []).append((int(row["env_steps"]), float(cell)))
    return out


def assert_series_equal(logged, expected):
    """Same steps; values equal to metrics.csv's 6 significant digits (TensorBoard keeps float32)."""
    assert [s for s, _ in logged] == [s for s, _ in expected]
    np.testing.assert_allclose([v for _, v in logged], [v for _, v in expected], rtol=2e-5, atol=1e-30)


@pytest.fixture
def wandb_env(tmp_path, monkeypatch):
    """No W&B credentials and no user settings: the default mode is offline, W&B's own folders in tmp."""
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_DIR", "WANDB_PROJECT", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no_netrc"))
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "wandb_home" / name.lower()))
    pytest.importorskip("wandb")


# ------------------------------------------------------------------------------------ pieces
class Recorder:
    """A logger that keeps what it is told."""

    def __init__(self):
        self.rows = []

    def log_row(self, update, env_steps, seed, values):
        self.rows.append((update, env_steps, seed, dict(values)))


def test_a_chunk_is_logged_row_by_row_without_its_empty_cells():
    nan = np.nan
    metrics = {
        "step_reward": np.array([[1.0, 2.0], [3.0, 4.0]]),  # [S=2, K=2]
        "episode_return": np.array([[nan, 5.0], [6.0, nan]]),  # no episode ended: not measured
    }
    recorder = Recorder()
    log_chunk(recorder, 4, 10, metrics, ("step_reward", "episode_return", "loss"))  # updates 5 and 6
    assert recorder.rows == [
        (5, 50, 0, {"step_reward": 1.0}),
        (5, 50, 1, {"step_reward": 3.0, "episode_return": 6.0}),
        (6, 60, 0, {"step_reward": 2.0, "episode_return": 5.0}),
        (6, 60, 1, {"step_reward": 4.0}),
    ]


def test_final_values_flatten_the_held_out_results():
    summary = {"mean": 10.0, "ci95": 1.5, "iqm": 9.0, "seed_min": 8.0}
    results = {
        "policies": {"greedy": {"summary": summary}, "random": {"summary": {**summary, "mean": 2.0}}},
        "normalised_score": {"greedy": 0.75, "stochastic": None},  # None: no score, nothing logged
    }
    assert final_values(results) == {
        "eval/greedy/mean": 10.0,
        "eval/greedy/ci95": 1.5,
        "eval/greedy/iqm": 9.0,
        "eval/random/mean": 2.0,
        "eval/random/ci95": 1.5,
        "eval/random/iqm": 9.0,
        "eval/normalised_score/greedy": 0.75,
    }


def test_hparams_are_flat_scalars_and_text():
    config = {"lr": 1e-3, "level": None, "env_params": {"max_steps": 10}, "hidden_sizes": [16], "on": True}
    assert flat_hparams(config) == {
        "lr": 1e-3,
        "env_params.max_steps": 10,
        "hidden_sizes": "[16]",
        "on": True,
    }


def test_a_logger_typo_gets_did_you_mean():
    with pytest.raises(ConfigError) as err:
        load_config(None, ["logger=tensorbord"])
    assert str(err.value) == (
        "logger must be one of none, tensorboard, wandb; got 'tensorbord' (did you mean tensorboard?)"
    )
    assert from_dict({}).logger == "none"  # the default logs metrics.csv alone


def test_a_missing_logger_package_names_its_extra(monkeypatch):
    monkeypatch.setitem(loggers.LOGGER_PACKAGES, "wandb", ("hivex_no_such_module", "wandb"))
    with pytest.raises(ConfigError) as err:
        loggers.check_logger(from_dict({"logger": "wandb"}))
    assert str(err.value) == (
        'logger=wandb needs the hivex_no_such_module package: pip install -e ".[wandb]" (or logger=none)'
    )
    loggers.check_logger(from_dict({"logger": "tensorboard"}))  # installed: nothing to say


@pytest.mark.parametrize("command", ["train", "sweep"])
def test_the_commands_refuse_a_missing_logger_in_one_line_before_building(
    command, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(loggers.LOGGER_PACKAGES, "tensorboard", ("hivex_no_such_module", "tensorboard"))
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(BASE))
    common = ["--config", str(config), "--out-dir", str(tmp_path / "out"), "--name", "x", "--no-progress"]
    if command == "train":
        code = train_main([*common, "logger=tensorboard"])
    else:
        code = sweep_main([*common, "--grid", "lr=1e-3,3e-4", "logger=tensorboard"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().count("\n") == 0 and 'pip install -e ".[tensorboard]"' in err
    assert not (tmp_path / "out" / "x").exists()  # refused before the run folder (or anything) was made


def test_wandb_is_offline_unless_logged_in(tmp_path):
    netrc = tmp_path / "netrc"
    assert wandb_mode({"NETRC": str(netrc)}) == "offline"  # no file
    netrc.write_text("machine example.org login user password abc\n")
    assert not wandb_logged_in({"NETRC": str(netrc)})  # credentials for another host
    assert wandb_mode({"NETRC": str(netrc), "WANDB_BASE_URL": "https://example.org"}) == "online"
    netrc.write_text("machine api.wandb.ai login user password 0123abc\n")  # what `wandb login` writes
    assert wandb_mode({"NETRC": str(netrc)}) == "online"
    assert wandb_mode({"NETRC": str(tmp_path / "none"), "WANDB_API_KEY": "0123abc"}) == "online"
    assert wandb_mode({"NETRC": str(netrc), "WANDB_MODE": "offline"}) == "offline"  # the user's choice wins
    assert wandb_mode({"WANDB_MODE": "disabled"}) == "disabled"


# ------------------------------------------------------------------------------------ the writers
def test_tensorboard_writes_a_run_per_seed_and_the_config_with_the_results(tmp_path):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("tensorboard")
    folder = tmp_path / "tensorboard"
    logger = TensorBoardLogger(folder, num_seeds=2)
    logger.log_config({"algo": "ippo", "lr": 1e-3, "level": None, "env_params": {"max_steps": 10}})
    logger.log_row(1, 32, 0, {"step_reward": 0.5, "loss": 2.0})
    logger.log_row(1, 32, 1, {"step_reward": 0.25})
    logger.log_row(2, 64, 0, {"step_reward": 0.75})
    logger.log_final({"eval/greedy/mean": 12.5, "eval/normalised_score/greedy": 0.5})
    logger.close()
    assert tensorboard_scalars(folder / "seed_0") == {
        "step_reward": [(32, 0.5), (64, 0.75)],
        "loss": [(32, 2.0)],
    }
    assert tensorboard_scalars(folder / "seed_1") == {"step_reward": [(32, 0.25)]}
    assert tensorboard_scalars(folder) == {
        "eval/greedy/mean": [(64, 12.5)],  # at the last step logged
        "eval/normalised_score/greedy": [(64, 0.5)],
    }
    text = tensorboard_run(folder).Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert "lr: 0.001" in text and "max_steps: 10" in text
    assert session_hparams(folder) == {"algo": "ippo", "lr": 1e-3, "env_params.max_steps": 10.0}


def test_tensorboard_drops_what_a_killed_attempt_logged_after_the_checkpoint(tmp_path):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("tensorboard")
    folder = tmp_path / "tensorboard"
    first = TensorBoardLogger(folder, num_seeds=1)
    for update in (1, 2, 3, 4):  # killed after update 4, its last checkpoint at update 2
        first.log_row(update, 10 * update, 0, {"loss": float(update)})
    first.close()
    resumed = TensorBoardLogger(folder, num_seeds=1, first_step=20)
    for update in (3, 4, 5):
        resumed.log_row(update, 10 * update, 0, {"loss": 100.0 + update})
    resumed.close()
    assert tensorboard_scalars(folder / "seed_0")["loss"] == [
        (10, 1.0),
        (20, 2.0),
        (30, 103.0),
        (40, 104.0),
        (50, 105.0),
    ]


def test_wandb_writes_an_offline_run_with_the_rows_config_and_results(tmp_path, wandb_env):
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    config = from_dict({**BASE, "logger": "wandb", "out_dir": str(tmp_path / "runs"), "name": "r"})
    logs = []
    logger = loggers.open_logger(config, run_dir, log=logs.append)
    logger.log_config(config.to_dict())
    logger.log_row(1, 32, 0, {"step_reward": 0.5})
    logger.log_row(1, 32, 1, {"step_reward": 0.25, "loss": 2.0})
    logger.log_row(2, 64, 0, {"step_reward": 0.75})
    logger.log_final({"eval/greedy/mean": 12.5})
    logger.close()
    (folder,) = (run_dir / "wandb").glob("offline-run-*")
    assert logs == [f"logging to W&B (offline) in {folder} (upload: wandb sync {folder})"]
    run = wandb_run(folder)
    assert run["run"].project == "hivex_jax" and run["run"].display_name == "r" and not run["run"].run_group
    assert run["run"].run_id == (run_dir / "wandb_run_id.txt").read_text().strip()
    assert run["config"]["lr"] == BASE.get("lr", 1e-3) and run["config"]["num_seeds"] == 2
    rows = {
        step: {k: v for k, v in row.items() if not k.startswith("_")} for step, row in run["history"].items()
    }
    assert rows == {
        1: {"env_steps": 32, "seed_0/step_reward": 0.5, "seed_1/step_reward": 0.25, "seed_1/loss": 2.0},
        2: {"env_steps": 64, "seed_0/step_reward": 0.75},
    }
    assert run["summary"]["eval/greedy/mean"] == 12.5


def test_a_resumed_run_continues_its_wandb_run_and_a_restarted_one_starts_another(tmp_path, wandb_env):
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    config = from_dict({**BASE, "logger": "wandb", "out_dir": str(tmp_path / "runs")})
    ids = []
    for first_update in (0, 4, 0):  # a run, its --resume after update 4, then a start over
        if first_update:  # W&B names an offline run's folder by its id and the second it started
            time.sleep(1.1)
        logger = loggers.open_logger(config, run_dir, first_update, log=lambda line: None)
        logger.log_row(first_update + 1, 32 * (first_update + 1), 0, {"loss": 1.0})
        logger.close()
        ids.append((run_dir / "wandb_run_id.txt").read_text().strip())
    assert ids[0] == ids[1] != ids[2]
    runs = [wandb_run(folder) for folder in run_dir.glob("wandb/offline-run-*")]
    logged = sorted((run["run"].run_id, sorted(run["history"])) for run in runs)  # (id, steps) per folder
    assert logged == sorted([(ids[0], [1]), (ids[1], [5]), (ids[2], [1])])


# ------------------------------------------------------------------------------------ in the run loop
@pytest.mark.slow  # a whole training run (tens of seconds on the 2-core CPU)
@pytest.mark.timeout(600)
def test_train_logs_what_metrics_csv_and_eval_json_hold_to_tensorboard(tmp_path):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "run"
    config = from_dict({**BASE, "logger": "tensorboard"})
    run_training(config, run_dir, progress=False, max_chunks=2, log=lambda *a: None)
    shutil.rmtree(run_dir / "checkpoints" / "4")  # as if killed before update 4's checkpoint
    run_training(config, run_dir, resume=True, progress=False, log=lambda *a: None)
    rows = metrics_csv(run_dir)
    assert [int(r["update"]) for r in rows] == list(range(1, config.num_updates + 1))
    for seed in range(config.num_seeds):
        logged = tensorboard_scalars(run_dir / "tensorboard" / f"seed_{seed}")
        expected = csv_series(rows, seed)
        assert sorted(logged) == sorted(expected)  # every measured metric, each step once (resume purged)
        for name, series in expected.items():
            assert_series_equal(logged[name], series)
    results = json.loads((run_dir / "eval.json").read_text())
    final = tensorboard_scalars(run_dir / "tensorboard")
    last_step = config.num_updates * config.steps_per_update
    assert set(final) == set(final_values(results))
    for name, value in final_values(results).items():
        assert final[name][-1][0] == last_step and math.isclose(final[name][-1][1], value, rel_tol=1e-6)
    assert session_hparams(run_dir / "tensorboard")["num_seeds"] == config.num_seeds


@pytest.mark.slow  # a whole training run (tens of seconds on the 2-core CPU)
@pytest.mark.timeout(600)
def test_each_fused_sweep_member_logs_its_own_wandb_run(tmp_path, wandb_env):
    config_file = tmp_path / "base.yaml"
    config_file.write_text(yaml.safe_dump({**BASE, "checkpoint_every": 3}))
    argv = ["--config", str(config_file), "--grid", "lr=1e-3,3e-4", "--name", "s", "--out-dir", str(tmp_path)]
    assert sweep_main([*argv, "--no-progress", "logger=wandb"]) == 0
    for lr in ("1e-3", "3e-4"):
        run_dir = tmp_path / "s" / f"lr={lr}"
        (folder,) = (run_dir / "wandb").glob("offline-run-*")
        run = wandb_run(folder)
        assert run["run"].run_group == "s" and run["run"].display_name == f"lr={lr}"
        assert run["config"]["lr"] == float(lr)
        rows = metrics_csv(run_dir)
        for row in rows:
            logged = run["history"][int(row["update"])]
            assert logged["env_steps"] == int(row["env_steps"])
            expected = {k: float(v) for k, v in row.items() if k.startswith("seed_") and v != ""}
            got = {k: v for k, v in logged.items() if k.startswith("seed_")}
            assert sorted(got) == sorted(expected)
            np.testing.assert_allclose([got[k] for k in expected], list(expected.values()), rtol=1e-5)
        results = json.loads((run_dir / "eval.json").read_text())
        for name, value in final_values(results).items():
            assert math.isclose(run["summary"][name], value, rel_tol=1e-12)
