//! Drawing the review UI from its [`State`]: a list pane, a detail pane, a status line
//! with the tallies and the live stop rule, and the help and reason pop-ups.
//!
//! Drawing reads the state and never changes it. Below 120 columns the list sits above
//! the detail pane, from 120 beside it, so the UI is usable at 80x24 and uses a wide
//! terminal's width.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use super::cited::Cited;
use super::highlight::{highlight, Class, Highlighted};
use super::log::Verdict;
use super::state::{Mode, State, Status, Typing, Validation, KEYS, WEAK_REASONS, WRONG_REASONS};

/// Lines of context shown around a cited range.
const CONTEXT: usize = 3;

fn class_style(c: Class) -> Style {
    let fg = match c {
        Class::Comment => Color::DarkGray,
        Class::String => Color::Green,
        Class::Number => Color::Magenta,
        Class::Type => Color::Cyan,
        Class::Keyword => Color::Yellow,
        Class::Preprocessor => Color::LightMagenta,
        Class::Function => Color::LightBlue,
    };
    Style::default().fg(fg)
}

/// Lines `from..=to` (1-based) of a highlighted file, numbered, with `start..=end`
/// marked and shaded.
pub fn source_lines(
    h: &Highlighted,
    start: usize,
    end: usize,
    from: usize,
    to: usize,
) -> Vec<Line<'_>> {
    let cited = Style::default().bg(Color::Rgb(60, 60, 20));
    let to = to.min(h.lines.len());
    let mut out = Vec::with_capacity(to.saturating_sub(from) + 1);
    for n in from.max(1)..=to {
        let text = h.lines[n - 1].as_str();
        let inside = (start..=end).contains(&n);
        let base = if inside { cited } else { Style::default() };
        let mut spans = vec![Span::styled(
            format!("{}{n:>5} ", if inside { '▌' } else { ' ' }),
            base.fg(Color::DarkGray),
        )];
        let mut at = 0;
        for &(a, b, c) in &h.spans[n - 1] {
            if a < at || !text.is_char_boundary(a) || !text.is_char_boundary(b) {
                continue;
            }
            if a > at {
                spans.push(Span::styled(&text[at..a], base));
            }
            spans.push(Span::styled(&text[a..b], class_style(c).patch(base)));
            at = b;
        }
        if at < text.len() {
            spans.push(Span::styled(&text[at..], base));
        }
        out.push(Line::from(spans));
    }
    out
}

fn heading(t: &str) -> Line<'static> {
    Line::from(Span::styled(
        t.to_string(),
        Style::default()
            .add_modifier(Modifier::BOLD)
            .fg(Color::White),
    ))
}

fn verdict_str(v: Verdict) -> &'static str {
    match v {
        Verdict::Good => "good",
        Verdict::Weak => "weak",
        Verdict::Wrong => "wrong",
    }
}

fn status_style(s: Status) -> Style {
    Style::default().fg(match s {
        Status::Good => Color::Green,
        Status::Weak => Color::Yellow,
        Status::Wrong => Color::Red,
        Status::Flagged => Color::Magenta,
        Status::Disputed => Color::LightRed,
        Status::Unreviewed => Color::Gray,
    })
}

