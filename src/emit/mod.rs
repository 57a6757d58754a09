//! The `emit` stage: `entries.jsonl`, `rejects.jsonl` and `manifest.json` of one run.
//!
//! Takes validated entries and rejects one at a time; gives append-only JSONL files,
//! one record per line, flushed as each record arrives. A run that is killed leaves
//! whole lines (a torn last line is cut off when the files are opened again), and the
//! ids already written are skipped by the next run: no duplicate, nothing lost. The
//! manifest is computed from the files themselves, so it is right for resumed and
//! merged runs alike.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{Entry, Reject};

/// The JSON Schema of one `entries.jsonl` line: the contract for training stacks.
pub const ENTRY_SCHEMA: &str = include_str!("entry.schema.json");

/// Output could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// File system trouble.
    #[error("{path}: cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// A line that is not a record (not the torn last line, which is repaired).
    #[error("{path}: line {line}: not a valid record: {message}; fix or delete that line")]
    BadLine {
        /// File.
        path: String,
        /// Line number.
        line: usize,
        /// What serde said.
        message: String,
    },
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> EmitError + 'a {
    move |source| EmitError::Io {
        action,
        path: path.display().to_string(),
        source,
    }
}

/// The output folder of one run, open for appending.
pub struct RunOutput {
    dir: PathBuf,
    entries: File,
    rejects: File,
    done: HashSet<String>,
}

impl RunOutput {
    /// Opens (creating) `dir/entries.jsonl` and `dir/rejects.jsonl`, repairing a torn
    /// last line and collecting the ids already there.
    pub fn open(dir: &Path) -> Result<RunOutput, EmitError> {
        std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        let mut done = HashSet::new();
        let e = dir.join("entries.jsonl");
        let r = dir.join("rejects.jsonl");
        for id in repair_and_ids(&e)?.into_iter().chain(repair_and_ids(&r)?) {
            done.insert(id);
        }
        // Questions the endpoint failed to answer (timeouts, outages) are asked again:
        // their rejects are dropped so the retry does not leave two records.
        for id in drop_retryable(&r)? {
            done.remove(&id);
        }
        let open = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(io("open", p))
        };
        Ok(RunOutput {
            dir: dir.to_path_buf(),
            entries: open(&e)?,
            rejects: open(&r)?,
            done,
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Has this id been written (as entry or reject) already?
    pub fn is_done(&self, id: &str) -> bool {
        self.done.contains(id)
    }

    /// Ids already written.
    pub fn done_count(&self) -> usize {
        self.done.len()
    }

    /// Appends an entry (one line, flushed).
    pub fn write_entry(&mut self, e: &Entry) -> Result<(), EmitError> {
        let line = serde_json::to_string(e).expect("entries serialize");
        let path = self.dir.join("entries.jsonl");
        writeln!(self.entries, "{line}").map_err(io("write", &path))?;
        self.entries.flush().map_err(io("write", &path))?;
        self.done.insert(e.id.clone());
        Ok(())
    }

    /// Takes out of `entries.jsonl` the entries `stale` picks: entries rendered without
    /// a model by an earlier version of the renderer, which this run renders otherwise
    /// (they would sit beside their rewording). The file is written whole beside and
    /// renamed over it, so a kill leaves the old file or the new one. Returns how many.
    pub fn retire(&mut self, stale: impl Fn(&EntryKey) -> bool) -> Result<usize, EmitError> {
        let path = self.dir.join("entries.jsonl");
        let Some(bytes) = read_existing(&path)? else {
            return Ok(0);
        };
        let mut keep: Vec<u8> = Vec::with_capacity(bytes.len());
        let mut gone = Vec::new();
        for (k, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let key: EntryKey = parse_line(&path, k, line)?;
            if stale(&key) {
                gone.push(key.id);
            } else {
                keep.extend_from_slice(line);
            }
        }
        if gone.is_empty() {
            return Ok(0);
        }
        let tmp = path.with_extension("jsonl.tmp");
        std::fs::write(&tmp, &keep).map_err(io("write", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(io("write", &path))?;
        self.entries = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        for id in &gone {
            self.done.remove(id);
        }
        Ok(gone.len())
    }

    /// Appends a reject (one line, flushed).
    pub fn write_reject(&mut self, r: &Reject) -> Result<(), EmitError> {
        let line = serde_json::to_string(r).expect("rejects serialize");
        let path = self.dir.join("rejects.jsonl");
        writeln!(self.rejects, "{line}").map_err(io("write", &path))?;
        self.rejects.flush().map_err(io("write", &path))?;
        self.done.insert(r.id.clone());
        Ok(())
    }
}

#[derive(Deserialize)]
struct IdOnly {
    id: String,
}

/// What [`RunOutput::retire`] tells entries apart by.
#[derive(Debug, Deserialize)]
pub struct EntryKey {
    /// The entry's id.
    pub id: String,
    /// Its API family.
    #[serde(default)]
    pub family: String,
    /// What wrote it (`llm`, `facts`, `mutation`).
    #[serde(default)]
    pub generator: String,
}

/// Line `k` (0-based) of an output file read as a record; an error names the file and line.
fn parse_line<T: for<'de> Deserialize<'de>>(
    path: &Path,
    k: usize,
    line: &[u8],
) -> Result<T, EmitError> {
    serde_json::from_slice(line).map_err(|e| EmitError::BadLine {
        path: path.display().to_string(),
        line: k + 1,
        message: e.to_string(),
    })
}

/// Cuts a torn last line (a kill mid-write) and returns the ids of the whole lines.
fn repair_and_ids(path: &Path) -> Result<Vec<String>, EmitError> {
    let Some(bytes) = read_existing(path)? else {
        return Ok(Vec::new());
    };
    let whole = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|p| p + 1)
        .unwrap_or(0);
    if whole < bytes.len() {
        tracing::warn!(file = %path.display(), bytes = bytes.len() - whole, "Cut a torn last line left by an interrupted run.");
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io("repair", path))?;
        f.set_len(whole as u64).map_err(io("repair", path))?;
    }
    let mut ids = Vec::new();
    for (k, line) in bytes[..whole].split(|b| *b == b'\n').enumerate() {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let rec: IdOnly = parse_line(path, k, line)?;
        ids.push(rec.id);
    }
    Ok(ids)
}

/// Removes `stage = "llm"` rejects from a rejects file; returns their ids.
fn drop_retryable(path: &Path) -> Result<Vec<String>, EmitError> {
    let Some(bytes) = read_existing(path)? else {
        return Ok(Vec::new());
    };
    let text = String::from_utf8(bytes).map_err(|e| io("read", path)(std::io::Error::other(e)))?;
    let mut keep = String::with_capacity(text.len());
    let mut dropped = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        if v.get("stage").and_then(|s| s.as_str()) == Some("llm") {
            dropped.push(
                v.get("id")
                    .and_then(|s| s.as_str())
                    .unwrap_or_default()
                    .to_string(),
            );
        } else {
            keep.push_str(line);
            keep.push('\n');
        }
    }
    if !dropped.is_empty() {
        let tmp = path.with_extension("jsonl.tmp");
        std::fs::write(&tmp, keep).map_err(io("write", &tmp))?;
        std::fs::rename(&tmp, path).map_err(io("write", path))?;
    }
    Ok(dropped)
}

/// The bytes of an output file that may not exist yet: `None` when it does not. Any
/// other read error is an error, never an empty file, and only a regular file is read
/// (a device such as `/dev/full` never ends).
pub fn read_existing(path: &Path) -> Result<Option<Vec<u8>>, EmitError> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path)(e)),
        Ok(m) if !m.is_file() => {
            return Err(io("read", path)(std::io::Error::other(
                "not a regular file; give a path to a .jsonl file",
            )))
        }
        Ok(_) => {}
    }
    std::fs::read(path).map(Some).map_err(io("read", path))
}

