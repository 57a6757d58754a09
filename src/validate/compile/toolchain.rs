//! Finding the ROCm compiler, its device libraries and the GPU targets it accepts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use regex::Regex;

use super::sandbox::{self, End, Limits, WorkDir};
use super::CompileError;

/// The targets probed when none are asked for: the three bookworm's ROCm 5.2.3 clang-15
/// accepts (gfx941/gfx942 are "invalid target ID" there, gfx1100 has no device library).
pub const DEFAULT_TARGETS: &[&str] = &["gfx908", "gfx90a", "gfx940"];

/// The packages that provide the compiler on Debian 12, for error messages.
pub(crate) const INSTALL_HINT: &str = "install it with `apt-get install --no-install-recommends hipcc libamdhip64-dev rocm-device-libs` (Debian 12), or run scripts/setup-hip.sh";

/// A HIP-capable clang, the HIP headers and device libraries it compiles against, and
/// the GPU targets it accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct Toolchain {
    /// The clang++ driver, e.g. `/usr/bin/clang++-15`.
    pub clang: PathBuf,
    /// E.g. `clang 15.0.6 (Debian)`.
    pub version: String,
    /// GPU targets the toolchain was found to accept, e.g. `gfx90a`.
    pub targets: Vec<String>,
    /// `--rocm-path`: the prefix holding `include/hip/hip_runtime.h` (`/usr` on Debian).
    pub rocm_path: PathBuf,
    /// `--rocm-device-lib-path`: the folder holding `ocml.bc` and friends.
    pub device_lib_path: PathBuf,
    /// Version of the device libraries (ROCm release), e.g. `5.2.3`, or `unknown`.
    pub device_lib_version: String,
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn find_clang() -> Result<PathBuf, CompileError> {
    let mut looked = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    // hipcc's own variable for the clang it drives.
    if let Some(d) = std::env::var_os("HIP_CLANG_PATH") {
        candidates.push(PathBuf::from(d).join("clang++"));
    }
    match which("clang++-15") {
        Some(p) => candidates.push(p),
        None => looked.push("clang++-15 in PATH".to_string()),
    }
    candidates.push("/usr/lib/llvm-15/bin/clang++".into());
    candidates.push("/opt/rocm/llvm/bin/clang++".into());
    for c in candidates {
        if c.is_file() {
            return Ok(c);
        }
        looked.push(c.display().to_string());
    }
    Err(CompileError::ClangMissing {
        looked: looked.join(", "),
    })
}

