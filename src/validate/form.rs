//! The form of a question and an answer, read before anything is compared with the
//! code: text a training stack would learn the wrong habit from whatever it says.
//!
//! Each rule covers a class of generation failure, not one case: bytes no prose holds
//! (control characters, ANSI escapes), a model's own markup (reasoning tags, chat
//! tokens, talk about "the user"), a fence or code span left open, an answer cut off
//! mid-sentence, another language, a sentence looping, a template slot left unfilled.
//! Code (fenced blocks, inline spans) is exempt where a rule is about prose.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use super::checks::Reason;

/// The first form defect of an answer, with what was found.
pub fn answer_defect(answer: &str) -> Option<(Reason, String)> {
    if let Some(d) = control_character(answer) {
        return Some((Reason::ControlCharacters, d));
    }
    let prose = prose_of(answer);
    if let Some(m) = markup_re().find(&prose) {
        return Some((
            Reason::ModelMarkup,
            format!("the model's own text: \"{}\"", m.as_str().trim()),
        ));
    }
    if let Some(d) = unbalanced(answer) {
        return Some((Reason::UnbalancedMarkdown, d));
    }
    if let Some(d) = truncated(answer) {
        return Some((Reason::Truncated, d));
    }
    if let Some(d) = foreign_language(&prose) {
        return Some((Reason::NotEnglish, d));
    }
    if let Some(d) = repeated(&without_fences(answer)) {
        return Some((Reason::Repetition, d));
    }
    placeholder(&prose).map(|p| {
        (
            Reason::EmptySlot,
            format!("an unfilled placeholder: \"{p}\""),
        )
    })
}

/// The first defect of a question's form: control characters, an unfilled slot, or
/// text that asks nothing.
pub fn question_defect(question: &str) -> Option<String> {
    if let Some(d) = control_character(question) {
        return Some(d);
    }
    if let Some(p) = placeholder(&prose_of(question)) {
        return Some(format!("an unfilled placeholder: \"{p}\""));
    }
    let words: Vec<&str> = question.split_whitespace().collect();
    if words.len() < 4 {
        return Some(format!("{} words: too few to ask anything", words.len()));
    }
    // A request may open any sentence or clause: "Review f (...): one line was altered.
    // Name it.", "Following the declaration of f, state the operation it performs."
    let requests = question
        .split(['.', ':', ';', ',', '\n'])
        .filter_map(|s| s.split_whitespace().next())
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .any(|w| IMPERATIVES.contains(&w.as_str()) || INTERROGATIVES.contains(&w.as_str()));
    if !question.contains('?') && !requests {
        return Some(
            "asks nothing: no question mark, question word or request (explain, write, trace, ...)"
                .into(),
        );
    }
    None
}

/// Words that open a question whose question mark was left off.
const INTERROGATIVES: &[&str] = &[
    "how", "what", "which", "why", "when", "where", "who", "whose", "does", "do", "is", "are",
    "can", "could", "should", "would", "will", "did", "was", "were",
];

/// Words a request may open with instead of a question mark.
const IMPERATIVES: &[&str] = &[
    "explain",
    "describe",
    "trace",
    "write",
    "give",
    "name",
    "list",
    "show",
    "quote",
    "implement",
    "compare",
    "identify",
    "find",
    "state",
    "summarize",
    "walk",
    "outline",
    "derive",
    "modify",
    "rewrite",
    "sketch",
    "fix",
    "locate",
    "point",
    "tell",
    "enumerate",
    "map",
    "detail",
    "specify",
    "determine",
    "review",
    "examine",
    "inspect",
    "analyze",
    "analyse",
    "consider",
    "read",
    "look",
    "check",
    "spot",
    "debug",
    "audit",
    "suppose",
    "assume",
    "complete",
    "extend",
    "port",
    "translate",
    "convert",
    "refactor",
    "optimize",
    "annotate",
    "document",
    "predict",
    "calculate",
    "compute",
    "count",
    "classify",
];

