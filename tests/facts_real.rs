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

/// Does `f` hold a fact of `kind` at `file:line`?
fn has(f: &ApiFacts, kind: FactKind, file: &str, line: u32) -> bool {
    f.facts
        .iter()
        .any(|x| x.kind == kind && x.file == file && x.line == line)
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
    // `using_rocblas_float` (:199-200, Tex and T are float) is true for sscal: only
    // `incx == 1` is left of that test.
    let l = find(&f, FactKind::Launch, "rocblas_sscal_2_kernel", SCAL_K, 217);
    assert!(l.values["block"].contains("NB = 256"), "{:?}", l.values);
    assert_eq!(l.values["lds"], "0 bytes");
    assert_eq!(
        l.conditions,
        [
            "incx == 1",
            "rocblas_pointer_mode_device == handle->pointer_mode"
        ]
    );
    // The host-pointer-mode twin at 229-241 is an `else`: the condition says so.
    let h = find(&f, FactKind::Launch, "rocblas_sscal_2_kernel", SCAL_K, 230);
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
    assert_eq!(b.values["written"], "ROCBLAS_KERNEL(DIM_X)");
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
    // check_numerics_vector.cpp:181-183 returns early; rocblas_scal_impl (:51-123)
    // reaches it only inside `if(check_numerics)`, through the call at :102: the
    // condition says so, and the fact names that call as where it is written.
    let n = find(
        &f,
        FactKind::QuickReturn,
        "rocblas_status_success",
        "library/src/check_numerics_vector.cpp",
        181,
    );
    assert_eq!(n.conditions, ["check_numerics"]);
    let site = &n.condition_sites[..];
    assert_eq!(site.len(), 1, "{site:?}");
    assert_eq!(
        (
            site[0].function.as_str(),
            site[0].file.as_str(),
            site[0].function_lines,
            site[0].line
        ),
        (
            "rocblas_scal_impl",
            "library/src/blas1/rocblas_scal_imp.hpp",
            (51, 123),
            102
        )
    );
}

#[test]
fn saxpy_resolves_local_constants_and_checks() {
    let f = facts("rocblas", "rocblas_saxpy");
    // rocblas_axpy_kernels.hpp:432: `else if(batch_count > 8192 && using_rocblas_float)`.
    // rocblas_axpy_imp.hpp:91 fixes batch_count_1 = 1 and passes it down (:132-144), so
    // rocblas_saxpy never launches rocblas_axpy_kernel_batched: not a fact of it.
    assert!(f
        .facts
        .iter()
        .all(|x| x.subject != "rocblas_axpy_kernel_batched"));
    assert!(
        f.excluded
            .iter()
            .any(|x| x.starts_with("rocblas_axpy_kernel_batched") && x.contains("batch_count = 1")),
        "{:?}",
        f.excluded
    );
    // The non-unit-stride default kernel (:472) is left: `not (unit_inc)`, what remains
    // of the else chain once using_rocblas_half is false and using_rocblas_float true.
    let d = find(
        &f,
        FactKind::Launch,
        "rocblas_axpy_kernel",
        "library/src/blas1/rocblas_axpy_kernels.hpp",
        472,
    );
    assert_eq!(d.conditions[0], "not (unit_inc)");
    // rocblas_saxpy_strided_batched takes a run-time batch_count: there the batched kernel
    // (:438-444: constexpr int DIM_X = 128; constexpr int DIM_Y = 8; dim3 threads(DIM_X,
    // DIM_Y)) is a launch, under its threshold.
    let f_sb = facts("rocblas", "rocblas_saxpy_strided_batched");
    let l = find(
        &f_sb,
        FactKind::Launch,
        "rocblas_axpy_kernel_batched",
        "library/src/blas1/rocblas_axpy_kernels.hpp",
        447,
    );
    assert!(
        l.values["block"].contains("DIM_X = 128, DIM_Y = 8"),
        "{:?}",
        l.values
    );
    assert!(
        l.conditions.iter().any(|c| c == "batch_count > 8192"),
        "{:?}",
        l.conditions
    );
    // rocblas_axpy.hpp:100-113; batch_count is 1 for rocblas_saxpy, so of the quick
    // return's `n <= 0 || batch_count <= 0` only `n <= 0` can hold.
    let a = "library/src/blas1/rocblas_axpy.hpp";
    let q = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 100);
    assert_eq!(q.values["condition"], "n <= 0");
    let qb = find(
        &f_sb,
        FactKind::QuickReturn,
        "rocblas_status_success",
        a,
        100,
    );
    assert_eq!(qb.values["condition"], "n <= 0 || batch_count <= 0");
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

