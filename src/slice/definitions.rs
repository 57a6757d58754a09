//! Types and constants the shown code is instantiated with: functor structs passed as
//! template arguments (`rocblas_fetch_amax_amin<S>`, whose `operator()` a kernel calls
//! as `FETCH{}(x, i)`), object-like `#define`s (`ROCBLAS_IAMAX_NB`, `BS1`) and
//! namespace-scope `constexpr` values (`c_i64_grid_YZ_chunk`). None is a call the graph
//! follows, yet an answer about the kernel needs them: how ties break, how many threads
//! a block has, how many batches one launch covers.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use regex::Regex;

use super::Trees;
use crate::model::LibraryIndex;

/// Where one definition sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The struct's or the macro's name.
    pub name: String,
    /// Library whose tree holds it.
    pub lib: String,
    /// File relative to that tree's root.
    pub file: String,
    /// First line (a functor's `template <...>` line, a macro's `#define`).
    pub start: u32,
    /// Last line (a functor's `};`, a macro's last continued line).
    pub end: u32,
}

/// Functor structs and constant macros of the indexed trees, by name.
#[derive(Debug, Default)]
pub struct Definitions {
    /// Struct name -> (lib, file, first and last line of an `operator()`).
    functors: HashMap<String, Vec<(String, String, u32, u32)>>,
    /// Constant name -> (lib, file, first line, last line if known): object-like macros
    /// with a value (their last line follows the `\\` continuations) and namespace-scope
    /// `constexpr` variables (to their `;`).
    constants: HashMap<String, Vec<ConstantAt>>,
    /// Macro name -> (lib, file, `#define` line, body) of macros whose body is code
    /// (statements, a `return`, a block), not a value.
    statements: HashMap<String, Vec<(String, String, u32, String)>>,
}

/// Where a constant is defined: lib, file, first line, last line when known.
type ConstantAt = (String, String, u32, Option<u32>);

/// At most this many definitions of one kind are shown for a slice.
const MAX_FUNCTORS: usize = 6;
const MAX_CONSTANTS: usize = 16;

impl Definitions {
    /// Reads the functors (structs with an `operator()`) and the constant macros of
    /// every index, and the namespace-scope `constexpr` values of its files in `trees`.
    pub fn new(indexes: &[&LibraryIndex], trees: &Trees) -> Definitions {
        let mut d = Definitions::default();
        for idx in indexes {
            for f in &idx.files {
                for s in f.symbols.iter().filter(|s| s.name == "operator()") {
                    let Some(base) = struct_name(&s.scope) else {
                        continue;
                    };
                    d.functors.entry(base.to_string()).or_default().push((
                        idx.lib.clone(),
                        f.path.clone(),
                        s.line,
                        s.end_line,
                    ));
                }
                for m in f.macros.iter().filter(|m| is_statement(&m.body)) {
                    d.statements.entry(m.name.clone()).or_default().push((
                        idx.lib.clone(),
                        f.path.clone(),
                        m.line,
                        m.body.clone(),
                    ));
                }
                for m in f.macros.iter().filter(|m| m.params.is_none()) {
                    if is_constant(&m.body) {
                        d.constants.entry(m.name.clone()).or_default().push((
                            idx.lib.clone(),
                            f.path.clone(),
                            m.line,
                            None,
                        ));
                    }
                }
                let Ok(path) = trees.path_of(&idx.lib, &f.path) else {
                    continue;
                };
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                for (name, a, b) in constexpr_values(&text) {
                    d.constants.entry(name).or_default().push((
                        idx.lib.clone(),
                        f.path.clone(),
                        a,
                        Some(b),
                    ));
                }
            }
        }
        d
    }

