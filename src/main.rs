//! The `a2ad` command line.

use a2ad::config::{Config, LogFormat, Override};
use a2ad::startup::Application;
use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// mimalloc returns freed memory to the OS more readily than glibc's malloc and keeps
/// fragmentation down on a long-running server with many small allocations. Transparent
/// huge pages are turned off for the process ([`no_transparent_huge_pages`]).
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
    /// Run a node on stdin and stdout: newline-delimited JSON-RPC, no listeners (same
    /// config, store and agents as `serve`). Logs go to stderr; end of stdin stops it.
    Stdio(StoreArgs),
    /// Push notifications: the dead letters.
    Push {
        #[command(subcommand)]
        command: PushCommand,
    },
    /// Agent cards: fetch one, verify its signatures.
    Card {
        #[command(subcommand)]
        command: CardCommand,
    },
    /// Send a message to an agent and stream its answer: agent text on stdout, state and
    /// tool progress on stderr. Exit codes: 0 completed, 1 failed, 2 usage error,
    /// 3 input-required, 4 auth-required, 5 rejected, 6 canceled (Ctrl-C cancels the task),
    /// 7 transport error, 8 refused by the node.
    Call(a2ad::client::CallArgs),
    /// Tasks on a node: list, get, cancel, watch (exit codes as for `call`).
    Tasks {
        #[command(subcommand)]
        command: a2ad::client::TasksCommand,
    },
    /// The node's store: stats and compaction. Stop the node first (`stats` also asks a
    /// running node with --url).
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Config files: check one before a (re)start.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Credentials: make the hashes the `auth:` block takes.
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Read FILE as `serve` would (with the `A2AD_*` variables), run start-up's checks
    /// (credentials, agent programs and their cwd, card keys) and print the verdict;
    /// with `--print`, then the effective values, secrets masked. Binds nothing, opens no
    /// data dir. Exits 0 when valid, 1 with one line naming the key, variable or flag at
    /// fault otherwise.
    Check {
        /// The YAML config file.
        file: PathBuf,
        /// After the verdict, print the effective config as YAML on stdout.
        #[arg(long)]
        print: bool,
    },
}

