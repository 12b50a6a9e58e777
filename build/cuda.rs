//! The nvcc half of the build: kernels, dispatch and host-side CuTe, compiled into one static
//! library by cc in CUDA mode. CuTe makes these translation units slow (a minute or more each on 2
//! cores), so the stale ones compile side by side (as many nvcc processes as cargo's job count, the
//! longest first; the convert family's file in one part per source width), and each object is
//! cached under a key made of content only (its defines included): the source file itself, every
//! shared header under `cpp/` (and `cpp/menu.def`) by its path inside `cpp/`, the header cxx
//! generates for the shared structs (by a fixed name, wherever OUT_DIR is), the flags with the
//! toolchain's folders left out, what `nvcc --version` prints and CUTLASS's `version.h`. No path of
//! this checkout or of the build's output goes into the key, so a clippy build, a doc build, another
//! checkout or a dependent crate that shares the cache (`CUTE_COPY_NVCC_CACHE`) finds the same
//! objects. A Rust-only edit (src/ffi.rs included, as long as the shared structs stay the same)
//! recompiles nothing; an edit to one kernel file recompiles that file alone.

use std::path::{Path, PathBuf};

use crate::toolchain::Toolchain;

/// The sources, the longest to compile first (the objects compile side by side, see `jobs`).
const SOURCES: &[&str] = &[
    "cpp/kernels/convert.cu",
    "cpp/kernels/transpose.cu",
    "cpp/kernels/realign.cu",
    "cpp/dispatch.cu",
    "cpp/kernels/universal.cu",
    "cpp/kernels/cp_async.cu",
    "cpp/introspect.cpp",
    "cpp/baselines.cu",
];
/// Sources compiled once per element width of the menu, as `-DCUTE_COPY_SRC_WIDTH=w` (the first
/// part also `-DCUTE_COPY_FIRST_PART`): the convert family's kernels, instantiated per (source
/// width, destination width) pair, are most of the build, and in parts they share the cores.
const SPLIT_BY_SRC_WIDTH: &[&str] = &["cpp/kernels/convert.cu"];
const LIB: &str = "cute_copy_cuda";
/// A folder for the object cache shared by several target directories (checkouts, a workspace and
/// a dependent crate, CI's builds).
pub const CACHE_VAR: &str = "CUTE_COPY_NVCC_CACHE";

/// One object of the library: a source and the defines it is compiled with.
struct Unit {
    src: PathBuf,
    defines: Vec<String>,
    /// The object's name before its key: the source's stem, and the part's width.
    name: String,
}

