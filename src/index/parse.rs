//! Tree-sitter extraction of definitions, calls and launches from preprocessed text.
//!
//! HIP's declaration attributes (`__global__`, `__device__`, `__launch_bounds__(..)`,
//! ...) are not C++ that tree-sitter-cpp knows, so they are blanked out first and
//! remembered by byte offset; a definition is a kernel when a `__global__` stood
//! between its start and its name. Launches are found in the text of each body
//! (`hipLaunchKernelGGL(kernel, ...)` and `kernel<<<...>>>`), which is sturdier than
//! trusting how tree-sitter reads template arguments inside a macro argument.

use std::sync::OnceLock;

use regex::Regex;
use tree_sitter::{Node, Parser, TreeCursor};

use super::preprocess::Expansion;
use crate::model::{CallSite, LaunchSite, MacroOrigin, Symbol, SymbolKind};

/// What one file yields.
#[derive(Debug, Default)]
pub struct Extracted {
    /// Definitions found.
    pub symbols: Vec<Symbol>,
    /// Calls out of them.
    pub calls: Vec<CallSite>,
    /// Launches out of them.
    pub launches: Vec<LaunchSite>,
    /// ERROR nodes in the tree.
    pub errors: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attr {
    Global,
    Device,
    Host,
    Bounds,
}

struct Marker {
    pos: usize,
    attr: Attr,
    text: String,
}

fn attr_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\b(__global__|__device__|__host__|__forceinline__|__noinline__|__inline__|__shared__|__constant__|__managed__|__restrict__|__launch_bounds__|__attribute__)\b")
            .expect("static regex")
    })
}

fn launch_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\b(hipLaunchKernelGGL|hipLaunchKernelExGGL|hipExtLaunchKernelGGL)\s*\(")
            .expect("static regex")
    })
}

fn chevron_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"([A-Za-z_][\w:]*)\s*(?:<[^;{}]*?>)?\s*<\s*<\s*<").expect("static regex")
    })
}

/// Blanks HIP attributes (same length, so offsets hold) and records where they were.
fn blank_attributes(text: &str) -> (String, Vec<Marker>) {
    let mut bytes = text.as_bytes().to_vec();
    let mut markers = Vec::new();
    for m in attr_regex().find_iter(text) {
        let word = m.as_str();
        let mut end = m.end();
        let mut arg = String::new();
        if word == "__launch_bounds__" || word == "__attribute__" {
            // Swallow the balanced parenthesised argument.
            let b = text.as_bytes();
            let mut k = end;
            while k < b.len() && b[k].is_ascii_whitespace() {
                k += 1;
            }
            if k < b.len() && b[k] == b'(' {
                let mut depth = 0;
                let open = k;
                while k < b.len() {
                    match b[k] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                k += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    k += 1;
                }
                arg = text[open..k].to_string();
                end = k;
            }
        }
        let attr = match word {
            "__global__" => Some(Attr::Global),
            "__device__" => Some(Attr::Device),
            "__host__" => Some(Attr::Host),
            "__launch_bounds__" => Some(Attr::Bounds),
            _ => None,
        };
        if let Some(attr) = attr {
            let t = arg.trim().trim_start_matches('(').trim_end_matches(')');
            let t = t
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .trim();
            markers.push(Marker {
                pos: m.start(),
                attr,
                text: t.to_string(),
            });
        }
        for b in &mut bytes[m.start()..end] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    (String::from_utf8(bytes).unwrap_or_default(), markers)
}

/// The text the parser reads: the template arguments of each launched kernel blanked
/// (`hipLaunchKernelGGL((k<T, NB, ...>), ...)` becomes `((k          ), ...)`), same
/// length. In an argument list `k < T, NB >` reads as comparisons as well as template
/// arguments, and each comma doubles the parser's open alternatives: with the 17 of
/// `geam_min_plus_kernel` that was half the parse time of its file. Launches are read
/// off the unblanked text, and a kernel's template arguments hold no calls.
fn blank_launched_template_args(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    for m in launch_regex().find_iter(text) {
        // Past the `(`s and `HIP_KERNEL_NAME` to the kernel's name.
        let mut k = m.end();
        loop {
            while k < b.len() && b[k].is_ascii_whitespace() {
                k += 1;
            }
            if b[k..].starts_with(b"(") {
                k += 1;
            } else if b[k..].starts_with(b"HIP_KERNEL_NAME") {
                k += "HIP_KERNEL_NAME".len();
            } else {
                break;
            }
        }
        while k < b.len() && (b[k].is_ascii_alphanumeric() || b"_: \t".contains(&b[k])) {
            k += 1;
        }
        if k >= b.len() || b[k] != b'<' {
            continue;
        }
        // The matching `>`, with `(...)` skipped whole (`k<(N > 2)>`); anything that
        // cannot be in template arguments ends the search with nothing blanked.
        let open = k;
        let (mut angle, mut paren) = (0i32, 0i32);
        let close = loop {
            if k >= b.len() {
                break None;
            }
            match b[k] {
                b'(' => paren += 1,
                b')' if paren == 0 => break None,
                b')' => paren -= 1,
                b'<' if paren == 0 => angle += 1,
                b'>' if paren == 0 => {
                    angle -= 1;
                    if angle == 0 {
                        break Some(k);
                    }
                }
                b';' | b'{' | b'}' => break None,
                _ => {}
            }
            k += 1;
        };
        if let Some(close) = close {
            spans.push((open, close + 1));
        }
    }
    blank_spans(text, &spans)
}

/// `text` with the byte ranges `spans` turned to spaces, newlines kept (so offsets and
/// lines hold); borrowed when there is nothing to blank.
fn blank_spans<'t>(text: &'t str, spans: &[(usize, usize)]) -> std::borrow::Cow<'t, str> {
    if spans.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = text.as_bytes().to_vec();
    for &(from, to) in spans {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| text.to_string()))
}

