//! One translation unit through libclang: definitions, calls resolved to declarations
//! and kernel launches, read off the compiler's own AST.
//!
//! Positions are expansion locations (where a macro was invoked, for what a macro
//! made), which is how the fast index counts lines too, so both name the same line.
//! Calls the compiler resolved carry the callee's USR (its unique name across
//! translation units); calls in a template that depend on its parameters carry the
//! overload set name lookup found, which the graph narrows as for the fast index.

// libclang's constants keep their C names.
#![allow(non_upper_case_globals)]

use std::collections::{HashMap, HashSet};
use std::ffi::{c_void, CStr, CString};
use std::os::raw::{c_int, c_uint};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use clang_sys::*;

use crate::model::{CallSite, FileIndex, LaunchSite, MacroOrigin, Symbol, SymbolKind};

/// Where libclang-15 lives on Debian 12 (`libclang-15-dev`, `libclang1-15`).
const DEBIAN_LIBCLANG_DIR: &str = "/usr/lib/llvm-15/lib";

/// Loads libclang once per process; each thread that parses borrows it with
/// [`attach`]. The error says what to install.
pub fn load() -> Result<Arc<SharedLibrary>, String> {
    static LIB: OnceLock<Result<Arc<SharedLibrary>, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        if std::env::var_os("LIBCLANG_PATH").is_none() && Path::new(DEBIAN_LIBCLANG_DIR).is_dir() {
            std::env::set_var("LIBCLANG_PATH", DEBIAN_LIBCLANG_DIR);
        }
        clang_sys::load().map_err(|e| {
            format!("cannot load libclang ({e}); install it with `apt-get install libclang-15-dev` (scripts/setup.sh does), or point LIBCLANG_PATH at the folder holding libclang.so")
        })?;
        clang_sys::get_library().ok_or_else(|| "libclang loaded but not registered".to_string())
    })
    .clone()
}

/// Clang's own headers (`cuda_wrappers/`, the HIP runtime wrapper): libclang loaded
/// at run time cannot always tell where they are, so the compiler of the same
/// version is asked, then the folder beside libclang is looked in.
pub fn resource_dir() -> Option<String> {
    static DIR: OnceLock<Option<String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let asked = std::process::Command::new("clang-15")
            .arg("-print-resource-dir")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|d| Path::new(d).join("include").is_dir());
        asked.or_else(|| {
            let base =
                std::env::var("LIBCLANG_PATH").unwrap_or_else(|_| DEBIAN_LIBCLANG_DIR.into());
            std::fs::read_dir(Path::new(&base).join("clang"))
                .ok()?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.join("include").is_dir())
                .map(|p| p.display().to_string())
        })
    })
    .clone()
}

/// Makes libclang usable on the calling thread (clang-sys keeps it per thread).
pub fn attach(lib: &Arc<SharedLibrary>) {
    if !clang_sys::is_loaded() {
        clang_sys::set_library(Some(lib.clone()));
    }
}

/// How a translation unit parsed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum UnitStatus {
    /// No error.
    Clean,
    /// Errors that left the AST in place (count, first message): the unit is kept.
    Errors(u32, String),
    /// No usable AST (a fatal error, or libclang refused the unit): the fast index
    /// stands in for its files.
    Failed(String),
}

/// What one translation unit gave.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct UnitResult {
    /// Parse outcome.
    pub status: UnitStatus,
    /// Per file of the tree the unit reads: definitions, calls, launches (context set).
    pub files: Vec<FileIndex>,
    /// Every file the unit read (absolute paths), for the cache key.
    pub deps: Vec<String>,
}