/// The detail pane's text for the selected entry.
fn detail<'a>(s: &'a State, cited: &'a Cited, code: &'a Option<Highlighted>) -> Vec<Line<'a>> {
    let Some(i) = s.current() else {
        return vec![Line::from("No entry passes the filters (0 clears them).")];
    };
    let item = &s.items[i];
    // A validated edit is what the entry now says.
    let e = s.shown(i);
    let text = |k: &str| e[k].as_str().unwrap_or("");
    let mut out = vec![
        Line::from(format!(
            "{}  {} {}  {} {}  template {}",
            item.field("id"),
            item.field("lib"),
            item.field("version"),
            item.field("api"),
            item.field("variant"),
            item.field("template_id")
        )),
        heading("Question"),
    ];
    out.extend(text("question").lines().map(|l| Line::from(l.to_string())));
    out.push(heading("Answer"));
    out.extend(text("answer").lines().map(|l| Line::from(l.to_string())));
    if let Some(h) = code {
        out.push(heading("Code"));
        out.extend(source_lines(h, 0, 0, 1, h.lines.len()));
    }
    if let Some(m) = e.get("mutation").filter(|m| m.is_object()) {
        out.push(heading("Planted bug"));
        out.push(Line::from(format!(
            "{}:{}: `{}` shown as `{}`",
            m["file"].as_str().unwrap_or(""),
            m["line"],
            m["original"].as_str().unwrap_or("").trim(),
            m["mutated"].as_str().unwrap_or("").trim()
        )));
    }
    out.push(heading("Cited source (pinned tree)"));
    for c in e["citations"].as_array().into_iter().flatten() {
        let (a, b) = (
            c["start"].as_u64().unwrap_or(1) as usize,
            c["end"].as_u64().unwrap_or(1) as usize,
        );
        out.push(Line::styled(
            format!("{}:{a}-{b}", c["file"].as_str().unwrap_or("")),
            Style::default().fg(Color::LightCyan),
        ));
        match cited.file(e, c) {
            Some(Ok(h)) => out.extend(source_lines(
                h,
                a,
                b,
                a.saturating_sub(CONTEXT),
                b + CONTEXT,
            )),
            Some(Err(why)) => out.push(Line::styled(why.clone(), Style::default().fg(Color::Red))),
            None => out.push(Line::from("(not read yet)")),
        }
    }
    out.push(heading(&format!(
        "Validation: {}",
        item.validation.as_str()
    )));
    if let Some(n) = &item.validation_note {
        out.push(Line::styled(n.clone(), Style::default().fg(Color::Red)));
    }
    for c in e["validation"].as_array().into_iter().flatten() {
        let ok = c["ok"].as_bool() == Some(true);
        let detail = c["detail"].as_str().unwrap_or("");
        let mut lines = detail.lines();
        out.push(Line::from(vec![
            Span::styled(
                if ok { "ok   " } else { "FAIL " },
                Style::default().fg(if ok { Color::Green } else { Color::Red }),
            ),
            Span::raw(format!(
                "{}: {}",
                c["name"].as_str().unwrap_or(""),
                lines.next().unwrap_or("")
            )),
        ]));
        // Compile diagnostics run over several lines.
        out.extend(lines.map(|l| Line::from(format!("     {l}"))));
    }
    out.push(heading("Review"));
    let status = s.status(i);
    out.push(Line::styled(
        format!("{} (reviewer {})", status.as_str(), s.reviewer),
        status_style(status),
    ));
    if let Some(own) = s.own.get(&item.hash) {
        if let Some(r) = &own.reason {
            out.push(Line::from(format!("reason: {r}")));
        }
        out.extend(own.notes.iter().map(|n| Line::from(format!("note: {n}"))));
        if own.edited.is_some() {
            out.push(Line::from("edited: the validated edit is logged"));
        }
        if own.verdict.is_some() {
            for (who, v) in s.others.get(&item.hash).into_iter().flatten() {
                out.push(Line::from(format!("{who}: {}", verdict_str(*v))));
            }
        }
    }
    out
}

fn list(f: &mut Frame, s: &State, area: Rect) {
    let header = Row::new([
        "id",
        "family",
        "category",
        "diff",
        "generator",
        "valid",
        "review",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let rows = s.visible.iter().map(|&i| {
        let it = &s.items[i];
        let st = s.status(i);
        Row::new(vec![
            Span::raw(it.field("id").to_string()),
            Span::raw(it.field("family").to_string()),
            Span::raw(it.field("category").to_string()),
            Span::raw(it.field("difficulty").to_string()),
            Span::raw(it.field("generator").to_string()),
            Span::styled(
                it.validation.as_str(),
                Style::default().fg(
                    if it.validation == Validation::Ok || it.validation == Validation::Edited {
                        Color::Green
                    } else {
                        Color::Red
                    },
                ),
            ),
            Span::styled(st.as_str(), status_style(st)),
        ])
    });
    let widths = [
        Constraint::Length(24),
        Constraint::Length(8),
        Constraint::Length(14),
        Constraint::Length(4),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(8),
    ];
    let title = format!(
        " {} of {}{} ",
        s.visible.len(),
        s.items.len(),
        filters_line(s)
    );
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .block(Block::default().borders(Borders::ALL).title(title))
        .row_highlight_style(Style::default().bg(Color::Blue).fg(Color::White));
    let mut ts = TableState::default().with_selected((!s.visible.is_empty()).then_some(s.selected));
    f.render_stateful_widget(table, area, &mut ts);
}

fn filters_line(s: &State) -> String {
    let f = &s.filters;
    let mut parts = Vec::new();
    let mut add = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            parts.push(format!("{k}={v}"));
        }
    };
    add("category", f.category.as_deref());
    add("difficulty", f.difficulty.as_deref());
    add("generator", f.generator.as_deref());
    add("validation", f.validation.map(|v| v.as_str()));
    add("review", f.review.map(|r| r.as_str()));
    add("api", f.api.as_deref());
    add("text", f.text.as_deref());
    if parts.is_empty() {
        String::new()
    } else {
        format!("  {}", parts.join(" "))
    }
}

