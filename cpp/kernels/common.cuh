// Pieces shared by the kernel families: the launch arguments, the menu's atom ids, CUDA error checks,
// and the boundary-tile helpers that turn CuTe identity tensors into copy_if predicates.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>
#include <cute/tensor.hpp>

#include "cute_copy/bridge.h"  // CudaFailure

namespace cute_copy {

// The menu's atoms, numbered in row order (the Rust `Atom` enum uses the same numbers).
enum class AtomId : std::uint32_t {
#define CUTE_COPY_ATOM(name, family, atom_bytes, zero_fill, cute_op) name,
#include "../menu.def"
  Count
};

// What a kernel needs at run time. Shapes are element counts; leading dimensions are in elements.
struct LaunchArgs {
  void const* src;
  void* dst;
  int rows, cols;          // source logical shape
  int dst_rows, dst_cols;  // destination logical shape; larger than the source for a pad
  std::int64_t ld_src, ld_dst;
  cudaStream_t stream;
  bool peel;               // interior tiles skip predicates (off only to measure what that saves)
};

// The compile-time configuration of one instantiation, reported to Rust for plans and pictures.
struct ConfigValues {
  int threads, thr_m, thr_n, val_m, val_n, tile_m, tile_n, smem_bytes;
};

// A failed CUDA call, as Rust's Error::Cuda (cute_copy/bridge.h carries the name across).
[[noreturn]] inline void throw_cuda(cudaError_t err, char const* what) {
  throw CudaFailure(cudaGetErrorName(err), std::string(cudaGetErrorString(err)) + " (" + what + ")");
}

// Check the launch just enqueued: configuration errors surface here, not at the next sync.
inline void check_launch(char const* kernel) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda(err, kernel);
}

// One block per tile, tiles numbered row-major over (tiles_m, tiles_n); a 1D grid has room for 2^31-1.
inline dim3 tile_grid(int extent_m, int extent_n, int tile_m, int tile_n) {
  long long tm = (extent_m + tile_m - 1) / tile_m;
  long long tn = (extent_n + tile_n - 1) / tile_n;
  long long n = tm * tn;
  if (n > 0x7fffffffLL) throw std::invalid_argument("launch: more tiles than a 1D grid can hold");
  return dim3(static_cast<unsigned>(n));
}

// Boundary-tile predicates with CuTe semantics. `tC` holds the (row, col) coordinate of every value
// of a thread's partition, (CPY, CPY_M, CPY_N), from an identity tensor partitioned like the data.
// Returns (tPv, tPe):
//   tPv (1, CPY_M, CPY_N): the whole vector of an atom call lies inside `bound` -> issue the atom;
//   tPe (CPY, CPY_M, CPY_N): lanes inside `bound` of a vector the bound cuts -> copy them one by one.
// A predicate does not make a partial vector access legal, so a cut vector is never issued whole.
template <class TC, class Bound>
CUTE_DEVICE auto boundary_masks(TC const& tC, Bound const& bound) {
  using namespace cute;
  constexpr int V = decltype(size<0>(tC))::value;  // values per atom call
  Tensor tPv = make_tensor<bool>(make_shape(_1{}, size<1>(tC), size<2>(tC)));
  Tensor tPe = make_tensor<bool>(shape(tC));
  CUTE_UNROLL
  for (int m = 0; m < size<1>(tC); ++m) {
    CUTE_UNROLL
    for (int n = 0; n < size<2>(tC); ++n) {
      bool whole = elem_less(tC(V - 1, m, n), bound);  // the last lane of a row vector is inside
      tPv(0, m, n) = whole;
      CUTE_UNROLL
      for (int v = 0; v < V; ++v) tPe(v, m, n) = !whole && elem_less(tC(v, m, n), bound);
    }
  }
  return cute::make_tuple(tPv, tPe);
}

// Copy the values of a thread's partition that lie inside `bound`, leaving the others untouched:
// whole vectors through the atom, lanes of cut vectors element by element.
template <class TiledCopy, class TS, class TD, class TC, class Bound>
CUTE_DEVICE void copy_inside(TiledCopy const& tiled_copy, TS const& src, TD&& dst, TC const& tC,
                             Bound const& bound) {
  auto [tPv, tPe] = boundary_masks(tC, bound);
  copy_if(tiled_copy, tPv, src, dst);
  copy_if(tPe, src, dst);
}

// out = bytes [m, m + 16) of the 32 bytes a0:a1, m = 4 * Q + (shift / 8).
template <int Q>
CUTE_DEVICE uint4 funnel(uint4 const& a0, uint4 const& a1, unsigned shift) {
  unsigned const w[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
  return make_uint4(__funnelshift_r(w[Q + 0], w[Q + 1], shift), __funnelshift_r(w[Q + 1], w[Q + 2], shift),
                    __funnelshift_r(w[Q + 2], w[Q + 3], shift), __funnelshift_r(w[Q + 3], w[Q + 4], shift));
}

// The 16 bytes at offset m (0..15) of the 32 bytes a0:a1: what an aligned pair of source vectors
// holds of a vector that starts m bytes into the first (the realign and transpose families).
CUTE_DEVICE uint4 realign(uint4 const& a0, uint4 const& a1, int m) {
  unsigned const shift = 8u * (m & 3);
  switch (m >> 2) {  // uniform across the warp: m is fixed for a row
    case 0: return funnel<0>(a0, a1, shift);
    case 1: return funnel<1>(a0, a1, shift);
    case 2: return funnel<2>(a0, a1, shift);
    default: return funnel<3>(a0, a1, shift);
  }
}

// Entry `entry` of an index array of I (i32 or i64) at `base`, widened.
template <class I>
CUTE_DEVICE std::int64_t load_index(std::uint64_t base, std::int64_t entry) {
  return static_cast<std::int64_t>(reinterpret_cast<I const*>(base)[entry]);
}

// The item's index on one side of an index-driven copy (realign and convert families): `item`
// itself when the side has no index array (`index` 0); -1 when the item is skipped (a negative
// index, or one at or past `limit`, which the item's first task records once in `status`:
// [count, lowest item]).
CUTE_DEVICE std::int64_t side_index(std::uint64_t index, int index_bytes, int index_stride, std::int64_t item,
                                    std::int64_t limit, unsigned long long* status, bool record) {
  if (index == 0) return item;
  std::int64_t const e = item * index_stride;
  std::int64_t const i = index_bytes == 4 ? load_index<std::int32_t>(index, e) : load_index<std::int64_t>(index, e);
  if (i < 0) return -1;
  if (i >= limit) {
    if (record && status != nullptr) {
      atomicAdd(status, 1ull);
      atomicMin(status + 1, static_cast<unsigned long long>(item));
    }
    return -1;
  }
  return i;
}

}  // namespace cute_copy
