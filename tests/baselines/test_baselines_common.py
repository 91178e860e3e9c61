"""GAE, the PPO loss and minibatching on hand-computed cases."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from baselines.core.kernels import flatten_batch, gae, masked_mean, ppo_loss, shuffled_minibatches

pytestmark = pytest.mark.timeout(120)


def _trajectory():
    """4 steps x 2 agents. Agent 0: a truncation at t=1, a termination at t=2, the rollout ends at
    t=3. Agent 1: terminates at t=0 and is inactive afterwards (garbage values must not matter)."""
    rewards = jnp.array([[1.0, 1.0], [1.0, 0.0], [2.0, 0.0], [0.0, 0.0]])
    values = jnp.array([[2.0, 0.5], [3.0, 77.0], [1.0, -5.0], [2.0, 13.0]])
    next_values = jnp.array([[3.0, 9.0], [6.0, 99.0], [5.0, 42.0], [6.0, 7.0]])  # t=1: V(final obs)
    terminated = jnp.array([[False, True], [False, True], [True, True], [False, True]])
    episode_end = jnp.array([[False, False], [True, True], [True, True], [False, False]])
    active = jnp.array([[True, True], [True, False], [True, False], [True, False]])
    return rewards, values, next_values, terminated, episode_end, active


@pytest.mark.timeout(120)
def test_gae_bootstraps_truncation_cuts_termination_and_ignores_inactive():
    gamma, lam = 0.5, 0.5
    adv, targets = gae(*_trajectory(), gamma, lam)
    # Agent 0, by hand (delta_t = r + gamma (1 - term) V_next - V;  A_t = delta_t + gamma lam cont A_{t+1}):
    #   t3: 0 + 0.5*6 - 2 = 1                       -> A3 = 1     (rollout end: bootstrap V(s_4))
    #   t2: 2 + 0 - 1 = 1, terminated (no bootstrap) -> A2 = 1     (cut: A3 does not flow back)
    #   t1: 1 + 0.5*6 - 3 = 1, truncated: V(final)   -> A1 = 1     (cut: A2 does not flow back)
    #   t0: 1 + 0.5*3 - 2 = 0.5                      -> A0 = 0.5 + 0.25 * 1 = 0.75
    np.testing.assert_allclose(adv[:, 0], [0.75, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(targets[:, 0], [2.75, 4.0, 2.0, 3.0])
    # Agent 1: t0: 1 - 0.5 (terminated) = 0.5; inactive afterwards -> 0 whatever the values.
    np.testing.assert_allclose(adv[:, 1], [0.5, 0.0, 0.0, 0.0])


@pytest.mark.timeout(120)
def test_gae_treating_truncation_as_termination_would_differ():
    rewards, values, next_values, terminated, episode_end, active = _trajectory()
    wrong = terminated | episode_end  # the bug the anchors ship: truncation treated as terminal
    adv, _ = gae(rewards, values, next_values, terminated, episode_end, active, 0.5, 0.5)
    adv_wrong, _ = gae(rewards, values, next_values, wrong, episode_end, active, 0.5, 0.5)
    assert float(adv[1, 0]) == pytest.approx(1.0)
    assert float(adv_wrong[1, 0]) == pytest.approx(-2.0)  # 1 - 3


def _loss_batch():
    old = jnp.array([-1.0, -2.0, -0.3])
    log_prob = old + jnp.log(jnp.array([1.5, 0.5, 100.0]))
    return dict(
        log_prob=log_prob,
        old_log_prob=old,
        advantages=jnp.array([2.0, -1.0, 1000.0]),
        entropy=jnp.array([1.0, 2.0, 50.0]),
        value=jnp.array([3.0, 1.0, 50.0]),
        old_value=jnp.array([2.0, 1.0, -50.0]),
        targets=jnp.array([4.0, 0.0, 3.0]),
        mask=jnp.array([True, True, False]),  # sample 2: an inactive agent
    )


def _loss(batch, normalize=False):
    return ppo_loss(
        **batch, clip_eps=0.2, clip_value_eps=0.5, vf_coef=0.5, ent_coef=0.1, normalize_advantages=normalize
    )


@pytest.mark.timeout(120)
def test_ppo_loss_hand_computed():
    loss, m = _loss(_loss_batch())
    # policy: ratio 1.5, A=2 -> min(3, 1.2*2) = 2.4 ; ratio 0.5, A=-1 -> min(-0.5, 0.8*-1) = -0.8
    assert float(m["policy_loss"]) == pytest.approx(-(2.4 - 0.8) / 2)
    # value: (3-4)^2=1 vs clipped 2+0.5=2.5 -> 2.25 ; (1-0)^2 = 1 both -> 0.5 * mean(2.25, 1)
    assert float(m["value_loss"]) == pytest.approx(0.8125)
    assert float(m["entropy"]) == pytest.approx(1.5)
    assert float(loss) == pytest.approx(-0.8 + 0.5 * 0.8125 - 0.1 * 1.5)
    assert float(m["clip_fraction"]) == pytest.approx(1.0)
    kl = ((0.5 - np.log(1.5)) + (-0.5 - np.log(0.5))) / 2
    assert float(m["approx_kl"]) == pytest.approx(kl, rel=1e-5)


@pytest.mark.timeout(120)
def test_inactive_agents_contribute_nothing_to_the_loss():
    batch = _loss_batch()
    for normalize in (False, True):
        loss, _ = _loss(batch, normalize)
        active_only = {k: v[:2] for k, v in batch.items()}
        loss_active, _ = _loss(active_only, normalize)
        assert float(loss) == pytest.approx(float(loss_active), rel=1e-6)

        def of_masked(x, normalize=normalize):  # the loss as a function of the masked sample's inputs
            b = dict(batch, log_prob=batch["log_prob"].at[2].set(x[0]), value=batch["value"].at[2].set(x[1]))
            return _loss(b, normalize)[0]

        grad = jax.grad(of_masked)(jnp.array([3.0, -7.0]))
        np.testing.assert_array_equal(grad, [0.0, 0.0])


@pytest.mark.timeout(120)
def test_masked_mean():
    assert float(masked_mean(jnp.array([1.0, 3.0, 100.0]), jnp.array([1, 1, 0]))) == 2.0
    assert float(masked_mean(jnp.array([1.0]), jnp.array([0]))) == 0.0


@pytest.mark.timeout(120)
def test_flatten_and_shuffle_keep_every_field_aligned():
    t, n, a = 3, 2, 4
    ids = jnp.arange(t * n * a).reshape(t, n, a)
    batch = {
        "id": ids,
        "obs": jnp.stack([ids, -ids], axis=-1).astype(jnp.float32),  # [T, N, A, 2]
        "empty": jnp.zeros((t, n, a, 0)),  # zero-width action parts must survive
    }
    flat = flatten_batch(batch)
    assert flat["id"].shape == (24,) and flat["obs"].shape == (24, 2) and flat["empty"].shape == (24, 0)
    mbs = shuffled_minibatches(jax.random.PRNGKey(0), flat, 4)
    assert mbs["id"].shape == (4, 6) and mbs["obs"].shape == (4, 6, 2) and mbs["empty"].shape == (4, 6, 0)
    np.testing.assert_array_equal(mbs["obs"][..., 0], mbs["id"])
    assert sorted(np.asarray(mbs["id"]).ravel().tolist()) == list(range(24))  # a permutation
    assert not np.array_equal(np.asarray(mbs["id"]).ravel(), np.arange(24))


def test_results_header_names_the_worlds_the_seeds_pick_among():
    from baselines.run.files import format_results

    summary = {"mean": 1.0, "ci95": 0.5, "iqm": 1.0, "num_seeds": 2}
    base = {"worlds": list(range(6000, 6008)), "policies": {"greedy": {"summary": summary}}}
    assert format_results(base).startswith("8 held-out worlds 6000..6007, full episodes")
    files = {**base, "world_files": ["maps/a.png"], "worlds_in_train_pool": 8, "episode_steps": 5}
    header = "8 seeds over 1 file world(s) 6000..6007, episodes cut at 5 steps"
    assert format_results(files).startswith(header)
    stress = {**base, "stress_worlds": {"names": ["a", "b", "c"], "seeds": "9000:9032"}}
    assert format_results(stress).startswith("8 seeds over 3 stress world(s)")
    assert format_results({**base, "worlds_in_train_pool": 2}).startswith("8 worlds (2 of them in the train")
