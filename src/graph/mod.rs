//! The `graph` stage: interface call graphs from public APIs down to kernels, in scope.
//!
//! Takes one or two [`LibraryIndex`]es (a library, and the one its calls leave into,
//! such as rocSOLVER into rocBLAS) and the library's [`Scope`]; gives, per API
//! function, an [`InterfaceGraph`] of plain records. Calls are resolved by name; when
//! a name has several definitions, those whose file the caller's file includes
//! (directly or not) win, since that is what the compiler would see, and then those
//! whose parameter count fits the call's arguments. Names with more candidates than
//! `graph.max_fanout` left, from several files, are too generic to follow: they are cut
//! and listed ([`CodeGraph::cut_sites`], `rocqa graph --stats`).

pub mod compare;
pub mod render;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

use crate::config::Scope;
use crate::model::{
    ApiFunction, EdgeKind, GraphEdge, GraphNode, InterfaceGraph, LibraryIndex, NodeKind, Symbol,
    SymbolKind,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SymRef {
    lib: usize,
    file: u32,
    sym: u32,
}

struct LibView<'a> {
    index: &'a LibraryIndex,
    by_name: HashMap<&'a str, Vec<SymRef>>,
    /// Per file: indices into calls/launches, grouped by caller symbol.
    calls_by_sym: Vec<HashMap<u32, Vec<usize>>>,
    launches_by_sym: Vec<HashMap<u32, Vec<usize>>>,
    file_id: HashMap<&'a str, u32>,
    /// Per file entry: the entry of its path's first (global-context) reading.
    canon: Vec<u32>,
    closure: RefCell<HashMap<u32, HashSet<u32>>>,
}

impl<'a> LibView<'a> {
    fn new(lib: usize, index: &'a LibraryIndex) -> Self {
        let mut by_name: HashMap<&str, Vec<SymRef>> = HashMap::new();
        let mut calls_by_sym = Vec::with_capacity(index.files.len());
        let mut launches_by_sym = Vec::with_capacity(index.files.len());
        let mut file_id = HashMap::new();
        let mut canon = Vec::with_capacity(index.files.len());
        for (fi, f) in index.files.iter().enumerate() {
            // Variants of a header (other build contexts) share the first entry's id.
            canon.push(*file_id.entry(f.path.as_str()).or_insert(fi as u32));
            for (si, s) in f.symbols.iter().enumerate() {
                by_name.entry(s.name.as_str()).or_default().push(SymRef {
                    lib,
                    file: fi as u32,
                    sym: si as u32,
                });
            }
            let mut c: HashMap<u32, Vec<usize>> = HashMap::new();
            for (k, call) in f.calls.iter().enumerate() {
                c.entry(call.caller).or_default().push(k);
            }
            calls_by_sym.push(c);
            let mut l: HashMap<u32, Vec<usize>> = HashMap::new();
            for (k, la) in f.launches.iter().enumerate() {
                l.entry(la.caller).or_default().push(k);
            }
            launches_by_sym.push(l);
        }
        LibView {
            index,
            by_name,
            calls_by_sym,
            launches_by_sym,
            file_id,
            canon,
            closure: RefCell::new(HashMap::new()),
        }
    }

    fn sym(&self, r: SymRef) -> &'a Symbol {
        &self.index.files[r.file as usize].symbols[r.sym as usize]
    }

    /// Does `from` include `to`, transitively (or is it `to`)?
    fn reaches(&self, from: u32, to: u32) -> bool {
        let (from, to) = (self.canon[from as usize], self.canon[to as usize]);
        if from == to {
            return true;
        }
        if let Some(set) = self.closure.borrow().get(&from) {
            return set.contains(&to);
        }
        let mut seen = HashSet::from([from]);
        let mut q = VecDeque::from([from]);
        while let Some(f) = q.pop_front() {
            for inc in &self.index.files[f as usize].includes {
                if let Some(&i) = self.file_id.get(inc.as_str()) {
                    if seen.insert(i) {
                        q.push_back(i);
                    }
                }
            }
        }
        let hit = seen.contains(&to);
        self.closure.borrow_mut().insert(from, seen);
        hit
    }
}

