//! The fact check (`contradicts-code`): claims an answer makes about its own API,
//! compared with the facts read off that API's code ([`FactTable`], computed once per
//! run and handed in as plain data).
//!
//! Precision first: a claim is judged only when it is bound to something the facts
//! know, and a right answer must never be rejected. Judged are:
//! - kernels the sentence says this API launches (the API named as the subject, no
//!   negation, no other API named): a kernel of the libraries that no launch of the
//!   API's facts names is a contradiction;
//! - `NAME = N` for a template argument or constant the facts resolved (`NB_X = 8`);
//! - threads per block in a sentence naming a kernel the API launches;
//! - elements of a `__shared__` array in a sentence naming it;
//! - the status returned under a condition on an argument (`n <= 0`, "incx is
//!   negative"): contradicted when an unconditional check whose condition covers the
//!   claimed one returns another status and no check returning the claimed status
//!   overlaps it;
//! - the target a sentence gives for a launch (`on gfx908 rocblas_sger launches
//!   rocblas_ger_kernel`), against the architecture tests its launches need
//!   (`is_gfx90a`, `is_arch_10_or_11_or_12`, `handle->getArch() == 910`), and the enum
//!   value it gives (`when transA is rocblas_operation_none`) against the values of
//!   that argument its launches test;
//! - a barrier, LDS or atomics claimed of one kernel the API launches
//!   (`rocblas_scal_kernel synchronizes the block with __syncthreads`): contradicted
//!   when the device code the API runs has none, so neither the kernel nor a helper it
//!   calls has one; a hedge in the reason given after the claim ("because threads may
//!   write one element") does not hedge the claim;
//! - a host wait (`calls hipDeviceSynchronize`, "blocks until the kernel finishes")
//!   where the host code the facts read makes no synchronizing call, and the default
//!   stream where every launch passes another (`handle->get_stream()`); judged only
//!   for APIs whose facts reach their launches;
//! - the API's prototype: a parameter it lacks (`takes a batch_count argument`), a
//!   parameter's type or pointer-ness (`alpha as a double passed by value`);
//! - more threads per block than any AMD GPU runs.
//!
//! Claims the facts do not cover pass.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use regex::Regex;

use super::checks::MAX_THREADS_PER_BLOCK;
use crate::model::{ApiFacts, Fact, FactCheckCount, FactKind, FactTable};

/// What the fact check found in one answer: the claims compared and the first
/// contradiction, naming the fact and its `file:line`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Claims compared with a fact.
    pub claims: usize,
    /// The first contradiction.
    pub contradiction: Option<String>,
}

impl Verdict {
    /// The count this verdict adds to a run's.
    pub fn count(&self) -> FactCheckCount {
        FactCheckCount {
            answers: 1,
            claims: self.claims,
            contradicted: usize::from(self.contradiction.is_some()),
        }
    }
}

struct Patterns {
    sentence: Regex,
    ident: Regex,
    launch_verb: Regex,
    negation: Regex,
    denial: Regex,
    limit: Regex,
    this_api: Regex,
    constant: Regex,
    threads: Regex,
    elements: Regex,
    indexed: Regex,
    status: Regex,
    code_atom: Regex,
    prose_atom: Regex,
    null_atom: Regex,
    conjunction: Regex,
    condition_word: Regex,
    alternative: Regex,
    barrier: Regex,
    shared: Regex,
    no_lds: Regex,
    atomic: Regex,
    gfx: Regex,
    arch_term: Regex,
    enum_value: Regex,
    enum_term: Regex,
    clause_break: Regex,
    sync_call: Regex,
    sync_prose: Regex,
    addressee: Regex,
    default_stream: Regex,
    handle_stream: Regex,
    not_handle_stream: Regex,
    block_limit: Regex,
    param_named: Regex,
    param_typed: Regex,
    returns_type: Regex,
    arity: Regex,
    role: Regex,
    per_thread: Regex,
    rounds_down: Regex,
    rounds_up: Regex,
    block_count: Regex,
    precision_claim: Regex,
    memory_path: Regex,
    kernel_argument: Regex,
    host_mode: Regex,
    device_mode: Regex,
    passed_pointer: Regex,
    passed_value: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        Patterns {
            sentence: r(r"[.!?;]\s+|\n+"),
            ident: r(r"[A-Za-z_][A-Za-z0-9_]*"),
            launch_verb: r(concat!(
                r"(?i)\b(launch(es|ed)?|dispatch(es|ed)?|enqueues?|picks?|picked|selects?|selected",
                r"|chooses|chosen|switch(es)? to|(?:is|are) (?:used|run|taken))\b"
            )),
            negation: r(concat!(
                r"(?i)\b(not|never|no|nor|neither|none|instead|rather|unlike|except|other|others",
                r"|otherwise|without|whereas|but|compared|similar|similarly|like",
                r"|may|might|could|would|can|cannot|\w+n't)\b"
            )),
            denial: r(r"(?i)\b(not|never|no|nor|neither|none|instead|rather|unlike|except|without|\w+n't)\b"),
            limit: r(r"(?i)\b(max|maximum|at most|up to|limit|limits|hardware|wavefronts?|warps?)\b"),
            this_api: r(r"(?i)\bth(is|e) (api|function|routine|call|entry point)\b"),
            constant: r(
                r"\b([A-Za-z_][A-Za-z0-9_]*)`?\s*(?:=|==|(?:is )?set to|(?:is )?equal to|(?:is )?fixed at|(?:is )?defined as|being|is|equals|of)\s*`?(\d+)\b",
            ),
            threads: r(concat!(
                r"(?i)\b(?:(\d+)\s*(?:threads?\s+(?:per|in each|in a|for each|each)\s+(?:thread)?block",
                r"|-?threads?\s+blocks?)|blocks?\s+(?:size\s+)?of\s+(\d+)\s+threads?",
                r"|block\s*size\s*(?:of|is|=|:)?\s*`?(\d+)\b)"
            )),
            elements: r(concat!(
                r"(?i)\b(?:of|holds?|holding|has|having|with|contains?|containing|stores?|storing",
                r"|sized?|for)\s+(?:\w+\s+){0,2}?(\d+)\s*-?\s*(?:elements?|entries|values|floats",
                r"|doubles|items|slots)\b"
            )),
            indexed: r(r"\b([A-Za-z_]\w*)\s*\[\s*(\d+)\s*\](?:\s*\[\s*(\d+)\s*\])?"),
            status: r(r"\b[a-z]+_status_[a-z_]+\b"),
            code_atom: r(r"(\*?)\b([A-Za-z_]\w*)\s*(<=|>=|==|!=|<|>)\s*(-?\d+)\b"),
            prose_atom: r(concat!(
                r"(?i)\b([A-Za-z_]\w*)`?\s+(?:is|are|equals|becomes)\s+",
                r"(zero|0|negative|positive|non-?positive|not positive|non-?negative",
                r"|less than or equal to (?:zero|0)|less than (?:zero|0|one|1)",
                r"|greater than (?:zero|0)|at most (?:zero|0)|smaller than (?:zero|0|one|1))\b"
            )),
            null_atom: r(concat!(
                r"(?i)(?:!\s*([A-Za-z_]\w*)\b|\b([A-Za-z_]\w*)\s*==\s*(?:nullptr|NULL)\b",
                r"|\b([A-Za-z_]\w*)`?\s+(?:is|are)\s+(?:a\s+)?(?:null|nullptr|NULL)\b)"
            )),
            conjunction: r(r"(?i)&&|\band\b|\bboth\b"),
            condition_word: r(r"(?i)\b(when|whenever|if|only if|provided|for)\b"),
            alternative: r(r"(?i)\|\||\bor\b|\beither\b|\bunless\b|\belse\b"),
            barrier: r(concat!(
                r"(?i)(__syncthreads|__syncwarp|s_barrier|\bbarriers?\b",
                r"|\bsynchroni[sz]\w*\s+(?:all\s+)?(?:the\s+)?(?:threads|block|workgroup|work-group|wavefronts?|lanes)\b)"
            )),
            shared: r(r"(?i)(__shared__|\bLDS\b|\bshared memory\b|\blocal data share\b)"),
            // "LDS = 0", "launches with 0 bytes of shared memory", "no dynamic LDS".
            no_lds: r(concat!(
                r"(?i)\b(LDS|shared memory)\s*(of\s*|=\s*|size\s*(of\s*)?)?0\b",
                r"|\b(0|zero|no)\s*(bytes?\s*(of\s*)?)?(dynamic\s+)?(LDS|shared memory)\b"
            )),
            atomic: r(r"(?i)\batomic\w*"),
            gfx: r(r"(?i)\bgfx(\d{3,4}[a-z]?)\b"),
            enum_value: r(concat!(
                r"\b(rocblas_(?:operation|pointer_mode|fill|side|diagonal|evect|svect|eform",
                r"|erange|esort|workmode|storev|direct|srange))_[a-z_]+\b"
            )),
            enum_term: r(r"^\(?\s*([A-Za-z_][\w.>-]*)\s*(==|!=)\s*(rocblas_[a-z_]+)\s*\)?$"),
            clause_break: r(concat!(
                r"(?i);|\b(because|since|so that|so|as|while|whereas|which|where|although",
                r"|though|unless|if|when|whenever)\b"
            )),
            sync_call: r(concat!(
                r"\bhip(?:(?:Device|Stream|Event)Synchronize|Memcpy\w*|Memset\w*|Malloc\w*",
                r"|HostMalloc|Free\w*)\b"
            )),
            sync_prose: r(concat!(
                r"(?i)\b(?:is|are|runs?)\s+(?:fully\s+|always\s+)?(?:synchronous(?:ly)?|blocking)\b",
                r"|\bblocks\s+(?:the\s+(?:host|caller|cpu|calling thread)\s+)?until\b",
                r"|\bwaits\s+(?:for|until)\s+(?:the\s+|its\s+)?(?:kernels?|gpu|device|stream|launch(?:es)?)\b",
                r"|\bsynchroni[sz]es\s+(?:with\s+)?(?:the\s+)?(?:stream|device|host|gpu)\b"
            )),
            addressee: r(r"(?i)\b(caller|callers|user|users|application|you|your|must|should|needs?)\b"),
            default_stream: r(concat!(
                r"(?i)\b(?:default|null|legacy)\s+(?:hip\s+)?stream\b|\bstream\s+(?:0|zero)\b",
                r"|\bhipStreamDefault\b|\b(?:0|nullptr|NULL)\s+stream\b"
            )),
            handle_stream: r(r"(?i)get_stream|set_stream|handle's stream|stream of the handle|\bunless\b|\botherwise\b"),
            not_handle_stream: r(concat!(
                r"(?i)\b(?:and\s+|but\s+)?not\s+(?:on\s+|in\s+|through\s+)?(?:the\s+)?",
                r"(?:handle's stream|handle->get_stream\(\)|stream of the handle|rocblas_handle's stream)"
            )),
            block_limit: r(concat!(
                r"(?i)\b(?:blocks?|workgroups?|work-groups?)\b[^.;]{0,40}?\b(?:up to|at most|as many as",
                r"|maximum of|max(?:imum)?|limit of)\s+(\d+)\s*threads\b",
                r"|__launch_bounds__\s*\(\s*(\d+)\s*\)"
            )),
            returns_type: r(
                r"(?i)^\s*`?\s*returns\s+(?:an?\s+)?(void|nothing|int|integer|float|double|bool)\b\s*([*]|pointer)?",
            ),
            role: r(concat!(
                r"(?i)\b([A-Za-z_]\w*)`?\s+is\s+(?:a|an|the)\s+(?:plain\s+|simple\s+|small\s+|separate\s+)?",
                r"(__global__|__device__|__host__|global|host|cpu|device|gpu)?\s*",
                r"(kernel|function|helper|routine)\b\s*(\w+)?"
            )),
            per_thread: r(concat!(
                r"(?i)\beach\s+thread\b[^.;]{0,60}?\b(one|a single|two|three|four|eight|sixteen|\d+)",
                r"\s+(?:\w+\s+){0,2}?elements?\b",
                r"|\b(one|two|three|four|eight|sixteen|\d+)\s+(?:\w+\s+){0,2}?elements?",
                r"\s+(?:per|for each|in each|to each)\s+thread\b",
                r"|\b(one)\s+thread\s+per\s+element\b"
            )),
            rounds_down: r(concat!(
                r"(?i)\bfloor(?:ed)?\b|\brounds?\s+down\b|\brounded\s+down\b|\brounding\s+down\b",
                r"|\btruncat\w+\b"
            )),
            rounds_up: r(concat!(
                r"(?i)\bceil(?:ing)?\b|\brounds?\s+up\b|\brounded\s+up\b|\brounding\s+up\b",
                r"|\bround-up\b"
            )),
            block_count: r(r"(?i)\b(blocks?|grid|workgroups?|work-groups?)\b"),
            memory_path: r(concat!(
                r"(?i)__ldg|__constant__|\bconstant\s+(?:memory|cache)\b|\btextures?\b|\btex[123]D",
                r"|\btex1Dfetch|\bread-only\s+(?:data\s+)?cache\b|\bnon-?temporal\b"
            )),
            // Kernel arguments live in a constant segment: not a claim about the code.
            kernel_argument: r(r"(?i)\bargument|\bkernarg|\bby value\b|\bparameter"),
            host_mode: r(r"(?i)\brocblas_pointer_mode_host\b|\bhost\s+pointer\s+mode\b|\bpointer\s+mode\s+(?:is\s+)?host\b"),
            device_mode: r(r"(?i)\brocblas_pointer_mode_device\b|\bdevice\s+pointer\s+mode\b|\bpointer\s+mode\s+(?:is\s+)?device\b"),
            passed_pointer: r(concat!(
                r"(?i)\bpass(?:es|ed)?\s+(?:the\s+|a\s+)?(?:device\s+|raw\s+)?pointer\b",
                r"|\b(?:reads?|loads?|dereferenc\w+)\s+(?:it|\w+)\s+(?:on|from)\s+the\s+(?:gpu|device)\b"
            )),
            passed_value: r(concat!(
                r"(?i)\bby\s+value\b|\bdereferenc\w+\s+(?:\w+\s+)?on\s+the\s+host\b",
                r"|\bpass(?:es|ed)?\s+(?:the\s+)?(?:scalar\s+)?value\b"
            )),
            precision_claim: r(concat!(
                r"(?i)\b(?:for|in|on)\s+(?:the\s+)?((?:complex\s+)?(?:single|double|half|bfloat16|float)",
                r"(?:\s+complex)?|complex)[- ](?:precision|data|inputs?|vectors?|matrices|values",
                r"|types?|arguments|elements|path|case|variant|version)\b"
            )),
            arity: r(r"(?i)^\s*`?\s*(?:takes|has|accepts|expects)\s+(?:exactly\s+)?(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?:arguments|parameters|args)\b"),
            param_named: r(concat!(
                r"(?i)\b(?:takes|has|accepts|receives|expects)\b[^.;]*?\b(?:an?|the|its)\s+(?:extra\s+|additional\s+|separate\s+)?`?([A-Za-z_]\w*)`?\s+(?:argument|parameter)\b",
                r"|\bthe\s+`?([A-Za-z_]\w*)`?\s+(?:argument|parameter)\s+of\s+`?([A-Za-z_]\w*)"
            )),
            param_typed: r(concat!(
                r"(?i)^\s*`?\s*(?:(?:is|as|being)\s+)?(?:passed\s+|given\s+|declared\s+)?(?:as\s+)?(?:an?\s+)?",
                r"((?:(?:const|constant|single|double|half|complex|precision|by|value|device|host|raw|plain|signed|unsigned|passed|32-bit|64-bit|\w+_t|rocblas_\w+|float|int|integer|scalar|pointer|to|an?)\b[\s*]*){1,6})"
            )),
            arch_term: r(concat!(
                r"^(?:is_gfx(\w+)|is_arch_(\d+(?:_or_\d+)*)",
                r"|(?:handle\s*->\s*)?getArch\(\)\s*==\s*(\d+)",
                r"|(?:(?:handle\s*->\s*)?getArchMajor\(\)|arch_major)\s*==\s*(\d+))$"
            )),
        }
    })
}

