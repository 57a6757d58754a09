//! Grounding: what an answer names and quotes must exist.
//!
//! A name the answer uses as code must be a real name: defined in the index, written
//! somewhere in a pinned library tree (types, enum values, file names included), or
//! declared by the HIP headers or the C++ library the compiler uses. A file the answer
//! names must be in a tree; a line range it names must be in the code shown; code it
//! quotes as the library's must appear, whole, in the code shown. An invented kernel
//! name is the commonest hallucination of a model that explains code, and the cheapest
//! to catch.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use crate::model::LibraryIndex;
use crate::slice::{holds_quote, squash, Trees};

/// Source file extensions whose words count as names.
const SOURCE_EXTS: &[&str] = &[
    "h", "hh", "hpp", "hxx", "c", "cc", "cpp", "cxx", "hip", "cu", "cuh", "inl", "inc", "tcc",
];

/// Names that exist: the indexes' definitions, every word of the pinned trees' sources
/// and the system headers, and the trees' file paths.
#[derive(Debug, Default, Clone)]
pub struct KnownNames {
    names: HashSet<String>,
    /// Functions, kernels and device helpers the indexes define, public APIs left out.
    defined: HashSet<String>,
    prefixes: Vec<String>,
    /// Each file path of the trees, and each of its tails at a `/` (`blas1/x.hpp`,
    /// `x.hpp`): what a mention of the file may be.
    files: HashSet<String>,
    /// Each file of the trees as `(lib, path from the tree's root)`.
    paths: Vec<(String, String)>,
    /// Per library: the names its index defines (APIs and macros included), to check a
    /// name against the library it is claimed for.
    defined_in: std::collections::BTreeMap<String, HashSet<String>>,
    /// The tails at an underscore, of two words or more, of the names that carry a
    /// library prefix: what a shortened name may stand for. Built on first use.
    tails: OnceLock<HashSet<String>>,
    /// Indexes into `paths` by each way a mention may end: the file name and its tails
    /// at `_` and `-`. Built on first use (a scan of every path per mention was a
    /// seventh of an answer's checks).
    by_leaf: OnceLock<HashMap<String, Vec<usize>>>,
}

impl KnownNames {
    /// Collects every definition, macro and API name; `prefixes` (e.g. `rocblas_`) mark
    /// words that claim to be the library's.
    pub fn from_indexes(indexes: &[&LibraryIndex], prefixes: &[String]) -> KnownNames {
        let mut names = HashSet::new();
        let mut defined = HashSet::new();
        // Every file the index read is a file of its pinned tree, inside `library/` or
        // not (rocSOLVER's `common/include/` helpers, which facts cite).
        let mut files = HashSet::new();
        let mut paths = Vec::new();
        let mut defined_in: std::collections::BTreeMap<String, HashSet<String>> =
            Default::default();
        for idx in indexes {
            let own = defined_in.entry(idx.lib.clone()).or_default();
            for f in &idx.files {
                names.extend(f.symbols.iter().map(|s| s.name.clone()));
                defined.extend(f.symbols.iter().map(|s| s.name.clone()));
                names.extend(f.macros.iter().map(|m| m.name.clone()));
                own.extend(f.symbols.iter().map(|s| s.name.clone()));
                own.extend(f.macros.iter().map(|m| m.name.clone()));
                add_file(&mut files, &f.path);
                paths.push((idx.lib.clone(), f.path.clone()));
            }
            names.extend(idx.api.iter().map(|a| a.name.clone()));
            own.extend(idx.api.iter().map(|a| a.name.clone()));
        }
        for idx in indexes {
            for a in &idx.api {
                defined.remove(&a.name);
            }
        }
        KnownNames {
            names,
            defined,
            prefixes: prefixes.to_vec(),
            files,
            paths,
            defined_in,
            tails: OnceLock::new(),
            by_leaf: OnceLock::new(),
        }
    }

    /// Adds every word and file of the trees' `library/` sources (the whole tree when
    /// it has no `library/`): types, enum values, constants and file names the index
    /// does not list as definitions.
    pub fn with_trees(mut self, trees: &Trees) -> KnownNames {
        self.by_leaf = OnceLock::new();
        for (lib, root) in trees.roots() {
            let base = if root.join("library").is_dir() {
                root.join("library")
            } else {
                root.to_path_buf()
            };
            for path in source_files(&base) {
                if let Ok(rel) = path.strip_prefix(root) {
                    add_file(&mut self.files, &rel.to_string_lossy());
                    self.paths
                        .push((lib.to_string(), rel.to_string_lossy().into_owned()));
                }
                if let Some(stem) = path.file_stem() {
                    self.add_words(&stem.to_string_lossy());
                }
                if let Ok(bytes) = std::fs::read(&path) {
                    self.add_words(&String::from_utf8_lossy(&bytes));
                }
            }
        }
        self
    }

    /// Adds the words of the HIP headers and the C++ library ([`system_header_dirs`]).
    pub fn with_system_headers(mut self) -> KnownNames {
        self.names.extend(system_words().iter().cloned());
        self
    }

    fn add_words(&mut self, text: &str) {
        for m in identifiers(text) {
            if !self.names.contains(m) {
                self.names.insert(m.to_string());
            }
        }
    }

    /// Is the name known?
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Is the name a shortened spelling ([`shortens`]) of a name of the library?
    pub fn contains_shortened(&self, name: &str) -> bool {
        if !name.contains('_') {
            return false;
        }
        let tails = self.tails.get_or_init(|| {
            let mut tails = HashSet::new();
            for n in self
                .names
                .iter()
                .filter(|n| self.prefixes.iter().any(|p| n.starts_with(p.as_str())))
            {
                for (i, _) in n.match_indices('_') {
                    let tail = &n[i + 1..];
                    if tail.contains('_') && !tail.starts_with('_') {
                        tails.insert(tail.to_string());
                    }
                }
            }
            tails
        });
        tails.contains(name)
    }

    /// Is the name an API or routine of the library written without its prefix
    /// (`csyr` for `rocblas_csyr`), or the stem of a HIP name (`hipEvent` of
    /// `hipEvent_t`, `hipEventRecord`)?
    pub fn contains_unprefixed(&self, name: &str) -> bool {
        if self
            .prefixes
            .iter()
            .any(|p| self.names.contains(&format!("{p}{name}")))
        {
            return true;
        }
        name.starts_with("hip")
            && name.len() > 4
            && system_words().iter().any(|w| {
                w.len() > name.len()
                    && w.starts_with(name)
                    && w[name.len()..].starts_with(|c: char| c == '_' || c.is_ascii_uppercase())
            })
    }

    /// Names known.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when nothing was loaded.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The files of `lib`'s tree a mention names (its path, a tail of it, its file name
    /// shortened at `_` or `-`, folders left out as `/.../`), each once.
    pub fn files_named(&self, lib: &str, mention: &str) -> Vec<&str> {
        let mention = mention.trim_start_matches("./");
        let mut out: Vec<&str> = self
            .paths_ending_as(mention)
            .filter(|(l, p)| l == lib && names_file(p, mention))
            .map(|(_, p)| p.as_str())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The paths whose file name `mention`'s last part may stand for: every path
    /// [`names_file`] can accept, and few others.
    fn paths_ending_as<'s>(
        &'s self,
        mention: &str,
    ) -> impl Iterator<Item = &'s (String, String)> + 's {
        let by_leaf = self.by_leaf.get_or_init(|| {
            let mut m: HashMap<String, Vec<usize>> = HashMap::new();
            for (k, (_, p)) in self.paths.iter().enumerate() {
                let name = p.rsplit('/').next().unwrap_or(p);
                m.entry(name.to_string()).or_default().push(k);
                for (i, _) in name.match_indices(['_', '-']) {
                    m.entry(name[i + 1..].to_string()).or_default().push(k);
                }
            }
            m
        });
        let leaf = mention.rsplit('/').next().unwrap_or(mention);
        by_leaf
            .get(leaf)
            .into_iter()
            .flatten()
            .map(|&k| &self.paths[k])
    }

    /// Is `mention` (a path or a bare file name) a file of a pinned tree, or one of the
    /// HIP and system headers (`hip/hip_runtime.h`)?
    pub fn has_file(&self, mention: &str) -> bool {
        let mention = mention.trim_start_matches("./");
        self.files.contains(mention)
            || self
                .paths_ending_as(mention)
                .any(|(_, p)| names_file(p, mention))
            || system_header_dirs_cached()
                .iter()
                .any(|(d, _)| d.join(mention).is_file())
    }
}

/// Does `mention` name the file at `path`: the path, a tail of it at a `/`, the file
/// name shortened at `_` or `-` (`imp.hpp` of `rocblas_dot_imp.hpp`, `complex-types.h`
/// of `rocblas-complex-types.h`), or folders left out as `/.../`
/// (`src64/.../rocblas_tbsv_64.cpp`)?
fn names_file(path: &str, mention: &str) -> bool {
    // Every way of naming a file keeps its end: a cheap test before the others.
    let end = mention
        .rsplit_once("/.../")
        .map_or(mention, |(_, tail)| tail);
    if !path.ends_with(end) {
        return false;
    }
    mentions_file(path, mention)
        || (!mention.contains('/')
            && path
                .rsplit('/')
                .next()
                .is_some_and(|n| tail_at(mention, n, b'-')))
        || mention.split_once("/.../").is_some_and(|(head, tail)| {
            path.ends_with(&format!("/{tail}")) && path.contains(&format!("{head}/"))
        })
}

/// Adds a file's path and each of its tails at a `/` to `files`.
fn add_file(files: &mut HashSet<String>, path: &str) {
    files.insert(path.to_string());
    for (i, _) in path.match_indices('/') {
        files.insert(path[i + 1..].to_string());
    }
}

/// Where the HIP headers and the C++ library live: `/usr/include/hip` (Debian's
/// `libamdhip64-dev`), the newest `/usr/include/c++/N` with its target directory, and
/// the C headers directly in `/usr/include`.
pub fn system_header_dirs() -> Vec<(PathBuf, bool)> {
    let inc = Path::new("/usr/include");
    let mut dirs = vec![(inc.join("hip"), true)];
    let newest = |base: PathBuf| {
        std::fs::read_dir(&base)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .max_by_key(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.split('.').next())
                    .and_then(|n| n.parse::<u32>().ok())
                    .unwrap_or(0)
            })
    };
    if let Some(cpp) = newest(inc.join("c++")) {
        dirs.push((cpp, true));
    }
    if let Some(arch) = std::fs::read_dir(inc)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("c++").is_dir() && p.to_string_lossy().ends_with("-linux-gnu"))
    {
        dirs.push((arch.join("c++"), true));
        dirs.push((arch.join("bits"), false));
    }
    dirs.push((inc.to_path_buf(), false));
    // The compiler's own headers: `float.h` (`FLT_EPSILON`), `stdint.h` limits.
    if let Some(gcc) = std::fs::read_dir("/usr/lib/gcc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with("-linux-gnu"))
        .and_then(newest)
    {
        dirs.push((gcc.join("include"), false));
    }
    dirs
}

/// [`system_header_dirs`], found once per process.
fn system_header_dirs_cached() -> &'static [(PathBuf, bool)] {
    static DIRS: OnceLock<Vec<(PathBuf, bool)>> = OnceLock::new();
    DIRS.get_or_init(system_header_dirs)
}

/// Words of the system headers, read once per process.
fn system_words() -> &'static HashSet<String> {
    static WORDS: OnceLock<HashSet<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut names = HashSet::new();
        for (dir, deep) in system_header_dirs() {
            let files: Vec<PathBuf> = if deep {
                walkdir::WalkDir::new(&dir)
                    .follow_links(true)
                    .into_iter()
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_type().is_file())
                    .map(|e| e.into_path())
                    .collect()
            } else {
                std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "h"))
                    .collect()
            };
            for f in files {
                if let Ok(bytes) = std::fs::read(&f) {
                    for m in identifiers(&String::from_utf8_lossy(&bytes)) {
                        if !names.contains(m) {
                            names.insert(m.to_string());
                        }
                    }
                }
            }
        }
        names
    })
}

fn source_files(base: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(base)
        .follow_links(true)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| SOURCE_EXTS.contains(&x))
        })
        .collect()
}

/// The identifiers of a text, in order: each whole word of ASCII letters, digits and
/// underscores that does not start with a digit (what `\b[A-Za-z_][A-Za-z0-9_]*\b`
/// matches). A word touching another letter (`é`) is no identifier. Scanned by hand:
/// every answer runs it over the whole code shown, where a regex costs several times
/// more.
pub fn identifiers(text: &str) -> Identifiers<'_> {
    Identifiers { text, at: 0 }
}

/// The iterator of [`identifiers`].
pub struct Identifiers<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Iterator for Identifiers<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let b = self.text.as_bytes();
        while self.at < b.len() {
            let start = self.at;
            if b[start].is_ascii_alphanumeric() || b[start] == b'_' {
                let mut end = start;
                while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                    end += 1;
                }
                self.at = end;
                // A word that runs on into a non-ASCII letter is not an identifier.
                let wordy = |c: char| c.is_alphanumeric() || c == '_';
                let runs_on = self.text[end..].chars().next().is_some_and(wordy);
                if !runs_on && !b[start].is_ascii_digit() {
                    return Some(&self.text[start..end]);
                }
                // Skip the rest of the run (non-ASCII letters and what follows them).
                while let Some(c) = self.text[self.at..].chars().next().filter(|&c| wordy(c)) {
                    self.at += c.len_utf8();
                }
            } else if b[start] < 0x80 {
                self.at += 1;
            } else {
                let c = self.text[start..].chars().next().expect("char boundary");
                self.at += c.len_utf8();
                if c.is_alphanumeric() {
                    // A letter before an ASCII run joins it: skip the whole run.
                    while let Some(c) = self.text[self.at..]
                        .chars()
                        .next()
                        .filter(|&c| c.is_alphanumeric() || c == '_')
                    {
                        self.at += c.len_utf8();
                    }
                }
            }
        }
        None
    }
}

/// Is `short` a shortened spelling of `full`: its last words at an underscore
/// (`save_sum` of `rocblas_dot_save_sum`, `invalid_size` of
/// `rocblas_status_invalid_size`)? Only names of two words or more shorten: a single
/// word (`size`) names too much to stand for one name.
pub fn shortens(short: &str, full: &str) -> bool {
    short.contains('_') && !short.starts_with('_') && tail_at(short, full, b'_')
}

/// Is `tail` the end of `full` from just after a `sep` (`save_sum` of
/// `rocblas_dot_save_sum` at `_`, `x.hpp` of `blas1/x.hpp` at `/`)? The one reading of
/// a shortened name, for names, functions and files alike.
pub fn tail_at(tail: &str, full: &str, sep: u8) -> bool {
    !tail.is_empty()
        && full.len() > tail.len()
        && full.ends_with(tail)
        && full.as_bytes()[full.len() - tail.len() - 1] == sep
}

/// An AMDGPU instruction (`v_pk_fma_f32`, `s_waitcnt`, `ds_read_b128`,
/// `global_load_dwordx4`), which an answer reading the compiled code names: the ISA's,
/// not the library's.
fn isa_mnemonic(w: &str) -> bool {
    const MEMORY: &[&str] = &["ds_", "global_", "buffer_", "flat_", "scratch_"];
    const SCALAR: &[&str] = &[
        "s_waitcnt",
        "s_barrier",
        "s_nop",
        "s_sleep",
        "s_setprio",
        "s_endpgm",
    ];
    static TYPED: OnceLock<Regex> = OnceLock::new();
    // `v_fma_f32`, `v_pk_fma_f32`, `s_load_dwordx4`, `v_mfma_f32_32x32x8f16`.
    let typed = TYPED.get_or_init(|| {
        Regex::new(r"^[vs]_[a-z0-9_]*_(?:[fbiu](?:8|16|32|64|128)|dwordx?\d*)(?:_|$)")
            .expect("static regex")
    });
    w.bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        && (SCALAR.contains(&w)
            || typed.is_match(w)
            || (MEMORY.iter().any(|u| w.starts_with(u))
                && ["load", "store", "read", "write", "atomic"]
                    .iter()
                    .any(|k| w.contains(k))))
}

/// Math notation written like a name (`l_k`, `a_ij`, `x_i`): short parts joined by
/// underscores, which prose uses for subscripts, not for the library's names.
fn math_notation(w: &str) -> bool {
    const OPERATORS: &[&str] = &["sum", "prod", "max", "min", "norm", "argmax", "argmin"];
    // `alpha_old`, `eps_float`, `y_ref`: a value at a moment, of a type or of a reference.
    const QUALIFIERS: &[&str] = &[
        "old", "new", "ref", "prev", "next", "true", "exact", "hat", "bar", "tilde", "init",
        "final", "orig", "float", "double", "half", "single", "f32", "f64",
    ];
    const LIBRARIES: &[&str] = &["rocblas", "rocsolver", "hip", "hipblas", "hipsolver"];
    // `xSTERF`, `xGEMV`: a LAPACK or BLAS routine for any precision.
    let generic_routine = w.len() >= 4
        && w.starts_with('x')
        && w[1..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let parts: Vec<&str> = w.split('_').collect();
    generic_routine
        || (parts.len() == 2
            && parts.iter().all(|p| !p.is_empty())
            && (parts.iter().all(|p| p.len() <= 2)
                || (parts[0].len() == 1 && w.len() <= 8)
                || (OPERATORS.contains(&parts[0]) && parts[1].len() <= 2)
                || (QUALIFIERS.contains(&parts[1])
                    && parts[0].len() <= 8
                    && !LIBRARIES.contains(&parts[0]))))
}

/// The identifiers of a text as a set: built once for the code shown, asked by each
/// check that needs it.
#[derive(Debug, Default)]
pub struct NameSet(HashSet<Box<str>>);

impl NameSet {
    /// The identifiers of `text`.
    pub fn of(text: &str) -> NameSet {
        let mut set: HashSet<Box<str>> = HashSet::new();
        for w in identifiers(text) {
            if !set.contains(w) {
                set.insert(w.into());
            }
        }
        NameSet(set)
    }

    /// Does the text hold the identifier?
    pub fn contains(&self, w: &str) -> bool {
        self.0.contains(w)
    }

    /// Does the text hold a name that `w` shortens? Here, in the code the question
    /// shows, one word will do (`argCheck` of `rocsolver_getrs_argCheck`, `inc1` of
    /// `rocblas_syr_kernel_inc1`): the slice's own names are few.
    pub fn contains_shortened(&self, w: &str) -> bool {
        // Or the head two names share (`sub_stride` of `sub_stride_A` and
        // `sub_stride_invA`).
        let head = |full: &str| {
            w.contains('_')
                && full.len() > w.len() + 1
                && full.starts_with(w)
                && full.as_bytes()[w.len()] == b'_'
        };
        w.len() >= 3
            && self
                .0
                .iter()
                .any(|full| tail_at(w, full, b'_') || head(full))
    }
}

fn backtick_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"`([^`\n]+)`").expect("static regex"))
}

