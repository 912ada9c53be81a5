//! The runner's spans, captured by a small `tracing` layer: one run is one tree, `fsm.run >
//! fsm.state > llm.ask > llm.call`, a sub-FSM's run under the state that called it, a failure or an
//! interrupt marked `otel.status_code = ERROR`.

use std::sync::{Arc, Mutex};

use claij_backends::BoxFuture;
use claij_fsm::{
    ExistingJournal, Fsm, Interrupt, Outcome, Runner, Service, ServiceCall, service_fn,
};
use claij_interceptors::BoxError;
use claij_interceptors::Config;
use claij_test_support::Scripted;
use claij_test_support::spans::{CapturedSpan, SpanCapture};
use serde_json::{Value, json};

/// The shared capturing layer, run on a current-thread runtime.
#[derive(Default)]
struct Capture(SpanCapture);

impl Capture {
    /// Runs `f` on a current-thread runtime with this layer as the thread's subscriber.
    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        let _default = self.0.set_default();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn spans(&self) -> Vec<CapturedSpan> {
        self.0.spans()
    }
}

/// Each span as `name{field=value}` for the fields asked, indented under its parent.
fn tree(spans: &[CapturedSpan], fields: &[&str]) -> String {
    fn walk(
        spans: &[CapturedSpan],
        parent: Option<usize>,
        depth: usize,
        fields: &[&str],
        out: &mut String,
    ) {
        for (i, span) in spans.iter().enumerate().filter(|(_, s)| s.parent == parent) {
            // Only the FSM's own fields: the pipeline's spans are the interceptors crate's.
            let fields = if span.name.starts_with("fsm.") {
                fields
            } else {
                &[]
            };
            let shown: Vec<String> = fields
                .iter()
                .filter_map(|f| span.fields.get(*f).map(|v| format!("{f}={v}")))
                .collect();
            out.push_str(&format!(
                "{}{}{{{}}}\n",
                "  ".repeat(depth),
                span.name,
                shown.join(" ")
            ));
            walk(spans, Some(i), depth + 1, fields, out);
        }
    }
    let mut out = String::new();
    walk(spans, None, 0, fields, &mut out);
    out
}

/// The spans of the FSM and of the pipeline's model calls (not the interceptors' or HTTP's).
fn fsm_and_llm(spans: &[CapturedSpan]) -> Vec<CapturedSpan> {
    let keep = |s: &CapturedSpan| s.name.starts_with("fsm.") || s.name.starts_with("llm.");
    let kept: Vec<usize> = (0..spans.len()).filter(|&i| keep(&spans[i])).collect();
    // The nearest kept ancestor becomes the parent.
    let lift = |mut parent: Option<usize>| {
        while let Some(p) = parent {
            if keep(&spans[p]) {
                return kept.iter().position(|&k| k == p);
            }
            parent = spans[p].parent;
        }
        None
    };
    kept.iter()
        .map(|&i| CapturedSpan {
            parent: lift(spans[i].parent),
            ..spans[i].clone()
        })
        .collect()
}

