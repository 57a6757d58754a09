//! Configuration as data: which libraries exist and how to read them (`rocqa.toml`),
//! and what is in scope for each (`allowlists/<lib>.toml`).
//!
//! Raw serde records are kept apart from the compiled forms the stages use
//! (`LibraryConfig` -> `Library`, `ScopeFile` -> `Scope`), so every check of a
//! config happens once, up front, with the file, line and field of any mistake.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde::Deserialize;
use toml::Spanned;

/// A configuration mistake, with the place to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read")]
    Read {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// TOML syntax or a field of the wrong type.
    #[error("{path}: {message}")]
    Syntax {
        /// File.
        path: String,
        /// toml's message, which names line, column and field.
        message: String,
    },
    /// A pattern that does not compile.
    #[error("{path}: line {line}: field `{field}`: {message}")]
    Pattern {
        /// File.
        path: String,
        /// Line of the bad value.
        line: usize,
        /// Field holding it.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A library or version that the config does not know.
    #[error("{0}")]
    Unknown(String),
}

/// `rocqa.toml`: pipeline definitions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectFile {
    /// Where Debian source packages come from.
    pub debian: DebianConfig,
    /// Libraries by name.
    pub library: BTreeMap<String, LibraryConfig>,
    /// The LLM endpoint (environment variables override it).
    #[serde(default)]
    pub llm: crate::llm::LlmSection,
    /// Extraction settings.
    #[serde(default)]
    pub extract: ExtractSection,
    /// Validation settings.
    #[serde(default)]
    pub validate: ValidateSection,
}

/// `[validate]`: how answers are checked.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateSection {
    /// GPU targets HIP code is compiled for (device code generation for each). Default:
    /// every one of gfx908, gfx90a and gfx940 that the installed compiler accepts.
    pub targets: Option<Vec<String>>,
}

/// `[extract]`: how slices and questions are made.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractSection {
    /// Tokens a slice may hold (default 6000).
    #[serde(default = "default_budget")]
    pub budget_tokens: usize,
    /// A single function longer than this is shown as windows around the calls that
    /// lead on (default: [`crate::slice::SliceLimits::default`]).
    #[serde(default = "default_piece")]
    pub max_piece_tokens: usize,
    /// Folder of question templates, relative to the project root.
    #[serde(default = "default_templates")]
    pub templates: String,
}

// The slicer's own defaults: one place for both.
fn default_budget() -> usize {
    crate::slice::SliceLimits::default().budget_tokens
}
fn default_piece() -> usize {
    crate::slice::SliceLimits::default().max_piece_tokens
}
fn default_templates() -> String {
    "question_templates".into()
}

impl Default for ExtractSection {
    fn default() -> Self {
        ExtractSection {
            budget_tokens: default_budget(),
            max_piece_tokens: default_piece(),
            templates: default_templates(),
        }
    }
}

/// The Debian archive to take source packages from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebianConfig {
    /// Archive URL.
    pub mirror: String,
    /// Suites to look in (bookworm has no ROCm math libraries; trixie and sid do).
    pub suites: Vec<String>,
}

/// How to read one library's tree.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryConfig {
    /// Debian source package name (defaults to the library name).
    pub debian_package: Option<String>,
    /// Globs (relative to the tree root) of the public headers that declare the C API.
    pub public_headers: Vec<String>,
    /// Macro in front of every exported declaration, e.g. `ROCBLAS_EXPORT`.
    pub export_macro: String,
    /// Common prefix of API names, e.g. `rocblas_`.
    pub api_prefix: String,
    /// Precision prefixes that can lead a family name, longest first is not required.
    pub precisions: Vec<String>,
    /// Variant suffixes that can end an API name (`64`, `ex`, `batched`, ...).
    pub variant_suffixes: Vec<String>,
    /// Include search directories relative to the tree root.
    pub include_dirs: Vec<String>,
    /// File extensions to index.
    pub extensions: Vec<String>,
    /// Macros defined for every file, as a compiler's `-D` would (value "" = empty).
    #[serde(default)]
    pub defines: BTreeMap<String, String>,
    /// Extra defines for the files matching a glob (how the build compiles them).
    #[serde(default)]
    pub file_defines: Vec<FileDefines>,
    /// Archive members not to unpack (large generated data).
    #[serde(default)]
    pub unpack_exclude: Vec<String>,
    /// Whether what runs in the library's APIs is read off clang's instantiations
    /// (`if constexpr` branches, overloads, deduced template arguments) where a unit
    /// compiles, with the text evaluator as the fallback. Off by default: the first
    /// run compiles every unit an API reaches once (about half an hour for all of
    /// rocBLAS on two cores), cached per pin.
    #[serde(default)]
    pub compiler_facts: bool,
    /// Known versions.
    pub versions: BTreeMap<String, VersionConfig>,
}