#[derive(Subcommand)]
enum AuthCommand {
    /// Read a bearer token from stdin (or a prompt on a terminal) and print the
    /// `auth.bearer-tokens` entry with its SHA-256: the token itself is never written.
    HashToken {
        #[arg(long, default_value = "default")]
        tenant: String,
        #[arg(long)]
        principal: String,
    },
    /// Read a password from stdin (or a prompt, twice, on a terminal) and print the
    /// `auth.basic-users` entry with its PBKDF2 hash (random salt).
    HashPassword {
        /// The Basic user name.
        #[arg(long)]
        user: String,
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Defaults to the user name.
        #[arg(long)]
        principal: Option<String>,
        /// PBKDF2 rounds (the node checks each password once a minute per user at most).
        #[arg(long, default_value_t = a2ad::auth::DEFAULT_PBKDF2_ITERATIONS)]
        iterations: u32,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Store size on disk, tasks by tenant and state, events, sessions, artifact files.
    Stats {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        remote: RemoteArgs,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reclaim the space of removed tasks: copies the live data into a fresh store in the
    /// data dir and swaps it in (crash-safe). Prints the sizes before and after.
    Compact(StoreArgs),
    /// Cut the write-ahead log at its first damaged record, when start-up refuses a
    /// corrupt log: the records from that point on are lost (prints where it cut).
    Repair(StoreArgs),
    /// Copy a stopped node's tasks, events, sessions and push configs from its data dir
    /// into the shared store at `redis.url` (then run the node with `store: redis`). Safe
    /// to run again; prints what it moved.
    MoveToRedis(StoreArgs),
}

#[derive(Subcommand)]
enum CardCommand {
    /// Fetch a card and verify its HS256 signatures. Keys are found by kid among the
    /// `card.signing-keys` of the config (--config and `A2AD_*`), the JWKS files and the JWKS
    /// URLs given here; a `jku` in the card is never followed. Prints `verified: kid <kid>`
    /// and exits 0, or prints why not and exits 1 (2 on a usage error, 7 when the card or a
    /// JWKS URL cannot be fetched, as for `call`).
    Verify(VerifyArgs),
    /// Fetch a card and print it (pretty JSON); exits 7 when it cannot be fetched.
    Show {
        /// The node's base URL, or the card's full URL.
        url: String,
    },
}

#[derive(Args)]
struct VerifyArgs {
    /// The node's base URL (the well-known path is added), or the card's full URL.
    url: String,
    /// A config file whose `card.signing-keys` are trusted.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// A JWKS file whose `oct` keys are trusted (repeatable).
    #[arg(long)]
    jwks: Vec<PathBuf>,
    /// A JWKS URL whose `oct` keys are trusted (repeatable).
    #[arg(long)]
    jwks_url: Vec<String>,
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
    /// node first, or ask it with --url.
    List {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        remote: RemoteArgs,
    },
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
        #[command(flatten)]
        remote: RemoteArgs,
    },
}

/// A running node to ask instead (its admin API): the online form of a command.
#[derive(Args)]
struct RemoteArgs {
    /// The running node's base URL (or its `admin.listen` address); without it, the
    /// command reads a stopped node's data dir.
    #[arg(long)]
    url: Option<String>,
    /// An operator token (`admin.tokens`); retry needs the operator role.
    #[arg(long, env = a2ad::admin::remote::TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
}

impl RemoteArgs {
    /// The admin API client, when `--url` is given.
    fn client(&self) -> anyhow::Result<Option<a2ad::admin::remote::AdminClient>> {
        let Some(url) = &self.url else { return Ok(None) };
        let token = self.token.as_deref().context("--url needs an operator token: --token or A2AD_OPERATOR_TOKEN")?;
        Ok(Some(a2ad::admin::remote::AdminClient::new(url, token)))
    }
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
            overrides.push(Override::flag("data-dir", dir.display().to_string()));
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
    fn overrides(&self) -> Vec<Override> {
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
        pairs.extend(flags.into_iter().filter_map(|(k, v)| v.map(|v| Override::flag(k, v))));
        pairs
    }
}

#[actix_web::main]
async fn main() -> std::process::ExitCode {
    no_transparent_huge_pages();
    let command = Cli::parse().command;
    if !matches!(command, Command::Serve(_) | Command::Stdio(_)) {
        quiet_operator_command();
    }
    match run(command).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line with the causes (`{:#}`), never anyhow's Debug form with a backtrace.
            eprintln!("a2ad: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Turns transparent huge pages off for this process (and the agent programs it starts).
///
/// Why: mimalloc asks for huge pages on its arenas, and on a kernel whose THP mode is
/// `madvise` (Debian's) the first touch of each 2 MiB page then zeroes all of it at
/// once. While a node's memory grows (a `store: memory` node keeps every task) that was a
/// stall of ~7 ms every ~30 ms on the one thread that touched it: p99 16× p50 at 8
/// connections, 0.81 ms instead of 6.5 ms without (BENCHMARKS.md, issue 35). Small pages
/// spread the same zeroing over the requests that need the memory.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) with integer arguments only; it changes no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// For the commands an operator pipes (`tasks list | head`): a closed stdout ends the
/// process quietly as SIGPIPE does for other Unix tools, and a panic is one line on
/// stderr, without a backtrace. The node (`serve`, `stdio`) keeps Rust's defaults.
fn quiet_operator_command() {
    // SAFETY: restoring the default disposition of SIGPIPE before any thread writes.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".to_owned());
        eprintln!("a2ad: internal error: {what}");
    }));
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => serve(args).await,
        Command::Stdio(args) => {
            let config = args.load()?;
            init_logs(config.log_format, &config.log_level);
            a2ad::startup::run_stdio(config).await.map_err(one_line)?;
            Ok(())
        }
        Command::Push { command: PushCommand::Dead { command } } => {
            init_logs(LogFormat::Pretty, "info");
            dead_letters(command).await
        }
        Command::Card { command } => {
            init_logs(LogFormat::Pretty, "info");
            exit_with(match command {
                CardCommand::Show { url } => a2ad::client::card::show(&url).await,
                CardCommand::Verify(args) => {
                    let VerifyArgs { url, config, jwks, jwks_url } = args;
                    a2ad::client::card::verify(&url, &a2ad::client::card::TrustedKeys { config, jwks, jwks_url }).await
                }
            })
        }
        Command::Admin { command } => {
            init_logs(LogFormat::Pretty, "warn");
            admin(command).await
        }
        Command::Config { command: ConfigCommand::Check { file, print } } => {
            // The verdict first: the effective config runs to some 190 lines.
            let effective = a2ad::setup::config_check::check(&file)?;
            eprintln!("a2ad: {} is valid (not checked: ports, the data dir, Redis)", file.display());
            if print {
                print!("{effective}");
            }
            Ok(())
        }
        Command::Auth { command } => {
            print!("{}", credentials(command)?);
            Ok(())
        }
        Command::Call(args) => exit_with(a2ad::client::call::run(args).await),
        Command::Tasks { command } => exit_with(a2ad::client::tasks::run(command).await),
    }
}

/// A start-up error's message holds its cause: printed alone it is one line (`{:#}` would
/// add the chain of causes the message already names).
fn one_line(e: a2ad::startup::StartupError) -> anyhow::Error {
    anyhow::Error::msg(e.to_string())
}