/// Parses `unit` (absolute path) with `args` and reads what lies under `tree`.
pub fn parse_unit(unit: &Path, args: &[String], tree: &Path, context: &str) -> UnitResult {
    let failed = |why: String| UnitResult {
        status: UnitStatus::Failed(why),
        files: Vec::new(),
        deps: Vec::new(),
    };
    let Ok(c_unit) = CString::new(unit.to_string_lossy().as_bytes()) else {
        return failed("path holds a NUL byte".into());
    };
    let c_args: Vec<CString> = args
        .iter()
        .filter_map(|a| CString::new(a.as_bytes()).ok())
        .collect();
    let ptrs: Vec<*const std::os::raw::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: libclang is attached on this thread; every pointer passed lives until
    // the call returns, and the index and unit are disposed of below.
    unsafe {
        let index = clang_createIndex(0, 0);
        let mut tu: CXTranslationUnit = std::ptr::null_mut();
        let flags = CXTranslationUnit_DetailedPreprocessingRecord;
        let rc = clang_parseTranslationUnit2(
            index,
            c_unit.as_ptr(),
            ptrs.as_ptr(),
            ptrs.len() as c_int,
            std::ptr::null_mut(),
            0,
            flags,
            &mut tu,
        );
        if rc != CXError_Success || tu.is_null() {
            clang_disposeIndex(index);
            return failed(format!(
                "libclang could not parse the unit (error code {rc})"
            ));
        }
        let (errors, fatal, first) = diagnostics(tu);
        let status = if let Some(f) = fatal {
            UnitStatus::Failed(f)
        } else if errors > 0 {
            UnitStatus::Errors(errors, first.unwrap_or_default())
        } else {
            UnitStatus::Clean
        };
        let mut out = UnitResult {
            status,
            files: Vec::new(),
            deps: inclusions(tu),
        };
        if !matches!(out.status, UnitStatus::Failed(_)) {
            let mut w = Walker::new(tree, context);
            w.macros(tu);
            let root = clang_getTranslationUnitCursor(tu);
            w.decls(root);
            out.files = w.finish();
        }
        clang_disposeTranslationUnit(tu);
        clang_disposeIndex(index);
        out
    }
}

unsafe fn string(s: CXString) -> String {
    let p = clang_getCString(s);
    let out = if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    };
    clang_disposeString(s);
    out
}

/// Error count, the first fatal error and the first error, as `file:line: message`.
unsafe fn diagnostics(tu: CXTranslationUnit) -> (u32, Option<String>, Option<String>) {
    let mut errors = 0;
    let mut fatal = None;
    let mut first = None;
    for i in 0..clang_getNumDiagnostics(tu) {
        let d = clang_getDiagnostic(tu, i);
        let sev = clang_getDiagnosticSeverity(d);
        if sev >= CXDiagnostic_Error {
            errors += 1;
            let text = string(clang_formatDiagnostic(
                d,
                CXDiagnostic_DisplaySourceLocation,
            ));
            if sev == CXDiagnostic_Fatal && fatal.is_none() {
                fatal = Some(text.clone());
            }
            first.get_or_insert(text);
        }
        clang_disposeDiagnostic(d);
    }
    (errors, fatal, first)
}

unsafe fn inclusions(tu: CXTranslationUnit) -> Vec<String> {
    extern "C" fn each(file: CXFile, _: *mut CXSourceLocation, _: c_uint, data: CXClientData) {
        // SAFETY: `data` is the Vec passed below, alive for the whole visit.
        unsafe {
            let out = &mut *(data as *mut Vec<String>);
            out.push(string(clang_getFileName(file)));
        }
    }
    let mut out: Vec<String> = Vec::new();
    clang_getInclusions(tu, each, &mut out as *mut Vec<String> as *mut c_void);
    out.sort();
    out.dedup();
    out
}

/// Visits the children of `c` with a closure.
unsafe fn children<F: FnMut(CXCursor) -> CXChildVisitResult>(c: CXCursor, mut f: F) {
    extern "C" fn tramp<F: FnMut(CXCursor) -> CXChildVisitResult>(
        c: CXCursor,
        _parent: CXCursor,
        data: CXClientData,
    ) -> CXChildVisitResult {
        // SAFETY: `data` is the closure below, alive for the whole visit.
        unsafe { (*(data as *mut F))(c) }
    }
    clang_visitChildren(c, tramp::<F>, &mut f as *mut F as *mut c_void);
}

