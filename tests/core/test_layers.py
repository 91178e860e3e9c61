"""Layers only point down, with no exception: core <- procgen <- envs <- wrappers, worlds <- `make`
(hivex_jax/registration.py) <- eval / interop <- the `hivex` command; the trainer (`baselines`) sits on
top and the library imports nothing from it. No module imports a private name of another, and
PJRT_NPROC is set in two places.

Every `import` statement of every module file (including imports inside functions, which run later but
are dependencies all the same) is read with `ast`: cheap, and complete where a runtime `sys.modules`
check is not (`import hivex_jax.core` runs `hivex_jax/__init__.py`, which imports the envs).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Rank of each part of the library; a module may import its own part and parts of lower rank. eval and
# interop are peers that do not import each other. `registration` is `hivex_jax.make`, the composition
# root: it builds an env and adds the wrappers its options ask for, so it sits above the envs, wrappers
# and worlds; `hivex_jax` is the package's own __init__, which imports the envs (to register them) and
# `make`, so it ranks with it.
RANKS = {
    "core": 0,
    "procgen": 1,
    "envs": 2,
    "wrappers": 3,
    "worlds": 3,  # hivex_jax/worlds/: worlds from files and stress worlds, wrappers over the envs
    "registration": 4,
    "hivex_jax": 4,
    "eval": 5,
    "interop": 5,
    "command": 6,  # the `hivex` command and its sub-commands (COMMAND_MODULES), and what they share
    "serve": 6,  # hivex_jax/serve/: the `hivex serve` command (HTTP server), a command like the above
}
# Command modules, wherever they live: a sub-command beside the library part it serves is still a command
COMMAND_MODULES = {
    "hivex_jax.cli",
    "hivex_jax.cli_support",  # argparse, option checks, one-line errors, prepare_jax
    "hivex_jax.bench",
    "hivex_jax.__main__",
    "hivex_jax.eval.render",  # `hivex render`
    "hivex_jax.worlds.cli",  # `hivex world`
}
# Python packages whose modules are checked for private names imported from another module
CHECKED_FOR_PRIVATE_IMPORTS = ("hivex_jax", "baselines", "scripts")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    """The layer name of a module inside hivex_jax."""
    pieces = module.split(".")
    if len(pieces) == 1:
        return "hivex_jax"
    return "command" if module in COMMAND_MODULES else pieces[1]


def imports(path: Path) -> set[str]:
    """Absolute names of every module `path` imports (relative imports resolved)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            else:
                found.add(node.module)
            origin = node.module if not node.level else None
            for alias in node.names:  # `from hivex_jax import envs` imports the module hivex_jax.envs
                if origin and is_module(f"{origin}.{alias.name}"):
                    found.add(f"{origin}.{alias.name}")
    return found


def is_module(name: str) -> bool:
    """Whether `name` is a first-party module or package file in this repository."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def library_imports() -> list[tuple[str, str]]:
    """(importing module, imported module) for every import of a first-party module in hivex_jax."""
    edges = []
    for path in sorted((ROOT / "hivex_jax").rglob("*.py")):
        for name in imports(path):
            if name.split(".")[0] in ("hivex_jax", "baselines"):
                edges.append((module_name(path), name))
    return edges


def test_the_scan_sees_known_imports():
    """The scanner itself: it finds imports at the top and inside functions, so an empty result below
    means no such import, not a blind scan."""
    edges = set(library_imports())
    assert ("hivex_jax.envs.wind_farm_control.generator", "hivex_jax.procgen.fields") in edges
    assert ("hivex_jax.cli", "hivex_jax.bench") in edges  # imported inside a function
    assert ("hivex_jax", "hivex_jax.envs") in edges  # `from hivex_jax import envs`


def test_the_library_imports_nothing_from_the_trainer():
    offenders = [(a, b) for a, b in library_imports() if b.split(".")[0] == "baselines"]
    assert not offenders, (
        f"hivex_jax imports baselines (use the hivex_jax.commands entry points): {offenders}"
    )


def upward_imports(edges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (importer, imported) pairs of `edges` that point up a layer or between eval and interop."""
    upward = []
    for importer, imported in edges:
        if imported.split(".")[0] != "hivex_jax":
            continue
        a, b = part(importer), part(imported)
        if RANKS[b] > RANKS[a] or (a != b and {a, b} == {"eval", "interop"}):
            upward.append((importer, imported))
    return sorted(set(upward))


def test_every_part_has_a_rank():
    parts = {part(module_name(p)) for p in (ROOT / "hivex_jax").rglob("*.py")}
    assert parts <= set(RANKS), f"parts of hivex_jax without a rank in RANKS: {sorted(parts - set(RANKS))}"
    assert all(is_module(m) for m in COMMAND_MODULES), "COMMAND_MODULES names a module that is gone"


