//! The command line: clap arguments become a checked plan, then one stage call.
//!
//! Every subcommand has its own `XxxArgs` and `run_xxx`. Errors are printed with their
//! whole cause chain; exit codes are 0 (ok), 1 (nothing produced) and 2 (errors).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Layout, ProjectFile, Scope};
use crate::graph::{render, CodeGraph};
use crate::index::{index_tree, IndexStats};
use crate::model::LibraryIndex;
use crate::source;

/// `println!` that ends the process quietly when stdout is closed (`rocqa ... | head`).
macro_rules! say {
    ($($t:tt)*) => { write_out(format_args!($($t)*)) };
}

mod export;
mod precise;

fn write_out(args: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{args}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// Question-answer supervision grounded in ROCm math library sources.
#[derive(Debug, Parser)]
#[command(name = "rocqa", version, about)]
pub struct Cli {
    /// Project folder holding rocqa.toml, allowlists/ and rocm_sources/ (default: the
    /// current folder or the nearest parent with a rocqa.toml).
    #[arg(long, global = true)]
    pub root: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j', global = true)]
    pub jobs: Option<usize>,
    /// More log output (-v info, -vv debug).
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fetch and pin real source trees.
    Sources(SourcesArgs),
    /// Parse a pinned tree into the on-disk index and print what it holds.
    Index(IndexArgs),
    /// List the public API, grouped into families.
    Api(ApiArgs),
    /// Print the interface call graph of an API, or coverage statistics.
    Graph(GraphArgs),
    /// Say why a file, symbol or API family is in or out of scope.
    Scope(ScopeArgs),
    /// The main job: slices, questions, LLM answers, validated JSONL entries.
    Extract(ExtractArgs),
    /// Join the outputs of `extract --shard` runs into one run.
    Merge(MergeArgs),
    /// Check rocqa.toml, the allowlists and the question templates; sends nothing.
    Check,
    /// Run the validation checks on any entries file against the pinned trees.
    Validate(ValidateArgs),
    /// Print the facts read off the code of an API: launches, LDS, checks, statuses.
    Facts(FactsArgs),
    /// Write kept entries as training files (ShareGPT, OpenAI, Alpaca, Parquet) with
    /// splits, loader configs and a dataset card.
    Export(export::ExportArgs),
    /// Export a data mix described by a mix file (sources, quotas, weights, caps, seed).
    Mix(export::MixArgs),
    /// Review entries in a terminal UI; decisions go to reviews.jsonl beside them.
    Review(crate::review::ReviewArgs),
}

/// `rocqa facts`.
#[derive(Debug, Args)]
pub struct FactsArgs {
    /// Library and version.
    #[command(flatten)]
    pub lib: LibArgs,
    /// API function name, or a glob (`rocblas_?scal`).
    #[arg(long)]
    pub api: String,
    /// Print JSON (one `ApiFacts` record per API) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `rocqa validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// An entries.jsonl file.
    pub file: PathBuf,
    /// Drop entries whose question or answer shares a 13-word sequence with an item of
    /// this held-out evaluation set (JSONL: question/answer, Alpaca
    /// instruction/input/output, or ShareGPT messages); repeat for several sets, each
    /// reported on its own.
    #[arg(long)]
    pub decontaminate: Vec<PathBuf>,
    /// Where to write entries.jsonl and rejects.jsonl (default: a `validated/` folder
    /// beside the file).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Similarity from which two entries count as duplicates.
    #[arg(long, default_value_t = crate::validate::dedup::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// Entries files kept earlier (other shards, earlier releases): entries of FILE too
    /// close to one of theirs are rejected as its duplicates.
    #[arg(long)]
    pub against: Vec<PathBuf>,
}

/// `rocqa extract`.
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Library and version.
    #[command(flatten)]
    pub lib: LibArgs,
    /// Only API families with a member matching this glob (e.g. `rocblas_?scal*`).
    #[arg(long)]
    pub api: Option<String>,
    /// Only these categories (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    pub category: Vec<String>,
    /// Ask at most N questions (spread over families).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Print the prompts and token counts it would send, without calling the LLM.
    #[arg(long)]
    pub dry_run: bool,
    /// This machine's share of the families, `I/N` (0-based).
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u32, u32)>,
    /// Requests in flight (overrides `concurrency` of the llm table in rocqa.toml).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Do not read or write the response cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Tokens per slice (overrides `budget_tokens` of the extract table; small local models have
    /// small contexts).
    #[arg(long)]
    pub budget_tokens: Option<usize>,
    /// Ask all questions of a slice in one request (one structured reply holding an answer
    /// per question, each answer validated on its own): the slice is sent once.
    #[arg(long)]
    pub group_questions: bool,
}

/// `rocqa merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Library and version.
    #[command(flatten)]
    pub lib: LibArgs,
    /// Shard output folders (default: every `out/<lib>/<version>/shard-*` folder).
    pub shards: Vec<PathBuf>,
}

fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let (i, n) = s.split_once('/').ok_or("expected I/N, e.g. 0/4")?;
    let (i, n): (u32, u32) = (
        i.parse().map_err(|_| "I is not a number")?,
        n.parse().map_err(|_| "N is not a number")?,
    );
    if n == 0 || i >= n {
        return Err(format!("shard {i}/{n}: need 0 <= I < N"));
    }
    Ok((i, n))
}

/// `rocqa sources ...`
#[derive(Debug, Args)]
pub struct SourcesArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: SourcesAction,
}

/// Source actions.
#[derive(Debug, Subcommand)]
pub enum SourcesAction {
    /// Fetch a library version (Debian source package by default) and record its pin.
    Fetch(FetchArgs),
    /// List the pins in rocm_sources/sources.toml.
    List,
}

/// `rocqa sources fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Library name as configured in rocqa.toml.
    #[arg(long)]
    pub lib: String,
    /// Upstream version (default: every version configured for the library).
    #[arg(long)]
    pub version: Option<String>,
    /// Take the tree from a local checkout instead of Debian.
    #[arg(long, conflicts_with = "from_git")]
    pub from_dir: Option<PathBuf>,
    /// Take the tree from a git repository (with --rev).
    #[arg(long, requires = "rev")]
    pub from_git: Option<String>,
    /// Tag, branch or commit for --from-git.
    #[arg(long)]
    pub rev: Option<String>,
}

/// Which library tree to work on.
#[derive(Debug, Args, Clone)]
pub struct LibArgs {
    /// Library name as configured in rocqa.toml.
    #[arg(long)]
    pub lib: String,
    /// Version (default: the newest configured).
    #[arg(long)]
    pub version: Option<String>,
}

