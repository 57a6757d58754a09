//! Conditions evaluated on what an API fixes.
//!
//! A condition as the code writes it (`using_rocblas_float && unit_inc && batch_count <=
//! 8192`) is read with the values one API gives its names (`batch_count = 1`, `Ty =
//! float*`): it comes out true, false, or what is left of it once the known parts are
//! gone (`unit_inc`). Only what is certain is decided; anything the evaluator does not
//! understand stays as written, so an unknown never turns into a false.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// A value a name has for one API: a number, a truth value or a type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    Int(i64),
    Bool(bool),
    Type(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Type(t) => write!(f, "{t}"),
        }
    }
}

/// The prefix of a name whose value is one of a set (`"112,113"`), where the callers
/// give it different values.
pub const ONE_OF: &str = "?";

/// The prefix of a condition every path into a function has passed (the caller's
/// `if(n_64 <= 0 || batch_count_64 == 0) return ...;` before its call makes
/// `not (n <= 0 || batch_count == 0)` hold in the 32-bit launcher it calls).
pub const HOLDS: &str = "!";

/// The prefix of a constant bool local's name whose value is not known, kept with the
/// test it is set to (`=notrans` is `(trans == rocblas_operation_none)`).
pub const DEFINED: &str = "=";

/// The prefix of a callee's name whose every definition the caller reaches returns one
/// literal (`()rocblas_rotm_quick_return_param`: the pointer-array overload is
/// `return false;`, rocblas_rotm_kernels.hpp:178-184): a call of it is that literal.
pub const RETURNS: &str = "()";

/// The key of the combinations of values a function's call sites pass, where they
/// differ in two or more names (`side=141,trans=111;side=142,trans=113`).
pub const SITES: &str = "#sites";

/// The combinations of integer values the call sites of the function of `env` pass,
/// where it has them: each a list of `(name, value)`.
pub fn site_combinations(env: &Env) -> Vec<Vec<(&str, i64)>> {
    let Some(Value::Type(s)) = env.values.get(SITES) else {
        return Vec::new();
    };
    s.split(';')
        .map(|combo| {
            combo
                .split(',')
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k, v.parse().ok()?))
                })
                .collect()
        })
        .collect()
}

/// The names known at one point of one function.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Values of names: template parameters, function parameters fixed by every
    /// caller, local constants.
    pub values: BTreeMap<String, Value>,
    /// The function's template parameters: a type naming one that has no value is not
    /// known, whatever it looks like.
    pub params: BTreeSet<String>,
}

/// What a condition comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Truth {
    True,
    False,
    /// Not decided: what is left of the condition.
    Open(String),
}

/// A condition the statement scanner writes for a loop or a `switch` (`loop: ...`,
/// `switch (m)`, `case 1`, `default`): where a statement sits, not a test of values.
pub fn is_branch_header(c: &str) -> bool {
    c.starts_with("loop:") || c.starts_with("switch (") || c.starts_with("case ") || c == "default"
}

/// Evaluates one condition as the statement scanner writes it (`not (X)`,
/// `constexpr X`, `loop: ...`, `switch (m)`, `case 1`).
pub fn condition(cond: &str, env: &Env) -> Truth {
    match condition_as_written(cond, env) {
        // A constant test named in it may decide what its name alone does not.
        Truth::Open(r) => match expanded(cond, env) {
            Some(e) => match condition_as_written(&e, env) {
                Truth::Open(_) => by_cases(&e, env)
                    .or_else(|| refuted(&e, env))
                    .unwrap_or(Truth::Open(r)),
                t => t,
            },
            None => by_cases(cond, env)
                .or_else(|| refuted(cond, env))
                .unwrap_or(Truth::Open(r)),
        },
        t => t,
    }
}

/// A name, member or call with no operator outside its parentheses
/// (`handle->is_device_memory_size_query()`), so `!x` is `not (x)`.
fn is_operand(x: &str) -> bool {
    if is_name(x) {
        return true;
    }
    let mut depth = 0i32;
    let b = x.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ if depth > 0 => {}
            b'_' | b'.' | b':' => {}
            b'-' if b.get(i + 1) == Some(&b'>') => {}
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            c if c.is_ascii_alphanumeric() => {}
            _ => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0 && x.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// False where a held `not (A && B && ...)` has every one of its tests hold once
/// `cond`'s do: the argument check returned success for `pointer_mode == host &&
/// *alpha == 0 && *beta == 1` (rocblas_gemv.hpp:70-73), so the launcher's host-mode
/// `!*alpha && *beta == 1` (rocblas_gemv_kernels.cpp:255) cannot hold.
fn refuted(cond: &str, env: &Env) -> Option<Truth> {
    let negated: Vec<&str> = env
        .values
        .range(format!("{HOLDS}not (")..format!("{HOLDS}not )"))
        .map(|(k, _)| &k[HOLDS.len()..])
        .filter(|k| k.contains("&&"))
        .take(8)
        .collect();
    // Only what `cond` says of its own names is new here: a negation none of whose
    // names `cond` mentions was already settled by the environment alone.
    let words = |t: &str| -> BTreeSet<String> {
        t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
            .map(str::to_string)
            .collect()
    };
    let named = words(cond);
    let negated: Vec<&str> = negated
        .into_iter()
        .filter(|n| !words(n).is_disjoint(&named))
        .collect();
    if negated.is_empty() {
        return None;
    }
    let mut with = env.clone();
    let c = without_parens(cond.trim());
    for part in split_top(c, "&&") {
        let part = without_parens(part.trim());
        with.values
            .insert(format!("{HOLDS}{part}"), Value::Bool(true));
        // `!*alpha` is `*alpha == 0`.
        if let Some(x) = part.strip_prefix('!').filter(|x| !x.starts_with('(')) {
            with.values
                .insert(format!("{HOLDS}{} == 0", x.trim()), Value::Bool(true));
        }
        for (name, op, k) in comparisons(part, true) {
            with.values
                .insert(format!("{HOLDS}{name} {op} {k}"), Value::Bool(true));
        }
    }
    // The pointer mode is one of two: not the one is the other.
    let modes = ["rocblas_pointer_mode_host", "rocblas_pointer_mode_device"];
    let held_not: Vec<(String, &str)> = with
        .values
        .keys()
        .filter_map(|k| {
            k.strip_prefix(HOLDS)?
                .strip_prefix("not (")?
                .strip_suffix(')')
        })
        .filter_map(|t| {
            let (x, m) = t.split_once(" == ")?;
            let other = match m.trim() {
                "rocblas_pointer_mode_host" => modes[1],
                "rocblas_pointer_mode_device" => modes[0],
                _ => return None,
            };
            Some((x.trim().to_string(), other))
        })
        .collect();
    for (x, other) in held_not {
        with.values
            .insert(format!("{HOLDS}{x} == {other}"), Value::Bool(true));
    }
    for n in negated {
        let Some(body) = n.strip_prefix("not (").and_then(|r| r.strip_suffix(')')) else {
            continue;
        };
        let atoms = split_top(body, "&&");
        if atoms.len() < 2 {
            continue;
        }
        let mut probe = with.clone();
        probe.values.remove(&format!("{HOLDS}{n}"));
        if atoms
            .iter()
            .all(|a| condition_as_written(without_parens(a.trim()), &probe) == Truth::True)
        {
            return Some(Truth::False);
        }
    }
    None
}

/// `cond` decided under each arm of a held disjunction of compound tests, where every
/// arm decides it the same way (gemm_ex3 falls back only where `(trans_a == transpose
/// && ...) || (trans_a == none && ...)` holds, so `trans_a == conjugate_transpose` is
/// false there).
fn by_cases(cond: &str, env: &Env) -> Option<Truth> {
    let compound: Vec<&str> = env
        .values
        .range(HOLDS.to_string().."\"".to_string())
        .map(|(k, _)| &k[HOLDS.len()..])
        .filter(|h| h.contains("||") && h.contains("&&"))
        .take(3)
        .collect();
    for h in compound {
        let inner = without_parens(h.trim());
        let arms = split_top(inner, "||");
        if arms.len() < 2 || arms.len() > 6 || !arms.iter().any(|a| a.contains("&&")) {
            continue;
        }
        let mut seen: Option<bool> = None;
        let mut decides = true;
        for arm in arms {
            let mut e = env.clone();
            e.values.remove(&format!("{HOLDS}{h}"));
            e.values.insert(
                format!("{HOLDS}{}", without_parens(arm.trim())),
                Value::Bool(true),
            );
            let got = match condition(cond, &e) {
                Truth::True => true,
                Truth::False => false,
                Truth::Open(_) => {
                    decides = false;
                    break;
                }
            };
            if seen.is_some_and(|s| s != got) {
                decides = false;
                break;
            }
            seen = Some(got);
        }
        if decides {
            return seen.map(|b| if b { Truth::True } else { Truth::False });
        }
    }
    None
}

/// `x` without parentheses wrapping all of it.
pub fn without_parens(x: &str) -> &str {
    let mut x = x;
    while let Some(inner) = x.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        let whole = inner.chars().try_fold(0i32, |d, ch| {
            let d = d + i32::from(ch == '(') - i32::from(ch == ')');
            (d >= 0).then_some(d)
        }) == Some(0);
        if !whole {
            break;
        }
        x = inner.trim();
    }
    x
}

/// What tests that all hold (`held`, each as the scanner writes it) decide of `test`
/// alone, with no other value known: an answer states `n % 16 != 0` and `trans ==
/// transpose && uplo == upper`, so `not ((n % 32 == 0) && (k % 8 == 0))` and `not
/// (trans == transpose && uplo == lower)` say nothing more and are left out of it.
pub fn decided_by(held: &[&str], test: &str) -> Option<bool> {
    let mut env = Env::default();
    let mut atoms: Vec<&str> = Vec::new();
    for h in held {
        let h = without_parens(h.trim());
        env.values.insert(format!("{HOLDS}{h}"), Value::Bool(true));
        let parts = split_top(h, "&&");
        if parts.len() > 1 {
            for p in parts {
                let p = without_parens(p.trim());
                env.values.insert(format!("{HOLDS}{p}"), Value::Bool(true));
                atoms.push(p);
            }
        } else {
            atoms.push(h);
        }
    }
    let test = without_parens(test.trim());
    match condition(test, &env) {
        Truth::True => return Some(true),
        Truth::False => return Some(false),
        Truth::Open(_) => {}
    }
    // A remainder test: `n % 32 == 0` cannot hold where `n % 16 != 0` does; a name
    // equal to one floating literal is not equal to another (`alpha == -1.0` beside
    // `alpha == 1.0`).
    split_top(test, "&&")
        .iter()
        .any(|c| {
            let c = without_parens(c.trim());
            atoms
                .iter()
                .any(|h| remainder_refutes(h, c) || other_literal(h, c))
        })
        .then_some(false)
}

/// `held` (`x == 1.0`) and `test` (`x == -1.0`) give one name two different numbers.
fn other_literal(held: &str, test: &str) -> bool {
    let parse = |s: &str| -> Option<(String, f64)> {
        let (x, v) = s.split_once(" == ")?;
        let x = without_parens(x.trim());
        is_name(x).then_some(())?;
        Some((
            x.to_string(),
            v.trim().trim_end_matches(['f', 'F']).parse().ok()?,
        ))
    };
    match (parse(held), parse(test)) {
        (Some((x, a)), Some((y, b))) => x == y && a != b,
        _ => false,
    }
}

