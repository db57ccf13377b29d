//! Tidy checks of the workspace's sources, as plain `#[test]`s so that
//! `cargo test` runs what CI checks (rust-analyzer keeps its own the same
//! way, in `xtask/src/tidy.rs`):
//!
//! - `every_dependency_is_used`: each `[dependencies]` entry of a workspace
//!   crate is named as a path (`name::`, `use name`, `extern crate name`) in
//!   its `src/` outside `#[cfg(test)]` code, each `[dev-dependencies]` entry
//!   anywhere in the crate (`src/`, `tests/`, `examples/`, `benches/`), and
//!   each `[workspace.dependencies]` entry is taken by a member; or the
//!   dependency is in [`ALLOWED`] with its reason.
//! - `crate_roots_list_their_modules`: every module a crate's root (`lib.rs`,
//!   `main.rs`) declares is named in its `//!` doc, and every module that doc
//!   names exists.
//! - `comments_cite_no_issue_or_outside_document`: no comment in `crates/`
//!   names an issue number or a document outside the repository (a
//!   Markdown file that is not in it, a section sign before anything but a
//!   public standard's section); a comment states the fact itself.
//!
//! They read the workspace's Rust sources and manifests (some 330 files:
//! 0.3 s for the three, unoptimised, on two busy cores), and a failure names
//! each place, file:line, and what to do. `the_checks_read_rust_as_rust` and
//! `a_stale_module_list_is_found` hold the checks' own cases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Dependencies no path in the crate's sources names, each needed all the
/// same, with the reason: `(crate directory, dependency, reason)`, such as
/// `("crates/x", "rustls", "only turns on a feature of rustls that y needs")`.
/// None today: every dependency declared is also named in its crate's code.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// Documents outside the repository that comments used to cite, also
/// without their extension.
const OUTSIDE_DOCUMENTS: &[&str] = &[
    "admin-api",
    "aesthetics-anchors",
    "certificates-api",
    "layers-proposal",
    "product-reference",
    "product reference",
    "real-clients",
    "security-anchors",
    "DECISIONS",
    "shared/reference",
    "../shared",
    // The security list's first source, as comments named it.
    "the anchor's",
    "the anchors'",
];

fn root() -> &'static Path {
    static ROOT: LazyLock<PathBuf> = LazyLock::new(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap());
    &ROOT
}

/// `path` relative to the repository's root, with `/`.
fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The files under `dir` whose names end with `ext`, sorted; build output
/// and installed packages left out.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(name.as_str(), "target" | "node_modules" | ".git") {
                files(&p, ext, out);
            }
        } else if name.ends_with(ext) {
            out.push(p);
        }
    }
}

/// The workspace's member directories, from the root `Cargo.toml`'s `members`.
fn members() -> Vec<PathBuf> {
    let manifest = read(&root().join("Cargo.toml"));
    let line = manifest.lines().find(|l| l.trim_start().starts_with("members")).expect("the workspace's `members` line");
    let list = line.split_once('[').and_then(|(_, l)| l.split_once(']')).expect("`members = [...]` on one line").0;
    let members: Vec<PathBuf> =
        list.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()).map(|m| root().join(m)).collect();
    assert!(members.len() >= 10, "the workspace's members not found or cut short: {members:?}");
    members
}

// ---------------------------------------------------------------- reading Rust

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A Rust file split into code and comments: `code` is the text with every
/// comment removed and every string and character literal emptied (lines
/// kept, so offsets still give line numbers), `comments` each comment's
/// text line by line, with its line number.
#[derive(Debug, Default)]
struct Source {
    code: String,
    comments: Vec<(usize, String)>,
}

