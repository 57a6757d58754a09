//! What `rocqa extract` keeps, `rocqa validate` keeps: extract runs through the real
//! binary on real rocBLAS 6.4.4 against a scripted endpoint that answers like a careful
//! model (names the cited file and definition, quotes a statement of the slice, cites
//! its line, carries HIP code on half the questions), then `rocqa validate` runs on the
//! entries written.
#![cfg(feature = "real-sources")]

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{careful_endpoint, extract_against, jsonl, BIN};

#[test]
fn every_entry_extract_keeps_validate_keeps() {
    let url = careful_endpoint();
    let root = extract_against(
        &url,
        &[
            "--lib",
            "rocblas",
            "--api",
            "rocblas_s{scal,axpy,dot,swap,gemv}",
            "--limit",
            "24",
            "--concurrency",
            "4",
        ],
    );
    let out_dir = root.path().join("out/rocblas/6.4.4");
    let entries = jsonl(&out_dir.join("entries.jsonl"));
    let rejects = jsonl(&out_dir.join("rejects.jsonl"));
    let reasons: Vec<String> = rejects
        .iter()
        .map(|r| format!("{} {}", r["reason"], r["detail"]))
        .collect();
    // Careful answers are kept, code-bearing ones included.
    assert!(
        entries.len() >= 12,
        "{} kept; rejects: {reasons:#?}",
        entries.len()
    );
    let with_code = entries.iter().filter(|e| e["code"].is_string()).count();
    println!("{} kept, {with_code} with code", entries.len());
    assert!(
        with_code >= 4,
        "{with_code} with code; rejects: {reasons:#?}"
    );
    // Answers quote code; fact entries (generator "facts") are kept alike below.
    assert!(entries
        .iter()
        .filter(|e| e["generator"] != "facts")
        .all(|e| e["answer"].as_str().unwrap().contains('`')));

    let checked = root.path().join("checked");
    let v = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .arg("validate")
        .arg(out_dir.join("entries.jsonl"))
        .arg("--out")
        .arg(&checked)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(0), "{stdout}");
    let ids = |v: &[serde_json::Value]| -> BTreeSet<String> {
        v.iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&jsonl(&checked.join("entries.jsonl"))),
        ids(&entries),
        "{stdout}"
    );
    assert!(jsonl(&checked.join("rejects.jsonl")).is_empty(), "{stdout}");
}
