"""CITATION.cff (what GitHub's "Cite this repository" reads) agrees with pyproject.toml and README's
BibTeX for HIVEX."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_the_citation_file_matches_the_package_and_the_readme():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == project["version"] and cff["license"] == project["license"]
    assert cff["authors"] and all("name" in a or "family-names" in a for a in cff["authors"])
    (hivex,) = cff["references"]
    arxiv = hivex["identifiers"][0]["value"].removeprefix("arXiv:")
    readme = (REPO / "README.md").read_text()
    bibtex = re.search(r"```bibtex\n(.*?)```", readme, re.S).group(1)
    assert f"eprint        = {{{arxiv}}}" in bibtex and hivex["url"].endswith(arxiv)
    assert hivex["title"] in bibtex.replace("{HIVEX}", "HIVEX")
