// The convert family: copies that change the element type on the way, and may scale or normalize
// per channel, between two layouts of one shape (rank 1..6). Planned by src/convert.rs, checked by
// dispatch.cu's launch_convert.
//
// An element x of type S becomes y of type D:
//   plain:   y = D(x), one rounding from the exact value of x (see src/convert.rs ConvertRule):
//            floats round to nearest even (FP8: saturated to the largest finite value, PTX
//            cvt.rn.satfinite), float -> integer rounds to nearest even and clamps (NaN -> 0),
//            integers clamp to the destination's range;
//   affine:  y = D((x - mean[c]) * mul[c]) in f32 (f64 when S or D is f64), c the channel, then
//            converted as an f32 (f64) would be.
//
// Preconditions (launch_convert): the pair is coalesced, shapes >= 1, strides in elements, the
// source span is the layout's, the route's counts are the planner's.
//  * Elementwise (the last mode is the fastest on both sides): a thread converts a chunk of
//    kChunk = 32 / min(SW, DW) elements of one row (32 bytes of the narrower type). The chunks
//    of a row are phased to the destination's 16-byte grid, so every destination vector a chunk
//    covers inside the row is one UniversalCopy<uint128_t> store; only a row's first and last
//    partial vectors go element by element. A chunk's source is loaded as 16-byte vectors: one
//    each where the row's source phase matches, else the aligned vectors around it, funnel-
//    shifted into place (`realign`), when they lie inside the source span; else by element.
//    When the destination is unit-stride with elements of 2 bytes or more, no channel steps along
//    the row and a destination vector's source is 4 bytes or more (same-width and narrowing pairs,
//    widening up to 4x), a row's chunks are lane-interleaved in groups of 32: chunk j of a group
//    owns the group's destination vectors j, j + 32, ..., so each store instruction of a warp
//    writes 512 consecutive bytes (whole 32-byte sectors) and each lane loads its vectors' sources
//    (16-byte vectors, or one 4- or 8-byte word each when widening, on the source's grid).
//    Index-driven (a row gather or scatter, a block table): mode 0 walks items, and an item's
//    source and destination items come from the index arrays (common.cuh side_index): a
//    negative index skips the item, one past the side's items is skipped and counted once.
//  * Tile (the fastest modes differ): a block converts a (tile_b, tile_a) tile over modes
//    (mode_b, mode_a): loaded along mode_a by consecutive threads, converted in registers, staged
//    in shared memory as D, rows padded by one 32-bit word, stored along mode_b by consecutive
//    threads.
//  * Channels (a short mode of 2..16 channels interleaved on one side, planar on the other: NHWC
//    <-> NCHW and their crops): a block converts a (C, tile_w) tile. The source's bytes are staged
//    raw by aligned 16-byte vectors, each run at its own 16-byte phase (no shift); each aligned
//    16-byte destination vector is gathered from the stage, converted in registers and stored
//    whole (see convert_channels).
//
// Kernels are instantiated per (source width, destination width) pair; the scalar types of a
// width (CUTE_COPY_SCALAR rows of menu.def) share them, switched on once per thread.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cutlass/fast_math.h>

#include "family.cuh"

namespace cute_copy {
namespace {

using cutlass::FastDivmodU64;

constexpr int kThreads = 256;
constexpr int kUnroll = 2;          // chunks per thread (src/convert.rs UNROLL)
constexpr int kTileElems = 4096;    // elements per tile: 16 per thread (a wide tile, both sides by
                                    // vectors: up to 16384, src/convert.rs tile_extents)
constexpr int kVecsPerThread = 4;   // tile route: 16-byte loads a thread has in flight
// Tile route: lanes per run segment, 4 (64 consecutive bytes, two whole sectors): a warp's gather
// from the stage then reads 8 runs (tile columns) at once, in distinct banks; groups of 8 lanes
// (4 runs) read two words per bank (ncu, f32 -> bf16 16384^2 transposed: 17.6 M conflicts).
constexpr int kLogGroup = 2, kGroup = 1 << kLogGroup;
constexpr int kChannelsByValue = 16;

// ---- One element: exact source value, one rounding -------------------------------------------

template <class T, class U>
CUTE_DEVICE T bits_as(U u) {
  static_assert(sizeof(T) == sizeof(U), "same width");
  T t;
  memcpy(&t, &u, sizeof(T));
  return t;
}

template <class T>
constexpr bool kIsFp8 = std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>;

// ---- FP8 encodings and decodings -----------------------------------------------------------------
// With a PTX instruction for them (sm_89 and later: cvt between f32 / f16x2 and e4m3x2 / e5m2x2)
// they are inlined; without one (every f64 -> FP8, and all of them before sm_89) cuda_fp8.hpp runs
// a software routine of some hundred instructions through f64. Those routines are called out of
// line: the same routine and result, once per object instead of inlined at each of the hundreds of
// places the tiles and chunks of every FP8 pair convert an element, which made them most of the
// convert family's compile time (ptxas) for sm_80.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define CUTE_COPY_FP8_F32 CUTE_DEVICE
#else
#define CUTE_COPY_FP8_F32 __device__ __noinline__
#endif

CUTE_COPY_FP8_F32 __nv_fp8_storage_t fp8_of_f32(float x, __nv_fp8_interpretation_t kind) {
  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, kind);
}

// Unreferenced in a part whose sources never convert pairwise (8-byte sources).
[[maybe_unused]] CUTE_COPY_FP8_F32 __nv_fp8x2_storage_t fp8x2_of_f32x2(float a, float b, __nv_fp8_interpretation_t kind) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, kind);
}

template <class T>
CUTE_COPY_FP8_F32 float f32_of_fp8(T x) {
  return static_cast<float>(x);
}

__device__ __noinline__ __nv_fp8_storage_t fp8_of_f64(double x, __nv_fp8_interpretation_t kind) {
  return __nv_cvt_double_to_fp8(x, __NV_SATFINITE, kind);
}

