//! Device tensors and the one family of views over them: a CuTe [`Layout`] of rank 1 to 6 at an
//! offset in a cudarc buffer or in raw device memory. A row-major matrix is the rank-2 case,
//! `(rows, cols):(ld, 1)`; [`DeviceMatrix`] and the matrix constructors are conveniences for it.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::Element;

/// Elements a row-major `rows × cols` matrix with leading dimension `ld` spans from its first
/// element to its last (0 when empty).
pub(crate) fn span(rows: usize, cols: usize, ld: usize) -> Result<usize> {
    if rows == 0 || cols == 0 {
        return Ok(0);
    }
    (rows - 1)
        .checked_mul(ld)
        .and_then(|x| x.checked_add(cols))
        .ok_or_else(|| Error::Overflow(format!("{rows} x {cols} with ld {ld}")))
}

fn check_ld(cols: usize, ld: usize) -> Result<()> {
    if ld < cols || ld == 0 {
        return Err(Error::LeadingDimension {
            what: "matrix",
            ld,
            cols,
        });
    }
    Ok(())
}

mod owned;

pub use owned::{DeviceMatrix, DeviceTensor};

/// Where a view's elements live.
#[derive(Debug, Clone, Copy)]
enum Mem<'a, T> {
    Slice(&'a CudaSlice<T>),
    Raw(RawMem<'a>),
}

#[derive(Debug)]
enum MemMut<'a, T> {
    Slice(&'a mut CudaSlice<T>),
    Raw(RawMem<'a>),
}

/// Device memory the caller vouched for (see the `from_raw` constructors).
#[derive(Debug, Clone, Copy)]
struct RawMem<'a> {
    ptr: u64,
    ctx: &'a Arc<CudaContext>,
}

/// The address a launch uses, with the cudarc guard that orders the buffer's other work around it.
pub(crate) struct Pinned<'a> {
    pub addr: u64,
    _guard: Option<SyncOnDrop<'a>>,
    /// For a cudarc buffer of another device than the launch's stream (a copy between devices):
    /// what orders the buffer's later work after the launch, run on drop (see `across`).
    after: Option<Box<dyn FnOnce() + 'a>>,
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        if let Some(after) = self.after.take() {
            after();
        }
    }
}

impl Pinned<'_> {
    fn raw(addr: u64) -> Self {
        Pinned {
            addr,
            _guard: None,
            after: None,
        }
    }
}

/// Pin a cudarc buffer of another device than `stream`'s, whose own stream is `home`, for a
/// launch on `stream`. `pin(on, record)` takes the buffer's cudarc guard on `on` (which makes `on`
/// wait for the buffer's pending work, as cudarc's events say) and drops it (`record`: the
/// buffer's event is recorded on `on`) or forgets it. cudarc records a buffer's event only on a
/// stream of the event's context, so the guard cannot be dropped on `stream`:
/// - where the buffer's context orders streams by events (cudarc's default once a context has a
///   stream of its own),
///   `stream` waits for the buffer's events themselves, and after the launch a stream of the
///   buffer's device set aside for this (`crate::peer::side_stream`) waits for the launch and
///   records the buffer's event: its later users wait for the copy, `home` is not held up;
/// - else `stream` waits for all of `home`'s work so far, and after the launch `home` waits for
///   the launch before the guard is taken and dropped there again.
fn across<'s>(
    home: Arc<CudaStream>,
    stream: &'s CudaStream,
    mut pin: impl FnMut(&CudaStream, bool) -> u64 + 's,
) -> Result<Pinned<'s>> {
    if home.context().is_managing_stream_synchronization() {
        let side = crate::peer::side_stream(home.context())?;
        let addr = pin(stream, false);
        return Ok(Pinned {
            addr,
            _guard: None,
            after: Some(Box::new(move || {
                crate::peer::join_back(&side, stream);
                pin(&side, true);
            })),
        });
    }
    let addr = pin(&home, true);
    crate::peer::wait_for(stream, &home)?;
    Ok(Pinned {
        addr,
        _guard: None,
        after: Some(Box::new(move || {
            crate::peer::join_back(&home, stream);
            pin(&home, true);
        })),
    })
}

