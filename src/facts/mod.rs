//! The `facts` stage: what the code of one API does, read off the code itself.
//!
//! Takes an [`InterfaceGraph`] (from `graph`) and the expanded text of the trees (from
//! `index`: what the build compiles, macros expanded, left-out branches blank); gives
//! [`ApiFacts`]: kernels launched with their grid, block and dynamic LDS and the
//! conditions guarding each launch, launch bounds, `__shared__` arrays, barriers,
//! atomics, wavefront intrinsics, argument checks and quick returns with the status
//! they return, pointer-mode branches, workspace-size queries and cross-library calls,
//! each at `file:line`. Template arguments such as `NB` and `DIM_X` are resolved to
//! values through the call sites of the graph when every call site agrees.
//!
//! Facts say what runs: a launch of a kernel named for another precision than the
//! API's is left out (listed in `excluded`), and a run-time choice (a size, the pointer
//! mode, a device property) stays a condition of the fact, never dropped.

pub mod bind;
pub mod code;
pub mod compiled;
pub mod eval;
mod grid;
pub mod qa;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;

use crate::index::device::shared_declarations;
use crate::index::precise::instantiate::InstantiationReader;
use crate::index::ExpandedTree;
use crate::model::{
    ApiFacts, ApiNaming, EdgeKind, Fact, FactKind, FactTable, GraphNode, InterfaceGraph,
    LibraryIndex, NodeKind, SymbolKind,
};
use bind::Binder;
use code::{eval_int, one_line, split_args, tidy, Body, Scanner, Text};
use compiled::CompilerView;
use eval::{condition, is_branch_header, known_names, Truth};

/// A file of a library: `(lib, file)`.
type FileKey = (String, String);
/// A macro invoked in a file: `(line of the invocation, name, file and line of its
/// #define)`.
type MacroUse = (u32, String, String, u32);
/// A definition: `(lib, file, name, line)`.
type DefKey = (String, String, String, u32);

/// The expanded text of the trees facts are read from, by library, read once per file.
#[derive(Default)]
pub struct CodeText {
    trees: HashMap<String, ExpandedTree>,
    files: Mutex<HashMap<FileKey, Option<Arc<Text>>>>,
    /// Per file: the macros expanded in it, `(line of the invocation, name, file and
    /// line of its #define)`.
    macros: Mutex<HashMap<FileKey, Arc<Vec<MacroUse>>>>,
    bodies: Mutex<HashMap<DefKey, Option<Arc<Body>>>>,
    /// The namespace-scope variables of each file, read once.
    globals: Mutex<HashMap<FileKey, Arc<HashMap<String, code::NamespaceVariable>>>>,
    /// Heads and call sites the binder read, for every graph after.
    bind_cache: bind::TextCache,
    /// Per library: the compiler's instantiations, where they can be read.
    compilers: HashMap<String, Arc<InstantiationReader>>,
    /// Per `(lib, API)`: the compiler's reading of its graph, read once.
    views: Mutex<HashMap<(String, String), Arc<CompilerView>>>,
    /// Per library: the parameter defaults its headers' declarations write.
    declared: Mutex<HashMap<String, Arc<bind::DeclaredDefaults>>>,
    /// Per library: the constructors its headers define with member initializers.
    constructors: Mutex<HashMap<String, Arc<bind::Constructors>>>,
    /// Per library: the one-member accessors its headers define.
    accessors: Mutex<HashMap<String, Arc<bind::Accessors>>>,
}

impl CodeText {
    /// Adds a library's expanded tree.
    pub fn add(&mut self, lib: &str, tree: ExpandedTree) {
        self.trees.insert(lib.to_string(), tree);
    }

    /// Adds the compiler's reading of a library's units: what runs in its APIs is then
    /// decided by the instantiations they reach, the text evaluator standing in where
    /// a unit does not compile.
    pub fn add_compiler(&mut self, lib: &str, reader: Arc<InstantiationReader>) {
        self.compilers.insert(lib.to_string(), reader);
    }

    /// What the compiler's readings cost so far, per library.
    pub fn compiler_stats(
        &self,
    ) -> Vec<(String, crate::index::precise::instantiate::InstantiateStats)> {
        let mut out: Vec<_> = self
            .compilers
            .iter()
            .map(|(l, r)| (l.clone(), r.stats()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The parameter defaults library `lib`'s header declarations write, read once.
    fn declared_defaults(&self, lib: &str) -> Arc<bind::DeclaredDefaults> {
        self.read_headers_once(&self.declared, lib, |t| {
            bind::declared_defaults(t.headers())
        })
    }

    /// The constructors library `lib`'s headers define with member initializers, read once.
    fn constructors(&self, lib: &str) -> Arc<bind::Constructors> {
        self.read_headers_once(&self.constructors, lib, |t| bind::constructors(t.headers()))
    }

    /// The one-member accessors library `lib`'s headers define, read once.
    fn accessors(&self, lib: &str) -> Arc<bind::Accessors> {
        self.read_headers_once(&self.accessors, lib, |t| bind::accessors(t.headers()))
    }

    /// What `read` makes of library `lib`'s headers, kept in `cache` after the first time.
    fn read_headers_once<T: Default>(
        &self,
        cache: &Mutex<HashMap<String, Arc<T>>>,
        lib: &str,
        read: impl Fn(&ExpandedTree) -> T,
    ) -> Arc<T> {
        if let Some(d) = locked(cache).get(lib) {
            return d.clone();
        }
        let d = Arc::new(self.trees.get(lib).map(read).unwrap_or_default());
        locked(cache).insert(lib.to_string(), d.clone());
        d
    }

    /// The compiler's reading of one API's graph (an empty one without a reader).
    fn compiler_view(&self, g: &InterfaceGraph) -> Arc<CompilerView> {
        let key = (g.lib.clone(), g.api.name.clone());
        if let Some(v) = locked(&self.views).get(&key) {
            return v.clone();
        }
        let v = Arc::new(
            self.compilers
                .get(&g.lib)
                .map(|r| compiled::view(g, r))
                .unwrap_or_default(),
        );
        locked(&self.views).insert(key, v.clone());
        v
    }

    fn text(&self, lib: &str, file: &str) -> Option<Arc<Text>> {
        let key = (lib.to_string(), file.to_string());
        if let Some(t) = locked(&self.files).get(&key) {
            return t.clone();
        }
        let expanded = self.trees.get(lib).and_then(|tr| tr.expand(file));
        let t = expanded.map(|(s, expansions)| {
            let t = Arc::new(Text::new(s));
            let macros = expansions
                .into_iter()
                .map(|x| {
                    (
                        t.line_of(x.start),
                        x.name,
                        x.def_file.to_string(),
                        x.def_line,
                    )
                })
                .collect();
            locked(&self.macros).insert(key.clone(), Arc::new(macros));
            t
        });
        locked(&self.files).insert(key, t.clone());
        t
    }

    /// For a statement at `line` of a file whose text as written does not name
    /// `needle` (`is_device_memory_size_query`) while a macro invoked there, defined in
    /// another file, does (`RETURN_ZERO_DEVICE_MEMORY_SIZE_IF_QUERIED(handle);`): the
    /// macro, its file and the lines of its `#define`, which show what runs there.
    fn macro_elsewhere(
        &self,
        lib: &str,
        file: &str,
        line: u32,
        needle: &str,
    ) -> Option<(String, String, u32, u32)> {
        self.text(lib, file)?;
        let tree = self.trees.get(lib)?;
        let written_line = tree
            .written(file)?
            .lines()
            .nth(line.checked_sub(1)? as usize)?;
        if written_line.contains(needle) {
            return None;
        }
        let macros = locked(&self.macros)
            .get(&(lib.to_string(), file.to_string()))
            .cloned()?;
        macros
            .iter()
            .filter(|(at, _, def_file, _)| *at == line && def_file != file)
            .find_map(|(_, name, def_file, def_line)| {
                let lines: Vec<&str> = tree.written(def_file)?.lines().collect();
                let first = def_line.checked_sub(1)? as usize;
                let mut end = first;
                while end + 1 < lines.len() && lines[end].trim_end().ends_with('\\') {
                    end += 1;
                }
                lines
                    .get(first..=end)?
                    .iter()
                    .any(|l| l.contains(needle))
                    .then(|| (name.clone(), def_file.clone(), *def_line, end as u32 + 1))
            })
    }

    /// Line `line` of a file as written (comments blanked), macros unexpanded.
    /// For code at `lines` of a file that invokes a macro of that file whose body names
    /// `name` where the lines do not (`FORWARD_SUBSTITUTIONS;` launching
    /// `conj_unit_forward_substitution_kernel`): the macro and the lines of its
    /// `#define`, which show what runs there.
    fn defining_macro(
        &self,
        lib: &str,
        file: &str,
        (first, last): (u32, u32),
        name: &str,
    ) -> Option<(String, u32, u32)> {
        let text = self.trees.get(lib)?.written(file)?;
        let lines: Vec<&str> = text.lines().collect();
        let site = lines
            .get(first.checked_sub(1)? as usize..(last as usize).min(lines.len()))?
            .join("\n");
        let names = |s: &str| -> Vec<String> {
            s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        };
        let site_names = names(&site);
        if site_names.iter().any(|w| w == name) {
            return None;
        }
        for (k, l) in lines.iter().enumerate() {
            let Some(rest) = l.trim_start().strip_prefix('#') else {
                continue;
            };
            let Some(def) = rest.trim_start().strip_prefix("define") else {
                continue;
            };
            let macro_name = names(def).into_iter().next().unwrap_or_default();
            if !site_names.contains(&macro_name) {
                continue;
            }
            let mut end = k;
            while end + 1 < lines.len() && lines[end].trim_end().ends_with('\\') {
                end += 1;
            }
            if lines[k..=end]
                .iter()
                .any(|l| names(l).iter().any(|w| w == name))
            {
                return Some((macro_name, k as u32 + 1, end as u32 + 1));
            }
        }
        None
    }

    /// Lines `first..=last` of a file as written (comments blanked), on one line.
    fn written_lines(&self, lib: &str, file: &str, first: u32, last: u32) -> Option<String> {
        let s = self.trees.get(lib)?.written(file)?;
        let lines: Vec<&str> = s
            .lines()
            .skip(first.checked_sub(1)? as usize)
            .take((last + 1).saturating_sub(first) as usize)
            .collect();
        Some(code::one_line(&lines.join("\n")))
    }

    fn written_line(&self, lib: &str, file: &str, line: u32) -> Option<&str> {
        let s = self.trees.get(lib)?.written(file)?;
        s.lines().nth(line.checked_sub(1)? as usize)
    }

    /// The variables a file declares at namespace scope.
    fn globals(&self, lib: &str, file: &str) -> Arc<HashMap<String, code::NamespaceVariable>> {
        let key = (lib.to_string(), file.to_string());
        if let Some(g) = locked(&self.globals).get(&key) {
            return g.clone();
        }
        let g = Arc::new(
            self.text(lib, file)
                .map(|t| code::namespace_variables(&t.s))
                .unwrap_or_default(),
        );
        locked(&self.globals).insert(key, g.clone());
        g
    }

    /// The lines of `file` that name `name` as written, outside `skip` (line ranges),
    /// as ranges of lines at most two apart.
    fn lines_naming(
        &self,
        lib: &str,
        file: &str,
        name: &str,
        skip: &[(u32, u32)],
    ) -> Vec<(u32, u32)> {
        let Some(text) = self.trees.get(lib).and_then(|t| t.written(file)) else {
            return Vec::new();
        };
        let mut out: Vec<(u32, u32)> = Vec::new();
        for (k, l) in text.lines().enumerate() {
            let line = k as u32 + 1;
            if skip.iter().any(|&(a, b)| a <= line && line <= b) || find_word(l, name).is_none() {
                continue;
            }
            match out.last_mut() {
                Some(r) if line <= r.1 + 2 => r.1 = line,
                _ => out.push((line, line)),
            }
        }
        out
    }

    /// The body of the definition a node stands for.
    fn body(&self, n: &GraphNode) -> Option<(Arc<Text>, Arc<Body>)> {
        let t = self.text(&n.lib, &n.file)?;
        let key = (n.lib.clone(), n.file.clone(), n.name.clone(), n.line);
        if let Some(b) = locked(&self.bodies).get(&key) {
            return b.clone().map(|b| (t.clone(), b));
        }
        let from = t.offset(n.line.min(n.start_line.max(1)));
        let to = t.offset(n.end_line.max(n.line) + 1);
        let b = Scanner::new(&t.s).function(&n.name, from, to).map(Arc::new);
        locked(&self.bodies).insert(key, b.clone());
        b.map(|b| (t, b))
    }
}

/// A cache shared by the threads reading facts. A thread that panicked while holding
/// it left at worst an entry missing, which is read again.
fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Detectors {
    ret_status: Regex,
    ret_any: Regex,
    ret_query_ternary: Regex,
    dynamic_shared: Regex,
    barrier: Regex,
    atomic: Regex,
    wavefront: Regex,
    memory_path: Regex,
    constant_var: Regex,
    launch_bounds: Regex,
    runtime: Regex,
    memcpy_kind: Regex,
    store: Regex,
    plain_store: Regex,
    static_local: Regex,
    call: Regex,
}

fn detectors() -> &'static Detectors {
    static D: OnceLock<Detectors> = OnceLock::new();
    D.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        Detectors {
            ret_status: r(r"^return\s*\(?\s*([a-z]\w*_status_\w+)\s*\)?\s*;$"),
            ret_any: r(r"^return\s+(.+?)\s*;$"),
            ret_query_ternary: r(r"^return\s*\(?\s*handle\s*->\s*is_device_memory_size_query\s*\(\s*\)\s*\)?\s*\?\s*\(?\s*([a-z]\w*_status_\w+)\s*\)?\s*:\s*\(?\s*([a-z]\w*_status_\w+)\s*\)?\s*;$"),
            dynamic_shared: r(r"\bextern\s+__shared__\b|\bHIP_DYNAMIC_SHARED\b"),
            barrier: r(r"\b(__syncthreads|__threadfence\w*|__syncwarp|__builtin_amdgcn_s_barrier|__builtin_amdgcn_fence)\s*\("),
            atomic: r(r"\b(atomic[A-Z]\w*|__hip_atomic\w*|__atomic_\w+|rocblas_atomic\w*)\s*\("),
            wavefront: r(r"\b(__shfl\w*|__ballot\w*|__any|__all|__lane_id|__builtin_amdgcn_(?:ds_swizzle|mov_dpp|update_dpp|readfirstlane|readlane|ds_bpermute|ds_permute)\w*)\s*\("),
            memory_path: r(r"\b(__ldg|__builtin_nontemporal_(?:load|store)|tex[123]D\w*|tex1Dfetch\w*)\s*\("),
            constant_var: r(r"\b__constant__\s+(?:const\s+)?(?:[A-Za-z_][\w:]*(?:\s*<[^;{}]*?>)?\s+)+?([A-Za-z_]\w*)\s*[\[=;]"),
            launch_bounds: r(r"__launch_bounds__\s*\("),
            // rocBLAS's `handle->device_malloc(bytes)` is the allocation of a
            // workspace: it takes the bytes from the handle's device memory.
            runtime: r(r"\b(hip(?:Memcpy|Memset|Malloc|HostMalloc|Free|HostFree)\w*|hip(?:Stream|Device|Event)Synchronize|hipEventRecord|hipStreamWaitEvent|device_malloc)\s*\("),
            memcpy_kind: r(r"\bhipMemcpy(?:HostToDevice|DeviceToHost|DeviceToDevice|HostToHost|Default)\b"),
            // `*p = v;`, `p->f = v;`, `p->f.g = v;` (not `==`, `+=`, declarations).
            store: r(r"^(\*\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*->\s*[A-Za-z_]\w*(?:\s*(?:->|\.)\s*[A-Za-z_]\w*)*)\s*=\s*([^=].*?)\s*;$"),
            // `name = v;`: a store to a variable, one of namespace scope if the file
            // declares it there.
            plain_store: r(r"^([A-Za-z_]\w*)\s*=\s*([^=].*?)\s*;$"),
            // `static int once = (f(), 0);`: a function-local static and its initializer.
            static_local: r(r"^(static\s+(?:thread_local\s+)?[^=]*?\b([A-Za-z_]\w*))\s*=\s*(.+?)\s*;$"),
            call: r(r"\b[A-Za-z_][\w:]*\s*\("),
        }
    })
}

/// A memory fence, which orders this thread's accesses and synchronizes no threads.
pub fn is_fence(op: &str) -> bool {
    op.starts_with("__threadfence") || op == "__builtin_amdgcn_fence"
}

/// Template parameters of the definition starting at `from`: `(name, is_value)`.
fn template_params(t: &Text, from: usize, name_at: usize) -> Vec<(String, bool)> {
    template_param_list(t, from, name_at)
        .into_iter()
        .map(|(name, is_value, _)| (name, is_value))
        .collect()
}

/// The conditions a definition's template parameters require through `enable_if`
/// (`std::enable_if_t<!rocblas_is_complex<T>, int> = 0` requires
/// `!rocblas_is_complex<T>`): where one is false, the overload does not exist.
fn enable_if_conditions(t: &Text, from: usize, name_at: usize) -> Vec<String> {
    let head = &t.s[from..name_at.max(from)];
    let Some(k) = head.rfind("template") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut rest = &head[k..];
    while let Some(at) = rest.find("enable_if") {
        rest = &rest[at + "enable_if".len()..];
        let Some(body) = rest.strip_prefix("_t<").or_else(|| rest.strip_prefix('<')) else {
            continue;
        };
        let mut depth = 0i32;
        let end = body.char_indices().find_map(|(i, c)| {
            match c {
                '<' | '(' => depth += 1,
                '>' | ')' => depth -= 1,
                ',' if depth == 0 => return Some(i),
                _ => {}
            }
            (depth < 0).then_some(i)
        });
        if let Some(e) = end {
            out.push(code::tidy(&body[..e]));
        }
    }
    out
}

