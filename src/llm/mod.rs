//! The `llm` stage: asks an OpenAI-compatible chat-completions server the questions.
//!
//! Takes in [`ChatRequest`]s (chat messages plus an optional JSON Schema for the answer
//! object), built by the question stage. Gives out one [`ChatResponse`] per request (the
//! answer text, token usage, and how it was obtained: from the cache or not, with the
//! schema enforced by the server or not, after how many attempts) or an [`LlmError`] that
//! says what to change. The validate stage checks the answers; this stage only gets them.
//!
//! Why it looks the way it does:
//! - Users point rocqa at vLLM, SGLang, Ollama, llama.cpp or a hosted API, so only the
//!   common subset of the OpenAI API is used: `POST {base_url}/chat/completions`.
//! - Answers must be JSON objects. The request asks for `response_format: json_schema`;
//!   a server that refuses it gets the schema in the system prompt instead, and the client
//!   remembers that. It never falls back to `{"type":"json_object"}`: llama.cpp's server
//!   never closes the object and runs on to `max_tokens`.
//! - Runs are long and servers are flaky: 429, 5xx, timeouts, dropped connections and cut
//!   or malformed bodies are retried with jittered exponential backoff that honours
//!   `Retry-After`. Mistakes in the request (other 4xx) are not retried.
//! - Answers cost seconds to minutes each on a local CPU model, so every success is stored
//!   in a SQLite [`ResponseCache`] keyed by everything that changes the answer (never the
//!   API key or the URL); a re-run of an unchanged request costs no request at all.
//! - tokio lives only in this module. The API is blocking, so rayon and plain code can
//!   call it; [`LlmClient::run_batch`] keeps many requests in flight and hands each result
//!   back on the caller's thread as it arrives.

mod cache;
mod client;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use cache::ResponseCache;
pub use client::LlmClient;

/// Default for [`LlmSection::concurrency`]: suits vLLM-class servers.
pub const DEFAULT_CONCURRENCY: usize = 32;
/// Default for [`LlmSection::timeout_secs`].
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Default for [`LlmSection::max_retries`].
pub const DEFAULT_MAX_RETRIES: u32 = 5;
/// Default for [`LlmSection::temperature`]: deterministic answers.
pub const DEFAULT_TEMPERATURE: f32 = 0.0;
/// Default for [`LlmSection::max_tokens`].
pub const DEFAULT_MAX_TOKENS: u32 = 1024;
/// Default for [`LlmSection::model`]. llama.cpp's server ignores the name; vLLM and
/// hosted APIs need the served model's name.
pub const DEFAULT_MODEL: &str = "default";
/// Default for [`LlmConfig::backoff_base`]: the first retry waits up to this long.
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Default for [`LlmConfig::backoff_max`]: no backoff step waits longer than this.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Environment variable that overrides [`LlmSection::url`].
pub const ENV_URL: &str = "ROCQA_LLM_URL";
/// Environment variable that overrides [`LlmSection::model`].
pub const ENV_MODEL: &str = "ROCQA_LLM_MODEL";
/// Environment variable holding the API key (keys never go in rocqa.toml).
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";

/// One chat message, as the OpenAI API and ShareGPT-style datasets spell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: "system".into(),
            content: content.into(),
        }
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: "user".into(),
            content: content.into(),
        }
    }
}

/// One question to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// JSON Schema for the answer object, sent as `response_format` `json_schema`
    /// (or, to servers that refuse that, written into the system prompt).
    pub schema: Option<serde_json::Value>,
    /// Overrides [`LlmConfig::max_tokens`] for this request.
    pub max_tokens: Option<u32>,
}

/// Tokens one answer cost, as the server reported them (0 when it did not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
}

/// The model's answer to one [`ChatRequest`], with how it was obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer text (a JSON object's text when the request had a schema).
    pub content: String,
    /// Tokens the answer cost when it was first obtained.
    pub usage: Usage,
    /// Served from the cache (no request made).
    pub cached: bool,
    /// The model that answered, as the server named it (the configured name if it did not).
    pub model: String,
    /// The server honoured `response_format` `json_schema`. False when there was no schema,
    /// or when the server refused it and the schema went into the system prompt instead.
    pub structured: bool,
    /// HTTP requests this answer took (0 when cached; more than 1 after retries or the
    /// schema fallback).
    pub attempts: u32,
    /// Why generation stopped (`stop`, `length`, ...), when the server said.
    pub finish_reason: Option<String>,
    /// Wall time from the call to the answer, retries and backoff included.
    pub elapsed_ms: u64,
}

