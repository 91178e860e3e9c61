"""Registers every environment. Each lives in its own package under `hivex_jax/envs/`.

Every package registers the same way: its `make_default(**static)` (the env with HIVEX's frame stacking,
if any), imported on `make` from the "module:make_default" entry point. An environment registers only once
its package exists, so `hivex list` never shows an id that cannot be made.
"""

import importlib.util

from hivex_jax.core.registry import register

_ENVIRONMENTS = (
    (
        "WindFarmControl-v0",
        "wind_farm_control",
        "8 turbines yaw into a varying wind; 2 tasks, patterns 0-8 (HIVEX's levels), 9-10 (real farms: "
        "Horns Rev 1, Lillgrund)",
    ),
    (
        "WildfireResourceManagement-v0",
        "wildfire_resource_management",
        "9 watch towers share resources against a wildfire; 3 tasks, terrain levels 1-10",
    ),
    (
        "DroneBasedReforestation-v0",
        "drone_based_reforestation",
        "3 drones plant seeds near forests; 7 tasks (+ Group-up), terrain levels 1-10",
    ),
    (
        "OceanPlasticCollection-v0",
        "ocean_plastic_collection",
        "3 vessels collect floating plastic; 4 tasks",
    ),
    (
        "AerialWildfireSuppression-v0",
        "aerial_wildfire_suppression",
        "3 aeroplanes drop water on a spreading wildfire; 9 tasks, terrain levels 1-10",
    ),
)

#: the ids of the environments shipped here (the registry may hold more: users and tests add theirs)
BUNDLED_ENV_IDS = tuple(env_id for env_id, _, _ in _ENVIRONMENTS)

for _id, _package, _description in _ENVIRONMENTS:
    if importlib.util.find_spec(f"hivex_jax.envs.{_package}") is not None:
        register(_id, f"hivex_jax.envs.{_package}:make_default", description=_description)
