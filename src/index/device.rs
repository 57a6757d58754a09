//! Shared memory as kernel code declares and uses it, read off the text: which
//! variables a `__shared__` declaration declares, and whether a barrier orders one
//! thread's write of one of them before another thread's read. The facts state what
//! each barrier orders; the find-the-bug questions plant a missing barrier only where
//! it orders something. One reading serves both.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use regex::Regex;

/// One variable a `__shared__` declaration declares.
#[derive(Debug, PartialEq)]
pub struct SharedDeclaration {
    /// Offset of its name in the body.
    pub at: usize,
    pub ty: String,
    pub name: String,
    /// `[N][M]` as written; empty for a scalar.
    pub dims: String,
    /// An `extern __shared__` array, its size set at launch.
    pub dynamic: bool,
}

/// Every variable the `__shared__` declarations of `body` declare, in each form the
/// libraries write: the qualifier first or after the type (`T __shared__ xs;`), arrays
/// and scalars, several to a statement (`__shared__ int _info, imax;`), and the
/// dynamic `extern __shared__` array.
pub fn shared_declarations(body: &str) -> Vec<SharedDeclaration> {
    static RE: OnceLock<[Regex; 2]> = OnceLock::new();
    let [first, more] = RE.get_or_init(|| {
        [
            Regex::new(r"^(?s)(.*?\S)\s*\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$")
                .expect("declarator"),
            Regex::new(r"^(?s)\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$").expect("declarator"),
        ]
    });
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = body[from..].find("__shared__") {
        let q = from + k;
        from = q + "__shared__".len();
        let start = body[..q].rfind([';', '{', '}']).map_or(0, |i| i + 1);
        let Some(len) = body[q..].find(';') else {
            break;
        };
        let end = q + len;
        let stmt = &body[start..end];
        // A call or an initializer outside the brackets is not a declaration of one.
        let mut depth = 0i32;
        let outside: String = stmt
            .chars()
            .filter(|c| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .collect();
        if outside.contains('(') || outside.contains('=') {
            continue;
        }
        let dynamic = outside.split_whitespace().any(|w| w == "extern");
        // Declarators split at commas outside brackets and template arguments; the
        // qualifiers blanked in place, so offsets stay those of `body`.
        let mut text = stmt.replacen("__shared__", &" ".repeat("__shared__".len()), 1);
        if dynamic {
            text = text.replacen("extern", "      ", 1);
        }
        let mut parts = Vec::new();
        let (mut depth, mut last) = (0i32, 0);
        for (i, c) in text.char_indices() {
            match c {
                '[' | '<' => depth += 1,
                ']' | '>' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push((last, &text[last..i]));
                    last = i + 1;
                }
                _ => {}
            }
        }
        parts.push((last, &text[last..]));
        let Some(c) = first.captures(parts[0].1) else {
            continue;
        };
        let ty = c[1].split_whitespace().collect::<Vec<_>>().join(" ");
        if ty.is_empty() || ty.ends_with([':', ',']) {
            continue;
        }
        let name_at = |part: (usize, &str), m: regex::Match| start + part.0 + m.start();
        out.push(SharedDeclaration {
            at: name_at(parts[0], c.get(2).expect("name")),
            ty: ty.clone(),
            name: c[2].to_string(),
            dims: c[3].trim().to_string(),
            dynamic,
        });
        for part in &parts[1..] {
            if let Some(c) = more.captures(part.1) {
                out.push(SharedDeclaration {
                    at: name_at(*part, c.get(1).expect("name")),
                    ty: ty.clone(),
                    name: c[1].to_string(),
                    dims: c[2].trim().to_string(),
                    dynamic,
                });
            }
        }
    }
    out
}

/// Names of shared memory in `lines` (code, comments cut), each with whether it is a
/// scalar: the variables `__shared__` declarations declare, and pointers set from an
/// array of them (`T* x = sdata;`).
pub fn shared_names(lines: &[&str]) -> Vec<(String, bool)> {
    static PTR: OnceLock<Regex> = OnceLock::new();
    let ptr = PTR.get_or_init(|| {
        Regex::new(r"\*\s*([A-Za-z_]\w*)\s*=\s*&?\s*([A-Za-z_]\w*)").expect("pointer pattern")
    });
    let text = lines.join("\n");
    let mut names: Vec<(String, bool)> = Vec::new();
    for d in shared_declarations(&text) {
        if !names.iter().any(|n| n.0 == d.name) {
            names.push((d.name, d.dims.is_empty()));
        }
    }
    for l in lines {
        for c in ptr.captures_iter(l) {
            if names.iter().any(|n| n.0 == c[2]) && !names.iter().any(|n| n.0 == c[1]) {
                names.push((c[1].to_string(), false));
            }
        }
    }
    names
}