/// A condition on one argument, by name.
type Atom = (String, Range);

/// A condition on one argument: a value range, or the pointer being null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    Values(i64, i64),
    Null,
}

impl Range {
    fn within(self, o: Range) -> bool {
        match (self, o) {
            (Range::Values(a, b), Range::Values(c, d)) => c <= a && b <= d,
            (Range::Null, Range::Null) => true,
            _ => false,
        }
    }

    fn overlaps(self, o: Range) -> bool {
        match (self, o) {
            (Range::Values(a, b), Range::Values(c, d)) => a <= d && c <= b,
            (Range::Null, Range::Null) => true,
            _ => false,
        }
    }
}

fn range(op: &str, c: i64) -> Option<Range> {
    Some(match op {
        "<=" => Range::Values(i64::MIN, c),
        "<" => Range::Values(i64::MIN, c.checked_sub(1)?),
        "==" => Range::Values(c, c),
        ">=" => Range::Values(c, i64::MAX),
        ">" => Range::Values(c.checked_add(1)?, i64::MAX),
        _ => return None,
    })
}

/// The atoms of a condition the code writes that every execution past it satisfies:
/// those of a conjunction of plain comparisons with a number (`n <= 1024 && batch_count
/// >= 256`), and the complement of a single negated one (`not (n <= 128)`). A
/// comparison inside arithmetic (`m >= 2048 * n`) or a disjunction gives none.
fn necessary_atoms(cond: &str) -> Vec<(String, Range)> {
    let c = cond.trim();
    if c.starts_with("loop:") || c.starts_with("switch") || c.starts_with("case ") {
        return Vec::new();
    }
    if let Some(inner) = c.strip_prefix("not (").and_then(|x| x.strip_suffix(')')) {
        if inner.contains("&&") || inner.contains("||") {
            return Vec::new();
        }
        return match plain_atoms(inner).as_slice() {
            [(v, Range::Values(lo, hi))] if *lo == i64::MIN && *hi < i64::MAX => {
                vec![(v.clone(), Range::Values(hi + 1, i64::MAX))]
            }
            [(v, Range::Values(lo, hi))] if *hi == i64::MAX && *lo > i64::MIN => {
                vec![(v.clone(), Range::Values(i64::MIN, lo - 1))]
            }
            _ => Vec::new(),
        };
    }
    if c.contains("||") || c.starts_with('!') {
        return Vec::new();
    }
    plain_atoms(c)
}

/// Comparisons of a name with a number that stand alone: nothing but `(`, `&&` or the
/// start before the name, nothing but `)`, `&&` or the end after the number.
fn plain_atoms(text: &str) -> Vec<(String, Range)> {
    let mut out = Vec::new();
    for c in patterns().code_atom.captures_iter(text) {
        let (Some(m), Ok(k)) = (c.get(0), c[4].parse::<i64>()) else {
            continue;
        };
        let before = text[..m.start()].trim_end();
        let after = text[m.end()..].trim_start();
        let alone_before = before.is_empty() || before.ends_with('(') || before.ends_with("&&");
        let alone_after = after.is_empty() || after.starts_with(')') || after.starts_with("&&");
        if !c[1].is_empty() || !alone_before || !alone_after {
            continue;
        }
        if let Some(r) = range(&c[3], k) {
            out.push((c[2].to_string(), r));
        }
    }
    out
}

/// The one kernel a sentence about a launch of this API names: a launch verb, no
/// negation or alternative (`or`, `unless`, `else`), a condition word where `condition`
/// asks for one, no other API of the libraries named, and exactly one kernel.
fn launch_subject<'s>(
    s: &'s str,
    apis: &[String],
    table: &FactTable,
    condition: bool,
) -> Option<&'s str> {
    let p = patterns();
    // A reason given after the claim ("so each thread takes every other element") is
    // not part of it.
    let s = reasoned_claim(s);
    if !p.launch_verb.is_match(s)
        || p.negation.is_match(s)
        || p.alternative.is_match(s)
        || (condition && !p.condition_word.is_match(s))
    {
        return None;
    }
    let words: Vec<&str> = p.ident.find_iter(s).map(|m| m.as_str()).collect();
    if words
        .iter()
        .any(|w| table.api_names.contains(*w) && !apis.iter().any(|a| a == w))
    {
        return None;
    }
    let named: BTreeSet<&str> = words
        .iter()
        .copied()
        .filter(|w| table.kernels.contains(*w))
        .collect();
    match named.into_iter().collect::<Vec<_>>()[..] {
        [kernel] => Some(kernel),
        _ => None,
    }
}

/// A condition a sentence gives for the launch of a kernel the API makes (`launches
/// rocblas_dot_batched_4_kernel when n > 1024`): contradicted when every launch of that
/// kernel needs a condition on the same argument that excludes the claimed one. One
/// kernel named, no alternative (`or`, `unless`, `else`), no negation or hedge.
fn launch_conditions(
    s: &str,
    apis: &[String],
    table: &FactTable,
    k: &Known,
    claims: &mut usize,
) -> Option<String> {
    let p = patterns();
    let kernel = launch_subject(s, apis, table, true)?;
    let launches = k.launch_needs.get(kernel)?;
    // The claimed conditions: the sentence's comparisons (`when n > 1024`); a number
    // followed by arithmetic is not one.
    let tail = s;
    let claimed: Vec<(String, Range)> = p
        .code_atom
        .captures_iter(tail)
        .filter_map(|c| {
            let m = c.get(0)?;
            let after = tail[m.end()..].trim_start();
            if !c[1].is_empty() || after.starts_with(['*', '+', '-', '/', '%', '<', '>', '(']) {
                return None;
            }
            Some((c[2].to_string(), range(&c[3], c[4].parse().ok()?)?))
        })
        .collect();
    for (var, r) in claimed {
        let needs: Vec<Vec<(Range, &Fact)>> = launches
            .iter()
            .map(|(f, atoms)| {
                atoms
                    .iter()
                    .filter(|(v, _)| *v == var)
                    .map(|(_, r2)| (*r2, *f))
                    .collect()
            })
            .collect();
        if needs.iter().all(|n| n.is_empty()) {
            continue;
        }
        *claims += 1;
        let excluded: Vec<(Range, &Fact)> = needs
            .iter()
            .filter_map(|n| n.iter().find(|(r2, _)| !r2.overlaps(r)).copied())
            .collect();
        if excluded.len() == launches.len() {
            let (_, f) = excluded[0];
            let api = apis.first().map(String::as_str).unwrap_or("the API");
            return Some(format!(
                "the answer says {api} launches {kernel} under a condition on {var} that no launch of it allows; the launch at {} holds only when {}",
                at(f),
                f.conditions.join(" and ")
            ));
        }
    }
    None
}

/// What a launch's conditions ask of the GPU's architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ArchNeed {
    /// That one target (`90a` for `is_gfx90a`, `handle->getArch() == 910`).
    Is(String),
    /// Not that target (an `else` of `is_gfx90a` alone).
    IsNot(String),
    /// A major version among these (`is_arch_10_or_11_or_12`, `is_gfx11xx`).
    Major(Vec<u32>),
}

/// A target's major version: `gfx90a` is 9, `gfx1030` 10.
fn arch_major(arch: &str) -> Option<u32> {
    let digits: String = arch.chars().take_while(char::is_ascii_digit).collect();
    match digits.len() {
        4.. => digits[..2].parse().ok(),
        1..=3 => digits[..1].parse().ok(),
        _ => None,
    }
}

/// One `&&` term of a condition as an architecture need.
fn arch_need(term: &str) -> Option<ArchNeed> {
    let c = patterns().arch_term.captures(term.trim())?;
    if let Some(g) = c.get(1) {
        let g = g.as_str();
        return Some(match g.strip_suffix("xx") {
            Some(major) => ArchNeed::Major(vec![major.parse().ok()?]),
            None => ArchNeed::Is(g.to_lowercase()),
        });
    }
    if let Some(list) = c.get(2) {
        let majors: Option<Vec<u32>> = list
            .as_str()
            .split("_or_")
            .map(|m| m.parse().ok())
            .collect();
        return Some(ArchNeed::Major(majors?));
    }
    if let Some(n) = c.get(3) {
        // rocBLAS's `getArch()` is the target number, gfx90a being 910.
        let n = n.as_str();
        return Some(ArchNeed::Is(if n == "910" {
            "90a".into()
        } else {
            n.into()
        }));
    }
    c.get(4)
        .and_then(|n| n.as_str().parse().ok())
        .map(|m| ArchNeed::Major(vec![m]))
}

/// The architecture needs every run of a launch satisfies: the terms of a conjunction
/// its conditions write, and the single negated test of an `else`.
fn arch_needs(f: &Fact) -> Vec<ArchNeed> {
    let mut out = Vec::new();
    for c in &f.conditions {
        let c = c.trim();
        if let Some(inner) = c.strip_prefix("not (").and_then(|x| x.strip_suffix(')')) {
            if let Some(ArchNeed::Is(a)) = arch_need(inner) {
                out.push(ArchNeed::IsNot(a));
            }
            continue;
        }
        if c.contains("||") {
            continue;
        }
        out.extend(c.split("&&").filter_map(arch_need));
    }
    out
}

fn arch_allows(need: &ArchNeed, arch: &str) -> bool {
    match need {
        ArchNeed::Is(a) => a == arch,
        ArchNeed::IsNot(a) => a != arch,
        ArchNeed::Major(ms) => arch_major(arch).is_some_and(|m| ms.contains(&m)),
    }
}

/// The target a sentence gives for the launch of one kernel the API makes (`on gfx908
/// rocblas_sger launches rocblas_ger_kernel`): contradicted when every launch of it
/// needs another target. One kernel and one target named, no alternative, no negation.
fn launch_architectures(
    s: &str,
    apis: &[String],
    table: &FactTable,
    k: &Known,
    claims: &mut usize,
) -> Option<String> {
    let p = patterns();
    let kernel = launch_subject(s, apis, table, false)?;
    let targets: BTreeSet<String> = p
        .gfx
        .captures_iter(s)
        .map(|c| c[1].to_lowercase())
        .collect();
    let [arch] = targets.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let launches = k.launched.get(kernel)?;
    let needs: Vec<(&Fact, Vec<ArchNeed>)> = launches.iter().map(|f| (*f, arch_needs(f))).collect();
    if needs.iter().all(|(_, n)| n.is_empty()) {
        return None;
    }
    *claims += 1;
    if needs
        .iter()
        .any(|(_, n)| n.iter().all(|need| arch_allows(need, arch)))
    {
        return None;
    }
    let (f, _) = &needs[0];
    let api = apis.first().map(String::as_str).unwrap_or("the API");
    Some(format!(
        "the answer says {api} launches {kernel} on gfx{arch}; no launch of it runs there: the launch at {} holds only when {}",
        at(f),
        f.conditions.join(" and ")
    ))
}

/// What a launch needs of an argument of enum type: `(variable, value, equal)`.
type EnumNeed = (String, String, bool);

