#!/usr/bin/env bash
# Wind Farm Control throughput with wakes off/on at 8 and 80 turbines, one after another in one run.
# Usage: PJRT_NPROC=1 bash scripts/wfc_wakes_bench.sh [batch sizes, default 1,16] ; JSON in bench_results/
set -euo pipefail
BATCH=${1:-1,16}
mkdir -p bench_results
for agents in 8 80; do
  for wake in none gauss; do
    echo "== num_agents=$agents wake_model=$wake"
    python -m hivex_jax bench --env WindFarmControl-v0 --batch-sizes "$BATCH" --steps 64 --repeats 3 \
      --json "bench_results/wfc_wakes_${agents}_${wake}.json" num_agents=$agents wake_model=$wake
  done
done