// Any scalar as f32: exact for every float but f64, round to nearest even for wide integers.
template <class T>
CUTE_DEVICE float f32_of(T x) {
  if constexpr (std::is_same_v<T, float>) return x;
  else if constexpr (std::is_same_v<T, double>) return __double2float_rn(x);
  else if constexpr (std::is_same_v<T, __half>) return __half2float(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else if constexpr (kIsFp8<T>) return f32_of_fp8(x);
  else if constexpr (std::is_same_v<T, std::int64_t>) return __ll2float_rn(x);
  else if constexpr (std::is_same_v<T, std::uint64_t>) return __ull2float_rn(x);
  else if constexpr (std::is_same_v<T, std::int32_t>) return __int2float_rn(x);
  else if constexpr (std::is_same_v<T, std::uint32_t>) return __uint2float_rn(x);
  else return static_cast<float>(x);  // 8- and 16-bit integers: exact
}

// Any scalar as f64: exact but for 64-bit integers (round to nearest even).
template <class T>
CUTE_DEVICE double f64_of(T x) {
  if constexpr (std::is_same_v<T, double>) return x;
  else if constexpr (std::is_same_v<T, std::int64_t>) return __ll2double_rn(x);
  else if constexpr (std::is_same_v<T, std::uint64_t>) return __ull2double_rn(x);
  else if constexpr (std::is_integral_v<T>) return static_cast<double>(x);
  else return static_cast<double>(f32_of(x));
}

// A float to a narrow integer: round to nearest even, clamp, NaN -> 0.
template <class D, class F>
CUTE_DEVICE D narrow_int_of(F x) {
  if (x != x) return D(0);
  F r = rint(x);
  F const lo = static_cast<F>(std::numeric_limits<D>::min());
  F const hi = static_cast<F>(std::numeric_limits<D>::max());
  r = r < lo ? lo : (r > hi ? hi : r);
  return static_cast<D>(r);
}

// An f32 to D: one rounding.
template <class D>
CUTE_DEVICE D from_f32(float x) {
  if constexpr (std::is_same_v<D, float>) return x;
  else if constexpr (std::is_same_v<D, double>) return static_cast<double>(x);
  else if constexpr (std::is_same_v<D, __half>) return __float2half_rn(x);
  else if constexpr (std::is_same_v<D, __nv_bfloat16>) return __float2bfloat16_rn(x);
  else if constexpr (std::is_same_v<D, __nv_fp8_e4m3>) {
    D r;
    r.__x = fp8_of_f32(x, __NV_E4M3);
    return r;
  } else if constexpr (std::is_same_v<D, __nv_fp8_e5m2>) {
    D r;
    r.__x = fp8_of_f32(x, __NV_E5M2);
    return r;
  } else if constexpr (sizeof(D) >= 4) {
    if (x != x) return D(0);  // the conversions below clamp to the range (PTX cvt.rni)
    if constexpr (std::is_same_v<D, std::int32_t>) return __float2int_rn(x);
    else if constexpr (std::is_same_v<D, std::uint32_t>) return __float2uint_rn(x);
    else if constexpr (std::is_same_v<D, std::int64_t>) return __float2ll_rn(x);
    else return __float2ull_rn(x);
  } else {
    return narrow_int_of<D>(x);
  }
}

// An f64 to D: one rounding.
template <class D>
CUTE_DEVICE D from_f64(double x) {
  if constexpr (std::is_same_v<D, double>) return x;
  else if constexpr (std::is_same_v<D, float>) return __double2float_rn(x);
  else if constexpr (std::is_same_v<D, __half>) return __double2half(x);
  else if constexpr (std::is_same_v<D, __nv_bfloat16>) return __double2bfloat16(x);
  else if constexpr (std::is_same_v<D, __nv_fp8_e4m3>) {
    D r;
    r.__x = fp8_of_f64(x, __NV_E4M3);
    return r;
  } else if constexpr (std::is_same_v<D, __nv_fp8_e5m2>) {
    D r;
    r.__x = fp8_of_f64(x, __NV_E5M2);
    return r;
  } else if constexpr (sizeof(D) >= 4) {
    if (x != x) return D(0);
    if constexpr (std::is_same_v<D, std::int32_t>) return __double2int_rn(x);
    else if constexpr (std::is_same_v<D, std::uint32_t>) return __double2uint_rn(x);
    else if constexpr (std::is_same_v<D, std::int64_t>) return __double2ll_rn(x);
    else return __double2ull_rn(x);
  } else {
    return narrow_int_of<D>(x);
  }
}

// S to D with no affine: one rounding from the exact value.
template <class S, class D>
CUTE_DEVICE D convert(S x) {
  if constexpr (std::is_same_v<S, D>) {
    return x;
  } else if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {  // clamp to D's range
    if constexpr (std::is_signed_v<S>) {
      long long const v = x;
      if constexpr (std::is_signed_v<D>) {
        long long const lo = std::numeric_limits<D>::min(), hi = std::numeric_limits<D>::max();
        return static_cast<D>(v < lo ? lo : (v > hi ? hi : v));
      } else {
        if (v < 0) return D(0);
        unsigned long long const u = static_cast<unsigned long long>(v);
        unsigned long long const hi = std::numeric_limits<D>::max();
        return static_cast<D>(u > hi ? hi : u);
      }
    } else {
      unsigned long long const u = x;
      unsigned long long const hi = static_cast<unsigned long long>(std::numeric_limits<D>::max());
      return static_cast<D>(u > hi ? hi : u);
    }
  } else if constexpr (std::is_integral_v<S>) {  // integer to float
    if constexpr (sizeof(S) <= 2) return from_f32<D>(static_cast<float>(x));  // exact in f32
    else if constexpr (std::is_same_v<D, float>) return f32_of(x);
    else if constexpr (std::is_same_v<D, double>) return f64_of(x);
    else return from_f64<D>(f64_of(x));  // 32-bit integers are exact in f64 (64-bit ones refused)
  } else if constexpr (std::is_same_v<S, double>) {
    return from_f64<D>(x);
  } else {
    return from_f32<D>(f32_of(x));  // floats of 32 bits or fewer widen to f32 exactly
  }
}

// S to D through (x - mean) * mul, in f64 when a side is f64, else f32.
template <class S, class D>
CUTE_DEVICE D convert_affine(S x, float mean, float mul) {
  if constexpr (std::is_same_v<S, double> || std::is_same_v<D, double>) {
    double const v = (f64_of(x) - static_cast<double>(mean)) * static_cast<double>(mul);
    return from_f64<D>(v);
  } else {
    float const v = (f32_of(x) - mean) * mul;
    return from_f32<D>(v);
  }
}

// Calls f(S{}, D{}) for the scalar types named at run time, among those of widths SW and DW.
template <int W, class F>
CUTE_DEVICE void with_scalar(Scalar s, F&& f) {
  switch (s) {
#define CUTE_COPY_SCALAR(name, bytes, type) \
  case Scalar::name:                        \
    if constexpr (bytes == W) f(type{});    \
    break;
#include "../menu.def"
    default: break;
  }
}

template <int SW, int DW, class F>
CUTE_DEVICE void with_types(Scalar s, Scalar d, F&& f) {
  with_scalar<SW>(s, [&](auto src) { with_scalar<DW>(d, [&](auto dst) { f(src, dst); }); });
}

// The channel coefficients in shared memory (16 at most, from the descriptor) or in the device
// array at `params`.
struct Coefficients {
  float const* mean;
  float const* mul;
};

CUTE_DEVICE Coefficients coefficients(ConvertDesc const& d, float* s_mean, float* s_mul) {
  if (!d.affine) return {nullptr, nullptr};
  if (d.channels > kChannelsByValue) {
    float const* p = reinterpret_cast<float const*>(d.params);
    return {p, p + d.channels};
  }
  if (threadIdx.x < d.channels) {
    s_mean[threadIdx.x] = d.mean[threadIdx.x];
    s_mul[threadIdx.x] = d.mul[threadIdx.x];
  }
  __syncthreads();
  return {s_mean, s_mul};
}

// ---- Elementwise ---------------------------------------------------------------------------------

struct ElemParams {
  ConvertDesc d;
  FastDivmodU64 per_row;   // chunks per row
  FastDivmodU64 outer[5];  // extents of modes rank-2, rank-3, ... 0
  FastDivmodU64 chan_div, chan_n;
  std::uint64_t chunks;
  // The same divisors in 32 bits, used when every chunk index is below 2^31 (`narrow`): a 32-bit
  // FastDivmod is a mul.hi and a shift where the 64-bit one emulates a 64-bit mul.hi, and a chunk
  // decomposes its row once per mode.
  cutlass::FastDivmod per_row32, outer32[5];
  bool narrow;
  bool indexed;  // index-driven: mode 0's items go through d.src_index / d.dst_index
  std::int64_t row_chunks;  // chunks per row as launched (the divisor of per_row)
};

template <int SW, int DW>
struct ElemConfig {
  static constexpr int kChunk = 32 / (SW < DW ? SW : DW);  // elements per chunk
  static constexpr int kDV = 16 / DW;                      // elements per destination vector
  static constexpr int kDVecs = kChunk / kDV;
};

// Two f32 to two FP8 values in one instruction (PTX cvt.rn.satfinite.e4m3x2.f32 / e5m2x2 on
// sm_89 and later): the rounding and saturation of `from_f32` one by one, half the conversions.
// The low byte is `a`'s.
template <class D>
CUTE_DEVICE std::uint16_t fp8x2_of(float a, float b) {
  constexpr __nv_fp8_interpretation_t kKind = std::is_same_v<D, __nv_fp8_e4m3> ? __NV_E4M3 : __NV_E5M2;
  return fp8x2_of_f32x2(a, b, kKind);
}

// Whether S -> D converts to FP8 through an f32 that holds S exactly (floats of 32 bits or
// fewer, integers of 16 bits or fewer): those chunks convert pairwise (`fp8x2_of`).
template <class S, class D>
constexpr bool kPairwiseFp8 =
    kIsFp8<D> && !std::is_same_v<S, D> && (std::is_same_v<S, float> || sizeof(S) <= 2);

// What a converted block multiplies each element by: nothing (no affine), one (mean, mul) for
// the block, or coef(k)'s for element k.
enum class Affine { None, Uniform, PerElement };

// y[k] = D(x[k]), or D((x[k] - mean) * mul) with one (mean, mul) for all K elements or coef(k)'s
// (a pair of floats) for element k. FP8 destinations from types an f32 holds exactly convert two
// elements at a time; a mean of +0 (a scale alone) skips the subtraction, which is exact: x - (+0)
// is x for every x (not so for -0: -0 - -0 is +0).
template <class S, class D, int K, class SU, class DU, class Coef>
CUTE_DEVICE void convert_block(SU const (&x)[K], DU (&y)[K], Affine affine, float mean, float mul, Coef&& coef) {
  if (affine == Affine::PerElement) {
    CUTE_UNROLL
    for (int k = 0; k < K; ++k) {
      auto const c = coef(k);
      y[k] = bits_as<DU>(convert_affine<S, D>(bits_as<S>(x[k]), c.x, c.y));
    }
    return;
  }
  if constexpr (kPairwiseFp8<S, D>) {
    static_assert(K % 2 == 0 && sizeof(DU) == 1, "FP8 blocks of pairs");
    auto pairs = [&](auto&& value) {
      CUTE_UNROLL
      for (int k = 0; k < K; k += 2) {
        std::uint16_t const two = fp8x2_of<D>(value(k), value(k + 1));
        y[k] = static_cast<DU>(two & 0xff);
        y[k + 1] = static_cast<DU>(two >> 8);
      }
    };
    auto v = [&](int k) { return f32_of(bits_as<S>(x[k])); };
    if (affine == Affine::None) return pairs(v);
    if (__float_as_uint(mean) == 0u) return pairs([&](int k) { return v(k) * mul; });
    return pairs([&](int k) { return (v(k) - mean) * mul; });
  } else {
    if (affine == Affine::None) {
      CUTE_UNROLL
      for (int k = 0; k < K; ++k) y[k] = bits_as<DU>(convert<S, D>(bits_as<S>(x[k])));
    } else {
      CUTE_UNROLL
      for (int k = 0; k < K; ++k) y[k] = bits_as<DU>(convert_affine<S, D>(bits_as<S>(x[k]), mean, mul));
    }
  }
}

// convert_block for the scalar types named at run time: the one piece of the tile, gather and
// channels kernels compiled per type pair. Their addresses, stages and stores are compiled once
// per width pair around it: compiled inside every pair's branch they were most of the build's
// nvcc time (the 1-byte-source part: 210 s on 2 cores, 21 s with one pair a width).
template <int SW, int DW, int K, class Coef>
CUTE_DEVICE void convert_elements(ConvertDesc const& d, cute::uint_byte_t<SW> const (&x)[K],
                                  cute::uint_byte_t<DW> (&y)[K], Affine affine, float mean, float mul,
                                  Coef&& coef) {
  with_types<SW, DW>(d.src_type, d.dst_type, [&](auto s_, auto t_) {
    convert_block<decltype(s_), decltype(t_)>(x, y, affine, mean, mul, coef);
  });
}

// Convert a chunk of N elements in registers. Element j is element e0 + j of its row; its channel
// is `c0` stepped every `div` elements (div = 0: one channel for the chunk), elements before
// `first` not counted.
template <class S, class D, int N, class SU, class DU>
CUTE_DEVICE void convert_chunk(SU const (&in)[N], DU (&out)[N], ConvertDesc const& d, Coefficients coef,
                               std::int64_t c0, std::int64_t r0, std::int64_t div, int skip) {
  if (!d.affine || div == 0) {  // no affine, or one channel for the whole chunk
    bool const a = d.affine;
    convert_block<S, D>(in, out, a ? Affine::Uniform : Affine::None, a ? coef.mean[c0] : 0.f,
                        a ? coef.mul[c0] : 1.f, [](int) { return make_float2(0.f, 1.f); });
    return;
  }
  std::int64_t rr = r0, cc = c0;
  CUTE_UNROLL
  for (int j = 0; j < N; ++j) {
    out[j] = bits_as<DU>(convert_affine<S, D>(bits_as<S>(in[j]), coef.mean[cc], coef.mul[cc]));
    if (j >= skip && ++rr == div) {
      rr = 0;
      if (++cc == d.channels) cc = 0;
    }
  }
}

template <int SW, int DW>
CUTE_DEVICE void elementwise_body(ElemParams const& p, Coefficients coef) {
  using C = ElemConfig<SW, DW>;
  using SU = cute::uint_byte_t<SW>;
  using DU = cute::uint_byte_t<DW>;
  constexpr int kChunk = C::kChunk;
  ConvertDesc const& d = p.d;
  int const last = static_cast<int>(d.rank) - 1;
  std::int64_t const n = d.shape[last];
  std::int64_t const ss = d.src_stride[last], ds = d.dst_stride[last];
  bool const vload = ss == 1, vstore = ds == 1;
  // Lane-interleaved units (below) need vector stores and a chunk whose elements need not be
  // consecutive (not with a channel that steps along the row); they are taken for destinations of
  // 2 bytes and more whose unit (one destination vector) reads 4 source bytes or more: same-width
  // and narrowing pairs (16 bytes or more a unit), and widening pairs up to 4x (a unit's source
  // is then loaded as one 4- or 8-byte word, realigned like the 16-byte vectors, and a warp's
  // units read consecutive words). 1-byte destinations measured slower interleaved on the H200
  // (f16 -> FP8 0.89x -> 0.67x of a copy) and keep their chunks.
  constexpr bool kInterleavable = DW >= 2 && C::kDV * SW >= 4;
  bool const interleave = kInterleavable && vstore && !(d.affine && d.chan_mode == last);
  std::uint64_t const span_end = d.src + static_cast<std::uint64_t>(d.src_span);

  CUTE_UNROLL
  for (int u = 0; u < kUnroll; ++u) {
    std::uint64_t const chunk = (static_cast<std::uint64_t>(blockIdx.x) * kUnroll + u) * kThreads + threadIdx.x;
    if (chunk >= p.chunks) return;
    std::uint64_t k;
    std::int64_t so = 0, dof = 0, cx = 0, item = 0;
    bool item_first = false;  // the chunk is its item's first (index-driven: it records a bad index)
    // The chunk's place in its row (k) and the row's coordinates, innermost outer mode first, in
    // the divisors' own width: I = int (FastDivmod) or std::uint64_t (FastDivmodU64). Index-driven,
    // mode 0 is the item, resolved through the index arrays below.
    auto decompose = [&](auto const& per_row, auto const* outer, auto index) {
      using I = decltype(index);
      I kk;
      I row = per_row.divmod(kk, index);
      k = static_cast<std::uint64_t>(kk);
      item_first = kk == 0;
      for (int i = 0; i < last; ++i) {
        int const m = last - 1 - i;
        I x = row;  // the outermost mode's coordinate is what is left
        if (m > 0) row = outer[i].divmod(x, row);
        if (m == 0 && p.indexed) {
          item = static_cast<std::int64_t>(x);
        } else {
          so += static_cast<std::int64_t>(x) * d.src_stride[m];
          dof += static_cast<std::int64_t>(x) * d.dst_stride[m];
          item_first = item_first && x == 0;
        }
        if (m == d.chan_mode) cx = static_cast<std::int64_t>(x);
      }
    };
    if (p.narrow)
      decompose(p.per_row32, p.outer32, static_cast<int>(chunk));
    else
      decompose(p.per_row, p.outer, chunk);
    if (p.indexed) {
      auto* const status = reinterpret_cast<unsigned long long*>(d.status);
      std::int64_t const si = side_index(d.src_index, d.index_bytes, d.index_stride, item, d.src_items, status, item_first);
      if (si < 0) continue;
      std::int64_t const di = side_index(d.dst_index, d.index_bytes, d.index_stride, item, d.dst_items, status, item_first);
      if (di < 0) continue;
      so += si * d.src_stride[0];
      dof += di * d.dst_stride[0];
    }
    char const* const srow = reinterpret_cast<char const*>(d.src) + so * SW;
    char* const drow = reinterpret_cast<char*>(d.dst) + dof * DW;
    int const phase = vstore ? static_cast<int>((reinterpret_cast<std::uintptr_t>(drow) & 15) / DW) : 0;
    // The chunk's destination vectors ("units" of kDV elements; unit 0 starts `phase` elements
    // before the row): unit base + v * step for v < kDVecs. Its own consecutive ones (step 1),
    // or, lane-interleaved, every G-th unit of its group of G = 32 chunks (the row's last group
    // may be shorter): a warp then stores 32 consecutive vectors per instruction, whole 32-byte
    // sectors, where the chunk's own would store half-sectors at a 32-byte lane stride.
    std::int64_t base = static_cast<std::int64_t>(k) * C::kDVecs, step = 1;
    if (interleave) {
      std::int64_t const g0 = static_cast<std::int64_t>(k) & ~std::int64_t{31};
      step = p.row_chunks - g0 < 32 ? p.row_chunks - g0 : 32;
      base = g0 * C::kDVecs + (static_cast<std::int64_t>(k) & 31);
    }
    std::int64_t const e0 = base * C::kDV - phase;  // the first unit's first element
    if (e0 >= n) continue;                          // (so are the later units')

    SU in[kChunk];
    // Load U units of E source elements into in[], unit v from element e0 + v * step * E of the
    // row (the chunk: one unit of kChunk elements; lane-interleaved, its kDVecs destination
    // vectors): the aligned words on the source's own grid that cover a unit inside the row (the
    // ones around it, funnel-shifted into place, where the row's phase cuts it and they lie inside
    // the source span), else element by element, zero outside the row. Units of 16 bytes or more
    // go one by one; units of one 4- or 8-byte word (widening pairs, lane-interleaved) in passes,
    // every unit's words loaded before any is shifted: one by one, each unit's branches kept the
    // compiler from issuing the next unit's loads before the shift had waited for this one's, one
    // 8-byte word in flight per thread (ncu, strided bf16 -> f32: most stall samples on the first
    // shift after each unit's loads).
    auto load_units = [&](auto units, auto elems) {
      constexpr int U = decltype(units)::value, E = decltype(elems)::value;
      constexpr int kB = E * SW;  // a unit's source bytes: 4 .. 64
      auto by_element = [&](int v) {
        std::int64_t const e = e0 + v * step * E;
        CUTE_UNROLL
        for (int j = 0; j < E; ++j) {
          std::int64_t const x = e + j;
          in[v * E + j] = (x >= 0 && x < n) ? *reinterpret_cast<SU const*>(srow + x * ss * SW) : SU(0);
        }
      };
      if constexpr (kB >= 16) {
        constexpr int kV = kB / 16;
        CUTE_UNROLL
        for (int v = 0; v < U; ++v) {
          std::int64_t const e = e0 + v * step * E;
          bool loaded = false;
          if (vload && e >= 0 && e + E <= n) {
            std::uint64_t const a = reinterpret_cast<std::uint64_t>(srow + e * SW);
            unsigned const m = static_cast<unsigned>(a & 15);
            uint4 r[kV];
            if (m == 0) {
              CUTE_UNROLL
              for (int i = 0; i < kV; ++i) r[i] = reinterpret_cast<uint4 const*>(a)[i];
              loaded = true;
            } else if (a - m >= d.src && a - m + 16 * (kV + 1) <= span_end) {
              uint4 w[kV + 1];
              CUTE_UNROLL
              for (int i = 0; i <= kV; ++i) w[i] = reinterpret_cast<uint4 const*>(a - m)[i];
              CUTE_UNROLL
              for (int i = 0; i < kV; ++i) r[i] = realign(w[i], w[i + 1], static_cast<int>(m));
              loaded = true;
            }
            if (loaded) memcpy(in + v * E, r, kB);
          }
          if (!loaded) by_element(v);
        }
      } else {
        using Word = cute::uint_byte_t<kB>;
        Word lo[U], hi[U];
        unsigned m[U];
        bool ok[U];
        CUTE_UNROLL
        for (int v = 0; v < U; ++v) {
          std::int64_t const e = e0 + v * step * E;
          std::uint64_t const a = reinterpret_cast<std::uint64_t>(srow + e * SW);
          m[v] = static_cast<unsigned>(a & (kB - 1));
          ok[v] = vload && e >= 0 && e + E <= n && (m[v] == 0 || (a - m[v] >= d.src && a - m[v] + 2 * kB <= span_end));
          Word const* const q = reinterpret_cast<Word const*>(a - m[v]);
          lo[v] = ok[v] ? q[0] : Word{};
          hi[v] = ok[v] && m[v] != 0 ? q[1] : Word{};
        }
        CUTE_UNROLL
        for (int v = 0; v < U; ++v) {
          if (!ok[v]) continue;
          // Bytes [m, m + kB) of lo:hi, with no shift by the word's width when m is 0.
          unsigned const sh = 8 * m[v];
          Word const x = static_cast<Word>((lo[v] >> sh) | ((hi[v] << 1) << (8 * kB - 1 - sh)));
          memcpy(in + v * E, &x, kB);
        }
        CUTE_UNROLL
        for (int v = 0; v < U; ++v)
          if (!ok[v]) by_element(v);
      }
    };
    if constexpr (kInterleavable) {
      if (interleave)
        load_units(std::integral_constant<int, C::kDVecs>{}, std::integral_constant<int, C::kDV>{});
      else
        load_units(std::integral_constant<int, 1>{}, std::integral_constant<int, kChunk>{});
    } else {
      load_units(std::integral_constant<int, 1>{}, std::integral_constant<int, kChunk>{});
    }

    // Convert in registers: the channel of the chunk's first element and how it steps (a channel
    // along the row is never interleaved: the chunk's elements are then consecutive).
    std::int64_t c0 = 0, r0 = 0, div = 0;
    int skip = 0;
    if (d.affine && d.chan_mode >= 0) {
      bool const along = d.chan_mode == last;
      std::int64_t const first = along ? (e0 < 0 ? 0 : e0) : cx;
      std::uint64_t r, c;
      std::uint64_t const q = p.chan_div.divmod(r, static_cast<std::uint64_t>(first));
      p.chan_n.divmod(c, q);
      c0 = static_cast<std::int64_t>(c);
      if (along) {
        r0 = static_cast<std::int64_t>(r);
        div = d.chan_div;
        skip = static_cast<int>(first - e0);
      }
    }
    DU out[kChunk];
    with_types<SW, DW>(d.src_type, d.dst_type, [&](auto s, auto t) {
      convert_chunk<decltype(s), decltype(t)>(in, out, d, coef, c0, r0, div, skip);
    });

    // Store: a unit inside the row as one 16-byte vector on the destination's grid, a unit the
    // row cuts element by element.
    if (vstore) {
      CUTE_UNROLL
      for (int i = 0; i < C::kDVecs; ++i) {
        std::int64_t const v0 = e0 + i * step * C::kDV;
        if (v0 >= 0 && v0 + C::kDV <= n) {
          uint4 v;
          memcpy(&v, out + i * C::kDV, 16);
          *reinterpret_cast<uint4*>(drow + v0 * DW) = v;
        } else {
          CUTE_UNROLL
          for (int j = 0; j < C::kDV; ++j) {
            std::int64_t const e = v0 + j;
            if (e >= 0 && e < n) *reinterpret_cast<DU*>(drow + e * DW) = out[i * C::kDV + j];
          }
        }
      }
    } else {
      CUTE_UNROLL
      for (int j = 0; j < kChunk; ++j) {
        std::int64_t const e = e0 + j;
        if (e >= 0 && e < n) *reinterpret_cast<DU*>(drow + e * ds * DW) = out[j];
      }
    }
  }
}

template <int SW, int DW>
__global__ void __launch_bounds__(kThreads) convert_elementwise(__grid_constant__ ElemParams const p) {
  __shared__ float s_mean[kChannelsByValue], s_mul[kChannelsByValue];
  elementwise_body<SW, DW>(p, coefficients(p.d, s_mean, s_mul));
}

// The pairs whose elementwise kernel is bounded to 3 blocks per SM (convert_elementwise_3).
// 2 -> 4 bytes: their units' words are all in flight at once (`load_units`), 106 registers
// unbounded (2 blocks per SM), 80 with 24 bytes spilled bounded (sm_90); on an H100 strided bf16
// -> f32 0.67 -> 0.81x of a copy, packed 0.86 -> 0.92x, f16 -> f32 0.74 -> 0.85x, i16 -> i32 0.71
// -> 0.81x (docs/convert-tuning.md, 2026-12-06 (4)). 1 -> 2 bytes: 119 registers unbounded, 80
// with 68 bytes spilled; u8 -> f16 8192² 0.81 -> 0.84x, i8 [4096,4095] ld 4096 -> i16 0.57 ->
// 0.62x, u8 [4096,3001] ld 3008 -> bf16 0.62 -> 0.61x. Not 1 -> 4 bytes: 684 bytes spilled at 80
// registers (docs/convert-tuning.md, 2026-12-06 (5)).
template <int SW, int DW>
constexpr bool elementwise_bounded() {
  return (SW == 2 && DW == 4) || (SW == 1 && DW == 2);
}

// The elementwise kernel with 3 blocks per SM, for the pairs above.
template <int SW, int DW>
__global__ void __launch_bounds__(kThreads, 3) convert_elementwise_3(__grid_constant__ ElemParams const p) {
  __shared__ float s_mean[kChannelsByValue], s_mul[kChannelsByValue];
  elementwise_body<SW, DW>(p, coefficients(p.d, s_mean, s_mul));
}

// ---- Gather --------------------------------------------------------------------------------------

// A 16-byte global store, written in PTX: nvcc 13.0 splits the gather's plain `uint4` store of
// its second unit into four 4-byte (two 8-byte) stores wherever the destination is 2 bytes wide or
// more (a 40-line kernel of the same shape does it too); this one stays one STG.E.128.
CUTE_DEVICE void store_global16(void* at, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(at), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Destination vectors a thread of the gather route converts (src/convert.rs GATHER_UNITS).
constexpr int kGatherUnits = 2;

struct GatherParams {
  ConvertDesc d;
  cutlass::FastDivmod extent[6];  // extent[k]: mode k's extent, k = 1 .. rank - 1 (mode 0 is
                                  // never divided); indexed by the mode, so that the unrolled
                                  // decomposition reads each at a constant offset
  cutlass::FastDivmod chan_div, chan_n;
  int n;        // elements
  int phase;    // destination elements before its first 16-byte boundary (unit 0 starts there)
  int units;    // destination vectors (16 bytes each, the first and last cut by the bounds)
  bool narrow;  // every source offset below 2^31 elements: offsets in 32 bits (one multiply-add
                // a mode instead of a 64-bit product)
};

// Element `e`'s coordinates `c` (modes slowest first, `last` the fastest; the rest 0) by one fast
// division per mode, and its source offset in elements (Off: int where `narrow`).
template <class Off>
CUTE_DEVICE Off gather_coords(GatherParams const& p, int last, int e, int (&c)[6]) {
  int rest = e;
  Off so = 0;
  CUTE_UNROLL
  for (int k = 5; k >= 1; --k) {
    c[k] = 0;
    if (k > last) continue;
    rest = p.extent[k].divmod(c[k], rest);
    so += static_cast<Off>(c[k]) * static_cast<Off>(p.d.src_stride[k]);
  }
  c[0] = rest;
  return so + static_cast<Off>(rest) * static_cast<Off>(p.d.src_stride[0]);
}

// The channel of coordinates `c` along the channel's mode `cm`: coordinate x is channel
// (x / chan_div) % channels, `rr` = x % chan_div (constant indices into c: it stays in registers).
CUTE_DEVICE int gather_channel(GatherParams const& p, int const (&c)[6], int cm, int& rr) {
  int x = 0;
  CUTE_UNROLL
  for (int k = 0; k < 6; ++k)
    if (k == cm) x = c[k];
  int cc;
  p.chan_n.divmod(cc, p.chan_div.divmod(rr, x));
  return cc;
}

// The gather route: the destination is compact (its modes, slowest first, are the coalesced
// modes, the last unit-stride), so element e of the copy is destination element e. A thread
// converts kGatherUnits aligned 16-byte destination vectors kThreads apart (a warp's store writes
// 512 consecutive bytes), each element loaded alone from its coordinates' source offset. The
// coordinates (`Divided`, the planner's `chunk` 1 where the fastest mode is short and carries
// would fall inside most vectors) come from fast divisions for every element; or (`chunk` a
// vector) for the vector's first element, the next ones by stepping the fastest mode and
// carrying. Every load of the thread is issued before any is converted; the warp's loads of one
// element slot lie within a few source sectors when the planner takes this route (the source's
// stride along the destination's fastest modes is short), which L1 serves.
template <int SW, int DW, bool Divided, class Off>
CUTE_DEVICE void gather_body(GatherParams const& p, Coefficients coef) {
  constexpr int kV = 16 / DW;
  using SU = cute::uint_byte_t<SW>;
  using DU = cute::uint_byte_t<DW>;
  ConvertDesc const& d = p.d;
  int const last = static_cast<int>(d.rank) - 1;
  int const cm = d.affine ? d.chan_mode : -1;  // the channel's mode, -1: every element channel 0
  int const cdiv = static_cast<int>(d.chan_div), cn = static_cast<int>(d.channels);
  SU const* const src = reinterpret_cast<SU const*>(d.src);
  SU in[kGatherUnits][kV];
  int chan[kGatherUnits][kV];  // channel 0 for the units past the end (converted, not stored)
  CUTE_UNROLL
  for (int u = 0; u < kGatherUnits; ++u) {
    CUTE_UNROLL
    for (int j = 0; j < kV; ++j) {
      in[u][j] = SU(0);
      chan[u][j] = 0;
    }
  }
  CUTE_UNROLL
  for (int u = 0; u < kGatherUnits; ++u) {
    int const t = (static_cast<int>(blockIdx.x) * kGatherUnits + u) * kThreads + static_cast<int>(threadIdx.x);
    if (t >= p.units) break;
    int const e0 = t * kV - p.phase;
    if constexpr (Divided) {
      // Every element's coordinates from its own index by fast divisions: no carries, so no
      // lane waits on another lane's branch (the planner's choice where the fastest mode is
      // short: src/convert.rs gather_divides).
      CUTE_UNROLL
      for (int j = 0; j < kV; ++j) {
        int const e = e0 + j;
        bool const inside = e >= 0 && e < p.n;
        int c[6];
        Off const so = gather_coords<Off>(p, last, inside ? e : 0, c);
        int rr, cc = 0;
        if (cm >= 0) cc = gather_channel(p, c, cm, rr);
        in[u][j] = inside ? src[so] : SU(0);
        chan[u][j] = cc;
      }
      continue;
    }
    int const first = e0 < 0 ? 0 : e0;
    // The coordinates of `first` and its source offset; the channel as (rr, cc): coordinate
    // x along the channel's mode is channel cc = (x / cdiv) % cn, rr = x % cdiv.
    int c[6];
    Off so = gather_coords<Off>(p, last, first, c);
    int rr = 0, cc = 0;
    if (cm >= 0) cc = gather_channel(p, c, cm, rr);
    // The fastest mode's coordinate, step and extent in registers; the slower modes' coordinates
    // are indexed by constants only (the carry below is unrolled), so they stay in registers too.
    int cl = 0;
    CUTE_UNROLL
    for (int k = 0; k < 6; ++k)
      if (k == last) cl = c[k];
    Off const sl = static_cast<Off>(d.src_stride[last]);
    int const nl = static_cast<int>(d.shape[last]);
    // A whole vector inside one run of the fastest mode (most vectors, where that mode is long
    // and the channel, if any, is not along it): its elements lie `sl` apart, with no bound to
    // test and nothing to carry.
    if (e0 >= 0 && e0 + kV <= p.n && cl + kV <= nl && cm != last) {
      SU const* const at = src + so;
      CUTE_UNROLL
      for (int j = 0; j < kV; ++j) {
        in[u][j] = at[j * sl];
        chan[u][j] = cc;
      }
      continue;
    }
    CUTE_UNROLL
    for (int j = 0; j < kV; ++j) {
      int const e = e0 + j;
      bool const inside = e >= first && e < p.n;
      in[u][j] = inside ? src[so] : SU(0);
      chan[u][j] = cc;
      if (!inside || j + 1 == kV) continue;
      // Step to the next element: the fastest mode, carried into the slower ones at their ends.
      ++cl;
      so += sl;
      if (cm == last && ++rr == cdiv) {
        rr = 0;
        if (++cc == cn) cc = 0;
      }
      if (cl < nl) continue;
      cl = 0;
      so -= static_cast<Off>(nl) * sl;
      if (cm == last) rr = cc = 0;
      bool carry = true;
      CUTE_UNROLL
      for (int k = 4; k >= 0; --k) {
        if (k >= last || !carry) continue;
        ++c[k];
        so += static_cast<Off>(d.src_stride[k]);
        if (k == cm && ++rr == cdiv) {
          rr = 0;
          if (++cc == cn) cc = 0;
        }
        if (k > 0 && c[k] == d.shape[k]) {
          c[k] = 0;
          so -= static_cast<Off>(d.shape[k] * d.src_stride[k]);
          if (k == cm) rr = cc = 0;
        } else {
          carry = false;
        }
      }
    }
  }
  // All the thread's units converted at once (the element types found once a thread), then
  // stored.
  DU out[kGatherUnits * kV];
  {
    SU x[kGatherUnits * kV];
    CUTE_UNROLL
    for (int k = 0; k < kGatherUnits * kV; ++k) x[k] = in[k / kV][k % kV];
    Affine const affine = !d.affine ? Affine::None : cm < 0 ? Affine::Uniform : Affine::PerElement;
    float const mean = cm < 0 && d.affine ? coef.mean[0] : 0.f, mul = cm < 0 && d.affine ? coef.mul[0] : 1.f;
    convert_elements<SW, DW>(d, x, out, affine, mean, mul, [&](int k) {
      int const c = chan[k / kV][k % kV];
      return make_float2(coef.mean[c], coef.mul[c]);
    });
  }
  DU* const dst = reinterpret_cast<DU*>(d.dst);
  CUTE_UNROLL
  for (int u = 0; u < kGatherUnits; ++u) {
    int const t = (static_cast<int>(blockIdx.x) * kGatherUnits + u) * kThreads + static_cast<int>(threadIdx.x);
    if (t >= p.units) break;
    int const e0 = t * kV - p.phase;
    if (e0 >= 0 && e0 + kV <= p.n) {
      uint4 v;
      memcpy(&v, out + u * kV, 16);
      store_global16(dst + e0, v);
    } else {
      CUTE_UNROLL
      for (int j = 0; j < kV; ++j)
        if (e0 + j >= 0 && e0 + j < p.n) dst[e0 + j] = out[u * kV + j];
    }
  }
}

// The blocks per SM convert_gather is compiled for: 5 for sources of 4 bytes or fewer into 4- and
// 8-byte destinations, which fit 48 registers without spilling (sm_90, nvcc 13.0), as they did
// before their conversion moved out of the stores' branch (2026-12-08; 54 registers unbounded,
// 4 blocks per SM instead of 5); no minimum for the others (narrower destinations spill at 48).
template <int SW, int DW>
constexpr int kGatherMinBlocks = SW <= 4 && DW >= 4 ? 5 : 1;

template <int SW, int DW, bool Divided>
__global__ void __launch_bounds__(kThreads, kGatherMinBlocks<SW, DW>) convert_gather(__grid_constant__ GatherParams const p) {
  __shared__ float s_mean[kChannelsByValue], s_mul[kChannelsByValue];
  Coefficients const coef = coefficients(p.d, s_mean, s_mul);
  if (p.narrow)
    gather_body<SW, DW, Divided, int>(p, coef);
  else
    gather_body<SW, DW, Divided, std::int64_t>(p, coef);
}

// ---- Tile ------------------------------------------------------------------------------------

// The modes of a tiled launch other than its two tile modes (mode_a, mode_b): their extents as
// 32-bit divisors, innermost first (a block index is below 2^31, so is every extent it
// decomposes into).
struct OtherModes {
  cutlass::FastDivmod extent[4];
  int mode[4];
  int n;
};

OtherModes other_modes(ConvertDesc const& d) {
  OtherModes o{};
  for (int m = static_cast<int>(d.rank) - 1; m >= 0; --m) {
    if (m == static_cast<int>(d.mode_a) || m == static_cast<int>(d.mode_b)) continue;
    o.mode[o.n] = m;
    o.extent[o.n++] = cutlass::FastDivmod(static_cast<int>(d.shape[m]));
  }
  return o;
}

// The rest `t` of a block index (after its tile coordinates) as the other modes' coordinates:
// their element offsets on each side, and the coordinate along the channel mode if it is one of
// them (0 otherwise).
struct OtherOffsets {
  std::int64_t src, dst, chan;
};

CUTE_DEVICE OtherOffsets other_offsets(OtherModes const& o, ConvertDesc const& d, int t) {
  OtherOffsets r{0, 0, 0};
  for (int i = 0; i < o.n; ++i) {
    int x;
    t = o.extent[i].divmod(x, t);
    int const m = o.mode[i];
    r.src += static_cast<std::int64_t>(x) * d.src_stride[m];
    r.dst += static_cast<std::int64_t>(x) * d.dst_stride[m];
    if (m == d.chan_mode) r.chan = x;
  }
  return r;
}

struct TileParams {
  ConvertDesc d;
  // 32-bit divisors: a block index is below 2^31, so is every extent it decomposes into (a 32-bit
  // FastDivmod is a mul.hi and a shift; the 64-bit one emulates a 64-bit mul.hi).
  cutlass::FastDivmod tiles_a, tiles_b;
  OtherModes others;
  int log_ta, log_tb;
  FastDivmodU64 chan_div, chan_n;
};

template <int DW>
constexpr int kTilePad = DW >= 4 ? 1 : 4 / DW;  // one 32-bit word per tile row

// Groups of kGroup aligned 16-byte vectors that cover a run of `bytes` at any of the runs'
// 16-byte phases: room for a phase, unless every run starts on the grid (the first at `run0`,
// the others `step` bytes apart), when a run's own vectors suffice (a 64 x 64 f32 tile then
// loads in one round of the block's 1024 vector slots instead of two).
CUTE_DEVICE int vector_groups(int bytes, std::uint64_t run0, std::int64_t step) {
  if (((run0 | static_cast<std::uint64_t>(step)) & 15) == 0) return ((bytes + 15) / 16 + kGroup - 1) / kGroup;
  return (bytes + 15) / 16 / kGroup + 1;
}

template <int SW, int DW>
CUTE_DEVICE void tile_body(TileParams const& p, Coefficients k, cute::uint_byte_t<DW>* tile, float* chan_tab) {
  using SU = cute::uint_byte_t<SW>;
  using DU = cute::uint_byte_t<DW>;
  constexpr int kPer = kTileElems / kThreads;  // the strided paths' elements per thread (tiles of
                                               // kTileElems at most: wide tiles go by vectors)
  ConvertDesc const& d = p.d;
  int const ta = 1 << p.log_ta, tb = 1 << p.log_tb, pitch = ta + kTilePad<DW>, n_tile = ta * tb;
  // This block's tile: (ia, ib) and the other modes' coordinates.
  int t = static_cast<int>(blockIdx.x), ia, ib;
  t = p.tiles_a.divmod(ia, t);
  t = p.tiles_b.divmod(ib, t);
  OtherOffsets const off = other_offsets(p.others, d, t);
  std::int64_t const so = off.src, dof = off.dst, cx = off.chan;
  int const A = static_cast<int>(d.mode_a), B = static_cast<int>(d.mode_b);
  std::int64_t const a0 = static_cast<std::int64_t>(ia) * ta, b0 = static_cast<std::int64_t>(ib) * tb;
  std::int64_t const ea = d.shape[A], eb = d.shape[B];
  std::int64_t const sa = d.src_stride[A], sb = d.src_stride[B], da = d.dst_stride[A], db = d.dst_stride[B];
  char const* const src = reinterpret_cast<char const*>(d.src) + so * SW;
  char* const dst = reinterpret_cast<char*>(d.dst) + dof * DW;
  auto channel = [&](std::int64_t x) -> std::uint64_t {
    std::uint64_t r, c;
    std::uint64_t const q = p.chan_div.divmod(r, static_cast<std::uint64_t>(x));
    p.chan_n.divmod(c, q);
    return c;
  };
  // The tile's channel coefficients: one (mean, mul) for the whole tile (no channel, or the
  // channel along another mode), or a table over the local coordinate of the tile mode the channel
  // walks (`side` 1: mode a, 2: mode b), in shared memory after the tile.
  int const side = !d.affine || d.chan_mode < 0 ? 0 : d.chan_mode == A ? 1 : d.chan_mode == B ? 2 : 0;
  float c_mean = 0.f, c_mul = 1.f;
  if (d.affine && side == 0) {
    std::uint64_t const c = d.chan_mode < 0 ? 0 : channel(cx);
    c_mean = k.mean[c];
    c_mul = k.mul[c];
  } else if (side != 0) {
    int const n = side == 1 ? ta : tb;
    std::int64_t const base = side == 1 ? a0 : b0;
    for (int l = static_cast<int>(threadIdx.x); l < n; l += kThreads) {
      std::uint64_t const c = channel(base + l);
      chan_tab[l] = k.mean[c];
      chan_tab[n + l] = k.mul[c];
    }
    __syncthreads();
  }
  int const tab_n = side == 1 ? ta : tb;
  // The tile's extents inside the tensor.
  int const na = static_cast<int>(cute::min<std::int64_t>(ta, ea - a0));
  int const nb = static_cast<int>(cute::min<std::int64_t>(tb, eb - b0));
  // A whole converted vector (16 / SW elements of row bl from al) into the stage, written in an
  // order rotated per lane. The lanes of a warp hold consecutive vectors of a run, kWords stage
  // words apart: written in the same order, the lanes that share a bank (every 32 / kWords-th)
  // would write it in the same instruction, a kWords-way conflict (8 for u8 -> bf16, 16 for u8 ->
  // f32). A lane whose span starts at stage word b starts at word floor(b / 32) % kWords of its
  // span instead, and wraps around, so those lanes write distinct banks. Spans of fewer than 4
  // words keep their order (2-way at most).
  auto stage_vector = [&](DU const(&y)[16 / SW], int al, int bl) {
    constexpr int kV = 16 / SW;
    int const at0 = bl * pitch + al;
    DU* const row = tile + at0;
    constexpr int kBytes = kV * DW, kWords = kBytes / 4;
    if constexpr (kBytes % 4 != 0 || kWords < 4 || kWords > 16) {
      CUTE_UNROLL
      for (int k = 0; k < kV; ++k) row[k] = y[k];
    } else {
      std::uint32_t wd[kWords];
      memcpy(wd, y, kBytes);
      int const rot = static_cast<int>((static_cast<unsigned>(at0) * DW / 4) >> 5) & (kWords - 1);
      // wd[i] becomes word (i + rot) % kWords of the vector: log2(kWords) rounds of selects.
      CUTE_UNROLL
      for (int s = 1; s < kWords; s <<= 1) {
        std::uint32_t t[kWords];
        CUTE_UNROLL
        for (int i = 0; i < kWords; ++i) t[i] = (rot & s) ? wd[(i + s) % kWords] : wd[i];
        CUTE_UNROLL
        for (int i = 0; i < kWords; ++i) wd[i] = t[i];
      }
      CUTE_UNROLL
      for (int i = 0; i < kWords; ++i) {
        int const at = (i + rot) & (kWords - 1);
        if constexpr (DW >= 4) {
          reinterpret_cast<std::uint32_t*>(row)[at] = wd[i];
        } else {
          constexpr int kE = 4 / DW;
          CUTE_UNROLL
          for (int h = 0; h < kE; ++h) row[at * kE + h] = static_cast<DU>(wd[i] >> (8 * DW * h));
        }
      }
    }
  };
  // How the tile's elements are multiplied: one (mean, mul) for the tile (side 0), else the
  // table's entry at the element's coordinate along the channel's tile mode (clamped into the
  // table for the elements a block converts but does not store).
  Affine const affine = !d.affine ? Affine::None : side == 0 ? Affine::Uniform : Affine::PerElement;
  auto coef_at = [&](int al, int bl) {
    int const l = cute::min(cute::max(side == 1 ? al : bl, 0), tab_n - 1);
    return make_float2(chan_tab[l], chan_tab[tab_n + l]);
  };

  // Small quotients without a divide: x / n for 0 <= x < 2^20, 1 <= n <= 2^20, by an approximate
  // float reciprocal (rcp.approx, relative error below 2^-23: with the product's rounding the
  // error of (x + 0.5) / n stays below 0.19 / n, inside the 0.5 / n that separates it from an
  // integer, so the quotient is exact). An IEEE division here was a 200-instruction routine per
  // warp and per side: a quarter of the instructions of the crop's small tiles (ncu,
  // 2026-12-03); without it and the 64-bit divmods those copies ran 4-6% faster.
  auto quot = [](int x, float inv) { return static_cast<int>((static_cast<float>(x) + 0.5f) * inv); };
  auto rcp = [](int n) { return __fdividef(1.0f, static_cast<float>(n)); };
  constexpr int kLogSW = SW == 1 ? 0 : SW == 2 ? 1 : SW == 4 ? 2 : 3;
  constexpr int kLogDW = DW == 1 ? 0 : DW == 2 ? 1 : DW == 4 ? 2 : 3;
  if (sa == 1) {
    // Load by 16-byte vectors. The tile's source is `runs` contiguous runs of `len` elements: one
    // per row b (along a), or one in all when the tile holds all of mode a and b steps over it
    // (`flat`: element j is (j % ea, j / ea)). A run's vectors are the aligned ones that cover it;
    // groups of kGroup lanes take consecutive vectors of one run. A vector outside the
    // source span (a run's end at the span's edge) is read element by element.
    bool const flat = sb == ea && na == ea && a0 == 0;
    int const runs = flat ? 1 : nb;
    int const len = flat ? na * nb : na;
    std::uint64_t const run0 = reinterpret_cast<std::uint64_t>(src + (flat ? b0 * sb : a0 + b0 * sb) * SW);
    std::int64_t const step = sb * SW;  // bytes from one run to the next
    int const groups = vector_groups(len * SW, run0, runs > 1 ? step : 0);  // per run
    int const slots = runs * groups * kGroup;
    float const inv_groups = rcp(groups), inv_na = rcp(na);
    std::uint64_t const span_end = d.src + static_cast<std::uint64_t>(d.src_span);
    for (int base = 0; base < slots; base += kThreads * kVecsPerThread) {
      uint4 v[kVecsPerThread];
      int run[kVecsPerThread], j0[kVecsPerThread];
      CUTE_UNROLL
      for (int u = 0; u < kVecsPerThread; ++u) {
        int const slot = base + u * kThreads + static_cast<int>(threadIdx.x);
        v[u] = make_uint4(0, 0, 0, 0);
        run[u] = 0;
        j0[u] = len;
        // Past the tile's slots (whole warps in a small tile's only round): no address work.
        if (slot >= slots) continue;
        int const q = slot >> kLogGroup, r = quot(q, inv_groups);
        std::uint64_t const start = run0 + static_cast<std::uint64_t>(r * step);
        int const phase = static_cast<int>(start & 15);
        int const c = (q - r * groups) * kGroup + (slot & (kGroup - 1));  // the run's c-th aligned vector
        std::uint64_t const va = start - phase + 16 * static_cast<std::uint64_t>(c);
        // its first element, as an index into the run (negative before the run's start)
        j0[u] = (16 * c - phase) >> kLogSW;
        run[u] = r;
        if (j0[u] >= len) {
          j0[u] = len;  // nothing of a run here
        } else if (va >= d.src && va + 16 <= span_end) {
          v[u] = *reinterpret_cast<uint4 const*>(va);
        } else {
          SU w[16 / SW];
          CUTE_UNROLL
          for (int k = 0; k < 16 / SW; ++k)
            w[k] = j0[u] + k >= 0 && j0[u] + k < len ? *reinterpret_cast<SU const*>(va + k * SW) : SU(0);
          memcpy(&v[u], w, 16);
        }
      }
      CUTE_UNROLL
      for (int u = 0; u < kVecsPerThread; ++u) {
        int const j = j0[u];
        if (j >= len) continue;
        SU w[16 / SW];
        memcpy(w, &v[u], 16);
        // Element k of the vector is element j + k of its run: (al, bl) = (j + k, run[u]), or in a
        // flat run (the run's index % na, / na).
        auto at = [&](int k) {
          int const x = cute::min(cute::max(j + k, 0), len - 1);
          int const bl = flat ? quot(x, inv_na) : run[u];
          return make_int2(x - (flat ? bl * na : 0), bl);
        };
        DU y[16 / SW];
        convert_elements<SW, DW>(d, w, y, affine, c_mean, c_mul, [&](int k) {
          int2 const c = at(k);
          return coef_at(c.x, c.y);
        });
        if (!flat && j >= 0 && j + 16 / SW <= len) {  // a whole vector of row run[u]
          stage_vector(y, j, run[u]);
        } else {  // a run's end, or a flat run: element by element, (a, b) stepped
          int const k0 = j < 0 ? -j : 0;
          int bl = flat ? quot(j + k0, inv_na) : run[u];
          int al = j + k0 - (flat ? bl * na : 0);
          CUTE_UNROLL
          for (int k = 0; k < 16 / SW; ++k) {
            if (k < k0 || j + k >= len) continue;
            tile[bl * pitch + al] = y[k];
            if (++al == na && flat) {
              al = 0;
              ++bl;
            }
          }
        }
      }
    }
  } else {
    // Strided source mode a: element loads, consecutive threads along a, all in flight; then
    // converted and staged in two halves (fewer registers).
    SU in[kPer];
    CUTE_UNROLL
    for (int i = 0; i < kPer; ++i) {
      int const idx = i * kThreads + static_cast<int>(threadIdx.x);
      int const al = idx & (ta - 1), bl = idx >> p.log_ta;
      in[i] = (idx < n_tile && al < na && bl < nb) ? *reinterpret_cast<SU const*>(src + ((a0 + al) * sa + (b0 + bl) * sb) * SW) : SU(0);
    }
    constexpr int kHalf = kPer / 2;
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      SU x[kHalf];
      CUTE_UNROLL
      for (int i = 0; i < kHalf; ++i) x[i] = in[h * kHalf + i];
      DU y[kHalf];
      convert_elements<SW, DW>(d, x, y, affine, c_mean, c_mul, [&](int i) {
        int const idx = (h * kHalf + i) * kThreads + static_cast<int>(threadIdx.x);
        return coef_at(idx & (ta - 1), idx >> p.log_ta);
      });
      CUTE_UNROLL
      for (int i = 0; i < kHalf; ++i) {
        int const idx = (h * kHalf + i) * kThreads + static_cast<int>(threadIdx.x);
        if (idx < n_tile) tile[(idx >> p.log_ta) * pitch + (idx & (ta - 1))] = y[i];
      }
    }
  }
  __syncthreads();

  if (db == 1) {
    // Store by 16-byte vectors, as the loads: `runs` contiguous destination runs, one per a
    // (along b), or one in all when the tile holds all of mode b and a steps over it (`flat`:
    // element j is (b, a) = (j % eb, j / eb)). A vector wholly inside its run is gathered from
    // the stage and stored at once; one that a run's end cuts is stored element by element.
    bool const flat = da == eb && nb == eb && b0 == 0;
    int const runs = flat ? 1 : na;
    int const len = flat ? na * nb : nb;
    std::uint64_t const run0 = reinterpret_cast<std::uint64_t>(dst + (flat ? a0 * da : b0 + a0 * da) * DW);
    std::int64_t const step = da * DW;
    int const groups = vector_groups(len * DW, run0, runs > 1 ? step : 0);
    int const slots = runs * groups * kGroup;
    float const inv_groups = rcp(groups), inv_nb = rcp(nb);
    for (int base = 0; base < slots; base += kThreads * kVecsPerThread) {
      CUTE_UNROLL
      for (int u = 0; u < kVecsPerThread; ++u) {
        int const slot = base + u * kThreads + static_cast<int>(threadIdx.x);
        if (slot >= slots) break;
        int const q = slot >> kLogGroup, r = quot(q, inv_groups);
        std::uint64_t const start = run0 + static_cast<std::uint64_t>(r * step);
        int const phase = static_cast<int>(start & 15);
        int const j = (16 * ((q - r * groups) * kGroup + (slot & (kGroup - 1))) - phase) >> kLogDW;
        if (j >= len) continue;
        DU* const out = reinterpret_cast<DU*>(start) + j;  // the vector (16-byte aligned)
        DU w[16 / DW];
        if (!flat && j >= 0 && j + 16 / DW <= len) {  // a whole vector of run r (b = j.., a = r)
          CUTE_UNROLL
          for (int k = 0; k < 16 / DW; ++k) w[k] = tile[(j + k) * pitch + r];
          uint4 x;
          memcpy(&x, w, 16);
          *reinterpret_cast<uint4*>(out) = x;
          continue;
        }
        int const k0 = j < 0 ? -j : 0;
        int al = flat ? quot(j + k0, inv_nb) : r;
        int bl = j + k0 - (flat ? al * nb : 0);
        CUTE_UNROLL
        for (int k = 0; k < 16 / DW; ++k) {
          if (k < k0 || j + k >= len) continue;
          w[k] = tile[bl * pitch + al];
          if (++bl == nb && flat) {
            bl = 0;
            ++al;
          }
        }
        if (k0 == 0 && j + 16 / DW <= len) {
          uint4 x;
          memcpy(&x, w, 16);
          *reinterpret_cast<uint4*>(out) = x;
        } else {
          CUTE_UNROLL
          for (int k = 0; k < 16 / DW; ++k)
            if (k >= k0 && j + k < len) out[k] = w[k];
        }
      }
    }
  } else {
    // Strided destination mode b: element stores, consecutive threads along b.
    CUTE_UNROLL
    for (int i = 0; i < kPer; ++i) {
      int const idx = i * kThreads + static_cast<int>(threadIdx.x);
      if (idx >= n_tile) break;
      int const bl = idx & (tb - 1), al = idx >> p.log_tb;
      if (al < na && bl < nb) *reinterpret_cast<DU*>(dst + ((a0 + al) * da + (b0 + bl) * db) * DW) = tile[bl * pitch + al];
    }
  }
}

// 4 blocks per SM (64 registers, a few spilled words): small tiles are latency-bound, and a
// fourth block in flight beat 3 blocks at 80 registers (H200, 2026-12-03: transpose 0.51 -> 0.60x).
template <int SW, int DW>
__global__ void __launch_bounds__(kThreads, 4) convert_tile(__grid_constant__ TileParams const p) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float s_mean[kChannelsByValue], s_mul[kChannelsByValue];
  Coefficients const k = coefficients(p.d, s_mean, s_mul);
  auto* tile = reinterpret_cast<cute::uint_byte_t<DW>*>(smem);
  std::size_t const tile_bytes = ((std::size_t{1} << p.log_tb) * ((1 << p.log_ta) + kTilePad<DW>) * DW + 15) / 16 * 16;
  tile_body<SW, DW>(p, k, tile, reinterpret_cast<float*>(smem + tile_bytes));
}

