//! Running the compiler on untrusted code: a private work dir, time and memory limits,
//! a clean environment.
//!
//! Every compiler process runs as `timeout --kill-after=5 <T> prlimit --as=<M> --core=0
//! -- clang++ ...` (coreutils `timeout` signals the whole process group, so the driver's
//! children go too; `prlimit` limits are inherited by them), with its working directory
//! set to a fresh folder under the system temp dir (mode 0700, removed on drop), `TMPDIR`
//! and `HOME` pointing into it, and no other environment than `PATH` and `LANG=C`. The
//! code is only ever compiled (`-S -o /dev/null` or `-fsyntax-only`), never linked or run.

use std::ffi::OsString;
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::CompileError;

/// Prefix of the work dirs; the creating process id follows it.
const PREFIX: &str = "rocqa-compile-";

/// Removes the work dirs of processes that no longer run (killed with `kill -9`, which
/// skips the removal on drop). Only dirs this user owns are touched.
fn sweep_stale(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    for entry in std::fs::read_dir(base).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let mine = entry.metadata().ok().map(|m| m.uid()) == me;
        if mine && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Sweeps the work dirs killed runs left ([`sweep_stale`]), once per process: every
/// compile check set-up calls it, whether or not it then compiles anything (its
/// verdicts and probes may all come from the cache).
pub(crate) fn sweep_once() {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep_stale(&std::env::temp_dir()));
}

/// A private folder under the system temp dir, removed with everything in it on drop.
#[derive(Debug)]
pub(crate) struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    /// Creates a fresh folder (never an existing one) readable only by this user.
    pub fn new() -> Result<WorkDir, CompileError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        sweep_once();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut last = None;
        for _ in 0..8 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("{PREFIX}{}-{n}-{nanos:08x}", std::process::id()));
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(WorkDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => {
                    return Err(CompileError::TempDir {
                        dir: base,
                        source: e,
                    })
                }
            }
        }
        Err(CompileError::TempDir {
            dir: base,
            source: last.unwrap_or_else(|| std::io::Error::other("no free name")),
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `name` (a plain file name) into the folder.
    pub fn write(&self, name: &str, text: &str) -> Result<(), CompileError> {
        let p = self.path.join(name);
        std::fs::write(&p, text).map_err(|e| CompileError::TempDir {
            dir: self.path.clone(),
            source: e,
        })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), error = %e, "Could not remove a compile work dir.");
        }
    }
}

/// Time and memory for one compiler process.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub timeout_secs: u64,
    pub memory_mb: u64,
}

/// How a limited run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum End {
    /// The compiler exited with this code.
    Exited(i32),
    /// It ran past the time limit.
    TimedOut,
    /// It ran out of (address space) memory.
    OutOfMemory,
    /// It crashed (a signal, or an internal compiler error).
    Crashed,
}

/// What a limited run left.
#[derive(Debug, Clone)]
pub(crate) struct Ran {
    pub end: End,
    pub stderr: String,
}

const OOM_MARKS: &[&str] = &[
    "Cannot allocate memory",
    "out of memory",
    "std::bad_alloc",
    "failed to map segment",
    "Allocation failed",
    "unable to allocate",
];
const CRASH_MARKS: &[&str] = &[
    "PLEASE submit a bug report",
    "Stack dump:",
    "frontend command failed due to signal",
    "clang frontend command failed with exit code",
];

/// The `PATH` given to child processes.
fn child_path() -> OsString {
    std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
}

/// Runs `program args` under the limits in `dir`.
pub(crate) fn run(
    program: &Path,
    args: &[String],
    dir: &Path,
    limits: Limits,
) -> Result<Ran, CompileError> {
    let mut cmd = Command::new("timeout");
    cmd.arg("--kill-after=5")
        .arg(format!("{}s", limits.timeout_secs.max(1)))
        .arg("prlimit")
        .arg(format!(
            "--as={}",
            limits.memory_mb.max(1).saturating_mul(1024 * 1024)
        ))
        .arg("--core=0")
        .arg("--")
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", child_path())
        .env("HOME", dir)
        .env("TMPDIR", dir)
        .env("LANG", "C")
        .stdin(Stdio::null());
    let start = Instant::now();
    let out = cmd.output().map_err(|e| CompileError::Spawn {
        command: format!("timeout ... prlimit ... {}", program.display()),
        source: e,
    })?;
    let elapsed = start.elapsed().as_secs();
    let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !stdout.trim().is_empty() {
        stderr.push_str(&stdout);
    }
    let code = out.status.code();
    let end = if code == Some(124) || (code == Some(137) && elapsed >= limits.timeout_secs) {
        End::TimedOut
    } else if OOM_MARKS.iter().any(|m| stderr.contains(m)) {
        End::OutOfMemory
    } else if matches!(code, Some(125..=127)) {
        return Err(CompileError::Spawn {
            command: format!("timeout ... prlimit ... {}", program.display()),
            source: std::io::Error::other(format!(
                "exit status {}: {}",
                code.unwrap_or(-1),
                stderr.trim()
            )),
        });
    } else if code.is_none_or(|c| c > 128) || CRASH_MARKS.iter().any(|m| stderr.contains(m)) {
        End::Crashed
    } else {
        End::Exited(code.unwrap_or(-1))
    };
    Ok(Ran { end, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_dirs_are_private_fresh_and_removed() {
        let (a, b) = (WorkDir::new().unwrap(), WorkDir::new().unwrap());
        assert_ne!(a.path(), b.path());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        a.write("x.hip", "int x;").unwrap();
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists());
    }

    #[test]
    fn limits_and_environment_apply() {
        let d = WorkDir::new().unwrap();
        let lim = Limits {
            timeout_secs: 1,
            memory_mb: 512,
        };
        let r = run(
            Path::new("sh"),
            &["-c".into(), "sleep 5".into()],
            d.path(),
            lim,
        )
        .unwrap();
        assert_eq!(r.end, End::TimedOut);
        let env = run(
            Path::new("sh"),
            &["-c".into(), "env; pwd >&2".into()],
            d.path(),
            lim,
        )
        .unwrap();
        assert_eq!(env.end, End::Exited(0));
        let names: Vec<&str> = env
            .stderr
            .lines()
            .filter_map(|l| l.split('=').next())
            .collect();
        for n in &names {
            assert!(
                ["PATH", "HOME", "TMPDIR", "LANG", "PWD", "SHLVL", "_"].contains(n)
                    || n.starts_with('/'),
                "unexpected variable {n}"
            );
        }
        assert!(env.stderr.contains(&d.path().display().to_string()));
        let soft = run(
            Path::new("sh"),
            &["-c".into(), "exit 1".into()],
            d.path(),
            lim,
        )
        .unwrap();
        assert_eq!(soft.end, End::Exited(1));
    }
}
