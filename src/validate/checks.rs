//! The one ordered list of answer checks, shared by `rocqa extract` and
//! `rocqa validate`: what one keeps, the other keeps.
//!
//! Both paths turn what they hold (a model's reply and the slice it was asked over, or
//! an entry read from a file) into a [`Candidate`] and run [`run_checks`]; the grounding
//! text is the same on both ([`shown_text`]: the slice's lines re-read from the pinned
//! tree). A new check is one function and one line in [`CHECKS`], plus its [`Reason`].

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::model::{Check, Citation, FactCheckCount, Mutation, PieceRef, PieceRole};
use crate::slice::{lines_hash, squash, SliceError, Trees};

use super::grounding::{
    builtin_not_in_kernel, empty_slot, foreign_quote, names_outside_slice, names_something_shown,
    range_elsewhere, range_outside_shown, unknown_files, unknown_identifiers, KnownNames, NameSet,
    ShownPiece,
};

/// Answers shorter than this say nothing.
pub const MIN_ANSWER_CHARS: usize = 40;
/// Answers longer than this ran away.
pub const MAX_ANSWER_CHARS: usize = 6000;
/// Most threads a block may have on any AMD GPU target.
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;

/// Why an answer or entry is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// A line of an entries file is not text, not JSON, or not an entry.
    Unreadable,
    /// An entry breaks `src/emit/entry.schema.json`.
    Schema,
    /// The entry's source is not the pinned source of its library version.
    SourcePin,
    /// A field naming the entry's API, family, template or generator that disagrees
    /// with the library or the templates.
    Provenance,
    /// A second entry with an id already used in the file.
    DuplicateId,
    /// The reply holds no answer object.
    Json,
    /// Too short or too long.
    AnswerLength,
    /// The question asks nothing, or holds an unfilled slot or control characters.
    QuestionForm,
    /// Control characters (ANSI escapes, NUL) in the answer.
    ControlCharacters,
    /// The model's own markup or talk: reasoning tags, chat tokens, "the user wants".
    ModelMarkup,
    /// A code fence or inline code span left open.
    UnbalancedMarkdown,
    /// The answer stops mid-sentence.
    Truncated,
    /// The answer is not in English.
    NotEnglish,
    /// A sentence or run of words repeated in a loop.
    Repetition,
    /// The answer declines to answer.
    Refusal,
    /// The answer repeats the question.
    CopiesQuestion,
    /// A sentence of the answer is missing a value (`defined at :`).
    EmptySlot,
    /// Code was asked for and none came.
    CodePresent,
    /// A library with no pinned tree here.
    UnknownLibrary,
    /// A path leaving the pinned tree.
    PathOutsideTree,
    /// A slice file that cannot be read.
    SliceFileMissing,
    /// A slice piece that no longer reads as it did.
    SliceChanged,
    /// No citations.
    CitationsPresent,
    /// A citation not inside the code shown.
    CitationOutsideSlice,
    /// A citation past the end of its file.
    CitationOutOfRange,
    /// A citation whose text hash does not match.
    CitationTextChanged,
    /// A cited file that cannot be read.
    CitationFileMissing,
    /// A file named in prose that no tree has.
    UnknownFile,
    /// A line range named in prose that is not in the code shown.
    LineRangeOutsideSlice,
    /// A line range named in prose whose lines hold none of what the words before it
    /// name.
    LineRangeElsewhere,
    /// Names used as code that exist nowhere.
    UnknownIdentifiers,
    /// A function or kernel of the library that neither the slice nor the call path
    /// holds.
    NameOutsideSlice,
    /// Prose that names nothing of the code shown.
    Ungrounded,
    /// Code quoted as the library's that the slice does not hold.
    QuoteNotInSlice,
    /// Code of the slice quoted for a path (a precision, a pointer mode, a stride) that
    /// the branches holding it exclude.
    QuoteOffPath,
    /// A name given to a library that defines no such name while another one does.
    WrongLibrary,
    /// A variable of the code shown said to have another type than it is declared with.
    DeclaredType,
    /// An index builtin (`blockIdx.y`) said of a kernel whose code reads it in other
    /// dimensions only.
    BuiltinNotInKernel,
    /// Threads per block beyond what the target runs.
    LaunchBounds,
    /// A barrier in the answer's code that some threads of a block skip.
    DivergentBarrier,
    /// The compile check's screen refused the code.
    CompileScreen,
    /// The compiler front end failed.
    CompileFrontend,
    /// Device code generation failed.
    CompileBackend,
    /// The compile check ran out of time or memory.
    CompileLimit,
    /// Too close to an entry kept already.
    NearDuplicate,
    /// Overlaps a held-out evaluation item.
    Contaminated,
    /// A claim about the API that the facts read off its code contradict.
    ContradictsCode,
    /// A find-the-bug answer that does not name the planted bug's line and its fix.
    BugNotFound,
}