fn fence_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?s)```([A-Za-z+#-]*)[^\n]*\n(.*?)```").expect("static regex"))
}

fn line_number_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?m)^[ \t]*\d+[ \t]*\|[ \t]?").expect("static regex"))
}

/// A file named in prose, with an optional `:start[-end]` line range.
fn file_mention_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"\b((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(?:hpp|hxx|hh|h|cpp|cxx|cc|hip|cuh|cu|inl|inc|tcc))\b(?::(\d+)(?:\s*-\s*(\d+))?)?",
        )
        .expect("static regex")
    })
}

/// `line 293`, `lines 40-46`, `lines 40 to 46` in prose.
fn line_mention_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\blines?\s+(\d+)(?:\s*(?:-|–|to|through)\s*(\d+))?\b")
            .expect("static regex")
    })
}

/// Words before a fenced block, or in its first line, that present it as an
/// illustration rather than the library's own code.
fn illustration_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)(pseudo|sketch|simplif|illustrat|for example|e\.g\.|roughly|in effect|equivalent|conceptual|something like|hypothetical|minimal|not the library|would look|could write|might write|your own|a version that)")
            .expect("static regex")
    })
}

/// A fenced block of the answer.
struct Fence<'a> {
    body: &'a str,
    /// Presented as an illustration, not as the library's code.
    illustration: bool,
}

/// The answer's fenced blocks, and the prose with them blanked out.
fn split_fences(answer: &str) -> (Vec<Fence<'_>>, String) {
    let mut fences = Vec::new();
    let mut prose = String::with_capacity(answer.len());
    let mut last = 0;
    for c in fence_re().captures_iter(answer) {
        let (all, info, body) = (
            c.get(0).expect("match"),
            c.get(1).map_or("", |m| m.as_str()),
            c.get(2).map_or("", |m| m.as_str()),
        );
        let before = &answer[last..all.start()];
        prose.push_str(before);
        prose.push('\n');
        // The sentence leading into the block, and the block's own first line.
        let lead: String = before
            .chars()
            .rev()
            .take(200)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let lead = lead.rsplit("\n\n").next().unwrap_or("");
        let first = body.lines().next().unwrap_or("");
        let illustration = matches!(
            info.to_ascii_lowercase().as_str(),
            "text" | "pseudo" | "pseudocode"
        ) || illustration_re().is_match(lead)
            || (first.trim_start().starts_with("//") && illustration_re().is_match(first));
        fences.push(Fence { body, illustration });
        last = all.end();
    }
    prose.push_str(&answer[last..]);
    (fences, prose)
}

/// Does a word of prose present itself as code: snake or macro case with an
/// underscore, or a lower-to-upper camel case step (`threadIdx`, `hipMemcpy`)?
fn code_shaped(w: &str) -> bool {
    let inner = w.trim_matches('_');
    if inner.is_empty() || w.len() < 3 {
        return false;
    }
    let b = w.as_bytes();
    inner.contains('_')
        || w.starts_with('_')
        || b.windows(2)
            .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())
}

/// A hardware performance counter as rocprof names it: its block (`SQ`, `TCC`, `TCP`,
/// ...) then upper-case words (`SQ_LDS_BANK_CONFLICT`, `TCC_HIT_sum`).
fn counter_name(w: &str) -> bool {
    const BLOCKS: &[&str] = &[
        "SQ", "SQC", "TCC", "TCP", "TA", "TD", "GRBM", "SPI", "CPC", "CPF", "GDS",
    ];
    w.split_once('_').is_some_and(|(block, rest)| {
        BLOCKS.contains(&block)
            && rest.len() >= 3
            && rest.split('_').next().is_some_and(|first| {
                first
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            })
    })
}

/// Names of the hardware and its tools that an answer about performance uses and no
/// source tree holds: GCN/CDNA instructions and rocprof counters.
const HARDWARE_NAMES: &[&str] = &[
    "s_barrier",
    "s_waitcnt",
    "s_endpgm",
    "s_sleep",
    "s_setprio",
    "s_nop",
    "s_load_dword",
    "s_load_dwordx2",
    "s_load_dwordx4",
    "s_buffer_load_dword",
    "v_mfma",
    "v_fma_f32",
    "v_fma_f64",
    "v_mac_f32",
    "v_add_f32",
    "v_mul_f32",
    "v_readfirstlane_b32",
    "ds_read_b32",
    "ds_read_b64",
    "ds_read_b128",
    "ds_write_b32",
    "ds_write_b64",
    "ds_write_b128",
    "ds_bpermute_b32",
    "ds_permute_b32",
    "ds_swizzle_b32",
    "global_load_dword",
    "global_load_dwordx2",
    "global_load_dwordx4",
    "global_store_dword",
    "global_store_dwordx2",
    "global_store_dwordx4",
    "buffer_load_dword",
    "buffer_store_dword",
    "flat_load_dword",
    "flat_store_dword",
    "FETCH_SIZE",
    "WRITE_SIZE",
    "MemUnitBusy",
    "MemUnitStalled",
    "WriteUnitStalled",
    "VALUBusy",
    "VALUUtilization",
    "SALUBusy",
    "VALUInsts",
    "SALUInsts",
    "VFetchInsts",
    "VWriteInsts",
    // The caches of a compute unit and the chip, as CDNA documents name them.
    "vL1D",
    "sL1D",
    "L1D",
    "L1I",
    "MALL",
    "LDSBankConflict",
    "LDSInsts",
    "L2CacheHit",
    "GPUBusy",
    "Wavefronts",
    "TA_BUSY",
    "TA_BUSY_avr",
    "TCC_HIT",
    "TCC_MISS",
    "SQ_WAVES",
    "SQ_INSTS_VALU",
    "SQ_INSTS_SALU",
    "SQ_INSTS_LDS",
    "SQ_WAIT_INST_ANY",
    "GRBM_GUI_ACTIVE",
    "OccupancyPercent",
    "MeanOccupancyPerCU",
];

/// Names the answer uses as code that exist nowhere: not in `known`, not in the code
/// shown (`shown`, its names), not in `context` (the question and the answer's own
/// code, which the compile check vouches for). File names are checked by
/// [`unknown_files`], so they are taken out first. Sorted, unique.
pub fn unknown_identifiers(
    answer: &str,
    shown: &NameSet,
    context: &str,
    known: &KnownNames,
) -> Vec<String> {
    let context: HashSet<&str> = identifiers(context).collect();
    let plain = |w: &str| {
        known.contains(w)
            || shown.contains(w)
            || context.contains(w)
            || math_notation(w)
            || HARDWARE_NAMES.contains(&w)
            || isa_mnemonic(w)
            || counter_name(w)
            || shown.contains_shortened(w)
            || known.contains_shortened(w)
            || known.contains_unprefixed(w)
    };
    // `_none` for `rocblas_operation_none` beside `rocblas_operation_transpose`, and a
    // subscript (`(A x)_ind`): a leading underscore starts a tail or an index, not a name.
    let named = |w: &str| {
        plain(w)
            || w.strip_prefix('_')
                .filter(|r| !r.is_empty() && !r.starts_with('_'))
                .is_some_and(|r| {
                    (r.len() <= 4
                        && r.bytes()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
                        || shown.contains_shortened(r)
                        || known.contains_shortened(r)
                })
    };
    // "the gemvn_sm_mn_batched kernel" of `rocblas_gemvn_sm_mn_batched_kernel`.
    let exists = |w: &str| named(w) || named(&format!("{w}_kernel"));
    let claims_library = |w: &str| {
        known
            .prefixes
            .iter()
            .any(|p| w.starts_with(p.as_str()) || w.starts_with(&p.to_uppercase()))
    };
    let (fences, prose) = split_fences(answer);
    let mut out: Vec<String> = names_used_as_code(&prose)
        .into_iter()
        .filter(|w| !exists(w))
        .collect();
    // Library code quoted in a fence is held to the slice by the quote check; an
    // illustration may declare its own names but not invent the library's.
    for f in fences.iter().filter(|f| f.illustration) {
        for w in identifiers(f.body) {
            if claims_library(w) && !exists(w) {
                out.push(w.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The names prose (fences blanked) uses as code: every name inside a code span, and
/// the code-shaped words of running text; file names are taken out first.
fn names_used_as_code(prose: &str) -> Vec<String> {
    static GLOB: OnceLock<Regex> = OnceLock::new();
    // `*_threshold`, `rocblas_*_kernel`: a pattern over names, not a name.
    let glob = GLOB.get_or_init(|| Regex::new(r"\w*(?:_\*|\*_)\w*").expect("static regex"));
    let prose = without_commands(prose);
    let prose = file_mention_re().replace_all(&prose, " ");
    let prose = glob.replace_all(&prose, " ");
    let mut out = Vec::new();
    for c in backtick_re().captures_iter(&prose) {
        let span = c.get(1).map_or("", |m| m.as_str());
        for w in identifiers(span) {
            if w.len() >= 2 && !w.chars().all(|c| c.is_ascii_digit()) {
                out.push(w.to_string());
            }
        }
    }
    let bare = backtick_re().replace_all(&prose, " ");
    for w in identifiers(&bare) {
        if code_shaped(w) {
            out.push(w.to_string());
        }
    }
    out
}

/// Tools a command line in an answer starts with: the compiler, profilers, the
/// libraries' own benchmark and test clients.
const TOOLS: &[&str] = &[
    "hipcc",
    "amdclang++",
    "amdclang",
    "clang++",
    "clang",
    "hipconfig",
    "rocprof",
    "rocprofv2",
    "rocprofv3",
    "omniperf",
    "rocminfo",
    "rocm-smi",
    "rocgdb",
    "llvm-objdump",
    "roc-obj",
    "rocblas-bench",
    "rocblas-test",
    "rocsolver-bench",
    "rocsolver-test",
    "cmake",
    "make",
];

/// The prose with its command lines blanked: a code span that is a command-line option
/// (`-Rpass-analysis=kernel-resource-usage`) or starts with a tool (`hipcc -x hip
/// --offload-arch=gfx90a q3.hip`) names no code and no file of the library.
fn without_commands(prose: &str) -> std::borrow::Cow<'_, str> {
    backtick_re().replace_all(prose, |c: &regex::Captures| {
        let span = c.get(1).map_or("", |m| m.as_str()).trim_start();
        let first = span.split_whitespace().next().unwrap_or("");
        let first = first.rsplit('/').next().unwrap_or(first);
        if span.starts_with('-') || TOOLS.contains(&first) {
            " ".repeat(c[0].len())
        } else {
            c[0].to_string()
        }
    })
}

/// The library's own functions and kernels that the answer's prose names but that
/// neither the code shown, `context` (the question, the answer's code) nor `along`
/// (the APIs and the call path the entry is about) holds: an answer about scal that
/// explains `rocblas_internal_gemv_launcher` is not answered from its slice. Public
/// APIs are left to the provenance and fact checks. Sorted, unique.
pub fn names_outside_slice(
    answer: &str,
    shown: &NameSet,
    context: &str,
    along: &[&str],
    known: &KnownNames,
) -> Vec<String> {
    let mut local: HashSet<&str> = identifiers(context).collect();
    local.extend(along.iter().copied());
    // The element types of the APIs' precisions and the class behind the complex
    // ones: what `T` is for `rocsolver_cgetrs`, whether or not a slice spells it.
    local.extend([
        "rocblas_complex_num",
        "rocblas_float_complex",
        "rocblas_double_complex",
        "rocblas_half",
        "rocblas_bfloat16",
    ]);
    let (_, prose) = split_fences(answer);
    let mut out: Vec<String> = names_used_as_code(&prose)
        .into_iter()
        .filter(|w| known.defined.contains(w) && !shown.contains(w) && !local.contains(w.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Words that name code in any kernel: prose using only these says nothing of the
/// code shown, although a slice may have variables so named.
const GENERIC_WORDS: &[&str] = &[
    "the", "and", "for", "each", "its", "all", "with", "from", "into", "one", "two", "then",
    "when", "while", "this", "that", "are", "not", "only", "once", "done", "back", "over",
    "thread", "threads", "block", "blocks", "grid", "kernel", "kernels", "work", "memory",
    "global", "shared", "local", "data", "value", "values", "result", "results", "size", "index",
    "element", "elements", "device", "host", "stream", "launch", "loop", "array", "vector",
    "matrix", "pointer", "function", "call", "return", "returns", "output", "input", "buffer",
    "offset", "count", "number", "type", "status", "code", "error", "first", "last", "next",
    "start", "end", "step", "sum", "max", "min", "warp", "lane", "write", "writes", "read",
    "reads", "load", "store", "copy", "set", "get", "new",
];

/// Does the answer name anything of the code shown: a name of the code in a code span
/// or in the prose (code-shaped, a capitalised pair like `NB`, or a word of three
/// letters or more that is not a generic word), or a fenced block? Prose that could be said of any kernel ("the
/// work is split evenly among threads") is not grounded.
pub fn names_something_shown(answer: &str, local: &NameSet) -> bool {
    let (fences, prose) = split_fences(answer);
    if !fences.is_empty() {
        return true;
    }
    if names_used_as_code(&prose)
        .iter()
        .any(|w| local.contains(w.as_str()))
    {
        return true;
    }
    identifiers(&prose).any(|w| {
        // `NB`, `M` of a template: short, but written as a constant's name is.
        let named = w.len() >= 3 || (w.len() == 2 && w.bytes().all(|b| b.is_ascii_uppercase()));
        named && local.contains(w) && !GENERIC_WORDS.contains(&w.to_lowercase().as_str())
    })
}

/// What [`library_claim`] found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibraryClaim {
    /// A name given to a library that does not define it.
    Name(String),
    /// Another version of the entry's library.
    Version(String),
}

/// A name the answer gives to one library that another one defines and it does not
/// ("the rocSOLVER kernel `rocblas_scal_kernel`", "`rocblas_scal_kernel` from
/// rocSOLVER"), judged where both libraries' indexes are read; or the entry's own
/// library said to be at another version than the one pinned ("in rocBLAS 5.5.1"
/// of a 6.4.4 entry).
pub fn library_claim(
    answer: &str,
    lib: &str,
    version: &str,
    known: &KnownNames,
) -> Option<LibraryClaim> {
    static BEFORE: OnceLock<Regex> = OnceLock::new();
    static AFTER: OnceLock<Regex> = OnceLock::new();
    static VERSION: OnceLock<Regex> = OnceLock::new();
    let before = BEFORE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b([a-z]+)(?:'s)?\s+(?:own\s+|internal\s+|public\s+|device\s+|host\s+)*",
            r"(?:kernel|function|helper|routine|template|launcher|api|macro|wrapper)s?\s+`?([A-Za-z_]\w*)"
        ))
        .expect("static regex")
    });
    let after = AFTER.get_or_init(|| {
        Regex::new(r"(?i)`?([A-Za-z_]\w*)`?\s+(?:is\s+)?(?:defined\s+|declared\s+)?(?:in|from)\s+(?:the\s+)?([a-z]+)\b(?:\s+(?:library|sources?|code))?([^'\w]|$)")
            .expect("static regex")
    });
    let version_re = VERSION.get_or_init(|| {
        Regex::new(r"(?i)\b([a-z]+)\s+(?:version\s+)?v?(\d+\.\d+(?:\.\d+)?)\b")
            .expect("static regex")
    });
    let (_, prose) = split_fences(answer);
    let library = |word: &str| {
        known
            .defined_in
            .keys()
            .find(|l| l.eq_ignore_ascii_case(word))
            .cloned()
    };
    let claims = before
        .captures_iter(&prose)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .chain(
            after
                .captures_iter(&prose)
                .map(|c| (c[2].to_string(), c[1].to_string())),
        );
    for (word, name) in claims {
        let Some(claimed) = library(&word) else {
            continue;
        };
        let own = &known.defined_in[&claimed];
        if own.contains(&name) {
            continue;
        }
        if let Some(other) = known
            .defined_in
            .iter()
            .find(|(l, names)| **l != claimed && names.contains(&name))
            .map(|(l, _)| l)
        {
            return Some(LibraryClaim::Name(format!(
                "the answer gives {name} to {word}; {other} defines it, {claimed} does not"
            )));
        }
    }
    for c in version_re.captures_iter(&prose) {
        if !c[1].eq_ignore_ascii_case(lib) {
            continue;
        }
        let said = &c[2];
        // `6.4` of a 6.4.4 entry names its release; `6.4.5` or `5.5` does not.
        let same = version == said || version.starts_with(&format!("{said}."));
        if !same {
            return Some(LibraryClaim::Version(format!(
                "the answer speaks of {} {said}; the entry is about {lib} {version} as pinned",
                &c[1]
            )));
        }
    }
    None
}

/// Files the answer names that no pinned tree has. Sorted, unique.
pub fn unknown_files(answer: &str, known: &KnownNames) -> Vec<String> {
    let (_, prose) = split_fences(answer);
    let prose = without_commands(&prose);
    let mut out: Vec<String> = file_mention_re()
        .captures_iter(&prose)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .filter(|f| !known.has_file(f))
        .map(|f| f.to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Does a file mention name the file at `path`: the path, a tail of it at a `/`, or the
/// file name shortened at an underscore (`kernels.cpp` for `rocblas_syr_kernels.cpp`)?
pub fn mentions_file(path: &str, mention: &str) -> bool {
    path == mention || tail_at(mention, path, b'/') || tail_at(mention, path, b'_')
}

/// A line range of the code shown: `(file, start, end)`.
pub type ShownRange<'a> = (&'a str, u32, u32);

/// The first line range the answer's prose names (`file.hpp:40-46`, `lines 40-46`)
/// that is not inside the code shown, described.
pub fn range_outside_shown(
    answer: &str,
    shown: &[ShownRange],
    in_tree: &dyn Fn(&str, u32, u32) -> bool,
) -> Option<String> {
    let (_, prose) = split_fences(answer);
    // A range inside one piece, or spanning pieces of one file shown one after the
    // other with a short gap between them (parameter lines a slice leaves out): its
    // ends are in the code shown and so is most of it.
    let inside = |file: Option<&str>, a: u32, b: u32| {
        let of_file: Vec<&ShownRange> = shown
            .iter()
            .filter(|(f, _, _)| file.is_none_or(|m| mentions_file(f, m)))
            .collect();
        if of_file.iter().any(|(_, s, e)| *s <= a && b <= *e) {
            return true;
        }
        let holds = |l: u32| of_file.iter().any(|(_, s, e)| *s <= l && l <= *e);
        let uncovered = (a..=b).filter(|l| !holds(*l)).count() as u32;
        holds(a) && holds(b) && uncovered <= 12 && 2 * uncovered < b - a + 1
    };
    // "(lines 906-1074, not shown)", "utility.hpp:34 in the sources": the answer says
    // itself that the range is not in the code shown.
    let said_outside = |at: (usize, usize)| {
        let re = said_outside_re();
        // The clause around the mention: a file name's own dots end nothing.
        let (at, after): (usize, usize) = at;
        let from = prose[..at].rfind(['\n', ';']).map_or(0, |i| i + 1);
        let from = prose[from..at].rfind(". ").map_or(from, |i| from + i + 2);
        let to = prose[after..]
            .find(". ")
            .or_else(|| prose[after..].find(['\n', ';']))
            .map_or(prose.len(), |i| after + i);
        re.is_match(&prose[from..to])
    };
    let num = |m: Option<regex::Match>| m.and_then(|m| m.as_str().parse::<u32>().ok());
    for c in file_mention_re().captures_iter(&prose) {
        let (Some(file), Some(a)) = (c.get(1).map(|m| m.as_str()), num(c.get(2))) else {
            continue;
        };
        let b = num(c.get(3)).unwrap_or(a);
        let at = c.get(0).map_or((0, 0), |m| (m.start(), m.end()));
        // Lines the slice leaves out are still the pinned tree's, where they are read.
        if b < a || (!inside(Some(file), a, b) && !said_outside(at) && !in_tree(file, a, b)) {
            return Some(format!("{file}:{a}-{b}"));
        }
    }
    let files: Vec<(usize, &str)> = file_mention_re()
        .captures_iter(&prose)
        .filter_map(|c| Some((c.get(0)?.start(), c.get(1)?.as_str())))
        .collect();
    for c in line_mention_re().captures_iter(&prose) {
        let Some(a) = num(c.get(1)) else { continue };
        let b = num(c.get(2)).unwrap_or(a);
        let at = c.get(0).map_or((0, 0), |m| (m.start(), m.end()));
        // "line 3161" after "rocblas_hemv_symv_kernels.cpp:3154" is of that file.
        let of_file = files.iter().rev().find(|(i, _)| *i < at.0).map(|(_, f)| *f);
        let in_last_file = of_file.is_some_and(|f| in_tree(f, a, b));
        if b < a || (!inside(None, a, b) && !said_outside(at) && !in_last_file) {
            return Some(c.get(0).map_or(String::new(), |m| m.as_str().to_string()));
        }
    }
    None
}

/// Words saying that what they are about is not in the code shown ("not in the slice",
/// "from the 6.4.3 source").
fn said_outside_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(?:not (?:shown|in the (?:slice|code shown))|outside (?:the|this) (?:slice|code shown)",
            r"|source lines?|(?:the slice|it) (?:does not|doesn't) show",
            r"|(?:left|cut) out of the slice|(?:in|from) the (?:[\d.]+ |library(?:'s)? )?sources?|omitted)\b"
        ))
        .expect("static regex")
    })
}

/// The line ranges the answer's prose gives, with the file where it names one
/// (`utility.hpp:149-154`, `source line 3568`).
pub fn ranges_in_prose(answer: &str) -> Vec<(Option<String>, u32, u32)> {
    let (_, prose) = split_fences(answer);
    let num = |m: Option<regex::Match>| m.and_then(|m| m.as_str().parse::<u32>().ok());
    let mut out = Vec::new();
    for c in file_mention_re().captures_iter(&prose) {
        if let Some(a) = num(c.get(2)) {
            let file = c.get(1).map(|m| m.as_str().to_string());
            out.push((file, a, num(c.get(3)).unwrap_or(a)));
        }
    }
    for c in line_mention_re().captures_iter(&prose) {
        if let Some(a) = num(c.get(1)) {
            out.push((None, a, num(c.get(2)).unwrap_or(a)));
        }
    }
    out
}

/// The files the answer's prose names (`rocblas_hemv_symv_kernels.cpp:3179`,
/// `utility.hpp`), as written.
pub fn files_mentioned(answer: &str) -> Vec<String> {
    let (_, prose) = split_fences(answer);
    file_mention_re()
        .captures_iter(&prose)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_string()))
        .collect()
}

