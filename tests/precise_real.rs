//! The precise (libclang) graph reproduces the paths traced by hand in FACTS.md, on the
//! real rocBLAS 6.4.4 and rocSOLVER 6.4.3 trees. Each test parses only the units the
//! API's fast graph touches (its `.cpp` files and two includers of each header), the
//! way `rocqa graph --precise` does; units are cached under `rocm_sources/.cache`.
//! Run with `cargo test --release --features real-sources --test precise_real`.
#![cfg(feature = "real-sources")]

use std::path::PathBuf;

use rocqa::config::{Layout, ProjectFile, Scope};
use rocqa::graph::{compare, CodeGraph};
use rocqa::index::precise::{index_precise, pair_headers, units, PreciseSetup, PreciseStats};
use rocqa::index::{index_tree, with_build_defines};
use rocqa::model::{EdgeKind, InterfaceGraph, LibraryIndex, NodeKind};

mod common;
use common::traced::{assert_at, edge, node, strsm_three_ways_to_gemm};

fn layout() -> Layout {
    Layout {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

struct Loaded {
    index: LibraryIndex,
    scope: Scope,
    cfg: rocqa::config::LibraryConfig,
    tree: PathBuf,
    pair: Option<(String, String)>,
}

fn load(lib: &str, version: &str) -> Loaded {
    let l = layout();
    let project = ProjectFile::load(&l.project_file()).expect("rocqa.toml loads");
    let scope = Scope::load(&l.scope_file(lib)).expect("allowlist loads");
    let tree = rocqa::source::tree_path(&l.sources(), lib, version)
        .unwrap_or_else(|e| panic!("{e}\n(run scripts/setup.sh to fetch the real sources)"));
    let pair = project.pair(lib, version).expect("pair");
    let pair_tree = pair.as_ref().map(|(pl, pv)| {
        (
            pl.clone(),
            rocqa::source::tree_path(&l.sources(), pl, pv).unwrap(),
        )
    });
    let cfg = with_build_defines(
        lib,
        &tree,
        project.library(lib).unwrap(),
        pair_tree.as_ref().map(|(pl, t)| (pl.as_str(), t.as_path())),
    );
    let (index, _) = index_tree(
        lib,
        version,
        &tree,
        &cfg,
        &scope,
        Some(&l.index_cache(lib, version)),
    )
    .expect("fast index");
    Loaded {
        index,
        scope,
        cfg,
        tree,
        pair,
    }
}

/// The API's graph over the fast and over the precise index (with the stats of the
/// precise run).
fn graphs(lib: &str, version: &str, api: &str) -> (InterfaceGraph, InterfaceGraph, PreciseStats) {
    let main = load(lib, version);
    let pair = main.pair.as_ref().map(|(pl, pv)| load(pl, pv));
    let fast = CodeGraph::new(&main.index, pair.as_ref().map(|p| &p.index), &main.scope);
    let a = main
        .index
        .api
        .iter()
        .find(|a| a.name == api)
        .unwrap_or_else(|| panic!("{api} not discovered"));
    let all = units(&main.tree, &main.scope);
    let sel = compare::units_touched(&fast, &[a], &main.index, &all, 2);
    let l = layout();
    let setup = PreciseSetup {
        lib,
        version,
        tree: &main.tree,
        cfg: &main.cfg,
        pair_headers: pair_headers(
            &l.sources(),
            main.pair.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
        ),
        cache_dir: &l.index_cache(lib, version),
    };
    let (pidx, stats) =
        index_precise(&setup, &main.scope, &main.index, Some(&sel)).expect("precise index");
    println!(
        "{api}: {} units ({} parsed, {} cached; {} with errors, {} failed), {} ms",
        stats.selected, stats.parsed, stats.cached, stats.with_errors, stats.failed, stats.millis
    );
    let precise = CodeGraph::new(&pidx, pair.as_ref().map(|p| &p.index), &main.scope);
    (fast.interface(a), precise.interface(a), stats)
}

fn kernels(g: &InterfaceGraph) -> Vec<&str> {
    g.nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Kernel)
        .map(|n| n.name.as_str())
        .collect()
}

/// Every kernel the fast graph reaches, the precise one reaches too.
fn same_kernels(fast: &InterfaceGraph, precise: &InterfaceGraph) {
    let p = kernels(precise);
    let missing: Vec<&str> = kernels(fast)
        .into_iter()
        .filter(|k| !p.contains(k))
        .collect();
    assert!(
        missing.is_empty(),
        "{}: kernels of the fast graph missing from the precise one: {missing:?}",
        fast.api.name
    );
}

#[test]
fn sscal_path_as_traced() {
    let (fast, g, stats) = graphs("rocblas", "6.4.4", "rocblas_sscal");
    assert_eq!(stats.failed, 0, "{:?}", stats.problems);
    let (kind, file, line, _) = edge(&g, "rocblas_sscal", "rocblas_sscal");
    assert_eq!(
        (kind, file.as_str(), line),
        (EdgeKind::Entry, "library/src/blas1/rocblas_scal.cpp", 27)
    );
    assert_at(
        node(&g, "rocblas_scal_impl"),
        "library/src/blas1/rocblas_scal_imp.hpp",
        52,
    );
    assert_at(
        node(&g, "rocblas_internal_scal_template"),
        "library/src/blas1/rocblas_scal_kernels.cpp",
        32,
    );
    assert_at(
        node(&g, "rocblas_internal_scal_launcher"),
        "library/src/blas1/rocblas_scal_kernels.hpp",
        184,
    );
    let k = node(&g, "rocblas_scal_kernel");
    assert_eq!((k.kind, k.start_line, k.line), (NodeKind::Kernel, 26, 28));
    let (kind, file, line, _) = edge(&g, "rocblas_internal_scal_launcher", "rocblas_scal_kernel");
    assert_eq!(
        (kind, file.as_str(), line),
        (
            EdgeKind::Launch,
            "library/src/blas1/rocblas_scal_kernels.hpp",
            293
        )
    );
    // The numerics check stays a typed edge.
    assert_eq!(
        edge(
            &g,
            "rocblas_scal_impl",
            "rocblas_internal_check_numerics_vector_template"
        )
        .0,
        EdgeKind::CheckNumerics
    );
    same_kernels(&fast, &g);
}

#[test]
fn dgemv_path_as_traced() {
    let (fast, g, stats) = graphs("rocblas", "6.4.4", "rocblas_dgemv");
    assert_eq!(stats.failed, 0, "{:?}", stats.problems);
    assert_at(
        node(&g, "rocblas_gemv_impl"),
        "library/src/blas2/rocblas_gemv_imp.hpp",
        42,
    );
    assert_at(
        node(&g, "rocblas_internal_gemv_launcher"),
        "library/src/blas2/rocblas_gemv_kernels.cpp",
        119,
    );
    edge(&g, "rocblas_gemv_impl", "rocblas_internal_gemv_launcher");
    // Launched through the function-local macro gemvn_KARGS, expanded by clang.
    let (kind, file, line, _) = edge(&g, "rocblas_internal_gemv_launcher", "rocblas_gemvn_kernel");
    assert_eq!(
        (kind, file.as_str(), line),
        (
            EdgeKind::Launch,
            "library/src/blas2/rocblas_gemv_kernels.cpp",
            246
        )
    );
    assert_at(
        node(&g, "rocblas_gemvn_kernel"),
        "library/src/blas2/gemv_device.hpp",
        1023,
    );
    same_kernels(&fast, &g);
}

#[test]
fn strsm_paths_as_traced() {
    let (_, g, _) = graphs("rocblas", "6.4.4", "rocblas_strsm");
    strsm_three_ways_to_gemm(&g);
}

#[test]
fn sgetrf_path_as_traced_and_into_rocblas() {
    let (fast, g, _) = graphs("rocsolver", "6.4.3", "rocsolver_sgetrf");
    let (kind, file, _, _) = edge(&g, "rocsolver_sgetrf", "rocsolver_sgetrf");
    assert_eq!(
        (kind, file.as_str()),
        (EdgeKind::Entry, "library/src/lapack/roclapack_getrf.cpp")
    );
    edge(&g, "rocsolver_sgetrf", "rocsolver_getrf_impl");
    edge(&g, "rocsolver_getrf_impl", "rocsolver_getrf_template");
    edge(&g, "rocsolver_getf2_template", "getf2_iamax");
    edge(&g, "rocsolver_getf2_template", "getf2_run_small");
    assert_eq!(
        node(&g, "getf2_iamax").file,
        "library/src/lapack/roclapack_getf2.hpp"
    );
    assert!(
        g.edges.iter().any(|e| e.kind == EdgeKind::CrossLibrary
            && g.nodes[e.to].name == "rocblas_internal_scal_template"),
        "no cross edge into rocBLAS scal"
    );
    same_kernels(&fast, &g);
}

#[test]
fn sgetf2_reaches_the_specialized_kernels() {
    let (_, g, _) = graphs("rocsolver", "6.4.3", "rocsolver_sgetf2");
    let k = kernels(&g);
    for want in [
        "getf2_small_kernel",
        "getf2_panel_kernel",
        "getf2_scale_update_kernel",
    ] {
        assert!(k.contains(&want), "{want} missing; kernels: {k:?}");
        assert_eq!(
            node(&g, want).file,
            "library/src/specialized/roclapack_getf2_specialized_kernels.hpp"
        );
    }
}