/// A position: file (relative to the tree, if in it), line, byte offset.
#[derive(Clone, Copy)]
struct Pos {
    file: Option<u32>,
    line: u32,
    offset: u32,
}

/// A macro invocation in the tree: name and where the macro is defined.
struct Invocation {
    name: String,
    def: Option<(u32, u32)>,
}

struct Walker<'t> {
    tree: &'t Path,
    context: &'t str,
    /// Interned relative paths of tree files.
    paths: Vec<Arc<str>>,
    path_id: HashMap<String, u32>,
    /// Per CXFile pointer: its id, when the file is under the tree.
    file_of: HashMap<usize, Option<u32>>,
    /// Macro invocations by (file, offset of the macro's name).
    invocations: HashMap<(u32, u32), Invocation>,
    files: HashMap<u32, FileIndex>,
    /// Per file: symbol index by (usr, name line).
    seen: HashMap<u32, HashMap<(String, u32), u32>>,
    calls_seen: HashSet<(u32, u32, u32, String)>,
}

impl<'t> Walker<'t> {
    fn new(tree: &'t Path, context: &'t str) -> Self {
        Walker {
            tree,
            context,
            paths: Vec::new(),
            path_id: HashMap::new(),
            file_of: HashMap::new(),
            invocations: HashMap::new(),
            files: HashMap::new(),
            seen: HashMap::new(),
            calls_seen: HashSet::new(),
        }
    }

