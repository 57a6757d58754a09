//! What one API fixes along its graph: the values every caller gives a function's
//! parameters.
//!
//! `rocblas_saxpy` calls `rocblas_axpy_impl<rocblas_int, 256>` with a `const float*`
//! alpha, which passes `batch_count_1` (a local `1`) down to the launcher, whose `Ty`
//! is deduced as `float*`. Read this way, `batch_count > 8192` is false and
//! `using_rocblas_float` true for this API, which is what tells a launch it makes from
//! one written for another form. A value is kept only where every call site in the
//! graph agrees on it; template arguments are read where written and deduced from a
//! parameter's declared type where a plain name is passed.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;

use super::code::{split_args, Body, Scanner, Text};
use super::eval::{
    condition, is_branch_header, is_enumerator, resolve_type, value, Env, Truth, Value, DEFINED,
    HOLDS, ONE_OF, RETURNS, SITES,
};
use super::CodeText;
use crate::model::InterfaceGraph;

/// Bindings of the nodes of one graph, computed on demand.
pub struct Binder<'a> {
    code: &'a CodeText,
    g: &'a InterfaceGraph,
    /// Per node: its bindings, and whether the API reaches it at all.
    memo: RefCell<HashMap<usize, (Rc<Env>, bool)>>,
    /// Per node: its local constants and aliases, read once, in order.
    locals: RefCell<HashMap<usize, Rc<Vec<Local>>>>,
    /// Per node: its parameters as the outermost caller passing them names them.
    renames: RefCell<HashMap<usize, Rc<BTreeMap<String, String>>>>,
    /// What each argument check's status test rules out, by caller and the offset of
    /// the `return` that follows it.
    checked: RefCell<HashMap<(usize, usize), Rc<Held>>>,
}

/// A constant or type alias a body declares: where its declaration ends, its name,
/// and what it is (`None`: not known, which also hides an outer value of that name).
#[derive(Debug, Clone)]
struct Local {
    end: usize,
    name: String,
    value: Option<Value>,
    is_type: bool,
}

/// What the binder reads off a definition's text, kept across graphs: the same
/// launchers and templates recur in the graphs of every precision and form.
#[derive(Default)]
pub struct TextCache {
    heads: Mutex<HashMap<DefId, Option<Arc<Head>>>>,
    sites: Mutex<HashMap<SitesKey, Arc<Vec<Site>>>>,
}

/// The sites of one callee (or, `true`, one launched kernel) in one caller.
type SitesKey = (DefId, String, bool);

/// A definition: `(lib, file, name, line)`.
type DefId = (String, String, String, u32);

/// Conditions that hold at a point, as written.
type Held = Vec<String>;

fn def_id(n: &crate::model::GraphNode) -> DefId {
    (n.lib.clone(), n.file.clone(), n.name.clone(), n.line)
}

/// One place a function is called or a kernel launched: the template arguments
/// written there and the call's arguments.
#[derive(Clone)]
struct Site {
    at: usize,
    template_args: Vec<String>,
    args: Vec<String>,
}

impl<'a> Binder<'a> {
    /// A binder over one API's graph.
    pub fn new(code: &'a CodeText, g: &'a InterfaceGraph) -> Binder<'a> {
        Binder {
            code,
            g,
            memo: RefCell::new(HashMap::new()),
            locals: RefCell::new(HashMap::new()),
            renames: RefCell::new(HashMap::new()),
            checked: RefCell::new(HashMap::new()),
        }
    }

    /// The names known throughout node `i`: its parameters as every caller sets them.
    pub fn env(&self, i: usize) -> Rc<Env> {
        self.bound(i).0
    }

    /// The functions node `i` calls by name in `text` (a piece of its body), and every
    /// function those reach: what a block of the body runs.
    pub fn reached_from_text(&self, i: usize, text: &str) -> BTreeSet<String> {
        let named = |name: &str| {
            text.match_indices(name).any(|(k, _)| {
                let before = text[..k].chars().next_back();
                let after = text[k + name.len()..].trim_start().chars().next();
                !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    && matches!(after, Some('(' | '<'))
            })
        };
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        let mut todo: Vec<usize> = self
            .g
            .edges
            .iter()
            .filter(|e| e.from == i && named(&self.g.nodes[e.to].name))
            .map(|e| e.to)
            .collect();
        while let Some(j) = todo.pop() {
            if seen.insert(j) {
                todo.extend(self.g.edges.iter().filter(|e| e.from == j).map(|e| e.to));
            }
        }
        seen.into_iter()
            .map(|j| self.g.nodes[j].name.clone())
            .collect()
    }

    /// The function parameters of node `i`'s definition, `(type, name)`, as written.
    /// Whether the API's own definition takes no 64-bit integer (not a `_64` form).
    pub fn api_is_32bit(&self) -> bool {
        let params = self.params_of(1);
        !params.is_empty() && !params.iter().any(|(ty, _)| is_int64(ty))
    }

    pub fn params_of(&self, i: usize) -> Vec<(String, String)> {
        let n = &self.g.nodes[i];
        self.code
            .body(n)
            .and_then(|(t, b)| self.head_of(n, &t, &b))
            .map(|h| h.params.clone())
            .unwrap_or_default()
    }

    /// Can some call of node `to` written in node `from` call this definition of it
    /// (template arguments and argument count as the definition takes them)?
    pub fn calls_viably(&self, from: usize, to: usize) -> bool {
        let (caller, callee) = (&self.g.nodes[from], &self.g.nodes[to]);
        let (Some((ct, cb)), Some((t, b))) = (self.code.body(caller), self.code.body(callee))
        else {
            return true;
        };
        let Some(own) = self.head_of(callee, &t, &b) else {
            return true;
        };
        let sites = self.sites(caller, callee, &ct, &cb);
        sites.is_empty() || sites.iter().any(|s| own.viable(s))
    }

    /// Does the API reach node `i`: is some call of it live for this API?
    pub fn reached(&self, i: usize) -> bool {
        self.bound(i).1
    }

    fn bound(&self, i: usize) -> (Rc<Env>, bool) {
        if let Some(e) = self.memo.borrow().get(&i) {
            return e.clone();
        }
        // A cycle reads nothing known beyond this point.
        self.memo
            .borrow_mut()
            .insert(i, (Rc::new(Env::default()), true));
        let (mut e, reached) = self.compute(i);
        for (name, b) in self.literal_returns(i) {
            e.values.insert(format!("{RETURNS}{name}"), Value::Bool(b));
        }
        let out = (Rc::new(e), reached);
        self.memo.borrow_mut().insert(i, out.clone());
        out
    }

    /// The callees of node `i` whose every definition it reaches is `return true;` or
    /// `return false;` (one value for all): a test of such a call is decided.
    fn literal_returns(&self, i: usize) -> Vec<(String, bool)> {
        let mut by_name: BTreeMap<&str, Option<bool>> = BTreeMap::new();
        for e in self.g.edges.iter().filter(|e| e.from == i) {
            let callee = &self.g.nodes[e.to];
            let literal = self.code.body(callee).and_then(|(t, b)| {
                let inner = t.s.get(b.open + 1..b.close)?;
                let words: Vec<&str> = inner
                    .split(|c: char| c.is_whitespace() || c == ';')
                    .filter(|w| !w.is_empty())
                    .collect();
                match words[..] {
                    ["return", "true"] => Some(true),
                    ["return", "false"] => Some(false),
                    _ => None,
                }
            });
            let slot = by_name.entry(callee.name.as_str()).or_insert(literal);
            if *slot != literal {
                *slot = None;
            }
        }
        by_name
            .into_iter()
            .filter_map(|(n, b)| Some((n.to_string(), b?)))
            .collect()
    }

    /// The names known at offset `at` of node `i`'s body: its parameters and the
    /// constants and type aliases the body declares before `at`.
    pub fn env_at(&self, i: usize, at: usize) -> Env {
        let mut env = (*self.env(i)).clone();
        for l in self.locals_of(i).iter().take_while(|l| l.end <= at) {
            if l.name == POINTER_MODE {
                let mode = match l.value {
                    Some(Value::Int(m)) => Some(m),
                    _ => None,
                };
                set_pointer_mode(&mut env, mode);
                continue;
            }
            put(&mut env, &l.name, l.value.clone());
            if l.value.is_none() && l.is_type {
                env.params.insert(l.name.clone());
            }
        }
        env
    }

    /// The pointer mode node `i`'s own code has set where offset `at` is, with the
    /// offset just past the call that set it; `None` where the mode is the one its
    /// caller left (not set above `at`, or set in a block that has closed).
    pub fn mode_set_at(&self, i: usize, at: usize) -> Option<(i64, usize)> {
        let mut set = None;
        for l in self.locals_of(i).iter().take_while(|l| l.end <= at) {
            if l.name == POINTER_MODE {
                set = match l.value {
                    Some(Value::Int(m)) => Some((m, l.end)),
                    _ => None,
                };
            }
        }
        set
    }

    /// Is parameter `param` of node `i` one of the API's own arguments, passed down
    /// unchanged (node `i` is the API's definition, or every call path hands it an
    /// argument of the API)? A pointer a caller makes to a local of its own
    /// (`&memsize`) is not.
    pub fn is_api_argument(&self, i: usize, param: &str) -> bool {
        if i <= 1 {
            return true;
        }
        let Some(Value::Type(token)) = self
            .env(i)
            .values
            .get(&format!("{IDENTITY}{param}"))
            .cloned()
        else {
            return false;
        };
        self.g
            .nodes
            .iter()
            .take(2)
            .any(|n| token.starts_with(&format!("{IDENTITY}{}:{}:{}:", n.file, n.name, n.line)))
    }

    /// The names in `text` (a condition or a launch argument written in node `i`) that
    /// are parameters of node `i` named like a parameter of the API, yet not that
    /// argument of the API: trti2's `n` is getri's `jb` on its blocked path, so
    /// "`n <= 64`" in trti2 beside "`n > 43`" in getri would join two sizes into one.
    pub fn own_names_in(&self, i: usize, text: &str) -> Vec<String> {
        if i <= 1 {
            return Vec::new();
        }
        let api: BTreeSet<String> = self.params_of(1).into_iter().map(|(_, n)| n).collect();
        let own: BTreeSet<String> = self.params_of(i).into_iter().map(|(_, n)| n).collect();
        let env = self.env(i);
        let mut out: Vec<String> = Vec::new();
        for w in text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| api.contains(*w) && own.contains(*w))
        {
            let same = matches!(
                env.values.get(&format!("{IDENTITY}{w}")),
                Some(Value::Type(token)) if token.ends_with(&format!(":{w}"))
                    && self.is_api_argument(i, w)
            );
            if !same && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
        out
    }

    /// The locals of node `i`'s body, each read with its node's bindings and the
    /// locals before it (so any prefix of them is what the body knows at that point).
    fn locals_of(&self, i: usize) -> Rc<Vec<Local>> {
        if let Some(l) = self.locals.borrow().get(&i) {
            return l.clone();
        }
        let mut out = Vec::new();
        if let Some((t, b)) = self.code.body(&self.g.nodes[i]) {
            let mut env = (*self.env(i)).clone();
            let stmt_of = |at: usize| {
                b.stmt_at(at)
                    .map(|s| (s.start, s.conds.clone(), s.cond_at.clone()))
            };
            locals(&t.s[b.open..b.close], b.open, &stmt_of, &mut env, &mut out);
        }
        tracing::trace!(
            node = %self.g.nodes[i].name,
            locals = ?out.iter().map(|l| (&l.name, &l.value)).collect::<Vec<_>>(),
            "Locals."
        );
        let out = Rc::new(out);
        self.locals.borrow_mut().insert(i, out.clone());
        out
    }

    /// The head of node `n`'s definition, read once per run.
    fn head_of(&self, n: &crate::model::GraphNode, t: &Text, b: &Body) -> Option<Arc<Head>> {
        let key = def_id(n);
        if let Some(h) = super::locked(&self.code.bind_cache.heads).get(&key) {
            return h.clone();
        }
        let h = head(
            t,
            b,
            &n.name,
            t.offset(n.line.max(1)),
            t.offset(n.start_line.max(1)),
        )
        .map(|mut h| {
            // Defaults written on a declaration in a header (rocblas_gemv.hpp:129,
            // `T* workspace = nullptr`) hold for the definition too.
            if let Some(declared) = self.code.declared_defaults(&n.lib).get(&n.name) {
                let mine = declared.iter().filter(|d| d.len() == h.params.len());
                for (k, slot) in h.defaults.iter_mut().enumerate() {
                    if slot.is_some() {
                        continue;
                    }
                    let mut found = mine.clone().map(|d| d[k].clone());
                    if let Some(first) = found.next().flatten() {
                        if found.all(|o| o.as_deref() == Some(first.as_str())) {
                            *slot = Some(first);
                        }
                    }
                }
            }
            Arc::new(h)
        });
        super::locked(&self.code.bind_cache.heads).insert(key, h.clone());
        h
    }

    /// Locals of a body that have the type of one of its parameters: `auto x_ptr =
    /// adjust_ptr_batch(x, b_base, stridex)`, where every definition of the callee in
    /// the graph returns its first parameter offset (`return p + block * stride;`), so
    /// that the launcher the `_64` loop calls with `x_ptr` is read with `x`'s type.
    fn pointer_aliases(&self, t: &Text, b: &Body) -> BTreeMap<String, String> {
        static RE: OnceLock<Regex> = OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r"\bauto\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)\s*,")
                .expect("static regex")
        });
        let mut out = BTreeMap::new();
        for c in re.captures_iter(&t.s[b.open..b.close]) {
            if self.returns_first_offset(&c[2]) {
                out.insert(c[1].to_string(), c[3].to_string());
            }
        }
        // `auto alpha_ptr = <test> ? alpha + b * stride_alpha : alpha;` has `alpha`'s
        // type whichever way the test goes (the `_64` axpy loop's scalar, whose type
        // decides `using_rocblas_half` in the launcher it is passed to).
        static CHOICE: OnceLock<Regex> = OnceLock::new();
        let choice = CHOICE.get_or_init(|| {
            Regex::new(
                r"\bauto\s+([A-Za-z_]\w*)\s*=[^;?]*\?\s*([A-Za-z_]\w*)\s*\+[^;:?]*:\s*([A-Za-z_]\w*)\s*;",
            )
            .expect("static regex")
        });
        for c in choice.captures_iter(&t.s[b.open..b.close]) {
            if c[2] == c[3] {
                out.insert(c[1].to_string(), c[3].to_string());
            }
        }
        // A local's declared type (`V sum = 0;`, `To sum;`), under `LOCAL_TYPE` + its
        // name, where the body declares the name once: what an argument `sum` passes.
        static DECL: OnceLock<Regex> = OnceLock::new();
        let decl = DECL.get_or_init(|| {
            Regex::new(r"(?:^|[;{}])\s*(?:(?:const|constexpr|static)\s+)*([A-Za-z_][\w:]*(?:<[^;{}()<>]*>)?)\s+([A-Za-z_]\w*)\s*(?:=|;|\{)")
                .expect("static regex")
        });
        let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
        for c in decl.captures_iter(&t.s[b.open..b.close]) {
            let ty = &c[1];
            if matches!(
                ty,
                "return"
                    | "else"
                    | "case"
                    | "goto"
                    | "delete"
                    | "new"
                    | "throw"
                    | "using"
                    | "typedef"
                    | "auto"
                    | "do"
            ) {
                continue;
            }
            seen.entry(c[2].to_string())
                .and_modify(|t| *t = None)
                .or_insert_with(|| Some(ty.to_string()));
        }
        for (name, ty) in seen {
            if let Some(ty) = ty {
                out.insert(format!("{LOCAL_TYPE}{name}"), ty);
            }
        }
        out
    }

    /// Does every definition of `name` in the graph return its first parameter plus an
    /// offset (and nothing else)?
    fn returns_first_offset(&self, name: &str) -> bool {
        static RE: OnceLock<Regex> = OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r"^\{\s*return\s+([A-Za-z_]\w*)\s*\+[^;{}]*;\s*\}$").expect("static regex")
        });
        let mut defs = self.g.nodes.iter().filter(|n| n.name == name).peekable();
        defs.peek().is_some()
            && defs.all(|n| {
                let Some((t, b)) = self.code.body(n) else {
                    return false;
                };
                let Some(h) = self.head_of(n, &t, &b) else {
                    return false;
                };
                let body = &t.s[b.open..(b.close + 1).min(t.s.len())];
                re.captures(body.trim())
                    .is_some_and(|c| h.params.first().is_some_and(|(_, p)| *p == c[1]))
            })
    }

    /// What an argument check called before offset `at` of caller `c` rules out past
    /// the `if(status != rocblas_status_continue) return status;` that follows it: the
    /// condition of each of its returns of another status, negated, in the caller's
    /// names (rocblas_hbmv_imp.hpp:115-118 calls `rocblas_hbmv_arg_check`, which
    /// returns for `!n || !batch_count`, so the launcher's own test never fires).
    fn checked_before(&self, c: usize, ct: &Text, cb: &Body, at: usize) -> Vec<String> {
        let mut out = Vec::new();
        for (ret, own) in cb.returns_before(&ct.s, at) {
            let [cond] = own else {
                continue;
            };
            let hit = self.checked.borrow().get(&(c, ret.start)).cloned();
            let found = hit.unwrap_or_else(|| {
                let found = Rc::new(self.status_test(c, ct, cb, ret.start, cond));
                self.checked
                    .borrow_mut()
                    .insert((c, ret.start), found.clone());
                found
            });
            out.extend(found.iter().cloned());
        }
        out
    }

    /// What `if(cond) return ...;` at offset `ret` of caller `c` rules out, where
    /// `cond` is `v != rocblas_status_continue` and `v` holds what a check returned.
    fn status_test(&self, c: usize, ct: &Text, cb: &Body, ret: usize, cond: &str) -> Vec<String> {
        static STATUS: OnceLock<Regex> = OnceLock::new();
        let status = STATUS.get_or_init(|| {
            Regex::new(r"^([A-Za-z_]\w*) != rocblas_status_continue$").expect("static regex")
        });
        static ASSIGN: OnceLock<Regex> = OnceLock::new();
        let assign = ASSIGN.get_or_init(|| {
            Regex::new(r"\b([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w:]*)\s*(?:<[^;(]*>)?\s*\(")
                .expect("static regex")
        });
        let Some(v) = status.captures(cond).map(|m| m[1].to_string()) else {
            return Vec::new();
        };
        // The call whose status `v` holds: `v = f<...>(args);`, the last before the
        // return.
        let Some(m) =
            ct.s.get(cb.open..ret)
                .and_then(|before| assign.captures_iter(before).filter(|m| m[1] == v).last())
        else {
            return Vec::new();
        };
        let (Some(whole), Some(name)) = (m.get(0), m.get(2)) else {
            return Vec::new();
        };
        let open = cb.open + whole.end() - 1;
        let close = Scanner::new(&ct.s).matching(open);
        if ct.s.as_bytes().get(close) != Some(&b')') {
            return Vec::new();
        }
        let args = split_args(&ct.s[open + 1..close], false);
        let f = name.as_str().rsplit("::").next().unwrap_or_default();
        // Of several overloads, what every one rules out.
        let mut out: Option<Vec<String>> = None;
        for j in self
            .g
            .edges
            .iter()
            .filter(|e| e.from == c && self.g.nodes[e.to].name == f)
            .map(|e| e.to)
            .collect::<BTreeSet<_>>()
        {
            let m = &self.g.nodes[j];
            let Some((ft, fb)) = self.code.body(m) else {
                continue;
            };
            let Some(head) = self.head_of(m, &ft, &fb) else {
                continue;
            };
            // A name or a number: what the test reads is what was passed.
            let names: BTreeMap<&str, &str> = head
                .params
                .iter()
                .zip(&args)
                .filter_map(|((_, p), a)| {
                    let a = a.trim();
                    a.bytes().all(is_ident).then_some((p.as_str(), a))
                })
                .collect();
            let mine: Vec<String> = status_returns(&ft, &fb)
                .iter()
                .filter_map(|c| renamed(&format!("not ({c})"), &names))
                .collect();
            out = Some(match out {
                None => mine,
                Some(o) => o.into_iter().filter(|c| mine.contains(c)).collect(),
            });
        }
        out.unwrap_or_default()
    }

    /// The sites in `caller` (text `ct`, body `cb`) that call or launch `n`.
    fn sites(
        &self,
        caller: &crate::model::GraphNode,
        n: &crate::model::GraphNode,
        ct: &Text,
        cb: &Body,
    ) -> Arc<Vec<Site>> {
        let kernel = n.kind == crate::model::NodeKind::Kernel;
        let key = (def_id(caller), n.name.clone(), kernel);
        let cached = super::locked(&self.code.bind_cache.sites)
            .get(&key)
            .cloned();
        cached.unwrap_or_else(|| {
            let found = Arc::new(if kernel {
                launch_sites(ct, cb, &n.name)
            } else {
                let mut found = call_sites(ct, cb, &n.name);
                // A header shared by the 32-bit and `_64` units is read as the
                // 32-bit unit sees it: the `_64` unit's call of `f_64` is written
                // there as the call of `f` (`ROCBLAS_API(f)(...)`).
                if found.is_empty() {
                    if let Some(base) = n.name.strip_suffix("_64") {
                        found = call_sites(ct, cb, base);
                    }
                }
                found
            });
            super::locked(&self.code.bind_cache.sites).insert(key, found.clone());
            found
        })
    }

    /// Node `i`'s parameters that every live call passes a caller's parameter to, named
    /// as the outermost caller that passes it on names it (`n_64` of the `_64` launcher
    /// and `n` of the argument check are both the API's `n`): what lets a return be
    /// compared with an earlier one in another function.
    pub fn outer_names(&self, i: usize) -> Rc<BTreeMap<String, String>> {
        if let Some(r) = self.renames.borrow().get(&i) {
            return r.clone();
        }
        // Cut cycles: a node being computed renames nothing.
        self.renames
            .borrow_mut()
            .insert(i, Rc::new(BTreeMap::new()));
        let n = &self.g.nodes[i];
        let mut agreed: Option<BTreeMap<String, String>> = None;
        let own = self.code.body(n).and_then(|(t, b)| self.head_of(n, &t, &b));
        let callers: BTreeSet<usize> = super::callers_of(self.g, i, false)
            .map(|e| e.from)
            .filter(|&c| self.reached(c))
            .collect();
        if let Some(own) = own.filter(|_| !callers.is_empty()) {
            for c in callers {
                let caller = &self.g.nodes[c];
                let Some((ct, cb)) = self.code.body(caller) else {
                    agreed = Some(BTreeMap::new());
                    break;
                };
                let Some(chead) = self.head_of(caller, &ct, &cb) else {
                    agreed = Some(BTreeMap::new());
                    break;
                };
                let up = self.outer_names(c);
                for site in self.sites(caller, n, &ct, &cb).iter() {
                    let mut got = BTreeMap::new();
                    for ((_, p), a) in own.params.iter().zip(&site.args) {
                        let a = a.trim();
                        // A plain parameter of the caller, or one cast: `(rocblas_int)n_64`.
                        let a = a
                            .strip_prefix('(')
                            .and_then(|r| r.split_once(')'))
                            .map(|(_, v)| v.trim())
                            .unwrap_or(a);
                        if chead.params.iter().any(|(_, q)| q == a) {
                            let outer = up.get(a).cloned().unwrap_or_else(|| a.to_string());
                            got.insert(p.clone(), outer);
                        }
                    }
                    agreed = Some(agree_same(agreed, got));
                }
            }
        }
        let r = Rc::new(agreed.unwrap_or_default());
        self.renames.borrow_mut().insert(i, r.clone());
        r
    }

    fn compute(&self, i: usize) -> (Env, bool) {
        let n = &self.g.nodes[i];
        let mut env = Env::default();
        let Some((t, b)) = self.code.body(n) else {
            return (env, true);
        };
        let Some(own) = self.head_of(n, &t, &b) else {
            return (env, true);
        };
        env.params = own.template.iter().map(|(p, _)| p.clone()).collect();
        // A member function of a class template (rocsolver_hybrid_storage<T, I, U>)
        // takes the class's parameters from the type its callers declare the object
        // with.
        let class = class_template_around(&t, t.offset(n.start_line.max(1)));
        if let Some((_, ps)) = &class {
            env.params.extend(ps.iter().flatten().cloned());
        }
        // Launches set a kernel's parameters as calls set a function's.
        let callers: Vec<usize> = super::callers_of(self.g, i, true)
            .map(|e| e.from)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut agreed: Option<BTreeMap<String, Value>> = None;
        // Each site's integer values, kept apart: sites that differ in two parameters
        // pass some pairs and not others (sygst calls trsm_lower left with
        // `operation_none` and right with `conjugate_transpose`, never left with
        // `conjugate_transpose`).
        let mut site_ints: Vec<BTreeMap<String, i64>> = Vec::new();
        let mut every_site_read = true;
        let mut reached = callers.is_empty();
        let siblings: Vec<Arc<Head>> = self
            .g
            .nodes
            .iter()
            .enumerate()
            .filter(|(j, m)| *j != i && m.name == n.name && m.kind == n.kind)
            .filter_map(|(_, m)| {
                let (mt, mb) = self.code.body(m)?;
                self.head_of(m, &mt, &mb)
            })
            .collect();
        let overloaded = !siblings.is_empty();
        let kernel_node = n.kind == crate::model::NodeKind::Kernel;
        for c in callers {
            let caller = &self.g.nodes[c];
            let Some((ct, cb)) = self.code.body(caller) else {
                agreed = Some(BTreeMap::new());
                reached = true;
                every_site_read = false;
                break;
            };
            if !self.reached(c) {
                continue;
            }
            let chead = self.head_of(caller, &ct, &cb);
            let aliases = self.pointer_aliases(&ct, &cb);
            let caller_copies = copies(&ct, &cb);
            let sites = self.sites(caller, n, &ct, &cb);
            if sites.is_empty() {
                agreed = Some(BTreeMap::new());
                reached = true;
                every_site_read = false;
                break;
            }
            let sites: Vec<Site> = sites
                .iter()
                .filter(|s| kernel_node || own.viable(s))
                .flat_map(|s| {
                    let before = ct.s.get(cb.open..s.at).unwrap_or("");
                    by_shared_test(s, before, &self.env_at(c, s.at))
                })
                .collect();
            for s in &sites {
                let cenv = self.env_at(c, s.at);
                // A call this API never makes (`if constexpr(rocblas_is_complex<T> &&
                // CONJ)` for a real type) sets nothing.
                let dead = cb
                    .conds_at(s.at)
                    .0
                    .iter()
                    .any(|k| super::eval::condition(k, &cenv) == super::eval::Truth::False);
                if dead {
                    continue;
                }
                // Where the graph holds several overloads of this name, one taking a
                // type other than the argument's is not the one called
                // (`rocblas_wavefront_reduce(rocblas_float_complex)` for a float sum:
                // the generic `T` overload is the exact match).
                if overloaded {
                    let exact = |h: &Head| {
                        h.element_matches(s, chead.as_deref(), &aliases, &cenv)
                            .iter()
                            .filter(|m| **m == Some(true))
                            .count()
                    };
                    if !own.takes_argument_types(s, chead.as_deref(), &aliases, &cenv) {
                        continue;
                    }
                    // Of two that fit, the one declared for the argument's own type is
                    // more specialized than a generic `T` one, and is the one called.
                    let mine = exact(&own);
                    if siblings.iter().any(|h| {
                        h.takes_argument_types(s, chead.as_deref(), &aliases, &cenv)
                            && exact(h) > mine
                    }) {
                        continue;
                    }
                    // One whose template parameter the arguments would make a value in
                    // one place and a pointer in another cannot be deduced, where another
                    // can (rocSOLVER's `rocblasCall_ger` taking `T* y` for a batched `y`).
                    let deducible =
                        |h: &Head| h.pointer_depths_agree(s, chead.as_deref(), &aliases, &cenv);
                    if !deducible(&own)
                        && siblings.iter().any(|h| {
                            h.takes_argument_types(s, chead.as_deref(), &aliases, &cenv)
                                && deducible(h)
                        })
                    {
                        continue;
                    }
                }
                // The graph may hold only the overload it expected for the API (pointer
                // arrays for a batched one), yet a call whose argument types are known
                // and cannot bind to it is not its call: larft passes its workspace
                // `T* F` to `rocblasCall_trmv<T>` for every API, so the batched
                // overload taking `const T* const* a` is never reached through it.
                // Depths that disagree rule it out only where the call writes its
                // template arguments (elsewhere an unresolved argument type could make
                // them agree); a parameter deeper than its argument's known type rules
                // it out whatever is deduced (larfb's `T*` workspace for trmm's
                // `T* const* B`).
                if !kernel_node
                    && (!s.template_args.is_empty()
                        && !own.pointer_depths_agree(s, chead.as_deref(), &aliases, &cenv)
                        || own.deeper_than_argument(s, chead.as_deref(), &aliases, &cenv))
                {
                    continue;
                }
                let caller_key = format!("{}:{}:{}", caller.file, caller.name, caller.line);
                let mut got = bind_site(
                    &own,
                    chead.as_deref(),
                    &caller_key,
                    &aliases,
                    s,
                    &cenv,
                    &env.params,
                );
                if let Some((name, ps)) = &class {
                    let args = class_arguments(&ct, &cb, s.at, name, ps, &cenv);
                    // The member's type tests on them (`bool constexpr is_strided =
                    // std::is_same<U, T*>::value || ...`) are decided per object: sterf's
                    // three storages differ in T and U, and all are strided.
                    let mut typed = Env {
                        values: args
                            .iter()
                            .map(|(p, ty)| (p.clone(), Value::Type(ty.clone())))
                            .collect(),
                        params: env.params.clone(),
                    };
                    for (local, test) in constexpr_flags(&t, &b) {
                        let v = match condition(&test, &typed) {
                            Truth::True => true,
                            Truth::False => false,
                            Truth::Open(_) => continue,
                        };
                        typed.values.insert(local.clone(), Value::Bool(v));
                        got.insert(local, Value::Bool(v));
                    }
                    got.extend(typed.values);
                }
                // Two parameters given one expression hold the same value (potf2 passes
                // dot `shiftA + idx2D(0, j, lda)` for both offsets, so `offsetx !=
                // offsety` is false there and the magnitude-squared kernel runs).
                for (k, ((_, p), a)) in own.params.iter().zip(&s.args).enumerate() {
                    let a = a.trim();
                    if a.is_empty() || a.contains("++") || a.contains("--") {
                        continue;
                    }
                    for ((_, q), b) in own.params.iter().zip(&s.args).skip(k + 1) {
                        if b.split_whitespace().eq(a.split_whitespace()) {
                            got.insert(format!("{HOLDS}{p} == {q}"), Value::Bool(true));
                            got.insert(format!("{HOLDS}not ({p} != {q})"), Value::Bool(true));
                        }
                    }
                }
                // An overload whose `enable_if` is false for what the call binds does
                // not exist for it (rocblas.hpp's real and complex `rocblasCall_*`).
                if !own.requires.is_empty() {
                    let bound = Env {
                        values: got.clone(),
                        params: env.params.clone(),
                    };
                    if own
                        .requires
                        .iter()
                        .any(|c| condition(c, &bound) == Truth::False)
                    {
                        continue;
                    }
                }
                reached = true;
                // What every path to the call has passed holds in the callee, in its
                // own names.
                let mut names: BTreeMap<&str, &str> = own
                    .params
                    .iter()
                    .zip(&s.args)
                    .filter_map(|((_, p), a)| Some((root_name(a)?, p.as_str())))
                    .collect();
                // A template value passed on by name is the same value under the
                // callee's name: trtri's `if(n <= NB) return rocblas_trtri_small<NB,
                // T>(...)` holds in trtri_small, whose `n > NB` then cannot return.
                for ((tp, is_value), a) in own.template.iter().zip(&s.template_args) {
                    let a = a.trim();
                    if *is_value && !a.is_empty() && a.bytes().all(is_ident) {
                        names.entry(a).or_insert(tp.as_str());
                    }
                }
                // What a reassignment rules out first: few, and sure.
                let mut held: Vec<String> = reassigned_away(&ct, &cb, s.at, &cenv);
                held.extend(
                    held_at(&ct, &cb, s.at, &cenv)
                        .into_iter()
                        .map(|c| folded(&c, &cenv)),
                );
                held.extend(self.checked_before(c, &ct, &cb, s.at));
                held.extend(constructed_fields(
                    &ct,
                    &cb,
                    s.at,
                    &s.args,
                    &self.code.constructors(&caller.lib),
                ));
                let caller_params: Vec<(String, String)> = chead
                    .as_deref()
                    .map(|h| h.params.clone())
                    .unwrap_or_default();
                for (local, p) in names.clone() {
                    if let Some(from) =
                        copied_from(&ct, &caller_copies, s.at, local, &caller_params, &held)
                    {
                        names.entry(from).or_insert(p);
                    }
                }
                for c in held.iter().take(32) {
                    if let Some(r) = renamed(c, &names) {
                        if let Some(n) = bound_by_value(&r, &got) {
                            got.insert(format!("{HOLDS}{n}"), Value::Bool(true));
                        }
                        got.insert(format!("{HOLDS}{r}"), Value::Bool(true));
                    }
                }
                for c in receiver_held(&ct, s.at, &held, &self.code.accessors(&caller.lib)) {
                    got.insert(format!("{HOLDS}{c}"), Value::Bool(true));
                }
                for ((ty, p), a) in own.params.iter().zip(&s.args) {
                    // The address of a named object is never null: trsm's
                    // template_mem passes `&w_x_tmp_size` and the others, so the size
                    // helper's `!w_x_tmp_size || ...` never returns (rocblas_trsm_
                    // kernels.hpp:1697, :1921-1925).
                    if ty.contains('*') && address_of_name(a) {
                        got.insert(format!("{HOLDS}{p}"), Value::Bool(true));
                        got.insert(format!("{HOLDS}{p} != nullptr"), Value::Bool(true));
                    }
                    // A null pointer passed, cast or not: larfg's 13-argument overload
                    // forwards `(S*)nullptr` as `beta`, so its `beta != nullptr` launch
                    // never runs for geql2 (rocauxiliary_larfg.hpp:258-262, :318).
                    if ty.contains('*') && null_pointer(a) {
                        for c in [
                            format!("not ({p} != nullptr)"),
                            format!("{p} == nullptr"),
                            format!("!{p}"),
                            format!("not ({p})"),
                        ] {
                            got.insert(format!("{HOLDS}{c}"), Value::Bool(true));
                        }
                    }
                    for c in argument_bounds(&ct, &cb, s.at, a, &held, p) {
                        got.insert(format!("{HOLDS}{c}"), Value::Bool(true));
                    }
                    for c in upper_bounds(&ct, &cb, s.at, a, p, &cenv) {
                        got.insert(format!("{HOLDS}{c}"), Value::Bool(true));
                    }
                    // A 32-bit value passed for a 64-bit parameter keeps its range
                    // (herk's `rocblas_int n` given gemm_64's `int64_t m_64`, which
                    // then takes its 32-bit path).
                    if is_int64(ty)
                        && arg_type(a, chead.as_deref(), &aliases, &cenv).as_deref()
                            == Some("int32_t")
                    {
                        got.insert(format!("{HOLDS}{p} <= {}", i32::MAX), Value::Bool(true));
                        got.insert(format!("{HOLDS}{p} >= {}", i32::MIN), Value::Bool(true));
                    }
                }
                // A parameter the tests on the way to the call pin to one value has it
                // at this site (hegs2 calls trsv with `uplo` inside `if(uplo ==
                // rocblas_fill_upper)`, roclapack_sygs2_hegs2.hpp:280-332), so the
                // sites' combinations pair it with what else they pass.
                let at_site = Env {
                    values: got.clone(),
                    params: BTreeSet::new(),
                };
                for (_, p) in &own.params {
                    if !got.contains_key(p) {
                        if let Some(v) = super::eval::only_value(p, &at_site) {
                            got.insert(p.clone(), Value::Int(v));
                        }
                    }
                }
                // The handle goes down with its pointer mode, where the caller set it.
                if own.params.iter().any(|(_, p)| p == "handle") {
                    if let Some(m) = cenv.values.get(POINTER_MODE) {
                        got.insert(POINTER_MODE.into(), m.clone());
                    }
                }
                let mine: BTreeMap<String, i64> = got
                    .iter()
                    .filter(|(k, _)| k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
                    .filter_map(|(k, v)| match v {
                        Value::Int(x) => Some((k.clone(), *x)),
                        _ => None,
                    })
                    .collect();
                // Names the caller passes on unchanged carry its own sites' combinations.
                let passed = super::eval::site_combinations(&cenv);
                if passed.is_empty() {
                    site_ints.push(mine.clone());
                }
                for combo in passed {
                    let mut m = mine.clone();
                    for (k, v) in combo {
                        if let Some(p) = names.get(k) {
                            m.entry(p.to_string()).or_insert(v);
                        }
                    }
                    site_ints.push(m);
                }
                agreed = Some(agree(agreed, got));
            }
        }
        env.values = agreed.unwrap_or_default();
        // An API whose prototype takes no 64-bit integer hands every function below it
        // sizes, leading dimensions, increments and batch counts that fit 32 bits, so
        // a 64-bit launcher's `dims_32bit` holds for it (ssymm's block loop gives
        // gemm_64 `nb`, sgesvd's trmm its own sub-blocks). Offsets, strides and sizes
        // in elements or bytes are products, and are left alone.
        if i > 1 && self.api_is_32bit() {
            for (ty, p) in self.params_of(i) {
                let lower = p.to_ascii_lowercase();
                let product = [
                    "shift", "offset", "stride", "size", "elem", "byte", "total", "len",
                ]
                .iter()
                .any(|w| lower.contains(w));
                if is_int64(&ty) && !product {
                    env.values
                        .insert(format!("{HOLDS}{p} <= {}", i32::MAX), Value::Bool(true));
                    env.values
                        .insert(format!("{HOLDS}{p} >= {}", i32::MIN), Value::Bool(true));
                }
            }
        }
        tracing::trace!(node = %n.name, every_site_read, sites = ?site_ints, "Site values.");
        if every_site_read {
            if let Some(sites) = site_combinations(&site_ints, &env.values) {
                env.values.insert(SITES.into(), Value::Type(sites));
            }
        }
        // Template arguments the compiler deduced for the instantiation this API
        // reaches stand above what the call sites' text gives.
        env.values
            .extend(self.code.compiler_view(self.g).template_values(i));
        if let Some(Value::Int(m)) = env.values.get(POINTER_MODE).cloned() {
            set_pointer_mode(&mut env, Some(m));
        }
        tracing::trace!(node = %n.name, reached, values = ?env.values, "Bound.");
        (env, reached)
    }
}

