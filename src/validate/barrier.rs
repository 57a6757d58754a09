//! A barrier in an answer's code under a branch or loop that depends on the thread.
//!
//! `__syncthreads()` must be reached by every thread of the block or by none: under
//! `if (i < n)` (with `i` from `threadIdx`) or in a loop whose trip count differs per
//! thread, the threads that skip it leave the others waiting, or the barrier matches
//! another one. clang compiles it without a word. Dependence on the thread is read from
//! the code: `threadIdx` (and its HIP spellings) and the names assigned from it, to a
//! fixed point; a condition on `blockIdx`, `blockDim` or an argument is the same for the
//! whole block and passes.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;

/// Where a barrier of `code` sits under a thread-dependent condition, described, with
/// the `if`/`for`/`while` head it sits under (`if(y < ny)`).
pub fn divergent_barrier(code: &str) -> Option<(String, String)> {
    let code = without_strings(&without_comments(code));
    let barriers: Vec<usize> = barrier_re().find_iter(&code).map(|m| m.start()).collect();
    if barriers.is_empty() {
        return None;
    }
    let dependent = thread_dependent_names(&code);
    let depends = |text: &str| {
        ident_re().find_iter(text).any(|m| {
            let w = m.as_str();
            THREAD_SOURCES.contains(&w) || dependent.contains(w)
        })
    };
    let bytes = code.as_bytes();
    for m in control_re().captures_iter(&code) {
        let keyword = m.get(1).expect("keyword").as_str();
        let open = m.get(0).expect("match").end() - 1;
        let close = matching(bytes, open)?;
        let head = &code[open + 1..close];
        // A `for` loop's trip count: its condition, with what its start sets. A name
        // the head declares is a new variable, whatever another scope assigns to a
        // variable of that name: its start value decides.
        let declared = (keyword == "for").then(|| for_declared(head)).flatten();
        let head_depends = match declared {
            Some(name) => ident_re().find_iter(head).any(|m| {
                let w = m.as_str();
                w != name && (THREAD_SOURCES.contains(&w) || dependent.contains(w))
            }),
            None => depends(head),
        };
        if !head_depends {
            continue;
        }
        let mut regions = vec![body_after(bytes, close + 1)?];
        // The `else` of a thread-dependent `if` diverges as much as its `then`.
        if keyword == "if" {
            let (_, end) = regions[0];
            let rest = code[end + 1..].trim_start();
            if let Some(after) = rest.strip_prefix("else") {
                let at = code.len() - after.len();
                if let Some(r) = body_after(bytes, at) {
                    regions.push(r);
                }
            }
        }
        for (start, end) in regions {
            if let Some(&b) = barriers.iter().find(|&&b| start <= b && b <= end) {
                let cond: String = head.split_whitespace().collect::<Vec<_>>().join(" ");
                let what = &code[b..];
                let what = what[..what.find('(').unwrap_or(what.len())].trim();
                return Some((
                    format!(
                        "{what} under `{keyword} ({cond})`, which differs between the threads of a block: the threads that skip it leave the others waiting"
                    ),
                    format!("{keyword}({cond})"),
                ));
            }
        }
    }
    None
}

/// The name a `for` head declares (`int k = 0; k < n; ++k` declares `k`).
fn for_declared(head: &str) -> Option<&str> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^\s*(?:const\s+)?[A-Za-z_][\w:]*(?:<[^;]*>)?\s+([A-Za-z_]\w*)\s*=")
            .expect("static regex")
    });
    re.captures(head).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// The code with the text of string and character literals blanked, offsets kept: a
/// message such as `"kcol = 0"` assigns nothing.
fn without_strings(code: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r#""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)'"#).expect("static regex")
    });
    re.replace_all(code, |c: &regex::Captures| {
        let n = c[0].len();
        format!("\"{}\"", " ".repeat(n.saturating_sub(2)))
    })
    .into_owned()
}

