//! [`Wiring`]: a [`Machine`] made ready to run: checked against the settings, its services
//! started once for the whole tree of machines, its models opened once each, its sub-FSMs and
//! meta-debugging attached, the run's limits set.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use claij_fsm::journal::SubDefinition;
use claij_fsm::{Definition, Entry, ExistingJournal, Fsm, Journal, Problem, Run, Runner};
use claij_schema::Registry;
use serde_json::Value;

use super::meta_debug::MetaDebug;
use super::{Error, Machine, models, subfsm};
use crate::Claij;
use crate::options::ModelOptions;
use crate::settings::Settings;

#[cfg(feature = "mcp")]
use super::services;
#[cfg(feature = "mcp")]
use super::services::Connected;

type Result<T, E = Error> = std::result::Result<T, E>;

/// What is told every transition.
type Observer = Arc<dyn Fn(&Entry) + Send + Sync>;

/// How a run is made: its model, its project, meta-debugging and its limits. `Default` is the
/// settings' default model, no project, no meta-debugging, and the state machine's default limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The model of `llm` states that name none, and how every model is called.
    pub model: ModelOptions,
    /// MCP services: only the servers and tools this project of the configuration allows.
    pub project: Option<String>,
    /// Meta-debugging of every `llm` state that runs out of retries, by these models (empty: the
    /// models [`Options::measured`] lists as passing every test); `None`: only states whose
    /// `config.meta_debug` is `true` are.
    pub meta_debug: Option<Vec<String>>,
    /// The compatibility matrix meta-debugging takes its models from when none are listed
    /// (`None`: the user's, in the settings' data directory).
    pub measured: Option<PathBuf>,
    /// Transitions a run makes without reaching an end before it stops.
    pub max_transitions: usize,
    /// Repeats of an earlier service call (same state, request and result since the last input)
    /// beyond which a run stops (`usize::MAX`: never, nor is the model told).
    pub max_repeated_calls: usize,
    /// What MCP service states' servers are offered (the flags; over the configuration's
    /// `samplingLlm` and `elicitation`, as `claij mcp`'s).
    #[cfg(feature = "mcp")]
    pub offer: crate::mcp::offer::Offer,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            model: ModelOptions::default(),
            project: None,
            meta_debug: None,
            measured: None,
            max_transitions: claij_fsm::DEFAULT_MAX_TRANSITIONS,
            max_repeated_calls: claij_fsm::DEFAULT_MAX_REPEATED_CALLS,
            #[cfg(feature = "mcp")]
            offer: crate::mcp::offer::Offer::default(),
        }
    }
}

/// What a run's proposals (schema extensions its models propose, approved on the way) give every
/// machine of it: the one registry the vote activates into, and what each runner gets
/// (interceptors, a journal hook, a remedy approver).
#[derive(Clone)]
pub struct Proposals {
    /// The run's registry of schema extensions.
    pub registry: Arc<Mutex<Registry>>,
    /// Applied to the runner of each machine of the tree.
    pub decorate: Arc<dyn Fn(Runner) -> Runner + Send + Sync>,
}

impl From<crate::approve::RunProposals> for Proposals {
    /// A run's proposals ([`crate::approve::RunProposals`]) on every machine: its chain of
    /// interceptors, its journal hook, its remedy approver.
    fn from(run: crate::approve::RunProposals) -> Self {
        let run = Arc::new(run);
        Proposals {
            registry: Arc::clone(run.registry()),
            decorate: Arc::new(move |runner: Runner| {
                let runner = runner
                    .with_interceptors(run.chain())
                    .with_journal_hook(run.journal_hook());
                match run.remedy_approver() {
                    Some(approver) => runner.with_remedy_approver(approver),
                    None => runner,
                }
            }),
        }
    }
}

/// How machines are made ready to run with a configuration: `wire` a [`Machine`], run the
/// [`Wired`] runner, then close its services.
#[derive(Clone)]
pub struct Wiring {
    claij: Arc<Claij>,
    options: Options,
    observer: Option<Observer>,
    notice: Arc<dyn Fn(&str) + Send + Sync>,
    #[cfg(feature = "mcp")]
    tools: Option<claij_interceptors::builtin::tools::Tools>,
}

/// A machine wired: its runner, and the services started for it (close them when the run ends).
pub struct Wired {
    /// The machine's runner, its sub-FSMs' attached.
    pub runner: Runner,
    /// The services started for the run.
    pub services: Services,
}

