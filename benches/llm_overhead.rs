//! What the `llm` client itself costs per request, against an endpoint that costs nothing.
//!
//! The endpoint is this same binary, re-run as a child process (`LLM_BENCH_SERVER=1`): a
//! hand-written HTTP/1.1 server on 127.0.0.1 that answers every request at once with a
//! fixed small completion and keeps connections alive. Running it in its own process keeps
//! its CPU time out of the client's (per-thread `schedstat` in ns, or `/proc/self/stat`
//! utime + stime at 100 ticks/s).
//!
//! Prints, for N requests through `run_batch` (no cache): throughput and client CPU per
//! request at concurrency 64, and at concurrency 1 as the baseline; then the cost of a
//! cache hit (a second pass over the same requests with the cache filled).
//!
//! Run: `cargo bench --bench llm_overhead` (N from `LLM_BENCH_N`, default 2000).
//!
//! As a server for `benches/extract_overhead.sh`, `LLM_BENCH_ANSWERS=careful` makes it
//! answer like a careful model instead (the shared answerer of `tests/common`: the
//! slice's file and definition named, a statement quoted, its line cited), and
//! `LLM_BENCH_CODE=half` adds a HIP kernel to half the answers.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use rocqa::llm::{ChatRequest, LlmClient, LlmConfig, Message, ResponseCache};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Linux's USER_HZ on every architecture rocqa runs on.
const TICKS_PER_SEC: f64 = 100.0;

fn main() {
    if std::env::var_os("LLM_BENCH_SERVER").is_some() {
        server_main();
        return;
    }
    let n: usize = std::env::var("LLM_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);

    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .env("LLM_BENCH_SERVER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the scripted server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("server prints its port");
    let port: u16 = line
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .expect("`port N` from the server");
    let url = format!("http://127.0.0.1:{port}/v1");
    let server_pid = child.id();

    let reqs: Vec<ChatRequest> = (0..n).map(request).collect();
    println!("llm_overhead: {n} requests per pass, instant endpoint at {url}");

    // Warm up (code paths, allocator, the server's first connections).
    pass(
        "warm-up",
        &url,
        16,
        None,
        &reqs[..n.min(200)],
        server_pid,
        false,
    );

    pass("concurrency 64", &url, 64, None, &reqs, server_pid, true);
    pass("concurrency 1", &url, 1, None, &reqs, server_pid, true);

    let dir = tempfile::tempdir().expect("temp dir");
    let cache_path = dir.path().join("cache.sqlite");
    pass(
        "cache fill (64)",
        &url,
        64,
        Some(&cache_path),
        &reqs,
        server_pid,
        true,
    );
    pass(
        "cache hit",
        &url,
        64,
        Some(&cache_path),
        &reqs,
        server_pid,
        true,
    );

    // Closing its stdin stops the server; wait for it (it also has a deadline of its own).
    drop(child.stdin.take());
    let _ = child.wait();
}

/// One timed `run_batch` over `reqs`, printing one line.
fn pass(
    label: &str,
    url: &str,
    concurrency: usize,
    cache: Option<&std::path::Path>,
    reqs: &[ChatRequest],
    server_pid: u32,
    print: bool,
) {
    let cfg = LlmConfig {
        base_url: url.to_string(),
        model: "bench".into(),
        api_key: None,
        concurrency,
        timeout: Duration::from_secs(30),
        max_retries: 0,
        temperature: 0.0,
        max_tokens: 64,
        seed: None,
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(100),
    };
    let cache = cache.map(|p| ResponseCache::open(p).expect("open cache"));
    let client = LlmClient::new(cfg, cache).expect("client");
    let (mut ok, mut failed) = (0usize, 0usize);
    let cpu0 = client_cpu_seconds();
    let server0 = cpu_seconds(&format!("/proc/{server_pid}/stat"));
    let t0 = Instant::now();
    client.run_batch(reqs, |_, r| match r {
        Ok(_) => ok += 1,
        Err(e) => {
            if failed == 0 {
                eprintln!("{label}: first failure: {e}");
            }
            failed += 1;
        }
    });
    let wall = t0.elapsed().as_secs_f64();
    let cpu = client_cpu_seconds() - cpu0;
    let server = cpu_seconds(&format!("/proc/{server_pid}/stat")) - server0;
    let totals = client.totals();
    if !print {
        return;
    }
    let n = reqs.len() as f64;
    println!(
        "{label}: {} requests in {wall:.2} s = {:.0} req/s, client CPU {:.3} ms/request \
         (server CPU {:.3} ms/request; sent {}, cache hits {}, failed {failed})",
        reqs.len(),
        n / wall,
        cpu * 1000.0 / n,
        server * 1000.0 / n,
        totals.requests,
        totals.cache_hits,
    );
    assert_eq!(ok, reqs.len(), "{label}: {failed} requests failed");
}

/// A distinct, realistically shaped request: system prompt, a question, a schema.
fn request(i: usize) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system(
                "You are an expert on rocBLAS and rocSOLVER. Answer from the given source \
                 only.",
            ),
            Message::user(format!(
                "Question {i}: which kernel does rocblas_sscal launch, and with what grid? \
                 Source:\n{}",
                "ROCBLAS_LAUNCH_KERNEL((rocblas_scal_kernel<API_INT, NB, T, Tex>), grid, \
                 threads, 0, stream, n, alpha, stride_alpha, x, offset_x, incx, stride_x);\n"
                    .repeat(8)
            )),
        ],
        schema: Some(serde_json::json!({
            "type": "object",
            "properties": {"answer": {"type": "string", "maxLength": 400}},
            "required": ["answer"],
            "additionalProperties": false,
        })),
        max_tokens: None,
    }
}

