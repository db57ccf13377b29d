//! The tested examples: the shell examples of the README's quick start and
//! of the book's step-by-step pages, run against a real server, with the
//! output they show checked.
//!
//! One test per page ([`PAGES`]): a fresh `strongroom serve` (the built
//! binary, on `127.0.0.1:0`, its data in `strongroom-data` of a temporary
//! directory, as `serve` with no options makes it), one bash in that
//! directory with the binary first on its `PATH`, and the page's
//! ```` ```console ```` blocks fed to it command by command (the
//! conventions: [`markdown`], and CONTRIBUTING.md). The pages show the
//! server at `https://localhost:8443`: commands go to the test server's
//! port instead, and its port in the output reads as 8443 again. A command
//! that fails, or whose output is not what the page shows, fails the test
//! with the page, the line and a diff. On those pages a ```` ```sh ````
//! block that is not run must say why (`<!-- untested: … -->`); each test
//! prints its page's count of blocks and commands run and its untested
//! blocks with their reasons. [`every_page_with_console_blocks_is_tested`]
//! reads every page of the book and the README: their markers must parse,
//! and a console block on a page not in [`PAGES`] fails it.
//!
//! `STRONGROOM_DOCS_TRANSCRIPT=1` prints every command with its output (as
//! it compares it) on stderr, for whoever writes a page.
//!
//! Needs bash, curl, jq, openssl and coreutils' basenc (the pages use them);
//! skips loudly without them, and fails instead under
//! `STRONGROOM_REQUIRE_ALL_TESTS=1`.
#![allow(clippy::disallowed_methods)] // waits on real processes

mod markdown;
mod shell;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use markdown::Item;
use shell::Shell;

use crate::process::{BIN, Server, approve};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The server's address as the pages show it.
const SHOWN: &str = "localhost:8443";

/// How long one command may run.
const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// What the pages' commands use besides `strongroom`.
const TOOLS: &[&str] = &["bash", "curl", "jq", "openssl", "basenc"];

macro_rules! pages {
    ($($name:ident => $path:literal,)*) => {
        /// The pages whose examples are tested, from the repository's root.
        const PAGES: &[&str] = &[$($path),*];
        $(
            #[test]
            fn $name() {
                run_page($path);
            }
        )*
    };
}

pages! {
    readme_quick_start => "README.md",
    getting_started => "book/src/getting-started/README.md",
    first_login => "book/src/getting-started/first-login.md",
    the_client => "book/src/getting-started/client.md",
    the_vault => "book/src/vault/vault.md",
    groups => "book/src/people/groups.md",
    the_jwt_grant => "book/src/machines/jwt-grant.md",
    backup_and_restore => "book/src/operations/backup-restore.md",
    replicas_and_haproxy => "book/src/operations/replicas.md",
    remote_administration => "book/src/administration/admin-cli.md",
    certificates => "book/src/certificates/README.md",
}

/// A page read and parsed, by its path from the repository's root.
fn load(page: &Path) -> Vec<Item> {
    let text = std::fs::read_to_string(repo().join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    markdown::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

/// `page`'s `after` pages first (theirs before them), then `page`: each
/// page with its items.
fn chain(page: &Path, depth: usize) -> Vec<(PathBuf, Vec<Item>)> {
    assert!(depth < 8, "{}: `after` pages lead round in a circle", page.display());
    let items = load(page);
    let mut out = Vec::new();
    for item in &items {
        if let Item::After { line, path } = item {
            let before = page.parent().unwrap_or(Path::new("")).join(path);
            assert!(repo().join(&before).is_file(), "{}:{line}: `after {path}`: no such page", page.display());
            out.extend(chain(&normal(&before), depth + 1));
        }
    }
    out.push((page.to_owned(), items));
    out
}

/// `path` without its `..` and `.` parts.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The sign-in links in `text` (`https://…/vedauth/device?user_code=…`,
/// in the client's prompt, a device authorization's JSON or alone).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("http") {
        rest = &rest[at..];
        // A link still being written (no end yet) is left for later.
        let Some(end) = rest.find(|c: char| c.is_whitespace() || c == '"') else { break };
        if rest[..end].contains("/vedauth/device?user_code=") {
            out.push(rest[..end].to_owned());
        }
        rest = &rest[end..];
    }
    out
}

fn missing_tools() -> Vec<&'static str> {
    TOOLS
        .iter()
        .copied()
        .filter(|tool| {
            !std::process::Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
        })
        .collect()
}

