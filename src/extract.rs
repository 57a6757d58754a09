//! The extract job: graph -> slice -> question -> llm -> validate -> emit, for one library.
//!
//! This module only wires the stages together and keeps the run's bookkeeping (which
//! questions are already answered, shards, limits, the manifest); each stage's work
//! lives in its own module. Precision variants of a family share one slice and one
//! set of questions; the batched, strided-batched, `_64` and complex variants get
//! their own slice for the questions about how they differ.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use globset::GlobMatcher;
use sha2::{Digest, Sha256};

use crate::config::Scope;
use crate::emit::{percent, Coverage, EmitError, Manifest, RunOutput};
use crate::graph::CodeGraph;
use crate::llm::{ChatRequest, LlmClient, Message};
use crate::model::{
    ApiFunction, Entry, Question, Reject, Slice, SourcePin, SourceRef, TokenUsage,
    ENTRY_SCHEMA_VERSION,
};
use crate::question::{answer_schema, plan, Template};
use crate::slice::{cut, SliceLimits, Trees};
use crate::validate::check_reply;
use crate::validate::dedup::{entry_text, signature, DedupIndex};
use crate::validate::grounding::KnownNames;

/// What to extract.
pub struct ExtractPlan {
    /// Library.
    pub lib: String,
    /// Version.
    pub version: String,
    /// Only families with an API matching this glob.
    pub api_glob: Option<GlobMatcher>,
    /// Only these categories.
    pub categories: Option<Vec<String>>,
    /// At most this many questions (spread over families: first question of each
    /// family, then the second, ...).
    pub limit: Option<usize>,
    /// This machine's share: `(i, n)` keeps families whose hash mod n is i.
    pub shard: Option<(u32, u32)>,
    /// Slice budget.
    pub limits: SliceLimits,
}

/// A family's questions, with the slices they are asked over.
pub struct Planned {
    /// Slices by id.
    pub slices: BTreeMap<String, Slice>,
    /// Questions, in the order they will be asked.
    pub questions: Vec<Question>,
    /// Coverage of the in-scope families by prompts.
    pub coverage: Coverage,
}

/// The variant groups of a family and their representative APIs: the family itself
/// (`""`), then `batched`, `strided_batched`, `64` and `complex` where members exist.
pub fn variant_groups(members: &[&ApiFunction]) -> Vec<(String, ApiFunction, Vec<String>)> {
    let pref = |a: &ApiFunction| {
        let p = ["s", "d", "", "h", "c", "z"]
            .iter()
            .position(|x| *x == a.precision)
            .unwrap_or(9);
        (a.variants.len(), p, a.name.clone())
    };
    let mut groups = Vec::new();
    let all: Vec<String> = members.iter().map(|a| a.name.clone()).collect();
    if let Some(base) = members.iter().min_by_key(|a| pref(a)) {
        groups.push((String::new(), (*base).clone(), all));
    }
    let pick = |name: &str, f: &dyn Fn(&ApiFunction) -> bool| {
        let v: Vec<&&ApiFunction> = members.iter().filter(|a| f(a)).collect();
        v.iter().min_by_key(|a| pref(a)).map(|rep| {
            (
                name.to_string(),
                (**rep).clone(),
                v.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
            )
        })
    };
    let only = |a: &ApiFunction, v: &str| a.variants == [v.to_string()];
    groups.extend(pick("batched", &|a| only(a, "batched")));
    groups.extend(pick("strided_batched", &|a| only(a, "strided_batched")));
    groups.extend(pick("64", &|a| only(a, "64")));
    groups.extend(pick("complex", &|a| {
        a.variants.is_empty() && matches!(a.precision.as_str(), "c" | "z")
    }));
    groups
}

fn shard_of(family: &str, n: u32) -> u32 {
    let h = Sha256::digest(family.as_bytes());
    (u32::from_be_bytes([h[0], h[1], h[2], h[3]])) % n
}

