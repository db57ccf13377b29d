//! `strongroom config example`: a `strongroom.toml` made from the settings
//! table ([`SETTINGS`]), every setting commented out with its meaning, its
//! default, its variable and its flag; the Debian package's
//! `/etc/strongroom/strongroom.toml` is this file. Settings given with
//! `--set KEY=VALUE` are written in force (their table's header too).

use super::{ConfigError, Kind, SETTINGS, Setting, value_of};

/// Where the example's lines are wrapped.
const WIDTH: usize = 100;

/// The table a key lives in (`""` for the top level), and its header.
fn table_of(key: &str) -> (&str, String) {
    if key.starts_with("keys.pkcs11.") {
        return ("keys.pkcs11", "[[keys.pkcs11]]".to_owned());
    }
    match key.split_once('.') {
        Some((table, _)) => (table, format!("[{table}]")),
        None => ("", String::new()),
    }
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` as the TOML value of a setting of `kind` (checked as the
/// environment's text is: a bool, a number, a list), or why not.
fn toml_value(kind: Kind, text: &str, from: &'static str) -> Result<String, ConfigError> {
    Ok(match value_of(kind, text, from)? {
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().filter_map(toml::Value::as_str).map(quoted).collect();
            format!("[{}]", items.join(", "))
        }
        toml::Value::String(s) => quoted(&s),
        _ => quoted(text),
    })
}

/// The default as a TOML value when it is one (`3600`, `"127.0.0.1:8443"`),
/// else `None` (a description such as `none: no directory`).
fn literal_default(s: &Setting) -> Option<String> {
    let d = s.default;
    match s.kind {
        Kind::List if d == "none" => Some("[]".to_owned()),
        // `7776000 (90 days)`: the number.
        Kind::Bool | Kind::Seconds | Kind::Integer => toml_value(s.kind, d.split_whitespace().next().unwrap_or(d), "default").ok(),
        Kind::Text | Kind::Path | Kind::Name => {
            let described = d.is_empty() || d == "none" || d.contains(' ') || d.contains('<') || d.starts_with("DATA_DIR");
            if described { None } else { Some(quoted(d)) }
        }
        Kind::List => None,
    }
}

/// `text` as `# ` comment lines of at most [`WIDTH`] characters.
fn comment(out: &mut String, text: &str) {
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() > 1 && line.len() + 1 + word.len() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

/// The example file. `set` holds (TOML key, text) pairs written in force;
/// an unknown key, a `[[keys.pkcs11]]` key or a value its kind refuses is
/// an error naming it.
pub fn example(version: &str, set: &[(String, String)]) -> Result<String, ConfigError> {
    let mut values: Vec<(&'static Setting, String)> = Vec::new();
    for (key, text) in set {
        let s = SETTINGS
            .iter()
            .find(|s| s.key == key.as_str())
            .ok_or_else(|| ConfigError::Invalid { name: "--set", message: format!("no setting {key}") })?;
        if s.key.starts_with("keys.pkcs11.") {
            return Err(ConfigError::Invalid { name: "--set", message: format!("{key}: a [[keys.pkcs11]] key is written by hand") });
        }
        values.retain(|(v, _)| v.key != s.key);
        values.push((s, toml_value(s.kind, text, s.key)?));
    }
    let mut out = String::new();
    comment(
        &mut out,
        &format!(
            "strongroom.toml: the configuration of `strongroom serve` and `strongroom admin` (strongroom.toml(5)). \
             Made by `strongroom config example` of strongroom {version} from its settings table: every setting, \
             with what it does and its default; a commented-out setting has its default."
        ),
    );
    comment(
        &mut out,
        "The STRONGROOM_* variables override this file and the flags override both. Unknown keys are refused. \
         Check a change before a restart: strongroom config check --config FILE.",
    );
    comment(
        &mut out,
        "Secrets do not belong here: the master key (STRONGROOM_MASTER_KEY) and a database URL with a password go in \
         the environment (the package's service reads /etc/strongroom/env, mode 0600); passwords of the directory \
         and the OpenID provider in files of mode 0600 (*_file).",
    );
    let mut table = "";
    for s in SETTINGS {
        let (t, header) = table_of(s.key);
        if t != table {
            table = t;
            let in_force = values.iter().any(|(v, _)| table_of(v.key).0 == t);
            out.push('\n');
            out.push_str(&if in_force { format!("{header}\n") } else { format!("#{header}\n") });
        }
        out.push('\n');
        comment(&mut out, s.help);
        let mut how = Vec::new();
        if !s.default.is_empty() {
            how.push(format!("Default: {}.", s.default));
        }
        if let Some(var) = s.env {
            how.push(format!("Variable: {var}."));
        }
        if let Some(f) = s.flag {
            how.push(format!("Flag: --{}.", f.long));
        }
        how.push(format!("Value: {}.", if s.kind == Kind::Name { "text" } else { s.kind.accepted() }));
        comment(&mut out, &how.join(" "));
        let name = s.key.rsplit('.').next().unwrap_or(s.key);
        match values.iter().find(|(v, _)| v.key == s.key) {
            Some((_, value)) => out.push_str(&format!("{name} = {value}\n")),
            None => match literal_default(s) {
                Some(value) => out.push_str(&format!("#{name} = {value}\n")),
                None => out.push_str(&format!("#{name} =\n")),
            },
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RawConfig;

    fn parse(text: &str) -> RawConfig {
        let table: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        RawConfig::from_table(table, None).unwrap()
    }

    #[test]
    fn every_setting_is_in_the_example_commented_out() {
        let text = example("0.0.0", &[]).unwrap();
        for s in SETTINGS {
            let name = s.key.rsplit('.').next().unwrap_or(s.key);
            assert!(text.contains(&format!("\n#{name} =")), "{} missing", s.key);
            assert!(text.contains(s.help.split_whitespace().next().unwrap_or("")));
            if let Some(var) = s.env {
                assert!(text.contains(var), "{var} missing");
            }
        }
        assert!(text.lines().all(|l| l.is_empty() || l.starts_with('#')), "everything is commented out");
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH + 40), "short lines");
        // An all-comment file is the defaults.
        assert_eq!(parse(&text).validate().unwrap(), RawConfig::default().validate().unwrap());
    }

    #[test]
    fn the_written_defaults_are_the_defaults() {
        // Every setting whose default is a value, uncommented (with its table's
        // header), gives the configuration of an empty file.
        let text = example("0.0.0", &[]).unwrap();
        let mut on = String::new();
        let mut skip = false;
        for line in text.lines() {
            if line.starts_with("#[") {
                // Tables whose settings depend on others being set stay out.
                skip = ["#[ldap]", "#[oidc]", "#[[keys.pkcs11]]", "#[certificate]"].contains(&line);
                if !skip {
                    on.push_str(&line[1..]);
                    on.push('\n');
                }
            } else if !skip && line.starts_with('#') && line.contains(" = ") && !line.starts_with("# ") {
                on.push_str(&line[1..]);
                on.push('\n');
            }
        }
        assert!(on.contains("listen = \"127.0.0.1:8443\"") && on.contains("access_validity = 3600"), "{on}");
        assert_eq!(parse(&on).validate().unwrap(), RawConfig::default().validate().unwrap(), "{on}");
    }

    #[test]
    fn set_values_are_in_force_and_checked() {
        let set =
            |pairs: &[(&str, &str)]| -> Vec<(String, String)> { pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect() };
        let text = example(
            "0.0.0",
            &set(&[("data_dir", "/var/lib/strongroom"), ("tokens.access_validity", "600"), ("trusted_proxies", "10.0.0.0/8, ::1")]),
        )
        .unwrap();
        assert!(text.contains("\n[tokens]\n"), "{text}");
        assert!(text.contains("\n#[metrics]\n"), "{text}");
        let c = parse(&text).validate().unwrap();
        assert_eq!(c.data_dir, std::path::PathBuf::from("/var/lib/strongroom"));
        assert_eq!(c.tokens.access_validity, 600);
        assert_eq!(c.trusted_proxies.len(), 2);
        for bad in [("colour", "blue"), ("tokens.access_validity", "soon"), ("keys.pkcs11.name", "hsm")] {
            assert!(example("0.0.0", &set(&[bad])).is_err(), "{bad:?} accepted");
        }
        assert_eq!(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