/// What a `{` opened, as far as [`blank_declarations`] needs to know.
#[derive(Clone, Copy, PartialEq)]
enum Brace {
    /// A namespace or an `extern "C"` block.
    Namespace,
    /// A class, struct or union body: what follows its `}` may be a declarator.
    Class,
    /// A function body (its head ends with `)`, a qualifier or `try`): what follows
    /// its `}` is a new statement.
    Function,
    /// Anything else (an initializer, an enum, a lambda).
    Other,
}

/// Blanks (to spaces, newlines kept, so offsets hold) the declarations that hold no
/// braces at namespace, `extern "C"` and class level: `rocblas_status f(...);`, the
/// explicit instantiations a macro expands to by the hundred, `using` lines. The index
/// keeps only definitions (`= default` and `= delete` count, and stay), and tree-sitter's time is
/// linear in what it reads. Anything not known to be such a declaration is kept: the
/// statement right after a `}` that is not a namespace's (`struct S {...} s;`,
/// `x = {...};`, `enum E {...} e;`), and everything inside a brace whose opener is not
/// plainly a namespace or class head (a head with parentheses counts as a function).
fn blank_declarations(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    // The namespace and class braces open at this point.
    let mut scopes: Vec<Brace> = Vec::new();
    // Depth of braces inside the innermost brace that is not a scope (0: at scope level).
    let mut inner = 0usize;
    let mut inner_kind = Brace::Other;
    let mut seg = 0usize;
    let mut seg_ok = true;
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' => {
                // A digit separator (`1'000`) is not a character literal.
                if c == b'\'' && i > 0 && b[i - 1].is_ascii_alphanumeric() {
                    i += 1;
                    continue;
                }
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' if inner > 0 => inner += 1,
            b'{' => {
                match scope_head(&text[seg..i]) {
                    Some(k) => scopes.push(k),
                    None => {
                        inner = 1;
                        inner_kind = if is_function_head(&text[seg..i]) {
                            Brace::Function
                        } else {
                            Brace::Other
                        };
                    }
                }
                seg = i + 1;
                seg_ok = true;
            }
            b'}' if inner > 1 => inner -= 1,
            b'}' => {
                let closed = if inner == 1 {
                    inner = 0;
                    inner_kind
                } else {
                    scopes.pop().unwrap_or(Brace::Other)
                };
                seg = i + 1;
                seg_ok = matches!(closed, Brace::Namespace | Brace::Function);
            }
            b';' if inner == 0 => {
                // `S(const S&) = default;` and `= delete;` are definitions the index keeps.
                let stmt = text[seg..i].trim_end();
                let defined = stmt.ends_with("default") || stmt.ends_with("delete");
                if seg_ok && !defined && !stmt.trim_start().is_empty() {
                    spans.push((seg, i + 1));
                }
                seg = i + 1;
                seg_ok = true;
            }
            _ => {}
        }
        i += 1;
    }
    blank_spans(text, &spans)
}

/// Whether the text before a `{` is a function's head: it ends with the parameter
/// list, a qualifier after it, or `try`, and assigns nothing.
fn is_function_head(head: &str) -> bool {
    let t = head.trim_end();
    !t.contains('=')
        && (t.ends_with(')')
            || ["const", "noexcept", "override", "final", "try", "mutable"]
                .iter()
                .any(|w| {
                    t.ends_with(w)
                        && t[..t.len() - w.len()]
                            .ends_with(|c: char| !(c.is_alphanumeric() || c == '_'))
                }))
}

