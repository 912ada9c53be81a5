//! Tokens kept between processes: rmcp's `CredentialStore` over one JSON file per server, created
//! with mode 0600, replaced atomically (a temporary file renamed over it) and refreshed under an
//! exclusive lock on a sibling `.lock` file, so a second process waits instead of spending the
//! refresh token twice.

use std::fs;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};

type Fut<'a, T> = Pin<Box<dyn Future<Output = Result<T, AuthError>> + Send + 'a>>;

/// The token file of one server.
#[derive(Debug, Clone)]
pub(crate) struct FileStore {
    path: PathBuf,
}

impl FileStore {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self { path }
    }

    fn read(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(self.fail("read", &err)),
        };
        // The parser's message could quote the file, tokens included: say only where.
        serde_json::from_str(&text).map(Some).map_err(|err| {
            AuthError::CredentialStoreError(format!(
                "{} is not a token file (line {}, column {})",
                self.path.display(),
                err.line(),
                err.column()
            ))
        })
    }

    fn write(&self, credentials: &StoredCredentials) -> Result<(), AuthError> {
        let text = serde_json::to_vec_pretty(credentials)
            .map_err(|_| self.fail("serialize", &"the tokens do not serialize"))?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|err| self.fail("create the directory of", &err))?;
        let tmp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        let written = create_private(&tmp).and_then(|mut file| {
            file.write_all(&text)?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| fs::rename(&tmp, &self.path));
        if let Err(err) = renamed {
            let _ = fs::remove_file(&tmp);
            return Err(self.fail("write", &err));
        }
        Ok(())
    }

    fn remove(&self) -> Result<(), AuthError> {
        match fs::remove_file(&self.path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(self.fail("remove", &err))
            }
            _ => Ok(()),
        }
    }

    /// Blocks until this process holds the server's lock file.
    fn lock(&self) -> Result<fs::File, AuthError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|err| self.fail("create the directory of", &err))?;
        let lock_path = self.path.with_extension("lock");
        let file = open_private(&lock_path).map_err(|err| self.fail("open the lock of", &err))?;
        file.lock().map_err(|err| self.fail("lock", &err))?;
        Ok(file)
    }

    fn fail(&self, what: &str, err: &dyn std::fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(format!(
            "cannot {what} the token file {}: {err}",
            self.path.display()
        ))
    }
}

impl CredentialStore for FileStore {
    fn load<'s, 'f>(&'s self) -> Fut<'f, Option<StoredCredentials>>
    where
        's: 'f,
        Self: 'f,
    {
        Box::pin(async move { self.read() })
    }

    fn save<'s, 'f>(&'s self, credentials: StoredCredentials) -> Fut<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        Box::pin(async move { self.write(&credentials) })
    }

    fn clear<'s, 'f>(&'s self) -> Fut<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        Box::pin(async move { self.remove() })
    }

    fn acquire_refresh_guard<'s, 'f>(&'s self) -> Fut<'f, Option<CredentialRefreshGuard>>
    where
        's: 'f,
        Self: 'f,
    {
        Box::pin(async move {
            let store = self.clone();
            let file = tokio::task::spawn_blocking(move || store.lock())
                .await
                .map_err(|err| self.fail("lock", &err))??;
            Ok(Some(CredentialRefreshGuard::new(file)))
        })
    }
}

/// The directory, created if missing, readable by the user only when claij creates it.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// A new file, mode 0600 from its creation (never world-readable, even for an instant).
fn create_private(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

fn open_private(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(test)]
mod tests;