// ---- Channels ------------------------------------------------------------------------------------

// A channels tile's stage: the source side's bytes of a (C, tile_w) tile, as loaded (16 KiB: four
// 16-byte loads in flight per thread, src/convert.rs CHANNEL_STAGE_BYTES).
constexpr int kChanLoads = 4;
constexpr int kChanStage = kThreads * kChanLoads * 16;
constexpr int kMaxChannels = 16;

struct ChannelParams {
  ConvertDesc d;
  cutlass::FastDivmod tiles_w;  // tiles along the pixel mode
  OtherModes others;
  int channels;         // C, the extent of the channel mode (d.mode_a)
  bool src_interleaved; // the source is the side with (c, w):(1, >= C); else the destination, (1, C)
  int src_run_vecs;     // planar source: stage vectors per row (its tile_w elements and a phase)
  int src_pitch;        // planar source: stage bytes from one row to the next (an odd count of vectors)
  int dst_run_vecs;     // planar destination: vectors per row (the same, of the destination)
};

// The blocks per SM convert_channels is compiled for: 6 for 1-byte sources into 2-byte destinations
// (at most 40 registers instead of 48, so 6 blocks of 256 threads instead of 5; H100, 2026-12-07, CLI: the
// u8 [8,3,1088,1928] crop -> bf16 NHWC normalized 69.5 -> 65.7 us), else no minimum (46 to 64
// registers, 4 or 5 blocks): u8 -> f32 read no faster at 6 (the crop 89.3 -> 89.1 us, NHWC planes
// 18.4 -> 18.5 us), and 8 forced (32 registers) was slower for every copy measured (NHWC u8 -> f32
// 20.3 -> 24.9 us, the bf16 crop -> 83.6 us).
template <int SW, int DW>
constexpr int kChannelMinBlocks = SW == 1 && DW == 2 ? 6 : 1;