    /// The functors and constants `texts` name (in order of first mention), where a
    /// tree holds their definition. Template parameters of the texts are not looked
    /// up: `NB` in `template <int NB>` is no macro of the tree whatever its spelling.
    ///
    /// Of several structs of one name (specializations, the `_64` copies), those in a
    /// file the slice already shows are taken, else the first by library and path.
    pub fn named_in(
        &self,
        texts: &[&str],
        lib: &str,
        shown_files: &BTreeSet<(&str, &str)>,
        trees: &Trees,
    ) -> Vec<Definition> {
        let params = template_parameters(texts);
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        let (mut functors, mut constants) = (0, 0);
        for w in texts.iter().flat_map(|t| identifiers(t)) {
            if params.contains(w) || !seen.insert(w) {
                continue;
            }
            if let Some(defs) = self.functors.get(w).filter(|_| functors < MAX_FUNCTORS) {
                // The same library's first; one struct per file (specializations of one
                // name in one header are shown together).
                let mut files = BTreeSet::new();
                let shown = |l: &str, f: &str| shown_files.contains(&(l, f));
                let mut ds: Vec<&(String, String, u32, u32)> = defs.iter().collect();
                ds.sort_by_key(|(l, f, a, _)| (!shown(l, f), l != lib, f.clone(), *a));
                let take = if ds.first().is_some_and(|(l, f, _, _)| shown(l, f)) {
                    ds.iter().filter(|(l, f, _, _)| shown(l, f)).count().min(3)
                } else {
                    1
                };
                let mut any = false;
                for (l, f, a, b) in ds.into_iter().take(take) {
                    let Ok(lines) = trees.lines(l, f) else {
                        continue;
                    };
                    let Some((start, end)) = struct_range(&lines, w, *a, *b) else {
                        continue;
                    };
                    if !files.insert((f.clone(), start)) {
                        continue;
                    }
                    out.push(Definition {
                        name: w.to_string(),
                        lib: l.clone(),
                        file: f.clone(),
                        start,
                        end,
                    });
                    any = true;
                }
                functors += usize::from(any);
            } else if let Some(defs) = self.constants.get(w).filter(|_| constants < MAX_CONSTANTS) {
                let Some((l, f, line, known_end)) = defs
                    .iter()
                    .min_by_key(|(l, f, a, _)| (l != lib, f.clone(), *a))
                else {
                    continue;
                };
                let Ok(lines) = trees.lines(l, f) else {
                    continue;
                };
                let mut end = known_end.unwrap_or(*line);
                while known_end.is_none()
                    && lines
                        .get(end as usize - 1)
                        .is_some_and(|t| t.trim_end().ends_with('\\'))
                    && end < line + 10
                {
                    end += 1;
                }
                // A value chosen by the preprocessor (`1` for gfx12 device builds, `0`
                // else) is shown with its `#if` ... `#endif`, never one arm alone.
                let (start, end) = conditional_around(&lines, *line, end).unwrap_or((*line, end));
                out.push(Definition {
                    name: w.to_string(),
                    lib: l.clone(),
                    file: f.clone(),
                    start,
                    end,
                });
                constants += 1;
            }
        }
        out
    }
}