fn status_lines(s: &State) -> Vec<Line<'_>> {
    let (g, w, x) = s.tallies();
    let (b, more) = s.bound();
    let bound = match b {
        None => "no verdict yet".to_string(),
        Some(b) => format!(
            "wrong <= {:.1}% (95%){}",
            b * 100.0,
            if more == 0 {
                ", under 5%: the sample may stop".to_string()
            } else {
                format!("; {more} more clean for <= 5%")
            }
        ),
    };
    let first = Line::from(format!(
        "good {g}  weak {w}  wrong {x}  of {}  | {bound}",
        s.items.len()
    ));
    let second = match &s.mode {
        Mode::Typing(what, line) => {
            let label = match what {
                Typing::Text => "text filter",
                Typing::Api => "API glob",
                Typing::Note => "note",
                Typing::Reason(_) => "reason",
            };
            Line::styled(
                format!("{label}: {line}_  (Enter takes it, Esc cancels)"),
                Style::default().fg(Color::Yellow),
            )
        }
        Mode::Reason(_) => Line::styled(
            "pick a reason: 1-5, t to type one, Esc cancels",
            Style::default().fg(Color::Yellow),
        ),
        _ if !s.message.is_empty() => Line::from(s.message.as_str()),
        _ => Line::from(
            "a accept r reject w weak f flag m note e edit n unreviewed / find ? keys q quit",
        ),
    };
    vec![first, second]
}

fn popup(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// The title row, list pane, detail pane and status rows of a frame.
fn areas(area: Rect) -> [Rect; 4] {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(5),
            Constraint::Length(2),
        ])
        .split(area);
    let panes = if area.width >= 120 {
        Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Length(82), Constraint::Min(30)])
            .split(rows[1])
    } else {
        let list_rows = (rows[1].height / 3).max(5);
        Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Length(list_rows), Constraint::Min(3)])
            .split(rows[1])
    };
    [rows[0], panes[0], panes[1], rows[2]]
}

fn code_of(s: &State) -> Option<Highlighted> {
    s.current()
        .map(|i| s.shown(i)["code"].as_str().unwrap_or(""))
        .filter(|c| !c.trim().is_empty())
        .map(highlight)
}

/// How far the detail pane of a frame of `area` scrolls before its last line is at the
/// bottom.
pub fn detail_max(s: &State, cited: &Cited, area: Rect) -> u16 {
    let pane = areas(area)[2];
    let code = code_of(s);
    let rows = Paragraph::new(detail(s, cited, &code))
        .wrap(Wrap { trim: false })
        .line_count(pane.width.saturating_sub(2));
    (rows as u16).saturating_sub(pane.height.saturating_sub(2))
}

