#!/usr/bin/env bash
# Device call B (2026-12-07, seventh session), from the repository root. .exp2 holds cute-copy
# builds: cand-a (call A's candidate, with the coordinates switch), e1 (cand-a plus the element
# types found once a thread; switches CUTE_COPY_EXP_GATHER_DIVIDED and CUTE_COPY_EXP_GATHER_FIRST,
# the gather before a channels tile), e2 (e1 with 4 vectors a thread instead of 2); e1's
# test-convert_gpu and bench-convert.
set -u
log=$OUT/callB.log; export CUTE_COPY_REQUIRE_GPU=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu" >> $log
(cd .exp2 && tar -xJf exp2.tar.xz && rm exp2.tar.xz)
E=.exp2
timeout 120 $E/test-convert_gpu --test-threads=1 > $OUT/convert-tests.log 2>&1; echo "convert_gpu (e1) rc=$? at ${SECONDS}s" >> $log
grep -E "test result|panicked" $OUT/convert-tests.log | head -5 >> $log
timeout 120 compute-sanitizer --tool memcheck $E/test-convert_gpu --test-threads=1 gather_route_converts 2>&1 | grep -E "test result|ERROR SUMMARY" >> $log
echo "memcheck at ${SECONDS}s" >> $log
MET="--metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
prof() {
  local bin=$1 env=$2; shift 2
  env $env timeout 30 ncu $MET --kernel-name regex:"convert_|items_kernel|transpose_kernel|narrow|rows_kernel" --launch-skip 1 --launch-count 1 $bin "$@" --run --iters 2 2>&1 \
    | awk '/gpu__time_duration.sum/{t=$(NF-1)" "$NF} /smsp__inst_executed.sum/{i=$NF} /dram__throughput/{d=$NF} END{printf "ncu %s, %s warp instr, DRAM %s%%", t, i, d}'
}
clirun() {
  local bin=$1 env=$2; shift 2
  local out; out=$(env $env timeout 30 $bin "$@" --run --iters 100 2>&1)
  echo "$(echo "$out" | grep -o "route: [a-z]* family, [A-Za-z0-9]*, [a-z]*" | head -1) | $(echo "$out" | grep -o "coordinates [a-z ]*" | head -1) | $(echo "$out" | grep -o "[0-9.]* ms per launch" | head -1) | $(echo "$out" | grep -o "ratio to D2D memcpy: [0-9.]*") | verified $(echo "$out" | grep -c '^verified')"
}
ROWS=(
"strided bf16->f32|--dtype bf16 --src (64,1024,1023):(1048576,1024,1) --to f32"
"u8 ld3008->f32|--dtype u8 --src (4096,3001):(3008,1) --to f32"
"bf16 [8,16,1025,80] 0213->f32|--dtype bf16 --shape 8,16,1025,80 --permute 0,2,1,3 --to f32"
"f32 [131072,3,5] 021 x1|--dtype f32 --shape 131072,3,5 --permute 0,2,1 --to f32 --scale 1"
"f16 [262144,3,3] 021->f32|--dtype f16 --shape 262144,3,3 --permute 0,2,1 --to f32"
"u8 [1048576,4,3] 021->f32|--dtype u8 --shape 1048576,4,3 --permute 0,2,1 --to f32"
)
echo "== gather A/B: cand-a | e1 (types once) | e2 (4 vectors a thread), at ${SECONDS}s" >> $log
for r in "${ROWS[@]}"; do
  name=${r%%|*}; a=${r#*|}
  for v in "cand-a|$E/cute-copy-a" "e1|$E/cute-copy-e1" "e2|$E/cute-copy-e2"; do
    IFS='|' read -r tag bin <<< "$v"
    if [[ $tag == e1 ]]; then c=$(clirun $bin X=0 tensor $a); else c=-; fi
    echo "$name | $tag | $(prof $bin X=0 tensor $a) | $c" >> $log
  done
done
M="--mean 123.675,116.28,103.53 --std 58.395,57.12,57.375"
CH=(
"u8 NHWC [64,224,224,3] -> f32 NCHW norm|--dtype u8 --shape 64,224,224,3 --permute 0,3,1,2 --to f32 --normalize 1 $M"
"u8 NHWC [64,224,224,3] -> bf16 NCHW|--dtype u8 --shape 64,224,224,3 --permute 0,3,1,2 --to bf16"
"u8 crop [8,3,1088,1928] -> bf16 NHWC norm|--dtype u8 --src (8,1080,1920,3):(6292992,1928,1,2097664) --src-offset 5789 --to bf16 --normalize 3 $M"
"f16 NCHW [64,3,224,224] -> f32 NHWC|--dtype f16 --shape 64,3,224,224 --permute 0,2,3,1 --to f32"
)
echo "== channels (planner) | gather first (e1), at ${SECONDS}s" >> $log
for r in "${CH[@]}"; do
  name=${r%%|*}; a=${r#*|}
  for v in "planner|X=0" "gather-first|CUTE_COPY_EXP_GATHER_FIRST=1"; do
    IFS='|' read -r tag env <<< "$v"
    echo "$name | $tag | $(prof $E/cute-copy-e1 $env tensor $a) | $(clirun $E/cute-copy-e1 $env tensor $a)" >> $log
  done
done
echo "== convert bench (e1) at ${SECONDS}s" >> $log
timeout 150 $E/bench-convert --bench convert_ > $OUT/convert-bench.log 2>&1; echo "convert bench rc=$? at ${SECONDS}s" >> $log
timeout 120 python3 tools/torch_anchor.py --convert --json $OUT/torch-convert.json > $OUT/torch-convert.log 2>&1; echo "torch convert rc=$? at ${SECONDS}s" >> $log
python3 tools/bench_table.py $OUT/convert-bench.log --torch $OUT/torch-convert.json 2>&1 | tail -9 >> $log
echo "done at ${SECONDS}s" >> $log
