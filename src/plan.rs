//! Alignment rules, atom choice and the plan a copy will run, with the reason for each choice.

use std::fmt;

use crate::atom::{Atom, Family, KernelConfig};
use crate::error::{Error, Result};
use crate::DType;

/// The widest power-of-two access width, in bits, between the element width and 128 bits, at which
/// every row start of a row-major matrix is aligned: element (0, 0) sits `base_offset_bytes` after a
/// 256-byte-aligned allocation and rows are `ld` elements apart.
///
/// ```
/// use cute_copy::{widest_vector_bits, DType};
/// assert_eq!(widest_vector_bits(DType::F16, 16384, 0), 128);
/// assert_eq!(widest_vector_bits(DType::F16, 130, 0), 32);  // row pitch 260 B
/// assert_eq!(widest_vector_bits(DType::F16, 16388, 0), 64); // row pitch 32776 B
/// assert_eq!(widest_vector_bits(DType::F32, 1024, 4), 32); // element (0, 0) at byte 4
/// ```
pub fn widest_vector_bits(dtype: DType, ld: usize, base_offset_bytes: usize) -> u32 {
    let elem = dtype.size_bytes();
    let pitch = ld.wrapping_mul(elem);
    let mut bytes = 16;
    while bytes > elem && (base_offset_bytes % bytes != 0 || pitch % bytes != 0) {
        bytes /= 2;
    }
    (bytes * 8) as u32
}

/// The lane mask of a vector starting at element `base`: lane `k` is valid iff
/// `base + k < logical_size`. This is the predicate a boundary tile evaluates per lane.
///
/// ```
/// assert_eq!(cute_copy::copy_mask(8, 4, 10), [true, true, false, false]);
/// ```
pub fn copy_mask(base: usize, lanes: usize, logical_size: usize) -> Vec<bool> {
    (0..lanes)
        .map(|k| base.checked_add(k).is_some_and(|i| i < logical_size))
        .collect()
}

/// The most blocks one launch takes: a 1D grid of one block per tile (`gridDim.x` ≤ 2^31 - 1).
pub const MAX_BLOCKS: usize = (1 << 31) - 1;

/// Rows at least this long (bytes) that are not 16-byte aligned on both sides go to the realign
/// family; shorter rows keep the widest element-width atom, since a warp per row segment would
/// leave most of its lanes idle.
pub const REALIGN_MIN_ROW_BYTES: usize = 128;

/// Copies and pads whose rows are 16-byte aligned on both sides but whose source or destination
/// row length is not a multiple of 16 bytes go to the realign family too once rows are at least
/// this long (a whole warp segment): the tile engine would end every row in a predicated partial
/// tile, the realign kernel ends it in an element-wise tail (and a pad's zeros) within the same
/// round trip. Measured on the H200 (criterion): f16 16383 x 16383 at ld 16384, 0.946-0.947x D2D on
/// the tile engine, 0.967-0.978x realigned (three runs); the pad f16 16383² -> 16384², 0.951x on
/// the tile engine, 0.989x realigned (one call, 2026-12-01).
pub const RAGGED_ROW_MIN_BYTES: usize = 2048;

/// Warps per block of the realign kernel (each takes one (row, segment) task at a time): blocks
/// of 2 warps, 16 resident per SM, measured 1-1.5% faster than blocks of 8 (a block's slot frees
/// when its slowest warp ends). Must match `kWarps` in cpp/kernels/realign.cu (the compiled
/// configuration's `threads / 32`, checked by a test).
pub(crate) const REALIGN_WARPS: usize = 2;

/// The most warp tasks (realign) or tiles (transpose) a launch may have for its kernel to find a
/// task's or tile's coordinates with `cutlass::FastDivmod` built on the host (31-bit dividends):
/// the rule of realign.cu's `Divisors::of` and transpose.cu's `Args::fast`; past it the kernels
/// divide in 64 bits. Only `explain` reads it here.
pub(crate) const DIVMOD_MAX_DIVIDEND: usize = i32::MAX as usize;

/// CuTe's `coalesce` of the copy's two layouts: a copy whose rows are contiguous on both sides
/// (`ld == cols`, or a single row) is one run of `rows * cols` elements; anything else stays as
/// it is. A pad never coalesces (its destination rows are longer than its source rows).
pub fn coalesce(operation: Operation, src: Operand, dst: Operand) -> (Operand, Operand) {
    let contiguous = |o: &Operand| o.ld == o.cols || o.rows <= 1;
    if operation != Operation::Copy || src.rows <= 1 || !contiguous(&src) || !contiguous(&dst) {
        return (src, dst);
    }
    let n = src.rows * src.cols;
    let run = |o: &Operand| Operand {
        rows: 1,
        cols: n,
        ld: n,
        offset_bytes: o.offset_bytes,
    };
    (run(&src), run(&dst))
}

/// What a plan does with the part of the destination outside the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Same shape on both sides; nothing outside the destination's logical bounds is written, and
    /// nothing outside the source view's span (its first row's first byte to its last row's last
    /// byte) is read: the realign family reads whole aligned 16-byte vectors that reach into the
    /// neighbouring rows and pitch gaps, and drops those bytes.
    Copy,
    /// The destination is larger: the part outside the source is written with zeros in the same
    /// launch (the ZFILL path for cp.async atoms, cleared registers for Universal atoms).
    Pad,
}

/// A matrix operand as the planner sees it: shape, leading dimension (elements) and the offset of
/// element (0, 0) in bytes from a 256-byte-aligned address (the allocation's start for cudarc
/// buffers, the raw address for raw views).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// Rows of the logical matrix.
    pub rows: usize,
    /// Columns of the logical matrix.
    pub cols: usize,
    /// Leading dimension: elements from one row start to the next.
    pub ld: usize,
    /// Byte offset of element (0, 0) from a 256-byte-aligned address.
    pub offset_bytes: usize,
}

impl Operand {
    /// A packed operand at the start of an allocation.
    pub fn packed(rows: usize, cols: usize) -> Self {
        Operand {
            rows,
            cols,
            ld: cols,
            offset_bytes: 0,
        }
    }

    fn widest_bits(&self, dtype: DType) -> u32 {
        widest_vector_bits(dtype, self.ld, self.offset_bytes)
    }