/// `SyncOnDrop` kept (`record`: dropped, recording the buffer's event) or forgotten (the wait
/// it made stays, nothing is recorded).
fn settle(addr: u64, guard: SyncOnDrop<'_>, record: bool) -> u64 {
    if !record {
        std::mem::forget(guard);
    }
    addr
}

/// Where a row-major matrix view sits in its allocation: element (0, 0) at `offset`, `rows ×
/// cols`, leading dimension `ld`, in an allocation of `len` elements. The matrix reading of a view
/// whose layout is `(rows, cols):(ld, 1)` ([`TensorView::geometry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Offset of element (0, 0) in the allocation, in elements.
    pub offset: usize,
    /// Rows of the logical matrix.
    pub rows: usize,
    /// Columns of the logical matrix.
    pub cols: usize,
    /// Leading dimension: elements from one row start to the next.
    pub ld: usize,
    /// Elements in the allocation.
    pub len: usize,
}

impl Geometry {
    /// The view lies inside its allocation and its leading dimension covers its columns.
    /// The bytes this view's elements span (first to last, pitch gaps included), element
    /// (0, 0) at the device address `addr`: what the launch path checks overlap on.
    pub(crate) fn span_at(&self, addr: u64, elem_bytes: usize) -> Result<crate::launch::Span> {
        let bytes = span(self.rows, self.cols, self.ld)? as u64 * elem_bytes as u64;
        Ok(crate::launch::Span { addr, bytes })
    }

    pub(crate) fn check_extent(&self) -> Result<()> {
        check_ld(self.cols, self.ld)?;
        check_within(self.offset, span(self.rows, self.cols, self.ld)?, self.len)
    }
}

/// The one bounds check of every view: `needed` elements from `offset` fit in an allocation of
/// `len` elements.
fn check_within(offset: usize, needed: usize, len: usize) -> Result<()> {
    let end = offset
        .checked_add(needed)
        .ok_or_else(|| Error::Overflow("view offset".into()))?;
    if end > len {
        return Err(Error::OutOfBounds {
            offset,
            needed,
            len,
        });
    }
    Ok(())
}

/// A view's place in its allocation: coordinate 0 at `offset` elements, `layout`, in an allocation
/// of `len` elements. Every view type holds one; every check is made on it once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    pub offset: usize,
    pub layout: Layout,
    pub len: usize,
}

impl Place {
    fn new(offset: usize, layout: Layout, len: usize) -> Self {
        Place {
            offset,
            layout,
            len,
        }
    }

    /// A place whose every element lies inside the allocation.
    fn checked(offset: usize, layout: Layout, len: usize) -> Result<Self> {
        let p = Place::new(offset, layout, len);
        p.check()?;
        Ok(p)
    }

    /// A checked matrix place: `ld >= cols`, every element inside the allocation.
    fn matrix(offset: usize, rows: usize, cols: usize, ld: usize, len: usize) -> Result<Self> {
        check_ld(cols, ld)?;
        Place::checked(offset, Layout::matrix(rows, cols, ld)?, len)
    }

    /// Every element lies inside the allocation.
    pub(crate) fn check(&self) -> Result<()> {
        check_within(self.offset, self.layout.cosize()?, self.len)
    }

    /// The matrix reading: rank 2 `(rows, cols):(ld, 1)` with `ld >= cols` (or rank 1 `(n):(1)`).
    fn geometry(&self, what: &'static str) -> Result<Geometry> {
        let (rows, cols, ld) = self.layout.as_matrix().ok_or_else(|| Error::NotAMatrix {
            layout: self.layout.to_string(),
            what,
        })?;
        Ok(Geometry {
            offset: self.offset,
            rows,
            cols,
            ld,
            len: self.len,
        })
    }

    fn sub(&self, row: usize, col: usize, rows: usize, cols: usize) -> Result<Self> {
        if self.layout.rank() != 2 {
            return Err(Error::NotAMatrix {
                layout: self.layout.to_string(),
                what: "sub-matrix",
            });
        }
        self.slice(&[row, col], &[rows, cols])
    }

