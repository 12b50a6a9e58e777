// Probe: how fast is a plain gather (destination-ordered 16-byte stores, source elements loaded one
// by one at coordinates from fast divmods) on the convert rows? Not part of the crate.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

struct Div { uint32_t d, m, s; };
static Div mkdiv(uint32_t d) { Div r{d, 0, 0}; if (d == 1) { r.m = 0; r.s = 0; return r; }
  uint32_t s = 0; while ((1ull << s) < d) ++s; r.s = s; r.m = (uint32_t)(((1ull << 32) * ((1ull << s) - d)) / d + 1); return r; }
__device__ __forceinline__ uint32_t divq(uint32_t n, Div v) { if (v.d == 1) return n; uint32_t t = __umulhi(n, v.m); return (t + ((n - t) >> 1)) >> (v.s - 1); }

struct P { const void* src; void* dst; int rank; uint32_t shape[4]; int64_t ss[4]; Div div[4]; uint32_t nvec; int chan; float mean[4], mul[4]; bool affine; uint32_t n; };

template <class S> __device__ __forceinline__ float tof(S x);
template <> __device__ __forceinline__ float tof<uint8_t>(uint8_t x) { return (float)x; }
template <> __device__ __forceinline__ float tof<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float tof<float>(float x) { return x; }
template <class D> __device__ __forceinline__ D fromf(float x);
template <> __device__ __forceinline__ float fromf<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ uint8_t fromf<uint8_t>(float x) { return (uint8_t)x; }
template <> __device__ __forceinline__ float tof<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ __half fromf<__half>(float x) { return __float2half_rn(x); }

template <class S, class D, int U, int R>
__global__ void __launch_bounds__(256) gather(P p) {
  constexpr int V = 16 / sizeof(D);
  S const* src = (S const*)p.src;

  uint32_t t0 = blockIdx.x * 256 * U + threadIdx.x;
  S in[U][V];
  uint32_t chv[U][V];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    uint32_t t = t0 + u * 256;
    if (t >= p.nvec) break;
    uint32_t i = t * V;
    uint32_t c[R]; int64_t off = 0; uint32_t rest = i;
#pragma unroll
    for (int k = 0; k < R; ++k) { if (k < R - 1) { uint32_t q = divq(rest, p.div[k]); c[k] = rest - q * p.shape[k]; rest = q; } else c[k] = rest; off += (int64_t)c[k] * p.ss[k]; }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      in[u][j] = (i + j < p.n) ? src[off] : S(0);
      chv[u][j] = c[p.chan < 0 ? 0 : p.chan];
      off += p.ss[0];
      if (++c[0] == p.shape[0]) { c[0] = 0; off -= (int64_t)p.shape[0] * p.ss[0];
#pragma unroll
        for (int k = 1; k < R; ++k) { off += p.ss[k]; if (++c[k] < p.shape[k] || k == R - 1) break; c[k] = 0; off -= (int64_t)p.shape[k] * p.ss[k]; } }
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    uint32_t t = t0 + u * 256;
    if (t >= p.nvec) break;
    D out[V];
#pragma unroll
    for (int j = 0; j < V; ++j) { if constexpr (std::is_same_v<S, D>) { out[j] = in[u][j]; continue; } else { float x = tof<S>(in[u][j]); if (p.affine) { int ch = chv[u][j]; x = (x - p.mean[ch]) * p.mul[ch]; } out[j] = fromf<D>(x); } }
    if ((t + 1) * V <= p.n) *(uint4*)((D*)p.dst + (size_t)t * V) = *(uint4*)out;
    else for (int j = 0; j < V; ++j) if (t * V + j < p.n) ((D*)p.dst)[(size_t)t * V + j] = out[j];
  }
}

template <class S, class D, int U, int R>
float run(P p, int iters) {
  constexpr int V = 16 / sizeof(D);
  p.nvec = (p.n + V - 1) / V;
  uint32_t grid = (p.nvec + 256 * U - 1) / (256 * U);
  for (int i = 0; i < 3; ++i) gather<S, D, U, R><<<grid, 256>>>(p);
  CK(cudaGetLastError());
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i) gather<S, D, U, R><<<grid, 256>>>(p);
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b); return ms / iters;
}
float memcpy_ms(size_t bytes, int iters) {
  void *x, *y; CK(cudaMalloc(&x, bytes)); CK(cudaMalloc(&y, bytes));
  for (int i = 0; i < 3; ++i) cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i) cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b); cudaFree(x); cudaFree(y); return ms / iters;
}

