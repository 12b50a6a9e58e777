//! The convert family's Rust half (its kernel is `cpp/kernels/convert.cu`): copies that change the
//! element type on the way, and may scale or normalize per channel, between layouts of any rank.
//! The conversion rule ([`conversion`]), the pure plan ([`ConvertPlan`]: coalescing, route, tile,
//! accesses per side, reasons) and the descriptor builder. Pure: no bridge call.
//!
//! What a converted element is (`y` of source element `x`, `c` its channel):
//! - without a scale or normalization: `y = D(x)` by the pair's [`ConvertRule`];
//! - with them: `y = D((x - mean[c]) * mul[c])`, `mul[c] = (1 / std[c]) * scale`, both in f32,
//!   computed in f32 (in f64 when either side is f64), then converted to `D` as an f32 (f64)
//!   would be.

use std::fmt;

use crate::error::{Error, Result};
use crate::ffi::{ConvertDesc, ConvertKind, Scalar};
use crate::layout::{coalesce_modes, Layout, MAX_RANK};
use crate::{Atom, DType, KernelConfig};

/// Threads per block of the convert kernels (`kThreads` in cpp/kernels/convert.cu).
const THREADS: usize = 256;
/// Chunks each thread of the elementwise kernel converts (`kUnroll`).
const UNROLL: usize = 2;
/// Elements of one tile of the tile kernel (`kTileElems`): 16 per thread.
const TILE_ELEMS: usize = 4096;
/// The longest side of a tile (`kMaxTileSide`): the shared-memory stage stays under 48 KiB.
const MAX_TILE_SIDE: usize = 1024;
/// Elements of a wide tile: a short mode's tile when both sides go by 16-byte vectors (the
/// source's mode a and the destination's mode b unit-stride; dispatch.cu checks it). The strided
/// load and store paths hold [`TILE_ELEMS`] at most.
const WIDE_TILE_ELEMS: usize = 16384;
/// The longest side of a wide tile.
const MAX_WIDE_TILE_SIDE: usize = 4096;
/// The shared-memory stage a wide tile may take: 48 KiB, so that four blocks still fit on an SM.
const WIDE_STAGE_BYTES: usize = 48 << 10;
/// Destination vectors each thread of the gather route converts (`kGatherUnits`).
const GATHER_UNITS: usize = 2;
/// The most elements the gather route takes: its kernel indexes elements in 32 bits.
const GATHER_MAX_ELEMS: usize = (1 << 31) - 1024;
/// The gather route's locality: the source step (bytes) along a destination mode that counts as
/// short, so that the elements a warp loads for one slot of its vectors lie a few sectors apart.
const GATHER_SOURCE_STEP: usize = 16;
/// The most elements of the destination's fastest modes the gather route walks before a mode of a
/// short source step (the channels of a pixel, the 3 x 5 of a tiny matrix).
const GATHER_SHORT_MODES: usize = 16;
/// Channels whose mean and multiplier travel in the descriptor; more go through a device array.
pub const CHANNELS_BY_VALUE: usize = 16;

/// The convert kernels' configuration as the engine's [`KernelConfig`]: 256 threads as (8, 32),
/// one 16-byte vector of the element (value layout (1, 16 / width)) per access, one TiledCopy
/// step of (8, 512 / width) elements as the tile (the tile kernel's shared-memory tile is sized
/// per copy: [`ConvertRoute::Tile`]).
pub(crate) fn config(dtype: DType) -> KernelConfig {
    let w = dtype.size_bytes();
    KernelConfig {
        threads: THREADS,
        thr_layout: (8, 32),
        val_layout: (1, 16 / w),
        tile: (8, 512 / w),
        smem_bytes: 0,
    }
}

/// How one source element becomes one destination element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvertRule {
    /// Every source value is a destination value (widening: f16 -> f32, u8 -> i16, f8 -> bf16).
    Exact,
    /// IEEE round to nearest, ties to even; overflow becomes an infinity, NaN stays NaN (f32 -> f16
    /// / bf16 as the `half` crate and torch do, f64 -> f32, i32 -> f32).
    NearestEven,
    /// Round to nearest even and saturate to the largest finite value (infinities too), NaN stays
    /// NaN: the FP8 formats as PTX `cvt.rn.satfinite` and TransformerEngine do. (torch's
    /// `.to(float8_e4m3fn)` instead turns values past 448 into NaN.)
    NearestEvenSatFinite,
    /// Integer narrowing or a change of signedness: clamped to the destination's range
    /// (`-3i32 -> 0u8`, `300u16 -> 255u8`), where torch and C would wrap.
    Saturate,
    /// Float to integer: round to nearest even, clamp to the range, NaN -> 0 (PTX `cvt.rni.sat`).
    NearestEvenSaturate,
}

impl ConvertRule {
    /// The rule in words, for plans and docs.
    pub fn text(self) -> &'static str {
        match self {
            ConvertRule::Exact => "exact: every source value is a destination value",
            ConvertRule::NearestEven => {
                "IEEE round to nearest even, overflow to infinity, NaN stays NaN"
            }
            ConvertRule::NearestEvenSatFinite => {
                "round to nearest even, saturated to the largest finite value (infinities too), NaN stays NaN (PTX cvt.rn.satfinite)"
            }
            ConvertRule::Saturate => {
                "integers clamped to the destination's range (not wrapped as torch and C do)"
            }
            ConvertRule::NearestEvenSaturate => {
                "round to nearest even, clamped to the integer range, NaN -> 0 (PTX cvt.rni.sat)"
            }
        }
    }
}

/// Bits of precision (mantissa + 1) and largest finite binary exponent of a float dtype.
fn float_format(d: DType) -> (u32, i32) {
    match d {
        DType::F64 => (53, 1023),
        DType::F32 => (24, 127),
        DType::F16 => (11, 15),
        DType::BF16 => (8, 127),
        DType::F8E4M3 => (4, 8),
        DType::F8E5M2 => (3, 15),
        _ => (0, 0),
    }
}

/// Value bits of an integer dtype (sign excluded) and whether it is signed.
fn int_bits(d: DType) -> u32 {
    8 * d.size_bytes() as u32 - u32::from(d.is_signed())
}

/// How `src` converts to `dst`, or [`Error::UnsupportedConversion`]. Every pair of the 14 dtypes
/// converts except 64-bit integers to 16- and 8-bit floats and 32-bit integers to 8-bit floats
/// (their host references would round twice; convert through f32 or f64 instead).
///
/// ```
/// use cute_copy::{conversion, ConvertRule, DType};
/// assert_eq!(conversion(DType::F16, DType::F32).unwrap(), ConvertRule::Exact);
/// assert_eq!(conversion(DType::F32, DType::BF16).unwrap(), ConvertRule::NearestEven);
/// assert_eq!(conversion(DType::F16, DType::F8E4M3).unwrap(), ConvertRule::NearestEvenSatFinite);
/// assert_eq!(conversion(DType::I32, DType::U8).unwrap(), ConvertRule::Saturate);
/// assert!(conversion(DType::I64, DType::F16).is_err());
/// ```
pub fn conversion(src: DType, dst: DType) -> Result<ConvertRule> {
    let refuse = Err(Error::UnsupportedConversion { src, dst });
    if src == dst {
        return Ok(ConvertRule::Exact);
    }
    Ok(match (src.is_float(), dst.is_float()) {
        (true, true) => {
            let ((ps, es), (pd, ed)) = (float_format(src), float_format(dst));
            if ps <= pd && es <= ed {
                ConvertRule::Exact
            } else if matches!(dst, DType::F8E4M3 | DType::F8E5M2) {
                ConvertRule::NearestEvenSatFinite
            } else {
                ConvertRule::NearestEven
            }
        }
        (false, true) => {
            let bytes = src.size_bytes();
            let fp8 = matches!(dst, DType::F8E4M3 | DType::F8E5M2);
            if (bytes == 8 && dst.size_bytes() < 4) || (bytes == 4 && fp8) {
                return refuse;
            }
            let (p, _) = float_format(dst);
            if int_bits(src) <= p && !fp8 {
                ConvertRule::Exact
            } else if fp8 {
                ConvertRule::NearestEvenSatFinite
            } else {
                ConvertRule::NearestEven
            }
        }
        (true, false) => ConvertRule::NearestEvenSaturate,
        (false, false) => {
            let widening =
                dst.size_bytes() > src.size_bytes() && (dst.is_signed() || !src.is_signed());
            let same_sign_wider =
                dst.size_bytes() >= src.size_bytes() && dst.is_signed() == src.is_signed();
            if widening || same_sign_wider {
                ConvertRule::Exact
            } else {
                ConvertRule::Saturate
            }
        }
    })
}

/// What a converting copy does besides the type change: a per-tensor scale and a per-channel
/// normalization, `y = D((x - mean[c]) / std[c] * scale)` (torchvision's `Normalize`, then a
/// scale), computed as described in the module documentation.
///
/// ```
/// use cute_copy::Convert;
/// // u8 NHWC frames to normalized f32: the channel is mode 3 of the copy's shape
/// let imagenet = Convert::new()
///     .scale(1.0)
///     .normalize(3, &[123.675, 116.28, 103.53], &[58.395, 57.12, 57.375]);
/// assert!(!imagenet.is_identity());
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Convert {
    scale: Option<f32>,
    normalize: Option<(usize, Vec<f32>, Vec<f32>)>,
}

impl Convert {
    /// A plain conversion: no scale, no normalization.
    pub fn new() -> Convert {
        Convert::default()
    }

    /// Multiply every value by `scale` (after the normalization, before the conversion): an FP8
    /// quantization scale, or its inverse to dequantize.
    pub fn scale(mut self, scale: f32) -> Convert {
        self.scale = Some(scale);
        self
    }

    /// Subtract `mean[c]` and divide by `std[c]`, `c` the coordinate along `mode` of the copy's
    /// shape (its extent must be the lists' length).
    pub fn normalize(mut self, mode: usize, mean: &[f32], std: &[f32]) -> Convert {
        self.normalize = Some((mode, mean.to_vec(), std.to_vec()));
        self
    }

    /// Neither a scale nor a normalization.
    pub fn is_identity(&self) -> bool {
        self.scale.is_none() && self.normalize.is_none()
    }

    /// The channel mode, if the values are normalized per channel.
    pub fn channel_mode(&self) -> Option<usize> {
        self.normalize.as_ref().map(|n| n.0)
    }

    /// The per-channel `(mean, mul)` the kernels use, `mul[c] = (1 / std[c]) * scale` in f32 (one
    /// channel of mean 0 for a scale alone), or `None` for a plain conversion; checked against
    /// the copy's `shape`.
    pub fn coefficients(&self, shape: &[usize]) -> Result<Option<(Vec<f32>, Vec<f32>)>> {
        let scale = self.scale.unwrap_or(1.0);
        if !scale.is_finite() {
            return Err(Error::Normalize(format!("the scale {scale} is not finite")));
        }
        let Some((mode, mean, std)) = &self.normalize else {
            return Ok(self.scale.map(|s| (vec![0.0], vec![s])));
        };
        let Some(&extent) = shape.get(*mode) else {
            return Err(Error::Normalize(format!(
                "channel mode {mode} is outside the rank {} of {shape:?}",
                shape.len()
            )));
        };
        if mean.len() != extent || std.len() != extent {
            return Err(Error::Normalize(format!(
                "mode {mode} has {extent} channels but mean has {} and std {} values",
                mean.len(),
                std.len()
            )));
        }
        let mut mul = Vec::with_capacity(extent);
        for (&m, &s) in mean.iter().zip(std) {
            let inv = 1.0f32 / s;
            if !m.is_finite() || !inv.is_finite() || s == 0.0 {
                return Err(Error::Normalize(format!(
                    "mean {m} and std {s} do not normalize (zero or non-finite)"
                )));
            }
            mul.push(inv * scale);
        }
        Ok(Some((mean.clone(), mul)))
    }
}

/// How a converting copy runs.
#[derive(Clone, Debug, PartialEq)]
pub enum ConvertRoute {
    /// A zero extent: nothing to convert, nothing launched.
    Empty,
    /// Both sides step through the last coalesced mode fastest: a thread converts a chunk of
    /// `chunk` consecutive elements of one row (32 bytes of the narrower type).
    Elementwise {
        /// Elements per thread chunk.
        chunk: usize,
        /// Rows (the product of every mode but the last) and chunks per row.
        rows: usize,
        /// Chunks per row (the destination's 16-byte phase included).
        chunks_per_row: usize,
        /// Source: 16-byte loads (aligned, or realigned where a row's phase differs) or elements.
        vector_load: bool,
        /// Destination: 16-byte stores (each row's first and last partial vectors by element)
        /// or elements.
        vector_store: bool,
        /// Blocks of the launch.
        blocks: usize,
    },
    /// The fastest modes differ (a transpose or permute that converts): a tile of
    /// `tile.1 x tile.0` elements (mode `mode_b` x mode `mode_a`) staged in shared memory in the
    /// destination type, loaded along `mode_a`, stored along `mode_b`.
    Tile {
        /// The source's fastest mode (the loads walk it).
        mode_a: usize,
        /// The destination's fastest mode (the stores walk it).
        mode_b: usize,
        /// Tile extents along `mode_a` and `mode_b` (powers of two, product 4096 at most; 16384
        /// for a wide tile, see [`ConvertPlan::reasons`]).
        tile: (usize, usize),
        /// Tiles along `mode_a`, along `mode_b`, and in all.
        tiles: (usize, usize, usize),
    },
    /// A compact destination (its modes, slowest first, are the coalesced modes): aligned
    /// 16-byte destination vectors, 2 a thread (`kGatherUnits`), each element loaded alone from
    /// its coordinates' source offset and converted in registers.
    Gather {
        /// Destination vectors (16 bytes) with room for the destination's 16-byte phase.
        vectors: usize,
        /// The destination's fastest modes (coalesced, innermost last) walked before the first
        /// with a short source step, and that mode: `(inner elements, mode)`.
        locality: (usize, usize),
        /// Each element's coordinates divided out of its own index (`true`: no carries; where
        /// the destination's fastest mode is under two 16-byte vectors and not a whole number of
        /// them, so steps would carry inside most vectors), or divided once a vector and
        /// stepped from there.
        divided: bool,
        /// Blocks of the launch.
        blocks: usize,
    },
    /// A short channel mode side by side on one side (`(c, w):(1, S)`: NHWC, a pixel's channels
    /// together) and planar on the other (`w` unit-stride: NCHW or a crop of it): a block converts
    /// a `channels x tile` tile, the source's bytes staged as they lie (aligned 16-byte vectors,
    /// each run at its own 16-byte phase), the destination's aligned 16-byte vectors gathered from
    /// the stage, converted and stored whole.
    Channels {
        /// The channel mode (2 to [`MAX_CHANNELS`] channels, unit-stride on its interleaved side).
        channel_mode: usize,
        /// The pixel mode (unit-stride on the planar side).
        pixel_mode: usize,
        /// Which side holds a pixel's channels side by side.
        interleaved: Interleaved,
        /// Where a tile's source waits between its loads and its stores.
        stage: ChannelStage,
        /// Pixels a tile.
        tile: usize,
        /// Tiles along the pixel mode, and in all (every coordinate of the other modes).
        tiles: (usize, usize),
    },
}

