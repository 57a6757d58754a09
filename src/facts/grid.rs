//! How a launch's grid is counted: each dimension's expression (the local variable's
//! definition when the launch passes a name), whether its division rounds up or down,
//! and, for a one-dimensional block, how many elements each thread covers.
//!
//! Read so that a claim about the block count ("a floor division, so the tail is
//! dropped") or the work per thread ("each thread scales four elements") can be held
//! against the code: `int32_t blocks = (n - 1) / (NB * 2) + 1;` with `dim3 threads(NB)`
//! is a ceiling division with two elements per thread.

use std::sync::OnceLock;

use regex::Regex;

use super::code::{eval_int, split_args, tidy};
use super::{last_dim3, substitute, ParamValues};

/// Which way a grid dimension's division rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// `(n - 1) / D + 1`, `(n + D - 1) / D`, a `ceil`/`div_up` helper.
    Up,
    /// `n / D`.
    Down,
}

impl Rounding {
    pub fn label(self) -> &'static str {
        match self {
            Rounding::Up => "up",
            Rounding::Down => "down",
        }
    }
}

/// One dimension of a grid as the code counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridDim {
    /// `x`, `y` or `z`.
    pub axis: char,
    /// The argument, with its definition when it is a local (`blocks = (n - 1) / NB + 1`).
    pub text: String,
    /// The rounding of its division, when it divides.
    pub rounding: Option<Rounding>,
    /// What is divided, when it is a plain name (`n`).
    pub dividend: Option<String>,
    /// The divisor's value, when known.
    pub divisor: Option<i64>,
}

/// The dimensions of a launch's grid argument (`grid`, `dim3(blocks, 1, batches)` or a
/// plain expression), each resolved through the code before the launch.
pub fn grid_dims(grid: &str, before: &str, pv: &ParamValues) -> Vec<GridDim> {
    let a = grid.trim();
    let args = if super::is_name(a) {
        last_dim3(a, before).unwrap_or_else(|| a.to_string())
    } else {
        a.to_string()
    };
    let inner = match args.strip_prefix("dim3") {
        Some(rest) => {
            let rest = rest.trim();
            rest.get(1..rest.len().saturating_sub(1))
                .filter(|_| rest.starts_with(['(', '{']) && rest.ends_with([')', '}']))
                .unwrap_or(rest)
                .to_string()
        }
        None => args,
    };
    split_args(&inner, true)
        .into_iter()
        .zip(['x', 'y', 'z'])
        .map(|(arg, axis)| {
            let arg = arg.trim().to_string();
            let (text, expr) = match super::is_name(&arg)
                .then(|| last_definition(&arg, before))
                .flatten()
            {
                Some(def) => (format!("{arg} = {def}"), def),
                None => (arg.clone(), arg),
            };
            let (rounding, dividend, divisor) = division(&expr);
            GridDim {
                axis,
                text,
                rounding,
                dividend,
                divisor: divisor.and_then(|d| eval_int(&substitute(&d, pv))),
            }
        })
        .collect()
}

/// Elements each thread covers along x: the x dimension divides a plain name by a
/// known divisor that is a whole multiple of a one-dimensional block, and the kernel
/// has no grid-stride loop (`gridDim`), under which a thread covers more.
pub fn elements_per_thread(
    dims: &[GridDim],
    block: Option<&[i64]>,
    kernel: &str,
) -> Option<(i64, String)> {
    let x = dims.first()?;
    let block = block?;
    let bx = *block.first()?;
    if block.iter().skip(1).any(|&d| d != 1) || kernel.contains("gridDim") {
        return None;
    }
    let of = x.dividend.clone()?;
    let d = x.divisor?;
    (x.rounding.is_some() && bx > 0 && d % bx == 0).then_some((d / bx, of))
}

/// The expression a local gets last before the launch (`int32_t blocks = E;`,
/// `blocks = E;`), read backwards.
/// A compound assignment after it (`blocksX *= blocksY;`) is applied to it, with a
/// local operand read the same way: `(m - 1) / DIM_X + 1` becomes
/// `((m - 1) / DIM_X + 1) * ((n - 1) / (DIM_Y * WIN) + 1)`.
fn last_definition(name: &str, before: &str) -> Option<String> {
    let b = before.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // Compound assignments met reading backwards: `(offset, operator, operand)`.
    let mut later: Vec<(usize, &str, String)> = Vec::new();
    let found = before.rmatch_indices(name).find_map(|(k, _)| {
        let end = k + name.len();
        if k > 0 && (word(b[k - 1]) || matches!(b[k - 1], b'.' | b'>')) {
            return None;
        }
        if b.get(end).is_some_and(|&c| word(c)) {
            return None;
        }
        let rest = before[end..].trim_start();
        for op in ["*", "/", "+", "-", "<<", ">>"] {
            if let Some(rhs) = rest.strip_prefix(op).and_then(|r| r.strip_prefix('=')) {
                let stmt = rhs.split(';').next()?;
                if stmt.len() < rhs.len() {
                    later.push((k, op, tidy(stmt)));
                }
                return None;
            }
        }
        let rhs = rest.strip_prefix('=').filter(|r| !r.starts_with('='))?;
        let stmt = rhs.split(';').next()?;
        // The statement must end before the launch.
        (stmt.len() < rhs.len()).then(|| tidy(stmt))
    })?;
    Some(
        later
            .into_iter()
            .rev()
            .fold(found, |acc, (k, op, operand)| {
                let operand = match super::is_name(&operand)
                    .then(|| last_definition(&operand, &before[..k]))
                    .flatten()
                {
                    Some(def) => def,
                    None => operand,
                };
                format!("({acc}) {op} ({operand})")
            }),
    )
}

