// A tuning probe for the realign family (docs/realign-tuning.md): the kernel file compiled with the
// knobs given on the nvcc line, each shape verified against cudaMemcpy2D and timed with CUDA events
// (back-to-back launches after warm-up) against cudaMemcpyAsync D2D of the same bytes in the same
// process, plus hand-written contiguous copies for the single runs (a grid of one block per 16 KiB,
// the same held to 32 warps per SM, and a resident grid with a grid stride). Built by tools/realign_probe.sh; not part of the crate.
//
//   realign_probe [launches] [reps] [runs]
#include "kernels/realign.cu"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef CUTE_COPY_REALIGN_PREFETCH
#define CUTE_COPY_REALIGN_PREFETCH 1024
#endif

namespace {

// The current device's L2 size in bytes.
std::int64_t probe_l2_bytes() {
  int dev = 0, l2 = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  return l2;
}

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

struct Shape {
  char const* name;
  int width;
  std::int64_t rows, row_bytes, src_pitch, dst_pitch, src_off, dst_off;
};

__global__ void hand_blocks(uint4 const* s, uint4* d, std::int64_t n) {  // 4 vectors per thread, one pass
  std::int64_t const i = std::int64_t(blockIdx.x) * 1024 + threadIdx.x;
  uint4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) if (i + 256 * k < n) v[k] = s[i + 256 * k];
#pragma unroll
  for (int k = 0; k < 4; ++k) if (i + 256 * k < n) d[i + 256 * k] = v[k];
}

__global__ void hand_resident(uint4 const* s, uint4* d, std::int64_t n) {  // grid stride, 4 in flight
  std::int64_t const stride = std::int64_t(gridDim.x) * 1024;
  for (std::int64_t i = std::int64_t(blockIdx.x) * 1024 + threadIdx.x; i < n; i += stride) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + 256 * k < n) v[k] = s[i + 256 * k];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (i + 256 * k < n) d[i + 256 * k] = v[k];
  }
}

template <class F>
float time_ms(int launches, cudaStream_t st, F&& f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  CK(cudaEventRecord(a, st));
  for (int i = 0; i < launches; ++i) f();
  CK(cudaEventRecord(b, st));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return ms / launches;
}

}  // namespace