fn object(required: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = required
        .iter()
        .map(|k| ((*k).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fn fsm(definition: Value) -> Fsm {
    Fsm::new(serde_json::from_value(definition).unwrap()).unwrap()
}

/// start -> draft (llm) -> review (llm) -> end.
fn writing() -> Fsm {
    fsm(json!({
        "id": "writing",
        "states": [
            {"id": "draft", "action": "llm"},
            {"id": "review", "action": "llm"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "draft"], "schema": object(&["topic"])},
            {"id": ["draft", "review"], "schema": object(&["text"])},
            {"id": ["review", "end"], "schema": object(&["verdict"])}
        ]
    }))
}

fn scripted(fsm: Fsm, replies: &[&str]) -> Runner {
    let backend = Scripted::replies(replies.iter().map(|s| (*s).to_owned()));
    let mut config = Config::new("scripted");
    config.max_retries = 1;
    Runner::new(fsm).with_llm(Arc::new(backend), config)
}

const STATE_FIELDS: &[&str] = &[
    "otel.name",
    "claij.fsm.id",
    "claij.fsm.state",
    "claij.fsm.transition",
    "claij.fsm.outcome",
    "otel.status_code",
];

#[test]
fn a_run_is_one_tree_of_states_and_model_calls() {
    let capture = Capture::default();
    let runner = scripted(
        writing(),
        &[
            r#"{"text": "Rust is fast."}"#,
            "not json",
            r#"{"verdict": "good"}"#,
        ],
    );
    let run_id = capture.run(async {
        let mut run = runner.start(json!({"topic": "rust"})).unwrap();
        let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        assert!(matches!(outcome, Outcome::Finished { .. }));
        run.id.clone()
    });
    let spans = capture.spans();
    assert_eq!(
        tree(&fsm_and_llm(&spans), STATE_FIELDS),
        "\
fsm.run{otel.name=fsm writing claij.fsm.id=writing claij.fsm.outcome=finished}
  fsm.state{otel.name=state draft claij.fsm.state=draft claij.fsm.transition=draft -> review}
    llm.ask{}
      llm.call{}
  fsm.state{otel.name=state review claij.fsm.state=review claij.fsm.transition=review -> end}
    llm.ask{}
      llm.call{}
      llm.call{}
"
    );
    let run = spans.iter().find(|s| s.name == "fsm.run").unwrap();
    assert_eq!(run.fields["claij.fsm.run_id"], run_id);
    assert_eq!(run.fields["otel.kind"], "internal");
    assert_eq!(run.fields["claij.fsm.resumed"], "false");
    assert!(!run.fields.contains_key("otel.status_code"), "{run:?}");
}

#[test]
fn a_failed_run_marks_its_run_and_state_as_errors() {
    let capture = Capture::default();
    let runner = scripted(writing(), &[r#"{"text": "x"}"#, "nope", "nope"]);
    capture.run(async {
        let mut run = runner.start(json!({"topic": "t"})).unwrap();
        runner
            .run(&mut run, &Interrupt::new(), None)
            .await
            .unwrap_err();
    });
    let spans = capture.spans();
    assert_eq!(
        tree(
            &fsm_and_llm(&spans),
            &["claij.fsm.state", "claij.fsm.outcome", "otel.status_code"]
        ),
        "\
fsm.run{claij.fsm.outcome=error otel.status_code=ERROR}
  fsm.state{claij.fsm.state=draft}
    llm.ask{}
      llm.call{}
  fsm.state{claij.fsm.state=review otel.status_code=ERROR}
    llm.ask{}
      llm.call{}
      llm.call{}
"
    );
    for span in spans
        .iter()
        .filter(|s| s.name.starts_with("fsm.") && s.fields.contains_key("otel.status_code"))
    {
        let description = &span.fields["otel.status_description"];
        assert!(description.starts_with("state `review`"), "{description}");
    }
}

#[test]
fn a_sub_fsm_runs_under_the_state_that_calls_it() {
    let child = fsm(json!({
        "id": "pipeline",
        "states": [
            {"id": "fetch", "action": "service"},
            {"id": "summarise", "action": "llm"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "fetch"], "schema": object(&["url"])},
            {"id": ["fetch", "summarise"], "schema": object(&["body"])},
            {"id": ["summarise", "end"], "schema": object(&["summary"])}
        ]
    }));
    let parent = fsm(json!({
        "id": "parent",
        "states": [
            {"id": "delegate", "action": "fsm", "config": {"fsm": "pipeline"}},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "delegate"], "schema": object(&["url"])},
            {"id": ["delegate", "end"], "schema": object(&["summary"])}
        ]
    }));
    let fetched = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&fetched);
    let child = scripted(child, &[r#"{"summary": "short"}"#]).with_service(
        "fetch",
        service_fn(move |_| {
            // What the service runs in: the state that called it.
            let current = tracing::Span::current();
            seen.lock()
                .unwrap()
                .push(current.metadata().map(|m| m.name()));
            Ok(json!({"body": "page"}))
        }),
    );
    let runner = Runner::new(parent).with_sub_fsm(child);
    let capture = Capture::default();
    capture.run(async {
        let mut run = runner.start(json!({"url": "u"})).unwrap();
        runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
    });
    assert_eq!(
        tree(&fsm_and_llm(&capture.spans()), STATE_FIELDS),
        "\
fsm.run{otel.name=fsm parent claij.fsm.id=parent claij.fsm.outcome=finished}
  fsm.state{otel.name=state delegate claij.fsm.state=delegate claij.fsm.transition=delegate -> end}
    fsm.run{otel.name=fsm pipeline claij.fsm.id=pipeline claij.fsm.outcome=finished}
      fsm.state{otel.name=state fetch claij.fsm.state=fetch claij.fsm.transition=fetch -> summarise}
      fsm.state{otel.name=state summarise claij.fsm.state=summarise claij.fsm.transition=summarise -> end}
        llm.ask{}
          llm.call{}
"
    );
    assert_eq!(*fetched.lock().unwrap(), [Some("fsm.state")]);
}

/// Interrupts the run it serves and never finishes.
struct Interrupts;

impl Service for Interrupts {
    fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>> {
        call.interrupt.interrupt();
        Box::pin(std::future::pending())
    }
}

/// A run that waits for a person is one trace across the calls of `run` and `provide`: the
/// person's turn is a visit of its own; an interrupt marks the run and the state it stopped.
#[test]
fn a_waiting_run_stays_one_tree_and_an_interrupt_is_an_error() {
    let machine = fsm(json!({
        "id": "approval",
        "states": [
            {"id": "propose", "action": "llm"},
            {"id": "approve", "action": "human"},
            {"id": "act", "action": "service"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "propose"], "schema": object(&["task"])},
            {"id": ["propose", "approve"], "schema": object(&["plan"])},
            {"id": ["approve", "act"], "schema": object(&["decision"])},
            {"id": ["act", "end"], "schema": object(&["done"])}
        ]
    }));
    let runner = scripted(machine, &[r#"{"plan": "do it"}"#]).with_service("act", Interrupts);
    let capture = Capture::default();
    capture.run(async {
        let mut run = runner.start(json!({"task": "t"})).unwrap();
        let waiting = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        assert!(matches!(waiting, Outcome::Waiting { .. }));
        runner
            .provide(&mut run, json!({"decision": "yes"}), None)
            .unwrap();
        let stopped = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        assert!(matches!(stopped, Outcome::Interrupted { .. }));
    });
    assert_eq!(
        tree(&fsm_and_llm(&capture.spans()), STATE_FIELDS),
        "\
fsm.run{otel.name=fsm approval claij.fsm.id=approval claij.fsm.outcome=interrupted otel.status_code=ERROR}
  fsm.state{otel.name=state propose claij.fsm.state=propose claij.fsm.transition=propose -> approve}
    llm.ask{}
      llm.call{}
  fsm.state{otel.name=state approve claij.fsm.state=approve claij.fsm.transition=approve -> act}
  fsm.state{otel.name=state act claij.fsm.state=act claij.fsm.transition=act -> interrupted otel.status_code=ERROR}
"
    );
    let run = capture
        .spans()
        .into_iter()
        .find(|s| s.name == "fsm.run")
        .unwrap();
    assert_eq!(
        run.fields["otel.status_description"],
        "interrupted in state `act`"
    );
}

/// A run resumed from its journal is a new trace with the same `claij.fsm.run_id`, marked
/// `claij.fsm.resumed`; a sub-FSM run it waited in is restored under it.
#[test]
fn a_resumed_run_keeps_its_id_in_a_new_trace() {
    let approval = Arc::new(fsm(json!({
        "id": "approval",
        "states": [{"id": "approve", "action": "human"}, {"id": "end", "action": "end"}],
        "transitions": [
            {"id": ["start", "approve"], "schema": object(&["plan"])},
            {"id": ["approve", "end"], "schema": object(&["decision"])}
        ]
    })));
    let parent = || {
        Runner::new(fsm(json!({
            "id": "shipping",
            "states": [
                {"id": "review", "action": "fsm", "config": {"fsm": "approval"}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "review"], "schema": object(&["plan"])},
                {"id": ["review", "end"], "schema": object(&["decision"])}
            ]
        })))
        .with_sub_fsm(Runner::new(Arc::clone(&approval)))
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let runner = parent();
    let first = Capture::default();
    first.run(async {
        let (mut run, mut journal) = runner
            .start_journaled(json!({"plan": "ship"}), &path, ExistingJournal::Refuse)
            .unwrap();
        let waiting = runner
            .run(&mut run, &Interrupt::new(), Some(&mut journal))
            .await;
        assert!(
            matches!(waiting, Ok(Outcome::Waiting { .. })),
            "{waiting:?}"
        );
    });

    let resumed = Capture::default();
    let runner = parent();
    resumed.run(async {
        let (mut run, mut journal) = runner.resume(&path).unwrap();
        runner
            .provide(&mut run, json!({"decision": "yes"}), Some(&mut journal))
            .unwrap();
        let finished = runner
            .run(&mut run, &Interrupt::new(), Some(&mut journal))
            .await;
        assert!(
            matches!(finished, Ok(Outcome::Finished { .. })),
            "{finished:?}"
        );
    });
    let fields = &[
        "claij.fsm.id",
        "claij.fsm.resumed",
        "claij.fsm.transition",
        "claij.fsm.outcome",
    ];
    assert_eq!(
        tree(&fsm_and_llm(&resumed.spans()), fields),
        "\
fsm.run{claij.fsm.id=shipping claij.fsm.resumed=true claij.fsm.outcome=finished}
  fsm.run{claij.fsm.id=approval claij.fsm.resumed=true claij.fsm.outcome=finished}
    fsm.state{claij.fsm.transition=approve -> end}
  fsm.state{claij.fsm.transition=review -> end}
"
    );
    let run_ids = |capture: &Capture| -> Vec<String> {
        capture
            .spans()
            .iter()
            .filter(|s| s.name == "fsm.run")
            .map(|s| s.fields["claij.fsm.run_id"].clone())
            .collect()
    };
    assert_eq!(run_ids(&first), run_ids(&resumed));
}
