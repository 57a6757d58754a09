//! Plain records that cross stage borders.
//!
//! Every stage takes and returns these owned, serializable types. Nothing here
//! does I/O, and nothing here knows about tree-sitter nodes or petgraph indices:
//! positions are stable `file:line` pairs relative to the library's source root,
//! so a record written today can be checked against the pinned tree tomorrow.
#![deny(missing_docs)]

use serde::{Deserialize, Serialize};

/// Where a library's source tree came from, recorded so every claim can be traced back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Origin {
    /// A Debian source package: the upstream ("orig") tarball of one package version.
    Debian {
        /// Source package name, e.g. `rocblas`.
        package: String,
        /// Full Debian version, e.g. `6.4.4-4`.
        debian_version: String,
        /// File name of the orig tarball that was unpacked.
        tarball: String,
    },
    /// A local checkout or unpacked tree, copied as is.
    Dir {
        /// Absolute path the tree was taken from.
        path: String,
    },
    /// A git clone at a tag or commit.
    Git {
        /// Repository URL.
        url: String,
        /// Tag, branch or commit asked for.
        rev: String,
        /// Commit the rev resolved to.
        commit: String,
    },
}

/// A pinned source tree: one library at one version, as recorded in `rocm_sources/sources.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcePin {
    /// Library name as configured, e.g. `rocblas`.
    pub lib: String,
    /// Upstream version, e.g. `6.4.4`.
    pub version: String,
    /// Where the tree came from.
    pub origin: Origin,
    /// SHA-256 of the tarball (Debian), or of the sorted file list and contents (dir, git).
    pub sha256: String,
    /// Date the tree was fetched (UTC, RFC 3339).
    pub fetched_at: String,
    /// Tree location relative to `rocm_sources/`, e.g. `rocblas-6.4.4`.
    pub dir: String,
}

/// What a definition found by the index is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum SymbolKind {
    /// A host function (or a `__host__ __device__` one).
    Function,
    /// A `__global__` kernel.
    Kernel,
    /// A `__device__` function: a helper kernels call.
    DeviceHelper,
}

/// A macro expansion that produced (part of) a definition, call or launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacroOrigin {
    /// Outermost macro invoked at that place in the original file.
    pub name: String,
    /// File (relative to the tree root) that defines the macro.
    pub def_file: String,
    /// Line of the `#define`.
    pub def_line: u32,
}

/// One function definition found in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// Unqualified name, e.g. `rocblas_scal_kernel`.
    pub name: String,
    /// Enclosing namespaces and classes, `::`-joined (empty at file scope).
    pub scope: String,
    /// Host function, kernel or device helper.
    pub kind: SymbolKind,
    /// File relative to the tree root.
    pub file: String,
    /// First line of the definition, including any `template <...>` header.
    pub line: u32,
    /// Line holding the name.
    pub name_line: u32,
    /// Last line of the definition.
    pub end_line: u32,
    /// True for function templates.
    pub is_template: bool,
    /// `__launch_bounds__` argument text, for kernels that have one.
    pub launch_bounds: Option<String>,
    /// True when declared inside `extern "C"`.
    pub extern_c: bool,
    /// Set when the definition only exists after expanding a macro invocation.
    pub expanded_from: Option<MacroOrigin>,
    /// For macro-made definitions: the definition as the compiler sees it (expanded
    /// text, one line), since the original file holds only the invocation.
    #[serde(default)]
    pub expanded_text: Option<String>,
    /// How many arguments a call may pass: parameters without a default value, and all
    /// parameters (`u16::MAX` after a `...`). Tells overloads apart.
    #[serde(default)]
    pub arity: Option<(u16, u16)>,
    /// Parameters that are arrays of pointers (`T* const* x`, `T* const x[]`): the
    /// batched overloads of an overload set have them, the others not.
    #[serde(default)]
    pub pointer_arrays: u16,
    /// The compiler's unique name of the definition (libclang's USR), the same in every
    /// translation unit; set by the precise index only.
    #[serde(default)]
    pub usr: String,
}

/// A call from one definition to a named function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// Index of the calling symbol in its file's `symbols`.
    pub caller: u32,
    /// Callee name as written (unqualified, template arguments dropped).
    pub callee: String,
    /// Line in the original file.
    pub line: u32,
    /// Macro the call came out of, if any.
    pub via_macro: Option<String>,
    /// True when the callee's name is written at this place of the original file,
    /// including inside a macro argument (`RETURN_IF_ERROR(check(x))`); false when only
    /// the macro's body supplies it.
    #[serde(default = "yes")]
    pub written: bool,
    /// Arguments passed, when the call parsed cleanly.
    #[serde(default)]
    pub args: Option<u16>,
    /// USRs of the declarations the compiler resolved the call to (one), or of the
    /// overload set a dependent call names; set by the precise index only.
    #[serde(default)]
    pub resolved: Vec<String>,
    /// The scope a qualified call names, template arguments dropped: `""` for `::sqrt`
    /// (the global namespace), `"std"` for `std::abs`; `None` for an unqualified call.
    /// Set by the fast index only.
    #[serde(default)]
    pub qualifier: Option<String>,
}

fn yes() -> bool {
    true
}

