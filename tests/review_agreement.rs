//! The agreement figures of `rocqa review --summary` match the reference
//! implementations reviewers' papers use: scikit-learn's `cohen_kappa_score` for each
//! pair of reviewers and `krippendorff.alpha` (nominal) over all of them, to 1e-6, on a
//! log of three reviewers with a partial overlap (both from PyPI, pinned in
//! scripts/setup-llm.sh, in the project venv).
#![cfg(feature = "real-sources")]

mod common;

use std::process::Command;

use common::{repo, BIN};
use rocqa::review::log::{entry_hash, Action, Decision, ReviewLog, Verdict};

#[test]
fn kappa_and_alpha_match_scikit_learn_and_krippendorff() {
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-llm.sh",
        python.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<serde_json::Value> = (0..60)
        .map(|k| {
            let category = ["semantics", "edge-cases", "api-to-kernel"][k % 3];
            serde_json::json!({
                "id": format!("rocblas-{k:016x}"), "lib": "rocblas",
                "category": category,
                "generator": if k % 4 == 0 { "mutation" } else { "facts" },
                "question": format!("question {k}"), "answer": format!("answer {k}"),
                "citations": [],
            })
        })
        .collect();
    let text: String = entries.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(dir.path().join("entries.jsonl"), text).unwrap();
    let mut log = ReviewLog::open(&dir.path().join("reviews.jsonl")).unwrap();
    // A fixed pseudo-random draw: reviewers mostly agree, ann judges everything, bo 45
    // entries, cy 20; bo changes their mind once (the last verdict counts).
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let verdicts = [Verdict::Good, Verdict::Weak, Verdict::Wrong];
    for (k, e) in entries.iter().enumerate() {
        let truth = verdicts[(next() % 3) as usize];
        for (who, share) in [("ann", 60), ("bo", 45), ("cy", 20)] {
            if k >= share {
                continue;
            }
            let v = if next() % 10 < 7 {
                truth
            } else {
                verdicts[(next() % 3) as usize]
            };
            let mut d = Decision {
                entry_id: e["id"].as_str().unwrap().into(),
                entry_hash: entry_hash(e),
                action: Action::Verdict,
                verdict: Some(v),
                reason: None,
                note: None,
                edited: None,
                reviewer: who.into(),
            };
            if who == "bo" && k == 3 {
                d.verdict = Some(Verdict::Wrong);
                log.append(d.clone()).unwrap();
                d.verdict = Some(v);
            }
            log.append(d).unwrap();
        }
    }
    let out = Command::new(BIN)
        .arg("--root")
        .arg(repo())
        .args(["review", "--summary", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let script = r#"
import json, sys
import numpy as np
import krippendorff
from sklearn.metrics import cohen_kappa_score
last = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["action"] == "verdict":
        last[(r["entry_hash"], r["reviewer"])] = r["verdict"]
reviewers = sorted({w for (_, w) in last})
units = sorted({h for (h, _) in last})
pairs = []
for i, a in enumerate(reviewers):
    for b in reviewers[i + 1:]:
        both = [h for h in units if (h, a) in last and (h, b) in last]
        pairs.append({"reviewers": [a, b], "n": len(both), "kappa": cohen_kappa_score(
            [last[(h, a)] for h in both], [last[(h, b)] for h in both])})
code = {"good": 0.0, "weak": 1.0, "wrong": 2.0}
data = [[code.get(last.get((h, w)), np.nan) for h in units] for w in reviewers]
alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
print(json.dumps({"pairs": pairs, "alpha": alpha}))
"#;
    let reference = Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(dir.path().join("reviews.jsonl"))
        .output()
        .unwrap();
    assert!(
        reference.status.success(),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let theirs: serde_json::Value = serde_json::from_slice(&reference.stdout).unwrap();

    let pairs = ours["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3, "{ours}");
    for (o, t) in pairs.iter().zip(theirs["pairs"].as_array().unwrap()) {
        assert_eq!(o["reviewers"], t["reviewers"]);
        assert_eq!(o["both_judged"], t["n"]);
        let (a, b) = (o["kappa"].as_f64().unwrap(), t["kappa"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-6, "kappa {}: {a} vs {b}", o["reviewers"]);
    }
    let (a, b) = (
        ours["alpha"].as_f64().unwrap(),
        theirs["alpha"].as_f64().unwrap(),
    );
    assert!((a - b).abs() < 1e-6, "alpha {a} vs {b}");
    // Every pair's figure is a real one, not a degenerate 0 or 1.
    assert!(pairs
        .iter()
        .all(|p| p["kappa"].as_f64().unwrap().abs() > 0.05 && p["kappa"].as_f64().unwrap() < 0.99));
    println!(
        "kappa {:?}, alpha {a} (reference {b})",
        pairs
            .iter()
            .map(|p| p["kappa"].as_f64().unwrap())
            .collect::<Vec<_>>()
    );
}
