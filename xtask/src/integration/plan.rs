//! What `cargo xtask integration` is about to do: the models, the suites, the tests, and what they
//! should cost. Pure functions, so the estimate and its text are unit-tested.

use std::fmt::Write as _;

/// A suite of `claij-suite run`, with what one of its tests is expected to use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Suite {
    pub name: &'static str,
    /// The tests, as `claij-suite list` names them.
    pub tests: &'static [&'static str],
    /// Model calls per test when every reply is valid at once.
    pub calls: u64,
    /// Prompt tokens per call (schema, prompts, history).
    pub tokens_in: u64,
    /// Reply tokens per call.
    pub tokens_out: u64,
}

/// The suites, in the order they run (keep in step with crates/cli/src/suite.rs).
pub(super) const SUITES: [Suite; 9] = [
    // Calls per test on average: recall-next-turn makes 2, recall-after-distractions 6.
    Suite::new(
        "memory",
        &["recall-next-turn", "recall-after-distractions"],
        4,
        900,
        120,
    ),
    Suite::new("history", &["recall-next-turn"], 2, 900, 120),
    Suite::new("tools", &["report-nonce"], 2, 1_000, 100),
    Suite::new(
        "mcp",
        &["read-token-file", "mcp-calls-token-file"],
        3,
        2_000,
        200,
    ),
    Suite::new(
        "retry",
        &[
            "strict-word/native",
            "strict-word/tool",
            "strict-word/prompted",
        ],
        2,
        700,
        100,
    ),
    Suite::new("fsm", &["code-review"], 6, 1_500, 250),
    Suite::new("citations", &["cite-note"], 1, 1_200, 200),
    Suite::new("combined", &["memory-tools-citations"], 2, 1_800, 200),
    Suite::new("eval", &["compute-sum"], 2, 1_100, 120),
];

/// The built-in model aliases and what they resolve to (the claij configuration's built-in aliases,
/// which claij resolves at run time).
pub(super) const ALIASES: [(&str, &str); 9] = [
    ("gemini-flash", "openrouter:google/gemini-2.5-flash"),
    ("claude-sonnet", "openrouter:anthropic/claude-sonnet-4.5"),
    ("claude-opus", "openrouter:anthropic/claude-opus-4.5"),
    ("gpt-5", "openrouter:openai/gpt-5.1"),
    ("grok", "openrouter:x-ai/grok-4.1-fast"),
    ("llama-maverick", "openrouter:meta-llama/llama-4-maverick"),
    ("kimi", "openrouter:moonshotai/kimi-k2:free"),
    ("qwen-7b", "openrouter:qwen/qwen-2.5-7b-instruct"),
    ("local", "local"),
];

/// claij's built-in price list, the file claij-backends includes at build time: xtask reads the same
/// data (it depends on no claij crate).
const BUILTIN_PRICES: &str = include_str!("../../../crates/backends/data/prices.json");

/// The prices estimates are made from: the user's imported list (`claij models prices --import`)
/// over claij's built-in one, as claij prices its calls (a configuration's `[models]` prices are
/// claij's alone: xtask reads no configuration). US dollars per million tokens, input and output;
/// long-context tiers are not read, since no suite's prompt comes near one.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Prices {
    /// Highest precedence first.
    entries: Vec<PriceEntry>,
    /// Which lists, and their dates, for the plan's text.
    pub about: String,
}

impl Prices {
    /// The built-in list.
    pub(super) fn builtin() -> Prices {
        // A unit test reads the file: it parses.
        let (entries, date) = read_prices(BUILTIN_PRICES).unwrap_or_default();
        Prices {
            entries,
            about: format!("the built-in list of {date} (crates/backends/data/prices.json)"),
        }
    }

