//! The compile check: does the HIP code in an answer compile with the real ROCm compiler?
//!
//! Takes [`Snippet`]s (an id and the code an LLM wrote); gives one [`CompileOutcome`] per
//! snippet, in input order: passed or not, the stage that stopped it (`screen`,
//! `frontend`, `backend`, `limit`) and clang's diagnostics rewritten in the snippet's own
//! terms (its file name `<id>.hip`, its own line numbers, no temp paths).
//!
//! The code is untrusted. [`screen`] rejects includes outside an allowlist, inline
//! assembly, `#line` and the like before any compiler sees it; the compiler then runs in
//! a private temp folder under `timeout` and `prlimit` with a clean environment (see
//! `sandbox`), and the code is only compiled, never linked or run.
//!
//! **Why device code generation.** `-fsyntax-only` misses every error the AMDGPU backend
//! raises: a 160 KB `__shared__` array passes it, and only code generation says `local
//! memory (160000) exceeds limit (65536) in function '_Z2k3Pf'`. So each snippet goes
//! through two kinds of invocation:
//!
//! | invocation | catches |
//! |---|---|
//! | device: `-x hip --offload-arch=<t> --offload-device-only -S -o /dev/null`, once per target | syntax errors, unknown identifiers and builtins, wrong kernel arguments, a kernel called without `<<<>>>`, host calling `__device__` directly, device code calling host functions (`std::vector` in a kernel, `__host__` from `__host__ __device__`), and everything the backend refuses (LDS over 64 KB, ...) |
//! | host: `--offload-host-only -fsyntax-only` | the host side of `__host__ __device__` code: a `__device__` function referenced from a `__host__ __device__` function that host code calls passes every device pass and fails only here |
//!
//! Clang checks both sides' overload rules during either parse, so a plain host function
//! calling a `__device__` one already fails the device pass ("no matching function");
//! the host pass exists for the deferred diagnostics of `__host__ __device__` functions,
//! which clang emits only for the side that actually uses them. Targets run one after
//! another and stop at the first failure, since one driver run with several
//! `--offload-arch` also stops at the first failing target (and cannot write `-o
//! /dev/null`). Nothing catches link errors (no link step), or errors inside a template
//! nobody instantiates.
//!
//! **Why batching.** Starting clang and parsing `hip_runtime.h` costs ~1 s; a small
//! kernel costs little more. So snippets that include the same headers share one
//! translation unit, each inside its own `namespace rocqa_s<k> { ... }` with its
//! `#include`s hoisted to the top and deduplicated, and its macros `#undef`ined after it
//! (measured in FACTS.md: one process per kernel 22/min, 20 per file 631/min). Front-end
//! errors keep their line, which names the snippet; backend errors name the mangled
//! function, `_ZN<len>rocqa_s<k>...`, which names the namespace. A failing batch never
//! fails a good snippet:
//! - a snippet whose errors all lie inside its own lines (or in headers it pulled in)
//!   fails straight from the batch, diagnostics mapped back to its lines, unless some
//!   error in the file belongs to nobody (then the structure broke and it is confirmed
//!   alone too);
//! - a snippet with an error that points at another snippet too (say `extern "C"`
//!   redefinitions) is compiled on its own, exactly as written, to confirm;
//! - the others are compiled again as a smaller batch (a backend error shows only once the
//!   whole file is free of front-end errors), and a failure nobody can be blamed for
//!   (an error only on a namespace line, a timeout, a crash) splits the batch in halves.
//!
//! A snippet passes only when a file holding it compiled cleanly for every target and
//! the host; it fails only on errors that are its own. Snippets whose preprocessing would
//! leak into their neighbours (an `#include` inside `#if` or after a `#define`,
//! unbalanced `#if`, braces, parentheses or brackets, an unterminated comment or raw
//! string, `#undef` of a name it did not define, `#define` of a reserved name, a line
//! splice inside a token) are compiled alone. Each batch file is screened again as a
//! whole before clang sees it. One known difference remains: inside its
//! namespace, a snippet that redefines a name a header declares globally (say its own
//! `atomicAdd`) compiles, while alone it would clash.
//!
//! Verdicts are cached by SHA-256 of the code, [`Toolchain::describe`] and the flags,
//! and batches run in parallel on up to [`CompileOptions::jobs`] threads.

mod cache;
mod diag;
mod sandbox;
mod screen;
mod toolchain;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use screen::{screen, MAX_SNIPPET_BYTES};
pub use toolchain::{Toolchain, DEFAULT_TARGETS};

use diag::{Group, Layout, NAME_MARK};
use sandbox::{End, Limits, WorkDir};

/// Bump when the verdicts or the diagnostics' rendering change, to retire cached ones.
const FORMAT_VERSION: u32 = 1;
/// Most bytes of diagnostics kept per snippet.
const MAX_DIAGNOSTICS: usize = 6000;
/// Below this, clang cannot even map its own libraries.
const MIN_MEMORY_MB: u64 = 512;

