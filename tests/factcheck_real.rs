//! The fact check (`contradicts-code`) on real rocBLAS 6.4.4 and rocSOLVER 6.4.3 entries,
//! through `rocqa validate` (the real binary): LLM-style answers with a planted
//! contradiction (a kernel of another API, a wrong block size or constant, a wrong status
//! for a quick return or argument check, a wrong LDS size, a barrier in a kernel with
//! none, a target its launch never runs on) are rejected naming the fact
//! and its `file:line`; the same answers with the right values are kept.
#![cfg(feature = "real-sources")]

mod common;

use std::process::Command;

use common::{jsonl, repo, BIN};
use rocqa::model::{Check, Citation, Entry, PieceRef, PieceRole, SourceRef, TokenUsage};
use rocqa::slice::lines_hash;

const RB: (&str, &str) = ("rocblas", "6.4.4");
const RS: (&str, &str) = ("rocsolver", "6.4.3");
const SCAL: &str = "library/src/blas1/rocblas_scal_kernels.hpp";
const SCAL_IMP: &str = "library/src/blas1/rocblas_scal_imp.hpp";
const RB_DECL: &str = "library/include/internal/rocblas-functions.h";
const GER: &str = "library/src/blas2/rocblas_ger.hpp";
const GER_K: &str = "library/src/blas2/rocblas_ger_kernels.hpp";
const DOT_K: &str = "library/src/blas1/rocblas_dot_kernels.hpp";
const RS_DECL: &str = "library/include/rocsolver/rocsolver-functions.h";
const POTRF: &str = "library/src/lapack/roclapack_potrf.hpp";
const POTF2: &str = "library/src/lapack/roclapack_potf2.hpp";

fn lines((lib, version): (&str, &str), file: &str) -> Vec<String> {
    std::fs::read_to_string(
        repo()
            .join("rocm_sources")
            .join(format!("{lib}-{version}"))
            .join(file),
    )
    .expect("sources fetched (scripts/setup.sh)")
    .lines()
    .map(str::to_string)
    .collect()
}

fn piece(at: (&str, &str), role: PieceRole, name: &str, file: &str, r: (u32, u32)) -> PieceRef {
    PieceRef {
        role,
        name: name.into(),
        lib: at.0.into(),
        file: file.into(),
        start: r.0,
        end: r.1,
        sha256: lines_hash(&lines(at, file), r.0, r.1),
        expansion: None,
    }
}

