//! Integration tests on the real rocBLAS and rocSOLVER trees (Debian source packages,
//! fetched by `scripts/setup.sh` into `rocm_sources/`). Run with
//! `cargo test --release --features real-sources`.
#![cfg(feature = "real-sources")]

use std::path::PathBuf;

use rocqa::config::{Layout, ProjectFile, Scope};
use rocqa::graph::CodeGraph;
use rocqa::index::{index_tree, IndexStats};
use rocqa::model::{EdgeKind, GraphNode, InterfaceGraph, LibraryIndex, NodeKind};

mod common;
use common::traced::{assert_at, edge, node, strsm_three_ways_to_gemm};

fn layout() -> Layout {
    Layout {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

/// Indexes one pinned tree through the on-disk cache (warm after the first test).
fn load(lib: &str, version: &str) -> (LibraryIndex, IndexStats, Scope) {
    let l = layout();
    let project = ProjectFile::load(&l.project_file()).expect("rocqa.toml loads");
    let cfg = project.library(lib).expect("library configured");
    let scope = Scope::load(&l.scope_file(lib)).expect("allowlist loads");
    let tree = rocqa::source::tree_path(&l.sources(), lib, version)
        .unwrap_or_else(|e| panic!("{e}\n(run scripts/setup.sh to fetch the real sources)"));
    // As the CLI does: the paired library's generated headers add defines.
    let pair_tree = project.pair(lib, version).expect("pair").map(|(pl, pv)| {
        let t = rocqa::source::tree_path(&l.sources(), &pl, &pv).expect("pair fetched");
        (pl, t)
    });
    let cfg = &rocqa::index::with_build_defines(
        lib,
        &tree,
        cfg,
        pair_tree.as_ref().map(|(pl, t)| (pl.as_str(), t.as_path())),
    );
    let (index, stats) = index_tree(
        lib,
        version,
        &tree,
        cfg,
        &scope,
        Some(&l.index_cache(lib, version)),
    )
    .expect("index builds");
    (index, stats, scope)
}

fn graph_of(lib: &str, version: &str, pair: Option<(&str, &str)>, api: &str) -> InterfaceGraph {
    let (main, _, scope) = load(lib, version);
    let pair = pair.map(|(l, v)| load(l, v).0);
    let g = CodeGraph::new(&main, pair.as_ref(), &scope);
    let f = main
        .api
        .iter()
        .find(|a| a.name == api)
        .unwrap_or_else(|| panic!("{api} not discovered"));
    g.interface(f)
}

#[test]
fn public_api_counts_match_the_headers() {
    for (lib, version, total, wide) in [
        ("rocblas", "6.4.4", 1216, 577),
        ("rocblas", "5.5.1", 628, 0),
        ("rocsolver", "6.4.3", 913, 130),
        ("rocsolver", "5.5.1", 691, 0),
    ] {
        let (_, stats, _) = load(lib, version);
        println!(
            "{lib} {version}: {} API functions ({} _64) in {} families",
            stats.api_functions, stats.api_64, stats.api_families
        );
        assert_eq!(stats.api_functions, total, "{lib} {version}");
        assert_eq!(stats.api_64, wide, "{lib} {version} _64");
    }
}

#[test]
fn scal_family_groups_every_variant() {
    let (index, _, _) = load("rocblas", "6.4.4");
    let scal: Vec<&str> = index
        .api
        .iter()
        .filter(|a| a.family == "scal")
        .map(|a| a.name.as_str())
        .collect();
    for name in [
        "rocblas_sscal",
        "rocblas_zdscal_strided_batched_64",
        "rocblas_csscal_batched",
        "rocblas_scal_ex",
        "rocblas_scal_strided_batched_ex_64",
    ] {
        assert!(
            scal.contains(&name),
            "{name} missing from family scal: {scal:?}"
        );
    }
    assert_eq!(scal.len(), 42);
}

#[test]
fn in_scope_families_reach_device_code() {
    for (lib, version, pair) in [
        ("rocblas", "6.4.4", None),
        ("rocsolver", "6.4.3", Some(("rocblas", "6.4.4"))),
    ] {
        let (main, _, scope) = load(lib, version);
        let pair = pair.map(|(l, v)| load(l, v).0);
        let s = CodeGraph::new(&main, pair.as_ref(), &scope).stats();
        println!(
            "{lib} {version}: {}/{} in-scope families reach device code ({:.1}%); not: {:?}",
            s.reaching, s.in_scope, s.percent, s.not_reaching
        );
        assert!(
            s.in_scope >= 50,
            "{lib}: only {} families in scope",
            s.in_scope
        );
        assert!(
            s.percent >= 95.0,
            "{lib} {version}: {:.1}% < 95%: {:?}",
            s.percent,
            s.not_reaching
        );
        assert!(
            s.no_entry.is_empty(),
            "{lib}: APIs without a definition: {:?}",
            s.no_entry
        );
    }
}

#[test]
fn sscal_path_matches_the_traced_lines() {
    let g = graph_of("rocblas", "6.4.4", None, "rocblas_sscal");
    assert_eq!(
        (g.nodes[0].file.as_str(), g.nodes[0].line),
        ("library/include/internal/rocblas-functions.h", 78)
    );
    let (kind, file, line, via) = edge(&g, "rocblas_sscal", "rocblas_sscal");
    assert_eq!(
        (kind, file.as_str(), line, via.as_deref()),
        (
            EdgeKind::Entry,
            "library/src/blas1/rocblas_scal.cpp",
            27,
            Some("INST_SCAL_C_API")
        )
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
    let (kind, file, line, via) = edge(&g, "rocblas_internal_scal_launcher", "rocblas_scal_kernel");
    assert_eq!(
        (kind, file.as_str(), line, via.as_deref()),
        (
            EdgeKind::Launch,
            "library/src/blas1/rocblas_scal_kernels.hpp",
            293,
            Some("ROCBLAS_LAUNCH_KERNEL")
        )
    );
    // `ROCBLAS_API(rocblas_internal_scal_template)(...)`: the name is written at the call.
    assert_eq!(
        edge(&g, "rocblas_scal_impl", "rocblas_internal_scal_template").0,
        EdgeKind::Call
    );
    // The IMPL macro's body, not rocblas_scal.cpp, names the impl.
    assert_eq!(
        edge(&g, "rocblas_sscal", "rocblas_scal_impl").0,
        EdgeKind::MacroCall
    );
    assert_eq!(
        edge(
            &g,
            "rocblas_internal_scal_template",
            "rocblas_internal_scal_launcher"
        )
        .0,
        EdgeKind::Call
    );
    // Logging is denied by the allowlist and must not show up.
    assert!(
        !g.nodes.iter().any(|n| n.name.starts_with("log_")),
        "denied logging symbols in the graph"
    );
}

#[test]
fn ilp64_api_goes_through_the_64_bit_template() {
    // src64/ is compiled with ROCBLAS_INTERNAL_ILP64: the shared `_imp.hpp` then calls
    // rocblas_internal_scal_template_64, which chunks and calls the 32-bit launcher.
    let g = graph_of("rocblas", "6.4.4", None, "rocblas_sscal_64");
    let (kind, file, _, _) = edge(&g, "rocblas_sscal_64", "rocblas_sscal_64");
    assert_eq!(
        (kind, file.as_str()),
        (
            EdgeKind::Entry,
            "library/src/src64/blas1/rocblas_scal_64.cpp"
        )
    );
    edge(&g, "rocblas_scal_impl", "rocblas_internal_scal_template_64");
    edge(
        &g,
        "rocblas_internal_scal_template_64",
        "rocblas_internal_scal_launcher_64",
    );
    edge(&g, "rocblas_internal_scal_launcher", "rocblas_scal_kernel");
    assert!(!g
        .nodes
        .iter()
        .any(|n| n.name == "rocblas_internal_scal_template"));
    // And the 32-bit API does not wander into the 64-bit code.
    let g32 = graph_of("rocblas", "6.4.4", None, "rocblas_sscal");
    assert!(
        !g32.nodes.iter().any(|n| n.name.ends_with("_64")),
        "{:?}",
        g32.nodes.iter().map(|n| &n.name).collect::<Vec<_>>()
    );
}

#[test]
fn dgemv_launch_hides_behind_a_local_define() {
    let g = graph_of("rocblas", "6.4.4", None, "rocblas_dgemv");
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
    // The impl calls the launcher directly, skipping a _template.
    assert_eq!(
        edge(&g, "rocblas_gemv_impl", "rocblas_internal_gemv_launcher").0,
        EdgeKind::Call
    );
    let (kind, file, line, _) = edge(&g, "rocblas_internal_gemv_launcher", "rocblas_gemvn_kernel");
    assert_eq!(
        (kind, file.as_str(), line),
        (
            EdgeKind::Launch,
            "library/src/blas2/rocblas_gemv_kernels.cpp",
            246
        )
    );
    let k = node(&g, "rocblas_gemvn_kernel");
    assert_eq!(k.kind, NodeKind::Kernel);
    assert_at(k, "library/src/blas2/gemv_device.hpp", 1023);
}

#[test]
fn strsm_takes_all_three_ways_down_to_gemm() {
    let g = graph_of("rocblas", "6.4.4", None, "rocblas_strsm");
    strsm_three_ways_to_gemm(&g);
    // GEMM ends in the Tensile backend: an explicit opaque leaf.
    let (kind, _, _, _) = edge(&g, "rocblas_internal_gemm", "rocblas_call_tensile");
    assert_eq!(kind, EdgeKind::Opaque);
    assert!(g
        .nodes
        .iter()
        .any(|n| n.kind == NodeKind::Kernel && n.name.starts_with("rocblas_trsm_small")));
}

#[test]
fn sgetrf_reaches_getf2_iamax_and_crosses_into_rocblas() {
    let g = graph_of(
        "rocsolver",
        "6.4.3",
        Some(("rocblas", "6.4.4")),
        "rocsolver_sgetrf",
    );
    let (kind, file, _, _) = edge(&g, "rocsolver_sgetrf", "rocsolver_sgetrf");
    assert_eq!(
        (kind, file.as_str()),
        (EdgeKind::Entry, "library/src/lapack/roclapack_getrf.cpp")
    );
    edge(&g, "rocsolver_sgetrf", "rocsolver_getrf_impl");
    edge(&g, "rocsolver_getrf_impl", "rocsolver_getrf_template");
    edge(&g, "rocsolver_getf2_template", "getf2_iamax");
    let k = node(&g, "getf2_iamax");
    assert_eq!(
        (k.kind, k.file.as_str()),
        (NodeKind::Kernel, "library/src/lapack/roclapack_getf2.hpp")
    );
    let cross: Vec<&GraphNode> = g
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::CrossLibrary)
        .map(|e| &g.nodes[e.to])
        .collect();
    assert!(
        cross
            .iter()
            .any(|n| n.name == "rocblas_internal_scal_template" && n.lib == "rocblas"),
        "no cross edge into rocblas scal"
    );
    // Through rocBLAS down to one of its kernels.
    assert!(g
        .nodes
        .iter()
        .any(|n| n.lib == "rocblas" && n.kind == NodeKind::Kernel));
}

#[test]
fn kernels_and_launches_are_found_in_both_releases() {
    // FACTS.md counts (by grep): rocBLAS 6.4.4 137 kernels, 5.5.1 132; rocSOLVER 6.4.3 158, 5.5.1 108.
    for (lib, version, kernels, launches) in [
        ("rocblas", "6.4.4", 130, 450),
        ("rocblas", "5.5.1", 125, 450),
        ("rocsolver", "6.4.3", 158, 440),
        ("rocsolver", "5.5.1", 108, 330),
    ] {
        let (_, s, _) = load(lib, version);
        println!(
            "{lib} {version}: {} kernels, {} launch sites, {} files with parse errors",
            s.kernels, s.launches, s.files_with_errors
        );
        assert!(
            s.kernels >= kernels,
            "{lib} {version}: {} kernels < {kernels}",
            s.kernels
        );
        assert!(
            s.launches >= launches,
            "{lib} {version}: {} launches < {launches}",
            s.launches
        );
        assert!(
            s.files_with_errors * 50 <= s.files,
            "{lib} {version}: {} of {} files keep parse errors",
            s.files_with_errors,
            s.files
        );
    }
}

#[test]
fn second_index_run_reads_everything_from_the_cache() {
    let l = layout();
    let project = ProjectFile::load(&l.project_file()).unwrap();
    let cfg = project.library("rocsolver").unwrap();
    let scope = Scope::load(&l.scope_file("rocsolver")).unwrap();
    let tree = rocqa::source::tree_path(&l.sources(), "rocsolver", "6.4.3").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (a, cold) =
        index_tree("rocsolver", "6.4.3", &tree, cfg, &scope, Some(cache.path())).unwrap();
    let (b, warm) =
        index_tree("rocsolver", "6.4.3", &tree, cfg, &scope, Some(cache.path())).unwrap();
    assert_eq!(cold.parsed, cold.files);
    assert_eq!((warm.parsed, warm.cached), (0, warm.files));
    assert_eq!(a, b);
}

#[test]
fn dry_run_prompts_cover_the_in_scope_families_and_every_category() {
    use rocqa::extract::{plan_run, ExtractPlan};
    let l = layout();
    let project = ProjectFile::load(&l.project_file()).unwrap();
    let templates =
        rocqa::question::load_templates(&l.root.join(&project.extract.templates)).unwrap();
    let all_categories: std::collections::BTreeSet<&str> =
        templates.iter().map(|t| t.category.as_str()).collect();
    assert!(all_categories.len() >= 6, "{all_categories:?}");
    for (lib, version, pair) in [
        ("rocblas", "6.4.4", None),
        ("rocsolver", "6.4.3", Some(("rocblas", "6.4.4"))),
    ] {
        let (main, _, scope) = load(lib, version);
        let pair_index = pair.map(|(l, v)| load(l, v).0);
        let mut trees = rocqa::slice::Trees::default();
        trees.add(
            lib,
            &rocqa::source::tree_path(&l.sources(), lib, version).unwrap(),
        );
        if let Some((pl, pv)) = pair {
            trees.add(pl, &rocqa::source::tree_path(&l.sources(), pl, pv).unwrap());
        }
        let graph = CodeGraph::new(&main, pair_index.as_ref(), &scope);
        let mut indexes = vec![&main];
        if let Some(p) = &pair_index {
            indexes.push(p);
        }
        let plan = ExtractPlan {
            lib: lib.into(),
            version: version.into(),
            api_glob: None,
            categories: None,
            limit: None,
            shard: None,
            limits: rocqa::slice::SliceLimits::default(),
            naming: project.library(lib).unwrap().naming(),
        };
        let planned = plan_run(&plan, &graph, &indexes, &scope, &trees, &templates, None).unwrap();
        let cats: std::collections::BTreeSet<&str> = planned
            .questions
            .iter()
            .map(|q| q.category.as_str())
            .collect();
        println!(
            "{lib} {version}: {} prompts, {}/{} families ({:.1}%), categories {cats:?}",
            planned.questions.len(),
            planned.coverage.with_prompts,
            planned.coverage.in_scope,
            planned.coverage.prompts_percent
        );
        assert!(
            planned.coverage.prompts_percent >= 95.0,
            "{lib}: {:?}",
            planned.coverage.without_prompts
        );
        assert_eq!(cats, all_categories, "{lib}: a category has no prompt");
        // Every prompt fits the most a question is shown (the path and target, the
        // target's work, its functors and constants: each an allowance of its own)
        // plus the question and the notes on what is left out or never runs.
        let most = rocqa::slice::SliceLimits::default().max_tokens();
        for q in &planned.questions {
            assert!(
                q.prompt_tokens < most + 1500,
                "{}: {} tokens",
                q.id,
                q.prompt_tokens
            );
        }
        // Ids are unique and stable.
        let ids: std::collections::BTreeSet<&str> =
            planned.questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids.len(), planned.questions.len());
    }
}