#[test]
fn sdot_batched_threshold_and_block_sizes_by_architecture() {
    let f = facts("rocblas", "rocblas_sdot");
    let fb = facts("rocblas", "rocblas_sdot_batched");
    let k = "library/src/blas1/rocblas_dot_kernels.hpp";
    // rocblas_dot_kernels.hpp:385-407: if(n <= 1024 && batch_count >= 256), NB_Y = 4 and,
    // on gfx10/11/12 (arch_major 10, 11 or 12: a device property), NB_X = 32;
    // dim3 threads(NB_X, NB_Y); rocblas_dot_batched_4_kernel launched at 407. rocblas_sdot
    // passes batch_count = 1 (rocblas_dot_imp.hpp:150-151): never for it, only for the
    // batched forms.
    assert!(f
        .facts
        .iter()
        .all(|x| x.subject != "rocblas_dot_batched_4_kernel"));
    assert!(f
        .excluded
        .iter()
        .any(|x| x.starts_with("rocblas_dot_batched_4_kernel") && x.contains("batch_count = 1")));
    let small = find(
        &fb,
        FactKind::Launch,
        "rocblas_dot_batched_4_kernel",
        k,
        407,
    );
    assert_eq!(
        small.conditions,
        ["n <= 1024 && batch_count >= 256", "is_arch_10_or_11_or_12"]
    );
    assert_eq!(small.values["block_threads"], "128");
    // :421-447: the other architectures, NB_X = 64 (256 threads), launched at :432.
    let other = find(
        &fb,
        FactKind::Launch,
        "rocblas_dot_batched_4_kernel",
        k,
        432,
    );
    assert_eq!(other.conditions[1], "not (is_arch_10_or_11_or_12)");
    assert_eq!(other.values["block_threads"], "256");
    // :459-501: up to the single-block threshold one block of NB_OB = 1024 threads; unit
    // strides take rocblas_dot_kernel_inc1by2 (launched at :486).
    let one = find(&f, FactKind::Launch, "rocblas_dot_kernel_inc1by2", k, 486);
    assert!(
        one.values["block"].contains("NB_OB = 1024"),
        "{:?}",
        one.values
    );
    // The batched-4 test before it (:385) is false for sdot and drops out.
    assert_eq!(one.conditions[0], "n <= single_block_threshold");
    // :627-637: the second pass runs only when the first left more than one block, with
    // NB = ROCBLAS_DOT_NB = 512 (rocblas_dot_kernels.cpp:42 passes it).
    let r = find(&f, FactKind::Launch, "rocblas_dot_kernel_reduce", k, 630);
    assert_eq!(r.conditions.last().map(String::as_str), Some("blocks > 1"));
    assert_eq!(r.values["block_threads"], "512");
    // rocblas_dot_kernel runs with 1024 (:505) and 512 (:593) threads: its launch bounds
    // NB has no single value, so none is stated.
    let b = find(&f, FactKind::LaunchBounds, "rocblas_dot_kernel", k, 173);
    assert!(!b.values.contains_key("value"), "{:?}", b.values);
    // :353-370: the launcher's quick return for n <= 0 || batch_count == 0. For sdot
    // (batch_count 1) that is n <= 0, on which rocblas_dot_impl has already returned
    // (rocblas_dot_imp.hpp:104), so it never fires for sdot. The batched impl returns
    // on the two tests apart (rocblas_dot_batched_imp.hpp:119 and :124): past them
    // `batch_count >= 1` and `n >= 1`, so the launcher's test never fires there either.
    assert!(!has(&f, FactKind::QuickReturn, k, 353));
    let q = find(
        &f,
        FactKind::QuickReturn,
        "rocblas_status_success",
        "library/src/blas1/rocblas_dot_imp.hpp",
        104,
    );
    assert_eq!(q.values["condition"], "n <= 0");
    assert!(!has(&fb, FactKind::QuickReturn, k, 353));
    let batched = "library/src/blas1/rocblas_dot_batched_imp.hpp";
    let qb = find(
        &fb,
        FactKind::QuickReturn,
        "rocblas_status_success",
        batched,
        119,
    );
    assert_eq!(qb.values["condition"], "batch_count <= 0");
    let qn = find(
        &fb,
        FactKind::QuickReturn,
        "rocblas_status_success",
        batched,
        124,
    );
    assert_eq!(qn.values["condition"], "n <= 0");
}

#[test]
fn sger_lds_block_and_checks() {
    let f = facts("rocblas", "rocblas_sger");
    let k = "library/src/blas2/rocblas_ger_kernels.hpp";
    // rocblas_ger_kernels.hpp:57-58: __shared__ T xdata[DIM_X]; __shared__ T
    // ydata[DIM_Y * WIN]; the launch at :423 sets DIM_X = 32, DIM_Y = 32, WIN = 2
    // (:410-412).
    let x = find(&f, FactKind::SharedMemory, "xdata", k, 57);
    assert_eq!(x.values["elements"], "32");
    let y = find(&f, FactKind::SharedMemory, "ydata", k, 58);
    assert_eq!(y.values["elements"], "64");
    let l = find(&f, FactKind::Launch, "rocblas_ger_kernel", k, 423);
    assert_eq!(l.values["block_dims"], "32, 32");
    // :394-402: float with m > 1024 takes rocblas_sger_kernel, DIM_X = 1024; `is_float`
    // is true for sger, so `m > 1024` is what is left.
    let s = find(&f, FactKind::Launch, "rocblas_sger_kernel", k, 402);
    assert!(
        s.conditions.iter().any(|c| c == "m > 1024"),
        "{:?}",
        s.conditions
    );
    assert_eq!(s.values["block_threads"], "1024");
    // rocblas_ger.hpp:49-53: sizes first, then the quick return; batch_count < 0 can
    // not hold for the non-batched API (batch_count = 1).
    let a = "library/src/blas2/rocblas_ger.hpp";
    let c = find(&f, FactKind::ArgCheck, "rocblas_status_invalid_size", a, 49);
    assert_eq!(
        c.values["condition"],
        "m < 0 || n < 0 || !incx || !incy || lda < m || lda < 1"
    );
    let q = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 52);
    assert_eq!(q.values["condition"], "!m || !n");
    // :58-61: alpha == 0 returns early only in host pointer mode.
    let z = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 60);
    assert_eq!(
        z.conditions,
        ["handle->pointer_mode == rocblas_pointer_mode_host"]
    );
}

#[test]
fn sgemm_checks_before_the_backend() {
    let f = facts("rocblas", "rocblas_sgemm");
    let a = "library/src/blas3/rocblas_gemm.hpp";
    // rocblas_gemm.hpp:97-98, 110-111: negative sizes are errors, empty ones success.
    // sgemm leaves out `batch_count`, whose default is 1 (:83): no batch test is its.
    let s = find(&f, FactKind::ArgCheck, "rocblas_status_invalid_size", a, 97);
    assert_eq!(s.values["condition"], "m < 0 || n < 0 || k < 0");
    let q = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 110);
    assert_eq!(q.values["condition"], "!m || !n");
    // :116-121: k == 0 returns early for host scalars with beta == 1; the scalars are
    // on the host by then (rocblas_gemm_imp.hpp:69-71 copies them and pushes host
    // mode), so only `*beta == 1` is left of it.
    let k0 = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 120);
    assert_eq!(k0.conditions, ["*beta == 1"]);
    // :135-137: the internal error for device scalars: they never reach the check
    // (copied to the host, host mode pushed, before), so it is no fact of sgemm.
    assert!(!f
        .facts
        .iter()
        .any(|x| x.kind == FactKind::ArgCheck && x.file == a && x.line == 135));
    // The work is handed to the Tensile/hipBLASLt backend (opaque): no kernel launch of
    // rocBLAS's own is a fact of rocblas_sgemm.
    assert!(!f.facts.iter().any(|x| x.kind == FactKind::Launch));
}

#[test]
fn isamax_two_pass_reduction() {
    let f = facts("rocblas", "rocblas_isamax");
    let k = "library/src/blas1/rocblas_iamax_iamin_kernels.cpp";
    // rocblas_iamax_iamin_kernels.cpp:84-86: part 1 always, dim3(blocks, 1, batches).
    let p1 = find(
        &f,
        FactKind::Launch,
        "rocblas_iamax_iamin_kernel_part1",
        k,
        84,
    );
    assert!(p1.conditions.is_empty(), "{:?}", p1.conditions);
    // :98-107: part 2 in device pointer mode; :116-129 in host mode only when
    // reduceKernel = blocks > 1 || batch_count > 1.
    let d = find(
        &f,
        FactKind::Launch,
        "rocblas_iamax_iamin_kernel_part2",
        k,
        100,
    );
    assert_eq!(
        d.conditions,
        ["handle->pointer_mode == rocblas_pointer_mode_device"]
    );
    let h = find(
        &f,
        FactKind::Launch,
        "rocblas_iamax_iamin_kernel_part2",
        k,
        122,
    );
    assert_eq!(
        h.conditions.last().map(String::as_str),
        Some("reduceKernel")
    );
    // rocblas_iamax_iamin.hpp:111-117: result checked first, then the quick return.
    let a = "library/src/blas1/rocblas_iamax_iamin.hpp";
    find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_invalid_pointer",
        a,
        111,
    );
    // batch_count is 1 for the non-batched API.
    let q = find(&f, FactKind::QuickReturn, "rocblas_status_success", a, 117);
    assert_eq!(q.values["condition"], "n <= 0 || incx <= 0");
}

