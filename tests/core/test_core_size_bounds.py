"""Sizes and numbers that cannot work are refused with one ValueError before anything is built.

Every numeric static option has documented bounds (`STATIC_BOUNDS` in the env's params.py, the env page's
table); integer EnvParams fields given numbers beyond their dtype (2**40, 1e308, inf, a 5000-digit int)
get the documented bounds error from `make`, `env.validate_params` and `stack_params`; the CLI spellings
are one line and exit 2; continuous actions follow one rule (NaN -> 0, everything clipped to [-1, 1]).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hivex_jax
from hivex_jax.cli import main
from hivex_jax.core import bounds
from hivex_jax.envs import BUNDLED_ENV_IDS
from hivex_jax.interop._common import ActionLayout, continuous_action

DOCS = Path(__file__).resolve().parents[2] / "docs" / "envs"
HUGE_INT = 10**5000  # more digits than Python will print (its 4300-digit limit)


def _raw(env_id: str):
    env, params = hivex_jax.make(env_id)
    return getattr(env, "unwrapped", env), params


def _page(env_id: str) -> str:
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", env_id.split("-")[0]).lower()
    return (DOCS / f"{name}.md").read_text()


STATIC_CASES = []
for _id in BUNDLED_ENV_IDS:
    _table = bounds.declared_static_bounds(_raw(_id)[0].params_type)
    for _name, (_lo, _hi) in _table.items():
        _step = 1 if isinstance(_lo, int) else 1.0
        for _value in (_lo - _step, _hi + _step, 10**30, 1e308, float("inf"), -float("inf"), HUGE_INT):
            STATIC_CASES.append((_id, _name, _value, _lo, _hi))


@pytest.mark.parametrize(
    ("env_id", "name", "value", "lo", "hi"),
    STATIC_CASES,
    ids=[f"{c[0].split('-')[0]}-{c[1]}-{i}" for i, c in enumerate(STATIC_CASES)],
)
def test_static_option_outside_its_bounds_is_refused_by_make_and_constructor(env_id, name, value, lo, hi):
    message = rf"{env_id}: {name} = .* is outside its bounds \[{lo:g}, {hi:g}\] \(static option\)"
    with pytest.raises(ValueError, match=message):
        hivex_jax.make(env_id, **{name: value})
    with pytest.raises(ValueError, match=message):  # the constructor itself, as the server's pools build it
        type(_raw(env_id)[0])(**{name: value})


@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_every_static_option_is_bounded_and_in_the_env_page_table(env_id):
    env, _ = _raw(env_id)
    table = bounds.declared_static_bounds(env.params_type)
    signature = inspect.signature(type(env).__init__).parameters
    page = _page(env_id)
    for name in env.static_options:
        default = signature[name].default
        if isinstance(default, (bool, str)):  # switches and model names: no size
            assert name not in table
            continue
        assert name in table, f"{env_id}: static option {name} has no STATIC_BOUNDS entry"
        lo, hi = table[name]
        assert lo <= default <= hi, (name, default, lo, hi)
        row = rf"\| `{name}` \| {lo:g} \| {hi:g} \|"
        assert re.search(row.replace(",", ""), page.replace(",", "")), f"no row {row} in the {env_id} page"


def test_camera_size_zero_and_non_numbers_are_value_errors():
    with pytest.raises(ValueError, match=r"camera_size = 0 is outside its bounds \[1, 128\]"):
        hivex_jax.make("AerialWildfireSuppression-v0", camera_size=0)
    for bad in (True, "16", 16.5, [16]):
        with pytest.raises(ValueError, match=r"camera_size must be a whole number in \[16, 32\]"):
            hivex_jax.make("DroneBasedReforestation-v0", camera_size=bad)
    with pytest.raises(ValueError, match=r"num_pebbles = 100000000 is outside its bounds \[1, 65536\]"):
        hivex_jax.make("OceanPlasticCollection-v0", num_pebbles=10**8)
    with pytest.raises(ValueError, match=r"physics_substeps = 20000 is outside its bounds \[1, 20\]"):
        hivex_jax.make("DroneBasedReforestation-v0", physics_substeps=20000)
    # a whole float is the same size (JSON and YAML may give 64.0); the env keeps an int
    env, _ = hivex_jax.make("OceanPlasticCollection-v0", num_pebbles=64.0)
    assert env.num_pebbles == 64 and isinstance(env.num_pebbles, int)


# ------------------------------------------------------------------ integer EnvParams fields
def _int_fields(env_id: str) -> list[str]:
    env, params = _raw(env_id)
    return [
        f.name
        for f in dataclasses.fields(params)
        if jnp.issubdtype(jnp.result_type(getattr(params, f.name)), jnp.integer)
        and f.name in env.param_bounds
    ]


INT_CASES = [(e, f) for e in BUNDLED_ENV_IDS for f in _int_fields(e)]
OUT_OF_RANGE = (2**40, -(2**40), 1e308, float("inf"), float("nan"), HUGE_INT)


@pytest.mark.parametrize(("env_id", "field"), INT_CASES, ids=[f"{e.split('-')[0]}-{f}" for e, f in INT_CASES])
def test_integer_field_beyond_int32_is_the_documented_value_error_from_make(env_id, field):
    for value in OUT_OF_RANGE:
        with pytest.raises(ValueError, match=rf"{env_id}: {field} = .* is outside its bounds \["):
            hivex_jax.make(env_id, **{field: value})


@pytest.mark.parametrize("env_id", BUNDLED_ENV_IDS)
def test_validate_params_and_stack_params_refuse_out_of_range_integers(env_id):
    env, params = hivex_jax.make(env_id)
    for value in OUT_OF_RANGE:
        bad = params.replace(max_steps=value)
        with pytest.raises(
            ValueError, match=rf"{env_id}: max_steps = .* is outside its bounds \[1, 1e\+06\]"
        ):
            env.validate_params(bad)
        with pytest.raises(
            ValueError, match=r"stack_params: max_steps = .* is outside its bounds \[1, 1e\+06\]"
        ):
            hivex_jax.stack_params([params, bad])


def test_huge_numbers_are_named_readably():
    with pytest.raises(
        ValueError, match=r"max_steps = an integer of about 5001 digits is outside its bounds"
    ):
        hivex_jax.make("WindFarmControl-v0", max_steps=HUGE_INT)
    with pytest.raises(ValueError, match=r"max_steps = 1099511627776 is outside"):
        hivex_jax.make("WindFarmControl-v0", max_steps=2**40)
    # a float32 field given a value beyond float32 is named by that value, not by the inf of a cast
    with pytest.raises(ValueError, match=r"sea_half_extent = 1e\+39 is outside its bounds \[50, 2000\]"):
        hivex_jax.make("OceanPlasticCollection-v0", sea_half_extent=1e39)


def test_fixed_option_says_so_in_one_short_line():
    with pytest.raises(TypeError) as info:
        hivex_jax.make("WildfireResourceManagement-v0", num_agents=3)
    assert (
        str(info.value)
        == "WildfireResourceManagement-v0 has 9 fixed watch towers: num_agents is not an option"
    )
    with pytest.raises(TypeError) as info:  # an unknown name lists the static options, not 57 fields
        hivex_jax.make("WildfireResourceManagement-v0", nope=3)
    assert "Static options: ['fire_resolution', 'render_size']" in str(info.value)
    assert "spread_rate" not in str(info.value) and len(str(info.value)) < 250


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bench", "max_steps=1e30"], "max_steps = 1e+30 is outside its bounds [1, 1e+06]"),
        (["bench", "num_agents=1e308"], "num_agents = 1e+308 is outside its bounds [1, 80]"),
        (["bench", "--steps", str(10**30)], "--steps must be <= 100,000"),
        (["bench", "--batch-sizes", "1," + str(2**40)], "more than 4,194,304 worlds"),
        (
            ["world", "export", "--env", "WildfireResourceManagement-v0", "--world", "-1", "--out", "{tmp}"],
            "--world must be in [0, 2**32); got -1",
        ),
        (
            [
                "world",
                "export",
                "--env",
                "WildfireResourceManagement-v0",
                "--world",
                str(2**40),
                "--out",
                "{tmp}",
            ],
            "--world must be in [0, 2**32); got 1099511627776",
        ),
        (["render", "--seed", str(2**70), "--out", "{tmp}/x.gif"], "--seed must be in [0, 2**32)"),
        (["render", "--steps", str(10**30), "--out", "{tmp}/x.gif"], "--steps must be <= 1,000,000"),
        (["render", "--fps", "1000", "--out", "{tmp}/x.gif"], "--fps must be <= 100"),
        (["render", "--num-agents", str(10**30), "--out", "{tmp}/x.gif"], "is outside its bounds [1, 80]"),
    ],
)
def test_cli_out_of_range_numbers_are_one_line_exit_2(capsys, tmp_path, argv, expected):
    rc = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert expected in err, err
    assert not list(tmp_path.iterdir())  # nothing written


def test_subprocess_bench_huge_max_steps_is_one_line():
    out = subprocess.run(
        [sys.executable, "-m", "hivex_jax", "bench", "max_steps=1e30"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        "hivex bench: WindFarmControl-v0: max_steps = 1e+30 is outside its bounds [1, 1e+06]"
    )


# ------------------------------------------------------------------ the continuous action rule
HOSTILE = [np.nan, 1e39, -np.inf, 0.5]  # float64: 1e39 is beyond float32
TAME = [0.0, 1.0, -1.0, 0.5]


# jax casts a float64 1e39 argument to float32 itself (inf, with numpy's overflow warning); the rule clips it
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_validate_action_rule_nan_zero_everything_else_clipped():
    env, _ = hivex_jax.make("DroneBasedReforestation-v0")  # 3 agents x 3 continuous dims
    hostile = np.array([[np.nan, np.inf, -np.inf], [1e39, -1e308, 2.0], [-0.25, 1.0, -1.0]])  # float64
    out = env.validate_action({"continuous": hostile, "discrete": np.zeros((3, 1), np.int32)})
    assert out["continuous"].dtype == jnp.float32
    assert out["continuous"].tolist() == [[0.0, 1.0, -1.0], [1.0, -1.0, 1.0], [-0.25, 1.0, -1.0]]


def test_adapters_apply_the_same_rule_in_float64_without_overflow_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in cast" would be an error here
        assert continuous_action(np.array(HOSTILE)).tolist() == TAME
        native = ActionLayout(1, (2,)).to_native(
            {"continuous": np.array(HOSTILE)[:, None], "discrete": np.zeros((4, 1))}, (4,)
        )
    assert native["continuous"].dtype == np.float32 and native["continuous"][:, 0].tolist() == TAME
    only = ActionLayout(4, ()).to_native(np.array([HOSTILE]), (1,))
    assert only["continuous"].tolist() == [TAME]


# jax casts a float64 1e39 argument to float32 itself (inf, with numpy's overflow warning); the rule clips it
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize(
    ("env_id", "options"),
    [
        ("AerialWildfireSuppression-v0", {"grid_size": 32, "camera_size": 4}),  # 3 planes x 1 dim
        ("DroneBasedReforestation-v0", {"num_agents": 1}),  # 1 drone x 3 dims
    ],
)
def test_hostile_continuous_action_steps_like_its_clipped_twin(env_id, options):
    env, params = hivex_jax.make(env_id, **options)
    _, state = jax.jit(env.reset)(hivex_jax.world_key(3), params)
    step = jax.jit(env.step)
    a, c = env.num_agents, env.continuous_dims
    discrete = jnp.zeros((a, len(env.discrete_branches)), jnp.int32)
    hostile = np.resize(np.array(HOSTILE), (a, c))  # float64 in, as a NumPy caller gives it
    tame = np.resize(np.array(TAME, np.float32), (a, c))
    key = jax.random.PRNGKey(1)
    out_hostile = step(key, state, {"continuous": hostile, "discrete": discrete}, params)
    out_tame = step(key, state, {"continuous": tame, "discrete": discrete}, params)
    for x, y in zip(jax.tree.leaves(out_hostile), jax.tree.leaves(out_tame), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    # and the rule matters: a zeroed 1e39 / -inf (the old rule) steps differently
    zeroed = np.where(tame == 0.5, tame, 0.0)  # NaN, 1e39 (inf once float32) and -inf all became 0
    out_zeroed = step(key, state, {"continuous": zeroed, "discrete": discrete}, params)
    assert any(
        not np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(jax.tree.leaves(out_zeroed[1]), jax.tree.leaves(out_tame[1]), strict=True)
    )
