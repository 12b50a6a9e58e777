// Transpose family: copies between layouts of any rank whose unit-stride modes differ (a transpose,
// a permute, NCHW <-> NHWC), or whose rows the realign family cannot take (rank > 3 after
// coalescing), staged through a swizzled shared-memory tile.
//
// Preconditions (planned and checked in Rust, checked again in dispatch.cu): a layout pair of rank
// 1..6 with equal shapes, strides in elements; addresses aligned to the element width. The plan
// names two modes: `a`, along which a tile is loaded (the source's unit-stride mode when it has one)
// and `b`, along which it is stored (the destination's unit-stride mode; for kind `rows` the tile's
// second mode). Every other mode is walked by the grid, the last mode fastest (the planner sorts
// modes by destination stride, outermost first).
//
// A tile is (TB rows along b) x (TA elements along a) in shared memory, row-major in a (as loaded),
// 32 KiB: TA = 256 / Width elements (a 256-byte source row), TB = 128. The shared-memory layout is
//   composition(Swizzle<3, log2 V, log2 TA>, (TB, TA):(TA, 1)),   V = 16 / Width elements per vector
// which XORs the 16-byte chunk index of a row with bits 0..2 of (row / V): whole 16-byte vectors stay
// whole (the load stores them with one 128-bit st.shared), and in the transposed read, where the 32
// lanes of a warp read one 32-bit word each from rows g*V + j of 8 row groups g and 4 word columns,
// the 8 groups land in 8 different chunks: 32 distinct banks, no conflict.
//
//   load:  a TiledCopy of Copy_Atom<UniversalCopy<uint128_t>> with threads (16,16):(16,1) and values
//          (1,V) partitions the (TB, TA) tile of the source: 8 aligned 16-byte loads per thread in
//          flight, then 8 st.shared.v4 at the swizzled offsets;
//   store (kind transpose): a lane owns one word column and one group of V rows: it reads V words
//          (one per row), transposes them in registers (prmt for 1- and 2-byte elements) into 4/W
//          vectors of V consecutive b, and stores each with one 16-byte store along the
//          destination's unit-stride mode (8 lanes = 128 contiguous bytes);
//   store (kind rows): the same partition as the load, read back as 16-byte vectors;
//   kind narrow: when the store mode is short (NCHW -> NHWC: C = 3) and the destination holds a
//          tile's (a, b) block as one run (stride of a == extent of b), the tile is R = extent(b)
//          rows of a run-time length (R * TA' elements in the same 32 KiB, unswizzled), stored as one
//          contiguous run with 16-byte stores;
//   kind narrow_load: the mirror image (NHWC -> NCHW): the load mode is short and the source holds a
//          tile as one run (stride of b == extent of a): loaded as one run, stored as extent(a) rows.
//   kinds narrow / narrow_load in registers (4 / 5): the short mode has 2 .. 8 elements and both
//          sides allow 16-byte accesses: no tile in shared memory; each thread transposes an
//          (R, V) block between two register fragments (NarrowRegs below).
//   kind rows_registers (7): rows on both sides with 16-byte vectors on both: a tile of tb rows
//          of ta elements is a flat list of vectors over the block's threads, registers as the
//          stage (no idle lane for a head dim of 80 or 96);
//   kind items (6): small items (mode 0 counts items, compact and back to back on both sides): a
//          tile is a run of many items, loaded as one run, permuted in shared memory through a
//          per-item table of source offsets, stored as one run.
// Each side is accessed as `Access` says (load / store): whole 16-byte vectors when the offset
// and strides allow them, realigned 16-byte vectors when only the unit stride is there (rows that
// start at any byte offset: the aligned vectors that cover a row are loaded and shifted into place,
// by funnel shifts between neighbouring lanes or by an offset in the byte-addressable stage; stores
// gather the aligned vectors of the destination), element by element otherwise. Vectors that leave
// the tile's valid extent, and a realigned row's first and last partial vectors, go element by
// element under the same coordinates: nothing outside the two layouts is written, nothing outside
// the source layout's span is read.
#define CUTE_COPY_ROW_transpose CUTE_COPY_ROW_CASE  // this file's menu rows, for dispatch (family.cuh)
#define CUTE_COPY_FAMILY_NAME "transpose"
#include "family.cuh"