/// Reads every record of a JSONL file (none when it does not exist).
pub fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, EmitError> {
    let Some(bytes) = read_existing(path)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (k, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        out.push(
            serde_json::from_slice(line).map_err(|e| EmitError::BadLine {
                path: path.display().to_string(),
                line: k + 1,
                message: e.to_string(),
            })?,
        );
    }
    Ok(out)
}

/// Where a record breaks the entry schema: `field: what`, empty when it conforms.
pub fn schema_violations(record: &serde_json::Value) -> Vec<String> {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let v = VALIDATOR.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(ENTRY_SCHEMA).expect("entry.schema.json is JSON");
        jsonschema::validator_for(&schema).expect("entry.schema.json is a valid schema")
    });
    // Entries are almost always valid, and asking so is cheaper than listing errors.
    if v.is_valid(record) {
        return Vec::new();
    }
    v.iter_errors(record)
        .map(|e| {
            let at = e.instance_path.to_string();
            format!("{}: {e}", if at.is_empty() { "/" } else { &at })
        })
        .collect()
}

/// What a run produced, computed from its files.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout version of this file.
    pub schema_version: u32,
    /// Library.
    pub lib: String,
    /// Version.
    pub version: String,
    /// `rocqa <version>`.
    pub generator: String,
    /// Model and parameters (none for a dry run).
    pub model: Option<String>,
    /// Parameters that change answers.
    pub params: serde_json::Value,
    /// True when nothing was sent to a model.
    pub dry_run: bool,
    /// `I/N` when the run was one shard of several.
    pub shards: Vec<String>,
    /// Entries written.
    pub entries: usize,
    /// Rejects written.
    pub rejects: usize,
    /// Entries per category.
    pub by_category: BTreeMap<String, usize>,
    /// Entries per difficulty.
    pub by_difficulty: BTreeMap<String, usize>,
    /// Entries per API family.
    pub by_family: BTreeMap<String, usize>,
    /// Rejects per reason.
    pub reject_reasons: BTreeMap<String, usize>,
    /// Questions planned (prompts), per category.
    pub prompts_by_category: BTreeMap<String, usize>,
    /// Questions planned, per family.
    pub prompts_by_family: BTreeMap<String, usize>,
    /// Prompt tokens planned (counted locally).
    pub planned_prompt_tokens: usize,
    /// Coverage of the in-scope API families.
    pub coverage: Coverage,
    /// Tokens the endpoint reported.
    pub usage: crate::model::TokenUsage,
    /// LLM client totals (requests, cache hits, retries, failures).
    pub llm: serde_json::Value,
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
    /// rocqa's own CPU (every thread; the compiler's processes not counted) while this
    /// invocation asked for answers, checked and wrote them, in milliseconds: the cost
    /// of the answers apart from the fixed part every run pays (index, facts, slices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_cpu_ms: Option<u64>,
    /// Tools involved and their versions.
    pub toolchain: BTreeMap<String, String>,
    /// How the questions were planned (slices, targets, repeats, tokens, cache).
    #[serde(default)]
    pub planning: Planning,
    /// Fact entries (generator `facts`), when the run wrote any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact_entries: Option<crate::model::FactEntriesReport>,
    /// Find-the-bug entries answered from their planted bugs (no model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_entries: Option<crate::model::ReferenceEntriesReport>,
    /// Claims of this run's LLM answers compared with the facts of their APIs
    /// (`contradicts-code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact_check: Option<crate::model::FactCheckCount>,
    /// This run's repair requests: answers that failed on form only, asked once more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repairs: Option<crate::model::RepairCount>,
}

