//! What runs per instantiation, read off the compiler: the templates a unit
//! instantiates, each with the calls it makes (the overload every call resolved to)
//! and the kernels it launches.
//!
//! A text reading has to guess type-dependent choices (`if constexpr (is_float)` for
//! `float const*`, the overload of `copy_mat` a `float` call picks). Clang makes them:
//! in an instantiated template only the `if constexpr` branch that holds is left, and
//! every call names the declaration it resolved to. libclang does not visit implicit
//! instantiations, so the unit is compiled host-side with the precise index's flags
//! ([`super::PreciseSetup::args`], one place) and `-ast-dump=json
//! -ast-dump-filter=NAME`, which dumps the declarations whose qualified name holds
//! `NAME`, each template with its instantiations. The JSON is read as it streams from
//! the compiler into a few fields per node; positions in it are written as deltas from
//! the previous one (a `file` or `line` only where it changes), so every node's
//! position is read in the order the compiler wrote it.
//!
//! Each `(unit, name)` reading is cached in the library's cache folder, keyed by the
//! flags and the content of every tree file the unit read (as the precise index's
//! units are), so a second run compiles nothing.

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::PreciseSetup;

/// Bumped whenever what a reading yields changes, so old caches are ignored.
const INSTANTIATE_FORMAT: u32 = 5;

/// The compiler the dumps come from: the clang of the libclang the precise index uses.
const CLANG: &str = "clang++-15";

/// One function as the compiler instantiated it (or a plain function, which has one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instantiation {
    /// Unqualified name.
    pub name: String,
    /// Its function type with the template arguments put in
    /// (`rocblas_status (rocblas_handle, int, const float *)`): what a call names.
    pub signature: String,
    /// The same with every alias spelled out, where the compiler gives it.
    pub desugared: String,
    /// Template arguments (`float`, `256`); empty for a plain function.
    pub template_args: Vec<String>,
    /// The template's parameter names, in order (`T`, `NB`), where the template's
    /// own declaration was dumped with it.
    pub template_params: Vec<String>,
    /// File of its name (relative to the tree, or as the compiler names it).
    pub file: String,
    /// Line of its name.
    pub line: u32,
    /// Whether this unit holds its body (a declaration only when instantiated in
    /// another unit).
    pub has_body: bool,
    /// Calls its body makes, in order.
    pub calls: Vec<ResolvedCall>,
    /// Kernels its body launches, in order.
    pub launches: Vec<ResolvedCall>,
}

/// A call or launch in an instantiation: what it resolved to and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedCall {
    /// Callee or kernel name.
    pub callee: String,
    /// The resolved declaration's type (which overload, which instantiation).
    pub signature: String,
    /// File of the statement (expansion position: where a macro was invoked).
    pub file: String,
    /// Line of the statement, as the fast index counts lines.
    pub line: u32,
    /// Line where the callee's name is spelled (inside a macro argument: the line of
    /// the argument), when in the same file.
    pub spelled_line: u32,
}

/// What reading one name in one unit gave.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Reading {
    /// The functions of that name with their instantiations.
    pub instantiations: Vec<Instantiation>,
    /// Why the unit gave nothing (the compiler did not run, the dump did not parse).
    pub failure: Option<String>,
    /// The first error of a unit that compiled with errors and still gave its AST
    /// (kept, as the precise index keeps such units: an error in one helper leaves
    /// the other templates instantiated).
    pub error: Option<String>,
    /// Compile time in milliseconds (0 from the cache).
    pub millis: u64,
}

#[derive(Debug, Default, Deserialize)]
struct BareLoc {
    offset: Option<u64>,
    file: Option<String>,
    line: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
struct Loc {
    offset: Option<u64>,
    file: Option<String>,
    line: Option<u32>,
    #[serde(rename = "spellingLoc")]
    spelling: Option<BareLoc>,
    #[serde(rename = "expansionLoc")]
    expansion: Option<BareLoc>,
}

#[derive(Debug, Default, Deserialize)]
struct Range {
    begin: Option<Loc>,
    end: Option<Loc>,
}

#[derive(Debug, Default, Deserialize)]
struct QualType {
    #[serde(rename = "qualType", default)]
    qual: String,
    #[serde(rename = "desugaredQualType", default)]
    desugared: String,
}

#[derive(Debug, Default, Deserialize)]
struct DeclRef {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(rename = "type")]
    ty: Option<QualType>,
}

