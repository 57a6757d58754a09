//! Which branch a quoted line sits in, against the path a sentence puts it on.
//!
//! "The launcher uses `int32_t blocks = (n - 1) / (NB * 2) + 1;` for the half-precision
//! path" quotes a real line, so the quote check keeps it; but the line sits under
//! `if(using_rocblas_float && incx == 1)`, the float path. The sentence's path (a
//! precision, a pointer mode, unit or non-unit stride) is compared with the conditions
//! that hold where the quote is: those of each `if` whose branch holds it (every term of
//! an `&&`), and the negation of a one-term `if` whose `else` holds it. A condition that
//! says nothing of the path (`n > 0`, a `||`, the `else` of an `&&`) contradicts
//! nothing, and a quote found in several places is wrong only where every place is.

use std::sync::OnceLock;

use regex::Regex;

use super::barrier::{matching, without_comments};
use super::grounding::ShownPiece;

/// The first sentence that quotes code of the slice for a path the code's branches
/// exclude there, described.
pub fn quote_off_path(prose: &str, pieces: &[ShownPiece]) -> Option<String> {
    let codes: Vec<String> = pieces.iter().map(|p| without_comments(p.text)).collect();
    for sentence in super::form::sentences(prose) {
        let paths = paths_said(sentence);
        if paths.is_empty() {
            continue;
        }
        let paths = &paths;
        for quote in quotes(sentence) {
            // Every place the quote is found: `None` where the path may hold there.
            let verdicts: Vec<Option<String>> = pieces
                .iter()
                .zip(&codes)
                .flat_map(|(p, code)| {
                    find_squashed(code, quote).into_iter().map(move |at| {
                        let held = holding(code, at);
                        let (path, why) = paths
                            .iter()
                            .find_map(|path| excluded(path, &held).map(|why| (path, why)))?;
                        let line = p.start as usize + code[..at].matches('\n').count();
                        Some(format!(
                            "`{}` ({}:{line}) is under {why}, not on the {} path the answer puts it on",
                            squeeze(quote),
                            p.file,
                            path.name()
                        ))
                    })
                })
                .collect();
            if !verdicts.is_empty() && verdicts.iter().all(Option::is_some) {
                return verdicts.into_iter().next().flatten();
            }
        }
    }
    None
}

/// A path a sentence names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Precision(Precision),
    PointerMode { device: bool },
    UnitStride(bool),
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Precision(p) => p.name(),
            Path::PointerMode { device: true } => "device pointer mode",
            Path::PointerMode { device: false } => "host pointer mode",
            Path::UnitStride(true) => "unit-stride",
            Path::UnitStride(false) => "non-unit-stride",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precision {
    Half,
    Float,
    Double,
    Complex,
}

impl Precision {
    fn name(self) -> &'static str {
        match self {
            Precision::Half => "half-precision",
            Precision::Float => "single-precision",
            Precision::Double => "double-precision",
            Precision::Complex => "complex",
        }
    }

    /// The precision a word of the sentence names.
    fn of_word(w: &str) -> Option<Precision> {
        match w.to_ascii_lowercase().as_str() {
            "half" | "fp16" => Some(Precision::Half),
            "single" | "float" | "fp32" => Some(Precision::Float),
            "double" | "fp64" => Some(Precision::Double),
            "complex" => Some(Precision::Complex),
            _ => None,
        }
    }

    /// The precision a condition's term tests for (`using_rocblas_float`,
    /// `std::is_same_v<T, rocblas_half>`); complex types name float or double too.
    fn of_term(t: &str) -> Option<Precision> {
        let t = t.to_ascii_lowercase();
        if t.contains("complex") {
            Some(Precision::Complex)
        } else if t.contains("bfloat") {
            None
        } else if t.contains("half") {
            Some(Precision::Half)
        } else if t.contains("double") {
            Some(Precision::Double)
        } else if t.contains("float") {
            Some(Precision::Float)
        } else {
            None
        }
    }
}