impl Definitions {
    /// The code macros the shown code depends on, in this order:
    /// - a macro a step of the path is written in, when its body (or that of a macro it
    ///   invokes) names the callee: `INST_DGMM_C_API` stamping `rocblas_sdgmm` through
    ///   `IMPL`, `FORWARD_SUBSTITUTIONS` choosing among four substitution kernels. A
    ///   generic launch wrapper (`ROCSOLVER_LAUNCH_KERNEL(name, ...)`) names no callee
    ///   and is left out;
    /// - a short macro that returns, named in `texts`: what
    ///   `RETURN_ZERO_DEVICE_MEMORY_SIZE_IF_QUERIED(handle)` returns is part of the API's
    ///   early exits.
    ///
    /// `steps` holds (macro, callee, file of the call, whether the caller is an entry
    /// point) for the path's calls made inside a macro. Each definition comes with the
    /// use it was picked for, which decides who is shown it.
    pub fn statement_macros(
        &self,
        steps: &[(&str, &str, &str, bool)],
        texts: &[&str],
        lib: &str,
        shown_files: &BTreeSet<(&str, &str)>,
        trees: &Trees,
    ) -> Vec<(Definition, MacroUse)> {
        // Names like `IMPL` are defined again in many files: the one in the file at
        // hand (the outer macro's, a shown one) is the one the compiler sees there.
        let near = |name: &str, file: Option<&str>| {
            self.statements
                .get(name)?
                .iter()
                .min_by_key(|(l, f, a, _)| {
                    (
                        Some(f.as_str()) != file,
                        !shown_files.contains(&(l.as_str(), f.as_str())),
                        l != lib,
                        f.clone(),
                        *a,
                    )
                })
        };
        let first = |name: &str| near(name, None);
        let invoked = |body: &str| -> Vec<String> {
            identifiers(body)
                .filter(|w| self.statements.contains_key(*w))
                .map(String::from)
                .collect()
        };
        let names_word = |body: &str, w: &str| identifiers(body).any(|x| x == w);
        // (name, file it is looked up near, use)
        let mut names: Vec<(String, Option<String>, MacroUse)> = Vec::new();
        for &(m, callee, site, entry) in steps {
            let stamps = if entry {
                MacroUse::Stamps
            } else {
                MacroUse::Step
            };
            let Some((_, f, _, body)) = near(m, Some(site)) else {
                continue;
            };
            let nested: Vec<(String, Option<String>, MacroUse)> = invoked(body)
                .into_iter()
                .filter(|n| n != m)
                .filter(|n| near(n, Some(f)).is_some_and(|(_, _, _, b)| names_word(b, callee)))
                .map(|n| (n, Some(f.clone()), stamps))
                .collect();
            if names_word(body, callee) || !nested.is_empty() {
                names.push((m.to_string(), Some(f.clone()), stamps));
                names.extend(nested);
            }
        }
        for w in texts.iter().flat_map(|t| identifiers(t)) {
            if let Some((_, _, _, body)) = first(w) {
                let compact: usize = body.split_whitespace().map(|p| p.len() + 1).sum();
                if body.contains("return") && compact <= SHORT_MACRO_CHARS {
                    names.push((w.to_string(), None, MacroUse::Returns));
                }
            }
        }
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (name, file, used) in names {
            if out.len() >= MAX_STATEMENT_MACROS || !seen.insert(name.clone()) {
                continue;
            }
            let Some((l, f, line, _)) = near(&name, file.as_deref()) else {
                continue;
            };
            let Ok(lines) = trees.lines(l, f) else {
                continue;
            };
            let mut end = *line;
            while lines
                .get(end as usize - 1)
                .is_some_and(|t| t.trim_end().ends_with('\\'))
                && end < line + MAX_MACRO_LINES
            {
                end += 1;
            }
            out.push((
                Definition {
                    name,
                    lib: l.clone(),
                    file: f.clone(),
                    start: *line,
                    end,
                },
                used,
            ));
        }
        out
    }
}

/// What a code macro is shown for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacroUse {
    /// It stamps entry points (`INST_DGMM_C_API`): only a question on the variants
    /// needs it.
    Stamps,
    /// A step of the path is written in it (`FORWARD_SUBSTITUTIONS`).
    Step,
    /// It returns from the host code it is invoked in (`RETURN_ZERO_...`): an early
    /// exit every question on the path may need.
    Returns,
}

/// At most this many code macros are shown for a slice, each of at most this many lines.
const MAX_STATEMENT_MACROS: usize = 4;
const MAX_MACRO_LINES: u32 = 40;
/// A returning macro shown for its status is a few lines (`ROCBLAS_CHECK`), not a
/// logging block.
const SHORT_MACRO_CHARS: usize = 200;

/// A macro body that is code: statements, a block, a return.
fn is_statement(body: &str) -> bool {
    let b = body.trim();
    b.contains(';') || b.starts_with('{') || b.starts_with("do") || b.starts_with("if")
}