/// A definition's template parameters `(name, is_value, default)`, as
/// `template_params` reads them.
fn template_param_list(
    t: &Text,
    from: usize,
    name_at: usize,
) -> Vec<(String, bool, Option<String>)> {
    let head = &t.s[from..name_at.max(from)];
    let Some(k) = head.rfind("template") else {
        return Vec::new();
    };
    let rest = &head[k + "template".len()..];
    let Some(open) = rest.find('<') else {
        return Vec::new();
    };
    let sc = Scanner::new(rest);
    let close = sc.matching(open);
    if close >= rest.len() {
        return Vec::new();
    }
    split_args(&rest[open + 1..close], true)
        .into_iter()
        .filter_map(|p| {
            let (p, default) = match p.split_once('=') {
                Some((p, d)) => (p.trim().to_string(), Some(d.trim().to_string())),
                None => (p.trim().to_string(), None),
            };
            let name = p.split_whitespace().last()?.trim_start_matches(['*', '&']);
            let is_type = p.starts_with("typename") || p.starts_with("class");
            Some((name.to_string(), !is_type, default))
        })
        .collect()
}

/// A launch as written at one site.
struct LaunchArgs {
    kernel_expr: String,
    template_args: Vec<String>,
    grid: String,
    block: String,
    lds: String,
    /// The stream argument (`0` where a `<<<...>>>` launch gives none).
    stream: String,
    /// The kernel's arguments, as written.
    args: Vec<String>,
    start: usize,
    end: usize,
}

/// Every launch of `kernel` in the body `open..close`, in order.
fn launches_in(t: &Text, open: usize, close: usize, kernel: &str) -> Vec<(u32, LaunchArgs)> {
    let mut out = Vec::new();
    let (first, last) = (t.line_of(open), t.line_of(close));
    for line in first..=last {
        let l = t.line(line);
        if names(l, kernel) && (l.contains("hipLaunchKernelGGL") || l.contains("<<<")) {
            // A macro's expansion sits on the line invoking it, with every launch it
            // makes (one per branch of LAUNCH_GEAM_SOURCE_KERNEL).
            let mut from = t.offset(line);
            while let Some(la) = parse_launch(t, line, kernel, from) {
                from = la.end.max(la.start + 1);
                out.push((line, la));
            }
        }
    }
    out
}

/// The first launch of `kernel` on `line` at or after offset `from`.
fn parse_launch(t: &Text, line: u32, kernel: &str, from: usize) -> Option<LaunchArgs> {
    let a = t.offset(line).max(from);
    let b = t.offset(line + 1);
    if a >= b {
        return None;
    }
    let hay = &t.s[a..b];
    let sc = Scanner::new(&t.s);
    for (k, _) in hay.match_indices("hipLaunchKernelGGL") {
        let p = a + k + "hipLaunchKernelGGL".len();
        let open = p + t.s[p..].find('(')?;
        let close = sc.matching(open);
        let args = split_args(&t.s[open + 1..close.min(t.s.len())], false);
        if args.len() < 5 || !names(&args[0], kernel) {
            continue;
        }
        let kexpr = args[0]
            .trim_start_matches('(')
            .trim_end_matches(')')
            .to_string();
        return Some(LaunchArgs {
            template_args: kernel_template_args(&kexpr),
            kernel_expr: tidy(&kexpr),
            grid: args[1].clone(),
            block: args[2].clone(),
            lds: args[3].clone(),
            stream: args[4].clone(),
            args: args[5..].iter().map(|x| tidy(x)).collect(),
            start: a + k,
            end: close,
        });
    }
    if let Some(k) = hay.find("<<<") {
        let start = a + k + 3;
        let end = start + t.s[start..].find(">>>")?;
        let args = split_args(&t.s[start..end], false);
        // `kernel<<<...>>>(a, b)`: the call's own arguments.
        let call = end + 3 + t.s[end + 3..].find('(').unwrap_or(0);
        let kernel_args = if t.s[end + 3..call].trim().is_empty() && t.s[call..].starts_with('(') {
            let close = sc.matching(call).min(t.s.len());
            split_args(&t.s[call + 1..close], false)
                .iter()
                .map(|x| tidy(x))
                .collect()
        } else {
            Vec::new()
        };
        let head = &t.s[a..a + k];
        let kpos = head.rfind(kernel)?;
        if !names(&head[kpos..], kernel) {
            return None;
        }
        let kexpr = tidy(&head[kpos..]);
        if args.len() >= 2 {
            return Some(LaunchArgs {
                template_args: kernel_template_args(&kexpr),
                kernel_expr: kexpr,
                grid: args[0].clone(),
                block: args[1].clone(),
                lds: args.get(2).cloned().unwrap_or_else(|| "0".into()),
                stream: args.get(3).cloned().unwrap_or_else(|| "0".into()),
                args: kernel_args,
                start: a + kpos,
                end,
            });
        }
    }
    None
}

fn kernel_template_args(kexpr: &str) -> Vec<String> {
    let Some(open) = kexpr.find('<') else {
        return Vec::new();
    };
    let sc = Scanner::new(kexpr);
    let close = sc.matching(open);
    if close >= kexpr.len() {
        return Vec::new();
    }
    split_args(&kexpr[open + 1..close], true)
}

/// Reads the facts of one API function off its interface graph.
pub struct FactReader<'a> {
    code: &'a CodeText,
    /// How the library's API names are made (prefix, precisions).
    naming: ApiNaming,
}

/// Where a value of a template parameter comes from: the node and its parameters.
type ParamValues = BTreeMap<String, String>;

/// Why a launch never runs for the API, and the line of the `if` that rules it out.
type DeadLaunch = (String, u32);

/// One launch site read for an API: its fact, the kernel's parameter values, why it
/// never runs (if so), its conditions as written, and what is known there.
type LaunchSite = (
    Fact,
    ParamValues,
    Option<DeadLaunch>,
    Vec<String>,
    eval::Env,
);

/// Launches of one kernel on one line with the same configuration, one per branch of
/// an `if`/`else` chain every branch of which launches it (a macro's expansion:
/// LAUNCH_GEAM_SOURCE_KERNEL launches geam_min_plus_kernel in each pointer-mode and
/// alpha branch), are one launch under the conditions they share: the condition of
/// one branch is not a condition of the launch.
fn merge_branch_launches(sites: Vec<LaunchSite>) -> Vec<(Fact, ParamValues, Option<DeadLaunch>)> {
    let key = |f: &Fact| {
        (
            f.line,
            f.values.get("grid").cloned(),
            f.values.get("block").cloned(),
            f.values.get("lds").cloned(),
        )
    };
    let mut groups: Vec<Vec<LaunchSite>> = Vec::new();
    for s in sites {
        match groups.iter_mut().find(|g| key(&g[0].0) == key(&s.0)) {
            Some(g) => g.push(s),
            None => groups.push(vec![s]),
        }
    }
    let mut out = Vec::new();
    for g in groups {
        let raws: Vec<&[String]> = g.iter().map(|s| s.3.as_slice()).collect();
        let shared = raws[0]
            .iter()
            .enumerate()
            .take_while(|(k, c)| raws.iter().all(|r| r.get(*k) == Some(c)))
            .count();
        let tails: Vec<&[String]> = raws.iter().map(|r| &r[shared..]).collect();
        if g.len() < 2 || !exhaustive(&tails) {
            out.extend(g.into_iter().map(|(f, kv, dead, _, _)| (f, kv, dead)));
            continue;
        }
        let prefix = raws[0][..shared].to_vec();
        let live = g.iter().position(|s| s.2.is_none());
        let (mut f, kv, dead, _, env) = g.into_iter().nth(live.unwrap_or(0)).expect("non-empty");
        if dead.is_none() {
            if let Ok(open) = decided(&prefix, &env) {
                f.conditions = open;
            }
        }
        out.push((f, kv, dead));
    }
    out
}

/// Do the condition lists cover every case: one is empty, or they split on a
/// condition and its negation, each side covering every case in turn?
fn exhaustive(lists: &[&[String]]) -> bool {
    if lists.iter().any(|l| l.is_empty()) {
        return true;
    }
    let c = &lists[0][0];
    let neg = negation(c);
    let (with, without): (Vec<&[String]>, Vec<&[String]>) = lists.iter().partition(|l| &l[0] == c);
    !without.is_empty()
        && without.iter().all(|l| l[0] == neg)
        && exhaustive(&with.iter().map(|l| &l[1..]).collect::<Vec<_>>())
        && exhaustive(&without.iter().map(|l| &l[1..]).collect::<Vec<_>>())
}

/// A condition's negation as the branch reader writes it: `not (X)` for `X`.
fn negation(c: &str) -> String {
    if let Some(inner) = c.strip_prefix("not (").and_then(|r| r.strip_suffix(')')) {
        let balanced = inner.chars().try_fold(0i32, |d, ch| {
            let d = d + i32::from(ch == '(') - i32::from(ch == ')');
            (d >= 0).then_some(d)
        });
        if balanced == Some(0) {
            return inner.to_string();
        }
    }
    format!("not ({c})")
}

/// The launches of one API's graph: those it makes (kernel node, fact, the kernel's
/// parameters as set there) and those it never makes (kernel node, why).
#[derive(Default)]
struct Launches {
    live: Vec<(usize, Fact, ParamValues)>,
    dead: Vec<(usize, String)>,
    /// `(lib, file, first, last)` lines of each branch holding a launch never made.
    regions: Vec<(String, String, u32, u32)>,
    /// Per launch edge `(file, line)`: the launching function's own open conditions at
    /// its first live launch.
    own_conditions: BTreeMap<(String, u32), Vec<String>>,
    /// Launch edges `(file, line, kernel node)` none of whose launches is made.
    dead_edges: BTreeSet<(String, u32, usize)>,
}

