//! What showing cited source costs the review UI: a 2,000-line file of the pinned
//! rocBLAS tree (the first 2,000 lines of library/src/blas3/rocblas_trmm_kernels.cpp)
//! with a 40-line cited range, drawn into a 200x60 terminal buffer. Three figures, each
//! the median of 30 runs:
//! 1. parse and colour the whole file (once per file per session);
//! 2. build the cited range with its context and draw the frame (every key press);
//! 3. build all 2,000 lines, shaded range and colours, and draw the frame scrolled to
//!    the range: the whole file as one pane, the worst case.
//!
//! Run: `cargo bench --bench review_render` (needs the fetched trees; another file from
//! `REVIEW_BENCH_FILE`). The target is under 50 ms for 1 + 3.

use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Terminal;
use rocqa::review::highlight::highlight;
use rocqa::review::ui::source_lines;

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let path = std::env::var("REVIEW_BENCH_FILE").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/rocm_sources/rocblas-6.4.4/library/src/blas3/rocblas_trmm_kernels.cpp"
        )
        .into()
    });
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}; run scripts/setup.sh to fetch the trees"));
    let text: String = text.lines().take(2000).map(|l| format!("{l}\n")).collect();
    let lines = text.lines().count();
    let (start, end) = (1200, 1239);
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();

    let parse = median(|| {
        std::hint::black_box(highlight(&text));
    });
    let h = highlight(&text);
    let range = median(|| {
        let shown = source_lines(&h, start, end, start - 3, end + 3);
        term.draw(|f| {
            f.render_widget(
                Paragraph::new(shown).block(Block::default().borders(Borders::ALL)),
                f.area(),
            )
        })
        .unwrap();
    });
    let whole = median(|| {
        let shown = source_lines(&h, start, end, 1, lines);
        term.draw(|f| {
            f.render_widget(
                Paragraph::new(shown)
                    .scroll(((start - 10) as u16, 0))
                    .block(Block::default().borders(Borders::ALL)),
                f.area(),
            )
        })
        .unwrap();
    });
    println!("{path}: {lines} lines, cited {start}-{end}, 200x60 frame, median of 30");
    println!("  parse and colour the file:         {}", ms(parse));
    println!("  draw the cited range (+3 lines):   {}", ms(range));
    println!("  draw the whole file at the range:  {}", ms(whole));
    println!("  first view of a new file (1 + 3): {}", ms(parse + whole));
}
