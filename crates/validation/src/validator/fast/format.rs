//! The `format`s the compiled check asserts itself (`date`, `time`, `date-time`), exactly as boon 0.6
//! does (`boon/src/formats.rs`, MIT OR Apache-2.0, ported keeping its parsing, `usize::from_str`
//! included, so the verdicts are the same): any other format leaves its subschema to boon.

/// The check for a format name, when the compiled check has one.
pub(super) fn lookup(name: &str) -> Option<fn(&str) -> bool> {
    match name {
        "date" => Some(date),
        "time" => Some(time),
        "date-time" => Some(date_time),
        _ => None,
    }
}

fn matches_char(s: &str, index: usize, ch: char) -> bool {
    s.is_char_boundary(index) && s[index..].starts_with(ch)
}

/// The number the ASCII digits of `bytes` at `range` write, when they all are digits.
#[inline]
fn digits(bytes: &[u8], range: std::ops::Range<usize>) -> Option<usize> {
    bytes.get(range)?.iter().try_fold(0, |n: usize, b| {
        b.is_ascii_digit().then(|| n * 10 + usize::from(b - b'0'))
    })
}

/// Whether a month `m` of year `y` has a day `d`, February by leap year.
#[inline]
fn day_in_month(y: usize, m: usize, d: usize) -> bool {
    if !matches!(m, 1..=12) || !matches!(d, 1..=31) {
        return false;
    }
    match m {
        2 => {
            let leap = y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
            d <= if leap { 29 } else { 28 }
        }
        4 | 6 | 9 | 11 => d <= 30,
        _ => true,
    }
}

/// RFC 3339 `full-date`: `yyyy-mm-dd`, days within the month, February by leap year. Digits where
/// they belong are read at once; anything else goes through boon's parsing ([`date_parsed`]).
fn date(s: &str) -> bool {
    let b = s.as_bytes();
    if let (10, Some(b'-'), Some(b'-')) = (b.len(), b.get(4), b.get(7))
        && let (Some(y), Some(m), Some(d)) = (digits(b, 0..4), digits(b, 5..7), digits(b, 8..10))
    {
        return day_in_month(y, m, d);
    }
    date_parsed(s)
}

/// [`date`] as boon parses it.
#[cold]
fn date_parsed(s: &str) -> bool {
    if s.len() != 10 || !matches_char(s, 4, '-') || !matches_char(s, 7, '-') {
        return false;
    }
    let mut ymd = s.splitn(3, '-').filter_map(|t| t.parse::<usize>().ok());
    let (Some(y), Some(m), Some(d)) = (ymd.next(), ymd.next(), ymd.next()) else {
        return false;
    };
    day_in_month(y, m, d)
}

/// RFC 3339 `full-time`: `hh:mm:ss`, an optional fraction, `Z` or an offset; a leap second only
/// at 23:59 UTC.
fn time(mut str: &str) -> bool {
    if str.len() < 9 || !matches_char(str, 2, ':') || !matches_char(str, 5, ':') {
        return false;
    }
    if !str.is_char_boundary(8) {
        return false;
    }
    // `hh:mm:ss` in digits is read at once, anything else as boon parses it.
    let b = str.as_bytes();
    let (mut h, mut m, s) = match (digits(b, 0..2), digits(b, 3..5), digits(b, 6..8)) {
        (Some(h), Some(m), Some(s)) => (h, m, s),
        _ => {
            let mut hms = str[..8]
                .splitn(3, ':')
                .filter_map(|t| t.parse::<usize>().ok());
            let (Some(h), Some(m), Some(s)) = (hms.next(), hms.next(), hms.next()) else {
                return false;
            };
            (h, m, s)
        }
    };
    if h > 23 || m > 59 || s > 60 {
        return false;
    }
    str = &str[8..];
    if let Some(rem) = str.strip_prefix('.') {
        let fraction = rem.chars().take_while(char::is_ascii_digit).count();
        if fraction == 0 {
            return false;
        }
        str = &rem[fraction..];
    }
    if str != "z" && str != "Z" {
        if str.len() != 6 {
            return false;
        }
        let sign: isize = match str.chars().next() {
            Some('+') => -1,
            Some('-') => 1,
            _ => return false,
        };
        str = &str[1..];
        if !matches_char(str, 2, ':') {
            return false;
        }
        let mut zhm = str.splitn(2, ':').filter_map(|t| t.parse::<usize>().ok());
        let (Some(zh), Some(zm)) = (zhm.next(), zhm.next()) else {
            return false;
        };
        if zh > 23 || zm > 59 {
            return false;
        }
        // Bounded above: h, m, zh, zm are all checked, so these fit an isize.
        let mut hm = (h * 60 + m) as isize + sign * (zh * 60 + zm) as isize;
        if hm < 0 {
            hm += 24 * 60;
        }
        let hm = hm.unsigned_abs();
        (h, m) = (hm / 60, hm % 60);
    }
    s < 60 || (h == 23 && m == 59)
}

