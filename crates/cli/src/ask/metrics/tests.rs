//! The `--metrics` table.

use std::time::Duration;

use claij_interceptors::builtin::metrics::MetricsSnapshot;
use claij_validation::FixKind;

use super::table;

#[test]
fn the_table_has_a_row_per_count_and_per_stage() {
    let mut m = MetricsSnapshot::default();
    m.calls = 1;
    m.succeeded = 1;
    m.attempts = 2;
    m.retries = 1;
    m.verdicts.valid = 1;
    m.verdicts.invalid = 1;
    m.repairs.insert(FixKind::TrailingComma, 2);
    m.extractions.insert(FixKind::Extracted, 1);
    m.violations.insert("required".to_owned(), 1);
    m.usage.input_tokens = 120;
    m.usage.output_tokens = 30;
    m.usage.cost_usd = Some(0.00042);
    m.timings.request.record(Duration::from_millis(250));
    m.timings.request.record(Duration::from_millis(750));
    insta::assert_snapshot!(table(&m), @r"
    metrics
      calls         1 (1 valid, 0 failed)
      first try     0 of 1 valid (0%)
      attempts      2 (1 retries)
      verdicts      valid 1, invalid 1, no json 0, backend error 0
      fixes         extracted 1, trailing_comma 2
      violations    required 1
      tokens        120 in, 30 out (0 cached, 0 reasoning)
      cost          $0.000420
      stage          count    total ms     mean ms      min ms      max ms
      call               0       0.000       0.000       0.000       0.000
        prompt           0       0.000       0.000       0.000       0.000
        request          2    1000.000     500.000     250.000     750.000
        processing       0       0.000       0.000       0.000       0.000
          extraction     0       0.000       0.000       0.000       0.000
          repair         0       0.000       0.000       0.000       0.000
          coercion       0       0.000       0.000       0.000       0.000
          validation     0       0.000       0.000       0.000       0.000
          check          0       0.000       0.000       0.000       0.000
    ");
}

#[test]
fn an_empty_tally_says_none_and_an_unknown_cost() {
    let text = table(&MetricsSnapshot::default());
    assert!(text.contains("  fixes         none\n"), "{text}");
    assert!(text.contains("  cost          unknown"), "{text}");
    assert!(!text.contains("errors"), "{text}");
}
