//! The `rocqa` binary end to end on the fixture library (`tests/fixtures/minilib`).
//!
//! Each test makes its own project folder in a tempdir: the fixture `rocqa.toml` and
//! allowlists, and (for most tests) both fixture trees fetched with
//! `rocqa sources fetch --from-dir`. Expected positions are read from the fixture
//! files themselves, so editing a fixture does not silently break these tests.
//! Regression tests are named after what they pin.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use tempfile::TempDir;

const VERSION: &str = "1.0";

fn minilib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilib")
}

fn fixture_tree(lib: &str) -> PathBuf {
    minilib().join("trees").join(lib)
}

/// 1-based line of the first line of `file` containing `needle` (outside `expect:`
/// comments).
fn line_of(file: &Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(file).expect("fixture file readable");
    text.lines()
        .position(|l| l.contains(needle) && !l.contains("expect:"))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("{} has no line with {needle:?}", file.display()))
}

/// A rocqa project folder in a tempdir.
struct Project {
    dir: TempDir,
}

impl Project {
    /// The fixture `rocqa.toml` and allowlists, nothing fetched.
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::copy(minilib().join("rocqa.toml"), dir.path().join("rocqa.toml"))
            .expect("copy rocqa.toml");
        std::fs::create_dir(dir.path().join("allowlists")).expect("mkdir allowlists");
        for lib in ["rocfx", "rocfxsolver"] {
            let name = format!("{lib}.toml");
            std::fs::copy(
                minilib().join("allowlists").join(&name),
                dir.path().join("allowlists").join(&name),
            )
            .expect("copy allowlist");
        }
        Project { dir }
    }

    /// Both fixture trees fetched and pinned.
    fn fetched() -> Project {
        let p = Project::new();
        p.fetch("rocfx").success();
        p.fetch("rocfxsolver").success();
        p
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn allowlist(&self, lib: &str) -> PathBuf {
        self.root().join("allowlists").join(format!("{lib}.toml"))
    }

    /// `rocqa --root <project>` with a quiet log.
    fn rocqa(&self) -> Command {
        let mut c = Command::cargo_bin("rocqa").expect("the rocqa binary is built");
        c.arg("--root").arg(self.root()).env_remove("ROCQA_LOG");
        c
    }

    fn fetch(&self, lib: &str) -> assert_cmd::assert::Assert {
        self.rocqa()
            .args([
                "sources",
                "fetch",
                "--lib",
                lib,
                "--version",
                VERSION,
                "--from-dir",
            ])
            .arg(fixture_tree(lib))
            .assert()
    }

    fn stdout(&self, args: &[&str]) -> String {
        let out = self.rocqa().args(args).assert().success();
        String::from_utf8(out.get_output().stdout.clone()).expect("UTF-8 output")
    }
}

// ---------------------------------------------------------------------------------
// sources fetch
// ---------------------------------------------------------------------------------

#[test]
fn fetch_from_dir_pins_both_trees_with_dir_origin_and_sha256() {
    let p = Project::new();
    let mut printed = Vec::new();
    for lib in ["rocfx", "rocfxsolver"] {
        let out = p.fetch(lib).success();
        let text = String::from_utf8(out.get_output().stdout.clone()).expect("UTF-8");
        assert!(
            text.starts_with(&format!("{lib} {VERSION} fetched sha256=")),
            "{text}"
        );
        let sha = text
            .split("sha256=")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .expect("sha256 printed")
            .to_string();
        printed.push((lib, sha));
        assert!(
            p.root()
                .join("rocm_sources")
                .join(format!("{lib}-{VERSION}"))
                .join("library/include")
                .is_dir(),
            "{lib}: tree not copied into rocm_sources"
        );
    }
    let pins: toml::Value = toml::from_str(
        &std::fs::read_to_string(p.root().join("rocm_sources/sources.toml"))
            .expect("sources.toml written"),
    )
    .expect("sources.toml is TOML");
    let pins = pins["pin"].as_array().expect("[[pin]] tables");
    assert_eq!(pins.len(), 2, "{pins:?}");
    for ((lib, sha), pin) in printed.iter().zip(pins) {
        assert_eq!(pin["lib"].as_str(), Some(*lib));
        assert_eq!(pin["version"].as_str(), Some(VERSION));
        assert_eq!(
            pin["dir"].as_str(),
            Some(format!("{lib}-{VERSION}").as_str())
        );
        assert_eq!(pin["origin"]["kind"].as_str(), Some("dir"), "{pin:?}");
        let origin = std::fs::canonicalize(fixture_tree(lib)).expect("fixture tree");
        assert_eq!(
            pin["origin"]["path"].as_str(),
            Some(origin.to_string_lossy().as_ref())
        );
        let pinned = pin["sha256"].as_str().expect("sha256 recorded");
        assert_eq!(pinned, sha, "{lib}: printed and pinned sha256 differ");
        assert!(
            pinned.len() == 64 && pinned.bytes().all(|b| b.is_ascii_hexdigit()),
            "{lib}: not a SHA-256: {pinned}"
        );
    }
    assert_ne!(printed[0].1, printed[1].1, "two different trees, one hash");
}

