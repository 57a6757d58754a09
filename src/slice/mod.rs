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

pub mod features;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

pub use features::features_of;

use crate::model::{
    EdgeKind, InterfaceGraph, LibraryIndex, NodeKind, OmittedPiece, PieceRole, Slice, SlicePiece,
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

impl Default for SliceLimits {
    fn default() -> Self {
        SliceLimits {
            budget_tokens: 6000,
            max_piece_tokens: 2500,
        }
    }
}

/// Counts tokens with OpenAI's cl100k_base BPE (close enough to the open models' own
/// tokenizers to size prompts; exact counts come back from the server as usage).
///
/// Counts are remembered by text hash: the same functions recur in many slices, and
/// BPE tokenizing is the dearest step of planning.
pub fn count_tokens(text: &str) -> usize {
    static BPE: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
    static SEEN: OnceLock<std::sync::Mutex<HashMap<u64, usize>>> = OnceLock::new();
    let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
    let seen = SEEN.get_or_init(Default::default);
    if let Some(n) = seen.lock().ok().and_then(|m| m.get(&key).copied()) {
        return n;
    }
    let n = BPE
        .get_or_init(|| {
            tiktoken_rs::cl100k_base().expect("the cl100k_base table is built into tiktoken-rs")
        })
        .encode_ordinary(text)
        .len();
    if let Ok(mut m) = seen.lock() {
        m.insert(key, n);
    }
    n
}

/// A file's lines, shared between the slices that show it.
pub type FileLines = std::rc::Rc<Vec<String>>;

/// The trees slices read from, by library name.
#[derive(Debug, Clone, Default)]
pub struct Trees {
    roots: HashMap<String, PathBuf>,
    files: std::cell::RefCell<HashMap<(String, String), FileLines>>,
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
        if let Some(l) = self.files.borrow().get(&key) {
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
        let rc = std::rc::Rc::new(lines);
        self.files.borrow_mut().insert(key, rc.clone());
        Ok(rc)
    }
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

/// Lower is more relevant: kernels and launchers first, then by distance.
fn rank(role: PieceRole, depth: u32) -> (u32, u32) {
    let class = match role {
        PieceRole::Declaration | PieceRole::Entry => 0,
        PieceRole::Kernel | PieceRole::Launcher => 1,
        PieceRole::DeviceHelper => 2,
        PieceRole::Host => 3,
    };
    (class, depth)
}

/// Cuts the slice of one API family from the graph of its representative API.
///
/// `family_apis` are all the API names the slice stands for (its precision variants).
pub fn cut(
    g: &InterfaceGraph,
    family_apis: &[String],
    variant: &str,
    indexes: &[&LibraryIndex],
    trees: &Trees,
    limits: SliceLimits,
) -> Result<Slice, SliceError> {
    // Candidate pieces: every node with code, once per (lib, file, line range).
    let mut seen = BTreeSet::new();
    let mut cands: Vec<(usize, PieceRole)> = Vec::new();
    // Numerics checking is the same for every API: its code stays out of slices.
    let computing = g.reachable_without(EdgeKind::CheckNumerics);
    for (i, n) in g.nodes.iter().enumerate() {
        if n.kind == NodeKind::Opaque || n.file.is_empty() || !computing[i] {
            continue;
        }
        if seen.insert((n.lib.clone(), n.file.clone(), n.start_line, n.end_line)) {
            cands.push((i, role_of(g, i)));
        }
    }
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by_key(|&k| (rank(cands[k].1, g.nodes[cands[k].0].depth), k));

    let mut pieces: Vec<(usize, SlicePiece)> = Vec::new();
    let mut omitted = Vec::new();
    let mut used = 0usize;
    for k in order {
        let (i, role) = cands[k];
        let n = &g.nodes[i];
        let lines = trees.lines(&n.lib, &n.file)?;
        let (start, mut end) = (n.start_line.max(1), n.end_line.max(n.start_line));
        if used >= limits.budget_tokens {
            // Full: note what is left out without paying for tokenizing it.
            let bytes: usize = (start..=end.min(lines.len() as u32))
                .map(|l| lines[l as usize - 1].len() + 8)
                .sum();
            omitted.push(OmittedPiece {
                name: n.name.clone(),
                lib: n.lib.clone(),
                file: n.file.clone(),
                start,
                end,
                tokens: bytes / 4,
                reason: format!(
                    "over the slice budget ({used} of {} tokens used; size estimated)",
                    limits.budget_tokens
                ),
            });
            continue;
        }
        // The declaration of an API runs to its `;`.
        if role == PieceRole::Declaration {
            end = (start..=(start + 40).min(lines.len() as u32))
                .find(|&l| lines.get(l as usize - 1).is_some_and(|t| t.contains(';')))
                .unwrap_or(start);
        }
        let mut text = numbered(&lines, start, end);
        let expanded = expanded_text(indexes, &n.lib, &n.file, n.line, &n.name);
        if let Some(x) = &expanded {
            text.push_str(&format!(
                "// as the compiler sees it after macro expansion:\n{x}\n"
            ));
        }
        let full = count_tokens(&text);
        let mut cut_end = end;
        if full > limits.max_piece_tokens {
            // Keep the head of an oversized function: signature, checks, first launches.
            let keep = ((end - start + 1) as usize * limits.max_piece_tokens / full).max(1) as u32;
            cut_end = start + keep - 1;
            text = numbered(&lines, start, cut_end);
            text.push_str(&format!(
                "// ... lines {}-{end} left out (budget)\n",
                cut_end + 1
            ));
        }
        // The block header is part of what the model reads, and of the budget.
        text = format!(
            "=== {}:{}-{} ({}, {}) ===\n{text}",
            n.file,
            start,
            cut_end,
            n.name,
            role.label()
        );
        let tokens = count_tokens(&text);
        if used + tokens > limits.budget_tokens {
            omitted.push(OmittedPiece {
                name: n.name.clone(),
                lib: n.lib.clone(),
                file: n.file.clone(),
                start,
                end,
                tokens,
                reason: format!(
                    "over the slice budget ({used} of {} tokens used)",
                    limits.budget_tokens
                ),
            });
            continue;
        }
        used += tokens;
        pieces.push((
            k,
            SlicePiece {
                role,
                name: n.name.clone(),
                lib: n.lib.clone(),
                file: n.file.clone(),
                start,
                end: cut_end,
                sha256: lines_hash(&lines, start, cut_end),
                depth: n.depth,
                tokens,
                text,
            },
        ));
    }
    // Back to call order (graph discovery order) for reading.
    pieces.sort_by_key(|(k, _)| *k);
    let pieces: Vec<SlicePiece> = pieces.into_iter().map(|(_, p)| p).collect();
    let features = features_of(&pieces, g, family_apis);
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
    })
}

/// `lib:version:family[:variant]`.
pub fn slice_id(lib: &str, version: &str, family: &str, variant: &str) -> String {
    if variant.is_empty() {
        format!("{lib}:{version}:{family}")
    } else {
        format!("{lib}:{version}:{family}:{variant}")
    }
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
    slice.tokens + count_tokens(&omitted_block(slice))
}

/// The slice as the prompt shows it: each piece (header, numbered lines), then what
/// was left out.
pub fn render(slice: &Slice) -> String {
    let mut out: String = slice.pieces.iter().map(|p| p.text.as_str()).collect();
    out.push_str(&omitted_block(slice));
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
    fn numbered_lines_carry_their_numbers() {
        let lines: Vec<String> = ["x", "y"].iter().map(|s| s.to_string()).collect();
        assert_eq!(numbered(&lines, 2, 2), "    2| y\n");
    }
}
