//! Planted bugs for find-the-bug tasks: one line of a real kernel changed so that the
//! kernel is wrong in a way the code itself shows.
//!
//! Only changes that are bugs whatever the inputs are made (a bound guard one off, an
//! accumulation that overwrites, a barrier turned into a fence, one vector's increment
//! used for the other): a change a reader could argue is harmless would make an answer
//! uncheckable. The mutation is chosen by a hash of the slice, so reruns plant the same
//! bug, and it is recorded whole ([`Mutation`]) so that the answer can be checked
//! against it and the prompt rebuilt from the tree.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use sha2::{Digest, Sha256};

use crate::index::device::barrier_orders;
use crate::model::{Mutation, PieceRole, Slice, SlicePiece};

/// One numbered code line of a piece as the prompt shows it.
struct ShownLine<'a> {
    number: u32,
    text: &'a str,
}

/// The numbered lines of a piece's text (`   12| code`), skipping headers and notes.
fn shown_lines(p: &SlicePiece) -> Vec<ShownLine<'_>> {
    p.text
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.split_once("| ")?;
            let number = n.trim().parse().ok()?;
            Some(ShownLine { number, text: rest })
        })
        .collect()
}

/// The line as `numbered` in the slice stage prints it.
fn numbered_line(number: u32, text: &str) -> String {
    format!("{number:>5}| {text}\n")
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("static regex"))
}