int main(int argc, char** argv) {
  int const launches = argc > 1 ? std::atoi(argv[1]) : 200;
  int const reps = argc > 2 ? std::atoi(argv[2]) : 2;
  using cute_copy::AtomId;
  std::vector<Shape> shapes = {
      {"u8 8191^2 at (1,1) ld 8192 -> ld 8192", 1, 8191, 8191, 8192, 8192, 8193, 0},
      {"u8 8192^2 dense (64 MiB run)", 1, 1, 8192ll * 8192, 8192ll * 8192, 8192ll * 8192, 0, 0},
      {"bf16 4096^2 dense (32 MiB run)", 2, 1, 4096ll * 4096 * 2, 4096ll * 4096 * 2, 4096ll * 4096 * 2, 0, 0},
      {"u8 16 MiB run", 1, 1, 16ll << 20, 16ll << 20, 16ll << 20, 0, 0},
      {"u8 256 MiB run", 1, 1, 256ll << 20, 256ll << 20, 256ll << 20, 0, 0},
      {"u8 1 MiB run", 1, 1, 1ll << 20, 1ll << 20, 1ll << 20, 0, 0},
      {"u8 4 MiB run", 1, 1, 4ll << 20, 4ll << 20, 4ll << 20, 0, 0},
      {"u8 8 MiB run", 1, 1, 8ll << 20, 8ll << 20, 8ll << 20, 0, 0},
      {"u8 24 MiB + 5 run at 3 -> 19", 1, 1, (24ll << 20) + 5, (24ll << 20) + 5, (24ll << 20) + 5, 3, 19},
      {"u8 40 MiB run", 1, 1, 40ll << 20, 40ll << 20, 40ll << 20, 0, 0},
      {"f16 batched 65536 x 2046 B, pitch 2048 -> packed", 2, 65536, 2046, 2048, 2046, 0, 0},
      {"u8 crop 2000x7001 (5,3)/11520 -> (0,1)/7168", 1, 2000, 7001, 11520, 7168, 5 * 11520 + 3, 1},
      {"f16 16384x16380 ld 16388 -> packed", 2, 16384, 32760, 32776, 32760, 0, 0},
      {"u8 300x20001 (7)/20011 -> (13)/20033", 1, 300, 20001, 20011, 20033, 7, 13},
      {"u8 4000x33 (3)/35 -> (0)/33", 1, 4000, 33, 35, 33, 3, 0},
      {"u8 3x5 (1)/7 -> (2)/9", 1, 3, 5, 7, 9, 1, 2},
      {"u16 999x3002 (2)/3010 -> (6)/3006", 2, 999, 3002, 3010, 3006, 2, 6},
      {"u32 8191x32764 ld 8193 -> packed", 4, 8191, 32764, 32772, 32764, 0, 0},
      {"u64 3000x23992 (8)/24008 -> (8)/23992", 8, 3000, 23992, 24008, 23992, 8, 8},
      {"u8 1x100 run (5) -> (9)", 1, 1, 100, 100, 100, 5, 9},
      {"u8 1x(64 MiB + 3) run (1) -> (0)", 1, 1, (64ll << 20) + 3, (64ll << 20) + 3, (64ll << 20) + 3, 1, 0},
      {"u8 12 MiB run", 1, 1, 12ll << 20, 12ll << 20, 12ll << 20, 0, 0},
      {"u8 20 MiB run", 1, 1, 20ll << 20, 20ll << 20, 20ll << 20, 0, 0},
      {"u8 24 MiB run", 1, 1, 24ll << 20, 24ll << 20, 24ll << 20, 0, 0},
      {"u8 28 MiB run", 1, 1, 28ll << 20, 28ll << 20, 28ll << 20, 0, 0},
      {"u8 32 MiB run", 1, 1, 32ll << 20, 32ll << 20, 32ll << 20, 0, 0},
      {"u8 36 MiB run", 1, 1, 36ll << 20, 36ll << 20, 36ll << 20, 0, 0},
      {"u8 44 MiB run", 1, 1, 44ll << 20, 44ll << 20, 44ll << 20, 0, 0},
      {"u8 48 MiB run", 1, 1, 48ll << 20, 48ll << 20, 48ll << 20, 0, 0},
      {"u8 56 MiB run", 1, 1, 56ll << 20, 56ll << 20, 56ll << 20, 0, 0},
      {"f32 96 MiB run", 4, 1, 96ll << 20, 96ll << 20, 96ll << 20, 0, 0},
      {"u16 (32 MiB + 6) run at 6 -> 6", 2, 1, (32ll << 20) + 6, (32ll << 20) + 6, (32ll << 20) + 6, 6, 6},
      {"u8 (32 MiB + 7) run at 3 -> 19", 1, 1, (32ll << 20) + 7, (32ll << 20) + 7, (32ll << 20) + 7, 3, 19},
      {"u8 (5 MiB + 9) run at 9 -> 9", 1, 1, (5ll << 20) + 9, (5ll << 20) + 9, (5ll << 20) + 9, 9, 9},
      {"u64 1x8 run at 8 -> 8", 8, 1, 8, 8, 8, 8, 8},
      {"u8 1x15 run at 1 -> 1", 1, 1, 15, 15, 15, 1, 1},
      {"u8 1x17 run at 1 -> 1", 1, 1, 17, 17, 17, 1, 1},
  };
  // argv[3] "runs": only the single runs (rows == 1)
  bool const runs_only = argc > 3 && std::strcmp(argv[3], "runs") == 0;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::printf("# knobs: warps=%d vecs=%d min_blocks=%d; %d launches\n", CUTE_COPY_REALIGN_WARPS,
              CUTE_COPY_REALIGN_VECS_PER_LANE, CUTE_COPY_REALIGN_MIN_BLOCKS, launches);
  for (Shape const& sh : shapes) {
    if (runs_only && sh.rows != 1) continue;
    std::int64_t const sbytes = sh.src_off + (sh.rows - 1) * sh.src_pitch + sh.row_bytes;
    std::int64_t const dbytes = sh.dst_off + (sh.rows - 1) * sh.dst_pitch + sh.row_bytes;
    std::uint8_t *s, *d, *ref, *da, *db;
    CK(cudaMalloc(&s, sbytes));
    CK(cudaMalloc(&d, dbytes));
    CK(cudaMalloc(&ref, dbytes));
    std::int64_t const moved = sh.rows * sh.row_bytes;  // bytes read (= written)
    CK(cudaMalloc(&da, moved));
    CK(cudaMalloc(&db, moved));
    {
      std::vector<std::uint32_t> h((sbytes + 3) / 4);
      std::uint32_t x = 12345;
      for (auto& w : h) w = x = x * 1664525u + 1013904223u;
      CK(cudaMemcpy(s, h.data(), sbytes, cudaMemcpyHostToDevice));
    }
    CK(cudaMemset(d, 0xA5, dbytes));
    CK(cudaMemset(ref, 0xA5, dbytes));
    CK(cudaMemcpy2D(ref + sh.dst_off, sh.dst_pitch, s + sh.src_off, sh.src_pitch, sh.row_bytes, sh.rows,
                    cudaMemcpyDeviceToDevice));
    cute_copy::RowsDesc r{};
    r.src = reinterpret_cast<std::uint64_t>(s + sh.src_off);
    r.dst = reinterpret_cast<std::uint64_t>(d + sh.dst_off);
    r.src_pitch = sh.src_pitch;
    r.dst_pitch = sh.dst_pitch;
    r.src_row_bytes = r.dst_row_bytes = sh.row_bytes;
    r.src_rows = r.dst_rows = sh.rows;
    r.items = 1;
    r.index_bytes = 4;
    r.index_stride = 1;
    r.segs = cute_copy::realign_segments(sh.row_bytes);
    std::int64_t const tasks = cute_copy::realign_tasks(r);
    // The planner's launch decisions (src/realign.rs: lean_threads, prefetch_tasks), restated for
    // the probe, which runs without the Rust side; CUTE_COPY_REALIGN_PREFETCH sets the distance.
    bool const lean = r.src_rows == 1 && ((r.src ^ r.dst) & 15) == 0;
    int const lean_threads = !lean ? 0 : 2 * r.dst_row_bytes <= probe_l2_bytes() ? 128 : 256;
    std::int64_t const span = (r.src_rows - 1) * r.src_pitch + r.src_row_bytes;
    std::int64_t const prefetch = r.segs > 0 && span >= probe_l2_bytes() ? CUTE_COPY_REALIGN_PREFETCH : 0;
    auto ours = [&] {
      cute_copy::launch_realign(AtomId::Realign128, sh.width, r, nullptr, 0, tasks, nullptr, 0, 0, lean_threads,
                                prefetch, st);
    };
    CK(cudaDeviceSynchronize());  // the poison and the reference (default stream) before the copy
    ours();
    CK(cudaStreamSynchronize(st));
    bool ok;
    {
      std::vector<std::uint8_t> a(dbytes), b(dbytes);
      CK(cudaMemcpy(a.data(), d, dbytes, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(b.data(), ref, dbytes, cudaMemcpyDeviceToHost));
      ok = std::memcmp(a.data(), b.data(), dbytes) == 0;
    }
    bool const run = sh.rows == 1 && (sh.row_bytes % 16) == 0 && sh.src_off == 0 && sh.dst_off == 0;
    for (int rep = 0; rep < reps; ++rep) {
      // the D2D anchor copies the bytes rounded down to a KiB, as the criterion benches do: the
      // driver's memcpy is up to 6% slower on byte counts that are not a multiple of 16
      float const t_d2d = time_ms(launches, st, [&] { CK(cudaMemcpyAsync(db, da, moved & ~std::int64_t(1023), cudaMemcpyDeviceToDevice, st)); });
      float const t_ours = time_ms(launches, st, ours);
      float t_hb = 0, t_hr = 0, t_h4 = 0;
      if (run) {
        std::int64_t const n = sh.row_bytes / 16;
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        auto* sv = reinterpret_cast<uint4 const*>(s);
        auto* dv = reinterpret_cast<uint4*>(d);
        t_hb = time_ms(launches, st, [&] { hand_blocks<<<unsigned((n + 1023) / 1024), 256, 0, st>>>(sv, dv, n); });
        t_hr = time_ms(launches, st, [&] { hand_resident<<<unsigned(sms * 8), 256, 0, st>>>(sv, dv, n); });
        // hand-blocks held to 32 warps per SM (the realign kernel's occupancy) by 50 KiB of unused
        // dynamic shared memory per block
        static bool const opted = [] {
          CK(cudaFuncSetAttribute(hand_blocks, cudaFuncAttributeMaxDynamicSharedMemorySize, 50 << 10));
          return true;
        }();
        (void)opted;
        t_h4 = time_ms(launches, st, [&] { hand_blocks<<<unsigned((n + 1023) / 1024), 256, 50 << 10, st>>>(sv, dv, n); });
      }
      double const gb = 2.0 * moved / 1e9;
      std::printf("%-52s %s tasks %9lld  d2d %8.2f us %6.0f GB/s | ours %8.2f us %6.0f GB/s x%.3f", sh.name,
                  ok ? "ok " : "BAD", static_cast<long long>(tasks), t_d2d * 1e3, gb / (t_d2d * 1e-3),
                  t_ours * 1e3, gb / (t_ours * 1e-3), t_d2d / t_ours);
      if (run)
        std::printf(" | hand-blocks x%.3f hand-resident x%.3f hand-blocks-32-warps x%.3f", t_d2d / t_hb, t_d2d / t_hr,
                    t_d2d / t_h4);
      std::printf("\n");
    }
    CK(cudaFree(s));
    CK(cudaFree(d));
    CK(cudaFree(ref));
    CK(cudaFree(da));
    CK(cudaFree(db));
  }
  return 0;
}
