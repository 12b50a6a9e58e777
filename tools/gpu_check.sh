#!/usr/bin/env bash
# One device call's worth of checks on the GPU host, after ../shared/tools/gpu-pack here:
#   [TEST_FILTER=name] [BENCH_FILTER=regex] [TORCH_ARGS=--layouts] tools/gpu_check.sh [tests] [sanitize] [probe] [bench] [torch]
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
      REALIGN_CASES=40 PROPTEST_CASES=64 .gpu/run sanitize >"$out/sanitize.log" 2>&1
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
        for ex in kv_cache_gather crop_rgb pad_batch; do echo "## example $ex"; .gpu/run bin $ex 2>&1 | tail -4; done
      } >"$out/probe.log" 2>&1
      cat "$out/probe.log" ;;
    bench)
      .gpu/run bench ${BENCH_FILTER:-} >"$out/bench.log" 2>&1
      summary+=("bench rc=$?")
      grep -E '^(align|batch|layout|limit|launch)[^ ]*/|thrpt' "$out/bench.log" | tail -80 ;;
    torch)
      python3 tools/torch_anchor.py ${TORCH_ARGS:-} --json "$out/torch.json" >"$out/torch.log" 2>&1
      summary+=("torch rc=$?")
      cat "$out/torch.log" ;;
  esac
done
printf '%s\n' "${summary[@]}"
