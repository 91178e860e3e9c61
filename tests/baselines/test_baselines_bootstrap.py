"""The truncation bootstrap from cut slots (`baselines.core.bootstrap`): hand cases, and the rollout and
update that read it give what the every-step V(final obs) gives (up to float rounding)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG

import baselines.core.ppo as ppo
from baselines.config import from_dict
from baselines.core.bootstrap import CutInputs, cut_slots, cut_values, next_values


class _Params:
    def __init__(self, max_steps):
        self.max_steps = max_steps


def test_slots_are_the_most_cuts_one_env_can_make():
    assert cut_slots(128, _Params(jnp.int32(3000))) == 1
    assert cut_slots(16, _Params(5)) == 4  # cuts at 5, 10, 15 and one more if a rollout starts at step 4
    assert cut_slots(8, _Params(3), None, _Params(12)) == 3  # the least max_steps; None skipped
    assert cut_slots(8, _Params(2)) is None  # 4 slots are not under half the 8 steps: every step
    assert cut_slots(8, _Params(0)) is None  # a clamped max_steps of 1 cuts every step
    assert cut_slots(8, object()) is None  # no max_steps
    traced = jax.jit(lambda m: jnp.int32(-1 if cut_slots(8, _Params(m)) is None else 0))(jnp.int32(5))
    assert int(traced) == -1  # a traced max_steps is not a bound


def test_keep_stores_cut_inputs_in_their_env_slots():
    cuts = CutInputs.empty({"x": jnp.zeros((3, 2))}, slots=2)  # 3 envs, inputs of 2 numbers
    rows = [jnp.full((3, 2), float(t + 1)) * jnp.arange(1, 4)[:, None] for t in range(4)]
    cut_at = [[True, False, True], [False, False, True], [True, False, True], [False, True, False]]
    slots = []
    for row, cut in zip(rows, cut_at, strict=True):
        cuts, slot = cuts.keep({"x": row}, jnp.asarray(cut))
        slots.append(np.asarray(slot))
    np.testing.assert_array_equal(slots, [[0, -1, 0], [-1, -1, 1], [1, -1, 2], [-1, 0, -1]])
    np.testing.assert_array_equal(cuts.count, [2, 1, 3])
    x = np.asarray(cuts.inputs["x"])  # [N, K, 2]
    np.testing.assert_array_equal(x[0, :, 0], [1.0, 3.0])  # env 0 cut at steps 0 and 2
    np.testing.assert_array_equal(x[1, :, 0], [4.0 * 2, 0.0])  # env 1 at step 3; slot 1 unused
    np.testing.assert_array_equal(x[2, :, 0], [3.0, 6.0])  # env 2's third cut (step 2) was kept nowhere


def test_next_values_follow_the_next_step_and_read_slots_where_cut():
    values = jnp.asarray([[[1.0], [10.0]], [[2.0], [20.0]], [[3.0], [30.0]]])  # [T=3, N=2, A=1]
    last = jnp.asarray([[4.0], [40.0]])
    kept = jnp.asarray([[[-1.0], [-2.0]], [[-10.0], [-20.0]]])  # [N, K=2, A]
    slot = jnp.asarray([[-1, 0], [1, -1], [-1, 2]])  # env 1's third cut: past its 2 slots
    got = np.asarray(next_values(values, last, kept, slot))[..., 0]
    np.testing.assert_array_equal(got[:, 0], [2.0, -2.0, 4.0])
    np.testing.assert_array_equal(got[:2, 1], [-10.0, 30.0])
    assert np.isnan(got[2, 1])  # a cut past the slots: NaN, so the loss is not finite


def test_cut_values_run_every_slot_as_envs():
    cuts = CutInputs({"x": jnp.arange(12.0).reshape(2, 3, 2)}, jnp.zeros(2, jnp.int32))  # [N=2, K=3, 2]
    values = cut_values(lambda inputs: inputs["x"].sum(-1, keepdims=True) * 10.0, cuts)  # [N*K, 1]
    np.testing.assert_array_equal(values[..., 0], [[10.0, 50.0, 90.0], [130.0, 170.0, 210.0]])


def _two_updates(changes: dict, every_step: bool, monkeypatch) -> tuple:
    """`(trajectories of two rollouts in a row [2, T, ...], metrics of two updates, cut slots)`, one
    seed."""
    with monkeypatch.context() as patch:
        if every_step:
            patch.setattr(ppo, "cut_slots", lambda *a: None)
        train = ppo.make_train(from_dict({**TINY_CONFIG, "chunk_updates": 2, **changes}))
    runner = jax.jit(train.init)(jax.random.PRNGKey(3))
    rollout = jax.jit(train.rollout)
    after, (first, _) = rollout(runner)
    _, (second, _) = rollout(after)
    _, metrics = jax.jit(train.update_chunk)(runner)
    both = jax.tree.map(lambda x, y: np.stack([x, y]), first, second)
    return jax.device_get(both), jax.device_get(metrics), train.cut_slots


@pytest.mark.parametrize(
    "changes",
    [
        {},  # max_steps 12 over 8 steps: one slot (the second rollout cuts)
        {"env_params": {"max_steps": 3}},  # three slots, every env cut twice or more
        {"algo": "mappo", "env_params": {"max_steps": 3}},  # the critic reads the global state
        {"value_heads": {"closeness": 2.0}, "env_params": {"max_steps": 3}},
    ],
    ids=["ippo", "ippo-short", "mappo-short", "heads-short"],
)
def test_cut_slots_give_the_every_step_bootstrap(changes, monkeypatch):
    traj, metrics, slots = _two_updates(changes, False, monkeypatch)
    every, every_metrics, none = _two_updates(changes, True, monkeypatch)
    assert slots == (1 if not changes else 3) and none is None
    assert traj.cut_slot is None and every.cut_slot is None
    cut = np.asarray(traj.episode_end) & ~np.asarray(traj.terminated)  # [2, T, N, A]
    assert cut.any()  # the case tested: episodes cut by the time limit in the rollouts
    # where no episode ended, V(s_{t+1}) is the next step's V(s_t) itself, bit for bit
    ended = np.asarray(traj.episode_end)[:, :-1]
    if traj.value.ndim > ended.ndim:
        ended = ended[..., None]
    np.testing.assert_array_equal(
        np.where(ended, 0.0, traj.next_value[:, :-1]), np.where(ended, 0.0, traj.value[:, 1:])
    )
    # and the every-step critic pass gives the same numbers up to float rounding (XLA compiles a step with
    # two critic passes otherwise than one with one): the values, the bootstrap at the cuts, the losses
    np.testing.assert_array_equal(traj.action["discrete"], every.action["discrete"])
    np.testing.assert_allclose(traj.value, every.value, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(traj.next_value, every.next_value, rtol=1e-5, atol=1e-6)
    for key in ("loss", "value_loss", "policy_loss", "entropy"):
        np.testing.assert_allclose(metrics[key], every_metrics[key], rtol=1e-4, atol=1e-6)


def test_cuts_past_the_slots_stop_the_run_at_a_nonfinite_loss(monkeypatch):
    # one slot where max_steps 3 cuts each env twice in 8 steps (as an env whose reset does not start
    # `step` at 0 would): the second cut's value is NaN, so the finite flag stops the run, nothing learnt
    monkeypatch.setattr(ppo, "cut_slots", lambda *a: 1)
    train = ppo.make_train(from_dict({**TINY_CONFIG, "chunk_updates": 1, "env_params": {"max_steps": 3}}))
    runner = jax.jit(train.init)(jax.random.PRNGKey(3))
    _, (traj, _) = jax.jit(train.rollout)(runner)
    assert np.isnan(np.asarray(traj.next_value)).any()
    _, metrics = jax.jit(train.update_chunk)(runner)
    assert not bool(np.asarray(metrics["finite_loss"]).all())
