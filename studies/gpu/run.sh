#!/usr/bin/env bash
# Every GPU check in one command, on a bare GPU machine: the gpu-marked tests and the GPU benchmark, with one summary.
#
#   bash studies/gpu/run.sh [--wheels DIR] [--out DIR] [--cpu] [--tests-timeout S] [--budget-s S] [-- BENCH_ARGS]
#
# It runs with the machine's own python, torch and CUDA (torch is never reinstalled). What the image lacks comes from
# a folder of wheels that studies/gpu/fetch_wheels.sh downloads beforehand on a networked machine (default:
# studies/gpu/wheels; installed into a folder of its own, without dependencies, and put first on PYTHONPATH).
# --cpu is the dry run: the same tests on the CPU (GENRM_GPU_TESTS_ON=cpu) and the benchmark's --dry-run.
# On a machine whose time is counted: --tests-timeout stops the tests after S seconds (default 300), and
# --budget-s has the benchmark start no measurement after S seconds (default: none), reporting what it measured.
# What follows -- goes to benchmarks/gpu_judge.py as it is (--max-tokens 128, --shapes qwen3-0.6b, ...).
# Writes DIR/tests.log, DIR/benchmark.log, DIR/benchmark.json (rewritten after every row) and DIR/summary.md
# (default DIR: runs/gpu); exits non-zero when a test or the benchmark failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
wheels=studies/gpu/wheels
out=runs/gpu
cpu=0
tests_timeout=300
budget=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --wheels) wheels="$2"; shift ;;
    --out) out="$2"; shift ;;
    --cpu) cpu=1 ;;
    --tests-timeout) tests_timeout="$2"; shift ;;
    --budget-s) budget="$2"; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
py="${PYTHON:-python3}"
"$py" -c "import torch" 2>/dev/null || { echo "run.sh: $py has no torch; this runs with the machine's own" >&2; exit 2; }
mkdir -p "$out" || exit 2
if [ "$cpu" = 0 ]; then  # before anything is installed: a machine without CUDA is refused at once
  "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || { echo "run.sh: torch sees no CUDA device (--cpu runs the dry run)" >&2; exit 2; }
fi

if ls "$wheels"/*.whl >/dev/null 2>&1; then
  site="$(mktemp -d)/site"
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$wheels"/*.whl \
    || { echo "run.sh: the wheels in $wheels did not install" >&2; exit 2; }
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
missing=$("$py" - <<'PY'
import importlib.util
names = ["trl", "peft", "transformers", "xgrammar", "fastapi", "pydantic", "rapidfuzz", "math_verify", "datasets",
         "jsonschema", "pytest"]
print(" ".join(n for n in names if importlib.util.find_spec(n) is None))
PY
)
if [ -n "$missing" ]; then
  echo "run.sh: missing $missing: run studies/gpu/fetch_wheels.sh on a networked machine, then --wheels DIR" >&2
  exit 2
fi

if [ "$cpu" = 1 ]; then
  export GENRM_GPU_TESTS_ON=cpu
  bench_args=(--dry-run)
else
  bench_args=()
fi

timeout "$tests_timeout" "$py" -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py 2>&1 | tee "$out/tests.log"
tests_rc=${PIPESTATUS[0]}
[ "$tests_rc" = 124 ] && echo "run.sh: the tests were stopped after $tests_timeout s" | tee -a "$out/tests.log"
PYTHONUNBUFFERED=1 "$py" benchmarks/gpu_judge.py "${bench_args[@]}" --budget-s "$budget" --json "$out/benchmark.json" \
  "${extra[@]}" 2>&1 \
  | tee "$out/benchmark.log"
bench_rc=${PIPESTATUS[0]}

{
  echo "# GPU checks"
  echo
  if [ "$cpu" = 1 ]; then
    echo "machine: CPU dry run ($(nproc) cores)"
  else
    echo "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null)"
  fi
  "$py" -c "import torch, transformers, trl; print(f'torch {torch.__version__}, CUDA {torch.version.cuda}, ' \
f'transformers {transformers.__version__}, trl {trl.__version__}')"
  echo
  echo "tests (exit $tests_rc): $(grep -E '(passed|failed|error|stopped)' "$out/tests.log" | tail -n 1)"
  echo
  echo "benchmark (exit $bench_rc):"
  echo
  echo '```'
  grep -E '^(shape|qwen3-|tiny) ' "$out/benchmark.log"
  echo '```'
  echo
  grep -E '^summary:' "$out/benchmark.log"
} > "$out/summary.md"
cat "$out/summary.md"
[ "$tests_rc" = 0 ] && [ "$bench_rc" = 0 ]
