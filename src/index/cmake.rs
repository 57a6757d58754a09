//! Build defines as the library's own CMake files set them.
//!
//! A small reader of the CMake language, enough for what decides the defines a
//! library's translation units see: `set`, `list(APPEND)`, `option` and
//! `cmake_dependent_option` defaults, `if`/`elseif`/`else` over them,
//! `include`/`add_subdirectory` of files in the tree, user `function`s and `macro`s,
//! `target_compile_definitions` on the library's own target, `add_definitions`,
//! `add_compile_definitions`, and the version header that `configure_file` generates
//! from `rocm_setup_version`. Names the tree does not set (compiler checks, `WIN32`,
//! modules outside the tree) are undefined, hence false, as for CMake on Linux.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One define the build passes to the compiler, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BuildDefine {
    /// Macro name.
    pub name: String,
    /// Its value (`1` for a bare `-DNAME`).
    pub value: String,
    /// `file:line` of the command that sets it, relative to the tree, and the command.
    pub origin: String,
    /// Set by a generated public header (the version header): code built against the
    /// library sees it too.
    pub public: bool,
}

/// A command: name (lower case), arguments (quoted ones keep their quotes off but are
/// remembered as quoted), the file and line it starts on.
#[derive(Debug, Clone)]
struct Command {
    name: String,
    args: Vec<Arg>,
    file: std::sync::Arc<str>,
    line: u32,
}

#[derive(Debug, Clone)]
struct Arg {
    text: String,
    quoted: bool,
}

/// Splits CMake source into commands. Comments (`#...`, `#[[...]]`) are dropped.
fn commands(text: &str, file: &std::sync::Arc<str>) -> Vec<Command> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c == b'#' {
            i = skip_comment(b, i, &mut line);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let name = text[start..i].to_ascii_lowercase();
            let at = line;
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            if i >= b.len() || b[i] != b'(' {
                continue;
            }
            i += 1;
            let mut args = Vec::new();
            let mut depth = 0;
            let mut cur = String::new();
            let mut has = false;
            while i < b.len() {
                let c = b[i];
                match c {
                    b'\n' => {
                        line += 1;
                        i += 1;
                        flush(&mut args, &mut cur, &mut has);
                    }
                    b' ' | b'\t' | b'\r' => {
                        i += 1;
                        flush(&mut args, &mut cur, &mut has);
                    }
                    b'#' => {
                        flush(&mut args, &mut cur, &mut has);
                        i = skip_comment(b, i, &mut line);
                    }
                    b'"' => {
                        flush(&mut args, &mut cur, &mut has);
                        i += 1;
                        let s = i;
                        while i < b.len() && b[i] != b'"' {
                            if b[i] == b'\\' {
                                i += 1;
                            }
                            if i < b.len() && b[i] == b'\n' {
                                line += 1;
                            }
                            i += 1;
                        }
                        args.push(Arg {
                            text: text[s..i.min(b.len())].to_string(),
                            quoted: true,
                        });
                        i += 1;
                    }
                    b'(' => {
                        depth += 1;
                        cur.push('(');
                        has = true;
                        i += 1;
                    }
                    b')' => {
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                        depth -= 1;
                        cur.push(')');
                        i += 1;
                    }
                    _ => {
                        // Keep multi-byte characters whole.
                        let ch = text[i..].chars().next().unwrap_or(' ');
                        cur.push(ch);
                        has = true;
                        i += ch.len_utf8();
                    }
                }
            }
            flush(&mut args, &mut cur, &mut has);
            out.push(Command {
                name,
                args,
                file: file.clone(),
                line: at,
            });
        } else {
            i += 1;
        }
    }
    out
}

fn flush(args: &mut Vec<Arg>, cur: &mut String, has: &mut bool) {
    if *has {
        args.push(Arg {
            text: std::mem::take(cur),
            quoted: false,
        });
        *has = false;
    }
}

fn skip_comment(b: &[u8], mut i: usize, line: &mut u32) -> usize {
    if b[i..].starts_with(b"#[[") {
        while i < b.len() && !b[i..].starts_with(b"]]") {
            if b[i] == b'\n' {
                *line += 1;
            }
            i += 1;
        }
        return i + 2;
    }
    while i < b.len() && b[i] != b'\n' {
        i += 1;
    }
    i
}

/// A user-defined `function` or `macro`: parameter names and body.
struct Callable {
    params: Vec<String>,
    body: Vec<Command>,
}

