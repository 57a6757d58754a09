//! The precise index: the library's translation units parsed by libclang in HIP mode,
//! as the build compiles them, to check the fast index (`rocqa graph --compare`).
//!
//! Each `.cpp` under the tree's `library/src` is parsed host-side (`-x hip
//! --cuda-host-only`, the HIP headers of Debian's ROCm packages) with the library's
//! include folders and build defines (per-file ones such as `ROCBLAS_INTERNAL_ILP64`
//! for `src64/` included), and the headers the build would generate (version and
//! export headers, whose defines come on the command line) written empty to a folder
//! of the cache. What the AST gives is plain [`FileIndex`] data, with each call's
//! resolved declaration ([`CallSite::resolved`]) and each definition's USR, so the
//! graph stage reads it like the fast index. Units that do not parse degrade to the
//! fast index for their files, counted. Results are cached per unit, keyed by the
//! flags and the content of every tree file the unit read; units run in parallel.

pub mod clang;
pub mod instantiate;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::config::{LibraryConfig, Scope};
use crate::model::{CallSite, FileIndex, LibraryIndex, SymbolKind};
use clang::{UnitResult, UnitStatus};

/// Bumped whenever what a unit yields changes, so old caches are ignored.
const PRECISE_FORMAT: u32 = 2;

/// Why the precise index could not run.
#[derive(Debug, thiserror::Error)]
pub enum PreciseError {
    /// libclang is missing.
    #[error("{0}")]
    NoLibclang(String),
    /// A unit asked for is not a translation unit of the tree.
    #[error("{0}: not a translation unit of the tree (a .cpp file under library/src in scope)")]
    NotAUnit(String),
    /// The generated headers could not be written.
    #[error("{path}: cannot write")]
    Write {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// What a precise run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PreciseStats {
    /// Translation units in the tree.
    pub units: usize,
    /// Of which read in this run (all, or the selected subset).
    pub selected: usize,
    /// Parsed by libclang in this run.
    pub parsed: usize,
    /// Taken from the cache.
    pub cached: usize,
    /// Parsed without error.
    pub clean: usize,
    /// Parsed with errors that left the AST usable (kept).
    pub with_errors: usize,
    /// Not parsed (a fatal error): their files come from the fast index.
    pub failed: usize,
    /// Files taken from the fast index for failed units.
    pub degraded_files: usize,
    /// Failed units and why, and units with errors and their first error.
    pub problems: Vec<(String, String)>,
    /// Definitions.
    pub symbols: usize,
    /// `__global__` kernels.
    pub kernels: usize,
    /// Call sites.
    pub calls: usize,
    /// Of which resolved by the compiler to one declaration.
    pub resolved_calls: usize,
    /// Launch sites.
    pub launches: usize,
    /// Wall time in milliseconds.
    pub millis: u128,
}

/// Where and how a library's units are compiled.
pub struct PreciseSetup<'a> {
    /// Library name.
    pub lib: &'a str,
    /// Version.
    pub version: &'a str,
    /// Tree root.
    pub tree: &'a Path,
    /// Configuration with the build's defines ([`super::with_build_defines`]).
    pub cfg: &'a LibraryConfig,
    /// The paired library's installed headers (`usr/include` of its `-dev` package),
    /// which the library includes as `<rocblas/rocblas.h>`.
    pub pair_headers: Option<PathBuf>,
    /// Cache folder (the fast index's), for the generated headers and results.
    pub cache_dir: &'a Path,
}

#[derive(Serialize, Deserialize, Default)]
struct CacheFile {
    format: u32,
    units: Vec<CachedUnit>,
}

#[derive(Serialize, Deserialize, Clone)]
struct CachedUnit {
    unit: String,
    flags: u64,
    deps: Vec<(String, u64)>,
    result: UnitResult,
}

/// The paired library's installed headers (`usr/include` of its `-dev` package,
/// unpacked by `scripts/setup-hip.sh` under `rocm_sources/headers/<lib>-<version>/`),
/// where the library's `#include <rocblas/rocblas.h>` finds them, as in its build.
pub fn pair_headers(sources: &Path, pair: Option<(&str, &str)>) -> Option<PathBuf> {
    let (lib, version) = pair?;
    let p = sources
        .join("headers")
        .join(format!("{lib}-{version}"))
        .join("usr/include");
    p.is_dir().then_some(p)
}

/// The translation units of a tree: its `.cpp` files under `library/src`, in scope.
pub fn units(tree: &Path, scope: &Scope) -> Vec<String> {
    super::tree_files(tree, &tree.join("library/src"), &["cpp".to_string()], scope)
}

