//! The review UI's state and every key as a pure transition, apart from drawing
//! ([`super::ui`]) and the terminal ([`super::app`]).
//!
//! A key either changes the state (selection, filters, the pending input mode) or asks
//! for an [`Effect`] only the app can carry out: a decision to log, an edit, quitting.
//! A decision shows in the state only once the log has written and synced it
//! ([`State::logged`]), so what the screen shows is what a kill would leave on disk.

use std::collections::HashMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::bound;
use super::log::{entry_hash, Action, Decision, ReviewRecord, ReviewState, Verdict};
use super::sample::SampleKey;

/// Reasons offered for `wrong`, after `../shared/audit/RUBRIC.md`.
pub const WRONG_REASONS: [&str; 5] = [
    "a statement is false for this API",
    "a citation does not hold the claim",
    "not a bug for this API whatever the inputs",
    "the explanation states a false effect",
    "the premise is false for this code",
];

/// Reasons offered for `weak`, after `../shared/audit/RUBRIC.md`.
pub const WEAK_REASONS: [&str; 5] = [
    "mechanical or thin",
    "trivia every API shares",
    "incomplete for what is asked",
    "hard to read",
    "text cut short",
];

/// Every key, as `?` shows them.
pub const KEYS: &[(&str, &str)] = &[
    ("j / Down", "next entry"),
    ("k / Up", "previous entry"),
    ("n", "next unreviewed entry"),
    ("Home / End", "first / last entry"),
    ("J / K", "scroll the detail pane a line"),
    ("PgDn / PgUp / Space", "scroll the detail pane a page"),
    ("a", "accept: good"),
    ("w", "weak, with a reason (1-5, or t to type one)"),
    (
        "r",
        "reject: wrong or broken, with a reason (1-5, or t to type one)",
    ),
    ("f", "flag for a second look"),
    ("m", "add a note"),
    ("e", "edit in $EDITOR (validated again before it counts)"),
    ("/", "filter: text in question, answer or code"),
    ("p", "filter: API glob (rocblas_?dot*)"),
    ("c", "filter: next category"),
    ("d", "filter: next difficulty"),
    ("g", "filter: next generator"),
    ("v", "filter: next validation status"),
    ("s", "filter: next review status"),
    ("0", "clear every filter"),
    ("?", "this help (Esc or ? closes, j/k scroll)"),
    ("q", "quit (every decision is already on disk)"),
];

/// Where an entry's validation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// Every check passed, and the cited code is as it was.
    Ok,
    /// A check in the entry's `validation` failed.
    Failed,
    /// The cited lines changed in the pinned tree since the entry was written.
    Stale,
    /// An edit of it was validated again and passed.
    Edited,
}

impl Validation {
    pub const ALL: [Validation; 4] = [
        Validation::Ok,
        Validation::Failed,
        Validation::Stale,
        Validation::Edited,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Validation::Ok => "ok",
            Validation::Failed => "failed",
            Validation::Stale => "stale",
            Validation::Edited => "edited",
        }
    }
}

/// Where an entry's review stands, for this reviewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Unreviewed,
    Good,
    Weak,
    Wrong,
    Flagged,
    /// Judged by this reviewer and another, differently: queued for settling.
    Disputed,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Unreviewed,
        Status::Good,
        Status::Weak,
        Status::Wrong,
        Status::Flagged,
        Status::Disputed,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unreviewed => "-",
            Status::Good => "good",
            Status::Weak => "weak",
            Status::Wrong => "wrong",
            Status::Flagged => "flagged",
            Status::Disputed => "disputed",
        }
    }
}

/// One entry under review.
#[derive(Debug, Clone)]
pub struct Item {
    pub entry: serde_json::Value,
    /// [`entry_hash`] of the entry as the file holds it: the key of its decisions.
    pub hash: String,
    pub validation: Validation,
    /// Why the validation is not `ok`.
    pub validation_note: Option<String>,
    pub key: SampleKey,
}

impl Item {
    /// An entry, its validation read off its own `validation` field.
    pub fn new(entry: serde_json::Value) -> Item {
        let failed = entry["validation"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["ok"].as_bool() == Some(false));
        Item {
            hash: entry_hash(&entry),
            validation: if failed.is_some() {
                Validation::Failed
            } else {
                Validation::Ok
            },
            validation_note: failed.map(|c| {
                format!(
                    "{}: {}",
                    c["name"].as_str().unwrap_or(""),
                    c["detail"].as_str().unwrap_or("")
                )
            }),
            key: SampleKey::of(&entry),
            entry,
        }
    }

