//! Question-answer entries rendered from facts, with no model: every statement is a
//! fact read off the code, every fact used is cited at `file:start-end` with the
//! SHA-256 of those lines.
//!
//! APIs whose rendered answer is the same (precision variants running the same code,
//! or families of any kind reaching one helper kernel through one launcher) share one
//! entry, listed in `apis`: an answer that would differ only in the API's name is one
//! entry, not several near-duplicates. Each template has several
//! phrasings, picked by a hash of the answer, so entries do not all read alike.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::model::{
    ApiFacts, Citation, Entry, Fact, FactKind, PieceRef, PieceRole, SourceRef, TokenUsage,
    ENTRY_SCHEMA_VERSION,
};
use crate::slice::{holds_quote, lines_hash, squash, SliceError, Trees};

/// Bullet lines one answer lists.
const MAX_ITEMS: usize = 12;

/// One fact template: what it asks, which facts answer it.
struct Template {
    id: &'static str,
    category: &'static str,
    questions: [&'static str; 3],
    intros: [&'static str; 3],
}

/// Every fact template as `(id, category)`: what an entry with `generator: facts` may
/// name as its `template_id`.
pub fn template_ids() -> Vec<(&'static str, &'static str)> {
    [
        &KERNELS,
        &LAUNCH_CONFIG,
        &DEVICE,
        &EARLY_RETURNS,
        &POINTER_MODE,
        &CROSS_LIBRARY,
        &RUNTIME_CALLS,
        &STORES,
        &STATIC_STATE,
        &DEVICE_MEMORY,
        &VARIANT_FORMS,
    ]
    .iter()
    .map(|t| (t.id, t.category))
    .collect()
}

const KERNELS: Template = Template {
    id: "facts-kernels",
    category: "api-to-kernel",
    questions: [
        "Which GPU kernels does {apis} launch, and under which conditions is each launch made?",
        "Trace {apis} down to the device: which kernels are launched, from which host functions, and when?",
        "List the kernel launches reached by {apis} and the conditions that guard them.",
    ],
    intros: [
        "Read off the code the build compiles, the kernel launches are:",
        "These are the launch sites the call path reaches:",
        "Following the host code to its launches gives:",
    ],
};

const LAUNCH_CONFIG: Template = Template {
    id: "facts-launch-config",
    category: "api-to-kernel",
    questions: [
        "When {apis} launches {subject}, what grid, block and dynamic LDS does the launch use?",
        "What launch configuration (grid, threads per block, dynamic shared memory) does {apis} give {subject}?",
        "How is {subject} configured at its launch for {apis}: grid dimensions, block dimensions and LDS bytes?",
    ],
    intros: [
        "The launch arguments as written at each site:",
        "Each launch of this kernel passes:",
        "At the launch sites the code sets:",
    ],
};

const DEVICE: Template = Template {
    id: "facts-device-code",
    category: "synchronization",
    questions: [
        "What shared memory, barriers, atomics or wavefront operations does {subject} use when {apis} runs it?",
        "Describe the LDS use and synchronization inside {subject}, as run by {apis}.",
        "Which on-chip resources and synchronization primitives does {subject} rely on (for {apis})?",
    ],
    intros: [
        "In the device code:",
        "The device function's body shows:",
        "Reading the kernel-side code:",
    ],
};

const EARLY_RETURNS: Template = Template {
    id: "facts-early-returns",
    category: "edge-cases",
    questions: [
        "Before any kernel runs, which tests can make {apis} return, in the order the code makes them, and what does each return?",
        "Which inputs make {apis} return without launching a kernel, with an error or with success and nothing to do? Give the tests in the order they run.",
        "In what order does {apis} check its arguments and sizes, and which status does each check that fires return (errors and early successes alike)?",
    ],
    intros: [
        "In the order the code runs them; each test is reached only when none above it has returned:",
        "The returns before any launch, in the order the code makes them (a test below runs only when every one above it let the call through):",
        "Tested in this order, each only if nothing above it returned:",
    ],
};

const POINTER_MODE: Template = Template {
    id: "facts-pointer-mode",
    category: "semantics",
    questions: [
        "How does the handle's pointer mode (host or device scalars) change what {apis} does?",
        "What depends on rocblas_pointer_mode in {apis}?",
        "Where does {apis} branch on the pointer mode, and what differs between the branches?",
    ],
    intros: [
        "What runs in each pointer mode:",
        "Code that depends on the pointer mode:",
        "Branches on the pointer mode and what they guard:",
    ],
};

const CROSS_LIBRARY: Template = Template {
    id: "facts-cross-library",
    category: "api-to-kernel",
    questions: [
        "Which functions of another library does {apis} call, and from where?",
        "Where does {apis} leave its own library, and into which functions?",
        "Which rocBLAS internals does {apis} rely on, and at which call sites?",
    ],
    intros: [
        "The calls that leave the library:",
        "Cross-library call sites on the path:",
        "The call path crosses into the paired library at:",
    ],
};

const RUNTIME_CALLS: Template = Template {
    id: "facts-runtime-calls",
    category: "memory-access",
    questions: [
        "Which HIP runtime calls (copies, memsets, allocations, synchronization) does {apis} make on the host, and when?",
        "Besides kernel launches, how does {apis} move or set memory and wait on the stream from the host?",
        "Where does the host code of {apis} call hipMemcpy, hipMemset, hipMalloc or a synchronization, and under which conditions?",
    ],
    intros: [
        "The HIP runtime calls on the call path:",
        "Host-side runtime calls read off the code:",
        "The host code calls the HIP runtime at:",
    ],
};

const STORES: Template = Template {
    id: "facts-stores",
    category: "semantics",
    questions: [
        "What does {apis} write into the handle or through its pointer arguments, and when?",
        "Which state does {apis} set, and from which values?",
        "Where do the results of {apis}'s host code go: what does it store through its output pointers or in the handle?",
    ],
    intros: [
        "The stores on the call path:",
        "What the host code writes:",
        "Stores read off the code:",
    ],
};

const STATIC_STATE: Template = Template {
    id: "facts-static-state",
    category: "semantics",
    questions: [
        "Which variables of static storage duration does {apis} set, and what does their lifetime mean for repeated or concurrent calls?",
        "What state outlives a call to {apis}: which static, thread-local or namespace-scope variables does it write, and who else uses them?",
        "Does {apis} keep state between calls (static or thread-local variables)? Where is it declared, set and read?",
    ],
    intros: [
        "The static state on the call path:",
        "Variables that outlive the call:",
        "Read off the declarations and the stores:",
    ],
};

/// A piece of an entry's slice: library, file, function, and the first line of a
/// callee's definition (0 for the functions the facts are in).
type PieceKey = (String, String, String, u32);

/// One rendered answer and the facts it cites, before APIs are grouped.
struct Unit<'a> {
    template: &'static Template,
    subject: String,
    /// What part of the API's code the answer covers, where one answer would not hold
    /// it all (empty: all of it); the question names it.
    scope: String,
    body: String,
    facts: Vec<&'a Fact>,
}

fn at(f: &Fact) -> String {
    if f.end_line > f.line {
        format!("{}:{}-{}", f.file, f.line, f.end_line)
    } else {
        format!("{}:{}", f.file, f.line)
    }
}

/// Code as an inline code span: what is the library's text reads as code, and the
/// quote check holds it to the code shown. Text holding a backtick stays as it is.
fn code(s: &str) -> String {
    let s = s.trim();
    if s.is_empty() || s.contains('`') {
        s.to_string()
    } else {
        format!("`{s}`")
    }
}

/// A list of names (`__syncthreads, __threadfence`), each as code.
fn code_list(s: &str) -> String {
    let items: Vec<String> = s.split(", ").map(code).collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    listed(&refs)
}

/// A guard as the scanner writes it: whether it is an `else` branch's (`not (X)`), and
/// its test without the `if constexpr`'s `constexpr`.
fn guard_test(c: &str) -> (bool, &str) {
    let (negated, inner) = match c.strip_prefix("not ") {
        Some(rest) => (true, whole_parens(rest).unwrap_or(rest)),
        None => (false, c),
    };
    (negated, inner.strip_prefix("constexpr ").unwrap_or(inner))
}

/// The guards of a fact as one clause, code quoted as written: the tests that must
/// hold, then those of the `else` branches it is in, negated together so the clause
/// cannot be read two ways (`` `B` and `C`, and neither `A` nor `D` holds ``), then the
/// `switch` cases it sits in (`` in the `case rocblas_fill_upper` of `switch (uplo)` ``).
fn guard_clauses(guards: &[&str]) -> (String, Vec<String>) {
    let (mut holds, mut fails, mut cases) = (Vec::new(), Vec::new(), Vec::new());
    let mut i = 0;
    while i < guards.len() {
        let (negated, inner) = guard_test(guards[i]);
        if inner.starts_with("switch (") {
            let label = guards
                .get(i + 1)
                .filter(|g| g.starts_with("case ") || **g == "default");
            match label {
                Some(l) => {
                    cases.push(format!("in the {} of {}", code(l), code(inner)));
                    i += 1;
                }
                None => cases.push(format!("in a case of {}", code(inner))),
            }
        } else if inner.starts_with("case ") || inner == "default" {
            cases.push(format!("in the {}", code(inner)));
        } else if negated {
            match flipped(inner) {
                Some(positive) => holds.push(positive),
                None => fails.push(inner.to_string()),
            }
        } else {
            holds.push(inner.to_string());
        }
        i += 1;
    }
    let implied = implied_inequalities(&holds);
    let mut holds: Vec<String> = holds.into_iter().filter(|h| !implied.contains(h)).collect();
    // A test the others settle says nothing more: `n % 16 == 0 && k % 16 == 0` failing
    // beside `n % 16 != 0`, or the arms of an `else if` chain on `trans` and `uplo`
    // beside the one that holds.
    let mut i = 0;
    while i < holds.len() {
        let others: Vec<&str> = (0..holds.len())
            .filter(|&j| j != i)
            .map(|j| holds[j].as_str())
            .collect();
        if !others.is_empty() && super::eval::decided_by(&others, &holds[i]) == Some(true) {
            holds.remove(i);
        } else {
            i += 1;
        }
    }
    let held: Vec<&str> = holds.iter().map(String::as_str).collect();
    let fails: Vec<String> = fails
        .iter()
        .filter(|f| held.is_empty() || super::eval::decided_by(&held, f) != Some(false))
        .map(|f| code(f))
        .collect();
    let holds: Vec<String> = holds.iter().map(|h| code(h)).collect();
    let fails = match fails.as_slice() {
        [] => String::new(),
        [one] => format!("{one} does not hold"),
        [a, b] => format!("neither {a} nor {b} holds"),
        _ => format!("none of {} holds", listed_all(&fails)),
    };
    let tests = match (holds.is_empty(), fails.is_empty()) {
        (_, true) => listed_all(&holds),
        (true, false) => fails,
        (false, false) => format!("{}, and {fails}", listed_all(&holds)),
    };
    (tests, cases)
}

/// The tests of `holds` that another of them implies: `transA != rocblas_operation_none`
/// beside `transA == rocblas_operation_conjugate_transpose` (the `else if` chain of a
/// three-way test), where both compare one operand with a constant (an enumerator or a
/// number) and the constants differ.
fn implied_inequalities(holds: &[String]) -> BTreeSet<String> {
    let constant = |s: &str| {
        let s = s.trim();
        s.parse::<i64>().is_ok() || crate::facts::eval::is_enumerator(s)
    };
    // `(operand, constant)` of a comparison `op` either way round.
    let sides = |h: &str, op: &str| -> Option<(String, String)> {
        let (a, b) = h.split_once(op)?;
        let (a, b) = (a.trim(), b.trim());
        if a.contains(' ') || b.contains(' ') {
            return None;
        }
        match (constant(a), constant(b)) {
            (false, true) => Some((a.to_string(), b.to_string())),
            (true, false) => Some((b.to_string(), a.to_string())),
            _ => None,
        }
    };
    let equal: Vec<(String, String)> = holds.iter().filter_map(|h| sides(h, " == ")).collect();
    holds
        .iter()
        .filter(|h| {
            sides(h, " != ").is_some_and(|(x, k)| equal.iter().any(|(y, j)| *y == x && *j != k))
        })
        .cloned()
        .collect()
}

/// The negation of a plain test written positively: `n > 0` for `not (n <= 0)`, `x`
/// for `not (!x)`. A list of "`A` does not hold" reads as a wall of negated code; a
/// test of one comparison or one name negates without changing meaning. A compound test
/// (`&&`, `||`, `?:`) stays negated as a whole, so the clause cannot be read two ways.
fn flipped(test: &str) -> Option<String> {
    let test = test.trim();
    let depth_zero = |s: &str, needle: &str| -> Vec<usize> {
        let mut depth = 0i32;
        let mut at = Vec::new();
        for (i, c) in s.char_indices() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                _ => {}
            }
            if depth == 0 && s[i..].starts_with(needle) {
                at.push(i);
            }
        }
        at
    };
    if [" && ", " || ", " ? ", "<<", ">>", " and ", " or "]
        .iter()
        .any(|op| !depth_zero(test, op).is_empty())
    {
        return None;
    }
    if let Some(name) = test.strip_prefix('!') {
        // One operand: a name, a member, a call (`!handle->is_device_memory_size_query()`).
        if !name.starts_with('=') && depth_zero(name, " ").is_empty() && !name.is_empty() {
            return Some(name.to_string());
        }
    }
    let ops = [
        (" <= ", " > "),
        (" >= ", " < "),
        (" == ", " != "),
        (" != ", " == "),
        (" < ", " >= "),
        (" > ", " <= "),
    ];
    let found: Vec<(usize, &str, &str)> = ops
        .iter()
        .flat_map(|(op, neg)| {
            depth_zero(test, op)
                .into_iter()
                .map(move |i| (i, *op, *neg))
        })
        .collect();
    let [(i, op, neg)] = found.as_slice() else {
        return None;
    };
    let (lhs, rhs) = (&test[..*i], &test[i + op.len()..]);
    (!lhs.trim().is_empty() && !rhs.trim().is_empty()).then(|| format!("{lhs}{neg}{rhs}"))
}

/// `X` when `s` is `(X)` with the two parentheses matching each other.
fn whole_parens(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('(')?.strip_suffix(')')?;
    let mut depth = 0i32;
    for c in inner.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    (depth == 0).then_some(inner)
}

/// The conditions of a fact as a clause: the guards, then the loops it sits in
/// (``, only when `n > 0`, inside the loop `for (int b = 0; ...)` ``).
fn when(f: &Fact) -> String {
    // A test nested in the same test (a lock taken between two `if(!adapter)`) is said once.
    let mut seen = BTreeSet::new();
    let (loops, guards): (Vec<&str>, Vec<&str>) = f
        .conditions
        .iter()
        .map(String::as_str)
        .filter(|c| seen.insert(*c))
        .partition(|c| c.starts_with("loop: "));
    let mut out = String::new();
    let (tests, cases) = guard_clauses(&guards);
    if !tests.is_empty() {
        out.push_str(&format!(", only when {tests}"));
    }
    if !cases.is_empty() {
        out.push_str(&format!(", {}", listed_all(&cases)));
    }
    if !loops.is_empty() {
        let heads: Vec<String> = loops.iter().map(|c| code(&c["loop: ".len()..])).collect();
        out.push_str(&format!(
            ", inside the loop {}",
            heads.join(" and the loop ")
        ));
    }
    out
}

/// Characters of bullets one answer lists (answers stay well inside the validator's
/// length bound).
const MAX_BODY_CHARS: usize = 4000;

/// Whether sentences fit one answer: at most [`MAX_ITEMS`] bullets of about
/// [`MAX_BODY_CHARS`], with the lead line said ahead of them.
fn fits(stated: &[(String, Vec<&Fact>)], lead: &str) -> bool {
    stated.len() <= MAX_ITEMS
        && lead.len() + stated.iter().map(|(l, _)| l.len() + 3).sum::<usize>() <= MAX_BODY_CHARS
}

/// A unit of the facts that state a sentence, in order; a fact whose sentence has a
/// hole ([`slot`]) is left out, and not cited.
fn unit<'a>(
    template: &'static Template,
    subject: &str,
    facts: &[&'a Fact],
    sentence: impl Fn(&Fact) -> Option<String>,
) -> Vec<Unit<'a>> {
    let mut stated = Vec::new();
    for f in facts {
        match sentence(f) {
            Some(l) => stated.push((l, vec![*f])),
            None => {
                tracing::debug!(kind = ?f.kind, at = %at(f), "A fact with an empty value is left out of its answer.")
            }
        }
    }
    stated_unit(template, subject, stated)
}

/// The conditions every one of two or more facts sits under, in the order the first
/// states them.
fn shared_conditions(facts: &[&Fact]) -> Vec<String> {
    let [first, rest @ ..] = facts else {
        return Vec::new();
    };
    if rest.is_empty() {
        return Vec::new();
    }
    let mut seen = BTreeSet::new();
    first
        .conditions
        .iter()
        .filter(|c| seen.insert(c.as_str()))
        .filter(|c| rest.iter().all(|f| f.conditions.contains(c)))
        .cloned()
        .collect()
}

/// Sentences of facts with the conditions they all share said once, in a lead line,
/// and not again in each item: nine launches under the same `uplo == rocblas_fill_upper`
/// and the same 64-bit chunk loop read as nine restatements of it. Returns the lead
/// (empty when nothing is shared; `items` opens it: "Every launch below is made") with
/// the facts it is about, and the sentences, each with the facts it states.
#[allow(clippy::type_complexity)]
fn factored<'a>(
    facts: &[&'a Fact],
    items: &str,
    say: impl for<'f> Fn(&[&'f Fact]) -> Vec<(String, Vec<&'f Fact>)>,
) -> ((String, Vec<&'a Fact>), Vec<(String, Vec<&'a Fact>)>) {
    let shared = shared_conditions(facts);
    let trimmed = without_conditions(facts, &shared);
    let refs: Vec<&Fact> = trimmed.iter().collect();
    let stated = say(&refs)
        .into_iter()
        .map(|(l, fs)| {
            let fs = fs
                .into_iter()
                .map(|r| source_of(&trimmed, facts, r))
                .collect();
            (l, fs)
        })
        .collect();
    let lead = if shared.is_empty() {
        String::new()
    } else {
        let clause = when(&Fact {
            conditions: shared,
            ..facts[0].clone()
        });
        format!("{items} {}:", clause.trim_start_matches(", "))
    };
    ((lead, facts.to_vec()), stated)
}

/// Copies of facts without the conditions of `drop` (said once, ahead of them).
fn without_conditions(facts: &[&Fact], drop: &[String]) -> Vec<Fact> {
    facts
        .iter()
        .map(|f| {
            let mut t = (*f).clone();
            t.conditions.retain(|c| !drop.contains(c));
            t
        })
        .collect()
}

/// The fact a copy of [`without_conditions`] was made from: sentences cite the facts
/// themselves, not the copies they were written from.
fn source_of<'f>(copies: &[Fact], facts: &[&'f Fact], copy: &Fact) -> &'f Fact {
    let i = copies
        .iter()
        .position(|t| std::ptr::eq(t, copy))
        .expect("a sentence states the facts it was given");
    facts[i]
}

/// [`unit`] with the conditions all its facts share said once ([`factored`]).
fn factored_unit<'a>(
    template: &'static Template,
    subject: &str,
    facts: &[&'a Fact],
    items: &str,
    sentence: impl Fn(&Fact) -> Option<String>,
) -> Vec<Unit<'a>> {
    let (lead, stated) = factored(facts, items, |fs| {
        fs.iter()
            .filter_map(|f| sentence(f).map(|l| (l, vec![*f])))
            .collect()
    });
    led_unit(template, subject, lead, stated)
}

/// Units of sentences, each with the facts it states (cited). What does not fit one
/// answer is split, never cut: into answers each about the code of some functions
/// (`scope`, which the question names), a function whose sentences alone do not fit
/// into answers each about a range of its lines.
fn stated_unit<'a>(
    template: &'static Template,
    subject: &str,
    stated: Vec<(String, Vec<&'a Fact>)>,
) -> Vec<Unit<'a>> {
    led_unit(template, subject, (String::new(), Vec::new()), stated)
}

