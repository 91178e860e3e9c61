"""The profile of `hivex bench --train CONFIG --profile` (`baselines.cli.profile.train_profile`) as a text
table: one row per piece of an update, then the evaluation, host time and the learner's GFLOP/s; and what
the camera row says (`camera_summary`)."""

from __future__ import annotations

import math
from typing import Any

# ------------------------------------------------------------------------------------------ profile
#: the pieces of one update the profile compiles and times apart, in the order an update runs them
PIECES = {
    "env_step": "env step (random actions)",
    "rollout_inference": "rollout inference (policy + critic)",
    "gae": "GAE",
    "ppo_epochs": "PPO epochs (fwd + bwd, actor + critic)",
}


def profile_table(profile: dict[str, Any]) -> str:
    """The profile as a plain-text table: a column per variant (time per update, share of the pieces,
    ratio to the first variant), then the whole update, host, evaluation, learner and camera rows."""
    variants = profile["variants"]
    names = ["config"] + [f"variant {i}" for i in range(1, len(variants))]
    width = 26
    lines = [f"variant {i}: {' '.join(v['overrides'])}" for i, v in enumerate(variants) if i]
    lines.append(f"{'seconds per update':40s}" + "".join(f"  {n:>{width}s}" for n in names))

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"{label[:40]:40s}" + "".join(f"  {c:>{width}s}" for c in cells))

    for name, label in PIECES.items():
        cells = []
        for v in variants:
            piece = v["pieces"][name]
            ratio = f", {v['ratio_to_first'][name]:.2f}x" if v is not variants[0] else ""
            cells.append(f"{piece['seconds']:.3g} s ({100 * piece['share']:.1f} %{ratio})")
        row(label, cells)
    row("sum of the pieces", [f"{v['sum_of_pieces_s']:.3g} s" for v in variants])
    row(
        "whole update (the trainer's program)",
        [
            f"{v['update_s']:.3g} s"
            + (f" ({v['ratio_to_first']['update']:.2f}x)" if v is not variants[0] else "")
            for v in variants
        ],
    )
    row("  pieces / whole update", [f"{v['pieces_over_update']:.2f}" for v in variants])
    row("  rollout (env + inference, one program)", [f"{v['rollout_s']:.3g} s" for v in variants])
    row("  agent-steps/s (whole update)", [f"{v['agent_steps_per_s']:.4g}" for v in variants])
    row("host (metrics fetch, checks, CSV row)", [f"{v['host_s_per_update']:.2g} s" for v in variants])
    if all("evaluation" in v for v in variants):
        row(
            "evaluation: one, test worlds",
            [
                f"{v['evaluation']['seconds']:.3g} s ({_count(v['evaluation']['worlds'], 'world')})"
                for v in variants
            ],
        )
        row(
            "  per update of a run",
            [
                f"{v['evaluation']['per_update_s']:.3g} s ({v['evaluation']['per_run']} per run)"
                for v in variants
            ],
        )
    row("learner GFLOP/s (PPO epochs)", [learner_cell(v["learner"]["gflops_per_s"]) for v in variants])
    row(
        "  learner FLOPs per agent-step",
        [learner_cell(v["learner"]["flops_per_agent_step"]) for v in variants],
    )
    row("  of the matmul's GFLOP/s", [learner_cell(v["learner"]["of_matmul"], ".2f") for v in variants])
    row("camera (in the rollout buffer)", [camera_text(v["camera"]) for v in variants])
    row("  image features into the dense layer", [_camera_features(v["camera"]) for v in variants])
    matmul = profile["matmul"]
    lines.append(
        f"float32 {matmul['side']:,}^2 matmul: {matmul['gflops_per_s']:.3g} GFLOP/s "
        f"({min(matmul['all']):.3g}-{max(matmul['all']):.3g}, one before each PPO epochs); "
        f"{profile['device']} ({profile['backend']}), jax {profile['jax_version']}, "
        f"median of {profile['repeats']} rounds"
    )
    return "\n".join(lines)


#: a learner figure that has no count: a recurrent actor replays its sequences in a loop inside each minibatch
#: step, and XLA's cost analysis counts a loop's body once
NO_FLOP_COUNT = "n/a (recurrent)"


def learner_cell(value: float, spec: str = ".3g") -> str:
    """A learner row's cell: the figure, or `NO_FLOP_COUNT` where the profile has none (NaN)."""
    return NO_FLOP_COUNT if math.isnan(value) else format(value, spec)


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


def camera_summary(config: Any, traj: Any, actor_params: dict) -> dict[str, Any] | str:
    """The actor's camera as the rollout stores it (shape, dtype in the buffer) and the features its
    convolutions hand the first dense layer (`actor_params` of one seed); "none" for an env without
    `obs["visual"]`."""
    if "visual" not in traj.obs:
        return "none"
    # imported when run, not at the top: keeps the command's start (--help, argument errors) fast
    from baselines.core.networks import ENCODER

    shape = tuple(int(d) for d in traj.obs["visual"].shape[-3:])
    dense = actor_params["params"][ENCODER]["Dense_0"]["kernel"].shape[-2]  # the flattened convs' features
    return {
        "shape": list(shape),
        "buffer_dtype": str(traj.obs["visual"].dtype),
        "visual_encoder": config.visual_encoder,
        "cnn_channels": list(config.cnn_channels),
        "features": int(dense),
        "shared_encoder": config.shared_encoder,
    }


def camera_text(camera: Any) -> str:
    """The camera row's cell: shape and dtype in the buffer, then the encoder (`flattened` where
    `cnn_channels` is empty: the image goes into the dense layer with no convolution)."""
    if camera == "none":
        return "none"
    encoder = camera["visual_encoder"] if camera["cnn_channels"] else "flattened"
    return f"{'x'.join(str(d) for d in camera['shape'])} {camera['buffer_dtype']}, {encoder}"


def _camera_features(camera: Any) -> str:
    return "none" if camera == "none" else f"{camera['features']:,}"
