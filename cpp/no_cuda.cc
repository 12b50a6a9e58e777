// The bridge without CUDA: what build.rs compiles instead of the nvcc library when DOCS_RS or
// CUTE_COPY_NO_CUDA=1 is set (docs.rs, `cargo check` / `cargo doc` on a machine without a toolkit).
// Plain host C++: one definition per function of cute_copy/bridge.h, each throwing NoKernels, which
// the bridge's trycatch marks Fault::NoKernels and Error::from_cxx turns into Error::NoKernels.
// To add a bridge function: add one line below, in the header's order.
#include <stdexcept>
#include <string>

#include "cute-copy/src/ffi.rs.h"
#include "cute_copy/bridge.h"

namespace cute_copy {
namespace {

[[noreturn]] void no_kernels(char const* call) {
  throw NoKernels(std::string("cute-copy was built without CUDA kernels (DOCS_RS / CUTE_COPY_NO_CUDA): ") + call +
                  " is unavailable; rebuild with a CUDA toolchain");
}

}  // namespace

void launch_copy(CopyDesc const&) { no_kernels("launch_copy"); }
void launch_rows(RowsDesc const&, BatchLaunch const&) { no_kernels("launch_rows"); }
std::int64_t rows_segments(std::int64_t) { no_kernels("rows_segments"); }
void launch_tensor(TensorDesc const&) { no_kernels("launch_tensor"); }
void launch_convert(ConvertDesc const&) { no_kernels("launch_convert"); }
void launch_tutorial(CopyDesc const&) { no_kernels("launch_tutorial"); }
void launch_baseline(CopyDesc const&, BaselineKernel) { no_kernels("launch_baseline"); }
void launch_baseline_gather(RowsDesc const&, std::uint64_t) { no_kernels("launch_baseline_gather"); }
void launch_baseline_pieces(PiecesBaseline, rust::Slice<std::uint64_t const>, rust::Slice<std::uint64_t const>,
                            rust::Slice<std::uint64_t const>, std::uint64_t) {
  no_kernels("launch_baseline_pieces");
}
double bare_launch_ns(CopyDesc const&, std::uint32_t) { no_kernels("bare_launch_ns"); }
void launch_empty(std::uint64_t) { no_kernels("launch_empty"); }
KernelConfig kernel_config(std::uint32_t, std::uint32_t) { no_kernels("kernel_config"); }
SpecInfo tiled_copy_partition(SpecDesc const&, std::uint32_t, rust::Vec<std::uint32_t>&) {
  no_kernels("tiled_copy_partition");
}
// Not `-> Result` in the bridge, so it must not throw: no kernels, no devices to run them on.
std::int32_t runtime_device_count() { return 0; }

}  // namespace cute_copy