/// What the text before a `{` opens, when it is plainly a namespace, an `extern "C"`
/// block or a class body (a class key and no parentheses or `=`: `struct S : B<(1 > 0)>
/// {` counts as not).
fn scope_head(head: &str) -> Option<Brace> {
    let t = head.trim();
    if t.ends_with("extern \"C\"") || t.ends_with("extern \"C++\"") {
        return Some(Brace::Namespace);
    }
    if t.contains('(') || t.contains('=') {
        return None;
    }
    let words: Vec<&str> = t
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    if words.first() == Some(&"namespace")
        || words.first() == Some(&"inline") && words.get(1) == Some(&"namespace")
    {
        return Some(Brace::Namespace);
    }
    words
        .iter()
        .any(|w| matches!(*w, "class" | "struct" | "union"))
        .then_some(Brace::Class)
}

thread_local! {
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new({
        let mut p = Parser::new();
        p.set_language(&tree_sitter_cpp::LANGUAGE.into()).expect("tree-sitter-cpp grammar loads");
        p
    });
}

fn body_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\)\s*\{|\btry\s*\{|\)\s*(?:const|noexcept|override|final|mutable)\b")
            .expect("static regex")
    })
}

/// Parses preprocessed text and extracts what the index keeps.
pub fn extract(file: &str, text: &str, expansions: &[Expansion]) -> Extracted {
    // A function definition needs a body after its parameter list; a file without
    // one (the public API headers: thousands of declarations) has nothing to extract.
    if !body_regex().is_match(text) {
        return Extracted::default();
    }
    let (blanked, markers) = blank_attributes(text);
    let parsed = blank_launched_template_args(&blanked);
    let parsed = blank_declarations(&parsed);
    let Some(tree) = PARSER.with(|p| p.borrow_mut().parse(parsed.as_bytes(), None)) else {
        return Extracted::default();
    };
    let mut ex = Extracted::default();
    let mut cx = Walk {
        file,
        raw: text,
        src: &blanked,
        markers: &markers,
        expansions,
        scope: Vec::new(),
        extern_c: false,
        line_starts: std::iter::once(0)
            .chain(
                blanked
                    .bytes()
                    .enumerate()
                    .filter(|(_, b)| *b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect(),
        parens: blanked
            .bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'(')
            .map(|(i, _)| i)
            .collect(),
        out: &mut ex,
    };
    cx.walk(&mut tree.walk());
    ex
}

struct Walk<'a> {
    file: &'a str,
    /// The preprocessed text before HIP attributes were blanked (same offsets).
    raw: &'a str,
    src: &'a str,
    markers: &'a [Marker],
    expansions: &'a [Expansion],
    scope: Vec<String>,
    extern_c: bool,
    line_starts: Vec<usize>,
    /// Byte offsets of every `(` in `src`.
    parens: Vec<usize>,
    out: &'a mut Extracted,
}

