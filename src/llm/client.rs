//! The HTTP client: request bodies, retries with backoff, the structured-output fallback,
//! and the blocking API over a private tokio runtime.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::Rng;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::{
    cache::ResponseCache, ChatRequest, ChatResponse, LlmConfig, LlmError, LlmTotals, Message, Usage,
};

/// No single wait before a retry is longer than this (or `backoff_max`, if larger),
/// whatever `Retry-After` asks for.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);
/// Most bytes of an error body kept in [`LlmError::Http`].
const ERROR_BODY_MAX: usize = 2000;
/// Most bytes read of one response: an answer is a few kilobytes; anything near this is
/// a runaway server, dropped before it is buffered or cached.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;
/// Version of the cache-key layout; bump it to orphan every old cache entry.
const KEY_VERSION: u32 = 1;

/// A blocking client for one OpenAI-compatible chat-completions endpoint.
///
/// Cheap to share by reference across threads (`&LlmClient` is `Sync`). Its methods block
/// and must not be called from inside an async runtime.
pub struct LlmClient {
    inner: Arc<Inner>,
    cache: Option<ResponseCache>,
    /// Always `Some` until drop, which takes it to shut it down without blocking.
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for LlmClient {
    fn drop(&mut self) {
        // A plain drop of a runtime blocks, which panics inside an async context; nothing
        // is in flight here anyway (every call on the client has returned).
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// What the request tasks share.
struct Inner {
    cfg: LlmConfig,
    endpoint: reqwest::Url,
    http: reqwest::Client,
    /// `Bearer <key>`, marked sensitive so reqwest never prints it.
    auth: Option<HeaderValue>,
    /// Caps requests in flight across `chat` and `run_batch` callers together.
    permits: Semaphore,
    /// The server refused `response_format` once: send the schema in the prompt from now on.
    schema_refused: AtomicBool,
    counters: Counters,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    cache_hits: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
    schema_fallbacks: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("cfg", &self.inner.cfg)
            .field("endpoint", &self.inner.endpoint.as_str())
            .field(
                "schema_refused",
                &self.inner.schema_refused.load(Ordering::Relaxed),
            )
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl LlmClient {
    /// A client for `cfg`, answering from and storing into `cache` when given one.
    ///
    /// Fails with [`LlmError::Config`] for a URL that does not parse or a key that cannot
    /// go in an HTTP header, and [`LlmError::Client`] when the runtime or HTTP client cannot
    /// be built.
    pub fn new(cfg: LlmConfig, cache: Option<ResponseCache>) -> Result<LlmClient, LlmError> {
        let endpoint = endpoint_url(&cfg.base_url)?;
        let mut cfg = cfg;
        cfg.concurrency = cfg.concurrency.max(1);
        let auth = match &cfg.api_key {
            None => None,
            Some(key) => {
                let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    LlmError::Config(
                        "OPENAI_API_KEY holds characters that cannot go in an HTTP header; \
                         check how it was set"
                            .into(),
                    )
                })?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        // Two workers are plenty: the work is waiting on sockets, and the machine's cores
        // belong to the rest of the pipeline (and often to a local model server).
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("rocqa-llm")
            .enable_all()
            .build()
            .map_err(|e| LlmError::Client(format!("cannot start the async runtime: {e}")))?;
        let mut builder = reqwest::Client::builder()
            .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
            .pool_max_idle_per_host(cfg.concurrency)
            .tcp_nodelay(true)
            .user_agent(concat!("rocqa/", env!("CARGO_PKG_VERSION")));
        if is_loopback(&endpoint) {
            // A local server must not be reached through an HTTP(S)_PROXY from the
            // environment.
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| LlmError::Client(format!("cannot build the HTTP client: {e}")))?;
        let permits = Semaphore::new(cfg.concurrency);
        Ok(LlmClient {
            inner: Arc::new(Inner {
                cfg,
                endpoint,
                http,
                auth,
                permits,
                schema_refused: AtomicBool::new(false),
                counters: Counters::default(),
            }),
            cache,
            rt: Some(rt),
        })
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
    }

    /// The configuration in use.
    pub fn config(&self) -> &LlmConfig {
        &self.inner.cfg
    }

    /// Cache key: hex SHA-256 over model, answer-changing params, messages and schema
    /// (never the API key or URL).
    pub fn cache_key(&self, req: &ChatRequest) -> String {
        cache_key(&self.inner.cfg, req)
    }

    /// One request (blocking). Answers from the cache when it can; otherwise sends the
    /// request, retrying as the module documentation says, and caches a success.
    pub fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        not_in_runtime()?;
        let started = Instant::now();
        let key = self.cache.as_ref().map(|_| self.cache_key(req));
        if let Some(hit) = self.lookup(key.as_deref(), started) {
            return Ok(hit);
        }
        let result = self.rt().block_on(execute(&self.inner, req));
        self.store(key.as_deref(), &result);
        result
    }

    /// Many requests with at most cfg.concurrency in flight; `on_done(index, result)` is
    /// called on the caller's thread as each finishes (in completion order), so the caller
    /// can write output and advance a progress bar as results arrive.
    ///
    /// Cache hits are reported as they are found, without a request. `on_done` must not
    /// call back into this client (it runs inside the client's runtime).
    pub fn run_batch(
        &self,
        reqs: &[ChatRequest],
        mut on_done: impl FnMut(usize, Result<ChatResponse, LlmError>),
    ) {
        if not_in_runtime().is_err() {
            for i in 0..reqs.len() {
                on_done(i, Err(not_in_runtime().unwrap_err()));
            }
            return;
        }
        let limit = self.inner.cfg.concurrency;
        self.rt().block_on(async {
            let mut tasks = JoinSet::new();
            let mut index_of = HashMap::new();
            let mut next = 0;
            loop {
                while tasks.len() < limit && next < reqs.len() {
                    let i = next;
                    next += 1;
                    let started = Instant::now();
                    let key = self.cache.as_ref().map(|_| self.cache_key(&reqs[i]));
                    if let Some(hit) = self.lookup(key.as_deref(), started) {
                        on_done(i, Ok(hit));
                        continue;
                    }
                    let inner = self.inner.clone();
                    let req = reqs[i].clone();
                    let handle = tasks.spawn(async move {
                        let result = execute(&inner, &req).await;
                        (key, result)
                    });
                    index_of.insert(handle.id(), i);
                }
                match tasks.join_next_with_id().await {
                    None => break,
                    Some(Ok((id, (key, result)))) => {
                        let i = index_of.remove(&id).expect("every task is indexed");
                        self.store(key.as_deref(), &result);
                        on_done(i, result);
                    }
                    Some(Err(e)) => {
                        let i = index_of.remove(&e.id()).expect("every task is indexed");
                        self.inner.counters.failures.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(index = i, error = %e, "LLM request task failed.");
                        on_done(
                            i,
                            Err(LlmError::Client(format!("the request task failed: {e}"))),
                        );
                    }
                }
            }
        });
    }

    /// Totals since creation: requests sent, cache hits, retries, failures,
    /// prompt/completion tokens.
    pub fn totals(&self) -> LlmTotals {
        let c = &self.inner.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LlmTotals {
            requests: get(&c.requests),
            cache_hits: get(&c.cache_hits),
            retries: get(&c.retries),
            failures: get(&c.failures),
            schema_fallbacks: get(&c.schema_fallbacks),
            prompt_tokens: get(&c.prompt_tokens),
            completion_tokens: get(&c.completion_tokens),
        }
    }

    /// The cached answer for `key`, counted as a hit. A cache that cannot be read is
    /// logged and treated as a miss: the answer can still be fetched.
    fn lookup(&self, key: Option<&str>, started: Instant) -> Option<ChatResponse> {
        let (cache, key) = (self.cache.as_ref()?, key?);
        match cache.get(key) {
            Ok(Some(hit)) => {
                self.inner
                    .counters
                    .cache_hits
                    .fetch_add(1, Ordering::Relaxed);
                Some(ChatResponse {
                    content: hit.content,
                    usage: hit.usage,
                    cached: true,
                    model: hit.model,
                    structured: hit.structured,
                    attempts: 0,
                    finish_reason: hit.finish_reason,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                })
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "Response cache lookup failed; asking the server.");
                None
            }
        }
    }

    /// Caches a success. A failed write is logged, not returned: the answer is good.
    fn store(&self, key: Option<&str>, result: &Result<ChatResponse, LlmError>) {
        if let (Some(cache), Some(key), Ok(resp)) = (self.cache.as_ref(), key, result) {
            if let Err(e) = cache.put(key, resp) {
                tracing::warn!(error = %e, "Response cache write failed.");
            }
        }
    }
}

/// Blocking inside a runtime would panic (or deadlock); say so instead.
fn not_in_runtime() -> Result<(), LlmError> {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => Err(LlmError::Client(
            "LlmClient blocks; call it from a plain thread (or rayon), not from inside an \
             async runtime"
                .into(),
        )),
        Err(_) => Ok(()),
    }
}

/// `{base_url}/chat/completions`, with or without a trailing slash on `base_url`.
fn endpoint_url(base_url: &str) -> Result<reqwest::Url, LlmError> {
    let joined = format!("{}/chat/completions", base_url.trim().trim_end_matches('/'));
    let url = reqwest::Url::parse(&joined).map_err(|e| {
        LlmError::Config(format!(
            "LLM URL `{base_url}` does not parse ({e}); set it like `http://127.0.0.1:8089/v1`"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LlmError::Config(format!(
            "LLM URL `{base_url}` is not http:// or https://"
        )));
    }
    Ok(url)
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

// ---------------------------------------------------------------------------------------
// Request bodies and cache keys

/// The JSON body of one attempt.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Cow<'a, [Message]>,
    temperature: f32,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

/// The body for `req`. With a schema: as `response_format` when `structured`, else
/// written into the system prompt (the fallback).
fn request_body(cfg: &LlmConfig, req: &ChatRequest, structured: bool) -> Vec<u8> {
    let (messages, response_format) = match &req.schema {
        None => (Cow::Borrowed(&req.messages[..]), None),
        Some(schema) if structured => (
            Cow::Borrowed(&req.messages[..]),
            Some(serde_json::json!({
                "type": "json_schema",
                "json_schema": {"name": "answer", "strict": true, "schema": schema},
            })),
        ),
        Some(schema) => (Cow::Owned(fallback_messages(&req.messages, schema)), None),
    };
    let body = Body {
        model: &cfg.model,
        messages,
        temperature: cfg.temperature,
        max_tokens: req.max_tokens.unwrap_or(cfg.max_tokens),
        seed: cfg.seed,
        response_format,
    };
    serde_json::to_vec(&body).expect("a request body always serialises")
}

/// `messages` with an instruction to answer with one JSON object following `schema`.
///
/// The instruction joins the leading system message, or becomes one at the front when
/// there is none: many chat templates (Gemma's, for one) reject a system message anywhere
/// but first.
fn fallback_messages(messages: &[Message], schema: &Value) -> Vec<Message> {
    let instruction = format!(
        "Answer with exactly one JSON object and nothing else: no prose, no code fences. \
         The object must follow this JSON Schema:\n{}",
        serde_json::to_string(schema).unwrap_or_default()
    );
    let mut out = messages.to_vec();
    match out.first_mut() {
        Some(first) if first.role == "system" => {
            first.content.push_str("\n\n");
            first.content.push_str(&instruction);
        }
        _ => out.insert(0, Message::system(instruction)),
    }
    out
}

/// What the cache key hashes, in a fixed field order.
#[derive(Serialize)]
struct KeyMaterial<'a> {
    v: u32,
    model: &'a str,
    temperature: f32,
    max_tokens: u32,
    seed: Option<u64>,
    messages: &'a [Message],
    schema: Option<Value>,
}

fn cache_key(cfg: &LlmConfig, req: &ChatRequest) -> String {
    let material = KeyMaterial {
        v: KEY_VERSION,
        model: &cfg.model,
        temperature: cfg.temperature,
        max_tokens: req.max_tokens.unwrap_or(cfg.max_tokens),
        seed: cfg.seed,
        messages: &req.messages,
        schema: req.schema.as_ref().map(canonical),
    };
    let bytes = serde_json::to_vec(&material).expect("key material always serialises");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `v` with every object's keys sorted, so that equal schemas hash equally whatever order
/// their keys were written in (serde_json keeps insertion order in this build).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// Sending, with retries

/// One failed attempt and what the server said about waiting.
struct Failure {
    err: LlmError,
    retry_after: Option<Duration>,
}

impl From<LlmError> for Failure {
    fn from(err: LlmError) -> Self {
        Failure {
            err,
            retry_after: None,
        }
    }
}

/// A parsed chat completion.
#[derive(Debug)]
struct Reply {
    content: String,
    finish_reason: Option<String>,
    usage: Usage,
    model: Option<String>,
}

/// Sends `req` until it succeeds, fails for good, or runs out of retries.
async fn execute(inner: &Inner, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
    let (result, attempts) = attempt_loop(inner, req).await;
    if let Err(e) = &result {
        inner.counters.failures.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            kind = e.kind(),
            status = status_of(e),
            attempts,
            error = %e,
            "LLM request failed."
        );
    }
    result
}

/// The attempts for one request; also gives the number of attempts made.
async fn attempt_loop(inner: &Inner, req: &ChatRequest) -> (Result<ChatResponse, LlmError>, u32) {
    let cfg = &inner.cfg;
    let started = Instant::now();
    let has_schema = req.schema.is_some();
    let mut structured = has_schema && !inner.schema_refused.load(Ordering::Relaxed);
    let mut fell_back = false;
    let mut attempts: u32 = 0;
    let mut retries: u32 = 0;
    loop {
        let body = request_body(cfg, req, structured);
        attempts += 1;
        let outcome = {
            let _permit = inner
                .permits
                .acquire()
                .await
                .expect("the semaphore is never closed");
            inner.counters.requests.fetch_add(1, Ordering::Relaxed);
            match tokio::time::timeout(cfg.timeout, send_once(inner, body)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Failure::from(LlmError::Timeout)),
            }
        };
        if fell_back {
            // The schema-less request got a definite answer where the schema one was
            // refused: the server refuses schemas, not this request. Remember it. A
            // transient failure (429, 5xx, timeout) proves nothing either way.
            let proven = match &outcome {
                Ok(_) => true,
                Err(Failure { err, .. }) => {
                    !err.is_retryable()
                        && !matches!(
                            err,
                            LlmError::Http {
                                status: 400 | 422,
                                ..
                            }
                        )
                }
            };
            if proven && !inner.schema_refused.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    endpoint = %inner.endpoint,
                    "LLM server refuses response_format json_schema; sending the schema in \
                     the system prompt from now on."
                );
            }
        }
        match outcome {
            Ok(reply) => {
                let c = &inner.counters;
                c.prompt_tokens
                    .fetch_add(reply.usage.prompt_tokens, Ordering::Relaxed);
                c.completion_tokens
                    .fetch_add(reply.usage.completion_tokens, Ordering::Relaxed);
                if has_schema && reply.finish_reason.as_deref() == Some("length") {
                    // Not retried: at temperature 0 the same request is cut the same way.
                    let err = LlmError::Truncated {
                        max_tokens: req.max_tokens.unwrap_or(cfg.max_tokens),
                        completion_tokens: reply.usage.completion_tokens,
                    };
                    return (Err(err), attempts);
                }
                let resp = ChatResponse {
                    content: reply.content,
                    usage: reply.usage,
                    cached: false,
                    model: reply.model.unwrap_or_else(|| cfg.model.clone()),
                    structured,
                    attempts,
                    finish_reason: reply.finish_reason,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                };
                return (Ok(resp), attempts);
            }
            Err(Failure { err, retry_after }) => {
                if structured && !fell_back && is_schema_refusal(&err) {
                    structured = false;
                    fell_back = true;
                    inner
                        .counters
                        .schema_fallbacks
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::info!(
                        status = status_of(&err),
                        attempt = attempts,
                        "LLM server refused response_format; retrying with the schema in \
                         the system prompt."
                    );
                    continue;
                }
                if !err.is_retryable() || retries >= cfg.max_retries {
                    return (Err(err), attempts);
                }
                let honour = matches!(status_of(&err), Some(429 | 503));
                let delay = retry_delay(cfg, retries, if honour { retry_after } else { None });
                retries += 1;
                inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    status = status_of(&err),
                    kind = err.kind(),
                    attempt = attempts,
                    delay_ms = delay.as_millis() as u64,
                    error = %err,
                    "Retrying LLM request."
                );
                tokio::time::sleep(delay).await;
            }
        }
    }
}

