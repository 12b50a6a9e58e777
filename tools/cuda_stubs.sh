#!/usr/bin/env bash
# cuda_stubs.sh DIR: link-time stand-ins for the CUDA libraries candle-core links, for a machine
# without them (this repository's pinned toolkit has nvcc and cudart, not cuBLAS, cuRAND, NVRTC or
# a driver).
#
# candle-core's `cuda` feature turns on cudarc's `dynamic-linking`: every program built with the
# `candle` feature names libcuda.so.1, libcublas.so.13, libcublasLt.so.13, libcurand.so.10 and
# libnvrtc.so.13 (CUDA 13.0's sonames) as needed libraries, and candle-kernels links libcudart.
# This writes DIR/lib64/ with one stub per library, holding every function cudarc declares for it
# under the real soname (as NVIDIA's own lib64/stubs do), and libcudart.so pointing at the pinned
# toolkit's. Build with `CUDA_ROOT=DIR` (cudarc's link search then looks there): the programs link
# here and load the real libraries on a GPU host, where the stubs are not (nothing records DIR in
# them). Run here with `LD_LIBRARY_PATH=DIR/lib64`, each stub call answers
# CUDA_ERROR_STUB_LIBRARY (34) or its library's "not initialized" status, so a program sees a
# driver without a device: GPU tests and examples take their skip path.
set -euo pipefail
out=${1:?usage: tools/cuda_stubs.sh DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cudarc=$(cargo metadata --format-version 1 --manifest-path "$root/Cargo.toml" |
  python3 -c 'import json,sys,os; m=json.load(sys.stdin); print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"]=="cudarc"))')
cudart=$root/third_party/.toolchain/nvidia/cu13/lib/libcudart.so.13
[[ -f $cudart ]] || { echo "no $cudart: run third_party/install.sh first" >&2; exit 1; }
mkdir -p "$out/lib64"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# library, soname, cudarc's sys module, what every stub returns
while read -r lib soname module ret; do
  python3 - "$cudarc/src/$module/sys/mod.rs" "$ret" >"$tmp/$lib.c" <<'PY'
import re, sys
src, ret = open(sys.argv[1]).read(), sys.argv[2]
# cudarc's linked declarations: `fn name(` inside `extern "C" { ... }`, 12 spaces in.
names = sorted(set(re.findall(r'^            fn (\w+)\(', src, re.M)))
if not names:
    sys.exit(f"no declarations found in {sys.argv[1]}")
for n in names:
    if re.fullmatch(r'\w+Get(Error|Status)(String|Name)', n) and not n.startswith('cu' + 'Get'):
        print(f'const char *{n}(void) {{ return "CUDA stub library"; }}')
    else:
        print(f'int {n}(void) {{ return {ret}; }}')
PY
  cc -shared -fPIC -o "$out/lib64/$soname" -Wl,-soname,"$soname" "$tmp/$lib.c"
  ln -sf "$soname" "$out/lib64/$lib.so"
done <<'LIBS'
libcuda libcuda.so.1 driver 34
libcublas libcublas.so.13 cublas 1
libcublasLt libcublasLt.so.13 cublaslt 1
libcurand libcurand.so.10 curand 201
libnvrtc libnvrtc.so.13 nvrtc 7
LIBS
ln -sf "$cudart" "$out/lib64/libcudart.so"
ln -sf "$cudart" "$out/lib64/libcudart.so.13"
echo "CUDA link stubs in $out/lib64: build with CUDA_ROOT=$out, run here with LD_LIBRARY_PATH=$out/lib64"
