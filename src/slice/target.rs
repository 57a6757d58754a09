//! What a slice is cut for: the kernel that does an API's work, the host chain that
//! reaches it, the argument check on that chain, and the helpers the target calls.
//!
//! All of it is read off the interface graph (nodes in breadth-first order, typed
//! edges) and the pinned text of the nodes; nothing here knows a library by name.

use std::collections::{BTreeSet, VecDeque};
use std::sync::OnceLock;

use regex::Regex;

use crate::model::{EdgeKind, InterfaceGraph, NodeKind, WhatRuns};

/// Kernels that only prepare or tidy up (zero-fill, reset, scalar init, beta-scale,
/// copies): never the target of a question about the work unless nothing else runs.
fn utility_name() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(
            r"(?i)(reset|zero|init|iota|_set_|^set_|fill|copy|scale|scal_kernel|restau|subtract_tau|conj|ident|_diag|check_|info|iamax_finish|finalize|_real|_imag|tau|swap)",
        )
        .expect("static regex")
    })
}

/// Host functions that only log or check for NaNs: never on a question's path.
pub fn is_noise(name: &str) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r"(?i)(^log_|logging|_log$|check_numerics|numerics_check|_trace|log_bench|log_profile|print_)")
            .expect("static regex")
    })
    .is_match(name)
}

/// Argument-check functions (`rocblas_syrk_arg_check`, `rocsolver_getrf_argCheck`).
pub fn is_arg_check(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("arg_check") || n.contains("argcheck") || n.ends_with("_check_args")
}

/// Lines of a node's definition.
pub fn lines_of(g: &InterfaceGraph, i: usize) -> u32 {
    let n = &g.nodes[i];
    n.end_line.saturating_sub(n.start_line) + 1
}

/// The breadth-first parent of every node: the caller nearest the API (then the
/// earliest discovered), with the line of the call or launch. Nodes the API never
/// calls and launch sites it never makes (`runs`, read by the facts) are no one's
/// parent, so no path runs through them, and distances are counted without them: a
/// kernel reached only past a return every call takes is reached the long way round
/// (syr2k's block-recursive path), not cut off, and a kernel two launchers launch is
/// shown at the launch its API makes (getrs's `trsm_upper`, not the `trsm_lower`
/// launch under a `diag` its caller never passes).
pub fn parents(g: &InterfaceGraph, runs: Option<&WhatRuns>) -> Vec<Option<(usize, u32)>> {
    let n = g.nodes.len();
    let usable = |e: &crate::model::GraphEdge| {
        e.to != 0
            && e.from != e.to
            && e.from < n
            && e.to < n
            && !runs.is_some_and(|r| {
                r.unreached.contains(&e.from)
                    || (e.kind == EdgeKind::Launch
                        && r.dead_launches.contains(&(e.file.clone(), e.line, e.to)))
            })
    };
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, e) in g.edges.iter().enumerate() {
        if usable(e) {
            out_edges[e.from].push(k);
        }
    }
    let mut dist: Vec<Option<u32>> = vec![None; n];
    let mut q = VecDeque::new();
    if n > 0 {
        dist[0] = Some(0);
        q.push_back(0usize);
    }
    while let Some(i) = q.pop_front() {
        for &k in &out_edges[i] {
            let to = g.edges[k].to;
            if dist[to].is_none() {
                dist[to] = Some(dist[i].unwrap_or(0) + 1);
                q.push_back(to);
            }
        }
    }
    let mut p: Vec<Option<(usize, u32)>> = vec![None; n];
    for e in g.edges.iter().filter(|e| usable(e)) {
        let (Some(df), Some(dt)) = (dist[e.from], dist[e.to]) else {
            continue;
        };
        if df + 1 != dt {
            continue;
        }
        let better = match p[e.to] {
            None => true,
            Some((f, _)) => (df, e.from) < (dist[f].unwrap_or(u32::MAX), f),
        };
        if better {
            p[e.to] = Some((e.from, e.line));
        }
    }
    p
}

/// Node indices from the API (node 0) down to `to`, with the line in each step's
/// caller where it calls the next (`0` for the last).
pub fn path_to(parents: &[Option<(usize, u32)>], to: usize) -> Vec<(usize, u32)> {
    let mut out = vec![(to, 0)];
    let mut cur = to;
    let mut guard = 0;
    while let Some((p, line)) = parents[cur] {
        out.push((p, line));
        cur = p;
        guard += 1;
        if guard > parents.len() {
            break;
        }
    }
    out.reverse();
    out
}