/// The `[llm]` table of rocqa.toml: where the model is and how to talk to it.
///
/// Every field is optional. The API key is not here on purpose: it comes from the
/// `OPENAI_API_KEY` environment variable only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    /// Base URL of the OpenAI-compatible API, up to and including `/v1`, e.g.
    /// `http://127.0.0.1:8089/v1` (a trailing slash is fine). No default: the
    /// `ROCQA_LLM_URL` environment variable overrides it, and one of the two must be set.
    pub url: Option<String>,
    /// Model name sent with every request. Default `"default"` (llama.cpp's server
    /// ignores it; vLLM and hosted APIs need the served name). `ROCQA_LLM_MODEL`
    /// overrides it.
    pub model: Option<String>,
    /// Requests in flight at once. Default 32, which suits vLLM; the bundled local
    /// llama.cpp server wants 1-2.
    pub concurrency: Option<usize>,
    /// Whole-request timeout in seconds (connect, generate, read). Default 120.
    pub timeout_secs: Option<u64>,
    /// Retries after the first attempt for rate limits, server errors, timeouts, dropped
    /// connections and malformed answers. Default 5.
    pub max_retries: Option<u32>,
    /// Sampling temperature. Default 0.0 (deterministic).
    pub temperature: Option<f32>,
    /// Most tokens one answer may take. Default 1024. Answers that hit it are errors when
    /// a schema is used, because their JSON is cut.
    pub max_tokens: Option<u32>,
    /// Sampling seed sent to the server, if set. Default: none.
    pub seed: Option<u64>,
}

/// Everything the client needs, resolved from [`LlmSection`] and the environment.
#[derive(Clone)]
pub struct LlmConfig {
    /// Base URL of the API, e.g. `http://127.0.0.1:8089/v1`.
    pub base_url: String,
    /// Model name sent with every request.
    pub model: String,
    /// Bearer token, from `OPENAI_API_KEY`. Never logged, never part of a cache key.
    pub api_key: Option<String>,
    /// Requests in flight at once (at least 1).
    pub concurrency: usize,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// Most tokens per answer, unless a request says otherwise.
    pub max_tokens: u32,
    /// Sampling seed, if any.
    pub seed: Option<u64>,
    /// Backoff before retry n is drawn uniformly from 0 to `backoff_base * 2^n`.
    pub backoff_base: Duration,
    /// Upper bound of one backoff draw.
    pub backoff_max: Duration,
}

// Written by hand so that the API key can never reach a log line through `{:?}`.
impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("concurrency", &self.concurrency)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("seed", &self.seed)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .finish()
    }
}

impl LlmConfig {
    /// Base URL from ROCQA_LLM_URL, model from ROCQA_LLM_MODEL, key from OPENAI_API_KEY
    /// (all optional overrides of `file`); the rest from `file` or the defaults.
    ///
    /// Fails with [`LlmError::NoEndpoint`], saying how to configure one, when neither the
    /// environment nor `file` gives a URL; with [`LlmError::Config`] for a URL that is not
    /// http(s) or a temperature that is not a number.
    pub fn resolve(file: &LlmSection) -> Result<LlmConfig, LlmError> {
        Self::resolve_with(file, |name| std::env::var(name).ok())
    }

