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
    ApiFunction, ApiNaming, Entry, PieceRole, Question, Reject, Slice, SourcePin, SourceRef,
    TokenUsage, ENTRY_SCHEMA_VERSION,
};
use crate::question::{answer_schema, plan, Template};
use crate::slice::{cut, CutSpec, SliceLimits, Trees};
use crate::validate::check_reply;
use crate::validate::compile::{CompileOutcome, Snippet};
use crate::validate::dedup::{entry_signature, DedupIndex, EntrySignature, SignatureMemo};
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
    /// How the library names its API (kernels named for another precision are not
    /// a question's target).
    pub naming: ApiNaming,
}

impl ExtractPlan {
    /// Does one of the family's APIs match `--api` (any shard's)? A run plans and reads
    /// the facts of every family it names, and writes those [`Self::in_shard`] keeps:
    /// what one family is asked or told may depend on the others.
    pub fn names_family(&self, members: &[&ApiFunction]) -> bool {
        self.api_glob
            .as_ref()
            .is_none_or(|g| members.iter().any(|a| g.is_match(&a.name)))
    }

    /// Does the family fall in this machine's shard?
    pub fn in_shard(&self, family: &str) -> bool {
        self.shard.is_none_or(|(i, n)| shard_of(family, n) == i)
    }
}

/// A family's questions, with the slices they are asked over.
pub struct Planned {
    /// Slices by id.
    pub slices: BTreeMap<String, Slice>,
    /// Questions, in the order they will be asked.
    pub questions: Vec<Question>,
    /// Coverage of the in-scope families by prompts.
    pub coverage: Coverage,
    /// Questions a template would ask but the slice cannot answer, and slices merged
    /// into another or nearly repeating another family's: reason -> count.
    pub not_asked: BTreeMap<String, usize>,
    /// Slices merged into an identical one.
    pub identical_slices: usize,
    /// Slices that nearly repeat (Jaccard >= 0.8 of their pieces) another family's.
    pub twin_slices: usize,
    /// Every find-the-bug question of the run's scope, `--limit` or not: answering one
    /// from its planted bug asks nothing of a model.
    pub bug_tasks: Vec<Question>,
}

