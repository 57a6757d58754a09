//! Helpers the integration tests share: a project folder of their own, a scripted
//! OpenAI-compatible endpoint on loopback, and a careful scripted answerer that reads the
//! slice in the prompt the way a good model would.
#![allow(dead_code)]

pub mod traced;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The rocqa binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_rocqa");

/// The repository.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A project folder of its own: configs copied (with `extra_toml` appended), the real
/// trees linked, so outputs and caches start empty.
pub fn project(extra_toml: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let toml = std::fs::read_to_string(repo().join("rocqa.toml")).unwrap();
    std::fs::write(
        root.path().join("rocqa.toml"),
        format!("{toml}\n{extra_toml}\n"),
    )
    .unwrap();
    for dir in ["allowlists", "question_templates"] {
        std::fs::create_dir_all(root.path().join(dir)).unwrap();
        for f in std::fs::read_dir(repo().join(dir)).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, root.path().join(dir).join(f.file_name().unwrap())).unwrap();
        }
    }
    std::os::unix::fs::symlink(
        repo().join("rocm_sources"),
        root.path().join("rocm_sources"),
    )
    .unwrap();
    root
}

/// What the scripted endpoint sends back for one request.
pub struct Reply {
    /// Status line after `HTTP/1.1 `, e.g. `200 OK`.
    pub status: String,
    /// Extra header lines, each ending in `\r\n`.
    pub headers: String,
    /// The body; `None` drops the connection without answering.
    pub body: Option<Vec<u8>>,
}

impl Reply {
    /// A 200 chat completion whose message content is `content`.
    pub fn completion(content: &str) -> Reply {
        Reply {
            status: "200 OK".into(),
            headers: String::new(),
            body: Some(completion(content).into_bytes()),
        }
    }
}

/// The body of a chat completion answering `content`.
pub fn completion(content: &str) -> String {
    serde_json::json!({
        "id": "x", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    })
    .to_string()
}

/// Starts a scripted endpoint on loopback; `answer` gets each request's JSON body.
/// Returns the base URL (`http://127.0.0.1:PORT/v1`).
pub fn serve<F>(answer: F) -> String
where
    F: Fn(&serde_json::Value) -> Reply + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut sock) = conn else { break };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
                let Some(body) = read_request(&mut sock) else {
                    return;
                };
                let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                let r = answer(&v);
                if let Some(b) = r.body {
                    let _ = write!(
                        sock,
                        "HTTP/1.1 {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
                        r.status,
                        b.len(),
                        r.headers
                    );
                    let _ = sock.write_all(&b);
                }
            });
        }
    });
    url
}

/// The body of one HTTP request read off a socket (`None` when it is cut short).
pub fn read_request(sock: &mut TcpStream) -> Option<String> {
    let mut r = BufReader::new(sock.try_clone().ok()?);
    let mut len = 0;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    String::from_utf8(body).ok()
}

