//! Threads per block in an answer's code against the target's limit.
//!
//! clang accepts `__launch_bounds__(2048)` and a `dim3` block of 64x64 though no AMD GPU
//! runs more than 1024 threads per block: the kernel would never launch. The sizes are
//! read where code states them (launch bounds, `dim3` blocks, the block argument of a
//! launch) and evaluated when they are built from literals and constants the code
//! defines; a size the code computes at run time is left to the reader.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

fn const_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?m)(?:#\s*define\s+([A-Za-z_]\w*)\s+\(?\s*(\d+)[uUlL]*\s*\)?\s*$|\b(?:constexpr|const)\s+[\w:<> ]*?\b([A-Za-z_]\w*)\s*=\s*(\d+)[uUlL]*\s*;|\b(?:int|unsigned|size_t|uint32_t|int32_t|rocblas_int)\s+([A-Za-z_]\w*)\s*=\s*(\d+)[uUlL]*\s*[,>])")
            .expect("static regex")
    })
}

fn bounds_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?:__launch_bounds__|ROCBLAS_KERNEL|amdgpu_flat_work_group_size)\s*\(\s*\(?([^,()]+)",
        )
        .expect("static regex")
    })
}

fn dim3_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\bdim3\s+([A-Za-z_]\w*)\s*[\({]([^;]*?)[\)}]\s*;").expect("static regex")
    })
}

/// The block argument of each launch: the second of `<<<grid, block, ...>>>`, the third
/// of `hipLaunchKernelGGL(kernel, grid, block, ...)`.
fn launch_blocks(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (mark, index) in [("<<<", 1), ("hipLaunchKernelGGL", 2)] {
        let mut rest = code;
        while let Some(k) = rest.find(mark) {
            rest = &rest[k + mark.len()..];
            let body = rest.trim_start().strip_prefix('(').unwrap_or(rest);
            if let Some(arg) = top_level_args(body).get(index) {
                out.push(arg.trim());
            }
        }
    }
    out
}

/// Comma-separated arguments up to the closing bracket (or `>>>`), nesting respected.
fn top_level_args(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut args) = (0i32, 0, Vec::new());
    let mut end = s.len();
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' | ';' if depth == 0 => {
                end = i;
                break;
            }
            ')' | ']' | '}' => depth -= 1,
            '>' if depth == 0 && s[i..].starts_with(">>>") => {
                end = i;
                break;
            }
            ',' if depth == 0 => {
                args.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    args.push(&s[start..end]);
    args
}

/// Evaluates `a * b * ...` of literals and known constants; `None` when any factor is
/// not known.
fn eval(expr: &str, consts: &HashMap<String, u64>) -> Option<u64> {
    let mut v: u64 = 1;
    for f in expr.split('*') {
        let f = f.trim().trim_matches(|c| c == '(' || c == ')').trim();
        let f = f.trim_end_matches(['u', 'U', 'l', 'L']);
        let n = f.parse::<u64>().ok().or_else(|| consts.get(f).copied())?;
        v = v.checked_mul(n)?;
    }
    Some(v)
}

/// Product of a block's dimensions given as `a, b, c`.
fn block(dims: &str, consts: &HashMap<String, u64>) -> Option<u64> {
    dims.split(',')
        .map(|d| eval(d, consts))
        .try_fold(1u64, |acc, d| acc.checked_mul(d?))
}

/// Where the code asks for more than `max` threads per block, described.
pub fn over_limit(code: &str, max: u64) -> Option<String> {
    let mut consts = HashMap::new();
    for c in const_re().captures_iter(code) {
        let pair = [(1, 2), (3, 4), (5, 6)]
            .iter()
            .find_map(|&(n, v)| Some((c.get(n)?.as_str(), c.get(v)?.as_str())));
        if let Some((name, value)) = pair {
            if let Ok(v) = value.parse::<u64>() {
                consts.insert(name.to_string(), v);
            }
        }
    }
    for c in bounds_re().captures_iter(code) {
        if let Some(n) = c.get(1).and_then(|m| eval(m.as_str(), &consts)) {
            if n > max {
                return Some(format!(
                    "launch bounds of {n} threads per block; AMD GPUs run at most {max}"
                ));
            }
        }
    }
    let mut blocks = HashMap::new();
    for c in dim3_re().captures_iter(code) {
        if let (Some(name), Some(n)) = (c.get(1), c.get(2).and_then(|m| block(m.as_str(), &consts)))
        {
            if n > max {
                return Some(format!(
                    "dim3 {} of {n} threads; AMD GPUs run at most {max} per block",
                    name.as_str()
                ));
            }
            blocks.insert(name.as_str().to_string(), n);
        }
    }
    for arg in launch_blocks(code) {
        let inner = arg
            .strip_prefix("dim3")
            .map(|a| a.trim().trim_start_matches('(').trim_end_matches(')'));
        let n = match inner {
            Some(dims) => block(dims, &consts),
            None => blocks.get(arg).copied().or_else(|| eval(arg, &consts)),
        };
        if let Some(n) = n.filter(|n| *n > max) {
            return Some(format!(
                "a launch with {n} threads per block; AMD GPUs run at most {max}"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_over_the_limit_are_found() {
        let over = [
            "__global__ void __launch_bounds__(2048) k(float* x) {}",
            "constexpr int NB = 1024;\n__global__ void __launch_bounds__(NB * 2) k() {}",
            "#define BS 64\nvoid f() { dim3 threads(BS, BS); hipLaunchKernelGGL(k, dim3(1), threads, 0, 0); }",
            "void f() { k<<<grid, 2048>>>(x); }",
            "void f() { hipLaunchKernelGGL(k, dim3(4), dim3(64, 32), 0, 0, x); }",
            "void f() { k<<<dim3(2, 2), dim3(64, 64)>>>(x); }",
        ];
        for code in over {
            assert!(over_limit(code, 1024).is_some(), "{code}");
        }
        let fine = [
            "template <int NB = 256>\n__global__ void __launch_bounds__(NB) k() {}",
            "__global__ void __launch_bounds__(1024) k() {}",
            "void f(int n) { dim3 threads(n); k<<<grid, threads>>>(x); }",
            "void f() { dim3 threads(32, 32); hipLaunchKernelGGL(k, dim3(1), threads, 0, 0); }",
        ];
        for code in fine {
            assert_eq!(over_limit(code, 1024), None, "{code}");
        }
    }
}