struct Reader<'a> {
    tree: &'a Path,
    target: &'a str,
    vars: HashMap<String, String>,
    callables: HashMap<String, std::rc::Rc<Callable>>,
    defines: Vec<BuildDefine>,
    depth: u32,
}

/// Reads the tree's top `CMakeLists.txt` and everything it pulls in; returns the
/// defines that the library target `target` is compiled with, in the order set.
pub fn derive(tree: &Path, target: &str) -> Vec<BuildDefine> {
    read(tree, target).0
}

/// [`derive`], and the `CMAKE_CXX_STANDARD` the files set.
fn read(tree: &Path, target: &str) -> (Vec<BuildDefine>, Option<String>) {
    // CMake joins a relative path to the current source folder: with a relative tree
    // (`--root .`), `${CMAKE_CURRENT_SOURCE_DIR}/include/...` would be joined twice and
    // the version header not found.
    let tree = &std::path::absolute(tree).unwrap_or_else(|_| tree.to_path_buf());
    let mut r = Reader {
        tree,
        target,
        vars: HashMap::new(),
        callables: HashMap::new(),
        defines: Vec::new(),
        depth: 0,
    };
    r.vars.insert("UNIX".into(), "1".into());
    r.run_file(&tree.join("CMakeLists.txt"), tree);
    // CMake's flags for the release build types pass `-DNDEBUG`: code under `#ifdef
    // NDEBUG ... #else` (rocSOLVER's sort checks, lib_device_helpers.hpp:212) is what
    // the default build compiles.
    if let Some(ty) = r.vars.get("CMAKE_BUILD_TYPE") {
        if matches!(ty.as_str(), "Release" | "RelWithDebInfo" | "MinSizeRel") {
            let set_at = r.vars.get(BUILD_TYPE_ORIGIN).cloned().unwrap_or_default();
            r.defines.push(BuildDefine {
                name: "NDEBUG".into(),
                value: "1".into(),
                origin: format!(
                    "{set_at} CMAKE_BUILD_TYPE {ty}: CMAKE_CXX_FLAGS_{}",
                    ty.to_uppercase()
                ),
                public: false,
            });
        }
    }
    let standard = r.vars.get("CMAKE_CXX_STANDARD").cloned();
    (r.defines, standard)
}

/// Where the build type was set, kept among the variables under a name CMake cannot
/// spell.
const BUILD_TYPE_ORIGIN: &str = " CMAKE_BUILD_TYPE set at";

/// Origin of the macros the compiler defines itself.
pub const COMPILER_ORIGIN: &str = "hipcc (clang, HIP host pass)";

/// The macros hipcc defines before reading a file: it is clang in HIP mode on Linux,
/// and the index reads the host pass (as the precise index's `--cuda-host-only`), so
/// `__HIP_DEVICE_COMPILE__` and the `__gfx*__` targets stay undefined. rocBLAS's type
/// headers guard their `std::` overloads with `__cplusplus` and `__HIPCC__`; reading
/// those as 0 left the overloads out of the index. `__cplusplus` follows the build's
/// `CMAKE_CXX_STANDARD` (clang-15's default, C++17, without one).
pub fn compiler_predefines(cxx_standard: Option<&str>) -> Vec<BuildDefine> {
    let cplusplus = match cxx_standard.map(str::trim) {
        Some("11") => "201103L",
        Some("14") => "201402L",
        Some("20") => "202002L",
        _ => "201703L",
    };
    let standard = match cxx_standard {
        Some(s) => format!("; C++{s} from CMAKE_CXX_STANDARD"),
        None => String::new(),
    };
    [
        ("__cplusplus", cplusplus),
        ("__clang__", "1"),
        ("__GNUC__", "4"),
        ("__linux__", "1"),
        ("__HIP__", "1"),
        ("__HIPCC__", "1"),
        ("__HIP_PLATFORM_AMD__", "1"),
    ]
    .into_iter()
    .map(|(name, value)| BuildDefine {
        name: name.to_string(),
        value: value.to_string(),
        origin: if name == "__cplusplus" {
            format!("{COMPILER_ORIGIN}{standard}")
        } else {
            COMPILER_ORIGIN.to_string()
        },
        public: false,
    })
    .collect()
}

/// Whether the compiler defines `name` itself (a precise parse must not pass it again).
pub fn is_compiler_predefine(name: &str) -> bool {
    compiler_predefines(None).iter().any(|d| d.name == name)
}

