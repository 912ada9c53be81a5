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