fn split(text: &str) -> Source {
    // Every delimiter is ASCII, so byte offsets at them are char boundaries.
    let b = text.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let ident = |i: Option<usize>| i.and_then(|i| b.get(i)).is_some_and(|&c| is_ident(char::from(c)));
    // At the `r` of `r"…"`, `r#"…"#` or `br"…"`, the number of `#`; `None`
    // for anything else (`r#type`, an identifier ending in `r`).
    let raw_string = |i: usize| {
        let starts = b[i] == b'r' && (!ident(i.checked_sub(1)) || (at(i.wrapping_sub(1)) == b'b' && !ident(i.checked_sub(2))));
        let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
        (starts && at(i + 1 + hashes) == b'"').then_some(hashes)
    };
    // A literal from `from` to `end` becomes its line breaks, then `""`.
    let literal = |out: &mut Source, line: &mut usize, from: usize, end: usize| {
        for _ in b[from..end].iter().filter(|&&c| c == b'\n') {
            out.code.push('\n');
            *line += 1;
        }
        out.code.push_str("\"\"");
    };
    let mut out = Source::default();
    // `copied`: where the code not yet copied into `out.code` starts.
    let (mut i, mut line, mut copied) = (0, 1, 0);
    while i < b.len() {
        let c = b[i];
        let starts_other = (c == b'/' && matches!(at(i + 1), b'/' | b'*')) || c == b'"' || c == b'\'' || c == b'r';
        if !starts_other {
            line += usize::from(c == b'\n');
            i += 1;
            continue;
        }
        let end = if c == b'/' && at(i + 1) == b'/' {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n);
            out.code.push_str(&text[copied..i]);
            out.comments.push((line, text[i + 2..end].to_owned()));
            end
        } else if c == b'/' {
            // A block comment; they nest, and each of their lines is a
            // comment line.
            out.code.push_str(&text[copied..i]);
            let (mut depth, mut j, mut from) = (0, i, i);
            let strip = |t: &str| t.replace("/*", "").replace("*/", "");
            while j < b.len() {
                if b[j] == b'/' && at(j + 1) == b'*' {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && at(j + 1) == b'/' {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[j] == b'\n' {
                        out.comments.push((line, strip(&text[from..j])));
                        out.code.push('\n');
                        line += 1;
                        from = j + 1;
                    }
                    j += 1;
                }
            }
            out.comments.push((line, strip(&text[from..j])));
            j
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.code.push_str(&text[copied..i]);
            literal(&mut out, &mut line, i, end);
            end
        } else if let Some(hashes) = raw_string(i) {
            // No escapes: it ends at a quote followed by as many `#`.
            let open = i + 1 + hashes;
            let close = (open + 1..b.len()).find(|&j| b[j] == b'"' && (1..=hashes).all(|k| at(j + k) == b'#'));
            let end = close.map_or(b.len(), |j| j + 1 + hashes);
            out.code.push_str(&text[copied..i]);
            literal(&mut out, &mut line, i, end);
            end
        } else if c == b'\'' && (at(i + 1) == b'\\' || text[i + 1..].chars().next().is_some_and(|ch| at(i + 1 + ch.len_utf8()) == b'\'')) {
            // A character literal ('x', '\'', '\u{1F600}', 'é'); a lifetime is code.
            let from = if at(i + 1) == b'\\' { i + 3 } else { i + 2 };
            let end = (from..b.len()).find(|&j| b[j] == b'\'' || b[j] == b'\n').map_or(b.len(), |j| j + 1);
            out.code.push_str(&text[copied..i]);
            out.code.push_str("' '");
            end
        } else {
            i += 1;
            continue;
        };
        i = end;
        copied = end;
    }
    out.code.push_str(&text[copied..]);
    out
}

/// The line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The names `code` uses as crates: a path's first segment (`name::…`,
/// `::name::…`, not `a::name::…` nor `x.name`), and the name after `use` or
/// `extern crate`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let b = code.as_bytes();
    let ident = |c: u8| is_ident(char::from(c));
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if !ident(b[i]) || (i > 0 && ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && ident(b[i]) {
            i += 1;
        }
        let before = &code[..start];
        let inner = before.strip_suffix("::").is_some_and(|head| head.ends_with(is_ident));
        if before.ends_with('.') || inner {
            continue;
        }
        let head = before.trim_end();
        let after_word = |w: &str| head.strip_suffix(w).is_some_and(|h| !h.ends_with(is_ident));
        if code[i..].trim_start().starts_with("::") || after_word("use") || after_word("extern crate") {
            names.insert(code[start..i].to_owned());
        }
    }
    names
}

