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

use crate::model::{PiecePart, PieceRole, Question, Slice, SliceFeatures, SlicePiece};
use crate::slice::{count_tokens, render, rendered_tokens};

pub mod mutate;

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
    /// Asked about a variant's slice (`batched`, `strided_batched`, `64`, `complex`,
    /// `ex`) instead of the family's.
    #[serde(default)]
    pub variant: bool,
    /// Only these variants (implies `variant`): `edge.complex` only on complex slices.
    #[serde(default)]
    pub variants: Vec<String>,
    /// What an ideal answer must cite, which sets the difficulty: `target` (one
    /// function: L1), `launch` (target and launcher), `chain` (entry to target),
    /// `arg-check` (the check in its calling context), `variant` (variant and base
    /// form). Several files make it L3, one file L2.
    #[serde(default)]
    pub cites: Option<String>,
    /// Asked on slices that nearly repeat another family's (`skip`, the default),
    /// on those too (`also`), or only there (`only`).
    #[serde(default = "twins_skip")]
    pub twins: String,
    /// Other wordings of `text`; each slice gets one, chosen by a hash, among those
    /// whose placeholders its code fills.
    #[serde(default)]
    pub phrasings: Vec<String>,
    /// Placeholders the slice must fill although the text does not show them (an
    /// edge-case question needs the argument check in its slice).
    #[serde(default)]
    pub needs: Vec<String>,
    /// The answer must contain HIP code.
    #[serde(default)]
    pub code: bool,
    /// Asked about a copy of the slice whose target kernel has one line changed into a
    /// bug (find-the-bug tasks, see `question::mutate`); the answer is checked against it.
    #[serde(default)]
    pub mutate: bool,
    /// What makes two families' ideal answers the same: the question is asked once per
    /// distinct value of these keys over a run, about the first family that has it.
    /// Keys: `variant`, `folder` (of the code the question is about), or a placeholder.
    #[serde(default)]
    pub pattern: Vec<String>,
    /// The parts of the slice the question is shown (see [`crate::model::PiecePart`]):
    /// `path`, `target`, `work`, `base`, `cross`, `context`. Pieces the question names
    /// (a function, a `file:line` site) are shown whatever their part.
    #[serde(default = "default_shows")]
    pub shows: Vec<String>,
    /// Shows the target kernel and its work as well where the kernel carries the
    /// family's name: what the API computes is written there (rotmg's
    /// `rocblas_rotmg_calc`), not in a host chain that only passes arguments on.
    #[serde(default)]
    pub own_work: bool,
    /// The question; placeholders: {api} {apis} {precisions} {family} {variant} {kernel} {kernels}
    /// {launcher} {entry} {lib} {version}.
    pub text: String,
}

fn slice_level() -> String {
    "slice".to_string()
}

fn twins_skip() -> String {
    "skip".to_string()
}

fn default_shows() -> Vec<String> {
    ["path", "target", "work"].map(String::from).to_vec()
}

/// The parts of a slice by the names templates give them.
pub const PARTS: [(&str, PiecePart); 6] = [
    ("path", PiecePart::Path),
    ("target", PiecePart::Target),
    ("work", PiecePart::Work),
    ("base", PiecePart::Base),
    ("cross", PiecePart::Cross),
    ("context", PiecePart::Context),
];

/// Variant groups a template may name.
pub const VARIANTS: [&str; 5] = ["batched", "strided_batched", "64", "complex", "ex"];

/// What an answer may be required to cite (`cites`).
pub const CITES: [&str; 6] = ["target", "launch", "chain", "arg-check", "variant", "entry"];

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
    /// Only these variants (empty: any, when `variant`).
    pub variants: Vec<String>,
    /// What the answer must cite (sets the difficulty when `difficulty` is not fixed).
    pub cites: Option<String>,
    /// `skip`, `also` or `only` on twin slices.
    pub twins: String,
    /// Answer must carry code.
    pub code: bool,
    /// Asked about the slice with a bug planted in its target kernel.
    pub mutate: bool,
    /// Question text with placeholders.
    pub text: String,
    /// Other wordings.
    pub phrasings: Vec<String>,
    /// Placeholders that must fill although the text does not show them.
    pub needs: Vec<String>,
    /// Parts of the slice the question is shown.
    pub shows: Vec<PiecePart>,
    /// Also the target and its work, where the target is the family's own kernel.
    pub own_work: bool,
    /// Keys of the pattern it is asked once per (empty: once per slice).
    pub pattern: Vec<String>,
    /// `file:line` it came from.
    pub origin: String,
}

