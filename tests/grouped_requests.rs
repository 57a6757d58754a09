//! `rocqa extract --group-questions` through the real binary on real rocBLAS 6.4.4
//! against a scripted endpoint on loopback: each slice's questions go in one request,
//! the reply is split, every answer is judged on its own and written as an ordinary
//! entry; missing, repeated and malformed items become rejects of their question only; a
//! grouped reply cut at `max_tokens` is asked again one question at a time; a run killed
//! mid-way resumes with nothing lost or repeated.
#![cfg(feature = "real-sources")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{careful_answer, jsonl, jsonl_written, project, serve, user_message, Reply, BIN};

const ARGS: [&str; 13] = [
    "extract",
    "--lib",
    "rocblas",
    "--version",
    "6.4.4",
    "--api",
    "rocblas_s{scal,axpy,copy}",
    // The scripted answers carry no HIP code, so code-writing categories stay out.
    "--category",
    "api-to-kernel,edge-cases,memory-access,semantics",
    "--limit",
    "24",
    "--group-questions",
    "--concurrency=1",
];

/// The numbered questions of a grouped prompt (none for a one-question prompt).
fn asked(user: &str) -> usize {
    user.split_once("\nQuestions:\n").map_or(0, |(_, qs)| {
        qs.lines()
            .take_while(|l| {
                l.split_once(". ")
                    .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
            })
            .count()
    })
}

/// A careful answer to question `k` of a grouped prompt (distinct per question, so the
/// answers of one reply are not near-duplicates of each other).
fn item(user: &str, k: usize) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&careful_answer(&format!("{user}\n#{k}"), false)).unwrap();
    v["question"] = k.into();
    v
}

/// A completion cut at max_tokens.
fn cut() -> Reply {
    Reply {
        status: "200 OK".into(),
        headers: String::new(),
        body: Some(
            serde_json::json!({
                "id": "x", "object": "chat.completion", "model": "scripted",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"answers\": [{\"question\": 1, \"answer\": \"The ker"}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 1024, "total_tokens": 1124}
            })
            .to_string()
            .into_bytes(),
        ),
    }
}

fn planned(root: &std::path::Path) -> Vec<serde_json::Value> {
    let dry = Command::new(BIN)
        .arg("--root")
        .arg(root)
        .args(ARGS)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    jsonl(&root.join("out/rocblas/6.4.4/dry-run/prompts.jsonl"))
}

