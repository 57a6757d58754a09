//! The `slice` stage: the code an LLM gets to see for one API family.
//!
//! Takes an [`InterfaceGraph`], the index it came from (for macro-made definitions, whose
//! text only exists expanded) and the pinned trees; gives a [`Slice`]: the public
//! declaration, entry point, host functions, launchers, kernels and device helpers in
//! call order, each with `file:start-end` and the SHA-256 of exactly those lines at the
//! pinned version, so every later citation can be checked against the tree. A token
//! budget (counted with a real tokenizer) is filled by relevance: kernels and the
//! functions that launch them first, then by distance from the API; what does not fit
//! is listed, not silently dropped. Features read off the code (LDS, barriers, atomics,
//! ...) decide which questions make sense for the slice.

pub mod definitions;
pub mod features;
pub mod target;
pub mod values;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use sha2::{Digest, Sha256};

pub use features::features_of;

use crate::model::{
    EdgeKind, InterfaceGraph, LibraryIndex, NodeKind, OmittedPiece, PiecePart, PieceRole, Slice,
    SliceFocus, SlicePiece,
};

/// Why a slice could not be cut.
#[derive(Debug, thiserror::Error)]
pub enum SliceError {
    /// A file named by the graph is missing from the tree.
    #[error("{path}: cannot read a file the call graph names; is the tree complete? (`rocqa sources fetch` again)")]
    Read {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// A file asked of a library that has no pinned tree here.
    #[error(
        "{file}: library `{lib}` has no pinned tree here; name a library configured in rocqa.toml"
    )]
    UnknownLibrary {
        /// Library named.
        lib: String,
        /// File asked for.
        file: String,
    },
    /// A path that would leave the library's pinned tree (`..`, absolute, a link out).
    #[error("{file}: not a path inside the pinned {lib} tree; give it relative to the tree root")]
    OutsideTree {
        /// Library.
        lib: String,
        /// File asked for.
        file: String,
    },
}

/// Limits for one slice.
#[derive(Debug, Clone, Copy)]
pub struct SliceLimits {
    /// Tokens for the whole slice.
    pub budget_tokens: usize,
    /// A single piece longer than this is cut to its first lines.
    pub max_piece_tokens: usize,
}

impl SliceLimits {
    /// What the required part (host chain, argument check, target whole) may use: an
    /// L3 question needs the whole chain.
    pub fn required_tokens(&self) -> usize {
        self.budget_tokens * 2
    }

    /// The most one question is shown of a slice: the path and the target (twice the
    /// budget), base-form code (twice the budget), the target's work (twice the
    /// budget) and its functors and constants (half the budget), each an allowance of
    /// its own.
    pub fn max_tokens(&self) -> usize {
        self.required_tokens() * 3 + self.budget_tokens / 2
    }
}

impl Default for SliceLimits {
    fn default() -> Self {
        SliceLimits {
            budget_tokens: 6000,
            max_piece_tokens: 5000,
        }
    }
}

/// Counts tokens with OpenAI's cl100k_base BPE (close enough to the open models' own
/// tokenizers to size prompts; exact counts come back from the server as usage).
///
/// bpe-openai counts what tiktoken counts (the same on all 14,677 distinct slice texts
/// of both libraries' dry runs, 6.4 and 5.5) without a backtracking regex in its
/// pre-tokenizer, which made tiktoken-rs the dearest step of planning. Counts are
/// remembered by text hash still: the same functions recur in many slices.
pub fn count_tokens(text: &str) -> usize {
    static SEEN: OnceLock<std::sync::Mutex<HashMap<u64, usize>>> = OnceLock::new();
    let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
    let seen = SEEN.get_or_init(Default::default);
    if let Some(n) = seen.lock().ok().and_then(|m| m.get(&key).copied()) {
        return n;
    }
    let n = bpe_openai::cl100k_base().count(text);
    if let Ok(mut m) = seen.lock() {
        m.insert(key, n);
    }
    n
}

/// A file's lines, shared between the slices that show it.
pub type FileLines = std::sync::Arc<Vec<String>>;

/// The trees slices read from, by library name. Shared by the threads that check
/// entries: each file is read once.
#[derive(Debug, Default)]
pub struct Trees {
    roots: HashMap<String, PathBuf>,
    files: std::sync::Mutex<HashMap<(String, String), FileLines>>,
}

impl Clone for Trees {
    fn clone(&self) -> Trees {
        Trees {
            roots: self.roots.clone(),
            files: std::sync::Mutex::new(self.files_read().clone()),
        }
    }
}

impl Trees {
    /// Adds a library's pinned tree.
    pub fn add(&mut self, lib: &str, root: &Path) {
        self.roots.insert(lib.to_string(), root.to_path_buf());
    }

    /// The configured libraries and the roots of their trees.
    pub fn roots(&self) -> impl Iterator<Item = (&str, &Path)> {
        self.roots.iter().map(|(l, r)| (l.as_str(), r.as_path()))
    }

    /// The path of a file inside a library's pinned tree. Nothing outside a configured
    /// tree is ever read: an unknown library, an absolute path, `..`, or a link leading
    /// out of the tree is refused before any read.
    pub fn path_of(&self, lib: &str, file: &str) -> Result<PathBuf, SliceError> {
        let root = self
            .roots
            .get(lib)
            .ok_or_else(|| SliceError::UnknownLibrary {
                lib: lib.to_string(),
                file: file.to_string(),
            })?;
        let outside = || SliceError::OutsideTree {
            lib: lib.to_string(),
            file: file.to_string(),
        };
        let rel = Path::new(file);
        if file.is_empty()
            || !rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            return Err(outside());
        }
        let path = root.join(rel);
        // Links inside the tree may not lead out of it.
        if let (Ok(real), Ok(real_root)) = (path.canonicalize(), root.canonicalize()) {
            if !real.starts_with(&real_root) {
                return Err(outside());
            }
        }
        Ok(path)
    }

    /// The lines of a file (cached; files are read once per run).
    pub fn lines(&self, lib: &str, file: &str) -> Result<FileLines, SliceError> {
        let key = (lib.to_string(), file.to_string());
        if let Some(l) = self.files_read().get(&key) {
            return Ok(l.clone());
        }
        let path = self.path_of(lib, file)?;
        let text = std::fs::read(&path).map_err(|source| SliceError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let lines: Vec<String> = String::from_utf8_lossy(&text)
            .lines()
            .map(|l| l.to_string())
            .collect();
        let shared = std::sync::Arc::new(lines);
        self.files_read().insert(key, shared.clone());
        Ok(shared)
    }

    /// The files read so far. A thread that panicked while holding them left at worst
    /// a file missing, which is read again.
    fn files_read(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), FileLines>> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Code with whitespace dropped: a quote may be wrapped or indented differently.
pub fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Does the code shown (already [`squash`]ed) hold `quote` as written, whitespace
/// aside? An ellipsis splits a quote into parts, each held whole; a trailing `//` is
/// the quote's, not the code's. The one rule for what counts as quoted code: the
/// validator holds answers to it and the fact answers mark code by it.
pub fn holds_quote(shown_squashed: &str, quote: &str) -> bool {
    quote
        .split("...")
        .flat_map(|part| part.split('…'))
        .map(|part| squash(part.trim_end_matches("//")))
        .filter(|p| !p.is_empty() && p != "//")
        .all(|p| shown_squashed.contains(&p))
}

/// SHA-256 (hex) of lines `start..=end` (1-based) joined with `\n`: the citation hash.
pub fn lines_hash(lines: &[String], start: u32, end: u32) -> String {
    let mut h = Sha256::new();
    let (s, e) = (start.max(1) as usize, (end as usize).min(lines.len()));
    for (k, l) in lines.iter().enumerate().take(e).skip(s - 1) {
        if k + 1 > s {
            h.update(b"\n");
        }
        h.update(l.as_bytes());
    }
    format!("{:x}", h.finalize())
}

fn role_of(g: &InterfaceGraph, i: usize) -> PieceRole {
    let n = &g.nodes[i];
    match n.kind {
        NodeKind::Api => PieceRole::Declaration,
        NodeKind::Kernel => PieceRole::Kernel,
        NodeKind::DeviceHelper => PieceRole::DeviceHelper,
        NodeKind::Opaque => PieceRole::Host,
        NodeKind::Function => {
            if g.edges
                .iter()
                .any(|e| e.to == i && e.kind == EdgeKind::Entry)
            {
                PieceRole::Entry
            } else if g
                .edges
                .iter()
                .any(|e| e.from == i && e.kind == EdgeKind::Launch)
            {
                PieceRole::Launcher
            } else {
                PieceRole::Host
            }
        }
    }
}

/// What a slice is cut for.
#[derive(Debug, Clone, Copy, Default)]
pub struct CutSpec<'a> {
    /// The node (a kernel) the questions are about; `None` aims at the entry point and
    /// any hand-over to a backend.
    pub target: Option<usize>,
    /// For a variant slice: the base form's graph. Functions of the variant's chain
    /// that the base form does not share are shown beside their base counterparts.
    pub base: Option<&'a InterfaceGraph>,
    /// What the API never runs (read by the facts): no path shown goes through it.
    pub runs: Option<&'a crate::model::WhatRuns>,
    /// Functors and constants of the trees, shown where the path and the target's work
    /// name them.
    pub defs: Option<&'a definitions::Definitions>,
}

/// How much a piece matters to the slice's questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    /// The host chain, the argument check, the target whole: always shown.
    Required,
    /// The path into the other library and the kernel it reaches there: shown within
    /// an allowance of its own past the required part, so deep paths still fit.
    Cross,
    /// The target's helpers, the hand-over to a backend, the other library's kernel.
    Near,
    /// Everything else reached, by distance.
    Context,
}

/// One node to show, with the call lines that must stay visible if it is windowed.
struct Pick<'g> {
    graph: &'g InterfaceGraph,
    node: usize,
    tier: Tier,
    /// Shown whole, never windowed (the target).
    whole: bool,
    /// Shown as windows around `keep` whatever its size (a step on the path into the
    /// other library: only the call that leads on matters).
    compact: bool,
    /// Lines in the node that must be visible (calls to the next step of a chain).
    keep: Vec<u32>,
    /// Label override (base-form counterparts).
    note: Option<&'static str>,
    /// The part of the slice it is shown as.
    part: PiecePart,
}