/// RFC 3339 `date-time`: a date, `T` or `t`, a time.
fn date_time(s: &str) -> bool {
    s.len() >= 20
        && s.is_char_boundary(10)
        && s[10..].starts_with(['t', 'T'])
        && date(&s[..10])
        && time(&s[11..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times_as_boon_reads_them() {
        for (s, ok) in [
            ("2024-02-29T23:59:60Z", true),
            ("2023-02-29T00:00:00Z", false),
            ("1900-02-29T00:00:00Z", false),
            ("2000-02-29T00:00:00Z", true),
            ("2024-04-31T00:00:00Z", false),
            ("2024-01-01t00:00:00.123+05:30", true),
            ("2024-01-01 00:00:00Z", false),
            ("2024-01-01T00:00:00", false),
            ("2024-01-01T24:00:00Z", false),
            ("2024-01-01T12:00:60Z", false),
            ("2024-01-01T23:59:60+00:00", true),
            ("2024-01-01T00:59:60+01:00", true),
            ("2024-01-01T00:00:00.Z", false),
            ("2024-01-01T00:00:00+5:30", false),
            // `usize::from_str` takes a `+`: boon accepts what it parses.
            ("+024-01-01T00:00:00Z", true),
            ("2024-01-01T00:00:00Zé", false),
            ("２０２４-01-01T00:00:00Z", false),
        ] {
            assert_eq!(date_time(s), ok, "{s}");
        }
        assert!(date("2024-12-31"));
        assert!(!date("2024-13-01"));
        assert!(time("08:30:00Z"));
        assert!(!time("8:30:00Z"));
        assert!(lookup("email").is_none());
    }

    /// boon's verdict on `s` for `format`.
    fn boon(format: &str, s: &str) -> bool {
        let compiled = claij_schema::compile(&serde_json::json!({"format": format})).unwrap();
        let (schemas, root) = compiled.as_boon();
        schemas.validate(&serde_json::json!(s), root).is_ok()
    }

    /// A date-time written by `template` with some of its characters replaced: digits where the
    /// template has them read at once, anything else through boon's parsing.
    fn arb_date_time() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let templates = prop_oneof![
            Just("2024-02-29T23:59:60Z"),
            Just("1999-12-31t00:00:00.123+05:30"),
            Just("2023-04-30T12:34:56-00:00"),
        ];
        let swap = prop_oneof![
            proptest::char::range('0', '9'),
            Just('-'),
            Just(':'),
            Just('+'),
            Just('.'),
            Just('T'),
            Just('Z'),
            Just(' '),
            Just('é'),
        ];
        (
            templates,
            proptest::collection::vec((0usize..40, swap), 0..4),
            0usize..4,
        )
            .prop_map(|(template, swaps, cut)| {
                let mut chars: Vec<char> = template.chars().collect();
                for (at, c) in swaps {
                    if let Some(slot) = chars.get_mut(at) {
                        *slot = c;
                    }
                }
                chars.truncate(chars.len() - cut.min(chars.len()));
                chars.into_iter().collect()
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// `date`, `time` and `date-time` give boon's verdict on strings near valid ones.
        #[test]
        fn formats_decide_as_boon_does(s in arb_date_time()) {
            proptest::prop_assert_eq!(date_time(&s), boon("date-time", &s), "date-time {}", s);
            let (date_part, time_part) = (s.get(..10), s.get(11..));
            if let Some(d) = date_part {
                proptest::prop_assert_eq!(date(d), boon("date", d), "date {}", d);
            }
            if let Some(t) = time_part {
                proptest::prop_assert_eq!(time(t), boon("time", t), "time {}", t);
            }
        }
    }
}