    /// The same prices with the list `claij models prices --import` wrote at `path` over them.
    ///
    /// # Errors
    ///
    /// The file is not a price list, naming it.
    pub(super) fn with_imported(
        mut self,
        path: &std::path::Path,
        text: &str,
    ) -> Result<Prices, String> {
        let (mut entries, date) =
            read_prices(text).map_err(|e| format!("{}: {e}", path.display()))?;
        entries.append(&mut self.entries);
        self.entries = entries;
        self.about = format!(
            "an imported list of {date} ({}) over {}",
            path.display(),
            self.about
        );
        Ok(self)
    }

    /// What `target` (`provider:model` or `local`) costs per million tokens (input, output): the
    /// model's own price, else its provider's `*:variant` or `*` entry; `None` when unknown.
    pub(super) fn of(&self, target: &str) -> Option<(f64, f64)> {
        let (provider, model) = match target.split_once(':') {
            Some(split) => split,
            None => (target, ""),
        };
        let find = |id: &str| {
            self.entries
                .iter()
                .find(|(p, m, ..)| p == provider && m == id)
                .map(|&(_, _, input, output)| (input, output))
        };
        let variant = model
            .rsplit('/')
            .next()
            .and_then(|last| last.split_once(':'));
        find(model)
            .or_else(|| variant.and_then(|(_, v)| find(&format!("*:{v}"))))
            .or_else(|| find("*"))
    }
}

/// One price: provider, model id, input and output in US dollars per million tokens.
type PriceEntry = (String, String, f64, f64);

/// The entries and the date of a price list in claij's format.
fn read_prices(text: &str) -> Result<(Vec<PriceEntry>, String), String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let date = json["date"]
        .as_str()
        .unwrap_or("an unknown date")
        .to_owned();
    let models = json["models"]
        .as_array()
        .ok_or("not a claij price list: no `models`")?;
    let mut entries = Vec::with_capacity(models.len());
    for (i, entry) in models.iter().enumerate() {
        let text = |key: &str| entry[key].as_str().map(str::to_owned);
        let number = |key: &str| entry[key].as_f64();
        match (
            text("provider"),
            text("id"),
            number("input"),
            number("output"),
        ) {
            (Some(provider), Some(id), Some(input), Some(output)) => {
                entries.push((provider, id, input, output));
            }
            _ => {
                return Err(format!(
                    "/models/{i}: expected provider, id, input and output"
                ));
            }
        }
    }
    Ok((entries, date))
}

/// Providers `provider:model` may name.
const PROVIDERS: [&str; 4] = ["openrouter", "openai", "anthropic", "gemini"];

/// Retries per call `claij-suite run` allows by default (the design's test setting): the worst case
/// unless `--max-retries` says otherwise.
pub(super) const MAX_RETRIES: u64 = 1;

/// A model as given to `--llm`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Model {
    /// What `--llm` said (an alias, `local` or `provider:model`): passed on to claij.
    pub name: String,
    /// What it resolves to.
    pub target: String,
    /// Dollars per million tokens (in, out), from [`Prices`]; `None` when unknown.
    pub price: Option<(f64, f64)>,
}

/// The run: every model against every suite.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    pub models: Vec<Model>,
    pub suites: Vec<Suite>,
    /// `--llm all` was given.
    pub all: bool,
    /// Retries per call, for the worst case.
    pub max_retries: u64,
    /// Which price lists the estimates come from.
    pub prices: String,
}

/// What a model's share of the run should use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Estimate {
    pub tests: u64,
    pub calls: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// `None` when the price is unknown.
    pub cost: Option<f64>,
}

impl Suite {
    const fn new(
        name: &'static str,
        tests: &'static [&'static str],
        calls: u64,
        tokens_in: u64,
        tokens_out: u64,
    ) -> Suite {
        Suite {
            name,
            tests,
            calls,
            tokens_in,
            tokens_out,
        }
    }

    /// The suite called `name`.
    pub(super) fn named(name: &str) -> Result<Suite, String> {
        SUITES.into_iter().find(|s| s.name == name).ok_or_else(|| {
            let names: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
            format!(
                "unknown suite `{name}`: expected one of {}",
                names.join(", ")
            )
        })
    }
}