/// `held` (`x % b != 0`) makes `test` (`x % a == 0`, `b` dividing `a`) false.
fn remainder_refutes(held: &str, test: &str) -> bool {
    let parse = |s: &str, op: &str| -> Option<(String, i64)> {
        let (lhs, rhs) = s.split_once(op)?;
        (rhs.trim() == "0").then_some(())?;
        let (x, m) = without_parens(lhs.trim()).split_once(" % ")?;
        let x = without_parens(x.trim());
        is_name(x).then_some(())?;
        Some((
            x.to_string(),
            m.trim().parse().ok().filter(|m: &i64| *m > 0)?,
        ))
    };
    match (parse(held, " != "), parse(test, " == ")) {
        (Some((x, b)), Some((y, a))) => x == y && a % b == 0,
        _ => false,
    }
}

/// `cond` with each constant bool local it names replaced by the test it is set to,
/// where it names one (`None` otherwise).
pub fn expanded(cond: &str, env: &Env) -> Option<String> {
    env.values
        .range(DEFINED.to_string()..">".to_string())
        .next()?;
    let b = cond.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = String::new();
    let mut changed = false;
    let mut i = 0;
    while i < b.len() {
        if word(b[i]) && (i == 0 || !word(b[i - 1])) {
            let j = (i..b.len()).find(|&k| !word(b[k])).unwrap_or(b.len());
            let w = &cond[i..j];
            let member =
                cond[..i].trim_end().ends_with("->") || cond[..i].trim_end().ends_with('.');
            match env.values.get(&format!("{DEFINED}{w}")) {
                Some(Value::Type(test)) if !member => {
                    out.push('(');
                    out.push_str(test);
                    out.push(')');
                    changed = true;
                }
                _ => out.push_str(w),
            }
            i = j;
        } else {
            let ch = cond[i..].chars().next()?;
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    changed.then_some(out)
}

fn condition_as_written(cond: &str, env: &Env) -> Truth {
    let c = cond.trim();
    if is_branch_header(c) {
        return Truth::Open(c.to_string());
    }
    let (c, constexpr) = match c.strip_prefix("constexpr ") {
        Some(rest) => (rest, true),
        None => (c, false),
    };
    if let Some(b) = held(c, env) {
        return if b { Truth::True } else { Truth::False };
    }
    match expression(c, env) {
        Truth::Open(r) => match held(&r, env) {
            Some(true) => Truth::True,
            Some(false) => Truth::False,
            None if constexpr => Truth::Open(format!("constexpr {r}")),
            None => Truth::Open(r),
        },
        t => t,
    }
}

/// What the conditions every path into the function has passed say of `c`: it is
/// one of them (true), or one of them is its negation (false).
fn held(c: &str, env: &Env) -> Option<bool> {
    env.values
        .range(HOLDS.to_string().."\"".to_string())
        .next()?;
    let c = c.trim();
    if env.values.contains_key(&format!("{HOLDS}{c}")) {
        return Some(true);
    }
    if env.values.contains_key(&format!("{HOLDS}not ({c})")) {
        return Some(false);
    }
    // A flag's test written either way: `!x` is `not (x)`, and `not (!x)` is `x`.
    let holds = |t: String| env.values.contains_key(&format!("{HOLDS}{t}"));
    if is_name(c) {
        if holds(format!("not (!{c})")) {
            return Some(true);
        }
        if holds(format!("!{c}")) {
            return Some(false);
        }
    }
    if let Some(x) = c.strip_prefix('!').map(str::trim).filter(|x| is_operand(x)) {
        if holds(format!("not ({x})")) {
            return Some(true);
        }
        if holds(x.to_string()) {
            return Some(false);
        }
    }
    let inner = c.strip_prefix("not (").and_then(|r| r.strip_suffix(')'))?;
    let balanced = inner.chars().try_fold(0i32, |d, ch| {
        let d = d + i32::from(ch == '(') - i32::from(ch == ')');
        (d >= 0).then_some(d)
    });
    (balanced == Some(0) && env.values.contains_key(&format!("{HOLDS}{inner}"))).then_some(false)
}

/// What the conditions every path into a function has passed say of one name's
/// integer value: at least `lo`, at most `hi`, none of `ne` (`not (n <= 0)` gives
/// `n >= 1`, so a later `n == 0` is false).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
struct Bound {
    lo: Option<i64>,
    hi: Option<i64>,
    ne: BTreeSet<i64>,
    /// The only values it can have (`trans` after rocblas_syr2k_her2k.hpp:176 lets
    /// only `none` and `conjugate_transpose` through).
    one_of: Option<BTreeSet<i64>>,
}

impl Bound {
    /// `name op k` where this bound is all that is known of `name`.
    fn decides(&self, op: &str, k: i64) -> Option<bool> {
        let below = |v: i64| self.hi.is_some_and(|h| h < v); // every value is below v
        let above = |v: i64| self.lo.is_some_and(|l| l > v);
        let outside = below(k)
            || above(k)
            || self.ne.contains(&k)
            || self.one_of.as_ref().is_some_and(|set| !set.contains(&k));
        let only = self
            .one_of
            .as_ref()
            .is_some_and(|set| set.len() == 1 && set.contains(&k));
        Some(match op {
            "==" if only => true,
            "!=" if only => false,
            "==" if outside => false,
            "!=" if outside => true,
            "<" if below(k) => true,
            "<" if self.lo.is_some_and(|l| l >= k) => false,
            "<=" if self.hi.is_some_and(|h| h <= k) => true,
            "<=" if above(k) => false,
            ">" if above(k) => true,
            ">" if self.hi.is_some_and(|h| h <= k) => false,
            ">=" if self.lo.is_some_and(|l| l >= k) => true,
            ">=" if below(k) => false,
            _ => return None,
        })
    }

    /// Keeps only the values of `set` among those it may have.
    fn only(&mut self, set: BTreeSet<i64>) {
        self.one_of = Some(match self.one_of.take() {
            Some(old) => old.intersection(&set).copied().collect(),
            None => set,
        });
    }

    /// A bound that is also an excluded value moves past it (`n >= 0`, `n != 0`,
    /// `n != 1` is `n >= 2`).
    fn tighten(&mut self) {
        while let Some(l) = self.lo.filter(|l| self.ne.contains(l)) {
            self.lo = l.checked_add(1);
        }
        while let Some(h) = self.hi.filter(|h| self.ne.contains(h)) {
            self.hi = h.checked_sub(1);
        }
    }

    fn add(&mut self, op: &str, k: i64) {
        let (lo, hi) = match op {
            "==" => {
                self.only(BTreeSet::from([k]));
                (Some(k), Some(k))
            }
            "!=" => {
                self.ne.insert(k);
                (None, None)
            }
            "<" => (None, k.checked_sub(1)),
            "<=" => (None, Some(k)),
            ">" => (k.checked_add(1), None),
            _ => (Some(k), None),
        };
        if let Some(l) = lo {
            self.lo = Some(self.lo.map_or(l, |o| o.max(l)));
        }
        if let Some(h) = hi {
            self.hi = Some(self.hi.map_or(h, |o| o.min(h)));
        }
    }
}

/// The bounds the held conditions of `env` put on names. The same environment is
/// asked about many conditions in a row, so the last result is kept.
fn bounds(env: &Env) -> std::rc::Rc<BTreeMap<String, Bound>> {
    type Entry = (Vec<String>, std::rc::Rc<BTreeMap<String, Bound>>);
    // A path's conditions are read under a few environments in turn (the function's,
    // and that one with each open condition before added), so a few are kept.
    const KEPT: usize = 6;
    thread_local! {
        static RECENT: std::cell::RefCell<Vec<Entry>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let held: Vec<&str> = env
        .values
        .range(HOLDS.to_string().."\"".to_string())
        .map(|(k, _)| &k[HOLDS.len()..])
        .collect();
    if let Some(hit) = RECENT.with(|r| {
        r.borrow()
            .iter()
            .find(|(keys, _)| keys.iter().map(String::as_str).eq(held.iter().copied()))
            .map(|(_, b)| b.clone())
    }) {
        return hit;
    }
    let out = std::rc::Rc::new(read_bounds(held.iter().copied()));
    RECENT.with(|r| {
        let mut r = r.borrow_mut();
        if r.len() >= KEPT {
            r.remove(0);
        }
        r.push((held.iter().map(|s| s.to_string()).collect(), out.clone()));
    });
    out
}

/// The one integer the held conditions leave `name` (`uplo` inside hegs2's
/// `if(uplo == rocblas_fill_upper)`), if they leave one.
pub fn only_value(name: &str, env: &Env) -> Option<i64> {
    let b = bounds(env).get(name).cloned().unwrap_or_default();
    if let (Some(lo), Some(hi)) = (b.lo, b.hi) {
        if lo == hi {
            return Some(lo);
        }
    }
    // The values it may take (`?uplo`: upper or lower past the argument check), less
    // those the held tests rule out (`not (uplo == rocblas_fill_upper)`).
    let may: Option<BTreeSet<i64>> = match env.values.get(&format!("{ONE_OF}{name}")) {
        Some(Value::Type(s)) => s.split(',').map(|v| v.trim().parse().ok()).collect(),
        _ => None,
    };
    let left: Vec<i64> = match (&b.one_of, may) {
        (Some(a), Some(m)) => a.intersection(&m).copied().collect(),
        (Some(a), None) => a.iter().copied().collect(),
        (None, Some(m)) => m.into_iter().collect(),
        (None, None) => return None,
    };
    let left: Vec<i64> = left
        .into_iter()
        .filter(|v| {
            !b.ne.contains(v) && b.lo.is_none_or(|lo| *v >= lo) && b.hi.is_none_or(|hi| *v <= hi)
        })
        .collect();
    match left.as_slice() {
        [v] => Some(*v),
        _ => None,
    }
}

/// The bounds that hold wherever either list of held conditions does, written as
/// conditions (`n >= 1`, `batch_count != 0`).
pub fn bounds_either(a: &[String], b: &[String]) -> Vec<String> {
    let (x, y) = (
        read_bounds(a.iter().map(String::as_str)),
        read_bounds(b.iter().map(String::as_str)),
    );
    let mut out = Vec::new();
    for (name, p) in &x {
        let Some(q) = y.get(name) else {
            continue;
        };
        if let (Some(l), Some(m)) = (p.lo, q.lo) {
            out.push(format!("{name} >= {}", l.min(m)));
        }
        if let (Some(h), Some(m)) = (p.hi, q.hi) {
            out.push(format!("{name} <= {}", h.max(m)));
        }
        if let (Some(s), Some(t)) = (&p.one_of, &q.one_of) {
            let both: Vec<String> = s.union(t).map(|k| format!("{name} == {k}")).collect();
            if !both.is_empty() {
                out.push(both.join(" || "));
            }
        }
        for k in p.ne.union(&q.ne) {
            if p.decides("!=", *k) == Some(true) && q.decides("!=", *k) == Some(true) {
                out.push(format!("{name} != {k}"));
            }
        }
    }
    out
}

/// Does a condition that holds say anything of a name's value (a comparison with a
/// constant, a bare flag)? Branch headers and calls do not.
pub fn bounds_anything(c: &str) -> bool {
    let c = c.trim();
    let branch_header = is_branch_header(c);
    !branch_header && !comparisons(c, true).is_empty()
}

/// What conditions that all hold say of names' values.
fn read_bounds<'c>(held: impl Iterator<Item = &'c str>) -> BTreeMap<String, Bound> {
    let mut out: BTreeMap<String, Bound> = BTreeMap::new();
    for c in held {
        let mut sets: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
        for (name, op, k) in comparisons(c, true) {
            if op == "in" {
                sets.entry(name).or_default().insert(k);
            } else {
                out.entry(name).or_default().add(op, k);
            }
        }
        for (name, set) in sets {
            out.entry(name).or_default().only(set);
        }
    }
    for b in out.values_mut() {
        b.tighten();
    }
    out
}

/// What held conditions say of `name + by`, written as conditions on `to`: where
/// `n >= 2` holds, a parameter bound to `n - 1` is at least 1.
pub fn shifted_bounds(held: &[String], name: &str, by: i64, to: &str) -> Vec<String> {
    let all = read_bounds(held.iter().map(String::as_str));
    let Some(b) = all.get(name) else {
        return Vec::new();
    };
    let shift = |v: i64| v.checked_add(by);
    let mut out = Vec::new();
    if let Some(l) = b.lo.and_then(shift) {
        out.push(format!("{to} >= {l}"));
    }
    if let Some(h) = b.hi.and_then(shift) {
        out.push(format!("{to} <= {h}"));
    }
    for k in &b.ne {
        if b.lo.is_none_or(|l| *k > l) && b.hi.is_none_or(|h| *k < h) {
            if let Some(v) = shift(*k) {
                out.push(format!("{to} != {v}"));
            }
        }
    }
    if let Some(set) = &b.one_of {
        let any: Vec<String> = set
            .iter()
            .filter_map(|k| shift(*k))
            .map(|v| format!("{to} == {v}"))
            .collect();
        if !any.is_empty() {
            out.push(any.join(" || "));
        }
    }
    out
}

/// The comparisons of a name with a number that a condition, true (`holds`) or false,
/// makes certain: each part of a conjunction that holds, each part of a disjunction
/// that does not.
fn comparisons(c: &str, holds: bool) -> Vec<(String, &'static str, i64)> {
    type Memo = std::collections::HashMap<(bool, String), Vec<(String, &'static str, i64)>>;
    // The same held conditions are read under many environments in turn (each probe of
    // `refuted`, each condition of a path), and reading one is a regex match: kept per
    // text, and dropped whole when the enumerators that decide them change.
    const KEPT: usize = 1 << 16;
    thread_local! {
        static MEMO: std::cell::RefCell<(u64, Memo)> = std::cell::RefCell::new((0, Memo::new()));
    }
    let generation = ENUMERATORS_GENERATION.load(std::sync::atomic::Ordering::Relaxed);
    let key = (holds, c.to_string());
    if let Some(hit) = MEMO.with(|m| {
        let m = m.borrow();
        (m.0 == generation)
            .then(|| m.1.get(&key).cloned())
            .flatten()
    }) {
        return hit;
    }
    let out = read_comparisons(c, holds);
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.0 != generation || m.1.len() >= KEPT {
            m.0 = generation;
            m.1.clear();
        }
        m.1.insert(key, out.clone());
    });
    out
}

fn read_comparisons(c: &str, holds: bool) -> Vec<(String, &'static str, i64)> {
    let c = c.trim();
    let whole = |inner: &str| {
        inner.chars().try_fold(0i32, |d, ch| {
            let d = d + i32::from(ch == '(') - i32::from(ch == ')');
            (d >= 0).then_some(d)
        }) == Some(0)
    };
    if let Some(inner) = c.strip_prefix("not (").and_then(|r| r.strip_suffix(')')) {
        if whole(inner) {
            return comparisons(inner, !holds);
        }
    }
    if let Some(inner) = c.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        if whole(inner) {
            return comparisons(inner, holds);
        }
    }
    for (op, splits_when) in [("||", false), ("&&", true)] {
        let parts = split_top(c, op);
        if parts.len() > 1 {
            if holds == splits_when {
                return parts.iter().flat_map(|p| comparisons(p, holds)).collect();
            }
            // One of several equalities of one name holds: its value is one of theirs
            // (`not (trans != none && trans != conjugate_transpose)`).
            let mut name = None;
            let mut set = Vec::new();
            for p in &parts {
                match comparisons(p, holds).as_slice() {
                    [(n, "==", k)] if name.as_ref().is_none_or(|m| m == n) => {
                        name = Some(n.clone());
                        set.push(*k);
                    }
                    _ => return Vec::new(),
                }
            }
            return match name {
                Some(n) => set.into_iter().map(|k| (n.clone(), "in", k)).collect(),
                None => Vec::new(),
            };
        }
    }
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"^(-?\d+|[A-Za-z_]\w*(?:->\w+)?)\s*(==|!=|<=|>=|<|>)\s*(-?\d+|[A-Za-z_]\w*(?:->\w+)?)$")
            .expect("static regex")
    });
    // `!x` is `x == 0`; a bare name, `x != 0`.
    if let Some(name) = c.strip_prefix('!').map(str::trim) {
        if is_name(name) {
            return vec![(name.to_string(), if holds { "==" } else { "!=" }, 0)];
        }
    }
    if is_name(c) && !matches!(c, "true" | "false" | "nullptr") {
        return vec![(c.to_string(), if holds { "!=" } else { "==" }, 0)];
    }
    let Some(m) = re.captures(c) else {
        return Vec::new();
    };
    let constant = |w: &str| w.parse::<i64>().ok().or_else(|| enumerator(w));
    // `rocblas_operation_transpose == trans_a` reads as `trans_a == ...`.
    let (name, op, k) = match (constant(&m[3]), constant(&m[1])) {
        (Some(k), _) => (m[1].to_string(), m[2].to_string(), k),
        (None, Some(k)) if is_name(&m[3]) => {
            let op = match &m[2] {
                "<" => ">",
                "<=" => ">=",
                ">" => "<",
                ">=" => "<=",
                o => o,
            };
            (m[3].to_string(), op.to_string(), k)
        }
        _ => return Vec::new(),
    };
    let op: &'static str = match (op.as_str(), holds) {
        ("==", true) | ("!=", false) => "==",
        ("!=", true) | ("==", false) => "!=",
        ("<", true) | (">=", false) => "<",
        ("<=", true) | (">", false) => "<=",
        (">", true) | ("<=", false) => ">",
        _ => ">=",
    };
    vec![(name, op, k)]
}

