//! The nvcc half of the build: kernels, dispatch and host-side CuTe, compiled into one static
//! library by cc in CUDA mode. CuTe makes these translation units slow (minutes on 2 cores), so the
//! library is rebuilt only when what goes into it changes: the files under `cpp/`, the header cxx
//! generates for the shared structs, the flags and the compiler. A Rust-only edit (src/ffi.rs
//! included, as long as the shared structs stay the same) reuses it.

use std::path::{Path, PathBuf};

use crate::toolchain::Toolchain;

const SOURCES: &[&str] = &[
    "cpp/dispatch.cu",
    "cpp/kernels/universal.cu",
    "cpp/kernels/cp_async.cu",
    "cpp/introspect.cpp",
    "cpp/baselines.cu",
];
const LIB: &str = "cute_copy_cuda";

pub fn build(tc: &Toolchain, manifest_dir: &Path, out_dir: &Path, cxx_include: &Path) {
    let mut flags = vec![
        "-std=c++17".to_string(),
        "--expt-relaxed-constexpr".into(),
        "-isystem".into(),
        tc.cutlass_include.display().to_string(),
        "-DNDEBUG".into(),
        "-Xcudafe".into(),
        "--diag_suppress=esa_on_defaulted_function_ignored".into(),
    ];
    flags.extend(Toolchain::gencode_flags());

    let mut inputs = vec![tc.nvcc.display().to_string(), flags.join(" ")];
    let mut files = Vec::new();
    list_files(&manifest_dir.join("cpp"), &mut files);
    files.push(cxx_include.join("cute-copy/src/ffi.rs.h"));
    files.sort();
    for f in &files {
        inputs.push(f.display().to_string());
        inputs.push(String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()).into_owned());
    }
    let key = format!("{:016x}", fnv1a(inputs.join("\0").as_bytes()));
    let stamp = out_dir.join(format!("{LIB}.stamp"));
    let lib = out_dir.join(format!("lib{LIB}.a"));

    if lib.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(key.as_str()) {
        println!("cargo:rustc-link-search=native={}", out_dir.display());
        println!("cargo:rustc-link-lib=static={LIB}");
    } else {
        // cc runs the nvcc named by NVCC when building CUDA.
        std::env::set_var("NVCC", &tc.nvcc);
        let mut build = cc::Build::new();
        build
            .cuda(true)
            .cudart("none")
            // Kernels are always built optimised and without device debug info (cc would add -G,
            // -O0 in a debug profile: minutes more to compile and much slower kernels).
            .debug(false)
            .opt_level(3)
            .files(SOURCES.iter().map(|s| manifest_dir.join(s)))
            .include(manifest_dir.join("cpp/include"))
            .include(manifest_dir.join("cpp"))
            .include(cxx_include)
            .warnings(false);
        for f in &flags {
            build.flag(f);
        }
        build.compile(LIB);
        std::fs::write(&stamp, &key).expect("write the CUDA build stamp");
    }

    for dir in tc.lib_dirs() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in ["cudart_static", "dl", "pthread", "rt"] {
        println!("cargo:rustc-link-lib={lib}");
    }
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            list_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// FNV-1a, 64-bit: a stable hash for the stamp (std's hasher may change between toolchains).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}
