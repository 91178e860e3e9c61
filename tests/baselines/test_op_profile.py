"""The per-op profile (scripts/op_profile.py): ops grouped by the network they come from, their sources read
from the HLO text, and one traced call of a small compiled program."""

import jax
import jax.numpy as jnp
import pytest

from baselines.core.networks import Actor, Critic
from baselines.studies.op_profile import group_of, main, op_sources, profile_table

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("source", "group"),
    [
        ("jit(epochs)/vmap()/while/body/closed_call/jvp(Actor)/Encoder_0/PatchConv_0/jvp()/div", "actor"),
        ("jit(held_out_episodes)/while/body/vmap(Actor)/Encoder_0/Dense_0/dot_general", "actor"),
        ("jit(epochs)/while/body/transpose(jvp(Critic))/Encoder_0/select_n", "critic"),
        ("jit(epochs)/while/body/closed_call/jvp()/FirstConvPair/concatenate", "both first convs"),
        ("jit(held_out_episodes)/while/body/vmap(jit(_where))/select_n", "env and the rest"),
        ("jit(f)/ActorNotAModule/dot_general", "env and the rest"),
        ("", "env and the rest"),
    ],
)
def test_an_op_is_grouped_by_the_module_its_name_passes_through(source, group):
    assert group_of(source) == group


def test_an_op_without_its_own_name_takes_its_computations_or_its_operands():
    hlo = "\n".join(
        [
            "%fused_computation.3 (param_0: f32[4]) -> f32[4] {",
            '  %a = f32[4]{0} exp(%param_0), metadata={op_name="jit(f)/vmap(Critic)/exp"}',
            '  ROOT %b = f32[4]{0} add(%a, %a), metadata={op_name="jit(f)/vmap(Critic)/add"}',
            "}",
            "",
            "%fused_computation.9 (p0: f32[4], p1: f32[4]) -> f32[4] {",
            "  ROOT %dot.9 = f32[4]{0} multiply(%p0, %p1)",
            "}",
            "",
            "ENTRY %main (x: f32[4]) -> f32[4] {",
            "  %x = f32[4]{0} parameter(0)",
            "  %fusion.3 = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_computation.3",
            "  %ynn_fusion.9 = f32[4]{0} fusion(%x, %fusion.3), kind=kCustom, calls=%fused_computation.9",
            '  ROOT %dot.1 = f32[4]{0} multiply(%fusion.3, %x), metadata={op_name="jit(f)/vmap(Actor)/mul"}',
            "}",
        ]
    )
    sources = op_sources(hlo)
    assert sources["dot.1"] == ("f32[4]{0}", "jit(f)/vmap(Actor)/mul")
    assert sources["fusion.3"][0] == "f32[4]{0}" and "(Critic)" in sources["fusion.3"][1]
    assert sources["x"] == ("f32[4]{0}", "")
    # no name of its own or in its computation: its operand's that lies in a network, marked inferred
    assert sources["ynn_fusion.9"][1].startswith("~") and group_of(sources["ynn_fusion.9"][1]) == "critic"


def test_one_traced_call_splits_its_time_between_the_networks():
    obs = {"vector": jnp.ones((64, 6)), "visual": jnp.ones((64, 12, 12, 3), jnp.uint8)}
    actor, critic = Actor(1, (3,), (32, 32), (4,)), Critic((32, 32), (4,))
    params = actor.init(jax.random.PRNGKey(0), obs), critic.init(jax.random.PRNGKey(1), obs)

    def both(params, obs):
        return (
            actor.apply(params[0], obs).mean.sum()
            + critic.apply(params[1], obs).sum()
            + jnp.sum(obs["vector"])
        )

    compiled = jax.jit(both).lower(params, obs).compile()
    table = profile_table(compiled, (params, obs), top=5)
    assert table["groups"]["actor"] > 0 and table["groups"]["critic"] > 0
    assert table["total_s"] == pytest.approx(sum(table["groups"].values()))
    assert 1 <= len(table["ops"]) <= 5
    times = [row[0] for row in table["ops"]]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize("argv", [[], ["--run", "r", "--config", "c"], ["--run", "r", "--steps", "0"]])
def test_a_bad_request_is_refused_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as error:
        main(argv)
    assert error.value.code == 2
    assert "error:" in capsys.readouterr().err
