//! `claij memory list|search|forget`: the recall memory's store (`[memory.recall]`) as a person
//! looks after it ([`claij::recall::Memories`]).

use std::io::Write as _;

use anyhow::{Context as _, Result};
use claij::interceptors::builtin::recall::Forget;
use claij::recall::{Memories, Shown};
use claij::settings::memory::MAX_RECALL_K;

use crate::exit::Status;

/// `claij memory ...`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// The memories, oldest first: id, session, age, text.
    List {
        /// Only this session's (a conversation's `interceptors.recall.state.session_id`).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print them as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// The memories most similar to TEXT, most similar first, with their similarity and age.
    Search {
        /// What to look for.
        #[arg(value_parser = crate::args::question)]
        text: String,
        /// How many (default `[memory.recall] k`, else 5).
        #[arg(long, value_name = "N", value_parser = |t: &str| crate::args::whole(t, 1, MAX_RECALL_K))]
        k: Option<usize>,
        /// Only this session's.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print them as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Remove memories by id, or a whole session's; says how many were removed.
    Forget {
        /// A memory's id (repeatable).
        #[arg(long = "id", value_name = "ID", conflicts_with = "session")]
        ids: Vec<String>,
        /// Every memory of this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

/// Runs a `memory` command on the configuration's store.
pub(crate) fn run(command: &Command, front: &crate::front::Front) -> Result<Status> {
    if let Command::Forget { ids, session: None } = command
        && ids.is_empty()
    {
        anyhow::bail!("claij memory forget: give --id ID or --session ID");
    }
    let settings = front.settings()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let memories = runtime.block_on(Memories::open(settings))?;
    let (rows, json) = match command {
        Command::List { session, json } => {
            (runtime.block_on(memories.list(session.as_deref()))?, *json)
        }
        Command::Search {
            text,
            k,
            session,
            json,
        } => {
            let k = k.unwrap_or(settings.memory.recall.k);
            (
                runtime.block_on(memories.search(text, k, session.as_deref()))?,
                *json,
            )
        }
        Command::Forget { ids, session } => {
            let which = match session {
                Some(session) => Forget::Session(session.clone()),
                None => Forget::Ids(ids.clone()),
            };
            let removed = runtime.block_on(memories.forget(which))?;
            let s = if removed == 1 { "memory" } else { "memories" };
            writeln!(std::io::stdout(), "forgot {removed} {s}")?;
            return Ok(Status::Ok);
        }
    };
    print(&rows, json)
}

fn print(rows: &[Shown], json: bool) -> Result<Status> {
    let now = std::time::SystemTime::now();
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{:#}", claij::recall::to_json(rows, now))?;
    } else {
        writeln!(out, "{}", claij::recall::lines(rows, now))?;
    }
    Ok(Status::Ok)
}