/// `code` without its `#[cfg(test)]` items, and the names of the modules
/// such items declare in files of their own (`#[cfg(test)] mod testing;`).
fn without_test_code(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let (mut kept, mut test_modules, mut rest) = (String::new(), Vec::new(), code);
    while let Some(at) = rest.find(ATTR) {
        kept.push_str(&rest[..at]);
        let item = &rest[at + ATTR.len()..];
        // The item ends at a `;` outside any bracket, or with the `}` that
        // closes its first top-level brace.
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, ch) in item.char_indices() {
            match ch {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        let body = &item[..end];
        if body.trim_end().ends_with(';')
            && let Some(name) = body.split("mod ").nth(1).map(|n| n.trim_end_matches([';', ' ', '\n']))
            && name.chars().all(is_ident)
        {
            test_modules.push(name.to_owned());
        }
        // Keep the lines, so what follows keeps its line numbers.
        kept.extend(body.chars().filter(|&c| c == '\n'));
        rest = &item[end..];
    }
    kept.push_str(rest);
    (kept, test_modules)
}

/// The file of module `name` declared in `file` (`a.rs` declares
/// `a/name.rs`; `lib.rs`, `main.rs` and `mod.rs` their siblings), and the
/// directory of its own modules.
fn module_file(file: &Path, name: &str) -> (Option<PathBuf>, PathBuf) {
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap().to_string_lossy();
    let base = if matches!(stem.as_ref(), "lib" | "main" | "mod") { dir.to_path_buf() } else { dir.join(stem.as_ref()) };
    let flat = base.join(format!("{name}.rs"));
    let nested = base.join(name).join("mod.rs");
    let found = [flat, nested].into_iter().find(|p| p.is_file());
    (found, base.join(name))
}

// ---------------------------------------------------------------- dependencies

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    Dev,
    Build,
}

#[derive(Debug)]
struct Dep {
    /// As the manifest spells it (`tower-http`).
    key: String,
    kind: Kind,
    line: usize,
    /// The entry's value (`{ workspace = true, features = [...] }`), or
    /// `workspace = true` for `key.workspace = true`.
    value: String,
}

impl Dep {
    /// The name code uses (`tower_http`).
    fn krate(&self) -> String {
        self.key.replace('-', "_")
    }
}

/// The dependencies a manifest declares, read line by line (every manifest
/// here keeps an entry on one line): `[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, also under `[target.….]`, and `[dependencies.name]`.
fn dependencies(manifest: &str) -> Vec<Dep> {
    let mut deps = Vec::new();
    let mut kind = None;
    for (n, raw) in manifest.lines().enumerate() {
        let line = raw.split(" #").next().unwrap_or("").trim();
        if line.starts_with('[') {
            let section = line.trim_matches(['[', ']']);
            let section = section.rsplit_once("'.").map_or(section, |(_, s)| s);
            let (table, key) = section.split_once('.').map_or((section, None), |(t, k)| (t, Some(k)));
            kind = match table {
                "dependencies" => Some(Kind::Normal),
                "dev-dependencies" => Some(Kind::Dev),
                "build-dependencies" => Some(Kind::Build),
                _ => None,
            };
            if let (Some(k), Some(key)) = (kind, key) {
                deps.push(Dep { key: key.to_owned(), kind: k, line: n + 1, value: String::new() });
                kind = None;
            }
            continue;
        }
        let Some(kind) = kind else { continue };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let (key, value) = match key.trim().split_once('.') {
            Some((k, field)) => (k.trim(), format!("{field} = {}", value.trim())),
            None => (key.trim(), value.trim().to_owned()),
        };
        deps.push(Dep { key: key.trim_matches('"').to_owned(), kind, line: n + 1, value });
    }
    deps
}

/// Whether a `[dev-dependencies]` entry only repeats the `[dependencies]`
/// one (no features of its own).
fn adds_nothing(dev: &Dep) -> bool {
    matches!(dev.value.replace(' ', "").as_str(), "workspace=true" | "{workspace=true}")
}