/// What a converting copy will run, and why (`Display`). Pure: built from the layouts, the two
/// dtypes and the [`Convert`] spec only.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertPlan {
    /// Source element type.
    pub src_dtype: DType,
    /// Destination element type.
    pub dst_dtype: DType,
    /// The layouts as given.
    pub src: Layout,
    /// The destination layout as given.
    pub dst: Layout,
    /// Both layouts after coalescing, modes in the order the kernel sees them.
    pub coalesced: (Layout, Layout),
    /// How each element converts.
    pub rule: ConvertRule,
    /// The per-channel `(mean, mul)` (see [`Convert::coefficients`]), `None` for a plain
    /// conversion.
    pub coefficients: Option<(Vec<f32>, Vec<f32>)>,
    /// The channel among the coalesced modes: `(mode, div)`, the channel of coordinate `x` along
    /// that mode being `(x / div) % channels`; `None` when every element has channel 0.
    pub channel: Option<(usize, usize)>,
    /// The route and its launch.
    pub route: ConvertRoute,
    /// Index-driven copies ([`convert_gather_rows`](crate::convert_gather_rows) and its
    /// siblings): what the indices address, `None` for a layout-to-layout copy.
    pub indexed: Option<ItemIndex>,
}

/// What the indices of an index-driven converting copy address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// `dst[i] = src[indices[i]]`: one index per destination item.
    Gather,
    /// `dst[indices[i]] = src[i]`: one index per source item.
    Scatter,
    /// `dst[pairs[2k + 1]] = src[pairs[2k]]`: a block table of (source, destination) pairs.
    BlockTable,
}

impl IndexKind {
    fn name(self) -> &'static str {
        match self {
            IndexKind::Gather => "row gather",
            IndexKind::Scatter => "row scatter",
            IndexKind::BlockTable => "block copy",
        }
    }
    /// Entries per item in the index array.
    fn stride(self) -> usize {
        if self == IndexKind::BlockTable {
            2
        } else {
            1
        }
    }
}

/// The items of an index-driven converting copy: an item is `block_rows` consecutive entries of
/// mode 0 of a view (a row of a matrix, a `[block_size, heads, head_dim]` block of a paged pool),
/// and mode 0 of the plan's coalesced layouts walks the items of the launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemIndex {
    /// What the indices address.
    pub kind: IndexKind,
    /// Entries of mode 0 per item (1 for a row gather or scatter).
    pub block_rows: usize,
    /// Items the launch walks: one per index (a gather: the destination's items; a scatter: the
    /// source's), or one per block-table pair.
    pub items: usize,
    /// Whole items of the source and of the destination: an index at or past its side's count
    /// is skipped and counted in the [`IndexStatus`](crate::IndexStatus).
    pub src_items: usize,
    /// Whole items of the destination.
    pub dst_items: usize,
    /// Bytes per index (4: `i32`, 8: `i64`).
    pub index_bytes: usize,
}

impl ItemIndex {
    /// Whether the source's items are looked up (else item `i` is the source's item `i`).
    pub fn source_indexed(&self) -> bool {
        self.kind != IndexKind::Scatter
    }
    /// Whether the destination's items are looked up.
    pub fn destination_indexed(&self) -> bool {
        self.kind != IndexKind::Gather
    }
}

/// The elementwise route over coalesced `shape` with strides `ss` / `ds` (the last mode fastest
/// on both sides): chunks of 32 bytes of the narrower type, each row's chunks phased to the
/// destination's 16-byte grid.
fn elementwise_route(
    src_dtype: DType,
    dst_dtype: DType,
    shape: &[usize],
    ss: &[usize],
    ds: &[usize],
) -> ConvertRoute {
    let r = shape.len();
    let (sw, dw) = (src_dtype.size_bytes(), dst_dtype.size_bytes());
    let chunk = 32 / sw.min(dw);
    let n = shape[r - 1];
    let vector_store = ds[r - 1] == 1;
    let phase = if vector_store { 16 / dw - 1 } else { 0 };
    let rows: usize = shape[..r - 1].iter().product();
    let chunks_per_row = (n + phase).div_ceil(chunk);
    let blocks = (rows * chunks_per_row).div_ceil(THREADS * UNROLL);
    ConvertRoute::Elementwise {
        chunk,
        rows,
        chunks_per_row,
        vector_load: ss[r - 1] == 1,
        vector_store,
        blocks,
    }
}

/// The gather route over coalesced `shape` with strides `ss` / `ds` (modes in the destination's
/// order, slowest first), when it applies: a compact destination (the last mode unit-stride, each
/// mode stepping over the faster ones), fewer than [`GATHER_MAX_ELEMS`] elements, and loads that
/// stay local: walking the destination's modes from the fastest, a mode whose source step is
/// [`GATHER_SOURCE_STEP`] bytes or less comes within [`GATHER_SHORT_MODES`] elements.
fn gather_route(
    shape: &[usize],
    ss: &[usize],
    ds: &[usize],
    (sw, dw): (usize, usize),
) -> Option<ConvertRoute> {
    let r = shape.len();
    let n: usize = shape.iter().product();
    if n > GATHER_MAX_ELEMS {
        return None;
    }
    let mut expect = 1;
    for m in (0..r).rev() {
        if ds[m] != expect {
            return None;
        }
        expect *= shape[m];
    }
    let mut inner = 1;
    let mut k = r - 1;
    while ss[k] * sw > GATHER_SOURCE_STEP {
        inner *= shape[k];
        if inner > GATHER_SHORT_MODES || k == 0 {
            return None;
        }
        k -= 1;
    }
    let v = 16 / dw;
    let vectors = (n + 2 * (v - 1)) / v;
    Some(ConvertRoute::Gather {
        vectors,
        locality: (inner, k),
        divided: gather_divides(shape[r - 1], dw),
        blocks: vectors.div_ceil(THREADS * GATHER_UNITS),
    })
}

/// Whether the gather divides every element's coordinates out of its own index instead of
/// dividing once a vector and stepping: when the destination's fastest mode (`fastest` elements,
/// coalesced) is shorter than two vectors and not a whole number of them, a step crosses its end
/// inside most vectors, and each lane's carry into the slower modes falls at its own element, so
/// the warp runs every lane's carry in turn. Measured on an H100 (`docs/convert-tuning.md`
/// 2026-12-07 (7), `cute-copy tensor --run`, x D2D, stepped -> divided): f32 [131072,3,5]
/// (0,2,1) 0.68-0.72 -> 0.74-0.82, f32 [65536,5,7] (0,2,1) 0.65-0.66 -> 0.69-0.76, f16
/// [262144,3,3] (0,2,1) -> f32 0.54 -> 0.62; where steps rarely carry, the divisions cost more
/// than they save: u8 [1048576,4,3] (0,2,1) -> f32 (a fastest mode of one vector) 0.72 -> 0.54,
/// bf16 [64,1024,1023] of ld 1024 -> f32 0.91 -> 0.81, bf16 [8,16,1025,80] (0,2,1,3) -> f32 0.88
/// -> 0.63.
fn gather_divides(fastest: usize, dw: usize) -> bool {
    let v = 16 / dw;
    fastest < 2 * v && fastest % v != 0
}

/// Whether the gather route (where it applies) runs instead of `other`, the route the layouts
/// would take without it (measured on an H100, `docs/convert-tuning.md` 2026-12-07 (6)):
/// - instead of a tile: the tile's sides are the fastest modes of each side, a few elements wide
///   where the destination's fastest modes are short (f32 items [131072, 3, 5] -> [131072, 5, 3]
///   got a 4 x 8 tile each: 0.01x -> 0.67x D2D), while the gather stores whole vectors whatever
///   the extents;
/// - instead of an elementwise widening into 4- or 8-byte elements over more than one row: the
///   elementwise route cuts each row's vectors at its ends and loads 8 bytes or less a lane,
///   while the gather sees the compact destination as one run and loads at most 4 elements a
///   vector (bf16 [64,1024,1023] of ld 1024 -> f32 0.81x -> 0.91x D2D, u8 of ld 3008 -> f32
///   0.72x -> 0.80x, f16 of ld 8192 -> f64 0.83x -> 0.96x);
/// - not instead of a widening into 2-byte elements (8 one-byte loads a vector: u8 -> bf16
///   0.60x -> 0.51x), nor of a narrowing or same-width elementwise copy (16 / destination width
///   loads a vector: f16 -> FP8 permute 0.99x -> 0.41x), nor of one row (its vectors are all
///   whole), nor of a channels tile (its stage gives both sides whole vectors; the gather's
///   per-element channel and carries lost everywhere: u8 NHWC -> f32 NCHW normalized 0.94x ->
///   0.57x, the crop -> bf16 NHWC 0.79x -> 0.23x).
fn gather_wins(other: &ConvertRoute, (sw, dw): (usize, usize)) -> bool {
    match other {
        ConvertRoute::Tile { .. } => true,
        ConvertRoute::Elementwise { rows, .. } => dw > sw && dw >= 4 && *rows > 1,
        _ => false,
    }
}

/// What both plan constructors fill alike; the closure adds the coalesced layouts, the channel and
/// the route.
fn assemble(
    (src_dtype, dst_dtype): (DType, DType),
    (src, dst): (Layout, Layout),
    rule: ConvertRule,
    coefficients: Option<(Vec<f32>, Vec<f32>)>,
    indexed: Option<ItemIndex>,
) -> impl Fn((Layout, Layout), Option<(usize, usize)>, ConvertRoute) -> ConvertPlan {
    move |coalesced, channel, route| ConvertPlan {
        src_dtype,
        dst_dtype,
        src,
        dst,
        coalesced,
        rule,
        coefficients: coefficients.clone(),
        channel,
        route,
        indexed,
    }
}

/// [`Error::GridTooLarge`] when the route launches more blocks than a 1D grid holds.
fn check_grid(route: &ConvertRoute) -> Result<()> {
    let grid = match route {
        ConvertRoute::Elementwise { blocks, .. } => *blocks,
        ConvertRoute::Tile { tiles, .. } => tiles.2,
        ConvertRoute::Channels { tiles, .. } => tiles.1,
        ConvertRoute::Gather { blocks, .. } => *blocks,
        ConvertRoute::Empty => 0,
    };
    if grid > i32::MAX as usize {
        return Err(Error::GridTooLarge {
            what: "convert blocks".into(),
            count: grid as u64,
            max: i32::MAX as u64,
        });
    }
    Ok(())
}

/// The channels route's shared-memory stage: the source side's bytes of one tile, loaded raw
/// (`kChanStage` in cpp/kernels/convert.cu: four 16-byte loads per thread of 256).
pub const CHANNEL_STAGE_BYTES: usize = 16 << 10;
/// The most channels of the channels route (`kMaxChannels`).
pub const MAX_CHANNELS: usize = 16;
/// The fewest pixels the channels route takes: a shorter pixel mode leaves a block a few dozen
/// elements, less than its fixed work, and the tile route serves it.
const MIN_CHANNEL_PIXELS: usize = 64;
/// The widest pixel of an interleaved source the channels route stages (`(c, w):(1, S)`,
/// `S x width` bytes): beyond it most of the staged bytes would be gaps.
const MAX_PIXEL_BYTES: usize = 64;

/// Which side of a channels copy holds a pixel's channels side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interleaved {
    /// The source is `(c, w):(1, S)` with `S >= C` (NHWC read, NCHW written).
    Source,
    /// The destination is `(c, w):(1, C)` (NCHW or a crop of it read, NHWC written).
    Destination,
}

/// Where a channels tile's source waits between the loads and the stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelStage {
    /// Shared memory: the tile's source bytes staged raw by aligned 16-byte vectors, each run at
    /// its own 16-byte phase, one barrier, then every destination vector gathered from the stage.
    Shared,
    /// Registers, 3 or 4 packed channels on the interleaved side, sources of 1 to 4 bytes into
    /// destinations of 2 or 4 bytes; no stage, no barrier. An
    /// interleaved source (`convert_channels_regs`, planes at one 16-byte phase): a thread loads
    /// the pixels of one destination vector straight from global memory (`16 / dw` pixels,
    /// 16 to 64 bytes) and stores that vector of every plane. An interleaved
    /// destination of a narrowing pair (`convert_channels_regs_dst`, f32 planes at any offset
    /// and pitch into f16 or bf16): a thread takes
    /// the fewest whole pixels that fill whole destination vectors ([`group_pixels`]), loads their
    /// elements from each plane (aligned words funnel-shifted into place) and stores the vectors.
    Registers,
}

