//! What runs per instantiation, read off the compiler: the templates a unit
//! instantiates, each with the calls it makes (the overload every call resolved to)
//! and the kernels it launches.
//!
//! A text reading has to guess type-dependent choices (`if constexpr (is_float)` for
//! `float const*`, the overload of `copy_mat` a `float` call picks). Clang makes them:
//! in an instantiated template only the `if constexpr` branch that holds is left, and
//! every call names the declaration it resolved to. libclang does not visit implicit
//! instantiations, so the unit is compiled host-side with the precise index's flags
//! ([`super::PreciseSetup::args`], one place) and `-ast-dump=json`, once for all the
//! functions of the unit: a filter (`-ast-dump-filter=NAME`) would compile the unit
//! again for every name (2-4 s each; a rocBLAS unit's whole dump is read in 8-9 s).
//! The dump, over a gigabyte for a rocBLAS unit and nearly all of it the HIP and C++
//! headers, is read as it streams from the compiler: only functions declared in the
//! tree are kept, into a few fields per node; positions in it are written as deltas
//! from the previous one (a `file` or `line` only where it changes), so every node's
//! position is read in the order the compiler wrote it.
//!
//! Each unit's reading is cached in a file of its own under the library's cache
//! folder, keyed by the flags and the content of every tree file the unit read (as
//! the precise index's units are), so a second run compiles nothing.

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::PreciseSetup;

/// Bumped whenever what a reading yields changes, so old caches are ignored.
const INSTANTIATE_FORMAT: u32 = 6;

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

fn is_template_param(kind: &str) -> bool {
    matches!(
        kind,
        "TemplateTypeParmDecl" | "NonTypeTemplateParmDecl" | "TemplateTemplateParmDecl"
    )
}

/// One function node read into an [`Instantiation`] (its own position `loc` already
/// read); `None` for the pattern of a template, whose calls are not resolved yet.
fn instantiation(
    n: &Node,
    loc: Option<Pos>,
    template: Option<&[String]>,
    pos: &mut Positions,
    prefixes: &[String],
) -> Option<Instantiation> {
    let template_args: Vec<String> = n
        .inner
        .iter()
        .filter(|c| c.kind == "TemplateArgument")
        .map(template_arg)
        .collect();
    let pattern = template.is_some() && template_args.is_empty();
    let mut f = Instantiation {
        name: n.name.clone().unwrap_or_default(),
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
    (!pattern).then_some(f)
}

/// Reads the dump of a whole unit (`-ast-dump=json` with no filter) as it streams and
/// keeps every function declared in a file of the tree: plain ones and
/// instantiations, not the dependent patterns. Nothing else is kept: the dump of one
/// rocBLAS unit is over a gigabyte, nearly all of it the HIP and C++ headers, whose
/// nodes are read only for the positions they carry (each written as a delta from the
/// one before it).
pub fn read_unit_dump<R: Read>(r: R, tree: &Path) -> Result<Vec<Instantiation>, String> {
    use serde::de::DeserializeSeed;
    let mut st = Skim {
        pos: Positions {
            file: String::new(),
            line: 0,
        },
        prefixes: tree_prefixes(tree),
        out: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, r));
    SkimNode {
        st: &mut st,
        template: None,
    }
    .deserialize(&mut de)
    .map_err(|e| format!("AST dump does not parse: {e}"))?;
    Ok(st.out)
}

/// What the skim of a whole unit carries from node to node.
struct Skim {
    pos: Positions,
    prefixes: Vec<String>,
    out: Vec<Instantiation>,
}

impl Skim {
    fn in_tree(&self, p: &Pos) -> bool {
        self.prefixes
            .iter()
            .any(|x| p.expansion.0.starts_with(x.as_str()))
    }
}

/// One node of the skim, with the parameters of the template it sits in.
struct SkimNode<'s> {
    st: &'s mut Skim,
    template: Option<Vec<String>>,
}