    pub fn field(&self, k: &str) -> &str {
        self.entry[k].as_str().unwrap_or("")
    }
}

/// The filters in force (`None`: any).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    pub category: Option<String>,
    pub difficulty: Option<String>,
    pub generator: Option<String>,
    pub validation: Option<Validation>,
    pub review: Option<Status>,
    pub api: Option<String>,
    pub text: Option<String>,
}

/// What a typed line is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing {
    Text,
    Api,
    Note,
    Reason(Verdict),
}

/// The pending input mode.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Browse,
    Help,
    /// Picking a reason for a verdict from the list.
    Reason(Verdict),
    /// Typing a line.
    Typing(Typing, String),
}

/// What a key asks the app to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    None,
    /// Log this decision (then call [`State::logged`]).
    Decide(Decision),
    /// Edit the item at this index in `$EDITOR`.
    Edit(usize),
    Quit,
}

/// The review UI's state.
#[derive(Debug)]
pub struct State {
    pub items: Vec<Item>,
    /// This reviewer's state of each entry, by hash.
    pub own: HashMap<String, ReviewState>,
    /// Other reviewers' verdicts, by hash (shown only once this reviewer judged it).
    pub others: HashMap<String, Vec<(String, Verdict)>>,
    pub reviewer: String,
    /// The sample's seed, when the list is a spot-check sample.
    pub seed: Option<u64>,
    /// Where the entries came from, for the title.
    pub source: String,
    pub filters: Filters,
    /// Indices into `items` that pass the filters, in list order.
    pub visible: Vec<usize>,
    /// Index into `visible`.
    pub selected: usize,
    pub detail_scroll: u16,
    /// The detail pane's last scroll position (its end at the bottom), from the last draw.
    pub detail_max: u16,
    pub help_scroll: u16,
    /// Rows of the detail pane at the last draw (a page).
    pub page: u16,
    pub mode: Mode,
    /// The last thing that happened, for the status line.
    pub message: String,
}

fn cycle<T: Clone + PartialEq>(current: &Option<T>, all: &[T]) -> Option<T> {
    match current
        .as_ref()
        .and_then(|c| all.iter().position(|a| a == c))
    {
        None => all.first().cloned(),
        Some(k) => all.get(k + 1).cloned(),
    }
}

impl State {
    /// The state over `items` in list order, with this reviewer's past decisions and
    /// the selection on the first entry not yet judged (where the last session stopped).
    pub fn new(
        items: Vec<Item>,
        own: HashMap<String, ReviewState>,
        others: HashMap<String, Vec<(String, Verdict)>>,
        reviewer: &str,
    ) -> State {
        let mut s = State {
            items,
            own,
            others,
            reviewer: reviewer.to_string(),
            seed: None,
            source: String::new(),
            filters: Filters::default(),
            visible: Vec::new(),
            selected: 0,
            detail_scroll: 0,
            detail_max: u16::MAX,
            help_scroll: 0,
            page: 20,
            mode: Mode::Browse,
            message: String::new(),
        };
        s.refilter();
        s.selected = (0..s.visible.len())
            .find(|&k| s.status(s.visible[k]) == Status::Unreviewed)
            .unwrap_or(0);
        s
    }

    /// The selected item's index into `items`.
    pub fn current(&self) -> Option<usize> {
        self.visible.get(self.selected).copied()
    }

    /// The entry as it now reads: this reviewer's validated edit of it, or the file's.
    pub fn shown(&self, i: usize) -> &serde_json::Value {
        let item = &self.items[i];
        self.own
            .get(&item.hash)
            .and_then(|o| o.edited.as_ref())
            .unwrap_or(&item.entry)
    }

    /// This reviewer's status of an item.
    pub fn status(&self, i: usize) -> Status {
        let item = &self.items[i];
        let Some(own) = self.own.get(&item.hash) else {
            return Status::Unreviewed;
        };
        if own.flagged {
            return Status::Flagged;
        }
        let Some(v) = own.verdict else {
            return Status::Unreviewed;
        };
        let others = self.others.get(&item.hash).into_iter().flatten();
        if others.into_iter().any(|(_, o)| *o != v) {
            return Status::Disputed;
        }
        match v {
            Verdict::Good => Status::Good,
            Verdict::Weak => Status::Weak,
            Verdict::Wrong => Status::Wrong,
        }
    }

