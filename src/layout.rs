//! CuTe layouts on the host: a shape and a stride per mode, rank 1 to [`MAX_RANK`], in elements.
//!
//! A [`Layout`] maps a coordinate `(c0, c1, ..)` to the element offset `Σ ci * stride_i`, as CuTe's
//! `Layout<Shape, Stride>` does, and reads and writes CuTe's notation: `(8,32,4096,128):(16777216,
//! 524288,128,1)`. Views of any rank ([`crate::TensorView`]) sit on one; a row-major matrix is the
//! rank-2 layout `(rows, cols):(ld, 1)`.
//!
//! Coalescing follows CuTe's rule: two adjacent modes merge when one steps exactly over the other
//! (`stride_outer == shape_inner * stride_inner`), and size-1 modes vanish. [`Layout::coalesce`] is
//! CuTe's `coalesce` of one layout (mode 0 fastest, as CuTe linearizes). CuTe 4.2 merges only modes
//! it can prove mergeable at compile time, so for run-time shapes its `coalesce` returns the layout
//! unchanged; the planner therefore applies the same rule here, on the host, to the *pair* of
//! layouts of a copy ([`coalesce_layouts`]): a copy may visit its coordinates in any order, so the
//! modes are first sorted by destination stride (CuTe's mode sorting) and then merged where both
//! sides allow it.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Modes a layout can have (the kernels walk up to this many).
pub const MAX_RANK: usize = 6;

/// A CuTe layout `shape:stride` of rank 1 to [`MAX_RANK`], in elements; strides are non-negative.
///
/// ```
/// use cute_copy::Layout;
/// let l: Layout = "(8,32,4096,128):(16777216,524288,128,1)".parse()?;
/// assert_eq!(l, Layout::row_major(&[8, 32, 4096, 128])?);
/// assert_eq!(l.size(), 8 * 32 * 4096 * 128);
/// // [B,H,S,D] -> [B,S,H,D]: the permuted view of the same memory
/// let p = l.permute(&[0, 2, 1, 3])?;
/// assert_eq!(p.to_string(), "(8,4096,32,128):(16777216,128,524288,1)");
/// // CuTe's coalesce (mode 0 fastest): (4,6):(1,4) is one mode of 24
/// assert_eq!(Layout::new(&[4, 6], &[1, 4])?.coalesce().to_string(), "(24):(1)");
/// # Ok::<(), cute_copy::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    rank: u8,
    shape: [usize; MAX_RANK],
    stride: [usize; MAX_RANK],
}

impl Layout {
    /// A layout from its shape and stride (equal lengths, 1 to [`MAX_RANK`] modes).
    pub fn new(shape: &[usize], stride: &[usize]) -> Result<Self> {
        if shape.len() != stride.len() {
            return Err(Error::Layout(format!(
                "shape has {} modes, stride {}",
                shape.len(),
                stride.len()
            )));
        }
        if shape.is_empty() || shape.len() > MAX_RANK {
            return Err(Error::Rank {
                rank: shape.len(),
                max: MAX_RANK,
            });
        }
        let mut l = Layout {
            rank: shape.len() as u8,
            shape: [1; MAX_RANK],
            stride: [0; MAX_RANK],
        };
        l.shape[..shape.len()].copy_from_slice(shape);
        l.stride[..shape.len()].copy_from_slice(stride);
        l.cosize()?; // the largest offset must be representable
        Ok(l)
    }

    /// The compact row-major layout of `shape` (CuTe's `LayoutRight`): the last mode has stride 1.
    pub fn row_major(shape: &[usize]) -> Result<Self> {
        let mut stride = vec![0usize; shape.len()];
        let mut s = 1usize;
        for i in (0..shape.len()).rev() {
            stride[i] = s;
            s = s
                .checked_mul(shape[i].max(1))
                .ok_or_else(|| Error::Overflow(format!("row-major layout of {shape:?}")))?;
        }
        Layout::new(shape, &stride)
    }

    /// The row-major matrix `(rows, cols):(ld, 1)`.
    pub fn matrix(rows: usize, cols: usize, ld: usize) -> Result<Self> {
        Layout::new(&[rows, cols], &[ld, 1])
    }

