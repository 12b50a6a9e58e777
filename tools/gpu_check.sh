#!/usr/bin/env bash
# One device call's worth of checks on the GPU host, after ../shared/tools/gpu-pack here:
#   [TEST_FILTER=name] [BENCH_FILTER=regex] [TORCH_ARGS=--layouts] tools/gpu_check.sh [tests] [sanitize] [probe] [ncu] [bench] [torch]
# Logs go to $OUT (tests.log, sanitize.log, probe.log, bench.log, torch.log / torch.json); a short
# summary is printed last.
set -u
out=${OUT:-$(mktemp -d)}
summary=()
for step in "$@"; do
  case $step in
    tests)
      .gpu/run tests ${TEST_FILTER:-} >"$out/tests.log" 2>&1
      summary+=("tests rc=$?: $(grep -c '^test result: ok' "$out/tests.log") binaries ok, $(grep -c 'FAILED\|panicked' "$out/tests.log") failure lines")
      grep -E '^(=== |test result)|FAILED|panicked' "$out/tests.log" | head -60 ;;
    sanitize)
      TENSOR_CASES=40 REALIGN_CASES=40 PROPTEST_CASES=64 timeout ${SANITIZE_TIMEOUT:-330} .gpu/run sanitize ${SANITIZE_FILTER:-} >"$out/sanitize.log" 2>&1
      summary+=("sanitize rc=$?")
      grep -E '^=== |ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize.log" | head -60 ;;
    probe)
      # Verified runs with timing against D2D of the same bytes (cute-copy run).
      {
        r() { echo "## run $*"; .gpu/run bin cute-copy run "$@" 2>&1 | grep -E 'plan:|verified|copy:|ratio|error' ; }
        r --dtype u8 --rows 8191 --cols 8191 --ld-src 8192 --ld-dst 8192 --offset-src 8193
        r --dtype u8 --rows 2000 --cols 7001 --ld-src 11520 --ld-dst 7168 --offset-src 57603 --offset-dst 1
        r --dtype u16 --rows 12000 --cols 12001 --ld-src 12001 --ld-dst 12001
        r --dtype u32 --rows 8191 --cols 8191 --ld-src 8193 --ld-dst 8191
        r --dtype i64 --rows 3000 --cols 2999 --ld-src 3001 --ld-dst 3000 --offset-src 24016 --offset-dst 8
        r --dtype f16 --rows 16384 --cols 16380 --ld-src 16388 --ld-dst 16380
        r --dtype u8 --rows 8192 --cols 8192
        r --dtype f16 --rows 16383 --cols 16383 --ld-src 16383 --ld-dst 16384
        r --dtype bf16 --rows 16384 --cols 16380 --ld-src 16388 --ld-dst 16384 --dst-rows 16384 --dst-cols 16384
        r --dtype f16 --rows 16384 --cols 16380 --ld-src 16388 --ld-dst 16380 --atom universal-64
        echo "## blocks (300 x 16x128 f16 from 4096)"; .gpu/run bin cute-copy blocks --skip-every 50 2>&1 | tail -4
        echo "## blocks (4096 x 64 KiB)"; .gpu/run bin cute-copy blocks --cols 2048 --count 4096 2>&1 | tail -3
        echo "## batch (10000 random)"; .gpu/run bin cute-copy batch 2>&1 | tail -3
        t() { echo "## tensor $*"; .gpu/run bin cute-copy tensor "$@" --run 2>&1 | grep -E 'route:|verified|copy_tensor:|ratio|error' ; }
        t --dtype f32 --shape 16384,16384 --permute 1,0
        t --dtype u8 --shape 8192,8192 --permute 1,0
        t --dtype f16 --shape 8,32,4096,128 --permute 0,2,1,3
        t --dtype f32 --shape 64,3,224,224 --permute 0,2,3,1
        t --dtype f32 --shape 64,224,224,3 --permute 0,3,1,2
        t --dtype u16 --src '(64,1024,1023):(1048576,1024,1)'
        t --dtype f64 --shape 3,5,7,11,13,17 --permute 5,3,1,4,2,0
        for ex in kv_cache_gather crop_rgb pad_batch permute_layouts; do echo "## example $ex"; .gpu/run bin $ex 2>&1 | tail -4; done
      } >"$out/probe.log" 2>&1
      cat "$out/probe.log" ;;
    bench)
      .gpu/run bench ${BENCH_FILTER:-} >"$out/bench.log" 2>&1
      summary+=("bench rc=$?")
      grep -E '^(align|batch|layout|limit|launch)[^ ]*/|thrpt' "$out/bench.log" | tail -80 ;;
    ncu)
      # Shared-memory bank conflicts and DRAM throughput of the transpose family (one launch each).
      [[ -d .gpu/bin ]] || tar -xJf .gpu/bin.tar.xz -C .gpu
      for args in "--dtype f32 --shape 8192,8192 --permute 1,0" "--dtype f16 --shape 8192,8192 --permute 1,0" "--dtype u8 --shape 8192,8192 --permute 1,0" "--dtype f64 --shape 8192,8192 --permute 1,0"; do
        echo "## ncu tensor $args"
        ncu --kernel-name regex:transpose_kernel --launch-skip 1 --launch-count 1 \
          --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
          .gpu/bin/bin-cute-copy tensor $args --run --iters 1 2>&1 | grep -E '^ +(l1tex|dram|sm__)|==ERROR|error'
      done >"$out/ncu.log" 2>&1
      summary+=("ncu rc=$?")
      cat "$out/ncu.log" ;;
    torch)
      python3 tools/torch_anchor.py ${TORCH_ARGS:-} --json "$out/torch.json" >"$out/torch.log" 2>&1
      summary+=("torch rc=$?")
      cat "$out/torch.log" ;;
  esac
done
printf '%s\n' "${summary[@]}"
