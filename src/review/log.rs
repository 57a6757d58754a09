//! The review log: `reviews.jsonl` beside an entries file, one decision a line.
//!
//! Append-only and hash-chained: each record carries the hash of the one before it and
//! its own hash over everything else it says, so an edited, removed or reordered line
//! breaks the chain at that line ([`ReviewLog::open`] names it). Each append is synced
//! before it returns, so killing the reviewer's terminal loses no decision.
//!
//! A decision is tied to the entry's *content* ([`entry_hash`]: question, answer, code
//! and the hashes of the cited lines), not to its id: it follows the entry through a
//! refresh while that content is unchanged, and no longer applies once the cited code
//! or the text changed. Every reader of decisions (the review UI, `rocqa export`)
//! asks [`ReviewLog::states`].

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The file name of the log, beside `entries.jsonl`.
pub const FILE_NAME: &str = "reviews.jsonl";

/// The hash of the first record's `prev`.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("{path}: {action}: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {what}; the review log was changed by hand or is damaged (restore it from a copy; rocqa only appends to it)")]
    Broken {
        path: PathBuf,
        line: usize,
        what: String,
    },
}

/// A verdict, as `../shared/audit/RUBRIC.md` defines them (wrong covers broken prompts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Good,
    Weak,
    Wrong,
}

/// What a record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Sets the entry's verdict (the last one counts).
    Verdict,
    /// Marks the entry for a second look; a later verdict clears it.
    Flag,
    /// Adds a note.
    Note,
    /// Replaces the entry's text by `edited` (validated again before it was logged).
    Edit,
}

/// What a reviewer decided, before the log numbers and chains it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub entry_id: String,
    pub entry_hash: String,
    pub action: Action,
    pub verdict: Option<Verdict>,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub edited: Option<serde_json::Value>,
    pub reviewer: String,
}

/// One line of `reviews.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewRecord {
    pub seq: u64,
    /// The `hash` of the record before (zeros for the first).
    pub prev: String,
    /// Seconds since the Unix epoch.
    pub time: u64,
    pub reviewer: String,
    pub entry_id: String,
    pub entry_hash: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<serde_json::Value>,
    /// SHA-256 of this record serialized with `hash` empty.
    pub hash: String,
}

impl ReviewRecord {
    fn computed_hash(&self) -> String {
        let mut unhashed = self.clone();
        unhashed.hash = String::new();
        let text = serde_json::to_string(&unhashed).expect("records serialize");
        format!("{:x}", Sha256::digest(text.as_bytes()))
    }
}

/// The content a decision is about: question, answer, code and the hash of each cited
/// range (the cited code itself, wherever its lines moved). Entries are read as JSON so
/// that any entries file (an older schema, an export) can be reviewed.
pub fn entry_hash(entry: &serde_json::Value) -> String {
    let mut h = Sha256::new();
    for field in ["question", "answer", "code"] {
        h.update(field.as_bytes());
        h.update([0]);
        h.update(entry[field].as_str().unwrap_or("").as_bytes());
        h.update([0]);
    }
    if let Some(citations) = entry["citations"].as_array() {
        for c in citations {
            h.update(c["sha256"].as_str().unwrap_or("").as_bytes());
            h.update([0]);
        }
    }
    format!("{:x}", h.finalize())
}

/// Where an entry stands after every record about it, in log order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewState {
    pub verdict: Option<Verdict>,
    pub reason: Option<String>,
    pub reviewer: Option<String>,
    pub flagged: bool,
    pub notes: Vec<String>,
    /// The edited entry, when an edit was logged.
    pub edited: Option<serde_json::Value>,
}

/// An open review log.
#[derive(Debug)]
pub struct ReviewLog {
    path: PathBuf,
    records: Vec<ReviewRecord>,
    /// Bytes of the file that hold whole records.
    whole_len: u64,
    /// Bytes after them: a last record a kill cut short.
    torn_len: u64,
}

impl ReviewLog {
    /// The log beside an entries file (or in a run folder).
    pub fn beside(entries: &Path) -> PathBuf {
        if entries.is_dir() {
            entries.join(FILE_NAME)
        } else {
            entries.parent().unwrap_or(Path::new(".")).join(FILE_NAME)
        }
    }