/// Defines the compiler sets itself ([`compiler_predefines`]), those the build of `lib`
/// at `tree` passes, those of the paired library's generated public headers, then
/// `configured` (rocqa.toml, which wins), one per name, sorted.
pub fn effective(
    tree: &Path,
    lib: &str,
    configured: &BTreeMap<String, String>,
    config_origin: &str,
    pair: Option<(&str, &Path)>,
) -> Vec<BuildDefine> {
    let mut all: BTreeMap<String, BuildDefine> = BTreeMap::new();
    let (own, standard) = read(tree, lib);
    for d in compiler_predefines(standard.as_deref()) {
        all.insert(d.name.clone(), d);
    }
    if let Some((plib, ptree)) = pair {
        for d in derive(ptree, plib).into_iter().filter(|d| d.public) {
            let origin = format!("{plib}: {}", d.origin);
            all.insert(d.name.clone(), BuildDefine { origin, ..d });
        }
    }
    for d in own {
        all.insert(d.name.clone(), d);
    }
    for (k, v) in configured {
        all.insert(
            k.clone(),
            BuildDefine {
                name: k.clone(),
                value: v.clone(),
                origin: config_origin.to_string(),
                public: false,
            },
        );
    }
    all.into_values().collect()
}

const MAX_DEPTH: u32 = 32;

