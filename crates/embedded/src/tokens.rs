//! [`TokenFile`]: an embedded store's API tokens, hashed, in `tokens.json` beside its data.
//!
//! A file of its own, not a redb table: a running server holds the data file's lock, and
//! `tickertape admin token create --store DIR` must work while it runs (the server reads
//! the file again within a second). Changes are read-modify-write under an exclusive
//! lock on `tokens.lock` (so two commands at once lose neither token), written to a
//! temporary file, fsynced and renamed over `tokens.json`, then the folder is fsynced: a
//! reader sees the old list or the new, never half of one, and a token `add` returned for
//! survives a crash.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use tickertape_backend::tokens::check_token_id;
use tickertape_backend::{BackendError, TokenStore};
use tickertape_core::auth::TokenRecord;

use crate::values::wal::sync_dir;

pub const TOKEN_FILE: &str = "tokens.json";
const LOCK_FILE: &str = "tokens.lock";

/// The tokens of the store in `dir` (which need not be open, nor exist yet).
pub struct TokenFile {
    dir: PathBuf,
}

/// The file's content. `version` lets a later format be told apart.
#[derive(Default, Serialize, Deserialize)]
struct Content {
    version: u32,
    tokens: Vec<TokenRecord>,
}

const VERSION: u32 = 1;

impl TokenFile {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn path(&self) -> PathBuf {
        self.dir.join(TOKEN_FILE)
    }

    fn read(&self) -> Result<Vec<TokenRecord>, BackendError> {
        let path = self.path();
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(storage(&path, e)),
        };
        let content: Content = serde_json::from_slice(&text)
            .map_err(|e| BackendError::Corrupt(format!("{}: {e}", path.display())))?;
        if content.version != VERSION {
            return Err(BackendError::Corrupt(format!(
                "{}: version {} (this tickertape reads version {VERSION})",
                path.display(),
                content.version
            )));
        }
        Ok(content.tokens)
    }

    /// Applies `change` to the list under the lock and makes the result durable.
    fn update<T>(
        &self,
        change: impl FnOnce(&mut Vec<TokenRecord>) -> T,
    ) -> Result<T, BackendError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| storage(&self.dir, e))?;
        let lock_path = self.dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| storage(&lock_path, e))?;
        // Released when `lock` is dropped, and by the OS if this process dies.
        lock.lock().map_err(|e| storage(&lock_path, e))?;
        let mut tokens = self.read()?;
        let answer = change(&mut tokens);
        let content = Content {
            version: VERSION,
            tokens,
        };
        let bytes = serde_json::to_vec_pretty(&content)
            .map_err(|e| BackendError::Storage(format!("encoding the tokens: {e}")))?;
        self.replace(&bytes)?;
        Ok(answer)
    }

    fn replace(&self, bytes: &[u8]) -> Result<(), BackendError> {
        let path = self.path();
        let temporary = self.dir.join(format!("{TOKEN_FILE}.tmp"));
        let mut file = create_private(&temporary).map_err(|e| storage(&temporary, e))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| storage(&temporary, e))?;
        std::fs::rename(&temporary, &path).map_err(|e| storage(&path, e))?;
        sync_dir(&self.dir)
    }
}

/// A new file only its owner can read: the hashes are no secret to use, but the list of
/// tokens and scopes is nobody else's business.
fn create_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(true).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

fn storage(path: &Path, e: std::io::Error) -> BackendError {
    BackendError::Storage(format!("{}: {e}", path.display()))
}

#[async_trait]
impl TokenStore for TokenFile {
    async fn tokens(&self) -> Result<Vec<TokenRecord>, BackendError> {
        let file = TokenFile::new(self.dir.clone());
        blocking(move || file.read()).await
    }

    async fn add_token(&self, token: TokenRecord) -> Result<(), BackendError> {
        let file = TokenFile::new(self.dir.clone());
        blocking(move || {
            file.update(|tokens| {
                tokens.retain(|t| t.hash != token.hash);
                tokens.push(token);
            })
        })
        .await
    }

    async fn revoke_token(&self, id: &str) -> Result<usize, BackendError> {
        check_token_id(id)?;
        let (file, id) = (TokenFile::new(self.dir.clone()), id.to_string());
        blocking(move || {
            file.update(|tokens| {
                let before = tokens.len();
                tokens.retain(|t| t.id() != id);
                before - tokens.len()
            })
        })
        .await
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BackendError::Storage(format!("token file task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickertape_core::auth::{Scope, Scopes, TokenHash};

    fn token(secret: &str) -> TokenRecord {
        TokenRecord {
            name: secret.into(),
            scopes: Scopes::new([Scope::Read]).unwrap(),
            hash: TokenHash::of(secret),
            created: 1,
        }
    }

    #[tokio::test]
    async fn tokens_survive_a_new_handle_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFile::new(dir.path().join("store"));
        assert!(file.tokens().await.unwrap().is_empty());
        file.add_token(token("a")).await.unwrap();
        file.add_token(token("b")).await.unwrap();
        let again = TokenFile::new(dir.path().join("store"));
        let names: Vec<String> = again
            .tokens()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(again.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "mode {mode:o}");
        }
    }

    /// Eight adds at once, each from its own handle: the lock keeps every one.
    #[tokio::test]
    async fn concurrent_adds_keep_every_token() {
        let dir = tempfile::tempdir().unwrap();
        let adds = (0..8).map(|i| {
            let path = dir.path().to_path_buf();
            tokio::spawn(async move {
                TokenFile::new(path)
                    .add_token(token(&format!("t{i}")))
                    .await
            })
        });
        for add in futures_join(adds).await {
            add.unwrap().unwrap();
        }
        assert_eq!(TokenFile::new(dir.path()).tokens().await.unwrap().len(), 8);
    }

    async fn futures_join<T>(
        handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
    ) -> Vec<Result<T, tokio::task::JoinError>> {
        let mut out = Vec::new();
        for h in handles.collect::<Vec<_>>() {
            out.push(h.await);
        }
        out
    }

    #[tokio::test]
    async fn a_corrupt_file_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(TOKEN_FILE), b"{nope").unwrap();
        let e = TokenFile::new(dir.path()).tokens().await.unwrap_err();
        assert!(matches!(e, BackendError::Corrupt(_)), "{e}");
        assert!(e.to_string().contains(TOKEN_FILE), "{e}");
    }
}