/// The end of a sentence in prose: a stop after a word of two letters or more, a
/// number, a closing mark or a character outside ASCII (`x_i²`), with markdown emphasis
/// after it (`**Dot product.** This`), then a space (not `e.g. `); or a line break.
/// The stop itself is the `stop` group: what comes before it is the sentence's.
fn sentence_end_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?:^|[^.])(?:\b(?:[A-Za-z_]\w*[A-Za-z0-9]|\d+)|[)\]`'\x22*]|[^\x00-\x7F\s])",
            r"(?P<stop>[.!?]\**\s+)|(?P<nl>\n)"
        ))
        .expect("static regex")
    })
}

/// Where the sentences of `text` end: the byte where each stop starts and the byte
/// where the next sentence starts.
fn sentence_breaks(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    sentence_end_re().captures_iter(text).filter_map(|c| {
        let m = c.name("stop").or_else(|| c.name("nl"))?;
        Some((m.start(), m.end()))
    })
}

/// The sentences of `text`, each without its stop.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    for (stop, next) in sentence_breaks(text) {
        out.push(&text[from..stop]);
        from = next;
    }
    out.push(&text[from..]);
    out
}

/// A piece of the code shown, with its lines (`text`, from `start`).
pub struct ShownPiece<'a> {
    /// File relative to its tree's root.
    pub file: &'a str,
    /// The function (or kernel, macro) the piece is.
    pub name: &'a str,
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
    /// The piece's lines, `start` first.
    pub text: &'a str,
    /// The macro expansion the prompt showed under the piece (`INST_NRM2_C_API(...)`
    /// as the compiler sees it): what a range of the piece is cited for too.
    pub expansion: Option<&'a str>,
}

/// Names a stretch of prose anchors a line range to: identifiers of its code spans and
/// code-shaped words, three characters or more, file names left out.
fn anchors(segment: &str) -> Vec<&str> {
    let spans: Vec<&str> = backtick_re()
        .captures_iter(segment)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect();
    let mut out: Vec<&str> = spans
        .iter()
        .flat_map(|s| identifiers(s))
        .filter(|w| w.len() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let bare = backtick_re().replace_all(segment, " ");
    for w in identifiers(&bare) {
        if code_shaped(w) || instantiated(&bare, w) {
            if let Some(i) = segment.find(w) {
                out.push(&segment[i..i + w.len()]);
            }
        }
    }
    // `_64` names a suffix of the forms, not a name of the code.
    out.retain(|w| {
        !PROSE_NAMES.contains(w) && !w.trim_matches('_').chars().all(|c| c.is_ascii_digit())
    });
    out.sort_unstable();
    out.dedup();
    out
}

/// Words of prose that look like code but name a library, a unit or a rate.
const PROSE_NAMES: &[&str] = &[
    "rocBLAS",
    "rocSOLVER",
    "hipBLAS",
    "hipSOLVER",
    "hipBLASLt",
    "rocPRIM",
    "hipCUB",
    "rocThrust",
    "rocFFT",
    "rocRAND",
    "rocSPARSE",
    "hipSPARSE",
    "rocWMMA",
    "MIOpen",
    "ROCm",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "GFLOPs",
    "TFLOPs",
    "GFLOPS",
    "TFLOPS",
];

/// Is `w` written in `text` as an instantiation (`dot<LARF_SSKER_THREADS, ...>`):
/// directly followed by `<` and a name? (A word before `(` is as often mathematics,
/// `ceil(n/512)`, as a call.)
fn instantiated(text: &str, w: &str) -> bool {
    w.len() >= 3
        && text.match_indices(w).any(|(i, _)| {
            let mut chars = text[i + w.len()..].chars();
            !text[..i].chars().last().is_some_and(word_char)
                && chars.next() == Some('<')
                && chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where `name` stands in `text` as a whole word, not inside a longer name.
fn whole_word_at<'t>(text: &'t str, name: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(name).map(|(i, _)| i).filter(move |&i| {
        !text[..i].chars().last().is_some_and(word_char)
            && !text[i + name.len()..].chars().next().is_some_and(word_char)
    })
}

/// Where each mention of `name` in `sentence` (which starts at byte `offset` of the
/// prose) is cited: the byte span of the citation right after it (`launcher (lines
/// 207-223)`, `f<T> (lines 116-134; f.hpp:49-67)`, `blockIdx.x] (f.hpp:109)`, `x at
/// f.hpp:12`, `check_numerics (116-125)`), or `None` for a mention with none.
fn citations_of(sentence: &str, offset: usize, name: &str) -> Vec<Option<(usize, usize)>> {
    static AFTER: OnceLock<Regex> = OnceLock::new();
    let after_re = AFTER.get_or_init(|| {
        Regex::new(concat!(
            r"^(?:<[^()]*?>|[^()<>]{0,40}>|[^()\s]{1,12})?[>`'*]*\s*(?:\((?P<group>[^()]*)\)",
            r"|,?\s+(?:at|in|on)\s+(?P<one>(?:lines?\s+\d+|[\w./-]+\.\w+:\d+)))"
        ))
        .expect("static regex")
    });
    static NUMBERS: OnceLock<Regex> = OnceLock::new();
    let numbers = NUMBERS.get_or_init(|| {
        Regex::new(r"^\s*\d+(?:\s*[-–]\s*\d+)?(?:\s*[,;]\s*\d+(?:\s*[-–]\s*\d+)?)*\s*$")
            .expect("static regex")
    });
    let mut out = Vec::new();
    for i in whole_word_at(sentence, name) {
        let after = &sentence[i + name.len()..];
        let cite = after_re
            .captures(after)
            .and_then(|c| c.name("group").or_else(|| c.name("one")))
            .filter(|cite| {
                let text = cite.as_str();
                file_mention_re()
                    .captures_iter(text)
                    .any(|f| f.get(2).is_some())
                    || line_mention_re().is_match(text)
                    || numbers.is_match(text)
            });
        out.push(cite.map(|c| {
            let from = offset + i + name.len() + c.start();
            (from, from + c.as_str().len())
        }));
    }
    out
}

/// Does every mention of `name` in the sentence carry its own citation, none of them
/// the range at byte `at`? "forwards to `rocblas_internal_syr2_launcher` (lines
/// 207-223)" cites those lines for the launcher, not the sentence's other ranges.
fn cited_elsewhere(sentence: &str, offset: usize, name: &str, at: usize) -> bool {
    let cites = citations_of(sentence, offset, name);
    !cites.is_empty()
        && cites
            .iter()
            .all(|c| c.is_some_and(|(a, b)| !(a <= at && at < b)))
}

/// Does `name` stand only after the range ending at byte `end`, past another citation
/// (`walks the band (kernels.cpp:73-81), then reduce (84) sums with __shfl_down`): it is
/// of a later clause, with lines of its own.
fn in_later_clause(sentence: &str, offset: usize, name: &str, end: usize) -> bool {
    static CITE: OnceLock<Regex> = OnceLock::new();
    let cite = CITE.get_or_init(|| Regex::new(r"\(\s*\d+\b").expect("static regex"));
    let mut any = false;
    for i in whole_word_at(sentence, name) {
        let at = offset + i;
        if at < end {
            return false;
        }
        let cites = |t: &str| {
            file_mention_re()
                .captures_iter(t)
                .any(|c| c.get(2).is_some())
                || line_mention_re().is_match(t)
                || cite.is_match(t)
        };
        // Past another citation, or followed by lines of its own before the sentence
        // ends (`the block is 32x32 (BS2, ideal_sizes.hpp:35), with x = hipThreadIdx_x
        // (lines 288-291)`).
        if !cites(&sentence[end - offset..i]) && !cites(&sentence[i + name.len()..]) {
            return false;
        }
        any = true;
    }
    any
}

/// Is the range at byte `at` in the citation right after a mention of `name`
/// (`rocblas_syr2_arg_check<API_INT> (lines 116-134; rocblas_syr2.hpp:49-67)`)?
fn cited_right_after(sentence: &str, offset: usize, name: &str, at: usize) -> bool {
    citations_of(sentence, offset, name)
        .iter()
        .any(|c| c.is_some_and(|(a, b)| a <= at && at < b))
}

/// Is `full` the constant the code gives `n` a fixed value by (`batch_count_1` for
/// "batch_count is 1", `stridex_0`)?
fn fixed_value_of(n: &str, full: &str) -> bool {
    full.strip_prefix(n)
        .and_then(|r| r.strip_prefix('_'))
        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
}

/// Numbers the segment states as a name's value (`NB = 512`).
fn stated_numbers(segment: &str) -> Vec<&str> {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\b[A-Za-z_]\w*\s*=\s*(\d+)\b").expect("static regex"))
        .captures_iter(segment)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect()
}

/// The parameter list `text` starts with (`(bool is_upper, rocblas_int n)` of a
/// function's name), without its parentheses.
fn parameter_list(text: &str) -> Option<&str> {
    let t = text.trim_start();
    let skipped = text.len() - t.len();
    if !t.starts_with('(') {
        return None;
    }
    let mut depth = 0;
    for (i, ch) in t.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[skipped + 1..skipped + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Does `text` hold the number `v` as a token of its own (`512` in `<rocblas_int, 512>`)?
fn holds_number(text: &str, v: &str) -> bool {
    let digitish = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    text.match_indices(v).any(|(i, _)| {
        !text[..i].chars().last().is_some_and(digitish)
            && !text[i + v.len()..].chars().next().is_some_and(digitish)
    })
}

/// Is a name of `names` a parameter of a function the cited lines call and the code
/// shows: "uplo becomes the kernel's `is_upper` (kernels.cpp:145)", line 145 being an
/// argument of the launch of `rocblas_syr2_kernel`, whose head declares `is_upper`.
fn parameter_of_callee(names: &[&str], cited: &HashSet<&str>, shown: &[ShownPiece]) -> bool {
    let declares = |head: &str| {
        let params: HashSet<&str> = identifiers(head).collect();
        names.iter().any(|n| params.contains(n))
    };
    shown.iter().any(|p| {
        !p.name.is_empty()
            && cited.contains(p.name)
            && p.text
                .match_indices(p.name)
                .any(|(i, _)| parameter_list(&p.text[i + p.name.len()..]).is_some_and(declares))
    }) || shown.iter().filter(|p| p.name.is_empty()).any(|file| {
        // A whole file read for the answer: the callee's definition in it, from its
        // name and `(` to the body's `{`.
        cited.iter().filter(|c| c.len() >= 6).any(|callee| {
            file.text.match_indices(callee).any(|(i, _)| {
                let after = &file.text[i + callee.len()..];
                let line_start = file.text[..i].rfind('\n').map_or(0, |k| k + 1);
                let before = file.text[line_start..i].trim();
                after.starts_with('(')
                    && (before.is_empty()
                        || before.ends_with(['*', '&', '>', ')'])
                        || before.chars().last().is_some_and(|c| c.is_alphanumeric()))
                    && !before.contains(['=', ',', '('])
                    && {
                        let head = after.split(['{', ';']).next().unwrap_or("");
                        head.len() < 1200 && parameter_list(head).is_some_and(declares)
                    }
            })
        })
    })
}

/// The first line range the prose gives for something (`rocblas_sscal_2_kernel` is
/// launched at `rocblas_scal_kernels.hpp:195`) whose lines, give or take two, hold none
/// of the names its sentence uses: a line number pointing at other code. A range that
/// cites a function as a whole (its head, or most of the piece shown for it) is
/// anchored by that function's name just before it; a line inside the function is not,
/// so a wrong line in the right function is caught. A range in a sentence naming
/// nothing is not judged.
pub fn range_elsewhere(answer: &str, shown: &[ShownPiece], about: &[String]) -> Option<String> {
    let (_, prose) = split_fences(answer);
    let mentions: Vec<regex::Captures> = file_mention_re().captures_iter(&prose).collect();
    // Ranges cited together in one parenthesis hold their sentence's claim together
    // (`(rocblas_nrm2.cpp:25; rocblas_nrm2_imp.hpp:118-122)`): a range that holds none
    // of its names is forgiven when another of its group holds one.
    let mut failed: Vec<(Option<(usize, usize)>, String)> = Vec::new();
    let mut held_groups: Vec<(usize, usize)> = Vec::new();
    for c in &mentions {
        let m = c.get(0).expect("whole match");
        // "(batched.cpp:41-42 vs potf2.cpp:40)": the second range is what the first is
        // compared with, cited for what it lacks.
        if contrast_re().is_match(&prose[..m.start()]) {
            continue;
        }
        // The words of the sentence holding the range: `A (f:1) and B (f:2) call C`
        // cites both lines for the call of C.
        let from = 0;
        let to = prose.len();
        let start = sentence_breaks(&prose[from..m.start()])
            .last()
            .map_or(from, |(_, next)| from + next);
        // From the range's last character on: `file:25). Next` ends right after it.
        let end = sentence_breaks(&prose[m.end() - 1..to])
            .next()
            .map_or(to, |(stop, _)| (m.end() - 1 + stop).max(m.end()));
        let before = &prose[start..m.start()];
        let segment = format!("{before} {}", &prose[m.end()..end]);
        let Some(file) = c.get(1).map(|m| m.as_str()) else {
            continue;
        };
        let Some(a) = c.get(2).and_then(|m| m.as_str().parse::<u32>().ok()) else {
            if let Some(why) = file_elsewhere(before, file, shown) {
                return Some(why);
            }
            continue;
        };
        let b = c
            .get(3)
            .and_then(|m| m.as_str().parse::<u32>().ok())
            .unwrap_or(a);
        let in_file: Vec<&ShownPiece> = shown
            .iter()
            .filter(|p| mentions_file(p.file, file))
            .collect();
        let Some(piece) = in_file.iter().find(|p| p.start <= a && b <= p.end) else {
            continue;
        };
        let segment = file_mention_re().replace_all(&segment, " ");
        // The API the entry is about is what every line is cited for, not an anchor;
        // a name with a citation of its own is that citation's.
        let sentence = &prose[start..end];
        let names: Vec<&str> = anchors(&segment)
            .into_iter()
            .filter(|n| !about.iter().any(|api| api == n))
            .filter(|n| !cited_elsewhere(sentence, start, n, m.start()))
            .filter(|n| !in_later_clause(sentence, start, n, m.end()))
            .collect();
        // "takes a plain float* and no batch count (potf2.cpp:40)" cites the lines for
        // what they lack.
        // A range of code the slice does not show, read in the whole file, is held to
        // what its sentence says it does even when the sentence names nothing.
        let outside = piece.name.is_empty();
        if names.is_empty() && outside && !negation_re().is_match(&segment) {
            let lines = statement_lines(piece, a, b);
            if !actions_hold(&segment, &lines.join("\n")) {
                return Some(format!(
                    "{file}:{a}-{b} does not do what the answer cites it for"
                ));
            }
        }
        if names.is_empty() || negation_re().is_match(&segment) {
            continue;
        }
        let mut lines = statement_lines(piece, a, b);
        // `file:49, 54, 86-87`: the lines listed after the range are cited with it.
        for (a2, b2) in listed_after(&prose[m.end()..]) {
            if let Some(p) = in_file.iter().find(|p| p.start <= a2 && b2 <= p.end) {
                lines.extend(statement_lines(p, a2, b2));
            }
        }
        // The tests of the branches the lines sit in say when they run: "the launch at
        // kernels.cpp:201 is the one for `uplo == rocblas_fill_upper`".
        let cited: HashSet<&str> = lines
            .iter()
            .copied()
            .chain(enclosing_tests(piece, a))
            .chain(piece.expansion)
            .flat_map(identifiers)
            .collect();
        // The function the lines are in anchors them too when it is the name just
        // before the range and the range cites it as a whole: `launcher` (file:184-322)
        // is cited for its body; `launcher` (file:250), a line of its body, is cited for
        // what that line holds, and `launcher` launches `kernel` at file:195 for the
        // kernel.
        let last = identifiers(before).filter(|w| names.contains(w)).last();
        let in_named = |whole: bool| {
            last.is_some_and(|n| {
                in_file.iter().any(|p| {
                    let head_or_most = a <= p.start + 4 || 2 * (b - a + 1) > p.end - p.start;
                    names_piece(n, p.name) && p.start <= a && b <= p.end && (head_or_most || !whole)
                })
            })
        };
        let anchored = in_named(true)
            || names.iter().any(|n| {
                cited.contains(n)
                    || cited.iter().any(|full| tail_at(n, full, b'_') || fixed_value_of(n, full))
            })
            || names.iter().any(|n| {
                in_file.iter().any(|p| {
                    let head_or_most = a <= p.start + 4 || 2 * (b - a + 1) > p.end - p.start;
                    names_piece(n, p.name) && p.start <= a && b <= p.end && head_or_most
                })
            })
            || (in_named(false) && actions_hold(&segment, &lines.join("\n")))
            // `launcher` launches at file:140: a line of a function the sentence
            // names, doing what the sentence says.
            || (names.iter().any(|n| {
                in_file
                    .iter()
                    .any(|p| names_piece(n, p.name) && p.start <= a && b <= p.end)
            }) && !action_forms().iter().all(|(s, _)| !s.is_match(&segment))
                && actions_hold(&segment, &lines.join("\n")))
            || stated_numbers(&segment).iter().any(|v| {
                lines
                    .iter()
                    .copied()
                    .chain(piece.expansion)
                    .any(|l| holds_number(l, v))
            })
            || parameter_of_callee(&names, &cited, shown)
            // "using swap (lib_device_helpers.hpp:62-68)": the word the range follows
            // is a name the lines hold.
            || identifiers(before).last().is_some_and(|w| {
                w.len() >= 4
                    && !GENERIC_WORDS.contains(&w.to_ascii_lowercase().as_str())
                    && cited.contains(w)
            })
            // Two words of the sentence's code on the lines (`sum = FETCH{}(x[tid *
            // incx])` at kernels.hpp:102-103).
            || identifiers(&segment)
                .filter(|w| {
                    w.len() >= 3
                        && !GENERIC_WORDS.contains(&w.to_ascii_lowercase().as_str())
                        && cited.contains(w)
                })
                .collect::<HashSet<_>>()
                .len()
                >= 2
            // `rocblas_syr2_arg_check<API_INT> (rocblas_syr2.hpp:49-67)`: lines of the
            // function named right before them, a stretch of its body.
            || (b >= a + 2
                && names.iter().any(|n| {
                    cited_right_after(sentence, start, n, m.start())
                        && names_piece(n, piece.name)
                }))
            // `kernel` (file:926) through `FORWARD_SUBSTITUTIONS` (file:120-142): the
            // line invokes the macro the sentence names, which has a citation of its
            // own for its `#define`.
            || anchors(&segment).into_iter().any(|n| {
                n.len() >= 3
                    && n.bytes().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
                    && n.bytes().any(|c| c.is_ascii_uppercase())
                    && cited.contains(n)
            })
            || in_function_said(&prose[m.end()..], piece)
            // `(1182-1183, with idx2D at lib_host_helpers.hpp:53-57)`: a name of the
            // citation's own parenthesis that the lines hold.
            || paren_group(&prose, m.start(), m.end()).is_some_and(|(o, e)| {
                anchors(&prose[o..e]).into_iter().any(|n| n.len() >= 3 && cited.contains(n))
            })
            // `rocsolver_getrs_template ignores the trsm return value (getrs.hpp:163-166)`:
            // lines of the function named just before, holding a word the clause says.
            || (in_named(false) && shares_word(&segment, &lines))
            || calls_cited_with(&prose, c, &mentions, &cited, shown)
            || group_lines_hold(&prose, m.start(), m.end(), &names, shown);
        let group = paren_group(&prose, m.start(), m.end());
        if anchored {
            held_groups.extend(group);
        } else {
            let range = if b > a {
                format!("{file}:{a}-{b}")
            } else {
                format!("{file}:{a}")
            };
            failed.push((
                group,
                format!(
                    "{range} holds none of {} that the answer cites it for",
                    names.join(", ")
                ),
            ));
        }
    }
    failed
        .into_iter()
        .find(|(g, _)| g.is_none_or(|g| !held_groups.contains(&g)))
        .map(|(_, why)| why)
}

/// The parenthesis holding bytes `start..end` of `prose`, if one does.
fn paren_group(prose: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let open = prose[..start].rfind('(')?;
    if prose[open..start].contains(')') {
        return None;
    }
    let close = end + prose[end..].find(')')?;
    (!prose[end..close].contains('(')).then_some((open, close))
}

/// Do the lines a parenthesis cites beside the range at `start..end` by number alone
/// (`(lines 95-98, 111-113; device_macros.hpp:33-37)`, of the file the prose named last
/// before the parenthesis) hold one of `names`?
/// Do the lines hold a word of four letters or more, not a generic one, that the
/// clause says (`trsm` of "the trsm return value" in `rocsolver_trsm_upper<...>(`)?
fn shares_word(segment: &str, lines: &[&str]) -> bool {
    const EVERYWHERE: &[&str] = &[
        "rocblas",
        "rocsolver",
        "handle",
        "template",
        "const",
        "batch",
        "stride",
        "status",
        "true",
        "false",
        "return",
        "auto",
        "void",
        "size",
        "type",
    ];
    let words = |t: &str| -> HashSet<String> {
        t.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| w.len() >= 4 && w.chars().any(|c| c.is_ascii_alphabetic()))
            .map(|w| w.to_ascii_lowercase())
            .filter(|w| !GENERIC_WORDS.contains(&w.as_str()) && !EVERYWHERE.contains(&w.as_str()))
            .collect()
    };
    let said = words(segment);
    lines.iter().any(|l| !words(l).is_disjoint(&said))
}

fn group_lines_hold(
    prose: &str,
    start: usize,
    end: usize,
    names: &[&str],
    shown: &[ShownPiece],
) -> bool {
    let Some((open, close)) = paren_group(prose, start, end) else {
        return false;
    };
    // The files named before, the nearest first: lines are of the nearest one that
    // shows them.
    let files: Vec<&str> = file_mention_re()
        .captures_iter(&prose[..open])
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .collect();
    let group = &prose[open..close];
    let mut ranges = Vec::new();
    // `(89-110; utility.hpp:141-146)`: a part of the group that is numbers alone.
    for part in group.trim_matches(['(', ')']).split(';') {
        let part = part.trim();
        if part.chars().next().is_some_and(|c| c.is_ascii_digit())
            && part
                .chars()
                .all(|c| c.is_ascii_digit() || " ,-–".contains(c))
        {
            ranges.extend(listed_after(&format!(", {part}")));
        }
    }
    for c in line_mention_re().captures_iter(group) {
        let Some(a) = c.get(1).and_then(|m| m.as_str().parse::<u32>().ok()) else {
            continue;
        };
        let b = c
            .get(2)
            .and_then(|m| m.as_str().parse::<u32>().ok())
            .unwrap_or(a);
        ranges.push((a, b));
        ranges.extend(listed_after(&group[c.get(0).map_or(0, |m| m.end())..]));
    }
    ranges.iter().filter(|(a, b)| b >= a).any(|&(a, b)| {
        let showing = |f: &str| {
            shown.iter().find(|p| {
                !p.name.is_empty() && mentions_file(p.file, f) && p.start <= a && b <= p.end
            })
        };
        files
            .iter()
            .rev()
            .find_map(|f| showing(f))
            .is_some_and(|p| {
                statement_lines(p, a, b)
                    .iter()
                    .flat_map(|l| identifiers(l))
                    .any(|w| names.iter().any(|n| *n == w || tail_at(n, w, b'_')))
            })
    })
}

/// The line numbers listed right after a range (`, 54, 86-87` of `file:49, 54, 86-87`).
fn listed_after(after: &str) -> Vec<(u32, u32)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE
        .get_or_init(|| Regex::new(r"^\s*,\s*(\d+)(?:\s*[-–]\s*(\d+))?\b").expect("static regex"));
    let mut out = Vec::new();
    let mut rest = after;
    while let Some(c) = re.captures(rest) {
        let a = c[1].parse::<u32>().unwrap_or(0);
        let b = c
            .get(2)
            .and_then(|m| m.as_str().parse::<u32>().ok())
            .unwrap_or(a);
        if a > 0 && b >= a {
            out.push((a, b));
        }
        rest = &rest[c.get(0).map_or(rest.len(), |m| m.end())..];
    }
    out
}

/// Lines `a..=b` of `piece` completed to whole statements at their ends: the head of
/// the statement `a` falls in (a launch's first line names its kernel) and the rest of
/// the statement `b` falls in (the arguments after a cited head line). Nothing more:
/// the arguments a range stops short of, or lines two away, are not what it cites.
fn statement_lines<'a>(piece: &ShownPiece<'a>, a: u32, b: u32) -> Vec<&'a str> {
    let all: Vec<&'a str> = piece.text.lines().collect();
    let at = |l: u32| all.get((l - piece.start) as usize).copied().unwrap_or("");
    // A comment line neither ends nor starts a statement; a blank line ends one. A
    // brace-less `if(...)` starts what follows it and takes it as its body.
    let ends = |l: &str, header_ends: bool| {
        let code = l.split("//").next().unwrap_or("").trim();
        if code.is_empty() {
            return l.trim().is_empty();
        }
        let header = ["if", "for", "while", "else"]
            .iter()
            .any(|k| code.trim_start_matches('}').trim_start().starts_with(k))
            && (code.ends_with(')') || code.ends_with("else"));
        (header && header_ends) || code.starts_with('#') || code.ends_with([';', '{', '}', ':'])
    };
    let comment = |l: &str| {
        let t = l.trim();
        !t.is_empty() && l.split("//").next().unwrap_or("").trim().is_empty()
    };
    let (mut head, mut l) = (a, a);
    while l > piece.start && a - l < 12 {
        l -= 1;
        if comment(at(l)) {
            continue;
        }
        if ends(at(l), true) {
            break;
        }
        head = l;
    }
    // Only a range that holds its statement's head cites the rest of it.
    let mut tail = b;
    while head == a && tail < piece.end && tail - b < 12 && !ends(at(tail), false) {
        tail += 1;
    }
    let mut out = vec![at(head)];
    out.extend((a..=tail).map(at));
    out
}