/// `rocqa index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Library and version.
    #[command(flatten)]
    pub lib: LibArgs,
    /// Ignore and rewrite the on-disk cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Print statistics as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print what the index holds for one file (path relative to the tree root), as JSON.
    #[arg(long)]
    pub file: Option<String>,
    /// With --file: print the file as the parser sees it (macros expanded, inactive
    /// branches blank), numbered with the original lines.
    #[arg(long, requires = "file")]
    pub expanded: bool,
    /// Print the defines the files are read under, each with where it comes from (the
    /// library's CMake files, its pair's generated headers, rocqa.toml).
    #[arg(long, conflicts_with = "file")]
    pub defines: bool,
    /// Parse the translation units with libclang (HIP mode, the build's flags) instead
    /// of the fast index's own reading; opt-in, cached like the fast index.
    #[arg(long, conflicts_with_all = ["file", "defines"])]
    pub precise: bool,
    /// With --precise: only these units (paths relative to the tree root; repeatable).
    #[arg(long, requires = "precise")]
    pub unit: Vec<String>,
}

/// `rocqa api`.
#[derive(Debug, Args)]
pub struct ApiArgs {
    /// Library and version.
    #[command(flatten)]
    pub lib: LibArgs,
    /// Only this family.
    #[arg(long)]
    pub family: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Output forms of a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// Indented tree.
    Tree,
    /// Graphviz DOT.
    Dot,
    /// SVG drawn by Graphviz (`dot` must be installed).
    Svg,
    /// JSON records.
    Json,
}

/// `rocqa graph`.
#[derive(Debug, Args)]
pub struct GraphArgs {
    /// Library and version.
    #[command(flatten)]
    pub lib: LibArgs,
    /// API function name.
    #[arg(long, required_unless_present_any = ["stats", "compare"])]
    pub api: Option<String>,
    /// Build the graph over the precise (libclang) index, parsing the units the fast
    /// graph touches.
    #[arg(long)]
    pub precise: bool,
    /// Per API family: edges both indexes find, only the fast one, only the precise one.
    #[arg(long, conflicts_with_all = ["api", "stats", "precise"])]
    pub compare: bool,
    /// With --compare: only this family (and list its differing edges).
    #[arg(long, requires = "compare")]
    pub family: Option<String>,
    /// Report how many in-scope API families reach a kernel or an opaque leaf.
    #[arg(long)]
    pub stats: bool,
    /// Output form.
    #[arg(long, value_enum, default_value = "tree")]
    pub format: GraphFormat,
    /// With --format dot/svg: every node and call site, not the folded picture.
    #[arg(long)]
    pub full: bool,
}

/// `rocqa scope`.
#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Library.
    #[arg(long)]
    pub lib: String,
    /// A path (relative to the tree root), a symbol name or an API family.
    #[arg(long)]
    pub explain: String,
}

/// Runs the command line and returns the exit code.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    init_logging(cli.verbose);
    if let Some(j) = cli.jobs {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(j.max(1))
            .build_global();
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    }
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ROCQA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Colours only on a terminal: logs piped to a file or a CI log stay plain text.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

fn run(cli: Cli) -> Result<i32> {
    let layout = Layout {
        root: find_root(cli.root.as_deref())?,
    };
    match cli.command {
        Command::Sources(a) => run_sources(&layout, a),
        Command::Index(a) => run_index(&layout, a),
        Command::Api(a) => run_api(&layout, a),
        Command::Graph(a) => run_graph(&layout, a),
        Command::Scope(a) => run_scope(&layout, a),
        Command::Extract(a) => run_extract(&layout, a),
        Command::Merge(a) => run_merge(&layout, a),
        Command::Check => run_check(&layout),
        Command::Validate(a) => run_validate(&layout, a),
        Command::Facts(a) => run_facts(&layout, a),
        Command::Export(a) => export::run_export(&layout, a),
        Command::Mix(a) => export::run_mix(&layout, a),
        Command::Review(a) => crate::review::run(&layout, a),
    }
}

fn find_root(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(r) = given {
        if !r.join("rocqa.toml").is_file() {
            bail!(
                "{}: no rocqa.toml here; --root must point at the rocqa project folder",
                r.display()
            );
        }
        return Ok(r.to_path_buf());
    }
    let cwd = std::env::current_dir()?;
    for d in cwd.ancestors() {
        if d.join("rocqa.toml").is_file() {
            return Ok(d.to_path_buf());
        }
    }
    bail!(
        "no rocqa.toml in {} or its parents; run rocqa from the project folder or pass --root",
        cwd.display()
    )
}

fn run_sources(layout: &Layout, a: SourcesArgs) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    match a.action {
        SourcesAction::List => {
            let pins = source::Pins::load(&layout.sources().join("sources.toml"))?;
            for p in &pins.pins {
                say!("{}-{}\t{}\t{:?}", p.lib, p.version, p.sha256, p.origin);
            }
            Ok(if pins.pins.is_empty() { 1 } else { 0 })
        }
        SourcesAction::Fetch(f) => {
            let lcfg = project.library(&f.lib)?;
            let versions: Vec<String> = match &f.version {
                Some(v) => vec![v.clone()],
                None => lcfg.versions.keys().cloned().collect(),
            };
            for version in versions {
                let vcfg = project.version(&f.lib, &version)?;
                let from = if let Some(d) = &f.from_dir {
                    source::FetchFrom::Dir(d.clone())
                } else if let Some(url) = &f.from_git {
                    source::FetchFrom::Git {
                        url: url.clone(),
                        rev: f.rev.clone().unwrap_or_default(),
                    }
                } else {
                    source::FetchFrom::Debian(source::DebianSpec {
                        package: lcfg.debian_package.clone().unwrap_or_else(|| f.lib.clone()),
                        debian_version: vcfg.debian.clone(),
                        mirror: project.debian.mirror.clone(),
                        suites: project.debian.suites.clone(),
                    })
                };
                let req = source::FetchRequest {
                    lib: f.lib.clone(),
                    version: version.clone(),
                    from,
                    exclude: lcfg.unpack_exclude.clone(),
                };
                let out = source::fetch(&req, &layout.sources())
                    .with_context(|| format!("fetching {} {version}", f.lib))?;
                say!(
                    "{} {} {} sha256={} {}",
                    f.lib,
                    version,
                    if out.fetched {
                        "fetched"
                    } else {
                        "already pinned"
                    },
                    out.pin.sha256,
                    out.tree.display()
                );
            }
            Ok(0)
        }
    }
}

