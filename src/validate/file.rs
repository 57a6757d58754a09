//! Validating an entries file on its own (`rocqa validate FILE.jsonl`): entries edited by
//! a reviewer, produced elsewhere, or from an older run, checked against the pinned
//! trees as they are now, with the same checks `extract` runs ([`super::checks`]).
//!
//! Each line is judged alone: a line that is not UTF-8, not JSON, or breaks the entry
//! schema becomes a reject naming its line, and the other lines are validated.

use std::collections::BTreeMap;
use std::path::Path;

use crate::emit::{read_existing, schema_violations, EmitError};
use crate::model::{Check, Entry, FactCheckCount, Reject, TokenUsage};
use crate::source::Pins;

use super::checks::{run_checks, Candidate, ClaimedCitation, Failed, Grounding, Reason};
use super::compile::{CompileOutcome, Compiler, Snippet};
use super::dedup::{DedupIndex, EntrySignature, EvalSet, Overlap};

/// An entries file read line by line.
#[derive(Debug, Default)]
pub struct EntriesFile {
    /// Entries that parse and fit the schema, with their line numbers.
    pub entries: Vec<(usize, Entry)>,
    /// The lines that do not, as rejects naming the line.
    pub rejects: Vec<Reject>,
}

/// Reads an entries file. A missing or unreadable file is an error; a bad line is a
/// reject.
pub fn read_entries(path: &Path) -> Result<EntriesFile, EmitError> {
    let bytes = read_existing(path)?.ok_or_else(|| EmitError::Io {
        action: "read",
        path: path.display().to_string(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    })?;
    let mut out = EntriesFile::default();
    for (k, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let n = k + 1;
        if raw.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse_line(raw) {
            Ok(e) => out.entries.push((n, e)),
            Err((reason, detail, v)) => out.rejects.push(line_reject(
                n,
                v.as_ref(),
                reason,
                &format!("line {n}: {detail}"),
                raw,
            )),
        }
    }
    Ok(out)
}

type LineError = (Reason, String, Option<serde_json::Value>);

fn parse_line(raw: &[u8]) -> Result<Entry, LineError> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        (
            Reason::Unreadable,
            format!("not UTF-8 text ({e}); re-encode the line as UTF-8"),
            None,
        )
    })?;
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| (Reason::Unreadable, format!("not JSON ({e})"), None))?;
    let broken = schema_violations(&v);
    if !broken.is_empty() {
        return Err((
            Reason::Schema,
            format!("breaks src/emit/entry.schema.json: {}", broken.join("; ")),
            Some(v),
        ));
    }
    serde_json::from_value(v.clone())
        .map_err(|e| (Reason::Unreadable, format!("not an entry ({e})"), Some(v)))
}

/// A reject for a line that is no entry, with what can be read of it.
fn line_reject(
    n: usize,
    v: Option<&serde_json::Value>,
    reason: Reason,
    detail: &str,
    raw: &[u8],
) -> Reject {
    let s = |k: &str| {
        v.and_then(|v| v.get(k))
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_string()
    };
    let id = Some(s("id"))
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| format!("line-{n}"));
    Reject {
        schema_version: crate::model::ENTRY_SCHEMA_VERSION,
        id,
        lib: s("lib"),
        version: s("version"),
        family: s("family"),
        api: s("api"),
        category: s("category"),
        template_id: s("template_id"),
        stage: "validate".into(),
        reason: reason.as_str().into(),
        detail: detail.into(),
        raw: Some(String::from_utf8_lossy(raw).chars().take(2000).collect()),
        validation: vec![Check {
            name: reason.as_str().into(),
            ok: false,
            detail: detail.into(),
        }],
        model: s("model"),
        usage: TokenUsage::default(),
    }
}

/// Outcome of validating a file.
#[derive(Debug, Default)]
pub struct FileOutcome {
    /// Entries that pass, in input order.
    pub kept: Vec<Entry>,
    /// The others, with reasons.
    pub rejects: Vec<Reject>,
    /// Per evaluation set: `(name, items, entries overlapping by question, by answer)`.
    pub contamination: Vec<(String, usize, usize, usize)>,
    /// Claims of the entries compared with the facts of their APIs.
    pub fact_check: FactCheckCount,
}

