//! Finding nvcc and the CUTLASS headers for build.rs.
//!
//! nvcc: `NVCC`, then `CUDA_HOME` / `CUDA_PATH` (`bin/nvcc`), then `nvcc` on `PATH`, then
//! `/usr/local/cuda`, then the pinned wheels that `third_party/install.sh` puts in
//! `third_party/.toolchain`. CUTLASS: `CUTLASS_DIR` (a folder holding `include/cute`), then
//! `third_party/.toolchain`.

use std::env;
use std::path::{Path, PathBuf};

pub const ENV_VARS: &[&str] = &[
    "NVCC",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUTLASS_DIR",
    "CUDA_COMPUTE_CAP",
    "CUTE_COPY_CUDA_ARCHS",
];

pub struct Toolchain {
    pub nvcc: PathBuf,
    /// The toolkit root: `include/` and `lib/` or `lib64/` below it.
    pub cuda_root: PathBuf,
    /// The folder that holds `cute/` and `cutlass/`.
    pub cutlass_include: PathBuf,
}

impl Toolchain {
    pub fn find(manifest_dir: &Path) -> Result<Self, String> {
        let pinned = manifest_dir.join("third_party/.toolchain");
        let nvcc = find_nvcc(&pinned).ok_or("nvcc not found")?;
        let cuda_root = nvcc
            .canonicalize()
            .unwrap_or_else(|_| nvcc.clone())
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .ok_or("nvcc has no parent folder")?;
        let cutlass_include =
            find_cutlass(&pinned).ok_or("the CUTLASS headers (cute/) were not found")?;
        Ok(Toolchain {
            nvcc,
            cuda_root,
            cutlass_include,
        })
    }

    /// Library folders to search for `cudart_static`: the wheels use `lib/`, a system CUDA `lib64/`.
    pub fn lib_dirs(&self) -> Vec<PathBuf> {
        [
            "lib64",
            "lib",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ]
        .iter()
        .map(|d| self.cuda_root.join(d))
        .filter(|d| d.is_dir())
        .collect()
    }

    /// `-gencode` flags: sm_80 and sm_90 SASS plus compute_90 PTX by default; `CUDA_COMPUTE_CAP=90`
    /// (or `CUTE_COPY_CUDA_ARCHS=80,90`) narrows the SASS list, and PTX comes only with the default.
    /// `CUTE_COPY_CUDA_ARCHS=default` keeps the default whatever `CUDA_COMPUTE_CAP` says (for a
    /// build whose other crates need `CUDA_COMPUTE_CAP`, e.g. candle's kernels).
    pub fn gencode_flags() -> Vec<String> {
        let narrowed = env::var("CUTE_COPY_CUDA_ARCHS")
            .or_else(|_| env::var("CUDA_COMPUTE_CAP"))
            .ok()
            .filter(|s| !s.trim().is_empty() && s.trim() != "default");
        let archs: Vec<String> = match &narrowed {
            Some(list) => list
                .split(',')
                .map(|a| a.trim().trim_start_matches("sm_").replace('.', ""))
                .filter(|a| !a.is_empty())
                .collect(),
            None => vec!["80".into(), "90".into()],
        };
        let mut flags: Vec<String> = archs
            .iter()
            .map(|a| format!("-gencode=arch=compute_{a},code=sm_{a}"))
            .collect();
        if narrowed.is_none() {
            flags.push("-gencode=arch=compute_90,code=compute_90".into());
        }
        flags
    }
}

fn executable(p: PathBuf) -> Option<PathBuf> {
    p.is_file().then_some(p)
}

fn find_nvcc(pinned: &Path) -> Option<PathBuf> {
    if let Some(p) = env::var_os("NVCC") {
        return executable(PathBuf::from(p));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = env::var_os(var) {
            if let Some(p) = executable(PathBuf::from(root).join("bin/nvcc")) {
                return Some(p);
            }
        }
    }
    if let Some(path) = env::var_os("PATH") {
        if let Some(p) = env::split_paths(&path).find_map(|d| executable(d.join("nvcc"))) {
            return Some(p);
        }
    }
    executable(PathBuf::from("/usr/local/cuda/bin/nvcc"))
        .or_else(|| executable(pinned.join("nvidia/cu13/bin/nvcc")))
}

fn find_cutlass(pinned: &Path) -> Option<PathBuf> {
    if let Some(dir) = env::var_os("CUTLASS_DIR") {
        let dir = PathBuf::from(dir);
        return [dir.join("include"), dir]
            .into_iter()
            .find(|d| d.join("cute/tensor.hpp").is_file());
    }
    let p = pinned.join("cutlass_library/source/include");
    p.join("cute/tensor.hpp").is_file().then_some(p)
}