    /// The first alignment fault of a `bytes`-wide access: (what, value, remainder).
    fn misalignment(
        &self,
        dtype: DType,
        bytes: usize,
        side: Side,
    ) -> Option<(&'static str, usize, usize)> {
        let pitch = self.ld * dtype.size_bytes();
        if self.offset_bytes % bytes != 0 {
            return Some((
                side.pick("source base address", "destination base address"),
                self.offset_bytes,
                self.offset_bytes % bytes,
            ));
        }
        if pitch % bytes != 0 {
            return Some((
                side.pick("source row pitch", "destination row pitch"),
                pitch,
                pitch % bytes,
            ));
        }
        None
    }
}

#[derive(Clone, Copy)]
enum Side {
    Src,
    Dst,
}

impl Side {
    fn pick(self, src: &'static str, dst: &'static str) -> &'static str {
        match self {
            Side::Src => src,
            Side::Dst => dst,
        }
    }
}

/// Everything a launch will do, decided before anything is launched. `Display` prints it with the
/// reason for each choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The element type.
    pub dtype: DType,
    /// Copy or pad.
    pub operation: Operation,
    /// The source side.
    pub src: Operand,
    /// The destination side.
    pub dst: Operand,
    /// The operands the kernel receives: `src`/`dst` themselves, or their coalesced form when
    /// both sides are contiguous (one run of `rows * cols` elements, as CuTe's `coalesce` turns
    /// `(rows, cols):(cols, 1)` into `(rows * cols):(1)`).
    pub launched: (Operand, Operand),
    /// The atom the copy runs on.
    pub atom: Atom,
    /// Whether the caller named the atom (else the planner chose the widest legal one).
    pub explicit: bool,
    /// The widest legal access (bits) for the source.
    pub src_bits: u32,
    /// The widest legal access (bits) for the destination.
    pub dst_bits: u32,
    /// The compiled configuration of (atom, width).
    pub config: KernelConfig,
    /// Tiles over the destination, (tiles_m, tiles_n); one block per tile. For the realign family:
    /// (row tasks, segments per row), one warp task each, 2 warps per block; a row task is one row,
    /// or 2 or 4 rows of at most 1 KiB or 512 bytes copied by groups of 16 or 8 lanes.
    pub tiles: (usize, usize),
    /// Whether the last row of tiles takes the predicated path (interior tiles never do).
    pub predicated_last_row: bool,
    /// Whether the last column of tiles takes the predicated path.
    pub predicated_last_col: bool,
    /// Interior tiles run the unpredicated path (default). `false` predicates every tile: only
    /// useful to measure what peeling saves.
    pub peel: bool,
}

impl Plan {
    /// Plan a copy (`dst` the same shape as `src`) or a pad (`dst` larger), on `atom` if given.
    /// `compute_capability` is checked against the atom when known.
    pub fn new(
        dtype: DType,
        src: Operand,
        dst: Operand,
        atom: Option<Atom>,
        compute_capability: Option<(u32, u32)>,
    ) -> Result<Plan> {
        for (op, what) in [(&src, "source"), (&dst, "destination")] {
            if op.ld < op.cols || op.ld == 0 {
                return Err(Error::Shape(format!(
                    "{what} leading dimension {} is smaller than cols {} (or zero)",
                    op.ld, op.cols
                )));
            }
            if op.rows > i32::MAX as usize || op.cols > i32::MAX as usize {
                return Err(Error::Overflow(format!(
                    "{what} shape {} x {} does not fit the kernels' int indices",
                    op.rows, op.cols
                )));
            }
            if op
                .ld
                .checked_mul(dtype.size_bytes())
                .is_none_or(|p| p > i64::MAX as usize)
            {
                return Err(Error::Overflow(format!("{what} row pitch of ld {}", op.ld)));
            }
        }
        let operation = if (src.rows, src.cols) == (dst.rows, dst.cols) {
            Operation::Copy
        } else if dst.rows >= src.rows && dst.cols >= src.cols {
            Operation::Pad
        } else {
            return Err(Error::ShapeMismatch {
                src: (src.rows, src.cols),
                dst: (dst.rows, dst.cols),
                what: "a copy needs equal shapes, a pad a destination at least as large",
            });
        };
        let (src_bits, dst_bits) = (src.widest_bits(dtype), dst.widest_bits(dtype));
        let explicit = atom.is_some();
        let e = dtype.size_bytes();
        let launched = coalesce(operation, src, dst);
        let atom = match atom {
            Some(a) => {
                check_atom(a, dtype, &src, &dst, operation, compute_capability)?;
                a
            }
            None if launched.0.rows == 1 && launched.1.cols * e >= REALIGN_MIN_ROW_BYTES => {
                Atom::Realign128
            }
            None if src_bits == 128
                && dst_bits == 128
                && ((src.cols * e) % 16 != 0 || (dst.cols * e) % 16 != 0)
                && dst.cols * e >= RAGGED_ROW_MIN_BYTES =>
            {
                Atom::Realign128
            }
            None if src_bits == 128 && dst_bits == 128 => Atom::Universal128,
            None if dst.cols * e >= REALIGN_MIN_ROW_BYTES => Atom::Realign128,
            None => {
                let bytes = (src_bits.min(dst_bits) / 8) as usize;
                Atom::universal_for(bytes, dtype)
                    .expect("the menu has a Universal atom of every power-of-two width")
            }
        };
        // The tile engine takes the shapes as they are; the realign family the coalesced run.
        let launched = if atom.family() == Family::Realign {
            launched
        } else {
            (src, dst)
        };
        let config = atom.kernel_config(dtype)?;
        let (tm, tn) = config.tile;
        let tiles = if atom.family() == Family::Realign {
            let row_bytes =
                launched.1.cols.checked_mul(e).ok_or_else(|| {
                    Error::Overflow(format!("a row of {} elements", launched.1.cols))
                })?;
            // (warp tasks along the rows, segments per task): short rows share a task
            let segs = crate::ffi::rows_segments(row_bytes as i64)?;
            let rows = launched.1.rows as i64;
            if segs > 0 {
                (rows as usize, segs as usize)
            } else {
                (crate::ffi::realign_tasks(rows, segs) as usize, 1)
            }
        } else {
            (dst.rows.div_ceil(tm), dst.cols.div_ceil(tn))
        };
        if atom.family() == Family::Realign {
            // One block per 8 warp tasks, with a grid stride past 2^31 - 1 blocks: only the i64
            // task numbers limit it.
            if tiles
                .0
                .checked_mul(tiles.1)
                .is_none_or(|t| t > i64::MAX as usize / 2)
            {
                return Err(Error::LaunchConfig(format!(
                    "{} x {} warp tasks do not fit in 63 bits",
                    tiles.0, tiles.1
                )));
            }
        } else if tiles.0.checked_mul(tiles.1).is_none_or(|b| b > MAX_BLOCKS) {
            return Err(Error::LaunchConfig(format!(
                "{} x {} tiles of {tm} x {tn} exceed the {MAX_BLOCKS} blocks of a 1D grid",
                tiles.0, tiles.1
            )));
        }
        Ok(Plan {
            dtype,
            operation,
            src,
            dst,
            launched,
            atom,
            explicit,
            src_bits,
            dst_bits,
            config,
            tiles,
            predicated_last_row: dst.rows % tm != 0 || src.rows < dst.rows,
            predicated_last_col: dst.cols % tn != 0 || src.cols < dst.cols,
            peel: true,
        })
    }

