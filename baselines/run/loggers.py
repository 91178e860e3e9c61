"""Experiment tracking beside metrics.csv (`logger=`): what metrics.csv holds (per update, per seed), the
config as hyper-parameters and the held-out results of eval.json, for TensorBoard or Weights & Biases.
metrics.csv stays as it is; `logger=none` (the default) opens nothing.

- `tensorboard` (tensorboardX event files): a TensorBoard run per seed, `<run>/tensorboard/seed_<i>/`,
  whose tags are metrics.csv's metric names at step = env steps per seed (the learning curve's x axis).
  TensorBoard draws every run of a tag on one chart, so the seeds, and a sweep's combinations, overlay.
  The run folder's own run, `<run>/tensorboard/`, holds the config (as text, and as the hparams of a
  session whose metrics are the held-out results).
- `wandb`: one W&B run per run folder (named after it; a sweep's combinations grouped under the sweep's
  name), the config as its config, metrics.csv's columns `seed_<i>/<metric>` at step = update (plotted
  against `env_steps`), the held-out results in its summary. A run per folder rather than per seed: the
  seeds train in one program as metrics.csv's column sets do, one W&B run is one config's row in W&B's
  runs table (what a sweep compares), and each W&B run takes a second or two to start. Offline, into
  `<run>/wandb/`, unless the user is logged in (`WANDB_API_KEY`, or `wandb login`'s netrc entry); a
  `WANDB_MODE` or `WANDB_DIR` of the user's wins. A resumed run continues its W&B run (the id is kept in
  `<run>/wandb_run_id.txt`); W&B drops the rows it already has.

Cells metrics.csv leaves empty (no episode ended, no evaluation at that update) are not logged.
"""

from __future__ import annotations

import importlib.util
import math
import netrc
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import numpy as np

from baselines.config import ConfigError, PPOConfig

#: the optional package each logger writes with, and the pyproject extra that installs it
LOGGER_PACKAGES = {"tensorboard": ("tensorboardX", "tensorboard"), "wandb": ("wandb", "wandb")}

#: the W&B project when neither `logger_project` nor WANDB_PROJECT names one
DEFAULT_WANDB_PROJECT = "hivex_jax"


class Logger(Protocol):
    """What the run loop tells an experiment tracker (process 0 only)."""

    def log_config(self, config: Mapping[str, Any]) -> None:
        """The run's config (`PPOConfig.to_dict()`), as hyper-parameters."""

    def log_row(self, update: int, env_steps: int, seed: int, values: Mapping[str, float]) -> None:
        """One seed's measured metrics of one update (metrics.csv's non-empty cells of that row)."""

    def log_final(self, values: Mapping[str, float]) -> None:
        """The held-out results (`final_values` of eval.json), once, at the end."""

    def close(self) -> None:
        """Flush and release what the logger holds."""


class NoLogger:
    """`logger=none`: metrics.csv alone."""

    def log_config(self, config: Mapping[str, Any]) -> None:
        """Nothing."""

    def log_row(self, update: int, env_steps: int, seed: int, values: Mapping[str, float]) -> None:
        """Nothing."""

    def log_final(self, values: Mapping[str, float]) -> None:
        """Nothing."""

    def close(self) -> None:
        """Nothing."""


# ---------------------------------------------------------------------------------------- opening
def check_logger(config: PPOConfig) -> None:
    """A one-line `ConfigError` naming the extra to install when `config.logger`'s package is missing
    (looked up, not imported: cheap, so commands run it before anything is built or compiled)."""
    if config.logger not in LOGGER_PACKAGES:
        return
    module, extra = LOGGER_PACKAGES[config.logger]
    if importlib.util.find_spec(module) is None:
        raise ConfigError(
            f'logger={config.logger} needs the {module} package: pip install -e ".[{extra}]" (or logger=none)'
        )


def open_logger(config: PPOConfig, run_dir: Path, first_update: int = 0, log: Any = print) -> Logger:
    """The logger `config.logger` names for the run folder `run_dir`, which starts (or resumes) after
    update `first_update`; says in one line (`log`) where it writes."""
    check_logger(config)
    run_dir = Path(run_dir)
    if config.logger == "tensorboard":
        folder = run_dir / "tensorboard"
        logger: Logger = TensorBoardLogger(folder, config.num_seeds, first_update * config.steps_per_update)
        log(f"logging to TensorBoard: tensorboard --logdir {folder}")
        return logger
    if config.logger == "wandb":
        wandb_logger = WandbLogger(config, run_dir, resume=first_update > 0)
        log(wandb_logger.where())
        return wandb_logger
    return NoLogger()


