//! SVG pictures of a TiledCopy: CuTe's thread-value map of one tile, drawn from the real CuTe
//! partition that [`TiledCopySpec`] reports (never a re-derivation of the layout algebra).
//!
//! Each tile element is one cell, filled with the colour of the thread that copies it
//! ([`thread_colour`]) and labelled `T<thread>` over `V<value>`. The value index is the lane of the
//! element within its atom call: the element's position in the thread's partition
//! ([`TiledCopySpec::thread_coords`], CuTe's order) modulo the values per call
//! (`partition_shape().0`). `V0` is the first lane of a vector; for a one-element atom every cell
//! is `V0`. The atom call a cell belongs to (position / values per call) is in the cell's tooltip.
//!
//! ```
//! # fn main() -> Result<(), cute_copy::Error> {
//! use cute_copy::{Atom, DType, TiledCopySpec};
//! let spec = TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32))?;
//! let svg = cute_copy::svg::tiled_copy_svg(&spec, None)?;
//! assert!(svg.starts_with("<svg"));
//! // The last tile of a 40 x 40 matrix: only its top-left 8 x 8 cells are inside the matrix.
//! let svg = cute_copy::svg::tiled_copy_svg(&spec, Some((8, 8)))?;
//! assert!(svg.contains("masked lane"));
//! # Ok(()) }
//! ```

use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::TiledCopySpec;

/// The fill colour of thread `t`'s cells: a deterministic light HSL colour whose hue steps by the
/// golden angle (137.5°) per thread, so neighbouring threads get clearly different hues while the
/// lightness stays high enough for black labels.
///
/// ```
/// assert_eq!(cute_copy::svg::thread_colour(0), "hsl(0.0,70%,78%)");
/// assert_ne!(cute_copy::svg::thread_colour(1), cute_copy::svg::thread_colour(2));
/// ```
pub fn thread_colour(t: usize) -> String {
    let hue = (t as f64 * 137.507_764) % 360.0;
    let light = [78, 70, 84][t % 3];
    format!("hsl({hue:.1},70%,{light}%)")
}

/// The fill of masked cells: a grey hatch (the pattern is defined in every picture's `<defs>`).
const MASKED_FILL: &str = "url(#masked)";
/// The outline of a vector that the matrix bound cuts (some lanes valid, some masked).
const CUT_STROKE: &str = "#d00000";

/// Where one tile element sits in its thread's partition.
#[derive(Clone, Copy)]
struct Cell {
    thread: usize,
    /// Lane within the atom call (position in the partition modulo values per call).
    value: usize,
    /// Atom call index within the thread (position in the partition / values per call).
    call: usize,
}

