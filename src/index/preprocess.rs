//! A line-preserving preprocessor for the library's own macros.
//!
//! The real sources hide their structure behind macros: entry points stamped by
//! `INST_*_C_API(...)`, kernels declared with `ROCBLAS_KERNEL(lb)`, launches behind
//! `ROCBLAS_LAUNCH_KERNEL(...)`, braces split across `#if` branches. Tree-sitter alone
//! sees none of it. This module runs the directives of a file (following its
//! `#include "..."`s through the library's own headers), keeps one branch of every
//! conditional, and expands every macro the library defines, so the parser sees what
//! the compiler sees.
//!
//! The output has exactly as many lines as the input: an invocation spanning lines
//! L..M becomes its expansion on line L followed by blank lines, directives and
//! inactive branches become blank lines. So a row in the parsed output *is* the line
//! in the original file, and no position map is needed.

use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::lex::{tokenize, Tok};

/// One preprocessing directive of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// 1-based line of the `#`.
    pub line: u32,
    /// Byte range in the comment-free text, continuation lines included.
    pub start: usize,
    /// End byte (exclusive), before the final newline.
    pub end: usize,
    /// What the directive does.
    pub kind: DirKind,
}

/// The directives the preprocessor acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirKind {
    /// `#define`.
    Define(Arc<Macro>),
    /// `#undef NAME`.
    Undef(String),
    /// `#include "x"` (quoted = true) or `#include <x>`.
    Include(String, bool),
    /// `#if EXPR`.
    If(String),
    /// `#ifdef NAME`.
    Ifdef(String),
    /// `#ifndef NAME`.
    Ifndef(String),
    /// `#elif EXPR`.
    Elif(String),
    /// `#else`.
    Else,
    /// `#endif`.
    Endif,
    /// Anything else (`#pragma`, `#error`, ...): dropped.
    Other,
}

/// A macro definition ready for expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Macro {
    /// Macro name.
    pub name: String,
    /// Parameter names; `None` for object-like macros. A variadic tail is `__VA_ARGS__`
    /// (or its GNU name).
    pub params: Option<Vec<String>>,
    /// True when the last parameter is variadic.
    pub variadic: bool,
    /// Replacement text, continuations joined.
    pub body: String,
    /// Replacement tokens.
    pub body_toks: Vec<PTok>,
    /// File that defines it (relative to the tree root; empty for configured defines).
    pub file: Arc<str>,
    /// Line of the `#define`.
    pub line: u32,
}

/// An owned token used during expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PTok {
    /// Kind of token.
    pub kind: Tok,
    /// Its text.
    pub text: String,
}

impl Macro {
    /// Parses the text after `#define` (name, optional parameters, body).
    pub fn parse(def: &str, file: Arc<str>, line: u32) -> Option<Macro> {
        let def = def.trim_start();
        let name_len = def
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        if name_len == 0 {
            return None;
        }
        let name = def[..name_len].to_string();
        let rest = &def[name_len..];
        let (params, variadic, body) = if let Some(after) = rest.strip_prefix('(') {
            let close = after.find(')')?;
            let mut variadic = false;
            let mut params = Vec::new();
            for p in after[..close].split(',') {
                let p = p.trim();
                if p.is_empty() {
                    continue;
                }
                if p == "..." {
                    variadic = true;
                    params.push("__VA_ARGS__".to_string());
                } else if let Some(named) = p.strip_suffix("...") {
                    variadic = true;
                    params.push(named.trim().to_string());
                } else {
                    params.push(p.to_string());
                }
            }
            (
                Some(params),
                variadic,
                after[close + 1..].trim().to_string(),
            )
        } else {
            (None, false, rest.trim().to_string())
        };
        let body = body.replace("\\\n", " ");
        let body_toks = to_ptoks(&body);
        Some(Macro {
            name,
            params,
            variadic,
            body,
            body_toks,
            file,
            line,
        })
    }
}

fn to_ptoks(text: &str) -> Vec<PTok> {
    tokenize(text)
        .into_iter()
        .map(|t| PTok {
            kind: t.kind,
            text: text[t.start..t.end].to_string(),
        })
        .collect()
}