    fn slice(&self, start: &[usize], shape: &[usize]) -> Result<Self> {
        let l = &self.layout;
        let refuse = || Error::DoesNotFit {
            start: start.to_vec(),
            shape: shape.to_vec(),
            extent: l.shape().to_vec(),
        };
        if start.len() != l.rank() || shape.len() != l.rank() {
            return Err(refuse());
        }
        let mut offset = self.offset;
        for m in 0..l.rank() {
            let fits = start[m]
                .checked_add(shape[m])
                .is_some_and(|e| e <= l.shape()[m]);
            if !fits {
                return Err(refuse());
            }
            if shape[m] > 0 {
                offset = start[m]
                    .checked_mul(l.stride()[m])
                    .and_then(|x| x.checked_add(offset))
                    .ok_or_else(|| Error::Overflow("slice offset".into()))?;
            }
        }
        Ok(Place::new(
            offset,
            Layout::new(shape, l.stride())?,
            self.len,
        ))
    }

    fn permute(&self, order: &[usize]) -> Result<Self> {
        Ok(Place::new(
            self.offset,
            self.layout.permute(order)?,
            self.len,
        ))
    }

    fn relayout(&self, layout: Layout) -> Result<Self> {
        Place::checked(self.offset, layout, self.len)
    }
}

/// A shared view of device memory: a [`Layout`] of rank 1 to 6 whose coordinate 0 sits `offset`
/// elements into its allocation. [`MatrixView`] is the same type, read as a row-major matrix.
#[derive(Debug, Clone, Copy)]
pub struct TensorView<'a, T> {
    mem: Mem<'a, T>,
    place: Place,
}

/// A mutable view of device memory (see [`TensorView`]). [`MatrixViewMut`] is the same type.
#[derive(Debug)]
pub struct TensorViewMut<'a, T> {
    mem: MemMut<'a, T>,
    place: Place,
}

/// The matrix name of [`TensorView`]: a view whose layout is `(rows, cols):(ld, 1)`.
pub type MatrixView<'a, T> = TensorView<'a, T>;
/// The matrix name of [`TensorViewMut`].
pub type MatrixViewMut<'a, T> = TensorViewMut<'a, T>;
/// The matrix name of [`RawTensor`].
pub type RawMatrix<'a> = RawTensor<'a>;

/// Accessors every view type shares, read off its `Place`.
macro_rules! place_accessors {
    () => {
        /// The view's layout (CuTe's `shape:stride`, in elements).
        pub fn layout(&self) -> Layout {
            self.place.layout
        }
        /// Offset of coordinate 0 in the allocation, in elements.
        pub fn offset(&self) -> usize {
            self.place.offset
        }
        /// Elements in the allocation the view lies in.
        pub fn alloc_len(&self) -> usize {
            self.place.len
        }
        /// Rows of the matrix reading: mode 0 of a rank-2 view, 1 for rank 1 (for other ranks,
        /// the extent of mode 0).
        pub fn rows(&self) -> usize {
            let l = &self.place.layout;
            if l.rank() == 1 {
                1
            } else {
                l.shape()[0]
            }
        }
        /// Columns of the matrix reading: the extent of the last mode.
        pub fn cols(&self) -> usize {
            let l = &self.place.layout;
            l.shape()[l.rank() - 1]
        }
        /// Leading dimension of the matrix reading: the stride of mode 0 (the columns for rank 1).
        pub fn ld(&self) -> usize {
            let l = &self.place.layout;
            if l.rank() == 1 {
                l.shape()[0].max(1)
            } else {
                l.stride()[0]
            }
        }
        /// The view as a row-major matrix, or [`Error::NotAMatrix`] when its layout is not
        /// `(rows, cols):(ld, 1)` with `ld >= cols` (or `(n):(1)`, a 1 x n matrix).
        pub fn geometry(&self) -> Result<Geometry> {
            self.place.geometry("matrix view")
        }
        pub(crate) fn place(&self) -> Place {
            self.place
        }
    };
}

impl<'a, T: Element> TensorView<'a, T> {
    /// A row-major `rows × cols` view with leading dimension `ld` over `len` elements of raw
    /// device memory at `ptr`, for interop with other libraries.
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `T` of live device memory in `stream`'s context, valid
    /// for `'a` and not written by anyone while a copy that reads it may run.
    pub unsafe fn from_raw(
        ptr: u64,
        len: usize,
        rows: usize,
        cols: usize,
        ld: usize,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        check_ld(cols, ld)?;
        // SAFETY: forwarded: the caller's contract is the same.
        unsafe { Self::from_raw_layout(ptr, len, 0, Layout::matrix(rows, cols, ld)?, stream) }
    }

