//! Standard output that a closed pipe ends quietly: `cute-copy explain ... | head -1` exits 0 when
//! `head` stops reading, where `println!` would panic on the broken pipe.

use std::io::{self, Write};

/// `print!` to a locked stdout; see [`written`] for what a failed write does.
macro_rules! out {
    ($($arg:tt)*) => {{
        let result = {
            use ::std::io::Write as _;
            let mut stdout = ::std::io::stdout().lock();
            write!(stdout, $($arg)*)
        };
        $crate::output::written(result)
    }};
}

/// `println!` to a locked stdout; see [`written`] for what a failed write does.
macro_rules! outln {
    () => {
        out!("\n")
    };
    ($($arg:tt)*) => {{
        let result = {
            use ::std::io::Write as _;
            let mut stdout = ::std::io::stdout().lock();
            writeln!(stdout, $($arg)*)
        };
        $crate::output::written(result)
    }};
}

/// The end of a write to stdout: a reader that went away (`BrokenPipe`) ends the program with
/// exit status 0, as it would a C tool killed by SIGPIPE; any other error ends it with status 1.
pub(crate) fn written(result: io::Result<()>) {
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            // Best effort: stderr may be gone too.
            let _ = writeln!(io::stderr(), "error: writing to stdout: {e}");
            std::process::exit(1);
        }
    }
}