/// A library's index, loaded or built, with the scope it was built under.
struct Loaded {
    index: LibraryIndex,
    stats: IndexStats,
    scope: Scope,
}

fn load_index(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
    use_cache: bool,
) -> Result<Loaded> {
    project.version(lib, version)?;
    let scope = Scope::load(&layout.scope_file(lib))?;
    let tree = source::tree_path(&layout.sources(), lib, version)?;
    let cache = layout.index_cache(lib, version);
    if !use_cache {
        // Only the fast index's file: a precise parse may be reading its generated
        // headers from the same folder.
        let _ = std::fs::remove_file(crate::index::fast_cache_file(&cache));
    }
    let lcfg = &effective_config(layout, project, lib, version, &tree)?;
    let (index, stats) = index_tree(lib, version, &tree, lcfg, &scope, Some(&cache))
        .with_context(|| format!("indexing {lib} {version}"))?;
    Ok(Loaded {
        index,
        stats,
        scope,
    })
}

/// The paired library's name and tree, when the version has a pair that is fetched.
fn pair_tree(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
) -> Result<Option<(String, PathBuf)>> {
    Ok(pair_of(project, lib, version)?.and_then(|(plib, pver)| {
        source::tree_path(&layout.sources(), &plib, &pver)
            .ok()
            .filter(|t| t.is_dir())
            .map(|t| (plib, t))
    }))
}

/// A library's configuration with the defines its build (and its pair's generated
/// headers) set, rocqa.toml's own winning.
fn effective_config(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
    tree: &Path,
) -> Result<crate::config::LibraryConfig> {
    let pair = pair_tree(layout, project, lib, version)?;
    Ok(crate::index::with_build_defines(
        lib,
        tree,
        project.library(lib)?,
        pair.as_ref().map(|(l, t)| (l.as_str(), t.as_path())),
    ))
}

fn version_of(project: &ProjectFile, a: &LibArgs) -> Result<String> {
    match &a.version {
        Some(v) => Ok(v.clone()),
        None => Ok(project.latest_version(&a.lib)?),
    }
}

fn run_index(layout: &Layout, a: IndexArgs) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    let version = version_of(&project, &a.lib)?;
    if a.defines {
        let tree = source::tree_path(&layout.sources(), &a.lib.lib, &version)?;
        let pair = pair_tree(layout, &project, &a.lib.lib, &version)?;
        let defs = crate::index::build_defines(
            &a.lib.lib,
            &tree,
            project.library(&a.lib.lib)?,
            pair.as_ref().map(|(l, t)| (l.as_str(), t.as_path())),
        );
        if a.json {
            say!("{}", serde_json::to_string_pretty(&defs)?);
        } else {
            for d in &defs {
                say!("{}={}  ({})", d.name, d.value, d.origin);
            }
        }
        return Ok(if defs.is_empty() { 1 } else { 0 });
    }
    if a.precise {
        return precise::run_index(
            layout,
            &project,
            &a.lib.lib,
            &version,
            !a.no_cache,
            &a.unit,
            a.json,
        );
    }
    if let (Some(path), true) = (&a.file, a.expanded) {
        let scope = Scope::load(&layout.scope_file(&a.lib.lib))?;
        let tree = source::tree_path(&layout.sources(), &a.lib.lib, &version)?;
        let lcfg = &effective_config(layout, &project, &a.lib.lib, &version, &tree)?;
        let (text, expansions) = crate::index::expand_file(&a.lib.lib, &tree, lcfg, &scope, path)?;
        for (n, line) in text.lines().enumerate() {
            if !line.trim().is_empty() {
                say!("{:>6}  {line}", n + 1);
            }
        }
        for e in &expansions {
            say!(
                "expanded {} (defined at {}:{})",
                e.name,
                e.def_file,
                e.def_line
            );
        }
        return Ok(0);
    }
    let l = load_index(layout, &project, &a.lib.lib, &version, !a.no_cache)?;
    if let Some(path) = &a.file {
        let Some(f) = l.index.files.iter().find(|f| f.path == *path) else {
            bail!("{path}: not an indexed file of {} {version} (out of scope, or not a C/C++ file); `rocqa scope --lib {} --explain {path}` says why", a.lib.lib, a.lib.lib);
        };
        say!("{}", serde_json::to_string_pretty(f)?);
        return Ok(0);
    }
    if a.json {
        say!("{}", serde_json::to_string_pretty(&l.stats)?);
    } else {
        let s = &l.stats;
        say!(
            "{} {}: {} files ({} parsed, {} from cache), {:.1} MB",
            a.lib.lib,
            version,
            s.files,
            s.parsed,
            s.cached,
            s.bytes as f64 / 1e6
        );
        say!(
            "  {} definitions: {} kernels, {} device helpers, {} from macro expansions",
            s.symbols,
            s.kernels,
            s.device_helpers,
            s.macro_expanded
        );
        say!(
            "  {} call sites, {} launch sites, {} macros",
            s.calls,
            s.launches,
            s.macros
        );
        say!(
            "  public API: {} functions ({} _64), {} families",
            s.api_functions,
            s.api_64,
            s.api_families
        );
        say!("  files with parse errors left: {}", s.files_with_errors);
        for f in &s.error_files {
            say!("    {f}");
        }
        say!(
            "  headers read again under a translation unit's extra defines: {}",
            s.variants
        );
        say!("  {} ms", s.millis);
    }
    Ok(if l.stats.files == 0 { 1 } else { 0 })
}

fn run_api(layout: &Layout, a: ApiArgs) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    let version = version_of(&project, &a.lib)?;
    let l = load_index(layout, &project, &a.lib.lib, &version, true)?;
    let api: Vec<_> = l
        .index
        .api
        .iter()
        .filter(|f| a.family.as_ref().is_none_or(|x| *x == f.family))
        .collect();
    if a.json {
        say!("{}", serde_json::to_string_pretty(&api)?);
    } else {
        let mut fams: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for f in &api {
            fams.entry(f.family.as_str())
                .or_default()
                .push(f.name.as_str());
        }
        for (fam, names) in &fams {
            say!("{fam} ({}): {}", names.len(), names.join(" "));
        }
        say!("{} functions in {} families", api.len(), fams.len());
    }
    Ok(if api.is_empty() { 1 } else { 0 })
}