    /// A view of `layout` at `offset` elements into `len` elements of raw device memory at `ptr`.
    ///
    /// # Safety
    /// As for [`TensorView::from_raw`].
    pub unsafe fn from_raw_layout(
        ptr: u64,
        len: usize,
        offset: usize,
        layout: Layout,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        let place = Place::checked(offset, layout, len)?;
        Ok(TensorView {
            mem: Mem::Raw(RawMem {
                ptr,
                ctx: stream.context(),
            }),
            place,
        })
    }

    /// The `rows × cols` sub-matrix whose element (0, 0) is this rank-2 view's element (row, col).
    pub fn sub(
        &self,
        row: usize,
        col: usize,
        rows: usize,
        cols: usize,
    ) -> Result<TensorView<'a, T>> {
        Ok(TensorView {
            mem: self.mem,
            place: self.place.sub(row, col, rows, cols)?,
        })
    }

    /// The sub-tensor of extent `shape` whose coordinate 0 is this view's coordinate `start`
    /// (CuTe: `domain_offset` then a smaller shape, same strides).
    pub fn slice(&self, start: &[usize], shape: &[usize]) -> Result<TensorView<'a, T>> {
        Ok(TensorView {
            mem: self.mem,
            place: self.place.slice(start, shape)?,
        })
    }

    /// The same elements with modes reordered: mode `i` of the result is mode `order[i]` of this
    /// view (torch's `permute`; `permute(&[1, 0])` of a matrix is its transpose).
    pub fn permute(&self, order: &[usize]) -> Result<TensorView<'a, T>> {
        Ok(TensorView {
            mem: self.mem,
            place: self.place.permute(order)?,
        })
    }

    /// The same memory from the same coordinate-0 element, seen through another layout (CuTe's
    /// `make_tensor(engine, layout)`); checked against the allocation.
    pub fn relayout(&self, layout: Layout) -> Result<TensorView<'a, T>> {
        Ok(TensorView {
            mem: self.mem,
            place: self.place.relayout(layout)?,
        })
    }

    place_accessors!();

    /// The context the memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        match &self.mem {
            Mem::Slice(s) => s.context(),
            Mem::Raw(r) => r.ctx,
        }
    }

    /// Device address of the allocation's start (0 for cudarc buffers, whose address is only handed
    /// out with a stream guard; they are 256-byte aligned, which is all the planner needs).
    pub(crate) fn alloc_base(&self) -> u64 {
        match self.mem {
            Mem::Slice(_) => 0,
            Mem::Raw(r) => r.ptr,
        }
    }

    pub(crate) fn pin<'s>(&'s self, stream: &'s CudaStream) -> Pinned<'s> {
        let off = (std::mem::size_of::<T>() * self.place.offset) as u64;
        match self.mem {
            Mem::Slice(s) => {
                let (p, g) = s.device_ptr(stream);
                Pinned {
                    addr: p + off,
                    _guard: Some(g),
                    after: None,
                }
            }
            Mem::Raw(r) => Pinned::raw(r.ptr + off),
        }
    }

    /// [`TensorView::pin`] for a launch on a stream of this device or another (a copy between
    /// devices, ordered as `across` says). Raw memory of another device is the caller's to order
    /// (the `from_raw` contract).
    pub(crate) fn pin_on<'s>(&'s self, stream: &'s CudaStream) -> Result<Pinned<'s>> {
        match self.mem {
            Mem::Slice(s) if s.context() != stream.context() => {
                let off = (std::mem::size_of::<T>() * self.place.offset) as u64;
                let pin = move |on: &CudaStream, record| {
                    let (addr, guard) = s.device_ptr(on);
                    settle(addr, guard, record)
                };
                let mut p = across(s.stream().clone(), stream, pin)?;
                p.addr += off;
                Ok(p)
            }
            _ => Ok(self.pin(stream)),
        }
    }
}