/// Does the prose right after a range say which function the lines are in ("line 135 in
/// `rocblas_tbsv_backward_substitution_calc`"), and are they?
fn in_function_said(after: &str, piece: &ShownPiece) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^\)?,?\s+(?:in|of|inside|within)\s+(?:the\s+)?`?([A-Za-z_]\w*)")
            .expect("static regex")
    });
    re.captures(after)
        .is_some_and(|c| names_piece(&c[1], piece.name))
}

/// Prose ending in a word that compares: the range after it is what is compared with.
fn contrast_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(?:vs\.?|versus|compared (?:with|to)|unlike|than)\s*`?$")
            .expect("static regex")
    })
}

/// The lines that open the blocks holding line `at` of `piece` (`if(uplo ==
/// rocblas_fill_upper) {`), innermost last, and the test just before it that governs
/// it without braces (`if(incx == 1)` over a one-statement body).
fn enclosing_tests<'a>(piece: &ShownPiece<'a>, at: u32) -> Vec<&'a str> {
    let lines: Vec<&'a str> = piece
        .text
        .lines()
        .take(at.saturating_sub(piece.start) as usize)
        .collect();
    let test = |l: &str| {
        let l = l.trim_start().trim_start_matches('}').trim_start();
        ["if", "else", "for", "while", "switch", "case"]
            .iter()
            .any(|k| l.starts_with(k))
    };
    // Each open block: its opening line and whether a `return` is in it.
    let mut open: Vec<(&'a str, bool)> = Vec::new();
    let mut last = "";
    // The `if` blocks that return, closed within the last lines before `at`: what
    // follows them runs only when their test fails (the fallback after
    // `if(warpSize >= 64) { return ...; }`).
    let mut returned: Vec<(usize, &'a str)> = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if code.contains("return") {
            if let Some(top) = open.last_mut() {
                top.1 = true;
            }
        }
        for ch in code.chars() {
            match ch {
                '{' => open.push((if code.trim() == "{" { last } else { line }, false)),
                '}' => {
                    if let Some((head, ret)) = open.pop() {
                        if ret && head.trim_start().starts_with("if") {
                            returned.push((k, head));
                        }
                        if ret {
                            if let Some(top) = open.last_mut() {
                                top.1 = true;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        if !code.trim().is_empty() {
            last = line;
        }
    }
    let mut open: Vec<&'a str> = open.into_iter().map(|(l, _)| l).collect();
    open.extend(
        returned
            .iter()
            .filter(|(k, _)| lines.len() - k <= 25)
            .map(|(_, head)| *head),
    );
    // A function's head opens a block too, but its parameters say nothing of a line.
    open.retain(|l| test(l));
    if test(last) && !last.trim_end().ends_with([';', '{', '}']) {
        open.push(last);
    }
    open
}

/// Is the range of mention `c` a hop on a path the same parenthesis cites: its lines
/// call the function shown for another range cited with it ("reaches `potf2_run_small`
/// (strided_batched.cpp:82-83; potf2.hpp:209-214)", line 82 calling the template whose
/// lines 209-214 hold the call)?
fn calls_cited_with(
    prose: &str,
    c: &regex::Captures,
    mentions: &[regex::Captures],
    cited: &HashSet<&str>,
    shown: &[ShownPiece],
) -> bool {
    let m = c.get(0).expect("whole match");
    let open = prose[..m.start()].rfind('(');
    let close = prose[m.end()..].find(')').map(|i| m.end() + i);
    let (Some(open), Some(close)) = (open, close) else {
        return false;
    };
    if prose[open..m.start()].contains(')') {
        return false;
    }
    mentions.iter().any(|o| {
        let om = o.get(0).expect("whole match");
        if om.start() == m.start() || om.start() < open || om.end() > close {
            return false;
        }
        let (Some(file), Some(a)) = (
            o.get(1).map(|x| x.as_str()),
            o.get(2).and_then(|x| x.as_str().parse::<u32>().ok()),
        ) else {
            return false;
        };
        shown.iter().any(|p| {
            mentions_file(p.file, file) && p.start <= a && a <= p.end && cited.contains(p.name)
        })
    })
}

/// Does `said` name the function `name`: the name itself, or its tail at an
/// underscore (`argCheck` of `rocsolver_potf2_potrf_argCheck`)?
fn names_piece(said: &str, name: &str) -> bool {
    said == name || tail_at(said, name, b'_')
}

/// A file named as where something is (`rocblas_scal_kernel` is defined in
/// `rocblas_axpy_kernels.hpp`) whose code shown holds none of the names said to be
/// there: a location claim pointing at other code, as a wrong line range is. Judged
/// only where the words just before the file say it is a location and the slice shows
/// code of that file.
fn file_elsewhere(before: &str, file: &str, shown: &[ShownPiece]) -> Option<String> {
    static PLACE: OnceLock<Regex> = OnceLock::new();
    let place = PLACE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(?:defined|declared|implemented|lives?|living|located|sits?|resides?|found|kept)",
            r"\s+(?:\w+\s+){0,2}?in\s+(?:the\s+)?(?:(?:header|source|file)\s+)?`?$"
        ))
        .expect("static regex")
    });
    let m = place.find(before)?;
    // The clause holding the claim: from its last break up to the location words.
    let clause_start = before[..m.start()]
        .rfind([',', ';', ':', '('])
        .map_or(0, |i| i + 1);
    let names = anchors(&before[clause_start..m.start()]);
    let in_file: Vec<&ShownPiece> = shown
        .iter()
        .filter(|p| mentions_file(p.file, file))
        .collect();
    if names.is_empty() || in_file.is_empty() {
        return None;
    }
    let there: HashSet<&str> = in_file.iter().flat_map(|p| identifiers(p.text)).collect();
    (!names.iter().any(|n| there.contains(n))).then(|| {
        format!(
            "the answer places {} in {file}, whose code shown does not name it",
            names.join(", ")
        )
    })
}

/// What a sentence says a line of a function does, and the code that does it: a line
/// cited inside a function for "returns early" must hold a `return`, for "launches" a
/// launch, for "loops" a loop.
fn action_forms() -> &'static [(Regex, Regex)] {
    static FORMS: OnceLock<Vec<(Regex, Regex)>> = OnceLock::new();
    FORMS.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        [
            (r"(?i)\breturn(s|ed|ing)?\b|\bquick return", r"\breturn\b"),
            (r"(?i)\blaunch(es|ed|ing)?\b", r"LAUNCH|<<<|hipLaunchKernel"),
            (
                r"(?i)\b(loops (?:over|through|across)|iterates?|iterating)\b",
                r"\b(for|while)\b",
            ),
            (
                r"(?i)\b(synchroni[sz]\w*|barriers?)\b",
                r"__syncthreads|barrier|[Ss]ynchroni[sz]e|__threadfence",
            ),
            (r"(?i)\ballocat\w*", r"(?i)malloc|alloc"),
            (r"(?i)\bthrows?\b", r"\bthrow\b"),
            (r"(?i)\batomic\w*", r"(?i)atomic"),
        ]
        .into_iter()
        .map(|(said, code)| (r(said), r(code)))
        .collect()
    })
}