    /// Blocks launched (one per tile; 0 for an empty copy, which launches nothing). For the
    /// realign family, one block per 2 warp tasks (its blocks of 2 warps; the lean run kernel's
    /// 4 KiB tiles are 2 tasks' worth too).
    pub fn blocks(&self) -> usize {
        let n = self.tiles.0 * self.tiles.1;
        if self.atom.family() == Family::Realign {
            n.div_ceil(REALIGN_WARPS)
        } else {
            n
        }
    }

    /// Whether the realign family runs this plan (any byte alignment, coalesced runs).
    pub fn realigned(&self) -> bool {
        self.atom.family() == Family::Realign
    }

    /// Whether the realign family copies this plan with its lean run kernel: one contiguous range
    /// on both sides with the same 16-byte phase, of any length (the kernel's own rule, asked
    /// through the bridge; false without the compiled kernels).
    pub fn lean_run(&self) -> bool {
        self.lean_threads(0) > 0
    }

    /// The threads per block of the lean run kernel that copies this plan on a device with
    /// `l2_bytes` of L2, 0 when the plan is not a lean run: blocks of 128 threads x 2 vectors
    /// when source and destination together fit in the L2, else (and for an unknown L2, 0) 256
    /// threads x 1 vector; both a 4 KiB tile, so [`Plan::blocks`] counts either (the kernel's own
    /// rule, asked through the bridge).
    pub fn lean_threads(&self, l2_bytes: usize) -> usize {
        if !self.realigned() || self.operation != Operation::Copy {
            return 0;
        }
        // the rule reads shapes, pitches, indices and the two addresses' 16-byte phase
        crate::ffi::rows_lean_threads(&self.rows_desc(), l2_bytes as i64)
            .map_or(0, |t| t.max(0) as usize)
    }

    /// How far ahead (in warp tasks of 2 KiB) the realign kernel prefetches the source into L2
    /// when this plan runs on a device with `l2_bytes` of L2: 1024 tasks (2 MiB) when the
    /// source span is at least the L2, so that the copy streams from DRAM; 0 otherwise, for lean
    /// runs, pads of shorter rows included, and other families (the kernel's own rule, asked
    /// through the bridge; 0 without the compiled kernels).
    pub fn l2_prefetch_tasks(&self, l2_bytes: usize) -> usize {
        if !self.realigned() || self.lean_run() {
            return 0;
        }
        let mut desc = self.rows_desc();
        desc.segs = match crate::ffi::rows_segments(desc.dst_row_bytes) {
            Ok(s) => s,
            Err(_) => return 0,
        };
        crate::ffi::rows_prefetch(&desc, l2_bytes as i64).map_or(0, |t| t.max(0) as usize)
    }

    /// The realign family's descriptor of this plan's launch, at the operands' offsets (segments
    /// not planned).
    fn rows_desc(&self) -> crate::ffi::RowsDesc {
        let e = self.dtype.size_bytes() as i64;
        let (s, d) = self.launched;
        crate::ffi::RowsDesc {
            src: s.offset_bytes as u64,
            dst: d.offset_bytes as u64,
            src_pitch: s.ld as i64 * e,
            dst_pitch: d.ld as i64 * e,
            src_row_bytes: s.cols as i64 * e,
            dst_row_bytes: d.cols as i64 * e,
            src_rows: s.rows as i64,
            dst_rows: d.rows as i64,
            items: 1,
            index_bytes: 4,
            index_stride: 1,
            ..Default::default()
        }
    }

    /// Whether both sides were coalesced into one contiguous run.
    pub fn coalesced(&self) -> bool {
        self.launched != (self.src, self.dst)
    }

    /// Whether tile (tm, tn) takes the predicated path: it is not wholly inside the source.
    /// (Never for the realign family, which predicates per row: see [`Plan::reasons`].)
    pub fn tile_is_predicated(&self, tm: usize, tn: usize) -> bool {
        if self.realigned() {
            return false;
        }
        let (h, w) = self.config.tile;
        (tm + 1) * h > self.src.rows || (tn + 1) * w > self.src.cols
    }

    /// Tiles that evaluate predicates (for the realign family: none; heads, tails and the
    /// vectors next to them are predicated per row).
    pub fn predicated_tiles(&self) -> usize {
        if self.realigned() {
            return 0;
        }
        let (h, w) = self.config.tile;
        self.blocks()
            - (self.src.rows / h).min(self.tiles.0) * (self.src.cols / w).min(self.tiles.1)
    }

    /// Bytes moved: the logical region read plus the destination region written.
    pub fn bytes_moved(&self) -> usize {
        let e = self.dtype.size_bytes();
        (self.src.rows * self.src.cols + self.dst.rows * self.dst.cols) * e
    }