/// A character no prose holds: C0/C1 controls other than tab and newlines (ANSI
/// escapes and NULs from a server reach here).
fn control_character(s: &str) -> Option<String> {
    let (i, c) = s
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))?;
    Some(format!(
        "control character U+{:04X} at character {}",
        c as u32,
        i + 1
    ))
}

/// The text with fenced blocks blanked and code spans kept (they tell sentences apart),
/// their sentence marks neutralised so `j < m - blk)` never reads as a sentence's end.
fn without_fences(s: &str) -> String {
    static SPAN: OnceLock<Regex> = OnceLock::new();
    let span = SPAN.get_or_init(|| Regex::new(r"`[^`\n]*`").expect("static regex"));
    let text = outside_fences(s).collect::<Vec<_>>().join("\n");
    span.replace_all(&text, |c: &regex::Captures| {
        c[0].replace(['.', '!', '?'], "\u{b7}")
    })
    .into_owned()
}

/// The text with fenced blocks and inline code spans blanked.
fn prose_of(s: &str) -> String {
    static FENCE: OnceLock<Regex> = OnceLock::new();
    static SPAN: OnceLock<Regex> = OnceLock::new();
    let fence = FENCE.get_or_init(|| Regex::new(r"(?s)```.*?(```|$)").expect("static regex"));
    let span = SPAN.get_or_init(|| Regex::new(r"`[^`\n]*`").expect("static regex"));
    let t = fence.replace_all(s, "\n");
    span.replace_all(&t, " x ").into_owned()
}

fn markup_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)</?(think|thinking|reasoning|scratchpad)>|<\|[a-z_]+\|>|\[/?INST\]",
            // Sequence tokens stand alone; `aabs<S>` is a template argument.
            r"|(?-i:\B</?s>)",
            r"|<start_of_turn>|<end_of_turn>",
            r"|\bthe user (wants|asks|is asking|asked|needs)\b",
            r"|\blet me (think|check|look|see|re-?read|recall|reason)\b",
            r"|^\s*(okay|ok|alright|hmm),? (so|let|the)\b",
            r"|\bwait,? (no|actually)\b",
            // Talk about the system prompt's rules. Talk about the code the question
            // shows ("the slice", "the code above") is fine: an entry carries its slice,
            // and the export renders it into the user turn.
            r"|\bas (you )?(instructed|requested|asked)\b|\bper (your|the) instructions\b",
            // Chat pleasantries: a reply to a person, not an answer to learn.
            r"|\b(i )?hope (this|that|it) helps\b|\blet me know if\b|\bfeel free to\b",
            r"|\bhappy to help\b|\bgreat question\b|^\s*(certainly|sure|of course)[!,.]",
            r"|\bas an ai\b",
            // The answer still wrapped in the JSON object a structured reply carries.
            r#"|^\s*\{\s*"[a-z_]+"\s*:"#
        ))
        .expect("static regex")
    })
}

/// A code fence opened and never closed, or an odd number of backticks in the prose.
fn unbalanced(s: &str) -> Option<String> {
    let fences = s
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    if fences % 2 == 1 {
        return Some("a code fence is opened and never closed".into());
    }
    for (n, line) in outside_fences(s).enumerate() {
        if line.matches('`').count() % 2 == 1 {
            return Some(format!(
                "an inline code span is left open on line {}: \"{}\"",
                n + 1,
                clip(line.trim(), 60)
            ));
        }
    }
    None
}

/// The lines outside fenced blocks.
fn outside_fences(s: &str) -> impl Iterator<Item = &str> {
    let mut inside = false;
    s.lines().filter(move |l| {
        if l.trim_start().starts_with("```") {
            inside = !inside;
            return false;
        }
        !inside
    })
}

/// Words a complete sentence does not end on.
const DANGLING: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "with", "for", "from", "by", "on", "at", "is",
    "are", "was", "that", "which", "its", "their", "than", "as", "into", "when", "if",
];