/// Finds the directives of a comment-free text.
pub fn scan_directives(clean: &str, file: &Arc<str>) -> Vec<Directive> {
    let mut out = Vec::new();
    let bytes = clean.as_bytes();
    let mut pos = 0;
    let mut line = 1u32;
    while pos < bytes.len() {
        let line_end = memchr_nl(bytes, pos);
        let trimmed_start = pos
            + bytes[pos..line_end]
                .iter()
                .take_while(|b| **b == b' ' || **b == b'\t')
                .count();
        if trimmed_start < line_end && bytes[trimmed_start] == b'#' {
            // Join continuation lines.
            let start_line = line;
            let mut end = line_end;
            while end > pos && end < bytes.len() && ends_with_backslash(bytes, pos, end) {
                line += 1;
                end = memchr_nl(bytes, end + 1);
            }
            let text = &clean[trimmed_start + 1..end];
            let kind = parse_directive(text, file, start_line);
            out.push(Directive {
                line: start_line,
                start: pos,
                end,
                kind,
            });
            pos = end;
        } else {
            pos = line_end;
        }
        if pos < bytes.len() {
            pos += 1; // the newline
            line += 1;
        }
    }
    out
}

fn memchr_nl(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|&c| c == b'\n')
        .map(|p| from + p)
        .unwrap_or(b.len())
}

fn ends_with_backslash(b: &[u8], line_start: usize, line_end: usize) -> bool {
    let mut e = line_end;
    while e > line_start && (b[e - 1] == b' ' || b[e - 1] == b'\t' || b[e - 1] == b'\r') {
        e -= 1;
    }
    e > line_start && b[e - 1] == b'\\'
}

fn parse_directive(text: &str, file: &Arc<str>, line: u32) -> DirKind {
    let text = text.trim_start();
    let word_len = text.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
    let (word, rest) = text.split_at(word_len);
    let rest_joined = || rest.replace("\\\n", " ").replace("\\\r\n", " ");
    match word {
        "define" => Macro::parse(&rest_joined(), file.clone(), line)
            .map(|m| DirKind::Define(Arc::new(m)))
            .unwrap_or(DirKind::Other),
        "undef" => DirKind::Undef(rest.trim().to_string()),
        "include" => {
            let r = rest.trim();
            if let Some(q) = r.strip_prefix('"') {
                DirKind::Include(q.split('"').next().unwrap_or("").to_string(), true)
            } else if let Some(a) = r.strip_prefix('<') {
                DirKind::Include(a.split('>').next().unwrap_or("").to_string(), false)
            } else {
                DirKind::Other
            }
        }
        "if" => DirKind::If(rest_joined()),
        "ifdef" => DirKind::Ifdef(rest.trim().to_string()),
        "ifndef" => DirKind::Ifndef(rest.trim().to_string()),
        "elif" => DirKind::Elif(rest_joined()),
        "else" => DirKind::Else,
        "endif" => DirKind::Endif,
        _ => DirKind::Other,
    }
}

/// The macros in force at one point of a translation unit.
#[derive(Debug, Clone, Default)]
pub struct MacroTable {
    /// Name to definition; `None` marks an explicit `#undef` that hides the fallback.
    pub defs: FxHashMap<String, Option<Arc<Macro>>>,
}

impl MacroTable {
    fn get<'a>(&'a self, name: &str, fallback: &'a Fallback) -> Option<&'a Arc<Macro>> {
        match self.defs.get(name) {
            Some(Some(m)) => Some(m),
            Some(None) => None,
            None => fallback.get(name),
        }
    }
    fn is_defined(&self, name: &str) -> bool {
        matches!(self.defs.get(name), Some(Some(_)))
    }
}

/// Macros the library defines exactly one way, used when a file relies on a header it
/// does not include itself (headers are parsed on their own, not inside a `.cpp`).
pub type Fallback = FxHashMap<String, Arc<Macro>>;

