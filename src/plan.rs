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

/// What a plan does with the part of the destination outside the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Same shape on both sides; nothing outside the logical bounds is read or written.
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
    /// Tiles over the destination, (tiles_m, tiles_n); one block per tile.
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
        let atom = match atom {
            Some(a) => {
                check_atom(a, dtype, &src, &dst, operation, compute_capability)?;
                a
            }
            None => {
                let bytes = (src_bits.min(dst_bits) / 8) as usize;
                Atom::universal_for(bytes, dtype)
                    .expect("the menu has a Universal atom of every power-of-two width")
            }
        };
        let config = atom.kernel_config(dtype)?;
        let (tm, tn) = config.tile;
        let tiles = (dst.rows.div_ceil(tm), dst.cols.div_ceil(tn));
        if tiles.0.checked_mul(tiles.1).is_none_or(|b| b > MAX_BLOCKS) {
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

    /// Blocks launched (one per tile; 0 for an empty copy, which launches nothing).
    pub fn blocks(&self) -> usize {
        self.tiles.0 * self.tiles.1
    }

    /// Whether tile (tm, tn) takes the predicated path: it is not wholly inside the source.
    pub fn tile_is_predicated(&self, tm: usize, tn: usize) -> bool {
        let (h, w) = self.config.tile;
        (tm + 1) * h > self.src.rows || (tn + 1) * w > self.src.cols
    }

    /// Tiles that evaluate predicates.
    pub fn predicated_tiles(&self) -> usize {
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
        if self.explicit {
            r.push(format!(
                "atom {} requested explicitly: {atom_bits}-bit accesses, legal for both sides",
                self.atom
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

fn check_atom(
    atom: Atom,
    dtype: DType,
    src: &Operand,
    dst: &Operand,
    operation: Operation,
    cc: Option<(u32, u32)>,
) -> Result<()> {
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
        let p = Plan::new(
            DType::F16,
            Operand::packed(130, 130),
            Operand::packed(130, 130),
            None,
            None,
        )
        .unwrap();
        assert_eq!(p.atom, Atom::Universal32);
        assert!(
            p.reasons()
                .iter()
                .any(|r| r.contains("row pitch 260 B") && r.contains("128-bit not legal")),
            "{p}"
        );
        let p = Plan::new(
            DType::F16,
            Operand {
                rows: 16383,
                cols: 16383,
                ld: 16384,
                offset_bytes: 0,
            },
            Operand::packed(16383, 16383),
            None,
            None,
        )
        .unwrap();
        assert_eq!(p.atom, Atom::Universal); // packed 16383-wide destination: odd pitch, one f16 per call
        let dense = Operand {
            rows: 16383,
            cols: 16383,
            ld: 16384,
            offset_bytes: 0,
        };
        let p = Plan::new(DType::F16, dense, dense, None, None).unwrap();
        assert_eq!(p.atom, Atom::Universal128);
        assert!(p.predicated_last_row && p.predicated_last_col);
        assert_eq!(p.tiles, (256, 64));
        assert_eq!(p.predicated_tiles(), 256 + 64 - 1);
        let p = Plan::new(
            DType::F32,
            Operand::packed(64, 128),
            Operand::packed(64, 128),
            None,
            None,
        )
        .unwrap();
        assert_eq!(p.atom, Atom::Universal128);
        assert_eq!(p.predicated_tiles(), 0);
        let p = Plan::new(
            DType::F64,
            Operand::packed(3, 3),
            Operand::packed(3, 3),
            None,
            None,
        )
        .unwrap();
        assert_eq!(p.atom, Atom::Universal);
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