/// Stage names in [`CompileOutcome::stage`].
pub mod stage {
    /// Rejected by [`screen`](super::screen) before any compiler ran.
    pub const SCREEN: &str = "screen";
    /// Refused by the front end (parse, semantic checks), device or host side.
    pub const FRONTEND: &str = "frontend";
    /// Refused by the AMDGPU backend during device code generation.
    pub const BACKEND: &str = "backend";
    /// The compiler ran out of time or memory, crashed, or could not be started.
    pub const LIMIT: &str = "limit";
    /// Compiled for every target and the host.
    pub const OK: &str = "ok";
}

/// One piece of HIP code to check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snippet {
    /// Names the snippet in the outcome and in its diagnostics (`<id>.hip`).
    pub id: String,
    /// The code, as the LLM wrote it.
    pub code: String,
}

/// What the check found for one snippet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompileOutcome {
    /// The snippet's id.
    pub id: String,
    /// Compiled for every target and the host.
    pub ok: bool,
    /// `screen`, `frontend`, `backend`, `limit` or `ok` (see [`stage`]).
    pub stage: String,
    /// Why it failed: clang's errors and notes, trimmed, in the snippet's own file name
    /// and line numbers; empty when it passed.
    pub diagnostics: String,
    /// The verdict came from the cache.
    pub cached: bool,
}

/// Knobs of the compile check.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileOptions {
    /// Folders of library public headers (`-I`), e.g.
    /// `rocm_sources/headers/rocblas-6.4.4/usr/include` (fetched by scripts/setup-hip.sh).
    pub include_dirs: Vec<PathBuf>,
    /// Compiler processes at once.
    pub jobs: usize,
    /// Time limit of one compiler process for one snippet; a batch of n gets
    /// `timeout_secs * (1 + n / 10)`, and a batch that runs out is split.
    pub timeout_secs: u64,
    /// Address-space limit of one compiler process (`prlimit --as`), in MB.
    pub memory_mb: u64,
    /// Most snippets per translation unit.
    pub batch_size: usize,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            include_dirs: Vec::new(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            timeout_secs: 60,
            memory_mb: 2048,
            batch_size: 25,
        }
    }
}

/// Why the compile check cannot run.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// No HIP-capable clang.
    #[error(
        "no ROCm clang found (looked at {looked}): {}",
        toolchain::INSTALL_HINT
    )]
    ClangMissing {
        /// Where it looked.
        looked: String,
    },
    /// The file found does not say it is clang.
    #[error("{path} does not look like clang (it printed {said:?}); set HIP_CLANG_PATH to the folder of a ROCm clang++")]
    NotAClang {
        /// The file.
        path: PathBuf,
        /// First line of its `--version`.
        said: String,
    },
    /// No `hip/hip_runtime.h`.
    #[error("HIP headers not found (looked in {looked}): install libamdhip64-dev, or run scripts/setup-hip.sh")]
    HipHeadersMissing {
        /// Where it looked.
        looked: String,
    },
    /// No `ocml.bc`.
    #[error("ROCm device libraries (ocml.bc) not found (looked in {looked}): install rocm-device-libs, or run scripts/setup-hip.sh")]
    DeviceLibsMissing {
        /// Where it looked.
        looked: String,
    },
    /// `timeout` or `prlimit` missing.
    #[error("`{tool}` not found in PATH: install the Debian package {package}")]
    ToolMissing {
        /// The command.
        tool: &'static str,
        /// The package that has it.
        package: &'static str,
    },
    /// An empty target list.
    #[error("no GPU targets given: pass None to probe gfx908, gfx90a and gfx940, or name some")]
    NoTargetsGiven,
    /// Not a target name.
    #[error("{0:?} is not a GPU target name: expected e.g. gfx90a or gfx908:xnack-")]
    InvalidTarget(String),
    /// An asked-for target the toolchain refuses.
    #[error("{compiler} does not accept target {target}: {reason}; bookworm's ROCm 5.2.3 accepts gfx908, gfx90a and gfx940")]
    TargetRefused {
        /// The target.
        target: String,
        /// The toolchain.
        compiler: String,
        /// Clang's error.
        reason: String,
    },
    /// No default target works.
    #[error("{compiler} accepts none of gfx908, gfx90a, gfx940 ({reasons}): reinstall rocm-device-libs, or run scripts/setup-hip.sh")]
    NoTargets {
        /// The toolchain.
        compiler: String,
        /// Per target, clang's error.
        reasons: String,
    },
    /// An include folder that is not there.
    #[error("include folder {path} does not exist: run scripts/setup-hip.sh to fetch the rocBLAS / rocSOLVER headers")]
    IncludeDirMissing {
        /// The folder.
        path: PathBuf,
    },
    /// Options out of range.
    #[error("invalid compile options: {0}")]
    Options(String),
    /// The private work folder.
    #[error("cannot create or write a private work folder under {dir}: {source}; point TMPDIR at a writable folder")]
    TempDir {
        /// Where.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A process did not start.
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The cache file.
    #[error(
        "compile cache {path}: {what}: {detail}; delete the file to start with an empty cache"
    )]
    Cache {
        /// The file.
        path: PathBuf,
        /// What failed.
        what: String,
        /// The error.
        detail: String,
    },
}