/// The entry's source must be the pin of its library version.
pub fn check_pin(e: &Entry, pins: &Pins) -> Result<(), String> {
    let Some(pin) = pins.get(&e.lib, &e.version) else {
        return Err(format!(
            "{} {} has no pin in rocm_sources/sources.toml",
            e.lib, e.version
        ));
    };
    if pin.sha256 != e.source.sha256 || pin.origin != e.source.origin {
        return Err(format!(
            "source sha256 {} is not the pinned {} {} ({})",
            e.source.sha256, e.lib, e.version, pin.sha256
        ));
    }
    Ok(())
}

/// Runs the shared checks on one entry's own content; the compile, near-duplicate and
/// decontamination passes need the whole file and come after. Gives the checks and
/// the claims compared with the facts.
pub fn check_entry(
    e: &Entry,
    g: &Grounding,
    pins: &Pins,
) -> Result<(Vec<Check>, FactCheckCount), Failed> {
    check_pin(e, pins).map_err(|d| Failed::at_start(Reason::SourcePin, d))?;
    if let Some(d) = super::provenance::entry_defect(e, g.catalogue) {
        return Err(Failed::at_start(Reason::Provenance, d));
    }
    let citations: Vec<ClaimedCitation> = e.citations.iter().map(ClaimedCitation::from).collect();
    let candidate = Candidate {
        lib: &e.lib,
        version: &e.version,
        question: &e.question,
        requires_code: crate::model::category_requires_code(&e.category),
        answer: &e.answer,
        code: e.code.as_deref().map(str::trim).filter(|c| !c.is_empty()),
        citations: &citations,
        slice: &e.slice,
        apis: &e.apis,
        call_path: &e.call_path,
        mutation: e.mutation.as_ref(),
    };
    let mut v = run_checks(&candidate, g)?;
    v.checks.insert(
        0,
        Check {
            name: "schema".into(),
            ok: true,
            detail: "fits src/emit/entry.schema.json; source is the pinned one".into(),
        },
    );
    Ok((v.checks, v.fact_check))
}

/// What validating a file compares against.
pub struct FileJob<'a> {
    /// Trees and names.
    pub grounding: Grounding<'a>,
    /// The pins of the library versions.
    pub pins: &'a Pins,
    /// The ROCm compiler.
    pub compiler: &'a Compiler,
    /// Entries kept elsewhere (other shards, earlier releases).
    pub earlier: &'a [Entry],
    /// Held-out evaluation sets.
    pub eval: &'a [EvalSet],
    /// Similarity from which two entries are near-duplicates.
    pub threshold: f64,
}

