// Generates the Rust side of the instantiation menu (cpp/menu.def), compiles the cxx bridge, and
// compiles the CuTe kernels, dispatch and host-side CuTe queries with nvcc (build/cuda.rs).
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
    for var in toolchain::ENV_VARS {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let menu =
        std::fs::read_to_string(manifest_dir.join("cpp/menu.def")).expect("read cpp/menu.def");
    std::fs::write(out_dir.join("menu.rs"), menu::generate(&menu)).expect("write menu.rs");

    let tc = toolchain::Toolchain::find(&manifest_dir).unwrap_or_else(|why| {
        println!(
            "cargo::error={why}. Run `third_party/install.sh` (pinned CUDA 13.0 wheels and CUTLASS 4.2 \
             headers), or point NVCC / CUDA_HOME and CUTLASS_DIR at a system install."
        );
        std::process::exit(1);
    });

    // The bridge: cxx generates src/ffi.rs.{h,cc}; the .cc is plain host C++.
    cxx_build::bridge("src/ffi.rs")
        .include("cpp/include")
        .flag("-std=c++17")
        .compile("cute_copy_bridge");
    // The CUDA side, which includes the generated header for the shared structs.
    cuda::build(
        &tc,
        &manifest_dir,
        &out_dir,
        &out_dir.join("cxxbridge/include"),
    );
}