/// What every call site so far gives (`agreed`, `None` before the first) kept where
/// this one (`got`) gives the same; an integer the sites give different values
/// becomes the set of them (`?trans` = `"112,113"`), up to a few.
fn agree(
    agreed: Option<BTreeMap<String, Value>>,
    got: BTreeMap<String, Value>,
) -> BTreeMap<String, Value> {
    let Some(a) = agreed else {
        return got;
    };
    let mut out: BTreeMap<String, Value> = a
        .iter()
        .filter(|(k, v)| !k.starts_with(ONE_OF) && got.get(*k) == Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let names: BTreeSet<&str> = a
        .keys()
        .chain(got.keys())
        .map(|k| k.strip_prefix(ONE_OF).unwrap_or(k))
        .collect();
    for name in names {
        if out.contains_key(name) {
            continue;
        }
        let (Some(x), Some(y)) = (ints(&a, name), ints(&got, name)) else {
            continue;
        };
        let all: BTreeSet<i64> = x.union(&y).copied().collect();
        if all.len() <= 8 {
            let list: Vec<String> = all.iter().map(i64::to_string).collect();
            out.insert(format!("{ONE_OF}{name}"), Value::Type(list.join(",")));
        }
    }
    // What each site's held conditions say of a name's range, joined: the 64-bit
    // launcher's direct call passes `n_64 > 0`, its chunk loop `n >= 1`.
    // A site's known integer is a range of one (sgemv_64's batch count 1 through the
    // 32-bit shortcut beside its chunk loop's `batch_count <= 1`).
    let held = |m: &BTreeMap<String, Value>| -> Vec<String> {
        let mut out: Vec<String> = m
            .keys()
            .filter_map(|k| k.strip_prefix(HOLDS))
            .map(str::to_string)
            .collect();
        for (k, v) in m {
            if let (Value::Int(v), true) = (v, is_name(k)) {
                out.push(format!("{k} <= {v}"));
                out.push(format!("{k} >= {v}"));
            }
        }
        out
    };
    for c in super::eval::bounds_either(&held(&a), &held(&got)) {
        out.entry(format!("{HOLDS}{c}"))
            .or_insert(Value::Bool(true));
    }
    out
}

/// A site whose arguments pick between two values by one test the caller cannot
/// decide, as two sites: one per arm. trsm's `LEFT ? transA : none` and `LEFT ? none :
/// transA` then give gemm one operation `none` at each, which two independent sets of
/// values would not say. An argument that names a local set to such a choice counts
/// as the choice (syrk's `trans_orig` and `trans_opp`, rocblas_syrk_herk_kernels.cpp:95-102).
fn by_shared_test(s: &Site, before: &str, cenv: &Env) -> Vec<Site> {
    let written: Vec<String> = s
        .args
        .iter()
        .map(|a| {
            let a = a.trim();
            if !is_name(a) {
                return a.to_string();
            }
            local_initializer(before, a)
                .filter(|init| conditional_arms(init).is_some())
                .unwrap_or_else(|| a.to_string())
        })
        .collect();
    let arms: Vec<Option<(&str, &str, &str)>> =
        written.iter().map(|a| conditional_arms(a)).collect();
    let mut tests: BTreeMap<String, usize> = BTreeMap::new();
    for (t, _, _) in arms.iter().flatten() {
        *tests.entry(t.split_whitespace().collect()).or_default() += 1;
    }
    let Some(shared) = tests
        .into_iter()
        .filter(|(_, n)| *n >= 2)
        .map(|(t, _)| t)
        .find(|t| matches!(condition(t, cenv), Truth::Open(_)))
    else {
        return vec![s.clone()];
    };
    [true, false]
        .into_iter()
        .map(|holds| {
            let mut one = s.clone();
            for (a, arm) in one.args.iter_mut().zip(&arms) {
                if let Some((t, x, y)) = arm {
                    if t.split_whitespace().collect::<String>() == shared {
                        *a = if holds { x } else { y }.trim().to_string();
                    }
                }
            }
            one
        })
        .collect()
}

/// What the last assignment to `name` in `text` sets it to (`trans_orig =
/// rocblas_operation_none == trans_A ? ... : ...;`), the whole expression to its `;`.
fn local_initializer(text: &str, name: &str) -> Option<String> {
    let at = text
        .match_indices(name)
        .filter(|(k, _)| {
            let before = text[..*k].chars().next_back();
            let rest = text[k + name.len()..].trim_start();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '>')
                && rest.starts_with('=')
                && !rest.starts_with("==")
        })
        .map(|(k, _)| k)
        .last()?;
    let from = at + name.len() + text[at + name.len()..].find('=')? + 1;
    let end = from + statement_end(&text[from..])?;
    Some(text[from..end].trim().to_string())
}

