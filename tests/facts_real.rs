//! Facts of real rocBLAS 6.4.4 / rocSOLVER 6.4.3 APIs, each checked by reading the
//! code at the cited `file:line`.
#![cfg(feature = "real-sources")]

use assert_cmd::Command;
use rocqa::model::{ApiFacts, Fact, FactKind};

fn facts(lib: &str, api: &str) -> ApiFacts {
    let out = Command::cargo_bin("rocqa")
        .expect("binary")
        .arg("--root")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(["facts", "--lib", lib, "--api", api, "--json"])
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).expect("one ApiFacts record")
}

fn find<'a>(f: &'a ApiFacts, kind: FactKind, subject: &str, file: &str, line: u32) -> &'a Fact {
    f.facts
        .iter()
        .find(|x| x.kind == kind && x.subject == subject && x.file == file && x.line == line)
        .unwrap_or_else(|| {
            panic!(
                "no {kind:?} fact about {subject} at {file}:{line} for {}; facts:\n{}",
                f.api,
                f.facts
                    .iter()
                    .map(rocqa::facts::describe)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
}

const SCAL_K: &str = "library/src/blas1/rocblas_scal_kernels.hpp";

#[test]
fn sscal_launches_with_nb_256_and_never_the_half_kernel() {
    let f = facts("rocblas", "rocblas_sscal");
    // rocblas_scal_kernels.hpp:209-217: if(using_rocblas_float && incx == 1) { ... dim3
    // threads(NB); if(rocblas_pointer_mode_device == handle->pointer_mode)
    // ROCBLAS_LAUNCH_KERNEL((rocblas_sscal_2_kernel<NB, T, Tex>), grid, threads, 0, ...);
    // NB is ROCBLAS_SCAL_NB (256), passed by rocblas_scal_kernels.cpp:42.
    let l = find(&f, FactKind::Launch, "rocblas_sscal_2_kernel", SCAL_K, 216);
    assert!(l.values["block"].contains("NB = 256"), "{:?}", l.values);
    assert_eq!(l.values["lds"], "0 bytes");
    assert_eq!(
        l.conditions,
        [
            "using_rocblas_float && incx == 1",
            "rocblas_pointer_mode_device == handle->pointer_mode"
        ]
    );
    // The host-pointer-mode twin at 229-230 is an `else`: the condition says so.
    let h = find(&f, FactKind::Launch, "rocblas_sscal_2_kernel", SCAL_K, 229);
    assert_eq!(
        h.conditions[1],
        "not (rocblas_pointer_mode_device == handle->pointer_mode)"
    );
    // rocblas_scal_kernels.hpp:255 launches the half-precision kernel: not sscal's.
    assert!(f
        .facts
        .iter()
        .all(|x| x.subject != "rocblas_hscal_mlt_4_kernel"));
    assert!(f
        .excluded
        .iter()
        .any(|x| x.starts_with("rocblas_hscal_mlt_4_kernel")));
    // rocblas_scal_kernels.hpp:27: ROCBLAS_KERNEL(DIM_X), DIM_X = NB = 256 at the launch.
    let b = find(
        &f,
        FactKind::LaunchBounds,
        "rocblas_scal_kernel",
        SCAL_K,
        27,
    );
    assert_eq!(b.values["value"], "256");
    // rocblas_scal_imp.hpp:88-89 and 93-96: quick returns, one only in host pointer mode.
    let q = find(
        &f,
        FactKind::QuickReturn,
        "rocblas_status_success",
        "library/src/blas1/rocblas_scal_imp.hpp",
        95,
    );
    assert_eq!(q.values["condition"], "*alpha == 1");
    assert_eq!(
        q.conditions,
        ["handle->pointer_mode == rocblas_pointer_mode_host"]
    );
    let c = find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_invalid_pointer",
        "library/src/blas1/rocblas_scal_imp.hpp",
        90,
    );
    assert_eq!(c.values["condition"], "!x || !alpha");
}

#[test]
fn saxpy_resolves_local_constants_and_checks() {
    let f = facts("rocblas", "rocblas_saxpy");
    // rocblas_axpy_kernels.hpp:438-444: constexpr int DIM_X = 128; constexpr int DIM_Y = 8;
    // dim3 threads(DIM_X, DIM_Y); launch of rocblas_axpy_kernel_batched in device mode.
    let l = find(
        &f,
        FactKind::Launch,
        "rocblas_axpy_kernel_batched",
        "library/src/blas1/rocblas_axpy_kernels.hpp",
        444,
    );
    assert!(
        l.values["block"].contains("DIM_X = 128, DIM_Y = 8"),
        "{:?}",
        l.values
    );
    // rocblas_axpy.hpp:100-113.
    let a = "library/src/blas1/rocblas_axpy.hpp";
    let q = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 100);
    assert_eq!(q.values["condition"], "n <= 0 || batch_count <= 0");
    let p = find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_invalid_pointer",
        a,
        103,
    );
    assert_eq!(p.values["condition"], "!alpha");
    let z = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 108);
    assert_eq!(z.values["condition"], "*alpha == 0");
    assert_eq!(
        z.conditions,
        ["handle->pointer_mode == rocblas_pointer_mode_host"]
    );
}

#[test]
fn snrm2_workspace_query_and_checks() {
    let f = facts("rocblas", "rocblas_snrm2");
    let imp = "library/src/blas1/rocblas_nrm2_imp.hpp";
    // rocblas_nrm2_imp.hpp:51-52: if(!handle) return rocblas_status_invalid_handle;
    find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_invalid_handle",
        imp,
        51,
    );
    // rocblas_nrm2_imp.hpp:59-64: a size query returns size_unchanged for empty input.
    let w = find(&f, FactKind::WorkspaceQuery, "rocblas_nrm2_impl", imp, 61);
    assert_eq!(w.values["returns"], "rocblas_status_size_unchanged");
    // rocblas_nrm2_imp.hpp:95: a failed allocation is a memory error.
    find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_memory_error",
        imp,
        95,
    );
    // rocblas_asum_nrm2.hpp:87-89: result must not be null.
    find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_invalid_pointer",
        "library/src/blas1/rocblas_asum_nrm2.hpp",
        87,
    );
}

#[test]
fn sgetrf_calls_into_rocblas() {
    let f = facts("rocsolver", "rocsolver_sgetrf");
    assert!(
        f.facts.iter().any(|x| x.kind == FactKind::CrossLibrary
            && x.values["callee"].starts_with("rocblas:")),
        "no cross-library fact"
    );
    assert!(f.facts.iter().any(|x| x.kind == FactKind::Launch));
}