/// The fields of a dumped node this reading uses; the rest is skipped as it streams.
#[derive(Debug, Default, Deserialize)]
struct Node {
    #[serde(default)]
    kind: String,
    name: Option<String>,
    loc: Option<Loc>,
    range: Option<Range>,
    #[serde(rename = "type")]
    ty: Option<QualType>,
    #[serde(rename = "referencedDecl")]
    referenced: Option<DeclRef>,
    value: Option<serde_json::Value>,
    #[serde(default)]
    inner: Vec<Node>,
}

/// A position, read with the ones written before it: `(file, line)` of the spelling
/// and of the expansion.
#[derive(Debug, Clone, Default)]
struct Pos {
    spelling: (String, u32),
    expansion: (String, u32),
}

/// Positions of every node, in the order the compiler wrote them.
struct Positions {
    file: String,
    line: u32,
}

impl Positions {
    fn bare(&mut self, offset: Option<u64>, file: &Option<String>, line: Option<u32>) -> bool {
        if offset.is_none() {
            return false;
        }
        if let Some(f) = file {
            self.file = f.clone();
        }
        if let Some(l) = line {
            self.line = l;
        }
        true
    }

    fn loc(&mut self, l: &Loc) -> Option<Pos> {
        if l.spelling.is_some() || l.expansion.is_some() {
            let s = l
                .spelling
                .as_ref()
                .filter(|b| self.bare(b.offset, &b.file, b.line))
                .map(|_| (self.file.clone(), self.line));
            let e = l
                .expansion
                .as_ref()
                .filter(|b| self.bare(b.offset, &b.file, b.line))
                .map(|_| (self.file.clone(), self.line));
            let e = e.or_else(|| s.clone())?;
            return Some(Pos {
                spelling: s.unwrap_or_else(|| e.clone()),
                expansion: e,
            });
        }
        self.bare(l.offset, &l.file, l.line).then(|| Pos {
            spelling: (self.file.clone(), self.line),
            expansion: (self.file.clone(), self.line),
        })
    }

    /// `(loc, range begin)` of a node; the range's end is read only to keep count.
    fn node(&mut self, n: &Node) -> (Option<Pos>, Option<Pos>) {
        let loc = n.loc.as_ref().and_then(|l| self.loc(l));
        let mut begin = None;
        if let Some(r) = &n.range {
            begin = r.begin.as_ref().and_then(|l| self.loc(l));
            if let Some(e) = &r.end {
                self.loc(e);
            }
        }
        (loc, begin)
    }
}

fn is_function(kind: &str) -> bool {
    matches!(
        kind,
        "FunctionDecl" | "CXXMethodDecl" | "CXXConstructorDecl" | "CXXDestructorDecl"
    )
}

/// Reads a dump (one or more JSON documents, one per declaration the filter matched)
/// and keeps the functions named `name`: plain ones and instantiations, not the
/// dependent patterns. File names under `tree` are made relative to it.
pub fn read_dump<R: Read>(r: R, name: &str, tree: &Path) -> Result<Vec<Instantiation>, String> {
    let prefixes = tree_prefixes(tree);
    let mut out = Vec::new();
    let stream = serde_json::Deserializer::from_reader(BufReader::new(r)).into_iter::<Node>();
    for doc in stream {
        let doc = doc.map_err(|e| format!("AST dump does not parse: {e}"))?;
        // Every document starts from no position.
        let mut pos = Positions {
            file: String::new(),
            line: 0,
        };
        collect(&doc, None, name, &mut pos, &prefixes, &mut out);
    }
    Ok(out)
}

fn tree_prefixes(tree: &Path) -> Vec<String> {
    let mut p = vec![format!("{}/", tree.display())];
    if let Ok(c) = tree.canonicalize() {
        p.push(format!("{}/", c.display()));
    }
    p
}

fn relative(file: &str, prefixes: &[String]) -> String {
    prefixes
        .iter()
        .find_map(|p| file.strip_prefix(p.as_str()))
        .unwrap_or(file)
        .to_string()
}

