//! The flags `explain` and `run` share (the copy to describe), their value parsers, and the
//! [`Case`] they turn into.

use clap::Args;
use cute_copy::{Atom, DType, Operand, Plan};

use crate::CliResult;

/// The copy both `explain` and `run` describe.
#[derive(Args, Clone, Debug)]
pub(crate) struct ShapeArgs {
    /// Element type: f32 f64 f16 bf16 u8 i8 u16 i16 u32 i32 u64 i64.
    #[arg(long, value_parser = parse_dtype)]
    dtype: DType,
    /// Source rows.
    #[arg(long)]
    rows: usize,
    /// Source columns.
    #[arg(long)]
    cols: usize,
    /// Source leading dimension in elements [default: --cols].
    #[arg(long)]
    ld_src: Option<usize>,
    /// Destination leading dimension in elements [default: the destination's cols].
    #[arg(long)]
    ld_dst: Option<usize>,
    /// Bytes from a 256-byte-aligned allocation start to source element (0,0); a multiple of the
    /// element size.
    #[arg(long, default_value_t = 0)]
    offset_src: usize,
    /// Bytes from a 256-byte-aligned allocation start to destination element (0,0).
    #[arg(long, default_value_t = 0)]
    offset_dst: usize,
    /// Destination rows [default: --rows]; larger than the source makes a pad (zeros outside).
    #[arg(long)]
    dst_rows: Option<usize>,
    /// Destination cols [default: --cols]; larger than the source makes a pad.
    #[arg(long)]
    dst_cols: Option<usize>,
    /// Use this atom instead of the planner's choice: a CLI name (universal-128,
    /// cp-async-zfill-32, ...) or a variant name (Universal128); an unknown name lists them all.
    #[arg(long, value_parser = parse_atom)]
    atom: Option<Atom>,
}

pub(crate) fn parse_dtype(s: &str) -> Result<DType, String> {
    DType::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        format!("unknown dtype '{s}' (one of: {})", names.join(" "))
    })
}

pub(crate) fn parse_atom(s: &str) -> Result<Atom, String> {
    Atom::from_name(s).ok_or_else(|| {
        let names: Vec<String> = Atom::all().map(|a| a.cli_name()).collect();
        format!("unknown atom '{s}' (one of: {})", names.join(" "))
    })
}

pub(crate) fn parse_pair(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once([',', 'x'])
        .ok_or_else(|| format!("'{s}' is not ROWS,COLS"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|e| format!("'{x}' in '{s}': {e}"))
    };
    Ok((num(a)?, num(b)?))
}

/// One copy or pad: dtype, both operands (offsets in bytes) and the atom, if one was named.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Case {
    pub(crate) dtype: DType,
    pub(crate) src: Operand,
    pub(crate) dst: Operand,
    pub(crate) atom: Option<Atom>,
}

impl ShapeArgs {
    pub(crate) fn case(&self) -> CliResult<Case> {
        let e = self.dtype.size_bytes();
        for (flag, offset) in [
            ("--offset-src", self.offset_src),
            ("--offset-dst", self.offset_dst),
        ] {
            if offset % e != 0 {
                return Err(format!(
                    "{flag} {offset} is not a multiple of the {} element size ({e} bytes): element (0,0) must start on an element",
                    self.dtype
                )
                .into());
            }
        }
        let (dst_rows, dst_cols) = (
            self.dst_rows.unwrap_or(self.rows),
            self.dst_cols.unwrap_or(self.cols),
        );
        Ok(Case {
            dtype: self.dtype,
            src: Operand {
                rows: self.rows,
                cols: self.cols,
                ld: self.ld_src.unwrap_or(self.cols),
                offset_bytes: self.offset_src,
            },
            dst: Operand {
                rows: dst_rows,
                cols: dst_cols,
                ld: self.ld_dst.unwrap_or(dst_cols),
                offset_bytes: self.offset_dst,
            },
            atom: self.atom,
        })
    }
}

/// The facts of device 0, when there is one: the plans the CLI prints read them as the library's
/// own front doors do.
pub(crate) fn device() -> Option<cute_copy::DeviceInfo> {
    cute_copy::context(0)
        .and_then(|c| cute_copy::DeviceInfo::of(&c))
        .ok()
}

impl Case {
    /// The plan the library makes for this case: for device 0 when there is one (its facts in
    /// the text), else for no device (compute capability unchecked).
    pub(crate) fn plan(&self) -> cute_copy::Result<Plan> {
        match device() {
            Some(d) => Plan::for_device(self.dtype, self.src, self.dst, self.atom, &d),
            None => Plan::new(self.dtype, self.src, self.dst, self.atom, None),
        }
    }

    /// `16383x16383 ld 16384 -> ld 16384`, or `8x8 ld 8 -> 16x16 ld 16` for a pad.
    pub(crate) fn shape(&self) -> String {
        let (s, d) = (self.src, self.dst);
        if (s.rows, s.cols) == (d.rows, d.cols) {
            format!("{}x{} ld {} -> ld {}", s.rows, s.cols, s.ld, d.ld)
        } else {
            format!(
                "{}x{} ld {} -> {}x{} ld {}",
                s.rows, s.cols, s.ld, d.rows, d.cols, d.ld
            )
        }
    }
}