/// A kernel launch (`hipLaunchKernelGGL`, `<<<>>>`, or a library launch macro).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSite {
    /// Index of the launching symbol in its file's `symbols`.
    pub caller: u32,
    /// Kernel name (unqualified, template arguments dropped).
    pub kernel: String,
    /// Line in the original file.
    pub line: u32,
    /// Outermost macro the launch came out of (e.g. `ROCBLAS_LAUNCH_KERNEL`), if any.
    pub via_macro: Option<String>,
    /// USRs of the kernel templates the launch names; set by the precise index only.
    #[serde(default)]
    pub resolved: Vec<String>,
}

/// A `#define` seen in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacroDef {
    /// Macro name.
    pub name: String,
    /// Parameter names for function-like macros (`None` for object-like ones).
    pub params: Option<Vec<String>>,
    /// Replacement text with line continuations joined.
    pub body: String,
    /// File relative to the tree root.
    pub file: String,
    /// Line of the `#define`.
    pub line: u32,
}

/// Everything the index knows about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIndex {
    /// File relative to the tree root.
    pub path: String,
    /// xxh3-64 of the file's bytes, hex.
    pub content_hash: String,
    /// Function, kernel and device-helper definitions.
    pub symbols: Vec<Symbol>,
    /// Calls made by those definitions.
    pub calls: Vec<CallSite>,
    /// Kernel launches made by those definitions.
    pub launches: Vec<LaunchSite>,
    /// Macros defined in this file.
    pub macros: Vec<MacroDef>,
    /// Resolved `#include "..."` targets, relative to the tree root.
    pub includes: Vec<String>,
    /// Number of tree-sitter ERROR nodes left after preprocessing.
    pub parse_errors: u32,
    /// The build context the file was read in: empty for the library's global defines,
    /// else the extra defines (e.g. `ROCBLAS_INTERNAL_ILP64=1`). A header that reads
    /// differently under a translation unit's extra defines is indexed once more in
    /// that context.
    #[serde(default)]
    pub context: String,
}

/// How a library names its API: `prefix` + precision + family + variant suffixes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiNaming {
    /// Common prefix of API names, e.g. `rocblas_`.
    pub prefix: String,
    /// Precision prefixes that can lead a family name (`s`, `d`, `h`, `cs`, ...).
    pub precisions: Vec<String>,
}

/// One public C API function declared in the library's public headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiFunction {
    /// Exported name, e.g. `rocblas_sscal_strided_batched_64`.
    pub name: String,
    /// Family the variants share, e.g. `scal`.
    pub family: String,
    /// Precision prefix (`s`, `d`, `c`, `z`, `h`, `cs`, `zd`, ...) or empty.
    pub precision: String,
    /// Variant suffixes in order, e.g. `["strided_batched", "64"]`.
    pub variants: Vec<String>,
    /// Header relative to the tree root.
    pub file: String,
    /// Line of the declaration.
    pub line: u32,
}

impl ApiFunction {
    /// Is this API a member of the variant group `variant` (an entry's `variant`)?
    /// `""` is the whole family; `complex` the complex precisions' plain form; `ex` the
    /// `_ex`/`_ex3` forms that are neither batched nor `_64`; any other group is the
    /// variant suffixes joined (`strided_batched_64`).
    pub fn in_variant(&self, variant: &str) -> bool {
        match variant {
            "" => true,
            "complex" => self.variants.is_empty() && matches!(self.precision.as_str(), "c" | "z"),
            "ex" => {
                self.variants.iter().any(|v| v == "ex" || v == "ex3")
                    && !self
                        .variants
                        .iter()
                        .any(|v| v == "64" || v.contains("batched"))
            }
            group => self.variants.join("_") == group,
        }
    }

    /// Why `kernel` does not run for this API when it is named for another precision of
    /// the same family (`rocblas_hscal_mlt_4_kernel` for `rocblas_sscal`): such kernels
    /// sit behind `if constexpr` on the element type, so only their own precision's
    /// instantiation launches them. Facts and question targets both go by this rule.
    pub fn kernel_for_other_precision(&self, naming: &ApiNaming, kernel: &str) -> Option<String> {
        let precision = self.precision.as_str();
        if precision.is_empty() {
            return None;
        }
        let fam_tail = self
            .name
            .strip_prefix(&naming.prefix)?
            .strip_prefix(precision)?
            .split("_batched")
            .next()?
            .split("_strided")
            .next()?
            .trim_end_matches("_64");
        let rest = kernel.strip_prefix(&naming.prefix)?;
        let mut ps: Vec<&String> = naming.precisions.iter().collect();
        ps.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for p in ps {
            if let Some(tail) = rest.strip_prefix(p.as_str()) {
                if tail.starts_with(fam_tail)
                    && tail[fam_tail.len()..].starts_with('_')
                    && p != precision
                {
                    return Some(format!(
                        "named for precision `{p}`, this API's precision is `{precision}`"
                    ));
                }
            }
        }
        None
    }
}