/// Validates a whole file: per-entry checks, the compile check of every snippet in one
/// batch, then near-duplicates among the file's entries and against `earlier` ones
/// (the best-grounded of a group is kept: most citations, then id), then
/// decontamination against each evaluation set.
pub fn validate_entries(file: EntriesFile, job: &FileJob) -> FileOutcome {
    let mut out = FileOutcome {
        rejects: file.rejects,
        ..Default::default()
    };
    let mut ids: std::collections::HashMap<String, usize> = Default::default();
    let mut checked: Vec<(Entry, Vec<Check>)> = Vec::new();
    for (line, e) in file.entries {
        // An id names one entry: refresh, export and review key on it.
        if let Some(first) = ids.get(&e.id) {
            let detail = format!(
                "id {} is line {first}'s too: each entry has an id of its own",
                e.id
            );
            let f = Failed::at_start(Reason::DuplicateId, detail);
            out.rejects
                .push(to_reject(&e, f.reason, &f.detail, f.checks));
            continue;
        }
        ids.insert(e.id.clone(), line);
        match check_entry(&e, &job.grounding, job.pins) {
            Ok((c, counted)) => {
                out.fact_check.add(counted);
                checked.push((e, c));
            }
            Err(f) => {
                out.fact_check.add(f.fact_check);
                out.rejects
                    .push(to_reject(&e, f.reason, &f.detail, f.checks));
            }
        }
    }
    // Every snippet in one call: many per translation unit, in parallel.
    let snippets: Vec<Snippet> = checked
        .iter()
        .filter_map(|(e, _)| {
            let code = e.code.as_ref().filter(|c| !c.trim().is_empty())?;
            Some(Snippet {
                id: e.id.clone(),
                code: code.trim().to_string(),
            })
        })
        .collect();
    let compiled: std::collections::HashMap<String, CompileOutcome> = job
        .compiler
        .check(&snippets)
        .into_iter()
        .map(|o| (o.id.clone(), o))
        .collect();
    let mut passed: Vec<(Entry, Vec<Check>)> = Vec::new();
    for (e, mut c) in checked {
        match compiled
            .get(&e.id)
            .map(|o| super::compile_verdict(job.compiler, o))
        {
            Some(Err((reason, detail))) => {
                let f = Failed::after(c, "compiles", reason, detail);
                out.rejects
                    .push(to_reject(&e, f.reason, &f.detail, f.checks));
            }
            Some(Ok(check)) => {
                c.push(check);
                passed.push((e, c));
            }
            None => passed.push((e, c)),
        }
    }
    let mut order: Vec<usize> = (0..passed.len()).collect();
    order.sort_by(|&a, &b| {
        passed[b]
            .0
            .citations
            .len()
            .cmp(&passed[a].0.citations.len())
            .then(passed[a].0.id.cmp(&passed[b].0.id))
    });
    let mut seen = DedupIndex::default();
    for e in job.earlier {
        seen.insert(&e.id, entry_signature(e));
    }
    let mut hits: Vec<(usize, usize)> = vec![(0, 0); job.eval.len()];
    let mut keep: BTreeMap<usize, Vec<Check>> = BTreeMap::new();
    for k in order {
        let (e, checks) = &passed[k];
        let sig = entry_signature(e);
        if let Some(near) = seen.nearest(&sig, job.threshold) {
            let f = Failed::after(
                checks.clone(),
                "near-duplicate",
                Reason::NearDuplicate,
                near.to_string(),
            );
            out.rejects
                .push(to_reject(e, f.reason, &f.detail, f.checks));
            continue;
        }
        let mut contaminated = None;
        for (set, hit) in job.eval.iter().zip(hits.iter_mut()) {
            match set.overlap(&e.question, &e.answer) {
                Some(Overlap::Question) => hit.0 += 1,
                Some(Overlap::Answer) => hit.1 += 1,
                None => continue,
            }
            contaminated.get_or_insert_with(|| {
                let side = match set.overlap(&e.question, &e.answer) {
                    Some(Overlap::Question) => "question",
                    _ => "answer",
                };
                format!(
                    "the {side} shares a {}-word sequence with an item of {}",
                    super::dedup::CONTAMINATION_NGRAM,
                    set.name
                )
            });
        }
        if let Some(detail) = contaminated {
            let f = Failed::after(
                checks.clone(),
                "decontaminated",
                Reason::Contaminated,
                detail,
            );
            out.rejects
                .push(to_reject(e, f.reason, &f.detail, f.checks));
            continue;
        }
        seen.insert(&e.id, sig);
        keep.insert(k, checks.clone());
    }
    out.contamination = job
        .eval
        .iter()
        .zip(hits)
        .map(|(s, (q, a))| (s.name.clone(), s.items, q, a))
        .collect();
    for (k, (mut e, _)) in passed.into_iter().enumerate() {
        if let Some(checks) = keep.remove(&k) {
            e.validation = checks;
            out.kept.push(e);
        }
    }
    out
}

fn entry_signature(e: &Entry) -> EntrySignature {
    super::dedup::entry_signature(&e.question, &e.answer, e.code.as_deref())
}

fn to_reject(e: &Entry, reason: Reason, detail: &str, validation: Vec<Check>) -> Reject {
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
        reason: reason.as_str().into(),
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

/// An evaluation item's question and answer: `question`/`answer`(+`code`), Alpaca
/// `instruction`+`input`/`output`, or ShareGPT `messages` (user turns / assistant turns).
pub fn eval_item(v: &serde_json::Value) -> (String, String) {
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
    if let Some(msgs) = v.get("messages").and_then(|m| m.as_array()) {
        let turns = |role: &str| {
            msgs.iter()
                .filter(|m| m.get("role").and_then(|r| r.as_str()) == Some(role))
                .filter_map(|m| m.get("content").and_then(|c| c.as_str()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        return (turns("user"), turns("assistant"));
    }
    if !s("question").is_empty() || !s("answer").is_empty() {
        return (s("question"), format!("{}\n{}", s("answer"), s("code")));
    }
    (format!("{}\n{}", s("instruction"), s("input")), s("output"))
}
