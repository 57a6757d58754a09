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

/// How many words [`words`] finds, without making them.
fn word_count(text: &str) -> usize {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .count()
}

/// A 64-bit mixer (splitmix64's finalizer): a bijection whose every output bit
/// depends on every input bit.
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One seed per hash function of a signature.
const SEEDS: [u64; HASHES] = {
    let mut s = [0u64; HASHES];
    let mut k = 0;
    while k < HASHES {
        s[k] = mix(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(k as u64 + 1));
        k += 1;
    }
    s
};

/// The word 5-shingles of a text (one shingle of all its words when it has fewer),
/// each hashed once: every word hashed, then the five folded in order.
fn shingle_hashes(text: &str) -> Vec<u64> {
    let mut lower = String::new();
    let w: Vec<u64> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| {
            lower.clear();
            lower.extend(w.chars().flat_map(char::to_lowercase));
            xxh3_64_with_seed(lower.as_bytes(), 0)
        })
        .collect();
    let fold = |ws: &[u64]| ws.iter().fold(0u64, |h, &x| mix(h ^ x));
    if w.len() < 5 {
        vec![fold(&w)]
    } else {
        w.windows(5).map(fold).collect()
    }
}

/// The signature of a text: per hash function, the least of its shingles' hashes, the
/// function being the shingle's hash mixed with that function's seed (hashing each
/// shingle once: 64 hashes of every shingle's bytes were most of an answer's checks).
pub fn signature(text: &str) -> Signature {
    let mut sig = [u64::MAX; HASHES];
    for h in shingle_hashes(text) {
        for (slot, seed) in sig.iter_mut().zip(SEEDS) {
            let v = mix(h ^ seed);
            if v < *slot {
                *slot = v;
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
    format!("{question}\n{answer}\n{code}", code = code.unwrap_or(""))
}

/// Answers of at least this many words are also compared on their own.
const ANSWER_MIN_WORDS: usize = 12;
/// Similarity from which two answers alone count as duplicates: the same answer under
/// two phrasings of a question teaches the answer twice.
pub const ANSWER_THRESHOLD: f64 = 0.9;

/// What an entry is compared by: question + answer + code together, and the answer
/// alone when it is long enough to say something of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySignature {
    whole: Signature,
    answer: Option<Signature>,
}

/// The signature of an entry: the one function every duplicate check calls.
pub fn entry_signature(question: &str, answer: &str, code: Option<&str>) -> EntrySignature {
    EntrySignature {
        whole: signature(&entry_text(question, answer, code)),
        answer: (word_count(answer) >= ANSWER_MIN_WORDS).then(|| signature(answer)),
    }
}

/// An earlier entry that a new one duplicates.
#[derive(Debug, Clone, PartialEq)]
pub struct Near {
    /// The earlier entry's id.
    pub id: String,
    /// Estimated Jaccard similarity.
    pub similarity: f64,
    /// Only the answers are alike.
    pub answer_only: bool,
}

impl std::fmt::Display for Near {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.answer_only {
            write!(
                f,
                "its answer is a near-duplicate of {}'s (similarity {:.2})",
                self.id, self.similarity
            )
        } else {
            write!(
                f,
                "near-duplicate of {} (similarity {:.2})",
                self.id, self.similarity
            )
        }
    }
}

/// Entry signatures already made, by a hash of the text they sign: the entries a run
/// writes are read back by each later stage (find-the-bug entries, then the answers),
/// and signing them again was a third of the answer phase's own CPU.
#[derive(Default)]
pub struct SignatureMemo(std::sync::Mutex<HashMap<u64, EntrySignature>>);

impl SignatureMemo {
    /// [`entry_signature`], made once per distinct entry text.
    pub fn entry_signature(
        &self,
        question: &str,
        answer: &str,
        code: Option<&str>,
    ) -> EntrySignature {
        let mut key = xxh3_64_with_seed(question.as_bytes(), 1);
        key = mix(key ^ xxh3_64_with_seed(answer.as_bytes(), 2));
        key = mix(key ^ code.map_or(0, |c| xxh3_64_with_seed(c.as_bytes(), 3)));
        let known = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        if let Some(s) = known {
            return s;
        }
        let s = entry_signature(question, answer, code);
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, s.clone());
        s
    }
}

/// Signatures seen so far, with a banded index so a lookup does not scan everything.
#[derive(Default)]
pub struct DedupIndex {
    items: Vec<(String, EntrySignature)>,
    /// Band keys of whole signatures (`false`) and of answers (`true`).
    bands: HashMap<(bool, usize, u64), Vec<usize>>,
}

impl DedupIndex {
    /// Adds an entry's signature under its id.
    pub fn insert(&mut self, id: &str, sig: EntrySignature) {
        let k = self.items.len();
        for (side, s) in [(false, Some(&sig.whole)), (true, sig.answer.as_ref())] {
            let Some(s) = s else { continue };
            for b in 0..BANDS {
                self.bands
                    .entry((side, b, band_key(s, b)))
                    .or_default()
                    .push(k);
            }
        }
        self.items.push((id.to_string(), sig));
    }