#[test]
fn second_fetch_says_already_pinned_and_leaves_the_pins_alone() {
    let p = Project::fetched();
    let before = std::fs::read(p.root().join("rocm_sources/sources.toml")).expect("pins");
    p.fetch("rocfx")
        .success()
        .stdout(predicate::str::contains("rocfx 1.0 already pinned sha256="));
    let after = std::fs::read(p.root().join("rocm_sources/sources.toml")).expect("pins");
    assert_eq!(before, after, "a no-op fetch rewrote sources.toml");
}

// ---------------------------------------------------------------------------------
// index
// ---------------------------------------------------------------------------------

/// `N files (P parsed, C from cache)` from the first line of `rocqa index`.
fn file_counts(text: &str) -> (usize, usize, usize) {
    let first = text.lines().next().unwrap_or_default();
    let nums: Vec<usize> = first
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    // "rocfx 1.0: 32 files (32 parsed, 0 from cache), 0.1 MB" -> 1, 0, 32, 32, 0, 0, 1
    assert!(nums.len() >= 5, "unexpected first line: {first}");
    (nums[2], nums[3], nums[4])
}

#[test]
fn index_prints_counts_then_serves_everything_from_cache() {
    let p = Project::fetched();
    let args = ["index", "--lib", "rocfx", "--version", VERSION];
    let first = p.stdout(&args);
    let (files, parsed, cached) = file_counts(&first);
    assert!(files > 20, "{first}");
    assert_eq!((parsed, cached), (files, 0), "{first}");
    assert!(
        first.contains(&format!("{files} files ({files} parsed, 0 from cache)")),
        "{first}"
    );
    for want in [
        "7 kernels, 7 device helpers, 18 from macro expansions",
        "7 launch sites",
        "public API: 26 functions (3 _64), 9 families",
        "files with parse errors left: 0",
    ] {
        assert!(first.contains(want), "missing {want:?} in:\n{first}");
    }
    let second = p.stdout(&args);
    assert_eq!(file_counts(&second), (files, 0, files), "{second}");
    assert!(
        second.contains(&format!("{files} files (0 parsed, {files} from cache)")),
        "{second}"
    );
    // The counts themselves do not change when they come from the cache.
    assert_eq!(first.lines().nth(1), second.lines().nth(1));
    assert_eq!(first.lines().nth(3), second.lines().nth(3));

    let json: serde_json::Value = serde_json::from_str(&p.stdout(&[
        "index",
        "--lib",
        "rocfx",
        "--version",
        VERSION,
        "--json",
    ]))
    .expect("index --json is JSON");
    assert_eq!(json["cached"], json["files"]);
    assert_eq!(json["parsed"], 0);
    assert_eq!(json["api_functions"], 26);
}

#[test]
fn index_no_cache_parses_everything_again() {
    let p = Project::fetched();
    p.stdout(&["index", "--lib", "rocfxsolver", "--version", VERSION]);
    // The precise index's files share the folder; a precise parse may be reading them.
    let cache = p
        .root()
        .join(format!("rocm_sources/.cache/rocfxsolver-{VERSION}"));
    let precise = cache.join("precise-gen/rocfxsolver-export.h");
    std::fs::create_dir_all(precise.parent().unwrap()).expect("mkdir");
    std::fs::write(&precise, "#pragma once\n").expect("write");
    let again = p.stdout(&[
        "index",
        "--lib",
        "rocfxsolver",
        "--version",
        VERSION,
        "--no-cache",
    ]);
    let (files, parsed, cached) = file_counts(&again);
    assert_eq!((parsed, cached), (files, 0), "{again}");
    assert!(
        precise.exists(),
        "--no-cache removed the precise index's files"
    );
}

