//! The reason for every choice of a [`Plan`], a [`TensorPlan`] and a [`BatchPlan`], one sentence
//! each: what `Display` (and the CLI's `explain`) prints. Pure: the device's facts come from the
//! plan's [`DeviceInfo`](crate::DeviceInfo).

use std::fmt;

use super::{
    Operation, Plan, TensorPlan, TensorRoute, DIVMOD_MAX_DIVIDEND, RAGGED_ROW_MIN_BYTES,
    REALIGN_MIN_ROW_BYTES,
};
use crate::atom::Family;
use crate::batch::BatchPlan;
use crate::peer::{PeerEngine, PeerLink, PeerRoute, PeerShape};
use crate::peer::{PEER_MEMCPY_MAX_PITCH, PEER_MEMCPY_MIN_ROW_BYTES};
use crate::realign;
use crate::transpose::{
    Access, TileKind, TileStage, ITEM_MAX_BYTES, NARROW_MAX_BYTES, NARROW_REGISTER_ROWS,
};
use crate::Atom;

impl Plan {
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
    pub(super) fn l2_prefetch_reason(&self, l2_bytes: usize) -> String {
        let (src, _) = self.launched;
        let e = self.dtype.size_bytes();
        let span = crate::view::span(src.rows, src.cols, src.ld).unwrap_or(0) * e;
        let ahead = self.l2_prefetch_tasks(l2_bytes);
        if self.peer.is_some() {
            format!("no L2 prefetch: the copy ({:.1} MiB of source span) crosses the link between devices, which paces it, not this device's DRAM", mib(span))
        } else if l2_bytes == 0 {
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
    pub(super) fn lean_reason(&self, l2_bytes: usize) -> String {
        let e = self.dtype.size_bytes();
        let (_, dst) = self.launched;
        let bytes = dst.cols * e;
        let tile = realign::WARPS * self.config.tile.1 * e; // a block's bytes: kWarps warp tasks
        let shape = |threads: usize| {
            let per = tile / 16 / threads; // 16-byte vectors per thread
            format!(
                "blocks of {threads} threads, thread layout ({threads}):(1), value layout (1), {per} vector{} per thread a block-width apart",
                if per == 1 { "" } else { "s" }
            )
        };
        let which = if self.peer.is_some() {
            format!(
                "{}: the copy crosses the link between devices, which paces it, so the rule is read as for a copy that streams from DRAM",
                shape(256)
            )
        } else if l2_bytes == 0 {
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
        // 0: made for no device, or a copy between devices (the link paces it, not the L2)
        let l2 = match self.peer {
            Some(_) => 0,
            None => self.device.map_or(0, |d| d.l2_bytes),
        };
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
        let warps = realign::WARPS;
        if self.blocks() == 0 {
            r.push("empty copy: nothing to launch".into());
        } else if packed {
            let per = self.launched.0.rows.div_ceil(self.tiles.0);
            r.push(format!(
                "rows of {} B are short: {per} rows share a warp task, each copied by a group of {} lanes (the same TiledCopy with thread layout ({}):(1), shuffles within the group): {} tasks, {warps} warps per block ({} blocks)",
                self.launched.1.cols * e,
                32 / per,
                32 / per,
                self.tiles.0,
                self.blocks()
            ));
        } else {
            r.push(format!(
                "warp tasks: {} row{} x {} segment{} of up to {} B = {} tasks, {warps} warps per block ({} blocks), at most 64 registers per thread so that {} blocks ({} warps) fit on an SM; {}",
                self.tiles.0,
                if self.tiles.0 == 1 { "" } else { "s" },
                self.tiles.1,
                if self.tiles.1 == 1 { "" } else { "s" },
                self.config.tile.1 * e,
                self.tiles.0 * self.tiles.1,
                self.blocks(),
                32 / warps,
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
            match &self.peer {
                Some(r) if r.copy_engine() => "the copy engine".to_string(),
                _ => self.atom.to_string(),
            }
        )?;
        // A copy between devices: the route first; the kernel's reasons when a kernel runs.
        let route = self.peer.iter().flat_map(PeerRoute::reasons);
        let kernel = match &self.peer {
            Some(r) if r.copy_engine() => Vec::new(),
            _ => self.reasons(),
        };
        for r in route.chain(kernel) {
            writeln!(f, "  - {r}")?;
        }
        Ok(())
    }
}

impl TensorPlan {
    /// Why each choice was made, one sentence each.
    pub fn reasons(&self) -> Vec<String> {
        let (cs, cd) = &self.coalesced;
        if self.route == TensorRoute::Empty {
            return vec![format!(
                "the shape {:?} has a zero extent: the copy moves nothing, so nothing is planned (no coalescing, no tile) and nothing is launched; the strides need no checks",
                self.src.shape()
            )];
        }
        let mut v = vec![format!(
            "coalesced (size-1 modes dropped, modes sorted by destination stride, modes that step over each other on both sides merged): {} -> {}, rank {} -> {}",
            cs,
            cd,
            self.src.rank(),
            cs.rank()
        )];
        match &self.route {
            TensorRoute::Empty => {}
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
                    TileKind::Items => v.push(format!(
                        "mode 0 counts {} items of {} elements ({} bytes <= {ITEM_MAX_BYTES}), compact and back to back on both sides: {} items per tile, one {}-byte run on each side, loaded as a run, permuted in shared memory through a table of the item's {} source offsets (built once per block from the modes' coordinates) and stored as a run; {} tiles",
                        cs.shape()[0], t.tile.1, t.tile.1 * e, t.tile.0, t.tile.0 * t.tile.1 * e, t.tile.1, t.tiles.2
                    )),
                }
                if t.kind == TileKind::Rows && t.stage == TileStage::Registers {
                    v.push(format!(
                        "both sides allow 16-byte vectors: registers are the stage; a tile of {} rows x {} elements ({} vectors a row) is one flat list of vectors, thread t moving every {}th (row, vector) = divmod(i, {}) by cutlass::FastDivmod: no idle lane whatever the row length",
                        t.tile.1, t.tile.0, t.tile.0 * e / 16, t.config.threads, t.tile.0 * e / 16
                    ));
                } else if t.stage == TileStage::Registers {
                    let r = t.narrow_rows().unwrap_or(0);
                    let sides = if t.load == Access::Realigned {
                        "the run allows 16-byte stores and the rows realigned 16-byte loads"
                    } else if t.store == Access::Realigned {
                        "the run allows 16-byte loads and the rows realigned 16-byte stores"
                    } else {
                        "both sides allow 16-byte accesses"
                    };
                    v.push(format!(
                        "the short mode has {r} elements (2..={NARROW_REGISTER_ROWS}) and {sides}: registers are the stage, each thread moving {r} x {} elements as two CuTe fragments ({r},{}):({},1) and ({r},{}):(1,{r}) over the same coordinates{} ({r} 16-byte loads, {r} 16-byte stores, no block barrier)",
                        16 / e, 16 / e, 16 / e, 16 / e,
                        if e <= 2 { ", moved between them by byte permutes (prmt) with compile-time selectors" } else { "" }
                    ));
                    let group = t.group_threads();
                    if group < t.config.threads {
                        let long = if t.kind == TileKind::Narrow {
                            t.tile.0
                        } else {
                            t.tile.1
                        };
                        v.push(format!(
                            "a tile has {} column blocks: {group} threads move one, so a block of {} moves {} tiles at once and no warp idles",
                            long * e / 16,
                            t.config.threads,
                            t.config.threads / group
                        ));
                    }
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
                if let Some((b, m, s)) = t.swizzle {
                    let (cols, rows) = t.stage_extent();
                    v.push(format!(
                        "shared memory: composition(Swizzle<{b},{m},{s}>, ({},{}):({},1)): 16-byte chunks XOR-ed with the row group, so the transposed 32-bit reads of a warp (8 row groups x 4 word columns) hit 32 different banks",
                        rows, cols, cols
                    ));
                }
                for (side, access) in [("loads", t.load), ("stores", t.store)] {
                    v.push(access_reason(side, access, t.kind, t.stage, e));
                }
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

impl fmt::Display for BatchPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "plan: {} of {} {} ({} item{}) on {} in one launch",
            self.kind,
            self.copies,
            if self.copies == 1 { "copy" } else { "copies" },
            self.items,
            if self.items == 1 { "" } else { "s" },
            Atom::Realign128
        )?;
        for r in self.peer.iter().flat_map(PeerRoute::reasons) {
            writeln!(f, "  - {r}")?;
        }
        writeln!(
            f,
            "  - one kernel for all of them: the descriptors (shape, pitches, offsets, indices) {}; a warp task is (item, row, 2 KiB segment), {} tasks in all ({} blocks of {} warps); a batch finds each task's copy from a block table (for every 8 tasks, the last copy starting at or before them) over the prefix sums of the task counts",
            if self.kind == "batch" { "live in device memory, uploaded once" } else { "travel in the launch's parameters" },
            self.tasks,
            self.blocks(),
            realign::WARPS
        )?;
        writeln!(
            f,
            "  - every copy runs 16-byte-aligned loads and stores on its row bodies: {} of {} realign a side whose rows are not 16-byte aligned (funnel shifts in registers), the rest load and store aligned vectors directly; heads and tails go element by element",
            self.realigned, self.copies
        )?;
        if self.coalesced > 0 {
            writeln!(
                f,
                "  - {} cop{} contiguous on both sides, coalesced into one run",
                self.coalesced,
                if self.coalesced == 1 {
                    "y is"
                } else {
                    "ies are"
                }
            )?;
        }
        if self.empty > 0 {
            writeln!(
                f,
                "  - {} empty cop{} (no tasks)",
                self.empty,
                if self.empty == 1 { "y" } else { "ies" }
            )?;
        }
        if self.kind != "batch" {
            writeln!(f, "  - indices read on the device: negative = skip; past the end = skip and count in the IndexStatus (IndexStatus::check reports it)")?;
        }
        write!(f, "  - bytes read + written: {}", self.bytes)
    }
}

/// What a realigned load of a square tile (kinds transpose and rows) reads, and why its tile is
/// narrower than the stage (src/transpose.rs), whichever way the vectors reach the stage.
const SQUARE_ROW: &str = "the 16 aligned vectors under each tile row (256 bytes of the grid)";
const SQUARE_WIDTH: &str = "they hold 240 bytes of the row at any misalignment, so the tile is one vector narrower than the stage";

/// Why one side of a transpose-family tile moves what it moves.
fn access_reason(side: &str, access: Access, kind: TileKind, stage: TileStage, e: usize) -> String {
    match access {
        Access::Vector => format!("{side}: 16-byte vectors (unit stride along the access, the offset and the other strides multiples of 16 bytes)"),
        Access::Realigned if stage == TileStage::Registers && side == "loads" => format!(
            "{side}: realigned 16-byte vectors (the offset or a stride is not a multiple of 16 bytes): each lane loads the aligned vector under its column block of every row, takes the next one from its neighbour (shfl; lane 31 loads it), and funnel-shifts the pair by the row's misalignment; a tile whose aligned vectors reach outside the source span (the span's first or last) goes element by element"
        ),
        Access::Realigned if stage == TileStage::Registers => format!(
            "{side}: realigned 16-byte vectors (the offset or a stride is not a multiple of 16 bytes): a warp's 32 lanes take 32 column blocks, the last also the next warp's first; each lane but the last stores the aligned vector that starts in its block of a row and ends in its neighbour's (shfl, funnel-shifted by the row's misalignment), so each aligned vector is stored whole once; only a row's first and last partial vectors go element by element"
        ),
        Access::Realigned => format!(
            "{side}: realigned 16-byte vectors (the offset or a stride is not a multiple of 16 bytes): {}; only a row's first and last partial vectors go element by element",
            match (side, kind) {
                ("loads", TileKind::Transpose) if e >= 4 => format!("{SQUARE_ROW} go to the swizzled stage as the grid holds them, by cp.async (CuTe's SM80_CP_ASYNC_CACHEGLOBAL atom: no registers on the way), and the transposed read takes element c of row r from column c + (row r's misalignment) / width, whole words; {SQUARE_WIDTH}"),
                ("loads", TileKind::Transpose | TileKind::Rows) => format!("{SQUARE_ROW} are loaded whole, passed to the neighbouring lane (shfl) and funnel-shifted into the swizzled tile; {SQUARE_WIDTH}"),
                ("loads", _) => "each row or run is staged as the 16-byte grid holds it, its elements read back at their byte offset".into(),
                (_, TileKind::Transpose) if e < 4 => "each unit transposes the words of its own rows in registers (prmt), and a destination column's aligned vector is the tail of the row group before's (the neighbouring lane's, shfl) and the head of its own, funnel-shifted; the rows before a column's first aligned vector and after its last go element by element, spread over the 8 lanes of each run of 8 row groups".into(),
                (_, TileKind::Transpose) => "each destination column's aligned vectors are read from the tile at its own row offset".into(),
                (_, TileKind::Rows) => "each destination row's aligned vectors are funnel-shifted from two neighbouring tile chunks".into(),
                _ => "the destination's aligned vectors are gathered from the stage, starting at its first 16-byte boundary".into(),
            }
        ),
        Access::Element => format!("{side}: element by element (no unit stride along the mode the tile accesses on this side)"),
    }
}

impl PeerRoute {
    /// Why a copy between devices crosses as it does, one sentence each: what `Display` of its
    /// plan prints first.
    pub fn reasons(&self) -> Vec<String> {
        let p = &self.pair;
        let other = p.other();
        let mut r = vec![format!(
            "between devices: the source on device {}, the destination on device {}, the stream on device {}: the copy is ordered on the stream, and the other device's buffer as cudarc orders a buffer's users: the copy waits for its pending work, its later users wait for the copy (its events, recorded on a stream of its device set aside for this; with cudarc's event tracking off, its own stream, which waits for the copy)",
            p.src, p.dst, p.stream
        )];
        r.push(match p.link {
            PeerLink::Peer => format!(
                "device {} has peer access to device {other} (cuDeviceCanAccessPeer, enabled once for the pair by cuCtxEnablePeerAccess): its kernels and copy engines reach device {other}'s memory at its plain address (unified addressing), over NVLink where the pair has it",
                p.stream
            ),
            PeerLink::NoPeer => format!(
                "device {} has no peer access to device {other}: only the copy engine moves data between them, the driver staging it (through host memory where no direct path exists)",
                p.stream
            ),
            PeerLink::SameDevice => format!("one device ({})", p.src),
        });
        r.push(match (self.engine, self.shape) {
            (PeerEngine::CopyEngine, PeerShape::Run { bytes }) => format!(
                "one contiguous run of {bytes} B on both sides: the copy engine (cuMemcpyPeerAsync), which moves it at the link's rate and leaves every SM to other work"
            ),
            (
                PeerEngine::CopyEngine2D,
                PeerShape::Pitched {
                    rows,
                    row_bytes,
                    src_pitch,
                    dst_pitch,
                },
            ) => {
                let why = if p.link == PeerLink::Peer {
                    format!("rows of at least {PEER_MEMCPY_MIN_ROW_BYTES} B")
                } else {
                    "no peer access for a kernel".to_string()
                };
                format!(
                    "{rows} rows of {row_bytes} B at pitches {src_pitch} / {dst_pitch} B ({why}): the copy engine (cuMemcpy3DPeerAsync, depth 1), one call for all the rows, no SM used"
                )
            }
            (_, shape) => {
                let what = match shape {
                    PeerShape::Kernel(what) => what.to_string(),
                    PeerShape::Pitched {
                        rows,
                        src_pitch,
                        dst_pitch,
                        ..
                    } if src_pitch.max(dst_pitch) > PEER_MEMCPY_MAX_PITCH => format!(
                        "{rows} rows at a pitch past the copy engine's {PEER_MEMCPY_MAX_PITCH} B"
                    ),
                    PeerShape::Pitched {
                        rows, row_bytes, ..
                    } => format!(
                        "{rows} rows of {row_bytes} B, shorter than {PEER_MEMCPY_MIN_ROW_BYTES} B (the copy engine would move a small piece per row)"
                    ),
                    PeerShape::Run { bytes } => format!("a run of {bytes} B"),
                };
                let how = if p.pulls() {
                    format!(
                        "pulls: it reads the source on device {} over the link and writes locally",
                        p.src
                    )
                } else {
                    format!(
                        "pushes: it reads locally and writes the destination on device {} over the link",
                        p.dst
                    )
                };
                format!(
                    "{what}: the plan's own kernel runs on device {} (the stream's) and {how}; which side should run it is for the peer_* benches to say (docs/between-gpus.md)",
                    p.stream
                )
            }
        });
        r
    }
}
