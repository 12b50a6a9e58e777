# Helpers for device-call scripts that compare builds of the `cute-copy` CLI one copy at a time
# (source it: `. tools/device_ab.sh`). Each prints one line for a `cute-copy tensor ...` copy.
#
#   ncu_kernel BIN ARGS...   the first matching kernel's time, warp instructions and DRAM
#                            throughput under ncu (one launch after one skipped; KERNELS, a regex,
#                            names the kernels, default "convert_")
#   cli_ratio BIN ARGS...    the CLI's route, time per launch and ratio to a D2D memcpy over 100
#                            launches, and whether it verified

ncu_kernel() {
  local bin=$1; shift
  timeout 30 ncu --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    --kernel-name regex:"${KERNELS:-convert_}" --launch-skip 1 --launch-count 1 "$bin" "$@" --run --iters 2 2>&1 \
    | awk '/gpu__time_duration.sum/{t=$(NF-1)" "$NF} /smsp__inst_executed.sum/{i=$NF} /dram__throughput/{d=$NF} END{printf "ncu %s, %s warp instr, DRAM %s%%", t, i, d}'
}

cli_ratio() {
  local bin=$1; shift
  local out; out=$(timeout 30 "$bin" "$@" --run --iters 100 2>&1)
  echo "$(echo "$out" | grep -o "route: [a-z]* family, [A-Za-z0-9]*, [a-z]*" | head -1) | $(echo "$out" | grep -o "[0-9.]* ms per launch" | head -1) | $(echo "$out" | grep -o "ratio to D2D memcpy: [0-9.]*") | verified $(echo "$out" | grep -c '^verified')"
}