/// Whether `lines` do what `sentence` says they do, by [`action_forms`]: true when the
/// sentence names no such action, or one of those it names is on the lines.
fn actions_hold(sentence: &str, lines: &str) -> bool {
    let said: Vec<&(Regex, Regex)> = action_forms()
        .iter()
        .filter(|(s, _)| s.is_match(sentence))
        .collect();
    said.is_empty() || said.iter().any(|(_, code)| code.is_match(lines))
}

/// A HIP index builtin as written in code or prose (`blockIdx.z`, `hipBlockIdx_z`).
fn builtin_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\b(?:(blockIdx|threadIdx)\s*\.\s*([xyz])|hip(BlockIdx|ThreadIdx)_([xyz]))\b")
            .expect("static regex")
    })
}

/// The sentence of `text` holding bytes `start..end`: from the last `. `, line break or
/// `;` before to the next after (a file name's own dots end nothing).
fn sentence_around(text: &str, start: usize, end: usize) -> &str {
    let from = text[..start]
        .rfind(". ")
        .map(|i| i + 2)
        .into_iter()
        .chain(text[..start].rfind(['\n', ';']).map(|i| i + 1))
        .max()
        .unwrap_or(0);
    let to = text[end..]
        .find(". ")
        .into_iter()
        .chain(text[end..].find('\n'))
        .min()
        .map_or(text.len(), |i| end + i);
    &text[from..to]
}

/// Is the sentence about code the answer writes itself (a test, a rewrite, a sketch),
/// or does it set such code against the library ("where the library uses
/// hipThreadIdx_y")? Such a sentence makes no claim about the library for the checks
/// that compare claims with its code: they skip it, all of them through this one test.
pub fn speaks_of_own_code(sentence: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(?:my|our)\b",
            r"|(?-i:\bI (?:wrote|write|use|used|add|added|make|made|keep|kept|move|moved|chose|replace|replaced)\b)",
            r"|\b(?:this|the|my) (?:version|rewrite|rewritten (?:kernel|code|version)|sketch|proposal",
            r"|proposed (?:change|kernel|version|code)|test (?:program|harness|kernel|code)|harness",
            r"|standalone (?:copy|kernel|program|test)|copied kernel|example code|code below",
            r"|(?:cpu |host )?reference(?: implementation| code| loop)?|wrapper I\w*)\b",
            r"|\b(?:where|whereas|while|unlike|than) (?:the (?:library|original|library's)",
            r"|rocBLAS|rocSOLVER)\b"
        ))
        .expect("static regex")
    })
    .is_match(sentence)
}

/// Words that deny: a sentence with one says what code lacks or does not do.
fn negation_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(?:no|not|never|none|without|neither|nor|\w+n't)\b")
            .expect("static regex")
    })
}

/// Words that make a sentence deny or weigh alternatives rather than claim.
fn hedge_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(not|never|no|nor|neither|none|instead|rather|unlike|except|without|whereas|but|or|either|if|would|could|might|may|\w+n't)\b")
            .expect("static regex")
    })
}

/// The index builtins a text reads, as `(blockIdx|threadIdx, x|y|z)`.
fn builtins_in(text: &str) -> BTreeSet<(String, String)> {
    builtin_re()
        .captures_iter(text)
        .filter_map(|c| match (c.get(1), c.get(2), c.get(3), c.get(4)) {
            (Some(k), Some(d), _, _) => Some((k.as_str().to_string(), d.as_str().to_string())),
            (_, _, Some(k), Some(d)) => {
                let k = k.as_str();
                Some((k[..1].to_lowercase() + &k[1..], d.as_str().to_string()))
            }
            _ => None,
        })
        .collect()
}

/// The first sentence that says one kernel of the code shown (or, naming none, the
/// kernels shown) reads an index builtin (`blockIdx.y`) its code, with the helpers of
/// the slice it calls, never reads, though it reads that builtin in another dimension:
/// the batch said to come from `blockIdx.y` where the kernel takes it from
/// `blockIdx.z`. Sentences that deny or hedge are not read; a kernel reading no
/// builtin of that kind (through a helper the slice does not show) is not judged.
pub fn builtin_not_in_kernel(
    answer: &str,
    shown: &[ShownPiece],
    kernels: &[&str],
) -> Option<String> {
    // "blockIdx.x and blockIdx.y are always 0" says what a kernel does not use.
    static UNUSED: OnceLock<Regex> = OnceLock::new();
    let unused = UNUSED.get_or_init(|| {
        // The split at a sentence's end takes its last number with it.
        Regex::new(r"(?i)\b(?:(?:is|are) (?:always\b|(?:0|zero)\b)|unused)").expect("static regex")
    });
    let (_, prose) = split_fences(answer);
    for sentence in sentences(&prose) {
        if hedge_re().is_match(sentence)
            || speaks_of_own_code(sentence)
            || unused.is_match(sentence)
        {
            continue;
        }
        let claimed = builtins_in(sentence);
        if claimed.is_empty() {
            continue;
        }
        let words: HashSet<&str> = identifiers(sentence).collect();
        let named: Vec<&str> = kernels
            .iter()
            .copied()
            .filter(|k| words.contains(*k))
            .collect();
        // A sentence naming no kernel speaks of the kernels shown, all of them.
        let (about, subject): (Vec<&str>, String) = match named[..] {
            [] => (kernels.to_vec(), "the kernels shown".to_string()),
            [kernel] => (vec![kernel], kernel.to_string()),
            _ => continue,
        };
        let bodies: Vec<&ShownPiece> = shown.iter().filter(|p| about.contains(&p.name)).collect();
        if bodies.is_empty() {
            continue;
        }
        let called: HashSet<&str> = bodies.iter().flat_map(|b| identifiers(b.text)).collect();
        let mut code = String::new();
        for p in shown
            .iter()
            .filter(|p| about.contains(&p.name) || called.contains(p.name))
        {
            code.push('\n');
            code.push_str(p.text);
        }
        let reads = builtins_in(&code);
        for (kind, dim) in &claimed {
            let same_kind: Vec<String> = reads
                .iter()
                .filter(|(k, _)| k == kind)
                .map(|(k, d)| format!("{k}.{d}"))
                .collect();
            if !same_kind.is_empty() && !reads.contains(&(kind.clone(), dim.clone())) {
                return Some(format!(
                    "the answer has {subject} reading {kind}.{dim}; the code shown reads {} only",
                    same_kind.join(", ")
                ));
            }
        }
    }
    None
}

/// The type a sentence gives a variable of the code shown (`tid` "is a 32-bit int",
/// "declares `tid` as an unsigned int") against its declarations there: every
/// declaration of it in the pieces the sentence's kernel or function names (all pieces
/// when it names none) must disagree for the claim to be wrong. Judged are width (32
/// against 64 bits), signedness, and floating point against integer or float against
/// double.
pub fn declared_type_mismatch(answer: &str, shown: &[ShownPiece]) -> Option<String> {
    static CLAIM: OnceLock<Regex> = OnceLock::new();
    let claim = CLAIM.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)(?:\b(?P<role>(?:its|the)\s+(?:(?:global|linear|flat)\s+)?thread\s+(?:index|id))",
            r"|`?\b(?P<var>[A-Za-z_]\w*)`?)",
            r"\s+(?:is\s+(?:declared\s+)?(?:as\s+)?|as\s+)(?:an?\s+)?",
            r"((?:(?:32|64|16)-bit\s+|signed\s+|unsigned\s+)*)",
            r"(int|integer|int32_t|int64_t|uint32_t|uint64_t|size_t|long|float|double)\b"
        ))
        .expect("static regex")
    });
    static DECL: OnceLock<Regex> = OnceLock::new();
    let decl = DECL.get_or_init(|| {
        Regex::new(concat!(
            r"\b((?:const\s+)?(?:unsigned\s+|signed\s+)?",
            r"(?:int|long|short|size_t|u?int(?:8|16|32|64)_t|rocblas_int|rocblas_stride|float|double|auto|bool))",
            r"\s+([A-Za-z_]\w*)\s*(?:=|;|,|\[|\)|\{)"
        ))
        .expect("static regex")
    });
    let (_, prose) = split_fences(answer);
    for sentence in sentences(&prose) {
        if hedge_re().is_match(sentence) {
            continue;
        }
        let words: HashSet<&str> = identifiers(sentence).collect();
        let named: Vec<&ShownPiece> = shown.iter().filter(|p| words.contains(p.name)).collect();
        let pieces: Vec<&ShownPiece> = if named.is_empty() {
            shown.iter().collect()
        } else {
            named
        };
        for c in claim.captures_iter(sentence) {
            // "the thread index" is the variable initialised from `threadIdx`.
            let role = c.name("role").map(|m| m.as_str());
            let var = c.name("var").map_or("", |m| m.as_str());
            // `threadIdx.x is int64_t` ends an expression (`tid = ... + threadIdx.x`):
            // a member is no variable of the code.
            if c.name("var")
                .is_some_and(|v| sentence[..v.start()].ends_with(['.', '>', ':']))
            {
                continue;
            }
            let said = format!("{}{}", c.get(3).map_or("", |m| m.as_str()), &c[4]).to_lowercase();
            let declared: Vec<(String, String)> = pieces
                .iter()
                .flat_map(|p| {
                    decl.captures_iter(p.text)
                        .filter(|d| match role {
                            Some(_) => {
                                let rest = &p.text[d.get(0).map_or(0, |m| m.end())..];
                                let statement = rest.split(';').next().unwrap_or("");
                                d[0].ends_with('=') && statement.contains("threadIdx")
                            }
                            None => &d[2] == var,
                        })
                        .map(|d| (d[1].to_string(), d[2].to_string()))
                        .collect::<Vec<_>>()
                })
                .collect();
            if declared.is_empty() || declared.iter().any(|(t, _)| t.contains("auto")) {
                continue;
            }
            if declared.iter().all(|(t, _)| !type_fits(&said, t)) {
                let (t, name) = &declared[0];
                return Some(format!(
                    "the answer says {} is {}; the code shown declares it `{t} {name}`",
                    role.unwrap_or(var),
                    said.trim(),
                ));
            }
        }
    }
    None
}

/// Does a type said in words (`a 32-bit int`, `unsigned int`, `double`) fit a declared
/// one (`int64_t`, `uint32_t`, `const rocblas_int`)? Only what the words say is compared.
fn type_fits(said: &str, declared: &str) -> bool {
    let d = declared.replace("const", "");
    let d = d.trim();
    let float = matches!(d, "float" | "double");
    let bits: Option<u32> = match d {
        "int" | "int32_t" | "uint32_t" | "unsigned int" | "signed int" | "unsigned"
        | "rocblas_int" | "float" => Some(32),
        "int64_t" | "uint64_t" | "size_t" | "long" | "unsigned long" | "rocblas_stride"
        | "double" => Some(64),
        "int16_t" | "uint16_t" | "short" => Some(16),
        _ => None,
    };
    let unsigned = d.starts_with("uint") || d.starts_with("unsigned") || d == "size_t";
    let said_float = said.contains("float") || said.contains("double");
    if said_float != float {
        return false;
    }
    if float {
        return (said.contains("double") && d == "double")
            || (said.contains("float") && d == "float");
    }
    let said_bits = ["16", "32", "64"]
        .iter()
        .find(|b| said.contains(&format!("{b}-bit")) || said.contains(&format!("int{b}_t")))
        .and_then(|b| b.parse::<u32>().ok());
    if let (Some(a), Some(b)) = (said_bits, bits) {
        if a != b {
            return false;
        }
    }
    let said_unsigned = said.contains("unsigned") || said.contains("uint");
    let said_signed = said.contains("signed") && !said_unsigned;
    !(said_unsigned && !unsigned || said_signed && unsigned)
}

/// Does a code span hold code (an expression or statement) rather than a name?
fn quote_shaped(span: &str) -> bool {
    let s = span.trim();
    // Σ, ·, ≤ and the like write mathematics, which no code shown holds.
    if s.contains(['Σ', '∑', '·', '×', '≤', '≥', '√', '∈', '−']) {
        return false;
    }
    s.contains("->")
        || s.chars().any(|c| ";=[]{}+*/&|!?%^".contains(c))
        || s.find('(')
            .is_some_and(|i| !s[i + 1..].trim_start().starts_with(')'))
}

/// Does an inline code span read as code the library writes (a statement, a
/// declaration, an assignment that changes something), rather than an expression or
/// equation the answer states itself (`batch_count == 0`, `nitems = n*(n+1)/2`,
/// `grid((n-1)/64 + 1, 1, batches)` with a constant put in)? Only the former is held
/// to the slice letter for letter; the latter says a value, which the fact check and
/// the identifier check judge.
fn statement_shaped(span: &str) -> bool {
    static DECL: OnceLock<Regex> = OnceLock::new();
    let decl = DECL.get_or_init(|| {
        Regex::new(concat!(
            r"^(?:(?:if|for|while|return|switch|case|else|do|template|extern|typedef|using",
            r"|struct|class|namespace|__global__|__device__|__host__",
            r"|ROCBLAS_KERNEL\w*|ROCSOLVER_KERNEL\w*)\b|#)",
            // A declaration: a type (qualified, with template arguments, pointers), then
            // the name and what it is given; `const float* A` alone names a parameter.
            r"|^(?:(?:const|constexpr|static|volatile|auto|__shared__|extern)\s+)*",
            r"[A-Za-z_][\w:]*(?:<[^=;]*>)?[\s*&]+[*&]*[A-Za-z_]\w*\s*(?:=[^=]|\(|\[|\{)",
        ))
        .expect("static regex")
    });
    static OPERATOR: OnceLock<Regex> = OnceLock::new();
    // `incX * sizeof(float)` multiplies: an operator, not a function declared.
    let operator = OPERATOR.get_or_init(|| {
        Regex::new(r"[\s*&](?:sizeof|alignof|decltype|static_cast|reinterpret_cast|const_cast|dynamic_cast)\s*[(<]")
            .expect("static regex")
    });
    let s = span.trim();
    s.contains([';', '{', '}'])
        || [
            "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--",
        ]
        .iter()
        .any(|op| s.contains(op))
        || (decl.is_match(s) && !operator.is_match(s))
}

/// Is `span` the code shown with only its numbers changed (`alpha != 0 && tid < n` where
/// the code tests `alpha != 1 && tid < n`)? That is a misquote, whatever its shape.
fn numbers_changed(span: &str, shown_squashed: &str) -> bool {
    let squashed = squash(span);
    if !squashed.chars().any(|c| c.is_ascii_digit()) || squashed.len() < 6 {
        return false;
    }
    let mut pattern = String::new();
    let mut rest = squashed.as_str();
    while let Some(i) = rest.find(|c: char| c.is_ascii_digit()) {
        let before = &rest[..i];
        // A digit inside a name (`rocblas_sscal_2_kernel`) is the name's.
        if before.ends_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            let end = rest[i..]
                .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .map_or(rest.len(), |k| i + k);
            pattern.push_str(&regex::escape(&rest[..end]));
            rest = &rest[end..];
            continue;
        }
        pattern.push_str(&regex::escape(before));
        let end = rest[i..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(rest.len(), |k| i + k);
        pattern.push_str(r"\d+");
        rest = &rest[end..];
    }
    pattern.push_str(&regex::escape(rest));
    Regex::new(&pattern).is_ok_and(|re| re.is_match(shown_squashed))
}

/// Do the words right after a code span use it as the name of a part of the code
/// ("`else y = res_A` branch (92-93)", "the `if(alpha)` test")?
fn names_a_part(after: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^`?\s+(?:branch|branches|case|cases|path|arm|loop|test|check|clamp|guard)\b")
            .expect("static regex")
    })
    .is_match(after)
}

/// Is a span pseudo-code: a `for`, `if` or `while` whose condition is not in
/// parentheses (`for i < n-1: if(E[i] != 0) (*info)++;`)?
fn pseudo_code(span: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?:^|[;{}]\s*)(?:for|if|while)\s+[^\s(]").expect("static regex"))
        .is_match(span.trim())
}

/// Do the words just before a code span present it as the code's own text ("the line
/// reads", "is written as", "the expression")?
fn presented_as_code(before: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(?:(?:line|statement|code|condition|test|check)(?:\s+\d+)?(?:\s+(?:reads|says|is))?",
            r"|written(?:\s+as)?|spelled|literally|verbatim|quoted?(?:\s+as)?)\s*:?\s*$"
        ))
        .expect("static regex")
    });
    let tail: String = before
        .chars()
        .rev()
        .take(40)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    re.is_match(&tail)
}

/// Does the code shown hold `quote` with at most two words left out (a type, `try`,
/// `const`: `for(b_base = 0; ...)` of `for(int64_t b_base = 0; ...)`), its operators
/// and punctuation all kept? Leaving out words changes no operation; leaving out a `!`
/// or a `-` would, so symbols never count as left out.
/// Code cut into words, numbers and single symbols, whitespace dropped.
fn code_tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i].is_ascii_alphanumeric() || b[i] == b'_' {
            let j = (i..b.len())
                .find(|&j| !(b[j].is_ascii_alphanumeric() || b[j] == b'_'))
                .unwrap_or(b.len());
            out.push(&s[i..j]);
            i = j;
        } else {
            let w = s[i..].chars().next().map_or(1, char::len_utf8);
            out.push(&s[i..i + w]);
            i += w;
        }
    }
    out
}

/// Is `quote` a stretch of the code shown with values put in for some of its names,
/// each value one the answer or the code states for that name (`A[0 + lda*n] += ...`
/// of `A[tx + lda * ty] += ...` after "`ty = n` and `tx = 0`"; `col += 16` of
/// `col += DIM_Y` beside `TRMVN_DIM_Y = 16`)? Symbols and numbers are kept as written,
/// a name is replaced the same way wherever it stands, by nothing else the stretch
/// names, and most of the quote is the code's own.
fn values_put_in(shown: &str, quote: &str, stated: &str) -> bool {
    let q = code_tokens(quote);
    let code = code_tokens(shown);
    if q.len() < 3 || code.len() < 3 {
        return false;
    }
    let name = |t: &str| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    let value = |t: &str| t.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    let says = |n: &str, v: &[&str]| {
        let v: Vec<String> = v.iter().map(|t| regex::escape(t)).collect();
        Regex::new(&format!(
            r"\b(?:\w+_)?{}\s*=[^;\n`]*?(?:^|[^\w]){}(?:$|[^\w])",
            regex::escape(n),
            v.join(r"\s*")
        ))
        .is_ok_and(|re| re.is_match(stated))
    };
    // The tokens of a value put in for a name at `j`: one word or number, or a
    // parenthesised group (`(n-1)` for `i`), its parentheses left out.
    let value_at = |j: usize| -> Option<(usize, Vec<&str>)> {
        if value(q[j]) {
            return Some((j + 1, vec![q[j]]));
        }
        if q[j] != "(" {
            return None;
        }
        let mut depth = 0;
        for k in j..q.len() {
            match q[k] {
                "(" => depth += 1,
                ")" => {
                    depth -= 1;
                    if depth == 0 {
                        return (k > j + 1).then(|| (k + 1, q[j + 1..k].to_vec()));
                    }
                }
                _ => {}
            }
        }
        None
    };
    'start: for first in 0..code.len() {
        let mut put: Vec<(&str, Vec<&str>)> = Vec::new();
        let mut stand_ins: Vec<(&str, &str)> = Vec::new();
        let (mut i, mut j, mut same) = (first, 0, 0);
        while j < q.len() {
            if i >= code.len() {
                continue 'start;
            }
            if code[i] == q[j] {
                same += 1;
                i += 1;
                j += 1;
                continue;
            }
            if !name(code[i]) {
                // A name standing for the values the answer lists for it:
                // `norm2 += shift_left(norm2, d)` "with d = 1, 2, 4" of
                // `norm2 += shift_left(norm2, 1)`.
                let number = code[i].starts_with(|c: char| c.is_ascii_digit());
                if number && name(q[j]) && says(q[j], &[code[i]]) {
                    match stand_ins.iter().find(|(n, _)| *n == q[j]) {
                        Some((_, v)) if *v != code[i] => continue 'start,
                        Some(_) => {}
                        None => stand_ins.push((q[j], code[i])),
                    }
                    i += 1;
                    j += 1;
                    continue;
                }
                continue 'start;
            }
            let Some((next, v)) = value_at(j) else {
                continue 'start;
            };
            match put.iter().find(|(n, _)| *n == code[i]) {
                Some((_, w)) if *w != v => continue 'start,
                Some(_) => {}
                None => put.push((code[i], v)),
            }
            i += 1;
            j = next;
        }
        let window = &code[first..i];
        let fresh = put
            .iter()
            .all(|(_, v)| v.len() > 1 || !window.contains(&v[0]));
        let window_names = |n: &str| window.contains(&n);
        let stand_ins_fresh = stand_ins.iter().all(|(n, _)| !window_names(n));
        if (!put.is_empty() || !stand_ins.is_empty())
            && fresh
            && stand_ins_fresh
            && 2 * same >= q.len()
            && put.iter().all(|(n, v)| says(n, v))
        {
            return true;
        }
    }
    false
}

