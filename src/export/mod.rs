//! Export: kept entries turned into the files training stacks read, with what each stack
//! needs to load them as they are.
//!
//! Takes entries files (`out/<lib>/<version>/entries.jsonl`) and the review log beside
//! each ([`crate::review::log`]); gives a folder a trainer points at: ShareGPT, OpenAI
//! `messages` (what axolotl's `chat_template` reads), Alpaca and Parquet files per split
//! ([`format`](mod@format)), LLaMA-Factory's `dataset_info.json`, an axolotl `datasets:` snippet and
//! a Hugging Face dataset card with a chart of the mix ([`card`]).
//!
//! An entry stores the code it was asked about as ranges, not text: [`render`] reads
//! them back from the pinned trees (hash-checked) into the user turn the model saw.
//! Which entries go out is decided here ([`Filters`], review verdicts), how many of each
//! by a mix ([`mix`]); [`split`] keeps kernels and near-duplicates on one side of the
//! train/validation line, and [`decontam`] drops entries that overlap held-out
//! evaluation sets. Every step is deterministic: the same inputs give the same bytes.

pub mod card;
pub mod decontam;
pub mod format;
pub mod mix;
pub mod render;
pub mod split;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::emit::EmitError;
use crate::model::Entry;
use crate::review::log::{entry_hash, ReviewError, ReviewLog, Verdict};

/// What can go wrong in an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Emit(#[from] EmitError),
    #[error(transparent)]
    Review(#[from] ReviewError),
    #[error("{path}: cannot {action}")]
    Io {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Bad { path: PathBuf, what: String },
    #[error("writing Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("building Parquet columns: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

pub(crate) fn io_err(
    path: &Path,
    action: &'static str,
) -> impl FnOnce(std::io::Error) -> ExportError {
    let path = path.to_path_buf();
    move |source| ExportError::Io {
        path,
        action,
        source,
    }
}

/// Which entries go out. Every list is "any of" (globs allowed: `facts-*`); an empty
/// list lets everything through. The one filter both `rocqa export` and a mix source
/// apply.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// Only entries a reviewer judged good or weak.
    #[serde(default)]
    pub reviewed_only: bool,
    #[serde(default)]
    pub category: Vec<String>,
    #[serde(default)]
    pub difficulty: Vec<String>,
    #[serde(default)]
    pub lib: Vec<String>,
    #[serde(default)]
    pub version: Vec<String>,
    /// `facts`, `mutation` or `llm`.
    #[serde(default)]
    pub generator: Vec<String>,
    /// Template ids.
    #[serde(default)]
    pub template: Vec<String>,
}

/// [`Filters`] with their globs compiled.
#[derive(Debug)]
pub struct CompiledFilters {
    reviewed_only: bool,
    fields: Vec<(Field, GlobSet)>,
}

fn globs(patterns: &[String]) -> Result<GlobSet, globset::Error> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(Glob::new(p)?);
    }
    b.build()
}

impl Filters {
    /// Compiles the globs; a bad one is named.
    pub fn compile(&self) -> Result<CompiledFilters, String> {
        let mut fields = Vec::new();
        for (field, patterns) in [
            (Field::Category, &self.category),
            (Field::Difficulty, &self.difficulty),
            (Field::Lib, &self.lib),
            (Field::Version, &self.version),
            (Field::Generator, &self.generator),
            (Field::Template, &self.template),
        ] {
            if patterns.is_empty() {
                continue;
            }
            if field == Field::Generator {
                if let Some(g) = patterns
                    .iter()
                    .find(|g| !["facts", "mutation", "llm"].contains(&g.as_str()))
                {
                    return Err(format!(
                        "generator `{g}`: an entry's generator is facts, mutation or llm"
                    ));
                }
            }
            let set = globs(patterns).map_err(|e| format!("{}: {e}", field.name()))?;
            fields.push((field, set));
        }
        Ok(CompiledFilters {
            reviewed_only: self.reviewed_only,
            fields,
        })
    }
}

impl CompiledFilters {
    /// Does the entry, with the verdict it has, pass?
    pub fn keeps(&self, e: &Entry, verdict: Option<Verdict>) -> bool {
        if self.reviewed_only && !matches!(verdict, Some(Verdict::Good | Verdict::Weak)) {
            return false;
        }
        self.fields.iter().all(|(f, set)| set.is_match(f.of(e)))
    }
}