/// Call graphs over a library and, optionally, the library its calls leave into.
pub struct CodeGraph<'a> {
    libs: Vec<LibView<'a>>,
    scope: &'a Scope,
    /// Call sites left unresolved because too many definitions fit, as met so far.
    cuts: RefCell<BTreeMap<(String, String, u32, String), usize>>,
}

/// A call site the graph does not follow: more definitions fit it than
/// `graph.max_fanout` after every narrowing rule.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CutSite {
    /// The calling definition.
    pub caller: String,
    /// File of the call.
    pub file: String,
    /// Line of the call.
    pub line: u32,
    /// Name called.
    pub callee: String,
    /// Definitions that fit.
    pub candidates: usize,
}

impl<'a> CodeGraph<'a> {
    /// Prepares name lookups over `main` (and `pair`, for cross-library edges).
    pub fn new(main: &'a LibraryIndex, pair: Option<&'a LibraryIndex>, scope: &'a Scope) -> Self {
        let mut libs = vec![LibView::new(0, main)];
        if let Some(p) = pair {
            libs.push(LibView::new(1, p));
        }
        CodeGraph {
            libs,
            scope,
            cuts: RefCell::new(BTreeMap::new()),
        }
    }

    /// The call sites cut so far (by [`CodeGraph::interface`] or [`CodeGraph::stats`]).
    pub fn cut_sites(&self) -> Vec<CutSite> {
        self.cuts
            .borrow()
            .iter()
            .map(|((caller, file, line, callee), n)| CutSite {
                caller: caller.clone(),
                file: file.clone(),
                line: *line,
                callee: callee.clone(),
                candidates: *n,
            })
            .collect()
    }

