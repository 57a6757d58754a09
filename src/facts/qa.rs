//! Question-answer entries rendered from facts, with no model: every statement is a
//! fact read off the code, every fact used is cited at `file:start-end` with the
//! SHA-256 of those lines.
//!
//! APIs whose rendered answer is the same (precision variants running the same code)
//! share one entry, listed in `apis`: an answer that would differ only in the API's
//! name is one entry, not several near-duplicates. Each template has several
//! phrasings, picked by a hash of the answer, so entries do not all read alike.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::model::{
    ApiFacts, Citation, Entry, Fact, FactKind, PieceRef, PieceRole, SourceRef, TokenUsage,
    ENTRY_SCHEMA_VERSION,
};
use crate::slice::{lines_hash, SliceError, Trees};

/// Bullet lines an answer lists before it says how many more there are.
const MAX_ITEMS: usize = 12;

/// One fact template: what it asks, which facts answer it.
struct Template {
    id: &'static str,
    category: &'static str,
    questions: [&'static str; 3],
    intros: [&'static str; 3],
}

const KERNELS: Template = Template {
    id: "facts-kernels",
    category: "api-to-kernel",
    questions: [
        "Which GPU kernels does {apis} launch, and under which conditions is each launch made?",
        "Trace {apis} down to the device: which kernels are launched, from which host functions, and when?",
        "List the kernel launches reached by {apis} and the conditions that guard them.",
    ],
    intros: [
        "Read off the code the build compiles, the kernel launches are:",
        "These are the launch sites the call path reaches:",
        "Following the host code to its launches gives:",
    ],
};

const LAUNCH_CONFIG: Template = Template {
    id: "facts-launch-config",
    category: "api-to-kernel",
    questions: [
        "When {apis} launches {subject}, what grid, block and dynamic LDS does the launch use?",
        "What launch configuration (grid, threads per block, dynamic shared memory) does {apis} give {subject}?",
        "How is {subject} configured at its launch for {apis}: grid dimensions, block dimensions and LDS bytes?",
    ],
    intros: [
        "The launch arguments as written at each site:",
        "Each launch of this kernel passes:",
        "At the launch sites the code sets:",
    ],
};

const DEVICE: Template = Template {
    id: "facts-device-code",
    category: "synchronization",
    questions: [
        "What shared memory, barriers, atomics or wavefront operations does {subject} use when {apis} runs it?",
        "Describe the LDS use and synchronization inside {subject}, as run by {apis}.",
        "Which on-chip resources and synchronization primitives does {subject} rely on (for {apis})?",
    ],
    intros: [
        "In the device code:",
        "The device function's body shows:",
        "Reading the kernel-side code:",
    ],
};

const ARG_CHECKS: Template = Template {
    id: "facts-arg-checks",
    category: "edge-cases",
    questions: [
        "Which argument checks does {apis} perform, and which status does each failing check return?",
        "For which invalid inputs does {apis} return an error status, and which one?",
        "What error statuses can {apis} return from its argument validation, and on which conditions?",
    ],
    intros: [
        "The checks and the statuses they return:",
        "Each condition below returns early with an error:",
        "The validation on the call path:",
    ],
};

const QUICK_RETURNS: Template = Template {
    id: "facts-quick-returns",
    category: "edge-cases",
    questions: [
        "When does {apis} return early without launching any kernel?",
        "Which quick-return paths does {apis} have, and what does each return?",
        "Under which conditions does {apis} skip the computation and return at once (including device-memory size queries)?",
    ],
    intros: [
        "The early returns on the call path:",
        "The code returns before any launch in these cases:",
        "Quick returns read off the code:",
    ],
};

const POINTER_MODE: Template = Template {
    id: "facts-pointer-mode",
    category: "semantics",
    questions: [
        "How does the handle's pointer mode (host or device scalars) change what {apis} does?",
        "What depends on rocblas_pointer_mode in {apis}?",
        "Where does {apis} branch on the pointer mode, and what differs between the branches?",
    ],
    intros: [
        "The pointer mode is tested at:",
        "Code that depends on the pointer mode:",
        "Branches on the pointer mode and what they guard:",
    ],
};

const CROSS_LIBRARY: Template = Template {
    id: "facts-cross-library",
    category: "api-to-kernel",
    questions: [
        "Which functions of another library does {apis} call, and from where?",
        "Where does {apis} leave its own library, and into which functions?",
        "Which rocBLAS internals does {apis} rely on, and at which call sites?",
    ],
    intros: [
        "The calls that leave the library:",
        "Cross-library call sites on the path:",
        "The call path crosses into the paired library at:",
    ],
};

const RUNTIME_CALLS: Template = Template {
    id: "facts-runtime-calls",
    category: "memory-access",
    questions: [
        "Which HIP runtime calls (copies, memsets, allocations, synchronization) does {apis} make on the host, and when?",
        "Besides kernel launches, how does {apis} move or set memory and wait on the stream from the host?",
        "Where does the host code of {apis} call hipMemcpy, hipMemset, hipMalloc or a synchronization, and under which conditions?",
    ],
    intros: [
        "The HIP runtime calls on the call path:",
        "Host-side runtime calls read off the code:",
        "The host code calls the HIP runtime at:",
    ],
};

const STORES: Template = Template {
    id: "facts-stores",
    category: "semantics",
    questions: [
        "What does {apis} write into the handle or through its pointer arguments, and when?",
        "Which state does {apis} set, and from which values?",
        "Where do the results of {apis}'s host code go: what does it store through its output pointers or in the handle?",
    ],
    intros: [
        "The stores on the call path:",
        "What the host code writes:",
        "Stores read off the code:",
    ],
};

/// A piece of an entry's slice: library, file, function, and the first line of a
/// callee's definition (0 for the functions the facts are in).
type PieceKey = (String, String, String, u32);

/// One rendered answer and the facts it cites, before APIs are grouped.
struct Unit<'a> {
    template: &'static Template,
    subject: String,
    body: String,
    facts: Vec<&'a Fact>,
}

fn at(f: &Fact) -> String {
    if f.end_line > f.line {
        format!("{}:{}-{}", f.file, f.line, f.end_line)
    } else {
        format!("{}:{}", f.file, f.line)
    }
}

fn when(f: &Fact) -> String {
    if f.conditions.is_empty() {
        String::new()
    } else {
        format!(", only when {}", f.conditions.join(" and "))
    }
}

/// Characters of bullets an answer lists before it says how many more there are
/// (answers stay well inside the validator's length bound).
const MAX_BODY_CHARS: usize = 4000;

/// Bullets, at most [`MAX_ITEMS`] and about [`MAX_BODY_CHARS`], saying how many more
/// there are; also how many lines were listed (the facts to cite).
fn bullets(lines: &[String]) -> (String, usize) {
    let mut out: Vec<String> = Vec::new();
    let mut len = 0;
    for l in lines.iter().take(MAX_ITEMS) {
        let b = format!("- {l}");
        if !out.is_empty() && len + b.len() > MAX_BODY_CHARS {
            break;
        }
        len += b.len() + 1;
        out.push(b);
    }
    let n = out.len();
    if lines.len() > n {
        out.push(format!(
            "- ... and {} more not listed here.",
            lines.len() - n
        ));
    }
    (out.join("\n"), n)
}

/// A unit from lines and the facts they state, one fact per line, in order.
fn unit<'a>(
    template: &'static Template,
    subject: &str,
    lines: &[String],
    mut facts: Vec<&'a Fact>,
) -> Unit<'a> {
    let (body, n) = bullets(lines);
    facts.truncate(n);
    Unit {
        template,
        subject: subject.to_string(),
        body,
        facts,
    }
}