impl Walk<'_> {
    fn text(&self, n: Node) -> &str {
        &self.src[n.byte_range()]
    }

    /// Whether a node's text holds a `(`.
    fn has_paren(&self, n: Node) -> bool {
        let k = self.parens.partition_point(|&p| p < n.start_byte());
        self.parens.get(k).is_some_and(|&p| p < n.end_byte())
    }

    /// Visits the node under the cursor (one cursor for the whole top level: a cursor
    /// per node would allocate per node) and leaves the cursor where it found it.
    fn walk(&mut self, c: &mut TreeCursor) {
        let node = c.node();
        match node.kind() {
            "ERROR" => {
                self.out.errors += 1;
                self.children(c);
            }
            "function_definition" => self.function(node, node),
            "template_declaration" => {
                let mut handled = false;
                if c.goto_first_child() {
                    loop {
                        let ch = c.node();
                        if ch.is_named() && ch.kind() == "function_definition" {
                            self.function(ch, node);
                            handled = true;
                        }
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                    c.goto_parent();
                }
                if !handled {
                    self.children(c);
                }
            }
            "namespace_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| self.text(n).to_string())
                    .unwrap_or_else(|| "(anonymous)".to_string());
                self.scope.push(name);
                self.children(c);
                self.scope.pop();
            }
            "class_specifier" | "struct_specifier" | "union_specifier" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| self.text(n).to_string());
                if let Some(n) = &name {
                    self.scope.push(n.clone());
                }
                self.children(c);
                if name.is_some() {
                    self.scope.pop();
                }
            }
            "linkage_specification" => {
                let was = self.extern_c;
                let v = node
                    .child_by_field_name("value")
                    .map(|n| self.text(n).to_string());
                self.extern_c = v.as_deref() == Some("\"C\"");
                self.children(c);
                self.extern_c = was;
            }
            // A definition has a parameter list: a subtree without a `(` (and without
            // an ERROR node) holds none.
            _ if node.has_error() || self.has_paren(node) => self.children(c),
            _ => {}
        }
    }

    /// Walks each child of the node under the cursor, in order.
    fn children(&mut self, c: &mut TreeCursor) {
        if c.goto_first_child() {
            loop {
                self.walk(c);
                if !c.goto_next_sibling() {
                    break;
                }
            }
            c.goto_parent();
        }
    }

    fn function(&mut self, def: Node, outer: Node) {
        let Some(decl) = def.child_by_field_name("declarator") else {
            return;
        };
        let Some((name_node, quals)) = function_name(decl, self.src) else {
            return;
        };
        let name = self.text(name_node).to_string();
        // Blanked attributes in front of the return type belong to this definition.
        let mut start = outer.start_byte();
        while start > 0 && self.src.as_bytes()[start - 1].is_ascii_whitespace() {
            start -= 1;
        }
        let name_pos = name_node.start_byte();
        let mut kind = SymbolKind::Function;
        let mut bounds = None;
        let (mut global, mut device, mut host) = (false, false, false);
        let first = self.markers.partition_point(|m| m.pos < start);
        for m in self.markers[first..]
            .iter()
            .take_while(|m| m.pos < name_pos)
        {
            match m.attr {
                Attr::Global => global = true,
                Attr::Device => device = true,
                Attr::Host => host = true,
                Attr::Bounds => bounds = Some(m.text.clone()),
            }
        }
        if global {
            kind = SymbolKind::Kernel;
        } else if device && !host {
            kind = SymbolKind::DeviceHelper;
        }
        let mut scope = self.scope.clone();
        scope.extend(quals);
        let expanded_from = self.expansion_at(name_pos).map(|e| MacroOrigin {
            name: e.name.clone(),
            def_file: e.def_file.to_string(),
            def_line: e.def_line,
        });
        let idx = self.out.symbols.len() as u32;
        self.out.symbols.push(Symbol {
            name,
            scope: scope.join("::"),
            kind,
            file: self.file.to_string(),
            line: outer.start_position().row as u32 + 1,
            name_line: name_node.start_position().row as u32 + 1,
            end_line: def.end_position().row as u32 + 1,
            is_template: outer.kind() == "template_declaration",
            launch_bounds: if kind == SymbolKind::Kernel {
                bounds
            } else {
                None
            },
            extern_c: self.extern_c,
            expanded_text: expanded_from
                .as_ref()
                .map(|_| self.raw[outer.start_byte()..def.end_byte()].to_string()),
            expanded_from,
            arity: arity(decl),
            pointer_arrays: pointer_arrays(decl, self.src),
            usr: String::new(),
        });
        // The body: a compound statement, or a function-try-block.
        let body_start = decl.end_byte();
        self.calls_in(def, idx, body_start);
        self.launches_in(idx, body_start, def.end_byte());
    }

    /// 1-based line of a byte offset.
    fn line_of(&self, pos: usize) -> u32 {
        self.line_starts.partition_point(|&s| s <= pos) as u32
    }

    fn expansion_at(&self, pos: usize) -> Option<&Expansion> {
        // Expansions are sorted by start.
        let k = self.expansions.partition_point(|e| e.start <= pos);
        k.checked_sub(1)
            .map(|k| &self.expansions[k])
            .filter(|e| pos < e.end)
    }

    /// A call at byte `pos`: inside a macro expansion, it is written in the source only
    /// if the invocation's own arguments name the callee.
    fn call_site(
        &self,
        caller: u32,
        callee: String,
        line: u32,
        pos: usize,
        args: Option<u16>,
        qualifier: Option<String>,
    ) -> CallSite {
        let e = self.expansion_at(pos);
        let written = e.is_none_or(|e| e.written.binary_search(&callee).is_ok());
        CallSite {
            caller,
            callee,
            line,
            via_macro: e.map(|e| e.name.clone()),
            written,
            args,
            resolved: Vec::new(),
            qualifier,
        }
    }

    /// The calls in a definition's body, in the order the index has always listed them
    /// (last child first, depth first), each `(callee, line)` once. One cursor walks the
    /// body in post-order; reversed, that is the same order.
    fn calls_in<'t>(&mut self, def: Node<'t>, caller: u32, body_start: usize) {
        let kinds = node_kinds();
        let src = self.src;
        // Whether a node's subtree is left out: the declarator before the body, and
        // definitions nested inside (indexed on their own).
        let skipped = |n: Node, root: bool| {
            n.end_byte() <= body_start || (!root && n.kind_id() == kinds.function_definition)
        };
        // Post-order visits, latest first once reversed.
        let mut found: Vec<Found<'_, 't>> = Vec::new();
        let mut errors = 0;
        if !skipped(def, true) {
            let mut c = def.walk();
            let mut depth = 0usize;
            'enter: loop {
                // Descend to the first child that is not left out; a subtree without a
                // `(` and without an error holds neither a call nor an ERROR node.
                let n = c.node();
                if (n.has_error() || self.has_paren(n)) && c.goto_first_child() {
                    loop {
                        if !skipped(c.node(), false) {
                            depth += 1;
                            continue 'enter;
                        }
                        if !c.goto_next_sibling() {
                            break;
                        }
                    }
                    c.goto_parent();
                }
                // No child left to enter: visit, then go to the next sibling or up.
                loop {
                    visit_for_calls(c.node(), src, &self.line_starts, &mut found, &mut errors);
                    if depth == 0 {
                        break 'enter;
                    }
                    while c.goto_next_sibling() {
                        if !skipped(c.node(), false) {
                            continue 'enter;
                        }
                    }
                    c.goto_parent();
                    depth -= 1;
                }
            }
        }
        self.out.errors += errors;
        let mut seen = std::collections::HashSet::new();
        for (name, line, pos, call) in found.into_iter().rev() {
            if !seen.insert((name, line)) {
                continue;
            }
            let args = call
                .and_then(|n| n.child_by_field_name("arguments"))
                .filter(|a| !a.has_error())
                .map(|a| {
                    let mut c = a.walk();
                    a.named_children(&mut c)
                        .filter(|x| x.kind_id() != kinds.comment)
                        .count() as u16
                });
            let qualifier = call
                .and_then(|n| n.child_by_field_name("function"))
                .and_then(|f| call_qualifier(f, src));
            let site = self.call_site(caller, name.to_string(), line, pos, args, qualifier);
            self.out.calls.push(site);
        }
    }

    fn launches_in(&mut self, caller: u32, from: usize, to: usize) {
        let body = &self.src[from..to];
        let mut found: Vec<(usize, String)> = Vec::new();
        for m in launch_regex().find_iter(body) {
            if let Some(k) = kernel_of_first_arg(&body[m.end()..]) {
                found.push((from + m.start(), k));
            }
        }
        for c in chevron_regex().captures_iter(body) {
            let (Some(all), Some(name)) = (c.get(0), c.get(1)) else {
                continue;
            };
            let n = name.as_str().rsplit("::").next().unwrap_or("").to_string();
            if !n.is_empty() && !is_keyword(&n) {
                found.push((from + all.start(), n));
            }
        }
        for (pos, kernel) in found {
            let line = self.line_of(pos);
            let via_macro = self.expansion_at(pos).map(|e| e.name.clone());
            self.out.launches.push(LaunchSite {
                caller,
                kernel,
                line,
                via_macro,
                resolved: Vec::new(),
            });
        }
    }
}

