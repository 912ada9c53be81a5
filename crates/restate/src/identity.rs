//! Restate's request identity: the public keys ([`IdentityKey`]) a worker accepts requests signed
//! with, verified by restate-sdk's own verifier (an EdDSA JWT per request, `x-restate-jwt-v1`, its
//! audience the request's path, valid a minute either side of its issue), with ring's Ed25519 as
//! the JWT library's crypto (ring is in the build already, for reqwest's TLS).
//!
//! The server signs with the private key its `request-identity-private-key-pem-file` option names,
//! and logs the public key as it loads it (`Loaded request identity key kid=publickeyv1_...`).

use jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use jsonwebtoken::errors::{ErrorKind as JwtErrorKind, Result as JwtResult};
use jsonwebtoken::signature::{Error as SignatureError, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};
use restate_sdk::prelude::Endpoint;

use crate::error::{Error, Result};

/// What every key starts with.
pub const KEY_PREFIX: &str = "publickeyv1_";

/// A Restate request-identity public key (`publickeyv1_` and the Ed25519 key in base58), checked
/// by restate-sdk's own parser.
///
/// ```
/// use claij_restate::IdentityKey;
///
/// let key: IdentityKey = "publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp".parse()?;
/// assert!(key.as_str().starts_with("publickeyv1_"));
/// assert!("publickeyv1_short".parse::<IdentityKey>().is_err());
/// # Ok::<(), claij_restate::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityKey(String);

impl IdentityKey {
    /// The key as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for IdentityKey {
    type Err = Error;

    /// # Errors
    ///
    /// [`Error::IdentityKey`]: not `publickeyv1_` and 32 bytes in base58. The value is quoted only
    /// when it starts with the prefix (anything else may be a secret pasted by mistake).
    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        match Endpoint::builder().identity_key(text) {
            Ok(_) => Ok(IdentityKey(text.to_owned())),
            Err(e) => Err(Error::IdentityKey {
                key: if text.starts_with(KEY_PREFIX) {
                    format!("`{text}`")
                } else {
                    format!(
                        "a value of {} characters not starting with {KEY_PREFIX} (not shown)",
                        text.chars().count()
                    )
                },
                reason: e.to_string(),
            }),
        }
    }
}

impl std::fmt::Display for IdentityKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Makes ring's Ed25519 the JWT library's crypto for this process, unless a provider is set
/// already (one that cannot verify EdDSA then refuses every request, never accepts one).
pub(crate) fn install_crypto() {
    let _ = RING.install_default();
}

/// Verifies EdDSA (Ed25519) only; signs nothing (a worker only verifies).
static RING: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: verifier,
    jwk_utils: JwkUtils::new_unimplemented(),
};

fn no_signer(_: &Algorithm, _: &EncodingKey) -> JwtResult<Box<dyn JwtSigner>> {
    Err(JwtErrorKind::InvalidAlgorithm.into())
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> JwtResult<Box<dyn JwtVerifier>> {
    if *algorithm != Algorithm::EdDSA || key.family() != AlgorithmFamily::Ed {
        return Err(JwtErrorKind::InvalidAlgorithm.into());
    }
    Ok(Box::new(Ed25519(key.as_bytes().to_vec())))
}

/// An Ed25519 public key, 32 bytes.
struct Ed25519(Vec<u8>);

impl Verifier<Vec<u8>> for Ed25519 {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> Result<(), SignatureError> {
        ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &self.0)
            .verify(message, signature)
            .map_err(|_| SignatureError::new())
    }
}

impl JwtVerifier for Ed25519 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::EdDSA
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_bad_key_says_why_and_quotes_only_a_public_looking_value() {
        let short = "publickeyv1_abc".parse::<IdentityKey>().unwrap_err();
        let text = short.to_string();
        assert!(text.contains("`publickeyv1_abc`"), "{text}");
        assert!(text.contains("length of 32"), "{text}");

        let pasted = "-----BEGIN PRIVATE KEY-----MC4CAQAwBQYDK2VwBCIE"
            .parse::<IdentityKey>()
            .unwrap_err()
            .to_string();
        assert!(!pasted.contains("MC4CAQ"), "{pasted}");
        assert!(
            pasted.contains("not starting with publickeyv1_"),
            "{pasted}"
        );
    }

    /// The signature is checked with ring: a message signed by the key verifies, another
    /// message or another key's signature does not; other algorithms get no verifier.
    #[test]
    fn ring_verifies_ed25519_and_nothing_else() {
        use ring::signature::{Ed25519KeyPair, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let pair = |()| {
            let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
            Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap()
        };
        let (signer, other) = (pair(()), pair(()));
        let key = DecodingKey::from_ed_der(signer.public_key().as_ref());
        let verify = verifier(&Algorithm::EdDSA, &key).unwrap();
        let signed = signer.sign(b"message").as_ref().to_vec();
        assert!(verify.verify(b"message", &signed).is_ok());
        assert!(verify.verify(b"massage", &signed).is_err());
        let forged = other.sign(b"message").as_ref().to_vec();
        assert!(verify.verify(b"message", &forged).is_err());
        assert!(verifier(&Algorithm::HS256, &key).is_err());
        assert!(verifier(&Algorithm::EdDSA, &DecodingKey::from_secret(b"k")).is_err());
    }
}
