//! Clang's diagnostics (printed with `-fno-caret-diagnostics`): parsed into groups, each
//! group mapped to the snippet it belongs to, and rendered in the snippet's own terms.
//!
//! A group is one `error:` (or `fatal error:`) line with the `In file included from`
//! lines before it and the `note:` lines after it. A group belongs to snippet `k` when
//! its error line lies in the lines of `k` in the batch file; or, for an error inside a
//! header, when a note (such as "in instantiation of ... requested here") does; or, for
//! a backend error, which has no line, when the function it names lives in the
//! namespace `rocqa_s<k>` (mangled `_ZN<len>rocqa_s<k>...`). A group is self-contained
//! when every place it points at lies inside that one snippet (or inside a header): only
//! those are trusted to fail the snippet straight from the batch; any other group sends
//! its snippet to a compile of its own.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

/// Stands for the snippet's file name in rendered diagnostics until the output names it.
pub(crate) const NAME_MARK: &str = "\u{1}SNIPPET\u{1}";

/// One place a diagnostic points at.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Loc {
    pub file: String,
    pub line: u32,
}

/// One diagnostic with its context and notes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Group {
    /// Raw lines, in order.
    pub lines: Vec<String>,
    /// Holds an `error:` or `fatal error:` line.
    pub is_error: bool,
    /// Where the error line points, if it names a place.
    pub head: Option<Loc>,
    /// Every place the group names (error line, notes, include chain).
    pub locs: Vec<Loc>,
    /// A message of the clang driver itself (`clang: error: ...`).
    pub driver: bool,
}

/// Where each snippet sits in the compiled file.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The compiled file's name as given to clang (relative, in the work dir).
    pub file: String,
    /// Per snippet: the file line holding its line 1, and its number of lines.
    pub spans: Vec<(u32, u32)>,
    /// Per hoisted `#include` line of the file (line number), per snippet: the line of
    /// that snippet holding the same include, if it has one.
    pub hoisted: Vec<(u32, Vec<Option<u32>>)>,
}

impl Layout {
    /// The layout of a file that is one snippet as it stands (plus the line after its
    /// end, where clang puts errors about an unexpected end of file).
    pub fn solo(file: &str, lines: u32) -> Layout {
        Layout {
            file: file.to_string(),
            spans: vec![(1, lines + 1)],
            hoisted: Vec::new(),
        }
    }

    /// The snippet whose lines hold file line `line`.
    pub fn snippet_at(&self, line: u32) -> Option<usize> {
        self.spans
            .iter()
            .position(|&(first, n)| line >= first && line < first + n)
    }
}

fn line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:(?P<file>[^:\s][^:]*):(?P<line>\d+):(?:\d+:)? )?(?P<sev>fatal error|error|warning|note|remark): ")
            .expect("static regex")
    })
}

fn include_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:In file included from|\s+from) (?P<file>[^:]+):(?P<line>\d+)[:,]")
            .expect("static regex")
    })
}

fn summary_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\d+ (errors?|warnings?)( and \d+ errors?)? generated").expect("static regex")
    })
}

fn driver_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(clang|clang\+\+)[-\w.]*: (error|warning|note): ").expect("static regex")
    })
}

/// Namespaced name in a mangled symbol: `<len>rocqa_s<k>` where len counts `rocqa_s<k>`.
fn mangled_ns_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?:^|[^0-9])([0-9]+)rocqa_s([0-9]+)").expect("static regex"))
}

fn plain_ns_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\brocqa_s([0-9]+)::").expect("static regex"))
}

/// Snippet numbers a line names through the batch namespaces, mangled or not.
pub(crate) fn namespaces_named(text: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for c in mangled_ns_re().captures_iter(text) {
        let (Ok(len), digits) = (c[1].parse::<usize>(), &c[2]) else {
            continue;
        };
        // `rocqa_s` is 7 characters; the rest of the length is the number's digits,
        // and the next name's length prefix follows straight after.
        let want = len.saturating_sub(7);
        if want >= 1 && want <= digits.len() {
            if let Ok(k) = digits[..want].parse() {
                out.insert(k);
            }
        }
    }
    for c in plain_ns_re().captures_iter(text) {
        if let Ok(k) = c[1].parse() {
            out.insert(k);
        }
    }
    out
}

