//! Strings a provider dialect's added `maxLength` cut short: finding them in a reply ([`CutString`]) and
//! where to end one cut inside a word.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A string of a reply as long as a `maxLength` the provider's schema dialect added where the schema
/// set none (a [`LossKind::Tightened`](claij_schema::dialect::LossKind) `maxLength`, e.g. the
/// llguidance dialect's 2000 characters for the local model): the decoder had to end it there, so it
/// is probably cut short. Recognised by its length alone, so a string of exactly that length that
/// ended on its own is flagged too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutString {
    /// JSON pointer to the string in the reply (`""`: the reply is the string).
    pub pointer: String,
    /// The bound it reached, in characters.
    pub limit: u64,
    /// When the cut fell inside a word: the characters kept so that the string ends after its last
    /// whole word, followed by `…` in the answer (the raw reply keeps what the model wrote). `None`
    /// when it is left as cut (between words, or shortening it would break the schema or a check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
}

impl std::fmt::Display for CutString {
    /// `the string at /answer was cut at 2000 characters, the bound ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(
            f,
            "the string at {at} was cut at {} characters, the bound the schema dialect adds for the \
             decoder (give the field a maxLength to choose another)",
            self.limit
        )?;
        match self.kept {
            Some(kept) => write!(
                f,
                "; it ends after its last whole word ({kept} characters) and `…`"
            ),
            None => Ok(()),
        }
    }
}

/// How many characters of `s` (cut mid-word) to keep so it ends after its last whole word: before the
/// last run of whitespace, without the punctuation that led into the cut word (`,` `;` `:` `-`), when
/// that keeps at least half of it; `None` when the cut fell between words already or no such boundary
/// exists.
pub(super) fn at_last_word(s: &str) -> Option<usize> {
    let chars: Vec<char> = s.chars().collect();
    if chars.last().is_none_or(|c| c.is_whitespace()) {
        return None;
    }
    let space = chars.iter().rposition(|c| c.is_whitespace())?;
    let mut end = space;
    while end > 0
        && (chars[end - 1].is_whitespace() || matches!(chars[end - 1], ',' | ';' | ':' | '-'))
    {
        end -= 1;
    }
    (end > 0 && end * 2 >= chars.len()).then_some(end)
}

/// The strings of `value` exactly as long as a `maxLength` a dialect added (`losses`).
pub(super) fn cut_strings(value: &Value, losses: &[claij_schema::dialect::Loss]) -> Vec<CutString> {
    use claij_schema::dialect::LossKind;
    let limits: Vec<u64> = losses
        .iter()
        .filter(|l| l.change == LossKind::Tightened && l.keyword == "maxLength")
        .filter_map(|l| l.value.as_u64())
        .collect();
    let mut cut = Vec::new();
    if !limits.is_empty() {
        collect_cut(value, &mut String::new(), &limits, &mut cut);
    }
    cut
}

fn collect_cut(value: &Value, pointer: &mut String, limits: &[u64], cut: &mut Vec<CutString>) {
    let children: Box<dyn Iterator<Item = (String, &Value)>> = match value {
        Value::String(s) => {
            let chars = u64::try_from(s.chars().count()).unwrap_or(u64::MAX);
            if limits.contains(&chars) {
                cut.push(CutString {
                    pointer: pointer.clone(),
                    limit: chars,
                    kept: None,
                });
            }
            return;
        }
        Value::Array(items) => Box::new(items.iter().enumerate().map(|(i, v)| (i.to_string(), v))),
        Value::Object(map) => Box::new(
            map.iter()
                .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v)),
        ),
        _ => return,
    };
    for (token, item) in children {
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&token);
        collect_cut(item, pointer, limits, cut);
        pointer.truncate(len);
    }
}
