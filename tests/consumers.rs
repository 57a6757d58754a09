//! The output loads as it is in the training stacks' own reader: Hugging Face
//! `datasets` (from PyPI, in the project venv that `scripts/setup.sh` makes) reads an
//! `entries.jsonl` that mixes every kind of entry a run writes (model answers with and
//! without code, fact entries, find-the-bug tasks with their `mutation` record), one
//! row per line, every field typed.
#![cfg(feature = "real-sources")]

mod common;

use std::process::Command;

use common::{careful_endpoint, extract_against, jsonl, repo};

#[test]
fn hugging_face_datasets_loads_every_kind_of_entry() {
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh (it installs `datasets` in the venv)",
        python.display()
    );
    let url = careful_endpoint();
    let root = extract_against(
        &url,
        &[
            "--lib",
            "rocblas",
            "--api",
            "rocblas_s{dot,scal,gemv}",
            "--limit",
            "12",
        ],
    );
    let path = root.path().join("out/rocblas/6.4.4/entries.jsonl");
    let entries = jsonl(&path);
    let count = |g: &str| entries.iter().filter(|e| e["generator"] == g).count();
    assert!(count("llm") >= 4, "{} model entries", count("llm"));
    assert!(count("facts") >= 10, "{} fact entries", count("facts"));
    assert!(
        count("mutation") >= 1,
        "{} find-the-bug entries",
        count("mutation")
    );
    assert!(entries.iter().any(|e| e["code"].is_string()));

    let script = r#"
import json, sys
from datasets import load_dataset
ds = load_dataset("json", data_files=sys.argv[1], split="train")
f = ds.features
print(json.dumps({
    "rows": ds.num_rows,
    "ids": list(ds["id"]),
    "generators": list(ds["generator"]),
    "columns": sorted(ds.column_names),
    "code": str(f["code"]),
    "line": str(f["mutation"]["line"]),
    "start": str(f["citations"][0]["start"] if isinstance(f["citations"], list) else f["citations"].feature["start"]),
    "mutated": [r["mutation"]["mutated"] for r in ds if r["mutation"]],
}))
"#;
    let o = Command::new(&python)
        .args(["-c", script])
        .arg(&path)
        .env("HF_DATASETS_CACHE", root.path().join("hf-cache"))
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "datasets could not load {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let got: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(got["rows"], entries.len());
    let ids: Vec<&str> = entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(got["ids"], serde_json::json!(ids));
    for col in [
        "question",
        "answer",
        "citations",
        "generator",
        "mutation",
        "source",
    ] {
        assert!(
            got["columns"].as_array().unwrap().iter().any(|c| c == col),
            "{col} missing: {}",
            got["columns"]
        );
    }
    assert_eq!(got["code"], "Value('string')", "{got}");
    assert_eq!(got["line"], "Value('int64')", "{got}");
    assert_eq!(got["start"], "Value('int64')", "{got}");
    assert_eq!(
        got["mutated"].as_array().unwrap().len(),
        count("mutation")
            + entries
                .iter()
                .filter(|e| e["generator"] == "llm" && e["mutation"].is_object())
                .count()
    );
}
