"""JSON forms of what the server sends and receives: named observations, named actions (validated with
one-line errors), info, full states. Numpy in, plain Python (lists, dicts, numbers) out.

Observation of one session: `{"agents": [{"id": "agent_0", "vector": [...], "fields": {name: [...]},
"visual": ...}, ...]}`; `fields` are the slices of `env.observation_layout()`, `vector` the whole row
(parts the layout does not name, such as ray casts, are only there). `visual` (envs with a camera) is a
nested list `[H][W][C]` by default, or `{"shape": [H, W, C], "dtype": "uint8", "base64": ...}` (the C-order
bytes) when the session asked for `visual_encoding: "base64"`.

Action of one session: a list with one entry per agent, or a dict keyed by agent id (`agent_0`, ...)
with every agent; each entry `{"continuous": [C floats], "discrete": [B ints]}` (a part of width 0 may be
left out). Continuous values follow the library's one rule (`continuous_action`): NaN becomes 0 and
anything outside [-1, 1] (huge values and +-Infinity included) is clipped to it; discrete choices must be
in [0, branch size).
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from hivex_jax.serve.sessions import RequestError


def to_json(x: Any) -> Any:
    """Numpy arrays/scalars and pytrees (dicts, flax dataclasses) as JSON values; NaN and +-inf as None."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: to_json(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, Mapping):
        return {str(k): to_json(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [to_json(v) for v in x]
    a = np.asarray(x)
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):  # JSON has no NaN or infinity
        finite = np.isfinite(a)
        a = a.astype(object)
        a[~finite] = None
    return a.tolist()


def encode_visual(visual: np.ndarray, encoding: str) -> Any:
    """One agent's camera image `[H, W, C]` as a nested list or as base64 bytes with shape and dtype."""
    if encoding == "base64":
        data = np.ascontiguousarray(visual)
        return {
            "shape": list(data.shape),
            "dtype": str(data.dtype),
            "base64": base64.b64encode(data.tobytes()).decode("ascii"),
        }
    return visual.tolist()


def encode_observation(env: Any, obs: dict[str, np.ndarray], encoding: str = "list") -> dict[str, Any]:
    """One session's observation `{vector [A, D], visual? [A, H, W, C]}` with named per-agent fields."""
    layout = env.observation_layout()
    vector = np.asarray(obs["vector"])
    agents = []
    for i, agent_id in enumerate(env.agent_ids):
        row = vector[i]
        entry: dict[str, Any] = {
            "id": agent_id,
            "vector": to_json(row),
            "fields": {name: to_json(row[part]) for name, part in layout.items()},
        }
        if "visual" in obs:
            entry["visual"] = encode_visual(np.asarray(obs["visual"][i]), encoding)
        agents.append(entry)
    return {"agents": agents}


def encode_info(env: Any, info: dict[str, Any]) -> dict[str, Any]:
    """A step's info: reward terms and raw reward terms by name (per-agent lists), everything else as is."""
    out = {}
    for key, value in info.items():
        if key in ("reward_terms", "raw_reward_terms"):
            value = np.asarray(value)
            out[key] = {name: to_json(value[:, k]) for k, name in enumerate(env.reward_term_names)}
        else:
            out[key] = to_json(value)
    return out


def _numbers(values: Any, width: int, where: str, integer: bool) -> list:
    """`values` checked as a list of `width` numbers (ints when `integer`), else a 400 naming `where`."""
    kind = "integers" if integer else "numbers"
    if not isinstance(values, list):
        raise RequestError(400, f"{where} must be a list of {width} {kind}; got {type(values).__name__}")
    if len(values) != width:
        raise RequestError(400, f"{where} must have {width} entries; got {len(values)}")
    for v in values:
        ok = isinstance(v, int) if integer else isinstance(v, int | float)
        if isinstance(v, bool) or not ok:
            raise RequestError(400, f"{where} must hold {kind}; got {v!r}")
    return values


def _float(v: int | float) -> float:
    """`v` as a Python float; an integer beyond float range becomes the infinity of its sign."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def continuous_action(values: list) -> np.ndarray:
    """Continuous action values as float32 by the one rule (docs/serve.md): NaN -> 0, everything else
    clipped to the action bounds [-1, 1], so +-Infinity and values beyond float32 become +-1, not
    +-inf (which float32 would make them) or 0."""
    wide = np.asarray([_float(v) for v in values], np.float64)
    return np.clip(np.nan_to_num(wide, nan=0.0, posinf=1.0, neginf=-1.0), -1.0, 1.0).astype(np.float32)


def decode_action(env: Any, action: Any) -> dict[str, np.ndarray]:
    """A session's JSON action as `{continuous f32[A, C], discrete i32[A, B]}`; a 400 names any problem."""
    a, c, branches = env.num_agents, env.continuous_dims, env.discrete_branches
    ids = env.agent_ids
    if isinstance(action, Mapping):
        if set(action) in ({"continuous"}, {"discrete"}, {"continuous", "discrete"}):
            raise RequestError(
                400, "action must be one entry per agent (a list, or a dict keyed by agent id); got one entry"
            )
        missing, unknown = [i for i in ids if i not in action], sorted(set(action) - set(ids))
        if unknown:
            raise RequestError(400, f"action names unknown agents {unknown}; agents are {list(ids)}")
        if missing:
            raise RequestError(400, f"action is missing agents {missing}")
        entries = [action[i] for i in ids]
    elif isinstance(action, list):
        if len(action) != a:
            raise RequestError(400, f"action must have one entry per agent ({a}); got {len(action)}")
        entries = action
    else:
        raise RequestError(
            400, f"action must be a list of {a} per-agent entries; got {type(action).__name__}"
        )
    continuous = np.zeros((a, c), np.float32)
    discrete = np.zeros((a, len(branches)), np.int32)
    for i, entry in enumerate(entries):
        where = f"action[{ids[i]}]"
        if not isinstance(entry, Mapping):
            raise RequestError(400, f"{where} must be an object {{continuous, discrete}}; got {entry!r}")
        unknown = sorted(set(entry) - {"continuous", "discrete"})
        if unknown:
            raise RequestError(400, f"{where} has unknown keys {unknown}; keys are continuous, discrete")
        for part, width in (("continuous", c), ("discrete", len(branches))):
            if part not in entry and width:
                raise RequestError(400, f"{where} is missing '{part}' ({width} entries)")
        if c:
            continuous[i] = continuous_action(_numbers(entry["continuous"], c, f"{where}.continuous", False))
        elif entry.get("continuous", []) != []:
            raise RequestError(
                400, f"{where}.continuous must be empty: {env.env_id} has no continuous action"
            )
        if branches:
            choices = _numbers(entry["discrete"], len(branches), f"{where}.discrete", integer=True)
            for b, (choice, size) in enumerate(zip(choices, branches, strict=True)):
                if not 0 <= choice < size:
                    raise RequestError(400, f"{where}.discrete[{b}] must be in [0, {size}); got {choice}")
            discrete[i] = choices
        elif entry.get("discrete", []) != []:
            raise RequestError(400, f"{where}.discrete must be empty: {env.env_id} has no discrete action")
    return {"continuous": continuous, "discrete": discrete}


def encode_action(env: Any, action: dict[str, Any]) -> list[dict[str, list]]:
    """An array action `{continuous [A, C], discrete [A, B]}` in the server's JSON form (for clients)."""
    continuous, discrete = np.asarray(action["continuous"]), np.asarray(action["discrete"])
    return [
        {"continuous": continuous[i].astype(float).tolist(), "discrete": discrete[i].astype(int).tolist()}
        for i in range(env.num_agents)
    ]
