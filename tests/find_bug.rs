//! Find-the-bug tasks on real rocBLAS 6.4.4, through the real binary: each prompt shows
//! the target kernel with one line changed, never the original line; a scripted model
//! that finds the changed line by reading the prompt against the pinned tree (as a
//! careful reviewer with the sources would) is kept, by `extract` and again by
//! `rocqa validate`; an answer that points at another line, or names the line without
//! restoring it, is rejected as `bug-not-found`.
#![cfg(feature = "real-sources")]

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{blocks, extract_against, jsonl, repo, serve, user_message, Reply, BIN};

/// The tree's lines of a file of rocBLAS 6.4.4.
fn tree_lines(file: &str) -> Vec<String> {
    std::fs::read_to_string(repo().join("rocm_sources/rocblas-6.4.4").join(file))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The one line of the prompt's code that differs from the tree: (file, line, shown,
/// original).
fn changed_lines(user: &str) -> Vec<(String, u32, String, String)> {
    let mut out = Vec::new();
    for b in blocks(user) {
        let tree = tree_lines(&b.file);
        for (n, text) in &b.lines {
            let original = &tree[*n as usize - 1];
            if text != original {
                out.push((b.file.clone(), *n, text.clone(), original.clone()));
            }
        }
    }
    out
}

/// How the scripted model answers a find-the-bug prompt.
#[derive(Clone, Copy)]
enum Style {
    /// Names the changed line, cites it, quotes the line as it should read.
    Right,
    /// Points at the line above the changed one.
    WrongLine,
    /// Names the right line but restores nothing.
    NoFix,
}

fn answer(user: &str, style: Style) -> String {
    let changed = changed_lines(user);
    assert_eq!(changed.len(), 1, "one changed line per prompt: {changed:?}");
    let (file, n, shown, original) = &changed[0];
    let base = file.rsplit('/').next().unwrap();
    let (at, fix) = match style {
        Style::Right => (*n, format!(" It should read `{}`.", original.trim())),
        Style::WrongLine => (n - 1, format!(" It should read `{}`.", original.trim())),
        Style::NoFix => (*n, " That line is where the kernel goes wrong.".to_string()),
    };
    let said = if matches!(style, Style::WrongLine) {
        format!("The bug is at line {at} of {base}.")
    } else {
        format!(
            "The bug is at line {at} of {base}, which reads `{}` in the code shown.",
            shown.trim()
        )
    };
    serde_json::json!({
        "answer": format!("{said}{fix} With the change, the threads at the edge of the range take a path the library's code keeps them out of."),
        "code": "",
        "citations": [{"file": file, "start": at, "end": at}]
    })
    .to_string()
}

fn extract(
    api: &str,
    style: Style,
) -> (
    tempfile::TempDir,
    Vec<serde_json::Value>,
    Vec<serde_json::Value>,
) {
    let url = serve(move |body| {
        let user = user_message(body);
        Reply::completion(&answer(&user, style))
    });
    let root = extract_against(
        &url,
        &["--lib", "rocblas", "--api", api, "--category", "debugging"],
    );
    let out = root.path().join("out/rocblas/6.4.4");
    let asked = |v: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        v.into_iter()
            .filter(|e| e["template_id"] == "debug.find-bug" && e["generator"] != "mutation")
            .collect()
    };
    let entries = asked(jsonl(&out.join("entries.jsonl")));
    let rejects = asked(jsonl(&out.join("rejects.jsonl")));
    (root, entries, rejects)
}

// sgbmv plants a stride bug; the others a bound check.
const APIS: &str = "rocblas_s{scal,axpy,copy,ger,trsv,tbmv,tpmv,dgmm,gbmv}";

#[test]
fn right_answers_are_kept_by_extract_and_by_validate() {
    let (root, entries, rejects) = extract(APIS, Style::Right);
    let why: Vec<String> = rejects
        .iter()
        .map(|r| format!("{} {}", r["reason"], r["detail"]))
        .collect();
    assert!(rejects.is_empty(), "{why:#?}");
    assert!(entries.len() >= 6, "{} entries", entries.len());
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for e in &entries {
        let m = &e["mutation"];
        *kinds.entry(m["kind"].as_str().unwrap().into()).or_default() += 1;
        // The record says what the prompt showed, and the tree holds the original.
        let file = m["file"].as_str().unwrap();
        let line = m["line"].as_u64().unwrap() as usize;
        assert_eq!(tree_lines(file)[line - 1], m["original"].as_str().unwrap());
        assert_ne!(m["original"], m["mutated"]);
        assert!(e["validation"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "bug-found"));
        assert!(e["slice_id"].as_str().unwrap().ends_with("#bug"));
    }
    assert!(kinds.len() >= 2, "one kind of bug only: {kinds:?}");

    // Each task is also answered from its planted bug, with no model, and kept.
    let all = jsonl(&root.path().join("out/rocblas/6.4.4/entries.jsonl"));
    let reference: Vec<&serde_json::Value> = all
        .iter()
        .filter(|e| e["generator"] == "mutation")
        .collect();
    assert_eq!(reference.len(), entries.len());
    for r in &reference {
        let m = &r["mutation"];
        let answer = r["answer"].as_str().unwrap();
        assert!(answer.contains(&format!("line {}", m["line"])), "{answer}");
        assert!(
            answer.contains(m["original"].as_str().unwrap().trim()),
            "{answer}"
        );
        assert!(entries
            .iter()
            .any(|e| e["prompt_sha256"] == r["prompt_sha256"]));
    }

    let checked = root.path().join("checked");
    let v = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .arg("validate")
        .arg(root.path().join("out/rocblas/6.4.4/entries.jsonl"))
        .arg("--out")
        .arg(&checked)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(0), "{stdout}");
    let again = jsonl(&checked.join("entries.jsonl"));
    assert_eq!(
        again
            .iter()
            .filter(|e| e["template_id"] == "debug.find-bug")
            .count(),
        entries.len() + reference.len(),
        "{stdout}"
    );
}

#[test]
fn answers_that_miss_the_line_or_the_fix_are_rejected() {
    for style in [Style::WrongLine, Style::NoFix] {
        let (_root, entries, rejects) = extract("rocblas_s{scal,axpy,copy}", style);
        assert!(entries.is_empty(), "{entries:#?}");
        assert!(rejects.len() >= 2);
        for r in &rejects {
            assert_eq!(r["reason"], "bug-not-found", "{r:#}");
        }
    }
}

#[test]
fn a_forged_mutation_record_is_rejected_by_validate() {
    let (root, entries, _) = extract("rocblas_sscal", Style::Right);
    assert_eq!(entries.len(), 1);
    // The record claims a line that the tree does not hold: the prompt cannot be
    // rebuilt, so the entry proves nothing.
    let mut forged = entries[0].clone();
    forged["mutation"]["original"] = serde_json::json!("    int not_in_the_tree = 0;");
    let path = root.path().join("forged.jsonl");
    std::fs::write(&path, format!("{forged}\n")).unwrap();
    let checked = root.path().join("checked");
    let v = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .arg("validate")
        .arg(&path)
        .arg("--out")
        .arg(&checked)
        .output()
        .unwrap();
    let rejects = jsonl(&checked.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{}", String::from_utf8_lossy(&v.stdout));
    assert_eq!(rejects[0]["reason"], "slice-changed");
    assert!(rejects[0]["detail"]
        .as_str()
        .unwrap()
        .contains("does not read as the planted bug's `original` says"));
}
