//! What batching buys the compile check, with the real ROCm compiler, gfx90a only.
//!
//! Generates N small distinct kernels (five bodies, each with its own name and
//! constants) and checks them three ways in one run:
//! 1. one snippet per file (`batch_size = 1`): each snippet its own compiler processes;
//! 2. batched, `batch_size = 25` snippets per translation unit;
//! 3. the same batch again with the cache filled: the cost of a cache hit.
//!
//! Every snippet goes through both passes either way (device code generation for gfx90a,
//! then the host-side `-fsyntax-only`), so mode 1 starts 2 processes per snippet and mode
//! 2 starts 2 per 25. Prints plain lines.
//!
//! Run: `cargo bench --bench compile_throughput` (N from `COMPILE_BENCH_N`, default 50;
//! jobs from `COMPILE_BENCH_JOBS`, default all cores). Needs scripts/setup-hip.sh.

use std::time::{Duration, Instant};

use rocqa::validate::compile::{CompileOptions, Compiler, Snippet, Toolchain};

fn kernel(i: usize) -> String {
    let c = i as f32 * 0.5 + 1.0;
    let body = match i % 5 {
        0 => format!("    if (t < n) y[t] = {c:.1}f * x[t] + y[t];"),
        1 => format!("    if (t < n) y[t] = fminf(fmaxf(x[t], -{c:.1}f), {c:.1}f);"),
        2 => format!(
            "    __shared__ float s[{w}];\n    s[threadIdx.x] = t < n ? x[t] : 0.0f;\n    __syncthreads();\n    for (int o = {h}; o > 0; o >>= 1) {{\n        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];\n        __syncthreads();\n    }}\n    if (threadIdx.x == 0) y[blockIdx.x] = s[0] * {c:.1}f;",
            w = 64 << (i % 3),
            h = 32 << (i % 3)
        ),
        3 => format!(
            "    if (t > 0 && t + 1 < n) y[t] = {c:.1}f * (x[t - 1] - 2.0f * x[t] + x[t + 1]);"
        ),
        _ => format!(
            "    float acc = 0.0f;\n    for (int j = 0; j < {m}; ++j) acc += x[(t + j) % n] * {c:.1}f;\n    if (t < n) y[t] = acc;",
            m = 4 + i % 7
        ),
    };
    format!(
        "#include <hip/hip_runtime.h>\n\n__global__ void bench_k{i}(const float* x, float* y, int n) {{\n    int t = blockIdx.x * blockDim.x + threadIdx.x;\n{body}\n}}\n\nvoid launch_k{i}(const float* x, float* y, int n, hipStream_t s) {{\n    hipLaunchKernelGGL(bench_k{i}, dim3((n + 255) / 256), dim3(256), 0, s, x, y, n);\n}}\n"
    )
}

fn per_min(n: usize, d: Duration) -> f64 {
    n as f64 * 60.0 / d.as_secs_f64()
}

fn main() {
    let n: usize = std::env::var("COMPILE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let jobs: usize = std::env::var("COMPILE_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| CompileOptions::default().jobs);
    let tc = Toolchain::detect(Some(&["gfx90a".to_string()]))
        .unwrap_or_else(|e| panic!("compile_throughput needs the ROCm toolchain: {e}"));
    println!("toolchain: {}", tc.describe());
    println!("snippets: {n} distinct small kernels, jobs: {jobs}");
    let snippets: Vec<Snippet> = (0..n)
        .map(|i| Snippet {
            id: format!("k{i}"),
            code: kernel(i),
        })
        .collect();
    let opts = |batch_size| CompileOptions {
        jobs,
        batch_size,
        ..CompileOptions::default()
    };

    let solo = Compiler::new(tc.clone(), opts(1), None).expect("compiler");
    let t = Instant::now();
    let out = solo.check(&snippets);
    let d_solo = t.elapsed();
    let bad: Vec<_> = out.iter().filter(|o| !o.ok).collect();
    assert!(bad.is_empty(), "generated kernels must compile: {bad:#?}");
    println!(
        "one file per snippet: {n} in {:.1} s = {:.0} snippets/min",
        d_solo.as_secs_f64(),
        per_min(n, d_solo)
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("compile.sqlite");
    let batched = Compiler::new(tc, opts(25), Some(&db)).expect("compiler");
    let t = Instant::now();
    let out = batched.check(&snippets);
    let d_batch = t.elapsed();
    assert!(
        out.iter().all(|o| o.ok && !o.cached),
        "batched run: {out:#?}"
    );
    println!(
        "batched, 25 per file: {n} in {:.1} s = {:.0} snippets/min ({:.1}x)",
        d_batch.as_secs_f64(),
        per_min(n, d_batch),
        d_solo.as_secs_f64() / d_batch.as_secs_f64()
    );

    let rounds = 20;
    let t = Instant::now();
    for _ in 0..rounds {
        let out = batched.check(&snippets);
        assert!(out.iter().all(|o| o.ok && o.cached));
    }
    let d_hit = t.elapsed();
    println!(
        "cache hit: {:.1} us per snippet ({} checks of {n}, screen + sha256 + sqlite lookup)",
        d_hit.as_secs_f64() * 1e6 / (rounds * n) as f64,
        rounds
    );
}