/// Cuts the slices and plans every question.
pub fn plan_run(
    p: &ExtractPlan,
    graph: &CodeGraph,
    indexes: &[&crate::model::LibraryIndex],
    scope: &Scope,
    trees: &Trees,
    templates: &[Template],
) -> Result<Planned, crate::slice::SliceError> {
    let mut families: BTreeMap<&str, Vec<&ApiFunction>> = BTreeMap::new();
    for a in graph.api() {
        families.entry(a.family.as_str()).or_default().push(a);
    }
    let in_scope: Vec<&str> = families
        .keys()
        .copied()
        .filter(|f| scope.family_in(f))
        .collect();
    let mut coverage = Coverage {
        in_scope: in_scope.len(),
        ..Default::default()
    };
    let templates: Vec<&Template> = templates
        .iter()
        .filter(|t| {
            p.categories
                .as_ref()
                .is_none_or(|c| c.contains(&t.category))
        })
        .collect();
    let owned: Vec<Template> = templates.iter().map(|t| (*t).clone()).collect();
    let mut slices = BTreeMap::new();
    let mut per_family: Vec<Vec<Question>> = Vec::new();
    for fam in &in_scope {
        let members = &families[fam];
        if let Some(g) = &p.api_glob {
            if !members.iter().any(|a| g.is_match(&a.name)) {
                continue;
            }
        }
        if let Some((i, n)) = p.shard {
            if shard_of(fam, n) != i {
                continue;
            }
        }
        let mut qs = Vec::new();
        for (variant, rep, apis) in variant_groups(members) {
            let g = graph.interface(&rep);
            if g.nodes.len() < 2 {
                continue;
            }
            let s = cut(&g, &apis, &variant, indexes, trees, p.limits)?;
            let planned = plan(&owned, &s);
            if !planned.is_empty() {
                qs.extend(planned);
                slices.insert(s.id.clone(), s);
            }
        }
        if qs.is_empty() {
            coverage.without_prompts.insert(
                fam.to_string(),
                "no template applies (no definition reached, or no feature a template needs)"
                    .into(),
            );
        } else {
            coverage.with_prompts += 1;
        }
        per_family.push(qs);
    }
    // Round-robin over families so a limited run still spreads out.
    let mut questions = Vec::new();
    let longest = per_family.iter().map(|q| q.len()).max().unwrap_or(0);
    for k in 0..longest {
        for qs in &per_family {
            if let Some(q) = qs.get(k) {
                questions.push(q.clone());
            }
        }
    }
    if let Some(n) = p.limit {
        questions.truncate(n);
    }
    coverage.prompts_percent = percent(coverage.with_prompts, coverage.in_scope);
    Ok(Planned {
        slices,
        questions,
        coverage,
    })
}

/// Fact entries each in-scope API should have at least.
pub const MIN_FACT_ENTRIES: usize = 3;

/// The in-scope APIs of a run (families kept by scope, `--api` and `--shard`), each
/// family's members in representative order (real single precision first).
pub fn run_apis<'g>(p: &ExtractPlan, graph: &CodeGraph<'g>, scope: &Scope) -> Vec<&'g ApiFunction> {
    let mut families: BTreeMap<&str, Vec<&ApiFunction>> = BTreeMap::new();
    for a in graph.api() {
        families.entry(a.family.as_str()).or_default().push(a);
    }
    let mut out = Vec::new();
    for (fam, mut members) in families {
        if !scope.family_in(fam) {
            continue;
        }
        if let Some(g) = &p.api_glob {
            if !members.iter().any(|a| g.is_match(&a.name)) {
                continue;
            }
        }
        if let Some((i, n)) = p.shard {
            if shard_of(fam, n) != i {
                continue;
            }
        }
        let pref = |a: &ApiFunction| {
            let k = ["s", "d", "", "h", "c", "z"]
                .iter()
                .position(|x| *x == a.precision)
                .unwrap_or(9);
            (a.variants.len(), k, a.name.clone())
        };
        members.sort_by_key(|a| pref(a));
        out.extend(members);
    }
    out
}