/// A name, or a member of one (`handle->mode`).
fn is_name(s: &str) -> bool {
    s.split("->").all(|p| {
        p.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && p.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    })
}

/// `c` cut at each `op` outside brackets.
pub fn split_top<'c>(c: &'c str, op: &str) -> Vec<&'c str> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    let b = c.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ if depth == 0 && c[i..].starts_with(op) => {
                parts.push(&c[from..i]);
                i += op.len();
                from = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&c[from..]);
    parts
}

/// Is `name` an enumerator of an enum the headers define?
pub fn is_enumerator(name: &str) -> bool {
    enumerator(name).is_some()
}

/// Parses and evaluates `expr`: the result, and whether anything in it was decided;
/// `None` when the text is not one expression.
fn evaluate(expr: &str, env: &Env) -> Option<(Node, bool)> {
    // Two names the environment says are the same object compare equal.
    let same_object;
    let expr = if env
        .values
        .range("@".to_string().."A".to_string())
        .next()
        .is_some()
    {
        same_object = same_objects(expr, env);
        same_object.as_str()
    } else {
        expr
    };
    // The same conditions are read again for every API of a family and every call
    // site: a result depends only on the text and on what the environment says of
    // the words in it, so it is kept under those.
    // Per word: its value, whether it is a template parameter, its bound and the
    // value it points to (`*alpha` where a caller passed `&one`); then each member
    // (`handle->pointer_mode`) the environment gives a value or a bound, by name; then
    // the held conditions that name a word.
    type Word = (Option<Value>, bool, Option<Bound>, Option<Value>);
    type Member = (String, Option<Value>, Option<Bound>);
    type Key = (String, Vec<Word>, Vec<Member>, Vec<String>);
    thread_local! {
        static MEMO: std::cell::RefCell<std::collections::HashMap<Key, Option<(Node, bool)>>> =
            Default::default();
    }
    let mut seen: Vec<&str> = Vec::new();
    for w in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')) {
        let w = w.trim_matches(':');
        if w.is_empty() || w.as_bytes()[0].is_ascii_digit() {
            continue;
        }
        seen.push(w);
        if let Some(rest) = w.strip_prefix("std::") {
            seen.push(rest);
        }
        if w.contains("::") {
            seen.extend(w.split("::").filter(|p| !p.is_empty()));
        }
    }
    let sets = env
        .values
        .range(ONE_OF.to_string().."@".to_string())
        .next()
        .is_some();
    let bounds = bounds(env);
    let words = seen
        .iter()
        .map(|w| {
            let v = env.values.get(*w).or_else(|| {
                sets.then(|| env.values.get(&format!("{ONE_OF}{w}")))
                    .flatten()
            });
            let pointee = env.values.get(&format!("*{w}"));
            (
                v.cloned(),
                env.params.contains(*w),
                bounds.get(*w).cloned(),
                pointee.cloned(),
            )
        })
        .collect();
    // Member text is read whole (`handle->pointer_mode` set by the code, or bounded
    // by a held `handle->pointer_mode == rocblas_pointer_mode_host`).
    let members: BTreeSet<&str> = env
        .values
        .keys()
        .chain(bounds.keys())
        .filter(|k| k.contains("->") && expr.contains(k.as_str()))
        .map(String::as_str)
        .collect();
    let members = members
        .into_iter()
        .map(|m| {
            (
                m.to_string(),
                env.values.get(m).cloned(),
                bounds.get(m).cloned(),
            )
        })
        .collect();
    // A held condition decides a test written as it is (`n` where `n` held): those
    // that name a word of the text.
    let held: Vec<String> = env
        .values
        .range(HOLDS.to_string().."\"".to_string())
        .map(|(k, _)| &k[HOLDS.len()..])
        .filter(|h| seen.iter().any(|w| h.contains(w)))
        .map(str::to_string)
        .collect();
    let key: Key = (expr.to_string(), words, members, held);
    if let Some(hit) = MEMO.with(|m| m.borrow().get(&key).cloned()) {
        return hit;
    }
    let out = evaluate_uncached(expr, env, &bounds);
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() > 1 << 18 {
            m.clear();
        }
        m.insert(key, out.clone());
    });
    out
}

fn evaluate_uncached(
    expr: &str,
    env: &Env,
    bounds: &BTreeMap<String, Bound>,
) -> Option<(Node, bool)> {
    let (toks, spans) = lex(expr);
    let mut p = Parser {
        t: &toks,
        spans: &spans,
        src: expr,
        i: 0,
        env,
        bounds,
        touched: false,
    };
    let n = p.ternary();
    (p.i == toks.len()).then_some((n, p.touched))
}

/// `X == Y` (`true`) and `X != Y` (`false`) where `X` and `Y` are one object.
fn same_objects(expr: &str, env: &Env) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"\b([A-Za-z_]\w*)\s*(==|!=)\s*([A-Za-z_]\w*)\b").expect("static regex")
    });
    re.replace_all(expr, |c: &regex::Captures| {
        let id = |n: &str| env.values.get(&format!("@{n}"));
        match (id(&c[1]), id(&c[3])) {
            (Some(a), Some(b)) if a == b => {
                (if &c[2] == "==" { "true" } else { "false" }).to_string()
            }
            _ => c[0].to_string(),
        }
    })
    .into_owned()
}

/// Evaluates a C++ expression.
pub fn expression(expr: &str, env: &Env) -> Truth {
    match evaluate(expr, env) {
        // Nothing decided: what stays open is the text as written.
        None | Some((Node::Open(..), false)) => Truth::Open(expr.trim().to_string()),
        Some((Node::Int(v), _)) => {
            if v != 0 {
                Truth::True
            } else {
                Truth::False
            }
        }
        Some((Node::Bool(true), _)) => Truth::True,
        Some((Node::Bool(false), _)) => Truth::False,
        Some((Node::Open(r, _), true)) => Truth::Open(r),
    }
}

