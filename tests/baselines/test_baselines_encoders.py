"""The network options that do less arithmetic per sample: `visual_encoder: hivex_simple` (ML-Agents' simple
encoder, 8x8/4 then 4x4/2) and `shared_encoder` (IPPO's critic a head on the actor's encoder); and the
images' dtype in the rollout buffer."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from trainer_fake_env import TINY_CONFIG, TinyEnv

import hivex_jax
from baselines.config import (
    ConfigError,
    PPOConfig,
    from_dict,
    key_kind,
    key_section,
    load_config,
    validate_env,
)
from baselines.core.convolutions import convolve
from baselines.core.networks import ENCODER, FIRST_CONV, CriticNetwork, FirstConvPair
from baselines.core.policy import FeedForwardPolicy
from baselines.core.ppo import make_train
from hivex_jax.core import spaces
from hivex_jax.core.registry import _REGISTRY

pytestmark = pytest.mark.timeout(300)

CAMERA_ENV_ID = "TinyCameraTrainerTest-v0"


class TinyCameraEnv(TinyEnv):
    """The trainer's tiny env with a 24 x 24 x 3 camera (its 8 x 8 image scaled up, three channels): large
    enough for ML-Agents' simple encoder (at least 20 x 20)."""

    env_id = CAMERA_ENV_ID

    def observation_space(self, params=None) -> spaces.Dict:
        space = super().observation_space(params)
        visual = spaces.Box(0, 255, (self.num_agents, 24, 24, 3), jnp.uint8)
        return spaces.Dict({"vector": space.spaces["vector"], "visual": visual})

    def _observe(self, state, params) -> dict:
        obs = super()._observe(state, params)
        image = jnp.repeat(jnp.repeat(obs["visual"], 3, axis=1), 3, axis=2)  # [A, 24, 24, 1]
        channels = jnp.concatenate([image, image // 2, 255 - image], axis=-1)
        return {**obs, "visual": channels}


if CAMERA_ENV_ID not in _REGISTRY:
    hivex_jax.register(CAMERA_ENV_ID, TinyCameraEnv, description="trainer test env with a 24x24x3 camera")

CAMERA_CONFIG = {**TINY_CONFIG, "env_id": CAMERA_ENV_ID, "num_seeds": 1, "cnn_channels": [4, 8]}


def _one_update(config: dict) -> tuple:
    """`(runner after one update, its metrics)` of one seed."""
    train = make_train(from_dict({**config, "chunk_updates": 1}))
    runner = jax.jit(train.init)(jax.random.PRNGKey(0))
    return jax.jit(train.update_chunk)(runner)


def _finite(tree) -> bool:
    return all(
        bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)
    )


def test_the_options_are_static_network_keys_off_by_default():
    """The defaults stay the 3x3/2 encoder and separate torsos; the Aerial Wildfire Suppression configs
    (and those based on them) ship HIVEX's simple encoder and the Drone-Based Reforestation IPPO ones the
    shared encoder, whose 5-seed cells hold the suite's results."""
    for key in ("visual_encoder", "shared_encoder"):
        assert key_kind(key) == "static" and key_section(key) == "network"
    assert (PPOConfig().visual_encoder, PPOConfig().shared_encoder) == ("strided3", False)
    shipped = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
    assert shipped
    for path in shipped:
        config = load_config(path)
        encoder = "hivex_simple" if config.env_id == "AerialWildfireSuppression-v0" else "strided3"
        shared = config.env_id == "DroneBasedReforestation-v0" and config.algo == "ippo"
        assert (config.visual_encoder, config.shared_encoder) == (encoder, shared), path.name


def test_hivex_simple_trains_a_chunk_with_its_kernels():
    runner, metrics = _one_update({**CAMERA_CONFIG, "visual_encoder": "hivex_simple"})
    encoder = runner.params["actor"]["params"][ENCODER]
    assert encoder["PatchConv_0"]["kernel"].shape == (8, 8, 3, 4)
    assert encoder["PatchConv_1"]["kernel"].shape == (4, 4, 4, 8)
    # 24 x 24 -> 5 x 5 x 4 (8x8/4) -> 1 x 1 x 8 (4x4/2): 8 image features into the first dense layer
    assert encoder["Dense_0"]["kernel"].shape == (8, 16)
    assert "StridedConv_0" not in encoder
    assert runner.params["critic"]["params"][ENCODER]["PatchConv_0"]["kernel"].shape == (8, 8, 3, 4)
    assert _finite((runner.params, metrics)) and int(runner.update) == 1


def test_shared_encoder_trains_the_actors_encoder_with_the_value_loss():
    """With a shared encoder the critic's params are its value head alone, and the value loss moves the
    actor's encoder: one update with vf_coef 0.5 and 0 gives different actor encoders."""
    shared = {**CAMERA_CONFIG, "shared_encoder": True}
    runner, metrics = _one_update(shared)
    assert set(runner.params["critic"]["params"]) == {"value_head"}
    assert _finite((runner.params, metrics))
    no_value, _ = _one_update({**shared, "vf_coef": 0.0})
    moved = jax.tree.leaves(runner.params["actor"]["params"][ENCODER])
    unmoved = jax.tree.leaves(no_value.params["actor"]["params"][ENCODER])
    assert not all(np.array_equal(a, b) for a, b in zip(moved, unmoved, strict=True))


def test_a_shared_encoder_runs_once_forward_and_back_with_the_two_pass_numbers(monkeypatch):
    """The loss reads the shared torso once for the actor's head and the critic's (`replay_with_features`,
    `CriticNetwork.on_features`): one update equals the two-pass one (the actor's network, then the
    critic's, each through the encoder) to float rounding, with fewer matmuls in its program."""
    config = {**CAMERA_CONFIG, "shared_encoder": True}

    def dots(fn, *args) -> int:
        return str(jax.make_jaxpr(fn)(*args)).count("dot_general")

    train = make_train(from_dict({**config, "chunk_updates": 1}))
    runner = jax.jit(train.init)(jax.random.PRNGKey(0))
    one_pass, one_pass_dots = jax.jit(train.update_chunk)(runner), dots(train.update_chunk, runner)

    def two_pass_replay(self, params, minibatch, readout):  # the actor's own pass; the critic's below
        replayed = self.replay(params, minibatch, readout)
        return (*replayed, self.view(params, minibatch[0].obs))

    monkeypatch.setattr(FeedForwardPolicy, "replay_with_features", two_pass_replay)
    monkeypatch.setattr(CriticNetwork, "on_features", CriticNetwork.apply)
    train = make_train(from_dict({**config, "chunk_updates": 1}))
    two_pass, two_pass_dots = jax.jit(train.update_chunk)(runner), dots(train.update_chunk, runner)
    assert one_pass_dots < two_pass_dots
    for a, b in zip(jax.tree.leaves(one_pass), jax.tree.leaves(two_pass), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)


@pytest.mark.slow  # two more update compiles (~15 s): the control of the test above
def test_separate_encoders_keep_the_actor_apart_from_the_value_loss():
    """Without sharing, vf_coef does not reach the actor: one update with 0.5 and 0 gives the same actor
    bit for bit (its loss does not read the critic before GAE uses the updated one)."""
    separate, _ = _one_update(CAMERA_CONFIG)
    separate_no_value, _ = _one_update({**CAMERA_CONFIG, "vf_coef": 0.0})
    actors = jax.tree.leaves(separate.params["actor"]), jax.tree.leaves(separate_no_value.params["actor"])
    for a, b in zip(*actors, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_actor_and_critic_share_one_first_convolution_and_no_bit_changes(monkeypatch):
    """`FirstConvPair`: the rollout's and the loss's first convolutions of the image both networks read run
    as one of both kernels; one update with it equals one without (each network's own), bit for bit."""
    config = {**CAMERA_CONFIG, "visual_encoder": "hivex_simple"}
    paired_where, pair = [], FirstConvPair.__call__

    def watched(self, params, actor_obs, critic_obs):
        out = pair(self, params, actor_obs, critic_obs)
        paired_where.append(FIRST_CONV in out[0] and FIRST_CONV in out[1])
        return out

    monkeypatch.setattr(FirstConvPair, "__call__", watched)
    paired = _one_update(config)
    assert paired_where == [True, True]  # traced once in the rollout's step, once in the loss
    monkeypatch.setattr(
        FirstConvPair, "__call__", lambda self, params, actor_obs, critic_obs: (actor_obs, critic_obs)
    )
    apart = _one_update(config)
    for a, b in zip(jax.tree.leaves(paired), jax.tree.leaves(apart), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_first_convolution_pair_acts_only_on_one_image_read_by_two_encoders():
    """Each half is its network's kernel over the image; a copy of the image, the 3x3/2 encoder, or a
    critic on the actor's encoder leave both observations as they were."""
    params = (
        make_train(from_dict({**CAMERA_CONFIG, "visual_encoder": "hivex_simple"}))
        .init(jax.random.PRNGKey(0))
        .params
    )
    visual = jax.random.randint(jax.random.PRNGKey(1), (2, 3, 24, 24, 3), 0, 256).astype(jnp.uint8)
    obs = {"vector": jnp.zeros((2, 3, 4)), "visual": visual}
    pair = FirstConvPair("hivex_simple")
    actor_obs, critic_obs = pair(params, obs, obs)
    for net, seen in (("actor", actor_obs), ("critic", critic_obs)):
        kernel = params[net]["params"][ENCODER]["PatchConv_0"]["kernel"]
        own = convolve(visual.reshape(-1, 24, 24, 3), kernel, 4, "VALID", "auto").reshape(2, 3, 5, 5, 4)
        # the second layer (4 x 4 / 2 over 5 x 5) reads 4 x 4 of them: the pair convolves those alone
        np.testing.assert_array_equal(seen[FIRST_CONV], own[:, :, :4, :4])
        assert seen["visual"] is visual
    copy = {**obs, "visual": visual + jnp.uint8(0)}
    shared = {**params, "critic": {"params": {"value_head": params["critic"]["params"]["value_head"]}}}
    for pair_here, args in [
        (pair, (params, obs, copy)),
        (FirstConvPair("strided3"), (params, obs, obs)),
        (pair, (shared, obs, obs)),
    ]:
        actor_obs, critic_obs = pair_here(*args)
        assert actor_obs is args[1] and critic_obs is args[2]


def test_images_stay_uint8_in_the_rollout_buffer():
    train = make_train(from_dict(CAMERA_CONFIG))
    _, (traj, _) = jax.jit(train.rollout)(jax.jit(train.init)(jax.random.PRNGKey(0)))
    assert traj.obs["visual"].dtype == jnp.uint8
    assert traj.obs["visual"].shape == (TINY_CONFIG["num_steps"], TINY_CONFIG["num_envs"], 3, 24, 24, 3)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"visual_encoder": "nope"},
            "visual_encoder must be one of ('strided3', 'hivex_simple'); got 'nope'",
        ),
        (
            {"algo": "mappo", "shared_encoder": True},
            "shared_encoder is IPPO only: MAPPO's critic reads the global",
        ),
    ],
)
def test_bad_values_are_refused_in_one_line(changes, message):
    with pytest.raises(ConfigError) as caught:
        from_dict({**CAMERA_CONFIG, **changes})
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"env_id": "WindFarmControl-v0", "num_agents": None, "cnn_channels": []},
            "visual_encoder=hivex_simple convolves obs['visual'], but WindFarmControl-v0 observes only",
        ),
        (
            {"env_id": TINY_CONFIG["env_id"]},
            "needs images of at least 20 x 20; TinyTrainerTest-v0's are 8 x 8",
        ),
        ({"cnn_channels": [4]}, "cnn_channels needs two entries (e.g. [16, 32]); got [4]"),
    ],
)
def test_hivex_simple_is_refused_where_it_cannot_read_the_image(changes, message):
    config = from_dict({**CAMERA_CONFIG, "visual_encoder": "hivex_simple", **changes})
    with pytest.raises(ConfigError) as caught:
        validate_env(config)
    assert message in str(caught.value) and "\n" not in str(caught.value)