/// Renders, validates and writes the fact entries of a run: every entry passes the
/// same checks as LLM entries ([`crate::validate::file::check_entry`]) and is not a
/// near-duplicate of one kept; the report names every in-scope API left with fewer
/// than [`MIN_FACT_ENTRIES`].
#[allow(clippy::too_many_arguments)]
pub fn write_fact_entries(
    apis: &[&ApiFunction],
    graph: &CodeGraph,
    reader: &crate::facts::FactReader,
    pin: &SourcePin,
    pins: &crate::source::Pins,
    grounding: &crate::validate::Grounding,
    threshold: f64,
    out: &mut RunOutput,
) -> Result<crate::model::FactEntriesReport, EmitError> {
    let mut report = crate::model::FactEntriesReport {
        apis: apis.len(),
        ..Default::default()
    };
    let mut all = Vec::with_capacity(apis.len());
    for a in apis {
        let f = reader.read(&graph.interface(a));
        report.facts += f.facts.len();
        all.push(f);
    }
    let source = SourceRef {
        origin: pin.origin.clone(),
        sha256: pin.sha256.clone(),
    };
    let rendered =
        crate::facts::qa::render(&all, grounding.trees, &source, &generator()).map_err(|e| {
            EmitError::Io {
                action: "read a file the facts cite",
                path: out.dir().display().to_string(),
                source: std::io::Error::other(e.to_string()),
            }
        })?;
    report.rendered = rendered.len();
    let mut seen = DedupIndex::default();
    for e in crate::emit::read_jsonl::<Entry>(&out.dir().join("entries.jsonl"))? {
        seen.insert(
            &e.id,
            signature(&entry_text(&e.question, &e.answer, e.code.as_deref())),
        );
    }
    let mut per_api: BTreeMap<&str, usize> = BTreeMap::new();
    for mut e in rendered {
        if out.is_done(&e.id) {
            report.kept_before += 1;
            for a in &e.apis {
                if let Some(k) = apis.iter().find(|x| x.name == *a) {
                    *per_api.entry(k.name.as_str()).or_default() += 1;
                }
            }
            continue;
        }
        match crate::validate::file::check_entry(&e, grounding, pins) {
            Ok(checks) => e.validation = checks,
            Err(f) => {
                tracing::debug!(id = %e.id, reason = %f.reason, detail = %f.detail, "Fact entry refused.");
                *report.rejected.entry(f.reason.to_string()).or_default() += 1;
                continue;
            }
        }
        let sig = signature(&entry_text(&e.question, &e.answer, e.code.as_deref()));
        if seen.nearest(&sig, threshold).is_some() {
            report.near_duplicates += 1;
            continue;
        }
        seen.insert(&e.id, sig);
        for a in &e.apis {
            if let Some(k) = apis.iter().find(|x| x.name == *a) {
                *per_api.entry(k.name.as_str()).or_default() += 1;
            }
        }
        out.write_entry(&e)?;
        report.written += 1;
    }
    for (a, f) in apis.iter().zip(&all) {
        let n = per_api.get(a.name.as_str()).copied().unwrap_or(0);
        if n < MIN_FACT_ENTRIES {
            let kinds: BTreeSet<&str> = f.facts.iter().map(|x| x.kind.label()).collect();
            let why = if f.facts.is_empty() {
                "no fact read: the call graph reaches no definition with launches, checks or device code".to_string()
            } else {
                format!(
                    "{} facts ({}), which answer only {n} of the templates",
                    f.facts.len(),
                    kinds.into_iter().collect::<Vec<_>>().join(", ")
                )
            };
            report
                .below_minimum
                .insert(a.name.clone(), format!("{n} fact entries: {why}"));
        }
    }
    Ok(report)
}

/// SHA-256 of the messages as sent.
pub fn prompt_hash(q: &Question) -> String {
    let mut h = Sha256::new();
    for (role, content) in &q.messages {
        h.update(role.as_bytes());
        h.update([0]);
        h.update(content.as_bytes());
        h.update([0]);
    }
    format!("{:x}", h.finalize())
}

/// Fills the manifest's planning figures.
pub fn manifest_for(p: &ExtractPlan, planned: &Planned) -> Manifest {
    let mut m = Manifest {
        schema_version: 1,
        lib: p.lib.clone(),
        version: p.version.clone(),
        generator: generator(),
        coverage: planned.coverage.clone(),
        ..Default::default()
    };
    if let Some((i, n)) = p.shard {
        m.shards.push(format!("{i}/{n}"));
    }
    for q in &planned.questions {
        *m.prompts_by_category.entry(q.category.clone()).or_default() += 1;
        let fam = planned
            .slices
            .get(&q.slice_id)
            .map(|s| s.family.clone())
            .unwrap_or_default();
        *m.prompts_by_family.entry(fam).or_default() += 1;
        m.planned_prompt_tokens += q.prompt_tokens;
    }
    m.toolchain
        .insert("rocqa".into(), env!("CARGO_PKG_VERSION").into());
    m.toolchain.insert(
        "tokenizer".into(),
        "tiktoken cl100k_base (tiktoken-rs)".into(),
    );
    m.toolchain
        .insert("parser".into(), "tree-sitter-cpp 0.23".into());
    m
}

/// `rocqa <version>`.
pub fn generator() -> String {
    format!("rocqa {}", env!("CARGO_PKG_VERSION"))
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Questions planned.
    pub planned: usize,
    /// Already answered in an earlier run (skipped).
    pub skipped: usize,
    /// Entries written in this run.
    pub entries: usize,
    /// Rejects written in this run.
    pub rejects: usize,
}

