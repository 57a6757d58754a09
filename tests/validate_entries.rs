//! `rocqa validate FILE` on hand-written entries about real rocBLAS 6.4.4 code: good
//! entries pass, each planted defect is caught with its own reason.
#![cfg(feature = "real-sources")]

use std::path::PathBuf;
use std::process::Command;

use rocqa::model::{Citation, Entry, Origin, PieceRef, PieceRole, SourceRef, TokenUsage};
use rocqa::slice::lines_hash;

const BIN: &str = env!("CARGO_BIN_EXE_rocqa");
const KERNELS: &str = "library/src/blas1/rocblas_scal_kernels.hpp";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tree_lines(file: &str) -> Vec<String> {
    let t = std::fs::read_to_string(repo().join("rocm_sources/rocblas-6.4.4").join(file))
        .expect("rocBLAS 6.4.4 fetched (scripts/setup.sh)");
    t.lines().map(|l| l.to_string()).collect()
}

fn cite(file: &str, start: u32, end: u32) -> Citation {
    Citation {
        lib: "rocblas".into(),
        file: file.into(),
        start,
        end,
        sha256: lines_hash(&tree_lines(file), start, end),
    }
}

/// A well-grounded entry about rocblas_scal_kernel (lines 26-58) and its launch (:293).
fn good(id: &str, question: &str, answer: &str) -> Entry {
    let kernel = cite(KERNELS, 26, 58);
    let launcher = cite(KERNELS, 182, 322);
    Entry {
        schema_version: rocqa::model::ENTRY_SCHEMA_VERSION,
        id: id.into(),
        lib: "rocblas".into(),
        version: "6.4.4".into(),
        source: SourceRef {
            origin: Origin::Debian {
                package: "rocblas".into(),
                debian_version: "6.4.4-4".into(),
                tarball: "rocblas_6.4.4.orig.tar.gz".into(),
            },
            sha256: "bc374b57579fa8458132f73d9a152517af63b9f411a2176b72829f4a1d6021c1".into(),
        },
        family: "scal".into(),
        api: "rocblas_sscal".into(),
        apis: vec!["rocblas_sscal".into()],
        variant: String::new(),
        call_path: vec![
            "rocblas_internal_scal_launcher".into(),
            "rocblas_scal_kernel".into(),
        ],
        category: "semantics".into(),
        template_id: "semantics.kernel-math".into(),
        template_version: 1,
        difficulty: "L2".into(),
        question: question.into(),
        answer: answer.into(),
        code: None,
        citations: vec![cite(KERNELS, 40, 46), cite(KERNELS, 293, 293)],
        slice_id: "rocblas:6.4.4:scal".into(),
        slice: vec![
            PieceRef {
                role: PieceRole::Launcher,
                name: "rocblas_internal_scal_launcher".into(),
                lib: "rocblas".into(),
                file: KERNELS.into(),
                start: 182,
                end: 322,
                sha256: launcher.sha256,
                expansion: None,
            },
            PieceRef {
                role: PieceRole::Kernel,
                name: "rocblas_scal_kernel".into(),
                lib: "rocblas".into(),
                file: KERNELS.into(),
                start: 26,
                end: 58,
                sha256: kernel.sha256,
                expansion: None,
            },
        ],
        model: "hand-written".into(),
        params: serde_json::json!({}),
        prompt_sha256: "0".repeat(64),
        usage: TokenUsage::default(),
        validation: vec![rocqa::model::Check {
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

const ANSWER: &str = "rocblas_scal_kernel gives each thread one element: tid = blockIdx.x * DIM_X + threadIdx.x, \
and the batch index comes from blockIdx.z; rocblas_internal_scal_launcher launches it with ROCBLAS_LAUNCH_KERNEL.";

#[test]
fn planted_defects_are_caught_with_their_reasons() {
    let mut entries = Vec::new();
    entries.push(good(
        "rocblas-0000000000000001",
        "How does rocblas_scal_kernel map threads to elements?",
        ANSWER,
    ));
    entries.push(good(
        "rocblas-0000000000000002",
        "Where is the scal kernel launched?",
        "rocblas_internal_scal_launcher computes the grid from n and launches rocblas_scal_kernel with ROCBLAS_LAUNCH_KERNEL on the handle's stream.",
    ));
    // Wrong line range: past the end of the file.
    let mut e = good(
        "rocblas-0000000000000003",
        "Q3 about the scal kernel and its indexing?",
        ANSWER,
    );
    e.citations[0].end = 99_999;
    entries.push(e);
    // Changed cited text: the hash no longer matches the pinned lines.
    let mut e = good(
        "rocblas-0000000000000004",
        "Q4 about the scal kernel and its batches?",
        ANSWER,
    );
    e.citations[0].sha256 = "f".repeat(64);
    entries.push(e);
    // Invented kernel name.
    entries.push(good(
        "rocblas-0000000000000005",
        "Q5 which kernel does the real work for scal?",
        "The work is done by rocblas_scal_turbo_kernel, which rocblas_internal_scal_launcher launches for large n.",
    ));
    // Near-duplicate of entry 1: the same text but for case, punctuation and spacing.
    entries.push(good(
        "rocblas-0000000000000006",
        "how does  rocblas_scal_kernel map threads to elements",
        &ANSWER.replace(", and", "; and").replace(": tid", " - tid"),
    ));
    // Code quoted as the library's that is not in it.
    entries.push(good(
        "rocblas-0000000000000007",
        "Q7 what does the scal kernel store?",
        "rocblas_scal_kernel stores the product with `x[tid * incx] = alpha * x[tid * incx] + 1;` for every element.",
    ));
    // Citation outside the code shown to the model.
    let mut e = good(
        "rocblas-0000000000000008",
        "Q8 about the scal kernel file header?",
        ANSWER,
    );
    e.citations[0] = cite(KERNELS, 1, 5);
    entries.push(e);

    // Code in answers: compiled for the GPU (device code generation) and the host.
    let with_code = |id: &str, n: usize, code: &str| {
        let mut e = good(
            id,
            &format!("Write kernel number {n} in the style of rocblas_scal_kernel for float data."),
            &format!("Variant {n}: like rocblas_scal_kernel, one thread handles one element, index tid = blockIdx.x * DIM_X + threadIdx.x; this sketch number {n} keeps that mapping."),
        );
        e.category = "implementation".into();
        e.template_id = "impl.rewrite-kernel".into();
        e.code = Some(code.into());
        e
    };
    entries.push(with_code(
        "rocblas-0000000000000009",
        9,
        "#include <hip/hip_runtime.h>\n__global__ void scal9(int n, float a, float* x) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }\nvoid run9(int n, float a, float* x) { hipLaunchKernelGGL(scal9, dim3((n + 255) / 256), dim3(256), 0, 0, n, a, x); }\n",
    ));
    entries.push(with_code(
        "rocblas-0000000000000010",
        10,
        "#include <hip/hip_runtime.h>\n__global__ void scal_lds10(float* x) { __shared__ float big[40000]; big[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = big[255 - threadIdx.x]; }\n",
    ));
    entries.push(with_code(
        "rocblas-0000000000000011",
        11,
        "#include <hip/hip_runtime.h>\n__device__ float scal_twice11(float v) { return 2 * v; }\nfloat host11(float v) { return scal_twice11(v); }\n",
    ));
    entries.push(with_code(
        "rocblas-0000000000000012",
        12,
        "#include \"/etc/passwd\"\n__global__ void scal_k12(float* x) { x[0] = 1; }\n",
    ));
    entries.push(with_code(
        "rocblas-0000000000000013",
        13,
        "#include <hip/hip_runtime.h>\n__global__ void scal_k13(float* x) { x[threadIdx.x] = __builtin_amdgcn_not_a_real_builtin(x[0]); }\n",
    ));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("entries.jsonl");
    let text: String = entries
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("checked");
    let o = Command::new(BIN)
        .arg("--root")
        .arg(repo())
        .args(["validate"])
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
    let kept: Vec<serde_json::Value> = std::fs::read_to_string(out.join("entries.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rejects: Vec<serde_json::Value> = std::fs::read_to_string(out.join("rejects.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reason = |id: &str| {
        rejects
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["reason"].as_str().unwrap().to_string())
            .unwrap_or_else(|| "kept".into())
    };
    assert_eq!(kept.len(), 3, "{stdout}");
    for (id, want) in [
        ("rocblas-0000000000000001", "kept"),
        ("rocblas-0000000000000002", "kept"),
        ("rocblas-0000000000000003", "citation-out-of-range"),
        ("rocblas-0000000000000004", "citation-text-changed"),
        ("rocblas-0000000000000005", "unknown-identifiers"),
        ("rocblas-0000000000000006", "near-duplicate"),
        ("rocblas-0000000000000007", "quote-not-in-slice"),
        ("rocblas-0000000000000008", "citation-outside-slice"),
        ("rocblas-0000000000000009", "kept"),
        ("rocblas-0000000000000012", "compile-screen"),
    ] {
        assert_eq!(reason(id), want, "{id}\n{stdout}");
    }
    // LDS over the limit only fails in the backend; host calling a device function and
    // an unknown builtin fail in the front end.
    assert_eq!(
        reason("rocblas-0000000000000010"),
        "compile-backend",
        "{stdout}"
    );
    assert!(
        reason("rocblas-0000000000000011").starts_with("compile-"),
        "{stdout}"
    );
    assert!(
        reason("rocblas-0000000000000013").starts_with("compile-"),
        "{stdout}"
    );
    let lds = rejects
        .iter()
        .find(|r| r["id"] == "rocblas-0000000000000010")
        .unwrap();
    assert!(
        lds["detail"].as_str().unwrap().contains("local memory"),
        "{lds}"
    );
    let dup = rejects
        .iter()
        .find(|r| r["id"] == "rocblas-0000000000000006")
        .unwrap();
    assert!(
        dup["detail"]
            .as_str()
            .unwrap()
            .contains("rocblas-0000000000000001"),
        "{dup}"
    );
    let inv = rejects
        .iter()
        .find(|r| r["id"] == "rocblas-0000000000000005")
        .unwrap();
    assert!(
        inv["detail"]
            .as_str()
            .unwrap()
            .contains("rocblas_scal_turbo_kernel"),
        "{inv}"
    );
    // Kept entries carry the checks they passed.
    assert!(kept[0]["validation"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true));

    // Decontamination: an evaluation set holding entry 2's question and answer.
    let eval = dir.path().join("eval.jsonl");
    let e2 = &entries[1];
    std::fs::write(
        &eval,
        serde_json::json!({"instruction": e2.question, "input": "", "output": e2.answer})
            .to_string()
            + "\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .arg("--root")
        .arg(repo())
        .arg("validate")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("--decontaminate")
        .arg(&eval)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let rejects = std::fs::read_to_string(out.join("rejects.jsonl")).unwrap();
    assert!(
        rejects
            .lines()
            .any(|l| l.contains("rocblas-0000000000000002") && l.contains("contaminated")),
        "{rejects}"
    );

    // Against an earlier release's (or another shard's) kept entries.
    let earlier = dir.path().join("earlier.jsonl");
    let mut old = entries[0].clone();
    old.id = "rocblas-0000000000000099".into();
    std::fs::write(&earlier, serde_json::to_string(&old).unwrap() + "\n").unwrap();
    let o = Command::new(BIN)
        .arg("--root")
        .arg(repo())
        .arg("validate")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("--against")
        .arg(&earlier)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let rejects = std::fs::read_to_string(out.join("rejects.jsonl")).unwrap();
    assert!(
        rejects
            .lines()
            .any(|l| l.contains("\"id\":\"rocblas-0000000000000001\"")
                && l.contains("near-duplicate of rocblas-0000000000000099")),
        "{rejects}"
    );
}