impl PreciseSetup<'_> {
    fn gen_dir(&self) -> PathBuf {
        self.cache_dir.join("precise-gen")
    }

    /// The per-file defines of a unit, as the fast index names a build context.
    fn context(&self, unit: &str) -> (String, Vec<(String, String)>) {
        let mut defs = Vec::new();
        for fd in &self.cfg.file_defines {
            let hit = globset::Glob::new(&fd.glob)
                .map(|g| g.compile_matcher().is_match(unit))
                .unwrap_or(false);
            if hit {
                defs.extend(fd.defines.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let name = defs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("+");
        (name, defs)
    }

    /// The compiler flags of one unit.
    pub fn args(&self, unit: &str) -> Vec<String> {
        let mut a: Vec<String> = [
            "-x",
            "hip",
            "--cuda-host-only",
            "-nogpulib",
            "--rocm-path=/usr",
            "--offload-arch=gfx90a",
            "-std=c++17",
            "-w",
            "-ferror-limit=0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(d) = clang::resource_dir() {
            a.extend(["-resource-dir".to_string(), d]);
        }
        a.push(format!("-I{}", self.gen_dir().display()));
        for d in &self.cfg.include_dirs {
            a.push(format!("-I{}", self.tree.join(d).display()));
        }
        if let Some(p) = &self.pair_headers {
            a.push(format!("-I{}", p.display()));
        }
        for (k, v) in &self.cfg.defines {
            // clang defines these itself, in the mode the arguments above set.
            if !super::cmake::is_compiler_predefine(k) {
                a.push(format!("-D{k}={v}"));
            }
        }
        for (k, v) in self.context(unit).1 {
            a.push(format!("-D{k}={v}"));
        }
        a
    }

    /// Writes the headers CMake would generate: every `X.h.in` as `X.h` (empty: the
    /// values it would hold are the version defines on the command line) and the
    /// library's export header beside it (empty: the export macros are defines of
    /// rocqa.toml), under every include folder path they sit below; and a
    /// declaration-only `roctracer/roctx.h` when the system has none (rocBLAS's
    /// logging includes it; the tracer is not part of the library).
    fn write_generated(&self) -> Result<(), PreciseError> {
        let dir = self.gen_dir();
        let mut files: BTreeMap<PathBuf, String> = BTreeMap::new();
        let note = "/* Generated by rocqa for the precise index: its values are -D flags. */\n";
        let templates = walkdir::WalkDir::new(self.tree.join("library"))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".h.in"));
        for t in templates {
            let Ok(rel) = t.path().strip_prefix(self.tree) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            let header = rel.trim_end_matches(".in").to_string();
            let export = Path::new(&header)
                .with_file_name(format!("{}-export.h", self.lib))
                .to_string_lossy()
                .into_owned();
            for inc in &self.cfg.include_dirs {
                let base = format!("{}/", inc.trim_end_matches('/'));
                for h in [&header, &export] {
                    if let Some(under) = h.strip_prefix(&base) {
                        files.insert(dir.join(under), note.to_string());
                    }
                }
            }
        }
        if !Path::new("/usr/include/roctracer/roctx.h").exists() {
            files.insert(
                dir.join("roctracer/roctx.h"),
                "/* Declarations of the ROCm tracer markers (roctx), written by rocqa. */\n\
                 #pragma once\nextern \"C\" {\nint roctxRangePushA(const char* message);\n\
                 int roctxRangePop();\nvoid roctxMarkA(const char* message);\n}\n\
                 #define roctxRangePush roctxRangePushA\n#define roctxMark roctxMarkA\n"
                    .to_string(),
            );
        }
        for (p, text) in files {
            if std::fs::read_to_string(&p).ok().as_deref() == Some(text.as_str()) {
                continue;
            }
            let write = || -> std::io::Result<()> {
                std::fs::create_dir_all(p.parent().unwrap_or(Path::new(".")))?;
                std::fs::write(&p, &text)
            };
            write().map_err(|source| PreciseError::Write {
                path: p.display().to_string(),
                source,
            })?;
        }
        Ok(())
    }
}