/// The paths a sentence puts something on: "for the half-precision path", "in the
/// float branch", "for double precision", "when the pointer mode is device", "for unit
/// stride".
fn paths_said(s: &str) -> Vec<Path> {
    static RE: OnceLock<[Regex; 3]> = OnceLock::new();
    let [precision, mode, stride] = RE.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        [
            r(r"(?i)\b(?:for|in|on|under|of)\s+(?:the\s+)?(half|fp16|single|float|fp32|double|fp64|complex)(?:[- ]precision)?[- ](?:path|branch|case|variant|code path)\b|\bfor\s+(half|single|double)[- ]precision\b"),
            r(r"(?i)\b(?:(device|host)[- ]pointer[- ]mode|pointer[- ]mode\s+(?:is\s+)?(?:rocblas_pointer_mode_)?(device|host)|rocblas_pointer_mode_(device|host)\s+(?:path|branch|case))\b"),
            r(r"(?i)\b(?:for|with|in|on)\s+(?:the\s+)?(non-?unit|unit)[- ]stride\b"),
        ]
    });
    let mut out = Vec::new();
    for c in precision.captures_iter(s) {
        let w = c.get(1).or(c.get(2)).expect("a group").as_str();
        out.extend(Precision::of_word(w).map(Path::Precision));
    }
    for c in mode.captures_iter(s) {
        let w = c
            .get(1)
            .or(c.get(2))
            .or(c.get(3))
            .expect("a group")
            .as_str();
        out.push(Path::PointerMode {
            device: w.eq_ignore_ascii_case("device"),
        });
    }
    for c in stride.captures_iter(s) {
        out.push(Path::UnitStride(c[1].eq_ignore_ascii_case("unit")));
    }
    out
}

/// The code spans of a sentence shaped like code (an operator, a call, a `;`).
fn quotes(sentence: &str) -> Vec<&str> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"`([^`\n]+)`").expect("static regex"));
    re.captures_iter(sentence)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .filter(|q| {
            let q = q.trim();
            q.len() >= 8 && (q.contains(';') || q.contains('=') || q.contains("->"))
        })
        .collect()
}

/// A term that holds at a place of the code: `(term, holds)`; `holds` false for the
/// negation of a one-term condition whose `else` the place is in.
type Term = (String, bool);

/// Why `path` cannot be the path where `held` holds: the condition that excludes it.
fn excluded(path: &Path, held: &[Term]) -> Option<String> {
    held.iter().find_map(|(t, holds)| {
        let t_tidy = squeeze(t);
        match *path {
            Path::Precision(p) => {
                let (t0, negated) = strip_not(t);
                let q = Precision::of_term(t0)?;
                let positive = *holds != negated;
                // `is_same<T, float>` holds: not the double path; `!is_same<T, half>`
                // holds: not the half path.
                let other =
                    positive && q != p && q != Precision::Complex && p != Precision::Complex;
                let not_this = !positive && q == p;
                (other || not_this).then(|| format!("`{}`", cond_text(&t_tidy, *holds)))
            }
            Path::PointerMode { device } => {
                let (t0, negated) = strip_not(t);
                let lower = t0.to_ascii_lowercase();
                let compares = lower.contains("pointer_mode") && lower.contains("==");
                if !compares && !lower.contains("!=") {
                    return None;
                }
                let names_device = lower.contains("pointer_mode_device");
                let names_host = lower.contains("pointer_mode_host");
                if names_device == names_host {
                    return None;
                }
                let equal = lower.contains("==") != negated;
                let mode_is_device = names_device == (equal == *holds);
                (mode_is_device != device).then(|| format!("`{}`", cond_text(&t_tidy, *holds)))
            }
            Path::UnitStride(unit) => {
                static RE: OnceLock<Regex> = OnceLock::new();
                let re = RE.get_or_init(|| {
                    Regex::new(r"^\s*\(*\s*inc[a-z]*\s*(==|!=)\s*1\s*\)*\s*$")
                        .expect("static regex")
                });
                let c = re.captures(t)?;
                let is_unit = (&c[1] == "==") == *holds;
                (is_unit != unit).then(|| format!("`{}`", cond_text(&t_tidy, *holds)))
            }
        }
    })
}

/// How a held term is shown: as written, or the `else` of it.
fn cond_text(t: &str, holds: bool) -> String {
    if holds {
        format!("if({t})")
    } else {
        format!("the else of if({t})")
    }
}

/// A term and whether it is negated (`!x`, `!(x)`).
fn strip_not(t: &str) -> (&str, bool) {
    let t = t.trim();
    match t.strip_prefix('!') {
        Some(rest) if !rest.starts_with('=') => (rest.trim(), true),
        _ => (t, false),
    }
}

