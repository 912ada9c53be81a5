//! The text summary of a [`MetricsSnapshot`].

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};
use std::time::Duration;

use claij_validation::FixKind;

use super::{MetricsSnapshot, Timing, kind_name};

impl MetricsSnapshot {
    /// A text summary: calls and attempts, errors, tokens and cost, a table of stage timings (in
    /// milliseconds, indented by how the stages nest), fixes and violations by kind, and one line per
    /// model.
    ///
    /// ```
    /// use claij_interceptors::builtin::metrics::MetricsSnapshot;
    ///
    /// let text = MetricsSnapshot::default().render();
    /// assert!(text.starts_with("calls 0"));
    /// ```
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) -> std::fmt::Result {
        let rate = self
            .first_try_rate()
            .map_or_else(String::new, |r| format!(" ({:.0}%)", r * 100.0));
        writeln!(
            out,
            "calls {}: {} succeeded, {} failed, {} valid on the first try{rate}",
            self.calls, self.succeeded, self.failed, self.first_try
        )?;
        let v = &self.verdicts;
        writeln!(
            out,
            "attempts {}, retries {}; verdicts: valid {}, invalid {}, no json {}, backend error {}",
            self.attempts, self.retries, v.valid, v.invalid, v.no_json, v.backend_error
        )?;
        writeln!(out, "errors: {}", list(&self.errors, String::clone))?;
        let u = &self.usage;
        writeln!(
            out,
            "tokens: {} in (estimated {}), {} out, {} cached, {} reasoning; {}",
            u.input_tokens,
            self.estimated_input_tokens,
            u.output_tokens,
            u.cached_tokens,
            u.reasoning_tokens,
            cost(u.cost_usd)
        )?;
        self.write_timings(out)?;
        writeln!(out, "extraction fixes: {}", fixes(&self.extractions))?;
        writeln!(out, "repairs: {}", fixes(&self.repairs))?;
        writeln!(out, "coercions: {}", fixes(&self.coercions))?;
        writeln!(out, "violations: {}", list(&self.violations, String::clone))?;
        writeln!(out, "models:")?;
        if self.models.is_empty() {
            writeln!(out, "  none")?;
        }
        for (model, m) in &self.models {
            let providers = if m.providers.is_empty() {
                String::new()
            } else {
                let names: Vec<&str> = m.providers.iter().map(String::as_str).collect();
                format!(" ({})", names.join(", "))
            };
            writeln!(
                out,
                "  {model}{providers}: {} calls, {} succeeded, {} on the first try, {} attempts; \
                 {} tokens in, {} out; {}; request mean {}",
                m.calls,
                m.succeeded,
                m.first_try,
                m.attempts,
                m.usage.input_tokens,
                m.usage.output_tokens,
                cost(m.usage.cost_usd),
                ms(m.request.mean())
            )?;
        }
        Ok(())
    }

    fn write_timings(&self, out: &mut String) -> std::fmt::Result {
        let t = &self.timings;
        let rows: [(&str, &Timing); 9] = [
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
        writeln!(
            out,
            "{:<16}{:>7}{:>14}{:>14}{:>14}{:>14}",
            "stage", "count", "total", "mean", "min", "max"
        )?;
        for (name, timing) in rows {
            writeln!(
                out,
                "{name:<16}{:>7}{:>14}{:>14}{:>14}{:>14}",
                timing.count,
                ms(timing.total),
                ms(timing.mean()),
                ms(timing.min),
                ms(timing.max)
            )?;
        }
        Ok(())
    }
}

/// A duration in milliseconds, three decimals.
fn ms(d: Duration) -> String {
    format!("{:.3}ms", d.as_secs_f64() * 1000.0)
}

fn cost(usd: Option<f64>) -> String {
    usd.map_or_else(|| "cost unknown".to_owned(), |c| format!("cost ${c:.6}"))
}

fn fixes(counts: &BTreeMap<FixKind, u64>) -> String {
    list(counts, |k| kind_name(*k))
}

/// `name n, name n` in key order, or `none`.
fn list<K, N: Display>(counts: &BTreeMap<K, N>, name: impl Fn(&K) -> String) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|(k, n)| format!("{} {n}", name(k)))
        .collect::<Vec<_>>()
        .join(", ")
}