impl Reader<'_> {
    fn rel(&self, p: &Path) -> String {
        p.strip_prefix(self.tree)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    }

    fn run_file(&mut self, path: &Path, dir: &Path) {
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        if self.depth > MAX_DEPTH {
            return;
        }
        self.depth += 1;
        let file: std::sync::Arc<str> = std::sync::Arc::from(self.rel(path).as_str());
        let saved = (
            self.vars.get("CMAKE_CURRENT_SOURCE_DIR").cloned(),
            self.vars.get("CMAKE_CURRENT_LIST_DIR").cloned(),
        );
        let d = dir.to_string_lossy().to_string();
        self.vars
            .insert("CMAKE_CURRENT_SOURCE_DIR".into(), d.clone());
        self.vars.insert("CMAKE_CURRENT_LIST_DIR".into(), d);
        let cmds = commands(&text, &file);
        self.run(&cmds, dir);
        for (k, v) in [
            ("CMAKE_CURRENT_SOURCE_DIR", saved.0),
            ("CMAKE_CURRENT_LIST_DIR", saved.1),
        ] {
            if let Some(v) = v {
                self.vars.insert(k.into(), v);
            }
        }
        self.depth -= 1;
    }

    /// Runs a block of commands; `if` and `function`/`macro` nest by matching ends.
    fn run(&mut self, cmds: &[Command], dir: &Path) {
        let mut i = 0;
        while i < cmds.len() {
            let c = &cmds[i];
            match c.name.as_str() {
                "if" => {
                    let (branches, next) = split_if(cmds, i);
                    for (cond, body) in branches {
                        let take = match cond {
                            Some(args) => self.truth(&args),
                            None => true,
                        };
                        if take {
                            self.run(body, dir);
                            break;
                        }
                    }
                    i = next;
                    continue;
                }
                "function" | "macro" => {
                    let end = if c.name == "function" {
                        "endfunction"
                    } else {
                        "endmacro"
                    };
                    let close = matching(cmds, i, &c.name, end);
                    if let Some(name) = c.args.first() {
                        self.callables.insert(
                            name.text.to_ascii_lowercase(),
                            std::rc::Rc::new(Callable {
                                params: c.args[1..].iter().map(|a| a.text.clone()).collect(),
                                body: cmds[i + 1..close].to_vec(),
                            }),
                        );
                    }
                    i = close + 1;
                    continue;
                }
                "foreach" | "while" => {
                    // Loops do not set defines in these trees; skip the body.
                    let end = if c.name == "foreach" {
                        "endforeach"
                    } else {
                        "endwhile"
                    };
                    i = matching(cmds, i, &c.name, end) + 1;
                    continue;
                }
                _ => self.command(c, dir),
            }
            i += 1;
        }
    }

    fn command(&mut self, c: &Command, dir: &Path) {
        let args = self.expand_args(&c.args);
        let origin = || format!("{}:{} {}", c.file, c.line, c.name);
        match c.name.as_str() {
            "project" => {
                if let Some(p) = args.first() {
                    self.vars.insert("PROJECT_NAME".into(), p.clone());
                }
            }
            "set" => {
                if let Some((name, rest)) = args.split_first() {
                    let vals: Vec<&String> = rest
                        .iter()
                        .take_while(|a| *a != "CACHE" && *a != "PARENT_SCOPE")
                        .collect();
                    let cache = rest.iter().any(|a| a == "CACHE");
                    if cache && self.vars.contains_key(name) {
                        return;
                    }
                    if name == "CMAKE_BUILD_TYPE" {
                        self.vars
                            .insert(BUILD_TYPE_ORIGIN.into(), format!("{}:{}", c.file, c.line));
                    }
                    if vals.is_empty() {
                        self.vars.remove(name);
                    } else {
                        let v: Vec<&str> = vals.iter().map(|s| s.as_str()).collect();
                        self.vars.insert(name.clone(), v.join(";"));
                    }
                }
            }
            "unset" => {
                if let Some(n) = args.first() {
                    self.vars.remove(n);
                }
            }
            "list" => {
                if args.len() >= 2 && args[0] == "APPEND" {
                    let cur = self.vars.get(&args[1]).cloned().unwrap_or_default();
                    let mut items: Vec<String> = if cur.is_empty() {
                        Vec::new()
                    } else {
                        vec![cur]
                    };
                    items.extend(args[2..].iter().cloned());
                    self.vars.insert(args[1].clone(), items.join(";"));
                }
            }
            "option" => {
                if let Some(name) = args.first() {
                    if !self.vars.contains_key(name) {
                        let v = args.get(2).cloned().unwrap_or_else(|| "OFF".into());
                        self.vars.insert(name.clone(), v);
                    }
                }
            }
            "cmake_dependent_option" => {
                // (NAME doc default condition force)
                if args.len() >= 5 && !self.vars.contains_key(&args[0]) {
                    let cond: Vec<Arg> = args[3]
                        .split(';')
                        .flat_map(|s| s.split_whitespace())
                        .map(|s| Arg {
                            text: s.to_string(),
                            quoted: false,
                        })
                        .collect();
                    let v = if self.truth(&cond) {
                        args[2].clone()
                    } else {
                        args[4].clone()
                    };
                    self.vars.insert(args[0].clone(), v);
                }
            }
            "rocm_setup_version" => {
                if let Some(k) = args.iter().position(|a| a == "VERSION") {
                    if let Some(v) = args.get(k + 1) {
                        self.set_version(v);
                    }
                }
            }
            "include" => {
                if let Some(f) = args.first() {
                    let p = if f.ends_with(".cmake") {
                        resolve(dir, f)
                    } else {
                        self.module(f)
                    };
                    if let Some(p) = p.filter(|p| p.is_file()) {
                        let here = dir.to_path_buf();
                        self.run_file(&p, &here);
                    }
                }
            }
            "add_subdirectory" => {
                if let Some(f) = args.first() {
                    let sub = resolve(dir, f).unwrap_or_else(|| dir.join(f));
                    let file = sub.join("CMakeLists.txt");
                    if file.is_file() {
                        self.run_file(&file, &sub);
                    }
                }
            }
            "target_compile_definitions" => {
                if args.first().map(String::as_str) == Some(self.target) {
                    let o = origin();
                    for a in &args[1..] {
                        self.add_define(a, &o);
                    }
                }
            }
            "add_definitions" | "add_compile_definitions" => {
                let o = origin();
                for a in &args {
                    self.add_define(a, &o);
                }
            }
            "configure_file" => {
                if let (Some(input), Some(output)) = (args.first(), args.get(1)) {
                    if output.ends_with("-version.h") {
                        if let Some(p) = resolve(dir, input).filter(|p| p.is_file()) {
                            self.version_header(&p, &origin());
                        }
                    }
                }
            }
            _ => {
                let Some(f) = self.callables.get(&c.name).cloned() else {
                    return;
                };
                if self.depth > MAX_DEPTH {
                    return;
                }
                self.depth += 1;
                let saved: Vec<(String, Option<String>)> = f
                    .params
                    .iter()
                    .map(|p| (p.clone(), self.vars.get(p).cloned()))
                    .collect();
                for (k, p) in f.params.iter().enumerate() {
                    let v = args.get(k).cloned().unwrap_or_default();
                    self.vars.insert(p.clone(), v);
                }
                self.run(&f.body, dir);
                for (p, v) in saved {
                    match v {
                        Some(v) => self.vars.insert(p, v),
                        None => self.vars.remove(&p),
                    };
                }
                self.depth -= 1;
            }
        }
    }

    /// `include(Name)`: a module file of the tree (`cmake/Name.cmake` or a
    /// `CMAKE_MODULE_PATH` entry); modules from outside the tree are not read.
    fn module(&self, name: &str) -> Option<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .vars
            .get("CMAKE_MODULE_PATH")
            .map(|v| v.split(';').map(PathBuf::from).collect())
            .unwrap_or_default();
        dirs.push(self.tree.join("cmake"));
        dirs.into_iter()
            .map(|d| d.join(format!("{name}.cmake")))
            .find(|p| p.starts_with(self.tree) && p.is_file())
    }

    fn set_version(&mut self, v: &str) {
        let project = self.vars.get("PROJECT_NAME").cloned().unwrap_or_default();
        let parts: Vec<&str> = v.split('.').collect();
        // A component the version leaves out is set, empty (`3.28.2` has no tweak, so
        // the configured `ROCSOLVER_VERSION_TWEAK` expands to nothing).
        for (k, field) in ["MAJOR", "MINOR", "PATCH", "TWEAK"].iter().enumerate() {
            let p = parts.get(k).copied().unwrap_or("");
            for prefix in [project.as_str(), "PROJECT"] {
                self.vars
                    .insert(format!("{prefix}_VERSION_{field}"), p.to_string());
            }
        }
        for prefix in [project.as_str(), "PROJECT"] {
            self.vars.insert(format!("{prefix}_VERSION"), v.to_string());
        }
    }

    /// One `-DNAME[=VALUE]` item; list variables expand to several.
    fn add_define(&mut self, item: &str, origin: &str) {
        for one in item.split(';') {
            let one = one.trim();
            let one = one.strip_prefix("-D").unwrap_or(one);
            if one.is_empty()
                || matches!(one, "PRIVATE" | "PUBLIC" | "INTERFACE")
                || one.starts_with("$<")
                || one.starts_with('-')
            {
                continue;
            }
            let (name, value) = match one.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => (one.to_string(), "1".to_string()),
            };
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            self.defines.push(BuildDefine {
                name,
                value,
                origin: origin.to_string(),
                public: false,
            });
        }
    }

    /// The `#define`s of a version header template whose `@VAR@`s are all known.
    fn version_header(&mut self, template: &Path, origin: &str) {
        let Ok(text) = std::fs::read_to_string(template) else {
            return;
        };
        let rel = self.rel(template);
        for (n, line) in text.lines().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("#define") else {
                continue;
            };
            let rest = rest.trim();
            let Some((name, value)) = rest.split_once(char::is_whitespace) else {
                continue;
            };
            if name.ends_with("_H") || name.contains('(') {
                continue;
            }
            if let Some(v) = self.substitute_at(value.trim()) {
                self.defines.push(BuildDefine {
                    name: name.to_string(),
                    value: v,
                    origin: format!("{origin} -> {rel}:{}", n + 1),
                    public: true,
                });
            }
        }
    }

    fn substitute_at(&self, s: &str) -> Option<String> {
        let mut out = String::new();
        let mut rest = s;
        while let Some(k) = rest.find('@') {
            out.push_str(&rest[..k]);
            let after = &rest[k + 1..];
            let end = after.find('@')?;
            let v = self.vars.get(&after[..end])?;
            out.push_str(v);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Some(out)
    }

    fn expand_args(&self, args: &[Arg]) -> Vec<String> {
        let mut out = Vec::new();
        for a in args {
            let v = self.expand(&a.text);
            if a.quoted {
                out.push(v);
            } else {
                out.extend(v.split(';').filter(|s| !s.is_empty()).map(String::from));
            }
        }
        out
    }

    /// `${VAR}` references, innermost first; unknown ones are empty.
    fn expand(&self, s: &str) -> String {
        let mut s = s.to_string();
        for _ in 0..16 {
            let Some(open) = s.rfind("${") else {
                break;
            };
            let Some(len) = s[open..].find('}') else {
                break;
            };
            let name = &s[open + 2..open + len];
            let v = self.vars.get(name).cloned().unwrap_or_default();
            s.replace_range(open..open + len + 1, &v);
        }
        s
    }

    /// CMake's `if()` truth: NOT, AND, OR, parentheses, DEFINED, constants and
    /// variables; comparisons this reader cannot decide are false.
    fn truth(&self, args: &[Arg]) -> bool {
        let toks: Vec<(String, bool)> = args
            .iter()
            .map(|a| (self.expand_if_ref(a), a.quoted))
            .collect();
        let mut pos = 0;
        self.or_expr(&toks, &mut pos)
    }

    fn expand_if_ref(&self, a: &Arg) -> String {
        if a.text.contains("${") {
            self.expand(&a.text)
        } else {
            a.text.clone()
        }
    }

    fn or_expr(&self, t: &[(String, bool)], p: &mut usize) -> bool {
        let mut v = self.and_expr(t, p);
        while *p < t.len() && t[*p].0 == "OR" {
            *p += 1;
            let r = self.and_expr(t, p);
            v = v || r;
        }
        v
    }

    fn and_expr(&self, t: &[(String, bool)], p: &mut usize) -> bool {
        let mut v = self.not_expr(t, p);
        while *p < t.len() && t[*p].0 == "AND" {
            *p += 1;
            let r = self.not_expr(t, p);
            v = v && r;
        }
        v
    }

    fn not_expr(&self, t: &[(String, bool)], p: &mut usize) -> bool {
        if *p < t.len() && t[*p].0 == "NOT" {
            *p += 1;
            return !self.not_expr(t, p);
        }
        self.atom(t, p)
    }

    fn atom(&self, t: &[(String, bool)], p: &mut usize) -> bool {
        let Some((tok, quoted)) = t.get(*p) else {
            return false;
        };
        *p += 1;
        if tok == "(" {
            let v = self.or_expr(t, p);
            if t.get(*p).map(|x| x.0.as_str()) == Some(")") {
                *p += 1;
            }
            return v;
        }
        if tok == "DEFINED" {
            let v = t.get(*p).map(|x| self.vars.contains_key(&x.0));
            *p += 1;
            return v.unwrap_or(false);
        }
        // A binary comparison: undecided, so false; consume its right side.
        if let Some((op, _)) = t.get(*p) {
            if is_binary_op(op) {
                *p += 2;
                return false;
            }
        }
        if let Some(c) = constant(tok) {
            return c;
        }
        if *quoted {
            return false;
        }
        match self.vars.get(tok) {
            Some(v) => constant(v).unwrap_or(true),
            None => false,
        }
    }
}

