//! Host introspection of a TiledCopy, computed by real CuTe on the CPU (no GPU needed).
//!
//! A [`TiledCopySpec`] names a copy atom, an element type, a row-major thread layout, a row-major
//! value layout and a tile. CuTe builds the `TiledCopy` (`make_tiled_copy(atom, thr, val)`) and
//! partitions an identity tensor of the tile with `get_slice(t).partition_S(..)`, exactly as a
//! kernel partitions its data, so the coordinates reported are the ones thread `t` copies.

use std::fmt;

use crate::atom::{Atom, THR_LAYOUTS, VAL_NS};
use crate::error::{Error, Result};
use crate::ffi::{self, SpecDesc, SpecInfo};
use crate::DType;

/// A TiledCopy to introspect: atom, dtype, thread layout, value layout and tile.
///
/// ```
/// # fn main() -> Result<(), cute_copy::Error> {
/// let spec = cute_copy::TiledCopySpec::new(
///     cute_copy::Atom::Universal, // UniversalCopy<T>, one element per instruction
///     cute_copy::DType::F32,
///     (32, 4),  // thread layout, row-major
///     (1, 1),   // value layout, row-major
///     (32, 32), // tile
/// )?;
/// assert_eq!(spec.num_threads(), 128);
/// assert_eq!(spec.partition_shape(), (1, 1, 8)); // (CPY, CPY_M, CPY_N)
/// assert_eq!(spec.thread_coords(0)?[..2], [(0, 0), (0, 4)]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct TiledCopySpec {
    atom: Atom,
    dtype: DType,
    thr: (usize, usize),
    val: (usize, usize),
    tile: (usize, usize),
    info: SpecInfo,
}

impl TiledCopySpec {
    /// Build and check a spec. Errors: a value layout that is not a whole number of the atom's
    /// elements, an atom narrower than the element, a tile that is not a multiple of the tiler
    /// (thread layout × value layout), or layouts outside the menu (`cpp/menu.def`).
    pub fn new(
        atom: Atom,
        dtype: DType,
        thr_layout: (usize, usize),
        val_layout: (usize, usize),
        tile: (usize, usize),
    ) -> Result<Self> {
        let atom_vals = atom.values_for(dtype)?;
        let (vm, vn) = val_layout;
        if vm != 1 {
            return Err(Error::Layout(format!(
                "value layout {val_layout:?}: value layouts are one row, (1, n), for row-major data"
            )));
        }
        if vn % atom_vals != 0 {
            return Err(Error::Layout(format!(
                "value layout {val_layout:?} is not a whole number of {atom:?} atoms ({atom_vals} {dtype} elements each)"
            )));
        }
        if !THR_LAYOUTS.contains(&thr_layout) {
            return Err(Error::Layout(format!(
                "thread layout {thr_layout:?} is not in the menu: {THR_LAYOUTS:?}"
            )));
        }
        if !VAL_NS.contains(&vn) {
            return Err(Error::Layout(format!(
                "value layout {val_layout:?} is not in the menu: (1, n) for n in {VAL_NS:?}"
            )));
        }
        let tiler = (thr_layout.0 * vm, thr_layout.1 * vn);
        let (tm, tn) = tile;
        if tm == 0 || tn == 0 || tm % tiler.0 != 0 || tn % tiler.1 != 0 {
            return Err(Error::Layout(format!(
                "tile {tile:?} is not a multiple of the tiler {tiler:?}"
            )));
        }
        let tile_u32 =
            |x: usize| u32::try_from(x).map_err(|_| Error::Overflow(format!("tile {tile:?}")));
        let desc = SpecDesc {
            thr_m: thr_layout.0 as u32,
            thr_n: thr_layout.1 as u32,
            val_m: vm as u32,
            val_n: vn as u32,
            atom_vals: atom_vals as u32,
            tile_m: tile_u32(tm)?,
            tile_n: tile_u32(tn)?,
        };
        let (info, _) = ffi::tiled_copy_partition(&desc, 0)?;
        Ok(TiledCopySpec {
            atom,
            dtype,
            thr: thr_layout,
            val: val_layout,
            tile,
            info,
        })
    }

    /// The spec of a compiled kernel: the thread layout, value layout and tile the menu's
    /// instantiation for (atom, dtype) uses.
    pub fn for_kernel(atom: Atom, dtype: DType) -> Result<Self> {
        let c = atom.kernel_config(dtype)?;
        TiledCopySpec::new(atom, dtype, c.thr_layout, c.val_layout, c.tile)
    }

