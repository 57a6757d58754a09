//! The turns of an exported sample: the user turn carries the code the question is
//! about, read back from the pinned trees by the entry's ranges, as the prompt showed it.
//!
//! The code is hash-checked against the ranges first ([`crate::validate::checks::shown_text`]),
//! so a tree that moved on is an error, never other code under an old question. A
//! find-the-bug entry shows its planted line, as its prompt did. What differs from the
//! prompt: macro expansions and the notes beside a piece's role are not stored in the
//! entry, so they are not shown; pieces past the export's token budget are named in the
//! slice's "left out" block instead of shown.

use std::borrow::Cow;

use crate::model::{Entry, OmittedPiece, Slice, SliceFeatures, SliceFocus};
use crate::slice::{piece_from_range, render, SliceLimits, Trees};

/// How the user turn is made.
#[derive(Debug, Clone)]
pub struct TurnStyle {
    /// Show the question without its code.
    pub question_only: bool,
    /// Tokens of code at most (counted as the prompt's were).
    pub code_budget: usize,
}

impl Default for TurnStyle {
    fn default() -> Self {
        TurnStyle {
            question_only: false,
            code_budget: default_code_budget(),
        }
    }
}

/// The most code a slice may show in a prompt: the same limit by default.
pub fn default_code_budget() -> usize {
    SliceLimits::default().max_tokens()
}

/// A user turn in its two parts: the code (with the line saying which it is) and the
/// question. Alpaca keeps them apart (`input`, `instruction`); chats join them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserTurn {
    /// Empty when the question goes out alone.
    pub context: String,
    pub question: String,
}

impl UserTurn {
    /// The turn as one message, laid out as the prompt was.
    pub fn text(&self) -> String {
        if self.context.is_empty() {
            self.question.clone()
        } else {
            format!("{}\nQuestion: {}", self.context, self.question)
        }
    }
}

/// The user turn of an entry. An error says why its code cannot be shown as it was.
pub fn user_turn(e: &Entry, trees: &Trees, style: &TurnStyle) -> Result<UserTurn, String> {
    if style.question_only {
        return Ok(UserTurn {
            context: String::new(),
            question: e.question.clone(),
        });
    }
    crate::validate::checks::shown_text(&e.slice, trees).map_err(|(_, why)| why)?;
    let mut pieces = Vec::new();
    let mut omitted = Vec::new();
    let mut used = 0;
    for p in &e.slice {
        let lines = trees.lines(&p.lib, &p.file).map_err(|x| x.to_string())?;
        let lines: Cow<[String]> = match &e.mutation {
            Some(m)
                if m.lib == p.lib
                    && m.file == p.file
                    && (p.start..=p.end).contains(&m.line)
                    && (m.line as usize) <= lines.len() =>
            {
                let mut planted = lines.to_vec();
                planted[m.line as usize - 1] = m.mutated.clone();
                Cow::Owned(planted)
            }
            _ => Cow::Borrowed(&lines[..]),
        };
        let piece = piece_from_range(p, &lines);
        if !pieces.is_empty() && used + piece.tokens > style.code_budget {
            omitted.push(OmittedPiece {
                name: p.name.clone(),
                lib: p.lib.clone(),
                file: p.file.clone(),
                start: p.start,
                end: p.end,
                tokens: piece.tokens,
                reason: format!(
                    "over the export budget ({used} of {} tokens used)",
                    style.code_budget
                ),
                part: Default::default(),
            });
            continue;
        }
        used += piece.tokens;
        pieces.push(piece);
    }
    let slice = Slice {
        id: e.slice_id.clone(),
        lib: e.lib.clone(),
        version: e.version.clone(),
        family: e.family.clone(),
        variant: e.variant.clone(),
        api: e.api.clone(),
        apis: e.apis.clone(),
        call_path: e.call_path.clone(),
        pieces,
        omitted,
        features: SliceFeatures::default(),
        difficulty: e.difficulty.clone(),
        tokens: used,
        focus: SliceFocus::default(),
    };
    Ok(UserTurn {
        context: format!("{}{}", crate::question::prompt_head(&slice), render(&slice)),
        question: e.question.clone(),
    })
}

/// The assistant turn: the answer, then its code in a fenced block when it has some.
pub fn assistant_turn(e: &Entry) -> String {
    match e.code.as_deref().map(str::trim) {
        Some(code) if !code.is_empty() => format!("{}\n\n```cpp\n{code}\n```", e.answer),
        _ => e.answer.clone(),
    }
}
