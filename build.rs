// Compiles the CuTe kernels, the dispatch and the host-side CuTe queries with nvcc through one cxx
// bridge, and generates the Rust side of the instantiation menu (cpp/menu.def).
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
    // cc runs the nvcc named by NVCC when building CUDA.
    std::env::set_var("NVCC", &tc.nvcc);

    let mut build = cxx_build::bridge("src/ffi.rs");
    build
        .cuda(true)
        .cudart("static")
        .files([
            "cpp/dispatch.cu",
            "cpp/kernels/universal.cu",
            "cpp/kernels/cp_async.cu",
            "cpp/introspect.cpp",
        ])
        .include("cpp/include")
        .include("cpp")
        .flag("-std=c++17")
        .flag("--expt-relaxed-constexpr")
        .flag("-isystem")
        .flag(tc.cutlass_include.to_str().expect("utf-8 path"))
        .flag("-DNDEBUG")
        .flag("-Xcudafe")
        .flag("--diag_suppress=esa_on_defaulted_function_ignored")
        .warnings(false);
    for f in toolchain::Toolchain::gencode_flags() {
        build.flag(&f);
    }
    build.compile("cute_copy_cuda");

    for dir in tc.lib_dirs() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in ["dl", "pthread", "rt"] {
        println!("cargo:rustc-link-lib={lib}");
    }
}
