//! The screen: rejects a snippet before any compiler sees it, and the small C++ lexer
//! the screen and the batch assembly share.
//!
//! The lexer knows just enough C++ to tell code from comments and literals: `//` and
//! `/* */` comments (a backslash-newline continues a `//` comment), string and character
//! literals with escapes, raw strings `R"delim(...)delim"` with their prefixes, and digit
//! separators (`1'000` is a number, not a character literal). It keeps every newline, so
//! line numbers survive.

use std::sync::OnceLock;

use regex::Regex;

/// Longest snippet the check accepts, in bytes.
pub const MAX_SNIPPET_BYTES: usize = 256 * 1024;

/// C++ standard library headers by name (C++20 and earlier), and the C headers C++
/// keeps (`<cmath>` and `<math.h>` alike).
const STD_HEADERS: &[&str] = &[
    "algorithm",
    "any",
    "array",
    "atomic",
    "barrier",
    "bit",
    "bitset",
    "cassert",
    "ccomplex",
    "cctype",
    "cerrno",
    "cfenv",
    "cfloat",
    "charconv",
    "chrono",
    "cinttypes",
    "ciso646",
    "climits",
    "clocale",
    "cmath",
    "codecvt",
    "compare",
    "complex",
    "concepts",
    "condition_variable",
    "coroutine",
    "csetjmp",
    "csignal",
    "cstdalign",
    "cstdarg",
    "cstdbool",
    "cstddef",
    "cstdint",
    "cstdio",
    "cstdlib",
    "cstring",
    "ctgmath",
    "ctime",
    "cuchar",
    "cwchar",
    "cwctype",
    "deque",
    "exception",
    "execution",
    "filesystem",
    "format",
    "forward_list",
    "fstream",
    "functional",
    "future",
    "initializer_list",
    "iomanip",
    "ios",
    "iosfwd",
    "iostream",
    "istream",
    "iterator",
    "latch",
    "limits",
    "list",
    "locale",
    "map",
    "memory",
    "memory_resource",
    "mutex",
    "new",
    "numbers",
    "numeric",
    "optional",
    "ostream",
    "queue",
    "random",
    "ranges",
    "ratio",
    "regex",
    "scoped_allocator",
    "semaphore",
    "set",
    "shared_mutex",
    "source_location",
    "span",
    "sstream",
    "stack",
    "stdexcept",
    "stop_token",
    "streambuf",
    "string",
    "string_view",
    "strstream",
    "syncstream",
    "system_error",
    "thread",
    "tuple",
    "type_traits",
    "typeindex",
    "typeinfo",
    "unordered_map",
    "unordered_set",
    "utility",
    "valarray",
    "variant",
    "vector",
    "version",
    "assert.h",
    "complex.h",
    "ctype.h",
    "errno.h",
    "fenv.h",
    "float.h",
    "inttypes.h",
    "iso646.h",
    "limits.h",
    "locale.h",
    "math.h",
    "setjmp.h",
    "signal.h",
    "stdalign.h",
    "stdarg.h",
    "stdbool.h",
    "stddef.h",
    "stdint.h",
    "stdio.h",
    "stdlib.h",
    "string.h",
    "tgmath.h",
    "time.h",
    "uchar.h",
    "wchar.h",
    "wctype.h",
];

/// Two same-shaped views of a piece of code: every byte keeps its line.
pub(crate) struct Lexed {
    /// Comments replaced by spaces; literals intact.
    pub no_comments: String,
    /// Comments and the contents of string and character literals replaced by spaces
    /// (the quotes stay).
    pub code_only: String,
    /// The code ends inside a block comment or a literal.
    pub unterminated: bool,
}