fn kinds<'a>(af: &'a ApiFacts, want: &[FactKind]) -> Vec<&'a Fact> {
    af.facts.iter().filter(|f| want.contains(&f.kind)).collect()
}

fn units(af: &ApiFacts) -> Vec<Unit<'_>> {
    let mut out = Vec::new();
    let launches = kinds(af, &[FactKind::Launch]);
    if !launches.is_empty() {
        let lines: Vec<String> = launches
            .iter()
            .map(|f| {
                format!(
                    "{} launches {} ({}){}.",
                    f.function,
                    f.subject,
                    at(f),
                    when(f)
                )
            })
            .collect();
        out.push(unit(&KERNELS, "", &lines, launches.clone()));
    }
    let kernels: BTreeSet<&str> = launches.iter().map(|f| f.subject.as_str()).collect();
    for k in kernels {
        let sites: Vec<&Fact> = launches
            .iter()
            .filter(|f| f.subject == k)
            .copied()
            .collect();
        let mut lines: Vec<String> = sites
            .iter()
            .map(|f| {
                format!(
                    "{} ({}): grid {}, block {}, dynamic LDS {}{}.",
                    f.function,
                    at(f),
                    f.values.get("grid").cloned().unwrap_or_default(),
                    f.values.get("block").cloned().unwrap_or_default(),
                    f.values.get("lds").cloned().unwrap_or_default(),
                    when(f)
                )
            })
            .collect();
        let mut facts: Vec<&Fact> = sites.clone();
        if let Some(b) = af
            .facts
            .iter()
            .find(|f| f.kind == FactKind::LaunchBounds && f.subject == k)
        {
            // First, so a long list of sites never crowds it out.
            lines.insert(
                0,
                format!(
                    "The kernel is declared with __launch_bounds__({}){} ({}).",
                    b.values.get("bounds").cloned().unwrap_or_default(),
                    b.values
                        .get("value")
                        .map(|v| format!(", that is at most {v} threads per block"))
                        .unwrap_or_default(),
                    at(b)
                ),
            );
            facts.insert(0, b);
        }
        out.push(unit(&LAUNCH_CONFIG, k, &lines, facts));
    }
    let device = kinds(
        af,
        &[
            FactKind::SharedMemory,
            FactKind::Barrier,
            FactKind::Atomic,
            FactKind::Wavefront,
        ],
    );
    let functions: BTreeSet<&str> = device.iter().map(|f| f.function.as_str()).collect();
    for func in functions {
        let facts: Vec<&Fact> = device
            .iter()
            .filter(|f| f.function == func)
            .take(MAX_ITEMS)
            .copied()
            .collect();
        let lines: Vec<String> = facts
            .iter()
            .map(|f| {
                let v = |k: &str| f.values.get(k).cloned().unwrap_or_default();
                match f.kind {
                    FactKind::SharedMemory if f.subject == "dynamic" => format!(
                        "dynamically sized shared memory, sized by the launch ({}).",
                        at(f)
                    ),
                    FactKind::SharedMemory => format!(
                        "a __shared__ array {} of {} with size {}{} ({}){}.",
                        f.subject,
                        v("type"),
                        v("size"),
                        f.values
                            .get("elements")
                            .map(|e| format!(", {e} elements"))
                            .unwrap_or_default(),
                        at(f),
                        when(f)
                    ),
                    FactKind::Barrier => format!(
                        "barriers: {} called {} times, first at {} (lines {}).",
                        v("ops"),
                        v("count"),
                        at(f),
                        v("lines")
                    ),
                    FactKind::Atomic => format!(
                        "atomics: {} called {} times, first at {} (lines {}).",
                        v("ops"),
                        v("count"),
                        at(f),
                        v("lines")
                    ),
                    _ => format!(
                        "wavefront operations: {} called {} times, first at {} (lines {}).",
                        v("ops"),
                        v("count"),
                        at(f),
                        v("lines")
                    ),
                }
            })
            .collect();
        let mut tpl = &DEVICE;
        if !facts.iter().any(|f| f.kind == FactKind::Barrier) {
            tpl = &DEVICE_MEMORY;
        }
        out.push(unit(tpl, func, &lines, facts));
    }
    let status_lines = |fs: &[&Fact]| -> Vec<String> {
        fs.iter()
            .map(|f| {
                let v = |k: &str| f.values.get(k).cloned().unwrap_or_default();
                if f.kind == FactKind::WorkspaceQuery {
                    format!(
                        "{} answers a device-memory size query by returning {} ({}){}.",
                        f.function,
                        v("returns"),
                        at(f),
                        when(f)
                    )
                } else {
                    format!(
                        "{} returns {} if {} ({}){}.",
                        f.function,
                        v("status"),
                        v("condition"),
                        at(f),
                        when(f)
                    )
                }
            })
            .collect()
    };
    for (tpl, want) in [
        (&ARG_CHECKS, &[FactKind::ArgCheck][..]),
        (
            &QUICK_RETURNS,
            &[FactKind::QuickReturn, FactKind::WorkspaceQuery][..],
        ),
    ] {
        let fs = kinds(af, want);
        if !fs.is_empty() {
            out.push(unit(tpl, "", &status_lines(&fs), fs));
        }
    }
    let pm: Vec<&Fact> = af
        .facts
        .iter()
        .filter(|f| {
            f.kind == FactKind::PointerMode
                || f.conditions.iter().any(|c| c.contains("pointer_mode"))
        })
        .collect();
    if !pm.is_empty() {
        let lines: Vec<String> = pm
            .iter()
            .map(|f| match f.kind {
                FactKind::PointerMode => format!(
                    "{} tests {} ({}){}.",
                    f.function,
                    f.values.get("condition").cloned().unwrap_or_default(),
                    at(f),
                    when(f)
                ),
                FactKind::Launch => format!(
                    "{} launches {} ({}){}.",
                    f.function,
                    f.subject,
                    at(f),
                    when(f)
                ),
                _ => status_lines(&[*f]).remove(0),
            })
            .collect();
        out.push(unit(&POINTER_MODE, "", &lines, pm));
    }
    let cross = kinds(af, &[FactKind::CrossLibrary]);
    if !cross.is_empty() {
        let lines: Vec<String> = cross
            .iter()
            .map(|f| {
                let v = |k: &str| f.values.get(k).cloned().unwrap_or_default();
                format!(
                    "{} calls {} of {}, defined at {}:{} ({}){}.",
                    f.function,
                    f.subject,
                    v("callee_lib"),
                    v("callee_file"),
                    v("callee_lines"),
                    at(f),
                    when(f)
                )
            })
            .collect();
        out.push(unit(&CROSS_LIBRARY, "", &lines, cross));
    }
    let runtime = kinds(af, &[FactKind::RuntimeCall]);
    if !runtime.is_empty() {
        let lines: Vec<String> = runtime
            .iter()
            .map(|f| {
                let direction = f
                    .values
                    .get("direction")
                    .map(|d| format!(" with {d}"))
                    .unwrap_or_default();
                let times = f
                    .values
                    .get("count")
                    .map(|n| format!(" {n} times"))
                    .unwrap_or_default();
                format!(
                    "{} calls {}{direction}{times} ({}){}.",
                    f.function,
                    f.subject,
                    at(f),
                    when(f)
                )
            })
            .collect();
        out.push(unit(&RUNTIME_CALLS, "", &lines, runtime));
    }
    let stores = kinds(af, &[FactKind::Store]);
    if !stores.is_empty() {
        let lines: Vec<String> = stores
            .iter()
            .map(|f| {
                let v = |k: &str| f.values.get(k).cloned().unwrap_or_default();
                format!(
                    "{} stores {} in {} ({}){}.",
                    f.function,
                    v("value"),
                    v("target"),
                    at(f),
                    when(f)
                )
            })
            .collect();
        out.push(unit(&STORES, "", &lines, stores));
    }
    out
}