fn is_binary_op(op: &str) -> bool {
    matches!(
        op,
        "STREQUAL"
            | "STRLESS"
            | "STRGREATER"
            | "EQUAL"
            | "LESS"
            | "GREATER"
            | "LESS_EQUAL"
            | "GREATER_EQUAL"
            | "MATCHES"
            | "VERSION_LESS"
            | "VERSION_GREATER"
            | "VERSION_EQUAL"
            | "VERSION_LESS_EQUAL"
            | "VERSION_GREATER_EQUAL"
            | "IN_LIST"
    )
}

/// CMake's boolean constants; `None` for a name that is not one.
fn constant(s: &str) -> Option<bool> {
    let u = s.to_ascii_uppercase();
    match u.as_str() {
        "1" | "ON" | "YES" | "TRUE" | "Y" => Some(true),
        "0" | "OFF" | "NO" | "FALSE" | "N" | "IGNORE" | "NOTFOUND" | "" => Some(false),
        _ if u.ends_with("-NOTFOUND") => Some(false),
        _ if s.parse::<f64>().is_ok() => Some(s.parse::<f64>().map(|v| v != 0.0).unwrap_or(false)),
        _ => None,
    }
}

/// `dir/f`, or `f` when absolute, if inside or at the tree.
fn resolve(dir: &Path, f: &str) -> Option<PathBuf> {
    let p = Path::new(f);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    })
}

