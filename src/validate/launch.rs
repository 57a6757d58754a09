//! Threads per block in an answer's code against the target's limit and the kernel's own
//! launch bounds.
//!
//! clang accepts `__launch_bounds__(2048)` and a `dim3` block of 64x64 though no AMD GPU
//! runs more than 1024 threads per block: the kernel would never launch. Nor does a
//! launch of 1024 threads of a kernel declared `__launch_bounds__(256)`: the runtime
//! refuses it. The sizes are read where code states them (launch bounds, `dim3` blocks,
//! the block argument of a launch) and evaluated when they are built from literals and
//! constants the code defines; a size the code computes at run time is left to the
//! reader.

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

/// The kernel and the block argument of each launch: the second of `<<<grid, block,
/// ...>>>`, the third of `hipLaunchKernelGGL(kernel, grid, block, ...)`. The kernel is
/// the last name before `<<<` or of the first argument, template arguments aside.
fn launch_blocks(code: &str) -> Vec<(Option<&str>, &str)> {
    let mut out = Vec::new();
    for (mark, index) in [("<<<", 1), ("hipLaunchKernelGGL", 2)] {
        let mut rest = code;
        while let Some(k) = rest.find(mark) {
            let head = &rest[..k];
            rest = &rest[k + mark.len()..];
            let body = rest.trim_start().strip_prefix('(').unwrap_or(rest);
            let args = top_level_args(body);
            let kernel_text = if index == 1 {
                head.rsplit([';', '{', '}', '\n']).next().unwrap_or("")
            } else {
                args.first().copied().unwrap_or("")
            };
            if let Some(arg) = args.get(index) {
                out.push((kernel_name(kernel_text), arg.trim()));
            }
        }
    }
    out
}

/// The name a launch expression launches: `(scale<float, 256>)` is `scale`.
fn kernel_name(expr: &str) -> Option<&str> {
    let untemplated = expr.split('<').next().unwrap_or(expr);
    untemplated
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
}

/// `__launch_bounds__(N)` of each `__global__` function the code defines, by name.
fn kernel_bounds(code: &str, consts: &HashMap<String, u64>) -> HashMap<String, u64> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"__launch_bounds__\s*\(\s*\(?([^,()]+)\)?\s*(?:,[^)]*)?\)[^(;{]*?\b([A-Za-z_]\w*)\s*\(")
            .expect("static regex")
    });
    re.captures_iter(code)
        .filter_map(|c| Some((c[2].to_string(), eval(&c[1], consts)?)))
        .collect()
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
    let bounds = kernel_bounds(code, &consts);
    for (kernel, arg) in launch_blocks(code) {
        let inner = arg
            .strip_prefix("dim3")
            .map(|a| a.trim().trim_start_matches('(').trim_end_matches(')'));
        let n = match inner {
            Some(dims) => block(dims, &consts),
            None => blocks.get(arg).copied().or_else(|| eval(arg, &consts)),
        };
        let Some(n) = n else { continue };
        if n > max {
            return Some(format!(
                "a launch with {n} threads per block; AMD GPUs run at most {max}"
            ));
        }
        if let Some((k, b)) = kernel.and_then(|k| Some((k, *bounds.get(k)?))) {
            if n > b {
                return Some(format!(
                    "a launch of {k} with {n} threads per block; its __launch_bounds__ allows {b}"
                ));
            }
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

    #[test]
    fn a_launch_beyond_the_kernels_own_bounds_is_found() {
        let kernel = "__global__ void __launch_bounds__(256) scale(int n, float* x) {}\n";
        for launch in [
            "void f(float* x) { hipLaunchKernelGGL(scale, dim3(4), dim3(1024), 0, 0, 1, x); }",
            "void f(float* x) { scale<<<4, 512>>>(1, x); }",
            "constexpr int BS = 512;\nvoid f(float* x) { dim3 b(BS); hipLaunchKernelGGL((scale), dim3(4), b, 0, 0, 1, x); }",
        ] {
            let why = over_limit(&format!("{kernel}{launch}"), 1024).expect(launch);
            assert!(why.contains("scale") && why.contains("allows 256"), "{why}");
        }
        for launch in [
            "void f(float* x) { hipLaunchKernelGGL(scale, dim3(4), dim3(256), 0, 0, 1, x); }",
            "void f(float* x) { scale<<<4, 128>>>(1, x); }",
            // Another kernel's launch is not held to these bounds.
            "void f(float* x) { other<<<4, 1024>>>(1, x); }",
        ] {
            assert_eq!(
                over_limit(&format!("{kernel}{launch}"), 1024),
                None,
                "{launch}"
            );
        }
    }
}
