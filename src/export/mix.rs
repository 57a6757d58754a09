//! A data mix (`rocqa mix mix.toml`): which entries, how many of each, from which runs.
//!
//! A no-endpoint run is 97% fact entries, most of them launch configurations: exported
//! as they are, a model would learn launch configurations. A mix says what it wants:
//! sources (runs, with filters) with weights or exact quotas, weights or exact quotas per
//! category / difficulty / library / version / generator / template, and caps per API
//! and per template. Entries are taken in an order fixed by the seed (a hash of seed
//! and entry id, not a generator whose stream could change), each taken at most once:
//! a target larger than what there is takes all there is and says so.
//!
//! ```toml
//! seed = 7
//! total = 400
//! [[source]]
//! entries = ["out/rocblas/6.4.4"]
//! weight = 3
//! [[source]]
//! entries = ["out/rocsolver/6.4.3"]
//! weight = 1
//! filter = { generator = ["facts", "mutation"] }
//! [quota.generator]
//! mutation = 40
//! facts = 360
//! [cap]
//! per_api = 6
//! per_template = 80
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{io_err, select, ExportError, Field, Filters, Row, SelectCounts};

/// A mix file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    /// Fixes which entries are taken: the same seed gives the same files.
    pub seed: u64,
    /// Samples wanted (default: the sum of a field's quotas, else of the sources'
    /// quotas, else every candidate).
    pub total: Option<usize>,
    /// Share of groups going to validation (default: the export's).
    pub validation_share: Option<f64>,
    #[serde(rename = "source")]
    pub sources: Vec<SourceSpec>,
    /// Exact counts per value of a field.
    #[serde(default)]
    pub quota: BTreeMap<Field, BTreeMap<String, usize>>,
    /// Shares of the total per value of a field.
    #[serde(default)]
    pub weight: BTreeMap<Field, BTreeMap<String, f64>>,
    #[serde(default)]
    pub cap: Caps,
}

/// Where entries come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// Entries files or run folders, relative to the mix file.
    pub entries: Vec<PathBuf>,
    /// Share of the total among weighted sources.
    pub weight: Option<f64>,
    /// Exact count from this source.
    pub quota: Option<usize>,
    #[serde(default)]
    pub filter: Filters,
}

/// Most entries per API and per template.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Caps {
    pub per_api: Option<usize>,
    pub per_template: Option<usize>,
}

/// One target and how it was met.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// `source 1 (out/rocblas/6.4.4)`, `category = edge-cases`.
    pub what: String,
    pub wanted: usize,
    pub got: usize,
    /// Candidates that could count toward it.
    pub available: usize,
}

/// What a mix picked.
#[derive(Debug, Clone, Serialize)]
pub struct MixReport {
    pub file: String,
    pub seed: u64,
    pub candidates: usize,
    pub picked: usize,
    pub targets: Vec<TargetReport>,
    /// Entries passed over because a cap was full, per cap.
    pub capped: BTreeMap<String, usize>,
}

impl MixSpec {
    /// Reads and checks a mix file; errors name the file and what to fix.
    pub fn load(path: &Path) -> Result<MixSpec, ExportError> {
        let text = std::fs::read_to_string(path).map_err(io_err(path, "read"))?;
        let bad = |what: String| ExportError::Bad {
            path: path.to_path_buf(),
            what,
        };
        let spec: MixSpec = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if spec.sources.is_empty() {
            return Err(bad(
                "no [[source]]: name the runs to mix (entries = [\"out/rocblas/6.4.4\"])".into(),
            ));
        }
        for (k, s) in spec.sources.iter().enumerate() {
            if s.weight.is_some() && s.quota.is_some() {
                return Err(bad(format!(
                    "source {}: give a weight or a quota, not both",
                    k + 1
                )));
            }
            s.filter
                .compile()
                .map_err(|e| bad(format!("source {}: {e}", k + 1)))?;
        }
        for f in spec.weight.keys() {
            if spec.quota.contains_key(f) {
                return Err(bad(format!(
                    "{}: give weights or quotas, not both",
                    f.name()
                )));
            }
        }
        if let Some(share) = spec.validation_share {
            if !(0.0..1.0).contains(&share) {
                return Err(bad(format!(
                    "validation_share = {share}: give a share in [0, 1)"
                )));
            }
        }
        Ok(spec)
    }
}

