//! Device matrices and views: row-major, a leading dimension per matrix, buffers owned by cudarc.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::error::{Error, Result};
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
        return Err(Error::Shape(format!(
            "leading dimension {ld} is smaller than cols {cols} (or zero)"
        )));
    }
    Ok(())
}

/// A row-major matrix in device memory: `rows × cols` elements, row `r` starting at `r * ld`.
/// Owns its cudarc buffer (`rows * ld` elements), which holds the stream it was allocated on.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// let stream = cute_copy::stream(0)?;
/// let host: Vec<f32> = (0..4 * 6).map(|i| i as f32).collect();
/// let m = cute_copy::DeviceMatrix::from_host(&stream, 4, 5, 6, &host)?; // 4x5, ld 6
/// let inner = m.view().sub(1, 1, 2, 3)?; // rows 1..3, cols 1..4
/// assert_eq!(inner.geometry().offset, 7);
/// assert_eq!(m.to_host(&stream)?, host);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DeviceMatrix<T: Element> {
    data: CudaSlice<T>,
    rows: usize,
    cols: usize,
    ld: usize,
}

impl<T: Element> DeviceMatrix<T> {
    /// A zero-filled matrix. `ld` must be at least `cols` (and not zero).
    pub fn zeros(stream: &Arc<CudaStream>, rows: usize, cols: usize, ld: usize) -> Result<Self> {
        check_ld(cols, ld)?;
        let len = rows
            .checked_mul(ld)
            .ok_or_else(|| Error::Overflow(format!("{rows} x ld {ld}")))?;
        let data = stream.alloc_zeros::<T>(len.max(1))?;
        Ok(DeviceMatrix {
            data,
            rows,
            cols,
            ld,
        })
    }

    /// Upload `host`, which holds the whole allocation: `rows * ld` elements, row-major.
    pub fn from_host(
        stream: &Arc<CudaStream>,
        rows: usize,
        cols: usize,
        ld: usize,
        host: &[T],
    ) -> Result<Self> {
        check_ld(cols, ld)?;
        let len = rows
            .checked_mul(ld)
            .ok_or_else(|| Error::Overflow(format!("{rows} x ld {ld}")))?;
        if host.len() != len {
            return Err(Error::Shape(format!(
                "host data has {} elements, {rows} x ld {ld} needs {len}",
                host.len()
            )));
        }
        let data = if len == 0 {
            stream.alloc_zeros::<T>(1)?
        } else {
            stream.clone_htod(host)?
        };
        Ok(DeviceMatrix {
            data,
            rows,
            cols,
            ld,
        })
    }

    /// Download the whole allocation (`rows * ld` elements), waiting for the stream.
    pub fn to_host(&self, stream: &Arc<CudaStream>) -> Result<Vec<T>> {
        let mut v = stream.clone_dtoh(&self.data)?;
        stream.synchronize()?;
        v.truncate(self.rows * self.ld);
        Ok(v)
    }

    /// Overwrite the whole allocation from `host` (`rows * ld` elements).
    pub fn upload(&mut self, stream: &Arc<CudaStream>, host: &[T]) -> Result<()> {
        if host.len() != self.rows * self.ld {
            return Err(Error::Shape(format!(
                "host data has {} elements, the matrix holds {}",
                host.len(),
                self.rows * self.ld
            )));
        }
        if !host.is_empty() {
            stream.memcpy_htod(host, &mut self.data)?;
        }
        Ok(())
    }