const PLACEHOLDERS: [&str; 42] = [
    "twin",
    "size_args",
    "elem_type",
    "scalars",
    "grid_limit",
    "grid_limit_site",
    "info_site",
    "arch",
    "arch_site",
    "workspace_fn",
    "cross_kernel",
    "api",
    "apis",
    "precisions",
    "family",
    "variant",
    "kernel",
    "kernels",
    "launcher",
    "entry",
    "lib",
    "version",
    "kernel_range",
    "kernel_lines",
    "arg_check",
    "arg_check_site",
    "impl",
    "base_impl",
    "base_api",
    "launch_site",
    "launch_line",
    "launch_sites",
    "shape",
    "condition",
    "threshold",
    "threshold_site",
    "bounds",
    "barrier",
    "lds",
    "atomic",
    "wave",
    "hand_over",
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
        for v in &t.variants {
            if !VARIANTS.contains(&v.as_str()) {
                return Err(bad(
                    "variants",
                    format!("unknown variant `{v}`; known: {}", VARIANTS.join(", ")),
                ));
            }
        }
        if let Some(c) = &t.cites {
            if !CITES.contains(&c.as_str()) {
                return Err(bad(
                    "cites",
                    format!("`{c}` is not one of {}", CITES.join(", ")),
                ));
            }
        }
        let mut shows = Vec::new();
        for x in &t.shows {
            match PARTS.iter().find(|(n, _)| n == x) {
                Some((_, part)) => shows.push(*part),
                None => {
                    return Err(bad(
                        "shows",
                        format!(
                            "unknown slice part `{x}`; known: {}",
                            PARTS.map(|(n, _)| n).join(", ")
                        ),
                    ))
                }
            }
        }
        for k in &t.pattern {
            if k != "variant" && k != "folder" && !PLACEHOLDERS.contains(&k.as_str()) {
                return Err(bad(
                    "pattern",
                    format!("unknown pattern key `{k}`; known: variant, folder, or a placeholder"),
                ));
            }
        }
        if !["skip", "also", "only"].contains(&t.twins.as_str()) {
            return Err(bad(
                "twins",
                format!("`{}` is not one of skip, also, only", t.twins),
            ));
        }
        for x in std::iter::once(&t.text).chain(&t.phrasings) {
            if let Some(open) = unclosed_placeholder(x) {
                return Err(bad(
                    "text",
                    format!("unclosed placeholder {{{open}: close it with `}}`"),
                ));
            }
        }
        for ph in std::iter::once(&t.text)
            .chain(&t.phrasings)
            .flat_map(|x| placeholders(x))
            .chain(t.needs.iter().cloned())
        {
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
        if !crate::model::CATEGORIES.contains(&raw.category.as_str()) {
            return Err(bad(
                "category",
                format!(
                    "`{}` is not a category entries may have; known: {}",
                    raw.category,
                    crate::model::CATEGORIES.join(", ")
                ),
            ));
        }
        if t.code != crate::model::category_requires_code(&raw.category) {
            return Err(bad(
                "code",
                format!(
                    "answers of category `{}` {} carry HIP code: set `code = {}`",
                    raw.category,
                    if t.code { "need not" } else { "must" },
                    !t.code
                ),
            ));
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
            variant: t.variant || !t.variants.is_empty(),
            variants: t.variants,
            cites: t.cites,
            twins: t.twins,
            code: t.code,
            mutate: t.mutate,
            text: t.text.trim().to_string(),
            phrasings: t.phrasings.iter().map(|p| p.trim().to_string()).collect(),
            needs: t.needs,
            shows,
            own_work: t.own_work,
            pattern: t.pattern,
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

/// Does a template apply to a slice: the right variant, twin status and features?
pub fn applies(t: &Template, s: &Slice) -> bool {
    // Variant templates go to variant slices (only theirs), the others to the family's.
    if t.variant == s.variant.is_empty() {
        return false;
    }
    if !t.variants.is_empty() && !t.variants.contains(&s.variant) {
        return false;
    }
    let twin = !s.focus.twin_of.is_empty();
    if matches!((t.twins.as_str(), twin), ("skip", true) | ("only", false)) {
        return false;
    }
    let has = |f: &String| s.features.get(f).unwrap_or(false);
    t.requires.iter().all(has) && (t.any_of.is_empty() || t.any_of.iter().any(has))
}

fn first(s: &Slice, role: PieceRole) -> Option<&str> {
    s.pieces
        .iter()
        .find(|p| p.role == role)
        .map(|p| p.name.as_str())
}

fn shown(s: &Slice, name: &str) -> bool {
    !name.is_empty() && s.pieces.iter().any(|p| p.name == name)
}

/// Is `file:line` (or `file:start-end`) inside the lines a slice shows?
fn covered(s: &Slice, site: &str) -> bool {
    let Some((file, range)) = site.rsplit_once(':') else {
        return false;
    };
    let (a, b) = match range.split_once('-') {
        Some((a, b)) => (a.parse().unwrap_or(0), b.parse().unwrap_or(0)),
        None => {
            let l = range.parse().unwrap_or(0);
            (l, l)
        }
    };
    // A range must lie in one piece (the target is shown whole, never windowed).
    s.pieces
        .iter()
        .any(|p| p.file == file && p.start <= a && b <= p.end && a > 0)
}

/// The text of the slice's public declaration (empty if it shows none).
fn declaration_text(s: &Slice) -> &str {
    s.pieces
        .iter()
        .find(|p| p.role == PieceRole::Declaration)
        .map_or("", |p| p.text.as_str())
}

/// The element type a precision-named API works on (`rocblas_sgemv`: float,
/// `rocblas_izamax`: complex double), as plain HIP types; `None` for APIs named by
/// no single precision (`_ex`, mixed).
fn elem_type(api: &str) -> Option<&'static str> {
    let stem = api.split_once('_')?.1;
    let stem = match stem.strip_prefix('i') {
        Some(rest) if rest.starts_with(['s', 'd', 'c', 'z']) => rest,
        _ => stem,
    };
    if stem.ends_with("_ex") || stem.contains("_ex_") {
        return None;
    }
    match stem.chars().next()? {
        's' => Some("float"),
        'd' => Some("double"),
        'c' => Some("complex float (hipFloatComplex)"),
        'z' => Some("complex double (hipDoubleComplex)"),
        'h' => Some("half (rocblas_half)"),
        _ => None,
    }
}

/// The element type the slice's target kernel works on for its API: the API's, except
/// where a complex API's kernel takes only the real type (`template <..., typename S>`,
/// no `T`: stedc_mergePrepare_kernel runs on floats for rocsolver_chegvd).
fn kernel_elem_type(s: &Slice) -> Option<String> {
    let api_type = elem_type(&s.api)?;
    let real = match api_type.split(" (").next() {
        Some("complex float") => "float",
        Some("complex double") => "double",
        _ => return Some(api_type.to_string()),
    };
    let kernel = s
        .pieces
        .iter()
        .find(|p| p.role == PieceRole::Kernel && p.name == s.focus.target)?;
    let params = template_type_params(&kernel.text);
    let real_only = params.iter().any(|p| p == "S") && !params.iter().any(|p| p.starts_with('T'));
    Some(match real_only {
        true => format!(
            "{real} (the real type {} instantiates {} with)",
            s.api, s.focus.target
        ),
        false => api_type.to_string(),
    })
}

/// The names of the type parameters a `template <...>` header declares
/// (`template <rocsolver_stedc_mode MODE, typename S>`: `S`).
fn template_type_params(header: &str) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE
        .get_or_init(|| regex::Regex::new(r"\b(?:typename|class)\s+(\w+)").expect("static regex"));
    let Some(open) = header
        .find("template <")
        .or_else(|| header.find("template<"))
    else {
        return Vec::new();
    };
    let head = &header[open..];
    let head = &head[..head.find(['(', '{']).unwrap_or(head.len())];
    re.captures_iter(head).map(|c| c[1].to_string()).collect()
}

/// The form an API name is of: `_strided_batched_64`, `_batched`, `_64`, ..., or `""`
/// for the base form. APIs of one family and one form differ only in element type.
fn form_suffix(api: &str) -> &'static str {
    const FORMS: [&str; 5] = [
        "_strided_batched_64",
        "_batched_64",
        "_strided_batched",
        "_batched",
        "_64",
    ];
    FORMS.into_iter().find(|f| api.ends_with(f)).unwrap_or("")
}