/// What a launch's conditions ask of an argument of enum type: `(variable, value,
/// equal)` for `transA == rocblas_operation_none` (`equal`) or its `else` (not).
fn enum_needs(f: &Fact) -> Vec<EnumNeed> {
    let p = patterns();
    let read = |t: &str| -> Option<(String, String, bool)> {
        let c = p.enum_term.captures(t)?;
        p.enum_value
            .is_match(&c[3])
            .then(|| (c[1].to_string(), c[3].to_string(), &c[2] == "=="))
    };
    let term = |t: &str| -> Option<(String, String, bool)> {
        let t = t.trim();
        read(t).or_else(|| {
            // `rocblas_pointer_mode_device == handle->pointer_mode`, the value first.
            let (a, op, b) = t
                .split_once("==")
                .map(|(a, b)| (a, "==", b))
                .or_else(|| t.split_once("!=").map(|(a, b)| (a, "!=", b)))?;
            read(&format!("{} {op} {}", b.trim(), a.trim()))
        })
    };
    let mut out = Vec::new();
    for c in &f.conditions {
        let c = c.trim();
        if let Some(inner) = c.strip_prefix("not (").and_then(|x| x.strip_suffix(')')) {
            if !inner.contains("&&") && !inner.contains("||") {
                out.extend(term(inner).map(|(v, e, eq)| (v, e, !eq)));
            }
            continue;
        }
        if c.contains("||") {
            continue;
        }
        out.extend(c.split("&&").filter_map(term));
    }
    out
}

/// The enum value a sentence gives as the condition of a launch (`rocblas_sgemv
/// launches rocblas_gemvt_kernel when transA is rocblas_operation_none`): contradicted
/// when every launch of that kernel needs another value of that argument. The argument
/// is the one the sentence names, or the only one of that enum the launches test.
fn launch_enum_values(
    s: &str,
    apis: &[String],
    table: &FactTable,
    k: &Known,
    claims: &mut usize,
) -> Option<String> {
    let p = patterns();
    let kernel = launch_subject(s, apis, table, true)?;
    // Each value with whether the sentence says the argument is it (`== v`, "is v") or
    // is not (`!= v`).
    let values: Vec<(String, String, bool)> = p
        .enum_value
        .captures_iter(s)
        .map(|c| {
            let (at, end) = c.get(0).map_or((0, 0), |m| (m.start(), m.end()));
            // `transA != v` or, the value first, `v != handle->pointer_mode`.
            let equal =
                !(s[..at].trim_end().ends_with("!=") || s[end..].trim_start().starts_with("!="));
            (c[0].to_string(), c[1].to_string(), equal)
        })
        .collect();
    if values.is_empty() {
        return None;
    }
    let words: BTreeSet<&str> = p.ident.find_iter(s).map(|m| m.as_str()).collect();
    let launches = k.launched.get(kernel)?;
    let needs: Vec<(&Fact, Vec<EnumNeed>)> = launches.iter().map(|f| (*f, enum_needs(f))).collect();
    for (value, family, equal) in &values {
        // The argument tested against this enum: named in the sentence, or the only one.
        let vars: BTreeSet<&str> = needs
            .iter()
            .flat_map(|(_, n)| n.iter())
            .filter(|(_, e, _)| e.starts_with(family.as_str()))
            .map(|(v, _, _)| v.as_str())
            .collect();
        let var = match vars
            .iter()
            .filter(|v| words.contains(**v))
            .collect::<Vec<_>>()[..]
        {
            [one] => *one,
            [] if vars.len() == 1 => vars.iter().next().copied()?,
            _ => continue,
        };
        *claims += 1;
        // A launch allows `var == value` unless it needs another value or not this
        // one; it allows `var != value` unless it needs this one.
        let allows = |n: &[EnumNeed]| {
            n.iter()
                .filter(|(v, e, _)| v == var && e.starts_with(family.as_str()))
                .all(|(_, e, eq)| match equal {
                    true => (e == value) == *eq,
                    false => !(e == value && *eq),
                })
        };
        if needs.iter().any(|(_, n)| allows(n)) {
            continue;
        }
        let (f, _) = &needs[0];
        let api = apis.first().map(String::as_str).unwrap_or("the API");
        return Some(format!(
            "the answer says {api} launches {kernel} when {var} {} {value}; no launch of it allows that: the launch at {} holds only when {}",
            if *equal { "is" } else { "is not" },
            at(f),
            f.conditions.join(" and ")
        ));
    }
    None
}

/// The atoms of a condition: `(argument, range)` with their byte spans.
fn atoms_of(text: &str, prose: bool) -> Vec<(usize, String, Range)> {
    let p = patterns();
    let mut out = Vec::new();
    // A member (`handle->n`, `x.size`) or a call is not an argument.
    let member = |from: usize, to: usize| {
        text[..from].ends_with("->")
            || text[..from].ends_with('.')
            || ["->", ".", "(", "["]
                .iter()
                .any(|x| text[to..].trim_start().starts_with(x))
    };
    for c in p.code_atom.captures_iter(text) {
        let (Some(m), Some(v), Ok(k)) = (c.get(0), c.get(2), c[4].parse::<i64>()) else {
            continue;
        };
        if text[..v.start()].ends_with("->") || text[..v.start()].ends_with('.') {
            continue;
        }
        if let Some(r) = range(&c[3], k) {
            // `*alpha == 1` is about the value alpha points to: `*alpha`.
            out.push((m.start(), format!("{}{}", &c[1], &c[2]), r));
        }
    }
    for c in p.null_atom.captures_iter(text) {
        let Some(m) = c.get(0) else { continue };
        let Some(v) = (1..=3).find_map(|i| c.get(i)) else {
            continue;
        };
        // `!n` on an integer means zero, not null: read so where the argument is
        // compared with numbers elsewhere.
        if !member(v.start(), v.end()) {
            out.push((m.start(), v.as_str().to_string(), Range::Null));
        }
    }
    if prose {
        for c in p.prose_atom.captures_iter(text) {
            let Some(m) = c.get(0) else { continue };
            let w = c[2].to_lowercase();
            let r = match w.as_str() {
                "zero" | "0" => Range::Values(0, 0),
                "negative" => Range::Values(i64::MIN, -1),
                "positive" | "greater than zero" | "greater than 0" => Range::Values(1, i64::MAX),
                "non-negative" | "nonnegative" => Range::Values(0, i64::MAX),
                "less than one" | "less than 1" | "smaller than one" | "smaller than 1" => {
                    Range::Values(i64::MIN, 0)
                }
                "less than zero" | "less than 0" | "smaller than zero" | "smaller than 0" => {
                    Range::Values(i64::MIN, -1)
                }
                _ => Range::Values(i64::MIN, 0),
            };
            out.push((m.start(), c[1].to_string(), r));
        }
    }
    out.sort_by_key(|a| a.0);
    out
}

/// A status-returning fact (argument check, quick return, size query), its condition
/// read as atoms.
#[derive(Clone)]
struct StatusFact<'a> {
    fact: &'a Fact,
    status: &'a str,
    atoms: Vec<(String, Range)>,
    /// The atoms of the check and of the conditions around it: a claim overlapping
    /// one of them may describe this return.
    around: Vec<(String, Range)>,
    /// It returns its status whenever one of its atoms holds.
    covers: bool,
}

fn at(f: &Fact) -> String {
    format!("{}:{}", f.file, f.line)
}

/// The facts of one API (or, merged, of an answer's APIs), indexed for the claims.
#[derive(Clone, Default)]
struct Known<'a> {
    launched: BTreeMap<&'a str, Vec<&'a Fact>>,
    /// Per launched kernel, each launch with the conditions on arguments it needs
    /// ([`necessary_atoms`]).
    launch_needs: BTreeMap<&'a str, Vec<(&'a Fact, Vec<Atom>)>>,
    constants: BTreeMap<String, (BTreeSet<i64>, &'a Fact)>,
    unresolved: BTreeSet<String>,
    shared: BTreeMap<&'a str, Vec<&'a Fact>>,
    checks: Vec<StatusFact<'a>>,
    numeric_args: BTreeSet<String>,
    /// Kernels the API's code writes a launch of but the API never makes, with why.
    never: BTreeMap<&'a str, &'a str>,
}

impl<'a> Known<'a> {
    fn new(api: &'a ApiFacts) -> Known<'a> {
        let mut k = Known::default();
        let family = api.family.as_str();
        let ident = &patterns().ident;
        for why in &api.excluded {
            if let Some((name, _)) = why.split_once(" at ") {
                k.never.entry(name).or_insert(why.as_str());
            }
        }
        for f in &api.facts {
            match f.kind {
                FactKind::Launch => {
                    k.launched.entry(f.subject.as_str()).or_default().push(f);
                    let needs = f
                        .conditions
                        .iter()
                        .flat_map(|c| necessary_atoms(c))
                        .collect();
                    k.launch_needs
                        .entry(f.subject.as_str())
                        .or_default()
                        .push((f, needs));
                    for (key, v) in &f.values {
                        if let (Some(name), Ok(x)) = (key.strip_suffix('='), v.parse::<i64>()) {
                            let e = k
                                .constants
                                .entry(name.to_string())
                                .or_insert((BTreeSet::new(), f));
                            e.0.insert(x);
                        }
                    }
                    // Names a launch shows without a value: their values are not known.
                    for key in ["grid", "block", "template_args"] {
                        if let Some(text) = f.values.get(key) {
                            let text = text.split(" with ").next().unwrap_or("");
                            for m in ident.find_iter(text) {
                                if !f.values.contains_key(&format!("{}=", m.as_str())) {
                                    k.unresolved.insert(m.as_str().to_string());
                                }
                            }
                        }
                    }
                }
                FactKind::LaunchBounds => {
                    let b = f.values.get("bounds").map(String::as_str).unwrap_or("");
                    match f.values.get("value").and_then(|v| v.parse::<i64>().ok()) {
                        Some(x) if is_ident(b) => {
                            k.constants
                                .entry(b.to_string())
                                .or_insert((BTreeSet::new(), f))
                                .0
                                .insert(x);
                        }
                        Some(_) => {}
                        None => {
                            for m in ident.find_iter(b) {
                                k.unresolved.insert(m.as_str().to_string());
                            }
                        }
                    }
                }
                FactKind::SharedMemory => {
                    k.shared.entry(f.subject.as_str()).or_default().push(f);
                    if !f.values.contains_key("elements") {
                        let size = f.values.get("size").map(String::as_str).unwrap_or("");
                        for m in ident.find_iter(size) {
                            k.unresolved.insert(m.as_str().to_string());
                        }
                    }
                }
                FactKind::ArgCheck | FactKind::QuickReturn | FactKind::WorkspaceQuery => {
                    let query = f.kind == FactKind::WorkspaceQuery;
                    let cond = if query {
                        ""
                    } else {
                        f.values.get("condition").map(String::as_str).unwrap_or("")
                    };
                    let atoms: Vec<(String, Range)> = atoms_of(cond, false)
                        .into_iter()
                        .map(|(_, n, r)| (n, r))
                        .collect();
                    for (n, r) in &atoms {
                        if matches!(r, Range::Values(..)) {
                            k.numeric_args.insert(n.clone());
                        }
                    }
                    // A check fires whenever one of its `||` terms holds, if nothing
                    // around it in its function guards it. A helper's `n` is its own
                    // argument, not the API's: only functions named for the API's
                    // family are taken to check the API's arguments.
                    let own = !family.is_empty() && f.function.contains(family);
                    let covers = !query
                        && own
                        && !cond.contains("&&")
                        && !cond.contains('?')
                        && f.conditions.is_empty()
                        && !atoms.is_empty();
                    let mut around = atoms.clone();
                    for c in &f.conditions {
                        around.extend(atoms_of(c, false).into_iter().map(|(_, n, r)| (n, r)));
                    }
                    let status = if query { "returns" } else { "status" };
                    k.checks.push(StatusFact {
                        fact: f,
                        status: f.values.get(status).map(String::as_str).unwrap_or(""),
                        atoms,
                        around,
                        covers,
                    });
                }
                _ => {}
            }
        }
        // `!n` on an argument compared with numbers is `n == 0`.
        let numeric = k.numeric_args.clone();
        for c in &mut k.checks {
            for (n, r) in c.atoms.iter_mut().chain(c.around.iter_mut()) {
                if *r == Range::Null && numeric.contains(n) {
                    *r = Range::Values(0, 0);
                }
            }
        }
        // A kernel the API launches is not ruled out by a launch of it it never makes.
        let launched = &k.launched;
        k.never.retain(|n, _| !launched.contains_key(n));
        k
    }

    /// The union of several APIs' facts.
    fn merge(parts: &[&Known<'a>]) -> Known<'a> {
        let mut k = Known::default();
        for p in parts {
            for (n, fs) in &p.launched {
                k.launched.entry(n).or_default().extend(fs);
            }
            for (n, ls) in &p.launch_needs {
                k.launch_needs
                    .entry(n)
                    .or_default()
                    .extend(ls.iter().cloned());
            }
            for (n, (vs, f)) in &p.constants {
                k.constants
                    .entry(n.clone())
                    .or_insert((BTreeSet::new(), f))
                    .0
                    .extend(vs);
            }
            k.unresolved.extend(p.unresolved.iter().cloned());
            for (n, fs) in &p.shared {
                k.shared.entry(n).or_default().extend(fs);
            }
            k.checks.extend(p.checks.iter().cloned());
            k.numeric_args.extend(p.numeric_args.iter().cloned());
            for (n, why) in &p.never {
                k.never.entry(n).or_insert(why);
            }
        }
        // A kernel one of the APIs launches is not ruled out by another's reading.
        let launched: BTreeSet<&str> = k.launched.keys().copied().collect();
        k.never.retain(|n, _| !launched.contains(n));
        k
    }
}

/// The facts of every API of a [`FactTable`], indexed once for the fact check.
pub struct FactIndex<'a> {
    table: &'a FactTable,
    apis: BTreeMap<&'a str, Known<'a>>,
    /// Every parameter name of the libraries' prototypes.
    param_names: BTreeSet<String>,
    /// The union of the facts of each set of APIs [`FactIndex::with_api_sets`] was
    /// given, merged once: the questions of a family share one set.
    merged: HashMap<Vec<&'a str>, Known<'a>>,
}

/// What the device code of the answer's APIs that launch one kernel uses: since an
/// API's device facts cover every kernel it launches and the helpers they call, a
/// feature none of them has is in neither the kernel nor its helpers as they run for
/// those APIs.
#[derive(Clone, Copy)]
struct DeviceUse<'a> {
    barrier: bool,
    shared: bool,
    atomic: bool,
    memory_path: bool,
    /// A launch of the kernel, to name.
    launch: &'a Fact,
}

impl<'a> DeviceUse<'a> {
    /// Over the APIs of `apis` that launch `kernel`; `None` when none does.
    fn of(kernel: &str, apis: &[&'a ApiFacts]) -> Option<DeviceUse<'a>> {
        let mut out: Option<DeviceUse> = None;
        for af in apis {
            let Some(launch) = af
                .facts
                .iter()
                .find(|f| f.kind == FactKind::Launch && f.subject == kernel)
            else {
                continue;
            };
            let has = |k: FactKind| af.facts.iter().any(|f| f.kind == k);
            let dynamic_lds = af.facts.iter().any(|f| {
                f.kind == FactKind::Launch
                    && f.values
                        .get("lds")
                        .is_some_and(|v| !matches!(v.trim(), "0" | "0 bytes"))
            });
            let d = out.get_or_insert(DeviceUse {
                barrier: false,
                shared: false,
                atomic: false,
                memory_path: false,
                launch,
            });
            d.barrier |= has(FactKind::Barrier);
            d.shared |= has(FactKind::SharedMemory) || dynamic_lds;
            d.atomic |= has(FactKind::Atomic);
            d.memory_path |= has(FactKind::MemoryPath);
        }
        out
    }
}

/// A barrier, LDS, atomics or a memory path (constant memory, `__ldg`, textures,
/// nontemporal loads) claimed of the one kernel a sentence names, where none of
/// the answer's APIs launching it (or, for a kernel they do not launch, none of the
/// library's APIs launching it) runs device code with one.
fn device_use(
    s: &str,
    apis: &[&ApiFacts],
    table: &FactTable,
    claims: &mut usize,
) -> Option<String> {
    let p = patterns();
    let named = kernels_named(s, table);
    let [kernel] = named.into_iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    // The claim is the main clause, up to the first reason or condition given for it:
    // a hedge there ("because threads may write the same element") hedges the reason,
    // not the claim.
    let s = main_clause(s);
    if p.negation.is_match(s) || p.alternative.is_match(s) || !s.contains(kernel) {
        return None;
    }
    let said = [
        p.barrier.is_match(s),
        p.shared.is_match(s) && !p.no_lds.is_match(s),
        p.atomic.is_match(s),
        p.memory_path.is_match(s) && !p.kernel_argument.is_match(s),
    ];
    if !said.contains(&true) {
        return None;
    }
    // A kernel the code shows that none of the answer's APIs launches (another API's,
    // shown as context) is judged by the device code of the APIs that do launch it.
    let (d, whose) = match DeviceUse::of(kernel, apis) {
        Some(d) => (d, "its APIs run"),
        None => {
            let launching: Vec<&ApiFacts> = table.apis.values().collect();
            (
                DeviceUse::of(kernel, &launching)?,
                "the APIs launching it run",
            )
        }
    };
    let claimed = [
        (said[0], d.barrier, "a barrier"),
        (said[1], d.shared, "LDS (shared memory)"),
        (said[2], d.atomic, "atomics"),
        (
            said[3],
            d.memory_path,
            "constant memory, __ldg, textures or nontemporal loads",
        ),
    ];
    for (said, has, what) in claimed {
        if !said {
            continue;
        }
        *claims += 1;
        if !has {
            return Some(format!(
                "the answer says {kernel} uses {what}; the device code {whose} (launched at {}) has none",
                at(d.launch)
            ));
        }
    }
    None
}

/// The kernels of the libraries a sentence names, each once.
fn kernels_named<'s>(s: &'s str, table: &FactTable) -> BTreeSet<&'s str> {
    patterns()
        .ident
        .find_iter(s)
        .map(|m| m.as_str())
        .filter(|w| table.kernels.contains(*w))
        .collect()
}

/// A sentence up to its first clause break after the first word (a semicolon, or a
/// word that gives a reason or a condition).
fn main_clause(s: &str) -> &str {
    up_to_first(s, &patterns().clause_break)
}

/// `s` up to the first match of `re` after its leading blanks (all of it if none).
fn up_to_first<'s>(s: &'s str, re: &Regex) -> &'s str {
    let lead = s.len() - s.trim_start().len();
    re.find_iter(s)
        .find(|m| m.start() > lead)
        .map_or(s, |m| &s[..m.start()])
}

