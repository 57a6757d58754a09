//! What runs, decided by the compiler: the launches and calls of real rocBLAS 6.4.4 /
//! rocSOLVER 6.4.3 APIs whose choice depends on types (`if constexpr`, overloads, a
//! `static constexpr` type test one call down), each checked at its `file:line`, and a
//! count over sets of APIs of which reading decided each launch and call fact. The
//! reading is on where rocqa.toml says `compiler_facts = true`; the tests run in a
//! root whose rocqa.toml says so for both libraries.
#![cfg(feature = "real-sources")]

use assert_cmd::Command;
use rocqa::model::{ApiFacts, Fact, FactKind};

/// A project root whose rocqa.toml turns the compiler's reading on for both libraries
/// (`compiler_facts = true`), with the repository's trees and cache linked in.
fn compiler_root() -> &'static std::path::Path {
    static ROOT: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = tempfile::tempdir().expect("temp root");
        let toml = std::fs::read_to_string(repo.join("rocqa.toml")).expect("rocqa.toml");
        let mut on = String::new();
        for line in toml.lines() {
            on.push_str(line);
            on.push('\n');
            if line == "[library.rocblas]" || line == "[library.rocsolver]" {
                on.push_str("compiler_facts = true\n");
            }
        }
        assert_eq!(on.matches("compiler_facts = true").count(), 2, "{on}");
        std::fs::write(dir.path().join("rocqa.toml"), on).unwrap();
        for d in ["allowlists", "question_templates"] {
            std::os::unix::fs::symlink(repo.join(d), dir.path().join(d)).unwrap();
        }
        let sources = dir.path().join("rocm_sources");
        std::fs::create_dir(&sources).unwrap();
        for e in std::fs::read_dir(repo.join("rocm_sources")).unwrap() {
            let e = e.unwrap();
            std::os::unix::fs::symlink(e.path(), sources.join(e.file_name())).unwrap();
        }
        dir
    })
    .path()
}

fn facts(lib: &str, api: &str) -> Vec<ApiFacts> {
    let out = Command::cargo_bin("rocqa")
        .expect("binary")
        .arg("--root")
        .arg(compiler_root())
        .args(["facts", "--lib", lib, "--api", api, "--json"])
        .timeout(std::time::Duration::from_secs(7200))
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one ApiFacts record per line"))
        .collect()
}

fn one(lib: &str, api: &str) -> ApiFacts {
    facts(lib, api).pop().expect("the API's facts")
}

fn launches<'a>(f: &'a ApiFacts, kernel: &str) -> Vec<&'a Fact> {
    f.facts
        .iter()
        .filter(|x| x.kind == FactKind::Launch && x.subject == kernel)
        .collect()
}

fn launch_at<'a>(f: &'a ApiFacts, kernel: &str, file: &str, line: u32) -> &'a Fact {
    launches(f, kernel)
        .into_iter()
        .find(|x| x.file == file && x.line == line)
        .unwrap_or_else(|| {
            panic!(
                "{}: no launch of {kernel} at {file}:{line}; launches: {:?}",
                f.api,
                f.facts
                    .iter()
                    .filter(|x| x.kind == FactKind::Launch)
                    .map(|x| format!("{} {}:{}", x.subject, x.file, x.line))
                    .collect::<Vec<_>>()
            )
        })
}

fn excluded_at(f: &ApiFacts, kernel: &str, at: &str) -> String {
    f.excluded
        .iter()
        .find(|x| x.starts_with(&format!("{kernel} at ")) && x.contains(at))
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{}: {kernel} at {at} not excluded: {:#?}",
                f.api, f.excluded
            )
        })
}

const GEMV: &str = "library/src/blas2/rocblas_gemv_kernels.cpp";

#[test]
fn single_precision_batched_gemv_launches_the_float_kernels() {
    // rocblas_gemv_kernels.cpp:165: `is_float` holds for `Ti = float` and for
    // `Ti = float const*` (batched); :275 `if constexpr(is_float || is_double)` keeps
    // the double-buffered launch at :332 in the instantiation both forms reach.
    for api in ["rocblas_sgemv_batched", "rocblas_sgemv_strided_batched"] {
        let f = one("rocblas", api);
        let l = launch_at(&f, "rocblas_gemvn_double_buffered_kernel", GEMV, 332);
        assert_eq!(l.values["decided_by"], "compiler", "{api}");
        assert!(
            l.conditions.iter().all(|c| !c.starts_with("constexpr")),
            "{api}: {:?}",
            l.conditions
        );
        launch_at(&f, "rocblas_gemvt_double_buffered_kernel", GEMV, 638);
    }
}

#[test]
fn chemv_64_never_launches_the_real_only_symv_kernels() {
    // rocblas_hemv_symv_kernels.cpp:3222: `if constexpr(is_float || is_double)` around
    // the double-buffered symv launches (:3235); chemv is complex.
    let f = one("rocblas", "rocblas_chemv_64");
    assert!(launches(&f, "rocblas_symv_kernel_upper_double_buffered_diagonal").is_empty());
    let why = excluded_at(
        &f,
        "rocblas_symv_kernel_upper_double_buffered_diagonal",
        "rocblas_hemv_symv_kernels.cpp:3235",
    );
    assert!(why.contains("read by the compiler"), "{why}");
    let l = launch_at(
        &f,
        "rocblas_hemvn_kernel_upper",
        "library/src/blas2/rocblas_hemv_symv_kernels.cpp",
        3359,
    );
    assert_eq!(l.values["decided_by"], "compiler");
}

