//! The fact entries of the whole of real rocBLAS 6.4.4, written by `rocqa extract` with
//! no endpoint and read again by `rocqa validate`, through the real binary: every entry
//! written is kept, and the code an answer marks as code is the slice's, as written.
#![cfg(feature = "real-sources")]

mod common;

use common::{jsonl, project, rocqa_in};

/// Inline code spans of a text.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn every_fact_entry_of_rocblas_is_kept_and_quotes_its_slice() {
    let root = project("");
    let run = |args: &[&str]| rocqa_in(root.path(), args, None);
    run(&["extract", "--lib", "rocblas"]);
    let dir = root.path().join("out/rocblas/6.4.4");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let fe = &manifest["fact_entries"];
    assert_eq!(
        fe["rejected"],
        serde_json::json!({}),
        "refused by validation"
    );
    let entries = jsonl(&dir.join("entries.jsonl"));
    let facts: Vec<&serde_json::Value> = entries
        .iter()
        .filter(|e| e["generator"] == "facts")
        .collect();
    assert!(facts.len() >= 1000, "{} fact entries", facts.len());

    // One answer, one entry: no two fact entries of a template answer alike (the
    // answer below its opening line); a helper kernel's answer lists every API
    // reaching it, of any family.
    let mut answers = std::collections::BTreeMap::new();
    for e in &facts {
        let a = e["answer"].as_str().unwrap();
        let body = a.split_once('\n').map_or(a, |(_, b)| b);
        let key = (e["template_id"].as_str().unwrap(), body);
        if let Some(other) = answers.insert(key, e["id"].as_str().unwrap()) {
            panic!("{} and {other} answer alike", e["id"]);
        }
    }
    // Nor near alike (5-word shingles, Jaccard >= 0.8), but for the few kept so that an
    // API has its 3 entries, which the manifest counts: at most 1% of them.
    let mut near = rocqa::validate::dedup::ExactIndex::default();
    let mut twins = 0;
    for e in &facts {
        let a = e["answer"].as_str().unwrap();
        let body = a.split_once('\n').map_or(a, |(_, b)| b);
        let set = rocqa::validate::dedup::shingles(&format!(
            "{}\n{body}",
            e["template_id"].as_str().unwrap()
        ));
        twins += near.nearest(&set, 0.8).is_some() as usize;
        near.insert(e["id"].as_str().unwrap(), set);
    }
    assert_eq!(twins as u64, fe["similar_answers_kept"].as_u64().unwrap());
    assert!(
        twins * 100 <= facts.len(),
        "{twins} of {} answers have a near twin",
        facts.len()
    );
    let icamax = facts
        .iter()
        .find(|e| {
            e["template_id"] == "facts-kernels"
                && e["apis"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a == "rocblas_icamax")
        })
        .expect("the kernels entry of rocblas_icamax");
    let apis = icamax["apis"].as_array().unwrap();
    assert!(
        apis.iter().any(|a| a == "rocblas_icamin"),
        "amax and amin launch through one launcher: {apis:?}"
    );

    let validated = run(&["validate", dir.join("entries.jsonl").to_str().unwrap()]);
    let n = entries.len();
    assert!(
        validated.contains(&format!("{n} entries: {n} pass, 0 rejected")),
        "{validated}"
    );

    // Names, conditions and values are marked as code; nearly every answer has some.
    let with_spans = facts
        .iter()
        .filter(|e| !spans(e["answer"].as_str().unwrap()).is_empty())
        .count();
    assert!(
        with_spans * 100 >= facts.len() * 95,
        "{with_spans} of {} fact answers mark code",
        facts.len()
    );

    // An API's returns before any launch are one answer, in the order the code runs
    // them, so that each reads with those before it: rocblas_iamax_iamin.hpp tests
    // `!result` (:111), returns success when `n <= 0 || incx <= 0` (:117) and only
    // then calls a null `x` invalid (:133), as rocBLAS's own client tests expect
    // (testing_iamax_iamin.hpp: n = 0 with a null x is success).
    let early = |api: &str| {
        facts
            .iter()
            .find(|e| {
                e["template_id"] == "facts-early-returns"
                    && e["apis"].as_array().unwrap().iter().any(|a| a == api)
            })
            .unwrap_or_else(|| panic!("the early-returns entry of {api}"))["answer"]
            .as_str()
            .unwrap()
    };
    let answer = early("rocblas_isamax");
    let at = |said: &str| {
        answer
            .find(said)
            .unwrap_or_else(|| panic!("{said} not in {answer}"))
    };
    assert!(
        at("if `!result` (library/src/blas1/rocblas_iamax_iamin.hpp:111-113)")
            < at("`rocblas_status_success` if `n <= 0 || incx <= 0` (library/src/blas1/rocblas_iamax_iamin.hpp:117-130)")
    );
    assert!(
        at("`rocblas_status_success` if `n <= 0 || incx <= 0`")
            < at("`rocblas_status_invalid_pointer` if `!x` (library/src/blas1/rocblas_iamax_iamin.hpp:133-135)")
    );
    assert!(
        at("`!x`") < at("`rocblas_status_memory_error` if `!w_mem`"),
        "the workspace is allocated after the argument check: {answer}"
    );
    // rocblas_sscal's (rocblas_scal_imp.hpp:88-96): the size test, then the pointers,
    // then `*alpha == 1` in host mode. Numerics checking's returns
    // (check_numerics_vector.cpp:181) run only when the handle asks: not listed here.
    let answer = early("rocblas_sscal");
    let order: Vec<usize> = [
        "if `!handle` (library/src/blas1/rocblas_scal_imp.hpp:55-56)",
        "if `n <= 0 || incx <= 0` (library/src/blas1/rocblas_scal_imp.hpp:88-89)",
        "if `!x || !alpha` (library/src/blas1/rocblas_scal_imp.hpp:90-91)",
        "if `*alpha == 1` (library/src/blas1/rocblas_scal_imp.hpp:95-96)",
    ]
    .iter()
    .map(|said| {
        answer
            .find(said)
            .unwrap_or_else(|| panic!("{said} not in {answer}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{answer}");
    assert!(!answer.contains("check_numerics"), "{answer}");
    // No answer is cut short: what does not fit one answer is split into answers each
    // about the code of named functions, which the question names.
    for e in &facts {
        let (q, a) = (
            e["question"].as_str().unwrap(),
            e["answer"].as_str().unwrap(),
        );
        assert!(!a.contains("not listed"), "{a}");
        if e["template_id"] == "facts-early-returns" {
            assert!(!a.contains("check_numerics"), "{a}");
        }
        assert_ne!(e["template_id"], "facts-declaration", "{q}");
    }

    // How the forms of rocblas_sscal differ, read off their prototypes
    // (rocblas-functions.h:161-166 declares `float* const   x[]` and `batch_count`), the
    // quick returns of their own `_impl`s (rocblas_scal_batched_imp.hpp:100 reads
    // `if(n <= 0 || incx <= 0 || batch_count <= 0)` where rocblas_scal_imp.hpp:88 reads
    // `if(n <= 0 || incx <= 0)`; the launcher's own test, rocblas_scal_kernels.hpp:195,
    // never fires after them) and the chunking loops of the `_64` launcher
    // (rocblas_scal_kernels_64.cpp:50 and :55, again at :81 and :86).
    let forms = facts
        .iter()
        .find(|e| e["template_id"] == "facts-variant-forms" && e["api"] == "rocblas_sscal")
        .expect("the variant-forms entry of rocblas_sscal");
    assert_eq!(
        forms["apis"].as_array().unwrap().len(),
        6,
        "{}",
        forms["apis"]
    );
    let answer = forms["answer"].as_str().unwrap();
    for said in [
        "`rocblas_sscal_batched` (library/include/internal/rocblas-functions.h:161-166) takes `float* const x[]` for `float* x`, adds `rocblas_int batch_count` and also returns `rocblas_status_success` early when `batch_count <= 0` (library/src/blas1/rocblas_scal_batched_imp.hpp:100-101).",
        "`rocblas_sscal_strided_batched` (library/include/internal/rocblas-functions.h:278-284) adds `rocblas_stride stride_x` and `rocblas_int batch_count`",
        "`rocblas_sscal_64` (library/include/internal/rocblas-functions.h:109-110) takes `n` and `incx` as `int64_t` where `rocblas_sscal` has `rocblas_int` and launches its kernels inside the loops `for (int64_t b_base = 0; b_base < batch_count_64; b_base += c_i64_grid_YZ_chunk)` and `for (int64_t n_base = 0; n_base < n_64; n_base += c_i64_grid_X_chunk)`",
    ] {
        assert!(answer.contains(said), "{answer}");
    }

    // Two shards write the whole run's fact entries between them, each once, though
    // entries list APIs of families in both.
    let ids = |p: &std::path::Path| -> std::collections::BTreeSet<String> {
        jsonl(p)
            .iter()
            .filter(|e| e["generator"] == "facts")
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    let whole = ids(&dir.join("entries.jsonl"));
    // A rerun keeps every entry, near twins kept for an API's minimum included, and
    // replaces or adds none.
    let again = run(&["extract", "--lib", "rocblas"]);
    assert!(!again.contains("replaced"), "{again}");
    assert_eq!(ids(&dir.join("entries.jsonl")), whole);
    run(&["extract", "--lib", "rocblas", "--shard", "0/2"]);
    run(&["extract", "--lib", "rocblas", "--shard", "1/2"]);
    let a = ids(&dir.join("shard-0-of-2/entries.jsonl"));
    let b = ids(&dir.join("shard-1-of-2/entries.jsonl"));
    assert!(a.is_disjoint(&b) && !a.is_empty() && !b.is_empty());
    let union: std::collections::BTreeSet<String> = a.union(&b).cloned().collect();
    assert_eq!(union, whole);
}
