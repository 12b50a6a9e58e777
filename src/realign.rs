//! The realign family's Rust half (its kernel is `cpp/kernels/realign.cu`): the warp-task
//! decomposition, the row descriptor builder, and the launch decisions (lean run kernel, L2
//! prefetch) that the planner prints and the kernel receives with each launch. Everything here is
//! plain arithmetic on a [`RowsDesc`] and the device's L2 size: no bridge call.
//!
//! [`VECS_PER_LANE`], [`WARPS`] and [`TABLE_TASKS`] are the kernel's compiled configuration
//! (`kVecsPerLane`, `kWarps`, `kTableTasks` in realign.cu); `rules_match_the_kernels` holds them
//! to the compiled kernel where the crate is built with CUDA. Why these values:
//! docs/realign-tuning.md.

use crate::atom::KernelConfig;
use crate::ffi::RowsDesc;
use crate::DType;

/// 16-byte vectors each lane keeps in flight in a whole-warp task (`kVecsPerLane`).
pub(crate) const VECS_PER_LANE: i64 = 4;

/// 16-byte vectors per whole-warp task: 2 KiB (`kWarpVecs`).
pub(crate) const WARP_VECS: i64 = 32 * VECS_PER_LANE;

/// Warps per block of the realign kernel (each takes one (row, segment) task at a time): blocks
/// of 2 warps, 16 resident per SM (`kWarps`).
pub(crate) const WARPS: usize = 2;

/// Warp tasks per entry of a batch's block table (`kTableTasks`).
pub(crate) const TABLE_TASKS: i64 = 8;

/// The L2 prefetch distance in warp tasks (2 KiB each, so 2 MiB ahead) of copies whose source
/// span is at least the device's L2 (docs/realign-tuning.md).
pub(crate) const PREFETCH_TASKS: i64 = 1024;

/// Warp tasks a destination row of `row_bytes` bytes splits into; negative, `-R`, when `R` short
/// rows share one warp task (groups of 32 / R lanes): four groups of 8 lanes up to 512 bytes, two
/// of 16 up to 1 KiB, else one task per 2 KiB segment (`realign_segments`).
pub(crate) fn segments(row_bytes: i64) -> i64 {
    if row_bytes <= 8 * VECS_PER_LANE * 16 {
        -4
    } else if row_bytes <= 16 * VECS_PER_LANE * 16 {
        -2
    } else {
        ((row_bytes / 16 + WARP_VECS - 1) / WARP_VECS).max(1)
    }
}

/// Warp tasks of `rows` rows (items x rows per item) at `segs` from [`segments`]
/// (`realign_tasks`).
pub(crate) fn tasks(rows: i64, segs: i64) -> i64 {
    if segs > 0 {
        rows * segs
    } else {
        (rows + (-segs) - 1) / (-segs)
    }
}

/// Warp tasks of one descriptor.
pub(crate) fn tasks_of(d: &RowsDesc) -> i64 {
    tasks(d.items * d.dst_rows, d.segs)
}

/// Blocks a launch of `tasks` warp tasks runs: one per [`WARPS`] tasks.
pub(crate) fn blocks(tasks: usize) -> usize {
    tasks.div_ceil(WARPS)
}

/// The kernel's configuration as the engine's [`KernelConfig`]: [`WARPS`] warps, each a (1, 32)
/// thread row; one 16-byte vector per atom call; a block's warps take [`WARPS`] consecutive
/// (row, segment) tasks of [`WARP_VECS`] vectors each (`RealignConfig`).
pub(crate) fn config(dtype: DType) -> KernelConfig {
    let w = dtype.size_bytes();
    KernelConfig {
        threads: 32 * WARPS,
        thr_layout: (WARPS, 32),
        val_layout: (1, 16 / w),
        tile: (WARPS, WARP_VECS as usize * 16 / w),
        smem_bytes: 0,
    }
}