/// The last user message of a request.
pub fn user_message(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Words that differ per prompt, so scripted answers to different questions are not
/// near-duplicates of each other.
pub fn tag(user: &str) -> String {
    let mut h: u64 = 1469598103934665603;
    (0..10)
        .map(|k| {
            for b in user.bytes().chain([k as u8]) {
                h = (h ^ b as u64).wrapping_mul(1099511628211);
            }
            format!("w{:x}", h & 0xffffff)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One block of the slice a prompt shows: `=== file:start-end (name, role) ===` and its
/// numbered lines.
#[derive(Debug, Clone)]
pub struct Block {
    pub file: String,
    pub start: u32,
    pub end: u32,
    pub name: String,
    pub role: String,
    pub lines: Vec<(u32, String)>,
}

/// The blocks of the slice in a prompt.
pub fn blocks(user: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    for l in user.lines() {
        if let Some(h) = l.strip_prefix("=== ").and_then(|h| h.strip_suffix(" ===")) {
            let Some((place, rest)) = h.split_once(' ') else {
                continue;
            };
            let Some((file, range)) = place.rsplit_once(':') else {
                continue;
            };
            let Some((a, b)) = range.split_once('-') else {
                continue;
            };
            let (name, role) = rest
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split_once(", ")
                .unwrap_or(("", ""));
            out.push(Block {
                file: file.into(),
                start: a.parse().unwrap_or(1),
                end: b.parse().unwrap_or(1),
                name: name.into(),
                role: role.into(),
                lines: Vec::new(),
            });
        } else if let (Some(b), Some((n, text))) = (out.last_mut(), l.split_once("| ")) {
            if let Ok(n) = n.trim().parse::<u32>() {
                b.lines.push((n, text.to_string()));
            }
        }
    }
    out
}

/// The answer of a careful model: names the file and the definition of a block of the
/// slice (kernels and launchers first), quotes one of its statements verbatim, cites
/// that line, and carries a small HIP kernel when `with_code`.
pub fn careful_answer(user: &str, with_code: bool) -> String {
    let bs = blocks(user);
    let pick = bs
        .iter()
        .find(|b| b.role == "kernel" || b.role == "launcher")
        .or(bs.first());
    let Some(b) = pick else {
        return serde_json::json!({"answer": "", "code": "", "citations": []}).to_string();
    };
    let (n, quote) = b
        .lines
        .iter()
        .map(|(n, t)| (*n, t.trim().to_string()))
        .find(|(_, t)| {
            t.len() >= 12 && t.ends_with(';') && !t.contains('`') && !t.starts_with("//")
        })
        .unwrap_or((b.start, String::new()));
    let base = Path::new(&b.file)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let quoted = if quote.is_empty() {
        String::new()
    } else {
        format!(" Line {n} reads `{quote}`, which is where the work happens.")
    };
    let t = tag(user);
    // Code about the subject names it, as a careful model's does.
    let kernel = format!("{}_scaled_{}", b.name, &t[1..7]);
    let code = if with_code {
        format!(
            "#include <hip/hip_runtime.h>\n__global__ void __launch_bounds__(256) {kernel}(int n, float a, float* x)\n{{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if(i < n)\n        x[i] *= a;\n}}\n"
        )
    } else {
        String::new()
    };
    let with = if with_code {
        format!(" The code below writes the same pattern as `{kernel}`.")
    } else {
        String::new()
    };
    serde_json::json!({
        "answer": format!("In {base}, `{}` ({}) at {base}:{n}-{n} carries this.{quoted}{with} Note {t}.", b.name, b.role),
        "code": code,
        "citations": [{"file": b.file, "start": n, "end": n}]
    })
    .to_string()
}

/// A scripted endpoint answering every request carefully ([`careful_answer`]), with
/// HIP code in half the answers (chosen by the prompt, so reruns agree) and in every
/// answer to a question that asks for code.
pub fn careful_endpoint() -> String {
    serve(|body| {
        let user = user_message(body);
        let with_code = user.len().is_multiple_of(2) || user.contains("Write");
        Reply::completion(&careful_answer(&user, with_code))
    })
}

/// A project of its own with a short LLM timeout, and `rocqa extract ARGS` run in it
/// against the endpoint at `url`; the run must succeed (its stderr is shown if not).
pub fn extract_against(url: &str, args: &[&str]) -> tempfile::TempDir {
    let root = project("[llm]\ntimeout_secs = 10\nmax_retries = 1\n");
    let mut all = vec!["extract"];
    all.extend_from_slice(args);
    rocqa_in(root.path(), &all, Some(url));
    root
}

/// `rocqa ARGS` in the project at `root`, against the endpoint at `url` or with none
/// configured; it must succeed (its stderr is shown if not). Its stdout and stderr.
pub fn rocqa_in(root: &Path, args: &[&str], url: Option<&str>) -> String {
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("--root").arg(root).args(args);
    match url {
        Some(u) => cmd.env("ROCQA_LLM_URL", u),
        None => cmd.env_remove("ROCQA_LLM_URL"),
    };
    let o = cmd.output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The whole lines of a JSONL file that a running process may be appending to: a last
/// line not yet ended by its newline is being written, and is left out.
pub fn jsonl_written(p: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |k| &text[..k]);
    whole
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The lines of a JSONL file as JSON values (none when it is missing).
pub fn jsonl(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
