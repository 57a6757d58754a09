//! The `question` stage: templates (data in `question_templates/*.toml`) meet slices.
//!
//! Takes compiled [`Template`]s and [`Slice`]s; gives [`Question`]s with the exact chat
//! messages to send. A template asks only where its preconditions hold (a
//! synchronization question only where the kernels synchronize), so every question is
//! answerable from the code shown. Templates are checked when loaded, with the file,
//! line and field of any mistake, before anything is sent anywhere.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use toml::Spanned;

use crate::model::{PieceRole, Question, Slice, SliceFeatures};
use crate::slice::{count_tokens, render, rendered_tokens};

/// A template file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// Unreadable file.
    #[error("{path}: cannot read")]
    Read {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// TOML syntax or a field of the wrong type (toml's message names line and column).
    #[error("{path}: {message}")]
    Syntax {
        /// File.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A template that parses but cannot work.
    #[error("{path}: line {line}: template `{id}`: field `{field}`: {message}")]
    Invalid {
        /// File.
        path: String,
        /// Line of the template's `id`.
        line: usize,
        /// Template id.
        id: String,
        /// Field at fault.
        field: String,
        /// What to do.
        message: String,
    },
    /// No templates at all.
    #[error("{0}: no question templates found; add question_templates/<category>.toml files")]
    Empty(String),
}

/// One `question_templates/<category>.toml` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateFile {
    /// Category of every template in the file (`semantics`, `api-to-kernel`, ...).
    pub category: String,
    /// What the category is about (documentation only).
    #[serde(default)]
    pub description: String,
    /// The templates.
    #[serde(rename = "template")]
    pub templates: Vec<TemplateSpec>,
}

/// One template as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateSpec {
    /// Stable id, e.g. `sync.barriers`; part of every entry's provenance.
    pub id: Spanned<String>,
    /// Bump when the wording changes meaningfully: it changes the entry ids.
    pub version: u32,
    /// `L1`, `L2`, `L3`, or `slice` to take the slice's own level.
    #[serde(default = "slice_level")]
    pub difficulty: String,
    /// Slice features that must all hold (see `SliceFeatures::NAMES`, plus `kernels`).
    #[serde(default)]
    pub requires: Vec<String>,
    /// Slice features of which at least one must hold.
    #[serde(default)]
    pub any_of: Vec<String>,
    /// Asked about a variant's slice (`batched`, `strided_batched`, `64`, `complex`)
    /// instead of the family's.
    #[serde(default)]
    pub variant: bool,
    /// The answer must contain HIP code.
    #[serde(default)]
    pub code: bool,
    /// The question; placeholders: {api} {apis} {family} {variant} {kernel} {kernels}
    /// {launcher} {entry} {lib} {version}.
    pub text: String,
}

fn slice_level() -> String {
    "slice".to_string()
}

/// A checked template.
#[derive(Debug, Clone)]
pub struct Template {
    /// Category.
    pub category: String,
    /// Id.
    pub id: String,
    /// Version.
    pub version: u32,
    /// Fixed level, or `None` for the slice's.
    pub difficulty: Option<String>,
    /// Features that must hold.
    pub requires: Vec<String>,
    /// Features of which one must hold.
    pub any_of: Vec<String>,
    /// Asked about variant slices.
    pub variant: bool,
    /// Answer must carry code.
    pub code: bool,
    /// Question text with placeholders.
    pub text: String,
    /// `file:line` it came from.
    pub origin: String,
}

const PLACEHOLDERS: [&str; 10] = [
    "api", "apis", "family", "variant", "kernel", "kernels", "launcher", "entry", "lib", "version",
];

/// Loads and checks every `*.toml` in a folder, sorted by file name.
pub fn load_templates(dir: &Path) -> Result<Vec<Template>, TemplateError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|source| TemplateError::Read {
            path: dir.display().to_string(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|source| TemplateError::Read {
            path: f.display().to_string(),
            source,
        })?;
        out.extend(parse_templates(&text, &f.display().to_string())?);
    }
    if out.is_empty() {
        return Err(TemplateError::Empty(dir.display().to_string()));
    }
    let mut ids = std::collections::HashSet::new();
    for t in &out {
        if !ids.insert(t.id.clone()) {
            return Err(TemplateError::Syntax {
                path: t.origin.clone(),
                message: format!("template id `{}` is used twice; ids must be unique", t.id),
            });
        }
    }
    Ok(out)
}