# ---------------------------------------------------------------------------------------- what is logged
def log_chunk(
    logger: Logger, first_update: int, steps_per_update: int, metrics: Mapping[str, np.ndarray], names: Any
) -> None:
    """A chunk's rows, as metrics.csv appends them (`metrics[name]` `[S, K]`, updates `first_update + 1`
    ...), seed by seed within each update; NaN cells (not measured) left out."""
    num_seeds, k = np.shape(metrics["step_reward"])
    for j in range(k):
        update = first_update + j + 1
        for s in range(num_seeds):
            values = {}
            for name in names:
                if name in metrics:
                    x = float(metrics[name][s, j])
                    if not math.isnan(x):
                        values[name] = x
            logger.log_row(update, update * steps_per_update, s, values)


def final_values(results: Mapping[str, Any]) -> dict[str, float]:
    """eval.json's held-out results as flat numbers: per policy `eval/<policy>/mean`, `ci95` and `iqm`
    of its return, then `eval/normalised_score/<policy>` and `eval/fraction_of_scripted/<policy>` where
    the results have them (the trained seeds' own returns are metrics.csv's last test_return cells)."""
    out: dict[str, float] = {}
    for name, block in results["policies"].items():
        for stat in ("mean", "ci95", "iqm"):
            out[f"eval/{name}/{stat}"] = float(block["summary"][stat])
    for score in ("normalised_score", "fraction_of_scripted"):
        for name, value in (results.get(score) or {}).items():
            if value is not None:
                out[f"eval/{score}/{name}"] = float(value)
    return out


def flat_hparams(config: Mapping[str, Any], prefix: str = "") -> dict[str, bool | int | float | str]:
    """The config as TensorBoard hparams (numbers, text, booleans): dicts spread into `key.sub` entries,
    lists written as text, None left out (a key keeps one type across runs: `level` a number or absent)."""
    out: dict[str, bool | int | float | str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, Mapping):
            out.update(flat_hparams(value, name + "."))
        elif isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            out[name] = str(value)
    return out


# ---------------------------------------------------------------------------------------- TensorBoard
class TensorBoardLogger:
    """TensorBoard event files (module docstring): `folder/seed_<i>/` per seed, `folder` for the run."""

    def __init__(self, folder: Path, num_seeds: int, first_step: int = 0):
        """Writers of `folder` and its seeds; every event after `first_step` (a resumed run's last logged
        step) that an earlier attempt wrote is dropped by TensorBoard (its purge of a restarted run)."""
        from tensorboardX import SummaryWriter

        # a file name of its own per start point: a restart in the same second does not overwrite one
        writer = {"purge_step": first_step + 1, "filename_suffix": f".from{first_step}", "flush_secs": 30}
        self.run = SummaryWriter(str(folder), **writer)
        self.seeds = [SummaryWriter(str(folder / f"seed_{s}"), **writer) for s in range(num_seeds)]
        self.config: dict[str, Any] = {}
        self.last_step = first_step

    def log_config(self, config: Mapping[str, Any]) -> None:
        """The config as text (YAML, step 0); its hparams session is written with the results."""
        import yaml

        self.config = dict(config)
        text = yaml.safe_dump(self.config, sort_keys=False)
        self.run.add_text("config", "```\n" + text + "```", 0)  # Markdown: a code block keeps the layout

    def log_row(self, update: int, env_steps: int, seed: int, values: Mapping[str, float]) -> None:
        """Each value as a scalar of the seed's run at step `env_steps`."""
        for name, value in values.items():
            self.seeds[seed].add_scalar(name, value, env_steps)
        self.last_step = max(self.last_step, env_steps)

    def log_final(self, values: Mapping[str, float]) -> None:
        """The results as scalars of the run folder's run (at the last step) and as the metrics of its
        hparams session (the config's values as the hparams)."""
        from tensorboardX.summary import hparams

        for name, value in values.items():
            self.run.add_scalar(name, value, self.last_step)
        writer = self.run.file_writer
        if writer is not None:  # None only once closed
            for summary in hparams(flat_hparams(self.config), dict(values)):
                writer.add_summary(summary)

    def close(self) -> None:
        """Flush and close every writer."""
        for writer in [self.run, *self.seeds]:
            writer.close()


