"""Runs of a HIVEX cell at a larger budget on docs/hivex_results.md (`hivex_jax.eval.results_variants`):
the table beside the comparable cell, the evidence table and the findings, rendered from hand-made
records; the records sit beside the cells' without counting as cells; `record-variant`'s config changes."""

import json

from baselines.studies.hivex_configs import config_changes
from hivex_jax.eval import hivex_records, results_page, results_sections, results_variants
from hivex_jax.eval.hivex_cells import Cell

DBR = "DroneBasedReforestation-v0"


def _summary(mean, ci=0.0, seeds=1):
    return {"mean": mean, "ci95": ci, "iqm": mean, "num_seeds": seeds, "num_worlds": 2}


def _held_out(greedy, stochastic, scripted, random, seeds):
    return {
        "num_seeds": seeds,
        "policies": {
            "greedy": {"summary": _summary(greedy, 5.0, seeds)},
            "stochastic": {"summary": _summary(stochastic, 5.0, seeds)},
            "scripted": {"summary": _summary(scripted)},
            "random": {"summary": _summary(random)},
        },
    }


EVENT_NAMES = ("seed pick-up", "paid pick-up", "drop", "valid drop", "drop success")


def _events(counts):
    """Evidence events: each of `EVENT_NAMES`, `counts[name]` as (per_episode, episodes_with, first_step)."""
    keys = ("per_episode", "episodes_with", "first_step")
    none = (0.0, 0.0, float("nan"))
    return {n: dict(zip(keys, counts.get(n, none), strict=True)) for n in EVENT_NAMES}


def _variant(task=2, greedy=300.0, stochastic=250.0, evidence=True):
    record = {
        "format_version": 1,
        "cell": {"env_id": DBR, "task": task, "level": 1},
        "held_out": _held_out(greedy, stochastic, 400.0, 0.0, 1),
        "variant": {"name": "x4", "changes": {"num_seeds": [3, 1], "total_env_steps": [409600, 1638400]}},
    }
    if evidence:
        record["evidence"] = {
            "level": 1,
            "worlds": "6000:6032",
            "gammas": [0.99, 0.999],
            "policies": {
                "greedy": {
                    "return": 300.0,
                    "discounted_returns": {"0.99": 90.0, "0.999": 250.0},
                    "events": _events(
                        {
                            "paid pick-up": (3.0, 1.0, 20.0),
                            "drop": (2.5, 0.75, 50.0),
                            "drop success": (2.5, 0.75, 50.0),  # = drop in every row: no column of its own
                        }
                    ),
                },
                "random": {
                    "return": 0.04,
                    "discounted_returns": {"0.99": 0.5, "0.999": 0.1},
                    "events": _events({"paid pick-up": (0.01, 0.01, 200.0)}),
                },
            },
        }
    return record


def test_changes_text_names_each_key_and_the_budget_factor():
    text = results_variants.changes_text({"total_env_steps": [409600, 1638400], "num_seeds": [3, 1]})
    assert text == "num_seeds 3 → 1; total_env_steps 409,600 → 1,638,400 (×4)"
    assert results_variants.changes_text({"gamma": [0.99, 0.999]}) == "gamma 0.99 → 0.999"
    assert results_variants.changes_text({}) == "none"


def test_learned_text_uses_a_tenth_of_the_random_to_scripted_span():
    # normalised score of greedy: (greedy - random) / (scripted - random) = greedy / 400
    assert results_variants.learned_text(_variant(greedy=300.0)) == "yes (0.75)"
    assert results_variants.learned_text(_variant(greedy=40.0)) == "yes (0.10)"
    assert results_variants.learned_text(_variant(greedy=20.0)) == "no (0.05)"
    no_scale = _variant()
    no_scale["held_out"]["policies"]["scripted"]["summary"]["mean"] = -1.0  # scripted below random
    assert results_variants.learned_text(no_scale) == "—"
    assert results_variants.learned_text(None) == "—"


def test_variant_table_puts_the_variant_beside_its_comparable_cell():
    cell = Cell(DBR, 2, 1)
    results = {cell: {"held_out": _held_out(5.0, 7.0, 400.0, 0.0, 3), "hivex": None}}
    rows = results_variants.variant_table([_variant()], results)
    assert len(rows) == 3
    columns = [c.strip() for c in rows[2].strip("|").split("|")]
    assert columns[:5] == ["2", "1", "x4", "num_seeds 3 → 1; total_env_steps 409,600 → 1,638,400 (×4)", "1"]
    assert columns[5] == "300.0 / 250.0"  # one seed: the means alone
    assert columns[6] == "5.000 ± 5.000 / 7.000 ± 5.000"
    assert columns[7] == "400.0 / 0.0"
    assert columns[8] == "0.75 / 0.62"
    assert columns[9] == "yes (0.75) / no (0.01)"
    # a variant whose cell has no record: its cell's columns say so
    columns = [c.strip() for c in results_variants.variant_table([_variant()], {})[2].strip("|").split("|")]
    assert columns[6] == "—" and columns[9] == "yes (0.75) / —"


