//! Tensor copies: views of any rank (1 to 6) and any layout, planned on the host and run by the
//! family that suits the coalesced layouts.
//!
//! The planner's rule, in order ([`TensorPlan::new`]):
//! 1. **Coalesce the pair** ([`coalesce_layouts`]): drop size-1 modes, sort modes by destination
//!    stride, merge modes that step over each other on both sides.
//! 2. **Same unit-stride mode on both sides, rank <= 2**: a row-major matrix on both sides: the 2D
//!    engine's own [`Plan`] (tile engine or realign, by alignment).
//! 3. **Same unit-stride mode, rank 3**: `items` matrices at a fixed item stride: one realign launch
//!    (any byte alignment), the item mode walked by the kernel's work decomposition.
//! 4. **Otherwise** (the unit-stride modes differ: a transpose or permute; or rank > 3): the
//!    transpose family, a tile staged through swizzled shared memory, loaded along the source's
//!    unit-stride mode and stored along the destination's ([`TileKind`]).

use std::fmt;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::device::check_context;
use crate::error::{Error, Result};
use crate::ffi::{self, BatchLaunch, RowsDesc, TensorDesc};
use crate::layout::{coalesce_layouts, Layout, MAX_RANK};
use crate::plan::{Operand, Plan};
use crate::view::{Geometry, Place, RawTensor, TensorView, TensorViewMut};
use crate::{Atom, DType, Element, KernelConfig};

/// Store modes shorter than this many bytes, laid out as one run with the load mode in the
/// destination (NCHW -> NHWC with C = 3), use the narrow tile.
pub const NARROW_MAX_BYTES: usize = 128;

/// Narrow tiles whose short mode has 2 to this many elements, with 16-byte accesses on both sides,
/// use registers as the stage ([`TileStage::Registers`]).
pub const NARROW_REGISTER_ROWS: usize = 8;

/// Where a transpose-family tile is transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileStage {
    /// A shared-memory tile between the loads and the stores (swizzled for kinds `Transpose` and
    /// `Rows`), one barrier on each side.
    SharedMemory,
    /// Registers: a narrow tile's thread loads the short mode's 2..=8 rows of one 16-byte column
    /// block, transposes them as two CuTe register fragments over the same coordinates,
    /// `(R,V):(V,1)` and `(R,V):(1,R)`, which make R consecutive 16-byte vectors of the run (or
    /// the mirror image). No block barrier: when the run is the destination, a warp exchanges
    /// its 32 x R run vectors through its own shared-memory slots (`Swizzle<B,0,3>`, B = min(3, trailing zero bits of R)) so that each
    /// store instruction writes 512 contiguous bytes.
    Registers,
}

/// How the transpose family stages a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileKind {
    /// Loaded along the source's unit-stride mode `a`, read back transposed from the swizzled
    /// tile, stored along the destination's unit-stride mode `b`.
    Transpose,
    /// Both sides share the unit-stride mode `a` (rank > 3 after coalescing): the tile's rows are
    /// rows of mode `b` on both sides.
    Rows,
    /// The store mode `b` is short and the destination holds a tile as one run (stride of `a` ==
    /// extent of `b`): the tile is extent(`b`) rows of a longer run of `a`, stored contiguously.
    Narrow,
    /// The mirror image: the load mode `a` is short and the source holds a tile as one run
    /// (stride of `b` == extent of `a`; NHWC -> NCHW): loaded contiguously, stored as extent(`a`)
    /// rows of a longer run of `b`.
    NarrowLoad,
}

/// The transpose family's launch: modes, tile, grid and the legality of 16-byte accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposeTile {
    /// How the tile is staged.
    pub kind: TileKind,
    /// Where it is transposed.
    pub stage: TileStage,
    /// The mode the tile is loaded along (the source's unit-stride mode when it has one).
    pub mode_a: usize,
    /// The mode the tile is stored along (the destination's unit-stride mode), or the row mode.
    pub mode_b: usize,
    /// Tile extent: (elements along `mode_a`, rows along `mode_b`).
    pub tile: (usize, usize),
    /// Tiles along `mode_a`, along `mode_b`, and in all (times every other mode).
    pub tiles: (usize, usize, usize),
    /// 16-byte loads: unit stride along `mode_a`, every other source stride and the source offset
    /// a multiple of 16 bytes. Otherwise element by element.
    pub vec_load: bool,
    /// 16-byte stores, the same on the destination side.
    pub vec_store: bool,
    /// CuTe `Swizzle<B, M, S>` of the shared-memory tile (`None` for the narrow tile, unswizzled).
    pub swizzle: Option<(u32, u32, u32)>,
    /// The compiled configuration (threads, the load's TiledCopy layouts, tile, smem bytes).
    pub config: KernelConfig,
}

/// Which family runs a tensor copy, and its launch.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorRoute {
    /// A row-major matrix on both sides after coalescing: the 2D engine's plan.
    Matrix(Plan),
    /// `items` matrices, one realign launch: the plan of one item and the item strides (elements).
    Rows {
        /// The plan of one item.
        plan: Plan,
        /// Number of items.
        items: usize,
        /// Elements between items on each side.
        item_stride: (usize, usize),
    },
    /// The transpose family.
    Transpose(TransposeTile),
}

/// What a tensor copy will run, and why (`Display`).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorPlan {
    /// Element type.
    pub dtype: DType,
    /// The layouts as given.
    pub src: Layout,
    /// The destination layout as given.
    pub dst: Layout,
    /// Both layouts after coalescing, modes in the order the kernel sees them.
    pub coalesced: (Layout, Layout),
    /// Byte offset of each side's coordinate 0 modulo 256 (what alignment depends on).
    pub offset_bytes: (usize, usize),
    /// The family and its launch.
    pub route: TensorRoute,
}

fn matrix_operand(l: &Layout, offset_bytes: usize) -> Option<Operand> {
    let (rows, cols, ld) = l.as_matrix()?;
    Some(Operand {
        rows,
        cols,
        ld,
        offset_bytes,
    })
}

/// 16-byte accesses along `unit` are legal: unit stride there, the offset and every other stride
/// (but `skip`'s) a whole number of vectors.
fn vector_legal(l: &Layout, unit: usize, skip: usize, offset_bytes: usize, w: usize) -> bool {
    let v = 16 / w;
    offset_bytes % 16 == 0
        && l.stride()[unit] == 1
        && (0..l.rank()).all(|m| m == unit || m == skip || l.stride()[m] % v == 0)
}