#[test]
fn spotrf_resets_info_and_returns_early() {
    let f = facts("rocsolver", "rocsolver_spotrf");
    let p = "library/src/lapack/roclapack_potrf.hpp";
    // roclapack_potrf.hpp:163-164: no batch, nothing to do; the non-batched form fixes
    // `rocblas_int batch_count = 1;` (roclapack_potrf.cpp), so that return is only the
    // batched forms'.
    assert!(f
        .facts
        .iter()
        .all(|x| !(x.file == p && x.line == 163 && x.kind == FactKind::QuickReturn)));
    let batched = facts("rocsolver", "rocsolver_spotrf_batched");
    find(
        &batched,
        FactKind::QuickReturn,
        "rocblas_status_success",
        p,
        163,
    );
    // :169-174: reset_info on dim3 threads(BS1, 1, 1), BS1 = 256, before the n == 0
    // quick return at :177-178.
    let r = find(&f, FactKind::Launch, "reset_info", p, 174);
    assert_eq!(r.values["block_threads"], "256");
    assert!(r.conditions.is_empty(), "{:?}", r.conditions);
    let q = find(&f, FactKind::QuickReturn, "rocblas_status_success", p, 177);
    assert_eq!(q.values["condition"], "n == 0");
    // roclapack_potf2.hpp:155-156: the size check of potf2 and potrf; potrf leaves
    // out `batch_count`, whose default is 1 (:146).
    let s = find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_invalid_size",
        "library/src/lapack/roclapack_potf2.hpp",
        155,
    );
    assert_eq!(s.values["condition"], "n < 0 || lda < n");
}

#[test]
fn sgetf2_specialized_kernels_under_their_run_time_choice() {
    let f = facts("rocsolver", "rocsolver_sgetf2");
    let g = "library/src/lapack/roclapack_getf2.hpp";
    // roclapack_getf2.hpp:595: the permutation array is set up only when one is passed;
    // getf2's _impl leaves out `permut_idx`, whose default is nullptr (:568).
    assert!(!f
        .facts
        .iter()
        .any(|x| x.kind == FactKind::Launch && x.subject == "getf2_permut_init"));
    assert!(
        f.excluded
            .iter()
            .any(|e| e.contains("getf2_permut_init") && e.contains("permut_idx = 0")),
        "{:?}",
        f.excluded
    );
    // :638-644: the pivot search per column, dim3 threadsMax(IAMAX_THDS, 1, 1) = 1024.
    let m = find(&f, FactKind::Launch, "getf2_iamax", g, 643);
    // :158: `__launch_bounds__(IAMAX_THDS)`, with `#define IAMAX_THDS 1024` at :44: the
    // number is the limit, the macro what the code writes.
    let b = find(&f, FactKind::LaunchBounds, "getf2_iamax", g, 158);
    assert_eq!(b.values["value"], "1024");
    assert_eq!(b.values["written"], "__launch_bounds__(IAMAX_THDS)");
    assert_eq!(m.values["block_threads"], "1024");
    // `if(pivot)` (:640) is decided: rocsolver_sgetf2 passes pivot = true
    // (roclapack_getf2.cpp), so only the column loop is left around the launch.
    assert!(
        m.conditions.iter().all(|c| c != "pivot"),
        "{:?}",
        m.conditions
    );
    assert_eq!(
        m.conditions.last().map(String::as_str),
        Some("loop: for (I j = 0; j < dim; ++j)")
    );
    // :604-613: behind #ifdef OPTIMAL (the build defines it), select_spkernel picks the
    // specialized small-matrix kernels at run time (spker == 1): a condition of the
    // launches inside getf2_run_small, which the call site passes on. `I` is rocblas_int
    // for rocsolver_sgetf2, so the `!std::is_same<I, int64_t>::value` part is true and
    // drops out.
    let s = f
        .facts
        .iter()
        .find(|x| x.kind == FactKind::Launch && x.subject == "getf2_small_kernel")
        .expect("getf2_small_kernel is launched");
    assert_eq!(&s.conditions[..2], ["spker > 0", "spker == 1"]);
}

#[test]
fn host_runtime_calls_with_their_direction_and_conditions() {
    // rocblas_auxiliary.cpp:329-345: a contiguous host vector goes over with hipMemcpy,
    // a strided one with hipMemcpy2D, both host to device.
    let f = facts("rocblas", "rocblas_set_vector");
    let aux = "library/src/rocblas_auxiliary.cpp";
    let m = find(&f, FactKind::RuntimeCall, "hipMemcpy", aux, 331);
    assert_eq!(m.values["direction"], "hipMemcpyHostToDevice");
    assert_eq!(m.conditions, ["incx == 1 && incy == 1"]);
    let m2 = find(&f, FactKind::RuntimeCall, "hipMemcpy2D", aux, 336);
    assert_eq!(m2.conditions, ["not (incx == 1 && incy == 1)"]);

    // rocblas_asum_nrm2_kernels.hpp:253-276: in host pointer mode the result comes back
    // with hipMemcpyAsync device to host, then the stream is synchronized. For nrm2 the
    // finalize step is not the identity, so only `reduceKernel` stays open.
    let f = facts("rocblas", "rocblas_snrm2");
    let k = "library/src/blas1/rocblas_asum_nrm2_kernels.hpp";
    let copy = find(&f, FactKind::RuntimeCall, "hipMemcpyAsync", k, 258);
    assert_eq!(copy.values["direction"], "hipMemcpyDeviceToHost");
    assert_eq!(
        copy.conditions,
        [
            "not (handle->pointer_mode == rocblas_pointer_mode_device)",
            "reduceKernel"
        ]
    );
    find(&f, FactKind::RuntimeCall, "hipStreamSynchronize", k, 263);
    // check_numerics_vector.cpp:242 synchronizes too, but only when the handle asks
    // for numerics checking: not a fact of the API's own work.
    assert!(
        !f.facts.iter().any(|x| x.kind == FactKind::RuntimeCall
            && x.file == "library/src/check_numerics_vector.cpp"),
        "a numerics-check runtime call was read as the API's"
    );
}