/// `(test, then, else)` of an argument that is one conditional expression at its top
/// level (`LEFT ? transA : rocblas_operation_none`).
fn conditional_arms(a: &str) -> Option<(&str, &str, &str)> {
    let b = a.as_bytes();
    let (mut depth, mut question, mut nested) = (0i32, None, 0);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'?' if depth == 0 => match question {
                None => question = Some(i),
                Some(_) => nested += 1,
            },
            b':' if depth == 0
                && question.is_some()
                && b.get(i + 1) != Some(&b':')
                && (i == 0 || b[i - 1] != b':') =>
            {
                if nested > 0 {
                    nested -= 1;
                } else {
                    let q = question?;
                    return Some((a[..q].trim(), a[q + 1..i].trim(), a[i + 1..].trim()));
                }
            }
            _ => {}
        }
    }
    None
}

/// The combinations of values the call sites pass for the names they give different
/// integers (`side=141,trans=111;side=142,trans=113`; a name a site gives no integer
/// is left out of its combination), where two or more names differ and the combinations are
/// few; `None` where one set per name says all.
fn site_combinations(
    sites: &[BTreeMap<String, i64>],
    agreed: &BTreeMap<String, Value>,
) -> Option<String> {
    let differing: BTreeSet<&String> = sites
        .iter()
        .flat_map(|m| m.keys())
        .filter(|k| !agreed.contains_key(*k))
        .collect();
    if differing.len() < 2 {
        return None;
    }
    // A name a site gives no integer is left out of its combination: any value there.
    let combos: BTreeSet<String> = sites
        .iter()
        .map(|m| {
            differing
                .iter()
                .filter_map(|k| Some(format!("{k}={}", m.get(*k)?)))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    // A site that fixes none of them rules nothing out. Many sites may pass few
    // combinations (syr2k's block loop calls gemm at 18 sites with two).
    if combos.contains("") || combos.len() > 16 {
        return None;
    }
    Some(combos.into_iter().collect::<Vec<_>>().join(";"))
}

/// The integers `name` may be in `m`: its value, or the set a `?name` entry holds.
fn ints(m: &BTreeMap<String, Value>, name: &str) -> Option<BTreeSet<i64>> {
    match m.get(name) {
        Some(Value::Int(v)) => Some(BTreeSet::from([*v])),
        Some(_) => None,
        None => match m.get(&format!("{ONE_OF}{name}")) {
            Some(Value::Type(s)) => s.split(',').map(|v| v.parse().ok()).collect(),
            _ => None,
        },
    }
}

/// What every call site so far gives kept where this one gives the same.
fn agree_same<V: PartialEq>(
    agreed: Option<BTreeMap<String, V>>,
    got: BTreeMap<String, V>,
) -> BTreeMap<String, V> {
    match agreed {
        None => got,
        Some(a) => a
            .into_iter()
            .filter(|(k, v)| got.get(k) == Some(v))
            .collect(),
    }
}

/// Sets or forgets a name's value; either way a set of values it had is gone.
fn put(env: &mut Env, name: &str, v: Option<Value>) {
    env.values.remove(&format!("{ONE_OF}{name}"));
    match v {
        Some(v) => env.values.insert(name.to_string(), v),
        None => env.values.remove(name),
    };
}

/// Per function name: the defaults of each declaration the headers write with some
/// (`None` for a parameter without one), in parameter order.
pub type DeclaredDefaults = HashMap<String, Vec<Vec<Option<String>>>>;

/// The parameter defaults written on declarations (`f(int a, T* w = nullptr);`) in
/// the given `(path, text)` headers.
/// Per class: its constructors that set members straight from parameters, each as
/// its arity and `(parameter index, member)` pairs (tensile_host.hpp's
/// `RocblasContractionProblem(..., const TiA* const* batch_A, ...) : ..., batch_A(batch_A)`).
pub type Constructors = HashMap<String, Vec<(usize, Vec<(usize, String)>)>>;

/// The constructors with a member-initializer list in a library's headers.
pub fn constructors<'t>(headers: impl Iterator<Item = (&'t str, &'t str)>) -> Constructors {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"\b([A-Za-z_]\w*)\s*\(((?:[^;{}()]|\([^;{}()]*\))*)\)\s*:\s*((?:[A-Za-z_]\w*\s*\([^;{}()]*\)\s*,?\s*)+)\{",
        )
        .expect("static regex")
    });
    static INIT: OnceLock<Regex> = OnceLock::new();
    let init = INIT.get_or_init(|| {
        Regex::new(r"([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)\s*\)").expect("static regex")
    });
    let mut out = Constructors::new();
    for (_, text) in headers {
        for c in re.captures_iter(text) {
            let params: Vec<String> = split_args(&c[2], true)
                .iter()
                .map(|p| {
                    let decl = p.split('=').next().unwrap_or("");
                    decl.rsplit(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                        .find(|w| !w.is_empty())
                        .unwrap_or("")
                        .to_string()
                })
                .collect();
            let fields: Vec<(usize, String)> = init
                .captures_iter(&c[3])
                .filter_map(|m| {
                    let k = params.iter().position(|p| *p == m[2])?;
                    Some((k, m[1].to_string()))
                })
                .collect();
            if !fields.is_empty() {
                out.entry(c[1].to_string())
                    .or_default()
                    .push((params.len(), fields));
            }
        }
    }
    out
}

/// Member functions that only return one member, `bool is_x() const { return x; }`,
/// by name; a name two classes give different members is left out.
pub type Accessors = HashMap<String, String>;

/// The one-member accessors a library's headers define (handle.hpp's
/// `is_device_memory_size_query()` returns `device_memory_size_query`).
pub fn accessors<'t>(headers: impl Iterator<Item = (&'t str, &'t str)>) -> Accessors {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\b([A-Za-z_]\w*)\s*\(\s*\)\s*const\s*\{\s*return\s+([A-Za-z_]\w*)\s*;\s*\}")
            .expect("static regex")
    });
    let mut seen: HashMap<String, Option<String>> = HashMap::new();
    for (_, text) in headers {
        for c in re.captures_iter(text) {
            let member = c[2].to_string();
            seen.entry(c[1].to_string())
                .and_modify(|m| {
                    if m.as_deref() != Some(member.as_str()) {
                        *m = None;
                    }
                })
                .or_insert(Some(member));
        }
    }
    seen.into_iter()
        .filter_map(|(k, m)| Some((k, m?)))
        .collect()
}

/// What a member call's text before the callee's name holds once its `->` or `.` is
/// taken off (`( hD` of `( hD . init_async`); `None` for a call of no member.
fn receiver_before(before: &str) -> Option<&str> {
    let before = before.trim_end();
    before
        .strip_suffix("->")
        .or_else(|| before.strip_suffix('.'))
        .map(str::trim_end)
}

/// The conditions that hold at a member call `receiver->f(...)` restated in the
/// callee's own names, where they test the receiver only through accessors
/// (`handle->is_device_memory_size_query()` is `device_memory_size_query` inside
/// `handle->set_optimal_device_memory_size`).
fn receiver_held(t: &Text, at: usize, held: &[String], acc: &Accessors) -> Vec<String> {
    let Some(rest) = receiver_before(&t.s[..at]) else {
        return Vec::new();
    };
    let rest = rest.strip_suffix(')').unwrap_or(rest);
    let start = rest
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let receiver = &rest[start..];
    if receiver.is_empty() || acc.is_empty() || !held.iter().any(|c| c.contains(receiver)) {
        return Vec::new();
    }
    held.iter()
        .filter(|c| c.contains(receiver))
        .filter_map(|c| {
            let out = through_accessors(c, receiver, acc)?;
            // Only a condition on the receiver alone can be said in the callee.
            let only_members = out
                .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .filter(|w| w.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_'))
                .all(|w| acc.values().any(|m| m == w) || w == "not");
            (out != *c && only_members).then_some(out)
        })
        .collect()
}

/// `c` with each `receiver->f()` (or `(receiver)->f()`, `receiver.f()`) replaced by
/// the member accessor `f` returns; `None` where one is not an accessor.
fn through_accessors(c: &str, receiver: &str, acc: &Accessors) -> Option<String> {
    let b = c.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while let Some(k) = c[i..].find(receiver).map(|k| k + i) {
        let mut j = k + receiver.len();
        let bounded = (k == 0 || !is_ident(b[k - 1])) && (j >= b.len() || !is_ident(b[j]));
        let skip_ws = |mut p: usize| {
            while p < b.len() && b[p].is_ascii_whitespace() {
                p += 1;
            }
            p
        };
        let mut start = k;
        if bounded {
            if b.get(j) == Some(&b')') && c[..k].trim_end().ends_with('(') {
                j += 1;
                start = c[..k].trim_end().len() - 1;
            }
            j = skip_ws(j);
            let arrow = if c[j..].starts_with("->") {
                2
            } else {
                usize::from(c[j..].starts_with('.'))
            };
            if arrow > 0 {
                let name_at = skip_ws(j + arrow);
                let name_end = (name_at..b.len())
                    .find(|&p| !is_ident(b[p]))
                    .unwrap_or(b.len());
                let open = skip_ws(name_end);
                let close = skip_ws(open + 1);
                if name_end > name_at && b.get(open) == Some(&b'(') && b.get(close) == Some(&b')') {
                    out.push_str(&c[i..start]);
                    out.push_str(acc.get(&c[name_at..name_end])?);
                    i = close + 1;
                    continue;
                }
            }
        }
        out.push_str(&c[i..k + receiver.len()]);
        i = k + receiver.len();
    }
    out.push_str(&c[i..]);
    Some(out)
}

/// What a local built by a constructor of `ctors` before offset `at` holds of the
/// members it set from a literal, for each argument of a call that passes the local
/// (`problem.batch_A == 0` where gemm_tensile.hpp:188 builds the strided problem with
/// `nullptr` for `batch_A`).
fn constructed_fields(
    t: &Text,
    b: &Body,
    at: usize,
    args: &[String],
    ctors: &Constructors,
) -> Vec<String> {
    let mut out = Vec::new();
    if ctors.is_empty() {
        return out;
    }
    let text = &t.s[b.open..at];
    for a in args {
        let local = a.trim();
        if !local.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || !local.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        {
            continue;
        }
        // The last `Class<...> local{` before the call, read backwards from each
        // `local {` (no regex: this runs for every argument of every call).
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let bytes = text.as_bytes();
        let decl = text
            .match_indices(local)
            .filter(|(k, _)| *k == 0 || !word(bytes[k - 1]))
            .filter_map(|(k, _)| {
                let after = &text[k + local.len()..];
                let open = k + local.len() + (after.len() - after.trim_start().len());
                (bytes.get(open) == Some(&b'{')).then_some((k, open))
            })
            .filter_map(|(k, open)| {
                let mut before = text[..k].trim_end();
                if before.ends_with('>') {
                    let mut depth = 0i32;
                    let lt = before.char_indices().rev().find_map(|(i, ch)| {
                        depth += i32::from(ch == '>') - i32::from(ch == '<');
                        (depth == 0).then_some(i)
                    })?;
                    before = before[..lt].trim_end();
                }
                let class_at = before
                    .rfind(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .map_or(0, |i| i + 1);
                let class = &before[class_at..];
                ctors.get(class).map(|list| (open, list))
            })
            .last();
        let Some((open, list)) = decl else {
            continue;
        };
        let close = Scanner::new(text).matching(open);
        if close <= open || close >= text.len() || writes_after(text, local, close, false) {
            continue;
        }
        let given = split_args(&text[open + 1..close], true);
        let fits: Vec<_> = list.iter().filter(|(n, _)| *n == given.len()).collect();
        let [(_, fields)] = fits.as_slice() else {
            continue;
        };
        for (k, member) in fields {
            let v = given[*k].trim();
            let literal = if v == "nullptr" {
                Some(0)
            } else {
                v.parse::<i64>().ok()
            };
            if let Some(v) = literal {
                out.push(format!("{local}.{member} == {v}"));
            }
        }
    }
    out
}

pub fn declared_defaults<'t>(
    headers: impl Iterator<Item = (&'t str, &'t str)>,
) -> DeclaredDefaults {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\b([A-Za-z_]\w*)\s*\(((?:[^;{}()]|\([^;{}()]*\))*=(?:[^;{}()]|\([^;{}()]*\))*)\)\s*(?:const\s*)?(?:noexcept\s*)?;")
            .expect("static regex")
    });
    let mut out = DeclaredDefaults::new();
    for (_, text) in headers {
        for c in re.captures_iter(text) {
            let name = &c[1];
            if matches!(
                name,
                "if" | "while" | "for" | "switch" | "return" | "sizeof"
            ) {
                continue;
            }
            let mut defaults = Vec::new();
            let mut declaration = true;
            for p in split_args(&c[2], true) {
                match p.split_once('=') {
                    // `type name = value`: a call's `f(x = 1)` has no type.
                    Some((decl, value))
                        if !value.starts_with('=')
                            && !decl.ends_with(['!', '<', '>'])
                            && decl.split_whitespace().count() >= 2 =>
                    {
                        defaults.push(Some(value.trim().to_string()));
                    }
                    Some(_) => declaration = false,
                    None => defaults.push(None),
                }
            }
            if declaration {
                out.entry(name.to_string()).or_default().push(defaults);
            }
        }
    }
    out
}

/// A function's head: template parameters `(name, is_value)` and parameters
/// `(type, name)`.
#[derive(Clone)]
struct Head {
    template: Vec<(String, bool)>,
    params: Vec<(String, String)>,
    /// Per parameter: the default value written for it, if any.
    defaults: Vec<Option<String>>,
    /// Template value parameters no call can leave out: no default, and named in no
    /// parameter's type (so nothing deduces them).
    required_template_args: usize,
    /// Per template parameter: its default, where one is written and no function
    /// parameter's type could deduce it instead.
    template_defaults: Vec<Option<String>>,
    /// What the template parameters require through `enable_if`.
    requires: Vec<String>,
    variadic: bool,
}

impl Head {
    /// Can this call site call this definition? A call that writes no template
    /// arguments where nothing could deduce one, passes more arguments than it has
    /// parameters, or a number for a type parameter, is the call of another overload
    /// of the same name. (Too few proves
    /// nothing: defaults may be written on a declaration in another header.)
    fn viable(&self, s: &Site) -> bool {
        // A number written where this definition takes a type (`f<16>(...)` against
        // `template <typename T> f`) names another overload.
        let number_for_type =
            self.template
                .iter()
                .zip(&s.template_args)
                .any(|((_, is_value), a)| {
                    !is_value && a.trim().starts_with(|c: char| c.is_ascii_digit())
                });
        // And a type where it takes a value (`trsm_workspace_size<T>(...)` against
        // `template <rocblas_int BLOCK, bool BATCHED, typename T>`).
        let type_for_number = self
            .template
            .iter()
            .zip(&s.template_args)
            .any(|((_, is_value), a)| *is_value && names_a_type(a));
        (self.required_template_args == 0 || !s.template_args.is_empty())
            && (self.variadic || s.args.len() <= self.params.len())
            && !number_for_type
            && !type_for_number
    }
}

impl Head {
    /// Does every parameter declared with a type of its own (no template parameter of
    /// this definition in it) take an argument whose type, where known, is that type?
    /// Only element types are told apart: integers and typedefs of them convert.
    fn takes_argument_types(
        &self,
        s: &Site,
        caller: Option<&Head>,
        aliases: &BTreeMap<String, String>,
        cenv: &Env,
    ) -> bool {
        self.element_matches(s, caller, aliases, cenv)
            .iter()
            .all(|m| *m != Some(false))
    }

    /// Do the arguments whose types are known give each template parameter one pointer
    /// depth? `const T* alpha` against `const float*` makes `T` a value; `T* y` against
    /// `float* const*` would make it a pointer.
    fn pointer_depths_agree(
        &self,
        s: &Site,
        caller: Option<&Head>,
        aliases: &BTreeMap<String, String>,
        cenv: &Env,
    ) -> bool {
        let depth = |t: &str| t.matches('*').count() as i64;
        let mut seen: BTreeMap<&str, i64> = BTreeMap::new();
        for ((ty, _), a) in self.params.iter().zip(&s.args) {
            let Some(p) = self.type_parameter_of(ty) else {
                continue;
            };
            let Some(at) = arg_type(a, caller, aliases, cenv).filter(|t| !t.contains(HOLE_MARK))
            else {
                continue;
            };
            let d = depth(&at) - depth(ty);
            tracing::trace!(param = %ty, argument = %a, argument_type = %at, d, "Depth.");
            if *seen.entry(p).or_insert(d) != d {
                return false;
            }
        }
        true
    }

    /// The type parameter P of this definition that a parameter type written
    /// `[const] P [const]* ...` (no reference) names.
    fn type_parameter_of(&self, ty: &str) -> Option<&str> {
        let words: Vec<&str> = ty
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty() && *w != "const")
            .collect();
        let [w] = words.as_slice() else {
            return None;
        };
        if ty.contains('&') {
            return None;
        }
        self.template
            .iter()
            .find(|(p, is_value)| p == w && !is_value)
            .map(|(p, _)| p.as_str())
    }

    /// Does some parameter written `[const] P [const]* ...` (P a type parameter of
    /// this definition) take more levels of pointer than its argument's known type
    /// has? No P can make `T* const* B` take larfb's `T* tmptr` (rocsolver's
    /// rocblas.hpp:1530 against rocauxiliary_larfb.hpp:323-366).
    fn deeper_than_argument(
        &self,
        s: &Site,
        caller: Option<&Head>,
        aliases: &BTreeMap<String, String>,
        cenv: &Env,
    ) -> bool {
        let depth = |t: &str| (t.matches('*').count() + t.matches('[').count()) as i64;
        self.params.iter().zip(&s.args).any(|((ty, _), a)| {
            if self.type_parameter_of(ty).is_none() {
                return false;
            }
            arg_type(a, caller, aliases, cenv)
                .filter(|t| !t.contains(HOLE_MARK) && !t.contains("nullptr"))
                .is_some_and(|at| depth(&at) < depth(ty))
        })
    }

    /// Per parameter: `Some(same)` where it is declared with an element type of its
    /// own (`rocblas_float_complex val`) and the argument's element type is known,
    /// whether the two are one type; `None` otherwise.
    fn element_matches(
        &self,
        s: &Site,
        caller: Option<&Head>,
        aliases: &BTreeMap<String, String>,
        cenv: &Env,
    ) -> Vec<Option<bool>> {
        const ELEMENTS: [&str; 6] = [
            "float",
            "double",
            "rocblas_complex_num<float>",
            "rocblas_complex_num<double>",
            "_Float16",
            "rocblas_bfloat16",
        ];
        let plain = |t: &str| -> String {
            t.replace("const", " ")
                .replace('&', " ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        self.params
            .iter()
            .zip(&s.args)
            .map(|((ty, _), a)| {
                let generic = ty
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|w| self.template.iter().any(|(p, _)| p == w));
                if generic {
                    return None;
                }
                let at = arg_type(a, caller, aliases, cenv).filter(|t| !t.contains(HOLE_MARK))?;
                let declared = resolve_type(ty, cenv).unwrap_or_else(|| ty.clone());
                let (p, q) = (plain(&declared), plain(&at));
                if !ELEMENTS.contains(&p.as_str()) || !ELEMENTS.contains(&q.as_str()) {
                    return None;
                }
                if p != q {
                    tracing::trace!(param = %ty, argument = %a, argument_type = %at, "Another overload.");
                }
                Some(p == q)
            })
            .collect()
    }
}

