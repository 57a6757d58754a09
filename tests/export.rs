//! `rocqa export` and `rocqa mix` on real entries (a no-endpoint extract of rocBLAS,
//! plus model entries from the careful endpoint): every format loads in its consumer,
//! splits share no kernel and no near-duplicate pair, a mix meets its quotas and gives
//! the same bytes for a seed, and planted evaluation leaks are found.
#![cfg(feature = "real-sources")]

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{careful_endpoint, jsonl, project, repo, rocqa_in, BIN};
use rocqa::model::Entry;
use rocqa::review::log::{entry_hash, Action, Decision, ReviewLog, Verdict};
use rocqa::validate::dedup::{entry_signature, DedupIndex, DEFAULT_THRESHOLD};

/// A project holding a whole-library no-endpoint rocBLAS run, made once.
fn rocblas_run() -> &'static Path {
    static RUN: OnceLock<tempfile::TempDir> = OnceLock::new();
    RUN.get_or_init(|| {
        let root = project("");
        rocqa_in(root.path(), &["extract", "--lib", "rocblas"], None);
        root
    })
    .path()
}

fn entries_of(path: &Path) -> Vec<Entry> {
    rocqa::emit::read_jsonl(path).unwrap()
}

/// `rocqa --root ROOT ARGS`: exit code and output.
fn rocqa(root: &Path, args: &[&str]) -> (i32, String) {
    let o = Command::new(BIN)
        .arg("--root")
        .arg(root)
        .args(args)
        .env_remove("ROCQA_LLM_URL")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

fn python(script: &str, args: &[&Path], cache: &Path) -> serde_json::Value {
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh (it installs `datasets` in the venv)",
        python.display()
    );
    let o = Command::new(&python)
        .arg("-c")
        .arg(script)
        .args(args)
        .env("HF_DATASETS_CACHE", cache)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// The consumers' own rules, checked on the files: Hugging Face `datasets` loads every
/// card config and the Parquet files; LLaMA-Factory's `dataset_info.json` names files,
/// formats, columns and tags whose rows its converters accept (sharegpt: an optional
/// system turn, then user/assistant alternating, ending on the assistant; alpaca: the
/// prompt and response columns filled); axolotl's `chat_template` datasets name the
/// messages field, the property mappings and roles every message uses.
const LOAD: &str = r#"
import json, os, sys, yaml
from datasets import load_dataset
d = sys.argv[1]
out = {"configs": {}, "parquet": {}, "llamafactory": {}, "axolotl": []}
card = open(os.path.join(d, "README.md")).read()
front = yaml.safe_load(card.split("---")[1])
for c in front["configs"]:
    ds = load_dataset(d, c["config_name"])
    out["configs"][c["config_name"]] = {s: {"rows": ds[s].num_rows, "ids": list(ds[s]["id"])} for s in ds}
for s in ("train", "validation"):
    p = os.path.join(d, "parquet", s + ".parquet")
    if os.path.exists(p):
        ds = load_dataset("parquet", data_files=p, split="train")
        out["parquet"][s] = {"rows": ds.num_rows, "ids": list(ds["id"]), "messages": str(ds.features["messages"]),
                             "first_user": ds[0]["messages"][-2]["content"][:200]}
info = json.load(open(os.path.join(d, "dataset_info.json")))
for name, spec in info.items():
    rows = [json.loads(l) for l in open(os.path.join(d, spec["file_name"]))]
    fmt = spec["formatting"]
    assert fmt in ("alpaca", "sharegpt"), fmt
    cols = spec.get("columns", {})
    if fmt == "alpaca":
        for r in rows:
            assert isinstance(r[cols.get("prompt", "instruction")], str) and r[cols.get("prompt", "instruction")]
            assert isinstance(r[cols.get("query", "input")], str)
            assert isinstance(r[cols.get("response", "output")], str) and r[cols.get("response", "output")]
            if "system" in cols:
                assert isinstance(r[cols["system"]], str)
    else:
        tags = spec.get("tags", {})
        role, content = tags.get("role_tag", "from"), tags.get("content_tag", "value")
        user, assistant = tags.get("user_tag", "human"), tags.get("assistant_tag", "gpt")
        system = tags.get("system_tag")
        for r in rows:
            msgs = r[cols.get("messages", "conversations")]
            if system and msgs and msgs[0][role] == system:
                msgs = msgs[1:]
            assert len(msgs) > 0 and len(msgs) % 2 == 0, msgs
            for k, m in enumerate(msgs):
                assert m[role] == (user if k % 2 == 0 else assistant), (k, m[role])
                assert isinstance(m[content], str) and m[content]
    out["llamafactory"][name] = len(rows)
ax = yaml.safe_load(open(os.path.join(d, "axolotl.yaml")))
for key in ("datasets", "test_datasets"):
    for spec in ax.get(key, []):
        assert spec["type"] == "chat_template" and spec["ds_type"] == "json"
        rows = [json.loads(l) for l in open(os.path.join(d, spec["path"]))]
        mp = spec["message_property_mappings"]
        known = {v: k for k, vs in spec["roles"].items() for v in vs}
        for r in rows:
            msgs = r[spec["field_messages"]]
            for m in msgs:
                assert m[mp["role"]] in known, m[mp["role"]]
                assert isinstance(m[mp["content"]], str)
            assert known[msgs[-1][mp["role"]]] in spec["roles_to_train"]
        out["axolotl"].append([key, spec["path"], len(rows)])
print(json.dumps(out))
"#;

#[test]
fn every_format_loads_in_its_consumer() {
    let url = careful_endpoint();
    let root = project("[llm]\ntimeout_secs = 10\nmax_retries = 1\n");
    rocqa_in(
        root.path(),
        &[
            "extract",
            "--lib",
            "rocblas",
            "--api",
            "rocblas_s{dot,gemv,scal,swap}",
            "--limit",
            "12",
        ],
        Some(&url),
    );
    let run = root.path().join("out/rocblas/6.4.4");
    let entries = entries_of(&run.join("entries.jsonl"));
    let by_gen = |g: &str| entries.iter().filter(|e| e.generator == g).count();
    assert!(by_gen("llm") >= 3 && by_gen("facts") >= 10 && by_gen("mutation") >= 1);
    // Review: one entry judged wrong, one edited.
    let value = |e: &Entry| serde_json::to_value(e).unwrap();
    let wrong = &entries[0];
    let edited = &entries[1];
    let mut log = ReviewLog::open(&ReviewLog::beside(&run.join("entries.jsonl"))).unwrap();
    for (e, action, verdict, edit) in [
        (wrong, Action::Verdict, Some(Verdict::Wrong), None),
        (
            edited,
            Action::Edit,
            None,
            Some(serde_json::json!({"answer": "Edited in review."})),
        ),
        (edited, Action::Verdict, Some(Verdict::Good), None),
    ] {
        log.append(Decision {
            entry_id: e.id.clone(),
            entry_hash: entry_hash(&value(e)),
            action,
            verdict,
            reason: None,
            note: None,
            edited: edit,
            reviewer: "r1".into(),
        })
        .unwrap();
    }
    let out = root.path().join("export");
    let (code, said) = rocqa(
        root.path(),
        &[
            "export",
            run.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--extract-system",
            // Both sides hold some of these four families at this share.
            "--validation-share",
            "0.7",
        ],
    );
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("1 left out as wrong in review"), "{said}");
    let got = python(LOAD, &[&out], &root.path().join("hf-cache"));
    let config_ids = |cfg: &str| -> HashSet<String> {
        got["configs"][cfg]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|s| {
                s["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i.as_str().unwrap().to_string())
            })
            .collect()
    };
    let want: HashSet<String> = entries[1..].iter().map(|e| e.id.clone()).collect();
    for cfg in ["openai", "sharegpt", "alpaca"] {
        assert_eq!(config_ids(cfg), want, "config {cfg}");
    }
    for s in ["train", "validation"] {
        assert!(
            got["configs"]["openai"][s]["rows"].as_u64().unwrap() > 0,
            "{s} is empty: {got}"
        );
        assert_eq!(
            got["parquet"][s]["rows"],
            got["configs"]["openai"][s]["rows"]
        );
        assert_eq!(got["parquet"][s]["ids"], got["configs"]["openai"][s]["ids"]);
    }
    assert!(got["parquet"]["train"]["messages"]
        .as_str()
        .unwrap()
        .contains("role"));
    assert_eq!(got["llamafactory"].as_object().unwrap().len(), 6, "{got}");
    assert_eq!(got["axolotl"].as_array().unwrap().len(), 2, "{got}");
    // The user turn carries the code, read from the tree as the prompt showed it; the
    // edit went out; a find-the-bug entry shows its planted line.
    let rows: Vec<serde_json::Value> = ["train", "validation"]
        .iter()
        .flat_map(|s| jsonl(&out.join(format!("openai/{s}.jsonl"))))
        .collect();
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap();
    let e = row(&edited.id);
    assert_eq!(e["messages"][2]["content"], "Edited in review.");
    assert_eq!(e["review"], "good");
    assert_eq!(e["messages"][0]["content"], rocqa::question::SYSTEM_PROMPT);
    let user = e["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.starts_with("Code slice of rocblas 6.4.4, API family"),
        "{user}"
    );
    assert!(user.contains("\nQuestion: "), "{user}");
    let p = &edited.slice[0];
    assert!(
        user.contains(&format!(
            "=== {}:{}-{} ({}, ",
            p.file, p.start, p.end, p.name
        )),
        "{user}"
    );
    let m = entries.iter().find(|e| e.generator == "mutation").unwrap();
    let bug = m.mutation.as_ref().unwrap();
    let user = row(&m.id)["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        user.contains(&format!("{:>5}| {}\n", bug.line, bug.mutated)),
        "planted line not shown"
    );
    assert!(!user.contains(&format!("{:>5}| {}\n", bug.line, bug.original)));
    // The question alone, on request.
    let (code, said) = rocqa(
        root.path(),
        &[
            "export",
            run.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--question-only",
            "--format",
            "openai",
        ],
    );
    assert_eq!(code, 0, "{said}");
    let rows = jsonl(&out.join("openai/train.jsonl"));
    let e: Entry = entries
        .iter()
        .find(|e| e.id == rows[0]["id"])
        .cloned()
        .unwrap();
    assert_eq!(rows[0]["messages"][0]["content"], e.question);
}

