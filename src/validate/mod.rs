//! The `validate` stage: no answer becomes an entry unless it passes these checks.
//!
//! [`checks`] holds the one ordered list of checks that `rocqa extract` (on a model's
//! reply, [`check_reply`]) and `rocqa validate` (on an entries file, [`file`](mod@file))
//! both run, with the typed [`Reason`] of each failure: length bounds, no refusal or
//! copy of the question, code present where asked, within the target's block size and
//! its kernels' bounds ([`launch`]) and with every barrier reached by all threads of a
//! block or none ([`barrier`]), the slice and every citation read from the pinned tree, names, files,
//! line ranges and quotes grounded ([`grounding`]). Near-duplicates and contamination
//! are found with [`dedup`]; [`compile`] compile-checks HIP snippets with the ROCm
//! compiler.

pub mod barrier;
pub mod branch;
pub mod checks;
pub mod compile;

pub mod dedup;
pub mod factcheck;
pub mod file;
pub mod form;
pub mod grounding;
pub mod launch;
pub mod provenance;

use serde::Deserialize;

use crate::model::{Check, PieceRef, Question, Slice};
pub use checks::{
    refusal_in, run_checks, Candidate, ClaimedCitation, Failed, Grounding, Reason, ShownCache,
    Validated, MAX_ANSWER_CHARS, MIN_ANSWER_CHARS,
};

#[derive(Deserialize)]
struct RawCitation {
    file: String,
    start: i64,
    end: i64,
}

#[derive(Deserialize)]
struct RawAnswer {
    answer: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    citations: Vec<RawCitation>,
}

/// The check for one compile outcome, on either path.
pub fn compile_verdict(
    compiler: &compile::Compiler,
    o: &compile::CompileOutcome,
) -> Result<Check, (Reason, String)> {
    if o.ok {
        Ok(Check {
            name: "compiles".into(),
            ok: true,
            detail: format!(
                "{}{}",
                compiler.toolchain().describe(),
                if o.cached { " (cached)" } else { "" }
            ),
        })
    } else {
        Err((
            Reason::of_compile_stage(&o.stage),
            o.diagnostics.chars().take(1500).collect(),
        ))
    }
}

/// The JSON object in a reply: the whole reply, or the outermost `{...}` in it (servers
/// without structured output wrap it in prose or code fences).
fn json_object(raw: &str) -> Option<&str> {
    let t = raw.trim();
    if t.starts_with('{') {
        return Some(t);
    }
    let (a, b) = (t.find('{')?, t.rfind('}')?);
    (a < b).then(|| &t[a..=b])
}

/// The pieces of a slice as entries record them.
pub fn piece_refs(s: &Slice) -> Vec<PieceRef> {
    s.pieces
        .iter()
        .map(|p| PieceRef {
            role: p.role,
            name: p.name.clone(),
            lib: p.lib.clone(),
            file: p.file.clone(),
            start: p.start,
            end: p.end,
            sha256: p.sha256.clone(),
            expansion: crate::slice::expansion_in(&p.text),
        })
        .collect()
}

/// Splits the reply to a request that asked `n` questions at once
/// (`{"answers": [{"question": k, "answer", "code", "citations"}, ...]}`) into one answer
/// object per question, in question order, each to be checked on its own by
/// [`check_reply`]. An item without a number takes its place in the array. A question
/// the reply answers not exactly once gets a [`Reason::Json`] failure naming what came;
/// numbers outside `1..=n` answer nothing and are left out.
pub fn split_grouped_reply(raw: &str, n: usize) -> Vec<Result<String, Failed>> {
    let everyone = |detail: String| {
        (0..n)
            .map(|_| Err(Failed::at_start(Reason::Json, detail.clone())))
            .collect()
    };
    let parsed: serde_json::Value = match json_object(raw).map(serde_json::from_str) {
        Some(Ok(v)) => v,
        Some(Err(e)) => return everyone(format!("grouped reply is not JSON: {e}")),
        None => return everyone("grouped reply holds no JSON object".into()),
    };
    let Some(items) = parsed.get("answers").and_then(|a| a.as_array()) else {
        return everyone("grouped reply has no `answers` array".into());
    };
    let mut by_number: Vec<Vec<&serde_json::Value>> = vec![Vec::new(); n];
    for (k, item) in items.iter().enumerate() {
        let number = item
            .get("question")
            .and_then(|q| q.as_u64())
            .unwrap_or(k as u64 + 1);
        if let Some(slot) = (number as usize)
            .checked_sub(1)
            .and_then(|i| by_number.get_mut(i))
        {
            slot.push(item);
        }
    }
    by_number
        .into_iter()
        .enumerate()
        .map(|(i, found)| match found.as_slice() {
            [one] => Ok(one.to_string()),
            [] => Err(Failed::at_start(
                Reason::Json,
                format!(
                    "grouped reply of {} items holds no answer for question {}",
                    items.len(),
                    i + 1
                ),
            )),
            many => Err(Failed::at_start(
                Reason::Json,
                format!(
                    "grouped reply holds {} answers for question {}",
                    many.len(),
                    i + 1
                ),
            )),
        })
        .collect()
}