impl TensorPlan {
    /// Plan a copy from `src` to `dst` (equal shapes) for `dtype`, the views' coordinate 0 at
    /// `offset_bytes` (modulo 256) from 256-byte-aligned addresses. Pure: nothing is launched.
    pub fn new(
        dtype: DType,
        src: Layout,
        dst: Layout,
        offset_bytes: (usize, usize),
    ) -> Result<TensorPlan> {
        let (cs, cd) = coalesce_layouts(&src, &dst)?;
        if !dst.is_injective() {
            return Err(Error::DestinationNotInjective(dst.to_string()));
        }
        let offset_bytes = (offset_bytes.0 % 256, offset_bytes.1 % 256);
        let r = cs.rank();
        let last = r - 1;
        let unit_both = cs.stride()[last] == 1 && cd.stride()[last] == 1;
        let matrix = (
            matrix_operand(&cs, offset_bytes.0),
            matrix_operand(&cd, offset_bytes.1),
        );
        let route = if let (true, true, (Some(s), Some(d))) = (unit_both, r <= 2, matrix) {
            TensorRoute::Matrix(Plan::new(dtype, s, d, None, None)?)
        } else if unit_both
            && r == 3
            && cs.stride()[1] >= cs.shape()[2]
            && cd.stride()[1] >= cd.shape()[2]
        {
            let item = |l: &Layout, off: usize| Operand {
                rows: l.shape()[1],
                cols: l.shape()[2],
                ld: l.stride()[1],
                offset_bytes: off,
            };
            let plan = Plan::new(
                dtype,
                item(&cs, offset_bytes.0),
                item(&cd, offset_bytes.1),
                Some(Atom::Realign128),
                None,
            )?;
            TensorRoute::Rows {
                plan,
                items: cs.shape()[0],
                item_stride: (cs.stride()[0], cd.stride()[0]),
            }
        } else {
            TensorRoute::Transpose(transpose_tile(dtype, &cs, &cd, offset_bytes)?)
        };
        Ok(TensorPlan {
            dtype,
            src,
            dst,
            coalesced: (cs, cd),
            offset_bytes,
            route,
        })
    }

    /// The atom that runs the copy.
    pub fn atom(&self) -> Atom {
        match &self.route {
            TensorRoute::Matrix(p) | TensorRoute::Rows { plan: p, .. } => p.atom,
            TensorRoute::Transpose(_) => Atom::Transpose128,
        }
    }

    /// Bytes read plus bytes written.
    pub fn bytes_moved(&self) -> usize {
        2 * self.src.size() * self.dtype.size_bytes()
    }

    /// Why each choice was made, one sentence each.
    pub fn reasons(&self) -> Vec<String> {
        let (cs, cd) = &self.coalesced;
        let mut v = vec![format!(
            "coalesced (size-1 modes dropped, modes sorted by destination stride, modes that step over each other on both sides merged): {} -> {}, rank {} -> {}",
            cs,
            cd,
            self.src.rank(),
            cs.rank()
        )];
        match &self.route {
            TensorRoute::Matrix(p) => {
                v.push(format!(
                    "both sides are a row-major {} x {} matrix with unit column stride: the 2D engine ({:?})",
                    p.src.rows, p.src.cols, p.atom
                ));
                v.extend(p.reasons());
            }
            TensorRoute::Rows {
                plan,
                items,
                item_stride,
            } => {
                v.push(format!(
                    "rank 3 with the unit-stride mode shared: {items} matrices of {} x {} at item strides {} / {} elements, one Realign128 launch (16-byte accesses at any byte alignment)",
                    plan.src.rows, plan.src.cols, item_stride.0, item_stride.1
                ));
            }
            TensorRoute::Transpose(t) => {
                let e = self.dtype.size_bytes();
                match t.kind {
                    TileKind::Transpose => v.push(format!(
                        "the unit-stride modes differ (source: mode {}, destination: mode {}): a transposing tile, loaded along mode {} and stored along mode {}",
                        t.mode_a, t.mode_b, t.mode_a, t.mode_b
                    )),
                    TileKind::Rows => v.push(format!(
                        "the unit-stride mode {} is shared but {} modes remain after coalescing: tiles of {} rows of mode {} through shared memory, the other modes walked by the grid",
                        t.mode_a, cs.rank(), t.tile.1, t.mode_b
                    )),
                    TileKind::NarrowLoad => v.push(format!(
                        "the load mode {} has {} elements ({} bytes < {NARROW_MAX_BYTES}) and the source holds (mode {}, mode {}) as one run: tiles of {} x {} elements loaded as one contiguous run, stored as {} rows along mode {}",
                        t.mode_a, cs.shape()[t.mode_a], cs.shape()[t.mode_a] * e, t.mode_b, t.mode_a, t.tile.1, t.tile.0, t.tile.0, t.mode_b
                    )),
                    TileKind::Narrow => v.push(format!(
                        "the store mode {} has {} elements ({} bytes < {NARROW_MAX_BYTES}) and the destination holds (mode {}, mode {}) as one run: narrow tiles of {} x {} elements stored as one contiguous run",
                        t.mode_b, cd.shape()[t.mode_b], cd.shape()[t.mode_b] * e, t.mode_a, t.mode_b, t.tile.1, t.tile.0
                    )),
                }
                if t.stage == TileStage::Registers {
                    let r = t.narrow_rows().unwrap_or(0);
                    v.push(format!(
                        "the short mode has {r} elements (2..={NARROW_REGISTER_ROWS}) and both sides allow 16-byte accesses: registers are the stage, each thread moving {r} x {} elements as two CuTe fragments ({r},{}):({},1) and ({r},{}):(1,{r}) over the same coordinates ({r} 16-byte loads, {r} 16-byte stores, no block barrier)",
                        16 / e, 16 / e, 16 / e, 16 / e
                    ));
                    if let Some(sw) = t.exchange_swizzle() {
                        v.push(format!(
                            "the run side is the destination: each warp passes its 32 x {r} run vectors through {} bytes of its own shared memory (slots under Swizzle<{},{},{}>: {}), so that each 16-byte store instruction writes 512 contiguous bytes instead of 32 vectors {} bytes apart",
                            32 * r * 16,
                            sw.0,
                            sw.1,
                            sw.2,
                            match t.exchange_ways() {
                                Some(w) if w > 1 => format!("{w}-way bank conflicts"),
                                _ => "no bank conflicts".into(),
                            },
                            16 * r
                        ));
                    }
                } else if matches!(t.kind, TileKind::Narrow | TileKind::NarrowLoad) {
                    v.push(format!(
                        "staged through {} bytes of shared memory (registers take short modes of 2..={NARROW_REGISTER_ROWS} elements with 16-byte accesses on both sides)",
                        t.tile.0 * t.tile.1 * e
                    ));
                }
                if t.kind == TileKind::Rows {
                    v.push("whole tiles with 16-byte accesses on both sides use registers as the stage (a TiledCopy load then store, no shared memory); edge tiles go through the swizzled shared-memory tile".into());
                } else if let Some((b, m, s)) = t.swizzle {
                    v.push(format!(
                        "shared memory: composition(Swizzle<{b},{m},{s}>, ({},{}):({},1)): 16-byte chunks XOR-ed with the row group, so the transposed 32-bit reads of a warp (8 row groups x 4 word columns) hit 32 different banks",
                        t.tile.1, t.tile.0, t.tile.0
                    ));
                }
                v.push(match (t.vec_load, t.vec_store) {
                    (true, true) => "16-byte loads and stores: unit strides along the access, other strides and both offsets multiples of 16 bytes".into(),
                    (true, false) => "16-byte loads; stores element by element (the destination's strides or offset are not 16-byte multiples, or it has no unit-stride mode)".into(),
                    (false, true) => "16-byte stores; loads element by element (the source's strides or offset are not 16-byte multiples, or it has no unit-stride mode)".into(),
                    (false, false) => "element-by-element loads and stores: neither side allows 16-byte accesses".into(),
                });
                v.push(if t.tiles.2 <= crate::plan::DIVMOD_MAX_DIVIDEND {
                    format!(
                        "{} tiles: a block turns its tile index into (mode {}, mode {}, the other modes) with cutlass::FastDivmod built on the host, a multiply-high per mode instead of a 64-bit division",
                        t.tiles.2, t.mode_a, t.mode_b
                    )
                } else {
                    format!(
                        "{} tiles (2^31 or more): a block divides its tile index in 64 bits",
                        t.tiles.2
                    )
                });
            }
        }
        v
    }
}

