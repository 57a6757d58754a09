//! The `index` stage: parse a pinned source tree into definitions, calls and launches.
//!
//! Takes a tree on disk and the library's configuration; gives a [`LibraryIndex`]
//! whose every position is a line of the original file. Files are read and hashed,
//! their directives scanned, then each is preprocessed with the library's own macros
//! ([`preprocess`]) and parsed with tree-sitter-cpp ([`parse`]), in parallel. Results
//! are cached on disk by content hash: a second run over an unchanged tree only reads
//! and hashes the files, and a run after a small change re-parses just what changed
//! (all files, if a `#define` anywhere changed, since any file may expand it).

pub mod api;
pub mod cmake;
pub mod device;
pub mod lex;
pub mod parse;
pub mod precise;
pub mod preprocess;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::config::{LibraryConfig, Scope};
use crate::model::{FileIndex, LibraryIndex, MacroDef};
use preprocess::{DirKind, Directive, Fallback, Includes, Macro, MacroTable};

/// Bumped whenever the index format or extraction changes, so old caches are ignored.
const INDEX_FORMAT: u32 = 7;

/// Why indexing failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The tree is missing.
    #[error(
        "{0}: source tree not found; run `rocqa sources fetch` for this library and version first"
    )]
    NoTree(String),
    /// A file could not be read.
    #[error("{path}: cannot read")]
    Read {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// A glob in the library config is malformed.
    #[error("rocqa.toml: library `{lib}`: bad glob `{glob}`: {message}")]
    Glob {
        /// Library.
        lib: String,
        /// Pattern.
        glob: String,
        /// What is wrong.
        message: String,
    },
    /// A file asked for is not among the indexed ones.
    #[error("{0}: not an indexed file (out of scope, or not a C/C++ file); `rocqa scope --explain` says why")]
    NotIndexed(String),
    /// The cache could not be written.
    #[error("{path}: cannot write the index cache")]
    Cache {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// What an index run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexStats {
    /// Files in scope.
    pub files: usize,
    /// Headers indexed once more because a translation unit's extra defines change them.
    pub variants: usize,
    /// Files (and variants) parsed in this run.
    pub parsed: usize,
    /// Files taken from the cache.
    pub cached: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Definitions.
    pub symbols: usize,
    /// `__global__` kernels.
    pub kernels: usize,
    /// Device helpers.
    pub device_helpers: usize,
    /// Definitions that only exist after a macro expansion.
    pub macro_expanded: usize,
    /// Call sites.
    pub calls: usize,
    /// Launch sites.
    pub launches: usize,
    /// Macro definitions.
    pub macros: usize,
    /// Files with at least one tree-sitter ERROR node left.
    pub files_with_errors: usize,
    /// Those files, each with its count of ERROR nodes (`path (N)`).
    pub error_files: Vec<String>,
    /// Public API functions.
    pub api_functions: usize,
    /// Of which `_64` variants.
    pub api_64: usize,
    /// API families.
    pub api_families: usize,
    /// Wall time in milliseconds.
    pub millis: u128,
}

#[derive(Serialize, Deserialize, Default)]
struct CacheFile {
    format: u32,
    config_digest: u64,
    whole_key: u64,
    macro_digest: u64,
    files: Vec<FileIndex>,
    /// Raw declarations; grouping into families is cheap and redone on every load.
    api_decls: Vec<(String, String, u32)>,
}

struct Source {
    rel: String,
    text: String,
    hash: u64,
}

/// The defines a library's files are compiled with: those its CMake files set (see
/// [`cmake`]), those of the paired library's generated public headers (rocSOLVER
/// includes rocBLAS's version header), then `cfg.defines` from rocqa.toml, which win.
pub fn build_defines(
    lib: &str,
    tree: &Path,
    cfg: &LibraryConfig,
    pair: Option<(&str, &Path)>,
) -> Vec<cmake::BuildDefine> {
    cmake::effective(
        tree,
        lib,
        &cfg.defines,
        &format!("rocqa.toml [library.{lib}.defines]"),
        pair,
    )
}

/// `cfg` with its defines replaced by [`build_defines`]: the configuration the index
/// reads the tree under.
pub fn with_build_defines(
    lib: &str,
    tree: &Path,
    cfg: &LibraryConfig,
    pair: Option<(&str, &Path)>,
) -> LibraryConfig {
    let mut out = cfg.clone();
    out.defines = build_defines(lib, tree, cfg, pair)
        .into_iter()
        .map(|d| (d.name, d.value))
        .collect();
    out
}

/// The fast index's cache file in a library's cache folder. The folder also holds the
/// precise index's cache and generated headers, which another process may be using.
pub fn fast_cache_file(cache_dir: &Path) -> std::path::PathBuf {
    cache_dir.join("index.bin")
}

/// Indexes one tree under the defines its build sets ([`build_defines`]; pass a
/// [`with_build_defines`] configuration to add a paired library's). `cache_dir`, when
/// given, holds the on-disk cache.
pub fn index_tree(
    lib: &str,
    version: &str,
    tree: &Path,
    cfg: &LibraryConfig,
    scope: &Scope,
    cache_dir: Option<&Path>,
) -> Result<(LibraryIndex, IndexStats), IndexError> {
    let t0 = Instant::now();
    if !tree.is_dir() {
        return Err(IndexError::NoTree(tree.display().to_string()));
    }
    let cfg = &with_build_defines(lib, tree, cfg, None);
    let rels = list_files(tree, cfg, scope);
    let sources = read_sources(tree, rels)?;
    tracing::debug!(
        files = sources.len(),
        ms = t0.elapsed().as_millis() as u64,
        "Read and hashed."
    );
    let config_digest = config_digest(cfg);
    let whole_key = {
        let mut h = Xxh3::new();
        h.update(&config_digest.to_le_bytes());
        for s in &sources {
            h.update(s.rel.as_bytes());
            h.update(&s.hash.to_le_bytes());
        }
        h.digest()
    };
    let cache_path = cache_dir.map(fast_cache_file);
    let cached: CacheFile = cache_path
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| postcard::from_bytes::<CacheFile>(&b).ok())
        .filter(|c| c.format == INDEX_FORMAT && c.config_digest == config_digest)
        .unwrap_or_default();
    let mut stats = IndexStats {
        files: sources.len(),
        bytes: sources.iter().map(|s| s.text.len() as u64).sum(),
        ..Default::default()
    };

    if cached.whole_key == whole_key && cached.format == INDEX_FORMAT {
        // Nothing changed: the warm path reads, hashes, and loads.
        stats.cached = sources.len();
        let api = api::group(
            cached.api_decls,
            &cfg.api_prefix,
            &cfg.precisions,
            &cfg.variant_suffixes,
        );
        let index = LibraryIndex {
            lib: lib.into(),
            version: version.into(),
            files: cached.files,
            api,
        };
        fill_stats(&mut stats, &index, t0);
        return Ok((index, stats));
    }

    let prepared = Prepared::new(lib, cfg, &sources)?;
    tracing::debug!(ms = t0.elapsed().as_millis() as u64, "Scanned directives.");
    let reuse: HashMap<(&str, &str), &FileIndex> = if cached.macro_digest == prepared.macro_digest {
        cached
            .files
            .iter()
            .map(|f| ((f.path.as_str(), f.context.as_str()), f))
            .collect()
    } else {
        HashMap::new()
    };

    // Per file: its index, whether it came from the cache, the files it includes (for
    // translation units under extra defines) and a hash of its preprocessed text when
    // it was preprocessed here (so a header's own reading is not preprocessed twice).
    let files: Vec<(FileIndex, bool, Vec<usize>, Option<u64>)> = sources
        .par_iter()
        .enumerate()
        .map(|(id, s)| {
            let hash = format!("{:016x}", s.hash);
            let rules = prepared.context_of(id);
            let context = prepared.context_name(&rules);
            if let Some(f) = reuse
                .get(&(s.rel.as_str(), context.as_str()))
                .filter(|f| f.content_hash == hash)
            {
                // Translation units under extra defines still need their include list.
                let included = if rules.is_empty() {
                    Vec::new()
                } else {
                    prepared.run_in(id, &rules, true).included
                };
                return ((*f).clone(), true, included, None);
            }
            let pre = prepared.run_in(id, &rules, true);
            let included = if rules.is_empty() {
                Vec::new()
            } else {
                pre.included.clone()
            };
            let text_hash = xxh3_64(pre.text.as_bytes());
            (
                index_file(id, s, &prepared, pre, context),
                false,
                included,
                Some(text_hash),
            )
        })
        .collect();
    // Headers included under extra defines (rocBLAS's src64/ files include the same
    // `_imp.hpp` as the 32-bit ones, with ROCBLAS_INTERNAL_ILP64): index them again as
    // those translation units see them, where that changes their text.
    let mut wanted: std::collections::BTreeSet<(usize, Vec<usize>)> = Default::default();
    for (id, (_, _, included, _)) in files.iter().enumerate() {
        let rules = prepared.context_of(id);
        for &h in included {
            if prepared.context_of(h) != rules {
                wanted.insert((h, rules.clone()));
            }
        }
    }
    let variants: Vec<(FileIndex, bool)> = wanted
        .into_par_iter()
        .filter_map(|(h, rules)| {
            let s = &sources[h];
            let context = prepared.context_name(&rules);
            let hash = format!("{:016x}", s.hash);
            if let Some(f) = reuse
                .get(&(s.rel.as_str(), context.as_str()))
                .filter(|f| f.content_hash == hash)
            {
                return Some(((*f).clone(), true));
            }
            let own = files[h].3.unwrap_or_else(|| {
                xxh3_64(
                    prepared
                        .run_in(h, &prepared.context_of(h), true)
                        .text
                        .as_bytes(),
                )
            });
            let there = prepared.run_in(h, &rules, true);
            (own != xxh3_64(there.text.as_bytes()))
                .then(|| (index_file(h, s, &prepared, there, context), false))
        })
        .collect();
    tracing::debug!(ms = t0.elapsed().as_millis() as u64, "Parsed.");
    // Counted over the tree's files; variants are reported on their own.
    stats.cached = files.iter().filter(|f| f.1).count();
    stats.parsed = files.len() - stats.cached;
    let files: Vec<(FileIndex, bool)> = files
        .into_iter()
        .map(|(f, r, _, _)| (f, r))
        .chain(variants)
        .collect();
    let files: Vec<FileIndex> = files.into_iter().map(|f| f.0).collect();

    let headers = compile_globs(lib, &cfg.public_headers)?;
    let mut decls = Vec::new();
    for (id, s) in sources.iter().enumerate() {
        if headers.is_match(&s.rel) {
            // Conditionals apply (a declaration under `#if 0` is not API); macros stay
            // unexpanded so the export macro is still there to find.
            let text = prepared.run_in(id, &[], false).text;
            decls.extend(api::declarations(
                &s.rel,
                &text,
                &cfg.export_macro,
                &cfg.api_prefix,
            ));
        }
    }
    tracing::debug!(
        ms = t0.elapsed().as_millis() as u64,
        "Read the API declarations."
    );
    let api = api::group(
        decls.clone(),
        &cfg.api_prefix,
        &cfg.precisions,
        &cfg.variant_suffixes,
    );
    let index = LibraryIndex {
        lib: lib.into(),
        version: version.into(),
        files,
        api,
    };

    if let Some(p) = cache_path {
        let c = CacheFile {
            format: INDEX_FORMAT,
            config_digest,
            whole_key,
            macro_digest: prepared.macro_digest,
            files: index.files.clone(),
            api_decls: decls,
        };
        write_cache(&p, &c)?;
        tracing::debug!(ms = t0.elapsed().as_millis() as u64, "Wrote the cache.");
    }
    fill_stats(&mut stats, &index, t0);
    Ok((index, stats))
}

