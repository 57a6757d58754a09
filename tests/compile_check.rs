//! The compile check against the real ROCm compiler (bookworm's clang-15, ROCm 5.2.3
//! device libraries): real device code generation, real diagnostics.
//!
//! These tests fail, never skip, when the toolchain is missing: run
//! `scripts/setup-hip.sh` first (it also fetches the rocBLAS / rocSOLVER headers the
//! library test compiles against). Most tests use gfx90a only, to stay within ~1 minute
//! on 2 cores; one probes all three default targets.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use rocqa::validate::compile::{
    stage, CompileOptions, CompileOutcome, Compiler, Snippet, Toolchain,
};

fn toolchain() -> Toolchain {
    // `RUST_LOG=rocqa=debug cargo test --test compile_check -- --nocapture` shows the
    // batches being split.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    static TC: OnceLock<Toolchain> = OnceLock::new();
    TC.get_or_init(|| {
        Toolchain::detect(Some(&["gfx90a".to_string()]))
            .unwrap_or_else(|e| panic!("the ROCm toolchain is needed for these tests: {e}"))
    })
    .clone()
}

fn compiler(cache: Option<&std::path::Path>, include_dirs: Vec<PathBuf>) -> Compiler {
    let opts = CompileOptions {
        include_dirs,
        jobs: 2,
        timeout_secs: 60,
        memory_mb: 2048,
        batch_size: 25,
    };
    Compiler::new(toolchain(), opts, cache).unwrap_or_else(|e| panic!("{e}"))
}

fn snip(id: &str, code: &str) -> Snippet {
    Snippet {
        id: id.into(),
        code: code.into(),
    }
}

fn one(c: &Compiler, id: &str, code: &str) -> CompileOutcome {
    let mut out = c.check(&[snip(id, code)]);
    assert_eq!(out.len(), 1);
    let o = out.pop().unwrap();
    eprintln!("{}: {} [{}]\n{}", o.id, o.ok, o.stage, o.diagnostics);
    o
}

const GOOD: &str = r#"#include <hip/hip_runtime.h>

__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

void run(float* x, int n) {
    hipLaunchKernelGGL(scale, dim3((n + 255) / 256), dim3(256), 0, 0, x, 2.0f, n);
    scale<<<dim3(1), dim3(64)>>>(x, 1.0f, n);
}
"#;