/// An answer that stops mid-sentence, as a reply cut at the token limit does: its last
/// prose line ends on a comma, colon, open bracket or a word no sentence ends on, or,
/// for a line that is not a list item or table row, on no closing punctuation at all.
fn truncated(s: &str) -> Option<String> {
    let last = s.trim_end().lines().last()?.trim();
    if last.starts_with("```") || last.ends_with('|') {
        return None;
    }
    let word = last
        .rsplit(|c: char| c.is_whitespace())
        .next()
        .unwrap_or("")
        .to_lowercase();
    let cut = last.ends_with([',', ';', ':', '(', '[', '{', '-', '='])
        || DANGLING.contains(&word.as_str());
    let listed =
        last.starts_with(['-', '*', '+']) || last.starts_with(|c: char| c.is_ascii_digit());
    // A missing full stop says "cut off" only where the writer ends sentences with one:
    // a one-sentence answer may leave it out.
    let punctuates = sentences(&prose_of(s))
        .filter(|t| t.trim_end().ends_with(['.', '!', '?']))
        .count()
        >= 2;
    let unpunctuated = !listed
        && punctuates
        && last
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
    (cut || unpunctuated).then(|| format!("ends mid-sentence: \"...{}\"", tail(last, 50)))
}

/// Prose mostly in another script: more than a fifth of its letters outside ASCII.
fn foreign_language(prose: &str) -> Option<String> {
    let letters: Vec<char> = prose.chars().filter(|c| c.is_alphabetic()).collect();
    let foreign = letters.iter().filter(|c| !c.is_ascii()).count();
    (letters.len() >= 20 && foreign * 5 > letters.len()).then(|| {
        format!(
            "{foreign} of {} letters are not English: entries are in English",
            letters.len()
        )
    })
}

/// A sentence of six words or more said three times, or an eight-word run repeated
/// until it is most of the answer: a generation loop.
fn repeated(prose: &str) -> Option<String> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for s in sentences(prose) {
        let norm: Vec<String> = s.split_whitespace().map(str::to_lowercase).collect();
        if norm.len() >= 6 {
            let n = count.entry(norm.join(" ")).or_default();
            *n += 1;
            if *n == 3 {
                return Some(format!(
                    "a sentence said 3 times: \"{}\"",
                    clip(s.trim(), 80)
                ));
            }
        }
    }
    let words: Vec<String> = prose.split_whitespace().map(str::to_lowercase).collect();
    const RUN: usize = 8;
    if words.len() >= RUN * 4 {
        let mut runs: HashMap<&[String], usize> = HashMap::new();
        for w in words.windows(RUN) {
            *runs.entry(w).or_default() += 1;
        }
        if let Some((run, n)) = runs.into_iter().max_by_key(|(_, n)| *n) {
            if n >= 4 && n * RUN * 2 > words.len() {
                return Some(format!(
                    "\"{}\" repeated {n} times, most of the answer",
                    run.join(" ")
                ));
            }
        }
    }
    None
}

/// The sentences of a text: a line, or up to a `.`, `!` or `?` that the next capital
/// follows, so `n <= (c ? 127 : 90)` in a condition written as prose ends none.
pub(crate) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(|line| {
        let mut out = Vec::new();
        let mut start = 0;
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            if !matches!(c, '.' | '!' | '?') {
                continue;
            }
            let mut rest = chars[k + 1..].iter().map(|&(_, c)| c);
            let spaced = rest.next().is_some_and(char::is_whitespace);
            if spaced
                && rest
                    .find(|c| !c.is_whitespace())
                    .is_some_and(char::is_uppercase)
            {
                out.push(&line[start..=i]);
                start = i + 1;
            }
        }
        out.push(&line[start..]);
        out
    })
}