fn read_sources(tree: &Path, rels: Vec<String>) -> Result<Vec<Source>, IndexError> {
    rels.into_par_iter()
        .map(|rel| {
            let bytes = std::fs::read(tree.join(&rel)).map_err(|source| IndexError::Read {
                path: tree.join(&rel).display().to_string(),
                source,
            })?;
            let hash = xxh3_64(&bytes);
            let text = String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            Ok(Source { rel, text, hash })
        })
        .collect()
}

fn write_cache(p: &Path, c: &CacheFile) -> Result<(), IndexError> {
    let err = |source| IndexError::Cache {
        path: p.display().to_string(),
        source,
    };
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(err)?;
    }
    let bytes = postcard::to_stdvec(c).map_err(|e| err(std::io::Error::other(e)))?;
    // Write then rename, so a killed run never leaves half a cache.
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(err)?;
    std::fs::rename(&tmp, p).map_err(err)
}

fn fill_stats(stats: &mut IndexStats, index: &LibraryIndex, t0: Instant) {
    use crate::model::SymbolKind;
    let mut seen = std::collections::HashSet::new();
    for f in &index.files {
        // A header indexed again in another build context is counted once.
        if !seen.insert(f.path.as_str()) {
            stats.variants += 1;
            continue;
        }
        stats.symbols += f.symbols.len();
        stats.kernels += f
            .symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::Kernel)
            .count();
        stats.device_helpers += f
            .symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::DeviceHelper)
            .count();
        stats.macro_expanded += f
            .symbols
            .iter()
            .filter(|s| s.expanded_from.is_some())
            .count();
        stats.calls += f.calls.len();
        stats.launches += f.launches.len();
        stats.macros += f.macros.len();
        if f.parse_errors > 0 {
            stats.files_with_errors += 1;
            stats
                .error_files
                .push(format!("{} ({})", f.path, f.parse_errors));
        }
    }
    stats.api_functions = index.api.len();
    stats.api_64 = index
        .api
        .iter()
        .filter(|a| a.variants.iter().any(|v| v == "64"))
        .count();
    stats.api_families = index
        .api
        .iter()
        .map(|a| a.family.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    stats.millis = t0.elapsed().as_millis();
}

