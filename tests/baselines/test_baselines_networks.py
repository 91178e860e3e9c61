"""The hybrid-action actor and the critic on vector-only and vector+visual observations."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from baselines.core.convolutions import (
    PatchConv,
    StridedConv,
    patch_product,
    read_extent,
    resolved_method,
    xla_conv,
)
from baselines.core.networks import (
    ENCODER,
    HIVEX_SIMPLE_LAYERS,
    Actor,
    Critic,
    CriticNetwork,
    Encoder,
    HybridDistribution,
)

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


@pytest.mark.parametrize(
    ("shape", "kernel", "stride"),
    [((2, 42, 42, 3), 8, 4), ((3, 9, 9, 16), 4, 2), ((1, 25, 27, 2), 8, 4), ((2, 5, 6, 3), 4, 2)],
)
def test_patch_conv_equals_a_valid_convolution(shape, kernel, stride):
    """hivex_simple's CPU path (space to depth, slices and one matmul) computes XLA's VALID convolution,
    values and gradients, with the same parameters; odd sides leave the uncovered rows out as VALID does."""
    x = jax.random.normal(jax.random.PRNGKey(1), shape)
    patches = PatchConv(5, kernel, stride, method="patches")
    params = patches.init(jax.random.PRNGKey(0), x)
    kernel_array, bias = params["params"]["kernel"], params["params"]["bias"]
    assert kernel_array.shape == (kernel, kernel, shape[-1], 5)

    def reference(p):
        k = p["params"]["kernel"]
        y = jax.lax.conv_general_dilated(
            x, k, (stride, stride), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return y + p["params"]["bias"]

    expected = reference(params)
    side = (shape[1] - kernel) // stride + 1, (shape[2] - kernel) // stride + 1
    assert expected.shape == (shape[0], *side, 5)
    np.testing.assert_allclose(patches.apply(params, x), expected, atol=1e-5)
    np.testing.assert_allclose(
        PatchConv(5, kernel, stride, method="conv").apply(params, x), expected, atol=1e-5
    )
    ours = jax.grad(lambda p: jnp.sum(jnp.sin(patches.apply(p, x))))(params)
    theirs = jax.grad(lambda p: jnp.sum(jnp.sin(reference(p))))(params)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
    assert bias.shape == (5,)


def test_patch_conv_reads_uint8_images_as_unit_floats():
    """A uint8 image stays uint8 through the slicing and is converted at the matmul: the same output as the
    image divided by 255 first, bit for bit."""
    image = jax.random.randint(jax.random.PRNGKey(2), (2, 42, 42, 3), 0, 256).astype(jnp.uint8)
    conv = PatchConv(4, 8, 4, method="patches")
    params = conv.init(jax.random.PRNGKey(0), image.astype(jnp.float32))
    np.testing.assert_array_equal(
        conv.apply(params, image), conv.apply(params, image.astype(jnp.float32) / 255.0)
    )


@pytest.mark.parametrize(("side", "read"), [(42, 36), (24, 20), (20, 20), (39, 36), (44, 44), (84, 84)])
def test_hivex_simple_reads_the_pixels_its_second_layer_uses(side, read):
    """Hand-computed: on 42 pixels the 8 x 8 / 4 layer gives 9 rows, the 4 x 4 / 2 layer reads rows 0-7
    of them (3 outputs), and those read pixels 0-35; on 44 every row is read."""
    assert read_extent(side, HIVEX_SIMPLE_LAYERS) == read


def test_the_hivex_simple_encoder_is_xla_s_convolutions_of_the_whole_image():
    """The encoder convolves only the pixels its layers read: the same output as XLA's two VALID convolutions
    of the whole 42 x 42 image, bit for bit, and gradients to float rounding; the 6 unread rows and columns
    change nothing."""
    image = jax.random.randint(jax.random.PRNGKey(3), (4, 42, 42, 3), 0, 256).astype(jnp.uint8)
    encoder = Encoder((32,), (4, 8), "tanh", "hivex_simple")
    params = encoder.init(jax.random.PRNGKey(0), {"visual": image})

    def whole_image(params, image):
        p, x = params["params"], image.astype(jnp.float32) / 255.0
        for layer, (_, stride) in enumerate(HIVEX_SIMPLE_LAYERS):
            conv = p[f"PatchConv_{layer}"]
            x = nn.relu(xla_conv(x, conv["kernel"], stride, "VALID") + conv["bias"])
        x = jnp.tanh(x.reshape(x.shape[0], -1) @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"])
        return jnp.tanh(x @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"])

    ours = encoder.apply(params, {"visual": image})
    np.testing.assert_array_equal(ours, whole_image(params, image))
    unread = image.at[:, 36:].set(0).at[:, :, 36:].set(255)
    np.testing.assert_array_equal(encoder.apply(params, {"visual": unread}), ours)
    grads = [
        jax.grad(lambda p, f=f: jnp.sum(jnp.sin(f(p))))(params)
        for f in (lambda p: encoder.apply(p, {"visual": image}), lambda p: whole_image(p, image))
    ]
    for a, b in zip(*map(jax.tree.leaves, grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_patch_product_is_a_matmul_with_its_gradients():
    """`patch_product`'s value is the matmul's, bit for bit; its gradients (the kernel's as cotangent^T @
    patches, transposed) are autodiff's to float rounding, also with a leading batch of kernels (vmap)."""
    patches = jax.random.normal(jax.random.PRNGKey(4), (2, 5, 7, 48))
    weights = jax.random.normal(jax.random.PRNGKey(5), (2, 48, 6))
    matmul = jnp.einsum("bijk,bkf->bijf", patches, weights)
    np.testing.assert_array_equal(jax.vmap(patch_product)(patches, weights), matmul)
    ours = jax.grad(lambda p, w: jnp.sum(jnp.sin(jax.vmap(patch_product)(p, w))), (0, 1))(patches, weights)
    theirs = jax.grad(lambda p, w: jnp.sum(jnp.sin(jnp.einsum("bijk,bkf->bijf", p, w))), (0, 1))(
        patches, weights
    )
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _param_count(tree) -> int:
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))


