"""No import circles: the project's modules (hivex_jax, baselines, scripts) as a graph with an edge for
every import statement, and its strongly connected components, each a circle of modules that import one
another. A package in STRICT_PACKAGES must have none (all three do); a package left out of it would have
its circles listed in the skip reason (`pytest -rs`), and the test asks for it back once it has none.

Every import statement counts, read with `ast`: at the top, inside functions (it runs later, but the
modules still depend on each other) and under `if TYPE_CHECKING:` (a circle closed only for the type
checker is a circle all the same); relative imports are resolved. `import a.b.c` and `from a.b import c`
(c a module) are edges to the module a.b.c; `from a.b import name` (not a module) to a.b's `__init__`.
The package `__init__`s Python runs on the way (a, a.b) are not edges: a package's `__init__` imports
its own modules (`hivex_jax/__init__.py` imports the envs), so counting them would put every module in
one circle, and Python resolves those (the package is in `sys.modules` before its modules run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[2]

#: the folders whose modules make the graph; scripts/ is not a package: a script's siblings are
#: top-level modules to it (`import _jax_setup`), so its modules are named by their file's stem
PACKAGES = ("hivex_jax", "baselines", "scripts")
#: the packages that must have no import circle: every one
STRICT_PACKAGES = PACKAGES


def module_files() -> dict[str, tuple[Path, str]]:
    """{module name: (file, package)} of every module of PACKAGES."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if package == "scripts":
                name = path.stem
            else:
                parts = path.relative_to(ROOT).with_suffix("").parts
                name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = (path, package)
    return modules


def imported_modules(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of `known` that the module `module` (source text `source`; `is_package`: an
    `__init__.py`) imports anywhere in its text, relative imports resolved (see the module doc)."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                origin = f"{base}.{origin}" if node.module else base
            targets = [
                f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name in a.b: the module a.b
                target = target.rpartition(".")[0]
            if target and target != module:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """{module: the project's modules it imports} over PACKAGES."""
    modules = module_files()
    known = set(modules)
    return {
        name: imported_modules(path.read_text(), name, path.name == "__init__.py", known)
        for name, (path, _) in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted, sorted by first module."""
    names = sorted(set(graph) | {b for targets in graph.values() for b in targets})
    index = {name: i for i, name in enumerate(names)}
    edges = [(index[a], index[b]) for a, targets in graph.items() for b in targets]
    rows, cols = zip(*edges, strict=True) if edges else ((), ())
    matrix = scipy.sparse.coo_matrix((np.ones(len(edges)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), []).append(name)
    return sorted(group for group in groups.values() if len(group) > 1)


def touching(package: str, found: list[list[str]]) -> list[list[str]]:
    """The circles of `found` with a module of `package`."""
    owner = {name: pkg for name, (_, pkg) in module_files().items()}
    return [circle for circle in found if any(owner.get(name) == package for name in circle)]


@pytest.fixture(scope="module")
def project_circles() -> list[list[str]]:
    return circles(import_graph())


# ------------------------------------------------------------------------------ the scan itself
def test_every_kind_of_import_is_an_edge():
    """Made-up modules: top-level, function-local, TYPE_CHECKING and relative imports are all edges,
    `from a import b` goes to the module a.b when there is one, else to a, and never to a parent."""
    known = {"pkg", "pkg.env", "pkg.types", "pkg.dynamics", "pkg.sub", "pkg.sub.deep", "_sibling"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "import numpy\n"
        "from pkg.types import State\n"  # a name in a module: that module
        "from pkg import dynamics\n"  # a module: that module, not pkg's __init__
        "if TYPE_CHECKING:\n"
        "    from pkg.env import Env\n"
        "def f():\n"
        "    from .. import other\n"  # relative, two levels up from pkg.sub.deep's package
        "    import _sibling\n"
    )
    assert imported_modules(source, "pkg.sub.deep", False, known) == {
        "pkg.types",
        "pkg.dynamics",
        "pkg.env",
        "pkg",  # `from .. import other` from pkg.sub: `other` is no module of pkg, so pkg's __init__
        "_sibling",
    }
    assert imported_modules("from . import deep\nfrom .deep import x\n", "pkg.sub", True, known) == {
        "pkg.sub.deep"
    }
    assert imported_modules("import pkg.sub.deep.name\nimport pkg\n", "pkg", True, known) == {"pkg.sub.deep"}


def test_circles_are_the_strongly_connected_components():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"a"}}
    assert circles(graph) == [["a", "b", "c"], ["e", "f"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert circles({}) == []


def test_the_graph_sees_known_imports():
    """On the real tree: a top-level import, a function-local one and a script's sibling."""
    graph = import_graph()
    assert "hivex_jax.envs.wind_farm_control.types" in graph["hivex_jax.envs.wind_farm_control.env"]
    assert "hivex_jax.bench" in graph["hivex_jax.cli"]  # inside `_dispatch`
    assert "_jax_setup" in graph["dbr_behaviour_cloning"]
    assert set(STRICT_PACKAGES) <= set(PACKAGES)


# ------------------------------------------------------------------------------------ the rule
@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circles(package, project_circles):
    found = touching(package, project_circles)
    if package not in STRICT_PACKAGES:
        assert found, f"{package} has no import circle any more: add it to STRICT_PACKAGES"
        pytest.skip(f"{package} is not checked yet (STRICT_PACKAGES); its circles: {show(found)}")
    assert not found, f"import circles in {package} (move what they share down a module): {show(found)}"


def show(found: list[list[str]]) -> str:
    return "; ".join(" <-> ".join(circle) for circle in found)