    /// The reason for each choice, one sentence each.
    pub fn reasons(&self) -> Vec<String> {
        let e = self.dtype.size_bytes();
        let atom_bits = self.atom.bytes_for(self.dtype) * 8;
        let mut r = vec![format!(
            "element {} is {e} byte{}: the width-{e} kernels run it",
            self.dtype,
            if e == 1 { "" } else { "s" }
        )];
        for (op, bits, what) in [
            (&self.src, self.src_bits, "source"),
            (&self.dst, self.dst_bits, "destination"),
        ] {
            let pitch = op.ld * e;
            let legal = if bits == 128 {
                format!("{bits}-bit legal")
            } else {
                format!("128-bit not legal, {bits}-bit is the widest")
            };
            r.push(format!(
                "{what}: element (0,0) at byte offset {} and row pitch {pitch} B (ld {}) are {}-byte aligned: {legal}",
                op.offset_bytes,
                op.ld,
                bits / 8
            ));
        }
        if self.coalesced() {
            r.push(format!(
                "coalesced: both sides are contiguous (ld == cols), so CuTe's coalesce turns ({},{}):({},1) into ({}):(1) on both sides: one run of {} bytes",
                self.src.rows,
                self.src.cols,
                self.src.cols,
                self.launched.0.cols,
                self.launched.0.cols * e
            ));
        }
        if self.realigned() {
            r.extend(self.realign_reasons());
            return r;
        }
        if self.explicit {
            r.push(format!(
                "atom {} requested explicitly: {atom_bits}-bit accesses, legal for both sides",
                self.atom
            ));
        } else if self.src.cols * e < REALIGN_MIN_ROW_BYTES
            && self.src_bits.min(self.dst_bits) < 128
        {
            r.push(format!(
                "atom {}: the widest access legal on both sides ({atom_bits}-bit); rows of {} B are shorter than {REALIGN_MIN_ROW_BYTES} B, too short for a warp per row segment to realign",
                self.atom,
                self.src.cols * e
            ));
        } else {
            r.push(format!(
                "atom {}: the widest access legal on both sides ({atom_bits}-bit); a register round trip needs no shared-memory staging",
                self.atom
            ));
        }
        if self.atom.family() == Family::CpAsync {
            r.push(format!(
                "cp.async stages each {}x{} tile in {} B of shared memory, fenced with cp_async_fence and awaited with cp_async_wait<0>",
                self.config.tile.0, self.config.tile.1, self.config.smem_bytes
            ));
        }
        let (thr, val, tile) = (
            self.config.thr_layout,
            self.config.val_layout,
            self.config.tile,
        );
        let calls = tile.0 * tile.1 / (thr.0 * thr.1 * val.0 * val.1);
        r.push(format!(
            "thread layout {thr:?} row-major ({} threads), value layout {val:?}: a warp covers {} contiguous bytes of a row; tile {tile:?} gives each thread {calls} atom calls in flight",
            self.config.threads,
            thr.1 * val.1 * e
        ));
        if self.blocks() == 0 {
            r.push("empty copy: nothing to launch".into());
        } else {
            let mut p = format!(
                "grid: {} x {} tiles = {} blocks; ",
                self.tiles.0,
                self.tiles.1,
                self.blocks()
            );
            match self.predicated_tiles() {
                0 => p += "every tile is interior: no predicates evaluated",
                n => {
                    p += &format!(
                        "{n} boundary tile{} evaluate predicates (",
                        if n == 1 { "" } else { "s" }
                    );
                    let mut parts = vec![];
                    if self.predicated_last_row {
                        parts.push("last tile row");
                    }
                    if self.predicated_last_col {
                        parts.push("last tile column");
                    }
                    p += &parts.join(" and ");
                    p += "), the rest run unpredicated";
                }
            }
            r.push(p);
        }
        if self.operation == Operation::Pad {
            let how = if self.atom.zero_fill() {
                "the ZFILL atom writes zeros to shared memory"
            } else {
                "registers start cleared"
            };
            r.push(format!(
                "pad {}x{} -> {}x{}: {how}, so the destination outside the source is written with zeros in the same launch",
                self.src.rows, self.src.cols, self.dst.rows, self.dst.cols
            ));
        }
        r
    }
}

/// Bytes in MiB, for the explain lines.
fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

impl Plan {
    /// The L2 prefetch line of a realign plan's `explain`, for a device with `l2_bytes` of L2
    /// (0: no device to ask).
    fn l2_prefetch_reason(&self, l2_bytes: usize) -> String {
        let (src, _) = self.launched;
        let e = self.dtype.size_bytes();
        let span = crate::view::span(src.rows, src.cols, src.ld).unwrap_or(0) * e;
        let ahead = self.l2_prefetch_tasks(l2_bytes);
        if l2_bytes == 0 {
            format!("L2 prefetch when the source span ({:.1} MiB) is at least the device's L2: no device to ask here", mib(span))
        } else if ahead > 0 {
            format!(
                "L2 prefetch: the source span ({:.1} MiB) is at least this device's L2 ({:.1} MiB), so the copy streams from DRAM; each warp task also asks L2 (prefetch.global.L2, 16 lines of 128 B) for the source of the task {ahead} tasks ahead ({} MiB), bytes in flight that hold no register (the kernel is held to 32 warps per SM by its 64 registers)",
                mib(span),
                mib(l2_bytes),
                (ahead * self.config.tile.1 * e) >> 20
            )
        } else {
            format!(
                "no L2 prefetch: the source span ({:.1} MiB) is below this device's L2 ({:.1} MiB) or the rows are short enough to share a warp task; back-to-back copies of that size find part of their source in L2, where prefetches only add requests",
                mib(span),
                mib(l2_bytes)
            )
        }
    }

    /// The lean run kernel's line of a realign plan's `explain`, for a device with `l2_bytes` of
    /// L2 (0: no device to ask).
    fn lean_reason(&self, l2_bytes: usize) -> String {
        let e = self.dtype.size_bytes();
        let (_, dst) = self.launched;
        let bytes = dst.cols * e;
        let tile = REALIGN_WARPS * self.config.tile.1 * e; // a block's bytes: kWarps warp tasks
        let shape = |threads: usize| {
            let per = tile / 16 / threads; // 16-byte vectors per thread
            format!(
                "blocks of {threads} threads, thread layout ({threads}):(1), value layout (1), {per} vector{} per thread a block-width apart",
                if per == 1 { "" } else { "s" }
            )
        };
        let which = if l2_bytes == 0 {
            format!(
                "{} when source and destination ({:.1} MiB together) fit in the device's L2 (part of them stays there between back-to-back copies, and more loads per thread win), else {} (the copy streams from DRAM; finer tiles win): no device to ask here",
                shape(128),
                mib(2 * bytes),
                shape(256)
            )
        } else if self.lean_threads(l2_bytes) == 128 {
            format!(
                "{}: source and destination ({:.1} MiB together) fit in this device's L2 ({:.1} MiB), part of them stays there between back-to-back copies, and more loads per thread win",
                shape(128),
                mib(2 * bytes),
                mib(l2_bytes)
            )
        } else {
            format!(
                "{}: source and destination ({:.1} MiB together) outgrow this device's L2 ({:.1} MiB), so the copy streams from DRAM, where finer tiles win",
                shape(256),
                mib(2 * bytes),
                mib(l2_bytes)
            )
        };
        format!(
            "lean run kernel: one contiguous range of {bytes} B with the same 16-byte phase on both sides ({} B): a head up to the first 16-byte boundary, a body of aligned vectors and a tail, and no funnel shift; the body is a plain TiledCopy of Copy_Atom<UniversalCopy<uint128_t>> over tiles of {tile} B ({} blocks), {which}; 32 registers per thread, so 64 warps stay resident per SM instead of the general kernel's 32",
            dst.offset_bytes % 16,
            self.blocks()
        )
    }

