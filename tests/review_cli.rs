//! `rocqa review`'s text modes and its refusals, through the binary: `--summary` over a
//! log that outlived a refresh, `--verify` on an intact, a torn and a tampered log, and
//! the clear errors for an empty entries file, a reviewer missing from `--reviewers`
//! and a missing terminal.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use rocqa::review::log::{entry_hash, Action, Decision, ReviewLog, Verdict};

fn rocqa(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("rocqa").unwrap();
    c.arg("--root")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .arg("review")
        .arg(dir);
    c
}

fn entry(k: usize, answer: &str) -> serde_json::Value {
    serde_json::json!({
        "id": format!("rocblas-{k:016x}"), "lib": "rocblas", "version": "6.4.4",
        "category": "semantics", "generator": "facts", "template_id": "t",
        "question": format!("What does kernel {k} store?"), "answer": answer,
        "citations": [], "validation": [{"name": "schema", "ok": true, "detail": "fits"}],
    })
}

fn write_entries(dir: &Path, entries: &[serde_json::Value]) {
    let text: String = entries.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(dir.join("entries.jsonl"), text).unwrap();
}

fn verdict(e: &serde_json::Value, who: &str, v: Verdict) -> Decision {
    Decision {
        entry_id: e["id"].as_str().unwrap().into(),
        entry_hash: entry_hash(e),
        action: Action::Verdict,
        verdict: Some(v),
        reason: None,
        note: None,
        edited: None,
        reviewer: who.into(),
    }
}

#[test]
fn summary_counts_decisions_that_outlived_a_refresh_apart() {
    let dir = tempfile::tempdir().unwrap();
    let before: Vec<_> = (0..3).map(|k| entry(k, "It stores y.")).collect();
    let mut log = ReviewLog::open(&dir.path().join("reviews.jsonl")).unwrap();
    for e in &before {
        log.append(verdict(e, "ann", Verdict::Good)).unwrap();
    }
    log.append(verdict(&before[2], "bo", Verdict::Wrong))
        .unwrap();
    // The refresh changed entry 1's answer; 0 and 2 are as they were.
    let mut after = before.clone();
    after[1]["answer"] = "It stores y and z.".into();
    write_entries(dir.path(), &after);
    let out = rocqa(dir.path())
        .args(["--summary", "--json"])
        .assert()
        .success();
    let s: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(s["judged"], 2);
    assert_eq!(s["stale_decisions"], 1);
    assert_eq!(s["overall"]["good"], 2);
    assert_eq!(s["by"]["reviewer"]["bo"]["wrong"], 1);
    assert_eq!(s["disagreements"][0]["id"], "rocblas-0000000000000002");
    rocqa(dir.path())
        .arg("--summary")
        .assert()
        .success()
        .stdout(predicate::str::contains("1 disagreements to settle"))
        .stdout(predicate::str::contains(
            "1 decisions about content no entry has any more",
        ));
}

#[test]
fn verify_passes_an_intact_or_torn_log_and_names_a_tampered_line() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<_> = (0..3).map(|k| entry(k, "It stores y.")).collect();
    write_entries(dir.path(), &entries);
    let path = dir.path().join("reviews.jsonl");
    let mut log = ReviewLog::open(&path).unwrap();
    for e in &entries {
        log.append(verdict(e, "ann", Verdict::Weak)).unwrap();
    }
    rocqa(dir.path())
        .arg("--verify")
        .assert()
        .success()
        .stdout(predicate::str::contains("3 records, hash chain intact"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}{{\"seq\":3,")).unwrap();
    rocqa(dir.path())
        .arg("--verify")
        .assert()
        .success()
        .stdout(predicate::str::contains("a record cut short by a kill"));
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&path, format!("{}\n{}\n", lines[0], lines[2])).unwrap();
    rocqa(dir.path())
        .arg("--verify")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "reviews.jsonl:2: seq 2 where 1 was due",
        ));
}

#[test]
fn refusals_name_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("entries.jsonl"), "").unwrap();
    rocqa(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no entries to review (run `rocqa extract` first",
        ));
    write_entries(dir.path(), &[entry(0, "It stores y.")]);
    rocqa(dir.path())
        .args(["--reviewer", "cy", "--reviewers", "ann,bo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--reviewer cy is not one of --reviewers ann,bo",
        ));
    rocqa(dir.path())
        .args(["--reviewer", "ann"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("rocqa review needs a terminal"));
}