/// Is a template argument as written a type: an element type, or a type parameter
/// named as the libraries name theirs (`T`, `Ti`, `To`, `S`)?
fn names_a_type(a: &str) -> bool {
    let a = a
        .trim()
        .trim_start_matches("const ")
        .trim_end_matches('*')
        .trim();
    matches!(a, "T" | "Ti" | "To" | "Tc" | "Tex" | "S" | "U" | "V")
        || super::eval::is_element_type(a)
}

/// What `deduce` leaves in a type it could not read whole.
const HOLE_MARK: char = '\u{1}';

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The head of the function whose body is `b`, its name written at or after `from`,
/// its definition (with any `template <...>`) starting at `def_start`.
fn head(t: &Text, b: &Body, name: &str, from: usize, def_start: usize) -> Option<Head> {
    let s = t.s.as_bytes();
    let hay = &t.s[from.min(b.open)..b.open];
    let base = from.min(b.open);
    let name_at = hay.match_indices(name).map(|(k, _)| base + k).find(|&k| {
        let j = k + name.len();
        let glued_before = k > 0 && is_ident(s[k - 1]);
        let glued_after = j < s.len() && is_ident(s[j]);
        !glued_before && !glued_after
    })?;
    let sc = Scanner::new(&t.s);
    let mut p = name_at + name.len();
    while p < b.open && s[p].is_ascii_whitespace() {
        p += 1;
    }
    if s.get(p) == Some(&b'<') {
        p = sc.matching(p) + 1;
        while p < b.open && s[p].is_ascii_whitespace() {
            p += 1;
        }
    }
    if s.get(p) != Some(&b'(') {
        return None;
    }
    let close = sc.matching(p);
    if close >= b.open {
        return None;
    }
    let written = split_args(&t.s[p + 1..close], true);
    let variadic = written.iter().any(|d| d.contains("..."));
    let (params, defaults): (Vec<(String, String)>, Vec<Option<String>>) = written
        .into_iter()
        .filter_map(|d| {
            let (decl, default) = match d.split_once('=') {
                Some((decl, default)) => (decl, Some(default.trim().to_string())),
                None => (d.as_str(), None),
            };
            // A parameter declared as an array is a pointer: `float* const A[]` is a
            // `float* const*` (the batched APIs' pointer arrays).
            let mut d = decl.trim().to_string();
            let mut arrays = 0;
            while let Some(rest) = d.strip_suffix("[]") {
                d = rest.trim_end().to_string();
                arrays += 1;
            }
            let k = d.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            let (ty, nm) = (d[..=k].trim(), d[k + 1..].trim());
            let ty = format!("{ty}{}", "*".repeat(arrays));
            (!nm.is_empty() && !ty.is_empty()).then(|| ((ty, nm.to_string()), default))
        })
        .unzip();
    let listed = super::template_param_list(t, def_start.min(name_at), name_at);
    let deducible = |name: &str| {
        params.iter().any(|(ty, _): &(String, String)| {
            ty.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == name)
        })
    };
    // Template arguments are given in order: the ones a call must write are those up
    // to the last that can be neither defaulted nor deduced.
    let required_template_args = listed
        .iter()
        .rposition(|(name, is_value, default)| *is_value && default.is_none() && !deducible(name))
        .map_or(0, |k| k + 1);
    let template_defaults = listed
        .iter()
        .map(|(name, _, default)| default.clone().filter(|_| !deducible(name)))
        .collect();
    let template = listed
        .into_iter()
        .map(|(name, is_value, _)| (name, is_value))
        .collect();
    let requires = super::enable_if_conditions(t, def_start.min(name_at), name_at);
    Some(Head {
        template,
        params,
        defaults,
        required_template_args,
        template_defaults,
        requires,
        variadic,
    })
}

/// Calls of `callee` in a body: `callee<...>(...)` or `callee(...)`.
fn call_sites(t: &Text, b: &Body, callee: &str) -> Vec<Site> {
    let s = t.s.as_bytes();
    let sc = Scanner::new(&t.s);
    let mut out = Vec::new();
    for (k, _) in t.s[b.open..b.close].match_indices(callee) {
        let i = b.open + k;
        let j = i + callee.len();
        if (i > 0 && is_ident(s[i - 1])) || (j < s.len() && is_ident(s[j])) {
            continue;
        }
        let mut p = j;
        while p < b.close && s[p].is_ascii_whitespace() {
            p += 1;
        }
        let mut template_args = Vec::new();
        if s.get(p) == Some(&b'<') {
            let c = sc.matching(p);
            if c >= b.close {
                continue;
            }
            template_args = split_args(&t.s[p + 1..c], true);
            p = c + 1;
            while p < b.close && s[p].is_ascii_whitespace() {
                p += 1;
            }
        }
        if s.get(p) != Some(&b'(') {
            continue;
        }
        let c = sc.matching(p);
        if c >= b.close {
            continue;
        }
        out.push(Site {
            at: i,
            template_args,
            args: split_args(&t.s[p + 1..c], false),
        });
    }
    out
}

/// The class template whose body holds offset `at` of `t`: its name and its
/// parameters in order (`None` for one without a name, as an `enable_if_t<...> = 0`).
fn class_template_around(t: &Text, at: usize) -> Option<(String, Vec<Option<String>>)> {
    static HEAD: OnceLock<Regex> = OnceLock::new();
    let head = HEAD.get_or_init(|| Regex::new(r"\btemplate\s*<").expect("static regex"));
    let sc = Scanner::new(&t.s);
    let s = t.s.as_bytes();
    let before = &t.s[..at.min(t.s.len())];
    for m in head.find_iter(before).collect::<Vec<_>>().into_iter().rev() {
        let open = m.end() - 1;
        let close = sc.matching(open);
        if close >= at {
            continue;
        }
        let rest = &t.s[close + 1..at];
        let decl = rest.trim_start();
        let Some(after) = decl
            .strip_prefix("struct")
            .or_else(|| decl.strip_prefix("class"))
            .filter(|r| r.starts_with(char::is_whitespace))
        else {
            continue;
        };
        let name: String = after
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The body opens before `at` and closes after it.
        let Some(brace) = rest.find(['{', ';']).map(|k| close + 1 + k) else {
            continue;
        };
        if s[brace] != b'{' || sc.matching(brace) < at || name.is_empty() {
            continue;
        }
        let params = split_args(&t.s[open + 1..close], true)
            .iter()
            .map(|p| {
                let p = p.split('=').next().unwrap_or_default().trim();
                let mut words = p.split_whitespace();
                let kind = words.next()?;
                let name = words.next_back()?;
                (matches!(kind, "typename" | "class")
                    || matches!(kind, "int" | "bool" | "size_t" | "rocblas_int"))
                .then(|| name.trim_start_matches("...").to_string())
                .filter(|n| n.chars().all(|c| c.is_alphanumeric() || c == '_'))
            })
            .collect();
        return Some((name, params));
    }
    None
}

/// The `constexpr bool` locals of a body and the tests that define them, in order.
fn constexpr_flags(t: &Text, b: &Body) -> Vec<(String, String)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\b(?:static\s+)?(?:bool\s+constexpr|constexpr\s+bool)\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);")
            .expect("static regex")
    });
    re.captures_iter(&t.s[b.open..b.close])
        .map(|c| (c[1].to_string(), c[2].trim().to_string()))
        .collect()
}

/// The class template's arguments at a member call `obj.f(...)` or `obj->f(...)` at
/// `at`, read off the declaration of `obj` before it in the caller's body
/// (`rocsolver_hybrid_storage<T, rocblas_int, U> hD;`, rocauxiliary_sterf.hpp:410),
/// each resolved in the caller's environment; those it cannot resolve are left out.
fn class_arguments(
    t: &Text,
    b: &Body,
    at: usize,
    class: &str,
    params: &[Option<String>],
    env: &Env,
) -> Vec<(String, String)> {
    let Some(receiver) = receiver_before(&t.s[b.open..at]).map(super::trailing_word) else {
        return Vec::new();
    };
    if receiver.is_empty() {
        return Vec::new();
    }
    let Ok(decl) = Regex::new(&format!(r"\b{}\s*<", regex::escape(class))) else {
        return Vec::new();
    };
    let sc = Scanner::new(&t.s);
    let body = &t.s[b.open..at];
    for m in decl.find_iter(body).collect::<Vec<_>>().into_iter().rev() {
        let open = b.open + m.end() - 1;
        let close = sc.matching(open);
        if close >= at {
            continue;
        }
        let after = t.s[close + 1..at].trim_start();
        let named = after
            .strip_prefix(receiver)
            .is_some_and(|r| r.trim_start().starts_with([';', '(', '{', '=', ',']));
        if !named {
            continue;
        }
        return params
            .iter()
            .zip(split_args(&t.s[open + 1..close], true))
            .filter_map(|(p, a)| Some((p.clone()?, super::eval::resolve_type(a.trim(), env)?)))
            .collect();
    }
    Vec::new()
}

/// Launches of `kernel` in a body: `hipLaunchKernelGGL((kernel<...>), grid, block, lds,
/// stream, args...)` or `kernel<...><<<grid, block, lds, stream>>>(args...)`.
fn launch_sites(t: &Text, b: &Body, kernel: &str) -> Vec<Site> {
    let sc = Scanner::new(&t.s);
    let mut out = Vec::new();
    let body = &t.s[b.open..b.close];
    for (k, _) in body.match_indices("hipLaunchKernelGGL") {
        let p = b.open + k + "hipLaunchKernelGGL".len();
        let Some(open) = t.s[p..b.close].find('(').map(|o| p + o) else {
            continue;
        };
        let close = sc.matching(open);
        if close >= b.close {
            continue;
        }
        let args = split_args(&t.s[open + 1..close], false);
        if args.len() < 5 || !super::names(&args[0], kernel) {
            continue;
        }
        let kexpr = args[0].trim_start_matches('(').trim_end_matches(')');
        out.push(Site {
            at: b.open + k,
            template_args: super::kernel_template_args(kexpr),
            args: args[5..].to_vec(),
        });
    }
    for (k, _) in body.match_indices("<<<") {
        let at = b.open + k;
        let head = &t.s[b.open..at];
        let Some(kpos) = head.rfind(kernel) else {
            continue;
        };
        let kexpr = &head[kpos..];
        if !super::names(kexpr, kernel) || kexpr.contains(';') {
            continue;
        }
        let Some(end) = t.s[at..b.close].find(">>>").map(|e| at + e + 3) else {
            continue;
        };
        let Some(open) = t.s[end..b.close]
            .find(|c: char| !c.is_whitespace())
            .map(|o| end + o)
            .filter(|&o| t.s.as_bytes()[o] == b'(')
        else {
            continue;
        };
        let close = sc.matching(open);
        if close >= b.close {
            continue;
        }
        out.push(Site {
            at: b.open + kpos,
            template_args: super::kernel_template_args(kexpr.trim()),
            args: split_args(&t.s[open + 1..close], false),
        });
    }
    out
}

/// What one call site gives the callee's parameters.
fn bind_site(
    callee: &Head,
    caller: Option<&Head>,
    caller_key: &str,
    aliases: &BTreeMap<String, String>,
    s: &Site,
    cenv: &Env,
    params: &BTreeSet<String>,
) -> BTreeMap<String, Value> {
    let mut got = BTreeMap::new();
    // Which object each pointer parameter is, where the caller passes one of its own
    // parameters (cast or not): two parameters given the same one are the same
    // object (rocSOLVER's trmm passes B as both input and output, so rocBLAS's
    // `dB == dC` holds and its out-of-place path is not taken).
    for ((_, name), a) in callee.params.iter().zip(&s.args) {
        let Some(root) = root_name(a) else {
            continue;
        };
        let token = cenv
            .values
            .get(&format!("{IDENTITY}{root}"))
            .cloned()
            .or_else(|| {
                caller?
                    .params
                    .iter()
                    .any(|(_, n)| n == root)
                    .then(|| Value::Type(format!("{IDENTITY}{caller_key}:{root}")))
            });
        if let Some(t) = token {
            got.insert(format!("{IDENTITY}{name}"), t);
        }
    }
    for ((p, is_value), a) in callee.template.iter().zip(&s.template_args) {
        let v = if *is_value {
            value(a, cenv)
        } else {
            resolve_type(a, cenv).map(Value::Type)
        };
        if let Some(v) = v {
            got.insert(p.clone(), v);
        }
    }
    // Values first, then deduced types: a type pattern may name a parameter written
    // explicitly at the site.
    for ((ty, name), a) in callee.params.iter().zip(&s.args) {
        // A truth value is a flag's value, not a number's: `k_64` held nonzero past
        // `if(k_64 == 0 || ...)` is no value for `int64_t k` (rocblas_gemm_kernels_64.cpp:117-136).
        let flag_param = ty.contains("bool")
            || callee
                .template
                .iter()
                .any(|(p, is_value)| !is_value && ty.split_whitespace().any(|w| w == p));
        if let Some(v) = value(a, cenv).filter(|v| flag_param || !matches!(v, Value::Bool(_))) {
            got.insert(name.clone(), v);
        } else if let Some(set) = cenv.values.get(&format!("{ONE_OF}{}", a.trim())) {
            got.insert(format!("{ONE_OF}{name}"), set.clone());
        }
        // What a pointer to const points to, where known: `&one` for a local
        // `T one = 1`, or a pointer parameter passed on whose target the caller knows.
        let a = a.trim();
        if !(ty.contains("const") && ty.contains('*')) {
            continue;
        }
        let pointee = match a.strip_prefix('&') {
            Some(local) => cenv
                .values
                .get(&format!("&{}", local.trim()))
                .or_else(|| cenv.values.get(local.trim())),
            None => cenv.values.get(&format!("*{a}")),
        };
        if let Some(v @ Value::Int(_)) = pointee {
            got.insert(format!("*{name}"), v.clone());
        }
    }
    // A parameter the call leaves out takes its default (`I* permut_idx = nullptr`).
    for ((_, name), d) in callee
        .params
        .iter()
        .zip(&callee.defaults)
        .skip(s.args.len())
    {
        if let Some(v) = d.as_deref().and_then(|d| value(d, &Env::default())) {
            got.insert(name.clone(), v);
        }
    }
    for ((ty, _), a) in callee.params.iter().zip(&s.args) {
        let Some(arg_ty) = arg_type(a, caller, aliases, cenv) else {
            continue;
        };
        deduce(ty, &arg_ty, params, &mut got);
    }
    // A template argument the call leaves out, that nothing deduces, takes its default
    // (`bool COMPLEX = rocblas_is_complex<T>` once `T` is known).
    for ((p, is_value), d) in callee
        .template
        .iter()
        .zip(&callee.template_defaults)
        .skip(s.template_args.len())
    {
        let Some(d) = d.as_deref().filter(|_| !got.contains_key(p)) else {
            continue;
        };
        let known = Env {
            values: got.clone(),
            params: params.clone(),
        };
        let v = if *is_value {
            value(d, &known)
        } else {
            resolve_type(d, &known).map(Value::Type)
        };
        if let Some(v) = v {
            got.insert(p.clone(), v);
        }
    }
    got
}

/// Conditions that hold at offset `at` of a body, in the caller's names: those around
/// it (and what stays open of each), the negation of the condition of each earlier
/// `return` that stands alone under it (`if(n_64 <= 0 || ...) { ...; return ...; }`),
/// and what held on entry to the caller.
/// Values a parameter can no longer have at `at` because the code reassigned it away
/// from them: `if(!rocblas_is_complex<T> && transA == rocblas_operation_conjugate_transpose)
/// transA = rocblas_operation_transpose;` (rocblas_trsm_kernels.hpp:3753-3754) makes
/// `transA != rocblas_operation_conjugate_transpose` hold after it for a real type,
/// whichever way the test goes. Only an `if` in a block that holds the call counts (one
/// in a branch the call is not in may not have run), and only where the rest of its
/// test is true for the API.
fn reassigned_away(t: &Text, b: &Body, at: usize, cenv: &Env) -> Vec<String> {
    static R: OnceLock<Regex> = OnceLock::new();
    let r = R.get_or_init(|| {
        Regex::new(r"\bif\s*\(([^{};]*)\)\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*;")
            .expect("static regex")
    });
    let (from, to) = (b.open.min(at), at.min(t.s.len()));
    let text = &t.s[from..to];
    let depth_at = |k: usize| -> i64 {
        text[..k]
            .bytes()
            .map(|c| match c {
                b'{' => 1,
                b'}' => -1,
                _ => 0,
            })
            .sum()
    };
    let mut out = Vec::new();
    for c in r.captures_iter(text) {
        let (whole, test, p, v) = (c.get(0).expect("match"), &c[1], &c[2], &c[3]);
        // The call sits in the `if`'s block or deeper: the block never closes between.
        let d = depth_at(whole.start());
        let mut depth = d;
        let closes = text[whole.end()..].bytes().any(|ch| {
            match ch {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            depth < d
        });
        if closes {
            continue;
        }
        let parts: Vec<&str> = test.split("&&").map(str::trim).collect();
        let is_p = |x: &str| {
            x.split_once("==")
                .filter(|(l, r)| l.trim() == p && !r.contains('='))
                .map(|(_, r)| r.trim().to_string())
        };
        let Some(k) = parts.iter().position(|x| is_p(x).is_some()) else {
            continue;
        };
        let away = is_p(parts[k]).unwrap_or_default();
        if away == v || !is_enumerator(&away) {
            continue;
        }
        let rest_true = parts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != k)
            .all(|(_, x)| matches!(condition(x, cenv), Truth::True));
        if rest_true {
            out.push(format!("{p} != {away}"));
            out.push(format!("not ({p} == {away})"));
        }
    }
    out
}

fn held_at(t: &Text, b: &Body, at: usize, cenv: &Env) -> Vec<String> {
    let branchless = |c: &str| is_branch_header(c);
    let mut out = Vec::new();
    let (conds, _) = b.conds_at(at);
    for c in conds.iter().filter(|c| !branchless(c)) {
        out.push(c.clone());
        if let Truth::Open(r) = condition(c, cenv) {
            if r != *c {
                out.push(r);
            }
        }
        // A local test named here goes down as the test (`fallback`).
        if let Some(e) = super::eval::expanded(c, cenv) {
            out.push(e);
        }
    }
    for c in super::returned_tests(t, b, at) {
        if let Truth::Open(r) = condition(c, cenv) {
            out.push(super::negation(c));
            if r != *c {
                out.push(super::negation(&r));
            }
        }
    }
    out.extend(chunk_sizes(t, b, at));
    out.extend(
        cenv.values
            .keys()
            .filter_map(|k| k.strip_prefix(HOLDS))
            .map(str::to_string),
    );
    out
}

/// The conditions under which a check function returns a status other than
/// `rocblas_status_continue`, in order, up to the first return that may be
/// `continue` under a condition (past it, a test is reached only on some paths).
fn status_returns(t: &Text, b: &Body) -> Vec<String> {
    let mut out = Vec::new();
    for (ret, conds) in b.returns_before(&t.s, b.close) {
        let value = t.s[ret.start..ret.end]
            .trim()
            .trim_start_matches("return")
            .trim()
            .trim_end_matches(';')
            .trim();
        let plain = conds
            .iter()
            .all(|c| !(is_branch_header(c) || c.starts_with("constexpr ")));
        let literal = value.starts_with("rocblas_status_") && value.bytes().all(is_ident);
        if !literal || value == "rocblas_status_continue" || !plain || conds.is_empty() {
            break;
        }
        let parts: Vec<String> = conds
            .iter()
            .map(|c| {
                if conds.len() > 1 && c.contains("||") {
                    format!("({c})")
                } else {
                    c.clone()
                }
            })
            .collect();
        out.push(parts.join(" && "));
    }
    out
}

/// The caller parameter `p` a local is a copy of (`int32_t n = n_64;`), where neither
/// is written again before offset `at`: what holds of `p` holds of the local. A copy
/// into a narrower type is one only where something at `at` bounds `p` from above.
fn copied_from<'t>(
    t: &'t Text,
    copies: &[Copy],
    at: usize,
    local: &str,
    caller_params: &[(String, String)],
    held: &[String],
) -> Option<&'t str> {
    let copy = copies.iter().rfind(|c| c.local == local && c.end <= at)?;
    let from = t.s.get(copy.from.clone())?;
    let (pty, _) = caller_params.iter().find(|(_, n)| n == from)?;
    let same_type = pty.split_whitespace().last() == Some(copy.ty.as_str());
    let bounded = held
        .iter()
        .any(|h| h.contains(&format!("{from} <")) || h.contains(&format!("not ({from} >")));
    let unwritten = |n: &str| !written_after_declaration(&t.s[..at], n, copy.end);
    ((same_type || bounded) && unwritten(local) && unwritten(from)).then_some(from)
}

/// A declaration `ty local = from;` in a body.
struct Copy {
    ty: String,
    local: String,
    from: std::ops::Range<usize>,
    end: usize,
}

/// The declarations in body `b` that copy a name.
fn copies(t: &Text, b: &Body) -> Vec<Copy> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?:^|[;{}])\s*(?:const\s+)?([\w:]+)\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*;")
            .expect("static regex")
    });
    let found: Vec<Copy> = re
        .captures_iter(&t.s[b.open..b.close])
        .filter_map(|m| {
            let from = m.get(3)?;
            Some(Copy {
                ty: m[1].to_string(),
                local: m[2].to_string(),
                from: b.open + from.start()..b.open + from.end(),
                end: b.open + m.get(0)?.end(),
            })
        })
        .collect();
    found
}