/// An expression spaced one way, whatever its layout in the source: two call sites
/// that test the same thing give the same text (`n<4` and `n < 4`).
pub fn canonical(expr: &str) -> String {
    let (toks, spans) = lex(expr);
    let mut out = String::new();
    for (k, (t, (a, b))) in toks.iter().zip(&spans).enumerate() {
        let tight = matches!(t, Tok::Close(_) | Tok::Op("->") | Tok::Op("::"))
            || matches!(
                k.checked_sub(1).map(|j| &toks[j]),
                None | Some(Tok::Open(_)) | Some(Tok::Op("->")) | Some(Tok::Op("::"))
            );
        if !tight {
            out.push(' ');
        }
        out.push_str(&expr[*a..*b]);
    }
    out
}

/// The value of an expression, when every part of it is known.
pub fn value(expr: &str, env: &Env) -> Option<Value> {
    match evaluate(expr, env)?.0 {
        Node::Int(v) => Some(Value::Int(v)),
        Node::Bool(b) => Some(Value::Bool(b)),
        Node::Open(..) => None,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Num(i64),
    Op(&'static str),
    Open(char),
    Close(char),
    /// Anything else, kept as written.
    Other(String),
}

const OPS: [&str; 22] = [
    "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "->", "::", "<", ">", "!", "+", "-", "*", "/",
    "%", "&", "|", "^", "~",
];

/// Tokens with the byte range each one covers in the text.
fn lex(s: &str) -> (Vec<Tok>, Vec<(usize, usize)>) {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut spans = Vec::new();
    let mut i = 0;
    let mut last_start = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if out.len() > spans.len() {
            spans.push((last_start, last_end(s, i)));
        }
        last_start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            let j = (i..b.len())
                .find(|&k| !(b[k].is_ascii_alphanumeric() || b[k] == b'_'))
                .unwrap_or(b.len());
            // `not (constexpr X)`: what `if constexpr` tests reads like any condition.
            if &s[i..j] != "constexpr" {
                out.push(Tok::Name(s[i..j].to_string()));
            }
            i = j;
            continue;
        }
        if c.is_ascii_digit() {
            let j = (i..b.len())
                .find(|&k| !(b[k].is_ascii_alphanumeric() || b[k] == b'.'))
                .unwrap_or(b.len());
            let lit = s[i..j].trim_end_matches(['u', 'U', 'l', 'L']);
            let parsed = match lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                Some(h) => i64::from_str_radix(h, 16),
                // A floating zero (`T(0.0)`, `0.0f`) is zero in any arithmetic; other
                // floating values are not integers and stay as written.
                None if lit.contains('.') && !lit.contains(['e', 'E']) => {
                    let zero = lit
                        .trim_end_matches(['f', 'F'])
                        .parse::<f64>()
                        .is_ok_and(|z| z == 0.0);
                    if zero {
                        Ok(0)
                    } else {
                        lit.parse::<i64>()
                    }
                }
                None => lit.parse::<i64>(),
            };
            match parsed {
                Ok(v) => out.push(Tok::Num(v)),
                Err(_) => out.push(Tok::Other(s[i..j].to_string())),
            }
            i = j;
            continue;
        }
        if matches!(c, b'(' | b'[' | b'{') {
            out.push(Tok::Open(c as char));
            i += 1;
            continue;
        }
        if matches!(c, b')' | b']' | b'}') {
            out.push(Tok::Close(c as char));
            i += 1;
            continue;
        }
        if let Some(op) = OPS.iter().find(|op| s[i..].starts_with(**op)) {
            out.push(Tok::Op(op));
            i += op.len();
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(Tok::Other(ch.to_string()));
        i += ch.len_utf8();
    }
    if out.len() > spans.len() {
        spans.push((last_start, s.len()));
    }
    (out, spans)
}

/// End of the token that started before `next`: `next` less the spaces before it.
fn last_end(s: &str, next: usize) -> usize {
    s[..next].trim_end().len()
}

/// A sub-expression: known, or open with its text and whether it needs parentheses
/// when it becomes an operand.
#[derive(Debug, Clone)]
enum Node {
    Int(i64),
    Bool(bool),
    Open(String, bool),
}

impl Node {
    fn num(&self) -> Option<i64> {
        match self {
            Node::Int(v) => Some(*v),
            Node::Bool(b) => Some(*b as i64),
            Node::Open(..) => None,
        }
    }
    fn truth(&self) -> Option<bool> {
        self.num().map(|v| v != 0)
    }
}

struct Parser<'a> {
    t: &'a [Tok],
    spans: &'a [(usize, usize)],
    src: &'a str,
    i: usize,
    env: &'a Env,
    /// What the held conditions say of names' values.
    bounds: &'a BTreeMap<String, Bound>,
    /// Whether anything was decided: if not, what stays open is the text as written.
    touched: bool,
}

