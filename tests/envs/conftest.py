"""Env tests: this folder is on `sys.path`, so every env's tests share `fidelity_table`."""