/// A sentence up to the first reason given for its claim (`because`, `since`, `so`,
/// `which`, ...): its conditions (`when`, `if`) stay.
fn reasoned_claim(s: &str) -> &str {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?i);|\b(because|since|so that|so|which|while|whereas|although|though)\b")
            .expect("static regex")
    });
    up_to_first(s, re)
}

/// What a function is said to be, against what it is: a kernel the libraries define
/// called a `__device__` helper or a host function, or an API or a function that
/// launches kernels called a kernel or device code.
fn roles(s: &str, apis: &[&ApiFacts], table: &FactTable, claims: &mut usize) -> Option<String> {
    let p = patterns();
    if p.denial.is_match(s) {
        return None;
    }
    for c in p.role.captures_iter(s) {
        let name = &c[1];
        let qualifier = c
            .get(2)
            .map_or(String::new(), |m| m.as_str().to_lowercase());
        let noun = c[3].to_lowercase();
        let next = c
            .get(4)
            .map_or(String::new(), |m| m.as_str().to_lowercase());
        if table.kernels.contains(name) {
            let device_helper =
                qualifier == "__device__" || (qualifier == "device" && noun == "helper");
            let host = matches!(qualifier.as_str(), "host" | "__host__" | "cpu");
            if device_helper || host {
                *claims += 1;
                return Some(format!(
                    "the answer calls {name} a {} {noun}; it is a __global__ kernel the libraries launch",
                    c.get(2).map_or("", |m| m.as_str())
                ));
            }
            continue;
        }
        let launcher = apis
            .iter()
            .flat_map(|a| &a.facts)
            .find(|f| f.kind == FactKind::Launch && f.function == name);
        let is_api = table.api_names.contains(name);
        if !(is_api || launcher.is_some()) {
            continue;
        }
        let kernel_word = noun == "kernel"
            && !matches!(
                next.as_str(),
                "launcher" | "launchers" | "wrapper" | "launch" | "driver"
            );
        let device = matches!(
            qualifier.as_str(),
            "__global__" | "__device__" | "global" | "gpu"
        ) || (qualifier == "device" && noun != "kernel");
        if kernel_word || device {
            *claims += 1;
            let what = match launcher {
                Some(f) => format!("host code that launches {} at {}", f.subject, at(f)),
                None => "a host function of the public API".to_string(),
            };
            return Some(format!(
                "the answer calls {name} a {}{noun}; it is {what}",
                c.get(2)
                    .map_or(String::new(), |m| format!("{} ", m.as_str()))
            ));
        }
    }
    None
}

/// The facts of one kind of all `apis`.
fn facts_of_kind<'a>(apis: &[&'a ApiFacts], kind: FactKind) -> Vec<&'a Fact> {
    apis.iter()
        .flat_map(|a| &a.facts)
        .filter(|f| f.kind == kind)
        .collect()
}

/// Whether the APIs' facts reach their launches: only then is a host call their facts
/// lack known to be absent (an API whose work runs in code the facts do not read, as
/// Tensile's, is not judged).
fn walked(apis: &[&ApiFacts]) -> bool {
    !apis.is_empty()
        && apis
            .iter()
            .all(|a| a.facts.iter().any(|f| f.kind == FactKind::Launch))
}

/// A copy into a buffer, or an allocation, said of a helper the kernels call whose body
/// (every overload the APIs reach) stores nothing and allocates nothing
/// (`load_ptr_batch` "copies x into a temporary buffer"; it returns a pointer).
fn helper_effects(s: &str, apis: &[&ApiFacts], claims: &mut usize) -> Option<String> {
    static RE: OnceLock<[Regex; 2]> = OnceLock::new();
    let [effect, buffer] = RE.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        [
            r(r"(?i)\b(cop(?:y|ies|ying)|stag(?:e|es|ing)|allocat(?:e|es|ing)|writes?|stores?|moves?|transfers?|buffers?)\b"),
            r(r"(?i)\b(?:temporary|temp|scratch|intermediate|staging|separate|new|local|workspace)\s+(?:buffer|array|copy|storage|memory|workspace)\b|\ballocat\w*"),
        ]
    });
    let p = patterns();
    if !buffer.is_match(s) || p.denial.is_match(s) || p.alternative.is_match(s) {
        return None;
    }
    let verb = effect.find(s)?;
    let pure = facts_of_kind(apis, FactKind::StoresNothing);
    let f = p
        .ident
        .find_iter(&s[..verb.start()])
        .filter_map(|m| pure.iter().find(|f| f.subject == m.as_str()))
        .last()?;
    *claims += 1;
    Some(format!(
        "the answer says {} copies or allocates; its body stores nothing and allocates nothing ({}: {})",
        f.subject,
        at(f),
        f.values.get("returns").map(String::as_str).unwrap_or("")
    ))
}

/// Work said to happen when a scalar is zero ("even when alpha is zero the kernel reads
/// every element of x and writes y") where every store of the kernels meant sits behind
/// a nonzero test of that scalar (`if(alpha)`) or returns before them on a zero one:
/// the kernels named, else the kernels the question is about, else every kernel the
/// answer's APIs launch.
fn zero_scalar_work<'a>(
    s: &str,
    apis: &[&'a ApiFacts],
    subject: &[&str],
    table: &'a FactTable,
    claims: &mut usize,
) -> Option<String> {
    static RE: OnceLock<[Regex; 3]> = OnceLock::new();
    let [zero, work, idle] = RE.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        [
            r(r"(?i)\b(?:when|if|with|whenever|for)\s+(?:the\s+)?(alpha|beta)\s+(?:is\s+|equals\s+|==\s*|=\s*)?(?:zero|0(?:\.0*)?f?)\b"),
            r(r"(?i)\b(reads?|writes?|loads?|stores?|updates?|scales?|touch(?:es)?|modif(?:y|ies)|accumulates?|adds?|computes?|performs? the update)\b"),
            // Words that say the work is not done.
            r(r"(?i)\b(nothing|skips?|skipped|returns?|exits?|leaves?|untouched|unchanged|early|nonzero|non-zero)\b"),
        ]
    });
    let p = patterns();
    let c = zero.captures(s)?;
    if !work.is_match(s) || idle.is_match(s) || p.denial.is_match(s) || p.alternative.is_match(s) {
        return None;
    }
    let scalar = c[1].to_ascii_lowercase();
    fn guard<'a>(kernel: &str, scalar: &str, among: &[&'a ApiFacts]) -> Option<&'a Fact> {
        among.iter().flat_map(|af| af.facts.iter()).find(|f| {
            f.kind == FactKind::ScalarGuard
                && f.subject == kernel
                && f.values
                    .get("scalar")
                    .is_some_and(|v| v.eq_ignore_ascii_case(scalar))
        })
    }
    let guard_of = |kernel: &str, among: &[&'a ApiFacts]| guard(kernel, &scalar, among);
    let named = kernels_named(s, table);
    let all: Vec<&ApiFacts> = table.apis.values().collect();
    let named: BTreeSet<&str> = if named.is_empty() {
        subject.iter().copied().collect()
    } else {
        named
    };
    let guards: Vec<&Fact> = if named.is_empty() {
        let launched: BTreeSet<&str> = facts_of_kind(apis, FactKind::Launch)
            .iter()
            .map(|f| f.subject.as_str())
            .collect();
        if launched.is_empty() {
            return None;
        }
        launched
            .iter()
            .map(|k| guard_of(k, apis))
            .collect::<Option<Vec<_>>>()?
    } else {
        named
            .iter()
            .map(|k| guard_of(k, apis).or_else(|| guard_of(k, &all)))
            .collect::<Option<Vec<_>>>()?
    };
    *claims += 1;
    let g = guards.first()?;
    Some(format!(
        "the answer says work is done when {scalar} is zero; every store of {} is behind `{}` ({})",
        g.subject,
        g.values.get("statement").map(String::as_str).unwrap_or(""),
        at(g)
    ))
}

/// A host-side runtime call or wait claimed of the API (`calls hipDeviceSynchronize`,
/// `copies alpha with hipMemcpy`, "blocks until the kernel finishes", "is
/// synchronous"): contradicted when the host code its facts read makes no such call. A
/// named call must be among the runtime calls read (`hipMemcpy` stands for its
/// variants, `hipMemcpyAsync` included); a wait in words needs any synchronizing call
/// (a `Synchronize`, or a `hipMemcpy` that is not `Async`).
fn host_sync(s: &str, apis: &[&ApiFacts], claims: &mut usize) -> Option<String> {
    let p = patterns();
    let named = p.sync_call.find(s).map(|m| m.as_str());
    if (named.is_none() && !p.sync_prose.is_match(s))
        || p.negation.is_match(s)
        || p.alternative.is_match(s)
        || p.addressee.is_match(s)
        || !walked(apis)
    {
        return None;
    }
    let calls = facts_of_kind(apis, FactKind::RuntimeCall);
    let holds = |f: &&Fact| match named {
        Some(n) => f.subject.starts_with(n),
        None => {
            f.subject.contains("Synchronize")
                || (f.subject.starts_with("hipMemcpy") && !f.subject.ends_with("Async"))
        }
    };
    *claims += 1;
    if calls.iter().any(holds) {
        return None;
    }
    let api = &apis[0].api;
    let what = named.map_or("waits for the GPU".to_string(), |n| format!("calls {n}"));
    let made: BTreeSet<&str> = calls.iter().map(|f| f.subject.as_str()).collect();
    Some(if made.is_empty() {
        format!("the answer says {api} {what}; the host code its facts read makes no HIP runtime call: it queues its kernels and returns")
    } else {
        format!(
            "the answer says {api} {what}; the host code its facts read calls only {}",
            made.into_iter().collect::<Vec<_>>().join(", ")
        )
    })
}