    fn finish(self) -> Vec<FileIndex> {
        let mut v: Vec<FileIndex> = self.files.into_values().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    unsafe fn file_id(&mut self, file: CXFile) -> Option<u32> {
        if file.is_null() {
            return None;
        }
        if let Some(id) = self.file_of.get(&(file as usize)) {
            return *id;
        }
        let name = string(clang_getFileName(file));
        let id = Path::new(&name)
            .strip_prefix(self.tree)
            .ok()
            .map(|rel| rel.to_string_lossy().replace('\\', "/"))
            .map(|rel| match self.path_id.get(&rel) {
                Some(i) => *i,
                None => {
                    let i = self.paths.len() as u32;
                    self.paths.push(Arc::from(rel.as_str()));
                    self.path_id.insert(rel, i);
                    i
                }
            });
        self.file_of.insert(file as usize, id);
        id
    }

    /// The expansion position of a location: where the text (or the macro invocation
    /// that made it) stands in a file.
    unsafe fn expansion(&mut self, loc: CXSourceLocation) -> Pos {
        let (mut file, mut line, mut col, mut offset) = (std::ptr::null_mut(), 0, 0, 0);
        clang_getExpansionLocation(loc, &mut file, &mut line, &mut col, &mut offset);
        Pos {
            file: self.file_id(file),
            line,
            offset,
        }
    }

    /// libclang's "spelling" location is the file location: a macro argument's place
    /// where it is written, a macro body's token at the invocation.
    unsafe fn file_offset(&mut self, loc: CXSourceLocation) -> u32 {
        let (mut file, mut line, mut col, mut offset) = (std::ptr::null_mut(), 0, 0, 0);
        clang_getSpellingLocation(loc, &mut file, &mut line, &mut col, &mut offset);
        offset
    }

    unsafe fn macros(&mut self, tu: CXTranslationUnit) {
        let root = clang_getTranslationUnitCursor(tu);
        let mut found: Vec<(CXCursor, Pos)> = Vec::new();
        children(root, |c| {
            if clang_getCursorKind(c) == CXCursor_MacroExpansion {
                let p = self.expansion(clang_getCursorLocation(c));
                if p.file.is_some() {
                    found.push((c, p));
                }
            }
            CXChildVisit_Continue
        });
        for (c, p) in found {
            let def = clang_getCursorReferenced(c);
            let def = if clang_Cursor_isNull(def) != 0 {
                None
            } else {
                let d = self.expansion(clang_getCursorLocation(def));
                d.file.map(|f| (f, d.line))
            };
            self.invocations.insert(
                (p.file.unwrap_or(0), p.offset),
                Invocation {
                    name: string(clang_getCursorSpelling(c)),
                    def,
                },
            );
        }
    }

    /// The macro invocation a position lies in, if any.
    fn invocation(&self, p: Pos) -> Option<&Invocation> {
        self.invocations.get(&(p.file?, p.offset))
    }

    /// Walks declarations: namespaces, linkage specs and classes are entered,
    /// function definitions in the tree are read.
    unsafe fn decls(&mut self, parent: CXCursor) {
        let mut defs: Vec<CXCursor> = Vec::new();
        let mut scopes: Vec<CXCursor> = Vec::new();
        children(parent, |c| {
            if clang_Location_isInSystemHeader(clang_getCursorLocation(c)) != 0 {
                return CXChildVisit_Continue;
            }
            match clang_getCursorKind(c) {
                CXCursor_Namespace
                | CXCursor_LinkageSpec
                | CXCursor_UnexposedDecl
                | CXCursor_ClassDecl
                | CXCursor_StructDecl
                | CXCursor_ClassTemplate
                | CXCursor_ClassTemplatePartialSpecialization => scopes.push(c),
                k if is_function(k) && clang_isCursorDefinition(c) != 0 => defs.push(c),
                _ => {}
            }
            CXChildVisit_Continue
        });
        for d in defs {
            self.definition(d);
        }
        for s in scopes {
            self.decls(s);
        }
    }

    unsafe fn definition(&mut self, c: CXCursor) {
        let name_pos = self.expansion(clang_getCursorLocation(c));
        let Some(file) = name_pos.file else { return };
        let extent = clang_getCursorExtent(c);
        let start = self.expansion(clang_getRangeStart(extent));
        let end = self.expansion(clang_getRangeEnd(extent));
        let usr = string(clang_getCursorUSR(c));
        let key = (usr.clone(), name_pos.line);
        if self.seen.get(&file).is_some_and(|m| m.contains_key(&key)) {
            // The same definition met again: its calls are already in.
            return;
        }
        let kind = attributes(c);
        let (arity, pointer_arrays) = parameters(c);
        let via = self.invocation(name_pos).map(|m| MacroOrigin {
            name: m.name.clone(),
            def_file: m
                .def
                .map(|(f, _)| self.paths[f as usize].to_string())
                .unwrap_or_default(),
            def_line: m.def.map(|(_, l)| l).unwrap_or(0),
        });
        let sym = Symbol {
            name: string(clang_getCursorSpelling(c)),
            scope: scope_of(c),
            kind,
            file: self.paths[file as usize].to_string(),
            line: start.line,
            name_line: name_pos.line,
            end_line: end.line.max(start.line),
            is_template: clang_getCursorKind(c) == CXCursor_FunctionTemplate,
            launch_bounds: None,
            extern_c: clang_getCursorKind(clang_getCursorLexicalParent(c)) == CXCursor_LinkageSpec,
            expanded_from: via,
            expanded_text: None,
            arity,
            pointer_arrays,
            usr,
        };
        let fi = self.file_entry(file);
        let idx = fi.symbols.len() as u32;
        fi.symbols.push(sym);
        self.seen.entry(file).or_default().insert(key, idx);
        self.body(c, file, idx);
    }

    fn file_entry(&mut self, file: u32) -> &mut FileIndex {
        let path = self.paths[file as usize].to_string();
        let context = self.context.to_string();
        self.files.entry(file).or_insert_with(|| FileIndex {
            path,
            content_hash: String::new(),
            symbols: Vec::new(),
            calls: Vec::new(),
            launches: Vec::new(),
            macros: Vec::new(),
            includes: Vec::new(),
            parse_errors: 0,
            context,
        })
    }

    /// Calls and launches anywhere in a definition's body (lambdas included).
    unsafe fn body(&mut self, def: CXCursor, file: u32, caller: u32) {
        let mut refs: Vec<(CXCursor, Option<u16>)> = Vec::new();
        let mut consumed: HashSet<c_uint> = HashSet::new();
        walk(def, &mut |c| {
            let k = clang_getCursorKind(c);
            if k == CXCursor_CallExpr {
                let n = clang_Cursor_getNumArguments(c);
                let args = (n >= 0).then_some(n as u16);
                if let Some(callee) = callee_ref(c) {
                    consumed.insert(clang_hashCursor(callee));
                    refs.push((callee, args));
                }
            } else if matches!(
                k,
                CXCursor_DeclRefExpr | CXCursor_OverloadedDeclRef | CXCursor_MemberRefExpr
            ) && !consumed.contains(&clang_hashCursor(c))
            {
                refs.push((c, None));
            }
        });
        for (r, args) in refs {
            self.reference(r, args, file, caller);
        }
    }

    /// Records a reference to functions from a definition: a launch when the target is
    /// a kernel, else a call.
    unsafe fn reference(&mut self, r: CXCursor, args: Option<u16>, file: u32, caller: u32) {
        let targets = targets(r);
        if targets.is_empty() {
            return;
        }
        let name = string(clang_getCursorSpelling(targets[0]));
        if name.is_empty() || name.starts_with("operator") || name.starts_with('~') {
            return;
        }
        let loc = clang_getCursorLocation(r);
        let pos = self.expansion(loc);
        if pos.file != Some(file) {
            // A call whose text lies in another file (an included fragment): kept
            // at the definition's own file only when it is there.
            return;
        }
        let inv = self.invocation(pos);
        let via = inv.map(|m| m.name.clone());
        let written = inv.is_none() || self.file_offset(loc) != pos.offset;
        let kernel = targets.iter().any(|t| attributes(*t) == SymbolKind::Kernel);
        let usrs: Vec<String> = {
            let mut v: Vec<String> = targets
                .iter()
                .map(|t| string(clang_getCursorUSR(*t)))
                .filter(|u| !u.is_empty())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let key = (
            caller,
            pos.line,
            kernel as u32,
            format!("{name}|{}", usrs.join(",")),
        );
        if !self.calls_seen.insert(key) {
            return;
        }
        let fi = self.file_entry(file);
        if kernel {
            fi.launches.push(LaunchSite {
                caller,
                kernel: name,
                line: pos.line,
                via_macro: via,
                resolved: usrs,
            });
        } else {
            fi.calls.push(CallSite {
                caller,
                callee: name,
                line: pos.line,
                via_macro: via,
                written,
                args,
                resolved: usrs,
                qualifier: None,
            });
        }
    }
}

fn is_function(k: CXCursorKind) -> bool {
    matches!(
        k,
        CXCursor_FunctionDecl
            | CXCursor_FunctionTemplate
            | CXCursor_CXXMethod
            | CXCursor_Constructor
            | CXCursor_ConversionFunction
    )
}

/// All descendants of `c`, depth first.
unsafe fn walk(c: CXCursor, f: &mut dyn FnMut(CXCursor)) {
    children(c, |k| {
        f(k);
        CXChildVisit_Recurse
    });
}

/// The expression naming the callee of a call: the first function reference in its
/// first child (`f(..)`, `ns::f<T>(..)`, `obj.f(..)`, `kernel<<<..>>>(..)`).
unsafe fn callee_ref(call: CXCursor) -> Option<CXCursor> {
    let mut first: Option<CXCursor> = None;
    children(call, |c| {
        first = Some(c);
        CXChildVisit_Break
    });
    let first = first?;
    let direct = |c: CXCursor| {
        matches!(
            clang_getCursorKind(c),
            CXCursor_DeclRefExpr | CXCursor_OverloadedDeclRef | CXCursor_MemberRefExpr
        )
    };
    if direct(first) {
        return Some(first);
    }
    let mut found = None;
    children(first, |c| {
        if direct(c) {
            found = Some(c);
            CXChildVisit_Break
        } else if clang_getCursorKind(c) == CXCursor_UnexposedExpr {
            CXChildVisit_Recurse
        } else {
            CXChildVisit_Continue
        }
    });
    found
}

/// The function declarations a reference may mean: the one the compiler chose (its
/// template, for a specialization), or the overload set of a dependent name. Only
/// functions outside system headers.
unsafe fn targets(r: CXCursor) -> Vec<CXCursor> {
    let mut out = Vec::new();
    let mut push = |d: CXCursor| {
        if clang_Cursor_isNull(d) != 0 || !is_function(clang_getCursorKind(d)) {
            return;
        }
        let t = clang_getSpecializedCursorTemplate(d);
        let d = if clang_Cursor_isNull(t) == 0 { t } else { d };
        if clang_Location_isInSystemHeader(clang_getCursorLocation(d)) == 0 {
            out.push(d);
        }
    };
    if clang_getCursorKind(r) == CXCursor_OverloadedDeclRef {
        for i in 0..clang_getNumOverloadedDecls(r) {
            push(clang_getOverloadedDecl(r, i));
        }
    } else {
        push(clang_getCursorReferenced(r));
    }
    out
}

/// A declaration's kind, from the CUDA attributes among its children.
unsafe fn attributes(c: CXCursor) -> SymbolKind {
    let (mut global, mut device, mut host) = (false, false, false);
    children(c, |a| {
        match clang_getCursorKind(a) {
            CXCursor_CUDAGlobalAttr => global = true,
            CXCursor_CUDADeviceAttr => device = true,
            CXCursor_CUDAHostAttr => host = true,
            _ => {}
        }
        CXChildVisit_Continue
    });
    if global {
        SymbolKind::Kernel
    } else if device && !host {
        SymbolKind::DeviceHelper
    } else {
        SymbolKind::Function
    }
}

/// Arguments a call may pass (without defaults, all; `u16::MAX` after `...`) and how
/// many parameters are arrays of pointers.
unsafe fn parameters(c: CXCursor) -> (Option<(u16, u16)>, u16) {
    let (mut lo, mut hi, mut arrays) = (0u16, 0u16, 0u16);
    let mut open = false;
    children(c, |p| {
        if clang_getCursorKind(p) != CXCursor_ParmDecl {
            return CXChildVisit_Continue;
        }
        hi = hi.saturating_add(1);
        let mut default = false;
        children(p, |e| {
            if clang_isExpression(clang_getCursorKind(e)) != 0 {
                default = true;
                CXChildVisit_Break
            } else {
                CXChildVisit_Continue
            }
        });
        if !default && !open {
            lo = hi;
        } else {
            open = true;
        }
        let t = clang_getCursorType(p);
        let inner = match t.kind {
            CXType_Pointer => Some(clang_getPointeeType(t)),
            CXType_IncompleteArray | CXType_ConstantArray => Some(clang_getArrayElementType(t)),
            _ => None,
        };
        if inner.is_some_and(|i| clang_getCanonicalType(i).kind == CXType_Pointer) {
            arrays += 1;
        }
        let spelling = string(clang_getTypeSpelling(t));
        if spelling.contains("...") {
            hi = u16::MAX;
        }
        CXChildVisit_Continue
    });
    if clang_Cursor_isVariadic(c) != 0 {
        hi = u16::MAX;
    }
    (Some((lo, hi)), arrays)
}

/// Enclosing namespaces and classes, `::`-joined.
unsafe fn scope_of(c: CXCursor) -> String {
    let mut parts = Vec::new();
    let mut p = clang_getCursorSemanticParent(c);
    while clang_Cursor_isNull(p) == 0 && clang_getCursorKind(p) != CXCursor_TranslationUnit {
        let k = clang_getCursorKind(p);
        if matches!(
            k,
            CXCursor_Namespace
                | CXCursor_ClassDecl
                | CXCursor_StructDecl
                | CXCursor_ClassTemplate
                | CXCursor_ClassTemplatePartialSpecialization
        ) {
            let s = string(clang_getCursorSpelling(p));
            if !s.is_empty() {
                parts.push(s);
            }
        }
        p = clang_getCursorSemanticParent(p);
    }
    parts.reverse();
    parts.join("::")
}