/// Counts out of `total` in proportion to `weights`, summing to `total` (largest
/// remainders, ties by order).
fn apportion(total: usize, weights: &[f64]) -> Vec<usize> {
    let sum: f64 = weights.iter().sum();
    if sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut out: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut rest: Vec<usize> = (0..weights.len()).collect();
    rest.sort_by(|&a, &b| {
        (exact[b] - exact[b].floor())
            .total_cmp(&(exact[a] - exact[a].floor()))
            .then(a.cmp(&b))
    });
    let short = total - out.iter().sum::<usize>();
    for &k in rest.iter().take(short) {
        out[k] += 1;
    }
    out
}

/// The candidates of a mix: each source's entries that its filter keeps, an entry
/// named by two sources counted once (for the first).
pub fn candidates(
    spec: &MixSpec,
    base: &Path,
    counts: &mut SelectCounts,
) -> Result<Vec<(usize, Row)>, ExportError> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (k, s) in spec.sources.iter().enumerate() {
        let files: Vec<PathBuf> = s.entries.iter().map(|p| base.join(p)).collect();
        let filters = s.filter.compile().map_err(|what| ExportError::Bad {
            path: base.to_path_buf(),
            what,
        })?;
        for r in select(&files, &filters, counts)? {
            if seen.insert(r.entry.id.clone()) {
                out.push((k, r));
            }
        }
    }
    Ok(out)
}