/// The crates a crate's code names ([`crate_paths`]), by where: `src/`
/// outside `#[cfg(test)]` code (what `[dependencies]` serve), anywhere (what
/// `[dev-dependencies]` may serve), and `build.rs`.
#[derive(Debug, Default)]
struct CrateCode {
    normal: BTreeSet<String>,
    all: BTreeSet<String>,
    build: BTreeSet<String>,
}

fn crate_code(dir: &Path) -> CrateCode {
    let mut code = CrateCode::default();
    let mut src = Vec::new();
    files(&dir.join("src"), ".rs", &mut src);
    let src: Vec<(PathBuf, String, String, Vec<String>)> = src
        .into_iter()
        .map(|file| {
            let text = split(&read(&file)).code;
            let (normal, test_modules) = without_test_code(&text);
            (file, text, normal, test_modules)
        })
        .collect();
    // Modules in files of their own under `#[cfg(test)]`, and theirs.
    let mut test_only: Vec<PathBuf> = Vec::new();
    for (file, _, _, test_modules) in &src {
        for m in test_modules {
            let (found, own) = module_file(file, m);
            test_only.extend(found);
            test_only.push(own);
        }
    }
    for (file, text, normal, _) in &src {
        if !test_only.iter().any(|t| file.starts_with(t)) {
            code.normal.extend(crate_paths(normal));
        }
        code.all.extend(crate_paths(text));
    }
    for sub in ["tests", "examples", "benches"] {
        let mut others = Vec::new();
        files(&dir.join(sub), ".rs", &mut others);
        for file in others {
            code.all.extend(crate_paths(&split(&read(&file)).code));
        }
    }
    if dir.join("build.rs").is_file() {
        code.build = crate_paths(&split(&read(&dir.join("build.rs"))).code);
    }
    code
}

#[test]
fn every_dependency_is_used() {
    let mut problems = Vec::new();
    let mut checked = 0;
    let mut taken = BTreeSet::new();
    let allowed = |dir: &str, key: &str| ALLOWED.iter().any(|(d, k, _)| *d == dir && *k == key);
    let mut allow_used = BTreeSet::new();
    for member in members() {
        let manifest_path = member.join("Cargo.toml");
        let manifest = read(&manifest_path);
        let deps = dependencies(&manifest);
        let code = crate_code(&member);
        let dir = rel(&member);
        let at = |d: &Dep| format!("{}:{}", rel(&manifest_path), d.line);
        for d in &deps {
            if d.value.contains("workspace = true") || d.value.contains("workspace=true") {
                taken.insert(d.key.clone());
            }
            checked += 1;
            if allowed(&dir, &d.key) {
                allow_used.insert((dir.clone(), d.key.clone()));
                continue;
            }
            let krate = d.krate();
            match d.kind {
                Kind::Normal if code.normal.contains(&krate) => {}
                Kind::Normal if code.all.contains(&krate) => problems.push(format!(
                    "{}: `{}` is used only by tests, examples or `#[cfg(test)]` code: move it to [dev-dependencies]",
                    at(d),
                    d.key
                )),
                Kind::Dev if deps.iter().any(|n| n.kind == Kind::Normal && n.key == d.key) && adds_nothing(d) => problems.push(format!(
                    "{}: the dev-dependency `{}` repeats the [dependencies] entry and adds no feature: remove it",
                    at(d),
                    d.key
                )),
                Kind::Dev if code.all.contains(&krate) => {}
                Kind::Build if code.build.contains(&krate) => {}
                _ => problems.push(format!(
                    "{}: `{}` is declared but no `{krate}::` path, `use {krate}` or `extern crate {krate}` names it{}: remove it, \
                     or list it in `ALLOWED` (crates/cli/tests/tidy.rs) with the reason it is needed",
                    at(d),
                    d.key,
                    match d.kind {
                        Kind::Normal => " in src/ (outside #[cfg(test)] code)",
                        Kind::Dev => " in the crate",
                        Kind::Build => " in build.rs",
                    }
                )),
            }
        }
    }
    // The fuzz crate is outside the workspace: it inherits nothing.
    let workspace = read(&root().join("Cargo.toml"));
    let (_, table) = workspace.split_once("[workspace.dependencies]").expect("[workspace.dependencies]");
    let table = table.split("\n[").next().unwrap_or("");
    let offset = line_of(&workspace, workspace.find("[workspace.dependencies]").unwrap());
    for d in dependencies(&format!("[dependencies]{table}")) {
        if !taken.contains(&d.key) {
            problems.push(format!(
                "Cargo.toml:{}: `{}` is in [workspace.dependencies] but no member takes it (`{}.workspace = true`): remove it",
                d.line + offset - 1,
                d.key,
                d.key
            ));
        }
    }
    for (dir, key, _) in ALLOWED {
        if !allow_used.contains(&(dir.to_string(), key.to_string())) {
            problems
                .push(format!("crates/cli/tests/tidy.rs: `ALLOWED` names `{key}` of {dir}, which it does not declare: remove the entry"));
        }
    }
    assert!(problems.is_empty(), "{} unused dependencies:\n{}", problems.len(), problems.join("\n"));
    eprintln!("{checked} dependency entries of {} crates, each used ({} allowed unnamed)", members().len(), ALLOWED.len());
}