/// `v >= 1` for each local `v = std::min(x - i, K)` (cast or not) set inside a loop
/// `for(i = ...; i < x; i += K)` around offset `at`: the loop runs only while `i < x`,
/// and it ends only if `K` is positive. This is how the 64-bit launchers cut a
/// problem into chunks for the 32-bit ones (rocblas_dot_kernels_64.cpp:97-110).
fn chunk_sizes(t: &Text, b: &Body, at: usize) -> Vec<String> {
    static HEAD: OnceLock<Regex> = OnceLock::new();
    let head = HEAD.get_or_init(|| {
        Regex::new(r"^loop: for \([^;]*;\s*(\w+)\s*<\s*(\w+)\s*;([^;]*)\)$").expect("static regex")
    });
    static MIN: OnceLock<Regex> = OnceLock::new();
    let min = MIN.get_or_init(|| {
        Regex::new(
            r"^(?:[\w:]+\s+)+(\w+)\s*=\s*(?:[\w:]+\s*\(\s*)?std::min\s*\(\s*(\w+)\s*-\s*(\w+)\s*,\s*([\w:]+)\s*\)\s*\)?\s*;$",
        )
        .expect("static regex")
    });
    let (conds, _) = b.conds_at(at);
    let mut out = Vec::new();
    for c in &conds {
        let Some(h) = head.captures(c) else {
            continue;
        };
        let (i, x) = (&h[1], &h[2]);
        let steps: Vec<String> = h[3]
            .split(',')
            .filter_map(|inc| {
                let (var, k) = inc.split_once("+=")?;
                (var.trim() == i).then(|| k.trim().to_string())
            })
            .collect();
        for st in b
            .stmts
            .iter()
            .filter(|st| st.end <= at && st.conds.contains(c))
        {
            let Some(m) =
                t.s.get(st.start..st.end)
                    .and_then(|s| min.captures(s.trim()))
            else {
                continue;
            };
            if &m[2] == x
                && &m[3] == i
                && steps.iter().any(|k| *k == m[4])
                && !written_after_declaration(&t.s[..at], &m[1], st.end)
            {
                out.push(format!("{} >= 1", &m[1]));
            }
        }
    }
    out
}

/// What the caller knows of an argument computed from its names, as conditions on
/// the parameter `param` it binds: `n - 1` where `n >= 2` holds gives `param >= 1`
/// (larfg's dot of the `n - 1` elements below its first); `m - j` inside
/// `for (j = 0; j < dim; ++j)` with `dim = std::min(m, n)` gives `param >= 1`
/// (geqr2's column loop).
fn argument_bounds(
    t: &Text,
    b: &Body,
    at: usize,
    arg: &str,
    held: &[String],
    param: &str,
) -> Vec<String> {
    if !arg.contains(['-', '+']) {
        return Vec::new();
    }
    static SUM: OnceLock<Regex> = OnceLock::new();
    let sum = SUM.get_or_init(|| {
        Regex::new(r"^\(?\s*([A-Za-z_]\w*)\s*([+-])\s*(\w+)\s*\)?$").expect("static regex")
    });
    static LESS: OnceLock<Regex> = OnceLock::new();
    let less = LESS.get_or_init(|| {
        Regex::new(r"^\(?\s*([A-Za-z_]\w*)\s*-\s*([A-Za-z_]\w*)\s*-\s*(\d+)\s*\)?$")
            .expect("static regex")
    });
    // `x - y` or `x - y - k` (gebd2's `n - j - 1`): at least 1 - k where the loop
    // keeps y below x.
    let (x, y, k) = if let Some(m) = less.captures(arg.trim()) {
        let Ok(k) = m[3].parse::<i64>() else {
            return Vec::new();
        };
        (m.get(1), m.get(2), k)
    } else {
        let Some(m) = sum.captures(arg.trim()) else {
            return Vec::new();
        };
        let minus = &m[2] == "-";
        if let Ok(k) = m[3].parse::<i64>() {
            return super::eval::shifted_bounds(held, &m[1], if minus { -k } else { k }, param);
        }
        if !minus {
            return Vec::new();
        }
        (m.get(1), m.get(3), 0)
    };
    let (Some(x), Some(y)) = (x.map(|g| g.as_str()), y.map(|g| g.as_str())) else {
        return Vec::new();
    };
    static HEAD: OnceLock<Regex> = OnceLock::new();
    let head = HEAD.get_or_init(|| {
        Regex::new(r"^loop: for \([^;]*;\s*(\w+)\s*<\s*(\w+)\s*;[^;]*\)$").expect("static regex")
    });
    let (conds, offsets) = b.conds_at(at);
    for (c, &from) in conds.iter().zip(&offsets) {
        let Some(h) = head.captures(c) else {
            continue;
        };
        if &h[1] != y || from >= at {
            continue;
        }
        // The loop's own step is the only write of its index before the call.
        let Some(open) = t.s[from..at].find('(').map(|k| from + k) else {
            continue;
        };
        let header_close = Scanner::new(&t.s).matching(open);
        if header_close >= at {
            continue;
        }
        if writes_after(&t.s[..at], y, header_close, false) {
            continue;
        }
        let limit = &h[2];
        if limit == x
            || min_of(&t.s[b.open..from], limit).iter().any(|a| a == x)
            || held.iter().any(|c| at_most(c, limit, x))
        {
            return vec![format!("{param} >= {}", 1 - k)];
        }
    }
    Vec::new()
}

/// A held test `name op E` whose bound `E` the caller's values fix (potrf's
/// `n <= POTRF_POTF2_SWITCHSIZE(T)`, a `sizeof(T)` choice), with `E` as its number: the
/// callee has no `T` of the caller's to read it by.
/// `n <= NB` as `n <= 16` where the callee's `NB` is bound to 16: bounds are read
/// off numbers, and a held test's bound named by a template value is otherwise lost.
fn bound_by_value(c: &str, values: &BTreeMap<String, Value>) -> Option<String> {
    static CMP: OnceLock<Regex> = OnceLock::new();
    let cmp = CMP.get_or_init(|| {
        Regex::new(r"^([A-Za-z_]\w*)\s*(<=|<|>=|>|==|!=)\s*([A-Za-z_]\w*)$").expect("static regex")
    });
    let c = c.trim();
    let inner = c.strip_prefix("not (").and_then(|r| r.strip_suffix(')'));
    let m = cmp.captures(inner.unwrap_or(c))?;
    let Some(Value::Int(k)) = values.get(&m[3]) else {
        return None;
    };
    let test = format!("{} {} {k}", &m[1], &m[2]);
    Some(match inner {
        Some(_) => format!("not ({test})"),
        None => test,
    })
}

fn folded(c: &str, env: &Env) -> String {
    static CMP: OnceLock<Regex> = OnceLock::new();
    let cmp = CMP.get_or_init(|| {
        Regex::new(r"^([A-Za-z_]\w*)\s*(<=|<|>=|>|==|!=)\s*(.+)$").expect("static regex")
    });
    let c = c.trim();
    let inner = c.strip_prefix("not (").and_then(|r| r.strip_suffix(')'));
    let negated = inner.is_some();
    let Some(m) = cmp.captures(inner.unwrap_or(c)) else {
        return c.to_string();
    };
    let bound = m[3].trim();
    if bound
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
    {
        return c.to_string();
    }
    match value(bound, env) {
        Some(Value::Int(k)) => {
            let test = format!("{} {} {k}", &m[1], &m[2]);
            if negated {
                format!("not ({test})")
            } else {
                test
            }
        }
        _ => c.to_string(),
    }
}

/// The bound `K` of a loop header `for (x = A, i = A; i < K; i += x, x *= 2)` around a
/// use of `x`: the two start equal and grow by the same step, so `x < K` in its body.
fn doubling_bound(cond: &str, x: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^loop: for \(\s*(\w+)\s*=\s*(\w+)\s*,\s*(\w+)\s*=\s*(\w+)\s*;\s*(\w+)\s*<\s*(\w+)\s*;\s*(\w+)\s*\+=\s*(\w+)\s*,\s*(\w+)\s*\*=\s*2\s*\)$")
            .expect("static regex")
    });
    let c = re.captures(cond)?;
    // `a` is the other of the two the header starts equal.
    let a = match x {
        _ if &c[1] == x => &c[3],
        _ if &c[3] == x => &c[1],
        _ => return None,
    };
    let held = c[2] == c[4] && &c[5] == a && &c[7] == a && &c[8] == x && &c[9] == x;
    held.then(|| c[6].to_string())
}

/// Whether `name` is a 32-bit integer: held so by a caller, or declared `rocblas_int`,
/// `int` or `int32_t` in the body.
fn is_int32(t: &Text, b: &Body, name: &str, env: &Env) -> bool {
    if env.values.get(&format!("!{name} <= 2147483647")) == Some(&Value::Bool(true)) {
        return true;
    }
    Regex::new(&format!(
        r"\b(?:rocblas_int|int|int32_t)\s+(?:const\s+)?{}\s*[=;]",
        regex::escape(name)
    ))
    .is_ok_and(|re| re.is_match(&t.s[b.open..b.close]))
}

/// Upper bounds on a parameter from how the caller computed its argument, with the
/// caller's values:
/// - `jb` set by `jb = std::min(n - j, nb)` (nb fixed): `param <= nb`;
/// - `x - y` past every loop `while(y < x - K)` that a path to the call runs (no
///   `break`, neither name written after): the loop ended with `y >= x - K`, so
///   `param <= K` (potrf's last block after its blocked loop).
fn upper_bounds(t: &Text, b: &Body, at: usize, arg: &str, param: &str, env: &Env) -> Vec<String> {
    let arg = arg.trim();
    let number = |e: &str| match value(e.trim(), env) {
        Some(Value::Int(k)) => Some(k),
        _ => None,
    };
    let (at_conds, _) = b.conds_at(at);
    if is_name(arg) {
        static MIN: OnceLock<Regex> = OnceLock::new();
        let min = MIN.get_or_init(|| {
            Regex::new(
                r"^(?:[\w:]+\s+)*(\w+)\s*=\s*(?:[\w:]+\s*\(\s*)?std::min\s*\((.+?)\)\s*\)?\s*;$",
            )
            .expect("static regex")
        });
        // `x - y` with `y` a loop index from 0 that only grows is at most `x`.
        static FROM_ZERO: OnceLock<Regex> = OnceLock::new();
        let from_zero = FROM_ZERO.get_or_init(|| {
            Regex::new(r"^loop: for \(\s*(?:[\w:]+\s+)?(\w+)\s*=\s*0\s*[;,][^;]*;[^;]*\+=[^;]*\)$")
                .expect("static regex")
        });
        let rest_of = |a: &str| -> Option<i64> {
            let (x, y) = a.split_once('-')?;
            let (x, y) = (x.trim(), y.trim());
            if !is_name(y) {
                return None;
            }
            let counted = at_conds.iter().any(|c| {
                from_zero
                    .captures(c)
                    .is_some_and(|m| &m[1] == y && c.contains(&format!("{y} +=")))
            });
            counted.then(|| number(x)).flatten()
        };
        // `for(nb = A, i = A; i < K; i += nb, nb *= 2)` keeps `nb == i`, so in its body
        // `nb < K` (symm's and syr2k's doubling blocks, rocblas_symm_hemm_kernels.cpp:562).
        if let Some(k) = at_conds
            .iter()
            .find_map(|c| doubling_bound(c, arg))
            .and_then(|k| number(&k).or_else(|| is_int32(t, b, &k, env).then_some(i32::MAX as i64)))
        {
            return vec![format!("{param} <= {}", k - 1)];
        }
        // The last statement setting it before the call, on the call's own path.
        let set = b
            .stmts
            .iter()
            .filter(|st| st.end <= at)
            .rev()
            .find_map(|st| {
                let text = t.s.get(st.start..st.end)?.trim();
                let m = min.captures(text)?;
                (&m[1] == arg).then(|| (st, m[2].to_string()))
            });
        let Some((st, args)) = set else {
            return Vec::new();
        };
        if !at_conds.starts_with(&st.conds) || writes_after(&t.s[..at], arg, st.end, true) {
            return Vec::new();
        }
        return split_args(&args, true)
            .iter()
            .filter_map(|a| number(a).or_else(|| rest_of(a)))
            .min()
            .map(|k| vec![format!("{param} <= {k}")])
            .unwrap_or_default();
    }
    static DIFF: OnceLock<Regex> = OnceLock::new();
    let diff = DIFF.get_or_init(|| {
        Regex::new(r"^\(?\s*([A-Za-z_]\w*)\s*-\s*([A-Za-z_]\w*)\s*\)?$").expect("static regex")
    });
    let Some(m) = diff.captures(arg) else {
        return Vec::new();
    };
    let (x, y) = (&m[1], &m[2]);
    static WHILE: OnceLock<Regex> = OnceLock::new();
    let head = WHILE.get_or_init(|| {
        Regex::new(r"^loop: while \(\s*(\w+)\s*<\s*(\w+)\s*-\s*(.+)\)$").expect("static regex")
    });
    // Each loop before the call: its header, the tests around it past what the call
    // shares, where it starts and ends, and its bound.
    let mut loops: Vec<(&String, &[String], usize, usize, i64)> = Vec::new();
    for st in b.stmts.iter().filter(|st| st.end <= at) {
        let Some(k) = st.conds.iter().position(|c| c.starts_with("loop: ")) else {
            continue;
        };
        let c = &st.conds[k];
        let Some(h) = head.captures(c) else {
            continue;
        };
        if &h[1] != y || &h[2] != x {
            continue;
        }
        let Some(bound) = number(&h[3]) else {
            return Vec::new();
        };
        let open_at = st.cond_at.get(k).copied().unwrap_or(st.start);
        match loops
            .iter_mut()
            .find(|l| std::ptr::eq(l.0, c) || (l.0 == c && l.2 == open_at))
        {
            Some(l) => l.3 = l.3.max(st.end),
            None => loops.push((c, &st.conds[..k], open_at, st.end, bound)),
        }
    }
    let Some(&(_, _, _, _, bound)) = loops.first() else {
        return Vec::new();
    };
    if loops.iter().any(|l| l.4 != bound) {
        return Vec::new();
    }
    // Every path to the call runs one of them: one under no test the call does not
    // share, or two under a test and its negation.
    let rest = |outer: &[String]| -> Vec<String> {
        let shared = outer
            .iter()
            .zip(&at_conds)
            .take_while(|(a, b)| a == b)
            .count();
        outer[shared..].to_vec()
    };
    let rests: Vec<Vec<String>> = loops.iter().map(|l| rest(l.1)).collect();
    let covered = rests.iter().any(|r| r.is_empty())
        || rests.iter().any(|r| {
            r.len() == 1
                && rests
                    .iter()
                    .any(|o| o.len() == 1 && o[0] == format!("not ({})", r[0]))
        });
    let last_end = loops.iter().map(|l| l.3).max().unwrap_or(at);
    let broken = loops
        .iter()
        .any(|l| t.s.get(l.2..l.3).is_some_and(|s| s.contains("break")));
    if !covered
        || broken
        || writes_after(&t.s[..at], y, last_end, true)
        || writes_after(&t.s[..at], x, loops[0].2, true)
    {
        return Vec::new();
    }
    vec![format!("{param} <= {bound}")]
}

/// Is a parameter's declared type a signed 64-bit integer?
fn is_int64(ty: &str) -> bool {
    let words: Vec<&str> = ty.split_whitespace().filter(|w| *w != "const").collect();
    matches!(
        words[..],
        ["int64_t"] | ["std::int64_t"] | ["long"] | ["long", "long"]
    )
}

fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Does the held condition `c` say `a <= b` (`m >= n` inside gebd2's `if(m >= n)`,
/// `not (m >= n)` in its `else`)?
fn at_most(c: &str, a: &str, b: &str) -> bool {
    let c: String = c.split_whitespace().collect::<Vec<_>>().join(" ");
    let says = [
        format!("{b} >= {a}"),
        format!("{b} > {a}"),
        format!("{a} <= {b}"),
        format!("{a} < {b}"),
        format!("{a} == {b}"),
        format!("{b} == {a}"),
        format!("not ({b} < {a})"),
        format!("not ({b} <= {a})"),
        format!("not ({a} > {b})"),
        format!("not ({a} >= {b})"),
    ];
    says.contains(&c)
}

/// The two names a local of `text` is set to the smaller of, where it is declared
/// `name = std::min(a, b)` and not written after.
fn min_of(text: &str, name: &str) -> Vec<String> {
    let Ok(re) = Regex::new(&format!(
        r"\b{}\s*=\s*std::min\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*;",
        regex::escape(name)
    )) else {
        return Vec::new();
    };
    let Some(m) = re.captures(text) else {
        return Vec::new();
    };
    let end = m.get(0).map_or(0, |g| g.end());
    if writes_after(text, name, end, true) {
        return Vec::new();
    }
    vec![m[1].to_string(), m[2].to_string()]
}

/// `cond` in the callee's names, where every name in it is a parameter the call passes
/// (`names`: caller's name to callee's) or means the same in both (an enumerator, a
/// library constant, a member); `None` where one is the caller's own.
fn renamed(cond: &str, names: &BTreeMap<&str, &str>) -> Option<String> {
    let b = cond.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let j = (i..b.len()).find(|&k| !is_ident(b[k])).unwrap_or(b.len());
            let w = &cond[i..j];
            let before = out.trim_end();
            let member = before.ends_with("->") || before.ends_with('.');
            if member
                || matches!(w, "true" | "false" | "nullptr" | "not")
                || w.starts_with("c_")
                || is_enumerator(w)
            {
                out.push_str(w);
            } else {
                out.push_str(names.get(w)?);
            }
            i = j;
        } else if c.is_ascii_digit() {
            let j = (i..b.len()).find(|&k| !is_ident(b[k])).unwrap_or(b.len());
            out.push_str(&cond[i..j]);
            i = j;
        } else {
            let ch = cond[i..].chars().next()?;
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    Some(out)
}

/// The prefix of the names that say which object a pointer parameter is.
pub const IDENTITY: &str = "@";

/// The name an argument passes, through casts: `B`, `(T*)B`, `cast2constType<T>(B)`.
fn root_name(a: &str) -> Option<&str> {
    let a = a.trim();
    let ident = |x: &str| {
        !x.is_empty()
            && x.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !x.as_bytes()[0].is_ascii_digit()
    };
    if ident(a) {
        return Some(a);
    }
    if let Some(rest) = a.strip_prefix('(') {
        // `(const T*)B`
        let close = rest.find(')')?;
        let after = rest[close + 1..].trim();
        return ident(after).then_some(after);
    }
    // A cast written as a call of one argument: `cast2constType<T>(B)`, `static_cast<U>(B)`.
    let open = a.find('(')?;
    let callee = &a[..open];
    let inner = a[open + 1..].strip_suffix(')')?.trim();
    // An integer conversion keeps the value where the conditions that hold allow it
    // (`rocblas_int(n)` of a chunk no larger than `c_i64_grid_X_chunk`).
    let integer = matches!(
        callee.trim(),
        "rocblas_int"
            | "int32_t"
            | "int64_t"
            | "int"
            | "size_t"
            | "rocblas_stride"
            | "API_INT"
            | "I"
    );
    ((callee.contains("cast") || integer) && ident(inner)).then_some(inner)
}

/// The type of an argument: a parameter of the caller passed by name (or a local
/// `aliases` gives that parameter's type), or a cast.
fn arg_type(
    a: &str,
    caller: Option<&Head>,
    aliases: &BTreeMap<String, String>,
    cenv: &Env,
) -> Option<String> {
    let a = a.trim();
    if let Some(rest) = a.strip_prefix('(') {
        // `(const rocblas_half*)alpha`
        let close = rest.find(')')?;
        let after = rest[close + 1..].trim();
        if !after.is_empty() && after.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return resolve_type(&rest[..close], cenv);
        }
        return None;
    }
    if !a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let caller = caller?;
    let param = caller.params.iter().find(|(_, n)| n == a).or_else(|| {
        let p = aliases.get(a)?;
        caller.params.iter().find(|(_, n)| n == p)
    });
    match param {
        Some((ty, _)) => resolve_type(ty, cenv),
        None => resolve_type(aliases.get(&format!("{LOCAL_TYPE}{a}"))?, cenv),
    }
}