/// The value of one placeholder for a slice, or why the slice cannot answer a question
/// that needs it.
fn value(s: &Slice, ph: &str) -> Result<String, String> {
    let f = &s.focus;
    let need = |name: &str, what: &str| -> Result<String, String> {
        if shown(s, name) {
            Ok(name.to_string())
        } else if name.is_empty() {
            Err(format!("no {what} on the path"))
        } else {
            Err(format!("{what} not in the slice"))
        }
    };
    let val = |k: &str| -> Result<String, String> {
        f.values
            .get(k)
            .cloned()
            .ok_or_else(|| format!("no {k} read off the code"))
    };
    let site = |k: &str| -> Result<String, String> {
        let v = val(k)?;
        if covered(s, &v) {
            Ok(v)
        } else {
            Err(format!("{k} lines not in the slice"))
        }
    };
    Ok(match ph {
        "size_args" => {
            // The sizes, increments, leading dimensions and batch count the public
            // declaration takes, in its order: a zero-size question asks of those
            // (iamin has no leading dimension, geam no increment).
            let decl = declaration_text(s);
            let code = decl
                .find(&format!("{}(", s.api))
                .or_else(|| decl.find(&s.api))
                .map_or("", |k| &decl[k..]);
            let mut names: Vec<&str> = Vec::new();
            for w in code.split(|c: char| !c.is_alphanumeric() && c != '_') {
                let size = matches!(w, "m" | "n" | "k" | "kl" | "ku" | "nrhs" | "batch_count")
                    || (w.len() <= 5 && (w.starts_with("inc") || w.starts_with("ld")));
                if size && !names.contains(&w) {
                    names.push(w);
                }
            }
            if names.is_empty() {
                return Err("the declaration takes no size".into());
            }
            let coded: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            match coded.len() {
                1 => coded[0].clone(),
                n => format!("{} or {}", coded[..n - 1].join(", "), coded[n - 1]),
            }
        }
        "elem_type" => kernel_elem_type(s).ok_or("the API's name gives no single element type")?,
        "scalars" => {
            // Scalars passed by pointer, as the public declaration names them.
            let decl = declaration_text(s);
            let names: Vec<&str> = ["alpha", "beta"]
                .into_iter()
                .filter(|n| {
                    decl.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|w| w == *n)
                })
                .collect();
            if names.is_empty() {
                return Err("the API takes no alpha or beta scalar".into());
            }
            names.join(" and ")
        }
        "api" => s.api.clone(),
        "apis" => s.apis.join(", "),
        "precisions" => {
            // The variants that differ from the API only in element type: the batched,
            // strided and `_64` forms have implementations of their own.
            let same: Vec<&str> = s
                .apis
                .iter()
                .filter(|a| form_suffix(a) == form_suffix(&s.api))
                .map(String::as_str)
                .collect();
            if same.len() < 2 {
                return Err("the API has no other precision in its form".into());
            }
            same.join(", ")
        }
        "family" => s.family.clone(),
        "lib" => s.lib.clone(),
        "version" => s.version.clone(),
        "variant" => match s.variant.as_str() {
            "" => "base",
            "64" => "64-bit (ILP64, `_64`)",
            "batched" => "batched",
            "strided_batched" => "strided-batched",
            "complex" => "complex-precision",
            "ex" => "extended (`_ex`, mixed-precision)",
            v => v,
        }
        .to_string(),
        "kernel" => {
            if f.target.is_empty() {
                return Err("no target kernel".into());
            }
            if !covered(s, &f.target_range) {
                return Err("target kernel not whole in the slice".into());
            }
            f.target.clone()
        }
        "kernel_range" => {
            value(s, "kernel")?;
            f.target_range.clone()
        }
        "kernel_lines" => {
            value(s, "kernel")?;
            f.target_lines.to_string()
        }
        "kernels" => {
            let k: Vec<&str> = s
                .pieces
                .iter()
                .filter(|p| p.role == PieceRole::Kernel)
                .map(|p| p.name.as_str())
                .collect();
            if k.is_empty() {
                return Err("no kernel in the slice".into());
            }
            k.join(", ")
        }
        "launcher" => need(&f.launcher, "launcher")?,
        "entry" => first(s, PieceRole::Entry)
            .ok_or("no entry point in the slice")?
            .to_string(),
        "arg_check" => need(&f.arg_check, "argument check")?,
        "arg_check_site" => site("arg_check_site")?,
        "impl" => {
            let v = need(&f.variant_impl, "variant function that differs")?;
            // The `_64` forms often compile the base form's own function with 64-bit
            // integers: one name, two builds, which the question must tell apart.
            if s.variant == "64" && f.base_counterparts.first() == Some(&v) {
                format!("{v} (built with 64-bit integer arguments for the `_64` API)")
            } else {
                v
            }
        }
        "base_impl" => {
            let b = need(
                f.base_counterparts.first().map_or("", |x| x.as_str()),
                "base-form counterpart",
            )?;
            if s.variant == "64" && b == f.variant_impl {
                format!("{b} (built with 32-bit `rocblas_int`-style arguments)")
            } else {
                b
            }
        }
        "base_api" => {
            let mut b = s.api.clone();
            for v in ["_strided_batched", "_batched", "_64"] {
                b = b.replace(v, "");
            }
            if b == s.api {
                return Err("no base API name".into());
            }
            b
        }
        "launch_site" => site("launch_site")?,
        "info_site" => site("info_site")?,
        // A choice the API's own code makes on the way to its kernel, not one inside
        // the paired library's code or in code other questions were cut for; a grid
        // limit is the one of the library whose kernel the question names (rocBLAS's
        // gemv grid is no limit on rocSOLVER's larfg_kernel_small).
        "arch_site" | "threshold_site" | "grid_limit_site" => {
            let v = site(ph)?;
            let lib = if ph == "grid_limit_site" {
                s.pieces
                    .iter()
                    .find(|p| p.part == PiecePart::Target)
                    .map_or(s.lib.as_str(), |p| p.lib.as_str())
            } else {
                s.lib.as_str()
            };
            let (file, line) = v.rsplit_once(':').unwrap_or((&v, ""));
            let line: u32 = line
                .split('-')
                .next()
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            let own = s.pieces.iter().any(|p| {
                p.file == file
                    && p.lib == lib
                    && p.part <= PiecePart::Work
                    && p.start <= line
                    && line <= p.end
            });
            if !own {
                return Err(format!("{ph} is not in the API's own code on its path"));
            }
            v
        }
        "twin" => {
            if f.twin_of.is_empty() {
                return Err("no twin family".into());
            }
            f.twin_of.clone()
        }
        "cross_kernel" => need(&f.cross_kernel, "kernel of the other library")?,
        "workspace_fn" => need(&val("workspace_fn")?, "workspace-size function")?,
        "barrier" => site("barrier")?,
        "hand_over" => {
            let v = val("hand_over")?;
            let caller = v
                .split(" in ")
                .nth(1)
                .and_then(|x| x.split(' ').next())
                .unwrap_or("");
            need(caller, "hand-over call")?;
            v
        }
        k => val(k)?,
    })
}

