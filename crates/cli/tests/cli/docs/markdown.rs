//! The Markdown side of the docs test: a page's fenced blocks and its
//! comments for the test, a `console` block's commands with the output it
//! shows, and the match of shown against printed output (with wildcards).
//!
//! The conventions (CONTRIBUTING.md, "The tested examples"):
//!
//! - a block fenced as ```` ```console ```` is run: `$ ` starts a command,
//!   `> ` continues it (the shell's second prompt), every other line is the
//!   output the command before it prints (stdout and stderr together),
//!   compared exactly but for wildcards: `…` or `[..]` inside a line stands
//!   for any text in that line, a line of only `…` or `...` for any lines
//!   (none included); a command shown with no output must print nothing;
//! - a shell block fenced as ```` ```sh ```` on a page the test reads must
//!   follow `<!-- untested: WHY -->` (a systemd unit, an HSM, another host);
//! - `<!-- doc-test: approve USER PASSWORD -->` is what the reader does in a
//!   browser: the test approves, as USER, the sign-in link last printed (or,
//!   when none is waiting, the one the next command prints);
//! - `<!-- doc-test: after PATH -->` runs the page at PATH (relative to this
//!   one) first, on the same server and in the same shell.

/// What a page holds for the test, in the page's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A ```` ```console ```` block: its commands, run.
    Console { line: usize, commands: Vec<Command> },
    /// A ```` ```sh ```` block and the reason its marker gives (`None`: no
    /// marker, which the test refuses on the pages it reads).
    Shell { line: usize, untested: Option<String> },
    /// `<!-- doc-test: approve USER PASSWORD -->`.
    Approve { line: usize, user: String, password: String },
    /// `<!-- doc-test: after PATH -->`.
    After { line: usize, path: String },
}

/// One `$ ` command of a console block and the output shown under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The line of its `$ `.
    pub line: usize,
    /// The command, continuation lines joined with newlines.
    pub text: String,
    pub shown: Vec<String>,
}

/// The info strings of shell blocks that must be run or marked.
const SHELL: &[&str] = &["sh", "bash", "shell", "zsh"];

/// `<!-- KEY: VALUE -->` on one line: VALUE.
fn comment<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let inner = line.trim().strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    inner.strip_prefix(key)?.strip_prefix(':').map(str::trim)
}

/// The items of `text` (a page), or what is wrong with its markers.
pub fn parse(text: &str) -> Result<Vec<Item>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut items = Vec::new();
    // An `untested` marker waiting for its block: its line and reason.
    let mut untested: Option<(usize, String)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let number = i + 1;
        let trimmed = line.trim_start();
        if let Some(reason) = comment(line, "untested") {
            if reason.is_empty() {
                return Err(format!("line {number}: `<!-- untested: -->` without a reason"));
            }
            untested = Some((number, reason.to_owned()));
        } else if let Some(directive) = comment(line, "doc-test") {
            items.push(directive_item(number, directive)?);
        } else if let Some(info) = trimmed.strip_prefix("```") {
            let indent = line.len() - trimmed.len();
            let info = info.trim();
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && !lines[end].trim_start().starts_with("```") {
                end += 1;
            }
            if end == lines.len() {
                return Err(format!("line {number}: the block never ends"));
            }
            let body: Vec<&str> = lines[start..end].iter().map(|l| unindent(l, indent)).collect();
            let marker = untested.take();
            if info == "console" {
                if let Some((at, _)) = marker {
                    return Err(format!("line {at}: an `untested` marker before a console block (line {number}), which is run"));
                }
                items.push(Item::Console { line: number, commands: commands(start + 1, &body)? });
            } else if SHELL.contains(&info) {
                items.push(Item::Shell { line: number, untested: marker.map(|(_, why)| why) });
            } else if let Some((at, _)) = marker {
                return Err(format!("line {at}: an `untested` marker before a block of {info:?} (line {number}), not a shell block"));
            }
            i = end;
        } else if let Some((at, _)) = &untested
            && !trimmed.is_empty()
            && !trimmed.starts_with("<!--")
        {
            return Err(format!("line {at}: an `untested` marker not followed by a shell block"));
        }
        i += 1;
    }
    match untested {
        Some((at, _)) => Err(format!("line {at}: an `untested` marker at the end of the page")),
        None => Ok(items),
    }
}

/// `line` without up to `indent` leading spaces (a block in a list item).
fn unindent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

fn directive_item(line: usize, directive: &str) -> Result<Item, String> {
    if let Some(rest) = directive.strip_prefix("approve ") {
        let (user, password) = rest.trim().split_once(' ').ok_or_else(|| format!("line {line}: `approve USER PASSWORD`"))?;
        Ok(Item::Approve { line, user: user.to_owned(), password: password.trim().to_owned() })
    } else if let Some(path) = directive.strip_prefix("after ") {
        Ok(Item::After { line, path: path.trim().to_owned() })
    } else {
        Err(format!("line {line}: unknown doc-test directive {directive:?} (approve, after)"))
    }
}

/// The commands of a console block whose first body line is `first`.
fn commands(first: usize, body: &[&str]) -> Result<Vec<Command>, String> {
    let mut out: Vec<Command> = Vec::new();
    for (k, line) in body.iter().enumerate() {
        let number = first + k;
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(Command { line: number, text: cmd.to_owned(), shown: Vec::new() });
        } else if let Some(more) = line.strip_prefix("> ").or((*line == ">").then_some("")) {
            let Some(cmd) = out.last_mut().filter(|c| c.shown.is_empty()) else {
                return Err(format!("line {number}: a `> ` continuation line that continues no command"));
            };
            cmd.text.push('\n');
            cmd.text.push_str(more);
        } else {
            let Some(cmd) = out.last_mut() else {
                return Err(format!("line {number}: output before the block's first `$ ` command"));
            };
            cmd.shown.push((*line).to_owned());
        }
    }
    if out.is_empty() {
        return Err(format!("line {}: a console block without a `$ ` command", first - 1));
    }
    if let Some(c) = out.iter().find(|c| c.text.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))) {
        return Err(format!("line {}: a command of only a comment (say it in the text around the block)", c.line));
    }
    Ok(out)
}

