//! Reading a function's expanded text: where its body is, which statements it holds
//! and the conditions each statement runs under.
//!
//! The text is the index's expanded reading of the file (comments gone, macros
//! expanded, branches the build leaves out blank, one line per original line), so a
//! byte offset maps back to an original line and what is read here is what compiles.

use std::collections::HashMap;

/// A file's expanded text with its line starts.
pub struct Text {
    /// The text.
    pub s: String,
    starts: Vec<usize>,
}

impl Text {
    /// Wraps expanded text.
    pub fn new(s: String) -> Text {
        let mut starts = vec![0];
        starts.extend(s.match_indices('\n').map(|(i, _)| i + 1));
        Text { s, starts }
    }

    /// Offset of the start of 1-based `line` (the end of the text past the last line).
    pub fn offset(&self, line: u32) -> usize {
        let l = (line.max(1) - 1) as usize;
        self.starts.get(l).copied().unwrap_or(self.s.len())
    }

    /// 1-based line holding offset `off`.
    pub fn line_of(&self, off: usize) -> u32 {
        match self.starts.binary_search(&off) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }

    /// The text of 1-based `line`.
    pub fn line(&self, line: u32) -> &str {
        let a = self.offset(line);
        let b = self.offset(line + 1);
        &self.s[a..b.max(a)]
    }
}

/// One statement and the conditions it runs under.
#[derive(Debug, Clone)]
pub struct Stmt {
    /// Offset of its first byte.
    pub start: usize,
    /// Offset one past its last byte.
    pub end: usize,
    /// Conditions, outermost first.
    pub conds: Vec<String>,
    /// Offset of the `if`/`for`/... that introduced each condition.
    pub cond_at: Vec<usize>,
}

/// A function body read into statements.
pub struct Body {
    /// Offset of the `{` opening the body.
    pub open: usize,
    /// Offset of the matching `}`.
    pub close: usize,
    /// Statements, in order (nested ones listed on their own).
    pub stmts: Vec<Stmt>,
    /// `if` conditions: offset of the `if`, the condition, and the conditions around it.
    pub branches: Vec<(usize, String, Vec<String>)>,
}

impl Body {
    /// The innermost statement holding `off`.
    pub fn stmt_at(&self, off: usize) -> Option<&Stmt> {
        self.stmts
            .iter()
            .filter(|s| s.start <= off && off < s.end.max(s.start + 1))
            .min_by_key(|s| s.end - s.start)
    }

    /// Conditions at `off`: those of the statement holding it, else none.
    pub fn conds_at(&self, off: usize) -> (Vec<String>, Vec<usize>) {
        self.stmt_at(off)
            .map(|s| (s.conds.clone(), s.cond_at.clone()))
            .unwrap_or_default()
    }

    /// Each `return` statement ending before offset `at` of `src` (the text the body
    /// was read from), with its own conditions: those past the ones it shares with `at`.
    pub fn returns_before<'b>(&'b self, src: &str, at: usize) -> Vec<(&'b Stmt, &'b [String])> {
        let (_, mine) = self.conds_at(at);
        self.stmts
            .iter()
            .filter(|s| s.end <= at)
            .filter_map(|s| {
                let rest = src
                    .get(s.start..s.end)?
                    .trim_start()
                    .strip_prefix("return")?;
                if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    return None;
                }
                let shared = s
                    .cond_at
                    .iter()
                    .zip(&mine)
                    .take_while(|(a, b)| a == b)
                    .count();
                Some((s, &s.conds[shared.min(s.conds.len())..]))
            })
            .collect()
    }
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Squashes whitespace and the spaces the expander puts between tokens, for display.
pub fn tidy(s: &str) -> String {
    let mut out = String::new();
    for w in s.split_whitespace() {
        if let (Some(last), Some(first)) = (out.chars().last(), w.chars().next()) {
            let word_end = last.is_ascii_alphanumeric() || matches!(last, '_' | '>' | ')' | ']');
            let keyword = ["return", "case", "else"].iter().any(|k| {
                out.ends_with(k)
                    && !out[..out.len() - k.len()]
                        .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            });
            let glue = matches!(first, ',' | ')' | ']' | ';' | '.')
                || w.starts_with("->")
                || w.starts_with("::")
                || matches!(last, '(' | '[' | '.' | '!' | '~')
                || out.ends_with("->")
                || out.ends_with("::")
                || (matches!(first, '(' | '[') && word_end && !keyword);
            if !glue {
                out.push(' ');
            }
        }
        out.push_str(w);
    }
    out
}