def test_the_rank_check_sees_upward_imports():
    """The check itself, on made-up edges: a lazy import of `make` from core, a wrapper from an env,
    eval from interop and a command from the worlds are caught; the composition root's are not."""
    edges = [
        ("hivex_jax.core.errors", "hivex_jax.registration"),
        ("hivex_jax.envs.wind_farm_control.env", "hivex_jax.wrappers.messages"),
        ("hivex_jax.interop.gymnasium", "hivex_jax.eval.plots"),
        ("hivex_jax.worlds.stress", "hivex_jax"),
        ("hivex_jax.worlds.files", "hivex_jax.cli_support"),
        ("hivex_jax.registration", "hivex_jax.worlds.wrapper"),
        ("hivex_jax.registration", "hivex_jax.wrappers.messages"),
        ("hivex_jax.worlds.cli", "hivex_jax.cli_support"),
        ("hivex_jax", "hivex_jax.registration"),
    ]
    assert upward_imports(edges) == sorted(edges[:5])


def test_layers_only_point_down():
    """No exception: every import of every module (lazy ones inside functions included) points down."""
    upward = upward_imports(library_imports())
    assert not upward, f"imports that point up a layer (core <- procgen <- envs <- wrappers <- ...): {upward}"


def private_imports(source: str, module: str) -> list[str]:
    """`from module import _name` of a first-party module in `source` (the text of module `module`), and
    a private module (interop/_common.py) imported from outside its own package. A private name belongs
    to its module: another module must not import it."""
    package = module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if not is_first_party(node.module):
                continue
            found += [
                f"{module}:{node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if is_private(alias.name)
            ]
            targets = [node.module]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names if is_first_party(alias.name)]
        else:
            continue
        for target in targets:
            pieces = target.split(".")
            for i, piece in enumerate(pieces):
                owner = ".".join(pieces[:i])
                if is_private(piece) and owner != package:
                    found.append(
                        f"{module}:{node.lineno}: imports {target}, private to {owner or 'its folder'}"
                    )
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_first_party(module: str) -> bool:
    """A module of this repository: hivex_jax, baselines, or a script's sibling in scripts/."""
    top = module.split(".")[0]
    return top in ("hivex_jax", "baselines") or (ROOT / "scripts" / f"{top}.py").is_file()


def checked_modules() -> list[tuple[str, str]]:
    """(source, module name) of every file of hivex_jax, baselines and scripts (a script's siblings are
    top-level modules to it: `import _jax_setup`)."""
    modules = []
    for top in CHECKED_FOR_PRIVATE_IMPORTS:
        for path in sorted((ROOT / top).rglob("*.py")):
            name = path.stem if top == "scripts" else module_name(path)
            modules.append((path.read_text(), name))
    return modules


def test_the_private_import_scan_finds_them():
    """The scan itself, on made-up modules."""
    source = (
        "from baselines.cli.common import enable_compilation_cache\n"
        "from hivex_jax.interop._common import require\n"
        "import hivex_jax.interop._common\n"
        "def f():\n"
        "    from baselines.cli.train import _hidden\n"
    )
    found = private_imports(source, "baselines.cli.sweep")
    assert len(found) == 3 and "import _hidden" in found[2], found
    assert all("hivex_jax.interop._common" in line for line in found[:2]), found
    assert not private_imports(source.split("def")[0], "hivex_jax.interop.gymnasium")  # its own package's
    assert not private_imports(
        "import _jax_setup\nfrom __future__ import annotations\n", "memorisation_probe"
    )
    assert private_imports("from _jax_setup import _x\n", "memorisation_probe")


def test_no_private_name_is_imported_across_modules():
    """`from baselines.cli.train import _helper` in another command is a hidden API: make it public (e.g. in
    baselines/cli/common.py). tests/ may import private names of the code they test."""
    found = [line for source, module in checked_modules() for line in private_imports(source, module)]
    assert not found, "private names imported from another module:\n" + "\n".join(found)


def test_core_names_no_adapter_and_namespaced_ids_still_resolve():
    """`make("jaxmarl/...")` works in a fresh process that never imported the adapter (the entry point
    finds it), and importing the library alone loads no adapter and no trainer."""
    pytest.importorskip("jaxmarl")
    code = (
        "import sys, hivex_jax, hivex_jax.core, hivex_jax.wrappers, hivex_jax.eval, hivex_jax.interop\n"
        "import hivex_jax.cli, hivex_jax.bench\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'baselines'], 'baselines imported'\n"
        "assert 'hivex_jax.interop.from_jaxmarl' not in sys.modules\n"
        "env, params = hivex_jax.make('jaxmarl/MPE_simple_spread_v3')\n"
        "assert type(env).__name__ == 'FromJaxMARL' and env.num_agents == 3, env\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "JAX_PLATFORMS": "cpu"},
    )
    assert result.returncode == 0, result.stderr[-2000:]