/// Builds the fallback table: every name whose definitions all agree.
pub fn build_fallback<'a>(all: impl Iterator<Item = &'a Arc<Macro>>) -> Fallback {
    let mut seen: HashMap<String, Option<Arc<Macro>>> = HashMap::new();
    for m in all {
        match seen.get(&m.name) {
            None => {
                seen.insert(m.name.clone(), Some(m.clone()));
            }
            Some(Some(prev)) if prev.params != m.params || prev.body_toks != m.body_toks => {
                seen.insert(m.name.clone(), None);
            }
            _ => {}
        }
    }
    seen.into_iter()
        .filter_map(|(k, v)| v.map(|m| (k, m)))
        .collect()
}

/// What the preprocessor needs to know about the other files of the tree.
pub trait Includes {
    /// The directives of a file.
    fn directives(&self, id: usize) -> &[Directive];
    /// The file that directive `k` of file `id` includes, if it is an `#include` the
    /// tree resolves (resolved once up front: every translation unit asks again).
    fn included(&self, id: usize, k: usize) -> Option<usize>;
}

/// A stretch of the output produced by expanding one macro invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// Start byte in the output text.
    pub start: usize,
    /// End byte in the output text.
    pub end: usize,
    /// Outermost macro.
    pub name: String,
    /// File of its `#define`.
    pub def_file: Arc<str>,
    /// Line of its `#define`.
    pub def_line: u32,
    /// Identifiers written in the invocation itself (its arguments), sorted.
    pub written: Vec<String>,
}

/// A preprocessed file: same line count as the original.
#[derive(Debug, Clone)]
pub struct Preprocessed {
    /// Text with directives, inactive branches and macros replaced.
    pub text: String,
    /// Where macro expansions landed in `text`.
    pub expansions: Vec<Expansion>,
    /// Files included (transitively resolved ids), in first-seen order.
    pub included: Vec<usize>,
}

const MAX_INCLUDE_DEPTH: usize = 48;
const MAX_EXPANSION_DEPTH: usize = 64;
/// An expansion longer than this is cut short: a runaway macro must not stall the index.
const MAX_EXPANSION_TOKENS: usize = 200_000;

struct Cond {
    /// This branch is live.
    active: bool,
    /// Some branch of this conditional has been taken already.
    taken: bool,
    /// The enclosing region is live.
    parent: bool,
}

/// Preprocesses one file of the tree.
///
/// `base` holds the configured defines; `clean` is the file's comment-free text.
pub fn preprocess(
    id: usize,
    clean: &str,
    base: &MacroTable,
    fallback: &Fallback,
    tree: &dyn Includes,
    expand_macros: bool,
) -> Preprocessed {
    let mut table = base.clone();
    let mut seen: FxHashSet<usize> = FxHashSet::default();
    seen.insert(id);
    let mut included = Vec::new();
    let mut out = String::with_capacity(clean.len() + clean.len() / 4);
    let mut expansions = Vec::new();
    let mut stack: Vec<Cond> = Vec::new();
    let mut pos = 0;
    for (k, d) in tree.directives(id).iter().enumerate() {
        let live = stack.last().map(|c| c.active).unwrap_or(true);
        // The text before this directive.
        let chunk = &clean[pos..d.start];
        if live && !expand_macros {
            out.push_str(chunk);
        } else if live {
            expand_chunk(chunk, &table, fallback, &mut out, &mut expansions);
        } else {
            push_newlines(&mut out, chunk);
        }
        push_newlines(&mut out, &clean[d.start..d.end]);
        pos = d.end;
        apply_directive(d, &mut stack, &mut table, fallback, &mut |t| {
            if let Some(inc) = tree.included(id, k) {
                run_header(inc, t, fallback, tree, &mut seen, &mut included, 0);
            }
        });
    }
    let live = stack.last().map(|c| c.active).unwrap_or(true);
    if live && !expand_macros {
        out.push_str(&clean[pos..]);
    } else if live {
        expand_chunk(&clean[pos..], &table, fallback, &mut out, &mut expansions);
    } else {
        push_newlines(&mut out, &clean[pos..]);
    }
    Preprocessed {
        text: out,
        expansions,
        included,
    }
}