    /// Verdicts given (`good`, `weak`, `wrong`) over the whole list.
    pub fn tallies(&self) -> (u64, u64, u64) {
        let mut t = (0, 0, 0);
        for item in &self.items {
            match self.own.get(&item.hash).and_then(|s| s.verdict) {
                Some(Verdict::Good) => t.0 += 1,
                Some(Verdict::Weak) => t.1 += 1,
                Some(Verdict::Wrong) => t.2 += 1,
                None => {}
            }
        }
        t
    }

    /// The stop rule: the upper bound on the share of wrong entries, from the verdicts
    /// so far, and the clean verdicts still needed to bring it under 5%.
    pub fn bound(&self) -> (Option<f64>, u64) {
        let (g, w, x) = self.tallies();
        let n = g + w + x;
        (
            bound::upper_bound(x, n, bound::CONFIDENCE),
            bound::clean_decisions_to(0.05, x, n, bound::CONFIDENCE),
        )
    }

    fn passes(&self, i: usize) -> bool {
        let item = &self.items[i];
        let f = &self.filters;
        let eq = |want: &Option<String>, k: &str| want.as_ref().is_none_or(|w| w == item.field(k));
        if !(eq(&f.category, "category")
            && eq(&f.difficulty, "difficulty")
            && eq(&f.generator, "generator"))
        {
            return false;
        }
        if f.validation.is_some_and(|v| v != item.validation)
            || f.review.is_some_and(|r| r != self.status(i))
        {
            return false;
        }
        if let Some(glob) = &f.api {
            let Ok(g) = globset::Glob::new(glob) else {
                return false;
            };
            let m = g.compile_matcher();
            let apis = item.entry["apis"].as_array().into_iter().flatten();
            if !m.is_match(item.field("api"))
                && !apis.filter_map(|a| a.as_str()).any(|a| m.is_match(a))
            {
                return false;
            }
        }
        if let Some(t) = &f.text {
            let t = t.to_lowercase();
            if !["question", "answer", "code", "id"]
                .iter()
                .any(|k| item.field(k).to_lowercase().contains(&t))
            {
                return false;
            }
        }
        true
    }

    /// Applies the filters, keeping the selected entry selected while it passes.
    pub fn refilter(&mut self) {
        let was = self.current();
        self.visible = (0..self.items.len()).filter(|&i| self.passes(i)).collect();
        self.selected = was
            .and_then(|w| self.visible.iter().position(|&i| i == w))
            .unwrap_or(0);
        self.detail_scroll = 0;
    }

    fn distinct(&self, k: &str) -> Vec<String> {
        let mut v: Vec<String> = self.items.iter().map(|i| i.field(k).to_string()).collect();
        v.sort();
        v.dedup();
        v
    }

    fn select(&mut self, k: usize) {
        if !self.visible.is_empty() {
            self.selected = k.min(self.visible.len() - 1);
            self.detail_scroll = 0;
        }
    }

    fn next_unreviewed(&mut self) {
        let n = self.visible.len();
        let found = (1..=n)
            .map(|d| (self.selected + d) % n)
            .find(|&k| self.status(self.visible[k]) == Status::Unreviewed);
        match found {
            Some(k) => self.select(k),
            None => self.message = "every entry in the list is reviewed".into(),
        }
    }

    fn decision(&self, action: Action) -> Option<Decision> {
        let item = &self.items[self.current()?];
        Some(Decision {
            entry_id: item.field("id").to_string(),
            entry_hash: item.hash.clone(),
            action,
            verdict: None,
            reason: None,
            note: None,
            edited: None,
            reviewer: self.reviewer.clone(),
        })
    }

    fn verdict(&self, v: Verdict, reason: Option<String>) -> Effect {
        match self.decision(Action::Verdict) {
            Some(mut d) => {
                d.verdict = Some(v);
                d.reason = reason;
                Effect::Decide(d)
            }
            None => Effect::None,
        }
    }

