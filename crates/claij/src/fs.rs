//! Files read with a bound (a path to `/dev/zero` ends in an error naming the limit, never in
//! unbounded memory).

use std::io::{self, Read};
use std::path::Path;

/// Default bound of an input file (a schema, an instance, a session, a matrix): 64 MiB.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// A file as text, at most `limit` bytes: over it, an [`io::ErrorKind::InvalidData`] error saying
/// `larger than {limit} bytes, the limit for {what}`. Other errors are the file's own (a missing
/// file stays [`io::ErrorKind::NotFound`]).
///
/// # Errors
///
/// The file cannot be read, is over `limit` bytes or is not UTF-8.
pub fn read_file_capped(path: &Path, limit: u64, what: &str) -> io::Result<String> {
    let bytes = read_capped(std::fs::File::open(path)?, limit, what)?;
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// At most `limit` bytes of `reader`: one byte more is read to tell a reader that ends at the limit
/// from one that goes on (`/dev/zero`, `yes`), which is an error naming the limit (`what` says
/// what the limit is for).
///
/// # Errors
///
/// The reader fails, or has more than `limit` bytes.
pub fn read_capped(reader: impl Read, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes, the limit for {what}"),
        ));
    }
    Ok(bytes)
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it (same directory,
/// so the rename cannot cross file systems), flushed to disk, then renamed over `path`. A reader
/// sees the old file or the new one, never half of one; a failed write leaves the old file as it
/// was and removes the temporary one. `mode` (unix permissions, e.g. `0o600` for tokens) is set on
/// the temporary file before any byte is written; elsewhere it is ignored.
///
/// # Errors
///
/// The temporary file cannot be created, written, flushed or renamed (the error is the
/// operating system's; the caller names the file).
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    use std::io::Write as _;
    let temp = temp_path(path);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut file = options.open(&temp)?;
        #[cfg(unix)]
        if let Some(mode) = mode {
            // An existing temporary file keeps its mode through `open`: set it.
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// `path`'s sibling `.<name>.<pid>.tmp`, where [`write_atomic`] writes before its rename.
#[must_use]
pub fn temp_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests;
