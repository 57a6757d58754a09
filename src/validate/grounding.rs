//! Grounding: what an answer names and quotes must exist.
//!
//! Identifiers an answer presents as library functions, kernels or macros must be in
//! the index (or the code shown, HIP, or C++); code quoted as the library's must appear
//! in the slice. An invented kernel name is the commonest hallucination of a model that
//! explains code, and the cheapest to catch.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;

use crate::model::LibraryIndex;

/// Names the libraries define: symbols, macros and API functions of the indexes.
#[derive(Debug, Default, Clone)]
pub struct KnownNames {
    names: HashSet<String>,
    prefixes: Vec<String>,
}

impl KnownNames {
    /// Collects every definition, macro and API name; `prefixes` (e.g. `rocblas_`) mark
    /// words that claim to be the library's.
    pub fn from_indexes(indexes: &[&LibraryIndex], prefixes: &[String]) -> KnownNames {
        let mut names = HashSet::new();
        for idx in indexes {
            for f in &idx.files {
                names.extend(f.symbols.iter().map(|s| s.name.clone()));
                names.extend(f.macros.iter().map(|m| m.name.clone()));
            }
            names.extend(idx.api.iter().map(|a| a.name.clone()));
        }
        KnownNames {
            names,
            prefixes: prefixes.to_vec(),
        }
    }

    /// Is the name defined by an indexed library?
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Names known.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when no index was loaded.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

fn ident_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").expect("static regex"))
}

fn backtick_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"`([^`\n]+)`").expect("static regex"))
}

fn fence_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?s)```[a-zA-Z+]*\n(.*?)```").expect("static regex"))
}

fn line_number_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?m)^\s*\d+\| ").expect("static regex"))
}

/// Names HIP and the compiler provide (prefix matches for families of builtins).
fn is_hip_or_cpp(w: &str) -> bool {
    const PREFIXES: [&str; 6] = ["hip", "__", "atomic", "std", "HIP_", "warp"];
    const WORDS: [&str; 24] = [
        "threadIdx",
        "blockIdx",
        "blockDim",
        "gridDim",
        "dim3",
        "size_t",
        "int64_t",
        "int32_t",
        "uint32_t",
        "uint64_t",
        "nullptr",
        "static_cast",
        "reinterpret_cast",
        "const_cast",
        "constexpr",
        "template",
        "typename",
        "decltype",
        "sizeof",
        "min",
        "max",
        "abs",
        "sqrt",
        "fma",
    ];
    PREFIXES.iter().any(|p| w.starts_with(p)) || WORDS.contains(&w)
}

/// Does a word claim to be a library function, kernel or macro?
fn claims_library(w: &str, prefixes: &[String], in_code_span: bool) -> bool {
    let suffix = [
        "_kernel",
        "_template",
        "_launcher",
        "_impl",
        "_device",
        "_calc",
    ]
    .iter()
    .any(|s| w.ends_with(s));
    let prefixed = prefixes
        .iter()
        .any(|p| w.starts_with(p.as_str()) || w.starts_with(&p.to_uppercase()));
    // Inside `code spans`, any snake_case or MACRO_CASE name with an underscore counts.
    let code_like = in_code_span && w.contains('_') && w.len() >= 6;
    suffix || prefixed || code_like
}

/// Identifiers in the answer that claim to be the library's but exist neither in the
/// index nor in the code shown (`slice_text`), nor in HIP or C++. Sorted, unique.
pub fn unknown_identifiers(answer: &str, slice_text: &str, known: &KnownNames) -> Vec<String> {
    let shown: HashSet<&str> = ident_re()
        .find_iter(slice_text)
        .map(|m| m.as_str())
        .collect();
    let spans: HashSet<&str> = backtick_re()
        .captures_iter(answer)
        .filter_map(|c| c.get(1))
        .flat_map(|m| ident_re().find_iter(m.as_str()).map(|w| w.as_str()))
        .collect();
    let mut out: Vec<String> = ident_re()
        .find_iter(answer)
        .map(|m| m.as_str())
        .filter(|w| claims_library(w, &known.prefixes, spans.contains(w)))
        .filter(|w| !known.contains(w) && !shown.contains(w) && !is_hip_or_cpp(w))
        .map(|w| w.to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Code the answer quotes (fenced blocks and code spans that look like statements)
/// which does not appear in the slice, whitespace-normalized. Returns the first such
/// quote, shortened.
pub fn foreign_quote(answer: &str, slice_text: &str) -> Option<String> {
    let shown = squash(&line_number_re().replace_all(slice_text, ""));
    let mut quotes: Vec<String> = fence_re()
        .captures_iter(answer)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().to_string())
        .collect();
    quotes.extend(
        backtick_re()
            .captures_iter(answer)
            .filter_map(|c| c.get(1))
            .map(|m| m.as_str().to_string())
            .filter(|q| q.len() >= 20 && (q.contains(';') || q.contains('(') || q.contains('='))),
    );
    quotes.into_iter().find_map(|q| {
        let q = squash(&q);
        // A quote may be cut short with an ellipsis: match the part before it.
        let head = q.split("...").next().unwrap_or(&q).trim().to_string();
        (!head.is_empty() && !shown.contains(&head)).then(|| q.chars().take(120).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> KnownNames {
        KnownNames {
            names: [
                "rocblas_scal_kernel",
                "rocblas_internal_scal_launcher",
                "ROCBLAS_LAUNCH_KERNEL",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            prefixes: vec!["rocblas_".into()],
        }
    }

    const SLICE: &str = "  184| rocblas_internal_scal_launcher(rocblas_handle handle, API_INT n)\n  293|     ROCBLAS_LAUNCH_KERNEL((rocblas_scal_kernel<API_INT, NB, T>), grid, threads, 0, stream, n);\n";

    #[test]
    fn invented_kernel_names_are_caught() {
        let ok = "The launcher `rocblas_internal_scal_launcher` launches rocblas_scal_kernel via ROCBLAS_LAUNCH_KERNEL using `__syncthreads` and hipLaunchKernelGGL, with `API_INT` n.";
        assert!(
            unknown_identifiers(ok, SLICE, &known()).is_empty(),
            "{:?}",
            unknown_identifiers(ok, SLICE, &known())
        );
        let bad = "It then calls rocblas_scal_fast_kernel and `rocblas_magic_helper` before `DO_SCALE_FAST`.";
        assert_eq!(
            unknown_identifiers(bad, SLICE, &known()),
            [
                "DO_SCALE_FAST",
                "rocblas_magic_helper",
                "rocblas_scal_fast_kernel"
            ]
        );
    }

    #[test]
    fn quotes_must_come_from_the_slice() {
        let ok = "Line 293 reads `ROCBLAS_LAUNCH_KERNEL((rocblas_scal_kernel<API_INT, NB, T>), grid, threads, 0, stream, n);`.";
        assert_eq!(foreign_quote(ok, SLICE), None);
        let bad = "The code does `x[tid] = alpha * x[tid] + beta;` in the kernel.";
        assert!(foreign_quote(bad, SLICE)
            .unwrap()
            .starts_with("x[tid] = alpha"));
        let fenced =
            "```cpp\nrocblas_internal_scal_launcher(rocblas_handle handle,\n    API_INT n)\n```";
        assert_eq!(foreign_quote(fenced, SLICE), None);
    }
}