# ---------------------------------------------------------------------------------------- W&B
def wandb_logged_in(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether W&B has credentials here, without the network: `WANDB_API_KEY` (or an identity token
    file), or an entry for W&B's host (`WANDB_BASE_URL`, default api.wandb.ai) in the netrc file that
    `wandb login` writes (`NETRC`, else ~/.netrc or ~/_netrc)."""
    if environ.get("WANDB_API_KEY") or environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    host = urlsplit(environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").netloc
    if environ.get("NETRC"):
        paths = [Path(environ["NETRC"]).expanduser()]
    else:
        paths = [Path("~/.netrc").expanduser(), Path("~/_netrc").expanduser()]
    for path in paths:
        try:
            entry = netrc.netrc(str(path)).authenticators(host)
        except (OSError, netrc.NetrcParseError):
            continue
        return bool(entry and entry[2])
    return False


def wandb_mode(environ: Mapping[str, str] = os.environ) -> str:
    """W&B's mode: the user's `WANDB_MODE`, else "online" where they are logged in, else "offline"."""
    return environ.get("WANDB_MODE") or ("online" if wandb_logged_in(environ) else "offline")


class WandbLogger:
    """One W&B run per run folder (module docstring)."""

    def __init__(
        self, config: PPOConfig, run_dir: Path, resume: bool = False, environ: Mapping[str, str] = os.environ
    ):
        """Start (`resume`: continue, by the id its folder keeps) the W&B run of `run_dir`."""
        import wandb

        id_file = run_dir / "wandb_run_id.txt"
        resumed = resume and id_file.is_file()
        run_id = id_file.read_text().strip() if resumed else secrets.token_hex(4)
        id_file.write_text(run_id + "\n")
        # a sweep's combination (its folder under the sweep's, not under out_dir) is grouped under the sweep
        parent = run_dir.resolve().parent
        group = parent.name if parent != Path(config.out_dir).resolve() else None
        self.mode = wandb_mode(environ)
        mode: Literal["online", "offline"] | None = None  # None: the user's WANDB_MODE, which wandb reads
        if not environ.get("WANDB_MODE"):
            mode = "online" if self.mode == "online" else "offline"
        self.run = wandb.init(
            project=config.logger_project or environ.get("WANDB_PROJECT") or DEFAULT_WANDB_PROJECT,
            name=run_dir.name,
            group=group,
            id=run_id,
            resume="allow",
            dir=None if environ.get("WANDB_DIR") else str(run_dir),
            mode=mode,
            reinit="create_new",  # a fused sweep's members are runs open at once
            settings=wandb.Settings(quiet=True, console="off"),  # the progress bar stays the terminal's
        )
        self.run.define_metric("env_steps")
        self.run.define_metric("seed_*", step_metric="env_steps")
        self.update: int | None = None  # the update whose seeds' values `pending` gathers
        self.pending: dict[str, float] = {}

    def where(self) -> str:
        """One line: where the run goes (its page online, its folder and how to upload it offline)."""
        if self.mode == "online":
            return f"logging to W&B: {self.run.url}"
        if self.mode == "disabled":
            return "W&B is disabled (WANDB_MODE=disabled): nothing logged there"
        folder = Path(self.run.dir).parent  # the run's offline folder (its files/ is run.dir)
        return f"logging to W&B ({self.mode}) in {folder}" + (
            f" (upload: wandb sync {folder})" if self.mode == "offline" else ""
        )

    def log_config(self, config: Mapping[str, Any]) -> None:
        """The config as the run's config (a resumed run may change run keys)."""
        self.run.config.update(dict(config), allow_val_change=True)

    def log_row(self, update: int, env_steps: int, seed: int, values: Mapping[str, float]) -> None:
        """`seed_<i>/<metric>` entries of the update's history row (one row per update, all seeds)."""
        if update != self.update:
            self._flush()
            self.update = update
        self.pending["env_steps"] = env_steps
        self.pending.update({f"seed_{seed}/{name}": value for name, value in values.items()})

    def log_final(self, values: Mapping[str, float]) -> None:
        """The results into the run's summary."""
        self._flush()
        self.run.summary.update(dict(values))

    def close(self) -> None:
        """The last row, then the run finished (its files complete)."""
        self._flush()
        self.run.finish()

    def _flush(self) -> None:
        """Log the gathered row at its update."""
        if self.update is not None and self.pending:
            self.run.log(self.pending, step=self.update)
        self.pending = {}