    /// Takes a written record into the state; after a verdict, moves on to the next
    /// entry not yet judged.
    pub fn logged(&mut self, r: &ReviewRecord) {
        let s = self.own.entry(r.entry_hash.clone()).or_default();
        match r.action {
            Action::Verdict => {
                s.verdict = r.verdict;
                s.reason = r.reason.clone();
                s.reviewer = Some(r.reviewer.clone());
                s.flagged = false;
            }
            Action::Flag => s.flagged = true,
            Action::Note => s.notes.extend(r.note.clone()),
            Action::Edit => s.edited = r.edited.clone(),
        }
        let verdict = r.verdict.map_or("", |v| match v {
            Verdict::Good => " good",
            Verdict::Weak => " weak",
            Verdict::Wrong => " wrong",
        });
        self.message = format!(
            "logged #{} {:?}{verdict} for {}",
            r.seq, r.action, r.entry_id
        )
        .to_lowercase();
        if r.action == Action::Edit {
            if let Some(i) = self.items.iter().position(|it| it.hash == r.entry_hash) {
                self.items[i].validation = Validation::Edited;
            }
        }
        if r.action == Action::Verdict {
            let still = self.current().is_some_and(|i| self.passes(i));
            if still {
                self.next_unreviewed();
            } else {
                self.refilter();
            }
        }
    }

