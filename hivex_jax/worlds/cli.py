"""`hivex world export | show | fields`: write a generated world to files, check and describe world files."""

from __future__ import annotations

import argparse

import numpy as np

from hivex_jax.cli_support import ArgumentParser, check_world_seed, check_writable_dir, reports_user_errors
from hivex_jax.core.errors import user_input


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="hivex world", description="World files (docs/worlds.md).")
    # sub-parsers of the same class: their errors are one-line UserErrors too
    sub = parser.add_subparsers(dest="action", required=True, parser_class=ArgumentParser)
    export_help = "write a generated world as <field>.npy files + world.json"
    export = sub.add_parser(
        "export",
        help=export_help,
        description=export_help + " (with --png, editable PNGs and previews); load it back with "
        "env_options.world_files=DIR or `hivex world show DIR --env ...` (docs/worlds.md)",
    )
    export.add_argument("--env", required=True, help="environment id, e.g. WildfireResourceManagement-v0")
    export.add_argument("--world", type=int, required=True, help="world seed, e.g. 6000")
    export.add_argument("--out", required=True, help="output directory")
    export.add_argument("--level", type=int, default=None, help="terrain level / pattern (env default)")
    export.add_argument("--stress", default=None, help="export this stress world (hivex world fields)")
    export.add_argument(
        "--png",
        action="store_true",
        help="grid and codes fields as editable PNGs instead of .npy, and contrast-stretched previews "
        "with a legend in OUT/preview/",
    )
    show_help = "load world files for an env (checks them) and describe the fields"
    show = sub.add_parser("show", help=show_help, description=show_help)
    show.add_argument("path", nargs="+", help="world directory, .npz or single field file")
    show.add_argument("--env", required=True)
    show.add_argument("--level", type=int, default=None)
    fields_help = "list an env's world fields and stress worlds"
    fields = sub.add_parser("fields", help=fields_help, description=fields_help)
    fields.add_argument("--env", required=True)
    return parser


def _env(env_id: str, level: int | None):
    import hivex_jax

    with user_input("--env"):
        env, params = hivex_jax.make(env_id)
    raw = getattr(env, "unwrapped", env)
    if level is not None:
        with user_input("--level"):
            params = raw.variant_params(params, level=level)
    return raw, params


@reports_user_errors("hivex world")
def main(argv: list[str] | None = None) -> int:
    """Entry point of `hivex world`."""
    return _run(_parser().parse_args(argv))


def _run(args: argparse.Namespace) -> int:
    from hivex_jax.worlds import field_specs, load_world, save_world, world_of_seed
    from hivex_jax.worlds.fields import input_specs

    if args.action == "export":
        check_world_seed(args.world)  # -1 or 2**40 would overflow the world key: one line instead
    env, params = _env(args.env, getattr(args, "level", None))
    if args.action == "fields":
        for spec in field_specs(env).values():
            print(f"{spec.name:24s} {spec.kind:6s} {spec.doc}")
        for spec in input_specs(env).values():
            print(f"{spec.name:24s} {spec.kind:6s} {spec.doc}")
        from hivex_jax.worlds.stress import stress_names

        print("stress worlds:", ", ".join(stress_names(env)))
        return 0
    if args.action == "export":
        check_writable_dir(args.out, "--out")  # before generating: a file in the way is a one-line error
        if args.stress:
            from hivex_jax.worlds.stress import stress_world_of_seed

            world = stress_world_of_seed(env, params, args.stress, args.world)
        else:
            world = world_of_seed(env, params, args.world)
        written = save_world(world, args.out, env, seed=args.world, images=args.png)
        print(f"wrote {len(written)} files of {env.env_id} world {args.world} to {args.out}")
        if args.png:
            from hivex_jax.worlds.files import PREVIEW_DIR

            pngs = [p.name for p in written if p.suffix == ".png" and p.parent.name != PREVIEW_DIR]
            print(
                (
                    f"editable PNGs instead of .npy: {', '.join(pngs)}; "
                    if pngs
                    else "no grid or codes field: "
                )
                + f"previews to look at (not read back) in {args.out}/{PREVIEW_DIR}; "
                "legend.txt there says what grey means"
            )
        return 0
    for path in args.path:
        world = load_world(path, env, params)
        print(f"{path}: {len(world)} field(s)")
        for name, values in world.items():
            print(
                f"  {name:22s} {str(values.dtype):8s} {list(np.shape(values))!s:14s} "
                f"min {values.min():.6g} max {values.max():.6g}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