/// The person at the browser: approves sign-in links as the pages say.
struct Browser {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    /// Links approved (or printed before the page's approval and left alone).
    done: BTreeSet<String>,
    /// Links printed and not approved yet, oldest first.
    waiting: Vec<String>,
    /// An approval the page asked for before its link was printed: the
    /// directive's place, user and password.
    armed: Option<(String, String, String)>,
}

impl Browser {
    fn new(ca: &Path) -> Browser {
        let pem = std::fs::read(ca).unwrap();
        let http = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        Browser { http, runtime, done: BTreeSet::new(), waiting: Vec::new(), armed: None }
    }

    /// Notes the links in `output` not seen before.
    fn saw(&mut self, output: &str) {
        for link in links(output) {
            if !self.done.contains(&link) && !self.waiting.contains(&link) {
                self.waiting.push(link);
            }
        }
    }

    fn approve(&mut self, link: &str, user: &str, password: &str) -> Result<(), String> {
        let page = self.runtime.block_on(approve(&self.http, link, user, password, true));
        self.done.insert(link.to_owned());
        self.waiting.retain(|l| l != link);
        if page.contains("Access approved") { Ok(()) } else { Err(format!("approving {link} as {user}: the page said:\n{page}")) }
    }

    /// The page's `approve`: the link last printed, or the next one.
    fn directive(&mut self, at: String, user: &str, password: &str) -> Result<(), String> {
        if let Some((before, _, _)) = &self.armed {
            return Err(format!("{at}: an approval while the one of {before} still waits for its link"));
        }
        match self.waiting.pop() {
            Some(link) => self.approve(&link, user, password).map_err(|e| format!("{at}: {e}")),
            None => {
                self.armed = Some((at, user.to_owned(), password.to_owned()));
                Ok(())
            }
        }
    }

    /// While a command runs: approves the link it prints, if one is awaited.
    fn watch(&mut self, output: &str) -> Result<(), String> {
        if self.armed.is_none() {
            return Ok(());
        }
        self.saw(output);
        // Not before the link is printed in full (both are taken only then).
        if let Some(link) = self.waiting.pop()
            && let Some((at, user, password)) = self.armed.take()
        {
            self.approve(&link, &user, &password).map_err(|e| format!("{at}: {e}"))?;
        }
        Ok(())
    }
}

/// The page's commands as they ran, for the summary line.
#[derive(Default)]
struct Counts {
    blocks: usize,
    commands: usize,
}

/// A page's test failed: where, what, and the server's last lines.
fn fail(server: &Server, what: String) -> ! {
    let log = server.output.lock().map(|o| o.clone()).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
    panic!("{what}\n--- the server's log, its last lines:\n{}", tail.join("\n"));
}

