//! Decontamination: entries that overlap a held-out evaluation set do not go out.
//!
//! Each evaluation set is a JSONL file pinned by its SHA-256 (`FILE#SHA256`; a file that
//! no longer hashes so is refused). Three findings, each reported per set:
//! - `question`: the entry's question shares a 13-word sequence with an evaluation
//!   question (a copied question, whatever its answer);
//! - `answer`: the same for answers (both by [`crate::validate::dedup::EvalSet`], the
//!   check `rocqa validate --decontaminate` runs);
//! - `paraphrase`: the entry as a whole (question, answer, code) and an evaluation item
//!   use the same words with the same weights: TF-IDF cosine at or above
//!   [`PARAPHRASE_THRESHOLD`]. Rewording breaks every 13-gram but keeps the names,
//!   numbers and terms a leak carries; weighting words by their rarity keeps two
//!   entries of one template apart, since they differ in exactly the rare words.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{io_err, ExportError};
use crate::model::Entry;
use crate::validate::dedup::{EvalSet, Overlap};
use crate::validate::file::eval_item;

/// Cosine from which an entry and an evaluation item say the same thing in other words.
pub const PARAPHRASE_THRESHOLD: f64 = 0.6;

/// How far below an item's best entry another entry may be and still count as its
/// paraphrase (the same text under two API names).
pub const PARAPHRASE_MARGIN: f64 = 0.02;

/// Cosine from which a side sharing a 13-gram with an evaluation item is that item's.
pub const NGRAM_CONFIRM: f64 = 0.9;

/// An evaluation set to check against: its file and, optionally, the SHA-256 it must
/// have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalSpec {
    pub path: PathBuf,
    pub pin: Option<String>,
}

impl std::str::FromStr for EvalSpec {
    type Err = String;

    /// `FILE` or `FILE#SHA256`.
    fn from_str(s: &str) -> Result<EvalSpec, String> {
        match s.rsplit_once('#') {
            Some((path, pin)) => {
                if pin.len() != 64 || !pin.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(format!(
                        "{s}: the pin after `#` must be the file's SHA-256 (64 hex digits; `sha256sum {path}` prints it)"
                    ));
                }
                Ok(EvalSpec {
                    path: path.into(),
                    pin: Some(pin.to_ascii_lowercase()),
                })
            }
            None => Ok(EvalSpec {
                path: s.into(),
                pin: None,
            }),
        }
    }
}

/// An evaluation set read and indexed.
#[derive(Debug)]
pub struct EvalData {
    pub spec: EvalSpec,
    pub sha256: String,
    set: EvalSet,
    /// Each item's question, answer, and both, for the cosine measures.
    items: Vec<[String; 3]>,
}

/// Reads an evaluation set (question/answer, Alpaca or ShareGPT/OpenAI messages per
/// line), checking its pin.
pub fn load(spec: &EvalSpec) -> Result<EvalData, ExportError> {
    let bytes = std::fs::read(&spec.path).map_err(io_err(&spec.path, "read"))?;
    let sha256 = format!("{:x}", Sha256::digest(&bytes));
    if let Some(pin) = &spec.pin {
        if *pin != sha256 {
            return Err(ExportError::Bad {
                path: spec.path.clone(),
                what: format!(
                    "the evaluation set hashes to {sha256}, not to the pinned {pin}; pin the revision you mean to hold out"
                ),
            });
        }
    }
    let mut set = EvalSet::named(&spec.path.display().to_string());
    let mut items = Vec::new();
    for v in crate::emit::read_jsonl::<serde_json::Value>(&spec.path)? {
        let (q, a) = eval_item(&v);
        set.add(&q, &a);
        let both = format!("{q}\n{a}");
        items.push([q, a, both]);
    }
    Ok(EvalData {
        spec: spec.clone(),
        sha256,
        set,
        items,
    })
}

/// How an entry overlaps an evaluation set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Finding {
    Question,
    Answer,
    Paraphrase,
}

/// One entry found in an evaluation set.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub id: String,
    pub finding: Finding,
    /// The evaluation item (its line) most like the entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
    /// Their TF-IDF cosine on the side found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
}