/// [`stated_unit`] with a line said once ahead of the items of each answer that holds
/// any of the facts it is about (the conditions they share, [`factored`]); an answer
/// split off with none of them (a kernel's launch bounds alone) has no lead.
fn led_unit<'a>(
    template: &'static Template,
    subject: &str,
    (lead, about): (String, Vec<&'a Fact>),
    stated: Vec<(String, Vec<&'a Fact>)>,
) -> Vec<Unit<'a>> {
    let make = |scope: String, part: Vec<(String, Vec<&'a Fact>)>| Unit {
        template,
        subject: subject.to_string(),
        scope,
        body: (!lead.is_empty()
            && part
                .iter()
                .flat_map(|(_, fs)| fs)
                .any(|f| about.iter().any(|a| std::ptr::eq(*a, *f))))
        .then(|| lead.clone())
        .into_iter()
        .chain(part.iter().map(|(l, _)| format!("- {l}")))
        .collect::<Vec<_>>()
        .join("\n"),
        facts: part.into_iter().flat_map(|(_, f)| f).collect(),
    };
    if stated.is_empty() {
        return Vec::new();
    }
    if fits(&stated, &lead) {
        return vec![make(String::new(), stated)];
    }
    // The sentences about one function's code, together, functions in the order they
    // first come: an answer scoped to "the code of" a function holds all of it (gesdd's
    // launches at roclapack_gesdd.hpp:373 and :445 came before gelq2's in run order and
    // its :497 after, so two answers each claimed the function and each listed part).
    let mut runs: Vec<Vec<(String, Vec<&'a Fact>)>> = Vec::new();
    for s in stated {
        let run = s.1.first().and_then(|f| {
            runs.iter_mut().find(|r| {
                r.first()
                    .and_then(|(_, fs)| fs.first())
                    .is_some_and(|p| p.function == f.function && p.file == f.file)
            })
        });
        match run {
            Some(r) => r.push(s),
            None => runs.push(vec![s]),
        }
    }
    let mut out = Vec::new();
    let mut part: Vec<(String, Vec<&'a Fact>)> = Vec::new();
    let mut functions: Vec<String> = Vec::new();
    let flush =
        |part: &mut Vec<(String, Vec<&'a Fact>)>, functions: &mut Vec<String>, out: &mut Vec<_>| {
            if !part.is_empty() {
                let names: Vec<String> = functions.iter().map(|f| code(f)).collect();
                out.push(make(
                    format!("the code of {}", listed_all(&names)),
                    std::mem::take(part),
                ));
                functions.clear();
            }
        };
    for run in runs {
        let function = run[0]
            .1
            .first()
            .map(|f| f.function.clone())
            .unwrap_or_default();
        if fits(&run, &lead) {
            let joined: Vec<_> = part.iter().chain(run.iter()).cloned().collect();
            if !fits(&joined, &lead) {
                flush(&mut part, &mut functions, &mut out);
            }
            if !functions.contains(&function) {
                functions.push(function);
            }
            part.extend(run);
            continue;
        }
        flush(&mut part, &mut functions, &mut out);
        // One function's sentences, in ranges of its lines that fit, taken in line
        // order so that each range holds only its own answer's sites (in the order
        // of the kernels' names, a range of lines 519-872 held launches of kernels the
        // answer for it did not list).
        let mut run = run;
        run.sort_by_key(|(_, f)| f.iter().map(|f| f.line).min().unwrap_or(0));
        let mut piece: Vec<(String, Vec<&'a Fact>)> = Vec::new();
        for s in run {
            let mut with = piece.clone();
            with.push(s.clone());
            if !piece.is_empty() && !fits(&with, &lead) {
                out.push(make(
                    lines_scope(&function, &piece),
                    std::mem::take(&mut piece),
                ));
            }
            piece.push(s);
        }
        if !piece.is_empty() {
            out.push(make(lines_scope(&function, &piece), piece));
        }
    }
    flush(&mut part, &mut functions, &mut out);
    out
}

/// A list whose order is its answer (the tests an API makes before any launch), in
/// parts that fit, each scoped by where it starts and stops in that order: a part
/// scoped by function would miss a function's later tests that fall in the next part
/// (sygvdx's impl checks the handle first and the allocation after the argument check).
fn ordered_unit<'a>(
    template: &'static Template,
    (lead, about): (String, Vec<&'a Fact>),
    stated: Vec<(String, Vec<&'a Fact>)>,
) -> Vec<Unit<'a>> {
    if stated.is_empty() || fits(&stated, &lead) {
        return led_unit(template, "", (lead, about), stated);
    }
    let mut parts: Vec<Vec<(String, Vec<&'a Fact>)>> = vec![Vec::new()];
    for s in stated {
        let last = parts.last_mut().expect("one part");
        let mut with = last.clone();
        with.push(s.clone());
        if !last.is_empty() && !fits(&with, &lead) {
            parts.push(vec![s]);
        } else {
            last.push(s);
        }
    }
    let end_of = |part: &[(String, Vec<&Fact>)]| {
        part.last()
            .and_then(|(_, f)| f.first())
            .map(|f| at(f))
            .unwrap_or_default()
    };
    let n = parts.len();
    let mut out = Vec::new();
    let mut before: Option<String> = None;
    for (k, part) in parts.into_iter().enumerate() {
        let end = end_of(&part);
        let scope = match (&before, k + 1 == n) {
            (None, _) => format!("the tests that run first, up to the one at {end}"),
            (Some(b), true) => format!("the tests after the one at {b}"),
            (Some(b), false) => format!("the tests after the one at {b}, up to the one at {end}"),
        };
        let mut units = led_unit(template, "", (lead.clone(), about.clone()), part);
        for u in &mut units {
            u.scope = scope.clone();
        }
        out.extend(units);
        before = Some(end);
    }
    out
}

/// The scope of sentences about one function's code: its name and the lines they cite.
fn lines_scope(function: &str, piece: &[(String, Vec<&Fact>)]) -> String {
    let facts = piece.iter().flat_map(|(_, f)| f.iter());
    let first = facts.clone().map(|f| f.line).min().unwrap_or(0);
    let last = facts
        .clone()
        .map(|f| f.end_line.max(f.line))
        .max()
        .unwrap_or(0);
    let file = piece
        .iter()
        .find_map(|(_, f)| f.first())
        .map(|f| f.file.as_str())
        .unwrap_or("");
    format!("the code of {} at {file}:{first}-{last}", code(function))
}

/// The answer with only what the code shown holds as written left in code spans:
/// a condition as this API's arguments leave it, or a value the preprocessor or the
/// evaluator produced, reads as prose, not as a quote of the library.
fn spans_as_written(body: &str, shown_squashed: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(a) = rest.find('`') {
        let Some(len) = rest[a + 1..].find('`') else {
            break;
        };
        let span = &rest[a + 1..a + 1 + len];
        out.push_str(&rest[..a]);
        if holds_quote(shown_squashed, span) {
            out.push('`');
            out.push_str(span);
            out.push('`');
        } else {
            out.push_str(span);
        }
        rest = &rest[a + len + 2..];
    }
    out.push_str(rest);
    out
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The sentences of stores: stores of one value under the same conditions on
/// neighbouring lines of one function (a size query setting a dozen sizes to 0) are one
/// sentence, not a dozen that differ in a name.
fn store_sentences<'a>(stores: &[&'a Fact]) -> Vec<(String, Vec<&'a Fact>)> {
    let stated: Vec<&Fact> = stores
        .iter()
        .copied()
        .filter(|f| statement(f).is_some())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < stated.len() {
        let first = stated[i];
        let mut j = i + 1;
        while j < stated.len() {
            let (prev, f) = (stated[j - 1], stated[j]);
            let same = f.function == first.function
                && f.file == first.file
                && slot(f, "value") == slot(first, "value")
                && f.conditions == first.conditions
                && f.line > prev.end_line
                && f.line <= prev.end_line + 2;
            if !same {
                break;
            }
            j += 1;
        }
        let run = &stated[i..j];
        let sentence = match run {
            [one] => statement(one),
            _ => {
                let targets: Vec<String> = run
                    .iter()
                    .filter_map(|f| slot(f, "target"))
                    .map(code)
                    .collect();
                let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
                Some(format!(
                    "{} stores {} in each of {} ({}:{}-{}){}.",
                    code(&first.function),
                    code(slot(first, "value").unwrap_or_default()),
                    listed(&targets),
                    first.file,
                    first.line,
                    run[run.len() - 1].end_line,
                    when(first)
                ))
            }
        };
        out.extend(sentence.map(|s| (s, run.to_vec())));
        i = j;
    }
    out
}

/// Calls into another library, one sentence per callee and conditions: the overloads
/// of one wrapper (`rocblasCall_gemm` at seven lines of rocblas.hpp) or several
/// functions calling the same function are one sentence naming each caller with its
/// lines, not one sentence per site that differs in a line number.
fn cross_library_sentences<'a>(facts: &[&'a Fact]) -> Vec<(String, Vec<&'a Fact>)> {
    let mut groups: Vec<Vec<&Fact>> = Vec::new();
    for f in facts.iter().copied().filter(|f| statement(f).is_some()) {
        let same = |g: &Vec<&Fact>| {
            let h = g[0];
            h.subject == f.subject && h.values == f.values && h.conditions == f.conditions
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.push(f),
            None => groups.push(vec![f]),
        }
    }
    groups
        .into_iter()
        .filter_map(|g| {
            let sentence = match g.as_slice() {
                [one] => statement(one)?,
                [first, ..] => {
                    let mut by_function: Vec<(&str, &str, Vec<String>)> = Vec::new();
                    for f in &g {
                        match by_function
                            .iter_mut()
                            .find(|(n, file, _)| *n == f.function && *file == f.file)
                        {
                            Some((_, _, lines)) => lines.push(f.line.to_string()),
                            None => {
                                by_function.push((&f.function, &f.file, vec![f.line.to_string()]))
                            }
                        }
                    }
                    let callers: Vec<String> = by_function
                        .iter()
                        .map(|(n, file, lines)| {
                            format!("{} ({file}:{})", code(n), lines.join(", "))
                        })
                        .collect();
                    let verb = if by_function.len() == 1 {
                        "calls"
                    } else {
                        "call"
                    };
                    format!(
                        "{} {verb} {} of {}, defined at {}:{}, from {} sites{}.",
                        listed_all(&callers),
                        code(subject(first)?),
                        slot(first, "callee_lib")?,
                        slot(first, "callee_file")?,
                        slot(first, "callee_lines")?,
                        g.len(),
                        when(first),
                    )
                }
                [] => return None,
            };
            Some((sentence, g))
        })
        .collect()
}

/// What writes the sentences of a group of facts, each with the facts it states.
type Sentences<'s> = dyn for<'f> Fn(&[&'f Fact]) -> Vec<(String, Vec<&'f Fact>)> + 's;

/// A closure as [`Sentences`]: one written in place is not inferred to hold for every
/// lifetime of the facts it is given.
fn sentences<F>(say: F) -> F
where
    F: for<'f> Fn(&[&'f Fact]) -> Vec<(String, Vec<&'f Fact>)>,
{
    say
}

/// Deepest nesting [`condition_tree`] writes; below it the tests stay in each item.
const MAX_TREE_DEPTH: usize = 3;

/// Sentences of facts laid out by the tests that tell them apart, each said once: the
/// facts are split on the first test some hold and the rest fail (an `if` and its
/// `else`), "When `A`:" then "Otherwise (`not A`):", each side split again, and the
/// facts under neither side listed after them, as the code reaches them. Seven dot
/// launches under two nested size and aliasing tests read as seven restatements of
/// them; as a tree they read as the launcher's decision. `say` writes the leaves (a
/// group of facts no test splits), with only their own remaining tests.
fn condition_tree<'a>(facts: &[&'a Fact], say: &Sentences<'_>) -> Vec<(String, Vec<&'a Fact>)> {
    // A test is one function's: `m >= n` in gebd2 and in labrd are two tests, so each
    // run of one function's facts is laid out alone.
    let mut out = Vec::new();
    let mut from = 0;
    while from < facts.len() {
        let same = |f: &&&Fact| f.function == facts[from].function && f.file == facts[from].file;
        let to = from + facts[from..].iter().take_while(same).count();
        let laid: Vec<(String, Vec<&'a Fact>)> = tree_level(&facts[from..to], say, 0)
            .into_iter()
            .map(|(lines, fs)| (lines.join("\n"), fs))
            .collect();
        // An item is split across answers whole or not at all: one too long for a
        // part of an answer is said as the flat list it groups.
        let too_long = laid
            .iter()
            .any(|(l, _)| l.lines().count() > MAX_ITEMS / 2 || l.len() > MAX_BODY_CHARS / 3);
        match too_long {
            true => out.extend(say(&facts[from..to])),
            false => out.extend(laid),
        }
        from = to;
    }
    out
}

/// One level of [`condition_tree`]: items whose first line is the item's own and whose
/// other lines are its nested bullets, already indented.
#[allow(clippy::type_complexity)]
fn tree_level<'a>(
    facts: &[&'a Fact],
    say: &Sentences<'_>,
    depth: usize,
) -> Vec<(Vec<String>, Vec<&'a Fact>)> {
    let leaves = |fs: &[&'a Fact]| -> Vec<(Vec<String>, Vec<&'a Fact>)> {
        say(fs).into_iter().map(|(l, f)| (vec![l], f)).collect()
    };
    if facts.len() < 2 || depth >= MAX_TREE_DEPTH {
        return leaves(facts);
    }
    let negation = |c: &str| format!("not ({c})");
    let has = |f: &Fact, c: &str| f.conditions.iter().any(|x| x == c);
    // A fact under the other side of `t`, however the code spells it.
    let has_negation = |f: &Fact, t: &str| {
        f.conditions.iter().any(|x| {
            *x == negation(t)
                || flipped(t).as_deref() == Some(x.as_str())
                || flipped(x).as_deref() == Some(t)
        })
    };
    // The first test, in the order the code makes them, that at least two facts hold
    // and two others fail: a test that sets one fact apart stays in its sentence (an
    // `else if` chain of sizes reads best as one test per launch).
    let positive = |c: &str| -> String {
        c.strip_prefix("not ")
            .and_then(whole_parens)
            .unwrap_or(c)
            .to_string()
    };
    let Some(test) = facts
        .iter()
        .flat_map(|f| f.conditions.iter())
        .map(|c| positive(c))
        .find(|t| {
            let inner = t.strip_prefix("constexpr ").unwrap_or(t);
            !t.starts_with("loop: ")
                && !inner.starts_with("switch (")
                && !inner.starts_with("case ")
                && inner != "default"
                && facts.iter().filter(|f| has(f, t)).count() >= 2
                && facts.iter().filter(|f| has_negation(f, t)).count() >= 2
        })
    else {
        return leaves(facts);
    };
    // The other side as the code writes it: `i64_indices` for `!i64_indices`, `mode !=
    // device` for `mode == device`, else `not (test)`.
    let not_test = flipped(&test).unwrap_or_else(|| negation(&test));
    let mut out: Vec<(Vec<String>, Vec<&'a Fact>)> = Vec::new();
    for (side, cond) in [(true, test.as_str()), (false, not_test.as_str())] {
        let group: Vec<&'a Fact> = facts
            .iter()
            .copied()
            .filter(|f| match side {
                true => has(f, cond),
                false => has_negation(f, &test),
            })
            .collect();
        // The tests every fact of the side shares (its own among them) go in its heading.
        let shared = shared_conditions(&group);
        let (tests, _) = guard_clauses(
            &std::iter::once(cond)
                .chain(
                    shared
                        .iter()
                        .map(String::as_str)
                        .filter(|c| *c != cond && !c.starts_with("loop: ")),
                )
                .collect::<Vec<_>>(),
        );
        let trimmed = without_conditions(&group, &shared);
        let inner: Vec<&Fact> = trimmed.iter().collect();
        let back = |r: &Fact| source_of(&trimmed, &group, r);
        let items = tree_level(&inner, say, depth + 1);
        // The loops every fact of the side sits in are said once, with its test.
        let loops: Vec<String> = shared
            .iter()
            .filter_map(|c| c.strip_prefix("loop: "))
            .map(code)
            .collect();
        let inside = match loops.is_empty() {
            true => String::new(),
            false => format!(", inside the loop {}", loops.join(" and the loop ")),
        };
        let heading = match side {
            true => format!("When {tests}{inside}:"),
            false => format!("Otherwise ({tests}){inside}:"),
        };
        let mut lines = vec![heading];
        let mut cited: Vec<&'a Fact> = Vec::new();
        for (item, fs) in items {
            for (k, l) in item.iter().enumerate() {
                let mark = if k == 0 { "- " } else { "" };
                lines.push(format!("  {mark}{l}"));
            }
            cited.extend(fs.into_iter().map(back));
        }
        out.push((lines, cited));
    }
    let rest: Vec<&'a Fact> = facts
        .iter()
        .copied()
        .filter(|f| !has(f, &test) && !has_negation(f, &test))
        .collect();
    if !rest.is_empty() {
        out.extend(tree_level(&rest, say, depth));
    }
    out
}

/// A test of a name against an enumerator: `(name, test as written)`.
type Selector = (String, String);

/// The tests of a condition that compare names with enumerators, each as written
/// (`rocblas_operation_transpose == trans`), by name; `None` where any part of it
/// tests something else. These pick one of sibling launches (an `else if` chain on
/// `trans` and `uplo` with one launch per arm).
fn selector_tests(cond: &str) -> Option<Vec<Selector>> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(r"^(\w+) == (\w+)$").expect("static regex"));
    let mut out = Vec::new();
    for part in super::eval::split_top(super::eval::without_parens(cond.trim()), "&&") {
        let part = super::eval::without_parens(part.trim());
        let m = re.captures(part)?;
        let name = match (
            super::eval::is_enumerator(&m[1]),
            super::eval::is_enumerator(&m[2]),
        ) {
            (true, false) => m[2].to_string(),
            (false, true) => m[1].to_string(),
            _ => return None,
        };
        out.push((name, part.to_string()));
    }
    Some(out)
}

/// A launch's conditions split into the selector tests it passes (see
/// [`selector_tests`]) and the rest; `None` where it passes none, or where an `else
/// if` arm it skips is not settled by the ones it passes.
fn split_selectors(f: &Fact) -> Option<(Vec<Selector>, Vec<String>)> {
    let (mut picked, mut rest, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    let mut conditions = f.conditions.iter().peekable();
    while let Some(c) = conditions.next() {
        // A `case` of a `switch` picks one of sibling launches as an `else if` arm does
        // (trti2_run_small's `switch (n)`, one launch per `case`).
        if let Some(name) = c.strip_prefix("switch (").and_then(|r| r.strip_suffix(')')) {
            if let Some(label) = conditions.next_if(|l| l.starts_with("case ")) {
                picked.push((name.trim().to_string(), label.clone()));
                continue;
            }
        }
        let negated = c.strip_prefix("not (").and_then(|r| r.strip_suffix(')'));
        match (negated, selector_tests(c)) {
            (None, Some(tests)) if !super::eval::is_branch_header(c) => picked.extend(tests),
            (Some(inner), _) if selector_tests(inner).is_some() => skipped.push(inner),
            _ => rest.push(c.clone()),
        }
    }
    if picked.is_empty() {
        return None;
    }
    let held: Vec<&str> = picked.iter().map(|(_, t)| t.as_str()).collect();
    skipped
        .iter()
        .all(|s| super::eval::decided_by(&held, s) == Some(false))
        .then_some((picked, rest))
}

/// The launch sentences of the kernels question: one per launch, except where one
/// function launches one kernel from sibling sites that an `else if` chain on
/// enumerators picks among (herk_syrk_device.hpp's six `trans` × `uplo` arms): those
/// are one sentence naming the tests of each site, so the tests they share are said
/// once and the arms they skip not at all.
fn launch_sentences<'a>(facts: &[&'a Fact]) -> Vec<(String, Vec<&'a Fact>)> {
    type Key = (String, String, String, Vec<String>, Vec<String>);
    type Site<'f> = (&'f Fact, Vec<Selector>);
    let mut groups: Vec<(Key, Vec<Site<'a>>)> = Vec::new();
    let mut order: Vec<Result<usize, &'a Fact>> = Vec::new();
    for f in facts {
        let Some((picked, rest)) = split_selectors(f) else {
            order.push(Err(*f));
            continue;
        };
        let names: BTreeSet<String> = picked.iter().map(|(n, _)| n.clone()).collect();
        let key = (
            f.function.clone(),
            f.subject.clone(),
            through_macro(f),
            rest,
            names.into_iter().collect(),
        );
        match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => groups[i].1.push((*f, picked)),
            None => {
                groups.push((key, vec![(*f, picked)]));
                order.push(Ok(groups.len() - 1));
            }
        }
    }
    let mut out = Vec::new();
    for o in order {
        let (key, sites) = match o {
            Err(f) => {
                out.extend(statement(f).map(|l| (l, vec![f])));
                continue;
            }
            Ok(i) => &groups[i],
        };
        if sites.len() < 2 {
            let f = sites[0].0;
            out.extend(statement(f).map(|l| (l, vec![f])));
            continue;
        }
        // "One for each value" only where the sites' tests differ: gels' two
        // copy_mat sites both sit under `trans == rocblas_operation_none`
        // (roclapack_gels.hpp:328-361), told apart by tests not read as selectors.
        let distinct: BTreeSet<Vec<&str>> = sites
            .iter()
            .map(|(_, picked)| picked.iter().map(|(_, t)| t.as_str()).collect())
            .collect();
        if distinct.len() < sites.len() {
            for (f, _) in sites {
                out.extend(statement(f).map(|l| (l, vec![*f])));
            }
            continue;
        }
        let (function, kernel, through, rest, names) = key;
        let shared = when(&Fact {
            conditions: rest.clone(),
            ..sites[0].0.clone()
        });
        if let Some(run) = case_run(sites) {
            out.push((
                format!(
                    "{} launches {}{through} from {} sites{shared}, {run}.",
                    code(function),
                    code(kernel),
                    sites.len(),
                ),
                sites.iter().map(|(f, _)| *f).collect(),
            ));
            continue;
        }
        if let Some(every) = every_combination(sites) {
            let first = sites.iter().map(|(f, _)| f.line).min().unwrap_or(0);
            let last = sites
                .iter()
                .map(|(f, _)| f.end_line.max(f.line))
                .max()
                .unwrap_or(0);
            out.push((
                format!(
                    "{} launches {}{through} from {} sites ({}:{first}-{last}){shared}, {every}.",
                    code(function),
                    code(kernel),
                    sites.len(),
                    sites[0].0.file,
                ),
                sites.iter().map(|(f, _)| *f).collect(),
            ));
            continue;
        }
        let each: Vec<String> = sites
            .iter()
            .map(|(f, picked)| {
                let tests: Vec<String> = picked.iter().map(|(_, t)| code(t)).collect();
                format!("at {} when {}", at(f), listed_all(&tests))
            })
            .collect();
        let names: Vec<String> = names.iter().map(|n| code(n)).collect();
        out.push((
            format!(
                "{} launches {}{through} from {} sites, one for each value of {} it tests{shared}: {}.",
                code(function),
                code(kernel),
                sites.len(),
                listed_all(&names),
                each.join("; "),
            ),
            sites.iter().map(|(f, _)| *f).collect(),
        ));
    }
    out
}