/// The pixels of one group of the register stage with an interleaved destination: the fewest
/// whole pixels of `c` channels of `dw` bytes that fill whole 16-byte vectors (8 for RGB bf16,
/// 3 vectors; 4 for RGB f32; 1 for RGBA f32).
pub fn group_pixels(c: usize, dw: usize) -> usize {
    16 / gcd(16, c * dw)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The most source bytes one group of the register stage with an interleaved destination holds
/// in registers: one more pixel than [`group_pixels`] of each plane (a group the run's 16-byte
/// phase rotates off a pixel boundary).
const MAX_GROUP_BYTES: usize = 128;

/// The fewest source bytes a destination vector's pixels take for the register stage with an
/// interleaved source: below a whole 16-byte vector of pixels (u8 RGB into f32: 12 bytes) each
/// thread's loads are too small to pay for the stage they skip (2026-12-07, H100: u8 NHWC
/// [64,224,224,3] -> f32 NCHW normalized 20.4 us in the shared stage, 21.4 in registers, while
/// u8 -> bf16 (24 bytes) went 12.0 -> 11.3 and u8 RGBA -> f32 (16 bytes) 9.7 -> 7.7).
const MIN_PIXEL_BYTES: usize = 16;

/// The width pairs the register stage is compiled for (`kRegisterWidths` in convert.cu): sources of
/// 1 to 4 bytes into destinations of 2 or 4 (the image pairs: u8, f16, bf16 or f32 into f16, bf16
/// or f32). Each register kernel converts one block of elements per scalar type pair; the other
/// widths keep the shared stage for the build's sake (a 1-byte destination's 16-element vectors
/// would unroll 48 to 64 conversions per type pair).
fn register_widths(sw: usize, dw: usize) -> bool {
    sw <= 4 && (dw == 2 || dw == 4)
}

/// The register stage's rule: 3 or 4 channels packed on the interleaved side, a width pair of
/// [`register_widths`]. An interleaved
/// source's pixels hold exactly its channels (`(c, w):(1, C)`), its planes are `plane` elements
/// apart and keep one 16-byte phase, and a destination vector's pixels take [`MIN_PIXEL_BYTES`]
/// to [`MAX_PIXEL_BYTES`] of source (`(16 / dw) x C x sw`). An interleaved destination takes a
/// narrowing pair (`sw > dw`) and its group (one pixel more of each plane) lies within
/// [`MAX_GROUP_BYTES`] of source. Measured against the shared stage on an H100 (2026-12-07, one
/// device call, both binaries twice): faster for u8 RGB -> bf16 (24 bytes a vector), u8 RGBA ->
/// f32 (16), f16 RGB -> f32 (24) and f32 planes -> bf16 RGB; slower for u8 RGB -> f32 (12 bytes)
/// and for u8 planes into bf16 or f32 RGB (the crop), which therefore keep the stage.
fn register_stage(
    interleaved: Interleaved,
    (channels, pixel): (usize, usize),
    plane: usize,
    (sw, dw): (usize, usize),
) -> bool {
    if (channels != 3 && channels != 4) || !register_widths(sw, dw) {
        return false;
    }
    match interleaved {
        Interleaved::Source => {
            pixel == channels
                && (MIN_PIXEL_BYTES..=MAX_PIXEL_BYTES).contains(&((16 / dw) * channels * sw))
                && (plane * dw) % 16 == 0
        }
        Interleaved::Destination => {
            sw > dw && (group_pixels(channels, dw) + 1) * sw * channels <= MAX_GROUP_BYTES
        }
    }
}

/// Blocks a channels tile aims for at least when a thread's stores share their place (a planar
/// destination whose planes keep one 16-byte phase: vector j of every plane in turn) or the
/// destination is interleaved: 512, about four per SM on today's GPUs, so that each block's fixed
/// work (coefficients, tile coordinates, the barrier) is spread over a full stage. Below that the
/// tile is cut for more blocks, so that a copy of few images still fills the GPU. Measured on an
/// H100 (2026-12-07, CLI, every run verified): 2048-block tiles against full stages, u8 NHWC
/// [64,224,224,3] -> f32 NCHW 20.3 -> 18.4 us (with whole store rounds), u8 NCHW -> f32 NHWC 22.6 ->
/// 19.8 us, f32 NHWC -> f16 NCHW 12.1 -> 11.4 us.
const CHANNEL_BLOCKS: usize = 512;
/// Blocks a channels tile aims for at least when each (plane, vector) of a planar destination is
/// placed on its own (planes at different 16-byte phases): 2048, smaller tiles. There the
/// per-vector work is the larger share and full stages measured slower (H100, 2026-12-07: u8
/// NHWC [64,299,299,3] -> f32 NCHW 34.1 -> 35.5 us).
const CHANNEL_BLOCKS_PER_VECTOR: usize = 2048;
/// The stage a channels tile is cut down to at least, for more blocks: 2 KiB (half a load per
/// thread), below which a block's fixed work outweighs its bytes.
const MIN_CHANNEL_STAGE: usize = 2 << 10;

/// The pixels a channels tile's stage of `stage` bytes holds. An interleaved source stages one
/// run of `(tw - 1) * S + C` elements and its 16-byte phase; a planar source `C` rows of `tw`
/// elements, each in an odd number of 16-byte vectors (rows then start in different banks).
fn channel_pixels(
    interleaved: Interleaved,
    c: usize,
    pixel: usize,
    sw: usize,
    stage: usize,
) -> usize {
    match interleaved {
        Interleaved::Source => (stage - 30 - c * sw) / (pixel * sw) + 1,
        Interleaved::Destination => {
            let mut rv = stage / (16 * c);
            if rv % 2 == 0 {
                rv -= 1;
            }
            (16 * rv - 15) / sw
        }
    }
}

/// What a shared-stage channels tile aims for: (blocks at least, pixels it is a multiple of when
/// the stage holds that many). A planar destination whose planes keep one 16-byte phase (`pitch`,
/// the planes' distance in bytes, a multiple of 16) is stored by vector j of every plane in turn,
/// a thread per j: a tile of whole rounds of [`THREADS`] vectors gives every thread the same
/// stores ([`CHANNEL_BLOCKS`]). Planes at different phases are stored one (plane, vector) a
/// thread ([`CHANNEL_BLOCKS_PER_VECTOR`]); an interleaved destination's run is cut evenly
/// whatever its length.
fn channel_tile_goal(interleaved: Interleaved, pitch: usize, dw: usize) -> (usize, usize) {
    match interleaved {
        Interleaved::Source if pitch % 16 == 0 => (CHANNEL_BLOCKS, THREADS * (16 / dw)),
        Interleaved::Source => (CHANNEL_BLOCKS_PER_VECTOR, 16),
        Interleaved::Destination => (CHANNEL_BLOCKS, 16),
    }
}

/// The pixels of a channels tile: enough tiles for `blocks` blocks with `others` tiles a pixel
/// tile (the other modes' coordinates), within a stage of [`MIN_CHANNEL_STAGE`] to
/// [`CHANNEL_STAGE_BYTES`]; when the mode is longer, a multiple of `round` pixels if the stage
/// holds that many, else of 16 ([`channel_tile_goal`]).
fn channel_tile(
    interleaved: Interleaved,
    (c, w): (usize, usize),
    pixel: usize,
    sw: usize,
    others: usize,
    (blocks, round): (usize, usize),
) -> usize {
    let most = channel_pixels(interleaved, c, pixel, sw, CHANNEL_STAGE_BYTES);
    let least = channel_pixels(interleaved, c, pixel, sw, MIN_CHANNEL_STAGE).min(most);
    let want = w.div_ceil(blocks.div_ceil(others.max(1)));
    let tw = want.clamp(least, most);
    if tw >= w {
        w
    } else if tw >= round {
        tw / round * round
    } else {
        (tw / 16 * 16).max(16)
    }
}

/// The stage bytes a channels tile of `tw` pixels takes (the kernel's layout of it).
pub(crate) fn channel_stage_bytes(
    interleaved: Interleaved,
    c: usize,
    tw: usize,
    pixel: usize,
    sw: usize,
) -> usize {
    match interleaved {
        Interleaved::Source => (15 + ((tw - 1) * pixel + c) * sw).div_ceil(16) * 16,
        Interleaved::Destination => c * 16 * (((tw * sw + 30) / 16) | 1),
    }
}

/// The channels rule: a short mode `c` (2 to 16 channels) unit-stride on one side, next to a
/// pixel mode `w` that steps over the channels there (`(c, w):(1, S)`, `S == C` on a destination),
/// while `w` is unit-stride on the other side (planar: NCHW, or a crop of it). `None` when the
/// copy is not so, or a channel's coefficients step along `w`.
fn channels_route(
    shape: &[usize],
    (ss, ds): (&[usize], &[usize]),
    (mode_a, mode_b): (usize, usize),
    channel: Option<usize>,
    (sw, dw): (usize, usize),
) -> Option<ConvertRoute> {
    let (c, w, interleaved) = if ss[mode_a] == 1
        && ds[mode_b] == 1
        && ss[mode_b] >= shape[mode_a]
        && ss[mode_b] * sw <= MAX_PIXEL_BYTES
    {
        (mode_a, mode_b, Interleaved::Source)
    } else if ds[mode_b] == 1 && ss[mode_a] == 1 && ds[mode_a] == shape[mode_b] {
        (mode_b, mode_a, Interleaved::Destination)
    } else {
        return None;
    };
    let (channels, pixels) = (shape[c], shape[w]);
    if !(2..=MAX_CHANNELS).contains(&channels) || pixels < MIN_CHANNEL_PIXELS || channel == Some(w)
    {
        return None;
    }
    let pixel = match interleaved {
        Interleaved::Source => ss[w],
        Interleaved::Destination => 1,
    };
    let others = other_extent(shape, (c, w));
    let (stage, tile) = if register_stage(interleaved, (channels, pixel), ds[c], (sw, dw)) {
        // one destination vector of every plane, or one group, a thread: a block's fixed work is
        // a few divisions
        let per_thread = match interleaved {
            Interleaved::Source => 16 / dw,
            Interleaved::Destination => group_pixels(channels, dw),
        };
        (ChannelStage::Registers, pixels.min(THREADS * per_thread))
    } else {
        let goal = channel_tile_goal(interleaved, ds[c] * dw, dw);
        let tile = channel_tile(interleaved, (channels, pixels), pixel, sw, others, goal);
        (ChannelStage::Shared, tile)
    };
    let tiles_w = pixels.div_ceil(tile);
    Some(ConvertRoute::Channels {
        channel_mode: c,
        pixel_mode: w,
        interleaved,
        stage,
        tile,
        tiles: (tiles_w, tiles_w * others),
    })
}

/// The product of the extents of every mode but the two of a tiled route: the tiles a tile
/// coordinate of those two modes stands for (the kernels' other modes, one block each).
fn other_extent(shape: &[usize], (a, b): (usize, usize)) -> usize {
    (0..shape.len())
        .filter(|&m| m != a && m != b)
        .map(|m| shape[m])
        .product()
}

fn next_pow2(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// The bytes of a tile's shared-memory stage (the tile kernel's `tile_bytes`): `tb` rows of `ta`
/// destination elements of `dw` bytes, each row padded by one 32-bit word.
fn stage_bytes(ta: usize, tb: usize, dw: usize) -> usize {
    let pad = if dw >= 4 { 1 } else { 4 / dw };
    (tb * (ta + pad) * dw).div_ceil(16) * 16
}

/// The tile rule: 64 x 64 elements, a short mode's tile cut to its next power of two and the
/// other mode's grown to keep 4096 elements, 1024 at most (NCHW <-> NHWC with C = 3: a 4 x 1024
/// tile). When both sides go by 16-byte vectors (`wide`: the destination's element bytes), a
/// short mode's tile grows to 16384 elements, 4096 a side, its stage within 48 KiB: a block of
/// such a copy loads a few KiB per tile, and the copy is bound by the bytes in flight.
fn tile_extents(ea: usize, eb: usize, wide: Option<usize>) -> (usize, usize) {
    let (elems, side) = match wide {
        Some(_) => (WIDE_TILE_ELEMS, MAX_WIDE_TILE_SIDE),
        None => (TILE_ELEMS, MAX_TILE_SIDE),
    };
    let (pa, pb) = (next_pow2(ea).min(side), next_pow2(eb).min(side));
    let (mut ta, mut tb) = if pb < 64 {
        (pa.min(elems / pb), pb)
    } else if pa < 64 {
        (pa, pb.min(elems / pa))
    } else {
        return (64, 64);
    };
    if let Some(dw) = wide {
        while ta * tb > TILE_ELEMS && stage_bytes(ta, tb, dw) > WIDE_STAGE_BYTES {
            if pb < 64 {
                ta /= 2;
            } else {
                tb /= 2;
            }
        }
    }
    (ta, tb)
}

impl ConvertPlan {
    /// Plan a copy of `src` (elements of `src_dtype`) into `dst` (of `dst_dtype`), equal shapes,
    /// converting as `convert` says. Pure: nothing is launched, no device is asked.
    pub fn new(
        src_dtype: DType,
        dst_dtype: DType,
        src: Layout,
        dst: Layout,
        convert: &Convert,
    ) -> Result<ConvertPlan> {
        if src.shape() != dst.shape() {
            return Err(Error::LayoutMismatch {
                src: src.to_string(),
                dst: dst.to_string(),
            });
        }
        let rule = conversion(src_dtype, dst_dtype)?;
        let coefficients = convert.coefficients(src.shape())?;
        let plan = assemble((src_dtype, dst_dtype), (src, dst), rule, coefficients, None);
        if src.size() == 0 {
            return Ok(plan((src, dst), None, ConvertRoute::Empty));
        }
        if !dst.is_injective() {
            return Err(Error::DestinationNotInjective(dst.to_string()));
        }
        let c = coalesce_modes(src.shape(), [src.stride(), dst.stride()]);
        let (shape, ss, ds) = (c.shape(), c.stride(0), c.stride(1));
        let (cs, cd) = (c.layout(0)?, c.layout(1)?);
        // The channel: the coalesced mode the channel mode was folded into, and the extent of
        // the modes folded inside it.
        let channel = convert.channel_mode().and_then(|cm| {
            c.groups().enumerate().find_map(|(m, g)| {
                let at = g.iter().position(|&o| o as usize == cm)?;
                Some((
                    m,
                    g[..at].iter().map(|&o| src.shape()[o as usize]).product(),
                ))
            })
        });
        let r = shape.len();
        let fastest = |st: &[usize]| {
            (0..r)
                .min_by_key(|&m| (st[m], std::cmp::Reverse(m)))
                .unwrap_or(0)
        };
        let (mode_a, mode_b) = (fastest(ss), r - 1);
        let widths = (src_dtype.size_bytes(), dst_dtype.size_bytes());
        let other = if mode_a == mode_b || r == 1 {
            elementwise_route(src_dtype, dst_dtype, shape, ss, ds)
        } else if let Some(route) = channels_route(
            shape,
            (ss, ds),
            (mode_a, mode_b),
            channel.map(|(m, _)| m),
            widths,
        ) {
            route
        } else {
            let vectors = ss[mode_a] == 1 && ds[mode_b] == 1;
            let wide = vectors.then_some(dst_dtype.size_bytes());
            let tile = tile_extents(shape[mode_a], shape[mode_b], wide);
            let ta = shape[mode_a].div_ceil(tile.0);
            let tb = shape[mode_b].div_ceil(tile.1);
            let others = other_extent(shape, (mode_a, mode_b));
            ConvertRoute::Tile {
                mode_a,
                mode_b,
                tile,
                tiles: (ta, tb, ta * tb * others),
            }
        };
        let route = if gather_wins(&other, widths) {
            gather_route(shape, ss, ds, widths).unwrap_or(other)
        } else {
            other
        };
        check_grid(&route)?;
        Ok(plan((cs, cd), channel, route))
    }

    /// Plan an index-driven copy of `src` (elements of `src_dtype`) into `dst` (of `dst_dtype`),
    /// converting as `convert` says: items are `block_rows` consecutive entries of mode 0 of each
    /// view (the other modes of equal shape, any strides), looked up through an index array of
    /// `table_len` entries of `index_bytes` as `kind` says. Always the elementwise route, mode 0
    /// of the coalesced layouts walking the items; a normalization's channel mode is one of the
    /// item's modes (1 ..). Pure.
    pub fn indexed(
        (src_dtype, dst_dtype): (DType, DType),
        (src, dst): (Layout, Layout),
        kind: IndexKind,
        block_rows: usize,
        (table_len, index_bytes): (usize, usize),
        convert: &Convert,
    ) -> Result<ConvertPlan> {
        let rule = conversion(src_dtype, dst_dtype)?;
        if src.rank() != dst.rank() || src.shape()[1..] != dst.shape()[1..] {
            return Err(Error::LayoutMismatch {
                src: src.to_string(),
                dst: dst.to_string(),
            });
        }
        if block_rows == 0 {
            return Err(Error::Shape("blocks of 0 rows".into()));
        }
        if !matches!(index_bytes, 4 | 8) {
            return Err(Error::Unsupported(format!(
                "indices of {index_bytes} bytes (i32 or i64 only)"
            )));
        }
        if convert.channel_mode() == Some(0) {
            return Err(Error::Normalize(
                "an index-driven copy normalizes along a mode of its items (1 ..), not along the indexed mode 0".into(),
            ));
        }
        let coefficients = convert.coefficients(dst.shape())?;
        if !dst.is_injective() {
            return Err(Error::DestinationNotInjective(dst.to_string()));
        }
        let (src_items, dst_items) = (src.shape()[0] / block_rows, dst.shape()[0] / block_rows);
        let items = match kind {
            IndexKind::Gather => dst_items,
            IndexKind::Scatter => src_items,
            IndexKind::BlockTable if table_len % 2 != 0 => {
                return Err(Error::IndexCount {
                    what: "a block table of (source, destination) pairs",
                    got: table_len,
                    expected: table_len + 1,
                })
            }
            IndexKind::BlockTable => table_len / 2,
        };
        if table_len < items * kind.stride() {
            return Err(Error::IndexCount {
                what: match kind {
                    IndexKind::Gather => "indices for the destination rows",
                    _ => "indices for the source rows",
                },
                got: table_len,
                expected: items * kind.stride(),
            });
        }
        let indexed = Some(ItemIndex {
            kind,
            block_rows,
            items,
            src_items,
            dst_items,
            index_bytes,
        });
        let plan = assemble(
            (src_dtype, dst_dtype),
            (src, dst),
            rule,
            coefficients,
            indexed,
        );
        // An item: its `block_rows` entries of mode 0 (a mode of their own when more than one),
        // then modes 1 .., coalesced; mode 0 of the launch walks the items.
        let split = usize::from(block_rows > 1);
        let mut shape = [1usize; MAX_RANK];
        let mut strides = [[0usize; MAX_RANK]; 2];
        let inner = src.rank() - 1 + split;
        if split == 1 {
            (shape[0], strides[0][0], strides[1][0]) =
                (block_rows, src.stride()[0], dst.stride()[0]);
        }
        shape[split..inner].copy_from_slice(&src.shape()[1..]);
        strides[0][split..inner].copy_from_slice(&src.stride()[1..]);
        strides[1][split..inner].copy_from_slice(&dst.stride()[1..]);
        if items == 0 || shape[..inner].contains(&0) {
            return Ok(plan((src, dst), None, ConvertRoute::Empty));
        }
        let c = coalesce_modes(
            &shape[..inner],
            [&strides[0][..inner], &strides[1][..inner]],
        );
        if c.shape().len() + 1 > MAX_RANK {
            return Err(Error::Unsupported(format!(
                "an item of {} modes after coalescing: an index-driven copy walks items and at most {} item modes",
                c.shape().len(),
                MAX_RANK - 1
            )));
        }
        let launch = |k: usize, item_stride: usize| {
            let mut sh = vec![items];
            sh.extend_from_slice(c.shape());
            let mut st = vec![item_stride * block_rows];
            st.extend_from_slice(c.stride(k));
            Layout::new(&sh, &st)
        };
        let (cs, cd) = (launch(0, src.stride()[0])?, launch(1, dst.stride()[0])?);
        let channel = convert.channel_mode().and_then(|cm| {
            let o = cm - 1 + split;
            c.groups().enumerate().find_map(|(m, g)| {
                let at = g.iter().position(|&i| i as usize == o)?;
                Some((m + 1, g[..at].iter().map(|&i| shape[i as usize]).product()))
            })
        });
        let route = elementwise_route(src_dtype, dst_dtype, cs.shape(), cs.stride(), cd.stride());
        check_grid(&route)?;
        Ok(plan((cs, cd), channel, route))
    }

    /// Bytes from the source's element 0 that the kernel may read: the coalesced source layout's
    /// span, of the source's whole items when they are looked up.
    fn source_span(&self) -> usize {
        let cs = &self.coalesced.0;
        let elems = match self.indexed {
            Some(ix) if ix.source_indexed() => {
                if ix.src_items == 0 {
                    0
                } else {
                    // mode 0's extent `items` replaced by `src_items`
                    let base = cs.cosize().unwrap_or(0) - (cs.shape()[0] - 1) * cs.stride()[0];
                    base + (ix.src_items - 1) * cs.stride()[0]
                }
            }
            _ => cs.cosize().unwrap_or(0),
        };
        elems * self.src_dtype.size_bytes()
    }

    /// The atom that runs the copy.
    pub fn atom(&self) -> Atom {
        Atom::Convert128
    }

    /// Bytes read plus bytes written (an index-driven copy: when every index is in range).
    pub fn bytes_moved(&self) -> usize {
        if self.route == ConvertRoute::Empty {
            return 0;
        }
        self.coalesced.0.size() * (self.src_dtype.size_bytes() + self.dst_dtype.size_bytes())
    }

    /// Whether the elementwise route stores lane-interleaved (the convert family's rule, which
    /// the kernel applies itself): a row's chunks in groups of 32, chunk `j` of a group converting
    /// the group's destination vectors `j`, `j + 32`, ..., so that a warp's store instruction
    /// writes 512 consecutive bytes, whole 32-byte sectors, where each chunk's own consecutive
    /// vectors would write half-sectors at a 32-byte lane stride. It needs vector stores and no
    /// channel stepping along the row (a chunk's elements are then not consecutive), and is taken
    /// for same-width and narrowing pairs to 2-byte and wider elements, where it measured faster
    /// (f32 -> bf16 packed 0.95x -> 1.02x of a copy on the H200); widening pairs and 1-byte
    /// destinations measured slower interleaved and keep their chunks.
    pub fn lane_interleaved(&self) -> bool {
        let ConvertRoute::Elementwise { vector_store, .. } = self.route else {
            return false;
        };
        let last = self.coalesced.0.rank().saturating_sub(1);
        let along_row = self.coefficients.is_some() && self.channel.is_some_and(|(m, _)| m == last);
        // A destination vector's source, 4 bytes or more (widening pairs up to 4x included).
        vector_store
            && self.dst_dtype.size_bytes() >= 2
            && self.unit_source_bytes() >= 4
            && !along_row
    }

    /// The source bytes of one 16-byte destination vector.
    fn unit_source_bytes(&self) -> usize {
        16 / self.dst_dtype.size_bytes() * self.src_dtype.size_bytes()
    }

    /// The reasons for the plan's choices, one line each.
    pub fn reasons(&self) -> Vec<String> {
        let mut r = vec![format!(
            "{} -> {}: {}",
            self.src_dtype,
            self.dst_dtype,
            self.rule.text()
        )];
        if let Some(ix) = self.indexed {
            let item = if ix.block_rows == 1 {
                "an item is one entry of mode 0 (a row)".to_string()
            } else {
                format!(
                    "an item is {} consecutive entries of mode 0 (a block)",
                    ix.block_rows
                )
            };
            let how = match ix.kind {
                IndexKind::Gather => "destination item i is source item indices[i]",
                IndexKind::Scatter => "destination item indices[i] is source item i",
                IndexKind::BlockTable => "destination item pairs[2k + 1] is source item pairs[2k]",
            };
            r.push(format!(
                "index-driven ({}): {item}; {how}, for {} items of {}-byte indices read on the device (mode 0 of the coalesced layouts); a negative index skips its item, one at or past its side's items ({} source, {} destination) is skipped and counted in the status; always elementwise, so the item's own fastest mode must be the last on both sides for vectors",
                ix.kind.name(),
                ix.items,
                ix.index_bytes,
                ix.src_items,
                ix.dst_items
            ));
        }
        match (&self.coefficients, self.channel) {
            (None, _) => {}
            (Some(_), None) => r.push(
                "scaled: y = D((x - mean) * mul) with one (mean, mul) for every element (a scale, or a channel mode of extent 1), computed in f32 (f64 when a side is f64) before the conversion".into(),
            ),
            (Some((mean, _)), Some((m, div))) => r.push(format!(
                "normalized per channel: y = D((x - mean[c]) * mul[c]), {} channels, c = (x{m} / {div}) % {} along coalesced mode {m}; mean and mul {}",
                mean.len(),
                mean.len(),
                if mean.len() <= CHANNELS_BY_VALUE { "travel in the descriptor" } else { "in a device array" }
            )),
        }
        match &self.route {
            ConvertRoute::Empty => r.push("a zero extent: nothing is converted or launched".into()),
            ConvertRoute::Elementwise {
                chunk,
                vector_load,
                vector_store,
                chunks_per_row,
                ..
            } => {
                let interleaved = self.lane_interleaved();
                r.push(if interleaved {
                    format!("the fastest mode is the same on both sides: elementwise, a thread converts a chunk of {chunk} elements (32 bytes of the narrower type) in registers between its loads and its stores; lane-interleaved: a row's chunks in groups of 32, chunk j of a group taking the group's destination vectors j, j + 32, ..., so each store instruction of a warp writes 512 consecutive bytes (whole 32-byte sectors)")
                } else {
                    format!("the fastest mode is the same on both sides: elementwise, a thread converts {chunk} consecutive elements (32 bytes of the narrower type) in registers between its loads and its stores{}", if *vector_store { " (not lane-interleaved: a 1-byte destination, a widening of more than 4x, or a channel stepping along the row)" } else { "" })
                });
                let unit_src = self.unit_source_bytes();
                r.push(if *vector_load && interleaved && unit_src < 16 {
                    format!("loads: one {unit_src}-byte word ({} elements) per destination vector, a warp's consecutive; where the row's source phase cuts a word, the two aligned words around it funnel-shifted into place (realigned) inside the source span", 16 / self.dst_dtype.size_bytes())
                } else if *vector_load {
                    format!("loads: 16-byte vectors ({} elements), one per vector where the row's source phase matches, else the aligned vectors around the {} funnel-shifted into place (realigned) inside the source span", 16 / self.src_dtype.size_bytes(), if interleaved { "destination vector's source" } else { "chunk" })
                } else {
                    "loads: element by element (the source's fastest mode is strided)".into()
                });
                r.push(if *vector_store {
                    format!("stores: 16-byte vectors ({} elements), each row's chunks phased to the destination's 16-byte grid: only a row's first and last partial vectors go element by element; {chunks_per_row} chunks per row leave room for a row's phase, and when every destination row starts on the grid (checked at launch: the base and every outer stride in whole vectors) the launch takes {} per row instead", 16 / self.dst_dtype.size_bytes(), self.coalesced.1.shape().last().map_or(0, |n| n.div_ceil(*chunk)))
                } else {
                    "stores: element by element (the destination's fastest mode is strided)".into()
                });
            }
            ConvertRoute::Gather {
                locality: (inner, k),
                divided,
                ..
            } => {
                let (cs, _) = &self.coalesced;
                let (sw, dw) = (self.src_dtype.size_bytes(), self.dst_dtype.size_bytes());
                let last = cs.rank() - 1;
                r.push(format!(
                    "the destination is compact (its modes, slowest first, are the coalesced modes): gather, a thread converts {GATHER_UNITS} aligned 16-byte destination vectors ({} elements each) {THREADS} apart, so each store instruction of a warp writes 512 consecutive bytes; only the vectors the destination's ends cut go element by element",
                    16 / dw
                ));
                let fastest = cs.shape()[last];
                let coords = if *divided {
                    format!("cutlass::FastDivmod per mode for every element: the fastest mode's {fastest} elements are under two vectors and not a whole number of them, so a step would cross its end inside most vectors, each lane at its own element, and the warp would run every lane's carry in turn")
                } else {
                    format!("fast divisions once per vector, then steps along mode {last} carried into the slower modes: its {fastest} elements are two vectors or more, or a whole number of them, so most vectors step without a carry")
                };
                r.push(if *inner == 1 {
                    format!("loads: element by element at each element's coordinates ({coords}); mode {last} steps {} bytes through the source, so a warp's loads of one element slot lie a few 32-byte sectors apart and L1 serves its neighbours", cs.stride()[last] * sw)
                } else {
                    format!("loads: element by element at each element's coordinates ({coords}); the destination's fastest {inner} elements take long source steps, then mode {k} steps {} bytes, so a warp's loads of one element slot lie in a few runs of sectors and L1 serves their neighbours", cs.stride()[*k] * sw)
                });
                r.push("every load of a thread is issued before any element is converted: its vectors' source elements are all in flight at once, and the kernel holds few registers (many warps per SM)".into());
                r.push(if *inner == 1 && cs.stride()[last] == 1 {
                    format!("chosen over the elementwise route: a widening ({sw} -> {dw} bytes, at most 4 loads a vector) over more than one row, whose rows would cut their vectors at both ends and load {} bytes or less a lane; the gather sees the whole destination as one run", 16 * sw / dw)
                } else {
                    "chosen over a tile: the fastest modes differ, and the tile's sides would be the destination's short fastest modes (a few elements wide); the gather stores whole vectors whatever the extents (a channels tile, where one applies, is kept: its stage gives both sides whole vectors)".into()
                });
            }
            ConvertRoute::Tile {
                mode_a,
                mode_b,
                tile,
                ..
            } => {
                r.push(format!(
                    "the fastest modes differ (source {mode_a}, destination {mode_b}): a {} x {} tile of the destination type in shared memory (rows padded by one 32-bit word against bank conflicts), loaded along mode {mode_a}, converted in registers, stored along mode {mode_b}",
                    tile.1, tile.0
                ));
                if tile.0 * tile.1 > TILE_ELEMS {
                    r.push(format!("a wide tile: a short mode and 16-byte vectors on both sides, so the tile grows past {TILE_ELEMS} elements to {} (16384 and 4096 a side at most, a stage of 48 KiB at most): each block has more bytes in flight, which bounds a copy whose tiles are a few KiB", tile.0 * tile.1));
                }
                let (cs, cd) = &self.coalesced;
                if cs.stride()[*mode_a] == 1 || cd.stride()[*mode_b] == 1 {
                    r.push("vector slots per run (each vector side): the aligned 16-byte vectors that cover it, plus room for its 16-byte phase unless every run of the tile starts on the grid (decided per tile in the kernel)".into());
                }
                let (ea, eb) = (cs.shape()[*mode_a], cs.shape()[*mode_b]);
                let (sw, dw) = (self.src_dtype.size_bytes(), self.dst_dtype.size_bytes());
                r.push(if cs.stride()[*mode_a] != 1 {
                    "loads: element by element (the source's fastest mode is strided)".into()
                } else if cs.stride()[*mode_b] == ea && tile.0 >= ea {
                    format!("loads: 16-byte vectors ({} elements) over one contiguous run per tile (the tile holds all {ea} of mode {mode_a} and mode {mode_b} steps over it), groups of 4 lanes on 64 consecutive bytes; the run's first and last vectors are the aligned ones around it, so any offset loads whole vectors", 16 / sw)
                } else {
                    // The kernel's stage_vector: a whole vector's converted elements span `words`
                    // stage words; 4 to 16 of them are written in an order rotated per lane.
                    let words = 16 / sw * dw / 4;
                    let rotated = if (4..=16).contains(&words) {
                        format!("; a lane writes its vector's {words} stage words from word floor(b / 32) mod {words} of its span on (b: the span's first word), wrapping around, so the lanes of a warp that share a bank write different ones")
                    } else {
                        String::new()
                    };
                    format!("loads: 16-byte vectors ({} elements) along each tile row of mode {mode_a}, groups of 4 lanes on 64 consecutive bytes; a row's first and last vectors are the aligned ones around it (inside the source span), so any offset or pitch loads whole vectors{rotated}", 16 / sw)
                });
                r.push(if cd.stride()[*mode_b] != 1 {
                    "stores: element by element (the destination's fastest mode is strided)".into()
                } else if cd.stride()[*mode_a] == eb && tile.1 >= eb {
                    format!("stores: 16-byte vectors ({} elements) over one contiguous run per tile (the tile holds all {eb} of mode {mode_b} and mode {mode_a} steps over it), gathered from the stage; only vectors the run's ends cut go element by element", 16 / dw)
                } else {
                    format!("stores: 16-byte vectors ({} elements) along each tile row of mode {mode_b}, gathered from the stage; only vectors a row's ends cut go element by element", 16 / dw)
                });
            }
            ConvertRoute::Channels {
                channel_mode: c,
                pixel_mode: w,
                interleaved,
                stage: ChannelStage::Registers,
                tile,
                tiles,
            } => {
                let (cs, cd) = &self.coalesced;
                let (sw, dw) = (self.src_dtype.size_bytes(), self.dst_dtype.size_bytes());
                let channels = cs.shape()[*c];
                let (v, pitch) = (16 / dw, cd.stride()[*c] * dw);
                if *interleaved == Interleaved::Destination {
                    let g = group_pixels(channels, dw);
                    let vectors = g * channels * dw / 16;
                    r.push(format!(
                        "a short mode of {channels} channels (mode {c}) packed on the destination ((c, w):(1, {channels}) over pixel mode {w}) and planar on the source (mode {w} unit-stride, any offset and pitch): the channels route in registers, a {channels} x {tile} tile per block ({} along mode {w}, {} blocks), one group of {g} pixels ({vectors} destination vectors) a thread",
                        tiles.0, tiles.1
                    ));
                    r.push(format!(
                        "loads: each thread its group's {g} pixels (one more when the run's 16-byte phase cuts a pixel: the same for every group of a tile) from each of the {channels} planes straight into registers{}; no shared-memory stage, no barrier; only a group the source span's ends cut reads element by element",
                        if sw <= 2 { ", by the aligned words around them funnel-shifted into place" } else { ", one element a load" }
                    ));
                    r.push(format!(
                        "stores: the {vectors} aligned 16-byte vectors ({v} elements each, channel by channel in turn), interleaved and converted in registers with each element's channel (mean, mul) and stored whole; only the groups the run's ends cut go element by element"
                    ));
                } else {
                    r.push(format!(
                    "a short mode of {channels} channels (mode {c}) packed on the source ((c, w):(1, {channels}) over pixel mode {w}) and planar on the destination (mode {w} unit-stride, the {channels} planes {pitch} bytes apart: one 16-byte phase): the channels route in registers, a {channels} x {tile} tile per block ({} along mode {w}, {} blocks), one destination vector of every plane a thread",
                    tiles.0, tiles.1
                ));
                    r.push(format!(
                    "loads: each thread its vector's {v} pixels ({} bytes of source, {channels} x {v} elements) straight into registers by the widest units their address allows (up to 16 bytes), a warp's lanes on consecutive pixel runs; no shared-memory stage, no barrier",
                    v * channels * sw
                ));
                    r.push(format!(
                    "stores: the {channels} planes' aligned 16-byte vectors ({v} elements), each converted in registers with its plane's (mean, mul) and stored whole, a warp's lanes on consecutive vectors of one plane; only the vectors a row's ends cut go element by element (their pixels loaded one by one)"
                ));
                }
            }
            ConvertRoute::Channels {
                channel_mode: c,
                pixel_mode: w,
                interleaved,
                stage: ChannelStage::Shared,
                tile,
                tiles,
            } => {
                let (cs, cd) = &self.coalesced;
                let (sw, dw) = (self.src_dtype.size_bytes(), self.dst_dtype.size_bytes());
                let channels = cs.shape()[*c];
                let (il, pl) = match interleaved {
                    Interleaved::Source => ("source", "destination"),
                    Interleaved::Destination => ("destination", "source"),
                };
                // the interleaved side's pixel step (S of (c, w):(1, S)); the stage is laid out
                // by the source's (1 on a planar source)
                let (step, pixel) = match interleaved {
                    Interleaved::Source => (cs.stride()[*w], cs.stride()[*w]),
                    Interleaved::Destination => (channels, 1),
                };
                let stage = channel_stage_bytes(*interleaved, channels, *tile, pixel, sw);
                let (blocks, round) = channel_tile_goal(*interleaved, cd.stride()[*c] * dw, dw);
                let whole = if round > 16 {
                    format!(", a multiple of {round} pixels when the stage holds that many (whole rounds of {THREADS} vectors a plane: every thread stores as many)")
                } else {
                    String::new()
                };
                r.push(format!(
                    "a short mode of {channels} channels (mode {c}) side by side on the {il} ((c, w):(1, {}) over pixel mode {w}) and planar on the {pl} (mode {w} unit-stride): the channels route, a {channels} x {tile} tile per block ({} along mode {w}, {} blocks): pixel tiles as large as the stage holds, down to {blocks} blocks or more (a block's fixed work spread over a full stage, the GPU still filled), each staging {} to {} KiB of source{whole}",
                    step,
                    tiles.0,
                    tiles.1,
                    MIN_CHANNEL_STAGE >> 10,
                    CHANNEL_STAGE_BYTES >> 10
                ));
                if (channels == 3 || channels == 4) && register_widths(sw, dw) {
                    let bytes = 16 / dw * channels * sw;
                    match interleaved {
                        Interleaved::Source if step == channels && bytes < MIN_PIXEL_BYTES => r.push(format!("the shared stage, not registers: a destination vector's {} pixels are {bytes} bytes of source, under {MIN_PIXEL_BYTES} (loads that small measured slower than the stage)", 16 / dw)),
                        Interleaved::Destination if sw <= dw => r.push(format!("the shared stage, not registers: the register stage with an interleaved destination takes narrowing pairs only ({sw}-byte into {dw}-byte elements: its per-row word loads measured slower than the stage)")),
                        _ => {}
                    }
                }
                r.push(match interleaved {
                    Interleaved::Source => format!("loads: the tile's interleaved run ({} elements a pixel) by aligned 16-byte vectors ({} elements), raw into the stage ({stage} bytes) at the run's own 16-byte phase: no shift, no conversion; only a vector the source span cuts is read element by element", pixel, 16 / sw),
                    Interleaved::Destination => format!("loads: each of the {channels} planar rows of the tile by aligned 16-byte vectors ({} elements), raw into its own stage row (an odd number of vectors apart, {stage} bytes in all) at the row's 16-byte phase: any offset or pitch, no shift, no conversion; only a vector the source span cuts is read element by element", 16 / sw),
                });
                r.push(match interleaved {
                    Interleaved::Source => {
                        // the planar rows' pitch in bytes: whole 16-byte vectors put every row at
                        // the first row's phase, so vector j of each row holds the same pixels
                        let pitch = cd.stride()[*c] * dw;
                        let order = if channels == 1 || pitch % 16 == 0 {
                            format!("a thread takes vector j of all {channels} rows in turn (their pitch, {pitch} bytes, keeps one 16-byte phase: the vector's pixels and cut worked out once for {channels} stores)")
                        } else {
                            format!("a thread takes one (row, vector) at a time (the rows' pitch, {pitch} bytes, puts them at different 16-byte phases)")
                        };
                        format!("stores: each planar row's aligned 16-byte vectors ({} elements, one channel: its (mean, mul) read once), gathered from the stage at the pixel step, converted in registers and stored whole, {order}; only the vectors a row's ends cut go element by element", 16 / dw)
                    }
                    Interleaved::Destination => format!("stores: the tile's interleaved run ({channels} x {tile} elements, contiguous) by aligned 16-byte vectors ({} elements), each gathered from the {channels} stage rows element by element (channel c = e % {channels}), converted in registers with its channel's (mean, mul) and stored whole; only the vectors the run's ends cut go element by element", 16 / dw),
                });
            }
        }
        r
    }

    /// The kernel descriptor for the views at `src` / `dst` (coordinate 0), the channel
    /// coefficients' device array at `params` (0 when they travel by value).
    /// An index-driven plan's index array and status buffer are at `index` (`(table, status)`).
    pub(crate) fn desc(
        &self,
        (src, dst): (u64, u64),
        params: u64,
        index: Option<(u64, u64)>,
        stream: u64,
    ) -> ConvertDesc {
        let (cs, cd) = &self.coalesced;
        let mut d = ConvertDesc {
            src,
            dst,
            stream,
            src_type: scalar(self.src_dtype),
            dst_type: scalar(self.dst_dtype),
            rank: cs.rank() as u32,
            src_span: self.source_span() as i64,
            params,
            ..ConvertDesc::default()
        };
        if let (Some(ix), Some((table, status))) = (self.indexed, index) {
            let b = ix.index_bytes as u64;
            (d.src_index, d.dst_index) = match ix.kind {
                IndexKind::Gather => (table, 0),
                IndexKind::Scatter => (0, table),
                IndexKind::BlockTable => (table, table + b),
            };
            d.status = status;
            (d.src_items, d.dst_items) = (ix.src_items as i64, ix.dst_items as i64);
            d.index_bytes = ix.index_bytes as i32;
            d.index_stride = ix.kind.stride() as i32;
        }
        for m in 0..MAX_RANK.min(cs.rank()) {
            d.shape[m] = cs.shape()[m] as i64;
            d.src_stride[m] = cs.stride()[m] as i64;
            d.dst_stride[m] = cd.stride()[m] as i64;
        }
        if let Some((mean, mul)) = &self.coefficients {
            d.affine = 1;
            d.channels = mean.len() as i64;
            if mean.len() <= CHANNELS_BY_VALUE {
                d.mean[..mean.len()].copy_from_slice(mean);
                d.mul[..mul.len()].copy_from_slice(mul);
            }
            if let Some((m, div)) = self.channel {
                d.chan_mode = m as i32;
                d.chan_div = div as i64;
            } else {
                d.chan_mode = -1;
            }
        } else {
            d.chan_mode = -1;
        }
        match &self.route {
            ConvertRoute::Elementwise {
                chunk,
                rows,
                chunks_per_row,
                blocks,
                ..
            } => {
                d.kind = ConvertKind::Elementwise;
                d.mode_a = cs.rank() as u32 - 1;
                d.mode_b = d.mode_a;
                d.chunk = *chunk as i64;
                d.rows = *rows as i64;
                d.chunks_per_row = *chunks_per_row as i64;
                d.blocks = *blocks as i64;
            }
            ConvertRoute::Tile {
                mode_a,
                mode_b,
                tile,
                tiles,
            } => {
                d.kind = ConvertKind::Tile;
                d.mode_a = *mode_a as u32;
                d.mode_b = *mode_b as u32;
                d.tile_a = tile.0 as i64;
                d.tile_b = tile.1 as i64;
                d.tiles_a = tiles.0 as i64;
                d.tiles_b = tiles.1 as i64;
                d.blocks = tiles.2 as i64;
            }
            ConvertRoute::Gather {
                vectors,
                divided,
                blocks,
                ..
            } => {
                d.kind = ConvertKind::Gather;
                d.mode_a = cs.rank() as u32 - 1;
                d.mode_b = d.mode_a;
                // elements whose coordinates one division gives: each its own, or a vector's
                d.chunk = if *divided {
                    1
                } else {
                    16 / self.dst_dtype.size_bytes() as i64
                };
                d.rows = cs.size() as i64;
                d.chunks_per_row = *vectors as i64;
                d.blocks = *blocks as i64;
            }
            ConvertRoute::Channels {
                channel_mode,
                pixel_mode,
                stage,
                tile,
                tiles,
                ..
            } => {
                d.kind = ConvertKind::Channels;
                d.mode_a = *channel_mode as u32;
                d.mode_b = *pixel_mode as u32;
                d.tile_a = *tile as i64;
                // the stage kind (dispatch.cu): 0 shared memory, 1 registers
                d.tile_b = (*stage == ChannelStage::Registers) as i64;
                d.tiles_a = tiles.0 as i64;
                d.blocks = tiles.1 as i64;
            }
            ConvertRoute::Empty => {}
        }
        d
    }
}

/// The bridge's name for a dtype.
pub(crate) fn scalar(d: DType) -> Scalar {
    match d {
        DType::F32 => Scalar::F32,
        DType::F64 => Scalar::F64,
        DType::F16 => Scalar::F16,
        DType::BF16 => Scalar::BF16,
        DType::U8 => Scalar::U8,
        DType::I8 => Scalar::I8,
        DType::U16 => Scalar::U16,
        DType::I16 => Scalar::I16,
        DType::U32 => Scalar::U32,
        DType::I32 => Scalar::I32,
        DType::U64 => Scalar::U64,
        DType::I64 => Scalar::I64,
        DType::F8E4M3 => Scalar::F8E4M3,
        DType::F8E5M2 => Scalar::F8E5M2,
    }
}

impl fmt::Display for ConvertPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "convert copy {} -> {}: {} -> {}",
            self.src_dtype, self.dst_dtype, self.src, self.dst
        )?;
        writeln!(
            f,
            "  coalesced: {} -> {}",
            self.coalesced.0, self.coalesced.1
        )?;
        match &self.route {
            ConvertRoute::Empty => writeln!(f, "  route: none, a zero extent: nothing is launched")?,
            ConvertRoute::Elementwise {
                chunk,
                rows,
                chunks_per_row,
                blocks,
                ..
            } => writeln!(
                f,
                "  route: convert family, Convert128, elementwise: {rows} rows x {chunks_per_row} chunks of {chunk} elements, {blocks} blocks of {THREADS} threads ({UNROLL} chunks each)"
            )?,
            ConvertRoute::Tile {
                tile, tiles, ..
            } => writeln!(
                f,
                "  route: convert family, Convert128, shared-memory tile {} x {}: {} tiles of {THREADS} threads",
                tile.1, tile.0, tiles.2
            )?,
            ConvertRoute::Gather {
                vectors,
                divided,
                blocks,
                ..
            } => writeln!(
                f,
                "  route: convert family, Convert128, gather: {vectors} destination vectors of 16 bytes, {blocks} blocks of {THREADS} threads ({GATHER_UNITS} vectors each), coordinates {}",
                if *divided { "divided per element" } else { "stepped per vector" }
            )?,
            ConvertRoute::Channels {
                channel_mode,
                pixel_mode,
                stage,
                tile,
                tiles,
                ..
            } => writeln!(
                f,
                "  route: convert family, Convert128, channels{}: {} x {tile} tiles (channel mode {channel_mode} x pixel mode {pixel_mode}), {} tiles of {THREADS} threads",
                match stage {
                    ChannelStage::Shared => "",
                    ChannelStage::Registers => " in registers",
                },
                self.coalesced.0.shape()[*channel_mode],
                tiles.1
            )?,
        }
        for r in self.reasons() {
            writeln!(f, "  - {r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rm(s: &[usize]) -> Layout {
        Layout::row_major(s).unwrap()
    }

    /// The plan of a valid conversion.
    fn plan(s: DType, d: DType, src: Layout, dst: Layout, cvt: &Convert) -> ConvertPlan {
        ConvertPlan::new(s, d, src, dst, cvt).unwrap()
    }

    /// `l` with a gap of 16 elements after each entry of mode 0: not compact, so the gather route
    /// does not apply (the tests of the other routes' choices write into it).
    fn gapped(l: Layout) -> Layout {
        let mut stride = l.stride().to_vec();
        stride[0] += 16;
        Layout::new(l.shape(), &stride).unwrap()
    }

    #[test]
    fn every_dtype_pair_converts_or_is_refused_by_rule() {
        let mut refused = 0;
        for s in DType::ALL {
            for d in DType::ALL {
                match conversion(s, d) {
                    Ok(rule) => {
                        if s == d {
                            assert_eq!(rule, ConvertRule::Exact);
                        }
                    }
                    Err(Error::UnsupportedConversion { src, dst }) => {
                        assert_eq!((src, dst), (s, d));
                        assert!(!s.is_float() && d.is_float(), "{s} -> {d}");
                        refused += 1;
                    }
                    Err(e) => panic!("{s} -> {d}: {e}"),
                }
            }
        }
        // i64/u64 -> f16, bf16, e4m3, e5m2; i32/u32 -> e4m3, e5m2
        assert_eq!(refused, 2 * 4 + 2 * 2);
        use ConvertRule::*;
        assert_eq!(conversion(DType::BF16, DType::F16).unwrap(), NearestEven);
        assert_eq!(conversion(DType::F8E5M2, DType::F16).unwrap(), Exact);
        assert_eq!(conversion(DType::F8E4M3, DType::BF16).unwrap(), Exact);
        assert_eq!(conversion(DType::F16, DType::BF16).unwrap(), NearestEven);
        assert_eq!(conversion(DType::U8, DType::F16).unwrap(), Exact);
        assert_eq!(conversion(DType::I16, DType::F16).unwrap(), NearestEven);
        assert_eq!(
            conversion(DType::U8, DType::F8E4M3).unwrap(),
            NearestEvenSatFinite
        );
        assert_eq!(conversion(DType::I8, DType::U8).unwrap(), Saturate);
        assert_eq!(conversion(DType::U8, DType::I16).unwrap(), Exact);
        assert_eq!(conversion(DType::U32, DType::I32).unwrap(), Saturate);
        assert_eq!(
            conversion(DType::F32, DType::U8).unwrap(),
            NearestEvenSaturate
        );
    }

    #[test]
    fn same_fastest_mode_is_elementwise_with_the_destination_phase_in_the_chunk_count() {
        // bf16 [64,1024,1023] sliced from [64,1024,1024] -> packed f32
        let src = Layout::new(&[64, 1024, 1023], &[1024 * 1024, 1024, 1]).unwrap();
        let p = ConvertPlan::new(
            DType::BF16,
            DType::F32,
            src,
            gapped(rm(&[64, 1024, 1023])),
            &Convert::new(),
        )
        .unwrap();
        let ConvertRoute::Elementwise {
            chunk,
            rows,
            chunks_per_row,
            vector_load,
            vector_store,
            ..
        } = p.route
        else {
            panic!("{p}")
        };
        assert_eq!((chunk, rows), (16, 65536), "{p}");
        assert_eq!(chunks_per_row, (1023 + 3usize).div_ceil(16), "{p}");
        assert!(vector_load && vector_store, "{p}");
        assert!(
            p.to_string().contains("IEEE") || p.to_string().contains("exact"),
            "{p}"
        );
        assert_eq!(p.bytes_moved(), 64 * 1024 * 1023 * 6);
    }

    #[test]
    fn lane_interleave_skips_1_byte_destinations_8x_widenings_and_channels_along_the_row() {
        let packed = rm(&[1000, 96]);
        // Same-width, narrowing and widening (up to 4x) pairs to 2 bytes or more, scaled:
        // interleaved; a widening pair's units load 4- or 8-byte words.
        for (s, d, words) in [
            (DType::F32, DType::BF16, false),
            (DType::F32, DType::F16, false),
            (DType::F64, DType::F32, false),
            (DType::F64, DType::BF16, false),
            (DType::BF16, DType::F32, true),
            (DType::U8, DType::F32, true),
            (DType::U8, DType::BF16, true),
            (DType::F16, DType::F64, true),
            (DType::I16, DType::I64, true),
        ] {
            let p = plan(s, d, packed, gapped(packed), &Convert::new().scale(0.5));
            assert!(p.lane_interleaved(), "{p}");
            assert!(p.to_string().contains("lane-interleaved"), "{p}");
            assert_eq!(p.to_string().contains("-byte word"), words, "{p}");
        }
        // 1-byte destinations and widenings of more than 4x keep their chunks.
        for (s, d) in [
            (DType::F16, DType::F8E4M3),
            (DType::U8, DType::F64),
            (DType::I8, DType::I64),
        ] {
            let p = plan(s, d, packed, gapped(packed), &Convert::new());
            assert!(!p.lane_interleaved(), "{p}");
            assert!(p.to_string().contains("not lane-interleaved"), "{p}");
        }
        // A channel on an outer mode (rows padded to 336, so the modes do not coalesce): one
        // channel per row, interleaved.
        let cvt = Convert::new().normalize(0, &[0.0; 10], &[1.0; 10]);
        let padded = Layout::new(&[10, 333], &[336, 1]).unwrap();
        let p = plan(DType::F32, DType::BF16, padded, padded, &cvt);
        assert!(p.lane_interleaved(), "{p}");
        // Packed, the same rows coalesce into one: the channel then steps along it.
        let p = plan(
            DType::F32,
            DType::BF16,
            rm(&[10, 333]),
            rm(&[10, 333]),
            &cvt,
        );
        assert!(!p.lane_interleaved(), "{p}");
        // A strided destination stores element by element: nothing to interleave.
        let dst = Layout::new(&[1000, 96], &[192, 2]).unwrap();
        let p = plan(DType::F32, DType::F16, packed, dst, &Convert::new());
        assert!(
            matches!(
                p.route,
                ConvertRoute::Elementwise {
                    vector_store: false,
                    ..
                }
            ),
            "{p}"
        );
        assert!(!p.lane_interleaved(), "{p}");
        // The tile route never does.
        let p = plan(
            DType::F32,
            DType::F16,
            packed,
            rm(&[96, 1000]).permute(&[1, 0]).unwrap(),
            &Convert::new(),
        );
        assert!(!p.lane_interleaved(), "{p}");
    }

    #[test]
    fn nhwc_to_nchw_takes_the_channels_route_with_a_per_channel_table() {
        // u8 NHWC [64,224,224,3] -> f32 NCHW, normalized over C
        let src = rm(&[64, 224, 224, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let cvt = Convert::new().normalize(1, &[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        // (the destination is compact, so the gather route applies too: the channels tile wins,
        // see `gather_wins`)
        let p = ConvertPlan::new(DType::U8, DType::F32, src, rm(&[64, 3, 224, 224]), &cvt).unwrap();
        let ConvertRoute::Channels {
            channel_mode,
            pixel_mode,
            interleaved,
            stage,
            tile,
            tiles,
        } = p.route
        else {
            panic!("{p}")
        };
        let (cs, cd) = &p.coalesced;
        assert_eq!(interleaved, Interleaved::Source, "{p}");
        // 3 packed channels into planes of 224 x 224 f32 (whole 16-byte vectors apart): a
        // destination vector's 4 pixels are 12 bytes of source, too few for the register stage
        assert_eq!(stage, ChannelStage::Shared, "{p}");
        assert_eq!(
            (cs.stride()[channel_mode], cs.stride()[pixel_mode]),
            (1, 3),
            "{p}"
        );
        assert_eq!(cd.stride()[pixel_mode], 1, "{p}");
        // H x W = 50176 pixels of 64 images: the 16 KiB stage holds 5451 pixels, cut to 5120 (5
        // whole rounds of 256 f32 vectors a plane): 10 tiles an image, 640 blocks
        assert_eq!((tile, tiles), (5120, (10, 640)), "{p}");
        // the channel mode survives coalescing as the channel mode with div 1
        assert_eq!(p.channel, Some((channel_mode, 1)), "{p}");
        let (mean, mul) = p.coefficients.clone().unwrap();
        assert_eq!(mean, vec![1.0, 2.0, 3.0]);
        assert_eq!(mul[1], 1.0f32 / 5.0);
        let text = p.to_string();
        assert!(text.contains("normalized per channel"), "{p}");
        assert!(text.contains("channels: 3 x 5120 tiles"), "{p}");
        assert!(text.contains("a multiple of 1024 pixels"), "{p}");
        assert!(
            text.contains("the shared stage, not registers: a destination vector's 4 pixels are 12 bytes of source, under 16"),
            "{p}"
        );
        // to bf16: 8 pixels a vector, 24 bytes of source: in registers, 2048 pixels a tile
        let src = rm(&[64, 224, 224, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let p16 =
            ConvertPlan::new(DType::U8, DType::BF16, src, rm(&[64, 3, 224, 224]), &cvt).unwrap();
        assert!(
            p16.to_string()
                .contains("channels in registers: 3 x 2048 tiles"),
            "{p16}"
        );
        assert!(
            p16.to_string()
                .contains("its vector's 8 pixels (24 bytes of source"),
            "{p16}"
        );
        assert!(
            matches!(
                p16.route,
                ConvertRoute::Channels {
                    stage: ChannelStage::Registers,
                    tile: 2048,
                    tiles: (25, 1600),
                    ..
                }
            ),
            "{p16}"
        );
        // a 1-byte destination (u8 -> u8 normalized) keeps the shared-memory stage
        let src = rm(&[64, 224, 224, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let p8 = ConvertPlan::new(DType::U8, DType::U8, src, rm(&[64, 3, 224, 224]), &cvt).unwrap();
        assert!(
            matches!(
                p8.route,
                ConvertRoute::Channels {
                    stage: ChannelStage::Shared,
                    ..
                }
            ),
            "{p8}"
        );
        // pixels of 4 elements (RGBX, 3 channels read): the shared-memory stage, whose 16 KiB
        // hold 4088 pixels, cut to 3 whole rounds of 1024 (17 tiles an image, 1088 blocks); its
        // planes of 224 x 224 f32 are whole 16-byte vectors apart: one vector index, every plane
        let rgbx = Layout::new(&[64, 3, 224, 224], &[224 * 224 * 4, 1, 224 * 4, 4]).unwrap();
        let sh =
            ConvertPlan::new(DType::U8, DType::F32, rgbx, rm(&[64, 3, 224, 224]), &cvt).unwrap();
        let ConvertRoute::Channels {
            interleaved,
            stage,
            tile,
            tiles,
            ..
        } = sh.route
        else {
            panic!("{sh}")
        };
        assert_eq!(stage, ChannelStage::Shared, "{sh}");
        assert_eq!((tile, tiles), (3072, (17, 1088)), "{sh}");
        assert!(
            channel_stage_bytes(interleaved, 3, tile, 4, 1) <= CHANNEL_STAGE_BYTES,
            "{sh}"
        );
        let text = sh.to_string();
        assert!(text.contains("the channels route, a 3 x 3072 tile"), "{sh}");
        assert!(text.contains("vector j of all 3 rows"), "{sh}");
        // planes of 299 x 299 f32 are not: one (plane, vector) a thread
        let src = rm(&[32, 299, 299, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let odd =
            ConvertPlan::new(DType::U8, DType::F32, src, rm(&[32, 3, 299, 299]), &cvt).unwrap();
        assert!(
            matches!(
                odd.route,
                ConvertRoute::Channels {
                    stage: ChannelStage::Shared,
                    ..
                }
            ),
            "{odd}"
        );
        assert!(
            odd.to_string().contains("one (row, vector) at a time"),
            "{odd}"
        );
        // the same copy the other way (NCHW -> NHWC) interleaves the destination
        let dst = rm(&[64, 224, 224, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let p =
            ConvertPlan::new(DType::F32, DType::BF16, rm(&[64, 3, 224, 224]), dst, &cvt).unwrap();
        let ConvertRoute::Channels {
            interleaved, tile, ..
        } = p.route
        else {
            panic!("{p}")
        };
        assert_eq!(interleaved, Interleaved::Destination, "{p}");
        // in registers: groups of 8 pixels (3 vectors of 8 bf16), 256 a tile
        assert_eq!(tile, 2048, "{p}");
        assert!(
            p.to_string()
                .contains("one group of 8 pixels (3 destination vectors)"),
            "{p}"
        );
        // over 128 bytes of source a group (f64 -> u8: 17 pixels of 3 planes of 8 bytes): the
        // shared-memory stage, 3 rows of an odd number of vectors within 16 KiB
        let dst = rm(&[64, 224, 224, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let wide = ConvertPlan::new(
            DType::F64,
            DType::U8,
            rm(&[64, 3, 224, 224]),
            dst,
            &Convert::new(),
        )
        .unwrap();
        assert!(
            matches!(
                wide.route,
                ConvertRoute::Channels {
                    stage: ChannelStage::Shared,
                    interleaved: Interleaved::Destination,
                    ..
                }
            ),
            "{wide}"
        );
        // a crop of 8 x 1080 rows of 1920 pixels: 8640 blocks already, one tile a row
        let frames = rm(&[8, 3, 1088, 1928]);
        let crop = Layout::new(&[8, 3, 1080, 1920], frames.stride()).unwrap();
        let dst = rm(&[8, 1080, 1920, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let p = ConvertPlan::new(DType::U8, DType::BF16, crop, dst, &cvt).unwrap();
        assert!(
            matches!(
                p.route,
                ConvertRoute::Channels {
                    stage: ChannelStage::Shared,
                    tile: 1920,
                    tiles: (1, 8640),
                    ..
                }
            ),
            "{p}"
        );
        assert!(
            p.to_string()
                .contains("narrowing pairs only (1-byte into 2-byte elements"),
            "{p}"
        );
        let ConvertRoute::Channels {
            interleaved, tile, ..
        } = wide.route
        else {
            panic!("{wide}")
        };
        assert!(channel_stage_bytes(interleaved, 3, tile, 1, 8) <= CHANNEL_STAGE_BYTES);
    }

    #[test]
    fn the_register_stage_takes_only_the_width_pairs_measured_faster_than_the_stage() {
        // the (channels, sw, dw) of 3 or 4 channels and every width pair that take registers
        // with the interleaved side `il`, pixels of `pixel(c)` elements, planes `plane` apart
        let taken = |il, pixel: fn(usize) -> usize, plane| -> Vec<_> {
            [3, 4]
                .into_iter()
                .flat_map(|c| [1, 2, 4, 8].map(|sw| (c, sw)))
                .flat_map(|(c, sw)| [1, 2, 4, 8].map(|dw| (c, sw, dw)))
                .filter(|&(c, sw, dw)| register_stage(il, (c, pixel(c)), plane, (sw, dw)))
                .collect()
        };
        // an interleaved source: a destination vector's pixels 16 to 64 bytes of source; planes
        // at one 16-byte phase (plane 4096)
        let src = taken(Interleaved::Source, |c| c, 4096);
        assert_eq!(
            src,
            [
                (3, 1, 2),
                (3, 2, 2),
                (3, 2, 4),
                (3, 4, 4),
                (4, 1, 2),
                (4, 1, 4),
                (4, 2, 2),
                (4, 2, 4),
                (4, 4, 4)
            ]
        );
        // u8 RGB -> f32 (12 bytes a vector) keeps the stage, and so do planes at two phases and
        // pixels with a spare element
        assert!(!register_stage(Interleaved::Source, (3, 3), 4096, (1, 4)));
        assert!(!register_stage(Interleaved::Source, (3, 3), 4095, (2, 2)));
        assert!(!register_stage(Interleaved::Source, (3, 4), 4096, (2, 2)));
        // an interleaved destination: narrowing pairs only (f32 planes into f16 / bf16 RGB or
        // RGBA), the u8 crop keeps the stage
        let dst = taken(Interleaved::Destination, |_| 1, 1);
        assert_eq!(dst, [(3, 4, 2), (4, 4, 2)]);
    }

    #[test]
    fn a_register_group_is_the_fewest_whole_pixels_that_fill_whole_vectors() {
        for c in 1..=16 {
            for dw in [1, 2, 4, 8] {
                let g = group_pixels(c, dw);
                assert_eq!(g * c * dw % 16, 0, "c {c} dw {dw}");
                assert!((1..g).all(|k| k * c * dw % 16 != 0), "c {c} dw {dw}");
            }
        }
        assert_eq!(
            [
                (3, 1),
                (3, 2),
                (3, 4),
                (3, 8),
                (4, 1),
                (4, 2),
                (4, 4),
                (4, 8)
            ]
            .map(|(c, dw)| group_pixels(c, dw)),
            [16, 8, 4, 2, 4, 2, 1, 1]
        );
    }

    #[test]
    fn channel_tiles_fit_the_stage_and_cover_the_pixel_mode() {
        for il in [Interleaved::Source, Interleaved::Destination] {
            for c in 2..=MAX_CHANNELS {
                for sw in [1, 2, 4, 8] {
                    for w in [64, 65, 1000, 1920, 50176, 1 << 22] {
                        let pixels: Vec<usize> = match il {
                            Interleaved::Source => (c..=MAX_PIXEL_BYTES / sw).collect(),
                            Interleaved::Destination => vec![1],
                        };
                        for ((pixel, others), (pitch, dw)) in
                            pixels.into_iter().zip([1, 7, 64, 5000].iter().cycle()).zip(
                                [(4096, 4), (200704, 2), (3, 1), (1024, 8), (8, 4)]
                                    .iter()
                                    .cycle(),
                            )
                        {
                            let (blocks, round) = channel_tile_goal(il, *pitch, *dw);
                            let tw = channel_tile(il, (c, w), pixel, sw, *others, (blocks, round));
                            let at = format!("{il:?} c {c} w {w} sw {sw} dw {dw} pitch {pitch}");
                            assert!(tw >= 16 && tw <= w, "{at}");
                            assert!(tw == w || tw % 16 == 0, "{at}");
                            let stage = channel_stage_bytes(il, c, tw, pixel, sw);
                            assert!(stage <= CHANNEL_STAGE_BYTES, "{at}: {stage}");
                            // whole store rounds once a tile holds one
                            if tw < w && tw >= round {
                                assert_eq!(tw % round, 0, "{at}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_channels_route_refuses_long_channel_modes_short_pixel_modes_and_gapped_destinations() {
        let is_channels = |p: &ConvertPlan| matches!(p.route, ConvertRoute::Channels { .. });
        // 20 channels: more than the route's 16, a tile cut to the short mode
        let src = rm(&[4, 50, 60, 20]).permute(&[0, 3, 1, 2]).unwrap();
        let p = plan(
            DType::U8,
            DType::F32,
            src,
            gapped(rm(&[4, 20, 50, 60])),
            &Convert::new(),
        );
        assert!(
            matches!(p.route, ConvertRoute::Tile { tile: (32, _), .. }),
            "{p}"
        );
        // 16 channels: the route
        let src = rm(&[4, 50, 60, 16]).permute(&[0, 3, 1, 2]).unwrap();
        assert!(is_channels(&plan(
            DType::U8,
            DType::F32,
            src,
            gapped(rm(&[4, 16, 50, 60])),
            &Convert::new()
        )));
        // 40 pixels: too few for a block of its own
        let src = rm(&[4096, 40, 3]).permute(&[0, 2, 1]).unwrap();
        let p = plan(
            DType::U8,
            DType::F32,
            src,
            gapped(rm(&[4096, 3, 40])),
            &Convert::new(),
        );
        assert!(!is_channels(&p), "{p}");
        // an interleaved destination with a gap (RGB written into RGBX): the tile route
        let frames = rm(&[8, 3, 1088, 1928]);
        let crop = Layout::new(&[8, 3, 1080, 1920], frames.stride()).unwrap();
        let rgbx = Layout::new(&[8, 1080, 1920, 3], &[1080 * 1920 * 4, 1920 * 4, 4, 1]).unwrap();
        let p = plan(
            DType::U8,
            DType::BF16,
            crop.permute(&[0, 2, 3, 1]).unwrap(),
            rgbx,
            &Convert::new(),
        );
        assert!(matches!(p.route, ConvertRoute::Tile { .. }), "{p}");
        // an interleaved source with a gap (RGBX read as RGB) stays on the route
        let src = Layout::new(&[8, 1080, 1920, 3], &[1080 * 1920 * 4, 1920 * 4, 4, 1])
            .unwrap()
            .permute(&[0, 3, 1, 2])
            .unwrap();
        let p = plan(
            DType::U8,
            DType::F32,
            src,
            rm(&[8, 3, 1080, 1920]),
            &Convert::new(),
        );
        assert!(is_channels(&p), "{p}");
        // a normalization whose channel steps along the pixel mode: the tile route
        let src = rm(&[8, 1024, 3]).permute(&[0, 2, 1]).unwrap();
        let cvt = Convert::new().normalize(2, &[0.0; 1024], &[1.0; 1024]);
        let p = plan(DType::U8, DType::F32, src, gapped(rm(&[8, 3, 1024])), &cvt);
        assert!(matches!(p.route, ConvertRoute::Tile { .. }), "{p}");
        let cvt = Convert::new().normalize(1, &[0.0; 3], &[1.0; 3]);
        assert!(is_channels(&plan(
            DType::U8,
            DType::F32,
            src,
            rm(&[8, 3, 1024]),
            &cvt
        )));
    }

    #[test]
    fn row_loads_of_narrow_sources_stage_in_an_order_rotated_per_lane() {
        // u8 NCHW cropped -> bf16 NHWC with a fourth channel slot left alone (the channels route
        // needs a contiguous interleaved destination): tile rows of mode a loaded by vectors,
        // 16 u8 -> 8 words
        let frames = rm(&[8, 3, 1088, 1928]);
        let crop = Layout::new(&[8, 3, 1080, 1920], frames.stride()).unwrap();
        let src = crop.permute(&[0, 2, 3, 1]).unwrap();
        let rgbx = Layout::new(&[8, 1080, 1920, 3], &[1080 * 1920 * 4, 1920 * 4, 4, 1]).unwrap();
        // u8 -> bf16: 8 words, u8 -> f32: 16 words, both rotated
        for (d, words) in [(DType::BF16, 8), (DType::F32, 16)] {
            let p = plan(DType::U8, d, src, rgbx, &Convert::new());
            assert!(matches!(p.route, ConvertRoute::Tile { .. }), "{p}");
            let want = format!("its vector's {words} stage words");
            assert!(p.to_string().contains(&want), "{p}");
        }
        // u8 -> f64 (32 words) and f32 -> bf16 (2 words) keep their order
        for (s, d) in [(DType::U8, DType::F64), (DType::F32, DType::BF16)] {
            let p = plan(s, d, src, rgbx, &Convert::new());
            assert!(!p.to_string().contains("stage words"), "{p}");
        }
    }

    #[test]
    fn a_channel_folded_into_a_longer_mode_is_found_by_its_divisor() {
        // f32 NHWC -> f16 NHWC, normalized over C = 3: the pair coalesces to one mode of N*H*W*C
        let cvt = Convert::new().normalize(3, &[0.5; 3], &[2.0; 3]);
        let l = rm(&[2, 5, 7, 3]);
        let p = ConvertPlan::new(DType::F32, DType::F16, l, l, &cvt).unwrap();
        assert_eq!(p.coalesced.0.rank(), 1, "{p}");
        assert_eq!(p.channel, Some((0, 1)), "{p}");
        // NCHW normalized over C: C sits inside the one mode at divisor H*W
        let l = rm(&[2, 3, 5, 7]);
        let cvt = Convert::new().normalize(1, &[0.5; 3], &[2.0; 3]);
        let p = ConvertPlan::new(DType::F32, DType::F16, l, l, &cvt).unwrap();
        assert_eq!(p.channel, Some((0, 35)), "{p}");
    }

    #[test]
    fn the_gather_route_replaces_tiles_and_widenings_of_many_rows_only() {
        let is_gather = |p: &ConvertPlan| matches!(p.route, ConvertRoute::Gather { .. });
        let plain = Convert::new();
        // tiny items transposed ([131072, 3, 5] -> [131072, 5, 3]): instead of a 4 x 8 tile each
        let items = rm(&[131072, 3, 5]).permute(&[0, 2, 1]).unwrap();
        let p = plan(DType::F32, DType::F32, items, rm(&[131072, 5, 3]), &plain);
        assert!(is_gather(&p), "{p}");
        // strided rows widened into packed ones: instead of the elementwise route
        let strided = Layout::new(&[64, 1024, 1023], &[1048576, 1024, 1]).unwrap();
        let p = plan(
            DType::BF16,
            DType::F32,
            strided,
            rm(&[64, 1024, 1023]),
            &plain,
        );
        assert!(is_gather(&p), "{p}");
        // not a widening into 2-byte elements, not one run (every vector whole), not a narrowing
        // or same-width copy
        let u8_rows = Layout::new(&[4096, 3001], &[3008, 1]).unwrap();
        let p = plan(DType::U8, DType::BF16, u8_rows, rm(&[4096, 3001]), &plain);
        assert!(matches!(p.route, ConvertRoute::Elementwise { .. }), "{p}");
        let p = plan(DType::U8, DType::F32, u8_rows, rm(&[4096, 3001]), &plain);
        assert!(is_gather(&p), "{p}");
        let packed = rm(&[4096, 4096]);
        let p = plan(DType::BF16, DType::F32, packed, packed, &plain);
        assert!(matches!(p.route, ConvertRoute::Elementwise { .. }), "{p}");
        for (s, d) in [(DType::F32, DType::BF16), (DType::F16, DType::F16)] {
            let p = plan(s, d, strided, rm(&[64, 1024, 1023]), &plain);
            assert!(matches!(p.route, ConvertRoute::Elementwise { .. }), "{p}");
        }
        let heads = rm(&[8, 32, 4096, 128]).permute(&[0, 2, 1, 3]).unwrap();
        let p = plan(
            DType::F16,
            DType::F8E4M3,
            heads,
            rm(&[8, 4096, 32, 128]),
            &Convert::new().scale(74.7),
        );
        assert!(matches!(p.route, ConvertRoute::Elementwise { .. }), "{p}");
        // not a channels tile: NHWC -> NCHW, and a crop of planes -> NHWC
        let cvt = Convert::new().normalize(1, &[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        let nhwc = rm(&[64, 224, 224, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let p = plan(DType::U8, DType::F32, nhwc, rm(&[64, 3, 224, 224]), &cvt);
        assert!(matches!(p.route, ConvertRoute::Channels { .. }), "{p}");
        let crop = Layout::new(&[8, 3, 1080, 1920], rm(&[8, 3, 1088, 1928]).stride()).unwrap();
        let nhwc_out = rm(&[8, 1080, 1920, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let p = plan(DType::U8, DType::BF16, crop, nhwc_out, &cvt);
        assert!(matches!(p.route, ConvertRoute::Channels { .. }), "{p}");
        // the plan says why
        let p = plan(DType::F32, DType::F32, items, rm(&[131072, 5, 3]), &plain);
        assert!(p.to_string().contains("gather"), "{p}");
    }

    #[test]
    fn the_gather_divides_each_elements_coordinates_where_the_fastest_mode_is_short_and_ragged() {
        // f32: 4 elements a vector; under 8 and not 4: a carry inside most vectors
        assert!(gather_divides(3, 4) && gather_divides(5, 4) && gather_divides(7, 4));
        assert!(!gather_divides(4, 4) && !gather_divides(8, 4) && !gather_divides(9, 4));
        assert!(!gather_divides(1023, 4));
        // f64: 2 a vector; u8: 16 a vector
        assert!(gather_divides(3, 8) && !gather_divides(2, 8) && !gather_divides(4, 8));
        assert!(gather_divides(31, 1) && !gather_divides(16, 1) && !gather_divides(32, 1));
        // the plan: f32 items [131072, 3, 5] (0, 2, 1) divides, strided bf16 rows -> f32 steps
        let plain = Convert::new();
        let items = rm(&[131072, 3, 5]).permute(&[0, 2, 1]).unwrap();
        let p = plan(DType::F32, DType::F32, items, rm(&[131072, 5, 3]), &plain);
        assert!(
            matches!(p.route, ConvertRoute::Gather { divided: true, .. }),
            "{p}"
        );
        assert!(p.to_string().contains("divided per element"), "{p}");
        let rows = Layout::new(&[64, 1024, 1023], &[1048576, 1024, 1]).unwrap();
        let p = plan(DType::BF16, DType::F32, rows, rm(&[64, 1024, 1023]), &plain);
        assert!(
            matches!(p.route, ConvertRoute::Gather { divided: false, .. }),
            "{p}"
        );
        assert!(p.to_string().contains("stepped per vector"), "{p}");
    }

    #[test]
    fn the_gather_route_takes_compact_destinations_whose_loads_stay_local() {
        let c = |shape: &[usize], ss: &[usize], ds: &[usize], w: (usize, usize)| {
            gather_route(shape, ss, ds, w)
        };
        // strided rows into packed ones: mode 1 steps 2 bytes; 4 f32 a vector, room for a phase
        let n = 65536 * 1023;
        assert_eq!(
            c(&[65536, 1023], &[1024, 1], &[1023, 1], (2, 4)),
            Some(ConvertRoute::Gather {
                vectors: (n + 6) / 4,
                locality: (1, 1),
                divided: false,
                blocks: ((n + 6) / 4).div_ceil(512),
            })
        );
        // the route's locality, where the gather applies
        let locality = |g: Option<ConvertRoute>| match g {
            Some(ConvertRoute::Gather { locality, .. }) => Some(locality),
            _ => None,
        };
        // NHWC -> NCHW: the pixel mode steps 3 bytes
        let g = c(
            &[64, 3, 50176],
            &[150528, 1, 3],
            &[150528, 50176, 1],
            (1, 4),
        );
        assert_eq!(locality(g), Some((1, 2)));
        // planes -> NHWC: the 3 channels step a plane apart, then the pixel mode 1 byte
        let g = c(
            &[8, 1080, 1920, 3],
            &[6292992, 1928, 1, 2097664],
            &[6220800, 5760, 3, 1],
            (1, 2),
        );
        assert_eq!(locality(g), Some((3, 2)));
        // tiny matrices transposed: 3 x 5 elements, then a mode of unit step
        let g = c(&[131072, 5, 3], &[15, 1, 5], &[15, 3, 1], (4, 4));
        assert_eq!(locality(g), Some((3, 1)));
        // a transpose: 7001 elements of 40004-byte steps before any short one
        assert_eq!(c(&[7001, 10000], &[1, 7001], &[10000, 1], (4, 4)), None);
        // 8 x 3 = 24 elements of long steps: past the short modes' 16
        assert_eq!(c(&[100, 8, 3], &[1, 300, 100], &[24, 3, 1], (4, 4)), None);
        // a gap in the destination (a crop of it) or a mode out of order
        assert_eq!(c(&[100, 30], &[30, 1], &[32, 1], (4, 4)), None);
        assert_eq!(c(&[100, 30], &[30, 1], &[1, 100], (4, 4)), None);
        // more elements than 32-bit indices hold
        assert_eq!(
            c(&[1 << 16, 1 << 15], &[1 << 15, 1], &[1 << 15, 1], (4, 4)),
            None
        );
    }

    #[test]
    fn bad_normalizations_and_pairs_are_typed_errors() {
        let l = rm(&[4, 3]);
        let bad = [
            Convert::new().normalize(2, &[0.0; 3], &[1.0; 3]),
            Convert::new().normalize(1, &[0.0; 2], &[1.0; 3]),
            Convert::new().normalize(1, &[0.0; 3], &[1.0, 0.0, 1.0]),
            Convert::new().scale(f32::NAN),
        ];
        for c in bad {
            let e = ConvertPlan::new(DType::F32, DType::F16, l, l, &c);
            assert!(matches!(e, Err(Error::Normalize(_))), "{c:?}: {e:?}");
        }
        let e = ConvertPlan::new(DType::I64, DType::BF16, l, l, &Convert::new());
        assert!(
            matches!(e, Err(Error::UnsupportedConversion { .. })),
            "{e:?}"
        );
        let e = ConvertPlan::new(DType::F32, DType::F16, l, rm(&[3, 4]), &Convert::new());
        assert!(matches!(e, Err(Error::LayoutMismatch { .. })), "{e:?}");
        let e = ConvertPlan::new(
            DType::F32,
            DType::F16,
            l,
            Layout::new(&[4, 3], &[0, 1]).unwrap(),
            &Convert::new(),
        );
        assert!(matches!(e, Err(Error::DestinationNotInjective(_))), "{e:?}");
    }

    #[test]
    fn empty_shapes_plan_nothing() {
        let l = Layout::new(&[0, 3], &[1, 2]).unwrap();
        let p = ConvertPlan::new(DType::F32, DType::BF16, l, rm(&[0, 3]), &Convert::new()).unwrap();
        assert_eq!(p.route, ConvertRoute::Empty);
        assert!(p.to_string().contains("nothing is launched"), "{p}");
    }

    #[test]
    fn wide_tiles_grow_a_short_modes_tile_within_the_stage_budget() {
        // u8 NHWC -> f32 NCHW (C = 3 coalesced against H x W): 4 x 2048, a 40 KiB stage.
        assert_eq!(tile_extents(3, 50176, Some(4)), (4, 2048));
        assert_eq!(stage_bytes(4, 2048, 4), 40 << 10);
        // u8 NCHW crop -> bf16 NHWC: W = 1920 whole in one 2048 x 4 tile.
        assert_eq!(tile_extents(1920, 3, Some(2)), (2048, 4));
        // Without vectors on both sides, the 4096-element rule.
        assert_eq!(tile_extents(3, 50176, None), (4, 1024));
        assert_eq!(tile_extents(1920, 3, None), (1024, 4));
        // Square tiles do not grow.
        assert_eq!(tile_extents(1000, 1000, Some(2)), (64, 64));
        for (ea, eb, dw) in [
            (2, 1 << 20, 8),
            (1 << 20, 2, 8),
            (7, 9000, 1),
            (9000, 33, 2),
        ] {
            let (ta, tb) = tile_extents(ea, eb, Some(dw));
            assert!(ta * tb <= WIDE_TILE_ELEMS && ta.max(tb) <= MAX_WIDE_TILE_SIDE);
            assert!(ta * tb <= TILE_ELEMS || stage_bytes(ta, tb, dw) <= WIDE_STAGE_BYTES);
        }
        // pixels 80 bytes apart (a channel crop of 80): too wide a pixel for the channels route
        let src = Layout::new(&[64, 224, 224, 3], &[224 * 224 * 80, 224 * 80, 80, 1])
            .unwrap()
            .permute(&[0, 3, 1, 2])
            .unwrap();
        let p = ConvertPlan::new(
            DType::U8,
            DType::F32,
            src,
            rm(&[64, 3, 224, 224]),
            &Convert::new(),
        )
        .unwrap();
        assert!(
            matches!(
                p.route,
                ConvertRoute::Tile {
                    tile: (4, 2048),
                    ..
                }
            ),
            "{p}"
        );
        assert!(p.to_string().contains("a wide tile"), "{p}");
    }

    #[test]
    fn tiles_keep_4096_elements_and_cover_their_modes() {
        for (ea, eb) in [
            (1, 1),
            (3, 50176),
            (50176, 3),
            (1000, 1000),
            (5, 7),
            (64, 2),
        ] {
            let (ta, tb) = tile_extents(ea, eb, None);
            assert!(ta.is_power_of_two() && tb.is_power_of_two(), "{ea} {eb}");
            assert!(
                ta * tb <= TILE_ELEMS && ta.max(tb) <= MAX_TILE_SIDE,
                "{ea} {eb}: {ta} x {tb}"
            );
            assert!(
                ta >= ea.min(64) && tb >= eb.min(64),
                "{ea} {eb}: {ta} x {tb}"
            );
        }
    }

    #[test]
    fn index_driven_plans_keep_the_item_mode_apart_and_span_the_whole_source() {
        // contiguous rows would coalesce with the item mode: it stays mode 0
        let (pool, out) = (rm(&[1000, 256]), rm(&[7, 256]));
        let p = ConvertPlan::indexed(
            (DType::F32, DType::BF16),
            (pool, out),
            IndexKind::Gather,
            1,
            (7, 8),
            &Convert::new(),
        )
        .unwrap();
        assert_eq!(p.coalesced.0, Layout::new(&[7, 256], &[256, 1]).unwrap());
        assert_eq!(p.coalesced.1, Layout::new(&[7, 256], &[256, 1]).unwrap());
        assert_eq!(p.bytes_moved(), 7 * 256 * 6);
        let ix = p.indexed.unwrap();
        assert_eq!((ix.items, ix.src_items, ix.dst_items), (7, 1000, 7));
        assert!(ix.source_indexed() && !ix.destination_indexed());
        let d = p.desc((256, 512), 0, Some((1024, 2048)), 0);
        assert_eq!((d.src_index, d.dst_index, d.status), (1024, 0, 2048));
        assert_eq!((d.src_items, d.dst_items, d.index_stride), (1000, 7, 1));
        // the source span is the pool's, not the 7 items'
        assert_eq!(d.src_span, 1000 * 256 * 4);
        assert!(p.to_string().contains("index-driven (row gather)"), "{p}");

        // a block table over [blocks * 16, heads, head_dim] rows: items of (16, 2 * 64)
        let (a, b) = (rm(&[9 * 16, 2, 64]), rm(&[5 * 16 + 3, 2, 64]));
        let p = ConvertPlan::indexed(
            (DType::BF16, DType::F8E4M3),
            (a, b),
            IndexKind::BlockTable,
            16,
            (8, 4),
            &Convert::new().scale(2.0),
        )
        .unwrap();
        let ix = p.indexed.unwrap();
        assert_eq!((ix.items, ix.src_items, ix.dst_items), (4, 9, 5));
        assert_eq!(
            p.coalesced.0,
            Layout::new(&[4, 16 * 128], &[16 * 128, 1]).unwrap()
        );
        let d = p.desc((64, 64), 0, Some((4096, 8192)), 0);
        assert_eq!((d.src_index, d.dst_index, d.index_stride), (4096, 4100, 2));
        assert_eq!(d.src_span, 9 * 16 * 128 * 2);

        // a channel along an item's mode maps into the coalesced modes, shifted past mode 0
        let norm = Convert::new().normalize(2, &[0.0; 3], &[1.0; 3]);
        let p = ConvertPlan::indexed(
            (DType::U8, DType::F32),
            (rm(&[40, 5, 3]), rm(&[6, 5, 3])),
            IndexKind::Gather,
            1,
            (6, 4),
            &norm,
        )
        .unwrap();
        assert_eq!(p.coalesced.0.shape(), &[6, 15]);
        assert_eq!(p.channel, Some((1, 1)));
        let norm = Convert::new().normalize(1, &[0.0; 5], &[1.0; 5]);
        let p = ConvertPlan::indexed(
            (DType::U8, DType::F32),
            (rm(&[40, 5, 3]), rm(&[6, 5, 3])),
            IndexKind::Scatter,
            1,
            (40, 4),
            &norm,
        )
        .unwrap();
        assert_eq!(p.channel, Some((1, 3)));
        assert_eq!(p.indexed.unwrap().items, 40);
    }

    #[test]
    fn index_driven_plans_refuse_what_they_cannot_do() {
        let plain = Convert::new();
        let (a, b) = (rm(&[10, 4]), rm(&[6, 4]));
        let plan = |a: Layout, b: Layout, kind, br, len, bytes, c: &Convert| {
            ConvertPlan::indexed((DType::F32, DType::F16), (a, b), kind, br, (len, bytes), c)
        };
        use IndexKind::*;
        assert!(matches!(
            plan(a, rm(&[6, 5]), Gather, 1, 6, 8, &plain),
            Err(Error::LayoutMismatch { .. })
        ));
        assert!(matches!(
            plan(a, rm(&[6, 4, 1]), Gather, 1, 6, 8, &plain),
            Err(Error::LayoutMismatch { .. })
        ));
        assert!(matches!(
            plan(a, b, BlockTable, 0, 6, 8, &plain),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            plan(a, b, Gather, 1, 6, 2, &plain),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            plan(a, b, Gather, 1, 5, 8, &plain),
            Err(Error::IndexCount {
                got: 5,
                expected: 6,
                ..
            })
        ));
        assert!(matches!(
            plan(a, b, Scatter, 1, 9, 4, &plain),
            Err(Error::IndexCount {
                got: 9,
                expected: 10,
                ..
            })
        ));
        assert!(matches!(
            plan(a, b, BlockTable, 2, 7, 4, &plain),
            Err(Error::IndexCount { got: 7, .. })
        ));
        let by_item = Convert::new().normalize(0, &[0.0; 6], &[1.0; 6]);
        assert!(matches!(
            plan(a, b, Gather, 1, 6, 8, &by_item),
            Err(Error::Normalize(_))
        ));
        let overlapping = Layout::new(&[6, 4], &[1, 1]).unwrap();
        assert!(matches!(
            plan(a, overlapping, Gather, 1, 6, 8, &plain),
            Err(Error::DestinationNotInjective(_))
        ));
        let e = ConvertPlan::indexed(
            (DType::I64, DType::F8E4M3),
            (a, b),
            Gather,
            1,
            (6, 8),
            &plain,
        );
        assert!(matches!(e, Err(Error::UnsupportedConversion { .. })));
        // empty: no items, or an item of no elements
        let p = plan(rm(&[0, 4]), b, Scatter, 1, 0, 8, &plain).unwrap();
        assert_eq!((&p.route, p.bytes_moved()), (&ConvertRoute::Empty, 0));
        let p = plan(rm(&[10, 0]), rm(&[6, 0]), BlockTable, 2, 4, 8, &plain).unwrap();
        assert_eq!((&p.route, p.bytes_moved()), (&ConvertRoute::Empty, 0));
    }
}
