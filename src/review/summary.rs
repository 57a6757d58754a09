//! `rocqa review --summary`: what the decisions add up to.
//!
//! Acceptance (the share of verdicts that are `good`) per category, library, generator
//! and reviewer; on entries two reviewers judged (the blind overlap), Cohen's kappa per
//! pair of reviewers and Krippendorff's alpha over all of them, and the disagreements to
//! settle; the bound on the share of wrong entries. Each reviewer's last verdict on an
//! entry counts once. Decisions about content no entry of the file has any more (its
//! text or cited code changed in a refresh) are counted apart and count nowhere else.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::agree::{cohen_kappa, krippendorff_alpha};
use super::bound::{upper_bound, CONFIDENCE};
use super::log::{entry_hash, ReviewLog, Verdict};

/// Verdict counts of one group.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct Tally {
    pub good: u64,
    pub weak: u64,
    pub wrong: u64,
    /// `good` over all verdicts.
    pub acceptance: f64,
    /// The upper bound on the share of `wrong` at [`CONFIDENCE`].
    pub wrong_bound: Option<f64>,
}

impl Tally {
    fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Good => self.good += 1,
            Verdict::Weak => self.weak += 1,
            Verdict::Wrong => self.wrong += 1,
        }
        let n = self.good + self.weak + self.wrong;
        self.acceptance = self.good as f64 / n as f64;
        self.wrong_bound = upper_bound(self.wrong, n, CONFIDENCE);
    }
}

/// Agreement of two reviewers on the entries both judged.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Pair {
    pub reviewers: (String, String),
    pub both_judged: usize,
    pub agreed: usize,
    pub kappa: Option<f64>,
}

/// Two or more reviewers' differing verdicts on an entry.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Disagreement {
    pub id: String,
    pub verdicts: BTreeMap<String, Verdict>,
}

/// The summary of a review log over an entries file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub entries: usize,
    pub records: usize,
    /// Entries with at least one verdict.
    pub judged: usize,
    pub overall: Tally,
    /// `category`, `lib`, `generator`, `reviewer` -> value -> tally.
    pub by: BTreeMap<String, BTreeMap<String, Tally>>,
    pub pairs: Vec<Pair>,
    /// Over every entry two or more reviewers judged.
    pub alpha: Option<f64>,
    pub disagreements: Vec<Disagreement>,
    /// Decisions about content no entry has any more.
    pub stale_decisions: usize,
}

/// Sums up `log` over `entries`.
pub fn summarize(entries: &[serde_json::Value], log: &ReviewLog) -> Summary {
    let by_hash: HashMap<String, &serde_json::Value> =
        entries.iter().map(|e| (entry_hash(e), e)).collect();
    let verdicts = log.verdicts();
    let mut s = Summary {
        entries: entries.len(),
        records: log.records().len(),
        judged: 0,
        overall: Tally::default(),
        by: BTreeMap::new(),
        pairs: Vec::new(),
        alpha: None,
        disagreements: Vec::new(),
        stale_decisions: log
            .records()
            .iter()
            .filter(|r| !by_hash.contains_key(&r.entry_hash))
            .count(),
    };
    let mut units = Vec::new();
    let mut reviewers = BTreeSet::new();
    for (hash, who) in &verdicts {
        let Some(e) = by_hash.get(hash) else { continue };
        s.judged += 1;
        for (reviewer, v) in who {
            reviewers.insert(reviewer.clone());
            s.overall.add(*v);
            for (k, value) in [
                ("category", e["category"].as_str().unwrap_or("")),
                ("lib", e["lib"].as_str().unwrap_or("")),
                ("generator", e["generator"].as_str().unwrap_or("")),
                ("reviewer", reviewer.as_str()),
            ] {
                s.by.entry(k.into())
                    .or_default()
                    .entry(value.into())
                    .or_default()
                    .add(*v);
            }
        }
        if who.len() >= 2 {
            units.push(who.values().copied().collect::<Vec<_>>());
            if who.values().collect::<BTreeSet<_>>().len() > 1 {
                s.disagreements.push(Disagreement {
                    id: e["id"].as_str().unwrap_or("").into(),
                    verdicts: who.clone(),
                });
            }
        }
    }
    let reviewers: Vec<String> = reviewers.into_iter().collect();
    for (k, a) in reviewers.iter().enumerate() {
        for b in &reviewers[k + 1..] {
            let pairs: Vec<(Verdict, Verdict)> = verdicts
                .iter()
                .filter(|(h, _)| by_hash.contains_key(*h))
                .filter_map(|(_, who)| Some((*who.get(a)?, *who.get(b)?)))
                .collect();
            if pairs.is_empty() {
                continue;
            }
            s.pairs.push(Pair {
                reviewers: (a.clone(), b.clone()),
                both_judged: pairs.len(),
                agreed: pairs.iter().filter(|(x, y)| x == y).count(),
                kappa: cohen_kappa(&pairs),
            });
        }
    }
    s.alpha = krippendorff_alpha(&units);
    s
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:.1}%", x * 100.0))
}