const BIG_SHARED: &str = r#"#include <hip/hip_runtime.h>
__global__ void k3(float* x) {
    __shared__ float buf[40000];  // 160,000 bytes of LDS; the limit is 65,536
    buf[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = buf[39999 - threadIdx.x];
}
"#;

#[test]
fn probe_answers_are_kept_per_toolchain() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("compile.sqlite");
    let first = Toolchain::detect_cached(None, Some(&cache)).unwrap();
    let probes = |stage: &str| -> i64 {
        rusqlite::Connection::open(&cache)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM compile_outcomes WHERE stage = ?1",
                [stage],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(probes("probe"), 3, "one answer per default target");
    let again = Toolchain::detect_cached(None, Some(&cache)).unwrap();
    assert_eq!(again.targets, first.targets);
    assert_eq!(probes("probe"), 3);
    // The answers are read from the file: one marked refused there is refused again
    // without asking the compiler.
    rusqlite::Connection::open(&cache)
        .unwrap()
        .execute(
            "UPDATE compile_outcomes SET ok = 0, diagnostics = 'refused in the cache' \
             WHERE stage = 'probe'",
            [],
        )
        .unwrap();
    let e = Toolchain::detect_cached(None, Some(&cache)).unwrap_err();
    assert!(e.to_string().contains("refused in the cache"), "{e}");
}

#[test]
fn detect_probes_the_three_default_targets() {
    let tc = Toolchain::detect(None)
        .unwrap_or_else(|e| panic!("the ROCm toolchain is needed for these tests: {e}"));
    assert_eq!(tc.targets, ["gfx908", "gfx90a", "gfx940"]);
    let d = tc.describe();
    assert!(d.starts_with("clang 15."), "{d}");
    assert!(
        d.ends_with("device libs, targets gfx908,gfx90a,gfx940"),
        "{d}"
    );
    // A target clang-15 refuses is an error that says so.
    let e = Toolchain::detect(Some(&["gfx942".to_string()])).unwrap_err();
    assert!(e.to_string().contains("gfx942"), "{e}");
    // And every target does real device codegen: the good kernel passes on all three.
    let c = Compiler::new(tc, CompileOptions::default(), None).unwrap();
    let o = one(&c, "good3", GOOD);
    assert!(o.ok, "{o:?}");
}

#[test]
fn a_good_kernel_and_its_launch_pass() {
    let o = one(&compiler(None, vec![]), "good", GOOD);
    assert_eq!(
        (o.ok, o.stage.as_str(), o.diagnostics.as_str()),
        (true, stage::OK, "")
    );
}

#[test]
fn too_much_shared_memory_fails_in_the_backend() {
    let o = one(&compiler(None, vec![]), "lds", BIG_SHARED);
    assert!(!o.ok);
    assert_eq!(o.stage, stage::BACKEND, "{}", o.diagnostics);
    assert!(
        o.diagnostics
            .contains("local memory (160000) exceeds limit (65536)"),
        "{}",
        o.diagnostics
    );
    assert!(
        o.diagnostics.contains("compiling for gfx90a"),
        "{}",
        o.diagnostics
    );
}

#[test]
fn host_code_calling_device_functions_fails() {
    let c = compiler(None, vec![]);
    // Directly: both sides' front ends refuse the call; the first pass (device) says so.
    let direct = one(
        &c,
        "direct",
        "#include <hip/hip_runtime.h>\n__device__ float sq(float v) { return v * v; }\nfloat host_fn(float v) { return sq(v); }\n",
    );
    assert_eq!(direct.stage, stage::FRONTEND, "{direct:?}");
    assert!(
        direct
            .diagnostics
            .starts_with("direct.hip:3:33: error: no matching function for call to 'sq'"),
        "{}",
        direct.diagnostics
    );
    // Through a __host__ __device__ function: every device pass accepts it, only the
    // host-side pass sees the host use.
    let hd = one(
        &c,
        "via_hd",
        "#include <hip/hip_runtime.h>\n__device__ float sq(float v) { return v * v; }\n__host__ __device__ float hd(float v) { return sq(v); }\nfloat use() { return hd(2.0f); }\n",
    );
    assert_eq!(hd.stage, stage::FRONTEND, "{hd:?}");
    assert!(
        hd.diagnostics
            .contains("reference to __device__ function 'sq' in __host__ __device__ function"),
        "{}",
        hd.diagnostics
    );
    assert!(
        hd.diagnostics.ends_with("when compiling for host."),
        "{}",
        hd.diagnostics
    );
}

#[test]
fn syntax_errors_and_unknown_builtins_fail_in_the_front_end() {
    let c = compiler(None, vec![]);
    let o = one(
        &c,
        "syntax",
        "#include <hip/hip_runtime.h>\n__global__ void ks(float* x) { x[0] = 1.0f }\n",
    );
    assert_eq!(o.stage, stage::FRONTEND);
    assert!(
        o.diagnostics
            .starts_with("syntax.hip:2:43: error: expected ';' after expression"),
        "{}",
        o.diagnostics
    );
    let o = one(
        &c,
        "builtin",
        "#include <hip/hip_runtime.h>\n__global__ void kb(float* x) { x[0] = __builtin_amdgcn_frobnicate(x[1]); }\n",
    );
    assert_eq!(o.stage, stage::FRONTEND);
    assert!(
        o.diagnostics
            .contains("use of undeclared identifier '__builtin_amdgcn_frobnicate'"),
        "{}",
        o.diagnostics
    );
    assert!(!o.diagnostics.contains("/tmp/"), "{}", o.diagnostics);
}

#[test]
fn forbidden_includes_are_refused_before_any_compiler_runs() {
    // A toolchain whose "clang" does not exist: had anything been compiled, the outcome
    // would be a `limit` ("could not run the compiler"), not `screen`.
    let mut tc = toolchain();
    tc.clang = PathBuf::from("/nonexistent/clang++");
    let c = Compiler::new(tc, CompileOptions::default(), None).unwrap();
    let out = c.check(&[
        snip(
            "passwd",
            "#include \"/etc/passwd\"\n__global__ void k() {}\n",
        ),
        snip("dotdot", "#include <../x>\n__global__ void k() {}\n"),
        snip(
            "asm",
            "__global__ void k() { asm volatile(\"s_nop 0\"); }\n",
        ),
    ]);
    for o in &out {
        assert_eq!(o.stage, stage::SCREEN, "{o:?}");
        assert!(!o.ok && !o.cached);
    }
    assert!(
        out[0].diagnostics.contains("/etc/passwd"),
        "{}",
        out[0].diagnostics
    );
    assert!(
        out[1].diagnostics.contains("`..`"),
        "{}",
        out[1].diagnostics
    );
}

/// Ten small kernels, distinct by name and constant.
fn kernel(i: usize) -> String {
    format!(
        "#include <hip/hip_runtime.h>\n\n__global__ void add{i}(float* x, int n) {{\n    int t = blockIdx.x * blockDim.x + threadIdx.x;\n    if (t < n) x[t] += {i}.0f;\n}}\n\nvoid launch{i}(float* x, int n) {{ add{i}<<<(n + 63) / 64, 64>>>(x, n); }}\n"
    )
}

#[test]
fn a_batch_fails_exactly_its_bad_snippets_and_is_cached_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("compile.sqlite");
    let c = compiler(Some(&db), vec![]);
    let mut batch: Vec<Snippet> = (0..10)
        .map(|i| snip(&format!("s{i}"), &kernel(i)))
        .collect();
    // s3: a front-end error on its line 5; s7: too much LDS, a backend error.
    batch[3].code = kernel(3).replace("x[t] += 3.0f;", "x[t] += undefined_thing;");
    batch[7].code = BIG_SHARED.replace("k3", "k7");
    let t = Instant::now();
    let first = c.check(&batch);
    let took = t.elapsed();
    let failed: Vec<&str> = first
        .iter()
        .filter(|o| !o.ok)
        .map(|o| o.id.as_str())
        .collect();
    assert_eq!(failed, ["s3", "s7"], "{first:#?}");
    assert_eq!(first[3].stage, stage::FRONTEND);
    assert!(
        first[3]
            .diagnostics
            .starts_with("s3.hip:5:24: error: use of undeclared identifier 'undefined_thing'"),
        "{}",
        first[3].diagnostics
    );
    assert_eq!(first[7].stage, stage::BACKEND);
    assert!(
        first[7]
            .diagnostics
            .contains("local memory (160000) exceeds limit (65536) in function"),
        "{}",
        first[7].diagnostics
    );
    assert!(
        first[7].diagnostics.contains("k7"),
        "{}",
        first[7].diagnostics
    );
    assert!(
        !first[7].diagnostics.contains("rocqa_s"),
        "{}",
        first[7].diagnostics
    );
    for (i, o) in first.iter().enumerate() {
        assert_eq!(o.id, format!("s{i}"), "input order");
        assert!(!o.cached);
        if o.ok {
            assert!(o.diagnostics.is_empty());
        }
    }
    // A bad snippet's diagnostics are its own.
    assert!(!first[3].diagnostics.contains("local memory"));
    assert!(!first[7].diagnostics.contains("undefined_thing"));

    let t = Instant::now();
    let second = c.check(&batch);
    let again = t.elapsed();
    assert!(second.iter().all(|o| o.cached), "{second:#?}");
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(
            (a.ok, &a.stage, &a.diagnostics),
            (b.ok, &b.stage, &b.diagnostics)
        );
    }
    // Cached under the code, not the id: a renamed copy is a hit with its own name.
    let renamed = c.check(&[snip("renamed", &batch[3].code)]);
    assert!(renamed[0].cached && renamed[0].diagnostics.starts_with("renamed.hip:5:24:"));
    eprintln!("10 snippets, 2 bad: {took:?} compiled, {again:?} cached");
}