/// Sibling launches that cover every combination of the values their selectors test,
/// one site each (gemm's nine sites for `trans_a` and `trans_b`, each `none`,
/// `transpose` or `conjugate_transpose`), said as that: nine `at ... when ...` clauses
/// teach nothing the combination does not. `None` unless the sites are exactly the
/// product of two or more names' values, in one file.
fn every_combination(sites: &[(&Fact, Vec<Selector>)]) -> Option<String> {
    let file = &sites.first()?.0.file;
    if sites.iter().any(|(f, _)| f.file != *file) {
        return None;
    }
    let mut values: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut combos: BTreeSet<Vec<String>> = BTreeSet::new();
    for (_, picked) in sites {
        let mut combo = Vec::new();
        for (name, test) in picked {
            let value = test
                .split(" == ")
                .find(|side| side.trim() != name)?
                .trim()
                .to_string();
            values.entry(name).or_default().insert(value.clone());
            combo.push(format!("{name}={value}"));
        }
        combo.sort();
        combos.insert(combo);
    }
    let product: usize = values.values().map(BTreeSet::len).product();
    if values.len() < 2 || combos.len() != sites.len() || product != sites.len() {
        return None;
    }
    if combos.iter().any(|c| c.len() != values.len()) {
        return None;
    }
    let mut named: Vec<String> = Vec::new();
    let mut last: Option<&BTreeSet<String>> = None;
    for (name, vs) in &values {
        let listed_values: Vec<String> = vs.iter().map(|v| code(v)).collect();
        match last {
            Some(prev) if prev == vs => named.push(format!("{} (the same values)", code(name))),
            _ => named.push(format!("{} ({})", code(name), listed_all(&listed_values))),
        }
        last = Some(vs);
    }
    Some(format!(
        "one for each combination of {}",
        listed_all(&named)
    ))
}

/// Sibling launches that a `switch` picks among by consecutive integer `case`s, said as
/// the run they are (`case 1` to `case 64` of trti2_run_small's `switch (n)`, each
/// instantiating the kernel with its case value): sixty-four lines saying the same
/// thing teach nothing the run does not.
fn case_run(sites: &[(&Fact, Vec<Selector>)]) -> Option<String> {
    let mut values = Vec::new();
    for (f, picked) in sites {
        let [(name, label)] = picked.as_slice() else {
            return None;
        };
        let k: i64 = label.strip_prefix("case ")?.trim().parse().ok()?;
        values.push((k, f.line, name.as_str(), slot(f, "template_args")));
    }
    values.sort();
    let consecutive = values.windows(2).all(|w| w[1].0 == w[0].0 + 1);
    let name = values.first()?.2;
    if values.len() < 3 || !consecutive || values.iter().any(|v| v.2 != name) {
        return None;
    }
    let (first, last) = (values.first()?, values.last()?);
    let f = sites[0].0;
    let lines: Vec<u32> = values.iter().map(|v| v.1).collect();
    let (lo, hi) = (*lines.iter().min()?, *lines.iter().max()?);
    let each_its_value = values.iter().all(|(k, _, _, args)| {
        args.and_then(|a| a.split(',').next())
            .is_some_and(|a| a.trim() == k.to_string())
    });
    Some(format!(
        "one for each {} of {} from {} to {} ({}:{lo}-{hi}){}",
        code("case"),
        code(&format!("switch ({name})")),
        code(&format!("case {}", first.0)),
        code(&format!("case {}", last.0)),
        f.file,
        if each_its_value {
            ", each instantiating the kernel with its case value as the first template argument"
        } else {
            ""
        }
    ))
}

/// Host facts in the order the code runs them ([`Fact::order`]), those without one
/// last as they came: a launcher's launches listed by kernel name read out of order
/// (sdot's `:484, :503, :591, :525`).
fn in_run_order(mut facts: Vec<&Fact>) -> Vec<&Fact> {
    facts.sort_by(|a, b| (a.order.is_empty(), &a.order).cmp(&(b.order.is_empty(), &b.order)));
    facts
}

/// The API's facts of these kinds in its own library's code. What it runs of the
/// paired library (rocSOLVER's calls into rocBLAS) is that library's code, whose own
/// entries state it for its own APIs: read from here it would be decided by arguments
/// fixed several calls up (larfb's `side` for trmm's shapes, sygs2's `uplo` and
/// `trans` for trsv's launches), and blind reads found those claims wrong far more
/// often than any other. The entries stop at the call that leaves the library.
fn kinds<'a>(af: &'a ApiFacts, want: &[FactKind]) -> Vec<&'a Fact> {
    af.facts
        .iter()
        .filter(|f| want.contains(&f.kind) && f.lib == af.lib)
        .collect()
}

/// A fact's value under `key`; `None` when it has none or a blank one. Every sentence
/// reads its values through here, so none is written with a hole in it (answers once
/// read "calls abs of , defined at :" and "returns  if  (...)").
fn slot<'f>(f: &'f Fact, key: &str) -> Option<&'f str> {
    f.values
        .get(key)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

/// A non-empty `subject`.
fn subject(f: &Fact) -> Option<&str> {
    Some(f.subject.trim()).filter(|s| !s.is_empty())
}

/// ` through `MACRO` (file:lines)` for a fact written in a macro the line invokes.
fn through_macro(f: &Fact) -> String {
    match (f.values.get("macro"), f.values.get("macro_lines")) {
        (Some(m), Some(lines)) => {
            let file = f.values.get("macro_file").unwrap_or(&f.file);
            format!(
                " through {} ({}:{lines})",
                code(m),
                file.rsplit('/').next().unwrap_or(file)
            )
        }
        _ => String::new(),
    }
}

/// The sentence that states a fact, by its kind: the one place a kind is worded.
/// Names, values and conditions are code spans; citations are plain.
fn statement(f: &Fact) -> Option<String> {
    let (func, at, when) = (code(&f.function), at(f), when(f));
    let value = |key: &str| slot(f, key).map(code);
    Some(match f.kind {
        FactKind::Launch => {
            // Written in a macro the site invokes: say where the kernel is named.
            format!(
                "{func} launches {} ({at}){}{when}.",
                code(subject(f)?),
                through_macro(f)
            )
        }
        FactKind::LaunchBounds => {
            let bounds = slot(f, "bounds")?;
            let expanded = code(&format!("__launch_bounds__({bounds})"));
            let value = slot(f, "value");
            // A number already says the limit: `__launch_bounds__(1024)` is not
            // repeated after `__launch_bounds__(IAMAX_THDS)`.
            let (declared, limit) = match slot(f, "written") {
                Some(w) if value == Some(bounds) => (code(w), ", that is at most"),
                Some(w) => (format!("{}, which expands to {expanded}", code(w)), ": at most"),
                None => (expanded, ", that is at most"),
            };
            format!(
                "The kernel is declared with {declared}{} ({at}).",
                value
                    .map(|v| format!("{limit} {v} threads per block"))
                    .unwrap_or_default(),
            )
        }
        FactKind::SharedMemory if f.subject == "dynamic" => {
            format!("dynamically sized shared memory, sized by the launch ({at}).")
        }
        FactKind::SharedMemory if slot(f, "size").is_none() => format!(
            "a `__shared__` variable {} of type {}, one value the whole block shares ({at}){when}.",
            code(subject(f)?),
            value("type")?,
        ),
        FactKind::SharedMemory => format!(
            "a `__shared__` array {} of {} with size {}{} ({at}){when}.",
            code(subject(f)?),
            value("type")?,
            value("size")?,
            slot(f, "elements")
                .map(|e| format!(", {e} elements"))
                .unwrap_or_default(),
        ),
        FactKind::Barrier | FactKind::Atomic | FactKind::Wavefront | FactKind::MemoryPath => {
            let what = match f.kind {
                FactKind::Barrier if slot(f, "fence").is_some() => {
                    "memory fences (ordering this thread's writes, not a barrier)"
                }
                FactKind::Barrier => "barriers",
                FactKind::Atomic => "atomics",
                FactKind::MemoryPath => "memory paths",
                _ => "wavefront operations",
            };
            let ops = code_list(slot(f, "ops")?);
            let counted = match slot(f, "count")? {
                // Sites, not runs: a call in a loop runs once per step.
                "1" => format!("{what}: {ops} at one call site, {at}."),
                n => format!(
                    "{what}: {ops} at {n} call sites, first at {at} (lines {}).",
                    slot(f, "lines")?
                ),
            };
            // What a barrier is there for: the shared data written before it and read
            // after it, where a read may be of another thread's write; or written again
            // at another thread's element.
            // A tile each thread keeps to itself is ordered by no barrier: said once,
            // below, never as what a barrier is for (strsm's `sB`).
            let owned: Vec<&str> = slot(f, "thread_owned")
                .map(|o| o.split(' ').collect())
                .unwrap_or_default();
            let mut orders: Vec<String> = Vec::new();
            for (key, does) in [
                ("orders", "separates the writes of {} before it from the reads after it"),
                (
                    "orders_writes",
                    "keeps the writes to {} before it ahead of the writes to other elements after it",
                ),
            ] {
                for (line, names) in slot(f, key)
                    .into_iter()
                    .flat_map(|o| o.split(", "))
                    .filter_map(|x| x.split_once(' '))
                {
                    let names: Vec<String> = names
                        .split(' ')
                        .filter(|n| !owned.contains(n))
                        .map(code)
                        .collect();
                    if names.is_empty() {
                        continue;
                    }
                    orders.push(format!(
                        "the one at line {line} {}",
                        does.replace("{}", &listed_all(&names))
                    ));
                }
            }
            let mut said = if orders.is_empty() {
                counted
            } else {
                format!("{counted} In shared memory, {}.", listed_all(&orders))
            };
            // A tile each thread keeps to itself needs no barrier between threads.
            if let Some(own) = slot(f, "thread_owned") {
                let names: Vec<String> = own.split(' ').map(code).collect();
                said.push_str(&format!(
                    " Each thread reads and writes only its own elements of {} (every subscript is the thread's index plus a multiple of one stride), so no barrier is needed to order them between threads.",
                    listed_all(&names)
                ));
            }
            said
        }
        FactKind::StoresNothing => format!(
            "{} stores nothing and allocates nothing: its body returns, `{};` ({at}).",
            code(subject(f)?),
            slot(f, "returns")?,
        ),
        FactKind::ScalarGuard => format!(
            "{} stores nothing when {} is zero: every store in it is behind {} ({at}).",
            code(subject(f)?),
            value("scalar")?,
            value("statement")?,
        ),
        FactKind::WorkspaceQuery if slot(f, "returns") == Some("rocblas_status_continue") => {
            format!(
                "{func} returns {} for a device-memory size query, so that the checks after it in {func} do not run then ({at}){when}.",
                value("returns")?,
            )
        }
        FactKind::WorkspaceQuery => format!(
            "{func} answers a device-memory size query by returning {} ({at}){}{when}.",
            value("returns")?,
            through_macro(f),
        ),
        FactKind::ArgCheck | FactKind::QuickReturn => format!(
            "{func} returns {}{} if {} ({at}){when}.",
            value("status")?,
            value("in_size_query")
                .map(|q| format!(" ({q} in a device-memory size query)"))
                .unwrap_or_default(),
            value("condition")?,
        ),
        FactKind::PointerMode => format!("{func} tests {} ({at}){when}.", value("condition")?),
        FactKind::CrossLibrary => format!(
            "{func} calls {} of {}, defined at {}:{} ({at}){when}.",
            code(subject(f)?),
            slot(f, "callee_lib")?,
            slot(f, "callee_file")?,
            slot(f, "callee_lines")?,
        ),
        FactKind::RuntimeCall if f.subject == "device_malloc" && slot(f, "zero_bytes").is_some() => {
            format!(
                "{func} calls {} ({at}), a request for zero bytes that allocates nothing{when}.",
                code(&format!("{}(0)", subject(f)?)),
            )
        }
        FactKind::RuntimeCall if f.subject == "device_malloc" => format!(
            "{func} calls {} ({at}), a rocBLAS handle method rather than a HIP call, taking its workspace from the device memory the handle manages{when}.",
            code(subject(f)?),
        ),
        FactKind::RuntimeCall => format!(
            "{func} calls {}{}{} ({at}){when}.",
            code(subject(f)?),
            value("direction")
                .map(|d| format!(" with {d}"))
                .unwrap_or_default(),
            slot(f, "count")
                .map(|n| format!(" {n} times"))
                .unwrap_or_default(),
        ),
        FactKind::Store => format!(
            "{func} stores {} in {} ({at}){when}.",
            value("value")?,
            value("target")?,
        ),
        FactKind::StaticState if f.values.contains_key("local") => {
            let declared = slot(f, "declared")?;
            let why = if declared.split(' ').any(|w| w == "thread_local") {
                "a block-scope thread_local is initialized by each thread's first call that reaches it, so the initializer runs once per thread".to_string()
            } else {
                let copies = if f.values.contains_key("template") {
                    format!(" of each instantiation of {func} (each set of template arguments has its own copy)")
                } else {
                    " per process".to_string()
                };
                format!("a block-scope static is initialized only by the first call that reaches it, and concurrent callers wait until that initialization completes, so the initializer runs once{copies}")
            };
            format!(
                "{func} initializes the function-local {} with {} ({at}){when}: {why}.",
                code(declared),
                value("value")?,
            )
        }
        FactKind::StaticState => {
            let declared = slot(f, "declared")?;
            let file = f.file.rsplit('/').next().unwrap_or(&f.file);
            let lifetime = if declared.split(' ').any(|w| w == "thread_local") {
                "each thread has its own copy, so the value is seen by later code on the calling thread only"
            } else {
                "one copy for the whole process, shared by every thread and every handle"
            };
            let uses = slot(f, "uses")
                .map(|u| format!(" The file names it again at {file}:{}.", u.replace(", ", &format!(", {file}:"))))
                .unwrap_or_default();
            format!(
                "{func} stores {} in {} ({at}){when}, declared at namespace scope as {} ({file}:{}): {lifetime}.{uses}",
                value("value")?,
                value("target")?,
                code(declared),
                slot(f, "decl_lines")?,
            )
        }
        FactKind::Declaration => {
            let params: Vec<String> = slot(f, "params")
                .map(|p| p.split(" | ").map(param).collect())
                .unwrap_or_default();
            let takes = match params.len() {
                0 => "takes no parameters".to_string(),
                1 => format!("takes one parameter, {}", params[0]),
                n => format!("takes {n} parameters, in order: {}", listed_all(&params)),
            };
            format!(
                "{} is declared at {at}: it returns {} and {takes}.",
                code(subject(f)?),
                value("returns")?
            )
        }
        FactKind::Return => format!("{func} returns {} ({at}).", value("returns")?),
        FactKind::Definition => match value("handler") {
            Some(h) => format!(
                "{func} is defined at {at} as a function-try-block: an exception thrown in its body is caught by `catch(...)`, which returns {h}, so none leaves the C interface."
            ),
            None => format!("{func} is defined at {at}, with no exception handler of its own."),
        },
    })
}

/// A declared parameter (`const float* alpha`) as its name and type in code spans;
/// an unnamed one by its type.
fn param(p: &str) -> String {
    let p = p.trim();
    let arrays = p.find('[').map_or("", |i| &p[i..]);
    let head = p[..p.len() - arrays.len()].trim_end();
    let name_from = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let (ty, name) = head.split_at(name_from);
    let ty = ty.trim();
    let keyword = matches!(name, "const" | "int" | "float" | "double" | "char" | "void");
    if ty.is_empty() || name.is_empty() || keyword || ty.ends_with("::") {
        return code(p);
    }
    format!("{} ({})", code(name), code(&format!("{ty}{arrays}")))
}

/// Every item, joined as prose (`a, b and c`).
fn listed_all(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A launch argument as the facts hold it (`expr`, `name = dim3(args)`, either with
/// ` with p = v, q = w` for the template and constant values it uses) as prose: the
/// code as written in spans, the values read off the code plain.
fn launch_arg(v: &str) -> String {
    let (shown, with) = match v.split_once(" with ") {
        Some((a, b)) => (a, Some(b)),
        None => (v, None),
    };
    let mut out = match shown.split_once(" = dim3(") {
        Some((name, args)) if !name.contains(' ') && args.ends_with(')') => {
            format!("{} = dim3({})", code(name), code(&args[..args.len() - 1]))
        }
        _ => code(shown),
    };
    if let Some(with) = with {
        let bound: Vec<String> = with
            .split(", ")
            .map(|b| match b.split_once(" = ") {
                Some((n, x)) => format!("{} = {x}", code(n)),
                None => b.to_string(),
            })
            .collect();
        out.push_str(&format!(" with {}", bound.join(", ")));
    }
    out
}

/// What a launch passes, after its site: `grid G, block B, dynamic LDS L[, only when C].`
fn launch_config(f: &Fact) -> Option<String> {
    let lds = slot(f, "lds")?;
    let lds = if lds.ends_with(" bytes") && lds[..lds.len() - 6].parse::<i64>().is_ok() {
        lds.to_string()
    } else {
        code(lds)
    };
    // One local per name: `blocks` set once serves both axes of `dim3(blocks, blocks)`.
    let mut locals: Vec<String> = Vec::new();
    for l in slot(f, "grid_locals")
        .into_iter()
        .flat_map(|l| l.split("; "))
    {
        let l = code(l);
        if !locals.contains(&l) {
            locals.push(l);
        }
    }
    let locals = if locals.is_empty() {
        String::new()
    } else {
        format!(" where {}", listed_all(&locals))
    };
    Some(format!(
        "grid {}{locals}, block {}, dynamic LDS {lds}{}.",
        launch_arg(slot(f, "grid")?),
        launch_arg(slot(f, "block")?),
        when(f),
    ))
}

/// How a launch counts its grid: `the block count rounds up in x (`blocks = (n - 1) /
/// (NB * 2) + 1`), so each thread covers 2 elements.`
fn grid_count(f: &Fact) -> Option<String> {
    let rounding = slot(f, "grid_rounding")?;
    // The configuration already spells the count out (`blocks = (k - 1) / 32 + 1`):
    // "rounds up" alone says it again.
    if slot(f, "grid_locals").is_some() && slot(f, "elements_per_thread").is_none() {
        return None;
    }
    let mut by_way: Vec<(&str, Vec<&str>)> = Vec::new();
    for (axis, way) in rounding.split(", ").filter_map(|d| d.split_once(": ")) {
        match by_way.iter_mut().find(|(w, _)| *w == way) {
            Some((_, axes)) => axes.push(axis),
            None => by_way.push((way, vec![axis])),
        }
    }
    // A plain `n / D` is an integer division, which rounds down only where `n` is not
    // a multiple of D: syevj's `even_blocks / 2` divides a count made even first
    // (roclapack_syevj_heevj.hpp:2329-2331).
    let ways: Vec<String> = by_way
        .iter()
        .map(|(way, axes)| match *way {
            "down" => format!(
                "is an integer division in {} (rounding down where the count does not divide evenly)",
                axes.join(" and ")
            ),
            _ => format!("rounds {way} in {}", axes.join(" and ")),
        })
        .collect();
    let mut out = format!("the block count {}", ways.join(" and "));
    // Said with the launch's grid already, where the configuration names its locals.
    if let Some(x) = slot(f, "grid_x").filter(|_| slot(f, "grid_locals").is_none()) {
        out.push_str(&format!(" ({})", code(x)));
    }
    let of = slot(f, "elements_of").map(code).unwrap_or_default();
    match slot(f, "elements_per_thread") {
        Some("1") => out.push_str(&format!(", so each thread covers one element (of {of}).")),
        Some(e) => out.push_str(&format!(", so each thread covers {e} elements (of {of}).")),
        None => out.push('.'),
    }
    Some(out)
}

/// One sentence per distinct launch configuration, naming every site that passes it:
/// twelve `rocblasCall_gemm` sites launching with the same grid, block and LDS are one
/// line, not twelve that say the same.
fn launch_config_sentences<'a>(
    facts: &[&'a Fact],
    say: fn(&Fact) -> Option<String>,
) -> Vec<(String, Vec<&'a Fact>)> {
    let mut groups: Vec<(String, Vec<&'a Fact>)> = Vec::new();
    for f in facts {
        let Some(config) = say(f) else {
            tracing::debug!(at = %at(f), "A launch with an empty value is left out of its answer.");
            continue;
        };
        match groups.iter_mut().find(|(c, _)| *c == config) {
            Some((_, g)) => g.push(*f),
            None => groups.push((config, vec![*f])),
        }
    }
    groups
        .into_iter()
        .map(|(config, sites)| {
            let mut by_function: Vec<(&str, Vec<&Fact>)> = Vec::new();
            for f in &sites {
                match by_function.iter_mut().find(|(n, _)| *n == f.function) {
                    Some((_, fs)) => fs.push(f),
                    None => by_function.push((&f.function, vec![f])),
                }
            }
            let named: Vec<String> = by_function
                .iter()
                .map(|(n, fs)| format!("{} ({})", code(n), ats_by_file(fs)))
                .collect();
            let refs: Vec<&str> = named.iter().map(String::as_str).collect();
            (format!("{}: {config}", listed(&refs)), sites)
        })
        .collect()
}

/// One sentence per distinct grid, block and LDS a function passes, naming every
/// site that passes it and the tests all of those sites share; the tests that pick
/// among them (the pointer mode, `i64_indices`) are named, not spelled out per site:
/// the question asks what a launch passes, and four copies of one configuration under
/// four pointer-mode and index-width arms read as four answers.
fn config_sentences<'a>(facts: &[&'a Fact]) -> Vec<(String, Vec<&'a Fact>)> {
    let mut groups: Vec<((String, String), Vec<&'a Fact>)> = Vec::new();
    for f in facts {
        let bare = Fact {
            conditions: Vec::new(),
            ..(*f).clone()
        };
        let Some(config) = launch_config(&bare) else {
            tracing::debug!(at = %at(f), "A launch with an empty value is left out of its answer.");
            continue;
        };
        let key = (f.function.clone(), config);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(*f),
            None => groups.push((key, vec![*f])),
        }
    }
    groups
        .into_iter()
        .filter_map(|((function, _), sites)| {
            let shared = if sites.len() > 1 {
                shared_conditions(&sites)
            } else {
                sites[0].conditions.clone()
            };
            let config = launch_config(&Fact {
                conditions: shared.clone(),
                ..sites[0].clone()
            })?;
            let mut picked_by: Vec<String> = Vec::new();
            for f in &sites {
                for c in f.conditions.iter().filter(|c| !shared.contains(c)) {
                    for n in tested_names(c) {
                        if !picked_by.contains(&n) {
                            picked_by.push(n);
                        }
                    }
                }
            }
            let mut line = format!("{} ({}): {config}", code(&function), ats_by_file(&sites));
            if sites.len() > 1 && !picked_by.is_empty() {
                // A long list of names reads as noise: a few, then how many more.
                const NAMED: usize = 3;
                let mut names: Vec<String> =
                    picked_by.iter().take(NAMED).map(|n| code(n)).collect();
                if picked_by.len() > NAMED {
                    names.push(format!("{} more", picked_by.len() - NAMED));
                }
                line = format!(
                    "{} (its {} sites differ in their tests of {}).",
                    line.trim_end_matches('.'),
                    sites.len(),
                    listed_all(&names)
                );
            }
            Some((line, sites))
        })
        .collect()
}

/// Where facts sit, one file named once: `a.cpp:710-712, 714-719; b.hpp:40`.
fn ats_by_file(facts: &[&Fact]) -> String {
    let mut files: Vec<(&str, Vec<String>)> = Vec::new();
    for f in facts {
        let lines = at(f)[f.file.len() + 1..].to_string();
        match files.iter_mut().find(|(file, _)| *file == f.file) {
            Some((_, ls)) => ls.push(lines),
            None => files.push((&f.file, vec![lines])),
        }
    }
    files
        .iter()
        .map(|(file, ls)| format!("{file}:{}", ls.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The names a condition tests (`handle->pointer_mode`, `i64_indices`), without
/// enumerators, literals and keywords.
fn tested_names(cond: &str) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"[A-Za-z_]\w*(?:->\w+)?(\s*\()?").expect("static regex")
    });
    let cond = cond.strip_prefix("loop: ").unwrap_or(cond);
    // A `for` loop tests its middle clause; its declaration names a type
    // (`for (rocblas_int j = 0; j < n; j++)` tests `j` and `n`, not `rocblas_int`).
    let cond = match cond
        .strip_prefix("for")
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('('))
        .map(|r| r.split(';').collect::<Vec<_>>())
    {
        Some(clauses) if clauses.len() == 3 => clauses[1],
        _ => cond,
    };
    let mut out: Vec<String> = Vec::new();
    for m in re.captures_iter(cond) {
        let name = m[0].trim_end_matches(|c: char| c == '(' || c.is_whitespace());
        let call = m.get(1).is_some();
        let keyword = matches!(
            name,
            "not"
                | "constexpr"
                | "true"
                | "false"
                | "nullptr"
                | "for"
                | "while"
                | "if"
                | "int"
                | "int64_t"
                | "size_t"
        );
        if keyword {
            continue;
        }
        if call && name != "sizeof" {
            // A call is named whole: `rocblas_gemvt_skinny_n`.
            if !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
            continue;
        }
        if super::eval::is_enumerator(name) || out.iter().any(|o| o == name) {
            continue;
        }
        out.push(name.to_string());
    }
    out
}