impl Reason {
    /// The kebab-case name written in rejects.
    pub fn as_str(self) -> &'static str {
        use Reason::*;
        match self {
            Unreadable => "unreadable",
            Schema => "schema",
            SourcePin => "source-pin",
            Provenance => "provenance",
            DuplicateId => "duplicate-id",
            Json => "json",
            AnswerLength => "answer-length",
            QuestionForm => "question-form",
            ControlCharacters => "control-characters",
            ModelMarkup => "model-markup",
            UnbalancedMarkdown => "unbalanced-markdown",
            Truncated => "truncated",
            NotEnglish => "not-english",
            Repetition => "repetition",
            Refusal => "refusal",
            CopiesQuestion => "copies-question",
            EmptySlot => "empty-slot",
            CodePresent => "code-present",
            UnknownLibrary => "unknown-library",
            PathOutsideTree => "path-outside-tree",
            SliceFileMissing => "slice-file-missing",
            SliceChanged => "slice-changed",
            CitationsPresent => "citations-present",
            CitationOutsideSlice => "citation-outside-slice",
            CitationOutOfRange => "citation-out-of-range",
            CitationTextChanged => "citation-text-changed",
            CitationFileMissing => "citation-file-missing",
            UnknownFile => "unknown-file",
            LineRangeOutsideSlice => "line-range-outside-slice",
            LineRangeElsewhere => "line-range-elsewhere",
            UnknownIdentifiers => "unknown-identifiers",
            NameOutsideSlice => "name-outside-slice",
            Ungrounded => "ungrounded",
            QuoteNotInSlice => "quote-not-in-slice",
            QuoteOffPath => "quote-off-path",
            WrongLibrary => "wrong-library",
            DeclaredType => "declared-type",
            BuiltinNotInKernel => "builtin-not-in-kernel",
            LaunchBounds => "launch-bounds",
            DivergentBarrier => "divergent-barrier",
            CompileScreen => "compile-screen",
            CompileFrontend => "compile-frontend",
            CompileBackend => "compile-backend",
            CompileLimit => "compile-limit",
            NearDuplicate => "near-duplicate",
            Contaminated => "contaminated",
            ContradictsCode => "contradicts-code",
            BugNotFound => "bug-not-found",
        }
    }

    /// A failure of form only, which a model fixes when told what it was (markup, an
    /// unclosed span, a slot left empty, no answer object, no citations, no code where
    /// code was asked): worth one repair request, unlike a false or ungrounded claim.
    pub fn is_form(self) -> bool {
        use Reason::*;
        matches!(
            self,
            Json | ModelMarkup
                | UnbalancedMarkdown
                | ControlCharacters
                | EmptySlot
                | CitationsPresent
                | CodePresent
        )
    }

    /// The reason for a compile check stage (`screen`, `frontend`, `backend`, `limit`).
    pub fn of_compile_stage(stage: &str) -> Reason {
        match stage {
            "screen" => Reason::CompileScreen,
            "frontend" => Reason::CompileFrontend,
            "backend" => Reason::CompileBackend,
            _ => Reason::CompileLimit,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A citation as claimed: by the model (file maybe a suffix, no library, no hash) or by
/// an entry (library, exact file and hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedCitation {
    /// Library, when the claim names one.
    pub lib: Option<String>,
    /// File, relative to the tree root (or a suffix of it that one slice file has).
    pub file: String,
    /// First line.
    pub start: i64,
    /// Last line.
    pub end: i64,
    /// Hash of the lines, when the claim carries one.
    pub sha256: Option<String>,
}

impl From<&Citation> for ClaimedCitation {
    fn from(c: &Citation) -> Self {
        ClaimedCitation {
            lib: Some(c.lib.clone()),
            file: c.file.clone(),
            start: c.start.into(),
            end: c.end.into(),
            sha256: Some(c.sha256.clone()),
        }
    }
}

/// What the checks look at: the same fields whichever path it came from.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// The library the entry is about, and its pinned version.
    pub lib: &'a str,
    /// The version.
    pub version: &'a str,
    /// The question asked.
    pub question: &'a str,
    /// The question asks for HIP code.
    pub requires_code: bool,
    /// The prose answer.
    pub answer: &'a str,
    /// The answer's code, if any.
    pub code: Option<&'a str>,
    /// Citations as claimed.
    pub citations: &'a [ClaimedCitation],
    /// The code shown.
    pub slice: &'a [PieceRef],
    /// The APIs the answer is about (claims are compared with their facts).
    pub apis: &'a [String],
    /// The definitions along the call graph the entry is about.
    pub call_path: &'a [String],
    /// The bug planted in the code shown (find-the-bug tasks).
    pub mutation: Option<&'a Mutation>,
}

/// What the checks compare against.
#[derive(Clone, Copy)]
pub struct Grounding<'a> {
    /// The pinned trees.
    pub trees: &'a Trees,
    /// Names that exist.
    pub known: &'a KnownNames,
    /// The facts of the run's APIs, when read (the fact check needs them).
    pub facts: Option<&'a super::factcheck::FactIndex<'a>>,
    /// The libraries' public APIs and the templates, which an entry's own fields name.
    pub catalogue: &'a super::provenance::Catalogue,
    /// The code shown of the slices checked last.
    pub shown: &'a ShownCache,
}

/// An answer that passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// Prose answer, trimmed.
    pub answer: String,
    /// HIP code, when there is any.
    pub code: Option<String>,
    /// Citations, resolved and hashed.
    pub citations: Vec<Citation>,
    /// Every check that ran.
    pub checks: Vec<Check>,
    /// Claims compared with the facts.
    pub fact_check: FactCheckCount,
}

/// An answer that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// Why.
    pub reason: Reason,
    /// What was found.
    pub detail: String,
    /// Every check that ran, the failing one last.
    pub checks: Vec<Check>,
    /// Claims compared with the facts (a `contradicts-code` failure counts one
    /// contradicted).
    pub fact_check: FactCheckCount,
}

impl Failed {
    /// A failure before any check of the list ran (parsing, schema).
    pub fn at_start(reason: Reason, detail: String) -> Failed {
        Failed {
            checks: vec![Check {
                name: reason.as_str().into(),
                ok: false,
                detail: detail.clone(),
            }],
            reason,
            detail,
            fact_check: FactCheckCount::default(),
        }
    }