impl<'a> FactReader<'a> {
    /// A reader over `code`, for a library whose API names are `prefix` + precision +
    /// family.
    pub fn new(code: &'a CodeText, prefix: &str, precisions: &[String]) -> FactReader<'a> {
        for lib in code.trees.keys() {
            for header in ENUM_HEADERS {
                if let Some(t) = code.text(lib, header) {
                    eval::add_enumerators(&t.s);
                }
            }
            for header in CONSTANT_HEADERS {
                if let Some(t) = code.text(lib, header) {
                    eval::add_constants(&t.s);
                }
            }
        }
        FactReader {
            code,
            naming: ApiNaming {
                prefix: prefix.to_string(),
                precisions: precisions.to_vec(),
            },
        }
    }

    /// What the graph holds that this API never runs: kernels it never launches (named
    /// for another precision, or every launch read under a condition false for it) and
    /// nodes no live call reaches.
    pub fn what_runs(&self, g: &InterfaceGraph) -> crate::model::WhatRuns {
        let binder = Binder::new(self.code, g);
        let mut reached = HashMap::new();
        let l = self.launches(g, &binder, &mut reached, false);
        let live: BTreeSet<usize> = l.live.iter().map(|(k, ..)| *k).collect();
        let mut regions = l.regions;
        regions.extend(self.dead_device_lines(g, &binder));
        crate::model::WhatRuns {
            kernels: l
                .dead
                .into_iter()
                .filter(|(k, _)| !live.contains(k))
                .collect(),
            // Host functions: the steps a path shown may go through (not one every
            // call of which is dead for this API, as after a return always taken).
            unreached: (0..g.nodes.len())
                .filter(|&i| {
                    g.nodes[i].kind == NodeKind::Function
                        && (!binder.reached(i)
                            || (i > 1
                                && self
                                    .reach_conditions(g, &binder, i, &mut reached, 0)
                                    .is_none()))
                })
                .collect(),
            regions,
            launch_conditions: l.own_conditions,
            dead_launches: l.dead_edges,
        }
    }

    /// The statements of kernels and device functions under a test false for this
    /// API, as `(lib, file, first, last)` lines: her2k's kernels never run the
    /// `!TWOK && HERM` block that zeroes the diagonal's imaginary part
    /// (herk_syrk_device.hpp:1190-1194), so no bug planted there shows for it.
    fn dead_device_lines(
        &self,
        g: &InterfaceGraph,
        binder: &Binder,
    ) -> Vec<(String, String, u32, u32)> {
        let mut out = Vec::new();
        for (i, n) in g.nodes.iter().enumerate() {
            if !matches!(n.kind, NodeKind::Kernel | NodeKind::DeviceHelper) || !binder.reached(i) {
                continue;
            }
            let Some((t, b)) = self.code.body(n) else {
                continue;
            };
            for s in b.stmts.iter().filter(|s| !s.conds.is_empty()) {
                let env = binder.env_at(i, s.start);
                let Some(k) = s
                    .conds
                    .iter()
                    .position(|c| !is_branch_header(c) && condition(c, &env) == Truth::False)
                else {
                    continue;
                };
                // From the `if` whose test fails, so its own line counts too.
                let first = s.cond_at.get(k).copied().unwrap_or(s.start).min(s.start);
                let last = t.line_of(s.end.saturating_sub(1).max(s.start));
                out.push((n.lib.clone(), n.file.clone(), t.line_of(first), last));
            }
        }
        out
    }

    /// Every launch the graph holds, read with what the API fixes.
    fn launches(
        &self,
        g: &InterfaceGraph,
        binder: &Binder,
        reached: &mut HashMap<usize, Option<Reach>>,
        detail: bool,
    ) -> Launches {
        let mut out = Launches::default();
        let view = self.code.compiler_view(g);
        let mut sure: HashMap<usize, bool> = HashMap::new();
        for e in g.edges.iter().filter(|e| e.kind == EdgeKind::Launch) {
            let (from, to) = (&g.nodes[e.from], &g.nodes[e.to]);
            let covered = view.covers(e.from);
            let by_name = (!covered)
                .then(|| g.api.kernel_for_other_precision(&self.naming, &to.name))
                .flatten();
            if let Some(why) = by_name {
                out.dead
                    .push((e.to, format!("{} at {}:{}: {why}", to.name, e.file, e.line)));
                out.dead_edges.insert((e.file.clone(), e.line, e.to));
                continue;
            }
            // What must hold for the API to reach the launching function at all (a
            // size threshold or device property tested by a caller) comes first.
            let Some(reach) = self.reach_conditions(g, binder, e.from, reached, 0) else {
                out.dead.push((
                    e.to,
                    format!(
                        "{} at {}:{}: {} is never called by this API (every call site's condition is false for it)",
                        to.name, e.file, e.line, from.name
                    ),
                ));
                out.dead_edges.insert((e.file.clone(), e.line, e.to));
                continue;
            };
            let pv = if detail {
                template_values(binder, e.from)
            } else {
                ParamValues::new()
            };
            let mut any_live = false;
            for (mut f, kv, mut dead) in self.launch_facts(binder, e.from, (from, to), &pv, detail)
            {
                let mut decided_by = compiled::TEXT;
                if let Some(made) =
                    view.launches(e.from, e.to, &to.name, &f.file, f.line, f.end_line)
                {
                    decided_by = compiled::COMPILER;
                    if !made {
                        let overload = if view.other_overload(e.from, e.to) {
                            format!(
                                "launches another overload of {} than the one at {}:{}",
                                to.name, to.file, to.line
                            )
                        } else {
                            "not".to_string()
                        };
                        dead = Some((
                            format!(
                                "{overload} in {} (the instantiation this API reaches, read by the compiler)",
                                view.shown(e.from)
                            ),
                            f.line,
                        ));
                    } else if dead
                        .as_ref()
                        .is_some_and(|(why, _)| why.contains("constexpr"))
                    {
                        // The compiler kept the branch: its `if constexpr` holds.
                        dead = None;
                    }
                    // What the compiler decided is no longer a condition.
                    f.conditions.retain(|c| !c.starts_with("constexpr "));
                }
                f.values.insert("decided_by".into(), decided_by.into());
                if let Some((why, first)) = dead {
                    out.dead
                        .push((e.to, format!("{} at {}:{}: {why}", to.name, f.file, f.line)));
                    out.regions
                        .push((f.lib.clone(), f.file.clone(), first, f.end_line));
                    continue;
                }
                // Where the function launches the kernel at several sites, only what
                // every live one tests is a condition of reaching a launch of it.
                out.own_conditions
                    .entry((e.file.clone(), e.line))
                    .and_modify(|shared| shared.retain(|c| f.conditions.contains(c)))
                    .or_insert_with(|| f.conditions.clone());
                let said: Vec<&str> = ["grid", "block", "lds"]
                    .iter()
                    .filter_map(|k| f.values.get(*k).map(String::as_str))
                    .chain(f.conditions.iter().map(String::as_str))
                    .collect();
                let own = binder.own_names_in(e.from, &said.join(" "));
                note_own_names(&mut f, own);
                under(&mut f, &reach);
                if !self.surely_reached(g, binder, e.from, &mut sure, 0) {
                    f.values.insert(ON_A_TESTED_PATH.into(), "1".into());
                }
                out.live.push((e.to, f, kv));
                any_live = true;
            }
            if !any_live {
                out.dead_edges.insert((e.file.clone(), e.line, e.to));
            }
        }
        out
    }

    /// The facts of the graph's API.
    pub fn read(&self, g: &InterfaceGraph) -> ApiFacts {
        let mut facts: Vec<Fact> = g
            .nodes
            .first()
            .filter(|n| n.kind == NodeKind::Api)
            .and_then(|n| self.declaration(n))
            .into_iter()
            .collect();
        let binder = Binder::new(self.code, g);
        let mut kernel_values: HashMap<usize, Vec<ParamValues>> = HashMap::new();
        let mut reached: HashMap<usize, Option<Reach>> = HashMap::new();
        // Launches first: they decide which kernels run and with which parameters.
        let l = self.launches(g, &binder, &mut reached, true);
        let mut excluded: Vec<String> = l.dead.into_iter().map(|(_, why)| why).collect();
        let view = self.code.compiler_view(g);
        for (k, f, kv) in l.live {
            kernel_values.entry(k).or_default().push(kv);
            facts.push(f);
        }
        let launched: BTreeSet<usize> = kernel_values.keys().copied().collect();
        let api_params = facts
            .iter()
            .find(|f| f.kind == FactKind::Declaration)
            .and_then(|f| f.values.get("params"))
            .cloned()
            .unwrap_or_default();
        // Numerics checking runs only when the handle asks for it; its copies and
        // synchronizations are not what the API itself does.
        let computing = g.reachable_without(crate::model::EdgeKind::CheckNumerics);
        // Helpers the kernels call that store or call something: no overload of their
        // name is said to store nothing.
        let mut impure: BTreeSet<String> = BTreeSet::new();
        for (i, n) in g.nodes.iter().enumerate() {
            match n.kind {
                NodeKind::Kernel | NodeKind::DeviceHelper => {
                    // A kernel only counts when a launch of this API reaches it; a
                    // helper when some kernel that runs reaches it.
                    if n.kind == NodeKind::Kernel && !launched.contains(&i) {
                        continue;
                    }
                    if n.kind == NodeKind::DeviceHelper
                        && (!reached_from(g, &launched, i) || !binder.reached(i))
                    {
                        continue;
                    }
                    // One of several overloads of a name, for an element type none of
                    // the API's arguments has: sasum's float reduction calls the generic
                    // `rocblas_wavefront_reduce<N, T>`, not its complex, bfloat16 or half
                    // overloads (rocblas_reduction.hpp:54-118).
                    if n.kind == NodeKind::DeviceHelper {
                        let foreign = |j: usize| {
                            foreign_element_parameter(&binder.params_of(j), &api_params).is_some()
                        };
                        let siblings = g.nodes.iter().enumerate().any(|(j, m)| {
                            j != i && m.kind == NodeKind::DeviceHelper && m.name == n.name
                        });
                        if siblings
                            && foreign(i)
                            && g.nodes.iter().enumerate().any(|(j, m)| {
                                j != i
                                    && m.kind == NodeKind::DeviceHelper
                                    && m.name == n.name
                                    && !foreign(j)
                            })
                        {
                            excluded.push(format!(
                                "{} ({}:{}): an overload for an element type none of this API's arguments has",
                                n.name, n.file, n.line
                            ));
                            continue;
                        }
                    }
                    let kv = agreed(kernel_values.get(&i).map(Vec::as_slice).unwrap_or(&[]));
                    facts.extend(self.device_facts(&binder, i, n, &kv));
                }
                NodeKind::Function => {
                    // A helper the kernels call that stores nothing and calls nothing
                    // (`load_ptr_batch` returns a pointer): what it does is its return.
                    if reached_from(g, &launched, i) {
                        let pure = (!g.edges.iter().any(|e| e.from == i))
                            .then(|| self.stores_nothing(n))
                            .flatten();
                        match pure {
                            Some(f) => facts.push(f),
                            None => {
                                impure.insert(n.name.clone());
                            }
                        }
                    }
                    // A function every call site of which is dead for this API says
                    // nothing about it; one reached under a condition (a size test,
                    // numerics checking asked for) states its facts under it, as
                    // launches do.
                    let reach = if i > 1 {
                        match self.reach_conditions(g, &binder, i, &mut reached, 0) {
                            Some(r) => r,
                            None => continue,
                        }
                    } else {
                        Vec::new()
                    };
                    for mut f in self.host_facts(&binder, i, n, computing[i]) {
                        // The paired library's static state (rocBLAS's Tensile host
                        // under rocSOLVER) is that library's business, not this API's.
                        if f.kind == FactKind::StaticState && f.lib != g.lib {
                            continue;
                        }
                        let own = binder.own_names_in(i, &f.conditions.join(" "));
                        note_own_names(&mut f, own);
                        under(&mut f, &reach);
                        facts.push(f);
                    }
                    // The API's own definition: what it returns past every branch.
                    if i == 1 {
                        facts.extend(self.entry_definition(n));
                        facts.extend(self.entry_return(n));
                    }
                }
                _ => {}
            }
        }
        // Calls no instantiation this API reaches makes.
        for e in g.edges.iter().filter(|e| {
            matches!(
                e.kind,
                EdgeKind::Call | EdgeKind::MacroCall | EdgeKind::CrossLibrary
            ) && view.calls(e.from, e.to) == Some(false)
        }) {
            let to = &g.nodes[e.to];
            excluded.push(format!(
                "call of {} ({}:{}) at {}:{}: not made by {} (the instantiation this API reaches, read by the compiler)",
                to.name, to.file, to.line, e.file, e.line, view.shown(e.from)
            ));
        }
        for e in g.edges.iter().filter(|e| e.kind == EdgeKind::CrossLibrary) {
            let (from, to) = (&g.nodes[e.from], &g.nodes[e.to]);
            let decided_by = match view.calls(e.from, e.to) {
                Some(false) => continue,
                Some(true) => compiled::COMPILER,
                None => compiled::TEXT,
            };
            // A call from an overload this API does not reach, or under a condition
            // false for it (`if constexpr(BATCHED)` with BATCHED = false), is not its.
            if !binder.reached(e.from) {
                continue;
            }
            // Another overload of the name, by the template arguments the call writes
            // (`trsm_workspace_size<T>` is not `<BLOCK, BATCHED, T>`'s).
            if !binder.calls_viably(e.from, e.to) {
                excluded.push(format!(
                    "call of {} ({}:{}) at {}:{}: the call's template arguments name another overload",
                    to.name, to.file, to.line, e.file, e.line
                ));
                continue;
            }
            // An overload for a narrow type the API's own types never give (rocBLAS's
            // `std::isnan(rocblas_bfloat16)` for lartg's `isnan` of a float): the
            // standard library's overload for the argument's own type is the one called.
            if let Some(ty) = narrow_parameter(&binder.params_of(e.to), &api_params) {
                excluded.push(format!(
                    "call of {} ({}:{}) at {}:{}: that overload takes {ty}, a type none of this API's arguments is",
                    to.name, to.file, to.line, e.file, e.line
                ));
                continue;
            }
            let conds = match self.code.body(from) {
                Some((t, b)) => {
                    let line = t.line(e.line);
                    let at = t.offset(e.line)
                        + line
                            .find(to.name.as_str())
                            .unwrap_or(line.len() - line.trim_start().len());
                    match decided(&b.conds_at(at).0, &binder.env_at(e.from, at)) {
                        Ok(open) => open,
                        Err(_) => continue,
                    }
                }
                None => Vec::new(),
            };
            let mut v = BTreeMap::new();
            v.insert(
                "callee".into(),
                format!("{}:{}:{}", to.lib, to.file, to.line),
            );
            // What the cross-library template says and cites of the callee's definition.
            v.insert("callee_lib".into(), to.lib.clone());
            v.insert("decided_by".into(), decided_by.into());
            v.insert("callee_file".into(), to.file.clone());
            v.insert(
                "callee_lines".into(),
                format!("{}-{}", to.start_line.max(1), to.end_line.max(to.line)),
            );
            facts.push(Fact {
                kind: FactKind::CrossLibrary,
                subject: to.name.clone(),
                function: from.name.clone(),
                lib: from.lib.clone(),
                file: e.file.clone(),
                line: e.line,
                end_line: e.line,
                function_lines: (from.start_line, from.end_line),
                values: v,
                conditions: conds,
                condition_sites: Vec::new(),
                order: Vec::new(),
            });
        }
        facts.retain(|f| f.kind != FactKind::StoresNothing || !impure.contains(&f.subject));
        let kept = self.value_kept_edges(g);
        let keys = run_order(g, None);
        // A return is where the API meets it along calls that keep its value: syevd's
        // size helper drops get_alg_mode's status, its template returns it later.
        let return_keys = run_order(g, Some(&kept));
        let returning = Self::returns_reach_api(g, &kept);
        let success_returning = Self::returns_reach_api(g, &self.success_kept_edges(g, &kept));
        let mut modes: HashMap<usize, BTreeSet<ModeSource>> = HashMap::new();
        let nodes: HashMap<(&str, &str, u32), usize> = g
            .nodes
            .iter()
            .enumerate()
            .rev()
            .map(|(j, n)| ((n.name.as_str(), n.file.as_str(), n.start_line), j))
            .collect();
        for f in facts.iter_mut() {
            let node = nodes
                .get(&(f.function.as_str(), f.file.as_str(), f.function_lines.0))
                .copied();
            let is_return = matches!(
                f.kind,
                FactKind::QuickReturn | FactKind::ArgCheck | FactKind::WorkspaceQuery
            );
            let key = node.and_then(|j| match is_return {
                true => return_keys[j].as_ref().or(keys[j].as_ref()),
                false => keys[j].as_ref(),
            });
            if let Some(key) = key {
                // A return runs where its statement is, which is not always under its
                // own test's line: a size query's return inside a quick return's block
                // (tbmv's `!n || !batch_count`) comes before that block's `return`.
                let at = match is_return {
                    true => f.end_line.max(f.line),
                    false => f.line,
                };
                f.order = key.iter().copied().chain([at]).collect();
            }
            // A test of the pointer mode under a mode the library sets itself on some
            // way here: say where, and whether the caller's mode is one of them.
            let on_mode = f.kind == FactKind::PointerMode
                || f.conditions.iter().any(|c| c.contains(bind::POINTER_MODE));
            if let Some(j) = node.filter(|_| on_mode) {
                let sources = self.mode_sources(g, &binder, j, &mut modes, 0);
                if sources.iter().any(|m| m != &ModeSource::Caller) {
                    let v: Vec<String> = sources.iter().map(ModeSource::value).collect();
                    f.values.insert(MODE_SET.into(), v.join(";"));
                }
            }
            // A callee's return the caller drops (a workspace-size helper's status) ends
            // the callee only, not the API.
            if node.is_some_and(|j| !returning[j])
                && matches!(
                    f.kind,
                    FactKind::ArgCheck | FactKind::QuickReturn | FactKind::WorkspaceQuery
                )
            {
                f.values.insert(CALLER_DROPS.into(), "its status".into());
            }
            // A success the caller does not return: it goes on past the call.
            if node.is_some_and(|j| returning[j] && !success_returning[j])
                && matches!(f.kind, FactKind::ArgCheck | FactKind::QuickReturn)
                && f.values.get("status").map(String::as_str) == Some("rocblas_status_success")
            {
                f.values
                    .insert(CALLER_DROPS.into(), "its success status".into());
            }
            // Numerics checking runs only when the handle asks for it: its checks are
            // not the API's own.
            if node.is_some_and(|j| !computing[j])
                && matches!(f.kind, FactKind::ArgCheck | FactKind::QuickReturn)
            {
                f.values
                    .insert(NUMERICS_CHECK.into(), "only when the handle asks".into());
            }
        }
        let mut seen = BTreeSet::new();
        // Launches on one line (a macro's) with different grids are different launches.
        facts.retain(|f| {
            seen.insert((
                f.kind,
                f.file.clone(),
                f.line,
                f.subject.clone(),
                f.function.clone(),
                (f.kind == FactKind::Launch)
                    .then(|| f.values.get("grid").cloned())
                    .flatten(),
            ))
        });
        ApiFacts {
            lib: g.lib.clone(),
            version: g.version.clone(),
            api: g.api.name.clone(),
            family: g.api.family.clone(),
            variants: g.api.variants.clone(),
            facts,
            excluded,
        }
    }

    /// For each edge, whether the value of the call it stands for can be what the
    /// caller returns: a call the caller keeps (returns it, stores it, tests it or hands
    /// it on), not one written as a statement of its own whose value is dropped, nor a
    /// launch.
    fn value_kept_edges(&self, g: &InterfaceGraph) -> Vec<bool> {
        g.edges
            .iter()
            .map(|e| match e.kind {
                EdgeKind::Launch | EdgeKind::CheckNumerics | EdgeKind::Opaque => false,
                EdgeKind::Call | EdgeKind::MacroCall | EdgeKind::CrossLibrary if e.from > 1 => {
                    self.call_value_kept(&g.nodes[e.from], &g.nodes[e.to].name, e.line)
                }
                _ => true,
            })
            .collect()
    }

    /// Where the pointer mode node `i` runs under comes from, over every way this API
    /// reaches it: a mode its caller sets before the call (where the caller's code
    /// sets it), else what the caller itself runs under; the API's own code runs under
    /// the mode its caller set.
    fn mode_sources(
        &self,
        g: &InterfaceGraph,
        binder: &Binder,
        i: usize,
        memo: &mut HashMap<usize, BTreeSet<ModeSource>>,
        depth: u32,
    ) -> BTreeSet<ModeSource> {
        if let Some(s) = memo.get(&i) {
            return s.clone();
        }
        let callers_mode: BTreeSet<ModeSource> = [ModeSource::Caller].into();
        // A cycle or a deep chain: no mode the library sets is claimed.
        memo.insert(i, callers_mode.clone());
        if i <= 1 || depth > 16 {
            return callers_mode;
        }
        let view = self.code.compiler_view(g);
        let mut out = BTreeSet::new();
        for e in callers_of(g, i, false) {
            let followed = matches!(
                e.kind,
                EdgeKind::Call | EdgeKind::MacroCall | EdgeKind::CrossLibrary
            );
            if (followed && view.calls(e.from, i) == Some(false)) || !binder.reached(e.from) {
                continue;
            }
            let caller = &g.nodes[e.from];
            let live = self.code.body(caller).and_then(|(t, b)| {
                let sites = live_sites(binder, e, &t, &b, &g.nodes[i].name)?;
                Some((t, sites))
            });
            let Some((t, sites)) = live else {
                out.extend(self.mode_sources(g, binder, e.from, memo, depth + 1));
                continue;
            };
            for (at, _) in sites {
                // A mode named where it is set (`rocblas_pointer_mode_device`), not one
                // put back from a saved local.
                let set = binder.mode_set_at(e.from, at).and_then(|(mode, set)| {
                    let line = t.line_of(set);
                    t.line(line)
                        .contains(bind::pointer_mode_name(mode))
                        .then_some((mode, line))
                });
                match set {
                    Some((mode, line)) => {
                        out.insert(ModeSource::Set {
                            mode,
                            lib: caller.lib.clone(),
                            function: caller.name.clone(),
                            file: caller.file.clone(),
                            head: caller.line.max(caller.start_line).max(1),
                            // A few lines up to the setting: its block's head,
                            // not a long function's whole body.
                            lines: (line.saturating_sub(4).max(caller.start_line.max(1)), line),
                        });
                    }
                    None => out.extend(self.mode_sources(g, binder, e.from, memo, depth + 1)),
                }
            }
        }
        memo.insert(i, out.clone());
        out
    }

    /// For each node, whether what it returns can be what the API returns: some call
    /// chain from the API reaches it through edges whose value each caller keeps.
    fn returns_reach_api(g: &InterfaceGraph, kept: &[bool]) -> Vec<bool> {
        let mut keeps = vec![false; g.nodes.len()];
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            if i >= keeps.len() || std::mem::replace(&mut keeps[i], true) {
                continue;
            }
            for (k, e) in g.edges.iter().enumerate() {
                if e.from == i && !keeps[e.to] && kept[k] {
                    stack.push(e.to);
                }
            }
        }
        keeps
    }

    /// For each edge, whether a success status the callee returns is its caller's
    /// return too ([`Self::call_success_kept`]); an edge that does not keep the value
    /// at all keeps no status.
    fn success_kept_edges(&self, g: &InterfaceGraph, kept: &[bool]) -> Vec<bool> {
        g.edges
            .iter()
            .zip(kept)
            .map(|(e, &k)| match e.kind {
                EdgeKind::Call | EdgeKind::MacroCall | EdgeKind::CrossLibrary
                    if e.from > 1 && k =>
                {
                    self.call_success_kept(&g.nodes[e.from], &g.nodes[e.to].name, e.line)
                }
                _ => k,
            })
            .collect()
    }

    /// Whether a success status from the call of `callee` at `line` is what `caller`
    /// returns: the call is returned (`return f(...)`), or stored in a local that the
    /// caller returns under no test (scal's `status = ...; if(status != success)
    /// return status; ...; return status;`). A status the caller returns only where it
    /// is an error (trsm's size helper: `if(memory_status != success && ...) return
    /// memory_status;`, rocblas_trsm_kernels.hpp:1926-1929), or tests in place
    /// (`RETURN_IF_ROCBLAS_ERROR(f(...))`), passes its errors on, not its success: the
    /// caller goes on. Unread code counts as kept.
    fn call_success_kept(&self, caller: &GraphNode, callee: &str, line: u32) -> bool {
        let Some((t, b, statement)) = self.call_statement(caller, callee, line) else {
            return true;
        };
        let statement = statement.as_str();
        if statement
            .strip_prefix("return")
            .is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        {
            return true;
        }
        static STORE: OnceLock<Regex> = OnceLock::new();
        let store = STORE.get_or_init(|| {
            Regex::new(r"([A-Za-z_]\w*)\s*=\s*(?:ROCBLAS_API\s*\(\s*)?$").expect("static regex")
        });
        let Some(local) = store.captures(statement).map(|c| c[1].to_string()) else {
            return false;
        };
        // Returned anywhere but under its own `!= success` test: rocSOLVER's
        // `if(st != rocblas_status_continue) return st;` returns the argument check's
        // success.
        let error_only = format!("{local} != rocblas_status_success");
        b.stmts.iter().any(|st| {
            t.s.get(st.start..st.end).is_some_and(|x| {
                x.trim()
                    .strip_prefix("return")
                    .map(|r| r.trim().trim_end_matches(';').trim())
                    .is_some_and(|r| r == local)
            }) && !st.conds.iter().any(|c| {
                c.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .contains(&error_only)
            })
        })
    }

    /// What the statement holding the call of `callee` at `line` of `caller`'s body
    /// writes before the callee's name (`memory_status =` of `memory_status = f(...)`,
    /// trimmed), with the caller's text and body; `None` where either is not read.
    fn call_statement(
        &self,
        caller: &GraphNode,
        callee: &str,
        line: u32,
    ) -> Option<(Arc<Text>, Arc<Body>, String)> {
        let (t, b) = self.code.body(caller)?;
        let from = t.offset(line.saturating_sub(3).max(caller.start_line.max(1)));
        let to = t.offset(line + 1).min(t.s.len());
        let text = t.s.get(from..to)?;
        let before = &text[..text.rfind(callee)?];
        let statement = before
            .rfind([';', '{', '}'])
            .map_or(before, |k| &before[k + 1..])
            .trim()
            .to_string();
        Some((t, b, statement))
    }