    /// [`LlmConfig::resolve`] with the environment given as a function (for tests).
    fn resolve_with(
        file: &LlmSection,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<LlmConfig, LlmError> {
        let env = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let base_url = env(ENV_URL)
            .or_else(|| file.url.clone().filter(|u| !u.trim().is_empty()))
            .ok_or_else(|| LlmError::NoEndpoint(no_endpoint_message()))?;
        let base_url = base_url.trim().to_string();
        let parsed = reqwest::Url::parse(&base_url).ok();
        let has_host = parsed
            .as_ref()
            .and_then(|u| u.host_str())
            .is_some_and(|h| !h.is_empty());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) || !has_host {
            return Err(LlmError::Config(format!(
                "LLM URL `{base_url}` is not an http:// or https:// URL with a host; set it like \
                 `http://127.0.0.1:8089/v1` (through {ENV_URL} or `url` in the [llm] table \
                 of rocqa.toml)"
            )));
        }
        let temperature = file.temperature.unwrap_or(DEFAULT_TEMPERATURE);
        if !temperature.is_finite() || temperature < 0.0 {
            return Err(LlmError::Config(format!(
                "[llm] temperature = {temperature} is not a number >= 0; use 0.0 for \
                 deterministic answers"
            )));
        }
        Ok(LlmConfig {
            base_url,
            model: env(ENV_MODEL)
                .or_else(|| file.model.clone())
                .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            api_key: env(ENV_API_KEY),
            concurrency: file.concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1),
            timeout: Duration::from_secs(file.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1)),
            max_retries: file.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            temperature,
            max_tokens: file.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).max(1),
            seed: file.seed,
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_max: DEFAULT_BACKOFF_MAX,
        })
    }

    /// Parameters that change answers (model, temperature, max_tokens, seed) as JSON, for
    /// provenance. Never includes the key.
    pub fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.model,
            "temperature": f32_json(self.temperature),
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        })
    }
}

/// An f32 as the JSON number it prints as (0.7, not 0.699999988079071).
fn f32_json(x: f32) -> serde_json::Value {
    serde_json::to_string(&x)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn no_endpoint_message() -> String {
    format!(
        "no LLM endpoint configured. Set one of: the environment variable {ENV_URL} \
         (e.g. `export {ENV_URL}=http://127.0.0.1:8089/v1`, with {ENV_MODEL} and \
         {ENV_API_KEY} if the server needs them); or `url = \"http://127.0.0.1:8089/v1\"` \
         in the [llm] table of rocqa.toml. For the bundled local server: \
         `scripts/llm-server.sh start`, then \
         `export {ENV_URL}=$(scripts/llm-server.sh url)`"
    )
}

/// Totals since the client was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LlmTotals {
    /// HTTP requests sent (every attempt counts).
    pub requests: u64,
    /// Answers served from the cache, without a request.
    pub cache_hits: u64,
    /// Attempts repeated after a retryable failure (the schema fallback is not one).
    pub retries: u64,
    /// Calls that ended in an error.
    pub failures: u64,
    /// Requests re-sent without `response_format` because the server refused it.
    pub schema_fallbacks: u64,
    /// Prompt tokens the server reported (cache hits excluded).
    pub prompt_tokens: u64,
    /// Completion tokens the server reported (cache hits excluded).
    pub completion_tokens: u64,
}

/// Why a request got no answer, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// No URL in the environment or rocqa.toml; the message says how to set one.
    #[error("{0}")]
    NoEndpoint(String),
    /// A setting that cannot work; the message names it.
    #[error("LLM configuration: {0}")]
    Config(String),
    /// The server answered with an HTTP error status.
    #[error("LLM server answered HTTP {status}: {body}{hint}", hint = http_hint(*status))]
    Http {
        /// HTTP status code.
        status: u16,
        /// Start of the response body (the server's explanation).
        body: String,
    },
    /// No complete answer within the timeout.
    #[error(
        "LLM request timed out; raise `timeout_secs` in the [llm] table of rocqa.toml, or \
         lower `concurrency` if the server is overloaded"
    )]
    Timeout,
    /// The server could not be reached, or dropped the connection before answering fully.
    #[error(
        "cannot talk to the LLM server: {0}. Is it running at the configured URL? \
         (`scripts/llm-server.sh start` starts the bundled local one)"
    )]
    Connection(String),
    /// The server's answer is not an OpenAI chat completion.
    #[error(
        "LLM server's answer is not an OpenAI chat completion: {0}. Check that the URL \
         points at an OpenAI-compatible API (ending in /v1)"
    )]
    Malformed(String),
    /// Generation stopped at `max_tokens`, so the answer's JSON is cut.
    #[error(
        "LLM answer hit max_tokens ({max_tokens}; {completion_tokens} tokens generated) and \
         its JSON is cut; raise `max_tokens` in the [llm] table of rocqa.toml, or ask for a \
         shorter answer (e.g. a maxLength on strings in the schema)"
    )]
    Truncated {
        /// The limit that was hit.
        max_tokens: u32,
        /// Tokens generated, as the server reported them.
        completion_tokens: u64,
    },
    /// The response cache could not be opened, read or written.
    #[error("LLM response cache: {0}")]
    Cache(String),
    /// The HTTP client or its runtime could not be set up, or was used wrongly.
    #[error("LLM client: {0}")]
    Client(String),
}