    fn desc(&self) -> SpecDesc {
        SpecDesc {
            thr_m: self.thr.0 as u32,
            thr_n: self.thr.1 as u32,
            val_m: self.val.0 as u32,
            val_n: self.val.1 as u32,
            atom_vals: self.info.cpy,
            tile_m: self.tile.0 as u32,
            tile_n: self.tile.1 as u32,
        }
    }

    /// The copy atom.
    pub fn atom(&self) -> Atom {
        self.atom
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The row-major thread layout `(m, n)`.
    pub fn thr_layout(&self) -> (usize, usize) {
        self.thr
    }
    /// The row-major value layout `(m, n)`.
    pub fn val_layout(&self) -> (usize, usize) {
        self.val
    }
    /// The tile the partition covers, in elements.
    pub fn tile(&self) -> (usize, usize) {
        self.tile
    }

    /// Threads in the TiledCopy (= size of the thread layout).
    pub fn num_threads(&self) -> usize {
        self.info.num_threads as usize
    }

    /// The tiler: the block of the tile one step of all threads covers, thread × value layout.
    pub fn tiler(&self) -> (usize, usize) {
        (self.info.tiler_m as usize, self.info.tiler_n as usize)
    }

    /// A thread's partition shape `(CPY, CPY_M, CPY_N)`: CPY values per atom call, and
    /// CPY_M × CPY_N atom calls per thread to cover the tile.
    pub fn partition_shape(&self) -> (usize, usize, usize) {
        (
            self.info.cpy as usize,
            self.info.cpy_m as usize,
            self.info.cpy_n as usize,
        )
    }

    /// The tile coordinates `(row, col)` thread `t` copies, in CuTe's order (the partition's
    /// colexicographic order: values fastest, then CPY_M, then CPY_N).
    pub fn thread_coords(&self, t: usize) -> Result<Vec<(usize, usize)>> {
        Ok(self.thread_partition(t)?.1)
    }

    /// CuTe's layout of thread `t`'s partition of a row-major tile: element offsets in the tile.
    pub fn thread_layout_string(&self, t: usize) -> Result<String> {
        Ok(self.thread_partition(t)?.0.partition)
    }

    fn thread_partition(&self, t: usize) -> Result<(SpecInfo, Vec<(usize, usize)>)> {
        if t >= self.num_threads() {
            return Err(Error::ThreadOutOfRange {
                thread: t,
                threads: self.num_threads(),
            });
        }
        let (info, flat) = ffi::tiled_copy_partition(&self.desc(), t as u32)?;
        let coords = flat
            .chunks_exact(2)
            .map(|c| (c[0] as usize, c[1] as usize))
            .collect();
        Ok((info, coords))
    }

    /// The owning thread of every tile cell, `grid[row][col]`.
    pub fn owner_grid(&self) -> Result<Vec<Vec<usize>>> {
        let mut grid = vec![vec![usize::MAX; self.tile.1]; self.tile.0];
        for t in 0..self.num_threads() {
            for (r, c) in self.thread_coords(t)? {
                grid[r][c] = t;
            }
        }
        Ok(grid)
    }

    /// CuTe's own words for the layouts: thread layout, value layout, `TiledLayout_TV`.
    pub fn cute_layouts(&self) -> (&str, &str, &str) {
        (
            &self.info.thr_layout,
            &self.info.val_layout,
            &self.info.layout_tv,
        )
    }
}

impl fmt::Display for TiledCopySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (cpy, m, n) = self.partition_shape();
        writeln!(f, "TiledCopy")?;
        writeln!(
            f,
            "  Copy_Atom       {} on {} ({} values per call)",
            self.atom.cute_op(),
            self.dtype,
            cpy
        )?;
        writeln!(
            f,
            "  ThrLayout       {}  ({} threads, row-major)",
            self.info.thr_layout,
            self.num_threads()
        )?;
        writeln!(f, "  ValLayout       {}", self.info.val_layout)?;
        writeln!(
            f,
            "  Tiler_MN        ({},{})",
            self.info.tiler_m, self.info.tiler_n
        )?;
        writeln!(f, "  TiledLayout_TV  {}", self.info.layout_tv)?;
        write!(
            f,
            "  tile {:?} -> per thread (CPY, CPY_M, CPY_N) = ({cpy}, {m}, {n})",
            self.tile
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An independent host model of the same layout algebra: a row-major thread layout (TM, TN)
    /// raked with a row-major value layout (1, VN) gives thread t = (tm, tn) the columns
    /// tn*VN .. tn*VN+VN of row tm in every (TM, TN*VN) tiler step; CuTe orders the partition
    /// values fastest, then the tiler steps along M, then along N.
    fn model_coords(
        thr: (usize, usize),
        vn: usize,
        tile: (usize, usize),
        t: usize,
    ) -> Vec<(usize, usize)> {
        let (tm, tn) = (t / thr.1, t % thr.1);
        let (steps_m, steps_n) = (tile.0 / thr.0, tile.1 / (thr.1 * vn));
        let mut out = Vec::new();
        for sn in 0..steps_n {
            for sm in 0..steps_m {
                for v in 0..vn {
                    out.push((sm * thr.0 + tm, sn * thr.1 * vn + tn * vn + v));
                }
            }
        }
        out
    }

    #[test]
    fn every_compiled_kernel_is_introspectable() {
        // explain, svg and the thread listings build the spec of whatever kernel a plan runs:
        // every legal (atom, dtype) of the menu must be a thread layout and value layout that
        // host CuTe can partition (the realign kernel's (2, 32) once was not)
        for atom in Atom::all() {
            for dtype in DType::ALL {
                if atom.kernel_config(dtype).is_ok() {
                    let spec = TiledCopySpec::for_kernel(atom, dtype);
                    assert!(spec.is_ok(), "{atom:?} {dtype:?}: {spec:?}");
                }
            }
        }
    }

    #[test]
    fn tutorial_tiled_copy_matches_the_host_model() {
        let spec =
            TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32)).unwrap();
        assert_eq!(spec.num_threads(), 128);
        assert_eq!(spec.partition_shape(), (1, 1, 8));
        assert_eq!(spec.tiler(), (32, 4));
        for t in 0..128 {
            assert_eq!(
                spec.thread_coords(t).unwrap(),
                model_coords((32, 4), 1, (32, 32), t),
                "thread {t}"
            );
        }
    }

    #[test]
    fn every_menu_layout_matches_the_host_model() {
        for &thr in THR_LAYOUTS.iter() {
            for &vn in VAL_NS.iter() {
                let tile = (thr.0 * 2, thr.1 * vn * 3);
                let spec =
                    TiledCopySpec::new(Atom::Universal, DType::U8, thr, (1, vn), tile).unwrap();
                assert_eq!(spec.partition_shape(), (1, 2, 3 * vn));
                for t in [0, 1, thr.1, spec.num_threads() - 1] {
                    assert_eq!(
                        spec.thread_coords(t).unwrap(),
                        model_coords(thr, vn, tile, t),
                        "{thr:?} (1,{vn}) t{t}"
                    );
                }
            }
        }
    }

    #[test]
    fn vector_atoms_group_values_into_atom_calls() {
        let spec =
            TiledCopySpec::new(Atom::Universal128, DType::F16, (32, 4), (1, 8), (32, 64)).unwrap();
        assert_eq!(spec.partition_shape(), (8, 1, 2));
        assert_eq!(
            spec.thread_coords(5).unwrap(),
            model_coords((32, 4), 8, (32, 64), 5)
        );
        let spec =
            TiledCopySpec::new(Atom::Universal64, DType::F16, (8, 32), (1, 8), (8, 256)).unwrap();
        assert_eq!(spec.partition_shape(), (4, 1, 2));
    }

    #[test]
    fn owner_grid_covers_every_cell_once() {
        let spec =
            TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32)).unwrap();
        let grid = spec.owner_grid().unwrap();
        assert!(grid.iter().flatten().all(|&t| t < 128));
        assert_eq!(grid[0][..5], [0, 1, 2, 3, 0]);
        assert_eq!(grid[1][0], 4);
    }

    #[test]
    fn bad_specs_are_errors_not_panics() {
        let e = TiledCopySpec::new(Atom::Universal128, DType::F16, (32, 4), (1, 4), (32, 32));
        assert!(matches!(e, Err(Error::Layout(_))), "{e:?}");
        let e = TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (30, 32));
        assert!(matches!(e, Err(Error::Layout(_))), "{e:?}");
        let e = TiledCopySpec::new(Atom::Universal, DType::F32, (3, 5), (1, 1), (30, 30));
        assert!(matches!(e, Err(Error::Layout(_))), "{e:?}");
        let e = TiledCopySpec::new(Atom::Universal16, DType::F64, (32, 4), (1, 1), (32, 32));
        assert!(
            matches!(e, Err(Error::AtomNarrowerThanElement { .. })),
            "{e:?}"
        );
        let spec =
            TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32)).unwrap();
        assert!(matches!(
            spec.thread_coords(128),
            Err(Error::ThreadOutOfRange {
                thread: 128,
                threads: 128
            })
        ));
    }

    #[test]
    fn kernel_specs_are_introspectable() {
        let spec = TiledCopySpec::for_kernel(Atom::CpAsyncZfill128, DType::BF16).unwrap();
        assert_eq!(spec.num_threads(), 256);
        assert_eq!(spec.partition_shape(), (8, 8, 1));
    }
}