    /// Appends a failing check after `checks` that passed.
    pub fn after(mut checks: Vec<Check>, name: &str, reason: Reason, detail: String) -> Failed {
        checks.push(Check {
            name: name.into(),
            ok: false,
            detail: detail.clone(),
        });
        Failed {
            reason,
            detail,
            checks,
            fact_check: FactCheckCount::default(),
        }
    }
}

/// The code an answer was asked over, as the checks read it: read off the pinned trees
/// and prepared once per slice, for every answer asked over it.
#[derive(Debug, Default)]
pub struct ShownCode {
    /// Each piece's lines, in slice order, a planted bug's changed line after them.
    pub text: String,
    /// Each piece's text, in slice order (the lines of `text`, piece by piece).
    pub pieces: Vec<String>,
    /// The identifiers of `text`.
    pub names: NameSet,
    /// `text` without whitespace, for quotes, made when first asked for.
    squashed: OnceLock<String>,
}

impl ShownCode {
    /// `text` without whitespace ([`squash`]).
    pub fn squashed(&self) -> &str {
        self.squashed.get_or_init(|| squash(&self.text))
    }
}

/// The code shown of the slices checked last, by what they show: answers over one
/// slice come close together, so a few dozen are kept and the rest read again.
#[derive(Debug, Default)]
pub struct ShownCache {
    slices: Mutex<HashMap<String, Arc<ShownCode>>>,
}

/// Slices [`ShownCache`] keeps.
const SHOWN_CACHED: usize = 64;

impl ShownCache {
    /// The code `slice` shows (with `mutation`'s changed line), read off `trees` unless
    /// read already. A piece that no longer reads as it did is refused, each time.
    fn get(
        &self,
        slice: &[PieceRef],
        mutation: Option<&Mutation>,
        trees: &Trees,
    ) -> Result<Arc<ShownCode>, (Reason, String)> {
        let mut key = String::new();
        for p in slice {
            key.push_str(&format!(
                "{}\0{}\0{}\0{}\0{}\0{}\n",
                p.lib,
                p.file,
                p.start,
                p.end,
                p.sha256,
                p.expansion.as_deref().unwrap_or("")
            ));
        }
        if let Some(m) = mutation {
            key.push_str(&m.mutated);
        }
        let cached = |c: &Self| {
            c.slices
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&key)
                .cloned()
        };
        if let Some(code) = cached(self) {
            return Ok(code);
        }
        let pieces = piece_texts(slice, trees)?;
        let mut text: String = pieces.iter().map(|t| format!("{t}\n")).collect();
        // The expansions the prompt showed under their pieces were read too.
        for x in slice.iter().filter_map(|p| p.expansion.as_deref()) {
            text.push_str(x);
            text.push('\n');
        }
        if let Some(m) = mutation {
            // The prompt showed the changed line: quoting it is quoting the slice.
            text.push_str(&m.mutated);
            text.push('\n');
        }
        let code = Arc::new(ShownCode {
            names: NameSet::of(&text),
            text,
            pieces,
            squashed: OnceLock::new(),
        });
        let mut slices = self
            .slices
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slices.len() >= SHOWN_CACHED {
            slices.clear();
        }
        slices.insert(key, code.clone());
        Ok(code)
    }
}

/// What earlier checks found for later ones.
#[derive(Debug, Default)]
pub struct Found {
    /// The code shown.
    pub shown: Arc<ShownCode>,
    /// Citations resolved and hashed.
    pub citations: Vec<Citation>,
    /// Claims compared with the facts.
    pub fact_check: FactCheckCount,
}

/// One check: passes with a detail (`None`: does not apply to this answer), or fails
/// with its reason.
pub type CheckFn =
    fn(&Candidate, &Grounding, &mut Found) -> Result<Option<String>, (Reason, String)>;

/// The checks, in order; the first failure rejects.
pub const CHECKS: &[(&str, CheckFn)] = &[
    ("question-form", question_form),
    ("answer-length", answer_length),
    // A refusal is named as one, though it talks about the excerpt it was shown.
    ("refusal", not_refusal),
    ("well-formed", well_formed),
    ("copies-question", not_copy),
    ("empty-slot", no_empty_slot),
    ("code-present", code_present),
    ("launch-bounds", launch_bounds),
    ("slice-in-tree", slice_in_tree),
    // After the code shown is read: a barrier under a test the library's own kernel
    // has is the library's.
    ("divergent-barrier", barriers_uniform),
    ("citations-resolve", citations_resolve),
    ("files-exist", files_exist),
    ("identifiers-exist", identifiers_exist),
    ("library-right", libraries_right),
    ("quotes-from-slice", quotes_from_slice),
    ("quote-on-its-path", quote_on_its_path),
    ("builtins-in-kernel", builtins_in_kernel),
    ("declared-type", types_as_declared),
    ("bug-found", bug_found),
    ("contradicts-code", agrees_with_facts),
    // After the fact check, so a kernel of another API is named with the fact it breaks.
    ("names-in-slice", names_in_slice),
];

/// Runs [`CHECKS`] in order.
pub fn run_checks(c: &Candidate, g: &Grounding) -> Result<Validated, Failed> {
    let mut found = Found::default();
    let mut checks = Vec::new();
    for (name, check) in CHECKS {
        match check(c, g, &mut found) {
            Ok(Some(detail)) => checks.push(Check {
                name: (*name).into(),
                ok: true,
                detail,
            }),
            Ok(None) => {}
            Err((reason, detail)) => {
                let mut f = Failed::after(checks, name, reason, detail);
                f.fact_check = found.fact_check;
                return Err(f);
            }
        }
    }
    Ok(Validated {
        answer: c.answer.trim().to_string(),
        code: c
            .code
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        citations: found.citations,
        checks,
        fact_check: found.fact_check,
    })
}

