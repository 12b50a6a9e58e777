// Baselines for the benchmarks, deliberately *not* CuTe: what a user would otherwise write or call.
//   naive        one element per thread, one thread per element (2D grid-stride): the floor
//   vectorized   what a competent hand-written CUDA copy does: a 1D grid of (SMs x resident blocks),
//                grid-stride over the matrix's 16-byte vectors numbered row-major (consecutive
//                threads take consecutive vectors, so warps coalesce across row ends too); each
//                thread keeps 4 independent vectors in flight, a full grid width apart, all 4 loads
//                issued before the first store; then a scalar tail per row (cols % (16 / W)).
//                Precondition: 16-byte-aligned row starts on both sides (base and row pitch); the
//                bridge checks it and the bench only runs it there.
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

constexpr int kVecThreads = 256;  // threads per block of the vectorized baseline
constexpr int kVecInFlight = 4;   // independent 16-byte vectors per thread per step

// A position in the row-major numbering of the matrix's vectors: vector `v` of row `r`, with
// `vecs` vectors per row. Advancing by a fixed stride needs no division per step.
struct VecPos {
  long long r, v;
  __device__ void advance(long long step_r, long long step_v, long long vecs) {
    r += step_r;
    v += step_v;
    if (v >= vecs) {
      v -= vecs;
      ++r;
    }
  }
};

template <int W>
__global__ void __launch_bounds__(kVecThreads) vectorized_copy_kernel(LaunchArgs const p) {
  using T = cute::uint_byte_t<W>;
  constexpr int kVec = 16 / W;  // elements per 16-byte vector
  T const* __restrict__ src = static_cast<T const*>(p.src);
  T* __restrict__ dst = static_cast<T*>(p.dst);
  long long const vecs = p.cols / kVec;                     // whole vectors per row
  long long const total = vecs * p.rows;                    // vectors in the matrix
  long long const thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long const grid = (long long)gridDim.x * blockDim.x;  // distance between a thread's vectors

  if (vecs > 0) {
    // Strides in (row, vector) form, once per thread.
    long long const g_r = grid / vecs, g_v = grid % vecs;
    long long const s_r = (kVecInFlight * grid) / vecs, s_v = (kVecInFlight * grid) % vecs;
    VecPos pos{thread / vecs, thread % vecs};
    for (long long i = thread; i < total; i += kVecInFlight * grid) {
      uint4 val[kVecInFlight];
      VecPos at[kVecInFlight];
      at[0] = pos;
#pragma unroll
      for (int k = 1; k < kVecInFlight; ++k) {
        at[k] = at[k - 1];
        at[k].advance(g_r, g_v, vecs);
      }
      // All loads first: 4 independent 16-byte requests per thread in flight.
#pragma unroll
      for (int k = 0; k < kVecInFlight; ++k)
        if (i + k * grid < total)
          val[k] = __ldg(reinterpret_cast<uint4 const*>(src + at[k].r * p.ld_src) + at[k].v);
#pragma unroll
      for (int k = 0; k < kVecInFlight; ++k)
        if (i + k * grid < total) reinterpret_cast<uint4*>(dst + at[k].r * p.ld_dst)[at[k].v] = val[k];
      pos.advance(s_r, s_v, vecs);
    }
  }

  // The scalar tail: the last cols % kVec elements of each row, one row per thread.
  long long const tail_from = vecs * kVec;
  if (tail_from < p.cols)
    for (long long r = thread; r < p.rows; r += grid)
      for (long long c = tail_from; c < p.cols; ++c) dst[r * p.ld_dst + c] = src[r * p.ld_src + c];
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

// Blocks that fill the current device: SMs x resident blocks of the kernel, looked up once per
// (thread, device, width) since the answer never changes.
template <int W>
unsigned filling_grid() {
  thread_local int cached_device = -1;
  thread_local unsigned cached_blocks = 0;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) throw_cuda(err, "vectorized baseline: cudaGetDevice");
  if (device != cached_device) {
    int sms = 0, per_sm = 0;
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) throw_cuda(err, "vectorized baseline: SM count");
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, vectorized_copy_kernel<W>, kVecThreads, 0);
    if (err != cudaSuccess) throw_cuda(err, "vectorized baseline: occupancy");
    cached_blocks = static_cast<unsigned>(sms) * static_cast<unsigned>(per_sm > 0 ? per_sm : 1);
    cached_device = device;
  }
  return cached_blocks;
}