/// The threads per block of the lean run kernel for `desc` launched alone (no batch, no status),
/// its addresses (or any with their 16-byte phase) in `src` / `dst`, on a device with `l2_bytes`
/// of L2; 0 for the general kernel. One contiguous range on both sides with the same 16-byte
/// phase is lean, in blocks of 128 threads x 2 vectors when source and destination fit in the L2
/// (part of them stays there between back-to-back copies), else (and for an unknown L2, 0) 256 x 1
/// (the copy streams from DRAM). The kernel checks only that the descriptor is lean.
pub(crate) fn lean_threads(desc: &RowsDesc, l2_bytes: usize) -> usize {
    let lean = desc.items == 1
        && desc.src_rows == 1
        && desc.dst_rows == 1
        && desc.src_row_bytes == desc.dst_row_bytes
        && desc.src_index == 0
        && desc.dst_index == 0
        && (desc.src ^ desc.dst) & 15 == 0;
    if !lean {
        0
    } else if l2_bytes > 0 && 2 * desc.dst_row_bytes as u64 <= l2_bytes as u64 {
        128
    } else {
        256
    }
}

/// The L2 prefetch distance (warp tasks ahead) of `desc` launched alone, with its segments
/// planned, on a device with `l2_bytes` of L2: [`PREFETCH_TASKS`] when the source span is at
/// least the L2 (the copy streams from DRAM), 0 otherwise, for short rows sharing a task, and
/// for index-driven or multi-item descriptors.
pub(crate) fn prefetch_tasks(desc: &RowsDesc, l2_bytes: usize) -> usize {
    if l2_bytes == 0
        || desc.items != 1
        || desc.src_index != 0
        || desc.segs <= 0
        || desc.src_pitch < 0
        || desc.src_rows < 1
    {
        return 0;
    }
    let span = (desc.src_rows - 1) * desc.src_pitch + desc.src_row_bytes;
    if span as u64 >= l2_bytes as u64 {
        PREFETCH_TASKS as usize
    } else {
        0
    }
}

/// The planner's launch decisions for one descriptor `one` launched by value (with an index
/// status buffer or not) on a device with `l2_bytes` of L2: (lean run kernel threads, L2 prefetch
/// distance), as `BatchLaunch` and `CopyDesc` carry them to the kernel. A batch (descriptors in
/// device memory) runs with (0, 0).
pub(crate) fn by_value(one: &RowsDesc, with_status: bool, l2_bytes: usize) -> (u32, i64) {
    let lean = if with_status {
        0
    } else {
        lean_threads(one, l2_bytes)
    };
    (lean as u32, prefetch_tasks(one, l2_bytes) as i64)
}

/// Where the rows of one side of a copy lie, in bytes: the address of row 0 (or an offset from a
/// base), rows, bytes per row, pitch. One side of a [`RowsDesc`], and what batches check overlap
/// on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rows {
    pub addr: u64,
    pub rows: u64,
    pub row_bytes: u64,
    pub pitch: u64,
}

impl Rows {
    /// One past the last byte of the last row (the address for no bytes).
    pub(crate) fn end(&self) -> u64 {
        if self.rows == 0 || self.row_bytes == 0 {
            self.addr
        } else {
            self.addr + (self.rows - 1) * self.pitch + self.row_bytes
        }
    }

    /// Whether two row sets share a byte. Exact when the pitches are equal (rows of one strided
    /// matrix, e.g. column strips); otherwise conservative: overlapping address spans count.
    pub(crate) fn overlaps(&self, other: &Rows) -> bool {
        if self.end() <= other.addr || other.end() <= self.addr {
            return false;
        }
        if self.pitch != other.pitch || self.pitch == 0 {
            return true;
        }
        let (a, b) = if self.addr <= other.addr {
            (self, other)
        } else {
            (other, self)
        };
        let p = a.pitch;
        let d = b.addr - a.addr;
        let (q, r) = (d / p, d % p);
        // Row i of a meets row j of b only for j = i - q (offset r) or j = i - q - 1 (r - p).
        let rows_meet = |shift: u64| {
            let lo = shift;
            let hi = (shift + b.rows).min(a.rows);
            lo < hi
        };
        (r < a.row_bytes && rows_meet(q)) || (r + b.row_bytes > p && rows_meet(q + 1))
    }
}