/// Whether `before` writes shared `name` and `after` reads it where another thread
/// may have written: a subscript none of the writes used, or a scalar. An array
/// handed whole to a function is not counted: what the function reads (often each
/// thread its own elements, as `dot` in rocSOLVER's larf kernels) is not shown here.
pub fn orders(before: &[&str], after: &[&str], name: &str, scalar: bool) -> bool {
    let write = Regex::new(&format!(
        r"\b{}\b\s*(\[[^;]*?\])?\s*(?:=[^=]|\+=|-=|\*=|/=)",
        regex::escape(name)
    ))
    .expect("escaped name");
    let use_ = Regex::new(&format!(r"\b{}\b\s*(\[[^;=]*?\])?", regex::escape(name)))
        .expect("escaped name");
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    let mut written: Vec<Option<String>> = Vec::new();
    for l in before {
        for c in write.captures_iter(l) {
            written.push(c.get(1).map(|m| squash(m.as_str())));
        }
    }
    if written.is_empty() {
        return false;
    }
    after.iter().any(|code| {
        let writes: Vec<usize> = write.find_iter(code).map(|m| m.start()).collect();
        use_.captures_iter(code).any(|c| {
            let m = c.get(0).expect("match");
            // A plain `name[i] = ...` only writes; `+=` and the rest read too.
            let plain_write = writes.contains(&m.start())
                && code[m.end()..].trim_start().starts_with('=')
                && !code[m.end()..].trim_start().starts_with("==");
            if plain_write {
                return false;
            }
            match c.get(1) {
                None => scalar,
                Some(sub) => !written.contains(&Some(squash(sub.as_str()))),
            }
        })
    })
}

/// The shared arrays of `lines` (a kernel's code, comments cut) that each thread only
/// ever touches at its own elements ([`each_thread_its_own`]), in declaration order.
pub fn thread_owned_arrays(lines: &[&str]) -> Vec<String> {
    let threads = thread_index_names(lines);
    shared_names(lines)
        .into_iter()
        .filter(|(name, scalar)| !scalar && each_thread_its_own(lines, name, &threads))
        .map(|(name, _)| name)
        .collect()
}

/// The names that hold a thread's index in its block: `threadIdx.x` and
/// `hipThreadIdx_x` themselves, and locals set to exactly one of them
/// (`const int tx = threadIdx.x;`).
pub fn thread_index_names(lines: &[&str]) -> Vec<String> {
    static LOCAL: OnceLock<Regex> = OnceLock::new();
    let local = LOCAL.get_or_init(|| {
        Regex::new(
            r"\b([A-Za-z_]\w*)\s*=\s*(?:\(\s*\w+\s*\)\s*)?(?:threadIdx\.x|hipThreadIdx_x)\s*;",
        )
        .expect("static regex")
    });
    let mut out = vec!["threadIdx.x".to_string(), "hipThreadIdx_x".to_string()];
    for l in lines {
        for c in local.captures_iter(l) {
            if !out.contains(&c[1].to_string()) {
                out.push(c[1].to_string());
            }
        }
    }
    out
}

