#!/usr/bin/env bash
# Installs the pinned CUDA 13.0 toolkit wheels and the CUTLASS 4.2 headers listed (with their sha256)
# in third_party/requirements.txt into third_party/.toolchain, which git ignores. Idempotent: a stamp
# holding the requirements' hash skips the work when nothing changed. build.rs finds the result.
#
#   third_party/install.sh            # install (or confirm) the toolchain
#   third_party/install.sh --print    # print the paths build.rs will use
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=$here/.toolchain
req=$here/requirements.txt
stamp=$dest/.stamp
nvcc=$dest/nvidia/cu13/bin/nvcc
cutlass=$dest/cutlass_library/source/include

die() { echo "third_party/install.sh: $*" >&2; exit 1; }

if [[ ${1:-} == --print ]]; then
  echo "nvcc=$nvcc"; echo "cuda_root=$dest/nvidia/cu13"; echo "cutlass_include=$cutlass"; exit 0
fi

want=$(sha256sum "$req" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $nvcc && -d $cutlass/cute ]]; then
  echo "toolchain up to date in $dest"
  exit 0
fi

command -v python3 >/dev/null || die "python3 is needed to install the CUDA wheels (apt-get install python3 python3-pip)"
python3 -m pip --version >/dev/null 2>&1 || die "pip is needed (apt-get install python3-pip)"
[[ $(uname -m) == x86_64 ]] || die "the pinned wheels are x86_64 only; on $(uname -m) set NVCC/CUDA_HOME and CUTLASS_DIR to a system install"

rm -rf "$dest"
mkdir -p "$dest"
echo "installing the pinned CUDA 13.0 wheels and CUTLASS 4.2 headers into $dest ..."
python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --require-hashes --target "$dest" -r "$req" \
  || die "pip install failed (see above): check the network to PyPI, or that the hashes in $req still match"

[[ -x $nvcc ]] || die "nvcc not found at $nvcc after install"
[[ -d $cutlass/cute ]] || die "CuTe headers not found under $cutlass after install"
"$nvcc" --version | tail -n 2
echo "$want" >"$stamp"
echo "toolchain installed in $dest"