impl<'a, T: Element> TensorViewMut<'a, T> {
    /// A mutable row-major matrix view over `len` elements of raw device memory at `ptr`.
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `T` of live device memory in `stream`'s context, valid
    /// for `'a`, and nobody else may read or write it while a copy into it may run.
    pub unsafe fn from_raw(
        ptr: u64,
        len: usize,
        rows: usize,
        cols: usize,
        ld: usize,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        check_ld(cols, ld)?;
        // SAFETY: forwarded: the caller's contract is the same.
        unsafe { Self::from_raw_layout(ptr, len, 0, Layout::matrix(rows, cols, ld)?, stream) }
    }

    /// A mutable view of `layout` at `offset` elements into `len` elements at `ptr`.
    ///
    /// # Safety
    /// As for [`TensorViewMut::from_raw`].
    pub unsafe fn from_raw_layout(
        ptr: u64,
        len: usize,
        offset: usize,
        layout: Layout,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        let place = Place::checked(offset, layout, len)?;
        Ok(TensorViewMut {
            mem: MemMut::Raw(RawMem {
                ptr,
                ctx: stream.context(),
            }),
            place,
        })
    }

    fn reborrow(&mut self, place: Place) -> TensorViewMut<'_, T> {
        let mem = match &mut self.mem {
            MemMut::Slice(s) => MemMut::Slice(&mut **s),
            MemMut::Raw(r) => MemMut::Raw(*r),
        };
        TensorViewMut { mem, place }
    }

    /// The mutable `rows × cols` sub-matrix at this rank-2 view's element (row, col).
    pub fn sub_mut(
        &mut self,
        row: usize,
        col: usize,
        rows: usize,
        cols: usize,
    ) -> Result<TensorViewMut<'_, T>> {
        let place = self.place.sub(row, col, rows, cols)?;
        Ok(self.reborrow(place))
    }

    /// The mutable sub-tensor of extent `shape` at coordinate `start` (see [`TensorView::slice`]).
    pub fn slice_mut(&mut self, start: &[usize], shape: &[usize]) -> Result<TensorViewMut<'_, T>> {
        let place = self.place.slice(start, shape)?;
        Ok(self.reborrow(place))
    }

    /// The same elements with modes reordered (see [`TensorView::permute`]).
    pub fn permute_mut(&mut self, order: &[usize]) -> Result<TensorViewMut<'_, T>> {
        let place = self.place.permute(order)?;
        Ok(self.reborrow(place))
    }

    /// The same memory seen through another layout (see [`TensorView::relayout`]).
    pub fn relayout_mut(&mut self, layout: Layout) -> Result<TensorViewMut<'_, T>> {
        let place = self.place.relayout(layout)?;
        Ok(self.reborrow(place))
    }

    /// [`TensorViewMut::sub_mut`] that consumes the view, so the result keeps its lifetime `'a`
    /// (a helper can return it). The `into_*` forms are the same transforms, by value.
    pub fn into_sub(self, row: usize, col: usize, rows: usize, cols: usize) -> Result<Self> {
        let place = self.place.sub(row, col, rows, cols)?;
        Ok(TensorViewMut { place, ..self })
    }

    /// [`TensorViewMut::slice_mut`], consuming the view.
    pub fn into_slice(self, start: &[usize], shape: &[usize]) -> Result<Self> {
        let place = self.place.slice(start, shape)?;
        Ok(TensorViewMut { place, ..self })
    }

    /// [`TensorViewMut::permute_mut`], consuming the view.
    pub fn into_permute(self, order: &[usize]) -> Result<Self> {
        let place = self.place.permute(order)?;
        Ok(TensorViewMut { place, ..self })
    }

    /// [`TensorViewMut::relayout_mut`], consuming the view.
    pub fn into_relayout(self, layout: Layout) -> Result<Self> {
        let place = self.place.relayout(layout)?;
        Ok(TensorViewMut { place, ..self })
    }

    place_accessors!();

    /// The context the memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        match &self.mem {
            MemMut::Slice(s) => s.context(),
            MemMut::Raw(r) => r.ctx,
        }
    }

    pub(crate) fn alloc_base(&self) -> u64 {
        match &self.mem {
            MemMut::Slice(_) => 0,
            MemMut::Raw(r) => r.ptr,
        }
    }

    pub(crate) fn pin<'s>(&'s mut self, stream: &'s CudaStream) -> Pinned<'s> {
        let off = (std::mem::size_of::<T>() * self.place.offset) as u64;
        match &mut self.mem {
            MemMut::Slice(s) => {
                let (p, g) = s.device_ptr_mut(stream);
                Pinned {
                    addr: p + off,
                    _guard: Some(g),
                    after: None,
                }
            }
            MemMut::Raw(r) => Pinned::raw(r.ptr + off),
        }
    }

    /// [`TensorViewMut::pin`] for a launch on a stream of this device or another (see
    /// [`TensorView::pin_on`]).
    pub(crate) fn pin_on<'s>(&'s mut self, stream: &'s CudaStream) -> Result<Pinned<'s>> {
        let foreign = matches!(&self.mem, MemMut::Slice(s) if s.context() != stream.context());
        if !foreign {
            return Ok(self.pin(stream));
        }
        let off = (std::mem::size_of::<T>() * self.place.offset) as u64;
        let MemMut::Slice(s) = &mut self.mem else {
            unreachable!("a cudarc buffer")
        };
        let home = s.stream().clone();
        let pin = move |on: &CudaStream, record| {
            let (addr, guard) = s.device_ptr_mut(on);
            settle(addr, guard, record)
        };
        let mut p = across(home, stream, pin)?;
        p.addr += off;
        Ok(p)
    }
}

