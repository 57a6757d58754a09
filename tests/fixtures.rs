//! The fixture library: every file under `tests/fixtures/minilib/trees` states the facts
//! the index and the interface graphs must hold about it, one `// expect:` line each.
//!
//! The trees imitate the macro patterns of rocBLAS (`rocfx`) and rocSOLVER
//! (`rocfxsolver`, indexed with `rocfx` as its pair for cross-library edges). This file
//! parses every expectation, builds both indexes once, checks every fact, and reports
//! all failures at once with the `file:line` of the expectation that failed.
//!
//! Grammar of an expectation (line numbers are 1-based lines of the same file):
//!
//! ```text
//! // expect: symbol NAME KIND line N              KIND = function | kernel | device
//! // expect: kernel NAME bounds TEXT              TEXT as stored, `-` for none
//! // expect: launch CALLER -> KERNEL line N [via MACRO]
//! // expect: call CALLER -> CALLEE line N [via MACRO]
//! // expect: macro-symbol NAME from MACRO
//! // expect: no-symbol NAME
//! // expect: api NAME family F precision P variants V1,V2   (`-` for empty)
//! // expect: no-api NAME
//! // expect: path API: N1 > N2 > ... > NK
//! // expect: edge API: FROM -KIND-> TO
//! // expect: not-in-graph API: NAME
//! ```
//!
//! `launch` and `call` without `via` require the site not to come out of a macro.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rocqa::config::{ProjectFile, Scope};
use rocqa::graph::CodeGraph;
use rocqa::index::{index_tree, IndexStats};
use rocqa::model::{EdgeKind, FileIndex, InterfaceGraph, LibraryIndex, NodeKind, SymbolKind};

const LIBS: [&str; 2] = ["rocfx", "rocfxsolver"];
const VERSION: &str = "1.0";

/// Public API functions declared in the fixture headers without an `expect: api` line,
/// per library. Kept empty on purpose: every declaration is pinned by an expectation,
/// and `api_count_is_exact` fails if one is added without either.
const API_WITHOUT_EXPECTATION: &[(&str, &str)] = &[];

fn minilib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilib")
}

// ---------------------------------------------------------------------------------
// Expectations
// ---------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Fact {
    Symbol {
        name: String,
        kind: SymbolKind,
        line: u32,
    },
    Kernel {
        name: String,
        bounds: Option<String>,
    },
    Launch {
        caller: String,
        kernel: String,
        line: u32,
        via: Option<String>,
    },
    Call {
        caller: String,
        callee: String,
        line: u32,
        via: Option<String>,
    },
    MacroSymbol {
        name: String,
        from: String,
    },
    NoSymbol {
        name: String,
    },
    Api {
        name: String,
        family: String,
        precision: String,
        variants: Vec<String>,
    },
    NoApi {
        name: String,
    },
    Path {
        api: String,
        names: Vec<String>,
    },
    Edge {
        api: String,
        from: String,
        kind: EdgeKind,
        to: String,
    },
    NotInGraph {
        api: String,
        name: String,
    },
}

impl Fact {
    fn kind_name(&self) -> &'static str {
        match self {
            Fact::Symbol { .. } => "symbol",
            Fact::Kernel { .. } => "kernel",
            Fact::Launch { .. } => "launch",
            Fact::Call { .. } => "call",
            Fact::MacroSymbol { .. } => "macro-symbol",
            Fact::NoSymbol { .. } => "no-symbol",
            Fact::Api { .. } => "api",
            Fact::NoApi { .. } => "no-api",
            Fact::Path { .. } => "path",
            Fact::Edge { .. } => "edge",
            Fact::NotInGraph { .. } => "not-in-graph",
        }
    }
}

/// One expectation and where it is written.
#[derive(Debug, Clone)]
struct Expect {
    lib: &'static str,
    /// File relative to the library's tree root (as the index names it).
    rel: String,
    /// Line of the `expect:` comment.
    at: usize,
    fact: Fact,
}

impl Expect {
    fn place(&self) -> String {
        format!("trees/{}/{}:{}", self.lib, self.rel, self.at)
    }
}

fn symbol_kind(s: &str) -> Option<SymbolKind> {
    match s {
        "function" => Some(SymbolKind::Function),
        "kernel" => Some(SymbolKind::Kernel),
        "device" => Some(SymbolKind::DeviceHelper),
        _ => None,
    }
}

fn edge_kind(s: &str) -> Option<EdgeKind> {
    match s {
        "entry" => Some(EdgeKind::Entry),
        "call" => Some(EdgeKind::Call),
        "macro-call" => Some(EdgeKind::MacroCall),
        "launch" => Some(EdgeKind::Launch),
        "cross-library" => Some(EdgeKind::CrossLibrary),
        "opaque" => Some(EdgeKind::Opaque),
        "check-numerics" => Some(EdgeKind::CheckNumerics),
        _ => None,
    }
}

fn dash_none(s: &str) -> Option<String> {
    (s != "-").then(|| s.to_string())
}