/// What of an API's graph the API runs, read off its code with what the API fixes
/// (`facts`): kernels it never launches, with why; nodes no live call reaches; the
/// branches it never takes; the conditions each launch it makes is under. Slices keep
/// what never runs out of the paths they show and ask about the conditions that hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WhatRuns {
    /// Kernel node -> why the API never launches it.
    pub kernels: std::collections::BTreeMap<usize, String>,
    /// Nodes every call of which is under a condition false for the API.
    pub unreached: std::collections::BTreeSet<usize>,
    /// `(lib, file, first, last)`: lines from an `if` false for the API to the launch
    /// it guards; what they test is not a choice this API makes.
    pub regions: Vec<(String, String, u32, u32)>,
    /// `(file, line)` of a launch edge the API makes -> the conditions in the launching
    /// function still open for the API (decided parts dropped) that every live launch
    /// site of the edge shares: what must hold for the API to reach any of them.
    pub launch_conditions: std::collections::BTreeMap<(String, u32), Vec<String>>,
    /// `(file, line, kernel node)` of a launch edge every launch of which is never made
    /// for the API (`trsm_lower`'s backward-substitution launch when the caller passes
    /// `rocblas_operation_none`).
    pub dead_launches: std::collections::BTreeSet<(String, u32, usize)>,
}

impl WhatRuns {
    /// Is line `line` of `file` inside a branch the API never takes?
    pub fn dead_line(&self, lib: &str, file: &str, line: u32) -> bool {
        in_regions(&self.regions, lib, file, line)
    }
}

/// A library's whole index at one pinned version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryIndex {
    /// Library name.
    pub lib: String,
    /// Library version.
    pub version: String,
    /// Per-file results, sorted by path.
    pub files: Vec<FileIndex>,
    /// Public API functions, in header order.
    pub api: Vec<ApiFunction>,
}

/// How one graph node relates to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// A public API name to the definition that implements it.
    Entry,
    /// An ordinary call.
    Call,
    /// A call that only exists after macro expansion.
    MacroCall,
    /// A kernel launch.
    Launch,
    /// A call into another library's index (rocSOLVER into rocBLAS).
    CrossLibrary,
    /// A call into code that is not in the tree (generated or external backend).
    Opaque,
    /// A call into numerics checking (`[checks] numerics` in the allowlist): scans of
    /// inputs and outputs for NaN, Inf and denormals, not the computation.
    CheckNumerics,
}

impl InterfaceGraph {
    /// Per node: reachable from the API without crossing an edge of kind `skip`.
    pub fn reachable_without(&self, skip: EdgeKind) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            if i >= seen.len() || std::mem::replace(&mut seen[i], true) {
                continue;
            }
            stack.extend(
                self.edges
                    .iter()
                    .filter(|e| e.from == i && e.kind != skip)
                    .map(|e| e.to),
            );
        }
        seen
    }
}

/// What a graph node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    /// A public API declaration.
    Api,
    /// A host function.
    Function,
    /// A `__global__` kernel.
    Kernel,
    /// A `__device__` helper.
    DeviceHelper,
    /// A leaf whose code is not in the tree (e.g. the Tensile backend).
    Opaque,
}

/// One node of an interface call graph, as it crosses into later stages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// Stable id: `lib:file:line:name`.
    pub id: String,
    /// Unqualified name.
    pub name: String,
    /// What the node is.
    pub kind: NodeKind,
    /// Library whose tree holds it.
    pub lib: String,
    /// File relative to that tree's root (empty for opaque leaves).
    pub file: String,
    /// Line holding the name (0 for opaque leaves).
    pub line: u32,
    /// First line of the definition, including any `template <...>` header.
    pub start_line: u32,
    /// Last line of the definition.
    pub end_line: u32,
    /// Distance from the API in edges.
    pub depth: u32,
    /// Why the node is a leaf, for opaque nodes.
    pub note: Option<String>,
}

/// One edge of an interface call graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphEdge {
    /// Index of the caller in `nodes`.
    pub from: usize,
    /// Index of the callee in `nodes`.
    pub to: usize,
    /// Call, launch, macro-expanded, cross-library or opaque.
    pub kind: EdgeKind,
    /// File of the call or launch site.
    pub file: String,
    /// Line of the call or launch site.
    pub line: u32,
    /// Macro the edge came out of, if any.
    pub via_macro: Option<String>,
    /// Call or launch sites from the caller to the callee (the site above is the first).
    #[serde(default = "one")]
    pub sites: u32,
}

fn one() -> u32 {
    1
}

/// The call graph of one public API function, from its declaration down to kernels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceGraph {
    /// The API function.
    pub api: ApiFunction,
    /// Library and version the graph was built from.
    pub lib: String,
    /// Library version.
    pub version: String,
    /// Nodes in breadth-first order from the API (index 0).
    pub nodes: Vec<GraphNode>,
    /// Edges between `nodes`.
    pub edges: Vec<GraphEdge>,
}

/// What a piece of a slice is, in the call chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum PieceRole {
    /// The public declaration in the API header.
    Declaration,
    /// The definition that implements the API name.
    Entry,
    /// A host function (impl, template, argument checks, helpers).
    Host,
    /// A host function that launches kernels.
    Launcher,
    /// A `__global__` kernel.
    Kernel,
    /// A `__device__` helper.
    DeviceHelper,
    /// A type or constant the code is instantiated with: a functor struct passed as a
    /// template argument, an object-like `#define`.
    Definition,
}

impl PieceRole {
    /// Label used in prompts.
    pub fn label(self) -> &'static str {
        match self {
            PieceRole::Declaration => "public declaration",
            PieceRole::Entry => "entry point",
            PieceRole::Host => "host function",
            PieceRole::Launcher => "host launcher",
            PieceRole::Kernel => "kernel",
            PieceRole::DeviceHelper => "device helper",
            PieceRole::Definition => "definition",
        }
    }
}