/// Whitespace runs squeezed to one space.
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The terms that hold at offset `at` of `code`: each `if` (or `else if`) whose branch
/// holds it contributes every term of its `&&`; each one-term `if` whose `else` holds
/// it contributes its term, negated.
fn holding(code: &str, at: usize) -> Vec<Term> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"\bif\s*(?:constexpr\s*)?\(").expect("static regex"));
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for m in re.find_iter(code) {
        if m.start() > at {
            break;
        }
        let open = m.end() - 1;
        let Some(close) = matching(bytes, open) else {
            continue;
        };
        let cond = &code[open + 1..close];
        let Some(then_end) = statement_end(bytes, close + 1) else {
            continue;
        };
        if close < at && at <= then_end {
            out.extend(terms(cond).into_iter().map(|t| (t, true)));
            continue;
        }
        // The `else` part: everything of the statement after `else`.
        let rest = &code[then_end + 1..];
        let trimmed = rest.trim_start();
        let Some(after) = trimmed.strip_prefix("else") else {
            continue;
        };
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let else_at = code.len() - after.len();
        let Some(else_end) = statement_end(bytes, else_at) else {
            continue;
        };
        if else_at <= at && at <= else_end {
            let ts = terms(cond);
            if let [one] = ts.as_slice() {
                out.push((one.clone(), false));
            }
        }
    }
    out
}

/// The top-level `&&` terms of a condition, outer parentheses dropped; none when it
/// has a top-level `||` (no term of it must hold).
fn terms(cond: &str) -> Vec<String> {
    let mut c = cond.trim();
    while c.starts_with('(') && matching(c.as_bytes(), 0) == Some(c.len() - 1) {
        c = c[1..c.len() - 1].trim();
    }
    let bytes = c.as_bytes();
    let mut depth = 0i32;
    let mut out = Vec::new();
    let mut last = 0;
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'|' if depth == 0 && bytes.get(k + 1) == Some(&b'|') => return Vec::new(),
            b'&' if depth == 0 && bytes.get(k + 1) == Some(&b'&') => {
                out.push(c[last..k].trim().to_string());
                last = k + 2;
                k += 1;
            }
            _ => {}
        }
        k += 1;
    }
    out.push(c[last..].trim().to_string());
    out.retain(|t| !t.is_empty());
    out
}