    /// One key.
    pub fn key(&mut self, k: KeyEvent) -> Effect {
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            return Effect::Quit;
        }
        match self.mode.clone() {
            Mode::Browse => self.browse_key(k),
            Mode::Help => {
                match k.code {
                    KeyCode::Char('j') | KeyCode::Down => self.help_scroll += 1,
                    KeyCode::Char('k') | KeyCode::Up => {
                        self.help_scroll = self.help_scroll.saturating_sub(1)
                    }
                    KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') => {
                        self.mode = Mode::Browse
                    }
                    _ => {}
                }
                Effect::None
            }
            Mode::Reason(v) => {
                let reasons = if v == Verdict::Wrong {
                    &WRONG_REASONS
                } else {
                    &WEAK_REASONS
                };
                match k.code {
                    KeyCode::Char(c @ '1'..='9') => {
                        let k = c as usize - '1' as usize;
                        if let Some(r) = reasons.get(k) {
                            self.mode = Mode::Browse;
                            return self.verdict(v, Some(r.to_string()));
                        }
                    }
                    KeyCode::Char('t') => {
                        self.mode = Mode::Typing(Typing::Reason(v), String::new())
                    }
                    KeyCode::Esc => self.mode = Mode::Browse,
                    _ => {}
                }
                Effect::None
            }
            Mode::Typing(what, mut line) => match k.code {
                KeyCode::Esc => {
                    self.mode = Mode::Browse;
                    Effect::None
                }
                KeyCode::Backspace => {
                    line.pop();
                    self.mode = Mode::Typing(what, line);
                    Effect::None
                }
                KeyCode::Char(c) => {
                    line.push(c);
                    self.mode = Mode::Typing(what, line);
                    Effect::None
                }
                KeyCode::Enter => {
                    self.mode = Mode::Browse;
                    self.typed(what, line.trim().to_string())
                }
                _ => Effect::None,
            },
        }
    }

    fn typed(&mut self, what: Typing, line: String) -> Effect {
        let some = (!line.is_empty()).then_some(line.clone());
        match what {
            Typing::Text => {
                self.filters.text = some;
                self.refilter();
            }
            Typing::Api => {
                if globset::Glob::new(&line).is_err() {
                    self.message = format!("not a glob: {line}");
                    return Effect::None;
                }
                self.filters.api = some;
                self.refilter();
            }
            Typing::Note => {
                if let (Some(note), Some(mut d)) = (some, self.decision(Action::Note)) {
                    d.note = Some(note);
                    return Effect::Decide(d);
                }
            }
            Typing::Reason(v) => {
                if some.is_none() {
                    self.message = "a typed reason cannot be empty".into();
                    return Effect::None;
                }
                return self.verdict(v, some);
            }
        }
        Effect::None
    }

    fn browse_key(&mut self, k: KeyEvent) -> Effect {
        let page = self.page.max(1);
        match k.code {
            KeyCode::Char('q') => return Effect::Quit,
            KeyCode::Char('?') => {
                self.mode = Mode::Help;
                self.help_scroll = 0;
            }
            KeyCode::Char('j') | KeyCode::Down => self.select(self.selected + 1),
            KeyCode::Char('k') | KeyCode::Up => self.select(self.selected.saturating_sub(1)),
            KeyCode::Home => self.select(0),
            KeyCode::End => self.select(usize::MAX),
            KeyCode::Char('n') => self.next_unreviewed(),
            KeyCode::Char('J') => {
                self.detail_scroll = self.detail_scroll.saturating_add(1).min(self.detail_max)
            }
            KeyCode::Char('K') => self.detail_scroll = self.detail_scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => {
                self.detail_scroll = self.detail_scroll.saturating_add(page).min(self.detail_max)
            }
            KeyCode::PageUp => self.detail_scroll = self.detail_scroll.saturating_sub(page),
            KeyCode::Char('a') => return self.verdict(Verdict::Good, None),
            KeyCode::Char('w') if self.current().is_some() => {
                self.mode = Mode::Reason(Verdict::Weak)
            }
            KeyCode::Char('r') if self.current().is_some() => {
                self.mode = Mode::Reason(Verdict::Wrong)
            }
            KeyCode::Char('f') => {
                return self
                    .decision(Action::Flag)
                    .map_or(Effect::None, Effect::Decide)
            }
            KeyCode::Char('m') if self.current().is_some() => {
                self.mode = Mode::Typing(Typing::Note, String::new())
            }
            KeyCode::Char('e') => return self.current().map_or(Effect::None, Effect::Edit),
            KeyCode::Char('/') => {
                let now = self.filters.text.clone().unwrap_or_default();
                self.mode = Mode::Typing(Typing::Text, now)
            }
            KeyCode::Char('p') => {
                let now = self.filters.api.clone().unwrap_or_default();
                self.mode = Mode::Typing(Typing::Api, now)
            }
            KeyCode::Char('c') => {
                self.filters.category = cycle(&self.filters.category, &self.distinct("category"));
                self.refilter();
            }
            KeyCode::Char('d') => {
                self.filters.difficulty =
                    cycle(&self.filters.difficulty, &self.distinct("difficulty"));
                self.refilter();
            }
            KeyCode::Char('g') => {
                self.filters.generator =
                    cycle(&self.filters.generator, &self.distinct("generator"));
                self.refilter();
            }
            KeyCode::Char('v') => {
                self.filters.validation = cycle(&self.filters.validation, &Validation::ALL);
                self.refilter();
            }
            KeyCode::Char('s') => {
                self.filters.review = cycle(&self.filters.review, &Status::ALL);
                self.refilter();
            }
            KeyCode::Char('0') => {
                self.filters = Filters::default();
                self.refilter();
            }
            _ => {}
        }
        Effect::None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::review::log::ReviewLog;

    pub(crate) fn entry(id: &str, category: &str, generator: &str, api: &str) -> serde_json::Value {
        serde_json::json!({
            "id": id, "lib": "rocblas", "version": "6.4.4", "family": "dot", "api": api,
            "apis": [api], "category": category, "difficulty": "L1", "generator": generator,
            "template_id": "t", "question": format!("What does {api} launch?"),
            "answer": format!("{api} launches rocblas_dot_kernel."), "code": null,
            "citations": [{"lib": "rocblas", "file": "library/src/blas1/rocblas_dot.hpp",
                           "start": 3, "end": 5, "sha256": "00"}],
            "validation": [{"name": "schema", "ok": true, "detail": "fits"}],
        })
    }

    pub(crate) fn test_state() -> State {
        let items = vec![
            Item::new(entry("rocblas-1", "semantics", "facts", "rocblas_sdot")),
            Item::new(entry(
                "rocblas-2",
                "api-to-kernel",
                "facts",
                "rocblas_sscal",
            )),
            Item::new(entry("rocblas-3", "semantics", "mutation", "rocblas_ddot")),
        ];
        State::new(items, HashMap::new(), HashMap::new(), "r1")
    }

    fn press(s: &mut State, keys: &str) -> Vec<Effect> {
        keys.chars()
            .map(|c| {
                let code = match c {
                    '\n' => KeyCode::Enter,
                    '\x1b' => KeyCode::Esc,
                    c => KeyCode::Char(c),
                };
                s.key(KeyEvent::new(code, KeyModifiers::NONE))
            })
            .filter(|e| *e != Effect::None)
            .collect()
    }

    /// Carries out decisions as the app does: through a real log.
    fn run(s: &mut State, log: &mut ReviewLog, keys: &str) -> Vec<Effect> {
        let effects = press(s, keys);
        for e in &effects {
            if let Effect::Decide(d) = e {
                let r = log.append(d.clone()).unwrap().clone();
                s.logged(&r);
            }
        }
        effects
    }

    #[test]
    fn verdicts_move_on_and_resume_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reviews.jsonl");
        let mut log = ReviewLog::open(&path).unwrap();
        let mut s = test_state();
        assert_eq!(s.current(), Some(0));
        run(&mut s, &mut log, "a");
        assert_eq!(
            s.current(),
            Some(1),
            "a verdict moves on to the next unreviewed"
        );
        // Reject with the second listed reason.
        run(&mut s, &mut log, "r2");
        let states = ReviewLog::open(&path).unwrap().states();
        let second = &states[&s.items[1].hash];
        assert_eq!(second.verdict, Some(Verdict::Wrong));
        assert_eq!(second.reason.as_deref(), Some(WRONG_REASONS[1]));
        assert_eq!(s.tallies(), (1, 0, 1));
        // Reopening resumes at the one left.
        let log = ReviewLog::open(&path).unwrap();
        let again = State::new(
            s.items.clone(),
            log.states_by(Some("r1")),
            HashMap::new(),
            "r1",
        );
        assert_eq!(again.current(), Some(2));
        assert_eq!(again.status(1), Status::Wrong);
    }

    #[test]
    fn typed_reason_note_flag_and_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ReviewLog::open(&dir.path().join("reviews.jsonl")).unwrap();
        let mut s = test_state();
        // Esc leaves the reason list without a decision.
        assert!(run(&mut s, &mut log, "w\x1b").is_empty());
        run(&mut s, &mut log, "wtsays nothing new\n");
        assert_eq!(
            s.own[&s.items[0].hash].reason.as_deref(),
            Some("says nothing new")
        );
        assert_eq!(s.status(0), Status::Weak);
        run(&mut s, &mut log, "kfmcheck line 40\n");
        assert_eq!(s.status(0), Status::Flagged);
        assert_eq!(s.own[&s.items[0].hash].notes, ["check line 40"]);
        assert_eq!(log.records().len(), 3);
        // An empty typed reason decides nothing.
        assert!(run(&mut s, &mut log, "rt\n").is_empty());
        assert!(press(&mut s, "e").contains(&Effect::Edit(0)));
        assert!(press(&mut s, "q").contains(&Effect::Quit));
    }

    #[test]
    fn filters_narrow_the_list_and_clear() {
        let mut s = test_state();
        press(&mut s, "c"); // first category: api-to-kernel
        assert_eq!(s.visible, [1]);
        press(&mut s, "c"); // semantics
        assert_eq!(s.visible, [0, 2]);
        press(&mut s, "g"); // facts
        assert_eq!(s.visible, [0]);
        press(&mut s, "0");
        assert_eq!(s.visible, [0, 1, 2]);
        press(&mut s, "procblas_?dot\n");
        assert_eq!(s.visible, [0, 2]);
        press(&mut s, "0/SSCAL\n");
        assert_eq!(s.visible, [1]);
        press(&mut s, "0ss"); // review status: good
        assert!(s.visible.is_empty());
        press(&mut s, "0v"); // validation ok
        assert_eq!(s.visible.len(), 3);
    }

    #[test]
    fn a_disagreement_is_queued_once_both_judged() {
        let mut s = test_state();
        let h = s.items[0].hash.clone();
        s.others
            .insert(h.clone(), vec![("r2".into(), Verdict::Wrong)]);
        assert_eq!(s.status(0), Status::Unreviewed, "blind until judged");
        s.own.insert(
            h,
            ReviewState {
                verdict: Some(Verdict::Good),
                ..Default::default()
            },
        );
        assert_eq!(s.status(0), Status::Disputed);
    }

    #[test]
    fn the_bound_is_live() {
        let mut s = test_state();
        assert_eq!(s.bound(), (None, 59));
        s.own.insert(
            s.items[0].hash.clone(),
            ReviewState {
                verdict: Some(Verdict::Good),
                ..Default::default()
            },
        );
        let (b, more) = s.bound();
        assert!((b.unwrap() - 0.95).abs() < 1e-9);
        assert_eq!(more, 58);
    }
}