type Outcome = Result<Option<String>, (Reason, String)>;

fn answer_length(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    let n = c.answer.trim().chars().count();
    if !(MIN_ANSWER_CHARS..=MAX_ANSWER_CHARS).contains(&n) {
        return Err((
            Reason::AnswerLength,
            format!("{n} characters, outside {MIN_ANSWER_CHARS}..={MAX_ANSWER_CHARS}"),
        ));
    }
    Ok(Some(format!("{n} characters")))
}

fn question_form(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    match super::form::question_defect(c.question) {
        Some(why) => Err((Reason::QuestionForm, why)),
        None => Ok(Some(String::new())),
    }
}

fn well_formed(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    match super::form::answer_defect(c.answer) {
        Some(failed) => Err(failed),
        None => Ok(Some(String::new())),
    }
}

fn refusal_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(i('m| am) (sorry|unable|not able)|i can(no|')t (help|answer|assist|determine|tell|say)",
            r"|as an ai\b|i do not have access|cannot be determined from|unfortunately\b",
            r"|(does|do) not (include|contain|show|provide|give) (enough|sufficient)",
            r"|(not|insufficient) (enough )?(information|context|detail)s? (to|is|are)",
            r"|(i|we) (would )?need (to see )?more (code|context|information)",
            r"|it is not possible to (determine|say|tell|answer))"
        ))
        .expect("static regex")
    })
}

/// The phrase that makes an answer a refusal, if any.
pub fn refusal_in(text: &str) -> Option<String> {
    refusal_re().find(text).map(|m| m.as_str().to_string())
}