/// Fills a template's text from a slice: `Err` names the first placeholder the slice
/// cannot answer for.
pub fn fill_checked(text: &str, s: &Slice) -> Result<String, String> {
    let mut out = text.to_string();
    for ph in placeholders(text) {
        let v = value(s, &ph)?;
        let v = match ph.as_str() {
            // Code values read as code.
            "shape" | "condition" | "threshold" | "bounds" | "lds" | "launch_line" => {
                format!("`{v}`")
            }
            _ => v,
        };
        out = out.replace(&format!("{{{ph}}}"), &v);
    }
    Ok(out)
}

/// Fills a template's first wording that the slice can answer; `Err` says why none.
pub fn fill(t: &Template, s: &Slice) -> Result<String, String> {
    for ph in &t.needs {
        value(s, ph)?;
    }
    let texts: Vec<&String> = std::iter::once(&t.text).chain(&t.phrasings).collect();
    let h = Sha256::digest(format!("{}\u{0}{}", s.id, t.id).as_bytes());
    let k0 = u16::from_be_bytes([h[0], h[1]]) as usize % texts.len();
    let mut why = None;
    for k in 0..texts.len() {
        match fill_checked(texts[(k0 + k) % texts.len()], s) {
            Ok(x) => return Ok(x),
            Err(e) => {
                why.get_or_insert(e);
            }
        }
    }
    Err(why.unwrap_or_default())
}

/// Difficulty from what an ideal answer must cite: one function L1, one file L2,
/// several files (or host and device orchestration across files) L3.
pub fn difficulty(t: &Template, s: &Slice) -> String {
    if let Some(d) = &t.difficulty {
        return d.clone();
    }
    let files_of = |names: &[&str]| -> (usize, usize) {
        let ps: Vec<&crate::model::SlicePiece> = s
            .pieces
            .iter()
            .filter(|p| names.contains(&p.name.as_str()))
            .collect();
        let fns: std::collections::BTreeSet<&str> = ps.iter().map(|p| p.name.as_str()).collect();
        let files: std::collections::BTreeSet<&str> = ps.iter().map(|p| p.file.as_str()).collect();
        (fns.len(), files.len())
    };
    let f = &s.focus;
    let (fns, files) = match t.cites.as_deref() {
        Some("target") | Some("entry") => (1, 1),
        Some("launch") => files_of(&[&f.target, &f.launcher]),
        Some("chain") => {
            let names: Vec<&str> = f
                .chain
                .iter()
                .map(|x| x.as_str())
                .chain([f.target.as_str()])
                .collect();
            files_of(&names)
        }
        Some("arg-check") => {
            let mut names = vec![f.arg_check.as_str()];
            // The check is read in its calling context (the function that calls it).
            let site_file = f
                .values
                .get("arg_check_site")
                .and_then(|x| x.rsplit_once(':'))
                .map(|x| x.0);
            if let Some(caller) = s.pieces.iter().find(|p| Some(p.file.as_str()) == site_file) {
                names.push(caller.name.as_str());
            }
            files_of(&names)
        }
        Some("variant") => {
            let mut names = vec![f.variant_impl.as_str()];
            names.extend(f.base_counterparts.iter().map(|x| x.as_str()));
            files_of(&names)
        }
        _ => return s.difficulty.clone(),
    };
    match (fns, files) {
        (0..=1, _) => "L1",
        (_, 0..=1) => "L2",
        _ => "L3",
    }
    .to_string()
}

