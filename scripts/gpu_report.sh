#!/usr/bin/env bash
# Every GPU measurement that docs/benchmarks.md asks for, in one run of about 8 minutes,
# most important first; each step has its own timeout so one slow step cannot lose the rest.
#
#   OUT=/some/folder scripts/gpu_report.sh          # on the GPU machine (the device tool sets $OUT)
#   SMALL=1 OUT=runs/gpu_dry scripts/gpu_report.sh  # dry run on a CPU: same steps, tiny sizes
#   PART=targets OUT=/some/folder scripts/gpu_report.sh  # instead: time every env's GPU config to its target
#
# PART=targets runs `hivex train --config configs/ippo_<env>_gpu.yaml` for the five envs, each
# stopping at its target (a fraction of the scripted controller's held-out return, in the config) or at
# its step limit (T_TARGET s, default 150): about 12 minutes at most, a session's device budget on its own.
#
# PART=sweeps times fused sweeps against --no-fuse, each as one `hivex sweep`: Wind Farm Control
# lr x ent_coef 3 x 3 and Wildfire Resource Management levels 1-10, 3 seeds each, at the CPU configs' sizes
# (8 envs per seed: the small config that leaves a GPU idle), and a 256-member WFC sweep (16 lr x 16
# ent_coef, 1 seed each) in one program. About 8 minutes at most.
#
# Writes into $OUT: env.txt (device, versions), train_<n>seeds.json (end-to-end IPPO throughput at
# 4,096 worlds x 128 steps; peer_train_mpe.json: the same on JaxMARL MPE), time_to_target/ (a
# `hivex train` run that stops at 0.92 of the 4999-decision maximum, with summary.json), bench_<env>.json
# (random-action env throughput; Wind Farm beside JaxMARL MPE when jaxmarl is importable), log.txt and
# summary.md. Paste the figures into docs/benchmarks.md with the date.
set -u
OUT=${OUT:-gpu_report_out}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE=false

if [ "${SMALL:-0}" = "1" ]; then  # CPU dry run: every step, tiny sizes
  ENVS=64; SEEDS_MANY=4; UPDATES=2; SIZES="1,64"; OTHER_SIZES="16"; REPEATS=1; POOL=16
  TARGET_ARGS="num_envs=64 num_minibatches=4 total_env_steps=16384 test_worlds=6000:6002 stop_at_test_return=-1e9"
  T_SHORT=300; T_LONG=600; T_OTHER=300
else
  ENVS=4096; SEEDS_MANY=32; UPDATES=10; SIZES="1,1024,16384,131072,262144"; OTHER_SIZES="1024,8192"
  REPEATS=3; POOL=1000; TARGET_ARGS=""; T_SHORT=60; T_LONG=150; T_OTHER=45
fi

step() {  # step <name> <timeout_s> <command...>: run, log, never abort the script
  local name=$1 limit=$2
  shift 2
  echo "=== $name (limit ${limit}s): $*" | tee -a "$LOG"
  local start=$SECONDS
  timeout "$limit" "$@" >>"$LOG" 2>&1
  local status=$?
  echo "{\"exit\": $status, \"seconds\": $((SECONDS - start))}" >"$OUT/step_$name.json"
  echo "=== $name: exit $status after $((SECONDS - start)) s" | tee -a "$LOG"
}

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import jax, jaxlib, sys; print('python', sys.version.split()[0], 'jax', jax.__version__, \
'jaxlib', jaxlib.__version__, jax.devices())"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [ "${PART:-all}" = "sweeps" ]; then
  STEPS=20480; SWEEP_WORLDS="6000:6002"; LRS16="" ; ENTS16=""; N=16
  [ "${SMALL:-0}" = "1" ] && STEPS=2048 && SWEEP_WORLDS="6000:6001" && N=4
  for i in $(seq 0 $((N - 1))); do  # N log-spaced values each: lr 1e-4..1e-2, ent_coef 1e-4..3e-2
    LRS16="$LRS16${LRS16:+,}$(python3 -c "print(f'{1e-4 * 100 ** ($i / ($N - 1)):.3g}')")"
    ENTS16="$ENTS16${ENTS16:+,}$(python3 -c "print(f'{1e-4 * 300 ** ($i / ($N - 1)):.3g}')")"
  done
  COMMON="total_env_steps=$STEPS gif_frames=0 eval_every=0 checkpoint_every=0 test_worlds=$SWEEP_WORLDS"
  for fuse in fused nofuse; do
    FLAG=""; [ "$fuse" = "nofuse" ] && FLAG="--no-fuse"
    # shellcheck disable=SC2086  # COMMON and FLAG are lists of arguments
    step "sweep_wfc_lr_ent_$fuse" 150 env HIVEX_JAX_CACHE_DIR= python3 -m hivex_jax sweep --no-progress $FLAG \
      --grid lr=3e-4,1e-3,3e-3 --grid ent_coef=0.001,0.005,0.01 num_seeds=3 $COMMON \
      --out-dir "$OUT" --name "sweep_wfc_lr_ent_$fuse"
    # shellcheck disable=SC2086
    step "sweep_wrm_levels_$fuse" 150 env HIVEX_JAX_CACHE_DIR= python3 -m hivex_jax sweep --no-progress $FLAG \
      --config configs/ippo_wildfire_resource_management.yaml --grid level=1,2,3,4,5,6,7,8,9,10 num_seeds=3 \
      $COMMON --out-dir "$OUT" --name "sweep_wrm_levels_$fuse"
  done
  # shellcheck disable=SC2086
  step sweep_wfc_256 150 env HIVEX_JAX_CACHE_DIR= python3 -m hivex_jax sweep --no-progress \
    --grid "lr=$LRS16" --grid "ent_coef=$ENTS16" num_seeds=1 $COMMON --out-dir "$OUT" --name sweep_wfc_256
  python3 scripts/gpu_report_summary.py "$OUT" | tee "$OUT/summary.md"
  exit 0
