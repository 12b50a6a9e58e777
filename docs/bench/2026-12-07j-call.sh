#!/usr/bin/env bash
# Device call A (2026-12-07, sixth session), from the repository root. .gpu: gpu-pack of the
# submitted head (d8fa891); .gpu9/bin: cute-copy, bench-convert, test-convert_gpu built with the
# gather experiment (CUTE_COPY_EXP_GATHER_DIRECT=1: every element's coordinates by divisions).
set -u
log=$OUT/callA.log; export CUTE_COPY_REQUIRE_GPU=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu" >> $log
.gpu/run tests > $OUT/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s" >> $log
grep -E "^=== |test result" $OUT/tests.log | paste - - | sed 's/finished in.*//' >> $log
grep -E "panicked|FAILED" $OUT/tests.log | head -10 >> $log
.gpu/bin/bench-launch --bench launch_interleaved > $OUT/launch.log 2>&1; echo "launch rc=$? at ${SECONDS}s" >> $log
grep -E "interleaved_|empty kernel [+]" $OUT/launch.log | tail -14 >> $log
(cd .gpu9 && rm -rf bin && tar -xJf bin.tar.xz)
X=.gpu9/bin
CUTE_COPY_EXP_GATHER_DIRECT=1 timeout 60 $X/test-convert_gpu --test-threads=2 > $OUT/direct-tests.log 2>&1; echo "direct convert_gpu rc=$? at ${SECONDS}s" >> $log
grep -E "test result|panicked" $OUT/direct-tests.log | head -5 >> $log
CUTE_COPY_EXP_GATHER_DIRECT=1 timeout 60 compute-sanitizer --tool memcheck $X/test-convert_gpu --test-threads=1 gather_route 2>&1 | grep -E "test result|ERROR SUMMARY" >> $log
M="--mean 123.675,116.28,103.53 --std 58.395,57.12,57.375"
AB=(
"strided bf16->f32|--dtype bf16 --src (64,1024,1023):(1048576,1024,1) --to f32"
"f32 items x1|--dtype f32 --shape 131072,3,5 --permute 0,2,1 --to f32 --scale 1"
"f16 ld8192->f64|--dtype f16 --src (8192,8191):(8192,1) --to f64"
"u8 ld3008->f32|--dtype u8 --src (4096,3001):(3008,1) --to f32"
"bf16 [8,16,1025,80] 0213->f32|--dtype bf16 --shape 8,16,1025,80 --permute 0,2,1,3 --to f32"
"f32 [65536,5,7] 021 x2|--dtype f32 --shape 65536,5,7 --permute 0,2,1 --to f32 --scale 2"
"u8 crop nchw->nhwc x1|--dtype u8 --src (8,1080,1920,3):(6292992,1928,1,2097664) --src-offset 5789 --to u8 --scale 1"
)
ab() {
  echo "== A/B round $1: gather stepping (0) / direct (1), x D2D, at ${SECONDS}s" >> $log
  for r in "${AB[@]}"; do
    name=${r%%|*}; a=${r#*|}
    for g in 0 1; do
      out=$(CUTE_COPY_EXP_GATHER_DIRECT=$g timeout 30 $X/cute-copy tensor $a --run --iters 100 2>&1)
      echo "$name | direct=$g | $(echo "$out" | grep -o "route: [a-z]* family, [A-Za-z0-9]*, [A-Za-z ]*" | head -1) | $(echo "$out" | grep -o "[0-9.]* ms per launch" | head -1) | $(echo "$out" | grep -o "ratio to D2D memcpy: [0-9.]*") | verified $(echo "$out" | grep -c '^verified')" >> $log
    done
  done
}
ab 1
for g in 0 1; do
  CUTE_COPY_EXP_GATHER_DIRECT=$g timeout 100 $X/bench-convert --bench convert_ > $OUT/convert-bench-$g.log 2>&1; echo "convert bench direct=$g rc=$? at ${SECONDS}s" >> $log
done
timeout 120 python3 tools/torch_anchor.py --convert --json $OUT/torch-convert.json > $OUT/torch-convert.log 2>&1; echo "torch convert rc=$? at ${SECONDS}s" >> $log
if [[ $gpu == *H200* ]]; then
  timeout 150 .gpu/bin/bench-copy --bench layout_any > $OUT/layout-bench.log 2>&1; echo "layout bench rc=$? at ${SECONDS}s" >> $log
  timeout 120 python3 tools/torch_anchor.py --any-shape --json $OUT/torch-layout.json > $OUT/torch-layout.log 2>&1; echo "torch layout rc=$? at ${SECONDS}s" >> $log
fi
(cd $OUT && tar czf bench.tgz --exclude=callA.log *.log && ls *.log | grep -v callA.log | xargs rm -f)
export TRITON_CACHE_DIR=/tmp/tc TORCHINDUCTOR_CACHE_DIR=/tmp/ic
P=docs/bench/2026-12-07j-inductor-probe.py
SEC="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats --section SchedulerStats"
for c in strided_bf16_f32 items nhwc_norm; do
  [ $SECONDS -gt 420 ] && { echo "skip $c (time)" >> $log; continue; }
  echo "== inductor $c at ${SECONDS}s" >> $log
  timeout 60 ncu --profile-from-start off --kernel-name regex:triton --launch-count 1 $SEC python3 $P $c --profile > $OUT/ncu-ind-$c.txt 2>&1
  echo "rc=$?" >> $log
  grep -E "x D2D|Error|error" $OUT/ncu-ind-$c.txt | head -3 >> $log
  (cd $OUT && tar rf ncu.tar ncu-ind-$c.txt && rm ncu-ind-$c.txt)
done
ROWS=(
"strided_bf16_f32|--dtype bf16 --src (64,1024,1023):(1048576,1024,1) --to f32"
"items_gather|--dtype f32 --shape 131072,3,5 --permute 0,2,1 --to f32 --scale 1"
"nhwc_norm|--dtype u8 --shape 64,224,224,3 --permute 0,3,1,2 --to f32 --normalize 1 $M"
)
for r in "${ROWS[@]}"; do
  name=${r%%|*}; a=${r#*|}
  for g in 0 1; do
    [ $SECONDS -gt 490 ] && { echo "skip ncu ours $name (time)" >> $log; continue; }
    CUTE_COPY_EXP_GATHER_DIRECT=$g timeout 25 ncu --kernel-name regex:"convert_|items_kernel" --launch-count 1 $SEC $X/cute-copy tensor $a --run --iters 3 > $OUT/ncu-ours-$name-$g.txt 2>&1
    echo "ncu ours $name direct=$g rc=$?" >> $log
    (cd $OUT && tar rf ncu.tar ncu-ours-$name-$g.txt && rm ncu-ours-$name-$g.txt)
  done
done
(cd /tmp/tc && find . -name "*.ptx" -o -name "*.json" -o -name "*.ttgir" | tar czf $OUT/triton.tgz -T -) 2>>$log
(cd /tmp/ic && find . -name "*.py" | tar czf $OUT/inductor-py.tgz -T -) 2>>$log
echo "done at ${SECONDS}s" >> $log