impl Model {
    /// Resolves `--llm` text: an alias, `local`, or `provider:model`, priced from the built-in
    /// list ([`Plan::with_prices`] prices it again).
    pub(super) fn parse(text: &str) -> Result<Model, String> {
        let prices = Prices::builtin();
        if let Some(&(name, target)) = ALIASES.iter().find(|(name, _)| *name == text) {
            return Ok(Model {
                name: name.to_owned(),
                target: target.to_owned(),
                price: prices.of(target),
            });
        }
        match text.split_once(':') {
            Some((provider, model))
                if PROVIDERS.contains(&provider) && !model.trim().is_empty() =>
            {
                Ok(Model {
                    name: text.to_owned(),
                    target: text.to_owned(),
                    price: prices.of(text),
                })
            }
            _ => {
                let aliases: Vec<&str> = ALIASES.iter().map(|(name, _)| *name).collect();
                Err(format!(
                    "unknown model `{text}`: expected `all`, an alias ({}) or PROVIDER:MODEL with PROVIDER one of {}",
                    aliases.join(", "),
                    PROVIDERS.join(", ")
                ))
            }
        }
    }

    /// The embedded model: free, offline, needs no confirmation.
    pub(super) fn is_local(&self) -> bool {
        self.target == "local"
    }
}

impl Plan {
    /// The plan for `--llm` values and `--suite` values (none: every suite). `all` expands to every
    /// alias; duplicates are dropped.
    pub(super) fn new(llms: &[String], suites: &[String]) -> Result<Plan, String> {
        if llms.is_empty() {
            return Err("no model: give --llm ALIAS (or `local`, or `all`)".to_owned());
        }
        let all = llms.iter().any(|l| l == "all");
        let mut models: Vec<Model> = Vec::new();
        for text in llms {
            let expanded: Vec<Model> = if text == "all" {
                ALIASES
                    .iter()
                    .map(|(name, _)| Model::parse(name))
                    .collect::<Result<_, _>>()?
            } else {
                vec![Model::parse(text)?]
            };
            for model in expanded {
                if !models.iter().any(|m| m.name == model.name) {
                    models.push(model);
                }
            }
        }
        let mut chosen: Vec<Suite> = Vec::new();
        for name in suites {
            let suite = Suite::named(name)?;
            if !chosen.contains(&suite) {
                chosen.push(suite);
            }
        }
        if chosen.is_empty() {
            chosen = SUITES.to_vec();
        }
        Ok(Plan {
            models,
            suites: chosen,
            all,
            max_retries: MAX_RETRIES,
            prices: Prices::builtin().about,
        })
    }

    /// The same plan with every model priced from `prices`.
    #[must_use]
    pub(super) fn with_prices(mut self, prices: &Prices) -> Plan {
        for model in &mut self.models {
            model.price = prices.of(&model.target);
        }
        self.prices = prices.about.clone();
        self
    }

    /// Whether a person must agree first: some model is not the local one.
    pub(super) fn spends_money(&self) -> bool {
        self.models.iter().any(|m| !m.is_local())
    }

    /// Tests in the whole run.
    pub(super) fn tests(&self) -> u64 {
        self.models.len() as u64
            * self
                .suites
                .iter()
                .map(|s| s.tests.len() as u64)
                .sum::<u64>()
    }

    /// One model's share when every first reply is valid.
    pub(super) fn estimate(&self, model: &Model) -> Estimate {
        let (mut tests, mut calls, mut tokens_in, mut tokens_out) = (0, 0, 0, 0);
        for suite in &self.suites {
            let n = suite.tests.len() as u64;
            tests += n;
            calls += n * suite.calls;
            tokens_in += n * suite.calls * suite.tokens_in;
            tokens_out += n * suite.calls * suite.tokens_out;
        }
        let cost = model.price.map(|(price_in, price_out)| {
            (tokens_in as f64 * price_in + tokens_out as f64 * price_out) / 1e6
        });
        Estimate {
            tests,
            calls,
            tokens_in,
            tokens_out,
            cost,
        }
    }

