//! The transpose family's Rust half (its kernel is `cpp/kernels/transpose.cu`): the tile rule
//! (modes, tile kind and stage, 16-byte legality), the compiled configuration, the tensor
//! descriptor builder, and the host models of the swizzled tile (bank conflicts, thread work)
//! that the tests and `explain` read. Pure: no bridge call.

use crate::error::{Error, Result};
use crate::ffi::{self, TensorDesc, TensorKind};
use crate::layout::{Layout, MAX_RANK};
use crate::{Atom, DType, KernelConfig};

/// Store modes shorter than this many bytes, laid out as one run with the load mode in the
/// destination (NCHW -> NHWC with C = 3), use the narrow tile.
pub const NARROW_MAX_BYTES: usize = 128;

/// Narrow tiles whose short mode has 2 to this many elements, with 16-byte accesses on both sides,
/// use registers as the stage ([`TileStage::Registers`]).
pub const NARROW_REGISTER_ROWS: usize = 8;

/// Items of at most this many bytes (and elements) are copied many to a tile ([`TileKind::Items`]).
pub const ITEM_MAX_BYTES: usize = 4096;

/// Layouts whose ordinary tile would hold fewer bytes than this take the items tile when their
/// items are small enough.
const ITEM_SWITCH_BYTES: usize = 1024;

/// Bytes of one items tile's staged run (`items_kernel`; dispatch.cu accepts up to 32 KiB).
pub(crate) const ITEM_TILE_BYTES: usize = 16384;

/// Bytes of one tile of rows in registers ([`TileKind::Rows`] with [`TileStage::Registers`]), and
/// the longest row such a tile takes.
const ROWS_TILE_BYTES: usize = 16384;
const ROWS_MAX_ROW_BYTES: usize = 2048;

/// Threads per block of the transpose kernels (`kThreads` in cpp/kernels/transpose.cu).
const TRANSPOSE_THREADS: usize = 256;

/// Shared memory per block of the transpose kernels: a 32 KiB tile (`kSmemBytes`).
const TRANSPOSE_SMEM_BYTES: usize = 32768;

/// The transpose kernels' configuration as the engine's [`KernelConfig`]: the load's TiledCopy
/// has thread layout (16, 16) and value layout (1, V), V = 16 / width elements per vector, over a
/// tile of (TB, TA) = (128 rows, a 256-byte row of TA = 256 / width elements) (`TransposeConfig`).
pub(crate) fn config(dtype: DType) -> KernelConfig {
    let w = dtype.size_bytes();
    KernelConfig {
        threads: TRANSPOSE_THREADS,
        thr_layout: (16, 16),
        val_layout: (1, 16 / w),
        tile: (TRANSPOSE_SMEM_BYTES / 256, 256 / w),
        smem_bytes: TRANSPOSE_SMEM_BYTES,
    }
}

/// Where a transpose-family tile is transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileStage {
    /// A shared-memory tile between the loads and the stores (swizzled for kinds `Transpose` and
    /// `Rows`), one barrier on each side.
    SharedMemory,
    /// Registers. A rows tile ([`TileKind::Rows`] with 16-byte accesses on both sides) is a
    /// flat list of the vectors of its rows, each thread loading and storing every 256th: no
    /// idle lane whatever the row length. A narrow tile's thread loads the short mode's 2..=8 rows of one 16-byte column
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
    /// Small items: mode 0 counts items that are compact and follow each other on both sides
    /// (every other mode lies inside an item of at most [`ITEM_MAX_BYTES`]). A tile is
    /// `tile.0` consecutive items of `tile.1` elements, one run on each side: loaded as a run,
    /// permuted in shared memory through a per-item table, stored as a run.
    Items,
}

/// How a side of a transpose-family tile is accessed along its unit-stride mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Element by element: the side has no unit stride along the mode the tile accesses.
    Element,
    /// 16-byte vectors: the offset and every other stride are whole vectors.
    Vector,
    /// 16-byte-aligned vectors at any offset and strides: the aligned vectors that cover each
    /// row (or run) are loaded and shifted into place (funnel shifts in registers, or an offset
    /// in the byte-addressable shared-memory stage), or gathered into aligned vectors for the
    /// stores; only the partial vectors at a row's ends go element by element.
    Realigned,
}

impl Access {
    /// The access of a side whose unit-stride mode along the tile is `unit`: its offset and
    /// strides but `unit`'s and `skip`'s decide between whole vectors and realigned ones.
    fn of(l: &Layout, unit: usize, skip: usize, offset_bytes: usize, w: usize) -> Access {
        if l.stride()[unit] != 1 {
            Access::Element
        } else if vector_legal(l, unit, skip, offset_bytes, w) {
            Access::Vector
        } else {
            Access::Realigned
        }
    }

