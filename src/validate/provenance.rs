//! What an entry says of itself: the APIs of its library it is about, the template that
//! asked it, what answered it. `extract` fills these fields from its own plan; an
//! entries file can carry anything, so each is checked against the library's index and
//! the templates before the answer is read. A training stack filters and mixes by these
//! fields, so a wrong one misfiles an entry however good its answer.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::model::{ApiFunction, Entry, LibraryIndex};

/// A template an entry may name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KnownTemplate {
    category: String,
    /// The newest version; an earlier one's entries are from an earlier run.
    version: u32,
    /// Generators that answer it.
    generators: BTreeSet<&'static str>,
}

/// The public APIs of each library version and the templates, as entries may name them.
#[derive(Debug, Default)]
pub struct Catalogue {
    /// `(lib, version)` -> API name -> its declaration.
    apis: BTreeMap<(String, String), BTreeMap<String, ApiFunction>>,
    templates: BTreeMap<String, KnownTemplate>,
}

impl Catalogue {
    /// The catalogue of `indexes` (their public APIs), the question templates
    /// (`(id, category, version, mutate)`, answered by a model, and find-the-bug ones by
    /// their planted bug too) and the fact templates.
    pub fn new(
        indexes: &[&LibraryIndex],
        question_templates: impl IntoIterator<Item = (String, String, u32, bool)>,
    ) -> Catalogue {
        let mut c = Catalogue::default();
        for ix in indexes {
            c.apis.insert(
                (ix.lib.clone(), ix.version.clone()),
                ix.api.iter().map(|a| (a.name.clone(), a.clone())).collect(),
            );
        }
        for (id, category, version, mutate) in question_templates {
            let mut generators = BTreeSet::from(["llm"]);
            if mutate {
                generators.insert("mutation");
            }
            c.templates.insert(
                id,
                KnownTemplate {
                    category,
                    version,
                    generators,
                },
            );
        }
        for (id, category) in crate::facts::qa::template_ids() {
            c.templates.insert(
                id.to_string(),
                KnownTemplate {
                    category: category.to_string(),
                    version: 1,
                    generators: BTreeSet::from(["facts"]),
                },
            );
        }
        c
    }
}

