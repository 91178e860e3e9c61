"""Zero-copy handover of batched arrays between JAX and PyTorch / NumPy through DLPack.

```python
from hivex_jax.interop.dlpack import to_torch, from_torch

obs, state, reward, terminated, truncated, info = step(keys, state, actions, params)  # jitted, vmapped
obs_t, reward_t = to_torch((obs, reward))          # torch tensors sharing the JAX buffers (CPU or GPU)
actions = from_torch({"continuous": c_t, "discrete": d_t})   # back to JAX, no copy either
```
The tensors alias the JAX buffers: treat them as read-only (JAX arrays are immutable, and a trainer
that writes into them would change the arrays JAX still holds). PyTorch is not a dependency of
hivex_jax; these helpers import it only when called. `to_numpy` is the same handover to NumPy, which
is zero-copy for arrays on the CPU (a GPU array is copied to the host).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from hivex_jax.interop._common import require


def _is_array(x: Any) -> bool:
    return isinstance(x, jax.Array)


def to_torch(tree: Any) -> Any:
    """Every JAX array leaf of `tree` as a `torch.Tensor` on the same device, sharing its memory."""
    torch = require("torch", extra="torch")

    def convert(x):
        if not _is_array(x):
            return x
        if x.size == 0:  # nothing to share; some DLPack importers reject empty tensors
            return torch.empty(
                tuple(x.shape), dtype=_torch_dtype(torch, x.dtype), device=_torch_device(torch, x)
            )
        return torch.from_dlpack(x)

    return jax.tree.map(convert, tree)


def from_torch(tree: Any) -> Any:
    """Every `torch.Tensor` leaf of `tree` as a JAX array sharing its memory (contiguous tensors)."""
    torch = require("torch", extra="torch")

    def convert(x):
        if not isinstance(x, torch.Tensor):
            return x
        return jax.dlpack.from_dlpack(x.detach().contiguous())

    return jax.tree.map(convert, tree, is_leaf=lambda x: isinstance(x, torch.Tensor))


def to_numpy(tree: Any) -> Any:
    """Every JAX array leaf as a read-only NumPy array: the same buffer on the CPU, a host copy otherwise."""

    def convert(x):
        if not _is_array(x):
            return x
        if all(d.platform == "cpu" for d in x.devices()):
            return np.from_dlpack(x)
        return np.asarray(x)

    return jax.tree.map(convert, tree)


def _torch_dtype(torch: Any, dtype: Any) -> Any:
    return getattr(torch, np.dtype(dtype).name if np.dtype(dtype).name != "bool" else "bool")


def _torch_device(torch: Any, x: jax.Array) -> Any:
    device = next(iter(x.devices()))
    if device.platform == "gpu":
        index = getattr(device, "local_hardware_id", None)
        return torch.device("cuda", device.id if index is None else index)
    return torch.device("cpu")