def test_hivex_simple_encoder_parameters_on_a_42_by_42_camera():
    """Aerial Wildfire Suppression's observation (42 x 42 x 3 image, 8 floats), the shipped network (16 and
    32 channels, 2 x 256): ML-Agents' simple encoder gives 9 x 9 x 16 -> 3 x 3 x 32 = 288 features."""
    obs = {"vector": jnp.zeros((3, 8)), "visual": jnp.zeros((3, 42, 42, 3), jnp.uint8)}
    encoder = Encoder((256, 256), (16, 32), "tanh", "hivex_simple")
    params = encoder.init(jax.random.PRNGKey(0), obs)["params"]
    by_layer = {name: _param_count(p) for name, p in params.items()}
    assert by_layer == {
        "PatchConv_0": 8 * 8 * 3 * 16 + 16,  # 3,088
        "PatchConv_1": 4 * 4 * 16 * 32 + 32,  # 8,224
        "Dense_0": 3 * 3 * 32 * 256 + 256,  # the image's features: 73,984
        "Dense_1": (256 + 8) * 256 + 256,  # image features and vector: 67,840
        "Dense_2": 256 * 256 + 256,  # 65,792
    }
    assert sum(by_layer.values()) == 218_928
    assert encoder.apply({"params": params}, obs).shape == (3, 256)
    # today's default (3 x 3 / 2 SAME: 21 x 21 x 16 -> 11 x 11 x 32 = 3,872 features) has 4.6x the parameters
    default = Encoder((256, 256), (16, 32), "tanh").init(jax.random.PRNGKey(0), obs)["params"]
    assert _param_count(default["Dense_0"]) == 11 * 11 * 32 * 256 + 256
    assert _param_count(default) == 448 + 4_640 + 991_488 + 67_840 + 65_792


def test_shared_encoder_critic_is_a_head_on_the_actors_encoder():
    """`shared_encoder`: the critic's own params are the value head alone, and its value is the head on
    the actor's encoder output (changing the actor's encoder changes the value)."""
    obs = {"vector": jnp.ones((5, 3, 4)), "visual": jnp.full((5, 3, 8, 8, 2), 200, jnp.uint8)}
    actor = Actor(continuous_dims=1, discrete_branches=(3,), hidden_sizes=(16,), cnn_channels=(4,))
    module = Critic(hidden_sizes=(16,), cnn_channels=(4,))
    shared, separate = CriticNetwork(module, shared_encoder=True), CriticNetwork(module)
    params = {
        "actor": actor.init(jax.random.PRNGKey(0), obs),
        "critic": shared.init(jax.random.PRNGKey(1), obs),
    }
    assert set(params["critic"]["params"]) == {"value_head"}
    assert set(separate.init(jax.random.PRNGKey(1), obs)["params"]) == {ENCODER, "value_head"}
    value = shared.apply(params, obs)
    assert value.shape == (5, 3)
    features = Encoder((16,), (4,)).apply({"params": params["actor"]["params"][ENCODER]}, obs)
    head = params["critic"]["params"]["value_head"]
    np.testing.assert_allclose(
        value, (features @ head["kernel"] + head["bias"])[..., 0], rtol=1e-5, atol=1e-6
    )
    moved = jax.tree.map(lambda x: x * 1.5, params["actor"]["params"][ENCODER])
    other = {**params, "actor": {"params": {**params["actor"]["params"], ENCODER: moved}}}
    assert not np.allclose(shared.apply(other, obs), value)


# (module, input): VALID 8 x 8 / 4 on a uint8 camera, VALID 4 x 4 / 2 on floats, SAME 3 x 3 / 2 on floats
HYBRID_CASES = [
    (lambda method: PatchConv(6, 8, 4, method=method), (4, 42, 42, 3), jnp.uint8),
    (lambda method: PatchConv(6, 4, 2, method=method), (4, 9, 9, 16), jnp.float32),
    (lambda method: StridedConv(6, method=method), (4, 11, 10, 3), jnp.float32),
]


def _image(shape, dtype, key=1):
    if dtype == jnp.uint8:
        return jax.random.randint(jax.random.PRNGKey(key), shape, 0, 256).astype(jnp.uint8)
    return jax.random.normal(jax.random.PRNGKey(key), shape)


