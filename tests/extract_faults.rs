//! `rocqa extract` through the real binary on real rocBLAS 6.4.4 against a scripted
//! endpoint on loopback that answers well (citing the first block of the slice it was
//! shown) or fails on purpose: 429 with Retry-After, 500, malformed JSON, a dropped
//! connection. The run must finish, write schema-valid entries, record every failure
//! as a reject with its reason, and ask the failed questions again on the next run.
#![cfg(feature = "real-sources")]

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use common::{completion, jsonl as lines, read_request, tag, BIN};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Play {
    Good,
    TooManyThenGood,
    ServerError,
    Malformed,
    Drop,
}

/// Per prompt: how it is answered, and how often it was asked.
#[derive(Default)]
struct Script {
    plays: HashMap<String, (Play, u32)>,
    healthy: bool,
}

fn serve(listener: TcpListener, script: Arc<Mutex<Script>>) {
    listener.set_nonblocking(false).unwrap();
    for conn in listener.incoming().take(500) {
        let Ok(mut sock) = conn else { break };
        let script = script.clone();
        std::thread::spawn(move || {
            let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
            let Some(body) = read_request(&mut sock) else {
                return;
            };
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let user = v["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_string();
            let (play, tries) = {
                let mut s = script.lock().unwrap();
                let n = s.plays.len();
                let healthy = s.healthy;
                let e = s.plays.entry(user.clone()).or_insert_with(|| {
                    let p = [
                        Play::Good,
                        Play::TooManyThenGood,
                        Play::ServerError,
                        Play::Malformed,
                        Play::Drop,
                    ][n % 5];
                    (p, 0)
                });
                e.1 += 1;
                (if healthy { Play::Good } else { e.0 }, e.1)
            };
            let respond = |sock: &mut TcpStream, status: &str, extra: &str, body: &str| {
                let _ = write!(sock, "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}", body.len());
            };
            match play {
                Play::Good => respond(&mut sock, "200 OK", "", &completion(&good_answer(&user))),
                Play::TooManyThenGood if tries == 1 => respond(
                    &mut sock,
                    "429 Too Many Requests",
                    "Retry-After: 1\r\n",
                    "{}",
                ),
                Play::TooManyThenGood => {
                    respond(&mut sock, "200 OK", "", &completion(&good_answer(&user)))
                }
                Play::ServerError => respond(
                    &mut sock,
                    "500 Internal Server Error",
                    "",
                    "{\"error\":\"boom\"}",
                ),
                Play::Malformed => {
                    respond(&mut sock, "200 OK", "", "{\"choices\": [ {\"message\": ")
                }
                Play::Drop => drop(sock),
            }
        });
    }
}

/// Cites the first code block of the slice, as its header gives it.
fn good_answer(user: &str) -> String {
    let head = user
        .lines()
        .find(|l| l.starts_with("=== ") && !l.contains("left out"))
        .unwrap_or("");
    let place = head
        .trim_start_matches("=== ")
        .split(' ')
        .next()
        .unwrap_or("");
    let (file, range) = place.rsplit_once(':').unwrap_or(("", "1-1"));
    let (start, end) = range.split_once('-').unwrap_or(("1", "1"));
    let (start, end): (u32, u32) = (start.parse().unwrap_or(1), end.parse().unwrap_or(1));
    // The piece's name, as `(name, role)` after the place: a grounded answer names it.
    let name = head
        .split_once(" (")
        .and_then(|(_, r)| r.split(", ").next())
        .unwrap_or("");
    serde_json::json!({
        "answer": format!("The declaration and code of `{name}` at {file}:{start}-{end} define this entry point and what it forwards to. Note {}.", tag(user)),
        "code": "",
        "citations": [{"file": file, "start": start, "end": end.min(start + 2)}]
    })
    .to_string()
}

/// A scripted endpoint on loopback; `healthy` answers everything well.
fn endpoint(healthy: bool) -> (String, Arc<Mutex<Script>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let script = Arc::new(Mutex::new(Script {
        healthy,
        ..Default::default()
    }));
    let s = script.clone();
    std::thread::spawn(move || serve(listener, s));
    (url, script)
}

#[test]
fn endpoint_faults_end_as_rejects_and_are_asked_again() {
    let (url, script) = endpoint(false);
    let root = common::project("[llm]\ntimeout_secs = 10\nmax_retries = 1");
    let run = || {
        Command::new(BIN)
            .arg("--root")
            .arg(root.path())
            .args([
                "extract",
                "--lib",
                "rocblas",
                "--version",
                "6.4.4",
                "--api",
                "rocblas_s{scal,axpy,copy,swap}",
                // Questions of one slice go together; the scripted answers carry no
                // HIP code, so code-writing categories would reject them.
                "--category",
                "api-to-kernel,edge-cases,memory-access,semantics",
                "--limit",
                "10",
                "--concurrency",
                "4",
                "--no-cache",
            ])
            .env("ROCQA_LLM_URL", &url)
            .output()
            .unwrap()
    };
    let out = root.path().join("out/rocblas/6.4.4");

    let first = run();
    let text = String::from_utf8_lossy(&first.stdout);
    assert_eq!(
        first.status.code(),
        Some(2),
        "endpoint failures make exit 2:\n{text}\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let all = lines(&out.join("entries.jsonl"));
    let entries = llm_only(&all);
    let rejects = lines(&out.join("rejects.jsonl"));
    assert_eq!(entries.len() + rejects.len(), 10, "{text}");
    // Fact entries are written too, and fit the same schema.
    assert!(all.len() > entries.len(), "no fact entries:\n{text}");
    // Good answers and the ones that got a 429 first became entries.
    assert_eq!(entries.len(), 4, "{text}");
    let schema: serde_json::Value = serde_json::from_str(rocqa::emit::ENTRY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for e in &all {
        let errors: Vec<String> = validator.iter_errors(e).map(|er| er.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{e}");
        let c = &e["citations"][0];
        assert_eq!(c["sha256"].as_str().unwrap().len(), 64);
    }
    let reasons: BTreeSet<String> = rejects
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["stage"].as_str().unwrap(),
                r["reason"].as_str().unwrap()
            )
        })
        .collect();
    for want in ["llm:http", "llm:malformed", "llm:connection"] {
        assert!(reasons.contains(want), "no {want} reject: {reasons:?}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert!(
        manifest["llm"]["retries"].as_u64().unwrap() >= 2,
        "{}",
        manifest["llm"]
    );

    // The endpoint recovers: the failed questions are asked again, nothing else.
    script.lock().unwrap().healthy = true;
    let second = run();
    let text = String::from_utf8_lossy(&second.stdout);
    assert_eq!(second.status.code(), Some(0), "{text}");
    assert!(text.contains("(4 answered before)"), "{text}");
    let ids: Vec<String> = llm_only(&lines(&out.join("entries.jsonl")))
        .iter()
        .chain(lines(&out.join("rejects.jsonl")).iter())
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        (ids.len(), unique.len()),
        (10, 10),
        "duplicates after the retry run"
    );
    assert_eq!(llm_only(&lines(&out.join("entries.jsonl"))).len(), 10);
}

/// The entries a model answered (not the fact entries).
fn llm_only(entries: &[serde_json::Value]) -> Vec<serde_json::Value> {
    entries
        .iter()
        .filter(|e| e["generator"] == "llm")
        .cloned()
        .collect()
}

/// An extract over six BLAS-1 APIs of rocBLAS 6.4.4 (with the dot family's pointer-mode
/// branches).
const BLAS1: [&str; 7] = [
    "extract",
    "--lib",
    "rocblas",
    "--version",
    "6.4.4",
    "--api",
    "rocblas_s{scal,axpy,copy,swap,dot,nrm2}",
];

#[test]
fn shards_merge_into_the_unsharded_run() {
    let (url, _script) = endpoint(true);
    let root = common::project("[llm]\ntimeout_secs = 10\nmax_retries = 1");
    let run = |extra: &[&str]| {
        let o = Command::new(BIN)
            .arg("--root")
            .arg(root.path())
            .args(BLAS1)
            .args(["--category", "semantics,edge-cases", "--no-cache"])
            .args(extra)
            .env("ROCQA_LLM_URL", &url)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&[]);
    let out = root.path().join("out/rocblas/6.4.4");
    let whole: BTreeSet<String> = lines(&out.join("entries.jsonl"))
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert!(whole.len() >= 6, "{whole:?}");
    std::fs::remove_file(out.join("entries.jsonl")).unwrap();
    std::fs::remove_file(out.join("rejects.jsonl")).unwrap();
    run(&["--shard", "0/2"]);
    run(&["--shard", "1/2"]);
    let a: BTreeSet<String> = lines(&out.join("shard-0-of-2/entries.jsonl"))
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    let b: BTreeSet<String> = lines(&out.join("shard-1-of-2/entries.jsonl"))
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        a.is_disjoint(&b) && !a.is_empty() && !b.is_empty(),
        "{a:?} {b:?}"
    );
    let m = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .args(["merge", "--lib", "rocblas", "--version", "6.4.4"])
        .output()
        .unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let merged: BTreeSet<String> = lines(&out.join("entries.jsonl"))
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        merged == whole,
        "merged but not in the unsharded run: {:?}\nin the unsharded run but not merged: {:?}",
        merged.difference(&whole).collect::<Vec<_>>(),
        whole.difference(&merged).collect::<Vec<_>>()
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["entries"].as_u64().unwrap() as usize, whole.len());
    assert_eq!(manifest["shards"], serde_json::json!(["0/2", "1/2"]));
}

