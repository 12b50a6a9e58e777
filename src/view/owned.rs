//! The owned device buffers: [`DeviceMatrix`] (row-major, the rank-2 case) and [`DeviceTensor`]
//! (any [`Layout`]), each a cudarc buffer plus the layout its views start from.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::*;

/// A row-major matrix in device memory: `rows × cols` elements, row `r` starting at `r * ld`.
/// Owns its cudarc buffer (`rows * ld` elements), which holds the stream it was allocated on.
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// let stream = cute_copy::stream(0)?;
/// let host: Vec<f32> = (0..4 * 6).map(|i| i as f32).collect();
/// let m = cute_copy::DeviceMatrix::from_host(&stream, 4, 5, 6, &host)?; // 4x5, ld 6
/// let inner = m.view().sub(1, 1, 2, 3)?; // rows 1..3, cols 1..4
/// assert_eq!(inner.geometry()?.offset, 7);
/// assert_eq!(m.to_host(&stream)?, host);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DeviceMatrix<T: Element> {
    data: CudaSlice<T>,
    rows: usize,
    cols: usize,
    ld: usize,
    layout: Layout,
}

impl<T: Element> DeviceMatrix<T> {
    /// A zero-filled matrix. `ld` must be at least `cols` (and not zero).
    pub fn zeros(stream: &Arc<CudaStream>, rows: usize, cols: usize, ld: usize) -> Result<Self> {
        check_ld(cols, ld)?;
        let len = rows
            .checked_mul(ld)
            .ok_or_else(|| Error::Overflow(format!("{rows} x ld {ld}")))?;
        let layout = Layout::matrix(rows, cols, ld)?;
        let data = stream.alloc_zeros::<T>(len.max(1))?;
        Ok(DeviceMatrix {
            data,
            rows,
            cols,
            ld,
            layout,
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
            return Err(Error::HostLength {
                what: format!("{rows} x ld {ld}"),
                got: host.len(),
                expected: len,
            });
        }
        let layout = Layout::matrix(rows, cols, ld)?;
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
            layout,
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
            return Err(Error::HostLength {
                what: "the matrix".into(),
                got: host.len(),
                expected: self.rows * self.ld,
            });
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
        TensorView {
            mem: Mem::Slice(&self.data),
            place: Place::new(0, self.layout, self.data.len()),
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
        let place = Place::matrix(offset, rows, cols, ld, self.data.len())?;
        Ok(TensorView {
            mem: Mem::Slice(&self.data),
            place,
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
        let place = Place::matrix(offset, rows, cols, ld, self.data.len())?;
        Ok(TensorViewMut {
            mem: MemMut::Slice(&mut self.data),
            place,
        })
    }

    /// The whole matrix as a mutable view.
    pub fn view_mut(&mut self) -> MatrixViewMut<'_, T> {
        TensorViewMut {
            place: Place::new(0, self.layout, self.data.len()),
            mem: MemMut::Slice(&mut self.data),
        }
    }
}

/// A device tensor: a cudarc buffer holding every element a [`Layout`] of any rank (1 to 6) maps
/// to (`cosize` elements), and the layout. Views of it are [`TensorView`] / [`TensorViewMut`].
///
/// ```no_run
/// # fn main() -> Result<(), cute_copy::Error> {
/// use cute_copy::{DeviceTensor, Layout};
/// let stream = cute_copy::stream(0)?;
/// let x = DeviceTensor::<half::f16>::zeros(&stream, Layout::row_major(&[8, 32, 4096, 128])?)?;
/// let xt = x.view().permute(&[0, 2, 1, 3])?; // [B,H,S,D] seen as [B,S,H,D]
/// assert_eq!(xt.layout().to_string(), "(8,4096,32,128):(16777216,128,524288,1)");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DeviceTensor<T: Element> {
    data: CudaSlice<T>,
    layout: Layout,
}

impl<T: Element> DeviceTensor<T> {
    /// A zero-filled tensor of `layout` (its `cosize` elements are allocated).
    pub fn zeros(stream: &Arc<CudaStream>, layout: Layout) -> Result<Self> {
        let data = stream.alloc_zeros::<T>(layout.cosize()?.max(1))?;
        Ok(DeviceTensor { data, layout })
    }

    /// Upload `host`, the whole allocation: `layout.cosize()` elements, element `i` at offset `i`.
    pub fn from_host(stream: &Arc<CudaStream>, layout: Layout, host: &[T]) -> Result<Self> {
        let len = layout.cosize()?;
        if host.len() != len {
            return Err(Error::HostLength {
                what: format!("{layout}"),
                got: host.len(),
                expected: len,
            });
        }
        let data = if len == 0 {
            stream.alloc_zeros::<T>(1)?
        } else {
            stream.clone_htod(host)?
        };
        Ok(DeviceTensor { data, layout })
    }

    /// Download the whole allocation (`cosize` elements), waiting for the stream.
    pub fn to_host(&self, stream: &Arc<CudaStream>) -> Result<Vec<T>> {
        let mut v = stream.clone_dtoh(&self.data)?;
        stream.synchronize()?;
        v.truncate(self.layout.cosize()?);
        Ok(v)
    }

    /// The layout of the whole tensor.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// The cudarc buffer behind the tensor.
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.data
    }
    /// The whole tensor as a shared view.
    pub fn view(&self) -> TensorView<'_, T> {
        TensorView {
            mem: Mem::Slice(&self.data),
            place: Place::new(0, self.layout, self.data.len()),
        }
    }
    /// The whole tensor as a mutable view.
    pub fn view_mut(&mut self) -> TensorViewMut<'_, T> {
        TensorViewMut {
            place: Place::new(0, self.layout, self.data.len()),
            mem: MemMut::Slice(&mut self.data),
        }
    }

    /// A view of the same allocation through `layout`, its coordinate 0 at `offset` elements from
    /// the allocation's start; every element checked to lie inside the allocation. Places any
    /// layout inside a larger buffer (a head of a packed QKV tensor, an image in a batch).
    pub fn view_at(&self, offset: usize, layout: Layout) -> Result<TensorView<'_, T>> {
        let place = Place::checked(offset, layout, self.data.len())?;
        Ok(TensorView {
            mem: Mem::Slice(&self.data),
            place,
        })
    }

    /// The mutable form of [`DeviceTensor::view_at`].
    pub fn view_at_mut(&mut self, offset: usize, layout: Layout) -> Result<TensorViewMut<'_, T>> {
        let place = Place::checked(offset, layout, self.data.len())?;
        Ok(TensorViewMut {
            mem: MemMut::Slice(&mut self.data),
            place,
        })
    }
}
