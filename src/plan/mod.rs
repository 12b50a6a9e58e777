//! Alignment rules, atom choice and the plan a copy will run, with the reason for each choice.

use crate::atom::{Atom, Family, KernelConfig};
use crate::error::{Error, Result};
use crate::realign;
use crate::{DType, DeviceInfo};

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
/// round trip (the measurements behind it: docs/realign-tuning.md, "Numbers from the kernel's
/// comments").
pub const RAGGED_ROW_MIN_BYTES: usize = 2048;

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

    /// This operand's rows in bytes, its first row at `addr`, for a realign descriptor.
    pub(crate) fn rows_at(&self, addr: u64, dtype: DType) -> realign::Rows {
        let e = dtype.size_bytes() as u64;
        realign::Rows {
            addr,
            pitch: self.ld as u64 * e,
            row_bytes: self.cols as u64 * e,
            rows: self.rows as u64,
        }
    }

    fn widest_bits(&self, dtype: DType) -> u32 {
        widest_vector_bits(dtype, self.ld, self.offset_bytes)
    }

    /// The first alignment fault of a `bytes`-wide access: (what, value, remainder), `what` one of
    /// `names` (the base address's, the row pitch's).
    fn misalignment(
        &self,
        dtype: DType,
        bytes: usize,
        names: [&'static str; 2],
    ) -> Option<(&'static str, usize, usize)> {
        let pitch = self.ld * dtype.size_bytes();
        [(names[0], self.offset_bytes), (names[1], pitch)]
            .into_iter()
            .find(|&(_, v)| v % bytes != 0)
            .map(|(what, v)| (what, v, v % bytes))
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
    /// The device facts the plan was made for (its `explain` text reads the L2 size), or `None`
    /// for a plan made without a device ([`Plan::new`]): the text then says what each rule would
    /// decide on a device.
    pub device: Option<DeviceInfo>,
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
    /// Plan a copy (`dst` the same shape as `src`) or a pad (`dst` larger), on `atom` if given,
    /// for no device in particular. `compute_capability` is checked against the atom when known.
    pub fn new(
        dtype: DType,
        src: Operand,
        dst: Operand,
        atom: Option<Atom>,
        compute_capability: Option<(u32, u32)>,
    ) -> Result<Plan> {
        Plan::build(dtype, src, dst, atom, compute_capability, None)
    }

    /// Plan as [`Plan::new`] for the device `device` describes: its compute capability is checked
    /// against the atom, and the plan (and its `explain` text) records its facts. No device is
    /// asked: the same facts give the same plan on every machine.
    pub fn for_device(
        dtype: DType,
        src: Operand,
        dst: Operand,
        atom: Option<Atom>,
        device: &DeviceInfo,
    ) -> Result<Plan> {
        let cc = Some(device.compute_capability);
        Plan::build(dtype, src, dst, atom, cc, Some(*device))
    }

    /// The planner: `compute_capability` checked against the atom when given, `device` recorded.
    pub(crate) fn build(
        dtype: DType,
        src: Operand,
        dst: Operand,
        atom: Option<Atom>,
        compute_capability: Option<(u32, u32)>,
        device: Option<DeviceInfo>,
    ) -> Result<Plan> {
        for (op, what) in [(&src, "source"), (&dst, "destination")] {
            if op.ld < op.cols || op.ld == 0 {
                return Err(Error::LeadingDimension {
                    what,
                    ld: op.ld,
                    cols: op.cols,
                });
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
            let segs = realign::segments(row_bytes as i64);
            let rows = launched.1.rows as i64;
            if segs > 0 {
                (rows as usize, segs as usize)
            } else {
                (realign::tasks(rows, segs) as usize, 1)
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
                return Err(Error::GridTooLarge {
                    what: format!("{} x {} warp tasks", tiles.0, tiles.1),
                    count: (tiles.0 as u64).saturating_mul(tiles.1 as u64),
                    max: i64::MAX as u64 / 2,
                });
            }
        } else if tiles.0.checked_mul(tiles.1).is_none_or(|b| b > MAX_BLOCKS) {
            return Err(Error::GridTooLarge {
                what: format!("{} x {} tiles of {tm} x {tn}", tiles.0, tiles.1),
                count: (tiles.0 as u64).saturating_mul(tiles.1 as u64),
                max: MAX_BLOCKS as u64,
            });
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
            device,
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
            realign::blocks(n)
        } else {
            n
        }
    }

    /// Whether the realign family runs this plan (any byte alignment, coalesced runs).
    pub fn realigned(&self) -> bool {
        self.atom.family() == Family::Realign
    }

    /// Whether the realign family copies this plan with its lean run kernel: one contiguous range
    /// on both sides with the same 16-byte phase, of any length (the realign family's rule).
    pub fn lean_run(&self) -> bool {
        self.lean_threads(0) > 0
    }

    /// The threads per block of the lean run kernel that copies this plan on a device with
    /// `l2_bytes` of L2, 0 when the plan is not a lean run: blocks of 128 threads x 2 vectors
    /// when source and destination together fit in the L2, else (and for an unknown L2, 0) 256
    /// threads x 1 vector; both a 4 KiB tile, so [`Plan::blocks`] counts either (the realign
    /// family's rule).
    pub fn lean_threads(&self, l2_bytes: usize) -> usize {
        if !self.realigned() || self.operation != Operation::Copy {
            return 0;
        }
        // the rule reads shapes, pitches, indices and the two addresses' 16-byte phase
        realign::lean_threads(&self.rows_desc(), l2_bytes)
    }

    /// How far ahead (in warp tasks of 2 KiB) the realign kernel prefetches the source into L2
    /// when this plan runs on a device with `l2_bytes` of L2: 1024 tasks (2 MiB) when the
    /// source span is at least the L2, so that the copy streams from DRAM; 0 otherwise, for lean
    /// runs, pads of shorter rows included, and other families (the realign family's rule).
    pub fn l2_prefetch_tasks(&self, l2_bytes: usize) -> usize {
        if !self.realigned() || self.lean_run() {
            return 0;
        }
        realign::prefetch_tasks(&self.rows_desc(), l2_bytes)
    }

    /// The realign family's descriptor of this plan's launch with its operands at `src` / `dst`
    /// (for the rules: their offsets, which carry the 16-byte phases).
    pub(crate) fn rows_desc_at(&self, src: u64, dst: u64) -> crate::ffi::RowsDesc {
        let (s, d) = self.launched;
        realign::rows_desc(s.rows_at(src, self.dtype), d.rows_at(dst, self.dtype))
    }

    fn rows_desc(&self) -> crate::ffi::RowsDesc {
        let (s, d) = self.launched;
        self.rows_desc_at(s.offset_bytes as u64, d.offset_bytes as u64)
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
}

fn check_atom(
    atom: Atom,
    dtype: DType,
    src: &Operand,
    dst: &Operand,
    operation: Operation,
    cc: Option<(u32, u32)>,
) -> Result<()> {
    if atom.is_tensor_only() {
        return Err(Error::Unsupported(format!(
            "{atom:?} moves tensors between layouts (copy_tensor / convert_tensor plan it), not 2D copies or pads"
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
    let names = [
        (src, ["source base address", "source row pitch"]),
        (dst, ["destination base address", "destination row pitch"]),
    ];
    for (op, names) in names {
        if let Some((what, value, remainder)) = op.misalignment(dtype, bytes, names) {
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

mod explain;
mod tensor;

pub use tensor::{TensorPlan, TensorRoute};
#[cfg(test)]
mod tests;
