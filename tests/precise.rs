//! The precise (libclang) index on the fixture library: where the fast index is wrong
//! and the compiler right, that both agree elsewhere, that units which do not parse
//! fall back to the fast index and are counted, and that results are cached per unit.
//! Needs libclang-15 (`scripts/setup.sh` installs `libclang-15-dev`) and the HIP
//! headers (`scripts/setup-hip.sh`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rocqa::config::{ProjectFile, Scope};
use rocqa::graph::{compare, CodeGraph};
use rocqa::index::precise::{index_precise, PreciseSetup, PreciseStats};
use rocqa::index::{index_tree, with_build_defines};
use rocqa::model::{InterfaceGraph, LibraryIndex};

const LIB: &str = "rocfx";
const VERSION: &str = "1.0";

fn minilib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilib")
}

struct Both {
    fast: LibraryIndex,
    precise: LibraryIndex,
    stats: PreciseStats,
    scope: Scope,
}

/// Fast and precise index of a copy of the rocfx tree at `tree` (cache in `cache`).
fn index_both(tree: &Path, cache: &Path, select: Option<&[String]>) -> Both {
    let project = ProjectFile::load(&minilib().join("rocqa.toml")).expect("fixture rocqa.toml");
    let scope = Scope::load(&minilib().join("allowlists/rocfx.toml")).expect("fixture allowlist");
    let cfg = with_build_defines(LIB, tree, project.library(LIB).unwrap(), None);
    let (fast, _) = index_tree(LIB, VERSION, tree, &cfg, &scope, None).expect("fast index");
    let setup = PreciseSetup {
        lib: LIB,
        version: VERSION,
        tree,
        cfg: &cfg,
        pair_headers: None,
        cache_dir: cache,
    };
    let (precise, stats) = index_precise(&setup, &scope, &fast, select).expect("precise index");
    Both {
        fast,
        precise,
        stats,
        scope,
    }
}

fn copy_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = minilib().join("trees").join(LIB);
    for e in walkdir::WalkDir::new(&src)
        .into_iter()
        .filter_map(Result::ok)
    {
        let rel = e.path().strip_prefix(&src).unwrap();
        let to = dir.path().join("tree").join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    dir
}

fn graph(idx: &LibraryIndex, scope: &Scope, api: &str) -> InterfaceGraph {
    let a = idx.api.iter().find(|a| a.name == api).expect("api");
    CodeGraph::new(idx, None, scope).interface(a)
}

fn edges(g: &InterfaceGraph) -> BTreeSet<String> {
    compare::edge_names(g)
}

#[test]
fn the_compiler_picks_the_overload_the_fast_index_cannot_tell_apart() {
    let d = copy_tree();
    let b = index_both(&d.path().join("tree"), &d.path().join("cache"), None);
    let fast = edges(&graph(&b.fast, &b.scope, "rocfx_scopy"));
    let precise = edges(&graph(&b.precise, &b.scope, "rocfx_scopy"));
    // rocfx_copy_arg_check(n, x) with a `const float*`: two overloads of one file, same
    // arity, no pointer arrays. The fast index follows both ...
    for e in [
        "rocfx_copy_arg_check -> rocfx_copy_check_float",
        "rocfx_copy_arg_check -> rocfx_copy_check_double",
    ] {
        assert!(fast.contains(e), "fast graph lacks {e}: {fast:?}");
    }
    // ... the compiler resolves the call to the float one only.
    assert!(
        precise.contains("rocfx_copy_arg_check -> rocfx_copy_check_float"),
        "{precise:?}"
    );
    assert!(
        !precise.contains("rocfx_copy_arg_check -> rocfx_copy_check_double"),
        "{precise:?}"
    );
    // And the launch through triple chevrons is the compiler's too.
    assert!(
        precise.contains("rocfx_copy_launcher -> rocfx_copy_kernel"),
        "{precise:?}"
    );
    let call = b
        .precise
        .files
        .iter()
        .find(|f| f.path == "library/src/blas1/rocfx_copy.cpp")
        .and_then(|f| f.calls.iter().find(|c| c.callee == "rocfx_copy_arg_check"))
        .expect("call recorded");
    assert_eq!((call.line, call.resolved.len()), (36, 1), "{call:?}");
}

#[test]
fn both_indexes_agree_on_the_macro_made_paths() {
    let d = copy_tree();
    let b = index_both(&d.path().join("tree"), &d.path().join("cache"), None);
    let fast = CodeGraph::new(&b.fast, None, &b.scope);
    let precise = CodeGraph::new(&b.precise, None, &b.scope);
    let apis: Vec<_> = b
        .fast
        .api
        .iter()
        .filter(|a| b.scope.family_in(&a.family))
        .collect();
    let c = compare::compare(&fast, &precise, &apis);
    for f in &c.families {
        println!(
            "{}: both {}, fast only {:?}, precise only {:?}",
            f.family, f.both, f.fast_only, f.precise_only
        );
    }
    // IMPL-style entry points, ROCFX_API pasting and the launch macro: the same edges
    // through the real preprocessor as through the fast one.
    let scal = c
        .families
        .iter()
        .find(|f| f.family == "scal")
        .expect("scal");
    for e in [
        "rocfx_sscal -> rocfx_scal_impl",
        "rocfx_scal_impl -> rocfx_internal_scal_template",
        "rocfx_internal_scal_launcher -> rocfx_scal_kernel",
    ] {
        assert!(
            !scal.fast_only.contains(&e.to_string()) && !scal.precise_only.contains(&e.to_string()),
            "{e} not in both: {scal:?}"
        );
    }
    assert!(c.both > 0 && c.agreement > 0.0, "{c:?}");
    let copy = c
        .families
        .iter()
        .find(|f| f.family == "copy")
        .expect("copy");
    assert_eq!(
        copy.fast_only,
        vec!["rocfx_copy_arg_check -> rocfx_copy_check_double".to_string()],
        "the one known fast-index error of the copy family"
    );
}

