//! Train/validation splits that do not leak, and that hold across releases.
//!
//! Entries are grouped before they are split: every entry of an API family (library +
//! family, no version) is one group, groups sharing a kernel of their library shown in
//! their slices are joined ([`kernels`]), and so are groups holding a near-duplicate pair ([`crate::validate::dedup`],
//! the same signatures and threshold the validator uses). A whole group goes to one
//! side, so no kernel and no near-duplicate pair is on both.
//!
//! The side is a hash of the group's key (its least `lib:family`), not its position: an
//! entry carried to a new release, or exported in another order or mix, keeps its split
//! while its group is the same.

use std::collections::HashMap;

use petgraph::unionfind::UnionFind;
use serde::Serialize;

use crate::model::{Entry, PieceRole};
use crate::validate::dedup::{entry_signature, DedupIndex};

/// Which side of the line an entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    Train,
    Validation,
}

impl Split {
    /// The split's name, as files and cards use it.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Validation => "validation",
        }
    }

    /// Both, train first.
    pub const ALL: [Split; 2] = [Split::Train, Split::Validation];
}

/// The group an entry starts in: its library and API family, whatever the release.
pub fn group_key(e: &Entry) -> String {
    format!("{}:{}", e.lib, e.family)
}

/// The kernels of its own library an entry's slice shows, as `lib:name`. The rocBLAS
/// kernels a rocSOLVER slice shows where its path leaves the library are context, not
/// what the entry is about: counting them joins 69% of a two-library export (2,445 of
/// 3,553 entries) into one group.
pub fn kernels(e: &Entry) -> Vec<String> {
    let mut k: Vec<String> = e
        .slice
        .iter()
        .filter(|p| p.role == PieceRole::Kernel && p.lib == e.lib)
        .map(|p| format!("{}:{}", p.lib, p.name))
        .collect();
    k.sort();
    k.dedup();
    k
}

/// Where in [0, 1) a group key falls: below the validation share is validation.
fn position(key: &str) -> f64 {
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(key.as_bytes(), SPLIT_SEED);
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// The seed of the split hash (fixed: changing it would move every entry).
const SPLIT_SEED: u64 = 0x5eed;

/// How the entries were split.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SplitReport {
    /// Groups after joining.
    pub groups: usize,
    /// Joins made because two groups share a kernel.
    pub kernel_joins: usize,
    /// Joins made because a near-duplicate pair crossed the line.
    pub near_duplicate_joins: usize,
    /// Entries per split.
    pub counts: std::collections::BTreeMap<String, usize>,
}

/// The split of each entry (in the order given), with `validation_share` of the group
/// keys' hash range going to validation; `threshold` is the near-duplicate similarity.
pub fn assign(
    entries: &[&Entry],
    validation_share: f64,
    threshold: f64,
) -> (Vec<Split>, SplitReport) {
    let n = entries.len();
    let mut uf: UnionFind<usize> = UnionFind::new(n);
    let mut report = SplitReport::default();
    let mut first_of: HashMap<String, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        match first_of.get(&group_key(e)) {
            Some(&j) => {
                uf.union(i, j);
            }
            None => {
                first_of.insert(group_key(e), i);
            }
        }
    }
    let mut by_kernel: HashMap<String, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        for k in kernels(e) {
            match by_kernel.get(&k) {
                Some(&j) => {
                    if uf.union(i, j) {
                        report.kernel_joins += 1;
                    }
                }
                None => {
                    by_kernel.insert(k, i);
                }
            }
        }
    }
    let sigs: Vec<_> = entries
        .iter()
        .map(|e| entry_signature(&e.question, &e.answer, e.code.as_deref()))
        .collect();
    // Join until no validation entry has a near-duplicate in train: each round joins at
    // least two groups, so it ends.
    loop {
        let splits = sides(entries, &mut uf, validation_share);
        let mut train = DedupIndex::default();
        for (i, s) in splits.iter().enumerate() {
            if *s == Split::Train {
                train.insert(&i.to_string(), sigs[i].clone());
            }
        }
        let mut joined = false;
        for (i, s) in splits.iter().enumerate() {
            if *s != Split::Validation {
                continue;
            }
            if let Some(near) = train.nearest(&sigs[i], threshold) {
                let j: usize = near.id.parse().expect("ids are positions");
                if uf.union(i, j) {
                    report.near_duplicate_joins += 1;
                    joined = true;
                }
            }
        }
        if !joined {
            let labels = uf.clone().into_labeling();
            report.groups = labels
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len();
            for s in &splits {
                *report.counts.entry(s.name().to_string()).or_default() += 1;
            }
            return (splits, report);
        }
    }
}