fn run_graph(layout: &Layout, a: GraphArgs) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    let version = version_of(&project, &a.lib)?;
    if a.compare {
        let json = a.format == GraphFormat::Json;
        return precise::run_compare(
            layout,
            &project,
            &a.lib.lib,
            &version,
            a.family.as_deref(),
            json,
        );
    }
    if let (true, Some(api)) = (a.precise, &a.api) {
        return precise::run_graph(
            layout, &project, &a.lib.lib, &version, api, a.format, a.full,
        );
    }
    let main = load_index(layout, &project, &a.lib.lib, &version, true)?;
    let pair = match &project.version(&a.lib.lib, &version)?.pair {
        Some(p) => {
            let (plib, pver) = p
                .split_once('@')
                .with_context(|| format!("rocqa.toml: library.{}.versions.\"{version}\".pair = \"{p}\": expected `lib@version`", a.lib.lib))?;
            Some(load_index(layout, &project, plib, pver, true)?)
        }
        None => None,
    };
    let graph = CodeGraph::new(&main.index, pair.as_ref().map(|p| &p.index), &main.scope);
    if a.stats {
        let s = graph.stats();
        match a.format {
            GraphFormat::Json => say!("{}", serde_json::to_string_pretty(&s)?),
            _ => {
                say!(
                    "{} {}: {} API functions in {} families; {} families in scope; {} reach a kernel or an opaque leaf: {:.1}%",
                    s.lib, s.version, s.api_functions, s.families, s.in_scope, s.reaching, s.percent
                );
                say!(
                    "  mean graph size {:.1} nodes; {} graphs with cross-library edges",
                    s.mean_nodes,
                    s.cross_library
                );
                say!(
                    "  API functions with no definition found: {}",
                    s.no_entry.len()
                );
                for n in &s.no_entry {
                    say!("    {n}");
                }
                say!(
                    "  in-scope families not reaching device code: {}",
                    s.not_reaching.len()
                );
                for (f, why) in &s.not_reaching {
                    say!("    {f}: {why}");
                }
                say!(
                    "  call sites cut (more than graph.max_fanout definitions fit): {}",
                    s.cut_sites.len()
                );
                for c in &s.cut_sites {
                    say!(
                        "    {}:{} {} -> {} ({} candidates)",
                        c.file,
                        c.line,
                        c.caller,
                        c.callee,
                        c.candidates
                    );
                }
            }
        }
        return Ok(0);
    }
    let name = a.api.unwrap_or_default();
    let Some(api) = graph.api().iter().find(|f| f.name == name) else {
        bail!(
            "{name}: not a public API function of {} {version}; `rocqa api --lib {}` lists them",
            a.lib.lib,
            a.lib.lib
        );
    };
    let g = graph.interface(api);
    let text = match a.format {
        GraphFormat::Tree => render::tree(&g),
        GraphFormat::Dot | GraphFormat::Svg => {
            let d = if a.full {
                render::dot_full(&g)
            } else {
                render::dot(&g)
            };
            if a.format == GraphFormat::Svg {
                render::svg(&d).map_err(|e| anyhow::anyhow!(e))?
            } else {
                d
            }
        }
        GraphFormat::Json => render::json(&g),
    };
    say!("{}", text.trim_end_matches('\n'));
    Ok(if g.nodes.len() > 1 { 0 } else { 1 })
}

fn run_scope(layout: &Layout, a: ScopeArgs) -> Result<i32> {
    ProjectFile::load(&layout.project_file())?.library(&a.lib)?;
    let scope = Scope::load(&layout.scope_file(&a.lib))?;
    let s = &a.explain;
    let looks_like_path = s.contains('/') || s.contains('.');
    if looks_like_path {
        let v = scope.explain_path(s);
        say!(
            "path {s}: {} ({})",
            if v.inside { "in scope" } else { "out of scope" },
            v.because
        );
    } else {
        let v = scope.explain_symbol(s);
        say!(
            "symbol {s}: {} ({})",
            if v.inside {
                "followed"
            } else {
                "cut from graphs"
            },
            v.because
        );
        if let Some(why) = scope.opaque(s) {
            say!("symbol {s}: opaque leaf ({why})");
        }
        let f = scope.explain_family(s);
        say!(
            "family {s}: {} ({})",
            if f.inside { "in scope" } else { "out of scope" },
            f.because
        );
    }
    Ok(0)
}

fn pair_of(project: &ProjectFile, lib: &str, version: &str) -> Result<Option<(String, String)>> {
    Ok(project.pair(lib, version)?)
}