/// Which part of a slice a piece is: a question is shown the parts its answer needs,
/// not every piece cut for the slice's other questions.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum PiecePart {
    /// The public declaration, the host chain from the entry point to the target, the
    /// argument checks it calls.
    #[default]
    Path,
    /// The kernel the questions are about, whole.
    Target,
    /// What does the target's work: the device functions it calls, the functors and
    /// constants it is instantiated with, the launcher's helpers that size its launch.
    Work,
    /// The path into the paired library and the kernel it reaches there.
    Cross,
    /// Base-form counterparts of a variant's functions.
    Base,
    /// The rest of what the API reaches.
    Context,
}

/// One stretch of code shown to the model, at the pinned version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlicePiece {
    /// Role in the call chain.
    pub role: PieceRole,
    /// Part of the slice it belongs to.
    #[serde(default)]
    pub part: PiecePart,
    /// Definition name.
    pub name: String,
    /// Library whose tree holds it.
    pub lib: String,
    /// File relative to that tree's root.
    pub file: String,
    /// First line shown.
    pub start: u32,
    /// Last line shown.
    pub end: u32,
    /// SHA-256 of lines `start..=end` joined by `\n`.
    pub sha256: String,
    /// Distance from the API in the call graph.
    pub depth: u32,
    /// Tokens of `text`.
    pub tokens: usize,
    /// As shown in the prompt: a `=== file:start-end (name, role) ===` header, then
    /// the lines, numbered.
    pub text: String,
}

/// A piece that did not fit the budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OmittedPiece {
    /// Definition name.
    pub name: String,
    /// Library.
    pub lib: String,
    /// File.
    pub file: String,
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
    /// Tokens it would have cost.
    pub tokens: usize,
    /// Why it was left out.
    pub reason: String,
    /// Part of the slice it would have belonged to.
    #[serde(default)]
    pub part: PiecePart,
}

/// Features read off a slice's code.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceFeatures {
    /// Kernels use `__shared__` memory (LDS).
    pub lds: bool,
    /// Kernels use barriers or fences.
    pub barriers: bool,
    /// Kernels use atomics.
    pub atomics: bool,
    /// Kernels use wavefront intrinsics (shuffles, ballots, DPP, swizzles).
    pub warp_intrinsics: bool,
    /// The code reduces (dot, norms, iamax, block/wavefront reductions).
    pub reductions: bool,
    /// Batched forms (arrays of pointers or `batch_count`).
    pub batched: bool,
    /// Strided-batched forms.
    pub strided_batched: bool,
    /// Host/device pointer mode for scalars is handled.
    pub pointer_mode: bool,
    /// 64-bit sizes split into pieces a 32-bit launch takes (chunking loops, 32-bit limits).
    pub ilp64: bool,
    /// Workspace is allocated.
    pub workspace: bool,
    /// Arguments are checked with early returns.
    pub arg_checks: bool,
    /// Complex types appear.
    pub complex: bool,
    /// Kernels address memory through an increment or a leading dimension (not only
    /// scalars, as rotg's kernel does).
    #[serde(default)]
    pub indexed: bool,
    /// The slice spans several files.
    pub multi_file: bool,
    /// The path ends in code outside the tree (e.g. Tensile).
    pub opaque: bool,
    /// Kernels in the slice.
    pub kernels: u32,
    /// Files in the slice (declaration header excluded).
    pub files: u32,
}

impl SliceFeatures {
    /// Names a template may require, in the order of the fields.
    pub const NAMES: [&'static str; 15] = [
        "lds",
        "barriers",
        "atomics",
        "warp_intrinsics",
        "reductions",
        "batched",
        "strided_batched",
        "pointer_mode",
        "ilp64",
        "workspace",
        "arg_checks",
        "complex",
        "indexed",
        "multi_file",
        "opaque",
    ];

    /// A boolean feature by name (plus `kernels`: at least one kernel), `None` if unknown.
    pub fn get(&self, name: &str) -> Option<bool> {
        Some(match name {
            "lds" => self.lds,
            "barriers" => self.barriers,
            "atomics" => self.atomics,
            "warp_intrinsics" => self.warp_intrinsics,
            "reductions" => self.reductions,
            "batched" => self.batched,
            "strided_batched" => self.strided_batched,
            "pointer_mode" => self.pointer_mode,
            "ilp64" => self.ilp64,
            "workspace" => self.workspace,
            "arg_checks" => self.arg_checks,
            "complex" => self.complex,
            "indexed" => self.indexed,
            "multi_file" => self.multi_file,
            "opaque" => self.opaque,
            "kernels" => self.kernels > 0,
            _ => return None,
        })
    }
}

/// The code shown for one API family (or one of its variants).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    /// `lib:version:family[:variant]`.
    pub id: String,
    /// Library.
    pub lib: String,
    /// Version.
    pub version: String,
    /// API family.
    pub family: String,
    /// Variant group (`""` for the family as a whole, else e.g. `batched`, `64`, `complex`).
    pub variant: String,
    /// The API whose graph was cut.
    pub api: String,
    /// Every API the slice stands for.
    pub apis: Vec<String>,
    /// Names along the call graph, breadth first.
    pub call_path: Vec<String>,
    /// Pieces in call order.
    pub pieces: Vec<SlicePiece>,
    /// Pieces left out for the budget.
    pub omitted: Vec<OmittedPiece>,
    /// Features read off the code.
    pub features: SliceFeatures,
    /// `L1` single function, `L2` single file, `L3` multi-file.
    pub difficulty: String,
    /// Tokens of all pieces.
    pub tokens: usize,
    /// What the slice is cut for, and values read off its code for the questions.
    #[serde(default)]
    pub focus: SliceFocus,
}