    /// Rows of the view.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns of the view.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Leading dimension of the view, in elements.
    pub fn ld(&self) -> usize {
        self.ld
    }
    /// The cudarc buffer behind the matrix.
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.data
    }

    /// The whole matrix as a shared view.
    pub fn view(&self) -> MatrixView<'_, T> {
        let geo = Geometry {
            offset: 0,
            rows: self.rows,
            cols: self.cols,
            ld: self.ld,
            len: self.data.len(),
        };
        MatrixView {
            mem: Mem::Slice(&self.data),
            geo,
        }
    }

    /// A view of the same allocation with another shape: element (0, 0) at `offset` elements from
    /// the allocation's start, `rows × cols`, leading dimension `ld`; checked against the
    /// allocation. Reaches offsets a [`MatrixView::sub`] cannot (any element offset).
    pub fn view_at(
        &self,
        offset: usize,
        rows: usize,
        cols: usize,
        ld: usize,
    ) -> Result<MatrixView<'_, T>> {
        let geo = Geometry {
            offset,
            rows,
            cols,
            ld,
            len: self.data.len(),
        };
        geo.check_extent()?;
        Ok(MatrixView {
            mem: Mem::Slice(&self.data),
            geo,
        })
    }

    /// The mutable form of [`DeviceMatrix::view_at`].
    pub fn view_at_mut(
        &mut self,
        offset: usize,
        rows: usize,
        cols: usize,
        ld: usize,
    ) -> Result<MatrixViewMut<'_, T>> {
        let geo = Geometry {
            offset,
            rows,
            cols,
            ld,
            len: self.data.len(),
        };
        geo.check_extent()?;
        Ok(MatrixViewMut {
            mem: MemMut::Slice(&mut self.data),
            geo,
        })
    }

    /// The whole matrix as a mutable view.
    pub fn view_mut(&mut self) -> MatrixViewMut<'_, T> {
        let geo = Geometry {
            offset: 0,
            rows: self.rows,
            cols: self.cols,
            ld: self.ld,
            len: self.data.len(),
        };
        MatrixViewMut {
            mem: MemMut::Slice(&mut self.data),
            geo,
        }
    }
}

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
}

/// Where a view sits in its allocation: element (0, 0) at `offset`, `rows × cols`, leading
/// dimension `ld`, in an allocation of `len` elements.
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
    fn new(len: usize, rows: usize, cols: usize, ld: usize) -> Result<Self> {
        let g = Geometry {
            offset: 0,
            rows,
            cols,
            ld,
            len,
        };
        g.check_extent()?;
        Ok(g)
    }

    /// The view lies inside its allocation and its leading dimension covers its columns.
    pub(crate) fn check_extent(&self) -> Result<()> {
        check_ld(self.cols, self.ld)?;
        let needed = span(self.rows, self.cols, self.ld)?;
        let end = self
            .offset
            .checked_add(needed)
            .ok_or_else(|| Error::Overflow("view offset".into()))?;
        if end > self.len {
            return Err(Error::OutOfBounds {
                offset: self.offset,
                needed,
                len: self.len,
            });
        }
        Ok(())
    }

    fn sub(&self, row: usize, col: usize, rows: usize, cols: usize) -> Result<Self> {
        let fits = row.checked_add(rows).is_some_and(|r| r <= self.rows)
            && col.checked_add(cols).is_some_and(|c| c <= self.cols);
        if !fits {
            return Err(Error::Shape(format!(
                "sub-matrix ({row}, {col}) + {rows} x {cols} does not fit in {} x {}",
                self.rows, self.cols
            )));
        }
        let offset = row
            .checked_mul(self.ld)
            .and_then(|x| x.checked_add(col))
            .and_then(|x| x.checked_add(self.offset))
            .ok_or_else(|| Error::Overflow("sub-matrix offset".into()))?;
        Ok(Geometry {
            offset,
            rows,
            cols,
            ..*self
        })
    }
}

/// A shared view of a row-major device matrix: `rows × cols`, leading dimension `ld`, element
/// (0, 0) at `offset` elements into its allocation.
#[derive(Debug, Clone, Copy)]
pub struct MatrixView<'a, T> {
    mem: Mem<'a, T>,
    geo: Geometry,
}

/// A mutable view of a row-major device matrix.
#[derive(Debug)]
pub struct MatrixViewMut<'a, T> {
    mem: MemMut<'a, T>,
    geo: Geometry,
}

impl<'a, T: Element> MatrixView<'a, T> {
    /// A view over `len` elements of raw device memory at `ptr`, for interop with other libraries.
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
        Ok(MatrixView {
            mem: Mem::Raw(RawMem {
                ptr,
                ctx: stream.context(),
            }),
            geo: Geometry::new(len, rows, cols, ld)?,
        })
    }

    /// The `rows × cols` sub-matrix whose element (0, 0) is this view's element (row, col).
    pub fn sub(
        &self,
        row: usize,
        col: usize,
        rows: usize,
        cols: usize,
    ) -> Result<MatrixView<'a, T>> {
        Ok(MatrixView {
            mem: self.mem,
            geo: self.geo.sub(row, col, rows, cols)?,
        })
    }

    /// Rows of the view.
    pub fn rows(&self) -> usize {
        self.geo.rows
    }
    /// Columns of the view.
    pub fn cols(&self) -> usize {
        self.geo.cols
    }
    /// Leading dimension of the view, in elements.
    pub fn ld(&self) -> usize {
        self.geo.ld
    }
    /// Where the view sits in its allocation.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

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
        let off = (std::mem::size_of::<T>() * self.geo.offset) as u64;
        match self.mem {
            Mem::Slice(s) => {
                let (p, g) = s.device_ptr(stream);
                Pinned {
                    addr: p + off,
                    _guard: Some(g),
                }
            }
            Mem::Raw(r) => Pinned {
                addr: r.ptr + off,
                _guard: None,
            },
        }
    }
}

