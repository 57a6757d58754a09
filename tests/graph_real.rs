//! Graph accuracy on the real rocBLAS 6.4.4 and rocSOLVER 6.4.3 trees: build defines as
//! the CMake files set them, overloads, typed numerics-check edges.
//! Run with `cargo test --release --features real-sources --test graph_real`.
#![cfg(feature = "real-sources")]

use std::path::PathBuf;

use rocqa::config::{Layout, ProjectFile, Scope};
use rocqa::graph::CodeGraph;
use rocqa::index::index_tree;
use rocqa::model::{InterfaceGraph, LibraryIndex, NodeKind};

fn layout() -> Layout {
    Layout {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

fn tree(lib: &str, version: &str) -> PathBuf {
    rocqa::source::tree_path(&layout().sources(), lib, version)
        .unwrap_or_else(|e| panic!("{e}\n(run scripts/setup.sh to fetch the real sources)"))
}

/// The configuration the CLI indexes under: the build's defines and the pair's headers.
fn config(lib: &str, version: &str) -> rocqa::config::LibraryConfig {
    let project = ProjectFile::load(&layout().project_file()).expect("rocqa.toml loads");
    let pair = project
        .pair(lib, version)
        .expect("pair")
        .map(|(l, v)| (tree(&l, &v), l));
    rocqa::index::with_build_defines(
        lib,
        &tree(lib, version),
        project.library(lib).expect("configured"),
        pair.as_ref().map(|(t, l)| (l.as_str(), t.as_path())),
    )
}

fn load(lib: &str, version: &str) -> (LibraryIndex, Scope) {
    let l = layout();
    let scope = Scope::load(&l.scope_file(lib)).expect("allowlist loads");
    let (index, _) = index_tree(
        lib,
        version,
        &tree(lib, version),
        &config(lib, version),
        &scope,
        Some(&l.index_cache(lib, version)),
    )
    .expect("index builds");
    (index, scope)
}

fn solver_graph(api: &str) -> InterfaceGraph {
    let (main, scope) = load("rocsolver", "6.4.3");
    let (blas, _) = load("rocblas", "6.4.4");
    let g = CodeGraph::new(&main, Some(&blas), &scope);
    let f = main.api.iter().find(|a| a.name == api).expect("API found");
    g.interface(f)
}

fn kernels(g: &InterfaceGraph) -> Vec<&str> {
    g.nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Kernel)
        .map(|n| n.name.as_str())
        .collect()
}

#[test]
fn rocsolver_defines_come_from_its_cmake_files_and_the_paired_version_header() {
    let project = ProjectFile::load(&layout().project_file()).unwrap();
    let defs = rocqa::index::build_defines(
        "rocsolver",
        &tree("rocsolver", "6.4.3"),
        project.library("rocsolver").unwrap(),
        Some(("rocblas", &tree("rocblas", "6.4.4"))),
    );
    let get = |n: &str| {
        defs.iter()
            .find(|d| d.name == n)
            .unwrap_or_else(|| panic!("{n} not derived: {defs:?}"))
    };
    // option(OPTIMAL ... ON) in CMakeLists.txt:58, applied in library/src/CMakeLists.txt.
    assert_eq!(
        (
            get("OPTIMAL").value.as_str(),
            get("OPTIMAL").origin.as_str()
        ),
        (
            "1",
            "library/src/CMakeLists.txt:459 target_compile_definitions"
        )
    );
    // rocBLAS 6.4.4 is rocBLAS 4.4.1 (rocm_setup_version in its CMakeLists.txt).
    assert_eq!(get("ROCBLAS_VERSION_MAJOR").value, "4");
    assert_eq!(get("ROCBLAS_VERSION_MINOR").value, "4");
    assert!(get("ROCBLAS_VERSION_MAJOR")
        .origin
        .starts_with("rocblas: library/CMakeLists.txt:175 configure_file"));
    assert_eq!(get("ROCSOLVER_VERSION_MINOR").value, "28");
    assert!(!defs.iter().any(|d| d.name == "ROCSOLVER_STATIC_LIB"));
    assert!(!defs.iter().any(|d| d.name == "USE_INTERNAL_GEMM"));
}

#[test]
fn sgetf2_reaches_the_specialized_kernels_behind_optimal() {
    let g = solver_graph("rocsolver_sgetf2");
    let k = kernels(&g);
    for want in [
        "getf2_small_kernel",
        "getf2_panel_kernel",
        "getf2_scale_update_kernel",
    ] {
        assert!(k.contains(&want), "{want} missing; kernels: {k:?}");
        let n = g.nodes.iter().find(|n| n.name == want).unwrap();
        assert_eq!(
            n.file,
            "library/src/specialized/roclapack_getf2_specialized_kernels.hpp"
        );
    }
}

#[test]
fn rocsolver_64_paths_are_not_empty() {
    // ROCBLAS_VERSION_MAJOR undefined emptied them: rocblas.hpp's wrappers sit under
    // version conditions.
    for api in [
        "rocsolver_sgetrf_64",
        "rocsolver_sgeqrf_64",
        "rocsolver_sgetrs_64",
    ] {
        let g = solver_graph(api);
        assert!(
            !kernels(&g).is_empty(),
            "{api}: no kernel reached ({} nodes)",
            g.nodes.len()
        );
    }
}

fn reaches(g: &InterfaceGraph, name: &str) -> bool {
    g.nodes.iter().any(|n| n.name == name && n.lib == "rocblas")
}

#[test]
fn getrs_and_geqrf_reach_rocblas_gemm_and_gemv_through_the_overloaded_wrappers() {
    // rocblasCall_gemm has 8 overloads (more than max_fanout): they were cut.
    let g = solver_graph("rocsolver_sgetrs");
    assert!(reaches(&g, "rocblas_internal_gemm_template"));
    // The non-batched API instantiates the one overload without pointer arrays.
    let gemm: Vec<u32> = g
        .nodes
        .iter()
        .filter(|n| n.name == "rocblasCall_gemm")
        .map(|n| n.line)
        .collect();
    assert_eq!(gemm, [1123], "rocblasCall_gemm overloads in sgetrs");
    let g = solver_graph("rocsolver_sgeqrf");
    assert!(reaches(&g, "rocblas_internal_gemm_template"));
    assert!(reaches(&g, "rocblas_internal_gemv_template"));
    let g = solver_graph("rocsolver_sgetrs_batched");
    assert!(reaches(&g, "rocblas_internal_gemm_batched_template"));
    assert!(!g
        .nodes
        .iter()
        .any(|n| n.name == "rocblasCall_gemm" && n.line == 1123));
}

#[test]
fn arity_picks_the_overload_and_a_call_to_the_same_name_is_followed() {
    // rocsolver_larfg_impl calls the 13-parameter rocsolver_larfg_template, which
    // calls the 16-parameter one (same name, another overload) that launches kernels.
    let g = solver_graph("rocsolver_slarfg");
    let t: Vec<(u32, usize)> = g
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.name == "rocsolver_larfg_template")
        .map(|(i, n)| (n.line, i))
        .collect();
    assert_eq!(t.len(), 2, "{t:?}");
    let impl_ = g
        .nodes
        .iter()
        .position(|n| n.name == "rocsolver_larfg_impl")
        .unwrap();
    let from_impl: Vec<usize> = g
        .edges
        .iter()
        .filter(|e| e.from == impl_ && g.nodes[e.to].name == "rocsolver_larfg_template")
        .map(|e| e.to)
        .collect();
    assert_eq!(from_impl.len(), 1, "impl calls one overload");
    assert!(g
        .edges
        .iter()
        .any(|e| e.from == from_impl[0] && g.nodes[e.to].name == "rocsolver_larfg_template"));
    assert!(!kernels(&g).is_empty());
}

