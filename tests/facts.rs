//! Facts read off the fixture library (`tests/fixtures/minilib`), through the real
//! binary: `rocqa facts --json` on fetched fixture trees.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use rocqa::model::{ApiFacts, Fact, FactKind};

fn minilib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilib")
}

/// A project with both fixture trees fetched.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(minilib().join("rocqa.toml"), dir.path().join("rocqa.toml")).expect("copy");
    std::fs::create_dir(dir.path().join("allowlists")).expect("mkdir");
    for lib in ["rocfx", "rocfxsolver"] {
        std::fs::copy(
            minilib().join(format!("allowlists/{lib}.toml")),
            dir.path().join(format!("allowlists/{lib}.toml")),
        )
        .expect("copy allowlist");
        Command::cargo_bin("rocqa")
            .expect("binary")
            .arg("--root")
            .arg(dir.path())
            .args([
                "sources",
                "fetch",
                "--lib",
                lib,
                "--version",
                "1.0",
                "--from-dir",
            ])
            .arg(minilib().join("trees").join(lib))
            .assert()
            .success();
    }
    dir
}

fn facts(root: &Path, lib: &str, api: &str) -> ApiFacts {
    let out = Command::cargo_bin("rocqa")
        .expect("binary")
        .arg("--root")
        .arg(root)
        .args(["facts", "--lib", lib, "--api", api, "--json"])
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).expect("one ApiFacts record")
}

fn find<'a>(f: &'a ApiFacts, kind: FactKind, subject: &str, file: &str, line: u32) -> &'a Fact {
    f.facts
        .iter()
        .find(|x| {
            x.kind == kind && x.subject == subject && x.file.ends_with(file) && x.line == line
        })
        .unwrap_or_else(|| {
            panic!(
                "no {kind:?} fact about {subject} at {file}:{line} for {}; facts:\n{:#?}",
                f.api, f.facts
            )
        })
}

#[test]
fn fixture_scal_launch_checks_and_bounds() {
    let p = project();
    let f = facts(p.path(), "rocfx", "rocfx_sscal");
    // rocfx_scal_kernels.hpp:77: ROCFX_LAUNCH_KERNEL((rocfx_scal_kernel<API_INT, NB, T, U>),
    // grid, threads, 0, ...), NB = ROCFX_SCAL_NB = 256 from the template's call site.
    let l = find(
        &f,
        FactKind::Launch,
        "rocfx_scal_kernel",
        "blas1/rocfx_scal_kernels.hpp",
        77,
    );
    assert_eq!(l.function, "rocfx_internal_scal_launcher");
    assert!(l.values["block"].contains("NB = 256"), "{:?}", l.values);
    assert_eq!(l.values["lds"], "0 bytes");
    let b = find(
        &f,
        FactKind::LaunchBounds,
        "rocfx_scal_kernel",
        "blas1/rocfx_scal_kernels.hpp",
        47,
    );
    assert_eq!(b.values["bounds"], "NB");
    assert_eq!(b.values["value"], "256");
    // The macro that writes the bounds is kept as the code says it.
    assert_eq!(b.values["written"], "ROCFX_KERNEL(NB)");
    // rocfx_scal_imp.hpp:31-32: if(!handle) return rocfx_status_invalid_handle;
    let c = find(
        &f,
        FactKind::ArgCheck,
        "rocfx_status_invalid_handle",
        "blas1/rocfx_scal_imp.hpp",
        31,
    );
    assert_eq!(c.values["condition"], "!handle");
    // rocfx_scal_kernels.hpp:68-69: quick return when n <= 0 || batch_count <= 0. The
    // non-batched `_impl` passes batch_count = 1 (rocfx_scal_imp.hpp:41) and has already
    // returned for `n <= 0` (rocfx_scal_imp.hpp:36-37), so rocfx_sscal never takes it.
    let at_68 = |f: &ApiFacts| {
        f.facts.iter().any(|x| {
            x.kind == FactKind::QuickReturn
                && x.file.ends_with("blas1/rocfx_scal_kernels.hpp")
                && x.line == 68
        })
    };
    assert!(!at_68(&f), "{:#?}", f.facts);
    assert!(f.excluded.is_empty());
    // The batched `_impl` returns for the same test first (rocfx_scal_batched_imp.hpp:52),
    // and that return is the batched form's quick return.
    let batched = facts(p.path(), "rocfx", "rocfx_sscal_batched");
    assert!(!at_68(&batched), "{:#?}", batched.facts);
    let q = find(
        &batched,
        FactKind::QuickReturn,
        "rocfx_status_success",
        "blas1/rocfx_scal_batched_imp.hpp",
        52,
    );
    assert_eq!(q.values["condition"], "n <= 0 || batch_count <= 0");
    // The alpha quick return (rocfx_scal_batched_imp.hpp:54) calls an overload per form:
    // the pointer-array one is `return false;`, so only the strided form can take it.
    let alpha_return = |f: &ApiFacts| {
        f.facts.iter().any(|x| {
            x.kind == FactKind::QuickReturn
                && x.file.ends_with("blas1/rocfx_scal_batched_imp.hpp")
                && x.line == 54
        })
    };
    assert!(!alpha_return(&batched), "{:#?}", batched.facts);
    let strided = facts(p.path(), "rocfx", "rocfx_sscal_strided_batched");
    assert!(alpha_return(&strided), "{:#?}", strided.facts);
}

