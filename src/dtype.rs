//! Element types. A copy moves bytes: the kernels are instantiated per element *width*, so the
//! dtype matters to the user, to the planner's alignment rules and to the host reference.

use std::fmt;

use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};

/// The element types the crate copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float (`f32`).
    F32,
    /// 64-bit IEEE float (`f64`).
    F64,
    /// 16-bit IEEE half (`half::f16`).
    F16,
    /// 16-bit brain float (`half::bf16`).
    BF16,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// 8-bit float, OCP E4M3 (`float8::F8E4M3`, torch's `float8_e4m3fn`): no infinities, max 448.
    F8E4M3,
    /// 8-bit float, OCP E5M2 (`float8::F8E5M2`, torch's `float8_e5m2`): max 57344.
    F8E5M2,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 14] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F8E4M3,
        DType::F8E5M2,
    ];

    /// Bytes per element: the width whose kernels this dtype runs.
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::U8 | DType::I8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::F16 | DType::BF16 | DType::U16 | DType::I16 => 2,
            DType::F32 | DType::U32 | DType::I32 => 4,
            DType::F64 | DType::U64 | DType::I64 => 8,
        }
    }

    /// The lower-case name used by the CLI (`f16`, `bf16`, `u8`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U16 => "u16",
            DType::I16 => "i16",
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::U64 => "u64",
            DType::I64 => "i64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
        }
    }

    /// A floating-point type (f64, f32, f16, bf16 or an FP8 format).
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2
        )
    }

    /// A signed type (every float, and the signed integers).
    pub const fn is_signed(self) -> bool {
        self.is_float() || matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// Parse a CLI name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust element type the crate can copy, with its [`DType`].
///
/// Sealed: implemented for `f32, f64, f16, bf16, u8, i8, u16, i16, u32, i32, u64, i64` and the
/// FP8 types `float8::F8E4M3`, `float8::F8E5M2`.
pub trait Element:
    cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + Copy
    + Default
    + fmt::Debug
    + Send
    + Sync
    + Unpin
    + 'static
    + sealed::Sealed
{
    /// This type's dtype.
    const DTYPE: DType;
    /// The element with these low bits (truncated to the width): random data and poison values
    /// for tests are made from random `u64`s this way.
    fn from_bits(bits: u64) -> Self;
    /// The element's bits, zero-extended: copies are compared bit for bit (NaNs included).
    fn to_bits(self) -> u64;
}

macro_rules! element {
    ($($t:ty => $d:ident, $from:expr, $to:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn from_bits(bits: u64) -> Self {
                ($from)(bits)
            }
            fn to_bits(self) -> u64 {
                ($to)(self)
            }
        }
    )*};
}

element! {
    f32 => F32, |b: u64| f32::from_bits(b as u32), |x: f32| x.to_bits() as u64;
    f64 => F64, f64::from_bits, f64::to_bits;
    f16 => F16, |b: u64| f16::from_bits(b as u16), |x: f16| x.to_bits() as u64;
    bf16 => BF16, |b: u64| bf16::from_bits(b as u16), |x: bf16| x.to_bits() as u64;
    u8 => U8, |b: u64| b as u8, |x: u8| x as u64;
    i8 => I8, |b: u64| b as u8 as i8, |x: i8| x as u8 as u64;
    u16 => U16, |b: u64| b as u16, |x: u16| x as u64;
    i16 => I16, |b: u64| b as u16 as i16, |x: i16| x as u16 as u64;
    u32 => U32, |b: u64| b as u32, |x: u32| x as u64;
    i32 => I32, |b: u64| b as u32 as i32, |x: i32| x as u32 as u64;
    u64 => U64, |b: u64| b, |x: u64| x;
    i64 => I64, |b: u64| b as i64, |x: i64| x as u64;
    F8E4M3 => F8E4M3, |b: u64| F8E4M3::from_bits(b as u8), |x: F8E4M3| x.to_bits() as u64;
    F8E5M2 => F8E5M2, |b: u64| F8E5M2::from_bits(b as u8), |x: F8E5M2| x.to_bits() as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_its_name_and_has_a_kernel_width() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert!(crate::atom::ELEMENT_WIDTHS.contains(&d.size_bytes()), "{d}");
        }
    }

    #[test]
    fn element_bits_round_trip_at_the_element_width() {
        assert_eq!(<f16 as Element>::from_bits(0x1234_3c00).to_bits(), 0x3c00);
        assert_eq!(<i8 as Element>::from_bits(0xff).to_bits(), 0xff);
        assert_eq!(<f64 as Element>::from_bits(u64::MAX).to_bits(), u64::MAX);
        assert_eq!(<bf16 as Element>::DTYPE.size_bytes(), 2);
    }
}