// ---------------------------------------------------------------- module lists

/// A crate root's modules, each with its line, leaving out `#[cfg(test)]` ones.
fn root_modules(code: &str) -> Vec<(String, usize)> {
    let (code, _) = without_test_code(code);
    let mut modules = Vec::new();
    for (n, line) in code.lines().enumerate() {
        // At the root, so not indented.
        let rest = line.strip_prefix("pub ").or_else(|| line.strip_prefix("pub(crate) ")).unwrap_or(line);
        if let Some(rest) = rest.strip_prefix("mod ") {
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            modules.push((name, n + 1));
        }
    }
    modules
}

/// The spans in backticks of a doc (joined with `\n`), each with its offset.
fn code_spans(doc: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut rest = doc;
    let mut base = 0;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else { break };
        spans.push((base + open + 1, &rest[open + 1..open + 1 + len]));
        base += open + len + 2;
        rest = &rest[open + len + 2..];
    }
    spans
}

fn is_module_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.starts_with(|c: char| c.is_ascii_lowercase())
}

/// Whether `code` (a module's) declares or brings in a lowercase item
/// `name`: a module, a function, a macro, or a `use` that names it.
fn has_item(code: &str, name: &str) -> bool {
    let word = |line: &str, w: &str| {
        line.match_indices(w).any(|(at, _)| !line[..at].ends_with(is_ident) && !line[at + w.len()..].starts_with(is_ident))
    };
    code.lines().any(|line| {
        let t = line.trim_start();
        ["mod ", "fn ", "macro_rules! "].iter().any(|k| word(t, &format!("{k}{name}")))
            || ((t.starts_with("pub use ") || t.starts_with("use ")) && word(t, name))
    })
}

#[test]
fn crate_roots_list_their_modules() {
    let mut problems = Vec::new();
    let mut roots = 0;
    for member in members() {
        let manifest = read(&member.join("Cargo.toml"));
        let crates: BTreeSet<String> = dependencies(&manifest).iter().map(Dep::krate).collect();
        for file in ["src/lib.rs", "src/main.rs"].map(|f| member.join(f)).into_iter().filter(|f| f.is_file()) {
            roots += 1;
            problems.extend(module_list_problems(&file, &crates));
        }
    }
    assert!(problems.is_empty(), "{} stale module lists:\n{}", problems.len(), problems.join("\n"));
    eprintln!("{roots} crate roots, each naming its modules");
}