/// What a skimmed node tells its parent (a template reads its parameters off these).
struct Skimmed {
    kind: String,
    name: Option<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for SkimNode<'_> {
    type Value = Skimmed;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Skimmed, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for SkimNode<'_> {
    type Value = Skimmed;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an AST node")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Skimmed, A::Error> {
        let st = self.st;
        let mut kind = String::new();
        let mut name = None;
        let mut loc = None;
        let mut ty = None;
        let mut read_function = false;
        // Keys come in the compiler's order: kind, loc and range, name and type
        // before inner.
        while let Some(key) = m.next_key::<String>()? {
            match key.as_str() {
                "kind" => kind = m.next_value()?,
                "name" => name = Some(m.next_value::<String>()?),
                "type" => ty = Some(m.next_value::<QualType>()?),
                "loc" => {
                    let l: Loc = m.next_value()?;
                    loc = st.pos.loc(&l);
                }
                "range" => {
                    let r: Range = m.next_value()?;
                    for l in [&r.begin, &r.end].into_iter().flatten() {
                        st.pos.loc(l);
                    }
                }
                "inner" if is_function(&kind) && loc.as_ref().is_some_and(|p| st.in_tree(p)) => {
                    let node = Node {
                        kind: kind.clone(),
                        name: name.clone(),
                        ty: ty.take(),
                        inner: m.next_value()?,
                        ..Default::default()
                    };
                    let found = instantiation(
                        &node,
                        loc.clone(),
                        self.template.as_deref(),
                        &mut st.pos,
                        &st.prefixes,
                    );
                    st.out.extend(found);
                    read_function = true;
                }
                "inner" => m.next_value_seed(SkimChildren {
                    st: &mut *st,
                    template_holder: kind == "FunctionTemplateDecl",
                })?,
                _ => {
                    m.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        // A declaration with no parameters and no body has no inner.
        if is_function(&kind)
            && !read_function
            && self.template.is_none()
            && loc.as_ref().is_some_and(|p| st.in_tree(p))
        {
            let node = Node {
                kind: kind.clone(),
                name: name.clone(),
                ty,
                ..Default::default()
            };
            let found = instantiation(&node, loc, None, &mut st.pos, &st.prefixes);
            st.out.extend(found);
        }
        Ok(Skimmed { kind, name })
    }
}

/// The `inner` array of a skimmed node.
struct SkimChildren<'s> {
    st: &'s mut Skim,
    /// Whether the parent is a function template, whose parameters its children get.
    template_holder: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for SkimChildren<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for SkimChildren<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("AST nodes")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        // The template's parameters come before its pattern and instantiations.
        let mut params: Option<Vec<String>> = self.template_holder.then(Vec::new);
        loop {
            let seed = SkimNode {
                st: &mut *self.st,
                template: params.clone(),
            };
            let Some(child) = s.next_element_seed(seed)? else {
                return Ok(());
            };
            if let Some(p) = params.as_mut().filter(|_| is_template_param(&child.kind)) {
                p.push(child.name.unwrap_or_default());
            }
        }
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

/// One unit's reading as cached: keyed by the flags and the content of every tree file
/// the unit read.
#[derive(Serialize, Deserialize, Clone)]
struct CachedReading {
    format: u32,
    unit: String,
    flags: u64,
    deps: Vec<(String, u64)>,
    reading: Reading,
}

/// How many units a run read with the compiler and from the cache, and the time the
/// compiler took.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InstantiateStats {
    /// Units compiled in this run.
    pub compiled: usize,
    /// Units whose reading came from the cache.
    pub cached: usize,
    /// Units that gave nothing (the unit did not compile or the dump did not parse).
    pub failed: usize,
    /// Compile time summed over the units compiled, in milliseconds.
    pub compile_millis: u64,
}

/// Reads instantiations of one library's units, each unit compiled once per pin.
pub struct InstantiationReader {
    tree: PathBuf,
    /// One cache file per unit, written when the unit is read.
    cache_dir: PathBuf,
    /// What a unit's flags are made of.
    setup: OwnedSetup,
    units: Vec<String>,
    state: Mutex<ReaderState>,
}

/// A unit's reading with its functions by name.
struct UnitReading {
    reading: Reading,
    by_name: HashMap<String, Vec<usize>>,
}

#[derive(Default)]
struct ReaderState {
    /// Per unit, its reading once made (units are read in parallel, each once).
    units: HashMap<String, Arc<std::sync::OnceLock<Arc<UnitReading>>>>,
    memo: HashMap<(String, String), Arc<Reading>>,
    hashes: HashMap<String, u64>,
    /// Each unit's text, read once, for [`InstantiationReader::includers`].
    unit_texts: Vec<(String, String)>,
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
        Ok(InstantiationReader {
            tree: setup.tree.to_path_buf(),
            cache_dir: setup.cache_dir.join("instantiations"),
            setup: owned,
            units,
            state: Mutex::new(ReaderState::default()),
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
        if let Some(r) = self.lock().memo.get(&key) {
            return r.clone();
        }
        let whole = self.unit(unit);
        let r = Arc::new(Reading {
            instantiations: whole
                .by_name
                .get(name)
                .into_iter()
                .flatten()
                .map(|&i| whole.reading.instantiations[i].clone())
                .collect(),
            ..whole.reading.clone_without_functions()
        });
        self.lock().memo.insert(key, r.clone());
        r
    }

    /// The reading of a whole unit: from the cache when every file it read is
    /// unchanged, else from the compiler (once, however many threads ask).
    fn unit(&self, unit: &str) -> Arc<UnitReading> {
        let once = self
            .lock()
            .units
            .entry(unit.to_string())
            .or_default()
            .clone();
        once.get_or_init(|| Arc::new(self.read_unit(unit))).clone()
    }

    fn cache_file(&self, unit: &str) -> PathBuf {
        self.cache_dir
            .join(format!("{:016x}.bin", xxh3_64(unit.as_bytes())))
    }

    fn read_unit(&self, unit: &str) -> UnitReading {
        let args = self.setup.setup().args(unit);
        let flags =
            xxh3_64(format!("{INSTANTIATE_FORMAT}|{unit}|{}", args.join("\u{1}")).as_bytes());
        let path = self.cache_file(unit);
        let cached = std::fs::read(&path)
            .ok()
            .and_then(|b| postcard::from_bytes::<CachedReading>(&b).ok())
            .filter(|c| c.format == INSTANTIATE_FORMAT && c.unit == unit && c.flags == flags);
        if let Some(c) = cached {
            let mut st = self.lock();
            if c.deps.iter().all(|(p, h)| st.hash_of(p) == *h) {
                st.stats.cached += 1;
                let mut reading = c.reading;
                reading.millis = 0;
                return UnitReading::new(reading);
            }
        }
        let (reading, deps) = self.compile(unit, &args);
        let mut st = self.lock();
        st.stats.compiled += 1;
        st.stats.compile_millis += reading.millis;
        if reading.failure.is_some() {
            st.stats.failed += 1;
            tracing::debug!(unit, why = ?reading.failure, "Instantiations not read.");
            return UnitReading::new(reading);
        }
        let deps: Vec<(String, u64)> = deps
            .into_iter()
            .filter(|p| !p.starts_with("/usr/"))
            .map(|p| {
                let h = st.hash_of(&p);
                (p, h)
            })
            .collect();
        drop(st);
        let cached = CachedReading {
            format: INSTANTIATE_FORMAT,
            unit: unit.to_string(),
            flags,
            deps,
            reading,
        };
        // Written beside, then moved in: a killed run leaves no half file.
        if let Ok(bytes) = postcard::to_allocvec(&cached) {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            let written = std::fs::create_dir_all(&self.cache_dir).is_ok()
                && std::fs::write(&tmp, bytes).is_ok()
                && std::fs::rename(&tmp, &path).is_ok();
            if !written {
                tracing::warn!(unit, cache = %path.display(), "Instantiations not cached.");
            }
        }
        UnitReading::new(cached.reading)
    }

    /// Counts so far.
    pub fn stats(&self) -> InstantiateStats {
        self.lock().stats.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReaderState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs the compiler on one unit, dumping its whole AST; returns the reading and
    /// the files the unit read.
    fn compile(&self, unit: &str, args: &[String]) -> (Reading, Vec<String>) {
        let t0 = std::time::Instant::now();
        let deps_file = tempfile::NamedTempFile::new().ok();
        let mut cmd = Command::new(CLANG);
        cmd.args(args)
            .args(["-fsyntax-only", "-Xclang", "-ast-dump=json"]);
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
            Some(out) => read_unit_dump(out, &self.tree),
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

impl UnitReading {
    fn new(reading: Reading) -> Self {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, f) in reading.instantiations.iter().enumerate() {
            by_name.entry(f.name.clone()).or_default().push(i);
        }
        UnitReading { reading, by_name }
    }
}

impl Reading {
    fn clone_without_functions(&self) -> Reading {
        Reading {
            instantiations: Vec::new(),
            failure: self.failure.clone(),
            error: self.error.clone(),
            millis: self.millis,
        }
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
            ])
            .arg(dir.path().join("fixture.hip"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let all = read_unit_dump(out.stdout.as_slice(), dir.path()).unwrap();
        Some(all.into_iter().filter(|f| f.name == name).collect())
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