impl LibraryConfig {
    /// How the library's API names are made, as plain data for later stages.
    pub fn naming(&self) -> crate::model::ApiNaming {
        crate::model::ApiNaming {
            prefix: self.api_prefix.clone(),
            precisions: self.precisions.clone(),
        }
    }
}

/// Defines applied to some files only.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDefines {
    /// Glob relative to the tree root.
    pub glob: String,
    /// Macro values.
    pub defines: BTreeMap<String, String>,
}

/// One version of a library.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionConfig {
    /// Debian version of the source package holding it.
    pub debian: Option<String>,
    /// Library and version whose index resolves calls leaving this tree, as `lib@version`.
    pub pair: Option<String>,
}

impl ProjectFile {
    /// Reads `rocqa.toml`.
    pub fn load(path: &Path) -> Result<ProjectFile, ConfigError> {
        let text = read(path)?;
        toml::from_str(&text).map_err(|e| ConfigError::Syntax {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// The configuration of one library, or an error listing the known ones.
    pub fn library(&self, name: &str) -> Result<&LibraryConfig, ConfigError> {
        self.library.get(name).ok_or_else(|| {
            ConfigError::Unknown(format!(
                "unknown library `{name}`: rocqa.toml defines {}; add a [library.{name}] table to support it",
                self.library.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The version table of a library, or an error listing the known versions.
    pub fn version(&self, lib: &str, version: &str) -> Result<&VersionConfig, ConfigError> {
        let l = self.library(lib)?;
        l.versions.get(version).ok_or_else(|| {
            ConfigError::Unknown(format!(
                "unknown version {lib} {version}: rocqa.toml knows {}; add [library.{lib}.versions.\"{version}\"]",
                l.versions.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The library and version a version's calls leave into (`pair = "lib@version"`).
    pub fn pair(&self, lib: &str, version: &str) -> Result<Option<(String, String)>, ConfigError> {
        match &self.version(lib, version)?.pair {
            Some(p) => {
                let (l, v) = p.split_once('@').ok_or_else(|| {
                    ConfigError::Unknown(format!(
                        "rocqa.toml: library.{lib}.versions.\"{version}\".pair = \"{p}\": expected `lib@version`"
                    ))
                })?;
                Ok(Some((l.to_string(), v.to_string())))
            }
            None => Ok(None),
        }
    }

    /// The newest configured version of a library (by numeric components).
    pub fn latest_version(&self, lib: &str) -> Result<String, ConfigError> {
        let l = self.library(lib)?;
        l.versions
            .keys()
            .max_by_key(|v| {
                v.split('.')
                    .map(|p| p.parse::<u32>().unwrap_or(0))
                    .collect::<Vec<_>>()
            })
            .cloned()
            .ok_or_else(|| ConfigError::Unknown(format!("library `{lib}` lists no versions")))
    }
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// `allowlists/<lib>.toml`: what is in scope.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeFile {
    /// Path globs relative to the tree root.
    #[serde(default)]
    pub paths: RuleLists,
    /// Symbol-name regexes: denied symbols are cut from the call graph.
    #[serde(default)]
    pub symbols: RuleLists,
    /// API-family regexes: which families are in scope for coverage and extraction.
    #[serde(default)]
    pub families: RuleLists,
    /// Graph limits.
    #[serde(default)]
    pub graph: GraphLimits,
    /// Callees whose code is not in the tree: the graph stops there with an opaque leaf.
    #[serde(default)]
    pub opaque: Vec<OpaqueRule>,
    /// Callees that check data rather than compute: followed, on a typed edge.
    #[serde(default)]
    pub checks: CheckRules,
}

/// `[checks]`: calls the graph keeps as their own edge kind, so graphs show them and
/// slices can leave them out.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRules {
    /// Regexes on callee names: numerics checking (NaN/Inf/denormal scans of inputs and
    /// outputs), reached on `check-numerics` edges.
    #[serde(default)]
    pub numerics: Vec<Spanned<String>>,
}

/// Allow and deny lists of patterns; an empty allow list allows everything.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleLists {
    /// Patterns that bring things in.
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    /// Patterns that keep things out (they win over allow).
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
}

/// Limits on graph walks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphLimits {
    /// Maximum number of edges from the API.
    pub max_depth: u32,
    /// Maximum number of candidate definitions a name may resolve to before it is
    /// considered too generic to follow (e.g. `load`, `operator()`).
    pub max_fanout: usize,
}

impl Default for GraphLimits {
    fn default() -> Self {
        GraphLimits {
            max_depth: 12,
            max_fanout: 8,
        }
    }
}

/// A callee the graph does not follow.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpaqueRule {
    /// Regex on the callee name.
    pub symbol: Spanned<String>,
    /// Why it is opaque (shown on the leaf).
    pub reason: String,
}

/// Why something is in or out of scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// In scope?
    pub inside: bool,
    /// The rule that decided, as `file:line: field = "pattern"`, or a default.
    pub because: String,
}

/// A compiled list of patterns of one kind.
#[derive(Debug, Clone)]
struct Rules<M> {
    field: String,
    matchers: Vec<(M, String, usize)>,
}

/// A compiled scope.
#[derive(Debug, Clone)]
pub struct Scope {
    file: String,
    path_allow: Rules<globset::GlobMatcher>,
    path_deny: Rules<globset::GlobMatcher>,
    path_allow_set: GlobSet,
    path_deny_set: GlobSet,
    sym_allow: Rules<Regex>,
    sym_deny: Rules<Regex>,
    fam_allow: Rules<Regex>,
    fam_deny: Rules<Regex>,
    /// Graph limits.
    pub limits: GraphLimits,
    opaque: Vec<(Regex, String)>,
    check_numerics: Rules<Regex>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

impl Scope {
    /// Reads and compiles `allowlists/<lib>.toml`.
    pub fn load(path: &Path) -> Result<Scope, ConfigError> {
        let text = read(path)?;
        Scope::parse(&text, &path.display().to_string())
    }

    /// Compiles scope text; `name` is used in messages.
    pub fn parse(text: &str, name: &str) -> Result<Scope, ConfigError> {
        let raw: ScopeFile = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: name.to_string(),
            message: e.to_string(),
        })?;
        let err = |field: &str, s: &Spanned<String>, message: String| ConfigError::Pattern {
            path: name.to_string(),
            line: line_of(text, s.span().start),
            field: field.to_string(),
            message,
        };
        let globs = |field: &str,
                     list: &[Spanned<String>]|
         -> Result<(Rules<globset::GlobMatcher>, GlobSet), ConfigError> {
            let mut set = GlobSetBuilder::new();
            let mut matchers = Vec::new();
            for s in list {
                let g =
                    Glob::new(s.get_ref()).map_err(|e| err(field, s, format!("bad glob: {e}")))?;
                set.add(g.clone());
                matchers.push((
                    g.compile_matcher(),
                    s.get_ref().clone(),
                    line_of(text, s.span().start),
                ));
            }
            let set = set.build().map_err(|e| ConfigError::Syntax {
                path: name.to_string(),
                message: e.to_string(),
            })?;
            Ok((
                Rules {
                    field: field.to_string(),
                    matchers,
                },
                set,
            ))
        };
        let regexes =
            |field: &str, list: &[Spanned<String>]| -> Result<Rules<Regex>, ConfigError> {
                let mut matchers = Vec::new();
                for s in list {
                    let r = Regex::new(s.get_ref())
                        .map_err(|e| err(field, s, format!("bad regex: {e}")))?;
                    matchers.push((r, s.get_ref().clone(), line_of(text, s.span().start)));
                }
                Ok(Rules {
                    field: field.to_string(),
                    matchers,
                })
            };
        let (path_allow, path_allow_set) = globs("paths.allow", &raw.paths.allow)?;
        let (path_deny, path_deny_set) = globs("paths.deny", &raw.paths.deny)?;
        let mut opaque = Vec::new();
        for o in &raw.opaque {
            let r = Regex::new(o.symbol.get_ref())
                .map_err(|e| err("opaque.symbol", &o.symbol, format!("bad regex: {e}")))?;
            opaque.push((r, o.reason.clone()));
        }
        if raw.graph.max_depth == 0 {
            return Err(ConfigError::Pattern {
                path: name.to_string(),
                line: text
                    .lines()
                    .position(|l| l.trim_start().starts_with("max_depth"))
                    .map(|p| p + 1)
                    .unwrap_or(1),
                field: "graph.max_depth".into(),
                message: "must be at least 1 (the API's own entry point is one edge away)".into(),
            });
        }
        Ok(Scope {
            file: name.to_string(),
            path_allow,
            path_deny,
            path_allow_set,
            path_deny_set,
            sym_allow: regexes("symbols.allow", &raw.symbols.allow)?,
            sym_deny: regexes("symbols.deny", &raw.symbols.deny)?,
            fam_allow: regexes("families.allow", &raw.families.allow)?,
            fam_deny: regexes("families.deny", &raw.families.deny)?,
            limits: raw.graph,
            opaque,
            check_numerics: regexes("checks.numerics", &raw.checks.numerics)?,
        })
    }

    /// Is a file (relative to the tree root) in scope? Fast path for the index.
    pub fn path_in(&self, rel: &str) -> bool {
        (self.path_allow.matchers.is_empty() || self.path_allow_set.is_match(rel))
            && !self.path_deny_set.is_match(rel)
    }

    /// Why a file is in or out.
    pub fn explain_path(&self, rel: &str) -> Verdict {
        self.decide(rel, &self.path_allow, &self.path_deny, |m, s| m.is_match(s))
    }

    /// Why a symbol is in or out.
    pub fn explain_symbol(&self, name: &str) -> Verdict {
        self.decide(name, &self.sym_allow, &self.sym_deny, |m, s| m.is_match(s))
    }

    /// Is a symbol followed by the graph?
    pub fn symbol_in(&self, name: &str) -> bool {
        (self.sym_allow.matchers.is_empty()
            || self.sym_allow.matchers.iter().any(|m| m.0.is_match(name)))
            && !self.sym_deny.matchers.iter().any(|m| m.0.is_match(name))
    }

    /// Why an API family is in or out.
    pub fn explain_family(&self, family: &str) -> Verdict {
        self.decide(family, &self.fam_allow, &self.fam_deny, |m, s| {
            m.is_match(s)
        })
    }

    /// Is an API family in scope?
    pub fn family_in(&self, family: &str) -> bool {
        self.explain_family(family).inside
    }

    /// Is a callee numerics checking (followed on a `check-numerics` edge)?
    pub fn check_numerics(&self, name: &str) -> bool {
        self.check_numerics
            .matchers
            .iter()
            .any(|m| m.0.is_match(name))
    }

    /// The reason a callee is opaque, if it is.
    pub fn opaque(&self, name: &str) -> Option<&str> {
        self.opaque
            .iter()
            .find(|(r, _)| r.is_match(name))
            .map(|(_, why)| why.as_str())
    }

    fn decide<M>(
        &self,
        s: &str,
        allow: &Rules<M>,
        deny: &Rules<M>,
        is: impl Fn(&M, &str) -> bool,
    ) -> Verdict {
        if let Some((_, pat, line)) = deny.matchers.iter().find(|m| is(&m.0, s)) {
            return Verdict {
                inside: false,
                because: format!("{}:{line}: {} = \"{pat}\"", self.file, deny.field),
            };
        }
        if allow.matchers.is_empty() {
            return Verdict {
                inside: true,
                because: format!(
                    "{}: `{}` is empty, so everything not denied is in",
                    self.file, allow.field
                ),
            };
        }
        match allow.matchers.iter().find(|m| is(&m.0, s)) {
            Some((_, pat, line)) => Verdict {
                inside: true,
                because: format!("{}:{line}: {} = \"{pat}\"", self.file, allow.field),
            },
            None => Verdict {
                inside: false,
                because: format!("{}: no pattern in `{}` matches", self.file, allow.field),
            },
        }
    }
}

/// Where things live in a checkout of rocqa (or wherever `--root` points).
#[derive(Debug, Clone)]
pub struct Layout {
    /// Folder holding `rocqa.toml`.
    pub root: PathBuf,
}

impl Layout {
    /// `rocqa.toml`.
    pub fn project_file(&self) -> PathBuf {
        self.root.join("rocqa.toml")
    }
    /// `allowlists/<lib>.toml`.
    pub fn scope_file(&self, lib: &str) -> PathBuf {
        self.root.join("allowlists").join(format!("{lib}.toml"))
    }
    /// `rocm_sources/`.
    pub fn sources(&self) -> PathBuf {
        self.root.join("rocm_sources")
    }
    /// Index cache folder for one tree.
    pub fn index_cache(&self, lib: &str, version: &str) -> PathBuf {
        self.sources()
            .join(".cache")
            .join(format!("{lib}-{version}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCOPE: &str = r#"
[paths]
allow = ["library/src/**", "library/include/**"]
deny = ["**/Tensile/Logic/**"]

[symbols]
deny = ["^log_", "check_numerics"]

[families]
deny = ["^(create|destroy)_handle$"]

[graph]
max_depth = 9
max_fanout = 4

[[opaque]]
symbol = "^rocblas_call_tensile$"
reason = "Tensile backend, generated at build time"
"#;

    #[test]
    fn explains_with_file_line_and_pattern() {
        let s = Scope::parse(SCOPE, "allowlists/x.toml").unwrap();
        let v = s.explain_path("library/src/blas3/Tensile/Logic/a.yaml");
        assert!(!v.inside);
        assert_eq!(
            v.because,
            "allowlists/x.toml:4: paths.deny = \"**/Tensile/Logic/**\""
        );
        let v = s.explain_path("library/src/blas1/x.cpp");
        assert!(v.inside && v.because.contains(":3: paths.allow"));
        assert!(!s.explain_path("clients/x.cpp").inside);
        assert!(!s.symbol_in("log_trace") && s.symbol_in("rocblas_scal_impl"));
        assert!(!s.family_in("create_handle") && s.family_in("scal"));
        assert_eq!(
            s.opaque("rocblas_call_tensile"),
            Some("Tensile backend, generated at build time")
        );
        assert_eq!(s.limits.max_depth, 9);
    }

    #[test]
    fn bad_pattern_names_line_and_field() {
        let bad = "[symbols]\ndeny = [\n  \"ok\",\n  \"(unclosed\",\n]\n";
        let e = Scope::parse(bad, "allowlists/bad.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("allowlists/bad.toml: line 4: field `symbols.deny`: bad regex"),
            "{e}"
        );
    }

    #[test]
    fn unknown_field_is_reported_with_its_line() {
        let bad = "[graph]\nmax_depth = 3\nmax_fanout = 2\nmax_dpeth = 4\n";
        let e = Scope::parse(bad, "allowlists/bad.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 4") && e.contains("max_dpeth"), "{e}");
    }
}
