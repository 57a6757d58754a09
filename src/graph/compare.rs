//! The fast index's graphs against the precise (libclang) index's, per API family.
//!
//! An edge is a caller/callee pair of names (`rocblas_scal_impl -> rocblas_internal_scal_template`):
//! lines differ between the two readings for macro-made code, names do not. A
//! family's edges are the union over its APIs' interface graphs.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{ApiFunction, InterfaceGraph, LibraryIndex};

use super::CodeGraph;

/// One family's comparison.
#[derive(Debug, Clone, Serialize, Default)]
pub struct FamilyComparison {
    /// API family.
    pub family: String,
    /// Edges both graphs have.
    pub both: usize,
    /// Edges only the fast index's graphs have.
    pub fast_only: Vec<String>,
    /// Edges only the precise index's graphs have.
    pub precise_only: Vec<String>,
}

impl FamilyComparison {
    /// `both / (both + fast_only + precise_only)`, in percent (100 for no edges).
    pub fn agreement(&self) -> f64 {
        percent(self.both, self.fast_only.len() + self.precise_only.len())
    }
}

/// Every compared family and the totals.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Library.
    pub lib: String,
    /// Version.
    pub version: String,
    /// Per family.
    pub families: Vec<FamilyComparison>,
    /// Edges in both, summed over families.
    pub both: usize,
    /// Edges only in the fast graphs.
    pub fast_only: usize,
    /// Edges only in the precise graphs.
    pub precise_only: usize,
    /// Overall agreement, in percent.
    pub agreement: f64,
}

fn percent(both: usize, other: usize) -> f64 {
    if both + other == 0 {
        100.0
    } else {
        100.0 * both as f64 / (both + other) as f64
    }
}

/// The named edges of one graph.
pub fn edge_names(g: &InterfaceGraph) -> BTreeSet<String> {
    g.edges
        .iter()
        .map(|e| format!("{} -> {}", g.nodes[e.from].name, g.nodes[e.to].name))
        .collect()
}

/// Compares the graphs of `apis` built over the fast and the precise index.
pub fn compare(fast: &CodeGraph, precise: &CodeGraph, apis: &[&ApiFunction]) -> Comparison {
    let mut fams: BTreeMap<&str, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    for a in apis {
        let e = fams.entry(a.family.as_str()).or_default();
        e.0.extend(edge_names(&fast.interface(a)));
        e.1.extend(edge_names(&precise.interface(a)));
    }
    let families: Vec<FamilyComparison> = fams
        .into_iter()
        .map(|(family, (f, p))| FamilyComparison {
            family: family.to_string(),
            both: f.intersection(&p).count(),
            fast_only: f.difference(&p).cloned().collect(),
            precise_only: p.difference(&f).cloned().collect(),
        })
        .collect();
    let both = families.iter().map(|f| f.both).sum();
    let fast_only = families.iter().map(|f| f.fast_only.len()).sum();
    let precise_only = families.iter().map(|f| f.precise_only.len()).sum();
    let main = fast.libs[0].index;
    Comparison {
        lib: main.lib.clone(),
        version: main.version.clone(),
        families,
        both,
        fast_only,
        precise_only,
        agreement: percent(both, fast_only + precise_only),
    }
}

/// The translation units (of `units`) that define what the fast graphs of `apis`
/// reach in the main library: the `.cpp` files among their nodes, and for a header
/// among them, the first `per_header` units that include it directly (one reading of
/// a header's definitions is enough; a header explicitly instantiated by many units
/// would otherwise bring them all).
pub fn units_touched(
    fast: &CodeGraph,
    apis: &[&ApiFunction],
    index: &LibraryIndex,
    units: &[String],
    per_header: usize,
) -> Vec<String> {
    let mut files: BTreeSet<String> = BTreeSet::new();
    for a in apis {
        let g = fast.interface(a);
        for n in &g.nodes {
            if n.lib == index.lib && !n.file.is_empty() {
                files.insert(n.file.clone());
            }
        }
    }
    let mut includers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in index.files.iter().filter(|f| f.context.is_empty()) {
        if units.contains(&f.path) {
            for inc in &f.includes {
                includers
                    .entry(inc.as_str())
                    .or_default()
                    .push(f.path.as_str());
            }
        }
    }
    let mut out: BTreeSet<String> = BTreeSet::new();
    for f in &files {
        if units.contains(f) {
            out.insert(f.clone());
        } else if let Some(us) = includers.get(f.as_str()) {
            out.extend(us.iter().take(per_header).map(|u| u.to_string()));
        }
    }
    out.into_iter().collect()
}
