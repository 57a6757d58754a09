//! What one API runs, as the compiler instantiated it.
//!
//! Starting from the API's own definition, each call is followed to the instantiation
//! it resolved to ([`crate::index::precise::instantiate`]): the compiler has chosen the
//! overload and dropped the `if constexpr` branches that do not hold for these template
//! arguments, so a launch or call missing from that instantiation is not the API's,
//! whatever its text looks like. Only host functions on the way to a launch or a call
//! into the paired library are followed (the rest decides no launch or call fact). A
//! function whose unit does not compile, or whose instantiation is not found, is not
//! covered: the text evaluator decides there.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::eval::Value;
use crate::index::precise::instantiate::{Instantiation, InstantiationReader};
use crate::model::{EdgeKind, InterfaceGraph, NodeKind};

/// The compiler's reading of one API's graph.
#[derive(Debug, Default)]
pub struct CompilerView {
    /// Per covered node: the instantiations this API reaches (with their unit).
    covered: BTreeMap<usize, Vec<Instantiation>>,
    /// Call and cross-library edges `(from, to)` some reached instantiation makes.
    live_calls: BTreeSet<(usize, usize)>,
    /// Launch edges `(from, kernel)` whose launches resolved to another overload of
    /// the kernel's name (`copy_mat` at lib_device_helpers.hpp:643, not :732).
    other_overload: BTreeSet<(usize, usize)>,
    /// Nodes followed but not covered, and why.
    pub uncovered: BTreeMap<usize, String>,
}

/// Decided by the compiler or by the text evaluator.
pub const COMPILER: &str = "compiler";
/// Decided by the text evaluator (the fallback).
pub const TEXT: &str = "text";

impl CompilerView {
    /// Whether the compiler's reading covers node `i`.
    pub fn covers(&self, i: usize) -> bool {
        self.covered.contains_key(&i)
    }

    /// For a launch of `kernel` by node `i` on lines `first..=last`: `Some(true)` when a
    /// reached instantiation of `i` makes it, `Some(false)` when none does, `None` when
    /// `i` is not covered.
    pub fn launches(
        &self,
        i: usize,
        to: usize,
        kernel: &str,
        file: &str,
        first: u32,
        last: u32,
    ) -> Option<bool> {
        let insts = self.covered.get(&i)?;
        if self.other_overload.contains(&(i, to)) {
            return Some(false);
        }
        Some(insts.iter().flat_map(|f| &f.launches).any(|l| {
            l.callee == kernel
                && l.file == file
                && ((first <= l.line && l.line <= last)
                    || (first <= l.spelled_line && l.spelled_line <= last))
        }))
    }

    /// Whether the launches of `to`'s name by node `i` resolved to another overload.
    pub fn other_overload(&self, i: usize, to: usize) -> bool {
        self.other_overload.contains(&(i, to))
    }

    /// For an edge `from -> to`: `Some(true)` when a reached instantiation of `from`
    /// calls `to`, `Some(false)` when none does, `None` when `from` is not covered.
    pub fn calls(&self, from: usize, to: usize) -> Option<bool> {
        self.covers(from)
            .then(|| self.live_calls.contains(&(from, to)))
    }