/// The variant groups of a family and their representative APIs: the family itself
/// (`""`), then `batched`, `strided_batched`, `64` and `complex` where members exist.
pub fn variant_groups(members: &[&ApiFunction]) -> Vec<(String, ApiFunction, Vec<String>)> {
    let pref = |a: &ApiFunction| {
        // iamax/iamin put an `i` before the precision (`is` for rocblas_isamax).
        let prec = match a.precision.as_str() {
            "is" | "id" | "ic" | "iz" => &a.precision[1..],
            p => p,
        };
        let p = ["s", "d", "", "h", "c", "z"]
            .iter()
            .position(|x| *x == prec)
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
    // The `_ex`/`_ex3` forms (mixed precision, compute types) take their own path.
    for v in ["batched", "strided_batched", "64", "complex", "ex"] {
        groups.extend(pick(v, &|a| a.in_variant(v)));
    }
    groups
}

fn shard_of(family: &str, n: u32) -> u32 {
    let h = Sha256::digest(family.as_bytes());
    (u32::from_be_bytes([h[0], h[1], h[2], h[3]])) % n
}

/// A piece by place: library, file, first and last line.
type PieceKey = (String, String, u32, u32);

/// Pieces that make a slice what it is (declaration and entry aside, which differ
/// between any two APIs).
fn body_key(s: &Slice) -> Vec<PieceKey> {
    s.pieces
        .iter()
        .filter(|p| !matches!(p.role, PieceRole::Declaration | PieceRole::Entry))
        .map(|p| (p.lib.clone(), p.file.clone(), p.start, p.end))
        .collect()
}

fn jaccard(
    a: &BTreeSet<(String, String, u32, u32)>,
    b: &BTreeSet<(String, String, u32, u32)>,
) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// Does a kernel's own text synchronize or stage data in LDS?
fn kernel_has_sync(g: &crate::model::InterfaceGraph, k: usize, trees: &Trees) -> bool {
    let n = &g.nodes[k];
    trees.lines(&n.lib, &n.file).is_ok_and(|l| {
        (n.start_line..=n.end_line.min(l.len() as u32)).any(|i| {
            let t = &l[i as usize - 1];
            t.contains("__syncthreads") || t.contains("__shared__")
        })
    })
}

/// One line per kernel of the graph its API never launches, for kernels of its own
/// family's code: those named for another precision are left unsaid (their names tell).
/// The lines the API never runs that fall in the pieces `s` shows.
fn dead_lines_shown(
    s: &crate::model::Slice,
    dead: &crate::model::WhatRuns,
) -> Vec<(String, String, u32, u32)> {
    dead.regions
        .iter()
        .filter(|(l, f, a, b)| {
            s.pieces
                .iter()
                .any(|p| &p.lib == l && &p.file == f && *a <= p.end && *b >= p.start)
        })
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn not_run_notes(g: &crate::model::InterfaceGraph, dead: &crate::model::WhatRuns) -> Vec<String> {
    const SHOWN: usize = 8;
    dead.kernels
        .iter()
        .filter(|(_, why)| !why.contains(": named for precision"))
        .take(SHOWN)
        .map(|(&k, why)| {
            debug_assert!(why.starts_with(&g.nodes[k].name));
            why.clone()
        })
        .collect()
}

/// Cuts the slices and plans every question.
///
/// Each variant group gets a slice aimed at the kernel that does its work; a second
/// one, aimed at a kernel that synchronizes, when the work kernel does not. Slices
/// identical to an earlier one are merged into it (their APIs listed there), and a
/// family whose slice nearly repeats an earlier family's is asked only what tells
/// them apart. With a fact reader, a kernel the API never launches (every launch
/// under a condition false for it: `batch_count > 8192` where the API fixes
/// `batch_count = 1`) is never a target, and the slice says why it is left out.
pub fn plan_run(
    p: &ExtractPlan,
    graph: &CodeGraph,
    indexes: &[&crate::model::LibraryIndex],
    scope: &Scope,
    trees: &Trees,
    templates: &[Template],
    runs: Option<&crate::facts::FactReader>,
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
    let owned: Vec<Template> = templates
        .iter()
        .filter(|t| {
            p.categories
                .as_ref()
                .is_none_or(|c| c.contains(&t.category))
        })
        .cloned()
        .collect();
    let device_features = ["lds", "barriers", "atomics", "warp_intrinsics"];
    let (primary_t, device_t): (Vec<Template>, Vec<Template>) =
        owned.iter().cloned().partition(|t| {
            !t.requires
                .iter()
                .any(|r| device_features.contains(&r.as_str()))
        });
    let defs = crate::slice::definitions::Definitions::new(indexes, trees);
    // Cut every slice first: merging and twin detection look across families.
    let mut cut_slices: Vec<(usize, Slice, bool)> = Vec::new(); // (family k, slice, primary)
    let mut fams: Vec<&str> = Vec::new();
    for fam in &in_scope {
        let members = &families[fam];
        // Every shard plans every family `--api` names: which family a question
        // asked once per pattern goes to is then the same in every shard, and the
        // shards' questions add up to the unsharded run's. Other shards' questions
        // are dropped below.
        if !p.names_family(members) {
            continue;
        }
        let fk = fams.len();
        fams.push(fam);
        let mut base_graph: Option<crate::model::InterfaceGraph> = None;
        for (variant, rep, apis) in variant_groups(members) {
            let g = graph.interface(&rep);
            if g.nodes.len() < 2 {
                continue;
            }
            let dead = runs.map(|r| r.what_runs(&g)).unwrap_or_default();
            let kernels: Vec<usize> = crate::slice::target::kernels_by_work(&g)
                .into_iter()
                .filter(|&k| {
                    rep.kernel_for_other_precision(&p.naming, &g.nodes[k].name)
                        .is_none()
                        && !dead.kernels.contains_key(&k)
                })
                .collect();
            let kernels = crate::slice::target::every_arch_first(&g, &dead, kernels);
            let spec = CutSpec {
                target: kernels.first().copied(),
                base: base_graph.as_ref().filter(|_| !variant.is_empty()),
                runs: Some(&dead),
                defs: Some(&defs),
            };
            let mut s = cut(&g, &apis, &variant, spec, indexes, trees, p.limits)?;
            s.focus.not_run = not_run_notes(&g, &dead);
            s.focus.dead_lines = dead_lines_shown(&s, &dead);
            let needs_sync = variant.is_empty() && !(s.features.lds || s.features.barriers);
            cut_slices.push((fk, s, true));
            if needs_sync {
                let sync = kernels.iter().copied().skip(1).find(|&k| {
                    !crate::slice::target::is_utility_kernel(&g, k) && kernel_has_sync(&g, k, trees)
                });
                if let Some(k) = sync {
                    let spec = CutSpec {
                        target: Some(k),
                        base: None,
                        runs: Some(&dead),
                        defs: Some(&defs),
                    };
                    let mut s2 = cut(&g, &apis, &variant, spec, indexes, trees, p.limits)?;
                    s2.focus.not_run = not_run_notes(&g, &dead);
                    s2.focus.dead_lines = dead_lines_shown(&s2, &dead);
                    s2.id = format!("{}@{}", s2.id, g.nodes[k].name);
                    cut_slices.push((fk, s2, false));
                }
            }
            if variant.is_empty() {
                base_graph = Some(g);
            }
        }
    }
    let mut not_asked: BTreeMap<String, usize> = BTreeMap::new();
    // Identical slices: one slice, listing every API.
    let mut kept: Vec<(usize, Slice, bool)> = Vec::new();
    let mut by_body: BTreeMap<Vec<PieceKey>, usize> = BTreeMap::new();
    let mut identical_slices = 0;
    // Families whose slice was merged into another family's are covered by its prompts.
    let mut merged_into: BTreeMap<usize, usize> = BTreeMap::new();
    for (fk, s, primary) in cut_slices {
        let key = body_key(&s);
        if let Some(&k) = by_body.get(&key) {
            if kept[k].0 != fk {
                merged_into.entry(fk).or_insert(kept[k].0);
            }
            let into = &mut kept[k].1;
            for a in &s.apis {
                if !into.apis.contains(a) {
                    into.apis.push(a.clone());
                }
            }
            identical_slices += 1;
            *not_asked
                .entry("slice identical to another (merged, its APIs listed there)".into())
                .or_default() += 1;
            continue;
        }
        by_body.insert(key, kept.len());
        kept.push((fk, s, primary));
    }
    // Cross-family twins: the later family is asked what tells it apart.
    let mut twin_slices = 0;
    let mut bases: Vec<(usize, BTreeSet<PieceKey>)> = Vec::new();
    for k in 0..kept.len() {
        if !kept[k].1.variant.is_empty() || !kept[k].2 {
            continue;
        }
        let set: BTreeSet<_> = body_key(&kept[k].1).into_iter().collect();
        if let Some(&(j, _)) = bases
            .iter()
            .find(|(j, b)| kept[*j].0 != kept[k].0 && jaccard(b, &set) >= 0.8)
        {
            kept[k].1.focus.twin_of = kept[j].1.api.clone();
            twin_slices += 1;
        } else {
            bases.push((k, set));
        }
    }
    // Questions, grouped by slice; slices in family round-robin so a limited run
    // still spreads out.
    let mut per_family: Vec<Vec<Vec<Question>>> = vec![Vec::new(); fams.len()];
    let mut slices = BTreeMap::new();
    let mut asked_on_primary: BTreeSet<(String, String)> = BTreeSet::new();
    for (fk, s, primary) in kept {
        let ts = if primary { &primary_t } else { &device_t };
        let mut sp = plan(ts, &s);
        if primary {
            // Device questions go to the primary slice when its target qualifies.
            let dp = plan(&device_t, &s);
            sp.questions.extend(dp.questions);
            sp.not_asked.extend(dp.not_asked);
            sp.derived.extend(dp.derived);
            for q in &sp.questions {
                asked_on_primary.insert((s.family.clone() + &s.variant, q.template_id.clone()));
            }
        } else {
            sp.questions.retain(|q| {
                !asked_on_primary.contains(&(s.family.clone() + &s.variant, q.template_id.clone()))
            });
        }
        for (tid, why) in sp.not_asked {
            *not_asked.entry(format!("{tid}: {why}")).or_default() += 1;
        }
        if !sp.questions.is_empty() {
            for d in sp.derived {
                if sp.questions.iter().any(|q| q.slice_id == d.id) {
                    slices.insert(d.id.clone(), d);
                }
            }
            per_family[fk].push(sp.questions);
            slices.insert(s.id.clone(), s);
        }
    }
    // Which families have questions, before any is asked with another family.
    let had: Vec<bool> = per_family.iter().map(|q| !q.is_empty()).collect();
    // A question whose answer is the same wherever the code follows one pattern is
    // asked once per pattern, about the first family (in name order) that has it.
    let mut first_of: BTreeMap<String, &str> = BTreeMap::new();
    for (fk, slices_of) in per_family.iter_mut().enumerate() {
        for qs in slices_of.iter_mut() {
            qs.retain(|q| {
                let Some(p) = &q.pattern else {
                    return true;
                };
                match first_of.get(p) {
                    Some(&fam) if fam != fams[fk] => {
                        *not_asked
                            .entry(format!(
                                "{}: asked once per pattern, with family {fam}",
                                q.template_id
                            ))
                            .or_default() += 1;
                        false
                    }
                    Some(_) => true,
                    None => {
                        first_of.insert(p.clone(), fams[fk]);
                        true
                    }
                }
            });
        }
    }
    // This machine's share.
    for (fk, fam) in fams.iter().enumerate() {
        if !p.in_shard(fam) {
            per_family[fk].clear();
        }
    }
    slices.retain(|_, s: &mut Slice| p.in_shard(&s.family));
    // A question view no question is left to use (its questions asked once per
    // pattern with another family) is not planned: two such views of a family's forms
    // can show the same pieces.
    let used: BTreeSet<String> = per_family
        .iter()
        .flatten()
        .flatten()
        .map(|q| q.slice_id.clone())
        .collect();
    slices.retain(|id, _| !id.contains('~') || used.contains(id));
    // Views of one form that show the same pieces are one view: their questions share
    // one id and one cached prefix. (Two forms may be shown the same code, as a
    // family whose every API is a `_batched` one is for its base and batched
    // questions; each keeps its own form.)
    let mut by_text: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut same_as: BTreeMap<String, String> = BTreeMap::new();
    for (id, s) in &slices {
        match by_text.entry((s.variant.clone(), crate::slice::render(s))) {
            std::collections::btree_map::Entry::Occupied(first) if id.contains('~') => {
                same_as.insert(id.clone(), first.get().clone());
            }
            std::collections::btree_map::Entry::Occupied(_) => {}
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(id.clone());
            }
        }
    }
    for q in per_family.iter_mut().flatten().flatten() {
        if let Some(first) = same_as.get(&q.slice_id) {
            q.slice_id = first.clone();
        }
    }
    slices.retain(|id, _| !same_as.contains_key(id));
    for (fk, fam) in fams.iter().enumerate() {
        if !p.in_shard(fam) {
            continue;
        }
        let by_merge = merged_into.get(&fk).is_some_and(|&other| had[other]);
        if !had[fk] && !by_merge {
            coverage.without_prompts.insert(
                fam.to_string(),
                "no template applies (no definition reached, or no feature a template needs)"
                    .into(),
            );
        } else {
            coverage.with_prompts += 1;
        }
    }
    let mut questions = Vec::new();
    let longest = per_family.iter().map(|q| q.len()).max().unwrap_or(0);
    for k in 0..longest {
        for qs in &per_family {
            if let Some(q) = qs.get(k) {
                questions.extend(q.iter().cloned());
            }
        }
    }
    let bug_tasks = questions
        .iter()
        .filter(|q| q.mutation.is_some())
        .cloned()
        .collect();
    if let Some(n) = p.limit {
        questions.truncate(n);
    }
    coverage.prompts_percent = percent(coverage.with_prompts, coverage.in_scope);
    Ok(Planned {
        slices,
        questions,
        coverage,
        not_asked,
        identical_slices,
        twin_slices,
        bug_tasks,
    })
}

pub use crate::facts::qa::MIN_FACT_ENTRIES;

/// The public API functions a run reads facts of (families kept by `--api`; every
/// shard reads them all, see [`RunApis::owns`]), each family's members in
/// representative order (real single precision first). The allowlist's
/// `families.deny` is not applied: it keeps host bookkeeping (handles, streams,
/// host-device copies) out of the questions, but what such a function checks and
/// returns is as much a fact of the library as any.
pub fn run_apis<'g>(p: &ExtractPlan, graph: &CodeGraph<'g>, scope: &Scope) -> RunApis<'g> {
    let mut families: BTreeMap<&str, Vec<&ApiFunction>> = BTreeMap::new();
    for a in graph.api() {
        families.entry(a.family.as_str()).or_default().push(a);
    }
    let mut out = Vec::new();
    let mut owned = BTreeSet::new();
    for (fam, mut members) in families {
        if !p.names_family(&members) {
            continue;
        }
        if p.in_shard(fam) {
            owned.insert(fam.to_string());
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
    RunApis {
        outside_question_scope: out
            .iter()
            .filter(|a| !scope.family_in(&a.family))
            .map(|a| a.name.clone())
            .collect(),
        all: out,
        owned,
    }
}

/// The public API functions of a run ([`run_apis`]).
pub struct RunApis<'g> {
    /// All of them, in representative order.
    pub all: Vec<&'g ApiFunction>,
    /// The families this machine writes the fact entries of (all of them unsharded).
    pub owned: BTreeSet<String>,
    /// Those of families the allowlist keeps out of the questions.
    pub outside_question_scope: BTreeSet<String>,
}