/// The `_64` rotm launcher hands each chunk to the 32-bit instantiation of its own name
/// (`rocblas_internal_rotm_launcher<rocblas_int, NB, BATCHED_OR_STRIDED, T, U>` at
/// `src64/blas1/rocblas_rotm_kernels_64.cpp:84`), defined in `blas1/rocblas_rotm_kernels.cpp:31`,
/// a file the caller never includes: the call is not a self-call.
#[test]
fn rotm_64_reaches_the_kernels_through_the_32_bit_launcher() {
    let (main, scope) = load("rocblas", "6.4.4");
    let g = CodeGraph::new(&main, None, &scope);
    for api in ["rocblas_srotm_64", "rocblas_srotm_batched_64"] {
        let f = main.api.iter().find(|a| a.name == api).unwrap();
        let g = g.interface(f);
        let e = g
            .edges
            .iter()
            .find(|e| {
                g.nodes[e.from].name == "rocblas_internal_rotm_launcher"
                    && g.nodes[e.to].name == "rocblas_internal_rotm_launcher"
            })
            .unwrap_or_else(|| panic!("{api}: _64 launcher -> 32-bit launcher"));
        assert_eq!(
            (e.file.as_str(), e.line),
            ("library/src/src64/blas1/rocblas_rotm_kernels_64.cpp", 84)
        );
        assert_eq!(
            g.nodes[e.to].file,
            "library/src/blas1/rocblas_rotm_kernels.cpp"
        );
        let ks = kernels(&g);
        let want = if api.contains("batched") {
            "rocblas_rotm_kernel_batched"
        } else {
            "rocblas_rotm_kernel_regular"
        };
        assert!(ks.contains(&want), "{api}: {ks:?}");
    }
}

