//! `rocqa export` and `rocqa mix`: arguments become an [`ExportJob`], then one call to
//! [`crate::export::write_export`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::config::{Layout, ProjectFile};
use crate::export::format::Format;
use crate::export::{
    card, decontam, mix, render, select, ExportJob, ExportReport, Filters, Row, SelectCounts,
};
use crate::source;

use super::write_out;

/// `rocqa export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Entries files or run folders (default: every out/<lib>/<version>/entries.jsonl).
    pub entries: Vec<PathBuf>,
    /// Only entries a reviewer judged good or weak (wrong ones are always left out).
    #[arg(long)]
    pub reviewed_only: bool,
    /// Only these categories (repeat or comma-separate; globs allowed).
    #[arg(long, value_delimiter = ',')]
    pub category: Vec<String>,
    /// Only these difficulties (L1, L2, L3).
    #[arg(long, value_delimiter = ',')]
    pub difficulty: Vec<String>,
    /// Only these libraries.
    #[arg(long = "lib", value_delimiter = ',')]
    pub lib: Vec<String>,
    /// Only these library versions.
    #[arg(long = "lib-version", value_delimiter = ',')]
    pub lib_version: Vec<String>,
    /// Only these generators: facts, mutation, llm.
    #[arg(long, value_delimiter = ',')]
    pub generator: Vec<String>,
    /// Only these template ids (globs allowed: `facts-*`).
    #[arg(long, value_delimiter = ',')]
    pub template: Vec<String>,
    #[command(flatten)]
    pub out: OutArgs,
}

/// `rocqa mix`.
#[derive(Debug, Args)]
pub struct MixArgs {
    /// The mix file (TOML: seed, [[source]], [quota.FIELD], [weight.FIELD], [cap]).
    pub file: PathBuf,
    #[command(flatten)]
    pub out: OutArgs,
}

/// What both commands write, and how.
#[derive(Debug, Args)]
pub struct OutArgs {
    /// The export folder (its format folders are replaced).
    #[arg(long, default_value = "out/export")]
    pub out: PathBuf,
    /// Formats to write (repeat or comma-separate; default all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub format: Vec<Format>,
    /// A system turn for every sample.
    #[arg(long, conflicts_with = "extract_system")]
    pub system: Option<String>,
    /// The system prompt `extract` sends, as the system turn.
    #[arg(long)]
    pub extract_system: bool,
    /// The question alone in the user turn, without its code.
    #[arg(long)]
    pub question_only: bool,
    /// Tokens of code at most in a user turn (default: the slice limit of a prompt).
    #[arg(long, default_value_t = render::default_code_budget())]
    pub code_budget: usize,
    /// Share of API-family groups going to validation.
    #[arg(long, default_value_t = 0.1)]
    pub validation_share: f64,
    /// Similarity from which two entries are near-duplicates (kept on one side).
    #[arg(long, default_value_t = crate::validate::dedup::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// A held-out evaluation set, `FILE` or `FILE#SHA256` (pinned); entries overlapping
    /// it are left out and reported per set. Repeat for several.
    #[arg(long)]
    pub decontaminate: Vec<String>,
}

pub(super) fn run_export(layout: &Layout, a: ExportArgs) -> Result<i32> {
    let filters = Filters {
        reviewed_only: a.reviewed_only,
        category: a.category,
        difficulty: a.difficulty,
        lib: a.lib,
        version: a.lib_version,
        generator: a.generator,
        template: a.template,
    }
    .compile()
    .map_err(anyhow::Error::msg)?;
    let files = if a.entries.is_empty() {
        every_run(layout)?
    } else {
        a.entries.clone()
    };
    let mut counts = SelectCounts::default();
    let rows = select(&files, &filters, &mut counts)?;
    let report = ExportReport {
        selected: counts,
        ..Default::default()
    };
    finish(layout, rows, &a.out, None, report)
}

pub(super) fn run_mix(layout: &Layout, a: MixArgs) -> Result<i32> {
    let spec = mix::MixSpec::load(&a.file)?;
    let base = a.file.parent().map(PathBuf::from).unwrap_or_default();
    let mut counts = SelectCounts::default();
    let candidates = mix::candidates(&spec, &base, &mut counts)?;
    let (rows, mix_report) = mix::pick(&spec, &a.file.display().to_string(), candidates);
    for t in &mix_report.targets {
        if t.got + 1 < t.wanted {
            tracing::warn!(target = %t.what, wanted = t.wanted, got = t.got, available = t.available, "Target not met: too few candidates, or other targets and caps took them.");
        }
    }
    let report = ExportReport {
        selected: counts,
        mix: Some(mix_report),
        ..Default::default()
    };
    finish(layout, rows, &a.out, spec.validation_share, report)
}