    /// The API functions of the main library.
    pub fn api(&self) -> &'a [ApiFunction] {
        &self.libs[0].index.api
    }

    fn candidates(&self, lib: usize, name: &str, want_kernel: bool) -> Vec<SymRef> {
        self.libs[lib]
            .by_name
            .get(name)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|r| !want_kernel || self.libs[lib].sym(*r).kind == SymbolKind::Kernel)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The definitions among `c` that the compiler resolved the site to (by USR, as
    /// the precise index records them); all of `c` when the site carries none or none
    /// of them is defined here (a declaration of the paired library, say).
    fn resolved(&self, c: Vec<SymRef>, usrs: &[String]) -> Vec<SymRef> {
        if usrs.is_empty() {
            return c;
        }
        let hit: Vec<SymRef> = c
            .iter()
            .copied()
            .filter(|r| {
                let u = &self.libs[r.lib].sym(*r).usr;
                !u.is_empty() && usrs.contains(u)
            })
            .collect();
        if hit.is_empty() {
            c
        } else {
            hit
        }
    }

    /// The candidates a qualified call can mean: `::f` only definitions at namespace
    /// scope of the global namespace (none when the index has none: `::sqrt` inside
    /// `rocblas_complex_num` is the C library's, not the class's own `sqrt`); `q::f`
    /// those whose scope ends with `q`, or all of them when none does (a namespace
    /// alias, a `using`). Anonymous namespaces are transparent.
    fn qualified(&self, c: Vec<SymRef>, qualifier: Option<&str>) -> Vec<SymRef> {
        let Some(q) = qualifier else {
            return c;
        };
        let visible = |r: &SymRef| {
            let scope = &self.libs[r.lib].sym(*r).scope;
            let named: Vec<&str> = scope
                .split("::")
                .filter(|p| !p.is_empty() && *p != "(anonymous)")
                .collect();
            let named = named.join("::");
            if q.is_empty() {
                named.is_empty()
            } else {
                named == q || named.ends_with(&format!("::{q}"))
            }
        };
        let fit: Vec<SymRef> = c.iter().copied().filter(visible).collect();
        if fit.is_empty() && !q.is_empty() {
            c
        } else {
            fit
        }
    }

    /// Picks the definitions a call from `caller` most plausibly means: those the
    /// caller's file can see, in its build context, accepting as many arguments as the
    /// call passes, with pointer arrays exactly when the API is a batched one. An overload set of one file is followed whole; anything wider than
    /// `graph.max_fanout` is cut and remembered ([`CodeGraph::cut_sites`]).
    fn narrow(
        &self,
        caller: SymRef,
        mut c: Vec<SymRef>,
        args: Option<u16>,
        batched: bool,
        site: (&str, u32),
    ) -> Vec<SymRef> {
        if let (Some(n), true) = (args, c.len() > 1) {
            let fit: Vec<SymRef> = c
                .iter()
                .copied()
                .filter(|r| {
                    self.libs[r.lib]
                        .sym(*r)
                        .arity
                        .is_none_or(|(lo, hi)| lo <= n && n <= hi)
                })
                .collect();
            if !fit.is_empty() {
                c = fit;
            }
        }
        if c.len() > 1 {
            // The API's variant fixes the instantiated pointer types: a batched API
            // passes arrays of pointers, the others plain (or strided) pointers.
            let fit: Vec<SymRef> = c
                .iter()
                .copied()
                .filter(|r| (self.libs[r.lib].sym(*r).pointer_arrays > 0) == batched)
                .collect();
            if !fit.is_empty() {
                c = fit;
            }
        }
        if c.len() > 1 && c.contains(&caller) {
            // A definition calling its own name while other definitions of it exist: a
            // `_64` launcher handing each chunk to the 32-bit instantiation
            // (`rocblas_internal_rotm_launcher<rocblas_int, ...>`), which a source file
            // the caller never includes defines. The edge to itself would be dropped.
            c.retain(|r| *r != caller);
            tracing::debug!(site = %format!("{}:{}", site.0, site.1), others = c.len(), "Self-call taken as another definition of the name.");
        }
        if c.len() > 1 && caller.lib == c[0].lib {
            let v = &self.libs[caller.lib];
            let seen: Vec<SymRef> = c
                .iter()
                .copied()
                .filter(|r| v.reaches(caller.file, r.file))
                .collect();
            if !seen.is_empty() {
                c = seen;
            }
        }
        if c.len() > 1 {
            // A header read under several build contexts: the caller's own context wins,
            // then the global one.
            let ctx = self.context(caller);
            for want in [ctx, ""] {
                let same: Vec<SymRef> = c
                    .iter()
                    .copied()
                    .filter(|r| self.context(*r) == want)
                    .collect();
                if !same.is_empty() {
                    c = same;
                    break;
                }
            }
        }
        if c.len() <= self.scope.limits.max_fanout {
            return c;
        }
        let v = &self.libs[c[0].lib];
        let one_file = c
            .iter()
            .all(|r| v.canon[r.file as usize] == v.canon[c[0].file as usize]);
        if one_file {
            return c;
        }
        let callee = v.sym(c[0]).name.clone();
        let caller_name = self.libs[caller.lib].sym(caller).name.clone();
        self.cuts
            .borrow_mut()
            .insert((caller_name, site.0.to_string(), site.1, callee), c.len());
        Vec::new()
    }

    /// A function calling both `X` and `X_64` chooses between them by its integer type
    /// (`if constexpr (std::is_same<I, int64_t>)`, as rocSOLVER calls rocBLAS): the `_64`
    /// API follows `X_64`, the others `X`.
    fn keep_integer_width(&self, out: &mut [Step], ilp64: bool) {
        let name = |t: &SymRef| self.libs[t.lib].sym(*t).name.as_str();
        let names: HashSet<&str> = out
            .iter()
            .flat_map(|s| s.targets.iter().map(name))
            .collect();
        for step in out.iter_mut() {
            step.targets.retain(|t| {
                let n = name(t);
                if ilp64 {
                    !names.contains(format!("{n}_64").as_str())
                } else {
                    n.strip_suffix("_64")
                        .is_none_or(|base| !names.contains(base))
                }
            });
        }
    }

    fn context(&self, r: SymRef) -> &'a str {
        self.libs[r.lib].index.files[r.file as usize]
            .context
            .as_str()
    }

    /// Builds the interface graph of one API function.
    pub fn interface(&self, api: &ApiFunction) -> InterfaceGraph {
        let main = &self.libs[0];
        let mut g: DiGraph<GraphNode, GraphEdge> = DiGraph::new();
        let mut node_of: HashMap<SymRef, NodeIndex> = HashMap::new();
        let mut opaque_of: HashMap<String, NodeIndex> = HashMap::new();
        let root = g.add_node(GraphNode {
            id: format!("{}:{}:{}:{}", main.index.lib, api.file, api.line, api.name),
            name: api.name.clone(),
            kind: NodeKind::Api,
            lib: main.index.lib.clone(),
            file: api.file.clone(),
            line: api.line,
            start_line: api.line,
            end_line: api.line,
            depth: 0,
            note: None,
        });
        let mut queue: VecDeque<(SymRef, NodeIndex, u32)> = VecDeque::new();
        let entries = self.entries(&api.name);
        for e in entries {
            let n = self.add_sym(&mut g, &mut node_of, e, 1);
            let s = main.sym(e);
            let via = s.expanded_from.as_ref().map(|m| m.name.clone());
            g.add_edge(root, n, edge(EdgeKind::Entry, &s.file, s.name_line, via));
            queue.push_back((e, n, 1));
        }
        let max_depth = self.scope.limits.max_depth;
        let batched = api.variants.iter().any(|v| v == "batched");
        let ilp64 = api.variants.iter().any(|v| v == "64");
        while let Some((r, n, depth)) = queue.pop_front() {
            if depth >= max_depth {
                continue;
            }
            let v = &self.libs[r.lib];
            let file = &v.index.files[r.file as usize];
            let mut out: Vec<Step> = Vec::new();
            for &k in v.launches_by_sym[r.file as usize]
                .get(&r.sym)
                .into_iter()
                .flatten()
            {
                let l = &file.launches[k];
                if !self.scope.symbol_in(&l.kernel) {
                    continue;
                }
                let kind = if self.scope.check_numerics(&l.kernel) {
                    EdgeKind::CheckNumerics
                } else {
                    EdgeKind::Launch
                };
                let targets = self.narrow(
                    r,
                    self.resolved(self.candidates(r.lib, &l.kernel, true), &l.resolved),
                    None,
                    batched,
                    (&file.path, l.line),
                );
                out.push(Step {
                    kind,
                    targets,
                    line: l.line,
                    via: l.via_macro.clone(),
                    opaque: None,
                });
            }
            for &k in v.calls_by_sym[r.file as usize]
                .get(&r.sym)
                .into_iter()
                .flatten()
            {
                let call = &file.calls[k];
                let name = call.callee.as_str();
                // A call is opaque by its own name, or by the macro it was written as
                // (rocSOLVER calls rocSPARSE through macros naming loaded symbols).
                let opaque = self.scope.opaque(name).map(|why| (name, why)).or_else(|| {
                    let m = call.via_macro.as_deref()?;
                    self.scope.opaque(m).map(|why| (m, why))
                });
                if let Some((shown, why)) = opaque {
                    out.push(Step {
                        kind: EdgeKind::Opaque,
                        targets: Vec::new(),
                        line: call.line,
                        via: call.via_macro.clone(),
                        opaque: Some((shown.to_string(), why.to_string())),
                    });
                    continue;
                }
                // A call to its own name may be another overload; self-edges are dropped below.
                if !self.scope.symbol_in(name) {
                    continue;
                }
                let own = self.candidates(r.lib, name, false);
                let (kind, c) = if self.scope.check_numerics(name) {
                    (EdgeKind::CheckNumerics, own)
                } else if own.is_empty() && r.lib == 0 && self.libs.len() > 1 {
                    (EdgeKind::CrossLibrary, self.candidates(1, name, false))
                } else if !call.written {
                    (EdgeKind::MacroCall, own)
                } else {
                    (EdgeKind::Call, own)
                };
                let c = self.resolved(c, &call.resolved);
                let c = self.qualified(c, call.qualifier.as_deref());
                let targets = self.narrow(r, c, call.args, batched, (&file.path, call.line));
                out.push(Step {
                    kind,
                    targets,
                    line: call.line,
                    via: call.via_macro.clone(),
                    opaque: None,
                });
            }
            self.keep_integer_width(&mut out, ilp64);
            for step in out {
                if let Some((name, why)) = step.opaque {
                    let t = *opaque_of.entry(name.clone()).or_insert_with(|| {
                        g.add_node(GraphNode {
                            id: format!("opaque:{name}"),
                            name: name.clone(),
                            kind: NodeKind::Opaque,
                            lib: v.index.lib.clone(),
                            file: String::new(),
                            line: 0,
                            start_line: 0,
                            end_line: 0,
                            depth: depth + 1,
                            note: Some(why),
                        })
                    });
                    match g.find_edge(n, t) {
                        Some(e) => g[e].sites += 1,
                        None => {
                            g.add_edge(n, t, edge(step.kind, &file.path, step.line, step.via));
                        }
                    }
                    continue;
                }
                for t in step.targets {
                    let fresh = !node_of.contains_key(&t);
                    let tn = self.add_sym(&mut g, &mut node_of, t, depth + 1);
                    if tn == n {
                        continue;
                    }
                    match g.find_edge(n, tn) {
                        Some(e) => g[e].sites += 1,
                        None => {
                            g.add_edge(
                                n,
                                tn,
                                edge(step.kind, &file.path, step.line, step.via.clone()),
                            );
                        }
                    }
                    if fresh {
                        queue.push_back((t, tn, depth + 1));
                    }
                }
            }
        }
        let nodes: Vec<GraphNode> = g.node_indices().map(|i| g[i].clone()).collect();
        let edges = g
            .edge_indices()
            .filter_map(|e| {
                let (a, b) = g.edge_endpoints(e)?;
                let mut ed = g[e].clone();
                ed.from = a.index();
                ed.to = b.index();
                Some(ed)
            })
            .collect();
        InterfaceGraph {
            api: api.clone(),
            lib: main.index.lib.clone(),
            version: main.index.version.clone(),
            nodes,
            edges,
        }
    }

    /// Definitions that implement an API name: `extern "C"` ones first.
    fn entries(&self, name: &str) -> Vec<SymRef> {
        let all = self.candidates(0, name, false);
        let c: Vec<SymRef> = all
            .iter()
            .copied()
            .filter(|r| self.libs[0].sym(*r).extern_c)
            .collect();
        if c.is_empty() {
            all
        } else {
            c
        }
    }

    fn add_sym(
        &self,
        g: &mut DiGraph<GraphNode, GraphEdge>,
        node_of: &mut HashMap<SymRef, NodeIndex>,
        r: SymRef,
        depth: u32,
    ) -> NodeIndex {
        if let Some(n) = node_of.get(&r) {
            return *n;
        }
        let v = &self.libs[r.lib];
        let s = v.sym(r);
        let kind = match s.kind {
            SymbolKind::Kernel => NodeKind::Kernel,
            SymbolKind::DeviceHelper => NodeKind::DeviceHelper,
            SymbolKind::Function => NodeKind::Function,
        };
        let ctx = self.context(r);
        let n = g.add_node(GraphNode {
            id: if ctx.is_empty() {
                format!("{}:{}:{}:{}", v.index.lib, s.file, s.name_line, s.name)
            } else {
                format!(
                    "{}:{}:{}:{}@{ctx}",
                    v.index.lib, s.file, s.name_line, s.name
                )
            },
            name: s.name.clone(),
            kind,
            lib: v.index.lib.clone(),
            file: s.file.clone(),
            line: s.name_line,
            start_line: s.line,
            end_line: s.end_line,
            depth,
            note: (!ctx.is_empty()).then(|| format!("as compiled with {ctx}")),
        });
        node_of.insert(r, n);
        n
    }
}