/// Runs a header's directives for their effect on the macro table (`#pragma once`
/// semantics: each header once per translation unit).
fn run_header(
    id: usize,
    table: &mut MacroTable,
    fallback: &Fallback,
    tree: &dyn Includes,
    seen: &mut FxHashSet<usize>,
    included: &mut Vec<usize>,
    depth: usize,
) {
    if depth > MAX_INCLUDE_DEPTH || !seen.insert(id) {
        return;
    }
    included.push(id);
    let mut stack: Vec<Cond> = Vec::new();
    for (k, d) in tree.directives(id).iter().enumerate() {
        let mut wants = false;
        apply_directive(d, &mut stack, table, fallback, &mut |_| wants = true);
        if wants {
            if let Some(inc) = tree.included(id, k) {
                run_header(inc, table, fallback, tree, seen, included, depth + 1);
            }
        }
    }
}

fn apply_directive(
    d: &Directive,
    stack: &mut Vec<Cond>,
    table: &mut MacroTable,
    fallback: &Fallback,
    include: &mut dyn FnMut(&mut MacroTable),
) {
    let live = stack.last().map(|c| c.active).unwrap_or(true);
    match &d.kind {
        DirKind::If(e) => {
            let v = live && eval_condition(e, table, fallback);
            stack.push(Cond {
                active: v,
                taken: v,
                parent: live,
            });
        }
        DirKind::Ifdef(n) => {
            let v = live && table.is_defined(n.trim());
            stack.push(Cond {
                active: v,
                taken: v,
                parent: live,
            });
        }
        DirKind::Ifndef(n) => {
            let v = live && !table.is_defined(n.trim());
            stack.push(Cond {
                active: v,
                taken: v,
                parent: live,
            });
        }
        DirKind::Elif(e) => {
            if let Some(c) = stack.last_mut() {
                if c.taken || !c.parent {
                    c.active = false;
                } else {
                    let v = eval_condition(e, table, fallback);
                    c.active = v;
                    c.taken = v;
                }
            }
        }
        DirKind::Else => {
            if let Some(c) = stack.last_mut() {
                c.active = c.parent && !c.taken;
                c.taken = true;
            }
        }
        DirKind::Endif => {
            stack.pop();
        }
        _ if !live => {}
        DirKind::Define(m) => {
            table.defs.insert(m.name.clone(), Some(m.clone()));
        }
        DirKind::Undef(n) => {
            table.defs.insert(n.clone(), None);
        }
        DirKind::Include(..) => include(table),
        DirKind::Other => {}
    }
}

fn push_newlines(out: &mut String, text: &str) {
    for _ in 0..text.bytes().filter(|b| *b == b'\n').count() {
        out.push('\n');
    }
}