// Channels route (one side interleaved, the other planar): a block converts the (C, tile_w) tile
// at one coordinate of the other modes. The source side's bytes are loaded as they lie, by
// aligned 16-byte vectors: every vector of the tile's runs (C planar rows, or one interleaved run)
// lands in the stage at its own 16-byte slot, so a run keeps its 16-byte phase there and no vector
// is shifted; only a vector that the source span cuts is read element by element. The
// destination's aligned 16-byte vectors are then gathered from the stage element by element,
// converted in registers with their channel's (mean, mul) and stored whole; only the vectors a
// destination run's ends cut go element by element. One pass of each, one barrier between.
// Blocks per SM: see kChannelMinBlocks.
template <int SW, int DW>
__global__ void __launch_bounds__(kThreads, kChannelMinBlocks<SW, DW>) convert_channels(__grid_constant__ ChannelParams const p) {
  using SU = cute::uint_byte_t<SW>;
  using DU = cute::uint_byte_t<DW>;
  __shared__ __align__(16) unsigned char stage[kChanStage];
  // Channel c: the stage byte of its element at w0, its (mean, mul); one 16-byte read a lookup.
  struct __align__(16) Channel {
    int row;
    float mean, mul;
    int pad;
  };
  __shared__ Channel chan[kMaxChannels];
  __shared__ float s_mean[kChannelsByValue], s_mul[kChannelsByValue];
  ConvertDesc const& d = p.d;
  Coefficients const k = coefficients(d, s_mean, s_mul);
  int const cm = static_cast<int>(d.mode_a), wm = static_cast<int>(d.mode_b), C = p.channels;
  int const tid = static_cast<int>(threadIdx.x);
  // This block's tile: the pixel tile iw, the other modes' coordinates.
  int t = static_cast<int>(blockIdx.x), iw;
  t = p.tiles_w.divmod(iw, t);
  OtherOffsets const off = other_offsets(p.others, d, t);
  std::int64_t const so = off.src, dof = off.dst, cx = off.chan;
  std::int64_t const tw = d.tile_a, w0 = static_cast<std::int64_t>(iw) * tw;
  int const nw = static_cast<int>(cute::min<std::int64_t>(tw, d.shape[wm] - w0));
  std::int64_t const ssc = d.src_stride[cm], ssw = d.src_stride[wm], dsc = d.dst_stride[cm], dsw = d.dst_stride[wm];
  // The source's tile: its first byte (interleaved: the run's; planar: row 0's).
  std::uint64_t const src0 = d.src + static_cast<std::uint64_t>((so + w0 * ssw) * SW);
  std::uint64_t const dst0 = d.dst + static_cast<std::uint64_t>((dof + w0 * dsw) * DW);
  if (tid < C) {
    // Channel c's stage row: the interleaved run's element (c, 0), or planar row c's element 0
    // in its own row of the stage, at the row's 16-byte phase.
    Channel e;
    e.row = p.src_interleaved ? static_cast<int>(src0 & 15) + tid * SW
                              : tid * p.src_pitch + static_cast<int>((src0 + static_cast<std::uint64_t>(tid * ssc * SW)) & 15);
    e.mean = 0.f;
    e.mul = 1.f;
    e.pad = 0;
    if (d.affine) {
      // The channel of coordinate x (a channel coordinate below 16, or a block's coordinate of
      // another mode, below 2^31): (x / div) % channels, in 32 bits (div and channels then divide
      // an extent below 2^31 too).
      unsigned const x = static_cast<unsigned>(d.chan_mode == cm ? tid : cx);
      unsigned const ch = d.chan_mode < 0 ? 0u
                                          : x / static_cast<unsigned>(d.chan_div) % static_cast<unsigned>(d.channels);
      e.mean = k.mean[ch];
      e.mul = k.mul[ch];
    }
    chan[tid] = e;
  }

  // Load: the source side's vectors into the stage, raw.
  std::uint64_t const span_end = d.src + static_cast<std::uint64_t>(d.src_span);
  int const run_bytes = p.src_interleaved ? ((nw - 1) * static_cast<int>(ssw) + C) * SW : nw * SW;
  int const slots = p.src_interleaved ? (static_cast<int>(src0 & 15) + run_bytes + 15) / 16 : C * p.src_run_vecs;
  float const inv_run = __fdividef(1.0f, static_cast<float>(p.src_run_vecs));
  for (int base = 0; base < slots; base += kThreads * kChanLoads) {
    uint4 v[kChanLoads];
    int at[kChanLoads];
    CUTE_UNROLL
    for (int u = 0; u < kChanLoads; ++u) {
      int const s = base + u * kThreads + tid;
      at[u] = -1;
      if (s >= slots) continue;
      std::uint64_t va;
      if (p.src_interleaved) {
        va = (src0 & ~std::uint64_t{15}) + 16 * static_cast<std::uint64_t>(s);
        at[u] = 16 * s;
      } else {
        // row c = s / run_vecs (s < 2^20: a float reciprocal is exact), its vector j
        int const c = static_cast<int>((static_cast<float>(s) + 0.5f) * inv_run), j = s - c * p.src_run_vecs;
        std::uint64_t const row = src0 + static_cast<std::uint64_t>(c * ssc * SW);
        if (16 * j >= static_cast<int>(row & 15) + run_bytes) continue;  // past the row's last vector
        va = (row & ~std::uint64_t{15}) + 16 * static_cast<std::uint64_t>(j);
        at[u] = c * p.src_pitch + 16 * j;
      }
      if (va >= d.src && va + 16 <= span_end) {
        v[u] = *reinterpret_cast<uint4 const*>(va);
      } else {
        SU w[16 / SW];
        CUTE_UNROLL
        for (int e = 0; e < 16 / SW; ++e) {
          std::uint64_t const a = va + e * SW;
          w[e] = a >= d.src && a < span_end ? *reinterpret_cast<SU const*>(a) : SU(0);
        }
        memcpy(&v[u], w, 16);
      }
    }
    CUTE_UNROLL
    for (int u = 0; u < kChanLoads; ++u)
      if (at[u] >= 0) *reinterpret_cast<uint4*>(stage + at[u]) = v[u];
  }
  __syncthreads();

  // Store: the destination's aligned vectors, gathered from the stage and converted.
  // Stage byte of element (c, w): chan[c].row + w * step (w from w0). A whole vector goes without
  // a bound per element; only the vectors a run's ends cut check each element.
  int const step = (p.src_interleaved ? static_cast<int>(ssw) : 1) * SW;
  // The elements are gathered from the stage as raw bits and converted a vector at a time
  // (convert_elements, the only code compiled per type pair): with their vector's channel, or each
  // with its own where the destination interleaves the channels.
  {
    constexpr int kV = 16 / DW;
    auto raw = [&](int at) { return *reinterpret_cast<SU const*>(stage + at); };
    Affine const planar_affine = d.affine ? Affine::Uniform : Affine::None;
    auto no_coef = [](int) { return make_float2(0.f, 1.f); };
    // A planar vector's raw elements from stage byte `at` on: a whole vector without a bound per
    // element; elements a run's ends cut read as 0 (converted, not stored).
    auto planar_raw = [&](SU(&x)[kV], int at, int e0) {
      if (e0 >= 0 && e0 + kV <= nw) {
        CUTE_UNROLL
        for (int i = 0; i < kV; ++i) x[i] = raw(at + i * step);
      } else {
        CUTE_UNROLL
        for (int i = 0; i < kV; ++i) x[i] = e0 + i >= 0 && e0 + i < nw ? raw(at + i * step) : SU(0);
      }
    };
    auto put = [](DU* out, DU const (&y)[kV], int e0, int n) {
      if (e0 >= 0 && e0 + kV <= n) {
        uint4 v;
        memcpy(&v, y, 16);
        *reinterpret_cast<uint4*>(out) = v;
      } else {
        CUTE_UNROLL
        for (int i = 0; i < kV; ++i)
          if (e0 + i >= 0 && e0 + i < n) out[i] = y[i];
      }
    };
    if (!p.src_interleaved) {
      // The destination is interleaved: one run of nw * C elements, element e = (w, c) =
      // (e / C, e % C); the channel steps with each element.
      int const n = nw * C, ph = static_cast<int>(dst0 & 15);
      int const vecs = (ph + n * DW + 15) / 16;
      float const inv_c = __fdividef(1.0f, static_cast<float>(C));
      DU* const first = reinterpret_cast<DU*>(dst0 - ph);
      for (int s = tid; s < vecs; s += kThreads) {
        int const e0 = (16 * s - ph) / DW;  // may be negative: the run starts inside vector 0
        int const ea = e0 < 0 ? 0 : e0;
        int w = static_cast<int>((static_cast<float>(ea) + 0.5f) * inv_c), c = ea - w * C;
        int base = w * step;
        SU x[kV];
        int ci[kV];  // each element's channel
        if (e0 >= 0 && e0 + kV <= n) {
          CUTE_UNROLL
          for (int i = 0; i < kV; ++i) {
            ci[i] = c;
            x[i] = raw(chan[c].row + base);
            if (++c == C) {
              c = 0;
              base += step;
            }
          }
        } else {
          CUTE_UNROLL
          for (int i = 0; i < kV; ++i) {
            x[i] = SU(0);
            ci[i] = 0;
            if (e0 + i >= ea && e0 + i < n) {
              ci[i] = c;
              x[i] = raw(chan[c].row + base);
              if (++c == C) {
                c = 0;
                base += step;
              }
            }
          }
        }
        DU y[kV];
        convert_elements<SW, DW>(d, x, y, d.affine ? Affine::PerElement : Affine::None, 0.f, 1.f, [&](int i) {
          Channel const& ch = chan[ci[i]];
          return make_float2(ch.mean, ch.mul);
        });
        put(first + s * kV, y, e0, n);
      }
    } else if (C == 1 || ((static_cast<std::uint64_t>(dsc) * DW) & 15) == 0) {
      // The destination is planar, C rows of nw elements (row c at dst0 + c * dsc elements), all
      // at one 16-byte phase: a thread takes destination vector j of every row in turn, so the
      // vector's place (its first element e0, whole or cut) is worked out once for C stores, and
      // a warp's lanes still store consecutive vectors of one row.
      int const ph = static_cast<int>(dst0 & 15);
      DU* const first = reinterpret_cast<DU*>(dst0 - ph);
      for (int j = tid; j < p.dst_run_vecs; j += kThreads) {
        int const e0 = (16 * j - ph) / DW;
        if (e0 >= nw) break;  // and so for every later j
        DU* out = first + j * kV;
        DU y[kV];
        if (e0 >= 0 && e0 + kV <= nw) {
          for (int c = 0; c < C; ++c, out += dsc) {
            Channel const ch = chan[c];
            int const at = ch.row + e0 * step;
            SU x[kV];
            planar_raw(x, at, e0);
            convert_elements<SW, DW>(d, x, y, planar_affine, ch.mean, ch.mul, no_coef);
            uint4 v;
            memcpy(&v, y, 16);
            *reinterpret_cast<uint4*>(out) = v;
          }
        } else {
          for (int c = 0; c < C; ++c, out += dsc) {
            Channel const ch = chan[c];
            int const at = ch.row + e0 * step;
            SU x[kV];
            planar_raw(x, at, e0);
            convert_elements<SW, DW>(d, x, y, planar_affine, ch.mean, ch.mul, no_coef);
            put(out, y, e0, nw);
          }
        }
      }
    } else {
      // The destination is planar, its rows at different 16-byte phases: one channel a vector,
      // each vector's place worked out on its own.
      int const slots = C * p.dst_run_vecs;
      float const inv_rv = __fdividef(1.0f, static_cast<float>(p.dst_run_vecs));
      for (int s = tid; s < slots; s += kThreads) {
        int const c = static_cast<int>((static_cast<float>(s) + 0.5f) * inv_rv), j = s - c * p.dst_run_vecs;
        std::uint64_t const row = dst0 + static_cast<std::uint64_t>(c * dsc * DW);
        int const ph = static_cast<int>(row & 15);
        int const e0 = (16 * j - ph) / DW;
        if (e0 >= nw) continue;
        Channel const ch = chan[c];
        int const at = ch.row + e0 * step;
        SU x[kV];
        planar_raw(x, at, e0);
        DU y[kV];
        convert_elements<SW, DW>(d, x, y, planar_affine, ch.mean, ch.mul, no_coef);
        put(reinterpret_cast<DU*>(row - ph) + j * kV, y, e0, nw);
      }
    }
  }
}