/// Which pointer mode a test asks for, as the code writes it: `Some(true)` for device
/// (`handle->pointer_mode == rocblas_pointer_mode_device`, `pmode != rocblas_pointer_mode_host`),
/// `Some(false)` for host; `None` for any other test.
fn mode_side(test: &str) -> Option<bool> {
    let (test, negated) = match test.strip_prefix("not ").and_then(whole_parens) {
        Some(inner) => (inner.trim(), true),
        None => (test.trim(), false),
    };
    let (lhs, eq, rhs) = if let Some((l, r)) = test.split_once(" == ") {
        (l, true, r)
    } else {
        let (l, r) = test.split_once(" != ")?;
        (l, false, r)
    };
    let (mode, other) = match (lhs.trim(), rhs.trim()) {
        (a, b) if a.starts_with("rocblas_pointer_mode_") => (a, b),
        (a, b) if b.starts_with("rocblas_pointer_mode_") => (b, a),
        _ => return None,
    };
    if !other.contains("mode") || other.contains(' ') {
        return None;
    }
    let device = match mode {
        "rocblas_pointer_mode_device" => true,
        "rocblas_pointer_mode_host" => false,
        _ => return None,
    };
    Some(device == (eq != negated))
}

/// Pointer-mode facts laid out by the mode each runs under: "In device pointer mode
/// (tested at ...):" with what happens then, the same for host mode, and the facts under
/// neither after them ([`condition_tree`]). The tests themselves are named in the
/// headings, not stated as items: "tests `mode == device`" says nothing a heading
/// does not. What differs between the modes is then read side by side.
fn by_pointer_mode<'a>(facts: &[&'a Fact], say: &Sentences<'_>) -> Vec<(String, Vec<&'a Fact>)> {
    let side_of = |f: &Fact| -> Option<bool> {
        let sides: BTreeSet<bool> = f.conditions.iter().filter_map(|c| mode_side(c)).collect();
        match sides.len() {
            1 => sides.into_iter().next(),
            _ => None,
        }
    };
    let test_side = |f: &Fact| {
        (f.kind == FactKind::PointerMode)
            .then(|| slot(f, "condition").and_then(mode_side))
            .flatten()
    };
    let sided: Vec<(&'a Fact, bool)> = facts
        .iter()
        .filter(|f| f.kind != FactKind::PointerMode)
        .filter_map(|f| side_of(f).map(|s| (*f, s)))
        .collect();
    if sided.is_empty() {
        return condition_tree(facts, say);
    }
    // The tests themselves: named in the first heading and cited with its item.
    let tests: Vec<&'a Fact> = facts
        .iter()
        .copied()
        .filter(|f| test_side(f).is_some())
        .collect();
    let mut out: Vec<(String, Vec<&'a Fact>)> = Vec::new();
    for device in [true, false] {
        let group: Vec<&'a Fact> = sided
            .iter()
            .filter(|(_, s)| *s == device)
            .map(|(f, _)| *f)
            .collect();
        let mode = if device { "device" } else { "host" };
        if group.is_empty() {
            continue;
        }
        let drop: Vec<String> = group
            .iter()
            .flat_map(|f| f.conditions.iter())
            .filter(|c| mode_side(c).is_some())
            .cloned()
            .collect();
        let trimmed = without_conditions(&group, &drop);
        let refs: Vec<&Fact> = trimmed.iter().collect();
        let items: Vec<(String, Vec<&'a Fact>)> = say(&refs)
            .into_iter()
            .map(|(l, fs)| {
                (
                    l,
                    fs.into_iter()
                        .map(|r| source_of(&trimmed, &group, r))
                        .collect(),
                )
            })
            .collect();
        let first = out.is_empty();
        let heading = match tests.is_empty() || !first {
            true => format!("In {mode} pointer mode:"),
            false => format!(
                "In {mode} pointer mode (tested at {}):",
                ats_by_file(&tests)
            ),
        };
        let lines: usize = items.iter().map(|(l, _)| l.lines().count()).sum();
        if lines > MAX_ITEMS / 2
            || items.iter().map(|(l, _)| l.len()).sum::<usize>() > MAX_BODY_CHARS / 3
        {
            // Too long for one item: each sentence says its mode.
            out.extend(
                items
                    .into_iter()
                    .map(|(l, fs)| (format!("In {mode} pointer mode, {}", lower_first(&l)), fs)),
            );
            if let (true, Some((_, cited))) = (first, out.first_mut()) {
                cited.extend(tests.iter().copied());
            }
            continue;
        }
        let mut body = vec![heading];
        let mut cited: Vec<&'a Fact> = Vec::new();
        for (l, fs) in items {
            for (k, line) in l.lines().enumerate() {
                let mark = if k == 0 { "- " } else { "" };
                body.push(format!("  {mark}{line}"));
            }
            cited.extend(fs);
        }
        if first {
            cited.extend(tests.iter().copied());
        }
        out.push((body.join("\n"), cited));
    }
    let rest: Vec<&'a Fact> = facts
        .iter()
        .copied()
        .filter(|f| test_side(f).is_none() && !sided.iter().any(|(s, _)| std::ptr::eq(*s, *f)))
        .collect();
    out.extend(condition_tree(&rest, say));
    out
}

/// A sentence's first letter upper-cased (code in backticks is left as it is).
fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// A sentence continued after a lead-in: its first letter lower-cased, unless it opens
/// with code.
fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) if f.is_ascii_uppercase() => f.to_ascii_lowercase().to_string() + c.as_str(),
        Some(f) => f.to_string() + c.as_str(),
        None => String::new(),
    }
}

/// The scalars the launches of one kernel from one function pass as a pointer under
/// one pointer mode and as a value under the other (`alpha` and `*alpha`), by
/// `(function, kernel)`.
fn mode_dependent_scalars<'f>(pm: &[&'f Fact]) -> BTreeMap<(&'f str, &'f str), BTreeSet<String>> {
    let mut ways: BTreeMap<(&str, &str, String), BTreeSet<bool>> = BTreeMap::new();
    for f in pm.iter().filter(|f| f.kind == FactKind::Launch) {
        for arg in slot(f, "args").unwrap_or("").split(" | ") {
            // The name an argument passes: `*alpha`, `(const T*)alpha`, `load_scalar(alpha)`.
            let Some(name) = last_name(arg) else {
                continue;
            };
            if let Some(w) = super::scalar_passing(arg, name) {
                ways.entry((&f.function, &f.subject, name.to_string()))
                    .or_default()
                    .insert(w);
            }
        }
    }
    let mut out: BTreeMap<(&str, &str), BTreeSet<String>> = BTreeMap::new();
    for ((func, kernel, name), w) in ways {
        if w.len() == 2 {
            out.entry((func, kernel)).or_default().insert(name);
        }
    }
    out
}

/// The last name an expression holds.
fn last_name(expr: &str) -> Option<&str> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(r"[A-Za-z_]\w*").expect("static regex"));
    re.find_iter(expr).last().map(|m| m.as_str())
}

/// Where the library sets the pointer mode itself on the ways the API reaches the tests
/// of it (rocSOLVER's sytrd sets device mode around its rocBLAS calls): one line per
/// set of sources, naming the functions whose tests it is about, and whether the mode
/// the API's caller set is one of them.
fn modes_set_lines<'a>(facts: &[&'a Fact]) -> Vec<(String, Vec<&'a Fact>)> {
    let mut groups: BTreeMap<&str, Vec<&'a Fact>> = BTreeMap::new();
    for f in facts {
        if let Some(v) = slot(f, super::MODE_SET) {
            groups.entry(v).or_default().push(*f);
        }
    }
    groups
        .into_iter()
        .filter_map(|(v, fs)| {
            let mut sets = Vec::new();
            let mut callers = false;
            for source in v.split(';') {
                match source.split('|').collect::<Vec<_>>()[..] {
                    [mode, _, function, file, _, lines] => sets.push(format!(
                        "{} sets {} ({file}:{})",
                        code(function),
                        code(mode),
                        lines.rsplit('-').next().unwrap_or(lines)
                    )),
                    _ => callers |= source == "caller",
                }
            }
            if sets.is_empty() {
                return None;
            }
            let mut tested: Vec<String> = Vec::new();
            for f in &fs {
                let name = code(&f.function);
                if !tested.contains(&name) {
                    tested.push(name);
                }
            }
            let line = if callers {
                format!(
                    "On some of the ways the API reaches {}, the library sets the pointer mode itself first: {}; on the others the mode is the one the API's caller set on the handle.",
                    listed_all(&tested),
                    listed_all(&sets)
                )
            } else {
                format!(
                    "On every way the API reaches {}, the library sets the pointer mode itself first: {}; the mode the API's caller set on the handle does not decide these tests.",
                    listed_all(&tested),
                    listed_all(&sets)
                )
            };
            Some((
                line,
                fs,
            ))
        })
        .collect()
}

/// What a launch passes for the scalars its pointer mode decides: `passing `*alpha`,
/// the value read on the host` or `passing the pointer `alpha`, which the kernel reads`.
fn passing_clause(f: &Fact, passing: &BTreeMap<(&str, &str), BTreeSet<String>>) -> Option<String> {
    let names = passing.get(&(f.function.as_str(), f.subject.as_str()))?;
    let (mut pointers, mut values) = (Vec::new(), Vec::new());
    for arg in slot(f, "args")?.split(" | ") {
        // `* alpha` as the code writes it.
        let arg = match arg.strip_prefix("* ") {
            Some(rest) => format!("*{rest}"),
            None => arg.to_string(),
        };
        match names.iter().find_map(|n| super::scalar_passing(&arg, n)) {
            Some(true) => pointers.push(code(&arg)),
            Some(false) => values.push(code(&arg)),
            None => {}
        }
    }
    let mut parts = Vec::new();
    match pointers.len() {
        0 => {}
        1 => parts.push(format!(
            "the pointer {}, which the kernel reads",
            pointers[0]
        )),
        _ => parts.push(format!(
            "the pointers {}, which the kernel reads",
            listed_all(&pointers)
        )),
    }
    match values.len() {
        0 => {}
        1 => parts.push(format!("{}, the value read on the host", values[0])),
        _ => parts.push(format!(
            "{}, the values read on the host",
            listed_all(&values)
        )),
    }
    (!parts.is_empty()).then(|| format!("passing {}", parts.join("; and ")))
}

/// The API's own returns before any launch (argument checks, quick returns, size
/// queries) in the order the code runs them, so that each is read with those before it
/// (a null `x` is an error only once `n <= 0` has returned success). Numerics checking's
/// returns are left out: they run only when the handle asks for them.
/// Whether a return's own lines (its test through its `return`) reach a launch first:
/// `if(0 == *alpha) { set_block_unit(...); return rocblas_status_success; }` zeroes B
/// with a kernel before it returns. A fact's `order` is the line of each call down its
/// path, so a launch reached from those lines shares the return's path up to them.
fn launches_in_its_block(af: &ApiFacts, r: &Fact) -> bool {
    let Some((&line, path)) = r.order.split_last() else {
        return false;
    };
    let end = r.end_line.max(line);
    let runs: Vec<&str> = slot(r, super::BLOCK_RUNS)
        .map(|s| s.split(',').collect())
        .unwrap_or_default();
    af.facts.iter().any(|f| {
        f.kind == FactKind::Launch
            && f.order.len() > path.len()
            && f.order.starts_with(path)
            && ((line..=end).contains(&f.order[path.len()]) || runs.contains(&f.function.as_str()))
    })
}

/// Where the list of returns before any launch ends: the first launch the API makes,
/// and the first return of its own code past it (syevd's `batch_count == 0` comes
/// after `init_scalars` has launched `iota_n`), so a reader does not take that return
/// for one left out.
fn first_launch_line(af: &ApiFacts) -> Option<(String, Vec<&Fact>)> {
    let launch = first_sure_launch(af)?;
    let kernel = code(slot(launch, "kernel").unwrap_or(&launch.subject));
    // A launch under a test may run before it (latrd's init_scalars launches `iota_n`
    // where it has scalars to set, before the first launch that always runs).
    let earlier = af
        .facts
        .iter()
        .filter(|f| f.kind == FactKind::Launch && !f.order.is_empty() && f.order < launch.order)
        .min_by(|a, b| a.order.cmp(&b.order));
    let mut line = match earlier {
        None => format!(
            "The first kernel launch ends the list: {} launches {kernel} ({})",
            code(&launch.function),
            at(launch)
        ),
        Some(e) => format!(
            "The list ends at the first launch made whatever the arguments, {} launching {kernel} ({}); launches under a test can come before it, the first of them {} launching {} ({})",
            code(&launch.function),
            at(launch),
            code(&e.function),
            code(slot(e, "kernel").unwrap_or(&e.subject)),
            at(e)
        ),
    };
    // A return of a function no deeper than the launching one, past the launch.
    let next = kinds(af, &[FactKind::ArgCheck, FactKind::QuickReturn])
        .into_iter()
        .filter(|f| {
            f.order > launch.order
                && f.order.len() <= launch.order.len()
                && f.conditions.is_empty()
                && !f.values.contains_key(super::CALLER_DROPS)
                && !numerics_checking(f)
        })
        .min_by(|a, b| a.order.cmp(&b.order));
    // The earlier launch is cited too, so its code is shown.
    let mut facts: Vec<&Fact> = std::iter::once(launch).chain(earlier).collect();
    match next.and_then(|f| Some((f, slot(f, "condition")?, slot(f, "status")?))) {
        Some((f, cond, status)) => {
            line.push_str(&format!(
                "; only after it does {} return {} if {} ({}).",
                code(&f.function),
                code(status),
                code(cond),
                at(f)
            ));
            facts.push(f);
        }
        None => line.push('.'),
    }
    Some((line, facts))
}

/// The first launch the API makes whatever its arguments: one under a test may be
/// skipped (init_scalars' `size_scalars > 0` is false for a batch count of 0, so
/// sygvdj's `batch_count == 0` return comes before any kernel runs).
fn first_sure_launch(af: &ApiFacts) -> Option<&Fact> {
    af.facts
        .iter()
        .filter(|f| {
            f.kind == FactKind::Launch
                && !f.order.is_empty()
                && f.conditions.is_empty()
                && !f.values.contains_key(super::ON_A_TESTED_PATH)
        })
        .min_by(|a, b| a.order.cmp(&b.order))
}

/// Whether a launch the same function makes before `ret` may have run on a way that
/// reaches it: one earlier in the order whose tests the return's own do not
/// contradict. sgemv's host-mode `if(!*alpha) return` (rocblas_gemv_kernels.cpp:340)
/// comes after `if(*beta != 1)` launched `rocblas_gemv_scal_kernel` (:300), and the
/// argument check already returned where `*beta == 1`: it is no return before any
/// kernel runs. A launch in another function is left to the first-launch line: its
/// test may be false exactly where the return fires (sytd2's `init_scalars` runs where
/// `size_scalars > 0`, which `n == 0` makes 0, so `n == 0` returns before any launch).
fn after_a_launch_it_may_follow(af: &ApiFacts, ret: &Fact) -> bool {
    if ret.order.is_empty() {
        return false;
    }
    let mut held: Vec<&str> = ret
        .conditions
        .iter()
        .map(String::as_str)
        .filter(|c| !super::eval::is_branch_header(c))
        .collect();
    held.extend(slot(ret, "condition"));
    af.facts.iter().any(|l| {
        l.kind == FactKind::Launch
            && l.function == ret.function
            && l.file == ret.file
            && !l.order.is_empty()
            && l.order < ret.order
            && l.conditions.iter().all(|c| {
                super::eval::is_branch_header(c) || super::eval::decided_by(&held, c) != Some(false)
            })
    })
}

fn early_returns(af: &ApiFacts) -> Vec<&Fact> {
    // A return the code reaches after a launch that always runs is not one before any
    // launch.
    let first_launch = first_sure_launch(af).map(|f| &f.order);
    let mut out: Vec<&Fact> = kinds(
        af,
        &[
            FactKind::ArgCheck,
            FactKind::QuickReturn,
            FactKind::WorkspaceQuery,
        ],
    )
    .into_iter()
    .filter(|f| {
        !numerics_checking(f)
            && !f.values.contains_key(super::CALLER_DROPS)
            // `continue` is a check's "go on", not a return of the API (a size query's
            // is stated as the checks it skips).
            && slot(f, "status") != Some("rocblas_status_continue")
            // Inside a loop the API has run code before: not a return before it.
            && !f.conditions.iter().any(|c| c.starts_with("loop:"))
            && (f.order.is_empty() || first_launch.is_none_or(|l| f.order < *l))
            && !launches_in_its_block(af, f)
            && !after_a_launch_it_may_follow(af, f)
    })
    .collect();
    out.sort_by(|a, b| (a.order.is_empty(), &a.order).cmp(&(b.order.is_empty(), &b.order)));
    // A test that an earlier one, reached whatever the arguments, always makes first can
    // never fire (the launcher's `!n || !batch_count` after the argument check's
    // `n <= 0 || ...` returned).
    // Tests in two functions are compared in the names their outermost caller gives
    // their words (the `_64` launcher's `!n_64` is the argument check's `!n`).
    fn outer(f: &Fact) -> Option<&str> {
        slot(f, super::OUTER_CONDITION).or_else(|| slot(f, "condition"))
    }
    let mut kept: Vec<&Fact> = Vec::new();
    for f in out {
        let shadowed = outer(f).is_some_and(|c| {
            kept.iter().any(|e| {
                e.conditions.is_empty() && outer(e).is_some_and(|earlier| implies_all(c, earlier))
            })
        });
        if !shadowed {
            kept.push(f);
        }
    }
    kept
}

/// Whether every way `later` (a `||` of tests) can hold, `earlier` holds too: each of
/// its tests is one of `earlier`'s, a `!v` or `v == 0` implied by `v <= 0` or `v == 0`.
fn implies_all(later: &str, earlier: &str) -> bool {
    let tests = |c: &str| -> Option<Vec<String>> {
        let c = c.trim();
        let c = whole_parens(c).unwrap_or(c);
        // Only a plain `||` of tests: anything nested is not compared.
        if c.contains("&&") || c.contains('?') {
            return None;
        }
        Some(
            c.split("||")
                .map(|t| {
                    let t: String = t.chars().filter(|ch| !ch.is_whitespace()).collect();
                    match t.strip_prefix('!') {
                        Some(v) if v.chars().all(|ch| ch.is_alphanumeric() || ch == '_') => {
                            format!("{v}==0")
                        }
                        _ => t,
                    }
                })
                .collect(),
        )
    };
    let (Some(later), Some(earlier)) = (tests(later), tests(earlier)) else {
        return false;
    };
    later.iter().all(|t| {
        earlier.contains(t)
            || t.strip_suffix("==0")
                .is_some_and(|v| earlier.contains(&format!("{v}<=0")))
    })
}

/// Code that runs only when the handle asks for numerics checking.
fn numerics_checking(f: &Fact) -> bool {
    f.values.contains_key(super::NUMERICS_CHECK)
        || f.conditions.iter().any(|c| {
            c.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .any(|w| w == "check_numerics")
        })
}