#[test]
fn splits_share_no_kernel_and_no_near_duplicate_pair() {
    let root = rocblas_run();
    let out = root.join("export-splits");
    let (code, said) = rocqa(
        root,
        &[
            "export",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "openai",
        ],
    );
    assert_eq!(code, 0, "{said}");
    let entries: HashMap<String, Entry> = entries_of(&root.join("out/rocblas/6.4.4/entries.jsonl"))
        .into_iter()
        .map(|e| (e.id.clone(), e))
        .collect();
    let side = |s: &str| -> Vec<&Entry> {
        jsonl(&out.join(format!("openai/{s}.jsonl")))
            .iter()
            .map(|r| &entries[r["id"].as_str().unwrap()])
            .collect()
    };
    let (train, validation) = (side("train"), side("validation"));
    assert!(
        validation.len() >= 50 && train.len() > validation.len(),
        "{} / {}",
        train.len(),
        validation.len()
    );
    let kernels = |es: &[&Entry]| -> HashSet<String> {
        es.iter()
            .flat_map(|e| rocqa::export::split::kernels(e))
            .collect()
    };
    let shared: Vec<String> = kernels(&train)
        .intersection(&kernels(&validation))
        .cloned()
        .collect();
    let mut index = DedupIndex::default();
    for e in &train {
        index.insert(
            &e.id,
            entry_signature(&e.question, &e.answer, e.code.as_deref()),
        );
    }
    let pairs: Vec<(String, String)> = validation
        .iter()
        .filter_map(|e| {
            index
                .nearest(
                    &entry_signature(&e.question, &e.answer, e.code.as_deref()),
                    DEFAULT_THRESHOLD,
                )
                .map(|n| (e.id.clone(), n.id))
        })
        .collect();
    println!(
        "splits: {} train, {} validation; kernels shown: {} train, {} validation; shared kernels: {}; near-duplicate pairs across: {}",
        train.len(),
        validation.len(),
        kernels(&train).len(),
        kernels(&validation).len(),
        shared.len(),
        pairs.len()
    );
    assert!(shared.is_empty(), "kernels on both sides: {shared:?}");
    assert!(
        pairs.is_empty(),
        "near-duplicates across the split: {pairs:?}"
    );
}