/// The default (null) stream claimed for the API's kernels: contradicted when every
/// launch its facts read passes a stream that is not the default one
/// (`handle->get_stream()`).
fn streams(s: &str, apis: &[&ApiFacts], claims: &mut usize) -> Option<String> {
    let p = patterns();
    // "on the null stream, not on the handle's stream" still claims the null stream.
    let kept = p.not_handle_stream.replace_all(s, " ");
    let s = reasoned_claim(&kept);
    if !p.default_stream.is_match(s)
        || p.denial.is_match(s)
        || p.alternative.is_match(s)
        || p.handle_stream.is_match(s)
        || !walked(apis)
    {
        return None;
    }
    let launches = facts_of_kind(apis, FactKind::Launch);
    let stream_of = |f: &Fact| f.values.get("stream").map(|v| v.trim().to_string());
    let on_default = |v: &str| matches!(v, "0" | "nullptr" | "NULL" | "hipStreamDefault" | "");
    *claims += 1;
    let mut given = Vec::new();
    for f in &launches {
        let v = stream_of(f)?;
        if on_default(&v) {
            return None;
        }
        given.push(v);
    }
    given.sort();
    given.dedup();
    let f = launches.first()?;
    Some(format!(
        "the answer says {}'s kernels run on the default stream; every launch its facts read passes {} (e.g. {} at {})",
        apis[0].api,
        given.join(", "),
        f.subject,
        at(f)
    ))
}

/// More threads per block than any AMD GPU runs ([`MAX_THREADS_PER_BLOCK`]), claimed as
/// a block's size or limit.
fn hardware_limits(s: &str, claims: &mut usize) -> Option<String> {
    let p = patterns();
    let said = p
        .threads
        .captures_iter(s)
        .chain(p.block_limit.captures_iter(s))
        .filter_map(|c| {
            (1..c.len())
                .find_map(|i| c.get(i))
                .and_then(|m| m.as_str().parse::<u64>().ok())
        });
    for x in said {
        *claims += 1;
        if x > MAX_THREADS_PER_BLOCK {
            return Some(format!(
                "the answer gives {x} threads per block; no AMD GPU runs more than {MAX_THREADS_PER_BLOCK}"
            ));
        }
    }
    None
}

/// How a launch passes a scalar argument `name`: `Some(true)` for the pointer
/// (`alpha`, `(const T*)alpha`), `Some(false)` for its value (`*alpha`,
/// `load_scalar(alpha)`), `None` when no argument names it or the form is another.
fn passes_pointer(f: &Fact, name: &str) -> Option<bool> {
    f.values
        .get("args")?
        .split(" | ")
        .find_map(|a| crate::facts::scalar_passing(a, name))
}

/// "With rocblas_pointer_mode_host the launcher passes the device pointer alpha"
/// against what the launches under that pointer mode pass for `alpha`: judged when
/// every one of them passes it one way, and the sentence gives one mode and one way.
fn pointer_modes(s: &str, k: &Known, claims: &mut usize) -> Option<String> {
    let p = patterns();
    let claim = reasoned_claim(s);
    let host = match (p.host_mode.is_match(claim), p.device_mode.is_match(claim)) {
        (true, false) => true,
        (false, true) => false,
        _ => return None,
    };
    let said_pointer = match (
        p.passed_pointer.is_match(claim),
        p.passed_value.is_match(claim),
    ) {
        (true, false) => true,
        (false, true) => false,
        _ => return None,
    };
    if p.denial.is_match(claim) {
        return None;
    }
    let mode = |f: &Fact| -> Option<bool> {
        enum_needs(f).into_iter().find_map(|(_, value, eq)| {
            let host_value = match value.as_str() {
                "rocblas_pointer_mode_host" => true,
                "rocblas_pointer_mode_device" => false,
                _ => return None,
            };
            Some(host_value == eq)
        })
    };
    let launches: Vec<&Fact> = launches_named(claim, k)
        .into_iter()
        .filter(|f| mode(f) == Some(host))
        .collect();
    for name in p.ident.find_iter(claim).map(|m| m.as_str()) {
        let ways: Vec<(bool, &Fact)> = launches
            .iter()
            .filter_map(|f| passes_pointer(f, name).map(|w| (w, *f)))
            .collect();
        if ways.is_empty() {
            continue;
        }
        *claims += 1;
        if ways.iter().any(|(w, _)| *w == said_pointer) {
            return None;
        }
        let f = ways[0].1;
        let mode_name = if host { "host" } else { "device" };
        return Some(format!(
            "the answer says in {mode_name} pointer mode {name} is passed as {}; the launch of {} at {} passes `{}`",
            if said_pointer { "a pointer" } else { "its value" },
            f.subject,
            at(f),
            f.values
                .get("args")
                .and_then(|a| a.split(" | ").find(|x| p.ident.find_iter(x).any(|m| m.as_str() == name)))
                .unwrap_or("")
        ));
    }
    None
}

/// A precision a sentence gives one API ("rocblas_sscal launches ... for double
/// precision") against the scalar types of its prototype (`const float* alpha`,
/// `float* x`): judged when the prototype has such types (not a `_ex` API's `void*`).
fn precisions(
    s: &str,
    apis: &[&ApiFacts],
    table: &FactTable,
    claims: &mut usize,
) -> Option<String> {
    const PRECISE: [&str; 4] = ["float", "double", "half", "complex"];
    let p = patterns();
    let c = p.precision_claim.captures(s)?;
    if p.negation.is_match(main_clause(s)) {
        return None;
    }
    let words: BTreeSet<&str> = p.ident.find_iter(s).map(|m| m.as_str()).collect();
    if words
        .iter()
        .any(|w| table.api_names.contains(*w) && !apis.iter().any(|a| a.api == *w))
    {
        return None;
    }
    let named: Vec<&&ApiFacts> = apis
        .iter()
        .filter(|a| words.contains(a.api.as_str()))
        .collect();
    let [api] = named[..] else {
        return None;
    };
    let (decl, params) = prototype(api)?;
    let have: BTreeSet<&str> = params
        .iter()
        .flat_map(|(t, _)| type_kinds(t).0)
        .filter(|k| PRECISE.contains(k))
        .collect();
    let said: BTreeSet<&str> = type_kinds(&c[1])
        .0
        .into_iter()
        .filter(|k| PRECISE.contains(k))
        .collect();
    if have.is_empty() || said.is_empty() {
        return None;
    }
    *claims += 1;
    if said.is_subset(&have) {
        return None;
    }
    let types: Vec<&str> = params.iter().map(|(t, _)| t.as_str()).collect();
    Some(format!(
        "the answer gives {} {} precision; its prototype ({}) takes {}",
        api.api,
        c[1].to_lowercase(),
        at(decl),
        types.join(", ")
    ))
}

/// The parameters of an API's prototype, `(type, name)`, from its declaration fact.
fn prototype(api: &ApiFacts) -> Option<(&Fact, Vec<(String, &str)>)> {
    let f = api.facts.iter().find(|f| f.kind == FactKind::Declaration)?;
    let params = f
        .values
        .get("params")?
        .split(" | ")
        .filter_map(|p| {
            // `float* const x[]`: the name before the brackets, the type with them.
            let p = p.trim();
            let named = p.split('[').next().unwrap_or(p).trim_end();
            let cut = named.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            let name = &named[cut + 1..];
            let ty = if p.len() > named.len() {
                // The brackets make it an array of what precedes the name.
                p[..=cut].trim_end().to_string() + "[]"
            } else {
                p[..=cut].trim_end().to_string()
            };
            (!name.is_empty()).then_some((ty, name))
        })
        .collect();
    Some((f, params))
}

/// What a type's words say of it: base kinds, and whether it is a pointer.
fn type_kinds(t: &str) -> (BTreeSet<&'static str>, bool) {
    let mut kinds = BTreeSet::new();
    let lower = t.to_lowercase();
    for w in lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
        let k: &[&'static str] = match w {
            "float" | "rocblas_float" | "single" => &["float"],
            "double" | "rocblas_double" => &["double"],
            "half" | "rocblas_half" | "rocblas_bfloat16" | "bfloat16" => &["half"],
            "complex" => &["complex"],
            "rocblas_float_complex" => &["complex", "float"],
            "rocblas_double_complex" => &["complex", "double"],
            "int" | "integer" | "rocblas_int" | "int32_t" | "int64_t" | "rocblas_stride"
            | "size_t" | "32-bit" | "64-bit" | "signed" | "unsigned" => &["integer"],
            _ => continue,
        };
        kinds.extend(k);
    }
    // "a double pointer" is a pointer to pointers, not a `double`.
    if lower.contains("double pointer") || lower.contains("double-pointer") {
        kinds.remove("double");
    }
    let pointer =
        t.contains('*') || t.contains('[') || lower.contains("pointer") || lower.contains("array");
    (kinds, pointer)
}

