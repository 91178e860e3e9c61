"""examples/quickstart.ipynb runs top to bottom (slow: it trains the main job, shortened, and evaluates it),
and is committed without outputs."""

import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"


def test_the_notebook_is_committed_without_outputs():
    """Outputs (plots, the GIF) are made by running it; the committed file holds only the cells."""
    notebook = json.loads(NOTEBOOK.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert len(code) >= 5
    assert [cell["execution_count"] for cell in code] == [None] * len(code)
    assert [cell["outputs"] for cell in code] == [[]] * len(code)


@pytest.mark.slow  # ~2-3 min: a shortened training of the main job and a held-out evaluation
def test_the_quickstart_runs_top_to_bottom(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)  # it writes its GIF where it runs
    notebook = nbformat.read(tmp_path / NOTEBOOK.name, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=540, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    # the kernel inherits this process's environment, where tests/conftest.py set PJRT_NPROC before jax
    # started (jaxlib 0.10 can deadlock on 2-core CPUs without it)
    client.execute(env=dict(os.environ))

    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    text = "".join(output.get("text", "") for output in outputs if output.output_type == "stream")
    assert "normalised score per seed" in text
    figures = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(figures) == 3  # the rollout and one world, the learning curve, the test worlds
    assert any("image/gif" in output.get("data", {}) for output in outputs)  # the episode, inline
    gif = tmp_path / "quickstart_episode.gif"
    assert gif.read_bytes()[:6] == b"GIF89a"
