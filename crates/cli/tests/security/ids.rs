//! The security suite's table (book/src/security/suite.md) of ids against the tests: every id of the table has
//! a test named by it (`c3_oracles_and_timing`; a test that covers several
//! names each, `j5_j6_j9_…`, `b1p_…_and_b3p_…`), is listed under "Not
//! applicable here" with its reason, or is a check of `scripts/security`
//! itself (it prints `SECURITY <id>…`: the supply-chain checks, cargo-fuzz);
//! and every test named by an id has its row. Test files are read from
//! every crate's `tests/` directory, so an id's test may live in any of the
//! suites (the binary's here, the in-process one, the process tests).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `A1`, `B1p`, `C4b`, `G5`: a capital, digits, at most one small letter.
fn is_id(s: &str) -> bool {
    let mut c = s.chars();
    let Some(first) = c.next() else { return false };
    let rest: Vec<char> = c.collect();
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    first.is_ascii_uppercase() && digits >= 1 && rest.len() - digits <= 1 && rest[digits..].iter().all(char::is_ascii_lowercase)
}

/// The ids a test's name carries: its leading `x1_` parts and any that
/// follow an `and` (`b1p_parallel_polls_and_b3p_parallel_starts`).
fn ids_of_test(name: &str) -> Vec<String> {
    let upper = |part: &str| {
        let mut c = part.chars();
        c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
    };
    let parts: Vec<&str> = name.split('_').collect();
    let mut ids: Vec<String> = parts.iter().map(|p| upper(p)).take_while(|p| is_id(p)).collect();
    for w in parts.windows(2) {
        if w[0] == "and" && is_id(&upper(w[1])) {
            ids.push(upper(w[1]));
        }
    }
    ids
}

/// Ids, each with the line of suite.md it is on.
type Lines = Vec<(String, usize)>;

/// The ids of suite.md's table (`| A1 | … |`) and of its "Not
/// applicable here" list (`- **D5** …`).
fn security_md() -> (Lines, Lines) {
    let text = std::fs::read_to_string(root().join("book/src/security/suite.md")).unwrap();
    let (mut table, mut not_applicable) = (Vec::new(), Vec::new());
    // The list runs from its heading to the first line that is neither a
    // list item, an item's continuation nor blank.
    let mut in_na = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') {
            in_na = line.trim_start_matches('#').trim() == "Not applicable here";
        } else if in_na && !(line.is_empty() || line.starts_with("- ") || line.starts_with("  ")) {
            in_na = false;
        }
        if let Some(cell) = line.strip_prefix("| ").and_then(|l| l.split(" |").next())
            && is_id(cell.trim())
        {
            table.push((cell.trim().to_owned(), n + 1));
        }
        if in_na && let Some(id) = line.strip_prefix("- **").and_then(|l| l.split("**").next()) {
            not_applicable.push((id.to_owned(), n + 1));
        }
    }
    (table, not_applicable)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Test functions (`#[test]`, `#[tokio::test…]`) of every crate's tests,
/// by name, with the file each is in.
fn test_functions() -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        rust_files(&krate.path().join("tests"), &mut files);
    }
    let mut tests = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut pending = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[test]") || line.starts_with("#[tokio::test") {
                pending = true;
            } else if pending && let Some(rest) = line.split("fn ").nth(1).filter(|_| !line.starts_with("//")) {
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                tests.push((name, file.clone()));
                pending = false;
            }
        }
    }
    tests
}

#[test]
fn every_security_id_has_its_test_and_every_id_test_its_row() {
    let (table, not_applicable) = security_md();
    assert!(table.len() >= 60, "suite.md's table of ids not found or cut short: {table:?}");
    let scripts = std::fs::read_to_string(root().join("scripts/security")).unwrap();

    let mut by_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, file) in test_functions() {
        for id in ids_of_test(&name) {
            by_id.entry(id).or_default().push(format!("{name} ({})", file.display()));
        }
    }

    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (id, line) in &table {
        if !seen.insert(id.clone()) {
            problems.push(format!("suite.md:{line}: {id} has two rows"));
        }
    }
    let na: BTreeSet<&str> = not_applicable.iter().map(|(id, _)| id.as_str()).collect();
    for (id, line) in &not_applicable {
        if seen.contains(id) {
            problems.push(format!("suite.md:{line}: {id} is in the table and listed as not applicable"));
        }
        if let Some(tests) = by_id.get(id) {
            problems.push(format!("suite.md:{line}: {id} is listed as not applicable, yet has tests: {tests:?}"));
        }
    }
    for (id, line) in &table {
        let by_script = scripts.contains(&format!("SECURITY {id}"));
        if !by_id.contains_key(id) && !by_script {
            problems.push(format!("suite.md:{line}: {id} has no test named by it (e.g. `fn {}_…`)", id.to_lowercase()));
        }
    }
    for (id, tests) in &by_id {
        if !seen.contains(id) && !na.contains(id.as_str()) {
            problems.push(format!("{id} is not in suite.md's table, yet these tests carry it: {tests:?}"));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    eprintln!(
        "{} ids in suite.md's table, {} with tests ({} test functions), {} checked by scripts/security; {} not applicable",
        table.len(),
        table.iter().filter(|(id, _)| by_id.contains_key(id)).count(),
        by_id.values().flatten().collect::<BTreeSet<_>>().len(),
        table.iter().filter(|(id, _)| !by_id.contains_key(id)).count(),
        not_applicable.len()
    );
}

#[test]
fn a_test_name_gives_its_ids() {
    assert_eq!(ids_of_test("c3_oracles_and_timing"), ["C3"]);
    assert_eq!(ids_of_test("j5_j6_j9_keys_rotate"), ["J5", "J6", "J9"]);
    assert_eq!(ids_of_test("b1p_parallel_polls_and_b3p_parallel_starts"), ["B1p", "B3p"]);
    assert_eq!(ids_of_test("c4b_anti_forgery_details_and_hsts"), ["C4b"]);
    assert_eq!(ids_of_test("m1_something"), ["M1"]);
    assert!(ids_of_test("an_http2_preface_is_not_served").is_empty());
    assert!(!is_id("G") && !is_id("GG5") && !is_id("G5ab") && is_id("G5a") && is_id("D1"));
}