/// The system message: how to answer, for every question.
pub const SYSTEM_PROMPT: &str = "You are an expert in AMD GPU programming with HIP and in the ROCm math libraries. \
Answer the question about the library source code using only the code slice given. \
Each slice block starts with `=== file:start-end (name, role) ===`, and every code line starts with its line number. \
Cite the lines every statement rests on as objects {\"file\", \"start\", \"end\"}, with the file path exactly as the block header writes it. \
Do not name functions, kernels or macros that are not in the slice, and write each name in full as the slice spells it. \
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

/// Stable question id: library, version, slice, template id and version.
pub fn question_id(s: &Slice, t: &Template) -> String {
    let mut h = Sha256::new();
    h.update(format!("{}\u{0}{}\u{0}{}\u{0}{}", s.id, t.id, t.version, t.category).as_bytes());
    format!("{}-{}", s.lib, &format!("{:x}", h.finalize())[..16])
}

/// The questions a slice gets, and those it cannot answer (template id, why).
#[derive(Debug, Default)]
pub struct SlicePlan {
    /// Questions to ask.
    pub questions: Vec<Question>,
    /// Templates that apply but whose question the slice cannot answer.
    pub not_asked: Vec<(String, String)>,
    /// Copies of the slice that questions are asked about instead (a planted bug), by
    /// their own ids.
    pub derived: Vec<Slice>,
}

/// The first line of every user message: which code this is.
pub fn prompt_head(s: &Slice) -> String {
    format!(
        "Code slice of {lib} {version}, API family `{family}` ({apis}):\n\n",
        lib = s.lib,
        version = s.version,
        family = s.family,
        apis = s.apis.join(", "),
    )
}

/// The pattern a question of `t` follows on slice `s` (see `TemplateSpec::pattern`).
fn pattern_of(t: &Template, s: &Slice) -> Option<String> {
    if t.pattern.is_empty() {
        return None;
    }
    let folder = || {
        let file = s
            .pieces
            .iter()
            .find(|p| p.name == s.focus.variant_impl || p.name == s.focus.target)
            .or_else(|| s.pieces.iter().find(|p| p.role == PieceRole::Entry))
            .map_or("", |p| p.file.as_str());
        file.rsplit_once('/').map_or("", |x| x.0).to_string()
    };
    let keys: Vec<String> = t
        .pattern
        .iter()
        .map(|k| match k.as_str() {
            "variant" => s.variant.clone(),
            "folder" => folder(),
            ph => value(s, ph).unwrap_or_default(),
        })
        .collect();
    Some(format!("{} [{}]", t.id, keys.join(", ")))
}

/// `file:line` and `file:start-end` sites a text names.
fn named_sites(text: &str) -> Vec<(&str, u32, u32)> {
    static R: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let r = R.get_or_init(|| {
        regex::Regex::new(r"([A-Za-z0-9_./-]+\.[A-Za-z]+):(\d+)(?:-(\d+))?").expect("static regex")
    });
    r.captures_iter(text)
        .filter_map(|c| {
            let a: u32 = c[2].parse().ok()?;
            let b: u32 = c.get(3).and_then(|m| m.as_str().parse().ok()).unwrap_or(a);
            Some((c.get(1)?.as_str(), a, b))
        })
        .collect()
}

/// Does `text` name `name` as a whole identifier?
fn names(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !name.is_empty()
        && text.match_indices(name).any(|(k, _)| {
            !text[..k].chars().next_back().is_some_and(ident)
                && !text[k + name.len()..].chars().next().is_some_and(ident)
        })
}

/// The parts of slice `s` a question of template `t` is shown.
pub fn shown_parts(t: &Template, s: &Slice) -> Vec<PiecePart> {
    let mut shows = t.shows.clone();
    // `rocblas_rotmg_kernel` for rotmg; not latrd's kernels for sygv.
    let family_kernel = !s.family.is_empty()
        && format!("_{}_", s.focus.target).contains(&format!("_{}_", s.family));
    if t.own_work && family_kernel {
        for p in [PiecePart::Target, PiecePart::Work] {
            if !shows.contains(&p) {
                shows.push(p);
            }
        }
    }
    shows
}

/// What a question is shown of its slice: the parts its template shows, and every
/// piece the `texts` name (a function by name, a `file:line` site inside it). The rest
/// was cut for the slice's other questions: a launch-shape question needs no
/// base-form code, a question on a rocSOLVER kernel no rocBLAS gemv. The id is the
/// slice's; [`view_id`] names a view that drops something.
pub fn view(s: &Slice, shows: &[PiecePart], texts: &[&str]) -> Slice {
    let sites: Vec<(&str, u32, u32)> = texts.iter().flat_map(|t| named_sites(t)).collect();
    // A size query named brings the size queries it takes the maximum of, to the
    // question that names it only (one text): the view its group shares would spend
    // every other question's budget on them.
    let size_query = crate::slice::is_size_query;
    let asks_size = texts.len() == 1
        && s.pieces
            .iter()
            .any(|p| size_query(&p.name) && texts.iter().any(|t| names(t, &p.name)));
    let named = |p: &SlicePiece| {
        texts.iter().any(|t| names(t, &p.name))
            || sites
                .iter()
                .any(|&(f, a, b)| f == p.file && a <= p.end && p.start <= b)
            || (asks_size && size_query(&p.name))
    };
    // The paired library's code is shown with the path into it, or not at all. A
    // wrapper of the slice's own library named alone (`rocblasCall_gemv`, to which a
    // workspace question's buffers are passed) brings no code of the other.
    let cross = s.pieces.iter().any(|p| {
        p.part == PiecePart::Cross && named(p) && (p.lib != s.lib || p.role == PieceRole::Kernel)
    });
    let pieces: Vec<SlicePiece> = s
        .pieces
        .iter()
        .filter(|p| shows.contains(&p.part) || named(p) || (cross && p.part == PiecePart::Cross))
        .cloned()
        .collect();
    let omitted = s
        .omitted
        .iter()
        .filter(|o| shows.contains(&o.part))
        .cloned()
        .collect();
    Slice {
        tokens: pieces.iter().map(|p| p.tokens).sum(),
        pieces,
        omitted,
        ..s.clone()
    }
}

