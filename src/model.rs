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