/// Builds the precise index of the `select`ed units (all when `None`), with `fast`
/// (the same tree's fast index) standing in for units that fail, and its API list.
pub fn index_precise(
    setup: &PreciseSetup,
    scope: &Scope,
    fast: &LibraryIndex,
    select: Option<&[String]>,
) -> Result<(LibraryIndex, PreciseStats), PreciseError> {
    let t0 = Instant::now();
    let all = units(setup.tree, scope);
    let chosen: Vec<String> = match select {
        Some(s) => {
            for u in s {
                if !all.contains(u) {
                    return Err(PreciseError::NotAUnit(u.clone()));
                }
            }
            let s: BTreeSet<&String> = s.iter().collect();
            s.into_iter().cloned().collect()
        }
        None => all.clone(),
    };
    let lib = clang::load().map_err(PreciseError::NoLibclang)?;
    setup.write_generated()?;

    let cache_path = setup.cache_dir.join("precise.bin");
    let cached: CacheFile = std::fs::read(&cache_path)
        .ok()
        .and_then(|b| postcard::from_bytes::<CacheFile>(&b).ok())
        .filter(|c| c.format == PRECISE_FORMAT)
        .unwrap_or_default();
    let mut cache: HashMap<String, CachedUnit> = cached
        .units
        .into_iter()
        .map(|u| (u.unit.clone(), u))
        .collect();
    let hashes: Mutex<HashMap<String, u64>> = Mutex::new(HashMap::new());
    let hash_of = |p: &str| -> u64 {
        if let Some(h) = hashes.lock().map(|m| m.get(p).copied()).ok().flatten() {
            return h;
        }
        let h = std::fs::read(p).map(|b| xxh3_64(&b)).unwrap_or(0);
        if let Ok(mut m) = hashes.lock() {
            m.insert(p.to_string(), h);
        }
        h
    };

    let jobs: Vec<(String, u64, Option<UnitResult>)> = chosen
        .iter()
        .map(|u| {
            let args = setup.args(u);
            let flags = xxh3_64(format!("{PRECISE_FORMAT}|{u}|{}", args.join("\u{1}")).as_bytes());
            let hit = cache
                .get(u)
                .filter(|c| !matches!(c.result.status, UnitStatus::Failed(_)))
                .filter(|c| c.flags == flags && c.deps.iter().all(|(p, h)| hash_of(p) == *h));
            (u.clone(), flags, hit.map(|c| c.result.clone()))
        })
        .collect();
    let mut stats = PreciseStats {
        units: all.len(),
        selected: chosen.len(),
        ..Default::default()
    };
    let results: Vec<(String, u64, UnitResult, bool)> = jobs
        .into_par_iter()
        .map(|(u, flags, hit)| match hit {
            Some(r) => (u, flags, r, true),
            None => {
                clang::attach(&lib);
                let (ctx, _) = setup.context(&u);
                let r = clang::parse_unit(&setup.tree.join(&u), &setup.args(&u), setup.tree, &ctx);
                tracing::debug!(unit = %u, status = ?r.status, "Parsed.");
                (u, flags, r, false)
            }
        })
        .collect();

    for (u, flags, r, from_cache) in &results {
        if *from_cache {
            stats.cached += 1;
        } else {
            stats.parsed += 1;
        }
        // A failed unit is tried again next time: what it lacked (a generated header
        // removed under it, a package) is not among the files it read.
        if !*from_cache && !matches!(r.status, UnitStatus::Failed(_)) {
            // Tree and generated files only: the system's headers change with packages.
            let deps = r
                .deps
                .iter()
                .filter(|p| !p.starts_with("/usr/"))
                .map(|p| (p.clone(), hash_of(p)))
                .collect();
            cache.insert(
                u.clone(),
                CachedUnit {
                    unit: u.clone(),
                    flags: *flags,
                    deps,
                    result: r.clone(),
                },
            );
        }
        match &r.status {
            UnitStatus::Clean => stats.clean += 1,
            UnitStatus::Errors(_, first) => {
                stats.with_errors += 1;
                stats.problems.push((u.clone(), first.clone()));
            }
            UnitStatus::Failed(why) => {
                stats.failed += 1;
                stats.problems.push((u.clone(), why.clone()));
            }
        }
    }
    if stats.parsed > 0 {
        let mut units: Vec<CachedUnit> = cache.into_values().collect();
        units.sort_by(|a, b| a.unit.cmp(&b.unit));
        let file = CacheFile {
            format: PRECISE_FORMAT,
            units,
        };
        if let Ok(bytes) = postcard::to_allocvec(&file) {
            let tmp = cache_path.with_extension("tmp");
            if std::fs::create_dir_all(setup.cache_dir).is_ok()
                && std::fs::write(&tmp, bytes).is_ok()
            {
                let _ = std::fs::rename(&tmp, &cache_path);
            }
        }
    }

    let (files, degraded) = merge(&results, fast);
    stats.degraded_files = degraded;
    let index = LibraryIndex {
        lib: setup.lib.into(),
        version: setup.version.into(),
        files,
        api: fast.api.clone(),
    };
    for f in &index.files {
        stats.symbols += f.symbols.len();
        stats.kernels += f
            .symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::Kernel)
            .count();
        stats.calls += f.calls.len();
        stats.resolved_calls += f.calls.iter().filter(|c| c.resolved.len() == 1).count();
        stats.launches += f.launches.len();
    }
    stats.millis = t0.elapsed().as_millis();
    Ok((index, stats))
}