/// Planning figures of a run, written by every run and the point of a dry run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Planning {
    /// Slices asked about.
    pub slices: usize,
    /// Slices merged into an identical one (their APIs listed there).
    pub identical_slices_merged: usize,
    /// Slices that nearly repeat another family's (asked only what tells them apart).
    pub twin_slices: usize,
    /// Questions not asked, by template and reason.
    pub not_asked: BTreeMap<String, usize>,
    /// Questions per difficulty.
    pub prompts_by_difficulty: BTreeMap<String, usize>,
    /// Questions naming a target kernel, by the kernel's size in lines.
    pub target_kernel_lines: BTreeMap<String, usize>,
    /// Questions that repeat another question's exact text.
    pub duplicate_question_texts: usize,
    /// Mean prompt tokens per question, one request per question.
    pub prompt_tokens_per_question: usize,
    /// Prompt tokens if every slice's questions go in one request (`--group-questions`).
    pub grouped_prompt_tokens: usize,
    /// Share of prompt tokens an LRU prefix cache of `prefix_cache_tokens` would serve,
    /// in the planned order (percent).
    pub prefix_cache_share: f64,
    /// The cache size assumed.
    pub prefix_cache_tokens: usize,
}

/// Which in-scope families the run covers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Coverage {
    /// In-scope API families.
    pub in_scope: usize,
    /// Of those, with at least one prompt planned.
    pub with_prompts: usize,
    /// Of those, with at least one entry.
    pub with_entries: usize,
    /// `with_prompts / in_scope`, percent.
    pub prompts_percent: f64,
    /// `with_entries / in_scope`, percent.
    pub entries_percent: f64,
    /// In-scope families without any prompt, and why.
    pub without_prompts: BTreeMap<String, String>,
}