    /// Whether the call of `callee` at `line` of `caller`'s body keeps its value: the
    /// statement holding it does more than call (`return f(...)`, `st = f(...)`,
    /// `if(f(...) != ...)`, `CHECK(f(...))`). Unread code counts as kept.
    fn call_value_kept(&self, caller: &GraphNode, callee: &str, line: u32) -> bool {
        let Some((_, _, statement)) = self.call_statement(caller, callee, line) else {
            return true;
        };
        let statement = statement.as_str();
        // `rocblas_internal_foo<T>(` or `ns::foo(`: qualifiers and template arguments of
        // the call itself are not its use.
        !(statement.is_empty()
            || statement == "(void)"
            || statement.ends_with("::") && !statement.contains([' ', '=', '(']))
    }

    /// Whether the API reaches node `i` whatever its arguments: through a caller it
    /// surely reaches, at a call site under no test and in no loop. sytd2 calls
    /// `rocblasCall_syr2_her2` inside its `for j` loops only, so the her2 launch is not
    /// one every call makes (n == 1 runs no step), though no test shows on the launch.
    fn surely_reached(
        &self,
        g: &InterfaceGraph,
        binder: &Binder,
        i: usize,
        memo: &mut HashMap<usize, bool>,
        depth: u32,
    ) -> bool {
        if i == 0 {
            return true;
        }
        if let Some(s) = memo.get(&i) {
            return *s;
        }
        // A cycle or a deep chain: not claimed.
        memo.insert(i, false);
        if depth > 16 {
            return false;
        }
        let callers: Vec<&crate::model::GraphEdge> = callers_of(g, i, false).collect();
        let mut sure = false;
        for e in callers {
            if !self.surely_reached(g, binder, e.from, memo, depth + 1) {
                continue;
            }
            let caller = &g.nodes[e.from];
            let Some((t, b)) = self.code.body(caller) else {
                continue;
            };
            if live_sites(binder, e, &t, &b, &g.nodes[i].name)
                .is_some_and(|live| live.iter().any(|(_, open)| open.is_empty()))
            {
                sure = true;
                break;
            }
        }
        memo.insert(i, sure);
        sure
    }

    /// The conditions under which the API reaches node `i`: those of its caller's, then
    /// those around the call, outermost first, each read with what the API fixes
    /// there (decided parts dropped). Where several call sites reach it, only what all
    /// of them share (their common leading conditions) is kept; a call site whose
    /// condition is false for this API does not reach it, and `None` says none does.
    fn reach_conditions(
        &self,
        g: &InterfaceGraph,
        binder: &Binder,
        i: usize,
        memo: &mut HashMap<usize, Option<Reach>>,
        depth: u32,
    ) -> Option<Reach> {
        if let Some(c) = memo.get(&i) {
            return c.clone();
        }
        if !binder.reached(i) {
            memo.insert(i, None);
            return None;
        }
        // A cycle or a deep chain: nothing known beyond this point.
        memo.insert(i, Some(Vec::new()));
        if depth > 16 {
            return Some(Vec::new());
        }
        let view = self.code.compiler_view(g);
        let callers: Vec<&crate::model::GraphEdge> = callers_of(g, i, false).collect();
        let mut common: Option<Reach> = None;
        let mut any_caller = false;
        for e in &callers {
            any_caller = true;
            // No instantiation this API reaches makes this call (numerics checking's
            // calls are not followed: the text decides them).
            let followed = matches!(
                e.kind,
                EdgeKind::Call | EdgeKind::MacroCall | EdgeKind::CrossLibrary
            );
            if followed && view.calls(e.from, i) == Some(false) {
                continue;
            }
            let caller = &g.nodes[e.from];
            let Some(mut conds) = self.reach_conditions(g, binder, e.from, memo, depth + 1) else {
                continue;
            };
            if let Some((t, b)) = self.code.body(caller) {
                if let Some(live) = live_sites(binder, e, &t, &b, &g.nodes[i].name) {
                    // Every call in this caller is dead for this API.
                    let Some((cited, _)) = live.first() else {
                        continue;
                    };
                    let mut shared: Option<Vec<String>> = None;
                    for (_, open) in &live {
                        shared = Some(common_prefix(shared, open.clone()));
                    }
                    let shared = shared.unwrap_or_default();
                    let site = crate::model::ConditionSite {
                        lib: caller.lib.clone(),
                        file: caller.file.clone(),
                        function: caller.name.clone(),
                        function_lines: (caller.start_line, caller.end_line),
                        line: t.line_of(*cited),
                        own_names: binder.own_names_in(e.from, &shared.join(" ")),
                        conditions: shared.clone(),
                    };
                    conds.extend(shared.into_iter().map(|c| (c, site.clone())));
                }
            }
            common = Some(match common {
                None => conds,
                Some(c) => c
                    .into_iter()
                    .zip(conds)
                    .take_while(|(a, b)| a.0 == b.0)
                    .map(|(a, _)| a)
                    .collect(),
            });
        }
        let out = match common {
            Some(c) => Some(c),
            // Every caller's call is dead for this API.
            None if any_caller => None,
            None => Some(Vec::new()),
        };
        memo.insert(i, out.clone());
        out
    }

    /// Every launch of `to` in `from`, with the reason it never runs for this API where
    /// its conditions are false for it.
    fn launch_facts(
        &self,
        binder: &Binder,
        i: usize,
        (from, to): (&GraphNode, &GraphNode),
        pv: &ParamValues,
        detail: bool,
    ) -> Vec<(Fact, ParamValues, Option<DeadLaunch>)> {
        let Some((t, b)) = self.code.body(from) else {
            return Vec::new();
        };
        let sites: Vec<_> = launches_in(&t, b.open, b.close, &to.name)
            .into_iter()
            .map(|(line, la)| {
                let env = binder.env_at(i, la.start);
                let (raw, at) = b.conds_at(la.start);
                let (raw, at) = with_diverting_returns(&t, &b, la.start, raw, at);
                let (f, kv, dead) =
                    self.launch_site_fact(from, to, &t, &b, line, la, pv, detail, &env, &at);
                (f, kv, dead, raw, env)
            })
            .collect();
        merge_branch_launches(sites)
    }