/// Whether every subscript of shared array `name` in `lines` is the thread's index plus
/// a multiple of one stride the thread's index does not enter (`sB[i * NB + tx]`,
/// `sB[(i - 3) * NB + tx]`): each thread then touches only its own elements, and no
/// barrier orders them between threads (rocblas_trsm_kernels.hpp's `sB`, one column per
/// thread; its blocks have as many threads as the stride, which is taken on trust here).
/// A subscript of any other form, or the array used without one, says no.
pub fn each_thread_its_own(lines: &[&str], name: &str, threads: &[String]) -> bool {
    let use_ = Regex::new(&format!(r"\b{}\b\s*(\[[^;=]*?\])?", regex::escape(name)))
        .expect("escaped name");
    // Offsets kept in locals (`rocblas_int col_off = j * NB;`) read as what they hold.
    static LOCAL: OnceLock<Regex> = OnceLock::new();
    let local = LOCAL
        .get_or_init(|| Regex::new(r"\b([A-Za-z_]\w*)\s*=\s*([^;=]+);").expect("static regex"));
    let mut held: BTreeMap<String, String> = BTreeMap::new();
    for l in lines {
        for c in local.captures_iter(l) {
            held.insert(c[1].to_string(), c[2].split_whitespace().collect());
        }
    }
    // A multiple of another thread index (`sA[ty * NB + tx]`) is another thread's
    // element when the loop reads `sA[i * NB + tx]`: not one thread's own.
    static OTHER: OnceLock<Regex> = OnceLock::new();
    let other = OTHER.get_or_init(|| {
        Regex::new(r"\b([A-Za-z_]\w*)\s*=\s*(?:\(\s*\w+\s*\)\s*)?(?:threadIdx\.[yz]|hipThreadIdx_[yz])\s*;")
            .expect("static regex")
    });
    let mut others: Vec<String> = [
        "threadIdx.y",
        "threadIdx.z",
        "hipThreadIdx_y",
        "hipThreadIdx_z",
    ]
    .map(String::from)
    .to_vec();
    for l in lines {
        for c in other.captures_iter(l) {
            others.push(c[1].to_string());
        }
    }
    let mentions = |text: &str, n: &str| {
        text.match_indices(n).any(|(i, _)| {
            let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            !word(text[..i].chars().next_back()) && !word(text[i + n.len()..].chars().next())
        })
    };
    let mut thread: Option<String> = None;
    let mut strides: Option<BTreeSet<String>> = None;
    for l in lines {
        if l.contains("__shared__") {
            continue;
        }
        for c in use_.captures_iter(l) {
            let Some(sub) = c.get(1) else {
                return false;
            };
            let mut inner: String = sub.as_str()[1..sub.as_str().len() - 1]
                .split_whitespace()
                .collect();
            if let Some((first, t)) = inner.split_once('+') {
                if let Some(v) = held
                    .get(first)
                    .filter(|_| !threads.iter().any(|n| n == first))
                {
                    inner = format!("{v}+{t}");
                }
            }
            if others.iter().any(|n| mentions(&inner, n)) {
                return false;
            }
            let Some((t, s)) = thread_plus_stride(&inner, threads) else {
                return false;
            };
            if thread.get_or_insert_with(|| t.clone()) != &t {
                return false;
            }
            let common = match strides.take() {
                Some(before) => before.intersection(&s).cloned().collect(),
                None => s,
            };
            if common.is_empty() {
                return false;
            }
            strides = Some(common);
        }
    }
    strides.is_some()
}