/// `CALLER -> TARGET line N [via MACRO]`.
fn parse_site(rest: &str) -> Option<(String, String, u32, Option<String>)> {
    let w: Vec<&str> = rest.split_whitespace().collect();
    match w.as_slice() {
        [caller, "->", target, "line", n] => Some((
            caller.to_string(),
            target.to_string(),
            n.parse().ok()?,
            None,
        )),
        [caller, "->", target, "line", n, "via", m] => Some((
            caller.to_string(),
            target.to_string(),
            n.parse().ok()?,
            Some(m.to_string()),
        )),
        _ => None,
    }
}

/// Parses the text after `expect:`; `None` means the line does not follow the grammar.
fn parse_fact(text: &str) -> Option<Fact> {
    let (kind, rest) = text.trim().split_once(' ')?;
    let rest = rest.trim();
    let w: Vec<&str> = rest.split_whitespace().collect();
    Some(match kind {
        "symbol" => match w.as_slice() {
            [name, k, "line", n] => Fact::Symbol {
                name: name.to_string(),
                kind: symbol_kind(k)?,
                line: n.parse().ok()?,
            },
            _ => return None,
        },
        "kernel" => {
            let (name, bounds) = rest.split_once(" bounds ")?;
            let name = name.trim();
            if name.contains(' ') {
                return None;
            }
            Fact::Kernel {
                name: name.to_string(),
                bounds: dash_none(bounds.trim()),
            }
        }
        "launch" => {
            let (caller, kernel, line, via) = parse_site(rest)?;
            Fact::Launch {
                caller,
                kernel,
                line,
                via,
            }
        }
        "call" => {
            let (caller, callee, line, via) = parse_site(rest)?;
            Fact::Call {
                caller,
                callee,
                line,
                via,
            }
        }
        "macro-symbol" => match w.as_slice() {
            [name, "from", m] => Fact::MacroSymbol {
                name: name.to_string(),
                from: m.to_string(),
            },
            _ => return None,
        },
        "no-symbol" => match w.as_slice() {
            [name] => Fact::NoSymbol {
                name: name.to_string(),
            },
            _ => return None,
        },
        "api" => match w.as_slice() {
            [name, "family", f, "precision", p, "variants", v] => Fact::Api {
                name: name.to_string(),
                family: f.to_string(),
                precision: dash_none(p).unwrap_or_default(),
                variants: match dash_none(v) {
                    None => Vec::new(),
                    Some(v) => v.split(',').map(str::to_string).collect(),
                },
            },
            _ => return None,
        },
        "no-api" => match w.as_slice() {
            [name] => Fact::NoApi {
                name: name.to_string(),
            },
            _ => return None,
        },
        "path" => {
            let (api, chain) = rest.split_once(':')?;
            let names: Vec<String> = chain.split('>').map(|s| s.trim().to_string()).collect();
            if api.trim().contains(' ') || names.len() < 2 || names.iter().any(|n| n.is_empty()) {
                return None;
            }
            Fact::Path {
                api: api.trim().to_string(),
                names,
            }
        }
        "edge" => {
            let (api, e) = rest.split_once(':')?;
            match e.split_whitespace().collect::<Vec<_>>().as_slice() {
                [from, arrow, to] => {
                    let k = arrow.strip_prefix('-')?.strip_suffix("->")?;
                    Fact::Edge {
                        api: api.trim().to_string(),
                        from: from.to_string(),
                        kind: edge_kind(k)?,
                        to: to.to_string(),
                    }
                }
                _ => return None,
            }
        }
        "not-in-graph" => {
            let (api, name) = rest.split_once(':')?;
            let name = name.trim();
            if name.is_empty() || name.contains(' ') {
                return None;
            }
            Fact::NotInGraph {
                api: api.trim().to_string(),
                name: name.to_string(),
            }
        }
        _ => return None,
    })
}

/// Every expectation of every fixture file, plus the lines that do not parse.
fn read_expectations() -> (Vec<Expect>, Vec<String>) {
    let mut out = Vec::new();
    let mut malformed = Vec::new();
    for lib in LIBS {
        let tree = minilib().join("trees").join(lib);
        let mut files: Vec<PathBuf> = walkdir(&tree);
        files.sort();
        for path in files {
            let rel = path
                .strip_prefix(&tree)
                .expect("under the tree")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("fixture files are UTF-8");
            for (k, line) in text.lines().enumerate() {
                let Some(pos) = line.find("expect:") else {
                    continue;
                };
                let body = &line[pos + "expect:".len()..];
                match parse_fact(body) {
                    Some(fact) => out.push(Expect {
                        lib,
                        rel: rel.clone(),
                        at: k + 1,
                        fact,
                    }),
                    None => malformed.push(format!(
                        "trees/{lib}/{rel}:{}: malformed expectation: {}",
                        k + 1,
                        line.trim()
                    )),
                }
            }
        }
    }
    (out, malformed)
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable fixture folder") {
            let p = e.expect("readable entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn expectations() -> &'static (Vec<Expect>, Vec<String>) {
    static E: OnceLock<(Vec<Expect>, Vec<String>)> = OnceLock::new();
    E.get_or_init(read_expectations)
}

// ---------------------------------------------------------------------------------
// The indexes, built once for the whole test binary
// ---------------------------------------------------------------------------------

struct Built {
    index: LibraryIndex,
    stats: IndexStats,
    scope: Scope,
}

struct World {
    rocfx: Built,
    solver: Built,
}

impl World {
    fn built(&self, lib: &str) -> &Built {
        match lib {
            "rocfx" => &self.rocfx,
            "rocfxsolver" => &self.solver,
            other => panic!("not a fixture library: {other}"),
        }
    }

    fn graph(&self, lib: &str) -> CodeGraph<'_> {
        match lib {
            "rocfx" => CodeGraph::new(&self.rocfx.index, None, &self.rocfx.scope),
            _ => CodeGraph::new(
                &self.solver.index,
                Some(&self.rocfx.index),
                &self.solver.scope,
            ),
        }
    }

    fn interface(&self, lib: &str, api: &str) -> Option<InterfaceGraph> {
        let b = self.built(lib);
        let a = b.index.api.iter().find(|a| a.name == api)?;
        Some(self.graph(lib).interface(a))
    }
}