/// The entry fields a mix counts and a filter picks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Category,
    Difficulty,
    Lib,
    Version,
    Generator,
    Template,
}

impl Field {
    /// Every field, in the order the card lists them.
    pub const ALL: [Field; 6] = [
        Field::Category,
        Field::Difficulty,
        Field::Lib,
        Field::Version,
        Field::Generator,
        Field::Template,
    ];

    /// The entry's value of this field.
    pub fn of(self, e: &Entry) -> &str {
        match self {
            Field::Category => &e.category,
            Field::Difficulty => &e.difficulty,
            Field::Lib => &e.lib,
            Field::Version => &e.version,
            Field::Generator => &e.generator,
            Field::Template => &e.template_id,
        }
    }

    /// Its name in mix files and on the card.
    pub fn name(self) -> &'static str {
        match self {
            Field::Category => "category",
            Field::Difficulty => "difficulty",
            Field::Lib => "lib",
            Field::Version => "version",
            Field::Generator => "generator",
            Field::Template => "template",
        }
    }
}

/// One entry on its way out: as the reviewer left it, with where it came from.
#[derive(Debug, Clone)]
pub struct Row {
    pub entry: Entry,
    pub verdict: Option<Verdict>,
    /// A reviewer's edit replaced the entry's text.
    pub edited: bool,
    /// The entries file it was read from.
    pub file: PathBuf,
}

/// What selection read and left out, for the card.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SelectCounts {
    /// Entries read.
    pub read: usize,
    /// Of those, with a review verdict.
    pub reviewed: usize,
    /// Verdicts given, by verdict.
    pub verdicts: BTreeMap<String, usize>,
    /// Left out as wrong in review.
    pub rejected_in_review: usize,
    /// Left out by the filters.
    pub filtered_out: usize,
    /// Replaced by a reviewer's edit.
    pub edited: usize,
    /// Entries and rejects of the runs read (from their manifests): what validation
    /// kept of what was asked.
    pub run_entries: usize,
    pub run_rejects: usize,
}

/// Reads entries files (or run folders holding `entries.jsonl`) and the review log
/// beside each, and keeps what the filters let through. Entries judged wrong in review
/// are left out; an edited entry goes out as edited.
pub fn select(
    files: &[PathBuf],
    filters: &CompiledFilters,
    counts: &mut SelectCounts,
) -> Result<Vec<Row>, ExportError> {
    let mut rows = Vec::new();
    for given in files {
        let file = if given.is_dir() {
            given.join("entries.jsonl")
        } else {
            given.clone()
        };
        if !file.is_file() {
            return Err(ExportError::Bad {
                path: file,
                what: "no such entries file; give an entries.jsonl or a run folder (out/<lib>/<version>)".into(),
            });
        }
        let log = ReviewLog::open(&ReviewLog::beside(&file))?;
        let states = log.states();
        add_run_counts(&file, counts);
        for entry in crate::emit::read_jsonl::<Entry>(&file)? {
            counts.read += 1;
            let json = serde_json::to_value(&entry).expect("entries serialize");
            let state = states.get(&entry_hash(&json));
            let verdict = state.and_then(|s| s.verdict);
            if let Some(v) = verdict {
                counts.reviewed += 1;
                *counts
                    .verdicts
                    .entry(format!("{v:?}").to_lowercase())
                    .or_default() += 1;
            }
            if verdict == Some(Verdict::Wrong) {
                counts.rejected_in_review += 1;
                continue;
            }
            let (entry, edited) = match state.and_then(|s| s.edited.as_ref()) {
                Some(edit) => (apply_edit(json, edit, &file, &entry.id)?, true),
                None => (entry, false),
            };
            if !filters.keeps(&entry, verdict) {
                counts.filtered_out += 1;
                continue;
            }
            counts.edited += usize::from(edited);
            rows.push(Row {
                entry,
                verdict,
                edited,
                file: file.clone(),
            });
        }
    }
    Ok(rows)
}