/// Each entry's side: its group's, decided by the least key in the group.
fn sides(entries: &[&Entry], uf: &mut UnionFind<usize>, validation_share: f64) -> Vec<Split> {
    let mut key_of: HashMap<usize, String> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let root = uf.find_mut(i);
        let k = group_key(e);
        key_of
            .entry(root)
            .and_modify(|old| {
                if k < *old {
                    *old = k.clone();
                }
            })
            .or_insert(k);
    }
    (0..entries.len())
        .map(|i| {
            if position(&key_of[&uf.find_mut(i)]) < validation_share {
                Split::Validation
            } else {
                Split::Train
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PieceRef;

    fn entry(id: &str, version: &str, family: &str, kernel: &str, answer: &str) -> Entry {
        let mut e: Entry = serde_json::from_value(serde_json::json!({
            "schema_version": 2, "id": id, "lib": "rocblas", "version": version,
            "source": {"origin": {"kind": "dir", "path": "x"}, "sha256": "0".repeat(64)},
            "family": family, "api": format!("rocblas_s{family}"), "apis": [],
            "variant": "", "call_path": [], "category": "semantics",
            "template_id": "t", "template_version": 1, "difficulty": "L1",
            "question": format!("What does the {family} kernel do with its threads?"),
            "answer": answer, "code": null, "citations": [], "slice_id": "s", "slice": [],
            "model": "", "params": {}, "prompt_sha256": "0".repeat(64),
            "usage": {"prompt_tokens": 0, "completion_tokens": 0},
            "validation": [], "generator": "facts", "tool": "rocqa 0.1.0"
        }))
        .unwrap();
        e.slice.push(PieceRef {
            role: PieceRole::Kernel,
            name: kernel.into(),
            lib: "rocblas".into(),
            file: "k.hpp".into(),
            start: 1,
            end: 2,
            sha256: "0".repeat(64),
            expansion: None,
        });
        e
    }

    fn families(version: &str, id_prefix: &str) -> Vec<Entry> {
        (0..40)
            .map(|k| {
                entry(
                    &format!("{id_prefix}{k}"),
                    version,
                    &format!("fam{k}"),
                    &format!("kernel{}", k / 2),
                    &format!("answer number {k} with words of its own: w{k} x{k} y{k} z{k}"),
                )
            })
            .collect()
    }

    #[test]
    fn a_shared_kernel_keeps_groups_together_and_a_release_keeps_its_split() {
        let old = families("6.4.4", "a");
        let refs: Vec<&Entry> = old.iter().collect();
        let (s, report) = assign(&refs, 0.3, 0.8);
        assert_eq!(report.kernel_joins, 20);
        assert!(s.contains(&Split::Validation) && s.contains(&Split::Train));
        for k in (0..40).step_by(2) {
            assert_eq!(s[k], s[k + 1], "fam{k} and fam{} share a kernel", k + 1);
        }
        // The next release: other ids and version, another order.
        let mut new = families("6.5.0", "b");
        new.reverse();
        let refs: Vec<&Entry> = new.iter().collect();
        let (t, _) = assign(&refs, 0.3, 0.8);
        for (k, e) in new.iter().enumerate() {
            let was = old.iter().position(|o| o.family == e.family).unwrap();
            assert_eq!(t[k], s[was], "{} moved", e.family);
        }
    }

    #[test]
    fn a_near_duplicate_pair_is_kept_on_one_side() {
        let text = "the scal kernel multiplies every element of x by alpha with one thread per element and blocks of 256 threads";
        let mut es = families("6.4.4", "a");
        for (k, e) in es.iter_mut().enumerate() {
            e.answer = if k % 2 == 0 {
                text.into()
            } else {
                format!("{text} too")
            };
        }
        let refs: Vec<&Entry> = es.iter().collect();
        let (s, _) = assign(&refs, 0.3, 0.8);
        assert!(s.iter().all(|x| *x == s[0]), "{s:?}");
    }
}