impl Manifest {
    /// Sets the LLM totals to this run's plus those of the earlier runs into `dir` (its
    /// manifest's), so they count every run as the entry and reject counts do.
    pub fn add_llm_totals(&mut self, dir: &Path, run: serde_json::Value) -> Result<(), EmitError> {
        let path = dir.join("manifest.json");
        let earlier = read_existing(&path)?
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|m| m.get("llm").cloned());
        let mut total = run;
        if let (Some(serde_json::Value::Object(old)), serde_json::Value::Object(now)) =
            (earlier, &mut total)
        {
            for (k, v) in now.iter_mut() {
                if let (Some(a), Some(b)) = (v.as_u64(), old.get(k).and_then(|o| o.as_u64())) {
                    *v = (a + b).into();
                }
            }
        }
        self.llm = total;
        Ok(())
    }

    /// Fills the counts from the run's files.
    pub fn count_outputs(&mut self, dir: &Path) -> Result<(), EmitError> {
        let entries: Vec<Entry> = read_jsonl(&dir.join("entries.jsonl"))?;
        let rejects: Vec<Reject> = read_jsonl(&dir.join("rejects.jsonl"))?;
        self.entries = entries.len();
        self.rejects = rejects.len();
        self.by_category.clear();
        self.by_difficulty.clear();
        self.by_family.clear();
        self.reject_reasons.clear();
        let mut usage = crate::model::TokenUsage::default();
        for e in &entries {
            *self.by_category.entry(e.category.clone()).or_default() += 1;
            *self.by_difficulty.entry(e.difficulty.clone()).or_default() += 1;
            *self.by_family.entry(e.family.clone()).or_default() += 1;
            usage.prompt_tokens += e.usage.prompt_tokens;
            usage.completion_tokens += e.usage.completion_tokens;
        }
        for r in &rejects {
            *self
                .reject_reasons
                .entry(format!("{}:{}", r.stage, r.reason))
                .or_default() += 1;
            usage.prompt_tokens += r.usage.prompt_tokens;
            usage.completion_tokens += r.usage.completion_tokens;
        }
        self.usage = usage;
        let fams: BTreeSet<&str> = entries.iter().map(|e| e.family.as_str()).collect();
        self.coverage.with_entries = fams.len();
        self.coverage.entries_percent = percent(fams.len(), self.coverage.in_scope);
        Ok(())
    }

    /// Writes `manifest.json` (write, then rename).
    pub fn write(&self, dir: &Path) -> Result<(), EmitError> {
        let p = dir.join("manifest.json");
        let tmp = dir.join("manifest.json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_string_pretty(self).expect("manifest serializes"),
        )
        .map_err(io("write", &tmp))?;
        std::fs::rename(&tmp, &p).map_err(io("write", &p))
    }
}

/// `a / b` in percent (0 when b is 0).
pub fn percent(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Joins shard outputs into one run folder: records deduplicated by id (first wins),
/// in shard order; returns (entries, rejects) written.
pub fn merge(shards: &[PathBuf], out: &Path) -> Result<(usize, usize), EmitError> {
    std::fs::create_dir_all(out).map_err(io("create", out))?;
    let mut counts = (0, 0);
    for (name, slot) in [("entries.jsonl", 0), ("rejects.jsonl", 1)] {
        let mut seen = HashSet::new();
        let mut text = String::new();
        for s in shards {
            let recs: Vec<serde_json::Value> = read_jsonl(&s.join(name))?;
            for r in recs {
                let id = r
                    .get("id")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                if seen.insert(id) {
                    text.push_str(&serde_json::to_string(&r).expect("json"));
                    text.push('\n');
                    if slot == 0 {
                        counts.0 += 1;
                    } else {
                        counts.1 += 1;
                    }
                }
            }
        }
        let p = out.join(name);
        std::fs::write(&p, text).map_err(io("write", &p))?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_last_line_is_cut_and_ids_survive() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("entries.jsonl");
        std::fs::write(&p, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\",\"answ").unwrap();
        let out = RunOutput::open(d.path()).unwrap();
        assert!(out.is_done("a") && out.is_done("b") && !out.is_done("c"));
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"id\":\"a\"}\n{\"id\":\"b\"}\n"
        );
    }

    #[test]
    fn endpoint_failures_are_asked_again() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rejects.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"a\",\"stage\":\"llm\"}\n{\"id\":\"b\",\"stage\":\"validate\"}\n",
        )
        .unwrap();
        let out = RunOutput::open(d.path()).unwrap();
        assert!(!out.is_done("a") && out.is_done("b"));
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"id\":\"b\",\"stage\":\"validate\"}\n"
        );
    }

    #[test]
    fn a_bad_middle_line_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("rejects.jsonl"), "{\"id\":\"a\"}\nnot json\n").unwrap();
        let e = RunOutput::open(d.path()).err().unwrap().to_string();
        assert!(
            e.contains("rejects.jsonl: line 2: not a valid record"),
            "{e}"
        );
    }

    #[test]
    fn schema_is_valid_json() {
        let v: serde_json::Value = serde_json::from_str(ENTRY_SCHEMA).unwrap();
        assert_eq!(v["type"], "object");
    }

    #[test]
    fn schema_lists_the_categories_templates_may_have() {
        let v: serde_json::Value = serde_json::from_str(ENTRY_SCHEMA).unwrap();
        let listed: Vec<&str> = v["properties"]["category"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(listed, crate::model::CATEGORIES);
    }
}