fn status_of(err: &LlmError) -> Option<u16> {
    match err {
        LlmError::Http { status, .. } => Some(*status),
        _ => None,
    }
}

/// The server's way of saying it does not do `response_format` `json_schema`.
fn is_schema_refusal(err: &LlmError) -> bool {
    match err {
        LlmError::Http {
            status: 400 | 422, ..
        } => true,
        LlmError::Http { status: 500, body } => {
            let body = body.to_ascii_lowercase();
            ["response_format", "json_schema", "grammar"]
                .iter()
                .any(|w| body.contains(w))
        }
        _ => false,
    }
}

/// One HTTP exchange, without timeout (the caller wraps it).
async fn send_once(inner: &Inner, body: Vec<u8>) -> Result<Reply, Failure> {
    let mut rb = inner
        .http
        .post(inner.endpoint.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(auth) = &inner.auth {
        rb = rb.header(AUTHORIZATION, auth.clone());
    }
    let resp = rb
        .send()
        .await
        .map_err(|e| LlmError::Connection(describe(inner, &e)))?;
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    let too_big = || {
        LlmError::Malformed(format!(
            "the response is larger than {MAX_RESPONSE_BYTES} bytes; not read further"
        ))
    };
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64)
    {
        return Err(Failure {
            err: too_big(),
            retry_after,
        });
    }
    let mut resp = resp;
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let chunk = resp.chunk().await.map_err(|e| {
            LlmError::Connection(format!(
                "the connection dropped mid-response ({})",
                describe(inner, &e)
            ))
        })?;
        let Some(chunk) = chunk else { break };
        if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(Failure {
                err: too_big(),
                retry_after,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(Failure {
            err: LlmError::Http {
                status: status.as_u16(),
                body: scrub(inner, &error_body(&bytes)),
            },
            retry_after,
        });
    }
    parse_completion(&bytes).map_err(Failure::from)
}

/// reqwest's error with its causes, which say what actually happened (refused, reset).
fn describe(inner: &Inner, e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    scrub(inner, &msg)
}

/// Removes the API key from text that came from elsewhere, in case it was echoed, and
/// makes it printable.
fn scrub(inner: &Inner, text: &str) -> String {
    let text = printable(text);
    match &inner.cfg.api_key {
        Some(key) if !key.is_empty() => text.replace(key.as_str(), "<redacted>"),
        _ => text,
    }
}

/// Text from a server made safe for a terminal and a log line: control characters
/// (escape sequences, NUL, carriage returns, newlines) become `\u{fffd}` or a space.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' | '\r' => ' ',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

fn error_body(bytes: &[u8]) -> String {
    let text = printable(&String::from_utf8_lossy(bytes));
    let text = text.trim();
    if text.len() <= ERROR_BODY_MAX {
        return text.to_string();
    }
    let mut end = ERROR_BODY_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[derive(Deserialize)]
struct RawCompletion {
    #[serde(default)]
    choices: Option<Vec<RawChoice>>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct RawChoice {
    #[serde(default)]
    message: Option<RawMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

fn parse_completion(bytes: &[u8]) -> Result<Reply, LlmError> {
    let raw: RawCompletion = serde_json::from_slice(bytes).map_err(|e| {
        LlmError::Malformed(format!(
            "the body is not the expected JSON ({e}); it starts with `{}`",
            error_body(&bytes[..bytes.len().min(120)])
        ))
    })?;
    if let Some(err) = raw.error {
        return Err(LlmError::Malformed(format!(
            "HTTP 200 carrying an error: {}",
            error_body(err.to_string().as_bytes())
        )));
    }
    let choice = raw
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| LlmError::Malformed("no `choices[0]` in the answer".into()))?;
    let content = choice
        .message
        .and_then(|m| m.content)
        .ok_or_else(|| LlmError::Malformed("no `choices[0].message.content`".into()))?;
    let usage = raw
        .usage
        .map(|u| Usage {
            prompt_tokens: u.prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens.unwrap_or(0),
        })
        .unwrap_or_default();
    Ok(Reply {
        content,
        finish_reason: choice.finish_reason,
        usage,
        model: raw.model.filter(|m| !m.is_empty()),
    })
}

// ---------------------------------------------------------------------------------------
// Backoff and Retry-After

/// The upper bound of the wait before retry `n` (0-based): `base * 2^n`, at most `max`.
fn backoff_cap(base: Duration, max: Duration, n: u32) -> Duration {
    base.saturating_mul(1u32 << n.min(31)).min(max)
}

/// The wait before retry `n`: a uniform draw below the backoff cap ("full jitter", so
/// many clients rejected at once do not return at once), or the server's `Retry-After`
/// if that is longer; never more than 60 s (or `backoff_max`, if larger).
fn retry_delay(cfg: &LlmConfig, n: u32, retry_after: Option<Duration>) -> Duration {
    let cap = backoff_cap(cfg.backoff_base, cfg.backoff_max, n);
    let nanos = cap.as_nanos().min(u64::MAX as u128) as u64;
    let drawn = Duration::from_nanos(rand::rng().random_range(0..=nanos));
    match retry_after {
        Some(ra) => ra.max(drawn).min(RETRY_AFTER_CAP.max(cfg.backoff_max)),
        None => drawn,
    }
}

/// A `Retry-After` value (delay in seconds, or an HTTP date) as a wait from `now`.
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An HTTP date in any of the three forms RFC 9110 allows: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and
/// asctime (`Sun Nov  6 08:49:37 1994`).
fn parse_http_date(s: &str) -> Option<SystemTime> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let tokens: Vec<&str> = s.split([' ', ',', '-']).filter(|t| !t.is_empty()).collect();
    let mut month = None;
    let mut time = None;
    let mut numbers = Vec::new();
    for t in &tokens {
        if t.contains(':') {
            let parts: Vec<u32> = t
                .split(':')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            if parts.len() != 3 || parts[0] > 23 || parts[1] > 59 || parts[2] > 60 {
                return None;
            }
            time = Some((parts[0], parts[1], parts[2]));
        } else if let Some(m) = MONTHS.iter().position(|m| t.eq_ignore_ascii_case(m)) {
            month = Some(m as u32 + 1);
        } else if t.bytes().all(|b| b.is_ascii_digit()) {
            numbers.push((t.len(), t.parse::<i64>().ok()?));
        }
    }
    // In all three forms the day comes before the year.
    let (month, (h, mi, sec)) = (month?, time?);
    let [(_, day), (year_len, year)] = numbers[..] else {
        return None;
    };
    let year = match year_len {
        2 if year < 70 => 2000 + year,
        2 => 1900 + year,
        4 => year,
        _ => return None,
    };
    if !(1..=31).contains(&day) || year < 1970 {
        return None;
    }
    let days = days_from_civil(year, month, day as u32);
    let secs = days * 86_400 + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(sec);
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tests::test_config;

    fn req(user: &str, schema: Option<Value>) -> ChatRequest {
        ChatRequest {
            messages: vec![Message::system("You answer."), Message::user(user)],
            schema,
            max_tokens: None,
        }
    }

    fn schema() -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {"answer": {"type": "string", "maxLength": 200}},
            "required": ["answer"],
            "additionalProperties": false,
        })
    }

    #[test]
    fn cache_key_is_stable_and_sensitive() {
        let cfg = test_config("sk-one");
        let base = req("What does rocblas_sscal launch?", Some(schema()));
        let k = cache_key(&cfg, &base);
        assert_eq!(k.len(), 64);
        assert!(k.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(k, cache_key(&cfg, &base.clone()));
        // Pinned: a change here orphans every cache on disk, so it must be deliberate.
        assert_eq!(k, cache_key(&test_config("sk-two"), &base));

        // Not the key, not the URL.
        let other_url = LlmConfig {
            base_url: "https://elsewhere/v1/".into(),
            api_key: None,
            ..cfg.clone()
        };
        assert_eq!(k, cache_key(&other_url, &base));
        assert!(!k.contains("sk-one"));

        // Schema key order does not matter.
        let reordered: Value = serde_json::from_str(
            r#"{"additionalProperties":false,"required":["answer"],
                "properties":{"answer":{"maxLength":200,"type":"string"}},"type":"object"}"#,
        )
        .unwrap();
        assert_eq!(
            k,
            cache_key(
                &cfg,
                &req("What does rocblas_sscal launch?", Some(reordered))
            )
        );

        let differs = |c: &LlmConfig, r: &ChatRequest| assert_ne!(k, cache_key(c, r));
        differs(
            &cfg,
            &req("What does rocblas_dscal launch?", Some(schema())),
        );
        differs(&cfg, &req("What does rocblas_sscal launch?", None));
        let mut other_schema = schema();
        other_schema["properties"]["answer"]["maxLength"] = 100.into();
        differs(
            &cfg,
            &req("What does rocblas_sscal launch?", Some(other_schema)),
        );
        differs(
            &LlmConfig {
                model: "m2".into(),
                ..cfg.clone()
            },
            &base,
        );
        differs(
            &LlmConfig {
                temperature: 0.5,
                ..cfg.clone()
            },
            &base,
        );
        differs(
            &LlmConfig {
                max_tokens: 10,
                ..cfg.clone()
            },
            &base,
        );
        differs(
            &LlmConfig {
                seed: Some(1),
                ..cfg.clone()
            },
            &base,
        );
        differs(
            &cfg,
            &ChatRequest {
                max_tokens: Some(10),
                ..base.clone()
            },
        );
        let mut roles = base.clone();
        roles.messages[0].role = "user".into();
        differs(&cfg, &roles);
    }

    #[test]
    fn body_with_schema_asks_for_json_schema() {
        let cfg = LlmConfig {
            seed: Some(42),
            temperature: 0.2,
            ..test_config("sk-secret")
        };
        let body: Value =
            serde_json::from_slice(&request_body(&cfg, &req("q", Some(schema())), true)).unwrap();
        assert_eq!(body["model"], "m");
        assert_eq!(body["max_tokens"], 1024);
        assert_eq!(body["seed"], 42);
        assert_eq!(body["temperature"].as_f64().unwrap(), 0.2);
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);
        assert_eq!(body["messages"][1]["role"], "user");
        assert_eq!(body["messages"][1]["content"], "q");
        let rf = &body["response_format"];
        assert_eq!(rf["type"], "json_schema");
        assert_eq!(rf["json_schema"]["name"], "answer");
        assert_eq!(rf["json_schema"]["strict"], true);
        assert_eq!(rf["json_schema"]["schema"], schema());
        assert!(
            !String::from_utf8(request_body(&cfg, &req("q", Some(schema())), true))
                .unwrap()
                .contains("sk-secret")
        );
    }

    #[test]
    fn body_without_schema_has_no_response_format() {
        let cfg = test_config("k");
        let r = ChatRequest {
            max_tokens: Some(64),
            ..req("q", None)
        };
        let body: Value = serde_json::from_slice(&request_body(&cfg, &r, true)).unwrap();
        assert!(body.get("response_format").is_none());
        assert!(body.get("seed").is_none());
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["temperature"].as_f64().unwrap(), 0.0);
    }

    #[test]
    fn fallback_body_puts_the_schema_in_the_system_prompt() {
        let cfg = test_config("k");
        let body: Value =
            serde_json::from_slice(&request_body(&cfg, &req("q", Some(schema())), false)).unwrap();
        assert!(body.get("response_format").is_none());
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0]["role"], "system");
        let sys = msgs[0]["content"].as_str().unwrap();
        assert!(sys.starts_with("You answer."));
        assert!(sys.contains("one JSON object"));
        assert!(sys.contains("\"maxLength\":200"));
        assert!(!body.to_string().contains("json_object"));

        // No system message: one is put first.
        let r = ChatRequest {
            messages: vec![Message::user("q")],
            schema: Some(schema()),
            max_tokens: None,
        };
        let body: Value = serde_json::from_slice(&request_body(&cfg, &r, false)).unwrap();
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["role"], "user");
    }

    #[test]
    fn endpoint_accepts_a_trailing_slash() {
        for base in ["http://127.0.0.1:8089/v1", "http://127.0.0.1:8089/v1/"] {
            assert_eq!(
                endpoint_url(base).unwrap().as_str(),
                "http://127.0.0.1:8089/v1/chat/completions"
            );
        }
        assert!(endpoint_url("not a url").is_err());
        assert!(is_loopback(&endpoint_url("http://localhost:1/v1").unwrap()));
        assert!(is_loopback(&endpoint_url("http://[::1]:1/v1").unwrap()));
        assert!(!is_loopback(
            &endpoint_url("https://api.example.com/v1").unwrap()
        ));
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("1", now), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_retry_after(" 120 ", now),
            Some(Duration::from_secs(120))
        );
        for date in [
            "Sun, 06 Nov 1994 08:49:47 GMT",
            "Sunday, 06-Nov-94 08:49:47 GMT",
            "Sun Nov  6 08:49:47 1994",
        ] {
            assert_eq!(
                parse_retry_after(date, now),
                Some(Duration::from_secs(10)),
                "{date}"
            );
        }
        // A date in the past means: now.
        assert_eq!(
            parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(1_835_438_400))
        );
        for bad in [
            "",
            "soon",
            "-5",
            "1.5",
            "Sun, 06 Nov 1994 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(30);
        assert_eq!(backoff_cap(base, max, 0), Duration::from_millis(500));
        assert_eq!(backoff_cap(base, max, 1), Duration::from_secs(1));
        assert_eq!(backoff_cap(base, max, 5), Duration::from_secs(16));
        assert_eq!(backoff_cap(base, max, 6), max);
        assert_eq!(backoff_cap(base, max, 1000), max);

        let cfg = test_config("k");
        for n in 0..10 {
            for _ in 0..200 {
                let d = retry_delay(&cfg, n, None);
                assert!(d <= backoff_cap(cfg.backoff_base, cfg.backoff_max, n));
            }
        }
        // Full jitter: draws spread over the range, not all at the cap.
        let draws: Vec<Duration> = (0..200).map(|_| retry_delay(&cfg, 3, None)).collect();
        assert!(draws.iter().any(|d| *d < Duration::from_secs(2)));
        // Retry-After wins when longer, and is capped.
        let d = retry_delay(&cfg, 0, Some(Duration::from_secs(3)));
        assert_eq!(d, Duration::from_secs(3));
        let d = retry_delay(&cfg, 0, Some(Duration::from_secs(3600)));
        assert_eq!(d, RETRY_AFTER_CAP);
        let d = retry_delay(&cfg, 20, Some(Duration::from_millis(1)));
        assert!(d <= cfg.backoff_max);
    }

    #[test]
    fn parses_completions_and_rejects_the_rest() {
        let ok = br#"{"id":"x","model":"gemma","choices":[{"index":0,"message":{"role":"assistant","content":"{\"a\":1}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}"#;
        let r = parse_completion(ok).unwrap();
        assert_eq!(r.content, "{\"a\":1}");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.usage.prompt_tokens, 12);
        assert_eq!(r.model.as_deref(), Some("gemma"));
        for bad in [
            &b"not json"[..],
            br#"{"choices":[]}"#,
            br#"{"object":"list"}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            br#"{"error":{"message":"overloaded"}}"#,
            br#"{"choices":[{"message":{"content":"x"#,
        ] {
            assert_eq!(parse_completion(bad).unwrap_err().kind(), "malformed");
        }
    }

    #[test]
    fn schema_refusals() {
        let http = |status, body: &str| LlmError::Http {
            status,
            body: body.into(),
        };
        assert!(is_schema_refusal(&http(
            400,
            "response_format not supported"
        )));
        assert!(is_schema_refusal(&http(422, "")));
        assert!(is_schema_refusal(&http(500, "failed to parse grammar")));
        assert!(!is_schema_refusal(&http(500, "out of memory")));
        assert!(!is_schema_refusal(&http(503, "json_schema")));
        assert!(!is_schema_refusal(&LlmError::Timeout));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let cfg = LlmConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            ..test_config("sk-live-0123456789")
        };
        assert!(!format!("{cfg:?}").contains("sk-live-0123456789"));
        let client = LlmClient::new(cfg, None).unwrap();
        let shown = format!("{client:?} {:?}", client.config());
        assert!(!shown.contains("sk-live-0123456789"), "{shown}");
        assert!(!format!("{:?}", client.inner.auth).contains("sk-live"));
    }

    #[test]
    fn refuses_to_block_inside_a_runtime() {
        let client = LlmClient::new(test_config("k"), None).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let err = client.chat(&req("q", None)).unwrap_err();
            assert_eq!(err.kind(), "client");
            let mut seen = Vec::new();
            client.run_batch(&[req("q", None)], |i, r| {
                seen.push((i, r.unwrap_err().kind()))
            });
            assert_eq!(seen, vec![(0, "client")]);
            // Dropping the client here must not panic either.
            drop(client);
        });
    }
}