/// Splits clang's stderr into groups. Summary lines ("2 errors generated ...") go.
pub(crate) fn parse(stderr: &str) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut pending_locs: Vec<Loc> = Vec::new();
    for raw in stderr.lines() {
        let line = raw.trim_end();
        if line.is_empty() || summary_re().is_match(line) {
            continue;
        }
        if let Some(c) = include_re().captures(line) {
            pending.push(line.to_string());
            pending_locs.push(Loc {
                file: c["file"].to_string(),
                line: c["line"].parse().unwrap_or(0),
            });
            continue;
        }
        let caps = line_re().captures(line);
        let sev = caps
            .as_ref()
            .map(|c| c.name("sev").map_or("", |m| m.as_str()));
        let loc = caps.as_ref().and_then(|c| {
            Some(Loc {
                file: c.name("file")?.as_str().to_string(),
                line: c.name("line")?.as_str().parse().ok()?,
            })
        });
        let starts_group =
            matches!(sev, Some("error" | "fatal error" | "warning")) || driver_re().is_match(line);
        if starts_group || groups.is_empty() {
            let driver = driver_re().captures(line);
            let is_error = matches!(sev, Some("error" | "fatal error"))
                || driver.as_ref().is_some_and(|c| &c[2] == "error");
            let mut locs = std::mem::take(&mut pending_locs);
            locs.extend(loc.clone());
            let mut lines = std::mem::take(&mut pending);
            lines.push(line.to_string());
            groups.push(Group {
                lines,
                is_error,
                head: loc.filter(|l| l.file != "<unknown>" && l.line > 0),
                locs,
                driver: driver.is_some(),
            });
        } else {
            let g = groups.last_mut().expect("a group exists");
            g.lines.append(&mut pending);
            g.locs.append(&mut pending_locs);
            g.lines.push(line.to_string());
            g.locs.extend(loc);
        }
    }
    if !pending.is_empty() {
        if let Some(g) = groups.last_mut() {
            g.lines.append(&mut pending);
        }
    }
    groups
}

/// True when the output's errors come from the backend: none of them names a source line.
pub(crate) fn is_backend(groups: &[Group]) -> bool {
    let errors: Vec<&Group> = groups.iter().filter(|g| g.is_error).collect();
    !errors.is_empty() && errors.iter().all(|g| g.head.is_none() && !g.driver)
}

/// The snippet a group belongs to, and whether it is self-contained (see module docs).
pub(crate) fn owner(g: &Group, layout: &Layout) -> Option<(usize, bool)> {
    let in_file = |l: &Loc| l.file == layout.file;
    let snippet_of = |l: &Loc| in_file(l).then(|| layout.snippet_at(l.line)).flatten();
    let named = g
        .lines
        .iter()
        .flat_map(|l| namespaces_named(l))
        .collect::<BTreeSet<_>>();
    // The error's own line; else (in a header, between snippets, or nowhere) the first
    // note or include line inside a snippet; else the one namespace the text names.
    let k = match g.head.as_ref().and_then(snippet_of) {
        Some(k) => k,
        None => match g.locs.iter().find_map(snippet_of) {
            Some(k) => k,
            None if named.len() == 1 => *named.iter().next().expect("one"),
            None => return None,
        },
    };
    let hoisted = |line: u32| layout.hoisted.iter().any(|(l, _)| *l == line);
    let contained = g
        .locs
        .iter()
        .filter(|l| in_file(l))
        .all(|l| snippet_of(l) == Some(k) || hoisted(l.line))
        && named.iter().all(|&n| n == k);
    Some((k, contained))
}