/// Walks a node in the compiler's order, collecting the functions named `name`.
fn collect(
    n: &Node,
    template: Option<&[String]>,
    name: &str,
    pos: &mut Positions,
    prefixes: &[String],
    out: &mut Vec<Instantiation>,
) {
    let (loc, _) = pos.node(n);
    if is_function(&n.kind) && n.name.as_deref() == Some(name) {
        let template_args: Vec<String> = n
            .inner
            .iter()
            .filter(|c| c.kind == "TemplateArgument")
            .map(template_arg)
            .collect();
        // The pattern of a template: its calls are not resolved yet.
        let pattern = template.is_some() && template_args.is_empty();
        let mut f = Instantiation {
            name: name.to_string(),
            signature: n.ty.as_ref().map(|t| t.qual.clone()).unwrap_or_default(),
            desugared: n
                .ty
                .as_ref()
                .map(|t| t.desugared.clone())
                .unwrap_or_default(),
            template_params: template.unwrap_or_default().to_vec(),
            template_args,
            // Where a macro made it: the line invoking the macro, as the index counts.
            file: loc
                .as_ref()
                .map(|p| relative(&p.expansion.0, prefixes))
                .unwrap_or_default(),
            line: loc.as_ref().map(|p| p.expansion.1).unwrap_or(0),
            // A function-try-block (`f() try { ... } catch`) is a body too.
            has_body: n
                .inner
                .iter()
                .any(|c| c.kind == "CompoundStmt" || c.kind == "CXXTryStmt"),
            calls: Vec::new(),
            launches: Vec::new(),
        };
        for c in &n.inner {
            body(c, pos, prefixes, &mut f);
        }
        if !pattern {
            out.push(f);
        }
        return;
    }
    let params: Option<Vec<String>> = (n.kind == "FunctionTemplateDecl").then(|| {
        n.inner
            .iter()
            .filter(|c| {
                matches!(
                    c.kind.as_str(),
                    "TemplateTypeParmDecl" | "NonTypeTemplateParmDecl" | "TemplateTemplateParmDecl"
                )
            })
            .map(|c| c.name.clone().unwrap_or_default())
            .collect()
    });
    for c in &n.inner {
        collect(c, params.as_deref(), name, pos, prefixes, out);
    }
}

