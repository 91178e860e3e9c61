"""Every env package follows the one template of docs/api.md ("Adding an environment")."""

import importlib
from pathlib import Path

import pytest

import hivex_jax
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.eval import find_scripted_policy

PACKAGES = (
    "wind_farm_control",
    "wildfire_resource_management",
    "drone_based_reforestation",
    "ocean_plastic_collection",
    "aerial_wildfire_suppression",
)
TEMPLATE_FILES = {
    "__init__.py",
    "params.py",
    "generator.py",
    "dynamics.py",
    "observations.py",
    "rewards.py",
    "render.py",
    "heuristics.py",
    "env.py",
}
ENVS_DIR = Path(hivex_jax.__file__).parent / "envs"


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_the_template_files(package):
    files = {p.name for p in (ENVS_DIR / package).glob("*.py")}
    assert TEMPLATE_FILES <= files, TEMPLATE_FILES - files


@pytest.mark.parametrize("package", PACKAGES)
def test_scripted_policy_lives_in_heuristics_and_on_the_env_class(package):
    pkg = importlib.import_module(f"hivex_jax.envs.{package}")
    heuristics = importlib.import_module(f"hivex_jax.envs.{package}.heuristics")
    env_module = importlib.import_module(f"hivex_jax.envs.{package}.env")
    assert pkg.scripted_policy is heuristics.scripted_policy
    assert (
        not hasattr(env_module, "scripted_policy") or env_module.scripted_policy is heuristics.scripted_policy
    )
    env = pkg.make_default()
    assert type(getattr(env, "unwrapped", env)).scripted_policy is heuristics.scripted_policy
    assert find_scripted_policy(env) is heuristics.scripted_policy  # through the FrameStack, if any


def test_every_env_registers_its_package_make_default():
    from hivex_jax.core.registry import _REGISTRY

    by_package = {}
    for env_id in BUNDLED_ENV_IDS:
        entry = _REGISTRY[env_id].entry_point
        if isinstance(entry, str) and entry.startswith("hivex_jax.envs."):
            module, factory = entry.split(":")
            by_package[module.rsplit(".", 1)[1]] = factory
    assert by_package == dict.fromkeys(PACKAGES, "make_default")


# DBR's constants abbreviate a few names (FERTILITY_DELTA, ...); the others upper-case the term's name.
@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "drone_based_reforestation"])
def test_reward_term_constants_name_their_columns(package):
    params = importlib.import_module(f"hivex_jax.envs.{package}.params")
    for column, name in enumerate(params.REWARD_TERM_NAMES):
        assert getattr(params, name.upper()) == column, name