/// Parses and checks one template file's text; `name` is used in messages.
pub fn parse_templates(text: &str, name: &str) -> Result<Vec<Template>, TemplateError> {
    let raw: TemplateFile = toml::from_str(text).map_err(|e| TemplateError::Syntax {
        path: name.to_string(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for t in raw.templates {
        let line = text[..t.id.span().start]
            .bytes()
            .filter(|b| *b == b'\n')
            .count()
            + 1;
        let id = t.id.get_ref().clone();
        let bad = |field: &str, message: String| TemplateError::Invalid {
            path: name.to_string(),
            line,
            id: id.clone(),
            field: field.to_string(),
            message,
        };
        let difficulty = match t.difficulty.as_str() {
            "slice" => None,
            "L1" | "L2" | "L3" => Some(t.difficulty.clone()),
            other => {
                return Err(bad(
                    "difficulty",
                    format!("`{other}` is not one of L1, L2, L3, slice"),
                ))
            }
        };
        for f in t.requires.iter().chain(&t.any_of) {
            if SliceFeatures::default().get(f).is_none() {
                return Err(bad(
                    "requires",
                    format!(
                        "unknown slice feature `{f}`; known: kernels, {}",
                        SliceFeatures::NAMES.join(", ")
                    ),
                ));
            }
        }
        if let Some(open) = unclosed_placeholder(&t.text) {
            return Err(bad(
                "text",
                format!("unclosed placeholder {{{open}: close it with `}}`"),
            ));
        }
        for ph in placeholders(&t.text) {
            if !PLACEHOLDERS.contains(&ph.as_str()) {
                return Err(bad(
                    "text",
                    format!(
                        "unknown placeholder {{{ph}}}; known: {}",
                        PLACEHOLDERS.join(", ")
                    ),
                ));
            }
        }
        if t.text.trim().len() < 20 {
            return Err(bad(
                "text",
                "the question is too short to be a question".into(),
            ));
        }
        out.push(Template {
            category: raw.category.clone(),
            id,
            version: t.version,
            difficulty,
            requires: t.requires,
            any_of: t.any_of,
            variant: t.variant,
            code: t.code,
            text: t.text.trim().to_string(),
            origin: format!("{name}:{line}"),
        });
    }
    Ok(out)
}

/// A `{name` that no `}` closes before the next `{` or the end of the text.
fn unclosed_placeholder(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let closed = after
            .find(['{', '}'])
            .is_some_and(|k| after[k..].starts_with('}'));
        if !name.is_empty() && !closed {
            return Some(name);
        }
        rest = after;
    }
    None
}

fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        match after.find('}') {
            Some(j)
                if after[..j]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && j > 0 =>
            {
                out.push(after[..j].to_string());
                rest = &after[j + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

/// Does a template apply to a slice?
pub fn applies(t: &Template, s: &Slice) -> bool {
    // Variant templates go to variant slices, the others to the family's slice.
    if t.variant == s.variant.is_empty() {
        return false;
    }
    let has = |f: &String| s.features.get(f).unwrap_or(false);
    if !t.requires.iter().all(has) || (!t.any_of.is_empty() && !t.any_of.iter().any(has)) {
        return false;
    }
    // A placeholder the slice cannot fill makes the question unanswerable.
    let text = &t.text;
    let needs_kernel = text.contains("{kernel}") || text.contains("{kernels}");
    let needs_launcher = text.contains("{launcher}");
    !(needs_kernel && first(s, PieceRole::Kernel).is_none()
        || needs_launcher && first(s, PieceRole::Launcher).is_none())
}

fn first(s: &Slice, role: PieceRole) -> Option<&str> {
    s.pieces
        .iter()
        .find(|p| p.role == role)
        .map(|p| p.name.as_str())
}

/// The system message: how to answer, for every question.
pub const SYSTEM_PROMPT: &str = "You are an expert in AMD GPU programming with HIP and in the ROCm math libraries. \
Answer the question about the library source code using only the code slice given. \
Each slice block starts with `=== file:start-end (name, role) ===`, and every code line starts with its line number. \
Cite the lines every statement rests on as {\"file\", \"start\", \"end\"} taken from the slice. \
Do not name functions, kernels or macros that are not in the slice. \
Reply with one JSON object with the keys \"answer\" (prose), \"code\" (HIP/C++ source when the question asks for code, else \"\") and \"citations\".";

/// The JSON Schema an answer must follow (sent as `response_format`).
pub fn answer_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "maxLength": 3000},
            "code": {"type": "string", "maxLength": 6000},
            "citations": {
                "type": "array",
                "maxItems": 12,
                "items": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "maxLength": 200},
                        "start": {"type": "integer"},
                        "end": {"type": "integer"}
                    },
                    "required": ["file", "start", "end"]
                }
            }
        },
        "required": ["answer", "code", "citations"]
    })
}

