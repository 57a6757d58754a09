//! Public API discovery: every exported function declared in the library's public
//! headers, grouped into families (`rocblas_sscal` ... `rocblas_zdscal_strided_batched_64`
//! are all family `scal`).

use std::collections::{BTreeSet, HashMap};

use regex::Regex;

use super::lex::strip_comments;
use crate::model::ApiFunction;

/// Finds `EXPORT ... name(` declarations in one header's text.
///
/// The declaration is read from the export macro to the first `(`; attributes and
/// return types in between do not matter. Comments are ignored, so commented-out
/// declarations do not count.
pub fn declarations(
    file: &str,
    text: &str,
    export_macro: &str,
    prefix: &str,
) -> Vec<(String, String, u32)> {
    let clean = strip_comments(text);
    let pat = format!(
        r"\b{}\b[^;{{}}()]*?\b({}\w+)\s*\(",
        regex::escape(export_macro),
        regex::escape(prefix)
    );
    let re = Regex::new(&pat).expect("escaped pattern is valid");
    // Lines are counted incrementally: the big headers hold a thousand declarations.
    let (mut line, mut counted) = (1u32, 0usize);
    re.captures_iter(&clean)
        .filter_map(|c| {
            let m = c.get(1)?;
            line += clean.as_bytes()[counted..m.start()]
                .iter()
                .filter(|b| **b == b'\n')
                .count() as u32;
            counted = m.start();
            Some((m.as_str().to_string(), file.to_string(), line))
        })
        .collect()
}

/// Splits names into families: strips the prefix, variant suffixes, and a precision
/// prefix when the remaining base is shared by at least two precisions (so that
/// `rocblas_create_handle` stays `create_handle` rather than `c` + `reate_handle`).
pub fn group(
    decls: Vec<(String, String, u32)>,
    prefix: &str,
    precisions: &[String],
    suffixes: &[String],
) -> Vec<ApiFunction> {
    let mut seen = BTreeSet::new();
    let decls: Vec<_> = decls
        .into_iter()
        .filter(|d| seen.insert(d.0.clone()))
        .collect();
    // Strip variant suffixes first.
    let stems: Vec<(String, Vec<String>)> = decls
        .iter()
        .map(|(name, _, _)| {
            let mut stem = name.strip_prefix(prefix).unwrap_or(name).to_string();
            let mut variants = Vec::new();
            'outer: loop {
                for s in suffixes {
                    let tail = format!("_{s}");
                    if stem.len() > tail.len() && stem.ends_with(&tail) {
                        stem.truncate(stem.len() - tail.len());
                        variants.insert(0, s.clone());
                        continue 'outer;
                    }
                }
                break;
            }
            (stem, variants)
        })
        .collect();
    // Which bases are shared by several precisions. Counted twice: a stem that is
    // itself such a base (`scal` of `rocblas_scal_ex`) has no precision prefix, so the
    // second count leaves it out (otherwise `scal` would read as `s` + `cal`).
    let count = |skip: &BTreeSet<&str>| {
        let mut precisions_of: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        for (stem, _) in &stems {
            if skip.contains(stem.as_str()) {
                continue;
            }
            for p in precisions {
                if let Some(base) = stem.strip_prefix(p.as_str()) {
                    if !base.is_empty() {
                        precisions_of.entry(base).or_default().insert(p.as_str());
                    }
                }
            }
        }
        precisions_of
    };
    let first = count(&BTreeSet::new());
    let bases: BTreeSet<&str> = first
        .iter()
        .filter(|(_, p)| p.len() >= 2)
        .map(|(b, _)| *b)
        .collect();
    let precisions_of = count(&bases);
    decls
        .iter()
        .zip(&stems)
        .map(|((name, file, line), (stem, variants))| {
            let best = precisions
                .iter()
                .filter(|_| !bases.contains(stem.as_str()))
                .filter_map(|p| {
                    let base = stem.strip_prefix(p.as_str())?;
                    let n = precisions_of.get(base).map(|s| s.len()).unwrap_or(0);
                    (n >= 2).then_some((n, p.len(), p.clone(), base.to_string()))
                })
                .max();
            let (precision, family) = match best {
                Some((_, _, p, base)) => (p, base),
                None => (String::new(), stem.clone()),
            };
            ApiFunction {
                name: name.clone(),
                family,
                precision,
                variants: variants.clone(),
                file: file.clone(),
                line: *line,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_exported_declarations_only() {
        let text = "ROCX_EXPORT rocx_status rocx_sscal(\n int n);\n// ROCX_EXPORT rocx_status rocx_gone(int);\nROCX_EXPORT ROCX_DEPRECATED rocx_status\n    rocx_sscal_64(long n);\nrocx_status rocx_internal(int);\n";
        let d = declarations("h.h", text, "ROCX_EXPORT", "rocx_");
        let names: Vec<(&str, u32)> = d.iter().map(|x| (x.0.as_str(), x.2)).collect();
        assert_eq!(names, [("rocx_sscal", 1), ("rocx_sscal_64", 5)]);
    }

    #[test]
    fn families_strip_precision_only_when_shared() {
        let names = [
            "rocx_sscal",
            "rocx_dscal",
            "rocx_zdscal_strided_batched_64",
            "rocx_csscal",
            "rocx_create_handle",
            "rocx_gemm_batched_ex",
            "rocx_cdotc",
            "rocx_zdotc",
            "rocx_scal_ex",
            "rocx_dotc_ex",
            "rocx_cscal",
        ];
        let decls = names
            .iter()
            .map(|n| (n.to_string(), "h".to_string(), 1))
            .collect();
        let api = group(
            decls,
            "rocx_",
            &strs(&["s", "d", "c", "z", "h", "cs", "zd"]),
            &strs(&["64", "ex", "strided_batched", "batched"]),
        );
        let got: Vec<(&str, &str, Vec<String>)> = api
            .iter()
            .map(|a| (a.family.as_str(), a.precision.as_str(), a.variants.clone()))
            .collect();
        assert_eq!(got[0], ("scal", "s", vec![]));
        assert_eq!(got[2], ("scal", "zd", strs(&["strided_batched", "64"])));
        assert_eq!(got[3], ("scal", "cs", vec![]));
        assert_eq!(got[4], ("create_handle", "", vec![]));
        assert_eq!(got[5], ("gemm", "", strs(&["batched", "ex"])));
        assert_eq!(got[6], ("dotc", "c", vec![]));
        assert_eq!(got[7], ("dotc", "z", vec![]));
        assert_eq!(got[8], ("scal", "", strs(&["ex"])));
        assert_eq!(got[9], ("dotc", "", strs(&["ex"])));
        assert_eq!(got[10], ("scal", "c", vec![]));
    }
}