    /// Number of modes.
    pub fn rank(&self) -> usize {
        self.rank as usize
    }
    /// Extent of every mode.
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.rank()]
    }
    /// Stride of every mode, in elements.
    pub fn stride(&self) -> &[usize] {
        &self.stride[..self.rank()]
    }
    /// Number of coordinates (CuTe's `size`).
    pub fn size(&self) -> usize {
        self.shape().iter().product()
    }

    /// One past the largest offset the layout maps to (CuTe's `cosize`); 0 when empty.
    pub fn cosize(&self) -> Result<usize> {
        if self.shape().contains(&0) {
            return Ok(0);
        }
        let mut last = 0usize;
        for (&s, &d) in self.shape().iter().zip(self.stride()) {
            last = (s - 1)
                .checked_mul(d)
                .and_then(|x| x.checked_add(last))
                .ok_or_else(|| Error::Overflow(format!("cosize of {self}")))?;
        }
        last.checked_add(1)
            .ok_or_else(|| Error::Overflow(format!("cosize of {self}")))
    }

    /// The element offset of a coordinate (CuTe's `layout(coord)`), or an error when it is outside
    /// the shape.
    pub fn offset_of(&self, coord: &[usize]) -> Result<usize> {
        if coord.len() != self.rank() || coord.iter().zip(self.shape()).any(|(c, s)| c >= s) {
            return Err(Error::Layout(format!(
                "coordinate {coord:?} is outside {self}"
            )));
        }
        Ok(coord.iter().zip(self.stride()).map(|(c, d)| c * d).sum())
    }

    /// Mode `i` of the result is mode `order[i]` of this layout (torch's `permute`).
    pub fn permute(&self, order: &[usize]) -> Result<Self> {
        let mut seen = [false; MAX_RANK];
        let refuse = || Error::NotAPermutation {
            order: order.to_vec(),
            rank: self.rank(),
        };
        if order.len() != self.rank() {
            return Err(refuse());
        }
        for &o in order {
            if o >= self.rank() || seen[o] {
                return Err(refuse());
            }
            seen[o] = true;
        }
        let shape: Vec<usize> = order.iter().map(|&o| self.shape[o]).collect();
        let stride: Vec<usize> = order.iter().map(|&o| self.stride[o]).collect();
        Layout::new(&shape, &stride)
    }

    /// CuTe's `coalesce`: the same function of the 1-D coordinate (mode 0 fastest) with as few
    /// modes as possible. Size-1 modes vanish; mode `i + 1` folds into mode `i` when
    /// `stride[i + 1] == shape[i] * stride[i]`. An all-ones layout becomes `(1):(0)`.
    pub fn coalesce(&self) -> Layout {
        let mut shape: Vec<usize> = Vec::new();
        let mut stride: Vec<usize> = Vec::new();
        for (&s, &d) in self.shape().iter().zip(self.stride()) {
            if s == 1 {
                continue;
            }
            match (shape.last_mut(), stride.last()) {
                (Some(ps), Some(&pd)) if *ps * pd == d => *ps *= s,
                _ => {
                    shape.push(s);
                    stride.push(d);
                }
            }
        }
        if shape.is_empty() {
            return Layout::new(&[1], &[0]).expect("rank 1");
        }
        Layout::new(&shape, &stride).expect("coalescing keeps the cosize")
    }

    /// Whether no two coordinates share an offset, by a sufficient test: with modes sorted by
    /// stride, each stride steps past everything the smaller modes reach. Layouts that interleave
    /// their modes injectively are refused too (conservative).
    pub fn is_injective(&self) -> bool {
        if self.size() == 0 {
            return true;
        }
        // (stride, extent) of the modes of extent > 1, by stride (rank <= 6: on the stack)
        let mut modes = [(0usize, 0usize); MAX_RANK];
        let mut n = 0;
        for (&s, &d) in self.shape().iter().zip(self.stride()) {
            if s > 1 {
                modes[n] = (d, s);
                n += 1;
            }
        }
        modes[..n].sort_unstable();
        let mut reach = 0usize; // largest offset the smaller modes reach
        for &(d, s) in &modes[..n] {
            if d <= reach || d == 0 {
                return false;
            }
            reach += (s - 1) * d;
        }
        true
    }

    /// Whether this is a row-major matrix: rank 2 with unit column stride and `ld >= cols`, or
    /// rank 1 with unit stride.
    pub(crate) fn as_matrix(&self) -> Option<(usize, usize, usize)> {
        match (self.shape(), self.stride()) {
            ([n], [1]) => Some((1, *n, (*n).max(1))),
            ([r, c], [ld, 1]) if *ld >= *c && *ld > 0 => Some((*r, *c, *ld)),
            ([r, 1], [ld, _]) if *ld > 0 => Some((*r, 1, *ld)),
            _ => None,
        }
    }
}