fn words_left_out(shown: &str, quote: &str) -> bool {
    let tokens = code_tokens;
    fn held(code: &[&str], q: &[&str]) -> bool {
        let word = |t: &str| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        // Specifiers (`__device__`, `inline`) say how code is compiled, not what it
        // does: a quote may leave any number of them out.
        let specifier = |t: &str| {
            (t.len() > 4 && t.starts_with("__") && t.ends_with("__"))
                || ["inline", "static", "constexpr", "ROCBLAS_KERNEL_ILF"].contains(&t)
        };
        'start: for first in (0..code.len()).filter(|&i| code[i] == q[0]) {
            let (mut i, mut skipped) = (first, 0);
            for t in q {
                while i < code.len() && code[i] != *t {
                    if specifier(code[i]) {
                        i += 1;
                        continue;
                    }
                    if !word(code[i]) || skipped == 2 {
                        continue 'start;
                    }
                    skipped += 1;
                    i += 1;
                }
                if i == code.len() {
                    continue 'start;
                }
                i += 1;
            }
            return true;
        }
        false
    }
    // An ellipsis cuts the quote into parts, each held on its own.
    let parts: Vec<Vec<&str>> = quote
        .split("...")
        .flat_map(|p| p.split('\u{2026}'))
        .map(tokens)
        .filter(|t| !t.is_empty())
        .collect();
    let total: usize = parts.iter().map(Vec::len).sum();
    let code = tokens(shown);
    total >= 4 && parts.iter().all(|p| held(&code, p))
}

/// The text without parentheses and braces: a macro's `((DIM_X))` quoted as `(DIM_X)`,
/// or `if(c) { return s; }` quoted as `if(c) return s;`, is the same code.
/// Code with a cast to a scalar type that converts a whole assigned value dropped
/// (`= int32_t(std::min(a, b))` as `= (std::min(a, b))`). A cast inside the
/// expression stays: `x[tid * int64_t(incx)]` indexes in 64 bits, and a quote without
/// it misquotes the code.
fn without_casts(s: &str) -> std::borrow::Cow<'_, str> {
    static CAST: OnceLock<Regex> = OnceLock::new();
    CAST.get_or_init(|| {
        Regex::new(r"(^|[^=!<>]=)\s*(?:static_cast\s*<[^<>]*>|\b(?:u?int(?:8|16|32|64)_t|size_t|rocblas_int|rocblas_stride|int|long|unsigned|float|double))\s*\(")
            .expect("static regex")
    })
    .replace_all(s, "${1}(")
}

fn without_parens(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '(' | ')' | '{' | '}'))
        .collect()
}

/// Code the answer quotes as the library's (code spans holding an expression or
/// statement, fenced blocks not presented as an illustration), or a web address, that
/// the code shown does not hold, compared whole (whitespace aside; an ellipsis splits a quote into
/// parts, each compared whole). Returns the first such quote, shortened.
pub fn foreign_quote(
    answer: &str,
    question: &str,
    own_code: Option<&str>,
    shown: &str,
    shown_squashed: &str,
    sources: &dyn Fn() -> String,
) -> Option<String> {
    static URL: OnceLock<Regex> = OnceLock::new();
    let url = URL.get_or_init(|| Regex::new(r#"\bhttps?://[^\s)<>\]`'"]+"#).expect("static regex"));
    // A web address is a quote too: one the code shown does not hold is the model's
    // memory, unchecked.
    let (_, prose) = split_fences(answer);
    if let Some(m) = url
        .find_iter(&prose)
        .find(|m| !shown.contains(m.as_str().trim_end_matches(['.', ',', ';', ':'])))
    {
        return Some(format!("a web address: {}", m.as_str()));
    }
    let (fences, prose) = split_fences(answer);
    let prose = without_commands(&prose);
    // Each quote, and whether it is a span of prose (a fence is held to the slice).
    let mut quotes: Vec<(String, bool)> = fences
        .iter()
        .filter(|f| !f.illustration)
        .map(|f| (line_number_re().replace_all(f.body, "").into_owned(), false))
        .collect();
    quotes.extend(
        backtick_re()
            .captures_iter(&prose)
            .filter_map(|c| c.get(1))
            .filter(|m| quote_shaped(m.as_str()))
            .filter(|m| !speaks_of_own_code(sentence_around(&prose, m.start(), m.end())))
            .filter(|m| {
                // "the `else y = res_A` branch" names a branch; `for i < n-1: ...` is
                // pseudo-code. Neither is the code's text, unless presented as such.
                let named_or_sketched = names_a_part(&prose[m.end()..]) || pseudo_code(m.as_str());
                (statement_shaped(m.as_str()) && !named_or_sketched)
                    || presented_as_code(&prose[..m.start() - 1])
                    || numbers_changed(m.as_str(), shown_squashed)
            })
            .map(|m| (m.as_str().to_string(), true)),
    );
    // An answer that says it reads code the slice leaves out may quote it: such quotes
    // are held to the whole files the slice shows pieces of.
    let reads_outside = said_outside_re().is_match(&prose);
    // Code the answer writes itself and then speaks of is its own, not the library's.
    let own = own_code.map(squash).unwrap_or_default();
    let whole = OnceLock::new();
    let in_sources = |q: &str| {
        let (text, squashed) = whole.get_or_init(|| {
            let text = sources();
            let squashed = squash(&text);
            (text, squashed)
        });
        holds_quote(squashed, q)
            || holds_quote(&without_parens(squashed), &without_parens(q))
            || words_left_out(text, q)
    };
    // What the question itself writes (its premise's condition) is no claim on the
    // library's text.
    let asked = squash(question);
    // `isfinite` for `std::isfinite`, `(akk > 0) && (std::isfinite(akk))`.
    // `min(a, b)` for `int32_t(std::min(a, b))`: a cast to a scalar type is left out
    // of a quote that keeps the expression.
    let bare = |t: &str| without_parens(&without_casts(&t.replace("std::", "")));
    let shown_bare = bare(shown_squashed);
    // Consecutive statements quoted together (`T one = 1; T minone = -1;`) with a
    // comment or a line between them in the code: each statement is held on its own.
    let each_statement = |q: &str| {
        let parts: Vec<&str> = q
            .split_inclusive(';')
            .map(str::trim)
            .filter(|p| p.len() > 1)
            .collect();
        parts.len() >= 2 && parts.iter().all(|p| holds_quote(shown_squashed, p))
    };
    quotes.into_iter().find_map(|(q, prose_span)| {
        let held = (reads_outside && prose_span && in_sources(&q))
            || holds_quote(shown_squashed, &q)
            || (prose_span && holds_quote(&asked, &q))
            || holds_quote(&shown_bare, &bare(&q))
            || each_statement(&q)
            || (!own.is_empty() && holds_quote(&own, &q))
            || holds_quote(&without_parens(shown_squashed), &without_parens(&q))
            || words_left_out(shown, &q)
            || values_put_in(
                shown,
                &q,
                &format!("{prose}\n{}\n{shown}", own_code.unwrap_or("")),
            );
        (!held).then(|| {
            q.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(120)
                .collect()
        })
    })
}

/// Signs of a value missing from a sentence, in prose: a word that wants a value
/// followed straight by punctuation (`calls abs of , defined at :`) or by a run of
/// spaces (`returns  if  (`), or an empty inline code span.
fn empty_slot_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        const WANTS: &str = r"(?:of|at|in|into|to|from|by|with|for|on|is|are|was|returns?|calls?|launch(?:es)?|stores?|uses?|the|an?|and|or|if|when)";
        Regex::new(&format!(
            r"(?i)\b{WANTS}[ \t]+[,;:.)](?:[ \t\n]|$)|\b{WANTS}[ \t]{{2,}}[^\s|]|\s``[\s,.;:)]"
        ))
        .expect("static regex")
    })
}

