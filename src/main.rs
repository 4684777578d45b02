//! The `a2ad` command line.

use a2ad::config::Config;
use a2ad::startup::Application;
use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// mimalloc returns freed memory to the OS more readily than glibc's malloc and keeps
/// fragmentation down on a long-running server with many small allocations.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "a2ad", version, about = "An A2A 1.0 task orchestration server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a node.
    Serve(ServeArgs),
    /// Push notifications: the dead letters.
    Push {
        #[command(subcommand)]
        command: PushCommand,
    },
}

#[derive(Subcommand)]
enum PushCommand {
    /// Jobs that will not be delivered again unless retried.
    Dead {
        #[command(subcommand)]
        command: DeadCommand,
    },
}

#[derive(Subcommand)]
enum DeadCommand {
    /// List dead jobs (id, attempts, time, reason). With the local-file queue, stop the
    /// node first.
    List(StoreArgs),
    /// Move dead jobs back to the queue; the node delivers them (at its next start, with
    /// the local-file queue).
    Retry {
        /// A job id from `list`.
        id: Option<String>,
        /// Every dead job.
        #[arg(long, conflicts_with = "id")]
        all: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Which node's stores: its config file and/or data dir.
#[derive(Args)]
struct StoreArgs {
    #[arg(long, short)]
    config: Option<PathBuf>,
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

impl StoreArgs {
    fn load(&self) -> anyhow::Result<Config> {
        let mut overrides = Config::env_overrides(std::env::vars());
        if let Some(dir) = &self.data_dir {
            overrides.push(("data-dir".into(), dir.display().to_string()));
        }
        Config::load(self.config.as_deref(), &overrides).context("invalid configuration")
    }
}

/// Flags override `A2AD_*` variables, which override the config file.
#[derive(Args)]
struct ServeArgs {
    /// YAML config file (kebab-case keys).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Listen address, e.g. 127.0.0.1:8080 (port 0 picks a free port).
    #[arg(long)]
    listen: Option<String>,
    /// Base URL clients use, as written in the agent card.
    #[arg(long)]
    public_url: Option<String>,
    /// Directory of the task store.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Evict a context actor after this long without a turn, e.g. 5m.
    #[arg(long)]
    idle_timeout: Option<String>,
    /// Largest request body, e.g. 1MiB.
    #[arg(long)]
    body_limit: Option<String>,
    /// HTTP workers and context threads (0: one per CPU).
    #[arg(long)]
    workers: Option<String>,
    /// gRPC listen address, e.g. 127.0.0.1:8081 (port 0 picks a free port).
    #[arg(long)]
    grpc_listen: Option<String>,
}

impl ServeArgs {
    fn overrides(&self) -> Vec<(String, String)> {
        let mut pairs = Config::env_overrides(std::env::vars());
        let flags = [
            ("listen", self.listen.clone()),
            ("public-url", self.public_url.clone()),
            ("data-dir", self.data_dir.as_ref().map(|p| p.display().to_string())),
            ("idle-timeout", self.idle_timeout.clone()),
            ("body-limit", self.body_limit.clone()),
            ("workers", self.workers.clone()),
            ("grpc-listen", self.grpc_listen.clone()),
        ];
        pairs.extend(flags.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v))));
        pairs
    }
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(args).await,
        Command::Push { command: PushCommand::Dead { command } } => dead_letters(command),
    }
}

fn dead_letters(command: DeadCommand) -> anyhow::Result<()> {
    let now = chrono::Utc::now().timestamp_millis();
    match command {
        DeadCommand::List(store) => {
            let queue = a2ad::admin::push_queue(&store.load()?)?;
            print!("{}", a2ad::admin::format_dead(&queue.dead()?));
        }
        DeadCommand::Retry { id, all, store } => {
            anyhow::ensure!(id.is_some() || all, "name a job id, or --all");
            let queue = a2ad::admin::push_queue(&store.load()?)?;
            let revived = queue.revive(id.as_deref(), now)?;
            if let Some(id) = id.filter(|_| revived == 0) {
                anyhow::bail!("no dead job {id}");
            }
            println!("{revived} job(s) queued again");
        }
    }
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = Config::load(args.config.as_deref(), &args.overrides()).context("invalid configuration")?;
    let data_dir = config.data_dir.display().to_string();
    let app = Application::build(config).await?;
    if app.recovered_tasks() > 0 {
        tracing::warn!(tasks = app.recovered_tasks(), "marked tasks that were running at the last stop as failed");
    }
    // Scripts and tests read this line to find the port.
    let grpc = app.grpc_addr().map(|a| format!(", gRPC on {a}")).unwrap_or_default();
    println!("a2ad listening on {} (data dir {data_dir}{grpc})", app.public_url());
    app.run_until_stopped().await?;
    Ok(())
}