#[test]
fn fixture_solver_cross_library_and_loop_conditions() {
    let p = project();
    let f = facts(p.path(), "rocfxsolver", "rocfxsolver_sgetrf");
    let x = find(
        &f,
        FactKind::CrossLibrary,
        "rocfx_internal_scal_template",
        "include/rocfx.hpp",
        38,
    );
    assert!(x.values["callee"].starts_with("rocfx:library/src/blas1/rocfx_scal_kernels.cpp"));
    // roclapack_getf2.hpp:73-75: the pivot search runs once per column; the loop is a
    // condition of the launch, and the fact cites the launch's own line, not the loop's.
    let l = find(
        &f,
        FactKind::Launch,
        "getf2_iamax",
        "lapack/roclapack_getf2.hpp",
        75,
    );
    assert_eq!(l.end_line, 75);
    // roclapack_getf2.hpp:78-80: behind `#ifdef OPTIMAL`, which the build defines
    // (CMakeLists.txt), under a run-time size threshold stated as a condition.
    let s = find(
        &f,
        FactKind::Launch,
        "getf2_small_kernel",
        "lapack/roclapack_getf2.hpp",
        80,
    );
    assert_eq!(s.conditions.last().map(String::as_str), Some("m - j <= 64"));
    // roclapack_getf2_specialized_kernels.hpp:12: `__launch_bounds__(ROCFXSOLVER_SSKER_MAX_M)`,
    // a macro for 64: the number is the limit, the macro what the code writes.
    let b = find(
        &f,
        FactKind::LaunchBounds,
        "getf2_small_kernel",
        "specialized/roclapack_getf2_specialized_kernels.hpp",
        12,
    );
    assert_eq!(b.values["value"], "64");
    assert_eq!(
        b.values["written"],
        "__launch_bounds__(ROCFXSOLVER_SSKER_MAX_M)"
    );
    // roclapack_getf2.hpp:40: `__launch_bounds__(BS2)` says what it expands to: no
    // second form.
    let i = find(
        &f,
        FactKind::LaunchBounds,
        "getf2_iamax",
        "lapack/roclapack_getf2.hpp",
        40,
    );
    assert!(!i.values.contains_key("written"), "{:?}", i.values);
    assert!(
        l.conditions.iter().any(|c| c.starts_with("loop: for")),
        "{:?}",
        l.conditions
    );
    let r = find(
        &f,
        FactKind::ArgCheck,
        "rocfx_status_invalid_pointer",
        "lapack/roclapack_getrf.cpp",
        37,
    );
    assert_eq!(r.values["condition"], "m < 0 || n < 0 || lda < m");
}