/// Draw `spec`'s tile as CuTe's thread-value map, as an SVG document.
///
/// `valid = Some((rows, cols))` is the part of the tile inside the logical matrix (a boundary tile):
/// cells at or past row `rows` or column `cols` are drawn grey and hatched and marked as masked
/// lanes, and every atom call (vector) that the bound cuts, with some lanes inside and some
/// outside, gets a red outline. `None` draws an interior tile.
///
/// Scale: cells are 40 px for tiles up to 64 columns and shrink for wider tiles (down to 10 px, so a
/// 64 x 256 tile is 2560 px wide). Below 24 px a cell has no room for its `T`/`V` labels: each
/// vector (atom call) is then labelled once with its thread, `V0` being its leftmost lane, and
/// when a vector is narrower than 28 px labels are dropped (the tooltips and colours remain).
///
/// Errors: those of [`TiledCopySpec::thread_coords`], and a partition that does not cover the tile
/// exactly once (which would be a CuTe or bridge bug).
pub fn tiled_copy_svg(spec: &TiledCopySpec, valid: Option<(usize, usize)>) -> Result<String> {
    let (h, w) = spec.tile();
    let (cpy, cpy_m, cpy_n) = spec.partition_shape();
    let cpy = cpy.max(1);

    // The thread-value map, from CuTe's own partition of the tile.
    let mut cells: Vec<Option<Cell>> = vec![None; h * w];
    let mut vectors: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
    for thread in 0..spec.num_threads() {
        let coords = spec.thread_coords(thread)?;
        for (i, &(r, c)) in coords.iter().enumerate() {
            if r >= h || c >= w {
                return Err(Error::Layout(format!(
                    "thread {thread} copies ({r},{c}), outside the {h}x{w} tile"
                )));
            }
            let slot = &mut cells[r * w + c];
            if slot.is_some() {
                return Err(Error::Layout(format!(
                    "tile cell ({r},{c}) is copied by two threads"
                )));
            }
            *slot = Some(Cell {
                thread,
                value: i % cpy,
                call: i / cpy,
            });
        }
        vectors.extend(coords.chunks(cpy).map(|v| (thread, v.to_vec())));
    }
    let cells: Vec<Cell> = cells
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            c.ok_or_else(|| {
                Error::Layout(format!(
                    "tile cell ({},{}) is copied by no thread",
                    i / w,
                    i % w
                ))
            })
        })
        .collect::<Result<_>>()?;
    let inside = |r: usize, c: usize| valid.is_none_or(|(vr, vc)| r < vr && c < vc);

    // Geometry.
    let s = (2560 / w.max(h).max(1)).clamp(10, 40);
    let cell_labels = s >= 24;
    let vector_labels = !cell_labels && cpy * s >= 28;
    let axis_font = (s as f64 * 0.4).clamp(7.0, 11.0);
    let margin_left = 44;
    let (atom, dtype) = (spec.atom(), spec.dtype());
    let (thr_s, val_s, tv_s) = spec.cute_layouts();
    let (tiler_m, tiler_n) = spec.tiler();
    let mut header = vec![
        format!(
            "TiledCopy: {atom:?} = Copy_Atom<{}, {dtype}> ({cpy} value{} per call)",
            atom.cute_op(),
            if cpy == 1 { "" } else { "s" }
        ),
        format!("ThrLayout {thr_s}   ValLayout {val_s}   TiledLayout_TV {tv_s}"),
        format!(
            "tile {h}x{w}, tiler {tiler_m}x{tiler_n} (black lines), {} threads, per thread (CPY, CPY_M, CPY_N) = ({cpy}, {cpy_m}, {cpy_n})",
            spec.num_threads()
        ),
        if cell_labels {
            "cell: T = thread, V = value index = lane within the atom call (partition position mod CPY)".to_string()
        } else if vector_labels {
            "each vector (atom call, outlined) is labelled with its thread; its lanes V0.. run left to right".to_string()
        } else {
            "cells too small for labels: colour = thread (hover a cell for T, V and call)".to_string()
        },
    ];
    if let Some((vr, vc)) = valid {
        header.push(format!(
            "boundary tile: only rows < {vr} and cols < {vc} are inside the matrix; grey hatched = masked lanes, red outline = a vector the bound cuts"
        ));
    }
    let line_h = 18;
    let title_h = 12 + header.len() * line_h;
    let axis_h = (axis_font * 1.8) as usize;
    let top = title_h + axis_h;
    let width = margin_left + w * s + 16;
    let height = top + h * s + 16;
    // The header's longest line must fit too (monospace, ~0.6 em per character at 13 px).
    let text_w = header.iter().map(|l| l.len()).max().unwrap_or(0) * 8 + 24;
    let width = width.max(text_w);

    let mut out = String::with_capacity(h * w * 160 + 4096);
    let o = &mut out;
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">"#
    );
    let _ = writeln!(
        o,
        "<title>{}</title>",
        esc(&format!("TiledCopy {atom:?} on {dtype}, tile {h}x{w}"))
    );
    let _ = writeln!(
        o,
        r##"<defs><pattern id="masked" patternUnits="userSpaceOnUse" width="6" height="6"><rect width="6" height="6" fill="#d4d4d4"/><path d="M0,6 L6,0" stroke="#8c8c8c" stroke-width="1"/></pattern></defs>"##
    );
    let _ = writeln!(o, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    for (i, line) in header.iter().enumerate() {
        let (size, weight) = if i == 0 { (15, "bold") } else { (13, "normal") };
        let _ = writeln!(
            o,
            r#"<text x="8" y="{}" font-size="{size}" font-weight="{weight}" font-family="DejaVu Sans Mono, monospace">{}</text>"#,
            20 + i * line_h,
            esc(line)
        );
    }

    // Axes: column indices above, row indices to the left (every `step`-th when cells are small).
    let step = [1, 2, 4, 8, 16, 32]
        .into_iter()
        .find(|k| k * s >= 20)
        .unwrap_or(32);
    let _ = writeln!(
        o,
        r##"<g font-size="{axis_font:.1}" fill="#555555" text-anchor="middle">"##
    );
    for c in (0..w).step_by(step) {
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}">{c}</text>"#,
            margin_left + c * s + s / 2,
            top - 4
        );
    }
    for r in (0..h).step_by(step) {
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{:.1}">{r}</text>"#,
            margin_left / 2,
            (top + r * s) as f64 + s as f64 / 2.0 + axis_font * 0.35
        );
    }
    let _ = writeln!(o, "</g>");

    // Cells: exactly one <rect class="cell ..."> per tile element, in row-major order.
    let _ = writeln!(o, r##"<g stroke="#ffffff" stroke-width="0.5">"##);
    for r in 0..h {
        for c in 0..w {
            let cell = cells[r * w + c];
            let (x, y) = (margin_left + c * s, top + r * s);
            let masked = !inside(r, c);
            let (class, fill) = if masked {
                ("cell masked", MASKED_FILL.to_string())
            } else {
                ("cell", thread_colour(cell.thread))
            };
            let _ = writeln!(
                o,
                r#"<rect class="{class}" x="{x}" y="{y}" width="{s}" height="{s}" fill="{fill}"><title>({r},{c}): T{} V{} call {}{}</title></rect>"#,
                cell.thread,
                cell.value,
                cell.call,
                if masked { ", masked lane" } else { "" }
            );
        }
    }
    let _ = writeln!(o, "</g>");

    // Tiler boundaries: where one step of all threads (thread layout x value layout) repeats.
    let _ = writeln!(o, r##"<g stroke="#000000" stroke-width="1.6">"##);
    let (x0, y0, x1, y1) = (margin_left, top, margin_left + w * s, top + h * s);
    for c in (0..=w).step_by(tiler_n.max(1)) {
        let x = margin_left + c * s;
        let _ = writeln!(o, r#"<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}"/>"#);
    }
    for r in (0..=h).step_by(tiler_m.max(1)) {
        let y = top + r * s;
        let _ = writeln!(o, r#"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}"/>"#);
    }
    let _ = writeln!(o, "</g>");

    // Vectors (atom calls): outlined when an atom moves more than one element, red when cut.
    let _ = writeln!(o, r#"<g fill="none">"#);
    for (thread, v) in &vectors {
        let in_count = v.iter().filter(|&&(r, c)| inside(r, c)).count();
        let cut = in_count != 0 && in_count != v.len();
        if cpy == 1 && !cut {
            continue;
        }
        for (r, c0, len) in row_runs(v) {
            let (x, y) = (margin_left + c0 * s, top + r * s);
            let (class, stroke, sw) = if cut {
                ("vector cut", CUT_STROKE, (s as f64 * 0.15).clamp(1.2, 2.5))
            } else {
                ("vector", "#505050", 0.8)
            };
            let _ = writeln!(
                o,
                r#"<rect class="{class}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" stroke="{stroke}" stroke-width="{sw}"><title>T{thread} vector at ({r},{c0}), {len} lane{}</title></rect>"#,
                x as f64 + sw / 2.0,
                y as f64 + sw / 2.0,
                (len * s) as f64 - sw,
                s as f64 - sw,
                if len == 1 { "" } else { "s" }
            );
        }
    }
    let _ = writeln!(o, "</g>");

    // Labels.
    if cell_labels || vector_labels {
        let _ = writeln!(o, r#"<g text-anchor="middle" pointer-events="none">"#);
    }
    if cell_labels {
        let (ft, fv) = (s as f64 * 0.3, s as f64 * 0.26);
        for r in 0..h {
            for c in 0..w {
                let cell = cells[r * w + c];
                let colour = if inside(r, c) { "#000000" } else { "#6e6e6e" };
                let xc = (margin_left + c * s) as f64 + s as f64 / 2.0;
                let y = (top + r * s) as f64;
                let _ = writeln!(
                    o,
                    r#"<text x="{xc:.1}" y="{:.1}" font-size="{ft:.1}" fill="{colour}">T{}</text><text x="{xc:.1}" y="{:.1}" font-size="{fv:.1}" fill="{colour}">V{}</text>"#,
                    y + s as f64 * 0.44,
                    cell.thread,
                    y + s as f64 * 0.82,
                    cell.value
                );
            }
        }
    } else if vector_labels {
        let f = (s as f64 * 0.8).min(12.0);
        for (thread, v) in &vectors {
            for (r, c0, len) in row_runs(v) {
                let colour = if inside(r, c0) { "#000000" } else { "#6e6e6e" };
                let _ = writeln!(
                    o,
                    r#"<text x="{:.1}" y="{:.1}" font-size="{f:.1}" fill="{colour}">T{thread}</text>"#,
                    (margin_left + c0 * s) as f64 + (len * s) as f64 / 2.0,
                    (top + r * s) as f64 + s as f64 / 2.0 + f * 0.36
                );
            }
        }
    }
    if cell_labels || vector_labels {
        let _ = writeln!(o, "</g>");
    }
    let _ = writeln!(o, "</svg>");
    Ok(out)
}

/// Split a vector's coordinates into runs of consecutive columns of one row: `(row, col, len)`.
/// A (1, n) value layout gives one run per vector; anything else still draws correctly.
fn row_runs(v: &[(usize, usize)]) -> Vec<(usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for &(r, c) in v {
        match runs.last_mut() {
            Some((lr, lc, len)) if *lr == r && *lc + *len == c => *len += 1,
            _ => runs.push((r, c, 1)),
        }
    }
    runs
}

/// Escape text for SVG (XML) content and attributes.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Draw the shared-memory stage of a transpose-family tile: one cell per 16-byte chunk of the tile
/// (rows along the store mode, chunks along the load mode), labelled and coloured with the chunk
/// it lands in under the tile's CuTe `Swizzle` (the narrow tile is unswizzled: every chunk stays),
/// and the cells read by warp 0's first transposed read outlined (lane number inside): eight row
/// groups land in eight different chunks, which is what keeps the read free of bank conflicts.
pub fn smem_tile_svg(plan: &crate::TensorPlan) -> Result<String> {
    let crate::TensorRoute::Transpose(t) = &plan.route else {
        return Err(Error::Unsupported(
            "only transpose-family plans stage a tile in shared memory".into(),
        ));
    };
    let w = plan.dtype.size_bytes();
    let v = 16 / w;
    let (rows, chunks) = (t.tile.1, t.tile.0.div_ceil(v));
    let s = 26usize;
    let mut first_read = std::collections::BTreeMap::new(); // (row, chunk) -> lanes
    if t.kind == crate::TileKind::Transpose {
        let work: Vec<_> = (0..32)
            .map(|lane| t.thread_work(plan.dtype, lane))
            .collect::<Result<_>>()?;
        for (lane, wk) in work.iter().enumerate() {
            if let Some(&(r0, c0, _, _)) = wk.stores.first() {
                first_read
                    .entry((r0, c0 / v))
                    .or_insert_with(Vec::new)
                    .push(lane);
            }
        }
    }
    let header = [
        format!("shared-memory tile of {}: {} -> {}", plan.dtype, plan.coalesced.0, plan.coalesced.1),
        match t.swizzle {
            Some((b, m, sh)) => format!(
                "composition(Swizzle<{b},{m},{sh}>, ({},{}):({},1)) over elements: chunk (16 B) c of row r lands in chunk c ^ ((r / {v}) % 8)",
                t.tile.1, t.tile.0, t.tile.0
            ),
            None => format!("({},{}):({},1), unswizzled (narrow tile)", t.tile.1, t.tile.0, t.tile.0),
        },
        format!("{:?} tile: {rows} rows along mode {} x {} chunks of {v} elements along mode {}; cell = physical chunk", t.kind, t.mode_b, chunks, t.mode_a),
        "outlined: warp 0's first transposed read (lane numbers): 8 row groups in 8 different chunks".to_string(),
    ];
    let top = 12 + header.len() * 18 + 8;
    let left = 40;
    let width =
        (left + chunks * s + 16).max(header.iter().map(|l| l.len()).max().unwrap_or(0) * 8 + 24);
    let height = top + rows * s + 16;
    let mut out = String::new();
    let o = &mut out;
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">"#
    );
    let _ = writeln!(o, "<title>{}</title>", esc(&header[0]));
    let _ = writeln!(o, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    for (i, line) in header.iter().enumerate() {
        let _ = writeln!(
            o,
            r#"<text x="8" y="{}" font-size="13" font-family="DejaVu Sans Mono, monospace">{}</text>"#,
            20 + i * 18,
            esc(line)
        );
    }
    for r in 0..rows {
        if r % 8 == 0 {
            let _ = writeln!(
                o,
                r##"<text x="4" y="{}" font-size="10" fill="#555555">{r}</text>"##,
                top + r * s + s / 2 + 4
            );
        }
        for c in 0..chunks {
            let phys = t.smem_offset(r, c * v) / v - r * chunks;
            let (x, y) = (left + c * s, top + r * s);
            let lanes = first_read.get(&(r, c));
            let stroke = if lanes.is_some() {
                r##"stroke="#d00000" stroke-width="2""##
            } else {
                r##"stroke="#ffffff" stroke-width="1""##
            };
            let _ = writeln!(
                o,
                r#"<rect x="{x}" y="{y}" width="{s}" height="{s}" fill="{}" {stroke}><title>row {r}, chunk {c} -> chunk {phys}</title></rect>"#,
                thread_colour(phys)
            );
            let label = match lanes {
                Some(l) => format!("L{}", l[0]),
                None => phys.to_string(),
            };
            let _ = writeln!(
                o,
                r#"<text x="{}" y="{}" font-size="10" text-anchor="middle">{label}</text>"#,
                x + s / 2,
                y + s / 2 + 4
            );
        }
    }
    let _ = writeln!(o, "</svg>");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Atom, DType};

    fn tutorial() -> TiledCopySpec {
        TiledCopySpec::new(Atom::Universal, DType::F32, (32, 4), (1, 1), (32, 32)).unwrap()
    }

    /// A small well-formedness check: every tag closes in order, no stray `<` or `&` in text.
    fn assert_balanced(svg: &str) {
        assert!(svg.starts_with("<svg "), "{}", &svg[..40]);
        assert!(svg.trim_end().ends_with("</svg>"));
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            assert!(!text.contains('>'), "stray '>' in text {text:?}");
            for (i, _) in text.match_indices('&') {
                let entity = &text[i..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;"]
                        .iter()
                        .any(|e| entity.starts_with(e)),
                    "bare '&' in {text:?}"
                );
            }
            let close = rest[open..].find('>').expect("unterminated tag") + open;
            let tag = &rest[open + 1..close];
            assert!(!tag.contains('<'), "'<' inside tag {tag:?}");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
            } else if !tag.ends_with('/') {
                stack.push(tag.split_whitespace().next().unwrap());
            }
            rest = &rest[close + 1..];
        }
        assert!(stack.is_empty(), "unclosed tags {stack:?}");
        assert!(rest.trim().is_empty());
    }

    fn cell_rects(svg: &str) -> Vec<&str> {
        svg.lines()
            .filter(|l| l.starts_with("<rect class=\"cell"))
            .collect()
    }

    #[test]
    fn tutorial_picture_is_well_formed_with_one_rect_per_cell() {
        let svg = tiled_copy_svg(&tutorial(), None).unwrap();
        assert_balanced(&svg);
        assert_eq!(cell_rects(&svg).len(), 32 * 32);
        assert!(!svg.contains("masked lane"));
        assert!(svg.contains("UniversalCopy&lt;T&gt;"));
        assert!(svg.contains("(_32,_4):(_4,_1)"));
    }

    #[test]
    fn cells_take_their_owning_threads_colour_and_label() {
        let spec = tutorial();
        let svg = tiled_copy_svg(&spec, None).unwrap();
        let rects = cell_rects(&svg);
        let grid = spec.owner_grid().unwrap();
        assert_eq!(grid[0][0], 0);
        assert!(rects[0].contains(&format!("fill=\"{}\"", thread_colour(0))));
        assert!(rects[0].contains("(0,0): T0 V0 call 0"));
        // (1, 0) is thread 4's first element; (0, 4) is thread 0's second atom call.
        assert!(rects[32].contains(&format!("fill=\"{}\"", thread_colour(grid[1][0]))));
        assert!(rects[4].contains("(0,4): T0 V0 call 1"));
        assert!(svg.contains(">T0</text>"));
    }

    #[test]
    fn vector_atoms_number_lanes_within_each_call() {
        let spec =
            TiledCopySpec::new(Atom::Universal64, DType::F16, (32, 4), (1, 4), (32, 32)).unwrap();
        let svg = tiled_copy_svg(&spec, None).unwrap();
        assert_balanced(&svg);
        let rects = cell_rects(&svg);
        assert_eq!(rects.len(), 32 * 32);
        for (c, t, v) in [(0, 0, 0), (3, 0, 3), (4, 1, 0), (16, 0, 0), (17, 0, 1)] {
            let want = format!("(0,{c}): T{t} V{v} call");
            assert!(rects[c].contains(&want), "{want}: {}", rects[c]);
        }
    }

    #[test]
    fn masked_cells_and_cut_vectors_are_marked_when_the_bound_is_given() {
        let spec =
            TiledCopySpec::new(Atom::Universal64, DType::F16, (32, 4), (1, 4), (32, 32)).unwrap();
        let svg = tiled_copy_svg(&spec, Some((30, 10))).unwrap();
        assert_balanced(&svg);
        let rects = cell_rects(&svg);
        assert_eq!(rects.len(), 32 * 32);
        let masked = rects.iter().filter(|r| r.contains("masked lane")).count();
        assert_eq!(masked, 32 * 32 - 30 * 10);
        assert!(rects[9].contains(&format!("fill=\"{}\"", thread_colour(2))));
        assert!(rects[10].contains(MASKED_FILL) && rects[10].contains("cell masked"));
        assert!(rects[30 * 32].contains("masked lane"));
        // Columns 8..12 are one vector per row: cut by the bound at column 10 in rows 0..30.
        let cut = svg.matches("class=\"vector cut\"").count();
        assert_eq!(cut, 30);
        assert!(svg.contains(CUT_STROKE));
    }

    #[test]
    fn wide_kernel_tiles_stay_readable() {
        let spec = TiledCopySpec::for_kernel(Atom::Universal128, DType::F16).unwrap();
        let (h, w) = spec.tile();
        let svg = tiled_copy_svg(&spec, Some((h - 1, w - 3))).unwrap();
        assert_balanced(&svg);
        assert_eq!(cell_rects(&svg).len(), h * w);
        let width: usize = svg["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"".len()..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(width <= 2700, "{width}");
        // Cells are too small for per-cell labels: one thread label per vector instead.
        assert!(!svg.contains(">V0</text>"));
        assert!(svg.contains(">T0</text>"));
    }
}
