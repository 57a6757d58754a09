//! Which entries a spot check reads, and in what order.
//!
//! A sample is stratified by category, library, generator and template, so every kind of
//! entry the run wrote is read at least once before any is read twice; within a stratum
//! and between strata the draw is a hash of the entry id and the seed, so the same seed
//! over the same entries gives the same sample on any machine. The sample is then read
//! riskiest first: model answers before entries read off the code, then the least
//! grounded, then the longest code, so a defect shows up early.
//!
//! With several reviewers, [`assigned_to`] deals each entry to one of them, and a share
//! of the entries (the blind overlap) to a second one; neither sees the other's verdict,
//! and the items both judged give the agreement figures.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// What sampling and ordering read of an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleKey {
    pub id: String,
    /// `category / library / generator / template`.
    pub stratum: String,
    pub generator: String,
    /// Cited lines per 100 words of answer and code: how much of what it says is pinned
    /// to the source.
    pub grounding: f64,
    pub code_chars: usize,
}

impl SampleKey {
    /// The key of an entry (read as JSON, like the review log reads entries).
    pub fn of(entry: &serde_json::Value) -> SampleKey {
        let s = |k: &str| entry[k].as_str().unwrap_or("").to_string();
        let code = s("code");
        let words = s("answer").split_whitespace().count() + code.split_whitespace().count();
        let cited: u64 = entry["citations"].as_array().map_or(0, |cs| {
            cs.iter()
                .map(|c| {
                    let (a, b) = (
                        c["start"].as_u64().unwrap_or(0),
                        c["end"].as_u64().unwrap_or(0),
                    );
                    b.saturating_sub(a) + 1
                })
                .sum()
        });
        SampleKey {
            id: s("id"),
            stratum: format!(
                "{} / {} / {} / {}",
                s("category"),
                s("lib"),
                s("generator"),
                s("template_id")
            ),
            generator: s("generator"),
            grounding: cited as f64 * 100.0 / words.max(1) as f64,
            code_chars: code.len(),
        }
    }
}

fn draw(id: &str, seed: u64) -> u64 {
    xxh3_64_with_seed(id.as_bytes(), seed)
}

/// Model answers are the least checked: read them first, then find-the-bug tasks.
fn generator_rank(g: &str) -> u8 {
    match g {
        "llm" => 0,
        "mutation" => 1,
        "facts" => 2,
        _ => 0,
    }
}

/// Riskiest first: model over facts, lowest grounding, longest code; then the draw.
pub fn riskier(a: &SampleKey, b: &SampleKey, seed: u64) -> Ordering {
    generator_rank(&a.generator)
        .cmp(&generator_rank(&b.generator))
        .then(a.grounding.total_cmp(&b.grounding))
        .then(b.code_chars.cmp(&a.code_chars))
        .then(draw(&a.id, seed).cmp(&draw(&b.id, seed)))
}

/// A stratified sample of `n` of `keys` (indices into it), riskiest first: one entry of
/// each stratum (strata in draw order) while `n` lasts, then each next entry from the
/// stratum read least in proportion to its size.
pub fn stratified(keys: &[SampleKey], n: usize, seed: u64) -> Vec<usize> {
    let mut strata: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        strata.entry(k.stratum.as_str()).or_default().push(i);
    }
    let mut strata: Vec<(u64, Vec<usize>)> = strata
        .into_iter()
        .map(|(name, mut members)| {
            members.sort_by_key(|&i| (draw(&keys[i].id, seed), i));
            (draw(name, seed), members)
        })
        .collect();
    strata.sort();
    let mut taken = vec![0usize; strata.len()];
    let mut out = Vec::new();
    for (s, t) in taken.iter_mut().enumerate() {
        if out.len() == n {
            break;
        }
        out.push(strata[s].1[0]);
        *t = 1;
    }
    while out.len() < n.min(keys.len()) {
        let next = (0..strata.len())
            .filter(|&s| taken[s] < strata[s].1.len())
            .min_by(|&a, &b| {
                let share = |s: usize| taken[s] as f64 / strata[s].1.len() as f64;
                share(a).total_cmp(&share(b)).then(a.cmp(&b))
            })
            .expect("fewer taken than there are keys");
        out.push(strata[next].1[taken[next]]);
        taken[next] += 1;
    }
    out.sort_by(|&a, &b| riskier(&keys[a], &keys[b], seed));
    out
}