    fn realign_reasons(&self) -> Vec<String> {
        let l2 = crate::ffi::l2_bytes().max(0) as usize; // the current device's, 0 without one
        let e = self.dtype.size_bytes();
        let (src, dst) = self.launched;
        let mut r = Vec::new();
        let why = if self.explicit {
            "requested explicitly (legal at any alignment)".to_string()
        } else if self.lean_run() {
            "one long run whose two ends share their 16-byte phase: streamed at the copy limit without a shift".to_string()
        } else if self.coalesced() || dst.rows == 1 {
            "one long run: a warp per 2 KiB segment of it streams at the copy limit whatever its alignment".to_string()
        } else if self.src_bits == 128 && self.dst_bits == 128 {
            let long = if src.cols == dst.cols {
                format!("{} B long, not a multiple of 16", dst.cols * e)
            } else {
                format!(
                    "{} B long in the source and {} B in the destination, not both multiples of 16",
                    src.cols * e,
                    dst.cols * e
                )
            };
            format!(
                "rows are 16-byte aligned on both sides but {long} (and at least {RAGGED_ROW_MIN_BYTES} B): the tile engine would end every row in a predicated partial tile, the realign kernel ends it in an element-wise tail within the same round trip"
            )
        } else {
            format!(
                "rows are not 16-byte aligned on both sides (source {}-byte, destination {}-byte) and are at least {REALIGN_MIN_ROW_BYTES} B long",
                self.src_bits / 8,
                self.dst_bits / 8
            )
        };
        r.push(format!("atom {}: {why}", self.atom));
        if self.lean_run() {
            r.push(self.lean_reason(l2));
            return r;
        }
        let (sp, dp) = (src.ld * e, dst.ld * e);
        let shift = if src.rows <= 1 || sp % 16 == dp % 16 {
            format!(
                "the same for every row ({} B)",
                (16 + src.offset_bytes % 16 - dst.offset_bytes % 16) % 16
            )
        } else {
            "changing from row to row (the pitches differ mod 16)".to_string()
        };
        r.push(format!(
            "each destination row splits into a head up to its first 16-byte boundary, a body of 16-byte-aligned vectors and a tail; a body vector's source bytes start m bytes into the source's 16-byte grid, m {shift}; each lane loads the aligned source vector A_v holding its first byte, takes A_v+1 from the next lane by a warp shuffle (lane 31 loads one more) and funnel-shifts the pair into place, so every global load and store of the body is 128-bit and aligned"
        ));
        r.push(format!(
            "TiledCopy of Copy_Atom<UniversalCopy<uint128_t>> over the body: thread layout (32):(1) (a warp), value layout (1): consecutive lanes own consecutive vectors, {} vectors in flight per lane a warp-width apart; a source vector that reaches past its row into the neighbouring rows or pitch gaps is still read whole when it lies inside the source's read span (first row's first byte to last row's last byte read: one allocation), its outside bytes dropped by the shift; only the span's first and last vectors{} go by pieces, and heads and tails element by element, under identity-tensor predicates (nothing outside the span is read, nothing outside a destination row is written)",
            self.config.tile.1 * e / 16 / 32,
            if src.cols < dst.cols {
                " and, for this pad's shorter source rows, every vector that reaches past its row (the zeros beyond it)"
            } else {
                ""
            }
        ));
        r.push(self.l2_prefetch_reason(l2));
        let packed = self.launched.0.rows > self.tiles.0;
        if self.blocks() == 0 {
            r.push("empty copy: nothing to launch".into());
        } else if packed {
            let per = self.launched.0.rows.div_ceil(self.tiles.0);
            r.push(format!(
                "rows of {} B are short: {per} rows share a warp task, each copied by a group of {} lanes (the same TiledCopy with thread layout ({}):(1), shuffles within the group): {} tasks, {REALIGN_WARPS} warps per block ({} blocks)",
                self.launched.1.cols * e,
                32 / per,
                32 / per,
                self.tiles.0,
                self.blocks()
            ));
        } else {
            r.push(format!(
                "warp tasks: {} row{} x {} segment{} of up to {} B = {} tasks, {REALIGN_WARPS} warps per block ({} blocks), at most 64 registers per thread so that {} blocks ({} warps) fit on an SM; {}",
                self.tiles.0,
                if self.tiles.0 == 1 { "" } else { "s" },
                self.tiles.1,
                if self.tiles.1 == 1 { "" } else { "s" },
                self.config.tile.1 * e,
                self.tiles.0 * self.tiles.1,
                self.blocks(),
                32 / REALIGN_WARPS,
                32,
                if self.tiles.0.saturating_mul(self.tiles.1) <= DIVMOD_MAX_DIVIDEND {
                    "a task's (row, segment) comes from a cutlass::FastDivmod built on the host (a multiply-high, no 64-bit division before the first load)"
                } else {
                    "2^31 tasks or more: each task divides its index into (row, segment) in 64 bits"
                }
            ));
        }
        if self.operation == Operation::Pad {
            r.push(format!(
                "pad {}x{} -> {}x{}: destination bytes past a source row, and rows past the source, are built as zeros and stored in the same launch",
                self.src.rows, self.src.cols, self.dst.rows, self.dst.cols
            ));
        }
        r
    }
}