fn units(af: &ApiFacts) -> Vec<Unit<'_>> {
    let mut out = Vec::new();
    // What the API runs of the paired library (rocSOLVER's calls into rocBLAS) is
    // that library's code, which its own entries detail: here it is one sentence per
    // launcher, and its kernels' configuration and device code are not asked again.
    let launches = in_run_order(kinds(af, &[FactKind::Launch]));
    let leaves = af
        .facts
        .iter()
        .any(|f| f.kind == FactKind::Launch && f.lib != af.lib);
    // Conditions are said once for all launches only where every item is one of them.
    let (lead, mut stated) = if !leaves {
        factored(&launches, "Every launch below is made", |fs| {
            condition_tree(fs, &launch_sentences)
        })
    } else {
        (
            (String::new(), Vec::new()),
            condition_tree(&launches, &launch_sentences),
        )
    };
    // The rest are the paired library's, chosen by its own code: said, not listed
    // (the functions it calls there are the cross-library answer's; some of them,
    // size queries, launch nothing).
    if let (true, Some((last, _))) = (leaves, stated.last_mut()) {
        let lib = af
            .facts
            .iter()
            .find(|f| f.kind == FactKind::Launch && f.lib != af.lib)
            .map_or("", |f| f.lib.as_str());
        last.push_str(&format!(
            " Beside these, the API's calls into {lib} launch {lib}'s kernels, which {lib}'s own code chooses; they are not listed here."
        ));
    }
    out.extend(led_unit(&KERNELS, "", lead, stated));
    let kernels: BTreeSet<&str> = launches.iter().map(|f| f.subject.as_str()).collect();
    for k in kernels {
        let facts: Vec<&Fact> = launches
            .iter()
            .filter(|f| f.subject == k)
            .copied()
            .collect();
        let bounds = af
            .facts
            .iter()
            .find(|f| f.kind == FactKind::LaunchBounds && f.subject == k);
        let mut stated: Vec<(String, Vec<&Fact>)> = Vec::new();
        if let Some(b) = bounds {
            // First, so a long list of sites never crowds it out.
            stated.extend(statement(b).map(|l| (l, vec![b])));
        }
        // The LDS a block holds is the launch's dynamic bytes and what the kernel
        // declares itself: both, where a question asks for the LDS.
        // An `extern __shared__ T x[]` is the dynamic LDS itself, not besides it.
        for s in af.facts.iter().filter(|f| {
            f.kind == FactKind::SharedMemory
                && f.function == k
                && f.subject != "dynamic"
                && slot(f, "size").is_none_or(|z| z.trim() != "[]")
        }) {
            if let Some(l) = statement(s) {
                stated.push((
                    format!(
                        "Besides the dynamic LDS of its launch, {} declares {l}",
                        code(k)
                    ),
                    vec![s],
                ));
            }
        }
        let (lead, configs) = factored(&facts, "Every launch below is made", config_sentences);
        stated.extend(configs);
        // How the grid is counted, once per distinct way.
        stated.extend(launch_config_sentences(&facts, grid_count));
        out.extend(led_unit(&LAUNCH_CONFIG, k, lead, stated));
    }
    let device = kinds(
        af,
        &[
            FactKind::SharedMemory,
            FactKind::Barrier,
            FactKind::Atomic,
            FactKind::Wavefront,
            FactKind::MemoryPath,
        ],
    );
    let device: Vec<&Fact> = device.into_iter().filter(|f| f.lib == af.lib).collect();
    let functions: BTreeSet<&str> = device.iter().map(|f| f.function.as_str()).collect();
    for func in functions {
        let facts: Vec<&Fact> = device
            .iter()
            .filter(|f| f.function == func)
            .take(MAX_ITEMS)
            .copied()
            .collect();
        // Several overloads of the name left standing: which one the kernel calls
        // is decided by the element type it is instantiated with (hdot reduces in
        // `rocblas_half`, so only rocblas_reduction.hpp:101-118 runs, not the
        // generic :40-51), which is not read here; no answer rather than a list of
        // sites some of which never run.
        let overloads: BTreeSet<(&str, u32)> = facts
            .iter()
            .map(|f| (f.file.as_str(), f.function_lines.0))
            .collect();
        if overloads.len() > 1 {
            continue;
        }
        // `extern __shared__ T x[]` is the block's dynamic LDS: said once, with what
        // its launch gives it, not as an array "with size []" beside a second line
        // on dynamic shared memory.
        let extern_array = |f: &Fact| {
            f.kind == FactKind::SharedMemory && slot(f, "size").is_some_and(|z| z.trim() == "[]")
        };
        let has_extern = facts.iter().any(|f| extern_array(f));
        let facts: Vec<&Fact> = facts
            .into_iter()
            .filter(|f| !(has_extern && f.kind == FactKind::SharedMemory && f.subject == "dynamic"))
            .collect();
        let launch_lds: BTreeSet<&str> = af
            .facts
            .iter()
            .filter(|l| l.kind == FactKind::Launch && l.subject == func && l.lib == af.lib)
            .filter_map(|l| slot(l, "lds"))
            .collect();
        let sized_by = match launch_lds.into_iter().collect::<Vec<_>>()[..] {
            [one] => format!("sized by its launch's dynamic-LDS argument {}", code(one)),
            _ => "sized by the dynamic-LDS argument of its launch".to_string(),
        };
        let say = |f: &Fact| -> Option<String> {
            if !extern_array(f) {
                return statement(f);
            }
            Some(format!(
                "the block's dynamic LDS, `extern __shared__ {} {}[]` ({}){}, {sized_by}.",
                slot(f, "type")?,
                subject(f)?,
                at(f),
                when(f)
            ))
        };
        let tpl = if facts.iter().any(|f| f.kind == FactKind::Barrier) {
            &DEVICE
        } else {
            &DEVICE_MEMORY
        };
        out.extend(factored_unit(
            tpl,
            func,
            &facts,
            "Everything below is reached",
            say,
        ));
    }
    let returns = early_returns(af);
    if !returns.is_empty() {
        let (lead, mut stated) = factored(&returns, "Every test below is reached", |fs| {
            fs.iter()
                .filter_map(|f| statement(f).map(|l| (l, vec![*f])))
                .collect()
        });
        stated.extend(first_launch_line(af));
        out.extend(ordered_unit(&EARLY_RETURNS, lead, stated));
    }
    // Everything the pointer mode decides, each fact worded as its kind is.
    let pm: Vec<&Fact> = in_run_order(
        af.facts
            .iter()
            .filter(|f| {
                f.kind == FactKind::PointerMode
                    || f.conditions.iter().any(|c| c.contains("pointer_mode"))
            })
            .collect(),
    );
    // The paired library's tests are its own entries' to state; here only where this
    // library sets the mode itself before them.
    let (pm, paired_pm): (Vec<&Fact>, Vec<&Fact>) = pm.into_iter().partition(|f| f.lib == af.lib);
    let passing = mode_dependent_scalars(&pm);
    if !pm.is_empty() || !paired_pm.is_empty() {
        let say = sentences(|fs| {
            fs.iter()
                .filter_map(|f| {
                    let s = statement(f)?;
                    let s = match passing_clause(f, &passing) {
                        Some(c) => format!("{}, {c}.", s.trim_end_matches('.')),
                        None => s,
                    };
                    Some((s, vec![*f]))
                })
                .collect()
        });
        let (lead, mut stated) = factored(&pm, "Everything below is reached", |fs| {
            by_pointer_mode(fs, &say)
        });
        stated.extend(modes_set_lines(&pm));
        stated.extend(modes_set_lines(&paired_pm));
        out.extend(led_unit(&POINTER_MODE, "", lead, stated));
    }
    let cross = kinds(af, &[FactKind::CrossLibrary]);
    out.extend(stated_unit(
        &CROSS_LIBRARY,
        "",
        cross_library_sentences(&cross),
    ));
    out.extend(factored_unit(
        &RUNTIME_CALLS,
        "",
        &in_run_order(kinds(af, &[FactKind::RuntimeCall])),
        "Every call below is made",
        statement,
    ));
    // In the order the code runs them: handle.cpp's free (:611) before the resets
    // that follow it, though the resets' function sits earlier in the file.
    let stores = in_run_order(kinds(af, &[FactKind::Store]));
    out.extend(stated_unit(&STORES, "", store_sentences(&stores)));
    out.extend(unit(
        &STATIC_STATE,
        "",
        &kinds(af, &[FactKind::StaticState]),
        statement,
    ));
    for u in &mut out {
        if let Some(note) = own_names_note(&u.facts, &u.body) {
            u.body.push_str(&format!("\n{note}"));
        }
        if let Some(note) = constants_note(&u.body) {
            u.body.push_str(&format!("\n{note}"));
        }
    }
    out
}

/// A sentence giving the values of the library's named constants an answer's code
/// spans name (`n >= n_gemmt_threshold`): the name alone leaves a reader to guess the
/// size the test is about. Grid-chunk constants of the 64-bit forms are left out: a
/// loop bound, not a size a caller chooses.
fn constants_note(body: &str) -> Option<String> {
    let spans: String = body
        .split('`')
        .skip(1)
        .step_by(2)
        .collect::<Vec<_>>()
        .join(" ");
    let named: Vec<String> = super::eval::constants_in(&spans)
        .into_iter()
        .filter(|(n, _)| !n.starts_with("c_"))
        .map(|(n, v)| format!("{} is {v}", code(&n)))
        .collect();
    (!named.is_empty()).then(|| {
        format!(
            "Of the compile-time constants named above, {}.",
            listed_all(&named)
        )
    })
}

/// A sentence naming the parameters the answer's conditions and launch arguments test
/// in a callee that are named like the API's arguments but are not them (trti2's `n`
/// is getri's block width `jb`): without it, "`n > 43`" in getri and "`n <= 64`" in
/// trti2 read as one impossible size.
fn own_names_note(facts: &[&Fact], body: &str) -> Option<String> {
    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let pairs = facts.iter().flat_map(|f| {
        f.condition_sites
            .iter()
            .flat_map(|s| {
                s.own_names
                    .iter()
                    .map(move |n| (n.as_str(), s.function.as_str()))
            })
            .chain(
                slot(f, super::OWN_NAMES)
                    .into_iter()
                    .flat_map(|v| v.split(' '))
                    .map(move |n| (n, f.function.as_str())),
            )
    });
    let words: BTreeSet<&str> = body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    for (name, function) in pairs.filter(|(n, _)| words.contains(n)) {
        let fs = by_name.entry(name).or_default();
        if !fs.contains(&function) {
            fs.push(function);
        }
    }
    // One sentence per set of functions: `inca`, `incb` and `incc` of rocsolver_gemm
    // are said together. Whether a caller passes the API's own value down is not always
    // read, so the sentence says what holds either way: they are set by the callers.
    let mut by_functions: Vec<(Vec<&str>, Vec<&str>)> = Vec::new();
    for (name, fs) in by_name.into_iter().filter(|(_, fs)| !fs.is_empty()) {
        match by_functions.iter_mut().find(|(f, _)| *f == fs) {
            Some((_, names)) => names.push(name),
            None => by_functions.push((fs, vec![name])),
        }
    }
    let sentences: Vec<String> = by_functions
        .into_iter()
        .map(|(fs, names)| {
            let functions: Vec<String> = fs.iter().map(|f| code(f)).collect();
            let params: Vec<String> = names.iter().map(|n| code(n)).collect();
            let (is, them, those) = match names.len() {
                1 => ("is", "it", "argument of that name"),
                _ => ("are", "them", "arguments of those names"),
            };
            let whose = match (fs.len(), names.len()) {
                (1, 1) => "that function's own parameter",
                (1, _) => "that function's own parameters",
                (_, 1) => "each function's own parameter",
                _ => "each function's own parameters",
            };
            format!(
                "{} in {} {is} {whose}, set by the callers that pass {them}, which may differ from the API's {those}.",
                upper_first(&listed_all(&params)),
                listed_all(&functions)
            )
        })
        .collect();
    (!sentences.is_empty()).then(|| sentences.join(" "))
}

const VARIANT_FORMS: Template = Template {
    id: "facts-variant-forms",
    category: "api-to-kernel",
    questions: [
        "How do {others} differ from {subject}: which parameters change, and what runs differently?",
        "Compare {subject} with its other forms ({others}): what do they take or do that {subject} does not?",
        "Going by their prototypes and launch code, how do {others} differ from {subject}?",
    ],
    intros: [
        "Set against the reference form, prototype by prototype and launch by launch:",
        "What the declarations and the host code show:",
        "Form by form, compared with the one the others extend:",
    ],
};

/// A parameter as written (`float* const x[]`) split into its name and the rest
/// (`x`, `float* const []`); `None` for an unnamed one.
fn param_name(p: &str) -> Option<&str> {
    let p = p.trim();
    let head = p[..p.find('[').unwrap_or(p.len())].trim_end();
    let from = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &head[from..];
    let keyword = matches!(name, "const" | "int" | "float" | "double" | "char" | "void");
    (from > 0 && !name.is_empty() && !keyword).then_some(name)
}

/// The variant suffixes an API name carries removed (`rocblas_sscal_strided_batched_64`
/// -> `rocblas_sscal`): the forms of one base name are one precision's variants.
fn base_name(af: &ApiFacts) -> String {
    let mut name = af.api.clone();
    for v in af.variants.iter().rev() {
        let suffix = format!("_{v}");
        if let Some(i) = name.rfind(&suffix) {
            name.replace_range(i..i + suffix.len(), "");
        }
    }
    name
}

/// The disjuncts of the quick-return conditions of a form, per function: each as
/// written and with `_64` taken off the names (`n_64 <= 0` in
/// `rocblas_internal_scal_launcher_64` is `n <= 0` in `rocblas_internal_scal_launcher`).
fn quick_return_terms(af: &ApiFacts) -> Vec<(String, String, String, &Fact)> {
    let mut out: Vec<(String, String, String, &Fact)> = Vec::new();
    for f in kinds(af, &[FactKind::QuickReturn]) {
        let Some(c) = slot(f, "condition") else {
            continue;
        };
        // A form's own copy of a function (`rocblas_scal_batched_impl` for
        // `rocblas_scal_impl`) is compared with the reference's.
        let function = f
            .function
            .replace("_strided_batched", "")
            .replace("_batched", "")
            .replace("_64", "");
        for term in c.split("||").map(str::trim).filter(|t| !t.is_empty()) {
            let plain = term.replace("_64", "");
            if !out.iter().any(|(g, p, _, _)| *g == function && *p == plain) {
                out.push((function.clone(), plain, term.to_string(), f));
            }
        }
    }
    out
}

/// A parameter whose type is one word or two before its name (`rocblas_int n`) as
/// `(type, name)`; `None` for pointers and arrays, whose change is shown whole.
fn plain_param(p: &str) -> Option<(&str, &str)> {
    let name = param_name(p)?;
    let ty = p.trim().strip_suffix(name)?.trim();
    (!ty.is_empty()
        && ty
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ' '))
    .then_some((ty, name))
}

/// How each other form of one base name differs from the form with the fewest
/// variant suffixes (the plain API, or `_ex` where there is none): the parameters it
/// takes in place of the reference's or in addition, the loops its launches sit in that
/// the reference's do not (the `_64` forms' chunking over sizes past 32 bits), and the
/// quick returns it adds (`batch_count <= 0`). One entry per base name; the forms of one
/// family in other precisions differ only in their types and are left out as
/// near-duplicates of it.
fn variant_units<'a>(all: &[&'a ApiFacts]) -> Vec<(Vec<&'a ApiFacts>, Unit<'a>)> {
    let mut by_base: BTreeMap<(String, String), Vec<&ApiFacts>> = BTreeMap::new();
    for af in all {
        by_base
            .entry((af.family.clone(), base_name(af)))
            .or_default()
            .push(af);
    }
    let mut out = Vec::new();
    for (_, mut forms) in by_base {
        if forms.len() < 2 {
            continue;
        }
        forms.sort_by_key(|af| af.variants.len());
        if forms[0].variants.len() == forms[1].variants.len() {
            continue; // no one form the others extend
        }
        let reference = forms[0];
        let Some(ref_decl) = kinds(reference, &[FactKind::Declaration]).first().copied() else {
            continue;
        };
        let ref_params: Vec<&str> = slot(ref_decl, "params")
            .map(|p| p.split(" | ").collect())
            .unwrap_or_default();
        // Loops the reference runs anything in, not only launches: rocblas_sgemmt runs
        // gemmt's block loop too, its gemm going to Tensile (rocblas_gemmt_kernels.hpp:756).
        let ref_loops: BTreeSet<&str> = reference
            .facts
            .iter()
            .flat_map(|f| f.conditions.iter())
            .filter(|c| c.starts_with("loop: "))
            .map(String::as_str)
            .collect();
        let ref_launches = !kinds(reference, &[FactKind::Launch]).is_empty();
        let ref_terms: BTreeSet<(String, String)> = quick_return_terms(reference)
            .into_iter()
            .map(|(g, p, _, _)| (g, p))
            .collect();
        let rname = code(&reference.api);
        let mut stated: Vec<(String, Vec<&Fact>)> = Vec::new();
        for form in &forms[1..] {
            let Some(decl) = kinds(form, &[FactKind::Declaration]).first().copied() else {
                continue;
            };
            let params: Vec<&str> = slot(decl, "params")
                .map(|p| p.split(" | ").collect())
                .unwrap_or_default();
            let mut clauses = Vec::new();
            let mut facts = vec![ref_decl, decl];
            // Type changes of plain parameters grouped by the pair of types (`n`, `incx`
            // as `int64_t` for `rocblas_int`); pointers and arrays whole.
            let mut retyped: Vec<((&str, &str), Vec<String>)> = Vec::new();
            let mut changed = Vec::new();
            let mut added = Vec::new();
            for p in &params {
                let name = param_name(p);
                match ref_params
                    .iter()
                    .find(|r| name.is_some() && param_name(r) == name)
                {
                    Some(r) if squash(r) != squash(p) => match (plain_param(r), plain_param(p)) {
                        (Some((from, n)), Some((to, _))) => {
                            match retyped.iter_mut().find(|(k, _)| *k == (from, to)) {
                                Some((_, names)) => names.push(code(n)),
                                None => retyped.push(((from, to), vec![code(n)])),
                            }
                        }
                        _ => changed.push(format!("{} for {}", code(p), code(r))),
                    },
                    Some(_) => {}
                    None => added.push(code(p)),
                }
            }
            for ((from, to), names) in &retyped {
                clauses.push(format!(
                    "takes {} as {} where {rname} has {}",
                    listed_all(names),
                    code(to),
                    code(from)
                ));
            }
            let dropped: Vec<String> = ref_params
                .iter()
                .filter(|r| {
                    let n = param_name(r);
                    n.is_none() || !params.iter().any(|p| param_name(p) == n)
                })
                .map(|r| code(r))
                .collect();
            if !changed.is_empty() {
                clauses.push(format!("takes {}", listed_all(&changed)));
            }
            if !added.is_empty() {
                clauses.push(format!("adds {}", listed_all(&added)));
            }
            if !dropped.is_empty() {
                clauses.push(format!("has no {}", listed_all(&dropped)));
            }
            if ref_launches {
                // The launch cited for a loop: one in a function the reference does not
                // launch from (the `_64` launcher that holds the loop) first.
                let ref_functions: BTreeSet<&str> = kinds(reference, &[FactKind::Launch])
                    .iter()
                    .map(|f| f.function.as_str())
                    .collect();
                let mut launches = kinds(form, &[FactKind::Launch]);
                launches.sort_by_key(|f| ref_functions.contains(f.function.as_str()));
                let new_loops = |f: &'a Fact| {
                    f.conditions
                        .iter()
                        .filter(|c| c.starts_with("loop: ") && !ref_loops.contains(c.as_str()))
                        .map(String::as_str)
                        .collect::<Vec<&str>>()
                };
                // The function whose text holds the form's first loop: the caller that
                // states it, else the launch's own function (rocblas_internal_gemm_64
                // holds the chunk loops around gemm_source_solution_64's launches,
                // rocblas_gemm_kernels_64.cpp:128-132).
                let holder_of = |f: &'a Fact| {
                    let first = *new_loops(f).first()?;
                    f.condition_sites
                        .iter()
                        .find(|c| c.conditions.iter().any(|x| x == first))
                        .map(|c| (&c.function, &c.file, c.function_lines))
                        .or(Some((&f.function, &f.file, f.function_lines)))
                };
                // The loops of the first launch in a loop of its own, and those of the
                // launches one function holds with it: loops another function holds
                // are not said to be in this one.
                let first: Option<&Fact> =
                    launches.iter().copied().find(|f| !new_loops(f).is_empty());
                let holder = first.and_then(holder_of);
                let mut loops: Vec<&str> = Vec::new();
                for f in &launches {
                    if holder_of(f) != holder {
                        continue;
                    }
                    for c in new_loops(f) {
                        if !loops.contains(&c) {
                            loops.push(c);
                        }
                    }
                }
                if let Some(f) = first {
                    let heads: Vec<String> =
                        loops.iter().map(|c| code(&c["loop: ".len()..])).collect();
                    // Where some launches sit outside those loops (the `_64` launcher
                    // handing sizes that fit to the 32-bit one), the test that leads
                    // into them is said: the first one of the launch's own that the
                    // reference's launches do not share, before its first loop.
                    let some = launches
                        .iter()
                        .any(|f| !f.conditions.iter().any(|c| loops.contains(&c.as_str())));
                    let ref_tests: BTreeSet<&str> = kinds(reference, &[FactKind::Launch])
                        .iter()
                        .flat_map(|r| r.conditions.iter().map(String::as_str))
                        .collect();
                    let entry_tests: Vec<&str> = f
                        .conditions
                        .iter()
                        .take_while(|c| !loops.contains(&c.as_str()))
                        .filter(|c| !c.starts_with("loop: ") && !ref_tests.contains(c.as_str()))
                        .map(String::as_str)
                        .collect();
                    // The test names the way in only where every launch in those loops
                    // passes it: asum's `_64` launcher chunks under two tests of `n_64`
                    // and `incx_64` (rocblas_asum_nrm2_kernels_64.cpp:114-170).
                    let looped = launches
                        .iter()
                        .filter(|f| f.conditions.iter().any(|c| loops.contains(&c.as_str())));
                    let entry_tests = match looped.into_iter().all(|f| {
                        entry_tests
                            .iter()
                            .all(|t| f.conditions.iter().any(|c| c == t))
                    }) {
                        true => entry_tests,
                        false => Vec::new(),
                    };
                    if let Some((function, file, (s, e))) = holder {
                        let when = match (some, entry_tests.is_empty()) {
                            (true, false) => format!(
                                " when {} (its other launches run outside those loops)",
                                guard_clauses(&entry_tests).0
                            ),
                            (true, true) => {
                                " on some paths only (its other launches run outside those loops)"
                                    .to_string()
                            }
                            _ => String::new(),
                        };
                        clauses.push(format!(
                            "launches its kernels inside {} {}, which {rname}'s launches are not in (in {}, {file}:{s}-{e}){when}",
                            if heads.len() == 1 { "the loop" } else { "the loops" },
                            listed_all(&heads),
                            code(function),
                        ));
                        facts.push(f);
                    }
                }
            }
            // Terms a quick return of the form adds to the reference's: none of the
            // reference's quick returns tests it, and the reference has one in the same
            // function (a helper only this form reaches is not compared).
            // The quick return guarded by the fewest conditions first: the form's own
            // argument checks before a check-numerics helper's.
            let mut extra: Vec<(String, String, String, &Fact)> = quick_return_terms(form)
                .into_iter()
                .filter(|(g, p, _, _)| {
                    ref_terms.iter().any(|(rg, _)| rg == g)
                        && !ref_terms.iter().any(|(_, rp)| rp == p)
                })
                .collect();
            extra.sort_by_key(|e| e.3.conditions.len());
            if let Some((status, f)) = extra
                .first()
                .and_then(|(_, _, _, f)| Some((slot(f, "status")?, *f)))
            {
                let terms: Vec<String> = extra
                    .iter()
                    .filter(|e| std::ptr::eq(e.3, f))
                    .map(|(_, _, t, _)| code(t))
                    .collect();
                clauses.push(format!(
                    "also returns {} early when {} ({}{})",
                    code(status),
                    terms.join(" or "),
                    at(f),
                    when(f)
                ));
                facts.push(f);
            }
            if clauses.is_empty() {
                continue;
            }
            stated.push((
                format!(
                    "{} ({}) {}.",
                    code(&form.api),
                    at(decl),
                    listed_all(&clauses)
                ),
                facts,
            ));
        }
        if stated.is_empty() {
            continue;
        }
        stated.insert(
            0,
            (
                format!(
                    "{rname} ({}) is the form the others are compared with.",
                    at(ref_decl)
                ),
                vec![ref_decl],
            ),
        );
        for u in stated_unit(&VARIANT_FORMS, &reference.api, stated) {
            out.push((forms.clone(), u));
        }
    }
    out
}