/// A verdict on one code text, before it is given a snippet's name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub ok: bool,
    pub stage: String,
    /// With [`NAME_MARK`] where the snippet's file name goes.
    pub diagnostics: String,
}

impl Verdict {
    fn ok() -> Verdict {
        Verdict {
            ok: true,
            stage: stage::OK.into(),
            diagnostics: String::new(),
        }
    }

    fn fail(stage: &str, diagnostics: String) -> Verdict {
        Verdict {
            ok: false,
            stage: stage.into(),
            diagnostics,
        }
    }
}

/// One compiler invocation kind.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pass<'a> {
    /// Device code generation for one target.
    Device(&'a str),
    /// Host-side semantic checks.
    Host,
}

impl Pass<'_> {
    fn name(&self) -> &str {
        match self {
            Pass::Device(t) => t,
            Pass::Host => "host",
        }
    }
}

/// A snippet made ready for a batch: comments blanked, includes found.
#[derive(Debug)]
struct Prepared<'a> {
    /// Index into the unique codes.
    u: usize,
    /// The code as written (compiled alone).
    code: &'a str,
    /// Lines with comments blanked and the hoisted `#include` lines emptied.
    body: Vec<String>,
    /// `<hip/hip_runtime.h>` or `"x.h"`, with the line it was on, in order.
    includes: Vec<(String, u32)>,
    /// Macros it defines, `#undef`ined after it.
    defines: Vec<String>,
    /// False when its preprocessing could leak into other snippets of a file.
    batchable: bool,
}

fn prepare(u: usize, code: &str) -> Prepared<'_> {
    let lexed = screen::lex(code);
    let mut body: Vec<String> = lexed
        .no_comments
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect();
    if body.last().is_some_and(|l| l.is_empty()) {
        body.pop();
    }
    let mut batchable = !lexed.unterminated;
    let (mut includes, mut defined, mut depth) = (Vec::<(String, u32)>::new(), Vec::new(), 0i32);
    let mut seen_macro = false;
    let mut continued = false;
    for (i, line) in body.iter_mut().enumerate() {
        let is_continuation = continued;
        continued = line.trim_end().ends_with('\\');
        if is_continuation {
            continue;
        }
        let Some((name, rest)) = screen::directive(line) else {
            continue;
        };
        let word = |r: &str| {
            r.trim_start()
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")
                .to_string()
        };
        match name {
            "include" => match screen::include_target(rest) {
                Some((open, path)) if depth == 0 && !seen_macro && !continued => {
                    let spec = if open == '<' {
                        format!("<{path}>")
                    } else {
                        format!("\"{path}\"")
                    };
                    if !includes.iter().any(|(s, _)| *s == spec) {
                        includes.push((spec, i as u32 + 1));
                    }
                    line.clear();
                }
                _ => batchable = false,
            },
            "define" => {
                seen_macro = true;
                let w = word(rest);
                if !defined.contains(&w) {
                    defined.push(w);
                }
            }
            "undef" => {
                seen_macro = true;
                batchable &= defined.contains(&word(rest));
            }
            "if" | "ifdef" | "ifndef" => depth += 1,
            "endif" => {
                depth -= 1;
                batchable &= depth >= 0;
            }
            "else" | "elif" | "elifdef" | "elifndef" => batchable &= depth > 0,
            _ => {}
        }
    }
    batchable &= depth == 0;
    // Braces must balance, or the snippet would close (or swallow) its namespace; and
    // parentheses and brackets, or the parser's recovery would carry into the next one.
    for (o, c) in [('{', '}'), ('(', ')'), ('[', ']')] {
        let mut open = 0i64;
        for ch in lexed.code_only.chars() {
            if ch == o {
                open += 1;
            } else if ch == c {
                open -= 1;
                if open < 0 {
                    break;
                }
            }
        }
        batchable &= open == 0;
    }
    // A backslash-newline inside a token (`R\⏎"(...)"`, `/\⏎*`) makes this line-keeping
    // lexer and clang's disagree on what is a comment; one after a space cannot.
    batchable &= lexed.code_only.match_indices('\\').all(|(i, _)| {
        !code[i + 1..].starts_with('\n') && !code[i + 1..].starts_with("\r\n")
            || i == 0
            || code[..i].ends_with([' ', '\t', '\n'])
    });
    // Reserved names (`__HIP_PLATFORM_AMD__`) may be the compiler's or a header's own:
    // `#undef`ining them after the snippet would change its neighbours.
    batchable &= !defined.iter().any(|d| {
        d.is_empty()
            || d.starts_with("__")
            || d.strip_prefix('_')
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()))
    });
    // Belt and braces: what the batch file will hold of it, as clang reads it, passes
    // the screen too (the hoisted includes and the body).
    batchable = batchable && {
        let mut text: String = includes
            .iter()
            .map(|(spec, _)| format!("#include {spec}\n"))
            .collect();
        text.push_str(&body.join("\n"));
        screen::rules(&text).is_ok()
    };
    Prepared {
        u,
        code,
        body,
        includes,
        defines: defined,
        batchable,
    }
}