impl RunApis<'_> {
    /// Does this machine write the entry of `family`? A fact entry can list APIs of
    /// several families (one answer, one entry), so each shard renders, checks and
    /// dedups every family's, in the same order, and writes those whose (first)
    /// family is its own: the shards' entries are the unsharded run's, split.
    pub fn owns(&self, family: &str) -> bool {
        self.owned.contains(family)
    }
}

/// The facts of a run's APIs, read once: fact entries are rendered from them and every
/// answer's claims are checked against them.
pub fn read_facts(
    apis: &[&ApiFunction],
    graph: &CodeGraph,
    reader: &crate::facts::FactReader,
    indexes: &[&crate::model::LibraryIndex],
) -> crate::model::FactTable {
    use rayon::prelude::*;
    let mut t = crate::facts::names_table(indexes);
    // Graphs are built in turn (the graph's caches are its own), each API's facts are
    // read on their own, on every core.
    let graphs: Vec<(String, crate::model::InterfaceGraph)> = apis
        .iter()
        .map(|a| (a.name.clone(), graph.interface(a)))
        .collect();
    t.apis = graphs
        .into_par_iter()
        .map(|(name, g)| (name, reader.read(&g)))
        .collect();
    t
}

/// The APIs whose facts to read beside those of `facts` so that every kernel the
/// `answers` name is judged by the device code of an API that launches it: for a kernel
/// no API of `facts` launches, the APIs of each family whose name the kernel's carries
/// (`rocblas_axpy_kernel`, `rocblas_saxpy_2_kernel`: `axpy`; `getf2_small_kernel`:
/// `getf2`), found without reading the whole library.
pub fn launchers_to_read<'a, 'e>(
    answers: impl Iterator<Item = &'e str>,
    facts: &crate::model::FactTable,
    apis: &'a [ApiFunction],
) -> Vec<&'a ApiFunction> {
    static IDENT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let ident = IDENT.get_or_init(|| regex::Regex::new(r"[A-Za-z_]\w*").expect("static regex"));
    let launched: BTreeSet<&str> = facts
        .apis
        .values()
        .flat_map(|af| af.facts.iter())
        .filter(|f| f.kind == crate::model::FactKind::Launch)
        .map(|f| f.subject.as_str())
        .collect();
    let unlaunched: BTreeSet<&str> = answers
        .flat_map(|a| ident.find_iter(a).map(|m| m.as_str()))
        .filter(|w| facts.kernels.contains(*w) && !launched.contains(w))
        .collect();
    apis.iter()
        .filter(|a| a.family.len() >= 3 && !facts.apis.contains_key(&a.name))
        .filter(|a| unlaunched.iter().any(|k| k.contains(a.family.as_str())))
        .collect()
}

/// How the entries a run renders without a model are told from duplicates.
#[derive(Clone, Copy)]
pub struct Duplicates<'a> {
    /// Similarity from which two entries are duplicates.
    pub threshold: f64,
    /// Signatures made so far, shared by the stages that read `entries.jsonl` back.
    pub signatures: &'a SignatureMemo,
}