fn clang_version(clang: &Path) -> Result<String, CompileError> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^(?P<vendor>.*?)\s*clang version (?P<v>\d+(?:\.\d+)*)").expect("static regex")
    });
    let out = Command::new(clang)
        .arg("--version")
        .env("LANG", "C")
        .output()
        .map_err(|e| CompileError::Spawn {
            command: format!("{} --version", clang.display()),
            source: e,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("").trim();
    let c = re.captures(first).ok_or_else(|| CompileError::NotAClang {
        path: clang.to_path_buf(),
        said: first.to_string(),
    })?;
    let vendor = c["vendor"].trim();
    Ok(if vendor.is_empty() {
        format!("clang {}", &c["v"])
    } else {
        format!("clang {} ({vendor})", &c["v"])
    })
}

fn find_rocm() -> Result<PathBuf, CompileError> {
    let mut candidates: Vec<PathBuf> = ["ROCM_PATH", "HIP_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .collect();
    candidates.extend(["/usr".into(), "/opt/rocm".into()]);
    candidates
        .iter()
        .find(|p| p.join("include/hip/hip_runtime.h").is_file())
        .cloned()
        .ok_or_else(|| CompileError::HipHeadersMissing {
            looked: candidates
                .iter()
                .map(|p| p.join("include/hip").display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

fn find_device_libs(rocm: &Path) -> Result<PathBuf, CompileError> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("HIP_DEVICE_LIB_PATH")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    for triplet in ["x86_64-linux-gnu", "aarch64-linux-gnu"] {
        candidates.push(rocm.join("lib").join(triplet).join("amdgcn/bitcode"));
    }
    candidates.push(rocm.join("lib/amdgcn/bitcode"));
    candidates.push(rocm.join("amdgcn/bitcode"));
    candidates
        .iter()
        .find(|p| p.join("ocml.bc").is_file())
        .cloned()
        .ok_or_else(|| CompileError::DeviceLibsMissing {
            looked: candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The device libraries' release: Debian's package version without epoch and revision,
/// else AMD's `<rocm>/.info/version`, else `unknown`.
fn device_lib_version(rocm: &Path) -> String {
    let dpkg = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", "rocm-device-libs"])
        .env("LANG", "C")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty());
    if let Some(v) = dpkg {
        let v = v.split_once(':').map_or(v.as_str(), |(_, r)| r);
        let v = v.rsplit_once('-').map_or(v, |(u, _)| u);
        return v.split('+').next().unwrap_or(v).to_string();
    }
    std::fs::read_to_string(rocm.join(".info/version"))
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.trim().to_string()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// A GPU target name as clang takes it: `gfx90a`, `gfx90a:xnack-`, `gfx908:sramecc+`.
pub(crate) fn valid_target(t: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^gfx[0-9a-f]{3,4}(:[a-z]+[+-])*$").expect("static regex"))
        .is_match(t)
}

const PROBE: &str =
    "#include <hip/hip_runtime.h>\n__global__ void rocqa_probe(int* p) { p[threadIdx.x] = 0; }\n";

impl Toolchain {
    /// Finds clang++-15 (or hipcc's clang) and the device libraries; `targets` None =
    /// every one of gfx908/gfx90a/gfx940 the toolchain accepts.
    ///
    /// Each candidate target is probed once by generating device code for an empty
    /// kernel (the probes run in parallel, ~1-2 s in all); the answer stays in
    /// [`Toolchain::targets`]. With explicit targets, any one the toolchain refuses is an
    /// error. A missing piece is an error that names the Debian package to install.
    pub fn detect(targets: Option<&[String]>) -> Result<Toolchain, CompileError> {
        Toolchain::detect_cached(targets, None)
    }

    /// [`Toolchain::detect`], keeping each probe's answer in the compile cache at
    /// `cache` (keyed by compiler, device libraries and target): the probes are most of a
    /// run's fixed cost, and their answer changes only with the toolchain.
    pub fn detect_cached(
        targets: Option<&[String]>,
        cache: Option<&Path>,
    ) -> Result<Toolchain, CompileError> {
        sandbox::sweep_once();
        for (tool, package) in [("timeout", "coreutils"), ("prlimit", "util-linux")] {
            if which(tool).is_none() {
                return Err(CompileError::ToolMissing { tool, package });
            }
        }
        let clang = find_clang()?;
        let version = clang_version(&clang)?;
        let rocm_path = find_rocm()?;
        let device_lib_path = find_device_libs(&rocm_path)?;
        let device_lib_version = device_lib_version(&rocm_path);
        let explicit = targets.is_some();
        let candidates: Vec<String> = match targets {
            Some([]) => return Err(CompileError::NoTargetsGiven),
            Some(t) => t.to_vec(),
            None => DEFAULT_TARGETS.iter().map(|s| s.to_string()).collect(),
        };
        if let Some(bad) = candidates.iter().find(|t| !valid_target(t)) {
            return Err(CompileError::InvalidTarget(bad.clone()));
        }
        let mut tc = Toolchain {
            clang,
            version,
            targets: Vec::new(),
            rocm_path,
            device_lib_path,
            device_lib_version,
        };
        let cache = cache.map(super::cache::Cache::open).transpose()?;
        let probes: Vec<Result<Option<String>, CompileError>> = std::thread::scope(|s| {
            let handles: Vec<_> = candidates
                .iter()
                .map(|t| {
                    let (tc, cache) = (&tc, cache.as_ref());
                    s.spawn(move || tc.probe_cached(t, cache))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("probe thread"))
                .collect()
        });
        let mut refused = Vec::new();
        for (t, r) in candidates.iter().zip(probes) {
            match r? {
                None => tc.targets.push(t.clone()),
                Some(why) if explicit => {
                    return Err(CompileError::TargetRefused {
                        target: t.clone(),
                        compiler: tc.version.clone(),
                        reason: why,
                    })
                }
                Some(why) => refused.push(format!("{t}: {why}")),
            }
        }
        if tc.targets.is_empty() {
            return Err(CompileError::NoTargets {
                compiler: tc.version.clone(),
                reasons: refused.join("; "),
            });
        }
        for r in &refused {
            tracing::info!(refused = %r, "Target not accepted by the toolchain.");
        }
        Ok(tc)
    }

    /// [`Toolchain::probe`], answered from `cache` when it holds this toolchain's
    /// answer for `target`.
    fn probe_cached(
        &self,
        target: &str,
        cache: Option<&super::cache::Cache>,
    ) -> Result<Option<String>, CompileError> {
        let key = {
            use sha2::{Digest, Sha256};
            let mut h = Sha256::new();
            for part in [
                "probe",
                &self.clang.display().to_string(),
                &self.version,
                &self.rocm_path.display().to_string(),
                &self.device_lib_path.display().to_string(),
                &self.device_lib_version,
                target,
                PROBE,
            ] {
                h.update(part.as_bytes());
                h.update([0]);
            }
            format!("{:x}", h.finalize())
        };
        if let Some(v) = cache.and_then(|c| c.get(&key)) {
            return Ok((!v.ok).then_some(v.diagnostics));
        }
        let (answer, settled) = self.probe(target)?;
        // A probe cut short by the machine (time, memory) says nothing about the target.
        if let Some(c) = cache.filter(|_| settled) {
            c.put(
                &key,
                &super::Verdict {
                    ok: answer.is_none(),
                    stage: "probe".into(),
                    diagnostics: answer.clone().unwrap_or_default(),
                },
            );
        }
        Ok(answer)
    }

    /// `None` when `target` accepts an empty kernel; else clang's first error line. The
    /// flag says whether the compiler ran to its end (an exit, not a limit or a crash).
    fn probe(&self, target: &str) -> Result<(Option<String>, bool), CompileError> {
        let wd = WorkDir::new()?;
        wd.write("probe.hip", PROBE)?;
        let mut args = self.base_args();
        args.extend([
            format!("--offload-arch={target}"),
            "--offload-device-only".into(),
            "-S".into(),
            "-o".into(),
            "/dev/null".into(),
            "probe.hip".into(),
        ]);
        let limits = Limits {
            timeout_secs: 120,
            memory_mb: 4096,
        };
        let ran = sandbox::run(&self.clang, &args, wd.path(), limits)?;
        let settled = matches!(ran.end, End::Exited(_));
        Ok(match ran.end {
            End::Exited(0) => (None, true),
            _ => (
                Some(
                    ran.stderr
                        .lines()
                        .find(|l| l.contains("error"))
                        .unwrap_or_else(|| ran.stderr.lines().next().unwrap_or("failed"))
                        .trim()
                        .to_string(),
                ),
                settled,
            ),
        })
    }

    /// Flags every invocation shares: HIP language, C++17, the ROCm paths, errors only,
    /// no error limit, plain diagnostics, no crash reproducers.
    pub(crate) fn base_args(&self) -> Vec<String> {
        vec![
            "-x".into(),
            "hip".into(),
            "-std=c++17".into(),
            format!("--rocm-path={}", self.rocm_path.display()),
            format!("--rocm-device-lib-path={}", self.device_lib_path.display()),
            "-w".into(),
            "-ferror-limit=0".into(),
            "-fno-caret-diagnostics".into(),
            "-fno-color-diagnostics".into(),
            "-fno-crash-diagnostics".into(),
        ]
    }

    /// `clang 15.0.6 (Debian), ROCm 5.2.3 device libs, targets gfx908,gfx90a,gfx940`.
    pub fn describe(&self) -> String {
        format!(
            "{}, ROCm {} device libs, targets {}",
            self.version,
            self.device_lib_version,
            self.targets.join(",")
        )
    }

    /// `llvm-cxxfilt` next to clang, for demangling backend diagnostics.
    pub(crate) fn cxxfilt(&self) -> Option<PathBuf> {
        let dir = self.clang.parent()?;
        let major = self
            .version
            .strip_prefix("clang ")
            .and_then(|v| v.split('.').next())
            .unwrap_or("15");
        [
            dir.join(format!("llvm-cxxfilt-{major}")),
            dir.join("llvm-cxxfilt"),
            PathBuf::from(format!("/usr/lib/llvm-{major}/bin/llvm-cxxfilt")),
        ]
        .into_iter()
        .find(|p| p.is_file())
        .or_else(|| which("llvm-cxxfilt"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names() {
        for ok in [
            "gfx90a",
            "gfx908",
            "gfx1100",
            "gfx90a:xnack-",
            "gfx908:sramecc+:xnack+",
        ] {
            assert!(valid_target(ok), "{ok}");
        }
        for bad in [
            "",
            "sm_80",
            "gfx90a -o /x",
            "gfx90a:",
            "--offload-arch=gfx90a",
        ] {
            assert!(!valid_target(bad), "{bad}");
        }
    }

    #[test]
    fn describe_names_compiler_libs_and_targets() {
        let tc = Toolchain {
            clang: "/usr/bin/clang++-15".into(),
            version: "clang 15.0.6 (Debian)".into(),
            targets: vec!["gfx908".into(), "gfx90a".into()],
            rocm_path: "/usr".into(),
            device_lib_path: "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode".into(),
            device_lib_version: "5.2.3".into(),
        };
        assert_eq!(
            tc.describe(),
            "clang 15.0.6 (Debian), ROCm 5.2.3 device libs, targets gfx908,gfx90a"
        );
    }
}
