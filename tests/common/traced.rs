//! The paths FACTS.md traces by hand, checked on a graph: the fast index
//! (`tests/real_sources.rs`) and the precise one (`tests/precise_real.rs`) are held to
//! the same lines by the same code.
use rocqa::model::{EdgeKind, GraphNode, InterfaceGraph};

/// The node named `name`; fails listing the graph's nodes.
pub fn node<'g>(g: &'g InterfaceGraph, name: &str) -> &'g GraphNode {
    g.nodes.iter().find(|n| n.name == name).unwrap_or_else(|| {
        panic!(
            "{name} not in the graph of {}; nodes: {:?}",
            g.api.name,
            g.nodes.iter().map(|n| &n.name).collect::<Vec<_>>()
        )
    })
}

/// The edge FROM -> TO (by node name), with its kind, site and macro.
pub fn edge(g: &InterfaceGraph, from: &str, to: &str) -> (EdgeKind, String, u32, Option<String>) {
    g.edges
        .iter()
        .find(|e| g.nodes[e.from].name == from && g.nodes[e.to].name == to)
        .map(|e| (e.kind, e.file.clone(), e.line, e.via_macro.clone()))
        .unwrap_or_else(|| panic!("no edge {from} -> {to} in the graph of {}", g.api.name))
}

/// FACTS.md cites a definition by a line of its header (template line, return type or
/// name line); the node must span it.
pub fn assert_at(n: &GraphNode, file: &str, line: u32) {
    assert_eq!(n.file, file, "{} file", n.name);
    assert!(
        n.start_line <= line && line <= n.line.max(n.start_line),
        "{} at {}:{}-{} (name line {}), expected to cover line {line}",
        n.name,
        n.file,
        n.start_line,
        n.end_line,
        n.line
    );
}

/// `rocblas_strsm`: impl, template and launcher at their traced lines; the launcher's
/// three ways (small, trtri-based, special/left) and the two that end in gemm.
pub fn strsm_three_ways_to_gemm(g: &InterfaceGraph) {
    assert_at(
        node(g, "rocblas_trsm_ex_impl"),
        "library/src/blas3/rocblas_trsm_imp.hpp",
        55,
    );
    assert_at(
        node(g, "rocblas_internal_trsm_template"),
        "library/src/blas3/rocblas_trsm_kernels.cpp",
        32,
    );
    assert_at(
        node(g, "rocblas_internal_trsm_launcher"),
        "library/src/blas3/rocblas_trsm_kernels.hpp",
        3723,
    );
    for way in [
        "rocblas_trsm_small",
        "rocblas_trtri_trsm_template",
        "special_trsm_template",
        "rocblas_trsm_left",
    ] {
        edge(g, "rocblas_internal_trsm_launcher", way);
    }
    let gemm = node(g, "rocblas_internal_gemm");
    assert_eq!(gemm.file, "library/src/blas3/Tensile/gemm_templates.cpp");
    for caller in ["special_trsm_template", "rocblas_trsm_left"] {
        edge(g, caller, "rocblas_internal_gemm");
    }
}
