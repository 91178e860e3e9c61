"""Estimate the device memory a training config needs, without the device: compile its training chunk for
the config's population on this machine's backend and read XLA's memory analysis.

    PJRT_NPROC=1 python scripts/gpu_memory_estimate.py --config configs/ippo_<env>_gpu.yaml

Prints (and with `--json` writes) the state (arguments), output and temporary buffer sizes of one compiled
chunk (`chunk_updates` updates: rollout, GAE and PPO epochs for every seed), from abstract shapes: nothing
of the population's size is allocated here. The estimate is XLA's buffer assignment on the backend it runs
on (on a CPU, the CPU compiler's fusion): a GPU build fuses differently, so treat it as the order of
magnitude, and keep the headroom the configs state.
"""

from __future__ import annotations

from hivex_jax.cli_support import prepare_jax

prepare_jax()  # PJRT_NPROC before jax starts a backend (hivex_jax/cli_support.py)

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jax  # noqa: E402

GIB = 2**30


def estimate(config_path: str | None, overrides: list[str]) -> dict[str, Any]:
    """Compile the config's training chunk from abstract shapes; its memory analysis in bytes and GiB
    (`baselines.run.memory`, the estimate `hivex train` checks against the device before training)."""
    from baselines.config import load_config
    from baselines.core.ppo import make_train
    from baselines.run.memory import compile_with_estimate
    from baselines.run.population import Population

    config = load_config(config_path, overrides)
    estimate = compile_with_estimate(Population(make_train(config)))
    if estimate is None:
        raise SystemExit(f"the {jax.default_backend()} backend gives no memory analysis")
    # the state is donated on accelerators (outputs reuse argument buffers, alias_bytes), not on the CPU
    return {
        "config": config_path,
        "overrides": overrides,
        "env_id": config.env_id,
        "num_seeds": config.num_seeds,
        "num_envs": config.num_envs,
        "num_steps": config.num_steps,
        "chunk_updates": config.chunk_updates,
        **estimate.to_dict(),
        "peak_gib_upper": (estimate.argument_bytes + estimate.temp_bytes + estimate.output_bytes) / GIB,
        "backend": jax.default_backend(),
        "jax_version": jax.__version__,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = parser.parse_args(argv)
    result = estimate(args.config, args.overrides)
    text = json.dumps(result, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    print(
        f"{result['env_id']}: state {result['argument_bytes'] / GIB:.2f} GiB, temporaries "
        f"{result['temp_bytes'] / GIB:.2f} GiB, at most {result['peak_gib_upper']:.2f} GiB per chunk "
        f"({result['backend']} buffer assignment)"
    )


if __name__ == "__main__":
    main()
