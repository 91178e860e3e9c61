"""The PPO core: what one compiled training program is made of. The kernels (GAE, the PPO loss,
minibatches, the optimizer), the networks and actors, the critic's and normaliser's inputs, value heads,
fused members, the training-only extensions, the training env stack, the program cache and `make_train`
(`ppo.py`, which reads top to bottom; the update's minibatch step, epochs and loss: `ppo_update.py`).

Layer: above `baselines.config`; may import it and `hivex_jax`, never `baselines.run`, `cli` or `studies`.
"""