/// Ids of the records the questions produced (fact entries aside).
fn answered(out: &std::path::Path) -> Vec<String> {
    // Read while a run may be writing (or was killed mid-line): whole lines only.
    let mut ids: Vec<String> = jsonl_written(&out.join("entries.jsonl"))
        .iter()
        .filter(|e| e["generator"] == "llm")
        .chain(jsonl_written(&out.join("rejects.jsonl")).iter())
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn one_request_per_slice_split_into_entries_with_faults_per_question() {
    // Requests seen, in order: (questions asked, user message).
    let seen: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
    let log = seen.clone();
    // Repair requests (an answer given, and what failed in it), apart.
    let repairs: Arc<Mutex<Vec<String>>> = Arc::default();
    let repair_log = repairs.clone();
    // Whether the group with faulty answers was served.
    let faulted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let url = serve(move |body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if messages.iter().any(|m| m["role"] == "assistant") {
            let first = messages
                .iter()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_string();
            repair_log.lock().unwrap().push(first.clone());
            return Reply::completion(&careful_answer(&first, false));
        }
        let user = user_message(body);
        let n = asked(&user);
        let grouped_before = {
            let mut s = log.lock().unwrap();
            s.push((n, user.clone()));
            s.iter().filter(|(m, _)| *m > 1).count() - usize::from(n > 1)
        };
        if n <= 1 {
            return Reply::completion(&careful_answer(&user, false));
        }
        // Asked in one request: the first group is cut at max_tokens; the next of three
        // questions or more answers question 2 not at all, question 3 malformed and
        // question 1 twice; the others well.
        let mut items: Vec<serde_json::Value> = (1..=n).map(|k| item(&user, k)).collect();
        if grouped_before == 0 {
            return cut();
        }
        if n >= 3 && !faulted.swap(true, std::sync::atomic::Ordering::SeqCst) {
            items.remove(1);
            items[1] = serde_json::json!({"question": 3, "answer": 5});
            items.push(item(&user, 1));
        }
        assert_eq!(
            body["response_format"]["json_schema"]["schema"]["properties"]["answers"]["minItems"],
            n,
            "the grouped schema asks for one answer per question"
        );
        Reply::completion(&serde_json::json!({ "answers": items }).to_string())
    });
    let root = project("[llm]\ntimeout_secs = 10\nmax_retries = 1");
    let plan = planned(root.path());
    // Slices in planned order, with their question counts.
    let mut order: Vec<String> = Vec::new();
    let mut per_slice: BTreeMap<String, usize> = BTreeMap::new();
    for q in &plan {
        let id = q["slice_id"].as_str().unwrap().to_string();
        if !order.contains(&id) {
            order.push(id.clone());
        }
        *per_slice.entry(id).or_default() += 1;
    }
    let o = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .args(ARGS)
        .arg("--no-cache")
        .env("ROCQA_LLM_URL", &url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = root.path().join("out/rocblas/6.4.4");

    // Every planned question has exactly one record.
    let ids = answered(&out);
    let want: BTreeSet<String> = plan
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), want.len(), "duplicates: {ids:?}");
    assert_eq!(ids.iter().cloned().collect::<BTreeSet<_>>(), want);

    // One request per slice, plus one per question of the group cut at max_tokens.
    let seen = seen.lock().unwrap();
    let groups: Vec<usize> = seen.iter().map(|(n, _)| *n).filter(|n| *n > 1).collect();
    let multi: Vec<usize> = order
        .iter()
        .map(|id| per_slice[id])
        .filter(|n| *n > 1)
        .collect();
    assert_eq!(
        groups, multi,
        "one grouped request per slice of several questions"
    );
    let singles = seen.iter().filter(|(n, _)| *n <= 1).count();
    assert_eq!(singles, per_slice.len() - multi.len() + multi[0]);
    // The malformed answer (question 3 of the faulty group) is asked for once more.
    let repairs = repairs.lock().unwrap();
    assert_eq!(repairs.len(), 1, "one repair request");
    assert!(
        text.contains(&format!("llm: {} requests", seen.len() + repairs.len())),
        "{text}"
    );
    assert!(
        text.contains("repairs: 1 answers failed on form only"),
        "{text}"
    );

    // Entries from grouped replies say so; the fallback's are ordinary.
    let schema: serde_json::Value = serde_json::from_str(rocqa::emit::ENTRY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let entries: Vec<serde_json::Value> = jsonl(&out.join("entries.jsonl"))
        .into_iter()
        .filter(|e| e["generator"] == "llm")
        .collect();
    for e in &entries {
        let errors: Vec<String> = validator.iter_errors(e).map(|er| er.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{e}");
    }
    let grouped = entries
        .iter()
        .filter(|e| e["grouped_request"].is_object())
        .count();
    let ungrouped = entries.len() - grouped;
    assert!(
        ungrouped >= multi[0],
        "{ungrouped} entries from single requests"
    );
    // The faulty group: question 2 missing, 1 answered twice; the rest kept (question 3's
    // malformed answer was asked for once more and answered well).
    let rejects = jsonl(&out.join("rejects.jsonl"));
    let details: Vec<String> = rejects
        .iter()
        .map(|r| format!("{} {}", r["reason"], r["detail"]))
        .collect();
    for want in ["no answer for question 2", "2 answers for question 1"] {
        assert!(
            details
                .iter()
                .any(|d| d.starts_with("\"json\"") && d.contains(want)),
            "no reject for `{want}`: {details:#?}"
        );
    }
    assert!(
        rejects.iter().all(|r| r["stage"] == "validate"),
        "{details:#?}"
    );
    let from_groups: usize = multi[1..].iter().sum();
    assert!(
        grouped > 0 && grouped <= from_groups - 3,
        "{grouped} grouped entries of {from_groups} grouped questions; rejects {details:#?}"
    );
    for e in entries.iter().filter(|e| e["grouped_request"].is_object()) {
        let g = &e["grouped_request"];
        assert!(g["position"].as_u64().unwrap() <= g["questions"].as_u64().unwrap());
        assert!(
            per_slice[e["slice_id"].as_str().unwrap()] == g["questions"].as_u64().unwrap() as usize
        );
    }
}

#[test]
fn a_grouped_run_killed_mid_way_resumes_with_nothing_lost_or_repeated() {
    // The second grouped request hangs until the run is killed.
    let hang = Arc::new(AtomicBool::new(true));
    let groups_seen = Arc::new(Mutex::new(BTreeSet::<String>::new()));
    let (h, g) = (hang.clone(), groups_seen.clone());
    let url = serve(move |body| {
        let user = user_message(body);
        let n = asked(&user);
        if n <= 1 {
            return Reply::completion(&careful_answer(&user, false));
        }
        let later = {
            let mut s = g.lock().unwrap();
            s.insert(user.clone());
            s.len() > 1
        };
        if later && h.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_secs(60));
        }
        let items: Vec<serde_json::Value> = (1..=n).map(|k| item(&user, k)).collect();
        Reply::completion(&serde_json::json!({ "answers": items }).to_string())
    });
    let root = project("[llm]\ntimeout_secs = 120\nmax_retries = 1");
    let want: BTreeSet<String> = planned(root.path())
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_string())
        .collect();
    let out = root.path().join("out/rocblas/6.4.4");
    let extract = || {
        let mut c = Command::new(BIN);
        c.arg("--root")
            .arg(root.path())
            .args(ARGS)
            .env("ROCQA_LLM_URL", &url);
        c
    };
    let mut child = extract()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while answered(&out).is_empty() || groups_seen.lock().unwrap().len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no answer in 5 minutes"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("extract ended before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = answered(&out);
    assert!(
        !before.is_empty() && before.len() < want.len(),
        "{before:?}"
    );

    hang.store(false, Ordering::SeqCst);
    let o = extract().output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!("({} answered before)", before.len())),
        "{text}"
    );
    let after = answered(&out);
    assert_eq!(after.len(), want.len(), "duplicates: {after:?}");
    assert_eq!(after.into_iter().collect::<BTreeSet<_>>(), want);
}