#[test]
fn clashing_extern_c_names_do_not_fail_good_snippets() {
    // Both define the same unmangled kernel: fine apart, a redefinition together. The
    // error points at both snippets, so each is confirmed alone, and passes.
    let c = compiler(None, vec![]);
    let code = |v: &str| {
        format!("#include <hip/hip_runtime.h>\nextern \"C\" __global__ void add(float* x) {{ x[0] += {v}; }}\n")
    };
    let out = c.check(&[
        snip("a", &code("1.0f")),
        snip("b", &code("2.0f")),
        snip("c", &kernel(1)),
        snip("d", &kernel(2)),
    ]);
    assert!(out.iter().all(|o| o.ok), "{out:#?}");
}

#[test]
fn runaway_compiles_hit_the_limit() {
    // 10^7 initializers: more than 1 GB of address space or 5 seconds, whichever first.
    let mut code = String::from("#define A0 1,1,1,1,1,1,1,1,1,1\n");
    for i in 1..7 {
        let p = i - 1;
        code.push_str(&format!(
            "#define A{i} A{p},A{p},A{p},A{p},A{p},A{p},A{p},A{p},A{p},A{p}\n"
        ));
    }
    code.push_str("int big[] = { A6 };\n");
    let opts = CompileOptions {
        timeout_secs: 5,
        memory_mb: 1024,
        jobs: 1,
        ..CompileOptions::default()
    };
    let c = Compiler::new(toolchain(), opts, None).unwrap();
    let o = one(&c, "bomb", &code);
    assert_eq!(o.stage, stage::LIMIT, "{o:?}");
    assert!(
        o.diagnostics.contains("limit of") || o.diagnostics.contains("crashed"),
        "{}",
        o.diagnostics
    );
}

