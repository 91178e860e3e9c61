"""Pretrained policies shipped with the package: one IPPO and one MAPPO actor per environment's main task,
each the median training seed of its suite cell, with a card (config, commit, env steps, held-out result,
suite cell, the figures its test reproduces) and a sha256 per file in `data/manifest.json`.

`pretrained(env_id, algo="ippo")` loads one as a `Pretrained` (`store`): `.act(params, obs, key)` is a pure
function of one env's observation `[A, ...]`, usable under `jit` / `vmap`. `play` scores them (the card's
check, the held-out evaluation `hivex evaluate --pretrained` prints, a transfer matrix row, a GIF's policy);
`build` writes the files (`scripts/pretrained.py` trains and builds them). docs/pretrained.md lists them.

The files live with the trainer, not in `hivex_jax`: the weights are the trainer's networks
(`baselines.core.networks`), rebuilt from the trainer's config, and the library imports nothing from here.

Layer: above `baselines.run` (its evaluation plays them), below `baselines.cli`; may import
`baselines.config`, `core`, `run` and `hivex_jax`, never `baselines.cli` or `studies`.
"""

from baselines.pretrained_policies.store import (
    DATA_DIR,
    MANIFEST,
    Pretrained,
    PretrainedError,
    available,
    load,
    pretrained,
)

__all__ = ["DATA_DIR", "MANIFEST", "Pretrained", "PretrainedError", "available", "load", "pretrained"]