/// The reviewers (indices into `reviewers`) an entry goes to: one, and a second for the
/// `overlap` share of entries. The same id, reviewers and seed give the same answer.
pub fn assigned_to(id: &str, reviewers: usize, overlap: f64, seed: u64) -> Vec<usize> {
    if reviewers == 0 {
        return Vec::new();
    }
    let h = draw(id, seed);
    let first = (h % reviewers as u64) as usize;
    let mut out = vec![first];
    let share = (draw(id, seed ^ 0x5eed) % 1_000_000) as f64 / 1_000_000.0;
    if reviewers > 1 && share < overlap {
        let step = 1 + ((h >> 32) % (reviewers as u64 - 1)) as usize;
        out.push((first + step) % reviewers);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: usize, stratum: &str, generator: &str, grounding: f64, code: usize) -> SampleKey {
        SampleKey {
            id: format!("e-{id}"),
            stratum: stratum.into(),
            generator: generator.into(),
            grounding,
            code_chars: code,
        }
    }

    fn keys() -> Vec<SampleKey> {
        let mut k = Vec::new();
        for i in 0..90 {
            k.push(key(i, "big", "facts", 5.0, 0));
        }
        for i in 90..99 {
            k.push(key(i, "small", "facts", 5.0, 0));
        }
        k.push(key(99, "tiny", "llm", 9.0, 0));
        k
    }

    #[test]
    fn every_stratum_is_read_and_the_rest_in_proportion() {
        let k = keys();
        let s = stratified(&k, 10, 7);
        assert_eq!(s.len(), 10);
        let count = |name: &str| s.iter().filter(|&&i| k[i].stratum == name).count();
        assert_eq!((count("big"), count("small"), count("tiny")), (8, 1, 1));
        // Reproducible, and another seed draws other entries.
        assert_eq!(s, stratified(&k, 10, 7));
        assert_ne!(s, stratified(&k, 10, 8));
        // The model answer comes first.
        assert_eq!(k[s[0]].generator, "llm");
        // Asking for more than there is gives everything once.
        let mut all = stratified(&k, 500, 1);
        all.sort();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn riskiest_first_lowest_grounding_then_longest_code() {
        let a = key(1, "s", "facts", 1.0, 0);
        let b = key(2, "s", "facts", 3.0, 900);
        let c = key(3, "s", "facts", 1.0, 400);
        let mut v = [a.clone(), b.clone(), c.clone()];
        v.sort_by(|x, y| riskier(x, y, 0));
        assert_eq!(v.map(|k| k.id), [c.id, a.id, b.id]);
    }

    #[test]
    fn blind_overlap_deals_a_share_to_two_reviewers() {
        let ids: Vec<String> = (0..2000).map(|i| format!("rocblas-{i:016x}")).collect();
        let dealt: Vec<Vec<usize>> = ids.iter().map(|id| assigned_to(id, 3, 0.2, 11)).collect();
        let twice = dealt.iter().filter(|d| d.len() == 2).count();
        assert!((340..460).contains(&twice), "{twice} of 2000 twice");
        assert!(dealt.iter().all(|d| d.len() < 2 || d[0] != d[1]));
        for r in 0..3 {
            let n = dealt.iter().filter(|d| d.contains(&r)).count();
            assert!((700..900).contains(&n), "reviewer {r}: {n}");
        }
        assert_eq!(assigned_to(&ids[5], 3, 0.2, 11), dealt[5]);
        assert_eq!(assigned_to("x", 1, 1.0, 0), vec![0]);
    }
}
