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
    /// The GPU targets of the kernels (`gencode_flags`).
    pub targets: Targets,
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
            targets: Targets::choose(),
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

    /// `-gencode` flags, first found wins:
    /// - `CUTE_COPY_CUDA_ARCHS`: a list (`80,90`), SASS for each; `default` (or `portable`) is the
    ///   portable set below, whatever `CUDA_COMPUTE_CAP` says (for a build whose other crates need
    ///   `CUDA_COMPUTE_CAP`, e.g. candle's kernels), and what release wheels should be built with;
    /// - `CUDA_COMPUTE_CAP` (candle's and bindgen_cuda's variable): a list as above;
    /// - the GPUs this machine has (`nvidia-smi --query-gpu=compute_cap`), SASS for each of
    ///   compute capability 8.0 or more: a clean build on the machine that runs it compiles one
    ///   target, half the nvcc work of the portable set;
    /// - else the portable set: sm_80 and sm_90 SASS plus compute_90 PTX (the driver compiles the
    ///   PTX for later GPUs).
    pub fn gencode_flags(&self) -> Vec<String> {
        match &self.targets {
            Targets::Listed(archs, _) => archs
                .iter()
                .map(|a| format!("-gencode=arch=compute_{a},code=sm_{a}"))
                .collect(),
            Targets::Portable => vec![
                "-gencode=arch=compute_80,code=sm_80".into(),
                "-gencode=arch=compute_90,code=sm_90".into(),
                "-gencode=arch=compute_90,code=compute_90".into(),
            ],
        }
    }
}

/// What the kernels are compiled for: named archs (SASS only) and who named them, or the portable
/// set.
pub enum Targets {
    Listed(Vec<String>, &'static str),
    Portable,
}

impl Targets {
    /// The targets as `Toolchain::gencode_flags` documents them.
    fn choose() -> Targets {
        let var = |name: &str| {
            env::var(name)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        for name in ["CUTE_COPY_CUDA_ARCHS", "CUDA_COMPUTE_CAP"] {
            if let Some(list) = var(name) {
                return match list.as_str() {
                    "default" | "portable" => Targets::Portable,
                    _ => Targets::Listed(parse_archs(&list), name),
                };
            }
        }
        match local_gpu_archs() {
            Some(archs) => Targets::Listed(archs, "nvidia-smi"),
            None => Targets::Portable,
        }
    }

    /// For `cute_copy::GPU_TARGETS`: `sm_90 (nvidia-smi)`, `sm_80,sm_90,compute_90 (portable)`.
    pub fn describe(&self) -> String {
        match self {
            Targets::Listed(archs, from) => {
                let sm: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
                format!("{} ({from})", sm.join(","))
            }
            Targets::Portable => "sm_80,sm_90,compute_90 (portable)".into(),
        }
    }
}

/// `90`, `sm_90`, `9.0`, `90a` -> `90`, `90`, `90`, `90a`; a list separated by commas.
fn parse_archs(list: &str) -> Vec<String> {
    list.split(',')
        .map(|a| a.trim().trim_start_matches("sm_").replace('.', ""))
        .filter(|a| !a.is_empty())
        .collect()
}

/// The distinct compute capabilities (8.0 or later) of this machine's GPUs, as nvidia-smi reports
/// them, in order; None without nvidia-smi, without a GPU, or with one older than sm_80 (the
/// library's kernels need sm_80: the portable set then, as on a build machine without a GPU).
fn local_gpu_archs() -> Option<Vec<String>> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut archs: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (major, minor) = line.trim().split_once('.')?;
        let (major, minor): (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
        if major < 8 || minor > 9 {
            return None;
        }
        let arch = format!("{major}{minor}");
        if !archs.contains(&arch) {
            archs.push(arch);
        }
    }
    (!archs.is_empty()).then_some(archs)
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
