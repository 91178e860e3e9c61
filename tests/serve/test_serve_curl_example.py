"""docs/serve.md's curl example stays true: its request bodies (the env description, the reset, the
all-left step) played through the app in-process, and what the description says option 1 of
WindFarmControl's `rotate` branch means is what the env does with it (the turbines turn
counter-clockwise). The grade route the example ends with is tested with real HTTP in
test_serve_http.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from starlette.testclient import TestClient  # noqa: E402

from hivex_jax.serve.app import ServeConfig, create_app  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"
STEP_ACTION = """print([{"discrete": [1]}] * 8)"""  # the example's action, built by python -c


def _curl_block() -> str:
    """The ```bash block of docs/serve.md that plays an episode with curl."""
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if "curl -s localhost:8000/reset" in b]
    return block


def _facing_degrees(reply: dict) -> np.ndarray:
    facing = np.array([agent["fields"]["facing"] for agent in reply["observation"]["agents"]])
    return np.degrees(np.arctan2(facing[:, 1], facing[:, 0]))


def test_the_curl_example_plays_as_written_and_left_turns_counter_clockwise():
    block = _curl_block()
    (env_id,) = re.findall(r"curl -s localhost:8000/envs/(\S+)", block)
    (reset_body,) = re.findall(r"/reset -H 'content-type: application/json' \\\n\s*-d '(\{.*?\})'", block)
    steps = int(re.search(r"for t in \$\(seq (\d+)\)", block)[1])
    assert STEP_ACTION in block and "/grade/$S" in block and "-X DELETE localhost:8000/session/$S" in block
    action = [{"discrete": [1]}] * 8

    client = TestClient(create_app(ServeConfig()))
    described = client.get(f"/envs/{env_id}").json()
    (rotate,) = described["action"]["meanings"]["discrete"]
    assert rotate["branch"] == "rotate" and rotate["options"][1].startswith("left")
    assert len(described["agent_ids"]) == len(action)  # the example's 8 turbines

    first = client.post("/reset", json=json.loads(reset_body))
    assert first.status_code == 200, first.text
    session = first.json()["session_id"]
    before = _facing_degrees(first.json())
    for t in range(steps):
        reply = client.post("/step", json={"session_id": session, "action": action})
        assert reply.status_code == 200, reply.text
        if t == 0:  # every turbine turned left: its facing angle grew (counter-clockwise)
            turned = (_facing_degrees(reply.json()) - before + 180.0) % 360.0 - 180.0
            assert np.all(turned > 0), turned
    assert reply.json()["done"] and reply.json()["info"]["step"] == steps  # options.max_steps = 20
    closed = client.delete(f"/session/{session}").json()
    assert closed == {"session_id": session, "closed": True, "length": steps}