/// A template slot or a writer's marker left in prose: `{kernel}`, `<grid_size>`,
/// `TODO`, `[insert ...]`.
fn placeholder(prose: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            // `<grid_size>` stands alone; `rocblas_syr_impl<rocblas_int>` is a template.
            r"\{[A-Za-z_][A-Za-z0-9_]*\}|\B<[a-z]+(_[a-z]+)+>",
            // A writer's marker opens a line or a bracket or takes a colon; "the TODO
            // in the code" speaks of the library's own comment.
            r"|(?m:^\s*|[\[(]\s*)(TODO|TBD|FIXME|XXX)\b|\b(TODO|TBD|FIXME|XXX):",
            r"|(?i)\[(insert|fill|your|add) [^\]]*\]"
        ))
        .expect("static regex")
    });
    re.find(prose).map(|m| m.as_str().to_string())
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn tail(s: &str, n: usize) -> String {
    let k = s.chars().count().saturating_sub(n);
    s.chars().skip(k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "In the strided path the launcher computes `int  blocks = (n - 1) / NB + 1;` and launches rocblas_scal_kernel with `dim3 threads(NB);`, NB being 256 for rocblas_sscal (library/src/blas1/rocblas_scal_kernels.hpp:288-293).";

    fn reason(a: &str) -> Option<Reason> {
        answer_defect(a).map(|(r, _)| r)
    }

    #[test]
    fn each_class_of_broken_form_has_its_reason() {
        use Reason::*;
        for (answer, want) in [
            (format!("{GOOD}\u{1b}[0m"), ControlCharacters),
            (format!("{GOOD}\u{0}"), ControlCharacters),
            (format!("<think>The user wants NB.</think>\n{GOOD}"), ModelMarkup),
            (format!("Okay, so the launcher is simple. {GOOD}"), ModelMarkup),
            (format!("{GOOD} Let me check the kernel again."), ModelMarkup),
            (format!("<s>{GOOD}</s>"), ModelMarkup),
            (format!("As instructed, {GOOD}"), ModelMarkup),
            (format!("{GOOD} I hope this helps! Let me know if anything is unclear."), ModelMarkup),
            (format!("Certainly! {GOOD}"), ModelMarkup),
            (format!("{{\"answer\": \"{}\"}}", GOOD.replace('`', "")), ModelMarkup),
            ("The grid:\n```cpp\ndim3 grid(blocks, 1, batches);\n".to_string(), UnbalancedMarkdown),
            (format!("{GOOD} The block is `dim3 threads(NB); per batch."), UnbalancedMarkdown),
            (format!("{GOOD} Each thread then scales one element of x with the"), Truncated),
            (format!("{GOOD} The kernel then reads alpha from"), Truncated),
            ("- one element per thread,\n- the batch from".to_string(), Truncated),
            (format!("{GOOD} The grid has one block per NB elements. The batch index comes from blockIdx"), Truncated),
            ("启动器先计算 `blocks`，然后用 `dim3 grid(blocks, 1, batches);` 启动 rocblas_scal_kernel，每个线程处理一个元素，批次由 blockIdx.z 给出。".to_string(), NotEnglish),
            (format!("{0} {0} {0}", "The kernel scales one element of x per thread."), Repetition),
            ("rocblas_scal_kernel is launched with {block} threads per block.".to_string(), EmptySlot),
            ("rocblas_scal_kernel runs <grid_size> blocks of NB threads each.".to_string(), EmptySlot),
            ("rocblas_scal_kernel runs NB threads per block. TODO: the LDS size.".to_string(), EmptySlot),
        ] {
            assert_eq!(reason(&answer), Some(want), "{answer}");
        }
    }

    #[test]
    fn well_formed_answers_pass() {
        for answer in [
            GOOD.to_string(),
            "The launches:\n- `rocblas_scal_kernel` with NB = 256 threads\n- `rocblas_sscal_2_kernel` for unit stride".to_string(),
            "| kernel | block |\n|---|---|\n| rocblas_scal_kernel | 256 |".to_string(),
            format!("{GOOD}\n```cpp\n__global__ void k(float* x) {{ x[threadIdx.x] *= 2; }}\n```"),
            "The bug is on line 90: it reads `for(int32_t j = 0; j <= 2; ++j)`. The line should read `for(int32_t j = 0; j < 2; ++j)`.".to_string(),
            "A template `{T}` in code is code: `std::vector<T> v{n}` is not a slot, nor is `<hip_runtime>`.".to_string(),
            "The kernel is named rocblas_scal_kernel (see library/src/blas1/rocblas_scal_kernels.hpp:27)".to_string(),
            "Each thread of the axpy kernel computes one element of y and threads beyond n return without touching memory".to_string(),
            "Its accent é in a name like Schrödinger does not make the prose foreign to the check.".to_string(),
            // The code the question shows travels with the entry: speaking of it is fine.
            format!("As the excerpt above shows, {GOOD}"),
            format!("{GOOD} The slice does not show the launcher; this slice holds the kernel only."),
            format!("In the provided code, {GOOD}"),
            // A template argument is no sequence token, a TODO of the library no marker.
            format!("{GOOD} The norm uses aabs<S> for each element."),
            format!("{GOOD} As the TODO in the code says, the gfx12 path is a workaround."),
            format!("{GOOD} INST_SYR_C_API(int64_t) turns into a call to rocblas_syr_impl<rocblas_int>."),
            // A `?` in a condition ends no sentence, in code or in prose.
            "- `reset_info` (a.hpp:206): if not (n <= ((sizeof(T) == 4) ? 180 : (sizeof(T) == 8) ? 127 : 90)) and the loop `while (j < m - blk)` runs.\n- `chk_positive` (a.hpp:238): if not (n <= ((sizeof(T) == 4) ? 180 : (sizeof(T) == 8) ? 127 : 90)) and the loop `while (j < m - blk)` runs.\n- `sqrtDiag` (b.hpp:225): if not (n <= ((sizeof(T) == 4) ? 180 : (sizeof(T) == 8) ? 127 : 90)) and the loop `while (j < m - blk)` runs.".to_string(),
            "At line 12 `blk = (m > 64 ? 127 : 90)` and the loop `while (j < m - blk)` runs.\nAt line 40 `blk = (m > 32 ? 127 : 90)` and the loop `while (j < m - blk)` runs.\nAt line 77 `blk = (m > 16 ? 127 : 90)` and the loop `while (j < m - blk)` runs.".to_string(),
        ] {
            assert_eq!(answer_defect(&answer), None, "{answer}");
        }
    }

    #[test]
    fn every_question_template_asks_something() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/question_templates");
        let templates = crate::question::load_templates(std::path::Path::new(dir)).unwrap();
        let slot = Regex::new(r"\{[a-z_]+\}").unwrap();
        let mut asked = 0;
        for t in &templates {
            for text in std::iter::once(&t.text).chain(&t.phrasings) {
                let filled = slot.replace_all(text, "rocblas_sscal");
                assert_eq!(question_defect(&filled), None, "{}: {text}", t.origin);
                asked += 1;
            }
        }
        assert!(asked >= templates.len() && templates.len() > 20, "{asked}");
    }

    #[test]
    fn a_question_must_ask_something() {
        assert!(question_defect("Ok.").is_some());
        assert!(question_defect("What does {api} launch for small n?").is_some());
        assert!(question_defect("The scal launcher and its kernels in rocBLAS").is_some());
        assert_eq!(
            question_defect("how does rocblas_scal_kernel map threads to elements"),
            None
        );
        assert_eq!(
            question_defect("How does rocblas_sscal configure the launch of rocblas_scal_kernel?"),
            None
        );
        assert_eq!(
            question_defect("Trace rocblas_sscal down to the kernels it launches."),
            None
        );
        assert_eq!(
            question_defect("Review bdsqr_rotate (rocauxiliary_bdsqr.hpp:688-821): one line was altered. Name the line and quote the correct one."),
            None
        );
        assert_eq!(
            question_defect("One line of the kernel was changed. Which line is it, and what should it read? Quote the corrected line."),
            None
        );
    }
}
