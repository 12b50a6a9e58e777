//! Copies between two GPUs of one host: the facts about a pair of devices ([`DevicePair`], the
//! driver asked once per ordered pair), the rule that picks the engine ([`PeerRoute::choose`]),
//! and the cross-device ordering of a launch on a stream of either device.
//!
//! No kernel of its own: with unified addressing and peer access enabled, the existing families
//! read and write the other device's memory through its plain address. The rule, in order:
//! 1. **Same device** (source and destination in one context): no route; the plan runs as it
//!    always has, with the same text and the same speed.
//! 2. **The stream's device** must be the source's (the copy *pushes*) or the destination's (it
//!    *pulls*); a third device is [`Error::StreamOnThirdDevice`].
//! 3. **One contiguous run** on both sides: the copy engine, `cuMemcpyPeerAsync`.
//! 4. **Rows at a pitch** (a 2D copy, not a pad) of at least [`PEER_MEMCPY_MIN_ROW_BYTES`] per
//!    row, pitches below [`PEER_MEMCPY_MAX_PITCH`]: the copy engine, `cuMemcpy3DPeerAsync` of
//!    depth 1. Shorter rows go to the kernel where peer access exists (the copy engine would
//!    move one small piece per row), else to the copy engine still.
//! 5. **Anything else** (a pad, a transpose or permute, matrices at item strides, a block table,
//!    an atom the caller named): the plan's own kernel on the stream's device, reading the source
//!    over the link (pull) or writing the destination over it (push). Without peer access:
//!    [`Error::NoPeerAccess`], nothing written.
//!
//! The reasons are in `src/plan/explain.rs` ([`PeerRoute::reasons`]); the launches go through
//! the one launch path (`src/launch.rs`), the driver calls through `src/ffi.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaStream};

use crate::error::{Error, Result};
use crate::ffi;
use crate::plan::{coalesce, Operation, Plan, TensorPlan, TensorRoute};

/// Rows at a pitch at least this long (bytes) go to the copy engine between devices; shorter
/// rows to the kernel where peer access exists. A first line, to be measured on two GPUs (the
/// `peer_*` benches, docs/between-gpus.md): the copy engine moves a pitched copy as a piece per
/// row, and pieces much shorter than this leave the link idle between them.
pub const PEER_MEMCPY_MIN_ROW_BYTES: usize = 512;

/// The widest row pitch (bytes) the copy engine's pitched copies take (`CU_DEVICE_ATTRIBUTE_MAX_PITCH`
/// on current GPUs); wider pitches go to the kernel.
pub const PEER_MEMCPY_MAX_PITCH: usize = i32::MAX as usize;

/// How the stream's device reaches the other device of a copy: the fact the rule reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerLink {
    /// Source and destination on one device: no route between devices.
    SameDevice,
    /// The stream's device maps the other device's memory (`cuDeviceCanAccessPeer`, then
    /// `cuCtxEnablePeerAccess` once for the ordered pair): its kernels read and write it.
    Peer,
    /// It cannot: only the copy engine moves data between the two (the driver stages it).
    NoPeer,
}

/// The devices of one copy: the source's, the destination's and the stream's ordinals, and the
/// link from the stream's device to the other one. A value: the rule reads it and nothing else
/// about the machine, so routes are planned (and printed) without a second GPU.
///
/// ```
/// use cute_copy::{DevicePair, PeerLink};
/// let pull = DevicePair::new(0, 1, 1, true);
/// assert_eq!(pull.link, PeerLink::Peer);
/// assert!(pull.pulls());
/// assert_eq!(DevicePair::new(0, 0, 0, false).link, PeerLink::SameDevice);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevicePair {
    /// The source's device ordinal.
    pub src: usize,
    /// The destination's device ordinal.
    pub dst: usize,
    /// The stream's device ordinal: where the copy is ordered, and where a kernel runs.
    pub stream: usize,
    /// How the stream's device reaches the other one.
    pub link: PeerLink,
}

