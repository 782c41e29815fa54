//! Sections of the docs that are generated from the code (marked
//! `<!-- generated: NAME -->` … `<!-- end generated -->`), and the check that keeps them current.
//! `COURIER_WRITE_DOCS=1 cargo test -p courier --lib generated` rewrites them.

use std::path::PathBuf;

use courier_domain::error::catalogue;

use courier_api::ApiError;
use courier_core::config::Config;
use courier_core::infra::settings::variables;

/// The table of every error code the API answers with, for `docs/errors.md`.
pub fn error_table() -> String {
    let mut table = String::from("| Code | Status | Meaning |\n|---|---|---|\n");
    for code in catalogue::<ApiError>() {
        table.push_str(&format!(
            "| `{}` | `{}` | {} |\n",
            code.code, code.status, code.meaning
        ));
    }
    table
}

/// The table of every environment variable the service reads, for `docs/configuration.md`.
pub fn configuration_table() -> String {
    let mut table = String::from("| Variable | Default | Meaning |\n|---|---|---|\n");
    for variable in variables::<Config>() {
        let default = match variable.default {
            Some(default) => format!("`{default}`"),
            None => "unset".to_owned(),
        };
        let meaning = variable.meaning.replace('\n', " ");
        table.push_str(&format!(
            "| `{}` | {default} | {meaning} |\n",
            variable.name
        ));
    }
    table
}

/// The docs file at `relative` (from the repository's root).
fn doc_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// `text` with the section `name` holding `content`; `None` when the markers are missing.
fn with_section(text: &str, name: &str, content: &str) -> Option<String> {
    let open = format!("<!-- generated: {name} -->\n");
    let close = "<!-- end generated -->";
    let start = text.find(&open)? + open.len();
    let end = start + text[start..].find(close)?;
    Some(format!("{}{content}{}", &text[..start], &text[end..]))
}

/// Fails when the section `name` of `relative` is not `content`, or rewrites it when
/// `COURIER_WRITE_DOCS` is set.
pub fn check_section(relative: &str, name: &str, content: &str) {
    let path = doc_path(relative);
    let text = std::fs::read_to_string(&path).expect("the docs file exists");
    let expected = with_section(&text, name, content)
        .unwrap_or_else(|| panic!("{relative} has no section `{name}`"));
    if expected == text {
        return;
    }
    if std::env::var_os("COURIER_WRITE_DOCS").is_some() {
        std::fs::write(&path, expected).expect("the docs file is writable");
        return;
    }
    panic!(
        "{relative} is stale: its `{name}` section is not what the code says; regenerate it with \
         `COURIER_WRITE_DOCS=1 cargo test -p courier --lib generated`"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_replaced_between_their_markers_only() {
        let text = "a\n<!-- generated: x -->\nold\n<!-- end generated -->\nb\n";
        assert_eq!(
            with_section(text, "x", "new\n").unwrap(),
            "a\n<!-- generated: x -->\nnew\n<!-- end generated -->\nb\n"
        );
        assert_eq!(with_section(text, "y", "new\n"), None);
    }

    #[test]
    fn generated_configuration_is_current() {
        check_section(
            "docs/configuration.md",
            "configuration",
            &configuration_table(),
        );
    }

    #[test]
    fn generated_error_codes_are_current() {
        check_section("docs/errors.md", "errors", &error_table());
    }
}