/// Fills a template's placeholders from a slice.
pub fn fill(t: &Template, s: &Slice) -> String {
    let kernels: Vec<&str> = s
        .pieces
        .iter()
        .filter(|p| p.role == PieceRole::Kernel)
        .map(|p| p.name.as_str())
        .collect();
    let entry = first(s, PieceRole::Entry).unwrap_or(&s.api);
    let variant = match s.variant.as_str() {
        "" => "base",
        "64" => "64-bit (ILP64, `_64`)",
        "batched" => "batched",
        "strided_batched" => "strided-batched",
        "complex" => "complex-precision",
        v => v,
    };
    t.text
        .replace("{api}", &s.api)
        .replace("{apis}", &s.apis.join(", "))
        .replace("{family}", &s.family)
        .replace("{variant}", variant)
        .replace("{kernel}", kernels.first().copied().unwrap_or("the kernel"))
        .replace("{kernels}", &kernels.join(", "))
        .replace(
            "{launcher}",
            first(s, PieceRole::Launcher).unwrap_or("the launcher"),
        )
        .replace("{entry}", entry)
        .replace("{lib}", &s.lib)
        .replace("{version}", &s.version)
}

/// Stable question id: library, version, slice, template id and version.
pub fn question_id(s: &Slice, t: &Template) -> String {
    let mut h = Sha256::new();
    h.update(format!("{}\u{0}{}\u{0}{}\u{0}{}", s.id, t.id, t.version, t.category).as_bytes());
    format!("{}-{}", s.lib, &format!("{:x}", h.finalize())[..16])
}

/// Every question the templates ask of a slice.
pub fn plan(templates: &[Template], s: &Slice) -> Vec<Question> {
    let shown = render(s);
    // The slice is the bulk of every prompt: count it once.
    let fixed = count_tokens(SYSTEM_PROMPT) + rendered_tokens(s);
    templates
        .iter()
        .filter(|t| applies(t, s))
        .map(|t| {
            let text = fill(t, s);
            let head = format!(
                "Code slice of {lib} {version}, API family `{family}` ({apis}):\n\n",
                lib = s.lib,
                version = s.version,
                family = s.family,
                apis = s.apis.join(", "),
            );
            let user = format!("{head}{shown}\nQuestion: {text}");
            // Token counts add up across these boundaries to within a few tokens.
            let prompt_tokens = fixed + count_tokens(&head) + count_tokens(&text) + 3;
            Question {
                id: question_id(s, t),
                slice_id: s.id.clone(),
                category: t.category.clone(),
                template_id: t.id.clone(),
                template_version: t.version,
                difficulty: t.difficulty.clone().unwrap_or_else(|| s.difficulty.clone()),
                text,
                requires_code: t.code,
                messages: vec![
                    ("system".into(), SYSTEM_PROMPT.into()),
                    ("user".into(), user),
                ],
                prompt_tokens,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
category = "synchronization"

[[template]]
id = "sync.barriers"
version = 1
requires = ["barriers"]
text = "Where does {kernel} wait at a barrier, and what would break without it?"

[[template]]
id = "sync.variant"
version = 2
difficulty = "L2"
variant = true
text = "How does the {variant} form of {family} synchronize differently?"
"#;

    #[test]
    fn templates_load_with_their_origin() {
        let t = parse_templates(FILE, "question_templates/sync.toml").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].origin, "question_templates/sync.toml:5");
        assert_eq!(
            (t[1].difficulty.as_deref(), t[1].variant),
            (Some("L2"), true)
        );
    }

    #[test]
    fn bad_templates_name_line_and_field() {
        let bad = FILE.replace(
            "requires = [\"barriers\"]",
            "requires = [\"barriers\", \"lsd\"]",
        );
        let e = parse_templates(&bad, "q.toml").unwrap_err().to_string();
        assert!(e.starts_with("q.toml: line 5: template `sync.barriers`: field `requires`: unknown slice feature `lsd`"), "{e}");
        let bad = FILE.replace("{kernel} wait", "{kernal} wait");
        let e = parse_templates(&bad, "q.toml").unwrap_err().to_string();
        assert!(
            e.contains("field `text`: unknown placeholder {kernal}"),
            "{e}"
        );
        let bad = FILE.replace("difficulty = \"L2\"", "difficulty = \"hard\"");
        assert!(parse_templates(&bad, "q.toml")
            .unwrap_err()
            .to_string()
            .contains("line 11"));
    }

    #[test]
    fn placeholders_are_found() {
        assert_eq!(placeholders("a {api} b {x_y} {} {not a}"), ["api", "x_y"]);
        assert_eq!(
            unclosed_placeholder("What does {kernel do?"),
            Some("kernel".into())
        );
        assert_eq!(unclosed_placeholder("a {api} b {} c {not a}"), None);
        assert_eq!(
            unclosed_placeholder("{api} then {kernel and {api}"),
            Some("kernel".into())
        );
    }
}