/// Joins the units' files (one entry per file and build context, each definition
/// once), fills what the AST does not give from the fast index (content hashes,
/// includes, macros, launch bounds, macro-made text), and adds the fast index's files
/// of failed units that no parsed unit covers. Returns the files and how many came
/// from the fast index.
fn merge(
    results: &[(String, u64, UnitResult, bool)],
    fast: &LibraryIndex,
) -> (Vec<FileIndex>, usize) {
    let mut out: BTreeMap<(String, String), FileIndex> = BTreeMap::new();
    let mut sym_of: HashMap<(String, String), HashMap<(String, u32), u32>> = HashMap::new();
    let mut call_seen: HashSet<(String, String, u32, u32, String, Vec<String>)> = HashSet::new();
    for (_, _, r, _) in results {
        for f in &r.files {
            let key = (f.path.clone(), f.context.clone());
            let entry = out.entry(key.clone()).or_insert_with(|| FileIndex {
                symbols: Vec::new(),
                calls: Vec::new(),
                launches: Vec::new(),
                ..f.clone()
            });
            let syms = sym_of.entry(key.clone()).or_default();
            let remap: Vec<u32> = f
                .symbols
                .iter()
                .map(|s| {
                    *syms.entry((s.usr.clone(), s.name_line)).or_insert_with(|| {
                        entry.symbols.push(s.clone());
                        entry.symbols.len() as u32 - 1
                    })
                })
                .collect();
            for c in &f.calls {
                let caller = remap[c.caller as usize];
                let k = (
                    key.0.clone(),
                    key.1.clone(),
                    caller,
                    c.line,
                    c.callee.clone(),
                    c.resolved.clone(),
                );
                if call_seen.insert(k) {
                    entry.calls.push(CallSite {
                        caller,
                        ..c.clone()
                    });
                }
            }
            for l in &f.launches {
                let caller = remap[l.caller as usize];
                let k = (
                    key.0.clone(),
                    key.1.clone(),
                    caller,
                    l.line,
                    format!("launch {}", l.kernel),
                    l.resolved.clone(),
                );
                if call_seen.insert(k) {
                    let mut l = l.clone();
                    l.caller = caller;
                    entry.launches.push(l);
                }
            }
        }
    }
    let fast_by_path: HashMap<&str, &FileIndex> = fast
        .files
        .iter()
        .filter(|f| f.context.is_empty())
        .map(|f| (f.path.as_str(), f))
        .collect();
    for f in out.values_mut() {
        if let Some(ff) = fast_by_path.get(f.path.as_str()) {
            f.content_hash = ff.content_hash.clone();
            f.includes = ff.includes.clone();
            f.macros = ff.macros.clone();
            let by_line: HashMap<(&str, u32), &crate::model::Symbol> = ff
                .symbols
                .iter()
                .map(|s| ((s.name.as_str(), s.name_line), s))
                .collect();
            for s in &mut f.symbols {
                if let Some(fs) = by_line.get(&(s.name.as_str(), s.name_line)) {
                    if s.kind == SymbolKind::Kernel {
                        s.launch_bounds = fs.launch_bounds.clone();
                    }
                    s.expanded_text = fs.expanded_text.clone();
                }
            }
        }
    }
    // Failed units: their own file and what it includes, where no parsed unit read it.
    let covered: HashSet<String> = out.keys().map(|k| k.0.clone()).collect();
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    for (u, _, r, _) in results {
        if !matches!(r.status, UnitStatus::Failed(_)) {
            continue;
        }
        let mut stack = vec![u.as_str()];
        while let Some(p) = stack.pop() {
            if covered.contains(p) || !wanted.insert(p) {
                continue;
            }
            if let Some(f) = fast_by_path.get(p) {
                stack.extend(f.includes.iter().map(|s| s.as_str()));
            }
        }
    }
    let mut degraded = 0;
    for p in wanted {
        for f in fast.files.iter().filter(|f| f.path == p) {
            out.insert((f.path.clone(), f.context.clone()), f.clone());
            degraded += 1;
        }
    }
    (out.into_values().collect(), degraded)
}