/// The index of the command closing the block opened at `open`.
fn matching(cmds: &[Command], open: usize, start: &str, end: &str) -> usize {
    let mut depth = 0;
    for (k, c) in cmds.iter().enumerate().skip(open) {
        if c.name == start {
            depth += 1;
        } else if c.name == end {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    cmds.len()
}

type Branch<'c> = (Option<Vec<Arg>>, &'c [Command]);

/// The branches of the `if` at `open` (condition, body), and the index after `endif`.
fn split_if(cmds: &[Command], open: usize) -> (Vec<Branch<'_>>, usize) {
    let mut branches = Vec::new();
    let mut depth = 0;
    let mut cond = Some(cmds[open].args.clone());
    let mut start = open + 1;
    for k in open + 1..cmds.len() {
        match cmds[k].name.as_str() {
            "if" => depth += 1,
            "endif" if depth > 0 => depth -= 1,
            "endif" => {
                branches.push((cond.take(), &cmds[start..k]));
                return (branches, k + 1);
            }
            "elseif" if depth == 0 => {
                branches.push((cond.take(), &cmds[start..k]));
                cond = Some(cmds[k].args.clone());
                start = k + 1;
            }
            "else" if depth == 0 => {
                branches.push((cond.take(), &cmds[start..k]));
                cond = None;
                start = k + 1;
            }
            _ => {}
        }
    }
    branches.push((cond, &cmds[start..]));
    (branches, cmds.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("temp dir");
        for (p, t) in files {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
            std::fs::write(f, t).expect("write");
        }
        d
    }

    #[test]
    fn a_release_default_build_defines_ndebug() {
        // rocSOLVER's CMakeLists.txt:32-34 and rocBLAS's :28-29.
        let release = tree(&[(
            "CMakeLists.txt",
            "if(NOT DEFINED CMAKE_CONFIGURATION_TYPES AND NOT DEFINED CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release CACHE STRING \"doc\")\nendif()\nproject(lib)\n",
        )]);
        let got = derive(release.path(), "lib");
        let ndebug = got.iter().find(|d| d.name == "NDEBUG").expect("NDEBUG");
        assert_eq!(ndebug.value, "1");
        assert!(
            ndebug.origin.contains(":2 CMAKE_BUILD_TYPE Release"),
            "{}",
            ndebug.origin
        );
        let debug = tree(&[(
            "CMakeLists.txt",
            "set(CMAKE_BUILD_TYPE Debug)\nproject(lib)\n",
        )]);
        assert!(derive(debug.path(), "lib")
            .iter()
            .all(|d| d.name != "NDEBUG"));
    }

    #[test]
    fn options_conditions_functions_and_version_header() {
        let d = tree(&[
            (
                "CMakeLists.txt",
                "project(lib LANGUAGES CXX)\n\
                 option(FAST \"doc\" ON)\noption(SLOW \"doc\" OFF)\n\
                 set ( VERSION_STRING \"4.4.1\" )\nrocm_setup_version( VERSION ${VERSION_STRING} )\n\
                 if(FAST)\n  list(APPEND EXTRA A_DEF B_DEF=2)\nendif()\n\
                 add_subdirectory(library)\n",
            ),
            (
                "library/CMakeLists.txt",
                "function(settings tgt)\n  target_compile_definitions(${tgt} PRIVATE IN_FN)\nendfunction()\n\
                 settings(lib)\n\
                 configure_file(\"${CMAKE_CURRENT_SOURCE_DIR}/v.h.in\" \"${PROJECT_BINARY_DIR}/lib-version.h\")\n\
                 if(SLOW)\n target_compile_definitions(lib PRIVATE NOPE)\n\
                 elseif(NOT WIN32 AND FAST) # comment\n target_compile_definitions(lib PRIVATE ${EXTRA} $<$<CONFIG:Debug>:DBG>)\n\
                 else()\n target_compile_definitions(lib PRIVATE NOPE2)\nendif()\n\
                 target_compile_definitions(clients PRIVATE NOT_MINE)\n",
            ),
            (
                "library/v.h.in",
                "#ifndef V_H\n#define V_H\n#define LIB_VERSION_MAJOR @lib_VERSION_MAJOR@\n#define LIB_VERSION_TWEAK @lib_VERSION_TWEAK@\n#endif\n",
            ),
        ]);
        let got: Vec<(String, String)> = derive(d.path(), "lib")
            .into_iter()
            .map(|d| (d.name, d.value))
            .collect();
        let want = [
            ("IN_FN", "1"),
            ("LIB_VERSION_MAJOR", "4"),
            ("LIB_VERSION_TWEAK", ""),
            ("A_DEF", "1"),
            ("B_DEF", "2"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
        let all = derive(d.path(), "lib");
        assert_eq!(
            all[0].origin,
            "library/CMakeLists.txt:2 target_compile_definitions"
        );
        assert!(all[1].public && all[1].origin.ends_with("-> library/v.h.in:3"));
    }

    #[test]
    fn configured_defines_win_and_pair_headers_are_seen() {
        let own = tree(&[(
            "CMakeLists.txt",
            "project(solver)\noption(OPTIMAL \"x\" ON)\nif(OPTIMAL)\n target_compile_definitions(solver PRIVATE OPTIMAL)\nendif()\n",
        )]);
        let pair = tree(&[
            ("CMakeLists.txt", "project(blas)\nrocm_setup_version(VERSION 4.4.1)\nconfigure_file(b.h.in out/blas-version.h)\ntarget_compile_definitions(blas PRIVATE PRIVATE_TO_BLAS)\n"),
            ("b.h.in", "#define BLAS_VERSION_MINOR @blas_VERSION_MINOR@\n"),
        ]);
        let conf = BTreeMap::from([("OPTIMAL".to_string(), "0".to_string())]);
        let e = effective(
            own.path(),
            "solver",
            &conf,
            "rocqa.toml",
            Some(("blas", pair.path())),
        );
        let e: Vec<BuildDefine> = e
            .into_iter()
            .filter(|d| !is_compiler_predefine(&d.name))
            .collect();
        let names: Vec<(&str, &str)> = e
            .iter()
            .map(|d| (d.name.as_str(), d.value.as_str()))
            .collect();
        assert_eq!(names, [("BLAS_VERSION_MINOR", "4"), ("OPTIMAL", "0")]);
        assert_eq!(e[1].origin, "rocqa.toml");
        assert!(e[0]
            .origin
            .starts_with("blas: CMakeLists.txt:3 configure_file"));
    }

    #[test]
    fn a_relative_tree_finds_the_version_header_its_cmake_names_by_folder() {
        let pair = tree(&[
            ("CMakeLists.txt", "project(blas)\nrocm_setup_version(VERSION 4.4.1)\nconfigure_file(${CMAKE_CURRENT_SOURCE_DIR}/b.h.in out/blas-version.h)\n"),
            ("b.h.in", "#define BLAS_VERSION_MAJOR @blas_VERSION_MAJOR@\n"),
        ]);
        // The same folder named relative to the working directory, as `--root .` does.
        let cwd = std::env::current_dir().unwrap();
        let up: std::path::PathBuf = cwd.components().skip(1).map(|_| "..").collect();
        let relative = up.join(pair.path().strip_prefix("/").unwrap());
        assert!(relative.is_relative() && relative.is_dir());
        for t in [pair.path(), relative.as_path()] {
            let d = derive(t, "blas");
            let got: Vec<(&str, &str, &str)> = d
                .iter()
                .map(|d| (d.name.as_str(), d.value.as_str(), d.origin.as_str()))
                .collect();
            assert_eq!(
                got,
                [(
                    "BLAS_VERSION_MAJOR",
                    "4",
                    "CMakeLists.txt:3 configure_file -> b.h.in:1"
                )],
                "read from {}",
                t.display()
            );
        }
    }

    #[test]
    fn compiler_predefines_follow_the_standard_and_yield_to_the_build() {
        let get = |e: &[BuildDefine], n: &str| {
            e.iter()
                .find(|d| d.name == n)
                .map(|d| (d.value.clone(), d.origin.clone()))
        };
        let t = tree(&[(
            "CMakeLists.txt",
            "project(lib)\nset(CMAKE_CXX_STANDARD 14)\ntarget_compile_definitions(lib PRIVATE __HIP_PLATFORM_AMD__=2)\n",
        )]);
        let e = effective(t.path(), "lib", &BTreeMap::new(), "rocqa.toml", None);
        let (v, origin) = get(&e, "__cplusplus").expect("__cplusplus predefined");
        assert_eq!(v, "201402L");
        assert!(
            origin.ends_with("C++14 from CMAKE_CXX_STANDARD"),
            "{origin}"
        );
        assert_eq!(get(&e, "__HIPCC__").unwrap().0, "1");
        // Host pass: device-only macros stay undefined.
        assert!(get(&e, "__HIP_DEVICE_COMPILE__").is_none());
        // The build's own -D wins over the compiler's, rocqa.toml over both.
        assert_eq!(get(&e, "__HIP_PLATFORM_AMD__").unwrap().0, "2");
        let conf = BTreeMap::from([("__cplusplus".to_string(), "201103L".to_string())]);
        let e = effective(t.path(), "lib", &conf, "rocqa.toml", None);
        assert_eq!(
            get(&e, "__cplusplus").unwrap(),
            ("201103L".into(), "rocqa.toml".into())
        );
        // Without a standard set: clang-15's default, C++17.
        let t = tree(&[("CMakeLists.txt", "project(lib)\n")]);
        let e = effective(t.path(), "lib", &BTreeMap::new(), "rocqa.toml", None);
        assert_eq!(get(&e, "__cplusplus").unwrap().0, "201703L");
    }
}