/// Copies live text to `out`, replacing every macro invocation by its expansion.
fn expand_chunk(
    chunk: &str,
    table: &MacroTable,
    fallback: &Fallback,
    out: &mut String,
    expansions: &mut Vec<Expansion>,
) {
    let toks = tokenize(chunk);
    let mut copied = 0;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if t.kind != Tok::Ident {
            i += 1;
            continue;
        }
        let name = &chunk[t.start..t.end];
        let Some(m) = table.get(name, fallback) else {
            i += 1;
            continue;
        };
        // Function-like macros need a `(` next; otherwise the name is just a name.
        let mut last = i;
        if m.params.is_some() {
            if i + 1 >= toks.len() || &chunk[toks[i + 1].start..toks[i + 1].end] != "(" {
                i += 1;
                continue;
            }
            let mut depth = 0i32;
            let mut close = None;
            for (j, tj) in toks.iter().enumerate().skip(i + 1) {
                match &chunk[tj.start..tj.end] {
                    "(" => depth += 1,
                    ")" => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(j);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(c) = close else {
                i += 1;
                continue;
            };
            last = c;
        }
        let invocation: Vec<PTok> = toks[i..=last]
            .iter()
            .map(|t| PTok {
                kind: t.kind,
                text: chunk[t.start..t.end].to_string(),
            })
            .collect();
        let mut ex = Expander {
            table,
            fallback,
            budget: MAX_EXPANSION_TOKENS,
        };
        let result = ex.expand(invocation, &mut Vec::new(), 0);
        out.push_str(&chunk[copied..t.start]);
        let start = out.len();
        join_tokens(&result, out);
        let end = out.len();
        let mut written: Vec<String> = toks[i + 1..=last]
            .iter()
            .filter(|t| t.kind == Tok::Ident)
            .map(|t| chunk[t.start..t.end].to_string())
            .collect();
        written.sort();
        written.dedup();
        expansions.push(Expansion {
            start,
            end,
            name: m.name.clone(),
            def_file: m.file.clone(),
            def_line: m.line,
            written,
        });
        let span_end = toks[last].end;
        push_newlines(out, &chunk[t.start..span_end]);
        copied = span_end;
        i = last + 1;
    }
    out.push_str(&chunk[copied..]);
}

fn join_tokens(toks: &[PTok], out: &mut String) {
    for (k, t) in toks.iter().enumerate() {
        if k > 0 {
            out.push(' ');
        }
        out.push_str(&t.text);
    }
}

struct Expander<'a> {
    table: &'a MacroTable,
    fallback: &'a Fallback,
    budget: usize,
}

impl Expander<'_> {
    fn lookup(&self, name: &str) -> Option<Arc<Macro>> {
        self.table.get(name, self.fallback).cloned()
    }

    /// Expands `input` fully; `disabled` holds the macros being expanded (no recursion).
    fn expand(&mut self, input: Vec<PTok>, disabled: &mut Vec<String>, depth: usize) -> Vec<PTok> {
        if depth > MAX_EXPANSION_DEPTH || self.budget == 0 {
            return input;
        }
        let mut out = Vec::with_capacity(input.len());
        let mut i = 0;
        while i < input.len() {
            let t = &input[i];
            if t.kind != Tok::Ident || disabled.contains(&t.text) {
                out.push(t.clone());
                i += 1;
                continue;
            }
            let Some(m) = self.lookup(&t.text) else {
                out.push(t.clone());
                i += 1;
                continue;
            };
            let (body, next) = match &m.params {
                None => (paste(m.body_toks.clone()), i + 1),
                Some(params) => {
                    if input.get(i + 1).map(|n| n.text.as_str()) != Some("(") {
                        out.push(t.clone());
                        i += 1;
                        continue;
                    }
                    let Some((args, close)) = collect_args(&input, i + 1) else {
                        out.push(t.clone());
                        i += 1;
                        continue;
                    };
                    let args = fit_args(args, params.len(), m.variadic);
                    (
                        self.substitute(&m, params, &args, disabled, depth),
                        close + 1,
                    )
                }
            };
            self.budget = self.budget.saturating_sub(body.len());
            disabled.push(m.name.clone());
            let res = self.expand(body, disabled, depth + 1);
            disabled.pop();
            out.extend(res);
            i = next;
        }
        out
    }

    fn substitute(
        &mut self,
        m: &Macro,
        params: &[String],
        args: &[Vec<PTok>],
        disabled: &mut Vec<String>,
        depth: usize,
    ) -> Vec<PTok> {
        let body = &m.body_toks;
        let param_of = |t: &PTok| {
            if t.kind == Tok::Ident {
                params.iter().position(|p| *p == t.text)
            } else {
                None
            }
        };
        let mut res: Vec<PTok> = Vec::with_capacity(body.len() * 2);
        let mut j = 0;
        while j < body.len() {
            let t = &body[j];
            if t.text == "#" && j + 1 < body.len() {
                if let Some(p) = param_of(&body[j + 1]) {
                    let mut s = String::new();
                    join_tokens(&args[p], &mut s);
                    let lit = format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
                    res.push(PTok {
                        kind: Tok::Literal,
                        text: lit,
                    });
                    j += 2;
                    continue;
                }
            }
            if let Some(p) = param_of(t) {
                let next_paste = body.get(j + 1).map(|n| n.text == "##").unwrap_or(false);
                let prev_paste = j > 0 && body[j - 1].text == "##";
                if next_paste || prev_paste {
                    if args[p].is_empty() {
                        res.push(PTok {
                            kind: Tok::Punct,
                            text: PLACEMARKER.into(),
                        });
                    } else {
                        res.extend(args[p].iter().cloned());
                    }
                } else {
                    res.extend(self.expand(args[p].clone(), disabled, depth + 1));
                }
            } else {
                res.push(t.clone());
            }
            j += 1;
        }
        paste(res)
    }
}

