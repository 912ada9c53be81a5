//! `claij serve restate`'s logic: the worker's request-identity keys (the flag, else the
//! variable, else the configuration), a bind beyond loopback refused without them, and the serving
//! itself (listen, register, serve until shutdown) with what it says told to the caller.

use std::ffi::OsString;
use std::future::Future;
use std::net::SocketAddr;

use claij_restate::IdentityKey;

use super::Worker;
use crate::settings::Settings;

/// The flag that gives a worker its identity keys (repeated for several).
pub const IDENTITY_KEY_FLAG: &str = "--identity-key";
/// The variable that gives them when the flag does not (comma- or space-separated).
pub const IDENTITY_KEYS_VAR: &str = "CLAIJ_RESTATE_IDENTITY_KEYS";
/// The configuration key that gives them when neither does.
pub const IDENTITY_KEYS_CONFIG: &str = "restate.identity_keys";

/// Why `claij serve restate` cannot serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A key that is not a Restate request-identity public key; `from` names where it was given.
    #[error("{from}")]
    Key {
        /// `--identity-key`, the variable, or `FILE:LINE: restate.identity_keys`.
        from: String,
        /// What is wrong with the key.
        source: claij_restate::Error,
    },
    /// An address beyond loopback, and no key: anyone reaching the port could start runs.
    #[error(
        "--bind {bind} is beyond loopback and the worker has no identity keys (anyone reaching it \
         could start runs): give the Restate server's public key with {IDENTITY_KEY_FLAG} \
         publickeyv1_... ({IDENTITY_KEYS_VAR}, or {IDENTITY_KEYS_CONFIG} in the configuration), or \
         bind 127.0.0.1"
    )]
    Unprotected {
        /// The address.
        bind: SocketAddr,
    },
    /// The async runtime or the listener could not be set up.
    #[error("cannot listen on {bind}")]
    Listen {
        /// The address.
        bind: SocketAddr,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The admin API refused the registration, or could not be reached.
    #[error("cannot register {uri} with {admin}")]
    Register {
        /// The worker's URI.
        uri: String,
        /// The admin API's URL.
        admin: String,
        /// The client's error.
        source: claij_restate::Error,
    },
    /// The worker stopped with an error.
    #[error("the worker stopped")]
    Stopped(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What a worker serves with: its address, the keys it accepts and where they came from.
#[derive(Debug, Clone)]
pub struct Serving {
    bind: SocketAddr,
    keys: Vec<IdentityKey>,
    from: Option<String>,
}

impl Serving {
    /// The worker's settings: the keys of `flag` (each `--identity-key`) when any, else of the
    /// variable [`IDENTITY_KEYS_VAR`] (read with `var`) when set and not empty, else the
    /// configuration's `[restate] identity_keys`; `bind` beyond loopback needs some.
    ///
    /// # Errors
    ///
    /// [`ServeError::Key`] naming the flag, the variable or the file and line;
    /// [`ServeError::Unprotected`].
    pub fn new(
        bind: SocketAddr,
        flag: &[String],
        var: impl Fn(&str) -> Option<OsString>,
        settings: &Settings,
    ) -> Result<Serving, ServeError> {
        let variable = var(IDENTITY_KEYS_VAR).map(|v| v.to_string_lossy().into_owned());
        let (texts, from): (Vec<&str>, String) = if !flag.is_empty() {
            (
                flag.iter().map(String::as_str).collect(),
                IDENTITY_KEY_FLAG.to_owned(),
            )
        } else if let Some(text) = variable.as_deref().filter(|t| !t.trim().is_empty()) {
            let split = text.split([',', ' ', '\n', '\t']).filter(|t| !t.is_empty());
            (split.collect(), IDENTITY_KEYS_VAR.to_owned())
        } else {
            let at = settings.restate.identity_keys_at.clone();
            let texts = settings.restate.identity_keys.iter().map(String::as_str);
            (
                texts.collect(),
                at.unwrap_or_else(|| IDENTITY_KEYS_CONFIG.to_owned()),
            )
        };
        let keys = texts
            .into_iter()
            .map(|text| {
                text.parse::<IdentityKey>()
                    .map_err(|source| ServeError::Key {
                        from: from.clone(),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() && !bind.ip().to_canonical().is_loopback() {
            return Err(ServeError::Unprotected { bind });
        }
        let from = (!keys.is_empty()).then_some(from);
        Ok(Serving { bind, keys, from })
    }

    /// The keys a request must be signed with (none: every request is served).
    #[must_use]
    pub fn keys(&self) -> &[IdentityKey] {
        &self.keys
    }

    /// Serves `worker` on a runtime of its own (two threads: a machine's services start inside a
    /// handler) until `shutdown` completes, registering it with the admin API at `register` once
    /// it listens; `say` is told what a user should see (where it listens, whose keys, the
    /// registration).
    ///
    /// # Errors
    ///
    /// [`ServeError::Listen`], [`ServeError::Register`], [`ServeError::Stopped`].
    pub fn run(
        self,
        worker: Worker,
        register: Option<&str>,
        shutdown: impl Future<Output = ()> + Send + 'static,
        mut say: impl FnMut(&str),
    ) -> Result<(), ServeError> {
        let bind = self.bind;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|source| ServeError::Listen { bind, source })?;
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .map_err(|source| ServeError::Listen { bind, source })?;
            let address = listener.local_addr().unwrap_or(bind);
            say(&format!("restate worker listening on http://{address}"));
            match &self.from {
                Some(from) => say(&format!(
                    "serving only requests signed with the {} identity key(s) of {from}",
                    self.keys.len()
                )),
                None => say("no identity keys: serving every request (loopback only)"),
            }
            let served = tokio::spawn(worker.serve(listener, self.keys, shutdown));
            if let Some(admin) = register {
                let uri = format!("http://{address}");
                super::register(admin, &uri)
                    .await
                    .map_err(|source| ServeError::Register {
                        uri: uri.clone(),
                        admin: admin.to_owned(),
                        source,
                    })?;
                say(&format!("registered {uri} with {admin}"));
            }
            match served.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(ServeError::Stopped(Box::new(e))),
                Err(e) => Err(ServeError::Stopped(Box::new(e))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const KEY: &str = "publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp";

    fn settings(toml: &str) -> Settings {
        Settings::parse(toml, std::path::Path::new("/etc/claij.toml")).unwrap()
    }

    fn serving(
        bind: &str,
        flag: &[&str],
        var: Option<&str>,
        toml: &str,
    ) -> Result<Serving, String> {
        let flag: Vec<String> = flag.iter().map(|s| (*s).to_owned()).collect();
        let var = |name: &str| {
            assert_eq!(name, IDENTITY_KEYS_VAR);
            var.map(OsString::from)
        };
        Serving::new(bind.parse().unwrap(), &flag, var, &settings(toml))
            .map_err(|e| crate::error_chain(&e))
    }

    #[test]
    fn beyond_loopback_without_keys_is_refused_naming_the_flag() {
        for bind in ["0.0.0.0:9080", "192.168.1.5:9080", "[::]:9080"] {
            let e = serving(bind, &[], None, "").unwrap_err();
            assert!(
                e.starts_with(&format!("--bind {bind} is beyond loopback")),
                "{e}"
            );
            assert!(e.contains("--identity-key"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        for bind in ["127.0.0.1:9080", "[::1]:9080", "[::ffff:127.0.0.1]:9080"] {
            assert!(
                serving(bind, &[], None, "").unwrap().keys().is_empty(),
                "{bind}"
            );
        }
        // Any source of keys opens other addresses.
        let config = format!("[restate]\nidentity_keys = [\"{KEY}\"]\n");
        assert_eq!(
            serving("0.0.0.0:9080", &[KEY], None, "")
                .unwrap()
                .keys()
                .len(),
            1
        );
        assert_eq!(
            serving("0.0.0.0:9080", &[], Some(KEY), "")
                .unwrap()
                .keys()
                .len(),
            1
        );
        assert_eq!(
            serving("0.0.0.0:9080", &[], None, &config)
                .unwrap()
                .keys()
                .len(),
            1
        );
    }

    #[test]
    fn the_flag_wins_over_the_variable_which_wins_over_the_configuration() {
        let config = "[restate]\nidentity_keys = [\"publickeyv1_config\"]\n";
        let bad = "publickeyv1_bad";
        // Each source's bad key is reported only when that source is the one used, naming it.
        let e = serving("0.0.0.0:1", &[bad], Some(KEY), config).unwrap_err();
        assert!(
            e.starts_with("--identity-key: `publickeyv1_bad` is not a Restate"),
            "{e}"
        );
        assert_eq!(
            serving("0.0.0.0:1", &[KEY], Some(bad), config)
                .unwrap()
                .keys()
                .len(),
            1
        );
        let e = serving("0.0.0.0:1", &[], Some(&format!("{KEY}, {bad}")), config).unwrap_err();
        assert!(
            e.starts_with("CLAIJ_RESTATE_IDENTITY_KEYS: `publickeyv1_bad`"),
            "{e}"
        );
        let two = serving("0.0.0.0:1", &[], Some(&format!("{KEY},{KEY}")), config).unwrap();
        assert_eq!(two.keys().len(), 2);
        let e = serving("0.0.0.0:1", &[], Some("  "), config).unwrap_err();
        assert!(
            e.starts_with("/etc/claij.toml:2: restate.identity_keys: `publickeyv1_config`"),
            "{e}"
        );
    }

    #[test]
    fn the_configurations_keys_must_be_a_list_of_strings() {
        let parse = |toml: &str| {
            Settings::parse(toml, std::path::Path::new("/etc/claij.toml"))
                .map_err(|e| e.to_string())
        };
        let e = parse("[restate]\nidentity_keys = \"publickeyv1_x\"\n").unwrap_err();
        assert!(e.contains("restate.identity_keys: expected a list"), "{e}");
        let e = parse("[restate]\nkeys = []\n").unwrap_err();
        assert!(e.contains("restate.keys: unknown key"), "{e}");
    }
}
