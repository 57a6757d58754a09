//! Near-duplicate detection: MinHash over word 5-shingles of normalized
//! question + answer + code.
//!
//! Two entries whose estimated Jaccard similarity reaches the threshold say the same
//! thing; keeping both teaches a model nothing and inflates a data mix. The same
//! signatures serve within a run, across shards, against earlier releases' outputs and
//! against a held-out evaluation set (decontamination).

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Number of hash functions in a signature.
pub const HASHES: usize = 64;
/// Bands for locality-sensitive lookup (HASHES / BANDS rows each).
const BANDS: usize = 16;
const ROWS: usize = HASHES / BANDS;
/// Default similarity from which two entries count as duplicates.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// A MinHash signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature(pub [u64; HASHES]);

/// Lowercase words of letters, digits and `_`, so formatting and punctuation do not
/// hide a duplicate.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

/// The signature of a text.
pub fn signature(text: &str) -> Signature {
    let w = words(text);
    let mut sig = [u64::MAX; HASHES];
    let shingles: Vec<String> = if w.len() < 5 {
        vec![w.join(" ")]
    } else {
        w.windows(5).map(|s| s.join(" ")).collect()
    };
    for sh in &shingles {
        for (k, slot) in sig.iter_mut().enumerate() {
            let h = xxh3_64_with_seed(sh.as_bytes(), k as u64);
            if h < *slot {
                *slot = h;
            }
        }
    }
    Signature(sig)
}

/// Estimated Jaccard similarity of two signatures.
pub fn similarity(a: &Signature, b: &Signature) -> f64 {
    a.0.iter().zip(&b.0).filter(|(x, y)| x == y).count() as f64 / HASHES as f64
}

/// The text an entry is compared by.
pub fn entry_text(question: &str, answer: &str, code: Option<&str>) -> String {
    format!("{question}\n{answer}\n{}", code.unwrap_or(""))
}

/// Signatures seen so far, with a banded index so a lookup does not scan everything.
#[derive(Default)]
pub struct DedupIndex {
    items: Vec<(String, Signature)>,
    bands: HashMap<(usize, u64), Vec<usize>>,
}

impl DedupIndex {
    /// Adds a signature under an id.
    pub fn insert(&mut self, id: &str, sig: Signature) {
        let k = self.items.len();
        for b in 0..BANDS {
            self.bands
                .entry((b, band_key(&sig, b)))
                .or_default()
                .push(k);
        }
        self.items.push((id.to_string(), sig));
    }

    /// The most similar earlier id at or above `threshold`, with its similarity.
    pub fn nearest(&self, sig: &Signature, threshold: f64) -> Option<(String, f64)> {
        let mut best: Option<(usize, f64)> = None;
        let mut seen = std::collections::HashSet::new();
        for b in 0..BANDS {
            for &k in self.bands.get(&(b, band_key(sig, b))).into_iter().flatten() {
                if !seen.insert(k) {
                    continue;
                }
                let s = similarity(sig, &self.items[k].1);
                if s >= threshold && best.is_none_or(|(_, bs)| s > bs) {
                    best = Some((k, s));
                }
            }
        }
        best.map(|(k, s)| (self.items[k].0.clone(), s))
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

fn band_key(sig: &Signature, band: usize) -> u64 {
    let mut h = 0u64;
    for v in &sig.0[band * ROWS..(band + 1) * ROWS] {
        h = h.rotate_left(7) ^ v;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "rocblas_scal_kernel multiplies each element of x by alpha; one thread per element, blocks of NB threads, batches along blockIdx.z";

    #[test]
    fn rewordings_are_near_and_other_texts_are_far() {
        let a = signature(A);
        let b = signature(&A.replace(';', ",").to_uppercase());
        assert_eq!(similarity(&a, &b), 1.0);
        let c = signature(&format!("{A} and the result is written back in place"));
        assert!(similarity(&a, &c) > 0.6, "{}", similarity(&a, &c));
        let d = signature("getf2_iamax finds the pivot of each column with a reduction over the wavefront and swaps rows");
        assert!(similarity(&a, &d) < 0.2);
    }

    #[test]
    fn index_finds_the_duplicate() {
        let mut idx = DedupIndex::default();
        idx.insert("e1", signature(A));
        idx.insert(
            "e2",
            signature("something else entirely about trsm blocking and substitution kernels"),
        );
        let hit = idx.nearest(&signature(&A.replace("alpha", "ALPHA")), DEFAULT_THRESHOLD);
        assert_eq!(hit.map(|h| h.0), Some("e1".to_string()));
        assert!(idx
            .nearest(
                &signature("unrelated text about host pointer mode handling"),
                DEFAULT_THRESHOLD
            )
            .is_none());
    }
}
