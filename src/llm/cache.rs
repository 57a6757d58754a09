//! The response cache: successful answers in one SQLite table, keyed by
//! [`LlmClient::cache_key`](super::LlmClient::cache_key).
//!
//! One connection behind a `Mutex` serialises the client's own threads; WAL mode and a
//! busy timeout let several rocqa processes share the file. Only successes are stored, so
//! a failed request is asked again on the next run.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension};

use super::{ChatResponse, LlmError, Usage};

/// Layout version, kept in `PRAGMA user_version`. Bump it when the table changes.
const LAYOUT_VERSION: i64 = 1;

/// Answers already paid for, in SQLite. Safe to share across threads.
pub struct ResponseCache {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseCache")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// What the cache keeps of one answer.
pub(crate) struct CachedAnswer {
    pub content: String,
    pub model: String,
    pub usage: Usage,
    pub structured: bool,
    pub finish_reason: Option<String>,
}

impl ResponseCache {
    /// Opens the cache at `path`, creating the file (and its folder) if missing.
    pub fn open(path: &Path) -> Result<Self, LlmError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            LlmError::Cache(format!(
                "{}: {what}: {e}; delete the file to start with an empty cache",
                path.display()
            ))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail("cannot create its folder", &e))?;
        }
        let conn = Connection::open(path).map_err(|e| fail("cannot open", &e))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| fail("cannot set busy timeout", &e))?;
        // WAL lets readers in other processes run while one writes; NORMAL sync is safe
        // in WAL mode (a crash may lose the last answers, never corrupt the file).
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|e| fail("cannot switch to WAL mode", &e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), mode = %mode, "Response cache is not in WAL mode.");
        }
        conn.execute_batch("PRAGMA synchronous=NORMAL;")
            .map_err(|e| fail("cannot set synchronous mode", &e))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| fail("cannot read", &e))?;
        match version {
            0 => {
                conn.execute_batch(&format!(
                    "CREATE TABLE IF NOT EXISTS responses (
                        key TEXT PRIMARY KEY NOT NULL,
                        model TEXT NOT NULL,
                        content TEXT NOT NULL,
                        prompt_tokens INTEGER NOT NULL,
                        completion_tokens INTEGER NOT NULL,
                        structured INTEGER NOT NULL,
                        finish_reason TEXT,
                        created_unix INTEGER NOT NULL
                    );
                    PRAGMA user_version = {LAYOUT_VERSION};"
                ))
                .map_err(|e| fail("cannot create the table", &e))?;
            }
            LAYOUT_VERSION => {}
            other => {
                return Err(fail(
                    "was written by another rocqa version",
                    &format!("layout {other}, this build reads {LAYOUT_VERSION}"),
                ))
            }
        }
        Ok(ResponseCache {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        })
    }

    /// Number of stored answers (0 if the table cannot be read).
    pub fn len(&self) -> usize {
        let conn = self.lock();
        conn.query_row("SELECT COUNT(*) FROM responses", [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .unwrap_or(0)
    }

    /// No answers stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file this cache lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (statements are
        // atomic), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, what: &str, e: rusqlite::Error) -> LlmError {
        LlmError::Cache(format!("{}: {what}: {e}", self.path.display()))
    }

    /// The stored answer for `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Result<Option<CachedAnswer>, LlmError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT content, model, prompt_tokens, completion_tokens, structured, \
                 finish_reason FROM responses WHERE key = ?1",
            )
            .map_err(|e| self.error("cannot read", e))?;
        stmt.query_row([key], |r| {
            Ok(CachedAnswer {
                content: r.get(0)?,
                model: r.get(1)?,
                usage: Usage {
                    prompt_tokens: r.get::<_, i64>(2)?.max(0) as u64,
                    completion_tokens: r.get::<_, i64>(3)?.max(0) as u64,
                },
                structured: r.get(4)?,
                finish_reason: r.get(5)?,
            })
        })
        .optional()
        .map_err(|e| self.error("cannot read", e))
    }

    /// Stores a successful answer under `key` (replacing an older one).
    pub(crate) fn put(&self, key: &str, resp: &ChatResponse) -> Result<(), LlmError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "INSERT OR REPLACE INTO responses (key, model, content, prompt_tokens, \
                 completion_tokens, structured, finish_reason, created_unix) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(|e| self.error("cannot write", e))?;
        stmt.execute(params![
            key,
            resp.model,
            resp.content,
            resp.usage.prompt_tokens.min(i64::MAX as u64) as i64,
            resp.usage.completion_tokens.min(i64::MAX as u64) as i64,
            resp.structured,
            resp.finish_reason,
            now,
        ])
        .map_err(|e| self.error("cannot write", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(content: &str) -> ChatResponse {
        ChatResponse {
            content: content.into(),
            usage: Usage {
                prompt_tokens: 11,
                completion_tokens: 7,
            },
            cached: false,
            model: "m".into(),
            structured: true,
            attempts: 2,
            finish_reason: Some("stop".into()),
            elapsed_ms: 5,
        }
    }

    #[test]
    fn stores_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/cache.sqlite");
        {
            let c = ResponseCache::open(&path).unwrap();
            assert!(c.is_empty());
            c.put("k1", &answer("{\"a\":1}")).unwrap();
            c.put("k1", &answer("{\"a\":2}")).unwrap();
            assert_eq!(c.len(), 1);
        }
        let c = ResponseCache::open(&path).unwrap();
        let got = c.get("k1").unwrap().unwrap();
        assert_eq!(got.content, "{\"a\":2}");
        assert_eq!(got.usage.prompt_tokens, 11);
        assert!(got.structured);
        assert_eq!(got.finish_reason.as_deref(), Some("stop"));
        assert!(c.get("k2").unwrap().is_none());
    }

    #[test]
    fn concurrent_writers_keep_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let c = std::sync::Arc::new(ResponseCache::open(&dir.path().join("c.sqlite")).unwrap());
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        c.put(&format!("{t}-{i}"), &answer("x")).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(c.len(), 200);
    }

    #[test]
    fn refuses_a_newer_layout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA user_version = 99;")
            .unwrap();
        let err = ResponseCache::open(&path).unwrap_err();
        assert!(err.to_string().contains("delete the file"), "{err}");
    }
}