/// The row descriptor of one plain copy (or pad) from `src` to `dst`: one item, no indices, its
/// segments planned. Batches, tensor rows and index-driven copies start from it and set their
/// items, strides and indices.
pub(crate) fn rows_desc(src: Rows, dst: Rows) -> RowsDesc {
    RowsDesc {
        src: src.addr,
        dst: dst.addr,
        src_pitch: src.pitch as i64,
        dst_pitch: dst.pitch as i64,
        src_row_bytes: src.row_bytes as i64,
        dst_row_bytes: dst.row_bytes as i64,
        src_rows: src.rows as i64,
        dst_rows: dst.rows as i64,
        items: 1,
        index_bytes: 4,
        index_stride: 1,
        segs: segments(dst.row_bytes as i64),
        ..RowsDesc::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_rows_share_a_warp_task_and_long_ones_split_into_2_kib_segments() {
        assert_eq!(segments(0), -4);
        assert_eq!(segments(512), -4);
        assert_eq!(segments(513), -2);
        assert_eq!(segments(1024), -2);
        assert_eq!(segments(1025), 1);
        assert_eq!(segments(2048), 1);
        assert_eq!(segments(2063), 1);
        assert_eq!(segments(2064), 2);
        assert_eq!(tasks(10, -4), 3);
        assert_eq!(tasks(10, -2), 5);
        assert_eq!(tasks(10, 3), 30);
    }

    #[test]
    fn lean_runs_and_l2_prefetch_follow_the_devices_l2() {
        let run = |src: u64, dst: u64, bytes: u64| {
            let side = |addr| Rows {
                addr,
                pitch: bytes,
                row_bytes: bytes,
                rows: 1,
            };
            rows_desc(side(src), side(dst))
        };
        let l2 = 60 << 20;
        assert_eq!(lean_threads(&run(0, 0, 1 << 20), l2), 128);
        assert_eq!(lean_threads(&run(3, 19, 1 << 20), l2), 128); // the same 16-byte phase
        assert_eq!(lean_threads(&run(3, 4, 1 << 20), l2), 0);
        assert_eq!(lean_threads(&run(0, 0, 40 << 20), l2), 256); // 80 MiB together
        assert_eq!(lean_threads(&run(0, 0, 1 << 20), 0), 256); // an unknown L2
        assert_eq!(by_value(&run(0, 0, 1 << 20), true, l2).0, 0); // with a status buffer
        let rows = |n: u64, pitch: u64| {
            let side = |p| Rows {
                addr: 0,
                pitch: p,
                row_bytes: 4096,
                rows: n,
            };
            rows_desc(side(pitch), side(4096))
        };
        assert_eq!(prefetch_tasks(&rows(4096, 8200), l2), 0); // a 32 MiB span
        assert_eq!(
            prefetch_tasks(&rows(20000, 4100), l2),
            PREFETCH_TASKS as usize
        );
        assert_eq!(prefetch_tasks(&rows(20000, 4100), 0), 0);
        let mut indexed = rows(20000, 4100);
        indexed.src_index = 256;
        assert_eq!(prefetch_tasks(&indexed, l2), 0);
    }

    /// The segment rule and the block shape are the kernel's compiled configuration, mirrored
    /// here; where the crate is built with CUDA, both must agree (host calls, no GPU needed).
    #[test]
    fn rules_match_the_kernels() {
        let Ok(s) = crate::ffi::rows_segments(4096) else {
            eprintln!("skipped: built without CUDA kernels");
            return;
        };
        assert_eq!(s, segments(4096));
        for b in [
            0,
            1,
            16,
            511,
            512,
            513,
            1024,
            1025,
            2047,
            2048,
            2049,
            4111,
            1 << 20,
        ] {
            assert_eq!(
                crate::ffi::rows_segments(b).unwrap(),
                segments(b),
                "{b} bytes"
            );
        }
        let c = crate::ffi::kernel_config(crate::Atom::Realign128 as u32, 1).unwrap();
        assert_eq!(c.threads as usize, 32 * WARPS);
        assert_eq!(c.tile_n as i64, WARP_VECS * 16);
    }
}