/// A parameter the sentence gives the one API it names that its prototype lacks
/// (`rocblas_sscal takes a batch_count argument`), or a parameter's type stated against
/// the prototype (`alpha as a double passed by value` where it is `const float*`).
/// Only names some API of the libraries has as a parameter, or shaped like one, count as
/// parameter names.
fn parameters(
    s: &str,
    table: &FactTable,
    param_names: &BTreeSet<String>,
    claims: &mut usize,
) -> Option<String> {
    let p = patterns();
    if p.denial.is_match(s) || p.alternative.is_match(s) {
        return None;
    }
    let named: BTreeSet<&str> = p
        .ident
        .find_iter(s)
        .map(|m| m.as_str())
        .filter(|w| table.api_names.contains(*w))
        .collect();
    let [api] = named.into_iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let facts = table.apis.get(api)?;
    let (decl, params) = prototype(facts)?;
    let listed = || {
        params
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for c in p.param_named.captures_iter(s) {
        let Some(name) = c.get(1).or(c.get(2)).map(|m| m.as_str()) else {
            continue;
        };
        // A parameter's name: one some API of the libraries takes, or a name shaped
        // like one (`batch_count`) that is no type of this prototype or the libraries'.
        let shaped = name.contains('_')
            && !name.starts_with("rocblas_")
            && !name.starts_with("rocsolver_")
            && !name.starts_with("hip")
            && !name.ends_with("_t")
            && !params.iter().any(|(t, _)| t.contains(name));
        // The API must be what takes it: `rocblas_sscal takes ...`, not `the launcher,
        // which has ...`.
        let whole = c.get(0).expect("whole match");
        let subject = s[..whole.start()]
            .trim_end()
            .trim_end_matches(|ch: char| ch == '`' || ch.is_whitespace());
        let subject = subject
            .strip_suffix("also")
            .or_else(|| subject.strip_suffix("only"))
            .unwrap_or(subject)
            .trim_end()
            .trim_end_matches('`');
        let of_api = match c.get(3) {
            Some(m) => m.as_str() == api,
            None => subject.ends_with(api),
        };
        if !of_api || !(param_names.contains(name) || shaped) {
            continue;
        }
        *claims += 1;
        if !params.iter().any(|(_, n)| *n == name) {
            return Some(format!(
                "the answer gives {api} a parameter {name}; its prototype ({}) takes {}",
                at(decl),
                listed()
            ));
        }
    }
    let decl_returns = decl.values.get("returns").map(|r| r.trim()).unwrap_or("");
    // What the sentence says right after the API's name: `rocblas_sscal returns void`.
    let after_api = p
        .ident
        .find_iter(s)
        .find(|m| m.as_str() == api)
        .map_or("", |m| &s[m.end()..]);
    if let Some(c) = p
        .returns_type
        .captures(after_api)
        .filter(|c| c.get(2).is_none())
    {
        let said = c[1].to_lowercase();
        let said = if said == "nothing" {
            "void".to_string()
        } else {
            said
        };
        if !decl_returns.is_empty() {
            *claims += 1;
            // "returns a float" of rocblas_sdot is loose talk of its result; a value
            // claimed of a void function, or none of one returning a status, is wrong.
            let wrong = (said == "void") != (decl_returns == "void");
            if wrong {
                return Some(format!(
                    "the answer says {api} returns {said}; its prototype ({}) returns {decl_returns}",
                    at(decl)
                ));
            }
        }
    }
    if let Some(c) = p.arity.captures(after_api) {
        let count = match c[1].to_lowercase().as_str() {
            "one" => Some(1),
            "two" => Some(2),
            "three" => Some(3),
            "four" => Some(4),
            "five" => Some(5),
            "six" => Some(6),
            "seven" => Some(7),
            "eight" => Some(8),
            "nine" => Some(9),
            "ten" => Some(10),
            "eleven" => Some(11),
            "twelve" => Some(12),
            x => x.parse::<usize>().ok(),
        };
        if let Some(n) = count {
            *claims += 1;
            if n != params.len() {
                return Some(format!(
                    "the answer says {api} takes {n} arguments; its prototype ({}) takes {}: {}",
                    at(decl),
                    params.len(),
                    listed()
                ));
            }
        }
    }
    for (ty, name) in &params {
        let Some(m) = p.ident.find_iter(s).find(|m| m.as_str() == *name) else {
            continue;
        };
        let Some(c) = p.param_typed.captures(&s[m.end()..]) else {
            continue;
        };
        let said = &c[1];
        let (claimed, claimed_ptr) = type_kinds(said);
        let by_value = said.to_lowercase().contains("value");
        if claimed.is_empty() && !by_value && !said.to_lowercase().contains("pointer") {
            continue;
        }
        let (has, is_ptr) = type_kinds(ty);
        *claims += 1;
        let kind_wrong = !has.is_empty() && claimed.iter().any(|k| !has.contains(k));
        let ptr_wrong = (by_value && is_ptr) || (claimed_ptr && !is_ptr);
        if kind_wrong || ptr_wrong {
            return Some(format!(
                "the answer says {api}'s {name} is {}; its prototype ({}) declares `{ty} {name}`",
                said.trim(),
                at(decl)
            ));
        }
    }
    None
}

impl<'a> FactIndex<'a> {
    /// Indexes every API's facts.
    pub fn new(table: &'a FactTable) -> FactIndex<'a> {
        FactIndex {
            table,
            apis: table
                .apis
                .iter()
                .map(|(a, f)| (a.as_str(), Known::new(f)))
                .collect(),
            param_names: table
                .apis
                .values()
                .filter_map(prototype)
                .flat_map(|(_, ps)| ps.into_iter().map(|(_, n)| n.to_string()))
                .collect(),
            merged: HashMap::new(),
        }
    }

    /// Merges the facts of each set of several APIs once, for the answers about it to
    /// come (a set not given is merged for each answer).
    pub fn with_api_sets<'s>(mut self, sets: impl IntoIterator<Item = &'s [String]>) -> Self {
        for apis in sets {
            let names = self.known_names(apis);
            if names.len() > 1 && !self.merged.contains_key(&names) {
                let parts: Vec<&Known> = names.iter().map(|a| &self.apis[a]).collect();
                let k = Known::merge(&parts);
                self.merged.insert(names, k);
            }
        }
        self
    }

    /// The APIs of `apis` that have facts, sorted, each once.
    fn known_names(&self, apis: &[String]) -> Vec<&'a str> {
        let mut names: Vec<&'a str> = apis
            .iter()
            .filter_map(|a| self.apis.get_key_value(a.as_str()))
            .map(|(a, _)| *a)
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Compares the claims of `answer` (prose, about `apis`) with their facts. `None` when
/// no API of the answer has facts.
pub fn check(answer: &str, apis: &[String], index: &FactIndex) -> Option<Verdict> {
    check_about(answer, apis, &[], index)
}

/// [`check`], with the kernels the question is about (`subject`): what a sentence says
/// of "the kernel" is said of them.
pub fn check_about(
    answer: &str,
    apis: &[String],
    subject: &[&str],
    index: &FactIndex,
) -> Option<Verdict> {
    let names = index.known_names(apis);
    let table = index.table;
    // One API's facts are read as they are; several are merged, once per set given.
    let merged;
    let known = match names.as_slice() {
        [] => return None,
        [one] => &index.apis[one],
        _ => match index.merged.get(&names) {
            Some(k) => k,
            None => {
                let parts: Vec<&Known> = names.iter().map(|a| &index.apis[a]).collect();
                merged = Known::merge(&parts);
                &merged
            }
        },
    };
    let facts_of: Vec<&ApiFacts> = apis.iter().filter_map(|a| table.apis.get(a)).collect();
    let mut v = Verdict::default();
    let text = answer.replace('`', " ");
    for s in patterns().sentence.split(&text) {
        if super::grounding::speaks_of_own_code(s) {
            continue;
        }
        let found = kernels(s, apis, table, known, &mut v.claims)
            .or_else(|| launch_conditions(s, apis, table, known, &mut v.claims))
            .or_else(|| launch_architectures(s, apis, table, known, &mut v.claims))
            .or_else(|| launch_enum_values(s, apis, table, known, &mut v.claims))
            .or_else(|| device_use(s, &facts_of, table, &mut v.claims))
            .or_else(|| host_sync(s, &facts_of, &mut v.claims))
            .or_else(|| zero_scalar_work(s, &facts_of, subject, table, &mut v.claims))
            .or_else(|| helper_effects(s, &facts_of, &mut v.claims))
            .or_else(|| streams(s, &facts_of, &mut v.claims))
            .or_else(|| parameters(s, table, &index.param_names, &mut v.claims))
            .or_else(|| roles(s, &facts_of, table, &mut v.claims))
            .or_else(|| precisions(s, &facts_of, table, &mut v.claims))
            .or_else(|| pointer_modes(s, known, &mut v.claims));
        // The numbers of a sentence that denies something are not claims.
        let found = if patterns().denial.is_match(s) {
            found
        } else {
            found
                .or_else(|| constants(s, known, &mut v.claims))
                .or_else(|| block_sizes(s, known, &mut v.claims))
                .or_else(|| shared_sizes(s, known, &mut v.claims))
                .or_else(|| statuses(s, known, &mut v.claims))
                .or_else(|| hardware_limits(s, &mut v.claims))
        };
        // How the grid is counted, judged on the claim before its reason ("..., so the
        // tail is never scaled" denies nothing of the claim).
        let claim = reasoned_claim(s);
        let found = if patterns().denial.is_match(claim) {
            found
        } else {
            found
                .or_else(|| work_per_thread(claim, known, &mut v.claims))
                .or_else(|| grid_rounding(claim, known, &mut v.claims))
        };
        if found.is_some() && v.contradiction.is_none() {
            v.contradiction = found;
        }
    }
    Some(v)
}

fn kernels(
    s: &str,
    apis: &[String],
    table: &FactTable,
    k: &Known,
    claims: &mut usize,
) -> Option<String> {
    let p = patterns();
    if k.launched.is_empty() || !p.launch_verb.is_match(s) || p.negation.is_match(s) {
        return None;
    }
    let words: Vec<&str> = p.ident.find_iter(s).map(|m| m.as_str()).collect();
    let names_api = words.iter().any(|w| apis.iter().any(|a| a == w)) || p.this_api.is_match(s);
    let names_other = words
        .iter()
        .any(|w| table.api_names.contains(*w) && !apis.iter().any(|a| a == w));
    if !names_api || names_other {
        return None;
    }
    for w in words {
        if !table.kernels.contains(w) {
            continue;
        }
        *claims += 1;
        let api = apis.first().map(String::as_str).unwrap_or("the API");
        if let (false, Some(why)) = (k.launched.contains_key(w), k.never.get(w)) {
            // Written in its code, but under a condition false for it (or for another
            // precision): the reason is the fact.
            return Some(format!(
                "the answer says {api} launches {w}; it never does: {why}"
            ));
        }
        if !k.launched.contains_key(w) {
            let runs: Vec<String> = k
                .launched
                .iter()
                .map(|(n, fs)| format!("{n} ({})", at(fs[0])))
                .collect();
            return Some(format!(
                "the answer says {api} launches {w}; the facts of its code launch only {}",
                runs.join(", ")
            ));
        }
    }
    None
}

/// Does the text end in a factor of a product (`NB_X x `, `DIM_X * `)?
fn product_before(before: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[A-Za-z_0-9]\s*(?:x|×|\*)\s*`?$").expect("static regex"))
        .is_match(before)
}

fn constants(s: &str, k: &Known, claims: &mut usize) -> Option<String> {
    for c in patterns().constant.captures_iter(s) {
        let name = &c[1];
        // `TRMVN_DIM_X x TRMVN_DIM_Y = 64 x 16` gives a product's factors in order, not
        // the last name the first value.
        let start = c.get(0).map_or(0, |m| m.start());
        if product_before(&s[..start]) {
            continue;
        }
        let Some((values, f)) = k.constants.get(name) else {
            continue;
        };
        if k.unresolved.contains(name) {
            continue;
        }
        let Ok(x) = c[2].parse::<i64>() else { continue };
        *claims += 1;
        if !values.contains(&x) {
            let vs: Vec<String> = values.iter().map(i64::to_string).collect();
            return Some(format!(
                "the answer says {name} = {x}; the code gives {name} = {} ({} fact at {})",
                vs.join(" or "),
                f.kind.label(),
                at(f)
            ));
        }
    }
    None
}

fn block_sizes(s: &str, k: &Known, claims: &mut usize) -> Option<String> {
    let p = patterns();
    let named: Vec<&str> = p
        .ident
        .find_iter(s)
        .map(|m| m.as_str())
        .filter(|w| k.launched.contains_key(w))
        .collect();
    if named.is_empty() || p.limit.is_match(s) {
        return None;
    }
    let launches: Vec<&Fact> = named.iter().flat_map(|n| k.launched[n].clone()).collect();
    // Every launch of the kernels named must have a known block size.
    let mut allowed = BTreeSet::new();
    for f in &launches {
        let dims = f.values.get("block_dims")?;
        allowed.extend(dims.split(", ").filter_map(|d| d.parse::<i64>().ok()));
        allowed.insert(f.values.get("block_threads")?.parse::<i64>().ok()?);
    }
    for c in p.threads.captures_iter(s) {
        let Some(x) = (1..=3)
            .find_map(|i| c.get(i))
            .and_then(|m| m.as_str().parse::<i64>().ok())
        else {
            continue;
        };
        *claims += 1;
        if !allowed.contains(&x) {
            let f = launches[0];
            return Some(format!(
                "the answer gives {x} threads per block for {}; the launch at {} uses block {} ({} threads)",
                f.subject,
                at(f),
                f.values.get("block").map(String::as_str).unwrap_or(""),
                f.values.get("block_threads").map(String::as_str).unwrap_or("")
            ));
        }
    }
    None
}

/// The launches a sentence is about: those of the launched kernels it names, or every
/// launch of its APIs when it names none.
fn launches_named<'a>(s: &str, k: &Known<'a>) -> Vec<&'a Fact> {
    let named: Vec<&Fact> = patterns()
        .ident
        .find_iter(s)
        .filter_map(|m| k.launched.get(m.as_str()))
        .flatten()
        .copied()
        .collect();
    if named.is_empty() {
        k.launched.values().flatten().copied().collect()
    } else {
        named
    }
}

fn number_word(w: &str) -> Option<i64> {
    Some(match w.to_lowercase().as_str() {
        "one" | "a single" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "eight" => 8,
        "sixteen" => 16,
        n => n.parse().ok()?,
    })
}

/// "Each thread scales four elements" against the elements per thread the launch's
/// grid and block give (`(n - 1) / (NB * 2) + 1` blocks of `NB` threads: two). Every
/// launch the sentence is about must give one.
fn work_per_thread(s: &str, k: &Known, claims: &mut usize) -> Option<String> {
    let c = patterns().per_thread.captures(s)?;
    let said = (1..=3)
        .find_map(|i| c.get(i))
        .and_then(|m| number_word(m.as_str()))?;
    let launches = launches_named(s, k);
    let per: Vec<i64> = launches
        .iter()
        .map(|f| f.values.get("elements_per_thread")?.parse().ok())
        .collect::<Option<_>>()?;
    *claims += 1;
    if per.is_empty() || per.contains(&said) {
        return None;
    }
    let f = launches[0];
    Some(format!(
        "the answer says each thread of {} covers {said} element(s); its launch at {} gives {} ({} blocks of {} threads)",
        f.subject,
        at(f),
        per[0],
        f.values.get("grid_x").map(String::as_str).unwrap_or("the grid's x"),
        f.values.get("block_threads").map(String::as_str).unwrap_or("?"),
    ))
}

/// "The block count is a floor division" against how the launches' grids divide:
/// judged when every launch the sentence is about divides, all one way.
fn grid_rounding(s: &str, k: &Known, claims: &mut usize) -> Option<String> {
    let p = patterns();
    if !p.block_count.is_match(s) {
        return None;
    }
    let (down, up) = (p.rounds_down.is_match(s), p.rounds_up.is_match(s));
    if down == up {
        return None;
    }
    let launches = launches_named(s, k);
    let mut ways = BTreeSet::new();
    for f in &launches {
        let r = f.values.get("grid_rounding")?;
        ways.extend(
            r.split(", ")
                .filter_map(|d| d.split_once(": "))
                .map(|(_, w)| w),
        );
    }
    *claims += 1;
    let said = if down { "down" } else { "up" };
    if ways.len() != 1 || ways.contains(said) {
        return None;
    }
    let f = launches[0];
    Some(format!(
        "the answer says the block count of {} rounds {said}; the launch at {} computes {}, rounding {}",
        f.subject,
        at(f),
        f.values.get("grid_x").or(f.values.get("grid")).map(String::as_str).unwrap_or(""),
        ways.iter().next().copied().unwrap_or(""),
    ))
}

/// Do the words before `name[N]` make it a declaration: `__shared__` and a type, or
/// "declared", "sized", "allocated" close before it?
fn declares_size(before: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)(?:__shared__(?:\s+[A-Za-z_][\w:<>,]*)+|\b(?:declar\w*|sized?|allocat\w*|",
            r"holds?|array)(?:\s+(?:as|of|with|a|an|the))*)\s*`?\s*$"
        ))
        .expect("static regex")
    });
    re.is_match(before)
}

fn shared_sizes(s: &str, k: &Known, claims: &mut usize) -> Option<String> {
    let p = patterns();
    let named: BTreeSet<&str> = p
        .ident
        .find_iter(s)
        .map(|m| m.as_str())
        .filter(|w| k.shared.contains_key(w))
        .collect();
    if named.is_empty() {
        return None;
    }
    let arrays: Vec<&Fact> = named.iter().flat_map(|n| k.shared[n].clone()).collect();
    let mut allowed = BTreeSet::new();
    for f in &arrays {
        allowed.insert(f.values.get("elements")?.parse::<i64>().ok()?);
        let dims = f.values.get("dims").map(String::as_str).unwrap_or("");
        allowed.extend(dims.split(", ").filter_map(|d| d.parse::<i64>().ok()));
    }
    let mut claimed = Vec::new();
    for c in p.indexed.captures_iter(s) {
        if !named.contains(&c[1]) {
            continue;
        }
        // `sidx[0]` in "the result lands in sidx[0]" indexes the array; only a
        // declaration (`__shared__ T sidx[256]`, "declared as sidx[256]") gives its size.
        let start = c.get(0).map_or(0, |m| m.start());
        if !declares_size(&s[..start]) {
            continue;
        }
        let a = c[2].parse::<i64>().ok();
        let b = c.get(3).and_then(|m| m.as_str().parse::<i64>().ok());
        if let Some(x) = a.map(|a| a * b.unwrap_or(1)) {
            claimed.push(x);
        }
    }
    for c in p.elements.captures_iter(s) {
        if let Ok(x) = c[1].parse::<i64>() {
            claimed.push(x);
        }
    }
    for x in claimed {
        *claims += 1;
        if !allowed.contains(&x) {
            let f = arrays[0];
            return Some(format!(
                "the answer gives {x} elements for the __shared__ array {}; the code declares {} {}{} ({} elements) at {}",
                f.subject,
                f.values.get("type").map(String::as_str).unwrap_or(""),
                f.subject,
                f.values.get("size").map(String::as_str).unwrap_or(""),
                f.values.get("elements").map(String::as_str).unwrap_or(""),
                at(f)
            ));
        }
    }
    None
}