fn num(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.4}"))
}

/// The summary as text tables.
pub fn render(s: &Summary) -> String {
    let mut out = format!(
        "{} entries, {} decisions, {} entries judged; {} decisions about content no entry has any more\n",
        s.entries, s.records, s.judged, s.stale_decisions
    );
    let row = |name: &str, t: &Tally| {
        format!(
            "  {name:<28} {:>5} {:>5} {:>5} {:>8} {:>10}\n",
            t.good,
            t.weak,
            t.wrong,
            format!("{:.1}%", t.acceptance * 100.0),
            pct(t.wrong_bound)
        )
    };
    out += &format!(
        "  {:<28} {:>5} {:>5} {:>5} {:>8} {:>10}\n",
        "", "good", "weak", "wrong", "accepted", "wrong<=95%"
    );
    out += &row("all", &s.overall);
    for (k, groups) in &s.by {
        out += &format!("by {k}\n");
        for (name, t) in groups {
            out += &row(name, t);
        }
    }
    for p in &s.pairs {
        out += &format!(
            "agreement {} / {}: {} both judged, {} agreed, Cohen's kappa {}\n",
            p.reviewers.0,
            p.reviewers.1,
            p.both_judged,
            p.agreed,
            num(p.kappa)
        );
    }
    out += &format!("Krippendorff's alpha (nominal): {}\n", num(s.alpha));
    out += &format!("{} disagreements to settle\n", s.disagreements.len());
    for d in &s.disagreements {
        let v: Vec<String> = d
            .verdicts
            .iter()
            .map(|(r, v)| {
                format!(
                    "{r}={}",
                    serde_json::to_string(v)
                        .unwrap_or_default()
                        .trim_matches('"')
                )
            })
            .collect();
        out += &format!("  {} {}\n", d.id, v.join(" "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::log::{Action, Decision};
    use crate::review::state::tests::entry;

    #[test]
    fn tallies_agreement_and_stale_decisions() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ReviewLog::open(&dir.path().join("reviews.jsonl")).unwrap();
        let entries: Vec<serde_json::Value> = (0..4)
            .map(|k| {
                entry(
                    &format!("rocblas-{k}"),
                    "semantics",
                    if k < 2 { "facts" } else { "mutation" },
                    &format!("rocblas_s{k}"),
                )
            })
            .collect();
        let verdict = |e: &serde_json::Value, who: &str, v: Verdict| Decision {
            entry_id: e["id"].as_str().unwrap().into(),
            entry_hash: entry_hash(e),
            action: Action::Verdict,
            verdict: Some(v),
            reason: None,
            note: None,
            edited: None,
            reviewer: who.into(),
        };
        use Verdict::*;
        for (k, a, b) in [
            (0, Good, Good),
            (1, Good, Wrong),
            (2, Weak, Weak),
            (3, Wrong, Wrong),
        ] {
            log.append(verdict(&entries[k], "ann", a)).unwrap();
            log.append(verdict(&entries[k], "bo", b)).unwrap();
        }
        let mut gone = entries[0].clone();
        gone["answer"] = "an older answer".into();
        log.append(verdict(&gone, "ann", Good)).unwrap();
        let s = summarize(&entries, &log);
        assert_eq!((s.judged, s.stale_decisions), (4, 1));
        assert_eq!((s.overall.good, s.overall.weak, s.overall.wrong), (3, 2, 3));
        assert_eq!(s.by["generator"]["facts"].good, 3);
        assert_eq!(s.by["reviewer"]["bo"].wrong, 2);
        assert_eq!((s.pairs[0].both_judged, s.pairs[0].agreed), (4, 3));
        // p_o = 3/4; p_e = (2*1 + 1*1 + 1*2)/16 = 5/16.
        assert!(
            (s.pairs[0].kappa.unwrap() - (0.75 - 5.0 / 16.0) / (1.0 - 5.0 / 16.0)).abs() < 1e-12
        );
        assert_eq!(s.disagreements.len(), 1);
        assert_eq!(s.disagreements[0].id, "rocblas-1");
        assert!(render(&s).contains("1 disagreements to settle"));
    }
}