    /// One launch site's fact, its conditions decided for this API.
    #[allow(clippy::too_many_arguments)]
    fn launch_site_fact(
        &self,
        from: &GraphNode,
        to: &GraphNode,
        t: &Text,
        b: &Body,
        line: u32,
        la: LaunchArgs,
        pv: &ParamValues,
        detail: bool,
        env: &eval::Env,
        at: &[usize],
    ) -> (Fact, ParamValues, Option<DeadLaunch>) {
        let launch_at = la.start;
        let (mut f, kv) = if detail {
            let (mut f, kv) = self.launch_fact(from, to, t, b, line, la, pv);
            // The kernel's name is written in the macro the site invokes.
            if let Some((name, s, e)) =
                self.code
                    .defining_macro(&f.lib, &f.file, (f.line, f.end_line), &f.subject)
            {
                f.values.insert("macro".into(), name);
                f.values.insert("macro_lines".into(), format!("{s}-{e}"));
            }
            (f, kv)
        } else {
            // Only what decides whether it runs: where it is and its conditions.
            let (first, last) = launch_lines(t, line, &la);
            let f = Fact {
                kind: FactKind::Launch,
                subject: to.name.clone(),
                function: from.name.clone(),
                lib: from.lib.clone(),
                file: from.file.clone(),
                line: first,
                end_line: last,
                function_lines: (from.start_line, from.end_line),
                values: BTreeMap::new(),
                conditions: b.conds_at(la.start).0,
                condition_sites: Vec::new(),
                order: Vec::new(),
            };
            (f, ParamValues::new())
        };
        // As `at` does (see `launch_facts`), past the returns into other paths.
        let conds = std::mem::take(&mut f.conditions);
        f.conditions = with_diverting_returns(t, b, launch_at, conds, Vec::new()).0;
        // A return earlier in the function that always fires for this API
        // (into another path: syr2k's block-recursive one, rocBLAS's gemm for
        // unit increments) leaves the launch after it unreached.
        if let Some(why) = earlier_return_taken(t, b, launch_at, env) {
            let first = f.line;
            return (f, kv, Some((why, first)));
        }
        match decided(&f.conditions, env) {
            Ok(open) => {
                f.conditions = open;
                (f, kv, None)
            }
            Err(why) => {
                // The dead branch starts at the `if` whose condition is false.
                let first = f
                    .conditions
                    .iter()
                    .position(|c| condition(c, env) == Truth::False)
                    .and_then(|k| at.get(k))
                    .map(|&o| t.line_of(o))
                    .unwrap_or(f.line);
                (f, kv, Some((why, first)))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn launch_fact(
        &self,
        from: &GraphNode,
        to: &GraphNode,
        t: &Text,
        b: &Body,
        line: u32,
        la: LaunchArgs,
        pv: &ParamValues,
    ) -> (Fact, ParamValues) {
        let (conds, _) = b.conds_at(la.start);
        let (first_line, last_line) = launch_lines(t, line, &la);
        let mut v = BTreeMap::new();
        let body_before = &t.s[b.open..la.start];
        let pv = &local_constants(body_before, pv);
        let resolve = |arg: &str| -> String {
            let a = arg.trim();
            let mut shown = a.to_string();
            if is_name(a) {
                if let Some(args) = last_dim3(a, body_before) {
                    shown = format!("{a} = dim3({args})");
                }
            }
            let sub = substitute(&shown, pv);
            if sub != shown {
                format!("{shown} with {}", known_values(&shown, pv))
            } else {
                shown
            }
        };
        v.insert("grid".into(), resolve(&la.grid));
        v.insert("block".into(), resolve(&la.block));
        // Threads per block, when every dimension has a value: what a claimed block
        // size is compared with.
        let block = block_dims(&la.block, body_before, pv);
        if let Some(dims) = &block {
            let threads: i64 = dims.iter().product();
            let shown: Vec<String> = dims.iter().map(i64::to_string).collect();
            v.insert("block_dims".into(), shown.join(", "));
            v.insert("block_threads".into(), threads.to_string());
        }
        // How the grid is counted: what a claimed rounding or work per thread is
        // compared with.
        let grid = grid::grid_dims(&la.grid, body_before, pv);
        let rounding: Vec<String> = grid
            .iter()
            .filter_map(|d| d.rounding.map(|r| format!("{}: {}", d.axis, r.label())))
            .collect();
        if !rounding.is_empty() {
            v.insert("grid_rounding".into(), rounding.join(", "));
        }
        if let Some(x) = grid.first().filter(|x| x.text.contains('=')) {
            v.insert("grid_x".into(), x.text.clone());
        }
        // The locals a grid names, with what they are set to: `dim3(blocks, 1,
        // batches)` alone does not say how many blocks run.
        let locals: Vec<&str> = grid
            .iter()
            .filter(|d| {
                // A literal is shown with the grid's known values already.
                d.text
                    .split_once(" = ")
                    .is_some_and(|(_, def)| def.trim().parse::<i64>().is_err())
            })
            .map(|d| d.text.as_str())
            .collect();
        if !locals.is_empty() {
            v.insert("grid_locals".into(), locals.join("; "));
        }
        let lds = tidy(&la.lds);
        let lds_v = eval_int(&substitute(&lds, pv))
            .map(|x| format!("{x} bytes"))
            .unwrap_or(lds);
        v.insert("lds".into(), lds_v);
        v.insert("stream".into(), tidy(&la.stream));
        // What each argument passes (`alpha` or `*alpha`): a pointer-mode claim is
        // held against it.
        if !la.args.is_empty() {
            v.insert("args".into(), la.args.join(" | "));
        }
        if !la.template_args.is_empty() {
            v.insert("template_args".into(), la.template_args.join(", "));
        }
        for (p, x) in pv {
            if la.kernel_expr.contains(p.as_str())
                || la.grid.contains(p.as_str())
                || la.block.contains(p.as_str())
            {
                v.insert(format!("{p}="), x.clone());
            }
        }
        // The kernel's own parameters, as this launch sets them.
        let mut kv = ParamValues::new();
        if let Some((kt, kb)) = self.code.body(to) {
            let kernel = &kt.s[kb.open..kb.close.min(kt.s.len())];
            if let Some((e, of)) = grid::elements_per_thread(&grid, block.as_deref(), kernel) {
                v.insert("elements_per_thread".into(), e.to_string());
                v.insert("elements_of".into(), of);
            }
            let name_at = kt.s[..kb.open]
                .rfind(&to.name)
                .unwrap_or(kt.offset(to.start_line));
            let kp = template_params(&kt, kt.offset(to.start_line), name_at);
            for (k, (p, is_value)) in kp.iter().enumerate() {
                if let (true, Some(a)) = (*is_value, la.template_args.get(k)) {
                    if let Some(x) = eval_int(&substitute(a, pv)) {
                        kv.insert(p.clone(), x.to_string());
                    }
                }
            }
        }
        (
            Fact {
                kind: FactKind::Launch,
                subject: to.name.clone(),
                function: from.name.clone(),
                lib: from.lib.clone(),
                file: from.file.clone(),
                line: first_line,
                end_line: last_line,
                function_lines: (from.start_line, from.end_line),
                values: v,
                conditions: conds,
                condition_sites: Vec::new(),
                order: Vec::new(),
            },
            kv,
        )
    }

    fn device_facts(
        &self,
        binder: &Binder,
        i: usize,
        n: &GraphNode,
        kv: &ParamValues,
    ) -> Vec<Fact> {
        let d = detectors();
        let mut out = Vec::new();
        let Some((t, b)) = self.code.body(n) else {
            return out;
        };
        let fact = |kind, subject: &str, line: u32, values: BTreeMap<String, String>| Fact {
            kind,
            subject: subject.to_string(),
            function: n.name.clone(),
            lib: n.lib.clone(),
            file: n.file.clone(),
            line,
            end_line: line,
            function_lines: (n.start_line, n.end_line),
            values,
            conditions: Vec::new(),
            condition_sites: Vec::new(),
            order: Vec::new(),
        };
        if n.kind == NodeKind::Kernel {
            let head_from = t.offset(n.start_line);
            if let Some(m) = d.launch_bounds.find(&t.s[head_from..b.open]) {
                let open = head_from + m.end() - 1;
                let close = Scanner::new(&t.s).matching(open);
                let arg = tidy(&t.s[open + 1..close.min(t.s.len())]);
                let arg = arg
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .to_string();
                let mut v = BTreeMap::new();
                v.insert("bounds".into(), arg.clone());
                if let Some(x) = eval_int(&substitute(&arg, kv)) {
                    v.insert("value".into(), x.to_string());
                }
                let line = t.line_of(head_from + m.start());
                // Where a macro writes the bounds (`ROCBLAS_KERNEL(NB)`), the answer
                // names what the code says, not only what it expands to.
                if let Some(w) = self
                    .code
                    .written_line(&n.lib, &n.file, line)
                    .and_then(|l| bounds_macro(l, &arg))
                {
                    v.insert("written".into(), w);
                }
                out.push(fact(FactKind::LaunchBounds, &n.name, line, v));
            }
        }
        let body = &t.s[b.open..b.close];
        // The dynamic array too, by its name (`extern __shared__ double lmem[]`); that
        // its size is set at launch is stated below.
        for decl in shared_declarations(body) {
            let (at, name, dims) = (decl.at, decl.name.as_str(), tidy(&decl.dims));
            let mut v = BTreeMap::new();
            v.insert("type".into(), tidy(&decl.ty));
            // A scalar holds one value per block (`__shared__ int _info;`).
            let prod: Option<i64> = if dims.is_empty() {
                Some(1)
            } else {
                v.insert("size".into(), dims.clone());
                dims.split('[')
                    .skip(1)
                    .map(|x| eval_int(&substitute(x.trim_end_matches(']').trim(), kv)))
                    .try_fold(1i64, |acc, x| x.and_then(|x| acc.checked_mul(x)))
            };
            if let Some(p) = prod {
                v.insert("elements".into(), p.to_string());
            }
            if prod.is_some() && !dims.is_empty() {
                let each: Vec<String> = dims
                    .split('[')
                    .skip(1)
                    .filter_map(|x| eval_int(&substitute(x.trim_end_matches(']').trim(), kv)))
                    .map(|x| x.to_string())
                    .collect();
                v.insert("dims".into(), each.join(", "));
            }
            let line = t.line_of(b.open + at);
            let (conds, _) = b.conds_at(b.open + at);
            let Ok(conds) = decided(&conds, &binder.env_at(i, b.open + at)) else {
                continue;
            };
            let mut f = fact(FactKind::SharedMemory, name, line, v);
            f.conditions = conds;
            out.push(f);
        }
        if let Some(m) = d.dynamic_shared.find(body) {
            let mut v = BTreeMap::new();
            v.insert("size".into(), "dynamic (set at launch)".into());
            out.push(fact(
                FactKind::SharedMemory,
                "dynamic",
                t.line_of(b.open + m.start()),
                v,
            ));
        }
        // `__constant__` variables of the file this code reads.
        let constants: BTreeSet<&str> = if t.s.contains("__constant__") {
            d.constant_var
                .captures_iter(&t.s)
                .filter_map(|c| c.get(1).map(|m| m.as_str()))
                .collect()
        } else {
            BTreeSet::new()
        };
        for (kind, re) in [
            (FactKind::Barrier, &d.barrier),
            (FactKind::Atomic, &d.atomic),
            (FactKind::Wavefront, &d.wavefront),
            (FactKind::MemoryPath, &d.memory_path),
        ] {
            // Only what this instantiation runs: barriers under `if(TWOK)` are not
            // herk's, which runs the syr2k device function with TWOK = false.
            let mut hits: Vec<(String, u32)> = re
                .captures_iter(body)
                .filter_map(|c| {
                    let m = c.get(1)?;
                    let at = b.open + m.start();
                    decided(&b.conds_at(at).0, &binder.env_at(i, at)).ok()?;
                    Some((m.as_str().to_string(), t.line_of(at)))
                })
                .collect();
            if kind == FactKind::MemoryPath && !constants.is_empty() {
                hits.extend(
                    constant_uses(body, &constants)
                        .into_iter()
                        .map(|(name, at)| (format!("__constant__ {name}"), t.line_of(b.open + at))),
                );
                hits.sort_by_key(|h| h.1);
            }
            // A fence orders memory and waits for no other thread: barriers and
            // fences are stated apart (`fence` set on the fences' fact).
            let (fences, hits): (Vec<_>, Vec<_>) = hits
                .into_iter()
                .partition(|h| kind == FactKind::Barrier && is_fence(&h.0));
            for (hits, fence) in [(hits, false), (fences, true)] {
                if hits.is_empty() {
                    continue;
                }
                let ops: BTreeSet<&str> = hits.iter().map(|h| h.0.as_str()).collect();
                let lines: Vec<String> = hits.iter().map(|h| h.1.to_string()).collect();
                let mut v = BTreeMap::new();
                v.insert(
                    "ops".into(),
                    ops.iter().copied().collect::<Vec<_>>().join(", "),
                );
                v.insert("lines".into(), lines.join(", "));
                v.insert("count".into(), hits.len().to_string());
                if fence {
                    v.insert("fence".into(), "true".into());
                }
                if kind == FactKind::Barrier && !fence {
                    // What each barrier orders: reads of others' writes, then writes
                    // over others' elements.
                    for (key, writes) in [("orders", false), ("orders_writes", true)] {
                        let ordered = barrier_orders_by_line(&t, &b, writes);
                        let said: Vec<String> = hits
                            .iter()
                            .filter_map(|h| {
                                ordered
                                    .get(&h.1)
                                    .map(|names| format!("{} {}", h.1, names.join(" ")))
                            })
                            .collect();
                        if !said.is_empty() {
                            v.insert(key.into(), said.join(", "));
                        }
                    }
                    let code: Vec<&str> = t.s[b.open..b.close]
                        .split('\n')
                        .map(|l| l.split_once("//").map_or(l, |x| x.0))
                        .collect();
                    let own = crate::index::device::thread_owned_arrays(&code);
                    if !own.is_empty() {
                        v.insert("thread_owned".into(), own.join(" "));
                    }
                }
                let mut f = fact(kind, &n.name, hits[0].1, v);
                f.end_line = hits[0].1;
                out.push(f);
            }
        }
        if n.kind == NodeKind::Kernel {
            if let Some((scalar, cond, at)) = scalar_guard(&t.s, &b) {
                let mut v = BTreeMap::new();
                v.insert("scalar".into(), scalar);
                // `if(alpha)` around the stores, or `if(!alpha) return;` before them.
                let statement = if cond.starts_with("if") {
                    cond
                } else {
                    format!("if({cond})")
                };
                v.insert("statement".into(), statement);
                out.push(fact(FactKind::ScalarGuard, &n.name, t.line_of(at), v));
            }
        }
        out
    }

    /// A `stores-nothing` fact of function `n` when its body neither stores to memory
    /// nor allocates.
    fn stores_nothing(&self, n: &GraphNode) -> Option<Fact> {
        let (t, b) = self.code.body(n)?;
        let body = &t.s[b.open..b.close];
        if !store_offsets(body).is_empty() {
            return None;
        }
        let returns = body
            .find("return")
            .map(|k| one_line(body[k..].split(';').next().unwrap_or("")))
            .unwrap_or_default();
        let mut v = BTreeMap::new();
        v.insert("returns".into(), returns);
        Some(Fact {
            kind: FactKind::StoresNothing,
            subject: n.name.clone(),
            function: n.name.clone(),
            lib: n.lib.clone(),
            file: n.file.clone(),
            line: n.start_line.max(n.line),
            end_line: n.end_line.max(n.line),
            function_lines: (n.start_line, n.end_line),
            values: v,
            conditions: Vec::new(),
            condition_sites: Vec::new(),
            order: Vec::new(),
        })
    }

    /// Argument checks, quick returns, size queries, pointer-mode branches and (with
    /// `runtime_calls`) HIP runtime calls in the host function `n`.
    /// The prototype of API node `api` in its header: the return type and the
    /// parameters as declared, export macros and attributes left out.
    fn declaration(&self, api: &GraphNode) -> Option<Fact> {
        let t = self.code.text(&api.lib, &api.file)?;
        let line_at = t.offset(api.line);
        let name_at = line_at + find_word(&t.s[line_at..], &api.name)?;
        let open = name_at + t.s[name_at..].find('(')?;
        if !t.s[name_at + api.name.len()..open].trim().is_empty() {
            return None;
        }
        let close = Scanner::new(&t.s).matching(open);
        if close <= open || close >= t.s.len() {
            return None;
        }
        // The return type: back from the name to the end of what came before.
        let head_from = t.s[..name_at]
            .rfind([';', '}', '{', '#'])
            .map_or(0, |i| i + 1);
        let head_from =
            head_from + t.s[head_from..name_at].len() - t.s[head_from..name_at].trim_start().len();
        let returns = return_type(&t.s[head_from..name_at])?;
        let params: Vec<String> = split_args(&t.s[open + 1..close], true)
            .iter()
            .map(|p| tidy(p.split_once('=').map_or(p.as_str(), |(a, _)| a)))
            .filter(|p| !p.is_empty() && p != "void")
            .collect();
        let line = t.line_of(head_from).max(1);
        let end = t.line_of(close);
        let mut v = BTreeMap::new();
        v.insert("returns".into(), returns);
        v.insert("params".into(), params.join(" | "));
        v.insert("count".into(), params.len().to_string());
        Some(Fact {
            kind: FactKind::Declaration,
            subject: api.name.clone(),
            function: api.name.clone(),
            lib: api.lib.clone(),
            file: api.file.clone(),
            line,
            end_line: end,
            function_lines: (line, end),
            values: v,
            conditions: Vec::new(),
            condition_sites: Vec::new(),
            order: Vec::new(),
        })
    }

    /// The API's own definition, and the handler of a function-try-block
    /// (`f(...) try { ... } catch(...) { return exception_to_rocblas_status(); }`).
    fn entry_definition(&self, n: &GraphNode) -> Option<Fact> {
        let (t, b) = self.code.body(n)?;
        let before = t.s[..b.open].trim_end();
        let tried = before.ends_with("try")
            && !before[..before.len() - 3]
                .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let mut v = BTreeMap::new();
        let mut end = t.line_of(b.close);
        if tried {
            let after = b.close + 1;
            let rest = &t.s[after..];
            let lead = rest.len() - rest.trim_start().len();
            if rest[lead..].starts_with("catch") {
                let open = after + lead + rest[lead..].find('{')?;
                let close = Scanner::new(&t.s).matching(open);
                let handler = tidy(t.s.get(open + 1..close)?);
                if let Some(c) = detectors().ret_any.captures(&handler) {
                    v.insert("handler".into(), c[1].to_string());
                }
                end = t.line_of(close);
            }
        }
        let line = n.start_line.max(1).min(n.line.max(1));
        Some(Fact {
            kind: FactKind::Definition,
            subject: n.name.clone(),
            function: n.name.clone(),
            lib: n.lib.clone(),
            file: n.file.clone(),
            line,
            // Within the definition as the graph holds it: the lines its slice shows.
            end_line: end.min(n.end_line.max(line)).max(line),
            function_lines: (n.start_line, n.end_line),
            values: v,
            conditions: Vec::new(),
            condition_sites: Vec::new(),
            order: Vec::new(),
        })
    }

    /// The first `return X;` at the top level of the API's own definition: what it
    /// returns once no branch before has (a forward to its implementation, a status).
    fn entry_return(&self, n: &GraphNode) -> Option<Fact> {
        let (t, b) = self.code.body(n)?;
        let s = b.stmts.iter().find(|s| {
            s.conds.is_empty() && t.s[s.start..s.end].trim_start().starts_with("return")
        })?;
        let text = tidy(&t.s[s.start..s.end]);
        let returns = detectors().ret_any.captures(&text)?[1].to_string();
        let mut v = BTreeMap::new();
        v.insert("returns".into(), returns);
        Some(Fact {
            kind: FactKind::Return,
            subject: n.name.clone(),
            function: n.name.clone(),
            lib: n.lib.clone(),
            file: n.file.clone(),
            line: t.line_of(s.start),
            end_line: t.line_of(s.end.saturating_sub(1).max(s.start)),
            function_lines: (n.start_line, n.end_line),
            values: v,
            conditions: Vec::new(),
            condition_sites: Vec::new(),
            order: Vec::new(),
        })
    }

    fn host_facts(
        &self,
        binder: &Binder,
        i: usize,
        n: &GraphNode,
        runtime_calls: bool,
    ) -> Vec<Fact> {
        let d = detectors();
        let mut out = Vec::new();
        let Some((t, b)) = self.code.body(n) else {
            return out;
        };
        let mk = |kind, subject: String, line: u32, end: u32, values, conditions| Fact {
            kind,
            subject,
            function: n.name.clone(),
            lib: n.lib.clone(),
            file: n.file.clone(),
            line,
            end_line: end,
            function_lines: (n.start_line, n.end_line),
            values,
            conditions,
            condition_sites: Vec::new(),
            order: Vec::new(),
        };
        for s in &b.stmts {
            if s.conds.is_empty() {
                continue;
            }
            // Read with what the API fixes: a check under a condition false for it, or
            // whose own test can never hold for it, is not one this API makes.
            let env = binder.env_at(i, s.start);
            // Past a return that always fires for this API nothing runs.
            if earlier_return_taken(&t, &b, s.start, &env).is_some() {
                continue;
            }
            let Some((check, outer)) = s.conds.split_last() else {
                continue;
            };
            let Ok(mut open) = decided(outer, &env) else {
                continue;
            };
            // The test is read where the tests around it held (the launcher's host-mode
            // branch, past the argument check's host-mode return).
            let mut around = env.clone();
            for c in &open {
                around
                    .values
                    .insert(format!("{}{c}", eval::HOLDS), eval::Value::Bool(true));
            }
            let check = match condition(check, &around) {
                Truth::False => continue,
                // A test this API always passes (`!BATCHED_OR_STRIDED` is false for the
                // batched forms, rocblas_rotm_kernels.cpp:81-105): the return's test is
                // then the innermost open one around it.
                Truth::True => open.pop().unwrap_or_else(|| check.clone()),
                Truth::Open(r) => r,
            };
            let text = tidy(&t.s[s.start..s.end]);
            let line = s
                .cond_at
                .last()
                .map(|&o| t.line_of(o))
                .unwrap_or(t.line_of(s.start));
            let end = t.line_of(s.end.saturating_sub(1).max(s.start));
            // A size query answered early: a positive `is_device_memory_size_query()`.
            let query = s.conds.iter().any(|c| {
                c.contains("is_device_memory_size_query(")
                    && !c.starts_with("not (")
                    && !c.starts_with('!')
            });
            if query {
                if let Some(c) = d.ret_any.captures(&text) {
                    let mut v = BTreeMap::new();
                    v.insert("returns".into(), c[1].to_string());
                    if let Some((name, def_file, s, e)) = self.code.macro_elsewhere(
                        &n.lib,
                        &n.file,
                        line,
                        "is_device_memory_size_query",
                    ) {
                        v.insert("macro".into(), name);
                        v.insert("macro_file".into(), def_file);
                        v.insert("macro_lines".into(), format!("{s}-{e}"));
                    }
                    let mut conds = open.clone();
                    let again = paren_receiver(&check);
                    if !conds.iter().any(|c| paren_receiver(c) == again) {
                        conds.push(check.clone());
                    }
                    out.push(mk(
                        FactKind::WorkspaceQuery,
                        n.name.clone(),
                        line,
                        end,
                        v,
                        conds,
                    ));
                }
                continue;
            }
            // `return handle->is_device_memory_size_query() ? size_unchanged : success;`:
            // the status of a call that is not a size query, the other one said beside it.
            let (status, in_query) = match d.ret_status.captures(&text) {
                Some(c) => (c[1].to_string(), None),
                None => match d.ret_query_ternary.captures(&text) {
                    Some(c) => (c[2].to_string(), Some(c[1].to_string())),
                    None => continue,
                },
            };
            // A `switch` mapping one status to another is a translation table, not a
            // check of the API's arguments.
            if s.conds.iter().any(|c| c.starts_with("switch (")) {
                continue;
            }
            if status.ends_with("_status_continue") {
                continue;
            }
            let kind = if status.ends_with("_status_success") {
                FactKind::QuickReturn
            } else {
                FactKind::ArgCheck
            };
            let mut v = BTreeMap::new();
            v.insert("status".into(), status.clone());
            if let Some(q) = in_query {
                v.insert("in_size_query".into(), q);
            }
            // What the return's own block runs first (trmm's `0 == *alpha` zeroes C
            // through a launcher, then returns): the graph keeps one site per callee,
            // so the calls are read off the block's text.
            let from = s.cond_at.last().copied().unwrap_or(s.start);
            let runs = binder.reached_from_text(i, &t.s[from.min(s.start)..s.end]);
            if !runs.is_empty() {
                v.insert(
                    BLOCK_RUNS.into(),
                    runs.into_iter().collect::<Vec<_>>().join(","),
                );
            }
            // The test in the names the outermost caller gives its words, to compare
            // with a return in another function.
            let outer = binder.outer_names(i);
            let renamed = rename_words(&check, &outer);
            if renamed != check {
                v.insert(OUTER_CONDITION.into(), renamed);
            }
            v.insert("condition".into(), check);
            out.push(mk(kind, status, line, end, v, std::mem::take(&mut open)));
        }
        // HIP runtime calls: the copies, memsets, allocations and synchronizations the
        // host code makes, each under the conditions around it.
        let body = if runtime_calls {
            &t.s[b.open..b.close]
        } else {
            ""
        };
        for c in d.runtime.captures_iter(body) {
            let m = c.get(1).expect("group");
            let at = b.open + m.start();
            if unevaluated(body, m.start()) {
                continue;
            }
            let env = binder.env_at(i, at);
            if earlier_return_taken(&t, &b, at, &env).is_some() {
                continue;
            }
            let (conds, _) = with_diverting_returns(&t, &b, at, b.conds_at(at).0, Vec::new());
            let Ok(conds) = decided(&conds, &env) else {
                continue;
            };
            let open_paren = m.end() + body[m.end()..].find('(').unwrap_or(0);
            let close = Scanner::new(body).matching(open_paren).min(body.len());
            let args = body.get(open_paren + 1..close).unwrap_or("");
            let mut v = BTreeMap::new();
            v.insert("call".into(), m.as_str().to_string());
            // `device_malloc(0)` asks for no bytes: a placeholder that allocates nothing
            // (gemm_ex3's `w_mem`, rocblas_gemm_ex3.hpp:1540), not a workspace.
            if m.as_str() == "device_malloc" && args.trim() == "0" {
                v.insert("zero_bytes".into(), "true".into());
            }
            if let Some(k) = d.memcpy_kind.find(args) {
                v.insert("direction".into(), k.as_str().to_string());
            }
            let line = t.line_of(at);
            let end = t.line_of(b.open + close).max(line);
            // A run of the same call on consecutive lines (eight `hipMemsetAsync`s
            // clearing eight buffers) is one fact, counted.
            if let Some(prev) = out.last_mut().filter(|p| {
                p.kind == FactKind::RuntimeCall
                    && p.subject == m.as_str()
                    && p.values.get("direction") == v.get("direction")
                    && p.conditions == conds
                    && line <= p.end_line + 1
            }) {
                prev.end_line = end.max(prev.end_line);
                let n: usize = prev
                    .values
                    .get("count")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1);
                prev.values.insert("count".into(), (n + 1).to_string());
                continue;
            }
            out.push(mk(
                FactKind::RuntimeCall,
                m.as_str().to_string(),
                line,
                end,
                v,
                conds,
            ));
        }
        // Stores through a pointer parameter or into the handle: where the results of a
        // getter, the state a setter changes and the sizes a size query reports go.
        let params = binder.params_of(i);
        let pointer = |name: &str| {
            params
                .iter()
                .any(|(ty, p)| p == name && (ty.contains('*') || ty.ends_with("_handle")))
        };
        for s in &b.stmts {
            let text = tidy(&t.s[s.start..s.end]);
            let Some(c) = d.store.captures(&text) else {
                continue;
            };
            let base = c.get(2).or(c.get(3)).map_or("", |m| m.as_str());
            let value = c[4].to_string();
            // Only what reaches the caller: a store through a pointer a caller made to
            // a local of its own (`&memsize` in gemm_ex3's quantize step, a rocSOLVER
            // `_impl`'s workspace sizes) is that caller's business.
            if !pointer(base) || value.len() > 160 || !binder.is_api_argument(i, base) {
                continue;
            }
            // When the store runs includes the returns before it (`if(!handle) return
            // rocblas_status_invalid_handle;`): a setter stores only past its checks.
            let mut when: Vec<String> = returned_tests(&t, &b, s.start)
                .into_iter()
                .map(|c| negation(c))
                .collect();
            when.extend(s.conds.iter().cloned());
            let env = binder.env_at(i, s.start);
            if earlier_return_taken(&t, &b, s.start, &env).is_some() {
                continue;
            }
            let Ok(conds) = decided(&when, &env) else {
                continue;
            };
            let target: String = c[1].chars().filter(|c| !c.is_whitespace()).collect();
            let mut v = BTreeMap::new();
            v.insert("target".into(), target.clone());
            v.insert("value".into(), value);
            let line = t.line_of(s.start);
            let end = t.line_of(s.end.saturating_sub(1).max(s.start));
            out.push(mk(FactKind::Store, target, line, end, v, conds));
        }
        // State of static storage duration: a namespace-scope variable of the file
        // stored to, and a function-local `static` initialized by a call (once).
        let globals = self.code.globals(&n.lib, &n.file);
        let body_text = &t.s[b.open..b.close];
        for s in &b.stmts {
            let text = tidy(&t.s[s.start..s.end]);
            let mut v = BTreeMap::new();
            if let Some(c) = d.static_local.captures(&text) {
                // Constants (`static constexpr int NB = f();`, `static const T one =
                // T(1);`) hold no state: only a variable initialized by a call is.
                let constant = c[1].split(' ').any(|w| w == "const" || w == "constexpr");
                if constant || !d.call.is_match(&c[3]) || c[3].len() > 160 {
                    continue;
                }
                // As written where the lines say the same thing unexpanded
                // (`rocblas_cerr << ...` rather than what the macro expands to).
                let written = self.code.written_lines(
                    &n.lib,
                    &n.file,
                    t.line_of(s.start),
                    t.line_of(s.end.saturating_sub(1).max(s.start)),
                );
                let w = written.as_deref().and_then(|w| d.static_local.captures(w));
                let c = match &w {
                    Some(w) if w[2] == c[2] => w,
                    _ => &c,
                };
                v.insert("target".into(), c[2].to_string());
                v.insert("value".into(), c[3].to_string());
                v.insert("declared".into(), c[1].to_string());
                v.insert("local".into(), "true".into());
                // A function template has one such static per instantiation.
                if !binder.env(i).params.is_empty() {
                    v.insert("template".into(), "true".into());
                }
            } else if let Some(c) = d.plain_store.captures(&text) {
                let name = &c[1];
                let Some((decl, decl_at)) = globals.get(name) else {
                    continue;
                };
                if params.iter().any(|(_, p)| p == name)
                    || declares_local(body_text, name)
                    || c[2].len() > 160
                {
                    continue;
                }
                let decl_line = t.line_of(*decl_at);
                let decl_end = t.line_of(decl_at + t.s[*decl_at..].find(';').unwrap_or(0));
                let uses = self.code.lines_naming(
                    &n.lib,
                    &n.file,
                    name,
                    &[(decl_line, decl_end), (n.start_line, n.end_line)],
                );
                v.insert("target".into(), name.to_string());
                v.insert("value".into(), c[2].to_string());
                v.insert("declared".into(), decl.clone());
                v.insert("decl_lines".into(), format!("{decl_line}-{decl_end}"));
                if !uses.is_empty() {
                    let shown: Vec<String> = uses
                        .iter()
                        .take(6)
                        .map(|(a, b)| format!("{a}-{b}"))
                        .collect();
                    v.insert("uses".into(), shown.join(", "));
                }
            } else {
                continue;
            }
            let env = binder.env_at(i, s.start);
            if earlier_return_taken(&t, &b, s.start, &env).is_some() {
                continue;
            }
            let Ok(conds) = decided(&s.conds, &env) else {
                continue;
            };
            let line = t.line_of(s.start);
            let end = t.line_of(s.end.saturating_sub(1).max(s.start));
            let target = v["target"].clone();
            out.push(mk(FactKind::StaticState, target, line, end, v, conds));
        }
        for (o, cond, outer) in &b.branches {
            if cond.contains("pointer_mode") {
                let env = binder.env_at(i, *o);
                if earlier_return_taken(&t, &b, *o, &env).is_some() {
                    continue;
                }
                // A test the pointer mode the code has set decides (rocSOLVER sets it
                // before its rocBLAS calls) is not a branch of this API.
                if !matches!(condition(cond, &env), Truth::Open(_)) {
                    continue;
                }
                let (outer, _) = with_diverting_returns(&t, &b, *o, outer.clone(), Vec::new());
                let Ok(conds) = decided(&outer, &env) else {
                    continue;
                };
                let mut v = BTreeMap::new();
                v.insert("condition".into(), cond.clone());
                let line = t.line_of(*o);
                out.push(mk(
                    FactKind::PointerMode,
                    n.name.clone(),
                    line,
                    line,
                    v,
                    conds,
                ));
            }
        }
        out
    }
}

/// The leading conditions `next` shares with `acc` (all of `next` when `acc` is the
/// first).
/// The conditions under which an API reaches a function, each with the call it is
/// written around ([`FactReader::reach_conditions`]).
type Reach = Vec<(String, crate::model::ConditionSite)>;

/// The value naming a fact's [`crate::model::ConditionSite::own_names`] for the
/// function that holds it: its parameters, named like the API's, that are not them.
pub const OWN_NAMES: &str = "own_names";

fn note_own_names(f: &mut Fact, own: Vec<String>) {
    if !own.is_empty() {
        f.values.insert(OWN_NAMES.into(), own.join(" "));
    }
}

/// Prepends the conditions of `reach` to a fact's, and the calls that show them.
fn under(f: &mut Fact, reach: &Reach) {
    if reach.is_empty() {
        return;
    }
    f.conditions
        .splice(0..0, reach.iter().map(|(c, _)| c.clone()));
    let mut sites: Vec<crate::model::ConditionSite> = Vec::new();
    for (_, s) in reach {
        if !sites.contains(s) {
            sites.push(s.clone());
        }
    }
    f.condition_sites.splice(0..0, sites);
}

fn common_prefix(acc: Option<Vec<String>>, next: Vec<String>) -> Vec<String> {
    match acc {
        None => next,
        Some(c) => c
            .into_iter()
            .zip(next)
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect(),
    }
}

/// Offsets in `body` of the calls of `name`: the name as a whole word, followed by
/// `(` or by template arguments.
fn calls_of(body: &str, name: &str) -> Vec<usize> {
    let b = body.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    body.match_indices(name)
        .map(|(o, _)| o)
        .filter(|&o| {
            let end = o + name.len();
            let before_ok = o == 0 || !ident(b[o - 1]);
            let next = body[end..].trim_start();
            before_ok
                && (end >= b.len() || !ident(b[end]))
                && (next.starts_with('(') || next.starts_with('<'))
        })
        .collect()
}

/// The lines a launch fact spans: the launch's own.
fn launch_lines(t: &Text, line: u32, la: &LaunchArgs) -> (u32, u32) {
    // The launch's own lines: a citation from the `if` or `for` around it (30 lines up
    // in gebd2) reads as a launch there, and two launches in one branch (gebrd's
    // restore_diag of D and of E) as one; the conditions are stated apart.
    let first = t.line_of(la.start);
    // A launch macro's expansion sits on the line that invokes it and the invocation's
    // other lines are left empty: the `;` after it is on the invocation's last line
    // (sdot's `ROCBLAS_LAUNCH_KERNEL(` at :486, its kernel, grid and arguments down to :501).
    let close = la.end.min(t.s.len());
    let after_expansion = t.s[close..].find('\n').and_then(|eol| {
        let from = close + eol;
        t.s[from..]
            .char_indices()
            .find(|(_, c)| !c.is_whitespace())
            .filter(|(_, c)| *c == ';')
            .map(|(k, _)| from + k)
    });
    let last = after_expansion.map_or(t.line_of(la.end), |k| t.line_of(k));
    (first, last.max(line).max(first))
}

/// The edges by which node `i` is called (and, with `launches`, launched) from
/// another node.
fn callers_of(
    g: &InterfaceGraph,
    i: usize,
    launches: bool,
) -> impl Iterator<Item = &crate::model::GraphEdge> {
    g.edges.iter().filter(move |e| {
        e.to == i
            && e.from != i
            && (matches!(
                e.kind,
                EdgeKind::Call | EdgeKind::MacroCall | EdgeKind::CrossLibrary
            ) || (e.kind == EdgeKind::CheckNumerics && g.nodes[i].kind == NodeKind::Function)
                || (launches && e.kind == EdgeKind::Launch))
    })
}

/// The calls of `name` that edge `e` stands for in its caller's body (`t`, `b`) which
/// this API makes, in order, each with the conditions around it still open for the
/// API: a call past a return that always fires, or under a false test, is left out
/// (the first left is the call a reach condition cites: not gemm_ex's `if(BATCHED)`
/// call for a strided API). `None` where the body does not show as many calls of the
/// name as the edge counts.
fn live_sites(
    binder: &Binder,
    e: &crate::model::GraphEdge,
    t: &Text,
    b: &Body,
    name: &str,
) -> Option<Vec<(usize, Vec<String>)>> {
    let sites: Vec<usize> = if e.sites == 1 {
        let line = t.line(e.line);
        vec![
            t.offset(e.line)
                + line
                    .find(name)
                    .unwrap_or(line.len() - line.trim_start().len()),
        ]
    } else {
        calls_of(&t.s[b.open..b.close], name)
            .into_iter()
            .map(|o| b.open + o)
            .collect()
    };
    if sites.len() != e.sites as usize {
        return None;
    }
    Some(
        sites
            .into_iter()
            .filter_map(|at| {
                let env = binder.env_at(e.from, at);
                if earlier_return_taken(t, b, at, &env).is_some() {
                    return None;
                }
                let (conds, _) = with_diverting_returns(t, b, at, b.conds_at(at).0, Vec::new());
                decided(&conds, &env).ok().map(|open| (at, open))
            })
            .collect(),
    )
}

/// Conditions read with what the API fixes: the ones still open, or why the code
/// under them never runs for this API (one of them is false).
/// Why a statement at `at` is never reached: a `return` before it, in the same
/// function and outside any loop or `switch`, whose conditions past those the two
/// share all hold for this API.
fn earlier_return_taken(t: &Text, b: &Body, at: usize, env: &eval::Env) -> Option<String> {
    b.returns_before(&t.s, at).into_iter().find_map(|(s, own)| {
        if own.is_empty()
            || own.iter().any(|c| {
                is_branch_header(c)
            })
            || !own.iter().all(|c| condition(c, env) == Truth::True)
        {
            return None;
        }
        let line = t.line_of(s.start);
        let known = own
            .iter()
            .map(|c| known_names(c, env))
            .filter(|k| !k.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        let held = own.join(" && ");
        Some(if known.is_empty() {
            format!("the return at line {line} always comes first: `{held}` holds for this API")
        } else {
            format!(
                "the return at line {line} always comes first: `{held}` holds for this API ({known})"
            )
        })
    })
}

/// The shared variables each barrier of a body is seen to order (one thread's write
/// before it, another's read after it), by the barrier's line.
fn barrier_orders_by_line(t: &Text, b: &Body, writes: bool) -> BTreeMap<u32, Vec<String>> {
    let first = t.line_of(b.open);
    let code: Vec<&str> = t.s[b.open..b.close]
        .split('\n')
        .map(|l| l.split_once("//").map_or(l, |x| x.0))
        .collect();
    let orders = match writes {
        true => crate::index::device::barrier_write_orders(&code),
        false => crate::index::device::barrier_orders(&code),
    };
    orders
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(k, names)| (first + k as u32, names))
        .collect()
}

/// The test of each `return` before offset `at` that stands alone under one test of
/// its own (`if(!handle) return ...;`), outside loops and `switch`es: code at `at` runs
/// only where each of them is false.
pub(crate) fn returned_tests<'b>(t: &Text, b: &'b Body, at: usize) -> Vec<&'b String> {
    b.returns_before(&t.s, at)
        .into_iter()
        .filter_map(|(_, own)| {
            // `if(true)` wraps a block to scope its locals; it is no condition.
            let own: Vec<&String> = own.iter().filter(|c| c.trim() != "true").collect();
            match own[..] {
                [c] if !is_branch_header(c) => Some(c),
                _ => None,
            }
        })
        .collect()
}

