#!/usr/bin/env bash
# Device call (2026-12-07, fourth session), trimmed to the budget: the gather route's correctness
# (convert_gpu with gather forced wherever it applies, memcheck), CLI A/B old routes vs gather,
# criterion convert bench with gather forced, torch anchors; then convert_gpu as planned and old.
# Run from a carried folder holding bin.tar.xz (bin/test-convert_gpu, bin/bench-convert and
# bin/cute-copy built with 2026-12-07h-gather-route.patch applied) and rows.sh (a copy of
# 2026-12-07h-gather-ab-rows.sh); the repository is its parent folder (tools/torch_anchor.py).
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
[ -d bin ] || tar -xJf bin.tar.xz
log=$OUT/call4.log; export CUTE_COPY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name --format=csv,noheader >> $log
t() {  # t KNOB: convert_gpu with CUTE_COPY_EXP_GATHER=KNOB ("" = as planned)
  echo "== convert_gpu (gather=${1:-planned})" >>$log
  CUTE_COPY_EXP_GATHER=$1 timeout 100 bin/test-convert_gpu --test-threads=2 > /tmp/t.log 2>&1
  grep -E "^test |test result" /tmp/t.log >>$log
  echo "wrong-element panics: $(grep -c 'wrong elements' /tmp/t.log)" >>$log
  grep -E "wrong elements|panicked" -A1 /tmp/t.log | head -12 >>$log
}
t 1
echo "== memcheck (gather forced: gather, random, scales tests)" >>$log
CUTE_COPY_EXP_GATHER=1 timeout 90 compute-sanitizer --tool memcheck bin/test-convert_gpu --test-threads=1 gather_route random_layouts scales_and 2>&1 | grep -E "test result|ERROR SUMMARY|wrong elements" >>$log
echo "== A/B" >>$log
source ./rows.sh
for r in "${ROWS[@]}"; do
  name=${r%%|*}; a=${r#*|}
  for g in 0 1; do
    out=$(CUTE_COPY_EXP_GATHER=$g timeout 30 bin/cute-copy tensor $a --run --iters 100 2>&1)
    ratio=$(echo "$out" | grep -o "[0-9.]* ms per launch.*ratio to D2D memcpy: [0-9.]*" | sed 's/ ms per launch).*ratio to D2D memcpy:/ ms, x D2D/')
    bad=$(echo "$out" | grep -iE "mismatch|error|differ|panick" | head -2)
    route=$(echo "$out" | grep -o "route: convert family, Convert128, [a-z ]*" | head -1 | sed 's/route: convert family, Convert128, //')
    echo "$name | gather=$g | $route | $ratio $bad" >>$log
  done
done
echo "== registers" >>$log
cuobjdump --dump-resource-usage bin/cute-copy 2>/dev/null | grep -A1 -E "convert_(gather|elementwise)" | grep -oE "_Z[0-9]+convert_[a-z_0-9]+ILi[0-9]ELi[0-9]|REG:[0-9]+" | paste - - | sort -u >>$log
echo "== bench (gather forced where it applies)" >>$log
CUTE_COPY_EXP_GATHER=1 timeout 120 bin/bench-convert --bench convert_ > $OUT/bench-gather.log 2>&1; echo "bench rc=$?" >>$log
echo "== torch" >>$log
(cd .. && timeout 120 python3 tools/torch_anchor.py --convert --json $OUT/torch.json > $OUT/torch.log 2>&1; echo "torch rc=$?" >>$log)
t ""
t 0
echo done >>$log
