#!/usr/bin/env bash
# Device call B (2026-12-08): memcheck of the convert route tests, the launch-cost bench twice, the
# convert bench group (.gpu as for call A).
set -u
log=$OUT/callB.log; export CUTE_COPY_REQUIRE_GPU=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu" >> $log
[[ -d .gpu/bin ]] || (cd .gpu && tar -xJf bin.tar.xz)
timeout 240 compute-sanitizer --tool memcheck .gpu/bin/test-convert_gpu --test-threads=1 route 2>&1 | grep -E "test result|ERROR SUMMARY|panicked" >> $log
echo "memcheck at ${SECONDS}s" >> $log
for i in 1 2; do
  timeout 120 .gpu/bin/bench-launch --bench launch_interleaved > $OUT/launch$i.log 2>&1
  echo "launch run $i rc=$? at ${SECONDS}s" >> $log
  grep -E "us +\(empty kernel" $OUT/launch$i.log >> $log
done
timeout 200 .gpu/bin/bench-convert --bench convert_ > $OUT/convert-bench.log 2>&1; echo "convert bench rc=$? at ${SECONDS}s" >> $log
echo "done at ${SECONDS}s" >> $log
