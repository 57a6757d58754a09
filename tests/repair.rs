//! The repair round through the real binary on real rocBLAS 6.4.4: a scripted endpoint
//! whose first answer to each question is right but wrapped in talk of the system
//! prompt's rules (a form failure), and whose answer to the repair request is the same
//! answer without it. Every question is asked once more, each repaired answer is kept,
//! and the manifest counts the repairs and their tokens.
#![cfg(feature = "real-sources")]

mod common;

use common::{careful_answer, extract_against, jsonl, serve, Reply};

#[test]
fn an_answer_failing_on_form_only_is_asked_once_more_and_kept() {
    let url = serve(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        // The question as planned is the first user message; a repair request carries
        // the answer given and what failed, after it.
        let question = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        let mut a: serde_json::Value =
            serde_json::from_str(&careful_answer(&question, false)).unwrap();
        if messages.len() == 2 {
            let prose = a["answer"].as_str().unwrap_or("").to_string();
            a["answer"] = format!("Per the instructions, {prose}").into();
        } else {
            let last = messages
                .last()
                .and_then(|m| m["content"].as_str())
                .unwrap_or("");
            assert!(last.contains("model-markup"), "{last}");
            assert_eq!(messages[messages.len() - 2]["role"], "assistant");
        }
        Reply::completion(&a.to_string())
    });
    let root = extract_against(
        &url,
        &[
            "--lib",
            "rocblas",
            "--api",
            "rocblas_sscal",
            "--limit",
            "4",
            "--category",
            "semantics,api-to-kernel",
        ],
    );
    let dir = root.path().join("out/rocblas/6.4.4");
    let llm: Vec<serde_json::Value> = jsonl(&dir.join("entries.jsonl"))
        .into_iter()
        .filter(|e| e["generator"] == "llm")
        .collect();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let repairs = &manifest["repairs"];
    assert!(!llm.is_empty(), "no model entry kept");
    assert!(llm.iter().all(|e| !e["answer"]
        .as_str()
        .unwrap()
        .contains("Per the instructions")));
    assert_eq!(
        repairs["asked"].as_u64(),
        Some(llm.len() as u64),
        "{repairs}"
    );
    assert_eq!(repairs["kept"], repairs["asked"], "{repairs}");
    assert!(repairs["prompt_tokens"].as_u64().unwrap() > 0, "{repairs}");
}