namespace cute_copy {
using namespace cute;

namespace {

constexpr int kThreads = 256;

// Resident blocks per SM the transpose kernel's register budget is fitted to: 2 (<= 128
// registers). Why not 3: docs/transpose-tuning.md, "Numbers from the kernel's comments".
template <int Width>
constexpr int min_blocks() {
#ifdef CUTE_COPY_TRANSPOSE_MIN_BLOCKS
  return CUTE_COPY_TRANSPOSE_MIN_BLOCKS;
#else
  return 2;
#endif
}
constexpr int kSmemBytes = 32768;

constexpr int log2i(int x) { return x <= 1 ? 0 : 1 + log2i(x / 2); }

template <int Width>
struct Tile {
  static constexpr int V = 16 / Width;       // elements per 16-byte vector
  static constexpr int TA = 256 / Width;     // tile extent along a (elements): 256-byte rows
  static constexpr int TB = kSmemBytes / 256;  // tile extent along b (rows): 128
  static constexpr int P = Width >= 4 ? 1 : 4 / Width;  // elements per transposed-read word
  using E = uint_byte_t<Width>;
  using Word = cute::conditional_t<Width == 8, std::uint64_t, std::uint32_t>;
  using SmemLayout = decltype(composition(Swizzle<3, log2i(V), log2i(TA)>{},
                                          Layout<Shape<Int<TB>, Int<TA>>, Stride<Int<TA>, _1>>{}));
  // The load's TiledCopy: 16 x 16 threads over (rows, 16-byte vectors), one vector per call.
  using ThrLayout = Layout<Shape<_16, _16>, Stride<_16, _1>>;
  using ValLayout = Layout<Shape<_1, Int<V>>, Stride<Int<V>, _1>>;
};

// The tile kinds, as the shared enum TensorKind (src/ffi.rs) numbers them.
enum Kind : int {
  kTranspose = static_cast<int>(TensorKind::Transpose),
  kRows = static_cast<int>(TensorKind::Rows),
  kNarrow = static_cast<int>(TensorKind::Narrow),
  kNarrowLoad = static_cast<int>(TensorKind::NarrowLoad),
  kNarrowRegs = static_cast<int>(TensorKind::NarrowRegisters),
  kNarrowLoadRegs = static_cast<int>(TensorKind::NarrowLoadRegisters),
  kItems = static_cast<int>(TensorKind::Items),
  kRowsRegs = static_cast<int>(TensorKind::RowsRegisters),
};

// How a side is accessed, as the shared enum Access (src/ffi.rs) numbers it.
enum AccessKind : int {
  kElement = static_cast<int>(Access::Element),
  kVector = static_cast<int>(Access::Vector),
  kRealigned = static_cast<int>(Access::Realigned),
};

struct Args {
  std::uint8_t const* src;
  std::uint8_t* dst;
  int rank, kind, a, b;
  int load, store;                  // Access of each side (TensorDesc): kElement, kVector, kRealigned
  std::uint8_t const* src_end;      // src + src_span: a realigned load may read whole vectors below it
  std::int64_t shape[6], ss[6], ds[6];
  std::int64_t sa, sb, da, db;           // the strides of modes a and b on each side
  std::int64_t ta, tb;                   // tile extents (elements along a, rows along b)
  std::int64_t tiles_a, tiles_b, tiles;  // along a, along b, all (times the other modes)
  // Grids of < 2^31 tiles: tile_at's divisions by tiles_a, tiles_b and the other modes' extents as
  // cutlass::FastDivmod built on the host (a multiply-high each instead of a 64-bit division).
  bool fast;
  cutlass::FastDivmod div_a, div_b, div_mode[6];
  // Kind rows_registers: vectors per tile row; kind items: elements per item.
  cutlass::FastDivmod div_row;
};

template <class T>
CUTE_DEVICE T ld_elem(std::uint8_t const* p) { return *reinterpret_cast<T const*>(p); }
template <class T>
CUTE_DEVICE void st_elem(std::uint8_t* p, T v) { *reinterpret_cast<T*>(p) = v; }

// Element j (a compile-time constant after unrolling) of a 16-byte vector held as four words:
// register moves and shifts, never a local-memory array.
template <class E>
CUTE_DEVICE E get_elem(uint4 const& v, int j) {
  constexpr int W = sizeof(E);
  unsigned const w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (W == 8) {
    return static_cast<E>((std::uint64_t(w[2 * j + 1]) << 32) | w[2 * j]);
  } else {
    return static_cast<E>(w[j * W / 4] >> (8 * (j * W % 4)));
  }
}
template <class E>
CUTE_DEVICE void set_elem(uint4& v, int j, E x) {
  constexpr int W = sizeof(E);
  unsigned w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (W == 8) {
    w[2 * j] = static_cast<unsigned>(std::uint64_t(x));
    w[2 * j + 1] = static_cast<unsigned>(std::uint64_t(x) >> 32);
  } else {
    unsigned const sh = 8 * (j * W % 4);
    unsigned const mask = (W == 4 ? 0xffffffffu : ((1u << (8 * W)) - 1u)) << sh;
    w[j * W / 4] = (w[j * W / 4] & ~mask) | ((static_cast<unsigned>(x) << sh) & mask);
  }
  v = make_uint4(w[0], w[1], w[2], w[3]);
}

// Realignment (Access::Realigned): a row (or run) of elements [row, end) at any byte offset is
// covered by the 16-byte-aligned vectors of the 16-byte grid that hold it. Loading, an aligned
// vector is read whole when it lies inside the source layout's span [lo, hi): the span is one
// allocation, and the bytes outside the row are dropped by the shift or never read back; a vector
// that reaches outside the span (a copy's very first and last) is built from the row's elements
// in it. Storing, an aligned vector is written whole only when it lies inside the row; the
// partial vectors at a row's ends go element by element. Nothing outside either layout is
// written, nothing outside the source span is read.
template <int Width>
__noinline__ __device__ uint4 vector_pieces(std::uint8_t const* x, std::uint8_t const* row, std::uint8_t const* end) {
  using E = uint_byte_t<Width>;
  uint4 v = make_uint4(0, 0, 0, 0);
  CUTE_UNROLL
  for (int k = 0; k < 16 / Width; ++k) {
    std::uint8_t const* p = x + k * Width;
    if (p >= row && p < end) set_elem<E>(v, k, ld_elem<E>(p));
  }
  return v;
}

// (Into `v`, which holds zeros: a load that writes its register in place, so that the loads of
// an unrolled loop stay in flight together, no select waiting on each.)
template <int Width>
CUTE_DEVICE void window_load(uint4& v, std::uint8_t const* x, std::uint8_t const* row, std::uint8_t const* end,
                             std::uint8_t const* lo, std::uint8_t const* hi) {
  bool const touches = x + 16 > row && x < end;
  if (touches && x >= lo && x + 16 <= hi)
    v = *reinterpret_cast<uint4 const*>(x);
  else if (touches)
    v = vector_pieces<Width>(x, row, end);
}

template <int Width>
__noinline__ __device__ void store_pieces(std::uint8_t* x, uint4 v, std::uint8_t* row, std::uint8_t* end) {
  using E = uint_byte_t<Width>;
  CUTE_UNROLL
  for (int k = 0; k < 16 / Width; ++k) {
    std::uint8_t* p = x + k * Width;
    if (p >= row && p < end) st_elem<E>(p, get_elem<E>(v, k));
  }
}

template <int Width>
CUTE_DEVICE void window_store(std::uint8_t* x, uint4 v, std::uint8_t* row, std::uint8_t* end) {
  if (x >= row && x + 16 <= end) {
    *reinterpret_cast<uint4*>(x) = v;
  } else if (x + 16 > row && x < end) {
    store_pieces<Width>(x, v, row, end);
  }
}

// The misalignment of an address on the 16-byte grid.
CUTE_DEVICE int grid_offset(void const* p) { return static_cast<int>(reinterpret_cast<std::uintptr_t>(p) & 15); }

// Lane l + 1's (down) or l - 1's (up) vector within each group of 16 lanes (a tile row's lanes).
CUTE_DEVICE uint4 shfl_down16(uint4 v) {
  return make_uint4(__shfl_down_sync(0xffffffffu, v.x, 1, 16), __shfl_down_sync(0xffffffffu, v.y, 1, 16),
                    __shfl_down_sync(0xffffffffu, v.z, 1, 16), __shfl_down_sync(0xffffffffu, v.w, 1, 16));
}
// Lane l + 1's vector within the warp.
CUTE_DEVICE uint4 shfl_down32(uint4 v) {
  return make_uint4(__shfl_down_sync(0xffffffffu, v.x, 1), __shfl_down_sync(0xffffffffu, v.y, 1),
                    __shfl_down_sync(0xffffffffu, v.z, 1), __shfl_down_sync(0xffffffffu, v.w, 1));
}
CUTE_DEVICE uint4 shfl_up16(uint4 v) {
  return make_uint4(__shfl_up_sync(0xffffffffu, v.x, 1, 16), __shfl_up_sync(0xffffffffu, v.y, 1, 16),
                    __shfl_up_sync(0xffffffffu, v.z, 1, 16), __shfl_up_sync(0xffffffffu, v.w, 1, 16));
}
// Lane l - 1's vector within each group of 8 lanes.
CUTE_DEVICE uint4 shfl_up8(uint4 v) {
  return make_uint4(__shfl_up_sync(0xffffffffu, v.x, 1, 8), __shfl_up_sync(0xffffffffu, v.y, 1, 8),
                    __shfl_up_sync(0xffffffffu, v.z, 1, 8), __shfl_up_sync(0xffffffffu, v.w, 1, 8));
}

// realign() for an m that differs between the lanes of a warp: the whole-word part of the shift
// by two rounds of selects instead of a four-way branch.
CUTE_DEVICE uint4 realign_per_lane(uint4 const& a0, uint4 const& a1, int m) {
  unsigned const w[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
  unsigned y[7], z[5];
  CUTE_UNROLL
  for (int i = 0; i < 7; ++i) y[i] = (m & 4) ? w[i + 1] : w[i];
  CUTE_UNROLL
  for (int i = 0; i < 5; ++i) z[i] = (m & 8) ? y[i + 2] : y[i];  // z[i] = w[i + m / 4]
  unsigned const shift = 8u * (m & 3);
  return make_uint4(__funnelshift_r(z[0], z[1], shift), __funnelshift_r(z[1], z[2], shift),
                    __funnelshift_r(z[2], z[3], shift), __funnelshift_r(z[3], z[4], shift));
}

// Four words of one byte column each -> four words of one byte row each (a 4 x 4 byte transpose).
CUTE_DEVICE void transpose4x4(unsigned const (&w)[4], unsigned (&o)[4]) {
  unsigned const t0 = __byte_perm(w[0], w[1], 0x5140), t1 = __byte_perm(w[0], w[1], 0x7362);
  unsigned const t2 = __byte_perm(w[2], w[3], 0x5140), t3 = __byte_perm(w[2], w[3], 0x7362);
  o[0] = __byte_perm(t0, t2, 0x5410);
  o[1] = __byte_perm(t0, t2, 0x7632);
  o[2] = __byte_perm(t1, t3, 0x5410);
  o[3] = __byte_perm(t1, t3, 0x7632);
}

template <int Width>
struct Kernel {
  using T = Tile<Width>;
  using E = typename T::E;
  static constexpr int V = T::V, TA = T::TA, TB = T::TB, P = T::P;

  // Element by element, one vector slot's worth (`n` elements, n < V for a cut vector, V when the
  // side has no 16-byte accesses): a plain loop, not unrolled, so that the rare edge path costs no
  // registers in the hot one.
  static CUTE_DEVICE void copy_elems(std::uint8_t const* from, std::int64_t from_step, std::uint8_t* to,
                                     std::int64_t to_step, int n) {
#pragma unroll 1
    for (int e = 0; e < n; ++e) st_elem<E>(to + e * to_step * Width, ld_elem<E>(from + e * from_step * Width));
  }

  // Edge tile (or no 16-byte loads): the TiledCopy's partition, whole vectors inside the tile as
  // 16-byte loads, the rest element by element straight into shared memory. Out of line: the
  // interior path keeps its registers.
  // (Out-of-line functions take scalars, never a reference to the __grid_constant__ arguments.)
  static __noinline__ __device__ void edge_load(std::uint8_t* smem, std::uint8_t const* s, std::int64_t sa,
                                                std::int64_t sb, bool vec_load, std::int64_t ea, std::int64_t eb) {
    auto const sl = typename T::SmemLayout{};
    TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, E>{}, typename T::ThrLayout{},
                                           typename T::ValLayout{});
    Tensor tc = tiled_copy.get_slice(threadIdx.x).partition_S(make_identity_tensor(Shape<Int<TB>, Int<TA>>{}));
    Tensor v = make_tensor<uint128_t>(make_shape(size<1>(tc)));
    CUTE_UNROLL
    for (int k = 0; k < size<1>(tc); ++k) {
      int const r = get<0>(tc(0, k, 0)), c = get<1>(tc(0, k, 0));
      if (vec_load && r < eb && c + V <= ea) v(k) = *reinterpret_cast<uint128_t const*>(s + (r * sb + c) * Width);
    }
    CUTE_UNROLL
    for (int k = 0; k < size<1>(tc); ++k) {
      int const r = get<0>(tc(0, k, 0)), c = get<1>(tc(0, k, 0));
      std::uint8_t* to = smem + sl(r, c) * Width;  // V elements contiguous under the swizzle
      if (vec_load && r < eb && c + V <= ea) {
        *reinterpret_cast<uint128_t*>(to) = v(k);
      } else if (r < eb && c < ea) {
        copy_elems(s + (r * sb + c * sa) * Width, sa, to, 1, static_cast<int>(cute::min<std::int64_t>(V, ea - c)));
      }
    }
  }

  // Kind rows, edge tile (or no 16-byte stores): whole vectors as 16-byte stores, the rest element
  // by element.
  static __noinline__ __device__ void edge_store_rows(std::uint8_t const* smem, std::uint8_t* d, std::int64_t da,
                                                      std::int64_t db, bool vec_store, std::int64_t ea,
                                                      std::int64_t eb) {
    auto const sl = typename T::SmemLayout{};
    TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, E>{}, typename T::ThrLayout{},
                                           typename T::ValLayout{});
    Tensor tc = tiled_copy.get_slice(threadIdx.x).partition_S(make_identity_tensor(Shape<Int<TB>, Int<TA>>{}));
#pragma unroll 1
    for (int k = 0; k < size<1>(tc); ++k) {
      int const r = get<0>(tc(0, k, 0)), c = get<1>(tc(0, k, 0));
      std::uint8_t const* from = smem + sl(r, c) * Width;
      if (vec_store && r < eb && c + V <= ea) {
        *reinterpret_cast<uint128_t*>(d + (r * db + c) * Width) = *reinterpret_cast<uint128_t const*>(from);
      } else if (r < eb && c < ea) {
        copy_elems(from, 1, d + (r * db + c * da) * Width, da, static_cast<int>(cute::min<std::int64_t>(V, ea - c)));
      }
    }
  }

  // Kind transpose, a unit whose V rows from r0 are cut by the tile edge (or no 16-byte stores):
  // column by column, row by row, straight from shared memory. Rows staged on the grid
  // (realigned_load<true>) hold element c at column c + grid_shift(r); m0 = mstep = 0 otherwise.
  static __noinline__ __device__ void edge_store_columns(std::uint8_t const* smem, std::uint8_t* d, std::int64_t da,
                                                         std::int64_t db, std::int64_t ea, std::int64_t eb, int r0,
                                                         int wc, int m0, int mstep) {
    auto const sl = typename T::SmemLayout{};
#pragma unroll 1
    for (int p = 0; p < P; ++p) {
      int const c = wc * P + p;
      if (c >= ea) break;
#pragma unroll 1
      for (int r = cute::max(r0, 0); r < r0 + V && r < eb; ++r)
        st_elem<E>(d + (c * da + r * db) * Width, ld_elem<E>(smem + sl(r, c + grid_shift(m0, mstep, r)) * Width));
    }
  }

  // The column of stage row r that holds the row's element 0 when rows are staged as the 16-byte
  // grid holds them: row r of the source starts (m0 + r * mstep) mod 16 bytes into the grid.
  static CUTE_DEVICE int grid_shift(int m0, int mstep, int r) { return ((m0 + r * mstep) & 15) / Width; }