/// Names whose value follows the thread's position: the built-in indices and every
/// variable assigned from them (or declared as a loop counter).
fn thread_names(lines: &[ShownLine]) -> BTreeSet<String> {
    static ASSIGN: OnceLock<Regex> = OnceLock::new();
    static LOOP: OnceLock<Regex> = OnceLock::new();
    let assign = re(&ASSIGN, r"\b([A-Za-z_]\w*)\s*=[^=][^;]*");
    let loop_var = re(&LOOP, r"\bfor\s*\(\s*(?:[\w:]+\s+)*([A-Za-z_]\w*)\s*=");
    let mut names: BTreeSet<String> = [
        "threadIdx",
        "blockIdx",
        "hipThreadIdx_x",
        "hipThreadIdx_y",
        "hipBlockIdx_x",
        "hipBlockIdx_y",
        "hipBlockIdx_z",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for l in lines {
        if let Some(c) = loop_var.captures(l.text) {
            names.insert(c[1].to_string());
        }
    }
    // Twice: `tx = threadIdx.x; tid = bx * DIM + tx;` needs two rounds.
    for _ in 0..2 {
        for l in lines {
            for c in assign.captures_iter(code_part(l.text)) {
                let rhs = &c[0][c[1].len()..];
                if words(rhs).any(|w| names.contains(w)) {
                    names.insert(c[1].to_string());
                }
            }
        }
    }
    names
}

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// The line without a trailing `//` comment.
fn code_part(line: &str) -> &str {
    line.split_once("//").map_or(line, |x| x.0)
}

/// The smallest expression around `at..end` of `line`: out to the nearest `(`, `)`,
/// `[`, `]`, `,`, `;`, `{`, `}`, `?`, `&&` or `||` on each side.
fn expression_around(line: &str, at: usize, end: usize) -> (usize, usize) {
    let b = line.as_bytes();
    let scope = |i: usize| (i + 1 < b.len() && b[i + 1] == b':') || (i > 0 && b[i - 1] == b':');
    let stop = |i: usize| {
        matches!(
            b[i],
            b'(' | b')' | b'[' | b']' | b',' | b';' | b'{' | b'}' | b'?'
        ) || (b[i] == b':' && !scope(i))
            || (i + 1 < b.len() && matches!(&b[i..i + 2], b"&&" | b"||"))
            || (i > 0 && matches!(&b[i - 1..i + 1], b"&&" | b"||"))
    };
    let mut s = at;
    while s > 0 && !stop(s - 1) {
        s -= 1;
    }
    let mut e = end;
    while e < b.len() && !stop(e) {
        e += 1;
    }
    while s < e && b[s].is_ascii_whitespace() {
        s += 1;
    }
    while e > s && b[e - 1].is_ascii_whitespace() {
        e -= 1;
    }
    (s, e)
}

/// A candidate change of one line.
struct Site {
    kind: &'static str,
    /// Boilerplate that most kernels repeat (the batch loop over `batch_count`, a
    /// fixed unroll count): planted only where nothing else is, or the tasks repeat.
    common: bool,
    line: u32,
    original: String,
    mutated: String,
    fix: String,
    shown: String,
    effect: String,
}

fn site(
    kind: &'static str,
    l: &ShownLine,
    range: (usize, usize),
    replacement: &str,
    effect: impl Fn(&str, &str) -> String,
) -> Site {
    let mutated = format!("{}{replacement}{}", &l.text[..range.0], &l.text[range.1..]);
    let (s, e) = expression_around(l.text, range.0, range.1);
    let fix = l.text[s..e].to_string();
    let shown = mutated[s..e + replacement.len() - (range.1 - range.0)].to_string();
    Site {
        kind,
        common: false,
        line: l.number,
        original: l.text.to_string(),
        effect: effect(&fix, &shown),
        mutated,
        fix,
        shown,
    }
}

/// `i < n` -> `i <= n` and `i >= n` -> `i > n`, where `i` follows the thread. The
/// explanation names the bound as written (`n - 1`, not `n`) and says whether a
/// thread passes a guard or a loop runs a step more; a loop whose body tests the same
/// bound again is left alone (the extra step does nothing).
fn bound_checks(lines: &[ShownLine], thread: &BTreeSet<String>, out: &mut Vec<Site>) {
    static CMP: OnceLock<Regex> = OnceLock::new();
    let cmp = re(
        &CMP,
        r"\b([A-Za-z_]\w*)(\.[xyz])?\s*(<|>=)\s*([A-Za-z_][\w.]*|\d+)",
    );
    for (k, l) in lines.iter().enumerate() {
        let code = code_part(l.text);
        for c in cmp.captures_iter(code) {
            let op = c.get(3).expect("group");
            let b = code.as_bytes();
            // Not `<<`, `<=`, `>>=`, nor a template argument list.
            if b.get(op.end())
                .is_some_and(|x| matches!(x, b'<' | b'=' | b'>'))
                || (op.start() > 0 && matches!(b[op.start() - 1], b'<' | b'>' | b'-'))
                || !thread.contains(&c[1])
                || thread.contains(&c[4])
                || c[4].chars().next().is_some_and(|x| x.is_ascii_digit()) && &c[4] == "0"
            {
                continue;
            }
            let (s, e) = expression_around(code, op.start(), op.end());
            // The whole left operand (`tx + i`, not `i`): it is what reaches the bound.
            let operand = code[s.min(op.start())..op.start()].trim();
            let simple = operand.chars().all(|x| {
                x.is_ascii_alphanumeric() || matches!(x, '_' | '.' | ' ' | '+' | '-' | '*')
            });
            let left = if simple && !operand.is_empty() {
                operand.to_string()
            } else {
                format!("{}{}", &c[1], c.get(2).map_or("", |m| m.as_str()))
            };
            // The bound as written: everything right of the operator in the expression.
            let right = code[op.end()..e.max(op.end())].trim().to_string();
            // A `for` whose step leaves the compared name alone only tests it
            // (dgmm's `ty < n && tx < m`, rocblas_dgmm_kernels.cpp:54): a guard.
            let in_loop = loop_condition(code, s) && {
                let header: Vec<&str> = lines[k..]
                    .iter()
                    .take(3)
                    .map(|x| code_part(x.text))
                    .collect();
                stepped(&header.join(" "), &c[1])
            };
            if in_loop
                && (tests_again(lines, k, &code[s..e]) || leaves_at_bound(lines, k, &left, &right))
            {
                continue;
            }
            // What the extra thread or step writes: an element whose subscript uses
            // `left` in what the condition covers (past an early return, anything the
            // thread writes in the rest of the kernel). A read one past the end may
            // land in valid memory and go unused (`y[m]` in latrd is another column
            // of W, and the row is never stored), so only a write is surely a bug.
            let rest = &code[e.min(code.len())..];
            let early_return =
                !in_loop && rest.trim_start().starts_with(')') && rest.contains("return");
            let covered = covered_text(lines, k, s, early_return);
            // The element written must follow the whole operand (`x[(tx + i) * incx]`
            // for `tx + i < n`); one indexed by a part of it alone (`sAoff[i / DIM_Y]`)
            // is not shown to be past an end.
            let Some((write, at)) = written_with(&covered, |w| {
                w == &c[1] || (early_return && thread.contains(w))
            })
            .filter(|(w, at)| {
                let sub = w.split_once('[').map_or("", |x| x.1);
                (early_return || words(&left).all(|x| words(sub).any(|y| y == x)))
                    && !(in_loop && empty_at_bound(&covered, *at, &left, &right))
            }) else {
                continue;
            };
            // A step that can leave before the write (rocauxiliary_stein.hpp:154-157
            // breaks out unless `iblock[j]` is the current block) writes only if it
            // gets that far.
            let may_leave = in_loop && {
                static EXIT: OnceLock<Regex> = OnceLock::new();
                re(&EXIT, r"\b(break|continue|return)\b")
                    .is_match(&covered[..at.min(covered.len())])
            };
            // The kernel writes element `right` itself (`Lp[n] = nnzL;`): the element
            // the extra step writes is a valid one, and what goes wrong is elsewhere.
            let array = write.split('[').next().unwrap_or_default();
            let own = format!("{array}[{right}]")
                .split_whitespace()
                .collect::<String>();
            if lines.iter().any(|x| {
                code_part(x.text)
                    .split_whitespace()
                    .collect::<String>()
                    .contains(&own)
            }) {
                continue;
            }
            // A store under a test of data (`if(ifail[k] == i + 1)`, roclapack_syevx_heevx.hpp:103)
            // happens on the extra step only if that element passes the test.
            let data_guard = {
                static GUARD: OnceLock<Regex> = OnceLock::new();
                re(&GUARD, r"\bif\s*\(([^;{}]*\[[^;{}]*)\)\s*$")
                    .captures(covered[..at.min(covered.len())].trim_end())
                    .map(|c| c[1].split_whitespace().collect::<Vec<_>>().join(" "))
            };
            let harm = if let Some(guard) = data_guard {
                format!(
                    "can write `{write}` with `{left}` = {right}, one past the last element the original test lets it reach, when that element passes the test `{guard}` before the store: memory past the end of the data the call owns, or another element's value"
                )
            } else if may_leave {
                format!(
                    "can write `{write}` with `{left}` = {right}, one past the last element the original test lets it reach: memory past the end of the data the call owns, or another element's value, unless the step leaves before it reaches that store"
                )
            } else {
                format!(
                    "writes `{write}` with `{left}` = {right}, one past the last element the original test lets it reach: memory past the end of the data the call owns, or another element's value"
                )
            };
            let what = match (op.as_str(), in_loop) {
                (_, true) => format!(
                    "a thread whose `{left}` reaches {right} runs the loop one step more and {harm}"
                ),
                ("<", false) => {
                    format!("the thread whose `{left}` equals {right} also passes and {harm}")
                }
                _ if early_return => format!(
                    "the thread whose `{left}` equals {right} is no longer stopped and {harm}"
                ),
                _ => format!(
                    "the thread whose `{left}` equals {right} is no longer sent to this branch and {harm}"
                ),
            };
            let replacement = if op.as_str() == "<" { "<=" } else { ">" };
            let mut s = site(
                "bound-check",
                l,
                (op.start(), op.end()),
                replacement,
                |fix, shown| format!("`{fix}` became `{shown}`: {what}."),
            );
            s.common = right == "batch_count" || right.chars().all(|x| x.is_ascii_digit());
            out.push(s);
        }
    }
}

/// The code a condition at byte `at` of line `k` covers: the body of the `if`, `for`
/// or `while` whose header holds it, else the rest of its statement; past an early
/// return (`if(tid >= n) return;`), the rest of the lines.
fn covered_text(lines: &[ShownLine], k: usize, at: usize, early_return: bool) -> String {
    let text: String = lines[k..]
        .iter()
        .map(|l| code_part(l.text))
        .collect::<Vec<_>>()
        .join("\n");
    let b = text.as_bytes();
    if early_return {
        return text[at..].to_string();
    }
    static HEAD: OnceLock<Regex> = OnceLock::new();
    let head = re(&HEAD, r"\b(if|for|while)\s*\(");
    let header = head
        .find_iter(&text[..at.min(text.len())])
        .last()
        .and_then(|m| Some((m.end() - 1, closing(b, m.end() - 1, b'(', b')')?)))
        .filter(|&(_, close)| close >= at);
    match header {
        Some((_, close)) => match statement_end(b, close + 1) {
            Some(end) => text[close + 1..=end].to_string(),
            None => text[close + 1..].to_string(),
        },
        None => {
            let end = text[at..].find(';').map_or(text.len(), |x| at + x);
            text[at..end].to_string()
        }
    }
}

/// The first write through a subscript (`A[i + j * lda] =`, `+=`, ...) in `code` whose
/// subscript has a word `uses` accepts, as written, and where it starts.
fn written_with(code: &str, uses: impl Fn(&str) -> bool) -> Option<(String, usize)> {
    static WRITE: OnceLock<Regex> = OnceLock::new();
    let write = re(
        &WRITE,
        r"\b([A-Za-z_]\w*)\s*\[([^\[\]]*)\]\s*(?:=[^=]|\+=|-=|\*=|/=)",
    );
    write
        .captures_iter(code)
        .find(|c| words(&c[2]).any(&uses))
        .map(|c| {
            (
                format!("{}[{}]", &c[1], c[2].trim()),
                c.get(0).map_or(0, |m| m.start()),
            )
        })
}

/// Whether the code at `at` of `body` sits in an inner loop that starts at `left` and
/// stops before `right` (`for(i = j; i < n; i++)`): the step in which `left` reaches
/// `right` runs it zero times (sytf2's rank-2 update, roclapack_sytf2.hpp:354).
fn empty_at_bound(body: &str, at: usize, left: &str, right: &str) -> bool {
    static INNER: OnceLock<Regex> = OnceLock::new();
    let inner = re(
        &INNER,
        r"\bfor\s*\(\s*(?:[\w:]+\s+)*([A-Za-z_]\w*)\s*=\s*([^;]+);\s*([A-Za-z_]\w*)\s*<\s*([^;=]+);",
    );
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    let b = body.as_bytes();
    inner.captures_iter(&body[..at.min(body.len())]).any(|c| {
        let whole = c.get(0).expect("match");
        let Some(open) = body[whole.start()..].find('(').map(|x| x + whole.start()) else {
            return false;
        };
        let inside = closing(b, open, b'(', b')')
            .and_then(|close| statement_end(b, close + 1))
            .is_some_and(|end| at <= end);
        inside && c[1] == c[3] && squash(&c[2]) == squash(left) && squash(&c[4]) == squash(right)
    })
}

/// Whether the expression starting at `at` is the condition of a `for` or `while`
/// header on this line.
fn loop_condition(code: &str, at: usize) -> bool {
    static HEAD: OnceLock<Regex> = OnceLock::new();
    let head = re(&HEAD, r"\b(for|while)\s*\(");
    head.find(code).is_some_and(|m| m.end() <= at)
}

/// Whether the loop headed in `code` changes `name` from step to step: a `while`, or
/// a `for` whose step clause names it (or whose header does not end on this line).
fn stepped(code: &str, name: &str) -> bool {
    static FOR: OnceLock<Regex> = OnceLock::new();
    let Some(head) = re(&FOR, r"\bfor\s*\(").find(code) else {
        return true;
    };
    let open = head.end() - 1;
    let b = code.as_bytes();
    let (mut depth, mut semis) = (0i32, Vec::new());
    for (k, &ch) in b.iter().enumerate().skip(open) {
        match ch {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    let step = semis.get(1).map_or("", |&s: &usize| &code[s + 1..k]);
                    return semis.len() < 2 || words(step).any(|w| w == name);
                }
            }
            b';' if depth == 1 => semis.push(k),
            _ => {}
        }
    }
    true
}

