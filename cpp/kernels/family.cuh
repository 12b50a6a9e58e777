// The configuration every engine kernel shares, and the entry points each family file defines.
//
// One instantiation = (atom from the menu, element width). A copy moves bytes, so the element type
// is the unsigned integer of the element's width: f16, bf16, i16 and u16 share the width-2 kernels.
#pragma once
#include "common.cuh"
#include "cute-copy/src/ffi.rs.h"

namespace cute_copy {

// Thread layout (8,32):(32,1), row-major: 256 threads, a warp spans one row of the tiler, so a warp's
// 128-bit accesses cover 512 contiguous bytes. Value layout (1,A): one atom call of A elements per
// thread per tiler step. Tile (64, 32*A): 8 atom calls per thread in flight (CPY_M = 8).
template <int Width, int AtomBytes>
struct EngineConfig {
  static constexpr int kAtomBytes = AtomBytes == 0 ? Width : AtomBytes;  // 0 = one element
  static constexpr bool kLegal = kAtomBytes >= Width && kAtomBytes % Width == 0;
  static constexpr int kVals = kLegal ? kAtomBytes / Width : 1;  // elements per atom call
  static constexpr int kThrM = 8, kThrN = 32, kThreads = kThrM * kThrN;
  static constexpr int kTileM = 64, kTileN = kThrN * kVals;

  using Element = cute::uint_byte_t<Width>;
  using Vector = cute::uint_byte_t<kAtomBytes>;
  using ThrLayout = cute::Layout<cute::Shape<cute::Int<kThrM>, cute::Int<kThrN>>,
                                 cute::Stride<cute::Int<kThrN>, cute::_1>>;
  using ValLayout = cute::Layout<cute::Shape<cute::_1, cute::Int<kVals>>,
                                 cute::Stride<cute::Int<kVals>, cute::_1>>;
  using Tile = cute::Shape<cute::Int<kTileM>, cute::Int<kTileN>>;

  static ConfigValues values(int smem_bytes) {
    return {kThreads, kThrM, kThrN, 1, kVals, kTileM, kTileN, smem_bytes};
  }
};

// Each family file defines these for its own menu rows; dispatch.cu picks the family by the menu.
void launch_universal(AtomId atom, int width, LaunchArgs const& args);
ConfigValues config_universal(AtomId atom, int width);
void launch_cp_async(AtomId atom, int width, LaunchArgs const& args);
ConfigValues config_cp_async(AtomId atom, int width);

// The realign family takes row descriptors (one by value, or `count` in device memory) instead.
// Descriptor addresses are offsets from src_base / dst_base (0 for absolute addresses). `lean`
// (0, 128 or 256 threads) and `prefetch` (warp tasks ahead, 0 for none) are the planner's decisions
// (src/realign.rs); the lean kernel's preconditions are checked here (one descriptor by value, no
// status, one run with the same 16-byte phase on both sides).
void launch_realign(AtomId atom, int width, RowsDesc const& one, RowsDesc const* descs, int count,
                    std::int64_t tasks, unsigned long long* status, std::uint64_t src_base,
                    std::uint64_t dst_base, int lean, std::int64_t prefetch, cudaStream_t stream);
ConfigValues config_realign(AtomId atom, int width);
// Warp tasks (segments) the realign kernel splits a destination row of `row_bytes` into.
// Negative: -R, R rows of at most 512 bytes (R = 4) or 1 KiB (R = 2) share one warp task.
std::int64_t realign_segments(std::int64_t row_bytes);
// Warp tasks of one descriptor: items x dst_rows x segs, or items x dst_rows / R rounded up.
std::int64_t realign_tasks(RowsDesc const& d);
// Whether the lean run kernel can copy `d` (one run on both sides with the same 16-byte phase).
bool realign_lean_legal(RowsDesc const& d, std::uint64_t src_base, std::uint64_t dst_base);

// The transpose family takes a tensor descriptor (layouts of rank 1..6, planned in Rust).
void launch_transpose(AtomId atom, int width, TensorDesc const& desc);
ConfigValues config_transpose(AtomId atom, int width);

// The convert family takes a convert descriptor (coalesced layouts of rank 1..6, two element
// types, optional per-channel affine), checked by dispatch.cu. kernels/convert.cu is compiled once
// per source width of the menu (build/cuda.rs defines CUTE_COPY_SRC_WIDTH for each object), so its
// parts compile side by side: each defines launch_convert_from<its width>, and the first part
// (CUTE_COPY_FIRST_PART) also launch_convert_family and config_convert. Without
// CUTE_COPY_SRC_WIDTH, one object holds them all.
template <int SrcWidth>
void launch_convert_from(int dst_width, ConvertDesc const& desc);
#define CUTE_COPY_WIDTH(w) \
  template <>              \
  void launch_convert_from<w>(int dst_width, ConvertDesc const& desc);
#include "../menu.def"
void launch_convert_family(int src_width, int dst_width, ConvertDesc const& desc);
ConfigValues config_convert(AtomId atom, int width);

void launch_tutorial_kernel(LaunchArgs const& args);
void launch_empty_kernel(cudaStream_t stream);

}  // namespace cute_copy

namespace cute_copy {

// Run Op<Width, AtomBytes, ZeroFill>::run(args...) for the run-time width, over the menu's widths.
template <template <int, int, bool> class Op, int AtomBytes, bool ZeroFill, class... Args>
auto by_width(int width, Args const&... args) {
  switch (width) {
#define CUTE_COPY_WIDTH(w) \
  case w: return Op<w, AtomBytes, ZeroFill>::run(args...);
#include "../menu.def"
    default: break;
  }
  throw std::invalid_argument("no kernel for element width " + std::to_string(width));
}

}  // namespace cute_copy

// A family file lists its own menu rows with
//   #define CUTE_COPY_ATOM(name, family, bytes, zfill, op) CUTE_COPY_ROW_##family(name, bytes, zfill)
// after defining CUTE_COPY_ROW_<its family>; the other families' rows expand to nothing.
#ifndef CUTE_COPY_ROW_universal
#define CUTE_COPY_ROW_universal(...)
#endif
#ifndef CUTE_COPY_ROW_cp_async
#define CUTE_COPY_ROW_cp_async(...)
#endif
#ifndef CUTE_COPY_ROW_realign
#define CUTE_COPY_ROW_realign(...)
#endif
#ifndef CUTE_COPY_ROW_transpose
#define CUTE_COPY_ROW_transpose(...)
#endif
#ifndef CUTE_COPY_ROW_convert
#define CUTE_COPY_ROW_convert(...)
#endif

// The runtime-to-template switch of every family file: Op<Width, AtomBytes, ZeroFill>::run(args...)
// for `atom`, one of the file's own menu rows (CUTE_COPY_ROW_<family> defined as CUTE_COPY_ROW_CASE
// before including this header; the other rows expand to nothing), at the run-time width.
#ifdef CUTE_COPY_FAMILY_NAME
#define CUTE_COPY_ROW_CASE(name, bytes, zfill) \
  case AtomId::name: return by_width<Op, bytes, zfill>(width, args...);

namespace cute_copy {
namespace {

template <template <int, int, bool> class Op, class... Args>
auto dispatch(AtomId atom, int width, Args const&... args) {
  switch (atom) {
#define CUTE_COPY_ATOM(name, family, bytes, zfill, op) CUTE_COPY_ROW_##family(name, bytes, zfill)
#include "../menu.def"
    default: break;
  }
  throw std::invalid_argument("atom is not in the " CUTE_COPY_FAMILY_NAME " family");
}

}  // namespace
}  // namespace cute_copy
#endif
