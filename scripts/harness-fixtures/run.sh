#!/usr/bin/env bash
# Writes tests/fixtures/harness/ with the benchmark harness's own code:
# its batch and server programs run unmodified on stand-ins for the GPU
# (NVML, nvidia-smi, torch.cuda) and for vLLM (standins/), with its real
# energy meter (ai-energymeter 2.0.2 from PyPI). Not run by CI: the
# harness's code is not part of this repository; bring a checkout.
#
#   git clone https://github.com/maufadel/sw-energy-benchmark /tmp/harness
#   scripts/harness-fixtures/run.sh /tmp/harness            # about 10 minutes
#   CASES="l4-late-108ms l4-late-150ms" scripts/harness-fixtures/run.sh /tmp/harness
#
# CASES (space-separated case names; default: all of them) selects which
# cases are written; the others' folders are left as they are.
#
# Each case is a run folder as run_benchmark.sh lays it out (system_info.txt,
# one folder per model named by its own sed/tr pipeline) plus the config it
# ran with. See tests/fixtures/harness/README.md for what each case is for.
# scripts/harness-fixtures/check_spacing.py <case folder> prints each row's
# sample spacing and how the meter's gpu_energy compares with it.
set -euo pipefail

HARNESS=${1:?usage: [CASES="<case>..."] run.sh <harness checkout> [output folder]}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${2:-$ROOT/tests/fixtures/harness}
VENV=$ROOT/target/harness-venv
HARNESS=$(cd "$HARNESS" && pwd)

for f in utils.py language/llm_batch_optimized.py language/llm_server_optimized.py; do
    [ -f "$HARNESS/$f" ] || { echo "run.sh: $HARNESS has no $f: is it a checkout of maufadel/sw-energy-benchmark?" >&2; exit 2; }
done
COMMIT=$(git -C "$HARNESS" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)")

if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet -r "$HERE/requirements.txt"
    # Its declared pynvml is what the stand-in replaces.
    "$VENV/bin/pip" install --quiet --no-deps ai-energymeter==2.0.2
fi

# The harness's config: its keys, a short protocol (3 iterations, 10 s
# server tests, 5 s warm-up) so a case takes a minute or two, not an hour.
config() {
    cat <<YAML
# GPU configuration
CUDA_VISIBLE_DEVICES: "0"

# Benchmark settings
ITERATIONS: 3
MAX_TEST_DURATION: 10
CONTEXT_LENGTH: 1024
WARMUP_DURATION: 5

LAMBDA_QPS_ARRAY:
  - 0.5
  - 2

# LLM models to benchmark
LLM_MODELS:
YAML
    for m in "$@"; do echo "  - \"$m\""; done
}

ALL_CASES="l4 a100-sxm4-80gb l4-late-108ms l4-late-150ms"
CASES=${CASES:-$ALL_CASES}
for c in $CASES; do
    case " $ALL_CASES " in
        *" $c "*) ;;
        *) echo "run.sh: no case $c (cases: $ALL_CASES)" >&2; exit 2 ;;
    esac
done
selected() { case " $CASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# One case: <name> <NVML name> <STANDIN_FAIL or -> <STANDIN_NVML_READ_S> <models...>
run_case() {
    local name=$1 gpu=$2 fail=$3 read_s=$4
    shift 4
    selected "$name" || return 0
    local case_dir=$OUT/$name
    rm -rf "$case_dir"
    mkdir -p "$case_dir"
    config "$@" > "$case_dir/config-v2.yaml"
    local stamp
    stamp=$(date -u +%Y%m%d_%H%M%S)
    local results=$case_dir/run_$stamp
    mkdir -p "$results"
    export STANDIN_GPU=$gpu
    if [ "$fail" = - ]; then unset STANDIN_FAIL; else export STANDIN_FAIL=$fail; fi
    export STANDIN_NVML_READ_S=$read_s
    export PYTHONPATH=$HERE/standins PYTHONUNBUFFERED=1 HF_TOKEN=unused MPLBACKEND=Agg
    export PATH=$HERE/standins:$PATH

    # system_info.txt as run_benchmark.sh writes it: each command's name on
    # a line, its output, then `echo -e "\n"`. One change: `df -h` reports
    # only the results' own filesystem, not every mount of this machine.
    local info=$results/system_info.txt
    for cmd in "lscpu" "nvidia-smi -q" "free -h" "df -h"; do
        echo "$cmd" >> "$info"
        if [ "$cmd" = "df -h" ]; then
            df -h "$results" >> "$info"
        else
            $cmd >> "$info" 2>/dev/null || echo "${cmd%% *} not found" >> "$info"
        fi
        echo -e "\n" >> "$info"
    done

    for model in "$@"; do
        # run_benchmark.sh's folder name: the YAML line with its quotes,
        # through tr, newline included (Qwen/Qwen2.5-0.5B-Instruct ->
        # _Qwen_Qwen2_5-0_5B-Instruct__).
        local folder
        folder=$(echo "\"$model\"" | tr '/' '_' | tr -c 'a-zA-Z0-9_-' '_')
        local single=$case_dir/.config_$folder.yaml
        config "$model" > "$single"
        mkdir -p "$results/$folder"
        for program in llm_server_optimized llm_batch_optimized; do
            echo "== $name: $program for $model on $gpu"
            # As run_benchmark.sh: exit 1 (a model failed) goes on.
            "$VENV/bin/python" "$HERE/drive.py" "$HARNESS" "language/$program.py" \
                "$results/$folder" "$single" > "$case_dir/.log-$folder-$program.txt" 2>&1 || {
                code=$?
                [ $code -eq 1 ] || { echo "run.sh: $program exited $code; see $case_dir/.log-$folder-$program.txt" >&2; exit $code; }
                echo "   (a model failed; as run_benchmark.sh, the next goes on). The log's end:"
                grep -A2 "Exception type" "$case_dir/.log-$folder-$program.txt" | sed 's/^/     /' || true
            }
        done
        rm "$single"
    done
    rm -f "$case_dir"/.log-*
    echo "$COMMIT" > "$case_dir/HARNESS_COMMIT"
}

run_case l4 "NVIDIA L4" "Qwen/Qwen2.5-1.5B-Instruct@batch:3" 0 \
    Qwen/Qwen2.5-0.5B-Instruct Qwen/Qwen2.5-1.5B-Instruct
run_case a100-sxm4-80gb "NVIDIA A100-SXM4-80GB" - 0 Qwen/Qwen2.5-0.5B-Instruct
# The meter's sampler running late (standins/pynvml.py): each power read
# takes STANDIN_NVML_READ_S, so the samples lie about 0.1 s + that (and the
# meter's own overhead, 0.2 to 0.8 ms here) apart: about 108 ms and 150 ms.
run_case l4-late-108ms "NVIDIA L4" - 0.0075 Qwen/Qwen2.5-0.5B-Instruct
run_case l4-late-150ms "NVIDIA L4" - 0.0495 Qwen/Qwen2.5-0.5B-Instruct
echo "== wrote $CASES in $OUT (harness $COMMIT)"