/// The manifest beside an entries file says how many entries and rejects the run
/// wrote; a file without one counts its entries only.
fn add_run_counts(file: &Path, counts: &mut SelectCounts) {
    let manifest = file.with_file_name("manifest.json");
    let m: Option<serde_json::Value> = std::fs::read(&manifest)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if let Some(m) = m {
        counts.run_entries += m["entries"].as_u64().unwrap_or(0) as usize;
        counts.run_rejects += m["rejects"].as_u64().unwrap_or(0) as usize;
    }
}

/// The entry with a reviewer's edit laid over it (the edit holds the fields it changes,
/// or the whole entry).
fn apply_edit(
    mut json: serde_json::Value,
    edit: &serde_json::Value,
    file: &Path,
    id: &str,
) -> Result<Entry, ExportError> {
    let bad = |what: String| ExportError::Bad {
        path: ReviewLog::beside(file),
        what,
    };
    let (Some(base), Some(fields)) = (json.as_object_mut(), edit.as_object()) else {
        return Err(bad(format!(
            "the edit of {id} is not a JSON object; fix it with the review tool"
        )));
    };
    for (k, v) in fields {
        base.insert(k.clone(), v.clone());
    }
    serde_json::from_value(json)
        .map_err(|e| bad(format!("the edit of {id} does not make an entry ({e})")))
}

/// How an export is written.
#[derive(Debug)]
pub struct ExportJob {
    /// The folder written (its format folders are replaced).
    pub out: PathBuf,
    pub formats: Vec<format::Format>,
    /// A system turn for every sample.
    pub system: Option<String>,
    pub style: render::TurnStyle,
    /// Share of groups' hash range going to validation.
    pub validation_share: f64,
    /// Near-duplicate similarity for the splits.
    pub threshold: f64,
    pub evals: Vec<decontam::EvalSpec>,
    /// The trees of each library version the entries name (and the trees their slices
    /// reach), by `(lib, version)`.
    pub trees: BTreeMap<(String, String), crate::slice::Trees>,
    pub licenses: Vec<card::License>,
}

/// What an export did: written as `export.json` and summed up on the card.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ExportReport {
    pub selected: SelectCounts,
    /// Entries dropped as overlapping an evaluation set.
    pub decontaminated: usize,
    pub eval: Vec<decontam::EvalReport>,
    /// Entries whose code no longer reads as pinned: id and why.
    pub not_rendered: Vec<(String, String)>,
    pub split: split::SplitReport,
    /// Rows per file written.
    pub written: BTreeMap<String, usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<mix::MixReport>,
}