#[test]
fn stores_of_getters_setters_and_quick_results() {
    let aux = "library/src/rocblas_auxiliary.cpp";
    // rocblas_auxiliary.cpp:53-55: after the handle check, the getter writes the
    // handle's pointer mode through its output pointer: only past that check's return.
    let f = facts("rocblas", "rocblas_get_pointer_mode");
    let s = find(&f, FactKind::Store, "*mode", aux, 55);
    assert_eq!(s.values["value"], "handle->pointer_mode");
    assert_eq!(s.conditions, ["not (!handle)"]);
    // rocblas_auxiliary.cpp:280: the setter's last step, after the stream checks.
    let f = facts("rocblas", "rocblas_set_stream");
    let s = find(&f, FactKind::Store, "handle->stream", aux, 280);
    assert_eq!(s.values["value"], "stream");
    // rocblas_dot_imp.hpp:105-112: with n <= 0 and host pointer mode the result is set
    // to zero on the host (device mode clears it with hipMemsetAsync instead).
    let f = facts("rocblas", "rocblas_sdot");
    let s = find(
        &f,
        FactKind::Store,
        "*result",
        "library/src/blas1/rocblas_dot_imp.hpp",
        112,
    );
    assert_eq!(s.values["value"], "T(0)");
    assert_eq!(
        s.conditions,
        [
            "not (!handle)",
            "not (!result)",
            "n <= 0",
            "not (rocblas_pointer_mode_device == handle->pointer_mode)"
        ]
    );
}

#[test]
fn static_state_set_once_or_per_thread() {
    // rocblas_ostream.cpp:80-84: the body is one function-local static whose
    // initializer calls rocblas_abort_once(), so only the first call runs it.
    let f = facts("rocblas", "rocblas_abort");
    let s = find(
        &f,
        FactKind::StaticState,
        "once",
        "library/src/rocblas_ostream.cpp",
        83,
    );
    assert_eq!(s.values["declared"], "static int once");
    assert_eq!(s.values["value"], "(rocblas_abort_once(), 0)");
    assert_eq!(s.values["local"], "true");
    // handle.cpp:67-71: the setter stores into a file-scope thread_local, which the
    // handle's constructor reads and clears (:210-213).
    let f = facts("rocblas", "rocblas_device_malloc_set_default_memory_size");
    let s = find(
        &f,
        FactKind::StaticState,
        "t_rocblas_device_malloc_default_memory_size",
        "library/src/handle.cpp",
        71,
    );
    assert_eq!(s.values["value"], "size");
    assert_eq!(
        s.values["declared"],
        "static thread_local size_t t_rocblas_device_malloc_default_memory_size"
    );
    assert_eq!(s.values["decl_lines"], "67-67");
    assert_eq!(s.values["uses"], "210-213");
    // roclapack's refactorization info loads rocSPARSE once (rocsolver_rfinfo.cpp:214).
    let f = facts("rocsolver", "rocsolver_create_rfinfo");
    let s = find(
        &f,
        FactKind::StaticState,
        "result",
        "library/src/refact/rocsolver_rfinfo.cpp",
        214,
    );
    assert_eq!(s.values["value"], "load_rocsparse()");
    // Constants are not state: `static constexpr int NB = rocblas_gemvt_sn_NB();` in
    // rocblas_gemv_kernels.cpp:509 is not a fact of rocblas_sgemv.
    let f = facts("rocblas", "rocblas_sgemv");
    assert!(f
        .facts
        .iter()
        .all(|x| x.kind != FactKind::StaticState || !x.values["declared"].contains("constexpr")));
}

#[test]
fn a_pointer_mode_rocsolver_sets_decides_the_branches_below_it() {
    // roclapack_getrs.cpp:59-60 fixes `I inca = 1; I incb = 1;` (locals set once), so
    // rocsolver_gemm returns into rocblasCall_gemm at
    // roclapack_gemm_specialized_kernels.hpp:192-195 before either gemm_kernel launch
    // (:230 in device mode, :236 in host mode, which getrs.hpp:145-147 sets): neither is
    // rocsolver_sgetrs's.
    let getrs = facts("rocsolver", "rocsolver_sgetrs");
    let gemm = "library/src/specialized/roclapack_gemm_specialized_kernels.hpp";
    assert!(getrs
        .facts
        .iter()
        .all(|f| !(f.file == gemm && (f.line == 230 || f.line == 236))));
    for line in [230, 236] {
        assert!(
            getrs
                .excluded
                .iter()
                .any(|x| x.starts_with(&format!("gemm_kernel at {gemm}:{line}"))
                    && x.contains("inca = 1")),
            "{:?}",
            getrs.excluded
        );
    }
    // roclapack_potf2.hpp:205-207 sets device mode; its rocblasCall_scal (:252) reaches
    // rocblas_scal_kernels.hpp, whose host-mode twin launches (:230, :307) it never makes.
    let potf2 = facts("rocsolver", "rocsolver_spotf2");
    let scal = "library/src/blas1/rocblas_scal_kernels.hpp";
    find(
        &potf2,
        FactKind::Launch,
        "rocblas_sscal_2_kernel",
        scal,
        217,
    );
    assert!(potf2
        .facts
        .iter()
        .all(|f| !(f.file == scal && (f.line == 230 || f.line == 307))));
    // The test itself is no branch of the API: not a pointer-mode fact of it.
    assert!(potf2
        .facts
        .iter()
        .all(|f| !(f.kind == FactKind::PointerMode && f.file == scal)));
    // rocblas_syr2k_her2k_kernels.cpp:540 pushes host mode in the template's own block
    // (alpha and beta copied to the host by then): the device-mode launches of
    // rocblas_syr2k_her2k_kernel at :398 and :422 are not rocblas_ssyr2k_batched's.
    // (rocblas_ssyr2k itself returns into the block-recursive path first, :560.)
    let syr2k = facts("rocblas", "rocblas_ssyr2k_batched");
    let k = "library/src/blas3/rocblas_syr2k_her2k_kernels.cpp";
    assert!(syr2k
        .facts
        .iter()
        .all(|f| !(f.file == k && (f.line == 398 || f.line == 422))));
    assert!(syr2k
        .excluded
        .iter()
        .any(|x| x.starts_with(&format!("rocblas_syr2k_her2k_kernel at {k}:398"))));
    // rocBLAS's own API leaves the mode to its caller: both branches are facts.
    let sscal = facts("rocblas", "rocblas_sscal");
    find(
        &sscal,
        FactKind::Launch,
        "rocblas_sscal_2_kernel",
        scal,
        217,
    );
    find(
        &sscal,
        FactKind::Launch,
        "rocblas_sscal_2_kernel",
        scal,
        230,
    );
}