impl Wired {
    /// Starts a run from `input`, recorded to a new journal at `journal` when given (its
    /// [`ExistingJournal`] says what becomes of a file that already holds a run).
    ///
    /// # Errors
    ///
    /// The runner's: no transition from `start` takes `input`,
    /// [`claij_fsm::Error::JournalExists`], a journal that cannot be written or locked.
    pub fn start(
        &self,
        input: Value,
        journal: Option<(&Path, ExistingJournal)>,
    ) -> Result<(Run, Option<Journal>), claij_fsm::Error> {
        match journal {
            Some((path, existing)) => {
                let (run, journal) = self.runner.start_journaled(input, path, existing)?;
                Ok((run, Some(journal)))
            }
            None => Ok((self.runner.start(input)?, None)),
        }
    }

    /// Closes the services started for the run.
    pub async fn close(&self) {
        self.services.close().await;
    }
}

/// The services started for a run (MCP servers: processes, connections), shared by every machine
/// of its tree.
#[derive(Default)]
pub struct Services {
    #[cfg(feature = "mcp")]
    connected: Connected,
}

impl Services {
    /// Closes them (the MCP servers' processes end).
    pub async fn close(&self) {
        #[cfg(feature = "mcp")]
        self.connected.close().await;
    }
}

impl Wiring {
    /// Machines wired with `claij` (its settings' models, MCP servers and projects, its keys)
    /// and `options`. What would be said to a user (the model chosen, the compatibility
    /// matrix's choice) goes to `tracing` until [`Wiring::on_notice`] says otherwise.
    #[must_use]
    pub fn new(claij: impl Into<Arc<Claij>>, options: Options) -> Self {
        Wiring {
            claij: claij.into(),
            options,
            observer: None,
            notice: Arc::new(|text: &str| tracing::info!("{text}")),
            #[cfg(feature = "mcp")]
            tools: None,
        }
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &Settings {
        self.claij.settings()
    }

    /// The options.
    #[must_use]
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Every transition of every machine of the tree, as it is recorded.
    #[must_use]
    pub fn with_observer(mut self, observer: impl Fn(&Entry) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// Where the lines for a user go (one a call): the model chosen when the options did not
    /// name one, the compatibility matrix's warnings and choice.
    #[must_use]
    pub fn on_notice(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notice = Arc::new(notice);
        self
    }

    /// The Rust tools the `tools` service offers (feature `mcp`); without them a machine naming
    /// `tools` cannot run.
    #[cfg(feature = "mcp")]
    #[must_use]
    pub fn with_tools(mut self, tools: claij_interceptors::builtin::tools::Tools) -> Self {
        self.tools = Some(tools);
        self
    }

    /// [`Wiring::with_tools`] with claij's built-in tools ([`crate::tools::builtin`]: `now`,
    /// `random_int`), as `claij fsm run` offers them.
    ///
    /// # Errors
    ///
    /// A built-in tool that cannot be registered.
    #[cfg(feature = "mcp")]
    pub fn with_builtin_tools(
        self,
    ) -> Result<Self, claij_interceptors::builtin::tools::RegisterError> {
        Ok(self.with_tools(crate::tools::builtin()?))
    }

    /// The model `llm` names (`None`: the options', else the settings' default), opened as a
    /// run's `llm` states get it ([`models::open`]).
    ///
    /// # Errors
    ///
    /// [`Error::Model`].
    pub fn model(&self, llm: Option<&str>) -> Result<models::Opened> {
        let llm = llm.or(self.options.model.llm.as_deref());
        models::open(llm, &self.options.model, &self.claij, &*self.notice)
    }

    /// What stops `machine` from running here, each at its pointer (a sub-FSM's at the state
    /// naming it): a service the configuration does not offer or the project does not allow, a
    /// model that does not resolve, a `custom` state (a program provides its action).
    ///
    /// # Errors
    ///
    /// [`Error::Config`]: the project is not in the configuration.
    pub fn check(&self, machine: &Machine) -> Result<Vec<Problem>> {
        self.check_definition(machine.fsm.definition(), &machine.subs)
    }

    #[cfg(feature = "mcp")]
    fn check_definition(
        &self,
        definition: &Definition,
        subs: &[SubDefinition],
    ) -> Result<Vec<Problem>> {
        services::check(
            definition,
            subs,
            self.claij.settings(),
            self.options.project.as_deref(),
            self.tools.is_some(),
        )
    }

    #[cfg(not(feature = "mcp"))]
    fn check_definition(
        &self,
        definition: &Definition,
        subs: &[SubDefinition],
    ) -> Result<Vec<Problem>> {
        let mut problems = Vec::new();
        let mut pending: Vec<(&Definition, &[SubDefinition])> = vec![(definition, subs)];
        while let Some((definition, subs)) = pending.pop() {
            for (i, state) in definition.states.iter().enumerate() {
                if state.action == claij_fsm::Action::Service {
                    problems.push(Problem {
                        pointer: format!("/states/{i}"),
                        message: format!(
                            "service state `{}`: services need claij's `mcp` feature",
                            state.id
                        ),
                    });
                }
            }
            pending.extend(subs.iter().map(|s| (&s.definition, s.sub_fsms.as_slice())));
        }
        Ok(problems)
    }

    /// `machine` ready to run: checked ([`Wiring::check`]; any problem is
    /// [`Error::CannotRun`] and nothing starts), the services every machine of the tree names
    /// started once (on the caller's runtime: they live on it), each model opened once, the
    /// sub-FSMs and meta-debugging attached.
    ///
    /// # Errors
    ///
    /// [`Error::CannotRun`], [`Error::Config`], [`Error::Model`], [`Error::Mcp`] (a server that
    /// does not start, with `claij`'s variables for its secrets and the tokens stored in the
    /// settings' data directory).
    pub async fn wire(&self, machine: &Machine) -> Result<Wired> {
        self.wire_proposing(machine, None).await
    }

    /// [`Wiring::wire`], with the run's `proposals` on every machine of the tree.
    ///
    /// # Errors
    ///
    /// As [`Wiring::wire`].
    pub async fn wire_proposing(
        &self,
        machine: &Machine,
        proposals: Option<&Proposals>,
    ) -> Result<Wired> {
        let fsm = &machine.fsm;
        let subs = &machine.subs;
        let problems = self.check(machine)?;
        if !problems.is_empty() {
            return Err(Error::CannotRun {
                fsm: fsm.definition().id.clone(),
                problems,
            });
        }
        #[cfg(feature = "mcp")]
        let connected = {
            let mut definitions = vec![fsm.definition()];
            let mut pending: Vec<&SubDefinition> = subs.iter().collect();
            while let Some(sub) = pending.pop() {
                definitions.push(&sub.definition);
                pending.extend(&sub.sub_fsms);
            }
            services::connect(
                &definitions,
                &self.claij,
                self.options.project.as_deref(),
                self.tools.as_ref(),
                &self.options.offer,
            )
            .await?
        };
        let mut models = models::Models::new(&self.options.model, &self.claij, &*self.notice);
        let user_matrix = || crate::matrix::default_path(self.settings().data_dir.as_deref());
        let measured = self.options.measured.clone().or_else(user_matrix);
        let meta_debug = MetaDebug {
            listed: self.options.meta_debug.as_deref(),
            matrix: measured.as_deref(),
        };
        let built = subfsm::build(
            Fsm::new(fsm.definition().clone())?,
            subs,
            &meta_debug,
            &self.options.model,
            &self.claij,
            proposals.map(|p| Arc::clone(&p.registry)),
            &mut |fsm| {
                #[cfg(feature = "mcp")]
                let mut runner = self.runner(fsm, &connected, &mut models)?;
                #[cfg(not(feature = "mcp"))]
                let mut runner = self.runner(fsm, &mut models)?;
                if let Some(proposals) = proposals {
                    runner = (proposals.decorate)(runner);
                }
                Ok(runner)
            },
        );
        match built {
            Ok(runner) => Ok(Wired {
                runner,
                services: Services {
                    #[cfg(feature = "mcp")]
                    connected,
                },
            }),
            Err(e) => {
                #[cfg(feature = "mcp")]
                connected.close().await;
                Err(e)
            }
        }
    }

    /// The runner of `fsm`: the run's services (`connected`; its MCP calls narrowed to their
    /// tools), the run's model and each state's own (`models`), its limits and observer.
    fn runner(
        &self,
        fsm: Fsm,
        #[cfg(feature = "mcp")] connected: &Connected,
        models: &mut models::Models<'_>,
    ) -> Result<Runner> {
        #[cfg(feature = "mcp")]
        let fsm = {
            let mut definition = fsm.definition().clone();
            connected.narrow(&mut definition);
            // Narrowed MCP calls change the definition (and what the journal records).
            if &definition == fsm.definition() {
                fsm
            } else {
                Fsm::new(definition)?
            }
        };
        let definition = fsm.definition().clone();
        let mut runner = Runner::new(fsm)
            .with_max_transitions(self.options.max_transitions)
            .with_max_repeated_calls(self.options.max_repeated_calls);
        if let Some(observer) = &self.observer {
            let observer = Arc::clone(observer);
            runner = runner.with_observer(move |entry| observer(entry));
        }
        #[cfg(feature = "mcp")]
        let runner = connected.register(runner);
        models.wire(runner, &definition)
    }
}