fn run_extract(layout: &Layout, a: ExtractArgs) -> Result<i32> {
    use crate::extract::{manifest_for, out_dir, plan_run, ExtractPlan};
    let t0 = std::time::Instant::now();
    let project = ProjectFile::load(&layout.project_file())?;
    let version = version_of(&project, &a.lib)?;
    let lib = a.lib.lib.clone();
    let main = load_index(layout, &project, &lib, &version, true)?;
    let pair = match pair_of(&project, &lib, &version)? {
        Some((l, v)) => Some((load_index(layout, &project, &l, &v, true)?, l, v)),
        None => None,
    };
    let mut trees = crate::slice::Trees::default();
    trees.add(&lib, &source::tree_path(&layout.sources(), &lib, &version)?);
    if let Some((_, l, v)) = &pair {
        trees.add(l, &source::tree_path(&layout.sources(), l, v)?);
    }
    let pins = source::Pins::load(&layout.sources().join("sources.toml"))?;
    let pin = pins
        .get(&lib, &version)
        .cloned()
        .with_context(|| format!("{lib} {version} has no pin in rocm_sources/sources.toml; run `rocqa sources fetch --lib {lib} --version {version}`"))?;
    let templates = crate::question::load_templates(&layout.root.join(&project.extract.templates))?;
    let known: std::collections::BTreeSet<&str> =
        templates.iter().map(|t| t.category.as_str()).collect();
    for c in &a.category {
        if !known.contains(c.as_str()) {
            bail!(
                "--category {c}: no such category; the templates define {}",
                known.iter().copied().collect::<Vec<_>>().join(", ")
            );
        }
    }
    let api_glob = match &a.api {
        Some(g) => Some(
            globset::Glob::new(g)
                .with_context(|| format!("--api {g}: not a glob"))?
                .compile_matcher(),
        ),
        None => None,
    };
    let plan = ExtractPlan {
        lib: lib.clone(),
        version: version.clone(),
        api_glob,
        categories: (!a.category.is_empty()).then(|| a.category.clone()),
        limit: a.limit,
        shard: a.shard,
        limits: crate::slice::SliceLimits {
            budget_tokens: a.budget_tokens.unwrap_or(project.extract.budget_tokens),
            max_piece_tokens: a
                .budget_tokens
                .map_or(project.extract.max_piece_tokens, |b| {
                    project.extract.max_piece_tokens.min(b)
                }),
        },
        naming: project.library(&lib)?.naming(),
    };
    let graph = CodeGraph::new(&main.index, pair.as_ref().map(|p| &p.0.index), &main.scope);
    let mut indexes = vec![&main.index];
    if let Some((p, _, _)) = &pair {
        indexes.push(&p.index);
    }
    // The expanded code facts are read from: planning uses it too, so that no question
    // targets a kernel the API never launches.
    let t_phase = std::time::Instant::now();
    let code = code_text(
        layout,
        &project,
        &lib,
        &version,
        pair.as_ref().map(|p| (&p.1, &p.2)),
    )?;
    tracing::info!(
        ms = t_phase.elapsed().as_millis() as u64,
        "Expanded code read."
    );
    let lcfg = project.library(&lib)?;
    let reader = crate::facts::FactReader::new(&code, &lcfg.api_prefix, &lcfg.precisions);
    let t_phase = std::time::Instant::now();
    let planned = plan_run(
        &plan,
        &graph,
        &indexes,
        &main.scope,
        &trees,
        &templates,
        Some(&reader),
    )?;
    tracing::info!(
        ms = t_phase.elapsed().as_millis() as u64,
        "Questions planned."
    );
    let mut manifest = manifest_for(&plan, &planned);
    manifest.toolchain.insert(
        "source".into(),
        format!("{lib} {version} sha256 {}", pin.sha256),
    );

    if a.dry_run {
        let dir = out_dir(&layout.root, &plan, true);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut text = String::new();
        for q in &planned.questions {
            text.push_str(&serde_json::to_string(q)?);
            text.push('\n');
            say!(
                "{}  {:<15} {:<28} {:>6} tokens  {}",
                q.id,
                q.category,
                q.template_id,
                q.prompt_tokens,
                q.slice_id
            );
        }
        std::fs::write(dir.join("prompts.jsonl"), text)?;
        manifest.dry_run = true;
        manifest.duration_ms = t0.elapsed().as_millis() as u64;
        manifest.write(&dir)?;
        say!(
            "dry run: {} prompts, {} tokens, {} of {} in-scope families ({:.1}%), categories {:?}; written to {}",
            planned.questions.len(),
            manifest.planned_prompt_tokens,
            planned.coverage.with_prompts,
            planned.coverage.in_scope,
            planned.coverage.prompts_percent,
            manifest.prompts_by_category,
            dir.display()
        );
        return Ok(if planned.questions.is_empty() { 1 } else { 0 });
    }

    let prefixes: Vec<String> = std::iter::once(&main.index.lib)
        .chain(pair.as_ref().map(|p| &p.1))
        .filter_map(|l| {
            project
                .library
                .get(l.as_str())
                .map(|c| c.api_prefix.clone())
        })
        .collect();
    let t_known = std::time::Instant::now();
    let known = crate::validate::grounding::KnownNames::from_indexes(&indexes, &prefixes)
        .with_trees(&trees)
        .with_system_headers();
    tracing::info!(
        names = known.len(),
        ms = t_known.elapsed().as_millis() as u64,
        "Names known for grounding."
    );
    // Fact entries first: they need no model, so a run without an endpoint still writes
    // real entries.
    let dir = out_dir(&layout.root, &plan, false);
    let mut out = crate::emit::RunOutput::open(&dir)?;
    let apis = crate::extract::run_apis(&plan, &graph, &main.scope);
    let t_phase = std::time::Instant::now();
    let facts = crate::extract::read_facts(&apis.all, &graph, &reader, &indexes);
    tracing::info!(ms = t_phase.elapsed().as_millis() as u64, "Facts read.");
    let t_phase = std::time::Instant::now();
    let fact_index = crate::validate::factcheck::FactIndex::new(&facts)
        .with_api_sets(planned.slices.values().map(|s| s.apis.as_slice()));
    let catalogue =
        crate::validate::provenance::Catalogue::new(&indexes, template_keys(&templates));
    let shown = crate::validate::ShownCache::default();
    let grounding = crate::validate::Grounding {
        trees: &trees,
        known: &known,
        facts: Some(&fact_index),
        catalogue: &catalogue,
        shown: &shown,
    };
    let signatures = crate::validate::dedup::SignatureMemo::default();
    let report = crate::extract::write_fact_entries(
        &apis,
        &facts,
        &pin,
        &pins,
        &grounding,
        crate::extract::Duplicates {
            threshold: crate::validate::dedup::DEFAULT_THRESHOLD,
            signatures: &signatures,
        },
        &mut out,
    )?;
    say!(
        "{lib} {version}: fact entries for {} public API functions ({} of them host bookkeeping outside the question scope): {}; {} APIs below {} fact entries (named in the manifest, with why)",
        report.apis,
        report.outside_question_scope,
        report.entries.summary(),
        report.below_minimum.len(),
        crate::extract::MIN_FACT_ENTRIES
    );
    tracing::info!(
        ms = t_phase.elapsed().as_millis() as u64,
        "Fact entries written."
    );
    manifest.fact_entries = Some(report);
    let reference = crate::extract::write_reference_entries(
        &planned,
        &pin,
        &pins,
        &grounding,
        crate::extract::Duplicates {
            threshold: crate::validate::dedup::DEFAULT_THRESHOLD,
            signatures: &signatures,
        },
        &mut out,
    )?;
    say!(
        "{lib} {version}: find-the-bug entries answered from their planted bugs: {}",
        reference.entries.summary()
    );
    manifest.reference_entries = Some(reference);
    log_compiler_stats(&code);
    let mut cfg = match crate::llm::LlmConfig::resolve(&project.llm) {
        Ok(c) => c,
        Err(crate::llm::LlmError::NoEndpoint(how)) => {
            manifest.duration_ms = t0.elapsed().as_millis() as u64;
            manifest.count_outputs(&dir)?;
            manifest.write(&dir)?;
            say!(
                "{} entries in {}; no LLM endpoint is configured, so no LLM entries were asked for. To add them: {how}",
                manifest.entries,
                dir.display()
            );
            return Ok(if manifest.entries == 0 { 1 } else { 0 });
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(c) = a.concurrency {
        cfg.concurrency = c.max(1);
    }
    let model = cfg.model.clone();
    let params = cfg.params();
    let cache = if a.no_cache {
        None
    } else {
        let p = layout.root.join("out").join("cache").join("llm.sqlite");
        std::fs::create_dir_all(p.parent().unwrap_or(&layout.root))?;
        Some(crate::llm::ResponseCache::open(&p)?)
    };
    let client = crate::llm::LlmClient::new(cfg, cache)?;
    let todo = planned
        .questions
        .iter()
        .filter(|q| !out.is_done(&q.id))
        .count();
    tracing::info!(planned = planned.questions.len(), todo, dir = %dir.display(), "Extracting.");
    let bar = progress_bar(todo as u64);
    let mut progress = |done: usize, total: usize| {
        if let Some(b) = &bar {
            b.set_position(done as u64);
        } else if total >= 10 && done.is_multiple_of((total / 10).max(1)) || done == total {
            tracing::info!(done, total, "Answers received.");
        }
    };
    let compiler = compiler_for(layout, &project, &[(lib.clone(), version.clone())])?;
    let cx = crate::extract::RunContext {
        client: &client,
        model: &model,
        params: &params,
        pin: &pin,
        trees: &trees,
        known: &known,
        facts: Some(&fact_index),
        catalogue: &catalogue,
        dedup_threshold: crate::validate::dedup::DEFAULT_THRESHOLD,
        signatures: &signatures,
        compiler: &compiler,
        group_questions: a.group_questions,
    };
    let cpu_before = own_cpu_ms();
    let summary = crate::extract::run(&planned, &mut out, &cx, &mut progress)?;
    manifest.answer_cpu_ms = own_cpu_ms()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    manifest.model = Some(model);
    manifest.params = params;
    manifest.fact_check = Some(summary.fact_check);
    manifest.repairs = Some(summary.repairs);
    manifest.add_llm_totals(&dir, serde_json::to_value(client.totals())?)?;
    manifest.duration_ms = t0.elapsed().as_millis() as u64;
    manifest.count_outputs(&dir)?;
    manifest.write(&dir)?;
    let llm_failures = crate::emit::read_jsonl::<crate::model::Reject>(&dir.join("rejects.jsonl"))?
        .iter()
        .filter(|r| r.stage == "llm")
        .count();
    say!(
        "{lib} {version}: {} questions ({} answered before), {} entries and {} rejects written now; {} entries, {} rejects in {}",
        summary.planned,
        summary.skipped,
        summary.entries,
        summary.rejects,
        manifest.entries,
        manifest.rejects,
        dir.display()
    );
    let t = client.totals();
    say!(
        "fact check: {} claims of {} answers compared with the facts of their APIs, {} contradicted (rejected as contradicts-code)",
        summary.fact_check.claims,
        summary.fact_check.answers,
        summary.fact_check.contradicted
    );
    say!(
        "llm: {} requests, {} cache hits, {} retries, {} failures; {} prompt + {} completion tokens",
        t.requests, t.cache_hits, t.retries, t.failures, t.prompt_tokens, t.completion_tokens
    );
    let r = summary.repairs;
    say!(
        "repairs: {} answers failed on form only and were asked once more, {} then kept; {} prompt + {} completion tokens",
        r.asked, r.kept, r.prompt_tokens, r.completion_tokens
    );
    Ok(if manifest.entries + manifest.rejects == 0 {
        1
    } else if llm_failures > 0 {
        2
    } else {
        0
    })
}

/// What the compiler's readings of instantiations cost in this run: compiled, taken
/// from the cache, and the compile time (what a second run no longer pays).
fn log_compiler_stats(code: &crate::facts::CodeText) {
    for (l, st) in code.compiler_stats() {
        tracing::info!(
            lib = %l,
            compiled = st.compiled,
            cached = st.cached,
            failed = st.failed,
            compile_ms = st.compile_millis,
            "Instantiations read."
        );
    }
}

/// The expanded text of a library's tree (and of its pair's) for reading facts.
fn code_text(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
    pair: Option<(&String, &String)>,
) -> Result<crate::facts::CodeText> {
    let mut code = crate::facts::CodeText::default();
    let libs = std::iter::once((lib, version)).chain(pair.map(|(l, v)| (l.as_str(), v.as_str())));
    for (l, v) in libs {
        let tree = source::tree_path(&layout.sources(), l, v)?;
        let scope = Scope::load(&layout.scope_file(l))?;
        let cfg = effective_config(layout, project, l, v, &tree)?;
        let t = crate::index::ExpandedTree::new(l, &tree, &cfg, &scope)
            .with_context(|| format!("reading {l} {v}"))?;
        code.add(l, t);
        // What runs in the library's own APIs, read off the compiler's instantiations.
        if l == lib && cfg.compiler_facts {
            let pair = pair_of(project, l, v)?;
            let setup = crate::index::precise::PreciseSetup {
                lib: l,
                version: v,
                tree: &tree,
                cfg: &cfg,
                pair_headers: crate::index::precise::pair_headers(
                    &layout.sources(),
                    pair.as_ref().map(|(pl, pv)| (pl.as_str(), pv.as_str())),
                ),
                cache_dir: &layout.index_cache(l, v),
            };
            let units = crate::index::precise::units(&tree, &scope);
            match crate::index::precise::instantiate::InstantiationReader::new(&setup, units) {
                Ok(r) => code.add_compiler(l, std::sync::Arc::new(r)),
                Err(e) => {
                    tracing::warn!(lib = l, error = %e, "Compiler reading off: facts are read from the text alone.")
                }
            }
        }
    }
    Ok(code)
}

fn run_facts(layout: &Layout, a: FactsArgs) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    let version = version_of(&project, &a.lib)?;
    let lib = a.lib.lib.clone();
    let main = load_index(layout, &project, &lib, &version, true)?;
    let pair = match pair_of(&project, &lib, &version)? {
        Some((l, v)) => Some((load_index(layout, &project, &l, &v, true)?, l, v)),
        None => None,
    };
    let graph = CodeGraph::new(&main.index, pair.as_ref().map(|p| &p.0.index), &main.scope);
    let glob = globset::Glob::new(&a.api)
        .with_context(|| format!("--api {}: not a name or glob", a.api))?
        .compile_matcher();
    let apis: Vec<&crate::model::ApiFunction> = graph
        .api()
        .iter()
        .filter(|f| glob.is_match(&f.name))
        .collect();
    if apis.is_empty() {
        bail!(
            "{}: no public API function of {lib} {version} matches; `rocqa api --lib {lib}` lists them",
            a.api
        );
    }
    let code = code_text(
        layout,
        &project,
        &lib,
        &version,
        pair.as_ref().map(|p| (&p.1, &p.2)),
    )?;
    let lcfg = project.library(&lib)?;
    let reader = crate::facts::FactReader::new(&code, &lcfg.api_prefix, &lcfg.precisions);
    let mut total = 0;
    for api in apis {
        let f = reader.read(&graph.interface(api));
        total += f.facts.len();
        if a.json {
            say!("{}", serde_json::to_string(&f)?);
            continue;
        }
        say!("{} ({} {version}): {} facts", f.api, lib, f.facts.len());
        for fact in &f.facts {
            say!("  {}", crate::facts::describe(fact));
        }
        for x in &f.excluded {
            say!("  not run by this API: {x}");
        }
    }
    log_compiler_stats(&code);
    Ok(if total == 0 { 1 } else { 0 })
}

/// A progress bar with rate and ETA on a terminal; none otherwise (logs instead).
fn progress_bar(len: u64) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} answers  {per_sec}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(b)
}

