"""`hivex bench`: the JSON record it writes, the pregenerated-pool path and bad input."""

import json

import pytest

from hivex_jax import bench


def test_bench_writes_a_record_per_batch_size(tmp_path, capsys):
    out = tmp_path / "wfc.json"
    argv = ["--env", "WindFarmControl-v0", "--batch-sizes", "1,3", "--steps", "4", "--repeats", "2"]
    argv += ["--pregenerate", "5", "--json", str(out), "num_agents=2"]
    assert bench.main(argv) == 0
    record = json.loads(out.read_text())
    assert record["pregenerate"] == 5 and record["autoreset"] is True
    assert record["overrides"] == {"num_agents": 2}
    assert [row["batch"] for row in record["results"]] == [1, 3]
    for row in record["results"]:
        assert len(row["run_s_all"]) == 2 and row["run_s_median"] > 0
        assert row["num_agents"] == 2
        # agent-steps are env-steps times the agent count, both from the same timing
        assert row["agent_steps_per_s"] == pytest.approx(2 * row["env_steps_per_s"])
    assert "WindFarmControl-v0" in capsys.readouterr().out


def test_bench_rejects_malformed_overrides_and_unknown_envs(capsys):
    assert bench.main(["--env", "WindFarmControl-v0", "num_agents"]) == 2
    assert "key=value" in capsys.readouterr().err
    assert bench.main(["--env", "WindFarmControll-v0"]) == 2
    assert "Did you mean: WindFarmControl-v0" in capsys.readouterr().err  # the closest registered name