  // Realigned load of a tile whose rows start at any byte offset. Thread (r0, n) =
  // (tid / 16, tid % 16) of the load TiledCopy's (16,16):(16,1) thread layout owns aligned vector
  // n of the 16-byte grid under rows r0 + 16 i. The 16 aligned vectors of a row hold 256 bytes of
  // the grid, and so the first 240 bytes of the row at any misalignment: a realigned tile is
  // TA - V elements wide (the planner's tile_a), so that no lane loads a 17th vector. The rows of
  // a thread are 16 rows apart, a whole number of vectors: one misalignment m for all of them.
  // Two ways to the stage:
  //  - OnGrid (kind transpose, 4- and 8-byte elements): by cp.async (CuTe's
  //    SM80_CP_ASYNC_CACHEGLOBAL atom), grid vector n of row r at the swizzled place of tile
  //    vector n, as the grid holds it; the transposed read finds element c of row r at column
  //    c + grid_shift(r) (whole words: the shift is whole elements of 4 or 8 bytes). No registers,
  //    shuffles or shifts on the way in. A vector that reaches outside the source span (the copy's
  //    first and last) is built from the row's elements in it; outside interior tiles (below),
  //    vectors that hold none of the row are not staged (never read).
  //  - in registers: lanes 0..14 take the next lane's vector (shfl), funnel-shift the pair into
  //    tile vector n and store it whole at its swizzled offset; lane 15's vector only feeds lane 14.
  template <bool OnGrid>
  static __noinline__ __device__ void realigned_load(std::uint8_t* smem, std::uint8_t const* s, std::int64_t sb,
                                                     std::int64_t ea, std::int64_t eb, std::uint8_t const* lo,
                                                     std::uint8_t const* hi) {
    auto const sl = typename T::SmemLayout{};
    constexpr int kRows = TB / 16;
    int const n = threadIdx.x % 16, r0 = threadIdx.x / 16;
    int const m = grid_offset(s + r0 * sb * Width);
    // When the aligned vectors of every row of the tile lie inside the source span (all tiles but
    // those at the copy's first and last bytes), each is read whole with no check of its own; those
    // that hold none of their row's elements are staged but never read back.
    std::uint8_t const* const last = s + (eb - 1) * sb * Width;
    bool const inside = (s < last ? s : last) - 16 >= lo && (s < last ? last : s) + 256 <= hi;
    uint4 v[kRows];
    CUTE_UNROLL
    for (int i = 0; i < kRows; ++i) {
      int const r = r0 + 16 * i;
      std::uint8_t const* row = s + r * sb * Width;
      std::uint8_t const* end = row + ea * Width;
      std::uint8_t const* x = row - m + 16 * n;
      if constexpr (OnGrid) {
        auto* to = reinterpret_cast<uint128_t*>(smem + sl(r, n * V) * Width);
        if (r < eb && (inside || (x + 16 > row && x < end))) {
          if (inside || (x >= lo && x + 16 <= hi))
            SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>::copy(*reinterpret_cast<uint128_t const*>(x), *to);
          else
            *reinterpret_cast<uint4*>(to) = vector_pieces<Width>(x, row, end);
        }
      } else {
        v[i] = make_uint4(0, 0, 0, 0);
        if (r < eb && inside)
          v[i] = *reinterpret_cast<uint4 const*>(x);
        else if (r < eb)
          window_load<Width>(v[i], x, row, end, lo, hi);
      }
    }
    if constexpr (!OnGrid) {
      CUTE_UNROLL
      for (int i = 0; i < kRows; ++i) {
        uint4 const next = shfl_down16(v[i]);
        int const r = r0 + 16 * i;
        if (r < eb && n < 15) *reinterpret_cast<uint4*>(smem + sl(r, n * V) * Width) = realign(v[i], next, m);
      }
    } else {
      cp_async_fence();
      cp_async_wait<0>();
    }
  }

  // Kind rows, realigned store: destination row r starts m bytes into the 16-byte grid; its aligned
  // vector k holds tile bytes [16 k - m, 16 k - m + 16): the tail of chunk k - 1 (the lane before's,
  // shfl) and the head of chunk k. Lane n stores vector n, lane 15 also vector 16; the row's first
  // and last go element by element.
  static __noinline__ __device__ void realigned_store_rows(std::uint8_t const* smem, std::uint8_t* d, std::int64_t db,
                                                           std::int64_t ea, std::int64_t eb) {
    auto const sl = typename T::SmemLayout{};
    constexpr int kRows = TB / 16;
    int const n = threadIdx.x % 16, r0 = threadIdx.x / 16;
    int const m = grid_offset(d + r0 * db * Width);
    CUTE_UNROLL
    for (int i = 0; i < kRows; ++i) {
      int const r = r0 + 16 * i;
      uint4 const cur = r < eb ? *reinterpret_cast<uint4 const*>(smem + sl(r, n * V) * Width) : make_uint4(0, 0, 0, 0);
      uint4 const prev = shfl_up16(cur);
      if (r >= eb) continue;
      std::uint8_t* row = d + r * db * Width;
      std::uint8_t* end = row + ea * Width;
      window_store<Width>(row - m + 16 * n, m == 0 ? cur : realign(prev, cur, 16 - m), row, end);
      if (n == 15 && m != 0) window_store<Width>(row - m + 256, realign(cur, make_uint4(0, 0, 0, 0), 16 - m), row, end);
    }
  }

  // The transposed read of unit (rows r0 .. r0 + V, word column wc): out[p] holds the V elements
  // of column wc * P + p as four 32-bit words (prmt for 1- and 2-byte elements). Rows staged on
  // the grid (realigned_load<true>) hold element c at column c + grid_shift(r).
  static CUTE_DEVICE void transposed_read(std::uint8_t const* smem, int r0, int wc, int m0, int mstep,
                                          unsigned (&out)[P][4]) {
    auto const sl = typename T::SmemLayout{};
    using Word = typename T::Word;
    // For 1- and 2-byte elements r0 is a whole row group (grp * V): the swizzle XORs the same bits
    // into the columns of its V rows, so row r0 + j is row r0's address plus j rows. Wider
    // elements may start anywhere (a realigned store shifts r0 by its column's misalignment).
    Word w[V];
    CUTE_UNROLL
    for (int j = 0; j < V; ++j) {
      int const c = wc * P + grid_shift(m0, mstep, r0 + j);
      w[j] = *reinterpret_cast<Word const*>(smem + (P > 1 ? sl(r0, c) + j * TA : sl(r0 + j, c)) * Width);
    }
    if constexpr (Width == 8) {
      out[0][0] = static_cast<unsigned>(w[0]);
      out[0][1] = static_cast<unsigned>(w[0] >> 32);
      out[0][2] = static_cast<unsigned>(w[1]);
      out[0][3] = static_cast<unsigned>(w[1] >> 32);
    } else if constexpr (Width == 4) {
      CUTE_UNROLL
      for (int j = 0; j < 4; ++j) out[0][j] = w[j];
    } else if constexpr (Width == 2) {
      CUTE_UNROLL
      for (int q = 0; q < 4; ++q) {
        out[0][q] = __byte_perm(w[2 * q], w[2 * q + 1], 0x5410);
        out[1][q] = __byte_perm(w[2 * q], w[2 * q + 1], 0x7632);
      }
    } else {
      CUTE_UNROLL
      for (int q = 0; q < 4; ++q) {
        unsigned const in[4] = {w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]};
        unsigned o[4];
        transpose4x4(in, o);
        CUTE_UNROLL
        for (int p = 0; p < 4; ++p) out[p][q] = o[p];
      }
    }
  }

  // Kind transpose, realigned store of 1- and 2-byte elements: the P columns of a word start at
  // their own misalignments on the destination's 16-byte grid (column c at m_c bytes, g = m_c / Width
  // rows before its first aligned vector). A segment is the 8 units of one word column in 8
  // consecutive lanes: 8 row groups, rows [S, S + 8 V) of the tile. Each unit reads the words of its
  // own V rows and transposes them in registers as an aligned unit does, one V-row vector per
  // column; the aligned vector of column c that starts g rows before the unit's first row is the
  // tail of the group before's vector (the lane before's, shfl) and the head of its own, so lanes
  // 1..7 (all 8 when m_c = 0) store whole vectors. The segment's cut rows, the h = V - g before its
  // first aligned row and those after its last whole vector, are spread over its 8 lanes element
  // by element from the stage, so that no lane waits on another's edge. Rows from eb (an edge
  // tile's last) and columns from ea are never written.
  static __noinline__ __device__ void realigned_store_segment(std::uint8_t const* smem, std::uint8_t* d,
                                                              std::int64_t da, std::int64_t ea, std::int64_t eb,
                                                              int grp, int wc) {
    static_assert(P > 1, "for 1- and 2-byte elements; wider ones shift whole rows (square)");
    auto const sl = typename T::SmemLayout{};
    int const lane = threadIdx.x & 7;  // the unit's row group in its segment
    int const S = (grp - lane) * V;
    int const end = static_cast<int>(cute::min<std::int64_t>(S + 8 * V, eb));
    // Cut rows per column: V in a whole segment, up to 2 V - 1 in one the tile's last row cuts.
    int const cut_rows = end == S + 8 * V ? V : 2 * V;
    unsigned out[P][4];
    transposed_read(smem, grp * V, wc, 0, 0, out);
    CUTE_UNROLL
    for (int p = 0; p < P; ++p) {
      std::int64_t const c = std::int64_t(wc) * P + p;
      std::uint8_t* col = d + c * da * Width;
      int const m = grid_offset(col);
      uint4 const cur = make_uint4(out[p][0], out[p][1], out[p][2], out[p][3]);
      uint4 const prev = shfl_up8(cur);  // every lane of the warp, before any leaves
      if (c >= ea) continue;             // the same in the segment's 8 lanes
      int const r = grp * V - m / Width;  // the first row of the aligned vector this lane stores
      if (r + V <= end && (m == 0 || lane > 0))
        *reinterpret_cast<uint4*>(col + r * Width) = m == 0 ? cur : realign_per_lane(prev, cur, 16 - m);
      // The cut rows: h head rows [S, S + h) before the first aligned row, and the tail rows from
      // the end of the last whole vector to `end`.
      int const h = ((16 - m) & 15) / Width;
      int const tail = end > S + h ? S + h + (end - S - h) / V * V : S + h;
#pragma unroll 1
      for (int t = lane; t < cut_rows; t += 8) {
        int const row = t < h ? S + t : tail + (t - h);
        if (row < end) st_elem<E>(col + row * Width, ld_elem<E>(smem + sl(row, c) * Width));
      }
    }
  }