fn transpose_tile(
    dtype: DType,
    cs: &Layout,
    cd: &Layout,
    offset_bytes: (usize, usize),
) -> Result<TransposeTile> {
    let w = dtype.size_bytes();
    let r = cs.rank();
    // a: the source's unit-stride mode (the longest if several), else its smallest stride.
    let a = (0..r)
        .min_by_key(|&m| (cs.stride()[m], std::cmp::Reverse(cs.shape()[m])))
        .expect("rank >= 1");
    let config = Atom::Transpose128.kernel_config(dtype)?;
    let mut b = r - 1; // the destination's smallest stride (modes are sorted by it)
    let mut kind = TileKind::Transpose;
    if a == b && r > 1 {
        // Rows of mode a on both sides: the tile's row mode is the one that fills the most of
        // the tile's rows (the smaller destination stride on a tie).
        kind = TileKind::Rows;
        b = (0..r - 1)
            .max_by_key(|&m| {
                (
                    cs.shape()[m].min(config.tile.0),
                    std::cmp::Reverse(cd.stride()[m]),
                )
            })
            .expect("rank >= 2");
    }
    let (ta_sq, tb_sq) = (config.tile.1, config.tile.0);
    let eb = cd.shape()[b];
    let ea = cs.shape()[a];
    if kind == TileKind::Transpose
        && a != b
        && eb * w < NARROW_MAX_BYTES
        && cd.stride()[b] == 1
        && cd.stride()[a] == eb
    {
        kind = TileKind::Narrow;
    } else if kind == TileKind::Transpose
        && a != b
        && ea * w < NARROW_MAX_BYTES
        && cs.stride()[a] == 1
        && cs.stride()[b] == ea
    {
        kind = TileKind::NarrowLoad;
    }
    let v = 16 / w;
    let store_unit = if kind == TileKind::Rows { a } else { b };
    // a narrow-load tile is one source run: the stride of mode b inside it does not matter
    let vec_load = vector_legal(
        cs,
        a,
        if kind == TileKind::NarrowLoad { b } else { a },
        offset_bytes.0,
        w,
    );
    // a narrow tile is one destination run: the stride of mode a inside it does not matter
    let vec_store = vector_legal(
        cd,
        store_unit,
        if kind == TileKind::Narrow {
            a
        } else {
            store_unit
        },
        offset_bytes.1,
        w,
    );
    let short = match kind {
        TileKind::Narrow => eb,
        TileKind::NarrowLoad => ea,
        _ => 0,
    };
    let stage = if (2..=NARROW_REGISTER_ROWS).contains(&short) && vec_load && vec_store {
        TileStage::Registers
    } else {
        TileStage::SharedMemory
    };
    // Columns per tile: in registers, one (or, for at most 4 rows, two) 16-byte column blocks per
    // thread; through shared memory, as many as the 32 KiB stage holds. Then balanced: every
    // tile along the long mode nearly full.
    let most = match stage {
        TileStage::Registers => config.threads * v * if short <= 4 { 2 } else { 1 },
        TileStage::SharedMemory => config.smem_bytes / w / short.max(1) / v * v,
    };
    let balanced = |long: usize| {
        let n = long.div_ceil(most);
        long.div_ceil(n).div_ceil(v) * v
    };
    let (ta, tb) = match kind {
        TileKind::Narrow => (balanced(ea), eb),
        TileKind::NarrowLoad => (ea, balanced(eb)),
        _ => (ta_sq, tb_sq),
    };
    let tiles_a = cs.shape()[a].div_ceil(ta);
    let tiles_b = if a == b {
        1
    } else {
        cs.shape()[b].div_ceil(tb)
    };
    let others: usize = (0..r)
        .filter(|&m| m != a && m != b)
        .map(|m| cs.shape()[m])
        .product();
    let tiles = tiles_a
        .checked_mul(tiles_b)
        .and_then(|x| x.checked_mul(others))
        .filter(|&x| x <= i64::MAX as usize)
        .ok_or_else(|| Error::Overflow("tile count".into()))?;
    let swizzle = matches!(kind, TileKind::Transpose | TileKind::Rows).then(|| {
        (
            3,
            (16 / w).trailing_zeros(),
            (ta_sq as u32).trailing_zeros(),
        )
    });
    Ok(TransposeTile {
        kind,
        stage,
        mode_a: a,
        mode_b: b,
        tile: (ta, tb),
        tiles: (tiles_a, tiles_b, tiles),
        vec_load,
        vec_store,
        swizzle,
        config,
    })
}