/// What one evaluation set found.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub file: String,
    pub sha256: String,
    pub items: usize,
    pub entries_checked: usize,
    pub found: BTreeMap<String, usize>,
    pub hits: Vec<Hit>,
}

/// Lowercase words of letters, digits and `_`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// A text as unit-length TF-IDF weights.
fn weights(text: &str, idf: &HashMap<String, f64>) -> Vec<(String, f64)> {
    let mut tf: HashMap<String, f64> = HashMap::new();
    for w in words(text) {
        *tf.entry(w).or_default() += 1.0;
    }
    let mut v: Vec<(String, f64)> = tf
        .into_iter()
        .map(|(w, n)| {
            let x = (1.0 + n.ln()) * idf.get(&w).copied().unwrap_or(0.0);
            (w, x)
        })
        .collect();
    let norm = v.iter().map(|(_, x)| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|(_, x)| *x /= norm);
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The text of an entry that the paraphrase measure compares.
fn entry_text(e: &Entry) -> String {
    format!(
        "{}\n{}\n{}",
        e.question,
        e.answer,
        e.code.as_deref().unwrap_or("")
    )
}

/// Postings of one side of an evaluation set's items: word -> (item, weight).
type Postings<'a> = HashMap<&'a str, Vec<(usize, f64)>>;

fn postings(vecs: &[Vec<(String, f64)>]) -> Postings<'_> {
    let mut p: Postings = HashMap::new();
    for (k, v) in vecs.iter().enumerate() {
        for (w, x) in v {
            p.entry(w.as_str()).or_default().push((k, *x));
        }
    }
    p
}

/// Inverse document frequencies over every text compared.
fn idf_of<'a>(docs: impl Iterator<Item = &'a String>) -> HashMap<String, f64> {
    let mut df: HashMap<String, f64> = HashMap::new();
    let mut n_docs = 0.0;
    for t in docs {
        n_docs += 1.0;
        let mut seen: Vec<String> = words(t).collect();
        seen.sort();
        seen.dedup();
        for w in seen {
            *df.entry(w).or_default() += 1.0;
        }
    }
    df.into_iter()
        .map(|(w, d)| (w, (n_docs / d).ln()))
        .collect()
}