/// The `#if` ... `#endif` around lines `a..=b`, when one encloses them within a few
/// lines (a short conditional choosing a value); `None` outside any.
fn conditional_around(lines: &[String], a: u32, b: u32) -> Option<(u32, u32)> {
    const REACH: u32 = 12;
    let directive = |l: u32| {
        lines
            .get(l as usize - 1)
            .map(|t| {
                t.trim_start()
                    .trim_start_matches('#')
                    .trim_start()
                    .to_string()
            })
            .filter(|_| lines[l as usize - 1].trim_start().starts_with('#'))
    };
    let mut depth = 0i32;
    let mut start = None;
    for l in (a.saturating_sub(REACH).max(1)..a).rev() {
        match directive(l) {
            Some(d) if d.starts_with("endif") => depth += 1,
            Some(d) if d.starts_with("if") => {
                if depth == 0 {
                    start = Some(l);
                    break;
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    let start = start?;
    depth = 0;
    let limit = (lines.len() as u32).min(b + REACH);
    for l in (b + 1)..=limit {
        match directive(l) {
            Some(d) if d.starts_with("if") => depth += 1,
            Some(d) if d.starts_with("endif") => {
                if depth == 0 {
                    return Some((start, l));
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    None
}

/// The namespace-scope `constexpr` values of a file (`constexpr int64_t c_i32_max =
/// ...;` at the start of a line, its initializer on following lines too): name, first
/// and last line. Indented ones are class members or locals, which the code shown
/// defines where it uses them; arrays and functions are no values.
fn constexpr_values(text: &str) -> Vec<(String, u32, u32)> {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = R.get_or_init(|| {
        Regex::new(
            r"(?m)^(?:(?:static|inline)\s+)*constexpr\s+(?:(?:static|inline|const)\s+)*[A-Za-z_][\w:]*(?:<[^;=<>]*>)?\s+([A-Za-z_]\w*)\s*(?:=|\{)[^;{}]*\}?\s*;",
        )
        .expect("static regex")
    });
    if !text.contains("constexpr") {
        return Vec::new();
    }
    let line_at = |byte: usize| 1 + text[..byte].bytes().filter(|&b| b == b'\n').count() as u32;
    r.captures_iter(text)
        .filter_map(|c| {
            let (whole, name) = (c.get(0)?, c.get(1)?);
            // A variable template (`template <typename T> static constexpr bool
            // rocblas_is_complex = false;`) has a value per type, not this one.
            let before = text[..whole.start()].trim_end();
            let previous = before.rsplit('\n').next().unwrap_or("");
            if previous.trim_start().starts_with("template") {
                return None;
            }
            Some((
                name.as_str().to_string(),
                line_at(whole.start()),
                line_at(whole.end() - 1),
            ))
        })
        .collect()
}

/// `rocblas_default_value<rocblas_index_value_t<T>>` -> `rocblas_default_value`; the
/// innermost class of a qualified scope.
fn struct_name(scope: &str) -> Option<&str> {
    let head = scope.split('<').next()?;
    let name = head.rsplit("::").next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// A macro body that is a value (a number or an expression of numbers and names), not
/// an attribute, a string or a statement.
fn is_constant(body: &str) -> bool {
    let b = body.trim();
    !b.is_empty()
        && b.chars().any(|c| c.is_ascii_digit())
        && !b.contains(['"', '{', '}', ';', '#'])
        && !b.starts_with("__")
}

fn ident_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").expect("static regex"))
}

fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    ident_re().find_iter(text).map(|m| m.as_str())
}

/// The names `template <...>` headers in the texts declare.
fn template_parameters<'t>(texts: &[&'t str]) -> BTreeSet<&'t str> {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = R.get_or_init(|| Regex::new(r"template\s*<([^>]*)>").expect("static regex"));
    let mut out = BTreeSet::new();
    for t in texts {
        for c in r.captures_iter(t) {
            let Some(list) = c.get(1) else { continue };
            for part in list.as_str().split(',') {
                let decl = part.split('=').next().unwrap_or("");
                if let Some(name) = identifiers(decl).last() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// The lines of the struct `name` around an `operator()` at `a..=b`: from its
/// `template <...>` line (or the `struct` line) to the `};` that closes it.
fn struct_range(lines: &[String], name: &str, a: u32, b: u32) -> Option<(u32, u32)> {
    let at = |l: u32| lines.get(l as usize - 1).map(|s| s.as_str()).unwrap_or("");
    let opens = |t: &str| {
        let t = t.trim_start();
        (t.starts_with("struct ") || t.starts_with("class ")) && identifiers(t).nth(1) == Some(name)
    };
    let mut start = (a.saturating_sub(40).max(1)..=a)
        .rev()
        .find(|&l| opens(at(l)))?;
    if start > 1 && at(start - 1).trim_start().starts_with("template") {
        start -= 1;
    }
    let limit = (lines.len() as u32).min(b + 60);
    let end = (b..=limit).find(|&l| at(l).trim_start().starts_with("};"))?;
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_names_drop_arguments_and_scopes() {
        assert_eq!(
            struct_name("rocblas_default_value<rocblas_index_value_t<T>>"),
            Some("rocblas_default_value")
        );
        assert_eq!(struct_name("ns::fetch_abs"), Some("fetch_abs"));
        assert_eq!(struct_name(""), None);
    }

    #[test]
    fn constants_are_values_not_attributes_or_strings() {
        assert!(is_constant("1024") && is_constant("(64 * 4)"));
        assert!(!is_constant(
            "__attribute__((amdgpu_flat_work_group_size(1, 1024)))"
        ));
        assert!(!is_constant("\"rocblas-bench\"") && !is_constant(""));
    }

    #[test]
    fn constexpr_values_at_namespace_scope_are_constants() {
        let src = "constexpr int64_t c_i32_max = int64_t(std::numeric_limits<int32_t>::max());\n\
                   inline constexpr char suffix[] = \"\";\n\
                   constexpr int64_t c_chunk\n    = int64_t(512); // x\n\
                   constexpr int f(int a) { return a; }\n\
                   struct s {\n    static constexpr int member = 3;\n};\n\
                   template <typename T>\nstatic constexpr bool is_complex = false;\n";
        let got = constexpr_values(src);
        assert_eq!(
            got,
            vec![
                ("c_i32_max".to_string(), 1, 1),
                ("c_chunk".to_string(), 3, 4)
            ]
        );
    }

    #[test]
    fn template_parameters_are_not_looked_up() {
        let t = "template <int NB, typename FETCH, typename T = float>\nvoid k() { NB; }";
        let p = template_parameters(&[t]);
        assert!(p.contains("NB") && p.contains("FETCH") && p.contains("T"));
    }

    #[test]
    fn a_value_the_preprocessor_chooses_is_shown_with_its_conditional() {
        let src = "#pragma once\n#if defined(__gfx1200__)\n#define GRID16 1\n#else\n#define GRID16 0\n#endif\n#define OTHER 2\n";
        let lines: Vec<String> = src.lines().map(String::from).collect();
        assert_eq!(conditional_around(&lines, 3, 3), Some((2, 6)));
        assert_eq!(conditional_around(&lines, 5, 5), Some((2, 6)));
        assert_eq!(conditional_around(&lines, 7, 7), None);
    }

    #[test]
    fn a_functor_is_shown_from_its_template_line_to_its_close() {
        let src = "// x\ntemplate <typename To>\nstruct fetch_abs\n{\n    template <typename Ti>\n    auto operator()(Ti x) const\n    {\n        return x;\n    }\n};\n";
        let lines: Vec<String> = src.lines().map(String::from).collect();
        assert_eq!(struct_range(&lines, "fetch_abs", 5, 9), Some((2, 10)));
        assert_eq!(struct_range(&lines, "other", 5, 9), None);
    }
}