/// The id of a view of slice `s`: the slice's own when it shows every piece, else the
/// slice's with a hash of the pieces it keeps (views keeping the same pieces share it,
/// and with it a grouped request and the prefix cache).
pub fn view_id(s: &Slice, v: &Slice) -> String {
    if v.pieces.len() == s.pieces.len() && v.omitted.len() == s.omitted.len() {
        return s.id.clone();
    }
    let mut h = Sha256::new();
    for p in &v.pieces {
        h.update(format!("{}:{}:{}-{}\u{0}", p.lib, p.file, p.start, p.end).as_bytes());
    }
    for o in &v.omitted {
        h.update(format!("{}:{}:{}-{}\u{1}", o.lib, o.file, o.start, o.end).as_bytes());
    }
    format!("{}~{}", s.id, &format!("{:x}", h.finalize())[..8])
}

/// Every question the templates ask of a slice, each checked for answerability first:
/// every function and line range its text names must be in what it is shown.
pub fn plan(templates: &[Template], s: &Slice) -> SlicePlan {
    let head = prompt_head(s);
    let mut out = SlicePlan::default();
    let mut views: Vec<(Slice, String, usize)> = Vec::new();
    let mut filled: Vec<(&Template, String)> = Vec::new();
    for t in templates.iter().filter(|t| applies(t, s)) {
        match fill(t, s) {
            Ok(x) => filled.push((t, x)),
            Err(why) => out.not_asked.push((t.id.clone(), why)),
        }
    }
    // Questions showing the same parts are shown one view: the pieces any of them
    // names join it (a workspace function, the line of an `info` store), so they share
    // one request and one cached prefix.
    let texts_of = |shows: &[PiecePart]| -> Vec<&str> {
        filled
            .iter()
            .filter(|(t, _)| shown_parts(t, s) == shows)
            .map(|(_, x)| x.as_str())
            .collect()
    };
    for (t, text) in filled.iter().map(|(t, x)| (*t, x.clone())) {
        let shows = shown_parts(t, s);
        let shared = view(s, &shows, &texts_of(&shows));
        // Kernels that answer the question beside its target are shown to it and named
        // in it: those each side of a threshold selects, and the pass that combines
        // the blocks' results of the target's.
        let text = match asked_beside(t, s) {
            Some(more) => format!("{text} {more}"),
            None => text,
        };
        let own = view(s, &shows, &[&text]);
        // A kernel joins only the view of the question that names it: shown to the
        // others it would read as part of their answer.
        let mut pieces: Vec<SlicePiece> = shared
            .pieces
            .into_iter()
            .filter(|p| p.role != PieceRole::Kernel || own.pieces.contains(p))
            .collect();
        // What only this question is shown (the kernels its threshold selects) comes
        // after what it shares.
        let own_only: Vec<SlicePiece> = own
            .pieces
            .iter()
            .filter(|p| !pieces.contains(p))
            .cloned()
            .collect();
        pieces.extend(own_only);
        let mut v = Slice { pieces, ..own };
        v.tokens = v.pieces.iter().map(|p| p.tokens).sum();
        if let Err(why) = fill(t, &v) {
            out.not_asked.push((
                t.id.clone(),
                format!("{why} (in what the question is shown)"),
            ));
            continue;
        }
        v.id = view_id(s, &v);
        // Views keeping the same pieces are one: rendered and counted once.
        let k = match views.iter().position(|(x, _, _)| x.id == v.id) {
            Some(k) => k,
            None => {
                let shown = render(&v);
                let tokens = count_tokens(SYSTEM_PROMPT) + rendered_tokens(&v);
                views.push((v, shown, tokens));
                views.len() - 1
            }
        };
        let (v, shown, fixed) = (&views[k].0, views[k].1.as_str(), views[k].2);
        let (mutation, asked) = if t.mutate {
            match mutate::plant(v) {
                Some((m, copy)) => (Some(m), Some(copy)),
                None => {
                    out.not_asked.push((
                        t.id.clone(),
                        format!(
                            "no line of {} that a planted bug can change",
                            s.focus.target
                        ),
                    ));
                    continue;
                }
            }
        } else {
            (None, None)
        };
        let (user, prompt_tokens, slice_id) = match &asked {
            Some(copy) => (
                format!("{head}{}\nQuestion: {text}", render(copy)),
                count_tokens(SYSTEM_PROMPT)
                    + rendered_tokens(copy)
                    + count_tokens(&head)
                    + count_tokens(&text)
                    + 3,
                copy.id.clone(),
            ),
            // Token counts add up across these boundaries to within a few tokens.
            None => (
                format!("{head}{shown}\nQuestion: {text}"),
                fixed + count_tokens(&head) + count_tokens(&text) + 3,
                v.id.clone(),
            ),
        };
        out.derived.extend(asked);
        out.questions.push(Question {
            id: question_id(s, t),
            slice_id,
            category: t.category.clone(),
            template_id: t.id.clone(),
            template_version: t.version,
            difficulty: difficulty(t, v),
            text,
            requires_code: t.code,
            messages: vec![
                ("system".into(), SYSTEM_PROMPT.into()),
                ("user".into(), user),
            ],
            prompt_tokens,
            mutation,
            pattern: pattern_of(t, v),
        });
    }
    out.derived.extend(
        views
            .into_iter()
            .map(|(v, _, _)| v)
            .filter(|v| v.id != s.id),
    );
    out
}