const DEVICE_MEMORY: Template = Template {
    id: "facts-device-memory",
    category: "memory-access",
    questions: [
        "Does {subject} use LDS, atomics or wavefront operations when {apis} runs it, and where?",
        "What on-chip memory and cross-lane operations does {subject} use (for {apis})?",
        "Which shared-memory arrays, atomics or wavefront intrinsics appear in {subject}, run by {apis}?",
    ],
    intros: [
        "In the device code:",
        "The function's body shows:",
        "Reading the device-side code:",
    ],
};

fn pick(key: &str, n: usize) -> usize {
    let h = Sha256::digest(key.as_bytes());
    (h[0] as usize) % n
}

/// How a group of APIs is named in a question.
fn apis_label(apis: &[String], family: &str) -> String {
    match apis.len() {
        1 => apis[0].clone(),
        2 => format!("{} and {}", apis[0], apis[1]),
        n => format!(
            "{} ({} variants of the {family} family, e.g. {})",
            apis[0],
            n,
            apis[1..3.min(n)].join(", ")
        ),
    }
}

fn role_of(kind: FactKind) -> PieceRole {
    match kind {
        FactKind::Launch => PieceRole::Launcher,
        FactKind::LaunchBounds
        | FactKind::SharedMemory
        | FactKind::Barrier
        | FactKind::Atomic
        | FactKind::Wavefront => PieceRole::Kernel,
        _ => PieceRole::Host,
    }
}

