// Generates the Rust side of the instantiation menu (cpp/menu.def), compiles the cxx bridge, and
// compiles the CuTe kernels, dispatch and host-side CuTe queries with nvcc (build/cuda.rs).
//
// With DOCS_RS (docs.rs) or CUTE_COPY_NO_CUDA=1 (`cargo check` / `cargo doc` without a toolkit),
// nvcc is never looked for: the bridge is linked against cpp/no_cuda.cc, whose every call fails
// with Error::NoKernels, and the crate gets `cfg(cute_copy_no_cuda)`.
#[path = "build/cuda.rs"]
mod cuda;
#[path = "build/menu.rs"]
mod menu;
#[path = "build/toolchain.rs"]
mod toolchain;

use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=cpp");
    println!("cargo:rerun-if-changed=src/ffi.rs");
    for var in toolchain::ENV_VARS
        .iter()
        .chain(&["DOCS_RS", "CUTE_COPY_NO_CUDA", cuda::CACHE_VAR])
    {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo::rustc-check-cfg=cfg(cute_copy_no_cuda)");

    let menu =
        std::fs::read_to_string(manifest_dir.join("cpp/menu.def")).expect("read cpp/menu.def");
    std::fs::write(out_dir.join("menu.rs"), menu::generate(&menu)).expect("write menu.rs");

    // The bridge: cxx generates src/ffi.rs.{h,cc}; the .cc is plain host C++.
    let mut bridge = cxx_build::bridge("src/ffi.rs");
    bridge.include("cpp/include").flag("-std=c++17");

    if let Some(why) = no_cuda() {
        if why == "CUTE_COPY_NO_CUDA" {
            println!(
                "cargo::warning=CUTE_COPY_NO_CUDA=1: built without CUDA kernels, every launch \
                 returns Error::NoKernels"
            );
        }
        println!("cargo::rustc-cfg=cute_copy_no_cuda");
        println!("cargo::rustc-env=CUTE_COPY_GPU_TARGETS=none ({why})");
        bridge.file("cpp/no_cuda.cc").compile("cute_copy_bridge");
        return;
    }

    let tc = toolchain::Toolchain::find(&manifest_dir).unwrap_or_else(|why| {
        println!(
            "cargo::error={why}. Run `third_party/install.sh` (pinned CUDA 13.0 wheels and CUTLASS 4.2 \
             headers), or point NVCC / CUDA_HOME and CUTLASS_DIR at a system install. To only check \
             or document the crate without CUDA, set CUTE_COPY_NO_CUDA=1."
        );
        std::process::exit(1);
    });

    println!(
        "cargo::rustc-env=CUTE_COPY_GPU_TARGETS={}",
        tc.targets.describe()
    );
    bridge.compile("cute_copy_bridge");
    // The CUDA side, which includes the generated header for the shared structs.
    cuda::build(
        &tc,
        &manifest_dir,
        &out_dir,
        &out_dir.join("cxxbridge/include"),
        &menu::widths(&menu),
    );
}

/// Which variable asks for a build without CUDA: `DOCS_RS` (set, as docs.rs does) or
/// `CUTE_COPY_NO_CUDA=1`.
fn no_cuda() -> Option<&'static str> {
    if std::env::var_os("DOCS_RS").is_some() {
        Some("DOCS_RS")
    } else if std::env::var("CUTE_COPY_NO_CUDA").is_ok_and(|v| v == "1") {
        Some("CUTE_COPY_NO_CUDA")
    } else {
        None
    }
}