#[test]
fn bookkeeping_apis_state_their_declaration_definition_and_return() {
    // rocblas-auxiliary.h:60-61: ROCBLAS_EXPORT rocblas_status rocblas_get_pointer_mode(
    // rocblas_handle handle, rocblas_pointer_mode* pointer_mode); the definition names
    // the second parameter `mode` (rocblas_auxiliary.cpp:48-49).
    let f = facts("rocblas", "rocblas_get_pointer_mode");
    let d = find(
        &f,
        FactKind::Declaration,
        "rocblas_get_pointer_mode",
        "library/include/internal/rocblas-auxiliary.h",
        60,
    );
    assert_eq!(d.end_line, 61);
    assert_eq!(d.values["returns"], "rocblas_status");
    assert_eq!(
        d.values["params"],
        "rocblas_handle handle | rocblas_pointer_mode* pointer_mode"
    );
    // rocblas_auxiliary.cpp:48-64: `try { ... return rocblas_status_success; }` (:59),
    // `catch(...) { return exception_to_rocblas_status(); }` (:61-64).
    let def = find(
        &f,
        FactKind::Definition,
        "rocblas_get_pointer_mode",
        "library/src/rocblas_auxiliary.cpp",
        48,
    );
    assert_eq!(def.end_line, 64);
    assert_eq!(def.values["handler"], "exception_to_rocblas_status()");
    let r = find(
        &f,
        FactKind::Return,
        "rocblas_get_pointer_mode",
        "library/src/rocblas_auxiliary.cpp",
        59,
    );
    assert_eq!(r.values["returns"], "rocblas_status_success");
    // rocblas_gemm.cpp:54-74: rocblas_sgemm_kernel_name has no handler and returns
    // rocblas_status_not_implemented (:73) whatever it is given.
    let f = facts("rocblas", "rocblas_sgemm_kernel_name");
    let def = find(
        &f,
        FactKind::Definition,
        "rocblas_sgemm_kernel_name",
        "library/src/blas3/rocblas_gemm.cpp",
        54,
    );
    assert!(!def.values.contains_key("handler"), "{:?}", def.values);
    let r = find(
        &f,
        FactKind::Return,
        "rocblas_sgemm_kernel_name",
        "library/src/blas3/rocblas_gemm.cpp",
        73,
    );
    assert_eq!(r.values["returns"], "rocblas_status_not_implemented");
    // rocauxiliary_aliases.cpp:60-63: rocsolver_get_stream forwards to rocBLAS.
    let f = facts("rocsolver", "rocsolver_get_stream");
    let r = find(
        &f,
        FactKind::Return,
        "rocsolver_get_stream",
        "library/src/auxiliary/rocauxiliary_aliases.cpp",
        62,
    );
    assert_eq!(r.values["returns"], "rocblas_get_stream(handle, stream)");
}

#[test]
fn cgetrs_launch_written_in_a_macro_names_its_define() {
    let f = facts("rocsolver", "rocsolver_cgetrs");
    let t = "library/src/specialized/roclapack_trsm_specialized_kernels.hpp";
    // :899 is `FORWARD_SUBSTITUTIONS;` inside rocsolver_trsm_lower; the kernel is named
    // at :135, in the `#define FORWARD_SUBSTITUTIONS` of :120-142. getrs calls trsm_lower
    // with a unit diagonal (roclapack_getrs.hpp:157, :177), and the forward case needs
    // `notrans`, so the conjugate kernel of :124 is not cgetrs's.
    let l = find(
        &f,
        FactKind::Launch,
        "unit_forward_substitution_kernel",
        t,
        899,
    );
    assert_eq!(l.function, "rocsolver_trsm_lower");
    assert_eq!(l.values["macro"], "FORWARD_SUBSTITUTIONS");
    assert_eq!(l.values["macro_lines"], "120-142");
    assert!(!f.facts.iter().any(|x| x.kind == FactKind::Launch
        && x.subject == "conj_unit_forward_substitution_kernel"
        && x.line == 899));
    // A launch whose line names its kernel has no such value: sscal's own launch.
    let s = facts("rocblas", "rocblas_sscal");
    assert!(s
        .facts
        .iter()
        .filter(|f| f.kind == FactKind::Launch)
        .all(|f| !f.values.contains_key("macro")));
}

#[test]
fn rocsolver_leaves_its_library_only_into_rocblas_code() {
    // bdsqr calls `abs`, `sqrt` and `std::real` on real types (rocauxiliary_bdsqr.hpp:382,
    // :402): the complex type's friends in rocBLAS's public header
    // (rocblas-complex-types.h) are matched by name only, and are not rocBLAS's code.
    let f = facts("rocsolver", "rocsolver_sbdsqr");
    let into_header: Vec<&str> = f
        .facts
        .iter()
        .filter(|x| {
            x.kind == FactKind::CrossLibrary
                && x.values["callee"].contains("rocblas-complex-types.h")
        })
        .map(|x| x.subject.as_str())
        .collect();
    assert!(into_header.is_empty(), "{into_header:?}");
}

#[test]
fn a_status_the_caller_drops_is_no_return_of_the_api() {
    // rocsolver_potrf_template calls `rocsolver_trsm_mem<...>(...)` as a statement of
    // its own (roclapack_potrf.hpp): the workspace helper's `return
    // rocblas_status_success` ends the helper, not rocsolver_spotrf; the argument
    // check's status is returned by the impl (roclapack_potrf.cpp).
    let f = facts("rocsolver", "rocsolver_spotrf");
    let returns = |function: &str| -> Vec<&rocqa::model::Fact> {
        f.facts
            .iter()
            .filter(|x| {
                x.function == function
                    && matches!(x.kind, FactKind::ArgCheck | FactKind::QuickReturn)
            })
            .collect()
    };
    let dropped = returns("rocsolver_trsm_mem");
    assert!(!dropped.is_empty());
    assert!(dropped
        .iter()
        .all(|x| x.values.contains_key(rocqa::facts::CALLER_DROPS)));
    let kept = returns("rocsolver_potf2_potrf_argCheck");
    assert!(kept.len() >= 3, "{kept:?}");
    assert!(kept
        .iter()
        .all(|x| !x.values.contains_key(rocqa::facts::CALLER_DROPS)));
    // In the order the code runs them: the argument check before the allocation test.
    let order = |function: &str, condition: &str| {
        f.facts
            .iter()
            .find(|x| {
                x.function == function && x.values.get("condition").is_some_and(|c| c == condition)
            })
            .map(|x| x.order.clone())
            .unwrap_or_else(|| panic!("{function}: {condition}"))
    };
    assert!(
        order("rocsolver_potf2_potrf_argCheck", "n < 0 || lda < n")
            < order("rocsolver_potrf_impl", "!mem")
    );
}

