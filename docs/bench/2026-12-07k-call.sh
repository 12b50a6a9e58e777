#!/usr/bin/env bash
# Device call A (2026-12-07, seventh session), from the repository root. .gpu: gpu-pack of the
# candidate (lean gather: coordinates from constant-offset divisors, 32-bit offsets where the source
# fits, a whole vector inside one run loaded without tests, 16-byte stores in PTX). .exp: cute-copy
# of the landed head (cute-copy-head) and of the candidate with an experiment switch
# (cute-copy-exp; CUTE_COPY_EXP_GATHER_DIVIDED=0/1 forces the gather's coordinates).
set -u
log=$OUT/callA.log; export CUTE_COPY_REQUIRE_GPU=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu" >> $log
(cd .exp && tar -xJf exp.tar.xz && rm exp.tar.xz)
.gpu/run tests > $OUT/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s" >> $log
grep -E "^=== |test result" $OUT/tests.log | paste - - | sed 's/finished in.*//' | grep -v "ok. 0 passed" >> $log
grep -E "panicked|FAILED" $OUT/tests.log | head -10 >> $log
H=.exp/cute-copy-head; X=.exp/cute-copy-exp
MET="--metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
# one kernel under ncu: time (us), warp instructions, DRAM %
prof() { # bin env args...
  local bin=$1 env=$2; shift 2
  env $env timeout 30 ncu $MET --kernel-name regex:"convert_|items_kernel|transpose_kernel|narrow|rows_kernel" --launch-skip 1 --launch-count 1 $bin "$@" --run --iters 2 2>&1 \
    | awk '/gpu__time_duration.sum/{t=$(NF-1)" "$NF} /smsp__inst_executed.sum/{i=$NF} /dram__throughput/{d=$NF} END{printf "ncu %s, %s warp instr, DRAM %s%%", t, i, d}'
}
clirun() { # bin env args...
  local bin=$1 env=$2; shift 2
  local out; out=$(env $env timeout 30 $bin "$@" --run --iters 100 2>&1)
  echo "$(echo "$out" | grep -o "route: [a-z]* family, [A-Za-z0-9]*, [a-z]*" | head -1) | $(echo "$out" | grep -o "coordinates [a-z ]*" | head -1) | $(echo "$out" | grep -o "[0-9.]* ms per launch" | head -1) | $(echo "$out" | grep -o "ratio to D2D memcpy: [0-9.]*") | verified $(echo "$out" | grep -c '^verified')"
}
ROWS=(
"strided bf16->f32|--dtype bf16 --src (64,1024,1023):(1048576,1024,1) --to f32"
"u8 ld3008->f32|--dtype u8 --src (4096,3001):(3008,1) --to f32"
"bf16 [8,16,1025,80] 0213->f32|--dtype bf16 --shape 8,16,1025,80 --permute 0,2,1,3 --to f32"
"f16 ld8192->f64|--dtype f16 --src (8192,8191):(8192,1) --to f64"
"f32 [131072,3,5] 021 x1|--dtype f32 --shape 131072,3,5 --permute 0,2,1 --to f32 --scale 1"
"f32 [65536,5,7] 021 x2|--dtype f32 --shape 65536,5,7 --permute 0,2,1 --to f32 --scale 2"
"f16 [262144,3,3] 021->f32|--dtype f16 --shape 262144,3,3 --permute 0,2,1 --to f32"
"u8 [1048576,4,3] 021->f32|--dtype u8 --shape 1048576,4,3 --permute 0,2,1 --to f32"
)
echo "== gather A/B: head | candidate (planner) | candidate divided | candidate stepped, at ${SECONDS}s" >> $log
for r in "${ROWS[@]}"; do
  name=${r%%|*}; a=${r#*|}
  for v in "head|$H|X=0" "cand|$X|X=0" "cand-div|$X|CUTE_COPY_EXP_GATHER_DIVIDED=1" "cand-step|$X|CUTE_COPY_EXP_GATHER_DIVIDED=0"; do
    IFS='|' read -r tag bin env <<< "$v"
    echo "$name | $tag | $(prof $bin $env tensor $a) | $(clirun $bin $env tensor $a)" >> $log
  done
done
echo "== items: copy_tensor (items tile) | convert family gather (x1), candidate, at ${SECONDS}s" >> $log
ITEMS=("f32|131072,3,5" "f32|65536,5,7" "f16|262144,3,3" "u8|1048576,4,3" "f64|131072,3,5" "f32|1048576,3,5")
for r in "${ITEMS[@]}"; do
  dt=${r%%|*}; sh=${r#*|}
  a="--dtype $dt --shape $sh --permute 0,2,1"
  echo "$dt [$sh] 021 | copy | $(prof $X X=0 tensor $a) | $(clirun $X X=0 tensor $a)" >> $log
  echo "$dt [$sh] 021 | gather x1 | $(prof $X X=0 tensor $a --to $dt --scale 1) | $(clirun $X X=0 tensor $a --to $dt --scale 1)" >> $log
done
echo "== convert bench at ${SECONDS}s" >> $log
timeout 150 .gpu/bin/bench-convert --bench convert_ > $OUT/convert-bench.log 2>&1; echo "convert bench rc=$? at ${SECONDS}s" >> $log
timeout 120 python3 tools/torch_anchor.py --convert --json $OUT/torch-convert.json > $OUT/torch-convert.log 2>&1; echo "torch convert rc=$? at ${SECONDS}s" >> $log
python3 tools/bench_table.py $OUT/convert-bench.log --torch $OUT/torch-convert.json 2>&1 | tail -9 >> $log
(cd $OUT && tar czf bench.tgz --exclude=callA.log *.log *.json)
echo "done at ${SECONDS}s" >> $log