impl DevicePair {
    /// Facts given by hand: `peer` says whether the stream's device can map the other device's
    /// memory (ignored, and the link [`PeerLink::SameDevice`], when `src == dst`).
    pub const fn new(src: usize, dst: usize, stream: usize, peer: bool) -> Self {
        let link = if src == dst {
            PeerLink::SameDevice
        } else if peer {
            PeerLink::Peer
        } else {
            PeerLink::NoPeer
        };
        DevicePair {
            src,
            dst,
            stream,
            link,
        }
    }

    /// The facts of a copy from `src`'s memory to `dst`'s on a stream of `on`: no driver call
    /// when both sides share a device; else peer access from the stream's device to the other
    /// one is asked for (`cuDeviceCanAccessPeer`) and enabled (`cuCtxEnablePeerAccess`) once per
    /// ordered pair of devices, and the answer kept for the process.
    pub fn of(
        src: &Arc<CudaContext>,
        dst: &Arc<CudaContext>,
        on: &Arc<CudaContext>,
    ) -> Result<DevicePair> {
        let (s, d, st) = (src.ordinal(), dst.ordinal(), on.ordinal());
        if s == d {
            return Ok(DevicePair::new(s, d, st, false));
        }
        let other = if st == s {
            dst
        } else if st == d {
            src
        } else {
            return Ok(DevicePair::new(s, d, st, false)); // refused by the rule
        };
        Ok(DevicePair::new(s, d, st, peer_access(on, other)?))
    }

    /// Whether the copy runs on the destination's device, reading the source over the link.
    pub fn pulls(&self) -> bool {
        self.src != self.dst && self.stream == self.dst
    }

    /// The device that is not the stream's (the stream's own when both sides share one).
    pub fn other(&self) -> usize {
        if self.stream == self.src {
            self.dst
        } else {
            self.src
        }
    }
}

/// Peer access from `from`'s device to `to`'s, asked and enabled once per ordered pair.
fn peer_access(from: &Arc<CudaContext>, to: &Arc<CudaContext>) -> Result<bool> {
    static KNOWN: OnceLock<Mutex<HashMap<(usize, usize), bool>>> = OnceLock::new();
    let key = (from.ordinal(), to.ordinal());
    let known = KNOWN.get_or_init(Default::default);
    // The lock is held across the driver calls, so that two threads enable a pair once.
    let mut known = known.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&peer) = known.get(&key) {
        return Ok(peer);
    }
    let peer = ffi::can_access_peer(from, to)? && ffi::enable_peer_access(from, to)?;
    known.insert(key, peer);
    Ok(peer)
}

/// What a copy between devices looks like to the rule: one run, rows at a pitch, or something
/// only a kernel does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerShape {
    /// One contiguous run of `bytes` on both sides.
    Run {
        /// Bytes in the run.
        bytes: usize,
    },
    /// `rows` rows of `row_bytes` each, `src_pitch` / `dst_pitch` bytes apart.
    Pitched {
        /// Rows.
        rows: usize,
        /// Bytes per row.
        row_bytes: usize,
        /// Source row pitch in bytes.
        src_pitch: usize,
        /// Destination row pitch in bytes.
        dst_pitch: usize,
    },
    /// A copy only a kernel does, named for the reason text ("a pad", "a transpose", ...).
    Kernel(&'static str),
}

impl PeerShape {
    /// A 2D plan's shape: its copy coalesced into one run where both sides are contiguous, its
    /// rows at their pitches otherwise; a pad, or a copy on an atom the caller named, is a
    /// kernel's.
    pub fn of_plan(plan: &Plan) -> PeerShape {
        if plan.operation == Operation::Pad {
            return PeerShape::Kernel("a pad (the copy engine writes no zeros)");
        }
        if plan.explicit {
            return PeerShape::Kernel("a copy on an atom the caller named");
        }
        let e = plan.dtype.size_bytes();
        let (s, d) = coalesce(Operation::Copy, plan.src, plan.dst);
        if s.rows <= 1 || s.cols == 0 {
            return PeerShape::Run {
                bytes: s.rows * s.cols * e,
            };
        }
        PeerShape::Pitched {
            rows: s.rows,
            row_bytes: s.cols * e,
            src_pitch: s.ld * e,
            dst_pitch: d.ld * e,
        }
    }

