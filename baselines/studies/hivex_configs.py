"""Which config a HIVEX results cell trains with (`baselines.studies.hivex_results`): its shipped config now,
the config block its record keeps of a run folder, how each record stands against the config now, and run
folders trained with another config (said, kept or moved aside)."""

from __future__ import annotations

import time
from pathlib import Path

from baselines.config import PPOConfig, load_config, saved_config_changes
from baselines.studies.config_fingerprint import (
    check_record,
    config_now,
    defaults_of,
    read_golden,
    run_config,
)
from baselines.studies.study import ROOT
from hivex_jax.eval.hivex_cells import (
    Cell,
    train_settings,
)
from hivex_jax.eval.result_records import CONFIG_CHANGED, ConfigCheck


def cell_config(cell: Cell, gpu: bool = False, configs: Path | None = None) -> Path:
    """The shipped config a cell trains with: `configs/<algo>_<env>.yaml`, or with `gpu` its
    `<algo>_<env>_gpu.yaml` (a `ValueError` naming it if there is none); `configs`: another folder of them."""
    config = (configs or ROOT / "configs") / (cell.gpu_config if gpu else cell.config)
    if not config.is_file():
        raise ValueError(f"--gpu: {cell.label()} has no GPU config (configs/{config.name})")
    return config


def shipped_now(
    cell: Cell, gpu: bool, golden: dict | None, configs: Path | None = None
) -> tuple[PPOConfig, dict]:
    """The config a cell would train with now, its shipped config (with `gpu` the GPU one; `configs`: another
    folder of them) with the cell's settings, and its config block (`config_fingerprint.config_now`)."""
    config = load_config(cell_config(cell, gpu, configs), train_settings(cell, [], gpu))
    return config, config_now(config, f"configs/{cell.gpu_config if gpu else cell.config}", golden)


def recorded_config(cell: Cell, run_dir: Path, gpu: bool | None = None) -> dict:
    """The config block a cell's record keeps of its run folder (`config_fingerprint.run_config`), naming the
    shipped config it trains with: the GPU one with `gpu`; with `gpu` None (`record`, which is not told) the
    GPU one where the run's config is the GPU one's now, else the CPU one."""
    golden = read_golden()
    if gpu is None:
        gpu_file = ROOT / "configs" / cell.gpu_config
        ran = run_config(run_dir, "", golden)
        gpu = (
            gpu_file.is_file() and ran.get("fingerprint") == shipped_now(cell, True, golden)[1]["fingerprint"]
        )
    return run_config(run_dir, f"configs/{cell.gpu_config if gpu else cell.config}", golden)


def config_checks(records: dict[Cell, dict], configs: Path | None = None) -> dict[Cell, ConfigCheck]:
    """How each cell's record stands against the config the cell would train with now (`shipped_now`: the
    shipped config its record names, the GPU one or by default the CPU one; `configs`: another folder of
    them); a record of a GPU config that is no longer shipped is changed."""
    golden, checks = read_golden(), {}
    for cell, record in records.items():
        gpu = (record.get("config") or {}).get("shipped_config") == f"configs/{cell.gpu_config}"
        if gpu and not ((configs or ROOT / "configs") / cell.gpu_config).is_file():
            source = record["config"].get("fingerprint_source", "")
            checks[cell] = ConfigCheck(
                CONFIG_CHANGED, (f"configs/{cell.gpu_config} is no longer shipped",), source
            )
            continue
        config, now = shipped_now(cell, gpu, golden, configs)
        checks[cell] = check_record(record, now, defaults_of(config))
    return checks


def stale_changes(cell: Cell, run_dir: Path, overrides: list[str], gpu: bool = False) -> list[str]:
    """How the config a cell's run folder was trained with differs from the one it would train with now
    (`"key saved -> now"`; [] for a fresh or current folder)."""
    now = load_config(cell_config(cell, gpu), train_settings(cell, overrides, gpu))
    return saved_config_changes(run_dir, now)


def supersede(run_dir: Path) -> Path:
    """Move a stale run folder aside, to `<env folder>/superseded/<cell folder>-<UTC time>` (nothing is
    deleted); its new place."""
    target = (
        run_dir.parent / "superseded" / f"{run_dir.name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    run_dir.rename(target)
    return target


def check_stale(
    cells: list[Cell], out_dir: str | Path, overrides: list[str], retrain: bool, gpu: bool = False
) -> None:
    """Say, one line each, which cells' run folders were trained with another config than the cell's
    shipped one now: a finished one is kept (its record states its budget) unless `retrain`; an unfinished
    one, or any with `retrain`, is moved aside (`supersede`) and trained afresh."""
    for cell in cells:
        run_dir = cell.path(out_dir)
        changed = stale_changes(cell, run_dir, overrides, gpu)
        if not changed:
            continue
        what = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        if retrain or not (run_dir / "eval.json").is_file():
            print(f"{cell.label()}: trained with another config ({what}); moved to {supersede(run_dir)}")
        else:
            print(f"{cell.label()}: kept, trained with another config ({what}); --retrain-stale retrains it")


def config_changes(now: dict, ran: dict) -> dict[str, list]:
    """`{key: [now's, ran's]}` of the learning keys whose values differ between two config blocks."""
    before, after = now.get("learning", {}), ran.get("learning", {})
    return {
        k: [before.get(k), after.get(k)] for k in sorted({*before, *after}) if before.get(k) != after.get(k)
    }