const PLACEMARKER: &str = "\u{1}";

/// Applies `##` token pasting.
fn paste(toks: Vec<PTok>) -> Vec<PTok> {
    if !toks.iter().any(|t| t.text == "##") {
        return toks.into_iter().filter(|t| t.text != PLACEMARKER).collect();
    }
    let mut out: Vec<PTok> = Vec::with_capacity(toks.len());
    let mut k = 0;
    while k < toks.len() {
        if toks[k].text == "##" && !out.is_empty() && k + 1 < toks.len() {
            let left = out.pop().unwrap_or(PTok {
                kind: Tok::Punct,
                text: String::new(),
            });
            let right = &toks[k + 1];
            let text = format!("{}{}", left.text, right.text).replace(PLACEMARKER, "");
            let kind = if left.kind == Tok::Ident || left.text == PLACEMARKER {
                if right.kind == Tok::Punct && right.text != PLACEMARKER {
                    Tok::Punct
                } else {
                    Tok::Ident
                }
            } else {
                left.kind
            };
            out.push(PTok { kind, text });
            k += 2;
        } else {
            out.push(toks[k].clone());
            k += 1;
        }
    }
    out.into_iter()
        .filter(|t| t.text != PLACEMARKER && !t.text.is_empty())
        .collect()
}

/// Splits the arguments of an invocation whose `(` is at `open`.
fn collect_args(toks: &[PTok], open: usize) -> Option<(Vec<Vec<PTok>>, usize)> {
    let mut args = vec![Vec::new()];
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t.text.as_str() {
            "(" | "[" | "{" => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return Some((args, j));
                }
            }
            "," if depth == 1 => {
                args.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(a) = args.last_mut() {
            a.push(t.clone());
        }
    }
    None
}

/// Folds surplus arguments into the variadic one and pads missing ones.
fn fit_args(mut args: Vec<Vec<PTok>>, n: usize, variadic: bool) -> Vec<Vec<PTok>> {
    if n == 0 {
        return Vec::new();
    }
    if variadic && args.len() > n {
        let tail = args.split_off(n - 1);
        let mut joined = Vec::new();
        for (k, a) in tail.into_iter().enumerate() {
            if k > 0 {
                joined.push(PTok {
                    kind: Tok::Punct,
                    text: ",".into(),
                });
            }
            joined.extend(a);
        }
        args.push(joined);
    }
    while args.len() < n {
        args.push(Vec::new());
    }
    args.truncate(n);
    args
}

/// Evaluates an `#if` / `#elif` expression; unknown identifiers count as 0, as in C.
pub fn eval_condition(expr: &str, table: &MacroTable, fallback: &Fallback) -> bool {
    let toks = to_ptoks(expr);
    // `defined X` and `defined(X)` first, before any expansion.
    let mut pre = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        if toks[i].text == "defined" {
            let (name, skip) = if toks.get(i + 1).map(|t| t.text.as_str()) == Some("(") {
                (toks.get(i + 2).map(|t| t.text.clone()), 4)
            } else {
                (toks.get(i + 1).map(|t| t.text.clone()), 2)
            };
            let v = name.map(|n| table.is_defined(&n)).unwrap_or(false);
            pre.push(PTok {
                kind: Tok::Number,
                text: if v { "1" } else { "0" }.into(),
            });
            i += skip;
        } else {
            pre.push(toks[i].clone());
            i += 1;
        }
    }
    // Expand with the table only: conditions should not depend on guesses.
    let empty = Fallback::default();
    let mut ex = Expander {
        table,
        fallback: &empty,
        budget: 10_000,
    };
    let _ = fallback;
    let expanded = ex.expand(pre, &mut Vec::new(), 0);
    let vals: Vec<PTok> = expanded
        .into_iter()
        .map(|t| match t.kind {
            Tok::Ident if t.text == "true" => PTok {
                kind: Tok::Number,
                text: "1".into(),
            },
            Tok::Ident => PTok {
                kind: Tok::Number,
                text: "0".into(),
            },
            _ => t,
        })
        .collect();
    let mut p = CondParser {
        toks: &vals,
        pos: 0,
    };
    p.ternary() != 0
}