    /// The most similar earlier entry: as a whole at or above `threshold`, or else by
    /// its answer alone at or above [`ANSWER_THRESHOLD`].
    pub fn nearest(&self, sig: &EntrySignature, threshold: f64) -> Option<Near> {
        let best = |side: bool, s: &Signature, limit: f64| {
            let mut best: Option<(usize, f64)> = None;
            let mut seen = std::collections::HashSet::new();
            for b in 0..BANDS {
                for &k in self
                    .bands
                    .get(&(side, b, band_key(s, b)))
                    .into_iter()
                    .flatten()
                {
                    if !seen.insert(k) {
                        continue;
                    }
                    let other = if side {
                        self.items[k].1.answer.as_ref()
                    } else {
                        Some(&self.items[k].1.whole)
                    };
                    let Some(other) = other else { continue };
                    let x = similarity(s, other);
                    if x >= limit && best.is_none_or(|(_, bx)| x > bx) {
                        best = Some((k, x));
                    }
                }
            }
            best.map(|(k, x)| Near {
                id: self.items[k].0.clone(),
                similarity: x,
                answer_only: side,
            })
        };
        best(false, &sig.whole, threshold).or_else(|| {
            sig.answer
                .as_ref()
                .and_then(|a| best(true, a, ANSWER_THRESHOLD.max(threshold)))
        })
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

/// The word 5-shingles of a text, hashed: what [`signature`] estimates the Jaccard
/// similarity of.
pub fn shingles(text: &str) -> std::collections::HashSet<u64> {
    shingle_hashes(text).into_iter().collect()
}

/// Shingle sets seen so far, compared exactly: where the entries are few enough (a
/// library's fact answers), a pair at 0.8 is not missed or invented by an estimate.
#[derive(Default)]
pub struct ExactIndex {
    items: Vec<(String, std::collections::HashSet<u64>)>,
    by_shingle: HashMap<u64, Vec<usize>>,
}

impl ExactIndex {
    /// Adds a text's shingles under an id.
    pub fn insert(&mut self, id: &str, set: std::collections::HashSet<u64>) {
        let k = self.items.len();
        for h in &set {
            self.by_shingle.entry(*h).or_default().push(k);
        }
        self.items.push((id.to_string(), set));
    }

    /// The most similar earlier id at or above `threshold` (Jaccard), with its
    /// similarity.
    pub fn nearest(
        &self,
        set: &std::collections::HashSet<u64>,
        threshold: f64,
    ) -> Option<(String, f64)> {
        let mut shared: HashMap<usize, usize> = HashMap::new();
        for h in set {
            for &k in self.by_shingle.get(h).into_iter().flatten() {
                *shared.entry(k).or_default() += 1;
            }
        }
        shared
            .into_iter()
            .map(|(k, n)| {
                let union = set.len() + self.items[k].1.len() - n;
                (k, n as f64 / union.max(1) as f64)
            })
            .filter(|(_, j)| *j >= threshold)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(k, j)| (self.items[k].0.clone(), j))
    }
}

/// Words per n-gram for decontamination, as NeMo Curator and open-instruct use.
pub const CONTAMINATION_NGRAM: usize = 13;

/// A held-out evaluation set: the 13-grams of its questions and of its answers, kept
/// apart so a copied question is found whatever the answer says, and the other way.
#[derive(Debug, Default)]
pub struct EvalSet {
    /// Name (the file it came from).
    pub name: String,
    /// Items read.
    pub items: usize,
    questions: std::collections::HashSet<u64>,
    answers: std::collections::HashSet<u64>,
    /// Whole normalized texts shorter than an n-gram, compared by containment.
    short_questions: Vec<String>,
    short_answers: Vec<String>,
}

/// Which side of an entry overlaps an evaluation item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// The question shares an n-gram with an evaluation question.
    Question,
    /// The answer shares an n-gram with an evaluation answer.
    Answer,
}

fn grams(w: &[String]) -> impl Iterator<Item = u64> + '_ {
    w.windows(CONTAMINATION_NGRAM)
        .map(|g| xxh3_64_with_seed(g.join(" ").as_bytes(), 0))
}

/// Texts too short for one n-gram need this many words to be compared at all.
const MIN_SHORT_WORDS: usize = 6;