    /// The template arguments of node `i` as the compiler deduced them, where every
    /// instantiation this API reaches agrees: what a plain `if` on a `static constexpr`
    /// type test (`using_rocblas_half`) is read with.
    pub fn template_values(&self, i: usize) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        let Some(insts) = self.covered.get(&i) else {
            return out;
        };
        let Some(first) = insts.first() else {
            return out;
        };
        for (k, p) in first.template_params.iter().enumerate() {
            let Some(arg) = first.template_args.get(k) else {
                continue;
            };
            let agreed = insts.iter().all(|f| {
                f.template_params.get(k) == Some(p) && f.template_args.get(k) == Some(arg)
            });
            if p.is_empty() || !agreed {
                continue;
            }
            let v = match arg.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                a => a
                    .parse::<i64>()
                    .map(Value::Int)
                    .unwrap_or_else(|_| Value::Type(a.to_string())),
            };
            out.insert(p.clone(), v);
        }
        out
    }

    /// The instantiations of node `i` this API reaches, shown as `name<args>`.
    pub fn shown(&self, i: usize) -> String {
        let Some(insts) = self.covered.get(&i) else {
            return String::new();
        };
        insts
            .iter()
            .map(|f| {
                if f.template_args.is_empty() {
                    f.name.clone()
                } else {
                    format!("{}<{}>", f.name, f.template_args.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

/// Host functions of the graph from which a launch or a cross-library call can be
/// reached through host functions.
fn leading_somewhere(g: &InterfaceGraph) -> Vec<bool> {
    let mut lead = vec![false; g.nodes.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for e in &g.edges {
            if lead[e.from] || g.nodes[e.from].kind != NodeKind::Function {
                continue;
            }
            let hit = match e.kind {
                EdgeKind::Launch | EdgeKind::CrossLibrary => true,
                EdgeKind::Call | EdgeKind::MacroCall | EdgeKind::Entry => lead[e.to],
                _ => false,
            };
            if hit {
                lead[e.from] = true;
                changed = true;
            }
        }
    }
    lead
}

/// Units including a header looked in for a template's explicit instantiation, past
/// the caller's own unit.
const MAX_INCLUDERS: usize = 6;

/// How a call's resolved declaration relates to a node.
enum Target {
    /// Instantiations at the node's definition, read in this unit.
    Here(Vec<Instantiation>, String),
    /// A definition with that type elsewhere: another overload.
    Elsewhere(String),
    /// Not found with a body: the call is there, what it runs is not read.
    Unknown(String),
}

/// The instantiations of node `i` in `unit` (or in the node's own file, when that is a
/// unit and `unit` only declares it) whose type is `signature` (any, when `None`).
fn target(
    g: &InterfaceGraph,
    reader: &InstantiationReader,
    i: usize,
    unit: &str,
    signature: Option<&str>,
) -> Target {
    target_of(g, reader, i, unit, signature, true)
}

/// [`target`], for a kernel (`need_body` false): a host-side compile may hold only
/// its declaration.
fn target_of(
    g: &InterfaceGraph,
    reader: &InstantiationReader,
    i: usize,
    unit: &str,
    signature: Option<&str>,
    need_body: bool,
) -> Target {
    let n = &g.nodes[i];
    let mut units = vec![unit.to_string()];
    if reader.is_unit(&n.file) && n.file != unit {
        units.push(n.file.clone());
    }
    // A template of a header instantiated explicitly in a unit that includes it
    // (rocBLAS's `*_kernels.cpp`): the first few such units are looked in.
    if !reader.is_unit(&n.file) {
        units.extend(
            reader
                .includers(&n.file)
                .into_iter()
                .filter(|u| u != unit)
                .take(MAX_INCLUDERS),
        );
    }
    let mut elsewhere = None;
    let mut why = String::new();
    for u in units {
        let r = reader.read(&u, &n.name);
        if let Some(f) = &r.failure {
            why = f.clone();
            continue;
        }
        let typed = |f: &&Instantiation| {
            signature
                .is_none_or(|s| f.signature == s || (!f.desugared.is_empty() && f.desugared == s))
        };
        let here: Vec<Instantiation> = r
            .instantiations
            .iter()
            .filter(|f| (f.has_body || !need_body) && typed(f))
            .filter(|f| signature.is_none() || (f.file == n.file && f.line == n.line))
            .cloned()
            .collect();
        // Template parameters that no parameter type shows (`FETCH`, `FINALIZE` of
        // the asum/nrm2 launcher) leave several instantiations with one type: all are
        // kept, so a launch any of them makes stays, and their arguments, which
        // disagree, are not given to the text evaluator.
        if !here.is_empty() {
            return Target::Here(here, u);
        }
        if let Some(f) = r
            .instantiations
            .iter()
            .filter(typed)
            .find(|f| f.has_body || !need_body)
        {
            elsewhere = Some(format!("{}:{}", f.file, f.line));
        }
        why = format!("no instantiation of {} with a body in {u}", n.name);
    }
    match elsewhere {
        Some(at) => Target::Elsewhere(at),
        None => Target::Unknown(why),
    }
}

/// Reads the graph of one API through the compiler's instantiations.
pub fn view(g: &InterfaceGraph, reader: &InstantiationReader) -> CompilerView {
    let mut out = CompilerView::default();
    let Some(entry) = g.nodes.get(1).filter(|n| n.kind == NodeKind::Function) else {
        return out;
    };
    if !reader.is_unit(&entry.file) {
        out.uncovered
            .insert(1, format!("{} is not a translation unit", entry.file));
        return out;
    }
    let lead = leading_somewhere(g);
    let mut queue: Vec<(usize, Vec<Instantiation>, String)> = Vec::new();
    match target(g, reader, 1, &entry.file, None) {
        Target::Here(insts, unit) => queue.push((1, insts, unit)),
        Target::Elsewhere(why) | Target::Unknown(why) => {
            tracing::debug!(api = %g.api.name, why, "Compiler reading: entry not found.");
            out.uncovered.insert(1, why);
            return out;
        }
    }
    let mut seen: BTreeSet<(usize, String, Vec<String>)> = BTreeSet::new();
    let mut out_edges: HashMap<usize, Vec<(usize, EdgeKind)>> = HashMap::new();
    for e in &g.edges {
        out_edges.entry(e.from).or_default().push((e.to, e.kind));
    }
    while let Some((i, insts, unit)) = queue.pop() {
        let fresh: Vec<Instantiation> = insts
            .into_iter()
            .filter(|f| seen.insert((i, f.signature.clone(), f.template_args.clone())))
            .collect();
        if fresh.is_empty() {
            continue;
        }
        let edges = out_edges.get(&i).cloned().unwrap_or_default();
        // Kernels launched under a name several kernels of the graph share: the
        // overload each launch resolved to.
        for f in &fresh {
            for l in &f.launches {
                let same_name: Vec<usize> = edges
                    .iter()
                    .filter(|(to, k)| *k == EdgeKind::Launch && g.nodes[*to].name == l.callee)
                    .map(|(to, _)| *to)
                    .collect();
                if same_name.len() < 2 {
                    continue;
                }
                for &to in &same_name {
                    if let Target::Elsewhere(_) =
                        target_of(g, reader, to, &unit, Some(&l.signature), false)
                    {
                        out.other_overload.insert((i, to));
                    }
                }
            }
        }
        for f in &fresh {
            for c in &f.calls {
                for &(to, kind) in &edges {
                    let callee = &g.nodes[to];
                    if callee.name != c.callee {
                        continue;
                    }
                    match kind {
                        EdgeKind::CrossLibrary => {
                            out.live_calls.insert((i, to));
                        }
                        EdgeKind::Call | EdgeKind::MacroCall
                            if callee.kind == NodeKind::Function && lead[to] =>
                        {
                            match target(g, reader, to, &unit, Some(&c.signature)) {
                                Target::Here(next, u) => {
                                    out.live_calls.insert((i, to));
                                    queue.push((to, next, u));
                                }
                                Target::Elsewhere(_) => {}
                                Target::Unknown(why) => {
                                    out.live_calls.insert((i, to));
                                    out.uncovered.entry(to).or_insert(why);
                                }
                            }
                        }
                        EdgeKind::Call | EdgeKind::MacroCall => {
                            out.live_calls.insert((i, to));
                        }
                        _ => {}
                    }
                }
            }
        }
        out.covered.entry(i).or_default().extend(fresh);
    }
    for i in out.covered.keys() {
        out.uncovered.remove(i);
    }
    tracing::debug!(
        api = %g.api.name,
        covered = out.covered.len(),
        uncovered = ?out.uncovered,
        "Compiler reading."
    );
    for i in out.covered.keys() {
        tracing::trace!(
            node = %g.nodes[*i].name,
            reached = %out.shown(*i),
            values = ?out.template_values(*i),
            "Instantiations reached."
        );
    }
    out
}