/// The fact entries every API should have at least; the manifest names those with
/// fewer, and why.
pub const MIN_FACT_ENTRIES: usize = 3;

const DEVICE_MEMORY: Template = Template {
    id: "facts-device-memory",
    category: "memory-access",
    questions: [
        "Does {subject} use LDS, atomics or wavefront operations when {apis} runs it, and where?",
        "What on-chip memory and cross-lane operations does {subject} use (for {apis})?",
        "Which shared-memory arrays, atomics or wavefront intrinsics appear in {subject}, run by {apis}?",
    ],
    intros: [
        "In the device code:",
        "The function's body shows:",
        "Reading the device-side code:",
    ],
};

fn pick(key: &str, n: usize) -> usize {
    let h = Sha256::digest(key.as_bytes());
    (h[0] as usize) % n
}

/// How a group of APIs is named in a question: by family when they are one family's,
/// else the first, how many, and examples from the other families first.
fn apis_label(apis: &[String], families: &[String], family: &str) -> String {
    let n = apis.len();
    let distinct: BTreeSet<&str> = families.iter().map(String::as_str).collect();
    match n {
        1 => apis[0].clone(),
        2 => format!("{} and {}", apis[0], apis[1]),
        _ if distinct.len() == 1 => format!(
            "{} ({n} variants of the {family} family, e.g. {})",
            apis[0],
            apis[1..3].join(", ")
        ),
        _ => {
            // The first API of each other family, then the rest in order.
            let mut seen = BTreeSet::from([families[0].as_str()]);
            let mut order: Vec<usize> = (1..n).filter(|&i| seen.insert(&families[i])).collect();
            let rest: Vec<usize> = (1..n).filter(|i| !order.contains(i)).collect();
            order.extend(rest);
            let examples: Vec<&str> = order.iter().take(2).map(|&i| apis[i].as_str()).collect();
            format!(
                "{} ({n} APIs of {} families, e.g. {})",
                apis[0],
                distinct.len(),
                examples.join(", ")
            )
        }
    }
}

fn role_of(kind: FactKind) -> PieceRole {
    match kind {
        FactKind::Launch => PieceRole::Launcher,
        FactKind::LaunchBounds
        | FactKind::SharedMemory
        | FactKind::Barrier
        | FactKind::Atomic
        | FactKind::Wavefront
        | FactKind::MemoryPath
        | FactKind::ScalarGuard
        | FactKind::StoresNothing => PieceRole::Kernel,
        FactKind::Declaration => PieceRole::Declaration,
        FactKind::Return | FactKind::Definition => PieceRole::Entry,
        _ => PieceRole::Host,
    }
}

/// Lines an entry cites in a function its slice shows whole.
struct Shown<'f> {
    lib: &'f str,
    file: &'f str,
    function: &'f str,
    function_lines: (u32, u32),
    lines: (u32, u32),
}

impl Shown<'_> {
    /// Cites the lines and widens (or adds) the piece of their function to hold them.
    fn add(
        &self,
        trees: &Trees,
        role: PieceRole,
        citations: &mut Vec<Citation>,
        pieces: &mut BTreeMap<PieceKey, (u32, u32, PieceRole)>,
    ) -> Result<(), SliceError> {
        let (start, end) = self.lines;
        let text = trees.lines(self.lib, self.file)?;
        citations.push(Citation {
            lib: self.lib.to_string(),
            file: self.file.to_string(),
            start,
            end,
            sha256: lines_hash(&text, start, end),
        });
        let (s, e) = self.function_lines;
        let key = (
            self.lib.to_string(),
            self.file.to_string(),
            self.function.to_string(),
            0,
        );
        let p = pieces
            .entry(key)
            .or_insert((s.min(start), e.max(end), role));
        p.0 = p.0.min(start);
        p.1 = p.1.max(end);
        Ok(())
    }
}

/// Lines a fact names beside its own (`start-end` in a value: a macro's `#define`, a
/// variable's declaration, a callee's definition), shown as a piece of their own.
struct Lines<'f> {
    lib: &'f str,
    file: &'f str,
    /// What the piece is named.
    name: &'f str,
    /// `start-end`.
    range: &'f str,
}

impl Lines<'_> {
    /// Cites the lines and adds their piece; a range that does not read as
    /// `start-end` adds nothing.
    fn add(
        &self,
        trees: &Trees,
        role: PieceRole,
        citations: &mut Vec<Citation>,
        pieces: &mut BTreeMap<PieceKey, (u32, u32, PieceRole)>,
    ) -> Result<(), SliceError> {
        let Some((s, e)) = self
            .range
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        else {
            return Ok(());
        };
        let text = trees.lines(self.lib, self.file)?;
        citations.push(Citation {
            lib: self.lib.to_string(),
            file: self.file.to_string(),
            start: s,
            end: e,
            sha256: lines_hash(&text, s, e),
        });
        pieces
            .entry((
                self.lib.to_string(),
                self.file.to_string(),
                self.name.to_string(),
                s,
            ))
            .or_insert((s, e, role));
        Ok(())
    }
}