  // One tile of kind transpose or rows: load (TB x TA) through the TiledCopy (or realigned), then
  // store.
  // Realign: the instantiation for plans with a realigned side; the other one has no realigned
  // branch at all, so that aligned tiles keep the code (and registers) they had without it.
  template <bool Realign>
  static CUTE_DEVICE void square(Args const& g, std::uint8_t* smem, std::uint8_t const* s, std::uint8_t* d,
                                 std::int64_t ea, std::int64_t eb) {
    int const tid = threadIdx.x;
    auto const sl = typename T::SmemLayout{};
    std::int64_t const sa = g.sa, sb = g.sb, da = g.da, db = g.db;
    TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, E>{}, typename T::ThrLayout{},
                                           typename T::ValLayout{});
    ThrCopy thr = tiled_copy.get_slice(tid);
    Tensor cT = make_identity_tensor(Shape<Int<TB>, Int<TA>>{});  // (TB, TA) -> (row, col)
    Tensor tc = thr.partition_S(cT);                               // (V, 8, 1)
    Tensor sT = make_tensor(make_smem_ptr(reinterpret_cast<E*>(smem)), sl);
    Tensor tsT = thr.partition_D(sT);  // (V, 8, 1) swizzled smem
    Tensor frag = make_tensor<E>(shape(tc));  // (V, 8, 1) registers
    bool const full = ea == TA && eb == TB;
    bool const vec_load = g.load == kVector, vec_store = g.store == kVector;
    // Rows staged as the 16-byte grid holds them (realigned_load<true>): their misalignment.
    bool const grid = Realign && Width >= 4 && g.kind == kTranspose && g.load == kRealigned;
    int const m0 = grid ? grid_offset(s) : 0, mstep = grid ? static_cast<int>((sb * Width) & 15) : 0;
    if (full && vec_load) {
      Tensor gS = make_tensor(make_gmem_ptr(reinterpret_cast<E const*>(s)),
                              make_layout(Shape<Int<TB>, Int<TA>>{}, make_stride(sb, _1{})));
      copy(tiled_copy, thr.partition_S(gS), frag);
      copy(tiled_copy, frag, tsT);  // 16-byte st.shared at the swizzled offsets
    } else if (grid) {
      realigned_load<true>(smem, s, sb, ea, eb, g.src, g.src_end);
    } else if (Realign && g.load == kRealigned) {
      realigned_load<false>(smem, s, sb, ea, eb, g.src, g.src_end);
    } else {
      edge_load(smem, s, sa, sb, vec_load, ea, eb);
    }
    __syncthreads();

    if (g.kind == kRows) {  // the tile's rows are destination rows too: read back 16-byte vectors
      if (full && vec_store) {
        copy(tiled_copy, tsT, frag);
        Tensor gD = make_tensor(make_gmem_ptr(reinterpret_cast<E*>(d)),
                                make_layout(Shape<Int<TB>, Int<TA>>{}, make_stride(db, _1{})));
        copy(tiled_copy, frag, thr.partition_D(gD));
      } else if (Realign && g.store == kRealigned) {
        realigned_store_rows(smem, d, db, ea, eb);
      } else {
        edge_store_rows(smem, d, da, db, vec_store, ea, eb);
      }
    } else {
      // Transposed read. Unit u = (word column wc, row group grp): lanes 0..7 take 8 row groups,
      // lanes 8..31 step the word column, so a warp covers 8 groups x 4 word columns.
      constexpr int NG = TB / V;             // row groups of V rows
      constexpr int NW = TA / P;             // word columns (element columns for Width 8)
      constexpr int kUnits = NG * NW / kThreads;
      static_assert(NG % 8 == 0 && NW % 4 == 0 && kUnits * kThreads == NG * NW, "tile does not fit the warp shape");
      bool const realigned = Realign && g.store == kRealigned;
      // Two units at a time: shared-memory reads need no deep pipeline, and the 16-byte stores
      // are fire-and-forget; full unrolling only costs registers (and occupancy).
#pragma unroll 2
      for (int k = 0; k < kUnits; ++k) {
        int const u = k * kThreads + tid;
        int const rest = u / 32;
        int const grp = (rest % (NG / 8)) * 8 + u % 8;
        int const wc = (rest / (NG / 8)) * 4 + (u / 8) % 4;
        if constexpr (P > 1) {
          if (realigned) {  // every lane of the warp: the segments exchange vectors (shfl)
            realigned_store_segment(smem, d, da, ea, eb, grp, wc);
            continue;
          }
        }
        if (wc * P >= ea) continue;  // no column of this unit in the tile (a realigned tile's last vector)
        int r0 = grp * V;
        if (realigned) {
          if constexpr (P == 1) {
            // One column per unit: its V rows shifted by the column's misalignment.
            int const shift = grid_offset(d + std::int64_t(wc) * da * Width) / Width;
            r0 -= shift;
            if (grp == 0 && shift > 0)
              edge_store_columns(smem, d, da, db, ea, eb, TB - shift, wc, m0, mstep);  // the cut last vector
          }
        }
        if (!((vec_store || realigned) && r0 >= 0 && r0 + V <= eb)) {
          edge_store_columns(smem, d, da, db, ea, eb, r0, wc, m0, mstep);
          continue;
        }
        unsigned out[P][4];  // out[p]: rows r0 .. r0 + V of column wc * P + p
        transposed_read(smem, r0, wc, m0, mstep, out);
        CUTE_UNROLL
        for (int p = 0; p < P; ++p) {
          std::int64_t const c = std::int64_t(wc) * P + p;
          if (c < ea)
            *reinterpret_cast<uint4*>(d + (c * da + r0) * Width) = make_uint4(out[p][0], out[p][1], out[p][2], out[p][3]);
          // (c * da + r0) * Width is 16-byte aligned: r0 is shifted by the column's misalignment
        }
      }
    }
    __syncthreads();  // the next tile overwrites the smem this one read
  }

  // One tile of kind narrow: R = extent(b) rows of ta elements (run-time), unswizzled; the
  // destination image of the tile is one run of ea * R elements (stride of a == R, of b == 1).
  // Realigned loads keep each row as the 16-byte grid holds it: shared row r is the aligned vectors
  // over source row r (pitch ta * Width + 16), element c at byte m_r + c * Width, so no shift is
  // needed; realigned stores start the run's vectors at its first 16-byte boundary.
  static CUTE_DEVICE void narrow(Args const& g, std::uint8_t* smem, std::uint8_t const* s, std::uint8_t* d,
                                 std::int64_t ea) {
    int const tid = threadIdx.x;
    int const R = static_cast<int>(g.tb);
    int const ta = static_cast<int>(g.ta);
    std::int64_t const sa = g.sa, sb = g.sb;
    bool const realigned = g.load == kRealigned, vec_load = g.load == kVector;
    int const pitch = ta * Width + (realigned ? 16 : 0);
    int const vecs_per_row = ta / V + (realigned ? 1 : 0);
    int const total = R * vecs_per_row;
    int const m0 = grid_offset(s), mstep = static_cast<int>((sb * Width) & 15);
    constexpr int kBatch = 4;  // loads in flight per thread before any st.shared (x 4 resident blocks)
    for (int base = 0; base < total; base += kThreads * kBatch) {
      uint4 v[kBatch];
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = base + k * kThreads + tid;
        int const r = i / vecs_per_row, q = i % vecs_per_row, c = q * V;
        if (i >= total) continue;
        if (realigned) {
          std::uint8_t const* row = s + r * sb * Width;
          v[k] = make_uint4(0, 0, 0, 0);
          window_load<Width>(v[k], row - ((m0 + r * mstep) & 15) + 16 * q, row, row + ea * Width, g.src, g.src_end);
        } else if (vec_load && c + V <= ea) {
          v[k] = *reinterpret_cast<uint4 const*>(s + (r * sb + c) * Width);
        }
      }
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = base + k * kThreads + tid;
        int const r = i / vecs_per_row, q = i % vecs_per_row, c = q * V;
        std::uint8_t* to = smem + r * pitch + q * 16;
        if (i >= total) continue;
        if (realigned || (vec_load && c + V <= ea))
          *reinterpret_cast<uint4*>(to) = v[k];
        else if (c < ea)
          copy_elems(s + (r * sb + c * sa) * Width, sa, to, 1, static_cast<int>(cute::min<std::int64_t>(V, ea - c)));
      }
    }
    __syncthreads();
    auto at = [&](int r, int a) {
      return ld_elem<E>(smem + r * pitch + (realigned ? (m0 + r * mstep) & 15 : 0) + a * Width);
    };
    int const n = static_cast<int>(ea) * R;  // elements of the destination run (one tile: < 2^15)
    bool const vec_store = g.store != kElement;
    int const head = g.store == kRealigned ? (16 - grid_offset(d)) % 16 / Width : 0;  // before the first boundary
    if (tid < head && tid < n) st_elem<E>(d + tid * Width, at(tid % R, tid / R));
    for (int f0 = head + tid * V; f0 < n; f0 += kThreads * V) {
      int a = f0 / R, r = f0 % R;
      if (vec_store && f0 + V <= n) {
        uint4 v = make_uint4(0, 0, 0, 0);
        CUTE_UNROLL
        for (int k = 0; k < V; ++k) {
          set_elem<E>(v, k, at(r, a));
          if (++r == R) { r = 0; ++a; }
        }
        *reinterpret_cast<uint4*>(d + std::int64_t(f0) * Width) = v;
      } else {
#pragma unroll 1
        for (int k = 0; k < V && f0 + k < n; ++k) {
          st_elem<E>(d + std::int64_t(f0 + k) * Width, at(r, a));
          if (++r == R) { r = 0; ++a; }
        }
      }
    }
    __syncthreads();
  }
};

