// Host-side CuTe: the TiledCopy a spec describes, built and partitioned by real CuTe on the CPU (no
// GPU needed). TiledCopy needs its thread and value layouts at compile time, so the spec is matched
// against the menu's CUTE_COPY_THR_LAYOUT x CUTE_COPY_VAL_N rows; the tile may be any multiple of
// the tiler and is partitioned as an identity tensor, exactly as a kernel partitions its data.
#include <sstream>
#include <stdexcept>
#include <string>

#include <cute/tensor.hpp>

#include "cute-copy/src/ffi.rs.h"
#include "cute_copy/bridge.h"

namespace cute_copy {
namespace {
using namespace cute;

template <class T>
rust::String to_rust(T const& x) {
  std::ostringstream os;
  os << x;
  return rust::String(os.str());
}

// One (thread layout, value layout) instantiation. The atom is UniversalCopy of `atom_vals` bytes on
// byte elements: the thread-value layout of a copy atom depends only on its traits' (1, bits) layouts,
// which every atom of the menu with the same byte count shares.
template <int TM, int TN, int VN, int A>
SpecInfo partition_with_atom(SpecDesc const& s, std::uint32_t thread, rust::Vec<std::uint32_t>& coords) {
  using ThrLayout = Layout<Shape<Int<TM>, Int<TN>>, Stride<Int<TN>, _1>>;
  using ValLayout = Layout<Shape<_1, Int<VN>>, Stride<Int<VN>, _1>>;
  TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<uint_byte_t<A>>, uint8_t>{}, ThrLayout{}, ValLayout{});

  auto tile = make_shape(static_cast<int>(s.tile_m), static_cast<int>(s.tile_n));
  Tensor cT = make_identity_tensor(tile);             // (BLK_M, BLK_N) -> (m, n)
  ThrCopy thr_copy = tiled_copy.get_slice(thread);
  Tensor tC = thr_copy.partition_S(cT);               // (CPY, CPY_M, CPY_N) -> (m, n)
  for (int i = 0; i < size(tC); ++i) {
    auto c = tC(i);
    coords.push_back(static_cast<std::uint32_t>(get<0>(c)));
    coords.push_back(static_cast<std::uint32_t>(get<1>(c)));
  }
  // The same partition of a row-major tile's element offsets: the thread's CuTe layout.
  Tensor tO = thr_copy.partition_S(make_tensor(counting_iterator<int>(0), make_layout(tile, LayoutRight{})));

  SpecInfo info;
  info.cpy = A;                                  // values per atom call
  info.cpy_m = static_cast<std::uint32_t>(size<1>(tC));
  info.cpy_n = static_cast<std::uint32_t>(size<2>(tC)) * (VN / A);  // atom calls along N
  info.num_threads = static_cast<std::uint32_t>(size(tiled_copy));
  info.tiler_m = TM;
  info.tiler_n = TN * VN;
  info.thr_layout = to_rust(ThrLayout{});
  info.val_layout = to_rust(ValLayout{});
  info.layout_tv = to_rust(typename decltype(tiled_copy)::TiledLayout_TV{});
  info.partition = to_rust(tO.layout());
  return info;
}

template <int TM, int TN, int VN>
SpecInfo partition_with_layouts(SpecDesc const& s, std::uint32_t thread, rust::Vec<std::uint32_t>& coords) {
  switch (s.atom_vals) {
    case 1: return partition_with_atom<TM, TN, VN, 1>(s, thread, coords);
    case 2: if constexpr (VN % 2 == 0) return partition_with_atom<TM, TN, VN, 2>(s, thread, coords); break;
    case 4: if constexpr (VN % 4 == 0) return partition_with_atom<TM, TN, VN, 4>(s, thread, coords); break;
    case 8: if constexpr (VN % 8 == 0) return partition_with_atom<TM, TN, VN, 8>(s, thread, coords); break;
    case 16: if constexpr (VN % 16 == 0) return partition_with_atom<TM, TN, VN, 16>(s, thread, coords); break;
    default: break;
  }
  throw std::invalid_argument("value layout (1," + std::to_string(VN) + ") is not a whole number of " +
                              std::to_string(s.atom_vals) + "-element atoms");
}

template <int TM, int TN>
SpecInfo partition_with_thr(SpecDesc const& s, std::uint32_t thread, rust::Vec<std::uint32_t>& coords) {
  switch (s.val_n) {
#define CUTE_COPY_VAL_N(n) \
  case n: return partition_with_layouts<TM, TN, n>(s, thread, coords);
#include "menu.def"
    default: break;
  }
  throw std::invalid_argument("value layout (1," + std::to_string(s.val_n) + ") is not in the menu");
}

}  // namespace

SpecInfo tiled_copy_partition(SpecDesc const& s, std::uint32_t thread, rust::Vec<std::uint32_t>& coords) {
  if (s.val_m != 1) throw std::invalid_argument("value layouts are one row, (1, n), for row-major data");
  if (thread >= s.thr_m * s.thr_n)
    throw std::out_of_range("thread " + std::to_string(thread) + " out of range for " +
                            std::to_string(s.thr_m * s.thr_n) + " threads");
  if (s.tile_m == 0 || s.tile_n == 0 || s.tile_m % s.thr_m != 0 || s.tile_n % (s.thr_n * s.val_n) != 0)
    throw std::invalid_argument("tile (" + std::to_string(s.tile_m) + "," + std::to_string(s.tile_n) +
                                ") is not a multiple of the tiler (" + std::to_string(s.thr_m) + "," +
                                std::to_string(s.thr_n * s.val_n) + ")");
#define CUTE_COPY_THR_LAYOUT(m, n) \
  if (s.thr_m == m && s.thr_n == n) return partition_with_thr<m, n>(s, thread, coords);
#include "menu.def"
  throw std::invalid_argument("thread layout (" + std::to_string(s.thr_m) + "," + std::to_string(s.thr_n) +
                              ") is not in the menu");
}

}  // namespace cute_copy