/// Renders, validates and writes the fact entries of a run: every entry passes the
/// same checks as LLM entries ([`crate::validate::file::check_entry`], the fact check
/// included) and is not a near-duplicate of one kept; the report names every in-scope
/// API left with fewer than [`MIN_FACT_ENTRIES`].
pub fn write_fact_entries<'g>(
    run: &RunApis,
    facts: &crate::model::FactTable,
    pin: &SourcePin,
    pins: &'g crate::source::Pins,
    grounding: &crate::validate::Grounding<'g>,
    duplicates: Duplicates<'g>,
    out: &mut RunOutput,
) -> Result<crate::model::FactEntriesReport, EmitError> {
    let Duplicates {
        threshold,
        signatures,
    } = duplicates;
    let apis = &run.all;
    let mut report = crate::model::FactEntriesReport {
        apis: apis.len(),
        outside_question_scope: run.outside_question_scope.len(),
        ..Default::default()
    };
    let all: Vec<&crate::model::ApiFacts> = apis
        .iter()
        .filter_map(|a| facts.apis.get(&a.name))
        .collect();
    report.facts = all.iter().map(|f| f.facts.len()).sum();
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
    report.entries.rendered = rendered.len();
    let families: BTreeSet<&str> = run.owned.iter().map(String::as_str).collect();
    let now = rendered.iter().map(|e| e.id.as_str()).collect();
    report.entries.replaced = retire_rendered(out, "facts", &families, &now)?;
    let mut writer = RenderedWriter::new(*grounding, pins, signatures, threshold, out, |e| {
        e.generator == "facts" && run.owns(&e.family)
    })?;
    let mut per_api: BTreeMap<String, usize> = BTreeMap::new();
    let count = |e: &Entry, per_api: &mut BTreeMap<String, usize>| {
        for a in &e.apis {
            *per_api.entry(a.clone()).or_default() += 1;
        }
    };
    // Templated answers that differ in a name or a condition are near-duplicates
    // whatever the question names (compared exactly: a library has a few thousand
    // fact entries): an entry whose answer is near one kept waits, and
    // is kept only where one of its APIs would otherwise have fewer than
    // MIN_FACT_ENTRIES entries.
    let mut answers = crate::validate::dedup::ExactIndex::default();
    let mut waiting = Vec::new();
    let prepared: Vec<_> = {
        use rayon::prelude::*;
        let (w, o) = (&writer, &*out);
        rendered
            .par_iter()
            .map(|e| {
                let validated = (!o.is_done(&e.id)).then(|| w.validated(e));
                (
                    validated,
                    crate::validate::dedup::shingles(&fact_answer_text(e)),
                )
            })
            .collect()
    };
    for (mut e, (validated, asig)) in rendered.into_iter().zip(prepared) {
        // `None`: in entries.jsonl from an earlier run.
        let sig = match writer.check(
            &mut e,
            validated,
            &mut report.entries,
            &mut report.fact_check,
        ) {
            Verdict::Refused => continue,
            Verdict::Before => None,
            Verdict::Passed(sig) => Some(sig),
        };
        if answers.nearest(&asig, threshold).is_some() {
            waiting.push((e, sig, asig));
            continue;
        }
        writer.keep_checked(&e, sig, run.owns(&e.family), out, &mut report.entries)?;
        answers.insert(&e.id, asig);
        count(&e, &mut per_api);
    }
    // An earlier run's entry that is now a near twin (written by a rocqa that compared
    // questions and answers together) goes, as a stale rendering does.
    let mut stale_twins: std::collections::HashSet<String> = Default::default();
    for (e, sig, asig) in waiting {
        let needed = e
            .apis
            .iter()
            .any(|a| per_api.get(a).copied().unwrap_or(0) < MIN_FACT_ENTRIES);
        let near_kept = sig
            .as_ref()
            .is_some_and(|s| writer.seen.nearest(s, threshold).is_some());
        if !needed || near_kept {
            match sig {
                Some(_) => report.entries.near_duplicates += 1,
                None => {
                    report.entries.kept_before -= 1;
                    stale_twins.insert(e.id.clone());
                }
            }
            continue;
        }
        writer.keep_checked(&e, sig, run.owns(&e.family), out, &mut report.entries)?;
        report.entries.similar_answers_kept += 1;
        answers.insert(&e.id, asig);
        count(&e, &mut per_api);
    }
    if !stale_twins.is_empty() {
        report.entries.replaced +=
            out.retire(|k| k.generator == "facts" && stale_twins.contains(&k.id))?;
    }
    for a in apis {
        let Some(f) = facts.apis.get(&a.name) else {
            continue;
        };
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
            let why = if !run.outside_question_scope.contains(&a.name) {
                why
            } else {
                format!("{why}; host bookkeeping outside the question scope (families.deny)")
            };
            report
                .below_minimum
                .insert(a.name.clone(), format!("{n} fact entries: {why}"));
        }
    }
    Ok(report)
}

/// Takes out of `entries.jsonl` the `generator` entries of `families` that this run
/// does not render: an earlier version rendered them otherwise. Entries of families the
/// run does not cover (another shard's, or left out by `--api`) stay.
fn retire_rendered(
    out: &mut RunOutput,
    generator: &str,
    families: &BTreeSet<&str>,
    now: &std::collections::HashSet<&str>,
) -> Result<usize, EmitError> {
    out.retire(|k| {
        k.generator == generator
            && families.contains(k.family.as_str())
            && !now.contains(k.id.as_str())
    })
}

/// An entry for question `q` about slice `s`, before its answer: every field the
/// question, the slice and the pin fix (the answer fields empty, `generator` `llm`).
fn question_entry(q: &Question, s: &Slice, pin: &SourcePin) -> Entry {
    Entry {
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
        answer: String::new(),
        code: None,
        citations: Vec::new(),
        slice_id: s.id.clone(),
        slice: crate::validate::piece_refs(s),
        model: String::new(),
        params: serde_json::json!({}),
        prompt_sha256: String::new(),
        usage: Default::default(),
        validation: Vec::new(),
        generator: "llm".into(),
        tool: generator(),
        grouped_request: None,
        mutation: q.mutation.clone(),
    }
}

/// Checks and writes the entries a run renders without a model: the checks `rocqa
/// validate` runs ([`crate::validate::file::check_entry`]), then the near-duplicate
/// check against every entry in `entries.jsonl`.
struct RenderedWriter<'a> {
    grounding: crate::validate::Grounding<'a>,
    pins: &'a crate::source::Pins,
    signatures: &'a SignatureMemo,
    seen: DedupIndex,
    threshold: f64,
}