fn index_file(
    id: usize,
    s: &Source,
    prep: &Prepared,
    pre: preprocess::Preprocessed,
    context: String,
) -> FileIndex {
    let t = Instant::now();
    let ex = parse::extract(&s.rel, &pre.text, &pre.expansions);
    tracing::trace!(file = %s.rel, context, bytes = pre.text.len(), parse_us = t.elapsed().as_micros() as u64, "Indexed.");
    let dirs = &prep.cleaned[id].1;
    let macros = dirs
        .iter()
        .filter_map(|d| match &d.kind {
            DirKind::Define(m) => Some(MacroDef {
                name: m.name.clone(),
                params: m.params.clone(),
                body: m.body.clone(),
                file: s.rel.clone(),
                line: m.line,
            }),
            _ => None,
        })
        .collect();
    let mut includes: Vec<String> = dirs
        .iter()
        .enumerate()
        .filter_map(|(k, d)| match &d.kind {
            DirKind::Include(..) => prep.included(id, k).map(|i| prep.rels[i].clone()),
            _ => None,
        })
        .collect();
    includes.dedup();
    FileIndex {
        path: s.rel.clone(),
        content_hash: format!("{:016x}", s.hash),
        symbols: ex.symbols,
        calls: ex.calls,
        launches: ex.launches,
        macros,
        includes,
        parse_errors: ex.errors,
        context,
    }
}

