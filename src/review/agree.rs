//! Agreement between reviewers on the items both judged: Cohen's kappa for a pair,
//! Krippendorff's alpha (nominal) for any number with gaps.
//!
//! Both correct the share of matching verdicts for the matches chance alone gives. They
//! are computed as `sklearn.metrics.cohen_kappa_score` and `krippendorff.alpha(...,
//! level_of_measurement="nominal")` compute them (`tests/review_agreement.rs` compares
//! the figures to 1e-6), so a review's figures can be read beside any published audit.

use std::collections::BTreeMap;
use std::hash::Hash;

/// Cohen's kappa of two raters over paired labels. `None` when there is no pair, or
/// when chance agreement is already complete (one label used throughout: kappa is 0/0).
pub fn cohen_kappa<T: Ord + Clone>(pairs: &[(T, T)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len() as f64;
    let mut first: BTreeMap<T, f64> = BTreeMap::new();
    let mut second: BTreeMap<T, f64> = BTreeMap::new();
    let mut agree = 0.0;
    for (a, b) in pairs {
        *first.entry(a.clone()).or_default() += 1.0;
        *second.entry(b.clone()).or_default() += 1.0;
        if a == b {
            agree += 1.0;
        }
    }
    let observed = agree / n;
    let chance: f64 = first
        .iter()
        .map(|(label, c)| c / n * second.get(label).copied().unwrap_or(0.0) / n)
        .sum();
    if (1.0 - chance).abs() < 1e-15 {
        return None;
    }
    Some((observed - chance) / (1.0 - chance))
}

/// Krippendorff's alpha for nominal labels. Each unit holds the labels the raters who
/// judged it gave; units with fewer than two labels pair nothing and are left out.
/// `None` when no unit pairs, or when every label is the same (expected disagreement 0).
pub fn krippendorff_alpha<T: Ord + Clone + Hash>(units: &[Vec<T>]) -> Option<f64> {
    // The coincidence matrix: each ordered pair of labels within a unit, weighted
    // 1 / (labels in the unit - 1).
    let mut coincidences: BTreeMap<(T, T), f64> = BTreeMap::new();
    for unit in units.iter().filter(|u| u.len() >= 2) {
        let weight = 1.0 / (unit.len() - 1) as f64;
        for (i, a) in unit.iter().enumerate() {
            for (j, b) in unit.iter().enumerate() {
                if i != j {
                    *coincidences.entry((a.clone(), b.clone())).or_default() += weight;
                }
            }
        }
    }
    let mut per_label: BTreeMap<T, f64> = BTreeMap::new();
    for ((a, _), w) in &coincidences {
        *per_label.entry(a.clone()).or_default() += w;
    }
    let total: f64 = per_label.values().sum();
    if total <= 1.0 {
        return None;
    }
    let observed: f64 = coincidences
        .iter()
        .filter(|((a, b), _)| a != b)
        .map(|(_, w)| w)
        .sum();
    let mut expected = 0.0;
    for (a, na) in &per_label {
        for (b, nb) in &per_label {
            if a != b {
                expected += na * nb;
            }
        }
    }
    expected /= total - 1.0;
    if expected == 0.0 {
        return None;
    }
    Some(1.0 - observed / expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_of_a_textbook_table() {
        // 50 items: both yes 20, both no 15, yes/no 5, no/yes 10 -> p_o 0.7, p_e 0.5.
        let mut pairs = Vec::new();
        pairs.extend(std::iter::repeat_n(("yes", "yes"), 20));
        pairs.extend(std::iter::repeat_n(("no", "no"), 15));
        pairs.extend(std::iter::repeat_n(("yes", "no"), 5));
        pairs.extend(std::iter::repeat_n(("no", "yes"), 10));
        assert!((cohen_kappa(&pairs).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(cohen_kappa(&[("a", "a"), ("a", "a")]), None);
        assert_eq!(cohen_kappa::<&str>(&[]), None);
    }

    #[test]
    fn alpha_of_krippendorffs_worked_example() {
        // Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal data
        // of 4 coders over 12 units with gaps: alpha = 0.743.
        let data: [[Option<u8>; 12]; 4] = [
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(1),
                Some(4),
                Some(1),
                Some(2),
                None,
                None,
                None,
            ],
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(2),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                None,
                Some(3),
            ],
            [
                None,
                Some(3),
                Some(3),
                Some(3),
                Some(2),
                Some(3),
                Some(4),
                Some(2),
                Some(2),
                Some(5),
                Some(1),
                None,
            ],
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(4),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                Some(1),
                None,
            ],
        ];
        let units: Vec<Vec<u8>> = (0..12)
            .map(|u| data.iter().filter_map(|coder| coder[u]).collect())
            .collect();
        let alpha = krippendorff_alpha(&units).unwrap();
        assert!((alpha - 0.743).abs() < 5e-4, "{alpha}");
        assert_eq!(krippendorff_alpha(&[vec![1u8]]), None);
    }
}