/// The first place where the answer's prose has a hole a value should fill, shown
/// with its surroundings. Code (fenced or inline) is not read.
pub fn empty_slot(answer: &str) -> Option<String> {
    let (_, prose) = split_fences(answer);
    let prose = backtick_re().replace_all(&prose, "`x`");
    let m = empty_slot_re().find(&prose)?;
    let from = prose[..m.start()]
        .char_indices()
        .rev()
        .nth(40)
        .map_or(0, |(i, _)| i);
    let to = prose[m.end()..]
        .char_indices()
        .nth(20)
        .map_or(prose.len(), |(i, _)| m.end() + i);
    // Spaces kept as they are: a run of them may be the hole.
    Some(prose[from..to].replace('\n', " "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slice::squash;

    #[test]
    fn quotes_of_the_question_of_statements_apart_and_without_std_are_held() {
        let slice = "1116 |     T one = 1; // constant 1 in host\n1117 |     T minone = -1; // constant -1 in host\n131 |             bool const isok = (akk > 0) && (std::isfinite(akk));";
        let none = || String::new();
        for (answer, question) in [
            (
                "The scalars `T one = 1; T minone = -1;` (1116-1117) become complex.",
                "",
            ),
            (
                "A pivot is accepted when `akk > 0 && isfinite(akk)` holds.",
                "",
            ),
            (
                "The premise `not (blk == 0) && !notrans` is the else-branch.",
                "reaches the launch only when `not (blk == 0) && !notrans` holds",
            ),
        ] {
            assert_eq!(
                foreign_quote(answer, question, None, slice, &squash(slice), &none),
                None,
                "{answer}"
            );
        }
        // A cast to a scalar type left out of a quote that keeps the expression.
        let chunk = "57 |         int32_t batch_count = int32_t(std::min(batch_count_64 - b_base, c_i64_grid_YZ_chunk));";
        assert_eq!(
            foreign_quote(
                "Each chunk gets `int32_t batch_count = min(batch_count_64 - b_base, c_i64_grid_YZ_chunk)`.",
                "",
                None,
                chunk,
                &squash(chunk),
                &none
            ),
            None
        );
        // A cast inside the expression is part of what the code says.
        let scal = "51 |             Tex res                = (Tex)x[tid * int64_t(incx)] * alpha;";
        assert!(foreign_quote(
            "The product is formed as `Tex res = (Tex)x[tid * incx] * alpha;`.",
            "",
            None,
            scal,
            &squash(scal),
            &none
        )
        .is_some());
        assert!(foreign_quote(
            "Each chunk gets `int32_t batch_count = max(batch_count_64 - b_base, c_i64_grid_YZ_chunk)`.",
            "",
            None,
            chunk,
            &squash(chunk),
            &none
        )
        .is_some());
        // Statements the code does not hold are still caught.
        assert!(foreign_quote(
            "It sets `T one = 1; T two = 2;` first.",
            "",
            None,
            slice,
            &squash(slice),
            &none
        )
        .is_some());
    }

    #[test]
    fn isa_instructions_and_leading_underscores_are_no_invented_names() {
        for w in [
            "v_pk_fma_f32",
            "v_fma_f32",
            "s_waitcnt",
            "ds_read_b128",
            "global_load_dwordx4",
            "s_load_dwordx4",
        ] {
            assert!(isa_mnemonic(w), "{w}");
        }
        for w in ["s_stride", "v_ptr", "global_state", "rocblas_v_f32x"] {
            assert!(!isa_mnemonic(w), "{w}");
        }
    }

    #[test]
    fn empty_slots_are_found_in_prose_only() {
        for hole in [
            "bdsqr_init calls abs of , defined at : (library/src/auxiliary/rocauxiliary_bdsqr.hpp:402).",
            "- rocblas_iamax_iamin_arg_check returns  if  (library/src/blas1/rocblas_iamax_iamin.hpp:122).",
            "The kernel is launched with a block of  threads.",
            "It stores the result in `` before returning.",
            "The kernel is defined in .",
        ] {
            assert!(empty_slot(hole).is_some(), "{hole}");
        }
        for fine in [
            "rocblas_sscal returns rocblas_status_success if n <= 0 (library/src/blas1/rocblas_scal.hpp:61).",
            "The ternary `lda < (trans == none ? m : n)` picks the leading dimension.",
            "Each block has 256 threads.  The next sentence starts after two spaces.",
            "It is a two-step reduction: first per block, then across blocks.",
            "```cpp\nif (n <= 0)  return ;\nx = f(a , b);\n```\nThe guard returns early.",
            "| kernel | block |\n|---|---|\n| scal_kernel | 256 |",
        ] {
            assert_eq!(empty_slot(fine), None, "{fine}");
        }
    }

    fn known() -> KnownNames {
        KnownNames {
            names: [
                "rocblas_scal_kernel",
                "rocblas_internal_scal_launcher",
                "ROCBLAS_LAUNCH_KERNEL",
                "rocblas_double_complex",
                "__syncthreads",
                "hipLaunchKernelGGL",
                "threadIdx",
                "blockIdx",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            defined: [
                "rocblas_scal_kernel",
                "rocblas_internal_scal_launcher",
                "rocblas_internal_gemv_launcher",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            prefixes: vec!["rocblas_".into()],
            files: {
                let mut files = HashSet::new();
                add_file(&mut files, "library/src/blas1/rocblas_scal_kernels.hpp");
                files
            },
            paths: vec![(
                "rocblas".into(),
                "library/src/blas1/rocblas_scal_kernels.hpp".into(),
            )],
            defined_in: [
                ("rocblas", &["rocblas_scal_kernel", "rocblas_sscal"][..]),
                ("rocsolver", &["rocsolver_sgetrf", "rocblasCall_gemm"][..]),
            ]
            .into_iter()
            .map(|(l, ns)| (l.to_string(), ns.iter().map(|n| n.to_string()).collect()))
            .collect(),
            tails: OnceLock::new(),
            by_leaf: OnceLock::new(),
        }
    }

    #[test]
    fn a_variable_said_to_have_another_type_than_declared_is_found() {
        let kernel = "    uint32_t tid   = blockIdx.x * DIM_X + threadIdx.x;\n    int64_t  off = tid * int64_t(incx);\n    double acc = 0;\n";
        let shown = [ShownPiece {
            file: "a.hpp",
            name: "scal_kernel",
            start: 1,
            end: 3,
            text: kernel,
            expansion: None,
        }];
        for wrong in [
            "In scal_kernel `tid` is a 64-bit int.",
            "off is declared as a 32-bit integer, so large strides overflow.",
            "The kernel keeps acc as a float.",
            "tid is a signed int.",
            "The kernel declares its thread index as a 64-bit int.",
        ] {
            assert!(declared_type_mismatch(wrong, &shown).is_some(), "{wrong}");
        }
        for right in [
            "tid is a 32-bit unsigned int and off is an int64_t.",
            "acc is a double; n is a 64-bit int (n is not declared here).",
            "tid may be a 64-bit int on other paths.",
            "The global thread index is a 32-bit unsigned int.",
        ] {
            assert_eq!(declared_type_mismatch(right, &shown), None, "{right}");
        }
    }

    #[test]
    fn a_name_is_checked_in_the_library_it_is_claimed_for() {
        let k = known();
        let judge = |a: &str| library_claim(a, "rocblas", "6.4.4", &k);
        for wrong in [
            "The rocSOLVER kernel `rocblas_scal_kernel` gives each thread one element.",
            "rocblas_scal_kernel from rocSOLVER scales x.",
            "rocBLAS's helper rocblasCall_gemm dispatches the product.",
        ] {
            assert!(
                matches!(judge(wrong), Some(LibraryClaim::Name(_))),
                "{wrong}"
            );
        }
        assert!(matches!(
            judge("In rocBLAS 5.5.1 the kernel took its batch from blockIdx.y."),
            Some(LibraryClaim::Version(_))
        ));
        for right in [
            "The rocBLAS kernel rocblas_scal_kernel gives each thread one element.",
            "rocsolver_sgetrf calls rocblasCall_gemm from rocSOLVER's own wrappers.",
            "rocsolver_sgetrf uses rocblas_scal_kernel from rocBLAS.",
            "In rocBLAS 6.4.4 (and rocBLAS 6.4) the batch comes from blockIdx.z.",
            // A library this run has not read is not judged.
            "The hipBLAS function rocblas_scal_kernel is a wrapper.",
        ] {
            assert_eq!(judge(right), None, "{right}");
        }
    }

    #[test]
    fn identifiers_are_what_the_word_regex_matches() {
        let re = Regex::new(r"\b[A-Za-z_][A-Za-z0-9_]*\b").unwrap();
        for text in [
            "x[tid] = alpha * x[tid];",
            "ROCBLAS_LAUNCH_KERNEL((rocblas_scal_kernel<API_INT, NB, T>), grid)",
            "_ __a 9abc a9 0x1F 1e-5 _9 a_b_c",
            "café x éa aé naïve_x x_é — dash—word ümlaut ok",
            "`hipLaunchKernelGGL` at rocblas_scal.hpp:92-110.",
            "",
            "é",
            "tail_",
        ] {
            let want: Vec<&str> = re.find_iter(text).map(|m| m.as_str()).collect();
            assert_eq!(identifiers(text).collect::<Vec<_>>(), want, "{text}");
        }
    }

    #[test]
    fn an_answer_names_something_of_the_code_shown() {
        assert!(!names_something_shown(
            "The kernel splits the work evenly among the threads and writes the results back to memory.",
            &NameSet::of(SLICE)
        ));
        assert!(names_something_shown(
            "Each thread scales `x[tid]` by alpha.",
            &NameSet::of(SLICE)
        ));
        assert!(names_something_shown(
            "rocblas_internal_scal_launcher picks the grid.",
            &NameSet::of(SLICE)
        ));
        assert!(names_something_shown(
            "The grid follows from NB.",
            &NameSet::of("dim3 grid(NB);")
        ));
        // A parameter named in plain prose is a name of the code.
        assert!(names_something_shown(
            "Each element is multiplied by alpha, one per thread.",
            &NameSet::of(SLICE)
        ));
    }

    #[test]
    fn library_names_must_be_in_the_slice_or_on_the_path() {
        let k = known();
        let outside = "For long vectors the launcher defers to `rocblas_internal_gemv_launcher`.";
        assert_eq!(
            names_outside_slice(outside, &NameSet::of(SLICE), "", &[], &k),
            ["rocblas_internal_gemv_launcher"]
        );
        // On the entry's call path, or named by the question: about this entry.
        assert!(names_outside_slice(
            outside,
            &NameSet::of(SLICE),
            "",
            &["rocblas_internal_gemv_launcher"],
            &k
        )
        .is_empty());
        assert!(names_outside_slice(
            outside,
            &NameSet::of(SLICE),
            "Compare with rocblas_internal_gemv_launcher.",
            &[],
            &k
        )
        .is_empty());
        // Names of the slice, and names that are no definition of the library, pass here.
        let inside = "rocblas_internal_scal_launcher launches `rocblas_scal_kernel` with `hipLaunchKernelGGL`.";
        assert!(names_outside_slice(inside, &NameSet::of(SLICE), "", &[], &k).is_empty());
    }

    const SLICE: &str = "rocblas_internal_scal_launcher(rocblas_handle handle, API_INT n)\n    ROCBLAS_LAUNCH_KERNEL((rocblas_scal_kernel<API_INT, NB, T>), grid, threads, 0, stream, n);\n    x[tid] = alpha * x[tid];\n";

    #[test]
    fn names_are_checked_against_real_sets_not_shapes() {
        let ok = "The launcher `rocblas_internal_scal_launcher` in rocblas_scal_kernels.hpp launches rocblas_scal_kernel via ROCBLAS_LAUNCH_KERNEL using `__syncthreads` and hipLaunchKernelGGL, with `API_INT` n, for rocblas_double_complex too.";
        assert_eq!(
            unknown_identifiers(ok, &NameSet::of(SLICE), "", &known()),
            Vec::<String>::new()
        );
        let bad = "It then calls rocblas_scal_fast_kernel, getf2_panel_kernel_small, __shfl_xor_sync_amd and `rocblas_magic_helper` before `DO_SCALE_FAST`.";
        assert_eq!(
            unknown_identifiers(bad, &NameSet::of(SLICE), "", &known()),
            [
                "DO_SCALE_FAST",
                "__shfl_xor_sync_amd",
                "getf2_panel_kernel_small",
                "rocblas_magic_helper",
                "rocblas_scal_fast_kernel"
            ]
        );
        // A name the answer's own code declares is the code's.
        assert!(unknown_identifiers(
            "`my_scale` does it",
            &NameSet::of(SLICE),
            "void my_scale()",
            &known()
        )
        .is_empty());
    }

    #[test]
    fn files_and_ranges_must_exist() {
        assert!(unknown_files("See rocblas_scal_kernels.hpp:26-58.", &known()).is_empty());
        assert_eq!(
            unknown_files("See rocblas_scal_fast.hpp.", &known()),
            ["rocblas_scal_fast.hpp"]
        );
        // A mention may give part of the path, from a `/` on; a wrong part is no file.
        assert!(unknown_files("See src/blas1/rocblas_scal_kernels.hpp.", &known()).is_empty());
        assert!(unknown_files("See ./blas1/rocblas_scal_kernels.hpp.", &known()).is_empty());
        assert_eq!(
            unknown_files("See blas2/rocblas_scal_kernels.hpp.", &known()),
            ["blas2/rocblas_scal_kernels.hpp"]
        );
        assert_eq!(
            unknown_files("See las1/rocblas_scal_kernels.hpp.", &known()),
            ["las1/rocblas_scal_kernels.hpp"]
        );
        let shown = [("library/src/blas1/rocblas_scal_kernels.hpp", 26, 58)];
        assert_eq!(
            range_outside_shown(
                "rocblas_scal_kernels.hpp:26-58 and line 40",
                &shown,
                &|_, _, _| false
            ),
            None
        );
        assert!(
            range_outside_shown("rocblas_scal_kernels.hpp:20-30", &shown, &|_, _, _| false)
                .is_some()
        );
        assert!(range_outside_shown("lines 50 to 70", &shown, &|_, _, _| false).is_some());
        // A file name shortened at an underscore names the file; a range the answer
        // itself says is not shown is not held to the slice.
        assert_eq!(
            range_outside_shown("See kernels.hpp:30-40.", &shown, &|_, _, _| false),
            None
        );
        assert_eq!(
            unknown_files("See kernels.hpp and scal_kernels.hpp.", &known()),
            Vec::<String>::new()
        );
        assert_eq!(
            range_outside_shown(
                "The 64-bit split is in lines 127-225, which are not shown.",
                &shown,
                &|_, _, _| false
            ),
            None
        );
        assert_eq!(
            range_outside_shown(
                "The limit is 1 << 16 (utility.hpp:34 in the sources).",
                &shown,
                &|_, _, _| false
            ),
            None
        );
        assert!(range_outside_shown("See kernels.hpp:300.", &shown, &|_, _, _| false).is_some());
    }

    #[test]
    fn a_file_is_named_by_its_path_its_tail_or_its_shortened_name() {
        let mut k = known();
        k.paths = vec![
            (
                "rocblas".into(),
                "library/include/internal/rocblas-complex-types.h".into(),
            ),
            (
                "rocblas".into(),
                "library/src64/blas2/rocblas_tbsv_64.cpp".into(),
            ),
            (
                "rocblas".into(),
                "library/src/blas2/rocblas_tbsv.cpp".into(),
            ),
        ];
        for (mention, want) in [
            (
                "complex-types.h",
                "library/include/internal/rocblas-complex-types.h",
            ),
            (
                "src64/.../rocblas_tbsv_64.cpp",
                "library/src64/blas2/rocblas_tbsv_64.cpp",
            ),
            (
                "blas2/rocblas_tbsv.cpp",
                "library/src/blas2/rocblas_tbsv.cpp",
            ),
        ] {
            assert_eq!(k.files_named("rocblas", mention), [want], "{mention}");
        }
        assert!(k.files_named("rocsolver", "complex-types.h").is_empty());
        assert!(k.files_named("rocblas", "rocblas_tbsv_32.cpp").is_empty());
        // The HIP headers are files too.
        if Path::new("/usr/include/hip/hip_runtime.h").is_file() {
            assert!(k.has_file("hip/hip_runtime.h"));
        }
    }

    #[test]
    fn lines_the_slice_leaves_out_are_read_in_the_pinned_file() {
        let shown = [(
            "library/src/blas2/rocblas_hemv_symv_kernels.cpp",
            3569,
            3587,
        )];
        let in_tree = |f: &str, a: u32, b: u32| f.ends_with("kernels.cpp") && a >= 1 && b <= 3900;
        for ok in [
            "The grid is set at rocblas_hemv_symv_kernels.cpp:3179, outside the lines shown.",
            "After the launch at rocblas_hemv_symv_kernels.cpp:3570, `shifty` comes from line 3161.",
        ] {
            assert_eq!(range_outside_shown(ok, &shown, &in_tree), None, "{ok}");
        }
        // Past the file's end, or a line of no file named before it.
        assert!(
            range_outside_shown("See rocblas_hemv_symv_kernels.cpp:5000.", &shown, &in_tree)
                .is_some()
        );
        assert!(range_outside_shown("The grid is set at line 3161.", &shown, &in_tree).is_some());
        let ranges = ranges_in_prose("At utility.hpp:149-154 and source line 3568.");
        assert_eq!(
            ranges,
            [
                (Some("utility.hpp".to_string()), 149, 154),
                (None, 3568, 3568)
            ]
        );
    }

    #[test]
    fn shortened_names_notation_and_hardware_are_no_inventions() {
        let slice = "rocsolver_getrs_argCheck(n, batch_count); rocblas_syr_kernel_inc1<<<g, t>>>(); rocblas_dot_save_sum(x); rocblas_gemvn_sm_mn_batched_kernel<<<g, t>>>();";
        let shown = NameSet::of(slice);
        for ok in [
            "`argCheck` rejects a negative batch_count.",
            "The `inc1` kernel handles unit stride; `save_sum` writes the result.",
            "With `l_k` the k-th column of L, the update is a rank-one step.",
            "Watch `VALUBusy`, `FETCH_SIZE` and `s_barrier` stalls in the profile.",
            // A kernel named without its `_kernel`; a pattern over names.
            "On gfx90a the gemvn_sm_mn_batched kernel runs, tuned by the *_threshold constants.",
            "The `rocblas_syr_*` kernels are stamped per type.",
        ] {
            assert_eq!(
                unknown_identifiers(ok, &shown, "", &known()),
                Vec::<String>::new(),
                "{ok}"
            );
        }
        // A tail at an underscore of a name of the library (two words at least).
        assert!(known().contains_shortened("internal_scal_launcher"));
        assert!(!known().contains_shortened("launcher"));
        // An invented name stays invented.
        assert_eq!(
            unknown_identifiers("`fast_argCheck` runs first.", &shown, "", &known()),
            ["fast_argCheck"]
        );
    }

    #[test]
    fn sentences_about_the_answers_own_code_are_not_claims() {
        for own in [
            "My version threads over the rows with threadIdx.x where the library uses hipThreadIdx_y.",
            "In the test program each block handles one matrix.",
            "Unlike the library, the rewritten kernel keeps x in LDS.",
        ] {
            assert!(speaks_of_own_code(own), "{own}");
        }
        for claim in [
            "rocblas_scal_kernel reads threadIdx.x for the element.",
            "The launcher uses 256 threads per block.",
        ] {
            assert!(!speaks_of_own_code(claim), "{claim}");
        }
    }

    #[test]
    fn a_line_range_must_hold_what_its_sentence_cites_it_for() {
        let file = "library/src/blas1/rocblas_scal_kernels.hpp";
        let launcher: String = (182..=260)
            .map(|i| match i {
                182 => "rocblas_status rocblas_internal_scal_launcher(rocblas_int n)".into(),
                195 => "    if(n <= 0 || incx <= 0 || batch_count <= 0)".into(),
                197 => "        return rocblas_status_success;".into(),
                250 => "        dim3 grid(blocks, 1, batches);".into(),
                _ => format!("// {i}"),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let kernel = "ROCBLAS_KERNEL(DIM_X)\nrocblas_sscal_2_kernel(rocblas_int n)\n{\n}";
        let shown = [
            ShownPiece {
                file,
                name: "rocblas_internal_scal_launcher",
                start: 182,
                end: 260,
                text: &launcher,
                expansion: None,
            },
            ShownPiece {
                file,
                name: "rocblas_sscal_2_kernel",
                start: 64,
                end: 67,
                text: kernel,
                expansion: None,
            },
        ];
        // Pointing at the quick return for a launch.
        let wrong = "`rocblas_sscal_2_kernel` is launched at rocblas_scal_kernels.hpp:195, right after the checks.";
        assert!(range_elsewhere(wrong, &shown, &[])
            .is_some_and(|r| r.contains("rocblas_scal_kernels.hpp:195")
                && r.contains("rocblas_sscal_2_kernel")));
        // A line of the right function that does not do what the sentence says.
        let wrong =
            "`rocblas_internal_scal_launcher` (rocblas_scal_kernels.hpp:250) returns early.";
        assert!(range_elsewhere(wrong, &shown, &[]).is_some(), "{wrong}");
        // The same range for what it holds, by a name on its lines or by the function
        // it is in; a range with no name around it; `e.g.` does not end the sentence.
        for right in [
            "The launcher returns `rocblas_status_success` when `batch_count <= 0` (rocblas_scal_kernels.hpp:195-197).",
            "`rocblas_internal_scal_launcher` (rocblas_scal_kernels.hpp:195) returns early.",
            "The quick return (rocblas_scal_kernels.hpp:195) avoids any launch.",
            "The checks come first, e.g. `incx <= 0` at rocblas_scal_kernels.hpp:195.",
            "`rocblas_sscal_2_kernel` (rocblas_scal_kernels.hpp:64-67) takes `n`.",
            "`rocblas_internal_scal_launcher` (rocblas_scal_kernels.hpp:250) sets up the grid.",
            "`rocblas_internal_scal_launcher` (rocblas_scal_kernels.hpp:182) is the launcher.",
        ] {
            assert_eq!(range_elsewhere(right, &shown, &[]), None, "{right}");
        }
    }

    #[test]
    fn a_range_after_the_name_its_lines_define_holds_it() {
        let file = "library/src/include/lib_device_helpers.hpp";
        let swap = "template <typename T>\n__device__ __forceinline__ void swap(T& a, T& b)\n{\n    T orig = a;\n    a = b;\n    b = orig;\n}";
        let shown = [ShownPiece {
            file,
            name: "swap",
            start: 62,
            end: 68,
            text: swap,
            expansion: None,
        }];
        let right = "If `exch != i`, it exchanges `A[(i - 1) * inca + tid * lda]` and `A[(exch - 1) * inca + tid * lda]`, using swap (lib_device_helpers.hpp:62-68).";
        assert_eq!(range_elsewhere(right, &shown, &[]), None);
        let wrong = "If `exch != i`, it exchanges `A[(i - 1) * inca + tid * lda]` and `A[(exch - 1) * inca + tid * lda]`, using shuffle (lib_device_helpers.hpp:62-68).";
        assert!(range_elsewhere(wrong, &shown, &[]).is_some(), "{wrong}");
    }

    #[test]
    fn a_line_invoking_the_macro_a_sentence_names_holds_the_launch_through_it() {
        let file = "library/src/specialized/roclapack_trsm_specialized_kernels.hpp";
        let site = "                FORWARD_SUBSTITUTIONS;";
        let def = "#define FORWARD_SUBSTITUTIONS \\\n    if(isunit) \\\n        ROCSOLVER_LAUNCH_KERNEL(unit_forward_substitution_kernel<T>, grid, threads, lmemsize, stream)";
        let shown = [
            ShownPiece {
                file,
                name: "rocsolver_trsm_lower",
                start: 926,
                end: 926,
                text: site,
                expansion: None,
            },
            ShownPiece {
                file,
                name: "FORWARD_SUBSTITUTIONS",
                start: 120,
                end: 122,
                text: def,
                expansion: None,
            },
        ];
        let right = "`rocsolver_trsm_upper` launches `unit_forward_substitution_kernel` (roclapack_trsm_specialized_kernels.hpp:926) through `FORWARD_SUBSTITUTIONS` (roclapack_trsm_specialized_kernels.hpp:120-122).";
        assert_eq!(range_elsewhere(right, &shown, &[]), None);
        // The line does not invoke the macro the sentence names.
        let wrong = "`rocsolver_trsm_upper` launches `unit_forward_substitution_kernel` (roclapack_trsm_specialized_kernels.hpp:926) through `BACKWARD_SUBSTITUTIONS` (roclapack_trsm_specialized_kernels.hpp:120-122).";
        assert!(range_elsewhere(wrong, &shown, &[]).is_some(), "{wrong}");
    }

    #[test]
    fn a_line_range_is_read_with_its_branch_its_api_and_what_it_is_compared_with() {
        let launcher = [
            "    if(rocblas_pointer_mode_device == handle->pointer_mode)",
            "    {",
            "        if(uplo == rocblas_fill_upper)",
            "        {",
            "            if(incx == 1)",
            "                ROCBLAS_LAUNCH_KERNEL((rocblas_syr_kernel_inc1<true, SYR_DIM_X, T>),",
            "                                      syr_grid,",
            "                                      syr_threads,",
            "                                      0,",
            "                                      rocblas_stream,",
            "                                      n);",
            "        }",
            "    }",
        ]
        .join("\n");
        let entry = "    return rocblas_syr_template(handle, uplo, n, batch_count);";
        let imp = "rocblas_status rocblas_syr_impl(rocblas_handle handle)\n{\n    return rocblas_status_success;\n}";
        let template = "rocblas_status rocblas_syr_template(rocblas_int n)\n{\n    if(n <= SYR_SMALL)\n        return syr_run_small(n);\n    return rocblas_status_success;\n}";
        let file = "library/src/blas2/rocblas_syr_kernels.cpp";
        let shown = [
            ShownPiece {
                file,
                name: "rocblas_internal_syr_launcher",
                start: 196,
                end: 208,
                text: &launcher,
                expansion: None,
            },
            ShownPiece {
                file: "library/src/blas2/rocblas_syr_batched.cpp",
                name: "rocblas_syr_batched_impl",
                start: 80,
                end: 80,
                text: entry,
                expansion: None,
            },
            ShownPiece {
                file: "library/src/blas2/rocblas_syr.cpp",
                name: "rocblas_syr_impl",
                start: 40,
                end: 43,
                text: imp,
                expansion: None,
            },
            ShownPiece {
                file: "library/src/blas2/rocblas_syr.hpp",
                name: "rocblas_syr_template",
                start: 10,
                end: 15,
                text: template,
                expansion: None,
            },
        ];
        let about = ["rocblas_ssyr_batched".to_string()];
        for right in [
            // The branch test the cited launch sits in, braces or none.
            "The launch at rocblas_syr_kernels.cpp:203 is the one for `uplo == rocblas_fill_upper` and `incx == 1`.",
            "In device pointer mode the kernel runs as `rocblas_syr_kernel_inc1` (rocblas_syr_kernels.cpp:201-203) for `rocblas_pointer_mode_device`.",
            // The API is what the line is cited for, not what it holds.
            "For rocblas_ssyr_batched the grid is `syr_grid` (rocblas_syr_kernels.cpp:202).",
            // A line inside a launch names its kernel through the launch's head.
            "`rocblas_syr_kernel_inc1` takes `n` last (rocblas_syr_kernels.cpp:205-206).",
            // What a range is compared with is cited for lacking it.
            "The trace adds `--batch_count` (rocblas_syr_batched.cpp:80 vs rocblas_syr.cpp:42).",
            // A hop on the path cited beside the line that holds the name.
            "For small `n` it reaches `syr_run_small` (rocblas_syr_batched.cpp:80; rocblas_syr.hpp:12-13).",
        ] {
            assert_eq!(range_elsewhere(right, &shown, &about), None, "{right}");
        }
        for wrong in [
            // A launch cited for a test it does not sit in.
            "The launch for `rocblas_pointer_mode_host` is at rocblas_syr_kernels.cpp:203.",
            // An argument two lines past the range cited for it.
            "The launch passes `rocblas_stream` (rocblas_syr_kernels.cpp:202-203).",
            // The same lines, cited on their own, for a name they lack.
            "For small `n` it reaches `syr_run_small` (rocblas_syr_batched.cpp:80).",
            // A parenthesis whose other range is not the called function's.
            "For small `n` it reaches `syr_run_small` (rocblas_syr_batched.cpp:80; rocblas_syr.cpp:42).",
        ] {
            assert!(range_elsewhere(wrong, &shown, &about).is_some(), "{wrong}");
        }
    }

    #[test]
    fn ranges_are_read_with_their_own_sentence_citation_group_and_expansion() {
        let entry = "INST_NRM2_C_API(rocblas_int);";
        let imp = [
            "    return rocblas_internal_asum_nrm2_launcher<API_INT, NB,",
            "                                               rocblas_fetch_nrm2<To>,",
            "                                               rocblas_finalize_nrm2>(",
            "        handle, n, x, shiftx_0, incx, stridex_0, batch_count_1, (To*)w_mem, result);",
        ]
        .join("\n");
        let kernel = [
            "    int64_t tid = blockIdx.x * NB + threadIdx.x;",
            "    To sum;",
            "    if(tid < n)",
            "        sum = FETCH{}(x[tid * incx]);",
            "    if(threadIdx.x == 0)",
            "        workspace[batch * gridDim.x + blockIdx.x] = sum;",
        ]
        .join("\n");
        let launcher = [
            "    if(pointer_mode == rocblas_pointer_mode_device)",
            "        ROCBLAS_LAUNCH_KERNEL((rocblas_syr2_kernel<DIM_X>),",
            "                              grid,",
            "                              threads,",
            "                              0,",
            "                              stream,",
            "                              uplo == rocblas_fill_upper,",
            "                              n);",
        ]
        .join("\n");
        let kernel_file = "template <int DIM_X>\nROCBLAS_KERNEL(DIM_X)\nrocblas_syr2_kernel(bool is_upper, rocblas_int n)\n{\n}";
        let shown = [
            ShownPiece {
                file: "library/src/blas1/rocblas_nrm2.cpp",
                name: "rocblas_snrm2",
                start: 25,
                end: 25,
                text: entry,
                expansion: Some("rocblas_status rocblas_snrm2(rocblas_handle handle, rocblas_int n, const float* x, rocblas_int incx, float* result) { return rocblas_nrm2_impl<rocblas_int, 512>(handle, n, x, incx, result); }"),
            },
            ShownPiece {
                file: "library/src/blas1/rocblas_nrm2_imp.hpp",
                name: "rocblas_nrm2_impl",
                start: 118,
                end: 121,
                text: &imp,
                expansion: None,
            },
            ShownPiece {
                file: "library/src/blas1/rocblas_asum_nrm2_kernels.hpp",
                name: "rocblas_reduction_kernel_part1",
                start: 91,
                end: 96,
                text: &kernel,
                expansion: None,
            },
            ShownPiece {
                file: "library/src/blas2/rocblas_syr2_kernels.cpp",
                name: "rocblas_internal_syr2_launcher",
                start: 139,
                end: 146,
                text: &launcher,
                expansion: None,
            },
            ShownPiece {
                file: "library/src/blas2/rocblas_syr2_kernels.cpp",
                name: "",
                start: 1,
                end: 5,
                text: kernel_file,
                expansion: None,
            },
        ];
        for right in [
            // The macro line is read with its expansion.
            "`rocblas_nrm2_impl` is reached from the entry point (rocblas_nrm2.cpp:25).",
            // A stated value the expansion holds.
            "With NB = 512 for snrm2 (rocblas_nrm2.cpp:25), a block covers 2 KiB.",
            // Cited together: the second range holds the name.
            "NB = 512 and FETCH = `rocblas_fetch_nrm2<float>` (rocblas_nrm2.cpp:25; rocblas_nrm2_imp.hpp:118-121).",
            // The sentence ends right after the citation: the next sentence's names are
            // not the range's.
            "The entry point instantiates it (rocblas_nrm2_imp.hpp:118). Internally it fixes `batch_count_1 = 1`.",
            // A name with a citation of its own is that citation's.
            "Thread 0 writes `workspace[batch * gridDim.x + blockIdx.x]` (rocblas_asum_nrm2_kernels.hpp:95-96) after `rocblas_fetch_nrm2` (rocblas_nrm2_imp.hpp:119) squares each element.",
            // Two names of the sentence's own code on the lines.
            "If tid < n, sum = FETCH{}(x[tid * incx]) (rocblas_asum_nrm2_kernels.hpp:93-94).",
            // The argument cited for the callee's parameter it becomes.
            "uplo becomes the kernel's is_upper flag (rocblas_syr2_kernels.cpp:145).",
        ] {
            assert_eq!(range_elsewhere(right, &shown, &[]), None, "{right}");
        }
        for wrong in [
            // A line that holds none of what its own sentence names.
            "`rocblas_fetch_nrm2` squares each element (rocblas_asum_nrm2_kernels.hpp:95-96).",
            // Cited together, and neither holds the name.
            "`rocblas_finalize_nrm2` takes the square root (rocblas_nrm2.cpp:25; rocblas_asum_nrm2_kernels.hpp:91).",
            // A launch cited at another kernel's line.
            "`rocblas_syr2_kernel` is launched with `uplo` at rocblas_asum_nrm2_kernels.hpp:91.",
        ] {
            assert!(range_elsewhere(wrong, &shown, &[]).is_some(), "{wrong}");
        }
    }

    #[test]
    fn notation_labels_and_pseudo_code_are_the_answers_own() {
        // Values at a moment or of a type, and LAPACK's generic routine names.
        for w in ["alpha_old", "eps_float", "y_ref", "xSTERF", "xGEMV"] {
            assert!(math_notation(w), "{w}");
        }
        for w in ["rocblas_ref", "load_ptr_batch", "x", "xs"] {
            assert!(!math_notation(w), "{w}");
        }
        assert!(names_a_part("` branch (92-93)"));
        assert!(!names_a_part("` (92-93) writes y"));
        assert!(pseudo_code("for i < n-1: if(E[i] != 0) (*info)++;"));
        assert!(!pseudo_code("for(int i = 0; i < n; i++) x[i] = 0;"));
        assert!(fixed_value_of("batch_count", "batch_count_1"));
        assert!(!fixed_value_of("batch_count", "batch_count_max"));
        // A name past another citation is of a later clause.
        let s =
            "Each thread walks the band (k.cpp:73-81), then reduce (84) sums with `__shfl_down`.";
        let end = s.find("73-81").unwrap() + 5;
        assert!(in_later_clause(s, 0, "__shfl_down", end));
        assert!(!in_later_clause(s, 0, "band", end));
    }

    #[test]
    fn command_lines_members_and_stand_ins_are_no_claims_about_the_code() {
        let known = KnownNames::default();
        let shown = NameSet::default();
        let answer = "It compiles with `hipcc -x hip --offload-arch=gfx90a q3.hip` and runs.";
        assert!(unknown_identifiers(answer, &shown, "", &known).is_empty());
        assert!(unknown_files(answer, &known).is_empty());
        let code = "    uint32_t tid = blockIdx.x * NB + threadIdx.x;\n";
        let pieces = [ShownPiece {
            file: "a.hpp",
            name: "k",
            start: 1,
            end: 1,
            text: code,
            expansion: None,
        }];
        // `threadIdx.x` ends an expression; `x` is no variable said to be int64_t.
        assert_eq!(
            declared_type_mismatch(
                "Its index tid = blockIdx.x * NB + threadIdx.x is int64_t in the rewrite.",
                &pieces
            ),
            None
        );
        // A derived expression multiplies; it declares nothing.
        assert!(!statement_shaped("incX * sizeof(float)"));
        assert!(statement_shaped("float* sizes(int n)"));
        // A name standing for the values the sentence lists.
        let shown_code = "    norm2 += shift_left(norm2, 1);\n    norm2 += shift_left(norm2, 2);";
        assert!(values_put_in(
            shown_code,
            "norm2 += shift_left(norm2, d)",
            "a tree of `norm2 += shift_left(norm2, d)` with d = 1, 2, 4"
        ));
        assert!(!values_put_in(
            shown_code,
            "norm2 += shift_left(norm2, d)",
            "a tree of `norm2 += shift_left(norm2, d)` with d = 3"
        ));
    }

    #[test]
    fn an_index_builtin_is_the_kernels_own() {
        let kernel = "ROCBLAS_KERNEL(NB)\nrocblas_scal_kernel(rocblas_int n)\n{\n    int64_t tid = blockIdx.x * NB + threadIdx.x;\n    uint32_t batch = blockIdx.z;\n    helper();\n}";
        let helper = "__device__ void helper() { int y = hipThreadIdx_y; }";
        let other =
            "ROCBLAS_KERNEL(NB)\nrocblas_gemv_kernel(rocblas_int n)\n{\n    int r = blockIdx.y;\n}";
        let shown = [
            ShownPiece {
                file: "a.hpp",
                name: "rocblas_scal_kernel",
                start: 1,
                end: 7,
                text: kernel,
                expansion: None,
            },
            ShownPiece {
                file: "a.hpp",
                name: "helper",
                start: 9,
                end: 9,
                text: helper,
                expansion: None,
            },
            ShownPiece {
                file: "a.hpp",
                name: "rocblas_gemv_kernel",
                start: 11,
                end: 15,
                text: other,
                expansion: None,
            },
        ];
        let kernels = ["rocblas_scal_kernel", "rocblas_gemv_kernel"];
        let wrong = "rocblas_scal_kernel takes the batch index from blockIdx.y.";
        assert!(builtin_not_in_kernel(wrong, &shown, &kernels)
            .is_some_and(|r| r.contains("blockIdx.y") && r.contains("blockIdx.x, blockIdx.z")));
        for right in [
            "rocblas_scal_kernel takes the batch index from `blockIdx.z`.",
            // Read by a helper it calls, in the other spelling.
            "rocblas_scal_kernel reads threadIdx.y through its helper.",
            "The batch comes from blockIdx.z in rocblas_scal_kernel, not from blockIdx.y.",
            "rocblas_gemv_kernel uses blockIdx.y for its rows.",
            // Two kernels named: not judged.
            "rocblas_scal_kernel and rocblas_gemv_kernel both use blockIdx.y.",
            // What a kernel leaves at zero is no read.
            "Grid dim3(1, 1, batch_count) (a.hpp 1-5). blockIdx.y is always 0 in rocblas_scal_kernel.",
        ] {
            assert_eq!(
                builtin_not_in_kernel(right, &shown, &kernels),
                None,
                "{right}"
            );
        }
    }

    #[test]
    fn quotes_are_compared_whole() {
        let ok = "It launches with `ROCBLAS_LAUNCH_KERNEL((rocblas_scal_kernel<API_INT, NB, T>), grid, threads, 0, stream, n);` and does `x[tid] = alpha * x[tid]`.";
        assert_eq!(
            foreign_quote(ok, "", None, SLICE, &squash(SLICE), &String::new),
            None
        );
        // Short quotes count too.
        assert!(foreign_quote(
            "It does `x[i] *= a`.",
            "",
            None,
            SLICE,
            &squash(SLICE),
            &String::new
        )
        .is_some());
        assert!(foreign_quote(
            "The code does `x[tid] = alpha * x[tid] + beta;`.",
            "",
            None,
            SLICE,
            &squash(SLICE),
            &String::new
        )
        .is_some());
        let fenced = "```cpp\n  293| rocblas_internal_scal_launcher(rocblas_handle handle,\n    API_INT n)\n```";
        assert_eq!(
            foreign_quote(fenced, "", None, SLICE, &squash(SLICE), &String::new),
            None
        );
        let invented = "The kernel body is:\n```cpp\nx[tid] = beta * x[tid];\n```";
        assert!(foreign_quote(invented, "", None, SLICE, &squash(SLICE), &String::new).is_some());
        // An illustration is not a quote.
        let sketch = "A simplified sketch of the same idea:\n```cpp\nout[i] = a * in[i];\n```";
        assert_eq!(
            foreign_quote(sketch, "", None, SLICE, &squash(SLICE), &String::new),
            None
        );
        // Values and conditions the answer states are not quotes; statements are, and so
        // is the code with only its numbers changed.
        for stated in [
            "It returns early when `n == 0`, with `nitems = n*(n+1)/2` items.",
            "The grid is `grid((n-1)/64 + 1, 1, batches)` with the constant put in.",
            "Instance b starts at `A + b*stride_A`.",
        ] {
            assert_eq!(
                foreign_quote(stated, "", None, SLICE, &squash(SLICE), &String::new),
                None,
                "{stated}"
            );
        }
        assert!(foreign_quote(
            "It scales with `x[tid] = alpha * x[tid + 1]`.",
            "",
            None,
            SLICE,
            &squash(SLICE),
            &String::new
        )
        .is_none());
        assert!(foreign_quote(
            "The line reads `x[tid] = beta * x[tid]`.",
            "",
            None,
            SLICE,
            &squash(SLICE),
            &String::new
        )
        .is_some());
        assert!(foreign_quote(
            "It launches with `ROCBLAS_LAUNCH_KERNEL((rocblas_scal_kernel<API_INT, NB, T>), grid, threads, 1, stream, n)`.", "",
            None,
            SLICE,
            &squash(SLICE),
            &String::new
        )
        .is_some());
        // Code the answer writes itself and then speaks of is its own.
        let own = "float* b = reinterpret_cast<float*>(lmem);";
        assert_eq!(
            foreign_quote(
                "It views LDS as `float* b = reinterpret_cast<float*>(lmem)`.",
                "",
                Some(own),
                SLICE,
                &squash(SLICE),
                &String::new
            ),
            None
        );
        // A quote cut with an ellipsis: each part must be there.
        assert_eq!(foreign_quote("```cpp\nrocblas_internal_scal_launcher(rocblas_handle handle, ...\nx[tid] = alpha * x[tid];\n```", "", None, SLICE, &squash(SLICE), &String::new), None);
    }

    #[test]
    fn a_line_with_stated_values_put_in_is_the_line() {
        let slice = "    for(int col = ty; col < n; col += DIM_Y)\n        A[tx + lda * ty] += alpha * x[tx] * x[ty];\n";
        let own = "constexpr int TRMVN_DIM_Y = 16;";
        for ok in [
            "For the last thread `ty = n` and `tx = 0`, so the line does `A[0 + lda*n] += alpha * x[0] * x[n];`.",
            "The loop `for(int col = ty; col < n; col += 16)` strides by the block height.",
            // A parenthesised value for a name.
            "On its last pass `ty = n-1`, and the thread does `A[tx + lda * (n-1)] += alpha * x[tx] * x[(n-1)];`.",
        ] {
            assert_eq!(foreign_quote(ok, "", Some(own), slice, &squash(slice), &String::new), None, "{ok}");
        }
        for wrong in [
            // A value nobody states for the name.
            "The loop `for(int col = ty; col < n; col += 32)` strides by the block height.",
            // Two names swapped: each is replaced by a name the line already uses.
            "With `tx = ty` the line does `A[ty + lda * tx] += alpha * x[ty] * x[tx];`.",
            // An operator changed along with the values.
            "With `ty = n` and `tx = 0` the line does `A[0 + lda*n] -= alpha * x[0] * x[n];`.",
        ] {
            assert!(
                foreign_quote(wrong, "", Some(own), slice, &squash(slice), &String::new).is_some(),
                "{wrong}"
            );
        }
        // Specifiers left out of a quoted head.
        let head = "template <typename T>\n__forceinline__ __device__ __host__ T load_scalar(const T* x, uint32_t idx)\n";
        let quoted = "It is `template <typename T> T load_scalar(const T* x, ...)`.";
        assert_eq!(
            foreign_quote(quoted, "", None, head, &squash(head), &String::new),
            None
        );
        // Code the answer says the slice leaves out is held to the sources.
        let outside = "The loop is in potf2_simple (not in the slice; from the 6.4.3 source).\nIt sits inside `for(kcol...)` with a `break`.";
        let in_sources = || "for(I kcol = 0; kcol < n; kcol++)".to_string();
        assert_eq!(
            foreign_quote(outside, "", None, slice, &squash(slice), &in_sources),
            None
        );
        assert!(foreign_quote(outside, "", None, slice, &squash(slice), &String::new).is_some());
        let later = "The loop is in potf2_simple (not in the slice).\n\nThe gap: `if(tid == 0) A[kk] = lkk;` has no barrier before it.";
        let in_sources = || {
            "for(I kcol = 0; kcol < n; kcol++)\n if(tid == 0)\n {\n A[kk] = lkk;\n }".to_string()
        };
        assert_eq!(
            foreign_quote(later, "", None, slice, &squash(slice), &in_sources),
            None
        );
        let unsaid = "It sits inside `for(kcol...)` with a `break`.";
        assert!(foreign_quote(unsaid, "", None, slice, &squash(slice), &in_sources).is_some());
    }
}