/// The fact check on the fixture library, through `rocqa extract` (no endpoint) and
/// `rocqa validate`: a fact entry of rocfx_sscal rewritten as an LLM answer is kept
/// with the right values and rejected as `contradicts-code` with a planted wrong one.
#[test]
fn fixture_fact_check_rejects_contradictions_and_keeps_right_values() {
    let p = project();
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("question_templates");
    std::fs::create_dir(p.path().join("question_templates")).unwrap();
    for f in std::fs::read_dir(templates).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(
            &f,
            p.path()
                .join("question_templates")
                .join(f.file_name().unwrap()),
        )
        .unwrap();
    }
    Command::cargo_bin("rocqa")
        .expect("binary")
        .arg("--root")
        .arg(p.path())
        .env_remove("ROCQA_LLM_URL")
        .args(["extract", "--lib", "rocfx"])
        .assert()
        .success();
    let written = std::fs::read_to_string(p.path().join("out/rocfx/1.0/entries.jsonl")).unwrap();
    let base: serde_json::Value = written
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["api"] == "rocfx_sscal")
        .expect("a fact entry of rocfx_sscal");
    // rocfx_scal_kernels.hpp:77 launches rocfx_scal_kernel with dim3 threads(NB), NB =
    // 256; rocfx_scal_imp.hpp:36-37 returns success when n <= 0 || incx <= 0.
    let pairs = [
        (
            "rocfx_scal_kernel",
            "rocfx_axpy_kernel",
            "rocfx_scal_kernels.hpp:77",
        ),
        (
            "256 threads per block",
            "128 threads per block",
            "rocfx_scal_kernels.hpp:77",
        ),
        (
            "rocfx_status_success",
            "rocfx_status_invalid_pointer",
            "rocfx_scal_imp.hpp:36",
        ),
    ];
    let text = "rocfx_sscal launches rocfx_scal_kernel with 256 threads per block. When n <= 0 the launcher returns rocfx_status_success at once.";
    // The right answer once (its copies would be near-duplicates), then each wrong one.
    let mut answers = vec![text.to_string()];
    answers.extend(
        pairs
            .iter()
            .map(|(right, wrong, _)| text.replacen(right, wrong, 1)),
    );
    let mut lines = String::new();
    for (k, answer) in answers.iter().enumerate() {
        let mut e = base.clone();
        e["id"] = format!("rocfx-{k:016x}").into();
        e["answer"] = answer.clone().into();
        // A model's answer, as the LLM path writes it: a question template, a model.
        e["generator"] = "llm".into();
        e["model"] = "hand-written".into();
        e["template_id"] = "a2k.launch-config".into();
        e["category"] = "api-to-kernel".into();
        e["api"] = "rocfx_sscal".into();
        e["apis"] = serde_json::json!(["rocfx_sscal"]);
        lines.push_str(&e.to_string());
        lines.push('\n');
    }
    let file = p.path().join("planted.jsonl");
    std::fs::write(&file, lines).unwrap();
    let out = p.path().join("checked");
    Command::cargo_bin("rocqa")
        .expect("binary")
        .arg("--root")
        .arg(p.path())
        .arg("validate")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let read = |name: &str| -> Vec<serde_json::Value> {
        std::fs::read_to_string(out.join(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (kept, rejects) = (read("entries.jsonl"), read("rejects.jsonl"));
    assert!(
        kept.len() == 1 && kept[0]["id"] == "rocfx-0000000000000000",
        "right answer rejected: {rejects:?}"
    );
    for (k, (_, wrong, names)) in pairs.iter().enumerate() {
        let bad = format!("rocfx-{:016x}", k + 1);
        let r = rejects
            .iter()
            .find(|r| r["id"] == bad.as_str())
            .unwrap_or_else(|| panic!("kept with {wrong}"));
        assert_eq!(r["reason"], "contradicts-code", "{r}");
        assert!(r["detail"].as_str().unwrap().contains(names), "{r}");
    }
}

#[test]
fn fixture_static_state_a_setter_stores_and_an_abort_runs_once() {
    let p = project();
    // handle.cpp:39-43: a file-scope thread_local set by the API, named again by
    // rocfx_take_default_workspace_size (:48-49), which is no part of the API's graph.
    let f = facts(p.path(), "rocfx", "rocfx_set_default_workspace_size");
    let s = find(
        &f,
        FactKind::StaticState,
        "t_rocfx_default_workspace_size",
        "src/handle.cpp",
        43,
    );
    assert_eq!(s.values["value"], "size");
    assert_eq!(
        s.values["declared"],
        "static thread_local size_t t_rocfx_default_workspace_size"
    );
    assert_eq!(s.values["decl_lines"], "39-39");
    assert_eq!(s.values["uses"], "48-49");
    assert!(!s.values.contains_key("local"));
    // handle.cpp:61: a function-local static initialized by a call, run once; the
    // callee is cut from graphs (symbols.deny) but the initializer is the API's own code.
    let f = facts(p.path(), "rocfx", "rocfx_abort");
    let s = find(&f, FactKind::StaticState, "once", "src/handle.cpp", 61);
    assert_eq!(s.values["declared"], "static int once");
    assert_eq!(s.values["value"], "(rocfx_abort_once(), 0)");
    assert_eq!(s.values["local"], "true");
    // The once-initialized static is the only state the abort has.
    let kinds: Vec<FactKind> = f.facts.iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == FactKind::StaticState)
            .count(),
        1,
        "{kinds:?}"
    );
}