// ---- Channels in registers ------------------------------------------------------------------------
//
// The register kind of the channels route (src/convert.rs `ChannelStage::Registers`): 3 or 4 packed
// channels on the interleaved side, sources of 1 to 4 bytes and destinations of 2 or 4 bytes (the
// image pairs). Its kernels move raw bits (loads, the channel interleave, stores: compiled once per
// width pair and channel count) and convert one fixed block of elements per thread in between, the
// only code compiled per scalar type pair. The other widths keep the shared stage, for the build's
// sake: a 1-byte destination's 16-element vectors would unroll 48 to 64 conversions per type pair.
// Of those pairs, the ones measured faster than the shared stage (2026-12-07, H100) are compiled:
// an interleaved source whose destination vector's pixels fill 16 to 64 source bytes, and an
// interleaved destination of a narrowing pair.

// The bytes [a, a + N) as 32-bit words, the low byte first (w[k] holds bytes 4k .. 4k + 3; bytes
// past N are zero), loaded as units of U bytes (U divides N and the address).
template <int N, int U>
CUTE_DEVICE void load_units(std::uint64_t a, std::uint32_t (&w)[(N + 3) / 4]) {
  using T = cute::uint_byte_t<U>;
  CUTE_UNROLL
  for (int k = 0; k < (N + 3) / 4; ++k) w[k] = 0;
  CUTE_UNROLL
  for (int u = 0; u < N / U; ++u) {
    T const x = *reinterpret_cast<T const*>(a + static_cast<std::uint64_t>(u * U));
    if constexpr (U >= 4) {
      memcpy(&w[u * U / 4], &x, U);
    } else {
      w[u * U / 4] |= static_cast<std::uint32_t>(x) << (8 * (u * U % 4));
    }
  }
}