/// A call found in a body: callee, line, byte, and the call expression (none when read
/// off the text of an ERROR node).
type Found<'s, 't> = (&'s str, u32, usize, Option<Node<'t>>);

/// One post-order visit of [`Walk::calls_in`]: a call expression, or the `name(` calls
/// in the text of an ERROR node (pushed backwards: the caller reverses the list).
fn visit_for_calls<'s, 't>(
    n: Node<'t>,
    src: &'s str,
    line_starts: &[usize],
    found: &mut Vec<Found<'s, 't>>,
    errors: &mut u32,
) {
    if n.kind_id() == node_kinds().call_expression {
        if let Some(name) = n
            .child_by_field_name("function")
            .and_then(|f| callee_name(f, src))
        {
            found.push((
                name,
                n.start_position().row as u32 + 1,
                n.start_byte(),
                Some(n),
            ));
        }
    } else if n.is_error() {
        *errors += 1;
        for (name, pos) in text_calls(&src[n.byte_range()]).into_iter().rev() {
            let abs = n.start_byte() + pos;
            let line = line_starts.partition_point(|&s| s <= abs) as u32;
            found.push((name, line, abs, None));
        }
    }
}

/// The name node of a function declarator and the class qualifiers before it.
fn function_name<'t>(decl: Node<'t>, src: &str) -> Option<(Node<'t>, Vec<String>)> {
    let mut n = decl;
    // Unwrap pointer/reference declarators down to the function declarator.
    for _ in 0..8 {
        match n.kind() {
            "function_declarator" => break,
            "pointer_declarator"
            | "reference_declarator"
            | "parenthesized_declarator"
            | "attributed_declarator" => {
                n = n
                    .child_by_field_name("declarator")
                    .or_else(|| n.named_child(0))?;
            }
            _ => return None,
        }
    }
    if n.kind() != "function_declarator" {
        return None;
    }
    let mut name = n.child_by_field_name("declarator")?;
    let mut quals = Vec::new();
    loop {
        match name.kind() {
            "qualified_identifier" => {
                if let Some(s) = name.child_by_field_name("scope") {
                    quals.push(src[s.byte_range()].to_string());
                }
                name = name.child_by_field_name("name")?;
            }
            "template_function" => name = name.child_by_field_name("name")?,
            "identifier" | "field_identifier" | "destructor_name" | "operator_name" => {
                return Some((name, quals))
            }
            _ => return None,
        }
    }
}

