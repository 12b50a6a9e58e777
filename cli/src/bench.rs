//! `bench`: a small verified bandwidth suite through `run`'s machinery, progress on stderr.

use cute_copy::{DType, Operand};

use crate::flags::Case;
use crate::run::{gpu, measure, with_element};
use crate::CliResult;

fn bench_cases(quick: bool) -> Vec<Case> {
    let op = |rows, cols, ld| Operand {
        rows,
        cols,
        ld,
        offset_bytes: 0,
    };
    let case = |dtype, src, dst| Case {
        dtype,
        src,
        dst,
        atom: None,
    };
    let mut cases = Vec::new();
    if !quick {
        let dense = op(16384, 16384, 16384);
        cases.push(case(DType::F16, dense, dense));
        let odd = op(16383, 16383, 16384);
        cases.push(case(DType::F16, odd, odd));
    }
    cases.extend([
        case(DType::F16, op(8192, 130, 136), op(8192, 130, 130)),
        case(DType::F32, op(4096, 4096, 4096), op(4096, 4096, 4096)),
        case(DType::F16, op(130, 130, 130), op(130, 130, 130)),
        case(DType::F16, op(32, 32, 32), op(32, 32, 32)),
    ]);
    cases
}

pub(crate) fn bench(quick: bool) -> CliResult {
    let stream = gpu()?;
    let (name, (major, minor)) = cute_copy::describe(stream.context())?;
    let iters = if quick { 5 } else { 20 };
    let cases = bench_cases(quick);
    outln!("GPU: {name} (sm_{major}{minor}); each shape verified once, then timed: mean of {iters} launches after 3 warm-up (CUDA events)");
    outln!(
        "{:<34} {:<5} {:<14} {:>9} {:>9} {:>6}",
        "shape",
        "dtype",
        "atom",
        "GB/s",
        "D2D GB/s",
        "ratio"
    );
    for (i, case) in cases.iter().enumerate() {
        eprintln!(
            "[{}/{}] {} {}: verifying and timing",
            i + 1,
            cases.len(),
            case.dtype,
            case.shape()
        );
        let m = with_element!(case.dtype, measure(case, &stream, iters))?;
        let d2d = m.d2d.map_or("-".into(), |(_, g)| format!("{g:.1}"));
        let ratio = m.ratio().map_or("-".into(), |r| format!("{r:.2}"));
        outln!(
            "{:<34} {:<5} {:<14} {:>9.1} {:>9} {:>6}",
            case.shape(),
            case.dtype,
            m.plan.atom.cli_name(),
            m.gbps(),
            d2d,
            ratio
        );
    }
    Ok(())
}
