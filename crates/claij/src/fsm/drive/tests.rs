//! [`drive`] gives a waiting state its input and tells how the run ended; [`Line`] and [`Report`]
//! say it.

use claij_fsm::{Fsm, Interrupt, Outcome, Runner};
use serde_json::{Value, json};

use super::{Ended, Input, Line, Report, drive};

/// `approve` waits for a `{"decision": string}`, then the run ends.
fn runner() -> Runner {
    let object = |key: &str| json!({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]});
    let definition = json!({
        "id": "approval",
        "states": [{"id": "approve", "action": "human"}, {"id": "end", "action": "end"}],
        "transitions": [
            {"id": ["start", "approve"], "schema": object("plan")},
            {"id": ["approve", "end"], "schema": object("decision")}
        ]
    });
    Runner::new(Fsm::new(serde_json::from_value(definition).unwrap()).unwrap())
}

/// Scripted events; `retry`: ask again after a refused one.
struct Script {
    events: Vec<Value>,
    retry: bool,
    refused: usize,
}

impl Input<claij_fsm::Error> for Script {
    fn event(&mut self, _: &str) -> Result<Option<Value>, claij_fsm::Error> {
        Ok((!self.events.is_empty()).then(|| self.events.remove(0)))
    }

    fn refused(&mut self, _: &str) -> bool {
        self.refused += 1;
        self.retry
    }
}

async fn driven(events: Vec<Value>, retry: bool) -> (Ended, Report, usize) {
    let runner = runner();
    let mut run = runner.start(json!({"plan": "ship"})).unwrap();
    let mut input = Script {
        events,
        retry,
        refused: 0,
    };
    let ended = drive(&runner, &mut run, None, &Interrupt::new(), &mut input)
        .await
        .unwrap();
    let report = Report::new(&run, ended.outcome());
    (ended, report, input.refused)
}

#[tokio::test]
async fn a_refused_event_is_asked_again_until_a_valid_one_ends_the_run() {
    let (ended, report, refused) =
        driven(vec![json!({"nope": 1}), json!({"decision": "yes"})], true).await;
    assert!(
        matches!(ended, Ended::Outcome(Outcome::Finished { .. })),
        "{ended:?}"
    );
    assert_eq!(refused, 1);
    assert_eq!(
        report.outcome,
        json!({"finished": "end", "event": {"id": ["approve", "end"], "decision": "yes"}})
    );
    assert_eq!(report.summary(), "2 transitions, 0 model calls, 0+0 tokens");
    assert_eq!(report.to_json()["usage"]["input_tokens"], 0);
    assert_eq!(
        Line(&report.trail.entries[1]).to_string(),
        r#"approve -> end: {"id":["approve","end"],"decision":"yes"}"#
    );
}

#[tokio::test]
async fn input_that_gives_up_or_runs_out_leaves_the_run_waiting() {
    let (ended, report, _) = driven(vec![json!({"nope": 1})], false).await;
    assert!(
        matches!(ended, Ended::Refused(Outcome::Waiting { .. })),
        "{ended:?}"
    );
    assert_eq!(report.outcome, json!({"waiting": "approve"}));
    let (ended, _, refused) = driven(vec![], true).await;
    assert!(
        matches!(ended, Ended::Outcome(Outcome::Waiting { .. })),
        "{ended:?}"
    );
    assert_eq!(refused, 0);
}

#[test]
fn a_long_event_is_cut_in_its_line() {
    let runner = runner();
    let run = runner.start(json!({"plan": "x".repeat(300)})).unwrap();
    let line = Line(&run.trail.entries[0]).to_string();
    assert!(
        line.starts_with(r#"start -> approve: {"id":["start","approve"],"plan":"xxx"#),
        "{line}"
    );
    assert!(line.ends_with("..."), "{line}");
    assert_eq!(line.chars().count(), "start -> approve: ".len() + 163);
}

#[test]
fn a_run_stopped_at_a_limit_says_how_it_goes_on() {
    use std::path::Path;

    use super::{limit_flag, stopped};
    let transitions = claij_fsm::Error::TooManyTransitions {
        state: "loop".to_owned(),
        limit: 3,
        recorded: 4,
    };
    let repeats = claij_fsm::Error::RepeatedCall {
        state: "svc".to_owned(),
        call: "now {}".to_owned(),
        repeats: 2,
        limit: 2,
    };
    let journal = Some(Path::new("run.jsonl"));
    let line = stopped(&transitions, journal);
    assert!(
        line.starts_with("stopped in state `loop` after 3 transitions"),
        "{line}"
    );
    assert!(
        line.ends_with(
            "; the run can go on: `claij fsm resume run.jsonl` (its --max-transitions counts anew)"
        ),
        "{line}"
    );
    let line = stopped(&repeats, journal);
    assert!(
        line.ends_with(
            "`claij fsm resume run.jsonl` (with a higher --max-repeated-calls to allow more)"
        ),
        "{line}"
    );
    let line = stopped(&transitions, None);
    assert!(
        line.ends_with("; to be able to go on after a stop, run with --journal FILE, then `claij fsm resume FILE`"),
        "{line}"
    );
    let other = claij_fsm::Error::NotWaiting {
        state: "end".to_owned(),
    };
    assert_eq!(stopped(&other, journal), other.to_string());
    assert_eq!(limit_flag("max_transitions"), Some("--max-transitions"));
    assert_eq!(
        limit_flag("max_repeated_calls"),
        Some("--max-repeated-calls")
    );
    assert_eq!(limit_flag("max_steps"), None);
}