    /// Reads and verifies the log at `path` (a missing file is an empty log). A last
    /// line without its newline is a write a kill cut short: it is left out, and the
    /// next append writes over it.
    pub fn open(path: &Path) -> Result<ReviewLog, ReviewError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(ReviewError::Io {
                    path: path.to_path_buf(),
                    action: "read",
                    source,
                })
            }
        };
        let whole = match text.rfind('\n') {
            Some(end) => &text[..=end],
            None => "",
        };
        let mut records: Vec<ReviewRecord> = Vec::new();
        for (i, line) in whole.lines().enumerate() {
            let broken = |what: String| ReviewError::Broken {
                path: path.to_path_buf(),
                line: i + 1,
                what,
            };
            let r: ReviewRecord = serde_json::from_str(line)
                .map_err(|e| broken(format!("not a review record ({e})")))?;
            let prev = records.last().map_or(GENESIS, |p| p.hash.as_str());
            if r.seq != records.len() as u64 {
                return Err(broken(format!(
                    "seq {} where {} was due",
                    r.seq,
                    records.len()
                )));
            }
            if r.prev != prev {
                return Err(broken("prev is not the hash of the line before".into()));
            }
            if r.computed_hash() != r.hash {
                return Err(broken("the record does not match its hash".into()));
            }
            records.push(r);
        }
        Ok(ReviewLog {
            path: path.to_path_buf(),
            records,
            whole_len: whole.len() as u64,
            torn_len: (text.len() - whole.len()) as u64,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn records(&self) -> &[ReviewRecord] {
        &self.records
    }

    /// Bytes of a last record cut short by a kill (left out; the next append writes
    /// over them).
    pub fn torn_len(&self) -> u64 {
        self.torn_len
    }

    /// Appends a decision: numbered, chained, written as one line and synced to disk.
    pub fn append(&mut self, d: Decision) -> Result<&ReviewRecord, ReviewError> {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_secs());
        let mut r = ReviewRecord {
            seq: self.records.len() as u64,
            prev: self
                .records
                .last()
                .map_or(GENESIS.to_string(), |p| p.hash.clone()),
            time,
            reviewer: d.reviewer,
            entry_id: d.entry_id,
            entry_hash: d.entry_hash,
            action: d.action,
            verdict: d.verdict,
            reason: d.reason,
            note: d.note,
            edited: d.edited,
            hash: String::new(),
        };
        r.hash = r.computed_hash();
        let io = |action| {
            let path = self.path.clone();
            move |source| ReviewError::Io {
                path,
                action,
                source,
            }
        };
        let mut f: File = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.path)
            .map_err(io("open"))?;
        // A record cut short by a kill is written over.
        f.set_len(self.whole_len).map_err(io("truncate"))?;
        f.seek(SeekFrom::Start(self.whole_len))
            .map_err(io("seek"))?;
        let mut line = serde_json::to_string(&r).expect("records serialize");
        line.push('\n');
        f.write_all(line.as_bytes()).map_err(io("write"))?;
        f.sync_data().map_err(io("sync"))?;
        self.whole_len += line.len() as u64;
        self.torn_len = 0;
        self.records.push(r);
        Ok(self.records.last().expect("just pushed"))
    }

    /// Each reviewed entry's state, by [`entry_hash`].
    pub fn states(&self) -> HashMap<String, ReviewState> {
        self.states_by(None)
    }

    /// Each entry's state after one reviewer's records only (all records for `None`):
    /// what a reviewer of a blind overlap sees of their own work.
    pub fn states_by(&self, reviewer: Option<&str>) -> HashMap<String, ReviewState> {
        let mut out: HashMap<String, ReviewState> = HashMap::new();
        for r in &self.records {
            if reviewer.is_some_and(|who| who != r.reviewer) {
                continue;
            }
            let s = out.entry(r.entry_hash.clone()).or_default();
            match r.action {
                Action::Verdict => {
                    s.verdict = r.verdict;
                    s.reason = r.reason.clone();
                    s.reviewer = Some(r.reviewer.clone());
                    s.flagged = false;
                }
                Action::Flag => s.flagged = true,
                Action::Note => s.notes.extend(r.note.clone()),
                Action::Edit => s.edited = r.edited.clone(),
            }
        }
        out
    }

    /// The verdict each reviewer stands by on each entry (their last), by
    /// [`entry_hash`], then reviewer.
    pub fn verdicts(&self) -> BTreeMap<String, BTreeMap<String, Verdict>> {
        let mut out: BTreeMap<String, BTreeMap<String, Verdict>> = BTreeMap::new();
        for r in &self.records {
            if let (Action::Verdict, Some(v)) = (r.action, r.verdict) {
                out.entry(r.entry_hash.clone())
                    .or_default()
                    .insert(r.reviewer.clone(), v);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(id: &str, action: Action, verdict: Option<Verdict>) -> Decision {
        Decision {
            entry_id: id.into(),
            entry_hash: entry_hash(&serde_json::json!({"question": id, "answer": "a"})),
            action,
            verdict,
            reason: None,
            note: None,
            edited: None,
            reviewer: "r1".into(),
        }
    }

    #[test]
    fn appends_reopen_and_last_verdict_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut log = ReviewLog::open(&path).unwrap();
        log.append(decision("a", Action::Verdict, Some(Verdict::Wrong)))
            .unwrap();
        log.append(decision("a", Action::Flag, None)).unwrap();
        log.append(decision("b", Action::Verdict, Some(Verdict::Good)))
            .unwrap();
        log.append(decision("a", Action::Verdict, Some(Verdict::Weak)))
            .unwrap();
        let log = ReviewLog::open(&path).unwrap();
        assert_eq!(log.records().len(), 4);
        let states = log.states();
        let a = &states[&entry_hash(&serde_json::json!({"question": "a", "answer": "a"}))];
        assert_eq!(a.verdict, Some(Verdict::Weak));
        assert!(!a.flagged, "a verdict after the flag clears it");
    }

    #[test]
    fn an_edited_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut log = ReviewLog::open(&path).unwrap();
        for id in ["a", "b", "c"] {
            log.append(decision(id, Action::Verdict, Some(Verdict::Wrong)))
                .unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let tampered = text.replacen("\"wrong\"", "\"good\"", 2);
        std::fs::write(&path, tampered).unwrap();
        let err = ReviewLog::open(&path).unwrap_err().to_string();
        assert!(err.contains("reviews.jsonl:1:"), "{err}");
        // A removed line breaks the chain at the line after it.
        let lines: Vec<&str> = text.lines().collect();
        std::fs::write(&path, format!("{}\n{}\n", lines[0], lines[2])).unwrap();
        let err = ReviewLog::open(&path).unwrap_err().to_string();
        assert!(err.contains("reviews.jsonl:2:"), "{err}");
    }

    #[test]
    fn a_record_cut_by_a_kill_is_left_out_and_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut log = ReviewLog::open(&path).unwrap();
        log.append(decision("a", Action::Verdict, Some(Verdict::Good)))
            .unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"seq\":1,\"prev\":").unwrap();
        let mut log = ReviewLog::open(&path).unwrap();
        assert_eq!(log.records().len(), 1);
        log.append(decision("b", Action::Verdict, Some(Verdict::Good)))
            .unwrap();
        let log = ReviewLog::open(&path).unwrap();
        assert_eq!(log.records().len(), 2, "the torn record is written over");
    }

    #[test]
    fn decisions_follow_unchanged_content_and_drop_when_cited_code_changed() {
        let entry = serde_json::json!({"id": "rocblas-1", "question": "q", "answer": "a",
            "citations": [{"file": "k.hpp", "start": 3, "end": 9, "sha256": "aa"}]});
        // A refresh gives the entry a new id and moves its lines: same content, same key.
        let mut refreshed = entry.clone();
        refreshed["id"] = "rocblas-2".into();
        refreshed["citations"][0]["start"] = 13.into();
        refreshed["citations"][0]["end"] = 19.into();
        assert_eq!(entry_hash(&entry), entry_hash(&refreshed));
        let mut code_changed = entry.clone();
        code_changed["citations"][0]["sha256"] = "bb".into();
        assert_ne!(entry_hash(&entry), entry_hash(&code_changed));
    }

    #[test]
    fn each_reviewer_sees_their_own_state() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut log = ReviewLog::open(&path).unwrap();
        let mut d = decision("a", Action::Verdict, Some(Verdict::Good));
        log.append(d.clone()).unwrap();
        d.reviewer = "r2".into();
        d.verdict = Some(Verdict::Wrong);
        log.append(d.clone()).unwrap();
        let h = d.entry_hash.clone();
        assert_eq!(log.states_by(Some("r1"))[&h].verdict, Some(Verdict::Good));
        assert_eq!(log.states_by(Some("r2"))[&h].verdict, Some(Verdict::Wrong));
        assert_eq!(log.states()[&h].verdict, Some(Verdict::Wrong));
        let both = &log.verdicts()[&h];
        assert_eq!((both["r1"], both["r2"]), (Verdict::Good, Verdict::Wrong));
    }
}