impl<'a> RenderedWriter<'a> {
    /// A writer whose dedup starts from the entries of `entries.jsonl`, but those
    /// `redecided` (an earlier run's entries this run decides on again, each kept or
    /// not as it comes).
    fn new(
        grounding: crate::validate::Grounding<'a>,
        pins: &'a crate::source::Pins,
        signatures: &'a SignatureMemo,
        threshold: f64,
        out: &RunOutput,
        redecided: impl Fn(&Entry) -> bool,
    ) -> Result<RenderedWriter<'a>, EmitError> {
        let mut seen = DedupIndex::default();
        for e in crate::emit::read_jsonl::<Entry>(&out.dir().join("entries.jsonl"))? {
            if redecided(&e) {
                continue;
            }
            seen.insert(
                &e.id,
                signatures.entry_signature(&e.question, &e.answer, e.code.as_deref()),
            );
        }
        Ok(RenderedWriter {
            grounding,
            pins,
            signatures,
            seen,
            threshold,
        })
    }

    /// Checks `e` and, unless it is a near-duplicate of one kept, keeps it: written when
    /// `write`, else counted as another shard's (its checks and dedup are the same).
    /// True when the entry is kept (written now or by an earlier run).
    fn keep(
        &mut self,
        e: &mut Entry,
        write: bool,
        out: &mut RunOutput,
        counts: &mut crate::model::RenderedCounts,
        fact_check: &mut crate::model::FactCheckCount,
    ) -> Result<bool, EmitError> {
        let validated = (!out.is_done(&e.id)).then(|| self.validated(e));
        Ok(match self.check(e, validated, counts, fact_check) {
            Verdict::Before => true,
            Verdict::Refused => false,
            Verdict::Passed(sig) => {
                self.accept(e, *sig, write, out, counts)?;
                true
            }
        })
    }

    /// The checks `rocqa validate` runs on `e`: they read only the trees and the facts,
    /// so entries can be validated on every core before they are kept in turn.
    fn validated(&self, e: &Entry) -> Validated {
        crate::validate::file::check_entry(e, &self.grounding, self.pins)
    }

    /// Judges `e` by its [`RenderedWriter::validated`] result (`None`: in
    /// `entries.jsonl` from an earlier run), then against near-duplicates of the
    /// entries kept, counting a refusal; what passes is for [`RenderedWriter::accept`].
    fn check(
        &mut self,
        e: &mut Entry,
        validated: Option<Validated>,
        counts: &mut crate::model::RenderedCounts,
        fact_check: &mut crate::model::FactCheckCount,
    ) -> Verdict {
        let Some(validated) = validated else {
            counts.kept_before += 1;
            return Verdict::Before;
        };
        match validated {
            Ok((checks, counted)) => {
                fact_check.add(counted);
                e.validation = checks;
            }
            Err(f) => {
                fact_check.add(f.fact_check);
                tracing::debug!(id = %e.id, api = %e.api, template = %e.template_id, reason = %f.reason, detail = %f.detail, answer = %e.answer, "Rendered entry refused.");
                *counts.rejected.entry(f.reason.to_string()).or_default() += 1;
                return Verdict::Refused;
            }
        }
        let sig = self
            .signatures
            .entry_signature(&e.question, &e.answer, e.code.as_deref());
        if self.seen.nearest(&sig, self.threshold).is_some() {
            counts.near_duplicates += 1;
            return Verdict::Refused;
        }
        Verdict::Passed(Box::new(sig))
    }

    /// Keeps an entry [`RenderedWriter::check`] passed (`sig`) or found in
    /// `entries.jsonl` from an earlier run (`None`: only its signature is added).
    fn keep_checked(
        &mut self,
        e: &Entry,
        sig: Option<Box<EntrySignature>>,
        write: bool,
        out: &mut RunOutput,
        counts: &mut crate::model::RenderedCounts,
    ) -> Result<(), EmitError> {
        match sig {
            Some(sig) => self.accept(e, *sig, write, out, counts),
            None => {
                let sig =
                    self.signatures
                        .entry_signature(&e.question, &e.answer, e.code.as_deref());
                self.seen.insert(&e.id, sig);
                Ok(())
            }
        }
    }

    /// Keeps an entry that passed: written when `write`, else counted as another
    /// shard's.
    fn accept(
        &mut self,
        e: &Entry,
        sig: EntrySignature,
        write: bool,
        out: &mut RunOutput,
        counts: &mut crate::model::RenderedCounts,
    ) -> Result<(), EmitError> {
        self.seen.insert(&e.id, sig);
        if write {
            out.write_entry(e)?;
            counts.written += 1;
        } else {
            counts.other_shards += 1;
        }
        Ok(())
    }
}

/// What validation made of an entry: its checks and fact-check counts, or why it
/// failed.
type Validated = Result<
    (Vec<crate::model::Check>, crate::model::FactCheckCount),
    crate::validate::checks::Failed,
>;

/// What [`RenderedWriter::check`] made of an entry.
enum Verdict {
    /// In `entries.jsonl` from an earlier run.
    Before,
    /// Refused by validation, or a near-duplicate of one kept (counted).
    Refused,
    /// Passed, with its signature (boxed: 512 bytes).
    Passed(Box<EntrySignature>),
}

/// What a fact entry's answer says, to tell templated answers apart: its template and
/// the answer below its opening line (one of three phrasings of the same intro).
fn fact_answer_text(e: &Entry) -> String {
    let body = e
        .answer
        .split_once('\n')
        .map_or(e.answer.as_str(), |(_, b)| b);
    format!("{}\n{body}", e.template_id)
}

/// Writes the find-the-bug tasks of a run answered from their planted bugs (`generator:
/// mutation`): the prompt is the one a model gets, the answer names the changed line,
/// what it breaks and the line as the tree has it, and the entry is checked like any
/// other. Its id differs from the question's, so a model's answer is still asked for.
pub fn write_reference_entries<'g>(
    planned: &Planned,
    pin: &SourcePin,
    pins: &'g crate::source::Pins,
    grounding: &crate::validate::Grounding<'g>,
    duplicates: Duplicates<'g>,
    out: &mut RunOutput,
) -> Result<crate::model::ReferenceEntriesReport, EmitError> {
    let Duplicates {
        threshold,
        signatures,
    } = duplicates;
    let mut report = crate::model::ReferenceEntriesReport::default();
    let mut rendered = Vec::new();
    for q in &planned.bug_tasks {
        let (Some(m), Some(s)) = (&q.mutation, planned.slices.get(&q.slice_id)) else {
            continue;
        };
        let Some(piece) = s
            .pieces
            .iter()
            .find(|p| p.file == m.file && p.start <= m.line && m.line <= p.end)
        else {
            continue;
        };
        report.entries.rendered += 1;
        let mut h = Sha256::new();
        h.update(format!("{}\u{0}reference", q.id).as_bytes());
        let e = Entry {
            id: format!("{}-{}", s.lib, &format!("{:x}", h.finalize())[..16]),
            answer: crate::question::mutate::reference_answer(m, &piece.name),
            citations: vec![crate::model::Citation {
                lib: m.lib.clone(),
                file: m.file.clone(),
                start: m.line,
                end: m.line,
                sha256: crate::slice::lines_hash(std::slice::from_ref(&m.original), 1, 1),
            }],
            prompt_sha256: prompt_hash(q),
            generator: "mutation".into(),
            ..question_entry(q, s, pin)
        };
        rendered.push((e, m.kind.clone()));
    }
    // With find-the-bug tasks planned, every family of the run has all of its own.
    if !planned.bug_tasks.is_empty() {
        let families: BTreeSet<&str> = planned.slices.values().map(|s| s.family.as_str()).collect();
        let now = rendered.iter().map(|(e, _)| e.id.as_str()).collect();
        report.entries.replaced = retire_rendered(out, "mutation", &families, &now)?;
    }
    let mut writer = RenderedWriter::new(*grounding, pins, signatures, threshold, out, |_| false)?;
    let mut counted = crate::model::FactCheckCount::default();
    for (mut e, kind) in rendered {
        if !writer.keep(&mut e, true, out, &mut report.entries, &mut counted)? {
            continue;
        }
        *report.kinds.entry(kind).or_default() += 1;
    }
    Ok(report)
}

/// SHA-256 of a question's messages as sent one by one.
pub fn prompt_hash(q: &Question) -> String {
    messages_hash(&q.messages)
}