/// Whether the body of the loop headed on line `k` tests `cond` again (within the
/// next few lines), so the step the changed header adds does nothing.
fn tests_again(lines: &[ShownLine], k: usize, cond: &str) -> bool {
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    let want = squash(cond);
    lines[k + 1..]
        .iter()
        .take(8)
        .any(|x| squash(code_part(x.text)).contains(&want))
}

/// Whether the body of the loop headed on line `k` leaves the step first where
/// `left` plus thread offsets reaches `right` (`if(tx + j >= n) break;`,
/// rocblas_tpsv_kernels.cpp:91-93): the step a `j <= n` header adds leaves at once.
fn leaves_at_bound(lines: &[ShownLine], k: usize, left: &str, right: &str) -> bool {
    static GUARD: OnceLock<Regex> = OnceLock::new();
    let guard = re(
        &GUARD,
        r"^if\(([A-Za-z_][\w.]*(?:\+[A-Za-z_][\w.]*)*)>=([^()]+)\)(break|continue|return);?$",
    );
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    let (left, right) = (squash(left), squash(right));
    let body: Vec<String> = lines[k + 1..]
        .iter()
        .take(4)
        .map(|x| squash(code_part(x.text)))
        .filter(|t| !t.is_empty() && t != "{")
        .collect();
    // The guard with its `break` on one line or the next.
    let first = match body.first() {
        Some(t) if t.ends_with(')') => format!("{t}{}", body.get(1).map_or("", |x| x.as_str())),
        Some(t) => t.clone(),
        None => return false,
    };
    guard
        .captures(&first)
        .is_some_and(|c| c[2] == right && c[1].split('+').any(|w| w == left))
}

/// `sum += x[i] * y[i];` -> `sum = x[i] * y[i];`, outside loop headers and pointer
/// or index arithmetic.
fn accumulations(lines: &[ShownLine], thread: &BTreeSet<String>, out: &mut Vec<Site>) {
    static ACC: OnceLock<Regex> = OnceLock::new();
    static DECL: OnceLock<Regex> = OnceLock::new();
    // A value declared in the kernel (`T sum = 0;`, `V res{};`), not a pointer.
    let decl = re(
        &DECL,
        r"^\s*(?:const\s+)?[A-Za-z_][\w:<>, ]*?[\s>]([A-Za-z_]\w*)\s*(?:=|\{|;|\[)",
    );
    let values: BTreeSet<String> = lines
        .iter()
        .filter_map(|l| decl.captures(code_part(l.text)))
        .filter(|c| !c[0].contains('*') && !c[0].contains('&'))
        .map(|c| c[1].to_string())
        .collect();
    let acc = re(&ACC, r"^\s*([A-Za-z_]\w*)(\[[^\]]*\])?\s*(\+=)\s*([^;]+);");
    let pointerish = [
        "inc", "shift", "stride", "offset", "ptr", "idx", "ind", "ld",
    ];
    for (k, l) in lines.iter().enumerate() {
        let code = code_part(l.text);
        let Some(c) = acc.captures(code) else {
            continue;
        };
        let lhs = &c[1];
        let rhs = &c[4];
        // `norm2 += shift_left(norm2, 4)` is one step of a shuffle sum: with `=`, the
        // lane keeps another lane's value, not "only the last contribution".
        if code.contains("for")
            || words(rhs).any(|w| w == lhs)
            || !values.contains(lhs)
            || thread.contains(lhs)
            || lhs.len() == 1
            || pointerish.iter().any(|p| lhs.to_lowercase().contains(p))
            || !(rhs.contains('[') || rhs.contains('*') || rhs.contains('('))
        {
            continue;
        }
        let op = c.get(3).expect("group");
        let lhs_shown = format!("{lhs}{}", c.get(2).map_or("", |m| m.as_str()));
        let mut s = site("accumulate", l, (op.start(), op.end()), "=", |_, _| {
            String::new()
        });
        // The fix is the accumulation itself: `sum +=`.
        s.fix = format!("{lhs_shown} +=");
        s.shown = format!("{lhs_shown} =");
        // Inside a loop, what is lost is the thread's earlier steps: wrong only when the
        // loop gives a thread more than one (a band of kl + ku < 64 rows in gbmv gives
        // each lane one).
        let head_at = (k.saturating_sub(4)..k)
            .rev()
            .find(|&j| loop_condition(code_part(lines[j].text), code_part(lines[j].text).len()));
        let head = head_at.map(|j| code_part(lines[j].text));
        let in_loop = head.is_some();
        // What the value holds when the loop starts: the last assignment to it before
        // the loop. Only a zero there makes one step harmless (larfg's `norm2` enters
        // its loop holding the first wavefront's sum).
        // The last write counts, an update as much as an assignment: larfg's `norm2`
        // is set to 0, then `+=` the wavefront's shuffles before the loop
        // (rocauxiliary_larfg_specialized_kernels.hpp:77-91).
        let starts_at_zero = head_at.is_some_and(|j| {
            let set = Regex::new(&format!(
                r"\b{}\s*(=[^=]|\{{|[-+*/%|&^]=|<<=|>>=)",
                regex::escape(lhs)
            ))
            .ok();
            lines[..j]
                .iter()
                .rev()
                .map(|x| code_part(x.text))
                .find_map(|x| {
                    let m = set.as_ref()?.find(x)?;
                    Some(x[m.start() + lhs.len()..].to_string())
                })
                .is_some_and(|init| {
                    let init = init.trim_start();
                    !init.starts_with(|c: char| "-+*/%|&^<>".contains(c)) && zero_initializer(init)
                })
        });
        // An element the loop's counter picks (`areg_upper[k] +=` in a loop over `k`)
        // is a different element each step: each loses what it held before the loop,
        // not the earlier steps' terms.
        static COUNTER: OnceLock<Regex> = OnceLock::new();
        let counter = re(&COUNTER, r"\bfor\s*\(\s*(?:[\w:<>]+\s+)?([A-Za-z_]\w*)\s*=");
        let per_step_element = c.get(2).is_some_and(|sub| {
            head.and_then(|h| counter.captures(h))
                .is_some_and(|v| words(sub.as_str()).any(|w| w == &v[1]))
        });
        s.effect = if per_step_element {
            format!(
                "`{lhs_shown} +=` became `{lhs_shown} =`: each step of the loop writes another \
                 element `{lhs_shown}`, which is now overwritten instead of added to, so the value \
                 each element held before the loop is lost and the result is wrong wherever it \
                 was not zero."
            )
        } else if in_loop && starts_at_zero {
            format!(
                "`{lhs_shown} +=` became `{lhs_shown} =`: each step of the loop overwrites \
                 `{lhs_shown}` instead of adding to it, so whenever the loop gives a thread more \
                 than one step, only its last step's term survives and the result is wrong."
            )
        } else if in_loop {
            format!(
                "`{lhs_shown} +=` became `{lhs_shown} =`: each step of the loop overwrites \
                 `{lhs_shown}` instead of adding to it, so what it held before the loop and \
                 every earlier step's term are lost: the result is wrong whenever the loop \
                 gives a thread a step and `{lhs_shown}` was not zero before it, or more than \
                 one step."
            )
        } else {
            format!(
                "`{lhs_shown} +=` became `{lhs_shown} =`: `{lhs_shown}` is overwritten instead \
                 of added to, so what it held before this line is lost and the result is wrong \
                 whenever that was not zero."
            )
        };
        out.push(s);
    }
}

