// Baselines for the benchmarks, deliberately *not* CuTe: what a user would otherwise write or call.
//   naive        one element per thread, one thread per element (2D grid-stride)
//   vectorized   hand-vectorized 16-byte loads/stores per thread, scalar head-free tail per row;
//                needs 16-byte-aligned row starts on both sides (the bench only runs it there)
//   memcpy2d     cudaMemcpy2DAsync, device to device
//   memcpy       cudaMemcpyAsync of the same byte count, device to device: the practical limit
// and the bare C++ launch loop that the Rust call overhead is measured against.
#include <chrono>

#include "cute-copy/src/ffi.rs.h"
#include "cute_copy/bridge.h"
#include "kernels/family.cuh"

namespace cute_copy {
namespace {

template <int W>
__global__ void naive_copy_kernel(LaunchArgs const p) {
  using T = cute::uint_byte_t<W>;
  T const* src = static_cast<T const*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  for (long long r = blockIdx.y; r < p.rows; r += gridDim.y)
    for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < p.cols; c += (long long)gridDim.x * blockDim.x)
      dst[r * p.ld_dst + c] = src[r * p.ld_src + c];
}

template <int W>
__global__ void vectorized_copy_kernel(LaunchArgs const p) {
  using T = cute::uint_byte_t<W>;
  constexpr int kVec = 16 / W;  // elements per 16-byte vector
  long long const vecs = p.cols / kVec;
  for (long long r = blockIdx.y; r < p.rows; r += gridDim.y) {
    T const* srow = static_cast<T const*>(p.src) + r * p.ld_src;
    T* drow = static_cast<T*>(p.dst) + r * p.ld_dst;
    for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < vecs; v += (long long)gridDim.x * blockDim.x)
      reinterpret_cast<uint4*>(drow)[v] = reinterpret_cast<uint4 const*>(srow)[v];
    for (long long c = vecs * kVec + blockIdx.x * (long long)blockDim.x + threadIdx.x; c < p.cols;
         c += (long long)gridDim.x * blockDim.x)
      drow[c] = srow[c];
  }
}

LaunchArgs args_of(CopyDesc const& d) {
  return {reinterpret_cast<void const*>(d.src), reinterpret_cast<void*>(d.dst), static_cast<int>(d.rows),
          static_cast<int>(d.cols), static_cast<int>(d.dst_rows), static_cast<int>(d.dst_cols),
          static_cast<std::int64_t>(d.ld_src), static_cast<std::int64_t>(d.ld_dst),
          reinterpret_cast<cudaStream_t>(d.stream), true};
}

template <int W>
void launch_naive(LaunchArgs const& a) {
  dim3 grid(static_cast<unsigned>((a.cols + 255) / 256), static_cast<unsigned>(a.rows < 65535 ? a.rows : 65535));
  naive_copy_kernel<W><<<grid, 256, 0, a.stream>>>(a);
  check_launch("naive_copy_kernel");
}

template <int W>
void launch_vectorized(LaunchArgs const& a) {
  long long vecs = a.cols / (16 / W);
  unsigned gx = static_cast<unsigned>(vecs > 0 ? (vecs + 255) / 256 : 1);
  dim3 grid(gx, static_cast<unsigned>(a.rows < 65535 ? a.rows : 65535));
  vectorized_copy_kernel<W><<<grid, 256, 0, a.stream>>>(a);
  check_launch("vectorized_copy_kernel");
}

template <void (*F1)(LaunchArgs const&), void (*F2)(LaunchArgs const&), void (*F4)(LaunchArgs const&),
          void (*F8)(LaunchArgs const&)>
void by_width(int w, LaunchArgs const& a) {
  switch (w) {
    case 1: return F1(a);
    case 2: return F2(a);
    case 4: return F4(a);
    case 8: return F8(a);
    default: throw std::invalid_argument("no baseline kernel for width " + std::to_string(w));
  }
}

}  // namespace

void launch_baseline(CopyDesc const& d, std::uint32_t which) {
  if (d.rows == 0 || d.cols == 0) return;
  LaunchArgs a = args_of(d);
  int w = static_cast<int>(d.elem_bytes);
  cudaError_t err = cudaSuccess;
  switch (which) {
    case 0:
      by_width<launch_naive<1>, launch_naive<2>, launch_naive<4>, launch_naive<8>>(w, a);
      return;
    case 1:
      if (d.src % 16 || d.dst % 16 || (d.ld_src * w) % 16 || (d.ld_dst * w) % 16)
        throw std::invalid_argument("vectorized baseline: rows are not 16-byte aligned");
      by_width<launch_vectorized<1>, launch_vectorized<2>, launch_vectorized<4>, launch_vectorized<8>>(w, a);
      return;
    case 2:
      err = cudaMemcpy2DAsync(a.dst, d.ld_dst * w, a.src, d.ld_src * w, d.cols * w, d.rows,
                              cudaMemcpyDeviceToDevice, a.stream);
      break;
    case 3:  // the same byte count as the logical region, as one contiguous block
      err = cudaMemcpyAsync(a.dst, a.src, d.rows * d.cols * w, cudaMemcpyDeviceToDevice, a.stream);
      break;
    default:
      throw std::invalid_argument("unknown baseline " + std::to_string(which));
  }
  if (err != cudaSuccess) throw_cuda(err, "baseline memcpy");
}

double bare_launch_ns(CopyDesc const& d, std::uint32_t iters) {
  auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t i = 0; i < iters; ++i) launch_copy(d);
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / (iters ? iters : 1);
}

}  // namespace cute_copy
