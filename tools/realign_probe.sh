#!/usr/bin/env bash
# Build the realign tuning probe (tools/realign_probe.cu) for sm_90, one binary per knob set, into
# .gpuP/ (carry it to the GPU host and run .gpuP/run-all there). Needs third_party/install.sh and a
# cargo build (for the cxx bridge header).
#   tools/realign_probe.sh name="-DKNOB=1 ..." ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tc=$root/third_party/.toolchain
bridge=$(ls -d "$root"/target/*/build/cute-copy-*/out/cxxbridge/include | head -1)
mkdir -p "$root/.gpuP"
names=()
for spec in "$@"; do
  name=${spec%%=*}; flags=${spec#*=}
  # shellcheck disable=SC2086
  "$tc/nvidia/cu13/bin/nvcc" -O3 -std=c++17 --expt-relaxed-constexpr -DNDEBUG -Xptxas -v \
    -gencode=arch=compute_90,code=sm_90 -isystem "$tc/cutlass_library/source/include" \
    -I "$bridge" -I "$root/cpp" -I "$root/cpp/include" -L "$tc/nvidia/cu13/lib" $flags \
    -o "$root/.gpuP/probe_$name" "$root/tools/realign_probe.cu" >"$root/.gpuP/ptxas_$name.log" 2>&1 ||
    { cat "$root/.gpuP/ptxas_$name.log"; exit 1; }
  echo "$name: $(grep -c 'bytes spill stores' "$root/.gpuP/ptxas_$name.log") kernels, spilling: $(grep -E '[1-9][0-9]* bytes spill stores' -c "$root/.gpuP/ptxas_$name.log")"
  names+=("$name")
done
printf '#!/usr/bin/env bash\n# run every probe binary REPS times, interleaved\ncd "$(dirname "$0")"\nfor r in 1 2; do for n in %s; do echo "=== $n (round $r)"; ./probe_$n "${1:-200}" 1; done; done\n' "${names[*]}" >"$root/.gpuP/run-all"
chmod +x "$root/.gpuP/run-all"
ls -la "$root/.gpuP"
