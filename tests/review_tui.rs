//! `rocqa review` in a real terminal: the binary runs in tmux (a private server), keys
//! go in with send-keys and the screen comes back with capture-pane. Accept, reject
//! with a reason, filter, edit in `$EDITOR` (a script that edits the file, validated
//! again by `rocqa validate`), quit, reopen where it stopped; a kill -9 loses no
//! decision shown; `--verify` names a tampered line; the entries file is never
//! rewritten.
#![cfg(feature = "real-sources")]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{jsonl, project, rocqa_in, BIN};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn new() -> Tmux {
        Tmux {
            socket: format!("rocqa-review-test-{}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let o = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs (scripts/setup.sh installs it)");
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Starts the review in a 100x30 terminal; gives the pid of rocqa itself.
    fn start(&self, command: &str) -> u32 {
        self.run(&[
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "30",
            &format!("exec {command}"),
        ]);
        self.run(&["list-panes", "-F", "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p"])
    }

    /// Waits until the screen shows `text`; gives the screen.
    fn wait_for(&self, text: &str, secs: u64) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "no {text:?} on screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn gone(&self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.gone();
    }
}

fn verify(root: &Path, dir: &Path) -> (i32, String) {
    let o = Command::new(BIN)
        .arg("--root")
        .arg(root)
        .arg("review")
        .arg(dir)
        .arg("--verify")
        .output()
        .unwrap();
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

#[test]
fn review_in_a_real_terminal() {
    let root = project("");
    rocqa_in(
        root.path(),
        &["extract", "--lib", "rocblas", "--api", "rocblas_sscal"],
        None,
    );
    let dir = root.path().join("out/rocblas/6.4.4");
    let entries_before = std::fs::read(dir.join("entries.jsonl")).unwrap();
    let entries = jsonl(&dir.join("entries.jsonl"));
    assert!(entries.len() >= 4, "{} entries", entries.len());
    let id = |k: usize| entries[k]["id"].as_str().unwrap().to_string();
    let to_edit = entries
        .iter()
        .find(|e| {
            e["answer"]
                .as_str()
                .unwrap()
                .starts_with("Following the host code")
        })
        .expect("a kernels fact entry")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let editor = root.path().join("edit.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/Following the host code to its launches gives:/Tracing the host code to its launches gives:/' \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let command = format!(
        "env EDITOR={} {BIN} --root {} review {} --reviewer ann",
        editor.display(),
        root.path().display(),
        dir.display()
    );

    let tmux = Tmux::new();
    tmux.start(&command);
    tmux.wait_for(&id(0), 20);
    tmux.keys(&["a"]);
    tmux.wait_for("logged #0 verdict good", 10);
    tmux.keys(&["r"]);
    tmux.wait_for("pick a reason", 10);
    tmux.keys(&["2"]);
    tmux.wait_for("logged #1 verdict wrong", 10);
    // Filter to the entry to edit, by its id.
    tmux.keys(&["/"]);
    tmux.keys(&["-l", &to_edit]);
    tmux.keys(&["Enter"]);
    tmux.wait_for(&format!(" 1 of {}  text={to_edit} ", entries.len()), 10);
    tmux.keys(&["e"]);
    let s = tmux.wait_for("logged #2 edit", 120);
    assert!(
        s.contains("edited"),
        "the list shows the validated edit:\n{s}"
    );
    // The detail pane shows the entry as edited.
    tmux.wait_for("Tracing the host code", 10);
    // The cited lines, read from the pinned tree, are marked in the detail pane.
    let t0 = Instant::now();
    while !tmux.screen().contains('▌') {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no cited line marked:\n{}",
            tmux.screen()
        );
        tmux.keys(&["J"]);
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.keys(&["q"]);
    std::thread::sleep(Duration::from_millis(500));
    tmux.gone();

    let log = jsonl(&dir.join("reviews.jsonl"));
    assert_eq!(log.len(), 3, "{log:?}");
    assert_eq!(
        (log[0]["entry_id"].as_str(), log[0]["verdict"].as_str()),
        (Some(id(0).as_str()), Some("good"))
    );
    assert_eq!(log[1]["verdict"], "wrong");
    assert_eq!(log[1]["reason"], "a citation does not hold the claim");
    assert_eq!(log[2]["action"], "edit");
    assert_eq!(log[2]["entry_id"], to_edit.as_str());
    let edited = &log[2]["edited"];
    assert!(
        edited["answer"]
            .as_str()
            .unwrap()
            .starts_with("Tracing the host code"),
        "{edited}"
    );
    assert!(edited["validation"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true));
    for r in &log {
        assert_eq!(r["reviewer"], "ann");
        assert_eq!(r["hash"].as_str().unwrap().len(), 64);
    }

    // Reopen: it resumes at the first entry not judged; then a kill -9 right after a
    // decision shows on screen loses nothing.
    let tmux = Tmux::new();
    let pid = tmux.start(&command);
    let s = tmux.wait_for("good 1  weak 0  wrong 1", 20);
    // The detail pane (id, then library and version) shows the selected entry.
    let shown = format!("│{}  rocblas 6.4.4", id(2));
    assert!(s.contains(&shown), "selection resumes at {}:\n{s}", id(2));
    tmux.keys(&["w"]);
    tmux.wait_for("pick a reason", 10);
    tmux.keys(&["t"]);
    tmux.keys(&["-l", "restates the prototype"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("logged #3 verdict weak", 10);
    tmux.keys(&["a"]);
    tmux.wait_for("logged #4 verdict good", 10);
    Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    tmux.gone();
    let log = jsonl(&dir.join("reviews.jsonl"));
    assert_eq!(log.len(), 5);
    assert_eq!(log[3]["reason"], "restates the prototype");
    assert_eq!(log[4]["entry_id"], id(3).as_str());
    let (code, out) = verify(root.path(), &dir);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("5 records, hash chain intact"), "{out}");

    // The entries file was only read.
    assert_eq!(
        std::fs::read(dir.join("entries.jsonl")).unwrap(),
        entries_before
    );

    // Any edit of a line is caught, and named.
    let path = dir.join("reviews.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen("\"verdict\":\"wrong\"", "\"verdict\":\"good\"", 1),
    )
    .unwrap();
    let (code, out) = verify(root.path(), &dir);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("reviews.jsonl:2:"), "{out}");
}