// shape innermost first (destination order), source strides, source element offset.
template <class S, class D, int R>
void cse(const char* name, std::vector<uint32_t> shape, std::vector<int64_t> ss, int64_t src_elems, int64_t src_off, int chan, bool affine) {
  P p{}; p.rank = R; uint64_t n = 1;
  for (int k = 0; k < R; ++k) { p.shape[k] = shape[k]; p.ss[k] = ss[k]; p.div[k] = mkdiv(shape[k]); n *= shape[k]; }
  p.n = (uint32_t)n; p.chan = chan; p.affine = affine;
  float mean[4] = {123.675f, 116.28f, 103.53f, 0}, sd[4] = {58.395f, 57.12f, 57.375f, 1};
  for (int k = 0; k < 4; ++k) { p.mean[k] = mean[k]; p.mul[k] = 1.f / sd[k]; }
  std::vector<S> hs(src_elems);
  uint32_t st = 12345; for (auto& x : hs) { st = st * 1664525u + 1013904223u; uint32_t r = st >> 16; if constexpr (sizeof(S) == 1) x = (S)(r & 255); else if constexpr (sizeof(S) == 2) { S v; uint16_t b = (uint16_t)(r & 0x3fff); memcpy(&v, &b, 2); x = v; } else x = (float)(int)(r % 2001) - 1000.f; }
  S* ds; D* dd; CK(cudaMalloc(&ds, src_elems * sizeof(S))); CK(cudaMalloc(&dd, n * sizeof(D)));
  CK(cudaMemcpy(ds, hs.data(), src_elems * sizeof(S), cudaMemcpyHostToDevice));
  p.src = ds + src_off; p.dst = dd;
  size_t bytes = n * (sizeof(S) + sizeof(D));
  float m = memcpy_ms(bytes / 2, 50);
  float t1 = run<S, D, 1, R>(p, 50), t2 = run<S, D, 2, R>(p, 50), t4 = run<S, D, 4, R>(p, 50);
  // verify (U=4 ran last)
  std::vector<D> hd(n); CK(cudaMemcpy(hd.data(), dd, n * sizeof(D), cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (uint64_t i = 0; i < n; i += 97) { uint64_t r = i; int64_t off = src_off; int ch = 0; for (int k = 0; k < R; ++k) { uint64_t c = r % shape[k]; r /= shape[k]; off += c * ss[k]; if (k == chan) ch = (int)c; }
    if constexpr (std::is_same_v<S, D>) { if (memcmp(&hs[off], &hd[i], sizeof(S))) ++bad; continue; } else {
    float x; if constexpr (sizeof(S) == 2) x = __bfloat162float(hs[off]); else x = (float)hs[off];
    if (affine) x = (x - p.mean[ch]) * p.mul[ch];
    float y; if constexpr (sizeof(D) == 2) y = __bfloat162float(hd[i]); else y = hd[i];
    float ref; if constexpr (sizeof(D) == 2) ref = __bfloat162float(__float2bfloat16_rn(x)); else ref = x;
    if (y != ref) ++bad; } }
  printf("%-48s memcpy %7.1f us | U1 %7.1f us %.3fx | U2 %7.1f %.3fx | U4 %7.1f %.3fx | bad %zu\n", name, m * 1e3, t1 * 1e3, m / t1, t2 * 1e3, m / t2, t4 * 1e3, m / t4, bad);
  cudaFree(ds); cudaFree(dd);
}

int main() {
  cudaDeviceProp pr; cudaGetDeviceProperties(&pr, 0); printf("%s\n", pr.name);
  for (int rep = 0; rep < 1; ++rep) {
  // bf16 [64,1024,1023] ld 1024 -> packed f32
  cse<__nv_bfloat16, float, 2>("bf16 [64,1024,1023] ld1024 -> f32", {1023, 65536}, {1, 1024}, 64ll * 1024 * 1024, 0, -1, false);
  // u8 NHWC [64,224,224,3] -> f32 NCHW normalized: dst order (W,H,C,N)
  cse<uint8_t, float, 4>("u8 NHWC [64,224,224,3] -> f32 NCHW norm", {224, 224, 3, 64}, {3, 672, 1, 150528}, 64ll * 224 * 224 * 3, 0, 2, true);
  cse<uint8_t, __nv_bfloat16, 4>("u8 NHWC [64,224,224,3] -> bf16 NCHW norm", {224, 224, 3, 64}, {3, 672, 1, 150528}, 64ll * 224 * 224 * 3, 0, 2, true);
  // crop u8 [8,3,1088,1928] at (0,0,3,5) -> bf16 [8,1080,1920,3] normalized: dst order (C,W,H,N)
  cse<uint8_t, __nv_bfloat16, 4>("u8 crop [8,3,1088,1928] -> bf16 NHWC norm", {3, 1920, 1080, 8}, {1088 * 1928, 1, 1928, 3ll * 1088 * 1928}, 8ll * 3 * 1088 * 1928, 3 * 1928 + 5, 0, true);
  // f32 items [131072,3,5] (0,2,1): dst (3,5,N) order: dst[n][j][i] = src[n][i][j]; dst innermost i (3, stride 5), j (5, stride 1)
  cse<float, float, 3>("f32 items [131072,3,5] (0,2,1)", {3, 5, 131072}, {5, 1, 15}, 131072ll * 15, 0, -1, false);
  // f32 transpose 10000x7001 -> dst [7001,10000]: dst inner = src rows (stride 7001)
  cse<float, float, 2>("f32 transpose 10000x7001", {10000, 7001}, {7001, 1}, 10000ll * 7001, 0, -1, false);
  cse<uint8_t, uint8_t, 4>("u8 crop NCHW->NHWC same dtype", {3, 1920, 1080, 8}, {1088 * 1928, 1, 1928, 3ll * 1088 * 1928}, 8ll * 3 * 1088 * 1928, 3 * 1928 + 5, -1, false);
  cse<uint8_t, uint8_t, 4>("u8 NHWC [64,299,299,3] -> NCHW same dtype", {299, 299, 3, 64}, {3, 897, 1, 268203}, 64ll * 268203, 0, -1, false);
  cse<__half, __half, 4>("f16 crop NCHW->NHWC same dtype", {3, 1920, 1080, 8}, {1088 * 1928, 1, 1928, 3ll * 1088 * 1928}, 8ll * 3 * 1088 * 1928, 3 * 1928 + 5, -1, false);
  cse<__nv_bfloat16, float, 1>("bf16 16384^2 packed -> f32", {268435456u}, {1}, 268435456ll, 0, -1, false);
  cse<float, __nv_bfloat16, 1>("f32 16384^2 packed -> bf16", {268435456u}, {1}, 268435456ll, 0, -1, false);
  }
}