fn not_refusal(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    match refusal_in(c.answer) {
        Some(m) => Err((Reason::Refusal, format!("the answer declines: \"{m}\""))),
        None => Ok(Some(String::new())),
    }
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn not_copy(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    let (a, q) = (words(c.answer), words(c.question));
    let qs: std::collections::HashSet<&str> = q.iter().map(String::as_str).collect();
    let joined = |w: &[String]| w.join(" ");
    let contains = q.len() >= 5 && joined(&a).contains(&joined(&q));
    // Mostly the question's own words, and not much more of them: a restatement.
    let from_q = a.iter().filter(|w| qs.contains(w.as_str())).count();
    let restates = !a.is_empty() && from_q * 10 >= a.len() * 9 && a.len() <= q.len() * 3 / 2;
    if a == q || contains || restates {
        return Err((
            Reason::CopiesQuestion,
            "the answer repeats the question".into(),
        ));
    }
    Ok(Some(String::new()))
}

fn no_empty_slot(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    match empty_slot(c.answer) {
        Some(at) => Err((
            Reason::EmptySlot,
            format!("a sentence is missing a value: \"{at}\""),
        )),
        None => Ok(Some(String::new())),
    }
}

/// The words of the names a question asks about (`larfg` and `sgelqf` of "a copy of
/// larfg_kernel_small as rocsolver_sgelqf uses it"), the library's and the pipeline's
/// common words left out: code written for the question names at least one of them.
fn distinctive_words(question: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "rocblas",
        "rocsolver",
        "hipblas",
        "kernel",
        "kernels",
        "template",
        "launcher",
        "impl",
        "imp",
        "batched",
        "strided",
        "small",
        "device",
        "internal",
        "run",
        "get",
        "set",
        "api",
        "hpp",
        "cpp",
        "library",
        "src",
        "include",
        "specialized",
        "blas1",
        "blas2",
        "blas3",
        "lapack",
        "auxiliary",
        "rocauxiliary",
        "roclapack",
        "status",
        "handle",
        "int",
        "stride",
        "float",
        "double",
        "complex",
        "const",
        "size",
    ];
    let mut out: Vec<String> = super::grounding::identifiers(question)
        .filter(|w| w.contains('_'))
        .flat_map(|w| w.split('_'))
        .filter(|p| p.len() >= 4 && !COMMON.contains(&p.to_ascii_lowercase().as_str()))
        .filter(|p| !p.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Does the code define or launch a kernel?
pub fn looks_like_hip(code: &str) -> bool {
    ["__global__", "__device__", "hipLaunchKernelGGL", "<<<"]
        .iter()
        .any(|k| code.contains(k))
}

fn code_present(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    if !c.requires_code {
        return Ok(None);
    }
    match c.code.filter(|code| looks_like_hip(code)) {
        Some(code) => {
            let about = distinctive_words(c.question);
            if !about.is_empty() && !about.iter().any(|w| code.contains(w.as_str())) {
                return Err((
                    Reason::CodePresent,
                    format!(
                        "the code names none of {} that the question is about",
                        about.join(", ")
                    ),
                ));
            }
            Ok(Some(format!("{} lines of code", code.lines().count())))
        }
        None => Err((
            Reason::CodePresent,
            "the question asks for HIP code and the answer has none".into(),
        )),
    }
}

fn launch_bounds(c: &Candidate, _: &Grounding, _: &mut Found) -> Outcome {
    let Some(code) = c.code else { return Ok(None) };
    match super::launch::over_limit(code, MAX_THREADS_PER_BLOCK) {
        Some(why) => Err((Reason::LaunchBounds, why)),
        None => Ok(Some(format!(
            "at most {MAX_THREADS_PER_BLOCK} threads per block"
        ))),
    }
}

fn barriers_uniform(c: &Candidate, _: &Grounding, found: &mut Found) -> Outcome {
    let Some(code) = c.code else { return Ok(None) };
    match super::barrier::divergent_barrier(code) {
        // The library's own kernel does the same (getrs's barriers under `if(y < ny)`,
        // roclapack_trsm_specialized_kernels.hpp:329-346): an answer that copies it
        // beside its rewrite reproduces the library, it does not invent a hang.
        Some((_, test)) if found.shown.squashed().contains(&squash(&test)) => Ok(Some(
            "a barrier under a test the library's own code has".into(),
        )),
        Some((why, _)) => Err((Reason::DivergentBarrier, why)),
        None => Ok(Some(String::new())),
    }
}

/// The reason for a file that could not be read from a tree.
fn read_failure(e: &SliceError, missing: Reason) -> Reason {
    match e {
        SliceError::UnknownLibrary { .. } => Reason::UnknownLibrary,
        SliceError::OutsideTree { .. } => Reason::PathOutsideTree,
        SliceError::Read { .. } => missing,
    }
}

/// The code shown, re-read from the pinned trees: each piece's lines, in slice order.
/// Both paths ground answers in this text.
pub fn shown_text(slice: &[PieceRef], trees: &Trees) -> Result<String, (Reason, String)> {
    Ok(piece_texts(slice, trees)?
        .iter()
        .map(|t| format!("{t}\n"))
        .collect())
}

/// Each piece's lines, joined, in slice order, read from the pinned trees: a piece past
/// the end of its file or no longer hashing as recorded is refused.
fn piece_texts(slice: &[PieceRef], trees: &Trees) -> Result<Vec<String>, (Reason, String)> {
    let mut texts = Vec::with_capacity(slice.len());
    for p in slice {
        let lines = trees
            .lines(&p.lib, &p.file)
            .map_err(|e| (read_failure(&e, Reason::SliceFileMissing), e.to_string()))?;
        if p.start < 1 || p.end < p.start || p.end as usize > lines.len() {
            return Err((
                Reason::SliceChanged,
                format!(
                    "{}:{}-{}: the file has {} lines",
                    p.file,
                    p.start,
                    p.end,
                    lines.len()
                ),
            ));
        }
        if lines_hash(&lines, p.start, p.end) != p.sha256 {
            return Err((
                Reason::SliceChanged,
                format!("{}:{}-{} no longer reads as it did", p.file, p.start, p.end),
            ));
        }
        texts.push(lines[p.start as usize - 1..p.end as usize].join("\n"));
    }
    Ok(texts)
}

fn slice_in_tree(c: &Candidate, g: &Grounding, found: &mut Found) -> Outcome {
    if c.slice.is_empty() {
        return Err((Reason::SliceChanged, "the entry shows no code".into()));
    }
    found.shown = g.shown.get(c.slice, c.mutation, g.trees)?;
    if let Some(m) = c.mutation {
        planted_line_holds(m, c.slice, g.trees)?;
    }
    Ok(Some(format!(
        "{} pieces read at the pinned version",
        c.slice.len()
    )))
}

fn citations_resolve(c: &Candidate, g: &Grounding, found: &mut Found) -> Outcome {
    if c.citations.is_empty() {
        return Err((
            Reason::CitationsPresent,
            "no citations: every claim must point at the slice".into(),
        ));
    }
    for claim in c.citations {
        let cit = resolve(claim, c.slice, g.trees)
            .or_else(|e| in_tree(claim, c.answer, c.slice, g).ok_or(e))
            .map_err(|(r, why)| {
                (
                    r,
                    format!("{}:{}-{}: {why}", claim.file, claim.start, claim.end),
                )
            })?;
        found.citations.push(cit);
    }
    Ok(Some(format!(
        "{} citations inside the slice, hashed at the pinned version",
        found.citations.len()
    )))
}

/// A citation of lines the slice does not show, held to the pinned tree instead: the
/// one file of the slice's libraries the path names, the lines inside it, hashed there,
/// and the prose giving those lines (so the claim they are cited for is checked there).
/// The answer read code the prompt left out; what it cites is still the library's.
fn in_tree(
    c: &ClaimedCitation,
    answer: &str,
    slice: &[PieceRef],
    g: &Grounding,
) -> Option<Citation> {
    if c.start < 1 || c.end < c.start || c.end > u32::MAX as i64 {
        return None;
    }
    let (lib, file) = tree_file(&c.file, c.lib.as_deref(), slice, g.known)?;
    let said = super::grounding::ranges_in_prose(answer)
        .into_iter()
        .any(|(f, a, b)| {
            a as i64 <= c.end
                && c.start <= b as i64
                && f.is_none_or(|f| super::grounding::mentions_file(&file, &f))
        });
    if !said {
        return None;
    }
    let lines = g.trees.lines(&lib, &file).ok()?;
    let (s, e) = (c.start as u32, c.end as u32);
    if e as usize > lines.len() {
        return None;
    }
    let sha256 = lines_hash(&lines, s, e);
    if c.sha256.as_ref().is_some_and(|h| *h != sha256) {
        return None;
    }
    Some(Citation {
        lib,
        file,
        start: s,
        end: e,
        sha256,
    })
}

/// The one file of the trees of the slice's libraries (or of `lib`) that `mention`
/// names: `(lib, path)`.
fn tree_file(
    mention: &str,
    lib: Option<&str>,
    slice: &[PieceRef],
    known: &KnownNames,
) -> Option<(String, String)> {
    let mut libs: Vec<&str> = match lib {
        Some(l) => vec![l],
        None => slice.iter().map(|p| p.lib.as_str()).collect(),
    };
    libs.sort_unstable();
    libs.dedup();
    let mut found = libs.iter().flat_map(|l| {
        known
            .files_named(l, mention.trim())
            .into_iter()
            .map(move |f| (l.to_string(), f.to_string()))
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A citation must name a file of the slice (by path, or by a path suffix that only one
/// slice file has), lie inside the lines shown from it and, when it carries a hash,
/// hash the same at the pinned version.
fn resolve(
    c: &ClaimedCitation,
    slice: &[PieceRef],
    trees: &Trees,
) -> Result<Citation, (Reason, String)> {
    if c.start < 1 || c.end < c.start || c.end > u32::MAX as i64 {
        return Err((Reason::CitationOutOfRange, "not a line range".into()));
    }
    let want = c.file.trim().trim_start_matches("./");
    let of_lib = |p: &&PieceRef| c.lib.as_ref().is_none_or(|l| *l == p.lib);
    let exact: Vec<&PieceRef> = slice
        .iter()
        .filter(of_lib)
        .filter(|p| p.file == want)
        .collect();
    let matching = if exact.is_empty() {
        let by_suffix: Vec<&PieceRef> = slice
            .iter()
            .filter(of_lib)
            .filter(|p| !want.is_empty() && p.file.ends_with(&format!("/{want}")))
            .collect();
        let files: std::collections::BTreeSet<&str> =
            by_suffix.iter().map(|p| p.file.as_str()).collect();
        if files.len() > 1 {
            return Err((
                Reason::CitationOutsideSlice,
                format!(
                    "ambiguous file name: matches {}",
                    files.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        by_suffix
    } else {
        exact
    };
    if matching.is_empty() {
        return Err((Reason::CitationOutsideSlice, "file not in the slice".into()));
    }
    let (s, e) = (c.start as u32, c.end as u32);
    let lib = &matching[0].lib;
    let file = &matching[0].file;
    let lines = trees.lines(lib, file).map_err(|err| {
        (
            read_failure(&err, Reason::CitationFileMissing),
            err.to_string(),
        )
    })?;
    if e as usize > lines.len() {
        return Err((
            Reason::CitationOutOfRange,
            format!("the file has {} lines", lines.len()),
        ));
    }
    if !matching.iter().any(|p| p.start <= s && e <= p.end) {
        let shown: Vec<String> = matching
            .iter()
            .map(|p| format!("{}-{}", p.start, p.end))
            .collect();
        return Err((
            Reason::CitationOutsideSlice,
            format!(
                "lines outside what the slice shows of that file ({})",
                shown.join(", ")
            ),
        ));
    }
    let sha256 = lines_hash(&lines, s, e);
    if c.sha256.as_ref().is_some_and(|h| *h != sha256) {
        return Err((
            Reason::CitationTextChanged,
            "the cited text's hash does not match the pinned tree".into(),
        ));
    }
    Ok(Citation {
        lib: lib.clone(),
        file: file.clone(),
        start: s,
        end: e,
        sha256,
    })
}

fn files_exist(c: &Candidate, g: &Grounding, found: &mut Found) -> Outcome {
    let unknown = unknown_files(c.answer, g.known);
    if !unknown.is_empty() {
        return Err((
            Reason::UnknownFile,
            format!("no pinned tree has {}", unknown.join(", ")),
        ));
    }
    let shown: Vec<(&str, u32, u32)> = c
        .slice
        .iter()
        .map(|p| (p.file.as_str(), p.start, p.end))
        .collect();
    let in_tree = |mention: &str, a: u32, b: u32| {
        tree_file(mention, None, c.slice, g.known).is_some_and(|(lib, file)| {
            g.trees
                .lines(&lib, &file)
                .is_ok_and(|l| a >= 1 && b >= a && b as usize <= l.len())
        })
    };
    if let Some(r) = range_outside_shown(c.answer, &shown, &in_tree) {
        return Err((
            Reason::LineRangeOutsideSlice,
            format!("{r} is not in the code shown"),
        ));
    }
    // A find-the-bug prompt showed the changed line: a range citing it cites what the
    // prompt showed there.
    let planted;
    let texts = match c.mutation {
        Some(m) => {
            planted = with_planted_line(c.slice, &found.shown.pieces, m);
            &planted
        }
        None => &found.shown.pieces,
    };
    // Ranges of files the slice shows no piece of, or lines it leaves out, are read in
    // the whole file of the pinned tree.
    let mut whole: Vec<(String, crate::slice::FileLines)> = Vec::new();
    for mention in super::grounding::files_mentioned(c.answer) {
        if let Some((lib, file)) = tree_file(&mention, None, c.slice, g.known) {
            if whole.iter().all(|(f, _)| *f != file) {
                if let Ok(lines) = g.trees.lines(&lib, &file) {
                    whole.push((file, lines));
                }
            }
        }
    }
    let joined: Vec<String> = whole.iter().map(|(_, l)| l.join("\n")).collect();
    let mut pieces = shown_pieces(c.slice, texts);
    for ((file, lines), text) in whole.iter().zip(&joined) {
        pieces.push(ShownPiece {
            file,
            name: "",
            start: 1,
            end: lines.len() as u32,
            text,
            expansion: None,
        });
    }
    if let Some(r) = range_elsewhere(c.answer, &pieces, c.apis) {
        return Err((Reason::LineRangeElsewhere, r));
    }
    Ok(Some(String::new()))
}

fn libraries_right(c: &Candidate, g: &Grounding, _: &mut Found) -> Outcome {
    use super::grounding::LibraryClaim;
    match super::grounding::library_claim(c.answer, c.lib, c.version, g.known) {
        Some(LibraryClaim::Name(why)) => Err((Reason::WrongLibrary, why)),
        Some(LibraryClaim::Version(why)) => Err((Reason::SourcePin, why)),
        None => Ok(Some(String::new())),
    }
}

fn identifiers_exist(c: &Candidate, g: &Grounding, found: &mut Found) -> Outcome {
    let context = format!("{}\n{}", c.question, c.code.unwrap_or(""));
    let unknown = unknown_identifiers(c.answer, &found.shown.names, &context, g.known);
    if !unknown.is_empty() {
        return Err((
            Reason::UnknownIdentifiers,
            format!(
                "not in the index, the trees, HIP or the C++ library: {}",
                unknown.join(", ")
            ),
        ));
    }
    Ok(Some(String::new()))
}

fn names_in_slice(c: &Candidate, g: &Grounding, found: &mut Found) -> Outcome {
    let context = format!("{}\n{}", c.question, c.code.unwrap_or(""));
    let along: Vec<&str> = c
        .apis
        .iter()
        .chain(c.call_path)
        .map(String::as_str)
        .collect();
    let outside = names_outside_slice(c.answer, &found.shown.names, &context, &along, g.known);
    if !outside.is_empty() {
        return Err((
            Reason::NameOutsideSlice,
            format!(
                "the library defines {} but neither the code shown nor the call path holds it: answer from the slice",
                outside.join(", ")
            ),
        ));
    }
    if !names_something_shown(c.answer, &found.shown.names) {
        return Err((
            Reason::Ungrounded,
            "names nothing of the code shown (no name of it in code spans or as code in the prose, no code block): say which code does what".into(),
        ));
    }
    Ok(Some(String::new()))
}

/// The pieces' texts with the planted line as the prompt showed it.
fn with_planted_line(slice: &[PieceRef], texts: &[String], m: &Mutation) -> Vec<String> {
    slice
        .iter()
        .zip(texts)
        .map(|(p, text)| {
            if p.lib != m.lib || p.file != m.file || m.line < p.start || m.line > p.end {
                return text.clone();
            }
            let k = (m.line - p.start) as usize;
            text.lines()
                .enumerate()
                .map(|(i, l)| if i == k { m.mutated.as_str() } else { l })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

fn shown_pieces<'a>(slice: &'a [PieceRef], texts: &'a [String]) -> Vec<ShownPiece<'a>> {
    slice
        .iter()
        .zip(texts)
        .map(|(p, text)| ShownPiece {
            file: &p.file,
            name: &p.name,
            start: p.start,
            end: p.end,
            text,
            expansion: p.expansion.as_deref(),
        })
        .collect()
}

fn types_as_declared(c: &Candidate, _: &Grounding, found: &mut Found) -> Outcome {
    // A find-the-bug prompt shows a changed line, which the answer is about.
    if c.mutation.is_some() {
        return Ok(None);
    }
    match super::grounding::declared_type_mismatch(
        c.answer,
        &shown_pieces(c.slice, &found.shown.pieces),
    ) {
        Some(why) => Err((Reason::DeclaredType, why)),
        None => Ok(Some(String::new())),
    }
}

fn builtins_in_kernel(c: &Candidate, _: &Grounding, found: &mut Found) -> Outcome {
    // A find-the-bug prompt shows a changed line, which the answer is about.
    if c.mutation.is_some() {
        return Ok(None);
    }
    let kernels: Vec<&str> = c
        .slice
        .iter()
        .filter(|p| p.role == PieceRole::Kernel)
        .map(|p| p.name.as_str())
        .collect();
    if kernels.is_empty() {
        return Ok(None);
    }
    match builtin_not_in_kernel(
        c.answer,
        &shown_pieces(c.slice, &found.shown.pieces),
        &kernels,
    ) {
        Some(why) => Err((Reason::BuiltinNotInKernel, why)),
        None => Ok(Some(String::new())),
    }
}

fn quotes_from_slice(c: &Candidate, g: &Grounding, found: &mut Found) -> Outcome {
    // The whole files the slice shows pieces of, read only when an answer quotes code
    // it says the slice leaves out.
    let in_sources = || {
        let named = super::grounding::files_mentioned(c.answer)
            .into_iter()
            .filter_map(|m| tree_file(&m, None, c.slice, g.known));
        let shown = c.slice.iter().map(|p| (p.lib.clone(), p.file.clone()));
        let mut seen = HashSet::new();
        let mut text = String::new();
        for (lib, file) in shown.chain(named) {
            if let Ok(lines) = g.trees.lines(&lib, &file) {
                if seen.insert((lib, file)) {
                    text.push_str(&lines.join("\n"));
                    text.push('\n');
                }
            }
        }
        text
    };
    match foreign_quote(
        c.answer,
        c.question,
        c.code,
        &found.shown.text,
        found.shown.squashed(),
        &in_sources,
    ) {
        Some(q) => Err((
            Reason::QuoteNotInSlice,
            format!("quoted as library code but not in the slice: {q}"),
        )),
        None => Ok(Some(String::new())),
    }
}

fn quote_on_its_path(c: &Candidate, _: &Grounding, found: &mut Found) -> Outcome {
    // A find-the-bug prompt shows a changed line, which the answer is about.
    if c.mutation.is_some() {
        return Ok(None);
    }
    match super::branch::quote_off_path(c.answer, &shown_pieces(c.slice, &found.shown.pieces)) {
        Some(why) => Err((Reason::QuoteOffPath, why)),
        None => Ok(Some(String::new())),
    }
}

/// A planted bug must sit on a line the slice shows, change that line as the tree has
/// it, and keep its fix inside the original line.
fn planted_line_holds(
    m: &Mutation,
    slice: &[PieceRef],
    trees: &Trees,
) -> Result<(), (Reason, String)> {
    let at = format!("{}:{}", m.file, m.line);
    if !slice
        .iter()
        .any(|p| p.lib == m.lib && p.file == m.file && p.start <= m.line && m.line <= p.end)
    {
        return Err((
            Reason::SliceChanged,
            format!("the planted bug's line {at} is not in the code shown"),
        ));
    }
    let lines = trees
        .lines(&m.lib, &m.file)
        .map_err(|e| (read_failure(&e, Reason::SliceFileMissing), e.to_string()))?;
    if lines.get(m.line as usize - 1) != Some(&m.original) {
        return Err((
            Reason::SliceChanged,
            format!("{at} does not read as the planted bug's `original` says"),
        ));
    }
    if m.mutated == m.original || !m.original.contains(&m.fix) || !m.mutated.contains(&m.shown) {
        return Err((
            Reason::SliceChanged,
            format!("the planted bug at {at} does not change its line as `fix` and `shown` say"),
        ));
    }
    Ok(())
}

fn squeezed(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Does the text name line `n` (`line 42`, `lines 40-42`, `file.hpp:42`, `L42`)?
fn names_line(text: &str, n: u32) -> bool {
    static LINE: OnceLock<Regex> = OnceLock::new();
    let re = LINE.get_or_init(|| {
        Regex::new(r"(?i)(?:\blines?\s+|:|\bL)(\d+)(?:\s*(?:-|–|to|and)\s*(\d+))?")
            .expect("static regex")
    });
    re.captures_iter(text).any(|c| {
        let a: u32 = c[1].parse().unwrap_or(0);
        let b: u32 = c.get(2).and_then(|m| m.as_str().parse().ok()).unwrap_or(a);
        a <= n && n <= b && b - a <= 3
    })
}

/// A find-the-bug answer names the changed line (in prose, or by a citation of a few
/// lines around it) and restores what the change broke.
fn bug_found(c: &Candidate, _: &Grounding, found: &mut Found) -> Outcome {
    let Some(m) = c.mutation else { return Ok(None) };
    let text = format!("{}\n{}", c.answer, c.code.unwrap_or(""));
    let cited = found
        .citations
        .iter()
        .any(|x| x.file == m.file && x.start <= m.line && m.line <= x.end && x.end - x.start <= 3);
    if !(cited || names_line(&text, m.line)) {
        return Err((
            Reason::BugNotFound,
            format!(
                "the answer does not point at {}:{}, the line that was changed",
                m.file, m.line
            ),
        ));
    }
    if !squeezed(&text).contains(&squeezed(&m.fix)) {
        return Err((
            Reason::BugNotFound,
            format!("the answer does not restore `{}` at line {}", m.fix, m.line),
        ));
    }
    Ok(Some(format!(
        "names {}:{} and restores `{}`",
        m.file, m.line, m.fix
    )))
}

/// The kernels of the code shown that the question is about: named whole, or as "the
/// axpy kernel" (the kernels shown whose names hold `axpy`).
fn question_kernels<'c>(c: &Candidate<'c>) -> Vec<&'c str> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"(?i)\bthe\s+(\w+)\s+kernel\b").expect("static regex"));
    let shown: Vec<&str> = c
        .slice
        .iter()
        .filter(|p| p.role == PieceRole::Kernel)
        .map(|p| p.name.as_str())
        .collect();
    let named: Vec<&str> = shown
        .iter()
        .copied()
        .filter(|k| super::grounding::identifiers(c.question).any(|w| w == *k))
        .collect();
    if !named.is_empty() {
        return named;
    }
    let words: Vec<String> = re
        .captures_iter(c.question)
        .map(|m| m[1].to_ascii_lowercase())
        .filter(|w| w.len() >= 3)
        .collect();
    shown
        .into_iter()
        .filter(|k| {
            words
                .iter()
                .any(|w| k.to_ascii_lowercase().contains(w.as_str()))
        })
        .collect()
}

fn agrees_with_facts(c: &Candidate, g: &Grounding, found: &mut Found) -> Outcome {
    let Some(index) = g.facts else {
        return Ok(None);
    };
    let Some(v) = super::factcheck::check_about(c.answer, c.apis, &question_kernels(c), index)
    else {
        return Ok(None);
    };
    found.fact_check = v.count();
    match v.contradiction {
        Some(why) => Err((Reason::ContradictsCode, why)),
        None => Ok(Some(format!(
            "{} claims about {} agree with the facts of its code",
            v.claims,
            c.apis.first().map(String::as_str).unwrap_or("the API")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::distinctive_words;

    #[test]
    fn code_for_a_question_names_what_the_question_is_about() {
        let q = "Write a standalone HIP test program for larfg_kernel_small as rocsolver_sgelqf uses it (library/src/specialized/rocauxiliary_larfg_specialized_kernels.hpp:48-113).";
        let words = distinctive_words(q);
        assert!(words.contains(&"larfg".to_string()), "{words:?}");
        assert!(words.contains(&"sgelqf".to_string()), "{words:?}");
        assert!(!words.iter().any(|w| w == "kernel" || w == "small"));
        // Code for another routine names none of them; a strided copy of the kernel does.
        assert!(!words
            .iter()
            .any(|w| "__global__ void tbsv_forward()".contains(w.as_str())));
        assert!(words
            .iter()
            .any(|w| "__global__ void slarfg_strided_kernel()".contains(w.as_str())));
        // A question naming nothing asks for nothing in particular.
        assert!(distinctive_words("Write a kernel that scales a vector.").is_empty());
    }
}
