"""hivex_jax/serve/ stays split by role: every module at most 450 lines, and the modules' imports of each
other (those inside functions included, read with `ast`) form no circle."""

from __future__ import annotations

import ast
from pathlib import Path

SERVE = Path(__file__).resolve().parents[2] / "hivex_jax" / "serve"
MAX_LINES = 450


def serve_imports(path: Path) -> set[str]:
    """The hivex_jax.serve modules `path` imports (by module name), wherever the import statement is."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found.update(n.split(".")[2] for n in names if n.startswith("hivex_jax.serve."))
    return found & {p.stem for p in SERVE.glob("*.py")}


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (module -> modules it imports), or None."""
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        for child in sorted(graph.get(module, ())):
            if state.get(child) == "open":
                return path + [module, child]
            if child not in state and (found := visit(child, path + [module])):
                return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module, [])):
            return found
    return None


def test_the_circle_check_sees_a_circle():
    assert circle({"app": {"asgi"}, "asgi": {"openenv"}, "openenv": {"app"}}) == [
        "app",
        "asgi",
        "openenv",
        "app",
    ]
    assert circle({"app": {"server"}, "server": {"sessions"}, "asgi": {"app"}}) is None


def test_serve_modules_are_short_and_import_no_circle():
    lengths = {p.name: len(p.read_text().splitlines()) for p in SERVE.glob("*.py")}
    assert max(lengths.values()) <= MAX_LINES, {k: v for k, v in lengths.items() if v > MAX_LINES}
    graph = {p.stem: serve_imports(p) for p in SERVE.glob("*.py")}
    assert "openenv" in graph["app"] and "app" in graph["asgi"]  # the scan sees the imports it checks
    assert circle(graph) is None, circle(graph)
