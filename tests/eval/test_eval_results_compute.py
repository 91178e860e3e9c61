"""The results page's compute section: our wall time and training agent steps per env, from the records,
beside HIVEX's one training run per cell."""

from __future__ import annotations

from hivex_jax.eval.hivex_cells import HIVEX_ENVS, Cell
from hivex_jax.eval.results_page import compute_lines, render_page

WFC, AWS = "WindFarmControl-v0", "AerialWildfireSuppression-v0"


def _record(env_steps_per_seed: int, seeds: int, compile_s: float, train_s: float, eval_s: float, hivex_s):
    record = {
        "summary": {"compile_s": compile_s, "train_s": train_s, "eval_s": eval_s},
        "held_out": {"env_steps_per_seed": env_steps_per_seed, "num_seeds": seeds},
    }
    if hivex_s is not None:
        record["hivex"] = {"wall_s": hivex_s}
    return record


def test_compute_sums_wall_and_agent_steps_per_env_and_in_total():
    records = {
        Cell(WFC, 0, 0): _record(1000, 3, 10.0, 100.0, 5.0, 45.0),  # 160 s
        Cell(WFC, 0, 1): _record(2000, 3, 20.0, 200.0, 10.0, None),  # 230 s, no HIVEX-protocol part
        Cell(AWS, 0, 1): _record(500, 2, 1800.0, 1800.0, 0.0, 0.0),  # 3600 s
        Cell(AWS, 0, 2): {"held_out": {"env_steps_per_seed": 1, "num_seeds": 1}},  # no summary: left out
    }
    lines = compute_lines(records)
    wfc_agents, aws_agents = HIVEX_ENVS[WFC].agents, HIVEX_ENVS[AWS].agents
    wfc_ours = (1000 * 3 + 2000 * 3) * wfc_agents
    wfc_theirs = 2 * HIVEX_ENVS[WFC].train_agent_steps
    aws_ours, aws_theirs = 500 * 2 * aws_agents, HIVEX_ENVS[AWS].train_agent_steps
    assert f"| Wind Farm Control | 2 | {390 / 3600:.2f} | {wfc_ours:,} | {wfc_theirs:,} | " in "\n".join(
        lines
    )
    assert f"| Aerial Wildfire Suppression | 1 | 1.00 | {aws_ours:,} | {aws_theirs:,} | " in "\n".join(lines)
    total = (wfc_ours + aws_ours) / (wfc_theirs + aws_theirs)
    assert lines[-2] == (
        f"| all | 3 | {(390 + 3600) / 3600:.2f} | {wfc_ours + aws_ours:,} | {wfc_theirs + aws_theirs:,} "
        f"| {total:.2f} |"
    )
    assert not any(HIVEX_ENVS[e].name in line for line in lines for e in HIVEX_ENVS if e not in (WFC, AWS))


def test_no_records_no_section_and_the_page_shows_it():
    assert compute_lines({}) == []
    page = render_page(
        {}, "cmd", compute=compute_lines({Cell(WFC, 0, 0): _record(10, 1, 1.0, 1.0, 1.0, 1.0)})
    )
    assert "## Compute" in page and page.index("## Cells not run") < page.index("## Compute")