def _repository_files() -> list[Path]:
    """The repository's files (tracked and untracked, not git-ignored: not a local run folder's scripts);
    every file under ROOT where git is unavailable."""
    import subprocess

    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return list(ROOT.rglob("*"))
    return [ROOT / name for name in listed]


def pjrt_nproc_setters() -> set[str]:
    """Files that set PJRT_NPROC: a Python file naming it as a string or keyword (`environ.setdefault(
    "PJRT_NPROC", ...)`, `{**os.environ, "PJRT_NPROC": ...}`, `dict(..., PJRT_NPROC=...)`; docstrings that
    show `PJRT_NPROC=1 python ...` are text, not settings), or a shell/config line outside a comment."""
    found = set()
    for path in _repository_files():
        parts = path.relative_to(ROOT).parts
        hidden = any(p.startswith(".") and p != ".ci" for p in parts)  # .venv, .git, caches
        if hidden or not path.is_file() or path == Path(__file__):
            continue
        name = str(path.relative_to(ROOT))
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(path.read_text(), name)):
                named = isinstance(node, ast.Constant) and node.value == "PJRT_NPROC"
                if named or (isinstance(node, ast.keyword) and node.arg == "PJRT_NPROC"):
                    found.add(name)
        elif path.suffix in (".sh", ".toml", ".cfg", ".ini") or name == ".ci/run":
            lines = path.read_text().splitlines()
            if any("PJRT_NPROC" in line.split("#")[0] for line in lines):
                found.add(name)
    return found


def test_pjrt_nproc_is_set_in_two_places():
    """One place for the code (the `hivex` command, the trainer's commands, the scripts call it) and one
    for the tests, whose child processes inherit it: no copy to keep in step."""
    assert pjrt_nproc_setters() == {"hivex_jax/cli_support.py", "tests/conftest.py"}


# The trainer's parts, ranked as the library's are: a module may import its own part and parts of lower
# rank. `baselines` (the package's __init__, `make_train` / `run_training`) and `baselines.cli.bench` (the
# `python -m baselines.cli.bench` entry) sit on top; the library imports nothing from any of them. The shipped
# pretrained policies (`pretrained_policies`) sit between run (whose evaluation plays them) and cli.
TRAINER_RANKS = {
    "config": 0,
    "core": 1,
    "run": 2,
    "pretrained_policies": 2.5,
    "cli": 3,
    "studies": 4,
    "baselines": 5,
    "bench": 5,
}


def trainer_part(module: str) -> str:
    """The layer name of a module inside baselines."""
    pieces = module.split(".")
    return "baselines" if len(pieces) == 1 else pieces[1]


def trainer_imports() -> list[tuple[str, str]]:
    """(importing module, imported module) for every import of a baselines module inside baselines."""
    edges = []
    for path in sorted((ROOT / "baselines").rglob("*.py")):
        for name in imports(path):
            if name.split(".")[0] == "baselines":
                edges.append((module_name(path), name))
    return edges


def upward_trainer_imports(edges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (importer, imported) pairs of `edges` that point up a part of the trainer."""
    return sorted(
        {(a, b) for a, b in edges if TRAINER_RANKS[trainer_part(b)] > TRAINER_RANKS[trainer_part(a)]}
    )


def test_every_trainer_part_has_a_rank():
    parts = {trainer_part(module_name(p)) for p in (ROOT / "baselines").rglob("*.py")}
    assert parts <= set(TRAINER_RANKS), (
        f"parts of baselines without a rank: {sorted(parts - set(TRAINER_RANKS))}"
    )


def test_the_trainer_rank_check_sees_upward_imports():
    """The check itself, on made-up edges: config reaching the core, the core reaching the run layer and
    a run module reaching a command are caught; the downward ones are not."""
    edges = [
        ("baselines.config.env", "baselines.core.kernels"),
        ("baselines.core.training_env", "baselines.run.population"),
        ("baselines.run.fused", "baselines.cli.sweep"),
        ("baselines.cli.sweep", "baselines.run.fused"),
        ("baselines.studies.study", "baselines.run.checkpoint"),
        ("baselines", "baselines.run.runner"),
    ]
    assert upward_trainer_imports(edges) == sorted(edges[:3])
    assert ("baselines.core.ppo", "baselines.core.training_env") in set(trainer_imports())


def test_trainer_layers_only_point_down():
    """No exception: config < core < run < cli < studies, every import (lazy ones included)."""
    upward = upward_trainer_imports(trainer_imports())
    assert not upward, (
        f"imports that point up a part of the trainer (config < core < run < cli < studies): {upward}"
    )
