//! Specific values read off a slice's code (the block shape at the launch, the
//! condition that selects the target, a size threshold, the first barrier), so a
//! question can name what only this API's code contains.

use std::sync::OnceLock;

use regex::Regex;

use super::Trees;
use crate::model::{InterfaceGraph, PieceRole, SliceFocus, SlicePiece};

struct Patterns {
    dim3: Regex,
    cond: Regex,
    threshold: Regex,
    bounds: Regex,
    barrier: Regex,
    lds: Regex,
    atomic: Regex,
    wave: Regex,
    grid_limit: Regex,
    info: Regex,
    arch: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let r = |p: &str| Regex::new(p).expect("static regex");
        Patterns {
            dim3: r(r"\bdim3\s+(\w+)\s*[\(\{]([^;]*)[\)\}]\s*;"),
            cond: r(r"\b(?:else\s+)?if\s*\((.+)\)\s*(?:\{|return\b|$)"),
            threshold: r(r"(?:^|[^.\w>])([A-Za-z_]\w*)\s*(?:<=|>=|<|>)\s*\d{2,}\b"),
            bounds: r(r"(?:ROCBLAS_KERNEL|__launch_bounds__)\s*\(\s*([^()]*(?:\([^()]*\))?[^()]*)\)"),
            barrier: r(r"\b(__syncthreads|__threadfence\w*|__builtin_amdgcn_s_barrier)\b"),
            lds: r(r"__shared__\s+([^;]+);"),
            atomic: r(r"\b(atomic[A-Z]\w*|__hip_atomic\w*|rocblas_atomic\w*)\s*\("),
            wave: r(r"\b(__shfl\w*|__ballot\w*|__builtin_amdgcn_\w+|rocblas_wavefront_reduce|wavefront_reduce)\b"),
            grid_limit: r(r"\b(c_YZ_grid_launch_limit|c_i64_grid_\w+|DEVICE_GRID_YZ_16BIT|getBatchGridDim)\b"),
            info: r(r"\binfo\s*\[[^\]]*\]\s*=[^=]|\*info\s*=[^=]|\binfoA?\s*\[[^\]]*\]\s*=[^=]"),
            arch: r(r"\b(is_arch_10_or_11_or_12|getArchMajor|getArch|gcnArchName|is_gfx\w+)\b"),
        }
    })
}

fn clip(s: &str, n: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= n {
        s
    } else {
        format!("{}...", s.chars().take(n).collect::<String>())
    }
}