/// SHA-256 of messages as sent.
fn messages_hash(messages: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    for (role, content) in messages {
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
    m.planning = planning(planned);
    m.toolchain
        .insert("rocqa".into(), env!("CARGO_PKG_VERSION").into());
    m.toolchain
        .insert("tokenizer".into(), "cl100k_base (bpe-openai)".into());
    m.toolchain
        .insert("parser".into(), "tree-sitter-cpp 0.23".into());
    m
}

/// Prefix cache assumed for the planning figure: about what one large GPU serving a
/// 32B model keeps.
pub const PREFIX_CACHE_TOKENS: usize = 270_000;

/// The planning figures of a plan: what was merged or not asked, target sizes,
/// repeats, tokens one by one and grouped, and the expected prefix-cache share.
pub fn planning(planned: &Planned) -> crate::emit::Planning {
    let mut f = crate::emit::Planning {
        slices: planned.slices.len(),
        identical_slices_merged: planned.identical_slices,
        twin_slices: planned.twin_slices,
        not_asked: planned.not_asked.clone(),
        prefix_cache_tokens: PREFIX_CACHE_TOKENS,
        ..Default::default()
    };
    let mut texts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_slice: BTreeMap<&str, Vec<&Question>> = BTreeMap::new();
    let mut total = 0;
    for q in &planned.questions {
        *f.prompts_by_difficulty
            .entry(q.difficulty.clone())
            .or_default() += 1;
        *texts.entry(q.text.as_str()).or_default() += 1;
        by_slice.entry(q.slice_id.as_str()).or_default().push(q);
        total += q.prompt_tokens;
        if let Some(s) = planned.slices.get(&q.slice_id) {
            if !s.focus.target.is_empty() && q.text.contains(&s.focus.target) {
                let bucket = match s.focus.target_lines {
                    0..=20 => "<=20",
                    21..=50 => "21-50",
                    51..=100 => "51-100",
                    101..=200 => "101-200",
                    _ => ">200",
                };
                *f.target_kernel_lines.entry(bucket.into()).or_default() += 1;
            }
        }
    }
    f.duplicate_question_texts = texts.values().map(|n| n - 1).sum();
    f.prompt_tokens_per_question = total / planned.questions.len().max(1);
    f.grouped_prompt_tokens = by_slice
        .iter()
        .filter_map(|(id, qs)| {
            let s = planned.slices.get(*id)?;
            Some(crate::question::grouped_messages(s, qs).1)
        })
        .sum();
    f.prefix_cache_share = prefix_cache_share(planned, PREFIX_CACHE_TOKENS);
    f
}

/// Share of prompt tokens (percent) an LRU cache of `capacity` tokens serves from
/// cached prefixes when the questions are sent in planned order: a question's pieces
/// are a hit as far as they match, piece by piece from the first, those of a prompt
/// still cached (views of one slice share the pieces every question is shown).
pub fn prefix_cache_share(planned: &Planned, capacity: usize) -> f64 {
    type Key<'a> = (&'a str, u32, u32, &'a str);
    let pieces_of = |id: &str| -> Vec<(Key<'_>, usize)> {
        planned.slices.get(id).map_or(Vec::new(), |s| {
            s.pieces
                .iter()
                .map(|p| {
                    (
                        (p.file.as_str(), p.start, p.end, p.sha256.as_str()),
                        p.tokens,
                    )
                })
                .collect()
        })
    };
    type Cached<'a> = (&'a str, Vec<(Key<'a>, usize)>, usize);
    let mut lru: std::collections::VecDeque<Cached<'_>> = Default::default();
    let mut held = 0usize;
    let (mut hit, mut total) = (0usize, 0usize);
    for q in &planned.questions {
        total += q.prompt_tokens;
        if let Some(k) = lru.iter().position(|(id, _, _)| *id == q.slice_id) {
            hit += lru[k].2.min(q.prompt_tokens);
            let e = lru.remove(k).expect("position is in range");
            lru.push_back(e);
            continue;
        }
        let mine = pieces_of(&q.slice_id);
        let shared = lru
            .iter()
            .map(|(_, theirs, _)| {
                mine.iter()
                    .zip(theirs)
                    .take_while(|(a, b)| a.0 == b.0)
                    .map(|(a, _)| a.1)
                    .sum::<usize>()
            })
            .max()
            .unwrap_or(0);
        hit += shared.min(q.prompt_tokens);
        let prefix: usize = mine.iter().map(|x| x.1).sum::<usize>().min(q.prompt_tokens);
        lru.push_back((q.slice_id.as_str(), mine, prefix));
        held += prefix;
        while held > capacity {
            match lru.pop_front() {
                Some((_, _, t)) => held -= t,
                None => break,
            }
        }
    }
    if total == 0 {
        0.0
    } else {
        (hit as f64 * 1000.0 / total as f64).round() / 10.0
    }
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
    /// Claims of this run's answers compared with the facts.
    pub fact_check: crate::model::FactCheckCount,
    /// Answers that failed on form only and were asked once more
    /// ([`crate::validate::Reason::is_form`]), how many of those were then kept, and the
    /// tokens the repair requests cost.
    pub repairs: crate::model::RepairCount,
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
    /// The facts of the run's APIs, for the fact check.
    pub facts: Option<&'a crate::validate::factcheck::FactIndex<'a>>,
    /// The libraries' public APIs and the templates, for an entry's own fields.
    pub catalogue: &'a crate::validate::provenance::Catalogue,
    /// Similarity from which two entries are duplicates.
    pub dedup_threshold: f64,
    /// Signatures of the entries written before the answers (the fact and find-the-bug
    /// entries), so they are not made again.
    pub signatures: &'a SignatureMemo,
    /// The ROCm compiler, for answers that carry code.
    pub compiler: &'a crate::validate::compile::Compiler,
    /// Ask all questions of a slice in one request (`--group-questions`).
    pub group_questions: bool,
}

/// Most snippets compiled in one call of the compile check.
const COMPILE_BATCH: usize = 64;

/// An answer that passed the checks and waits for its code to compile.
struct Waiting<'p> {
    q: &'p Question,
    v: crate::validate::Validated,
    raw: String,
    model: String,
    usage: TokenUsage,
    /// The request it was asked in.
    via: Via,
}

/// How a question was asked: the request's prompt hash, and its place in a grouped
/// request.
#[derive(Clone)]
struct Via {
    prompt_sha256: String,
    grouped: Option<crate::model::GroupedRequest>,
    /// The answer came from a repair request.
    repaired: bool,
}

/// The one writer: keeps or rejects finished answers, with duplicate detection and the
/// run's counts.
struct Writer<'a, 'c, 'o> {
    out: &'o mut RunOutput,
    cx: &'a RunContext<'c>,
    seen: DedupIndex,
    summary: RunSummary,
    done: usize,
    total: usize,
    failure: Option<EmitError>,
}

impl Writer<'_, '_, '_> {
    fn record(&mut self, written: Result<(), EmitError>, progress: &mut dyn FnMut(usize, usize)) {
        if let Err(e) = written {
            self.failure.get_or_insert(e);
        }
        self.done += 1;
        progress(self.done, self.total);
    }

    fn keep(&mut self, w: Waiting, s: &Slice, progress: &mut dyn FnMut(usize, usize)) {
        let Waiting {
            q,
            v,
            raw,
            model,
            usage,
            via,
        } = w;
        let sig = entry_signature(&q.text, &v.answer, v.code.as_deref());
        if let Some(near) = self.seen.nearest(&sig, self.cx.dedup_threshold) {
            let f = crate::validate::Failed::after(
                v.checks,
                "near-duplicate",
                crate::validate::Reason::NearDuplicate,
                near.to_string(),
            );
            return self.fail(q, s, f, &raw, usage, progress);
        }
        let entry = Entry {
            answer: v.answer,
            code: v.code,
            citations: v.citations,
            model,
            params: self.cx.params.clone(),
            prompt_sha256: via.prompt_sha256.clone(),
            usage,
            validation: v.checks,
            grouped_request: via.grouped,
            ..question_entry(q, s, self.cx.pin)
        };
        // The contract rocqa validate holds entries to, held here too.
        let broken = serde_json::to_value(&entry)
            .map(|j| crate::emit::schema_violations(&j))
            .unwrap_or_else(|e| vec![e.to_string()]);
        if !broken.is_empty() {
            let f = crate::validate::Failed::after(
                entry.validation,
                "schema",
                crate::validate::Reason::Schema,
                broken.join("; "),
            );
            return self.fail(q, s, f, &raw, usage, progress);
        }
        self.seen.insert(&q.id, sig);
        self.summary.entries += 1;
        if via.repaired {
            self.summary.repairs.kept += 1;
        }
        let written = self.out.write_entry(&entry);
        self.record(written, progress);
    }

    fn fail(
        &mut self,
        q: &Question,
        s: &Slice,
        f: crate::validate::Failed,
        raw: &str,
        usage: TokenUsage,
        progress: &mut dyn FnMut(usize, usize),
    ) {
        self.summary.rejects += 1;
        let r = reject(
            q,
            s,
            "validate",
            f.reason.as_str(),
            &f.detail,
            Some(raw),
            f.checks,
            self.cx.model,
            usage,
        );
        let written = self.out.write_reject(&r);
        self.record(written, progress);
    }
}