/// The first field of `e` that disagrees with its library, its template or its
/// generator, said with what to do.
pub fn entry_defect(e: &Entry, c: &Catalogue) -> Option<String> {
    match e.generator.as_str() {
        "llm" if e.model.trim().is_empty() => {
            return Some("generator llm but no model: name the model that answered".into())
        }
        "facts" | "mutation" if !e.model.is_empty() => {
            return Some(format!(
                "generator {} is answered with no model, yet model is \"{}\"",
                e.generator, e.model
            ))
        }
        "facts" | "mutation" if e.usage.prompt_tokens + e.usage.completion_tokens > 0 => {
            return Some(format!(
                "generator {} uses no tokens, yet usage counts {}",
                e.generator,
                e.usage.prompt_tokens + e.usage.completion_tokens
            ))
        }
        "facts" if e.prompt_sha256 != format!("{:x}", Sha256::digest(e.question.as_bytes())) => {
            return Some(
                "prompt_sha256 is not the SHA-256 of the question: a fact entry's question was changed after it was rendered".into(),
            )
        }
        _ => {}
    }
    let Some(t) = c.templates.get(&e.template_id) else {
        return Some(format!(
            "template_id \"{}\" is none of question_templates/ nor a fact template",
            e.template_id
        ));
    };
    if t.category != e.category {
        return Some(format!(
            "category \"{}\" is not template {}'s \"{}\"",
            e.category, e.template_id, t.category
        ));
    }
    if !t.generators.contains(e.generator.as_str()) {
        return Some(format!(
            "template {} is answered by {}, not by generator {}",
            e.template_id,
            t.generators
                .iter()
                .copied()
                .collect::<Vec<_>>()
                .join(" or "),
            e.generator
        ));
    }
    if e.template_version == 0 || e.template_version > t.version {
        return Some(format!(
            "template_version {} of {}: its versions are 1 to {}",
            e.template_version, e.template_id, t.version
        ));
    }
    if !e.apis.contains(&e.api) {
        return Some(format!(
            "api {} is not among apis [{}]",
            e.api,
            e.apis.join(", ")
        ));
    }
    if let Some(apis) = c.apis.get(&(e.lib.clone(), e.version.clone())) {
        let unknown: Vec<&str> = e
            .apis
            .iter()
            .filter(|a| !apis.contains_key(a.as_str()))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Some(format!(
                "{} {} declares no public API {}",
                e.lib,
                e.version,
                unknown.join(", ")
            ));
        }
        let family_of = |a: &str| apis.get(a).map_or("", |f| f.family.as_str());
        if family_of(&e.api) != e.family {
            return Some(format!(
                "family \"{}\" is not {}'s \"{}\"",
                e.family,
                e.api,
                family_of(&e.api)
            ));
        }
        if let Some(other) = e
            .apis
            .iter()
            .find(|a| !apis[a.as_str()].in_variant(&e.variant))
        {
            return Some(format!(
                "variant \"{}\" does not hold {other} (variants [{}])",
                e.variant,
                apis[other.as_str()].variants.join(", ")
            ));
        }
    }
    let prefix = format!("{}:{}:", e.lib, e.version);
    if !e.slice_id.starts_with(&prefix) {
        return Some(format!(
            "slice_id \"{}\" is not a slice of {} {} (it starts \"{prefix}\")",
            e.slice_id, e.lib, e.version
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApiFunction, SourceRef, TokenUsage};

    fn index() -> LibraryIndex {
        let mut ix = LibraryIndex {
            lib: "rocfx".into(),
            version: "1.0".into(),
            ..Default::default()
        };
        for (name, family) in [
            ("rocfx_sscal", "scal"),
            ("rocfx_dscal", "scal"),
            ("rocfx_saxpy", "axpy"),
            ("rocfx_sscal_batched", "scal"),
        ] {
            ix.api.push(ApiFunction {
                name: name.into(),
                family: family.into(),
                precision: name[6..7].into(),
                variants: name
                    .strip_prefix("rocfx_sscal_")
                    .map(|v| vec![v.to_string()])
                    .unwrap_or_default(),
                file: "include/rocfx.h".into(),
                line: 1,
            });
        }
        ix
    }

    fn entry() -> Entry {
        Entry {
            schema_version: crate::model::ENTRY_SCHEMA_VERSION,
            id: "rocfx-0000000000000001".into(),
            lib: "rocfx".into(),
            version: "1.0".into(),
            source: SourceRef {
                origin: crate::model::Origin::Dir {
                    path: "/src/rocfx".into(),
                },
                sha256: "0".repeat(64),
            },
            family: "scal".into(),
            api: "rocfx_sscal".into(),
            apis: vec!["rocfx_sscal".into(), "rocfx_dscal".into()],
            variant: String::new(),
            call_path: Vec::new(),
            category: "semantics".into(),
            template_id: "semantics.kernel-math".into(),
            template_version: 2,
            difficulty: "L2".into(),
            question: "What does rocfx_scal_kernel compute?".into(),
            answer: String::new(),
            code: None,
            citations: Vec::new(),
            slice_id: "rocfx:1.0:scal".into(),
            slice: Vec::new(),
            model: "qwen".into(),
            params: serde_json::json!({}),
            prompt_sha256: "a".repeat(64),
            usage: TokenUsage::default(),
            validation: Vec::new(),
            generator: "llm".into(),
            tool: "rocqa 0.1.0".into(),
            grouped_request: None,
            mutation: None,
        }
    }

    #[test]
    fn each_field_is_checked_against_the_library_and_the_templates() {
        let ix = index();
        let c = Catalogue::new(
            &[&ix],
            [
                (
                    "semantics.kernel-math".to_string(),
                    "semantics".to_string(),
                    2,
                    false,
                ),
                (
                    "debug.find-bug".to_string(),
                    "debugging".to_string(),
                    1,
                    true,
                ),
            ],
        );
        assert_eq!(entry_defect(&entry(), &c), None);
        type Edit = fn(&mut Entry);
        let broken: [(&str, Edit); 15] = [
            ("no model", |e| e.model.clear()),
            ("with no model", |e| e.generator = "facts".into()),
            ("none of question_templates", |e| {
                e.template_id = "semantics.nothing".into()
            }),
            ("is not template", |e| e.category = "edge-cases".into()),
            ("not by generator mutation", |e| {
                e.generator = "mutation".into();
                e.model.clear();
            }),
            ("its versions are 1 to 2", |e| e.template_version = 3),
            ("not among apis", |e| e.api = "rocfx_saxpy".into()),
            ("declares no public API rocfx_zscal", |e| {
                e.apis.push("rocfx_zscal".into())
            }),
            ("declares no public API rocblas_sscal", |e| {
                e.api = "rocblas_sscal".into();
                e.apis = vec!["rocblas_sscal".into()];
            }),
            ("family \"axpy\" is not", |e| e.family = "axpy".into()),
            ("variant \"batched\" does not hold rocfx_sscal", |e| {
                e.variant = "batched".into()
            }),
            ("variant \"64\" does not hold", |e| e.variant = "64".into()),
            ("is not a slice of rocfx 1.0", |e| {
                e.slice_id = "rocfx:0.9:scal".into()
            }),
            ("prompt_sha256 is not", |e| {
                e.generator = "facts".into();
                e.model.clear();
                e.template_id = "facts-kernels".into();
                e.category = "api-to-kernel".into();
                e.template_version = 1;
            }),
            ("uses no tokens", |e| {
                e.generator = "mutation".into();
                e.model.clear();
                e.usage.prompt_tokens = 10;
            }),
        ];
        for (want, edit) in broken {
            let mut e = entry();
            edit(&mut e);
            let got = entry_defect(&e, &c);
            assert!(
                got.as_deref().is_some_and(|d| d.contains(want)),
                "want {want}, got {got:?}"
            );
        }
        // A variant slice's entry passes.
        let mut e = entry();
        e.variant = "batched".into();
        e.api = "rocfx_sscal_batched".into();
        e.apis = vec![e.api.clone()];
        e.slice_id = "rocfx:1.0:scal:batched".into();
        assert_eq!(entry_defect(&e, &c), None);
        // A fact entry as rendered passes.
        let mut e = entry();
        e.generator = "facts".into();
        e.model.clear();
        e.template_id = "facts-kernels".into();
        e.category = "api-to-kernel".into();
        e.template_version = 1;
        e.prompt_sha256 = format!("{:x}", Sha256::digest(e.question.as_bytes()));
        assert_eq!(entry_defect(&e, &c), None);
    }
}