/// Builtins that differ between the threads of a block.
const THREAD_SOURCES: &[&str] = &[
    "threadIdx",
    "hipThreadIdx_x",
    "hipThreadIdx_y",
    "hipThreadIdx_z",
    "__lane_id",
    "__builtin_amdgcn_workitem_id_x",
    "__builtin_amdgcn_workitem_id_y",
    "__builtin_amdgcn_workitem_id_z",
];

fn barrier_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"\b(__syncthreads|__builtin_amdgcn_s_barrier|__syncthreads_(?:count|and|or))\s*\(",
        )
        .expect("static regex")
    })
}

fn control_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\b(if|for|while)\s*\(").expect("static regex"))
}

fn ident_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[A-Za-z_]\w*").expect("static regex"))
}

/// The code with `//` and `/* */` comments blanked to spaces, so offsets are kept.
pub(crate) fn without_comments(code: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"(?s)//[^\n]*|/\*.*?\*/").expect("static regex"));
    re.replace_all(code, |c: &regex::Captures| " ".repeat(c[0].len()))
        .into_owned()
}

/// Names assigned (or declared) from a thread-dependent expression, to a fixed point.
fn thread_dependent_names(code: &str) -> HashSet<String> {
    let bytes = code.as_bytes();
    // Each assignment: the name left of a lone `=` (or `+=`, ...), and its right side.
    let mut assignments: Vec<(&str, &str)> = Vec::new();
    for (i, _) in code.match_indices('=') {
        let prev = i.checked_sub(1).map(|k| bytes[k]);
        let next = bytes.get(i + 1).copied();
        if next == Some(b'=') || matches!(prev, Some(b'=' | b'!' | b'<' | b'>')) {
            continue;
        }
        let left = code[..i].trim_end_matches(['+', '-', '*', '/', '|', '&', '^', '%', ' ']);
        let left = left.trim_end();
        // `x[k] = ...` assigns an element, not a name the branches read.
        if left.ends_with(']') {
            continue;
        }
        let Some(name) = ident_re().find_iter(left).last().map(|m| m.as_str()) else {
            continue;
        };
        if !left.ends_with(name) {
            continue;
        }
        let end = code[i + 1..]
            .find([';', '{', '}'])
            .map_or(code.len(), |k| i + 1 + k);
        assignments.push((name, &code[i + 1..end]));
    }
    let mut names: HashSet<String> = HashSet::new();
    loop {
        let before = names.len();
        for (name, right) in &assignments {
            if names.contains(*name) {
                continue;
            }
            if ident_re()
                .find_iter(right)
                .any(|m| THREAD_SOURCES.contains(&m.as_str()) || names.contains(m.as_str()))
            {
                names.insert(name.to_string());
            }
        }
        if names.len() == before {
            return names;
        }
    }
}

