// UniversalCopy family: global -> registers -> global, one TiledCopy for both legs.
//
// Preconditions (checked in Rust by the planner and again in dispatch.cu):
//   * src and dst are row-major with leading dimensions ld_src, ld_dst (elements);
//   * for an atom of B bytes, both base addresses and both row pitches (ld * width) are multiples of B;
//   * rows, cols, dst_rows, dst_cols fit in int; dst_rows >= rows, dst_cols >= cols (a pad when larger).
// Interior tiles copy unpredicated; tiles on the last row/column of tiles build predicates from an
// identity tensor (copy_inside in common.cuh). Registers of a pad start cleared, so the part of the
// destination outside the source is written with zeros in the same launch.
#define CUTE_COPY_ROW_universal CUTE_COPY_ROW_CASE  // this file's menu rows, for dispatch (family.cuh)
#define CUTE_COPY_FAMILY_NAME "universal"
#include "family.cuh"

namespace cute_copy {
using namespace cute;

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads) universal_copy_kernel(LaunchArgs const p) {
  using T = typename Cfg::Element;
  TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<typename Cfg::Vector>, T>{},
                                         typename Cfg::ThrLayout{}, typename Cfg::ValLayout{});
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

  ThrCopy thr_copy = tiled_copy.get_slice(threadIdx.x);
  Tensor tAgS = thr_copy.partition_S(gS);   // (CPY, CPY_M, CPY_N)
  Tensor tAgD = thr_copy.partition_D(gD);   // (CPY, CPY_M, CPY_N)
  Tensor tArA = make_fragment_like(tAgS);   // (CPY, CPY_M, CPY_N) registers

  bool const interior = p.peel && (tm + 1) * Cfg::kTileM <= p.rows && (tn + 1) * Cfg::kTileN <= p.cols;
  if (interior) {  // peeled: no predicates at all
    copy(tiled_copy, tAgS, tArA);
    copy(tiled_copy, tArA, tAgD);
    return;
  }
  Tensor cD = local_tile(make_identity_tensor(shape(mD)), tile, make_coord(tm, tn));  // (BLK_M, BLK_N) -> (m, n)
  Tensor tAcD = thr_copy.partition_S(cD);  // (CPY, CPY_M, CPY_N) -> (m, n)
  clear(tArA);                              // a pad writes zeros where the source has no element
  copy_inside(tiled_copy, tAgS, tArA, tAcD, shape(mS));
  copy_inside(tiled_copy, tArA, tAgD, tAcD, shape(mD));
}

template <int Width, int AtomBytes, bool ZeroFill>
struct UniversalLaunch {
  using Cfg = EngineConfig<Width, AtomBytes>;
  static void run(LaunchArgs const& a) {
    if constexpr (!Cfg::kLegal) {
      throw std::invalid_argument("atom narrower than the element");
    } else {
      dim3 grid = tile_grid(a.dst_rows, a.dst_cols, Cfg::kTileM, Cfg::kTileN);
      universal_copy_kernel<Cfg><<<grid, Cfg::kThreads, 0, a.stream>>>(a);
      check_launch("universal_copy_kernel");
    }
  }
};

template <int Width, int AtomBytes, bool ZeroFill>
struct UniversalConfig {
  static ConfigValues run() { return EngineConfig<Width, AtomBytes>::values(0); }
};

void launch_universal(AtomId atom, int width, LaunchArgs const& args) {
  dispatch<UniversalLaunch>(atom, width, args);
}
ConfigValues config_universal(AtomId atom, int width) { return dispatch<UniversalConfig>(atom, width); }

// ---------------------------------------------------------------------------------------------
// The CuTe tutorial TiledCopy, as the tutorial teaches it. Preconditions: f32, M and N multiples of 32.
// Copy_Atom<UniversalCopy<float>, float>, threads (32,4):(4,1), values (1,1): 128 threads, a 32x4
// tiler, so each thread copies CPY_N = 8 elements of a 32x32 tile; global -> shared -> global.
__global__ void __launch_bounds__(128) tutorial_copy_kernel(LaunchArgs const p) {
  TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<float>, float>{},
                                         Layout<Shape<_32, _4>, Stride<_4, _1>>{},  // thread layout
                                         Layout<Shape<_1, _1>>{});                 // value layout
  auto tile = Shape<_32, _32>{};
  int const tiles_n = p.cols / 32;

  Tensor mS = make_tensor(make_gmem_ptr(static_cast<float const*>(p.src)), make_shape(p.rows, p.cols),
                          make_stride(p.ld_src, _1{}));  // (M, N)
  Tensor mD = make_tensor(make_gmem_ptr(static_cast<float*>(p.dst)), make_shape(p.rows, p.cols),
                          make_stride(p.ld_dst, _1{}));  // (M, N)
  Tensor gS = local_tile(mS, tile, make_coord(blockIdx.x / tiles_n, blockIdx.x % tiles_n));  // (32, 32)
  Tensor gD = local_tile(mD, tile, make_coord(blockIdx.x / tiles_n, blockIdx.x % tiles_n));  // (32, 32)

  __shared__ float smem[32 * 32];
  Tensor sA = make_tensor(make_smem_ptr(smem), Layout<Shape<_32, _32>, Stride<_32, _1>>{});  // (32, 32)

  ThrCopy thr_copy = tiled_copy.get_slice(threadIdx.x);
  Tensor tAgS = thr_copy.partition_S(gS);  // (CPY, CPY_M, CPY_N) = (1, 1, 8)
  Tensor tAsA = thr_copy.partition_D(sA);  // (CPY, CPY_M, CPY_N)
  copy(tiled_copy, tAgS, tAsA);
  __syncthreads();
  Tensor tBsA = thr_copy.partition_S(sA);  // (CPY, CPY_M, CPY_N)
  Tensor tBgD = thr_copy.partition_D(gD);  // (CPY, CPY_M, CPY_N)
  copy(tiled_copy, tBsA, tBgD);
}

void launch_tutorial_kernel(LaunchArgs const& a) {
  if (a.rows % 32 != 0 || a.cols % 32 != 0)
    throw std::invalid_argument("tutorial copy: rows and cols must be multiples of 32");
  tutorial_copy_kernel<<<tile_grid(a.rows, a.cols, 32, 32), 128, 0, a.stream>>>(a);
  check_launch("tutorial_copy_kernel");
}

__global__ void empty_kernel() {}

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 32, 0, stream>>>();
  check_launch("empty_kernel");
}

}  // namespace cute_copy