/// Ends a client command with its exit code; an error is one line on stderr.
fn exit_with(result: Result<i32, a2ad::client::ClientError>) -> ! {
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("a2ad: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code)
}

/// Logs go to stderr, as text or JSON lines; `RUST_LOG` wins over the configured level.
fn init_logs(format: LogFormat, level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| "info".into());
    // Colours only on a terminal: a journal or a log file gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match format {
        LogFormat::Pretty => logs.init(),
        LogFormat::Json => logs.json().with_current_span(true).with_span_list(false).init(),
    }
}

fn credentials(command: AuthCommand) -> Result<String, a2ad::setup::SetupError> {
    use a2ad::setup::credentials::{password_entry, token_entry};
    match command {
        AuthCommand::HashToken { tenant, principal } => token_entry(&tenant, &principal),
        AuthCommand::HashPassword { user, tenant, principal, iterations } => {
            password_entry(&user, &tenant, principal.as_deref().unwrap_or(&user), iterations)
        }
    }
}

async fn admin(command: AdminCommand) -> anyhow::Result<()> {
    use a2ad::admin::stats::human_bytes;
    // Compaction writes a new store in the data dir: private, as the node's own files.
    a2ad::private_files::make_files_private();
    match command {
        AdminCommand::Stats { store, remote, json } => {
            let stats = match remote.client()? {
                Some(client) => client.stats().await?,
                None => a2ad::admin::stats::collect(&store.load()?)?,
            };
            match json {
                true => println!("{}", serde_json::to_string_pretty(&stats)?),
                false => print!("{}", stats.to_text()),
            }
        }
        AdminCommand::Compact(store) => {
            let report = a2ad::admin::compact::run(&store.load()?)?;
            println!("compacted: {} -> {}", human_bytes(report.before), human_bytes(report.after));
        }
        AdminCommand::Repair(store) => print!("{}", a2ad::admin::repair(&store.load()?)?),
        AdminCommand::MoveToRedis(store) => print!("{}", a2ad::admin::move_to_redis::run(&store.load()?)?.to_text()),
    }
    Ok(())
}

async fn dead_letters(command: DeadCommand) -> anyhow::Result<()> {
    a2ad::private_files::make_files_private();
    let now = chrono::Utc::now().timestamp_millis();
    match command {
        DeadCommand::List { store, remote } => {
            let dead = match remote.client()? {
                Some(client) => client.dead().await?,
                None => a2ad::admin::dead_letters(a2ad::admin::push_queue(&store.load()?)?.as_ref())?,
            };
            print!("{}", a2ad::admin::format_dead(&dead));
        }
        DeadCommand::Retry { id, all, store, remote } => {
            anyhow::ensure!(id.is_some() || all, "name a job id, or --all");
            if let Some(client) = remote.client()? {
                println!("{} job(s) queued again", client.retry(id.as_deref()).await?);
                return Ok(());
            }
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
    init_logs(config.log_format, &config.log_level);
    let data_dir = config.data_dir.display().to_string();
    let app = Application::build(config).await.map_err(one_line)?;
    if app.recovered_tasks() > 0 {
        tracing::warn!(tasks = app.recovered_tasks(), "marked tasks that were running at the last stop as failed");
    }
    // Scripts and tests read this line to find the port.
    let grpc = app.grpc_addr().map(|a| format!(", gRPC on {a}")).unwrap_or_default();
    println!("a2ad listening on {} (data dir {data_dir}{grpc})", app.public_url());
    app.run_until_stopped().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flag is a config key by name (`--public-url` sets `public-url`), applied as the
    /// `A2AD_*` variables are: each must name a key the config has.
    #[test]
    fn every_serve_flag_is_a_config_key() {
        let command = <ServeArgs as Args>::augment_args(clap::Command::new("serve"));
        let flags: Vec<&str> =
            command.get_arguments().filter_map(|a| a.get_long()).filter(|l| *l != "config").collect();
        assert!(flags.len() >= 7, "{flags:?}");
        for flag in flags {
            assert!(Config::keys().iter().any(|k| k == flag), "--{flag} is not a config key");
        }
        let args = ServeArgs::with_every_flag_set();
        for flag in args.overrides().iter().filter(|o| o.value == "flag") {
            assert!(Config::keys().contains(&flag.key), "{}", flag.key);
        }
    }

    impl ServeArgs {
        fn with_every_flag_set() -> Self {
            let flag = || Some("flag".to_owned());
            ServeArgs {
                config: None,
                listen: flag(),
                public_url: flag(),
                data_dir: Some("flag".into()),
                idle_timeout: flag(),
                body_limit: flag(),
                workers: flag(),
                grpc_listen: flag(),
            }
        }
    }
}