/// Picks the mix out of its candidates.
pub fn pick(spec: &MixSpec, file: &str, candidates: Vec<(usize, Row)>) -> (Vec<Row>, MixReport) {
    let n_sources = spec.sources.len();
    // Per field: the wanted count of each value (values not named get none).
    let mut field_targets: BTreeMap<Field, BTreeMap<String, usize>> = spec.quota.clone();
    let total = spec.total.unwrap_or_else(|| {
        spec.quota
            .values()
            .map(|q| q.values().sum())
            .max()
            .or_else(|| {
                let q: Vec<usize> = spec.sources.iter().filter_map(|s| s.quota).collect();
                (!q.is_empty()).then(|| q.iter().sum())
            })
            .unwrap_or(candidates.len())
    });
    for (f, w) in &spec.weight {
        let keys: Vec<&String> = w.keys().collect();
        let counts = apportion(total, &w.values().copied().collect::<Vec<_>>());
        field_targets.insert(*f, keys.into_iter().cloned().zip(counts).collect());
    }
    // Per source: quotas as given, weights sharing what the quotas leave.
    let quota_sum: usize = spec.sources.iter().filter_map(|s| s.quota).sum();
    let weighted: Vec<f64> = spec
        .sources
        .iter()
        .map(|s| s.weight.unwrap_or(0.0))
        .collect();
    let shares = apportion(total.saturating_sub(quota_sum), &weighted);
    let source_target: Vec<Option<usize>> = (0..n_sources)
        .map(|k| match (spec.sources[k].quota, spec.sources[k].weight) {
            (Some(q), _) => Some(q),
            (None, Some(_)) => Some(shares[k]),
            (None, None) => None,
        })
        .collect();
    let mut order: Vec<(u64, usize)> = candidates
        .iter()
        .enumerate()
        .map(|(i, (_, r))| {
            (
                xxhash_rust::xxh3::xxh3_64_with_seed(r.entry.id.as_bytes(), spec.seed),
                i,
            )
        })
        .collect();
    order.sort();
    let mut got_source = vec![0usize; n_sources];
    let mut got_field: HashMap<(Field, String), usize> = HashMap::new();
    let mut per_api: HashMap<String, usize> = HashMap::new();
    let mut per_template: HashMap<String, usize> = HashMap::new();
    let mut capped: BTreeMap<String, usize> = BTreeMap::new();
    let mut taken = Vec::new();
    for (_, i) in order {
        if taken.len() >= total {
            break;
        }
        let (src, r) = &candidates[i];
        let e = &r.entry;
        if source_target[*src].is_some_and(|t| got_source[*src] >= t) {
            continue;
        }
        let fits = field_targets.iter().all(|(f, t)| {
            let v = f.of(e);
            t.get(v).is_some_and(|want| {
                got_field.get(&(*f, v.to_string())).copied().unwrap_or(0) < *want
            })
        });
        if !fits {
            continue;
        }
        if spec
            .cap
            .per_api
            .is_some_and(|c| per_api.get(&e.api).copied().unwrap_or(0) >= c)
        {
            *capped.entry("per_api".into()).or_default() += 1;
            continue;
        }
        if spec
            .cap
            .per_template
            .is_some_and(|c| per_template.get(&e.template_id).copied().unwrap_or(0) >= c)
        {
            *capped.entry("per_template".into()).or_default() += 1;
            continue;
        }
        got_source[*src] += 1;
        for f in field_targets.keys() {
            *got_field.entry((*f, f.of(e).to_string())).or_default() += 1;
        }
        *per_api.entry(e.api.clone()).or_default() += 1;
        *per_template.entry(e.template_id.clone()).or_default() += 1;
        taken.push(i);
    }
    let mut targets = Vec::new();
    for (k, t) in source_target.iter().enumerate() {
        if let Some(want) = t {
            targets.push(TargetReport {
                what: format!(
                    "source {} ({})",
                    k + 1,
                    spec.sources[k]
                        .entries
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                wanted: *want,
                got: got_source[k],
                available: candidates.iter().filter(|(s, _)| *s == k).count(),
            });
        }
    }
    for (f, t) in &field_targets {
        for (v, want) in t {
            targets.push(TargetReport {
                what: format!("{} = {v}", f.name()),
                wanted: *want,
                got: got_field.get(&(*f, v.clone())).copied().unwrap_or(0),
                available: candidates
                    .iter()
                    .filter(|(_, r)| f.of(&r.entry) == v)
                    .count(),
            });
        }
    }
    let report = MixReport {
        file: file.to_string(),
        seed: spec.seed,
        candidates: candidates.len(),
        picked: taken.len(),
        targets,
        capped,
    };
    let taken: HashSet<usize> = taken.into_iter().collect();
    let rows = candidates
        .into_iter()
        .enumerate()
        .filter(|(i, _)| taken.contains(i))
        .map(|(_, (_, r))| r)
        .collect();
    (rows, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportioning_sums_to_the_total() {
        assert_eq!(apportion(10, &[1.0, 1.0, 1.0]), vec![4, 3, 3]);
        assert_eq!(apportion(7, &[0.5, 0.25, 0.25]), vec![3, 2, 2]);
        assert_eq!(apportion(5, &[0.0]), vec![0]);
    }

    #[test]
    fn a_bad_mix_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mix.toml");
        std::fs::write(
            &p,
            "seed = 1\n[[source]]\nentries = [\"a\"]\nweight = 1\nquota = 3\n",
        )
        .unwrap();
        let err = MixSpec::load(&p).unwrap_err().to_string();
        assert!(
            err.contains("mix.toml") && err.contains("not both"),
            "{err}"
        );
        std::fs::write(
            &p,
            "seed = 1\n[[source]]\nentries = [\"a\"]\n[quota.colour]\nred = 1\n",
        )
        .unwrap();
        let err = MixSpec::load(&p).unwrap_err().to_string();
        assert!(err.contains("colour"), "{err}");
    }
}