/// `&x` or `&x.field` (not `&&`, not `&x[i]` of a pointer that may be null).
/// Is argument `a` a null pointer: `nullptr`, `NULL`, or either cast (`(S*)nullptr`,
/// `static_cast<T*>(nullptr)`)?
fn null_pointer(a: &str) -> bool {
    let mut a = a.trim();
    loop {
        if matches!(a, "nullptr" | "NULL") {
            return true;
        }
        if let Some(rest) = a.strip_prefix('(').and_then(|r| r.split_once(')')) {
            // `(S*)nullptr`: a C-style cast to a pointer type, or parentheses.
            let (ty, after) = rest;
            if ty.trim_end().ends_with('*') && !after.trim().is_empty() {
                a = after.trim();
                continue;
            }
            if after.trim().is_empty() {
                a = ty.trim();
                continue;
            }
            return false;
        }
        let cast = ["static_cast<", "reinterpret_cast<"]
            .iter()
            .find_map(|c| a.strip_prefix(c));
        match cast
            .and_then(|r| r.split_once(">("))
            .and_then(|(_, r)| r.strip_suffix(')'))
        {
            Some(inner) => a = inner.trim(),
            None => return false,
        }
    }
}

fn address_of_name(a: &str) -> bool {
    a.trim()
        .strip_prefix('&')
        .filter(|r| !r.starts_with('&'))
        .map(str::trim)
        .is_some_and(|r| {
            r.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && r.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
}

/// The key prefix under which a caller's names map holds a local's declared type.
const LOCAL_TYPE: &str = ":type:";

/// Deduces the one unbound template parameter a declared type names from the type of
/// the argument passed (`const T*` against `const float*` gives `T = float`).
fn deduce(ty: &str, arg_ty: &str, params: &BTreeSet<String>, got: &mut BTreeMap<String, Value>) {
    const HOLE: &str = "\u{1}";
    let words: BTreeSet<&str> = ty
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| params.contains(*w) && !got.contains_key(*w))
        .collect();
    let [p] = words.into_iter().collect::<Vec<_>>()[..] else {
        return;
    };
    let mut env = Env {
        values: got.clone(),
        params: params.clone(),
    };
    env.values.insert(p.to_string(), Value::Type(HOLE.into()));
    let Some(pattern) = resolve_type(ty, &env) else {
        return;
    };
    let Some((pre, post)) = pattern.split_once(HOLE) else {
        return;
    };
    let pre = pre.trim_end();
    // `const Ti*` against `const float* const*`: the pattern's `const` is the one
    // written after the inner pointer, so `Ti` is `const float*`; against
    // `rocblas_float_complex const*` (a `Ti const* A` handed on), `Ti` is the element.
    let east = (pre == "const")
        .then(|| arg_ty.strip_suffix(post)?.trim_end().strip_suffix("const"))
        .flatten()
        .map(str::trim)
        .filter(|m| !m.is_empty());
    if let Some(mid) = east {
        got.insert(p.to_string(), Value::Type(mid.to_string()));
        return;
    }
    if let Some(mid) = arg_ty
        .strip_prefix(pre)
        .and_then(|r| r.strip_suffix(post))
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        // A reference binds to the value's type; a parameter taken by value drops the
        // argument's top-level `const` (`const I n` passed as `I` gives `I = int64_t`).
        let mut mid = mid.trim_end_matches('&').trim();
        if post.is_empty() {
            mid = mid.strip_suffix("const").map(str::trim_end).unwrap_or(mid);
            if !mid.contains(['*', '&']) {
                mid = mid.strip_prefix("const ").unwrap_or(mid);
            }
        }
        got.insert(p.to_string(), Value::Type(mid.to_string()));
    }
}

/// Constants (`static constexpr int DIM_X = 128;`, `constexpr bool is_float = ...;`) and
/// type aliases (`using T2 = float;`) a body declares, added to `env` in order.
/// The handle's pointer mode where the code has set it: `handle->pointer_mode`
/// as the conditions on it are written, with rocBLAS's values for the two modes.
pub const POINTER_MODE: &str = "handle->pointer_mode";
const POINTER_MODES: [(&str, i64); 2] = [
    ("rocblas_pointer_mode_host", 0),
    ("rocblas_pointer_mode_device", 1),
];

/// The enumerator of a pointer mode value (`rocblas_pointer_mode_device` for 1).
pub fn pointer_mode_name(mode: i64) -> &'static str {
    POINTER_MODES
        .iter()
        .find(|(_, v)| *v == mode)
        .map_or("rocblas_pointer_mode_host", |(n, _)| n)
}

/// Sets (or, `None`, forgets) the handle's pointer mode in `env`.
pub fn set_pointer_mode(env: &mut Env, mode: Option<i64>) {
    match mode {
        Some(m) => {
            env.values.insert(POINTER_MODE.into(), Value::Int(m));
            for (name, v) in POINTER_MODES {
                env.values.insert(name.into(), Value::Int(v));
            }
        }
        None => {
            env.values.remove(POINTER_MODE);
        }
    }
}

/// The locals a body declares, in order: constants and type aliases, and what it does
/// to the handle's pointer mode (rocSOLVER sets it around its rocBLAS calls:
/// `rocblas_set_pointer_mode(handle, rocblas_pointer_mode_host)` makes every branch
/// on device pointers in the calls that follow one this API never takes;
/// `rocblas_get_pointer_mode(handle, &pmode)` reads it into a local; rocBLAS's
/// `handle->push_pointer_mode(X)` sets it for the rest of its scope and returns the
/// mode before). A mode holds to the end of the block it is set in; after a block
/// that set it, it is not known, and a push is undone where its block closes.
/// The statement of a body holding an offset: where it starts, the conditions it runs
/// under and where each was introduced (`None` outside every statement).
type StmtOf<'a> = &'a dyn Fn(usize) -> Option<(usize, Vec<String>, Vec<usize>)>;

/// What happens to a local at a point of the body, past the statement that declared it.
enum Event {
    /// `name = expr;` as a statement of its own, ending at `end`; `given` are the
    /// conditions the local's declaration sits under.
    Assign {
        name: String,
        expr: String,
        end: usize,
        given: Vec<String>,
    },
    /// The value is no longer known (a loop that assigns it starts here, or the block
    /// of an assignment that ran under an open condition closes).
    Set { name: String, value: Option<Value> },
    /// Its address is handed to code that may write it, in a statement that runs
    /// unless its conditions are false.
    Escape { name: String },
}

fn locals(text: &str, base: usize, stmt_of: StmtOf, env: &mut Env, out: &mut Vec<Local>) {
    let top_level = |at: usize| stmt_of(at).is_none_or(|s| s.1.is_empty());
    // A declaration outside any loop, in a block the API can run.
    let declared_here = |at: usize, env: &Env| {
        stmt_of(at).is_none_or(|s| {
            s.1.iter()
                .all(|c| !c.starts_with("loop:") && condition(c, env) != Truth::False)
        })
    };
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?:\b(?:(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+)?[A-Za-z_][\w:]*|(?:static\s+)?[A-Za-z_][\w:]*\s+constexpr)\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);)|(?:\busing\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);)|(?:\brocblas_(set|get)_pointer_mode\s*\(\s*handle\s*,\s*&?\s*([A-Za-z_]\w*)\s*\))|(?:\bhandle\s*->\s*(push)_pointer_mode\s*\(\s*([A-Za-z_]\w*)\s*\))|(?:\b(?:[A-Za-z_][\w:]*\s+)+?([A-Za-z_]\w*)\s*=\s*((?:[^;{}-]|-[^>;{}])+?)\s*;)|(?:\b[A-Za-z_][\w:]*(?:<[^;{}()]*>)?(?:\s*[*&]+\s*|\s+)([A-Za-z_]\w*)\s*;)",
        )
        .expect("static regex")
    });
    static SAVED: OnceLock<Regex> = OnceLock::new();
    let saved = SAVED.get_or_init(|| {
        Regex::new(r"\b(?:auto|rocblas_pointer_mode)\s+([A-Za-z_]\w*)\s*=\s*$")
            .expect("static regex")
    });
    // What happens later to locals seen so far, by offset: pointer modes undone where
    // their block closes, assignments to locals, values forgotten.
    let mut events: Vec<(usize, Event)> = Vec::new();
    let flush =
        |upto: usize, events: &mut Vec<(usize, Event)>, env: &mut Env, out: &mut Vec<Local>| {
            // Earliest first; of two at one offset the later pushed (an inner block's undo).
            while let Some(k) = events
                .iter()
                .enumerate()
                .filter(|(_, e)| e.0 <= upto)
                .min_by_key(|(k, e)| (e.0, std::cmp::Reverse(*k)))
                .map(|(k, _)| k)
            {
                let (at, event) = events.remove(k);
                match event {
                    Event::Set { name, value } => {
                        if name == POINTER_MODE {
                            let mode = match value {
                                Some(Value::Int(m)) => Some(m),
                                _ => None,
                            };
                            set_pointer_mode(env, mode);
                        } else {
                            put(env, &name, value.clone());
                        }
                        out.push(Local {
                            end: base + at,
                            name,
                            value,
                            is_type: false,
                        });
                    }
                    Event::Escape { name } => {
                        let conds = stmt_of(base + at).map(|s| s.1).unwrap_or_default();
                        if conds.iter().any(|c| condition(c, env) == Truth::False) {
                            continue;
                        }
                        put(env, &name, None);
                        out.push(Local {
                            end: base + at,
                            name,
                            value: None,
                            is_type: false,
                        });
                    }
                    Event::Assign {
                        name,
                        expr,
                        end,
                        given,
                    } => {
                        let conds = stmt_of(base + at).map(|s| s.1).unwrap_or_default();
                        let truths: Vec<Truth> = conds.iter().map(|c| condition(c, env)).collect();
                        if truths.contains(&Truth::False) {
                            continue;
                        }
                        // Open tests the declaration already sits under hold wherever
                        // the local is seen: only the assignment's own ones count.
                        let open = conds
                            .iter()
                            .zip(&truths)
                            .any(|(c, t)| matches!(t, Truth::Open(_)) && !given.contains(c));
                        // Under a condition not decided here, the value holds to the end of
                        // the braced block the assignment stands in, and is not known after.
                        let braced = text[..at].trim_end().ends_with([';', '{', '}']);
                        let close = if open && braced {
                            block_end(text, at)
                        } else {
                            None
                        };
                        let v = if open && close.is_none() {
                            None
                        } else {
                            value(&expr, env)
                        };
                        let was = env.values.get(&name).cloned();
                        put(env, &name, v.clone());
                        let defined = format!("{DEFINED}{name}");
                        if env.values.contains_key(&defined) {
                            put(env, &defined, None);
                            out.push(Local {
                                end: base + end,
                                name: defined.clone(),
                                value: None,
                                is_type: false,
                            });
                        }
                        out.push(Local {
                            end: base + end,
                            name: name.clone(),
                            value: v.clone(),
                            is_type: false,
                        });
                        if let Some(close) = close {
                            // A flag flipped under one open test is that test past the
                            // block (trsv's `alpha_exists`, false unless `alpha !=
                            // nullptr`, rocblas_trsv_kernels.cpp:833-846).
                            let own: Vec<&String> = conds
                                .iter()
                                .zip(&truths)
                                .filter(|(c, t)| matches!(t, Truth::Open(_)) && !given.contains(c))
                                .map(|(c, _)| c)
                                .collect();
                            if let (Some(Value::Bool(a)), Some(Value::Bool(b)), [test]) =
                                (&was, &v, own.as_slice())
                            {
                                if a != b && !is_branch_header(test) && is_plain_test(test) {
                                    let t = if *b {
                                        test.to_string()
                                    } else {
                                        format!("not ({test})")
                                    };
                                    events.push((
                                        close,
                                        Event::Set {
                                            name: defined,
                                            value: Some(Value::Type(super::eval::canonical(&t))),
                                        },
                                    ));
                                }
                            }
                            events.push((close, Event::Set { name, value: None }));
                        }
                    }
                }
            }
        };
    for c in re.captures_iter(text) {
        let end = base + c.get(0).map_or(0, |m| m.end());
        flush(c.get(0).map_or(0, |m| m.start()), &mut events, env, out);
        if let (Some(verb), Some(arg)) = (c.get(5).or(c.get(7)), c.get(6).or(c.get(8))) {
            let local = c.get(0).map_or(0, |m| m.start());
            let before = match env.values.get(POINTER_MODE) {
                Some(Value::Int(m)) => Some(*m),
                _ => None,
            };
            if verb.as_str() == "get" {
                let v = before.map(Value::Int);
                put(env, arg.as_str(), v.clone());
                out.push(Local {
                    end,
                    name: arg.as_str().to_string(),
                    value: v,
                    is_type: false,
                });
                continue;
            }
            // `auto saved = handle->push_pointer_mode(X)`: `saved` is the mode before.
            let saved = (verb.as_str() == "push")
                .then(|| saved.captures(&text[..local]))
                .flatten();
            let statement = saved
                .as_ref()
                .and_then(|m| m.get(0))
                .map_or(local, |m| m.start());
            // A mode set as a statement of its own holds for the rest of the block
            // it is written in; one a braceless `if`/`else`/loop governs is not known.
            let starts_statement = text[..statement]
                .trim_end()
                .chars()
                .last()
                .is_none_or(|ch| matches!(ch, ';' | '{' | '}'));
            let mode = POINTER_MODES
                .iter()
                .find(|(n, _)| *n == arg.as_str())
                .map(|(_, v)| *v)
                .or_else(|| match env.values.get(arg.as_str()) {
                    Some(Value::Int(v)) => Some(*v),
                    _ => None,
                })
                .filter(|_| starts_statement);
            if let Some(name) = saved.as_ref().and_then(|m| m.get(1)) {
                put(env, name.as_str(), before.map(Value::Int));
                out.push(Local {
                    end,
                    name: name.as_str().to_string(),
                    value: before.map(Value::Int),
                    is_type: false,
                });
            }
            set_pointer_mode(env, mode);
            out.push(Local {
                end,
                name: POINTER_MODE.into(),
                value: mode.map(Value::Int),
                is_type: false,
            });
            // Where its block closes, a push is popped (the mode before comes back)
            // and a set leaves the mode as the branch taken left it: not known.
            if starts_statement {
                if let Some(close) = block_end(text, local) {
                    let after = if verb.as_str() == "push" {
                        before
                    } else {
                        None
                    };
                    events.push((
                        close,
                        Event::Set {
                            name: POINTER_MODE.into(),
                            value: after.map(Value::Int),
                        },
                    ));
                }
            }
            continue;
        }
        let (name, value, is_type) = if let (Some(n), Some(e)) = (c.get(1), c.get(2)) {
            // A flag its callers decided for each object (a class template's
            // `is_strided`, see `constexpr_flags`) stays decided.
            let v = value(e.as_str(), env).or_else(|| match env.values.get(n.as_str()) {
                Some(Value::Bool(b)) => Some(Value::Bool(*b)),
                _ => None,
            });
            // A constant test not decided here is kept as written, so that a condition
            // naming it is read as the test (`const bool notrans = (trans ==
            // rocblas_operation_none)` and `conj` cannot both hold).
            if v.is_none() {
                define_test(n.as_str(), e.as_str(), end, env, out);
            }
            (n.as_str(), v, false)
        } else if let Some(n) = c.get(9).or(c.get(11)) {
            // `rocblas_int batch_count = 1;` at the top of a body and never written
            // again: a constant in all but name (rocSOLVER's non-batched `_impl`s fix
            // their batch count and strides this way). Assigned again only by
            // statements of their own (`trans = rocblas_operation_none;`), it is followed
            // through them.
            let init = c.get(10).map(|e| e.as_str());
            let at = c.get(0).map_or(0, |m| m.start());
            let starts_statement = text[..at]
                .trim_end()
                .chars()
                .last()
                .is_none_or(|ch| matches!(ch, ';' | '{' | '}'));
            let first_word = c
                .get(0)
                .map_or("", |m| m.as_str())
                .split_whitespace()
                .next();
            let after = c.get(0).map_or(0, |m| m.end());
            if !starts_statement
                || matches!(
                    first_word,
                    Some(
                        "return"
                            | "else"
                            | "case"
                            | "goto"
                            | "delete"
                            | "throw"
                            | "break"
                            | "continue"
                            | "co_return"
                            | "using"
                            | "typedef"
                    )
                )
                || !declared_here(base + at, env)
            {
                continue;
            }
            // Declared in a block of its own (trsm's `T alpha_h;` in the launcher's
            // `else`): known in that block, forgotten where it closes.
            if !top_level(base + at) {
                if let Some(close) = block_end(text, at) {
                    events.push((
                        close,
                        Event::Set {
                            name: n.as_str().to_string(),
                            value: None,
                        },
                    ));
                }
            }
            if writes_after(text, n.as_str(), after, false) {
                let given = stmt_of(base + at).map(|s| s.1).unwrap_or_default();
                let Some(later) = assignments(text, base, n.as_str(), after, stmt_of, &given)
                else {
                    continue;
                };
                events.extend(later);
            } else if let (Some(e), true) =
                (init, written_after_declaration(text, n.as_str(), after))
            {
                // Only its address is taken (`T one = 1;` passed as `&one` for alpha):
                // what the address points to is known, the value itself is not kept.
                let v = value(e, env);
                let name = format!("&{n}", n = n.as_str());
                put(env, &name, v.clone());
                out.push(Local {
                    end,
                    name,
                    value: v,
                    is_type: false,
                });
                continue;
            }
            let v = init.and_then(|e| value(e, env));
            // Never written again: a test it is set to stands for it, as for a
            // constant (rocblas_gemm_ex3.hpp:1524's `bool fallback = (...)`).
            if let (None, Some(e)) = (&v, init) {
                define_test(n.as_str(), e, end, env, out);
            }
            (n.as_str(), v, false)
        } else if let (Some(n), Some(e)) = (c.get(3), c.get(4)) {
            (
                n.as_str(),
                resolve_type(e.as_str(), env).map(Value::Type),
                true,
            )
        } else {
            continue;
        };
        put(env, name, value.clone());
        if value.is_none() && is_type {
            env.params.insert(name.to_string());
        }
        out.push(Local {
            end,
            name: name.to_string(),
            value,
            is_type,
        });
    }
    flush(usize::MAX, &mut events, env, out);
}

/// Records that local `name` stands for the test `init` from offset `end` on, where
/// `init` is a plain test.
fn define_test(name: &str, init: &str, end: usize, env: &mut Env, out: &mut Vec<Local>) {
    if !is_plain_test(init) && !partly_plain(init) {
        return;
    }
    let def = format!("{DEFINED}{name}");
    let test = Some(Value::Type(super::eval::canonical(init)));
    put(env, &def, test.clone());
    out.push(Local {
        end,
        name: def,
        value: test,
        is_type: false,
    });
}

/// A chain of `||` (or of `&&`) one of whose operands is a flag or a plain test, the
/// others calls or casts: the plain part may decide it where the calls stay open
/// (rocblas_gemv_kernels.cpp:159's `i64_indices = i64_incs || size_t(n) * lda > ...`
/// is true wherever `i64_incs` is).
fn partly_plain(e: &str) -> bool {
    let e = e.trim();
    if e.contains(['[', '{']) || super::eval::split_top(e, "?").len() > 1 {
        return false;
    }
    ["||", "&&"].iter().any(|op| {
        let parts = super::eval::split_top(e, op);
        parts.len() >= 2
            && parts.iter().any(|p| {
                let p = p.trim();
                is_plain_test(p) || (!p.is_empty() && p.bytes().all(is_ident))
            })
    })
}

/// A comparison or logical test of names and numbers, with no call in it: what a
/// constant bool may stand for wherever it is named.
fn is_plain_test(e: &str) -> bool {
    let e = e.trim();
    let b = e.as_bytes();
    let tests = ["==", "!=", "<", ">", "&&", "||", "!"]
        .iter()
        .any(|op| e.contains(op));
    // A `(` right after a name is a call (or a cast written as one).
    let call = b
        .iter()
        .enumerate()
        .any(|(k, &c)| c == b'(' && k > 0 && is_ident(b[k - 1]));
    tests && !call && !e.contains(['?', '[']) && !e.contains("<<") && !e.contains(">>")
}

/// The later writes of local `name` past `from` where each is `name = expr;`, a
/// statement of its own: one event for each, and one forgetting the value where a loop
/// around one starts. `None` where any write is of another kind (compound, `++`, its
/// address taken, an assignment inside an expression or a loop head).
fn assignments(
    text: &str,
    base: usize,
    name: &str,
    from: usize,
    stmt_of: StmtOf,
    given: &[String],
) -> Option<Vec<(usize, Event)>> {
    let mut out = Vec::new();
    for (k, use_) in uses(text, name, from) {
        match use_ {
            Use::Read => continue,
            Use::Assign => {}
            Use::Compound => return None,
            // `hipMemcpyAsync(&alpha_h, ...)` may write it: from there on the value is
            // not known, unless the statement sits under a test false for the API
            // (trsm's copy from a device pointer, taken only in device mode).
            Use::Address => {
                stmt_of(base + k)?;
                out.push((
                    k,
                    Event::Escape {
                        name: name.to_string(),
                    },
                ));
                continue;
            }
        }
        let after = text[k + name.len()..].trim_start();
        let (start, conds, cond_at) = stmt_of(base + k)?;
        if start != base + k {
            return None;
        }
        let eq = text.len() - after.len();
        let stop = eq + 1 + statement_end(&text[eq + 1..])?;
        if let Some(i) = conds.iter().position(|c| c.starts_with("loop:")) {
            let loop_at = cond_at.get(i)?.checked_sub(base)?;
            out.push((
                loop_at,
                Event::Set {
                    name: name.to_string(),
                    value: None,
                },
            ));
        }
        out.push((
            k,
            Event::Assign {
                name: name.to_string(),
                expr: text[eq + 1..stop].trim().to_string(),
                end: stop + 1,
                given: given.to_vec(),
            },
        ));
    }
    Some(out)
}