/// Whether what follows a name in an assignment or declaration (`= 0;`, `{};`,
/// `= T(0);`) sets it to zero.
fn zero_initializer(rest: &str) -> bool {
    let v = rest
        .trim()
        .trim_start_matches('=')
        .trim()
        .trim_end_matches(';')
        .trim();
    static ZERO: OnceLock<Regex> = OnceLock::new();
    re(
        &ZERO,
        r"^(?:\{\s*\}|\{\s*0\s*\}|0(?:\.0*)?f?|[A-Za-z_][\w:<>]*\s*\(\s*0(?:\.0*)?f?\s*\)|[A-Za-z_][\w:<>]*\s*\{\s*\})$",
    )
    .is_match(v)
}

/// `__syncthreads();` -> `__threadfence_block();`, only where the barrier orders a
/// write to shared memory before it and a read of what another thread wrote after it
/// (a subscript the writes did not use, or a shared scalar): a barrier that separates
/// no such pair (at a kernel's start or end, between a thread's own element and
/// itself) can be dropped without a bug.
fn barriers(lines: &[ShownLine], out: &mut Vec<Site>) {
    let code: Vec<&str> = lines.iter().map(|l| code_part(l.text)).collect();
    for (k, names) in barrier_orders(&code) {
        let l = &lines[k];
        // A barrier with a note beside it may be there for a reason other than the
        // data it guards (`// for windows instability`): not surely a bug to drop.
        let Some(at) = code[k]
            .find("__syncthreads()")
            .filter(|_| code[k].len() == l.text.len())
        else {
            continue;
        };
        let Some(name) = names.first() else {
            continue;
        };
        let mut s = site(
            "barrier",
            l,
            (at, at + "__syncthreads()".len()),
            "__threadfence_block()",
            |_, _| String::new(),
        );
        s.fix = "__syncthreads()".into();
        s.shown = "__threadfence_block()".into();
        s.effect = format!(
            "`__syncthreads()` became `__threadfence_block()`: a fence orders this thread's \
             own memory operations but does not wait for the other threads of the block, so \
             a thread goes on to read `{name}` in shared memory before the threads that write \
             it before the barrier have done so (a data race)."
        );
        out.push(s);
    }
}

/// `x[tid * incx]` -> `x[tid * incy]` (and the other way) in a kernel that takes both.
fn strides(lines: &[ShownLine], out: &mut Vec<Site>) {
    static INC: OnceLock<Regex> = OnceLock::new();
    let inc = re(&INC, r"\[[^\[\]]*\b(inc[xy])\b[^\[\]]*\]");
    let all: String = lines.iter().map(|l| code_part(l.text)).collect();
    let has = |w: &str| words(&all).any(|x| x == w);
    if !(has("incx") && has("incy")) {
        return;
    }
    for l in lines {
        let code = code_part(l.text);
        if code.contains("incx") && code.contains("incy") {
            continue;
        }
        let Some(c) = inc.captures(code) else {
            continue;
        };
        let m = c.get(1).expect("group");
        let (from, to, vector, other) = if m.as_str() == "incx" {
            ("incx", "incy", "x", "y")
        } else {
            ("incy", "incx", "y", "x")
        };
        let mut s = site("stride", l, (m.start(), m.end()), to, |_, _| String::new());
        // The whole subscript: `incx` alone is named all over the kernel.
        let inner = c.get(0).expect("match");
        s.fix = code[inner.start() + 1..inner.end() - 1].trim().to_string();
        s.shown = s.fix.replacen(from, to, 1);
        // Where the line sits under tests, the bug shows only where they hold.
        let tests = enclosing_tests(lines, l.number);
        let only = if tests.is_empty() {
            String::new()
        } else {
            format!(
                " on the path where {} (the only one that runs this line)",
                tests.join(" and ")
            )
        };
        s.effect = format!(
            "`[{}]` became `[{}]`: {vector} is indexed with {other}'s increment, so whenever \
             {from} != {to}{only} the kernel works on the wrong elements of {vector}; with the \
             offset for a negative increment taken from {from}, it also indexes outside {vector} \
             when |{to}| > |{from}| with the same sign, or when the two signs differ.",
            s.fix, s.shown
        );
        out.push(s);
    }
}

