//! The text summary of a [`MetricsSnapshot`]: the table `claij ask --metrics` prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::{MetricsSnapshot, Timing, kind_name};

impl MetricsSnapshot {
    /// A table for people: a row per count (calls, first-try validity, attempts and retries,
    /// verdicts, fixes by kind, violations by keyword, errors, tokens, cost), the stage timings
    /// (milliseconds, indented by how the stages nest), then a row per model.
    ///
    /// ```
    /// use claij_interceptors::builtin::metrics::MetricsSnapshot;
    ///
    /// let text = MetricsSnapshot::default().render();
    /// assert!(text.starts_with("metrics\n  calls         0 (0 valid, 0 failed)\n"));
    /// ```
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = write_table(&mut out, self);
        out
    }
}

fn write_table(out: &mut String, m: &MetricsSnapshot) -> std::fmt::Result {
    let row = |out: &mut String, name: &str, value: String| writeln!(out, "  {name:<14}{value}");
    writeln!(out, "metrics")?;
    row(
        out,
        "calls",
        format!("{} ({} valid, {} failed)", m.calls, m.succeeded, m.failed),
    )?;
    let rate = m
        .first_try_rate()
        .map_or_else(String::new, |r| format!(" ({:.0}%)", r * 100.0));
    row(
        out,
        "first try",
        format!("{} of {} valid{rate}", m.first_try, m.calls),
    )?;
    row(
        out,
        "attempts",
        format!(
            "{} ({} {})",
            m.attempts,
            m.retries,
            if m.retries == 1 { "retry" } else { "retries" }
        ),
    )?;
    let v = &m.verdicts;
    row(
        out,
        "verdicts",
        format!(
            "valid {}, invalid {}, no json {}, backend error {}",
            v.valid, v.invalid, v.no_json, v.backend_error
        ),
    )?;
    row(out, "fixes", list(&kinds(&m.fixes())))?;
    row(out, "violations", list(&m.violations))?;
    if !m.errors.is_empty() {
        row(out, "errors", list(&m.errors))?;
    }
    let u = &m.usage;
    row(
        out,
        "tokens",
        format!(
            "{} in, {} out ({} cached, {} reasoning)",
            u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens
        ),
    )?;
    row(out, "cost", cost(u.cost_usd))?;
    writeln!(
        out,
        "  {:<14}{:>6}{:>12}{:>12}{:>12}{:>12}",
        "stage", "count", "total ms", "mean ms", "min ms", "max ms"
    )?;
    let t = &m.timings;
    let stages: [(&str, &Timing); 9] = [
        ("call", &t.call),
        ("  prompt", &t.prompt),
        ("  request", &t.request),
        ("  processing", &t.processing),
        ("    extraction", &t.extraction),
        ("    repair", &t.repair),
        ("    coercion", &t.coercion),
        ("    validation", &t.validation),
        ("    check", &t.check),
    ];
    for (name, timing) in stages {
        writeln!(
            out,
            "  {name:<14}{:>6}{:>12}{:>12}{:>12}{:>12}",
            timing.count,
            ms(timing.total),
            ms(timing.mean()),
            ms(timing.min),
            ms(timing.max)
        )?;
    }
    for (model, per) in &m.models {
        let providers: Vec<&str> = per.providers.iter().map(String::as_str).collect();
        let via = if providers.is_empty() {
            String::new()
        } else {
            format!(" ({})", providers.join(", "))
        };
        row(
            out,
            "model",
            format!(
                "{model}{via}: {} calls, {} first try, {} attempts, {}",
                per.calls,
                per.first_try,
                per.attempts,
                per.usage
                    .cost_usd
                    .map_or_else(|| "cost unknown".to_owned(), |usd| format!("${usd:.6}"))
            ),
        )?;
    }
    Ok(())
}

/// Fix kinds by their snake_case names (`trailing_comma`), as the trail writes them.
fn kinds(fixes: &BTreeMap<claij_validation::FixKind, u64>) -> BTreeMap<String, u64> {
    fixes
        .iter()
        .map(|(kind, n)| (kind_name(*kind), *n))
        .collect()
}

/// `name n, name n` in key order, or `none`.
fn list(counts: &BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cost(usd: Option<f64>) -> String {
    usd.map_or_else(
        || "unknown (the provider reports none)".to_owned(),
        |usd| format!("${usd:.6}"),
    )
}

/// Milliseconds, three decimals.
fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}