/// A line that stands for any lines.
fn is_any_lines(line: &str) -> bool {
    matches!(line.trim(), "..." | "…")
}

/// Whether `text` is `pattern`, where `…` and `[..]` stand for any text.
pub fn line_matches(pattern: &str, text: &str) -> bool {
    let normal = pattern.replace("[..]", "…");
    let parts: Vec<&str> = normal.split('…').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Lines without trailing blanks, and without trailing empty lines.
pub fn tidy<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
    let mut out: Vec<String> = lines.iter().map(|l| l.as_ref().trim_end().to_owned()).collect();
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

/// Whether the printed lines are what the shown ones say.
pub fn output_matches(shown: &[String], printed: &[String]) -> bool {
    fn from(shown: &[String], printed: &[String]) -> bool {
        match shown.split_first() {
            None => printed.is_empty(),
            Some((first, rest)) if is_any_lines(first) => (0..=printed.len()).any(|skip| from(rest, &printed[skip..])),
            Some((first, rest)) => printed.split_first().is_some_and(|(p, more)| line_matches(first, p) && from(rest, more)),
        }
    }
    from(shown, printed)
}

/// A line diff of shown against printed: `-` shown only, `+` printed only,
/// two spaces both (by the wildcard match); the shown lines that stand for
/// any lines are kept as context, so a `+` line beside one may be fine.
pub fn diff(shown: &[String], printed: &[String]) -> String {
    let (n, m) = (shown.len(), printed.len());
    // lcs[i][j]: the longest common run of shown[i..] and printed[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if !is_any_lines(&shown[i]) && line_matches(&shown[i], &printed[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && is_any_lines(&shown[i]) {
            out.push_str(&format!("  {}\n", shown[i]));
            i += 1;
        } else if i < n && j < m && line_matches(&shown[i], &printed[j]) && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            out.push_str(&format!("  {}\n", printed[j]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+ {}\n", printed[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", shown[i]));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn wildcards_in_a_line() {
        assert!(line_matches("created user alice (local:{…})", "created user alice (local:{de21-aa})"));
        assert!(line_matches("created user alice (local:{[..]})", "created user alice (local:{})"));
        assert!(!line_matches("created user alice (local:{…})", "created user bob (local:{x})"));
        assert!(line_matches("…", ""));
        assert!(line_matches("a…b…c", "abc"));
        assert!(!line_matches("a…bb", "ab"));
        assert!(line_matches("exact", "exact"));
        assert!(!line_matches("exact", "exact "));
    }

    #[test]
    fn wildcard_lines() {
        assert!(output_matches(&v(&["a", "...", "d"]), &v(&["a", "b", "c", "d"])));
        assert!(output_matches(&v(&["a", "…", "b"]), &v(&["a", "b"])));
        assert!(!output_matches(&v(&["a", "…", "b"]), &v(&["a", "c"])));
        assert!(output_matches(&v(&[]), &v(&[])));
        assert!(!output_matches(&v(&[]), &v(&["x"])));
        assert!(output_matches(&v(&["…"]), &v(&["x", "y"])));
    }

    #[test]
    fn the_diff_marks_what_differs() {
        let d = diff(&v(&["a", "b…", "c"]), &v(&["a", "bee", "see"]));
        assert_eq!(d, "  a\n  bee\n+ see\n- c\n");
    }

    #[test]
    fn a_page_and_its_markers() {
        let page = "# T\n<!-- doc-test: after ../a.md -->\n```console\n$ echo a \\\n>   b\na b\n$ true\n```\n\n\
                    <!-- untested: needs systemd -->\n\n```sh\nsystemctl start x\n```\n```sh\nls\n```\n\
                    <!-- doc-test: approve alice a long passphrase -->\n   ```console\n   $ echo x\n   x\n   ```\n```toml\n[a]\n```\n";
        let items = parse(page).unwrap();
        assert_eq!(
            items,
            vec![
                Item::After { line: 2, path: "../a.md".into() },
                Item::Console {
                    line: 3,
                    commands: vec![
                        Command { line: 4, text: "echo a \\\n  b".into(), shown: v(&["a b"]) },
                        Command { line: 7, text: "true".into(), shown: vec![] },
                    ]
                },
                Item::Shell { line: 12, untested: Some("needs systemd".into()) },
                Item::Shell { line: 15, untested: None },
                Item::Approve { line: 18, user: "alice".into(), password: "a long passphrase".into() },
                Item::Console { line: 19, commands: vec![Command { line: 20, text: "echo x".into(), shown: v(&["x"]) }] },
            ]
        );
        assert!(parse("<!-- untested: x -->\n```console\n$ true\n```\n").unwrap_err().contains("console block"));
        assert!(parse("<!-- untested: x -->\ntext\n```sh\nx\n```\n").unwrap_err().contains("not followed"));
        assert!(parse("```console\noutput\n```\n").unwrap_err().contains("before the block's first"));
        assert!(parse("<!-- doc-test: frobnicate -->\n").unwrap_err().contains("unknown"));
        assert!(parse("```console\n$ # a note\n```\n").unwrap_err().contains("only a comment"));
    }
}