fn template_arg(n: &Node) -> String {
    if let Some(t) = &n.ty {
        return t.qual.clone();
    }
    match &n.value {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

/// The declaration an expression names, looking through casts and parentheses:
/// `(name, kind, type)`, with the spelled position of the name.
fn named(n: &Node, pos: &mut Positions) -> Option<(String, String, String, Option<Pos>)> {
    let (loc, _) = pos.node(n);
    let mut found = None;
    if let Some(r) = &n.referenced {
        let ty = r.ty.as_ref().map(|t| t.qual.clone()).unwrap_or_default();
        found = Some((r.name.clone(), r.kind.clone(), ty, loc.clone()));
    } else if n.kind == "MemberExpr" {
        let ty = n.ty.as_ref().map(|t| t.qual.clone()).unwrap_or_default();
        found = Some((
            n.name.clone().unwrap_or_default(),
            "CXXMethodDecl".into(),
            ty,
            loc.clone(),
        ));
    }
    // The children are read all the same: their positions count for what follows.
    for c in &n.inner {
        let inner = named(c, pos);
        if found.is_none()
            && matches!(
                n.kind.as_str(),
                "ImplicitCastExpr" | "ParenExpr" | "UnaryOperator" | "CStyleCastExpr"
            )
        {
            found = inner;
        }
    }
    found
}

/// Reads a statement or expression of a body, adding its calls and launches.
fn body(n: &Node, pos: &mut Positions, prefixes: &[String], f: &mut Instantiation) {
    let call = matches!(
        n.kind.as_str(),
        "CallExpr" | "CXXMemberCallExpr" | "CUDAKernelCallExpr"
    );
    if !call {
        pos.node(n);
        for c in &n.inner {
            body(c, pos, prefixes, f);
        }
        return;
    }
    let (_, begin) = pos.node(n);
    let mut children = n.inner.iter();
    let callee = children.next().and_then(|c| named(c, pos));
    if let (Some((name, kind, signature, spelled)), Some(at)) = (callee, begin) {
        let is_function = is_function(&kind);
        let internal = name.starts_with("__hip") || name.starts_with("__builtin");
        if is_function && !internal {
            let file = relative(&at.expansion.0, prefixes);
            let spelled_line = spelled
                .filter(|p| relative(&p.spelling.0, prefixes) == file)
                .map(|p| p.spelling.1)
                .unwrap_or(at.expansion.1);
            let rc = ResolvedCall {
                callee: name,
                signature,
                file,
                line: at.expansion.1,
                spelled_line,
            };
            if n.kind == "CUDAKernelCallExpr" {
                f.launches.push(rc);
            } else {
                f.calls.push(rc);
            }
        }
    }
    for c in children {
        body(c, pos, prefixes, f);
    }
}

#[derive(Serialize, Deserialize, Default)]
struct CacheFile {
    format: u32,
    readings: Vec<CachedReading>,
}

#[derive(Serialize, Deserialize, Clone)]
struct CachedReading {
    unit: String,
    name: String,
    flags: u64,
    deps: Vec<(String, u64)>,
    reading: Reading,
}

/// How many readings a run took from the compiler and from the cache, and the time
/// the compiler took.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InstantiateStats {
    /// Readings compiled in this run.
    pub compiled: usize,
    /// Readings taken from the cache.
    pub cached: usize,
    /// Readings that gave nothing (the unit did not compile or the dump did not parse).
    pub failed: usize,
    /// Compile time summed over the readings compiled, in milliseconds.
    pub compile_millis: u64,
}

/// Reads instantiations of one library's units, cached.
pub struct InstantiationReader {
    tree: PathBuf,
    cache_path: PathBuf,
    /// What a unit's flags are made of.
    setup: OwnedSetup,
    units: Vec<String>,
    state: Mutex<ReaderState>,
}

#[derive(Default)]
struct ReaderState {
    cache: HashMap<(String, String), CachedReading>,
    memo: HashMap<(String, String), Arc<Reading>>,
    hashes: HashMap<String, u64>,
    /// Each unit's text, read once, for [`InstantiationReader::includers`].
    unit_texts: Vec<(String, String)>,
    dirty: bool,
    stats: InstantiateStats,
}

impl InstantiationReader {
    /// A reader over the units of `setup` (writing its generated headers), with the
    /// cache in its cache folder.
    pub fn new(setup: &PreciseSetup, units: Vec<String>) -> Result<Self, super::PreciseError> {
        setup.write_generated()?;
        let owned = OwnedSetup {
            lib: setup.lib.to_string(),
            version: setup.version.to_string(),
            tree: setup.tree.to_path_buf(),
            cfg: setup.cfg.clone(),
            pair_headers: setup.pair_headers.clone(),
            cache_dir: setup.cache_dir.to_path_buf(),
        };
        let cache_path = setup.cache_dir.join("instantiations.bin");
        let cached: CacheFile = std::fs::read(&cache_path)
            .ok()
            .and_then(|b| postcard::from_bytes::<CacheFile>(&b).ok())
            .filter(|c| c.format == INSTANTIATE_FORMAT)
            .unwrap_or_default();
        let state = ReaderState {
            cache: cached
                .readings
                .into_iter()
                .map(|r| ((r.unit.clone(), r.name.clone()), r))
                .collect(),
            ..Default::default()
        };
        Ok(InstantiationReader {
            tree: setup.tree.to_path_buf(),
            cache_path,
            setup: owned,
            units,
            state: Mutex::new(state),
        })
    }

    /// The units that include `header` by its file name (`#include "x.hpp"`), where
    /// a template defined there is instantiated explicitly.
    pub fn includers(&self, header: &str) -> Vec<String> {
        let Some(base) = Path::new(header).file_name().map(|b| b.to_string_lossy()) else {
            return Vec::new();
        };
        let mut st = self.lock();
        if st.unit_texts.is_empty() {
            st.unit_texts = self
                .units
                .iter()
                .map(|u| {
                    let t = std::fs::read_to_string(self.tree.join(u)).unwrap_or_default();
                    (u.clone(), t)
                })
                .collect();
        }
        let wanted = [
            format!("/{base}\""),
            format!("\"{base}\""),
            format!("<{base}>"),
        ];
        st.unit_texts
            .iter()
            .filter(|(_, t)| {
                t.lines()
                    .filter(|l| l.trim_start().starts_with("#include"))
                    .any(|l| wanted.iter().any(|w| l.contains(w.as_str())))
            })
            .map(|(u, _)| u.clone())
            .collect()
    }

    /// Whether `file` is a translation unit of the tree.
    pub fn is_unit(&self, file: &str) -> bool {
        self.units.iter().any(|u| u == file)
    }

    /// The instantiations of the functions named `name` in `unit`.
    pub fn read(&self, unit: &str, name: &str) -> Arc<Reading> {
        let key = (unit.to_string(), name.to_string());
        let args = self.setup.setup().args(unit);
        let flags = xxh3_64(
            format!("{INSTANTIATE_FORMAT}|{unit}|{name}|{}", args.join("\u{1}")).as_bytes(),
        );
        {
            let mut st = self.lock();
            if let Some(r) = st.memo.get(&key) {
                return r.clone();
            }
            let hit = st.cache.get(&key).cloned().filter(|c| c.flags == flags);
            if let Some(c) = hit {
                let fresh = c.deps.iter().all(|(p, h)| st.hash_of(p) == *h);
                if fresh {
                    let mut r = c.reading.clone();
                    r.millis = 0;
                    let r = Arc::new(r);
                    st.memo.insert(key, r.clone());
                    st.stats.cached += 1;
                    return r;
                }
            }
        }
        // Compiled without the lock: units compile in parallel.
        let (reading, deps) = self.compile(unit, name, &args);
        let mut st = self.lock();
        st.stats.compiled += 1;
        st.stats.compile_millis += reading.millis;
        if reading.failure.is_some() {
            st.stats.failed += 1;
            tracing::debug!(unit, name, why = ?reading.failure, "Instantiations not read.");
        } else {
            let deps = deps
                .into_iter()
                .filter(|p| !p.starts_with("/usr/"))
                .map(|p| {
                    let h = st.hash_of(&p);
                    (p, h)
                })
                .collect();
            st.cache.insert(
                key.clone(),
                CachedReading {
                    unit: unit.to_string(),
                    name: name.to_string(),
                    flags,
                    deps,
                    reading: reading.clone(),
                },
            );
            st.dirty = true;
        }
        let r = Arc::new(reading);
        st.memo.insert(key, r.clone());
        r
    }

    /// Counts so far.
    pub fn stats(&self) -> InstantiateStats {
        self.lock().stats.clone()
    }

    /// Writes the cache when this run added to it.
    pub fn save(&self) {
        let mut st = self.lock();
        if !st.dirty {
            return;
        }
        let mut readings: Vec<CachedReading> = st.cache.values().cloned().collect();
        readings.sort_by(|a, b| (&a.unit, &a.name).cmp(&(&b.unit, &b.name)));
        let file = CacheFile {
            format: INSTANTIATE_FORMAT,
            readings,
        };
        if let Ok(bytes) = postcard::to_allocvec(&file) {
            let tmp = self.cache_path.with_extension("tmp");
            if std::fs::write(&tmp, bytes).is_ok()
                && std::fs::rename(&tmp, &self.cache_path).is_ok()
            {
                st.dirty = false;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReaderState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs the compiler on one unit with the dump filtered to `name`; returns the
    /// reading and the files the unit read.
    fn compile(&self, unit: &str, name: &str, args: &[String]) -> (Reading, Vec<String>) {
        let t0 = std::time::Instant::now();
        let deps_file = tempfile::NamedTempFile::new().ok();
        let mut cmd = Command::new(CLANG);
        cmd.args(args)
            .args(["-fsyntax-only", "-Xclang", "-ast-dump=json", "-Xclang"])
            .arg(format!("-ast-dump-filter={name}"));
        if let Some(d) = &deps_file {
            cmd.arg("-MD").arg("-MF").arg(d.path());
        }
        cmd.arg(self.tree.join(unit))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let failed = |why: String, t0: std::time::Instant| Reading {
            instantiations: Vec::new(),
            failure: Some(why),
            error: None,
            millis: t0.elapsed().as_millis() as u64,
        };
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return (
                    failed(
                        format!(
                            "cannot run {CLANG} ({e}); install clang-15 (scripts/setup.sh does)"
                        ),
                        t0,
                    ),
                    Vec::new(),
                )
            }
        };
        let stderr = child.stderr.take();
        let errors = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut e) = stderr {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let parsed = match child.stdout.take() {
            Some(out) => read_dump(out, name, &self.tree),
            None => Err("no output".into()),
        };
        let status = child.wait();
        let errors = errors.join().unwrap_or_default();
        let ok = status.map(|s| s.success()).unwrap_or(false);
        let first_error = errors
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("")
            .to_string();
        let reading = match parsed {
            Ok(instantiations) if ok || !instantiations.is_empty() => Reading {
                instantiations,
                failure: None,
                error: (!ok).then_some(first_error),
                millis: t0.elapsed().as_millis() as u64,
            },
            Ok(_) => failed(format!("{unit} does not compile: {first_error}"), t0),
            Err(e) => failed(format!("{unit}: {e}"), t0),
        };
        let deps = deps_file
            .and_then(|d| std::fs::read_to_string(d.path()).ok())
            .map(|s| make_deps(&s))
            .unwrap_or_default();
        (reading, deps)
    }
}

impl ReaderState {
    fn hash_of(&mut self, p: &str) -> u64 {
        if let Some(h) = self.hashes.get(p) {
            return *h;
        }
        let h = std::fs::read(p).map(|b| xxh3_64(&b)).unwrap_or(0);
        self.hashes.insert(p.to_string(), h);
        h
    }
}

impl Drop for InstantiationReader {
    fn drop(&mut self) {
        self.save();
    }
}

/// The prerequisites of a make rule as the compiler writes it (`-MD`).
fn make_deps(s: &str) -> Vec<String> {
    let joined = s.replace("\\\n", " ");
    let Some((_, rest)) = joined.split_once(": ") else {
        return Vec::new();
    };
    rest.split_whitespace().map(str::to_string).collect()
}

/// A [`PreciseSetup`] with owned fields, so the reader can make a unit's flags later.
struct OwnedSetup {
    lib: String,
    version: String,
    tree: PathBuf,
    cfg: crate::config::LibraryConfig,
    pair_headers: Option<PathBuf>,
    cache_dir: PathBuf,
}

impl OwnedSetup {
    fn setup(&self) -> PreciseSetup<'_> {
        PreciseSetup {
            lib: &self.lib,
            version: &self.version,
            tree: &self.tree,
            cfg: &self.cfg,
            pair_headers: self.pair_headers.clone(),
            cache_dir: &self.cache_dir,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template launching one kernel or another under `if constexpr`, and calling
    /// one of two overloads.
    const FIXTURE: &str = r#"#include <hip/hip_runtime.h>
#include <type_traits>

template <typename T>
__global__ void scale_kernel(int n, T a, T* x) { if (threadIdx.x < n) x[threadIdx.x] *= a; }

template <typename T>
__global__ void scale_wide_kernel(int n, T a, T* x) {}

static float magnitude(float v) { return v < 0 ? -v : v; }
static double magnitude(double v) { return v < 0 ? -v : v; }

#define LAUNCH(k, g, b, s, ...) hipLaunchKernelGGL(k, g, b, 0, s, __VA_ARGS__)

template <typename T, int NB>
int fixture_launcher(hipStream_t stream, int n, T a, T* x)
{
    constexpr bool is_float = std::is_same_v<T, float>;
    T m = magnitude(a);
    if constexpr(is_float)
    {
        LAUNCH(scale_kernel<T>, dim3(n / NB), dim3(NB), stream,
               n, m, x);
    }
    else
    {
        hipLaunchKernelGGL(scale_wide_kernel<T>, dim3(n), dim3(NB), 0, stream, n, a, x);
    }
    return 0;
}

extern "C" int fixture_sscal(hipStream_t s, int n, float a, float* x) { return fixture_launcher<float, 64>(s, n, a, x); }
extern "C" int fixture_dscal(hipStream_t s, int n, double a, double* x) { return fixture_launcher<double, 32>(s, n, a, x); }
"#;

    /// Compiles the fixture with the real compiler and reads `name`; `None` when the
    /// compiler or the HIP headers are missing (as the other precise tests skip).
    fn dump(name: &str) -> Option<Vec<Instantiation>> {
        let hip = Path::new("/usr/include/hip/hip_runtime.h").exists();
        let clang = Command::new(CLANG).arg("--version").output().is_ok();
        if !hip || !clang {
            eprintln!("{CLANG} or the HIP headers missing: skipped");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fixture.hip"), FIXTURE).unwrap();
        let out = Command::new(CLANG)
            .args([
                "-x",
                "hip",
                "--cuda-host-only",
                "-nogpulib",
                "--rocm-path=/usr",
                "--offload-arch=gfx90a",
                "-std=c++17",
                "-w",
                "-fsyntax-only",
                "-Xclang",
                "-ast-dump=json",
                "-Xclang",
            ])
            .arg(format!("-ast-dump-filter={name}"))
            .arg(dir.path().join("fixture.hip"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(read_dump(out.stdout.as_slice(), name, dir.path()).unwrap())
    }

    #[test]
    fn each_instantiation_holds_only_the_constexpr_branch_that_holds() {
        let Some(found) = dump("fixture_launcher") else {
            return;
        };
        // The pattern is left out: one instantiation per type.
        assert_eq!(found.len(), 2, "{found:#?}");
        let float = found
            .iter()
            .find(|f| f.template_args == ["float", "64"])
            .expect("float instantiation");
        assert_eq!(float.signature, "int (hipStream_t, int, float, float *)");
        assert_eq!(float.template_params, ["T", "NB"]);
        assert_eq!((float.file.as_str(), float.line), ("fixture.hip", 16));
        assert!(float.has_body);
        let launches: Vec<(&str, u32, u32)> = float
            .launches
            .iter()
            .map(|l| (l.callee.as_str(), l.line, l.spelled_line))
            .collect();
        // The macro's invocation line; the kernel's name on the same line.
        assert_eq!(launches, [("scale_kernel", 22, 22)]);
        let double = found
            .iter()
            .find(|f| f.template_args == ["double", "32"])
            .expect("double instantiation");
        let launches: Vec<(&str, u32)> = double
            .launches
            .iter()
            .map(|l| (l.callee.as_str(), l.line))
            .collect();
        assert_eq!(launches, [("scale_wide_kernel", 27)]);
        assert_eq!(double.launches[0].signature, "void (int, double, double *)");
    }

    #[test]
    fn each_call_names_the_overload_it_resolved_to() {
        let Some(found) = dump("fixture_launcher") else {
            return;
        };
        let calls: Vec<(String, String, String, u32)> = found
            .iter()
            .flat_map(|f| f.calls.iter())
            .map(|c| {
                (
                    c.callee.clone(),
                    c.signature.clone(),
                    c.file.clone(),
                    c.line,
                )
            })
            .collect();
        assert!(calls.contains(&(
            "magnitude".into(),
            "float (float)".into(),
            "fixture.hip".into(),
            19
        )));
        assert!(calls.contains(&(
            "magnitude".into(),
            "double (double)".into(),
            "fixture.hip".into(),
            19
        )));
        // The launch's own configuration call is not a call of the function.
        assert!(calls.iter().all(|c| !c.0.starts_with("__hip")), "{calls:?}");
    }

    #[test]
    fn plain_functions_are_read_with_their_calls() {
        let Some(found) = dump("fixture_sscal") else {
            return;
        };
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert!(f.template_args.is_empty() && f.has_body);
        assert_eq!(f.calls.len(), 1);
        assert_eq!(f.calls[0].callee, "fixture_launcher");
        assert_eq!(
            f.calls[0].signature,
            "int (hipStream_t, int, float, float *)"
        );
        assert_eq!(f.calls[0].line, 32);
    }

    #[test]
    fn make_rules_give_their_prerequisites() {
        let d = make_deps("u.o: a.cpp /x/b.h \\\n  c.hpp\n");
        assert_eq!(d, ["a.cpp", "/x/b.h", "c.hpp"]);
    }
}