pub fn build(
    tc: &Toolchain,
    manifest_dir: &Path,
    out_dir: &Path,
    cxx_include: &Path,
    widths: &[String],
) {
    let mut flags = vec![
        "-std=c++17".to_string(),
        "--expt-relaxed-constexpr".into(),
        "-isystem".into(),
        tc.cutlass_include.display().to_string(),
        "-DNDEBUG".into(),
        "-Xcudafe".into(),
        "--diag_suppress=esa_on_defaulted_function_ignored".into(),
    ];
    flags.extend(tc.gencode_flags());

    // What an object depends on besides its own source: compiler, flags, and the headers it can
    // include. Kernel files (cpp/kernels/) see only cpp/kernels/*.cuh, the menu and the shared
    // structs, so a bridge edit does not recompile them; the other sources see all of cpp/.
    let sources: Vec<PathBuf> = SOURCES.iter().map(|s| manifest_dir.join(s)).collect();
    let kernels_dir = manifest_dir.join("cpp/kernels");
    let mut files = Vec::new();
    list_files(&manifest_dir.join("cpp"), &mut files);
    // cpp/no_cuda.cc is the stand-in for this library (build.rs), never part of it.
    files.retain(|f| !sources.contains(f) && !f.ends_with("no_cuda.cc"));
    files.push(cxx_include.join("cute-copy/src/ffi.rs.h"));
    files.sort();
    // The compiler and CUTLASS by what they are, not where they are installed.
    let cutlass_include = tc.cutlass_include.display().to_string();
    let key_flags: Vec<&str> = flags
        .iter()
        .map(|f| {
            if *f == cutlass_include {
                "<cutlass>"
            } else {
                f
            }
        })
        .collect();
    let compiler = [
        nvcc_version(&tc.nvcc),
        String::from_utf8_lossy(
            &std::fs::read(tc.cutlass_include.join("cutlass/version.h")).unwrap_or_default(),
        )
        .into_owned(),
        key_flags.join(" "),
    ];
    let cpp_dir = manifest_dir.join("cpp");
    let hash_of = |keep: &dyn Fn(&Path) -> bool| {
        let mut parts = compiler.to_vec();
        for f in files.iter().filter(|f| keep(f)) {
            // Named inside cpp/ (the generated header by a fixed name): the same names in every
            // checkout and every OUT_DIR.
            let name = f.strip_prefix(&cpp_dir).map_or_else(
                |_| "<cxxbridge>/ffi.rs.h".into(),
                |p| p.display().to_string(),
            );
            parts.push(name);
            parts.push(String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()).into_owned());
        }
        fnv1a(parts.join("\0").as_bytes())
    };
    let all_headers = hash_of(&|_| true);
    let kernel_headers = hash_of(&|f| {
        f.starts_with(&kernels_dir) || f.ends_with("menu.def") || f.ends_with("ffi.rs.h")
    });

    // Objects are named by their key, so one cache serves every build script run of the profile
    // (clippy's and the test build's have their own OUT_DIRs): CUTE_COPY_NVCC_CACHE when set, else
    // target/<profile>/cute-copy-nvcc.
    let cache = std::env::var_os(CACHE_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            out_dir
                .ancestors()
                .nth(3)
                .filter(|p| p.join("build").is_dir())
                .map(|p| p.join("cute-copy-nvcc"))
        })
        .unwrap_or_else(|| out_dir.join("cuda-objects"));
    std::fs::create_dir_all(&cache).expect("create the CUDA object cache");
    let units: Vec<Unit> = SOURCES
        .iter()
        .flat_map(|s| {
            let src = manifest_dir.join(s);
            let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
            if SPLIT_BY_SRC_WIDTH.contains(s) {
                widths
                    .iter()
                    .enumerate()
                    .map(|(i, w)| {
                        let mut defines = vec![format!("CUTE_COPY_SRC_WIDTH={w}")];
                        if i == 0 {
                            defines.push("CUTE_COPY_FIRST_PART".into());
                        }
                        Unit {
                            src: src.clone(),
                            defines,
                            name: format!("{stem}-w{w}"),
                        }
                    })
                    .collect::<Vec<_>>()
            } else {
                vec![Unit {
                    src,
                    defines: Vec::new(),
                    name: stem,
                }]
            }
        })
        .collect();
    let cached: Vec<PathBuf> = units
        .iter()
        .map(|u| {
            let shared = if u.src.starts_with(&kernels_dir) {
                kernel_headers
            } else {
                all_headers
            };
            let own = [
                std::fs::read(&u.src).unwrap_or_default(),
                u.defines.join(" ").into_bytes(),
            ];
            let key = shared ^ fnv1a(&own.join(&0u8)).rotate_left(17);
            cache.join(format!("{}-{key:016x}.o", u.name))
        })
        .collect();
    let stale: Vec<usize> = (0..units.len()).filter(|&i| !cached[i].is_file()).collect();
    // cc runs the nvcc named by NVCC when building CUDA.
    std::env::set_var("NVCC", &tc.nvcc);
    let compile = |i: usize| {
        let unit = &units[i];
        let started = std::time::Instant::now();
        // One file per cc build: each object is whole-program CUDA (cc passes --device-c only for
        // several files), so the library needs no device-link step. Each in a folder of its own:
        // the parts of one source would otherwise share an intermediate's name.
        let mut build = cc::Build::new();
        build
            .cuda(true)
            .cudart("none")
            // Kernels are always built optimised and without device debug info (cc would add -G,
            // -O0 in a debug profile: minutes more to compile and much slower kernels).
            .debug(false)
            .opt_level(3)
            .out_dir(out_dir.join("nvcc").join(&unit.name))
            .file(&unit.src)
            .include(manifest_dir.join("cpp/include"))
            .include(manifest_dir.join("cpp"))
            .include(cxx_include)
            .warnings(false);
        for f in &flags {
            build.flag(f);
        }
        for d in &unit.defines {
            let (name, value) = d
                .split_once('=')
                .map_or((d.as_str(), None), |(n, v)| (n, Some(v)));
            build.define(name, value);
        }
        let objects = build.compile_intermediates();
        // Copy then rename: a build script running beside this one never sees half an object.
        let part = cached[i].with_extension(format!("part{}", std::process::id()));
        std::fs::copy(&objects[0], &part).expect("cache a CUDA object");
        std::fs::rename(&part, &cached[i]).expect("cache a CUDA object");
        println!(
            "cute-copy: nvcc compiled {} in {:.0} s",
            unit.name,
            started.elapsed().as_secs_f64()
        );
    };
    // The stale objects side by side, the longest first (SOURCES' order), on as many threads as
    // cargo gives this build (its -j, NUM_JOBS). nvcc runs one thread per object.
    let jobs = jobs().min(stale.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = stale.get(n) else { break };
                compile(i);
            });
        }
    });
    let lib = out_dir.join(format!("lib{LIB}.a"));
    let _ = std::fs::remove_file(&lib);
    let status = std::process::Command::new(std::env::var("AR").unwrap_or_else(|_| "ar".into()))
        .arg("crs")
        .arg(&lib)
        .args(&cached)
        .status()
        .expect("run ar");
    assert!(status.success(), "ar failed to archive the CUDA objects");
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=static={LIB}");

    for dir in tc.lib_dirs() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in ["cudart_static", "stdc++", "dl", "pthread", "rt"] {
        println!("cargo:rustc-link-lib={lib}");
    }
}

/// How many nvcc processes may run at once: cargo's job count for this build (`-j`, NUM_JOBS),
/// else the machine's cores.
fn jobs() -> usize {
    std::env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// What `nvcc --version` prints: the compiler's identity, wherever it is installed.
fn nvcc_version(nvcc: &Path) -> String {
    std::process::Command::new(nvcc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|_| nvcc.display().to_string())
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
