// The bridge's launch entry points: from the runtime copy descriptor (a cxx shared struct) to the
// menu's instantiation. Rust has already planned and checked the request; the checks here are a
// second line so that nothing reaches a kernel that could fault (misaligned vector, bad shape).
#include "cute-copy/src/ffi.rs.h"
#include "cute_copy/bridge.h"
#include "kernels/family.cuh"

namespace cute_copy {
namespace {

struct AtomRow {
  char const* name;
  bool cp_async;
  int bytes;  // 0 = one element
};
constexpr AtomRow kAtoms[] = {
#define CUTE_COPY_ATOM(name, family, bytes, zfill, op) {#name, sizeof(#family) == sizeof("cp_async"), bytes},
#include "menu.def"
};

void require(bool ok, std::string const& what) {
  if (!ok) throw std::invalid_argument(what);
}

LaunchArgs to_args(CopyDesc const& d) {
  constexpr std::uint64_t kIntMax = 0x7fffffff;
  require(d.rows <= kIntMax && d.cols <= kIntMax && d.dst_rows <= kIntMax && d.dst_cols <= kIntMax,
          "shape does not fit in int");
  require(d.dst_rows >= d.rows && d.dst_cols >= d.cols, "destination smaller than the source");
  require(d.ld_src >= d.cols && d.ld_dst >= d.dst_cols, "leading dimension smaller than cols");
  require(d.src != 0 && d.dst != 0, "null pointer");
  return {reinterpret_cast<void const*>(d.src),
          reinterpret_cast<void*>(d.dst),
          static_cast<int>(d.rows),
          static_cast<int>(d.cols),
          static_cast<int>(d.dst_rows),
          static_cast<int>(d.dst_cols),
          static_cast<std::int64_t>(d.ld_src),
          static_cast<std::int64_t>(d.ld_dst),
          reinterpret_cast<cudaStream_t>(d.stream),
          (d.flags & 1u) == 0};
}

AtomRow const& row_of(std::uint32_t atom) {
  require(atom < static_cast<std::uint32_t>(AtomId::Count), "unknown atom " + std::to_string(atom));
  return kAtoms[atom];
}

}  // namespace

void launch_copy(CopyDesc const& d) {
  AtomRow const& row = row_of(d.atom);
  int width = static_cast<int>(d.elem_bytes);
  int bytes = row.bytes == 0 ? width : row.bytes;
  require(bytes >= width, std::string(row.name) + " is narrower than the element");
  require(d.src % bytes == 0 && d.dst % bytes == 0 && (d.ld_src * width) % bytes == 0 &&
              (d.ld_dst * width) % bytes == 0,
          std::string(row.name) + ": base address or row pitch not aligned to the atom");
  if (d.rows == 0 || d.cols == 0) return;
  LaunchArgs args = to_args(d);
  if (row.cp_async)
    launch_cp_async(static_cast<AtomId>(d.atom), width, args);
  else
    launch_universal(static_cast<AtomId>(d.atom), width, args);
}

void launch_tutorial(CopyDesc const& d) {
  require(d.elem_bytes == 4, "the tutorial copy is f32 only");
  require(d.dst_rows == d.rows && d.dst_cols == d.cols, "the tutorial copy does not pad");
  if (d.rows == 0 || d.cols == 0) return;
  launch_tutorial_kernel(to_args(d));
}

void launch_empty(std::uint64_t stream) { launch_empty_kernel(reinterpret_cast<cudaStream_t>(stream)); }

KernelConfig kernel_config(std::uint32_t atom, std::uint32_t elem_bytes) {
  AtomRow const& row = row_of(atom);
  ConfigValues v = row.cp_async ? config_cp_async(static_cast<AtomId>(atom), static_cast<int>(elem_bytes))
                                : config_universal(static_cast<AtomId>(atom), static_cast<int>(elem_bytes));
  KernelConfig c;
  c.threads = v.threads;
  c.thr_m = v.thr_m;
  c.thr_n = v.thr_n;
  c.val_m = v.val_m;
  c.val_n = v.val_n;
  c.tile_m = v.tile_m;
  c.tile_n = v.tile_n;
  c.smem_bytes = v.smem_bytes;
  return c;
}

std::int32_t runtime_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" / "no device" status
    return 0;
  }
  return n;
}

}  // namespace cute_copy
