//! Text forms of an interface graph: an indented tree for people, DOT for Graphviz,
//! JSON for programs.

use std::collections::HashSet;
use std::fmt::Write;

use crate::model::{EdgeKind, InterfaceGraph, NodeKind};

fn edge_label(k: EdgeKind) -> &'static str {
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

fn node_label(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Api => "api",
        NodeKind::Function => "function",
        NodeKind::Kernel => "kernel",
        NodeKind::DeviceHelper => "device",
        NodeKind::Opaque => "opaque",
    }
}

/// An indented tree, depth first, each node once (repeats say `(see above)`).
pub fn tree(g: &InterfaceGraph) -> String {
    let mut out = String::new();
    let n0 = &g.nodes[0];
    let _ = writeln!(out, "{} [api] {}:{}", n0.name, n0.file, n0.line);
    let mut seen = HashSet::from([0usize]);
    walk(g, 0, 1, &mut seen, &mut out);
    out
}

fn walk(
    g: &InterfaceGraph,
    from: usize,
    indent: usize,
    seen: &mut HashSet<usize>,
    out: &mut String,
) {
    let mut kids: Vec<_> = g.edges.iter().filter(|e| e.from == from).collect();
    kids.sort_by_key(|e| (e.line, e.to));
    for e in kids {
        let n = &g.nodes[e.to];
        let pad = "  ".repeat(indent);
        let via = e
            .via_macro
            .as_deref()
            .map(|m| format!(" via {m}"))
            .unwrap_or_default();
        let site = format!("{}:{}", e.file, e.line);
        let place = if n.kind == NodeKind::Opaque {
            format!("({})", n.note.as_deref().unwrap_or("not in the tree"))
        } else if n.start_line != n.line {
            format!("{}:{} ({}-{})", n.file, n.line, n.start_line, n.end_line)
        } else {
            format!("{}:{} (-{})", n.file, n.line, n.end_line)
        };
        let ctx = match (&n.note, n.kind) {
            (Some(note), k) if k != NodeKind::Opaque => format!(" ({note})"),
            _ => String::new(),
        };
        let lib = if n.lib != g.lib {
            format!(" {{{}}}", n.lib)
        } else {
            String::new()
        };
        let again = if seen.insert(e.to) {
            ""
        } else {
            " (see above)"
        };
        let _ = writeln!(
            out,
            "{pad}-{}-> {} [{}]{lib} {place}{ctx}  @{site}{via}{again}",
            edge_label(e.kind),
            n.name,
            node_label(n.kind)
        );
        if again.is_empty() {
            walk(g, e.to, indent + 1, seen, out);
        }
    }
}

/// Graphviz DOT.
pub fn dot(g: &InterfaceGraph) -> String {
    let mut out = format!("digraph \"{}\" {{\n  rankdir=LR;\n", g.api.name);
    for (i, n) in g.nodes.iter().enumerate() {
        let shape = match n.kind {
            NodeKind::Api => "doubleoctagon",
            NodeKind::Kernel => "box3d",
            NodeKind::DeviceHelper => "component",
            NodeKind::Opaque => "note",
            NodeKind::Function => "box",
        };
        let _ = writeln!(
            out,
            "  n{i} [label=\"{}\\n{}:{}\", shape={shape}];",
            n.name.replace('"', "\\\""),
            n.file,
            n.line
        );
    }
    for e in &g.edges {
        let _ = writeln!(
            out,
            "  n{} -> n{} [label=\"{} {}:{}\"];",
            e.from,
            e.to,
            edge_label(e.kind),
            e.file,
            e.line
        );
    }
    out.push_str("}\n");
    out
}

/// Pretty JSON of the plain records.
pub fn json(g: &InterfaceGraph) -> String {
    serde_json::to_string_pretty(g).unwrap_or_default()
}