/// Text as written on one line: each run of whitespace outside string and character
/// literals becomes one space, and the literals keep theirs (`". Make sure"` stays as
/// the code has it, where [`tidy`] would glue the `.` to what came before).
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in s.trim().chars() {
        match quote {
            Some(q) => {
                out.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            None => {
                if c == '"' || c == '\'' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// Parses statements over expanded text.
pub struct Scanner<'a> {
    s: &'a [u8],
    src: &'a str,
    stmts: Vec<Stmt>,
    branches: Vec<(usize, String, Vec<String>)>,
}

impl<'a> Scanner<'a> {
    /// A scanner over `src`.
    pub fn new(src: &'a str) -> Scanner<'a> {
        Scanner {
            s: src.as_bytes(),
            src,
            stmts: Vec::new(),
            branches: Vec::new(),
        }
    }

    fn ws(&self, mut i: usize) -> usize {
        while i < self.s.len() && self.s[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    }

    fn word(&self, i: usize) -> &'a str {
        if i >= self.s.len() || !is_ident(self.s[i]) || (i > 0 && is_ident(self.s[i - 1])) {
            return "";
        }
        let mut j = i;
        while j < self.s.len() && is_ident(self.s[j]) {
            j += 1;
        }
        &self.src[i..j]
    }

    /// Offset of the bracket closing the one at `i` (string and character literals
    /// skipped), or the end of the text.
    pub fn matching(&self, i: usize) -> usize {
        let (open, close) = match self.s.get(i) {
            Some(b'(') => (b'(', b')'),
            Some(b'{') => (b'{', b'}'),
            Some(b'[') => (b'[', b']'),
            Some(b'<') => (b'<', b'>'),
            _ => return i,
        };
        let mut depth = 0usize;
        let mut k = i;
        while k < self.s.len() {
            let c = self.s[k];
            if c == b'"' || c == b'\'' {
                k = self.literal_end(k);
                continue;
            }
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            } else if open == b'<' && matches!(c, b';' | b'{' | b'}') {
                return self.s.len();
            }
            k += 1;
        }
        self.s.len()
    }

    fn literal_end(&self, i: usize) -> usize {
        let q = self.s[i];
        let mut k = i + 1;
        while k < self.s.len() && self.s[k] != q && self.s[k] != b'\n' {
            if self.s[k] == b'\\' {
                k += 1;
            }
            k += 1;
        }
        k + 1
    }

    /// Reads the function whose name is written at or after `from`: the first
    /// `name (` there, then the body after its parameter list.
    pub fn function(mut self, name: &str, from: usize, to: usize) -> Option<Body> {
        let hay = &self.src[from..to.min(self.src.len())];
        let mut at = None;
        for (k, _) in hay.match_indices(name) {
            let i = from + k;
            let j = i + name.len();
            if (i > 0 && is_ident(self.s[i - 1])) || (j < self.s.len() && is_ident(self.s[j])) {
                continue;
            }
            let p = self.ws(j);
            if self.s.get(p) == Some(&b'(') {
                at = Some(p);
                break;
            }
        }
        let p = at?;
        let mut k = self.matching(p) + 1;
        // Qualifiers, trailing return types, initializer lists: up to the body's brace.
        while k < self.s.len() && self.s[k] != b'{' {
            if self.s[k] == b';' {
                return None;
            }
            if self.s[k] == b'(' {
                k = self.matching(k);
            }
            k += 1;
        }
        let open = k;
        let close = self.matching(open);
        if close >= self.s.len() {
            return None;
        }
        self.block(open + 1, close, &[], &[]);
        Some(Body {
            open,
            close,
            stmts: self.stmts,
            branches: self.branches,
        })
    }

    fn block(&mut self, mut i: usize, end: usize, conds: &[String], at: &[usize]) {
        let mut case: Option<(String, usize)> = None;
        // Labels with no statement between them share the statements after the last
        // (`case gesvd: case bdsqr: ...`), so they make one condition.
        let mut fresh_label = false;
        loop {
            i = self.ws(i);
            if i >= end {
                break;
            }
            let w = self.word(i);
            if w == "case" || w == "default" {
                let mut k = i + w.len();
                while k < end && !(self.s[k] == b':' && self.s.get(k + 1) != Some(&b':')) {
                    if self.s[k] == b':' {
                        k += 1;
                    }
                    k += 1;
                }
                let label = tidy(&self.src[i..k.min(end)]);
                case = match case.take() {
                    Some((before, o)) if fresh_label => Some((format!("{before}: {label}"), o)),
                    _ => Some((label, i)),
                };
                fresh_label = true;
                i = k + 1;
                continue;
            }
            fresh_label = false;
            let (mut c, mut a) = (conds.to_vec(), at.to_vec());
            if let Some((l, o)) = &case {
                c.push(l.clone());
                a.push(*o);
            }
            let n = self.stmt(i, end, &c, &a);
            i = if n <= i { i + 1 } else { n };
        }
    }

    fn stmt(&mut self, i: usize, end: usize, conds: &[String], at: &[usize]) -> usize {
        let i = self.ws(i);
        if i >= end {
            return end;
        }
        match self.s[i] {
            b'{' => {
                let c = self.matching(i).min(end);
                self.block(i + 1, c, conds, at);
                return c + 1;
            }
            b'}' => return i,
            _ => {}
        }
        let w = self.word(i);
        match w {
            "if" => {
                let mut j = self.ws(i + 2);
                let constexpr = self.word(j) == "constexpr";
                if constexpr {
                    j = self.ws(j + 9);
                }
                if self.s.get(j) == Some(&b'(') {
                    let e = self.matching(j).min(end);
                    let cond = tidy(&self.src[j + 1..e]);
                    let cond = if constexpr {
                        format!("constexpr {cond}")
                    } else {
                        cond
                    };
                    self.branches.push((i, cond.clone(), conds.to_vec()));
                    let (mut c, mut a) = (conds.to_vec(), at.to_vec());
                    c.push(cond.clone());
                    a.push(i);
                    let after = self.stmt(e + 1, end, &c, &a);
                    let k = self.ws(after);
                    if k < end && self.word(k) == "else" {
                        let (mut c, mut a) = (conds.to_vec(), at.to_vec());
                        c.push(format!("not ({cond})"));
                        a.push(k);
                        return self.stmt(k + 4, end, &c, &a);
                    }
                    return after;
                }
            }
            // A launch macro's wrapper (its empty-grid test and error return) is read
            // as the launch it makes, one statement, as before `do` was read.
            "do" if !self.src[i..self.matching(self.ws(i + 2)).min(end)]
                .contains("hipLaunchKernelGGL") =>
            {
                // `do { ... } while(0)` (a macro's statement wrapper) runs its body
                // once: no loop. Any other `do` loops on its `while` condition.
                let body = self.ws(i + 2);
                let (mut c, mut a) = (conds.to_vec(), at.to_vec());
                let after_body = {
                    let probe = if self.s.get(body) == Some(&b'{') {
                        self.matching(body).min(end) + 1
                    } else {
                        body
                    };
                    self.ws(probe)
                };
                let mut next = after_body;
                let mut head = None;
                if self.word(after_body) == "while" {
                    let j = self.ws(after_body + 5);
                    if self.s.get(j) == Some(&b'(') {
                        let e = self.matching(j).min(end);
                        head = Some(tidy(&self.src[j + 1..e]));
                        next = self.ws(e + 1);
                        if self.s.get(next) == Some(&b';') {
                            next += 1;
                        }
                    }
                }
                if let Some(h) = head.as_deref().filter(|h| *h != "0" && *h != "false") {
                    c.push(format!("loop: do while ({h})"));
                    a.push(i);
                }
                self.stmt(body, end, &c, &a);
                return next.max(body + 1);
            }
            "for" | "while" | "switch" => {
                let j = self.ws(i + w.len());
                if self.s.get(j) == Some(&b'(') {
                    let e = self.matching(j).min(end);
                    let head = tidy(&self.src[j + 1..e]);
                    let (mut c, mut a) = (conds.to_vec(), at.to_vec());
                    c.push(if w == "switch" {
                        format!("switch ({head})")
                    } else {
                        format!("loop: {w} ({head})")
                    });
                    a.push(i);
                    return self.stmt(e + 1, end, &c, &a);
                }
            }
            _ => {}
        }
        // Any other statement: up to its `;` outside brackets.
        let mut k = i;
        while k < end {
            match self.s[k] {
                b'"' | b'\'' => {
                    k = self.literal_end(k);
                    continue;
                }
                b'(' | b'[' | b'{' => k = self.matching(k).min(end),
                b';' => break,
                b'}' => {
                    self.push(i, k, conds, at);
                    return k;
                }
                _ => {}
            }
            k += 1;
        }
        self.push(i, (k + 1).min(end), conds, at);
        k + 1
    }

    fn push(&mut self, start: usize, end: usize, conds: &[String], at: &[usize]) {
        self.stmts.push(Stmt {
            start,
            end,
            conds: conds.to_vec(),
            cond_at: at.to_vec(),
        });
    }
}

/// A variable declared at namespace scope: the declaration as written (tidied) and the
/// offset of its first byte.
pub type NamespaceVariable = (String, usize);

/// The variables `src` (expanded text) declares at namespace scope, by name: what has
/// static storage duration without a `static` inside a function. Function bodies,
/// classes and brace initializers are stepped over; prototypes, `typedef`s, `using`s
/// and templates declare no variable.
pub fn namespace_variables(src: &str) -> HashMap<String, NamespaceVariable> {
    let sc = Scanner::new(src);
    let s = src.as_bytes();
    let mut out = HashMap::new();
    let (mut i, mut start) = (0, 0);
    while i < s.len() {
        match s[i] {
            b'"' | b'\'' => {
                i = sc.literal_end(i);
                continue;
            }
            b';' => {
                if let Some((name, decl)) = variable_declared(&src[start..i]) {
                    let lead = src[start..i].len() - src[start..i].trim_start().len();
                    out.entry(name).or_insert((decl, start + lead));
                }
                start = i + 1;
            }
            b'{' => {
                let head = tidy(&src[start..i]);
                let namespace = head == "extern \"C\""
                    || head.starts_with("namespace")
                    || head.starts_with("inline namespace");
                if namespace {
                    start = i + 1;
                } else if head.ends_with('=') {
                    // `T x = { ... };`: the statement goes on past the braces.
                    i = sc.matching(i);
                } else {
                    // A function, class or enum body: nothing in it is at namespace scope.
                    i = sc.matching(i);
                    start = i + 1;
                }
            }
            b'}' => start = i + 1,
            _ => {}
        }
        i += 1;
    }
    out
}

/// The name and the tidied text of a variable declaration (`static thread_local size_t
/// t_size`, `int g = f()`); `None` for anything else.
fn variable_declared(stmt: &str) -> Option<(String, String)> {
    let decl = tidy(stmt);
    let first = decl.split([' ', '<', '(']).next().unwrap_or("");
    if matches!(
        first,
        "" | "typedef"
            | "using"
            | "template"
            | "friend"
            | "return"
            | "namespace"
            | "struct"
            | "class"
            | "enum"
            | "union"
    ) || decl.starts_with('#')
    {
        return None;
    }
    let lhs = decl
        .split_once(" = ")
        .map_or(decl.as_str(), |(l, _)| l)
        .trim();
    if lhs.contains('(') || lhs.contains("operator") || lhs.contains('{') {
        return None;
    }
    let lhs = lhs[..lhs.find('[').unwrap_or(lhs.len())].trim_end();
    let from = lhs.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))? + 1;
    let (ty, name) = lhs.split_at(from);
    let ty = ty.trim();
    let typed = ty
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| !w.is_empty() && !matches!(w, "static" | "extern" | "const" | "volatile"));
    (typed && !name.is_empty() && !name.as_bytes()[0].is_ascii_digit())
        .then(|| (name.to_string(), decl.clone()))
}

