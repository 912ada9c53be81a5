//! The built-in tools (the `tools` interceptor by name): small, side-effect-free functions claij
//! can vouch for (the clock and a random number), so a model can be asked what it cannot know.

use std::hash::{BuildHasher as _, RandomState};
use std::time::SystemTime;

use claij_interceptors::Limits;
use claij_interceptors::builtin::tools::{RegisterError, Tools};

/// Characters of tool results shown to the model by default.
pub const DEFAULT_RESULT_BUDGET: usize = 4000;

/// The arguments of `now`: none.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// The arguments of `random_int`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Range {
    /// The smallest value (inclusive).
    min: i64,
    /// The largest value (inclusive).
    max: i64,
}

/// `now` (the current UTC time, RFC 3339) and `random_int` (a uniformly drawn integer in a range).
///
/// # Errors
///
/// Never in practice: a tool's argument schema that does not register.
pub fn builtin() -> Result<Tools, RegisterError> {
    with_budget(DEFAULT_RESULT_BUDGET)
}

/// [`builtin`], one reply's results shown to the model in at most `result_budget` characters.
///
/// # Errors
///
/// As [`builtin`].
pub fn with_budget(result_budget: usize) -> Result<Tools, RegisterError> {
    Tools::with_limits(Limits {
        result_chars: result_budget,
        ..Limits::default()
    })
    .register_typed(
        "now",
        "The current date and time, UTC, as RFC 3339.",
        |_: Nothing| async { Ok(humantime::format_rfc3339_seconds(SystemTime::now()).to_string()) },
    )?
    .register_typed(
        "random_int",
        "A random integer between min and max, both included.",
        |range: Range| async move { random_int(range.min, range.max) },
    )
}

fn random_int(min: i64, max: i64) -> Result<i64, claij_interceptors::BoxError> {
    if min > max {
        return Err(format!("min ({min}) is above max ({max})").into());
    }
    let span = u64::try_from(i128::from(max) - i128::from(min) + 1).unwrap_or(u64::MAX);
    let draw = RandomState::new().hash_one(SystemTime::now()) % span.max(1);
    let value = i128::from(min) + i128::from(draw);
    Ok(i64::try_from(value).unwrap_or(max))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn random_ints_stay_in_range() {
        for _ in 0..200 {
            let n = super::random_int(-3, 3).unwrap();
            assert!((-3..=3).contains(&n), "{n}");
        }
        assert_eq!(super::random_int(5, 5).unwrap(), 5);
        assert!(super::random_int(i64::MIN, i64::MAX).is_ok());
        assert!(super::random_int(2, 1).is_err());
    }

    #[test]
    fn the_tools_register() {
        assert_eq!(super::builtin().unwrap().names(), ["now", "random_int"]);
    }
}