/// The edges one definition contributes: targets of one call or launch site.
struct Step {
    kind: EdgeKind,
    targets: Vec<SymRef>,
    line: u32,
    via: Option<String>,
    /// Name and reason, for calls into an opaque leaf.
    opaque: Option<(String, String)>,
}

fn edge(kind: EdgeKind, file: &str, line: u32, via_macro: Option<String>) -> GraphEdge {
    GraphEdge {
        from: 0,
        to: 0,
        kind,
        file: file.to_string(),
        line,
        via_macro,
        sites: 1,
    }
}

/// How well the in-scope API families reach device code.
#[derive(Debug, Clone, Serialize)]
pub struct GraphStats {
    /// Library.
    pub lib: String,
    /// Version.
    pub version: String,
    /// API functions declared.
    pub api_functions: usize,
    /// Families declared.
    pub families: usize,
    /// Families in scope.
    pub in_scope: usize,
    /// In-scope families with a member reaching a kernel or an opaque leaf.
    pub reaching: usize,
    /// `reaching / in_scope`, in percent.
    pub percent: f64,
    /// API functions with no definition found.
    pub no_entry: Vec<String>,
    /// In-scope families that reach nothing, with the reason.
    pub not_reaching: BTreeMap<String, String>,
    /// Nodes per graph: mean.
    pub mean_nodes: f64,
    /// Graphs containing a cross-library edge.
    pub cross_library: usize,
    /// Call sites not followed: more definitions fit than `graph.max_fanout`.
    pub cut_sites: Vec<CutSite>,
}