/// The function or kernel a slice is cut for, the host chain that reaches it, and
/// specific values read off the code (launch site, block shape, conditions) that make
/// the questions about it specific.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceFocus {
    /// The target's name (empty when the slice has no kernel to aim at).
    pub target: String,
    /// `file:start-end` of the target, shown whole.
    pub target_range: String,
    /// Lines of the target.
    pub target_lines: u32,
    /// Host chain from the entry point down to the target, by name.
    pub chain: Vec<String>,
    /// Files of the chain pieces and the target (for difficulty).
    pub chain_files: Vec<String>,
    /// The function that launches the target.
    pub launcher: String,
    /// The argument-check function on the chain.
    pub arg_check: String,
    /// Base-form functions shown beside the variant's own (variant slices).
    pub base_counterparts: Vec<String>,
    /// The variant function that differs from its base counterpart.
    pub variant_impl: String,
    /// The rocBLAS kernel a rocSOLVER slice reaches, when shown.
    pub cross_kernel: String,
    /// The API of an earlier family whose slice this one nearly repeats.
    pub twin_of: String,
    /// Placeholder values read off the code (`launch_site`, `block`, `condition`, ...).
    pub values: std::collections::BTreeMap<String, String>,
    /// Kernels the code shown launches but this slice's API never does, one line each
    /// with the condition that is false for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
    /// `(lib, file, first, last)` lines of the pieces shown that this slice's API never
    /// runs (a branch whose test is false for it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dead_lines: Vec<(String, String, u32, u32)>,
}

impl SliceFocus {
    /// Is line `line` of `file` one this slice's API never runs?
    pub fn dead_line(&self, lib: &str, file: &str, line: u32) -> bool {
        in_regions(&self.dead_lines, lib, file, line)
    }
}

/// Is line `line` of `lib`'s `file` inside one of `regions` (`(lib, file, first, last)`)?
fn in_regions(regions: &[(String, String, u32, u32)], lib: &str, file: &str, line: u32) -> bool {
    regions
        .iter()
        .any(|(l, f, a, b)| l == lib && f == file && (*a..=*b).contains(&line))
}

/// A planted bug: one line of a kernel shown changed from the library's code, for a
/// find-the-bug task. Known, so an answer is checked against it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutation {
    /// What kind of change: `bound-check`, `accumulate`, `barrier`, `stride`.
    pub kind: String,
    /// Library whose tree holds the line.
    pub lib: String,
    /// File relative to that tree's root.
    pub file: String,
    /// Line changed.
    pub line: u32,
    /// The line as the tree has it.
    pub original: String,
    /// The line as the prompt shows it.
    pub mutated: String,
    /// The part of the original line the change touches (`tid < n`): a right answer
    /// restores it.
    pub fix: String,
    /// That part as shown (`tid <= n`).
    pub shown: String,
    /// What goes wrong at run time, in a sentence.
    pub effect: String,
}

/// One question to ask about one slice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Stable id: a hash of library, version, slice, template id and version.
    pub id: String,
    /// The slice asked about.
    pub slice_id: String,
    /// Category (one per template file).
    pub category: String,
    /// Template id.
    pub template_id: String,
    /// Template version.
    pub template_version: u32,
    /// `L1`, `L2` or `L3`.
    pub difficulty: String,
    /// The question as asked.
    pub text: String,
    /// The answer must contain HIP code.
    pub requires_code: bool,
    /// Chat messages sent (system, user).
    pub messages: Vec<(String, String)>,
    /// Tokens of all messages.
    pub prompt_tokens: usize,
    /// The bug planted in the code shown (find-the-bug tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<Mutation>,
    /// For a question whose ideal answer is the same wherever the code follows one
    /// pattern: that pattern (the template's `pattern` keys and their values). A run
    /// asks it once per pattern, about the first family that has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

/// Question categories, one per `question_templates/<file>.toml`; the entry schema's
/// `category` enum lists the same.
pub const CATEGORIES: [&str; 8] = [
    "semantics",
    "api-to-kernel",
    "memory-access",
    "synchronization",
    "edge-cases",
    "performance",
    "implementation",
    "debugging",
];

/// Whether every answer of a category must carry HIP code: templates are checked
/// against it when loaded and `rocqa validate` reads it off an entry's category.
pub fn category_requires_code(category: &str) -> bool {
    category == "implementation"
}

/// Version of the entry and reject record layout (`src/emit/entry.schema.json`).
pub const ENTRY_SCHEMA_VERSION: u32 = 2;

/// A cited line range, checked against the pinned tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// Library whose tree holds the file.
    pub lib: String,
    /// File relative to the tree root.
    pub file: String,
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
    /// SHA-256 of lines `start..=end` joined by `\n`, at the pinned version.
    pub sha256: String,
}

/// One validation check and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Check name, e.g. `citations-resolve`.
    pub name: String,
    /// Passed?
    pub ok: bool,
    /// What was found.
    pub detail: String,
}