/// An untyped view of device memory with a run-time [`DType`](crate::DType): for interop with code
/// whose element type is only known at run time. Copies between raw views check the dtypes.
/// [`RawMatrix`] is the same type.
#[derive(Debug, Clone, Copy)]
pub struct RawTensor<'a> {
    mem: RawMem<'a>,
    dtype: crate::DType,
    place: Place,
}

impl<'a> RawTensor<'a> {
    /// A `rows × cols` row-major view with leading dimension `ld` over `len` elements of `dtype`
    /// at `ptr`.
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `dtype` of live device memory in `stream`'s context,
    /// valid for `'a`; while a copy writes it, nobody else may read or write it.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn new(
        ptr: u64,
        len: usize,
        dtype: crate::DType,
        rows: usize,
        cols: usize,
        ld: usize,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        check_ld(cols, ld)?;
        // SAFETY: forwarded: the caller's contract is the same.
        unsafe { Self::with_layout(ptr, len, dtype, 0, Layout::matrix(rows, cols, ld)?, stream) }
    }

    /// A view of `layout` at `offset` elements into `len` elements of `dtype` at `ptr`.
    ///
    /// # Safety
    /// As for [`RawTensor::new`].
    pub unsafe fn with_layout(
        ptr: u64,
        len: usize,
        dtype: crate::DType,
        offset: usize,
        layout: Layout,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        if ptr % dtype.size_bytes() as u64 != 0 {
            return Err(Error::UnalignedAddress { ptr, dtype });
        }
        let place = Place::checked(offset, layout, len)?;
        Ok(RawTensor {
            mem: RawMem {
                ptr,
                ctx: stream.context(),
            },
            dtype,
            place,
        })
    }

    /// The `rows × cols` sub-matrix at this rank-2 view's element (row, col).
    pub fn sub(&self, row: usize, col: usize, rows: usize, cols: usize) -> Result<RawTensor<'a>> {
        Ok(RawTensor {
            place: self.place.sub(row, col, rows, cols)?,
            ..*self
        })
    }

    /// The sub-tensor of extent `shape` at coordinate `start`.
    pub fn slice(&self, start: &[usize], shape: &[usize]) -> Result<RawTensor<'a>> {
        Ok(RawTensor {
            place: self.place.slice(start, shape)?,
            ..*self
        })
    }

    /// The same elements with modes reordered.
    pub fn permute(&self, order: &[usize]) -> Result<RawTensor<'a>> {
        Ok(RawTensor {
            place: self.place.permute(order)?,
            ..*self
        })
    }

    /// The same memory seen through another layout.
    pub fn relayout(&self, layout: Layout) -> Result<RawTensor<'a>> {
        Ok(RawTensor {
            place: self.place.relayout(layout)?,
            ..*self
        })
    }

    place_accessors!();

    /// The element type.
    pub fn dtype(&self) -> crate::DType {
        self.dtype
    }
    /// The allocation's address (coordinate 0 is `offset` elements after it).
    pub fn ptr(&self) -> u64 {
        self.mem.ptr
    }
    /// The context the memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        self.mem.ctx
    }
}
