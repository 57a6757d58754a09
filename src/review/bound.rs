//! The stop rule of a spot check: how high the defect rate can still be, given the
//! decisions so far.
//!
//! The bound is the exact one-sided Clopper-Pearson upper limit: the defect rate `p` at
//! which seeing `defects` or fewer in `decisions` draws has probability `1 - confidence`.
//! With no defect it is `1 - (1 - confidence)^(1/n)`, so 59 clean decisions bound the
//! rate at 4.95% with 95% confidence. A sample can stop once the bound is below the rate
//! the run may have.

/// The confidence every figure of the review UI and summary is given at.
pub const CONFIDENCE: f64 = 0.95;

/// `P(X <= k)` for `X ~ Binomial(n, p)`, summed in log space so large `n` does not
/// underflow.
fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return if k >= n { 1.0 } else { 0.0 };
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    // ln C(n, i) built up term by term.
    let mut ln_choose = 0.0;
    let mut total = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_choose + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    total.min(1.0)
}

/// The exact upper bound on the defect rate after `defects` of `decisions` were
/// defects, at `confidence` (one-sided). `None` before any decision.
pub fn upper_bound(defects: u64, decisions: u64, confidence: f64) -> Option<f64> {
    if decisions == 0 {
        return None;
    }
    if defects >= decisions {
        return Some(1.0);
    }
    let alpha = 1.0 - confidence;
    // The CDF falls as p grows: bisect for the p where it crosses alpha.
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if binomial_cdf(defects, decisions, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

/// How many more clean decisions bring the bound to `target` or below (0 when it is
/// already there).
pub fn clean_decisions_to(target: f64, defects: u64, decisions: u64, confidence: f64) -> u64 {
    let mut more = 0;
    // The bound falls with every clean decision; the loop ends for any target > 0.
    while upper_bound(defects, decisions + more, confidence).is_none_or(|b| b > target) {
        more += 1;
        if more > 1_000_000 {
            break;
        }
    }
    more
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifty_nine_clean_decisions_bound_the_rate_at_five_percent() {
        let b59 = upper_bound(0, 59, 0.95).unwrap();
        let b58 = upper_bound(0, 58, 0.95).unwrap();
        assert!(b59 < 0.05 && b58 > 0.05, "{b58} {b59}");
        // The closed form with no defect.
        assert!((b59 - (1.0 - 0.05f64.powf(1.0 / 59.0))).abs() < 1e-12);
        assert_eq!(clean_decisions_to(0.05, 0, 0, 0.95), 59);
        assert_eq!(clean_decisions_to(0.05, 0, 40, 0.95), 19);
    }

    #[test]
    fn bounds_with_defects_match_clopper_pearson() {
        // scipy 1.17 `beta.ppf(0.95, k + 1, n - k)` for (k, n): (1, 20), (3, 100), (10, 50).
        for (k, n, want) in [
            (1, 20, 0.216_106_164_206_847_3),
            (3, 100, 0.075_710_793_749_830_04),
            (10, 50, 0.315_596_061_420_013_84),
        ] {
            let got = upper_bound(k, n, 0.95).unwrap();
            assert!((got - want).abs() < 1e-9, "{k}/{n}: {got} vs {want}");
            // The defining property: P(X <= k | bound) = 5%.
            assert!((binomial_cdf(k, n, got) - 0.05).abs() < 1e-9);
        }
        assert_eq!(upper_bound(0, 0, 0.95), None);
        assert_eq!(upper_bound(4, 4, 0.95), Some(1.0));
    }
}
