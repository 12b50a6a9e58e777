// SM80 cp.async family: global -cp.async-> shared -> global.
//
// Preconditions as in universal.cu, plus: atom bytes 4, 8 or 16 (cp.async sizes) and sm_80 or newer.
// Leg 1 is a TiledCopy of the cp.async atom (CACHEGLOBAL for 16 bytes, CACHEALWAYS for 4 and 8),
// committed with cp_async_fence() and awaited with cp_async_wait<0>(). Leg 2 reads the tile back from
// shared memory with the same thread and value layouts through UniversalCopy of the same width.
// The ZFILL forms pass the predicate to the instruction (src-size 0), so a masked vector lands in
// shared memory as zeros: a pad writes those zeros to the destination in the same launch.
#define CUTE_COPY_ROW_cp_async CUTE_COPY_ROW_CASE  // this file's menu rows, for dispatch (family.cuh)
#define CUTE_COPY_FAMILY_NAME "cp.async"
#include "family.cuh"

namespace cute_copy {
using namespace cute;

// The CuTe copy operation named by the menu row (bytes, zero fill).
template <class V, int Bytes, bool ZeroFill>
struct CpAsyncOp;
template <class V> struct CpAsyncOp<V, 16, false> { using type = SM80_CP_ASYNC_CACHEGLOBAL<V>; };
template <class V> struct CpAsyncOp<V, 16, true> { using type = SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<V>; };
template <class V, int Bytes> struct CpAsyncOp<V, Bytes, false> { using type = SM80_CP_ASYNC_CACHEALWAYS<V>; };
template <class V, int Bytes> struct CpAsyncOp<V, Bytes, true> { using type = SM80_CP_ASYNC_CACHEALWAYS_ZFILL<V>; };

template <class Cfg, bool ZeroFill>
__global__ void __launch_bounds__(Cfg::kThreads) cp_async_copy_kernel(LaunchArgs const p) {
  using T = typename Cfg::Element;
  using V = typename Cfg::Vector;
  TiledCopy g2s = make_tiled_copy(Copy_Atom<typename CpAsyncOp<V, Cfg::kAtomBytes, ZeroFill>::type, T>{},
                                  typename Cfg::ThrLayout{}, typename Cfg::ValLayout{});
  TiledCopy s2g = make_tiled_copy(Copy_Atom<UniversalCopy<V>, T>{}, typename Cfg::ThrLayout{},
                                  typename Cfg::ValLayout{});
  auto tile = typename Cfg::Tile{};

  int const tiles_n = (p.dst_cols + Cfg::kTileN - 1) / Cfg::kTileN;
  int const tm = blockIdx.x / tiles_n;
  int const tn = blockIdx.x % tiles_n;

  Tensor mS = make_tensor(make_gmem_ptr(static_cast<T const*>(p.src)), make_shape(p.rows, p.cols),
                          make_stride(p.ld_src, _1{}));  // (M, N)
  Tensor mD = make_tensor(make_gmem_ptr(static_cast<T*>(p.dst)), make_shape(p.dst_rows, p.dst_cols),
                          make_stride(p.ld_dst, _1{}));  // (M', N')
  Tensor gS = local_tile(mS, tile, make_coord(tm, tn));  // (BLK_M, BLK_N)
  Tensor gD = local_tile(mD, tile, make_coord(tm, tn));  // (BLK_M, BLK_N)

  __shared__ alignas(128) T smem[Cfg::kTileM * Cfg::kTileN];
  Tensor sA = make_tensor(make_smem_ptr(smem), make_layout(tile, LayoutRight{}));  // (BLK_M, BLK_N)

  ThrCopy thr_g2s = g2s.get_slice(threadIdx.x);
  Tensor tAgS = thr_g2s.partition_S(gS);  // (CPY, CPY_M, CPY_N)
  Tensor tAsA = thr_g2s.partition_D(sA);  // (CPY, CPY_M, CPY_N)
  ThrCopy thr_s2g = s2g.get_slice(threadIdx.x);
  Tensor tBsA = thr_s2g.partition_S(sA);  // (CPY, CPY_M, CPY_N)
  Tensor tBgD = thr_s2g.partition_D(gD);  // (CPY, CPY_M, CPY_N)

  bool const interior = p.peel && (tm + 1) * Cfg::kTileM <= p.rows && (tn + 1) * Cfg::kTileN <= p.cols;
  if (interior) {  // peeled: no predicates at all
    copy(g2s, tAgS, tAsA);
    cp_async_fence();
    cp_async_wait<0>();
    __syncthreads();
    copy(s2g, tBsA, tBgD);
    return;
  }
  Tensor cD = local_tile(make_identity_tensor(shape(mD)), tile, make_coord(tm, tn));  // (BLK_M, BLK_N) -> (m, n)
  Tensor tAcD = thr_g2s.partition_S(cD);  // (CPY, CPY_M, CPY_N) -> (m, n)
  // Whole source vectors through the cp.async atom (the ZFILL form zero-fills the others) ...
  auto [tPv, tPe] = boundary_masks(tAcD, shape(mS));
  copy_if(g2s, tPv, tAgS, tAsA);
  cp_async_fence();
  cp_async_wait<0>();
  // ... then, once those have landed, the in-bounds lanes of vectors the source bound cuts.
  copy_if(tPe, tAgS, tAsA);
  __syncthreads();
  Tensor tBcD = thr_s2g.partition_S(cD);  // (CPY, CPY_M, CPY_N) -> (m, n)
  copy_inside(s2g, tBsA, tBgD, tBcD, shape(mD));
}

template <int Width, int AtomBytes, bool ZeroFill>
struct CpAsyncLaunch {
  using Cfg = EngineConfig<Width, AtomBytes>;
  static void run(LaunchArgs const& a) {
    if constexpr (!Cfg::kLegal) {
      throw std::invalid_argument("atom narrower than the element");
    } else {
      bool pad = a.dst_rows > a.rows || a.dst_cols > a.cols;
      if (pad && !ZeroFill) throw std::invalid_argument("a pad needs a zero-fill atom");
      dim3 grid = tile_grid(a.dst_rows, a.dst_cols, Cfg::kTileM, Cfg::kTileN);
      cp_async_copy_kernel<Cfg, ZeroFill><<<grid, Cfg::kThreads, 0, a.stream>>>(a);
      check_launch("cp_async_copy_kernel");
    }
  }
};

template <int Width, int AtomBytes, bool ZeroFill>
struct CpAsyncConfig {
  static ConfigValues run() {
    using Cfg = EngineConfig<Width, AtomBytes>;
    return Cfg::values(Cfg::kTileM * Cfg::kTileN * Width);
  }
};

void launch_cp_async(AtomId atom, int width, LaunchArgs const& args) {
  dispatch<CpAsyncLaunch>(atom, width, args);
}
ConfigValues config_cp_async(AtomId atom, int width) { return dispatch<CpAsyncConfig>(atom, width); }

}  // namespace cute_copy
