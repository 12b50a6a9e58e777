//! Shared by the examples (a folder, so that Cargo does not take it for an example of its own).

use std::process::ExitCode;

/// No GPU (or no driver): say so and succeed, unless `CUTE_COPY_REQUIRE_GPU=1` asks for a failure.
pub fn no_gpu(e: cute_copy::Error) -> ExitCode {
    println!("no GPU: {e}");
    if std::env::var("CUTE_COPY_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        eprintln!("error: CUTE_COPY_REQUIRE_GPU=1 and no GPU was found");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