/// Renders the fact entries of a library from the facts of its APIs (in the order
/// given: an entry's `api` is the first of its group). `difficulty` follows the files
/// and functions cited.
pub fn render(
    all: &[&ApiFacts],
    trees: &Trees,
    source: &SourceRef,
    tool: &str,
) -> Result<Vec<Entry>, SliceError> {
    // Group APIs by (template, subject, answer body): same body, same entry.
    struct Group<'a> {
        apis: Vec<String>,
        family: String,
        /// Each API's family, in the order of `apis`.
        families: Vec<String>,
        variants: Vec<Vec<String>>,
        unit: Unit<'a>,
        lib: String,
        version: String,
    }
    let mut groups: BTreeMap<(String, String, String), Group> = BTreeMap::new();
    let mut order: Vec<(String, String, String)> = Vec::new();
    for af in all {
        for u in units(af) {
            // Across families: a helper kernel that forty rocSOLVER families launch
            // through one launcher has one answer, so it is one entry listing them all,
            // not forty that differ only in the API named. Its family is the first's.
            let key = (u.template.id.to_string(), u.subject.clone(), u.body.clone());
            match groups.get_mut(&key) {
                Some(g) => {
                    g.apis.push(af.api.clone());
                    g.families.push(af.family.clone());
                    g.variants.push(af.variants.clone());
                }
                None => {
                    order.push(key.clone());
                    groups.insert(
                        key,
                        Group {
                            apis: vec![af.api.clone()],
                            family: af.family.clone(),
                            families: vec![af.family.clone()],
                            variants: vec![af.variants.clone()],
                            unit: u,
                            lib: af.lib.clone(),
                            version: af.version.clone(),
                        },
                    );
                }
            }
        }
    }
    // The forms of one base name, compared: an entry naming all of them.
    for (forms, u) in variant_units(all) {
        let key = (u.template.id.to_string(), u.subject.clone(), u.body.clone());
        if groups.contains_key(&key) {
            continue;
        }
        order.push(key.clone());
        groups.insert(
            key,
            Group {
                apis: forms.iter().map(|af| af.api.clone()).collect(),
                family: forms[0].family.clone(),
                families: forms.iter().map(|af| af.family.clone()).collect(),
                variants: forms.iter().map(|af| af.variants.clone()).collect(),
                unit: u,
                lib: forms[0].lib.clone(),
                version: forms[0].version.clone(),
            },
        );
    }
    let mut out = Vec::new();
    for key in order {
        let g = &groups[&key];
        let u = &g.unit;
        let t = u.template;
        let k = pick(&u.body, 3);
        let mut question = t.questions[k]
            .replace("{apis}", &apis_label(&g.apis, &g.families, &g.family))
            .replace("{subject}", &u.subject)
            .replace("{others}", &listed_all(&g.apis[1..]));
        if !u.scope.is_empty() {
            question.push_str(&format!(" Answer for {} only.", u.scope));
        }
        let mut citations = Vec::new();
        // Keyed by library, file, function and, for a callee in another library, the
        // first line of its definition: overloads of one name in one file (rocBLAS's
        // `std::real` for each of its types) are pieces of their own.
        let mut pieces: BTreeMap<PieceKey, (u32, u32, PieceRole)> = BTreeMap::new();
        for f in &u.facts {
            let fact_at = Shown {
                lib: &f.lib,
                file: &f.file,
                function: &f.function,
                function_lines: f.function_lines,
                lines: (f.line, f.end_line),
            };
            fact_at.add(trees, role_of(f.kind), &mut citations, &mut pieces)?;
            // The callers whose branches the fact's conditions come from show them, and
            // the call each is written around is cited.
            for c in &f.condition_sites {
                let call = Shown {
                    lib: &c.lib,
                    file: &c.file,
                    function: &c.function,
                    function_lines: c.function_lines,
                    lines: (c.line, c.line),
                };
                call.add(trees, PieceRole::Host, &mut citations, &mut pieces)?;
            }
            // A launch written in a macro the site invokes shows and cites the `#define`
            // that names the kernel.
            if let (Some(r), Some(m)) = (f.values.get("macro_lines"), f.values.get("macro")) {
                let lines = Lines {
                    lib: &f.lib,
                    file: f.values.get("macro_file").unwrap_or(&f.file),
                    name: m,
                    range: r,
                };
                lines.add(trees, PieceRole::Launcher, &mut citations, &mut pieces)?;
            }
            // A pointer mode the library sets on the way shows the function setting it,
            // from its head to the line that sets the mode.
            for source in f
                .values
                .get(super::MODE_SET)
                .into_iter()
                .flat_map(|v| v.split(';'))
            {
                if let [_, lib, function, file, head, range] =
                    source.split('|').collect::<Vec<_>>()[..]
                {
                    // The line naming the function, then the lines setting the mode.
                    for range in [format!("{head}-{head}"), range.to_string()] {
                        let lines = Lines {
                            lib,
                            file,
                            name: function,
                            range: &range,
                        };
                        lines.add(trees, PieceRole::Host, &mut citations, &mut pieces)?;
                    }
                }
            }
            // A namespace-scope variable shows and cites its declaration and the other
            // lines of its file that name it.
            if f.kind == FactKind::StaticState {
                let ranges = f
                    .values
                    .get("decl_lines")
                    .map(String::as_str)
                    .into_iter()
                    .chain(f.values.get("uses").into_iter().flat_map(|u| u.split(", ")));
                for range in ranges {
                    let lines = Lines {
                        lib: &f.lib,
                        file: &f.file,
                        name: &f.subject,
                        range,
                    };
                    lines.add(trees, PieceRole::Host, &mut citations, &mut pieces)?;
                }
            }
            // A call into another library shows and cites the callee's definition too.
            if let (Some(range), Some(lib), Some(file)) = (
                f.values.get("callee_lines"),
                f.values.get("callee_lib"),
                f.values.get("callee_file"),
            ) {
                let lines = Lines {
                    lib,
                    file,
                    name: &f.subject,
                    range,
                };
                lines.add(trees, PieceRole::Host, &mut citations, &mut pieces)?;
            }
        }
        citations.sort_by(|a, b| (&a.file, a.start, a.end).cmp(&(&b.file, b.start, b.end)));
        citations.dedup();
        let mut slice = Vec::new();
        for ((lib, file, name, _), (s, e, role)) in &pieces {
            let lines = trees.lines(lib, file)?;
            slice.push(PieceRef {
                role: *role,
                name: name.clone(),
                lib: lib.clone(),
                file: file.clone(),
                start: *s,
                end: *e,
                sha256: lines_hash(&lines, *s, *e),
                expansion: None,
            });
        }
        let mut shown = String::new();
        for p in &slice {
            let lines = trees.lines(&p.lib, &p.file)?;
            for l in lines
                .iter()
                .take(p.end as usize)
                .skip(p.start.max(1) as usize - 1)
            {
                shown.push_str(l);
            }
        }
        let answer = format!(
            "{}\n{}",
            t.intros[pick(&question, 3)],
            spans_as_written(&u.body, &squash(&shown))
        );
        let files: BTreeSet<&str> = slice.iter().map(|p| p.file.as_str()).collect();
        let difficulty = match (slice.len(), files.len()) {
            (1, _) => "L1",
            (_, 1) => "L2",
            _ => "L3",
        };
        let variant = if g.variants.iter().all(|v| *v == g.variants[0]) {
            g.variants[0].join("_")
        } else {
            String::new()
        };
        let mut h = Sha256::new();
        for part in [
            g.lib.as_str(),
            g.version.as_str(),
            t.id,
            &u.subject,
            &g.apis.join(","),
            &u.body,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let id = format!("{}-{}", g.lib, &format!("{:x}", h.finalize())[..16]);
        let call_path: Vec<String> = {
            let mut seen = BTreeSet::new();
            u.facts
                .iter()
                .map(|f| f.function.clone())
                .filter(|n| seen.insert(n.clone()))
                .collect()
        };
        out.push(Entry {
            schema_version: ENTRY_SCHEMA_VERSION,
            id,
            lib: g.lib.clone(),
            version: g.version.clone(),
            source: source.clone(),
            family: g.family.clone(),
            api: g.apis[0].clone(),
            apis: g.apis.clone(),
            variant,
            call_path,
            category: t.category.into(),
            template_id: t.id.into(),
            template_version: 1,
            difficulty: difficulty.into(),
            prompt_sha256: format!("{:x}", Sha256::digest(question.as_bytes())),
            question,
            answer,
            code: None,
            citations,
            slice_id: format!("{}:{}:facts:{}", g.lib, g.version, g.family),
            slice,
            model: String::new(),
            params: serde_json::json!({}),
            usage: TokenUsage::default(),
            validation: Vec::new(),
            generator: "facts".into(),
            tool: tool.into(),
            grouped_request: None,
            mutation: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_tests_the_names_of_its_middle_clause() {
        // roclapack_gebd2.hpp:137.
        assert_eq!(
            tested_names("loop: for (rocblas_int j = 0; j < n; j++)"),
            ["j", "n"]
        );
        assert_eq!(tested_names("m >= n"), ["m", "n"]);
    }

    #[test]
    fn a_pointer_mode_answer_says_what_each_mode_passes() {
        let device = fact(
            FactKind::Launch,
            &[("args", "n | alpha | stride_alpha | x | beta")],
            &["rocblas_pointer_mode_device == handle->pointer_mode"],
        );
        let host = fact(
            FactKind::Launch,
            &[(
                "args",
                "n | * alpha | stride_alpha | x | load_scalar((const T *) beta)",
            )],
            &["not (rocblas_pointer_mode_device == handle->pointer_mode)"],
        );
        // `x` passes as a pointer under both modes: not the mode's doing.
        let other = fact(FactKind::Launch, &[("args", "n | x")], &[]);
        let pm = [&device, &host, &other];
        let passing = mode_dependent_scalars(&pm);
        assert_eq!(
            passing
                .get(&("bdsqr_init", "abs"))
                .map(|n| n.iter().cloned().collect::<Vec<_>>()),
            Some(vec!["alpha".to_string(), "beta".to_string()])
        );
        assert_eq!(
            passing_clause(&device, &passing).as_deref(),
            Some("passing the pointers `alpha` and `beta`, which the kernel reads")
        );
        assert_eq!(
            passing_clause(&host, &passing).as_deref(),
            Some(
                "passing `*alpha` and `load_scalar((const T *) beta)`, the values read on the host"
            )
        );
        for (arg, want) in [
            ("alpha", Some(true)),
            ("(const rocblas_half *) alpha", Some(true)),
            ("* alpha", Some(false)),
            ("load_scalar(alpha)", Some(false)),
            ("alpha + 1", None),
            ("stride_alpha", None),
        ] {
            assert_eq!(super::super::scalar_passing(arg, "alpha"), want, "{arg}");
        }
    }

    #[test]
    fn every_fact_template_is_listed_once() {
        let defined = include_str!("qa.rs")
            .lines()
            .filter(|l| l.starts_with("const ") && l.ends_with(": Template = Template {"))
            .count();
        let ids: BTreeSet<&str> = template_ids().iter().map(|(id, _)| *id).collect();
        assert_eq!((ids.len(), template_ids().len()), (defined, defined));
    }

    #[test]
    fn a_callees_parameter_named_like_the_apis_is_said_to_be_its_own() {
        // getri tests its `n`; trti2, called with the block width `jb` as its `n`,
        // tests its own.
        let mut f = fact(
            FactKind::Launch,
            &[(super::super::OWN_NAMES, "n")],
            &["not (n <= 43)", "n <= 64"],
        );
        f.function = "trti2_run_small".into();
        f.condition_sites.push(crate::model::ConditionSite {
            lib: "rocsolver".into(),
            file: "library/src/lapack/roclapack_trtri.hpp".into(),
            function: "trti2".into(),
            function_lines: (221, 283),
            line: 238,
            conditions: vec!["n <= 64".into()],
            own_names: vec!["n".into()],
        });
        let note = own_names_note(&[&f], "only when n > 43 and n <= 64").unwrap();
        assert_eq!(
            note,
            "`n` in `trti2` and `trti2_run_small` is each function's own parameter, set by the callers that pass it, which may differ from the API's argument of that name."
        );
        // A name the answer does not say needs no note.
        assert_eq!(own_names_note(&[&f], "only when blk != 0"), None);
    }

    #[test]
    fn a_threshold_constant_named_in_code_is_given_its_value() {
        super::super::eval::add_constants(
            "constexpr int n_note_threshold = 1232;\nconstexpr int c_note_chunk = 8;\n",
        );
        assert_eq!(
            constants_note("only when `n >= n_note_threshold`, inside `b < c_note_chunk`").unwrap(),
            "Of the compile-time constants named above, `n_note_threshold` is 1232."
        );
        // Outside code spans a word is prose, not the constant.
        assert_eq!(constants_note("n_note_threshold"), None);
    }

    #[test]
    fn sites_covering_every_combination_of_two_selectors_are_said_as_that() {
        let values = ["rocblas_operation_none", "rocblas_operation_transpose"];
        let mut facts = Vec::new();
        for a in values {
            for b in values {
                facts.push(fact(
                    FactKind::Launch,
                    &[],
                    &[&format!("{a} == trans_a"), &format!("{b} == trans_b")],
                ));
            }
        }
        let sites: Vec<(&Fact, Vec<Selector>)> = facts
            .iter()
            .map(|f| (f, split_selectors(f).unwrap().0))
            .collect();
        assert_eq!(
            every_combination(&sites).unwrap(),
            "one for each combination of `trans_a` (`rocblas_operation_none` and `rocblas_operation_transpose`) and `trans_b` (the same values)"
        );
        // Three of the four: no combination to name.
        assert_eq!(every_combination(&sites[..3]), None);
    }

    #[test]
    fn a_test_of_the_pointer_mode_is_read_as_the_mode_it_asks_for() {
        assert_eq!(
            mode_side("handle->pointer_mode == rocblas_pointer_mode_device"),
            Some(true)
        );
        assert_eq!(
            mode_side("rocblas_pointer_mode_device == handle->pointer_mode"),
            Some(true)
        );
        assert_eq!(
            mode_side("handle->pointer_mode != rocblas_pointer_mode_device"),
            Some(false)
        );
        assert_eq!(mode_side("pmode == rocblas_pointer_mode_host"), Some(false));
        assert_eq!(
            mode_side("not (handle->pointer_mode == rocblas_pointer_mode_host)"),
            Some(true)
        );
        assert_eq!(mode_side("n <= 0 || incx <= 0"), None);
        assert_eq!(
            mode_side("handle->pointer_mode == rocblas_pointer_mode_host && !beta"),
            None
        );
    }

    #[test]
    fn pointer_mode_answers_say_what_each_mode_runs() {
        let test = fact(
            FactKind::PointerMode,
            &[(
                "condition",
                "handle->pointer_mode == rocblas_pointer_mode_device",
            )],
            &[],
        );
        let device = fact(
            FactKind::RuntimeCall,
            &[("call", "hipMemsetAsync")],
            &["handle->pointer_mode == rocblas_pointer_mode_device"],
        );
        let host = fact(
            FactKind::RuntimeCall,
            &[("call", "hipStreamSynchronize")],
            &["handle->pointer_mode != rocblas_pointer_mode_device"],
        );
        let say = sentences(|fs| {
            fs.iter()
                .map(|f| {
                    (
                        format!("calls {}{}.", slot(f, "call").unwrap(), when(f)),
                        vec![*f],
                    )
                })
                .collect()
        });
        let out = by_pointer_mode(&[&test, &device, &host], &say);
        let text: Vec<&str> = out.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(
            text[0].starts_with("In device pointer mode (tested at "),
            "{}",
            text[0]
        );
        assert!(text[0].contains("- calls hipMemsetAsync."), "{}", text[0]);
        assert!(text[1].starts_with("In host pointer mode:"), "{}", text[1]);
        assert!(
            text[1].contains("- calls hipStreamSynchronize."),
            "{}",
            text[1]
        );
        // Every fact is cited once, the test with the first side.
        assert_eq!(out.iter().map(|(_, fs)| fs.len()).sum::<usize>(), 3);
    }

    fn fact(kind: FactKind, values: &[(&str, &str)], conditions: &[&str]) -> Fact {
        Fact {
            kind,
            subject: "abs".into(),
            function: "bdsqr_init".into(),
            lib: "rocsolver".into(),
            file: "library/src/auxiliary/rocauxiliary_bdsqr.hpp".into(),
            line: 402,
            end_line: 402,
            function_lines: (390, 420),
            values: values
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            conditions: conditions.iter().map(|c| c.to_string()).collect(),
            condition_sites: Vec::new(),
            order: Vec::new(),
        }
    }

    #[test]
    fn a_long_ordered_list_is_scoped_by_where_each_part_starts_and_stops() {
        // sygvdx: the impl's handle test, eleven argument checks, then the impl's
        // allocation test. Scoped by function, the first part would claim all of the
        // impl's tests and leave its allocation test to the second.
        let test = |function: &str, line: u32| {
            let mut f = fact(
                FactKind::ArgCheck,
                &[
                    ("status", "rocblas_status_invalid_size"),
                    ("condition", "n < 0"),
                ],
                &[],
            );
            f.function = function.into();
            f.line = line;
            f.end_line = line;
            f
        };
        let facts: Vec<Fact> = std::iter::once(test("impl", 58))
            .chain((0..11).map(|k| test("argCheck", 64 + 2 * k)))
            .chain([test("impl", 109)])
            .collect();
        let stated: Vec<(String, Vec<&Fact>)> = facts
            .iter()
            .map(|f| (format!("`{}` returns at {}", f.function, f.line), vec![f]))
            .collect();
        let units = ordered_unit(&EARLY_RETURNS, (String::new(), Vec::new()), stated);
        assert_eq!(units.len(), 2);
        let file = "library/src/auxiliary/rocauxiliary_bdsqr.hpp";
        assert_eq!(
            units[0].scope,
            format!("the tests that run first, up to the one at {file}:84")
        );
        assert_eq!(
            units[1].scope,
            format!("the tests after the one at {file}:84")
        );
        assert_eq!(units[0].facts.len() + units[1].facts.len(), 13);
        assert!(units[1].body.contains("returns at 109"));
    }

    fn form(api: &str, variants: &[&str], params: &str, facts: Vec<Fact>) -> ApiFacts {
        let mut decl = fact(FactKind::Declaration, &[("params", params)], &[]);
        decl.subject = api.into();
        decl.function = api.into();
        decl.file = "library/include/rocsolver-functions.h".into();
        let mut all = vec![decl];
        all.extend(facts);
        ApiFacts {
            lib: "rocsolver".into(),
            version: "6.4.3".into(),
            api: api.into(),
            family: "geqrf".into(),
            variants: variants.iter().map(|v| v.to_string()).collect(),
            facts: all,
            excluded: Vec::new(),
        }
    }

    #[test]
    fn a_barrier_says_what_it_orders() {
        // rocblas_iamax_iamin_kernels.hpp:59 and :65.
        let f = fact(
            FactKind::Barrier,
            &[
                ("ops", "__syncthreads"),
                ("count", "2"),
                ("lines", "59, 65"),
                ("orders", "65 psums"),
                ("orders_writes", "59 psums"),
            ],
            &[],
        );
        let s = statement(&f).expect("a sentence");
        assert!(
            s.ends_with("In shared memory, the one at line 65 separates the writes of `psums` before it from the reads after it and the one at line 59 keeps the writes to `psums` before it ahead of the writes to other elements after it."),
            "{s}"
        );
        // rocblas_trsm_kernels.hpp:2061: `sA` is read across columns, `sB` only at the
        // thread's own column.
        let f = fact(
            FactKind::Barrier,
            &[
                ("ops", "__syncthreads"),
                ("count", "1"),
                ("lines", "2061"),
                ("orders", "2061 sA"),
                // Read as ordering writes too, yet no other thread touches them.
                ("orders_writes", "2061 sB"),
                ("thread_owned", "sB"),
            ],
            &[],
        );
        let s = statement(&f).expect("a sentence");
        assert!(
            s.ends_with("the one at line 2061 separates the writes of `sA` before it from the reads after it. Each thread reads and writes only its own elements of `sB` (every subscript is the thread's index plus a multiple of one stride), so no barrier is needed to order them between threads."),
            "{s}"
        );
    }

    #[test]
    fn a_mode_the_library_sets_is_said_once_for_the_tests_it_decides() {
        let mut test = fact(
            FactKind::PointerMode,
            &[(
                super::super::MODE_SET,
                "caller;rocblas_pointer_mode_device|rocsolver|rocsolver_sytrd_hetrd_template|library/src/lapack/roclapack_sytrd_hetrd.hpp|127|165-169",
            )],
            &[],
        );
        test.function = "rocblas_copy_alpha_beta_to_host_if_on_device".into();
        let mut copy = test.clone();
        copy.kind = FactKind::RuntimeCall;
        let plain = fact(FactKind::PointerMode, &[], &[]);
        let lines = modes_set_lines(&[&test, &copy, &plain]);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].1.len(), 2);
        assert_eq!(
            lines[0].0,
            "On some of the ways the API reaches `rocblas_copy_alpha_beta_to_host_if_on_device`, the library sets the pointer mode itself first: `rocsolver_sytrd_hetrd_template` sets `rocblas_pointer_mode_device` (library/src/lapack/roclapack_sytrd_hetrd.hpp:169); on the others the mode is the one the API's caller set on the handle."
        );
        // No source but the caller's mode: nothing to say.
        test.values
            .insert(super::super::MODE_SET.into(), "caller".into());
        assert!(modes_set_lines(&[&test]).is_empty());
    }

    #[test]
    fn early_returns_are_in_the_order_the_code_runs_them_without_numerics_checking() {
        // rocblas_iamax_iamin.hpp: `!result` (:111), then `n <= 0 || incx <= 0` returns
        // success (:117), then `!x` (:133); the impl calls the check at :90 and tests
        // the allocation at :96; numerics checking's return is left out.
        let check = |kind, status: &str, cond: &str, order: &[u32]| {
            let mut f = fact(kind, &[("status", status), ("condition", cond)], &[]);
            f.line = *order.last().unwrap();
            f.end_line = f.line;
            f.order = order.to_vec();
            f
        };
        let mut numerics = check(
            FactKind::QuickReturn,
            "rocblas_status_success",
            "n_64 <= 0",
            &[1, 100, 181],
        );
        numerics
            .values
            .insert(super::super::NUMERICS_CHECK.into(), "x".into());
        let af = form(
            "rocblas_isamax",
            &[],
            "rocblas_handle handle",
            vec![
                {
                    let mut f = check(
                        FactKind::ArgCheck,
                        "rocblas_status_memory_error",
                        "!w_mem",
                        &[1, 96],
                    );
                    f.conditions =
                        vec!["not (handle->pointer_mode == rocblas_pointer_mode_device)".into()];
                    f
                },
                numerics,
                check(
                    FactKind::ArgCheck,
                    "rocblas_status_invalid_pointer",
                    "!x",
                    &[1, 90, 133],
                ),
                check(
                    FactKind::QuickReturn,
                    "rocblas_status_success",
                    "n <= 0 || incx <= 0",
                    &[1, 90, 117],
                ),
                check(
                    FactKind::ArgCheck,
                    "rocblas_status_invalid_pointer",
                    "!result",
                    &[1, 90, 111],
                ),
                // After the launch at :120: not a return before any launch.
                check(
                    FactKind::QuickReturn,
                    "rocblas_status_success",
                    "done",
                    &[1, 130],
                ),
                {
                    let mut l = fact(FactKind::Launch, &[], &[]);
                    l.order = vec![1, 120];
                    l
                },
                // A launch under a test in the same function may have run: what
                // follows it is no return before any kernel (sgemv's scal launch under
                // `*beta != 1`), while one under a test the return contradicts leaves
                // it listed.
                {
                    let mut l = fact(FactKind::Launch, &[], &["size_scalars > 0"]);
                    l.order = vec![1, 97];
                    l
                },
                check(
                    FactKind::QuickReturn,
                    "rocblas_status_success",
                    "late",
                    &[1, 98],
                ),
                {
                    let mut l = fact(
                        FactKind::Launch,
                        &[],
                        &["handle->pointer_mode == rocblas_pointer_mode_device"],
                    );
                    l.order = vec![1, 90, 134];
                    l
                },
            ],
        );
        let order: Vec<&str> = early_returns(&af)
            .iter()
            .map(|f| f.values["condition"].as_str())
            .collect();
        assert_eq!(order, ["!result", "n <= 0 || incx <= 0", "!x", "!w_mem"]);
        // The list names where it ends: the launch at :120, the launch under a test
        // that may come before it (cited, so its code is shown), then the return past
        // it.
        let (end, cited) = first_launch_line(&af).expect("a launch");
        assert_eq!(cited.len(), 3, "{end}");
        assert_eq!(cited[1].order, [1, 90, 134]);
        assert!(
            end.contains("launches under a test can come before it")
                && end.ends_with("if `done` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:130)."),
            "{end}"
        );
        assert!(implies_all(
            "!n || !batch_count",
            "n <= 0 || batch_count <= 0 || incx <= 0"
        ));
        assert!(implies_all("n <= 0 || incx <= 0", "(n <= 0 || incx <= 0)"));
        assert!(!implies_all("!n || !x", "n <= 0 || incx <= 0"));
        assert!(!implies_all("n < 0", "n <= 0 && incx <= 0"));
        // rocblas_her_launcher_64's `!n_64 || !batch_count_64` (her_kernels_64.cpp:46) is
        // the argument check's `!n || !batch_count` (rocblas_her.hpp:46) in the names the
        // API passes both: it never fires. The check's test stays.
        let mut launcher = check(
            FactKind::QuickReturn,
            "rocblas_status_success",
            "!n_64 || !batch_count_64",
            &[1, 120, 46],
        );
        launcher.values.insert(
            super::super::OUTER_CONDITION.into(),
            "!n || !batch_count".into(),
        );
        let af = form(
            "rocblas_cher_batched_64",
            &[],
            "rocblas_handle handle",
            vec![
                check(
                    FactKind::QuickReturn,
                    "rocblas_status_success",
                    "!n || !batch_count",
                    &[1, 90, 46],
                ),
                launcher,
            ],
        );
        let order: Vec<&str> = early_returns(&af)
            .iter()
            .map(|f| f.values["condition"].as_str())
            .collect();
        assert_eq!(order, ["!n || !batch_count"]);
    }

    #[test]
    fn what_does_not_fit_one_answer_is_split_by_function_never_cut() {
        let launch = |function: &str, line: u32| {
            let mut f = fact(FactKind::Launch, &[], &["n > 0"]);
            f.subject = format!("kernel_{line}");
            f.function = function.into();
            f.line = line;
            f.end_line = line;
            f
        };
        let facts: Vec<Fact> = (0..10)
            .map(|i| launch("first_launcher", 100 + i))
            // Listed out of line order (as by kernel name): the ranges still split
            // the function's lines.
            .chain((0..30).rev().map(|i| launch("second_launcher", 500 + i)))
            .collect();
        let refs: Vec<&Fact> = facts.iter().collect();
        let units = unit(&KERNELS, "", &refs, statement);
        // Every launch is stated once, across the parts; none says more were left out.
        let stated: usize = units.iter().map(|u| u.facts.len()).sum();
        assert_eq!(stated, 40);
        assert!(units.iter().all(|u| !u.body.contains("not listed")));
        assert!(units.iter().all(|u| u.body.lines().count() <= MAX_ITEMS));
        // The first launcher's launches fit one answer about its code; the second's,
        // too many for one, are answers each about a range of its lines.
        assert_eq!(units[0].scope, "the code of `first_launcher`");
        assert!(units[0]
            .facts
            .iter()
            .all(|f| f.function == "first_launcher"));
        assert_eq!(
            units[1].scope,
            "the code of `second_launcher` at library/src/auxiliary/rocauxiliary_bdsqr.hpp:500-511"
        );
        assert_eq!(units.len(), 4);
        // No range holds a site another part states.
        for (i, u) in units.iter().enumerate().skip(1) {
            let (lo, hi) = (
                u.facts.iter().map(|f| f.line).min().unwrap(),
                u.facts.iter().map(|f| f.line).max().unwrap(),
            );
            for other in units.iter().skip(1).enumerate().filter(|(j, _)| j + 1 != i) {
                assert!(other.1.facts.iter().all(|f| f.line < lo || f.line > hi));
            }
        }
    }

    #[test]
    fn entries_stop_where_the_call_leaves_the_library() {
        // rocsolver_sgebd2: its own launch is listed; gemv's kernels are rocBLAS's,
        // named only through the rocBLAS function it calls; rocBLAS's own tests of
        // the pointer mode and its runtime calls are not rocSOLVER's entries.
        let own = {
            let mut f = fact(FactKind::Launch, &[("kernel", "restore_diag")], &[]);
            f.subject = "restore_diag".into();
            f.function = "rocsolver_gebd2_template".into();
            f
        };
        let paired = |kind: FactKind, subject: &str| {
            let mut f = fact(kind, &[], &[]);
            f.lib = "rocblas".into();
            f.subject = subject.into();
            f.function = "rocblas_internal_gemv_launcher".into();
            f.file = "library/src/blas2/rocblas_gemv_kernels.cpp".into();
            f
        };
        let cross = {
            let mut f = fact(
                FactKind::CrossLibrary,
                &[
                    ("callee_lib", "rocblas"),
                    ("callee_file", "library/src/blas2/rocblas_gemv.cpp"),
                    ("callee_lines", "30-60"),
                ],
                &[],
            );
            f.subject = "rocblas_internal_gemv_template".into();
            f.function = "rocblasCall_gemv".into();
            f.file = "library/src/include/rocblas.hpp".into();
            f
        };
        let af = ApiFacts {
            lib: "rocsolver".into(),
            version: "6.4.3".into(),
            api: "rocsolver_sgebd2".into(),
            family: "gebd2".into(),
            variants: Vec::new(),
            facts: vec![
                own,
                paired(FactKind::Launch, "rocblas_gemvt_kernel"),
                paired(FactKind::RuntimeCall, "hipMemcpyAsync"),
                cross,
            ],
            excluded: Vec::new(),
        };
        let units = units(&af);
        let kernels = units
            .iter()
            .find(|u| u.template.id == KERNELS.id)
            .expect("a kernels entry");
        assert!(kernels.body.contains("`restore_diag`"), "{}", kernels.body);
        assert!(
            !kernels.body.contains("rocblas_gemvt_kernel"),
            "{}",
            kernels.body
        );
        assert!(
            kernels
                .body
                .contains("Beside these, the API's calls into rocblas launch rocblas's kernels,"),
            "{}",
            kernels.body
        );
        assert!(kernels.facts.iter().all(|f| f.lib == "rocsolver"));
        assert!(units.iter().all(|u| u.template.id != RUNTIME_CALLS.id));
    }

    #[test]
    fn variant_forms_say_what_each_form_takes_and_runs_beyond_the_plain_one() {
        let quick = |function: &str, condition: &str, conds: &[&str]| {
            let mut f = fact(
                FactKind::QuickReturn,
                &[
                    ("condition", condition),
                    ("status", "rocblas_status_success"),
                ],
                conds,
            );
            f.function = function.into();
            f
        };
        let launch = |function: &str, conds: &[&str]| {
            let mut f = fact(FactKind::Launch, &[], conds);
            f.function = function.into();
            f
        };
        let plain = form(
            "rocsolver_sgeqrf",
            &[],
            "rocblas_handle handle | const rocblas_int n | float* A | const rocblas_int lda",
            vec![
                quick("geqrf_template", "n == 0", &[]),
                launch("geqrf_template", &[]),
            ],
        );
        let batched = form(
            "rocsolver_sgeqrf_batched",
            &["batched"],
            "rocblas_handle handle | const rocblas_int n | float* const A[] | const rocblas_int lda | const rocblas_int batch_count",
            vec![
                quick("geqrf_template", "n == 0 || batch_count == 0", &[]),
                // A helper only this form's path reaches is not compared.
                quick("check_helper", "batch_count_64 <= 0", &["check"]),
                launch("geqrf_template", &[]),
            ],
        );
        let wide = form(
            "rocsolver_sgeqrf_64",
            &["64"],
            "rocblas_handle handle | const int64_t n | float* A | const int64_t lda",
            vec![
                quick("geqrf_template_64", "n_64 == 0", &[]),
                launch(
                    "geqrf_template_64",
                    &["loop: for (int64_t b = 0; b < bc; b += chunk)"],
                ),
            ],
        );
        let all = [&batched, &wide, &plain];
        let units = variant_units(&all);
        assert_eq!(units.len(), 1);
        let (forms, u) = &units[0];
        let names: Vec<&str> = forms.iter().map(|af| af.api.as_str()).collect();
        assert_eq!(
            names[0], "rocsolver_sgeqrf",
            "the plain form is the reference"
        );
        assert_eq!(u.subject, "rocsolver_sgeqrf");
        let at = "library/include/rocsolver-functions.h:402";
        let body = &u.body;
        assert!(
            body.contains(&format!("- `rocsolver_sgeqrf_batched` ({at}) takes `float* const A[]` for `float* A`, adds `const rocblas_int batch_count` and also returns `rocblas_status_success` early when `batch_count == 0` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:402).")),
            "{body}"
        );
        // `n_64 == 0` is the plain form's `n == 0`: not said again.
        assert!(
            body.contains(&format!("- `rocsolver_sgeqrf_64` ({at}) takes `n` and `lda` as `const int64_t` where `rocsolver_sgeqrf` has `const rocblas_int` and launches its kernels inside the loop `for (int64_t b = 0; b < bc; b += chunk)`, which `rocsolver_sgeqrf`'s launches are not in (in `geqrf_template_64`, library/src/auxiliary/rocauxiliary_bdsqr.hpp:390-420).")),
            "{body}"
        );
        assert!(!body.contains("batch_count_64"), "{body}");
        // With no one form the others extend, nothing is compared.
        let twin = form("rocsolver_sgeqrf_x", &["batched"], "float* A", Vec::new());
        assert!(variant_units(&[&batched, &twin]).is_empty());
    }

    #[test]
    fn a_forms_loops_are_placed_in_the_caller_that_holds_them() {
        // rocblas_gemm_kernels_64.cpp:58-136: the `_64` gemm hands sizes that fit to the
        // 32-bit gemm and runs its chunk loops, around gemm_source_solution_64's
        // launches, otherwise.
        let launch = |function: &str, conds: &[&str]| {
            let mut f = fact(FactKind::Launch, &[], conds);
            f.function = function.into();
            f
        };
        let plain = form(
            "rocsolver_dpotrf",
            &[],
            "rocblas_handle handle | const rocblas_int n | double* A | const rocblas_int lda",
            vec![launch("gemm_source_solution", &[])],
        );
        let chunked = [
            "not (dims_32bit && leading_32bit)",
            "loop: for (int64_t m_base = 0; m_base < m_64; m_base += chunk)",
        ];
        let mut looped = launch("gemm_source_solution_64", &chunked);
        looped.condition_sites.push(crate::model::ConditionSite {
            lib: "rocblas".into(),
            file: "library/src/src64/blas3/rocblas_gemm_kernels_64.cpp".into(),
            function: "rocblas_internal_gemm_64".into(),
            function_lines: (31, 174),
            line: 136,
            conditions: chunked.iter().map(|c| c.to_string()).collect(),
            own_names: Vec::new(),
        });
        let wide = form(
            "rocsolver_dpotrf_64",
            &["64"],
            "rocblas_handle handle | const int64_t n | double* A | const int64_t lda",
            vec![
                looped,
                launch("gemm_source_solution", &["dims_32bit && leading_32bit"]),
            ],
        );
        let units = variant_units(&[&plain, &wide]);
        assert_eq!(units.len(), 1);
        let body = &units[0].1.body;
        assert!(
            body.contains("which `rocsolver_dpotrf`'s launches are not in (in `rocblas_internal_gemm_64`, library/src/src64/blas3/rocblas_gemm_kernels_64.cpp:31-174) when `dims_32bit && leading_32bit` does not hold (its other launches run outside those loops)"),
            "{body}"
        );
    }

    #[test]
    fn calls_of_one_callee_under_one_condition_are_one_sentence() {
        let call = |function: &str, line: u32| {
            let mut f = fact(
                FactKind::CrossLibrary,
                &[
                    ("callee_lib", "rocblas"),
                    ("callee_file", "library/src/blas3/gemm.cpp"),
                    ("callee_lines", "10-20"),
                ],
                &["std::is_same<I, int64_t>::value"],
            );
            f.subject = "rocblas_internal_gemm".into();
            f.function = function.into();
            f.file = "library/src/include/rocblas.hpp".into();
            f.line = line;
            f.end_line = line;
            f
        };
        let (a, b, c) = (
            call("rocblasCall_gemm", 1192),
            call("rocblasCall_gemm", 1239),
            call("gemm_wrap", 7),
        );
        let mut other = call("rocblasCall_gemm", 1300);
        other.conditions.clear();
        let facts = [&a, &b, &c, &other];
        let sentences = cross_library_sentences(&facts);
        assert_eq!(sentences.len(), 2, "{sentences:#?}");
        assert_eq!(
            sentences[0].0,
            "`rocblasCall_gemm` (library/src/include/rocblas.hpp:1192, 1239) and `gemm_wrap` \
             (library/src/include/rocblas.hpp:7) call `rocblas_internal_gemm` of rocblas, defined \
             at library/src/blas3/gemm.cpp:10-20, from 3 sites, only when \
             `std::is_same<I, int64_t>::value`."
        );
        assert_eq!(sentences[0].1.len(), 3);
        // The site without the condition is its own sentence, worded as one fact is.
        assert_eq!(Some(sentences[1].0.clone()), statement(&other));
    }

    #[test]
    fn static_state_says_how_long_it_lives_and_where_else_it_is_named() {
        let at = "library/src/auxiliary/rocauxiliary_bdsqr.hpp:402";
        let per_thread = fact(
            FactKind::StaticState,
            &[
                ("target", "t_size"),
                ("value", "size"),
                ("declared", "static thread_local size_t t_size"),
                ("decl_lines", "67-67"),
                ("uses", "210-213, 300-300"),
            ],
            &[],
        );
        assert_eq!(
            statement(&per_thread).as_deref(),
            Some(&*format!(
                "`bdsqr_init` stores `size` in `t_size` ({at}), declared at namespace scope as \
                 `static thread_local size_t t_size` (rocauxiliary_bdsqr.hpp:67-67): each thread \
                 has its own copy, so the value is seen by later code on the calling thread \
                 only. The file names it again at rocauxiliary_bdsqr.hpp:210-213, \
                 rocauxiliary_bdsqr.hpp:300-300."
            ))
        );
        let shared = fact(
            FactKind::StaticState,
            &[
                ("target", "g"),
                ("value", "1"),
                ("declared", "int g"),
                ("decl_lines", "5-5"),
            ],
            &[],
        );
        assert!(statement(&shared)
            .unwrap()
            .contains("one copy for the whole process, shared by every thread"));
        let once = fact(
            FactKind::StaticState,
            &[
                ("target", "once"),
                ("value", "(abort_once(), 0)"),
                ("declared", "static int once"),
                ("local", "true"),
            ],
            &[],
        );
        assert!(statement(&once).unwrap().starts_with(&format!(
            "`bdsqr_init` initializes the function-local `static int once` with \
             `(abort_once(), 0)` ({at}): a block-scope static is initialized only by the first call"
        )));
        assert!(statement(&once)
            .unwrap()
            .ends_with("runs once per process."));
        // In a function template each instantiation has its own (tensile_host.cpp:482);
        // a thread_local, each thread.
        let mut per_instantiation = once.clone();
        per_instantiation
            .values
            .insert("template".into(), "true".into());
        assert!(statement(&per_instantiation).unwrap().ends_with(
            "runs once of each instantiation of `bdsqr_init` (each set of template arguments \
             has its own copy)."
        ));
        let mut thread_once = once.clone();
        thread_once
            .values
            .insert("declared".into(), "static thread_local int once".into());
        assert!(statement(&thread_once)
            .unwrap()
            .ends_with("initialized by each thread's first call that reaches it, so the initializer runs once per thread."));
        // Without the declaration it reads, the namespace-scope store says nothing.
        let holed = fact(
            FactKind::StaticState,
            &[("target", "g"), ("value", "1"), ("declared", "int g")],
            &[],
        );
        assert_eq!(statement(&holed), None);
    }

    #[test]
    fn launch_bounds_are_stated_as_written_then_as_expanded() {
        let at = "library/src/auxiliary/rocauxiliary_bdsqr.hpp:402";
        let macro_call = fact(
            FactKind::LaunchBounds,
            &[
                ("bounds", "DIM_X"),
                ("value", "256"),
                ("written", "ROCBLAS_KERNEL(DIM_X)"),
            ],
            &[],
        );
        assert_eq!(
            statement(&macro_call).as_deref(),
            Some(&*format!(
                "The kernel is declared with `ROCBLAS_KERNEL(DIM_X)`, which expands to \
                 `__launch_bounds__(DIM_X)`: at most 256 threads per block ({at})."
            ))
        );
        // A named constant: the number is not repeated as a second spelling.
        let named = fact(
            FactKind::LaunchBounds,
            &[
                ("bounds", "1024"),
                ("value", "1024"),
                ("written", "__launch_bounds__(IAMAX_THDS)"),
            ],
            &[],
        );
        assert_eq!(
            statement(&named).as_deref(),
            Some(&*format!(
                "The kernel is declared with `__launch_bounds__(IAMAX_THDS)`, that is at \
                 most 1024 threads per block ({at})."
            ))
        );
        let plain = fact(
            FactKind::LaunchBounds,
            &[("bounds", "64"), ("value", "64")],
            &[],
        );
        assert_eq!(
            statement(&plain).as_deref(),
            Some(&*format!(
                "The kernel is declared with `__launch_bounds__(64)`, that is at most 64 \
                 threads per block ({at})."
            ))
        );
    }

    #[test]
    fn a_fact_missing_a_value_states_nothing() {
        // The two holes answers once had: a cross-library call with no callee, and a
        // runtime call worded as a status check ("returns  if  (...)").
        assert_eq!(statement(&fact(FactKind::CrossLibrary, &[], &[])), None);
        assert_eq!(
            statement(&fact(
                FactKind::QuickReturn,
                &[("status", "rocblas_status_success"), ("condition", " ")],
                &[]
            )),
            None
        );
        let f = fact(
            FactKind::CrossLibrary,
            &[
                ("callee_lib", "rocblas"),
                (
                    "callee_file",
                    "library/include/internal/rocblas-complex-types.h",
                ),
                ("callee_lines", "480-488"),
            ],
            &[],
        );
        assert_eq!(
            statement(&f).as_deref(),
            Some("`bdsqr_init` calls `abs` of rocblas, defined at library/include/internal/rocblas-complex-types.h:480-488 (library/src/auxiliary/rocauxiliary_bdsqr.hpp:402).")
        );
        // A unit of facts that all have holes is no unit at all.
        let holes = [fact(FactKind::Store, &[("value", "0")], &[])];
        let refs: Vec<&Fact> = holes.iter().collect();
        assert!(unit(&STORES, "", &refs, statement).is_empty());
    }

    #[test]
    fn stores_of_one_value_on_neighbouring_lines_are_one_sentence() {
        let store = |line: u32, target: &str, value: &str| Fact {
            line,
            end_line: line,
            ..fact(
                FactKind::Store,
                &[("target", target), ("value", value)],
                &["n == 0"],
            )
        };
        let facts = [
            store(150, "*size_work", "0"),
            store(151, "*size_iwork", "0"),
            store(152, "*size_map", "0"),
            store(160, "*size_work", "sizeof(T) * n"),
        ];
        let refs: Vec<&Fact> = facts.iter().collect();
        let s = store_sentences(&refs);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].0,
            "`bdsqr_init` stores `0` in each of `*size_work`, `*size_iwork` and `*size_map` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:150-152), only when `n == 0`."
        );
        assert_eq!(s[0].1.len(), 3, "each store folded in is cited");
        assert_eq!(s[1].1.len(), 1);
    }

    #[test]
    fn a_runtime_call_under_the_pointer_mode_reads_as_a_runtime_call() {
        let f = Fact {
            subject: "hipMemcpyAsync".into(),
            ..fact(
                FactKind::RuntimeCall,
                &[("direction", "hipMemcpyDeviceToHost")],
                &[
                    "handle->pointer_mode == rocblas_pointer_mode_device",
                    "loop: for (int b = 0; b < batch_count; b++)",
                ],
            )
        };
        let u = unit(&POINTER_MODE, "", &[&f], statement)
            .pop()
            .expect("stated");
        assert_eq!(
            u.body,
            "- `bdsqr_init` calls `hipMemcpyAsync` with `hipMemcpyDeviceToHost` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:402), only when `handle->pointer_mode == rocblas_pointer_mode_device`, inside the loop `for (int b = 0; b < batch_count; b++)`."
        );
    }

    #[test]
    fn an_else_if_chain_and_a_switch_case_read_as_one_clause_each() {
        let (tests, cases) = guard_clauses(&[
            "not (unit_inc && batch_count <= 8192)",
            "not (batch_count > 8192)",
            "switch (transa)",
            "case rocblas_operation_none",
            "not (constexpr BATCHED)",
            "handle->pointer_mode == rocblas_pointer_mode_device",
        ]);
        assert_eq!(
            tests,
            "`batch_count <= 8192` and `handle->pointer_mode == rocblas_pointer_mode_device`, and neither `unit_inc && batch_count <= 8192` nor `BATCHED` holds"
        );
        assert_eq!(
            cases,
            ["in the `case rocblas_operation_none` of `switch (transa)`"]
        );
        assert_eq!(
            guard_clauses(&["not (a)", "b"]).0,
            "`b`, and `a` does not hold"
        );
        assert_eq!(
            guard_clauses(&["not (a)", "not (b)"]).0,
            "neither `a` nor `b` holds"
        );
        assert_eq!(guard_clauses(&["a", "b"]).0, "`a` and `b`");
    }

    #[test]
    fn one_configuration_passed_at_several_sites_is_said_once() {
        crate::facts::eval::add_enumerators(
            "typedef enum rocblas_pointer_mode_ { rocblas_pointer_mode_host = 0, rocblas_pointer_mode_device = 1 } rocblas_pointer_mode;",
        );
        let site = |line: u32, mode: &str, nb: &str| {
            let mut f = fact(
                FactKind::Launch,
                &[
                    ("grid", "dim3(blocks, 1, batches)"),
                    ("grid_locals", "blocks = (m - 1) / NB + 1"),
                    ("block", &format!("dim3(NB) with NB = {nb}")),
                    ("lds", "0 bytes"),
                ],
                &["n > 0", mode],
            );
            f.line = line;
            f.end_line = line;
            f
        };
        let device = "handle->pointer_mode == rocblas_pointer_mode_device";
        let host = "not (handle->pointer_mode == rocblas_pointer_mode_device)";
        let facts = [
            site(10, device, "256"),
            site(20, host, "256"),
            site(30, host, "1024"),
        ];
        let refs: Vec<&Fact> = facts.iter().collect();
        let said = config_sentences(&refs);
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(
            said[0].0,
            "`bdsqr_init` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:10, 20): grid `dim3(blocks, 1, batches)` where `blocks = (m - 1) / NB + 1`, block `dim3(NB)` with `NB` = 256, dynamic LDS 0 bytes, only when `n > 0` (its 2 sites differ in their tests of `handle->pointer_mode`)."
        );
        assert_eq!(said[0].1.len(), 2);
        // One site: its own tests, whole.
        assert!(said[1]
            .0
            .contains("handle->pointer_mode != rocblas_pointer_mode_device"));
        assert!(!said[1].0.contains("differ"));
    }

    #[test]
    fn sibling_launches_an_else_if_chain_picks_among_are_one_sentence() {
        crate::facts::eval::add_enumerators(
            "typedef enum rocblas_operation_ { rocblas_operation_none = 111, rocblas_operation_transpose = 112, rocblas_operation_conjugate_transpose = 113 } rocblas_operation; typedef enum rocblas_fill_ { rocblas_fill_upper = 121, rocblas_fill_lower = 122, rocblas_fill_full = 123 } rocblas_fill;",
        );
        // herk_syrk_device.hpp's chain: each arm skips the ones before it.
        let arms = [
            "(rocblas_operation_transpose == trans) && (rocblas_fill_lower == uplo)",
            "(rocblas_operation_none == trans) && (rocblas_fill_lower == uplo)",
            "(rocblas_operation_transpose == trans) && (rocblas_fill_upper == uplo)",
        ];
        let facts: Vec<Fact> = (0..arms.len())
            .map(|i| {
                let mut conditions = vec!["n % 16 != 0".to_string()];
                conditions.extend(arms[..i].iter().map(|a| format!("not ({a})")));
                conditions.push(arms[i].to_string());
                let mut f = fact(FactKind::Launch, &[], &[]);
                f.conditions = conditions;
                f.line = 997 + 4 * i as u32;
                f.end_line = f.line + 1;
                f
            })
            .collect();
        let mut other = fact(FactKind::Launch, &[], &["n % 16 == 0"]);
        other.subject = "scal".into();
        let refs: Vec<&Fact> = facts.iter().chain([&other]).collect();
        let said = launch_sentences(&refs);
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(said[0].1.len(), 3);
        assert_eq!(
            said[0].0,
            "`bdsqr_init` launches `abs` from 3 sites, one for each value of `trans` and `uplo` it tests, only when `n % 16 != 0`: at library/src/auxiliary/rocauxiliary_bdsqr.hpp:997-998 when `rocblas_operation_transpose == trans` and `rocblas_fill_lower == uplo`; at library/src/auxiliary/rocauxiliary_bdsqr.hpp:1001-1002 when `rocblas_operation_none == trans` and `rocblas_fill_lower == uplo`; at library/src/auxiliary/rocauxiliary_bdsqr.hpp:1005-1006 when `rocblas_operation_transpose == trans` and `rocblas_fill_upper == uplo`."
        );
        // An arm the site's own tests do not settle keeps the site on its own: the
        // `else` of the chain passes no test of its own.
        let mut last = fact(FactKind::Launch, &[], &[]);
        last.conditions = arms.iter().map(|a| format!("not ({a})")).collect();
        let refs: Vec<&Fact> = facts.iter().chain([&last]).collect();
        let said = launch_sentences(&refs);
        assert_eq!(said.len(), 2);
        assert!(said[1].0.contains("none of"), "{}", said[1].0);
    }

    #[test]
    fn launches_a_switch_picks_by_consecutive_cases_are_said_as_a_run() {
        // roclapack_trtri_specialized_kernels.hpp:163-226: `case K: RUN_TRTI2_SMALL(K)`.
        let facts: Vec<Fact> = (1..=4)
            .map(|k| {
                let args = format!("{k}, T");
                let mut f = fact(FactKind::Launch, &[("template_args", args.as_str())], &[]);
                f.conditions = vec!["blk != 0".into(), "switch (n)".into(), format!("case {k}")];
                f.line = 162 + k as u32;
                f.end_line = f.line;
                f
            })
            .collect();
        let refs: Vec<&Fact> = facts.iter().collect();
        let said = launch_sentences(&refs);
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(
            said[0].0,
            "`bdsqr_init` launches `abs` from 4 sites, only when `blk != 0`, one for each `case` of `switch (n)` from `case 1` to `case 4` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:163-166), each instantiating the kernel with its case value as the first template argument."
        );
        // Cases with a gap are not a run: each is its own sentence with its own case.
        let gapped: Vec<&Fact> = [&facts[0], &facts[2], &facts[3]].into_iter().collect();
        let said = launch_sentences(&gapped);
        assert!(said[0].0.contains("`case 1`"), "{said:?}");
        assert!(!said[0].0.contains("from `case 1` to"), "{said:?}");
    }

    #[test]
    fn launches_are_laid_out_by_the_tests_that_tell_them_apart() {
        // rocblas_dot_kernels.hpp:459-637: size, then aliasing, then unit strides.
        let launch = |kernel: &str, line: u32, conds: &[&str]| {
            let mut f = fact(FactKind::Launch, &[], conds);
            f.subject = kernel.into();
            f.function = "rocblas_internal_dot_launcher".into();
            f.line = line;
            f.end_line = line;
            f
        };
        let (small, big, differ, unit) = (
            "n <= single_block_threshold",
            "not (n <= single_block_threshold)",
            "x != y || incx != incy",
            "incx == 1 && incy == 1",
        );
        let facts = [
            launch("inc1by2", 486, &[small, differ, unit]),
            launch("dot", 505, &[small, differ, "not (incx == 1 && incy == 1)"]),
            launch("magsq", 527, &[small, "not (x != y || incx != incy)"]),
            launch("inc1", 575, &[big, differ, unit]),
            launch("dot", 593, &[big, differ, "not (incx == 1 && incy == 1)"]),
            launch("reduce", 630, &[big, "blocks > 1"]),
        ];
        let refs: Vec<&Fact> = facts.iter().collect();
        let said = condition_tree(&refs, &launch_sentences);
        // Two top-level items, each citing the launches under it.
        assert_eq!(said.len(), 2, "{said:#?}");
        assert_eq!(said[0].1.len(), 3);
        assert_eq!(said[1].1.len(), 3);
        let first: Vec<&str> = said[0].0.lines().collect();
        assert_eq!(first[0], "When `n <= single_block_threshold`:");
        // The aliasing test sets one launch apart: said in its sentence, not a heading.
        assert!(first[1].starts_with("  - `rocblas_internal_dot_launcher` launches `inc1by2`"));
        assert!(
            first[1].ends_with("only when `x != y || incx != incy` and `incx == 1 && incy == 1`."),
            "{}",
            first[1]
        );
        assert!(first
            .iter()
            .all(|l| !l.contains("single_block_threshold") || l == &first[0]));
        assert!(
            said[1]
                .0
                .starts_with("Otherwise (`n > single_block_threshold`):"),
            "{}",
            said[1].0
        );
        assert!(said[1].0.contains("`reduce` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:630), only when `blocks > 1`."), "{}", said[1].0);
        // Another function's launches are laid out apart: its `n` is not this one's.
        let mut other = launch("iamax", 90, &[small]);
        other.function = "getf2".into();
        let refs: Vec<&Fact> = facts.iter().chain([&other]).collect();
        let said = condition_tree(&refs, &launch_sentences);
        assert_eq!(said.len(), 3);
        assert!(
            said[2].0.starts_with("`getf2` launches `iamax`"),
            "{}",
            said[2].0
        );
    }

    #[test]
    fn a_negated_plain_test_is_said_positively_and_a_compound_one_stays_negated() {
        assert_eq!(flipped("n <= 0").as_deref(), Some("n > 0"));
        assert_eq!(flipped("mod == 0").as_deref(), Some("mod != 0"));
        assert_eq!(flipped("(m % 64) == 0").as_deref(), Some("(m % 64) != 0"));
        assert_eq!(flipped("!i64_incs").as_deref(), Some("i64_incs"));
        assert_eq!(
            flipped("!handle->is_device_memory_size_query()").as_deref(),
            Some("handle->is_device_memory_size_query()")
        );
        assert_eq!(flipped("!x == y").as_deref(), Some("!x != y"));
        // Two comparisons, a logical operator, a shift, or a bare name: left as they are.
        assert_eq!(flipped("a < b && c"), None);
        assert_eq!(flipped("n > 0 || batch_count > 0"), None);
        assert_eq!(flipped("x << 2 > y"), None);
        assert_eq!(flipped("a == b == c"), None);
        assert_eq!(flipped("BATCHED"), None);
        assert_eq!(flipped("rocblas_gemvt_skinny_n<Ti>(transA, m, n)"), None);
        crate::facts::eval::add_enumerators(
            "typedef enum rocblas_operation_ { rocblas_operation_none = 111, rocblas_operation_transpose = 112, rocblas_operation_conjugate_transpose = 113 } rocblas_operation;",
        );
        assert_eq!(
            guard_clauses(&[
                "not (transA == rocblas_operation_none)",
                "not (rocblas_operation_transpose == transA)",
                "transA == rocblas_operation_conjugate_transpose",
                "not (n == 0)",
            ])
            .0,
            "`transA == rocblas_operation_conjugate_transpose` and `n != 0`"
        );
        assert_eq!(
            guard_clauses(&["not (n <= 0)", "not (uplo == rocblas_fill_upper)"]).0,
            "`n > 0` and `uplo != rocblas_fill_upper`"
        );
    }

    #[test]
    fn only_code_the_slice_holds_as_written_is_a_code_span() {
        // An `else` branch, a switch case and a loop, each as its own clause.
        let f = fact(
            FactKind::Launch,
            &[],
            &[
                "not (constexpr BATCHED)",
                "switch (uplo)",
                "n > 0",
                "loop: for (int b = 0; b < batch_count; b++)",
            ],
        );
        assert_eq!(
            statement(&f).as_deref(),
            Some("`bdsqr_init` launches `abs` (library/src/auxiliary/rocauxiliary_bdsqr.hpp:402), only when `n > 0`, and `BATCHED` does not hold, in a case of `switch (uplo)`, inside the loop `for (int b = 0; b < batch_count; b++)`.")
        );
        // `n_64 <= 0 || !x` is the code's `n_64 <= 0 || batch_count_64 <= 0 || !x` with
        // this API's batch count: a condition derived from the code, not a quote of it.
        let shown = squash(
            "if(n_64 <= 0 || batch_count_64 <= 0 || !x)\n    return rocblas_status_success;",
        );
        assert_eq!(
            spans_as_written(
                "`f` returns `rocblas_status_success` if `n_64 <= 0 || !x` (a.cpp:3).",
                &shown
            ),
            "`f` returns `rocblas_status_success` if n_64 <= 0 || !x (a.cpp:3)."
        );
        assert_eq!(
            spans_as_written("if `n_64 <= 0 || batch_count_64 <= 0 || !x`", &shown),
            "if `n_64 <= 0 || batch_count_64 <= 0 || !x`"
        );
        // Launch arguments: the code in spans, the values read off it plain.
        assert_eq!(
            launch_arg("grid = dim3(m / blk_m, n / blk_n, batches) with blk_m = 64, blk_n = 64"),
            "`grid` = dim3(`m / blk_m, n / blk_n, batches`) with `blk_m` = 64, `blk_n` = 64"
        );
        assert_eq!(launch_arg("dim3(NB)"), "`dim3(NB)`");
    }

    #[test]
    fn a_group_of_several_families_is_named_with_examples_from_each() {
        let apis: Vec<String> = [
            "rocsolver_ssyevdj",
            "rocsolver_dsyevdj",
            "rocsolver_ssygvdj",
        ]
        .map(String::from)
        .to_vec();
        let fams: Vec<String> = ["syevdj", "syevdj", "sygvdj"].map(String::from).to_vec();
        assert_eq!(
            apis_label(&apis, &fams, "syevdj"),
            "rocsolver_ssyevdj (3 APIs of 2 families, e.g. rocsolver_ssygvdj, rocsolver_dsyevdj)"
        );
        let one = ["syevdj"; 3].map(String::from).to_vec();
        assert_eq!(
            apis_label(&apis, &one, "syevdj"),
            "rocsolver_ssyevdj (3 variants of the syevdj family, e.g. rocsolver_dsyevdj, rocsolver_ssygvdj)"
        );
    }
}