/// One request of a run and the questions it asks: one, or every question of a slice
/// (`--group-questions`).
struct Ask<'p> {
    questions: Vec<&'p Question>,
    req: ChatRequest,
    prompt_sha256: String,
}

impl<'p> Ask<'p> {
    /// A request for one question, its messages as planned.
    fn single(q: &'p Question) -> Ask<'p> {
        Ask {
            questions: vec![q],
            req: ChatRequest {
                messages: chat_messages(&q.messages),
                schema: Some(answer_schema()),
                max_tokens: None,
            },
            prompt_sha256: prompt_hash(q),
        }
    }

    fn grouped(&self) -> bool {
        self.questions.len() > 1
    }

    /// A request asking once more for an answer that failed on form only: the question
    /// as planned, the answer given, and what was wrong with it, quoted.
    fn repair(q: &'p Question, answer: &str, f: &crate::validate::Failed) -> Ask<'p> {
        let mut messages = q.messages.clone();
        messages.push(("assistant".into(), answer.to_string()));
        messages.push(("user".into(), repair_request(f)));
        Ask {
            questions: vec![q],
            req: ChatRequest {
                messages: chat_messages(&messages),
                schema: Some(answer_schema()),
                max_tokens: None,
            },
            prompt_sha256: messages_hash(&messages),
        }
    }
}

/// The repair request's text: the check that failed, with what it found.
fn repair_request(f: &crate::validate::Failed) -> String {
    format!(
        "Your reply was not accepted ({}): {}. Reply again with the whole JSON object \
         (\"answer\", \"code\", \"citations\"), correcting only that; keep every \
         statement that was right.",
        f.reason.as_str(),
        f.detail
    )
}

fn chat_messages(m: &[(String, String)]) -> Vec<Message> {
    m.iter()
        .map(|(r, c)| Message {
            role: r.clone(),
            content: c.clone(),
        })
        .collect()
}

/// The requests of a grouped run: one per slice that holds a question not answered yet,
/// asking every planned question of that slice, so the request (and its cache key) is
/// the same after a resume; answers written before are not written again. A slice with
/// one question gets an ordinary request. Each answer may use `max_tokens`.
fn grouped_asks<'p>(planned: &'p Planned, open: &BTreeSet<&str>, max_tokens: u32) -> Vec<Ask<'p>> {
    let mut by_slice: Vec<(&str, Vec<&Question>)> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = Default::default();
    for q in &planned.questions {
        let k = *at.entry(q.slice_id.as_str()).or_insert_with(|| {
            by_slice.push((q.slice_id.as_str(), Vec::new()));
            by_slice.len() - 1
        });
        by_slice[k].1.push(q);
    }
    by_slice
        .into_iter()
        .filter(|(_, qs)| qs.iter().any(|q| open.contains(q.id.as_str())))
        .map(|(id, qs)| {
            if qs.len() == 1 {
                return Ask::single(qs[0]);
            }
            let (messages, _) = crate::question::grouped_messages(&planned.slices[id], &qs);
            Ask {
                req: ChatRequest {
                    messages: chat_messages(&messages),
                    schema: Some(crate::question::grouped_answer_schema(qs.len())),
                    max_tokens: Some(max_tokens.saturating_mul(qs.len() as u32)),
                },
                prompt_sha256: messages_hash(&messages),
                questions: qs,
            }
        })
        .collect()
}

/// A grouped request failed in a way one question at a time may not: the reply was cut
/// at `max_tokens`, or the server refused the request (too long for its context).
fn ask_one_by_one_instead(e: &crate::llm::LlmError) -> bool {
    matches!(
        e,
        crate::llm::LlmError::Truncated { .. }
            | crate::llm::LlmError::Http {
                status: 400 | 413 | 422,
                ..
            }
    )
}

/// Judges replies as they arrive: checks each answer, sends code to the compile thread,
/// and hands finished records to the writer.
struct Judge<'a, 'c, 'o, 'p> {
    w: Writer<'a, 'c, 'o>,
    planned: &'p Planned,
    /// Questions not answered yet (the ones to write).
    open: &'p BTreeSet<&'p str>,
    waiting: std::collections::HashMap<String, Waiting<'p>>,
    to_compile: Option<std::sync::mpsc::Sender<Snippet>>,
    /// The code shown of the slices answered last.
    shown: crate::validate::ShownCache,
    /// Answers that failed on form only, to ask once more after the first round.
    repairs: Vec<Ask<'p>>,
    /// The repair round is on: a failure now is final.
    repairing: bool,
}