struct CondParser<'a> {
    toks: &'a [PTok],
    pos: usize,
}

impl CondParser<'_> {
    fn peek(&self) -> &str {
        self.toks
            .get(self.pos)
            .map(|t| t.text.as_str())
            .unwrap_or("")
    }
    fn ternary(&mut self) -> i64 {
        let c = self.binary(0);
        if self.peek() == "?" {
            self.pos += 1;
            let a = self.ternary();
            if self.peek() == ":" {
                self.pos += 1;
            }
            let b = self.ternary();
            if c != 0 {
                a
            } else {
                b
            }
        } else {
            c
        }
    }
    fn binary(&mut self, min_prec: u8) -> i64 {
        let mut lhs = self.unary();
        loop {
            let op = self.peek().to_string();
            let prec = match op.as_str() {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                "*" | "/" | "%" => 10,
                _ => return lhs,
            };
            if prec < min_prec || prec == 0 {
                return lhs;
            }
            self.pos += 1;
            let rhs = self.binary(prec + 1);
            lhs = match op.as_str() {
                "||" => ((lhs != 0) || (rhs != 0)) as i64,
                "&&" => ((lhs != 0) && (rhs != 0)) as i64,
                "|" => lhs | rhs,
                "^" => lhs ^ rhs,
                "&" => lhs & rhs,
                "==" => (lhs == rhs) as i64,
                "!=" => (lhs != rhs) as i64,
                "<" => (lhs < rhs) as i64,
                ">" => (lhs > rhs) as i64,
                "<=" => (lhs <= rhs) as i64,
                ">=" => (lhs >= rhs) as i64,
                "<<" => lhs.wrapping_shl(rhs as u32),
                ">>" => lhs.wrapping_shr(rhs as u32),
                "+" => lhs.wrapping_add(rhs),
                "-" => lhs.wrapping_sub(rhs),
                "*" => lhs.wrapping_mul(rhs),
                "/" => lhs.checked_div(rhs).unwrap_or(0),
                _ => lhs.checked_rem(rhs).unwrap_or(0),
            };
        }
    }
    fn unary(&mut self) -> i64 {
        match self.peek() {
            "!" => {
                self.pos += 1;
                (self.unary() == 0) as i64
            }
            "-" => {
                self.pos += 1;
                -self.unary()
            }
            "+" => {
                self.pos += 1;
                self.unary()
            }
            "~" => {
                self.pos += 1;
                !self.unary()
            }
            "(" => {
                self.pos += 1;
                let v = self.ternary();
                if self.peek() == ")" {
                    self.pos += 1;
                }
                v
            }
            _ => {
                let t = self
                    .toks
                    .get(self.pos)
                    .map(|t| t.text.clone())
                    .unwrap_or_default();
                self.pos += 1;
                parse_int(&t)
            }
        }
    }
}