    /// A tensor plan's shape: its 2D route's, or a kernel's for every other route.
    pub fn of_tensor(plan: &TensorPlan) -> PeerShape {
        match &plan.route {
            TensorRoute::Empty => PeerShape::Run { bytes: 0 },
            TensorRoute::Matrix(p) => PeerShape::of_plan(p),
            TensorRoute::Rows { .. } => PeerShape::Kernel("matrices at item strides"),
            TensorRoute::Transpose(_) => PeerShape::Kernel("a transpose or permute"),
        }
    }
}

/// Which engine moves a copy between devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerEngine {
    /// The copy engine: `cuMemcpyPeerAsync` of one run.
    CopyEngine,
    /// The copy engine: `cuMemcpy3DPeerAsync` of depth 1, rows at a pitch on each side.
    CopyEngine2D,
    /// The plan's own kernel on the stream's device, reading (pull) or writing (push) the other
    /// device's memory.
    Kernel,
}

/// How a copy crosses from one device to another: the facts, the shape the rule read, and the
/// engine it chose. `Plan`, `TensorPlan` and `BatchPlan` carry one (`peer`) for copies between
/// devices, and print its [`reasons`](PeerRoute::reasons) first.
///
/// ```
/// use cute_copy::{DevicePair, PeerEngine, PeerRoute, PeerShape};
/// let pair = DevicePair::new(0, 1, 0, true);
/// let run = PeerRoute::choose(pair, PeerShape::Run { bytes: 1 << 30 }).unwrap().unwrap();
/// assert_eq!(run.engine, PeerEngine::CopyEngine);
/// let t = PeerRoute::choose(pair, PeerShape::Kernel("a transpose")).unwrap().unwrap();
/// assert_eq!(t.engine, PeerEngine::Kernel);
/// assert!(PeerRoute::choose(DevicePair::new(0, 1, 0, false), PeerShape::Kernel("a transpose")).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerRoute {
    /// The devices and the link between them.
    pub pair: DevicePair,
    /// What the rule read.
    pub shape: PeerShape,
    /// What it chose.
    pub engine: PeerEngine,
}

impl PeerRoute {
    /// The rule (this module's docs): `None` for a copy within one device, else the engine, or
    /// a typed error where none can do it. Pure: the same facts give the same route.
    pub fn choose(pair: DevicePair, shape: PeerShape) -> Result<Option<PeerRoute>> {
        if pair.src == pair.dst {
            return Ok(None);
        }
        if pair.stream != pair.src && pair.stream != pair.dst {
            return Err(Error::StreamOnThirdDevice {
                src_device: pair.src,
                dst_device: pair.dst,
                stream_device: pair.stream,
            });
        }
        let engine = match shape {
            PeerShape::Run { .. } => PeerEngine::CopyEngine,
            PeerShape::Pitched {
                row_bytes,
                src_pitch,
                dst_pitch,
                ..
            } if src_pitch.max(dst_pitch) <= PEER_MEMCPY_MAX_PITCH
                && (row_bytes >= PEER_MEMCPY_MIN_ROW_BYTES || pair.link != PeerLink::Peer) =>
            {
                PeerEngine::CopyEngine2D
            }
            PeerShape::Pitched { .. } | PeerShape::Kernel(_) => PeerEngine::Kernel,
        };
        if engine == PeerEngine::Kernel && pair.link != PeerLink::Peer {
            return Err(Error::NoPeerAccess {
                what: match shape {
                    PeerShape::Kernel(what) => what,
                    _ => "rows at a pitch wider than the copy engine takes",
                },
                src_device: pair.src,
                dst_device: pair.dst,
                stream_device: pair.stream,
            });
        }
        Ok(Some(PeerRoute {
            pair,
            shape,
            engine,
        }))
    }

    /// The route of a copy from `src`'s memory to `dst`'s on a stream of `on`, for `shape`:
    /// [`DevicePair::of`] then [`PeerRoute::choose`].
    pub(crate) fn of(
        src: &Arc<CudaContext>,
        dst: &Arc<CudaContext>,
        on: &Arc<CudaContext>,
        shape: PeerShape,
    ) -> Result<Option<PeerRoute>> {
        if Arc::ptr_eq(src, dst) || src == dst {
            return Ok(None); // one context: no driver call, no lock
        }
        PeerRoute::choose(DevicePair::of(src, dst, on)?, shape)
    }