/// CuTe's `Swizzle<B, M, S>` applied to an offset: bits `[M + S, M + S + B)` XOR-ed into bits
/// `[M, M + B)` (`offset ^ ((offset & yyy_msk) >> S)`).
pub fn swizzle(offset: usize, (b, m, s): (u32, u32, u32)) -> usize {
    let yyy = ((1usize << b) - 1) << (m + s);
    offset ^ ((offset & yyy) >> s)
}

/// What one thread of a transpose-family tile moves, in tile coordinates (row along `mode_b`,
/// column along `mode_a`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadWork {
    /// The 16-byte vectors it loads (and writes to shared memory): `(row, first column)`, each
    /// `16 / width` columns wide, from CuTe's partition of the load TiledCopy.
    pub loads: Vec<(usize, usize)>,
    /// What it stores: for a transpose, `(first row, first column, rows, columns)` blocks it reads
    /// transposed from shared memory and stores as 16-byte vectors along the rows; for a rows
    /// tile, the same vectors as it loads.
    pub stores: Vec<(usize, usize, usize, usize)>,
}

impl TransposeTile {
    /// Element offset in the shared-memory tile of tile element (row, col): CuTe's
    /// `composition(Swizzle<B,M,S>, (TB,TA):(TA,1))`, or row-major for the narrow tile.
    pub fn smem_offset(&self, row: usize, col: usize) -> usize {
        let plain = row * self.tile.0 + col;
        self.swizzle.map_or(plain, |sw| swizzle(plain, sw))
    }

    /// The CuTe TiledCopy that partitions the tile for the loads (threads (16,16), one 16-byte
    /// vector per call), built by real CuTe on the host.
    pub fn load_tiled_copy(&self, dtype: DType) -> Result<crate::TiledCopySpec> {
        crate::TiledCopySpec::for_kernel(Atom::Transpose128, dtype)
    }

    /// The most 32-bit shared-memory words any bank serves in one transposed-read instruction of
    /// warp 0 (each lane reads one word, or one 8-byte element, of row `grp * V + j` and word
    /// column `wc`): 1 means conflict-free (2 for 8-byte elements, whose 256 bytes per warp take
    /// two wavefronts at best). `None` for tiles that are not read transposed.
    pub fn transposed_read_ways(&self, dtype: DType) -> Option<usize> {
        if self.kind != TileKind::Transpose {
            return None;
        }
        let w = dtype.size_bytes();
        let (v, p) = (16 / w, (4 / w).max(1));
        let ng = self.tile.1 / v;
        let mut worst = 1;
        for j in 0..v {
            let mut words_per_bank: Vec<std::collections::BTreeSet<usize>> =
                vec![Default::default(); 32];
            for lane in 0..32 {
                let (grp, wc) = Self::unit_of(lane, ng);
                let byte = self.smem_offset(grp * v + j, wc * p) * w;
                for word in (byte / 4)..(byte + w.max(4)) / 4 {
                    words_per_bank[word % 32].insert(word);
                }
            }
            worst = worst.max(words_per_bank.iter().map(|s| s.len()).max().unwrap_or(1));
        }
        Some(worst)
    }

    /// The short mode's extent of a narrow tile (the rows a thread moves as one (R, V) block in
    /// registers): extent(`mode_b`) for `Narrow`, extent(`mode_a`) for `NarrowLoad`.
    pub fn narrow_rows(&self) -> Option<usize> {
        match self.kind {
            TileKind::Narrow => Some(self.tile.1),
            TileKind::NarrowLoad => Some(self.tile.0),
            _ => None,
        }
    }

    /// CuTe `Swizzle<B, M, S>` of the slot index in the per-warp exchange of a narrow tile in
    /// registers whose run is the destination, `None` for other tiles: `Swizzle<B,0,3>` with
    /// `B = min(3, trailing zero bits of R)` for a short mode of R elements (`Swizzle<0,0,3>`,
    /// the plain index, for odd R).
    pub fn exchange_swizzle(&self) -> Option<(u32, u32, u32)> {
        if self.kind != TileKind::Narrow || self.stage != TileStage::Registers {
            return None;
        }
        let r = self.narrow_rows().unwrap_or(1).max(1);
        Some((r.trailing_zeros().min(3), 0, 3))
    }

    /// The most 16-byte slots one bank group (of the 8 that 128 bytes span) serves in one
    /// instruction of the per-warp exchange of a narrow tile in registers (kind `Narrow`): lane l
    /// writes its vector q to slot `swizzle(l * R + q)`, then reads slot `swizzle(q * 32 + l)`; 8
    /// lanes share a wavefront. 1 is conflict-free. `None` for tiles without the exchange.
    ///
    /// With [`exchange_swizzle`](Self::exchange_swizzle) this is 1 for every R from 2 to 8. (A
    /// fixed `Swizzle<3,0,3>`, shipped before, gave 3, 2, 3, 7 for R = 3, 5, 6, 7: its XOR undid
    /// what an odd stride already spreads.)
    pub fn exchange_ways(&self) -> Option<usize> {
        self.exchange_ways_under(self.exchange_swizzle()?)
    }

    /// [`exchange_ways`](Self::exchange_ways) under a given `Swizzle<B, M, S>` of the slot index.
    pub fn exchange_ways_under(&self, sw: (u32, u32, u32)) -> Option<usize> {
        if self.kind != TileKind::Narrow || self.stage != TileStage::Registers {
            return None;
        }
        let r = self.narrow_rows().unwrap_or(0);
        let slot = |g: usize| swizzle(g, sw);
        let mut worst = 1;
        for q in 0..r {
            for l0 in (0..32).step_by(8) {
                for at in [
                    |l: usize, q: usize, r: usize| l * r + q,
                    |l: usize, q: usize, _| q * 32 + l,
                ] {
                    let mut per_group = [0usize; 8];
                    for l in l0..l0 + 8 {
                        per_group[slot(at(l, q, r)) % 8] += 1;
                    }
                    worst = worst.max(per_group.into_iter().max().unwrap_or(1));
                }
            }
        }
        Some(worst)
    }