/// Writes the batch file: hoisted includes, then each snippet in its namespace.
fn assemble(items: &[&Prepared]) -> (String, Layout) {
    let mut hoisted: Vec<&str> = Vec::new();
    for p in items {
        for (spec, _) in &p.includes {
            if !hoisted.contains(&spec.as_str()) {
                hoisted.push(spec);
            }
        }
    }
    let mut out: Vec<String> = hoisted.iter().map(|s| format!("#include {s}")).collect();
    let hoisted_layout = hoisted
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let per = items
                .iter()
                .map(|p| p.includes.iter().find(|(s, _)| s == spec).map(|(_, l)| *l))
                .collect();
            (i as u32 + 1, per)
        })
        .collect();
    let mut spans = Vec::with_capacity(items.len());
    for (k, p) in items.iter().enumerate() {
        out.push(format!("namespace rocqa_s{k} {{"));
        spans.push((out.len() as u32 + 1, p.body.len().max(1) as u32));
        out.extend(p.body.iter().cloned());
        if p.body.is_empty() {
            out.push(String::new());
        }
        // An empty line first: a trailing backslash in the snippet splices into it, not
        // into the closing brace.
        out.push(String::new());
        out.push(format!("}} // namespace rocqa_s{k}"));
        out.extend(p.defines.iter().map(|d| format!("#undef {d}")));
    }
    out.push(String::new());
    (
        out.join("\n"),
        Layout {
            file: "batch.hip".into(),
            spans,
            hoisted: hoisted_layout,
        },
    )
}

/// Checks HIP snippets with the real ROCm compiler (see the module docs).
pub struct Compiler {
    tc: Toolchain,
    opts: CompileOptions,
    include_dirs: Vec<PathBuf>,
    /// Everything but the code that goes into a cache key.
    key_base: String,
    cache: Option<cache::Cache>,
    pool: rayon::ThreadPool,
    cxxfilt: Option<PathBuf>,
    /// Path prefixes cut from diagnostics, longest first.
    scrub: Vec<String>,
}