/// The rounding of a division, what it divides (a plain name) and the divisor's text.
fn division(expr: &str) -> (Option<Rounding>, Option<String>, Option<String>) {
    static UP_MINUS: OnceLock<Regex> = OnceLock::new();
    static UP_PLUS: OnceLock<Regex> = OnceLock::new();
    static UP_CALL: OnceLock<Regex> = OnceLock::new();
    static DOWN: OnceLock<Regex> = OnceLock::new();
    let e: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
    // `(n - 1) / D + 1`, `((n - 1) / D) + 1`.
    let up_minus = UP_MINUS
        .get_or_init(|| Regex::new(r"^\(([A-Za-z_][\w.]*)-1\)/(.+)\+1$").expect("static regex"));
    // `((n - 1) / D) + 1` is read as `(n - 1) / D + 1`.
    let e = match e.strip_prefix("((").and_then(|r| r.strip_suffix(")+1")) {
        Some(inner) if inner.matches('(').count() + 1 == inner.matches(')').count() => {
            format!("({inner}+1")
        }
        _ => e,
    };
    // `(n + D - 1) / D`, `(n + (D - 1)) / D`.
    let up_plus = UP_PLUS.get_or_init(|| {
        Regex::new(r"^\(([A-Za-z_][\w.]*)\+\(?(.+?)-1\)?\)/(.+)$").expect("static regex")
    });
    let up_call =
        UP_CALL.get_or_init(|| Regex::new(r"(?i)ceil|div_?up|round_?up").expect("static regex"));
    // `n / D`.
    let down = DOWN.get_or_init(|| {
        Regex::new(r"^([A-Za-z_][\w.]*)/([\w]+|\([^()]+\))$").expect("static regex")
    });
    if let Some(c) = up_minus.captures(&e) {
        return (
            Some(Rounding::Up),
            Some(c[1].to_string()),
            Some(c[2].to_string()),
        );
    }
    if let Some(c) = up_plus.captures(&e) {
        let d = c[3].trim_start_matches('(').trim_end_matches(')');
        if c[2].trim_start_matches('(').trim_end_matches(')') == d {
            return (
                Some(Rounding::Up),
                Some(c[1].to_string()),
                Some(c[3].to_string()),
            );
        }
    }
    if up_call.is_match(&e) {
        return (Some(Rounding::Up), None, None);
    }
    if let Some(c) = down.captures(&e) {
        return (
            Some(Rounding::Down),
            Some(c[1].to_string()),
            Some(c[2].to_string()),
        );
    }
    (None, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(pairs: &[(&str, &str)]) -> ParamValues {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_local_block_count_is_read_with_its_rounding() {
        let before = "    int batches = handle->getBatchGridDim((int)batch_count);\n    int32_t blocks = (n - 1) / (NB * 2) + 1;\n    dim3    grid(blocks, 1, batches);\n    dim3    threads(NB);\n";
        let dims = grid_dims("grid", before, &pv(&[("NB", "256")]));
        assert_eq!(dims.len(), 3);
        assert_eq!(dims[0].text, "blocks = (n - 1) / (NB * 2) + 1");
        assert_eq!(dims[0].rounding, Some(Rounding::Up));
        assert_eq!(dims[0].dividend.as_deref(), Some("n"));
        assert_eq!(dims[0].divisor, Some(512));
        assert_eq!(dims[1].rounding, None);
        assert_eq!(
            elements_per_thread(&dims, Some(&[256]), "tid * 2"),
            Some((2, "n".to_string()))
        );
        // A two-dimensional block, or a grid-stride loop: not judged.
        assert_eq!(elements_per_thread(&dims, Some(&[256, 4]), ""), None);
        assert_eq!(
            elements_per_thread(&dims, Some(&[256]), "i += gridDim.x"),
            None
        );
    }

    #[test]
    fn each_way_of_writing_a_division_is_classified() {
        for (expr, want) in [
            ("((m - 1) / blk_m) + 1", Some(Rounding::Up)),
            ("(n + NB - 1) / NB", Some(Rounding::Up)),
            ("(n + (NB - 1)) / NB", Some(Rounding::Up)),
            ("rocblas_ceil_div(n, NB)", Some(Rounding::Up)),
            ("m / blk_m", Some(Rounding::Down)),
            ("n / (NB * 4)", Some(Rounding::Down)),
            ("batch_count", None),
            ("(n + 7) / NB", None),
        ] {
            assert_eq!(division(expr).0, want, "{expr}");
        }
        let dims = grid_dims(
            "dim3((n - 1) / NB + 1, 1, batches)",
            "",
            &pv(&[("NB", "64")]),
        );
        assert_eq!(dims[0].divisor, Some(64));
        // An assignment after the declaration is the value the launch sees.
        let before = "int blocks = 1;\nif(big) blocks = (n + NB - 1) / NB;\n";
        assert_eq!(
            grid_dims("dim3(blocks)", before, &pv(&[]))[0].text,
            "blocks = (n + NB - 1) / NB"
        );
        // rocblas_ger_kernels.hpp:414-418: a later `*=` is part of the value.
        let before = "rocblas_int blocksX = (m - 1) / DIM_X + 1;\nrocblas_int blocksY = (n - 1) / (DIM_Y * WIN) + 1;\nblocksX *= blocksY;\ndim3 ger_grid(blocksX, 1, batches);\n";
        let dims = grid_dims("ger_grid", before, &pv(&[]));
        assert_eq!(
            dims[0].text,
            "blocksX = ((m - 1) / DIM_X + 1) * ((n - 1) / (DIM_Y * WIN) + 1)"
        );
        assert_eq!(dims[0].rounding, None);
    }
}