/// Splits `s` at top-level commas (brackets and, where `angles`, `<>` nest).
pub fn split_args(s: &str, angles: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '<' if angles => depth += 1,
            '>' if angles => depth -= 1,
            ',' if depth == 0 => {
                out.push(tidy(&cur));
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(tidy(&cur));
    }
    out
}

/// Evaluates an integer expression of literals, `+ - * / %` and parentheses.
pub fn eval_int(s: &str) -> Option<i64> {
    let toks: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = 0;
    let v = expr(&toks, &mut p)?;
    (p == toks.len()).then_some(v)
}

fn expr(t: &[char], p: &mut usize) -> Option<i64> {
    let mut v = term(t, p)?;
    while *p < t.len() && (t[*p] == '+' || t[*p] == '-') {
        let op = t[*p];
        *p += 1;
        let r = term(t, p)?;
        v = if op == '+' {
            v.checked_add(r)?
        } else {
            v.checked_sub(r)?
        };
    }
    Some(v)
}

fn term(t: &[char], p: &mut usize) -> Option<i64> {
    let mut v = atom(t, p)?;
    while *p < t.len() && matches!(t[*p], '*' | '/' | '%') {
        let op = t[*p];
        *p += 1;
        let r = atom(t, p)?;
        v = match op {
            '*' => v.checked_mul(r)?,
            '/' => v.checked_div(r)?,
            _ => v.checked_rem(r)?,
        };
    }
    Some(v)
}