impl<'a, T: Element> MatrixViewMut<'a, T> {
    /// A mutable view over `len` elements of raw device memory at `ptr`, for interop.
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
        Ok(MatrixViewMut {
            mem: MemMut::Raw(RawMem {
                ptr,
                ctx: stream.context(),
            }),
            geo: Geometry::new(len, rows, cols, ld)?,
        })
    }

    /// The mutable `rows × cols` sub-matrix at this view's element (row, col).
    pub fn sub_mut(
        &mut self,
        row: usize,
        col: usize,
        rows: usize,
        cols: usize,
    ) -> Result<MatrixViewMut<'_, T>> {
        let geo = self.geo.sub(row, col, rows, cols)?;
        let mem = match &mut self.mem {
            MemMut::Slice(s) => MemMut::Slice(&mut **s),
            MemMut::Raw(r) => MemMut::Raw(*r),
        };
        Ok(MatrixViewMut { mem, geo })
    }

    /// Rows of the view.
    pub fn rows(&self) -> usize {
        self.geo.rows
    }
    /// Columns of the view.
    pub fn cols(&self) -> usize {
        self.geo.cols
    }
    /// Leading dimension of the view, in elements.
    pub fn ld(&self) -> usize {
        self.geo.ld
    }
    /// Where the view sits in its allocation.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

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
        let off = (std::mem::size_of::<T>() * self.geo.offset) as u64;
        match &mut self.mem {
            MemMut::Slice(s) => {
                let (p, g) = s.device_ptr_mut(stream);
                Pinned {
                    addr: p + off,
                    _guard: Some(g),
                }
            }
            MemMut::Raw(r) => Pinned {
                addr: r.ptr + off,
                _guard: None,
            },
        }
    }
}

/// An untyped view of device memory with a run-time [`DType`](crate::DType): for interop with code
/// whose element type is only known at run time. Copies between raw matrices check the dtypes.
#[derive(Debug, Clone, Copy)]
pub struct RawMatrix<'a> {
    mem: RawMem<'a>,
    dtype: crate::DType,
    geo: Geometry,
}

impl<'a> RawMatrix<'a> {
    /// A `rows × cols` view with leading dimension `ld` over `len` elements of `dtype` at `ptr`.
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `dtype` of live device memory in `stream`'s context,
    /// valid for `'a`; while a copy writes it, nobody else may read or write it.
    pub unsafe fn new(
        ptr: u64,
        len: usize,
        dtype: crate::DType,
        rows: usize,
        cols: usize,
        ld: usize,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        if ptr % dtype.size_bytes() as u64 != 0 {
            return Err(Error::Shape(format!(
                "address {ptr:#x} is not aligned to one {dtype} element"
            )));
        }
        Ok(RawMatrix {
            mem: RawMem {
                ptr,
                ctx: stream.context(),
            },
            dtype,
            geo: Geometry::new(len, rows, cols, ld)?,
        })
    }

    /// The `rows × cols` sub-matrix at this view's element (row, col).
    pub fn sub(&self, row: usize, col: usize, rows: usize, cols: usize) -> Result<RawMatrix<'a>> {
        Ok(RawMatrix {
            geo: self.geo.sub(row, col, rows, cols)?,
            ..*self
        })
    }

    /// The element type.
    pub fn dtype(&self) -> crate::DType {
        self.dtype
    }
    /// Where the view sits in its allocation.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }
    /// The allocation's address (element (0, 0) is `offset` elements after it).
    pub fn ptr(&self) -> u64 {
        self.mem.ptr
    }
    /// The context the memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        self.mem.ctx
    }
}
