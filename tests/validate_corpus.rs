//! A corpus of good entries and planted defects about real rocBLAS 6.4.4 code, run
//! through `rocqa validate` (the real binary): every good entry is kept, and the share of
//! defects caught is reported and held at 90% or more. Each hole of the validator found
//! earlier has its defect here with the reason it must be rejected for; other classes
//! (semantic errors no check reads) are counted honestly as misses.
#![cfg(feature = "real-sources")]

mod common;

use std::process::Command;

use common::{jsonl, repo, BIN};
use rocqa::model::{Check, Citation, Entry, Origin, PieceRef, PieceRole, SourceRef, TokenUsage};
use rocqa::slice::lines_hash;

const SCAL: &str = "library/src/blas1/rocblas_scal_kernels.hpp";
const AXPY: &str = "library/src/blas1/rocblas_axpy_kernels.hpp";
const DECL: &str = "library/include/internal/rocblas-functions.h";
const TYPES: &str = "library/include/internal/rocblas-types.h";

fn lines(file: &str) -> Vec<String> {
    std::fs::read_to_string(repo().join("rocm_sources/rocblas-6.4.4").join(file))
        .expect("rocBLAS 6.4.4 fetched (scripts/setup.sh)")
        .lines()
        .map(str::to_string)
        .collect()
}

fn cite(file: &str, start: u32, end: u32) -> Citation {
    Citation {
        lib: "rocblas".into(),
        file: file.into(),
        start,
        end,
        sha256: lines_hash(&lines(file), start, end),
    }
}

fn piece(role: PieceRole, name: &str, file: &str, start: u32, end: u32) -> PieceRef {
    PieceRef {
        role,
        name: name.into(),
        lib: "rocblas".into(),
        file: file.into(),
        start,
        end,
        sha256: lines_hash(&lines(file), start, end),
        expansion: None,
    }
}

/// The slice every entry was asked over: the public declaration, the launcher and the
/// kernels of scal, and the generic axpy kernel.
fn slice() -> Vec<PieceRef> {
    vec![
        piece(PieceRole::Declaration, "rocblas_sscal", DECL, 78, 79),
        piece(
            PieceRole::Launcher,
            "rocblas_internal_scal_launcher",
            SCAL,
            182,
            322,
        ),
        piece(PieceRole::Kernel, "rocblas_scal_kernel", SCAL, 26, 58),
        piece(PieceRole::Kernel, "rocblas_sscal_2_kernel", SCAL, 64, 108),
        piece(PieceRole::Kernel, "rocblas_axpy_kernel", AXPY, 34, 71),
    ]
}

