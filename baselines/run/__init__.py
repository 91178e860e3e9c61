"""Running the core: the population of seeds on the devices, fused sweeps (planning and running), the host
loop (`runner.run_training`) and its helper processes on idle CPU cores (`helpers`; the chunk they share:
`split_training`), several processes, memory estimates, checkpoints, guards, a run folder's files, held-out
and HIVEX-protocol evaluation, and zero-shot transfer.

Layer: above `baselines.core`; may import it, `baselines.config` and `hivex_jax`, never `baselines.cli` or
`studies`.
"""