fn run_merge(layout: &Layout, a: MergeArgs) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    let version = version_of(&project, &a.lib)?;
    let base = layout.root.join("out").join(&a.lib.lib).join(&version);
    let mut shards = a.shards.clone();
    if shards.is_empty() {
        shards = std::fs::read_dir(&base)
            .with_context(|| {
                format!(
                    "{}: no run folder; run `rocqa extract --shard I/N` first",
                    base.display()
                )
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("shard-"))
            })
            .collect();
        shards.sort();
    }
    if shards.is_empty() {
        bail!("{}: no shard-* folders to merge", base.display());
    }
    let mut manifest = crate::emit::Manifest::default();
    for s in &shards {
        let p = s.join("manifest.json");
        let m: crate::emit::Manifest =
            serde_json::from_str(&std::fs::read_to_string(&p).with_context(|| {
                format!("{}: missing; was the shard run to the end?", p.display())
            })?)
            .with_context(|| format!("{}: not a manifest", p.display()))?;
        if manifest.lib.is_empty() {
            manifest = m.clone();
            manifest.shards.clear();
            manifest.prompts_by_category.clear();
            manifest.prompts_by_family.clear();
            manifest.planned_prompt_tokens = 0;
            manifest.coverage.with_prompts = 0;
            manifest.coverage.without_prompts.clear();
            manifest.duration_ms = 0;
            // Every shard renders and checks the whole library's fact entries alike and
            // writes its own share: the counts are one shard's, what was written all's.
            if let Some(f) = manifest.fact_entries.as_mut() {
                f.entries.written = 0;
                f.entries.kept_before = 0;
                f.entries.other_shards = 0;
            }
        }
        if let (Some(total), Some(f)) = (manifest.fact_entries.as_mut(), &m.fact_entries) {
            total.entries.written += f.entries.written;
            total.entries.kept_before += f.entries.kept_before;
        }
        manifest.shards.extend(m.shards);
        for (k, v) in m.prompts_by_category {
            *manifest.prompts_by_category.entry(k).or_default() += v;
        }
        for (k, v) in m.prompts_by_family {
            *manifest.prompts_by_family.entry(k).or_default() += v;
        }
        manifest.planned_prompt_tokens += m.planned_prompt_tokens;
        manifest.coverage.with_prompts += m.coverage.with_prompts;
        manifest.duration_ms = manifest.duration_ms.max(m.duration_ms);
    }
    manifest.coverage.prompts_percent =
        crate::emit::percent(manifest.coverage.with_prompts, manifest.coverage.in_scope);
    let (e, r) = crate::emit::merge(&shards, &base)?;
    manifest.count_outputs(&base)?;
    manifest.write(&base)?;
    say!(
        "merged {} shards ({}): {e} entries, {r} rejects in {}",
        shards.len(),
        manifest.shards.join(", "),
        base.display()
    );
    Ok(if e + r == 0 { 1 } else { 0 })
}