#[test]
fn an_enumerator_a_caller_passes_is_carried_down() {
    // rocsolver_geqr2 calls larf with `rocblas_side_left` (roclapack_geqr2.hpp), so
    // larf's right-side kernel (rocauxiliary_larf_specialized_kernels.hpp:176, under
    // `not (side == rocblas_side_left)`) never runs for rocsolver_sgeqrf.
    let f = facts("rocsolver", "rocsolver_sgeqrf");
    let kernels: Vec<&str> = f
        .facts
        .iter()
        .filter(|x| x.kind == FactKind::Launch)
        .map(|x| x.subject.as_str())
        .collect();
    assert!(kernels.contains(&"larf_left_kernel_small"), "{kernels:?}");
    assert!(!kernels.contains(&"larf_right_kernel_small"), "{kernels:?}");
    assert!(
        f.excluded
            .iter()
            .any(|x| x.starts_with("larf_right_kernel_small")
                && x.contains("side = rocblas_side_left")),
        "{:?}",
        f.excluded
    );
}

/// A return every call of the API takes leaves what follows it unreached: cher2k (one
/// instance, not batched) returns into the block-recursive path at
/// rocblas_syr2k_her2k_kernels.cpp:560-562, so the non-recursive template's kernel
/// (:398) never runs; rocSOLVER's gemm returns into rocblasCall_gemm when every
/// increment is 1 (roclapack_gemm_specialized_kernels.hpp:192-195), which the
/// unit-increment overload always passes, so its own gemm_kernel never runs.
#[test]
fn a_return_always_taken_leaves_what_follows_unreached() {
    let her2k = facts("rocblas", "rocblas_cher2k");
    let k = "library/src/blas3/rocblas_syr2k_her2k_kernels.cpp";
    assert!(her2k
        .facts
        .iter()
        .all(|f| !(f.kind == FactKind::Launch && f.file == k && (396..=471).contains(&f.line))));
    assert!(
        her2k
            .excluded
            .iter()
            .any(|x| x.contains(&format!("at {k}:612"))
                && x.contains("the return at line 562 always comes first")),
        "{:#?}",
        her2k.excluded
    );
    let orgtr = facts("rocsolver", "rocsolver_sorgtr");
    let gemm = "library/src/specialized/roclapack_gemm_specialized_kernels.hpp";
    assert!(orgtr
        .facts
        .iter()
        .all(|f| !(f.kind == FactKind::Launch && f.subject == "gemm_kernel")));
    assert!(
        orgtr
            .excluded
            .iter()
            .any(|x| x.starts_with(&format!("gemm_kernel at {gemm}:"))
                && x.contains("`inca == 1 && incb == 1 && incc == 1` holds for this API")),
        "{:#?}",
        orgtr.excluded
    );
}

#[test]
fn a_return_another_function_already_took_is_compared_in_the_apis_names() {
    // rocblas_her_batched_impl passes its `n` and `batch_count` both to
    // rocblas_her_arg_check (rocblas_her.hpp:46: `!n || !batch_count` returns success)
    // and, once the check let the call through (rocblas_her_batched_imp.hpp tests its
    // status against rocblas_status_continue), to rocblas_internal_her_launcher_64,
    // whose own `!n_64 || !batch_count_64` (rocblas_her_kernels_64.cpp:46) then never
    // fires.
    let f = facts("rocblas", "rocblas_cher_batched_64");
    let k = "library/src/src64/blas2/rocblas_her_kernels_64.cpp";
    assert!(!has(&f, FactKind::QuickReturn, k, 46));
    let r = find(
        &f,
        FactKind::QuickReturn,
        "rocblas_status_success",
        "library/src/blas2/rocblas_her.hpp",
        46,
    );
    assert_eq!(r.values["condition"], "!n || !batch_count");
}

#[test]
fn what_follows_a_return_always_taken_and_a_branch_never_taken_is_not_the_apis() {
    // rocsolver_gemm returns through rocblasCall_gemm for unit increments
    // (roclapack_gemm_specialized_kernels.hpp:192-195), which every cheevdx call passes:
    // its pointer-mode test at :228 is never made.
    let f = facts("rocsolver", "rocsolver_cheevdx");
    let gemm = "library/src/specialized/roclapack_gemm_specialized_kernels.hpp";
    assert!(!has(&f, FactKind::PointerMode, gemm, 228));
    // herk runs the syr2k device function with TWOK = false: the barriers under
    // `if(TWOK)` (herk_syrk_device.hpp:1150-1187) are cher2k's only.
    let dev = "library/src/blas3/herk_syrk_device.hpp";
    let barrier_lines = |api: &str| {
        let f = facts("rocblas", api);
        find(
            &f,
            FactKind::Barrier,
            "rocblas_syr2k_her2k_mult_add_device",
            dev,
            1134,
        )
        .values["lines"]
            .clone()
    };
    assert_eq!(barrier_lines("rocblas_cherk_batched"), "1134, 1147");
    assert_eq!(
        barrier_lines("rocblas_cher2k_batched"),
        "1134, 1147, 1174, 1187"
    );
    // potrf gives potf2 at most POTRF_BLOCKSIZE columns (127 for single complex):
    // below its switch size, each block of its loop, and the last block the loop
    // leaves (roclapack_potrf.hpp:188, 207-211, 269-271). potf2's large-n path
    // (sqrtDiagOnward, roclapack_potf2.hpp:232) is cpotf2's, not cpotrf's.
    let potf2 = "library/src/lapack/roclapack_potf2.hpp";
    for api in ["rocsolver_cpotrf", "rocsolver_chegvj_batched"] {
        let f = facts("rocsolver", api);
        assert!(!has(&f, FactKind::Launch, potf2, 232), "{api}");
        assert!(
            f.excluded
                .iter()
                .any(|x| x.starts_with(&format!("sqrtDiagOnward at {potf2}:232"))),
            "{api}: {:#?}",
            f.excluded
        );
    }
    assert!(has(
        &facts("rocsolver", "rocsolver_cpotf2"),
        FactKind::Launch,
        potf2,
        232
    ));
}

#[test]
fn a_size_query_inside_a_quick_return_block_is_ordered_before_its_return() {
    // rocblas_tbmv.hpp:56-59: the size query at :58 returns before the block's
    // `return rocblas_status_success` at :59.
    let f = facts("rocblas", "rocblas_stbmv_batched");
    let file = "library/src/blas2/rocblas_tbmv.hpp";
    let query = f
        .facts
        .iter()
        .find(|x| x.kind == FactKind::WorkspaceQuery && x.file == file && x.line == 58)
        .expect("size query at :58");
    let success = find(
        &f,
        FactKind::QuickReturn,
        "rocblas_status_success",
        file,
        56,
    );
    assert!(
        query.order < success.order,
        "{:?} {:?}",
        query.order,
        success.order
    );
}