/// Fills `focus.values` from the shown pieces: the target's own lines for device
/// values, its launcher's lines before the launch for the shape and condition.
pub fn read(
    focus: &mut SliceFocus,
    pieces: &[SlicePiece],
    trees: &Trees,
    g: &InterfaceGraph,
    target: Option<usize>,
    runs: Option<&crate::model::WhatRuns>,
) {
    let p = patterns();
    // A size or architecture test inside a branch the API never takes is no choice of
    // its own: no question is built on it.
    let dead = |q: &SlicePiece, l: u32| runs.is_some_and(|d| d.dead_line(&q.lib, &q.file, l));
    let Some(t) = target else {
        threshold(focus, pieces, trees, &dead);
        return;
    };
    let n = &g.nodes[t];
    if let Ok(lines) = trees.lines(&n.lib, &n.file) {
        let body = |l: u32| lines.get(l as usize - 1).map(String::as_str).unwrap_or("");
        let head: String = (n.start_line..=(n.start_line + 4).min(n.end_line))
            .map(body)
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(c) = p.bounds.captures(&head) {
            focus.values.insert("bounds".into(), clip(&c[1], 40));
        }
        for l in n.start_line..=n.end_line {
            let text = body(l);
            if text.trim_start().starts_with("//") {
                continue;
            }
            if !focus.values.contains_key("barrier") && p.barrier.is_match(text) {
                focus
                    .values
                    .insert("barrier".into(), format!("{}:{l}", n.file));
            }
            if !focus.values.contains_key("lds") {
                if let Some(c) = p.lds.captures(text) {
                    focus.values.insert("lds".into(), clip(&c[1], 60));
                }
            }
            if !focus.values.contains_key("atomic") {
                if let Some(c) = p.atomic.captures(text) {
                    focus.values.insert("atomic".into(), c[1].to_string());
                }
            }
            if !focus.values.contains_key("wave") {
                if let Some(c) = p.wave.captures(text) {
                    focus.values.insert("wave".into(), c[1].to_string());
                }
            }
        }
    }
    // The launch: the block shapes declared before it and the condition guarding it.
    if let Some((file, line)) = focus
        .values
        .get("launch_site")
        .and_then(|s| s.rsplit_once(':'))
        .and_then(|(f, l)| Some((f.to_string(), l.parse::<u32>().ok()?)))
    {
        if let Some(lp) = pieces.iter().find(|q| {
            q.file == file && q.start <= line && line <= q.end && q.name == focus.launcher
        }) {
            if let Ok(lines) = trees.lines(&lp.lib, &lp.file) {
                let body = |l: u32| lines.get(l as usize - 1).map(String::as_str).unwrap_or("");
                let mut dims = Vec::new();
                for l in (lp.start..line).rev() {
                    if let Some(c) = p.dim3.captures(body(l)) {
                        dims.push(format!("{}({})", &c[1], clip(&c[2], 50)));
                        if dims.len() == 2 {
                            break;
                        }
                    }
                }
                if !dims.is_empty() {
                    dims.reverse();
                    focus
                        .values
                        .insert("shape".into(), format!("dim3 {}", dims.join(", dim3 ")));
                }
                // A launcher that launches the target at several live sites reaches it
                // under each one's condition: no single condition is "the" one.
                // (Read off the launcher's text: the graph keeps one edge per callee.)
                let kernel = &g.nodes[t].name;
                let launch_word =
                    |l: &str| l.contains("LAUNCH") || l.contains("<<<") || l.contains("hipLaunch");
                // The kernel's name as a word, on the launch line or the one after an
                // open `ROCBLAS_LAUNCH_KERNEL(`.
                let launches = |l: u32| {
                    let text = body(l);
                    let named = text.match_indices(kernel.as_str()).any(|(i, _)| {
                        !text[i + kernel.len()..]
                            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                            && !text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                    });
                    let above = body(l.saturating_sub(1)).trim_end();
                    named && (launch_word(text) || (launch_word(above) && above.ends_with('(')))
                };
                let sites: Vec<u32> = g
                    .nodes
                    .iter()
                    .filter(|n| {
                        n.name == focus.launcher
                            && n.file == lp.file
                            && (n.start_line..=n.end_line).contains(&line)
                    })
                    .take(1)
                    .flat_map(|n| n.start_line..=n.end_line)
                    .filter(|&l| launches(l) && !dead(lp, l))
                    .collect();
                // The conditions the facts read for this launch, with what the API
                // fixes: exact (those every live site shares, where there are several),
                // and none when a launch is unconditional for it. Without them, the
                // nearest `if` above a launch made at one site.
                let launch_conditions =
                    runs.and_then(|d| d.launch_conditions.get(&(file.clone(), line)));
                match launch_conditions {
                    Some(conds) => {
                        let open: Vec<String> = conds
                            .iter()
                            .filter(|c| !c.starts_with("loop:") && !c.starts_with("switch ("))
                            .map(|c| {
                                if c.contains("||") && !c.starts_with("not (") {
                                    format!("({c})")
                                } else {
                                    c.clone()
                                }
                            })
                            .collect();
                        if !open.is_empty() {
                            // All of them hold where it launches: one conjunction.
                            focus
                                .values
                                .insert("condition".into(), clip(&open.join(" && "), 120));
                        }
                    }
                    None if sites.len() > 1 => {}
                    None => {
                        for l in (lp.start.max(line.saturating_sub(25))..line).rev() {
                            if let Some(c) = p.cond.captures(body(l).trim()) {
                                let cond = c[1].trim();
                                if cond.len() > 2 && !cond.contains("hipSuccess") {
                                    focus.values.insert("condition".into(), clip(cond, 90));
                                    break;
                                }
                            }
                        }
                    }
                }
                focus
                    .values
                    .insert("launch_line".into(), clip(body(line).trim(), 90));
                // How many launches a dispatch question is about: one, or every live
                // site, named by line.
                let launch_sites = match sites.len() {
                    0 | 1 => "the launch".to_string(),
                    n => format!(
                        "any of its {n} launches (lines {})",
                        sites
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                focus.values.insert("launch_sites".into(), launch_sites);
            }
        }
    }
    threshold(focus, pieces, trees, &dead);
    scan(focus, pieces, trees, g, &dead);
}

/// Sites anywhere in the shown code: grid limits, `info` writes, architecture tests,
/// the workspace-size function.
fn scan(
    focus: &mut SliceFocus,
    pieces: &[SlicePiece],
    trees: &Trees,
    g: &InterfaceGraph,
    dead: &dyn Fn(&SlicePiece, u32) -> bool,
) {
    let p = patterns();
    let batched = g.api.variants.iter().any(|v| v.contains("batched"));
    for q in pieces {
        let lower = q.name.to_ascii_lowercase();
        if !focus.values.contains_key("workspace_fn")
            && (lower.contains("getmemorysize") || lower.contains("workspace"))
        {
            focus.values.insert("workspace_fn".into(), q.name.clone());
        }
        let Ok(lines) = trees.lines(&q.lib, &q.file) else {
            continue;
        };
        for l in q.start..=q.end {
            let text = lines.get(l as usize - 1).map(String::as_str).unwrap_or("");
            if text.trim_start().starts_with("//") || text.trim_start().starts_with('*') {
                continue;
            }
            if dead(q, l) {
                continue;
            }
            for (key, re) in [("grid_limit", &p.grid_limit), ("arch", &p.arch)] {
                // A limit on the batch count is no limit for an API whose batch count
                // is 1 (rocblas_isamax_64's chunks of `batch_count_64`).
                if key == "grid_limit" && !batched && text.contains("batch") {
                    continue;
                }
                // The question asks about the launch code: a kernel's own batch loop
                // (`DEVICE_GRID_YZ_16BIT`) is what the answer explains, not the site.
                if key == "grid_limit"
                    && matches!(
                        q.role,
                        PieceRole::Kernel | PieceRole::DeviceHelper | PieceRole::Definition
                    )
                {
                    continue;
                }
                if !focus.values.contains_key(key) {
                    if let Some(c) = re.captures(text) {
                        // A definition (`int getArch()`, handle.hpp:234) asks nothing:
                        // the name follows its return type, not an operator.
                        let before = text[..c.get(1).map_or(0, |m| m.start())].trim_end();
                        if key == "arch"
                            && before.ends_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_')
                        {
                            continue;
                        }
                        // An answer read into a name decides something only where that
                        // name is tested on a line the API runs (dot's
                        // `is_arch_10_or_11_or_12` is tested only under `batch_count >=
                        // 256`, which sdot's batch count of 1 never reaches).
                        if key == "arch" && !tested_live(&lines, q.end, l, &|x| dead(q, x)) {
                            continue;
                        }
                        focus.values.insert(key.into(), c[1].to_string());
                        focus
                            .values
                            .insert(format!("{key}_site"), format!("{}:{l}", q.file));
                    }
                }
            }
            // `reset_info` sets a start value whatever the data: no result is reported
            // there.
            if !focus.values.contains_key("info_site")
                && !lower.starts_with("reset")
                && !lower.starts_with("init")
                && p.info.is_match(text)
            {
                focus
                    .values
                    .insert("info_site".into(), format!("{}:{l}", q.file));
            }
        }
    }
}

/// Whether what line `l` computes is tested on a live line up to `end`: the names `l`
/// assigns, and the names assigned from them in turn, followed to a line that reads
/// them without assigning. A query used where it is made (`if(handle->getArch() ==
/// 910)`) is its own test.
fn tested_live(lines: &[String], end: u32, l: u32, dead: &dyn Fn(u32) -> bool) -> bool {
    static LHS: OnceLock<Regex> = OnceLock::new();
    let lhs = LHS.get_or_init(|| Regex::new(r"(\w+)\s*=[^=]").expect("static regex"));
    let at = |k: u32| lines.get(k as usize - 1).map(String::as_str).unwrap_or("");
    // The name a line assigns: `int x = ...`, or `= ...` continuing `bool x` above.
    let assigned = |k: u32| -> Option<String> {
        let t = at(k).trim();
        if t.starts_with('=') && !t.starts_with("==") {
            return at(k - 1)
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .rfind(|w| !w.is_empty())
                .map(String::from);
        }
        lhs.captures(t)
            .filter(|c| c.get(0).is_some_and(|m| !t[..m.start()].contains('(')))
            .map(|c| c[1].to_string())
    };
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    };
    let mut names: Vec<String> = assigned(l).into_iter().collect();
    if names.is_empty() && !at(l + 1).trim().starts_with('=') {
        return true;
    }
    if names.is_empty() {
        names.extend(assigned(l + 1));
    }
    for k in l + 1..=end {
        let used = words(at(k)).iter().any(|w| names.contains(w));
        if !used {
            continue;
        }
        match assigned(k) {
            Some(n) if !names.contains(&n) => names.push(n),
            Some(_) => {}
            None if !dead(k) => return true,
            None => {}
        }
    }
    false
}

/// The condition of the `if` starting on line `l`, read on across up to five lines
/// until its parentheses close (`None` if they do not).
fn whole_condition(lines: &[String], l: u32) -> Option<String> {
    let mut text = String::new();
    for k in l..l + 5 {
        text.push_str(lines.get(k as usize - 1)?.trim());
        text.push(' ');
        let open = text.find("if")? + text[text.find("if")?..].find('(')?;
        if let Some(inside) = parenthesized(&text, open) {
            return Some(inside.to_string());
        }
    }
    None
}

/// What the parenthesis at byte `open` of `text` encloses, or `None` when it does not
/// close within `text`.
pub fn parenthesized(text: &str, open: usize) -> Option<&str> {
    let mut depth = 0i32;
    for (i, ch) in text[open..].char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[open + 1..open + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Does this line test a size threshold (`if(n <= 1024 && batch_count >= 256)`) or the
/// GPU architecture, choosing a path?
pub fn selects_path(text: &str) -> bool {
    let p = patterns();
    let t = text.trim();
    if t.starts_with("//") {
        return false;
    }
    p.cond
        .captures(t)
        .is_some_and(|c| tests_a_size(&c[1]) || p.arch.is_match(&c[1]))
}

/// Does a line test the GPU architecture in a condition (`if(is_gfx908 && ...`, or a
/// continuation line of one, `|| (is_gfx90a`)? Where a name is assigned the answer
/// (`bool is_gfx90a = handle->getArch() == 910`) nothing is chosen yet.
pub fn tests_arch(text: &str) -> bool {
    let t = text.trim_start();
    ["if", "else if", "&&", "||", "("]
        .iter()
        .any(|w| t.starts_with(w))
        && patterns().arch.is_match(t)
}

/// Does a condition a launch is under ask for one GPU architecture (`is_gfx90a && (m >
/// 2000)`)? Its other side (`not (is_gfx90a && ...)`, `!is_gfx942`) and an alternative
/// (`is_gfx90a || big`) leave every architecture a way in.
pub fn requires_arch(cond: &str) -> bool {
    let c = cond.trim_start();
    !c.starts_with("not ")
        && !c.starts_with('!')
        && !has_top_level_or(c)
        && patterns().arch.is_match(c)
}

/// Is `||` written outside every parenthesis of `c`?
fn has_top_level_or(c: &str) -> bool {
    let mut depth = 0i32;
    let b = c.as_bytes();
    (0..b.len()).any(|i| {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        depth == 0 && b[i] == b'|' && b.get(i + 1) == Some(&b'|')
    })
}

/// Does a line limit a launch's grid (`handle->getBatchGridDim((int)batch_count)`,
/// `c_YZ_grid_launch_limit`)?
pub fn limits_grid(text: &str) -> bool {
    let t = text.trim_start();
    !t.starts_with("//") && patterns().grid_limit.is_match(t)
}

/// The names holding an architecture answer that a line reads (`is_gfx908`).
pub fn arch_names(text: &str) -> Vec<String> {
    patterns()
        .arch
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .filter(|n| n.starts_with("is_"))
        .collect()
}

/// Does a condition compare a size with a number of two digits or more
/// (`n <= 1024 && batch_count >= 256`)? A property of the device or of a struct
/// (`deviceProperties.warpSize >= 64`, rocauxiliary_larfg.hpp:274, a workaround by its
/// TODO) is no size threshold of the call, nor is the wavefront width.
fn tests_a_size(cond: &str) -> bool {
    patterns()
        .threshold
        .captures_iter(cond)
        .any(|c| !matches!(&c[1], "warpSize" | "WARP_SIZE" | "wavefront_size"))
}

/// The first size threshold (`n <= 1024 && batch_count >= 256`) in the host chain.
fn threshold(
    focus: &mut SliceFocus,
    pieces: &[SlicePiece],
    trees: &Trees,
    dead: &dyn Fn(&SlicePiece, u32) -> bool,
) {
    for q in pieces.iter().filter(|q| focus.chain.contains(&q.name)) {
        let Ok(lines) = trees.lines(&q.lib, &q.file) else {
            continue;
        };
        if let Some((l, cond)) = threshold_line(&lines, q.start, q.end, &|l| dead(q, l)) {
            focus
                .values
                .insert("threshold".into(), clip(cond.trim(), 90));
            focus
                .values
                .insert("threshold_site".into(), format!("{}:{l}", q.file));
            return;
        }
    }
}

/// The first line of `start..=end` that tests a size threshold, and its whole
/// condition; lines `dead` says the API never runs are skipped.
pub fn threshold_line(
    lines: &[String],
    start: u32,
    end: u32,
    dead: &dyn Fn(u32) -> bool,
) -> Option<(u32, String)> {
    let p = patterns();
    for l in start..=end {
        let text = lines.get(l as usize - 1).map(String::as_str).unwrap_or("");
        if text.trim_start().starts_with("//") || dead(l) {
            continue;
        }
        if let Some(c) = p.cond.captures(text.trim()) {
            if tests_a_size(&c[1]) {
                let cond = whole_condition(lines, l).unwrap_or_else(|| c[1].to_string());
                return Some((l, cond));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_requires_an_architecture_only_on_its_own_side_of_the_test() {
        assert!(requires_arch("is_gfx90a && (m > 2000) && (m == n)"));
        assert!(!requires_arch("not (is_gfx90a && (m > 2000) && (m == n))"));
        assert!(!requires_arch("!is_gfx942"));
        assert!(!requires_arch("is_gfx90a || n > 1024"));
        assert!(!requires_arch("n > 1024"));
        assert!(requires_arch(
            "is_gfx90a && (m > 2000) && ((m % 64 == 0 && is_double) || (m % 128 == 0))"
        ));
    }

    #[test]
    fn conditions_are_read_across_lines() {
        let lines: Vec<String> = [
            "    if(is_gfx90a && (m > 2000) && (m == n)",
            "       && ((m % 64 == 0 && is_double) || (m % 128 == 0)))",
            "    {",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        assert_eq!(
            whole_condition(&lines, 1).unwrap(),
            "is_gfx90a && (m > 2000) && (m == n) && ((m % 64 == 0 && is_double) || (m % 128 == 0))"
        );
        assert!(selects_path(&lines[0]));
        assert!(!selects_path("    // if(n <= 1024)"));
    }

    #[test]
    fn patterns_read_real_shapes() {
        let p = patterns();
        let c = p.dim3.captures("    dim3 threads(NB, 1, 1);").unwrap();
        assert_eq!((&c[1], &c[2]), ("threads", "NB, 1, 1"));
        let c = p
            .cond
            .captures("if(n <= 1024 && batch_count >= 256)")
            .unwrap();
        assert!(tests_a_size(&c[1]));
        assert!(tests_a_size("is_gfx90a && (m > 2000) && (m == n)"));
        // The wavefront width and a struct's member are no sizes of the call.
        assert!(!tests_a_size("deviceProperties.warpSize >= 64"));
        assert!(!tests_a_size("warpSize >= 64"));
        assert!(!tests_a_size("handle->wavefront >= 64"));
        let c = p
            .bounds
            .captures("ROCBLAS_KERNEL(NB) rocblas_scal_kernel(")
            .unwrap();
        assert_eq!(&c[1], "NB");
        assert_eq!(clip("a   b\n c", 10), "a b c");
    }
}
