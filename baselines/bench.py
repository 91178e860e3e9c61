"""`python -m baselines.cli.bench`: the training-throughput measurement of `baselines.cli.bench`, kept at its
first path for the scripts and docs that run it."""

import runpy

if __name__ == "__main__":
    runpy.run_module("baselines.cli.bench", run_name="__main__", alter_sys=True)
