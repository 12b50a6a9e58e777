//! `svg`: a TiledCopy's thread-value map as an SVG picture.

use std::path::PathBuf;

use clap::Args;
use cute_copy::{Atom, DType, TiledCopySpec};

use crate::flags::{parse_atom, parse_dtype, parse_pair};
use crate::CliResult;

#[derive(Args)]
pub(crate) struct SvgArgs {
    /// Draw the CuTe tutorial TiledCopy: UniversalCopy<float>, thread layout (32,4), value layout
    /// (1,1), 32x32 tile.
    #[arg(long, conflicts_with_all = ["atom", "dtype"])]
    tutorial: bool,
    /// Draw the compiled kernel's TiledCopy of this atom (with --dtype).
    #[arg(long, value_parser = parse_atom, required_unless_present = "tutorial", requires = "dtype")]
    atom: Option<Atom>,
    /// The element type of --atom's kernel.
    #[arg(long, value_parser = parse_dtype, requires = "atom")]
    dtype: Option<DType>,
    /// Draw it as a boundary tile: the top-left ROWS,COLS of the tile are inside the matrix, the
    /// rest are masked lanes.
    #[arg(long, value_name = "ROWS,COLS", value_parser = parse_pair)]
    valid: Option<(usize, usize)>,
    /// The SVG file to write.
    file: PathBuf,
}

pub(crate) fn write_svg(
    file: &PathBuf,
    spec: &TiledCopySpec,
    valid: Option<(usize, usize)>,
) -> CliResult {
    let svg = cute_copy::svg::tiled_copy_svg(spec, valid)?;
    std::fs::write(file, svg).map_err(|e| format!("writing {}: {e}", file.display()))?;
    Ok(())
}

pub(crate) fn svg(args: &SvgArgs) -> CliResult {
    let spec = match (args.tutorial, args.atom, args.dtype) {
        (true, _, _) => TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32))?,
        (false, Some(atom), Some(dtype)) => TiledCopySpec::for_kernel(atom, dtype)?,
        _ => return Err("svg needs --tutorial, or --atom and --dtype".into()),
    };
    let (h, w) = spec.tile();
    if let Some((vr, vc)) = args.valid {
        if vr > h || vc > w {
            return Err(format!("--valid {vr},{vc} is larger than the {h}x{w} tile").into());
        }
    }
    write_svg(&args.file, &spec, args.valid)?;
    outln!(
        "wrote {}: {:?} on {}, {h}x{w} tile, {} threads",
        args.file.display(),
        spec.atom(),
        spec.dtype(),
        spec.num_threads()
    );
    Ok(())
}