/// Parses a model's reply and runs [`checks::CHECKS`] on it.
pub fn check_reply(
    q: &Question,
    slice: &Slice,
    raw: &str,
    g: &Grounding,
) -> Result<Validated, Failed> {
    let parsed: RawAnswer = match json_object(raw).map(serde_json::from_str::<RawAnswer>) {
        Some(Ok(a)) => a,
        Some(Err(e)) => {
            return Err(Failed::at_start(
                Reason::Json,
                format!("reply is not the answer object: {e}"),
            ))
        }
        None => {
            return Err(Failed::at_start(
                Reason::Json,
                "reply holds no JSON object".into(),
            ))
        }
    };
    let citations: Vec<ClaimedCitation> = parsed
        .citations
        .iter()
        .map(|c| ClaimedCitation {
            lib: None,
            file: c.file.clone(),
            start: c.start,
            end: c.end,
            sha256: None,
        })
        .collect();
    let pieces = piece_refs(slice);
    let code = parsed.code.trim();
    let candidate = Candidate {
        lib: &slice.lib,
        version: &slice.version,
        question: &q.text,
        requires_code: q.requires_code,
        answer: &parsed.answer,
        code: (!code.is_empty()).then_some(code),
        citations: &citations,
        slice: &pieces,
        apis: &slice.apis,
        call_path: &slice.call_path,
        mutation: q.mutation.as_ref(),
    };
    let mut v = run_checks(&candidate, g)?;
    v.checks.insert(
        0,
        Check {
            name: "json".into(),
            ok: true,
            detail: "answer object parsed".into(),
        },
    );
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PieceRole, SliceFeatures, SlicePiece};
    use crate::slice::lines_hash;
    use crate::slice::Trees;
    use grounding::KnownNames;

    fn fixture() -> (Question, Slice, Trees, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("src/k.hpp"), text).unwrap();
        let mut trees = Trees::default();
        trees.add("lib", dir.path());
        let slice = Slice {
            id: "lib:1:fam".into(),
            lib: "lib".into(),
            version: "1".into(),
            family: "fam".into(),
            variant: String::new(),
            api: "lib_sfam".into(),
            apis: vec!["lib_sfam".into()],
            call_path: vec![],
            pieces: vec![SlicePiece {
                role: PieceRole::Kernel,
                name: "k".into(),
                lib: "lib".into(),
                file: "src/k.hpp".into(),
                start: 5,
                end: 15,
                sha256: lines_hash(
                    &(1..=20).map(|i| format!("line {i}")).collect::<Vec<_>>(),
                    5,
                    15,
                ),
                depth: 2,
                tokens: 10,
                text: String::new(),
                part: Default::default(),
            }],
            omitted: vec![],
            features: SliceFeatures::default(),
            focus: Default::default(),
            difficulty: "L1".into(),
            tokens: 10,
        };
        let q = Question {
            id: "q".into(),
            slice_id: slice.id.clone(),
            category: "semantics".into(),
            template_id: "t".into(),
            template_version: 1,
            difficulty: "L1".into(),
            text: "What does the kernel compute for each element of x?".into(),
            requires_code: false,
            messages: vec![],
            prompt_tokens: 0,
            mutation: None,
            pattern: None,
        };
        (q, slice, trees, dir)
    }

    // The fixture's code is `line 1` to `line 20`: the answer names it as code.
    const GOOD: &str = "The kernel scales each element of x by alpha, one element per `line`.";

    fn reply(answer: &str, file: &str, start: i64, end: i64) -> String {
        serde_json::json!({"answer": answer, "code": "", "citations": [{"file": file, "start": start, "end": end}]}).to_string()
    }

    #[test]
    fn good_reply_passes_with_hashed_citations() {
        let (q, s, t, _d) = fixture();
        let v = check_reply(
            &q,
            &s,
            &reply(GOOD, "k.hpp", 6, 7),
            &Grounding {
                trees: &t,
                known: &KnownNames::default(),
                facts: None,
                catalogue: &Default::default(),
                shown: &Default::default(),
            },
        )
        .unwrap();
        assert_eq!(v.citations[0].file, "src/k.hpp");
        assert_eq!(
            v.citations[0].sha256,
            lines_hash(&["line 6".to_string(), "line 7".to_string()], 1, 2)
        );
        // Prose around the object (no structured output) is tolerated.
        assert!(check_reply(
            &q,
            &s,
            &format!("Sure:\n```json\n{}\n```", reply(GOOD, "src/k.hpp", 5, 5)),
            &Grounding {
                trees: &t,
                known: &KnownNames::default(),
                facts: None,
                catalogue: &Default::default(),
                shown: &Default::default(),
            }
        )
        .is_ok());
    }

    #[test]
    fn each_defect_has_its_reason() {
        let (mut q, s, t, _d) = fixture();
        let cases = [
            ("not json at all".to_string(), "json"),
            (reply("too short", "src/k.hpp", 6, 7), "answer-length"),
            (
                reply(
                    "I'm sorry, I cannot answer that question from the code shown.",
                    "src/k.hpp",
                    6,
                    7,
                ),
                "refusal",
            ),
            (reply(&q.text.clone(), "src/k.hpp", 6, 7), "copies-question"),
            (
                reply(
                    "Unfortunately the excerpt shown here does not include enough of the kernel.",
                    "src/k.hpp",
                    6,
                    7,
                ),
                "refusal",
            ),
            (reply(GOOD, "src/other.hpp", 6, 7), "citation-outside-slice"),
            (reply(GOOD, "src/k.hpp", 2, 7), "citation-outside-slice"),
            (reply(GOOD, "src/k.hpp", 9, 7), "citation-out-of-range"),
            (
                reply(GOOD, "../../../../etc/passwd", 1, 1),
                "citation-outside-slice",
            ),
            (
                serde_json::json!({"answer": GOOD, "code": "", "citations": []}).to_string(),
                "citations-present",
            ),
        ];
        for (raw, reason) in cases {
            let f = check_reply(
                &q,
                &s,
                &raw,
                &Grounding {
                    trees: &t,
                    known: &KnownNames::default(),
                    facts: None,
                    catalogue: &Default::default(),
                    shown: &Default::default(),
                },
            )
            .unwrap_err();
            assert_eq!(f.reason.as_str(), reason, "{raw}: {}", f.detail);
            assert!(!f.checks.last().unwrap().ok);
        }
        q.requires_code = true;
        assert_eq!(
            check_reply(
                &q,
                &s,
                &reply(GOOD, "src/k.hpp", 6, 7),
                &Grounding {
                    trees: &t,
                    known: &KnownNames::default(),
                    facts: None,
                    catalogue: &Default::default(),
                    shown: &Default::default(),
                }
            )
            .unwrap_err()
            .reason,
            Reason::CodePresent
        );
    }

    #[test]
    fn grouped_replies_split_into_one_answer_per_question() {
        let (q, s, t, _d) = fixture();
        let item = |k: u64| {
            let mut v: serde_json::Value =
                serde_json::from_str(&reply(GOOD, "src/k.hpp", 6, 7)).unwrap();
            v["question"] = k.into();
            v
        };
        // Out of order, one missing (2), one twice (3), one out of range (9).
        let raw = serde_json::json!({"answers": [item(4), item(1), item(3), item(3), item(9)]})
            .to_string();
        let got = split_grouped_reply(&format!("Here:\n{raw}"), 4);
        assert_eq!(got.len(), 4);
        for k in [0, 3] {
            let one = got[k].as_ref().unwrap();
            let g = Grounding {
                trees: &t,
                known: &KnownNames::default(),
                facts: None,
                catalogue: &Default::default(),
                shown: &Default::default(),
            };
            assert!(check_reply(&q, &s, one, &g).is_ok());
        }
        let why = |k: usize| got[k].as_ref().unwrap_err().detail.clone();
        assert!(why(1).contains("no answer for question 2"), "{}", why(1));
        assert!(why(2).contains("2 answers for question 3"), "{}", why(2));
        // Unnumbered items take their place; a reply with no array fails every question.
        let plain = serde_json::json!({"answers": [serde_json::from_str::<serde_json::Value>(&reply(GOOD, "src/k.hpp", 6, 7)).unwrap()]}).to_string();
        assert!(split_grouped_reply(&plain, 1)[0].is_ok());
        let none = split_grouped_reply("{\"answer\": \"x\"}", 3);
        assert!(none
            .iter()
            .all(|r| r.as_ref().is_err_and(|f| f.reason == Reason::Json)));
        assert!(split_grouped_reply("cut {\"answers\": [", 2)
            .iter()
            .all(|r| r.is_err()));
    }
}