fn entry(n: usize, question: &str, answer: &str, cites: &[(&str, u32, u32)]) -> Entry {
    Entry {
        schema_version: rocqa::model::ENTRY_SCHEMA_VERSION,
        id: format!("rocblas-{n:016x}"),
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
        apis: vec!["rocblas_sscal".into(), "rocblas_dscal".into()],
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
        citations: cites.iter().map(|(f, a, b)| cite(f, *a, *b)).collect(),
        slice_id: "rocblas:6.4.4:scal".into(),
        slice: slice(),
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

const KERNEL_CODE: &str = "#include <hip/hip_runtime.h>\n__global__ void __launch_bounds__(256) scale_rows(int n, float a, float* x)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if(i < n)\n        x[i] *= a;\n}\n";

/// Good entries: grounded, quoted verbatim, cited inside the slice.
fn good() -> Vec<Entry> {
    let g = |n, q: &str, a: &str, c: &[(&str, u32, u32)]| entry(n, q, a, c);
    let mut v = vec![
        g(1, "How does rocblas_scal_kernel map threads to elements of x?",
          "Each thread handles one element: `uint32_t tid   = blockIdx.x * DIM_X + threadIdx.x;` gives the element index, and the batch instance comes from blockIdx.z.",
          &[(SCAL, 37, 38)]),
        g(2, "When does rocblas_scal_kernel skip the multiplication entirely?",
          "It only writes when `alpha != 1 && tid < n` holds, so a unit alpha leaves x untouched and threads past n do nothing.",
          &[(SCAL, 48, 53)]),
        g(3, "What precision is the scal product computed in?",
          "The element is converted to the compute type Tex before multiplying, `Tex res                = (Tex)x[tid * int64_t(incx)] * alpha;`, and cast back to T when stored.",
          &[(SCAL, 51, 52)]),
        g(4, "Why does the scal kernel multiply the index by int64_t(incx)?",
          "The stride product tid * int64_t(incx) is formed in 64 bits so a large n times a large increment does not overflow 32-bit arithmetic when addressing x.",
          &[(SCAL, 51, 52)]),
        g(5, "What does rocblas_internal_scal_launcher return for n <= 0?",
          "The launcher checks `n <= 0 || incx <= 0 || batch_count <= 0` first and returns rocblas_status_success without launching anything: an empty problem is not an argument error.",
          &[(SCAL, 194, 198)]),
        g(6, "How many blocks does the generic scal path launch?",
          "In the generic branch the launcher computes `int  blocks = (n - 1) / NB + 1;`, a ceiling division, and builds `dim3 grid(blocks, 1, batches);` with NB threads per block.",
          &[(SCAL, 288, 290)]),
        g(7, "Which kernel handles single precision with unit stride?",
          "When using_rocblas_float is true and incx == 1 the launcher picks rocblas_sscal_2_kernel, where each thread scales two neighbouring elements, so the grid needs half as many blocks.",
          &[(SCAL, 209, 217)]),
        g(8, "How does rocblas_sscal_2_kernel index its two elements?",
          "It starts at `uint32_t tid   = (blockIdx.x * DIM_X + threadIdx.x) * 2;` and loops j over 0 and 1, touching x[tid + j], so a thread owns a contiguous pair.",
          &[(SCAL, 74, 74), (SCAL, 90, 94)]),
        g(9, "What happens to the last element when n is odd in the sscal_2 kernel?",
          "The pair loop only runs while tid + 1 < n, so an odd n leaves one element; the branch `if(n % 2 != 0 && tid == n - 1)` scales that last element on its own.",
          &[(SCAL, 87, 87), (SCAL, 98, 102)]),
        g(10, "How is alpha passed when the pointer mode is host?",
          "With the host pointer mode the launcher dereferences alpha and passes the value (*alpha) to the kernel; with rocblas_pointer_mode_device it passes the device pointer and load_scalar reads it on the GPU.",
          &[(SCAL, 292, 293), (SCAL, 306, 313)]),
        g(11, "Where does the scal kernel get alpha for each batch instance?",
          "load_scalar(alpha_device_host, batch, stride_alpha) picks the batch's alpha, using stride_alpha to step between instances when alpha lives on the device.",
          &[(SCAL, 46, 46)]),
        g(12, "How does rocblas_scal_kernel find the vector of its batch instance?",
          "It calls `load_ptr_batch(xa, batch, offset_x, stride_x)`, which resolves the batch's x from the array of pointers or from the strided base plus offset_x.",
          &[(SCAL, 45, 45)]),
        g(13, "What limits the number of threads per block of rocblas_scal_kernel?",
          "The kernel is declared with ROCBLAS_KERNEL(DIM_X), which expands to static __global__ __launch_bounds__((DIM_X)) void, so a block never has more than DIM_X threads; the launcher passes NB.",
          &[(SCAL, 26, 28)]),
        g(14, "How is the batch count mapped onto the grid for scal?",
          "The third grid dimension carries the batches: `int batches = handle->getBatchGridDim((int)batch_count);` and blockIdx.z selects the instance inside the kernel.",
          &[(SCAL, 207, 207), (SCAL, 38, 38)]),
        g(15, "What does the DEVICE_GRID_YZ_16BIT loop in the scal kernel do?",
          "When DEVICE_GRID_YZ_16BIT is set the grid's z dimension is limited, so the kernel loops `for(; batch < batch_count; batch += c_YZ_grid_launch_limit)` to cover every batch instance.",
          &[(SCAL, 40, 42)]),
        g(16, "How does rocblas_axpy_kernel compute each output element?",
          "Each thread updates one element of y: `*ty = (*ty) + Tex(alpha) * (*tx);` with tx and ty from load_ptr_batch at offset_x + tid * incx and offset_y + tid * incy.",
          &[(AXPY, 61, 64)]),
        g(17, "Does the axpy kernel do anything when alpha is zero?",
          "No: the update sits inside `if(alpha)`, so a zero alpha leaves y as it is and no element of x is read.",
          &[(AXPY, 56, 58)]),
        g(18, "Which index type does rocblas_axpy_kernel use for tid?",
          "It declares `int64_t  tid   = blockIdx.x * NB + threadIdx.x;`, a 64-bit index, while the batch index from blockIdx.z is a uint32_t.",
          &[(AXPY, 49, 50)]),
        g(19, "What arguments does the public rocblas_sscal take?",
          "rocblas_sscal takes a rocblas_handle, the length n and the stride incx as rocblas_int, a const float* alpha and the float* x it scales in place; see rocblas-functions.h:78-79.",
          &[(DECL, 78, 79)]),
        g(20, "Why does the axpy kernel mark x and y __restrict__?",
          "Both pointers are declared `Tx __restrict__ x` and `Ty __restrict__ y`, promising the compiler the vectors do not alias so loads of x can be scheduled freely around stores to y.",
          &[(AXPY, 39, 39), (AXPY, 43, 43)]),
        g(21, "How does the sscal_2 path size its grid?",
          "For the float unit-stride path the launcher uses `int32_t blocks = (n - 1) / (NB * 2) + 1;` because each thread of rocblas_sscal_2_kernel covers two elements.",
          &[(SCAL, 212, 214)]),
        g(22, "Is there a special path for half precision in the scal launcher?",
          "Yes: when using_rocblas_half holds and incx == 1 the launcher splits n into n_mlt_4 and n_mod_4 and launches rocblas_hscal_mlt_4_kernel, computing blocks as (n - 1) / (NB * 4) + 1.",
          &[(SCAL, 243, 255)]),
        g(23, "Which stream do the scal kernels run on?",
          "Every ROCBLAS_LAUNCH_KERNEL in the launcher passes handle->get_stream(), so the kernels are queued on the stream bound to the rocblas_handle, in order with the caller's other work.",
          &[(SCAL, 293, 297)]),
        g(24, "What types can the scal family work on, complex included?",
          "The template types T, Tex and Ta cover real and complex data: rocblas_zscal works on rocblas_double_complex vectors, converted to Tex for the product as in rocblas_scal_kernel (lines 51-52).",
          &[(SCAL, 26, 26), (SCAL, 51, 52)]),
    ];
    let mut e = g(25, "Write a HIP kernel that scales a vector the way rocblas_scal_kernel does.",
        "Like rocblas_scal_kernel, give each thread one element, with index blockIdx.x * blockDim.x + threadIdx.x, and guard with i < n; the `scale_rows` kernel below launches with 256 threads per block.",
        &[(SCAL, 37, 37), (SCAL, 48, 48)]);
    e.category = "implementation".into();
    e.template_id = "impl.rewrite-kernel".into();
    e.code = Some(KERNEL_CODE.into());
    v.push(e);
    v
}

/// A planted defect: the entry, and the reason it must be rejected for (`None`: a
/// semantic error that no check reads, counted as a miss if kept).
struct Defect {
    entry: serde_json::Value,
    want: Option<&'static str>,
}

fn defects(good: &[Entry]) -> Vec<Defect> {
    let mut out = Vec::new();
    let mut n = 100;
    let mut next = |base: usize| {
        n += 1;
        let mut e = good[base].clone();
        e.id = format!("rocblas-{n:016x}");
        // Keep each defect from being a near-duplicate of its base.
        e.question = format!("{} (variant {n})", e.question);
        e
    };
    let push = |e: Entry, want: Option<&'static str>, out: &mut Vec<Defect>| {
        out.push(Defect {
            entry: serde_json::to_value(&e).unwrap(),
            want,
        })
    };
    let rewrite = |e: &mut Entry, answer: &str| {
        e.answer = answer.into();
    };
    // Paths and libraries.
    let mut e = next(0);
    e.citations[0].file = "../../../../etc/passwd".into();
    e.citations[0].sha256 = lines_hash(
        &std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>(),
        1,
        1,
    );
    e.citations[0].start = 1;
    e.citations[0].end = 1;
    push(e, Some("citation-outside-slice"), &mut out);
    let mut e = next(1);
    e.slice[0].file = "../../../../etc/passwd".into();
    e.slice[0].start = 1;
    e.slice[0].end = 1;
    e.slice[0].sha256 = lines_hash(
        &std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>(),
        1,
        1,
    );
    push(e, Some("path-outside-tree"), &mut out);
    let mut e = next(2);
    e.slice[0].lib = "nosuchlib".into();
    e.slice[0].file = "/etc/hostname".into();
    push(e, Some("unknown-library"), &mut out);
    let mut e = next(3);
    e.slice[0].file = "/etc/passwd".into();
    push(e, Some("path-outside-tree"), &mut out);
    let mut e = next(4);
    e.citations[0].lib = "rocsolver".into();
    push(e, Some("citation-outside-slice"), &mut out);
    // Refusals and copies.
    let mut e = next(5);
    rewrite(&mut e, "Unfortunately the excerpt shown here does not include enough of the launcher to say what it returns.");
    push(e, Some("refusal"), &mut out);
    let mut e = next(6);
    rewrite(
        &mut e,
        "I'm sorry, but I cannot determine the grid size from the code shown.",
    );
    push(e, Some("refusal"), &mut out);
    let mut e = next(7);
    e.answer = e.question.clone();
    push(e, Some("copies-question"), &mut out);
    let mut e = next(8);
    e.answer = format!("The question is: {} That is what it asks.", e.question);
    push(e, Some("copies-question"), &mut out);
    let mut e = next(9);
    rewrite(&mut e, "It depends.");
    push(e, Some("answer-length"), &mut out);
    let mut e = next(10);
    e.answer = "alpha ".repeat(1500);
    push(e, Some("answer-length"), &mut out);
    // Names that exist nowhere.
    let mut e = next(11);
    rewrite(&mut e, "Each lane exchanges its partial value with __shfl_xor_sync_amd before load_scalar reads alpha for the batch.");
    push(e, Some("unknown-identifiers"), &mut out);
    let mut e = next(12);
    rewrite(&mut e, "The work is then handed to getf2_panel_kernel_small, which load_ptr_batch feeds with the batch's x.");
    push(e, Some("unknown-identifiers"), &mut out);
    let mut e = next(13);
    rewrite(&mut e, "For large n the launcher switches to rocblas_scal_turbo_kernel, which uses load_ptr_batch as well.");
    push(e, Some("unknown-identifiers"), &mut out);
    let mut e = next(14);
    rewrite(&mut e, "With rocblas_pointer_mode_managed the launcher passes alpha through unified memory to the kernel.");
    push(e, Some("unknown-identifiers"), &mut out);
    let mut e = next(15);
    rewrite(&mut e, "ROCBLAS_LAUNCH_KERNEL_FAST queues rocblas_scal_kernel on handle->get_stream() without checks.");
    push(e, Some("unknown-identifiers"), &mut out);
    let mut e = next(16);
    rewrite(&mut e, "The launch goes through hipLaunchKernelAsync on the handle's stream with the grid built from n.");
    push(e, Some("unknown-identifiers"), &mut out);
    let mut e = next(17);
    rewrite(
        &mut e,
        "The product is formed with `std::fast_fma` in the compute type before it is stored back.",
    );
    push(e, Some("unknown-identifiers"), &mut out);
    // Files and line ranges.
    let mut e = next(18);
    rewrite(&mut e, "The kernel lives in rocblas_scal_device.hpp and scales one element per thread over blockIdx.x.");
    push(e, Some("unknown-file"), &mut out);
    let mut e = next(19);
    // Lines the slice leaves out are read in the pinned file: these hold no return.
    rewrite(&mut e, "The quick return is at rocblas_scal_kernels.hpp:140-150, before any launch, for an empty problem.");
    push(e, Some("line-range-elsewhere"), &mut out);
    let mut e = next(20);
    rewrite(
        &mut e,
        "Lines 400 to 420 of the launcher pick the kernel for half precision with unit stride.",
    );
    push(e, Some("line-range-outside-slice"), &mut out);
    // A line range in the slice that points at other code: the launcher's quick return
    // (rocblas_scal_kernels.hpp:194-198), cited for the launch of rocblas_sscal_2_kernel
    // (:216).
    let mut e = next(6);
    rewrite(
        &mut e,
        "rocblas_internal_scal_launcher launches `rocblas_sscal_2_kernel` at rocblas_scal_kernels.hpp:195 when incx == 1, two elements per thread.",
    );
    push(e, Some("line-range-elsewhere"), &mut out);
    // A line of the right function that does not do what the sentence says: 250 is the
    // half-precision grid (rocblas_scal_kernels.hpp:248-252), not the quick return.
    let mut e = next(4);
    rewrite(
        &mut e,
        "`rocblas_status_success` is what `rocblas_internal_scal_launcher` (rocblas_scal_kernels.hpp:250) returns early when n is zero, before any launch.",
    );
    push(e, Some("line-range-elsewhere"), &mut out);
    // A builtin in the wrong dimension: rocblas_scal_kernel takes its batch from
    // `blockIdx.z` (rocblas_scal_kernels.hpp:38) and reads blockIdx.x besides.
    let mut e = next(13);
    rewrite(
        &mut e,
        "In rocblas_scal_kernel each block row handles one batch instance: the batch index is taken from blockIdx.y, the element from blockIdx.x.",
    );
    push(e, Some("builtin-not-in-kernel"), &mut out);
    // Quotes.
    let mut e = next(21);
    rewrite(
        &mut e,
        "Each thread scales its element with `x[i] *= a` once the index is known from blockIdx.x.",
    );
    push(e, Some("quote-not-in-slice"), &mut out);
    let mut e = next(22);
    rewrite(
        &mut e,
        "The kernel only writes when `alpha != 0 && tid < n` holds, skipping zero alpha.",
    );
    push(e, Some("quote-not-in-slice"), &mut out);
    let mut e = next(23);
    rewrite(&mut e, "The kernel body in the library is:\n```cpp\nx[tid * incx] = alpha * x[tid * incx];\n```\nwith one thread per element.");
    push(e, Some("quote-not-in-slice"), &mut out);
    let mut e = next(0);
    rewrite(&mut e, "The launcher reads:\n```cpp\nint blocks = (n + NB - 1) / NB;\ndim3 grid(blocks, 1, batches);\n```\nwhich is a ceiling division.");
    push(e, Some("quote-not-in-slice"), &mut out);
    // Citations.
    let mut e = next(1);
    e.citations[0].end = 99_999;
    push(e, Some("citation-out-of-range"), &mut out);
    let mut e = next(2);
    e.citations[0].sha256 = "f".repeat(64);
    push(e, Some("citation-text-changed"), &mut out);
    let mut e = next(3);
    e.citations[0] = cite(SCAL, 1, 5);
    push(e, Some("citation-outside-slice"), &mut out);
    let mut e = next(4);
    e.citations[0] = cite(TYPES, 317, 317);
    push(e, Some("citation-outside-slice"), &mut out);
    // The slice itself.
    let mut e = next(5);
    e.slice[1].sha256 = "0".repeat(64);
    push(e, Some("slice-changed"), &mut out);
    let mut e = next(6);
    e.slice[2].end = 99_999;
    push(e, Some("slice-changed"), &mut out);
    let mut e = next(7);
    e.slice.clear();
    e.citations.clear();
    push(e, Some("schema"), &mut out);
    // Schema and pin.
    let mut e = next(8);
    e.category = "tuning".into();
    push(e, Some("schema"), &mut out);
    let mut e = next(9);
    e.difficulty = "L4".into();
    push(e, Some("schema"), &mut out);
    let mut e = next(10);
    e.prompt_sha256 = "abc".into();
    push(e, Some("schema"), &mut out);
    let mut e = next(11);
    e.validation[0].ok = false;
    push(e, Some("schema"), &mut out);
    let mut e = next(12);
    e.citations[0].start = 0;
    push(e, Some("schema"), &mut out);
    let e = next(13);
    let mut v = serde_json::to_value(&e).unwrap();
    v["reviewer_note"] = "looks fine".into();
    out.push(Defect {
        entry: v,
        want: Some("schema"),
    });
    let e = next(14);
    let mut v = serde_json::to_value(&e).unwrap();
    v.as_object_mut().unwrap().remove("citations");
    out.push(Defect {
        entry: v,
        want: Some("schema"),
    });
    let mut e = next(15);
    e.source.sha256 = "613bc543ea732cbb2d1a63db3a9e884f79a9c25b5dabd07ce99c6885014709f8".into();
    push(e, Some("source-pin"), &mut out);
    let mut e = next(16);
    e.version = "6.4.5".into();
    push(e, Some("source-pin"), &mut out);
    // Code.
    let mut e = next(24);
    e.code = None;
    push(e, Some("code-present"), &mut out);
    let mut e = next(24);
    e.code = Some(KERNEL_CODE.replace("__launch_bounds__(256)", "__launch_bounds__(2048)"));
    push(e, Some("launch-bounds"), &mut out);
    let mut e = next(24);
    e.code = Some(format!("{KERNEL_CODE}void run(int n, float a, float* x) {{ dim3 threads(64, 64); hipLaunchKernelGGL(scale_rows, dim3(1), threads, 0, 0, n, a, x); }}\n"));
    push(e, Some("launch-bounds"), &mut out);
    let mut e = next(24);
    e.code = Some(KERNEL_CODE.replace("x[i] *= a;", "x[i] = rocblas_fast_scale(x[i], a);"));
    push(e, Some("compile-frontend"), &mut out);
    let mut e = next(24);
    e.code = Some(format!("#include \"/etc/passwd\"\n{KERNEL_CODE}"));
    push(e, Some("compile-screen"), &mut out);
    let mut e = next(24);
    e.code = Some("float scale(float a, float x) { return a * x; }\n".into());
    push(e, Some("code-present"), &mut out);
    // Duplicates and contamination.
    let mut e = next(0);
    e.question = good[0].question.to_uppercase();
    push(e, Some("near-duplicate"), &mut out);
    let mut e = next(14);
    e.question = EVAL_QUESTION.into();
    rewrite(&mut e, "A 64-bit one: `int64_t  tid   = blockIdx.x * NB + threadIdx.x;` keeps tid * incx exact when the vector is longer than a 32-bit index reaches.");
    push(e, Some("contaminated"), &mut out);
    let mut e = next(15);
    e.answer = format!("As the library does, {EVAL_ANSWER}");
    push(e, Some("contaminated"), &mut out);
    // Semantic errors: grounded words, wrong claims. A status the code contradicts is
    // caught by the fact check (rocblas_scal_imp.hpp:88 returns success for n <= 0); so
    // is a barrier claimed of a kernel rocblas_sscal launches, whose device code has
    // none (rocblas_scal_kernel, rocblas_scal_kernels.hpp:26-58, calls only
    // load_scalar and load_ptr_batch). The same claim of a kernel shown but launched by
    // another API (the entry is about rocblas_sscal) is judged by the device code of
    // the APIs that launch it: `rocqa validate` reads the facts of the APIs of the
    // family the kernel's name carries (axpy), as a whole-library extract has them.
    let mut e = next(16);
    rewrite(&mut e, "rocblas_axpy_kernel synchronizes the block with __syncthreads before every update of y, since threads share x through LDS.");
    push(e, Some("contradicts-code"), &mut out);
    let mut e = next(0);
    rewrite(&mut e, "rocblas_scal_kernel synchronizes the block with __syncthreads before each store of x, since threads share alpha through LDS.");
    push(e, Some("contradicts-code"), &mut out);
    let mut e = next(17);
    rewrite(&mut e, "rocblas_internal_scal_launcher returns rocblas_status_invalid_size when n <= 0, treating an empty vector as an error.");
    push(e, Some("contradicts-code"), &mut out);
    // Sentences with a value missing: a template filled with nothing.
    let mut e = next(18);
    rewrite(&mut e, "rocblas_internal_scal_launcher returns  if  (library/src/blas1/rocblas_scal_kernels.hpp:190-191), so an empty vector launches nothing.");
    push(e, Some("empty-slot"), &mut out);
    let mut e = next(19);
    rewrite(&mut e, "rocblas_sscal calls rocblas_internal_scal_template of , defined at : (library/src/blas1/rocblas_scal_kernels.hpp:182-230).");
    push(e, Some("empty-slot"), &mut out);
    // The form of the text: what a model leaves when it is cut off, loops, thinks aloud
    // or answers in another language, and what a server's bytes do to it.
    let mut e = next(20);
    e.answer = format!(
        "<think>The user wants the block size.</think>\n{}",
        e.answer
    );
    push(e, Some("model-markup"), &mut out);
    let mut e = next(21);
    e.answer = format!("Okay, so let me look at the launcher first. {}", e.answer);
    push(e, Some("model-markup"), &mut out);
    // Talk about the instructions of the system prompt, which the training example
    // does not carry (talk about the code shown is fine: the entry carries its slice).
    let mut e = next(7);
    e.answer = format!("Per the instructions, {}", e.answer);
    push(e, Some("model-markup"), &mut out);
    let mut e = next(22);
    let cut = e.answer.len() * 2 / 3;
    let cut = (cut..e.answer.len())
        .find(|&i| e.answer.is_char_boundary(i) && e.answer[i..].starts_with(" the"))
        .unwrap_or(cut);
    e.answer = format!("{} the", &e.answer[..cut]);
    push(e, Some("truncated"), &mut out);
    let mut e = next(23);
    e.answer = format!(
        "{} The block is built as:\n```cpp\ndim3 threads(NB);",
        e.answer
    );
    push(e, Some("unbalanced-markdown"), &mut out);
    let mut e = next(1);
    e.answer = "它只在 `alpha != 1 && tid < n` 成立时写入，所以单位 alpha 不改变 x，超出 n 的线程什么也不做。".into();
    push(e, Some("not-english"), &mut out);
    let mut e = next(2);
    e.answer = format!("{0} {0} {0} {0}", e.answer);
    push(e, Some("repetition"), &mut out);
    let mut e = next(3);
    rewrite(
        &mut e,
        "The product is computed in {compute_type} before it is cast back to T and stored.",
    );
    push(e, Some("empty-slot"), &mut out);
    let mut e = next(4);
    e.answer = format!("{}\u{1b}[0m", e.answer);
    push(e, Some("control-characters"), &mut out);
    let mut e = next(5);
    e.question = format!("What does {{api}} return for n <= 0? ({})", e.id);
    push(e, Some("question-form"), &mut out);
    let mut e = next(6);
    e.question = format!("The scal kernels of rocBLAS, {}", e.id);
    push(e, Some("question-form"), &mut out);
    // What the entry says of itself: its API, family, template and generator, checked
    // against the library's index and the templates.
    let mut e = next(7);
    e.apis.push("rocblas_sscal_turbo".into());
    push(e, Some("provenance"), &mut out);
    let mut e = next(8);
    e.api = "rocsolver_sgetrf".into();
    e.apis = vec!["rocsolver_sgetrf".into()];
    push(e, Some("provenance"), &mut out);
    let mut e = next(9);
    e.family = "axpy".into();
    push(e, Some("provenance"), &mut out);
    let mut e = next(10);
    e.template_id = "semantics.invented".into();
    push(e, Some("provenance"), &mut out);
    let mut e = next(11);
    e.category = "edge-cases".into();
    push(e, Some("provenance"), &mut out);
    let mut e = next(12);
    e.generator = "facts".into();
    push(e, Some("provenance"), &mut out);
    let mut e = next(13);
    e.model.clear();
    push(e, Some("provenance"), &mut out);
    let mut e = next(14);
    e.slice_id = "rocblas:5.5.1:scal".into();
    push(e, Some("provenance"), &mut out);
    // Names of the library that the slice does not hold: another API's code.
    let mut e = next(16);
    rewrite(&mut e, "The scal launcher hands the vector to rocblas_internal_gemv_launcher, which reuses the gemv grid for one column.");
    push(e, Some("name-outside-slice"), &mut out);
    let mut e = next(17);
    rewrite(&mut e, "For unit stride the work goes to `rocblas_gemvn_kernel`, which scales x as a one-column matrix.");
    push(e, Some("name-outside-slice"), &mut out);
    // Prose that could be said of any kernel: nothing of the slice named.
    let mut e = next(19);
    rewrite(&mut e, "The kernel splits the work evenly among its threads, and each thread writes its result back to global memory once it is done.");
    push(e, Some("ungrounded"), &mut out);
    // A constant the code fixes, stated wrong in other words.
    let mut e = next(18);
    rewrite(&mut e, "The generic scal path builds its grid with NB being 512, so each block covers 512 elements of x.");
    push(e, Some("contradicts-code"), &mut out);
    let mut e = next(15);
    e.id = good[15].id.clone();
    rewrite(&mut e, "Each thread of rocblas_axpy_kernel adds alpha times its element of x to y, once `if(alpha)` holds.");
    push(e, Some("duplicate-id"), &mut out);
    claims(good, &mut next, &mut out);
    out
}

/// Defects of classes found after the first set: wrong claims about the code in
/// grounded words (which kernel, which stream, a host wait, a parameter, a location, a
/// limit), the form of a chat reply, answers given twice, and code that compiles but
/// cannot run as written. Semantic errors no check reads are counted as misses.
fn claims(good: &[Entry], next: &mut dyn FnMut(usize) -> Entry, out: &mut Vec<Defect>) {
    let mut push = |base: usize, answer: &str, want: Option<&'static str>| {
        let mut e = next(base);
        e.answer = answer.into();
        out.push(Defect {
            entry: serde_json::to_value(&e).unwrap(),
            want,
        });
    };
    // Which kernel, under which condition.
    push(6, "For float data with unit stride rocblas_sscal launches rocblas_axpy_kernel, which adds alpha times x into x.", Some("contradicts-code"));
    push(6, "The launcher picks rocblas_sscal_2_kernel when incx == 2, so each thread takes every other element.", Some("contradicts-code"));
    // Host-side behaviour the code does not have.
    push(22, "The scal kernels are queued on the default null stream (stream 0), not on the handle's stream, so they serialize with all other work.", Some("contradicts-code"));
    push(22, "After the launch rocblas_internal_scal_launcher calls hipDeviceSynchronize, so rocblas_sscal blocks until x is scaled.", Some("contradicts-code"));
    // Device features the kernel does not use, the reason hedged.
    push(0, "rocblas_scal_kernel updates x with atomicAdd because several threads may write the same element of x.", Some("contradicts-code"));
    push(0, "rocblas_scal_kernel first stages its element of x in LDS (__shared__ memory) and then scales it after a barrier.", Some("contradicts-code"));
    // The prototype.
    push(18, "rocblas_sscal takes alpha as a double passed by value and x as a const float*, returning the scaled vector.", Some("contradicts-code"));
    push(18, "rocblas_sscal takes a handle, n, alpha, x, incx and a batch_count argument that says how many vectors to scale.", Some("contradicts-code"));
    // Where code is, and what the hardware allows.
    push(
        18,
        "rocblas_sscal returns void and takes a rocblas_handle, n, alpha, x and incx.",
        Some("contradicts-code"),
    );
    push(
        18,
        "rocblas_sscal takes six arguments: handle, n, alpha, x, incx and stride_x.",
        Some("contradicts-code"),
    );
    push(9, "When the pointer mode is host, rocblas_sscal copies alpha to the device with hipMemcpy before the launch.", Some("contradicts-code"));
    push(22, "Every launch in the launcher uses hipLaunchKernelGGL directly with stream 0, so the handle's stream is ignored.", Some("contradicts-code"));
    push(0, "rocblas_scal_kernel is defined in rocblas_axpy_kernels.hpp next to the axpy kernel and takes its batch from blockIdx.z.", Some("line-range-elsewhere"));
    push(0, "rocblas_scal_kernel is declared in rocblas-functions.h and gives each thread one element of x from blockIdx.x.", Some("line-range-elsewhere"));
    push(0, "rocblas_scal_kernel (library/src/blas2/rocblas_scal_kernels.hpp:26-58) gives each thread one element of x from blockIdx.x.", Some("unknown-file"));
    push(12, "The kernel is declared with ROCBLAS_KERNEL(DIM_X), which expands to static __global__ __launch_bounds__((DIM_X)) void, so a block can have up to 2048 threads.", Some("contradicts-code"));
    push(13, "The batches go in the grid's y dimension: `int batches = handle->getBatchGridDim((int)batch_count);` and blockIdx.y selects the instance.", Some("builtin-not-in-kernel"));
    push(2, "The product is formed as `Tex res = (Tex)x[tid * incx] * alpha;`, converting to Tex before the multiply.", Some("quote-not-in-slice"));
    // What a function is, the release, a web address from memory.
    push(
        0,
        "rocblas_scal_kernel is a __device__ function called by the launcher for each element.",
        Some("contradicts-code"),
    );
    push(
        0,
        "rocblas_scal_kernel is a host function that loops over x on the CPU.",
        Some("contradicts-code"),
    );
    push(6, "In rocBLAS 5.5.1, the launcher computes `int  blocks = (n - 1) / NB + 1;` and builds `dim3 grid(blocks, 1, batches);`.", Some("source-pin"));
    push(0, "See https://rocm.docs.amd.com/projects/rocBLAS/en/latest/scal.html: rocblas_scal_kernel gives each thread one element of x.", Some("quote-not-in-slice"));
    // A variable's type against its declaration (`int64_t  tid` in rocblas_axpy_kernel).
    push(17, "rocblas_axpy_kernel declares tid as a 32-bit int, so vectors longer than 2^31 elements overflow.", Some("declared-type"));
    // A chat reply's form.
    push(1, "I hope this helps! It only writes when `alpha != 1 && tid < n` holds, so a unit alpha leaves x untouched. Let me know if you have any other questions.", Some("model-markup"));
    push(
        1,
        r#"{"answer": "It only writes when `alpha != 1 && tid < n` holds, so a unit alpha leaves x untouched and threads past n do nothing."}"#,
        Some("model-markup"),
    );
    push(1, "As instructed, citing file:line: it only writes when `alpha != 1 && tid < n` holds, so a unit alpha leaves x untouched.", Some("model-markup"));
    // One answer under two questions: another question's answer, or this one's again.
    push(3, &good[5].answer, Some("near-duplicate"));
    push(15, &good[16].answer, Some("near-duplicate"));
    // Semantic errors in grounded words that no check reads: counts, arithmetic,
    // pointer modes, the branch a quote belongs to, what a helper does.
    push(7, "rocblas_sscal_2_kernel lets each thread scale four neighbouring elements of x, so the grid needs a quarter of the blocks.", Some("contradicts-code"));
    push(17, "rocblas_axpy_kernel declares its thread index as a 32-bit int, so vectors longer than 2^31 elements overflow.", Some("declared-type"));
    push(5, "In the generic branch the launcher computes the block count as n / NB, a floor division, so a partial block is dropped and the tail of x is never scaled.", Some("contradicts-code"));
    push(9, "With rocblas_pointer_mode_host the launcher passes the device pointer alpha and load_scalar reads it on the GPU.", Some("contradicts-code"));
    push(20, "The launcher uses `int32_t blocks = (n - 1) / (NB * 2) + 1;` for the half-precision path because each thread covers two elements.", Some("quote-off-path"));
    push(
        16,
        "Yes: even when alpha is zero the kernel reads every element of x and writes y.",
        Some("contradicts-code"),
    );
    push(11, "It calls `load_ptr_batch(xa, batch, offset_x, stride_x)`, which copies the batch's x into a temporary buffer in global memory before scaling.", Some("contradicts-code"));
    push(
        0,
        "rocblas_scal_kernel reads x through __ldg and caches alpha in constant memory.",
        Some("contradicts-code"),
    );
    push(
        6,
        "rocblas_sscal launches rocblas_sscal_2_kernel for double precision with unit stride.",
        Some("contradicts-code"),
    );
    // Code that compiles and cannot run as written.
    let answer = |k: usize| {
        format!("Like rocblas_scal_kernel, each thread takes one element from blockIdx.x * blockDim.x + threadIdx.x and guards with i < n; `scale_rows` below is sketch {k}, with its launch.")
    };
    for (k, code, want) in [
        (1, format!("{KERNEL_CODE}void run(int n, float a, float* x) {{ hipLaunchKernelGGL(scale_rows, dim3((n + 1023) / 1024), dim3(1024), 0, 0, n, a, x); }}\n"), "launch-bounds"),
        (2, KERNEL_CODE.replace("        x[i] *= a;", "        __syncthreads();"), "divergent-barrier"),
        (3, KERNEL_CODE.replace("int i = blockIdx.x * blockDim.x + threadIdx.x;", "__shared__ float buf[32768];\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    buf[threadIdx.x] = a;"), "compile-backend"),
        (4, KERNEL_CODE.replace("x[i] *= a;", "x[i] = __shfl_down_sync(0xffffffff, x[i], 16) * a;"), "compile-frontend"),
    ] {
        let mut e = next(24);
        e.answer = answer(k);
        e.code = Some(code);
        out.push(Defect {
            entry: serde_json::to_value(&e).unwrap(),
            want: Some(want),
        });
    }
}