/// What answering needs besides the plan and the output folder.
pub struct RunContext<'a> {
    /// The endpoint.
    pub client: &'a LlmClient,
    /// Model name (for records, when the server does not say).
    pub model: &'a str,
    /// Parameters that change answers.
    pub params: &'a serde_json::Value,
    /// The pinned source of the library.
    pub pin: &'a SourcePin,
    /// Trees, to hash cited lines.
    pub trees: &'a Trees,
    /// Names the indexes define, for grounding.
    pub known: &'a KnownNames,
    /// Similarity from which two entries are duplicates.
    pub dedup_threshold: f64,
    /// The ROCm compiler, for answers that carry code.
    pub compiler: &'a crate::validate::compile::Compiler,
}

/// Asks the planned questions that are not answered yet, validating and writing each
/// answer as it arrives. `progress(done, total)` is called after each.
pub fn run(
    planned: &Planned,
    out: &mut RunOutput,
    cx: &RunContext,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<RunSummary, EmitError> {
    let (client, model, params, pin, trees, known) =
        (cx.client, cx.model, cx.params, cx.pin, cx.trees, cx.known);
    // Entries kept by earlier runs take part in duplicate detection.
    let mut seen = DedupIndex::default();
    for e in crate::emit::read_jsonl::<Entry>(&out.dir().join("entries.jsonl"))? {
        seen.insert(
            &e.id,
            signature(&entry_text(&e.question, &e.answer, e.code.as_deref())),
        );
    }
    let todo: Vec<&Question> = planned
        .questions
        .iter()
        .filter(|q| !out.is_done(&q.id))
        .collect();
    let mut summary = RunSummary {
        planned: planned.questions.len(),
        skipped: planned.questions.len() - todo.len(),
        ..Default::default()
    };
    let reqs: Vec<ChatRequest> = todo
        .iter()
        .map(|q| ChatRequest {
            messages: q
                .messages
                .iter()
                .map(|(r, c)| Message {
                    role: r.clone(),
                    content: c.clone(),
                })
                .collect(),
            schema: Some(answer_schema()),
            max_tokens: None,
        })
        .collect();
    let total = todo.len();
    let mut done = 0;
    let mut failure: Option<EmitError> = None;
    client.run_batch(&reqs, |i, result| {
        if failure.is_some() {
            return;
        }
        let q = todo[i];
        let s = &planned.slices[&q.slice_id];
        let written = match result {
            Ok(resp) => {
                let usage = TokenUsage {
                    prompt_tokens: resp.usage.prompt_tokens,
                    completion_tokens: resp.usage.completion_tokens,
                };
                // Code in the answer must compile for the GPU before the entry is kept.
                let checked = check_reply(q, s, &resp.content, trees, known).and_then(|mut v| {
                    if let Some(code) = v.code.as_deref() {
                        match crate::validate::compile_check(cx.compiler, &q.id, code) {
                            Ok(c) => v.checks.push(c),
                            Err((reason, detail)) => {
                                return Err(crate::validate::Failed::after(
                                    std::mem::take(&mut v.checks),
                                    "compiles",
                                    reason,
                                    detail,
                                ));
                            }
                        }
                    }
                    Ok(v)
                });
                match checked {
                    Ok(v) => match seen.nearest(
                        &signature(&entry_text(&q.text, &v.answer, v.code.as_deref())),
                        cx.dedup_threshold,
                    ) {
                        Some((other, sim)) => {
                            summary.rejects += 1;
                            let detail = format!("near-duplicate of {other} (similarity {sim:.2})");
                            out.write_reject(&reject(
                                q,
                                s,
                                "validate",
                                "near-duplicate",
                                &detail,
                                Some(&resp.content),
                                v.checks,
                                model,
                                usage,
                            ))
                        }
                        None => {
                            seen.insert(
                                &q.id,
                                signature(&entry_text(&q.text, &v.answer, v.code.as_deref())),
                            );
                            summary.entries += 1;
                            out.write_entry(&Entry {
                                schema_version: ENTRY_SCHEMA_VERSION,
                                id: q.id.clone(),
                                lib: s.lib.clone(),
                                version: s.version.clone(),
                                source: SourceRef {
                                    origin: pin.origin.clone(),
                                    sha256: pin.sha256.clone(),
                                },
                                family: s.family.clone(),
                                api: s.api.clone(),
                                apis: s.apis.clone(),
                                variant: s.variant.clone(),
                                call_path: s.call_path.clone(),
                                category: q.category.clone(),
                                template_id: q.template_id.clone(),
                                template_version: q.template_version,
                                difficulty: q.difficulty.clone(),
                                question: q.text.clone(),
                                answer: v.answer,
                                code: v.code,
                                citations: v.citations,
                                slice_id: s.id.clone(),
                                slice: crate::validate::piece_refs(s),
                                model: if resp.model.is_empty() {
                                    model.to_string()
                                } else {
                                    resp.model.clone()
                                },
                                params: params.clone(),
                                prompt_sha256: prompt_hash(q),
                                usage,
                                validation: v.checks,
                                generator: "llm".into(),
                                tool: generator(),
                            })
                        }
                    },
                    Err(f) => {
                        summary.rejects += 1;
                        out.write_reject(&reject(
                            q,
                            s,
                            "validate",
                            f.reason.as_str(),
                            &f.detail,
                            Some(&resp.content),
                            f.checks,
                            model,
                            usage,
                        ))
                    }
                }
            }
            Err(e) => {
                summary.rejects += 1;
                out.write_reject(&reject(
                    q,
                    s,
                    "llm",
                    e.kind(),
                    &e.to_string(),
                    None,
                    Vec::new(),
                    model,
                    TokenUsage::default(),
                ))
            }
        };
        if let Err(e) = written {
            failure = Some(e);
        }
        done += 1;
        progress(done, total);
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

#[allow(clippy::too_many_arguments)]
fn reject(
    q: &Question,
    s: &Slice,
    stage: &str,
    reason: &str,
    detail: &str,
    raw: Option<&str>,
    validation: Vec<crate::model::Check>,
    model: &str,
    usage: TokenUsage,
) -> Reject {
    Reject {
        schema_version: ENTRY_SCHEMA_VERSION,
        id: q.id.clone(),
        lib: s.lib.clone(),
        version: s.version.clone(),
        family: s.family.clone(),
        api: s.api.clone(),
        category: q.category.clone(),
        template_id: q.template_id.clone(),
        stage: stage.into(),
        reason: reason.into(),
        detail: detail.into(),
        raw: raw.map(|r| r.chars().take(2000).collect()),
        validation,
        model: model.into(),
        usage,
    }
}

/// Where a run writes: `out/<lib>/<version>/`, a `shard-I-of-N/` folder below it for
/// shards, `dry-run/` for dry runs.
pub fn out_dir(root: &std::path::Path, p: &ExtractPlan, dry_run: bool) -> PathBuf {
    let mut d = root.join("out").join(&p.lib).join(&p.version);
    if let Some((i, n)) = p.shard {
        d = d.join(format!("shard-{i}-of-{n}"));
    }
    if dry_run {
        d = d.join("dry-run");
    }
    d
}

/// Counts questions per category and family (for reports).
pub fn categories(planned: &Planned) -> BTreeSet<String> {
    planned
        .questions
        .iter()
        .map(|q| q.category.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(name: &str, precision: &str, variants: &[&str]) -> ApiFunction {
        ApiFunction {
            name: name.into(),
            family: "scal".into(),
            precision: precision.into(),
            variants: variants.iter().map(|v| v.to_string()).collect(),
            file: "h".into(),
            line: 1,
        }
    }

    #[test]
    fn variant_groups_pick_real_single_precision_first() {
        let all = [
            api("r_zscal", "z", &[]),
            api("r_sscal_batched", "s", &["batched"]),
            api("r_dscal", "d", &[]),
            api("r_sscal", "s", &[]),
            api("r_cscal_64", "c", &["64"]),
            api(
                "r_sscal_strided_batched_64",
                "s",
                &["strided_batched", "64"],
            ),
        ];
        let refs: Vec<&ApiFunction> = all.iter().collect();
        let g = variant_groups(&refs);
        let got: Vec<(&str, &str, usize)> = g
            .iter()
            .map(|(v, a, m)| (v.as_str(), a.name.as_str(), m.len()))
            .collect();
        assert_eq!(
            got,
            [
                ("", "r_sscal", 6),
                ("batched", "r_sscal_batched", 1),
                ("64", "r_cscal_64", 1),
                ("complex", "r_zscal", 1)
            ]
        );
    }

    #[test]
    fn shards_partition_families() {
        let fams = ["scal", "axpy", "gemm", "trsm", "getrf", "dot", "nrm2"];
        let mut seen = 0;
        for i in 0..3 {
            seen += fams.iter().filter(|f| shard_of(f, 3) == i).count();
        }
        assert_eq!(seen, fams.len());
    }
}