impl CodeGraph<'_> {
    /// Builds every API's graph and reports coverage per family.
    pub fn stats(&self) -> GraphStats {
        let main = self.libs[0].index;
        let mut fam_ok: BTreeMap<&str, bool> = BTreeMap::new();
        let mut fam_entry: BTreeMap<&str, bool> = BTreeMap::new();
        let mut no_entry = Vec::new();
        let mut nodes = 0usize;
        let mut cross = 0;
        for a in &main.api {
            let g = self.interface(a);
            nodes += g.nodes.len();
            let has_entry = g.nodes.len() > 1;
            if !has_entry {
                no_entry.push(a.name.clone());
            }
            if g.edges.iter().any(|e| e.kind == EdgeKind::CrossLibrary) {
                cross += 1;
            }
            // A kernel reached only through numerics checking does not count.
            let computing = g.reachable_without(EdgeKind::CheckNumerics);
            let ok = g
                .nodes
                .iter()
                .zip(&computing)
                .any(|(n, c)| *c && matches!(n.kind, NodeKind::Kernel | NodeKind::Opaque));
            *fam_ok.entry(a.family.as_str()).or_default() |= ok;
            *fam_entry.entry(a.family.as_str()).or_default() |= has_entry;
        }
        let in_scope: Vec<&str> = fam_ok
            .keys()
            .copied()
            .filter(|f| self.scope.family_in(f))
            .collect();
        let reaching = in_scope.iter().filter(|f| fam_ok[*f]).count();
        let not_reaching = in_scope
            .iter()
            .filter(|f| !fam_ok[*f])
            .map(|f| {
                let why = if fam_entry[f] {
                    "entry point found, but no kernel or opaque leaf within the depth and scope limits"
                } else {
                    "no definition of any member found in the indexed files"
                };
                (f.to_string(), why.to_string())
            })
            .collect();
        GraphStats {
            lib: main.lib.clone(),
            version: main.version.clone(),
            api_functions: main.api.len(),
            families: fam_ok.len(),
            in_scope: in_scope.len(),
            reaching,
            percent: if in_scope.is_empty() {
                0.0
            } else {
                100.0 * reaching as f64 / in_scope.len() as f64
            },
            no_entry,
            not_reaching,
            mean_nodes: if main.api.is_empty() {
                0.0
            } else {
                nodes as f64 / main.api.len() as f64
            },
            cross_library: cross,
            cut_sites: self.cut_sites(),
        }
    }
}
