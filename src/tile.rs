//! The tile engine's Rust half (its kernels are `cpp/kernels/universal.cu` and
//! `cpp/kernels/cp_async.cu`, configured by `EngineConfig` in `cpp/kernels/family.cuh`): the
//! compiled TiledCopy of every (atom, width) pair, as plain values the planner reads without a
//! bridge call. `configs_match_the_kernels` checks them against the compiled kernels where the
//! crate is built with CUDA.

use crate::atom::{Atom, Family, KernelConfig};
use crate::DType;

/// Thread layout `(8, 32):(32, 1)`: 256 threads, a warp spans one row of the tiler.
const THR: (usize, usize) = (8, 32);

/// Tile rows: 8 atom calls per thread in flight (`CPY_M = 8`).
const TILE_M: usize = 64;

/// The compiled configuration of `atom` for `dtype` in its family (the atom already checked to
/// be at least one element wide): value layout `(1, A)` of A elements per atom call, tile
/// `(64, 32 * A)`; the cp.async family stages the whole tile in shared memory.
pub(crate) fn config(atom: Atom, dtype: DType) -> KernelConfig {
    let w = dtype.size_bytes();
    match atom.family() {
        Family::Universal | Family::CpAsync => {
            let vals = atom.bytes_for(dtype) / w;
            let tile = (TILE_M, THR.1 * vals);
            KernelConfig {
                threads: THR.0 * THR.1,
                thr_layout: THR,
                val_layout: (1, vals),
                tile,
                smem_bytes: if atom.family() == Family::CpAsync {
                    tile.0 * tile.1 * w
                } else {
                    0
                },
            }
        }
        Family::Realign => crate::realign::config(dtype),
        Family::Transpose => crate::transpose::config(dtype),
        Family::Convert => crate::convert::config(dtype),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compiled kernels carry the same numbers as template parameters; where the crate is
    /// built with CUDA, every menu instantiation must match (host calls, no GPU needed).
    #[test]
    fn configs_match_the_kernels() {
        if crate::ffi::kernel_config(0, 1).is_err() {
            eprintln!("skipped: built without CUDA kernels");
            return;
        }
        for atom in Atom::all() {
            for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
                if atom.values_for(dtype).is_err() {
                    continue;
                }
                let c = crate::ffi::kernel_config(atom as u32, dtype.size_bytes() as u32).unwrap();
                let bridged = KernelConfig {
                    threads: c.threads as usize,
                    thr_layout: (c.thr_m as usize, c.thr_n as usize),
                    val_layout: (c.val_m as usize, c.val_n as usize),
                    tile: (c.tile_m as usize, c.tile_n as usize),
                    smem_bytes: c.smem_bytes as usize,
                };
                assert_eq!(config(atom, dtype), bridged, "{atom:?} {dtype}");
            }
        }
    }
}