    /// The (row group, word column) of transposed-read unit `u` (the kernel's mapping: lanes 0..7
    /// take 8 row groups, the rest of the unit index steps the word column).
    fn unit_of(u: usize, ng: usize) -> (usize, usize) {
        let rest = u / 32;
        (
            (rest % (ng / 8)) * 8 + u % 8,
            (rest / (ng / 8)) * 4 + (u / 8) % 4,
        )
    }

    /// What thread `t` moves in a tile (see [`ThreadWork`]).
    pub fn thread_work(&self, dtype: DType, t: usize) -> Result<ThreadWork> {
        let w = dtype.size_bytes();
        let v = 16 / w;
        if self.stage == TileStage::Registers {
            // column blocks i = t, t + threads, ...: R 16-byte vectors on each side
            let narrow = self.kind == TileKind::Narrow;
            let r = self.narrow_rows().unwrap_or(0);
            let long = if narrow { self.tile.0 } else { self.tile.1 };
            let nv = long / v;
            let lane = t % 32;
            let blocks: Vec<usize> = (0..)
                .map(|k| t + k * self.config.threads)
                .take_while(|&i| i - lane < nv)
                .collect();
            let rows_side = |i: usize| (0..r).map(move |q| (q, i * v)); // (short, long) of each vector
            let run_side = |i: usize| (0..r).map(move |q| i * v * r + q * v); // flat run offsets
            let (mut loads, mut stores) = (Vec::new(), Vec::new());
            for &i in &blocks {
                if narrow {
                    if i < nv {
                        loads.extend(rows_side(i));
                    }
                    // the warp's run, exchanged through shared memory: store q writes run
                    // vector q * 32 + lane of the warp's 32 blocks
                    let first = i - lane;
                    stores.extend(
                        (0..r)
                            .map(|q| q * 32 + lane)
                            .filter(|g| first + g / r < nv)
                            .map(|g| first * v * r + g * v)
                            .map(|f| (f % r, f / r, 1, v)),
                    );
                } else if i < nv {
                    loads.extend(run_side(i).map(|f| (f / r, f % r)));
                    stores.extend(rows_side(i).map(|(q, b)| (b, q, v, 1)));
                }
            }
            return Ok(ThreadWork { loads, stores });
        }
        if self.kind == TileKind::Narrow {
            let (rows, cols) = (self.tile.1, self.tile.0);
            let loads = (0..)
                .map(|k| t + k * self.config.threads)
                .take_while(|&i| i < rows * cols / v)
                .map(|i| (i / (cols / v), (i % (cols / v)) * v))
                .collect();
            let stores = (0..)
                .map(|k| (t + k * self.config.threads) * v)
                .take_while(|&f| f < rows * cols)
                .map(|f| (f % rows, f / rows, 1, v))
                .collect();
            return Ok(ThreadWork { loads, stores });
        }
        if self.kind == TileKind::NarrowLoad {
            // the source tile is one run of rows * cols elements (col = a fastest), loaded flat;
            // each store is V consecutive rows (along b) of one column a
            let (rows, cols) = (self.tile.1, self.tile.0);
            let loads = (0..)
                .map(|k| (t + k * self.config.threads) * v)
                .take_while(|&f| f < rows * cols)
                .map(|f| (f / cols, f % cols))
                .collect();
            let nvb = rows.div_ceil(v);
            let stores = (0..)
                .map(|k| t + k * self.config.threads)
                .take_while(|&i| i < cols * nvb)
                .map(|i| ((i % nvb) * v, i / nvb, v, 1))
                .collect();
            return Ok(ThreadWork { loads, stores });
        }
        let spec = self.load_tiled_copy(dtype)?;
        let coords = spec.thread_coords(t)?;
        let loads: Vec<(usize, usize)> = coords.chunks(v).map(|c| c[0]).collect();
        let stores = match self.kind {
            TileKind::Rows => loads.iter().map(|&(r, c)| (r, c, 1, v)).collect(),
            _ => {
                let p = (4 / w).max(1);
                let (ng, nw) = (self.tile.1 / v, self.tile.0 / p);
                (0..ng * nw / self.config.threads)
                    .map(|k| {
                        let (grp, wc) = Self::unit_of(k * self.config.threads + t, ng);
                        (grp * v, wc * p, v, p)
                    })
                    .collect()
            }
        };
        Ok(ThreadWork { loads, stores })
    }
}

impl fmt::Display for TensorPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tensor copy {}: {} -> {}",
            self.dtype, self.src, self.dst
        )?;
        writeln!(
            f,
            "  coalesced: {} -> {}",
            self.coalesced.0, self.coalesced.1
        )?;
        match &self.route {
            TensorRoute::Matrix(p) => writeln!(f, "  route: 2D engine, {:?}", p.atom)?,
            TensorRoute::Rows { plan, items, .. } => writeln!(
                f,
                "  route: realign rows, {:?}, {items} items of {} x {}",
                plan.atom, plan.src.rows, plan.src.cols
            )?,
            TensorRoute::Transpose(t) => {
                writeln!(
                    f,
                    "  route: transpose family, Transpose128, {:?} tile in {:?}: {} x {} (rows along mode {} x elements along mode {}), {} tiles, {} threads",
                    t.kind, t.stage, t.tile.1, t.tile.0, t.mode_b, t.mode_a, t.tiles.2, t.config.threads
                )?;
                if t.stage == TileStage::Registers {
                    let r = t.narrow_rows().unwrap_or(0);
                    let v = 16 / self.dtype.size_bytes();
                    writeln!(
                        f,
                        "  per thread: ({r},{v}) column blocks, register fragments ({r},{v}):({v},1) <-> ({r},{v}):(1,{r}), 16-byte accesses"
                    )?;
                } else {
                    writeln!(
                        f,
                        "  load TiledCopy: UniversalCopy<uint128_t>, threads ({},{}):({},1), values ({},{})",
                        t.config.thr_layout.0, t.config.thr_layout.1, t.config.thr_layout.1, t.config.val_layout.0, t.config.val_layout.1
                    )?;
                }
            }
        }
        for r in self.reasons() {
            writeln!(f, "  - {r}")?;
        }
        Ok(())
    }
}

