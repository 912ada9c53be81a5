//! Fixes: every change that extraction, repair or coercion made to an LLM reply, so nothing is silent.

use serde::{Deserialize, Serialize};

/// One change made to a reply on its way to a valid value.
///
/// `pointer` is the JSON pointer of the value the change concerns (in the recovered value), `before` and
/// `after` are short excerpts of the text or value as it was and as it became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// JSON pointer of the affected value (`""` for the whole document).
    pub pointer: String,
    /// What kind of change this was.
    pub kind: FixKind,
    /// The text or value before the change (short excerpt).
    pub before: String,
    /// The text or value after the change (short excerpt).
    pub after: String,
}

/// The kinds of change, grouped by the stage that makes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FixKind {
    // --- extraction ---
    /// JSON was cut out of surrounding prose, a code fence, `<json>` tags or a `<think>` block.
    Extracted,
    /// JSON was found escaped inside a JSON string and unescaped.
    Unescaped,

    // --- repair ---
    /// A trailing comma was removed.
    TrailingComma,
    /// A missing comma was inserted.
    MissingComma,
    /// A missing colon was inserted.
    MissingColon,
    /// Single, smart or back quotes were turned into double quotes.
    QuoteStyle,
    /// An unquoted object key was quoted.
    UnquotedKey,
    /// An unquoted string value was quoted.
    UnquotedString,
    /// A quote inside a string was escaped.
    UnescapedQuote,
    /// A missing start or end quote of a string was inserted.
    MissingQuote,
    /// A control character or invalid escape inside a string was escaped or fixed.
    StringEscape,
    /// A Python or JavaScript literal (`True`, `None`, `undefined`, ...) was converted.
    Literal,
    /// `NaN`, `Infinity` or a malformed number was converted.
    Number,
    /// A comment was removed.
    Comment,
    /// Truncated input was completed (open strings, arrays, objects closed; a dangling key or value dropped).
    Truncation,
    /// A missing value was filled in (`null`).
    MissingValue,
    /// Concatenated strings (`"a" + "b"`) were joined.
    StringConcatenation,
    /// A JSONP wrapper or function call (`callback({...})`) was removed.
    Jsonp,
    /// An ellipsis (`...`) placeholder was removed.
    Ellipsis,
    /// A redundant closing bracket or other stray character was removed.
    Stray,
    /// Several top-level values were wrapped into an array (newline-delimited JSON).
    Ndjson,
    /// A missing opening or closing bracket was inserted.
    MissingBracket,

    // --- coercion ---
    /// A string was parsed as a number or integer (`"5"` to 5, `"1,234.5"` to 1234.5).
    StringToNumber,
    /// A float with no fractional part was made an integer (`5.0` to 5).
    FloatToInteger,
    /// A string was parsed as a boolean (`"yes"` to true).
    StringToBoolean,
    /// A number or boolean was turned into a string.
    ToString,
    /// A string `"null"`, `"None"`, `"N/A"` or `"nil"` was turned into null where null is allowed.
    ToNull,
    /// A single value was wrapped into a one-element array.
    WrapInArray,
    /// An enum value was matched ignoring case and surrounding space.
    EnumCase,
    /// A property not allowed by `additionalProperties: false` was dropped.
    DroppedProperty,
    /// An optional property sent as `null`, which its schema does not allow, was removed (providers in
    /// strict mode send `null` for optional fields they leave out).
    DroppedNull,
    /// The reply was not JSON and the schema asks for a scalar: the reply itself (without reasoning,
    /// fence or quotes) was taken as a string, to be coerced further.
    ReplyAsValue,
    /// An enum member was found named in prose (`"I'd say positive."` to `"Positive"`), ignoring case
    /// and punctuation; only a unique match counts.
    EnumFromProse,
    /// An enum member was found by one of its aliases (a `title`, or `aliases: ...` in a description).
    EnumAlias,
    /// The enum members named in prose were gathered into the array asked for (`"red and blue"` to
    /// `["Red", "Blue"]`).
    EnumList,
    /// A currency amount was read as a number (`"$12"` to 12).
    Currency,
    /// A percentage was read as the number written (`"12%"` to 12).
    Percent,
    /// A fraction was read as a number (`"1/2"` to 0.5).
    Fraction,
    /// The one number in a piece of prose was taken (`"about 42 people"` to 42).
    NumberFromProse,
    /// A yes/no or true/false in prose was read as a boolean (`"Yes, it is."` to true).
    BooleanFromProse,
    /// An object key was matched to a property ignoring case and punctuation (`"First-Name"` to
    /// `"first_name"`).
    KeyCase,
    /// An object key was matched to a property by one of its aliases (a `title`, or `aliases: ...` in
    /// a description).
    KeyAlias,
    /// Of several JSON values in the reply, the one that fits the schema with the fewest coercions was
    /// taken (not the first).
    BestCandidate,
    /// Of several enum members named in prose, the one the reply ranks first was taken: the first item
    /// of a numbered list (`1. Billing`), or the member right after `most likely`, `answer` and the
    /// like (`Most likely: Billing. Less likely: Account.`).
    EnumRanked,
    /// A required property the reply left out was set to the `default` its schema gives.
    Default,
    /// A one-element array was replaced by its element where the schema asks for that element's type
    /// (`[{"name": "Ada"}]` for an object).
    Unwrapped,
    /// An object or array inside the reply was written as its JSON text where a string is asked
    /// (`{"a": 1}` to `"{\"a\":1}"`).
    JsonAsString,
}

impl FixKind {
    /// Whether the change was made by extraction (cutting the JSON out of the reply).
    pub fn is_extraction(self) -> bool {
        matches!(self, FixKind::Extracted | FixKind::Unescaped)
    }

    /// Whether the change was made by schema-aware coercion (as opposed to extraction or repair).
    pub fn is_coercion(self) -> bool {
        matches!(
            self,
            FixKind::StringToNumber
                | FixKind::FloatToInteger
                | FixKind::StringToBoolean
                | FixKind::ToString
                | FixKind::ToNull
                | FixKind::WrapInArray
                | FixKind::EnumCase
                | FixKind::DroppedProperty
                | FixKind::DroppedNull
                | FixKind::ReplyAsValue
                | FixKind::EnumFromProse
                | FixKind::EnumAlias
                | FixKind::EnumList
                | FixKind::Currency
                | FixKind::Percent
                | FixKind::Fraction
                | FixKind::NumberFromProse
                | FixKind::BooleanFromProse
                | FixKind::KeyCase
                | FixKind::KeyAlias
                | FixKind::BestCandidate
                | FixKind::EnumRanked
                | FixKind::Default
                | FixKind::Unwrapped
                | FixKind::JsonAsString
        )
    }
}
