"""baselines.studies.config_walk: the stops and returns of a config walk, counted by hand on made-up
reads, and the recorder on a real config (every field read once, by this test's caller, none after)."""

from baselines.config import load_config  # noqa: E402
from baselines.core.program_cache import compute_key  # noqa: E402
from baselines.run.runner import scale_hint  # noqa: E402
from baselines.studies import config_walk
from baselines.studies.config_walk import Read, Stop, recording, stops_of, summary_of


def _reads(*modules: str) -> list[Read]:
    return [Read(m, "f", f"field_{i}") for i, m in enumerate(modules)]


def test_consecutive_reads_of_one_module_are_one_stop_and_a_revisit_is_a_return():
    reads = _reads("a", "a", "b", "a", "c", "b", "b")
    stops = stops_of(reads)
    assert [s.module for s in stops] == ["a", "b", "a", "c", "b"]
    assert [s.is_return for s in stops] == [False, False, True, False, True]
    assert stops[0] == Stop("a", ("field_0", "field_1"), False)
    summary = summary_of(reads)
    assert (summary["stops"], summary["returns"], summary["modules"]) == (5, 2, 3)
    assert summary["return_share"] == 2 / 5


def test_a_walk_straight_down_has_no_returns_and_a_field_read_twice_in_a_stop_is_listed_once():
    reads = [Read("a", "f", "lr"), Read("a", "g", "lr"), Read("b", "f", "gamma"), Read("c", "f", "lr")]
    assert stops_of(reads) == [
        Stop("a", ("lr",), False),
        Stop("b", ("gamma",), False),
        Stop("c", ("lr",), False),
    ]
    assert summary_of(reads)["readers"] == 4  # a.f, a.g, b.f, c.f


def test_recording_sees_field_reads_of_any_config_and_stops_when_left():
    config = load_config(None, ["num_envs=4"])
    reads: list[Read] = []
    with recording(reads):
        assert config.num_envs == 4
        assert config.steps_per_update == 4 * config.num_steps  # a derived size is one read
        config.replace(lr=0.5)  # a copy's construction reads every field (for whoever asked)
    config.gamma  # noqa: B018  (outside: not recorded)
    fields = [r.field for r in reads]
    assert fields[:3] == ["num_envs", "steps_per_update", "num_steps"]
    assert "gamma" in fields[3:] and "lr" in fields[3:]  # the replace's
    assert fields.count("gamma") == fields[3:].count("gamma")
    assert {r.module for r in reads} == {"?"}  # read from this test, not a trainer module


def test_a_read_counts_for_the_trainer_module_that_asked_not_the_config_class():
    config = load_config(None, [])
    reads: list[Read] = []
    with recording(reads):
        compute_key(config)  # to_dict() in the config class, dataclasses.asdict: the key's reads
        scale_hint(config, "gpu")
    key_reads, hint_reads = reads[: len(config.to_dict())], reads[len(config.to_dict()) :]
    assert {r.module for r in key_reads} == {"baselines.core.program_cache"}
    assert sorted(r.field for r in key_reads) == sorted(config.to_dict())  # every field once
    assert hint_reads[:2] == [
        Read("baselines.run.runner", "scale_hint", "num_envs"),
        Read("baselines.run.runner", "scale_hint", "num_seeds"),
    ]
    assert {r.module for r in hint_reads} == {"baselines.run.runner"}
    assert "baselines.config.schema" in config_walk.PASS_THROUGH