fn parse_int(t: &str) -> i64 {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).unwrap_or(0)
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8).unwrap_or(0)
    } else {
        t.parse().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::lex::strip_comments;

    struct One(Vec<Vec<Directive>>, HashMap<String, usize>);
    impl Includes for One {
        fn included(&self, id: usize, k: usize) -> Option<usize> {
            match &self.0[id][k].kind {
                DirKind::Include(t, _) => self.1.get(t).copied(),
                _ => None,
            }
        }
        fn directives(&self, id: usize) -> &[Directive] {
            &self.0[id]
        }
    }

    fn run(files: &[(&str, &str)], base: &[&str]) -> Preprocessed {
        let mut dirs = Vec::new();
        let mut names = HashMap::new();
        let mut cleans = Vec::new();
        for (k, (name, text)) in files.iter().enumerate() {
            let clean = strip_comments(text);
            dirs.push(scan_directives(&clean, &Arc::from(*name)));
            names.insert(name.to_string(), k);
            cleans.push(clean);
        }
        let mut table = MacroTable::default();
        for d in base {
            let m = Macro::parse(d, Arc::from(""), 0).unwrap();
            table.defs.insert(m.name.clone(), Some(Arc::new(m)));
        }
        let tree = One(dirs, names);
        preprocess(0, &cleans[0], &table, &Fallback::default(), &tree, true)
    }

    #[test]
    fn token_pasting_follows_configured_defines() {
        let hdr = "#ifdef ILP64\n#define API(f) f##_64\n#else\n#define API(f) f\n#endif\n";
        let src = "#include \"h.hpp\"\nint API(rocx_scal)(int n);\n";
        let plain = run(&[("a.cpp", src), ("h.hpp", hdr)], &[]);
        assert!(
            plain.text.contains("int rocx_scal(int n);"),
            "{}",
            plain.text
        );
        let wide = run(&[("a.cpp", src), ("h.hpp", hdr)], &["ILP64 1"]);
        assert!(wide.text.contains("rocx_scal_64"), "{}", wide.text);
    }

    #[test]
    fn multi_line_invocation_keeps_line_count() {
        let src = "#define STAMP(n, T) T n(T x) { return x; }\nSTAMP(f,\n  int)\nint g;\n";
        let out = run(&[("a.cpp", src)], &[]);
        assert_eq!(out.text.lines().count(), src.lines().count());
        let line2 = out.text.lines().nth(1).unwrap();
        assert!(line2.contains("int f ( int x ) { return x ; }"), "{line2}");
        assert_eq!(out.text.lines().nth(3), Some("int g;"));
        assert_eq!(out.expansions.len(), 1);
        assert_eq!(out.expansions[0].name, "STAMP");
    }

    #[test]
    fn split_braces_keep_one_branch() {
        let src = "void k() {\n#if SMALL\n  for(;;) {\n#else\n  while(1) {\n#endif\n  }\n}\n";
        let out = run(&[("a.cpp", src)], &[]);
        assert!(out.text.contains("while(1)") && !out.text.contains("for(;;)"));
        assert_eq!(out.text.matches('{').count(), out.text.matches('}').count());
    }

    #[test]
    fn variadic_and_stringify() {
        let src =
            "#define LAUNCH(k, ...) launch((k), __VA_ARGS__); log(#k)\nLAUNCH(kern<1>, g, b, 0);\n";
        let out = run(&[("a.cpp", src)], &[]);
        assert!(
            out.text
                .contains("launch ( ( kern < 1 > ) , g , b , 0 ) ; log ( \"kern < 1 >\" )"),
            "{}",
            out.text
        );
    }

    #[test]
    fn conditions_evaluate_like_c() {
        let t = MacroTable::default();
        let f = Fallback::default();
        assert!(eval_condition("1 && !defined(X)", &t, &f));
        assert!(!eval_condition("UNKNOWN", &t, &f));
        assert!(eval_condition("(2 + 3) * 2 == 10 ? 1 : 0", &t, &f));
        assert!(eval_condition("0x10 > 010", &t, &f));
    }

    #[test]
    fn undef_and_local_defines_apply_in_order() {
        let src = "#define K(a) a + 1\nint x = K(2);\n#undef K\nint y = K(2);\n";
        let out = run(&[("a.cpp", src)], &[]);
        assert!(out.text.contains("int x = 2 + 1;"), "{}", out.text);
        assert!(out.text.contains("int y = K(2);"));
    }
}