template <int Width>
struct NarrowLoad {
  using E = uint_byte_t<Width>;
  static constexpr int V = 16 / Width;
  // One tile of kind narrow_load: the source image is one run of eb * R elements (R = extent(a),
  // stride of a == 1, of b == R), staged flat; stored as R destination rows of eb elements along b.
  // Realigned, the run is staged as the 16-byte grid holds it (element f at byte m + f * Width) and
  // each destination row's vectors start at its first 16-byte boundary.
  static CUTE_DEVICE void tile(Args const& g, std::uint8_t* smem, std::uint8_t const* s, std::uint8_t* d,
                               std::int64_t eb) {
    int const tid = threadIdx.x;
    int const R = static_cast<int>(g.ta);
    int const n = static_cast<int>(eb) * R;  // elements of the source run (one tile: < 2^15)
    bool const realigned = g.load == kRealigned, vec_load = g.load == kVector;
    int const m = realigned ? grid_offset(s) : 0;
    std::uint8_t const* const a0 = s - m;
    int const nv = (m + n * Width + 15) / 16;
    constexpr int kBatch = 4;  // loads in flight per thread before any st.shared (x 4 resident blocks)
    for (int base = 0; base < nv; base += kThreads * kBatch) {
      uint4 v[kBatch];
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = base + k * kThreads + tid;
        if (i >= nv) continue;
        if (realigned) {
          v[k] = make_uint4(0, 0, 0, 0);
          window_load<Width>(v[k], a0 + std::int64_t(i) * 16, s, s + n * Width, g.src, g.src_end);
        } else if (vec_load && (i + 1) * V <= n)
          v[k] = *reinterpret_cast<uint4 const*>(s + std::int64_t(i) * 16);
      }
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = base + k * kThreads + tid;
        if (i >= nv) continue;
        if (realigned || (vec_load && (i + 1) * V <= n))
          *reinterpret_cast<uint4*>(smem + std::int64_t(i) * 16) = v[k];
        else
          Kernel<Width>::copy_elems(s + std::int64_t(i) * 16, 1, smem + std::int64_t(i) * 16, 1, cute::min(int(V), n - i * V));
      }
    }
    __syncthreads();
    auto at = [&](int f) { return ld_elem<E>(smem + m + f * Width); };
    bool const realigned_store = g.store == kRealigned;
    int const nvb = static_cast<int>((eb + V - 1) / V) + (realigned_store ? 1 : 0);  // vectors per destination row
    for (int i = tid; i < R * nvb; i += kThreads) {
      int const a = i / nvb;
      std::uint8_t* row = d + a * g.da * Width;  // db == 1 unless stores go element by element
      int const b = (i % nvb) * V - (realigned_store ? grid_offset(row) / Width : 0);
      if (g.store != kElement && b >= 0 && b + V <= eb) {
        uint4 v = make_uint4(0, 0, 0, 0);
        CUTE_UNROLL
        for (int j = 0; j < V; ++j) set_elem<E>(v, j, at((b + j) * R + a));
        *reinterpret_cast<uint4*>(row + b * Width) = v;
      } else {
#pragma unroll 1
        for (int j = cute::max(0, -b); j < V && b + j < eb; ++j) st_elem<E>(row + (b + j) * g.db * Width, at((b + j) * R + a));
      }
    }
    __syncthreads();
  }
};

// Kinds narrow and narrow_load with registers as the stage (kinds 4 and 5): the short mode has
// R <= 8 elements and both sides allow 16-byte accesses. A thread owns a block of V columns (along
// the long mode) times the R rows: the R vectors of the row side are loaded (or stored) one 16-byte
// vector per row, the run side holds the same R x V elements as R consecutive vectors. In CuTe terms
// the block is two register fragments over the same (R, V) coordinates:
//   rows: (R, V):(V, 1)   row r's V elements contiguous (what a 16-byte access along the long mode moves)
//   run:  (R, V):(1, R)   element (r, j) at j * R + r (the interleaved run, NHWC order)
// and `copy(rows, run)` (or back) is the transpose, register moves and byte permutes after unrolling.
// No shared memory and no barrier: loads of the next column blocks are in flight while others
// store, and 8 blocks stay resident per SM.
//
// A tile is moved by a group of `threads` threads (narrow_group_threads: a power of two from 32 to
// the block's 256, enough for one pass over the tile's column blocks), so a block takes 256 /
// threads tiles at once: a short tile (a 1920-byte image row, a 7 x 7 feature map) leaves no
// warp idle. `tid` is the thread's index in its group.
//
// Kind 4 also takes realigned loads (`Realign`: source rows at any byte offset, unit stride along
// the long mode, the destination run on the 16-byte grid): row r's column block i is the 16 bytes
// at phase m_r of the aligned vectors i and i + 1 under the row. Each lane loads vector i, takes
// i + 1 from the next lane (shfl.down; lane 31 loads it), and funnel-shifts the pair
// (realign_per_lane). A tile whose aligned vectors are not all inside the source span (at most
// the span's first and last tiles, tested once per tile) goes element by element, so nothing
// outside the source span is read.
// The (R, V) block's transpose for 1- and 2-byte elements as byte permutes. Both orders of the
// block are 4R words: rows order (row r's 16 bytes are words 4r .. 4r + 3) and run order (element
// (r, j) at j * R + r). Output word o gathers its 4 bytes from at most 4 input words: one prmt
// takes the first two, each further word one more, every selector a compile-time constant
// (`word_plan`). For R = 3 u8 that is 2 prmt a word, where the element-wise fragment copy took
// about 200 shift, mask and multiply-add instructions a block (ncu, docs/transpose-tuning.md).
struct WordPlan {
  int n;                 // prmt instructions
  int src[4];            // input words: src[0], src[1] for the first, src[k + 1] for the k-th after
  unsigned sel[3];       // their selectors
};

// Input byte of output byte p.
template <int Width, int R, bool ToRun>
CUTE_HOST_DEVICE constexpr int block_source_byte(int p) {
  if (ToRun) {
    int const f = p / Width, e = p % Width;
    return (f % R) * 16 + (f / R) * Width + e;
  }
  int const r = p / 16, j = (p % 16) / Width, e = p % Width;
  return (j * R + r) * Width + e;
}

template <int Width, int R, bool ToRun>
CUTE_HOST_DEVICE constexpr WordPlan word_plan(int o) {
  WordPlan w{};
  int word[4] = {}, byte[4] = {}, d[4] = {}, nd = 0;
  for (int b = 0; b < 4; ++b) {
    int const q = block_source_byte<Width, R, ToRun>(4 * o + b);
    word[b] = q / 4;
    byte[b] = q % 4;
    bool seen = false;
    for (int k = 0; k < nd; ++k) seen = seen || d[k] == word[b];
    if (!seen) d[nd++] = word[b];
  }
  w.n = nd > 1 ? nd - 1 : 1;
  for (int k = 0; k < 4; ++k) w.src[k] = k < nd ? d[k] : d[0];
  for (int s = 0; s < w.n; ++s) {
    // step 0 places the bytes of d[0] and d[1]; step s >= 1 keeps what is placed and adds d[s + 1]
    unsigned sel = 0;
    for (int b = 0; b < 4; ++b) {
      unsigned nib = static_cast<unsigned>(b);  // keep (steps >= 1)
      if (s == 0) nib = word[b] == d[0] ? byte[b] : (nd > 1 && word[b] == d[1]) ? 4 + byte[b] : 0;
      else if (word[b] == d[s + 1]) nib = 4 + byte[b];
      sel |= nib << (4 * b);
    }
    w.sel[s] = sel;
  }
  return w;
}

template <int Width, int R, bool ToRun, int O, class In, class Out>
CUTE_DEVICE void block_word(In const& in, Out& out) {
  constexpr WordPlan w = word_plan<Width, R, ToRun>(O);
  std::uint32_t acc = __byte_perm(in(w.src[0]), in(w.src[1]), w.sel[0]);
  if constexpr (w.n > 1) acc = __byte_perm(acc, in(w.src[2]), w.sel[1]);
  if constexpr (w.n > 2) acc = __byte_perm(acc, in(w.src[3]), w.sel[2]);
  out(O) = acc;
}

template <int Width, int R, bool ToRun, class In, class Out, int... O>
CUTE_DEVICE void block_words(In const& in, Out& out, std::integer_sequence<int, O...>) {
  (block_word<Width, R, ToRun, O>(in, out), ...);
}

// in, out: (4R) word tensors in registers.
template <int Width, int R, bool ToRun, class In, class Out>
CUTE_DEVICE void byte_transpose(In const& in, Out& out) {
  block_words<Width, R, ToRun>(in, out, std::make_integer_sequence<int, 4 * R>{});
}

// The (R, V) block of a narrow tile in registers transposed between its two orders, rows (R,V):(V,1)
// and run (R,V):(1,R), from `in` to `out` (R x V elements each, in registers): byte permutes for
// 1- and 2-byte elements, CuTe's fragment copy (whole-register moves) for wider ones.
template <int Width, int R, bool ToRun, class E>
CUTE_DEVICE void block_transpose(E* in, E* out) {
  constexpr int V = 16 / Width;
  using RowFrag = Layout<Shape<Int<R>, Int<V>>, Stride<Int<V>, _1>>;
  using RunFrag = Layout<Shape<Int<R>, Int<V>>, Stride<_1, Int<R>>>;
  if constexpr (Width <= 2) {
    Tensor o = recast<std::uint32_t>(make_tensor(out, Layout<Int<R * V>>{}));
    byte_transpose<Width, R, ToRun>(recast<std::uint32_t>(make_tensor(in, Layout<Int<R * V>>{})), o);
  } else if constexpr (ToRun) {
    copy(make_tensor(in, RowFrag{}), make_tensor(out, RunFrag{}));
  } else {
    copy(make_tensor(in, RunFrag{}), make_tensor(out, RowFrag{}));
  }
}

// Kind 5's run elements past the tile's last whole column block, element by element.
template <int Width, int R>
CUTE_DEVICE void narrow_load_tail(std::uint8_t const* s, std::uint8_t* d, std::int64_t row_bytes, int nv, int eb,
                                  int tid, int threads) {
  using E = uint_byte_t<Width>;
  for (int f = nv * (16 / Width) * R + tid; f < eb * R; f += threads) {
    int const j = f / R, r = f % R;
    st_elem<E>(d + r * row_bytes + std::int64_t(j) * Width, ld_elem<E>(s + std::int64_t(f) * Width));
  }
}

// Column blocks per thread in flight: two for 2 .. 4 rows, one for more; realigned 1- and 2-byte rows
// one (two measured slower: u8 crop 0.68 -> 0.65x D2D, f16 0.81 -> 0.80; f32 0.89 -> 0.92, H100,
// docs/transpose-tuning.md), since lane 31 holds a second vector of every row.
CUTE_HOST_DEVICE constexpr int narrow_blocks_in_flight(int r, bool realign, int width) {
  return r <= 4 && (!realign || width >= 4) ? 2 : 1;
}
// Kind 5 with realigned stores: a warp takes 32 column blocks of which the last is the next warp's
// first (31 new blocks a warp; NarrowRegs::load_run_realigned).
CUTE_HOST_DEVICE int narrow_group_threads(std::int64_t long_extent, int width, int r, bool realign, bool overlap) {
  std::int64_t const nv = long_extent / (16 / width), u = narrow_blocks_in_flight(r, realign, width);
  std::int64_t const per_warp = overlap ? 31 : 32;
  std::int64_t const need = (nv + u * per_warp - 1) / (u * per_warp) * 32;
  int group = 32;
  while (group < kThreads && group < need) group *= 2;
  return group;
}

template <int Width, int R, bool Realign = false>
struct NarrowRegs {
  using E = uint_byte_t<Width>;
  static constexpr int V = 16 / Width;
  // column blocks per thread in flight (<= 2 x 4 x 16 bytes)
  static constexpr int U = narrow_blocks_in_flight(R, Realign, Width);
  using RowFrag = Layout<Shape<Int<R>, Int<V>>, Stride<Int<V>, _1>>;
  using RunFrag = Layout<Shape<Int<R>, Int<V>>, Stride<_1, Int<R>>>;
  static constexpr int kExchangeBits = R % 2 ? 0 : R % 4 ? 1 : R % 8 ? 2 : 3;  // min(3, tz(R))

