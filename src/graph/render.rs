//! Text forms of an interface graph: an indented tree for people, DOT for Graphviz (a
//! picture a reader can take in by default, every call site with `--full`), SVG through
//! Graphviz, JSON for programs.

use std::collections::{BTreeMap, HashMap, HashSet};
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

/// What a node of the picture does on the way from the API to its kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The API and the definition implementing it.
    Entry,
    /// Host code between the entry and the launchers.
    Impl,
    /// Numerics checking (reached on `check-numerics` edges).
    Check,
    /// Host code that launches kernels.
    Launcher,
    /// A `__global__` kernel, with the device helpers it calls folded in.
    Kernel,
    /// Code of the paired library (rocSOLVER into rocBLAS).
    CrossLibrary,
    /// Code not in the tree.
    Opaque,
}

impl Role {
    fn label(self) -> &'static str {
        match self {
            Role::Entry => "entry",
            Role::Impl => "impl",
            Role::Check => "check",
            Role::Launcher => "launcher",
            Role::Kernel => "kernel",
            Role::CrossLibrary => "cross-library",
            Role::Opaque => "opaque",
        }
    }

    /// Fill colour in the picture.
    fn colour(self) -> &'static str {
        match self {
            Role::Entry => "#ffd166",
            Role::Impl => "#f1f1f1",
            Role::Check => "#f4b6c2",
            Role::Launcher => "#9ecae1",
            Role::Kernel => "#a1d99b",
            Role::CrossLibrary => "#cbb4e3",
            Role::Opaque => "#d9d9d9",
        }
    }
}

/// One node of the picture: every definition of a name merged.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PictureNode {
    /// Name.
    pub name: String,
    /// Role, for the colour.
    pub role: Role,
    /// Library.
    pub lib: String,
    /// Where (the first definition merged).
    pub file: String,
    /// Line of the name.
    pub line: u32,
    /// Definitions merged into this node (overloads, build contexts).
    pub definitions: usize,
    /// For kernels: device helpers folded in.
    pub helpers: usize,
    /// A `__global__` kernel (also when its role is `check`).
    pub kernel: bool,
}

/// One edge of the picture: a caller/callee pair.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PictureEdge {
    /// Index of the caller.
    pub from: usize,
    /// Index of the callee.
    pub to: usize,
    /// Kind of the first site.
    pub kind: EdgeKind,
    /// Call or launch sites merged.
    pub sites: u32,
}

/// The default view of an interface graph: the host chain from the API to the
/// kernels and opaque leaves, each kernel with its device helpers folded in, one node
/// per name and one edge per caller/callee pair. Host helpers that lead to no kernel
/// (stream and memory plumbing) are left out; `--full` shows them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Picture {
    /// Nodes.
    pub nodes: Vec<PictureNode>,
    /// Edges.
    pub edges: Vec<PictureEdge>,
}