/// `extract --api rocblas_sscal --limit 1` with no endpoint; its report, the run passed.
fn scal_without_endpoint(root: &std::path::Path) -> String {
    let o = Command::new(BIN)
        .arg("--root")
        .arg(root)
        .args([
            "extract",
            "--lib",
            "rocblas",
            "--version",
            "6.4.4",
            "--api",
            "rocblas_sscal",
            "--limit",
            "1",
        ])
        .env_remove("ROCQA_LLM_URL")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{text}");
    text
}

#[test]
fn no_endpoint_writes_fact_entries_and_says_how_to_add_llm_ones() {
    let root = common::project("[llm]\ntimeout_secs = 10\nmax_retries = 1");
    // Fact entries need no model: they are written, and the run says how to add LLM ones.
    let text = scal_without_endpoint(root.path());
    assert!(
        text.contains("ROCQA_LLM_URL")
            && text.contains("[llm]")
            && text.contains("scripts/llm-server.sh"),
        "{text}"
    );
    let entries = lines(&root.path().join("out/rocblas/6.4.4/entries.jsonl"));
    assert!(entries.len() >= 3, "{text}");
    // Fact entries, and the find-the-bug tasks answered from their planted bugs (every
    // task of the scope: `--limit` bounds what is asked of a model).
    let of = |g: &str| entries.iter().filter(|e| e["generator"] == g).count();
    assert!(of("facts") >= 3, "{text}");
    assert!(of("mutation") >= 1, "{text}");
    assert_eq!(of("facts") + of("mutation"), entries.len());
}