    /// Whether the side moves 16-byte vectors (aligned or realigned).
    pub fn is_vectorized(self) -> bool {
        self != Access::Element
    }

    pub(crate) fn ffi(self) -> ffi::Access {
        match self {
            Access::Element => ffi::Access::Element,
            Access::Vector => ffi::Access::Vector,
            Access::Realigned => ffi::Access::Realigned,
        }
    }
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
    /// How the loads go: whole 16-byte vectors (unit stride along `mode_a`, every other source
    /// stride and the offset multiples of 16 bytes), realigned vectors (unit stride only), or
    /// element by element.
    pub load: Access,
    /// How the stores go, the same on the destination side.
    pub store: Access,
    /// CuTe `Swizzle<B, M, S>` of the shared-memory tile (`None` for the narrow tile, unswizzled).
    pub swizzle: Option<(u32, u32, u32)>,
    /// The compiled configuration (threads, the load's TiledCopy layouts, tile, smem bytes).
    pub config: KernelConfig,
}

/// 16-byte accesses along `unit` are legal: unit stride there, the offset and every other stride
/// (but `skip`'s) a whole number of vectors.
fn vector_legal(l: &Layout, unit: usize, skip: usize, offset_bytes: usize, w: usize) -> bool {
    let v = 16 / w;
    offset_bytes % 16 == 0
        && l.stride()[unit] == 1
        && (0..l.rank()).all(|m| m == unit || m == skip || l.stride()[m] % v == 0)
}

/// Column blocks a thread of a narrow tile in registers keeps in flight
/// (`narrow_blocks_in_flight` in cpp/kernels/transpose.cu): two for 2..=4 rows, one for more rows;
/// realigned rows of 1- and 2-byte elements one (two measured slower on the H100:
/// docs/transpose-tuning.md, 2026-12-06).
fn narrow_blocks_in_flight(rows: usize, realigned: bool, w: usize) -> usize {
    if rows <= 4 && (!realigned || w >= 4) {
        2
    } else {
        1
    }
}

/// The items rule: mode 0 counts items of `isz` elements that follow each other on both sides,
/// every other mode inside an item, compact on both sides (their strides are those of a packed
/// layout in some order). Returns `isz` when the items are small enough for [`TileKind::Items`].
fn small_items(cs: &Layout, cd: &Layout, w: usize) -> Option<usize> {
    let r = cs.rank();
    if r < 2 {
        return None;
    }
    let isz: usize = cs.shape()[1..].iter().product();
    let compact = |l: &Layout| {
        let mut modes: Vec<usize> = (1..r).collect();
        modes.sort_by_key(|&m| l.stride()[m]);
        let mut seen = 1;
        for m in modes {
            if l.stride()[m] != seen {
                return false;
            }
            seen *= l.shape()[m];
        }
        l.stride()[0] == isz
    };
    (isz * w <= ITEM_MAX_BYTES && compact(cs) && compact(cd)).then_some(isz)
}

/// The items tile over `isz`-element items (see [`small_items`]).
fn items_tile(
    cs: &Layout,
    isz: usize,
    w: usize,
    offset_bytes: (usize, usize),
    config: KernelConfig,
) -> TransposeTile {
    // Many items per tile: the run of a tile starts wherever it starts on each side.
    let per_tile = (ITEM_TILE_BYTES / (isz * w)).max(1);
    let items = cs.shape()[0];
    let tiles = items.div_ceil(per_tile);
    let side = |off: usize| {
        if off % 16 == 0 && (isz * w) % 16 == 0 {
            Access::Vector
        } else {
            Access::Realigned
        }
    };
    TransposeTile {
        kind: TileKind::Items,
        stage: TileStage::SharedMemory,
        mode_a: 0,
        mode_b: 0,
        tile: (per_tile, isz),
        tiles: (tiles, 1, tiles),
        load: side(offset_bytes.0),
        store: side(offset_bytes.1),
        swizzle: None,
        config,
    }
}