#[test]
fn a_unit_that_does_not_parse_falls_back_to_the_fast_index() {
    let d = copy_tree();
    let tree = d.path().join("tree");
    let unit = "library/src/blas1/rocfx_copy.cpp";
    let p = tree.join(unit);
    let text = std::fs::read_to_string(&p).unwrap();
    // A missing header is fatal for the compiler, not for the fast index.
    std::fs::write(
        &p,
        format!("{text}#include <rocfx_header_the_build_never_had.h>\n"),
    )
    .unwrap();
    let b = index_both(&tree, &d.path().join("cache"), Some(&[unit.to_string()]));
    assert_eq!((b.stats.selected, b.stats.failed), (1, 1), "{:?}", b.stats);
    let (u, why) = &b.stats.problems[0];
    assert_eq!(u, unit);
    assert!(why.contains("rocfx_header_the_build_never_had.h"), "{why}");
    assert!(b.stats.degraded_files >= 1, "{:?}", b.stats);
    // The fast index's reading of the file stands in, resolving by name.
    let g = edges(&graph(&b.precise, &b.scope, "rocfx_scopy"));
    assert!(
        g.contains("rocfx_copy_launcher -> rocfx_copy_kernel"),
        "{g:?}"
    );
}

#[test]
fn units_are_cached_and_reparsed_when_a_file_they_read_changes() {
    let d = copy_tree();
    let tree = d.path().join("tree");
    let cache = d.path().join("cache");
    let units = [
        "library/src/blas1/rocfx_copy.cpp".to_string(),
        "library/src/blas1/rocfx_scal.cpp".to_string(),
    ];
    let first = index_both(&tree, &cache, Some(&units)).stats;
    assert_eq!((first.parsed, first.cached), (2, 0), "{first:?}");
    let again = index_both(&tree, &cache, Some(&units)).stats;
    assert_eq!((again.parsed, again.cached), (0, 2), "{again:?}");
    // rocfx_copy_check.hpp is read by the copy unit only.
    let h = tree.join("library/src/blas1/rocfx_copy_check.hpp");
    let text = std::fs::read_to_string(&h).unwrap();
    std::fs::write(&h, format!("{text}// edited\n")).unwrap();
    let edited = index_both(&tree, &cache, Some(&units)).stats;
    assert_eq!((edited.parsed, edited.cached), (1, 1), "{edited:?}");
}

/// A unit that fails for a file it could not find is not cached as failed: what it
/// lacked is not among the files it read, so its arrival would go unseen.
#[test]
fn a_failed_unit_is_parsed_again_once_what_it_lacked_is_there() {
    let d = copy_tree();
    let tree = d.path().join("tree");
    let cache = d.path().join("cache");
    let units = ["library/src/blas1/rocfx_copy.cpp".to_string()];
    let unit = tree.join(&units[0]);
    let text = std::fs::read_to_string(&unit).unwrap();
    std::fs::write(&unit, format!("#include \"generated_later.hpp\"\n{text}")).unwrap();
    let failed = index_both(&tree, &cache, Some(&units)).stats;
    assert_eq!((failed.parsed, failed.failed), (1, 1), "{failed:?}");
    std::fs::write(
        tree.join("library/src/blas1/generated_later.hpp"),
        "#pragma once\n",
    )
    .unwrap();
    let again = index_both(&tree, &cache, Some(&units)).stats;
    assert_eq!(
        (again.parsed, again.cached, again.failed),
        (1, 0, 0),
        "{again:?}"
    );
}

#[test]
fn a_unit_outside_the_tree_is_refused_by_name() {
    let d = copy_tree();
    let tree = d.path().join("tree");
    let project = ProjectFile::load(&minilib().join("rocqa.toml")).unwrap();
    let scope = Scope::load(&minilib().join("allowlists/rocfx.toml")).unwrap();
    let cfg = with_build_defines(LIB, &tree, project.library(LIB).unwrap(), None);
    let (fast, _) = index_tree(LIB, VERSION, &tree, &cfg, &scope, None).unwrap();
    let setup = PreciseSetup {
        lib: LIB,
        version: VERSION,
        tree: &tree,
        cfg: &cfg,
        pair_headers: None,
        cache_dir: &d.path().join("cache"),
    };
    let err = index_precise(
        &setup,
        &scope,
        &fast,
        Some(&["library/src/nope.cpp".into()]),
    )
    .map(|_| ())
    .expect_err("refused")
    .to_string();
    assert!(
        err.contains("library/src/nope.cpp") && err.contains("translation unit"),
        "{err}"
    );
}