/// The sentence naming the kernels a question needs beside its target, where the
/// slice has them: what a size threshold selects between, and the second pass of a
/// two-pass reduction that a question on combining "across blocks" asks about.
fn asked_beside(t: &Template, s: &Slice) -> Option<String> {
    let v = |k: &str| s.focus.values.get(k).filter(|x| !x.is_empty());
    let listed = |names: &str| {
        let names: Vec<String> = names.split(", ").map(|n| format!("`{n}`")).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        }
    };
    if t.text.contains("{threshold}") {
        // The target is among them, named where the slice shows it whole (a target
        // cut to windows is not one a question names).
        let whole = s
            .focus
            .target_range
            .rsplit_once(':')
            .is_some_and(|(file, range)| {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                let (a, b) = (a.parse().unwrap_or(0), b.parse().unwrap_or(u32::MAX));
                s.pieces.iter().any(|p| {
                    p.name == s.focus.target && p.file == file && p.start <= a && b <= p.end
                })
            });
        return v("threshold_kernels").map(|k| {
            let all = if s.focus.target.is_empty() || !whole {
                k.clone()
            } else {
                format!("{}, {k}", s.focus.target)
            };
            format!(
                "The kernels launched where it chooses are shown: {}.",
                listed(&all)
            )
        });
    }
    if t.text.contains("macro stamping") {
        return v("stamping").map(|m| {
            format!(
                "The macros that stamp the entry points are shown: {}.",
                listed(m)
            )
        });
    }
    if t.text.contains("{workspace_fn}") {
        return v("workspace_users").map(|u| {
            format!(
                "The functions the buffers are passed to are shown: {}.",
                listed(u)
            )
        });
    }
    if t.text.contains("first kernel launch") {
        return v("first_launch").map(|f| {
            let site = v("first_launch_site").map_or(String::new(), |x| format!(", called at {x}"));
            match (v("first_launch_guard"), v("first_launch_size_query")) {
                (Some(w), Some(q)) => format!(
                    "Its first kernel launch is made by `{f}`{site} when `{w}` is not zero, a size that `{q}` sets."
                ),
                _ => format!("Its first kernel launch is made by `{f}`{site}."),
            }
        });
    }
    if t.text.contains("across blocks") || t.text.contains("final value") {
        let launcher = if s.focus.launcher.is_empty() {
            "The host code"
        } else {
            s.focus.launcher.as_str()
        };
        if let Some(k) = v("first_pass") {
            return Some(format!(
                "{launcher} launches {} before it, which writes the partial results it combines.",
                listed(k)
            ));
        }
        return v("second_pass").map(|k| {
            format!(
                "{launcher} launches {} after it to combine the blocks' results.",
                listed(k)
            )
        });
    }
    if t.text.contains("What does {kernel} compute") || t.text.contains("{bounds}") {
        let launcher = if s.focus.launcher.is_empty() {
            "the host code".to_string()
        } else {
            format!("`{}`", s.focus.launcher)
        };
        if let Some(k) = v("first_pass") {
            return Some(format!(
                "The kernel {launcher} launches before it, {}, is shown: it writes what {} reads.",
                listed(k),
                s.focus.target
            ));
        }
        return v("second_pass").map(|k| {
            format!(
                "The kernel {launcher} launches after it, {}, is shown.",
                listed(k)
            )
        });
    }
    None
}

/// The system message for a request that asks all questions of one slice at once.
pub const GROUPED_SYSTEM_PROMPT: &str = "You are an expert in AMD GPU programming with HIP and in the ROCm math libraries. \
Answer each numbered question about the library source code using only the code slice given; answer every question on its own, without referring to the other answers. \
Each slice block starts with `=== file:start-end (name, role) ===`, and every code line starts with its line number. \
Cite the lines every statement rests on as objects {\"file\", \"start\", \"end\"}, with the file path exactly as the block header writes it. \
Do not name functions, kernels or macros that are not in the slice, and write each name in full as the slice spells it. \
Reply with one JSON object {\"answers\": [...]} holding, in question order, one object per question with the keys \"question\" (its number), \"answer\" (prose), \"code\" (HIP/C++ source when the question asks for code, else \"\") and \"citations\".";

/// One request for all questions of a slice (which must all be of that slice): the
/// messages and their token count.
pub fn grouped_messages(s: &Slice, qs: &[&Question]) -> (Vec<(String, String)>, usize) {
    let head = prompt_head(s);
    let mut asked = String::from("\nQuestions:\n");
    for (k, q) in qs.iter().enumerate() {
        let extra = if q.requires_code {
            " (the answer must contain HIP code)"
        } else {
            ""
        };
        asked.push_str(&format!("{}. {}{extra}\n", k + 1, q.text));
    }
    let tokens = count_tokens(GROUPED_SYSTEM_PROMPT)
        + rendered_tokens(s)
        + count_tokens(&head)
        + count_tokens(&asked)
        + 3;
    (
        vec![
            ("system".into(), GROUPED_SYSTEM_PROMPT.into()),
            ("user".into(), format!("{head}{}{asked}", render(s))),
        ],
        tokens,
    )
}

