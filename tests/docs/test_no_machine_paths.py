"""The docs name no folder of one machine: a command line reads `out_dir=runs/<name>`, not the temporary
or home folder it happened to run in (README.md and every Markdown page under docs/)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
#: an absolute path into a machine's own folders (`~/.cache/...`, a documented default, is not one)
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:tmp|root|home|work|Users|mnt|scratch|var/folders)/[\w.-]*")


def machine_paths(text: str) -> list[str]:
    """The machine-specific paths in `text`, in order."""
    return MACHINE_PATH.findall(text)


def test_the_pattern_finds_machine_paths():
    text = "hivex train out_dir=/tmp/h18 x\nsee /home/me/runs and /work/main/runs, `~/.cache/hivex_jax`\n"
    assert machine_paths(text) == ["/tmp/h18", "/home/me", "/work/main"]
    assert machine_paths("out_dir=runs/wfc docs/envs/x.md https://example.org/home/page") == []


def test_no_page_names_a_machine_path():
    assert len(PAGES) >= 15  # the glob found the pages
    found = [
        f"{path.relative_to(ROOT)}:{n}: {hit}"
        for path in PAGES
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for hit in machine_paths(line)
    ]
    assert not found, "machine-specific paths in the docs (write what they meant, e.g. runs/<name>):\n" + (
        "\n".join(found)
    )