/// An API, the code shown for it, and where its answers cite.
struct Subject {
    at: (&'static str, &'static str),
    family: &'static str,
    api: &'static str,
    slice: Vec<PieceRef>,
    cite: (&'static str, u32, u32),
}

fn subjects() -> Vec<Subject> {
    use PieceRole::{Declaration, Kernel, Launcher};
    let entry_point = PieceRole::Entry;
    vec![
        Subject {
            at: RB,
            family: "scal",
            api: "rocblas_sscal",
            slice: vec![
                piece(RB, Declaration, "rocblas_sscal", RB_DECL, (78, 79)),
                piece(RB, entry_point, "rocblas_scal_impl", SCAL_IMP, (50, 100)),
                piece(
                    RB,
                    Launcher,
                    "rocblas_internal_scal_launcher",
                    SCAL,
                    (182, 322),
                ),
                piece(RB, Kernel, "rocblas_scal_kernel", SCAL, (26, 58)),
                piece(RB, Kernel, "rocblas_sscal_2_kernel", SCAL, (64, 108)),
            ],
            cite: (SCAL, 209, 217),
        },
        Subject {
            at: RB,
            family: "ger",
            api: "rocblas_sger",
            slice: vec![
                piece(RB, Declaration, "rocblas_sger", RB_DECL, (11881, 11890)),
                piece(RB, entry_point, "rocblas_ger_arg_check", GER, (30, 70)),
                piece(RB, Kernel, "rocblas_ger_kernel", GER_K, (30, 110)),
                piece(
                    RB,
                    Launcher,
                    "rocblas_internal_ger_launcher",
                    GER_K,
                    (306, 432),
                ),
            ],
            cite: (GER_K, 410, 430),
        },
        Subject {
            at: RS,
            family: "potrf",
            api: "rocsolver_spotrf",
            slice: vec![
                piece(RS, Declaration, "rocsolver_spotrf", RS_DECL, (11340, 11345)),
                piece(
                    RS,
                    entry_point,
                    "rocsolver_potf2_potrf_argCheck",
                    POTF2,
                    (140, 170),
                ),
                piece(RS, Launcher, "rocsolver_potrf_template", POTRF, (150, 280)),
            ],
            cite: (POTRF, 163, 178),
        },
        Subject {
            at: RB,
            family: "dot",
            api: "rocblas_sdot_batched",
            slice: vec![
                piece(RB, Declaration, "rocblas_sdot_batched", RB_DECL, (872, 879)),
                piece(
                    RB,
                    Kernel,
                    "rocblas_dot_batched_4_kernel",
                    DOT_K,
                    (291, 331),
                ),
                piece(
                    RB,
                    Launcher,
                    "rocblas_internal_dot_launcher",
                    DOT_K,
                    (333, 650),
                ),
            ],
            cite: (DOT_K, 385, 410),
        },
    ]
}

fn entry(s: &Subject, n: usize, answer: &str) -> Entry {
    let pins = rocqa::source::Pins::load(&repo().join("rocm_sources/sources.toml")).unwrap();
    let pin = pins.get(s.at.0, s.at.1).expect("pinned").clone();
    let (file, a, b) = s.cite;
    Entry {
        schema_version: rocqa::model::ENTRY_SCHEMA_VERSION,
        id: format!("{}-{n:016x}", s.at.0),
        lib: s.at.0.into(),
        version: s.at.1.into(),
        source: SourceRef {
            origin: pin.origin.clone(),
            sha256: pin.sha256.clone(),
        },
        family: s.family.into(),
        api: s.api.into(),
        apis: vec![s.api.into()],
        variant: String::new(),
        call_path: s.slice.iter().skip(1).map(|p| p.name.clone()).collect(),
        category: "api-to-kernel".into(),
        template_id: "a2k.launch-config".into(),
        template_version: 1,
        difficulty: "L2".into(),
        question: format!(
            "What does {} run, with which launch parameters, and what does it return early?",
            s.api
        ),
        answer: answer.into(),
        code: None,
        citations: vec![Citation {
            lib: s.at.0.into(),
            file: file.into(),
            start: a,
            end: b,
            sha256: lines_hash(&lines(s.at, file), a, b),
        }],
        slice_id: format!("{}:{}:{}", s.at.0, s.at.1, s.family),
        slice: s.slice.clone(),
        model: "hand-written".into(),
        params: serde_json::json!({}),
        prompt_sha256: "0".repeat(64),
        usage: TokenUsage::default(),
        validation: vec![Check {
            name: "hand-written".into(),
            ok: true,
            detail: String::new(),
        }],
        generator: "llm".into(),
        tool: "rocqa 0.1.0".into(),
        grouped_request: None,
        mutation: None,
    }
}

/// `(subject, right answer, wrong answer, what the rejection must name)`: each pair
/// differs only in the planted value.
fn pairs() -> Vec<(usize, String, String, &'static str)> {
    let both = |s: usize, text: &str, right: &str, wrong: &str, names: &'static str| {
        (
            s,
            text.replace("{}", right),
            text.replace("{}", wrong),
            names,
        )
    };
    vec![
        // A kernel of another API (rocblas_scal_kernels.hpp:217 and :293 are the launches
        // rocblas_sscal reaches; rocblas_axpy_kernel is axpy's).
        both(
            0,
            "For a unit stride in single precision rocblas_sscal launches {} from rocblas_internal_scal_launcher, each thread scaling two neighbouring elements of x.",
            "rocblas_sscal_2_kernel",
            "rocblas_axpy_kernel",
            "rocblas_scal_kernels.hpp:217",
        ),
        // A kernel written in the API's own launcher that it never launches:
        // rocblas_hscal_mlt_4_kernel (rocblas_scal_kernels.hpp:255) is the half-precision
        // branch, `using_rocblas_half && incx == 1`, false for float.
        both(
            0,
            "With incx == 1 and float data, rocblas_sscal launches {} through rocblas_internal_scal_launcher in device or host pointer mode alike.",
            "rocblas_sscal_2_kernel",
            "rocblas_hscal_mlt_4_kernel",
            "never does: rocblas_hscal_mlt_4_kernel at library/src/blas1/rocblas_scal_kernels.hpp:2",
        ),
        // A wrong block size: dim3 threads(NB) with NB = ROCBLAS_SCAL_NB = 256
        // (rocblas_scal_kernels.hpp:289-293).
        both(
            0,
            "In the generic branch rocblas_scal_kernel is launched with {} threads per block, one element of x per thread, and blocks = (n - 1) / NB + 1 blocks along x.",
            "256",
            "512",
            "rocblas_scal_kernels.hpp:293",
        ),
        // A barrier where there is none: rocblas_scal_kernel (rocblas_scal_kernels.hpp:26-58)
        // and the helpers it calls (load_scalar, load_ptr_batch) have no __syncthreads.
        both(
            0,
            "rocblas_scal_kernel {} before it stores the scaled element of x.",
            "checks that tid < n",
            "synchronizes the block with __syncthreads",
            "rocblas_scal_kernel uses a barrier",
        ),
        // A wrong template argument: NB is 256 at every launch.
        both(
            0,
            "The launcher is instantiated with NB = {} for every launch it makes, and the kernels take it as their launch bounds.",
            "256",
            "128",
            "rocblas_scal_kernels.hpp:217",
        ),
        // A wrong status for a quick return: rocblas_scal_imp.hpp:88 returns
        // rocblas_status_success when n <= 0 || incx <= 0.
        both(
            0,
            "When n <= 0 rocblas_sscal returns {} at once and launches nothing.",
            "rocblas_status_success",
            "rocblas_status_invalid_size",
            "rocblas_scal_imp.hpp:88",
        ),
        // A wrong LDS size: __shared__ T ydata[DIM_Y * WIN] with DIM_Y = 32, WIN = 2
        // (rocblas_ger_kernels.hpp:58, values at :415-417).
        both(
            1,
            "rocblas_ger_kernel stages its window of y in ydata, an LDS array of {} elements that every thread of the block reads after the barrier.",
            "64",
            "128",
            "rocblas_ger_kernels.hpp:58",
        ),
        // A wrong block size for a 2-D block: dim3 ger_threads(DIM_X, DIM_Y), 32 x 32.
        both(
            1,
            "rocblas_ger_kernel runs {} threads per block in the general case, DIM_X by DIM_Y threads updating a tile of A.",
            "1024",
            "256",
            "rocblas_ger_kernels.hpp:423",
        ),
        // A target its launch never runs on: rocblas_ger_double_buffered_kernel is
        // launched (rocblas_ger_kernels.hpp:353) only when `is_gfx90a && m > 2000 && m ==
        // n && m % 128 == 0`, `is_gfx90a` being `handle->getArch() == 910` (:346).
        both(
            1,
            "On {} rocblas_sger launches rocblas_ger_double_buffered_kernel when the matrix is square and large.",
            "gfx90a",
            "gfx908",
            "no launch of it runs there",
        ),
        // A wrong status for an argument check: rocblas_ger.hpp:49 returns
        // rocblas_status_invalid_size when m < 0.
        both(
            1,
            "If m is negative, rocblas_sger returns {} from rocblas_ger_arg_check before any kernel is launched.",
            "rocblas_status_invalid_size",
            "rocblas_status_success",
            "rocblas_ger.hpp:49",
        ),
        // rocSOLVER: a quick return (roclapack_potrf.hpp:177 returns success when n == 0).
        both(
            2,
            "When n == 0 rocsolver_spotrf returns {} right after reset_info has cleared info.",
            "rocblas_status_success",
            "rocblas_status_invalid_size",
            "roclapack_potrf.hpp:177",
        ),
        // A kernel of another API: getf2_iamax is the pivot search of getf2/getrf.
        both(
            2,
            "To set info to zero before the factorization rocsolver_spotrf launches {} over the batch.",
            "reset_info",
            "getf2_iamax",
            "reset_info (library/src/lapack/roclapack_potrf.hpp:174)",
        ),
        // A wrong block size: dim3 threads(BS1, 1, 1) with BS1 = 256 (roclapack_potrf.hpp:172).
        both(
            2,
            "reset_info is launched with {} threads per block and one block per 256 problems of the batch.",
            "256",
            "64",
            "roclapack_potrf.hpp:174",
        ),
        // A launch condition the code excludes: rocblas_dot_kernels.hpp:385 launches
        // rocblas_dot_batched_4_kernel (at :407 and :432) only when n <= 1024 &&
        // batch_count >= 256.
        both(
            3,
            "rocblas_sdot_batched launches rocblas_dot_batched_4_kernel from rocblas_internal_dot_launcher when n {} 1024 and batch_count >= 256.",
            "<=",
            ">",
            "holds only when n <= 1024 && batch_count >= 256",
        ),
    ]
}