/// Checks every entry against every set: which entries are contaminated (by any set),
/// and a report per set. A shared 13-gram alone is not a finding: fact entries of one
/// template share whole phrases (`only when ... does not hold`), so the side it was
/// found on must also be the same text by [`NGRAM_CONFIRM`] (TF-IDF cosine).
pub fn check(entries: &[&Entry], evals: &[EvalData]) -> (Vec<bool>, Vec<EvalReport>) {
    let mut dirty = vec![false; entries.len()];
    let sides = |e: &Entry| [e.question.clone(), e.answer.clone(), entry_text(e)];
    let entry_texts: Vec<[String; 3]> = entries.iter().map(|e| sides(e)).collect();
    // Rarity over everything compared: entries and evaluation items alike.
    let idf = idf_of(
        entry_texts
            .iter()
            .map(|t| &t[2])
            .chain(evals.iter().flat_map(|s| s.items.iter().map(|i| &i[2]))),
    );
    let entry_vecs: Vec<[Vec<(String, f64)>; 3]> = entry_texts
        .iter()
        .map(|t| [0, 1, 2].map(|k| weights(&t[k], &idf)))
        .collect();
    // Words no entry uses are no evidence of a leak either way; left in, the filler of
    // a rewording ("indeed", "gives back") weighs an item down against its entry.
    let vocabulary: std::collections::HashSet<String> = entry_texts
        .iter()
        .flat_map(|t| words(&t[2]).collect::<Vec<_>>())
        .collect();
    let mut reports = Vec::new();
    for set in evals {
        let item_vecs: [Vec<Vec<(String, f64)>>; 3] = [0, 1, 2].map(|k| {
            set.items
                .iter()
                .map(|i| {
                    let known: Vec<String> =
                        words(&i[k]).filter(|w| vocabulary.contains(w)).collect();
                    weights(&known.join(" "), &idf)
                })
                .collect()
        });
        let posts: Vec<Postings> = item_vecs.iter().map(|v| postings(v)).collect();
        // A reworded item leaks the entry it is closest to: per item, the entries at its
        // best cosine (within PARAPHRASE_MARGIN), not every sibling of one template.
        let para_threshold = PARAPHRASE_THRESHOLD;
        let para: Vec<Option<(usize, f64)>> = entry_vecs
            .iter()
            .map(|v| best_item(&v[2], &posts[2]).filter(|(_, c)| *c >= para_threshold))
            .collect();
        let mut item_best: HashMap<usize, f64> = HashMap::new();
        for (k, c) in para.iter().flatten() {
            let b = item_best.entry(*k).or_insert(0.0);
            *b = b.max(*c);
        }
        let mut hits = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let confirmed = |side: usize| {
                best_item(&entry_vecs[i][side], &posts[side]).filter(|(_, c)| *c >= NGRAM_CONFIRM)
            };
            let found = if set.set.overlap(&e.question, "") == Some(Overlap::Question) {
                confirmed(0).map(|(k, c)| (Finding::Question, k, c))
            } else {
                None
            }
            .or_else(|| {
                if set.set.overlap("", &e.answer) == Some(Overlap::Answer) {
                    confirmed(1).map(|(k, c)| (Finding::Answer, k, c))
                } else {
                    None
                }
            })
            .or_else(|| {
                para[i]
                    .filter(|(k, c)| *c + PARAPHRASE_MARGIN >= item_best[k])
                    .map(|(k, c)| (Finding::Paraphrase, k, c))
            });
            if let Some((finding, item, cosine)) = found {
                dirty[i] = true;
                hits.push(Hit {
                    id: e.id.clone(),
                    finding,
                    item: Some(item + 1),
                    cosine: Some((cosine * 1000.0).round() / 1000.0),
                });
            }
        }
        let mut found = BTreeMap::new();
        for f in ["question", "answer", "paraphrase"] {
            found.insert(f.to_string(), 0);
        }
        for h in &hits {
            let name = match h.finding {
                Finding::Question => "question",
                Finding::Answer => "answer",
                Finding::Paraphrase => "paraphrase",
            };
            *found.entry(name.to_string()).or_default() += 1;
        }
        reports.push(EvalReport {
            file: set.spec.path.display().to_string(),
            sha256: set.sha256.clone(),
            items: set.items.len(),
            entries_checked: entries.len(),
            found,
            hits,
        });
    }
    (dirty, reports)
}

/// The evaluation item most like an entry, with the cosine.
fn best_item(
    v: &[(String, f64)],
    postings: &HashMap<&str, Vec<(usize, f64)>>,
) -> Option<(usize, f64)> {
    let mut score: HashMap<usize, f64> = HashMap::new();
    for (w, x) in v {
        for (k, y) in postings.get(w.as_str()).into_iter().flatten() {
            *score.entry(*k).or_default() += x * y;
        }
    }
    score
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_and_bad_ones_are_named() {
        let s: EvalSpec = format!("eval.jsonl#{}", "A".repeat(64)).parse().unwrap();
        assert_eq!(s.pin.as_deref(), Some("a".repeat(64).as_str()));
        let err = "eval.jsonl#abc".parse::<EvalSpec>().unwrap_err();
        assert!(err.contains("sha256sum eval.jsonl"), "{err}");
    }

    #[test]
    fn rare_words_carry_the_weight() {
        let mut idf = HashMap::new();
        idf.insert("rocblas_sdot".to_string(), 5.0);
        idf.insert("kernel".to_string(), 0.1);
        let a = weights("kernel rocblas_sdot", &idf);
        let b = weights("kernel", &idf);
        let dot: f64 = a
            .iter()
            .filter_map(|(w, x)| b.iter().find(|(v, _)| v == w).map(|(_, y)| x * y))
            .sum();
        assert!(dot < 0.1, "{dot}");
    }
}