/// The test of each earlier `return` that hands the call to another path
/// (`if(n <= TRTRI_MAX_COLS) return getri_run_small(...)`, a 64-bit launcher's
/// `return` into its 32-bit one), negated, put before the conditions `conds` around
/// offset `at` (with the `if`'s offset before `offsets`): code at `at` runs only where
/// that path was not taken. A return of a status only is the early-returns' business.
pub(crate) fn with_diverting_returns(
    t: &Text,
    b: &Body,
    at: usize,
    conds: Vec<String>,
    offsets: Vec<usize>,
) -> (Vec<String>, Vec<usize>) {
    static CALL: OnceLock<Regex> = OnceLock::new();
    let call = CALL.get_or_init(|| {
        Regex::new(r"^return\s+[A-Za-z_][\w:]*\s*(?:<[^;]*>)?\s*\(").expect("static regex")
    });
    let mut tests = Vec::new();
    let mut at_offsets = Vec::new();
    for (s, own) in b.returns_before(&t.s, at) {
        let own: Vec<&String> = own.iter().filter(|c| c.trim() != "true").collect();
        let text = tidy(&t.s[s.start..s.end]);
        if own.is_empty()
            || own.iter().any(|c| {
                is_branch_header(c)
                    || c.starts_with("constexpr ")
                    || c.contains("is_device_memory_size_query")
            })
            || !call.is_match(&text)
            || text.contains("set_optimal_device_memory_size")
            // On a path where one of its tests is false it was never taken.
            || own.iter().any(|c| conds.contains(&negation(c)))
            // An error path (`RETURN_IF_HIP_ERROR`'s `_status != hipSuccess`) is no
            // other path of the work.
            || own.iter().any(|c| {
                let c = c.to_ascii_lowercase();
                c.contains("status") || c.contains("hipsuccess") || c.contains("error")
            })
            || call
                .find(&text)
                .is_some_and(|m| m.as_str().contains("status") || m.as_str().contains("error"))
        {
            continue;
        }
        // Nested tests (`if(a) { if(b) return f(); }`) return when all of them hold.
        let taken = match own[..] {
            [c] => c.clone(),
            _ => own
                .iter()
                .map(|c| {
                    if c.contains("||") || c.contains('?') {
                        format!("({c})")
                    } else {
                        c.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" && "),
        };
        let negated = negation(&taken);
        if conds.contains(&negated) || tests.contains(&negated) {
            continue;
        }
        tests.push(negated);
        at_offsets.push(s.cond_at.last().copied().unwrap_or(s.start));
    }
    if tests.is_empty() {
        return (conds, offsets);
    }
    tests.extend(conds);
    at_offsets.extend(offsets);
    (tests, at_offsets)
}

/// The reduced-precision element type (`rocblas_bfloat16`, `rocblas_half`,
/// `rocblas_xfloat32`, the 8-bit floats) a callee's parameters take by value where
/// the API's prototype (`api_params`) names none: no value of this API has that type,
/// so another overload is the one called.
fn narrow_parameter(params: &[(String, String)], api_params: &str) -> Option<String> {
    const NARROW: [&str; 6] = [
        "rocblas_bfloat16",
        "rocblas_half",
        "_Float16",
        "rocblas_xfloat32",
        "rocblas_f8",
        "rocblas_bf8",
    ];
    if api_params.is_empty() {
        return None;
    }
    // Per type: hdot takes `rocblas_half`, so the reduction's bfloat16 overload is no
    // more its own than the complex ones (rocblas_reduction.hpp:81-99).
    let t = parameter_of_type(params, &NARROW)?;
    let same: &[&str] = match t.as_str() {
        "rocblas_half" | "_Float16" => &["rocblas_half", "_Float16"],
        other => &[other][..],
    };
    (!same.iter().any(|s| api_params.contains(s))).then_some(t)
}

/// A parameter of an element type none of the API's parameters has: a narrow type
/// ([`narrow_parameter`]), or a complex one where the API's arguments are real.
fn foreign_element_parameter(params: &[(String, String)], api_params: &str) -> Option<String> {
    if let Some(t) = narrow_parameter(params, api_params) {
        return Some(t);
    }
    if api_params.is_empty() || api_params.contains("complex") {
        return None;
    }
    parameter_of_type(params, &["rocblas_float_complex", "rocblas_double_complex"])
}

/// The first parameter whose type is one of `types` by value or reference
/// (`const rocblas_half&`), as that type.
fn parameter_of_type(params: &[(String, String)], types: &[&str]) -> Option<String> {
    params.iter().find_map(|(ty, _)| {
        let plain: Vec<&str> = ty
            .split_whitespace()
            .filter(|w| *w != "const" && *w != "&")
            .collect();
        match plain[..] {
            [t] if types.contains(&t) => Some(t.to_string()),
            _ => None,
        }
    })
}

/// `(name)->` and `(name).`, as a macro's parenthesized parameter expands, written
/// `name->` and `name.`.
fn paren_receiver(c: &str) -> std::borrow::Cow<'_, str> {
    static RECEIVER: OnceLock<Regex> = OnceLock::new();
    RECEIVER
        .get_or_init(|| Regex::new(r"\(\s*(\w+)\s*\)\s*(->|\.)").expect("static regex"))
        .replace_all(c, "$1$2")
}

/// The identifier `s` ends with (`hD` of `( hD`), empty if none.
pub(crate) fn trailing_word(s: &str) -> &str {
    let start = s
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
        .last()
        .map_or(s.len(), |(k, _)| k);
    &s[start..]
}

/// Whether offset `at` of `code` sits in an operand that is never evaluated
/// (`decltype(handle->device_malloc(0))`, rocblas_trsm_kernels.hpp:1897, names a type:
/// nothing is allocated there), looking out through the parentheses around it to the
/// statement's start.
fn unevaluated(code: &str, at: usize) -> bool {
    let b = code.as_bytes();
    let mut depth = 0usize;
    let mut k = at.min(b.len());
    while k > 0 {
        k -= 1;
        match b[k] {
            b')' => depth += 1,
            b'(' if depth > 0 => depth -= 1,
            b'(' => {
                let word = trailing_word(code[..k].trim_end());
                if matches!(
                    word,
                    "decltype" | "sizeof" | "alignof" | "noexcept" | "typeid"
                ) {
                    return true;
                }
            }
            // A braced initializer inside the operand (`decltype(rocblas_handle {} ->
            // device_malloc(0))`, handle.cpp:765), or a block before the statement:
            // stepped over whole.
            b'}' => {
                let mut braces = 1usize;
                while k > 0 && braces > 0 {
                    k -= 1;
                    match b[k] {
                        b'}' => braces += 1,
                        b'{' => braces -= 1,
                        _ => {}
                    }
                }
            }
            b';' | b'{' if depth == 0 => return false,
            _ => {}
        }
    }
    false
}

fn decided(conds: &[String], env: &eval::Env) -> Result<Vec<String>, String> {
    let mut open = Vec::new();
    // Each condition is read under the open ones before it that say something of a
    // name's value: `notrans` then `conj` cannot both hold, whatever `trans` is.
    let mut assumed: Option<eval::Env> = None;
    let mut before: BTreeSet<String> = BTreeSet::new();
    for (k, c) in conds.iter().enumerate() {
        // A macro's `(handle)->` is the caller's `handle->`.
        let t = &*paren_receiver(c.trim());
        let negation_of = |x: &str| {
            x.strip_prefix("not (")
                .and_then(|r| r.strip_suffix(')'))
                .is_some_and(|inner| before.contains(inner))
        };
        // The same test again holds; its negation cannot.
        let truth = if before.contains(t) {
            Truth::True
        } else if negation_of(t) || before.contains(format!("not ({t})").as_str()) {
            Truth::False
        } else {
            condition(c, assumed.as_ref().unwrap_or(env))
        };
        if let Truth::Open(_) = truth {
            before.insert(t.to_string());
        }
        if let (Truth::Open(rest), true) = (&truth, k + 1 < conds.len()) {
            let now = assumed.as_ref().unwrap_or(env);
            let c = c.trim();
            let c = c.strip_prefix("constexpr ").unwrap_or(c);
            // What stays open of it holds too (`n <= 0 || batch_count == 0` where
            // `n >= 1` is `batch_count == 0`).
            let tests: Vec<String> = [c.to_string(), rest.clone()]
                .into_iter()
                .chain(eval::expanded(c, now))
                .filter(|t| eval::bounds_anything(t))
                .collect();
            if !tests.is_empty() {
                let next = assumed.get_or_insert_with(|| env.clone());
                for t in tests {
                    next.values
                        .insert(format!("{}{t}", eval::HOLDS), eval::Value::Bool(true));
                }
            }
        }
        match truth {
            Truth::True => {}
            Truth::False => {
                let known = known_names(c, assumed.as_ref().unwrap_or(env));
                return Err(if known.is_empty() {
                    format!("`{c}` is false for this API")
                } else {
                    format!("`{c}` is false for this API ({known})")
                });
            }
            Truth::Open(r) => open.push(r),
        }
    }
    // Conditions each open on its own may still need values together that no call
    // site passes together.
    let combos = eval::site_combinations(env);
    if !combos.is_empty() {
        let ruled_out = |combo: &Vec<(&str, i64)>| {
            let mut e = env.clone();
            for (name, v) in combo {
                if !e.values.contains_key(*name) {
                    e.values.remove(&format!("{}{name}", eval::ONE_OF));
                    e.values.insert(name.to_string(), eval::Value::Int(*v));
                }
            }
            conds.iter().find(|c| condition(c, &e) == Truth::False)
        };
        let mut first = None;
        if combos.iter().all(|c| match ruled_out(c) {
            Some(f) => {
                first.get_or_insert(f);
                true
            }
            None => false,
        }) {
            let c = first.map(String::as_str).unwrap_or_default();
            return Err(format!(
                "no call site passes values under which `{c}` holds with the rest"
            ));
        }
    }
    Ok(open)
}

/// Values of a node's non-type template parameters, as every caller in the graph
/// passes them.
fn template_values(binder: &Binder, node: usize) -> ParamValues {
    let env = binder.env(node);
    env.values
        .iter()
        .filter(|(k, _)| env.params.contains(*k))
        .filter_map(|(k, v)| match v {
            eval::Value::Int(x) => Some((k.clone(), x.to_string())),
            _ => None,
        })
        .collect()
}

/// The values of a launch's block dimensions (`dim3 threads(NB_X, NB_Y)` declared
/// before the launch, `dim3(NB)` or a plain expression), when all are known.
fn block_dims(block: &str, body_before: &str, pv: &ParamValues) -> Option<Vec<i64>> {
    let a = block.trim();
    let args = if is_name(a) {
        last_dim3(a, body_before).unwrap_or_else(|| a.to_string())
    } else {
        a.to_string()
    };
    let inner = args
        .strip_prefix("dim3")
        .map(str::trim)
        .unwrap_or(&args)
        .trim_start_matches('(')
        .trim_end_matches(')')
        .to_string();
    let dims: Option<Vec<i64>> = split_args(&inner, true)
        .iter()
        .map(|d| eval_int(&substitute(d, pv)))
        .collect();
    dims.filter(|d| !d.is_empty() && d.iter().all(|&x| x > 0))
}

/// The arguments of the last value a `dim3` variable gets before a launch: its
/// declaration (`dim3 grid(blocks, 1, batches)`, `dim3 grid = dim3(...)`) or a later
/// assignment (`grid = dim3(blocks, batch_count, 1)`), whichever comes last.
///
/// Read backwards from the launch, one occurrence of the name at a time: a pattern
/// run over the whole body before every launch argument was most of a fact
/// extraction's CPU.
fn last_dim3(name: &str, before: &str) -> Option<String> {
    let b = before.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    // After the name: `[= [dim3]] (` or `{`; `dim3_rhs` requires the `= dim3`.
    let opening = |mut i: usize, dim3_rhs: bool| -> Option<usize> {
        i = skip_ws(i);
        let mut assigned = false;
        if b.get(i) == Some(&b'=') && b.get(i + 1) != Some(&b'=') {
            i = skip_ws(i + 1);
            if before[i..].starts_with("dim3") && !b.get(i + 4).is_some_and(|&c| word(c)) {
                assigned = true;
                i = skip_ws(i + 4);
            } else if dim3_rhs {
                return None;
            }
        } else if dim3_rhs {
            return None;
        }
        (matches!(b.get(i), Some(b'(' | b'{')) && (assigned || !dim3_rhs)).then_some(i)
    };
    let open = before.rmatch_indices(name).find_map(|(k, _)| {
        let after = k + name.len();
        // `dim3 NAME ...`: the word before is `dim3`, after at least one space.
        let head = before[..k].trim_end_matches(|c: char| c.is_ascii_whitespace());
        let declared = head.len() < k
            && head.ends_with("dim3")
            && !head[..head.len() - 4].bytes().last().is_some_and(word);
        if declared {
            if let Some(i) = opening(after, false) {
                return Some(i);
            }
        }
        // `NAME = dim3(...)`, the name not part of a longer one or a member.
        let free = k == 0 || !matches!(b[k - 1], b'.' | b'>') && !word(b[k - 1]);
        if free {
            return opening(after, true);
        }
        None
    })?;
    let sc = Scanner::new(before);
    let close = sc.matching(open);
    if close >= before.len() {
        return None;
    }
    // `dim3 g = (c) ? a : b;`: the parentheses are not the initializer's whole.
    let rest = before[close + 1..].trim_start();
    if !(rest.is_empty() || rest.starts_with(';') || rest.starts_with(',')) {
        return None;
    }
    Some(tidy(&before[open + 1..close]))
}

/// The public headers whose enumerators callers pass as arguments (`rocblas_side_left`,
/// `rocblas_evect_original`): read where a library's tree has them.
/// Headers whose namespace-scope integer constants conditions compare with
/// (`n_64 <= c_i32_max`, `batch_count_64 < c_i64_grid_YZ_chunk`).
/// rocBLAS's size thresholds (`n_gemmt_threshold = 1232`) too: an answer names their
/// values, not only their names.
const CONSTANT_HEADERS: [&str; 4] = [
    "library/src/include/int64_helpers.hpp",
    "library/src/blas2/rocblas_level2_threshold.hpp",
    "library/src/blas3/rocblas_level3_threshold.hpp",
    "library/src/blas_ex/rocblas_blas_ex_threshold.hpp",
];

const ENUM_HEADERS: [&str; 2] = [
    "library/include/internal/rocblas-types.h",
    "library/include/rocsolver/rocsolver-extra-types.h",
];

/// The value a return fact carries where its test, renamed into the names the
/// outermost caller passing its parameters uses (`n_64` -> `n`), differs from the test as
/// written.
pub const OUTER_CONDITION: &str = "outer_condition";

/// The key of the functions a return's own block runs before it returns.
pub const BLOCK_RUNS: &str = "block_runs";

/// `text` with each whole word `names` maps replaced by what it maps to (not a member:
/// `h->n` and `s.n` stay).
fn rename_words(text: &str, names: &BTreeMap<String, String>) -> String {
    static WORD: OnceLock<Regex> = OnceLock::new();
    if names.is_empty() {
        return text.to_string();
    }
    let re = WORD.get_or_init(|| Regex::new(r"[A-Za-z_]\w*").expect("static regex"));
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in re.find_iter(text) {
        out.push_str(&text[last..m.start()]);
        let member = text[..m.start()].ends_with('.') || text[..m.start()].ends_with("->");
        match names.get(m.as_str()).filter(|_| !member) {
            Some(to) => out.push_str(to),
            None => out.push_str(m.as_str()),
        }
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

/// The value a return fact carries where the caller drops the status: it ends the
/// function it is in, not the API.
pub const CALLER_DROPS: &str = "caller_drops";

/// The value a fact that depends on the pointer mode carries where the library sets
/// the mode itself on some way the API reaches it (rocSOLVER sets device mode around
/// sytrd's rocBLAS calls, host mode around larfb's): `;`-separated sources, each
/// `MODE|LIB|FUNCTION|FILE|HEAD|START-LINE` for a mode set (the enumerator, the line
/// naming the function and the lines to show, the last one setting it), or `caller` for the handle's mode as
/// the API's caller set it.
pub const MODE_SET: &str = "mode_set";

/// The key of a launch fact whose function the API reaches only through a call under a
/// test or in a loop: no test shows on the launch, yet it is not made whatever the
/// arguments.
pub const ON_A_TESTED_PATH: &str = "on_a_tested_path";

/// Where the pointer mode a function runs under comes from, on one way the API
/// reaches it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ModeSource {
    /// The mode the API's caller set on the handle.
    Caller,
    /// Set by the library's own code before the call: the mode and where.
    Set {
        mode: i64,
        lib: String,
        function: String,
        file: String,
        /// The line naming the function, and the lines shown for the setting, the
        /// last one setting the mode.
        head: u32,
        lines: (u32, u32),
    },
}

impl ModeSource {
    fn value(&self) -> String {
        match self {
            ModeSource::Caller => "caller".into(),
            ModeSource::Set {
                mode,
                lib,
                function,
                file,
                head,
                lines: (start, line),
            } => {
                let mode = bind::pointer_mode_name(*mode);
                format!("{mode}|{lib}|{function}|{file}|{head}|{start}-{line}")
            }
        }
    }
}

/// The value a fact of numerics checking's code carries: it runs only when the handle
/// asks for it.
pub const NUMERICS_CHECK: &str = "numerics_check";

/// For each node, the lines of the calls from the API down to it, the earliest where
/// several call chains reach it (lines compared in turn); `None` where no call reaches
/// it. A chain never takes a node twice, so a cycle ends. With `only`, chains take just
/// the edges it marks.
fn run_order(g: &InterfaceGraph, only: Option<&[bool]>) -> Vec<Option<Vec<u32>>> {
    let mut keys: Vec<Option<Vec<u32>>> = vec![None; g.nodes.len()];
    if keys.is_empty() {
        return keys;
    }
    keys[0] = Some(Vec::new());
    let mut chains: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    chains[0] = vec![0];
    // Relax in rounds: a chain is never longer than the nodes it can take.
    for _ in 0..g.nodes.len().min(24) {
        let mut changed = false;
        for (k, e) in g.edges.iter().enumerate() {
            if only.is_some_and(|o| !o[k]) {
                continue;
            }
            let (Some(k), false) = (keys[e.from].clone(), chains[e.from].contains(&e.to)) else {
                continue;
            };
            let mut new = k;
            new.push(e.line);
            if keys[e.to].as_ref().is_none_or(|old| new < *old) {
                let mut chain = chains[e.from].clone();
                chain.push(e.to);
                chains[e.to] = chain;
                keys[e.to] = Some(new);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    keys
}

/// How a kernel argument as written passes the scalar `name`: `Some(true)` for the
/// pointer (`alpha`, `(const T*)alpha`), `Some(false)` for its value read on the host
/// (`*alpha`, `load_scalar(alpha)`), `None` when it does not name it or reads otherwise.
/// What a pointer mode passes is said in answers and checked in claims by this one
/// reading.
pub fn scalar_passing(arg: &str, name: &str) -> Option<bool> {
    if !names(arg, name) {
        return None;
    }
    // Casts in front: `(const rocblas_half*)alpha`.
    let mut bare = arg.trim();
    while let Some(rest) = bare.strip_prefix('(') {
        match rest.find(')') {
            Some(k) if rest[..k].contains('*') || rest[..k].contains("const") => {
                bare = rest[k + 1..].trim()
            }
            _ => break,
        }
    }
    if bare == name {
        return Some(true);
    }
    (bare.strip_prefix('*').map(str::trim) == Some(name) || bare.starts_with("load_scalar("))
        .then_some(false)
}

/// Where a function body stores to memory: an assignment through `*p`, `p[i]` or
/// `p->m` that starts a statement (a declaration `T* p = ...` or `float a[4] = ...` is
/// none), or an allocation. Offsets into `body`.
fn store_offsets(body: &str) -> Vec<usize> {
    static RE: OnceLock<[Regex; 2]> = OnceLock::new();
    let [store, alloc] = RE.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        [
            r(r"(?:\*\s*\(?\s*[A-Za-z_]\w*\s*\)?|[A-Za-z_][\w.]*\s*\[[^\];]*\]|[A-Za-z_]\w*\s*->\s*[A-Za-z_][\w.]*)\s*(?:[-+*/|&^]|<<|>>)?=[^=]"),
            r(r"\b(?:malloc|calloc|hipMalloc\w*|hipHostMalloc|new)\b"),
        ]
    });
    let mut out: Vec<usize> = store
        .find_iter(body)
        .filter(|m| {
            let before = body[..m.start()].trim_end();
            before.is_empty() || before.ends_with([';', '{', '}', ')', ':'])
        })
        .map(|m| m.start())
        .chain(alloc.find_iter(body).map(|m| m.start()))
        .collect();
    out.sort_unstable();
    out
}

/// The nonzero test of a scalar (`if(alpha)`, `if(alpha != 0)`) that every store of a
/// kernel's body sits under, or its zero test returning before them
/// (`if(!alpha) return;`), with the offset of its `if`: a zero scalar stores nothing.
/// A store is an assignment through `*p` or `p[i]` that starts a statement (a
/// declaration `T* p = ...` or `float a[4] = ...` is none); the scalar is a name the
/// body loads with `load_scalar` or a parameter named for alpha or beta.
fn scalar_guard(text: &str, b: &code::Body) -> Option<(String, String, usize)> {
    static RE: OnceLock<[Regex; 3]> = OnceLock::new();
    let [nonzero, param, early_return] = RE.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        [
            r(r"^\(?\s*([A-Za-z_]\w*)\s*(?:!=\s*0(?:\.0*)?f?\s*)?\)?$"),
            r(r"(?i)^(?:alpha|beta)"),
            r(r"\bif\s*\(\s*(?:!\s*\(?\s*([A-Za-z_]\w*)\s*\)?|([A-Za-z_]\w*)\s*==\s*0)\s*\)\s*return\s*;"),
        ]
    });
    let body = &text[b.open..b.close];
    let mut common: Option<Vec<(String, usize)>> = None;
    for at in store_offsets(body) {
        let (conds, sites) = b.conds_at(b.open + at);
        let here: Vec<(String, usize)> = conds.into_iter().zip(sites).collect();
        common = Some(match common {
            None => here,
            Some(c) => c.into_iter().filter(|x| here.contains(x)).collect(),
        });
    }
    let loaded = |name: &str| {
        body.match_indices(name).any(|(k, _)| {
            let rest = body[k + name.len()..].trim_start();
            let after = rest.strip_prefix('=').map(str::trim_start);
            after.is_some_and(|a| a.starts_with("load_scalar"))
        })
    };
    let common = common?;
    let scalar = |name: &str| loaded(name) || param.is_match(name);
    if let Some(g) = common.iter().find_map(|(cond, at)| {
        let c = nonzero.captures(cond.trim())?;
        let name = c[1].to_string();
        scalar(&name).then(|| (name, tidy(cond), *at))
    }) {
        return Some(g);
    }
    // `if(!alpha) return;` before every store, in a scope that holds them all.
    let first_store = *store_offsets(body).first()?;
    early_return
        .captures_iter(&body[..first_store])
        .find_map(|c| {
            let name = c.get(1).or(c.get(2))?.as_str().to_string();
            let at = b.open + c.get(0)?.start();
            let (outer, _) = b.conds_at(at);
            let enclosing_all = outer.iter().all(|o| common.iter().any(|(c, _)| c == o));
            (enclosing_all && scalar(&name)).then(|| (name, tidy(&c[0]), at))
        })
}

/// Where `body` names one of `constants` as a whole word: `(name, offset)`.
fn constant_uses<'c>(body: &str, constants: &BTreeSet<&'c str>) -> Vec<(&'c str, usize)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"[A-Za-z_]\w*").expect("static regex"));
    re.find_iter(body)
        .filter_map(|m| constants.get(m.as_str()).map(|c| (*c, m.start())))
        .collect()
}