/// The pair of layouts of a copy (equal shapes), with size-1 modes dropped, modes sorted by
/// destination stride (outermost first, so the last mode is the destination's innermost; ties by
/// source stride) and adjacent modes merged where they merge on both sides: the same copy, in as
/// few modes as it allows. Equal shapes are required.
///
/// ```
/// use cute_copy::{coalesce_layouts, Layout};
/// // [64, 1024, 1023] of ld 1024 -> packed: rows of 1023 contiguous on both sides, 65536 of them
/// let src = Layout::new(&[64, 1024, 1023], &[1024 * 1024, 1024, 1])?;
/// let dst = Layout::row_major(&[64, 1024, 1023])?;
/// let (s, d) = coalesce_layouts(&src, &dst)?;
/// assert_eq!((s.to_string(), d.to_string()), ("(65536,1023):(1024,1)".into(), "(65536,1023):(1023,1)".into()));
/// # Ok::<(), cute_copy::Error>(())
/// ```
pub fn coalesce_layouts(src: &Layout, dst: &Layout) -> Result<(Layout, Layout)> {
    if src.shape() != dst.shape() {
        return Err(Error::LayoutMismatch {
            src: src.to_string(),
            dst: dst.to_string(),
        });
    }
    let c = coalesce_modes(src.shape(), [src.stride(), dst.stride()]);
    Ok((c.layout(0)?, c.layout(1)?))
}

/// CuTe's `coalesce` of several layouts of one shape at once, as [`coalesce_layouts`] does it for
/// two: size-1 modes dropped, modes sorted by the strides, descending (the second layout's first,
/// then the first's, then the others'), and a mode folded into the one outside it when that one
/// steps over it in *every* layout. Gives the shape, each layout's strides, and for each coalesced
/// mode the original modes folded into it, innermost first (the convert family finds its channel
/// mode there). An empty shape after dropping becomes `(1):(1)`, of no original mode.
///
/// Fixed-size values on the stack: every tensor copy plans through here, once per call.
pub(crate) fn coalesce_modes<const N: usize>(
    shape: &[usize],
    strides: [&[usize]; N],
) -> Coalesced<N> {
    // The sort key of mode i: its strides, the second layout's first, descending.
    let key = |i: usize| -> [usize; N] {
        std::array::from_fn(|k| strides[[1, 0].get(k).copied().unwrap_or(k)][i])
    };
    // The modes that move anything, outermost first: a stable insertion sort (rank <= 6).
    let mut order = [0usize; MAX_RANK];
    let mut n = 0;
    for i in (0..shape.len()).filter(|&i| shape[i] != 1) {
        let at = (0..n).find(|&j| key(order[j]) < key(i)).unwrap_or(n);
        order.copy_within(at..n, at + 1);
        order[at] = i;
        n += 1;
    }
    let mut out = Coalesced {
        rank: 0,
        shape: [1; MAX_RANK],
        strides: [[1; MAX_RANK]; N],
        groups: [Group::default(); MAX_RANK],
    };
    for &i in &order[..n] {
        let (s, st): (usize, [usize; N]) = (shape[i], std::array::from_fn(|k| strides[k][i]));
        let r = out.rank;
        // The last mode out is outer to this one: it folds in when it steps over this one everywhere.
        if r > 0 && (0..N).all(|k| out.strides[k][r - 1] == s * st[k]) {
            out.shape[r - 1] *= s;
            (0..N).for_each(|k| out.strides[k][r - 1] = st[k]);
            out.groups[r - 1].push_inner(i);
        } else {
            out.shape[r] = s;
            (0..N).for_each(|k| out.strides[k][r] = st[k]);
            out.groups[r].push_inner(i);
            out.rank += 1;
        }
    }
    out.rank = out.rank.max(1);
    out
}