#[test]
fn index_after_editing_one_file_reparses_only_that_file() {
    let p = Project::fetched();
    let args = ["index", "--lib", "rocfx", "--version", VERSION];
    let (files, _, _) = file_counts(&p.stdout(&args));
    let copy = p
        .root()
        .join("rocm_sources/rocfx-1.0/library/src/blas1/rocfx_copy.cpp");
    let mut text = std::fs::read_to_string(&copy).expect("fetched file");
    text.push_str("// edited after the fetch\n");
    std::fs::write(&copy, text).expect("edit");
    assert_eq!(file_counts(&p.stdout(&args)), (files, 1, files - 1));
}

// ---------------------------------------------------------------------------------
// api and graph
// ---------------------------------------------------------------------------------

#[test]
fn api_json_lists_the_declared_functions() {
    let p = Project::fetched();
    let api: serde_json::Value = serde_json::from_str(&p.stdout(&[
        "api",
        "--lib",
        "rocfx",
        "--version",
        VERSION,
        "--family",
        "scal",
        "--json",
    ]))
    .expect("api --json is JSON");
    let names: Vec<&str> = api
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names.len(), 13, "{names:?}");
    assert!(names.contains(&"rocfx_zdscal_strided_batched_64"));
    assert!(!names.contains(&"rocfx_saxpy"));
}

#[test]
fn graph_tree_names_launcher_kernel_and_the_stamping_macro_line() {
    let p = Project::fetched();
    let out = p.stdout(&[
        "graph",
        "--lib",
        "rocfx",
        "--version",
        VERSION,
        "--api",
        "rocfx_sscal",
    ]);
    let stamp = line_of(
        &fixture_tree("rocfx").join("library/src/blas1/rocfx_scal.cpp"),
        "INST_SCAL_C_API(rocfx_int);",
    );
    let launch = line_of(
        &fixture_tree("rocfx").join("library/src/blas1/rocfx_scal_kernels.hpp"),
        "ROCFX_LAUNCH_KERNEL((rocfx_scal_kernel",
    );
    assert!(out.starts_with("rocfx_sscal [api] library/include/internal/rocfx-functions.h:"));
    for want in [
        format!("-entry-> rocfx_sscal [function] library/src/blas1/rocfx_scal.cpp:{stamp}"),
        format!("@library/src/blas1/rocfx_scal.cpp:{stamp} via INST_SCAL_C_API"),
        "-> rocfx_internal_scal_launcher [function] library/src/blas1/rocfx_scal_kernels.hpp:"
            .to_string(),
        "-launch-> rocfx_scal_kernel [kernel] library/src/blas1/rocfx_scal_kernels.hpp:"
            .to_string(),
        format!("@library/src/blas1/rocfx_scal_kernels.hpp:{launch} via ROCFX_LAUNCH_KERNEL"),
        "-call-> rocfx_scal_calc [device]".to_string(),
    ] {
        assert!(out.contains(&want), "missing {want:?} in:\n{out}");
    }
    assert!(
        !out.contains("log_trace"),
        "denied symbol in the graph:\n{out}"
    );
}

#[test]
fn graph_json_parses_with_nodes_and_edges() {
    let p = Project::fetched();
    let g: serde_json::Value = serde_json::from_str(&p.stdout(&[
        "graph",
        "--lib",
        "rocfx",
        "--version",
        VERSION,
        "--api",
        "rocfx_sscal",
        "--format",
        "json",
    ]))
    .expect("graph --format json is JSON");
    let nodes = g["nodes"].as_array().expect("nodes");
    let edges = g["edges"].as_array().expect("edges");
    assert!(nodes.len() > 3 && !edges.is_empty(), "{g}");
    assert_eq!(nodes[0]["kind"], "api");
    assert_eq!(nodes[0]["name"], "rocfx_sscal");
    for e in edges {
        let (from, to) = (e["from"].as_u64().unwrap(), e["to"].as_u64().unwrap());
        assert!(
            (from as usize) < nodes.len() && (to as usize) < nodes.len(),
            "{e}"
        );
    }
    assert!(edges.iter().any(|e| e["kind"] == "launch"
        && nodes[e["to"].as_u64().unwrap() as usize]["name"] == "rocfx_scal_kernel"));
}