/// Does `text` name `ident` as a whole word?
fn names(text: &str, ident: &str) -> bool {
    text.match_indices(ident).any(|(k, _)| {
        let before = text[..k].chars().last();
        let after = text[k + ident.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Integer constants the code before `upto` declares (`constexpr int DIM_X = 128;`),
/// added to `pv`.
fn local_constants(text: &str, pv: &ParamValues) -> ParamValues {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\b(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+)?[A-Za-z_][\w:]*\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);")
            .expect("static regex")
    });
    let mut out = pv.clone();
    for c in re.captures_iter(text) {
        if let Some(v) = eval_int(&substitute(&c[2], &out)) {
            out.insert(c[1].to_string(), v.to_string());
        }
    }
    out
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Replaces known template parameters in an expression by their values.
fn substitute(expr: &str, pv: &ParamValues) -> String {
    if pv.is_empty() {
        return expr.to_string();
    }
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"[A-Za-z_]\w*").expect("static regex"));
    re.replace_all(expr, |c: &regex::Captures| {
        pv.get(&c[0]).cloned().unwrap_or_else(|| c[0].to_string())
    })
    .into_owned()
}

/// `NB = 256, DIM_X = 64` for the known parameters an expression names.
fn known_values(expr: &str, pv: &ParamValues) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"[A-Za-z_]\w*").expect("static regex"));
    let mut seen = BTreeSet::new();
    re.find_iter(expr)
        .filter_map(|m| {
            let n = m.as_str();
            let v = pv.get(n)?;
            seen.insert(n).then(|| format!("{n} = {v}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The values every launch of a kernel agrees on.
fn agreed(all: &[ParamValues]) -> ParamValues {
    let Some(first) = all.first() else {
        return ParamValues::new();
    };
    first
        .iter()
        .filter(|(k, v)| all.iter().all(|o| o.get(*k) == Some(*v)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Is node `i` reached from one of `kernels` through calls?
fn reached_from(g: &InterfaceGraph, kernels: &BTreeSet<usize>, i: usize) -> bool {
    let mut seen: BTreeSet<usize> = kernels.clone();
    let mut stack: Vec<usize> = kernels.iter().copied().collect();
    while let Some(k) = stack.pop() {
        if k == i {
            return true;
        }
        for e in g
            .edges
            .iter()
            .filter(|e| e.from == k && e.kind != EdgeKind::Launch)
        {
            if seen.insert(e.to) {
                stack.push(e.to);
            }
        }
    }
    false
}

/// A fact table holding no facts yet: the kernels and public APIs the indexes define,
/// which tell a claim about another API's kernel apart from one no fact covers.
pub fn names_table(indexes: &[&LibraryIndex]) -> FactTable {
    let mut t = FactTable::default();
    for ix in indexes {
        t.api_names.extend(ix.api.iter().map(|a| a.name.clone()));
        for f in &ix.files {
            t.kernels.extend(
                f.symbols
                    .iter()
                    .filter(|s| s.kind == SymbolKind::Kernel)
                    .map(|s| s.name.clone()),
            );
        }
    }
    t
}

/// One line per fact, for `rocqa facts`.
pub fn describe(f: &Fact) -> String {
    let at = format!("{}:{}", f.file, f.line);
    let v = |k: &str| f.values.get(k).cloned().unwrap_or_default();
    let what = match f.kind {
        FactKind::Launch => format!(
            "{} launches {} with grid {}, block {}, dynamic LDS {}",
            f.function,
            f.subject,
            v("grid"),
            v("block"),
            v("lds")
        ),
        FactKind::StoresNothing => format!(
            "{} stores nothing and allocates nothing: {}",
            f.subject,
            v("returns")
        ),
        FactKind::ScalarGuard => format!(
            "every store of {} is behind {}: a zero {} stores nothing",
            f.subject,
            v("statement"),
            v("scalar")
        ),
        FactKind::LaunchBounds => format!(
            "{} has __launch_bounds__({}){}",
            f.subject,
            v("bounds"),
            f.values
                .get("value")
                .map(|x| format!(" = {x} threads"))
                .unwrap_or_default()
        ),
        FactKind::SharedMemory => format!(
            "{} declares __shared__ {} {}{}{}",
            f.function,
            v("type"),
            f.subject,
            v("size"),
            f.values
                .get("elements")
                .map(|x| format!(" ({x} elements)"))
                .unwrap_or_default()
        ),
        FactKind::Barrier | FactKind::Atomic | FactKind::Wavefront | FactKind::MemoryPath => {
            format!(
                "{} uses {} ({} times, lines {})",
                f.function,
                v("ops"),
                v("count"),
                v("lines")
            )
        }
        FactKind::ArgCheck | FactKind::QuickReturn => format!(
            "{} returns {} when {}",
            f.function,
            v("status"),
            v("condition")
        ),
        FactKind::PointerMode => {
            format!("{} branches on {}", f.function, v("condition"))
        }
        FactKind::WorkspaceQuery => format!(
            "{} answers a device-memory size query with {}",
            f.function,
            v("returns")
        ),
        FactKind::CrossLibrary => format!("{} calls {} ({})", f.function, f.subject, v("callee")),
        FactKind::Store => format!("{} sets {} = {}", f.function, v("target"), v("value")),
        FactKind::StaticState if f.values.contains_key("local") => format!(
            "{} initializes {} = {} once",
            f.function,
            v("declared"),
            v("value")
        ),
        FactKind::StaticState => format!(
            "{} sets {} = {} (declared `{}` at line {}; named again at {})",
            f.function,
            v("target"),
            v("value"),
            v("declared"),
            v("decl_lines"),
            f.values.get("uses").map_or("no other line", String::as_str)
        ),
        FactKind::Declaration => format!(
            "{} is declared as returning {} with parameters ({})",
            f.subject,
            v("returns"),
            v("params").replace(" | ", ", ")
        ),
        FactKind::Return => format!("{} returns {}", f.function, v("returns")),
        FactKind::Definition => match f.values.get("handler") {
            Some(h) => format!(
                "{} is defined here; an exception in it returns {h}",
                f.function
            ),
            None => format!("{} is defined here, with no exception handler", f.function),
        },
        FactKind::RuntimeCall => {
            let times = match f.values.get("count") {
                Some(n) => format!(" {n} times"),
                None => String::new(),
            };
            match f.values.get("direction") {
                Some(d) => format!("{} calls {}{times} ({d})", f.function, f.subject),
                None => format!("{} calls {}{times}", f.function, f.subject),
            }
        }
    };
    let cond = if f.conditions.is_empty() {
        String::new()
    } else {
        format!(" [if {}]", f.conditions.join("; "))
    };
    format!("{at:<50} {:<15} {what}{cond}", f.kind.label())
}

/// Whether `body` declares a local `name` (a type or `auto` written before it), which
/// hides a namespace-scope variable of that name.
fn declares_local(body: &str, name: &str) -> bool {
    let mut from = 0;
    while let Some(k) = find_word(&body[from..], name) {
        let at = from + k;
        let before =
            body[..at].trim_end_matches(|c: char| c.is_whitespace() || c == '*' || c == '&');
        let word_from = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '>'))
            .map_or(0, |i| i + 1);
        let word = &before[word_from..];
        let keyword = matches!(
            word,
            "" | "return" | "case" | "else" | "delete" | "throw" | "sizeof" | "do" | "co_return"
        );
        if !keyword && before.len() < body[..at].len() {
            return true;
        }
        from = at + name.len();
    }
    false
}

/// How a written line states a kernel's launch bounds `arg` (as expanded) where it
/// says it otherwise: the macro call passing it (`ROCBLAS_KERNEL(NB)` for
/// `__launch_bounds__(NB)`), or `__launch_bounds__` of a macro name
/// (`__launch_bounds__(IAMAX_THDS)` for `__launch_bounds__(1024)`); `None` where the
/// line writes what the expansion reads.
fn bounds_macro(line: &str, arg: &str) -> Option<String> {
    static CALL: OnceLock<Regex> = OnceLock::new();
    let call = CALL.get_or_init(|| {
        Regex::new(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
            .expect("static regex")
    });
    let want = squash_parens(arg);
    if line.contains("__launch_bounds__") {
        return call
            .captures_iter(line)
            .find(|c| &c[1] == "__launch_bounds__")
            .filter(|c| squash_parens(&c[2]) != want)
            .map(|c| tidy(&c[0]));
    }
    let all_caps = |n: &str| {
        n.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    };
    call.captures_iter(line)
        .find(|c| all_caps(&c[1]) && squash_parens(&c[2]) == want)
        .map(|c| tidy(&c[0]))
}

/// Text with whitespace and enclosing parentheses dropped, to compare arguments.
fn squash_parens(s: &str) -> String {
    let mut t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    while t.starts_with('(') && t.ends_with(')') && t.len() >= 2 {
        t = t[1..t.len() - 1].to_string();
    }
    t
}

/// Where `word` first occurs in `s` as a whole identifier.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let is_id = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(k) = s[from..].find(word) {
        let at = from + k;
        let before = s[..at].chars().next_back().is_some_and(is_id);
        let after = s[at + word.len()..].chars().next().is_some_and(is_id);
        if !before && !after {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The return type written before a function's name, without what only the build
/// reads there: `extern "C"`, attributes, `__declspec(...)`, and all-capitals macro
/// words (`ROCBLAS_EXPORT`, `ROCSOLVER_EXPORT`, a deprecation macro with its argument).
fn return_type(head: &str) -> Option<String> {
    let mut s = head.replace("extern \"C\"", " ");
    for marker in ["__attribute__", "__declspec", "[["] {
        while let Some(at) = s.find(marker) {
            let open = if marker == "[[" {
                at
            } else {
                match s[at..].find('(') {
                    Some(k) => at + k,
                    None => break,
                }
            };
            let close = if marker == "[[" {
                s[at..].find("]]").map_or(s.len(), |k| at + k + 2)
            } else {
                (Scanner::new(&s).matching(open) + 1).min(s.len())
            };
            s.replace_range(at..close, " ");
        }
    }
    // A macro word with an argument list: `ROCBLAS_DEPRECATED_MSG("...")`.
    let words: Vec<&str> = s.split_whitespace().collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut skip_parens = 0i32;
    for w in words {
        if skip_parens > 0 {
            skip_parens += w.matches('(').count() as i32 - w.matches(')').count() as i32;
            continue;
        }
        let bare = w.split('(').next().unwrap_or(w);
        let macro_word = bare.len() > 1
            && bare
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && bare.chars().any(|c| c.is_ascii_uppercase());
        if macro_word {
            skip_parens = w.matches('(').count() as i32 - w.matches(')').count() as i32;
            continue;
        }
        kept.push(w);
    }
    let t = tidy(&kept.join(" "));
    (!t.is_empty() && !t.contains(['(', ')', '"'])).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_in_an_unevaluated_operand_is_not_made() {
        let code = "auto& w = static_cast<decltype(handle->device_malloc(0))&>(w_mem); auto m = handle->device_malloc(n);";
        let first = code.find("device_malloc").unwrap();
        let second = code.rfind("device_malloc").unwrap();
        assert!(unevaluated(code, first));
        assert!(!unevaluated(code, second));
        assert!(unevaluated("x = sizeof(f(a)) + 1;", 11));
        // handle.cpp:765: a braced initializer inside the operand.
        let code = "{\n    using _device_malloc = decltype(rocblas_handle {} -> device_malloc(0));";
        assert!(unevaluated(code, code.find("device_malloc(").unwrap()));
        // A block before the statement does not hide its start.
        let code = "if(x) { y(); } z = handle->device_malloc(n);";
        assert!(!unevaluated(code, code.find("device_malloc").unwrap()));
    }

    #[test]
    fn conditions_on_one_path_are_read_together_and_against_the_pairs_callers_pass() {
        use eval::{Env, Value};
        eval::add_enumerators("typedef enum rocblas_operation_\n{\n rocblas_operation_none = 111,\n rocblas_operation_transpose = 112,\n rocblas_operation_conjugate_transpose = 113\n} rocblas_operation;\ntypedef enum rocblas_side_\n{\n rocblas_side_left = 141,\n rocblas_side_right = 142\n} rocblas_side;");
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // roclapack_trsm_specialized_kernels.hpp:838-842 and the FORWARD_SUBSTITUTIONS
        // launch under `isleft`, `notrans` and `conj`.
        let mut env = Env::default();
        for (name, test) in [
            ("isleft", "(side == rocblas_side_left)"),
            ("notrans", "(trans == rocblas_operation_none)"),
            ("conj", "(trans == rocblas_operation_conjugate_transpose)"),
        ] {
            env.values
                .insert(format!("{}{name}", eval::DEFINED), Value::Type(test.into()));
        }
        assert!(decided(&v(&["isleft", "notrans", "conj"]), &env).is_err());
        assert_eq!(
            decided(&v(&["isleft", "notrans", "not (conj)"]), &env),
            Ok(v(&["isleft", "notrans"]))
        );
        // sygst calls trsm_lower right with conjugate transpose and left with none:
        // left with a transpose is no caller's.
        env.values.insert(
            eval::SITES.into(),
            Value::Type("side=142,trans=113;side=141,trans=111".into()),
        );
        assert!(decided(&v(&["isleft", "not (notrans)"]), &env).is_err());
        assert!(decided(&v(&["not (isleft)", "conj"]), &env).is_ok());
        // rocblas_dot_kernels.hpp:353-357 where the caller holds `n >= 1`: what stays
        // open of the first test is read with the second.
        let mut env = Env::default();
        env.values
            .insert(format!("{}n >= 1", eval::HOLDS), Value::Bool(true));
        let quick = "n <= 0 || batch_count == 0";
        assert_eq!(decided(&v(&[quick]), &env), Ok(v(&["batch_count == 0"])));
        assert!(decided(&v(&[quick, "mode == 1 && batch_count > 0"]), &env).is_err());
    }

    #[test]
    fn branches_that_all_launch_cover_every_case() {
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // geam_ex_source.hpp:994-1140: device mode, else `*alpha == 1`, else.
        let chain = [
            v(&["div", "ptr_mode == rocblas_pointer_mode_device"]),
            v(&[
                "div",
                "not (ptr_mode == rocblas_pointer_mode_device)",
                "*alpha == 1",
            ]),
            v(&[
                "div",
                "not (ptr_mode == rocblas_pointer_mode_device)",
                "not (*alpha == 1)",
            ]),
        ];
        let tails: Vec<&[String]> = chain.iter().map(|l| &l[1..]).collect();
        assert!(exhaustive(&tails));
        // Without the last `else`, `*alpha != 1` in host mode launches nothing.
        assert!(!exhaustive(&tails[..2]));
        // Two tests that are not each other's negation.
        let other = [v(&["a"]), v(&["b"])];
        let tails: Vec<&[String]> = other.iter().map(|l| l.as_slice()).collect();
        assert!(!exhaustive(&tails));
        assert_eq!(negation("not (a && (b))"), "a && (b)");
        assert_eq!(negation("not (a) || not (b)"), "not (not (a) || not (b))");
    }

    #[test]
    fn a_local_of_the_same_name_hides_a_namespace_variable() {
        assert!(declares_local(
            "{ size_t t_size = 0; t_size = n; }",
            "t_size"
        ));
        assert!(declares_local("{ const auto* t_size = p; }", "t_size"));
        assert!(!declares_local("{ t_size = n; return t_size; }", "t_size"));
        assert!(!declares_local(
            "{ if(x) t_size = 1; else t_size = 2; f(t_size); }",
            "t_size"
        ));
    }

    #[test]
    fn a_scalar_guard_around_or_before_every_store_is_found() {
        let guard = |src: &str| {
            let b = Scanner::new(src).function("k", 0, src.len()).unwrap();
            scalar_guard(src, &b).map(|(name, cond, _)| (name, cond))
        };
        let around = "__global__ void k(int n, const float* alpha_dh, float* x, float* y) {\n    int64_t tid = blockIdx.x * 256 + threadIdx.x;\n    auto alpha = load_scalar(alpha_dh);\n    if(alpha)\n    {\n        if(tid < n)\n        {\n            float* ty = y + tid;\n            *ty = (*ty) + alpha * x[tid];\n        }\n    }\n}\n";
        assert_eq!(guard(around), Some(("alpha".into(), "alpha".into())));
        let before = "__global__ void k(int n, float alpha, float* x) {\n    if(alpha == 0)\n        return;\n    x[threadIdx.x] = alpha * x[threadIdx.x];\n}\n";
        assert_eq!(
            guard(before),
            Some(("alpha".into(), "if(alpha == 0) return;".into()))
        );
        // A store outside the test, a test of something else, or a zeroing branch.
        let outside = around.replace("    }\n}\n", "    }\n    y[0] = 0;\n}\n");
        assert_eq!(guard(&outside), None);
        let other =
            "__global__ void k(int n, float* x) {\n    if(n)\n        x[threadIdx.x] = 1;\n}\n";
        assert_eq!(guard(other), None);
        let zeroing = "__global__ void k(float alpha, float* x) {\n    if(alpha == 0)\n    {\n        x[threadIdx.x] = 0;\n    }\n}\n";
        assert_eq!(guard(zeroing), None);
    }

    #[test]
    fn constant_memory_and_read_only_loads_are_found() {
        let file = "__constant__ float c_alpha[4];\n__constant__ const rocfx_int c_n = 8;\n__global__ void k(float* x) { x[threadIdx.x] *= c_alpha[0] + __ldg(x + c_n); }\n";
        let d = detectors();
        let constants: BTreeSet<&str> = d
            .constant_var
            .captures_iter(file)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert_eq!(constants, ["c_alpha", "c_n"].into());
        let body = &file[file.find('{').unwrap()..];
        let used: Vec<&str> = constant_uses(body, &constants)
            .iter()
            .map(|u| u.0)
            .collect();
        assert_eq!(used, ["c_alpha", "c_n"]);
        let paths: Vec<&str> = d
            .memory_path
            .captures_iter(body)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert_eq!(paths, ["__ldg"]);
        assert!(d.memory_path.find("x[i] = alpha * x[i];").is_none());
    }

    #[test]
    fn local_constants_resolve() {
        let pv = local_constants(
            "{ int64_t s = 0;\n constexpr int DIM_X = 128;\n constexpr int DIM_Y = DIM_X / 16;\n",
            &ParamValues::new(),
        );
        assert_eq!(pv.get("DIM_X").map(String::as_str), Some("128"));
        assert_eq!(pv.get("DIM_Y").map(String::as_str), Some("8"));
    }

    #[test]
    fn words_are_renamed_whole_and_members_stay() {
        let names: BTreeMap<String, String> = [("n_64", "n"), ("batch_count_64", "batch_count")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(
            rename_words(
                "!n_64 || !batch_count_64 || h->n_64 || s.n_64 || n_640",
                &names
            ),
            "!n || !batch_count || h->n_64 || s.n_64 || n_640"
        );
    }

    #[test]
    fn dim3_values_are_the_last_before_the_launch() {
        let body = "{\n dim3 grid(blocks, 1, batches);\n dim3 threads = dim3(NB);\n if(x)\n  grid = dim3(blocks, batch_count, 1);\n";
        assert_eq!(
            last_dim3("grid", body).as_deref(),
            Some("blocks, batch_count, 1")
        );
        assert_eq!(last_dim3("threads", body).as_deref(), Some("NB"));
        assert_eq!(
            last_dim3("grid", "dim3 grid{4, 2};").as_deref(),
            Some("4, 2")
        );
        // Not a declaration or a dim3 assignment: a member, a longer name, a comparison,
        // a call.
        for other in [
            "s.grid = dim3(1);",
            "subgrid = dim3(1);",
            "grid == dim3(1);",
            "grid(3);",
            "dim3grid(3);",
            "dim3 grid = (org) ? grid_org : grid_new;",
        ] {
            assert_eq!(last_dim3("grid", other), None, "{other}");
        }
    }
}