    /// Whether the copy engine moves the copy (no kernel is launched).
    pub fn copy_engine(&self) -> bool {
        self.engine != PeerEngine::Kernel
    }

    /// (rows, bytes per row, source pitch, destination pitch) of a copy-engine route.
    pub(crate) fn rows(&self) -> Option<(u64, u64, u64, u64)> {
        match (self.engine, self.shape) {
            (PeerEngine::Kernel, _) | (_, PeerShape::Kernel(_)) => None,
            (_, PeerShape::Run { bytes }) => Some((1, bytes as u64, bytes as u64, bytes as u64)),
            (
                _,
                PeerShape::Pitched {
                    rows,
                    row_bytes,
                    src_pitch,
                    dst_pitch,
                },
            ) => Some((
                rows as u64,
                row_bytes as u64,
                src_pitch as u64,
                dst_pitch as u64,
            )),
        }
    }
}

/// Route a 2D plan made for views in `src` / `dst` launched on a stream of `on` (a kernel route
/// also marks the plan's launch for the link: see [`Plan::peer`]).
pub(crate) fn route_plan(
    plan: &mut Plan,
    src: &Arc<CudaContext>,
    dst: &Arc<CudaContext>,
    on: &Arc<CudaContext>,
) -> Result<()> {
    plan.peer = match src == dst {
        true => None, // one context: nothing to read, no driver call
        false => PeerRoute::of(src, dst, on, PeerShape::of_plan(plan))?,
    };
    Ok(())
}

/// Route a tensor plan likewise; its 2D route's plan carries the same route.
pub(crate) fn route_tensor(
    plan: &mut TensorPlan,
    src: &Arc<CudaContext>,
    dst: &Arc<CudaContext>,
    on: &Arc<CudaContext>,
) -> Result<()> {
    if src == dst {
        return Ok(()); // one context: the plan's `peer` stays `None`
    }
    plan.peer = PeerRoute::of(src, dst, on, PeerShape::of_tensor(plan))?;
    if let TensorRoute::Matrix(p) | TensorRoute::Rows { plan: p, .. } = &mut plan.route {
        p.peer = plan.peer;
    }
    Ok(())
}

/// A stream of `ctx`'s device set aside for recording the events of buffers that a copy between
/// devices used (one per device, made on first use and kept): a copy's stream cannot record them
/// (another context), and the buffer's own stream should not wait for the copy.
pub(crate) fn side_stream(ctx: &Arc<CudaContext>) -> Result<Arc<CudaStream>> {
    static SIDE: OnceLock<Mutex<HashMap<usize, Arc<CudaStream>>>> = OnceLock::new();
    let mut side = SIDE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(s) = side.get(&ctx.ordinal()) {
        if s.context() == ctx {
            return Ok(s.clone());
        }
    }
    let s = ctx.new_stream()?;
    side.insert(ctx.ordinal(), s.clone());
    Ok(s)
}

/// Order a launch on `stream` after the work already enqueued on `home`, the own stream of a
/// buffer of another device: `stream` waits for an event recorded on `home` (a wait may cross
/// devices; a record may not, which is why cudarc's own guard is taken on `home`).
pub(crate) fn wait_for(stream: &CudaStream, home: &CudaStream) -> Result<()> {
    let tail = home.record_event(None)?;
    stream.wait(&tail)?;
    Ok(())
}