// The N bytes of packed pixels at `a`: by the widest unit that both N and the address allow.
template <int N>
CUTE_DEVICE void load_pixels(std::uint64_t a, std::uint32_t (&w)[(N + 3) / 4]) {
  constexpr int kU = N % 16 == 0 ? 16 : N % 8 == 0 ? 8 : N % 4 == 0 ? 4 : N % 2 == 0 ? 2 : 1;
  if ((a & (kU - 1)) == 0) {
    load_units<N, kU>(a, w);
  } else if constexpr (kU > 4) {
    if ((a & 3) == 0) {
      load_units<N, 4>(a, w);
    } else {
      load_units<N, 1>(a, w);
    }
  } else {
    load_units<N, 1>(a, w);
  }
}

// The W-byte element at byte `o` of words `w` (o a multiple of W: it lies in one word, or two for
// 8 bytes).
template <int W, int N>
CUTE_DEVICE cute::uint_byte_t<W> element_at(std::uint32_t const (&w)[N], int o) {
  if constexpr (W == 8) {
    return static_cast<std::uint64_t>(w[o / 4]) | static_cast<std::uint64_t>(w[o / 4 + 1]) << 32;
  } else if constexpr (W == 4) {
    return w[o / 4];
  } else {
    return static_cast<cute::uint_byte_t<W>>(w[o / 4] >> (8 * (o % 4)));
  }
}