#[test]
fn a_return_into_another_path_is_negated_in_what_follows_it() {
    // roclapack_getri.hpp:350-355: getri returns through getri_run_small for
    // n <= TRTRI_MAX_COLS (64), so the large kernels launch only for n > 64.
    let f = facts("rocsolver", "rocsolver_sgetri");
    let getri = "library/src/lapack/roclapack_getri.hpp";
    let large = find(&f, FactKind::Launch, "getri_kernel_large1", getri, 381);
    assert!(
        large.conditions.iter().any(|c| c == "not (n <= 64)"),
        "{:?}",
        large.conditions
    );
    // An error return (RETURN_IF_HIP_ERROR's `_status != hipSuccess`) is no such path.
    assert!(large.conditions.iter().all(|c| !c.contains("_status")));
}

#[test]
fn a_cross_library_call_names_the_overload_it_resolves_to() {
    // rocblas.hpp:2284 calls `rocblas_internal_trsm_workspace_size<T>`: the `<T>`
    // overload (rocblas_trsm_kernels.hpp:1810), not `<BLOCK, BATCHED, T>` (:1685).
    let f = facts("rocsolver", "rocsolver_sgetrf");
    let callees: Vec<&str> = f
        .facts
        .iter()
        .filter(|x| {
            x.kind == FactKind::CrossLibrary && x.subject == "rocblas_internal_trsm_workspace_size"
        })
        .map(|x| x.values["callee"].as_str())
        .collect();
    assert_eq!(
        callees,
        ["rocblas:library/src/blas3/rocblas_trsm_kernels.hpp:1810"]
    );
    // lartg's `isnan` of a float is the standard library's, not rocBLAS's
    // `std::isnan(rocblas_bfloat16)` (rocblas_bfloat16.h:307).
    let f = facts("rocsolver", "rocsolver_sbdsqr");
    assert!(f
        .facts
        .iter()
        .all(|x| !(x.kind == FactKind::CrossLibrary && x.subject == "isnan")));
}

#[test]
fn a_return_is_ordered_where_a_caller_keeps_its_status() {
    // syevd's size helper calls rocsolver_get_alg_mode and drops its status
    // (roclapack_syevd_heevd.hpp:78); the template returns it through ROCBLAS_CHECK
    // (:194), past the impl's size query and allocation test
    // (roclapack_syevd_heevd_batched.cpp:84-95).
    let f = facts("rocsolver", "rocsolver_cheevd_batched");
    let checksum = f
        .facts
        .iter()
        .find(|x| {
            x.kind == FactKind::ArgCheck && x.file == "library/src/common/rocsolver_handle.cpp"
        })
        .expect("the handle checksum test");
    let no_mem = find(
        &f,
        FactKind::ArgCheck,
        "rocblas_status_memory_error",
        "library/src/lapack/roclapack_syevd_heevd_batched.cpp",
        94,
    );
    assert!(
        no_mem.order < checksum.order,
        "{:?} {:?}",
        no_mem.order,
        checksum.order
    );
}

#[test]
fn a_scalar_a_caller_passes_by_address_decides_the_callees_test_of_it() {
    // rocsolver's trsm passes `&one` for alpha (roclapack_trsm_specialized_kernels.hpp:856)
    // in host mode; rocBLAS's launcher reads it into `alpha_h` (rocblas_trsm_kernels.hpp:
    // 3786-3788) and sets B to zero only when `alpha_h == T(0.0)` (:3795-3797). The copy
    // from a device pointer (:3791-3792) is not taken in host mode.
    let f = facts("rocsolver", "rocsolver_zgeblttrf_npvt");
    assert!(
        !f.facts
            .iter()
            .any(|x| x.kind == FactKind::Launch && x.subject == "rocblas_set_matrix_trsm"),
        "set_block_unit's launch listed"
    );
    assert!(
        f.excluded
            .iter()
            .any(|why| why.contains("rocblas_set_matrix_trsm")),
        "{:?}",
        f.excluded
    );
}

#[test]
fn a_pointer_mode_test_says_where_the_library_sets_the_mode() {
    // cheevdj reaches rocBLAS's gemm from sytrd, which sets device mode
    // (roclapack_sytrd_hetrd.hpp:169), from larfb, which sets host mode
    // (rocauxiliary_larfb.hpp:215), and from stedcj's local_gemm, which sets none.
    let f = facts("rocsolver", "rocsolver_cheevdj");
    let test = f
        .facts
        .iter()
        .find(|x| {
            x.kind == FactKind::PointerMode
                && x.file == "library/src/blas3/rocblas_gemm.hpp"
                && x.line == 40
        })
        .expect("the test at rocblas_gemm.hpp:40");
    let sources: Vec<&str> = test.values[rocqa::facts::MODE_SET].split(';').collect();
    assert!(sources.contains(&"caller"), "{sources:?}");
    assert!(
        sources.contains(&"rocblas_pointer_mode_device|rocsolver|rocsolver_sytrd_hetrd_template|library/src/lapack/roclapack_sytrd_hetrd.hpp|127|165-169"),
        "{sources:?}"
    );
    assert!(
        sources.iter().any(|s| s.starts_with("rocblas_pointer_mode_host|rocsolver|rocsolver_larfb_template|library/src/auxiliary/rocauxiliary_larfb.hpp|") && s.ends_with("-215")),
        "{sources:?}"
    );
}

#[test]
fn a_type_handed_on_east_const_is_deduced() {
    // rocblas_gemv_kernels_64.cpp:81-88 passes `adjust_ptr_batch(A, ...)` of its
    // `Ti const* A` to the 32-bit launcher's `const Ti* A`: Ti is the complex element,
    // so `is_float || is_double` (rocblas_gemv_kernels.cpp:582) never holds for cgemv_64.
    let f = facts("rocblas", "rocblas_cgemv_64");
    assert!(
        !f.facts
            .iter()
            .any(|x| x.kind == FactKind::Launch && x.subject == "rocblas_gemv_scal_kernel"),
        "rocblas_gemv_scal_kernel listed for cgemv_64"
    );
}