#[test]
fn a_rocblas_call_compiles_against_the_pinned_headers() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rocm_sources/headers");
    let dirs: Vec<PathBuf> = ["rocblas-6.4.4", "rocsolver-6.4.3"]
        .iter()
        .map(|d| root.join(d).join("usr/include"))
        .collect();
    for d in &dirs {
        assert!(
            d.join(if d.to_string_lossy().contains("rocblas") {
                "rocblas/rocblas.h"
            } else {
                "rocsolver/rocsolver.h"
            })
            .is_file(),
            "{} is missing: run scripts/setup-hip.sh",
            d.display()
        );
    }
    let c = compiler(None, dirs);
    let out = c.check(&[
        snip(
            "sscal",
            "#include <rocblas/rocblas.h>\n\nrocblas_status scale(rocblas_handle h, float* d_x, int n) {\n    const float alpha = 2.0f;\n    return rocblas_sscal(h, n, &alpha, d_x, 1);\n}\n",
        ),
        snip(
            "getrf",
            "#include <rocsolver/rocsolver.h>\n\nrocblas_status lu(rocblas_handle h, float* A, int n, rocblas_int* ipiv, rocblas_int* info) {\n    return rocsolver_sgetrf(h, n, n, A, n, ipiv, info);\n}\n",
        ),
        snip(
            "wrong_args",
            "#include <rocblas/rocblas.h>\nvoid f(rocblas_handle h, float* x) { rocblas_sscal(h, 4, 2.0f, x, 1); }\n",
        ),
    ]);
    assert!(out[0].ok, "{:?}", out[0]);
    assert!(out[1].ok, "{:?}", out[1]);
    assert_eq!(out[2].stage, stage::FRONTEND);
    assert!(
        out[2].diagnostics.contains("wrong_args.hip:2:")
            && out[2].diagnostics.contains("rocblas_sscal"),
        "{}",
        out[2].diagnostics
    );
    // Header paths are cut to the include-relative name.
    assert!(
        !out[2].diagnostics.contains("rocm_sources"),
        "{}",
        out[2].diagnostics
    );
}