/// Template names whose `<...>` is a type test this evaluator can decide.
const TYPE_TESTS: [&str; 6] = [
    "is_same",
    "is_same_v",
    "rocblas_is_complex",
    "is_complex",
    "rocblas_is_complex_v",
    "is_complex_v",
];

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn eat_op(&mut self, ops: &[&str]) -> Option<&'static str> {
        if let Some(Tok::Op(o)) = self.peek() {
            if ops.contains(o) {
                let o = *o;
                self.i += 1;
                return Some(o);
            }
        }
        None
    }

    /// Text of tokens `from..to` as written, for what stays open.
    fn text(&self, from: usize, to: usize) -> String {
        let to = to.min(self.t.len());
        if from >= to {
            return String::new();
        }
        crate::facts::code::tidy(&self.src[self.spans[from].0..self.spans[to - 1].1])
    }

    fn binary(
        &mut self,
        next: fn(&mut Self) -> Node,
        ops: &[&str],
        apply: fn(&str, i64, i64) -> Option<i64>,
    ) -> Node {
        let start = self.i;
        let mut l = next(self);
        while let Some(op) = self.eat_op(ops) {
            let r = next(self);
            l = match (l.num(), r.num()) {
                (Some(a), Some(b)) => match apply(op, a, b) {
                    Some(v) if matches!(op, "==" | "!=" | "<" | "<=" | ">" | ">=") => {
                        Node::Bool(v != 0)
                    }
                    Some(v) => Node::Int(v),
                    None => Node::Open(self.text(start, self.i), true),
                },
                _ => match self.bounded(&l, op, &r) {
                    Some(b) => Node::Bool(b),
                    None => Node::Open(self.text(start, self.i), true),
                },
            };
        }
        l
    }

    /// `name op K` (or `K op name`) decided by the bounds the held conditions put on
    /// `name`.
    fn bounded(&mut self, l: &Node, op: &str, r: &Node) -> Option<bool> {
        if self.bounds.is_empty() {
            return None;
        }
        let flipped = |op: &str| {
            match op {
                "<" => ">",
                "<=" => ">=",
                ">" => "<",
                ">=" => "<=",
                o => o,
            }
            .to_string()
        };
        let (name, op, k) = match (l, r) {
            (Node::Open(t, _), Node::Int(k)) => (t, op.to_string(), *k),
            (Node::Int(k), Node::Open(t, _)) => (t, flipped(op), *k),
            _ => return None,
        };
        let got = self.bounds.get(name.trim())?.decides(&op, k)?;
        self.touched = true;
        Some(got)
    }

    /// `c ? a : b`: the arm `c` picks, where `c` is decided.
    fn ternary(&mut self) -> Node {
        let start = self.i;
        let c = self.or();
        if self.peek() != Some(&Tok::Other("?".into())) {
            return c;
        }
        self.i += 1;
        let a = self.ternary();
        if self.peek() != Some(&Tok::Other(":".into())) {
            return Node::Open(self.text(start, self.i), true);
        }
        self.i += 1;
        let b = self.ternary();
        match c.truth() {
            Some(pick) => {
                self.touched = true;
                if pick {
                    a
                } else {
                    b
                }
            }
            None => Node::Open(self.text(start, self.i), true),
        }
    }

    fn or(&mut self) -> Node {
        self.logical("||")
    }

    fn and(&mut self) -> Node {
        self.logical("&&")
    }

    /// `a || b || ...` or `a && b && ...`: decided as soon as one operand decides it;
    /// decided operands that do not are dropped from what stays open.
    fn logical(&mut self, op: &'static str) -> Node {
        let and = op == "&&";
        let sub = |p: &mut Self| if and { p.bitor() } else { p.and() };
        let mut parts = vec![sub(self)];
        while self.eat_op(&[op]).is_some() {
            parts.push(sub(self));
        }
        if parts.len() == 1 {
            return parts.pop().unwrap_or(Node::Bool(false));
        }
        let decides = !and; // a true operand decides `||`, a false one `&&`
        if parts.iter().any(|p| p.truth().is_some()) {
            self.touched = true;
        }
        if parts.iter().any(|p| p.truth() == Some(decides)) {
            return Node::Bool(decides);
        }
        let open: Vec<String> = parts
            .into_iter()
            .filter_map(|p| match p {
                Node::Open(t, paren) => Some(if paren && and && t.contains("||") {
                    format!("({t})")
                } else {
                    t
                }),
                _ => None,
            })
            .collect();
        match open.len() {
            0 => Node::Bool(!decides),
            1 => Node::Open(open.into_iter().next().unwrap_or_default(), true),
            _ => Node::Open(open.join(&format!(" {op} ")), true),
        }
    }

    fn bitor(&mut self) -> Node {
        self.binary(Self::bitxor, &["|"], |_, a, b| Some(a | b))
    }
    fn bitxor(&mut self) -> Node {
        self.binary(Self::bitand, &["^"], |_, a, b| Some(a ^ b))
    }
    fn bitand(&mut self) -> Node {
        self.binary(Self::equality, &["&"], |_, a, b| Some(a & b))
    }
    fn equality(&mut self) -> Node {
        let start = self.i;
        let mut l = self.relation();
        while let Some(op) = self.eat_op(&["==", "!="]) {
            let r = self.relation();
            let equal = match (l.num(), r.num()) {
                (Some(a), Some(b)) => Some(a == b),
                _ => self
                    .one_of_equal(&l, &r)
                    .or_else(|| self.bounded(&l, "==", &r))
                    .or_else(|| self.held_equal(start, op)),
            };
            l = match equal {
                Some(e) => Node::Bool((op == "==") == e),
                None => Node::Open(self.text(start, self.i), true),
            };
        }
        l
    }

    /// `a == b` (or `a != b`) as a held condition says it: two parameters every call
    /// site gives one expression (potf2's dot offsets).
    fn held_equal(&mut self, start: usize, op: &str) -> Option<bool> {
        let text = self.text(start, self.i);
        let h = held(&text, self.env)?;
        self.touched = true;
        Some(if op == "==" { h } else { !h })
    }

    /// `name == K` where `name` has no one value but every caller gives it one of a
    /// few (larf passes gemv `transpose`, larft `conjugate_transpose`): decided when
    /// K is none of them, or all of them.
    fn one_of_equal(&mut self, l: &Node, r: &Node) -> Option<bool> {
        let (name, k) = match (l, r) {
            (Node::Open(t, _), Node::Int(k)) | (Node::Int(k), Node::Open(t, _)) => (t, *k),
            _ => return None,
        };
        let Some(Value::Type(set)) = self.env.values.get(&format!("{ONE_OF}{name}")) else {
            return None;
        };
        let vals: Vec<i64> = set.split(',').filter_map(|v| v.parse().ok()).collect();
        let equal = if !vals.contains(&k) {
            false
        } else if vals.iter().all(|&v| v == k) {
            true
        } else {
            return None;
        };
        self.touched = true;
        Some(equal)
    }
    fn relation(&mut self) -> Node {
        self.binary(Self::shift, &["<=", ">=", "<", ">"], |op, a, b| {
            Some(match op {
                "<" => a < b,
                "<=" => a <= b,
                ">" => a > b,
                _ => a >= b,
            } as i64)
        })
    }
    fn shift(&mut self) -> Node {
        self.binary(Self::additive, &["<<", ">>"], |op, a, b| {
            let b = u32::try_from(b).ok().filter(|&b| b < 63)?;
            if op == "<<" {
                a.checked_shl(b)
            } else {
                a.checked_shr(b)
            }
        })
    }
    fn additive(&mut self) -> Node {
        self.binary(Self::multiplicative, &["+", "-"], |op, a, b| {
            if op == "+" {
                a.checked_add(b)
            } else {
                a.checked_sub(b)
            }
        })
    }
    fn multiplicative(&mut self) -> Node {
        self.binary(Self::unary, &["*", "/", "%"], |op, a, b| match op {
            "*" => a.checked_mul(b),
            "/" => a.checked_div(b),
            _ => a.checked_rem(b),
        })
    }

    fn unary(&mut self) -> Node {
        let start = self.i;
        // The scanner writes an `else` branch's condition as `not (X)`.
        let word_not = matches!(self.peek(), Some(Tok::Name(n)) if n == "not")
            && matches!(self.t.get(self.i + 1), Some(Tok::Open('(')));
        if word_not || self.eat_op(&["!"]).is_some() {
            if word_not {
                self.i += 1;
            }
            let inner = self.unary();
            if let Some(nonzero) = self.bounded(&inner, "!=", &Node::Int(0)) {
                return Node::Bool(!nonzero);
            }
            return match inner {
                Node::Open(t, paren) => {
                    let t = if paren { format!("({t})") } else { t };
                    Node::Open(
                        if word_not {
                            format!("not {t}")
                        } else {
                            format!("!{t}")
                        },
                        false,
                    )
                }
                n => Node::Bool(!n.truth().unwrap_or(false)),
            };
        }
        if self.eat_op(&["-"]).is_some() {
            let inner = self.unary();
            return match inner.num() {
                Some(v) => Node::Int(-v),
                None => Node::Open(self.text(start, self.i), false),
            };
        }
        // `*alpha` where a caller passed the address of a known value (`&one`).
        if matches!(self.peek(), Some(Tok::Op("*"))) {
            if let Some(Tok::Name(n)) = self.t.get(self.i + 1) {
                let followed = self.t.get(self.i + 2);
                let whole = !matches!(
                    followed,
                    Some(Tok::Open(_)) | Some(Tok::Op("->" | "::")) | Some(Tok::Other(_))
                );
                if whole {
                    if let Some(Value::Int(v)) = self.env.values.get(&format!("*{n}")) {
                        self.i += 2;
                        self.touched = true;
                        return Node::Int(*v);
                    }
                }
            }
        }
        if self.eat_op(&["~"]).is_some() {
            return match self.unary() {
                Node::Int(v) => Node::Int(!v),
                _ => Node::Open(self.text(start, self.i), false),
            };
        }
        if self.eat_op(&["+", "*", "&"]).is_some() {
            let _ = self.unary();
            return Node::Open(self.text(start, self.i), false);
        }
        self.postfix()
    }

    /// Skips a bracketed group starting at the current token; false if unbalanced.
    fn skip_group(&mut self) -> bool {
        let mut depth = 0i32;
        while let Some(t) = self.peek() {
            match t {
                Tok::Open(_) => depth += 1,
                Tok::Close(_) => depth -= 1,
                _ => {}
            }
            self.i += 1;
            if depth == 0 {
                return true;
            }
        }
        false
    }

    /// `< ... >` after a name: the index one past the closing `>`, when it closes
    /// before anything a template argument list cannot hold.
    fn angle_end(&self, at: usize) -> Option<usize> {
        let mut depth = 0i32;
        let mut k = at;
        while let Some(t) = self.t.get(k) {
            match t {
                Tok::Op("<") => depth += 1,
                Tok::Op(">") => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(k + 1);
                    }
                }
                Tok::Op(">>") => {
                    depth -= 2;
                    if depth <= 0 {
                        return Some(k + 1);
                    }
                }
                Tok::Op("&&" | "||" | "==" | "!=") => return None,
                _ => {}
            }
            k += 1;
        }
        None
    }

    fn postfix(&mut self) -> Node {
        let start = self.i;
        match self.peek().cloned() {
            Some(Tok::Num(v)) => {
                self.i += 1;
                Node::Int(v)
            }
            Some(Tok::Open('(')) => {
                self.i += 1;
                let inner = self.ternary();
                if matches!(self.peek(), Some(Tok::Close(')'))) {
                    self.i += 1;
                    // A cast `(API_INT)1` keeps a known integer's value; anything else
                    // behind parentheses (a call through them) is not evaluated.
                    if matches!(
                        self.peek(),
                        Some(Tok::Name(_) | Tok::Num(_) | Tok::Open('('))
                    ) {
                        let operand = self.postfix();
                        if let (Node::Open(..), Node::Int(_) | Node::Bool(_)) = (&inner, &operand) {
                            self.touched = true;
                            return operand;
                        }
                        return Node::Open(self.text(start, self.i), false);
                    }
                    return match inner {
                        Node::Open(t, _) => Node::Open(t, true),
                        n => n,
                    };
                }
                self.skip_to_operator();
                Node::Open(self.text(start, self.i), false)
            }
            Some(Tok::Name(_)) => self.name_expr(),
            Some(Tok::Open(_)) => {
                self.skip_group();
                Node::Open(self.text(start, self.i), false)
            }
            _ => {
                self.i += 1;
                Node::Open(self.text(start, self.i), false)
            }
        }
    }

    fn skip_to_operator(&mut self) {
        while let Some(t) = self.peek() {
            match t {
                Tok::Op("&&" | "||") | Tok::Close(')') => break,
                Tok::Open(_) => {
                    self.skip_group();
                }
                _ => self.i += 1,
            }
        }
    }

    /// A name, a qualified name, a type test, a member access or a call.
    fn name_expr(&mut self) -> Node {
        let start = self.i;
        let mut path: Vec<String> = Vec::new();
        while let Some(Tok::Name(n)) = self.peek() {
            path.push(n.clone());
            self.i += 1;
            if self.eat_op(&["::"]).is_none() {
                break;
            }
        }
        let last = path.last().cloned().unwrap_or_default();
        // A type test: `std::is_same_v<A, B>`, `rocblas_is_complex<T>`, with an
        // optional `{}`, `()` or `::value`.
        if TYPE_TESTS.contains(&last.as_str()) && matches!(self.peek(), Some(Tok::Op("<"))) {
            if let Some(end) = self.angle_end(self.i) {
                let args_text = self.text(self.i + 1, end - 1);
                self.i = end;
                if self.eat_op(&["::"]).is_some() {
                    self.i += 1; // value
                } else if matches!(self.peek(), Some(Tok::Open('{' | '('))) {
                    self.skip_group();
                }
                return match type_test(&last, &args_text, self.env) {
                    Some(b) => {
                        self.touched = true;
                        Node::Bool(b)
                    }
                    None => Node::Open(self.text(start, self.i), false),
                };
            }
        }
        // `sizeof(T)` of a type this API fixes (potrf's block sizes pick by it).
        if path.len() == 1 && last == "sizeof" && matches!(self.peek(), Some(Tok::Open('('))) {
            let open = self.i;
            self.skip_group();
            let inner = self.text(open + 1, self.i.saturating_sub(1));
            return match resolve_type(&inner, self.env).and_then(|t| type_size(&t)) {
                Some(n) => {
                    self.touched = true;
                    Node::Int(n)
                }
                None => Node::Open(self.text(start, self.i), false),
            };
        }
        // A functional cast to an arithmetic type the API fixes (`T(0.0)` with T a
        // float or complex type): the operand's value.
        let arithmetic = |t: &str| {
            ARITHMETIC.contains(&t)
                || t.starts_with("rocblas_")
                    && (t.ends_with("complex") || t.contains("complex_num"))
        };
        if path.len() == 1 && matches!(self.peek(), Some(Tok::Open('('))) {
            let cast_to = match self.env.values.get(&last) {
                Some(Value::Type(t)) => Some(t.as_str()),
                _ => ARITHMETIC.contains(&last.as_str()).then_some(last.as_str()),
            };
            if cast_to.is_some_and(arithmetic) {
                let open = self.i;
                let save = self.i;
                if self.skip_group() {
                    let inner = self.text(open + 1, self.i.saturating_sub(1));
                    if let Some(Value::Int(v)) = value(&inner, self.env) {
                        self.touched = true;
                        return Node::Int(v);
                    }
                }
                self.i = save;
            }
        }
        let mut plain = path.len() == 1;
        // A call with template arguments (`rocblas_gemvt_skinny_n<Ti>(transA, m, n)`),
        // not a comparison: kept whole with its call.
        if matches!(self.peek(), Some(Tok::Op("<"))) {
            if let Some(end) = self.angle_end(self.i) {
                if matches!(self.t.get(end), Some(Tok::Open('('))) {
                    self.i = end;
                    plain = false;
                }
            }
        }
        // A call of a function that returns one literal, used as it is.
        if path.len() == 1 && matches!(self.peek(), Some(Tok::Open('('))) {
            if let Some(Value::Bool(b)) = self.env.values.get(&format!("{RETURNS}{last}")) {
                let save = self.i;
                let used_whole = self.skip_group()
                    && !matches!(self.peek(), Some(Tok::Open(_) | Tok::Op("->" | "::")))
                    && !matches!(self.peek(), Some(Tok::Other(o)) if o == ".");
                if used_whole {
                    self.touched = true;
                    return Node::Bool(*b);
                }
                self.i = save;
            }
        }
        // Member access, indexing, calls: not evaluated, kept whole.
        loop {
            match self.peek() {
                Some(Tok::Op("->")) | Some(Tok::Op("::")) => {
                    self.i += 1;
                    plain = false;
                    if matches!(self.peek(), Some(Tok::Name(_))) {
                        self.i += 1;
                    }
                }
                Some(Tok::Other(o)) if o == "." => {
                    self.i += 1;
                    plain = false;
                    if matches!(self.peek(), Some(Tok::Name(_))) {
                        self.i += 1;
                    }
                }
                Some(Tok::Open(_)) => {
                    plain = false;
                    if !self.skip_group() {
                        break;
                    }
                }
                _ => break,
            }
        }
        if !plain {
            // A member the code has set (the handle's pointer mode), written whole.
            let written: String = self
                .text(start, self.i)
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            if let Some(Value::Int(v)) = self.env.values.get(&written) {
                self.touched = true;
                return Node::Int(*v);
            }
        }
        if plain {
            match last.as_str() {
                "true" => return Node::Bool(true),
                "false" => return Node::Bool(false),
                // A null pointer tests false.
                "nullptr" => return Node::Int(0),
                _ => {}
            }
            match self.env.values.get(&last) {
                Some(Value::Int(v)) => {
                    self.touched = true;
                    return Node::Int(*v);
                }
                Some(Value::Bool(b)) => {
                    self.touched = true;
                    return Node::Bool(*b);
                }
                // Not a decision of its own: what stays open reads as written.
                None if !self.env.params.contains(&last) => {
                    if let Some(v) = enumerator(&last).or_else(|| constant(&last)) {
                        return Node::Int(v);
                    }
                }
                _ => {}
            }
            // A flag tested on its own, which the conditions held so far decide
            // (`i64_incs` where `not (!i64_incs)` held, inside the `!(i64_incs || ...)`
            // a local `i64_indices` stands for).
            let logical = |t: Option<&Tok>| match t {
                None => true,
                Some(Tok::Op(o)) => matches!(*o, "&&" | "||" | "!" | "?" | ":"),
                Some(Tok::Open(_)) | Some(Tok::Close(_)) => true,
                _ => false,
            };
            let before = start.checked_sub(1).and_then(|k| self.t.get(k));
            if logical(self.peek()) && logical(before) {
                if let Some(b) = held(&last, self.env) {
                    self.touched = true;
                    return Node::Bool(b);
                }
            }
        }
        Node::Open(self.text(start, self.i), false)
    }
}

