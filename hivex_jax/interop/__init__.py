"""Adapters to other ecosystems; each imports its library only when used.

- `hivex_jax.interop.pettingzoo`: `HivexParallelEnv` (PettingZoo Parallel API), `aec_env` (pettingzoo)
- `hivex_jax.interop.gymnasium`: `HivexVectorEnv` (one sub-env per agent), `HivexGymEnv` (gymnasium)
- `hivex_jax.interop.jaxmarl`: `HivexJaxMARLEnv` / `to_jaxmarl`, JaxMARL's `MultiAgentEnv` (jaxmarl)
- `hivex_jax.interop.dlpack`: `to_torch`, `from_torch`, `to_numpy`, zero-copy DLPack (torch optional)

Install the optional libraries with `pip install "hivex-jax[interop]"` (JaxMARL: `[bench]` or `[dev]`).
The names below are also reachable here lazily, e.g. `from hivex_jax.interop import HivexVectorEnv`;
`import hivex_jax` and `import hivex_jax.interop` import none of these libraries. See docs/interop.md.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "HivexParallelEnv": "pettingzoo",
    "parallel_env": "pettingzoo",
    "aec_env": "pettingzoo",
    "HivexGymEnv": "gymnasium",
    "HivexVectorEnv": "gymnasium",
    "register_envs": "gymnasium",
    "HivexJaxMARLEnv": "jaxmarl",
    "to_jaxmarl": "jaxmarl",
    "to_torch": "dlpack",
    "from_torch": "dlpack",
    "to_numpy": "dlpack",
    "ActionLayout": "_common",
}

# computed from _LAZY so the two cannot disagree; a type checker reads only literal lists
__all__ = sorted(_LAZY)  # pyright: ignore[reportUnsupportedDunderAll]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"hivex_jax.interop.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'hivex_jax.interop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