impl std::fmt::Debug for Compiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiler")
            .field("toolchain", &self.tc.describe())
            .field("opts", &self.opts)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl Compiler {
    /// Sets up the check: validates the options, resolves the include folders, opens the
    /// cache (a SQLite file, created if missing) and the worker pool.
    pub fn new(
        tc: Toolchain,
        opts: CompileOptions,
        cache: Option<&Path>,
    ) -> Result<Compiler, CompileError> {
        if opts.jobs == 0 || opts.batch_size == 0 || opts.timeout_secs == 0 {
            return Err(CompileError::Options(
                "jobs, batch_size and timeout_secs must be at least 1".into(),
            ));
        }
        if opts.memory_mb < MIN_MEMORY_MB {
            return Err(CompileError::Options(format!(
                "memory_mb must be at least {MIN_MEMORY_MB}: clang maps ~300 MB of address space before it reads a line"
            )));
        }
        if tc.targets.is_empty() {
            return Err(CompileError::NoTargetsGiven);
        }
        let mut include_dirs = Vec::new();
        for d in &opts.include_dirs {
            let c = d
                .canonicalize()
                .ok()
                .filter(|c| c.is_dir())
                .ok_or_else(|| CompileError::IncludeDirMissing { path: d.clone() })?;
            include_dirs.push(c);
        }
        let mut scrub: Vec<String> = include_dirs
            .iter()
            .chain(std::iter::once(&tc.rocm_path.join("include")))
            .map(|d| format!("{}/", d.display()))
            .collect();
        scrub.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let mut flags = tc.base_args();
        flags.extend(include_dirs.iter().map(|d| format!("-I{}", d.display())));
        let key_base = format!(
            "rocqa-compile v{FORMAT_VERSION}\0{}\0{}\0device -S, host -fsyntax-only",
            tc.describe(),
            flags.join(" ")
        );
        let cache = cache.map(cache::Cache::open).transpose()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.jobs)
            .thread_name(|i| format!("rocqa-compile-{i}"))
            .build()
            .map_err(|e| {
                CompileError::Options(format!("cannot start {} threads: {e}", opts.jobs))
            })?;
        let cxxfilt = tc.cxxfilt();
        Ok(Compiler {
            tc,
            opts,
            include_dirs,
            key_base,
            cache,
            pool,
            cxxfilt,
            scrub,
        })
    }

    /// The toolchain in use.
    pub fn toolchain(&self) -> &Toolchain {
        &self.tc
    }

    /// The cache key of a code text: SHA-256 of the code, the toolchain and the flags.
    pub fn key(&self, code: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.key_base.as_bytes());
        h.update([0u8]);
        h.update(code.as_bytes());
        format!("{:x}", h.finalize())
    }

    /// Checks every snippet: screens it, then compiles many per translation unit (each
    /// wrapped in its own namespace, `namespace rocqa_s<k> { ... }`, with `#include`s
    /// hoisted out of the namespaces and deduplicated), device code generation for every
    /// target plus a host-side `-fsyntax-only` pass, maps diagnostics back to snippets
    /// and bisects a failing batch so one bad snippet never fails a good one. Outcomes
    /// come in input order; identical code is compiled once.
    pub fn check(&self, snippets: &[Snippet]) -> Vec<CompileOutcome> {
        let mut screened: Vec<Option<String>> = vec![None; snippets.len()];
        let mut unique_of: Vec<Option<usize>> = vec![None; snippets.len()];
        let mut uniques: Vec<(String, &str)> = Vec::new();
        let mut by_key: HashMap<String, usize> = HashMap::new();
        for (i, s) in snippets.iter().enumerate() {
            if let Err(why) = screen(&s.code) {
                screened[i] = Some(why);
                continue;
            }
            let key = self.key(&s.code);
            let u = *by_key.entry(key.clone()).or_insert_with(|| {
                uniques.push((key, s.code.as_str()));
                uniques.len() - 1
            });
            unique_of[i] = Some(u);
        }
        let mut verdicts: Vec<Option<(Verdict, bool)>> = vec![None; uniques.len()];
        if let Some(c) = &self.cache {
            for (u, (key, _)) in uniques.iter().enumerate() {
                verdicts[u] = c.get(key).map(|v| (v, true));
            }
        }
        let todo: Vec<Prepared> = uniques
            .iter()
            .enumerate()
            .filter(|(u, _)| verdicts[*u].is_none())
            .map(|(u, (_, code))| prepare(u, code))
            .collect();
        let units = self.plan(&todo);
        let n_units = units.len();
        let fresh: Vec<(usize, Verdict)> = self.pool.install(|| {
            units
                .par_iter()
                .flat_map_iter(|unit| self.run_batch(unit, 0))
                .collect()
        });
        for (u, v) in fresh {
            if let Some(c) = &self.cache {
                if v.stage != stage::LIMIT {
                    c.put(&uniques[u].0, &v);
                }
            }
            verdicts[u] = Some((v, false));
        }
        let outcomes: Vec<CompileOutcome> = snippets
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if let Some(why) = &screened[i] {
                    return CompileOutcome {
                        id: s.id.clone(),
                        ok: false,
                        stage: stage::SCREEN.into(),
                        diagnostics: why.clone(),
                        cached: false,
                    };
                }
                let u = unique_of[i].expect("screened snippets have a unique code");
                let (v, cached) = verdicts[u].clone().unwrap_or_else(|| {
                    (
                        Verdict::fail(stage::LIMIT, "no verdict (internal error)".into()),
                        false,
                    )
                });
                CompileOutcome {
                    id: s.id.clone(),
                    ok: v.ok,
                    stage: v.stage,
                    diagnostics: v.diagnostics.replace(NAME_MARK, &file_name(&s.id)),
                    cached,
                }
            })
            .collect();
        let failed = outcomes.iter().filter(|o| !o.ok).count();
        let cached = outcomes.iter().filter(|o| o.cached).count();
        tracing::info!(
            snippets = snippets.len(),
            failed,
            cached,
            compiled = todo.len(),
            units = n_units,
            "Compile check done."
        );
        outcomes
    }

    /// Groups the snippets to compile into units: batchable ones with the same includes
    /// share files of up to `batch_size` (split evenly, and over `jobs` when there are
    /// enough), the rest go alone.
    fn plan<'a>(&self, todo: &'a [Prepared<'a>]) -> Vec<Vec<&'a Prepared<'a>>> {
        let mut groups: Vec<(Vec<&str>, Vec<&Prepared>)> = Vec::new();
        let mut units = Vec::new();
        for p in todo {
            if !p.batchable {
                units.push(vec![p]);
                continue;
            }
            let key: Vec<&str> = p.includes.iter().map(|(s, _)| s.as_str()).collect();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push(p),
                None => groups.push((key, vec![p])),
            }
        }
        for (_, members) in groups {
            let n = members.len();
            let chunks = n
                .div_ceil(self.opts.batch_size)
                .max(self.opts.jobs.min(n / 4).max(1));
            let size = n.div_ceil(chunks);
            units.extend(members.chunks(size).map(|c| c.to_vec()));
        }
        units
    }

    fn passes(&self) -> Vec<Pass<'_>> {
        let mut p: Vec<Pass> = self.tc.targets.iter().map(|t| Pass::Device(t)).collect();
        p.push(Pass::Host);
        p
    }

    fn args(&self, pass: Pass, file: &str) -> Vec<String> {
        let mut a = self.tc.base_args();
        a.extend(
            self.include_dirs
                .iter()
                .map(|d| format!("-I{}", d.display())),
        );
        match pass {
            Pass::Device(t) => a.extend([
                format!("--offload-arch={t}"),
                "--offload-device-only".into(),
                "-S".into(),
                "-o".into(),
                "/dev/null".into(),
            ]),
            Pass::Host => a.extend([
                format!("--offload-arch={}", self.tc.targets[0]),
                "--offload-host-only".into(),
                "-fsyntax-only".into(),
            ]),
        }
        a.push(file.into());
        a
    }

    /// Compiles a batch from pass `start` on (earlier passes held for a superset of it).
    fn run_batch(&self, items: &[&Prepared], start: usize) -> Vec<(usize, Verdict)> {
        if items.len() == 1 {
            return vec![(items[0].u, self.solo(items[0]))];
        }
        let all_fail = |e: CompileError| -> Vec<(usize, Verdict)> {
            tracing::error!(error = %e, "Compile check could not run.");
            items
                .iter()
                .map(|p| {
                    (
                        p.u,
                        Verdict::fail(stage::LIMIT, format!("could not run the compiler: {e}")),
                    )
                })
                .collect()
        };
        let (text, layout) = assemble(items);
        if let Err(why) = screen::rules(&text) {
            // Cannot happen for screened, batchable snippets; if it does, trust nothing
            // the batch file would say and compile each snippet as written.
            tracing::warn!(snippets = items.len(), reason = %why, "Batch file fails the screen; compiling its snippets alone.");
            return self
                .pool
                .install(|| items.par_iter().map(|p| (p.u, self.solo(p))).collect());
        }
        let wd = match WorkDir::new().and_then(|wd| wd.write(&layout.file, &text).map(|()| wd)) {
            Ok(wd) => wd,
            Err(e) => return all_fail(e),
        };
        let n = items.len() as u64;
        let limits = Limits {
            timeout_secs: self.opts.timeout_secs.saturating_mul(1 + n / 10),
            memory_mb: self.opts.memory_mb,
        };
        for (pi, pass) in self.passes().into_iter().enumerate().skip(start) {
            let ran = match self.invoke(pass, &layout.file, &wd, limits, items.len()) {
                Ok(r) => r,
                Err(e) => return all_fail(e),
            };
            match ran.end {
                End::Exited(0) => continue,
                End::Exited(_) => {}
                end => {
                    tracing::debug!(
                        snippets = items.len(),
                        ?end,
                        pass = pass.name(),
                        "Batch hit a limit; splitting it."
                    );
                    drop(wd);
                    return self.halves(items, pi);
                }
            }
            let groups = diag::parse(&ran.stderr);
            let backend = diag::is_backend(&groups);
            let mut owned: BTreeMap<usize, (Vec<&Group>, bool)> = BTreeMap::new();
            let mut orphans = false;
            for g in groups.iter().filter(|g| g.is_error) {
                match diag::owner(g, &layout) {
                    Some((k, contained)) => {
                        let e = owned.entry(k).or_insert_with(|| (Vec::new(), true));
                        e.0.push(g);
                        e.1 &= contained;
                    }
                    None => orphans = true,
                }
            }
            // An error nobody owns (on a namespace line, say) means the file's structure
            // broke, and errors after it may be echoes: then confirm every owner alone.
            if orphans {
                for e in owned.values_mut() {
                    e.1 = false;
                }
            }
            if owned.is_empty() {
                tracing::debug!(
                    snippets = items.len(),
                    pass = pass.name(),
                    "Batch failed with errors no snippet owns; splitting it."
                );
                drop(wd);
                return self.halves(items, pi);
            }
            let mut out = Vec::new();
            let (mut suspects, mut rest) = (Vec::new(), Vec::new());
            let scrub = self.scrub_with(wd.path());
            for (k, p) in items.iter().enumerate() {
                match owned.get(&k) {
                    Some((gs, true)) => {
                        let st = if backend {
                            stage::BACKEND
                        } else {
                            stage::FRONTEND
                        };
                        let d = diag::render(gs, &layout, k, &scrub);
                        out.push((p.u, Verdict::fail(st, self.finish(d, gs.len(), pass))));
                    }
                    Some((_, false)) => suspects.push(*p),
                    None => rest.push(*p),
                }
            }
            drop(wd);
            let (alone, again) = rayon::join(
                || {
                    suspects
                        .par_iter()
                        .map(|p| (p.u, self.solo(p)))
                        .collect::<Vec<_>>()
                },
                || {
                    if rest.is_empty() {
                        Vec::new()
                    } else {
                        self.run_batch(&rest, pi)
                    }
                },
            );
            out.extend(alone);
            out.extend(again);
            return out;
        }
        items.iter().map(|p| (p.u, Verdict::ok())).collect()
    }

    /// One compiler process, logged.
    fn invoke(
        &self,
        pass: Pass,
        file: &str,
        wd: &WorkDir,
        limits: Limits,
        snippets: usize,
    ) -> Result<sandbox::Ran, CompileError> {
        let t = std::time::Instant::now();
        let ran = sandbox::run(&self.tc.clang, &self.args(pass, file), wd.path(), limits)?;
        tracing::debug!(
            snippets,
            pass = pass.name(),
            ms = t.elapsed().as_millis() as u64,
            end = ?ran.end,
            "Compiler ran."
        );
        Ok(ran)
    }

    fn halves(&self, items: &[&Prepared], start: usize) -> Vec<(usize, Verdict)> {
        let (a, b) = items.split_at(items.len() / 2);
        let (mut x, y) = rayon::join(|| self.run_batch(a, start), || self.run_batch(b, start));
        x.extend(y);
        x
    }

    /// Compiles one snippet exactly as written, pass after pass.
    fn solo(&self, p: &Prepared) -> Verdict {
        const FILE: &str = "input.hip";
        let wd = match WorkDir::new().and_then(|wd| wd.write(FILE, p.code).map(|()| wd)) {
            Ok(wd) => wd,
            Err(e) => {
                return Verdict::fail(stage::LIMIT, format!("could not run the compiler: {e}"))
            }
        };
        let layout = Layout::solo(FILE, p.code.lines().count() as u32);
        let limits = Limits {
            timeout_secs: self.opts.timeout_secs,
            memory_mb: self.opts.memory_mb,
        };
        let scrub = self.scrub_with(wd.path());
        for pass in self.passes() {
            let ran = match self.invoke(pass, FILE, &wd, limits, 1) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "Compile check could not run.");
                    return Verdict::fail(stage::LIMIT, format!("could not run the compiler: {e}"));
                }
            };
            let what = match pass {
                Pass::Device(t) => format!("compiling for {t}"),
                Pass::Host => "compiling for host".to_string(),
            };
            let err = match ran.end {
                End::Exited(0) => continue,
                End::Exited(_) => None,
                End::TimedOut => Some(format!(
                    "time limit of {} s exceeded while {what}",
                    limits.timeout_secs
                )),
                End::OutOfMemory => Some(format!(
                    "memory limit of {} MB exceeded while {what}",
                    limits.memory_mb
                )),
                End::Crashed => Some(format!(
                    "the compiler crashed while {what}:\n{}",
                    scrub_all(&ran.stderr, &scrub)
                        .lines()
                        .take(8)
                        .collect::<Vec<_>>()
                        .join("\n")
                )),
            };
            if let Some(e) = err {
                return Verdict::fail(stage::LIMIT, diag::trim(&e, MAX_DIAGNOSTICS));
            }
            let groups = diag::parse(&ran.stderr);
            let backend = diag::is_backend(&groups);
            let all: Vec<&Group> = groups.iter().collect();
            let errors = groups.iter().filter(|g| g.is_error).count();
            let mut d = diag::render(&all, &layout, 0, &scrub);
            if d.trim().is_empty() {
                d = scrub_all(&ran.stderr, &scrub);
            }
            let st = if backend {
                stage::BACKEND
            } else {
                stage::FRONTEND
            };
            return Verdict::fail(st, self.finish(d, errors.max(1), pass));
        }
        Verdict::ok()
    }

    fn scrub_with(&self, work: &Path) -> Vec<String> {
        let mut s = vec![format!("{}/", work.display())];
        s.extend(self.scrub.iter().cloned());
        s
    }

    /// Demangles backend names, drops the batch namespaces, adds clang's closing line
    /// ("N errors generated when compiling for gfx90a.") and trims.
    fn finish(&self, diagnostics: String, errors: usize, pass: Pass) -> String {
        let d = diag::strip_namespaces(&self.demangle(diagnostics));
        let s = if errors == 1 { "" } else { "s" };
        diag::trim(
            &format!(
                "{d}\n{errors} error{s} generated when compiling for {}.",
                pass.name()
            ),
            MAX_DIAGNOSTICS,
        )
    }

    fn demangle(&self, text: String) -> String {
        let names: Vec<String> = diag::mangled_names(&text).into_iter().collect();
        let Some(tool) = self.cxxfilt.as_ref().filter(|_| !names.is_empty()) else {
            return text;
        };
        let Ok(wd) = WorkDir::new() else {
            return text;
        };
        let limits = Limits {
            timeout_secs: 10,
            memory_mb: self.opts.memory_mb,
        };
        let Ok(ran) = sandbox::run(tool, &names, wd.path(), limits) else {
            return text;
        };
        // The sandbox appends stdout to stderr; llvm-cxxfilt prints one name per line.
        let plain: Vec<&str> = ran.stderr.lines().collect();
        if ran.end != End::Exited(0) || plain.len() != names.len() {
            return text;
        }
        let mut out = text;
        for (m, d) in names.iter().zip(plain) {
            out = out.replace(&format!("'{m}'"), &format!("'{d}'"));
        }
        out
    }
}