/// Lexes `code` into [`Lexed`] views.
pub(crate) fn lex(code: &str) -> Lexed {
    let b = code.as_bytes();
    let mut nc = Vec::with_capacity(b.len());
    let mut co = Vec::with_capacity(b.len());
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    let mut unterminated = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            // Line comment, continued by backslash-newline.
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                    nc.extend_from_slice(b" \n");
                    co.extend_from_slice(b" \n");
                    i += 2;
                    continue;
                }
                nc.push(b' ');
                co.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = find(b, i + 2, b"*/");
            let stop = end.map_or(b.len(), |e| e + 2);
            unterminated |= end.is_none();
            for &x in &b[i..stop] {
                nc.push(blank(x));
                co.push(blank(x));
            }
            i = stop;
        } else if c == b'"' && raw_prefix(b, i) {
            // R"delim( ... )delim"
            let open = b[i + 1..]
                .iter()
                .take(18)
                .position(|&x| x == b'(')
                .map(|p| i + 1 + p);
            let stop = match open {
                Some(o) => {
                    let mut close = b")".to_vec();
                    close.extend_from_slice(&b[i + 1..o]);
                    close.push(b'"');
                    find(b, o + 1, &close).map(|e| e + close.len())
                }
                None => None,
            };
            unterminated |= stop.is_none();
            let stop = stop.unwrap_or(b.len());
            nc.extend_from_slice(&b[i..stop]);
            co.push(b'"');
            co.extend(
                b[i + 1..stop.saturating_sub(1).max(i + 1)]
                    .iter()
                    .map(|&x| blank(x)),
            );
            if stop > i + 1 {
                co.push(b'"');
            }
            i = stop;
        } else if c == b'"' || (c == b'\'' && !digit_separator(b, i)) {
            let mut j = i + 1;
            let mut closed = false;
            while j < b.len() && b[j] != b'\n' {
                if b[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if b[j] == c {
                    closed = true;
                    j += 1;
                    break;
                }
                j += 1;
            }
            let j = j.min(b.len());
            unterminated |= !closed && j >= b.len();
            nc.extend_from_slice(&b[i..j]);
            co.push(c);
            let inner_end = if closed { j - 1 } else { j };
            co.extend(b[i + 1..inner_end].iter().map(|&x| blank(x)));
            if closed {
                co.push(c);
            }
            i = j;
        } else {
            nc.push(c);
            co.push(c);
            i += 1;
        }
    }
    // Only ASCII bytes were replaced, and only whole literals or comments: any multibyte
    // character inside those became spaces byte for byte, so the result is valid UTF-8.
    Lexed {
        no_comments: String::from_utf8_lossy(&nc).into_owned(),
        code_only: String::from_utf8_lossy(&co).into_owned(),
        unterminated,
    }
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// The identifier run just before `i`.
fn word_before(b: &[u8], i: usize) -> &[u8] {
    let mut s = i;
    while s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_') {
        s -= 1;
    }
    &b[s..i]
}

/// `"` at `i` opens a raw string: `R`, `u8R`, `uR`, `UR` or `LR` right before it.
fn raw_prefix(b: &[u8], i: usize) -> bool {
    matches!(word_before(b, i), b"R" | b"u8R" | b"uR" | b"UR" | b"LR")
}

/// `'` at `i` is a digit separator: the pp-number it sits in starts with a digit.
fn digit_separator(b: &[u8], i: usize) -> bool {
    let mut s = i;
    while s > 0 && (b[s - 1].is_ascii_alphanumeric() || matches!(b[s - 1], b'_' | b'.' | b'\'')) {
        s -= 1;
    }
    s < i
        && (b[s].is_ascii_digit() || (b[s] == b'.' && b.get(s + 1).is_some_and(u8::is_ascii_digit)))
}

/// Joins backslash-newline line continuations, as translation phase 2 does.
pub(crate) fn splice(code: &str) -> String {
    code.replace("\\\r\n", "").replace("\\\n", "")
}

/// A preprocessor directive on one line: its name (`include`, `define`, ...) and what
/// follows. `#` may be spelled with the digraph `%:`.
pub(crate) fn directive(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let rest = t.strip_prefix('#').or_else(|| t.strip_prefix("%:"))?;
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some((&rest[..end], &rest[end..]))
}

fn banned_tokens() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\b(asm|__asm__|__asm|_Pragma|__pragma|__has_include|__has_include_next|__has_embed)\b")
            .expect("static regex")
    })
}

/// The header an `#include` names: `<x>` or `"x"`, nothing after but spaces.
pub(crate) fn include_target(rest: &str) -> Option<(char, &str)> {
    let r = rest.trim();
    let (open, close) = match r.chars().next()? {
        '<' => ('<', '>'),
        '"' => ('"', '"'),
        _ => return None,
    };
    let inner = &r[1..];
    let end = inner.find(close)?;
    inner[end + 1..]
        .trim()
        .is_empty()
        .then_some((open, &inner[..end]))
}

