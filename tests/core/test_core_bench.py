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


def _fake_peer(module: str) -> tuple:
    """A peer entry whose runner is Wind Farm Control with 4 turbines (agent and env ratios differ)."""
    return (
        "FakePeer-v0",
        lambda batch, steps: bench.hivex_runner("WindFarmControl-v0", batch, steps, num_agents=4),
        module,
        "pip install fake-peer",
    )


def test_bench_peer_row_holds_the_peer_and_both_ratios(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(bench.PEERS, "fake", _fake_peer("json"))
    out = tmp_path / "peer.json"
    argv = ["--env", "WindFarmControl-v0", "--batch-sizes", "2", "--steps", "3", "--repeats", "1"]
    assert bench.main(argv + ["--peer", "fake", "--json", str(out), "num_agents=2"]) == 0
    (row,) = json.loads(out.read_text())["results"]
    assert row["peer"]["env"] == "FakePeer-v0" and row["peer"]["num_agents"] == 4
    peer = row["peer"]
    assert row["ratio_env_steps"] == pytest.approx(row["env_steps_per_s"] / peer["env_steps_per_s"])
    assert row["ratio_agent_steps"] == pytest.approx(row["agent_steps_per_s"] / peer["agent_steps_per_s"])
    printed = capsys.readouterr().out
    assert "ratio to FakePeer" in printed and "FakePeer-v0" in printed


def test_bench_peer_without_its_package_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setitem(bench.PEERS, "fake", _fake_peer("no_such_peer_package_xyz"))
    assert bench.main(["--env", "WindFarmControl-v0", "--peer", "fake"]) == 2
    err = capsys.readouterr().err
    assert "no_such_peer_package_xyz" in err and "pip install fake-peer" in err
    assert bench.main(["--env", "WindFarmControl-v0", "--peer", "nope"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_bench_bare_peer_flag_means_mpe():
    args = bench._parse(["--peer"])
    assert args.peer == "mpe" and bench.PEERS[args.peer][0] == bench.PEER_ID
    assert bench._parse([]).peer is None


def test_craftax_pixels_peer_steps_and_resets():
    """The camera peer runs through Craftax's own step/reset (skipped where craftax is not installed)."""
    pytest.importorskip("craftax")
    import jax

    init, run, num_agents = bench.craftax_pixels_runner(batch=2, steps=3)
    carry = jax.jit(init)(jax.random.PRNGKey(0))
    state, key, acc = jax.jit(run)(carry)
    assert num_agents == 1 and jax.numpy.isfinite(acc)
    assert int(state.timestep[0]) == 3  # three steps taken, no episode of a random agent ends that fast