fn run_check(layout: &Layout) -> Result<i32> {
    let project = ProjectFile::load(&layout.project_file())?;
    for lib in project.library.keys() {
        Scope::load(&layout.scope_file(lib))?;
        say!(
            "{lib}: rocqa.toml and {} are valid",
            layout.scope_file(lib).display()
        );
    }
    let templates = crate::question::load_templates(&layout.root.join(&project.extract.templates))?;
    let mut cats: std::collections::BTreeMap<&str, usize> = Default::default();
    for t in &templates {
        *cats.entry(t.category.as_str()).or_default() += 1;
    }
    say!("{} question templates: {cats:?}", templates.len());
    match crate::llm::LlmConfig::resolve(&project.llm) {
        Ok(c) => say!("llm endpoint: {} (model {})", c.base_url, c.model),
        Err(e) => say!("llm endpoint: none configured ({e})"),
    }
    Ok(0)
}

/// What an entry's provenance check knows of each question template.
fn template_keys(
    templates: &[crate::question::Template],
) -> impl Iterator<Item = (String, String, u32, bool)> + '_ {
    templates
        .iter()
        .map(|t| (t.id.clone(), t.category.clone(), t.version, t.mutate))
}

fn run_validate(layout: &Layout, a: ValidateArgs) -> Result<i32> {
    use crate::validate::file::{eval_item, read_entries, validate_entries, FileJob};
    let project = ProjectFile::load(&layout.project_file())?;
    let file = read_entries(&a.file)?;
    if file.entries.is_empty() && file.rejects.is_empty() {
        bail!("{}: the file holds no entries", a.file.display());
    }
    let pins = source::Pins::load(&layout.sources().join("sources.toml"))?;
    // Every configured library version the entries name, with its pair, indexed and
    // opened; entries of any other library are rejected by the checks, unread.
    let mut trees = crate::slice::Trees::default();
    let mut loaded = Vec::new();
    let mut prefixes = Vec::new();
    let wanted: std::collections::BTreeSet<(String, String)> = file
        .entries
        .iter()
        .map(|(_, e)| (e.lib.clone(), e.version.clone()))
        .filter(|(l, v)| project.library.contains_key(l.as_str()) && pins.get(l, v).is_some())
        .collect();
    let mut scopes = Vec::new();
    for (lib, version) in &wanted {
        let mut libs = vec![(lib.clone(), version.clone())];
        libs.extend(pair_of(&project, lib, version)?);
        for (l, v) in libs {
            trees.add(&l, &source::tree_path(&layout.sources(), &l, &v)?);
            prefixes.push(project.library(&l)?.api_prefix.clone());
            let ix = load_index(layout, &project, &l, &v, true)?;
            loaded.push(ix.index);
            scopes.push(ix.scope);
        }
    }
    let refs: Vec<&crate::model::LibraryIndex> = loaded.iter().collect();
    // The facts of every API the entries name, for the fact check.
    let mut facts = crate::facts::names_table(&refs);
    for (lib, version) in &wanted {
        let Some(k) = refs
            .iter()
            .position(|ix| ix.lib == *lib && ix.version == *version)
        else {
            continue;
        };
        let pair = pair_of(&project, lib, version)?.and_then(|(l, v)| {
            refs.iter()
                .find(|ix| ix.lib == l && ix.version == v)
                .copied()
        });
        let graph = CodeGraph::new(refs[k], pair, &scopes[k]);
        let code = code_text(
            layout,
            &project,
            lib,
            version,
            pair.map(|p| (&p.lib, &p.version)),
        )?;
        let lcfg = project.library(lib)?;
        let reader = crate::facts::FactReader::new(&code, &lcfg.api_prefix, &lcfg.precisions);
        let named: std::collections::BTreeSet<&str> = file
            .entries
            .iter()
            .filter(|(_, e)| e.lib == *lib && e.version == *version)
            .flat_map(|(_, e)| e.apis.iter().map(String::as_str))
            .collect();
        // Read as `extract` reads them: one API per core.
        let todo: Vec<&crate::model::ApiFunction> = graph
            .api()
            .iter()
            .filter(|a| named.contains(a.name.as_str()) && !facts.apis.contains_key(&a.name))
            .collect();
        facts
            .apis
            .extend(crate::extract::read_facts(&todo, &graph, &reader, &refs).apis);
        // Kernels the answers name that none of those APIs launches: their claims are
        // judged by the device code of an API that does, as in a whole-library run.
        let answers = file
            .entries
            .iter()
            .filter(|(_, e)| e.lib == *lib && e.version == *version)
            .map(|(_, e)| e.answer.as_str());
        let more = crate::extract::launchers_to_read(answers, &facts, graph.api());
        let read = crate::extract::read_facts(&more, &graph, &reader, &refs).apis;
        facts.apis.extend(read);
    }
    let known = crate::validate::grounding::KnownNames::from_indexes(&refs, &prefixes)
        .with_trees(&trees)
        .with_system_headers();
    let mut eval = Vec::new();
    for p in &a.decontaminate {
        let mut set = crate::validate::dedup::EvalSet::named(&p.display().to_string());
        for v in crate::emit::read_jsonl::<serde_json::Value>(p)? {
            let (q, ans) = eval_item(&v);
            set.add(&q, &ans);
        }
        eval.push(set);
    }
    let n = file.entries.len() + file.rejects.len();
    let compiler = compiler_for(
        layout,
        &project,
        &wanted.iter().cloned().collect::<Vec<_>>(),
    )?;
    let mut earlier = Vec::new();
    for p in &a.against {
        earlier.extend(crate::emit::read_jsonl::<crate::model::Entry>(p)?);
    }
    let fact_index = crate::validate::factcheck::FactIndex::new(&facts);
    let templates = crate::question::load_templates(&layout.root.join(&project.extract.templates))?;
    let catalogue = crate::validate::provenance::Catalogue::new(&refs, template_keys(&templates));
    let outcome = validate_entries(
        file,
        &FileJob {
            grounding: crate::validate::Grounding {
                trees: &trees,
                known: &known,
                facts: Some(&fact_index),
                catalogue: &catalogue,
                shown: &crate::validate::ShownCache::default(),
            },
            pins: &pins,
            compiler: &compiler,
            earlier: &earlier,
            eval: &eval,
            threshold: a.threshold,
        },
    );
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| a.file.parent().unwrap_or(Path::new(".")).join("validated"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, lines: Vec<String>| -> Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, lines.into_iter().map(|l| l + "\n").collect::<String>())
            .with_context(|| format!("writing {}", p.display()))
    };
    write(
        "entries.jsonl",
        outcome
            .kept
            .iter()
            .map(|e| serde_json::to_string(e).expect("json"))
            .collect(),
    )?;
    write(
        "rejects.jsonl",
        outcome
            .rejects
            .iter()
            .map(|r| serde_json::to_string(r).expect("json"))
            .collect(),
    )?;
    let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in &outcome.rejects {
        *reasons.entry(r.reason.as_str()).or_default() += 1;
    }
    say!(
        "{n} entries: {} pass, {} rejected {reasons:?}; written to {}",
        outcome.kept.len(),
        outcome.rejects.len(),
        dir.display()
    );
    say!(
        "  fact check: {} claims of {} entries compared with the facts of their APIs, {} contradicted",
        outcome.fact_check.claims,
        outcome.fact_check.answers,
        outcome.fact_check.contradicted
    );
    for (set, items, by_q, by_a) in &outcome.contamination {
        say!("  eval set {set}: {items} items; {by_q} entries overlap by question, {by_a} by answer (13-word sequences)");
    }
    for r in &outcome.rejects {
        say!("  {} {}: {}", r.id, r.reason, r.detail);
    }
    Ok(if outcome.kept.is_empty() { 1 } else { 0 })
}