/// Fact entries are rendered again on every run: one that an earlier renderer wrote
/// and this one does not (reworded, or its code changed since) is taken out, not kept
/// beside its rewording. Model answers, and fact entries of families the run does not
/// cover (`--api`, another shard), stay.
#[test]
fn a_rerun_replaces_fact_entries_an_earlier_rendering_wrote() {
    let root = common::project("");
    let run = || scal_without_endpoint(root.path());
    run();
    let path = root.path().join("out/rocblas/6.4.4/entries.jsonl");
    let first = lines(&path);
    let fact = first
        .iter()
        .find(|e| e["generator"] == "facts")
        .expect("a fact entry")
        .clone();
    let planted = |id: &str, family: &str, generator: &str, answer: &str| {
        let mut e = fact.clone();
        e["id"] = id.into();
        e["family"] = family.into();
        e["generator"] = generator.into();
        e["answer"] = answer.into();
        serde_json::to_string(&e).unwrap() + "\n"
    };
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&planted(
        "rocblas-00000000000000a1",
        "scal",
        "facts",
        "An earlier wording of the same facts, with its citations.",
    ));
    text.push_str(&planted(
        "rocblas-00000000000000a2",
        "axpy",
        "facts",
        "A fact entry of a family this run does not cover.",
    ));
    text.push_str(&planted(
        "rocblas-00000000000000a3",
        "scal",
        "llm",
        "A model's answer about scal, which no rendering replaces.",
    ));
    std::fs::write(&path, text).unwrap();
    let report = run();
    assert!(
        report.contains("1 of an earlier rendering replaced"),
        "{report}"
    );
    let ids: BTreeSet<String> = lines(&path)
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!ids.contains("rocblas-00000000000000a1"), "{ids:?}");
    assert!(ids.contains("rocblas-00000000000000a2"), "{ids:?}");
    assert!(ids.contains("rocblas-00000000000000a3"), "{ids:?}");
    // Everything the first run wrote is still there, once.
    let want: BTreeSet<String> = first
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert!(want.is_subset(&ids));
    assert_eq!(lines(&path).len(), first.len() + 2);
}

/// The fact entries of a no-endpoint run over [`BLAS1`], read
/// on `jobs` threads: (id, answer) per entry.
fn blas1_fact_entries(jobs: &str) -> BTreeSet<(String, String)> {
    let root = common::project("");
    let mut args = vec!["--jobs", jobs];
    args.extend(BLAS1);
    args.push("--no-cache");
    common::rocqa_in(root.path(), &args, None);
    lines(&root.path().join("out/rocblas/6.4.4/entries.jsonl"))
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_string(),
                e["answer"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn what_the_facts_say_does_not_depend_on_the_thread_schedule() {
    // A condition's kept evaluation once answered for whichever environment read it
    // first: the dot family's pointer-mode entries came out three ways (220, 227 or
    // 234 entries) with the thread schedule.
    let one = blas1_fact_entries("1");
    let two = blas1_fact_entries("2");
    assert!(one.len() >= 100, "{}", one.len());
    assert!(
        one == two,
        "on one thread only: {:?}\non two only: {:?}",
        one.difference(&two).map(|e| &e.0).collect::<Vec<_>>(),
        two.difference(&one).map(|e| &e.0).collect::<Vec<_>>()
    );
}