fn parameter_list(decl: Node) -> Option<Node> {
    let mut n = decl;
    for _ in 0..8 {
        if n.kind() == "function_declarator" {
            break;
        }
        n = n
            .child_by_field_name("declarator")
            .or_else(|| n.named_child(0))?;
    }
    n.child_by_field_name("parameters")
}

/// How many parameters are arrays of pointers: `const T* const* x`, `T* const x[]`
/// (a batch), not `T** work` (an output pointer).
fn pointer_arrays(decl: Node, src: &str) -> u16 {
    let Some(params) = parameter_list(decl) else {
        return 0;
    };
    let mut c = params.walk();
    params
        .named_children(&mut c)
        .filter(|p| {
            let t: String = src[p.byte_range()]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            t.contains("*const*") || (t.contains('*') && t.contains("[]"))
        })
        .count() as u16
}

/// The argument counts a function declarator accepts: (without defaults, all), with
/// `u16::MAX` as the upper bound after a `...` (C varargs or a parameter pack).
fn arity(decl: Node) -> Option<(u16, u16)> {
    let params = parameter_list(decl)?;
    if params.has_error() {
        return None;
    }
    let (mut min, mut max) = (0u16, 0u16);
    let mut c = params.walk();
    for p in params.named_children(&mut c) {
        match p.kind() {
            "parameter_declaration" => {
                // `(void)` declares no parameter.
                let void = p.child_by_field_name("declarator").is_none()
                    && p.child_by_field_name("type")
                        .is_some_and(|t| t.kind() == "primitive_type" && t.byte_range().len() == 4);
                if !void {
                    min += 1;
                    max += 1;
                }
            }
            "optional_parameter_declaration" => max += 1,
            "variadic_parameter_declaration" => return Some((min, u16::MAX)),
            _ => {}
        }
    }
    // A C-style `...` is an anonymous child, not a named one.
    let mut c = params.walk();
    if params.children(&mut c).any(|k| k.kind() == "...") {
        return Some((min, u16::MAX));
    }
    Some((min, max))
}

/// The scope a qualified callee names (`::sqrt` -> `""`, `std::abs` -> `"std"`,
/// `rocblas::internal::f<T>` -> `"rocblas::internal"`), template arguments and spaces
/// dropped; `None` when the name is not qualified.
fn call_qualifier(f: Node, src: &str) -> Option<String> {
    let f = match f.kind() {
        "template_function" => f.child_by_field_name("name")?,
        _ => f,
    };
    if f.kind() != "qualified_identifier" {
        return None;
    }
    let text = &src[f.byte_range()];
    let mut out = String::new();
    let mut depth = 0i32;
    for ch in text.chars() {
        match ch {
            '<' => depth += 1,
            '>' => depth -= 1,
            c if depth == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
    }
    let scope = out.rsplit_once("::").map_or("", |(q, _)| q);
    Some(scope.trim_start_matches("::").to_string())
}

/// The unqualified name a call expression calls, if it is a plain name.
fn callee_name<'s>(f: Node, src: &'s str) -> Option<&'s str> {
    match f.kind() {
        "identifier" | "field_identifier" => Some(&src[f.byte_range()]),
        "qualified_identifier" => callee_name(f.child_by_field_name("name")?, src),
        "template_function" | "template_method" => callee_name(f.child_by_field_name("name")?, src),
        "field_expression" => callee_name(f.child_by_field_name("field")?, src),
        "parenthesized_expression" => callee_name(f.named_child(0)?, src),
        _ => None,
    }
}