/// The other half: `home` (the buffer's own stream, or its device's side stream) waits for
/// everything enqueued on `stream` so far (the launch), so that the event cudarc then records on
/// `home` for the buffer, and `home`'s later work, come after the copy.
pub(crate) fn join_back(home: &CudaStream, stream: &CudaStream) {
    let r = stream.record_event(None).and_then(|done| home.wait(&done));
    home.context().record_err(r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Operand};

    const PEER: DevicePair = DevicePair::new(0, 1, 1, true);
    const PUSH: DevicePair = DevicePair::new(0, 1, 0, true);
    const NO_PEER: DevicePair = DevicePair::new(0, 1, 0, false);

    fn plan(src: Operand, dst: Operand, dtype: DType) -> Plan {
        Plan::new(dtype, src, dst, None, None).unwrap()
    }

    fn text(route: &PeerRoute) -> String {
        route.reasons().join("\n")
    }

    #[test]
    fn copies_within_one_device_have_no_route_and_plan_as_before() {
        for peer in [true, false] {
            for shape in [
                PeerShape::Run { bytes: 1 << 30 },
                PeerShape::Kernel("a transpose or permute"),
            ] {
                let same = DevicePair::new(1, 1, 1, peer);
                assert_eq!(same.link, PeerLink::SameDevice);
                assert_eq!(PeerRoute::choose(same, shape).unwrap(), None);
            }
        }
        // a plan made without a route prints no line about devices
        let p = plan(Operand::packed(64, 64), Operand::packed(64, 64), DType::F32);
        assert_eq!(p.peer, None);
        assert!(!p.to_string().contains("between devices"), "{p}");
    }

    #[test]
    fn contiguous_runs_and_long_pitched_rows_take_the_copy_engine_either_way() {
        let run = PeerShape::of_plan(&plan(
            Operand::packed(16384, 16384),
            Operand::packed(16384, 16384),
            DType::F16,
        ));
        assert_eq!(run, PeerShape::Run { bytes: 1 << 29 });
        // a 16384^2 f16 sub-matrix at ld 16392: rows of 32 KiB at pitches 32784 / 32768
        let sub = Operand {
            rows: 16384,
            cols: 16384,
            ld: 16392,
            offset_bytes: 0,
        };
        let pitched = PeerShape::of_plan(&plan(sub, Operand::packed(16384, 16384), DType::F16));
        assert_eq!(
            pitched,
            PeerShape::Pitched {
                rows: 16384,
                row_bytes: 32768,
                src_pitch: 32784,
                dst_pitch: 32768
            }
        );
        for pair in [PEER, PUSH, NO_PEER] {
            let r = PeerRoute::choose(pair, run).unwrap().unwrap();
            assert_eq!(r.engine, PeerEngine::CopyEngine);
            assert_eq!(r.rows(), Some((1, 1 << 29, 1 << 29, 1 << 29)));
            assert!(text(&r).contains("cuMemcpyPeerAsync"), "{}", text(&r));
            let r = PeerRoute::choose(pair, pitched).unwrap().unwrap();
            assert_eq!(r.engine, PeerEngine::CopyEngine2D);
            assert_eq!(r.rows(), Some((16384, 32768, 32784, 32768)));
            assert!(text(&r).contains("cuMemcpy3DPeerAsync"), "{}", text(&r));
        }
    }

    #[test]
    fn short_rows_pads_transposes_and_named_atoms_take_the_kernel_pulling_or_pushing() {
        // a u8 crop at odd offsets, rows of 300 B: shorter than the copy engine's line
        let crop = Operand {
            rows: 1000,
            cols: 300,
            ld: 1927,
            offset_bytes: 3,
        };
        let short = PeerShape::of_plan(&plan(crop, Operand::packed(1000, 300), DType::U8));
        assert!(matches!(short, PeerShape::Pitched { row_bytes: 300, .. }));
        let pad = PeerShape::of_plan(&plan(
            Operand::packed(100, 100),
            Operand::packed(128, 128),
            DType::F32,
        ));
        assert!(matches!(pad, PeerShape::Kernel(w) if w.starts_with("a pad")));
        let named = PeerShape::of_plan(
            &Plan::new(
                DType::F32,
                Operand::packed(64, 64),
                Operand::packed(64, 64),
                Some(crate::Atom::Realign128),
                None,
            )
            .unwrap(),
        );
        assert!(matches!(named, PeerShape::Kernel(_)));
        for shape in [short, pad, named, PeerShape::Kernel("a block table")] {
            let pull = PeerRoute::choose(PEER, shape).unwrap().unwrap();
            assert_eq!(pull.engine, PeerEngine::Kernel);
            assert!(pull.pair.pulls());
            let t = text(&pull);
            assert!(t.contains("pulls") && t.contains("runs on device 1"), "{t}");
            let push = PeerRoute::choose(PUSH, shape).unwrap().unwrap();
            assert!(!push.pair.pulls());
            let t = text(&push);
            assert!(
                t.contains("pushes") && t.contains("runs on device 0"),
                "{t}"
            );
        }
    }

    #[test]
    fn without_peer_access_a_kernels_copy_is_refused_and_the_copy_engine_still_stages() {
        let e = PeerRoute::choose(NO_PEER, PeerShape::Kernel("a transpose or permute"));
        assert!(
            matches!(
                e,
                Err(Error::NoPeerAccess {
                    what: "a transpose or permute",
                    src_device: 0,
                    dst_device: 1,
                    stream_device: 0
                })
            ),
            "{e:?}"
        );
        // short pitched rows: no kernel without peer access, so the copy engine after all
        let short = PeerShape::Pitched {
            rows: 10,
            row_bytes: 8,
            src_pitch: 16,
            dst_pitch: 8,
        };
        let r = PeerRoute::choose(NO_PEER, short).unwrap().unwrap();
        assert_eq!(r.engine, PeerEngine::CopyEngine2D);
        assert!(text(&r).contains("staging"), "{}", text(&r));
        // a pitch past the copy engine's limit, without peer access: nothing can do it
        let wide = PeerShape::Pitched {
            rows: 2,
            row_bytes: 1024,
            src_pitch: PEER_MEMCPY_MAX_PITCH + 1,
            dst_pitch: 1024,
        };
        assert!(matches!(
            PeerRoute::choose(NO_PEER, wide),
            Err(Error::NoPeerAccess { .. })
        ));
        assert_eq!(
            PeerRoute::choose(PEER, wide).unwrap().unwrap().engine,
            PeerEngine::Kernel
        );
    }

    #[test]
    fn tensor_routes_read_as_runs_pitched_rows_or_kernels() {
        use crate::Layout;
        let rm = |s: &[usize]| Layout::row_major(s).unwrap();
        let shape = |src: Layout, dst: Layout| {
            PeerShape::of_tensor(&TensorPlan::new(DType::F16, src, dst, (0, 0)).unwrap())
        };
        // packed of any rank: one run; a strided matrix: pitched rows
        assert_eq!(
            shape(rm(&[2, 3, 4, 5]), rm(&[2, 3, 4, 5])),
            PeerShape::Run { bytes: 240 }
        );
        let m = Layout::new(&[300, 1000], &[1030, 1]).unwrap();
        assert!(matches!(
            shape(m, rm(&[300, 1000])),
            PeerShape::Pitched {
                rows: 300,
                row_bytes: 2000,
                src_pitch: 2060,
                dst_pitch: 2000
            }
        ));
        // matrices at item strides, transposes: kernels; an empty copy: a run of nothing
        let items = Layout::new(&[6, 33, 37], &[1500, 40, 1]).unwrap();
        assert!(matches!(
            shape(items, rm(&[6, 33, 37])),
            PeerShape::Kernel(_)
        ));
        let t = rm(&[64, 32]).permute(&[1, 0]).unwrap();
        assert_eq!(
            shape(t, rm(&[32, 64])),
            PeerShape::Kernel("a transpose or permute")
        );
        assert_eq!(shape(rm(&[0, 8]), rm(&[0, 8])), PeerShape::Run { bytes: 0 });
    }

    #[test]
    fn a_block_copy_between_devices_prints_its_route_first() {
        let mut p = crate::BatchPlan::of("block copy", DType::F16, &[]);
        p.peer = PeerRoute::choose(PEER, PeerShape::Kernel("a block table")).unwrap();
        let t = p.to_string();
        let second = t.lines().nth(1).unwrap();
        assert!(second.contains("between devices"), "{t}");
        assert!(
            t.contains("a block table: the plan's own kernel runs on device 1"),
            "{t}"
        );
    }

    /// The ordering of a buffer pinned for a stream of another context, on one GPU: a stream of a
    /// second (non-primary) context of the same device stands in for the other device's (no
    /// kernel runs; only the pins' waits and records, which must leave no error in either
    /// context and the buffer usable). Both ways: cudarc's event tracking on (the buffer's
    /// events, the side stream) and off (the buffer's own stream).
    #[test]
    fn pins_for_a_stream_of_another_context_wait_and_record_without_errors() {
        use cudarc::driver::{CudaContext, DevicePtr};
        if crate::device_count() == 0 {
            eprintln!("skipped: no GPU");
            return;
        }
        let other = CudaContext::new_non_primary(0, 0).unwrap();
        let on = other.new_stream().unwrap();
        for tracking in [true, false] {
            let ctx = crate::context(0).unwrap();
            if !tracking {
                // SAFETY: the buffers below are made after this call and used on `home` only,
                // besides the pins under test (which order themselves with `home`).
                unsafe { ctx.disable_event_tracking() };
            }
            let home = ctx.new_stream().unwrap();
            assert_eq!(ctx.is_managing_stream_synchronization(), tracking);
            let host: Vec<f32> = (0..64).map(|i| i as f32).collect();
            let a = crate::DeviceMatrix::from_host(&home, 8, 8, 8, &host).unwrap();
            let mut b = crate::DeviceMatrix::<f32>::zeros(&home, 8, 8, 8).unwrap();
            let want = |m: &crate::DeviceMatrix<f32>| m.as_slice().device_ptr(&home).0;
            let (wa, wb) = (want(&a), want(&b));
            {
                let (va, mut vb) = (a.view().sub(1, 0, 7, 8).unwrap(), b.view_mut());
                let pa = va.pin_on(&on).unwrap();
                assert_eq!(pa.addr, wa + 32);
                let pb = vb.pin_on(&on).unwrap();
                assert_eq!(pb.addr, wb);
            }
            on.synchronize().unwrap();
            home.synchronize().unwrap();
            ctx.check_err().unwrap();
            other.check_err().unwrap();
            // the buffers still work on their own stream
            assert_eq!(a.to_host(&home).unwrap(), host);
            assert_eq!(b.to_host(&home).unwrap(), vec![0.0; 64]);
        }
        crate::context(0).unwrap().bind_to_thread().unwrap();
    }

    #[test]
    fn a_stream_on_a_third_device_is_a_typed_error() {
        let e = PeerRoute::choose(DevicePair::new(0, 1, 2, true), PeerShape::Run { bytes: 16 });
        assert!(
            matches!(
                e,
                Err(Error::StreamOnThirdDevice {
                    src_device: 0,
                    dst_device: 1,
                    stream_device: 2
                })
            ),
            "{e:?}"
        );
    }

    #[test]
    fn a_routed_plan_prints_the_route_first_and_a_copy_engine_plan_no_kernel() {
        let mut p = plan(
            Operand::packed(64, 1024),
            Operand::packed(64, 1024),
            DType::F32,
        );
        p.peer = PeerRoute::choose(PEER, PeerShape::of_plan(&p)).unwrap();
        let t = p.to_string();
        let first = t.lines().nth(1).unwrap();
        assert!(
            first.contains("device 0") && first.contains("device 1"),
            "{t}"
        );
        assert!(
            t.contains("cuMemcpyPeerAsync") && !t.contains("warp task"),
            "{t}"
        );
        // the same plan as a pad: the kernel's reasons follow the route's
        let mut p = plan(
            Operand::packed(60, 1000),
            Operand::packed(64, 1024),
            DType::F32,
        );
        p.peer = PeerRoute::choose(PUSH, PeerShape::of_plan(&p)).unwrap();
        let t = p.to_string();
        assert!(t.contains("pushes") && t.contains("pad"), "{t}");
        // a kernel between devices streams over the link: the realign family without prefetch
        let device = crate::DeviceInfo::new(60 << 20, 132, (9, 0));
        let rows = Operand {
            rows: 1024,
            cols: 100_000,
            ld: 100_016,
            offset_bytes: 0,
        };
        let named = Plan::for_device(
            DType::U8,
            rows,
            Operand::packed(1024, 100_000),
            Some(crate::Atom::Realign128),
            &device,
        )
        .unwrap();
        assert!(named.to_string().contains("L2 prefetch:"), "{named}");
        let mut p = named.clone();
        p.peer = PeerRoute::choose(PEER, PeerShape::of_plan(&p)).unwrap();
        let t = p.to_string();
        assert!(
            t.contains("no L2 prefetch: the copy") && t.contains("pulls"),
            "{t}"
        );
    }
}