template <int W>
void launch_vectorized(LaunchArgs const& a) {
  long long const vecs = static_cast<long long>(a.cols) / (16 / W) * a.rows;
  // No more blocks than there is work for: each thread moves kVecInFlight vectors per step, and the
  // tail takes one row per thread.
  long long const per_block = static_cast<long long>(kVecThreads) * kVecInFlight;
  long long needed = (vecs + per_block - 1) / per_block;
  if (a.cols % (16 / W) != 0) {
    long long const tail_blocks = (a.rows + kVecThreads - 1) / kVecThreads;
    if (tail_blocks > needed) needed = tail_blocks;
  }
  if (needed < 1) needed = 1;
  long long const full = filling_grid<W>();
  unsigned const grid = static_cast<unsigned>(needed < full ? needed : full);
  vectorized_copy_kernel<W><<<grid, kVecThreads, 0, a.stream>>>(a);
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

// A block gather as one would write it by hand (vLLM's copy_blocks style): one CUDA block per table
// entry (grid-stride), i32 pairs (source block, destination block), contiguous blocks of
// `block_bytes`, 16-byte vectors with 4 in flight per thread. Preconditions: 16-byte-aligned pools,
// block_bytes a multiple of 16, every index in range (no checks: it is a baseline).
__global__ void __launch_bounds__(256) gather_blocks_kernel(RowsDesc const d) {
  constexpr int kInFlight = 4;
  long long const vecs = d.dst_row_bytes / 16;
  for (long long item = blockIdx.x; item < d.items; item += gridDim.x) {
    int const* pair = reinterpret_cast<int const*>(d.src_index) + 2 * item;
    int const sb = pair[0], db = pair[1];
    if (sb < 0 || db < 0) continue;
    uint4 const* src = reinterpret_cast<uint4 const*>(d.src + sb * d.src_item_stride);
    uint4* dst = reinterpret_cast<uint4*>(d.dst + db * d.dst_item_stride);
    for (long long v = threadIdx.x; v < vecs; v += kInFlight * blockDim.x) {
      uint4 r[kInFlight];
      for (int k = 0; k < kInFlight; ++k)
        if (v + k * blockDim.x < vecs) r[k] = src[v + k * blockDim.x];
      for (int k = 0; k < kInFlight; ++k)
        if (v + k * blockDim.x < vecs) dst[v + k * blockDim.x] = r[k];
    }
  }
}

}  // namespace

void launch_baseline_gather(RowsDesc const& d, std::uint64_t stream) {
  if (d.items <= 0) return;
  if (d.src % 16 || d.dst % 16 || d.dst_row_bytes % 16 || d.src_rows != 1 || d.dst_rows != 1 ||
      d.index_bytes != 4 || d.index_stride != 2 || d.src_item_stride % 16 || d.dst_item_stride % 16)
    throw std::invalid_argument("gather baseline: needs contiguous 16-byte blocks and an i32 block table");
  long long const grid = d.items < 65535 ? d.items : 65535;
  gather_blocks_kernel<<<static_cast<unsigned>(grid), 256, 0, reinterpret_cast<cudaStream_t>(stream)>>>(d);
  check_launch("gather_blocks_kernel");
}

void launch_baseline_pieces(PiecesBaseline which, rust::Slice<std::uint64_t const> dsts,
                            rust::Slice<std::uint64_t const> srcs, rust::Slice<std::uint64_t const> sizes,
                            std::uint64_t stream) {
  if (dsts.size() != srcs.size() || dsts.size() != sizes.size())
    throw std::invalid_argument("pieces baseline: lists of different lengths");
  auto st = reinterpret_cast<cudaStream_t>(stream);
  cudaError_t err = cudaSuccess;
  if (which == PiecesBaseline::MemcpyEach) {  // one cudaMemcpyAsync per piece
    for (std::size_t i = 0; i < dsts.size() && err == cudaSuccess; ++i)
      err = cudaMemcpyAsync(reinterpret_cast<void*>(dsts[i]), reinterpret_cast<void const*>(srcs[i]), sizes[i],
                            cudaMemcpyDeviceToDevice, st);
  } else if (which == PiecesBaseline::MemcpyBatch) {  // one cudaMemcpyBatchAsync (CUDA 12.8+) for all of them
    if (dsts.size() == 0) return;
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    std::size_t idx = 0;
    err = cudaMemcpyBatchAsync(reinterpret_cast<void* const*>(dsts.data()),
                               reinterpret_cast<void const* const*>(srcs.data()),
                               reinterpret_cast<std::size_t const*>(sizes.data()), dsts.size(), &attr, &idx, 1, st);
  } else {
    throw std::invalid_argument("unknown pieces baseline " + std::to_string(static_cast<unsigned>(which)));
  }
  if (err != cudaSuccess) throw_cuda(err, "pieces baseline");
}

void launch_baseline(CopyDesc const& d, BaselineKernel which) {
  if (d.rows == 0 || d.cols == 0) return;
  LaunchArgs a = args_of(d);
  int w = static_cast<int>(d.elem_bytes);
  cudaError_t err = cudaSuccess;
  switch (which) {
    case BaselineKernel::Naive:
      by_width<launch_naive<1>, launch_naive<2>, launch_naive<4>, launch_naive<8>>(w, a);
      return;
    case BaselineKernel::Vectorized16:
      if (d.src % 16 || d.dst % 16 || (d.ld_src * w) % 16 || (d.ld_dst * w) % 16)
        throw std::invalid_argument("vectorized baseline: rows are not 16-byte aligned");
      by_width<launch_vectorized<1>, launch_vectorized<2>, launch_vectorized<4>, launch_vectorized<8>>(w, a);
      return;
    case BaselineKernel::Memcpy2D:
      err = cudaMemcpy2DAsync(a.dst, d.ld_dst * w, a.src, d.ld_src * w, d.cols * w, d.rows,
                              cudaMemcpyDeviceToDevice, a.stream);
      break;
    case BaselineKernel::Memcpy:  // the same byte count as the logical region, as one contiguous block
      err = cudaMemcpyAsync(a.dst, a.src, d.rows * d.cols * w, cudaMemcpyDeviceToDevice, a.stream);
      break;
    default:
      throw std::invalid_argument("unknown baseline " + std::to_string(static_cast<unsigned>(which)));
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