/// Where the code of an entry came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRef {
    /// How the tree was obtained.
    pub origin: Origin,
    /// SHA-256 recorded in the pin.
    pub sha256: String,
}

/// A piece of the slice an entry was asked over (its text is in the tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieceRef {
    /// Role in the call chain.
    pub role: PieceRole,
    /// Definition name.
    pub name: String,
    /// Library.
    pub lib: String,
    /// File.
    pub file: String,
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
    /// SHA-256 of those lines.
    pub sha256: String,
    /// The piece's code as the compiler sees it after macro expansion, when the prompt
    /// showed it (an entry point stamped by a macro): the model read it, so answers may
    /// quote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expansion: Option<String>,
}

/// Token usage of one answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens (as the server counted them).
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// One question-answer entry: a flat record that training stacks read as is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Record layout version.
    pub schema_version: u32,
    /// Stable id (same library, version, slice, template id and version: same id).
    pub id: String,
    /// Library.
    pub lib: String,
    /// Library version.
    pub version: String,
    /// The pinned source.
    pub source: SourceRef,
    /// API family.
    pub family: String,
    /// The API whose call graph was sliced.
    pub api: String,
    /// Every API the entry covers (the family's variants sharing the slice).
    pub apis: Vec<String>,
    /// Variant group (`""` for the family as a whole).
    pub variant: String,
    /// Definitions along the call graph.
    pub call_path: Vec<String>,
    /// Question category.
    pub category: String,
    /// Template id.
    pub template_id: String,
    /// Template version.
    pub template_version: u32,
    /// `L1`, `L2` or `L3`.
    pub difficulty: String,
    /// The question.
    pub question: String,
    /// The answer (prose).
    pub answer: String,
    /// HIP code in the answer, if any.
    pub code: Option<String>,
    /// Checked citations.
    pub citations: Vec<Citation>,
    /// Slice id.
    pub slice_id: String,
    /// The code shown to the model.
    pub slice: Vec<PieceRef>,
    /// Model name as the endpoint knows it.
    pub model: String,
    /// Parameters that change answers.
    pub params: serde_json::Value,
    /// SHA-256 of the messages sent.
    pub prompt_sha256: String,
    /// Token usage.
    pub usage: TokenUsage,
    /// Validation checks that ran, all passed.
    pub validation: Vec<Check>,
    /// What wrote the answer: `llm` (a model, validated) or `facts` (rendered from
    /// facts read off the code, no model).
    pub generator: String,
    /// `rocqa <version>`.
    pub tool: String,
    /// Set when the answer came from one request asking all questions of its slice
    /// (`extract --group-questions`): the prompt hash and usage are that request's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped_request: Option<GroupedRequest>,
    /// The bug planted in the code shown (find-the-bug tasks): the slice's line
    /// `mutation.line` read `mutation.mutated` in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<Mutation>,
}

/// Where an answer sat in a request that asked all questions of one slice at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupedRequest {
    /// Questions the request asked.
    pub questions: u32,
    /// This question's number in it (1-based).
    pub position: u32,
}

/// A question that produced no entry, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    /// Record layout version.
    pub schema_version: u32,
    /// The id the entry would have had.
    pub id: String,
    /// Library.
    pub lib: String,
    /// Library version.
    pub version: String,
    /// API family.
    pub family: String,
    /// The API whose call graph was sliced.
    pub api: String,
    /// Question category.
    pub category: String,
    /// Template id.
    pub template_id: String,
    /// Stage that rejected it: `llm` (no usable answer) or `validate`.
    pub stage: String,
    /// Short reason, e.g. `citation-outside-slice`.
    pub reason: String,
    /// What was found.
    pub detail: String,
    /// The model's raw answer (cut to 2,000 characters), when there was one.
    pub raw: Option<String>,
    /// Checks that ran.
    pub validation: Vec<Check>,
    /// Model name.
    pub model: String,
    /// Token usage (zero when no answer came back).
    pub usage: TokenUsage,
}

/// What a fact read off the code says something about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum FactKind {
    /// A kernel launch: kernel, grid, block, dynamic LDS, and the conditions guarding it.
    Launch,
    /// A kernel's `__launch_bounds__`.
    LaunchBounds,
    /// A `__shared__` (LDS) array and its size.
    SharedMemory,
    /// Barriers or fences in a kernel or device helper.
    Barrier,
    /// Atomic operations in a kernel or device helper.
    Atomic,
    /// Wavefront intrinsics (shuffles, ballots, DPP, swizzles) in device code.
    Wavefront,
    /// Memory reached another way than plain global or LDS accesses in device code:
    /// `__constant__` variables, `__ldg` read-only loads, texture fetches, nontemporal
    /// builtins.
    MemoryPath,
    /// The nonzero test of a scalar that every store of a kernel sits under
    /// (`if(alpha)`), or its zero test returning before them (`if(!alpha) return;`):
    /// `scalar`, `statement`. A zero scalar stores nothing.
    ScalarGuard,
    /// A helper the kernels call whose body neither stores to memory nor allocates,
    /// and calls nothing (`load_ptr_batch`): `returns`, its return statement.
    StoresNothing,
    /// An argument check: a condition and the error status it returns.
    ArgCheck,
    /// A quick return: a condition under which the function returns success early.
    QuickReturn,
    /// A branch on the handle's pointer mode (host or device scalars).
    PointerMode,
    /// A device-memory (workspace) size query answered without running.
    WorkspaceQuery,
    /// A call into another library (rocSOLVER into rocBLAS).
    CrossLibrary,
    /// A HIP runtime call in host code that moves, sets, allocates or frees memory, or
    /// synchronizes (`hipMemcpyAsync` of a result, `hipStreamSynchronize`).
    RuntimeCall,
    /// A store in host code through a pointer parameter or into the handle
    /// (`*mode = handle->pointer_mode`, `handle->stream = stream_id`, `*size = ...`).
    Store,
    /// The API's prototype in its public header: `returns` (the return type) and
    /// `params` (`type name` per parameter, in order, joined by ` | `).
    Declaration,
    /// What the API's own definition returns past every branch (`return X;` at the top
    /// level of its body): `returns`.
    Return,
    /// The API's own definition: where it is, and, for a function-try-block, what its
    /// `catch` handler returns (`handler`).
    Definition,
    /// A variable of static storage duration that host code sets: a namespace-scope
    /// variable stored to (`declared`, `decl_line`, and `uses`, the other lines of its
    /// file that name it), or a function-local `static` initialized by a call (`local`),
    /// which runs once. `target` and `value` as for stores.
    StaticState,
}

