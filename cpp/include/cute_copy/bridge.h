// The C++ side of the cxx bridge (src/ffi.rs): only what the bridge needs. Every function throws a
// std::exception on failure, which cxx turns into an Err on the Rust side, with a Fault code (below).
#pragma once
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "rust/cxx.h"

namespace cute_copy {

// Shared enum (src/ffi.rs): what kind of failure an exception is, as Rust sees it.
enum class Fault : std::uint8_t;

// A failed CUDA call: `name()` is CUDA's name for the error (cudaGetErrorName), `what()` its
// description and where it happened.
class CudaFailure : public std::runtime_error {
 public:
  CudaFailure(std::string name, std::string const& description)
      : std::runtime_error(description), name_(std::move(name)) {}
  std::string const& name() const noexcept { return name_; }

 private:
  std::string name_;
};

// A bridge call of a build without CUDA kernels (cpp/no_cuda.cc).
class NoKernels : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shared structs, defined by cxx in the generated header.
struct CopyDesc;
struct KernelConfig;
struct SpecDesc;
struct SpecInfo;
struct RowsDesc;
struct BatchLaunch;
struct TensorDesc;
struct ConvertDesc;
enum class BaselineKernel : std::uint32_t;
enum class PiecesBaseline : std::uint32_t;

// Copy (or pad) `desc` on its stream through the menu's instantiation for (atom, elem_bytes).
void launch_copy(CopyDesc const& desc);
// One launch of the realign family: over `launch.count` row descriptors in device memory, or over
// `one` (passed by value) when `launch.descs` is 0.
void launch_rows(RowsDesc const& one, BatchLaunch const& launch);
// Warp tasks (row segments) the realign kernel splits a destination row of `row_bytes` into.
std::int64_t rows_segments(std::int64_t row_bytes);
// One tensor copy of the transpose family (layouts of rank 1..6, planned in Rust).
void launch_tensor(TensorDesc const& desc);
// One converting copy of the convert family (layouts of rank 1..6, planned in Rust).
void launch_convert(ConvertDesc const& desc);
// The CuTe tutorial TiledCopy: f32, (32,4) threads, 32x32 tiles staged through shared memory.
void launch_tutorial(CopyDesc const& desc);
// A baseline that is not CuTe (cpp/baselines.cu): naive, hand-vectorized 16 B, cudaMemcpy2DAsync,
// or cudaMemcpyAsync of the same bytes.
void launch_baseline(CopyDesc const& desc, BaselineKernel which);
// Batch baselines (not CuTe): a hand-written block-gather kernel over `desc`'s i32 block table
// (contiguous 16-byte blocks), and copies of (dst, src, size) pieces: one cudaMemcpyAsync each, or
// one cudaMemcpyBatchAsync for all.
void launch_baseline_gather(RowsDesc const& desc, std::uint64_t stream);
void launch_baseline_pieces(PiecesBaseline which, rust::Slice<std::uint64_t const> dsts,
                            rust::Slice<std::uint64_t const> srcs, rust::Slice<std::uint64_t const> sizes,
                            std::uint64_t stream);
// Mean host nanoseconds per launch_copy(desc) over `iters` back-to-back calls from C++.
double bare_launch_ns(CopyDesc const& desc, std::uint32_t iters);
// An empty kernel on the same stream: the launch-overhead floor for benchmarks.
void launch_empty(std::uint64_t stream);
// The compiled configuration (thread layout, value layout, tile) behind one menu instantiation.
KernelConfig kernel_config(std::uint32_t atom, std::uint32_t elem_bytes);

// Host-side CuTe: build the TiledCopy described by `spec`, partition the tile for `thread`, and
// append that thread's (row, col) tile coordinates, in CuTe's order, to `coords` (row, col, ...).
SpecInfo tiled_copy_partition(SpecDesc const& spec, std::uint32_t thread, rust::Vec<std::uint32_t>& coords);

// The CUDA runtime's view of the device count (0 without a driver), and its version numbers.
std::int32_t runtime_device_count();

}  // namespace cute_copy

namespace rust {
namespace behavior {

// How every bridged `-> Result` call's exception reaches Rust (cxx calls this around each one): the
// message's first byte is the Fault code, then the text; a CUDA failure's text is CUDA's name for
// the error, a unit separator (0x1f), then its description. Error::from_cxx (src/error.rs) reads it.
// (F is a template parameter so that Fault's enumerators are looked up where cxx has defined it.)
template <typename Try, typename Fail, typename F = ::cute_copy::Fault>
static void trycatch(Try&& func, Fail&& fail) noexcept try {
  func();
} catch (::cute_copy::CudaFailure const& e) {
  std::string const m = std::string(1, static_cast<char>(F::Cuda)) + e.name() + '\x1f' + e.what();
  fail(m.c_str());
} catch (::cute_copy::NoKernels const& e) {
  std::string const m = std::string(1, static_cast<char>(F::NoKernels)) + e.what();
  fail(m.c_str());
} catch (std::exception const& e) {
  std::string const m = std::string(1, static_cast<char>(F::Refused)) + e.what();
  fail(m.c_str());
}

}  // namespace behavior
}  // namespace rust