impl<'p> Judge<'_, '_, '_, 'p> {
    /// Keeps or rejects the answers whose code has compiled.
    fn settle(&mut self, outcomes: Vec<CompileOutcome>, progress: &mut dyn FnMut(usize, usize)) {
        let compiler = self.w.cx.compiler;
        for o in outcomes {
            let Some(mut pending) = self.waiting.remove(&o.id) else {
                continue;
            };
            let s = &self.planned.slices[&pending.q.slice_id];
            match crate::validate::compile_verdict(compiler, &o) {
                Ok(check) => {
                    pending.v.checks.push(check);
                    self.w.keep(pending, s, progress);
                }
                Err((reason, detail)) => {
                    let f = crate::validate::Failed::after(
                        std::mem::take(&mut pending.v.checks),
                        "compiles",
                        reason,
                        detail,
                    );
                    self.w
                        .fail(pending.q, s, f, &pending.raw, pending.usage, progress);
                }
            }
        }
    }

    /// One request's result. Returns the questions to ask again one by one (a grouped
    /// request that failed as [`ask_one_by_one_instead`] says).
    fn take(
        &mut self,
        ask: &Ask<'p>,
        result: Result<crate::llm::ChatResponse, crate::llm::LlmError>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Vec<&'p Question> {
        let open: Vec<(usize, &'p Question)> = ask
            .questions
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, q)| self.open.contains(q.id.as_str()))
            .collect();
        let resp = match result {
            Ok(resp) => resp,
            Err(e) if ask.grouped() && ask_one_by_one_instead(&e) => {
                tracing::warn!(error = %e, questions = ask.questions.len(), "Grouped request failed; asking its questions one by one.");
                return open.into_iter().map(|(_, q)| q).collect();
            }
            Err(e) => {
                for (_, q) in open {
                    let s = &self.planned.slices[&q.slice_id];
                    self.w.summary.rejects += 1;
                    let written = self.w.out.write_reject(&reject(
                        q,
                        s,
                        "llm",
                        e.kind(),
                        &e.to_string(),
                        None,
                        Vec::new(),
                        self.w.cx.model,
                        TokenUsage::default(),
                    ));
                    self.w.record(written, progress);
                }
                return Vec::new();
            }
        };
        let model = if resp.model.is_empty() {
            self.w.cx.model.to_string()
        } else {
            resp.model.clone()
        };
        let n = ask.questions.len();
        // A grouped request's cost is shared evenly by its questions.
        let usage = TokenUsage {
            prompt_tokens: resp.usage.prompt_tokens / n as u64,
            completion_tokens: resp.usage.completion_tokens / n as u64,
        };
        let answers: Vec<Result<String, crate::validate::Failed>> = if ask.grouped() {
            crate::validate::split_grouped_reply(&resp.content, n)
        } else {
            vec![Ok(resp.content.clone())]
        };
        let mut answers: Vec<Option<Result<String, crate::validate::Failed>>> =
            answers.into_iter().map(Some).collect();
        for (k, q) in open {
            let via = Via {
                prompt_sha256: ask.prompt_sha256.clone(),
                grouped: ask.grouped().then_some(crate::model::GroupedRequest {
                    questions: n as u32,
                    position: k as u32 + 1,
                }),
                repaired: self.repairing,
            };
            let answer = answers[k].take().expect("one answer per question");
            self.judge(q, answer, &resp.content, &model, usage, via, progress);
        }
        Vec::new()
    }

    /// One question's answer (its own answer object, or why there is none), through the
    /// single check path.
    #[allow(clippy::too_many_arguments)]
    fn judge(
        &mut self,
        q: &'p Question,
        answer: Result<String, crate::validate::Failed>,
        reply: &str,
        model: &str,
        usage: TokenUsage,
        via: Via,
        progress: &mut dyn FnMut(usize, usize),
    ) {
        let s = &self.planned.slices[&q.slice_id];
        let g = crate::validate::Grounding {
            trees: self.w.cx.trees,
            known: self.w.cx.known,
            facts: self.w.cx.facts,
            catalogue: self.w.cx.catalogue,
            shown: &self.shown,
        };
        let given = answer.as_ref().ok().cloned();
        let checked = answer.and_then(|a| {
            let checked = check_reply(q, s, &a, &g);
            self.w.summary.fact_check.add(match &checked {
                Ok(v) => v.fact_check,
                Err(f) => f.fact_check,
            });
            checked.map(|v| (v, a))
        });
        let (v, raw) = match checked {
            Ok(x) => x,
            Err(f) => {
                // A right answer in the wrong form is asked for once more, showing what
                // failed; the reject is written if the repair fails too.
                if let (false, true, Some(a)) = (self.repairing, f.reason.is_form(), &given) {
                    tracing::debug!(question = %q.id, reason = f.reason.as_str(), detail = %f.detail, "Asked again for form.");
                    self.repairs.push(Ask::repair(q, a, &f));
                    return;
                }
                return self.w.fail(q, s, f, reply, usage, progress);
            }
        };
        let pending = Waiting {
            q,
            v,
            raw,
            model: model.to_string(),
            usage,
            via,
        };
        // Code must compile for the GPU before the entry is kept.
        match pending.v.code.clone() {
            Some(code) => {
                self.waiting.insert(q.id.clone(), pending);
                if let Some(tx) = &self.to_compile {
                    let _ = tx.send(Snippet {
                        id: q.id.clone(),
                        code,
                    });
                }
            }
            None => self.w.keep(pending, s, progress),
        }
    }
}

/// Asks the planned questions that are not answered yet and writes each answer as it is
/// judged. A streaming pipeline: the LLM requests never wait on the compiler (answers
/// with code go to a compile thread, which compiles whatever has queued up in one
/// batch), and one writer appends every record. `progress(done, total)` is called after
/// each record. With `group_questions`, each slice's questions go in one request whose
/// reply is split and each answer judged on its own, as if asked alone.
pub fn run(
    planned: &Planned,
    out: &mut RunOutput,
    cx: &RunContext,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<RunSummary, EmitError> {
    let client = cx.client;
    // Entries kept by earlier runs take part in duplicate detection.
    let mut seen = DedupIndex::default();
    for e in crate::emit::read_jsonl::<Entry>(&out.dir().join("entries.jsonl"))? {
        seen.insert(
            &e.id,
            cx.signatures
                .entry_signature(&e.question, &e.answer, e.code.as_deref()),
        );
    }
    let todo: Vec<&Question> = planned
        .questions
        .iter()
        .filter(|q| !out.is_done(&q.id))
        .collect();
    let open: BTreeSet<&str> = todo.iter().map(|q| q.id.as_str()).collect();
    let summary = RunSummary {
        planned: planned.questions.len(),
        skipped: planned.questions.len() - todo.len(),
        ..Default::default()
    };
    let asks: Vec<Ask> = if cx.group_questions {
        grouped_asks(planned, &open, client.config().max_tokens)
    } else {
        todo.iter().map(|q| Ask::single(q)).collect()
    };
    let w = Writer {
        out,
        cx,
        seen,
        summary,
        done: 0,
        total: todo.len(),
        failure: None,
    };
    let compiler = cx.compiler;
    let w = std::thread::scope(|scope| {
        let (to_compile, queued) = std::sync::mpsc::channel::<Snippet>();
        let (compiled_tx, compiled) = std::sync::mpsc::channel::<Vec<CompileOutcome>>();
        scope.spawn(move || {
            while let Ok(first) = queued.recv() {
                let mut batch = vec![first];
                while batch.len() < COMPILE_BATCH {
                    match queued.try_recv() {
                        Ok(s) => batch.push(s),
                        Err(_) => break,
                    }
                }
                if compiled_tx.send(compiler.check(&batch)).is_err() {
                    break;
                }
            }
        });
        let mut j = Judge {
            w,
            planned,
            open: &open,
            waiting: Default::default(),
            to_compile: Some(to_compile),
            shown: Default::default(),
            repairs: Vec::new(),
            repairing: false,
        };
        let mut again: Vec<&Question> = Vec::new();
        let reqs: Vec<ChatRequest> = asks.iter().map(|a| a.req.clone()).collect();
        client.run_batch(&reqs, |i, result| {
            while let Ok(outcomes) = compiled.try_recv() {
                j.settle(outcomes, progress);
            }
            again.extend(j.take(&asks[i], result, progress));
        });
        if !again.is_empty() {
            let singles: Vec<Ask> = again.into_iter().map(Ask::single).collect();
            let reqs: Vec<ChatRequest> = singles.iter().map(|a| a.req.clone()).collect();
            client.run_batch(&reqs, |i, result| {
                while let Ok(outcomes) = compiled.try_recv() {
                    j.settle(outcomes, progress);
                }
                j.take(&singles[i], result, progress);
            });
        }
        // The repair round: each answer that failed on form only, asked once more.
        let repairs = std::mem::take(&mut j.repairs);
        if !repairs.is_empty() {
            j.repairing = true;
            j.w.summary.repairs.asked = repairs.len();
            let reqs: Vec<ChatRequest> = repairs.iter().map(|a| a.req.clone()).collect();
            client.run_batch(&reqs, |i, result| {
                while let Ok(outcomes) = compiled.try_recv() {
                    j.settle(outcomes, progress);
                }
                if let Ok(r) = &result {
                    j.w.summary.repairs.prompt_tokens += r.usage.prompt_tokens;
                    j.w.summary.repairs.completion_tokens += r.usage.completion_tokens;
                }
                j.take(&repairs[i], result, progress);
            });
        }
        // No more code comes: the compile thread ends once its queue is empty.
        j.to_compile = None;
        for outcomes in compiled {
            j.settle(outcomes, progress);
        }
        j.w
    });
    match w.failure {
        Some(e) => Err(e),
        None => Ok(w.summary),
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