/// Built-in arithmetic types a functional cast keeps the value of.
const ARITHMETIC: [&str; 9] = [
    "float",
    "double",
    "int",
    "long",
    "int32_t",
    "int64_t",
    "size_t",
    "rocblas_int",
    "rocblas_half",
];

/// The enumerators of the libraries' public enums (`rocblas_side_left = 141`), read off
/// their headers: a caller passing `rocblas_side_left` fixes its callee's `side`, so
/// that `side == rocblas_side_right` is false for it. Known to every evaluation, though
/// an enumerator alone decides nothing (`transA == rocblas_operation_none` stays as
/// written while `transA` is open).
static ENUMERATORS: std::sync::RwLock<BTreeMap<String, i64>> =
    std::sync::RwLock::new(BTreeMap::new());

/// Adds the enumerators that `enum { ... }` bodies of a header's text give values
/// (written, or one more than the one before).
pub fn add_enumerators(text: &str) {
    let found = enumerators(text);
    if found.is_empty() {
        return;
    }
    let mut known = ENUMERATORS.write().unwrap_or_else(|e| e.into_inner());
    known.extend(found);
    ENUMERATORS_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Bumped whenever [`ENUMERATORS`] changes, so that what was read with the old table
/// is read again.
static ENUMERATORS_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The integer constants `constexpr T name = expr;` of the libraries' helper headers
/// (int64_helpers.hpp's `c_i32_max`, `c_i64_grid_X_chunk`), the first definition of a
/// name kept: the header writes the production values before its developer-testing
/// `#else`. Known to every evaluation, as enumerators are.
static CONSTANTS: std::sync::RwLock<BTreeMap<String, i64>> =
    std::sync::RwLock::new(BTreeMap::new());

/// Adds the integer constants a header's text defines at namespace scope, each
/// evaluated with the ones before it.
pub fn add_constants(text: &str) {
    static DEF: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let def = DEF.get_or_init(|| {
        regex::Regex::new(
            r"(?m)^constexpr\s+(?:u?int(?:8|16|32|64)_t|size_t|int|long)\s+(\w+)\s*=\s*([^;]+);",
        )
        .expect("static regex")
    });
    static CAST: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let cast = CAST.get_or_init(|| {
        regex::Regex::new(r"\b(?:std::)?(?:u?int(?:8|16|32|64)_t|size_t)\s*\(")
            .expect("static regex")
    });
    let mut known = CONSTANTS.write().unwrap_or_else(|e| e.into_inner());
    for c in def.captures_iter(text) {
        if known.contains_key(&c[1]) {
            continue;
        }
        let expr = cast.replace_all(c[2].trim(), "(");
        let expr = [
            ("std::numeric_limits<int32_t>::max()", i64::from(i32::MAX)),
            ("std::numeric_limits<int32_t>::min()", i64::from(i32::MIN)),
            ("std::numeric_limits<uint16_t>::max()", i64::from(u16::MAX)),
        ]
        .iter()
        .fold(expr.into_owned(), |e, (k, v)| e.replace(k, &v.to_string()))
        .replace("1ULL", "1");
        let mut env = Env::default();
        for (k, v) in known.iter() {
            env.values.insert(k.clone(), Value::Int(*v));
        }
        if let Some(Value::Int(v)) = value(&expr, &env) {
            known.insert(c[1].to_string(), v);
        }
    }
}

fn constant(name: &str) -> Option<i64> {
    looked_up(&CONSTANTS, name)
}

/// The namespace-scope constants `text` names as whole words, with their values, in
/// the order first named (`n >= n_gemmt_threshold`: `[("n_gemmt_threshold", 1232)]`).
pub fn constants_in(text: &str) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if w.is_empty() || w.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        if let Some(v) = constant(w) {
            if !out.iter().any(|(n, _)| n == w) {
                out.push((w.to_string(), v));
            }
        }
    }
    out
}

fn enumerator(name: &str) -> Option<i64> {
    looked_up(&ENUMERATORS, name)
}

fn looked_up(table: &std::sync::RwLock<BTreeMap<String, i64>>, name: &str) -> Option<i64> {
    table
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .copied()
}

/// The enumerator of value `v` of the enum whose enumerators `cond` compares with
/// (`rocblas_side_left` for 141 where `cond` reads `side == rocblas_side_right`).
fn enumerator_like(cond: &str, v: i64, env: &Env) -> Option<String> {
    let known = ENUMERATORS.read().unwrap_or_else(|e| e.into_inner());
    cond.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|n| !env.values.contains_key(*n) && known.contains_key(*n))
        .find_map(|n| {
            let family = &n[..n.rfind('_')? + 1];
            known
                .iter()
                .find(|(k, &kv)| kv == v && k.starts_with(family))
                .map(|(k, _)| k.clone())
        })
}

/// `(name, value)` of each enumerator of the `enum` bodies in `text`; a body holding
/// anything but names and integer values is skipped whole.
pub fn enumerators(text: &str) -> Vec<(String, i64)> {
    static ENUM: OnceLock<regex::Regex> = OnceLock::new();
    let re = ENUM.get_or_init(|| {
        regex::Regex::new(
            r"\benum\b(?:\s+(?:class\s+)?[A-Za-z_]\w*)?(?:\s*:\s*[\w\s]+)?\s*\{([^{}]*)\}",
        )
        .expect("enum pattern")
    });
    static COMMENT: OnceLock<regex::Regex> = OnceLock::new();
    let comment = COMMENT
        .get_or_init(|| regex::Regex::new(r"(?s)/\*.*?\*/|//[^\n]*").expect("comment pattern"));
    // Doc comments sit between enumerators and hold commas of their own.
    let text = comment.replace_all(text, " ");
    let mut out = Vec::new();
    'body: for c in re.captures_iter(&text) {
        let mut next = 0i64;
        let mut body = Vec::new();
        for item in c[1].split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (name, v) = match item.split_once('=') {
                Some((n, v)) => {
                    let v = v.trim();
                    let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                        Some(h) => i64::from_str_radix(h, 16).ok(),
                        None => v.parse::<i64>().ok(),
                    };
                    match parsed {
                        Some(p) => (n.trim(), p),
                        None => continue 'body,
                    }
                }
                None => (item, next),
            };
            if !name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                || name.is_empty()
            {
                continue 'body;
            }
            body.push((name.to_string(), v));
            next = v + 1;
        }
        out.extend(body);
    }
    out
}

/// `batch_count = 1, Ty = float*` for the known names a condition uses: why it
/// came out as it did.
pub fn known_names(cond: &str, env: &Env) -> String {
    let mut seen = BTreeSet::new();
    let squashed: String = cond.chars().filter(|c| !c.is_whitespace()).collect();
    let member = super::bind::POINTER_MODE;
    let set = env
        .values
        .get(member)
        .filter(|_| squashed.contains(member))
        .map(|v| format!("{member} = {v}"));
    set.into_iter()
        .chain(
            cond.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter_map(|w| {
                    let v = env.values.get(w)?;
                    // `side = rocblas_side_left`, not its number, where the condition
                    // names the enumerator.
                    let named = match v {
                        Value::Int(i) => enumerator_like(cond, *i, env),
                        _ => None,
                    };
                    let v = named.unwrap_or_else(|| v.to_string());
                    seen.insert(w).then(|| format!("{w} = {v}"))
                }),
        )
        .collect::<Vec<_>>()
        .join(", ")
}

/// A type with the known parameters replaced, aliases resolved and spaces squashed,
/// or `None` when it still names something whose type is not known.
pub fn resolve_type(ty: &str, env: &Env) -> Option<String> {
    let mut out = String::new();
    let b = ty.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let j = (i..b.len())
                .find(|&k| !(b[k].is_ascii_alphanumeric() || b[k] == b'_' || b[k] == b':'))
                .unwrap_or(b.len());
            let w = &ty[i..j];
            let w = w.strip_prefix("std::").unwrap_or(w);
            // Qualifiers that do not change what a type test compares.
            if matches!(w, "__restrict__" | "__restrict" | "restrict" | "typename") {
                i = j;
                continue;
            }
            let resolved = match env.values.get(w) {
                // A value bound as written elsewhere reads with the same aliases.
                Some(Value::Type(t)) => {
                    resolve_type(t, &Env::default()).unwrap_or_else(|| t.clone())
                }
                Some(_) => return None,
                None if env.params.contains(w) => return None,
                None if is_concrete(w) => alias(w).to_string(),
                None => return None,
            };
            if !out.is_empty() && !out.ends_with(['<', ',', '*', '&']) {
                out.push(' ');
            }
            out.push_str(&resolved);
            i = j;
            continue;
        }
        if !c.is_ascii_whitespace() {
            out.push(c as char);
        }
        i += 1;
    }
    Some(const_first(&out))
}

/// `float const*` and `const float*` (as the compiler prints it) read alike: in each
/// run of words between `*`, `&`, `<`, `>` and `,`, `const` goes first.
fn const_first(t: &str) -> String {
    let mut out = String::new();
    let mut word_run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let words: Vec<&str> = run.split(' ').filter(|w| !w.is_empty()).collect();
        if words.len() > 1 && words.contains(&"const") {
            out.push_str("const");
            for w in words.iter().filter(|w| **w != "const") {
                out.push(' ');
                out.push_str(w);
            }
        } else {
            out.push_str(&words.join(" "));
        }
        run.clear();
    };
    for c in t.chars() {
        if matches!(c, '*' | '&' | '<' | '>' | ',') {
            flush(&mut word_run, &mut out);
            out.push(c);
        } else {
            word_run.push(c);
        }
    }
    flush(&mut word_run, &mut out);
    out
}

/// Names whose type is what they say: built-in types and the library's own types.
fn is_concrete(w: &str) -> bool {
    const BUILTIN: [&str; 26] = [
        "float",
        "double",
        "int",
        "unsigned",
        "long",
        "short",
        "char",
        "bool",
        "void",
        "signed",
        "const",
        "volatile",
        "size_t",
        "int8_t",
        "int16_t",
        "int32_t",
        "int64_t",
        "uint8_t",
        "uint16_t",
        "uint32_t",
        "uint64_t",
        "_Float16",
        "__half",
        "hipFloatComplex",
        "hipDoubleComplex",
        "ptrdiff_t",
    ];
    BUILTIN.contains(&w) || w.starts_with("rocblas_") || w.starts_with("rocsolver_")
}

/// Is `w` one of the element types the libraries compute in, by any of its names?
pub fn is_element_type(w: &str) -> bool {
    matches!(
        alias(w),
        "float"
            | "double"
            | "_Float16"
            | "rocblas_bfloat16"
            | "rocblas_complex_num<float>"
            | "rocblas_complex_num<double>"
    )
}

/// The type an alias stands for, as far as a type test can tell.
fn alias(w: &str) -> &str {
    match w {
        "rocblas_float" => "float",
        "rocblas_double" => "double",
        "rocblas_int" | "int" => "int32_t",
        "rocblas_stride" | "rocblas_long" => "int64_t",
        // As the compiler names them in template arguments.
        "rocblas_half" => "_Float16",
        "rocblas_float_complex" => "rocblas_complex_num<float>",
        "rocblas_double_complex" => "rocblas_complex_num<double>",
        _ => w,
    }
}

/// The size in bytes of a type as [`resolve_type`] spells it, on the 64-bit targets
/// the libraries build for; `None` for a type whose size the text does not give.
fn type_size(t: &str) -> Option<i64> {
    let t = t
        .trim()
        .trim_start_matches("const ")
        .trim_end_matches(" const");
    if t.ends_with('*') {
        return Some(8);
    }
    Some(match t {
        "int8_t" | "uint8_t" | "char" | "bool" => 1,
        "_Float16" | "rocblas_bfloat16" | "int16_t" | "uint16_t" => 2,
        "float" | "int32_t" | "uint32_t" | "unsigned" => 4,
        "double" | "int64_t" | "uint64_t" | "size_t" | "rocblas_complex_num<float>" => 8,
        "rocblas_complex_num<double>" => 16,
        _ => return None,
    })
}

