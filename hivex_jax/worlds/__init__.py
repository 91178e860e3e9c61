"""Worlds people bring: world fields per env, file IO (PNG/JPG/BMP/.npy), `FileWorlds`, stress worlds.

See docs/worlds.md. A world is a small dict of arrays (the generated fields of a reset state); each env
package's `worlds.py` exports them (`world_fields`) and imports them (`apply_world`).
"""

from hivex_jax.worlds import stress
from hivex_jax.worlds.fields import FieldSpec, field_specs, worlds_module
from hivex_jax.worlds.files import load_world, save_world, world_of_seed, world_shapes
from hivex_jax.worlds.stress import StressWorlds, stress_names, with_stress_worlds
from hivex_jax.worlds.wrapper import GENERATED, FileWorlds, load_worlds, with_file_worlds

__all__ = [
    "GENERATED",
    "FieldSpec",
    "FileWorlds",
    "StressWorlds",
    "field_specs",
    "load_world",
    "load_worlds",
    "save_world",
    "stress",
    "stress_names",
    "with_file_worlds",
    "with_stress_worlds",
    "world_of_seed",
    "world_shapes",
    "worlds_module",
]
