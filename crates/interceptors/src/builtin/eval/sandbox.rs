//! The Rhai engine of the `eval` interceptor: limits set, output captured, results converted to JSON.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use rhai::{Dynamic, Engine, EvalAltResult, ParseErrorType, Position};
use serde_json::{Map, Number, Value};

use super::{EvalError, EvalResult, Limits};

/// Operations between two looks at the clock (reading it costs about as much as a few operations).
const CLOCK_EVERY: u64 = 256;

/// Deepest array or map nesting converted to JSON; deeper values are written as Rhai prints them.
const MAX_JSON_DEPTH: usize = 64;

/// Runs `code` under `limits` on the calling thread.
pub(super) fn evaluate(code: &str, limits: &Limits) -> EvalResult {
    let length = code.chars().count();
    if length > limits.max_code_len {
        return EvalResult::failed(
            code,
            EvalError::Limit {
                message: format!(
                    "the code has {length} characters, more than {}",
                    limits.max_code_len
                ),
            },
        );
    }
    let output = Rc::new(RefCell::new(Output::new(limits.max_output)));
    let engine = engine(limits, &output);
    let outcome = engine
        .eval::<Dynamic>(code)
        .map(|value| to_json(&value, 0))
        .map_err(|e| classify(&e, limits));
    let output = output.take().text;
    EvalResult {
        code: code.to_owned(),
        outcome,
        output,
    }
}

/// An engine with the standard library, the limits, a deadline, and `print`/`debug` going to `output`.
///
/// Built for each run: it holds the run's deadline and output, and building one is cheap next to the
/// model call that precedes it.
fn engine(limits: &Limits, output: &Rc<RefCell<Output>>) -> Engine {
    let mut engine = Engine::new();
    engine
        .set_max_operations(limits.max_operations)
        .set_max_call_levels(limits.max_call_depth)
        .set_max_expr_depths(limits.max_expr_depth, limits.max_function_expr_depth)
        .set_max_string_size(limits.max_string_len)
        .set_max_array_size(limits.max_array_len)
        .set_max_map_size(limits.max_map_len);
    let printed = Rc::clone(output);
    engine.on_print(move |text| printed.borrow_mut().push(text));
    let debugged = Rc::clone(output);
    engine.on_debug(move |text, _source, position| {
        debugged
            .borrow_mut()
            .push(&format!("debug ({position}): {text}"));
    });
    let deadline = Instant::now() + limits.wall_clock;
    let next_check = Cell::new(0);
    engine.on_progress(move |operations| {
        if operations < next_check.get() {
            return None;
        }
        next_check.set(operations + CLOCK_EVERY);
        (Instant::now() >= deadline).then(|| Dynamic::from("timeout"))
    });
    engine
}

/// Captured `print` and `debug` lines, up to a number of characters.
#[derive(Debug, Default)]
struct Output {
    text: String,
    chars: usize,
    max: usize,
    cut: bool,
}

impl Output {
    fn new(max: usize) -> Self {
        Self {
            max,
            ..Self::default()
        }
    }

    fn push(&mut self, line: &str) {
        if self.cut {
            return;
        }
        let separator = usize::from(!self.text.is_empty());
        let room = self.max.saturating_sub(self.chars + separator);
        let length = line.chars().count();
        if separator == 1 && room > 0 {
            self.text.push('\n');
        }
        if length <= room {
            self.text.push_str(line);
            self.chars += separator + length;
        } else {
            let end = line.char_indices().nth(room).map_or(line.len(), |(i, _)| i);
            self.text.push_str(&line[..end]);
            self.text.push_str("… (output cut)");
            self.cut = true;
        }
    }
}

/// What an error of Rhai means for the model.
fn classify(error: &EvalAltResult, limits: &Limits) -> EvalError {
    let inner = error.unwrap_inner();
    let limit = |what: String| EvalError::Limit {
        message: at(what, inner.position()),
    };
    match inner {
        EvalAltResult::ErrorParsing(ParseErrorType::ExprTooDeep, _) => limit(format!(
            "expressions nested deeper than {} (or {} in functions)",
            limits.max_expr_depth, limits.max_function_expr_depth
        )),
        EvalAltResult::ErrorParsing(
            ParseErrorType::LiteralTooLarge(..) | ParseErrorType::TooManyFunctions,
            _,
        ) => limit(inner.to_string()),
        EvalAltResult::ErrorParsing(kind, position) => EvalError::Syntax {
            message: at(kind.to_string(), *position),
        },
        EvalAltResult::ErrorTooManyOperations(_) => {
            limit(format!("more than {} operations", limits.max_operations))
        }
        EvalAltResult::ErrorStackOverflow(_) => limit(format!(
            "function calls nested deeper than {}",
            limits.max_call_depth
        )),
        EvalAltResult::ErrorDataTooLarge(what, position) => EvalError::Limit {
            message: format!(
                "{}; strings may have up to {} characters, arrays {} items, maps {} entries",
                at(format!("{what} too large"), *position),
                limits.max_string_len,
                limits.max_array_len,
                limits.max_map_len
            ),
        },
        EvalAltResult::ErrorTooManyVariables(_) | EvalAltResult::ErrorTooManyModules(_) => {
            limit(inner.to_string())
        }
        EvalAltResult::ErrorTerminated(..) => EvalError::Timeout {
            after: limits.wall_clock,
        },
        _ => EvalError::Runtime {
            message: error.to_string(),
        },
    }
}

fn at(message: String, position: Position) -> String {
    if position.is_none() {
        message
    } else {
        format!("{message} ({position})")
    }
}

/// A Rhai value as JSON: `()` is `null`, characters are strings, a float that JSON cannot hold (NaN,
/// infinities) and any other type are written as Rhai prints them.
pub(super) fn to_json(value: &Dynamic, depth: usize) -> Value {
    if value.is_unit() {
        return Value::Null;
    }
    if let Ok(b) = value.as_bool() {
        return Value::Bool(b);
    }
    if let Ok(i) = value.as_int() {
        return Value::from(i);
    }
    if let Ok(f) = value.as_float() {
        return Number::from_f64(f).map_or_else(|| Value::String(f.to_string()), Value::Number);
    }
    if let Ok(c) = value.as_char() {
        return Value::String(c.to_string());
    }
    if let Ok(s) = value.as_immutable_string_ref() {
        return Value::String(s.as_str().to_owned());
    }
    if depth < MAX_JSON_DEPTH {
        if let Ok(items) = value.as_array_ref() {
            return Value::Array(items.iter().map(|v| to_json(v, depth + 1)).collect());
        }
        if let Ok(map) = value.as_map_ref() {
            let object: Map<String, Value> = map
                .iter()
                .map(|(k, v)| (k.to_string(), to_json(v, depth + 1)))
                .collect();
            return Value::Object(object);
        }
    }
    Value::String(value.to_string())
}