  // Kind 4 (store mode short, NCHW -> NHWC): source rows r at stride sb, unit stride along a; the
  // destination tile is one run, element (r, c) at c * R + r. `ea` columns in this tile (< 2^31:
  // a tile is at most 32 KiB). The run of a warp's 32 column blocks is 32 x R consecutive vectors;
  // stored straight from each lane they would be R 16-byte stores 16 * R bytes apart across the
  // lanes, every 32-byte sector written half by one instruction and half by another. So the lanes
  // exchange them through `stage` (the warp's 32 x R slots under Swizzle<B,0,3> on the slot index,
  // B = min(3, trailing zero bits of R): lane l writes slot l * R + q, and 8 lanes' slots hit 8
  // different 16-byte bank groups once the swizzle folds the 2^B factor of R back in; an odd R
  // spreads them by itself (B = 0, the plain index). TransposeTile::exchange_ways models it) and
  // store instruction q writes vectors q * 32 + lane: 512 contiguous bytes.
  static CUTE_DEVICE void store_run(std::uint8_t const* s, std::int64_t sb, std::uint8_t* d, int ea,
                                    uint128_t* stage, int tid, int threads, std::uint8_t const* lo,
                                    std::uint8_t const* hi) {
    int const nv = ea / V;  // whole column blocks
    int const lane = threadIdx.x % 32;
    std::int64_t const row_bytes = sb * Width;
    auto const slot = Swizzle<kExchangeBits, 0, 3>{};
    // Realigned: each row's phase on the 16-byte grid. A tile whose aligned vectors 0 .. nv of
    // some row reach outside the source span (at most the span's first and last tiles) goes
    // element by element.
    int m[Realign ? R : 1] = {};
    if constexpr (Realign) {
      bool inside = true;
      CUTE_UNROLL
      for (int r = 0; r < R; ++r) {
        m[r] = grid_offset(s + r * row_bytes);
        std::uint8_t const* const a = s + r * row_bytes - m[r];
        inside = inside && a >= lo && a + std::int64_t(nv + 1) * 16 <= hi;
      }
      if (!inside) {
        run_elements(s, row_bytes, d, 0, ea, tid, threads);
        return;
      }
    }
    for (int i0 = tid; i0 - lane < nv; i0 += threads * U) {
      Tensor rows = make_tensor<E>(Shape<Int<R * V>, Int<U>>{});  // U blocks of R x V, RowFrag order
      if constexpr (Realign) {
        uint4 x[U][R], y[U][R];  // aligned vectors i and (lane 31) i + 1 of each row
        CUTE_UNROLL
        for (int u = 0; u < U; ++u) {
          int const i = i0 + u * threads;
          CUTE_UNROLL
          for (int r = 0; r < R; ++r) {
            std::uint8_t const* const a = s + r * row_bytes - m[r] + std::int64_t(i) * 16;
            x[u][r] = y[u][r] = make_uint4(0, 0, 0, 0);
            if (i <= nv) x[u][r] = *reinterpret_cast<uint4 const*>(a);
            if (lane == 31 && i < nv) y[u][r] = *reinterpret_cast<uint4 const*>(a + 16);
          }
        }
        CUTE_UNROLL
        for (int u = 0; u < U; ++u) {
          Tensor rv = recast<uint128_t>(make_tensor(&rows(0, u), RowFrag{}));  // (R, 1)
          CUTE_UNROLL
          for (int r = 0; r < R; ++r) {
            uint4 next = shfl_down32(x[u][r]);
            bool const last = lane == 31;
            next.x = last ? y[u][r].x : next.x;
            next.y = last ? y[u][r].y : next.y;
            next.z = last ? y[u][r].z : next.z;
            next.w = last ? y[u][r].w : next.w;
            uint4 const v = realign_per_lane(x[u][r], next, m[r]);
            rv(r, 0) = reinterpret_cast<uint128_t const&>(v);
          }
        }
      } else {
        CUTE_UNROLL
        for (int u = 0; u < U; ++u) {
          int const c = (i0 + u * threads) * V;
          Tensor rv = recast<uint128_t>(make_tensor(&rows(0, u), RowFrag{}));  // (R, 1)
          std::uint8_t const* p = s + c * Width;
          if (i0 + u * threads < nv)
            CUTE_UNROLL
            for (int r = 0; r < R; ++r) rv(r, 0) = *reinterpret_cast<uint128_t const*>(p + r * row_bytes);
        }
      }
      CUTE_UNROLL
      for (int u = 0; u < U; ++u) {
        int const i = i0 + u * threads, first = i - lane;  // the warp's blocks: first .. first + 31
        if (first >= nv) break;  // uniform across the warp
        if (i < nv) {
          Tensor run = make_tensor<E>(Layout<Int<R * V>>{});
          block_transpose<Width, R, true>(&rows(0, u), run.data());
          Tensor qv = recast<uint128_t>(run);  // (R) vectors of the run
          CUTE_UNROLL
          for (int q = 0; q < R; ++q) stage[slot(lane * R + q)] = qv(q);
        }
        __syncwarp();
        auto* out = reinterpret_cast<uint128_t*>(d + std::int64_t(first) * V * R * Width);
        CUTE_UNROLL
        for (int q = 0; q < R; ++q) {
          int const g = q * 32 + lane;
          if (first + g / R < nv) out[g] = stage[slot(g)];
        }
        __syncwarp();
      }
    }
    // Columns past the last whole block: element by element.
    run_elements(s, row_bytes, d, nv * V, ea, tid, threads);
  }

  // Kind 4, element by element: run elements of columns [first, ea) from the R rows.
  static CUTE_DEVICE void run_elements(std::uint8_t const* s, std::int64_t row_bytes, std::uint8_t* d, int first,
                                       int ea, int tid, int threads) {
    for (int f = first * R + tid; f < ea * R; f += threads) {
      int const c = f / R, r = f % R;
      st_elem<E>(d + std::int64_t(f) * Width, ld_elem<E>(s + r * row_bytes + std::int64_t(c) * Width));
    }
  }

  // Kind 5 (load mode short, NHWC -> NCHW): the source tile is one run, element (r, j) at j * R + r;
  // destination rows r at stride da, unit stride along b. `eb` columns in this tile.
  static CUTE_DEVICE void load_run(std::uint8_t const* s, std::uint8_t* d, std::int64_t da, int eb, int tid,
                                   int threads) {
    int const nv = eb / V;
    std::int64_t const row_bytes = da * Width;
    for (int i0 = tid; i0 < nv; i0 += threads * U) {
      Tensor runs = make_tensor<E>(Shape<Int<R * V>, Int<U>>{});  // U blocks of R x V, RunFrag order
      CUTE_UNROLL
      for (int u = 0; u < U; ++u) {
        int const j = (i0 + u * threads) * V;
        Tensor qv = recast<uint128_t>(make_tensor(&runs(0, u), Layout<Int<R * V>>{}));  // (R)
        auto const* p = reinterpret_cast<uint128_t const*>(s + j * R * Width);
        if (i0 + u * threads < nv)
          CUTE_UNROLL
          for (int q = 0; q < R; ++q) qv(q) = p[q];
      }
      CUTE_UNROLL
      for (int u = 0; u < U; ++u) {
        int const j = (i0 + u * threads) * V;
        if (i0 + u * threads >= nv) continue;
        Tensor rows = make_tensor<E>(Layout<Int<R * V>>{});
        block_transpose<Width, R, false>(&runs(0, u), rows.data());
        Tensor rv = recast<uint128_t>(make_tensor(rows.data(), RowFrag{}));  // (R, 1)
        std::uint8_t* p = d + j * Width;
        CUTE_UNROLL
        for (int r = 0; r < R; ++r) *reinterpret_cast<uint128_t*>(p + r * row_bytes) = rv(r, 0);
      }
    }
    narrow_load_tail<Width, R>(s, d, row_bytes, nv, eb, tid, threads);
  }
};

template <int Width, int R>
struct NarrowRegsStore {
  using E = uint_byte_t<Width>;
  static constexpr int V = 16 / Width;
  static constexpr int U = narrow_blocks_in_flight(R, true, Width);
  using RowFrag = Layout<Shape<Int<R>, Int<V>>, Stride<Int<V>, _1>>;

  // Kind 5 with realigned stores: destination rows r at stride da and any byte offset (phase m_r on
  // the 16-byte grid), the source run on the grid. The lanes of a warp take 32 consecutive column
  // blocks, the last of which is also the next warp's first (31 new blocks a warp, the one
  // overlapping block loaded twice). After the transpose, lane l < 31 stores the aligned vector
  // that starts in its block's bytes of row r and ends in its neighbour's: the two funnel-shifted
  // (shfl.down, realign). So every aligned vector of a row is stored whole by exactly one lane but
  // the row's first and last, which are cut by the row's ends and go element by element.
  static CUTE_DEVICE void load_run(std::uint8_t const* s, std::uint8_t* d, std::int64_t da, int eb, int tid,
                                   int threads) {
    int const nv = eb / V;
    int const lane = threadIdx.x % 32, per_pass = threads / 32 * 31;
    std::int64_t const row_bytes = da * Width;
    int m[R];
    CUTE_UNROLL
    for (int r = 0; r < R; ++r) m[r] = grid_offset(d + r * row_bytes);
    for (int i0 = tid / 32 * 31 + lane; i0 - lane < nv; i0 += per_pass * U) {
      Tensor runs = make_tensor<E>(Shape<Int<R * V>, Int<U>>{});  // U blocks of R x V, run order
      CUTE_UNROLL
      for (int u = 0; u < U; ++u) {
        int const i = i0 + u * per_pass;
        Tensor qv = recast<uint128_t>(make_tensor(&runs(0, u), Layout<Int<R * V>>{}));  // (R)
        auto const* p = reinterpret_cast<uint128_t const*>(s + std::int64_t(i) * V * R * Width);
        CUTE_UNROLL
        for (int q = 0; q < R; ++q) qv(q) = i < nv ? p[q] : uint128_t{};
      }
      CUTE_UNROLL
      for (int u = 0; u < U; ++u) {
        int const i = i0 + u * per_pass;
        if (i - lane >= nv) break;  // uniform across the warp
        Tensor rows = make_tensor<E>(Layout<Int<R * V>>{});
        block_transpose<Width, R, false>(&runs(0, u), rows.data());
        Tensor rv = recast<uint4>(make_tensor(rows.data(), RowFrag{}));  // (R, 1)
        bool const mine = i < nv && lane < 31;
        CUTE_UNROLL
        for (int r = 0; r < R; ++r) {
          uint4 const v = rv(r, 0);
          uint4 const next = shfl_down32(v);
          std::uint8_t* const row = d + r * row_bytes;
          int const mr = m[r];
          if (!mine) continue;
          if (mr == 0) {
            *reinterpret_cast<uint4*>(row + std::int64_t(i) * 16) = v;
            continue;
          }
          if (i == 0)  // the row's first aligned vector, cut by its start: this block's head
            CUTE_UNROLL
            for (int k = 0; k < V; ++k)
              if (k * Width < 16 - mr) st_elem<E>(row + k * Width, get_elem<E>(v, k));
          if (i + 1 < nv) {
            *reinterpret_cast<uint4*>(row - mr + std::int64_t(i + 1) * 16) = realign(v, next, 16 - mr);
          } else {  // the last whole block's tail: past it the row ends before the next boundary
            CUTE_UNROLL
            for (int k = 0; k < V; ++k)
              if (k * Width >= 16 - mr) st_elem<E>(row + std::int64_t(i) * 16 + k * Width, get_elem<E>(v, k));
          }
        }
      }
    }
    narrow_load_tail<Width, R>(s, d, row_bytes, nv, eb, tid, threads);
  }
};