#[test]
fn graph_dot_starts_with_digraph() {
    let p = Project::fetched();
    let out = p.stdout(&[
        "graph",
        "--lib",
        "rocfx",
        "--version",
        VERSION,
        "--api",
        "rocfx_sscal",
        "--format",
        "dot",
    ]);
    assert!(out.starts_with("digraph"), "{out}");
    assert!(out.trim_end().ends_with('}'), "{out}");
    assert!(out.contains("rocfx_scal_kernel"), "{out}");
}

#[test]
fn graph_of_solver_api_crosses_into_the_pair_library() {
    let p = Project::fetched();
    let out = p.stdout(&[
        "graph",
        "--lib",
        "rocfxsolver",
        "--version",
        VERSION,
        "--api",
        "rocfxsolver_sgetrf",
    ]);
    assert!(
        out.contains("-cross-library-> rocfx_internal_scal_template [function] {rocfx}"),
        "{out}"
    );
    assert!(out.contains("rocfx_scal_kernel [kernel] {rocfx}"), "{out}");
}

#[test]
fn graph_stats_reach_100_percent_on_the_fixture() {
    let p = Project::fetched();
    for lib in ["rocfx", "rocfxsolver"] {
        let out = p.stdout(&["graph", "--lib", lib, "--version", VERSION, "--stats"]);
        assert!(
            out.lines().next().unwrap_or_default().ends_with(": 100.0%"),
            "{lib}:\n{out}"
        );
        assert!(
            out.contains("in-scope families not reaching device code: 0"),
            "{lib}:\n{out}"
        );
    }
    let json: serde_json::Value = serde_json::from_str(&p.stdout(&[
        "graph",
        "--lib",
        "rocfxsolver",
        "--version",
        VERSION,
        "--stats",
        "--format",
        "json",
    ]))
    .expect("stats JSON");
    assert_eq!(json["percent"], 100.0);
    assert_eq!(json["cross_library"], 7);
}

// ---------------------------------------------------------------------------------
// scope
// ---------------------------------------------------------------------------------

#[test]
fn scope_explain_names_allowlist_line_of_a_denied_symbol() {
    let p = Project::new();
    let line = line_of(&p.allowlist("rocfx"), "\"^log_\"");
    let out = p.stdout(&["scope", "--lib", "rocfx", "--explain", "log_trace"]);
    let want = format!(
        "symbol log_trace: cut from graphs ({}:{line}: symbols.deny = \"^log_\")",
        p.allowlist("rocfx").display()
    );
    assert!(out.contains(&want), "missing {want:?} in:\n{out}");
}

#[test]
fn scope_explain_names_allowlist_line_of_a_denied_path() {
    let p = Project::new();
    let line = line_of(&p.allowlist("rocfx"), "library/src/deprecated/**");
    let path = "library/src/deprecated/rocfx_old_scal.cpp";
    let out = p.stdout(&["scope", "--lib", "rocfx", "--explain", path]);
    let want = format!(
        "path {path}: out of scope ({}:{line}: paths.deny = \"library/src/deprecated/**\")",
        p.allowlist("rocfx").display()
    );
    assert!(out.contains(&want), "missing {want:?} in:\n{out}");
}

#[test]
fn scope_explain_names_allowlist_line_of_a_denied_family_and_an_opaque_leaf() {
    let p = Project::new();
    let fam = line_of(&p.allowlist("rocfx"), "(create|destroy)_handle");
    let out = p.stdout(&["scope", "--lib", "rocfx", "--explain", "create_handle"]);
    assert!(
        out.contains("family create_handle: out of scope ("),
        "{out}"
    );
    assert!(
        out.contains(&format!("rocfx.toml:{fam}: families.deny")),
        "{out}"
    );
    let out = p.stdout(&["scope", "--lib", "rocfx", "--explain", "rocfx_call_tensile"]);
    assert!(
        out.contains("symbol rocfx_call_tensile: opaque leaf (Tensile backend"),
        "{out}"
    );
}

// ---------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------

