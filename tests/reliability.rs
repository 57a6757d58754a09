//! Reliability holes, each through the real binary on real rocBLAS 6.4.4: output files
//! that cannot be read are errors (never empty files), a transient failure after a
//! refused schema does not switch structured output off, a URL without a host and an
//! unclosed template placeholder are refused, responses are capped, server bytes reach
//! the terminal printable, LLM totals add up over runs, and `validate` names a missing
//! file.
#![cfg(feature = "real-sources")]

mod common;

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::{careful_answer, jsonl, project, repo, serve, user_message, Reply, BIN};

fn extract(root: &std::path::Path, url: &str, limit: &str) -> Output {
    Command::new(BIN)
        .arg("--root")
        .arg(root)
        .args([
            "extract",
            "--lib",
            "rocblas",
            "--api",
            "rocblas_sscal",
            "--limit",
            limit,
            "--concurrency",
            "1",
        ])
        .env("ROCQA_LLM_URL", url)
        .output()
        .unwrap()
}

const QUICK: &str = "[llm]\ntimeout_secs = 10\nmax_retries = 1\n";

#[test]
fn unreadable_outputs_are_errors_never_empty_files() {
    let root = project(QUICK);
    let dir = root.path().join("out/rocblas/6.4.4");
    std::fs::create_dir_all(&dir).unwrap();
    // A device that reads zeros for ever: resume must refuse it, not read it.
    std::os::unix::fs::symlink("/dev/full", dir.join("entries.jsonl")).unwrap();
    let o = extract(root.path(), "http://127.0.0.1:9/v1", "1");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("entries.jsonl") && err.contains("not a regular file"),
        "{err}"
    );
    // A file that cannot be read is not an empty one.
    std::fs::remove_file(dir.join("entries.jsonl")).unwrap();
    std::fs::create_dir(dir.join("entries.jsonl")).unwrap();
    let o = extract(root.path(), "http://127.0.0.1:9/v1", "1");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("entries.jsonl"));

    for (file, says) in [
        ("no/such/file.jsonl", "no such file"),
        ("/dev/full", "not a regular file"),
    ] {
        let o = Command::new(BIN)
            .arg("--root")
            .arg(repo())
            .args(["validate", file])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(file) && err.contains(says), "{file}: {err}");
    }
}

#[test]
fn a_transient_failure_after_a_refused_schema_keeps_structured_output() {
    // The first request with a schema is refused (400); its schema-less retry only
    // ever meets 429. Nothing is proven about schemas: later requests keep theirs.
    #[derive(Default)]
    struct Log {
        refused: Option<String>,
        with_schema_after: usize,
    }
    let log = Arc::new(Mutex::new(Log::default()));
    let l = log.clone();
    let url = serve(move |body| {
        let user = user_message(body);
        let mut log = l.lock().unwrap();
        let structured = body.get("response_format").is_some();
        match (&log.refused, structured) {
            (None, true) => {
                log.refused = Some(user);
                Reply {
                    status: "400 Bad Request".into(),
                    headers: String::new(),
                    body: Some(b"{\"error\":\"bad request\"}".to_vec()),
                }
            }
            (Some(first), false) if *first == user => Reply {
                status: "429 Too Many Requests".into(),
                headers: "Retry-After: 0\r\n".into(),
                body: Some(b"{}".to_vec()),
            },
            (Some(_), true) => {
                log.with_schema_after += 1;
                Reply::completion(&careful_answer(&user, false))
            }
            _ => Reply::completion(&careful_answer(&user, false)),
        }
    });
    let root = project(QUICK);
    let o = extract(root.path(), &url, "3");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "one question got no answer: {err}"
    );
    assert_eq!(log.lock().unwrap().with_schema_after, 2, "{err}");
}

#[test]
fn a_url_without_a_host_and_an_unclosed_placeholder_are_refused() {
    let root = project("");
    let o = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .arg("check")
        .env("ROCQA_LLM_URL", "http://")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("`http://` is not an http:// or https:// URL with a host"),
        "{out}"
    );
    let t = root.path().join("question_templates/semantics.toml");
    let text = std::fs::read_to_string(&t).unwrap();
    let (head, tail) = text.split_once("{api}").expect("a template uses {api}");
    std::fs::write(&t, format!("{head}{{api{tail}")).unwrap();
    let o = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .arg("check")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("semantics.toml") && err.contains("unclosed placeholder {api"),
        "{err}"
    );
}

#[test]
fn big_responses_are_capped_and_server_bytes_made_printable() {
    // The first question is answered far over the cap; the others with a 500 whose
    // body carries terminal escapes and NUL.
    let first: Arc<Mutex<Option<String>>> = Arc::default();
    let url = serve(move |body| {
        let user = user_message(body);
        let big = first.lock().unwrap().get_or_insert_with(|| user.clone()) == &user;
        if big {
            Reply::completion(&"x".repeat(6 << 20))
        } else {
            Reply {
                status: "500 Internal Server Error".into(),
                headers: String::new(),
                body: Some(b"\x1b[31mboom\x00\x07 \x1b]0;owned\x07".to_vec()),
            }
        }
    });
    let root = project(QUICK);
    let o = extract(root.path(), &url, "2");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        !err.contains('\u{1b}') && !err.contains('\0') && !err.contains('\u{7}'),
        "{err:?}"
    );
    let rejects = jsonl(&root.path().join("out/rocblas/6.4.4/rejects.jsonl"));
    let details: Vec<&str> = rejects
        .iter()
        .map(|r| r["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details.len(), 2, "{rejects:?}");
    assert!(
        details.iter().any(|d| d.contains("larger than")),
        "{details:?}"
    );
    assert!(
        details
            .iter()
            .any(|d| d.contains("boom") && !d.contains('\u{1b}') && !d.contains('\0')),
        "{details:?}"
    );
    // The capped answer was neither buffered whole nor cached.
    let cache = std::fs::metadata(root.path().join("out/cache/llm.sqlite")).map_or(0, |m| m.len());
    assert!(cache < 1 << 20, "{cache} bytes cached");
}

#[test]
fn llm_totals_add_up_over_runs() {
    let url = serve(|body| Reply::completion(&careful_answer(&user_message(body), false)));
    let root = project(QUICK);
    let manifest = || -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(root.path().join("out/rocblas/6.4.4/manifest.json")).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(extract(root.path(), &url, "2").status.code(), Some(0));
    let first = manifest()["llm"]["requests"].as_u64().unwrap();
    assert_eq!(first, 2);
    // A rejected answer is asked again by the next run, and an answer failing on form
    // only is asked once more in a repair request: both are requests of their own.
    let rejected = manifest()["rejects"].as_u64().unwrap();
    let repairs_before = manifest()["repairs"]["asked"].as_u64().unwrap_or(0);
    assert_eq!(extract(root.path(), &url, "4").status.code(), Some(0));
    let m = manifest();
    let repairs = m["repairs"]["asked"].as_u64().unwrap_or(0);
    assert!(repairs >= repairs_before, "{m}");
    assert_eq!(
        m["llm"]["requests"].as_u64().unwrap(),
        4 + rejected + repairs,
        "{m}"
    );
}