/// What is stale in the module list of the crate root `file`, whose crate
/// depends on `crates` (names a doc may start a path with).
fn module_list_problems(file: &Path, crates: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let text = read(file);
    let code = split(&text).code;
    let modules = root_modules(&code);
    let declared: BTreeSet<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
    let doc_lines: Vec<(usize, &str)> =
        text.lines().enumerate().filter_map(|(n, l)| l.trim_start().strip_prefix("//!").map(|d| (n + 1, d))).collect();
    let doc = doc_lines.iter().map(|(_, d)| *d).collect::<Vec<_>>().join("\n");
    let line_at = |at: usize| doc_lines[line_of(&doc, at) - 1].0;
    let place = rel(file);

    // Every module is named: `x`, [`x`] or a path `x::…`.
    let spans = code_spans(&doc);
    let named: BTreeSet<&str> = spans.iter().map(|(_, s)| s.split("::").next().unwrap_or("")).collect();
    for (m, line) in &modules {
        if !named.contains(m.as_str()) {
            problems.push(format!(
                "{place}:{line}: module `{m}` is not named in the crate's `//!` doc: say what it holds there (`{m}`, or [`{m}`] if public)"
            ));
        }
    }

    // Every module the doc names exists: a list item's leading name and an
    // intra-doc link's first segment are root modules or items; each further
    // lowercase segment of a path from a root module is a module or item of
    // the one before.
    let mut leading = BTreeSet::new();
    for (n, d) in &doc_lines {
        if let Some(item) = d.trim_start().strip_prefix("- ") {
            let item = item.trim_start_matches('[');
            if let Some(span) = item.strip_prefix('`').and_then(|i| i.split('`').next()) {
                leading.insert((*n, span.split("::").next().unwrap_or("").to_owned()));
            }
        }
    }
    let links = spans.iter().filter(|(at, s)| doc[..*at].ends_with("[`") && doc[*at + s.len()..].starts_with("`]"));
    let linked = links.filter(|(_, s)| s.contains("::")).map(|(at, s)| (line_at(*at), s.split("::").next().unwrap_or("").to_owned()));
    for (line, first) in leading.into_iter().chain(linked) {
        let outside = crates.contains(&first) || matches!(first.as_str(), "crate" | "self" | "super" | "std" | "core" | "alloc");
        if is_module_name(&first) && !outside && !declared.contains(first.as_str()) && !has_item(&code, &first) {
            problems.push(format!("{place}:{line}: the doc names `{first}`, which is no module or item of the crate's root: fix the doc"));
        }
    }
    for (at, span) in &spans {
        let segments: Vec<&str> = span.split("::").collect();
        if segments.len() < 2 || !declared.contains(segments[0]) {
            continue;
        }
        let mut parent = module_file(file, segments[0]).0;
        for (k, seg) in segments.iter().enumerate().skip(1) {
            let Some(parent_file) = parent.filter(|_| is_module_name(seg)) else { break };
            let child = module_file(&parent_file, seg).0;
            if child.is_none() && !has_item(&split(&read(&parent_file)).code, seg) {
                problems.push(format!(
                    "{place}:{}: the doc names `{}`, but `{}` has no module or item `{seg}`: fix the doc",
                    line_at(*at),
                    segments[..=k].join("::"),
                    segments[..k].join("::")
                ));
                break;
            }
            parent = child;
        }
    }
    problems
}

// ---------------------------------------------------------------- comments

/// Whether the text before a section sign ends with the public standard the
/// section is of (`RFC 5280`, `PKCS#11 2.40`, `X.690`).
fn cites_standard(before: &str) -> bool {
    let words: Vec<&str> = before.split_whitespace().rev().take(2).collect();
    let last = words.first().map(|w| w.trim_end_matches(',')).unwrap_or("");
    let previous = words.get(1).copied().unwrap_or("");
    let number = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit());
    let version = |w: &str| !w.is_empty() && w.trim_start_matches('v').chars().all(|c| c.is_ascii_digit() || c == '.');
    (previous.ends_with("RFC") && number(last))
        || last.strip_prefix("RFC").is_some_and(number)
        || (previous.trim_start_matches(['(', '[']).starts_with("PKCS") && version(last))
        || last.trim_start_matches(['(', '[']).strip_prefix("X.").is_some_and(number)
}

