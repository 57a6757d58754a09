//! Validating an entries file on its own (`rocqa validate FILE.jsonl`): entries edited by
//! a reviewer, produced elsewhere, or from an older run, checked against the pinned
//! trees as they are now.

use std::collections::BTreeMap;

use crate::model::{Check, Entry, Reject, TokenUsage};
use crate::slice::{lines_hash, Trees};

use super::dedup::{entry_text, signature, DedupIndex, Signature};
use super::grounding::{foreign_quote, unknown_identifiers, KnownNames};
use super::{refusal_in, MAX_ANSWER_CHARS, MIN_ANSWER_CHARS};

/// Outcome of validating a file.
#[derive(Debug, Default)]
pub struct FileOutcome {
    /// Entries that pass, in input order.
    pub kept: Vec<Entry>,
    /// The others, with reasons.
    pub rejects: Vec<Reject>,
}

/// Checks one entry's own content against the trees; the near-duplicate and
/// decontamination passes need the whole file and come after.
pub fn check_entry(
    e: &Entry,
    trees: &Trees,
    known: &KnownNames,
) -> Result<Vec<Check>, (String, String, Vec<Check>)> {
    let mut checks = Vec::new();
    let fail = |checks: &mut Vec<Check>, name: &str, detail: String| {
        checks.push(Check {
            name: name.into(),
            ok: false,
            detail: detail.clone(),
        });
        (name.to_string(), detail, std::mem::take(checks))
    };
    let n = e.answer.trim().chars().count();
    if !(MIN_ANSWER_CHARS..=MAX_ANSWER_CHARS).contains(&n) {
        return Err(fail(
            &mut checks,
            "answer-length",
            format!("{n} characters, outside {MIN_ANSWER_CHARS}..={MAX_ANSWER_CHARS}"),
        ));
    }
    if let Some(r) = refusal_in(&e.answer) {
        return Err(fail(
            &mut checks,
            "refusal",
            format!("the answer declines: \"{r}\""),
        ));
    }
    if e.category == "implementation"
        && e.code
            .as_deref()
            .is_none_or(|c| !c.contains("__global__") && !c.contains("__device__"))
    {
        return Err(fail(
            &mut checks,
            "code-present",
            "an implementation entry without HIP code".into(),
        ));
    }
    checks.push(Check {
        name: "answer".into(),
        ok: true,
        detail: format!("{n} characters"),
    });
    // The code shown, re-read from the tree: each piece must still hash the same.
    let mut shown = String::new();
    for p in &e.slice {
        let lines = trees.lines(&p.lib, &p.file).map_err(|err| {
            let mut c = checks.clone();
            fail(&mut c, "slice-file-missing", format!("{}: {err}", p.file))
        })?;
        if lines_hash(&lines, p.start, p.end) != p.sha256 {
            return Err(fail(
                &mut checks,
                "slice-changed",
                format!("{}:{}-{} no longer reads as it did", p.file, p.start, p.end),
            ));
        }
        for l in p.start..=p.end.min(lines.len() as u32) {
            shown.push_str(&lines[l as usize - 1]);
            shown.push('\n');
        }
    }
    if e.citations.is_empty() {
        return Err(fail(
            &mut checks,
            "citations-present",
            "no citations".into(),
        ));
    }
    for c in &e.citations {
        let lines = match trees.lines(&c.lib, &c.file) {
            Ok(l) => l,
            Err(_) => {
                return Err(fail(
                    &mut checks,
                    "citation-file-missing",
                    format!("{}: not in the {} tree", c.file, c.lib),
                ))
            }
        };
        if c.start < 1 || c.end < c.start || c.end as usize > lines.len() {
            return Err(fail(
                &mut checks,
                "citation-out-of-range",
                format!(
                    "{}:{}-{}: the file has {} lines",
                    c.file,
                    c.start,
                    c.end,
                    lines.len()
                ),
            ));
        }
        if lines_hash(&lines, c.start, c.end) != c.sha256 {
            return Err(fail(
                &mut checks,
                "citation-text-changed",
                format!(
                    "{}:{}-{}: the cited text's hash does not match",
                    c.file, c.start, c.end
                ),
            ));
        }
        let inside = e
            .slice
            .iter()
            .any(|p| p.lib == c.lib && p.file == c.file && p.start <= c.start && c.end <= p.end);
        if !inside {
            return Err(fail(
                &mut checks,
                "citation-outside-slice",
                format!("{}:{}-{} is not in the code shown", c.file, c.start, c.end),
            ));
        }
    }
    checks.push(Check {
        name: "citations-resolve".into(),
        ok: true,
        detail: format!("{} citations match the pinned tree", e.citations.len()),
    });
    let unknown = unknown_identifiers(&e.answer, &shown, known);
    if !unknown.is_empty() {
        return Err(fail(
            &mut checks,
            "unknown-identifiers",
            format!("not in the index, the slice or HIP: {}", unknown.join(", ")),
        ));
    }
    checks.push(Check {
        name: "identifiers-exist".into(),
        ok: true,
        detail: String::new(),
    });
    if let Some(q) = foreign_quote(&e.answer, &shown) {
        return Err(fail(
            &mut checks,
            "quote-not-in-slice",
            format!("quoted as library code but not in the slice: {q}"),
        ));
    }
    checks.push(Check {
        name: "quotes-from-slice".into(),
        ok: true,
        detail: String::new(),
    });
    Ok(checks)
}

