"""Every env package follows the one template of docs/api.md ("Adding an environment"): the files of
TEMPLATE (plus the extras a package declares in EXTRAS, nothing else), each holding the module-level
names its contract lists, of the declared types and call signatures (`Value`, `Function`)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import jax
import pytest

import hivex_jax
from hivex_jax.core.environment import Environment
from hivex_jax.core.world_spec import FieldSpec, StressWorld
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.eval import find_scripted_policy

PACKAGES = (
    "wind_farm_control",
    "wildfire_resource_management",
    "drone_based_reforestation",
    "ocean_plastic_collection",
    "aerial_wildfire_suppression",
)
ENVS_DIR = Path(hivex_jax.__file__).parent / "envs"
ROOT = Path(hivex_jax.__file__).parents[1]
MAX_ENV_LINES = 400
MAX_STEP_ENV_LINES = 60


# ------------------------------------------------------------------------------- call signatures
class ScriptedPolicy(Protocol):
    def __call__(self, obs: dict[str, jax.Array], params: Any) -> dict[str, jax.Array]: ...


class WorldFields(Protocol):
    def __call__(self, state: Any) -> dict[str, jax.Array]: ...


class ApplyWorld(Protocol):
    def __call__(
        self, env: Any, key: jax.Array, state: Any, world: dict[str, jax.Array], params: Any
    ) -> tuple: ...


class InputShapes(Protocol):
    def __call__(self, env: Any, params: Any) -> dict[str, jax.ShapeDtypeStruct]: ...


class CompleteWorld(Protocol):
    def __call__(self, env: Any, params: Any, world: dict, where: str) -> dict: ...


class StressMake(Protocol):
    def __call__(self, env: Any, key: jax.Array, state: Any, params: Any) -> tuple: ...


class MakeDefault(Protocol):
    def __call__(self, **static: Any) -> Any: ...


def parameters(fn: Callable) -> list[tuple[str, Any]]:
    """(name, kind) of `fn`'s parameters; a Protocol's `__call__` without `self`."""
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [(p.name, p.kind) for p in params]


@dataclass(frozen=True)
class Value:
    """A module-level value of type `kind`; `items`: the type of every element (tuple) or value (dict)."""

    kind: type | tuple[type, ...]
    items: type | tuple[type, ...] | None = None

    def check(self, value: Any) -> str | None:
        if not isinstance(value, self.kind):
            return f"is {type(value).__name__}, not {self.kind}"
        elements = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else ()
        bad = [e for e in elements if self.items is not None and not isinstance(e, self.items)]
        return f"holds {bad[0]!r}, not {self.items}" if bad else None


@dataclass(frozen=True)
class Function:
    """A module-level function called as `protocol.__call__` says (same parameter names and kinds)."""

    protocol: type

    def check(self, value: Any) -> str | None:
        if not callable(value):
            return "is not callable"
        want, got = parameters(self.protocol.__call__), parameters(value)
        return None if got == want else f"takes {[n for n, _ in got]}, not {[n for n, _ in want]}"


@dataclass(frozen=True)
class FileContract:
    """What one template file is for (docs/api.md's table) and the names it must define; `optional`
    names may be left out, and `together` names come as a group (one present: all present)."""

    role: str
    names: dict[str, Value | Function]
    optional: dict[str, Value | Function] | None = None
    together: tuple[str, ...] = ()


TEMPLATE: dict[str, FileContract] = {
    "__init__.py": FileContract(
        "`make_default(**static)` with `make_default.static_options`; the public names",
        {"make_default": Function(MakeDefault), "__all__": Value(list, str)},
    ),
    "params.py": FileContract(
        "static bounds, the EnvParams class and its bounds, task names, reward terms and task weights",
        {
            "STATIC_BOUNDS": Value(dict, tuple),
            "PARAM_BOUNDS": Value(dict, tuple),
            "TASK_NAMES": Value(tuple, str),
            "REWARD_TERM_NAMES": Value(tuple, str),
            "TASK_WEIGHTS": Value(tuple, tuple),
        },
    ),
    "types.py": FileContract("the state class and the pytree types the package's modules share", {}),
    "generator.py": FileContract("world seed -> world", {}),
    "dynamics.py": FileContract("how the world and the agents move one decision (step_env's mechanics)", {}),
    "observations.py": FileContract(
        "the observation layout and functions", {"LAYOUT": Value(dict, slice), "VECTOR_SIZE": Value(int)}
    ),
    "rewards.py": FileContract("one function per reward term, unweighted", {}),
    "render.py": FileContract("the top-down picture", {}),
    "heuristics.py": FileContract("the scripted controller", {"scripted_policy": Function(ScriptedPolicy)}),
    "env.py": FileContract("the Environment subclass", {}),
    "worlds.py": FileContract(
        "what a world is (its fields) and how a state exports and imports one",
        {
            "FIELDS": Value(tuple, FieldSpec),
            "PRIMARY_FIELD": Value((str, type(None))),
            "SEED_ON_FILE_WORLD": Value(str),
            "FILE_WORLD_SEED_FREE": Value(bool),
            "world_fields": Function(WorldFields),
            "apply_world": Function(ApplyWorld),
        },
        optional={
            "INPUT_FIELDS": Value(tuple, FieldSpec),
            "input_shapes": Function(InputShapes),
            "complete_world": Function(CompleteWorld),
        },
        together=("INPUT_FIELDS", "input_shapes"),
    ),
    "stress.py": FileContract("named hard worlds", {"STRESS_WORLDS": Value(dict, StressWorld)}),
}
#: files only some packages have, declared here (and in docs/api.md) so no file goes unnoticed
EXTRAS: dict[str, dict[str, str]] = {
    "wind_farm_control": {
        "layouts.py": "the real farms' turbine coordinates (Horns Rev 1, Lillgrund)",
        "wakes.py": "the optional wakes' farm solver and the env's waked power",
        "wake_models.py": "the wake models' equations (Gauss, Jensen-Jimenez, Crespo-Hernandez)",
        "turbine.py": "the wakes' NREL 5 MW turbine (power and thrust tables, rotor points)",
    },
}
#: what every env class defines itself (not inherited from Environment), with the attributes' types
ENV_CLASS_ATTRIBUTES: dict[str, Value] = {
    "env_id": Value(str),
    "reward_term_names": Value(tuple, str),
    "task_ids": Value(tuple, int),
    "task_names": Value(tuple, str),
    "level_field": Value((str, type(None))),
    "level_values": Value(tuple, int),
    "params_type": Value(type),
    "static_options": Value(tuple, str),
    "continuous_dims": Value(int),
    "discrete_branches": Value(tuple, int),
}
#: attributes a class may inherit from Environment (continuous_dims 0: no continuous action part)
INHERITABLE = {"continuous_dims"}
ENV_CLASS_METHODS = (
    "reset_env",
    "step_env",
    "default_params",
    "observation_space",
    "observation_layout",
    "global_state",
    "render",
)


def module(package: str, file: str) -> ModuleType:
    name = f"hivex_jax.envs.{package}" + ("" if file == "__init__.py" else f".{file[:-3]}")
    return importlib.import_module(name)


def env_class(package: str) -> type[Environment]:
    env_module = module(package, "env.py")
    (cls,) = [
        c
        for c in vars(env_module).values()
        if isinstance(c, type) and issubclass(c, Environment) and c.__module__ == env_module.__name__
    ]
    return cls


def step_env_node(package: str) -> ast.FunctionDef:
    tree = ast.parse((ENVS_DIR / package / "env.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == env_class(package).__name__)
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "step_env")


# ------------------------------------------------------------------------------------------ files
@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_exactly_the_template_files_and_its_declared_extras(package):
    files = {p.name for p in (ENVS_DIR / package).glob("*.py")}
    assert files == set(TEMPLATE) | set(EXTRAS.get(package, {})), files ^ (
        set(TEMPLATE) | set(EXTRAS.get(package, {}))
    )


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("file", sorted(TEMPLATE))
def test_file_defines_its_contract_names(package, file):
    contract, mod = TEMPLATE[file], module(package, file)
    problems = [f"{name} missing" for name in contract.names if not hasattr(mod, name)]
    specs = {**contract.names, **{k: v for k, v in (contract.optional or {}).items() if hasattr(mod, k)}}
    problems += [
        f"{name} {why}"
        for name, spec in specs.items()
        if hasattr(mod, name)
        if (why := spec.check(getattr(mod, name)))
    ]
    present = [name for name in contract.together if hasattr(mod, name)]
    if present and len(present) != len(contract.together):
        problems.append(f"{contract.together} come together; only {present}")
    assert not problems, f"{package}/{file}: {problems}"


# ----------------------------------------------------------------------------- names across files
@pytest.mark.parametrize("package", PACKAGES)
def test_env_class_defines_the_template_attributes_and_methods(package):
    cls, params = env_class(package), module(package, "params.py")
    problems = [
        f"{a} not set by the class" for a in set(ENV_CLASS_ATTRIBUTES) - INHERITABLE if a not in vars(cls)
    ]
    problems += [
        f"{a} {why}" for a, spec in ENV_CLASS_ATTRIBUTES.items() if (why := spec.check(getattr(cls, a)))
    ]
    problems += [f"{m} not implemented" for m in ENV_CLASS_METHODS if m not in vars(cls)]
    assert not problems, f"{package}: {problems}"
    assert cls.reward_term_names == params.REWARD_TERM_NAMES and cls.task_names == params.TASK_NAMES
    assert cls.params_type.__module__ == params.__name__  # the EnvParams class lives in params.py
    assert len(params.TASK_WEIGHTS) == len(params.TASK_NAMES)
    assert {len(row) for row in params.TASK_WEIGHTS} == {len(params.REWARD_TERM_NAMES)}
    assert set(params.PARAM_BOUNDS) <= set(cls.params_type.__dataclass_fields__)


@pytest.mark.parametrize("package", PACKAGES)
def test_make_default_and_public_names(package):
    pkg, cls = module(package, "__init__.py"), env_class(package)
    assert pkg.make_default.static_options == cls.static_options
    state_classes = [n for n in pkg.__all__ if n.endswith("State")]
    assert {cls.__name__, cls.params_type.__name__, "make_default", "scripted_policy"} <= set(pkg.__all__)
    assert len(state_classes) == 1
    # the state lives in types.py, which imports no other module of its package (no import circle)
    assert getattr(pkg, state_classes[0]).__module__ == f"hivex_jax.envs.{package}.types"
    tree = ast.parse((ENVS_DIR / package / "types.py").read_text())
    own = [
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom)
        and (n.level or (n.module or "").startswith(f"hivex_jax.envs.{package}"))
    ]
    assert not own, f"{package}/types.py imports its own package's modules: {own}"


@pytest.mark.parametrize("package", PACKAGES)
def test_observation_layout_fits_the_vector(package):
    obs = module(package, "observations.py")
    assert env_class(package)().observation_layout() == dict(obs.LAYOUT)
    assert all(0 <= s.start < s.stop <= obs.VECTOR_SIZE for s in obs.LAYOUT.values()), obs.LAYOUT


@pytest.mark.parametrize("package", PACKAGES)
def test_stress_worlds_are_made_from_a_reset_state(package):
    for name, world in module(package, "stress.py").STRESS_WORLDS.items():
        assert Function(StressMake).check(world.make) is None, (name, parameters(world.make))
        assert world.doc and "\n" not in world.doc, name


@pytest.mark.parametrize("package", PACKAGES)
def test_scripted_policy_lives_in_heuristics_and_on_the_env_class(package):
    pkg = module(package, "__init__.py")
    heuristics = module(package, "heuristics.py")
    env_module = module(package, "env.py")
    assert pkg.scripted_policy is heuristics.scripted_policy
    assert (
        not hasattr(env_module, "scripted_policy") or env_module.scripted_policy is heuristics.scripted_policy
    )
    env = pkg.make_default()
    assert type(getattr(env, "unwrapped", env)).scripted_policy is heuristics.scripted_policy
    assert find_scripted_policy(env) is heuristics.scripted_policy  # through the FrameStack, if any


@pytest.mark.parametrize("package", PACKAGES)
def test_heuristics_hold_controllers_not_an_evaluator(package):
    # one evaluator: rollouts and their compiled programs live in hivex_jax.eval, not beside the controller
    source = (ENVS_DIR / package / "heuristics.py").read_text()
    assert not re.search(r"\blax\.scan\b|\bjax\.jit\b|\bjit\(", source), package


def test_every_env_registers_its_package_make_default():
    from hivex_jax.core.registry import spec

    by_package = {}
    for env_id in BUNDLED_ENV_IDS:
        entry = spec(env_id).entry_point
        if isinstance(entry, str) and entry.startswith("hivex_jax.envs."):
            module_name, factory = entry.split(":")
            by_package[module_name.rsplit(".", 1)[1]] = factory
    assert by_package == dict.fromkeys(PACKAGES, "make_default")


# DBR's constants abbreviate a few names (FERTILITY_DELTA, ...); the others upper-case the term's name.
@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "drone_based_reforestation"])
def test_reward_term_constants_name_their_columns(package):
    params = module(package, "params.py")
    for column, name in enumerate(params.REWARD_TERM_NAMES):
        assert getattr(params, name.upper()) == column, name


# ---------------------------------------------------------------------------------- step_env shape
@pytest.mark.parametrize("package", PACKAGES)
def test_step_env_is_short_and_ends_with_the_shared_reward_assembly(package):
    lines = len((ENVS_DIR / package / "env.py").read_text().splitlines())
    assert lines <= MAX_ENV_LINES, f"{package}/env.py has {lines} lines"
    node = step_env_node(package)
    length = node.end_lineno - node.lineno + 1
    assert length <= MAX_STEP_ENV_LINES, f"{package} step_env has {length} lines"
    calls = [n.func for n in ast.walk(node) if isinstance(n, ast.Call)]
    names = {
        c.id if isinstance(c, ast.Name) else c.attr for c in calls if isinstance(c, ast.Name | ast.Attribute)
    }
    assert "assemble_rewards" in names, f"{package} step_env does not use core.rewards.assemble_rewards"
    # the mechanics come from dynamics.py: step_env calls into it (`dynamics.x(...)` or a name env.py
    # imports from it)
    tree = ast.parse((ENVS_DIR / package / "env.py").read_text())
    dynamics_module = f"hivex_jax.envs.{package}.dynamics"
    from_dynamics = {
        alias.asname or alias.name
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.module == dynamics_module
        for alias in n.names
    }
    called = {c.value.id for c in calls if isinstance(c, ast.Attribute) and isinstance(c.value, ast.Name)}
    called |= {c.id for c in calls if isinstance(c, ast.Name)}
    assert called & ({"dynamics"} | from_dynamics), f"{package} step_env calls nothing of dynamics.py"


def test_docs_table_lists_the_template_files_and_the_extras():
    text = (ROOT / "docs" / "api.md").read_text()
    section = text[text.index("## Adding an environment") :]
    listed = re.findall(r"^\| `([a-z_]+\.py)` \|", section, flags=re.M)
    assert set(listed) == set(TEMPLATE) | {f for extras in EXTRAS.values() for f in extras}