fn check_header(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("empty #include".into());
    }
    if path.starts_with('/') || path.starts_with('~') || path.contains('\\') {
        return Err(format!(
            "#include \"{path}\": absolute or home paths are not allowed"
        ));
    }
    if path
        .split('/')
        .any(|c| c == ".." || c == "." || c.is_empty())
    {
        return Err(format!(
            "#include \"{path}\": `..`, `.` and empty path components are not allowed"
        ));
    }
    if !path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '+'))
    {
        return Err(format!(
            "#include \"{path}\": unusual characters in a header name"
        ));
    }
    let allowed = path.starts_with("hip/")
        || path.starts_with("rocblas/")
        || path.starts_with("rocsolver/")
        || path == "rocblas.h"
        || STD_HEADERS.contains(&path);
    if allowed {
        Ok(())
    } else {
        Err(format!(
            "#include <{path}> is outside the allowlist (hip/..., rocblas/..., rocsolver/..., \
             rocblas.h and the C++ standard library headers)"
        ))
    }
}

/// Rejects code before any compiler sees it: includes outside the allowlist (HIP
/// headers `hip/...`, the C++ standard library headers by name, and the library public
/// headers `rocblas/...`, `rocsolver/...`, `rocblas.h`), absolute or `..` include paths,
/// `#include_next`, `__has_include`, `#embed`, `#pragma` other than `once`/`unroll`,
/// `asm`/`__asm__`, `#line`, and any string that looks like a path outside the sandbox
/// in `#include`. Returns the reason.
///
/// The rules run on the code after line splicing with comments removed, so neither a
/// backslash-newline inside `#include` nor a comment hides a directive; the keyword
/// rules skip string literals. `#` spelled as the digraph `%:` counts, computed
/// includes (`#include MACRO`) are refused since the macro could name any file, and so
/// are GNU line markers (`# 12 "file"`), `#import`, `_Pragma` and unknown directives.
pub fn screen(code: &str) -> Result<(), String> {
    if code.len() > MAX_SNIPPET_BYTES {
        return Err(format!(
            "{} bytes, more than the {MAX_SNIPPET_BYTES} a snippet may have",
            code.len()
        ));
    }
    if code.contains('\0') {
        return Err("the code holds a NUL byte".into());
    }
    if code.trim().is_empty() {
        return Err("no code".into());
    }
    rules(code)
}