#[test]
fn sscal_shows_its_check_numerics_edge_typed() {
    let (main, scope) = load("rocblas", "6.4.4");
    let g = CodeGraph::new(&main, None, &scope);
    let f = main.api.iter().find(|a| a.name == "rocblas_sscal").unwrap();
    let g = g.interface(f);
    let e = g
        .edges
        .iter()
        .find(|e| {
            g.nodes[e.from].name == "rocblas_scal_impl"
                && g.nodes[e.to].name == "rocblas_internal_check_numerics_vector_template"
        })
        .expect("rocblas_scal_impl -> rocblas_internal_check_numerics_vector_template");
    assert_eq!(e.kind, rocqa::model::EdgeKind::CheckNumerics);
    assert_eq!(e.file, "library/src/blas1/rocblas_scal_imp.hpp");
    // Below it, the check kernel; not reachable without the check edge.
    let computing = g.reachable_without(rocqa::model::EdgeKind::CheckNumerics);
    let k = g
        .nodes
        .iter()
        .position(|n| n.name == "rocblas_check_numerics_vector_kernel")
        .expect("check kernel shown");
    assert!(!computing[k]);
    assert!(
        computing[g
            .nodes
            .iter()
            .position(|n| n.name == "rocblas_scal_kernel")
            .unwrap()]
    );
}

#[test]
fn the_default_picture_of_sgemv_is_small_enough_to_read() {
    let (main, scope) = load("rocblas", "6.4.4");
    let cg = CodeGraph::new(&main, None, &scope);
    let f = main.api.iter().find(|a| a.name == "rocblas_sgemv").unwrap();
    let g = cg.interface(f);
    let p = rocqa::graph::render::picture(&g);
    let names: std::collections::BTreeSet<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names.len(), p.nodes.len(), "a name drawn twice");
    assert!(p.nodes.len() <= 35, "{} nodes", p.nodes.len());
    assert!(
        p.edges.len() as f64 <= 1.5 * p.nodes.len() as f64,
        "{} edges for {} nodes",
        p.edges.len(),
        p.nodes.len()
    );
    // Host chain and kernels stay; device helpers are folded into their kernels.
    for want in [
        "rocblas_gemv_impl",
        "rocblas_internal_gemv_launcher",
        "rocblas_gemvn_kernel",
    ] {
        assert!(names.contains(want), "{want} missing: {names:?}");
    }
    assert!(!names.contains("load_ptr_batch") && !names.contains("rocblas_wavefront_reduce"));
    let k = p
        .nodes
        .iter()
        .find(|n| n.name == "rocblas_gemvn_kernel")
        .unwrap();
    assert!(k.helpers > 0);
    use rocqa::graph::render::Role;
    let roles: std::collections::BTreeSet<Role> = p.nodes.iter().map(|n| n.role).collect();
    for r in [
        Role::Entry,
        Role::Impl,
        Role::Check,
        Role::Launcher,
        Role::Kernel,
    ] {
        assert!(roles.contains(&r), "no {r:?} node");
    }
    // One edge per pair, carrying its site count: the launcher launches
    // rocblas_gemvn_kernel from several sites.
    let l = p
        .nodes
        .iter()
        .position(|n| n.name == "rocblas_internal_gemv_launcher")
        .unwrap();
    let kn = p
        .nodes
        .iter()
        .position(|n| n.name == "rocblas_gemvn_kernel")
        .unwrap();
    let e: Vec<_> = p
        .edges
        .iter()
        .filter(|e| e.from == l && e.to == kn)
        .collect();
    assert_eq!(e.len(), 1);
    assert!(e[0].sites > 1);
    // --full keeps every definition.
    assert!(rocqa::graph::render::dot_full(&g).matches(" -> ").count() == g.edges.len());
}