@pytest.mark.parametrize(("module", "shape", "dtype"), HYBRID_CASES)
def test_hybrid_convolution_values_are_xla_convolutions_and_gradients_the_patches(module, shape, dtype):
    """The CPU default ("hybrid"): its value is XLA's convolution (the "conv" method's, bit for bit, within
    float rounding of the patches'), and its gradient, parameters and input, is the "patches" method's
    bit for bit, so a trainer's update is the same program as before while its forward passes speed up."""
    x = _image(shape, dtype)
    params = module("patches").init(jax.random.PRNGKey(0), x.astype(jnp.float32))
    hybrid, patches, conv = (module(m) for m in ("hybrid", "patches", "conv"))
    np.testing.assert_array_equal(jax.jit(hybrid.apply)(params, x), jax.jit(conv.apply)(params, x))
    np.testing.assert_allclose(hybrid.apply(params, x), patches.apply(params, x), atol=1e-5)

    def loss(m, p, x):
        return jnp.sum(jnp.sin(m.apply(p, x)) * jnp.arange(6.0))

    argnums = (0,) if dtype == jnp.uint8 else (0, 1)  # no gradient into a uint8 image
    ours = jax.jit(jax.grad(lambda p, x: loss(hybrid, p, x), argnums))(params, x)
    theirs = jax.jit(jax.grad(lambda p, x: loss(patches, p, x), argnums))(params, x)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(a, b)
    assert resolved_method("patches", "VALID") == "patches"


def test_auto_method_takes_the_patches_for_strided3_and_xla_values_for_valid_layers_on_the_cpu():
    """ "auto" on the CPU: the 3 x 3 / 2 SAME layer (`StridedConv`) runs as slices and a matmul for its value
    too (XLA's CPU convolution of a few input channels is slow: no convolution in its program), a VALID
    layer (`PatchConv`) takes XLA's convolution for its value; XLA's convolution for both elsewhere."""
    cpu = jax.default_backend() == "cpu"
    assert resolved_method("auto", "SAME") == ("patches" if cpu else "conv")
    assert resolved_method("auto", "VALID") == ("hybrid" if cpu else "conv")
    x = _image((4, 25, 25, 2), jnp.uint8)
    params = StridedConv(8, method="patches").init(jax.random.PRNGKey(0), x.astype(jnp.float32))
    auto, patches = (jax.jit(StridedConv(8, method=m).apply) for m in ("auto", "patches"))
    if cpu:
        np.testing.assert_array_equal(auto(params, x), patches(params, x))
    strided = str(jax.make_jaxpr(StridedConv(8).apply)(params, x))
    assert ("conv_general_dilated" in strided) == (not cpu)
    valid = PatchConv(8, 8, 4)
    image = _image((4, 42, 42, 3), jnp.uint8)
    valid_params = valid.init(jax.random.PRNGKey(0), image.astype(jnp.float32))
    assert "conv_general_dilated" in str(jax.make_jaxpr(valid.apply)(valid_params, image))


@pytest.mark.parametrize(("module", "shape", "dtype"), HYBRID_CASES)
def test_hybrid_convolution_under_vmap_is_one_convolution_per_kernel(module, shape, dtype):
    """vmap over kernels (the trainer's seeds), over images alone, and both nested (seeds of fused members):
    every slice equals the unbatched convolution with its own kernel and images, and the batched gradient
    is still the patches' gradient bit for bit."""
    seeds, members = 3, 2
    xs = jnp.stack([_image(shape, dtype, key) for key in range(members * seeds)]).reshape(
        (members, seeds) + shape
    )
    init = module("patches").init
    params = jax.vmap(jax.vmap(lambda k: init(k, xs[0, 0].astype(jnp.float32))))(
        jax.random.split(jax.random.PRNGKey(0), members * seeds).reshape(members, seeds, -1)
    )
    hybrid, patches = module("hybrid"), module("patches")
    nested = jax.jit(jax.vmap(jax.vmap(hybrid.apply)))(params, xs)
    one_kernel = jax.jit(jax.vmap(hybrid.apply, in_axes=(None, 0)))(
        jax.tree.map(lambda a: a[0, 0], params), xs[0]
    )
    for m in range(members):
        for s in range(seeds):
            single = jax.jit(hybrid.apply)(jax.tree.map(lambda a: a[m, s], params), xs[m, s])  # noqa: B023
            np.testing.assert_allclose(nested[m, s], single, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        one_kernel[0],
        jax.jit(hybrid.apply)(jax.tree.map(lambda a: a[0, 0], params), xs[0, 0]),
        rtol=1e-6,
        atol=1e-6,
    )

    def loss(m, p, x):
        return jnp.sum(jnp.sin(m.apply(p, x)))

    ours = jax.jit(jax.vmap(jax.vmap(jax.grad(lambda p, x: loss(hybrid, p, x)))))(params, xs)
    theirs = jax.jit(jax.vmap(jax.vmap(jax.grad(lambda p, x: loss(patches, p, x)))))(params, xs)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(a, b)
