#!/usr/bin/env bash
# call u-min: the new channels kernels' GPU tests first, then the CLI A/B (old 245d254, l1, l2)
# on the key shapes, one round, then the launch A/B; every file written as it goes.
set -u
cd "$(dirname "$0")/.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
[[ -d .gpu7/bin ]] || tar -xJf .gpu7/bin.tar.xz -C .gpu7
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$O/gpu.txt"
B=.gpu7/bin
export CUTE_COPY_REQUIRE_GPU=1
M=(--mean 123.675,116.28,103.53 --std 58.395,57.12,57.375)
run() { local who=$1; shift; $B/cli-$who tensor "$@" --run --iters 100 2>&1 | grep -oE "verified|MISMATCH|mismatch|ratio to D2D memcpy: [0-9.]+" | tr '\n' ' '; echo; }
echo "=== test-convert_gpu"; $B/test-convert_gpu --test-threads=1 2>&1 | grep -E "^test result|FAILED|panicked|failed" | tee "$O/tests-convert.log"
for who in old l1 l2; do
  echo "== $who"
  echo -n "NHWC u8 [64,224,224,3] -> f32 NCHW normalized: "; run $who --dtype u8 --shape 64,224,224,3 --permute 0,3,1,2 --to f32 --normalize 1 "${M[@]}"
  echo -n "crop u8 -> bf16 NHWC normalized: "; run $who --dtype u8 --src "(8,1080,1920,3):(6293184,1928,1,2097728)" --src-offset 5789 --to bf16 --normalize 3 "${M[@]}"
  echo -n "NCHW u8 [64,3,224,224] -> f32 NHWC normalized: "; run $who --dtype u8 --shape 64,3,224,224 --permute 0,2,3,1 --to f32 --normalize 3 "${M[@]}"
  echo -n "NHWC u8 [32,299,299,3] -> f32 NCHW (planes at other phases): "; run $who --dtype u8 --shape 32,299,299,3 --permute 0,3,1,2 --to f32
done 2>&1 | tee "$O/ab.log"
for who in old new; do
  echo "== bench-launch $who"; $B/bench-launch-$who --bench launch_interleaved 2>&1 | grep -A7 "launch_interleaved_untracked"
done 2>&1 | tee "$O/launch.log"
for t in $B/test-tensor_gpu $B/test-copy_gpu; do
  echo "=== ${t##*/}"; $t --test-threads=1 2>&1 | grep -E "^test result|FAILED|panicked|failed"
done 2>&1 | tee "$O/tests.log"