/// Plan a tensor copy of `src` into `dst` (equal shapes, any layouts). Nothing is launched.
pub fn plan_tensor<T: Element>(
    src: &TensorView<'_, T>,
    dst: &TensorViewMut<'_, T>,
) -> Result<TensorPlan> {
    let e = T::DTYPE.size_bytes();
    plan_places(
        T::DTYPE,
        (src.place(), src.alloc_base()),
        (dst.place(), dst.alloc_base()),
        e,
    )
}

fn plan_places(
    dtype: DType,
    (s, sb): (Place, u64),
    (d, db): (Place, u64),
    e: usize,
) -> Result<TensorPlan> {
    s.check()?;
    d.check()?;
    let off = |p: &Place, base: u64| (base as usize % 256 + p.offset * e) % 256;
    TensorPlan::new(dtype, s.layout, d.layout, (off(&s, sb), off(&d, db)))
}

/// Copy `src` into `dst`: views of any rank (1 to 6) and any layouts of equal shape — a
/// transpose, a permute, NCHW -> NHWC, a batched strided slice. Returns the plan it ran.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// use cute_copy::{DeviceTensor, Layout};
/// let stream = cute_copy::stream(0)?;
/// let x = DeviceTensor::<half::f16>::zeros(&stream, Layout::row_major(&[8, 32, 4096, 128])?)?;
/// let mut y = DeviceTensor::<half::f16>::zeros(&stream, Layout::row_major(&[8, 4096, 32, 128])?)?;
/// // y = x.permute(0, 2, 1, 3).contiguous()
/// let plan = cute_copy::copy_tensor(&x.view().permute(&[0, 2, 1, 3])?, &mut y.view_mut(), &stream)?;
/// println!("{plan}");
/// # Ok(()) }
/// ```
pub fn copy_tensor<T: Element>(
    src: &TensorView<'_, T>,
    dst: &mut TensorViewMut<'_, T>,
    stream: &Arc<CudaStream>,
) -> Result<TensorPlan> {
    let plan = plan_tensor(src, dst)?;
    if plan.src.size() == 0 {
        return Ok(plan);
    }
    check_context("source", src.context(), stream)?;
    check_context("destination", dst.context(), stream)?;
    let s = src.pin(stream);
    let d = dst.pin(stream);
    launch_plan(&plan, s.addr, d.addr, stream)?;
    Ok(plan)
}

/// [`copy_tensor`] for run-time-typed views.
pub fn copy_tensor_raw(
    src: &RawTensor<'_>,
    dst: &mut RawTensor<'_>,
    stream: &Arc<CudaStream>,
) -> Result<TensorPlan> {
    if src.dtype() != dst.dtype() {
        return Err(Error::DTypeMismatch {
            src: src.dtype(),
            dst: dst.dtype(),
        });
    }
    let e = src.dtype().size_bytes();
    let plan = plan_places(
        src.dtype(),
        (src.place(), src.ptr()),
        (dst.place(), dst.ptr()),
        e,
    )?;
    if plan.src.size() == 0 {
        return Ok(plan);
    }
    check_context("source", src.context(), stream)?;
    check_context("destination", dst.context(), stream)?;
    let at = |t: &RawTensor| t.ptr() + (t.offset() * e) as u64;
    launch_plan(&plan, at(src), at(dst), stream)?;
    Ok(plan)
}

