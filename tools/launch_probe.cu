// Launch probe (issue 22): the host's issue time of one kernel launch, by what the launch carries.
// The crate's kept plan launches the lean run kernel (one 144-byte row descriptor and three 8-byte
// words, 168 bytes, 128 threads a block) and a kept Batch the general realign kernel (the descriptor,
// a descriptor array pointer and seven more fields, 224 bytes, 256 threads); both bodies are empty, so any
// difference between the rows is the launch itself (parameter bytes, block shape, grid).
//
//   nvcc -O2 -arch=sm_90 tools/launch_probe.cu -o /tmp/launch_probe && /tmp/launch_probe
//
// Prints each launch kind's median host time per call over rounds of RUN launches, taken in turn
// (as benches/launch.rs's launch_interleaved), and its difference from the bare empty kernel.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

struct Desc {  // the size of the crate's RowsDesc: 17 eight-byte words and two four-byte ones
  std::int64_t w[17];
  std::int32_t a, b;
};
static_assert(sizeof(Desc) == 144, "RowsDesc is 144 bytes");
struct Div {  // two cutlass::FastDivmod
  int v[6];
};

__global__ void bare() {}
__global__ void lean_like(Desc d, std::int64_t blocks, std::uint64_t sb, std::uint64_t db) {
  if (d.w[0] == 1 && blocks == -7 && sb == db) asm volatile("trap;");
}
__global__ void general_like(Desc d, Desc const* descs, int count, std::int64_t tasks, unsigned long long* status,
                             std::uint64_t sb, std::uint64_t db, Div div, std::int64_t prefetch) {
  if (d.w[0] == 1 && descs == nullptr && count == -7 && tasks == -7 && status == nullptr && sb == db &&
      div.v[0] == -7 && prefetch == -7)
    asm volatile("trap;");
}

constexpr int kRun = 256;
constexpr int kRounds = 200;

int main() {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  Desc d{};
  d.w[0] = 2;
  Div div{};
  struct Kind {
    char const* name;
    void (*issue)(cudaStream_t, Desc const&, Div const&);
  };
  Kind const kinds[] = {
      {"bare <<<1, 32>>>", [](cudaStream_t st, Desc const&, Div const&) { bare<<<1, 32, 0, st>>>(); }},
      {"lean_like <<<4, 128>>>",
       [](cudaStream_t st, Desc const& x, Div const&) { lean_like<<<4, 128, 0, st>>>(x, 1, 0, 0); }},
      {"lean_like <<<1, 256>>>",
       [](cudaStream_t st, Desc const& x, Div const&) { lean_like<<<1, 256, 0, st>>>(x, 1, 0, 0); }},
      {"general_like <<<1, 256>>> by value",
       [](cudaStream_t st, Desc const& x, Div const& v) {
         general_like<<<1, 256, 0, st>>>(x, nullptr, 0, 8, nullptr, 0, 0, v, 0);
       }},
      {"general_like <<<4, 128>>> by value",
       [](cudaStream_t st, Desc const& x, Div const& v) {
         general_like<<<4, 128, 0, st>>>(x, nullptr, 0, 8, nullptr, 0, 0, v, 0);
       }},
  };
  int const n = sizeof(kinds) / sizeof(kinds[0]);
  for (auto const& k : kinds)  // load every kernel before timing
    for (int i = 0; i < 100; ++i) k.issue(s, d, div);
  if (cudaStreamSynchronize(s) != cudaSuccess) {
    std::printf("launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::vector<std::vector<double>> t(n);
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < n; ++i) {
      cudaStreamSynchronize(s);
      auto const t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < kRun; ++c) kinds[i].issue(s, d, div);
      auto const t1 = std::chrono::steady_clock::now();
      t[i].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kRun);
    }
  }
  cudaStreamSynchronize(s);
  std::vector<double> med(n);
  for (int i = 0; i < n; ++i) {
    std::sort(t[i].begin(), t[i].end());
    med[i] = t[i][t[i].size() / 2];
  }
  std::printf("launch_probe: host issue time per launch, median of %d runs of %d launches each, in turn\n", kRounds,
              kRun);
  for (int i = 0; i < n; ++i) std::printf("  %-38s %6.2f us  (bare %+.2f)\n", kinds[i].name, med[i], med[i] - med[0]);
  return 0;
}
