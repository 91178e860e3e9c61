"""The bundled trainer: IPPO and MAPPO compiled end to end with the environments (PureJaxRL style).

`make_train(config)` -> `Train(init, update_chunk, act, ...)`; `run_training(config)` is the host loop
behind `hivex train`. See docs/training.md. `pretrained(env_id, algo)` loads a shipped policy
(docs/pretrained.md).
"""

from baselines.config import IPPOConfig, MAPPOConfig, PPOConfig, load_config

__all__ = [
    "IPPOConfig",
    "MAPPOConfig",
    "PPOConfig",
    "load_config",
    "make_train",
    "pretrained",
    "run_training",
]


def make_train(config, env=None, env_params=None):
    """`baselines.core.ppo.make_train`: IPPO or MAPPO according to `config.algo`."""
    # imported when called: keeps `import baselines` (and the CLI's start) light
    from baselines.core.ppo import make_train as _make_train

    return _make_train(config, env, env_params)


def run_training(config, run_dir=None, **kwargs):
    """The host training loop (see `baselines.run.runner.run_training`)."""
    # imported when called: keeps `import baselines` (and the CLI's start) light
    from baselines.run.runner import run_training as _run_training

    return _run_training(config, run_dir, **kwargs)


def pretrained(env_id: str, algo: str = "ippo", greedy: bool = True):
    """The shipped `algo` policy of `env_id`: `baselines.pretrained_policies.Pretrained`, whose
    `act(params, obs, key)` is pure (docs/pretrained.md)."""
    # imported when called: keeps `import baselines` (and the CLI's start) light
    from baselines.pretrained_policies import pretrained as _pretrained

    return _pretrained(env_id, algo, greedy)