    /// The estimated cost of the run; `None` when some paid model's price is unknown.
    pub(super) fn cost(&self) -> Option<f64> {
        self.models.iter().map(|m| self.estimate(m).cost).sum()
    }
}

/// The plan as printed before anything runs: the suites, each model's estimate, the total, and the
/// warnings.
pub(super) fn render(plan: &Plan) -> String {
    let mut out = String::new();
    let tests_per_model: usize = plan.suites.iter().map(|s| s.tests.len()).sum();
    let _ = writeln!(
        out,
        "cargo xtask integration: {} model(s) x {} suite(s) ({} test(s) per model) = {} test runs",
        plan.models.len(),
        plan.suites.len(),
        tests_per_model,
        plan.tests()
    );
    let _ = writeln!(out, "\nsuites (per model):");
    let _ = writeln!(
        out,
        "  {:<10} {:>5} {:>10} {:>16}  names",
        "suite", "tests", "calls/test", "tokens/call"
    );
    for suite in &plan.suites {
        let _ = writeln!(
            out,
            "  {:<10} {:>5} {:>10} {:>16}  {}",
            suite.name,
            suite.tests.len(),
            suite.calls,
            format!("~{}+{}", suite.tokens_in, suite.tokens_out),
            suite.tests.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "\nmodels (estimates assume every first reply is valid; prices from {}):",
        plan.prices
    );
    let width = plan
        .models
        .iter()
        .map(|m| m.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(
        out,
        "  {:<width$} {:<42} {:>5} {:>6} {:>16} {:>10}",
        "model", "resolves to", "tests", "calls", "tokens (in+out)", "est. cost"
    );
    let mut total = Estimate {
        tests: 0,
        calls: 0,
        tokens_in: 0,
        tokens_out: 0,
        cost: Some(0.0),
    };
    for model in &plan.models {
        let e = plan.estimate(model);
        let _ = writeln!(
            out,
            "  {:<width$} {:<42} {:>5} {:>6} {:>16} {:>10}",
            model.name,
            model.target,
            e.tests,
            e.calls,
            format!("{}+{}", e.tokens_in, e.tokens_out),
            money(e.cost)
        );
        total.tests += e.tests;
        total.calls += e.calls;
        total.tokens_in += e.tokens_in;
        total.tokens_out += e.tokens_out;
        total.cost = total.cost.zip(e.cost).map(|(a, b)| a + b);
    }
    let retries = plan.max_retries;
    let worst = total.cost.map(|c| c * (1 + retries) as f64);
    let _ = writeln!(
        out,
        "\ntotal: {} tests, ~{} calls, ~{}+{} tokens, estimated cost {} (worst case, every call retried {retries} time(s): {})",
        total.tests,
        total.calls,
        total.tokens_in,
        total.tokens_out,
        money(total.cost),
        money(worst)
    );
    if plan.all {
        let _ = writeln!(
            out,
            "\nWARNING: --llm all runs the whole matrix: every suite against all {} models",
            plan.models.len()
        );
    }
    if plan.spends_money() {
        let _ = writeln!(
            out,
            "\nWARNING: this calls hosted models with your API keys and spends money (estimated {}).",
            money(total.cost)
        );
    } else {
        let _ = writeln!(
            out,
            "\nlocal model only: no network, no cost, no confirmation needed."
        );
    }
    out
}

/// `$0.0123`, `$0` for free, `unknown` when the price is not known.
pub(super) fn money(cost: Option<f64>) -> String {
    match cost {
        None => "unknown".to_owned(),
        Some(0.0) => "$0".to_owned(),
        Some(c) if c < 0.01 => format!("${c:.4}"),
        Some(c) => format!("${c:.2}"),
    }
}