/// Renders groups of snippet `k`: the file's name becomes [`NAME_MARK`], file lines
/// become snippet lines, the batch namespace disappears from names, and every prefix in
/// `scrub` (work dir, include dirs) is cut from paths.
pub(crate) fn render(groups: &[&Group], layout: &Layout, k: usize, scrub: &[String]) -> String {
    static LOC: OnceLock<Regex> = OnceLock::new();
    let loc = LOC.get_or_init(|| {
        Regex::new(r"(?P<pre>^|from |\s|')(?P<file>[^\s:']+):(?P<line>\d+)(?P<post>[:,])")
            .expect("static regex")
    });
    let (first, _) = layout.spans[k];
    let mut out: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for g in groups {
        let mut text = Vec::new();
        for line in &g.lines {
            let mut l = line.clone();
            for p in scrub {
                l = l.replace(p.as_str(), "");
            }
            let l = loc.replace_all(&l, |c: &regex::Captures| {
                let (pre, file, post) = (&c["pre"], &c["file"], &c["post"]);
                let n: u32 = c["line"].parse().unwrap_or(0);
                if file != layout.file {
                    return c[0].to_string();
                }
                let mapped = if layout.snippet_at(n) == Some(k) {
                    Some(n + 1 - first)
                } else {
                    layout
                        .hoisted
                        .iter()
                        .find(|(l, _)| *l == n)
                        .and_then(|(_, per)| per.get(k).copied().flatten())
                };
                match mapped {
                    Some(m) => format!("{pre}{NAME_MARK}:{m}{post}"),
                    None => format!("{pre}{NAME_MARK}{post}"),
                }
            });
            text.push(plain_ns_re().replace_all(&l, "").into_owned());
        }
        let joined = text.join("\n");
        if seen.insert(joined.clone()) {
            out.push(joined);
        }
    }
    out.join("\n")
}

/// Drops the batch namespaces (`rocqa_s<k>::`) from demangled names.
pub(crate) fn strip_namespaces(text: &str) -> String {
    plain_ns_re().replace_all(text, "").into_owned()
}

/// Mangled names quoted in diagnostics (`'_Z...'`), for demangling.
pub(crate) fn mangled_names(text: &str) -> BTreeSet<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"'(_Z[0-9A-Za-z_$.]+)'").expect("static regex"));
    re.captures_iter(text).map(|c| c[1].to_string()).collect()
}