impl FactKind {
    /// Name as printed and serialized.
    pub fn label(self) -> &'static str {
        match self {
            FactKind::Launch => "launch",
            FactKind::LaunchBounds => "launch-bounds",
            FactKind::SharedMemory => "shared-memory",
            FactKind::Barrier => "barrier",
            FactKind::Atomic => "atomic",
            FactKind::Wavefront => "wavefront",
            FactKind::MemoryPath => "memory-path",
            FactKind::ScalarGuard => "scalar-guard",
            FactKind::StoresNothing => "stores-nothing",
            FactKind::ArgCheck => "arg-check",
            FactKind::QuickReturn => "quick-return",
            FactKind::PointerMode => "pointer-mode",
            FactKind::WorkspaceQuery => "workspace-query",
            FactKind::CrossLibrary => "cross-library",
            FactKind::RuntimeCall => "runtime-call",
            FactKind::Store => "store",
            FactKind::Declaration => "declaration",
            FactKind::Return => "return",
            FactKind::Definition => "definition",
            FactKind::StaticState => "static-state",
        }
    }
}

/// One fact read off the code at the pinned version, exact by construction: every
/// field is text of the code or a value resolved from it, at `file:line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// What the fact is about.
    pub kind: FactKind,
    /// The kernel, callee or function the fact names (the launched kernel for launches).
    pub subject: String,
    /// The function whose code holds the fact.
    pub function: String,
    /// Library whose tree holds it.
    pub lib: String,
    /// File relative to that tree's root.
    pub file: String,
    /// First line of the code the fact is read from.
    pub line: u32,
    /// Last line of that code.
    pub end_line: u32,
    /// First and last line of `function`'s definition (the code a citation lies in).
    pub function_lines: (u32, u32),
    /// Named values: `grid`, `block`, `lds`, `status`, `condition`, `size`, `bounds`,
    /// `ops`, `callee`, `template_args`, and `<name>=<value>` resolutions where known.
    pub values: std::collections::BTreeMap<String, String>,
    /// Run-time conditions that must hold for this code to run, outermost first, as
    /// written (`not (...)` for an `else` branch, `loop: for (...)` inside a loop).
    pub conditions: Vec<String>,
    /// The callers whose branches around the call state some of `conditions` (the
    /// code that shows them), outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub condition_sites: Vec<ConditionSite>,
    /// Where the fact falls in the run of the host code: the lines of the calls from
    /// the API down to `function` (the earliest where several reach it), then `line`.
    /// Sorting host facts by it puts them in the order the code runs them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<u32>,
}

/// A call in a caller's body: where a condition on the callee is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ConditionSite {
    /// Library whose tree holds the caller.
    pub lib: String,
    /// File relative to that tree's root.
    pub file: String,
    /// The caller.
    pub function: String,
    /// First and last line of the caller's definition.
    pub function_lines: (u32, u32),
    /// The line of the call.
    pub line: u32,
    /// The conditions of the fact its branches around the call state, as written there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<String>,
    /// Names those conditions test that are the caller's own parameters, named like an
    /// argument of the API but not it (a block size passed as `n`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_names: Vec<String>,
}

/// The facts of one public API function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiFacts {
    /// Library.
    pub lib: String,
    /// Library version.
    pub version: String,
    /// The API function.
    pub api: String,
    /// Its family.
    pub family: String,
    /// Its variant suffixes (`batched`, `strided_batched`, `64`).
    pub variants: Vec<String>,
    /// Facts in call-graph order.
    pub facts: Vec<Fact>,
    /// Launch sites of the graph left out, and why (not reached by this API's arguments).
    pub excluded: Vec<String>,
}

/// What the fact entries of an extract run came to (in the manifest).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactEntriesReport {
    /// Public API functions whose facts were read: every one of the families the run
    /// takes, the host bookkeeping ones no question is asked about included.
    pub apis: usize,
    /// Of those, APIs outside the question scope (the allowlist's `families.deny`).
    #[serde(default)]
    pub outside_question_scope: usize,
    /// Facts read over those APIs.
    pub facts: usize,
    /// What became of the fact entries rendered.
    #[serde(flatten)]
    pub entries: RenderedCounts,
    /// APIs with fewer than the minimum of fact entries, and why.
    pub below_minimum: std::collections::BTreeMap<String, String>,
    /// Claims of the rendered entries the fact check compared with the facts.
    #[serde(default)]
    pub fact_check: FactCheckCount,
}