/// The thread name and the candidate strides of a subscript written `X * S + t`,
/// `S * X + t` or `t + ...` (spaces removed), where `t` is a thread's index, `X` does not
/// mention one, and a candidate stride is a factor that is a plain name.
fn thread_plus_stride(sub: &str, threads: &[String]) -> Option<(String, BTreeSet<String>)> {
    let (t, rest) = match sub.rsplit_once('+') {
        Some((rest, t)) if threads.iter().any(|n| n == t) => (t, rest),
        _ => {
            let (t, rest) = sub.split_once('+')?;
            threads.iter().any(|n| n == t).then_some((t, rest))?
        }
    };
    let mentions_thread = threads.iter().any(|n| {
        rest.match_indices(n.as_str()).any(|(i, _)| {
            let before = rest[..i].chars().next_back();
            let after = rest[i + n.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    });
    if mentions_thread {
        return None;
    }
    // One product at the top level: `(i - 3) * NB`, `NB * (i + j)`, not `i - 3 * NB`.
    let mut depth = 0i32;
    let mut stars = Vec::new();
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '+' | '-' | '/' | '%' if depth == 0 => return None,
            '*' if depth == 0 => stars.push(i),
            _ => {}
        }
    }
    let [star] = stars[..] else {
        return None;
    };
    let plain = |f: &str| !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let strides: BTreeSet<String> = [&rest[..star], &rest[star + 1..]]
        .into_iter()
        .filter(|f| plain(f) && !f.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
        .collect();
    (!strides.is_empty()).then(|| (t.to_string(), strides))
}

/// Whether `before` writes elements of shared array `name` and `after` writes one at
/// a subscript none of those writes used: another thread's element, written again
/// (iamax's block reduction zeroes `psums[wavelet]`, then each wavefront stores its
/// sum in `psums[wavefront]`).
pub fn orders_writes(before: &[&str], after: &[&str], name: &str) -> bool {
    let write = Regex::new(&format!(
        r"\b{}\b\s*(\[[^;]*?\])\s*=[^=]",
        regex::escape(name)
    ))
    .expect("escaped name");
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    let subscripts = |lines: &[&str]| -> Vec<String> {
        lines
            .iter()
            .flat_map(|l| {
                write
                    .captures_iter(l)
                    .map(|c| squash(&c[1]))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let first = subscripts(before);
    !first.is_empty() && subscripts(after).iter().any(|s| !first.contains(s))
}

/// For each `__syncthreads()` of `lines`, by index, the shared arrays whose writes
/// before it it orders ahead of writes to other elements after it ([`orders_writes`])
/// and that no read after it already accounts for ([`barrier_orders`]).
pub fn barrier_write_orders(lines: &[&str]) -> Vec<(usize, Vec<String>)> {
    let reads = barrier_orders(lines);
    let shared = shared_names(lines);
    reads
        .iter()
        .enumerate()
        .map(|(n, (k, read))| {
            let from = if n == 0 { 0 } else { reads[n - 1].0 + 1 };
            let to = reads.get(n + 1).map_or(lines.len(), |r| r.0);
            let names = shared
                .iter()
                .filter(|(name, scalar)| {
                    !scalar
                        && !read.contains(name)
                        && orders_writes(&lines[from..*k], &lines[k + 1..to], name)
                })
                .map(|(name, _)| name.clone())
                .collect();
            (*k, names)
        })
        .collect()
}

/// For each `__syncthreads()` of `lines` (code, comments cut), by index, the shared
/// variables it orders between the code since the barrier before it and the code up to
/// the next one ([`orders`]), in the order they are declared; none where none is seen.
pub fn barrier_orders(lines: &[&str]) -> Vec<(usize, Vec<String>)> {
    let shared = shared_names(lines);
    let threads = thread_index_names(lines);
    let at: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("__syncthreads()"))
        .map(|(k, _)| k)
        .collect();
    at.iter()
        .enumerate()
        .map(|(n, &k)| {
            let from = if n == 0 { 0 } else { at[n - 1] + 1 };
            let to = at.get(n + 1).copied().unwrap_or(lines.len());
            let names = shared
                .iter()
                .filter(|(name, scalar)| {
                    orders(&lines[from..k], &lines[k + 1..to], name, *scalar)
                        && !each_thread_its_own(&lines[from..to], name, &threads)
                })
                .map(|(name, _)| name.clone())
                .collect();
            (k, names)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_declarations_in_every_form_are_read() {
        let body = "{ __shared__ T sval[MAX_THDS / WS]; T __shared__ xs; \
            __shared__ int _info, imax; __shared__ S absakk, colmax[(NB + 1) * 2]; \
            extern __shared__ double lmem[]; __shared__ rocblas_complex_num<float> c[N][M]; }";
        let got: Vec<(String, String, String)> = shared_declarations(body)
            .into_iter()
            .map(|d| (d.ty, d.name, d.dims))
            .collect();
        assert!(shared_declarations(body)[6].dynamic);
        let want = [
            ("T", "sval", "[MAX_THDS / WS]"),
            ("T", "xs", ""),
            ("int", "_info", ""),
            ("int", "imax", ""),
            ("S", "absakk", ""),
            ("S", "colmax", "[(NB + 1) * 2]"),
            ("double", "lmem", "[]"),
            ("rocblas_complex_num<float>", "c", "[N][M]"),
        ];
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
        assert_eq!(got, want);
        let at = shared_declarations(body)[1].at;
        assert!(body[at..].starts_with("xs;"));
    }

    #[test]
    fn a_barrier_orders_a_write_before_it_and_another_threads_read_after_it() {
        let kernel = [
            "__shared__ T sval[256];",
            "__syncthreads();",
            "sval[tid] = x[tid];",
            "__syncthreads();",
            "if(tid == 0) y = sval[1] + sval[0];",
            "__syncthreads();",
        ];
        let got = barrier_orders(&kernel);
        // At the start and end nothing is ordered; the middle one orders `sval`.
        assert_eq!(
            got,
            [(1, vec![]), (3, vec!["sval".to_string()]), (5, vec![])]
        );
        // Each thread in its own column of a shared tile: nothing to order between
        // threads (rocblas_trsm_kernels.hpp's `sB`), while the tile read across
        // columns is ordered.
        let columns = [
            "const int tx = threadIdx.x;",
            "__shared__ T sA[NB * NB];",
            "__shared__ T sB[NB * NB];",
            "for(int i = 0; i < n; i++) { sA[i * NB + tx] = A[i]; sB[i * NB + tx] = B[i]; }",
            "__syncthreads();",
            "for(int i = 0; i < n; i++) resB[0] = sB[(i - 3) * NB + tx] * sA[i * NB + j];",
            "sB[(i + 1) * NB + tx] = resB[0];",
            "rocblas_int col_off = j * NB; T sB_reg = sB[col_off + tx];",
            "resB[j] = sB[tx + NB * (i - j)];",
        ];
        assert_eq!(barrier_orders(&columns), [(4, vec!["sA".to_string()])]);
        // The same tile read at another thread's column is ordered.
        let mut across = columns;
        across[6] = "sB[(i + 1) * NB + tx] = sB[i * NB + j];";
        assert_eq!(
            barrier_orders(&across),
            [(4, vec!["sA".to_string(), "sB".to_string()])]
        );
        // A thread reading back its own element needs no barrier.
        let own = [
            "__shared__ T s[64];",
            "s[tid] = a;",
            "__syncthreads();",
            "b = s[tid];",
        ];
        assert_eq!(barrier_orders(&own), [(2, vec![])]);
        // A scalar one thread writes and all read.
        let scalar = [
            "__shared__ int _info;",
            "if(tid == 0) _info = 0;",
            "__syncthreads();",
            "if(_info) return;",
        ];
        assert_eq!(barrier_orders(&scalar), [(2, vec!["_info".to_string()])]);
    }

    #[test]
    fn an_element_chosen_by_another_thread_index_is_not_the_threads_own() {
        // rocblas_trmm_kernels.cpp:518-550: thread (tx, ty) writes `sA[ty * NB + tx]`,
        // then reads `sA[i * NB + tx]` for every i: rows other threads wrote.
        let kernel = [
            "const int tx = threadIdx.x;",
            "const int ty = threadIdx.y;",
            "__shared__ T sA[NB * NB];",
            "__shared__ T sB[NB * NB];",
            "sA[ty * NB + tx] = A[ty * lda + tx];",
            "__syncthreads();",
            "for(int i = 0; i < NB; i++) acc += sA[i * NB + tx];",
        ];
        assert!(thread_owned_arrays(&kernel).is_empty());
        // One column per thread, in a 1-D block (rocblas_trsm_kernels.hpp's `sB`).
        let own = [
            "const int tx = threadIdx.x;",
            "__shared__ T sB[NB * NB];",
            "for(int i = 0; i < NB; i++) sB[i * NB + tx] = B[i];",
            "__syncthreads();",
            "for(int i = 0; i < NB; i++) acc += sB[i * NB + tx];",
        ];
        assert_eq!(thread_owned_arrays(&own), ["sB".to_string()]);
    }

    #[test]
    fn a_barrier_orders_writes_to_elements_another_thread_writes_again() {
        // rocblas_iamax_iamin_kernels.hpp:52-69.
        let kernel = [
            "__shared__ T psums[warpSize];",
            "if(wavefront == 0) psums[wavelet] = T{};",
            "__syncthreads();",
            "if(wavelet == 0) psums[wavefront] = val;",
            "__syncthreads();",
            "val = (threadIdx.x < num_wavefronts) ? psums[wavelet] : T{};",
        ];
        assert_eq!(
            barrier_orders(&kernel),
            [(2, vec![]), (4, vec!["psums".to_string()])]
        );
        assert_eq!(
            barrier_write_orders(&kernel),
            [(2, vec!["psums".to_string()]), (4, vec![])]
        );
        // Each thread writing its own element again needs no barrier.
        let own = [
            "__shared__ T s[64];",
            "s[tid] = a;",
            "__syncthreads();",
            "s[tid] = b;",
        ];
        assert_eq!(barrier_write_orders(&own), [(2, vec![])]);
    }
}