/// Cuts diagnostics to at most `max` bytes on a line boundary, saying how much went.
pub(crate) fn trim(text: &str, max: usize) -> String {
    let t = text.trim();
    if t.len() <= max {
        return t.to_string();
    }
    let mut end = max;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = t[..end].to_string();
    if let Some(nl) = cut.rfind('\n') {
        cut.truncate(nl);
    }
    let dropped = t[cut.len()..]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    format!("{cut}\n... ({dropped} more lines)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two snippets of 3 lines after one hoisted include: s0 on lines 3-5, s1 on 8-10.
    fn layout() -> Layout {
        Layout {
            file: "batch.hip".into(),
            spans: vec![(3, 3), (8, 3)],
            hoisted: vec![(1, vec![Some(1), Some(2)])],
        }
    }

    #[test]
    fn frontend_errors_map_by_line_and_render_in_snippet_terms() {
        let out = "batch.hip:9:43: error: expected ';' after expression\n\
                   batch.hip:4:10: error: use of undeclared identifier 'rocqa_s0::nope'\n\
                   batch.hip:3:5: note: candidate function not viable\n\
                   2 errors generated when compiling for gfx90a.\n";
        let groups = parse(out);
        assert_eq!(groups.len(), 2);
        assert!(groups.iter().all(|g| g.is_error));
        assert!(!is_backend(&groups));
        let l = layout();
        assert_eq!(owner(&groups[0], &l), Some((1, true)));
        assert_eq!(owner(&groups[1], &l), Some((0, true)));
        let r = render(&[&groups[1]], &l, 0, &[]);
        assert_eq!(
            r,
            format!(
                "{NAME_MARK}:2:10: error: use of undeclared identifier 'nope'\n\
                 {NAME_MARK}:1:5: note: candidate function not viable"
            )
        );
        assert_eq!(
            render(&[&groups[0]], &l, 1, &[]),
            format!("{NAME_MARK}:2:43: error: expected ';' after expression")
        );
    }

    #[test]
    fn header_errors_map_through_notes_and_include_chains() {
        let out = "In file included from batch.hip:1:\n\
                   /usr/include/hip/x.h:7:3: error: static assertion failed\n\
                   batch.hip:9:1: note: in instantiation of function template specialization requested here\n";
        let groups = parse(out);
        assert_eq!(groups.len(), 1);
        assert_eq!(owner(&groups[0], &layout()), Some((1, true)));
        let r = render(&[&groups[0]], &layout(), 1, &["/usr/include/".into()]);
        assert!(
            r.starts_with(&format!(
                "In file included from {NAME_MARK}:2:\nhip/x.h:7:3: error"
            )),
            "{r}"
        );
        assert!(r.ends_with(&format!("{NAME_MARK}:2:1: note: in instantiation of function template specialization requested here")), "{r}");
    }

    #[test]
    fn cross_snippet_notes_are_not_self_contained() {
        let out = "batch.hip:9:17: error: redefinition of 'add'\nbatch.hip:4:17: note: previous definition is here\n";
        let g = parse(out);
        assert_eq!(owner(&g[0], &layout()), Some((1, false)));
        // Between the snippets (the namespace lines): nobody's.
        let g = parse("batch.hip:7:1: error: expected '}'\n");
        assert_eq!(owner(&g[0], &layout()), None);
        // An unclosed brace: the error sits after the snippet, its note inside it.
        let g =
            parse("batch.hip:11:1: error: expected '}'\nbatch.hip:4:12: note: to match this '{'\n");
        assert_eq!(owner(&g[0], &layout()), Some((0, false)));
    }

    #[test]
    fn backend_errors_map_by_mangled_namespace() {
        let out = "error: local memory (160000) exceeds limit (65536) in function '_ZN8rocqa_s12k3EPf'\n\
                   error: local memory (160000) exceeds limit (65536) in function '_ZN9rocqa_s1112bigEPf'\n\
                   error: local memory (70000) exceeds limit (65536) in function 'plain_c_kernel'\n";
        let g = parse(out);
        assert_eq!(g.len(), 3);
        assert!(is_backend(&g));
        let l = Layout {
            file: "batch.hip".into(),
            spans: (0..12).map(|i| (10 * i + 2, 5)).collect(),
            hoisted: vec![],
        };
        assert_eq!(owner(&g[0], &l), Some((1, true)));
        assert_eq!(owner(&g[1], &l), Some((11, true)));
        assert_eq!(owner(&g[2], &l), None);
        assert_eq!(
            namespaces_named("_ZZN8rocqa_s31kEPfENKUlvE_clEv"),
            [3].into()
        );
        assert_eq!(namespaces_named("'rocqa_s7::k(float*)'"), [7].into());
        assert!(mangled_names(out).contains("_ZN8rocqa_s12k3EPf"));
    }

    #[test]
    fn solo_layout_is_the_identity() {
        let g = parse("input.hip:2:3: error: x\ninput.hip:2:3: error: x\n");
        let l = Layout::solo("input.hip", 4);
        assert_eq!(owner(&g[0], &l), Some((0, true)));
        // Repeated groups are printed once.
        assert_eq!(
            render(&[&g[0], &g[1]], &l, 0, &[]),
            format!("{NAME_MARK}:2:3: error: x")
        );
    }

    #[test]
    fn trim_cuts_on_lines() {
        let text = (0..100)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let t = trim(&text, 50);
        assert!(t.len() < 80 && t.ends_with("more lines)"), "{t}");
        assert_eq!(trim("  short \n", 50), "short");
    }
}