// The K elements of W bytes at `a`, inside the span [lo, hi): for W <= 2 the aligned words around
// them, funnel-shifted into place, when those words lie inside the span (the span's ends element
// by element); wider elements one load each. Elements from `n` on are not read (0).
template <int W, int K>
CUTE_DEVICE void load_row(std::uint64_t a, std::uint64_t lo, std::uint64_t hi, int n, cute::uint_byte_t<W> (&x)[K]) {
  using U = cute::uint_byte_t<W>;
  if constexpr (W <= 2) {
    constexpr int kW = (K * W + 3) / 4 + 1;  // words over K * W bytes at any phase
    std::uint64_t const base = a & ~std::uint64_t{3};
    if (n >= K && base >= lo && base + 4 * kW <= hi) {
      std::uint32_t w[kW];
      CUTE_UNROLL
      for (int i = 0; i < kW; ++i) w[i] = reinterpret_cast<std::uint32_t const*>(base)[i];
      unsigned const shift = 8u * static_cast<unsigned>(a & 3);
      std::uint32_t s[kW - 1];
      CUTE_UNROLL
      for (int i = 0; i + 1 < kW; ++i) s[i] = __funnelshift_r(w[i], w[i + 1], shift);
      CUTE_UNROLL
      for (int k = 0; k < K; ++k) x[k] = static_cast<U>(s[k * W / 4] >> (8 * (k * W % 4)));
      return;
    }
  }
  U const* const e = reinterpret_cast<U const*>(a);
  CUTE_UNROLL
  for (int k = 0; k < K; ++k) x[k] = k < n ? e[k] : U(0);
}

// The channel coefficients of the tile's C channels, in registers: (x / div) % channels of the
// channel-mode coordinate x (c itself, or the block's coordinate of another mode), as
// convert_channels reads them.
template <int C>
CUTE_DEVICE void channel_coefficients(ConvertDesc const& d, Coefficients k, int cm, std::int64_t chan, float (&mean)[C],
                                      float (&mul)[C]) {
  CUTE_UNROLL
  for (int c = 0; c < C; ++c) {
    mean[c] = 0.f;
    mul[c] = 1.f;
    if (d.affine) {
      unsigned const x = static_cast<unsigned>(d.chan_mode == cm ? c : chan);
      unsigned const ch = d.chan_mode < 0 ? 0u : x / static_cast<unsigned>(d.chan_div) % static_cast<unsigned>(d.channels);
      mean[c] = k.mean[ch];
      mul[c] = k.mul[ch];
    }
  }
}

// x[c][i] -> y[c][i]: the block of a register-kind thread, channel c with (mean[c], mul[c]); the
// one piece compiled per scalar type pair.
template <int SW, int DW, int C, int K>
CUTE_DEVICE void convert_block(ConvertDesc const& d, cute::uint_byte_t<SW> const (&x)[C][K], float const (&mean)[C],
                               float const (&mul)[C], cute::uint_byte_t<DW> (&y)[C][K]) {
  using DU = cute::uint_byte_t<DW>;
  with_types<SW, DW>(d.src_type, d.dst_type, [&](auto s_, auto t_) {
    using S = decltype(s_);
    using D = decltype(t_);
    if (d.affine) {
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) {
        CUTE_UNROLL
        for (int i = 0; i < K; ++i) y[c][i] = bits_as<DU>(convert_affine<S, D>(bits_as<S>(x[c][i]), mean[c], mul[c]));
      }
    } else {
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) {
        CUTE_UNROLL
        for (int i = 0; i < K; ++i) y[c][i] = bits_as<DU>(convert<S, D>(bits_as<S>(x[c][i])));
      }
    }
  });
}

// The width pairs of the register kind (src/convert.rs register_widths).
template <int SW, int DW>
constexpr bool kRegisterWidths = SW <= 4 && (DW == 2 || DW == 4);

// Whether the register kind with an interleaved source has an instantiation for C packed channels
// of SW bytes into DW-byte planes: a vector's pixels 16 to 64 bytes of the source (fewer, and the
// shared stage is faster: src/convert.rs MIN_PIXEL_BYTES).
template <int SW, int DW, int C>
constexpr bool kChannelRegs = kRegisterWidths<SW, DW> && (16 / DW) * C * SW >= 16 && (16 / DW) * C * SW <= 64;

// Channels route, register kind with an interleaved source: C packed channels (a pixel's C
// elements side by side, the next pixel right after them) into C destination planes whose rows
// all sit at one 16-byte phase. No stage and no barrier after the coefficients: a thread takes
// destination vector j of the tile's rows, loads the C x 16 / DW elements of its pixels straight
// from global memory into registers (16 / DW pixels: 12 bytes for u8 -> f32 RGB, by the widest
// aligned units), converts them, and stores one 16-byte vector to each of the C planes. A warp's
// lanes store consecutive vectors of one plane (512 bytes a store instruction) and load
// consecutive pixel runs. Only the vectors a row's ends cut go element by element.
template <int SW, int DW, int C>
__global__ void __launch_bounds__(kThreads) convert_channels_regs(__grid_constant__ ChannelParams const p) {
  using SU = cute::uint_byte_t<SW>;
  using DU = cute::uint_byte_t<DW>;
  constexpr int kV = 16 / DW;          // elements a destination vector
  constexpr int kBytes = kV * C * SW;  // its pixels' bytes in the source
  __shared__ float s_mean[kChannelsByValue], s_mul[kChannelsByValue];
  ConvertDesc const& d = p.d;
  Coefficients const k = coefficients(d, s_mean, s_mul);
  int const cm = static_cast<int>(d.mode_a), wm = static_cast<int>(d.mode_b);
  int t = static_cast<int>(blockIdx.x), iw;
  t = p.tiles_w.divmod(iw, t);
  OtherOffsets const off = other_offsets(p.others, d, t);
  std::int64_t const tw = d.tile_a, w0 = static_cast<std::int64_t>(iw) * tw;
  int const nw = static_cast<int>(cute::min<std::int64_t>(tw, d.shape[wm] - w0));
  std::int64_t const dsc = d.dst_stride[cm], dsw = d.dst_stride[wm];
  // pixel e of the tile at src0 + e * C * SW; its channel c's plane at dst0 + c * dsc elements
  std::uint64_t const src0 = d.src + static_cast<std::uint64_t>((off.src + w0 * C) * SW);
  std::uint64_t const dst0 = d.dst + static_cast<std::uint64_t>((off.dst + w0 * dsw) * DW);
  float mean[C], mul[C];
  channel_coefficients<C>(d, k, cm, off.chan, mean, mul);
  int const ph = static_cast<int>(dst0 & 15);
  DU* const first = reinterpret_cast<DU*>(dst0 - ph);
  for (int j = static_cast<int>(threadIdx.x); j < p.dst_run_vecs; j += kThreads) {
    int const e0 = (16 * j - ph) / DW;  // exact: dst0 is DW-aligned
    if (e0 >= nw) break;
    bool const whole = e0 >= 0 && e0 + kV <= nw;
    SU x[C][kV];
    if (whole) {
      std::uint32_t w[(kBytes + 3) / 4];
      load_pixels<kBytes>(src0 + static_cast<std::uint64_t>(e0 * C * SW), w);
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) {
        CUTE_UNROLL
        for (int i = 0; i < kV; ++i) x[c][i] = element_at<SW>(w, (i * C + c) * SW);
      }
    } else {
      SU const* const px = reinterpret_cast<SU const*>(src0);
      CUTE_UNROLL
      for (int c = 0; c < C; ++c) {
        CUTE_UNROLL
        for (int i = 0; i < kV; ++i) x[c][i] = e0 + i >= 0 && e0 + i < nw ? px[(e0 + i) * C + c] : SU(0);
      }
    }
    DU y[C][kV];
    convert_block<SW, DW, C, kV>(d, x, mean, mul, y);
    DU* out = first + j * kV;
    CUTE_UNROLL
    for (int c = 0; c < C; ++c, out += dsc) {
      if (whole) {
        uint4 v;
        memcpy(&v, y[c], 16);
        *reinterpret_cast<uint4*>(out) = v;
      } else {
        CUTE_UNROLL
        for (int i = 0; i < kV; ++i)
          if (e0 + i >= 0 && e0 + i < nw) out[i] = y[c][i];
      }
    }
  }
}

// The pixels of one group of the register kind with an interleaved destination: the fewest whole
// pixels whose C channels of DW bytes fill whole 16-byte vectors (src/convert.rs group_pixels).
constexpr int group_pixels(int C, int DW) {
  int const cb = C * DW;
  return 16 / (cb % 16 == 0 ? 16 : cb % 8 == 0 ? 8 : cb % 4 == 0 ? 4 : cb % 2 == 0 ? 2 : 1);
}

// Whether the register kind with an interleaved destination has an instantiation for C planar
// rows of SW-byte elements into C packed DW-byte channels: narrowing pairs (f32 into f16 or bf16;
// with narrower sources the per-row word loads cost more than the shared stage, 2026-12-07), a
// group's source (one pixel more than a group, of each row) within 128 bytes.
template <int SW, int DW, int C>
constexpr bool kChannelRegsDst = kRegisterWidths<SW, DW> && SW > DW && (group_pixels(C, DW) + 1) * SW * C <= 128;

// The run's elements [e0, e0 + kE) of a group rotated R elements past a pixel boundary, from the
// converted pixels y[c][i] (pixel i of the group's first): element e is channel (R + e) % C of
// pixel (R + e) / C. Whole groups store kG vectors, cut ones only their elements in [0, n).
template <int R, int DW, int C, int kN, int kE>
CUTE_DEVICE void store_group(cute::uint_byte_t<DW> const (&y)[C][kN], cute::uint_byte_t<DW>* out, int e0, int n,
                             bool whole) {
  using DU = cute::uint_byte_t<DW>;
  DU z[kE];
  CUTE_UNROLL
  for (int e = 0; e < kE; ++e) z[e] = y[(R + e) % C][(R + e) / C];
  if (whole) {
    uint4 v[kE * DW / 16];
    memcpy(v, z, sizeof(v));
    CUTE_UNROLL
    for (int q = 0; q < kE * DW / 16; ++q) reinterpret_cast<uint4*>(out)[q] = v[q];
  } else {
    CUTE_UNROLL
    for (int e = 0; e < kE; ++e)
      if (e0 + e >= 0 && e0 + e < n) out[e] = z[e];
  }
}

