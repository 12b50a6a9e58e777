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

use super::{Operand, Plan};
use crate::error::{Error, Result};
use crate::layout::{coalesce_layouts, Layout};
use crate::transpose::{transpose_tile, TileKind, TileStage, TransposeTile};
use crate::{Atom, DType, DeviceInfo};

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
    /// A zero extent: there is nothing to copy and nothing is launched.
    Empty,
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
    /// For a copy between two devices, how it crosses (see [`Plan::peer`]); `None` within one
    /// device.
    pub peer: Option<crate::PeerRoute>,
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

impl TensorPlan {
    /// Plan a copy from `src` to `dst` (equal shapes) for `dtype`, the views' coordinate 0 at
    /// `offset_bytes` (modulo 256) from 256-byte-aligned addresses, for no device in particular.
    /// Pure: nothing is launched, no device is asked.
    pub fn new(
        dtype: DType,
        src: Layout,
        dst: Layout,
        offset_bytes: (usize, usize),
    ) -> Result<TensorPlan> {
        TensorPlan::build(dtype, src, dst, offset_bytes, None)
    }

    /// Plan as [`TensorPlan::new`] for the device `device` describes (the 2D and row routes'
    /// plans record its facts, which their `explain` text reads). Pure, as `new`.
    pub fn for_device(
        dtype: DType,
        src: Layout,
        dst: Layout,
        offset_bytes: (usize, usize),
        device: &DeviceInfo,
    ) -> Result<TensorPlan> {
        TensorPlan::build(dtype, src, dst, offset_bytes, Some(*device))
    }

    fn build(
        dtype: DType,
        src: Layout,
        dst: Layout,
        offset_bytes: (usize, usize),
        device: Option<DeviceInfo>,
    ) -> Result<TensorPlan> {
        let offset_bytes = (offset_bytes.0 % 256, offset_bytes.1 % 256);
        if src.shape() == dst.shape() && src.size() == 0 {
            // Nothing to move, whatever the strides: no coalescing, no tile, no launch (and no
            // division by a zero extent on the way).
            return Ok(TensorPlan {
                dtype,
                src,
                dst,
                coalesced: (src, dst),
                offset_bytes,
                route: TensorRoute::Empty,
                peer: None,
            });
        }
        let (cs, cd) = coalesce_layouts(&src, &dst)?;
        if !dst.is_injective() {
            return Err(Error::DestinationNotInjective(dst.to_string()));
        }
        let r = cs.rank();
        let last = r - 1;
        let unit_both = cs.stride()[last] == 1 && cd.stride()[last] == 1;
        let matrix = (
            matrix_operand(&cs, offset_bytes.0),
            matrix_operand(&cd, offset_bytes.1),
        );
        let route = if let (true, true, (Some(s), Some(d))) = (unit_both, r <= 2, matrix) {
            TensorRoute::Matrix(Plan::build(dtype, s, d, None, None, device)?)
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
            let plan = Plan::build(
                dtype,
                item(&cs, offset_bytes.0),
                item(&cd, offset_bytes.1),
                Some(Atom::Realign128),
                None,
                device,
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
            peer: None,
        })
    }

    /// The atom that runs the copy (an empty copy runs none and reports the one-element
    /// `Universal`).
    pub fn atom(&self) -> Atom {
        match &self.route {
            TensorRoute::Matrix(p) | TensorRoute::Rows { plan: p, .. } => p.atom,
            TensorRoute::Transpose(_) => Atom::Transpose128,
            TensorRoute::Empty => Atom::Universal,
        }
    }

    /// Bytes read plus bytes written.
    pub fn bytes_moved(&self) -> usize {
        2 * self.src.size() * self.dtype.size_bytes()
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
        let engine = self.peer.filter(crate::PeerRoute::copy_engine);
        match &self.route {
            _ if engine.is_some() => writeln!(f, "  route: the copy engine between devices")?,
            TensorRoute::Empty => writeln!(f, "  route: none, a zero extent: nothing is launched")?,
            TensorRoute::Matrix(p) => writeln!(f, "  route: 2D engine, {:?}", p.atom)?,
            TensorRoute::Rows { plan, items, .. } => writeln!(
                f,
                "  route: realign rows, {:?}, {items} items of {} x {}",
                plan.atom, plan.src.rows, plan.src.cols
            )?,
            TensorRoute::Transpose(t) => {
                writeln!(
                    f,
                    "  route: transpose family, Transpose128, {:?} tile in {:?}: {} x {} (rows along mode {} x elements along mode {}), {} tiles, {} threads, loads {:?}, stores {:?}",
                    t.kind, t.stage, t.tile.1, t.tile.0, t.mode_b, t.mode_a, t.tiles.2, t.config.threads, t.load, t.store
                )?;
                if t.kind == TileKind::Items {
                    writeln!(
                        f,
                        "  items: {} per tile, {} elements each, a permutation table in shared memory",
                        t.tile.0, t.tile.1
                    )?;
                } else if t.kind == TileKind::Rows && t.stage == TileStage::Registers {
                    writeln!(
                        f,
                        "  per thread: every {}th 16-byte vector of the tile's rows, registers as the stage",
                        t.config.threads
                    )?;
                } else if t.stage == TileStage::Registers {
                    let r = t.narrow_rows().unwrap_or(0);
                    let v = 16 / self.dtype.size_bytes();
                    writeln!(
                        f,
                        "  per thread: ({r},{v}) column blocks, register fragments ({r},{v}):({v},1) <-> ({r},{v}):(1,{r}), 16-byte accesses; {} threads a tile, {} tiles a block at once",
                        t.group_threads(),
                        t.config.threads / t.group_threads()
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
        // A copy between devices: the route first; on the copy engine, only the coalescing.
        let own = self.reasons();
        let own = if engine.is_some() {
            &own[..1]
        } else {
            &own[..]
        };
        for r in self.peer.iter().flat_map(crate::PeerRoute::reasons) {
            writeln!(f, "  - {r}")?;
        }
        for r in own {
            writeln!(f, "  - {r}")?;
        }
        Ok(())
    }
}
