//! Shared by the tensor-copy GPU tests: a case's two sides (a view placed in an allocation), one
//! checked copy against the host reference with the whole destination allocation compared, and
//! random layouts.

use std::sync::Arc;

use cute_copy::cudarc::driver::CudaStream;
use cute_copy::reference::{expected_tensor_copy, poisoned_tensor_destination, random_elements};
use cute_copy::{DeviceTensor, Element, Layout, TensorPlan, TensorRoute};
use rand::Rng;

/// One side of a case: an allocation of `alloc` elements and a view `(offset, layout)` in it.
#[derive(Clone, Copy, Debug)]
pub struct Side {
    pub alloc: usize,
    pub offset: usize,
    pub layout: Layout,
}

impl Side {
    /// `layout` at the start of an allocation that ends at its last element.
    pub fn packed(layout: Layout) -> Self {
        Side {
            alloc: layout.cosize().unwrap().max(1),
            offset: 0,
            layout,
        }
    }

    /// `layout` at `offset` elements into an allocation with `tail` spare elements after the
    /// view's last element.
    pub fn placed(offset: usize, layout: Layout, tail: usize) -> Self {
        Side {
            alloc: (offset + layout.cosize().unwrap() + tail).max(1),
            offset,
            layout,
        }
    }

    /// The same view and the same spare elements after it, moved to `offset` of the allocation.
    pub fn at(self, offset: usize) -> Self {
        Side {
            alloc: self.alloc - self.offset + offset,
            offset,
            ..self
        }
    }
}

/// Copy `src` into `dst` on the GPU and compare the whole destination allocation: the view's
/// elements with the host reference, every other element with its poison.
pub fn check<T: Element>(
    stream: &Arc<CudaStream>,
    src: Side,
    dst: Side,
    r: &mut impl Rng,
) -> TensorPlan {
    let host: Vec<T> = random_elements(src.alloc, r.random());
    let before = poisoned_tensor_destination(
        &host,
        (src.offset, &src.layout),
        dst.alloc,
        (dst.offset, &dst.layout),
        r.random(),
    );
    let want = expected_tensor_copy(
        &host,
        (src.offset, &src.layout),
        &before,
        (dst.offset, &dst.layout),
    );
    let s_all = Layout::new(&[src.alloc], &[1]).unwrap();
    let d_all = Layout::new(&[dst.alloc], &[1]).unwrap();
    let s = DeviceTensor::from_host(stream, s_all, &host).unwrap();
    let mut d = DeviceTensor::from_host(stream, d_all, &before).unwrap();
    let plan = {
        let sv = s.view_at(src.offset, src.layout).unwrap();
        let mut dv = d.view_at_mut(dst.offset, dst.layout).unwrap();
        cute_copy::copy_tensor(&sv, &mut dv, stream)
            .unwrap_or_else(|e| panic!("{} {src:?} -> {dst:?}: {e}", std::any::type_name::<T>()))
    };
    let got = d.to_host(stream).unwrap();
    let bad = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count();
    assert_eq!(
        bad,
        0,
        "{bad} wrong elements, {}: {src:?} -> {dst:?}\n{plan}",
        std::any::type_name::<T>()
    );
    plan
}

/// [`check`] for an element type of `w` bytes (1, 2, 4 or 8).
pub fn by_width(
    stream: &Arc<CudaStream>,
    w: usize,
    src: Side,
    dst: Side,
    r: &mut rand::rngs::StdRng,
) -> TensorPlan {
    match w {
        1 => check::<u8>(stream, src, dst, r),
        2 => check::<half::f16>(stream, src, dst, r),
        4 => check::<f32>(stream, src, dst, r),
        _ => check::<u64>(stream, src, dst, r),
    }
}

/// A random layout of `shape`: a random permutation of a row-major allocation with padded
/// extents, at a random offset.
pub fn random_side(shape: &[usize], r: &mut impl Rng) -> Side {
    let rank = shape.len();
    let mut order: Vec<usize> = (0..rank).collect();
    for i in (1..rank).rev() {
        order.swap(i, r.random_range(0..=i));
    }
    // storage shape: the modes in `order`, each padded by 0..3 (padding on the innermost makes
    // the pitch odd)
    let padded: Vec<usize> = order
        .iter()
        .map(|&m| {
            shape[m]
                + if r.random_bool(0.4) {
                    r.random_range(1..4)
                } else {
                    0
                }
        })
        .collect();
    let storage = Layout::row_major(&padded).unwrap();
    let mut stride = vec![0; rank];
    for (i, &m) in order.iter().enumerate() {
        stride[m] = storage.stride()[i];
    }
    let layout = Layout::new(shape, &stride).unwrap();
    let offset = if r.random_bool(0.5) {
        r.random_range(0..20)
    } else {
        0
    };
    let tail = r.random_range(0..9);
    Side {
        alloc: offset + storage.cosize().unwrap() + tail,
        offset,
        layout,
    }
}

/// The name of a plan's route (the kernel family and its choice), for a test's summary line.
pub fn route_name(plan: &TensorPlan) -> String {
    match &plan.route {
        TensorRoute::Matrix(p) => format!("matrix {:?}", p.atom),
        TensorRoute::Rows { .. } => "realign rows".into(),
        TensorRoute::Transpose(t) => format!("{:?} {:?}/{:?}", t.kind, t.load, t.store),
        TensorRoute::Empty => "empty".into(),
    }
}