/// The tests the code around line `number` makes before it runs, outermost first: each
/// `if`'s condition, or `else of if(c)` for an `else` branch (rocblas_hbmv_kernels.cpp:146
/// runs only in the `else` of `if(alpha)`, so only for a zero alpha).
fn enclosing_tests(lines: &[ShownLine], number: u32) -> Vec<String> {
    let mut text = String::new();
    let mut at = None;
    for l in lines {
        if l.number == number {
            at = Some(text.len());
        }
        text.push_str(code_part(l.text));
        text.push('\n');
    }
    let Some(at) = at else {
        return Vec::new();
    };
    let b = text.as_bytes();
    // The `if (...)` header ending right before offset `end`, as (its `if` offset, test).
    let header = |end: usize| -> Option<(usize, String)> {
        let t = text[..end].trim_end();
        if !t.ends_with(')') {
            return None;
        }
        let close = t.len() - 1;
        let mut depth = 0i32;
        let open = (0..=close).rev().find(|&i| {
            depth += i32::from(b[i] == b')') - i32::from(b[i] == b'(');
            depth == 0
        })?;
        let kw = text[..open].trim_end();
        kw.ends_with("if")
            .then(|| {
                (
                    kw.len() - 2,
                    text[open + 1..close]
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            })
            .filter(|(k, _)| *k == 0 || !b[k - 1].is_ascii_alphanumeric() && b[k - 1] != b'_')
    };
    let mut out = Vec::new();
    // A braceless `if (c)` right before the line's statement.
    let line_start = text[..at].len();
    if let Some((_, c)) = header(line_start) {
        out.push(format!("`{c}`"));
    }
    let mut depth = 0i32;
    let mut i = at;
    while i > 0 {
        i -= 1;
        match b[i] {
            b'}' => depth += 1,
            b'{' if depth > 0 => depth -= 1,
            b'{' => {
                if let Some((_, c)) = header(i) {
                    out.push(format!("`{c}`"));
                } else if text[..i].trim_end().ends_with("else") {
                    // The `if` block the `else` follows: its `}` and its header.
                    let before = text[..i].trim_end();
                    let t = before[..before.len() - 4].trim_end();
                    if t.ends_with('}') {
                        let close = t.len() - 1;
                        let mut d = 0i32;
                        if let Some(open) = (0..=close).rev().find(|&k| {
                            d += i32::from(b[k] == b'}') - i32::from(b[k] == b'{');
                            d == 0
                        }) {
                            if let Some((_, c)) = header(open) {
                                out.push(format!("not `{c}`"));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out.reverse();
    out
}

/// Lines whose code may not be compiled for the API: inside `#if`/`#ifdef` blocks (an
/// architecture's or a build option's code, the gfx12 batch loop) and inside either
/// branch of an `if constexpr` (the one the API's types drop). A bug planted there may
/// never run.
fn conditional_lines(lines: &[ShownLine]) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut depth = 0usize;
    for l in lines {
        let t = l.text.trim_start();
        if t.starts_with("#if") {
            depth += 1;
        } else if t.starts_with("#endif") {
            depth = depth.saturating_sub(1);
            out.insert(l.number);
        }
        if depth > 0 {
            out.insert(l.number);
        }
    }
    // The code as one text, with each byte's line.
    let mut text = String::new();
    let mut line_at = Vec::new();
    for l in lines {
        let c = code_part(l.text);
        text.push_str(c);
        text.push('\n');
        line_at.extend(std::iter::repeat_n(l.number, c.len() + 1));
    }
    let mut from = 0;
    while let Some(k) = text[from..].find("if constexpr") {
        let start = from + k;
        from = start + "if constexpr".len();
        let end = chain_end(&text, from).unwrap_or(start);
        for &n in &line_at[start..=end.min(line_at.len() - 1)] {
            out.insert(n);
        }
    }
    out
}

/// The end of an `if (...) stmt [else if (...) stmt]* [else stmt]` chain whose
/// condition's `(` is looked for from `i`.
fn chain_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let open = text[i..].find('(')? + i;
    let close = closing(b, open, b'(', b')')?;
    let stmt_end = statement_end(b, close + 1)?;
    let rest = text[stmt_end + 1..].trim_start();
    if !rest.starts_with("else") {
        return Some(stmt_end);
    }
    let else_at = stmt_end + 1 + (text[stmt_end + 1..].len() - rest.len());
    if text[else_at + 4..].trim_start().starts_with("if") {
        return chain_end(text, else_at + 4).or(Some(stmt_end));
    }
    statement_end(b, else_at + 4).or(Some(stmt_end))
}

/// The index of the bracket closing the one at `open`.
fn closing(b: &[u8], open: usize, o: u8, c: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &x) in b.iter().enumerate().skip(open) {
        if x == o {
            depth += 1;
        } else if x == c {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The end of the statement starting at or after `from`: its closing `}` for a block,
/// else its `;`.
fn statement_end(b: &[u8], from: usize) -> Option<usize> {
    let start = from + b[from..].iter().position(|x| !x.is_ascii_whitespace())?;
    if b[start] == b'{' {
        return closing(b, start, b'{', b'}');
    }
    b[start..]
        .iter()
        .position(|&x| x == b';')
        .map(|x| x + start)
}

/// Per dimension (x, y, z): whether every launch of `kernel` the slice shows runs one
/// block of one thread there (`dim3(1, blocks, batch_count), dim3(1, 64, 1)`,
/// rocauxiliary_lacgv.hpp:116). All false where no launch is shown.
fn single_thread_dims<'p>(pieces: impl Iterator<Item = &'p SlicePiece>, kernel: &str) -> [bool; 3] {
    static LAUNCH: OnceLock<Regex> = OnceLock::new();
    let launch = re(
        &LAUNCH,
        r"(?:LAUNCH_KERNEL|hipLaunchKernelGGL)\s*\(\s*(?:HIP_KERNEL_NAME\s*\()?\s*([A-Za-z_]\w*)",
    );
    let mut seen = false;
    let mut single = [true; 3];
    for p in pieces.filter(|p| p.role != PieceRole::Kernel) {
        let code: String = shown_lines(p)
            .iter()
            .map(|l| code_part(l.text))
            .collect::<Vec<_>>()
            .join("\n");
        for c in launch.captures_iter(&code) {
            if &c[1] != kernel {
                continue;
            }
            let rest = &code[c.get(1).expect("group").end()..];
            let args = top_level_args(rest);
            let (Some(grid), Some(block)) = (args.first(), args.get(1)) else {
                return [false; 3];
            };
            seen = true;
            for arg in [grid, block] {
                let dims = dim3_parts(arg, &code);
                for (d, one) in single.iter_mut().enumerate() {
                    *one &= dims.get(d).map_or(d > 0 && dims.len() == 1, |x| x == "1");
                }
            }
        }
    }
    if seen {
        single
    } else {
        [false; 3]
    }
}

/// The launch arguments after the kernel's name (and its template arguments): the text
/// split at top-level commas up to the closing parenthesis of the launch.
fn top_level_args(rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut angle, mut cur) = (0i32, 0i32, String::new());
    for ch in rest.chars() {
        match ch {
            '<' if depth == 0 && out.is_empty() && cur.trim().is_empty() => angle += 1,
            '>' if angle > 0 => angle -= 1,
            _ if angle > 0 => {}
            '(' | '[' | '{' => {
                depth += 1;
                cur.push(ch);
            }
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    break;
                }
                cur.push(ch);
            }
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
            }
            _ => cur.push(ch),
        }
    }
    let last = cur.trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    // The kernel's own closing parenthesis (`HIP_KERNEL_NAME(k<T>)`) leaves an empty
    // first part.
    if out.first().is_some_and(|x| x.is_empty() || x == ")") {
        out.remove(0);
    }
    out
}

/// The x, y, z parts of a launch dimension: `dim3(1, b)` -> `["1", "b", "1"]`; a
/// name declared `dim3 grid(1, b)` in `code` is read there; any other expression is
/// its x part alone (`["blocks"]`: y and z are 1).
fn dim3_parts(arg: &str, code: &str) -> Vec<String> {
    let parts = |inner: &str| {
        let mut v: Vec<String> = inner.split(',').map(|x| x.trim().to_string()).collect();
        v.resize(3, "1".to_string());
        v
    };
    let a = arg.trim();
    if let Some(inner) = a.strip_prefix("dim3").map(str::trim) {
        if let Some(inner) = inner.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
            return parts(inner);
        }
    }
    if a.chars().all(|c| c.is_alphanumeric() || c == '_') {
        let decl = Regex::new(&format!(r"\bdim3\s+{}\s*\(([^;()]*)\)", regex::escape(a)))
            .expect("escaped name");
        if let Some(c) = decl.captures(code) {
            return parts(&c[1]);
        }
    }
    vec![a.to_string()]
}

/// Names of the kernel assigned a thread's global index in a dimension where every
/// launch runs one thread (`i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x` with a
/// grid and a block of x size 1): zero in every thread, so no bound on them is off by
/// one for any thread.
fn zero_indices(lines: &[ShownLine], single: [bool; 3]) -> BTreeSet<String> {
    static INDEX: OnceLock<Regex> = OnceLock::new();
    let index = re(
        &INDEX,
        r"\b([A-Za-z_]\w*)\s*=\s*(?:(?:hipBlockIdx_|blockIdx\.)([xyz])\s*\*\s*(?:hipBlockDim_|blockDim\.)([xyz])\s*\+\s*)?(?:hipThreadIdx_|threadIdx\.)([xyz])\s*;",
    );
    let dim = |d: &str| match d {
        "x" => 0,
        "y" => 1,
        _ => 2,
    };
    lines
        .iter()
        .flat_map(|l| index.captures_iter(code_part(l.text)))
        .filter(|c| {
            let d = dim(&c[4]);
            single[d]
                && [c.get(2), c.get(3)]
                    .iter()
                    .all(|g| g.is_none_or(|g| dim(g.as_str()) == d))
        })
        .map(|c| c[1].to_string())
        .collect()
}

/// Adds to each effect where its line runs: the tests around it in the function `name`
/// (a bug in trsm's `RIGHT` branch shows only for `side == rocblas_side_right`). A
/// stride change says so itself.
fn say_where_it_runs(lines: &[ShownLine], name: &str, found: &mut [Site]) {
    for x in found.iter_mut().filter(|x| x.kind != "stride") {
        let tests = enclosing_tests(lines, x.line);
        if !tests.is_empty() {
            x.effect.push_str(&format!(
                " The line runs only where {} holds in `{name}`.",
                tests.join(" and ")
            ));
        }
    }
}

/// A bug to plant in the slice's target kernel, chosen by a hash of the slice id, and
/// the slice as the prompt shows it with the bug in place. `None` when the target
/// offers no change this module makes, or the changed line would give itself away
/// (its original text is shown elsewhere in the slice).
pub fn plant(s: &Slice) -> Option<(Mutation, Slice)> {
    let k = s
        .pieces
        .iter()
        .position(|p| p.role == PieceRole::Kernel && p.name == s.focus.target)?;
    // The kernel and the device functions it calls: a thin kernel that hands each
    // batch instance to a `_calc` helper keeps its arithmetic there.
    let calls: BTreeSet<&str> = words(&s.pieces[k].text).collect();
    let candidates: Vec<usize> = (0..s.pieces.len())
        .filter(|&j| {
            j == k
                || (s.pieces[j].role == PieceRole::DeviceHelper
                    && calls.contains(s.pieces[j].name.as_str()))
        })
        .collect();
    let single = single_thread_dims(s.pieces.iter(), &s.pieces[k].name);
    let mut sites: Vec<(usize, Site)> = Vec::new();
    for &j in &candidates {
        let lines = shown_lines(&s.pieces[j]);
        let mut thread = thread_names(&lines);
        for z in zero_indices(&lines, single) {
            thread.remove(&z);
        }
        let mut found = Vec::new();
        bound_checks(&lines, &thread, &mut found);
        accumulations(&lines, &thread, &mut found);
        barriers(&lines, &mut found);
        strides(&lines, &mut found);
        say_where_it_runs(&lines, &s.pieces[j].name, &mut found);
        let conditional = conditional_lines(&lines);
        found.retain(|x| !conditional.contains(&x.line));
        // A line this API never runs (a branch its template arguments rule out) shows
        // no bug whatever the inputs.
        let piece = &s.pieces[j];
        found.retain(|x| !s.focus.dead_line(&piece.lib, &piece.file, x.line));
        // The original must not be readable elsewhere in the prompt.
        let elsewhere: BTreeSet<&str> = s
            .pieces
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != j)
            .flat_map(|(_, p)| p.text.lines())
            .filter_map(|l| l.split_once("| ").map(|x| x.1.trim()))
            .collect();
        found.retain(|x| !elsewhere.contains(x.original.trim()));
        sites.extend(found.into_iter().map(|x| (j, x)));
    }
    if sites.iter().any(|x| !x.1.common) {
        sites.retain(|x| !x.1.common);
    }
    if sites.is_empty() {
        return None;
    }
    // Kind first, so every kind gets its share, then the site within it.
    let kinds: Vec<&str> = sites
        .iter()
        .map(|x| x.1.kind)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let h = Sha256::digest(s.id.as_bytes());
    let kind = kinds[h[0] as usize % kinds.len()];
    let of_kind: Vec<&(usize, Site)> = sites.iter().filter(|x| x.1.kind == kind).collect();
    let (j, chosen) = of_kind[u16::from_be_bytes([h[1], h[2]]) as usize % of_kind.len()];
    let piece = &s.pieces[*j];
    let mutation = Mutation {
        kind: chosen.kind.into(),
        lib: piece.lib.clone(),
        file: piece.file.clone(),
        line: chosen.line,
        original: chosen.original.clone(),
        mutated: chosen.mutated.clone(),
        fix: chosen.fix.clone(),
        shown: chosen.shown.clone(),
        effect: chosen.effect.clone(),
    };
    let mut shown = s.clone();
    shown.id = format!("{}#bug", s.id);
    let p = &mut shown.pieces[*j];
    p.text = p.text.replacen(
        &numbered_line(chosen.line, &chosen.original),
        &numbered_line(chosen.line, &chosen.mutated),
        1,
    );
    let before = p.tokens;
    p.tokens = crate::slice::count_tokens(&p.text);
    shown.tokens = shown.tokens + p.tokens - before;
    Some((mutation, shown))
}

/// The answer a find-the-bug question has by construction: the changed line, what it
/// breaks, and the line as the library has it. `name` is the definition that holds it.
pub fn reference_answer(m: &Mutation, name: &str) -> String {
    let base = m.file.rsplit('/').next().unwrap_or(&m.file);
    format!(
        "The bug is on line {line} of {base}, in `{name}`: it reads `{shown}`. {effect} \
         The line should read `{original}`.",
        line = m.line,
        shown = m.mutated.trim(),
        effect = m.effect,
        original = m.original.trim(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: u32, text: &str) -> ShownLine<'_> {
        ShownLine { number, text }
    }

    /// Code lines numbered from 1.
    fn numbered<'a>(code: &[&'a str]) -> Vec<ShownLine<'a>> {
        code.iter()
            .enumerate()
            .map(|(i, t)| line(i as u32 + 1, t))
            .collect()
    }

    /// The lines of the sites of one kind.
    fn lines_of(sites: &[Site], kind: &str) -> Vec<u32> {
        sites
            .iter()
            .filter(|x| x.kind == kind)
            .map(|x| x.line)
            .collect()
    }

    fn sites_of(code: &[&str]) -> Vec<Site> {
        let lines = numbered(code);
        let thread = thread_names(&lines);
        let mut out = Vec::new();
        bound_checks(&lines, &thread, &mut out);
        accumulations(&lines, &thread, &mut out);
        barriers(&lines, &mut out);
        strides(&lines, &mut out);
        out
    }

    #[test]
    fn bound_guards_on_thread_indices_go_one_off() {
        let s = sites_of(&[
            "    int tid = blockIdx.x * DIM_X + threadIdx.x;",
            "    if(tid < n && alpha != 0)",
            "        x[tid * incx] *= alpha; // scale",
            "    if(n < 64) return;",
        ]);
        let b: Vec<&Site> = s.iter().filter(|x| x.kind == "bound-check").collect();
        assert_eq!(b.len(), 1, "only the guard on tid, not `n < 64`");
        assert_eq!(b[0].line, 2);
        assert_eq!(b[0].mutated, "    if(tid <= n && alpha != 0)");
        assert_eq!(
            (b[0].fix.as_str(), b[0].shown.as_str()),
            ("tid < n", "tid <= n")
        );
        assert!(
            b[0].effect
                .contains("the thread whose `tid` equals n also passes and writes `x[tid * incx]` with `tid` = n"),
            "{}",
            b[0].effect
        );
    }

    #[test]
    fn a_loop_whose_body_leaves_at_the_bound_is_not_planted() {
        // rocblas_tpsv_kernels.cpp:91-96, cut down: the step `j <= n` adds breaks at once.
        let guarded = [
            "    rocblas_int tx = threadIdx.x;",
            "    for(rocblas_int j = BLK_SIZE + tx; j < n; j += BLK_SIZE)",
            "    {",
            "        if(tx + j >= n)",
            "            break;",
            "        x[j] -= sum;",
            "    }",
        ];
        let none: Vec<u32> = lines_of(&sites_of(&guarded), "bound-check");
        assert!(none.is_empty(), "{none:?}");
        // Without the guard the extra step writes `x[n]`.
        let mut bare = guarded.to_vec();
        bare.remove(4);
        bare.remove(3);
        assert_eq!(lines_of(&sites_of(&bare), "bound-check"), vec![2]);
    }

    #[test]
    fn a_guard_in_a_loop_header_that_steps_another_name_is_a_guard() {
        // rocblas_dgmm_kernels.cpp:45-60, cut down: `tx` is fixed, only `ty` steps.
        let s = sites_of(&[
            "    rocblas_int tx = blockIdx.x * DIM_X + threadIdx.x;",
            "    for(rocblas_int ty = blockIdx.y * DIM_Y + threadIdx.y; ty < n && tx < m;",
            "        ty += DIM_Y * gridDim.y)",
            "    {",
            "        C[tx + ty * ldc] = A[tx + ty * lda] * X[tx];",
            "    }",
        ]);
        let b: Vec<&Site> = s
            .iter()
            .filter(|x| x.kind == "bound-check" && x.fix == "tx < m")
            .collect();
        assert_eq!(
            b.len(),
            1,
            "{:?}",
            s.iter().map(|x| &x.effect).collect::<Vec<_>>()
        );
        assert!(
            b[0].effect
                .contains("the thread whose `tx` equals m also passes"),
            "{}",
            b[0].effect
        );
    }

    #[test]
    fn shifts_templates_and_early_returns() {
        let s = sites_of(&[
            "    const auto tx = threadIdx.x;",
            "    auto v = static_cast<T>(x[tx << 1]);",
            "    if(tx >= n) return;",
            "    for(int i = tx; i < m; i += blockDim.x)",
            "        y[i] = v;",
        ]);
        let got: Vec<(u32, &str)> = s
            .iter()
            .filter(|x| x.kind == "bound-check")
            .map(|x| (x.line, x.shown.as_str()))
            .collect();
        assert_eq!(got, [(3, "tx > n"), (4, "i <= m")]);
    }

    #[test]
    fn accumulations_overwrite_but_index_steps_do_not() {
        let s = sites_of(&[
            "    int tid = threadIdx.x;",
            "    T sum = 0;",
            "    T* work = w + blockIdx.x;",
            "    for(int i = tid; i < n; i += DIM)",
            "        sum += x[i * incx] * y[i * incy];",
            "    x += shiftx;",
            "    work += size_t(gridDim.x) * n;",
            "    tid += 64;",
        ]);
        let a: Vec<&Site> = s.iter().filter(|x| x.kind == "accumulate").collect();
        assert_eq!(a.len(), 1, "a pointer step is not an accumulation");
        assert_eq!(a[0].mutated, "        sum = x[i * incx] * y[i * incy];");
        assert_eq!(a[0].fix, "sum +=");
        // Both increments on one line: swapping one would not be a one-vector bug.
        assert!(s.iter().all(|x| x.kind != "stride"));
    }

    #[test]
    fn an_element_the_loop_counter_picks_loses_its_own_value_not_earlier_steps() {
        // rocblas_ger_kernels.hpp:285-287: each step adds to another `areg_upper[k]`.
        let lines = [
            "    T areg_upper[4];",
            "    if(RIGHT)",
            "    {",
            "        for(int k = 0; k < 4; k++)",
            "            areg_upper[k] += alpha * xreg[k] * yreg;",
            "    }",
        ];
        let shown = numbered(&lines);
        let mut s = Vec::new();
        accumulations(&shown, &BTreeSet::new(), &mut s);
        assert_eq!(s.len(), 1);
        assert!(
            s[0].effect
                .contains("the value each element held before the loop is lost"),
            "{}",
            s[0].effect
        );
        assert!(!s[0].effect.contains("last step"), "{}", s[0].effect);
        say_where_it_runs(&shown, "ger_kernel", &mut s);
        assert!(
            s[0].effect
                .ends_with("The line runs only where `RIGHT` holds in `ger_kernel`."),
            "{}",
            s[0].effect
        );
    }

    #[test]
    fn an_accumulator_that_enters_its_loop_holding_a_value_loses_it_at_the_first_step() {
        let effect = |code: &[&str]| {
            let shown = numbered(code);
            let mut s = Vec::new();
            accumulations(&shown, &BTreeSet::new(), &mut s);
            assert_eq!(s.len(), 1, "{code:?}");
            s.remove(0).effect
        };
        // rocauxiliary_larfg_specialized_kernels.hpp:85-98: `norm2` holds the first
        // wavefront's sum when the loop starts.
        let held = effect(&[
            "    T norm2 = (tid < n - 1) ? x[tid] * x[tid] : 0;",
            "    for(int i = tid + MAX_THDS; i < n - 1; i += MAX_THDS)",
            "        norm2 += x[i] * x[i];",
        ]);
        assert!(held.contains("what it held before the loop"), "{held}");
        assert!(!held.contains("only its last step's term"), "{held}");
        // Set to 0, then updated before the loop (the same kernel as it is, :77-98).
        let shown = numbered(&[
            "    T norm2 = 0;",
            "    norm2 += shift_left(norm2, 1);",
            "    for(int k = 1; k < nw; ++k)",
            "        norm2 += sval[k];",
        ]);
        let mut sites = Vec::new();
        accumulations(&shown, &BTreeSet::new(), &mut sites);
        let in_loop = sites
            .iter()
            .find(|x| x.original.contains("sval"))
            .expect("the loop's accumulation");
        assert!(
            in_loop.effect.contains("what it held before the loop"),
            "{}",
            in_loop.effect
        );
        for zero in ["    T sum = 0;", "    T sum{};", "    T sum = T(0);"] {
            let said = effect(&[
                zero,
                "    for(int i = tid; i < n; i += DIM)",
                "        sum += x[i] * y[i];",
            ]);
            assert!(
                said.contains("more than one step, only its last step's term survives"),
                "{zero}: {said}"
            );
        }
    }

    #[test]
    fn barriers_become_fences_and_strides_swap() {
        let s = sites_of(&[
            "    __shared__ T lds[64];",
            "    lds[threadIdx.x] = x[threadIdx.x * incx];",
            "    __syncthreads();",
            "    y[threadIdx.x * incy] = lds[63 - threadIdx.x];",
        ]);
        let b = s.iter().find(|x| x.kind == "barrier").unwrap();
        assert_eq!(b.mutated, "    __threadfence_block();");
        let st: Vec<(u32, &str, &str)> = s
            .iter()
            .filter(|x| x.kind == "stride")
            .map(|x| (x.line, x.fix.as_str(), x.shown.as_str()))
            .collect();
        assert_eq!(
            st,
            [
                (2, "threadIdx.x * incx", "threadIdx.x * incy"),
                (4, "threadIdx.x * incy", "threadIdx.x * incx")
            ]
        );
        let s = sites_of(&[
            "    int tid = threadIdx.x;",
            "    T v = x[tid * int64_t(incx)];",
            "    if(is_upper ? tid < n && k <= tid : tid < m)",
            "    y[tid * incy] = v;",
        ]);
        let got: Vec<(&str, &str)> = s
            .iter()
            .filter(|x| x.line <= 3)
            .map(|x| (x.fix.as_str(), x.shown.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("tid < n", "tid <= n"),
                ("tid < m", "tid <= m"),
                ("tid * int64_t(incx)", "tid * int64_t(incy)")
            ]
        );
    }

    #[test]
    fn a_swapped_increment_names_the_path_that_runs_its_line() {
        // rocblas_hbmv_kernels.cpp:134-147, cut down: the changed store is only in the
        // `else` of `if(alpha)`.
        let s = sites_of(&[
            "    T v = x[tid * incx];",
            "    if(tid < DIM_X)",
            "    {",
            "        if(alpha)",
            "        {",
            "            y[tid * incy] = alpha * v;",
            "        }",
            "        else",
            "        {",
            "            if(tid < n)",
            "                y[tid * incy] = beta ? y[tid * incy] * beta : 0;",
            "        }",
            "    }",
        ]);
        let st = s
            .iter()
            .find(|x| x.kind == "stride" && x.line == 11)
            .unwrap();
        assert!(
            st.effect.contains(
                "on the path where `tid < DIM_X` and not `alpha` and `tid < n` (the only one"
            ),
            "{}",
            st.effect
        );
        let first = s
            .iter()
            .find(|x| x.kind == "stride" && x.line == 1)
            .unwrap();
        assert!(!first.effect.contains("on the path"), "{}", first.effect);
    }

    #[test]
    fn bounds_are_named_as_written_and_loops_said_apart_from_guards() {
        let s = sites_of(&[
            "    int tid = threadIdx.x;",
            "    for(int i = tid; i < n - 1; i += DIM)",
            "        w[i] = x[i + 1];",
            "    if(tid < k)",
            "        done = true;",
        ]);
        let b: Vec<&Site> = s.iter().filter(|x| x.kind == "bound-check").collect();
        // `tid < k` guards no write it indexes: one more thread may pass harmlessly.
        assert_eq!(
            b.len(),
            1,
            "{:?}",
            b.iter().map(|x| &x.effect).collect::<Vec<_>>()
        );
        assert!(
            b[0].effect.contains(
                "reaches n - 1 runs the loop one step more and writes `w[i]` with `i` = n - 1"
            ),
            "{}",
            b[0].effect
        );
        assert!(
            !b[0].effect.contains("or one step too many"),
            "no hedge: {}",
            b[0].effect
        );
    }

    #[test]
    fn a_loop_step_that_can_leave_before_its_store_is_said_to_reach_it_only_then() {
        // rocauxiliary_stein.hpp:152-157: the step breaks out unless `iblock[j]` is
        // the current block, long before the store of column j.
        let s = sites_of(&[
            "    int tid = threadIdx.x;",
            "    for(int j = tid; j < nev; j += DIM)",
            "    {",
            "        if(iblock[j] != b)",
            "            break;",
            "        Z[i + j * ldz] = v;",
            "    }",
        ]);
        let b: Vec<&Site> = s.iter().filter(|x| x.kind == "bound-check").collect();
        assert_eq!(b.len(), 1);
        assert!(
            b[0].effect
                .contains("can write `Z[i + j * ldz]` with `j` = nev")
                && b[0]
                    .effect
                    .contains("unless the step leaves before it reaches that store"),
            "{}",
            b[0].effect
        );
    }

    #[test]
    fn a_store_under_a_test_of_data_is_said_to_happen_only_when_it_passes() {
        // roclapack_syevx_heevx.hpp:101-106: the extra step stores only if the element
        // it reads matches.
        let s = sites_of(&[
            "    int tid = threadIdx.x;",
            "    for(int k = tid; k < info; k += 64)",
            "    {",
            "        if(ifail[k] == i + 1)",
            "            ifail[k] = j + 1;",
            "    }",
        ]);
        let b: Vec<&Site> = s.iter().filter(|x| x.kind == "bound-check").collect();
        assert_eq!(b.len(), 1);
        assert!(
            b[0].effect.contains("can write `ifail[k]` with `k` = info")
                && b[0]
                    .effect
                    .contains("when that element passes the test `ifail[k] == i + 1`"),
            "{}",
            b[0].effect
        );
    }

    #[test]
    fn shuffle_steps_and_elements_the_kernel_writes_itself_are_not_planted() {
        let s = sites_of(&[
            "    int tid = threadIdx.x;",
            "    T norm2 = 0;",
            "    norm2 += shift_left(norm2, 4);",
            "    for(int i = tid; i < n; i += 64)",
            "        Lp[i] = cnt[i];",
            "    if(tid == 0)",
            "        Lp[n] = total;",
        ]);
        assert!(s.iter().all(|x| x.kind != "accumulate"));
        assert!(s.iter().all(|x| x.kind != "bound-check"));
    }

    #[test]
    fn a_read_one_past_the_end_is_not_planted() {
        // `y[m]` may be valid memory whose value goes unused (latrd's W).
        let s = sites_of(&[
            "    int i = blockIdx.x * 64 + threadIdx.x;",
            "    T ac = (i < m) ? y[i] : 0;",
            "    if(i < m)",
            "        z[i] = ac;",
        ]);
        assert_eq!(lines_of(&s, "bound-check"), [3]);
    }

    #[test]
    fn a_step_whose_writes_sit_in_a_loop_it_empties_is_not_planted() {
        // sytf2's rank-2 update (roclapack_sytf2.hpp:350-356): with `j <= n` the step
        // j = n runs `for(i = j; i < n; i++)` zero times, so it writes nothing.
        let s = sites_of(&[
            "    for(j = k + 2 + tid; j < n; j += MAX_THDS)",
            "    {",
            "        wk = d21 * A[j + k * lda];",
            "        for(i = j; i < n; i++)",
            "            A[i + j * lda] = A[i + j * lda] - wk;",
            "    }",
            "    for(j = k + 2 + tid; j < n; j += MAX_THDS)",
            "    {",
            "        A[j + k * lda] = wk;",
            "    }",
        ]);
        assert_eq!(lines_of(&s, "bound-check"), [4, 7]);
    }

    #[test]
    fn an_index_every_launch_holds_at_zero_takes_no_bound_bug() {
        // lacgv launches conj_in_place with x sizes 1 and 1 (rocauxiliary_lacgv.hpp:116),
        // so `i` is 0 in every thread and `i <= m` lets no thread more through; `j`
        // spans 64 threads a block.
        let kernel = [
            "    I i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;",
            "    I j = hipBlockIdx_y * hipBlockDim_y + hipThreadIdx_y;",
            "    if(i < m && j < n)",
            "        Ap[i + j * lda] = conj(Ap[i + j * lda]);",
        ];
        let lines = numbered(&kernel);
        let launcher = |text: &str| SlicePiece {
            role: PieceRole::Launcher,
            part: Default::default(),
            name: "rocsolver_lacgv_template".into(),
            lib: "rocsolver".into(),
            file: "library/src/auxiliary/rocauxiliary_lacgv.hpp".into(),
            start: 110,
            end: 120,
            sha256: String::new(),
            depth: 1,
            tokens: 0,
            text: text
                .lines()
                .enumerate()
                .map(|(k, t)| numbered_line(110 + k as u32, t))
                .collect(),
        };
        let lacgv = launcher(
            "    ROCSOLVER_LAUNCH_KERNEL(conj_in_place<T>, dim3(1, blocks, batch_count), dim3(1, 64, 1), 0,\n\
                     stream, (I)1, n, x, offset, incx, stridex);",
        );
        let single = single_thread_dims(std::iter::once(&lacgv), "conj_in_place");
        assert_eq!(single, [true, false, false]);
        assert_eq!(
            zero_indices(&lines, single),
            BTreeSet::from(["i".to_string()])
        );
        // A launch with more than one block in x leaves `i` to the threads.
        let wide = launcher(
            "    dim3 grid(blocks, 1);\n    ROCSOLVER_LAUNCH_KERNEL(conj_in_place<T>, grid, dim3(64), 0, stream, m, n);",
        );
        assert_eq!(
            single_thread_dims(std::iter::once(&wide), "conj_in_place"),
            [false, true, true]
        );
    }

    #[test]
    fn loops_whose_body_tests_the_bound_again_are_left_alone() {
        // The extra step of `j <= n` does nothing: every use is under `j < n`.
        let s = sites_of(&[
            "    for(int j = threadIdx.x; j < n; j += DIM)",
            "    {",
            "        if(j < n)",
            "            A[j] = 0;",
            "    }",
        ]);
        assert_eq!(lines_of(&s, "bound-check"), [3]);
    }

    #[test]
    fn barriers_are_planted_only_where_they_order_another_threads_write() {
        let kinds = |code: &[&str]| lines_of(&sites_of(code), "barrier");
        // A tree reduction: each step reads what another thread wrote.
        assert_eq!(
            kinds(&[
                "    __shared__ T sdata[256];",
                "    sdata[tid] = v;",
                "    __syncthreads();",
                "    if(tid < 128) sdata[tid] += sdata[tid + 128];",
                "    __syncthreads();",
                "    if(tid < 64) sdata[tid] += sdata[tid + 64];",
            ]),
            [3, 5]
        );
        // At the start, and between a thread's own write and read: nothing ordered.
        assert!(kinds(&[
            "    __shared__ T lds[64];",
            "    __syncthreads();",
            "    lds[tid] = x[tid];",
            "    __syncthreads();",
            "    y[tid] = lds[tid] * 2;",
            "    __syncthreads();",
        ])
        .is_empty());
        // An array handed whole to a function: what it reads is not shown.
        assert!(kinds(&[
            "    __shared__ T xs[64];",
            "    xs[tid] = x[tid];",
            "    __syncthreads();",
            "    dot(tid, m, xs, sval);",
        ])
        .is_empty());
        // A shared scalar one thread sets and all read.
        assert_eq!(
            kinds(&[
                "    __shared__ T scale;",
                "    if(tid == 0) scale = x[0];",
                "    __syncthreads();",
                "    y[tid] *= scale;",
            ]),
            [3]
        );
    }

    #[test]
    fn code_under_if_constexpr_or_if_is_not_changed() {
        let code = [
            "    if constexpr(std::is_same_v<T, float>)",
            "    {",
            "        if(tid < n) y[tid] = x[tid];",
            "    }",
            "    else",
            "        if(tid < m) y[tid] = 0;",
            "#if DEVICE_GRID_YZ_16BIT",
            "    for(; batch < batch_count; batch += c_YZ_grid_launch_limit)",
            "#endif",
            "    if(tid < k) z[tid] = 1;",
        ];
        let lines = numbered(&code);
        let got = conditional_lines(&lines);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [1, 2, 3, 4, 5, 6, 7, 8, 9]
        );
    }

    #[test]
    fn expressions_stop_at_operators_that_join_conditions() {
        let l = "if(a && tid < n || b)";
        let at = l.find('<').unwrap();
        let (s, e) = expression_around(l, at, at + 1);
        assert_eq!(&l[s..e], "tid < n");
    }
}