const EVAL_QUESTION: &str = "In the axpy kernel of rocBLAS, what integer type holds the thread index and why must it be 64 bits wide for long vectors?";
const EVAL_ANSWER: &str = "each thread of the axpy kernel computes one element of y from the matching element of x scaled by alpha, and threads beyond n return without touching memory";

#[test]
fn good_entries_are_kept_and_planted_defects_caught() {
    let good = good();
    let defects = defects(&good);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("entries.jsonl");
    let mut text: String = good
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    for d in &defects {
        text.push_str(&serde_json::to_string(&d.entry).unwrap());
        text.push('\n');
    }
    // Two lines that are no entry at all: bytes that are not UTF-8, and not JSON.
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(b"{\"id\": \"rocblas-00000000000000ff\", \"answer\": \"\xff\xfe\"}\n");
    bytes.extend_from_slice(b"{\"id\": \"rocblas-00000000000000fe\", \"answer\": \n");
    let bad_lines = [
        (good.len() + defects.len() + 1, "unreadable"),
        (good.len() + defects.len() + 2, "unreadable"),
    ];
    std::fs::write(&file, bytes).unwrap();
    let eval_a = dir.path().join("eval-a.jsonl");
    std::fs::write(
        &eval_a,
        serde_json::json!({"question": EVAL_QUESTION, "answer": "A 64-bit index."}).to_string()
            + "\n",
    )
    .unwrap();
    let eval_b = dir.path().join("eval-b.jsonl");
    std::fs::write(
        &eval_b,
        serde_json::json!({"messages": [{"role": "user", "content": "Explain axpy."}, {"role": "assistant", "content": EVAL_ANSWER}]}).to_string() + "\n",
    )
    .unwrap();
    // Work dirs left by a compile check killed with kill -9 (its process is gone) are
    // swept; a live process's are left alone.
    let stale = std::env::temp_dir().join("rocqa-compile-99999999-0-0");
    let live = std::env::temp_dir().join(format!("rocqa-compile-{}-0-0", std::process::id()));
    std::fs::create_dir_all(stale.join("sub")).unwrap();
    std::fs::create_dir_all(&live).unwrap();
    let out = dir.path().join("checked");
    let o = Command::new(BIN)
        .arg("--root")
        .arg(repo())
        .arg("validate")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("--decontaminate")
        .arg(&eval_a)
        .arg("--decontaminate")
        .arg(&eval_b)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!stale.exists() && live.exists());
    std::fs::remove_dir(&live).unwrap();
    let kept = jsonl(&out.join("entries.jsonl"));
    let rejects = jsonl(&out.join("rejects.jsonl"));
    let reason = |id: &str| {
        rejects
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| format!("{}: {}", r["reason"].as_str().unwrap(), r["detail"]))
    };
    // By what is kept: a planted duplicate id's reject carries a good entry's id.
    let kept_ids: std::collections::BTreeSet<&str> =
        kept.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let good_rejected: Vec<String> = good
        .iter()
        .filter(|e| !kept_ids.contains(e.id.as_str()))
        .map(|e| format!("{} {:?}", e.id, reason(&e.id)))
        .collect();
    assert!(
        good_rejected.is_empty(),
        "good entries rejected: {good_rejected:#?}"
    );
    assert_eq!(
        kept.len(),
        good.len()
            + defects
                .iter()
                .filter(|d| reason(d.entry["id"].as_str().unwrap()).is_none())
                .count()
    );
    let mut caught = 0;
    let mut wrong = Vec::new();
    for d in &defects {
        let id = d.entry["id"].as_str().unwrap();
        match (reason(id), d.want) {
            (Some(r), Some(want)) if r.starts_with(&format!("{want}:")) => caught += 1,
            (Some(r), _) => {
                caught += 1;
                if d.want.is_some() {
                    wrong.push(format!("{id}: want {:?}, got {r}", d.want));
                }
            }
            (None, Some(want)) => wrong.push(format!("{id}: want {want}, kept")),
            (None, None) => {}
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    for (line, want) in bad_lines {
        assert!(
            rejects.iter().any(|r| r["reason"] == want
                && r["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("line {line}:"))),
            "line {line}: {stdout}"
        );
    }
    // Contamination is reported per evaluation set.
    assert!(
        stdout.contains("eval-a.jsonl: 1 items; 1 entries overlap by question, 0 by answer"),
        "{stdout}"
    );
    assert!(
        stdout.contains("eval-b.jsonl: 1 items; 0 entries overlap by question, 1 by answer"),
        "{stdout}"
    );
    let rate = caught as f64 / defects.len() as f64;
    println!(
        "corpus: {} good kept of {}; {caught} of {} defects caught ({:.1}%)",
        good.len() - good_rejected.len(),
        good.len(),
        defects.len(),
        rate * 100.0
    );
    assert!(
        defects.len() >= 45 && rate >= 0.9,
        "{caught} of {}",
        defects.len()
    );
}