#[test]
fn bad_allowlist_regex_fails_with_exit_2_naming_file_line_and_field() {
    let p = Project::fetched();
    let file = p.allowlist("rocfx");
    let text = std::fs::read_to_string(&file).expect("allowlist");
    let line = line_of(&file, "\"check_numerics\"");
    std::fs::write(
        &file,
        text.replace("\"check_numerics\"", "\"check_numerics(\""),
    )
    .expect("write bad allowlist");
    let want = format!(
        "error: {}: line {line}: field `checks.numerics`: bad regex",
        file.display()
    );
    for args in [
        vec!["index", "--lib", "rocfx", "--version", VERSION],
        vec![
            "graph",
            "--lib",
            "rocfx",
            "--version",
            VERSION,
            "--api",
            "rocfx_sscal",
        ],
        vec!["scope", "--lib", "rocfx", "--explain", "log_trace"],
    ] {
        p.rocqa()
            .args(&args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::starts_with(want.clone()));
    }
}

#[test]
fn unknown_lib_fails_with_exit_2_naming_the_known_libraries() {
    let p = Project::fetched();
    for args in [
        vec!["index", "--lib", "rocfy"],
        vec!["graph", "--lib", "rocfy", "--api", "rocfy_sscal"],
        vec!["api", "--lib", "rocfy"],
        vec!["sources", "fetch", "--lib", "rocfy", "--from-dir", "."],
    ] {
        p.rocqa()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("error: unknown library `rocfy`"))
            .stderr(predicate::str::contains("rocfx, rocfxsolver"));
    }
}

#[test]
fn graph_on_a_version_never_fetched_says_to_run_sources_fetch() {
    let p = Project::fetched();
    // A second configured version whose tree was never fetched.
    let toml = p.root().join("rocqa.toml");
    let mut text = std::fs::read_to_string(&toml).expect("rocqa.toml");
    text.push_str("\n[library.rocfx.versions.\"2.0\"]\n");
    std::fs::write(&toml, text).expect("write rocqa.toml");
    p.rocqa()
        .args([
            "graph",
            "--lib",
            "rocfx",
            "--version",
            "2.0",
            "--api",
            "rocfx_sscal",
        ])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "run `rocqa sources fetch --lib rocfx --version 2.0`",
        ));
}

#[test]
fn graph_of_solver_without_its_pair_says_to_fetch_the_pair() {
    let p = Project::new();
    p.fetch("rocfxsolver").success();
    p.rocqa()
        .args([
            "graph",
            "--lib",
            "rocfxsolver",
            "--version",
            VERSION,
            "--api",
            "rocfxsolver_sgetrf",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "run `rocqa sources fetch --lib rocfx --version 1.0`",
        ));
}

#[test]
fn graph_of_unknown_api_points_to_the_api_command() {
    let p = Project::fetched();
    p.rocqa()
        .args([
            "graph",
            "--lib",
            "rocfx",
            "--version",
            VERSION,
            "--api",
            "rocfx_sgone",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "rocfx_sgone: not a public API function of rocfx 1.0",
        ))
        .stderr(predicate::str::contains("rocqa api --lib rocfx"));
}

#[test]
fn unknown_version_fails_naming_the_known_versions() {
    let p = Project::fetched();
    p.rocqa()
        .args(["index", "--lib", "rocfx", "--version", "9.9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown version rocfx 9.9"))
        .stderr(predicate::str::contains("knows 1.0"));
}

// ---------------------------------------------------------------------------------
// Regressions: each test is named after the bug it pins
// ---------------------------------------------------------------------------------

/// `ConfigError::Read` prints its `source` in its own message *and* exposes it as the
/// error source, so the CLI's `{:#}` cause chain says the OS error twice:
/// `...rocfxsolver.toml: cannot read: No such file or directory (os error 2): No such
/// file or directory (os error 2)`.
#[test]

fn missing_allowlist_error_states_the_os_error_once() {
    let p = Project::fetched();
    std::fs::remove_file(p.allowlist("rocfxsolver")).expect("remove allowlist");
    let out = p
        .rocqa()
        .args([
            "graph",
            "--lib",
            "rocfxsolver",
            "--version",
            VERSION,
            "--stats",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("allowlists/rocfxsolver.toml: cannot read"),
        "{err}"
    );
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
}

/// `scope --lib` reads `allowlists/<lib>.toml` without asking `rocqa.toml` whether the
/// library exists, so a typo gets "cannot read" instead of the list of known libraries
/// every other command gives.
#[test]

fn scope_with_unknown_lib_names_the_known_libraries() {
    let p = Project::new();
    p.rocqa()
        .args(["scope", "--lib", "rocfy", "--explain", "log_trace"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("error: unknown library `rocfy`"))
        .stderr(predicate::str::contains("rocfx, rocfxsolver"));
}