fn check_atom(
    atom: Atom,
    dtype: DType,
    src: &Operand,
    dst: &Operand,
    operation: Operation,
    cc: Option<(u32, u32)>,
) -> Result<()> {
    if atom.family() == Family::Transpose {
        return Err(Error::Unsupported(format!(
            "{atom:?} moves tensors between layouts (copy_tensor plans it), not 2D copies or pads"
        )));
    }
    let bytes = atom.bytes_for(dtype);
    atom.values_for(dtype)?;
    if let Some((major, minor)) = cc {
        if major < atom.min_compute_capability() {
            return Err(Error::UnsupportedArch {
                atom,
                needed: atom.min_compute_capability(),
                major,
                minor,
            });
        }
    }
    if operation == Operation::Pad && !atom.can_pad() {
        return Err(Error::AtomCannotZeroFill(atom));
    }
    if atom.family() == Family::Realign {
        return Ok(()); // any byte alignment: it aligns its own accesses
    }
    for (op, side) in [(src, Side::Src), (dst, Side::Dst)] {
        if let Some((what, value, remainder)) = op.misalignment(dtype, bytes, side) {
            return Err(Error::Misaligned {
                atom,
                what,
                value,
                required: bytes,
                remainder,
            });
        }
    }
    Ok(())
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operation {
            Operation::Copy => "copy",
            Operation::Pad => "pad",
        };
        writeln!(
            f,
            "plan: {op} {} {}x{} (ld {}) -> {}x{} (ld {}) on {}",
            self.dtype,
            self.src.rows,
            self.src.cols,
            self.src.ld,
            self.dst.rows,
            self.dst.cols,
            self.dst.ld,
            self.atom
        )?;
        for r in self.reasons() {
            writeln!(f, "  - {r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widest_vector_bits_checks_every_row_start() {
        assert_eq!(widest_vector_bits(DType::F16, 16384, 0), 128);
        assert_eq!(widest_vector_bits(DType::F16, 16388, 0), 64);
        assert_eq!(widest_vector_bits(DType::F16, 130, 0), 32);
        assert_eq!(widest_vector_bits(DType::F16, 131, 0), 16);
        assert_eq!(widest_vector_bits(DType::U8, 131, 0), 8);
        assert_eq!(widest_vector_bits(DType::F64, 3, 0), 64); // never narrower than one element
        assert_eq!(widest_vector_bits(DType::F32, 1024, 8), 64);
        assert_eq!(widest_vector_bits(DType::I8, 1024, 3), 8);
        assert_eq!(widest_vector_bits(DType::U16, 64, 2), 16);
    }

    #[test]
    fn copy_mask_marks_lanes_inside_the_logical_size() {
        assert_eq!(copy_mask(0, 8, 16383), vec![true; 8]);
        assert_eq!(
            copy_mask(16376, 8, 16383),
            [true, true, true, true, true, true, true, false]
        );
        assert_eq!(copy_mask(20, 4, 10), vec![false; 4]);
        assert_eq!(copy_mask(usize::MAX, 2, 10), [false, false]);
    }

    #[test]
    fn planner_picks_the_widest_atom_legal_on_both_sides() {
        // Rows shorter than REALIGN_MIN_ROW_BYTES keep the widest element-width atom.
        let short = Operand {
            rows: 130,
            cols: 60,
            ld: 62,
            offset_bytes: 0,
        };
        let p = Plan::new(DType::F16, short, short, None, None).unwrap();
        assert_eq!(p.atom, Atom::Universal32);
        assert!(
            p.reasons()
                .iter()
                .any(|r| r.contains("row pitch 124 B") && r.contains("128-bit not legal")),
            "{p}"
        );
        assert!(p.to_string().contains("too short"), "{p}");
        let dense = Operand {
            rows: 16383,
            cols: 16383,
            ld: 16384,
            offset_bytes: 0,
        };
        // 16-byte-aligned rows of 32766 B: realigned (an element-wise tail per row) ...
        let p = Plan::new(DType::F16, dense, dense, None, None).unwrap();
        assert_eq!(p.atom, Atom::Realign128);
        assert!(p.to_string().contains("not a multiple of 16"), "{p}");
        // ... where the tile engine would predicate the last tile of every row
        let p = Plan::new(DType::F16, dense, dense, Some(Atom::Universal128), None).unwrap();
        assert!(p.predicated_last_row && p.predicated_last_col);
        assert_eq!(p.tiles, (256, 64));
        assert_eq!(p.predicated_tiles(), 256 + 64 - 1);
        assert!(!p.coalesced());
        // a pad of such rows to whole vectors: realigned too (its source rows are ragged)
        let p = Plan::new(DType::F16, dense, Operand::packed(16384, 16384), None, None).unwrap();
        assert!(
            p.operation == Operation::Pad && p.atom == Atom::Realign128,
            "{p}"
        );
        assert!(
            p.to_string()
                .contains("32766 B long in the source and 32768 B in the destination"),
            "{p}"
        );
        // a pad of whole-vector rows to ragged ones, likewise
        let whole = Operand::packed(100, 16384);
        let ragged = Operand {
            ld: 16392, // 16-byte-aligned rows of 32778 B
            ..Operand::packed(100, 16389)
        };
        let p = Plan::new(DType::F16, whole, ragged, None, None).unwrap();
        assert_eq!(p.atom, Atom::Realign128, "{p}");
        // rows that are whole vectors on both sides, or short, stay on the tile engine, pads too
        let p = Plan::new(DType::F16, whole, Operand::packed(128, 16392), None, None).unwrap();
        assert!(
            p.operation == Operation::Pad && p.atom == Atom::Universal128,
            "{p}"
        );
        for (cols, ld) in [(16384, 16392), (1001, 1008)] {
            let o = Operand {
                rows: 64,
                cols,
                ld,
                offset_bytes: 0,
            };
            let p = Plan::new(DType::F16, o, o, None, None).unwrap();
            assert_eq!(p.atom, Atom::Universal128, "{p}");
        }
        let p = Plan::new(
            DType::F64,
            Operand::packed(3, 3),
            Operand::packed(3, 3),
            None,
            None,
        )
        .unwrap();
        assert_eq!(p.atom, Atom::Universal); // a 72-byte run: too short to realign
    }

    #[test]
    fn rows_not_16_byte_aligned_are_realigned() {
        // A packed 16383-wide f16 destination: odd pitch.
        let src = Operand {
            rows: 16383,
            cols: 16383,
            ld: 16384,
            offset_bytes: 0,
        };
        let p = Plan::new(DType::F16, src, Operand::packed(16383, 16383), None, None).unwrap();
        assert_eq!(p.atom, Atom::Realign128);
        assert!(!p.coalesced());
        assert_eq!(p.tiles, (16383, 16)); // 32766-byte rows: 16 segments of 2 KiB
        assert!(p.to_string().contains("funnel-shift"), "{p}");
        assert!(p.to_string().contains("changing from row to row"), "{p}");
        // 8-byte pitch on one side, any byte offset on the other.
        let a = Operand {
            rows: 100,
            cols: 1000,
            ld: 1004,
            offset_bytes: 0,
        };
        let b = Operand {
            rows: 100,
            cols: 1000,
            ld: 1024,
            offset_bytes: 6,
        };
        let p = Plan::new(DType::F16, a, b, None, None).unwrap();
        assert_eq!(p.atom, Atom::Realign128);
        assert_eq!((p.src_bits, p.dst_bits), (64, 16));
        // The element-width plan is still there on request, and Realign128 is legal anywhere.
        let p = Plan::new(DType::F16, a, b, Some(Atom::Universal16), None).unwrap();
        assert_eq!(p.atom, Atom::Universal16);
        let p = Plan::new(
            DType::U8,
            Operand::packed(5, 7),
            Operand::packed(5, 7),
            Some(Atom::Realign128),
            None,
        )
        .unwrap();
        assert!(p.explicit && p.realigned());
        // A pad realigns too and says so.
        let p = Plan::new(DType::BF16, a, Operand::packed(104, 1024), None, None).unwrap();
        assert_eq!((p.atom, p.operation), (Atom::Realign128, Operation::Pad));
        assert!(p.to_string().contains("zeros"), "{p}");
    }

    /// The automatic plan of a u8 copy of `rows x cols`, source at ld `src_ld` and `src_offset`
    /// bytes, destination at ld `dst_ld`.
    fn u8_rows(
        rows: usize,
        cols: usize,
        (src_ld, src_offset): (usize, usize),
        dst_ld: usize,
    ) -> Plan {
        let src = Operand {
            ld: src_ld,
            offset_bytes: src_offset,
            ..Operand::packed(rows, cols)
        };
        let dst = Operand {
            ld: dst_ld,
            ..Operand::packed(rows, cols)
        };
        Plan::new(DType::U8, src, dst, None, None).unwrap()
    }

    #[test]
    fn realign_task_coordinates_come_from_a_host_divmod_below_2_31_tasks() {
        // rows of 4000 bytes (two 2 KiB segments), ld 4001 -> 4096: realigned, never coalesced
        let rows = |n: usize| u8_rows(n, 4000, (4001, 0), 4096);
        let p = rows(8191);
        assert!(p.realigned(), "{p}");
        assert!(p.to_string().contains("cutlass::FastDivmod"), "{p}");
        // 2^30 rows x 2 segments: 2^31 tasks, past FastDivmod's 31-bit dividends
        let p = rows(1 << 30);
        assert_eq!(p.tiles.0 * p.tiles.1, 1 << 31, "{p}");
        let text = p.to_string();
        assert!(
            !text.contains("FastDivmod") && text.contains("2^31 tasks or more"),
            "{p}"
        );
    }

    #[test]
    fn realigned_vectors_read_whole_inside_the_source_span_and_by_pieces_past_a_pads_rows() {
        let src = Operand {
            ld: 4001,
            ..Operand::packed(100, 4000)
        };
        let copy = Plan::new(DType::U8, src, Operand::packed(100, 4000), None, None).unwrap();
        let text = copy.to_string();
        assert!(copy.realigned(), "{copy}");
        assert!(
            text.contains("inside the source's read span") && !text.contains("this pad's shorter"),
            "{copy}"
        );
        // a pad whose source rows are shorter: the vectors past them must read zeros
        let pad = Plan::new(DType::U8, src, Operand::packed(100, 4100), None, None).unwrap();
        assert!(pad.realigned() && pad.operation == Operation::Pad, "{pad}");
        assert!(
            pad.to_string().contains("this pad's shorter source rows"),
            "{pad}"
        );
        // a pad of rows only keeps the span rule for every row it reads
        let rows = Plan::new(DType::U8, src, Operand::packed(120, 4000), None, None).unwrap();
        assert!(
            rows.realigned() && rows.operation == Operation::Pad,
            "{rows}"
        );
        assert!(!rows.to_string().contains("this pad's shorter"), "{rows}");
    }

    #[test]
    fn sources_at_least_the_l2_prefetch_ahead_and_smaller_ones_do_not() {
        let l2 = 60 << 20; // an H200's L2
                           // u8 rows of 8191 bytes at (0,1) of ld 8192 -> ld 8192: realigned, never one run
        let rows = |n: usize| u8_rows(n, 8191, (8192, 1), 8192);
        let big = rows(8191); // a 64 MiB span
        assert!(big.realigned() && !big.lean_run(), "{big}");
        assert_eq!(big.l2_prefetch_tasks(l2), 1024);
        assert!(big
            .l2_prefetch_reason(l2)
            .starts_with("L2 prefetch: the source span (64.0 MiB)"));
        let small = rows(4096); // 32 MiB
        assert_eq!(small.l2_prefetch_tasks(l2), 0);
        assert!(small.l2_prefetch_reason(l2).starts_with("no L2 prefetch"));
        // the line is the L2 itself: a span equal to the L2 prefetches, one a byte short of it does not
        assert_eq!(big.l2_prefetch_tasks(8191 * 8192 - 1), 1024);
        assert_eq!(big.l2_prefetch_tasks(8191 * 8192), 0);
        // no device: the rule is stated, nothing claimed
        assert!(big.l2_prefetch_reason(0).contains("no device to ask"));
        // lean runs (contiguous, one 16-byte phase) and short rows sharing a warp task never prefetch
        let lean = Plan::new(
            DType::U8,
            Operand::packed(1024, 1024),
            Operand::packed(1024, 1024),
            None,
            None,
        )
        .unwrap();
        assert!(lean.lean_run() && lean.l2_prefetch_tasks(1) == 0, "{lean}");
        let short = Plan::new(
            DType::U8,
            Operand {
                ld: 1001,
                ..Operand::packed(100_000, 1000)
            },
            Operand::packed(100_000, 1000),
            None,
            None,
        )
        .unwrap();
        assert!(
            short.realigned() && short.l2_prefetch_tasks(1) == 0,
            "{short}"
        );
    }

    #[test]
    fn runs_in_one_phase_take_the_lean_kernel_in_blocks_by_the_l2() {
        let run = |dtype: DType, n: usize, so: usize, dof: usize| {
            let at = |o: usize| Operand {
                offset_bytes: o,
                ..Operand::packed(1, n)
            };
            Plan::new(dtype, at(so), at(dof), None, None).unwrap()
        };
        let e = |d: DType| d.size_bytes();
        let l2 = 60 << 20; // an H200's L2
        for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
            // same phase (offsets 16 bytes apart, or equal), any length: lean
            let n = (l2 / 2) / e(dtype); // source and destination fill the L2 exactly
            let p = run(dtype, n, 0, 0);
            assert!(p.lean_run(), "{p}");
            assert!(p.to_string().contains("lean run kernel"), "{p}");
            assert_eq!(p.lean_threads(l2), 128, "{p}");
            assert!(p.lean_reason(l2).contains("blocks of 128 threads"));
            assert!(p.lean_reason(l2).contains("2 vectors per thread"));
            // one element more outgrows the L2: finer tiles
            let p = run(dtype, n + 1, 0, 0);
            assert_eq!(p.lean_threads(l2), 256, "{p}");
            assert!(p.lean_reason(l2).contains("1 vector per thread"));
            assert!(p.lean_reason(l2).contains("streams from DRAM"));
            // no device: the rule is stated with both shapes, and the launch count is the same
            assert!(p.lean_reason(0).contains("no device to ask"));
            assert_eq!(p.lean_threads(0), 256);
            // either shape's 4 KiB tiles cover the body (all but a head and a tail of < 16 B)
            assert!(p.blocks() * 4096 + 16 > (n + 1) * e(dtype), "{p}");
            let p = run(dtype, 4096, 8, 24);
            assert!(p.lean_run() && p.lean_threads(l2) == 128, "{p}");
            // a run much longer than any L2 is still lean
            assert!(run(dtype, (1 << 30) / e(dtype), 16, 0).lean_run());
            // another phase: the general kernel
            let p = run(dtype, 1000, 0, e(dtype));
            assert!(
                !p.lean_run()
                    && p.lean_threads(l2) == 0
                    && !p.to_string().contains("lean run kernel"),
                "{p}"
            );
        }
        // rows that do not coalesce, and pads, are never lean
        let p = Plan::new(
            DType::U8,
            Operand::packed(4, 1000),
            Operand {
                ld: 1024,
                ..Operand::packed(4, 1000)
            },
            None,
            None,
        )
        .unwrap();
        assert!(p.realigned() && !p.lean_run(), "{p}");
        let p = Plan::new(
            DType::U8,
            Operand::packed(1, 1000),
            Operand::packed(1, 1024),
            None,
            None,
        )
        .unwrap();
        assert!(p.operation == Operation::Pad && !p.lean_run(), "{p}");
    }

    #[test]
    fn contiguous_copies_coalesce_into_one_run() {
        let p = Plan::new(
            DType::F32,
            Operand::packed(64, 128),
            Operand::packed(64, 128),
            None,
            None,
        )
        .unwrap();
        assert!(p.coalesced());
        assert_eq!(p.launched.0, Operand::packed(1, 64 * 128));
        assert_eq!(p.atom, Atom::Realign128);
        assert_eq!(p.tiles, (1, 16)); // 32 KiB: 16 segments
        assert!(
            p.to_string().contains("(64,128):(128,1) into (8192):(1)"),
            "{p}"
        );
        // 12000 x 12001 u16 with ld 12001 on both sides: one run of 288 MB.
        let o = Operand::packed(12000, 12001);
        let p = Plan::new(DType::U16, o, o, None, None).unwrap();
        assert_eq!(p.launched.1.cols, 12000 * 12001);
        // Not for pads, nor when one side has gaps.
        let gap = Operand {
            ld: 130,
            ..Operand::packed(64, 128)
        };
        assert_eq!(
            coalesce(Operation::Copy, gap, Operand::packed(64, 128)),
            (gap, Operand::packed(64, 128))
        );
        let (s, d) = (Operand::packed(4, 4), Operand::packed(8, 8));
        assert_eq!(coalesce(Operation::Pad, s, d), (s, d));
    }

    #[test]
    fn explicit_misaligned_atom_names_what_and_by_how_much() {
        let src = Operand {
            rows: 10,
            cols: 130,
            ld: 130,
            offset_bytes: 0,
        };
        let e = Plan::new(
            DType::F16,
            src,
            Operand::packed(10, 130),
            Some(Atom::Universal128),
            None,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Misaligned {
                    what: "source row pitch",
                    value: 260,
                    required: 16,
                    remainder: 4,
                    ..
                }
            ),
            "{e}"
        );
        let src = Operand {
            rows: 10,
            cols: 128,
            ld: 128,
            offset_bytes: 8,
        };
        let e = Plan::new(
            DType::F16,
            src,
            Operand::packed(10, 128),
            Some(Atom::CpAsync128),
            None,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Misaligned {
                    what: "source base address",
                    value: 8,
                    remainder: 8,
                    ..
                }
            ),
            "{e}"
        );
        let dst = Operand {
            rows: 10,
            cols: 128,
            ld: 130,
            offset_bytes: 0,
        };
        let e = Plan::new(
            DType::F32,
            Operand::packed(10, 128),
            dst,
            Some(Atom::Universal128),
            None,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Misaligned {
                    what: "destination row pitch",
                    value: 520,
                    remainder: 8,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn pads_need_an_atom_that_can_write_zeros() {
        let e = Plan::new(
            DType::F16,
            Operand::packed(8, 8),
            Operand::packed(16, 16),
            Some(Atom::CpAsync128),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, Error::AtomCannotZeroFill(Atom::CpAsync128)));
        let p = Plan::new(
            DType::F16,
            Operand::packed(8, 8),
            Operand::packed(16, 16),
            Some(Atom::CpAsyncZfill128),
            None,
        )
        .unwrap();
        assert_eq!(p.operation, Operation::Pad);
        assert!(p.to_string().contains("ZFILL"));
        let e = Plan::new(
            DType::F16,
            Operand::packed(16, 16),
            Operand::packed(8, 16),
            None,
            None,
        )
        .unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }));
    }

    #[test]
    fn cp_async_needs_sm80_and_bad_shapes_are_errors() {
        let e = Plan::new(
            DType::F32,
            Operand::packed(8, 8),
            Operand::packed(8, 8),
            Some(Atom::CpAsync32),
            Some((7, 5)),
        )
        .unwrap_err();
        assert!(matches!(
            e,
            Error::UnsupportedArch {
                needed: 8,
                major: 7,
                minor: 5,
                ..
            }
        ));
        let bad = Operand {
            rows: 4,
            cols: 8,
            ld: 4,
            offset_bytes: 0,
        };
        assert!(matches!(
            Plan::new(DType::F32, bad, bad, None, None),
            Err(Error::Shape(_))
        ));
        let huge = Operand {
            rows: 1 << 32,
            cols: 1,
            ld: 1,
            offset_bytes: 0,
        };
        assert!(matches!(
            Plan::new(DType::U8, huge, huge, None, None),
            Err(Error::Overflow(_))
        ));
        let e = Plan::new(
            DType::F64,
            Operand::packed(8, 8),
            Operand::packed(8, 8),
            Some(Atom::Universal32),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, Error::AtomNarrowerThanElement { .. }));
    }
}