/// The JSON Schema of a grouped reply: an array of per-question answers.
pub fn grouped_answer_schema(n: usize) -> serde_json::Value {
    let mut one = answer_schema();
    if let Some(p) = one["properties"].as_object_mut() {
        p.insert("question".into(), serde_json::json!({"type": "integer"}));
    }
    if let Some(r) = one["required"].as_array_mut() {
        r.insert(0, serde_json::json!("question"));
    }
    serde_json::json!({
        "type": "object",
        "properties": {
            "answers": {"type": "array", "minItems": n, "maxItems": n, "items": one}
        },
        "required": ["answers"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(
        name: &str,
        role: PieceRole,
        part: PiecePart,
        file: &str,
        lines: (u32, u32),
    ) -> SlicePiece {
        SlicePiece {
            role,
            part,
            name: name.into(),
            lib: "rocfx".into(),
            file: file.into(),
            start: lines.0,
            end: lines.1,
            sha256: String::new(),
            depth: 1,
            tokens: 10,
            text: String::new(),
        }
    }

    fn parted_slice() -> Slice {
        Slice {
            id: "rocfx:1.0:scal".into(),
            lib: "rocfx".into(),
            version: "1.0".into(),
            family: "scal".into(),
            variant: String::new(),
            api: "rocfx_sscal".into(),
            apis: vec!["rocfx_sscal".into()],
            call_path: vec![],
            pieces: vec![
                piece(
                    "rocfx_scal_impl",
                    PieceRole::Host,
                    PiecePart::Path,
                    "src/scal.cpp",
                    (1, 40),
                ),
                piece(
                    "scal_kernel",
                    PieceRole::Kernel,
                    PiecePart::Target,
                    "src/scal.hpp",
                    (10, 30),
                ),
                piece(
                    "NB",
                    PieceRole::Definition,
                    PiecePart::Work,
                    "src/sizes.h",
                    (3, 3),
                ),
                piece(
                    "scal_workspace",
                    PieceRole::Host,
                    PiecePart::Context,
                    "src/ws.hpp",
                    (5, 20),
                ),
                piece(
                    "other_kernel",
                    PieceRole::Kernel,
                    PiecePart::Context,
                    "src/other.hpp",
                    (1, 50),
                ),
                piece(
                    "pairCall_gemv",
                    PieceRole::Host,
                    PiecePart::Cross,
                    "src/pair.hpp",
                    (1, 9),
                ),
                piece(
                    "pair_gemv_kernel",
                    PieceRole::Kernel,
                    PiecePart::Cross,
                    "src/gemv.hpp",
                    (1, 60),
                ),
            ],
            omitted: vec![],
            features: SliceFeatures::default(),
            difficulty: "L2".into(),
            tokens: 70,
            focus: Default::default(),
        }
    }

    fn names_in(v: &Slice) -> Vec<&str> {
        v.pieces.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn a_question_is_shown_its_parts_and_what_it_names() {
        let s = parted_slice();
        let shows = [PiecePart::Path, PiecePart::Target, PiecePart::Work];
        let plain = view(&s, &shows, &["What does scal_kernel compute?"]);
        assert_eq!(names_in(&plain), ["rocfx_scal_impl", "scal_kernel", "NB"]);
        assert_eq!(plain.tokens, 30);
        // Named by function, or by a site inside it; never `scal_kernel_2` for `scal_kernel`.
        let named = view(
            &s,
            &shows,
            &["How does scal_workspace size it?", "see src/other.hpp:7"],
        );
        assert!(names_in(&named).contains(&"scal_workspace"));
        assert!(names_in(&named).contains(&"other_kernel"));
        assert!(!names("scal_kernel_2 only", "scal_kernel"));
        // The paired library's code comes with its path, or not at all.
        let cross = view(&s, &shows, &["Which grid does pair_gemv_kernel use?"]);
        assert!(names_in(&cross).contains(&"pairCall_gemv"));
        assert!(!names_in(&plain).contains(&"pairCall_gemv"));
    }

    #[test]
    fn a_grid_limit_is_asked_only_in_the_code_of_the_targets_library() {
        let mut s = parted_slice();
        for p in s.pieces.iter_mut().filter(|p| p.part == PiecePart::Cross) {
            p.lib = "pairlib".into();
        }
        s.focus
            .values
            .insert("grid_limit_site".into(), "src/pair.hpp:5".into());
        assert!(value(&s, "grid_limit_site").is_err());
        s.focus
            .values
            .insert("grid_limit_site".into(), "src/scal.hpp:12".into());
        assert_eq!(value(&s, "grid_limit_site").unwrap(), "src/scal.hpp:12");
    }

    #[test]
    fn a_view_that_drops_nothing_keeps_the_slice_id() {
        let s = parted_slice();
        let all = [
            PiecePart::Path,
            PiecePart::Target,
            PiecePart::Work,
            PiecePart::Context,
            PiecePart::Cross,
        ];
        let whole = view(&s, &all, &[""]);
        assert_eq!(view_id(&s, &whole), s.id);
        let some = view(&s, &all[..3], &[""]);
        let id = view_id(&s, &some);
        assert!(id.starts_with("rocfx:1.0:scal~") && id != s.id);
        // The same pieces, the same id (one request, one cached prefix).
        assert_eq!(id, view_id(&s, &view(&s, &all[..3], &["another question"])));
    }

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
    fn categories_and_code_follow_the_entry_contract() {
        let bad = FILE.replace("\"synchronization\"", "\"tuning\"");
        let e = parse_templates(&bad, "q.toml").unwrap_err().to_string();
        assert!(
            e.contains("field `category`: `tuning` is not a category"),
            "{e}"
        );
        let bad = FILE.replace("version = 1\n", "version = 1\ncode = true\n");
        let e = parse_templates(&bad, "q.toml").unwrap_err().to_string();
        assert!(
            e.contains(
                "field `code`: answers of category `synchronization` need not carry HIP code"
            ),
            "{e}"
        );
    }

    #[test]
    fn element_types_come_from_the_precision_letter() {
        assert_eq!(elem_type("rocblas_sgemv"), Some("float"));
        assert_eq!(
            elem_type("rocblas_izamax"),
            Some("complex double (hipDoubleComplex)")
        );
        assert_eq!(
            elem_type("rocsolver_chetrd"),
            Some("complex float (hipFloatComplex)")
        );
        assert_eq!(elem_type("rocsolver_dgetrf_64"), Some("double"));
        assert_eq!(elem_type("rocblas_gemm_ex"), None);
        assert_eq!(
            template_type_params(
                "template <rocsolver_stedc_mode MODE, typename S>\nROCSOLVER_KERNEL void k"
            ),
            ["S"]
        );
        assert_eq!(
            template_type_params(
                "template <typename T, typename S, typename U>\n__global__ void k"
            ),
            ["T", "S", "U"]
        );
        assert_eq!(elem_type("rocblas_axpy_ex"), None);
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