fn scrub_all(text: &str, scrub: &[String]) -> String {
    let mut t = text.trim().to_string();
    for p in scrub {
        t = t.replace(p.as_str(), "");
    }
    t
}

/// `<id>.hip`, with anything but `[A-Za-z0-9._-]` in the id made `_`.
fn file_name(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.hip", if clean.is_empty() { "snippet" } else { &clean })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_hoists_includes_and_keeps_lines() {
        let code = "#include <hip/hip_runtime.h>\n// c\n#include <cstdio> // why\n#define N 4\n/* x\n */ __global__ void k(float* x) { x[0] = N; }\n";
        let p = prepare(0, code);
        assert!(p.batchable);
        assert_eq!(
            p.includes,
            vec![
                ("<hip/hip_runtime.h>".to_string(), 1),
                ("<cstdio>".to_string(), 3)
            ]
        );
        assert_eq!(p.body.len(), 6);
        assert_eq!(p.body[0], "");
        assert_eq!(p.body[2], "");
        assert_eq!(
            p.body[5].trim(),
            "__global__ void k(float* x) { x[0] = N; }"
        );
        assert_eq!(p.defines, vec!["N".to_string()]);
        // The include after a #define stays where it is, and makes the snippet go alone.
        let p = prepare(0, "#include <vector>\n#define X 1\n#include <cstdio>\n");
        assert!(!p.batchable);
    }

    #[test]
    fn leaky_preprocessing_compiles_alone() {
        for code in [
            "#if 0\nint x;\n",
            "int x;\n#endif\n",
            "#ifdef A\n#include <vector>\n#endif\n",
            "int f() {\n",
            "} namespace evil {\n",
            "int x = f(1;\n",
            "int y = a[1;\n",
            "const char* s = R\"(open",
            "#undef __HIP__\n",
            "/* open",
            "#define __HIP_PLATFORM_AMD__ 1\n",
            "#define _Reserved 1\n",
            // A token-internal line splice: R⏎"( is a raw string to clang only.
            "const char* s = R\\\n\"(a\" /* )\";\nint y; */ #include \"/etc/passwd\"\n",
        ] {
            assert!(!prepare(0, code).batchable, "{code:?}");
        }
        for code in [
            "#define A 1\n#undef A\n",
            "#if A\nint f() { return 1; }\n#else\nint f() { return 0; }\n#endif\n",
            "#define M(x) \\\n  #x\nint y = 1'000;\n",
            "const char* s = \"a\\\nb\"; // c\\\nd\nint z = 1 + \\\n 2;\n",
        ] {
            assert!(prepare(0, code).batchable, "{code:?}");
        }
        // Clang reads that splice case as harmless code (no directive), so the screen
        // passes it; a lexer without splicing would blank `/* )";⏎int y; */` as a comment
        // and hand clang a real `#include "/etc/passwd"` line inside a batch.
        let tricky = "const char* s = R\\\n\"(a\" /* )\";\nint y; */ #include \"/etc/passwd\"\n";
        assert!(screen(tricky).is_ok());
        let p = prepare(0, tricky);
        assert!(p.includes.iter().any(|(i, _)| i.contains("/etc/passwd")));
        assert!(!p.batchable);
    }

    #[test]
    fn assemble_wraps_each_snippet_and_records_spans() {
        let a = prepare(0, "#include <hip/hip_runtime.h>\n#define N 2\n__global__ void k(float* x) { x[0] = N; }\n");
        let b = prepare(1, "#include <cstdio>\n#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[1] = 0; }\n");
        let (text, layout) = assemble(&[&a, &b]);
        let lines: Vec<&str> = text.lines().collect();
        // Line `l` of a snippet whose line 1 is file line `first` (1-based).
        let at = |first: u32, l: u32| lines[(first + l - 2) as usize];
        assert_eq!(lines[0], "#include <hip/hip_runtime.h>");
        assert_eq!(lines[1], "#include <cstdio>");
        assert_eq!(lines[2], "namespace rocqa_s0 {");
        let (first0, n0) = layout.spans[0];
        assert_eq!(n0, 3);
        assert_eq!(at(first0, 3), "__global__ void k(float* x) { x[0] = N; }");
        assert!(text.contains("} // namespace rocqa_s0\n#undef N\nnamespace rocqa_s1 {"));
        let (first1, _) = layout.spans[1];
        assert_eq!(at(first1, 3), "__global__ void k(float* x) { x[1] = 0; }");
        // Hoisted line 1 (hip_runtime) is line 1 of a and line 2 of b.
        assert_eq!(layout.hoisted[0], (1, vec![Some(1), Some(2)]));
        assert_eq!(layout.hoisted[1], (2, vec![None, Some(1)]));
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_name("q12"), "q12.hip");
        assert_eq!(file_name("../etc/x y"), ".._etc_x_y.hip");
        assert_eq!(file_name(""), "snippet.hip");
    }
}