/// The last offset of the statement starting at or after `from`: a block, an `if`
/// with its `else` chain, a loop with its body, or a plain statement up to its `;`.
fn statement_end(bytes: &[u8], from: usize) -> Option<usize> {
    let start = from
        + bytes
            .get(from..)?
            .iter()
            .position(|b| !b.is_ascii_whitespace())?;
    let rest = &bytes[start..];
    if rest[0] == b'{' {
        return matching(bytes, start);
    }
    let keyword = |k: &[u8]| {
        rest.starts_with(k)
            && rest
                .get(k.len())
                .is_some_and(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
    };
    for k in [&b"if"[..], b"for", b"while", b"switch"] {
        if !keyword(k) {
            continue;
        }
        let mut open = start + k.len();
        while open < bytes.len() && bytes[open] != b'(' {
            open += 1;
        }
        let close = matching(bytes, open)?;
        let end = statement_end(bytes, close + 1)?;
        if k == b"if" {
            let after = &bytes[end + 1..];
            let skip = after.iter().position(|b| !b.is_ascii_whitespace());
            if let Some(s) = skip {
                let a = &after[s..];
                if a.starts_with(b"else")
                    && a.get(4)
                        .is_none_or(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
                {
                    return statement_end(bytes, end + 1 + s + 4);
                }
            }
        }
        return Some(end);
    }
    let mut depth = 0i32;
    for (k, &b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' => depth -= 1,
            b';' if depth == 0 => return Some(k),
            _ => {}
        }
        if depth < 0 {
            return Some(k.saturating_sub(1));
        }
    }
    None
}

/// Where `quote` starts in `code`, whitespace aside on both sides: offsets into `code`.
fn find_squashed(code: &str, quote: &str) -> Vec<usize> {
    let q: Vec<u8> = quote.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if q.is_empty() {
        return Vec::new();
    }
    let (squashed, offsets): (Vec<u8>, Vec<usize>) = code
        .bytes()
        .enumerate()
        .filter(|(_, b)| !b.is_ascii_whitespace())
        .map(|(i, b)| (b, i))
        .unzip();
    squashed
        .windows(q.len())
        .enumerate()
        .filter(|(_, w)| *w == q.as_slice())
        .map(|(k, _)| offsets[k])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAUNCHER: &str = r#"    static constexpr bool using_rocblas_half
        = std::is_same_v<Ta, rocblas_half> && std::is_same_v<Tex, rocblas_half>;
    if(using_rocblas_float && incx == 1)
    {
        // Kernel function for improving the performance of SSCAL when incx==1
        int32_t blocks = (n - 1) / (NB * 2) + 1;
        dim3    grid(blocks, 1, batches);
        if(rocblas_pointer_mode_device == handle->pointer_mode)
            launch(rocblas_sscal_2_kernel, alpha);
        else // single alpha is on host
            launch(rocblas_sscal_2_kernel, *alpha);
    }
    else if(using_rocblas_half && incx == 1)
    {
        int32_t blocks  = (n - 1) / (NB * 4) + 1;
        dim3    grid(blocks, 1, batches);
        launch(rocblas_hscal_mlt_4_kernel, alpha);
    }
    else
    {
        int  blocks = (n - 1) / NB + 1;
        dim3 grid(blocks, 1, batches);
        if(rocblas_pointer_mode_device == handle->pointer_mode)
            launch(rocblas_scal_kernel, alpha);
        else
            launch(rocblas_scal_kernel, *alpha);
    }
"#;

    fn judge(prose: &str) -> Option<String> {
        let piece = ShownPiece {
            file: "library/src/blas1/rocblas_scal_kernels.hpp",
            name: "rocblas_internal_scal_launcher",
            start: 203,
            end: 230,
            text: LAUNCHER,
            expansion: None,
        };
        quote_off_path(prose, &[piece])
    }

    #[test]
    fn a_quote_put_on_a_path_its_branch_excludes_is_found() {
        let why = judge("The launcher uses `int32_t blocks = (n - 1) / (NB * 2) + 1;` for the half-precision path because each thread covers two elements.").unwrap();
        assert!(
            why.contains("using_rocblas_float && incx == 1") || why.contains("using_rocblas_float"),
            "{why}"
        );
        assert!(why.contains(":208"), "{why}");
        assert!(judge(
            "For the double-precision path it computes `int32_t blocks = (n - 1) / (NB * 4) + 1;`."
        )
        .is_some());
        assert!(judge(
            "With the host pointer mode it calls `launch(rocblas_scal_kernel, alpha);`."
        )
        .is_some());
        assert!(judge(
            "When the pointer mode is device it makes `launch(rocblas_sscal_2_kernel, *alpha);`."
        )
        .is_some());
        assert!(judge(
            "For non-unit stride it computes `int32_t blocks = (n - 1) / (NB * 2) + 1;`."
        )
        .is_some());
    }

    #[test]
    fn a_quote_on_its_own_path_or_one_no_condition_decides_is_kept() {
        for right in [
            "For the float path the launcher computes `int32_t blocks = (n - 1) / (NB * 2) + 1;`, two elements per thread.",
            "In the half-precision branch it uses `int32_t blocks  = (n - 1) / (NB * 4) + 1;`.",
            // The generic branch is the else of an `&&`: any precision may reach it.
            "For the double-precision path the block count is `int  blocks = (n - 1) / NB + 1;`.",
            "For the half-precision path the block count is `int  blocks = (n - 1) / NB + 1;` when incx is not 1.",
            // In every branch: one place agrees.
            "For the half-precision path the grid is `dim3 grid(blocks, 1, batches);`.",
            "With the device pointer mode it makes `launch(rocblas_scal_kernel, alpha);`.",
            "With the host pointer mode it makes `launch(rocblas_scal_kernel, *alpha);`.",
            "For unit stride it computes `int32_t blocks = (n - 1) / (NB * 2) + 1;`.",
            // No path named; a quote not in the code (the quote check's).
            "The launcher computes `int32_t blocks = (n - 1) / (NB * 2) + 1;`.",
            "For the half-precision path it computes `int blocks = n / 8;`.",
        ] {
            assert_eq!(judge(right), None, "{right}");
        }
    }

    #[test]
    fn conditions_split_into_the_terms_that_must_hold() {
        assert_eq!(terms("(a && (b || c))"), ["a", "(b || c)"]);
        assert!(terms("a || b").is_empty());
        let code = "if(x)\n{\n    if(y && z) f(1);\n    else g(2);\n}\nelse h(3);\n";
        let at = |s: &str| code.find(s).unwrap();
        assert_eq!(
            holding(code, at("f(1)")),
            [("x".into(), true), ("y".into(), true), ("z".into(), true)]
        );
        assert_eq!(holding(code, at("g(2)")), [("x".to_string(), true)]);
        assert_eq!(holding(code, at("h(3)")), [("x".to_string(), false)]);
    }
}