// Tile t of the grid: its origin along a and b, and the addresses of its (0, 0) element.
struct TileAt {
  std::int64_t a0, b0;
  std::uint8_t const* s;
  std::uint8_t* d;
};

template <int Width>
CUTE_DEVICE TileAt tile_at(Args const& g, std::int64_t t) {
  std::int64_t a0, b0, so, dof;
  if (g.fast) {
    int rest = static_cast<int>(t), ia, ib;
    g.div_a(rest, ia, rest);
    g.div_b(rest, ib, rest);
    a0 = ia * g.ta;
    b0 = ib * g.tb;
    so = a0 * g.sa + b0 * g.sb;
    dof = a0 * g.da + b0 * g.db;
    for (int m = g.rank - 1; m >= 0; --m) {  // the other modes, the last (innermost) fastest
      if (m == g.a || m == g.b) continue;
      int x;
      g.div_mode[m](rest, x, rest);
      so += x * g.ss[m];
      dof += x * g.ds[m];
    }
  } else {
    std::int64_t rest = t;
    std::int64_t const ia = rest % g.tiles_a;
    rest /= g.tiles_a;
    std::int64_t const ib = rest % g.tiles_b;
    rest /= g.tiles_b;
    a0 = ia * g.ta;
    b0 = ib * g.tb;
    so = a0 * g.sa + b0 * g.sb;
    dof = a0 * g.da + b0 * g.db;
    for (int m = g.rank - 1; m >= 0; --m) {
      if (m == g.a || m == g.b) continue;
      std::int64_t const x = rest % g.shape[m];
      rest /= g.shape[m];
      so += x * g.ss[m];
      dof += x * g.ds[m];
    }
  }
  return {a0, b0, g.src + so * Width, g.dst + dof * Width};
}

// Kinds transpose and rows: the swizzled tile (<= 128 registers, 2 resident blocks per SM).
template <int Width, bool Realign>
__global__ void __launch_bounds__(kThreads, min_blocks<Width>()) transpose_kernel(__grid_constant__ Args const g) {
  __shared__ alignas(128) std::uint8_t smem[kSmemBytes];
  for (std::int64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    TileAt const at = tile_at<Width>(g, t);
    std::int64_t const ea = cute::min(g.ta, g.shape[g.a] - at.a0);
    std::int64_t const eb = g.a == g.b ? 1 : cute::min(g.tb, g.shape[g.b] - at.b0);
    Kernel<Width>::template square<Realign>(g, smem, at.s, at.d, ea, eb);
  }
}

// Kinds narrow and narrow_load: a few instructions per element, no out-of-line edge path; their
// own kernel with their own register budget so that more blocks stay resident (measured:
// docs/transpose-tuning.md).
#ifndef CUTE_COPY_NARROW_MIN_BLOCKS
#define CUTE_COPY_NARROW_MIN_BLOCKS 4
#endif
template <int Width>
__global__ void __launch_bounds__(kThreads, CUTE_COPY_NARROW_MIN_BLOCKS) narrow_kernel(__grid_constant__ Args const g) {
  __shared__ alignas(128) std::uint8_t smem[kSmemBytes];
  for (std::int64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    TileAt const at = tile_at<Width>(g, t);
    if (g.kind == kNarrow)
      Kernel<Width>::narrow(g, smem, at.s, at.d, cute::min(g.ta, g.shape[g.a] - at.a0));
    else
      NarrowLoad<Width>::tile(g, smem, at.s, at.d, cute::min(g.tb, g.shape[g.b] - at.b0));
  }
}

// Kinds 4 and 5: narrow tiles with registers as the stage (NarrowRegs), R = the short extent; a
// group of `threads` threads per tile, 256 / threads tiles per block at once.
// Which side of a narrow tile in registers is realigned: none, kind 4's loads, kind 5's stores (an
// instantiation each, so that neither's registers are the other's).
enum NarrowRealign : int { kRealignNone = 0, kRealignLoads = 1, kRealignStores = 2 };

template <int Width, int R, int Realign>
CUTE_DEVICE void narrow_regs_tiles(Args const& g, uint128_t* stage) {
  uint128_t* const warp_stage = stage + (threadIdx.x / 32) * 32 * R;
  bool const narrow = g.kind == kNarrowRegs;
  int const threads = narrow_group_threads(narrow ? g.ta : g.tb, Width, R, Realign != kRealignNone,
                                           Realign == kRealignStores);
  int const groups = kThreads / threads, tid = threadIdx.x % threads;
  for (std::int64_t t = std::int64_t(blockIdx.x) * groups + threadIdx.x / threads; t < g.tiles;
       t += std::int64_t(gridDim.x) * groups) {
    TileAt const at = tile_at<Width>(g, t);
    if constexpr (Realign == kRealignStores)
      NarrowRegsStore<Width, R>::load_run(at.s, at.d, g.da, static_cast<int>(cute::min(g.tb, g.shape[g.b] - at.b0)),
                                          tid, threads);
    else if (narrow)
      NarrowRegs<Width, R, Realign == kRealignLoads>::store_run(
          at.s, g.sb, at.d, static_cast<int>(cute::min(g.ta, g.shape[g.a] - at.a0)), warp_stage, tid, threads,
          g.src, g.src_end);
    else if constexpr (Realign == kRealignNone)
      NarrowRegs<Width, R>::load_run(at.s, at.d, g.da, static_cast<int>(cute::min(g.tb, g.shape[g.b] - at.b0)),
                                     tid, threads);
  }
}

// R <= 4 keeps two column blocks per thread in flight within 64 registers (4 resident blocks per
// SM at least); R = 5 .. 8 one block in up to 128 registers: a kernel each, so that neither's
// budget is the other's. Realigned rows (kind 4's loads, kind 5's stores) are an instantiation of
// their own; of 4- and 8-byte rows, two blocks in flight in up to 128 registers.
template <int Width, bool Wide, int Realign>
__global__ void __launch_bounds__(kThreads, Wide || (Realign != kRealignNone && Width >= 4) ? 2 : 3) narrow_regs_kernel(__grid_constant__ Args const g) {
  // Kind 4's per-warp exchange: 32 x R 16-byte slots per warp, sized at launch (none for kind 5).
  extern __shared__ uint128_t stage[];
  int const r = static_cast<int>(g.kind == kNarrowRegs ? g.tb : g.ta);
  if constexpr (Wide) {
    switch (r) {
      case 5: return narrow_regs_tiles<Width, 5, Realign>(g, stage);
      case 6: return narrow_regs_tiles<Width, 6, Realign>(g, stage);
      case 7: return narrow_regs_tiles<Width, 7, Realign>(g, stage);
      case 8: return narrow_regs_tiles<Width, 8, Realign>(g, stage);
      default: return;  // dispatch.cu admits 2 .. 8 only
    }
  } else {
    switch (r) {
      case 2: return narrow_regs_tiles<Width, 2, Realign>(g, stage);
      case 3: return narrow_regs_tiles<Width, 3, Realign>(g, stage);
      case 4: return narrow_regs_tiles<Width, 4, Realign>(g, stage);
      default: return;
    }
  }
}

// Kind rows_registers: a tile is tb rows (along b) of ta elements (along a, unit stride and
// 16-byte vectors on both sides), nvr = ta / V vectors per row, flattened over the block: thread t
// moves vectors t, t + 256, ... (row, vector) = divmod(i, nvr), four loads in flight before their
// stores. Registers are the stage: no shared memory, no barrier, and no idle lane whatever the row
// length (a head dim of 80 or 96 elements fills every thread as 64 or 128 does). Vectors the tile
// edge cuts go element by element.
template <int Width>
__global__ void __launch_bounds__(kThreads, 4) rows_kernel(__grid_constant__ Args const g) {
  using E = uint_byte_t<Width>;
  constexpr int V = 16 / Width, kBatch = 4;
  int const nvr = static_cast<int>(g.ta / V);
  int const total = static_cast<int>(g.tb) * nvr;
  for (std::int64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    TileAt const at = tile_at<Width>(g, t);
    int const ea = static_cast<int>(cute::min(g.ta, g.shape[g.a] - at.a0));
    int const eb = static_cast<int>(cute::min(g.tb, g.shape[g.b] - at.b0));
    for (int i0 = threadIdx.x; i0 < total; i0 += kThreads * kBatch) {
      uint4 v[kBatch];
      int r[kBatch], c[kBatch];
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = i0 + k * kThreads, iq = i < total ? i : 0;
        int q;
        g.div_row(r[k], q, iq);
        c[k] = q * V;
        if (i < total && r[k] < eb && c[k] + V <= ea)
          v[k] = *reinterpret_cast<uint4 const*>(at.s + (r[k] * g.sb + c[k]) * Width);
      }
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = i0 + k * kThreads;
        if (i >= total || r[k] >= eb || c[k] >= ea) continue;
        std::uint8_t* to = at.d + (r[k] * g.db + c[k]) * Width;
        if (c[k] + V <= ea)
          *reinterpret_cast<uint4*>(to) = v[k];
        else
          Kernel<Width>::copy_elems(at.s + (r[k] * g.sb + c[k]) * Width, 1, to, 1, ea - c[k]);
      }
    }
  }
}