#[test]
fn haxpy_64_never_launches_the_half_kernels() {
    // rocblas_axpy_kernels.hpp:343-345: `using_rocblas_half` compares the alpha type
    // `Ta`, a pointer (`const rocblas_half*`) in the launcher these forms reach, so
    // the half kernels at :376/:394 never launch; the generic kernel at :472 does.
    // (rocblas_axpy_ex reaches several launcher instantiations whose arguments differ,
    // so no single `Ta` is given to the text evaluator there yet.)
    {
        let api = "rocblas_haxpy_64";
        let f = one("rocblas", api);
        assert!(
            launches(&f, "rocblas_haxpy_mlt_8_kernel").is_empty(),
            "{api}"
        );
        assert!(
            launches(&f, "rocblas_haxpy_mod_8_kernel").is_empty(),
            "{api}"
        );
        let why = excluded_at(
            &f,
            "rocblas_haxpy_mlt_8_kernel",
            "rocblas_axpy_kernels.hpp:376",
        );
        assert!(why.contains("using_rocblas_half"), "{api}: {why}");
        let l = launch_at(
            &f,
            "rocblas_axpy_kernel",
            "library/src/blas1/rocblas_axpy_kernels.hpp",
            472,
        );
        assert_eq!(l.values["decided_by"], "compiler", "{api}");
    }
}

#[test]
fn isamax_launches_are_the_compilers() {
    let f = one("rocblas", "rocblas_isamax");
    let l = launch_at(
        &f,
        "rocblas_iamax_iamin_kernel_part1",
        "library/src/blas1/rocblas_iamax_iamin_kernels.cpp",
        84,
    );
    assert_eq!(l.values["decided_by"], "compiler");
}

#[test]
fn ssytrd_launches_the_copy_mat_overload_it_resolves_to() {
    // roclapack_sytrd_hetrd.hpp:187 launches `copy_mat`; of its overloads the float
    // instantiation resolves to one, the others are excluded by name and place.
    let f = one("rocsolver", "rocsolver_ssytrd");
    let at = "library/src/lapack/roclapack_sytrd_hetrd.hpp";
    let l = launch_at(&f, "copy_mat", at, 187);
    assert_eq!(l.values["decided_by"], "compiler");
    assert_eq!(
        launches(&f, "copy_mat")
            .iter()
            .filter(|x| x.line == 187)
            .count(),
        1,
        "one overload launched at :187"
    );
    let why = excluded_at(&f, "copy_mat", "roclapack_sytrd_hetrd.hpp:187");
    assert!(why.contains("another overload of copy_mat"), "{why}");
}

/// Conditions that test a type: a choice the compiler makes and the text can only
/// guess.
fn type_dependent(c: &str) -> bool {
    c.starts_with("constexpr ")
        || [
            "is_same",
            "is_complex",
            "using_rocblas_",
            "is_float",
            "is_double",
        ]
        .iter()
        .any(|w| c.contains(w))
}

/// API sets whose units the tests above compile anyway (a whole library takes about
/// half an hour of compiling on two cores; `benches/instantiations.sh` measures it).
const COUNTED: [(&str, &str); 2] = [
    (
        "rocblas",
        "rocblas_{s,c}{scal,axpy,gemv,hemv,dot}{,_batched,_64}",
    ),
    ("rocsolver", "rocsolver_{s,c}{sytrd,hetrd,getrf,potrf}"),
];

#[test]
fn api_sets_count_what_each_reading_decided() {
    for (lib, apis) in COUNTED {
        let all = facts(lib, apis);
        let mut by = std::collections::BTreeMap::<String, usize>::new();
        let mut open_type_choices = 0;
        for f in &all {
            for x in f
                .facts
                .iter()
                .filter(|x| matches!(x.kind, FactKind::Launch | FactKind::CrossLibrary))
            {
                let reading = x.values.get("decided_by").cloned().unwrap_or_default();
                assert!(
                    reading == "compiler" || reading == "text",
                    "{}: {} at {}:{} has decided_by {reading:?}",
                    f.api,
                    x.subject,
                    x.file,
                    x.line
                );
                *by.entry(reading).or_default() += 1;
                if x.conditions.iter().any(|c| type_dependent(c)) {
                    open_type_choices += 1;
                }
            }
        }
        println!(
            "{lib} {apis}: {} APIs; launch/call facts decided by the compiler {}, by the text {}; type-dependent choices still open {open_type_choices}",
            all.len(),
            by.get("compiler").copied().unwrap_or(0),
            by.get("text").copied().unwrap_or(0),
        );
        assert!(by.get("compiler").copied().unwrap_or(0) > 0, "{lib}");
    }
}