#[test]
fn planted_contradictions_are_rejected_naming_the_fact_and_right_values_kept() {
    let subjects = subjects();
    let pairs = pairs();
    let mut text = String::new();
    for (k, (s, right, wrong, _)) in pairs.iter().enumerate() {
        let good = entry(&subjects[*s], 2 * k + 1, right);
        let bad = entry(&subjects[*s], 2 * k + 2, wrong);
        for e in [good, bad] {
            text.push_str(&serde_json::to_string(&e).unwrap());
            text.push('\n');
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("entries.jsonl");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("checked");
    let o = Command::new(BIN)
        .arg("--root")
        .arg(repo())
        .arg("validate")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let kept: Vec<String> = jsonl(&out.join("entries.jsonl"))
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    let rejects = jsonl(&out.join("rejects.jsonl"));
    for (k, (s, right, wrong, names)) in pairs.iter().enumerate() {
        let lib = subjects[*s].at.0;
        let good = format!("{lib}-{:016x}", 2 * k + 1);
        let bad = format!("{lib}-{:016x}", 2 * k + 2);
        let why = |id: &str| {
            rejects
                .iter()
                .find(|r| r["id"] == id)
                .map(|r| format!("{}: {}", r["reason"], r["detail"]))
        };
        assert!(
            kept.contains(&good),
            "right answer rejected: {right}\n{:?}",
            why(&good)
        );
        let r = why(&bad).unwrap_or_else(|| panic!("planted contradiction kept: {wrong}"));
        assert!(
            r.starts_with("\"contradicts-code\"") && r.contains(names),
            "{wrong}\n{r}"
        );
    }
    // The summary reports how many claims were compared, and how many contradicted.
    let n = pairs.len();
    assert!(
        stdout.contains(&format!(
            " of {} entries compared with the facts of their APIs, {n} contradicted",
            2 * n
        )),
        "{stdout}"
    );
}