/// Everything preprocessing needs about the whole tree, computed once per run.
struct Prepared {
    rels: Vec<String>,
    /// Per file: comment-free text and its directives.
    cleaned: Vec<(String, Vec<Directive>)>,
    /// Per file, per directive: the file an `#include` resolves to.
    resolved: Vec<Vec<Option<usize>>>,
    fallback: Fallback,
    base: MacroTable,
    file_defines: FileDefineSets,
    /// Hash of every directive of the tree: if it moves, any file may expand differently.
    macro_digest: u64,
}

impl Prepared {
    fn new(lib: &str, cfg: &LibraryConfig, sources: &[Source]) -> Result<Prepared, IndexError> {
        let cleaned: Vec<(String, Vec<Directive>)> = sources
            .par_iter()
            .map(|s| {
                let clean = lex::strip_comments(&s.text);
                let dirs = preprocess::scan_directives(&clean, &Arc::from(s.rel.as_str()));
                (clean, dirs)
            })
            .collect();
        let mut h = Xxh3::new();
        for (clean, dirs) in &cleaned {
            for d in dirs {
                h.update(&clean.as_bytes()[d.start..d.end]);
            }
        }
        let macro_digest = h.digest();
        let fallback =
            preprocess::build_fallback(cleaned.iter().flat_map(|(_, ds)| ds).filter_map(|d| {
                match &d.kind {
                    DirKind::Define(m) => Some(m),
                    _ => None,
                }
            }));
        let by_path: HashMap<&str, usize> = sources
            .iter()
            .enumerate()
            .map(|(i, s)| (s.rel.as_str(), i))
            .collect();
        let resolved = cleaned
            .par_iter()
            .enumerate()
            .map(|(id, (_, dirs))| {
                dirs.iter()
                    .map(|d| match &d.kind {
                        DirKind::Include(t, q) => {
                            resolve_include(sources, &by_path, &cfg.include_dirs, id, t, *q)
                        }
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        Ok(Prepared {
            rels: sources.iter().map(|s| s.rel.clone()).collect(),
            cleaned,
            resolved,
            fallback,
            base: defines_table(&cfg.defines),
            file_defines: compile_file_defines(lib, cfg)?,
            macro_digest,
        })
    }

    /// The `file_defines` rules that apply to a file, as the build compiles it.
    fn context_of(&self, id: usize) -> Vec<usize> {
        (0..self.file_defines.len())
            .filter(|&k| self.file_defines[k].0.is_match(&self.rels[id]))
            .collect()
    }

    /// A context's name: its defines, `NAME=value`, `+`-joined (empty for none).
    fn context_name(&self, rules: &[usize]) -> String {
        rules
            .iter()
            .flat_map(|&k| {
                self.file_defines[k]
                    .1
                    .iter()
                    .map(|(n, v)| format!("{n}={v}"))
            })
            .collect::<Vec<_>>()
            .join("+")
    }

    /// Runs the preprocessor over one file, with the defines the build gives it.
    fn preprocess(&self, id: usize) -> preprocess::Preprocessed {
        self.run_in(id, &self.context_of(id), true)
    }

    /// Runs the preprocessor over one file with the global defines plus those of `rules`.
    fn run_in(&self, id: usize, rules: &[usize], expand_macros: bool) -> preprocess::Preprocessed {
        let mut table = self.base.clone();
        for &k in rules {
            table
                .defs
                .extend(defines_table(&self.file_defines[k].1).defs);
        }
        preprocess::preprocess(
            id,
            &self.cleaned[id].0,
            &table,
            &self.fallback,
            self,
            expand_macros,
        )
    }
}

impl Includes for Prepared {
    fn directives(&self, id: usize) -> &[Directive] {
        &self.cleaned[id].1
    }
    fn included(&self, id: usize, k: usize) -> Option<usize> {
        self.resolved[id].get(k).copied().flatten()
    }
}

/// What the parser sees for one file: the preprocessed text (same lines as the
/// original) and the macros expanded in it. For checking how a file was read.
pub fn expand_file(
    lib: &str,
    tree: &Path,
    cfg: &LibraryConfig,
    scope: &Scope,
    rel: &str,
) -> Result<(String, Vec<preprocess::Expansion>), IndexError> {
    let cfg = &with_build_defines(lib, tree, cfg, None);
    let rels = list_files(tree, cfg, scope);
    let id = rels
        .iter()
        .position(|r| r == rel)
        .ok_or_else(|| IndexError::NotIndexed(rel.to_string()))?;
    let sources = read_sources(tree, rels)?;
    let prep = Prepared::new(lib, cfg, &sources)?;
    let out = prep.preprocess(id);
    Ok((out.text, out.expansions))
}

/// The text the parser sees, file by file, for stages that read code after the index
/// (facts read launch arguments and the conditions around them off it): comments gone,
/// macros expanded, branches the build leaves out blank, lines as in the original.
/// Pass the configuration the index was built with (e.g. [`with_build_defines`]).
pub struct ExpandedTree {
    prep: Prepared,
    ids: HashMap<String, usize>,
}

impl ExpandedTree {
    /// Reads and prepares a tree once; files are expanded on demand.
    pub fn new(
        lib: &str,
        tree: &Path,
        cfg: &LibraryConfig,
        scope: &Scope,
    ) -> Result<ExpandedTree, IndexError> {
        // The same configuration `index_tree` reads the tree under.
        let cfg = &with_build_defines(lib, tree, cfg, None);
        let sources = read_sources(tree, list_files(tree, cfg, scope))?;
        let prep = Prepared::new(lib, cfg, &sources)?;
        let ids = prep
            .rels
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clone(), i))
            .collect();
        Ok(ExpandedTree { prep, ids })
    }

    /// A file's expanded text, as the build compiles it; `None` if it is not indexed.
    pub fn text(&self, rel: &str) -> Option<String> {
        let id = *self.ids.get(rel)?;
        Some(self.prep.preprocess(id).text)
    }

    /// A file's expanded text with the macros expanded in it (where each expansion
    /// is in the text and where its `#define` is).
    pub fn expand(&self, rel: &str) -> Option<(String, Vec<preprocess::Expansion>)> {
        let id = *self.ids.get(rel)?;
        let out = self.prep.preprocess(id);
        Some((out.text, out.expansions))
    }

    /// Every header's text as written, comments blanked: `(path, text)`.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.prep
            .rels
            .iter()
            .zip(&self.prep.cleaned)
            .filter(|(rel, _)| {
                Path::new(rel.as_str())
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "h" | "hpp" | "hh" | "hxx" | "inl"))
            })
            .map(|(rel, (text, _))| (rel.as_str(), text.as_str()))
    }

    /// A file's text as written, comments blanked, line for line with [`Self::text`];
    /// `None` if it is not indexed.
    pub fn written(&self, rel: &str) -> Option<&str> {
        let id = *self.ids.get(rel)?;
        self.prep.cleaned.get(id).map(|(s, _)| s.as_str())
    }
}