fn run_page(page: &str) {
    let pages = chain(Path::new(page), 0);
    // The page's own shell blocks: run, or marked.
    let (_, own) = pages.last().unwrap();
    let mut untested = Vec::new();
    for item in own {
        if let Item::Shell { line, untested: why } = item {
            match why {
                Some(why) => untested.push(format!("line {line} ({why})")),
                None => panic!(
                    "{page}:{line}: a shell block that is neither run (```console) nor marked `<!-- untested: WHY -->` (see CONTRIBUTING.md)"
                ),
            }
        }
    }
    let consoles = |items: &[Item]| items.iter().filter(|i| matches!(i, Item::Console { .. })).count();
    let untested_note = if untested.is_empty() { "none".to_owned() } else { untested.join("; ") };
    if pages.iter().all(|(_, items)| consoles(items) == 0) {
        eprintln!("docs: {page}: no console block; {} untested: {untested_note}", untested.len());
        return;
    }
    let missing = missing_tools();
    if !missing.is_empty() {
        strongroom_testkit::skip(&format!("docs::{page}: the pages' commands need {} (not installed)", missing.join(", ")));
        return;
    }

    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let server = Server::start_on(work.path().join("strongroom-data"), &[], &[]);
    let here = format!("localhost:{}", server.port);
    let bin_dir = Path::new(BIN).parent().unwrap();
    let mut env = vec![
        ("PATH".to_owned(), format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default())),
        ("HOME".to_owned(), home.display().to_string()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ("TZ".to_owned(), "UTC".to_owned()),
    ];
    if let Ok(tmp) = std::env::var("TMPDIR") {
        env.push(("TMPDIR".to_owned(), tmp));
    }
    let mut shell = Shell::start(work.path(), &env, scratch.path());
    let mut browser = Browser::new(&work.path().join("strongroom-data/tls/cert.pem"));
    let mut counts = Counts::default();
    // Every command with what it printed, for whoever writes a page.
    let transcript = std::env::var_os("STRONGROOM_DOCS_TRANSCRIPT").is_some();

    for (path, items) in &pages {
        let name = path.display();
        for item in items {
            match item {
                Item::Approve { line, user, password } => {
                    if let Err(e) = browser.directive(format!("{name}:{line}"), user, password) {
                        fail(&server, e);
                    }
                }
                Item::Console { commands, .. } => {
                    counts.blocks += 1;
                    for cmd in commands {
                        counts.commands += 1;
                        let at = format!("{name}:{}", cmd.line);
                        let text = cmd.text.replace(SHOWN, &here);
                        let mut watched = Ok(());
                        let ran = shell.run(&text, COMMAND_LIMIT, |so_far| {
                            if watched.is_ok() {
                                watched = browser.watch(so_far);
                            }
                        });
                        if let Err(e) = watched {
                            fail(&server, format!("{e}\n(while {at} ran: $ {})", cmd.text));
                        }
                        let ran = ran.unwrap_or_else(|e| fail(&server, format!("{at}: $ {}\n{e}", cmd.text)));
                        browser.saw(&ran.output);
                        let printed = ran.output.replace(&here, SHOWN).replace(&format!("127.0.0.1:{}", server.port), "127.0.0.1:8443");
                        let printed = markdown::tidy(&printed.lines().collect::<Vec<_>>());
                        if transcript {
                            eprintln!("{at}: $ {}\n{}", cmd.text, printed.join("\n"));
                        }
                        if ran.code != 0 {
                            fail(&server, format!("{at}: the command failed (exit {}):\n$ {}\n{}", ran.code, cmd.text, printed.join("\n")));
                        }
                        let shown = markdown::tidy(&cmd.shown);
                        if !markdown::output_matches(&shown, &printed) {
                            fail(
                                &server,
                                format!(
                                    "{at}: the output is not what the page shows (- shown, + printed; `…` stands for any text):\n$ {}\n{}",
                                    cmd.text,
                                    markdown::diff(&shown, &printed)
                                ),
                            );
                        }
                    }
                }
                Item::Shell { .. } | Item::After { .. } => {}
            }
        }
    }
    if let Some((at, _, _)) = &browser.armed {
        fail(&server, format!("{at}: an approval, but no command printed a sign-in link after it"));
    }
    eprintln!(
        "docs: {page}: {} console blocks, {} commands run in {:.1} s (with the pages before it: {}); {} untested: {untested_note}",
        counts.blocks,
        counts.commands,
        started.elapsed().as_secs_f64(),
        pages.iter().map(|(p, _)| p.display().to_string()).collect::<Vec<_>>().join(", "),
        untested.len(),
    );
    drop(shell);
    server.stop();
}

/// Every Markdown file of the book and the README.
fn all_pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let entry = entry.unwrap();
            let path = dir.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![PathBuf::from("README.md")];
    walk(Path::new("book/src"), &mut out);
    out.sort();
    out
}

#[test]
fn every_page_with_console_blocks_is_tested() {
    let mut unlisted = Vec::new();
    let (mut shell_blocks, mut marked) = (0, 0);
    for page in all_pages() {
        let items = load(&page);
        let listed = PAGES.iter().any(|p| Path::new(p) == page);
        for item in &items {
            match item {
                Item::Console { line, .. } if !listed => unlisted.push(format!("{}:{line}", page.display())),
                Item::Shell { untested, .. } => {
                    shell_blocks += 1;
                    marked += usize::from(untested.is_some());
                }
                _ => {}
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "console blocks on pages the test does not run (add the page to PAGES in {}): {}",
        file!(),
        unlisted.join(", ")
    );
    for page in PAGES {
        assert!(repo().join(page).is_file(), "PAGES names {page}, which does not exist");
    }
    eprintln!("docs: {} pages read; {shell_blocks} shell blocks not run, {marked} of them marked untested", all_pages().len());
}

#[test]
fn sign_in_links_are_found_in_every_shape() {
    let text = "To sign in, open https://localhost:1/vedauth/device?user_code=AB-CD\nand check\n\
                {\"verification_uri\":\"https://h/vedauth/device\",\"verification_uri_complete\":\"https://h/vedauth/device?user_code=X\"}\n\
                https://h/vedauth/device?user_code=Y\nhttps://h/vedauth/device?user_co";
    assert_eq!(
        links(text),
        vec![
            "https://localhost:1/vedauth/device?user_code=AB-CD",
            "https://h/vedauth/device?user_code=X",
            "https://h/vedauth/device?user_code=Y"
        ]
    );
    assert_eq!(normal(Path::new("book/src/vault/../getting-started/./a.md")), PathBuf::from("book/src/getting-started/a.md"));
}
