//! The question's parser (the numeric flags' are the library's, [`claij::options::parse`], tested
//! there): some text besides whitespace, else the error saying so.

use super::*;

#[track_caller]
fn check<T: std::fmt::Debug + PartialEq, E: std::fmt::Display>(
    parse: fn(&str) -> Result<T, E>,
    cases: &[(&str, Result<T, &str>)],
) {
    for (text, expected) in cases {
        let got = parse(text).map_err(|e| e.to_string());
        match expected {
            Ok(value) => assert_eq!(got.as_ref(), Ok(value), "{text:?}"),
            Err(message) => assert_eq!(got, Err((*message).to_owned()), "{text:?}"),
        }
    }
}

#[test]
fn a_question_has_more_than_whitespace() {
    let empty = "the question is empty: ask something";
    check(
        question,
        &[
            ("Capital of France?", Ok("Capital of France?".to_owned())),
            (" ok ", Ok(" ok ".to_owned())),
            ("", Err(empty)),
            ("   ", Err(empty)),
            ("\n\t ", Err(empty)),
        ],
    );
}