/// Resolves `#include "x"` / `<x>` written in file `from`: its own folder first (quoted
/// form only), then the configured include folders.
fn resolve_include(
    sources: &[Source],
    by_path: &HashMap<&str, usize>,
    include_dirs: &[String],
    from: usize,
    target: &str,
    quoted: bool,
) -> Option<usize> {
    let here = Path::new(&sources[from].rel)
        .parent()
        .unwrap_or(Path::new(""));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if quoted {
        candidates.push(here.join(target));
    }
    candidates.extend(include_dirs.iter().map(|d| Path::new(d).join(target)));
    candidates
        .into_iter()
        .find_map(|c| by_path.get(normalize(&c).as_str()).copied())
}

/// Resolves `.` and `..` without touching the disk.
fn normalize(p: &Path) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(s) => parts.push(s.to_str().unwrap_or("")),
            _ => {}
        }
    }
    parts.join("/")
}

/// Files under the tree with an indexed extension, in scope, sorted.
fn list_files(tree: &Path, cfg: &LibraryConfig, scope: &Scope) -> Vec<String> {
    tree_files(tree, tree, &cfg.extensions, scope)
}

/// Files under `dir` (inside `tree`) whose extension is one of `extensions`, as paths
/// relative to `tree`, in scope, sorted; hidden folders are skipped. The fast index
/// and the precise one list their files by this one walk.
pub(crate) fn tree_files(
    tree: &Path,
    dir: &Path,
    extensions: &[String],
    scope: &Scope,
) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| {
            !e.file_name()
                .to_str()
                .map(|n| n.starts_with('.'))
                .unwrap_or(false)
                || e.depth() == 0
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            e.path()
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| extensions.iter().any(|y| y == x))
        })
        .filter_map(|e| {
            e.path()
                .strip_prefix(tree)
                .ok()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
        })
        .filter(|rel| scope.path_in(rel))
        .collect();
    out.sort();
    out
}