/// The bracket closing the one at `open`.
pub(crate) fn matching(bytes: &[u8], open: usize) -> Option<usize> {
    let (o, c) = match bytes.get(open)? {
        b'(' => (b'(', b')'),
        b'{' => (b'{', b'}'),
        _ => return None,
    };
    let mut depth = 0i32;
    for (k, &b) in bytes.iter().enumerate().skip(open) {
        if b == o {
            depth += 1;
        } else if b == c {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// The statement or block that starts at `from`: `(start, end)` offsets, inclusive.
fn body_after(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    let start = from
        + bytes[from..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())?;
    if bytes[start] == b'{' {
        return Some((start, matching(bytes, start)?));
    }
    // A control statement without braces (`for (...) if (i >= j) { ... }`) ends where
    // its own body does, and an `if`'s where its `else` does.
    let word_end = bytes[start..]
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .map_or(bytes.len(), |k| start + k);
    let word = std::str::from_utf8(&bytes[start..word_end]).unwrap_or("");
    if matches!(word, "if" | "for" | "while" | "switch") {
        let open = word_end
            + bytes[word_end..]
                .iter()
                .position(|b| !b.is_ascii_whitespace())?;
        if bytes[open] == b'(' {
            let (_, mut end) = body_after(bytes, matching(bytes, open)? + 1)?;
            if word == "if" {
                let next = end
                    + 1
                    + bytes[end + 1..]
                        .iter()
                        .position(|b| !b.is_ascii_whitespace())
                        .unwrap_or(0);
                if bytes[next..].starts_with(b"else")
                    && bytes
                        .get(next + 4)
                        .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                {
                    end = body_after(bytes, next + 4)?.1;
                }
            }
            return Some((start, end));
        }
    }
    // One statement, up to its `;`.
    let mut depth = 0i32;
    for (k, &b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' => depth -= 1,
            b';' if depth == 0 => return Some((start, k)),
            _ => {}
        }
        // The enclosing block closed first: the statement ended before it.
        if depth < 0 {
            return Some((start, k.saturating_sub(1)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "#include <hip/hip_runtime.h>\n__global__ void k(int n, float* x)\n{\n    __shared__ float s[256];\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n";

    #[test]
    fn a_barrier_some_threads_skip_is_found() {
        for body in [
            "    if(i < n)\n        __syncthreads();\n}\n",
            "    if(i < n) {\n        s[threadIdx.x] = x[i];\n        __syncthreads();\n    }\n}\n",
            "    if(threadIdx.x == 0) { s[0] = 1; } else { __syncthreads(); }\n}\n",
            "    for(int j = i; j < n; j += blockDim.x) {\n        s[threadIdx.x] += x[j];\n        __syncthreads();\n    }\n}\n",
            "    int lane = i % 64;\n    while(lane < 32) { __syncthreads(); lane += 64; }\n}\n",
        ] {
            let code = format!("{HEAD}{body}");
            let (why, _) = divergent_barrier(&code).unwrap_or_else(|| panic!("{code}"));
            assert!(why.starts_with("__syncthreads under"), "{why}");
        }
    }

    #[test]
    fn a_barrier_every_thread_reaches_passes() {
        for body in [
            "    s[threadIdx.x] = i < n ? x[i] : 0.f;\n    __syncthreads();\n    if(i < n)\n        x[i] = s[threadIdx.x];\n}\n",
            "    for(int k = 0; k < n; k += 256) {\n        if(i < n) s[threadIdx.x] = x[i];\n        __syncthreads();\n    }\n}\n",
            "    if(blockIdx.x == 0 && n > 4) {\n        __syncthreads();\n    }\n}\n",
            // A comment is not code; an equality test is not an assignment.
            "    // if(i < n) __syncthreads();\n    bool same = (n == i);\n    if(n > 0) __syncthreads();\n}\n",
            "    if(i < n) x[i] = 2.f;\n}\n",
            // A loop variable declared in its head is new, whatever another scope
            // assigns to a name like it; a string holds no assignment.
            "    { const int kk = threadIdx.x / 4; s[kk] = 0; }\n    for(int kk = 0; kk < n; ++kk) {\n        __syncthreads();\n    }\n}\n",
            "    const char* msg = \"k = threadIdx\";\n    for(int j = 0; j < n; ++j) __syncthreads();\n}\n",
            // A braceless loop nest ends with its inner block: the barrier after it is
            // reached by every thread.
            "    for(int k = 0; k < n; ++k) {\n        for(int j = k + threadIdx.y; j < n; j += blockDim.y)\n        {\n            for(int q = k + i; q < n; q += blockDim.x)\n                if(q >= j)\n                {\n                    s[q] = 0;\n                }\n        }\n        __syncthreads();\n    }\n}\n",
            "    for(int j = i; j < n; j += blockDim.x)\n        if(j > 2) s[j % 256] = 1; else s[0] = 2;\n    __syncthreads();\n}\n",
        ] {
            let code = format!("{HEAD}{body}");
            assert_eq!(divergent_barrier(&code), None, "{code}");
        }
    }
}
