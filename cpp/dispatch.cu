// The bridge's launch entry points: from the runtime copy descriptor (a cxx shared struct) to the
// menu's instantiation. Rust has already planned and checked the request; the checks here are a
// second line so that nothing reaches a kernel that could fault (misaligned vector, bad shape).
#include "cute-copy/src/ffi.rs.h"
#include "cute_copy/bridge.h"
#include "kernels/family.cuh"

namespace cute_copy {
namespace {

enum class FamilyId { universal, cp_async, realign, transpose, convert };
struct AtomRow {
  char const* name;
  FamilyId family;
  int bytes;  // 0 = one element
};
constexpr AtomRow kAtoms[] = {
#define CUTE_COPY_ATOM(name, family, bytes, zfill, op) {#name, FamilyId::family, bytes},
#include "menu.def"
};

// The parts of a refusal's message, appended only when it is thrown.
void append(std::string& s, char const* x) { s += x; }
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
void append(std::string& s, T x) {
  s += std::to_string(x);
}

// Refuse a descriptor with std::invalid_argument, its message the parts of `what` one after the
// other. These checks run on every launch: the message is built only when one fails (a string
// argument would allocate on every call, a visible share of a small copy's host time).
template <class... Parts>
void require(bool ok, Parts const&... what) {
  if (ok) return;
  std::string message;
  (append(message, what), ...);
  throw std::invalid_argument(message);
}

// What every kernel needs of a descriptor: a destination at least as large as the source, leading
// dimensions that cover the columns, real pointers.
void check_shape(CopyDesc const& d) {
  require(d.dst_rows >= d.rows && d.dst_cols >= d.cols, "destination smaller than the source");
  require(d.ld_src >= d.cols && d.ld_dst >= d.dst_cols, "leading dimension smaller than cols");
  require(d.src != 0 && d.dst != 0, "null pointer");
}

LaunchArgs to_args(CopyDesc const& d) {
  constexpr std::uint64_t kIntMax = 0x7fffffff;
  require(d.rows <= kIntMax && d.cols <= kIntMax && d.dst_rows <= kIntMax && d.dst_cols <= kIntMax,
          "shape does not fit in int");
  check_shape(d);
  return {reinterpret_cast<void const*>(d.src),
          reinterpret_cast<void*>(d.dst),
          static_cast<int>(d.rows),
          static_cast<int>(d.cols),
          static_cast<int>(d.dst_rows),
          static_cast<int>(d.dst_cols),
          static_cast<std::int64_t>(d.ld_src),
          static_cast<std::int64_t>(d.ld_dst),
          reinterpret_cast<cudaStream_t>(d.stream),
          (d.flags & 1u) == 0};
}

AtomRow const& row_of(std::uint32_t atom) {
  require(atom < static_cast<std::uint32_t>(AtomId::Count), "unknown atom ", atom);
  return kAtoms[atom];
}

void require_width(std::uint32_t w) {
  require(w == 1 || w == 2 || w == 4 || w == 8, "element width must be 1, 2, 4 or 8 bytes");
}

// The realign family's descriptor of one plain 2D copy (or pad): one item, no indices.
RowsDesc rows_of(CopyDesc const& d) {
  std::int64_t const w = d.elem_bytes;
  check_shape(d);
  require(d.src % w == 0 && d.dst % w == 0, "address not aligned to the element");
  RowsDesc r{};
  r.src = d.src;
  r.dst = d.dst;
  r.src_pitch = static_cast<std::int64_t>(d.ld_src) * w;
  r.dst_pitch = static_cast<std::int64_t>(d.ld_dst) * w;
  r.src_row_bytes = static_cast<std::int64_t>(d.cols) * w;
  r.dst_row_bytes = static_cast<std::int64_t>(d.dst_cols) * w;
  r.src_rows = static_cast<std::int64_t>(d.rows);
  r.dst_rows = static_cast<std::int64_t>(d.dst_rows);
  r.items = 1;
  r.index_bytes = 4;
  r.index_stride = 1;
  r.segs = realign_segments(r.dst_row_bytes);
  r.task_begin = 0;
  return r;
}

}  // namespace

void launch_copy(CopyDesc const& d) {
  AtomRow const& row = row_of(d.atom);
  require_width(d.elem_bytes);
  int width = static_cast<int>(d.elem_bytes);
  int bytes = row.bytes == 0 ? width : row.bytes;
  require(bytes >= width, row.name, " is narrower than the element");
  if (d.rows == 0 || d.cols == 0) return;
  require(row.family != FamilyId::transpose && row.family != FamilyId::convert,
          row.name, " runs tensor descriptors, not 2D copies");
  if (row.family == FamilyId::realign) {  // any alignment: only element alignment is required
    RowsDesc r = rows_of(d);
    launch_realign(static_cast<AtomId>(d.atom), width, r, nullptr, 0, realign_tasks(r), nullptr, 0, 0,
                   static_cast<int>(d.lean_threads), d.prefetch, reinterpret_cast<cudaStream_t>(d.stream));
    return;
  }
  require(d.src % bytes == 0 && d.dst % bytes == 0 && (d.ld_src * width) % bytes == 0 &&
              (d.ld_dst * width) % bytes == 0,
          row.name, ": base address or row pitch not aligned to the atom");
  LaunchArgs args = to_args(d);
  if (row.family == FamilyId::cp_async)
    launch_cp_async(static_cast<AtomId>(d.atom), width, args);
  else
    launch_universal(static_cast<AtomId>(d.atom), width, args);
}

void launch_rows(RowsDesc const& one, BatchLaunch const& b) {
  AtomRow const& row = row_of(b.atom);
  require(row.family == FamilyId::realign, row.name, " does not run row descriptors");
  require_width(b.elem_bytes);
  require(b.count > 0 && b.count <= 0x7fffffffu, "batch size must be 1 .. 2^31-1");
  require(b.descs != 0 || b.count == 1, "one descriptor by value, or an array in device memory");
  if (b.descs == 0) {  // one descriptor by value
    require(one.segs == realign_segments(one.dst_row_bytes) && one.task_begin == 0, "descriptor not planned");
    require(one.index_bytes == 4 || one.index_bytes == 8, "index width must be 4 or 8 bytes");
    require(b.tasks == realign_tasks(one), "task count does not match the descriptor");
    require(one.src_row_bytes <= one.dst_row_bytes && one.src_rows <= one.dst_rows, "destination smaller than the source");
  }
  launch_realign(static_cast<AtomId>(b.atom), static_cast<int>(b.elem_bytes), one,
                 b.descs == 0 ? nullptr : reinterpret_cast<RowsDesc const*>(b.descs), static_cast<int>(b.count),
                 b.tasks, reinterpret_cast<unsigned long long*>(b.status), b.src_base, b.dst_base,
                 static_cast<int>(b.lean_threads), b.prefetch, reinterpret_cast<cudaStream_t>(b.stream));
}

std::int64_t rows_segments(std::int64_t row_bytes) { return realign_segments(row_bytes); }


void launch_tensor(TensorDesc const& t) {
  AtomRow const& row = row_of(t.atom);
  require(row.family == FamilyId::transpose, row.name, " does not run tensor descriptors");
  require_width(t.elem_bytes);
  std::int64_t const w = t.elem_bytes;
  require(t.rank >= 1 && t.rank <= 6, "rank must be 1 .. 6");
  require(t.mode_a < t.rank && t.mode_b < t.rank, "tile modes outside the rank");
  TensorKind const kind = t.kind;
  bool const tiled = kind == TensorKind::Transpose || kind == TensorKind::Rows;
  bool const rows_regs = kind == TensorKind::RowsRegisters;
  bool const items = kind == TensorKind::Items;
  bool const in_registers = kind == TensorKind::NarrowRegisters || kind == TensorKind::NarrowLoadRegisters;
  bool const narrow = kind == TensorKind::Narrow || kind == TensorKind::NarrowRegisters;  // short store mode
  bool const narrow_load = kind == TensorKind::NarrowLoad || kind == TensorKind::NarrowLoadRegisters;
  require((tiled || narrow || narrow_load || rows_regs || items) &&
              (!(tiled || rows_regs) || t.mode_a != t.mode_b || t.rank == 1),
          "bad tensor copy kind");
  auto access_ok = [](Access x) { return x == Access::Element || x == Access::Vector || x == Access::Realigned; };
  require(access_ok(t.load) && access_ok(t.store), "bad access kind");
  require(t.src % w == 0 && t.dst % w == 0 && t.src != 0 && t.dst != 0, "address not aligned to the element");
  std::int64_t tiles = 1, cosize = 1;
  for (std::uint32_t m = 0; m < t.rank; ++m) {
    require(t.shape[m] >= 1 && t.src_stride[m] >= 0 && t.dst_stride[m] >= 0, "bad shape or stride");
    if (m != t.mode_a && m != t.mode_b) tiles *= t.shape[m];
    cosize += (t.shape[m] - 1) * t.src_stride[m];
  }
  // A realigned load reads whole vectors inside [src, src + src_span): the span must be the
  // source layout's (what Rust checked against the allocation).
  require(t.src_span == cosize * w, "source span does not match the layout");
  std::int64_t const ta = t.tile_a, tb = t.tile_b;
  require(ta >= 1 && tb >= 1, "empty tile");
  std::int64_t const v = 16 / w;
  ConfigValues const c = config_transpose(static_cast<AtomId>(t.atom), static_cast<int>(w));
  if (items) {
    // mode 0 counts items; the others are one compact item of tb elements on each side
    require(t.mode_a == 0 && t.mode_b == 0 && t.rank >= 2, "items: mode 0 is the item mode");
    require(t.src_stride[0] == tb && t.dst_stride[0] == tb, "items: items do not follow each other");
    auto compact = [&](std::int64_t const* stride) {
      std::int64_t seen = 1;  // product of the shapes whose strides were matched so far
      for (std::uint32_t k = 1; k < t.rank; ++k) {
        bool found = false;
        for (std::uint32_t m = 1; m < t.rank && !found; ++m)
          if (stride[m] == seen && t.shape[m] > 1) { seen *= t.shape[m]; found = true; }
        if (!found) break;
      }
      return seen == tb;
    };
    require(compact(t.src_stride.data()) && compact(t.dst_stride.data()), "items: an item is not compact");
    // The items kernel's dynamic shared memory: a run of at most 32 KiB and the u16 permutation of an
    // item of at most 4096 elements, under the 48 KiB a launch may take without opting in.
    require(tb <= 4096 && ta * tb * w <= 32768, "items: tile does not fit the stage");
    require(t.tiles == (t.shape[0] + ta - 1) / ta, "tile count does not match the shape");
    require(t.load != Access::Element && t.store != Access::Element, "items: runs are accessed by vectors");
  } else {
    require(t.tiles_a == (t.shape[t.mode_a] + ta - 1) / ta, "tiles along a do not match the shape");
    std::int64_t const eb = t.mode_a == t.mode_b ? 1 : t.shape[t.mode_b];
    require(t.tiles_b == (eb + tb - 1) / tb, "tiles along b do not match the shape");
    require(t.tiles == tiles * t.tiles_a * t.tiles_b, "tile count does not match the shape");
  }
  if (in_registers || rows_regs) {  // registers as the stage: 16-byte accesses on both sides
    // (a narrow tile's rows may also be realigned: its run is the aligned side)
    bool const load_ok = t.load == Access::Vector || (kind == TensorKind::NarrowRegisters && t.load == Access::Realigned);
    bool const store_ok =
        t.store == Access::Vector || (kind == TensorKind::NarrowLoadRegisters && t.store == Access::Realigned);
    require(load_ok && store_ok, "tiles in registers need 16-byte loads and stores");
  }
  if (in_registers) {  // narrow tiles with registers as the stage: 2 .. 8 short rows
    require((narrow ? tb : ta) >= 2 && (narrow ? tb : ta) <= 8, "narrow tiles in registers have 2 .. 8 rows");
  }
  std::int64_t const pad = t.load == Access::Realigned ? 16 : 0;  // a realigned stage holds the grid's extra vector
  if (rows_regs) {
    require(ta % v == 0 && ta * w <= 2048 && ta * tb * w <= 65536, "rows in registers: tile too large");
  } else if (narrow) {
    require(t.mode_a != t.mode_b && tb == t.shape[t.mode_b] && t.tiles_b == 1, "narrow: the tile holds all of b");
    require(ta % v == 0 && tb * (ta * w + pad) <= c.smem_bytes, "narrow: tile does not fit the stage");
    require(t.dst_stride[t.mode_b] == 1 && t.dst_stride[t.mode_a] == tb, "narrow: destination tile is not one run");
  } else if (narrow_load) {
    require(t.mode_a != t.mode_b && ta == t.shape[t.mode_a] && t.tiles_a == 1, "narrow load: the tile holds all of a");
    require(tb % v == 0 && ta * tb * w + pad <= c.smem_bytes, "narrow load: tile does not fit the stage");
    require(t.src_stride[t.mode_a] == 1 && t.src_stride[t.mode_b] == ta, "narrow load: source tile is not one run");
  } else if (tiled) {
    // realigned loads: one vector narrower than the stage (transpose.cu, realigned_load)
    std::int64_t const want_a = t.load == Access::Realigned ? c.tile_n - v : c.tile_n;
    require(ta == want_a && tb == c.tile_m, "tile is not the compiled one");
  }
  // 16-byte accesses: unit stride along the access, every other stride a whole number of vectors.
  // Realigned ones need the unit stride only. (A narrow tile stores one run: the stride of mode a
  // inside it does not matter; an items tile is one run on each side.)
  auto legal = [&](Access x, std::uint64_t base, std::int64_t const* stride, std::uint32_t unit, std::uint32_t skip) {
    if (x == Access::Element || items) return true;
    bool ok = stride[unit] == 1;
    if (x == Access::Realigned) return ok;
    ok = ok && base % 16 == 0;
    for (std::uint32_t m = 0; m < t.rank; ++m) ok = ok && (m == unit || m == skip || stride[m] % v == 0);
    return ok;
  };
  bool const rows_store = kind == TensorKind::Rows || rows_regs;
  require(legal(t.load, t.src, t.src_stride.data(), t.mode_a, narrow_load ? t.mode_b : t.mode_a),
          "vector loads need a unit-stride (and, unrealigned, 16-byte-aligned) source");
  require(legal(t.store, t.dst, t.dst_stride.data(), rows_store ? t.mode_a : t.mode_b, narrow ? t.mode_a : t.mode_b),
          "vector stores need a unit-stride (and, unrealigned, 16-byte-aligned) destination");
  launch_transpose(static_cast<AtomId>(t.atom), static_cast<int>(w), t);
}


int scalar_width(Scalar s) {
  switch (s) {
#define CUTE_COPY_SCALAR(name, bytes, type) \
  case Scalar::name: return bytes;
#include "menu.def"
    default: break;
  }
  throw std::invalid_argument("unknown scalar type " + std::to_string(static_cast<unsigned>(s)));
}

void launch_convert(ConvertDesc const& t) {
  int const sw = scalar_width(t.src_type), dw = scalar_width(t.dst_type);
  require(t.rank >= 1 && t.rank <= 6, "rank must be 1 .. 6");
  require(t.mode_a < t.rank && t.mode_b < t.rank, "tile modes outside the rank");
  require(t.src % sw == 0 && t.dst % dw == 0 && t.src != 0 && t.dst != 0, "address not aligned to the element");
  bool const indexed = t.src_index != 0 || t.dst_index != 0;
  if (indexed) {
    require(t.kind == ConvertKind::Elementwise && t.rank >= 2, "index-driven: elementwise over items and a row");
    require((t.index_bytes == 4 || t.index_bytes == 8) && t.index_stride >= 1 && t.status != 0 &&
                t.src_index % t.index_bytes == 0 && t.dst_index % t.index_bytes == 0,
            "index-driven: indices of 4 or 8 bytes, aligned, and a status buffer");
    require(t.src_items >= 0 && t.dst_items >= 0 && (t.src_index != 0 || t.src_items >= t.shape[0]) &&
                (t.dst_index != 0 || t.dst_items >= t.shape[0]),
            "index-driven: item counts");
  }
  // The source span: of `src_items` items along mode 0 when the source is indexed.
  std::int64_t cosize = 1, others = 1, rows = 1;
  for (std::uint32_t m = 0; m < t.rank; ++m) {
    require(t.shape[m] >= 1 && t.src_stride[m] >= 0 && t.dst_stride[m] >= 0, "bad shape or stride");
    std::int64_t const extent = m == 0 && t.src_index != 0 ? t.src_items : t.shape[m];
    cosize += (extent - 1) * t.src_stride[m];
    if (m != t.mode_a && m != t.mode_b) others *= t.shape[m];
    if (m + 1 < t.rank) rows *= t.shape[m];
  }
  if (t.src_index != 0 && t.src_items == 0) cosize = 0;
  require(t.src_span == cosize * sw, "source span does not match the layout");
  require(t.affine <= 1, "bad affine flag");
  if (t.affine) {
    require(t.channels >= 1 && (t.channels <= 16 || t.params != 0), "channel coefficients missing");
    require(t.chan_mode == -1 || (t.chan_mode >= 0 && static_cast<std::uint32_t>(t.chan_mode) < t.rank &&
                                  t.chan_div >= 1 && t.shape[t.chan_mode] % t.chan_div == 0 &&
                                  (t.shape[t.chan_mode] / t.chan_div) % t.channels == 0),
            "channel mode does not divide its mode");
  }
  require(t.blocks >= 1 && t.blocks <= 0x7fffffff, "block count outside 1 .. 2^31-1");
  if (t.kind == ConvertKind::Elementwise) {
    std::uint32_t const last = t.rank - 1;
    require(t.mode_a == last && t.mode_b == last, "elementwise: the last mode is the fastest");
    require(t.chunk == 32 / (sw < dw ? sw : dw), "chunk is not the compiled one");
    require(t.rows == rows, "rows do not match the shape");
    std::int64_t const phase = t.dst_stride[last] == 1 ? 16 / dw - 1 : 0;
    require(t.chunks_per_row == (t.shape[last] + phase + t.chunk - 1) / t.chunk, "chunks per row do not match");
    require(t.blocks == (t.rows * t.chunks_per_row + 511) / 512, "block count does not match");
  } else if (t.kind == ConvertKind::Gather) {
    // convert.cu's gather kernel: a compact destination, modes slowest first (element e of the
    // copy is destination element e), fewer than 2^31 - 2^10 elements (int indices); `rows` is
    // the element count, `chunks_per_row` the destination's 16-byte vectors with room for any
    // 16-byte phase (the kernel launches the ones its own phase needs), kGatherUnits (2) of them
    // a thread.
    std::uint32_t const last = t.rank - 1;
    require(t.mode_a == last && t.mode_b == last, "gather: the last mode is the destination's fastest");
    std::int64_t n = 1, expect = 1;
    for (std::uint32_t i = 0; i < t.rank; ++i) {
      std::uint32_t const m = last - i;
      require(t.dst_stride[m] == expect, "gather: the destination is not compact in the modes' order");
      expect *= t.shape[m];
      n *= t.shape[m];
      require(n <= (std::int64_t{1} << 31) - 1024, "gather: 2^31 - 2^10 elements at most");
    }
    require(!t.affine || t.chan_mode == -1 || (t.chan_div <= 0x7fffffff && t.channels <= 0x7fffffff), "gather: channel divisors");
    std::int64_t const v = 16 / dw;
    require(t.rows == n && t.chunks_per_row == (n + 2 * (v - 1)) / v, "gather: element or vector count does not match");
    require(t.chunk == 1 || t.chunk == v, "gather: coordinates divided per element (1) or per vector");
    require(t.blocks == (t.chunks_per_row + 511) / 512, "gather: block count does not match");
  } else if (t.kind == ConvertKind::Channels) {
    // convert.cu's channels kernel: a short channel mode a (2..16) unit-stride on one side, the
    // pixel mode b stepping over the channels there (>= C on the source, C on the destination)
    // and unit-stride on the other side; the stage holds the source side of a tile_a-pixel tile.
    std::uint32_t const c = t.mode_a, w = t.mode_b;
    std::int64_t const C = t.shape[c];
    require(c != w && C >= 2 && C <= 16, "channels: a channel mode of 2 to 16 and a pixel mode");
    bool const src_il = t.src_stride[c] == 1 && t.dst_stride[w] == 1 && t.src_stride[w] >= C && t.src_stride[w] * sw <= 64;
    bool const dst_il = t.dst_stride[c] == 1 && t.src_stride[w] == 1 && t.dst_stride[w] == C;
    require(src_il != dst_il, "channels: one side interleaved (c, w):(1, >= C), the other planar (w unit-stride)");
    require(t.tile_a >= 1 && t.tile_a <= t.shape[w], "channels: pixels a tile");
    // tile_b: the stage, 0 shared memory, 1 registers (convert_channels_regs)
    require(t.tile_b == 0 || t.tile_b == 1, "channels: a stage of 0 (shared memory) or 1 (registers)");
    if (t.tile_b == 1) {
      // 3 or 4 packed channels on the interleaved side, int tile offsets; an interleaved source:
      // a destination vector's pixels in 64 bytes or fewer, every plane at one 16-byte phase (the
      // kernel's whole-vector stores); an interleaved destination: a group's pixels (the fewest
      // whole pixels that fill whole vectors, one more of each plane) in 128 bytes or fewer
      require(C == 3 || C == 4, "channels in registers: 3 or 4 channels");
      require(sw <= 4 && (dw == 2 || dw == 4), "channels in registers: sources of 1 to 4 bytes, destinations of 2 or 4");
      require(t.tile_a <= (std::int64_t{1} << 20), "channels in registers: more than 2^20 pixels a tile");
      if (src_il) {
        require(t.src_stride[w] == C, "channels in registers: a source pixel of other than C elements");
        require((16 / dw) * C * sw <= 64, "channels in registers: a vector's pixels over 64 source bytes");
        require((t.dst_stride[c] * dw) % 16 == 0, "channels in registers: planes not whole 16-byte vectors apart");
      } else {
        std::int64_t g = 16;
        while ((C * dw) % g != 0) g /= 2;
        require((16 / g + 1) * sw * C <= 128, "channels in registers: a group's pixels over 128 source bytes");
      }
    } else {
      std::int64_t const stage = src_il ? (15 + ((t.tile_a - 1) * t.src_stride[w] + C) * sw + 15) / 16 * 16
                                        : C * 16 * (((t.tile_a * sw + 30) / 16) | 1);
      require(stage <= 16384, "channels: the tile's source does not fit the 16 KiB stage");
    }
    require(!t.affine || t.chan_mode != static_cast<std::int32_t>(w), "channels: a channel along the pixel mode");
    require(t.tiles_a == (t.shape[w] + t.tile_a - 1) / t.tile_a && t.blocks == t.tiles_a * others,
            "channels: tile count does not match the shape");
  } else {
    require(t.kind == ConvertKind::Tile && t.mode_a != t.mode_b, "tile: two different modes");
    auto pow2 = [](std::int64_t x) { return x >= 1 && (x & (x - 1)) == 0; };
    // A wide tile (16384 elements, 4096 a side) only where both sides go by vectors: the strided
    // load and store paths hold 16 elements per thread (convert.cu kPer).
    bool const wide = t.src_stride[t.mode_a] == 1 && t.dst_stride[t.mode_b] == 1;
    std::int64_t const elems = wide ? 16384 : 4096, side = wide ? 4096 : 1024;
    require(pow2(t.tile_a) && pow2(t.tile_b) && t.tile_a * t.tile_b <= elems && t.tile_a <= side && t.tile_b <= side,
            "tile: powers of two, 4096 elements and 1024 a side (16384 and 4096 when both sides go by vectors)");
    require(t.tiles_a == (t.shape[t.mode_a] + t.tile_a - 1) / t.tile_a &&
                t.tiles_b == (t.shape[t.mode_b] + t.tile_b - 1) / t.tile_b &&
                t.blocks == t.tiles_a * t.tiles_b * others,
            "tile count does not match the shape");
  }
  launch_convert_family(sw, dw, t);
}

void launch_tutorial(CopyDesc const& d) {
  require(d.elem_bytes == 4, "the tutorial copy is f32 only");
  require(d.dst_rows == d.rows && d.dst_cols == d.cols, "the tutorial copy does not pad");
  if (d.rows == 0 || d.cols == 0) return;
  launch_tutorial_kernel(to_args(d));
}

void launch_empty(std::uint64_t stream) { launch_empty_kernel(reinterpret_cast<cudaStream_t>(stream)); }

KernelConfig kernel_config(std::uint32_t atom, std::uint32_t elem_bytes) {
  AtomRow const& row = row_of(atom);
  require_width(elem_bytes);
  AtomId id = static_cast<AtomId>(atom);
  int w = static_cast<int>(elem_bytes);
  ConfigValues v = row.family == FamilyId::cp_async    ? config_cp_async(id, w)
                   : row.family == FamilyId::realign   ? config_realign(id, w)
                   : row.family == FamilyId::transpose ? config_transpose(id, w)
                   : row.family == FamilyId::convert   ? config_convert(id, w)
                                                       : config_universal(id, w);
  KernelConfig c;
  c.threads = v.threads;
  c.thr_m = v.thr_m;
  c.thr_n = v.thr_n;
  c.val_m = v.val_m;
  c.val_n = v.val_n;
  c.tile_m = v.tile_m;
  c.tile_n = v.tile_n;
  c.smem_bytes = v.smem_bytes;
  return c;
}

std::int32_t runtime_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" / "no device" status
    return 0;
  }
  return n;
}

}  // namespace cute_copy