fn call_text_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\b([A-Za-z_]\w*)\s*\(").expect("static regex"))
}

fn text_calls(text: &str) -> Vec<(&str, usize)> {
    call_text_regex()
        .captures_iter(text)
        .filter_map(|c| {
            let m = c.get(1)?;
            (!is_keyword(m.as_str())).then(|| (m.as_str(), m.start()))
        })
        .collect()
}

/// Grammar ids of the node kinds the walk tests on every node (a number compare
/// instead of a name lookup).
struct NodeKinds {
    call_expression: u16,
    function_definition: u16,
    comment: u16,
}

fn node_kinds() -> &'static NodeKinds {
    static KINDS: OnceLock<NodeKinds> = OnceLock::new();
    KINDS.get_or_init(|| {
        let lang: tree_sitter::Language = tree_sitter_cpp::LANGUAGE.into();
        NodeKinds {
            call_expression: lang.id_for_node_kind("call_expression", true),
            function_definition: lang.id_for_node_kind("function_definition", true),
            comment: lang.id_for_node_kind("comment", true),
        }
    })
}

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "if" | "for"
            | "while"
            | "switch"
            | "return"
            | "sizeof"
            | "alignof"
            | "decltype"
            | "catch"
            | "static_cast"
            | "reinterpret_cast"
            | "const_cast"
            | "dynamic_cast"
            | "static_assert"
            | "do"
            | "else"
            | "case"
            | "new"
            | "delete"
            | "throw"
            | "noexcept"
            | "operator"
            | "template"
            | "typename"
            | "defined"
            | "constexpr"
            | "auto"
            | "void"
    )
}

