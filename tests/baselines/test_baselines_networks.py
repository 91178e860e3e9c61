"""The hybrid-action actor and the critic on vector-only and vector+visual observations."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from baselines.networks import Actor, Critic, HybridDistribution, StridedConv

pytestmark = pytest.mark.timeout(120)


def test_hybrid_log_prob_is_the_sum_of_the_parts():
    logits = (jnp.log(jnp.array([[0.2, 0.8]])), jnp.log(jnp.array([[0.5, 0.25, 0.25]])))
    action = {"continuous": jnp.array([[1.3]]), "discrete": jnp.array([[1, 2]])}

    @jax.jit  # one compilation instead of many eager ops
    def evaluate(logits, action):
        dist = HybridDistribution(logits=logits, mean=jnp.array([[0.3]]), log_std=jnp.array([0.0]))
        return dist.log_prob(action), dist.entropy(), dist.mode()

    log_prob, entropy_value, mode = evaluate(logits, action)
    gaussian = -0.5 * 1.0**2 - 0.5 * np.log(2 * np.pi)  # N(1.3; 0.3, 1)
    expected = np.log(0.8) + np.log(0.25) + gaussian
    np.testing.assert_allclose(log_prob, [expected], rtol=1e-5)
    entropy = -(0.2 * np.log(0.2) + 0.8 * np.log(0.8)) - (0.5 * np.log(0.5) + 0.5 * np.log(0.25))
    entropy += 0.5 * np.log(2 * np.pi * np.e)
    np.testing.assert_allclose(entropy_value, [entropy], rtol=1e-5)
    np.testing.assert_array_equal(mode["discrete"], [[1, 0]])
    np.testing.assert_allclose(mode["continuous"], [[0.3]])


def test_samples_follow_the_distribution():
    logits = (jnp.log(jnp.array([[0.1, 0.9]] * 4000)),)
    dist = HybridDistribution(logits=logits, mean=jnp.full((4000, 1), 0.5), log_std=jnp.array([-1.0]))
    samples = jax.jit(dist.sample)(jax.random.PRNGKey(0))
    assert samples["discrete"].shape == (4000, 1) and samples["continuous"].shape == (4000, 1)
    assert 0.88 < float(samples["discrete"].mean()) < 0.92
    assert abs(float(samples["continuous"].mean()) - 0.5) < 0.02
    assert abs(float(samples["continuous"].std()) - np.exp(-1.0)) < 0.02


def test_actor_and_critic_shapes(visual=True):
    a = 3
    obs = {"vector": jnp.ones((5, a, 4))}
    if visual:
        obs["visual"] = jnp.full((5, a, 8, 8, 2), 255, jnp.uint8)
    actor = Actor(continuous_dims=2, discrete_branches=(3, 2), hidden_sizes=(16,), cnn_channels=(4,))
    critic = Critic(hidden_sizes=(16,), cnn_channels=(4,))
    key = jax.random.PRNGKey(0)
    actor_params = actor.init(key, obs)
    assert ("Conv_0" in str(jax.tree_util.tree_structure(actor_params))) == visual

    @jax.jit
    def run(params, obs, key):
        dist = actor.apply(params, obs)
        action = dist.sample(key)
        return action, dist.log_prob(action), jax.nn.softmax(dist.logits[0])

    action, log_prob, probs = run(actor_params, obs, key)
    assert action["continuous"].shape == (5, a, 2) and action["discrete"].shape == (5, a, 2)
    assert action["discrete"].dtype == jnp.int32
    assert bool(jnp.all(action["discrete"][..., 0] < 3)) and bool(jnp.all(action["discrete"][..., 1] < 2))
    assert log_prob.shape == (5, a)
    assert jax.jit(critic.apply)(critic.init(key, obs), obs).shape == (5, a)
    assert float(jnp.max(jnp.abs(probs - 1 / 3))) < 0.05  # near-uniform start (small head init)


def test_discrete_only_actor_has_no_log_std():
    actor = Actor(continuous_dims=0, discrete_branches=(3,), hidden_sizes=(8,))
    params = actor.init(jax.random.PRNGKey(0), {"vector": jnp.zeros((2, 6))})
    assert "log_std" not in params["params"]
    dist = actor.apply(params, {"vector": jnp.zeros((2, 6))})
    assert dist.sample(jax.random.PRNGKey(1))["continuous"].shape == (2, 0)


@pytest.mark.parametrize("shape", [(2, 16, 16, 2), (1, 11, 7, 3)])  # even and odd sides (SAME padding)
def test_strided_conv_patches_equal_a_real_convolution(shape):
    """The CPU path (9 strided slices + a matmul) computes nn.Conv(3x3, stride 2, SAME), values and
    gradients, with the same parameters."""
    x = jax.random.normal(jax.random.PRNGKey(1), shape)
    patches = StridedConv(5, method="patches")
    params = patches.init(jax.random.PRNGKey(0), x)
    reference = nn.Conv(5, (3, 3), strides=(2, 2))

    def loss(module, p):
        return jnp.sum(jnp.sin(module.apply(p, x)))

    np.testing.assert_allclose(patches.apply(params, x), reference.apply(params, x), atol=1e-5)
    np.testing.assert_allclose(
        StridedConv(5, method="conv").apply(params, x), reference.apply(params, x), atol=1e-5
    )
    ours, theirs = (
        jax.grad(lambda p: loss(patches, p))(params),
        jax.grad(lambda p: loss(reference, p))(params),
    )
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