/// Draws the whole UI.
pub fn draw(f: &mut Frame, s: &State, cited: &Cited) {
    let area = f.area();
    let [title, list_pane, detail_pane, status] = areas(area);
    let seed = s
        .seed
        .map_or(String::new(), |seed| format!("  sample seed {seed}"));
    f.render_widget(
        Paragraph::new(format!(
            "rocqa review {}  reviewer {}{seed}",
            s.source, s.reviewer
        ))
        .style(Style::default().add_modifier(Modifier::REVERSED)),
        title,
    );
    list(f, s, list_pane);
    let code = code_of(s);
    let text = detail(s, cited, &code);
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .scroll((s.detail_scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" detail (J/K, PgUp/PgDn) "),
            ),
        detail_pane,
    );
    f.render_widget(Paragraph::new(status_lines(s)), status);
    match &s.mode {
        Mode::Help => {
            let r = popup(area, 90, area.height.saturating_sub(2));
            let lines: Vec<Line> = KEYS
                .iter()
                .map(|(k, what)| Line::from(format!("{k:>20}  {what}")))
                .collect();
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(lines)
                    .wrap(Wrap { trim: false })
                    .scroll((s.help_scroll, 0))
                    .block(Block::default().borders(Borders::ALL).title(" keys ")),
                r,
            );
        }
        Mode::Reason(v) => {
            let reasons = if *v == Verdict::Wrong {
                &WRONG_REASONS
            } else {
                &WEAK_REASONS
            };
            let mut lines: Vec<Line> = reasons
                .iter()
                .enumerate()
                .map(|(k, r)| Line::from(format!("{} {r}", k + 1)))
                .collect();
            lines.push(Line::from("t type a reason"));
            let r = popup(area, 60, lines.len() as u16 + 2);
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(lines).block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(format!(" {} because ", verdict_str(*v))),
                ),
                r,
            );
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::state::tests::test_state;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(s: &State, w: u16, h: u16) -> String {
        let cited = Cited::new(&crate::config::Layout {
            root: "/nonexistent".into(),
        });
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, s, &cited)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn renders_at_80x24_with_the_list_above_the_detail() {
        let s = test_state();
        let text = screen(&s, 80, 24);
        let rows: Vec<&str> = text.lines().collect();
        let id_row = rows.iter().position(|r| r.contains("rocblas-1")).unwrap();
        let q_row = rows.iter().position(|r| r.contains("Question")).unwrap();
        assert!(id_row < q_row, "{text}");
        assert!(text.contains("What does rocblas_sdot launch?"), "{text}");
        assert!(text.contains("no verdict yet"), "{text}");
        assert!(text.contains("? keys"), "{text}");
    }

    #[test]
    fn renders_at_200x60_side_by_side_and_help_lists_every_key() {
        let mut s = test_state();
        let text = screen(&s, 200, 60);
        let row = text
            .lines()
            .find(|r| r.contains("What does rocblas_sdot launch?"))
            .unwrap();
        assert!(
            row.contains("│rocblas-2"),
            "the list beside the detail: {row}"
        );
        s.mode = Mode::Help;
        let text = screen(&s, 200, 60);
        for (k, what) in KEYS {
            assert!(
                text.contains(k) && text.contains(what),
                "{k} {what} missing:\n{text}"
            );
        }
        // At 80x24 the help scrolls to its last key.
        s.help_scroll = 5;
        let small = screen(&s, 80, 24);
        assert!(small.contains(KEYS[KEYS.len() - 1].1), "{small}");
    }

    #[test]
    fn cited_range_is_marked_and_coloured() {
        let text: String = (1..=2000)
            .map(|i| format!("int f{i}(int x) {{ return x + {i}; }} // c\n"))
            .collect();
        let h = highlight(&text);
        let lines = source_lines(&h, 1000, 1002, 997, 1005);
        assert_eq!(lines.len(), 9);
        let marked: Vec<bool> = lines
            .iter()
            .map(|l| l.spans[0].content.starts_with('▌'))
            .collect();
        assert_eq!(
            marked,
            [false, false, false, true, true, true, false, false, false]
        );
        assert!(lines[3]
            .spans
            .iter()
            .any(|s| s.content == "return" && s.style.fg == Some(Color::Yellow)));
        assert!(lines[3]
            .spans
            .iter()
            .all(|s| s.style.bg == Some(Color::Rgb(60, 60, 20))));
    }

    #[test]
    fn the_detail_pane_scrolls_to_its_end_and_no_further() {
        let mut s = test_state();
        let long: String = (1..=100)
            .map(|k| format!("line {k} of the answer\n"))
            .collect();
        s.items[0].entry["answer"] = long.into();
        let cited = Cited::new(&crate::config::Layout {
            root: "/nonexistent".into(),
        });
        let max = detail_max(&s, &cited, Rect::new(0, 0, 80, 24));
        assert!(max > 90, "{max}");
        s.detail_max = max;
        for _ in 0..20 {
            s.key(crossterm::event::KeyEvent::from(
                crossterm::event::KeyCode::PageDown,
            ));
        }
        assert_eq!(s.detail_scroll, max);
        let text = screen(&s, 80, 24);
        assert!(
            text.contains("(reviewer r1)"),
            "the last line shows:\n{text}"
        );
    }
}
