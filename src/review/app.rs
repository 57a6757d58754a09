//! The terminal loop: reads keys, hands them to the [`State`], carries out the effects
//! (log a decision, edit in `$EDITOR`, quit) and draws.
//!
//! An edited entry counts only once `rocqa validate` (the same command and checks
//! users run on an entries file) keeps it; a rejected edit stays as a draft that the
//! next `e` opens again, and nothing is logged.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use crossterm::event::{self, Event, KeyEventKind};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use super::cited::Cited;
use super::log::{Action, ReviewLog};
use super::state::{Effect, State};
use super::ui;
use crate::config::Layout;

type Term = Terminal<CrosstermBackend<std::io::Stdout>>;

/// Puts the terminal back however the loop ends.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = disable_raw_mode();
        let _ = execute!(std::io::stdout(), LeaveAlternateScreen);
    }
}

fn enter() -> Result<()> {
    enable_raw_mode().context("switching the terminal to raw mode")?;
    execute!(std::io::stdout(), EnterAlternateScreen).context("entering the alternate screen")?;
    Ok(())
}

/// Runs the UI until the reviewer quits.
pub fn run(layout: &Layout, mut state: State, mut log: ReviewLog, mut cited: Cited) -> Result<()> {
    enter()?;
    let _restore = Restore;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut drafts: HashMap<usize, String> = HashMap::new();
    loop {
        if let Some(i) = state.current() {
            cited.load(state.shown(i));
        }
        let size = term.size()?;
        state.page = size.height.saturating_sub(4) / 2;
        let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
        state.detail_max = ui::detail_max(&state, &cited, area);
        state.detail_scroll = state.detail_scroll.min(state.detail_max);
        term.draw(|f| ui::draw(f, &state, &cited))?;
        let Event::Key(k) = event::read()? else {
            continue;
        };
        if k.kind != KeyEventKind::Press {
            continue;
        }
        match state.key(k) {
            Effect::None => {}
            Effect::Quit => return Ok(()),
            Effect::Decide(d) => {
                let r = log.append(d)?.clone();
                state.logged(&r);
            }
            Effect::Edit(i) => {
                if let Some(d) = edit(layout, &mut term, &mut state, &mut drafts, i, &cited)? {
                    let r = log.append(d)?.clone();
                    drafts.remove(&i);
                    state.logged(&r);
                }
            }
        }
    }
}

/// Opens the entry (or its draft, or its logged edit) in `$EDITOR`; gives the decision
/// to log when the edited entry changed and passes validation.
fn edit(
    layout: &Layout,
    term: &mut Term,
    state: &mut State,
    drafts: &mut HashMap<usize, String>,
    i: usize,
    cited: &Cited,
) -> Result<Option<super::log::Decision>> {
    let item = &state.items[i];
    let logged = state.own.get(&item.hash).and_then(|s| s.edited.clone());
    let base = drafts.get(&i).cloned().unwrap_or_else(|| {
        serde_json::to_string_pretty(logged.as_ref().unwrap_or(&item.entry)).expect("JSON")
    });
    let dir = tempfile::tempdir().context("making a folder for the edit")?;
    let file = dir.path().join(format!("{}.json", item.field("id")));
    std::fs::write(&file, &base).with_context(|| format!("writing {}", file.display()))?;
    let editor = std::env::var("EDITOR").unwrap_or_else(|_| "vi".into());
    disable_raw_mode()?;
    execute!(std::io::stdout(), LeaveAlternateScreen)?;
    // Through the shell, so EDITOR may carry arguments (`code --wait`).
    let ran = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&file)
        .status();
    enter()?;
    term.clear()?;
    let ran = ran.with_context(|| format!("running EDITOR={editor}"))?;
    if !ran.success() {
        state.message = format!("EDITOR={editor} exited with {ran}; nothing changed");
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    if text == base {
        state.message = "no change".into();
        return Ok(None);
    }
    drafts.insert(i, text.clone());
    let edited: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            state.message = format!("the edit is not JSON ({e}); e opens the draft again");
            return Ok(None);
        }
    };
    state.message = format!("validating the edit of {} ...", item.field("id"));
    term.draw(|f| ui::draw(f, state, cited))?;
    match revalidate(layout, &edited)? {
        Ok(kept) => {
            let item = &state.items[i];
            Ok(Some(super::log::Decision {
                entry_id: item.field("id").to_string(),
                entry_hash: item.hash.clone(),
                action: Action::Edit,
                verdict: None,
                reason: None,
                note: None,
                edited: Some(kept),
                reviewer: state.reviewer.clone(),
            }))
        }
        Err(why) => {
            state.message = format!("edit rejected by validation: {why}; e opens the draft again");
            Ok(None)
        }
    }
}

/// Runs `rocqa validate` on one entry: the entry as validation kept it (with its new
/// `validation` field), or why it was rejected.
pub fn revalidate(
    layout: &Layout,
    entry: &serde_json::Value,
) -> Result<Result<serde_json::Value, String>> {
    let dir = tempfile::tempdir().context("making a folder for validation")?;
    let input = dir.path().join("entries.jsonl");
    let mut f = std::fs::File::create(&input)?;
    writeln!(f, "{}", serde_json::to_string(entry)?)?;
    let out = dir.path().join("validated");
    let exe = std::env::current_exe().context("finding the rocqa binary")?;
    let run = std::process::Command::new(exe)
        .arg("--root")
        .arg(&layout.root)
        .arg("validate")
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .output()
        .context("running rocqa validate")?;
    let first = |p: &Path| -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(p).ok()?;
        serde_json::from_str(text.lines().next()?).ok()
    };
    if let Some(kept) = first(&out.join("entries.jsonl")) {
        return Ok(Ok(kept));
    }
    if let Some(r) = first(&out.join("rejects.jsonl")) {
        return Ok(Err(format!(
            "{}: {}",
            r["reason"].as_str().unwrap_or(""),
            r["detail"].as_str().unwrap_or("")
        )));
    }
    Ok(Err(String::from_utf8_lossy(&run.stderr).trim().to_string()))
}