/// Renders the fact entries of a library from the facts of its APIs (in the order
/// given: an entry's `api` is the first of its group). `difficulty` follows the files
/// and functions cited.
pub fn render(
    all: &[&ApiFacts],
    trees: &Trees,
    source: &SourceRef,
    tool: &str,
) -> Result<Vec<Entry>, SliceError> {
    // Group APIs by (template, subject, answer body): same body, same entry.
    struct Group<'a> {
        apis: Vec<String>,
        family: String,
        variants: Vec<Vec<String>>,
        unit: Unit<'a>,
        lib: String,
        version: String,
    }
    let mut groups: BTreeMap<(String, String, String), Group> = BTreeMap::new();
    let mut order: Vec<(String, String, String)> = Vec::new();
    for af in all {
        for u in units(af) {
            // Within a family: a shard holds whole families, so its entries are the
            // same as the unsharded run's.
            let key = (
                format!("{}:{}", af.family, u.template.id),
                u.subject.clone(),
                u.body.clone(),
            );
            match groups.get_mut(&key) {
                Some(g) => {
                    g.apis.push(af.api.clone());
                    g.variants.push(af.variants.clone());
                }
                None => {
                    order.push(key.clone());
                    groups.insert(
                        key,
                        Group {
                            apis: vec![af.api.clone()],
                            family: af.family.clone(),
                            variants: vec![af.variants.clone()],
                            unit: u,
                            lib: af.lib.clone(),
                            version: af.version.clone(),
                        },
                    );
                }
            }
        }
    }
    let mut out = Vec::new();
    for key in order {
        let g = &groups[&key];
        let u = &g.unit;
        let t = u.template;
        let k = pick(&u.body, 3);
        let question = t.questions[k]
            .replace("{apis}", &apis_label(&g.apis, &g.family))
            .replace("{subject}", &u.subject);
        let answer = format!("{}\n{}", t.intros[pick(&question, 3)], u.body);
        let mut citations = Vec::new();
        // Keyed by library, file, function and, for a callee in another library, the
        // first line of its definition: overloads of one name in one file (rocBLAS's
        // `std::real` for each of its types) are pieces of their own.
        let mut pieces: BTreeMap<PieceKey, (u32, u32, PieceRole)> = BTreeMap::new();
        for f in &u.facts {
            let lines = trees.lines(&f.lib, &f.file)?;
            citations.push(Citation {
                lib: f.lib.clone(),
                file: f.file.clone(),
                start: f.line,
                end: f.end_line,
                sha256: lines_hash(&lines, f.line, f.end_line),
            });
            let (s, e) = f.function_lines;
            let p = pieces
                .entry((f.lib.clone(), f.file.clone(), f.function.clone(), 0))
                .or_insert((s.min(f.line), e.max(f.end_line), role_of(f.kind)));
            p.0 = p.0.min(f.line);
            p.1 = p.1.max(f.end_line);
            // A call into another library shows and cites the callee's definition too.
            if let Some((s, e)) = f
                .values
                .get("callee_lines")
                .and_then(|r| r.split_once('-'))
                .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
            {
                let (lib, file) = (&f.values["callee_lib"], &f.values["callee_file"]);
                let lines = trees.lines(lib, file)?;
                citations.push(Citation {
                    lib: lib.clone(),
                    file: file.clone(),
                    start: s,
                    end: e,
                    sha256: lines_hash(&lines, s, e),
                });
                pieces
                    .entry((lib.clone(), file.clone(), f.subject.clone(), s))
                    .or_insert((s, e, PieceRole::Host));
            }
        }
        citations.sort_by(|a, b| (&a.file, a.start, a.end).cmp(&(&b.file, b.start, b.end)));
        citations.dedup();
        let mut slice = Vec::new();
        for ((lib, file, name, _), (s, e, role)) in &pieces {
            let lines = trees.lines(lib, file)?;
            slice.push(PieceRef {
                role: *role,
                name: name.clone(),
                lib: lib.clone(),
                file: file.clone(),
                start: *s,
                end: *e,
                sha256: lines_hash(&lines, *s, *e),
            });
        }
        let files: BTreeSet<&str> = slice.iter().map(|p| p.file.as_str()).collect();
        let difficulty = match (slice.len(), files.len()) {
            (1, _) => "L1",
            (_, 1) => "L2",
            _ => "L3",
        };
        let variant = if g.variants.iter().all(|v| *v == g.variants[0]) {
            g.variants[0].join("_")
        } else {
            String::new()
        };
        let mut h = Sha256::new();
        for part in [
            g.lib.as_str(),
            g.version.as_str(),
            t.id,
            &u.subject,
            &g.apis.join(","),
            &u.body,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let id = format!("{}-{}", g.lib, &format!("{:x}", h.finalize())[..16]);
        let call_path: Vec<String> = {
            let mut seen = BTreeSet::new();
            u.facts
                .iter()
                .map(|f| f.function.clone())
                .filter(|n| seen.insert(n.clone()))
                .collect()
        };
        out.push(Entry {
            schema_version: ENTRY_SCHEMA_VERSION,
            id,
            lib: g.lib.clone(),
            version: g.version.clone(),
            source: source.clone(),
            family: g.family.clone(),
            api: g.apis[0].clone(),
            apis: g.apis.clone(),
            variant,
            call_path,
            category: t.category.into(),
            template_id: t.id.into(),
            template_version: 1,
            difficulty: difficulty.into(),
            prompt_sha256: format!("{:x}", Sha256::digest(question.as_bytes())),
            question,
            answer,
            code: None,
            citations,
            slice_id: format!("{}:{}:facts:{}", g.lib, g.version, g.family),
            slice,
            model: String::new(),
            params: serde_json::json!({}),
            usage: TokenUsage::default(),
            validation: Vec::new(),
            generator: "facts".into(),
            tool: tool.into(),
            grouped_request: None,
            mutation: None,
        });
    }
    Ok(out)
}