/// The ROCm compiler with the public headers of the given releases (unpacked by
/// `scripts/setup-hip.sh` into `rocm_sources/headers/`), caching in `out/cache/`.
/// CPU time of this process so far (all its threads, not its children), from
/// `/proc/self/stat` (`utime` + `stime`, in the kernel's fixed 100 Hz ticks); `None`
/// where there is no such file.
fn own_cpu_ms() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10)
}

fn compiler_for(
    layout: &Layout,
    project: &ProjectFile,
    libs: &[(String, String)],
) -> Result<crate::validate::compile::Compiler> {
    use crate::validate::compile::{CompileOptions, Compiler, Toolchain};
    let cache = layout.root.join("out").join("cache");
    std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
    let tc = Toolchain::detect_cached(
        project.validate.targets.as_deref(),
        Some(&cache.join("compile.sqlite")),
    )
    .context(
        "the compile check needs the ROCm compiler (run scripts/setup-hip.sh) and targets it accepts ([validate] targets in rocqa.toml)",
    )?;
    let include_dirs = libs
        .iter()
        .map(|(l, v)| {
            layout
                .sources()
                .join("headers")
                .join(format!("{l}-{v}"))
                .join("usr/include")
        })
        .filter(|d| d.is_dir())
        .collect();
    Ok(Compiler::new(
        tc,
        CompileOptions {
            include_dirs,
            ..Default::default()
        },
        Some(&cache.join("compile.sqlite")),
    )?)
}
