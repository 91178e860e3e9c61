"""`baselines.studies.study`, the resumable cells -> train -> evaluate -> results harness the results page,
the suite table, the memorisation probe and the messages demo run on: hand-made cells whose training writes
eval.json (no training, no jax)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from baselines.studies.study import ROOT, CellError, ResultsFile, StudyCell, run_cells, train_args


def _cells(tmp_path: Path, calls: list[str], fail: str | None = None) -> list[StudyCell]:
    """Cells a, b, c: training writes eval.json (cell `fail`'s writes nothing); evaluation returns a row."""

    def train(name: str, resume: bool) -> None:
        calls.append(f"train {name}{' resumed' if resume else ''}")
        if name != fail:
            (tmp_path / name).mkdir(parents=True, exist_ok=True)
            (tmp_path / name / "eval.json").write_text("{}")

    def evaluate(name: str) -> dict:
        calls.append(f"evaluate {name}")
        return {"score": ord(name)}

    return [
        StudyCell(
            key=name,
            run_dir=tmp_path / name,
            train=lambda resume, name=name: train(name, resume),
            evaluate=lambda name=name: evaluate(name),
        )
        for name in "abc"
    ]


def test_cells_run_once_and_their_rows_are_written_as_they_go(tmp_path):
    calls: list[str] = []
    results = ResultsFile(tmp_path / "results.json", {"setting": 1})
    reports = []
    failed = run_cells(_cells(tmp_path, calls), results, report=lambda i, c, d: reports.append((i, c.key, d)))
    assert failed == [] and calls == [
        "train a",
        "evaluate a",
        "train b",
        "evaluate b",
        "train c",
        "evaluate c",
    ]
    assert [(i, key, d.train.split(" in ")[0], d.evaluate.split(" in ")[0]) for i, key, d in reports] == [
        (1, "a", "trained", "evaluated"),
        (2, "b", "trained", "evaluated"),
        (3, "c", "trained", "evaluated"),
    ]
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["setting"] == 1 and sorted(record["cells"]) == ["a", "b", "c"]
    assert record["cells"]["b"]["score"] == ord("b") and {"train_s", "eval_s"} <= set(record["cells"]["b"])
    # run again: a trained cell with its row is neither trained nor evaluated; a lost row is re-evaluated
    del record["cells"]["b"]
    (tmp_path / "results.json").write_text(json.dumps(record))
    calls.clear()
    again = ResultsFile(tmp_path / "results.json", {"setting": 1})
    run_cells(_cells(tmp_path, calls), again)
    assert calls == ["evaluate b"] and sorted(again.record["cells"]) == ["a", "b", "c"]
    # a results file written with other settings is refused, not mixed
    with pytest.raises(CellError, match=r"other settings \(setting: \[1\] vs \[2\]\)"):
        ResultsFile(tmp_path / "results.json", {"setting": 2})


def test_a_cell_whose_training_ends_unfinished_fails_and_the_others_go_on(tmp_path):
    calls: list[str] = []
    cells = _cells(tmp_path, calls, fail="b")
    with pytest.raises(CellError, match="training of b ended unfinished"):
        run_cells(cells)
    assert calls == ["train a", "evaluate a", "train b"]
    calls.clear()
    errors = []
    failed = run_cells(cells, keep_going=True, report=lambda i, c, d: errors.append(isinstance(d, CellError)))
    assert [c.key for c in failed] == ["b"] and errors == [False, True, False]
    # no results file: evaluation runs unless the cell says its result is there (`evaluated`)
    assert calls == ["evaluate a", "train b", "train c", "evaluate c"]


def test_train_args_fresh_and_resumed(tmp_path):
    run_dir = tmp_path / "out" / "cell"
    fresh = train_args(run_dir, "configs/x.yaml", ["a=1", "b=2"], resume=False, resume_settings=["b=2"])
    assert fresh == ["train", "--no-progress", "--config", "configs/x.yaml", "a=1", "b=2"] + [
        f"out_dir={tmp_path / 'out'}",
        "name=cell",
    ]
    resumed = train_args(
        run_dir, "configs/x.yaml", ["a=1"], resume=True, resume_settings=["b=2"], progress=True
    )
    assert resumed == ["train", "--resume", str(run_dir), "b=2"]


def test_scripts_are_thin_command_lines():
    """Library code lives in the packages: no script is over 300 lines."""
    long = {
        p.name: n for p in (ROOT / "scripts").glob("*.py") if (n := len(p.read_text().splitlines())) > 300
    }
    assert long == {}


def test_baselines_modules_stay_small():
    """No module of `baselines/` (extensions included) is over 350 lines."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "baselines").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 350
    }
    assert long == {}


#: loaders that run a file by its path instead of importing a module
PATH_LOADERS = {"spec_from_file_location", "SourceFileLoader", "run_path", "load_source"}
#: the tests that may: what they load is no script's library code
LOADS_BY_PATH = {
    # runs each documented `python scripts/x.py ...` command line as the shell would (as __main__), up to
    # its argument parser
    "tests/docs/test_doc_snippets.py": {"run_path"},
}


def test_no_test_loads_a_script_by_path():
    """Tests import library code from the packages and run scripts only as commands (their own process):
    no test loads a file by its path or imports a script's module."""
    scripts = {p.stem for p in (ROOT / "scripts").glob("*.py")}
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text())
        loaders = {
            node.attr if isinstance(node, ast.Attribute) else node.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute | ast.Name)
            and (node.attr if isinstance(node, ast.Attribute) else node.id) in PATH_LOADERS
        } - LOADS_BY_PATH.get(name, set())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            node.module.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
        }
        if loaders or imported & scripts:
            found[name] = sorted(loaders | (imported & scripts))
    assert found == {}


def test_memorisation_probe_command_line_parses():
    """scripts/memorisation_probe.py --help in its own process (the others' commands run in their tests)."""
    script = ROOT / "scripts" / "memorisation_probe.py"
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "--pools" in done.stdout, done.stderr


def test_the_ppo_core_stays_lean():
    """`make_train` at most 200 lines with at most 12 branches, and every `mappo_<env>.yaml` at most 5 lines
    (its IPPO twin plus what MAPPO changes)."""
    import ast

    tree = ast.parse((ROOT / "baselines" / "core" / "ppo.py").read_text())
    (make_train,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "make_train"]
    branches = [n for n in ast.walk(make_train) if isinstance(n, (ast.If, ast.IfExp, ast.Match))]
    assert make_train.end_lineno - make_train.lineno + 1 <= 200 and len(branches) <= 12
    long = {
        p.name: n
        for p in (ROOT / "configs").glob("mappo_*.yaml")
        if (n := len(p.read_text().splitlines())) > 5
    }
    assert long == {}