def test_evidence_table_shows_the_events_some_policy_sees():
    rows = results_variants.evidence_table([_variant()])
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    # seed pick-up, valid drop, drop success: never seen by any row, so no column
    assert head == [
        "subtask",
        "policy",
        "return",
        "discounted, γ 0.99",
        "discounted, γ 0.999",
        "paid pick-up: count (share)",
        "drop: count (share)",
        "first drop (decision)",
    ]
    # baselines first, trained policies after them, whatever the record's key order
    random_row = [c.strip() for c in rows[2].strip("|").split("|")]
    assert random_row == ["2", "random", "0.040", "0.500", "0.100", "0.01 (1%)", "0.00 (0%)", "—"]
    greedy_row = [c.strip() for c in rows[3].strip("|").split("|")]
    assert greedy_row == [
        "2",
        "trained greedy (x4)",
        "300.0",
        "90.0",
        "250.0",
        "3.00 (100%)",
        "2.50 (75%)",
        "50",
    ]
    assert results_variants.evidence_table([_variant(evidence=False)]) == []


def test_an_aws_evidence_names_its_agent_and_first_event():
    """An evidence record that names its agent and first event (as `scripts/subtask_evidence.py` writes
    now): the first-event column and the prose follow it; older DBR records read as drones and drops."""
    aws = "AerialWildfireSuppression-v0"
    record = _variant(task=5)
    record["cell"]["env_id"] = aws
    record["evidence"].update(agent="plane", first_event="water pick-up")
    for policy in record["evidence"]["policies"].values():
        policy["events"] = {"water pick-up": {"per_episode": 2.0, "episodes_with": 1.0, "first_step": 12.0}}
    rows = results_variants.evidence_table([record])
    assert rows[0].endswith("| water pick-up: count (share) | first water pick-up (decision) |")
    assert rows[3].endswith("| 2.00 (100%) | 12 |")
    text = "\n".join(results_variants.variant_lines(aws, [record], {}))
    assert "per plane and episode (`python scripts/subtask_evidence.py --env aws`" in text
    assert "the plane-episodes with at least one" in text
    old = "\n".join(results_variants.variant_lines(DBR, [_variant()], {}))
    assert "per drone and episode (`python scripts/subtask_evidence.py --env dbr`" in old


def test_record_variant_refuses_another_envs_evidence(tmp_path):
    import pytest

    from baselines.studies.hivex_variants import variant_record

    evidence = {"env_id": "AerialWildfireSuppression-v0", "tasks": {"2": {}}}
    with pytest.raises(ValueError, match="the evidence file is of AerialWildfireSuppression-v0, the cell of"):
        variant_record(Cell(DBR, 2, 1), tmp_path, "x4", evidence)


def test_variant_lines_heading_tables_and_findings():
    assert results_variants.variant_lines(DBR, [], {}) == []
    lines = results_variants.variant_lines(
        DBR,
        [_variant(), _variant(task=3, evidence=False)],
        {},
        {3: "Why not.", 2: "Learns."},
        {"2": "Pick-up"},
    )
    text = "\n".join(lines)
    assert lines[0] == "### Subtasks at a larger budget"
    assert text.count("| x4 |") == 2
    assert "trained greedy (x4)" in text
    # findings by task, named where the names are given
    assert text.index("**Task 2 Pick-up.** Learns.") < text.index("**Task 3.** Why not.")


def test_env_section_shows_the_variants_and_records_beside_cells_are_not_cells(tmp_path):
    variant = _variant()
    path = results_variants.variant_path(tmp_path, Cell(DBR, 2, 1), "x4")
    assert path == tmp_path / DBR / "larger_budget" / "task2_level1_x4.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(variant))
    (tmp_path / DBR / "task2_level1.json").write_text(
        json.dumps(
            {"format_version": 1, "cell": variant["cell"], "held_out": _held_out(5.0, 7.0, 400.0, 0.0, 3)}
        )
    )
    assert list(hivex_records.load_records(tmp_path)) == [Cell(DBR, 2, 1)]
    loaded = results_variants.load_variants(tmp_path, DBR)
    assert [r["variant"]["name"] for r in loaded] == ["x4"]
    assert results_variants.load_variants(tmp_path, "WindFarmControl-v0") == []
    section = "\n".join(results_sections.env_section(DBR, {}, variants=loaded))
    assert "### Subtasks at a larger budget" in section
    assert section.index("### Subtasks at a larger budget") < section.index("### Logged statistics")
    # the page's cell parser (which guards against vanishing cells) reads no variant or evidence row as a cell
    assert results_page.measured_cells(section) == []
    assert "### Subtasks at a larger budget" not in "\n".join(results_sections.env_section(DBR, {}))


def test_config_changes_lists_the_learning_keys_that_differ():
    now = {"learning": {"gamma": 0.99, "num_seeds": 3, "lr": 3e-4}}
    ran = {"learning": {"gamma": 0.999, "num_seeds": 3, "lr": 3e-4, "extra": 1}}
    assert config_changes(now, ran) == {"extra": [None, 1], "gamma": [0.99, 0.999]}
    assert config_changes(now, now) == {}


def test_variant_sorting_is_by_task_then_name(tmp_path):
    for t, name in ((6, "x2"), (2, "x4"), (3, "gamma999")):
        record = _variant(task=t)
        record["variant"]["name"] = name
        path = results_variants.variant_path(tmp_path, Cell(DBR, t, 1), name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
    loaded = results_variants.load_variants(tmp_path, DBR)
    assert [(r["cell"]["task"], r["variant"]["name"]) for r in loaded] == [
        (2, "x4"),
        (3, "gamma999"),
        (6, "x2"),
    ]


def test_evidence_event_order_is_the_scripts():
    from baselines.studies import subtask_evidence

    events = [*subtask_evidence.ENVS["dbr"].events, *subtask_evidence.ENVS["aws"].events]
    assert results_variants.EVENT_ORDER == tuple(events)