/// Why a comment's text cites what a reader of the repository cannot
/// follow, one reason per finding; `md_exists` says whether a Markdown file
/// named in it is in the repository.
fn outside_citations(comment: &str, md_exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    let lower = comment.to_lowercase();
    for (at, _) in lower.match_indices("issue") {
        let after = lower[at + 5..].trim_start_matches('s');
        let number = after.trim_start().trim_start_matches('#');
        if !lower[..at].ends_with(is_ident) && after.starts_with(' ') && number.starts_with(|c: char| c.is_ascii_digit()) {
            let n: String = number.chars().take_while(char::is_ascii_digit).collect();
            found.push(format!("names issue {n}"));
        }
    }
    for doc in OUTSIDE_DOCUMENTS {
        if comment.contains(doc) || (doc.chars().any(|c| c.is_lowercase()) && lower.contains(doc)) {
            found.push(format!("cites `{doc}`, a document outside the repository"));
        }
    }
    for (at, _) in comment.match_indices(".md") {
        if comment[at + 3..].starts_with(is_ident) {
            continue;
        }
        let start = comment[..at].rfind(|c: char| !(is_ident(c) || matches!(c, '.' | '/' | '-'))).map_or(0, |s| s + 1);
        let name = &comment[start..at + 3];
        if name.len() > 3 && !md_exists(name) && !OUTSIDE_DOCUMENTS.iter().any(|d| name.contains(d)) {
            found.push(format!("cites `{name}`, which is not in the repository"));
        }
    }
    for (at, _) in comment.match_indices('§') {
        if !cites_standard(&comment[..at]) {
            let section: String = comment[at..].chars().take_while(|c| !c.is_whitespace() && !matches!(c, ')' | ',' | ':' | ';')).collect();
            found.push(format!("cites {section} of no public standard"));
        }
    }
    found
}

#[test]
fn comments_cite_no_issue_or_outside_document() {
    let root = root();
    let mut md = Vec::new();
    files(root, ".md", &mut md);
    let md_paths: BTreeSet<String> = md.iter().map(|p| rel(p)).collect();
    let md_names: BTreeSet<String> = md.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();

    let mut sources = Vec::new();
    files(&root.join("crates"), ".rs", &mut sources);
    assert!(sources.len() >= 200, "crates/**/*.rs not found or cut short: {} files", sources.len());
    let mut problems = Vec::new();
    let mut comments = 0;
    for file in &sources {
        let path = rel(file);
        let dir = file.parent().unwrap();
        let md_exists = |name: &str| {
            let clean = name.trim_start_matches("./");
            md_paths.contains(clean)
                || dir.join(clean).is_file()
                || md_names.contains(clean)
                || md_paths.iter().any(|p| p.ends_with(&format!("/{clean}")))
        };
        for (line, text) in split(&read(file)).comments {
            comments += 1;
            let found = outside_citations(&text, &md_exists);
            if found.is_empty() {
                continue;
            }
            problems.push(format!(
                "{path}:{line}: the comment {}: state the fact itself (an RFC's section, a file of the repository or an upstream \
                 issue's URL may be cited)",
                found.join(", ")
            ));
        }
    }
    assert!(problems.is_empty(), "{} comments cite what readers cannot follow:\n{}", problems.len(), problems.join("\n"));
    eprintln!("{comments} comment lines in {} files, none citing an issue or an outside document", sources.len());
}

// ---------------------------------------------------------------- the checks' own cases

