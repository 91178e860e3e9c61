"""The docs name no folder of one machine: a command line reads `out_dir=runs/<name>`, not the temporary
or home folder it happened to run in (README.md and every Markdown page under docs/); nor do the committed
result records under docs/data/ (a record names its run folder relative to the repository root,
`result_records.portable_path`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
#: the committed result records (docs/data/results/<study>/...json) and any other data file beside them
RECORDS = sorted(path for path in (ROOT / "docs" / "data").rglob("*") if path.suffix in (".json", ".csv"))
#: an absolute path into a machine's own folders (`~/.cache/...`, a documented default, is not one)
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:tmp|root|home|work|Users|mnt|scratch|var/folders)/[\w.-]*")


def machine_paths(text: str) -> list[str]:
    """The machine-specific paths in `text`, in order."""
    return MACHINE_PATH.findall(text)


def test_the_pattern_finds_machine_paths():
    text = "hivex train out_dir=/tmp/h18 x\nsee /home/me/runs and /work/main/runs, `~/.cache/hivex_jax`\n"
    assert machine_paths(text) == ["/tmp/h18", "/home/me", "/work/main"]
    assert machine_paths("out_dir=runs/wfc docs/envs/x.md https://example.org/home/page") == []


def hits_in(paths: list[Path]) -> list[str]:
    """`path:line: hit` for every machine path in the text of `paths`."""
    return [
        f"{path.relative_to(ROOT)}:{n}: {hit}"
        for path in paths
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for hit in machine_paths(line)
    ]


def test_no_page_names_a_machine_path():
    assert len(PAGES) >= 15  # the glob found the pages
    found = hits_in(PAGES)
    assert not found, "machine-specific paths in the docs (write what they meant, e.g. runs/<name>):\n" + (
        "\n".join(found)
    )


def test_no_record_names_a_machine_path():
    assert len([p for p in RECORDS if p.suffix == ".json"]) >= 100  # the glob found the records
    found = hits_in(RECORDS)
    assert not found, "machine-specific paths in the records (rewrite them relative to the repository):\n" + (
        "\n".join(found[:20])
    )