impl LlmError {
    /// A short stable name for the kind of error (`http`, `timeout`, ...), for counting
    /// failures by kind and for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::NoEndpoint(_) => "no_endpoint",
            LlmError::Config(_) => "config",
            LlmError::Http { .. } => "http",
            LlmError::Timeout => "timeout",
            LlmError::Connection(_) => "connection",
            LlmError::Malformed(_) => "malformed",
            LlmError::Truncated { .. } => "truncated",
            LlmError::Cache(_) => "cache",
            LlmError::Client(_) => "client",
        }
    }

    /// Worth another attempt: rate limits, server errors, timeouts, dropped connections,
    /// malformed answers. Not request mistakes (other 4xx) or cut answers.
    fn is_retryable(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => {
                matches!(*status, 408 | 409 | 429) || (500..=599).contains(status)
            }
            LlmError::Timeout | LlmError::Connection(_) | LlmError::Malformed(_) => true,
            _ => false,
        }
    }
}

fn http_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (set OPENAI_API_KEY to a key this server accepts)",
        404 => {
            " (check that the URL ends in /v1 and that the model name, ROCQA_LLM_MODEL or \
             `model` in [llm], is one the server serves)"
        }
        400 | 413 | 422 => {
            " (the server refused the request; check that prompt plus max_tokens fits the \
             model's context)"
        }
        429 => " (rate limited; lower `concurrency` in [llm])",
        500..=599 => " (the server failed; see its log)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// The process environment is global: tests that touch it take this lock.
    static ENV_LOCK: Mutex<()> = Mutex::new(());

    fn fake_env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn resolve_env_overrides_file() {
        let file = LlmSection {
            url: Some("http://file:1/v1".into()),
            model: Some("file-model".into()),
            concurrency: Some(2),
            ..Default::default()
        };
        let cfg = LlmConfig::resolve_with(
            &file,
            fake_env(&[
                (ENV_URL, "http://env:2/v1/"),
                (ENV_MODEL, "env-model"),
                (ENV_API_KEY, "sk-secret"),
            ]),
        )
        .unwrap();
        assert_eq!(cfg.base_url, "http://env:2/v1/");
        assert_eq!(cfg.model, "env-model");
        assert_eq!(cfg.api_key.as_deref(), Some("sk-secret"));
        assert_eq!(cfg.concurrency, 2);

        let cfg = LlmConfig::resolve_with(&file, fake_env(&[])).unwrap();
        assert_eq!(cfg.base_url, "http://file:1/v1");
        assert_eq!(cfg.model, "file-model");
        assert_eq!(cfg.api_key, None);
    }

    #[test]
    fn resolve_defaults() {
        let file = LlmSection {
            url: Some("http://127.0.0.1:8089/v1".into()),
            ..Default::default()
        };
        let cfg = LlmConfig::resolve_with(&file, fake_env(&[(ENV_URL, "  ")])).unwrap();
        assert_eq!(cfg.base_url, "http://127.0.0.1:8089/v1");
        assert_eq!(cfg.model, DEFAULT_MODEL);
        assert_eq!(cfg.concurrency, 32);
        assert_eq!(cfg.timeout, Duration::from_secs(120));
        assert_eq!(cfg.max_retries, 5);
        assert_eq!(cfg.temperature, 0.0);
        assert_eq!(cfg.max_tokens, 1024);
        assert_eq!(cfg.seed, None);
        assert_eq!(cfg.backoff_base, Duration::from_millis(500));
        assert_eq!(cfg.backoff_max, Duration::from_secs(30));
    }

    #[test]
    fn resolve_without_url_says_how_to_set_one() {
        let err = LlmConfig::resolve_with(&LlmSection::default(), fake_env(&[])).unwrap_err();
        assert!(matches!(err, LlmError::NoEndpoint(_)), "{err:?}");
        let msg = err.to_string();
        for needle in [
            "ROCQA_LLM_URL",
            "[llm]",
            "rocqa.toml",
            "scripts/llm-server.sh",
        ] {
            assert!(msg.contains(needle), "`{needle}` missing from: {msg}");
        }
    }

    #[test]
    fn resolve_rejects_bad_url_and_temperature() {
        let bad_url = LlmSection {
            url: Some("127.0.0.1:8089".into()),
            ..Default::default()
        };
        let err = LlmConfig::resolve_with(&bad_url, fake_env(&[])).unwrap_err();
        assert_eq!(err.kind(), "config");
        let bad_t = LlmSection {
            url: Some("http://x/v1".into()),
            temperature: Some(f32::NAN),
            ..Default::default()
        };
        assert_eq!(
            LlmConfig::resolve_with(&bad_t, fake_env(&[]))
                .unwrap_err()
                .kind(),
            "config"
        );
    }

    #[test]
    fn resolve_reads_the_real_environment() {
        let _guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let saved: Vec<(&str, Option<String>)> = [ENV_URL, ENV_MODEL, ENV_API_KEY]
            .iter()
            .map(|k| (*k, std::env::var(k).ok()))
            .collect();
        std::env::set_var(ENV_URL, "http://from-env:9/v1");
        std::env::set_var(ENV_MODEL, "env-model");
        std::env::remove_var(ENV_API_KEY);
        let file = LlmSection {
            url: Some("http://from-file:1/v1".into()),
            model: Some("file-model".into()),
            ..Default::default()
        };
        let got = LlmConfig::resolve(&file);
        std::env::remove_var(ENV_URL);
        let without_url = LlmConfig::resolve(&LlmSection::default());
        for (k, v) in saved {
            match v {
                Some(v) => std::env::set_var(k, v),
                None => std::env::remove_var(k),
            }
        }
        let got = got.unwrap();
        assert_eq!(got.base_url, "http://from-env:9/v1");
        assert_eq!(got.model, "env-model");
        assert!(matches!(without_url, Err(LlmError::NoEndpoint(_))));
    }

    #[test]
    fn params_have_answer_changing_fields_and_no_key() {
        let cfg = LlmConfig {
            temperature: 0.7,
            seed: Some(7),
            ..test_config("sk-very-secret")
        };
        let p = cfg.params();
        assert_eq!(p["model"], "m");
        assert_eq!(p["temperature"], serde_json::json!(0.7));
        assert_eq!(p["max_tokens"], 1024);
        assert_eq!(p["seed"], 7);
        assert!(!p.to_string().contains("sk-very-secret"));
        assert!(!format!("{cfg:?}").contains("sk-very-secret"));
    }

    #[test]
    fn section_rejects_unknown_fields() {
        let ok: LlmSection = toml::from_str("url = \"http://x/v1\"\nconcurrency = 2").unwrap();
        assert_eq!(ok.concurrency, Some(2));
        assert!(toml::from_str::<LlmSection>("api_key = \"sk\"").is_err());
    }

    #[test]
    fn retryable_kinds() {
        let http = |status| LlmError::Http {
            status,
            body: String::new(),
        };
        for s in [408, 409, 429, 500, 502, 503, 504] {
            assert!(http(s).is_retryable(), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!http(s).is_retryable(), "{s}");
        }
        assert!(LlmError::Timeout.is_retryable());
        assert!(LlmError::Malformed(String::new()).is_retryable());
        assert!(!LlmError::Truncated {
            max_tokens: 1,
            completion_tokens: 1
        }
        .is_retryable());
    }

    pub(crate) fn test_config(key: &str) -> LlmConfig {
        LlmConfig {
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "m".into(),
            api_key: Some(key.into()),
            concurrency: 4,
            timeout: Duration::from_secs(5),
            max_retries: 2,
            temperature: 0.0,
            max_tokens: 1024,
            seed: None,
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_max: DEFAULT_BACKOFF_MAX,
        }
    }
}