/// Everything a node calls, transitively, without following launches (for a kernel:
/// its device helpers), nearest first.
pub fn callees(g: &InterfaceGraph, from: usize) -> Vec<usize> {
    let mut seen = BTreeSet::from([from]);
    let mut q = VecDeque::from([from]);
    let mut out = Vec::new();
    while let Some(i) = q.pop_front() {
        for e in g.edges.iter().filter(|e| e.from == i) {
            if matches!(
                e.kind,
                EdgeKind::Launch | EdgeKind::Opaque | EdgeKind::Entry
            ) {
                continue;
            }
            if seen.insert(e.to) {
                out.push(e.to);
                q.push_back(e.to);
            }
        }
    }
    out
}

/// How much of an API's work a kernel is: (not a utility, named after the family,
/// in the API's own library, size up to a cap), larger is better.
fn work_score(g: &InterfaceGraph, i: usize) -> (bool, bool, bool, u32) {
    let n = &g.nodes[i];
    let lines = lines_of(g, i);
    let fam = g.api.family.to_ascii_lowercase();
    let named = n.name.to_ascii_lowercase().contains(&fam)
        || n.file.to_ascii_lowercase().contains(&format!("_{fam}"));
    // The family's own name in a kernel (`rocblas_scal_kernel`) is not a utility word.
    let rest = n.name.to_ascii_lowercase().replace(&fam, "");
    let utility = lines <= 20 || utility_name().is_match(&rest);
    // Past a few hundred lines a kernel does not fit a question's slice whole.
    let size = if lines > 700 { 0 } else { lines.min(400) };
    (!utility, named, n.lib == g.lib, size)
}

/// Kernels reached by the graph, the ones that do the work first.
pub fn kernels_by_work(g: &InterfaceGraph) -> Vec<usize> {
    // Kernels reached only through numerics checking do none of the API's work.
    let computing = g.reachable_without(EdgeKind::CheckNumerics);
    let mut k: Vec<usize> = (0..g.nodes.len())
        .filter(|&i| g.nodes[i].kind == NodeKind::Kernel && lines_of(g, i) <= 700 && computing[i])
        .collect();
    k.sort_by_key(|&i| (std::cmp::Reverse(work_score(g, i)), g.nodes[i].depth, i));
    k
}

/// `kernels` with those every launch of which asks for one GPU architecture moved
/// last, in their order: a question on sger's gfx90a-only double-buffered kernel tells
/// the reader little of what every other GPU runs.
pub fn every_arch_first(g: &InterfaceGraph, runs: &WhatRuns, kernels: Vec<usize>) -> Vec<usize> {
    let arch_only = |k: usize| {
        let mut launches = g
            .edges
            .iter()
            .filter(|e| e.to == k && e.kind == EdgeKind::Launch)
            .peekable();
        launches.peek().is_some()
            && launches.all(|e| {
                runs.launch_conditions
                    .get(&(e.file.clone(), e.line))
                    .is_some_and(|cs| cs.iter().any(|c| super::values::requires_arch(c)))
            })
    };
    let (every, only): (Vec<usize>, Vec<usize>) = kernels.into_iter().partition(|&k| !arch_only(k));
    every.into_iter().chain(only).collect()
}

/// Is this kernel only a utility (<= 20 lines, or a zero-fill/reset/scale helper)?
pub fn is_utility_kernel(g: &InterfaceGraph, i: usize) -> bool {
    !work_score(g, i).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_and_checks_are_told_by_name() {
        assert!(is_noise("log_trace") && is_noise("rocblas_check_numerics_vector_template"));
        assert!(!is_noise("rocblas_internal_dot_launcher"));
        assert!(
            is_arg_check("rocsolver_org2r_orgqr_argCheck")
                && is_arg_check("rocblas_syrk_arg_check")
        );
        assert!(!is_arg_check("rocblas_syrk_impl"));
        for u in [
            "reset_info",
            "rocblas_gemv_scal_kernel",
            "set_zero",
            "iota_n",
        ] {
            assert!(utility_name().is_match(u), "{u}");
        }
    }
}