fn build(lib: &str) -> Built {
    let root = minilib();
    let project = ProjectFile::load(&root.join("rocqa.toml")).expect("fixture rocqa.toml loads");
    let cfg = project.library(lib).expect("fixture library configured");
    project.version(lib, VERSION).expect("fixture version");
    let scope =
        Scope::load(&root.join(format!("allowlists/{lib}.toml"))).expect("fixture allowlist loads");
    let tree = root.join("trees").join(lib);
    let (index, stats) =
        index_tree(lib, VERSION, &tree, cfg, &scope, None).expect("fixture tree indexes");
    Built {
        index,
        stats,
        scope,
    }
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| World {
        rocfx: build("rocfx"),
        solver: build("rocfxsolver"),
    })
}

// ---------------------------------------------------------------------------------
// Checking
// ---------------------------------------------------------------------------------

fn file<'a>(idx: &'a LibraryIndex, rel: &str) -> Option<&'a FileIndex> {
    idx.files.iter().find(|f| f.path == rel)
}

fn kind_word(k: SymbolKind) -> &'static str {
    match k {
        SymbolKind::Function => "function",
        SymbolKind::Kernel => "kernel",
        SymbolKind::DeviceHelper => "device",
    }
}

fn edge_word(k: EdgeKind) -> &'static str {
    match k {
        EdgeKind::Entry => "entry",
        EdgeKind::Call => "call",
        EdgeKind::MacroCall => "macro-call",
        EdgeKind::Launch => "launch",
        EdgeKind::CrossLibrary => "cross-library",
        EdgeKind::Opaque => "opaque",
        EdgeKind::CheckNumerics => "check-numerics",
    }
}

/// Every definition of `name` in the library, as `file:line kind`.
fn where_defined(idx: &LibraryIndex, name: &str) -> String {
    let all: Vec<String> = idx
        .files
        .iter()
        .flat_map(|f| f.symbols.iter())
        .filter(|s| s.name == name)
        .map(|s| {
            format!(
                "{}:{} {}{}",
                s.file,
                s.name_line,
                kind_word(s.kind),
                s.expanded_from
                    .as_ref()
                    .map(|m| format!(" (from {})", m.name))
                    .unwrap_or_default()
            )
        })
        .collect();
    if all.is_empty() {
        "no definition at all".into()
    } else {
        all.join(", ")
    }
}

