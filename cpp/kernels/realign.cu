// Realign family: rows of any byte alignment, copied with 16-byte-aligned global loads and stores.
//
// Preconditions (checked in Rust by the planner and again in dispatch.cu):
//   * every address is aligned to the element width (`Width`); nothing else is required: row starts,
//     row pitches and the source/destination offset may have any byte alignment;
//   * a copy is a list of RowsDesc (cxx shared struct, src/ffi.rs): `items` repetitions of a
//     `dst_rows x dst_row_bytes` destination filled from a `src_rows x src_row_bytes` source (bytes
//     of the destination outside the source are written as zeros: a pad), item i at index
//     `src_index[i]` / `dst_index[i]` (i32 or i64, on the device) when an index array is given;
//   * descriptors of a batch are sorted by `task_begin`, the prefix sum of their warp tasks, and the
//     array is followed by a block table: for every group of kTableTasks (8) tasks, the u32 index
//     of the last descriptor whose `task_begin` is <= the group's first task (built by src/batch.rs).
//
// How a row moves. Each destination row splits into a head (< 16 bytes, up to the first 16-byte
// boundary), a body of 16-byte-aligned vectors and a tail (< 16 bytes). The body is a rank-1 tensor
// of uint128_t; a TiledCopy of Copy_Atom<UniversalCopy<uint128_t>> with 32 threads (one warp) and one
// value per thread partitions a segment of kVecs vectors, so consecutive lanes own consecutive vectors
// and each lane keeps kVecs/32 vectors in flight, a warp-width apart (rows of at most 512 bytes or
// 1 KiB are copied by groups of 8 or 16 lanes instead, four or two rows per warp task). The source bytes of a destination
// vector start at a fixed misalignment m (0..15) within the source's 16-byte grid for the whole row:
// the lane loads the two aligned source vectors that cover them (one when m == 0; the second is the
// next lane's first, an L1 hit) and funnel-shifts them into place. An aligned source vector that
// reaches outside the source row is still read whole when it lies inside the item's read span (the
// bytes between its first row's start and its last row's end: the neighbouring rows' bytes and the
// pitch gaps, one allocation; the bytes outside the row are dropped by the shift, see ReadWindow);
// the two that reach outside the span (a copy's very first and very last vector) and a pad's zeros
// are built from pieces under identity-tensor predicates: nothing outside the source span is read,
// nothing outside the destination row is written.
//
// Work decomposition: a warp task is (item, row, segment); 2 warps per block, one block per 2
// tasks (a grid stride covers more than 2^31 - 1 blocks' worth). A task's (row, segment) and a row's
// (item, row) come from cutlass::FastDivmod built on the host (`Divisors`, one descriptor: a
// multiply-high instead of a 64-bit division on every task's critical path; measured in
// docs/realign-tuning.md, "Numbers from the kernel's comments"). A batch finds a task's descriptor by
// its block table and divides. An index that is negative skips its item (the paged-cache
// convention); one past the end skips it and is counted in `status` (count, lowest such item).
#define CUTE_COPY_ROW_realign CUTE_COPY_ROW_CASE  // this file's menu rows, for dispatch (family.cuh)
#define CUTE_COPY_FAMILY_NAME "realign"
#include "family.cuh"

#include <cutlass/fast_math.h>