/// Launch a non-empty plan whose views are pinned at `src` / `dst` (coordinate 0), in the
/// stream's context (checked by the caller).
fn launch_plan(plan: &TensorPlan, src: u64, dst: u64, stream: &Arc<CudaStream>) -> Result<()> {
    let e = plan.dtype.size_bytes() as u64;
    let (s_len, d_len) = (plan.src.cosize()? as u64 * e, plan.dst.cosize()? as u64 * e);
    if src < dst + d_len && dst < src + s_len {
        return Err(Error::Overlap);
    }
    stream.context().bind_to_thread()?;
    match &plan.route {
        TensorRoute::Matrix(p) => {
            let g = |o: &Operand| Geometry {
                offset: 0,
                rows: o.rows,
                cols: o.cols,
                ld: o.ld,
                len: usize::MAX,
            };
            crate::copy::with_desc(p, (g(&p.src), src), (g(&p.dst), dst), stream, |desc| {
                ffi::launch(desc, ffi::Kernel::Menu)
            })
        }
        TensorRoute::Rows {
            plan: p,
            items,
            item_stride,
        } => {
            let (ls, ld) = p.launched;
            let one = RowsDesc {
                src,
                dst,
                src_pitch: (ls.ld as u64 * e) as i64,
                dst_pitch: (ld.ld as u64 * e) as i64,
                src_row_bytes: (ls.cols as u64 * e) as i64,
                dst_row_bytes: (ld.cols as u64 * e) as i64,
                src_rows: ls.rows as i64,
                dst_rows: ld.rows as i64,
                items: *items as i64,
                src_item_stride: (item_stride.0 as u64 * e) as i64,
                dst_item_stride: (item_stride.1 as u64 * e) as i64,
                index_bytes: 4,
                index_stride: 1,
                segs: ffi::rows_segments((ld.cols as u64 * e) as i64)?,
                ..RowsDesc::default()
            };
            let launch = BatchLaunch {
                atom: Atom::Realign128 as u32,
                elem_bytes: e as u32,
                descs: 0,
                count: 1,
                tasks: ffi::realign_tasks(one.items * one.dst_rows, one.segs),
                status: 0,
                src_base: 0,
                dst_base: 0,
                stream: stream.cu_stream() as u64,
            };
            ffi::launch_rows(&one, &launch)
        }
        TensorRoute::Transpose(t) => {
            let (cs, cd) = &plan.coalesced;
            let mut desc = TensorDesc {
                atom: Atom::Transpose128 as u32,
                elem_bytes: e as u32,
                src,
                dst,
                rank: cs.rank() as u32,
                kind: match (t.kind, t.stage) {
                    (TileKind::Transpose, _) => 0,
                    (TileKind::Rows, _) => 1,
                    (TileKind::Narrow, TileStage::SharedMemory) => 2,
                    (TileKind::NarrowLoad, TileStage::SharedMemory) => 3,
                    (TileKind::Narrow, TileStage::Registers) => 4,
                    (TileKind::NarrowLoad, TileStage::Registers) => 5,
                },
                mode_a: t.mode_a as u32,
                mode_b: t.mode_b as u32,
                vec_load: t.vec_load as u32,
                vec_store: t.vec_store as u32,
                tile_a: t.tile.0 as i64,
                tile_b: t.tile.1 as i64,
                tiles_a: t.tiles.0 as i64,
                tiles_b: t.tiles.1 as i64,
                tiles: t.tiles.2 as i64,
                stream: stream.cu_stream() as u64,
                ..TensorDesc::default()
            };
            for m in 0..MAX_RANK.min(cs.rank()) {
                desc.shape[m] = cs.shape()[m] as i64;
                desc.src_stride[m] = cs.stride()[m] as i64;
                desc.dst_stride[m] = cd.stride()[m] as i64;
            }
            ffi::launch_tensor(&desc)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(dtype: DType, src: Layout, dst: Layout) -> TensorPlan {
        TensorPlan::new(dtype, src, dst, (0, 0)).unwrap()
    }
    fn rm(s: &[usize]) -> Layout {
        Layout::row_major(s).unwrap()
    }

    #[test]
    fn swizzle_is_cutes_xor_of_the_row_bits_into_the_chunk_bits() {
        // Swizzle<3,2,6> on (64-column f32 rows): chunk (bits 2..5) ^= row / 4 (bits 8..11)
        assert_eq!(swizzle(0, (3, 2, 6)), 0);
        assert_eq!(swizzle(4 * 64, (3, 2, 6)), 4 * 64 + 4); // row 4, col 0 -> chunk 1
        assert_eq!(swizzle(4 * 64 + 5, (3, 2, 6)), 4 * 64 + 1); // row 4, col 5 (chunk 1) -> chunk 0
        for o in 0..8192 {
            assert_eq!(
                swizzle(swizzle(o, (3, 2, 6)), (3, 2, 6)),
                o,
                "an involution"
            );
        }
    }

    #[test]
    fn transpose_tiles_find_their_coordinates_by_a_host_divmod_below_2_31_tiles() {
        let src = rm(&[64, 256, 128]).permute(&[0, 2, 1]).unwrap();
        let p = plan(DType::U8, src, rm(&[64, 128, 256]));
        assert!(matches!(p.route, TensorRoute::Transpose(_)), "{p}");
        assert!(p.to_string().contains("cutlass::FastDivmod"), "{p}");
        // 2^31 batches of a 256 x 128 transpose: 2^32 tiles, past FastDivmod's 31-bit dividends
        let b = 1usize << 31;
        let src = rm(&[b, 256, 128]).permute(&[0, 2, 1]).unwrap();
        let p = plan(DType::U8, src, rm(&[b, 128, 256]));
        let TensorRoute::Transpose(t) = &p.route else {
            panic!("{p}")
        };
        assert!(t.tiles.2 > i32::MAX as usize, "{p}");
        let text = p.to_string();
        assert!(
            !text.contains("FastDivmod") && text.contains("divides its tile index in 64 bits"),
            "{p}"
        );
    }

    #[test]
    fn transposes_route_to_the_swizzled_tile_and_read_it_without_bank_conflicts() {
        for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
            let src = rm(&[1000, 1000]).permute(&[1, 0]).unwrap();
            let p = plan(dtype, src, rm(&[1000, 1000]));
            let TensorRoute::Transpose(t) = p.route else {
                panic!("{p}")
            };
            assert_eq!(t.kind, TileKind::Transpose);
            assert_eq!((t.mode_a, t.mode_b), (0, 1));
            let w = dtype.size_bytes();
            assert_eq!(t.vec_load && t.vec_store, (1000 * w) % 16 == 0, "{p}");
            // conflict-free: one wavefront per 128 bytes (two for a warp's 8-byte elements)
            assert_eq!(
                t.transposed_read_ways(dtype),
                Some((w / 4).max(1)),
                "{dtype}"
            );
            // every tile element has one place in shared memory
            let mut seen = vec![false; t.tile.0 * t.tile.1];
            for r in 0..t.tile.1 {
                for c in 0..t.tile.0 {
                    let o = t.smem_offset(r, c);
                    assert!(!seen[o]);
                    seen[o] = true;
                }
            }
            // the threads' stores cover the tile once
            let mut cover = vec![0u8; t.tile.0 * t.tile.1];
            for th in 0..t.config.threads {
                for (r0, c0, nr, nc) in t.thread_work(dtype, th).unwrap().stores {
                    for r in r0..r0 + nr {
                        for c in c0..c0 + nc {
                            cover[r * t.tile.0 + c] += 1;
                        }
                    }
                }
            }
            assert!(cover.iter().all(|&x| x == 1), "{dtype}");
        }
        // without a swizzle the same read would conflict: the swizzle is what makes it free
        let src = rm(&[1024, 1024]).permute(&[1, 0]).unwrap();
        let TensorRoute::Transpose(mut t) = plan(DType::F32, src, rm(&[1024, 1024])).route else {
            panic!()
        };
        t.swizzle = None;
        assert!(t.transposed_read_ways(DType::F32).unwrap() >= 8);
    }

    #[test]
    fn head_permutes_nchw_and_batched_views_take_their_routes() {
        let x = rm(&[8, 32, 4096, 128]);
        let p = plan(
            DType::F16,
            x.permute(&[0, 2, 1, 3]).unwrap(),
            rm(&[8, 4096, 32, 128]),
        );
        let TensorRoute::Transpose(t) = p.route else {
            panic!("{p}")
        };
        assert_eq!(t.kind, TileKind::Rows);
        assert_eq!(
            p.coalesced.0.shape()[t.mode_b],
            4096,
            "the row mode fills the tile: {p}"
        );
        assert!(t.vec_load && t.vec_store);

        let nchw = rm(&[64, 3, 224, 224]);
        let p = plan(
            DType::F32,
            nchw.permute(&[0, 2, 3, 1]).unwrap(),
            rm(&[64, 224, 224, 3]),
        );
        let TensorRoute::Transpose(t) = p.route else {
            panic!("{p}")
        };
        assert_eq!(t.kind, TileKind::Narrow);
        assert_eq!(
            t.stage,
            TileStage::Registers,
            "C = 3 with 16-byte planes: {p}"
        );
        assert_eq!(t.tile.1, 3);
        assert!(t.vec_load && t.vec_store, "{p}");
        // two 4-element column blocks per thread: at most 2048 columns, balanced over 50176
        assert_eq!(t.tiles.0, 25, "balanced tiles along HW: {p}");
        assert_eq!(t.tile.0, 2008, "{p}");

        let nhwc = rm(&[64, 224, 224, 3]);
        let p = plan(
            DType::F32,
            nhwc.permute(&[0, 3, 1, 2]).unwrap(),
            rm(&[64, 3, 224, 224]),
        );
        let TensorRoute::Transpose(t) = p.route else {
            panic!("{p}")
        };
        assert_eq!(t.kind, TileKind::NarrowLoad, "{p}");
        assert_eq!(t.stage, TileStage::Registers, "{p}");
        assert_eq!(t.tile.0, 3);
        assert!(
            t.tile.0 * t.tile.1 * 4 <= t.config.smem_bytes && t.vec_load && t.vec_store,
            "{p}"
        );

        let b = Layout::new(&[64, 1024, 1023], &[1 << 20, 1024, 1]).unwrap();
        let p = plan(DType::F16, b, rm(&[64, 1024, 1023]));
        let TensorRoute::Matrix(m) = &p.route else {
            panic!("{p}")
        };
        assert_eq!(
            (m.src.rows, m.src.cols, m.src.ld, m.dst.ld),
            (65536, 1023, 1024, 1023)
        );
        assert_eq!(m.atom, Atom::Realign128);

        let p = plan(
            DType::U8,
            Layout::new(&[6, 33, 37], &[1500, 40, 1]).unwrap(),
            rm(&[6, 33, 37]),
        );
        assert!(matches!(p.route, TensorRoute::Rows { items: 6, .. }), "{p}");
        // a packed copy of any rank is one run
        let p = plan(DType::U8, rm(&[3, 4, 5, 6]), rm(&[3, 4, 5, 6]));
        assert_eq!(p.coalesced.0.to_string(), "(360):(1)");
    }

    #[test]
    fn narrow_tiles_stage_in_registers_for_two_to_eight_rows_with_16_byte_accesses() {
        for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
            let (w, v) = (dtype.size_bytes(), 16 / dtype.size_bytes());
            for c in 2..=12 {
                for hw in [64 * v, 64 * v + 1, 9999] {
                    let nchw = rm(&[2, c, hw]);
                    let nhwc = rm(&[2, hw, c]);
                    for (src, dst) in [
                        (nchw.permute(&[0, 2, 1]).unwrap(), nhwc),
                        (nhwc.permute(&[0, 2, 1]).unwrap(), nchw),
                    ] {
                        let p = plan(dtype, src, dst);
                        let TensorRoute::Transpose(t) = p.route.clone() else {
                            panic!("{p}")
                        };
                        if c * w >= NARROW_MAX_BYTES {
                            continue;
                        }
                        let regs = c <= NARROW_REGISTER_ROWS && hw % v == 0;
                        assert_eq!(t.stage == TileStage::Registers, regs, "{p}");
                        if !regs {
                            continue;
                        }
                        // every element of a whole tile is loaded once and stored once
                        let (rows, cols) = (t.tile.1, t.tile.0);
                        let (mut ld, mut st) = (vec![0u8; rows * cols], vec![0u8; rows * cols]);
                        for th in 0..t.config.threads {
                            let work = t.thread_work(dtype, th).unwrap();
                            for (r, c0) in work.loads {
                                (c0..c0 + v).for_each(|c| ld[r * cols + c] += 1);
                            }
                            for (r0, c0, nr, nc) in work.stores {
                                if nr == 1 {
                                    // v consecutive run elements from (r0, c0), rows fastest
                                    let f0 = c0 * rows + r0;
                                    (f0..f0 + nc).for_each(|f| st[f] += 1);
                                } else {
                                    (r0..r0 + nr).for_each(|r| st[r * cols + c0] += 1);
                                }
                            }
                        }
                        assert!(ld.iter().all(|&x| x == 1), "loads of {p}");
                        assert!(st.iter().all(|&x| x == 1), "stores of {p}");
                        assert!(p.to_string().contains("registers are the stage"), "{p}");
                        // the exchange's bank conflicts, as the model counts them: none under
                        // the per-R swizzle; 3, 2, 3, 7 for R = 3, 5, 6, 7 under the fixed
                        // Swizzle<3,0,3> shipped before
                        let fixed = match c {
                            2 | 4 | 8 => 1,
                            5 => 2,
                            3 | 6 => 3,
                            _ => 7,
                        };
                        if t.kind == TileKind::Narrow {
                            assert_eq!(t.exchange_ways(), Some(1), "{p}");
                            assert_eq!(t.exchange_ways_under((3, 0, 3)), Some(fixed), "{p}");
                            let b = c.trailing_zeros().min(3);
                            assert_eq!(t.exchange_swizzle(), Some((b, 0, 3)), "{p}");
                        } else {
                            assert_eq!(t.exchange_ways(), None, "{p}");
                            assert_eq!(t.exchange_swizzle(), None, "{p}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_tensor_copies_are_typed_errors() {
        let e = TensorPlan::new(DType::F32, rm(&[4, 5]), rm(&[5, 4]), (0, 0));
        assert!(matches!(e, Err(Error::LayoutMismatch { .. })));
        let e = TensorPlan::new(
            DType::F32,
            rm(&[4, 5]),
            Layout::new(&[4, 5], &[0, 1]).unwrap(),
            (0, 0),
        );
        assert!(matches!(e, Err(Error::DestinationNotInjective(_))));
        // a broadcast source is fine
        TensorPlan::new(
            DType::F32,
            Layout::new(&[4, 5], &[0, 1]).unwrap(),
            rm(&[4, 5]),
            (0, 0),
        )
        .unwrap();
        // misaligned offsets turn 16-byte accesses off, never an error
        let src = rm(&[64, 64]).permute(&[1, 0]).unwrap();
        let TensorRoute::Transpose(t) = TensorPlan::new(DType::F32, src, rm(&[64, 64]), (4, 8))
            .unwrap()
            .route
        else {
            panic!()
        };
        assert!(!t.vec_load && !t.vec_store);
    }
}