fi

if [ "${PART:-all}" = "targets" ]; then
  T_TARGET=${T_TARGET:-150}
  EXTRA=""
  [ "${SMALL:-0}" = "1" ] && EXTRA="num_envs=16 num_seeds=1 num_minibatches=2 total_env_steps=2048 test_worlds=6000:6001"
  for env in wind_farm_control wildfire_resource_management ocean_plastic_collection drone_based_reforestation \
    aerial_wildfire_suppression; do
    # shellcheck disable=SC2086  # EXTRA is a list of key=value overrides
    step "target_$env" "$T_TARGET" env HIVEX_JAX_CACHE_DIR= python3 -m hivex_jax train --no-progress \
      --config "configs/ippo_${env}_gpu.yaml" --out-dir "$OUT" --name "target_$env" $EXTRA
  done
  python3 scripts/gpu_report_summary.py "$OUT" | tee "$OUT/summary.md"
  exit 0
fi


# 1. end-to-end IPPO throughput, Wind Farm Control at 4,096 worlds x 128 steps (goal >= 1.85e7 env steps/s)
step train_1seed "$T_SHORT" python3 -m baselines.cli.bench --config configs/ippo_wind_farm_control.yaml \
  --updates "$UPDATES" --json "$OUT/train_1seeds.json" num_envs="$ENVS" num_seeds=1 num_minibatches=8

# 1b. the same trainer and sizes on JaxMARL's MPE simple_spread (the 1.85e7 reference's env), when installed
PEER=$(python3 -c "import jaxmarl" >/dev/null 2>&1 && echo --peer)
if [ -n "$PEER" ]; then
  step train_mpe "$T_SHORT" python3 -m baselines.cli.bench --config configs/ippo_jaxmarl_mpe_simple_spread.yaml \
    --updates "$UPDATES" --json "$OUT/peer_train_mpe.json" num_envs="$ENVS" num_seeds=1 num_minibatches=8
fi

# 2. time to 0.92 of the maximum return (4600 of 4999; goal < 60 s with compilation): no compilation cache
step time_to_target "$T_LONG" env HIVEX_JAX_CACHE_DIR= python3 -m hivex_jax train --no-progress \
  --config configs/ippo_wind_farm_control_gpu.yaml --out-dir "$OUT" --name time_to_target $TARGET_ARGS

# 3. 32 vmapped seeds vs 1 (goal: at most twice the wall time of one seed for the same updates)
step "train_${SEEDS_MANY}seeds" "$T_LONG" python3 -m baselines.cli.bench --config configs/ippo_wind_farm_control.yaml \
  --updates "$UPDATES" --json "$OUT/train_${SEEDS_MANY}seeds.json" num_envs="$ENVS" num_seeds="$SEEDS_MANY" \
  num_minibatches=8

# 4. random-action env throughput over batch sizes (Wind Farm beside JaxMARL MPE when installed)
step bench_wfc 120 python3 -m hivex_jax bench --env WindFarmControl-v0 $PEER --batch-sizes "$SIZES" \
  --repeats "$REPEATS" --json "$OUT/bench_WindFarmControl-v0.json"
for env in WildfireResourceManagement-v0 OceanPlasticCollection-v0 DroneBasedReforestation-v0 \
  AerialWildfireSuppression-v0; do
  step "bench_$env" "$T_OTHER" python3 -m hivex_jax bench --env "$env" --batch-sizes "$OTHER_SIZES" \
    --repeats "$REPEATS" --pregenerate "$POOL" --json "$OUT/bench_$env.json"
done

# 5. the camera env beside a camera peer, Craftax-Classic-Pixels, when craftax is installed (both auto-reset).
# The check imports craftax.craftax_env: its first import builds Craftax's texture cache (about a minute
# on one CPU core), which must not count against the timed step.
if python3 -c "import craftax.craftax_env" >/dev/null 2>&1; then
  step bench_aws_craftax "$T_OTHER" python3 -m hivex_jax bench --env AerialWildfireSuppression-v0 \
    --peer craftax-pixels --batch-sizes "$OTHER_SIZES" --repeats "$REPEATS" --json "$OUT/bench_aws_craftax.json"
fi

python3 scripts/gpu_report_summary.py "$OUT" | tee "$OUT/summary.md"