/// Every `out/<lib>/<version>/entries.jsonl`.
fn every_run(layout: &Layout) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let out = layout.root.join("out");
    for lib in std::fs::read_dir(&out).with_context(|| {
        format!(
            "{}: no runs to export; run `rocqa extract` first or name entries files",
            out.display()
        )
    })? {
        let lib = lib?.path();
        if !lib.is_dir() {
            continue;
        }
        for v in std::fs::read_dir(&lib)? {
            let f = v?.path().join("entries.jsonl");
            if f.is_file() {
                files.push(f);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        bail!("{}: no out/<lib>/<version>/entries.jsonl; run `rocqa extract` first or name entries files", out.display());
    }
    Ok(files)
}

fn finish(
    layout: &Layout,
    rows: Vec<Row>,
    o: &OutArgs,
    share: Option<f64>,
    report: ExportReport,
) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    let validation_share = share.unwrap_or(o.validation_share);
    if !(0.0..1.0).contains(&validation_share) {
        bail!("--validation-share {validation_share}: give a share in [0, 1)");
    }
    // Each library version the rows name, with the tree its slices may reach.
    let pairs: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r.entry.lib.clone(), r.entry.version.clone()))
        .collect();
    let mut trees = BTreeMap::new();
    let mut licensed: BTreeMap<String, String> = BTreeMap::new();
    for (lib, version) in &pairs {
        let mut t = crate::slice::Trees::default();
        let mut libs = vec![(lib.clone(), version.clone())];
        libs.extend(super::pair_of(&project, lib, version)?);
        for (l, v) in libs {
            t.add(&l, &source::tree_path(&layout.sources(), &l, &v)?);
            let shows = rows.iter().any(|r| {
                r.entry.lib == *lib
                    && r.entry.version == *version
                    && r.entry.slice.iter().any(|p| p.lib == l)
            });
            if shows {
                licensed.insert(l, v);
            }
        }
        trees.insert((lib.clone(), version.clone()), t);
    }
    let mut licenses = Vec::new();
    for (l, v) in &licensed {
        licenses.push(card::read_license(
            l,
            v,
            &source::tree_path(&layout.sources(), l, v)?,
        )?);
    }
    let evals = o
        .decontaminate
        .iter()
        .map(|s| s.parse::<decontam::EvalSpec>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let job = ExportJob {
        out: if o.out.is_absolute() {
            o.out.clone()
        } else {
            std::env::current_dir()?.join(&o.out)
        },
        formats: if o.format.is_empty() {
            Format::ALL.to_vec()
        } else {
            o.format.clone()
        },
        system: if o.extract_system {
            Some(crate::question::SYSTEM_PROMPT.to_string())
        } else {
            o.system.clone()
        },
        style: render::TurnStyle {
            question_only: o.question_only,
            code_budget: o.code_budget,
        },
        validation_share,
        threshold: o.threshold,
        evals,
        trees,
        licenses,
    };
    let r = crate::export::write_export(rows, &job, report)?;
    say!(
        "{} entries read, {} left out as wrong in review, {} by filters{}",
        r.selected.read,
        r.selected.rejected_in_review,
        r.selected.filtered_out,
        r.mix.as_ref().map_or(String::new(), |m| format!(
            ", {} picked by the mix from {} candidates",
            m.picked, m.candidates
        ))
    );
    for e in &r.eval {
        say!(
            "decontamination against {} ({} items, sha256 {}): {} by question, {} by answer, {} by paraphrase",
            e.file,
            e.items,
            &e.sha256[..12],
            e.found.get("question").unwrap_or(&0),
            e.found.get("answer").unwrap_or(&0),
            e.found.get("paraphrase").unwrap_or(&0)
        );
    }
    if !r.not_rendered.is_empty() {
        say!(
            "{} entries left out: their code no longer reads as pinned (see -v)",
            r.not_rendered.len()
        );
    }
    say!(
        "splits: {} train, {} validation, in {} groups ({} joined by a shared kernel, {} by a near-duplicate pair)",
        r.split.counts.get("train").unwrap_or(&0),
        r.split.counts.get("validation").unwrap_or(&0),
        r.split.groups,
        r.split.kernel_joins,
        r.split.near_duplicate_joins
    );
    say!(
        "wrote {} files into {}: {}",
        r.written.len(),
        job.out.display(),
        r.written.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    let written: usize = r.split.counts.values().sum();
    Ok(if written == 0 { 1 } else { 0 })
}