/// Does the sentence speak of an allocation (or the device memory a call takes)?
fn allocation_failure(s: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\balloc\w*|\bout of (?:device )?memory\b|\bnot enough (?:device )?memory\b",
        )
        .expect("static regex")
    })
    .is_match(s)
}

fn statuses(s: &str, k: &Known, claims: &mut usize) -> Option<String> {
    let p = patterns();
    let said: BTreeSet<&str> = p.status.find_iter(s).map(|m| m.as_str()).collect();
    if said.len() != 1 || k.checks.is_empty() {
        return None;
    }
    let status = *said.iter().next()?;
    // "A failed allocation returns rocblas_status_memory_error": the status of the
    // allocation, not of an argument check, whatever sizes the sentence names.
    if status.ends_with("_memory_error") && allocation_failure(s) {
        return None;
    }
    let mut claimed = atoms_of(s, true);
    for (_, n, r) in &mut claimed {
        if *r == Range::Null && k.numeric_args.contains(n) {
            *r = Range::Values(0, 0);
        }
    }
    claimed.retain(|(_, n, _)| k.checks.iter().any(|c| c.atoms.iter().any(|a| a.0 == *n)));
    if claimed.is_empty() {
        return None;
    }
    // Several conditions joined by "and" are one condition: not judged.
    for w in claimed.windows(2) {
        let between = &s[w[0].0..w[1].0];
        if p.conjunction.is_match(between) {
            return None;
        }
    }
    for (_, name, r) in &claimed {
        *claims += 1;
        let supported = k.checks.iter().any(|c| {
            c.status == status && c.around.iter().any(|(n, x)| n == name && x.overlaps(*r))
        });
        if supported {
            continue;
        }
        let against = k.checks.iter().find(|c| {
            c.covers && c.status != status && c.atoms.iter().any(|(n, x)| n == name && r.within(*x))
        });
        if let Some(c) = against {
            return Some(format!(
                "the answer says {status} under a condition on {name}; the code returns {} when {} ({} in {} at {})",
                c.status,
                c.fact.values.get("condition").map(String::as_str).unwrap_or(""),
                c.fact.kind.label(),
                c.fact.function,
                at(c.fact)
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_with_no_shared_memory_is_no_lds_claim() {
        let p = patterns();
        for s in [
            "The launch passes 0 bytes of shared memory on the handle's stream.",
            "It uses no dynamic LDS.",
            "shared memory = 0",
        ] {
            assert!(p.shared.is_match(s) && p.no_lds.is_match(s), "{s}");
        }
        assert!(!p
            .no_lds
            .is_match("The kernel keeps the partial sums in shared memory."));
    }

    #[test]
    fn architecture_tests_read_as_needs() {
        use ArchNeed::*;
        assert_eq!(arch_need("is_gfx90a"), Some(Is("90a".into())));
        assert_eq!(
            arch_need(" handle->getArch() == 910 "),
            Some(Is("90a".into()))
        );
        assert_eq!(
            arch_need("is_arch_10_or_11_or_12"),
            Some(Major(vec![10, 11, 12]))
        );
        assert_eq!(arch_need("is_gfx11xx"), Some(Major(vec![11])));
        assert_eq!(arch_need("m > 2000"), None);
        assert_eq!((arch_major("90a"), arch_major("1030")), (Some(9), Some(10)));
        let mut f = Fact {
            kind: FactKind::Launch,
            subject: "k".into(),
            function: "f".into(),
            lib: "rocblas".into(),
            file: "a.hpp".into(),
            line: 1,
            end_line: 1,
            function_lines: (1, 2),
            values: Default::default(),
            conditions: vec!["is_gfx90a && m > 2000".into(), "not (is_gfx942)".into()],
            condition_sites: Vec::new(),
            order: Vec::new(),
        };
        assert_eq!(arch_needs(&f), [Is("90a".into()), IsNot("942".into())]);
        // An `else` of a conjunction needs nothing of the target.
        f.conditions = vec!["not (is_gfx90a && m > 2000)".into()];
        assert!(arch_needs(&f).is_empty());
        assert!(
            arch_allows(&Major(vec![10, 11, 12]), "1100") && !arch_allows(&Major(vec![10]), "90a")
        );
    }

    fn fact(kind: FactKind, subject: &str, line: u32, values: &[(&str, &str)]) -> Fact {
        Fact {
            kind,
            subject: subject.into(),
            function: "lib_scal_impl".into(),
            lib: "lib".into(),
            file: "src/scal.hpp".into(),
            line,
            end_line: line,
            function_lines: (1, 100),
            values: values
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            conditions: Vec::new(),
            condition_sites: Vec::new(),
            order: Vec::new(),
        }
    }

    fn table() -> FactTable {
        let facts = vec![
            fact(
                FactKind::Launch,
                "lib_scal_kernel",
                40,
                &[
                    ("block", "threads = dim3(NB) with NB = 256"),
                    ("block_dims", "256"),
                    ("block_threads", "256"),
                    ("grid", "grid = dim3(blocks)"),
                    ("NB=", "256"),
                ],
            ),
            fact(
                FactKind::SharedMemory,
                "sdata",
                12,
                &[
                    ("type", "T"),
                    ("size", "[NB]"),
                    ("elements", "256"),
                    ("dims", "256"),
                ],
            ),
            fact(
                FactKind::QuickReturn,
                "lib_status_success",
                20,
                &[
                    ("status", "lib_status_success"),
                    ("condition", "n <= 0 || incx <= 0"),
                ],
            ),
            fact(
                FactKind::ArgCheck,
                "lib_status_invalid_pointer",
                22,
                &[
                    ("status", "lib_status_invalid_pointer"),
                    ("condition", "!x || !alpha"),
                ],
            ),
        ];
        let mut t = FactTable::default();
        t.apis.insert(
            "lib_sscal".into(),
            ApiFacts {
                lib: "lib".into(),
                version: "1".into(),
                api: "lib_sscal".into(),
                family: "scal".into(),
                variants: vec![],
                facts,
                excluded: vec![],
            },
        );
        t.kernels = ["lib_scal_kernel", "lib_axpy_kernel"]
            .map(String::from)
            .into();
        t.api_names = ["lib_sscal", "lib_saxpy"].map(String::from).into();
        t
    }

    fn judge(answer: &str) -> Verdict {
        let t = table();
        check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t)).expect("the API has facts")
    }

    /// What the fact check says of `answer` with `extra` among `lib_sscal`'s facts, the
    /// question being about the `subject` kernels.
    fn contradiction_with(extra: &Fact, answer: &str, subject: &[&str]) -> Option<String> {
        let mut t = table();
        t.apis
            .get_mut("lib_sscal")
            .unwrap()
            .facts
            .push(extra.clone());
        check_about(
            answer,
            &["lib_sscal".to_string()],
            subject,
            &FactIndex::new(&t),
        )
        .expect("the API has facts")
        .contradiction
    }

    #[test]
    fn a_copy_said_of_a_helper_that_stores_nothing_is_judged() {
        let pure = fact(
            FactKind::StoresNothing,
            "load_ptr_batch",
            30,
            &[("returns", "return p + block * stride")],
        );
        let judge = |answer: &str| contradiction_with(&pure, answer, &[]);
        let why = judge("It calls load_ptr_batch(x, batch, stride), which copies x into a temporary buffer before scaling.").expect("it stores nothing");
        assert!(why.contains("src/scal.hpp:30"), "{why}");
        assert!(judge("load_ptr_batch allocates a scratch array for each batch.").is_some());
        for right in [
            "load_ptr_batch returns the batch's x from the strided base; nothing is copied into a temporary buffer.",
            "It calls load_ptr_batch, then the kernel writes x in place.",
            "The kernel copies x into a temporary buffer, using the pointer from load_ptr_batch.",
        ] {
            assert_eq!(judge(right), None, "{right}");
        }
    }

    #[test]
    fn work_said_of_a_zero_scalar_is_judged_by_the_kernels_guard() {
        let guard = fact(
            FactKind::ScalarGuard,
            "lib_scal_kernel",
            14,
            &[("scalar", "alpha"), ("statement", "if(alpha)")],
        );
        let with_guard =
            |answer: &str, subject: &[&str]| contradiction_with(&guard, answer, subject);
        let wrong = "Even when alpha is zero lib_scal_kernel reads and writes every element of x.";
        let why = with_guard(wrong, &[]).expect("every store is behind if(alpha)");
        assert!(
            why.contains("if(alpha)") && why.contains("src/scal.hpp:14"),
            "{why}"
        );
        // "The kernel": every kernel the API launches, or the one the question names.
        assert!(with_guard("If alpha is 0, the kernel still writes x.", &[]).is_some());
        assert!(with_guard(
            "If alpha is 0, the kernel still writes x.",
            &["lib_scal_kernel"]
        )
        .is_some());
        for right in [
            "When alpha is zero lib_scal_kernel writes nothing.",
            "When alpha is zero lib_scal_kernel does not touch x.",
            "When beta is zero lib_scal_kernel writes x.",
            "lib_scal_kernel writes x when alpha is nonzero.",
        ] {
            assert_eq!(with_guard(right, &[]), None, "{right}");
        }
        // No guard read off the code: nothing to contradict.
        assert_eq!(judge(wrong).contradiction, None);
    }

    #[test]
    fn work_per_thread_and_the_rounding_of_the_block_count_are_judged() {
        let mut t = table();
        let api = t.apis.get_mut("lib_sscal").unwrap();
        for (k, v) in [
            ("grid_x", "blocks = (n - 1) / (NB * 2) + 1"),
            ("grid_rounding", "x: up"),
            ("elements_per_thread", "2"),
            ("elements_of", "n"),
        ] {
            api.facts[0].values.insert(k.into(), v.into());
        }
        let judge =
            |answer: &str| check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t)).unwrap();
        for wrong in [
            "lib_scal_kernel lets each thread scale four neighbouring elements of x.",
            "Each thread handles one element.",
            "The launcher computes the block count as n / NB, a floor division, so the tail is never scaled.",
            "The grid size is rounded down to whole blocks.",
        ] {
            let v = judge(wrong);
            assert!(v.contradiction.is_some(), "{wrong}");
        }
        for right in [
            "lib_scal_kernel gives each thread two elements, so the grid needs half the blocks.",
            "The block count is a ceiling division: a partial last block still runs.",
            "2 elements per thread; the number of blocks rounds up.",
            "Each thread does not handle four elements.",
        ] {
            let v = judge(right);
            assert_eq!(v.contradiction, None, "{right}");
        }
        assert!(judge("Each thread handles two elements; the block count rounds up.").claims >= 2);
    }

    #[test]
    fn launch_conditions_the_code_excludes_are_contradictions() {
        let mut t = table();
        let api = t.apis.get_mut("lib_sscal").unwrap();
        api.facts[0].conditions = vec![
            "n <= 1024 && batch_count >= 256".into(),
            "not (incx <= 0)".into(),
            "m >= 2048 * n".into(),
        ];
        let judge =
            |answer: &str| check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t)).unwrap();
        for wrong in [
            "lib_sscal launches lib_scal_kernel when n > 1024.",
            "It launches lib_scal_kernel only if incx <= 0.",
            "For batch_count < 100, lib_sscal launches lib_scal_kernel.",
        ] {
            let v = judge(wrong);
            let why = v.contradiction.unwrap_or_else(|| panic!("kept: {wrong}"));
            assert!(why.contains("src/scal.hpp:40"), "{why}");
        }
        for right in [
            "lib_sscal launches lib_scal_kernel when n <= 512 and batch_count >= 256.",
            "lib_sscal launches lib_scal_kernel when incx == 1.",
        ] {
            let v = judge(right);
            assert_eq!(v.contradiction, None, "{right}");
            // The kernel named, and at least one condition.
            assert!(v.claims >= 2, "{right}: condition not judged");
        }
        // No condition judged (only the kernel, at most): a comparison inside
        // arithmetic, an alternative, a negation.
        for open in [
            "lib_sscal launches lib_scal_kernel when m >= 100.",
            "lib_sscal launches lib_scal_kernel when n > 1024 or batch_count < 256.",
            "For n > 1024 lib_sscal does not launch lib_scal_kernel.",
        ] {
            let v = judge(open);
            assert_eq!(v.contradiction, None, "{open}");
            assert!(v.claims <= 1, "{open}: {v:?}");
        }
    }

    #[test]
    fn enum_values_and_targets_the_launches_exclude_are_contradictions() {
        let mut t = table();
        let api = t.apis.get_mut("lib_sscal").unwrap();
        api.facts[0].conditions = vec![
            "not (transA == rocblas_operation_none)".into(),
            "transA == rocblas_operation_transpose && is_gfx90a".into(),
            "rocblas_pointer_mode_device == handle->pointer_mode".into(),
        ];
        let judge =
            |answer: &str| check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t)).unwrap();
        for wrong in [
            "lib_sscal launches lib_scal_kernel when transA is rocblas_operation_none.",
            "lib_sscal launches lib_scal_kernel when transA == rocblas_operation_conjugate_transpose.",
            "In rocblas_pointer_mode_host, lib_sscal launches lib_scal_kernel when the scalar is on the host.",
            "On gfx942 lib_sscal launches lib_scal_kernel when transA is rocblas_operation_transpose.",
            "lib_sscal launches lib_scal_kernel when transA != rocblas_operation_transpose.",
            "lib_sscal launches lib_scal_kernel when rocblas_operation_transpose != transA.",
        ] {
            let why = judge(wrong)
                .contradiction
                .unwrap_or_else(|| panic!("kept: {wrong}"));
            assert!(why.contains("src/scal.hpp:40"), "{why}");
        }
        for right in [
            "lib_sscal launches lib_scal_kernel when transA is rocblas_operation_transpose.",
            "lib_sscal launches lib_scal_kernel when `transA != rocblas_operation_none`.",
            "lib_sscal launches lib_scal_kernel when rocblas_operation_none != transA.",
            "On gfx90a lib_sscal launches lib_scal_kernel when alpha is on the device, rocblas_pointer_mode_device.",
        ] {
            let v = judge(right);
            assert_eq!(v.contradiction, None, "{right}");
            assert!(v.claims >= 2, "{right}: not judged");
        }
    }

    #[test]
    fn device_claims_of_another_apis_kernel_are_judged_by_the_apis_launching_it() {
        let mut t = table();
        let axpy = ApiFacts {
            api: "lib_saxpy".into(),
            family: "axpy".into(),
            facts: vec![fact(FactKind::Launch, "lib_axpy_kernel", 70, &[])],
            ..t.apis["lib_sscal"].clone()
        };
        t.apis.insert("lib_saxpy".into(), axpy);
        let judge =
            |answer: &str| check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t)).unwrap();
        let why = judge(
            "lib_axpy_kernel synchronizes its block with __syncthreads before each update of y.",
        )
        .contradiction
        .expect("no API launching lib_axpy_kernel runs a barrier");
        assert!(
            why.contains("the APIs launching it") && why.contains("src/scal.hpp:70"),
            "{why}"
        );
        // LDS: lib_sscal's own kernel has it, lib_saxpy's does not.
        assert!(judge("lib_axpy_kernel stages x in LDS.")
            .contradiction
            .is_some());
        assert_eq!(
            judge("lib_scal_kernel stages x in LDS.").contradiction,
            None
        );
        // A kernel no API of the table launches is not judged.
        t.apis.remove("lib_saxpy");
        let v = check(
            "lib_axpy_kernel synchronizes its block with __syncthreads.",
            &["lib_sscal".to_string()],
            &FactIndex::new(&t),
        )
        .unwrap();
        assert_eq!(v.contradiction, None);
    }

    #[test]
    fn right_claims_pass_and_are_counted() {
        let v = judge(
            "lib_sscal launches lib_scal_kernel with 256 threads per block (NB = 256). \
             The kernel keeps partial values in sdata, an LDS array of 256 elements. \
             When n <= 0 it returns lib_status_success at once. If x is null the call \
             returns lib_status_invalid_pointer.",
        );
        assert_eq!(v.contradiction, None);
        // The kernel, NB, the block size (against the launch and against the
        // hardware's limit), the LDS size and the two statuses.
        assert_eq!(v.claims, 7, "{v:?}");
    }

    /// The fixture with a prototype, the launch's stream and, when `sync`, a host wait.
    fn host_table(sync: bool) -> FactTable {
        let mut t = table();
        let api = t.apis.get_mut("lib_sscal").unwrap();
        api.facts[0]
            .values
            .insert("stream".into(), "handle->get_stream()".into());
        api.facts.push(fact(
            FactKind::Declaration,
            "lib_sscal",
            7,
            &[
                (
                    "params",
                    "lib_handle handle | int n | const float* alpha | float* x | int incx",
                ),
                ("returns", "lib_status"),
            ],
        ));
        api.facts.push(fact(
            FactKind::RuntimeCall,
            if sync {
                "hipStreamSynchronize"
            } else {
                "hipMemsetAsync"
            },
            60,
            &[],
        ));
        t
    }

    #[test]
    fn host_waits_streams_and_prototypes_are_judged() {
        let judge = |t: &FactTable, answer: &str| {
            check(answer, &["lib_sscal".to_string()], &FactIndex::new(t)).unwrap()
        };
        let t = host_table(false);
        for (wrong, names) in [
            ("After the launch lib_sscal calls hipDeviceSynchronize.", "calls only hipMemsetAsync"),
            ("lib_sscal blocks until the kernel has scaled x.", "waits for the GPU"),
            ("The kernels of lib_sscal run on the default stream.", "handle->get_stream()"),
            ("lib_scal_kernel is queued on the null stream, not on the handle's stream, so it serializes.", "src/scal.hpp:40"),
            ("lib_sscal takes alpha as a double passed by value.", "const float* alpha"),
            ("lib_sscal takes x as an integer.", "float* x"),
            ("lib_sscal takes a handle, n, alpha, x, incx and a batch_count argument.", "int incx"),
            ("lib_sscal returns void once the kernel is queued.", "returns lib_status"),
            ("lib_sscal takes six arguments.", "takes 5"),
            ("For host alpha lib_sscal copies it to the device with hipMemcpy.", "calls only hipMemsetAsync"),
        ] {
            let why = judge(&t, wrong)
                .contradiction
                .unwrap_or_else(|| panic!("kept: {wrong}"));
            assert!(why.contains(names), "{wrong}: {why}");
        }
        for right in [
            "lib_sscal does not synchronize: it queues the kernel and returns.",
            "The caller must call hipStreamSynchronize before reading x on the host.",
            "Its kernels run on handle->get_stream(), the default stream unless lib_set_stream was called.",
            "lib_sscal takes alpha as a pointer to a float and x as a float pointer.",
            "lib_sscal takes the handle, n, alpha, x and incx; incx is an int.",
            "lib_sscal forwards n to the launcher, which has a batch_count argument set to 1.",
            "lib_sscal takes five arguments and returns a lib_status.",
            "lib_sscal clears the result with hipMemset first.",
        ] {
            assert_eq!(judge(&t, right).contradiction, None, "{right}");
        }
        // The wait is there when the code makes it.
        let t = host_table(true);
        for right in [
            "lib_sscal calls hipStreamSynchronize after the launch.",
            "lib_sscal blocks until the kernel has scaled x.",
        ] {
            let v = judge(&t, right);
            assert_eq!(v.contradiction, None, "{right}");
            assert!(v.claims >= 1, "{right}");
        }
    }

    #[test]
    fn what_a_pointer_mode_passes_is_judged_by_the_launches_under_it() {
        let mut t = table();
        let api = t.apis.get_mut("lib_sscal").unwrap();
        let mut host = api.facts[0].clone();
        api.facts[0]
            .values
            .insert("args".into(), "n | alpha | x".into());
        api.facts[0].conditions =
            vec!["rocblas_pointer_mode_device == handle->pointer_mode".into()];
        host.values.insert("args".into(), "n | * alpha | x".into());
        host.conditions = vec!["not (rocblas_pointer_mode_device == handle->pointer_mode)".into()];
        host.line = 50;
        api.facts.push(host);
        let judge =
            |answer: &str| check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t)).unwrap();
        for wrong in [
            "With rocblas_pointer_mode_host the launcher passes the device pointer alpha and the kernel reads it on the GPU.",
            "In device pointer mode alpha is passed by value.",
        ] {
            assert!(judge(wrong).contradiction.is_some(), "{wrong}");
        }
        for right in [
            "With rocblas_pointer_mode_host alpha is dereferenced on the host and passed by value.",
            "In device pointer mode the launcher passes the device pointer alpha.",
            // No mode, or both: not judged.
            "The launcher passes the pointer alpha.",
        ] {
            assert_eq!(judge(right).contradiction, None, "{right}");
        }
    }

    #[test]
    fn a_memory_path_the_device_code_lacks_is_a_contradiction() {
        for wrong in [
            "lib_scal_kernel reads x through __ldg.",
            "lib_scal_kernel caches alpha in constant memory.",
        ] {
            assert!(judge(wrong).contradiction.is_some(), "{wrong}");
        }
        // Kernel arguments sit in a constant segment: no claim about the code.
        let v =
            judge("lib_scal_kernel gets alpha as a kernel argument, read from constant memory.");
        assert_eq!(v.contradiction, None);
        let mut t = table();
        let api = t.apis.get_mut("lib_sscal").unwrap();
        api.facts.push(fact(
            FactKind::MemoryPath,
            "lib_scal_kernel",
            14,
            &[("ops", "__ldg")],
        ));
        let v = check(
            "lib_scal_kernel reads x through __ldg.",
            &["lib_sscal".to_string()],
            &FactIndex::new(&t),
        )
        .unwrap();
        assert_eq!((v.contradiction, v.claims), (None, 1));
    }

    #[test]
    fn a_precision_given_to_an_api_is_judged_by_its_prototype() {
        let t = host_table(false);
        let judge =
            |answer: &str| check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t)).unwrap();
        for wrong in [
            "lib_sscal launches lib_scal_kernel for double precision with unit stride.",
            "lib_sscal is the entry point for complex data.",
        ] {
            assert!(judge(wrong).contradiction.is_some(), "{wrong}");
        }
        for right in [
            "lib_sscal launches lib_scal_kernel for single precision.",
            "lib_sscal runs on float vectors.",
            "lib_sscal is not meant for double precision.",
            // Another API named: the precision may be its.
            "lib_sscal scales floats and lib_saxpy is used for double precision.",
        ] {
            assert_eq!(judge(right).contradiction, None, "{right}");
        }
        assert_eq!(
            judge("lib_sscal works for single precision data.").claims,
            1
        );
    }

    #[test]
    fn a_batched_prototype_reads_its_arrays_of_pointers() {
        let mut t = host_table(false);
        let decl = t
            .apis
            .get_mut("lib_sscal")
            .unwrap()
            .facts
            .iter_mut()
            .find(|f| f.kind == FactKind::Declaration)
            .unwrap();
        decl.values.insert(
            "params".into(),
            "lib_handle handle | int n | const float* alpha | float* const x[] | int incx".into(),
        );
        let (_, params) = prototype(&t.apis["lib_sscal"]).unwrap();
        assert_eq!(params[3], ("float* const[]".to_string(), "x"));
        let judge = |answer: &str| {
            check(answer, &["lib_sscal".to_string()], &FactIndex::new(&t))
                .unwrap()
                .contradiction
        };
        for right in [
            "lib_sscal takes x as an array of pointers to float, one per batch instance.",
            "lib_sscal takes x as a double pointer.",
        ] {
            assert_eq!(judge(right), None, "{right}");
        }
        assert!(judge("lib_sscal takes x as a float passed by value.").is_some());
    }

    #[test]
    fn reasons_and_hedges_after_a_claim_do_not_hide_it() {
        // "may" hedges the reason, not the claim.
        let why = judge("lib_scal_kernel updates x with atomicAdd because several threads may write one element.")
            .contradiction
            .expect("no atomics in the device code");
        assert!(why.contains("atomics"), "{why}");
        // A launch chosen under a condition, the reason after it aside.
        let mut t = table();
        t.apis.get_mut("lib_sscal").unwrap().facts[0].conditions = vec!["incx == 1".into()];
        let v = check(
            "The launcher picks lib_scal_kernel when incx == 2, so each thread takes every other element.",
            &["lib_sscal".to_string()],
            &FactIndex::new(&t),
        )
        .unwrap();
        assert!(v.contradiction.is_some(), "{v:?}");
        // A hedge on the claim itself still keeps it from being judged.
        assert_eq!(
            judge("lib_scal_kernel may use atomicAdd when several threads write one element.")
                .contradiction,
            None
        );
    }

    #[test]
    fn more_threads_per_block_than_any_gpu_runs_is_a_contradiction() {
        for wrong in [
            "A block of lib_scal_kernel can have up to 2048 threads.",
            "It runs 4096 threads per block.",
        ] {
            assert!(judge(wrong).contradiction.is_some(), "{wrong}");
        }
        assert_eq!(
            judge("Blocks hold at most 1024 threads on AMD GPUs.").contradiction,
            None
        );
    }

    #[test]
    fn each_planted_contradiction_names_the_fact() {
        for (answer, names) in [
            (
                "lib_sscal launches lib_axpy_kernel over x.",
                "src/scal.hpp:40",
            ),
            ("The launch uses `NB = 128` threads.", "src/scal.hpp:40"),
            ("The grid is built with NB being 512.", "src/scal.hpp:40"),
            (
                "The launcher has NB set to 64 for the block.",
                "src/scal.hpp:40",
            ),
            (
                "lib_scal_kernel runs with 64 threads per block.",
                "src/scal.hpp:40",
            ),
            ("sdata holds 512 elements.", "src/scal.hpp:12"),
            (
                "When n is negative, lib_sscal returns lib_status_invalid_size.",
                "src/scal.hpp:20",
            ),
        ] {
            let v = judge(answer);
            let c = v
                .contradiction
                .unwrap_or_else(|| panic!("not caught: {answer}"));
            assert!(c.contains(names), "{answer}: {c}");
        }
    }

    #[test]
    fn claims_the_facts_do_not_cover_pass() {
        for answer in [
            // Another API is named: the claim may be about it.
            "Unlike lib_saxpy, which launches lib_axpy_kernel, lib_sscal launches lib_scal_kernel.",
            "lib_saxpy launches lib_axpy_kernel.",
            // A name the facts do not resolve, a condition they do not check.
            "DIM_Y = 16 in the kernel.",
            "When batch_count is zero lib_sscal returns lib_status_invalid_size.",
            // Two statuses in one sentence, a conjunction: not bound.
            "n <= 0 gives lib_status_success, otherwise lib_status_invalid_size.",
            "When n <= 0 and incx < 0 it returns lib_status_invalid_size.",
            // A 64-wide wavefront is no block size.
            "Each wavefront of lib_scal_kernel has 64 lanes.",
        ] {
            assert_eq!(judge(answer).contradiction, None, "{answer}");
        }
        let t = table();
        assert!(check("x", &["lib_other".to_string()], &FactIndex::new(&t)).is_none());
    }
}