#[test]
fn a_mix_meets_its_quotas_and_a_seed_gives_the_same_bytes() {
    let root = rocblas_run();
    let mix = |seed: u64, name: &str| -> (PathBuf, serde_json::Value) {
        let file = root.join(format!("{name}.toml"));
        std::fs::write(
            &file,
            format!(
                "seed = {seed}\n[[source]]\nentries = [\"out/rocblas/6.4.4\"]\n[quota.category]\n\"api-to-kernel\" = 120\n\"edge-cases\" = 60\nsemantics = 60\ndebugging = 20\n[cap]\nper_api = 3\nper_template = 70\n"
            ),
        )
        .unwrap();
        let out = root.join(name);
        let (code, said) = rocqa(
            root,
            &[
                "mix",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{said}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("export.json")).unwrap()).unwrap();
        (out, report)
    };
    let (a, report) = mix(7, "mix-a");
    let rows: Vec<serde_json::Value> = ["train", "validation"]
        .iter()
        .flat_map(|s| jsonl(&a.join(format!("openai/{s}.jsonl"))))
        .collect();
    let mut per_category: BTreeMap<String, i64> = BTreeMap::new();
    let mut per_api: BTreeMap<String, i64> = BTreeMap::new();
    let mut per_template: BTreeMap<String, i64> = BTreeMap::new();
    for r in &rows {
        *per_category
            .entry(r["category"].as_str().unwrap().into())
            .or_default() += 1;
        *per_api
            .entry(r["api"].as_str().unwrap().into())
            .or_default() += 1;
        *per_template
            .entry(r["template_id"].as_str().unwrap().into())
            .or_default() += 1;
    }
    println!(
        "mix: {per_category:?}; targets {}",
        report["mix"]["targets"]
    );
    for (cat, want) in [
        ("api-to-kernel", 120),
        ("edge-cases", 60),
        ("semantics", 60),
        ("debugging", 20),
    ] {
        let got = per_category.get(cat).copied().unwrap_or(0);
        assert!((got - want).abs() <= 1, "{cat}: {got} of {want}");
    }
    assert_eq!(
        per_category.len(),
        4,
        "only the categories named: {per_category:?}"
    );
    assert!(per_api.values().all(|n| *n <= 3), "{per_api:?}");
    assert!(per_template.values().all(|n| *n <= 70), "{per_template:?}");
    // The same seed: the same bytes, every file.
    let (b, _) = mix(7, "mix-b");
    let files = |d: &Path| -> BTreeMap<String, Vec<u8>> {
        walk(d)
            .into_iter()
            .map(|p| {
                (
                    p.strip_prefix(d).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect()
    };
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (k, v) in &fa {
        if k == "export.json" || k == "README.md" {
            // They name the mix file, which differs; the rest must match.
            let strip = |x: &[u8]| String::from_utf8_lossy(x).replace("mix-b", "mix-a");
            assert_eq!(strip(v), strip(&fb[k]), "{k} differs");
        } else {
            assert!(v == &fb[k], "{k} differs for the same seed");
        }
    }
    assert!(fa.contains_key("parquet/train.parquet"));
    // Another seed: another draw.
    let (c, _) = mix(8, "mix-c");
    assert_ne!(
        std::fs::read(a.join("openai/train.jsonl")).unwrap(),
        std::fs::read(c.join("openai/train.jsonl")).unwrap()
    );
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(d).unwrap() {
        let p = f.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Reworded so that no 13 words in a row survive: articles dropped, a few words
/// swapped for synonyms, a filler word every sixth word.
fn paraphrase(text: &str) -> String {
    fn swap(w: &str) -> &str {
        match w {
            "launches" => "starts",
            "List" => "Enumerate",
            "when" => "whenever",
            "returns" => "gives back",
            "reads" => "loads",
            "writes" => "stores",
            "only" => "solely",
            other => other,
        }
    }
    text.split_whitespace()
        .filter(|w| !["the", "a", "an", "The", "A"].contains(w))
        .enumerate()
        .flat_map(|(k, w)| {
            let w = swap(w).to_string();
            if k % 6 == 5 {
                vec![w, "indeed".to_string()]
            } else {
                vec![w]
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn planted_leaks_are_found_and_the_clean_part_stays() {
    let root = rocblas_run();
    let entries = entries_of(&root.join("out/rocblas/6.4.4/entries.jsonl"));
    // Thirty leaks of three kinds, spread over the run.
    let planted: Vec<(&Entry, &str)> = entries
        .iter()
        .step_by(entries.len() / 30)
        .take(30)
        .enumerate()
        .map(|(k, e)| (e, ["verbatim", "question", "paraphrase"][k % 3]))
        .collect();
    let mut eval = String::new();
    for (e, kind) in &planted {
        let item = match *kind {
            "verbatim" => serde_json::json!({"question": e.question, "answer": e.answer}),
            "question" => serde_json::json!({"question": e.question, "answer": ""}),
            _ => {
                serde_json::json!({"question": paraphrase(&e.question), "answer": paraphrase(&e.answer)})
            }
        };
        eval.push_str(&format!("{item}\n"));
    }
    // Unrelated held-out items around them.
    for k in 0..50 {
        eval.push_str(&format!(
            "{}\n",
            serde_json::json!({"question": format!("Explain how sorting network {k} orders eight keys in registers without shared memory."), "answer": format!("Network {k} compares and swaps pairs in log stages.")})
        ));
    }
    let path = root.join("eval.jsonl");
    std::fs::write(&path, &eval).unwrap();
    let sha = {
        use sha2::Digest;
        format!("{:x}", sha2::Sha256::digest(eval.as_bytes()))
    };
    let out = root.join("export-decontam");
    let pinned = format!("{}#{sha}", path.display());
    let (code, said) = rocqa(
        root,
        &[
            "export",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "openai",
            "--decontaminate",
            &pinned,
        ],
    );
    assert_eq!(code, 0, "{said}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("export.json")).unwrap()).unwrap();
    let set = &report["eval"][0];
    assert_eq!(set["sha256"], sha.as_str());
    let hits: HashMap<String, String> = set["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().to_string(),
                h["finding"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let missed: Vec<(&str, &str)> = planted
        .iter()
        .filter(|(e, _)| !hits.contains_key(&e.id))
        .map(|(e, k)| (e.id.as_str(), *k))
        .collect();
    // The clean part: entries neither planted nor near-duplicates of a planted one
    // (those say what the leak says).
    let mut leaked = DedupIndex::default();
    for (e, _) in &planted {
        leaked.insert(
            &e.id,
            entry_signature(&e.question, &e.answer, e.code.as_deref()),
        );
    }
    let planted_ids: HashSet<&str> = planted.iter().map(|(e, _)| e.id.as_str()).collect();
    let clean: Vec<&Entry> = entries
        .iter()
        .filter(|e| !planted_ids.contains(e.id.as_str()))
        .filter(|e| {
            leaked
                .nearest(
                    &entry_signature(&e.question, &e.answer, e.code.as_deref()),
                    DEFAULT_THRESHOLD,
                )
                .is_none()
        })
        .collect();
    let false_positives = clean.iter().filter(|e| hits.contains_key(&e.id)).count();
    let rate = false_positives as f64 / clean.len() as f64;
    println!(
        "decontamination: {} of {} planted found ({}), {} false positives of {} clean entries ({:.2}%)",
        planted.len() - missed.len(),
        planted.len(),
        set["found"],
        false_positives,
        clean.len(),
        100.0 * rate
    );
    assert!(missed.is_empty(), "missed: {missed:?}");
    assert!(
        rate < 0.01,
        "{false_positives} false positives of {}",
        clean.len()
    );
    let rows = jsonl(&out.join("openai/train.jsonl"));
    assert!(rows
        .iter()
        .all(|r| !planted_ids.contains(r["id"].as_str().unwrap())));
    // A set that no longer hashes as pinned is refused, by name.
    let wrong = format!("{}#{}", path.display(), "0".repeat(64));
    let (code, said) = rocqa(
        root,
        &[
            "export",
            "--out",
            out.to_str().unwrap(),
            "--decontaminate",
            &wrong,
        ],
    );
    assert_eq!(code, 2);
    assert!(
        said.contains("eval.jsonl") && said.contains("not to the pinned"),
        "{said}"
    );
}

#[test]
fn bad_input_is_named_with_what_to_do() {
    let root = project("");
    let mix = root.path().join("mix.toml");
    std::fs::write(
        &mix,
        "seed = 1\n[[source]]\nentries = [\"out/rocblas/6.4.4\"]\n[quota.colour]\nred = 3\n",
    )
    .unwrap();
    let (code, said) = rocqa(root.path(), &["mix", mix.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        said.contains("mix.toml") && said.contains("colour"),
        "{said}"
    );
    let (code, said) = rocqa(root.path(), &["export", "nowhere/entries.jsonl"]);
    assert_eq!(code, 2);
    assert!(
        said.contains("nowhere/entries.jsonl") && said.contains("run folder"),
        "{said}"
    );
    let (code, said) = rocqa(root.path(), &["export", "--generator", "fact"]);
    assert_eq!(code, 2);
    assert!(said.contains("facts, mutation or llm"), "{said}");
}