/// Validates a whole file: per-entry checks, then near-duplicates among the file's
/// entries and against `earlier` ones (the best-grounded of a group is kept: most
/// citations, then id), then decontamination against held-out evaluation texts.
pub fn validate_entries(
    entries: Vec<Entry>,
    earlier: &[Entry],
    trees: &Trees,
    known: &KnownNames,
    compiler: &super::compile::Compiler,
    eval: &[String],
    threshold: f64,
) -> FileOutcome {
    let mut out = FileOutcome::default();
    // Every snippet in one call: many per translation unit, in parallel.
    let snippets: Vec<super::compile::Snippet> = entries
        .iter()
        .filter_map(|e| {
            let code = e.code.as_ref().filter(|c| !c.trim().is_empty())?;
            Some(super::compile::Snippet {
                id: e.id.clone(),
                code: code.clone(),
            })
        })
        .collect();
    let compiled: std::collections::HashMap<String, super::compile::CompileOutcome> = compiler
        .check(&snippets)
        .into_iter()
        .map(|o| (o.id.clone(), o))
        .collect();
    let mut passed: Vec<(Entry, Vec<Check>)> = Vec::new();
    for e in entries {
        match check_entry(&e, trees, known) {
            Ok(mut c) => match compiled.get(&e.id) {
                Some(o) if !o.ok => {
                    c.push(Check {
                        name: "compiles".into(),
                        ok: false,
                        detail: o.diagnostics.clone(),
                    });
                    let detail: String = o.diagnostics.chars().take(1500).collect();
                    out.rejects
                        .push(to_reject(&e, &format!("compile-{}", o.stage), &detail, c));
                }
                Some(_) => {
                    c.push(Check {
                        name: "compiles".into(),
                        ok: true,
                        detail: compiler.toolchain().describe(),
                    });
                    passed.push((e, c));
                }
                None => passed.push((e, c)),
            },
            Err((reason, detail, checks)) => {
                out.rejects.push(to_reject(&e, &reason, &detail, checks))
            }
        }
    }
    let eval_sigs: Vec<Signature> = eval.iter().map(|t| signature(t)).collect();
    let mut order: Vec<usize> = (0..passed.len()).collect();
    order.sort_by(|&a, &b| {
        passed[b]
            .0
            .citations
            .len()
            .cmp(&passed[a].0.citations.len())
            .then(passed[a].0.id.cmp(&passed[b].0.id))
    });
    // Entries kept elsewhere (other shards, earlier releases) are kept already.
    let mut seen = DedupIndex::default();
    for e in earlier {
        seen.insert(
            &e.id,
            signature(&entry_text(&e.question, &e.answer, e.code.as_deref())),
        );
    }
    let mut keep: BTreeMap<usize, Vec<Check>> = BTreeMap::new();
    for k in order {
        let (e, checks) = &passed[k];
        let sig = signature(&entry_text(&e.question, &e.answer, e.code.as_deref()));
        if let Some((other, sim)) = seen.nearest(&sig, threshold) {
            out.rejects.push(to_reject(
                e,
                "near-duplicate",
                &format!("near-duplicate of {other} (similarity {sim:.2})"),
                checks.clone(),
            ));
            continue;
        }
        if let Some(sim) = eval_sigs
            .iter()
            .map(|s| super::dedup::similarity(&sig, s))
            .reduce(f64::max)
            .filter(|s| *s >= threshold)
        {
            out.rejects.push(to_reject(
                e,
                "contaminated",
                &format!("too close to a held-out evaluation item (similarity {sim:.2})"),
                checks.clone(),
            ));
            continue;
        }
        seen.insert(&e.id, sig);
        keep.insert(k, checks.clone());
    }
    for (k, (mut e, _)) in passed.into_iter().enumerate() {
        if let Some(checks) = keep.remove(&k) {
            e.validation = checks;
            out.kept.push(e);
        }
    }
    out
}

fn to_reject(e: &Entry, reason: &str, detail: &str, validation: Vec<Check>) -> Reject {
    Reject {
        schema_version: e.schema_version,
        id: e.id.clone(),
        lib: e.lib.clone(),
        version: e.version.clone(),
        family: e.family.clone(),
        api: e.api.clone(),
        category: e.category.clone(),
        template_id: e.template_id.clone(),
        stage: "validate".into(),
        reason: reason.into(),
        detail: detail.into(),
        raw: Some(e.answer.chars().take(2000).collect()),
        validation,
        model: e.model.clone(),
        usage: TokenUsage {
            prompt_tokens: e.usage.prompt_tokens,
            completion_tokens: e.usage.completion_tokens,
        },
    }
}

/// The text of one held-out evaluation record: `question`/`answer`, Alpaca
/// `instruction`/`input`/`output`, or ShareGPT `messages`.
pub fn eval_text(v: &serde_json::Value) -> String {
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
    if let Some(msgs) = v.get("messages").and_then(|m| m.as_array()) {
        return msgs
            .iter()
            .filter_map(|m| m.get("content").and_then(|c| c.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
    }
    let qa = format!("{}\n{}\n{}", s("question"), s("answer"), s("code"));
    if qa.trim().is_empty() {
        format!("{}\n{}\n{}", s("instruction"), s("input"), s("output"))
    } else {
        qa
    }
}
