#!/usr/bin/env bash
# Device call A (2026-12-08), from the repository root. .gpu: gpu-pack of the candidate (convert
# kernels: only the conversion compiled per type pair; tile, gather and channels bodies once per
# width pair). .exp3/exp3.tar.xz: cute-copy-head, the CLI of f2783fb (the kernels before). Runs
# the tests (the new tile test among them), then an old/new A/B of every changed convert kernel
# kind: ncu kernel time and instructions, then the CLI's x D2D. Call B: memcheck, launch, bench.
set -u
log=$OUT/callA.log; export CUTE_COPY_REQUIRE_GPU=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu" >> $log
(cd .exp3 && tar -xJf exp3.tar.xz && rm exp3.tar.xz)
.gpu/run tests > $OUT/tests.log 2>&1; echo "tests rc=$? at ${SECONDS}s" >> $log
grep -E "^=== |test result" $OUT/tests.log | paste - - | sed 's/finished in.*//' | grep -v "ok. 0 passed" >> $log
grep -E "panicked|FAILED" $OUT/tests.log | head -10 >> $log
grep -E "tile_route_normalizes" $OUT/tests.log >> $log

H=.exp3/cute-copy-head; N=.gpu/bin/bin-cute-copy
. tools/device_ab.sh
M="--mean 123.675,116.28,103.53 --std 58.395,57.12,57.375"
ROWS=(
"tile f32->bf16 16384^2 T|--dtype f32 --shape 16384,16384 --permute 1,0 --to bf16"
"tile u8->f32 4096^2 T|--dtype u8 --shape 4096,4096 --permute 1,0 --to f32"
"tile f32->f16 [1024,16384] T norm mode 1|--dtype f32 --shape 1024,16384 --permute 1,0 --to f16 --normalize 1 --mean $(seq -s, 1 1024) --std $(seq -s, 1 1024)"
"tile f32->f16 [1024,16384] T norm mode 0|--dtype f32 --shape 1024,16384 --permute 1,0 --to f16 --normalize 0 --mean $(seq -s, 1 16384) --std $(seq -s, 1 16384)"
"channels f16 NCHW->f32 NHWC|--dtype f16 --shape 64,3,224,224 --permute 0,2,3,1 --to f32"
"gather strided bf16->f32|--dtype bf16 --src (64,1024,1023):(1048576,1024,1) --to f32"
"gather u8 ld3008->f32|--dtype u8 --src (4096,3001):(3008,1) --to f32"
"gather bf16 [8,16,1025,80] 0213->f32|--dtype bf16 --shape 8,16,1025,80 --permute 0,2,1,3 --to f32"
"gather f32 [131072,3,5] 021 x2|--dtype f32 --shape 131072,3,5 --permute 0,2,1 --to f32 --scale 2"
"channels u8 NHWC->f32 NCHW norm|--dtype u8 --shape 64,224,224,3 --permute 0,3,1,2 --to f32 --normalize 1 $M"
"channels u8 NHWC->bf16 NCHW|--dtype u8 --shape 64,224,224,3 --permute 0,3,1,2 --to bf16"
"channels crop u8->bf16 NHWC norm|--dtype u8 --src (8,1080,1920,3):(6292992,1928,1,2097664) --src-offset 5789 --to bf16 --normalize 3 $M"
"elementwise f16->f8 0213 x0.5|--dtype f16 --shape 8,32,4096,128 --permute 0,2,1,3 --to f8e4m3 --scale 0.5"
)
echo "== A/B head | new, at ${SECONDS}s" >> $log
for r in "${ROWS[@]}"; do
  name=${r%%|*}; a=${r#*|}
  for v in "head|$H" "new|$N"; do
    IFS='|' read -r tag bin <<< "$v"
    echo "$name | $tag | $(ncu_kernel $bin tensor $a) | $(cli_ratio $bin tensor $a)" >> $log
  done
done
echo "done at ${SECONDS}s" >> $log