fn atom(t: &[char], p: &mut usize) -> Option<i64> {
    if *p < t.len() && t[*p] == '(' {
        *p += 1;
        let v = expr(t, p)?;
        if t.get(*p) != Some(&')') {
            return None;
        }
        *p += 1;
        return Some(v);
    }
    let start = *p;
    while *p < t.len() && t[*p].is_ascii_digit() {
        *p += 1;
    }
    if *p == start {
        return None;
    }
    let v: i64 = t[start..*p].iter().collect::<String>().parse().ok()?;
    // Integer suffixes (`256u`, `64UL`).
    while *p < t.len() && matches!(t[*p], 'u' | 'U' | 'l' | 'L') {
        *p += 1;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_follow_if_else_chains_and_loops() {
        let src = "rocblas_status f(int n, int incx) {\n if(n <= 0 || incx <= 0)\n  return rocblas_status_success;\n if(x)\n { do_a(); }\n else if(y) {\n  for(int i = 0; i < n; i++) g(i);\n } else\n  h();\n switch(m) { case 1: k1(); break; case 2:\n case 3: k3(); break; default: k2(); }\n}\n";
        let b = Scanner::new(src).function("f", 0, src.len()).unwrap();
        let at = |needle: &str| b.conds_at(src.find(needle).unwrap()).0;
        assert_eq!(at("return"), ["n <= 0 || incx <= 0"]);
        assert_eq!(at("do_a"), ["x"]);
        assert_eq!(
            at("g(i)"),
            ["not (x)", "y", "loop: for (int i = 0; i < n; i++)"]
        );
        assert_eq!(at("h()"), ["not (x)", "not (y)"]);
        assert_eq!(at("k1"), ["switch (m)", "case 1"]);
        assert_eq!(at("k3"), ["switch (m)", "case 2: case 3"]);
        assert_eq!(at("k2"), ["switch (m)", "default"]);
        assert!(at("switch").is_empty() || at("switch") == ["switch (m)"]);
    }

    #[test]
    fn a_macro_do_while_0_is_no_loop_and_its_body_is_read() {
        let src = "rocblas_status f(rocblas_handle handle) {\n do { if ( ( handle ) -> is_device_memory_size_query ( ) ) return rocblas_status_size_unchanged ; } while ( 0 );\n after();\n do { step(); } while (k < n);\n}\n";
        let b = Scanner::new(src).function("f", 0, src.len()).unwrap();
        let at = |needle: &str| b.conds_at(src.find(needle).unwrap()).0;
        assert_eq!(at("return"), ["(handle)->is_device_memory_size_query()"]);
        assert!(at("after").is_empty());
        assert_eq!(at("step"), ["loop: do while (k < n)"]);
        // A launch macro's wrapper stays one statement, under the conditions around it.
        let src = "void f() {\n if(a)\n do { if(g.x != 0) { hipLaunchKernelGGL(k, g, t, 0, s); } } while(0);\n}\n";
        let b = Scanner::new(src).function("f", 0, src.len()).unwrap();
        assert_eq!(b.conds_at(src.find("hipLaunch").unwrap()).0, ["a"]);
    }

    #[test]
    fn namespace_variables_are_found_outside_functions_and_classes() {
        let src = "namespace { int hidden_count = 0; }\nstatic thread_local size_t t_size;\nstruct S { int member; };\nint f(int a);\ntypedef int alias;\nstatic const char* names[] = { \"a\", \"b\" };\nvoid g() { int local = 1; t_size = local; }\nextern \"C\" { float scale = 2.0f; }\n";
        let v = namespace_variables(src);
        let mut names: Vec<&str> = v.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["hidden_count", "names", "scale", "t_size"]);
        assert_eq!(v["t_size"].0, "static thread_local size_t t_size");
        assert_eq!(&src[v["t_size"].1..v["t_size"].1 + 6], "static");
        assert_eq!(
            v["names"].0,
            "static const char* names[] = { \"a\", \"b\" }"
        );
    }

    #[test]
    fn integer_expressions_evaluate() {
        assert_eq!(eval_int("(256 - 1) / (64 * 2) + 1"), Some(2));
        assert_eq!(eval_int("256u"), Some(256));
        assert_eq!(eval_int("n + 1"), None);
    }

    #[test]
    fn one_line_keeps_what_literals_hold() {
        assert_eq!(
            one_line("static auto& once = rocblas_cerr\n   << \"\\nNo paths matched \" << dir\n   << \". Make  sure\";"),
            "static auto& once = rocblas_cerr << \"\\nNo paths matched \" << dir << \". Make  sure\";"
        );
    }

    #[test]
    fn tidy_joins_expander_tokens() {
        assert_eq!(
            tidy("handle -> pointer_mode == rocblas_pointer_mode_device"),
            "handle->pointer_mode == rocblas_pointer_mode_device"
        );
        assert_eq!(tidy("f ( a , b )"), "f(a, b)");
    }
}