fn edges_text(g: &InterfaceGraph) -> String {
    g.edges
        .iter()
        .map(|e| {
            format!(
                "{} -{}-> {}",
                g.nodes[e.from].name,
                edge_word(e.kind),
                g.nodes[e.to].name
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Is there a chain of edges through nodes named `names`, starting below the API node?
fn has_path(g: &InterfaceGraph, names: &[String]) -> bool {
    fn from(g: &InterfaceGraph, at: usize, rest: &[String]) -> bool {
        let Some((next, tail)) = rest.split_first() else {
            return true;
        };
        g.edges
            .iter()
            .filter(|e| e.from == at && g.nodes[e.to].name == *next)
            .any(|e| from(g, e.to, tail))
    }
    let (first, rest) = names.split_first().expect("paths have two names or more");
    g.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind != NodeKind::Api && n.name == *first)
        .any(|(i, _)| from(g, i, rest))
}

/// Checks one fact; `Err` says what was found instead.
fn check(w: &World, e: &Expect) -> Result<(), String> {
    let b = w.built(e.lib);
    let idx = &b.index;
    let in_file =
        || file(idx, &e.rel).ok_or_else(|| format!("{} is not in the {} index", e.rel, e.lib));
    let graph = |api: &str| {
        w.interface(e.lib, api)
            .ok_or_else(|| format!("{api} is not a public API function of {}", e.lib))
    };
    match &e.fact {
        Fact::Symbol { name, kind, line } => {
            let f = in_file()?;
            if f.symbols
                .iter()
                .any(|s| s.name == *name && s.kind == *kind && s.name_line == *line)
            {
                Ok(())
            } else {
                Err(format!(
                    "no {} `{name}` with its name on line {line}; found: {}",
                    kind_word(*kind),
                    where_defined(idx, name)
                ))
            }
        }
        Fact::Kernel { name, bounds } => {
            let f = in_file()?;
            let found: Vec<_> = f.symbols.iter().filter(|s| s.name == *name).collect();
            if found
                .iter()
                .any(|s| s.kind == SymbolKind::Kernel && s.launch_bounds == *bounds)
            {
                Ok(())
            } else {
                Err(format!(
                    "kernel `{name}` with bounds {bounds:?} not in this file; found: {:?}",
                    found
                        .iter()
                        .map(|s| (kind_word(s.kind), s.launch_bounds.clone()))
                        .collect::<Vec<_>>()
                ))
            }
        }
        Fact::Launch {
            caller,
            kernel,
            line,
            via,
        } => {
            let f = in_file()?;
            let by_caller: Vec<_> = f
                .launches
                .iter()
                .filter(|l| f.symbols[l.caller as usize].name == *caller)
                .collect();
            if by_caller
                .iter()
                .any(|l| l.kernel == *kernel && l.line == *line && l.via_macro == *via)
            {
                Ok(())
            } else {
                Err(format!(
                    "launch of `{kernel}` on line {line} via {via:?} not found; launches by `{caller}` here: {:?}",
                    by_caller
                        .iter()
                        .map(|l| (l.kernel.as_str(), l.line, l.via_macro.as_deref()))
                        .collect::<Vec<_>>()
                ))
            }
        }
        Fact::Call {
            caller,
            callee,
            line,
            via,
        } => {
            let f = in_file()?;
            let to_callee: Vec<_> = f
                .calls
                .iter()
                .filter(|c| f.symbols[c.caller as usize].name == *caller && c.callee == *callee)
                .collect();
            if to_callee
                .iter()
                .any(|c| c.line == *line && c.via_macro == *via)
            {
                Ok(())
            } else {
                Err(format!(
                    "call on line {line} via {via:?} not found; calls `{caller}` -> `{callee}` here: {:?}",
                    to_callee
                        .iter()
                        .map(|c| (c.line, c.via_macro.as_deref()))
                        .collect::<Vec<_>>()
                ))
            }
        }
        Fact::MacroSymbol { name, from } => {
            let f = in_file()?;
            let found: Vec<_> = f.symbols.iter().filter(|s| s.name == *name).collect();
            if found
                .iter()
                .any(|s| s.expanded_from.as_ref().is_some_and(|m| m.name == *from))
            {
                Ok(())
            } else {
                Err(format!(
                    "`{name}` not defined here by expanding {from}; found: {}",
                    where_defined(idx, name)
                ))
            }
        }
        Fact::NoSymbol { name } => {
            if idx
                .files
                .iter()
                .flat_map(|f| f.symbols.iter())
                .any(|s| s.name == *name)
            {
                Err(format!(
                    "`{name}` must not be indexed, but is: {}",
                    where_defined(idx, name)
                ))
            } else {
                Ok(())
            }
        }
        Fact::Api {
            name,
            family,
            precision,
            variants,
        } => {
            let Some(a) = idx.api.iter().find(|a| a.name == *name) else {
                return Err(format!("`{name}` is not in the API"));
            };
            if a.file == e.rel
                && a.family == *family
                && a.precision == *precision
                && a.variants == *variants
            {
                Ok(())
            } else {
                Err(format!(
                    "found {}:{} family `{}` precision `{}` variants {:?}",
                    a.file, a.line, a.family, a.precision, a.variants
                ))
            }
        }
        Fact::NoApi { name } => match idx.api.iter().find(|a| a.name == *name) {
            Some(a) => Err(format!(
                "`{name}` must not be API, but is declared at {}:{}",
                a.file, a.line
            )),
            None => Ok(()),
        },
        Fact::Path { api, names } => {
            let g = graph(api)?;
            if has_path(&g, names) {
                Ok(())
            } else {
                Err(format!("no such chain; edges: {}", edges_text(&g)))
            }
        }
        Fact::Edge {
            api,
            from,
            kind,
            to,
        } => {
            let g = graph(api)?;
            if g.edges.iter().any(|x| {
                x.kind == *kind && g.nodes[x.from].name == *from && g.nodes[x.to].name == *to
            }) {
                Ok(())
            } else {
                Err(format!("no such edge; edges: {}", edges_text(&g)))
            }
        }
        Fact::NotInGraph { api, name } => {
            let g = graph(api)?;
            // A graph that stops at the API would hold any absence trivially.
            if g.nodes.len() < 2 {
                return Err(format!(
                    "the graph of {api} has no entry point, so this checks nothing"
                ));
            }
            match g.nodes.iter().find(|n| n.name == *name) {
                Some(n) => Err(format!(
                    "`{name}` is in the graph at {}:{}; edges: {}",
                    n.file,
                    n.line,
                    edges_text(&g)
                )),
                None => Ok(()),
            }
        }
    }
}

/// Facts checked, per kind.
fn counts() -> BTreeMap<&'static str, usize> {
    let mut c = BTreeMap::new();
    for e in &expectations().0 {
        *c.entry(e.fact.kind_name()).or_insert(0) += 1;
    }
    c
}

#[test]
fn every_fixture_expectation_holds() {
    let (exps, malformed) = expectations();
    let w = world();
    let mut failures: Vec<String> = malformed.clone();
    for e in exps {
        if let Err(why) = check(w, e) {
            failures.push(format!("{}: {:?}: {why}", e.place(), e.fact));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixture expectations failed:\n{}",
        failures.len(),
        exps.len() + malformed.len(),
        failures.join("\n")
    );
}

#[test]
fn every_expect_line_follows_the_grammar() {
    let (_, malformed) = expectations();
    assert!(malformed.is_empty(), "{}", malformed.join("\n"));
}

macro_rules! kind_is_checked {
    ($($test:ident => $kind:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                let n = counts().get($kind).copied().unwrap_or(0);
                assert!(n > 0, "no `expect: {}` line in the fixture: nothing of that kind is checked", $kind);
            }
        )*
    };
}

kind_is_checked! {
    symbol_facts_are_checked => "symbol",
    kernel_facts_are_checked => "kernel",
    launch_facts_are_checked => "launch",
    call_facts_are_checked => "call",
    macro_symbol_facts_are_checked => "macro-symbol",
    no_symbol_facts_are_checked => "no-symbol",
    api_facts_are_checked => "api",
    no_api_facts_are_checked => "no-api",
    path_facts_are_checked => "path",
    edge_facts_are_checked => "edge",
    not_in_graph_facts_are_checked => "not-in-graph",
}

#[test]
fn every_edge_kind_is_pinned() {
    let kinds: BTreeSet<&str> = expectations()
        .0
        .iter()
        .filter_map(|e| match &e.fact {
            Fact::Edge { kind, .. } => Some(edge_word(*kind)),
            _ => None,
        })
        .collect();
    for k in [
        "entry",
        "call",
        "macro-call",
        "launch",
        "cross-library",
        "opaque",
        "check-numerics",
    ] {
        assert!(kinds.contains(k), "no `expect: edge` of kind {k}");
    }
}

#[test]
fn fixture_has_no_parse_errors_left() {
    let w = world();
    for lib in LIBS {
        let b = w.built(lib);
        let bad: Vec<String> = b
            .index
            .files
            .iter()
            .filter(|f| f.parse_errors > 0)
            .map(|f| format!("{} ({} ERROR nodes)", f.path, f.parse_errors))
            .collect();
        assert_eq!(
            b.stats.files_with_errors, 0,
            "{lib}: files with tree-sitter errors after preprocessing: {bad:?}"
        );
        assert!(bad.is_empty(), "{lib}: {bad:?}");
    }
}

#[test]
fn api_count_is_exact() {
    let w = world();
    for lib in LIBS {
        let lines: Vec<&str> = expectations()
            .0
            .iter()
            .filter(|e| e.lib == lib)
            .filter_map(|e| match &e.fact {
                Fact::Api { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let unlisted: Vec<&str> = API_WITHOUT_EXPECTATION
            .iter()
            .filter(|(l, _)| *l == lib)
            .map(|(_, n)| *n)
            .collect();
        let expected: BTreeSet<&str> = lines.iter().chain(&unlisted).copied().collect();
        assert_eq!(
            expected.len(),
            lines.len() + unlisted.len(),
            "{lib}: an API name is expected twice"
        );
        let b = w.built(lib);
        let found: BTreeSet<&str> = b.index.api.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            b.stats.api_functions,
            lines.len() + unlisted.len(),
            "{lib}: declared but not expected: {:?}; expected but not declared: {:?}",
            found.difference(&expected).collect::<Vec<_>>(),
            expected.difference(&found).collect::<Vec<_>>()
        );
        assert_eq!(found, expected, "{lib}");
    }
}

#[test]
fn index_stats_count_the_fixture_exactly() {
    let w = world();
    let s = &w.rocfx.stats;
    // scal, axpy, copy, check_numerics_vector, gemvn, gemvt, gemm_source;
    // deprecated/ is denied.
    assert_eq!(s.kernels, 7, "rocfx kernels");
    // scal_calc, scal_step, gemv_dot, fx_scale twice and fx_norm twice; scal_calc_wide
    // sits in an inactive #if branch.
    assert_eq!(s.device_helpers, 7, "rocfx device helpers");
    assert_eq!(s.launches, 7, "rocfx launch sites");
    // 6 + 6 (INST_SCAL_C_API, plain and ILP64) + 3 + 3 (INST_SCAL_BATCHED_C_API).
    assert_eq!(
        s.macro_expanded, 18,
        "rocfx definitions from macro expansions"
    );
    assert_eq!(s.api_64, 3, "rocfx _64 API functions");
    // Those seven and the host bookkeeping set_default_workspace_size and abort.
    assert_eq!(s.api_families, 9, "rocfx families");
    let s = &w.solver.stats;
    // getf2_small_kernel and its launch are behind `#ifdef OPTIMAL`, which only the
    // fixture's CMakeLists.txt defines.
    assert_eq!(s.kernels, 4, "rocfxsolver kernels");
    assert_eq!(s.device_helpers, 1, "rocfxsolver device helpers");
    assert_eq!(s.launches, 4, "rocfxsolver launch sites");
    assert_eq!(
        s.macro_expanded, 0,
        "rocfxsolver definitions from macro expansions"
    );
    assert_eq!(s.api_families, 4, "rocfxsolver families");
}

#[test]
fn instantiate_macros_stamp_no_definitions() {
    // INSTANTIATE_SCAL_TEMPLATE writes explicit instantiations: declarations of
    // specializations, not function definitions. The template is defined once.
    let idx = &world().rocfx.index;
    for name in [
        "rocfx_internal_scal_template",
        "rocfx_internal_gemv_launcher",
        "rocfx_internal_gemm_template",
    ] {
        let n = idx
            .files
            .iter()
            .flat_map(|f| f.symbols.iter())
            .filter(|s| s.name == name)
            .count();
        assert_eq!(n, 1, "{name}: {}", where_defined(idx, name));
    }
    let f = file(idx, "library/src/blas1/rocfx_scal_kernels.cpp").expect("indexed");
    assert_eq!(
        f.symbols
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["rocfx_internal_scal_template"]
    );
}

#[test]
fn namespace_macro_scopes_solver_definitions() {
    let idx = &world().solver.index;
    let f = file(idx, "library/src/lapack/roclapack_getrf.cpp").expect("indexed");
    let scope_of = |n: &str| {
        let s = f.symbols.iter().find(|s| s.name == n).expect(n);
        (s.scope.as_str(), s.extern_c)
    };
    assert_eq!(
        scope_of("rocfxsolver_getrf_impl"),
        ("rocfxsolver::v1", false)
    );
    assert_eq!(scope_of("rocfxsolver_sgetrf"), ("", true));
}

#[test]
fn expansions_keep_original_line_numbers() {
    // Every position stays inside its file, and a definition ends after its name.
    let w = world();
    for lib in LIBS {
        let tree = minilib().join("trees").join(lib);
        for f in &w.built(lib).index.files {
            let lines = std::fs::read_to_string(tree.join(&f.path))
                .expect("indexed file exists")
                .lines()
                .count() as u32;
            for s in &f.symbols {
                assert!(
                    s.line <= s.name_line && s.name_line <= s.end_line && s.end_line <= lines,
                    "{lib}/{}: {} spans {}..{} (name {}) of {lines} lines",
                    f.path,
                    s.name,
                    s.line,
                    s.end_line,
                    s.name_line
                );
            }
            for c in &f.calls {
                assert!(c.line >= 1 && c.line <= lines, "{lib}/{}: {c:?}", f.path);
            }
        }
    }
}

#[test]
fn graph_stats_reach_device_code_for_every_in_scope_family() {
    let w = world();
    let s = w.graph("rocfx").stats();
    assert_eq!((s.in_scope, s.reaching), (5, 5), "{s:?}");
    assert!(s.no_entry.is_empty(), "{:?}", s.no_entry);
    assert_eq!(s.cross_library, 0);
    let s = w.graph("rocfxsolver").stats();
    assert_eq!((s.in_scope, s.reaching), (2, 2), "{s:?}");
    // Declared, never defined, and out of scope by family.
    assert_eq!(
        s.no_entry,
        ["rocfxsolver_get_version_string", "rocfxsolver_log_begin"]
    );
    // Every getrf graph crosses into rocfx; laswp graphs do not.
    assert_eq!(s.cross_library, 7);
}

// ---------------------------------------------------------------------------------
// Regressions: each test is named after the bug it pins
// ---------------------------------------------------------------------------------

/// Checks facts written in the expectation grammar against the fixture, as if they
/// stood in `lib`'s file `rel`; panics with every failure.
fn check_facts(lib: &'static str, rel: &str, facts: &[&str]) {
    let w = world();
    let mut failures = Vec::new();
    for text in facts {
        let fact = parse_fact(text).unwrap_or_else(|| panic!("malformed: {text}"));
        let e = Expect {
            lib,
            rel: rel.to_string(),
            at: 0,
            fact,
        };
        if let Err(why) = check(w, &e) {
            failures.push(format!("{text}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `src64/blas1/rocfx_scal_64.cpp` is built with ROCFX_INTERNAL_ILP64, so the
/// `rocfx_scal_impl` it instantiates calls `ROCFX_API(rocfx_internal_scal_template)`
/// = `rocfx_internal_scal_template_64`. The index parses `rocfx_scal_imp.hpp` once,
/// under its own (non-ILP64) defines, so every `_64` graph runs through the 32-bit
/// template instead, and `rocfx_internal_scal_template_64` is unreachable. In rocBLAS
/// 6.4.4 this misroutes all 577 `_64` APIs (`rocblas_internal_scal_template_64`,
/// `src64/blas1/rocblas_scal_kernels_64.cpp:133`).
#[test]

fn ilp64_impl_calls_the_64_bit_template() {
    check_facts(
        "rocfx",
        "library/src/src64/blas1/rocfx_scal_64.cpp",
        &[
            "path rocfx_sscal_64: rocfx_sscal_64 > rocfx_scal_impl > rocfx_internal_scal_template_64 > rocfx_internal_scal_launcher",
            "not-in-graph rocfx_sscal_64: rocfx_internal_scal_template",
            "path rocfx_zdscal_strided_batched_64: rocfx_zdscal_strided_batched_64 > rocfx_scal_batched_impl > rocfx_internal_scal_template_64",
            "not-in-graph rocfx_zdscal_strided_batched_64: rocfx_internal_scal_template",
            // The 32-bit entry points keep the 32-bit template.
            "path rocfx_sscal: rocfx_sscal > rocfx_scal_impl > rocfx_internal_scal_template > rocfx_internal_scal_launcher",
            "not-in-graph rocfx_sscal: rocfx_internal_scal_template_64",
        ],
    );
}

/// The 64-bit scal launcher (`src64/blas1/rocfx_scal_kernels_64.cpp:15`) calls its own
/// name to hand each chunk to the 32-bit launcher, which its file cannot see
/// (`blas1/rocfx_scal_kernels.hpp:66`, as rocBLAS's `_64` rotm launcher calls the one in
/// `blas1/rocblas_rotm_kernels.cpp`). Read as a call to itself, the edge was dropped and
/// every `_64` scal graph stopped at the launcher, with no kernel.
#[test]
fn a_call_to_its_own_name_means_the_other_definition() {
    check_facts(
        "rocfx",
        "library/src/src64/blas1/rocfx_scal_kernels_64.cpp",
        &[
            "path rocfx_sscal_64: rocfx_internal_scal_template_64 > rocfx_internal_scal_launcher > rocfx_internal_scal_launcher > rocfx_scal_kernel > rocfx_scal_calc",
            "path rocfx_zdscal_strided_batched_64: rocfx_internal_scal_template_64 > rocfx_internal_scal_launcher > rocfx_internal_scal_launcher > rocfx_scal_kernel",
            // The 32-bit graphs never go through the 64-bit launcher.
            "path rocfx_sscal: rocfx_internal_scal_template > rocfx_internal_scal_launcher > rocfx_scal_kernel",
            "not-in-graph rocfx_sscal: rocfx_internal_scal_template_64",
        ],
    );
}

/// Numerics checking (`[checks] numerics` in allowlists/rocfx.toml) is kept as a typed
/// edge: `rocfx_axpy_launcher` launches `rocfx_check_numerics_vector_kernel`
/// (`blas1/rocfx_axpy.cpp:38`) on a `check-numerics` edge, which coverage does not count
/// and slices leave out.
#[test]
fn numerics_checks_are_typed_edges_left_out_of_slices() {
    check_facts(
        "rocfx",
        "library/src/blas1/rocfx_axpy.cpp",
        &[
            "edge rocfx_saxpy: rocfx_axpy_launcher -check-numerics-> rocfx_check_numerics_vector_kernel",
            "path rocfx_saxpy: rocfx_saxpy > rocfx_axpy_impl > rocfx_axpy_launcher > rocfx_axpy_kernel",
        ],
    );
    let g = world()
        .interface("rocfx", "rocfx_saxpy")
        .expect("API found");
    let k = g
        .nodes
        .iter()
        .position(|n| n.name == "rocfx_check_numerics_vector_kernel")
        .expect("check kernel shown");
    let computing = g.reachable_without(EdgeKind::CheckNumerics);
    assert!(!computing[k]);
    assert!(
        computing[g
            .nodes
            .iter()
            .position(|n| n.name == "rocfx_axpy_kernel")
            .unwrap()]
    );
}

/// `RETURN_IF_ROCFX_ERROR(rocfx_gemm_arg_check(A, B, C));` (`blas3/rocfx_gemm.cpp`)
/// writes the call out in the source; the macro only wraps it. `EdgeKind::MacroCall`
/// is documented as "a call that only exists after macro expansion", yet the edge is
/// classified MacroCall because the call site lies inside an expansion. rocBLAS
/// 6.4.4 wraps ~100 calls this way (`RETURN_IF_ROCBLAS_ERROR(rocblas_internal_...)`).
#[test]

fn calls_written_as_macro_arguments_are_plain_calls() {
    check_facts(
        "rocfx",
        "library/src/blas3/rocfx_gemm.cpp",
        &["edge rocfx_sgemm: rocfx_gemm_impl -call-> rocfx_gemm_arg_check"],
    );
}

/// A declaration inside `#if 0` is as dead as a commented-out one, but API discovery
/// reads public headers without their conditionals.
#[test]

fn declarations_under_if_0_are_not_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("tree");
    let header = tree.join("library/include/internal/rocfx-functions.h");
    std::fs::create_dir_all(header.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &header,
        "#pragma once\n\
         ROCFX_EXPORT rocfx_status rocfx_sscal(rocfx_handle handle, rocfx_int n);\n\
         #if 0\n\
         ROCFX_EXPORT rocfx_status rocfx_sdead(rocfx_handle handle, rocfx_int n);\n\
         #endif\n",
    )
    .expect("write header");
    let root = minilib();
    let project = ProjectFile::load(&root.join("rocqa.toml")).expect("fixture rocqa.toml");
    let scope = Scope::load(&root.join("allowlists/rocfx.toml")).expect("fixture allowlist");
    let (idx, _) = index_tree(
        "rocfx",
        VERSION,
        &tree,
        project.library("rocfx").expect("rocfx"),
        &scope,
        None,
    )
    .expect("indexes");
    let names: Vec<&str> = idx.api.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["rocfx_sscal"]);
}

#[test]
fn build_defines_come_from_the_cmake_files() {
    // The bug class: a define the build sets (option OPTIMAL, default ON) read as
    // undefined hides every launch behind `#ifdef OPTIMAL`.
    let root = minilib();
    let project = ProjectFile::load(&root.join("rocqa.toml")).expect("fixture rocqa.toml loads");
    let cfg = project.library("rocfxsolver").expect("configured");
    let tree = root.join("trees/rocfxsolver");
    let defs = rocqa::index::build_defines("rocfxsolver", &tree, cfg, None);
    let optimal = defs
        .iter()
        .find(|d| d.name == "OPTIMAL")
        .expect("OPTIMAL derived from CMakeLists.txt");
    assert_eq!(optimal.value, "1");
    assert_eq!(
        optimal.origin,
        "library/CMakeLists.txt:8 target_compile_definitions"
    );
    // `if(NOT BUILD_SHARED_LIBS)` is false: the option defaults to ON.
    assert!(!defs.iter().any(|d| d.name == "ROCFXSOLVER_STATIC_LIB"));
    let export = defs
        .iter()
        .find(|d| d.name == "ROCFXSOLVER_EXPORT")
        .unwrap();
    assert_eq!(export.origin, "rocqa.toml [library.rocfxsolver.defines]");
    // rocqa.toml overrides what the build sets.
    let mut conf = cfg.clone();
    conf.defines.insert("OPTIMAL".into(), "2".into());
    let defs = rocqa::index::build_defines("rocfxsolver", &tree, &conf, None);
    let optimal = defs.iter().find(|d| d.name == "OPTIMAL").unwrap();
    assert_eq!(
        (optimal.value.as_str(), optimal.origin.as_str()),
        ("2", "rocqa.toml [library.rocfxsolver.defines]")
    );
}

#[test]
fn overloads_are_told_apart_by_the_api_variant() {
    // The bug class: every overload of a wrapper followed (or, past max_fanout, none).
    // rocfxCall_scal has a strided overload (`T* x`, rocfx.hpp:29) and a batched one
    // (`T* const* x`, rocfx.hpp:43); the API's variant fixes which one is instantiated.
    let w = world();
    for (api, line) in [
        ("rocfxsolver_sgetrf", 29),
        ("rocfxsolver_sgetrf_batched", 43),
    ] {
        let g = w.interface("rocfxsolver", api).expect("API found");
        let lines: Vec<u32> = g
            .nodes
            .iter()
            .filter(|n| n.name == "rocfxCall_scal")
            .map(|n| n.line)
            .collect();
        assert_eq!(lines, [line], "{api}");
    }
}

#[test]
fn the_picture_folds_device_helpers_and_merges_names() {
    let g = world()
        .interface("rocfx", "rocfx_sgemv")
        .expect("API found");
    let p = rocqa::graph::render::picture(&g);
    let names: Vec<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    // gemv_dot is a device helper of the gemv kernels: folded, counted on them.
    assert!(!names.contains(&"gemv_dot"), "{names:?}");
    assert!(
        p.nodes.iter().any(|n| n.kernel && n.helpers > 0),
        "{names:?}"
    );
    assert!(p.edges.iter().all(|e| e.from != e.to));
}

/// A qualified call means the scope it names (`blas1/rocfx_axpy_device.hpp`):
/// `rocfx_axpy_math::fx_scale` is the one on line 20, not rocfx_axpy_other's on line
/// 29, and `::fx_norm` is the global one on line 36, not rocfx_axpy_pair's member on
/// line 44. Read by name alone, both calls fit both definitions (same file, same
/// arity) and the kernel's graph held all four.
#[test]
fn qualified_calls_reach_only_the_scope_they_name() {
    let g = world()
        .interface("rocfx", "rocfx_saxpy")
        .expect("rocfx_saxpy is an API");
    let kernel = g
        .nodes
        .iter()
        .position(|n| n.name == "rocfx_axpy_kernel")
        .unwrap_or_else(|| panic!("no kernel in the graph: {}", edges_text(&g)));
    let callees = |name: &str| -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> = g
            .edges
            .iter()
            .filter(|e| e.from == kernel && g.nodes[e.to].name == name)
            .map(|e| (g.nodes[e.to].file.clone(), g.nodes[e.to].line))
            .collect();
        v.sort();
        v
    };
    let device = "library/src/blas1/rocfx_axpy_device.hpp".to_string();
    assert_eq!(
        callees("fx_scale"),
        [(device.clone(), 20)],
        "{}",
        edges_text(&g)
    );
    assert_eq!(callees("fx_norm"), [(device, 36)], "{}", edges_text(&g));
    // Neither wrong definition is reached another way.
    let lines: Vec<u32> = g
        .nodes
        .iter()
        .filter(|n| n.name == "fx_scale" || n.name == "fx_norm")
        .map(|n| n.line)
        .collect();
    assert!(
        !lines.contains(&29) && !lines.contains(&44),
        "{}",
        edges_text(&g)
    );
}
