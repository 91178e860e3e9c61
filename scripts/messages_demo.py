"""Communication demo on Wildfire Resource Management: does a message channel help?

Trains configs/ippo_wildfire_resource_management_messages.yaml under three conditions, (a) no messages,
(b) messages (vocab 2), (c) every delivery dropped, and evaluates (d) (b)'s policy with every delivery
dropped; what each condition is and what the table measures: `baselines.studies.messages_demo`.

    python scripts/messages_demo.py --out-dir runs/messages_demo       # all conditions, then the table
    python scripts/messages_demo.py --out-dir runs/messages_demo --table  # only the table from finished runs

Resumable: a condition whose run folder has eval.json is not trained again; a run folder without one
is continued with `hivex train --resume`. Writes OUT_DIR/messages_demo.json, messages_demo.md and
messages_demo.png (each condition's returns, mean and 95% CI over seeds).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: import the package from this checkout
    sys.path.insert(0, str(ROOT))

from baselines.studies.messages_demo import headroom, run_demo, table  # noqa: E402
from baselines.studies.messages_report import markdown, plot_returns, plot_usage  # noqa: E402
from baselines.studies.study import CellError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Train the conditions (unless --table / --headroom / --plot), then write and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", default="runs/messages_demo")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=None, help="total_env_steps per seed (default: the config's)")
    p.add_argument("--worlds", default="6000:6032")
    p.add_argument("--conditions", default="no_messages,messages,lossy")
    p.add_argument("--table", action="store_true", help="only tabulate finished runs")
    p.add_argument("--headroom", action="store_true", help="only the state-reading controllers' returns")
    p.add_argument(
        "--plot",
        nargs=2,
        metavar=("PNG", "LABEL=JSON,..."),
        help="only draw the per-seed message statistics of finished demos (their messages_demo.json)",
    )
    p.add_argument("overrides", nargs="*", help="extra key=value for every condition's config")
    args = p.parse_args(argv)
    if args.plot:
        png, specs = args.plot
        plot_usage(dict(spec.split("=", 1) for spec in specs.split(",")), Path(png))
        return 0
    if args.headroom:
        print(json.dumps(headroom(args.worlds, args.overrides)))
        return 0
    out_dir = Path(args.out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if not args.table:
        try:
            run_demo(args.conditions.split(","), out_dir, args.seeds, args.steps, args.worlds, args.overrides)
        except CellError as exc:
            raise SystemExit(f"messages_demo: {exc}") from exc
    result = table(out_dir, args.worlds)
    (out_dir / "messages_demo.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (out_dir / "messages_demo.md").write_text(text)
    if result["conditions"]:
        plot_returns(result, out_dir / "messages_demo.png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
