"""The trainer's parts of the `hivex` command (`train`, `evaluate`, `sweep`, `transfer`, `bench --train`),
found through the `hivex_jax.commands` entry points in pyproject.toml, and what they share (`common`).

Layer: above `baselines.run`; may import every lower part of the trainer and `hivex_jax`, never
`baselines.studies`.
"""
