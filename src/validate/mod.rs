//! The `validate` stage: no answer becomes an entry unless it passes these checks.
//!
//! Takes a question, the slice it was asked over and the model's raw reply; gives the
//! parsed answer with citations resolved and hashed against the pinned tree, or the
//! reason it is rejected: well-formed JSON, length bounds, no refusal or copy of the
//! question, code present where asked, every citation inside the code that was shown,
//! identifiers and quotes grounded ([`grounding`]). Near-duplicates are found with
//! [`dedup`] as entries are kept; [`file`](mod@file) runs the checks on a whole entries file;
//! [`compile`] compile-checks HIP snippets with the ROCm compiler.

pub mod compile;

pub mod dedup;
pub mod file;
pub mod grounding;

use std::sync::OnceLock;

use regex::Regex;
use serde::Deserialize;

use crate::model::{Check, Citation, Question, Slice};
use crate::slice::{lines_hash, Trees};
use grounding::{foreign_quote, unknown_identifiers, KnownNames};

/// Answers shorter than this say nothing.
pub const MIN_ANSWER_CHARS: usize = 40;
/// Answers longer than this ran away.
pub const MAX_ANSWER_CHARS: usize = 6000;

/// A reply that passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// Prose answer.
    pub answer: String,
    /// HIP code, when the reply has any.
    pub code: Option<String>,
    /// Citations, resolved and hashed.
    pub citations: Vec<Citation>,
    /// Every check that ran.
    pub checks: Vec<Check>,
}

/// A reply that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The first check that failed.
    pub reason: String,
    /// What it found.
    pub detail: String,
    /// Every check that ran.
    pub checks: Vec<Check>,
}

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

fn refusal() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(i('m| am) (sorry|unable)|i can(no|')t (help|answer|assist)|as an ai\b|i do not have access|cannot be determined from)")
            .expect("static regex")
    })
}

/// Compiles an answer's HIP code: a passing check naming the toolchain, or the failure
/// (`compile-<stage>`) with the compiler's diagnostics for that snippet.
pub fn compile_check(
    compiler: &compile::Compiler,
    id: &str,
    code: &str,
) -> Result<Check, (String, String)> {
    let out = compiler.check(&[compile::Snippet {
        id: id.to_string(),
        code: code.to_string(),
    }]);
    match out.into_iter().next() {
        Some(o) if o.ok => Ok(Check {
            name: "compiles".into(),
            ok: true,
            detail: format!(
                "{}{}",
                compiler.toolchain().describe(),
                if o.cached { " (cached)" } else { "" }
            ),
        }),
        Some(o) => Err((
            format!("compile-{}", o.stage),
            o.diagnostics.chars().take(1500).collect(),
        )),
        None => Err((
            "compile-limit".into(),
            "the compiler returned no result".into(),
        )),
    }
}

/// The phrase that makes an answer a refusal, if any.
pub(crate) fn refusal_in(text: &str) -> Option<String> {
    refusal().find(text).map(|m| m.as_str().to_string())
}