pub(crate) fn transpose_tile(
    dtype: DType,
    cs: &Layout,
    cd: &Layout,
    offset_bytes: (usize, usize),
) -> Result<TransposeTile> {
    let w = dtype.size_bytes();
    let v = 16 / w;
    let r = cs.rank();
    let config = Atom::Transpose128.kernel_config(dtype)?;
    // a: the source's unit-stride mode (the longest if several), else its smallest stride.
    let a = (0..r)
        .min_by_key(|&m| (cs.stride()[m], std::cmp::Reverse(cs.shape()[m])))
        .expect("rank >= 1");
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
    let store_unit = if kind == TileKind::Rows { a } else { b };
    // a narrow-load tile is one source run: the stride of mode b inside it does not matter
    let skip_load = if kind == TileKind::NarrowLoad { b } else { a };
    let load = Access::of(cs, a, skip_load, offset_bytes.0, w);
    // a narrow tile is one destination run: the stride of mode a inside it does not matter
    let skip_store = if kind == TileKind::Narrow {
        a
    } else {
        store_unit
    };
    let store = Access::of(cd, store_unit, skip_store, offset_bytes.1, w);
    let short = match kind {
        TileKind::Narrow => eb,
        TileKind::NarrowLoad => ea,
        _ => 0,
    };
    // Registers take 16-byte accesses on both sides; a narrow tile's rows may also be realigned
    // (its run is the aligned side): each lane funnel-shifts its vector and its neighbour's,
    // loading (kind Narrow) or storing (kind NarrowLoad).
    let loads_vectors =
        load == Access::Vector || (kind == TileKind::Narrow && load == Access::Realigned);
    let stores_vectors =
        store == Access::Vector || (kind == TileKind::NarrowLoad && store == Access::Realigned);
    let both_vectors = loads_vectors && stores_vectors;
    let stage = if (kind == TileKind::Rows || (2..=NARROW_REGISTER_ROWS).contains(&short))
        && both_vectors
    {
        TileStage::Registers
    } else {
        TileStage::SharedMemory
    };
    // A realigned stage keeps the 16-byte grid's extra vector of each row (or run).
    let pad = if load == Access::Realigned { 16 } else { 0 };
    // Columns per tile: in registers, one (or, for at most 4 rows, two) 16-byte column blocks per
    // thread; through shared memory, as many as the 32 KiB stage holds. Then balanced: every
    // tile along the long mode nearly full.
    let most = match (kind, stage) {
        (TileKind::Rows, _) => ROWS_MAX_ROW_BYTES / w,
        (_, TileStage::Registers) => {
            let realigned = load == Access::Realigned || store == Access::Realigned;
            config.threads * v * narrow_blocks_in_flight(short, realigned, w)
        }
        (TileKind::Narrow, _) => (config.smem_bytes / short.max(1) - pad) / w / v * v,
        _ => (config.smem_bytes - pad) / w / short.max(1) / v * v,
    };
    let balanced = |long: usize, most: usize| {
        let n = long.div_ceil(most);
        long.div_ceil(n).div_ceil(v) * v
    };
    let (ta, tb) = match (kind, stage) {
        (TileKind::Narrow, _) => (balanced(ea, most), eb),
        (TileKind::NarrowLoad, _) => (ea, balanced(eb, most)),
        (TileKind::Rows, TileStage::Registers) => {
            let ta = balanced(ea, most);
            let rows = (ROWS_TILE_BYTES / (ta * w)).max(1).min(eb);
            let n = eb.div_ceil(rows);
            (ta, eb.div_ceil(n))
        }
        // A realigned row is what 16 lanes' aligned vectors hold at any misalignment: 256 bytes
        // of the 16-byte grid cover 240 bytes of the row, so the tile is one vector narrower than
        // the stage and no lane loads a 17th vector (which took 32 registers a thread).
        _ if load == Access::Realigned => (ta_sq - v, tb_sq),
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
    let swizzle = (matches!(kind, TileKind::Transpose | TileKind::Rows)
        && stage == TileStage::SharedMemory)
        .then(|| {
            (
                3,
                (16 / w).trailing_zeros(),
                (ta_sq as u32).trailing_zeros(),
            )
        });
    // Small items that would leave the tile nearly empty (less than ITEM_SWITCH_BYTES of it
    // inside the layout: a few bytes per thread) share an items tile instead.
    let inside = ea.min(ta) * if a == b { 1 } else { eb.min(tb) } * w;
    if inside < ITEM_SWITCH_BYTES {
        if let Some(isz) = small_items(cs, cd, w) {
            return Ok(items_tile(cs, isz, w, offset_bytes, config));
        }
    }
    Ok(TransposeTile {
        kind,
        stage,
        mode_a: a,
        mode_b: b,
        tile: (ta, tb),
        tiles: (tiles_a, tiles_b, tiles),
        load,
        store,
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
    /// `16 / width` columns wide, from CuTe's partition of the load TiledCopy (realigned: the
    /// aligned vectors of the 16-byte grid under the row, the last of a row past the tile's
    /// columns, feeding only its neighbour's shift).
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
        let plain = row * self.stage_extent().0 + col;
        self.swizzle.map_or(plain, |sw| swizzle(plain, sw))
    }

    /// The shared-memory stage's extent (columns along `mode_a`, rows along `mode_b`): the
    /// configured square tile for the swizzled stage (of which a realigned tile uses `tile.0`
    /// columns), the tile itself otherwise.
    pub fn stage_extent(&self) -> (usize, usize) {
        match self.swizzle {
            Some(_) => (self.config.tile.1, self.config.tile.0),
            None => self.tile,
        }
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

    /// The threads that move one narrow tile in registers (`narrow_group_threads` in
    /// cpp/kernels/transpose.cu): enough for one pass over the tile's column blocks, a power of two
    /// from 32 to the block's threads, so that a block moves `threads / group` short tiles at once
    /// and no warp idles. The block's threads for every other tile.
    pub fn group_threads(&self) -> usize {
        let threads = self.config.threads;
        let Some(r) = self
            .narrow_rows()
            .filter(|_| self.stage == TileStage::Registers)
        else {
            return threads;
        };
        let v = self.config.val_layout.1;
        let long = if self.kind == TileKind::Narrow {
            self.tile.0
        } else {
            self.tile.1
        };
        let u = narrow_blocks_in_flight(r, self.rows_realigned(), 16 / v);
        let warps = (long / v).div_ceil(u * self.blocks_per_warp());
        (32 * warps).next_power_of_two().clamp(32, threads)
    }

    /// Whether the rows' side of a narrow tile in registers is realigned (kind Narrow's loads or
    /// kind NarrowLoad's stores).
    fn rows_realigned(&self) -> bool {
        match self.kind {
            TileKind::Narrow => self.load == Access::Realigned,
            TileKind::NarrowLoad => self.store == Access::Realigned,
            _ => false,
        }
    }

    /// New column blocks a warp of a narrow tile in registers takes per pass: 32, or 31 with
    /// realigned stores (kind NarrowLoad), whose warps overlap by one block so that each lane but
    /// the last stores the aligned vector between its block and its neighbour's.
    fn blocks_per_warp(&self) -> usize {
        if self.kind == TileKind::NarrowLoad && self.store == Access::Realigned {
            31
        } else {
            32
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

    /// What thread `t` moves in a tile (see [`ThreadWork`]). A narrow tile in registers is moved
    /// by the first [`group_threads`](Self::group_threads) threads (the block's others move other
    /// tiles the same way, so theirs is empty here); its realigned loads are listed as the column
    /// blocks they produce, each funnel-shifted from the aligned vectors i and i + 1 under its row.
    /// With realigned stores (kind NarrowLoad) a warp's last lane loads the block its next warp's
    /// first lane also loads, and stores nothing: each lane's stores are listed as its block, whose
    /// bytes it writes as the tail of one aligned vector and its neighbour's as the head of the next.
    pub fn thread_work(&self, dtype: DType, t: usize) -> Result<ThreadWork> {
        let w = dtype.size_bytes();
        let v = 16 / w;
        let flat = |count: usize| {
            (0..)
                .map(move |k| t + k * self.config.threads)
                .take_while(move |&i| i < count)
        };
        if self.kind == TileKind::Rows && self.stage == TileStage::Registers {
            // vectors i = t, t + threads, ... of the tile's rows, (row, first column) = divmod(i, nvr)
            let nvr = self.tile.0 / v;
            let loads: Vec<(usize, usize)> = flat(self.tile.1 * nvr)
                .map(|i| (i / nvr, (i % nvr) * v))
                .collect();
            let stores = loads.iter().map(|&(r, c)| (r, c, 1, v)).collect();
            return Ok(ThreadWork { loads, stores });
        }
        if self.kind == TileKind::Items {
            // the tile's run of items x isz elements in both coordinates (item, element of the
            // item): aligned 16-byte vectors of the source run, then of the destination run
            // (a whole tile on 16-byte-aligned runs)
            let (items, isz) = self.tile;
            let vectors: Vec<(usize, usize)> = flat(items * isz / v)
                .map(|i| (i * v / isz, i * v % isz))
                .collect();
            let stores = vectors.iter().map(|&(r, c)| (r, c, 1, v)).collect();
            return Ok(ThreadWork {
                loads: vectors,
                stores,
            });
        }
        if self.stage == TileStage::Registers {
            // column blocks i = t, t + threads, ...: R 16-byte vectors on each side
            let narrow = self.kind == TileKind::Narrow;
            let r = self.narrow_rows().unwrap_or(0);
            let long = if narrow { self.tile.0 } else { self.tile.1 };
            let nv = long / v;
            let lane = t % 32;
            // a group of `group` threads per tile: the block's other threads move other tiles
            let group = self.group_threads();
            // block of lane `lane` of warp `t / 32` in pass k: warps take `per_warp` new blocks
            // each (31 when they overlap by one, see blocks_per_warp)
            let per_warp = self.blocks_per_warp();
            let per_pass = group / 32 * per_warp;
            let blocks: Vec<usize> = (0..)
                .map(|k| k * per_pass + t / 32 * per_warp + lane)
                .take_while(|&i| t < group && i - lane < nv)
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
                    // overlapping warps: lane 31's block is the next warp's lane 0's, stored there
                    if per_warp == 32 || lane < 31 {
                        stores.extend(rows_side(i).map(|(q, b)| (b, q, v, 1)));
                    }
                }
            }
            return Ok(ThreadWork { loads, stores });
        }
        if self.kind == TileKind::Narrow {
            let (rows, cols) = (self.tile.1, self.tile.0);
            let loads = flat(rows * cols / v)
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
            let stores = flat(cols * nvb)
                .map(|i| ((i % nvb) * v, i / nvb, v, 1))
                .collect();
            return Ok(ThreadWork { loads, stores });
        }
        let spec = self.load_tiled_copy(dtype)?;
        let coords = spec.thread_coords(t)?;
        let loads: Vec<(usize, usize)> = coords.chunks(v).map(|c| c[0]).collect();
        let stores = match self.kind {
            TileKind::Rows => loads
                .iter()
                .filter(|&&(_, c)| c < self.tile.0)
                .map(|&(r, c)| (r, c, 1, v))
                .collect(),
            _ => {
                // the kernel's units over the whole stage; those past the tile's columns idle
                let p = (4 / w).max(1);
                let (cols, rows) = self.stage_extent();
                let (ng, nw) = (rows / v, cols / p);
                (0..ng * nw / self.config.threads)
                    .map(|k| {
                        let (grp, wc) = Self::unit_of(k * self.config.threads + t, ng);
                        (grp * v, wc * p, v, p)
                    })
                    .filter(|&(_, c, _, _)| c < self.tile.0)
                    .collect()
            }
        };
        Ok(ThreadWork { loads, stores })
    }
}

impl TransposeTile {
    /// The kernel's descriptor of this tile over the coalesced layouts `cs` / `cd` (equal shapes),
    /// coordinate 0 at the device addresses `src` / `dst`, ordered on `stream`.
    pub(crate) fn tensor_desc(
        &self,
        dtype: DType,
        (cs, cd): (&Layout, &Layout),
        (src, dst): (u64, u64),
        stream: u64,
    ) -> TensorDesc {
        let mut desc = TensorDesc {
            atom: Atom::Transpose128 as u32,
            elem_bytes: dtype.size_bytes() as u32,
            src,
            dst,
            rank: cs.rank() as u32,
            kind: match (self.kind, self.stage) {
                (TileKind::Transpose, _) => TensorKind::Transpose,
                (TileKind::Rows, TileStage::SharedMemory) => TensorKind::Rows,
                (TileKind::Rows, TileStage::Registers) => TensorKind::RowsRegisters,
                (TileKind::Items, _) => TensorKind::Items,
                (TileKind::Narrow, TileStage::SharedMemory) => TensorKind::Narrow,
                (TileKind::NarrowLoad, TileStage::SharedMemory) => TensorKind::NarrowLoad,
                (TileKind::Narrow, TileStage::Registers) => TensorKind::NarrowRegisters,
                (TileKind::NarrowLoad, TileStage::Registers) => TensorKind::NarrowLoadRegisters,
            },
            mode_a: self.mode_a as u32,
            mode_b: self.mode_b as u32,
            load: self.load.ffi(),
            store: self.store.ffi(),
            src_span: (cs.cosize().unwrap_or(0) * dtype.size_bytes()) as i64,
            tile_a: self.tile.0 as i64,
            tile_b: self.tile.1 as i64,
            tiles_a: self.tiles.0 as i64,
            tiles_b: self.tiles.1 as i64,
            tiles: self.tiles.2 as i64,
            stream,
            ..TensorDesc::default()
        };
        for m in 0..MAX_RANK.min(cs.rank()) {
            desc.shape[m] = cs.shape()[m] as i64;
            desc.src_stride[m] = cs.stride()[m] as i64;
            desc.dst_stride[m] = cd.stride()[m] as i64;
        }
        desc
    }
}