/// What [`coalesce_modes`] gives: `rank` modes (at least one) of `shape`, each layout's strides,
/// and the original modes folded into each.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coalesced<const N: usize> {
    rank: usize,
    shape: [usize; MAX_RANK],
    strides: [[usize; MAX_RANK]; N],
    groups: [Group; MAX_RANK],
}

impl<const N: usize> Coalesced<N> {
    /// Extent of every coalesced mode.
    pub(crate) fn shape(&self) -> &[usize] {
        &self.shape[..self.rank]
    }
    /// Layout `k`'s stride of every coalesced mode.
    pub(crate) fn stride(&self, k: usize) -> &[usize] {
        &self.strides[k][..self.rank]
    }
    /// Layout `k` coalesced.
    pub(crate) fn layout(&self, k: usize) -> Result<Layout> {
        Layout::new(self.shape(), self.stride(k))
    }
    /// For each coalesced mode, the original modes folded into it, innermost first.
    pub(crate) fn groups(&self) -> impl Iterator<Item = &[u8]> {
        self.groups[..self.rank].iter().map(Group::modes)
    }
}

/// The original modes folded into one coalesced mode, innermost first.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Group {
    len: u8,
    modes: [u8; MAX_RANK],
}

impl Group {
    fn push_inner(&mut self, mode: usize) {
        let n = self.len as usize;
        self.modes.copy_within(0..n, 1);
        self.modes[0] = mode as u8;
        self.len += 1;
    }
    fn modes(&self) -> &[u8] {
        &self.modes[..self.len as usize]
    }
}

impl fmt::Display for Layout {
    /// CuTe's notation: `(8,32):(32,1)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(f, "({}):({})", join(self.shape()), join(self.stride()))
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Layout{self}")
    }
}

impl FromStr for Layout {
    type Err = Error;