fn type_test(name: &str, args: &str, env: &Env) -> Option<bool> {
    let args = crate::facts::code::split_args(args, true);
    if name.starts_with("is_same") {
        let [a, b] = args.as_slice() else {
            return None;
        };
        return Some(resolve_type(a, env)? == resolve_type(b, env)?);
    }
    let [t] = args.as_slice() else {
        return None;
    };
    let t = resolve_type(t, env)?;
    Some(t.contains("complex"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_the_held_ones_settle_are_decided() {
        add_enumerators("typedef enum rocblas_operation_\n{\n rocblas_operation_none = 111,\n rocblas_operation_transpose = 112,\n rocblas_operation_conjugate_transpose = 113\n} rocblas_operation;\ntypedef enum rocblas_fill_\n{\n rocblas_fill_upper = 121,\n rocblas_fill_lower = 122,\n rocblas_fill_full = 123\n} rocblas_fill;");
        let held = [
            "n % 16 != 0",
            "beta != 0",
            "(rocblas_operation_transpose == trans) && (rocblas_fill_upper == uplo)",
        ];
        for settled in [
            "(n % 32 == 0) && (k % 8 == 0)",
            "n % 16 == 0 && k % 16 == 0",
            "(rocblas_operation_transpose == trans) && (rocblas_fill_lower == uplo)",
            "(rocblas_operation_none == trans) && (rocblas_fill_upper == uplo)",
        ] {
            assert_eq!(decided_by(&held, settled), Some(false), "{settled}");
        }
        assert_eq!(decided_by(&held, "rocblas_fill_upper == uplo"), Some(true));
        let scalars = ["alpha == -1.0 && beta == 0.0"];
        assert_eq!(
            decided_by(&scalars, "alpha == 1.0 && beta == 0.0"),
            Some(false)
        );
        assert_eq!(
            decided_by(&scalars, "alpha == -1.0 && beta == 1.0"),
            Some(false)
        );
        assert_eq!(decided_by(&scalars, "alpha == -1.0 && k == 1"), None);
        // Not settled: a test of another name, a remainder the held one does not divide.
        assert_eq!(decided_by(&held, "k % 8 == 0"), None);
        assert_eq!(decided_by(&held, "n % 8 == 0"), None);
        assert_eq!(decided_by(&held, "m > 4 && n % 16 != 0"), None);
    }

    fn env(pairs: &[(&str, Value)], params: &[&str]) -> Env {
        Env {
            values: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            params: params.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_flag_held_through_its_negated_negation_decides_a_test_defined_from_it() {
        // rocblas_gemv_kernels.cpp:156-162: `i64_indices = i64_incs || ...`, so on the
        // path where `not (!i64_incs)` held, `!i64_indices` is false.
        let e = env(
            &[
                (
                    "=i64_indices",
                    Value::Type("i64_incs || size_t(n) * lda > c_i32_max".into()),
                ),
                ("!not (!i64_incs)", Value::Bool(true)),
            ],
            &[],
        );
        assert_eq!(condition("!i64_indices", &e), Truth::False);
        assert_eq!(condition("i64_incs", &e), Truth::True);
        assert_eq!(condition("!i64_incs", &e), Truth::False);
    }

    #[test]
    fn a_test_whose_every_part_an_earlier_return_took_is_false() {
        // rocblas_gemv.hpp:70-73 returned for host mode with alpha 0 and beta 1; the
        // launcher's host-mode `!*alpha && *beta == 1` (rocblas_gemv_kernels.cpp:255)
        // cannot hold past it.
        let e = env(
            &[
                (
                    "!not (handle->pointer_mode == rocblas_pointer_mode_host && *alpha == 0 && *beta == 1)",
                    Value::Bool(true),
                ),
                (
                    "!not (handle->pointer_mode == rocblas_pointer_mode_device)",
                    Value::Bool(true),
                ),
            ],
            &[],
        );
        assert_eq!(condition("!*alpha && *beta == 1", &e), Truth::False);
        assert!(matches!(condition("*beta == 1", &e), Truth::Open(_)));
    }

    #[test]
    fn a_name_the_held_tests_pin_has_one_value() {
        // hegs2's `else` of `if(uplo == rocblas_fill_upper)`, uplo past the argument
        // check being upper or lower (roclapack_sygs2_hegs2.hpp:280-332).
        let mut env = Env::default();
        env.values
            .insert(format!("{ONE_OF}uplo"), Value::Type("121,122".into()));
        assert_eq!(only_value("uplo", &env), None);
        env.values
            .insert(format!("{HOLDS}not (uplo == 121)"), Value::Bool(true));
        assert_eq!(only_value("uplo", &env), Some(122));
        let mut eq = Env::default();
        eq.values
            .insert(format!("{HOLDS}n == 1"), Value::Bool(true));
        assert_eq!(only_value("n", &eq), Some(1));
        assert_eq!(only_value("m", &eq), None);
    }

    #[test]
    fn a_helper_headers_constants_take_their_production_values() {
        // int64_helpers.hpp:54-64, cut down: the production definitions come first.
        add_constants("constexpr int64_t c_i32_max = int64_t(std::numeric_limits<int32_t>::max());\n#ifndef DEV\nconstexpr int64_t c_ILP64_i32_max = c_i32_max;\nconstexpr int64_t c_i64_grid_X_chunk = 1ULL << 28;\nconstexpr int64_t c_i64_grid_YZ_chunk\n    = int64_t((std::numeric_limits<uint16_t>::max() & ~0xf));\n#else\nconstexpr int64_t c_ILP64_i32_max = int64_t(0);\n#endif\n");
        let e = Env::default();
        assert_eq!(value("c_ILP64_i32_max", &e), Some(Value::Int(2147483647)));
        assert_eq!(value("c_i64_grid_X_chunk", &e), Some(Value::Int(1 << 28)));
        assert_eq!(value("c_i64_grid_YZ_chunk", &e), Some(Value::Int(65520)));
    }

    #[test]
    fn sizeof_a_fixed_type_is_its_size() {
        // roclapack_potrf.hpp's POTRF_BLOCKSIZE(T) for single complex: 127.
        let mut env = Env::default();
        env.params.insert("T".into());
        env.values
            .insert("T".into(), Value::Type("rocblas_float_complex".into()));
        let block = "((sizeof(T) == 4) ? 180 : (sizeof(T) == 8) ? 127 : 90)";
        assert_eq!(value(block, &env), Some(Value::Int(127)));
        env.values
            .insert("T".into(), Value::Type("rocblas_double_complex".into()));
        assert_eq!(value(block, &env), Some(Value::Int(90)));
        assert_eq!(value("sizeof(U)", &env), None);
    }

    #[test]
    fn a_cast_to_a_fixed_arithmetic_type_keeps_the_value() {
        // rocblas_trsm_kernels.hpp:3795's `alpha_h == T(0.0)` with alpha_h = 1 (rocSOLVER
        // passes `&one`) for single complex.
        let mut env = Env::default();
        env.params.insert("T".into());
        env.values
            .insert("T".into(), Value::Type("rocblas_complex_num<float>".into()));
        env.values.insert("alpha_h".into(), Value::Int(1));
        assert_eq!(condition("alpha_h == T(0.0)", &env), Truth::False);
        assert_eq!(value("float(0.0f) + 2", &env), Some(Value::Int(2)));
        // Not a zero, not a type: as written.
        assert_eq!(value("T(0.5)", &env), None);
        assert_eq!(value("f(0)", &env), None);
        env.values
            .insert("U".into(), Value::Type("rocblas_int*".into()));
        assert_eq!(value("U(0)", &env), None);
    }

    #[test]
    fn a_conditional_expression_takes_the_arm_its_test_picks() {
        // rocauxiliary_larf.hpp:174 for a real type.
        let mut env = Env::default();
        env.values.insert("COMPLEX".into(), Value::Bool(false));
        env.values.insert("a".into(), Value::Int(113));
        env.values.insert("b".into(), Value::Int(112));
        assert_eq!(value("COMPLEX ? a : b", &env), Some(Value::Int(112)));
        assert_eq!(value("(!COMPLEX ? a : b) + 1", &env), Some(Value::Int(114)));
        assert_eq!(value("x ? a : b", &env), None);
        assert_eq!(value("COMPLEX ? 1 : x > 2 ? 3 : 4", &env), None);
        env.values.insert("x".into(), Value::Int(5));
        assert_eq!(
            value("COMPLEX ? 1 : x > 2 ? 3 : 4", &env),
            Some(Value::Int(3))
        );
    }

    #[test]
    fn a_name_every_caller_gives_one_of_a_few_values_is_compared_with_each() {
        // larf passes gemv `transpose` (112), larft `conjugate_transpose` (113).
        let mut env = Env::default();
        env.values
            .insert(format!("{ONE_OF}transA"), Value::Type("112,113".into()));
        assert_eq!(condition("transA == 111", &env), Truth::False);
        assert_eq!(condition("transA != 111", &env), Truth::True);
        assert!(matches!(condition("transA == 112", &env), Truth::Open(_)));
        env.values
            .insert(format!("{ONE_OF}transA"), Value::Type("112".into()));
        assert_eq!(condition("112 == transA", &env), Truth::True);
    }

    #[test]
    fn what_held_conditions_bound_decides_other_comparisons_of_the_same_name() {
        // rocblas_dot_strided_batched_ex_imp.hpp:147-150 return for `batch_count <= 0`
        // and `n <= 0` before the 64-bit launcher tests `n_64 <= 0 || batch_count_64 == 0`
        // (rocblas_dot_kernels_64.cpp:54).
        let env = env(
            &[
                ("!not (batch_count_64 <= 0)", Value::Bool(true)),
                ("!not (n_64 <= 0)", Value::Bool(true)),
            ],
            &[],
        );
        assert_eq!(
            condition("n_64 <= 0 || batch_count_64 == 0", &env),
            Truth::False
        );
        assert_eq!(condition("0 < batch_count_64", &env), Truth::True);
        assert_eq!(
            condition("n_64 >= 1 && incx > 0", &env),
            Truth::Open("incx > 0".into())
        );
        // A bound says nothing of a value inside it.
        assert!(matches!(condition("n_64 == 7", &env), Truth::Open(_)));
        // A disjunction that holds bounds neither of its parts; one that does not holds,
        // both.
        let env2 = super::tests::env(
            &[
                ("!n < 0 || m < 0", Value::Bool(true)),
                ("!not (k < 0 || lda < k)", Value::Bool(true)),
            ],
            &[],
        );
        assert!(matches!(condition("n < 0", &env2), Truth::Open(_)));
        assert_eq!(condition("k < 0", &env2), Truth::False);
    }

    #[test]
    fn a_check_that_lets_only_some_values_through_rules_out_the_rest() {
        // rocblas_syr2k_her2k.hpp:176: her2k returns unless `trans` is `none` (111) or
        // `conjugate_transpose` (113), so herk_syrk_device.hpp:843's `trans == 112`
        // branch is not one it takes.
        let e = env(
            &[("!not (trans != 111 && trans != 113)", Value::Bool(true))],
            &[],
        );
        assert_eq!(condition("trans == 112 && uplo == 121", &e), Truth::False);
        assert_eq!(condition("trans != 112", &e), Truth::True);
        assert!(matches!(condition("trans == 111", &e), Truth::Open(_)));
        // Two sites' sets join into their union.
        let joined = bounds_either(
            &["trans == 111".to_string()],
            &["not (trans != 113)".to_string()],
        );
        assert_eq!(
            joined,
            [
                "trans >= 111",
                "trans <= 113",
                "trans == 111 || trans == 113"
            ]
        );
    }

    #[test]
    fn a_null_pointer_decides_a_test_beside_a_templated_call() {
        // rocblas_gemv_kernels.cpp:507, with the workspace rocSOLVER leaves at its
        // default nullptr (rocblas_gemv.hpp:129).
        let text = "workspace && rocblas_gemvt_skinny_n<Ti>(transA, m, n)";
        let e = env(&[("workspace", Value::Int(0))], &[]);
        assert_eq!(condition(text, &e), Truth::False);
        assert_eq!(
            condition("ptr == nullptr", &e),
            Truth::Open("ptr == nullptr".into())
        );
        assert_eq!(condition("!workspace", &e), Truth::True);
        assert_eq!(condition(text, &env(&[], &[])), Truth::Open(text.into()));
        // rocSOLVER passes `&one` as alpha: `*alpha == 0` is false for it.
        let e = env(&[("*alpha", Value::Int(1))], &[]);
        assert_eq!(condition("!*alpha && *beta == 1", &e), Truth::False);
        assert_eq!(condition("*alpha == 0", &e), Truth::False);
        assert_eq!(
            condition("*beta == 1", &e),
            Truth::Open("*beta == 1".into())
        );
    }

    #[test]
    fn a_memoized_evaluation_is_decided_only_where_what_decided_it_holds() {
        // rocblas_dot_ex_imp.hpp:133 after the launcher's `handle->pointer_mode ==
        // rocblas_pointer_mode_host` held elsewhere: one thread reads the same text
        // under both environments, and each gets its own answer.
        add_enumerators("typedef enum rocblas_pointer_mode_\n{\n rocblas_pointer_mode_host = 0,\n rocblas_pointer_mode_device = 1\n} rocblas_pointer_mode;");
        let test = "rocblas_pointer_mode_device == handle->pointer_mode";
        let held = env(
            &[(
                "!handle->pointer_mode == rocblas_pointer_mode_host",
                Value::Bool(true),
            )],
            &[],
        );
        assert_eq!(expression(test, &held), Truth::False);
        assert_eq!(expression(test, &env(&[], &[])), Truth::Open(test.into()));
        // A flag tested as it held on the way in (trtri after trsm's `if (n)`), and
        // the same flag where nothing held.
        let flag = env(&[("!n", Value::Bool(true))], &[]);
        assert_eq!(expression("n && m", &flag), Truth::Open("m".into()));
        assert_eq!(
            expression("n && m", &env(&[], &[])),
            Truth::Open("n && m".into())
        );
        // The same for a value read through a pointer (`&one` passed as alpha).
        let one = env(&[("*alpha", Value::Int(1))], &[]);
        assert_eq!(expression("*alpha == 0", &one), Truth::False);
        assert_eq!(
            expression("*alpha == 0", &env(&[], &[])),
            Truth::Open("*alpha == 0".into())
        );
    }

    #[test]
    fn a_local_test_stands_for_its_name_and_a_held_disjunction_is_read_arm_by_arm() {
        add_enumerators("typedef enum rocblas_operation_\n{\n rocblas_operation_none = 111,\n rocblas_operation_transpose = 112,\n rocblas_operation_conjugate_transpose = 113\n} rocblas_operation;");
        assert_eq!(canonical("(a<4 ||\n b->c)"), "(a < 4 || b->c)");
        // roclapack_trsm_specialized_kernels.hpp:840-842: `notrans` and `conj` are
        // tests of one `trans`, which callers pass as none or conjugate transpose.
        let e = env(
            &[
                (
                    "=notrans",
                    Value::Type(canonical("(trans ==\n rocblas_operation_none)")),
                ),
                (
                    "=conj",
                    Value::Type(canonical(
                        "(trans == rocblas_operation_conjugate_transpose)",
                    )),
                ),
                ("?trans", Value::Type("111,113".into())),
            ],
            &[],
        );
        assert_eq!(condition("notrans", &e), Truth::Open("notrans".into()));
        assert_eq!(
            expanded("not (notrans)", &e).as_deref(),
            Some("not (((trans == rocblas_operation_none)))")
        );
        let mut under = e.clone();
        under.values.insert(
            format!("{HOLDS}trans == rocblas_operation_none"),
            Value::Bool(true),
        );
        assert_eq!(condition("conj", &under), Truth::False);
        assert_eq!(condition("not (conj)", &under), Truth::True);
        // rocblas_gemm_ex3.hpp:1524-1530: the fallback runs only under one of two
        // compound tests, neither of which lets `trans_a` be a conjugate transpose.
        let held = canonical("(trans_a == rocblas_operation_transpose && trans_b == rocblas_operation_transpose && n<4) || (trans_a == rocblas_operation_none && m < 4)");
        let e = env(&[(&format!("{HOLDS}{held}"), Value::Bool(true))], &[]);
        assert_eq!(
            condition("rocblas_operation_conjugate_transpose == trans_a", &e),
            Truth::False
        );
        // Each arm allows another value: not decided.
        assert!(matches!(
            condition("trans_a == rocblas_operation_none", &e),
            Truth::Open(_)
        ));
        // rocblas_dot_kernels.hpp:482 under potf2, which passes one expression for
        // both offsets: that part of the test is false.
        let e = env(
            &[
                ("!offsetx == offsety", Value::Bool(true)),
                ("!not (offsetx != offsety)", Value::Bool(true)),
            ],
            &[],
        );
        assert_eq!(
            condition("incx != 1 || offsetx != offsety", &e),
            Truth::Open("incx != 1".into())
        );
        assert_eq!(
            condition("offsetx == offsety && n > 0", &e),
            Truth::Open("n > 0".into())
        );
    }

    #[test]
    fn an_enumerator_a_caller_passes_decides_the_callees_branches() {
        // rocblas-types.h:151-158, doc comments (with commas of their own) included.
        let header = "typedef enum rocblas_side_\n{\n    rocblas_side_left  = 141, /**< on the left, or not */\n    rocblas_side_right = 142, // right\n    rocblas_side_both\n} rocblas_side;";
        assert_eq!(
            enumerators(header),
            [
                ("rocblas_side_left".to_string(), 141),
                ("rocblas_side_right".to_string(), 142),
                ("rocblas_side_both".to_string(), 143)
            ]
        );
        add_enumerators(header);
        // sgeqrf's larf is called with `rocblas_side_left` (side = 141).
        let e = env(&[("side", Value::Int(141))], &[]);
        assert_eq!(condition("side == rocblas_side_right", &e), Truth::False);
        assert_eq!(
            condition("not (side == rocblas_side_left)", &e),
            Truth::False
        );
        assert_eq!(
            known_names("side == rocblas_side_right", &e),
            "side = rocblas_side_left"
        );
        // Alone an enumerator decides nothing: the test reads as written.
        assert_eq!(
            condition("side == rocblas_side_left && n > 0", &env(&[], &[])),
            Truth::Open("side == rocblas_side_left && n > 0".into())
        );
    }

    #[test]
    fn east_and_west_const_read_alike() {
        let e = env(&[("Ti", Value::Type("const float *".into()))], &["Ti"]);
        assert_eq!(
            condition("std::is_same_v<Ti, float const*>", &e),
            Truth::True
        );
        assert_eq!(
            resolve_type("float* const*", &Env::default()).as_deref(),
            Some("float*const*")
        );
        let c = env(
            &[("T", Value::Type("rocblas_complex_num<float>".into()))],
            &["T"],
        );
        assert_eq!(
            condition("std::is_same_v<T, rocblas_float_complex>", &c),
            Truth::True
        );
    }

    #[test]
    fn known_parts_decide_or_drop_out() {
        let e = env(
            &[
                ("batch_count", Value::Int(1)),
                ("using_rocblas_float", Value::Bool(true)),
            ],
            &[],
        );
        assert_eq!(
            condition("using_rocblas_float && unit_inc && batch_count <= 8192", &e),
            Truth::Open("unit_inc".into())
        );
        assert_eq!(
            condition("batch_count > 8192 && using_rocblas_float", &e),
            Truth::False
        );
        assert_eq!(
            condition(
                "not (using_rocblas_float && unit_inc && batch_count <= 8192)",
                &e
            ),
            Truth::Open("not (unit_inc)".into())
        );
        assert_eq!(
            condition("n <= 0 || batch_count <= 0", &e),
            Truth::Open("n <= 0".into())
        );
        assert_eq!(condition("batch_count == 1 || n > 3", &e), Truth::True);
        assert_eq!(
            condition("handle->pointer_mode == rocblas_pointer_mode_device", &e),
            Truth::Open("handle->pointer_mode == rocblas_pointer_mode_device".into())
        );
        assert_eq!(
            condition("loop: for (int i = 0; i < n; i++)", &e),
            Truth::Open("loop: for (int i = 0; i < n; i++)".into())
        );
    }

    #[test]
    fn a_member_the_environment_binds_is_part_of_what_a_result_is_kept_under() {
        let mode = |m| {
            env(
                &[
                    ("handle->pointer_mode", Value::Int(m)),
                    ("rocblas_pointer_mode_device", Value::Int(1)),
                ],
                &[],
            )
        };
        let c = "handle->pointer_mode == rocblas_pointer_mode_device";
        assert_eq!(condition(c, &mode(0)), Truth::False);
        assert_eq!(condition(c, &mode(1)), Truth::True);
        assert_eq!(condition(c, &mode(0)), Truth::False);
    }

    #[test]
    fn type_tests_read_bound_types() {
        let e = env(
            &[
                ("Ty", Value::Type("float*".into())),
                ("T", Value::Type("float".into())),
                ("API_INT", Value::Type("rocblas_int".into())),
            ],
            &["Ty", "T", "API_INT", "U"],
        );
        assert_eq!(
            expression(
                "std::is_same_v<Ty, rocblas_float*> || std::is_same_v<Ty, rocblas_float* const*>",
                &e
            ),
            Truth::True
        );
        assert_eq!(expression("rocblas_is_complex<T>", &e), Truth::False);
        assert_eq!(
            expression("std::is_same<API_INT, int64_t>{}", &e),
            Truth::False
        );
        assert_eq!(
            expression("std::is_same<API_INT, int>::value", &e),
            Truth::True
        );
        // `U` is a parameter without a value: not decided.
        assert_eq!(
            expression("std::is_same_v<U, float>", &e),
            Truth::Open("std::is_same_v<U, float>".into())
        );
        // A name that is neither a parameter nor a known type: not decided either.
        assert!(matches!(
            expression("std::is_same_v<Tother, float>", &e),
            Truth::Open(_)
        ));
        assert_eq!(
            condition("constexpr !rocblas_is_complex<T>", &e),
            Truth::True
        );
    }

    #[test]
    fn values_of_arguments() {
        let e = env(&[("batch_count_1", Value::Int(1))], &[]);
        assert_eq!(value("batch_count_1", &e), Some(Value::Int(1)));
        assert_eq!(value("(256 - 1) / (64 * 2) + 1", &e), Some(Value::Int(2)));
        assert_eq!(value("false", &e), Some(Value::Bool(false)));
        assert_eq!(value("x + 1", &e), None);
        assert_eq!(value("(int)n", &e), None);
        assert_eq!(value("handle->x", &e), None);
    }
}
#[cfg(test)]
mod casts {
    use super::*;
    #[test]
    fn a_cast_keeps_a_known_integer() {
        let mut e = Env::default();
        e.values
            .insert("API_INT".into(), Value::Type("int32_t".into()));
        e.params.insert("API_INT".into());
        assert_eq!(value("( API_INT ) 1", &e), Some(Value::Int(1)));
        assert_eq!(value("(API_INT)1", &e), Some(Value::Int(1)));
    }
}
