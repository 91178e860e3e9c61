"""Every config shipped in configs/ loads, validates and fits its env (no compilation): a config that
`hivex train --config` would refuse must not ship."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from baselines.config import load_config, validate_env

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


def test_configs_exist():
    names = {p.name for p in CONFIGS}
    for env in (
        "wind_farm_control",
        "wildfire_resource_management",
        "drone_based_reforestation",
        "ocean_plastic_collection",
        "aerial_wildfire_suppression",
    ):  # issue 16: IPPO and MAPPO on the CPU and a GPU config per env
        assert {f"ippo_{env}.yaml", f"mappo_{env}.yaml", f"ippo_{env}_gpu.yaml"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_shipped_config_validates_against_its_env(path):
    config = load_config(path)
    if config.env_id.startswith("jaxmarl/") and importlib.util.find_spec("jaxmarl") is None:
        pytest.skip("jaxmarl is not installed")
    validate_env(config)
    if path.stem.startswith("ippo_") and path.stem.endswith("_gpu"):
        assert config.num_seeds * config.num_envs >= 1536  # thousands of worlds
        assert config.stop_at_test_return is not None  # timed to its target by scripts/gpu_report.sh


#: what a memorisation-probe config may change from its env's GPU config (it scores once, after training,
#: on a fixed budget): every other setting is the GPU config's, so the probe measures the shipped recipe
PROBE_CHANGES = {"eval_every", "gif_frames", "stop_at_test_return"}


@pytest.mark.parametrize("path", [p for p in CONFIGS if p.stem.startswith("probe_")], ids=lambda p: p.stem)
def test_probe_config_is_its_gpu_config_without_the_early_stop(path):
    probe = load_config(path).to_dict()
    gpu = load_config(path.with_name(path.name.replace("probe_", "ippo_", 1))).to_dict()
    changed = {k for k in probe.keys() | gpu.keys() if probe.get(k) != gpu.get(k)}
    assert changed <= PROBE_CHANGES, (
        f"{path.name} drifted from its GPU config in {sorted(changed - PROBE_CHANGES)}"
    )
    assert probe["stop_at_test_return"] is None  # every pool gets the same fixed budget