#[test]
fn the_checks_read_rust_as_rust() {
    let src = split(
        "use a::b; // tokio::spawn in a comment\nlet s = \"serde:: // not a comment\";\nlet r = r#\"x \" y\"#; let c = '\"';\n\
         /* outer /* inner */ still */ fn f<'a>() {}\n",
    );
    assert_eq!(src.comments, [(1, " tokio::spawn in a comment".to_owned()), (4, " outer  inner  still ".to_owned())]);
    assert!(!crate_paths(&src.code).contains("tokio") && !crate_paths(&src.code).contains("serde"), "{}", src.code);
    assert_eq!(src.code.lines().count(), 4, "{}", src.code);
    assert!(src.code.contains("fn f<'a>()"), "{}", src.code);
    let escaped = split("let a = \"x\\\" // no\"; let b = br#\"//\"#; let c = '\\''; let d = 'x'; // yes\nfor r in x {}\n");
    assert_eq!(escaped.comments, [(1, " yes".to_owned())], "{}", escaped.code);
    assert!(escaped.code.contains("for r in x"), "{}", escaped.code);

    let named = |code: &str| crate_paths(code).into_iter().collect::<Vec<_>>();
    assert_eq!(named("#[derive(serde::Serialize)] struct A(b::C);"), ["b", "serde"]);
    assert_eq!(named("pub use strongroom_pki as pki;\nextern crate alloc;"), ["alloc", "strongroom_pki"]);
    assert_eq!(named("x = ::tokio::spawn(f);"), ["tokio"]);
    assert_eq!(named("strongroom_app::pki::issue()"), ["strongroom_app"]);
    assert!(named("let tokio_x = 1; self.ring; fn reuse(ring: u8) {} a.b::<c>()").is_empty());

    let (kept, modules) =
        without_test_code("fn a() {}\n#[cfg(test)]\nmod testing;\n#[cfg(test)]\nmod tests {\n    use x::y;\n}\nfn b() {}\n");
    assert_eq!(modules, ["testing"]);
    assert!(kept.contains("fn a()") && kept.contains("fn b()") && !kept.contains("x::y"), "{kept}");
    assert_eq!(kept.lines().count(), 8);

    let deps = dependencies(
        "[dependencies]\na.workspace = true\nb-c = { workspace = true, features = [\"x\"] }\n[dev-dependencies]\nd = \"1\"\n[features]\ne = []\n",
    );
    let keys: Vec<(&str, Kind)> = deps.iter().map(|d| (d.key.as_str(), d.kind)).collect();
    assert_eq!(keys, [("a", Kind::Normal), ("b-c", Kind::Normal), ("d", Kind::Dev)]);
    assert!(adds_nothing(&deps[0]) && !adds_nothing(&deps[1]));

    let none = |_: &str| false;
    assert_eq!(outside_citations(" (issue 33): certificates", &none), ["names issue 33"]);
    assert_eq!(outside_citations(" Issue 35: the access token", &none), ["names issue 35"]);
    assert!(outside_citations(" issues a certificate; issued twice", &none).is_empty());
    assert!(outside_citations(" RFC 5280 §3.3, RFC 6749, §5.2 and PKCS#11 2.40 §2.3.3", &none).is_empty());
    assert_eq!(outside_citations(" pending is 202 (§3.6)", &none), ["cites §3.6 of no public standard"]);
    assert_eq!(outside_citations(" as seed §4.1 says", &none), ["cites §4.1 of no public standard"]);
    assert_eq!(outside_citations(" see product-reference.md", &none), ["cites `product-reference`, a document outside the repository"]);
    assert_eq!(outside_citations(" see notes.md", &none), ["cites `notes.md`, which is not in the repository"]);
    assert!(outside_citations(" see book/src/security/suite.md", &|n| n == "book/src/security/suite.md").is_empty());
    assert!(outside_citations(" security test N2 and C3", &none).is_empty());
}

#[test]
fn a_stale_module_list_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    let lib = src.join("lib.rs");
    std::fs::write(
        &lib,
        "//! - [`a`]: its `a::inner`, `a::run` and `a::gone`;\n//! - `old`: no longer here;\n//! - [`helper`], [`dep::Thing`].\n\
         pub mod a;\nmod b;\n#[cfg(test)]\nmod tests;\npub fn helper() {}\n",
    )
    .unwrap();
    std::fs::write(src.join("a.rs"), "pub mod inner;\npub fn run() {}\n").unwrap();
    std::fs::write(src.join("a/inner.rs"), "").unwrap();
    let found = module_list_problems(&lib, &BTreeSet::from(["dep".to_owned()]));
    let path = lib.display();
    assert_eq!(
        found,
        [
            format!("{path}:5: module `b` is not named in the crate's `//!` doc: say what it holds there (`b`, or [`b`] if public)"),
            format!("{path}:2: the doc names `old`, which is no module or item of the crate's root: fix the doc"),
            format!("{path}:1: the doc names `a::gone`, but `a` has no module or item `gone`: fix the doc"),
        ]
    );
}