    /// Parses CuTe's notation: `(8,32):(32,1)`, or `8:1` for rank 1. Flat tuples only.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::Layout(format!(
                "`{s}` is not a flat CuTe layout like (8,32):(32,1)"
            ))
        };
        let (shape, stride) = s.trim().split_once(':').ok_or_else(bad)?;
        let parse = |t: &str| -> Result<Vec<usize>> {
            let t = t.trim();
            let inner = match t.strip_prefix('(') {
                Some(rest) => rest.strip_suffix(')').ok_or_else(bad)?,
                None => t,
            };
            inner
                .split(',')
                .map(|x| {
                    x.trim()
                        .trim_start_matches('_')
                        .parse::<usize>()
                        .map_err(|_| bad())
                })
                .collect()
        };
        Layout::new(&parse(shape)?, &parse(stride)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Layout {
        s.parse().unwrap()
    }

    #[test]
    fn notation_round_trips_and_rejects_nested_or_ragged_layouts() {
        for s in [
            "(8):(1)",
            "(8,32):(32,1)",
            "(2,3,4,5,6,7):(5040,1680,420,84,14,2)",
        ] {
            assert_eq!(l(s).to_string(), s);
        }
        assert_eq!(l("8:1"), l("(8):(1)"));
        assert_eq!(l("(_8,_4):(_4,_1)"), l("(8,4):(4,1)"));
        for bad in [
            "(8,4):(1)",
            "((2,4),4):(1,8)",
            "(1,1,1,1,1,1,1):(0,0,0,0,0,0,0)",
            "8",
            "",
        ] {
            assert!(bad.parse::<Layout>().is_err(), "{bad}");
        }
    }

    #[test]
    fn cosize_is_one_past_the_largest_offset_and_zero_when_empty() {
        assert_eq!(l("(4,5):(6,1)").cosize().unwrap(), 3 * 6 + 4 + 1);
        assert_eq!(l("(4,0):(6,1)").cosize().unwrap(), 0);
        assert!(Layout::new(&[usize::MAX, 3], &[2, 1]).is_err());
    }

    #[test]
    fn coalesce_follows_cute_mode_zero_fastest() {
        // the cases CuTe's coalesce documents, with static values
        assert_eq!(l("(2,4):(1,2)").coalesce(), l("(8):(1)"));
        assert_eq!(l("(4,2):(2,1)").coalesce(), l("(4,2):(2,1)"));
        assert_eq!(l("(2,1,3):(1,9,2)").coalesce(), l("(6):(1)"));
        assert_eq!(l("(1,1):(3,5)").coalesce(), l("(1):(0)"));
        assert_eq!(l("(2,3,4):(12,4,1)").coalesce(), l("(2,3,4):(12,4,1)"));
    }

    #[test]
    fn coalesced_pairs_visit_the_same_element_pairs() {
        // brute force: the multiset of (src offset, dst offset) pairs is unchanged
        fn pairs(s: &Layout, d: &Layout) -> Vec<(usize, usize)> {
            let mut v = Vec::new();
            let n = s.size();
            for i in 0..n {
                let (mut rest, mut so, mut dof) = (i, 0, 0);
                for m in (0..s.rank()).rev() {
                    let c = rest % s.shape()[m];
                    rest /= s.shape()[m];
                    so += c * s.stride()[m];
                    dof += c * d.stride()[m];
                }
                v.push((so, dof));
            }
            v.sort_unstable();
            v
        }
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..400 {
            let rank = 1 + rnd(5);
            let shape: Vec<usize> = (0..rank).map(|_| 1 + rnd(4)).collect();
            let src = Layout::row_major(&shape).unwrap();
            let mut order: Vec<usize> = (0..rank).collect();
            for i in (1..rank).rev() {
                order.swap(i, rnd(i + 1));
            }
            let pshape: Vec<usize> = order.iter().map(|&o| shape[o]).collect();
            let dst = Layout::row_major(&pshape)
                .unwrap()
                .permute(&inverse(&order))
                .unwrap();
            let (cs, cd) = coalesce_layouts(&src, &dst).unwrap();
            assert_eq!(pairs(&src, &dst), pairs(&cs, &cd), "{src} -> {dst}");
            assert!(cs.rank() <= rank);
        }
        fn inverse(p: &[usize]) -> Vec<usize> {
            let mut q = vec![0; p.len()];
            for (i, &x) in p.iter().enumerate() {
                q[x] = i;
            }
            q
        }
    }

    #[test]
    fn coalesce_layouts_finds_the_transpose_and_the_batched_rows() {
        let src = Layout::row_major(&[16384, 16384]).unwrap();
        let (s, d) = coalesce_layouts(
            &src.permute(&[1, 0]).unwrap(),
            &Layout::row_major(&[16384, 16384]).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (s.to_string(), d.to_string()),
            (
                "(16384,16384):(1,16384)".into(),
                "(16384,16384):(16384,1)".into()
            )
        );
        // NCHW -> NHWC
        let nchw = Layout::row_major(&[64, 3, 224, 224]).unwrap();
        let (s, d) = coalesce_layouts(
            &nchw.permute(&[0, 2, 3, 1]).unwrap(),
            &Layout::row_major(&[64, 224, 224, 3]).unwrap(),
        )
        .unwrap();
        assert_eq!(s.to_string(), "(64,50176,3):(150528,1,50176)");
        assert_eq!(d.to_string(), "(64,50176,3):(150528,3,1)");
        assert!(coalesce_layouts(&l("(2,3):(3,1)"), &l("(3,2):(2,1)")).is_err());
    }

    #[test]
    fn injectivity_refuses_overlapping_and_broadcast_modes() {
        assert!(l("(4,5):(6,1)").is_injective());
        assert!(l("(4,5):(1,4)").is_injective());
        assert!(!l("(4,5):(4,1)").is_injective());
        assert!(!l("(4,5):(0,1)").is_injective());
        assert!(l("(1,5):(0,1)").is_injective());
    }

    #[test]
    fn permute_rejects_non_permutations() {
        let x = l("(2,3,4):(12,4,1)");
        assert_eq!(x.permute(&[2, 0, 1]).unwrap(), l("(4,2,3):(1,12,4)"));
        assert!(x.permute(&[0, 0, 1]).is_err());
        assert!(x.permute(&[0, 1]).is_err());
        assert!(x.permute(&[0, 1, 3]).is_err());
    }
}