/// CPU time of this process so far, in seconds: the sum of every thread's nanosecond
/// `schedstat` when the kernel keeps it (each pass's client threads live through the
/// pass), else utime + stime at 10 ms resolution.
fn client_cpu_seconds() -> f64 {
    let mut ns: u64 = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
                ns += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    if ns > 0 {
        ns as f64 / 1e9
    } else {
        cpu_seconds("/proc/self/stat")
    }
}

/// utime + stime of a process, in seconds.
fn cpu_seconds(stat_path: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(stat_path) else {
        return 0.0;
    };
    // The command name (field 2) may hold spaces; count fields after its closing paren.
    let after = &stat[stat.rfind(')').map_or(0, |p| p + 1)..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the whole line are 12 and 13 after the name (state is 3rd).
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / TICKS_PER_SEC
}

// ---------------------------------------------------------------------------------------
// The instant endpoint (child process)

const COMPLETION: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"{\"answer\":\"rocblas_scal_kernel\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129}}"#;

fn server_main() {
    // Stop when the parent closes our stdin (or dies), or after ten minutes at most.
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("port {}", listener.local_addr().unwrap().port());
        let _ = tokio::time::timeout(Duration::from_secs(600), async {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    break;
                };
                let _ = sock.set_nodelay(true);
                tokio::spawn(serve_connection(sock));
            }
        })
        .await;
    });
}

/// The completion body for one request body: the fixed small one, or a careful answer.
fn completion_for(body: &[u8]) -> String {
    if std::env::var("LLM_BENCH_ANSWERS").as_deref() != Ok("careful") {
        return COMPLETION.to_string();
    }
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let user = common::user_message(&v);
    let with_code =
        std::env::var("LLM_BENCH_CODE").as_deref() == Ok("half") && user.len().is_multiple_of(2);
    common::completion(&common::careful_answer(&user, with_code))
}

/// Answers every request on one keep-alive connection at once, until the client closes
/// it or it idles for 30 s.
async fn serve_connection(mut sock: tokio::net::TcpStream) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        // Consume every complete request in the buffer.
        while let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() < head_end + 4 + len {
                break;
            }
            let body = completion_for(&buf[head_end + 4..head_end + 4 + len]);
            buf.drain(..head_end + 4 + len);
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                body.len(),
                body
            );
            if sock.write_all(response.as_bytes()).await.is_err() {
                return;
            }
        }
        match tokio::time::timeout(Duration::from_secs(30), sock.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
}