/// Writes the rows out: decontaminate, render, split, then every format, the loader
/// configs, the card and the chart. Rows are written in id order, so the same rows give
/// the same bytes however they were read.
pub fn write_export(
    mut rows: Vec<Row>,
    job: &ExportJob,
    mut report: ExportReport,
) -> Result<ExportReport, ExportError> {
    use rayon::prelude::*;
    rows.sort_by(|a, b| a.entry.id.cmp(&b.entry.id));
    rows.dedup_by(|a, b| a.entry.id == b.entry.id);
    let evals = job
        .evals
        .iter()
        .map(decontam::load)
        .collect::<Result<Vec<_>, _>>()?;
    if !evals.is_empty() {
        let entries: Vec<&Entry> = rows.iter().map(|r| &r.entry).collect();
        let (dirty, reports) = decontam::check(&entries, &evals);
        report.eval = reports;
        report.decontaminated = dirty.iter().filter(|d| **d).count();
        let mut k = 0;
        rows.retain(|_| {
            k += 1;
            !dirty[k - 1]
        });
    }
    let empty = crate::slice::Trees::default();
    let turns: Vec<Result<render::UserTurn, String>> = rows
        .par_iter()
        .map(|r| {
            let trees = job
                .trees
                .get(&(r.entry.lib.clone(), r.entry.version.clone()))
                .unwrap_or(&empty);
            render::user_turn(&r.entry, trees, &job.style)
        })
        .collect();
    let mut kept = Vec::new();
    for (r, t) in rows.iter().zip(turns) {
        match t {
            Ok(user) => kept.push((r, user)),
            Err(why) => {
                tracing::warn!(id = %r.entry.id, file = %r.file.display(), "Code not shown as pinned; entry left out: {why}.");
                report.not_rendered.push((r.entry.id.clone(), why));
            }
        }
    }
    let entries: Vec<&Entry> = kept.iter().map(|(r, _)| &r.entry).collect();
    let (splits, split_report) = split::assign(&entries, job.validation_share, job.threshold);
    report.split = split_report;
    let samples: Vec<format::Sample> = kept
        .into_iter()
        .zip(splits)
        .map(|((row, user), split)| format::Sample {
            row,
            split,
            user,
            assistant: render::assistant_turn(&row.entry),
        })
        .collect();
    std::fs::create_dir_all(&job.out).map_err(io_err(&job.out, "create"))?;
    let system = job.system.as_deref();
    let present: Vec<split::Split> = split::Split::ALL
        .into_iter()
        .filter(|s| samples.iter().any(|x| x.split == *s))
        .collect();
    for f in &job.formats {
        let dir = job.out.join(f.name());
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io_err(&dir, "replace"))?;
        }
        for s in &present {
            let of_split: Vec<&format::Sample> = samples.iter().filter(|x| x.split == *s).collect();
            let path = job.out.join(f.file(*s));
            if *f == format::Format::Parquet {
                format::write_parquet(&path, &of_split, system)?;
            } else {
                let json: Vec<serde_json::Value> = of_split
                    .iter()
                    .map(|x| format::json_row(*f, x, system))
                    .collect();
                format::write_jsonl(&path, &json)?;
            }
            report.written.insert(f.file(*s), of_split.len());
        }
    }
    let info = format::dataset_info(&job.formats, &present, system.is_some());
    format::write_file(
        &job.out.join("dataset_info.json"),
        serde_json::to_string_pretty(&info)
            .expect("serializes")
            .as_bytes(),
    )?;
    if job.formats.contains(&format::Format::Openai) {
        format::write_file(
            &job.out.join("axolotl.yaml"),
            format::axolotl_snippet(&present).as_bytes(),
        )?;
    }
    let card_text = card::card(
        &job.out,
        &samples,
        &job.formats,
        system.is_some(),
        &job.licenses,
        &report,
    );
    card::write(&job.out, &card_text, &card::mix_svg(&samples))?;
    format::write_file(
        &job.out.join("export.json"),
        serde_json::to_string_pretty(&report)
            .expect("serializes")
            .as_bytes(),
    )?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        serde_json::from_value(serde_json::json!({
            "schema_version": 2, "id": "rocblas-0123456789abcdef", "lib": "rocblas",
            "version": "6.4.4",
            "source": {"origin": {"kind": "dir", "path": "x"}, "sha256": "0".repeat(64)},
            "family": "scal", "api": "rocblas_sscal", "apis": ["rocblas_sscal"],
            "variant": "", "call_path": [], "category": "semantics",
            "template_id": "facts-kernels", "template_version": 1, "difficulty": "L1",
            "question": "What does rocblas_sscal launch?", "answer": "A kernel.",
            "code": null, "citations": [], "slice_id": "s", "slice": [], "model": "",
            "params": {}, "prompt_sha256": "0".repeat(64),
            "usage": {"prompt_tokens": 0, "completion_tokens": 0},
            "validation": [], "generator": "facts", "tool": "rocqa 0.1.0"
        }))
        .unwrap()
    }

    #[test]
    fn filters_match_globs_and_review() {
        let e = entry();
        let f = Filters {
            template: vec!["facts-*".into()],
            generator: vec!["facts".into()],
            ..Default::default()
        }
        .compile()
        .unwrap();
        assert!(f.keeps(&e, None));
        let f = Filters {
            reviewed_only: true,
            ..Default::default()
        }
        .compile()
        .unwrap();
        assert!(!f.keeps(&e, None));
        assert!(f.keeps(&e, Some(Verdict::Weak)));
        let err = Filters {
            generator: vec!["fact".into()],
            ..Default::default()
        }
        .compile()
        .unwrap_err();
        assert!(err.contains("facts, mutation or llm"), "{err}");
    }

    #[test]
    fn an_edit_replaces_the_fields_it_holds() {
        let e = entry();
        let json = serde_json::to_value(&e).unwrap();
        let edited = apply_edit(
            json,
            &serde_json::json!({"answer": "One kernel, rocblas_scal_kernel."}),
            Path::new("out/entries.jsonl"),
            &e.id,
        )
        .unwrap();
        assert_eq!(edited.answer, "One kernel, rocblas_scal_kernel.");
        assert_eq!(edited.question, e.question);
    }
}