fn normalize(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
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

/// Runs the answer-level checks.
pub fn check_reply(
    q: &Question,
    slice: &Slice,
    raw: &str,
    trees: &Trees,
    known: &KnownNames,
) -> Result<Validated, Failed> {
    let mut checks = Vec::new();
    let fail = |checks: &mut Vec<Check>, name: &str, detail: String| {
        checks.push(Check {
            name: name.into(),
            ok: false,
            detail: detail.clone(),
        });
        Failed {
            reason: name.into(),
            detail,
            checks: std::mem::take(checks),
        }
    };
    let parsed: RawAnswer = match json_object(raw).map(serde_json::from_str::<RawAnswer>) {
        Some(Ok(a)) => a,
        Some(Err(e)) => {
            return Err(fail(
                &mut checks,
                "json",
                format!("reply is not the answer object: {e}"),
            ))
        }
        None => {
            return Err(fail(
                &mut checks,
                "json",
                "reply holds no JSON object".into(),
            ))
        }
    };
    checks.push(Check {
        name: "json".into(),
        ok: true,
        detail: "answer object parsed".into(),
    });

    let answer = parsed.answer.trim().to_string();
    let n = answer.chars().count();
    if !(MIN_ANSWER_CHARS..=MAX_ANSWER_CHARS).contains(&n) {
        return Err(fail(
            &mut checks,
            "answer-length",
            format!("{n} characters, outside {MIN_ANSWER_CHARS}..={MAX_ANSWER_CHARS}"),
        ));
    }
    checks.push(Check {
        name: "answer-length".into(),
        ok: true,
        detail: format!("{n} characters"),
    });
    if let Some(m) = refusal().find(&answer) {
        return Err(fail(
            &mut checks,
            "refusal",
            format!("the answer declines: \"{}\"", m.as_str()),
        ));
    }
    let (na, nq) = (normalize(&answer), normalize(&q.text));
    if na == nq || (nq.len() > 30 && na.contains(&nq)) {
        return Err(fail(
            &mut checks,
            "copies-question",
            "the answer repeats the question".into(),
        ));
    }
    checks.push(Check {
        name: "not-refusal-or-copy".into(),
        ok: true,
        detail: String::new(),
    });

    let code = parsed.code.trim().to_string();
    if q.requires_code {
        let looks_hip = ["__global__", "hipLaunchKernelGGL", "<<<", "__device__"]
            .iter()
            .any(|k| code.contains(k));
        if !looks_hip {
            return Err(fail(
                &mut checks,
                "code-present",
                "the question asks for HIP code and the reply has none".into(),
            ));
        }
        checks.push(Check {
            name: "code-present".into(),
            ok: true,
            detail: format!("{} lines of code", code.lines().count()),
        });
    }

    if parsed.citations.is_empty() {
        return Err(fail(
            &mut checks,
            "citations-present",
            "no citations: every claim must point at the slice".into(),
        ));
    }
    let mut citations = Vec::new();
    for c in &parsed.citations {
        match resolve(c, slice, trees) {
            Ok(cit) => citations.push(cit),
            Err(why) => {
                return Err(fail(
                    &mut checks,
                    "citations-resolve",
                    format!("{}:{}-{}: {why}", c.file, c.start, c.end),
                ))
            }
        }
    }
    checks.push(Check {
        name: "citations-resolve".into(),
        ok: true,
        detail: format!(
            "{} citations inside the slice, hashed at the pinned version",
            citations.len()
        ),
    });
    let shown: String = slice.pieces.iter().map(|p| p.text.as_str()).collect();
    let unknown = unknown_identifiers(&answer, &shown, known);
    if !unknown.is_empty() {
        let detail = format!("not in the index, the slice or HIP: {}", unknown.join(", "));
        return Err(fail(&mut checks, "unknown-identifiers", detail));
    }
    checks.push(Check {
        name: "identifiers-exist".into(),
        ok: true,
        detail: String::new(),
    });
    if let Some(q) = foreign_quote(&answer, &shown) {
        let detail = format!("quoted as library code but not in the slice: {q}");
        return Err(fail(&mut checks, "quote-not-in-slice", detail));
    }
    checks.push(Check {
        name: "quotes-from-slice".into(),
        ok: true,
        detail: String::new(),
    });
    Ok(Validated {
        answer,
        code: (!code.is_empty()).then_some(code),
        citations,
        checks,
    })
}

/// A citation must name a file of the slice (by path, or by a path suffix that only one
/// slice file has) and lie inside the lines shown from it.
fn resolve(c: &RawCitation, slice: &Slice, trees: &Trees) -> Result<Citation, String> {
    if c.start < 1 || c.end < c.start {
        return Err("not a line range".into());
    }
    let want = c.file.trim().trim_start_matches("./");
    let exact: Vec<_> = slice.pieces.iter().filter(|p| p.file == want).collect();
    let matching = if exact.is_empty() {
        let by_suffix: Vec<_> = slice
            .pieces
            .iter()
            .filter(|p| {
                !want.is_empty() && (p.file.ends_with(&format!("/{want}")) || p.file == want)
            })
            .collect();
        let files: std::collections::BTreeSet<&str> =
            by_suffix.iter().map(|p| p.file.as_str()).collect();
        if files.len() > 1 {
            return Err(format!(
                "ambiguous file name: matches {}",
                files.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        by_suffix
    } else {
        exact
    };
    if matching.is_empty() {
        return Err("file not in the slice".into());
    }
    let (s, e) = (c.start as u32, c.end as u32);
    let Some(p) = matching.iter().find(|p| p.start <= s && e <= p.end) else {
        let shown: Vec<String> = matching
            .iter()
            .map(|p| format!("{}-{}", p.start, p.end))
            .collect();
        return Err(format!(
            "lines outside what the slice shows of that file ({})",
            shown.join(", ")
        ));
    };
    let lines = trees.lines(&p.lib, &p.file).map_err(|e| e.to_string())?;
    Ok(Citation {
        lib: p.lib.clone(),
        file: p.file.clone(),
        start: s,
        end: e,
        sha256: lines_hash(&lines, s, e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PieceRole, SliceFeatures, SlicePiece};

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
                sha256: String::new(),
                depth: 2,
                tokens: 10,
                text: String::new(),
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
        };
        (q, slice, trees, dir)
    }

    const GOOD: &str = "The kernel scales each element of x by alpha, one element per thread.";

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
            &t,
            &KnownNames::default(),
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
            &t,
            &KnownNames::default()
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
            (reply(GOOD, "src/other.hpp", 6, 7), "citations-resolve"),
            (reply(GOOD, "src/k.hpp", 2, 7), "citations-resolve"),
            (reply(GOOD, "src/k.hpp", 9, 7), "citations-resolve"),
            (
                serde_json::json!({"answer": GOOD, "code": "", "citations": []}).to_string(),
                "citations-present",
            ),
        ];
        for (raw, reason) in cases {
            let f = check_reply(&q, &s, &raw, &t, &KnownNames::default()).unwrap_err();
            assert_eq!(f.reason, reason, "{raw}: {}", f.detail);
            assert!(!f.checks.last().unwrap().ok);
        }
        q.requires_code = true;
        assert_eq!(
            check_reply(
                &q,
                &s,
                &reply(GOOD, "src/k.hpp", 6, 7),
                &t,
                &KnownNames::default()
            )
            .unwrap_err()
            .reason,
            "code-present"
        );
    }
}