/// Folds an interface graph into its [`Picture`].
pub fn picture(g: &InterfaceGraph) -> Picture {
    let n = g.nodes.len();
    let is_kernel = |i: usize| g.nodes[i].kind == NodeKind::Kernel;
    // Device side: what kernels call (not launch), kernels excluded.
    let mut device = vec![false; n];
    let mut stack: Vec<usize> = (0..n).filter(|&i| is_kernel(i)).collect();
    let mut seen = vec![false; n];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        for e in g.edges.iter().filter(|e| e.from == i && !is_kernel(e.to)) {
            device[e.to] = true;
            stack.push(e.to);
        }
    }
    // Host nodes that lead to a kernel or an opaque leaf.
    let mut leads: Vec<bool> = g
        .nodes
        .iter()
        .map(|x| matches!(x.kind, NodeKind::Kernel | NodeKind::Opaque))
        .collect();
    loop {
        let mut changed = false;
        for e in &g.edges {
            if leads[e.to] && !leads[e.from] && !device[e.from] {
                leads[e.from] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let computing = g.reachable_without(EdgeKind::CheckNumerics);
    let entry: HashSet<usize> = g
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Entry)
        .map(|e| e.to)
        .chain([0])
        .collect();
    let launches: HashSet<usize> = g
        .edges
        .iter()
        .filter(|e| matches!(e.kind, EdgeKind::Launch | EdgeKind::CheckNumerics) && is_kernel(e.to))
        .map(|e| e.from)
        .collect();
    let role = |i: usize| {
        let x = &g.nodes[i];
        if entry.contains(&i) {
            Role::Entry
        } else if x.kind == NodeKind::Opaque {
            Role::Opaque
        } else if !computing[i] {
            Role::Check
        } else if x.kind == NodeKind::Kernel {
            Role::Kernel
        } else if x.lib != g.lib {
            Role::CrossLibrary
        } else if launches.contains(&i) {
            Role::Launcher
        } else {
            Role::Impl
        }
    };
    let mut nodes: Vec<PictureNode> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let mut map: Vec<Option<usize>> = vec![None; n];
    for (i, x) in g.nodes.iter().enumerate() {
        let kept = i == 0 || (leads[i] && !device[i]);
        if !kept {
            continue;
        }
        let r = role(i);
        let k = *by_name.entry(x.name.as_str()).or_insert_with(|| {
            nodes.push(PictureNode {
                name: x.name.clone(),
                role: r,
                lib: x.lib.clone(),
                file: x.file.clone(),
                line: x.line,
                definitions: 0,
                helpers: 0,
                kernel: x.kind == NodeKind::Kernel,
            });
            nodes.len() - 1
        });
        // The API's declaration is not a definition.
        nodes[k].definitions += usize::from(x.kind != NodeKind::Api);
        // A name with a computing definition is shown as computing.
        nodes[k].role = nodes[k].role.min(r);
        map[i] = Some(k);
    }
    // Device helpers each kernel reaches, by name.
    for (i, m) in map.iter().enumerate() {
        let Some(k) = *m else { continue };
        if !is_kernel(i) {
            continue;
        }
        let mut names: HashSet<&str> = HashSet::new();
        let mut stack = vec![i];
        let mut seen = HashSet::new();
        while let Some(j) = stack.pop() {
            if !seen.insert(j) {
                continue;
            }
            for e in g.edges.iter().filter(|e| e.from == j && !is_kernel(e.to)) {
                names.insert(g.nodes[e.to].name.as_str());
                stack.push(e.to);
            }
        }
        nodes[k].helpers = nodes[k].helpers.max(names.len());
    }
    let mut pairs: BTreeMap<(usize, usize), PictureEdge> = BTreeMap::new();
    for e in &g.edges {
        let (Some(a), Some(b)) = (map[e.from], map[e.to]) else {
            continue;
        };
        if a == b {
            continue;
        }
        pairs
            .entry((a, b))
            .and_modify(|p| p.sites += e.sites)
            .or_insert(PictureEdge {
                from: a,
                to: b,
                kind: e.kind,
                sites: e.sites,
            });
    }
    Picture {
        nodes,
        edges: pairs.into_values().collect(),
    }
}

/// Graphviz DOT of the [`Picture`]: colours by role, one edge per pair with its count.
pub fn dot(g: &InterfaceGraph) -> String {
    let p = picture(g);
    let mut out = format!(
        "digraph \"{}\" {{\n  rankdir=LR;\n  node [style=filled, fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n",
        g.api.name
    );
    for (i, n) in p.nodes.iter().enumerate() {
        let shape = match n.role {
            _ if n.kernel => "box3d",
            Role::Opaque => "note",
            Role::Entry if i == 0 => "doubleoctagon",
            _ => "box",
        };
        let mut label = n.name.replace('"', "\\\"");
        if !n.file.is_empty() {
            let _ = write!(
                label,
                "\\n{}:{}",
                n.file.rsplit('/').next().unwrap_or(""),
                n.line
            );
        }
        if n.definitions > 1 {
            let _ = write!(label, "\\n{} definitions", n.definitions);
        }
        if n.helpers > 0 {
            let _ = write!(label, "\\n+{} device helpers", n.helpers);
        }
        if n.lib != g.lib {
            let _ = write!(label, "\\n[{}]", n.lib);
        }
        let _ = writeln!(
            out,
            "  n{i} [label=\"{label}\", shape={shape}, fillcolor=\"{}\", tooltip=\"{}\"];",
            n.role.colour(),
            n.role.label()
        );
    }
    for e in &p.edges {
        let style = match e.kind {
            EdgeKind::Launch => "style=bold",
            EdgeKind::CheckNumerics => "style=dashed, color=\"#c0392b\"",
            EdgeKind::CrossLibrary => "color=\"#6a3d9a\"",
            EdgeKind::Opaque => "style=dotted",
            _ => "",
        };
        let label = if e.sites > 1 {
            format!("{} x{}", edge_label(e.kind), e.sites)
        } else {
            edge_label(e.kind).to_string()
        };
        let sep = if style.is_empty() { "" } else { ", " };
        let _ = writeln!(
            out,
            "  n{} -> n{} [label=\"{label}\"{sep}{style}];",
            e.from, e.to
        );
    }
    out.push_str("}\n");
    out
}

/// SVG of a DOT text, by Graphviz's `dot` (Debian package `graphviz`).
pub fn svg(dot_text: &str) -> Result<String, String> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!("cannot run Graphviz `dot` ({e}): install it (`apt-get install graphviz`, done by scripts/setup.sh) or use --format dot")
        })?;
    child
        .stdin
        .take()
        .ok_or("no stdin for dot")?
        .write_all(dot_text.as_bytes())
        .map_err(|e| format!("writing to Graphviz `dot`: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("Graphviz `dot`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "Graphviz `dot` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("Graphviz `dot` output: {e}"))
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

/// Graphviz DOT of every node and edge, each edge labelled with its kind and first site.
pub fn dot_full(g: &InterfaceGraph) -> String {
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