#[test]
fn a_32bit_api_takes_the_64bit_launchers_32bit_path() {
    // ssymm's block loop hands rocblas_internal_gemm_64 an int64_t `nb` below its
    // rocblas_int `ka` (rocblas_symm_hemm_kernels.cpp:562-589); sgesvd reaches it
    // through trmm's sub-blocks. Sizes of a 32-bit API fit 32 bits, so `dims_32bit &&
    // leading_32bit` (rocblas_gemm_kernels_64.cpp:58-63) holds and the source gemm
    // kernels of the 64-bit path never launch; the `_64` form keeps them.
    let source = |f: &ApiFacts| {
        f.facts
            .iter()
            .filter(|x| {
                x.kind == FactKind::Launch && x.file == "library/src/blas3/rocblas_gemm_source.hpp"
            })
            .count()
    };
    assert_eq!(source(&facts("rocblas", "rocblas_ssymm")), 0);
    assert_eq!(source(&facts("rocsolver", "rocsolver_sgesvd")), 0);
    assert!(source(&facts("rocblas", "rocblas_dsymm_64")) > 0);
}

#[test]
fn arguments_picked_by_one_test_stay_together() {
    // trsm's 64-bit path calls gemm with `LEFT ? transA : none` and `LEFT ? none :
    // transA` (rocblas_trsm_kernels.hpp:3526-3527): one operation is always `none`, so
    // the source gemm's launches for two transposed operands ('C','C' at
    // rocblas_gemm_source.hpp:797, 'C','T' at :803) never run for ctrsm_64, while its
    // ('C','N') and ('N','C') launches do.
    let f = facts("rocblas", "rocblas_ctrsm_64");
    let lines: std::collections::BTreeSet<u32> = f
        .facts
        .iter()
        .filter(|x| {
            x.kind == FactKind::Launch && x.file == "library/src/blas3/rocblas_gemm_source.hpp"
        })
        .map(|x| x.line)
        .collect();
    for never in [797, 803, 714, 720, 711] {
        assert!(!lines.contains(&never), "{never} in {lines:?}");
    }
    for runs in [800, 806, 717, 723] {
        assert!(lines.contains(&runs), "{runs} not in {lines:?}");
    }
}

#[test]
fn sasum_reaches_the_generic_wavefront_reduce_only() {
    // rocblas_reduction.hpp:40-51 is the generic `rocblas_wavefront_reduce<N, T>`; :54,
    // :68, :82 and :102 overload it for the two complex types, bfloat16 and half. sasum
    // reduces floats, so only :47's `__shfl_down` is its.
    let f = facts("rocblas", "rocblas_sasum");
    let red = "library/src/blas1/rocblas_reduction.hpp";
    assert!(has(&f, FactKind::Wavefront, red, 47));
    for line in [60, 74, 94, 114] {
        assert!(!has(&f, FactKind::Wavefront, red, line), "{line}");
    }
    // The complex form reaches the complex overload.
    let c = facts("rocblas", "rocblas_scasum");
    assert!(c
        .facts
        .iter()
        .any(|x| x.kind == FactKind::Wavefront && x.file == red && (60..=75).contains(&x.line)));
}

#[test]
fn a_launch_reached_only_inside_a_loop_is_not_one_every_call_makes() {
    // sytd2 calls rocblasCall_syr2_her2 inside its `for j` loops only
    // (roclapack_sytd2_hetd2.hpp:271-312, :319-360): n == 1 runs no step.
    let f = facts("rocsolver", "rocsolver_chetd2");
    let her2: Vec<&Fact> = f
        .facts
        .iter()
        .filter(|x| x.kind == FactKind::Launch && x.subject == "rocblas_her2_kernel")
        .collect();
    assert!(!her2.is_empty());
    for l in her2 {
        assert!(
            l.values.contains_key(rocqa::facts::ON_A_TESTED_PATH),
            "{}:{} {:?}",
            l.file,
            l.line,
            l.conditions
        );
    }
}

#[test]
fn a_success_the_caller_only_tests_for_errors_is_no_return_of_the_api() {
    // rocblas_internal_trsm_template_mem stores the size helper's status and returns it
    // only where it is an error (rocblas_trsm_kernels.hpp:1926-1929): the helper's
    // `n == 1 && side == left` success (:1704-1711) ends the helper, and strsm goes on
    // to allocate and launch. The helper's null tests (:1697) are of `&w_x_tmp_size`
    // and the like (:1921-1925), addresses that are never null. scal's impl returns its
    // launcher's status under no test, so the launcher's quick return stays the API's.
    const K: &str = "library/src/blas3/rocblas_trsm_kernels.hpp";
    let trsm = facts("rocblas", "rocblas_strsm");
    let success = find(
        &trsm,
        FactKind::QuickReturn,
        "rocblas_status_success",
        K,
        1704,
    );
    assert!(success.values.contains_key(rocqa::facts::CALLER_DROPS));
    assert!(!has(&trsm, FactKind::ArgCheck, K, 1697));
    // trtri's `if(n <= NB) return rocblas_trtri_small<NB, T>(...)`: the callee's
    // `n > NB` return (rocblas_trtri.hpp:530) cannot fire.
    assert!(!has(
        &trsm,
        FactKind::ArgCheck,
        "library/src/blas3/rocblas_trtri.hpp",
        530
    ));
    let scal = facts("rocblas", "rocblas_sscal");
    let quick: Vec<&Fact> = scal
        .facts
        .iter()
        .filter(|x| {
            x.kind == FactKind::QuickReturn
                && x.values.get("status").map(String::as_str) == Some("rocblas_status_success")
        })
        .collect();
    assert!(!quick.is_empty());
    assert!(quick
        .iter()
        .filter(|x| x.function.starts_with("rocblas_internal_scal"))
        .all(|x| !x.values.contains_key(rocqa::facts::CALLER_DROPS)));
}

/// A parameter reassigned away from a value no longer has it below:
/// `rocblas_internal_trsm_template` turns a conjugate transpose into a transpose for a
/// real type (rocblas_trsm_kernels.hpp:3753-3754) before it calls trsv, so trsv's
/// `transA == rocblas_operation_conjugate_transpose` launches (rocblas_trsv_kernels.cpp
/// :968-971, :983-986) never run for rocblas_strsm_batched; they do for the complex form.
#[test]
fn a_parameter_reassigned_away_from_a_value_no_longer_has_it() {
    let trsv = "library/src/blas2/rocblas_trsv_kernels.cpp";
    let conj_sites = |api: &str| {
        facts("rocblas", api)
            .facts
            .iter()
            .filter(|f| {
                f.kind == FactKind::Launch
                    && f.file == trsv
                    && f.conditions
                        .iter()
                        .any(|c| c == "transA == rocblas_operation_conjugate_transpose")
            })
            .count()
    };
    assert_eq!(conj_sites("rocblas_strsm_batched"), 0);
    assert!(conj_sites("rocblas_ctrsm_batched") > 0);
}