/// The rules of [`screen`] without its size checks: also run on assembled batch files.
pub(crate) fn rules(code: &str) -> Result<(), String> {
    let lexed = lex(&splice(code));
    for (n, line) in lexed.no_comments.lines().enumerate() {
        let Some((name, rest)) = directive(line) else {
            continue;
        };
        let at = |msg: String| format!("line {}: {msg}", n + 1);
        match name {
            "include" | "import" => {
                let Some((_, path)) = include_target(rest) else {
                    return Err(at(format!(
                        "#{name} must name a header as <...> or \"...\" (computed includes are not allowed)"
                    )));
                };
                if name == "import" {
                    return Err(at("#import is not allowed; use #include".into()));
                }
                check_header(path).map_err(at)?;
            }
            "pragma" => {
                let what = rest
                    .trim_start()
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("");
                if !matches!(what, "once" | "unroll") {
                    return Err(at(format!(
                        "#pragma {what} is not allowed (only #pragma once and #pragma unroll)"
                    )));
                }
            }
            "define" | "undef" | "if" | "ifdef" | "ifndef" | "elif" | "elifdef" | "elifndef"
            | "else" | "endif" | "error" | "warning" | "" => {}
            "line" => return Err(at("#line is not allowed".into())),
            "include_next" => return Err(at("#include_next is not allowed".into())),
            "embed" => return Err(at("#embed is not allowed".into())),
            n if n.starts_with(|c: char| c.is_ascii_digit()) => {
                return Err(at(
                    "line markers (# <number> \"file\") are not allowed".into()
                ))
            }
            other => return Err(at(format!("#{other} is not an allowed directive"))),
        }
    }
    if let Some(m) = banned_tokens().find(&lexed.code_only) {
        let line = lexed.code_only[..m.start()].matches('\n').count() + 1;
        return Err(format!("line {line}: `{}` is not allowed", m.as_str()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str =
        "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] *= 2; }\n";

    #[test]
    fn plain_kernels_and_library_calls_pass() {
        screen(KERNEL).unwrap();
        screen("#include \"hip/hip_runtime.h\"\n#include <vector>\n#include <cstdio>\n#include <math.h>\nint f();\n").unwrap();
        screen("#include <rocblas/rocblas.h>\n#include <rocsolver/rocsolver.h>\n#include <rocblas.h>\n").unwrap();
        screen("#pragma once\n__global__ void k(float* x) {\n#pragma unroll 4\n for (int i = 0; i < 4; ++i) x[i] = 0;\n}\n").unwrap();
        // Keywords inside comments and strings are harmless.
        screen("// use asm here? no.\nconst char* s = \"asm volatile\"; /* __asm__ */\nint plasma = 1'000'000;\n").unwrap();
        screen("const char* r = R\"x(#include </etc/passwd> asm)x\";\n").unwrap();
        screen("#define SQ(x) ((x) * (x))\n#if defined(FOO)\n#error no\n#endif\n").unwrap();
    }

    #[test]
    fn each_forbidden_form_is_rejected_with_its_reason() {
        let cases = [
            ("#include \"/etc/passwd\"\n", "absolute"),
            ("#include <../x>\n", "`..`"),
            ("#include <hip/../../etc/passwd>\n", "`..`"),
            ("#include <~/.ssh/id_rsa>\n", "absolute or home"),
            ("#include <sys/socket.h>\n", "allowlist"),
            ("#include <unistd.h>\n", "allowlist"),
            ("#include \"secret.h\"\n", "allowlist"),
            ("#define P \"/etc/passwd\"\n#include P\n", "computed"),
            ("#include_next <vector>\n", "#include_next"),
            ("#if __has_include(<x>)\n#endif\n", "__has_include"),
            ("#embed \"x\"\n", "#embed"),
            (
                "#pragma clang diagnostic ignored \"-Wall\"\n",
                "#pragma clang",
            ),
            ("#pragma GCC poison x\n", "#pragma GCC"),
            ("_Pragma(\"clang diagnostic push\")\n", "_Pragma"),
            (
                "__global__ void k() { asm volatile(\"s_nop 0\"); }\n",
                "`asm`",
            ),
            ("void f() { __asm__(\"nop\"); }\n", "`__asm__`"),
            ("#line 1 \"/etc/passwd\"\n", "#line"),
            ("# 12 \"x.h\"\n", "line markers"),
            ("#import <vector>\n", "#import"),
            ("#ident \"x\"\n", "#ident"),
            // Hidden by splicing, a digraph or a comment.
            ("#inc\\\nlude \"/etc/passwd\"\n", "absolute"),
            ("%:include \"/etc/passwd\"\n", "absolute"),
            ("/* x */ #include </etc/passwd>\n", "absolute"),
            ("", "no code"),
            ("int x;\0", "NUL"),
        ];
        for (code, want) in cases {
            let why = screen(code).expect_err(code);
            assert!(why.contains(want), "{code:?}: {why}");
        }
        let big = "int x;\n".repeat(MAX_SNIPPET_BYTES / 7 + 1);
        assert!(screen(&big).unwrap_err().contains("bytes"));
    }

    #[test]
    fn lexer_keeps_lines_and_blanks_comments_and_literals() {
        let code = "a /* b\nc */ d // e \\\nf\n\"g\\\"h\" 'i' 1'2 R\"z(j\n)\")z\" k\n";
        let l = lex(code);
        assert_eq!(l.no_comments.lines().count(), code.lines().count());
        assert_eq!(l.no_comments.len(), code.len());
        assert_eq!(l.code_only.len(), code.len());
        assert!(!l.no_comments.contains('b') && !l.no_comments.contains('e'));
        assert!(
            !l.no_comments.contains('f'),
            "a // comment continues after a backslash"
        );
        assert!(l.no_comments.contains("\"g\\\"h\"") && l.no_comments.contains('j'));
        for gone in ['g', 'h', 'i', 'j'] {
            assert!(!l.code_only.contains(gone), "{gone}: {}", l.code_only);
        }
        assert!(l.code_only.contains("1'2") && l.code_only.contains('k'));
        assert!(!l.unterminated);
        assert!(lex("x /* open").unterminated);
        assert!(lex("R\"(open").unterminated);
    }
}