/// Offset of the `;` ending the statement `s` starts in, outside brackets.
fn statement_end(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (k, ch) in s.char_indices() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ';' if depth == 0 => return Some(k),
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    None
}

/// Where the block holding offset `at` of a body's text closes (the offset of its
/// `}`), or `None` where that block is the body itself.
fn block_end(text: &str, at: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, ch) in text[at..].char_indices() {
        match ch {
            '{' => depth += 1,
            // The body's own `}` (where the text holds it) closes no inner block.
            '}' if depth == 0 => {
                let close = at + k;
                return (!text[close + 1..].trim().is_empty()).then_some(close);
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Does `body` write `name` (assign, compound-assign, increment, take its address)
/// anywhere past `from`?
fn written_after_declaration(body: &str, name: &str, from: usize) -> bool {
    writes_after(body, name, from, true)
}

/// Does `body` write `name` past `from`, its address taken counting as a write or not?
fn writes_after(body: &str, name: &str, from: usize, address_writes: bool) -> bool {
    uses(body, name, from).any(|(_, u)| match u {
        Use::Read => false,
        Use::Assign | Use::Compound => true,
        Use::Address => address_writes,
    })
}

/// How a statement uses a local.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Read,
    /// `name = ...`
    Assign,
    /// `name += ...`, `++name`, `name--`
    Compound,
    /// `&name`
    Address,
}

/// Each use of the local `name` in `body` past `from` (not a member of the same name,
/// not part of a longer word): its offset and how it is used.
fn uses<'t>(body: &'t str, name: &'t str, from: usize) -> impl Iterator<Item = (usize, Use)> + 't {
    let b = body.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    body[from..].match_indices(name).filter_map(move |(k, _)| {
        let k = from + k;
        let end = k + name.len();
        if (k > 0 && word(b[k - 1])) || b.get(end).is_some_and(|&c| word(c)) {
            return None;
        }
        let before = body[..k].trim_end();
        let after = body[end..].trim_start();
        if before.ends_with('.') || before.ends_with("->") || before.ends_with("::") {
            return None;
        }
        let compound = [
            "+=", "-=", "*=", "/=", "%=", "|=", "&=", "^=", "<<=", ">>=", "++", "--",
        ]
        .iter()
        .any(|op| after.starts_with(op))
            || before.ends_with("++")
            || before.ends_with("--");
        Some((
            k,
            if compound {
                Use::Compound
            } else if after.starts_with('=') && !after.starts_with("==") {
                Use::Assign
            } else if before.ends_with('&') && !before.ends_with("&&") {
                Use::Address
            } else {
                Use::Read
            },
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_object_passed_twice_compares_equal() {
        assert_eq!(root_name("cast2constType<T>(B)"), Some("B"));
        assert_eq!(root_name("(const T*) B"), Some("B"));
        assert_eq!(root_name("B + shiftB"), None);
        assert_eq!(root_name("rocblas_int(n)"), Some("n"));
        assert_eq!(root_name("rocblas_abs(n)"), None);
        // rocblas.hpp:1524-1526 passes B as both the input and the output of trmm;
        // rocblas_trmm_kernels.cpp:2251 then reads `dB == dC` as true.
        let mut env = Env::default();
        for p in ["dB", "dC"] {
            env.values
                .insert(format!("{IDENTITY}{p}"), Value::Type("@f:B".into()));
        }
        env.values.insert("BATCHED".into(), Value::Bool(false));
        env.values.insert("batch_count".into(), Value::Int(1));
        assert_eq!(
            value("(dB == dC) || BATCHED || batch_count != 1", &env),
            Some(Value::Bool(true))
        );
        env.values
            .insert(format!("{IDENTITY}dC"), Value::Type("@f:C".into()));
        assert_eq!(
            value("(dB == dC) || BATCHED || batch_count != 1", &env),
            None
        );
    }

    #[test]
    fn a_null_pointer_is_read_through_its_casts() {
        for a in [
            "nullptr",
            "(S*)nullptr",
            " (float *) NULL",
            "static_cast<T*>(nullptr)",
        ] {
            assert!(null_pointer(a), "{a}");
        }
        for a in ["beta", "(S*)beta", "(n)", "nullptr_t(x)", "(S*)nullptr + 1"] {
            assert!(!null_pointer(a), "{a}");
        }
    }

    #[test]
    fn a_local_set_once_to_a_literal_is_a_constant() {
        let body = "{\n rocblas_int shiftZ = 0;\n rocblas_stride strideD = 0;\n rocblas_int batch_count = 1;\n rocblas_int n2 = 4;\n n2 += 1;\n int k = 2;\n f(&k);\n if(x) { rocblas_int inner = 3; }\n for(int i = 0; i < n; i++) g(i);\n return s.count = 5;\n}";
        let mut env = Env::default();
        let mut out = Vec::new();
        locals(
            body,
            0,
            &|at| {
                (body[..at].contains("if(x) {") && !body[..at].contains("} }"))
                    .then(|| (at, vec!["x".to_string()], vec![0]))
            },
            &mut env,
            &mut out,
        );
        assert_eq!(env.values.get("batch_count"), Some(&Value::Int(1)));
        assert_eq!(env.values.get("strideD"), Some(&Value::Int(0)));
        assert_eq!(env.values.get("shiftZ"), Some(&Value::Int(0)));
        // Written again, its address taken, under a branch, a loop counter: not constants.
        for name in ["n2", "k", "inner", "i", "count"] {
            assert!(!env.values.contains_key(name), "{name}");
        }
    }

    #[test]
    fn a_local_assigned_by_statements_of_its_own_is_followed_through_them() {
        // rocauxiliary_larf.hpp:170-185 and rocauxiliary_larft.hpp:270-321, cut down.
        let src = "void f(int side, int storev, int n) {\n bool leftside = (side == 141);\n rocblas_operation trans = rocblas_operation_none;\n if(leftside)\n {\n trans = rocblas_operation_transpose;\n }\n at_gemv(trans);\n rocblas_operation t2;\n for(int i = 0; i < n; i++)\n {\n before_t2(t2);\n if(storev == 1)\n {\n t2 = rocblas_operation_conjugate_transpose;\n in_block(t2);\n }\n after_block(t2);\n }\n int k = 0;\n if(n > 2) k = 4;\n after_k(k);\n}\n";
        super::super::eval::add_enumerators(
            "typedef enum rocblas_operation_ { rocblas_operation_none = 111, rocblas_operation_transpose = 112, rocblas_operation_conjugate_transpose = 113 } rocblas_operation;",
        );
        let read = |side: Option<i64>| {
            let known: Vec<(&str, i64)> = side.map(|s| ("side", s)).into_iter().collect();
            let seen = locals_of_f(src, &known);
            move |needle: &str, name: &str| {
                let at = src.find(needle).unwrap();
                seen.iter()
                    .rfind(|l| l.end <= at && l.name == name)
                    .and_then(|l| l.value.clone())
            }
        };
        // side == left: the branch runs, so gemv is given the transpose.
        let left = read(Some(141));
        assert_eq!(left("at_gemv", "trans"), Some(Value::Int(112)));
        // side == right: it does not, and the initial value holds.
        let right = read(Some(142));
        assert_eq!(right("at_gemv", "trans"), Some(Value::Int(111)));
        // side not known: neither value can be claimed.
        let open = read(None);
        assert_eq!(open("at_gemv", "trans"), None);
        // In a loop: known in the block that assigns it, before it (the last
        // iteration's value) and after that block, not.
        assert_eq!(open("in_block", "t2"), Some(Value::Int(113)));
        assert_eq!(open("before_t2", "t2"), None);
        assert_eq!(open("after_block", "t2"), None);
        // A braceless `if` under an open condition: not known after it.
        assert_eq!(open("after_k", "k"), None);
    }

    #[test]
    fn a_flag_flipped_under_one_open_test_is_that_test_past_its_block() {
        // rocblas_trsv_kernels.cpp:833-846, cut down.
        let src = "void f(const float* alpha, int mode) {\n bool alpha_exists = false;\n float alpha_local = 1.0;\n if(alpha != nullptr)\n {\n alpha_exists = true;\n if(mode == 0)\n alpha_local = *alpha;\n }\n after(alpha_exists);\n}\n";
        let read = |alpha: Option<i64>| {
            let known: Vec<(&str, i64)> = alpha.map(|a| ("alpha", a)).into_iter().collect();
            let seen = locals_of_f(src, &known);
            let at = src.find("after(").unwrap();
            let mut known = Env::default();
            for l in seen.iter().filter(|l| l.end <= at) {
                put(&mut known, &l.name, l.value.clone());
            }
            known
        };
        // `alpha` not known: the flag is the test it was set under.
        let open = read(None);
        assert_eq!(open.values.get("alpha_exists"), None);
        assert_eq!(
            open.values.get(&format!("{DEFINED}alpha_exists")),
            Some(&Value::Type("alpha != nullptr".into()))
        );
        // A caller passing nullptr: the flag is false.
        let mut null = open.clone();
        null.values.insert("alpha".into(), Value::Int(0));
        assert_eq!(condition("mode == 1 && alpha_exists", &null), Truth::False);
        // A caller passing nullptr known from the start: the block never runs.
        assert_eq!(
            read(Some(0)).values.get("alpha_exists"),
            Some(&Value::Bool(false))
        );
    }

    #[test]
    fn many_sites_passing_few_combinations_keep_them() {
        // syr2k's block loop calls gemm at 18 sites, each with (none, conj) or (conj, none).
        let site = |a: i64, b: i64| {
            BTreeMap::from([("trans_a".to_string(), a), ("trans_b".to_string(), b)])
        };
        let sites: Vec<_> = (0..9)
            .flat_map(|_| [site(111, 113), site(113, 111)])
            .collect();
        assert_eq!(
            site_combinations(&sites, &BTreeMap::new()).as_deref(),
            Some("trans_a=111,trans_b=113;trans_a=113,trans_b=111")
        );
    }

    /// The locals `locals` reads off function `f` of `src`, with `known` set first.
    fn locals_of_f(src: &str, known: &[(&str, i64)]) -> Vec<Local> {
        let b = Scanner::new(src).function("f", 0, src.len()).unwrap();
        let text = &src[b.open..b.close];
        let stmt_of = |at: usize| {
            b.stmt_at(at)
                .map(|s| (s.start, s.conds.clone(), s.cond_at.clone()))
        };
        let mut env = Env::default();
        for (name, v) in known {
            env.values.insert(name.to_string(), Value::Int(*v));
        }
        let mut seen = Vec::new();
        locals(text, b.open, &stmt_of, &mut env, &mut seen);
        seen
    }

    /// The text of `src`, the body of its function `name`, and the offset of `call`.
    fn parsed(src: &str, name: &str, call: &str) -> (Text, Body, usize) {
        let t = Text::new(src.to_string());
        let b = Scanner::new(src).function(name, 0, src.len()).unwrap();
        (t, b, src.find(call).unwrap())
    }

    #[test]
    fn a_chunk_a_loop_cuts_off_what_is_left_is_never_empty() {
        // rocblas_dot_kernels_64.cpp:94-110, cut down.
        let src = "rocblas_status f(int64_t n_64, int64_t batch_count_64) {\n for(int64_t b_base = 0; b_base < batch_count_64; b_base += c_i64_grid_YZ_chunk)\n {\n int32_t batch_count = int32_t(std::min(batch_count_64 - b_base, c_i64_grid_YZ_chunk));\n for(int64_t n_base = 0, pass = 0; n_base < n_64; n_base += c_i64_grid_X_chunk, pass++)\n {\n int32_t n = int32_t(std::min(n_64 - n_base, c_i64_grid_X_chunk));\n int32_t m = int32_t(std::min(n_64 - n_base, other));\n rocblas_status status = launcher(n, batch_count, m);\n }\n }\n return rocblas_status_success;\n}\n";
        let (t, b, at) = parsed(src, "f", "launcher(");
        assert_eq!(chunk_sizes(&t, &b, at), ["batch_count >= 1", "n >= 1"]);
    }

    #[test]
    fn a_blocked_loop_bounds_each_block_and_the_last() {
        // roclapack_potrf.hpp:186-271, cut down: the blocks the unblocked step gets are
        // at most nb wide, and so is what the loop leaves, on either branch.
        let src = "rocblas_status f(int n, bool up) {\n int nb = 127;\n if(n <= 127)\n return potf2(n);\n int jb, j = 0;\n if(up)\n {\n while(j < n - 127)\n {\n jb = std::min(n - j, nb);\n potf2(jb);\n j += nb;\n }\n }\n else\n {\n while(j < n - 127)\n {\n jb = std::min(n - j, nb);\n potf2(jb);\n j += nb;\n }\n }\n if(j < n)\n {\n potf2(n - j);\n }\n return rocblas_status_success;\n}\n";
        let mut env = Env::default();
        env.values.insert("nb".into(), Value::Int(127));
        let (t, b, at) = parsed(src, "f", "potf2(jb");
        assert_eq!(upper_bounds(&t, &b, at, "jb", "n", &env), ["n <= 127"]);
        let (t, b, at) = parsed(src, "f", "potf2(n - j");
        assert_eq!(upper_bounds(&t, &b, at, "n - j", "n", &env), ["n <= 127"]);
        // A loop on one branch only leaves the other path unbounded.
        let one = src.replacen("while(j < n - 127)", "while(j < m)", 1);
        let (t, b, at) = parsed(&one, "f", "potf2(n - j");
        assert!(upper_bounds(&t, &b, at, "n - j", "n", &env).is_empty());
        // A loop that may stop early leaves nothing known.
        let broken = src.replace("j += nb;", "j += nb;\n if(bad) break;");
        let (t, b, at) = parsed(&broken, "f", "potf2(n - j");
        assert!(upper_bounds(&t, &b, at, "n - j", "n", &env).is_empty());
        // A 64-bit launcher's chunk of a batch count of 1 is at most 1.
        let chunked = "rocblas_status f(int64_t bc_64) {\n for(int64_t b_base = 0; b_base < bc_64; b_base += c_chunk)\n {\n int32_t bc = int32_t(std::min(bc_64 - b_base, c_chunk));\n launcher(bc);\n }\n return rocblas_status_success;\n}\n";
        let mut one = Env::default();
        one.values.insert("bc_64".into(), Value::Int(1));
        let (t, b, at) = parsed(chunked, "f", "launcher(");
        assert_eq!(
            upper_bounds(&t, &b, at, "bc", "batch_count", &one),
            ["batch_count <= 1"]
        );
        assert!(names_a_type("T") && names_a_type("rocblas_float_complex") && !names_a_type("NB"));
        // The first call's test reads as its number.
        assert_eq!(folded("n <= (nb)", &env), "n <= 127");
        assert_eq!(folded("not (n <= (nb))", &env), "not (n <= 127)");
        assert_eq!(folded("n <= nb", &env), "n <= nb");
    }

    #[test]
    fn an_argument_computed_from_held_names_is_bounded_in_the_callee() {
        // roclapack_geqr2.hpp's column loop, cut down: `m - j` with `j < min(m, n)`.
        let src = "rocblas_status f(int m, int n) {\n if(m == 0 || n == 0)\n return rocblas_status_success;\n int dim = std::min(m, n);\n for(int j = 0; j < dim; ++j)\n {\n larfg(m - j, n - j);\n }\n return rocblas_status_success;\n}\n";
        let (t, b, at) = parsed(src, "f", "larfg(");
        let held = held_at(&t, &b, at, &Env::default());
        assert_eq!(argument_bounds(&t, &b, at, "m - j", &held, "n"), ["n >= 1"]);
        // min(m, n) <= n as well.
        assert_eq!(argument_bounds(&t, &b, at, "n - j", &held, "k"), ["k >= 1"]);
        // roclapack_gebd2.hpp:178: `n - j - 1` with `j < n` is never negative.
        assert_eq!(
            argument_bounds(&t, &b, at, "n - j - 1", &held, "k"),
            ["k >= 0"]
        );
        assert!(argument_bounds(&t, &b, at, "n - i - 1", &held, "k").is_empty());
        // roclapack_gebd2.hpp:134-140: `m - j` with `j < n` inside `if(m >= n)`, and
        // `n - j` with `j < m` in its `else`.
        let src = "rocblas_status f(int m, int n) {\n if(m >= n)\n {\n for(int j = 0; j < n; j++)\n larfg(m - j);\n }\n else\n {\n for(int j = 0; j < m; j++)\n larfg(n - j);\n }\n return rocblas_status_success;\n}\n";
        for (call, arg) in [("larfg(m", "m - j"), ("larfg(n", "n - j")] {
            let (t, b, at) = parsed(src, "f", call);
            let held = held_at(&t, &b, at, &Env::default());
            assert_eq!(
                argument_bounds(&t, &b, at, arg, &held, "n"),
                ["n >= 1"],
                "{held:?}"
            );
        }
        // A loop index written in the body bounds nothing.
        let src2 = src.replace("larfg(m - j", "j += 2;\n larfg(m - j");
        let (t2, b2, at2) = parsed(&src2, "f", "larfg(");
        assert!(argument_bounds(&t2, &b2, at2, "m - j", &held, "n").is_empty());
        // rocauxiliary_larfg.hpp:266-296, cut down: past `n == 0` and (for a real
        // type) `n == 1`, the dot of the `n - 1` elements below the first has `n >= 1`.
        let held = [
            "n >= 1".to_string(),
            "not (n == 0 || batch_count == 0)".to_string(),
            "not (n == 1)".to_string(),
        ];
        assert_eq!(
            super::super::eval::shifted_bounds(&held, "n", -1, "n"),
            ["n >= 1"]
        );
        // Without the real type's return, `n - 1` may be 0.
        assert_eq!(
            super::super::eval::shifted_bounds(&held[..2], "n", -1, "n"),
            ["n >= 0"]
        );
    }

    #[test]
    fn a_member_a_constructor_sets_from_a_literal_holds_where_the_object_goes() {
        // tensile_host.hpp:126-158 and gemm_tensile.hpp:188-221, cut down.
        let header = "struct P {\n const T* A;\n const T* const* batch_A;\n int m;\n P(rocblas_handle handle, int m, const T* A, const T* const* batch_A, bool strided = false)\n : handle(handle)\n , m(m)\n , A(A)\n , row_stride_a(1)\n , batch_A(batch_A)\n {\n }\n};\n";
        let ctors = constructors([("p.hpp", header)].into_iter());
        assert_eq!(
            ctors.get("P"),
            Some(&vec![(
                5,
                vec![
                    (0, "handle".to_string()),
                    (1, "m".to_string()),
                    (2, "A".to_string()),
                    (3, "batch_A".to_string())
                ]
            )])
        );
        let src = "rocblas_status f(rocblas_handle handle, const T* A, int m) {\n P<T> problem{handle, 0, A, nullptr, true};\n return run(problem, 1);\n}\n";
        let (t, b, at) = parsed(src, "f", "run(");
        let args = vec!["problem".to_string(), "1".to_string()];
        assert_eq!(
            constructed_fields(&t, &b, at, &args, &ctors),
            ["problem.m == 0", "problem.batch_A == 0"]
        );
        let names: BTreeMap<&str, &str> = [("problem", "prob")].into();
        assert_eq!(
            renamed("problem.batch_A == 0", &names).as_deref(),
            Some("prob.batch_A == 0")
        );
        // Another arity is another constructor.
        let src = src.replace(", true}", "}");
        let (t, b, at) = parsed(&src, "f", "run(");
        assert!(constructed_fields(&t, &b, at, &args, &ctors).is_empty());
    }

    #[test]
    fn a_receivers_accessor_test_holds_in_its_member_call() {
        // handle.hpp:393-396 and rocblas_iamax_imp.hpp:59-64, cut down: the query
        // branch calls `set_optimal_device_memory_size`, whose own
        // `!device_memory_size_query` return cannot fire.
        let header = "struct H {\n bool is_device_memory_size_query() const\n {\n return device_memory_size_query;\n }\n size_t get_size() const { return size; }\n};\nstruct G {\n size_t get_size() const { return other; }\n};\n";
        let acc = accessors([("h.hpp", header)].into_iter());
        assert_eq!(
            acc.get("is_device_memory_size_query").map(String::as_str),
            Some("device_memory_size_query")
        );
        // Two classes give the name different members.
        assert!(!acc.contains_key("get_size"));
        let src = "rocblas_status f(rocblas_handle handle, int n) {\n if(handle->is_device_memory_size_query())\n {\n if(n == 0)\n return rocblas_status_size_unchanged;\n return handle->set_optimal_device_memory_size(n);\n }\n return rocblas_status_success;\n}\n";
        let (t, b, at) = parsed(src, "f", "set_optimal_device_memory_size(");
        let held = held_at(&t, &b, at, &Env::default());
        assert_eq!(
            receiver_held(&t, at, &held, &acc),
            ["device_memory_size_query"]
        );
        // A plain call has no receiver.
        let plain = src.replace("handle->set_optimal", "set_optimal");
        let (t, b, at) = parsed(&plain, "f", "set_optimal_device_memory_size(");
        let held = held_at(&t, &b, at, &Env::default());
        assert!(receiver_held(&t, at, &held, &acc).is_empty());
    }

    #[test]
    fn a_copy_of_a_parameter_is_held_to_what_the_parameter_is() {
        // rocblas_dot_kernels_64.cpp:253-290, cut down: the single-block branch copies
        // `n_64` into a 32-bit `n`, under a test that bounds `n_64` from above.
        let src = "rocblas_status f(int64_t n_64, int64_t m_64) {\n if(n_64 > threshold)\n return rocblas_status_success;\n int32_t n = n_64;\n int32_t m = m_64;\n int64_t k = m_64;\n int64_t j = m_64;\n j = 2;\n return launcher(n, m, k, j);\n}\n";
        let (t, b, at) = parsed(src, "f", "launcher(");
        let params = [
            ("int64_t".to_string(), "n_64".to_string()),
            ("int64_t".to_string(), "m_64".to_string()),
        ];
        let held = held_at(&t, &b, at, &Env::default());
        let copies = copies(&t, &b);
        let from = |local| copied_from(&t, &copies, at, local, &params, &held);
        assert_eq!(from("n"), Some("n_64"));
        // Narrowed with nothing bounding it: not the same value.
        assert_eq!(from("m"), None);
        assert_eq!(from("k"), Some("m_64"));
        // Written again before the call.
        assert_eq!(from("j"), None);
    }

    #[test]
    fn a_class_templates_arguments_come_from_the_objects_declaration() {
        // rocsolver_hybrid_storage.hpp:56-62, 214 and rocauxiliary_sterf.hpp:410-414,
        // cut down.
        let storage = "template <typename T, typename I, typename U, std::enable_if_t<!std::is_pointer<T>::value, int> = 0>\nstruct rocsolver_hybrid_storage\n{\n rocblas_status init_async(I dim, U array)\n {\n bool constexpr is_strided = (std::is_same<U, T*>::value || std::is_same<U, T* const>::value);\n if(is_strided) { return rocblas_status_success; }\n return rocblas_status_continue;\n }\n};\n";
        let st = Text::new(storage.to_string());
        let at = storage.find("init_async").unwrap();
        let (name, params) = class_template_around(&st, at).expect("class template");
        assert_eq!(name, "rocsolver_hybrid_storage");
        assert_eq!(
            params,
            [Some("T".into()), Some("I".into()), Some("U".into()), None]
        );
        let body = Scanner::new(storage)
            .function("init_async", 0, storage.len())
            .unwrap();
        assert_eq!(constexpr_flags(&st, &body)[0].0, "is_strided");
        let caller = "void sterf(float* D, rocblas_int* info)\n{\n rocsolver_hybrid_storage<T, rocblas_int, U> hD;\n rocsolver_hybrid_storage<rocblas_int, rocblas_int, rocblas_int*> hInfo;\n hD.init_async(n, D);\n hInfo . init_async(1, info);\n}\n";
        let ct = Text::new(caller.to_string());
        let cb = Scanner::new(caller)
            .function("sterf", 0, caller.len())
            .unwrap();
        let env = Env {
            values: [
                ("T".to_string(), Value::Type("float".into())),
                ("U".to_string(), Value::Type("float*".into())),
            ]
            .into(),
            ..Env::default()
        };
        let args = |call: &str| {
            class_arguments(&ct, &cb, caller.find(call).unwrap(), &name, &params, &env)
        };
        assert_eq!(
            args("init_async(n"),
            [
                ("T".to_string(), "float".to_string()),
                ("I".to_string(), "int32_t".to_string()),
                ("U".to_string(), "float*".to_string())
            ]
        );
        assert_eq!(args("init_async(1")[2], ("U".into(), "int32_t*".into()));
        // Both objects are strided, whatever their element types.
        for call in ["init_async(n", "init_async(1"] {
            let typed = Env {
                values: args(call)
                    .into_iter()
                    .map(|(p, ty)| (p, Value::Type(ty)))
                    .collect(),
                ..Env::default()
            };
            let (_, test) = &constexpr_flags(&st, &body)[0];
            assert_eq!(condition(test, &typed), Truth::True);
        }
    }

    #[test]
    fn a_check_function_rules_out_what_it_returns_another_status_for() {
        // rocblas_hbmv.hpp:48-72, cut down.
        let src = "template <typename API_INT>\nrocblas_status check(rocblas_handle handle, API_INT n, API_INT batch_count, const float* alpha) {\n if(n < 0 || batch_count < 0)\n return rocblas_status_invalid_size;\n if(!n || !batch_count)\n return rocblas_status_success;\n if(handle->pointer_mode == rocblas_pointer_mode_host)\n {\n if(*alpha == 0)\n return rocblas_status_success;\n }\n if(n > 8)\n return rocblas_status_continue;\n if(!alpha)\n return rocblas_status_invalid_pointer;\n return rocblas_status_continue;\n}\n";
        let t = Text::new(src.to_string());
        let b = Scanner::new(src).function("check", 0, src.len()).unwrap();
        // Past a `continue` under a condition, a return is reached only on some paths.
        assert_eq!(
            status_returns(&t, &b),
            [
                "n < 0 || batch_count < 0",
                "!n || !batch_count",
                "handle->pointer_mode == rocblas_pointer_mode_host && *alpha == 0"
            ]
        );
        // What the caller passes `1` for reads as that number.
        let names: BTreeMap<&str, &str> = [
            ("handle", "handle"),
            ("n", "m"),
            ("batch_count", "1"),
            ("alpha", "alpha"),
        ]
        .into();
        let held = renamed("not (!n || !batch_count)", &names).unwrap();
        assert_eq!(held, "not (!m || !1)");
        let env = Env {
            values: [(format!("{HOLDS}{held}"), Value::Bool(true))].into(),
            ..Env::default()
        };
        assert_eq!(condition("!m", &env), Truth::False);
        assert_eq!(
            condition("m == 0 || batch_count == 0", &env),
            Truth::Open("batch_count == 0".into())
        );
    }

    #[test]
    fn what_every_path_to_a_call_has_passed_holds_in_the_callee() {
        // rocblas_dot_kernels_64.cpp:54-79, cut down: the quick return comes first, so
        // the 32-bit launcher it calls never sees `n <= 0 || batch_count == 0`.
        let src = "rocblas_status f(rocblas_handle handle, int64_t n_64, int64_t batch_count_64, int64_t incx_64, T* x) {\n if(n_64 <= 0 || batch_count_64 == 0)\n {\n if(handle->is_device_memory_size_query())\n return rocblas_status_size_unchanged;\n return rocblas_status_success;\n }\n if(std::abs(incx_64) <= c_ILP64_i32_max)\n {\n if(n_64 <= c_ILP64_i32_max)\n return launcher(handle, n_64, batch_count_64, x);\n }\n return rocblas_status_success;\n}\n";
        let (t, b, at) = parsed(src, "f", "launcher(");
        let held = held_at(&t, &b, at, &Env::default());
        assert!(
            held.contains(&"not (n_64 <= 0 || batch_count_64 == 0)".to_string()),
            "{held:?}"
        );
        assert!(held.contains(&"n_64 <= c_ILP64_i32_max".to_string()));
        // The return under two conditions says nothing on its own.
        assert!(!held
            .iter()
            .any(|h| h.contains("is_device_memory_size_query")));
        let names: BTreeMap<&str, &str> = [
            ("handle", "handle"),
            ("n_64", "n"),
            ("batch_count_64", "batch_count"),
        ]
        .into();
        assert_eq!(
            renamed("not (n_64 <= 0 || batch_count_64 == 0)", &names).as_deref(),
            Some("not (n <= 0 || batch_count == 0)")
        );
        assert_eq!(
            renamed(
                "handle->is_device_memory_size_query() && n_64 > c_ILP64_i32_max",
                &names
            )
            .as_deref(),
            Some("handle->is_device_memory_size_query() && n > c_ILP64_i32_max")
        );
        // A name of the caller's own (`std::abs(incx_64)`, incx_64 not passed) stays there.
        assert_eq!(
            renamed("std::abs(incx_64) <= c_ILP64_i32_max", &names),
            None
        );
        let mut callee = Env::default();
        callee.values.insert(
            format!("{HOLDS}not (n <= 0 || batch_count == 0)"),
            Value::Bool(true),
        );
        assert_eq!(
            condition("n <= 0 || batch_count == 0", &callee),
            Truth::False
        );
        assert_eq!(
            condition("not (n <= 0 || batch_count == 0)", &callee),
            Truth::True
        );
        // Each part of a disjunction ruled out is ruled out on its own.
        assert_eq!(condition("n <= 0", &callee), Truth::False);
        assert!(matches!(condition("n <= 5", &callee), Truth::Open(_)));
    }

    #[test]
    fn a_number_for_a_type_parameter_calls_another_overload() {
        // rocblas_trtri.hpp: `rocblas_internal_trtri_template<16>(...)` is the
        // `<rocblas_int NB, bool BATCHED, typename T>` form, not the `<typename T>` one.
        let by_type = Head {
            template: vec![("T".into(), false)],
            params: vec![("rocblas_handle".into(), "handle".into())],
            defaults: vec![None],
            required_template_args: 0,
            template_defaults: vec![None],
            requires: Vec::new(),
            variadic: false,
        };
        let by_value = Head {
            template: vec![("NB".into(), true), ("T".into(), false)],
            template_defaults: vec![None, None],
            required_template_args: 1,
            ..by_type.clone()
        };
        let site = Site {
            at: 0,
            template_args: vec!["16".into()],
            args: vec!["handle".into()],
        };
        assert!(!by_type.viable(&site));
        assert!(by_value.viable(&site));
        let typed = Site {
            template_args: vec!["float".into()],
            ..site
        };
        assert!(by_type.viable(&typed));
    }

    #[test]
    fn an_overload_for_another_element_type_is_not_the_one_called() {
        // rocblas_reduction.hpp:40-114: `rocblas_wavefront_reduce<N>(val)` on a float
        // `val` is the generic `T` overload, not the complex, half or bfloat16 ones.
        let complex = Head {
            template: vec![("N".into(), true)],
            params: vec![("rocblas_float_complex".into(), "val".into())],
            defaults: vec![None],
            required_template_args: 1,
            template_defaults: vec![None],
            requires: Vec::new(),
            variadic: false,
        };
        let generic = Head {
            template: vec![("N".into(), true), ("T".into(), false)],
            params: vec![("T".into(), "val".into())],
            template_defaults: vec![None, None],
            ..complex.clone()
        };
        let caller = Head {
            template: vec![("T".into(), false)],
            params: vec![
                ("T".into(), "val".into()),
                ("rocblas_stride".into(), "s".into()),
            ],
            defaults: vec![None, None],
            required_template_args: 0,
            template_defaults: vec![None],
            requires: Vec::new(),
            variadic: false,
        };
        let mut env = Env::default();
        env.values.insert("T".into(), Value::Type("float".into()));
        let site = Site {
            at: 0,
            template_args: vec!["warpSize".into()],
            args: vec!["val".into()],
        };
        let aliases = BTreeMap::new();
        assert!(!complex.takes_argument_types(&site, Some(&caller), &aliases, &env));
        assert!(generic.takes_argument_types(&site, Some(&caller), &aliases, &env));
        // Integers and their typedefs convert: an `int64_t` for a `rocblas_stride` is
        // no other overload.
        let strided = Head {
            params: vec![("int64_t".into(), "s".into())],
            ..complex.clone()
        };
        let by_stride = Site {
            args: vec!["s".into()],
            ..site
        };
        assert!(strided.takes_argument_types(&by_stride, Some(&caller), &aliases, &env));
        // A complex value: both fit, and the complex overload, declared for the
        // argument's own type, is the more specialized one.
        let mut env = Env::default();
        env.values
            .insert("T".into(), Value::Type("rocblas_complex_num<float>".into()));
        let site = Site {
            at: 0,
            template_args: vec!["warpSize".into()],
            args: vec!["val".into()],
        };
        assert!(complex.takes_argument_types(&site, Some(&caller), &aliases, &env));
        assert_eq!(
            complex.element_matches(&site, Some(&caller), &aliases, &env),
            [Some(true)]
        );
        assert_eq!(
            generic.element_matches(&site, Some(&caller), &aliases, &env),
            [None]
        );
    }

    #[test]
    fn types_deduce_from_declared_parameter_types() {
        let params: BTreeSet<String> = ["T", "Ta"].iter().map(|s| s.to_string()).collect();
        let mut got = BTreeMap::new();
        deduce("const T*", "const float*", &params, &mut got);
        assert_eq!(got.get("T"), Some(&Value::Type("float".into())));
        deduce("Ta", "const float*", &params, &mut got);
        assert_eq!(got.get("Ta"), Some(&Value::Type("const float*".into())));
        // By value, the argument's own `const` goes.
        let params: BTreeSet<String> = ["I"].iter().map(|s| s.to_string()).collect();
        let mut got = BTreeMap::new();
        deduce("I", "const int64_t", &params, &mut got);
        assert_eq!(got.get("I"), Some(&Value::Type("int64_t".into())));
        // rocblas_gemv_kernels.cpp:119 `const Ti* A` given a batched `const float* const*`:
        // `Ti` is the element pointer, so the launcher's `is_float` holds.
        let params: BTreeSet<String> = ["Ti"].iter().map(|s| s.to_string()).collect();
        let mut got = BTreeMap::new();
        deduce("const Ti*", "const float*const*", &params, &mut got);
        assert_eq!(got.get("Ti"), Some(&Value::Type("const float*".into())));
        let mut got = BTreeMap::new();
        deduce("const Ti*", "const float*", &params, &mut got);
        assert_eq!(got.get("Ti"), Some(&Value::Type("float".into())));
        // rocblas_gemv_kernels_64.cpp:81-88 hands its `Ti const* A` on (through
        // adjust_ptr_batch): `Ti` is the element, so cgemv_64's `is_float` is false.
        let mut got = BTreeMap::new();
        deduce(
            "const Ti*",
            "rocblas_complex_num<float>const*",
            &params,
            &mut got,
        );
        assert_eq!(
            got.get("Ti"),
            Some(&Value::Type("rocblas_complex_num<float>".into()))
        );
    }

    #[test]
    fn a_block_doubled_with_its_start_stays_below_the_loop_bound() {
        // rocblas_symm_hemm_kernels.cpp:562.
        let c = "loop: for (nb = nb_diag, i_start = nb_diag; i_start < ka; i_start += nb, nb *= 2)";
        assert_eq!(doubling_bound(c, "nb").as_deref(), Some("ka"));
        assert_eq!(doubling_bound(c, "i_start"), None);
        assert_eq!(doubling_bound(c, "n"), None);
        // Started apart: no bound.
        let apart = "loop: for (nb = 32, i_start = 64; i_start < ka; i_start += nb, nb *= 2)";
        assert_eq!(doubling_bound(apart, "nb"), None);
    }

    #[test]
    fn locals_read_in_order() {
        let mut env = Env::default();
        env.values.insert("Ty".into(), Value::Type("float*".into()));
        env.params.insert("Ty".into());
        let mut seen = Vec::new();
        locals(
            "{ static constexpr bool using_rocblas_float = std::is_same_v<Ty, rocblas_float*> || std::is_same_v<Ty, rocblas_float* const*>;\n static constexpr API_INT batch_count_1 = 1;\n constexpr int DIM_Y = batch_count_1 * 8;",
            0,
            &|_| None,
            &mut env,
            &mut seen,
        );
        assert_eq!(seen.len(), 3);
        assert!(seen.windows(2).all(|w| w[0].end < w[1].end));
        assert_eq!(
            env.values.get("using_rocblas_float"),
            Some(&Value::Bool(true))
        );
        assert_eq!(env.values.get("DIM_Y"), Some(&Value::Int(8)));
    }

    #[test]
    fn a_pointer_mode_set_at_the_top_of_a_body_holds_for_what_follows() {
        // roclapack_getrs.hpp:145-147, then roclapack_gemm_specialized_kernels.hpp:201-202.
        let body = "{ rocblas_pointer_mode old_mode;\n rocblas_get_pointer_mode(handle, &old_mode);\n rocblas_set_pointer_mode(handle, rocblas_pointer_mode_host);\n rocblas_pointer_mode pmode;\n rocblas_get_pointer_mode(handle, &pmode);\n rocblas_set_pointer_mode(handle, old_mode); }";
        let mut env = Env::default();
        let mut seen = Vec::new();
        locals(body, 0, &|_| None, &mut env, &mut seen);
        let names: Vec<(&str, Option<&Value>)> = seen
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_ref()))
            .collect();
        assert_eq!(
            names,
            [
                // Declared, then read from the handle.
                ("old_mode", None),
                ("old_mode", None),
                (POINTER_MODE, Some(&Value::Int(0))),
                ("pmode", None),
                ("pmode", Some(&Value::Int(0))),
                // Restored to what the caller had: not known here.
                (POINTER_MODE, None),
            ]
        );
        assert_eq!(
            super::super::eval::condition("pmode == rocblas_pointer_mode_device", &{
                let mut e = Env::default();
                e.values.insert("pmode".into(), Value::Int(0));
                set_pointer_mode(&mut e, Some(0));
                e
            }),
            super::super::eval::Truth::False
        );
        // rocblas_gemm_batched_imp.hpp:74: pushed in the body's own block, it holds
        // for the rest of the function; pushed in an inner block, only to its end.
        let mut env = Env::default();
        let mut seen = Vec::new();
        locals(
            "{ auto saved_pointer_mode = handle->push_pointer_mode(rocblas_pointer_mode_host);\n { auto s2 = handle->push_pointer_mode(rocblas_pointer_mode_device); } }",
            0,
            &|_| None,
            &mut env,
            &mut seen,
        );
        let modes: Vec<(&str, Option<&Value>)> = seen
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_ref()))
            .collect();
        assert_eq!(
            modes,
            [
                // What the caller had: not known here.
                ("saved_pointer_mode", None),
                (POINTER_MODE, Some(&Value::Int(0))),
                ("s2", Some(&Value::Int(0))),
                (POINTER_MODE, Some(&Value::Int(1))),
                // Popped where the inner block closes.
                (POINTER_MODE, Some(&Value::Int(0))),
            ]
        );
        // Set under a branch: not known after it.
        let mut env = Env::default();
        let mut seen = Vec::new();
        locals(
            "{ if(x) rocblas_set_pointer_mode(handle, rocblas_pointer_mode_host); }",
            0,
            &|at| Some((at, vec!["x".into()], vec![0])),
            &mut env,
            &mut seen,
        );
        assert_eq!(seen[0].value, None);
        assert!(!env.values.contains_key(POINTER_MODE));
        // Set as a statement of a braced block: known in it, not after it.
        let text = "{ if(x) { rocblas_set_pointer_mode(handle, rocblas_pointer_mode_host); f(handle); } g(handle); }";
        let mut env = Env::default();
        let mut seen = Vec::new();
        locals(
            text,
            0,
            &|at| Some((at, vec!["x".into()], vec![0])),
            &mut env,
            &mut seen,
        );
        let at = |w: &str| text.find(w).unwrap();
        let known_at = |off: usize| {
            seen.iter()
                .rfind(|l| l.end <= off && l.name == POINTER_MODE)
                .and_then(|l| l.value.clone())
        };
        assert_eq!(known_at(at(" f(handle)")), Some(Value::Int(0)), "{seen:?}");
        assert_eq!(known_at(at("g(")), None);
    }
    #[test]
    fn a_local_set_to_a_choice_splits_a_site_by_its_test() {
        // rocblas_syrk_herk_kernels.cpp:95-113, cut down.
        let before = "{\n rocblas_operation trans_orig\n = rocblas_operation_none == trans_A\n ? rocblas_operation_none\n : (HERM ? rocblas_operation_conjugate_transpose : rocblas_operation_transpose);\n rocblas_operation trans_opp\n = rocblas_operation_none == trans_A\n ? (HERM ? rocblas_operation_conjugate_transpose : rocblas_operation_transpose)\n : rocblas_operation_none;\n ";
        assert_eq!(
            local_initializer(before, "trans_opp").as_deref(),
            Some("rocblas_operation_none == trans_A\n ? (HERM ? rocblas_operation_conjugate_transpose : rocblas_operation_transpose)\n : rocblas_operation_none")
        );
        let site = Site {
            at: before.len(),
            template_args: Vec::new(),
            args: vec!["handle".into(), "trans_orig".into(), "trans_opp".into()],
        };
        let split = by_shared_test(&site, before, &Env::default());
        let args: Vec<Vec<String>> = split.into_iter().map(|s| s.args).collect();
        assert_eq!(args.len(), 2, "{args:?}");
        assert_eq!(args[0][1], "rocblas_operation_none");
        assert_eq!(args[1][2], "rocblas_operation_none");
    }
}