// Channels route, register kind with an interleaved destination: C planar source rows (any
// offset, any pitch) into one run of C packed channels. The run's aligned 16-byte vectors go in
// groups of kG (kP whole pixels' worth: 3 vectors of 8 bf16 for RGB): a thread takes a group, loads
// the kP + 1 pixels under it from each of the C rows (by aligned words funnel-shifted into place
// for 1- and 2-byte elements), converts them, and interleaves them into the kG vectors at the
// group's rotation (the run's 16-byte phase puts every group of a tile the same number of
// elements past a pixel boundary: switched on once per group, not per element) and stores them
// whole. No stage and no barrier after the coefficients. Only the groups the run's ends cut go
// element by element.
template <int SW, int DW, int C>
__global__ void __launch_bounds__(kThreads) convert_channels_regs_dst(__grid_constant__ ChannelParams const p) {
  using SU = cute::uint_byte_t<SW>;
  using DU = cute::uint_byte_t<DW>;
  constexpr int kP = group_pixels(C, DW), kE = kP * C, kN = kP + 1;
  __shared__ float s_mean[kChannelsByValue], s_mul[kChannelsByValue];
  ConvertDesc const& d = p.d;
  Coefficients const k = coefficients(d, s_mean, s_mul);
  int const cm = static_cast<int>(d.mode_a), wm = static_cast<int>(d.mode_b);
  int t = static_cast<int>(blockIdx.x), iw;
  t = p.tiles_w.divmod(iw, t);
  OtherOffsets const off = other_offsets(p.others, d, t);
  std::int64_t const tw = d.tile_a, w0 = static_cast<std::int64_t>(iw) * tw;
  int const nw = static_cast<int>(cute::min<std::int64_t>(tw, d.shape[wm] - w0));
  std::int64_t const ssc = d.src_stride[cm];
  // row c's pixel e at src0 + (c * ssc + e) * SW; element (e, c) of the run at dst0 + (e * C + c) * DW
  std::uint64_t const src0 = d.src + static_cast<std::uint64_t>((off.src + w0) * SW);
  std::uint64_t const dst0 = d.dst + static_cast<std::uint64_t>((off.dst + w0 * C) * DW);
  std::uint64_t const lo = d.src, hi = d.src + static_cast<std::uint64_t>(d.src_span);
  float mean[C], mul[C];
  channel_coefficients<C>(d, k, cm, off.chan, mean, mul);
  int const n = nw * C, ph = static_cast<int>(dst0 & 15), lead = ph / DW;
  int const rot = (C - lead % C) % C;  // group g's first element, kE g - lead, is rot past a pixel
  int const groups = (ph + n * DW + kE * DW - 1) / (kE * DW);
  DU* const first = reinterpret_cast<DU*>(dst0 - ph);
  for (int g = static_cast<int>(threadIdx.x); g < groups; g += kThreads) {
    int const e0 = kE * g - lead;
    int const p0 = (e0 - rot) / C;  // exact (e0 - rot is a multiple of C), negative for a first cut group
    // the group's pixels [p0, p0 + kN) inside the tile: from `skip` on, `avail` of them
    int const skip = p0 < 0 ? -p0 : 0;
    int const avail = cute::min(nw - p0, kN) - skip;
    SU x[C][kN];
    CUTE_UNROLL
    for (int c = 0; c < C; ++c) {
      std::uint64_t const row = src0 + static_cast<std::uint64_t>((c * ssc + p0) * SW);
      if (skip == 0) {
        load_row<SW, kN>(row, lo, hi, avail, x[c]);
      } else {
        SU const* const e = reinterpret_cast<SU const*>(row);
        CUTE_UNROLL
        for (int i = 0; i < kN; ++i) x[c][i] = i >= skip && i - skip < avail ? e[i] : SU(0);
      }
    }
    DU y[C][kN];
    convert_block<SW, DW, C, kN>(d, x, mean, mul, y);
    bool const whole = e0 >= 0 && e0 + kE <= n;
    DU* const out = first + g * kE;
    switch (rot) {
      case 0: store_group<0, DW, C, kN, kE>(y, out, e0, n, whole); break;
      case 1: store_group<1, DW, C, kN, kE>(y, out, e0, n, whole); break;
      case 2: store_group<2, DW, C, kN, kE>(y, out, e0, n, whole); break;
      default:
        if constexpr (C > 3) store_group<3, DW, C, kN, kE>(y, out, e0, n, whole);
        break;
    }
  }
}

int log2_of(std::int64_t x) {
  int l = 0;
  while ((std::int64_t{1} << l) < x) ++l;
  return l;
}

template <int SW, int DW>
void run(ConvertDesc const& d) {
  cudaStream_t const stream = reinterpret_cast<cudaStream_t>(d.stream);
  auto const chan_div = FastDivmodU64(static_cast<std::uint64_t>(d.chan_div > 0 ? d.chan_div : 1));
  auto const chan_n = FastDivmodU64(static_cast<std::uint64_t>(d.channels > 0 ? d.channels : 1));
  if (d.kind == ConvertKind::Elementwise) {
    ElemParams p{};
    p.d = d;
    // The planned chunks per row leave room for a row's destination phase (up to 16 / DW - 1
    // elements before the row's first 16-byte boundary). When every destination row starts on
    // the 16-byte grid (the base and every outer stride in whole vectors) the phase is 0 for all
    // rows, and that room is an idle chunk per row: launch ceil(n / chunk) per row instead.
    int const last = static_cast<int>(d.rank) - 1;
    bool aligned_rows = d.dst_stride[last] == 1 && d.dst % 16 == 0;
    for (int m = 0; m < last; ++m) aligned_rows = aligned_rows && (d.dst_stride[m] * DW) % 16 == 0;
    std::int64_t const per_row = aligned_rows ? (d.shape[last] + d.chunk - 1) / d.chunk : d.chunks_per_row;
    p.per_row = FastDivmodU64(static_cast<std::uint64_t>(per_row));
    p.row_chunks = per_row;
    for (std::uint32_t i = 0; i + 1 < d.rank; ++i) p.outer[i] = FastDivmodU64(static_cast<std::uint64_t>(d.shape[d.rank - 2 - i]));
    p.chan_div = chan_div;
    p.chan_n = chan_n;
    p.chunks = static_cast<std::uint64_t>(d.rows) * static_cast<std::uint64_t>(per_row);
    // Every chunk index below 2^31: so is every row index and every extent that divides one.
    p.narrow = p.chunks + kThreads * kUnroll <= 0x7fffffffu;
    p.indexed = d.src_index != 0 || d.dst_index != 0;
    if (p.narrow) {
      p.per_row32 = cutlass::FastDivmod(static_cast<int>(per_row));
      for (std::uint32_t i = 0; i + 1 < d.rank; ++i) p.outer32[i] = cutlass::FastDivmod(static_cast<int>(d.shape[d.rank - 2 - i]));
    }
    std::int64_t const blocks = static_cast<std::int64_t>((p.chunks + kThreads * kUnroll - 1) / (kThreads * kUnroll));
    unsigned const grid = static_cast<unsigned>(std::min<std::int64_t>(blocks, d.blocks));
    if constexpr (elementwise_bounded<SW, DW>())
      convert_elementwise_3<SW, DW><<<grid, kThreads, 0, stream>>>(p);
    else
      convert_elementwise<SW, DW><<<grid, kThreads, 0, stream>>>(p);
    check_launch("convert_elementwise");
  } else if (d.kind == ConvertKind::Gather) {
    GatherParams p{};
    p.d = d;
    int const last = static_cast<int>(d.rank) - 1;
    // Offsets in 32 bits where every one the kernel forms fits: the stepping forms those of
    // coordinates one past a mode's end too, at most sum(shape[k] * stride[k]).
    std::int64_t reach = 0;
    for (int k = 0; k <= last; ++k) {
      if (k > 0) p.extent[k] = cutlass::FastDivmod(static_cast<int>(d.shape[k]));
      reach += d.shape[k] * d.src_stride[k];
    }
    p.narrow = reach <= 0x7fffffff;
    p.chan_div = cutlass::FastDivmod(static_cast<int>(d.chan_div > 0 ? d.chan_div : 1));
    p.chan_n = cutlass::FastDivmod(static_cast<int>(d.channels > 0 ? d.channels : 1));
    p.n = static_cast<int>(d.rows);
    p.phase = static_cast<int>((d.dst & 15) / DW);
    p.units = (p.n + p.phase + 16 / DW - 1) / (16 / DW);  // <= the planned vectors (room for any phase)
    if (d.chunk == 1)  // every element's coordinates divided out of its index (src/convert.rs gather_divides)
      convert_gather<SW, DW, true><<<static_cast<unsigned>(d.blocks), kThreads, 0, stream>>>(p);
    else
      convert_gather<SW, DW, false><<<static_cast<unsigned>(d.blocks), kThreads, 0, stream>>>(p);
    check_launch("convert_gather");
  } else if (d.kind == ConvertKind::Channels) {
    ChannelParams p{};
    p.d = d;
    p.tiles_w = cutlass::FastDivmod(static_cast<int>(d.tiles_a));
    p.others = other_modes(d);
    p.channels = static_cast<int>(d.shape[d.mode_a]);
    p.src_interleaved = d.src_stride[d.mode_a] == 1;
    p.src_run_vecs = static_cast<int>((d.tile_a * SW + 30) / 16);
    p.src_pitch = 16 * (p.src_run_vecs | 1);
    p.dst_run_vecs = static_cast<int>((d.tile_a * DW + 30) / 16);
    unsigned const grid = static_cast<unsigned>(d.blocks);
    if (d.tile_b == 1) {
      // the register kind (src/convert.rs ChannelStage::Registers): 3 or 4 packed channels on the
      // interleaved side
      auto regs = [&](auto c_) {
        constexpr int C = decltype(c_)::value;
        if constexpr (kChannelRegs<SW, DW, C>) {
          convert_channels_regs<SW, DW, C><<<grid, kThreads, 0, stream>>>(p);
          check_launch("convert_channels_regs");
        } else {
          throw std::invalid_argument("no register channels kernel for these widths");
        }
      };
      auto regs_dst = [&](auto c_) {
        constexpr int C = decltype(c_)::value;
        if constexpr (kChannelRegsDst<SW, DW, C>) {
          convert_channels_regs_dst<SW, DW, C><<<grid, kThreads, 0, stream>>>(p);
          check_launch("convert_channels_regs_dst");
        } else {
          throw std::invalid_argument("no register channels kernel for these widths");
        }
      };
      if (p.channels == 3) return p.src_interleaved ? regs(std::integral_constant<int, 3>{}) : regs_dst(std::integral_constant<int, 3>{});
      if (p.channels == 4) return p.src_interleaved ? regs(std::integral_constant<int, 4>{}) : regs_dst(std::integral_constant<int, 4>{});
      throw std::invalid_argument("the register channels kernels take 3 or 4 channels");
    }
    convert_channels<SW, DW><<<grid, kThreads, 0, stream>>>(p);
    check_launch("convert_channels");
  } else {
    TileParams p{};
    p.d = d;
    p.tiles_a = cutlass::FastDivmod(static_cast<int>(d.tiles_a));
    p.tiles_b = cutlass::FastDivmod(static_cast<int>(d.tiles_b));
    p.others = other_modes(d);
    p.log_ta = log2_of(d.tile_a);
    p.log_tb = log2_of(d.tile_b);
    p.chan_div = chan_div;
    p.chan_n = chan_n;
    // the tile (rounded to 16 bytes), then the channel table: (mean, mul) per coordinate of the
    // longer tile side
    std::size_t const tile_bytes = (static_cast<std::size_t>(d.tile_b) * (d.tile_a + kTilePad<DW>) * DW + 15) / 16 * 16;
    // the channel table: over the tile side the channel walks (the kernel's `side`), if any
    std::int64_t const table = !d.affine || d.chan_mode < 0                          ? 0
                               : d.chan_mode == static_cast<std::int32_t>(d.mode_a) ? d.tile_a
                               : d.chan_mode == static_cast<std::int32_t>(d.mode_b) ? d.tile_b
                                                                                     : 0;
    std::size_t const smem = tile_bytes + 2 * sizeof(float) * static_cast<std::size_t>(table);
    if (smem > 48 * 1024) {
      cudaError_t const e = cudaFuncSetAttribute(convert_tile<SW, DW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(smem));
      if (e != cudaSuccess) throw_cuda(e, "convert_tile shared memory");
    }
    convert_tile<SW, DW><<<static_cast<unsigned>(d.blocks), kThreads, smem, stream>>>(p);
    check_launch("convert_tile");
  }
}

template <int SW>
void by_dst_width(int dw, ConvertDesc const& d) {
  switch (dw) {
#define CUTE_COPY_WIDTH(w) \
  case w: return run<SW, w>(d);
#include "../menu.def"
    default: break;
  }
  throw std::invalid_argument("no convert kernel for destination width " + std::to_string(dw));
}

}  // namespace

// This object's source widths: the one build/cuda.rs names, or all of the menu's.
#ifdef CUTE_COPY_SRC_WIDTH
template <>
void launch_convert_from<CUTE_COPY_SRC_WIDTH>(int dst_width, ConvertDesc const& desc) {
  by_dst_width<CUTE_COPY_SRC_WIDTH>(dst_width, desc);
}
#else
#define CUTE_COPY_WIDTH(w)                                                      \
  template <>                                                                   \
  void launch_convert_from<w>(int dst_width, ConvertDesc const& desc) {         \
    by_dst_width<w>(dst_width, desc);                                           \
  }
#include "../menu.def"
#endif

// The family's host entries, in one object: the first part (CUTE_COPY_FIRST_PART), or the whole.
#if !defined(CUTE_COPY_SRC_WIDTH) || defined(CUTE_COPY_FIRST_PART)
void launch_convert_family(int src_width, int dst_width, ConvertDesc const& desc) {
  switch (src_width) {
#define CUTE_COPY_WIDTH(w) \
  case w: return launch_convert_from<w>(dst_width, desc);
#include "../menu.def"
    default: break;
  }
  throw std::invalid_argument("no convert kernel for source width " + std::to_string(src_width));
}

// The configuration src/convert.rs reports: 256 threads as (8, 32), one 16-byte vector per access,
// one TiledCopy step of (8, 512 / width) elements as the tile; shared memory sized per launch.
ConfigValues config_convert(AtomId, int width) { return {kThreads, 8, 32, 1, 16 / width, 8, 512 / width, 0}; }
#endif

}  // namespace cute_copy
