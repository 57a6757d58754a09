//! Review: reviewers' decisions on entries, kept apart from the entries themselves, and
//! `rocqa review`, the terminal UI they are taken in.
//!
//! A review is the blind audit of `../shared/audit/RUBRIC.md` done in a tool: each
//! verdict (good / weak / wrong) goes to [`log`], the append-only hash-chained
//! `reviews.jsonl` beside the entries, synced on write, so a killed terminal loses
//! nothing and the next session resumes at the first entry not yet judged. Entries
//! files are only read.
//!
//! The UI is split as gitui splits its own: [`state`] holds the list, filters,
//! selection and pending input and turns each key into a transition; [`ui`] draws it;
//! [`app`] is the thin terminal loop. A spot check reads a [`sample`] (stratified,
//! riskiest first, seeded) until the [`bound`] on the share of wrong entries is low
//! enough; [`summary`] adds up the decisions, with the agreement of reviewers from
//! [`agree`].

pub mod agree;
pub mod app;
pub mod bound;
pub mod cited;
pub mod highlight;
pub mod log;
pub mod sample;
pub mod state;
pub mod summary;
pub mod ui;

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::config::Layout;
use log::ReviewLog;
use state::{Item, State, Validation};

/// `rocqa review`.
#[derive(Debug, clap::Args)]
pub struct ReviewArgs {
    /// A run folder (out/rocblas/6.4.4/) or an entries file; decisions go to
    /// reviews.jsonl beside it.
    pub path: PathBuf,
    /// Who decides (default: $USER).
    #[arg(long)]
    pub reviewer: Option<String>,
    /// Check the hash chain of reviews.jsonl and exit: 0 intact, 2 with the line that
    /// was changed.
    #[arg(long)]
    pub verify: bool,
    /// Print acceptance per category, library, generator and reviewer, the agreement
    /// of reviewers and the disagreements, and exit.
    #[arg(long)]
    pub summary: bool,
    /// With --summary: print JSON.
    #[arg(long)]
    pub json: bool,
    /// Spot check: review a stratified sample of N entries, riskiest first.
    #[arg(long)]
    pub sample: Option<usize>,
    /// The seed of the sample and of the blind overlap (shown in the UI).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Share the entries among these reviewers (comma-separated); --reviewer must be
    /// one of them and sees only the entries dealt to them.
    #[arg(long, value_delimiter = ',')]
    pub reviewers: Vec<String>,
    /// With --reviewers: the share of entries dealt to two reviewers, blind.
    #[arg(long, default_value_t = 0.2)]
    pub overlap: f64,
}

/// Prints to stdout; a closed pipe (`rocqa review --summary | head`) ends quietly.
fn print_out(text: &str) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

fn entries_file(path: &std::path::Path) -> PathBuf {
    if path.is_dir() {
        path.join("entries.jsonl")
    } else {
        path.to_path_buf()
    }
}

/// Runs `rocqa review`.
pub fn run(layout: &Layout, a: ReviewArgs) -> Result<i32> {
    let log_path = ReviewLog::beside(&a.path);
    if a.verify {
        let log = ReviewLog::open(&log_path)?;
        let last = log
            .records()
            .last()
            .map_or("none".to_string(), |r| r.hash.clone());
        print_out(&format!(
            "{}: {} records, hash chain intact; last hash {last}\n",
            log_path.display(),
            log.records().len()
        ));
        if log.torn_len() > 0 {
            print_out(&format!(
                "{}: the last {} bytes are a record cut short by a kill; the next decision writes over them\n",
                log_path.display(),
                log.torn_len()
            ));
        }
        return Ok(0);
    }
    let file = entries_file(&a.path);
    let entries: Vec<serde_json::Value> = crate::emit::read_jsonl(&file)?;
    if entries.is_empty() {
        bail!(
            "{}: no entries to review (run `rocqa extract` first, or name an entries file)",
            file.display()
        );
    }
    let log = ReviewLog::open(&log_path)?;
    if a.summary {
        let s = summary::summarize(&entries, &log);
        if a.json {
            print_out(&(serde_json::to_string_pretty(&s)? + "\n"));
        } else {
            print_out(&summary::render(&s));
        }
        return Ok(0);
    }
    let reviewer = match a.reviewer.clone().or_else(|| std::env::var("USER").ok()) {
        Some(r) if !r.trim().is_empty() => r,
        _ => bail!("no reviewer: pass --reviewer NAME or set $USER"),
    };
    let state = build_state(layout, &a, entries, &log, &reviewer, &file)?;
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        bail!("rocqa review needs a terminal (use --summary or --verify for text output)");
    }
    app::run(layout, state, log, cited::Cited::new(layout))?;
    Ok(0)
}

fn build_state(
    layout: &Layout,
    a: &ReviewArgs,
    entries: Vec<serde_json::Value>,
    log: &ReviewLog,
    reviewer: &str,
    file: &std::path::Path,
) -> Result<State> {
    let mut entries = entries;
    if !a.reviewers.is_empty() {
        let me = a
            .reviewers
            .iter()
            .position(|r| r == reviewer)
            .with_context(|| {
                format!(
                    "--reviewer {reviewer} is not one of --reviewers {}",
                    a.reviewers.join(",")
                )
            })?;
        if !(0.0..=1.0).contains(&a.overlap) {
            bail!("--overlap {} is not a share between 0 and 1", a.overlap);
        }
        entries.retain(|e| {
            sample::assigned_to(
                e["id"].as_str().unwrap_or(""),
                a.reviewers.len(),
                a.overlap,
                a.seed,
            )
            .contains(&me)
        });
    }
    let mut items: Vec<Item> = entries.into_iter().map(Item::new).collect();
    if let Some(n) = a.sample {
        let keys: Vec<sample::SampleKey> = items.iter().map(|i| i.key.clone()).collect();
        let order = sample::stratified(&keys, n, a.seed);
        let mut slots: Vec<Option<Item>> = items.into_iter().map(Some).collect();
        items = order.into_iter().filter_map(|k| slots[k].take()).collect();
    }
    let own = log.states_by(Some(reviewer));
    let mut cited = cited::Cited::new(layout);
    for it in &mut items {
        if it.validation == Validation::Ok {
            if let Err(why) = cited.check(&it.entry) {
                it.validation = Validation::Stale;
                it.validation_note = Some(why);
            }
        }
        if own.get(&it.hash).is_some_and(|s| s.edited.is_some()) {
            it.validation = Validation::Edited;
        }
    }
    let mut others: HashMap<String, Vec<(String, log::Verdict)>> = HashMap::new();
    for (hash, who) in log.verdicts() {
        for (r, v) in who {
            if r != reviewer {
                others.entry(hash.clone()).or_default().push((r, v));
            }
        }
    }
    let mut s = State::new(items, own, others, reviewer);
    s.seed = a.sample.map(|_| a.seed);
    s.source = file.display().to_string();
    Ok(s)
}