impl EvalSet {
    /// An empty set named `name`.
    pub fn named(name: &str) -> EvalSet {
        EvalSet {
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// Adds an evaluation item's question and answer.
    pub fn add(&mut self, question: &str, answer: &str) {
        self.items += 1;
        for (text, set, short) in [
            (question, &mut self.questions, &mut self.short_questions),
            (answer, &mut self.answers, &mut self.short_answers),
        ] {
            let w = words(text);
            set.extend(grams(&w));
            short.push(format!(" {} ", w.join(" ")));
        }
    }

    /// Does the entry's question or answer overlap this set?
    pub fn overlap(&self, question: &str, answer: &str) -> Option<Overlap> {
        let hit = |text: &str, set: &std::collections::HashSet<u64>, short: &[String]| {
            let w = words(text);
            if w.len() >= CONTAMINATION_NGRAM {
                grams(&w).any(|g| set.contains(&g))
            } else if w.len() >= MIN_SHORT_WORDS {
                let needle = format!(" {} ", w.join(" "));
                short.iter().any(|t| t.contains(&needle))
            } else {
                false
            }
        };
        if hit(question, &self.questions, &self.short_questions) {
            Some(Overlap::Question)
        } else if hit(answer, &self.answers, &self.short_answers) {
            Some(Overlap::Answer)
        } else {
            None
        }
    }
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

    fn sig(q: &str, a: &str) -> EntrySignature {
        entry_signature(q, a, None)
    }

    #[test]
    fn index_finds_the_duplicate() {
        let q = "How does the scal kernel work?";
        let mut idx = DedupIndex::default();
        idx.insert("e1", sig(q, A));
        idx.insert(
            "e2",
            sig(
                q,
                "something else entirely about trsm blocking and substitution kernels",
            ),
        );
        let hit = idx.nearest(&sig(q, &A.replace("alpha", "ALPHA")), DEFAULT_THRESHOLD);
        assert_eq!(
            hit.map(|h| (h.id, h.answer_only)),
            Some(("e1".to_string(), false))
        );
        assert!(idx
            .nearest(
                &sig(q, "unrelated text about host pointer mode handling"),
                DEFAULT_THRESHOLD
            )
            .is_none());
    }

    #[test]
    fn the_same_answer_under_another_question_is_a_duplicate() {
        let mut idx = DedupIndex::default();
        idx.insert(
            "e1",
            sig(
                "How are threads mapped to elements in the scal kernel of rocBLAS?",
                A,
            ),
        );
        let other = "Describe, for a reviewer new to rocBLAS and its batched interfaces, what a launch of the scal kernel looks like on the device and how the grid is shaped.";
        let hit = idx.nearest(&sig(other, A), DEFAULT_THRESHOLD).unwrap();
        assert_eq!((hit.id.as_str(), hit.answer_only), ("e1", true));
        assert!(hit.to_string().contains("answer"), "{hit}");
        // A short answer ("Yes.") is said by many questions and compared only as a whole.
        let mut idx = DedupIndex::default();
        idx.insert(
            "e1",
            sig(
                "Does rocblas_sscal launch a kernel for n = 0?",
                "No, it returns early.",
            ),
        );
        assert!(idx
            .nearest(
                &sig(
                    "Does rocblas_dnrm2 read x when incx is 0?",
                    "No, it returns early."
                ),
                DEFAULT_THRESHOLD
            )
            .is_none());
    }

    #[test]
    fn eval_overlap_is_found_per_side() {
        let mut set = EvalSet::default();
        set.add(
            "How does rocblas_scal_kernel map threads to the elements of x in the batched case?",
            "Each thread scales one element and blockIdx.z picks the batch instance in the grid launched by the launcher.",
        );
        // The same question with another answer.
        assert_eq!(
            set.overlap(
                "How does rocblas_scal_kernel map threads to the elements of x in the batched case?",
                "Something else entirely."
            ),
            Some(Overlap::Question)
        );
        assert_eq!(
            set.overlap(
                "Another question?",
                "As the code shows, each thread scales one element and blockIdx.z picks the batch instance in the grid launched by the launcher, see line 40."
            ),
            Some(Overlap::Answer)
        );
        assert_eq!(
            set.overlap("What does trsm do with the diagonal blocks?", A),
            None
        );
    }

    #[test]
    fn the_exact_index_finds_a_pair_at_the_threshold_and_no_other() {
        let a = "rocblas_internal_copy_launcher launches rocblas_copy_kernel with grid blocks 1 batches block NB 256 only when incx != 1 || incy != 1";
        let b = "rocblas_internal_copy_launcher launches rocblas_copy_kernel with grid blocks 1 batches block NB 256 only when incy != 1";
        let (sa, sb) = (shingles(a), shingles(b));
        let inter = sa.intersection(&sb).count();
        let jaccard = inter as f64 / (sa.len() + sb.len() - inter) as f64;
        let mut idx = ExactIndex::default();
        idx.insert("a", sa);
        assert_eq!(idx.nearest(&sb, jaccard), Some(("a".to_string(), jaccard)));
        assert_eq!(idx.nearest(&sb, jaccard + 1e-9), None);
        assert!(idx
            .nearest(
                &shingles("something else entirely, five words or more"),
                0.1
            )
            .is_none());
    }
}