/// The kernel named by the first argument of a launch call: `(k<T, N>)`, `k`, `ns::k<..>`,
/// or `HIP_KERNEL_NAME(k<...>)`.
fn kernel_of_first_arg(after_paren: &str) -> Option<String> {
    let mut s = after_paren.trim_start();
    loop {
        if let Some(r) = s.strip_prefix('(') {
            s = r.trim_start();
        } else if let Some(r) = s.strip_prefix("HIP_KERNEL_NAME") {
            s = r.trim_start();
        } else {
            break;
        }
    }
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == ' '))
        .unwrap_or(s.len());
    let path: String = s[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let name = path.rsplit("::").next()?.to_string();
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_calls_keep_the_scope_they_name() {
        let src = "struct C {\n  float sqrt() const { return ::sqrt(v) + std::abs(v) + \
rocblas::internal::f<float, 2>(v) + C::g() + h(v) + obj.m(v); }\n  float v;\n};\n";
        let ex = extract("a.hpp", src, &[]);
        let got: Vec<(&str, Option<&str>)> = ex
            .calls
            .iter()
            .map(|c| (c.callee.as_str(), c.qualifier.as_deref()))
            .collect();
        for want in [
            ("sqrt", Some("")),
            ("abs", Some("std")),
            ("f", Some("rocblas::internal")),
            ("g", Some("C")),
            ("h", None),
            ("m", None),
        ] {
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
    }

    #[test]
    fn declarations_without_braces_are_blanked_and_nothing_else() {
        let src = "namespace rocblas {\nrocblas_status f(int n);\nusing T = float;\n\
template rocblas_status g<float>(float*);\nstruct S { S() = default; int v; } s;\n\
enum E { A, B } e;\nconst int t[] = {1, 2};\nint h(int x) { int y = 1; return k(y); }\n\
int h2(int);\n}\nextern \"C\" { int api(int); }\n";
        let out = blank_declarations(src);
        assert_eq!(out.len(), src.len(), "offsets hold");
        assert_eq!(
            out.matches('\n').count(),
            src.matches('\n').count(),
            "lines hold"
        );
        // Prototypes, explicit instantiations and data members at namespace, class and
        // extern "C" level go, as does a prototype after a function body.
        for gone in [
            "f(int n)", "g<float>", "using T", "int v;", "h2(int)", "api(int)",
        ] {
            assert!(!out.contains(gone), "{gone} is blanked: {out}");
        }
        // Definitions, declarators after a class or enum body, an
        // initializer's `;` and a function body's statements stay.
        for kept in [
            "S() = default;",
            "} s;",
            "} e;",
            "{1, 2};",
            "int y = 1;",
            "return k(y);",
        ] {
            assert!(out.contains(kept), "{kept} is kept: {out}");
        }
        // What the index reads is the same either way.
        let a = extract("a.cpp", src, &[]);
        let names = |e: &Extracted| e.symbols.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&a), ["S", "h"]);
        assert_eq!(
            a.calls
                .iter()
                .map(|c| c.callee.as_str())
                .collect::<Vec<_>>(),
            ["k"]
        );
    }

    #[test]
    fn kernels_helpers_and_launches() {
        let src = r#"
template <int NB, typename T>
static __global__ __launch_bounds__((NB)) void scal_kernel(T* x)
{
    x[threadIdx.x] = helper(x[0]);
}
__device__ __attribute__((always_inline)) float helper(float v) { return v; }
namespace {
template <typename T>
int launcher(T* x)
{
    hipLaunchKernelGGL((scal_kernel<256, T>), dim3(1), dim3(256), 0, 0, x);
    other<<<1, 2>>>(x);
    return check(x);
}
}
extern "C" int api(float* x) try { return launcher(x); } catch(...) { return 1; }
"#;
        let ex = extract("a.cpp", src, &[]);
        let names: Vec<(&str, SymbolKind)> = ex
            .symbols
            .iter()
            .map(|s| (s.name.as_str(), s.kind))
            .collect();
        assert_eq!(
            names,
            [
                ("scal_kernel", SymbolKind::Kernel),
                ("helper", SymbolKind::DeviceHelper),
                ("launcher", SymbolKind::Function),
                ("api", SymbolKind::Function)
            ]
        );
        let k = &ex.symbols[0];
        assert_eq!((k.line, k.name_line, k.end_line), (2, 3, 6));
        assert_eq!(k.launch_bounds.as_deref(), Some("NB"));
        assert!(k.is_template);
        assert_eq!(ex.symbols[2].scope, "(anonymous)");
        assert!(ex.symbols[3].extern_c);
        let launches: Vec<(&str, u32)> = ex
            .launches
            .iter()
            .map(|l| (l.kernel.as_str(), l.line))
            .collect();
        assert_eq!(launches, [("scal_kernel", 12), ("other", 13)]);
        assert!(ex
            .calls
            .iter()
            .any(|c| c.callee == "launcher" && c.caller == 3 && c.line == 17));
        assert!(ex
            .calls
            .iter()
            .any(|c| c.callee == "check" && c.caller == 2));
        assert!(ex
            .calls
            .iter()
            .any(|c| c.callee == "helper" && c.caller == 0 && c.line == 5));
    }

    #[test]
    fn arity_counts_defaults_and_packs() {
        let src = "int f(int a, float* b = nullptr) { return g(a, b, 1); }\n\
                   template <typename... A> void h(int x, A... rest) { f(x); }\n\
                   void v(void) { h(1, 2, 3); }\n";
        let ex = extract("a.cpp", src, &[]);
        let ar: Vec<Option<(u16, u16)>> = ex.symbols.iter().map(|s| s.arity).collect();
        assert_eq!(ar, [Some((1, 2)), Some((1, u16::MAX)), Some((0, 0))]);
        let args: Vec<(&str, Option<u16>)> = ex
            .calls
            .iter()
            .map(|c| (c.callee.as_str(), c.args))
            .collect();
        assert!(args.contains(&("g", Some(3))), "{args:?}");
        assert!(args.contains(&("f", Some(1))), "{args:?}");
        assert!(args.contains(&("h", Some(3))), "{args:?}");
    }

    #[test]
    fn launched_template_args_blanked_for_the_parser_only() {
        let src =
            "void l(float* x) { hipLaunchKernelGGL((k<float, (N > 2), f<1>>), g, b, 0, s, x); }";
        let parsed = blank_launched_template_args(src);
        assert_eq!(parsed.len(), src.len());
        assert!(parsed.contains("((k ") && !parsed.contains('<'), "{parsed}");
        assert!(parsed.contains("), g, b, 0, s, x);"), "{parsed}");
        // Not a launch: left alone.
        assert_eq!(
            blank_launched_template_args("a < b, c > d;"),
            "a < b, c > d;"
        );
        let ex = extract("a.cpp", src, &[]);
        assert_eq!(ex.launches[0].kernel, "k");
        let call = ex.calls.iter().find(|c| c.callee == "hipLaunchKernelGGL");
        assert_eq!(call.map(|c| c.args), Some(Some(6)));
        assert_eq!(ex.errors, 0);
    }

    #[test]
    fn first_arg_forms() {
        assert_eq!(kernel_of_first_arg("(k<1, T>), g").as_deref(), Some("k"));
        assert_eq!(kernel_of_first_arg(" ns::k, g").as_deref(), Some("k"));
        assert_eq!(
            kernel_of_first_arg("HIP_KERNEL_NAME(k<2>), g").as_deref(),
            Some("k")
        );
    }
}
