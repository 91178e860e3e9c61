"""HIVEX's published §3 tables as package data: values hand-copied from the reference, and the shape."""

import os
from pathlib import Path

import pytest

from hivex_jax.eval.hivex_extract import extract
from hivex_jax.eval.hivex_published import load_published, published_table

#: the Markdown transcription the package data was extracted from (not part of the repository)
REFERENCE = Path(os.environ.get("HIVEX_REFERENCE_MD", "HIVEX_REFERENCE_MD is not set"))

#: env -> (task ids, level keys) of the reference's §3 tables
SHAPE = {
    "WindFarmControl-v0": (2, [str(p) for p in range(9)]),
    "WildfireResourceManagement-v0": (3, [str(k) for k in range(1, 11)]),
    "DroneBasedReforestation-v0": (7, [str(k) for k in range(1, 11)]),
    "OceanPlasticCollection-v0": (4, ["none"]),
    "AerialWildfireSuppression-v0": (9, [str(k) for k in range(1, 11)]),
}


@pytest.mark.parametrize(
    "env_id, kind, statistic, task, level, value",
    [
        ("WindFarmControl-v0", "test_mean", None, "0", "0", 4605.9),
        ("WindFarmControl-v0", "best_run", None, "1", "7", 4668.5),
        ("WildfireResourceManagement-v0", "test_mean", None, "0", "4", 169.6),
        ("WildfireResourceManagement-v0", "train_final", None, "2", "3", 1103.2),
        (
            "WildfireResourceManagement-v0",
            "stat_test_mean",
            "Reward for Moving Resources to Self",
            "0",
            "1",
            0.265,
        ),
        ("DroneBasedReforestation-v0", "test_mean", None, "4", "1", -0.022),
        ("DroneBasedReforestation-v0", "train_mean", None, "6", "7", 4.17),
        ("DroneBasedReforestation-v0", "stat_test_mean", "Furthest Distance Explored", "6", "10", 142.0),
        ("OceanPlasticCollection-v0", "test_mean", None, "3", "none", -2.430),
        ("OceanPlasticCollection-v0", "best_run", None, "0", "none", 823.3),
        ("AerialWildfireSuppression-v0", "test_mean", None, "8", "2", -10.271),
        ("AerialWildfireSuppression-v0", "stat_test_mean", "Crash Count", "7", "9", 0.424),
    ],
)
def test_values_match_the_reference_tables(env_id, kind, statistic, task, level, value):
    table = published_table(env_id, kind, statistic)
    assert table["rows"][task][level] == pytest.approx(value, abs=1e-9)


def test_every_env_task_and_level_is_present():
    envs = load_published()["envs"]
    assert set(envs) == set(SHAPE)
    for env_id, (num_tasks, levels) in SHAPE.items():
        env = envs[env_id]
        tasks = [str(t) for t in range(num_tasks)]
        assert sorted(env["task_names"], key=int) == tasks, env_id
        assert env["levels"] == levels, env_id
        kinds = [t["kind"] for t in env["tables"]]
        for kind in ("test_mean", "train_mean", "train_final", "best_run"):
            assert kinds.count(kind) == 1, (env_id, kind)
            assert sorted(published_table(env_id, kind)["rows"], key=int) == tasks, (env_id, kind)
        assert published_table(env_id, "stat_test_mean", "Environment/Episode Length") is not None
        for table in env["tables"]:
            if table["kind"] == "per_run":
                continue
            assert set(table["rows"]) <= set(tasks), (env_id, table["title"])
            for row in table["rows"].values():
                assert list(row) == levels, (env_id, table["title"])


def test_subtask_only_statistics_and_the_one_line_statistic():
    dbr = "DroneBasedReforestation-v0"
    assert list(published_table(dbr, "stat_test_mean", "Highest Potential Soild Found")["rows"]) == ["4"]
    assert list(published_table("WindFarmControl-v0", "stat_test_mean", "Avoid Damage Reward")["rows"]) == [
        "1"
    ]
    # "Stat `Save Location Count`: 0.0 for every task and level." becomes the full 7 x 10 grid of zeros
    save = published_table(dbr, "stat_test_mean", "Save Location Count")
    assert len(save["rows"]) == 7 and all(v == 0.0 for row in save["rows"].values() for v in row.values())
    per_run = published_table("WindFarmControl-v0", "per_run")
    assert per_run["cell"] == {"task": "0", "level": "0"}
    assert per_run["rows"]["2"]["test mean (all summaries)"] == pytest.approx(4611.6)
    assert per_run["rows"]["mean"]["test mean (all summaries)"] == pytest.approx(4605.9)


def test_extractor_on_a_tiny_reference():
    text = """intro
## 3. Reported baseline results
### 3.4 Ocean Plastic Collection

**Test mean cumulative episode reward (average over 3 test runs, seed 6000)**

| task | value |
|---|---|
| 0 Plastic Collection (main) | 760.2 |
| 1 Find Highest Polluted Area | -1,972.5 |

Stat `Save Location Count`: 2.5 for every task and level.

## 4. Scalability
**Test mean cumulative episode reward (ignored: outside §3)**
"""
    data = extract(text)
    opc = data["envs"]["OceanPlasticCollection-v0"]
    assert opc["levels"] == ["none"]
    assert opc["task_names"] == {"0": "Plastic Collection (main)", "1": "Find Highest Polluted Area"}
    test_mean, save = opc["tables"]
    assert test_mean["kind"] == "test_mean" and test_mean["statistic"] == "Environment/Cumulative Reward"
    assert test_mean["rows"] == {"0": {"none": 760.2}, "1": {"none": -1972.5}}
    assert save["statistic"] == "Save Location Count"
    assert save["rows"] == {"0": {"none": 2.5}, "1": {"none": 2.5}}


@pytest.mark.skipif(not REFERENCE.is_file(), reason="set HIVEX_REFERENCE_MD to the reference's path")
def test_committed_json_is_what_the_extractor_makes_of_the_reference():
    data = extract(REFERENCE.read_text())
    assert data == load_published()