fn defines_table(defs: &std::collections::BTreeMap<String, String>) -> MacroTable {
    let mut t = MacroTable::default();
    for (k, v) in defs {
        if let Some(m) = Macro::parse(&format!("{k} {v}"), Arc::from("<config>"), 0) {
            t.defs.insert(m.name.clone(), Some(Arc::new(m)));
        }
    }
    t
}

fn compile_globs(lib: &str, globs: &[String]) -> Result<GlobSet, IndexError> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(Glob::new(g).map_err(|e| IndexError::Glob {
            lib: lib.into(),
            glob: g.clone(),
            message: e.to_string(),
        })?);
    }
    b.build().map_err(|e| IndexError::Glob {
        lib: lib.into(),
        glob: globs.join(", "),
        message: e.to_string(),
    })
}

type FileDefineSets = Vec<(GlobSet, std::collections::BTreeMap<String, String>)>;

fn compile_file_defines(lib: &str, cfg: &LibraryConfig) -> Result<FileDefineSets, IndexError> {
    cfg.file_defines
        .iter()
        .map(|fd| {
            Ok((
                compile_globs(lib, std::slice::from_ref(&fd.glob))?,
                fd.defines.clone(),
            ))
        })
        .collect()
}

fn config_digest(cfg: &LibraryConfig) -> u64 {
    let text = format!(
        "{INDEX_FORMAT}|{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}",
        cfg.defines,
        cfg.file_defines
            .iter()
            .map(|f| (&f.glob, &f.defines))
            .collect::<Vec<_>>(),
        cfg.include_dirs,
        cfg.extensions,
        cfg.public_headers,
        cfg.export_macro,
        cfg.api_prefix,
    );
    xxh3_64(text.as_bytes())
}