/// What became of the entries a run rendered without a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderedCounts {
    /// Entries rendered.
    pub rendered: usize,
    /// Written by this run.
    pub written: usize,
    /// Already in `entries.jsonl` from an earlier run.
    pub kept_before: usize,
    /// Rendered entries the validator refused, by reason (none is written).
    pub rejected: std::collections::BTreeMap<String, usize>,
    /// Rendered entries left out as near-duplicates of one kept.
    pub near_duplicates: usize,
    /// Entries an earlier run rendered otherwise (an older renderer, or code that has
    /// changed), taken out of `entries.jsonl`.
    #[serde(default)]
    pub replaced: usize,
    /// Kept, and written by the shard their family falls in, not this one.
    #[serde(default)]
    pub other_shards: usize,
    /// Kept though their answer is near one kept: an API they list needed them to
    /// have its minimum of entries.
    #[serde(default)]
    pub similar_answers_kept: usize,
}

impl RenderedCounts {
    /// One line for the run's report.
    pub fn summary(&self) -> String {
        format!(
            "{} of {} written now ({} from before{}), {} refused by validation, {} near-duplicates left out",
            self.written,
            self.rendered,
            self.kept_before,
            if self.replaced > 0 {
                format!("; {} of an earlier rendering replaced", self.replaced)
            } else {
                String::new()
            },
            self.rejected.values().sum::<usize>(),
            self.near_duplicates
        ) + &if self.similar_answers_kept > 0 {
            format!(
                " ({} kept though near another's answer, for an API's minimum)",
                self.similar_answers_kept
            )
        } else {
            String::new()
        } + &if self.other_shards > 0 {
            format!(", {} kept for the shards their families fall in", self.other_shards)
        } else {
            String::new()
        }
    }
}

/// What a run did with the find-the-bug tasks it answers from their planted bugs
/// (`generator: mutation`, no model).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceEntriesReport {
    /// What became of the entries rendered (one per find-the-bug question planned).
    #[serde(flatten)]
    pub entries: RenderedCounts,
    /// Planted bugs by kind (of the entries kept).
    pub kinds: std::collections::BTreeMap<String, usize>,
}

/// What answers' claims are checked against: the facts of each API of a run, computed
/// once, and the names that tell a claim about another API apart from one the facts do
/// not cover.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactTable {
    /// Facts by API name.
    pub apis: std::collections::BTreeMap<String, ApiFacts>,
    /// Every `__global__` kernel the libraries define.
    pub kernels: std::collections::BTreeSet<String>,
    /// Every public API function of the libraries.
    pub api_names: std::collections::BTreeSet<String>,
}

/// How many claims of answers the fact check compared with the facts (in the manifest
/// and the `rocqa validate` summary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactCheckCount {
    /// Answers whose APIs have facts.
    pub answers: usize,
    /// Claims compared with a fact.
    pub claims: usize,
    /// Claims a fact contradicts (each rejects its answer as `contradicts-code`).
    pub contradicted: usize,
}

impl FactCheckCount {
    /// Adds another count.
    pub fn add(&mut self, o: FactCheckCount) {
        self.answers += o.answers;
        self.claims += o.claims;
        self.contradicted += o.contradicted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(name: &str, family: &str, precision: &str) -> ApiFunction {
        ApiFunction {
            name: name.into(),
            family: family.into(),
            precision: precision.into(),
            variants: vec![],
            file: String::new(),
            line: 0,
        }
    }

    #[test]
    fn kernels_named_for_another_precision_do_not_run() {
        let naming = ApiNaming {
            prefix: "rocblas_".into(),
            precisions: ["s", "d", "c", "z", "h", "cs", "zd"]
                .map(String::from)
                .to_vec(),
        };
        let sscal = api("rocblas_sscal", "scal", "s");
        let why = sscal.kernel_for_other_precision(&naming, "rocblas_hscal_mlt_4_kernel");
        assert_eq!(
            why.as_deref(),
            Some("named for precision `h`, this API's precision is `s`")
        );
        for runs in [
            "rocblas_sscal_2_kernel",
            "rocblas_scal_kernel",
            "rocblas_gemv_kernel",
        ] {
            assert_eq!(
                sscal.kernel_for_other_precision(&naming, runs),
                None,
                "{runs}"
            );
        }
        let batched = api("rocblas_saxpy_strided_batched_64", "axpy", "s");
        assert!(batched
            .kernel_for_other_precision(&naming, "rocblas_haxpy_mlt_8_kernel")
            .is_some());
        // No precision, no rule.
        let generic = api("rocblas_axpy_ex", "axpy", "");
        assert_eq!(
            generic.kernel_for_other_precision(&naming, "rocblas_haxpy_mlt_8_kernel"),
            None
        );
    }
}

/// What the repair requests of a run did and cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairCount {
    /// Repair requests sent.
    pub asked: usize,
    /// Answers kept after their repair.
    pub kept: usize,
    /// Prompt tokens of the repair requests.
    pub prompt_tokens: u64,
    /// Completion tokens of the repair requests.
    pub completion_tokens: u64,
}