namespace cute_copy {
using namespace cute;

namespace {

// Tuning knobs (tools/realign_probe.cu sets them on the nvcc line; the measurements behind each
// are in docs/realign-tuning.md): 4 vectors in flight per lane with at most 64 registers (32
// resident warps per SM); one block per task group rather than a persistent grid; blocks of 2 warps
// (16 per SM), since a block's slot frees only when its slowest warp ends. src/realign.rs mirrors
// kVecsPerLane, kWarps and kTableTasks (checked against this file by its tests).
#ifndef CUTE_COPY_REALIGN_VECS_PER_LANE
#define CUTE_COPY_REALIGN_VECS_PER_LANE 4
#endif
#ifndef CUTE_COPY_REALIGN_WARPS
#define CUTE_COPY_REALIGN_WARPS 2
#endif
#ifndef CUTE_COPY_REALIGN_MIN_BLOCKS
#define CUTE_COPY_REALIGN_MIN_BLOCKS (32 / CUTE_COPY_REALIGN_WARPS)  // 64 registers per thread
#endif
// The L2 prefetch distance and the lean kernel's block shape are decided by the planner in Rust
// (src/realign.rs, from the device's L2 size) and arrive with each launch.
constexpr int kWarps = CUTE_COPY_REALIGN_WARPS;
constexpr int kTableTasks = 8;  // tasks per entry of a batch's block table (src/realign.rs: TABLE_TASKS)
constexpr int kThreads = kWarps * 32;
constexpr int kVecsPerLane = CUTE_COPY_REALIGN_VECS_PER_LANE;
constexpr int kWarpVecs = 32 * kVecsPerLane;  // 16-byte vectors per whole-warp task (2 KiB)

using Vec = cute::uint128_t;

CUTE_DEVICE uint4 as_u4(Vec const& v) { return reinterpret_cast<uint4 const&>(v); }

// The 16 bytes at row offset t (t a multiple of Width, possibly negative or past the row) of a
// source row of ls bytes, with zeros for bytes outside [0, ls): what an aligned source vector that
// sticks out of the row reads. Nothing outside the row is touched. Two ways:
//   * Pieces (whole-warp segments): s + t is 16-byte aligned (an A_v of copy_row), so the bytes
//     inside the row, [a, b) of the vector, are read as naturally aligned pieces: 1, 2, 4 and 8
//     bytes up to an 8-byte boundary, then 8, 4, 2 and 1 down to b (at most 4 + 4 loads instead of
//     one per element: 15 for a u8 vector one byte short). u8 crop 2000x7001: 8.95 -> 8.43 us.
//   * element by element, unrolled and predicated (groups of 8 or 16 lanes, whose short rows are
//     mostly edge vectors: the pieces' branches cost the 10 000-copy batch 10%).
template <int Width, bool Pieces>
CUTE_DEVICE uint4 masked_vector(std::uint8_t const* s, std::int64_t ls, std::int64_t t) {
  if constexpr (!Pieces) {
    using E = uint_byte_t<Width>;
    unsigned w[4] = {0u, 0u, 0u, 0u};  // built in place: constant indices keep it in registers
    CUTE_UNROLL
    for (int k = 0; k < 16 / Width; ++k) {
      std::int64_t const o = t + k * Width;
      if (o >= 0 && o < ls) {
        std::uint64_t const v = *reinterpret_cast<E const*>(s + o);
        if constexpr (Width == 8) {
          w[2 * k] = static_cast<unsigned>(v);
          w[2 * k + 1] = static_cast<unsigned>(v >> 32);
        } else {
          w[k * Width / 4] |= static_cast<unsigned>(v) << (8 * (k * Width % 4));
        }
      }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    int const a = static_cast<int>(cute::min<std::int64_t>(16, cute::max<std::int64_t>(0, -t)));
    int const b = static_cast<int>(cute::min<std::int64_t>(16, cute::max<std::int64_t>(0, ls - t)));
    std::uint8_t const* base = s + t;
    std::uint64_t lo = 0, hi = 0;
    auto put = [&](int at, std::uint64_t v) {
      if (at < 8) lo |= v << (8 * at);
      else hi |= v << (8 * (at - 8));
    };
    int p = a;
    if constexpr (Width == 1) if ((p & 1) && p + 1 <= b) { put(p, base[p]); p += 1; }
    if constexpr (Width <= 2) if ((p & 2) && p + 2 <= b) { put(p, *reinterpret_cast<std::uint16_t const*>(base + p)); p += 2; }
    if constexpr (Width <= 4) if ((p & 4) && p + 4 <= b) { put(p, *reinterpret_cast<std::uint32_t const*>(base + p)); p += 4; }
    if ((p & 8) && p + 8 <= b) { put(p, *reinterpret_cast<std::uint64_t const*>(base + p)); p += 8; }
    if (p + 8 <= b) { put(p, *reinterpret_cast<std::uint64_t const*>(base + p)); p += 8; }
    if constexpr (Width <= 4) if (p + 4 <= b) { put(p, *reinterpret_cast<std::uint32_t const*>(base + p)); p += 4; }
    if constexpr (Width <= 2) if (p + 2 <= b) { put(p, *reinterpret_cast<std::uint16_t const*>(base + p)); p += 2; }
    if constexpr (Width == 1) if (p + 1 <= b) { put(p, base[p]); p += 1; }
    return make_uint4(static_cast<unsigned>(lo), static_cast<unsigned>(lo >> 32), static_cast<unsigned>(hi),
                      static_cast<unsigned>(hi >> 32));
  }
}

// The bytes of a source row's neighbourhood that an aligned source vector may read whole: row
// offsets [lo, hi). A vector's bytes outside the row are never used (the funnel shift drops them),
// so it may be read whole wherever it lies inside the item's read span: from the first byte of its
// first row to the last byte it reads of its last row. The copy reads both ends, and an item's
// rows are strides of one allocation, so the span is readable memory of the source; only vectors
// that stick out of the span (the first row's first vector, the last row's last), and the bytes a
// pad must see as zeros (hi = ls when the source row is shorter than the destination's), are read
// by pieces. A pitch that is negative keeps the row itself, [0, ls).
struct ReadWindow {
  std::int64_t lo, hi;
  CUTE_DEVICE bool whole(std::int64_t begin, std::int64_t end) const { return begin >= lo && end <= hi; }
};

// The source vector at row offset o of an edge segment: `at` (its address, s + o) read whole when
// it lies in the read window, zeros past the source row (a pad), else built by masked_vector.
template <int Width, bool Pieces>
CUTE_DEVICE uint4 edge_vector(Vec const* at, std::uint8_t const* s, std::int64_t ls, std::int64_t o,
                              ReadWindow const& w) {
  return w.whole(o, o + 16) ? as_u4(*at) : o >= ls ? make_uint4(0, 0, 0, 0) : masked_vector<Width, Pieces>(s, ls, o);
}

// An edge segment's extra vector (lane G-1, m != 0): A_{v+1} past the lane's last vector v, at row
// offset o = a0 + 16 (v + 1).
template <int Width, bool Pieces, class TA, class TC>
CUTE_DEVICE uint4 extra_vector(TA const& tAgA, TC const& tDcD, std::uint8_t const* s, std::int64_t ls, std::int64_t a0,
                               ReadWindow const& w) {
  constexpr int kLast = decltype(size<1>(tAgA))::value - 1;
  std::int64_t const o = a0 + 16 * (std::int64_t(get<0>(tDcD(0, kLast))) + 1);
  return edge_vector<Width, Pieces>(&tAgA(0, kLast) + 1, s, ls, o, w);
}

// Segment `seg` of one destination row: d[0, ld) from s[0, ls), zeros past ls.
//
// The body: destination vector v (0 <= v < nb) at d + head + 16 v needs source bytes
// [head + 16 v, +16) of the row, which start m bytes into the aligned source vector A_v at
// (s + head - m) + 16 v: out_v = bytes [m, m + 16) of A_v:A_{v+1}. Lane l owns v = seg * kVecs + 32 k
// + l (the TiledCopy's partition) and loads A_v; A_{v+1} is lane l + 1's A_v (a warp shuffle; lane 31
// takes lane 0's next one, and loads one extra vector past the segment). A_v that sticks out of the
// source row is read element by element with zeros outside it, which is also what a pad needs.
//
// G is the group of lanes that copies the row: the whole warp (32), or 8 or 16 lanes when a warp
// task packs 4 or 2 short rows (one per group, `mask` its lanes); `lane` is the lane in the group.
template <int Width, int G>
CUTE_DEVICE void copy_row(std::uint8_t const* s, std::int64_t ls, std::uint8_t* d, std::int64_t ld,
                          std::int64_t seg, int lane, unsigned mask, ReadWindow const w) {
  using E = uint_byte_t<Width>;
  constexpr int kVecs = G * kVecsPerLane;                 // 16-byte vectors per segment
  constexpr int kEdge = (16 / Width + G - 1) / G;         // head / tail elements per lane
  std::int64_t const head = cute::min(ld, std::int64_t((16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15));
  std::int64_t const nb = (ld - head) / 16;  // aligned destination vectors
  std::int64_t const tail = head + nb * 16;  // row offset of the tail (< 16 bytes)

  // Head and tail elements (segment 0): loaded now, stored last, so they share the body's round trip.
  E h[kEdge], t[kEdge];
  CUTE_UNROLL
  for (int i = 0; i < kEdge; ++i) {
    std::int64_t const ho = std::int64_t(lane + i * G) * Width, to = tail + ho;
    h[i] = seg == 0 && ho < head && ho < ls ? *reinterpret_cast<E const*>(s + ho) : E(0);
    t[i] = seg == 0 && to < ld && to < ls ? *reinterpret_cast<E const*>(s + to) : E(0);
  }

  if (seg * kVecs < nb) {
    std::uint8_t const* sb = s + head;
    int const m = static_cast<int>(reinterpret_cast<std::uintptr_t>(sb) & 15);
    std::int64_t const a0 = head - m;  // row offset of A_0
    TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<Vec>, Vec>{},
                                           Layout<Shape<Int<G>>>{},  // thread layout: the group
                                           Layout<Shape<_1>>{});     // value layout: one vector per call
    auto tile = Shape<Int<kVecs>>{};
    Tensor mD = make_tensor(make_gmem_ptr(reinterpret_cast<Vec*>(d + head)), make_shape(nb));      // (NB)
    Tensor mA = make_tensor(make_gmem_ptr(reinterpret_cast<Vec const*>(s + a0)), make_shape(nb + 1));  // (NB+1) A_v
    Tensor gD = local_tile(mD, tile, make_coord(seg));  // (VECS)
    Tensor gA = local_tile(mA, tile, make_coord(seg));  // (VECS)
    Tensor cD = local_tile(make_identity_tensor(shape(mD)), tile, make_coord(seg));  // (VECS) -> v
    ThrCopy thr_copy = tiled_copy.get_slice(lane);
    Tensor tDgD = thr_copy.partition_D(gD);  // (CPY, CPY_N) = (1, kVecsPerLane)
    Tensor tAgA = thr_copy.partition_S(gA);  // (CPY, CPY_N): A_v of the lane's vectors
    Tensor tDcD = thr_copy.partition_D(cD);  // (CPY, CPY_N) -> v
    Tensor tArA = make_fragment_like(tAgA);  // (CPY, CPY_N) registers: A_v, then out_v

    std::int64_t const v0 = seg * kVecs;
    std::int64_t const o_first = a0 + 16 * v0, o_end = a0 + 16 * (v0 + kVecs + (m != 0));
    // Interior (peeled): every A_v the segment reads lies inside the source row, every v < nb.
    bool const interior = v0 + kVecs <= nb && w.whole(o_first, o_end);
    uint4 extra = make_uint4(0, 0, 0, 0);  // lane G-1: A_{v0 + kVecs}
    if (interior) {
      copy(tiled_copy, tAgA, tArA);
      if (m != 0 && lane == G - 1) extra = as_u4((&tAgA(0, kVecsPerLane - 1))[1]);
    } else if (G == 32 && w.whole(o_first, a0 + 16 * (cute::min(v0 + kVecs, nb) + (m != 0)))) {
      // A row's last, partial segment whose source vectors all lie in the read window: one
      // predicated pass of whole loads (A_v for v <= nb; the extra vector past the segment feeds
      // only vectors that are not stored, so it stays zero).
      Tensor tApA = make_tensor<bool>(make_shape(_1{}, size<1>(tAgA)));  // (1, CPY_N) predicates
      CUTE_UNROLL
      for (int k = 0; k < kVecsPerLane; ++k) tApA(0, k) = get<0>(tDcD(0, k)) < nb + (m != 0);
      copy_if(tiled_copy, tApA, tAgA, tArA);
    } else if constexpr (G == 32) {
      // A whole warp's edge segment (the last of a row, or a row's only one): the whole vectors
      // first, all loads in flight at once as in the interior; then the few that stick out of
      // the source row (a row's first and last, a pad's zeros) as aligned pieces (masked_vector),
      // so that their divergent path does not stand between the loads. Measured on the H200: 2046-byte rows
      // 0.89x -> 0.95x D2D, u8 8191-byte rows at (1,1) 0.93x -> 0.98x. (Groups of 8 or 16 lanes,
      // whose short rows are mostly edge vectors, keep the single pass: 2.7% faster there.)
      CUTE_UNROLL
      for (int k = 0; k < kVecsPerLane; ++k) {
        std::int64_t const o = a0 + 16 * std::int64_t(get<0>(tDcD(0, k)));
        if (w.whole(o, o + 16)) tArA(0, k) = tAgA(0, k);
      }
      CUTE_UNROLL
      for (int k = 0; k < kVecsPerLane; ++k) {
        std::int64_t const o = a0 + 16 * std::int64_t(get<0>(tDcD(0, k)));
        if (w.whole(o, o + 16)) continue;
        uint4 const a = o >= ls ? make_uint4(0, 0, 0, 0) : masked_vector<Width, true>(s, ls, o);  // past it: zeros
        tArA(0, k) = reinterpret_cast<Vec const&>(a);
      }
      if (m != 0 && lane == G - 1) extra = extra_vector<Width, true>(tAgA, tDcD, s, ls, a0, w);
    } else {
      CUTE_UNROLL
      for (int k = 0; k < kVecsPerLane; ++k) {
        std::int64_t const o = a0 + 16 * std::int64_t(get<0>(tDcD(0, k)));
        uint4 const a = edge_vector<Width, false>(&tAgA(0, k), s, ls, o, w);
        tArA(0, k) = reinterpret_cast<Vec const&>(a);
      }
      if (m != 0 && lane == G - 1) extra = extra_vector<Width, false>(tAgA, tDcD, s, ls, a0, w);
    }
    if (m != 0) {
      // out_v = bytes [m, m + 16) of A_v:A_{v+1}. Lane l < G-1 reads A_{v+1} from lane l + 1 (same
      // k); lane G-1 reads lane 0's A at k + 1, which lane 0 offers in place of its own, and for the
      // last k takes the extra vector it loaded itself. Shuffles stay inside the group (width G).
      CUTE_UNROLL
      for (int k = 0; k < kVecsPerLane; ++k) {
        uint4 const a = as_u4(tArA(0, k));
        uint4 const offer = lane != 0 ? a : k + 1 < kVecsPerLane ? as_u4(tArA(0, k + 1)) : extra;
        int const from = (lane + 1) & (G - 1);
        uint4 b = make_uint4(__shfl_sync(mask, offer.x, from, G), __shfl_sync(mask, offer.y, from, G),
                             __shfl_sync(mask, offer.z, from, G), __shfl_sync(mask, offer.w, from, G));
        if (lane == G - 1 && k + 1 == kVecsPerLane) b = extra;
        uint4 const r = realign(a, b, m);
        tArA(0, k) = reinterpret_cast<Vec const&>(r);
      }
    }
    if (interior) {
      copy(tiled_copy, tArA, tDgD);
    } else {
      Tensor tDpD = make_tensor<bool>(make_shape(_1{}, size<1>(tDgD)));  // (1, CPY_N) predicates
      CUTE_UNROLL
      for (int k = 0; k < kVecsPerLane; ++k) tDpD(0, k) = elem_less(tDcD(0, k), shape(mD));
      copy_if(tiled_copy, tDpD, tArA, tDgD);
    }
  }
  CUTE_UNROLL
  for (int i = 0; i < kEdge; ++i) {
    std::int64_t const ho = std::int64_t(lane + i * G) * Width, to = tail + ho;
    if (seg == 0 && ho < head) *reinterpret_cast<E*>(d + ho) = h[i];
    if (seg == 0 && to < ld) *reinterpret_cast<E*>(d + to) = t[i];
  }
}

// One descriptor's divisions as cutlass::FastDivmod built on the host: a task's (row, segment) and a
// row's (item, row) by a multiply-high instead of a 64-bit division on the task's critical path.
// Divisor 0 (the default, and a batch's): none; the kernel divides. Valid for dividends below 2^31,
// so built only when the tasks (segs) or items x rows (rows) stay below that.
struct Divisors {
  cutlass::FastDivmod segs = none(), rows = none();
  static cutlass::FastDivmod none() {
    cutlass::FastDivmod d;
    d.divisor = 0;
    return d;
  }
  static Divisors of(RowsDesc const& one, std::int64_t tasks) {
    Divisors d;
    if (one.segs > 0 && tasks <= 0x7fffffff) d.segs = cutlass::FastDivmod(static_cast<int>(one.segs));
    if (one.dst_rows >= 1 && one.items >= 1 && one.items <= 0x7fffffff / one.dst_rows)
      d.rows = cutlass::FastDivmod(static_cast<int>(one.dst_rows));
    return d;
  }
};

// Row r (item-major: item r / dst_rows, row r % dst_rows) of descriptor p, segment seg, by a group
// of G lanes; rows past the descriptor's (the last packed task's spare groups) do nothing.
template <int Width, int G>
CUTE_DEVICE void run_task(RowsDesc const& p, std::int64_t seg, std::int64_t r, int lane, unsigned mask,
                          unsigned long long* status, std::uint64_t src_base, std::uint64_t dst_base,
                          Divisors const& div) {
  if (r >= p.items * p.dst_rows) return;
  std::int64_t item = 0, row = r;  // a plain copy (one item): no division on the task's critical path
  if (p.items != 1) {
    if (div.rows.divisor == p.dst_rows) {  // one descriptor of < 2^31 rows: the host's divmod
      int q, rr;
      div.rows(q, rr, static_cast<int>(r));
      item = q;
      row = rr;
    } else {
      item = r / p.dst_rows;
      row = r % p.dst_rows;
    }
  }
  bool const record = lane == 0 && row == 0 && seg == 0;
  std::int64_t const si = side_index(p.src_index, p.index_bytes, p.index_stride, item, p.src_items, status, record);
  if (si < 0) return;
  std::int64_t const di = side_index(p.dst_index, p.index_bytes, p.index_stride, item, p.dst_items, status, record);
  if (di < 0) return;
  auto const* s = reinterpret_cast<std::uint8_t const*>(src_base + p.src) + si * p.src_item_stride + row * p.src_pitch;
  auto* d = reinterpret_cast<std::uint8_t*>(dst_base + p.dst) + di * p.dst_item_stride + row * p.dst_pitch;
  std::int64_t const ls = row < p.src_rows ? p.src_row_bytes : 0;
  ReadWindow w{0, ls};
  std::int64_t const rows_read = cute::min(p.src_rows, p.dst_rows);
  if (p.src_pitch >= 0 && row < rows_read) {
    w.lo = -row * p.src_pitch;
    if (ls >= p.dst_row_bytes) w.hi = (rows_read - 1 - row) * p.src_pitch + p.dst_row_bytes;
  }
  copy_row<Width, G>(s, ls, d, p.dst_row_bytes, seg, lane, mask, w);
}

template <int Width, bool Batched>
__global__ void __launch_bounds__(kThreads, CUTE_COPY_REALIGN_MIN_BLOCKS)
    realign_kernel(RowsDesc const one, RowsDesc const* descs, int count, std::int64_t tasks,
                   unsigned long long* status, std::uint64_t src_base, std::uint64_t dst_base,
                   Divisors const div, std::int64_t const prefetch) {
  int const lane = threadIdx.x % 32;
  for (std::int64_t task = std::int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; task < tasks;
       task += std::int64_t(gridDim.x) * kWarps) {
    RowsDesc const* dp = &one;
    if constexpr (Batched) {
      // The last descriptor whose first task is <= task: the block table after the descriptors
      // names it for the task's group of kTableTasks (the group's first task), and the group's
      // tasks can only move a few descriptors further.
      auto const* first = reinterpret_cast<std::uint32_t const*>(descs + count);
      int k = static_cast<int>(first[task / kTableTasks]);
      while (k + 1 < count && descs[k + 1].task_begin <= task) ++k;
      dp = descs + k;
    }
    RowsDesc const& p = *dp;
    std::int64_t const local = task - p.task_begin;
    bool const fast_segs = div.segs.divisor == p.segs;  // one descriptor of < 2^31 tasks: the host's divmod
    if constexpr (!Batched) {
      // A copy whose source outgrows L2 streams it from DRAM: ask L2 for the source segment of the
      // task `prefetch` tasks ahead (a later block's), bytes in flight that hold no register.
      // Lanes 0-15 take one 128-byte line each of its 2 KiB, clamped inside its source row.
      std::int64_t const ahead = local + prefetch;
      if (prefetch > 0 && p.segs > 0 && lane < 16 && ahead < tasks && fast_segs) {
        int q, sg;
        div.segs(q, sg, static_cast<int>(ahead));
        if (q < p.src_rows) {
          std::int64_t const o =
              cute::min<std::int64_t>(std::int64_t(sg) * kWarpVecs * 16 + lane * 128, p.src_row_bytes - 1);
          auto const* a = reinterpret_cast<std::uint8_t const*>(src_base + p.src) + std::int64_t(q) * p.src_pitch + o;
          asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
        }
      }
    }
    if (p.segs > 0) {
      if (fast_segs) {
        int q, seg;
        div.segs(q, seg, static_cast<int>(local));
        run_task<Width, 32>(p, seg, q, lane, 0xffffffffu, status, src_base, dst_base, div);
        continue;
      }
      run_task<Width, 32>(p, local % p.segs, local / p.segs, lane, 0xffffffffu, status, src_base, dst_base, div);
    } else if (p.segs == -2) {  // two rows per task, 16 lanes each
      int const g = lane / 16;
      run_task<Width, 16>(p, 0, local * 2 + g, lane % 16, 0xffffu << (16 * g), status, src_base, dst_base, div);
    } else {  // four rows per task, 8 lanes each
      int const g = lane / 8;
      run_task<Width, 8>(p, 0, local * 4 + g, lane % 8, 0xffu << (8 * g), status, src_base, dst_base, div);
    }
  }
}

// A lean run: one contiguous range on both sides (a coalesced copy) whose source and destination
// share their 16-byte phase, of any length. The body is a plain TiledCopy of
// Copy_Atom<UniversalCopy<uint128_t>> over a block's tile of 256 vectors (4 KiB: kWarps warp
// tasks' worth, so a lean launch has as many blocks as the general kernel's), with thread layout
// (Threads):(1) and Threads/256 vectors per thread a block-width apart: no descriptor, no funnel
// shift, no edge vectors, 32 registers, so 64 warps stay resident per SM instead of 32. Two block
// shapes of the same tile, by where the copy's bytes live (decided in Rust, src/realign.rs):
//   * 128 threads x 2 vectors when source and destination together fit in the L2 (back-to-back
//     copies of that size run from L2 in part, and more loads per thread win);
//   * 256 threads x 1 vector otherwise (the copy streams from DRAM; finer tiles win).
// The measurements behind both shapes, and the tiles and block sizes that lost: docs/realign-tuning.md.
constexpr int kLeanBlockVecs = kWarps * kWarpVecs;

template <int Width, int Threads>
__global__ void __launch_bounds__(Threads, 2048 / Threads)
    realign_run_kernel(RowsDesc const one, std::int64_t blocks, std::uint64_t src_base, std::uint64_t dst_base) {
  static_assert(kLeanBlockVecs % Threads == 0, "a whole number of vectors per thread");
  using E = uint_byte_t<Width>;
  auto const* s = reinterpret_cast<std::uint8_t const*>(src_base + one.src);
  auto* d = reinterpret_cast<std::uint8_t*>(dst_base + one.dst);
  std::int64_t const bytes = one.dst_row_bytes;
  std::int64_t const head = cute::min(bytes, std::int64_t((16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15));
  std::int64_t const nb = (bytes - head) / 16, tail = head + nb * 16;
  // The block's tile: thread t owns vectors t, t + Threads, ... (the TiledCopy's partition).
  TiledCopy tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<Vec>, Vec>{}, Layout<Shape<Int<Threads>>>{},
                                         Layout<Shape<_1>>{});
  ThrCopy thr_copy = tiled_copy.get_slice(threadIdx.x);
  auto tile = Layout<Shape<Int<kLeanBlockVecs>>>{};
  for (std::int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    if (b == 0 && threadIdx.x < 32) {  // head and tail (< 16 bytes each): one element per lane
      std::int64_t const ho = std::int64_t(threadIdx.x) * Width, to = tail + ho;
      if (ho < head) *reinterpret_cast<E*>(d + ho) = *reinterpret_cast<E const*>(s + ho);
      if (to < bytes) *reinterpret_cast<E*>(d + to) = *reinterpret_cast<E const*>(s + to);
    }
    std::int64_t const v0 = b * kLeanBlockVecs;
    Tensor gS = make_tensor(make_gmem_ptr(reinterpret_cast<Vec const*>(s + head) + v0), tile);  // (VECS)
    Tensor gD = make_tensor(make_gmem_ptr(reinterpret_cast<Vec*>(d + head) + v0), tile);        // (VECS)
    Tensor tSgS = thr_copy.partition_S(gS);  // (CPY, CPY_N)
    Tensor tDgD = thr_copy.partition_D(gD);  // (CPY, CPY_N)
    Tensor tDrD = make_fragment_like(tDgD);
    if (v0 + kLeanBlockVecs <= nb) {  // interior (peeled)
      copy(tiled_copy, tSgS, tDrD);
      copy(tiled_copy, tDrD, tDgD);
    } else {  // the last tile: identity-tensor predicates against the vectors left (none past nb)
      std::int64_t const left = nb - v0;
      Tensor tDcD = thr_copy.partition_D(make_identity_tensor(shape(tile)));  // (CPY, CPY_N) -> vector
      Tensor tDpD = make_tensor<bool>(make_shape(_1{}, size<1>(tDgD)));
      CUTE_UNROLL
      for (int k = 0; k < size<1>(tDpD); ++k) tDpD(0, k) = get<0>(tDcD(0, k)) < left;
      copy_if(tiled_copy, tDpD, tSgS, tDrD);
      copy_if(tiled_copy, tDpD, tDrD, tDgD);
    }
  }
}

// One block per kWarps tasks, at most 2^31 - 1 (the kernel's grid stride covers the rest).
inline unsigned blocks_for(std::int64_t tasks) {
  return static_cast<unsigned>(cute::min<std::int64_t>((tasks + kWarps - 1) / kWarps, 0x7fffffff));
}

template <int Width, int AtomBytes, bool ZeroFill>
struct RealignLaunch {
  static void run(RowsDesc const& one, RowsDesc const* descs, int count, std::int64_t tasks,
                  unsigned long long* status, std::uint64_t src_base, std::uint64_t dst_base, int lean,
                  std::int64_t prefetch, cudaStream_t stream) {
    if (tasks <= 0) return;
    if (lean == 128) {
      realign_run_kernel<Width, 128><<<blocks_for(tasks), 128, 0, stream>>>(one, (tasks + kWarps - 1) / kWarps,
                                                                           src_base, dst_base);
    } else if (lean == 256) {
      realign_run_kernel<Width, 256><<<blocks_for(tasks), 256, 0, stream>>>(one, (tasks + kWarps - 1) / kWarps,
                                                                           src_base, dst_base);
    } else if (descs == nullptr) {
      auto kernel = realign_kernel<Width, false>;
      kernel<<<blocks_for(tasks), kThreads, 0, stream>>>(one, nullptr, 0, tasks, status, src_base, dst_base,
                                                         Divisors::of(one, tasks), prefetch);
    } else {
      auto kernel = realign_kernel<Width, true>;
      kernel<<<blocks_for(tasks), kThreads, 0, stream>>>(one, descs, count, tasks, status, src_base, dst_base,
                                                         Divisors{}, 0);
    }
    check_launch("realign_kernel");
  }
};

template <int Width, int AtomBytes, bool ZeroFill>
struct RealignConfig {
  // As the engine's KernelConfig: kWarps warps, each a (1, 32) thread row; one 16-byte vector per
  // atom call; a block's warps take kWarps consecutive (row, segment) tasks of kVecs vectors each:
  // with one segment per row, a (kWarps, kVecs * 16 / Width) tile.
  static ConfigValues run() {
    return {kThreads, kWarps, 32, 1, 16 / Width, kWarps, kWarpVecs * 16 / Width, 0};
  }
};

}  // namespace

std::int64_t realign_segments(std::int64_t row_bytes) {
  // Short rows share a warp task: four groups of 8 lanes (up to 8 x 4 vectors = 512 bytes of body)
  // or two of 16 (1 KiB); longer rows take the whole warp, one task per 2 KiB segment.
  if (row_bytes <= 8 * kVecsPerLane * 16) return -4;
  if (row_bytes <= 16 * kVecsPerLane * 16) return -2;
  std::int64_t const vecs = row_bytes / 16;
  return cute::max<std::int64_t>(1, (vecs + kWarpVecs - 1) / kWarpVecs);
}

bool realign_lean_legal(RowsDesc const& d, std::uint64_t src_base, std::uint64_t dst_base) {
  return d.items == 1 && d.src_rows == 1 && d.dst_rows == 1 && d.src_row_bytes == d.dst_row_bytes &&
         d.src_index == 0 && d.dst_index == 0 && (((src_base + d.src) ^ (dst_base + d.dst)) & 15) == 0;
}

std::int64_t realign_tasks(RowsDesc const& d) {
  std::int64_t const rows = d.items * d.dst_rows;
  return d.segs > 0 ? rows * d.segs : (rows + (-d.segs) - 1) / (-d.segs);
}

void launch_realign(AtomId atom, int width, RowsDesc const& one, RowsDesc const* descs, int count,
                    std::int64_t tasks, unsigned long long* status, std::uint64_t src_base,
                    std::uint64_t dst_base, int lean, std::int64_t prefetch, cudaStream_t stream) {
  if (lean != 0 && !(descs == nullptr && status == nullptr && (lean == 128 || lean == 256) &&
                     realign_lean_legal(one, src_base, dst_base)))
    throw std::invalid_argument("the lean run kernel needs one run with the same 16-byte phase on both sides");
  if (prefetch < 0 || (prefetch > 0 && descs != nullptr))
    throw std::invalid_argument("L2 prefetch is for one descriptor by value");
  dispatch<RealignLaunch>(atom, width, one, descs, count, tasks, status, src_base, dst_base, lean, prefetch, stream);
}

ConfigValues config_realign(AtomId atom, int width) { return dispatch<RealignConfig>(atom, width); }

}  // namespace cute_copy