/// Adds a node to show, or raises the tier (and part) of one already picked.
#[allow(clippy::too_many_arguments)]
fn add<'g>(
    picks: &mut Vec<Pick<'g>>,
    graph: &'g InterfaceGraph,
    node: usize,
    tier: Tier,
    part: PiecePart,
    whole: bool,
    keep: Vec<u32>,
    note: Option<&'static str>,
) {
    if let Some(p) = picks
        .iter_mut()
        .find(|p| std::ptr::eq(p.graph, graph) && p.node == node)
    {
        p.tier = p.tier.min(tier);
        p.part = p.part.min(part);
        p.whole |= whole;
        p.keep.extend(keep);
    } else {
        picks.push(Pick {
            graph,
            node,
            tier,
            whole,
            compact: false,
            keep,
            note,
            part,
        });
    }
}

/// Cuts one slice: the host chain from the entry point down to the target, the target
/// whole, then what the answer needs by relevance, within the budget.
///
/// `family_apis` are all the API names the slice stands for.
pub fn cut(
    g: &InterfaceGraph,
    family_apis: &[String],
    variant: &str,
    spec: CutSpec,
    indexes: &[&LibraryIndex],
    trees: &Trees,
    limits: SliceLimits,
) -> Result<Slice, SliceError> {
    let par = target::parents(g, spec.runs);
    let mut picks: Vec<Pick> = Vec::new();
    let mut focus = SliceFocus::default();
    add(
        &mut picks,
        g,
        0,
        Tier::Required,
        PiecePart::Path,
        false,
        vec![],
        None,
    );
    // The host chain down to the target (or, without one, to the first kernel or
    // hand-over), with the call lines that lead on.
    let aim = spec.target.or_else(|| {
        (1..g.nodes.len()).find(|&i| matches!(g.nodes[i].kind, NodeKind::Opaque | NodeKind::Kernel))
    });
    let chain: Vec<(usize, u32)> = match aim {
        Some(t) => target::path_to(&par, t),
        None => (0..g.nodes.len().min(2)).map(|i| (i, 0)).collect(),
    };
    for (k, &(i, line)) in chain.iter().enumerate() {
        if i == 0 || g.nodes[i].kind == NodeKind::Opaque || Some(i) == spec.target {
            continue;
        }
        // The launcher of the target shows every site that launches it (hemv's four
        // `rocblas_hemvn_kernel_lower_block_sum` launches, by pointer mode and index
        // width), not only the one the graph's edge names.
        let mut keep = vec![line];
        if let Some(&(t, _)) = chain.get(k + 1).filter(|(t, _)| Some(*t) == spec.target) {
            keep.extend(named_lines(trees, &g.nodes[i], &g.nodes[t].name));
        }
        add(
            &mut picks,
            g,
            i,
            Tier::Required,
            PiecePart::Path,
            false,
            keep,
            None,
        );
        focus.chain.push(g.nodes[i].name.clone());
    }
    // The argument checks the chain calls, and where it calls them.
    for &(c, _) in &chain {
        for e in g.edges.iter().filter(|e| e.from == c) {
            if target::is_arg_check(&g.nodes[e.to].name) && !g.nodes[e.to].file.is_empty() {
                add(
                    &mut picks,
                    g,
                    c,
                    Tier::Required,
                    PiecePart::Path,
                    false,
                    vec![e.line],
                    None,
                );
                add(
                    &mut picks,
                    g,
                    e.to,
                    Tier::Required,
                    PiecePart::Path,
                    false,
                    vec![],
                    None,
                );
                if focus.arg_check.is_empty() {
                    focus.arg_check = g.nodes[e.to].name.clone();
                    focus
                        .values
                        .insert("arg_check_site".into(), format!("{}:{}", e.file, e.line));
                }
            }
        }
    }
    // Hand-overs to a backend whose code is not in the tree: the call that hands over.
    // Beside a kernel target they are context, shown to the question that names them.
    let hand_over_part = if spec.target.is_some() {
        PiecePart::Context
    } else {
        PiecePart::Path
    };
    for o in (0..g.nodes.len())
        .filter(|&i| g.nodes[i].kind == NodeKind::Opaque)
        .take(2)
    {
        let path = target::path_to(&par, o);
        for w in path.windows(2) {
            let (i, line) = w[0];
            if i != 0 {
                add(
                    &mut picks,
                    g,
                    i,
                    Tier::Near,
                    hand_over_part,
                    false,
                    vec![line],
                    None,
                );
            }
        }
        if let Some(&(caller, line)) = path.iter().rev().nth(1) {
            if !focus.values.contains_key("hand_over") && caller != 0 {
                focus.values.insert(
                    "hand_over".into(),
                    format!(
                        "{} in {} ({}:{line})",
                        g.nodes[o].name, g.nodes[caller].name, g.nodes[caller].file
                    ),
                );
            }
        }
    }
    if let Some(t) = spec.target {
        add(
            &mut picks,
            g,
            t,
            Tier::Required,
            PiecePart::Target,
            true,
            vec![],
            None,
        );
        let n = &g.nodes[t];
        focus.target = n.name.clone();
        focus.target_range = format!("{}:{}-{}", n.file, n.start_line, n.end_line);
        focus.target_lines = target::lines_of(g, t);
        if let Some((l, line)) = par[t] {
            if g.nodes[l].kind != NodeKind::Api {
                // An edge stands for every site launching the kernel and is written at
                // the first; where that one sits in a branch this API never takes
                // (strsv's device-mode `alpha_exists` launches, rocblas_trsv_kernels.
                // cpp:846-854), the question names the first site it does reach.
                let launcher = &g.nodes[l];
                let dead = |x: u32| {
                    spec.runs
                        .is_some_and(|d| d.dead_line(&launcher.lib, &launcher.file, x))
                };
                let line = if dead(line) {
                    named_lines(trees, launcher, &n.name)
                        .into_iter()
                        .find(|&x| x > launcher.start_line && !dead(x))
                        .unwrap_or(line)
                } else {
                    line
                };
                focus.launcher = g.nodes[l].name.clone();
                focus
                    .values
                    .insert("launch_site".into(), format!("{}:{line}", g.nodes[l].file));
            }
        }
        // The launcher's own helpers size the launch (block counts, the batch grid's
        // limit): short functions that launch nothing themselves. A `_64` form cuts its
        // sizes into chunks a step further up (rocblas_internal_ger_launcher_64 moves
        // each chunk's pointers with `adjust_ptr_batch`): that step's helpers too.
        let mut sizers: Vec<usize> = Vec::new();
        if let Some((l, _)) = par[t].filter(|(l, _)| g.nodes[*l].kind != NodeKind::Api) {
            sizers.push(l);
            if variant == "64" && !g.nodes[l].name.ends_with("_64") {
                let mut up = par[l];
                while let Some((a, _)) = up.filter(|(a, _)| g.nodes[*a].kind != NodeKind::Api) {
                    if g.nodes[a].name.ends_with("_64") {
                        sizers.push(a);
                        break;
                    }
                    up = par[a];
                }
            }
        }
        for l in sizers {
            let helpers: Vec<usize> = g
                .edges
                .iter()
                .filter(|e| e.from == l && matches!(e.kind, EdgeKind::Call | EdgeKind::MacroCall))
                .map(|e| e.to)
                .filter(|&c| {
                    let n = &g.nodes[c];
                    n.kind == NodeKind::Function
                        && !n.file.is_empty()
                        && !target::is_noise(&n.name)
                        && !target::is_arg_check(&n.name)
                        && target::lines_of(g, c) <= 80
                        && !g
                            .edges
                            .iter()
                            .any(|e| e.from == c && e.kind == EdgeKind::Launch)
                })
                .collect();
            for c in dedup_overloads(g, &helpers, variant, trees) {
                add(
                    &mut picks,
                    g,
                    c,
                    Tier::Near,
                    PiecePart::Work,
                    false,
                    vec![],
                    None,
                );
            }
        }
        // The other pass of a two-pass kernel (iamax's `_part1` writes one value per
        // block, its `_part2` combines them; hemv's `_lower` writes partial sums its
        // `_lower_block_sum` adds): how results combine across blocks, or what the
        // second pass reads, is that kernel's work.
        if let Some((l, _)) = par[t].filter(|(l, _)| g.nodes[*l].kind != NodeKind::Api) {
            let own = pass_stem(&g.nodes[t].name);
            let first_launch = |k: usize| {
                g.edges
                    .iter()
                    .filter(|e| e.from == l && e.kind == EdgeKind::Launch && e.to == k)
                    .map(|e| e.line)
                    .min()
                    .unwrap_or(u32::MAX)
            };
            let mut passes: Vec<usize> = g
                .edges
                .iter()
                .filter(|e| e.from == l && e.kind == EdgeKind::Launch && e.to != t)
                .map(|e| e.to)
                .filter(|&k| {
                    g.nodes[k].name != g.nodes[t].name
                        && (pass_stem(&g.nodes[k].name) == own)
                        && (g.nodes[k].name != own || g.nodes[t].name != own)
                })
                .collect();
            passes.dedup();
            for &k in &passes {
                add(
                    &mut picks,
                    g,
                    k,
                    Tier::Near,
                    PiecePart::Context,
                    true,
                    vec![],
                    None,
                );
            }
            if let Some(&k) = passes.first() {
                let key = if first_launch(k) < first_launch(t) {
                    "first_pass"
                } else {
                    "second_pass"
                };
                focus.values.insert(key.into(), g.nodes[k].name.clone());
            }
        }
        // What the target calls, nearest first; one overload per name.
        for c in dedup_overloads(g, &target::callees(g, t), variant, trees) {
            if !target::is_noise(&g.nodes[c].name) {
                // Device helpers do the target's math: shown whole, like the target.
                let whole = g.nodes[c].kind == NodeKind::DeviceHelper;
                add(
                    &mut picks,
                    g,
                    c,
                    Tier::Near,
                    PiecePart::Work,
                    whole,
                    vec![],
                    None,
                );
            }
        }
    }
    // A rocSOLVER slice shows a rocBLAS kernel it reaches, with the path there: of the
    // kernels it launches, one doing work (not a utility) that costs least to show.
    let cross = target::kernels_by_work(g)
        .into_iter()
        .filter(|&k| {
            g.nodes[k].lib != g.lib
                && target::lines_of(g, k) <= 200
                && spec.runs.is_none_or(|d| !d.kernels.contains_key(&k))
                && par[k].is_some()
        })
        .min_by_key(|&k| {
            let path = target::path_to(&par, k);
            // Other-library steps are shown as windows (~30 lines each), the kernel whole.
            let steps = path
                .iter()
                .filter(|(i, _)| *i != k && g.nodes[*i].lib != g.lib)
                .count() as u32;
            // A `_64` slice shows the other library's `_64` path where it has one: what
            // tells its form apart.
            let wide = path.iter().any(|(i, _)| {
                let n = &g.nodes[*i];
                n.lib != g.lib && (n.name.ends_with("_64") || n.file.contains("src64/"))
            });
            (
                target::is_utility_kernel(g, k),
                variant == "64" && !wide,
                steps * 30 + target::lines_of(g, k),
            )
        });
    if let Some(k) = cross {
        for (i, line) in target::path_to(&par, k) {
            if i == 0 {
                continue;
            }
            if g.nodes[i].lib == g.lib {
                add(
                    &mut picks,
                    g,
                    i,
                    Tier::Required,
                    PiecePart::Cross,
                    false,
                    vec![line],
                    None,
                );
            } else {
                add(
                    &mut picks,
                    g,
                    i,
                    Tier::Cross,
                    PiecePart::Cross,
                    i == k,
                    vec![line],
                    None,
                );
                if let Some(p) = picks
                    .iter_mut()
                    .find(|p| std::ptr::eq(p.graph, g) && p.node == i)
                {
                    p.compact = i != k && p.tier == Tier::Cross;
                }
            }
        }
    }
    // A variant shows the base form of each chain function it does not share.
    if let Some(b) = spec.base {
        let base_ids: BTreeSet<&str> = b.nodes.iter().map(|n| n.id.as_str()).collect();
        // A counterpart the variant's chain itself calls (trsv's `_64` template calls
        // the 32-bit one, which launches the kernel) is a step of the path: shown as
        // one, not as base-form code only variant questions see.
        let chain_ids: BTreeSet<&str> =
            chain.iter().map(|&(i, _)| g.nodes[i].id.as_str()).collect();
        let base_part = |j: usize| {
            if chain_ids.contains(b.nodes[j].id.as_str()) {
                (PiecePart::Path, None)
            } else {
                (PiecePart::Base, Some("base form"))
            }
        };
        let mut same_name: Option<String> = None;
        for &(i, _) in &chain {
            let n = &g.nodes[i];
            if i == 0 || n.kind != NodeKind::Function || base_ids.contains(n.id.as_str()) {
                continue;
            }
            let stem = strip_variant(&n.name);
            let found = b.nodes.iter().position(|m| {
                m.kind == NodeKind::Function && strip_variant(&m.name) == stem && m.id != n.id
            });
            if let Some(j) = found {
                // One function built twice (`rocblas_iamax_impl` with 32- and 64-bit
                // integers) differs only in types: the function of its own
                // (`rocblas_internal_iamax_template_64`) is what a question compares,
                // the same name only when there is none.
                if b.nodes[j].name == n.name && same_name.is_none() {
                    same_name = Some(b.nodes[j].name.clone());
                }
                if focus.variant_impl.is_empty()
                    && role_of(g, i) != PieceRole::Entry
                    && b.nodes[j].name != n.name
                {
                    focus.variant_impl = n.name.clone();
                    // The counterpart a question compares it with: first in the list.
                    focus.base_counterparts.insert(0, b.nodes[j].name.clone());
                    let (part, note) = base_part(j);
                    add(&mut picks, b, j, Tier::Required, part, false, vec![], note);
                    continue;
                }
                let (part, note) = base_part(j);
                add(&mut picks, b, j, Tier::Required, part, false, vec![], note);
                focus.base_counterparts.push(b.nodes[j].name.clone());
            }
        }
        if let (true, Some(name)) = (focus.variant_impl.is_empty(), same_name) {
            focus.base_counterparts.retain(|x| *x != name);
            focus.base_counterparts.insert(0, name.clone());
            focus.variant_impl = name;
        }
    }
    // The kernels either side of the chain's first size threshold selects (saxpy's
    // `batch_count <= 8192` picks rocblas_saxpy_2_kernel or the batched kernel): a
    // threshold question asks what each side selects and why, which their bodies
    // answer. Context, so only the question that asks sees them.
    let mut threshold_kernels: Vec<(usize, Vec<String>)> = Vec::new();
    for &(i, _) in chain.iter().filter(|&&(i, _)| i != 0) {
        if threshold_kernels.len() == 2 {
            break;
        }
        let n = &g.nodes[i];
        if n.kind != NodeKind::Function || n.file.is_empty() {
            continue;
        }
        let Ok(lines) = trees.lines(&n.lib, &n.file) else {
            continue;
        };
        let dead = |l: u32| spec.runs.is_some_and(|d| d.dead_line(&n.lib, &n.file, l));
        if values::threshold_line(&lines, n.start_line.max(1), n.end_line, &dead).is_none() {
            continue;
        }
        let steps: Vec<usize> = std::iter::once(i)
            .chain(
                g.edges
                    .iter()
                    .filter(|e| e.from == i && e.kind == EdgeKind::Call)
                    .map(|e| e.to)
                    .filter(|&c| !target::is_arg_check(&g.nodes[c].name)),
            )
            .collect();
        let mut kernels: Vec<usize> = Vec::new();
        for e in g
            .edges
            .iter()
            .filter(|e| steps.contains(&e.from) && e.kind == EdgeKind::Launch)
        {
            let dead = spec.runs.is_some_and(|d| {
                d.kernels.contains_key(&e.to)
                    || d.dead_launches.contains(&(e.file.clone(), e.line, e.to))
            });
            if !kernels.contains(&e.to) && !dead && Some(e.to) != spec.target && kernels.len() < 3 {
                kernels.push(e.to);
            }
        }
        for &k in &kernels {
            add(
                &mut picks,
                g,
                k,
                Tier::Required,
                PiecePart::Context,
                false,
                vec![],
                None,
            );
        }
        let names = kernels.iter().map(|&k| g.nodes[k].name.clone()).collect();
        threshold_kernels.push((i, names));
    }
    // The first launch, where a call off the path makes it before the path goes on:
    // rocSOLVER's impls launch `iota_n` from `init_scalars` before the template that
    // leads to the target. A question about what happens before the first launch is
    // told which it is and shown it.
    if let Some((c, e)) = first_launch_off_path(g, &chain, spec.runs, trees) {
        add(
            &mut picks,
            g,
            e.to,
            Tier::Required,
            PiecePart::Context,
            false,
            vec![],
            None,
        );
        let n = &g.nodes[c];
        focus
            .values
            .insert("first_launch".into(), g.nodes[e.to].name.clone());
        focus
            .values
            .insert("first_launch_site".into(), format!("{}:{}", e.file, e.line));
        // Called only when a workspace size is not zero (`if(size_scalars > 0)`): the
        // size query that sets it decides whether the launch happens at all.
        if let Ok(lines) = trees.lines(&n.lib, &n.file) {
            let at = |l: u32| lines.get(l as usize - 1).map(String::as_str).unwrap_or("");
            let guard = format!("{} {}", at(e.line - 1), at(e.line));
            let sized = size_word(&guard);
            let query = sized.as_ref().and_then(|w| {
                g.edges
                    .iter()
                    .filter(|q| q.from == c && is_size_query(&g.nodes[q.to].name))
                    .find(|q| (q.line..q.line + 3).any(|l| at(l).contains(&format!("&{w}"))))
                    .map(|q| g.nodes[q.to].name.clone())
            });
            if let (Some(w), Some(q)) = (sized, query) {
                focus.values.insert("first_launch_guard".into(), w);
                focus.values.insert("first_launch_size_query".into(), q);
            }
        }
    }
    // The size queries the chain calls and the ones they call in turn (sygvdj's
    // getMemorySize is the maximum of four others): a workspace answer computes the
    // size from their bodies.
    let is_size_query = |i: usize| is_size_query(&g.nodes[i].name);
    let mut queries: Vec<usize> = g
        .edges
        .iter()
        .filter(|e| chain.iter().any(|&(c, _)| c == e.from) && is_size_query(e.to))
        .map(|e| e.to)
        .collect();
    let mut k = 0;
    while k < queries.len() && queries.len() < 12 {
        let q = queries[k];
        for e in g
            .edges
            .iter()
            .filter(|e| e.from == q && is_size_query(e.to))
        {
            if !queries.contains(&e.to) {
                queries.push(e.to);
            }
        }
        k += 1;
    }
    // The calls the chain hands the workspace buffers to (`init_scalars(handle,
    // (T*)scalars)`, `rocblasCall_gemv(..., scalars, ..., workArr)`): how the buffers
    // are passed down is what they do with them. Buffers are named by the sizes the
    // chain's size query sets (`&size_scalars` -> `scalars`).
    let users = workspace_users(g, &chain, trees);
    for q in queries.into_iter().chain(users.iter().copied()) {
        add(
            &mut picks,
            g,
            q,
            Tier::Near,
            PiecePart::Context,
            false,
            vec![],
            None,
        );
    }
    if !users.is_empty() {
        let names: Vec<String> = users.iter().map(|&u| g.nodes[u].name.clone()).collect();
        focus
            .values
            .insert("workspace_users".into(), names.join(", "));
    }
    // The rest of what the graph reaches, by distance: context.
    let rest: Vec<usize> = (1..g.nodes.len())
        .filter(|&i| !g.nodes[i].file.is_empty() && !target::is_noise(&g.nodes[i].name))
        .collect();
    for c in dedup_overloads(g, &rest, variant, trees) {
        add(
            &mut picks,
            g,
            c,
            Tier::Context,
            PiecePart::Context,
            false,
            vec![],
            None,
        );
    }

    // Fill: required pieces up to twice the budget (an L3 question needs room), the
    // near ones while under the budget or the required part plus a margin, context
    // while under the budget.
    let hard_cap = limits.required_tokens();
    // Numerics checking is the same for every API: its code stays out of slices.
    let computing = g.reachable_without(EdgeKind::CheckNumerics);
    let base_computing = spec
        .base
        .map(|b| b.reachable_without(EdgeKind::CheckNumerics));
    picks.retain(|p| {
        let reach = if std::ptr::eq(p.graph, g) {
            Some(&computing)
        } else {
            base_computing.as_ref()
        };
        reach.is_none_or(|r| r.get(p.node).copied().unwrap_or(true))
    });
    let mut order: Vec<usize> = (0..picks.len()).collect();
    order.sort_by_key(|&k| (picks[k].tier, picks[k].graph.nodes[picks[k].node].depth, k));
    let mut seen_ranges = BTreeSet::new();
    let mut pieces: Vec<(usize, SlicePiece)> = Vec::new();
    let mut omitted = Vec::new();
    // Each part has an allowance of its own: a question is shown some parts only
    // (see `question::view`), so the target's work does not compete with code that
    // other questions need.
    let allowance = |part: PiecePart| match part {
        PiecePart::Path | PiecePart::Target => (0, hard_cap),
        // Only variant questions see base-form code: it never crowds out a step of
        // the path (syr2k_64's dispatch, which launches the kernel, was left out).
        PiecePart::Base => (4, hard_cap),
        PiecePart::Work => (1, hard_cap),
        PiecePart::Cross => (2, hard_cap),
        PiecePart::Context => (3, limits.budget_tokens),
    };
    let mut used_by = [0usize; 5];
    let mut used = 0usize;
    // The target shares its allowance with the path, which is placed first: a long
    // path (gebrd's four host steps above larfg_kernel_small) is cut to windows
    // before it crowds out the kernel every question of the slice is about.
    let mut target_reserve = picks
        .iter()
        .find(|p| p.part == PiecePart::Target)
        .and_then(|p| {
            let n = &p.graph.nodes[p.node];
            let lines = trees.lines(&n.lib, &n.file).ok()?;
            let (a, b) = (n.start_line.max(1), n.end_line.max(n.start_line));
            Some(count_tokens(&numbered(&lines, a, b)))
        })
        .unwrap_or(0);
    for k in order {
        let pk = &picks[k];
        let (pg, i) = (pk.graph, pk.node);
        let n = &pg.nodes[i];
        if n.file.is_empty() {
            continue;
        }
        let role = role_of(pg, i);
        let lines = trees.lines(&n.lib, &n.file)?;
        let (start, mut end) = (n.start_line.max(1), n.end_line.max(n.start_line));
        if !seen_ranges.insert((n.lib.clone(), n.file.clone(), start, end)) {
            // One function picked twice (a size query the chain calls and a helper of
            // the launcher) is shown as the part that shows it most.
            for (_, p) in pieces.iter_mut().filter(|(_, p)| {
                p.lib == n.lib
                    && p.file == n.file
                    && p.name == n.name
                    && start <= p.start
                    && p.end <= end
            }) {
                p.part = p.part.min(pk.part);
            }
            continue;
        }
        let (pool, cap) = allowance(pk.part);
        // The target may go past its allowance by half: a slice without the kernel its
        // questions are about asks nothing (the path's windows leave it a reserve, not
        // always enough).
        let cap = if pk.part == PiecePart::Target {
            cap + cap / 2
        } else {
            cap
        };
        tracing::trace!(piece = %n.name, part = ?pk.part, used = used_by[pool], cap, "Placing.");
        if used_by[pool] >= cap {
            omitted.push(omission(n, &lines, start, end, used_by[pool], cap, pk.part));
            continue;
        }
        let mut start = start;
        if role == PieceRole::Declaration {
            end = (start..=(start + 40).min(lines.len() as u32))
                .find(|&l| lines.get(l as usize - 1).is_some_and(|t| t.contains(';')))
                .unwrap_or(start);
            start = doc_comment_start(&lines, start);
        }
        let expanded = expanded_text(indexes, &n.lib, &n.file, n.line, &n.name);
        let label = pk.note.map_or(role.label().to_string(), |x| {
            format!("{}, {x}", role.label())
        });
        let mut ranges = vec![(start, end)];
        if role == PieceRole::Declaration && start == n.start_line {
            if let Some(doc) = group_doc_comment(&lines, start) {
                ranges.insert(0, doc);
            }
        }
        let whole = block(n, &label, &lines, start, end, expanded.as_deref());
        let whole_tokens = count_tokens(&whole);
        // A step of the path that does not fit whole in what is left is shown as
        // windows around the call that leads on: a chain missing a step is no chain.
        let squeezed = pk.part == PiecePart::Path
            && !pk.keep.is_empty()
            && used_by[allowance(pk.part).0] + whole_tokens + target_reserve > allowance(pk.part).1;
        if !pk.whole && (pk.compact || squeezed || whole_tokens > limits.max_piece_tokens) {
            // A size or architecture test in a branch the API never takes is no choice of
            // its own: its window would only show dead code.
            let dead = |l: u32| spec.runs.is_some_and(|d| d.dead_line(&n.lib, &n.file, l));
            ranges = windows(&lines, start, end, &pk.keep, &dead);
        }
        let render = |ranges: &[(u32, u32)]| -> Vec<(u32, u32, String)> {
            let mut texts = Vec::new();
            for (k2, &(a, b)) in ranges.iter().enumerate() {
                let x = if ranges.len() == 1 && (a, b) == (start, end) {
                    whole.clone()
                } else {
                    let mut t = block(
                        n,
                        &label,
                        &lines,
                        a,
                        b,
                        (k2 == 0).then_some(()).and(expanded.as_deref()),
                    );
                    if k2 + 1 == ranges.len() && b < end {
                        t.push_str(&format!("// ... lines {}-{end} not shown\n", b + 1));
                    }
                    t
                };
                texts.push((a, b, x));
            }
            texts
        };
        let mut texts = render(&ranges);
        // A step of the path that does not fit with its tests shown fits with the calls
        // that lead on alone (herk_64's 400-line `rocblas_syrkx_herkx_dispatch`): a
        // chain missing a step is no chain.
        let over = |texts: &[(u32, u32, String)]| {
            used_by[pool] + texts.iter().map(|(_, _, t)| count_tokens(t)).sum::<usize>() > cap
        };
        // Cut to those, it may pass the allowance by half, as the target may.
        let mut cap = cap;
        if over(&texts) && pk.part == PiecePart::Path && !pk.keep.is_empty() && !pk.whole {
            texts = render(&calls_only(&lines, start, end, &pk.keep));
            cap += cap / 2;
        }
        let tokens: usize = texts.iter().map(|(_, _, t)| count_tokens(t)).sum();
        if used_by[pool] + tokens > cap {
            omitted.push(OmittedPiece {
                name: n.name.clone(),
                lib: n.lib.clone(),
                file: n.file.clone(),
                start,
                end,
                tokens,
                reason: format!(
                    "over the slice budget ({} of {cap} tokens used)",
                    used_by[pool]
                ),
                part: pk.part,
            });
            continue;
        }
        used += tokens;
        used_by[pool] += tokens;
        if pk.part == PiecePart::Target {
            target_reserve = 0;
        }
        for (a, b, text) in texts {
            let t = count_tokens(&text);
            pieces.push((
                k,
                SlicePiece {
                    role,
                    name: n.name.clone(),
                    lib: n.lib.clone(),
                    file: n.file.clone(),
                    start: a,
                    end: b,
                    sha256: lines_hash(&lines, a, b),
                    depth: n.depth,
                    tokens: t,
                    text,
                    part: pk.part,
                },
            ));
        }
    }
    // The functors and constants the path and the target's work name: part of the work.
    if let Some(defs) = spec.defs {
        let texts: Vec<&str> = pieces
            .iter()
            .filter(|(_, p)| p.part <= PiecePart::Work)
            .map(|(_, p)| p.text.as_str())
            .collect();
        let files: BTreeSet<(&str, &str)> = pieces
            .iter()
            .map(|(_, p)| (p.lib.as_str(), p.file.as_str()))
            .collect();
        let mut found: Vec<(definitions::Definition, PiecePart)> = defs
            .named_in(&texts, &g.lib, &files, trees)
            .into_iter()
            .map(|d| (d, PiecePart::Work))
            .collect();
        // Calls of the path written inside a macro: the macro is how the code reads.
        let shown_nodes: BTreeSet<usize> = pieces
            .iter()
            .filter(|(k, p)| {
                p.part <= PiecePart::Work && *k != usize::MAX && std::ptr::eq(picks[*k].graph, g)
            })
            .map(|(k, _)| picks[*k].node)
            .collect();
        let steps: Vec<(&str, &str, &str, bool)> = g
            .edges
            .iter()
            .filter(|e| shown_nodes.contains(&e.from) && shown_nodes.contains(&e.to))
            .filter_map(|e| {
                let m = e.via_macro.as_deref()?;
                let entry = e.kind == EdgeKind::Entry
                    || g.edges
                        .iter()
                        .any(|x| x.to == e.from && x.kind == EdgeKind::Entry);
                Some((m, g.nodes[e.to].name.as_str(), e.file.as_str(), entry))
            })
            .collect();
        // The macros stamping the entry points answer the question on the variants
        // only, which names them: context. A returning macro is an exit of the path,
        // shown with it (a quick-return question is shown the path only).
        let mut stamping = Vec::new();
        for (d, used) in defs.statement_macros(&steps, &texts, &g.lib, &files, trees) {
            let part = match used {
                definitions::MacroUse::Stamps => {
                    stamping.push(d.name.clone());
                    PiecePart::Context
                }
                definitions::MacroUse::Step => PiecePart::Work,
                definitions::MacroUse::Returns => PiecePart::Path,
            };
            found.push((d, part));
        }
        if !stamping.is_empty() {
            focus.values.insert("stamping".into(), stamping.join(", "));
        }
        for (d, part) in found {
            let lines = trees.lines(&d.lib, &d.file)?;
            if !seen_ranges.insert((d.lib.clone(), d.file.clone(), d.start, d.end)) {
                continue;
            }
            let node = crate::model::GraphNode {
                id: String::new(),
                name: d.name.clone(),
                kind: NodeKind::Function,
                lib: d.lib.clone(),
                file: d.file.clone(),
                line: d.start,
                start_line: d.start,
                end_line: d.end,
                depth: 0,
                note: None,
            };
            let text = block(
                &node,
                PieceRole::Definition.label(),
                &lines,
                d.start,
                d.end,
                None,
            );
            let tokens = count_tokens(&text);
            // An allowance of their own: a few lines each, never crowded out by the
            // helpers picked before them.
            let (pool, cap) = (4, limits.budget_tokens / 2);
            if used_by[pool] + tokens > cap {
                omitted.push(omission(
                    &node,
                    &lines,
                    d.start,
                    d.end,
                    used_by[pool],
                    cap,
                    part,
                ));
                continue;
            }
            used += tokens;
            used_by[pool] += tokens;
            pieces.push((
                usize::MAX,
                SlicePiece {
                    role: PieceRole::Definition,
                    name: d.name,
                    lib: d.lib,
                    file: d.file,
                    start: d.start,
                    end: d.end,
                    sha256: lines_hash(&lines, d.start, d.end),
                    depth: 0,
                    tokens,
                    text,
                    part,
                },
            ));
        }
    }
    // The other library's kernel is named to questions only when it is shown; that it
    // was reached is kept either way.
    if let Some(k) = cross {
        let n = &g.nodes[k];
        focus
            .values
            .insert("cross_reached".into(), format!("{}:{}", n.lib, n.name));
        if pieces
            .iter()
            .any(|(_, p)| p.name == n.name && p.lib == n.lib)
        {
            focus.cross_kernel = n.name.clone();
        }
    }
    // Back to call order (pick order: declaration, chain, target, helpers) for reading,
    // the parts every question is shown first, so views share their prefix.
    let later = |p: &SlicePiece| p.part > PiecePart::Work;
    pieces.sort_by_key(|(k, p)| (later(p), *k, p.start));
    let pieces: Vec<SlicePiece> = pieces.into_iter().map(|(_, p)| p).collect();
    let device: BTreeSet<&str> = match spec.target {
        Some(t) => std::iter::once(t)
            .chain(target::callees(g, t))
            .map(|i| g.nodes[i].name.as_str())
            .collect(),
        None => BTreeSet::new(),
    };
    let features = features_of(&pieces, g, family_apis, spec.target.map(|_| &device));
    let mut chain_files: BTreeSet<String> = pieces
        .iter()
        .filter(|p| focus.chain.contains(&p.name) || p.name == focus.target)
        .map(|p| p.file.clone())
        .collect();
    chain_files.retain(|f| !f.is_empty());
    focus.chain_files = chain_files.into_iter().collect();
    values::read(&mut focus, &pieces, trees, g, spec.target, spec.runs);
    // Named for the threshold question only where the threshold it asks about is the
    // one these kernels were picked for.
    tracing::debug!(
        slice = %g.api.name,
        site = ?focus.values.get("threshold_site"),
        kernels = ?threshold_kernels.iter().map(|(i, k)| (&g.nodes[*i].name, k)).collect::<Vec<_>>(),
        "Threshold kernels."
    );
    if let Some(site) = focus.values.get("threshold_site").cloned() {
        let holds_site = |i: usize| {
            let n = &g.nodes[i];
            site.rsplit_once(':').is_some_and(|(f, l)| {
                f == n.file
                    && l.parse::<u32>()
                        .is_ok_and(|l| n.start_line <= l && l <= n.end_line)
            })
        };
        if let Some((_, names)) = threshold_kernels
            .iter()
            .find(|(i, names)| holds_site(*i) && !names.is_empty())
        {
            focus
                .values
                .insert("threshold_kernels".into(), names.join(", "));
        }
    }
    let files: BTreeSet<(&str, &str)> = pieces
        .iter()
        .filter(|p| p.role != PieceRole::Declaration)
        .map(|p| (p.lib.as_str(), p.file.as_str()))
        .collect();
    let code_pieces = pieces
        .iter()
        .filter(|p| p.role != PieceRole::Declaration)
        .count();
    let difficulty = match (files.len(), code_pieces) {
        (0..=1, 0..=2) => "L1",
        (0..=1, _) => "L2",
        _ => "L3",
    };
    Ok(Slice {
        id: slice_id(&g.lib, &g.version, &g.api.family, variant),
        lib: g.lib.clone(),
        version: g.version.clone(),
        family: g.api.family.clone(),
        variant: variant.to_string(),
        api: g.api.name.clone(),
        apis: family_apis.to_vec(),
        call_path: g
            .nodes
            .iter()
            .filter(|n| n.kind != NodeKind::Api)
            .map(|n| n.name.clone())
            .collect(),
        pieces,
        omitted,
        features,
        difficulty: difficulty.to_string(),
        tokens: used,
        focus,
    })
}