#[test]
fn fixture_stores_through_pointer_parameters_in_host_code_only() {
    let p = project();
    // handle.cpp:13: `*handle = new _rocfx_handle;`, handle being `rocfx_handle*`.
    let f = facts(p.path(), "rocfx", "rocfx_create_handle");
    let s = find(&f, FactKind::Store, "*handle", "src/handle.cpp", 13);
    assert_eq!(s.values["target"], "*handle");
    assert_eq!(s.values["value"], "new _rocfx_handle");
    assert!(s.conditions.is_empty(), "{:?}", s.conditions);
    // check_numerics_vector.hpp:19 `*abnormal = 1;` is device code (a kernel's store,
    // not the host's): it is not a store fact of rocfx_sscal.
    let f = facts(p.path(), "rocfx", "rocfx_sscal");
    let stores: Vec<&Fact> = f
        .facts
        .iter()
        .filter(|x| x.kind == FactKind::Store)
        .collect();
    assert!(
        stores
            .iter()
            .all(|x| !x.file.ends_with("check_numerics_vector.hpp")),
        "{stores:#?}"
    );
}

#[test]
fn fixture_declaration_definition_and_return_of_an_api() {
    let p = project();
    let f = facts(p.path(), "rocfx", "rocfx_sgemv");
    // rocfx-functions.h:101-112: ROCFX_EXPORT rocfx_status rocfx_sgemv(rocfx_handle
    // handle, ..., rocfx_int incy); the export macro is not part of the type.
    let d = find(
        &f,
        FactKind::Declaration,
        "rocfx_sgemv",
        "internal/rocfx-functions.h",
        101,
    );
    assert_eq!(d.end_line, 112);
    assert_eq!(d.values["returns"], "rocfx_status");
    assert_eq!(d.values["count"], "12");
    let params: Vec<&str> = d.values["params"].split(" | ").collect();
    assert_eq!(params[0], "rocfx_handle handle");
    assert_eq!(params[4], "const float* alpha");
    assert_eq!(params[11], "rocfx_int incy");
    // rocfx_gemv.cpp:16-35: a function-try-block whose catch(...) returns
    // exception_to_rocfx_status() (:32-35); its body returns the impl's result (:30).
    let def = find(
        &f,
        FactKind::Definition,
        "rocfx_sgemv",
        "blas2/rocfx_gemv.cpp",
        16,
    );
    assert_eq!(def.values["handler"], "exception_to_rocfx_status()");
    assert_eq!(def.end_line, 35);
    let r = find(
        &f,
        FactKind::Return,
        "rocfx_sgemv",
        "blas2/rocfx_gemv.cpp",
        30,
    );
    assert_eq!(
        r.values["returns"],
        "rocfx_gemv_impl(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy)"
    );
}