// Kind items: mode 0 counts items of isz = tb elements; every other mode lies inside an item,
// compact on both sides, and items follow each other (stride isz) on both: a tile of ta items is
// one run of ta * isz elements on each side. The block first builds the item's permutation in
// shared memory, perm[j] = the source offset (inside an item) of the destination's element j,
// from the modes' coordinates; then per tile it loads the source run realigned (the aligned vectors
// that cover it, staged as the 16-byte grid holds them) and stores the destination run as aligned
// 16-byte vectors gathered through perm, its first and last partial vectors element by element.
// Many small items per tile instead of one tile per item.
template <int Width>
__global__ void __launch_bounds__(kThreads, 4) items_kernel(__grid_constant__ Args const g) {
  using E = uint_byte_t<Width>;
  constexpr int V = 16 / Width, kBatch = 4;
  extern __shared__ uint4 dyn[];
  std::uint8_t* const data = reinterpret_cast<std::uint8_t*>(dyn);
  int const isz = static_cast<int>(g.tb), per_tile = static_cast<int>(g.ta);
  int const data_bytes = (per_tile * isz * Width + 16 + 15) / 16 * 16;
  auto* const perm = reinterpret_cast<std::uint16_t*>(data + data_bytes);
  // Every mode but 0 lies inside an item of at most 4096 elements (dispatch.cu): its extent and
  // strides fit an int, and 32-bit divisions are a fraction of 64-bit ones.
  for (int j = threadIdx.x; j < isz; j += kThreads) {
    int so = 0;
    for (int m = 1; m < g.rank; ++m)
      if (g.shape[m] > 1)  // a mode of extent 1 adds nothing, whatever its strides say
        so += (j / static_cast<int>(g.ds[m])) % static_cast<int>(g.shape[m]) * static_cast<int>(g.ss[m]);
    perm[j] = static_cast<std::uint16_t>(so);
  }
  __syncthreads();
  std::int64_t const items = g.shape[0];
  for (std::int64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    std::int64_t const n0 = t * per_tile;
    int const n = static_cast<int>(cute::min<std::int64_t>(per_tile, items - n0)) * isz;  // elements
    std::uint8_t const* const s = g.src + n0 * isz * Width;
    std::uint8_t* const d = g.dst + n0 * isz * Width;
    int const m = grid_offset(s);
    int const nv = (m + n * Width + 15) / 16;
    // Every tile but the copy's first and last has all its aligned vectors inside the source span:
    // those load whole, with no per-vector window checks.
    bool const inside = s - m >= g.src && s - m + std::int64_t(nv) * 16 <= g.src_end;
    for (int base = 0; base < nv; base += kThreads * kBatch) {
      uint4 v[kBatch];
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = base + k * kThreads + threadIdx.x;
        v[k] = make_uint4(0, 0, 0, 0);
        if (i < nv && inside)
          v[k] = *reinterpret_cast<uint4 const*>(s - m + std::int64_t(i) * 16);
        else if (i < nv)
          window_load<Width>(v[k], s - m + std::int64_t(i) * 16, s, s + n * Width, g.src, g.src_end);
      }
      CUTE_UNROLL
      for (int k = 0; k < kBatch; ++k) {
        int const i = base + k * kThreads + threadIdx.x;
        if (i < nv) dyn[i] = v[k];
      }
    }
    __syncthreads();
    auto at = [&](int item, int j) { return ld_elem<E>(data + m + (item * isz + perm[j]) * Width); };
    int const head = cute::min(n, (16 - grid_offset(d)) % 16 / Width);  // elements before the first boundary
    int const body = head + (n - head) / V * V;
    for (int f0 = head + threadIdx.x * V; f0 < body; f0 += kThreads * V) {
      int item, j;
      g.div_row(item, j, f0);
      uint4 v = make_uint4(0, 0, 0, 0);
      CUTE_UNROLL
      for (int k = 0; k < V; ++k) {
        set_elem<E>(v, k, at(item, j));
        if (++j == isz) { j = 0; ++item; }
      }
      *reinterpret_cast<uint4*>(d + std::int64_t(f0) * Width) = v;
    }
    for (int f = threadIdx.x; f < head + (n - body); f += kThreads) {
      int const e = f < head ? f : body + (f - head);
      st_elem<E>(d + std::int64_t(e) * Width, at(e / isz, e % isz));
    }
    __syncthreads();
  }
}

// Dynamic shared memory of an items tile: the staged source run (with the 16 bytes realignment
// may add), then the permutation (u16 per element of an item).
inline std::size_t items_smem_bytes(Args const& g, int width) {
  std::size_t const data = (std::size_t(g.ta * g.tb * width) + 16 + 15) / 16 * 16;
  return data + (std::size_t(g.tb) * 2 + 15) / 16 * 16;
}

template <int Width, int AtomBytes, bool ZeroFill>
struct TransposeLaunch {
  static void run(Args const& g, cudaStream_t stream) {
    if (g.tiles <= 0) return;
    unsigned const blocks = static_cast<unsigned>(cute::min<std::int64_t>(g.tiles, 0x7fffffff));
    if (g.kind == kNarrowRegs || g.kind == kNarrowLoadRegs) {
      bool const narrow = g.kind == kNarrowRegs;
      std::int64_t const r = narrow ? g.tb : g.ta;
      std::size_t const smem = narrow ? std::size_t(kThreads) * r * 16 : 0;  // <= 32 KiB
      // realigned loads (kind 4) or stores (kind 5): the rows' side
      int const realign = narrow ? (g.load == kRealigned ? kRealignLoads : kRealignNone)
                                 : (g.store == kRealigned ? kRealignStores : kRealignNone);
      int const groups = kThreads / narrow_group_threads(narrow ? g.ta : g.tb, Width, static_cast<int>(r),
                                                         realign != kRealignNone, realign == kRealignStores);
      unsigned const grid =
          static_cast<unsigned>(cute::min<std::int64_t>((g.tiles + groups - 1) / groups, 0x7fffffff));
      if (r > 4 && realign == kRealignLoads)
        narrow_regs_kernel<Width, true, kRealignLoads><<<grid, kThreads, smem, stream>>>(g);
      else if (r > 4 && realign == kRealignStores)
        narrow_regs_kernel<Width, true, kRealignStores><<<grid, kThreads, smem, stream>>>(g);
      else if (r > 4)
        narrow_regs_kernel<Width, true, kRealignNone><<<grid, kThreads, smem, stream>>>(g);
      else if (realign == kRealignLoads)
        narrow_regs_kernel<Width, false, kRealignLoads><<<grid, kThreads, smem, stream>>>(g);
      else if (realign == kRealignStores)
        narrow_regs_kernel<Width, false, kRealignStores><<<grid, kThreads, smem, stream>>>(g);
      else
        narrow_regs_kernel<Width, false, kRealignNone><<<grid, kThreads, smem, stream>>>(g);
      check_launch("narrow_regs_kernel");
    } else if (g.kind == kNarrow || g.kind == kNarrowLoad) {
      narrow_kernel<Width><<<blocks, kThreads, 0, stream>>>(g);
      check_launch("narrow_kernel");
    } else if (g.kind == kRowsRegs) {
      rows_kernel<Width><<<blocks, kThreads, 0, stream>>>(g);
      check_launch("rows_kernel");
    } else if (g.kind == kItems) {
      items_kernel<Width><<<blocks, kThreads, items_smem_bytes(g, Width), stream>>>(g);
      check_launch("items_kernel");
    } else {
      if (g.load == kRealigned || g.store == kRealigned)
        transpose_kernel<Width, true><<<blocks, kThreads, 0, stream>>>(g);
      else
        transpose_kernel<Width, false><<<blocks, kThreads, 0, stream>>>(g);
      check_launch("transpose_kernel");
    }
  }
};

template <int Width, int AtomBytes, bool ZeroFill>
struct TransposeConfig {
  // Thread layout (16,16) and value layout (1,V) of the load's TiledCopy; tile (TB, TA).
  static ConfigValues run() {
    using T = Tile<Width>;
    return {kThreads, 16, 16, 1, T::V, T::TB, T::TA, kSmemBytes};
  }
};

}  // namespace

void launch_transpose(AtomId atom, int width, TensorDesc const& t) {
  Args g{};
  g.src = reinterpret_cast<std::uint8_t const*>(t.src);
  g.dst = reinterpret_cast<std::uint8_t*>(t.dst);
  g.rank = static_cast<int>(t.rank);
  g.kind = static_cast<int>(t.kind);
  g.a = static_cast<int>(t.mode_a);
  g.b = static_cast<int>(t.mode_b);
  g.load = static_cast<int>(t.load);
  g.store = static_cast<int>(t.store);
  g.src_end = g.src + t.src_span;
  for (int m = 0; m < 6; ++m) {
    g.shape[m] = t.shape[m];
    g.ss[m] = t.src_stride[m];
    g.ds[m] = t.dst_stride[m];
  }
  g.sa = t.src_stride[t.mode_a];
  g.sb = t.src_stride[t.mode_b];
  g.da = t.dst_stride[t.mode_a];
  g.db = t.dst_stride[t.mode_b];
  g.ta = t.tile_a;
  g.tb = t.tile_b;
  g.tiles_a = t.tiles_a;
  g.tiles_b = t.tiles_b;
  g.tiles = t.tiles;
  // tiles is the product of the divisors (src/transpose.rs), so every one and every dividend then fits
  // in 31 bits; checked here all the same.
  auto fits = [](std::int64_t x) { return x >= 1 && x <= 0x7fffffff; };
  g.fast = fits(g.tiles) && fits(g.tiles_a) && fits(g.tiles_b);
  for (int m = 0; m < g.rank; ++m) g.fast = g.fast && (m == g.a || m == g.b || fits(g.shape[m]));
  if (g.fast) {
    g.div_a = cutlass::FastDivmod(static_cast<int>(g.tiles_a));
    g.div_b = cutlass::FastDivmod(static_cast<int>(g.tiles_b));
    for (int m = 0; m < g.rank; ++m)
      if (m != g.a && m != g.b) g.div_mode[m] = cutlass::FastDivmod(static_cast<int>(g.shape[m]));
  }
  if (g.kind == kRowsRegs) g.div_row = cutlass::FastDivmod(static_cast<int>(g.ta / (16 / width)));
  if (g.kind == kItems) g.div_row = cutlass::FastDivmod(static_cast<int>(g.tb));
  dispatch<TransposeLaunch>(atom, width, g, reinterpret_cast<cudaStream_t>(t.stream));
}

ConfigValues config_transpose(AtomId atom, int width) { return dispatch<TransposeConfig>(atom, width); }

}  // namespace cute_copy