/// A name without its variant suffixes and infixes, to pair a variant function with
/// its base form (`..._strided_batched_impl` with `..._impl`).
fn strip_variant(name: &str) -> String {
    let mut n = name.to_string();
    for v in ["_strided_batched", "_batched", "_64"] {
        n = n.replace(v, "");
    }
    n
}

/// The lines of node `n`'s body, comments aside, that name `name` as a word: for a
/// launcher and its kernel, the launch sites (the name on the `ROCBLAS_LAUNCH_KERNEL(`
/// line or the one after it) and any other mention, each kept in a window.
fn named_lines(trees: &Trees, n: &crate::model::GraphNode, name: &str) -> Vec<u32> {
    let Ok(lines) = trees.lines(&n.lib, &n.file) else {
        return Vec::new();
    };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    (n.start_line + 1..=n.end_line)
        .filter(|&l| {
            let text = lines.get(l as usize - 1).map(String::as_str).unwrap_or("");
            !text.trim_start().starts_with("//")
                && text.match_indices(name).any(|(i, _)| {
                    !text[..i].ends_with(word) && !text[i + name.len()..].starts_with(word)
                })
        })
        .collect()
}

/// One overload per name among `nodes` (calls resolve by name, so a helper's whole
/// overload set is reached): the one whose text fits the slice's precision and form.
fn dedup_overloads(
    g: &InterfaceGraph,
    nodes: &[usize],
    variant: &str,
    trees: &Trees,
) -> Vec<usize> {
    let complex_slice = variant == "complex" || g.api.precision == "c" || g.api.precision == "z";
    let any_type = variant == "ex" || g.api.precision.is_empty();
    let batched = variant.contains("batched") && !variant.contains("strided");
    // The template header and the signature, up to the body's brace (rot's
    // `enable_if_t` sits on the seventh line of its template header).
    let head_of = |i: usize| -> String {
        let n = &g.nodes[i];
        let Ok(lines) = trees.lines(&n.lib, &n.file) else {
            return String::new();
        };
        let open = (n.start_line..=(n.start_line + 12).min(n.end_line))
            .find(|&l| lines.get(l as usize - 1).is_some_and(|t| t.contains('{')))
            .unwrap_or((n.start_line + 4).min(n.end_line));
        (n.start_line..=open)
            .filter_map(|l| lines.get(l as usize - 1))
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let score = |i: usize| -> i32 {
        let head = head_of(i);
        // `enable_if_t<!rocblas_is_complex<T>, int>` marks the real-only overload.
        let real_only = head.contains("!rocblas_is_complex") || head.contains("!is_complex");
        let is_complex = !real_only && head.contains("complex");
        // A form that takes its types as arguments (`rocblas_rot_ex`) runs both.
        let mut s = if is_complex == complex_slice || any_type {
            2
        } else {
            0
        };
        let ptr_array =
            head.contains("* const*") || head.contains("*const*") || head.contains("* const *");
        if ptr_array == batched {
            s += 1;
        }
        s
    };
    let mut best: Vec<(String, usize, i32)> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    for &i in nodes {
        let name = &g.nodes[i].name;
        let sc = score(i);
        match best.iter_mut().find(|(n, _, _)| n == name) {
            Some(b) if sc > b.2 => {
                b.1 = i;
                b.2 = sc;
            }
            Some(_) => {}
            None => {
                best.push((name.clone(), i, sc));
                order.push(name.clone());
            }
        }
    }
    // Overloads of a few lines that fit as well as the chosen one are shown beside it:
    // which one runs may turn on how the caller passes an argument (`load_scalar`'s
    // by-value form in host pointer mode, its pointer form in device mode).
    // Where the API's types are arguments, each type's overload of a helper runs.
    let few = if any_type { 40 } else { 6 };
    let tiny = |i: usize| g.nodes[i].end_line.saturating_sub(g.nodes[i].start_line) <= few;
    // Overloads told apart by a constraint on a template value, not by the element
    // type (trsv's `rocblas_trsv_invert` for `equals_two<N>` and for `!equals_two<N>`):
    // a recursion runs both, so both are shown.
    let by_value = |i: usize| {
        let h = head_of(i);
        h.contains("enable_if") && !h.contains("complex")
    };
    let mut out = Vec::new();
    for (name, i, sc) in best {
        out.push(i);
        if by_value(i) {
            for &j in nodes {
                if j != i
                    && g.nodes[j].name == name
                    && g.nodes[j].file == g.nodes[i].file
                    && !out.contains(&j)
                    && by_value(j)
                    && score(j) == sc
                {
                    out.push(j);
                }
            }
        }
        if !tiny(i) {
            continue;
        }
        let mut seen = vec![i];
        for &j in nodes {
            if g.nodes[j].name == name
                && g.nodes[j].file == g.nodes[i].file
                && !seen.contains(&j)
                && tiny(j)
                && score(j) >= sc
            {
                seen.push(j);
                out.push(j);
            }
        }
    }
    out
}

/// The first line of the doc comment right above a declaration (or the declaration's
/// own line when there is none), at most 200 lines up (rocSOLVER documents an API in up to ~150).
fn doc_comment_start(lines: &[String], decl: u32) -> u32 {
    let mut l = decl.saturating_sub(1);
    while l >= 1 && lines[l as usize - 1].trim().is_empty() {
        l -= 1;
    }
    if l == 0 || !lines[l as usize - 1].trim_end().ends_with("*/") {
        return decl;
    }
    let stop = decl.saturating_sub(200).max(1);
    let mut k = l;
    while k >= stop {
        if lines[k as usize - 1].trim_start().starts_with("/*") {
            return k;
        }
        k -= 1;
    }
    decl
}

/// A kernel's name without the word naming its pass (`_part1`, `_part2`, `_block_sum`):
/// two kernels one launcher launches with one stem are two passes of one computation.
fn pass_stem(name: &str) -> &str {
    ["_part1", "_part2", "_block_sum"]
        .iter()
        .find_map(|w| name.strip_suffix(w))
        .unwrap_or(name)
}

/// The doc comment of the group a declaration sits in, when the declaration has none of
/// its own: rocBLAS documents `dot`, `dotu` and `dotc` once, in a `/*! @{` comment above
/// the first of a dozen declarations (rocblas-functions.h:669-702 for :735).
fn group_doc_comment(lines: &[String], decl: u32) -> Option<(u32, u32)> {
    let at = |k: u32| lines[k as usize - 1].trim();
    let stop = decl.saturating_sub(400).max(1);
    let mut k = decl.checked_sub(1)?;
    while k >= stop {
        let t = at(k);
        if t.contains("@}") || t.contains('{') || t.contains('}') {
            return None;
        }
        if t.ends_with("*/") {
            let open = (stop..=k).rev().find(|&x| at(x).starts_with("/*"))?;
            let comment = (open..=k).any(|x| at(x).contains("@{"));
            return comment.then_some((open, k));
        }
        k -= 1;
    }
    None
}

/// Ranges of an oversized function to show: its head (signature), a window around each
/// call that leads on and around the first tests that choose a path by size or
/// architecture, merged where they overlap.
fn windows(
    lines: &[String],
    start: u32,
    end: u32,
    keep: &[u32],
    dead: &dyn Fn(u32) -> bool,
) -> Vec<(u32, u32)> {
    let mut r = vec![(start, head_end(lines, start, end))];
    let mut ks: Vec<u32> = keep
        .iter()
        .copied()
        .filter(|&l| l > start && l <= end)
        .collect();
    ks.sort_unstable();
    for l in ks {
        r.push((l.saturating_sub(12).max(start), (l + 6).min(end)));
        // The tests of the blocks it sits in, however far above: hemv's launch of its
        // block-sum kernel is chosen by `uplo` and size tests a hundred lines up. Each
        // test brings the lines defining the locals it reads (syevj's `bool const
        // use_offd_kernel_org = (n <= n_threshold)`) and, for an `if`, the first launch
        // of each of its branches: what the path takes instead.
        for (a, b) in enclosing_headers(lines, start, l) {
            r.push((a.max(start), b.min(end)));
            let test = code_of(lines, a, b);
            // And the locals those definitions read, one step further
            // (`n_threshold = 1024` behind `use_offd_kernel_org`).
            for (d, e) in local_definitions(lines, start, a, &test) {
                r.push((d, e));
                let def = code_of(lines, d, e);
                let rhs = def.split_once('=').map_or("", |(_, r)| r);
                r.extend(local_definitions(lines, start, d, rhs));
            }
            let opens_if = lines
                .get(a as usize - 1)
                .is_some_and(|t| t.trim_start().starts_with("if"));
            if opens_if {
                for (_, launch) in branch_launches(lines, a, end) {
                    if let Some(f) = launch.filter(|f| !dead(*f)) {
                        r.push((f.saturating_sub(2).max(start), (f + 2).min(end)));
                    }
                }
            }
        }
    }
    // The tests that choose a path by size or architecture, with what each side selects:
    // performance questions ask about them. What a side selects is its first launch,
    // however far into the branch (hemv's gfx908 kernels, twenty lines into a branch of
    // 130), and the constants the branch opens with.
    let live = |l: &u32| !dead(*l) && lines.get(*l as usize - 1).is_some();
    let tests: Vec<u32> = ((start + 1)..=end)
        .filter(|l| live(l) && values::selects_path(&lines[*l as usize - 1]))
        .take(3)
        .chain(
            ((start + 1)..=end)
                .filter(|l| live(l) && values::tests_arch(&lines[*l as usize - 1]))
                .take(3),
        )
        .collect();
    // The lines that cap the grid (gemv's `batches = handle->getBatchGridDim(...)`): a
    // grid-limit question asks how the launch stays within them.
    for l in ((start + 1)..=end)
        .filter(|l| live(l) && values::limits_grid(&lines[*l as usize - 1]))
        .take(2)
    {
        r.push((l.saturating_sub(1).max(start), (l + 2).min(end)));
    }
    for l in tests {
        r.push((l.saturating_sub(1).max(start), (l + 8).min(end)));
        for (open, launch) in branch_launches(lines, l, end) {
            // A lone `{` shows the `else` above it.
            let first = if lines[open as usize - 1].trim() == "{" {
                open - 1
            } else {
                open
            };
            r.push((first.max(start), (open + 8).min(end)));
            if let Some(f) = launch {
                r.push((f.saturating_sub(2).max(start), (f + 4).min(end)));
            }
        }
        // Where an architecture is read into a name (`bool is_gfx908 = handle->getArch()
        // == 908`), the line that reads it.
        for name in values::arch_names(&lines[l as usize - 1]) {
            let def = format!("{name} =");
            if let Some(d) = (start + 1..l).find(|&d| lines[d as usize - 1].contains(&def)) {
                r.push((d, d));
            }
        }
    }
    merged(r)
}

/// Lines `a..=b` joined by spaces, their `//` comments dropped.
fn code_of(lines: &[String], a: u32, b: u32) -> String {
    (a..=b)
        .filter_map(|x| lines.get(x as usize - 1))
        .map(|t| t.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The least of an oversized function a chain can show: its head, and a window around
/// each call that leads on with the tests of the blocks it sits in.
fn calls_only(lines: &[String], start: u32, end: u32, keep: &[u32]) -> Vec<(u32, u32)> {
    let mut r = vec![(start, head_end(lines, start, end))];
    for &l in keep.iter().filter(|&&l| l > start && l <= end) {
        r.push((l.saturating_sub(3).max(start), (l + 3).min(end)));
        for (a, b) in enclosing_headers(lines, start, l) {
            r.push((a.max(start), b.min(end)));
        }
    }
    merged(r)
}

/// The last line of a function's head: its signature, up to the body's `{`.
fn head_end(lines: &[String], start: u32, end: u32) -> u32 {
    (start..=end.min(start + 15))
        .find(|&l| lines.get(l as usize - 1).is_some_and(|t| t.contains('{')))
        .unwrap_or(start + 3)
        .min(end)
}

/// Line ranges sorted and joined where they overlap or lie within two lines.
fn merged(mut r: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    r.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if a <= last.1 + 2 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The lines, between `start` and `before`, that define a local a test reads: the
/// nearest `name = ...` statement above the test for each name, through its `;`.
fn local_definitions(lines: &[String], start: u32, before: u32, test: &str) -> Vec<(u32, u32)> {
    let names: BTreeSet<&str> = test
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        })
        .filter(|w| !matches!(*w, "if" | "else" | "for" | "while" | "switch" | "return"))
        .collect();
    let mut out = Vec::new();
    for name in names {
        let pattern = format!("{name} =");
        let Some(d) = (start + 1..before).rev().find(|&d| {
            lines.get(d as usize - 1).is_some_and(|t| {
                let t = t.split("//").next().unwrap_or("");
                t.find(&pattern).is_some_and(|k| {
                    !t[..k].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                        && !t[k + pattern.len()..].starts_with('=')
                })
            })
        }) else {
            continue;
        };
        let last = (d..before.min(d + 4))
            .find(|&x| lines.get(x as usize - 1).is_some_and(|t| t.contains(';')))
            .unwrap_or(d);
        out.push((d, last));
    }
    out
}

/// The branches a test at line `l` chooses between (its `if` block, each `else if` and
/// the `else` after it), each as the line of its `{` and the line of its first kernel
/// launch, if any, before `end`.
fn branch_launches(lines: &[String], l: u32, end: u32) -> Vec<(u32, Option<u32>)> {
    let at = |k: u32| {
        let t = lines.get(k as usize - 1).map(String::as_str).unwrap_or("");
        t.split("//").next().unwrap_or("")
    };
    let is_launch = |t: &str| {
        t.contains("LAUNCH_KERNEL") || t.contains("hipLaunchKernelGGL") || t.contains("<<<")
    };
    let mut out = Vec::new();
    let mut from = l;
    // At most an `if`, three `else if`s and an `else`.
    for _ in 0..5 {
        // The `{` opening the branch, within a dozen lines of its test.
        let Some(open) = (from..=end.min(from + 12)).find(|&k| at(k).contains('{')) else {
            break;
        };
        let mut depth = 0i32;
        let mut close = None;
        'scan: for k in open..=end {
            for ch in at(k).chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(k);
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
        let Some(close) = close else { break };
        let launch = (open + 1..close).find(|&k| is_launch(at(k)));
        out.push((open, launch));
        // `} else` on the closing line, or `else` on the next.
        let next = if at(close).contains("else") {
            close
        } else if at(close + 1).trim_start().starts_with("else") {
            close + 1
        } else {
            break;
        };
        from = next;
    }
    out
}

/// The headers of the blocks around line `l` of a function starting at `start`,
/// innermost first, each as a line range: an `if (...)` with its whole condition, and
/// for an `else` also the `if` it is the other side of.
fn enclosing_headers(lines: &[String], start: u32, l: u32) -> Vec<(u32, u32)> {
    let at = |k: u32| {
        let t = lines.get(k as usize - 1).map(String::as_str).unwrap_or("");
        t.split("//").next().unwrap_or("")
    };
    // The line opening the block whose `{` is on line `k` (the line itself, or the one
    // before a lone `{`), widened up to its `if`/`for`/`while` over a multi-line test.
    let header = |k: u32| -> (u32, u32) {
        let h = if at(k).trim() == "{" { k - 1 } else { k };
        let first = (h.saturating_sub(8).max(start + 1)..=h)
            .rev()
            .find(|&x| {
                let t = at(x).trim_start();
                ["if", "else", "for", "while", "switch", "}"]
                    .iter()
                    .any(|w| t.starts_with(w))
            })
            .unwrap_or(h);
        (first, h)
    };
    // The line of the `{` matching a `}` on line `k`, scanning back from it.
    let opener = |k: u32| -> Option<u32> {
        let mut depth = 0i32;
        for x in (start + 1..=k).rev() {
            for ch in at(x).chars().rev() {
                match ch {
                    '}' => depth += 1,
                    '{' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(x);
                        }
                    }
                    _ => {}
                }
            }
        }
        None
    };
    // The function's own body opens no block a test chooses.
    let body = (start..l).find(|&k| at(k).contains('{'));
    let mut out = Vec::new();
    let mut depth = 0i32;
    for k in (start + 1..l).rev() {
        for ch in at(k).chars().rev() {
            match ch {
                '}' => depth += 1,
                '{' if depth > 0 => depth -= 1,
                '{' if Some(k) == body => {}
                '{' => {
                    let (a, b) = header(k);
                    if a > start && !out.contains(&(a, b)) {
                        out.push((a, b));
                    }
                    // `else`: the test it negates is the `if` before the `}` above it.
                    let t = at(a).trim_start();
                    let close = if t.starts_with('}') {
                        Some(a)
                    } else if t.starts_with("else") {
                        (a.saturating_sub(2).max(start + 1)..a)
                            .rev()
                            .find(|&x| at(x).trim() == "}")
                    } else {
                        None
                    };
                    if let Some(o) = close.and_then(opener).filter(|&o| o > start) {
                        let h = header(o);
                        if !out.contains(&h) {
                            out.push(h);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The call that makes an API's first kernel launch when it is not a step of the path
/// to the target: the chain function that makes it and the call edge. `None` when the
/// first launch is on the path (or comes from a numerics check, which runs only when
/// asked for).
fn first_launch_off_path<'g>(
    g: &'g InterfaceGraph,
    chain: &[(usize, u32)],
    runs: Option<&crate::model::WhatRuns>,
    trees: &Trees,
) -> Option<(usize, &'g crate::model::GraphEdge)> {
    let launches = |i: usize| {
        g.edges.iter().any(|e| {
            e.from == i
                && e.kind == EdgeKind::Launch
                && !runs.is_some_and(|d| {
                    d.kernels.contains_key(&e.to)
                        || d.dead_launches.contains(&(e.file.clone(), e.line, e.to))
                })
        })
    };
    for (k, &(c, line)) in chain.iter().enumerate() {
        let &(next, _) = chain.get(k + 1)?;
        let dead = |l: u32| runs.is_some_and(|d| d.dead_line(&g.nodes[c].lib, &g.nodes[c].file, l));
        let first = g
            .edges
            .iter()
            .filter(|e| e.from == c && e.to != next && e.line < line && !dead(e.line))
            .filter(|e| {
                let n = &g.nodes[c];
                trees
                    .lines(&n.lib, &n.file)
                    .map_or(true, |t| !in_other_branch(&t, e.line, line))
            })
            .filter(|e| e.kind == EdgeKind::Launch || (e.kind == EdgeKind::Call && launches(e.to)))
            .min_by_key(|e| e.line);
        match first {
            Some(e) if e.kind == EdgeKind::Call => return Some((c, e)),
            Some(_) => return None,
            None => {}
        }
        if g.nodes[next].kind == NodeKind::Kernel {
            return None;
        }
    }
    None
}

/// Is line `from` in a block whose `else` holds line `to` (syrk_herk's copy-back in the
/// gfx942 branch, the path's call in its `else`)? Then the one never runs before the
/// other. Read from the braces between them: `to` is in another branch where an `else`
/// follows the close of `from`'s block.
fn in_other_branch(lines: &[String], from: u32, to: u32) -> bool {
    let mut depth = 0i32;
    for l in from + 1..to {
        let text = lines.get(l as usize - 1).map_or("", |x| x.as_str());
        let code = text.split("//").next().unwrap_or("");
        for (i, ch) in code.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                'e' if depth < 0
                    && code[i..].starts_with("else")
                    && !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                    && !code[i + 4..].starts_with(|c: char| c.is_alphanumeric() || c == '_') =>
                {
                    return true
                }
                _ => {}
            }
        }
    }
    false
}

/// The workspace size a guard tests (`if(size_scalars > 0)` -> `size_scalars`).
fn size_word(guard: &str) -> Option<String> {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = R.get_or_init(|| {
        Regex::new(r"\bif\s*\(\s*(size_\w+)\s*(?:>\s*0|!=\s*0)?\s*\)").expect("static regex")
    });
    r.captures(guard).map(|c| c[1].to_string())
}

/// One block of the prompt: header, numbered lines, and the macro expansion.
fn block(
    n: &crate::model::GraphNode,
    label: &str,
    lines: &[String],
    start: u32,
    end: u32,
    expanded: Option<&str>,
) -> String {
    let mut text = format!(
        "=== {}:{}-{} ({}, {}) ===\n",
        n.file, start, end, n.name, label
    );
    text.push_str(&numbered(lines, start, end));
    if let Some(x) = expanded {
        text.push_str(&format!("{EXPANSION_NOTE}{x}\n"));
    }
    text
}

/// The line before a block's macro expansion.
const EXPANSION_NOTE: &str = "// as the compiler sees it after macro expansion:\n";

/// The macro expansion a block of the prompt shows under its lines, if any.
pub fn expansion_in(block_text: &str) -> Option<String> {
    let at = block_text.find(EXPANSION_NOTE)? + EXPANSION_NOTE.len();
    let rest = &block_text[at..];
    let end = rest.find("\n// ... lines ").unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches('\n').to_string())
}

/// A stored piece of an entry's slice as the prompt showed it: its header and numbered
/// lines, read from `lines` (the file at the pinned version), and the macro expansion
/// the entry stores. The role's note is not stored in an entry, so it is not shown.
pub fn piece_from_range(p: &crate::model::PieceRef, lines: &[String]) -> SlicePiece {
    let node = crate::model::GraphNode {
        id: format!("{}:{}:{}:{}", p.lib, p.file, p.start, p.name),
        name: p.name.clone(),
        kind: crate::model::NodeKind::Function,
        lib: p.lib.clone(),
        file: p.file.clone(),
        line: p.start,
        start_line: p.start,
        end_line: p.end,
        depth: 0,
        note: None,
    };
    let text = block(
        &node,
        p.role.label(),
        lines,
        p.start,
        p.end,
        p.expansion.as_deref(),
    );
    SlicePiece {
        role: p.role,
        name: p.name.clone(),
        lib: p.lib.clone(),
        file: p.file.clone(),
        start: p.start,
        end: p.end,
        sha256: p.sha256.clone(),
        depth: 0,
        tokens: count_tokens(&text),
        text,
        part: PiecePart::default(),
    }
}

fn omission(
    n: &crate::model::GraphNode,
    lines: &[String],
    start: u32,
    end: u32,
    used: usize,
    budget: usize,
    part: PiecePart,
) -> OmittedPiece {
    // Full: note what is left out without paying for tokenizing it.
    let bytes: usize = (start..=end.min(lines.len() as u32))
        .map(|l| lines[l as usize - 1].len() + 8)
        .sum();
    OmittedPiece {
        name: n.name.clone(),
        lib: n.lib.clone(),
        file: n.file.clone(),
        start,
        end,
        tokens: bytes / 4,
        reason: format!("over the slice budget ({used} of {budget} tokens used; size estimated)"),
        part,
    }
}

/// `lib:version:family[:variant]`.
pub fn slice_id(lib: &str, version: &str, family: &str, variant: &str) -> String {
    if variant.is_empty() {
        format!("{lib}:{version}:{family}")
    } else {
        format!("{lib}:{version}:{family}:{variant}")
    }
}

/// The functions off the chain that a chain step passes a workspace buffer to, in call
/// order, at most four: a buffer is a name whose size the chain's size query sets
/// (`&size_Abyx` -> `Abyx`).
fn workspace_users(g: &InterfaceGraph, chain: &[(usize, u32)], trees: &Trees) -> Vec<usize> {
    static SIZE: OnceLock<Regex> = OnceLock::new();
    let size = SIZE.get_or_init(|| Regex::new(r"&size_(\w+)").expect("static regex"));
    let on_chain = |i: usize| chain.iter().any(|&(c, _)| c == i);
    let call_text = |i: usize, line: u32| -> String {
        let n = &g.nodes[i];
        let Ok(lines) = trees.lines(&n.lib, &n.file) else {
            return String::new();
        };
        let mut t = String::new();
        for l in line..line + 6 {
            let Some(x) = lines.get(l as usize - 1) else {
                break;
            };
            t.push_str(x.split("//").next().unwrap_or(""));
            t.push(' ');
            if x.contains(';') {
                break;
            }
        }
        t
    };
    let calls = |c: usize| {
        g.edges
            .iter()
            .filter(move |e| e.from == c && matches!(e.kind, EdgeKind::Call | EdgeKind::MacroCall))
    };
    let mut buffers: BTreeSet<String> = BTreeSet::new();
    for &(c, _) in chain {
        for e in calls(c).filter(|e| is_size_query(&g.nodes[e.to].name)) {
            for m in size.captures_iter(&call_text(c, e.line)) {
                buffers.insert(m[1].to_string());
            }
        }
    }
    if buffers.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<usize> = Vec::new();
    for &(c, _) in chain {
        let mut es: Vec<_> = calls(c)
            .filter(|e| {
                let n = &g.nodes[e.to];
                !on_chain(e.to)
                    && !n.file.is_empty()
                    && n.kind == NodeKind::Function
                    && !is_size_query(&n.name)
                    && !target::is_noise(&n.name)
            })
            .collect();
        es.sort_by_key(|e| e.line);
        for e in es {
            let named = g.nodes[e.to].name.as_str();
            // A one-line helper (`idx2D`, `cast2constType`) passes nothing down.
            if target::lines_of(g, e.to) <= 6 {
                continue;
            }
            let text = call_text(c, e.line);
            let args = own_arguments(&text, named);
            let words: BTreeSet<&str> = args
                .split(|ch: char| !ch.is_alphanumeric() && ch != '_')
                .collect();
            if buffers.iter().any(|b| words.contains(b.as_str()))
                && !out.iter().any(|&o| g.nodes[o].name == named)
                && out.len() < 4
            {
                out.push(e.to);
            }
        }
    }
    out
}

/// The argument list of the first call of `name` in `text` (after any template
/// arguments), or "" when `text` has no such call.
fn own_arguments<'a>(text: &'a str, name: &str) -> &'a str {
    let Some(k) = text
        .match_indices(name)
        .map(|(k, _)| k)
        .find(|&k| !text[..k].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
    else {
        return "";
    };
    let rest = &text[k + name.len()..];
    let Some(open) = rest.find('(') else {
        return "";
    };
    values::parenthesized(rest, open).unwrap_or(&rest[open + 1..])
}

/// Is this a workspace-size query (rocSOLVER's `*_getMemorySize`)? The slice adds those
/// the chain calls; a workspace question is shown them.
pub fn is_size_query(name: &str) -> bool {
    name.to_ascii_lowercase().contains("getmemorysize")
}

/// Lines `start..=end` prefixed with their numbers, so answers can cite them.
fn numbered(lines: &[String], start: u32, end: u32) -> String {
    let mut out = String::new();
    for l in start..=end.min(lines.len() as u32) {
        out.push_str(&format!("{l:>5}| {}\n", lines[l as usize - 1]));
    }
    out
}

fn expanded_text(
    indexes: &[&LibraryIndex],
    lib: &str,
    file: &str,
    line: u32,
    name: &str,
) -> Option<String> {
    let idx = indexes.iter().find(|i| i.lib == lib)?;
    let f = idx.files.iter().find(|f| f.path == file)?;
    f.symbols
        .iter()
        .find(|s| s.name_line == line && s.name == name)
        .and_then(|s| s.expanded_text.clone())
}

/// Tokens of [`render`]'s output: the pieces' own counts plus the list of omissions.
pub fn rendered_tokens(slice: &Slice) -> usize {
    slice.tokens + count_tokens(&omitted_block(slice)) + count_tokens(&not_run_block(slice))
}

/// The slice as the prompt shows it: each piece (header, numbered lines), the kernels
/// its code launches that its API never does, then what was left out.
pub fn render(slice: &Slice) -> String {
    let mut out: String = slice.pieces.iter().map(|p| p.text.as_str()).collect();
    out.push_str(&not_run_block(slice));
    out.push_str(&omitted_block(slice));
    out
}

/// Launches the code shown writes but the API cannot reach: said outright, so an
/// answer does not describe them as this API's work.
fn not_run_block(slice: &Slice) -> String {
    if slice.focus.not_run.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "=== never launched by {}: a condition on the way is false for it ===\n",
        slice.api
    );
    for l in &slice.focus.not_run {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Omitted pieces are named so the model knows they exist; a long tail is only counted.
fn omitted_block(slice: &Slice) -> String {
    const SHOWN: usize = 12;
    let mut out = String::new();
    if slice.omitted.is_empty() {
        return out;
    }
    out.push_str("=== left out of this slice for length ===\n");
    for o in slice.omitted.iter().take(SHOWN) {
        out.push_str(&format!("{}:{}-{} ({})\n", o.file, o.start, o.end, o.name));
    }
    if slice.omitted.len() > SHOWN {
        out.push_str(&format!(
            "... and {} more definitions\n",
            slice.omitted.len() - SHOWN
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_cover_exact_lines() {
        let lines: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let mut h = Sha256::new();
        h.update(b"b\nc");
        assert_eq!(lines_hash(&lines, 2, 3), format!("{:x}", h.finalize()));
        assert_ne!(lines_hash(&lines, 1, 2), lines_hash(&lines, 2, 3));
    }

    #[test]
    fn tokens_are_counted_by_bpe() {
        let n = count_tokens("__global__ void k(float* x) { x[threadIdx.x] = 0; }");
        assert!((10..40).contains(&n), "{n}");
    }

    #[test]
    fn a_window_brings_the_tests_of_the_blocks_around_it() {
        let src = [
            "void launcher(int n)",
            "{",
            "    int x = 0;",
            "    if(uplo == upper)",
            "    {",
            "        launch_a();",
            "    }",
            "    else",
            "    {",
            "        if(n > 64",
            "           && big)",
            "        {",
            "            launch_b();",
            "        }",
            "    }",
            "}",
        ];
        let lines: Vec<String> = src.iter().map(|s| s.to_string()).collect();
        // launch_b at line 13: its `if` over two lines, the `else`, and the `if` the
        // `else` is the other side of; not the function's own body.
        assert_eq!(enclosing_headers(&lines, 1, 13), [(10, 11), (8, 8), (4, 4)]);
    }

    #[test]
    fn an_architecture_test_shows_what_each_branch_launches() {
        let src = [
            "void launcher(int n)",
            "{",
            "    bool is_gfx90a = handle->getArch() == 910;",
            "    if(is_atomics_allowed",
            "       && (is_gfx90a && n < 4096))",
            "    {",
            "        static constexpr int DIM_X = 32;",
            "        int a = 0;",
            "        int b = 0;",
            "        int c = 0;",
            "        int d = 0;",
            "        int e = 0;",
            "        int f = 0;",
            "        int g = 0;",
            "        int h = 0;",
            "        ROCBLAS_LAUNCH_KERNEL((double_buffered<DIM_X>),",
            "                              grid, threads, 0, stream, n);",
            "    }",
            "    else",
            "    {",
            "        ROCBLAS_LAUNCH_KERNEL(plain, grid, threads, 0, stream, n);",
            "    }",
            "}",
        ];
        let lines: Vec<String> = src.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            branch_launches(&lines, 4, 23),
            [(6, Some(16)), (20, Some(21))]
        );
        let shown = windows(&lines, 1, 23, &[], &|_| false);
        let covers = |l: u32| shown.iter().any(|&(a, b)| a <= l && l <= b);
        // The name's definition, both sides' launches, the `else` and the constants.
        for l in [3, 5, 7, 16, 19, 21] {
            assert!(covers(l), "line {l} not in {shown:?}");
        }
    }

    #[test]
    fn a_call_in_the_branch_an_else_leaves_is_not_before_the_else() {
        let lines: Vec<String> = [
            "    if(is_gfx942 && k >= 500)",
            "    {",
            "        copy(C, w);",
            "        gemm(C);",
            "        return ok;",
            "    }",
            "    else",
            "    {",
            "        return next_step(C);",
            "    }",
            "    copy(C, w);",
            "    next_step(C);",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        assert!(in_other_branch(&lines, 3, 9));
        assert!(!in_other_branch(&lines, 3, 4));
        assert!(!in_other_branch(&lines, 11, 12));
    }

    #[test]
    fn a_test_brings_the_definitions_of_the_locals_it_reads() {
        let src = [
            "void launcher(int n)",
            "{",
            "    auto const n_threshold = 1024;",
            "    bool const use_org = (n <= n_threshold);",
            "    int x = 0;",
            "    x += 1;",
            "    if(use_org)",
            "        launch_org();",
            "}",
        ];
        let lines: Vec<String> = src.iter().map(|s| s.to_string()).collect();
        assert_eq!(local_definitions(&lines, 1, 7, "if(use_org)"), [(4, 4)]);
        // `x += 1` assigns nothing new; `==` is a test, not a definition.
        assert!(local_definitions(&lines, 1, 7, "if(x == 2)").len() == 1);
        let shown = windows(&lines, 1, 9, &[8], &|_| false);
        let covers = |l: u32| shown.iter().any(|&(a, b)| a <= l && l <= b);
        assert!(covers(3) && covers(4) && covers(7), "{shown:?}");
    }

    #[test]
    fn a_declaration_in_a_documented_group_shows_the_group_comment() {
        let src = [
            "//! @}",
            "",
            "/*! @{",
            "    dot(u) performs the dot product.",
            "    ***/",
            "ROCBLAS_EXPORT rocblas_status rocblas_sdot(rocblas_handle handle,",
            "                                           float* result);",
            "",
            "ROCBLAS_EXPORT rocblas_status rocblas_cdotu(rocblas_handle handle,",
            "                                            float* result);",
        ];
        let lines: Vec<String> = src.iter().map(|s| s.to_string()).collect();
        assert_eq!(group_doc_comment(&lines, 9), Some((3, 5)));
        // A comment that opens no group is the declaration's own, found elsewhere;
        // past a group's end there is none.
        let mut own = lines.clone();
        own[2] = "/*! sdot alone".into();
        assert_eq!(group_doc_comment(&own, 9), None);
        assert_eq!(group_doc_comment(&lines[..1], 1), None);
    }

    #[test]
    fn numbered_lines_carry_their_numbers() {
        let lines: Vec<String> = ["x", "y"].iter().map(|s| s.to_string()).collect();
        assert_eq!(numbered(&lines, 2, 2), "    2| y\n");
    }
}
