//! The documentation cannot go stale silently: every file and folder of the repository that
//! README.md or a page of docs/ names, every link between them and every migration number
//! they cite exists.
//!
//! What counts as a name: an inline code span or a word of a code block that starts with one of
//! the repository's top-level folders (`host/`, `tests/`, `.ci/`, …), a code span that ends in a
//! file extension (`api/state.rs`, found anywhere its path ends so), a relative link, a migration
//! file (`0110_bookings_written_at_once.sql`) and "migration 0110". A name holding `NNNN`, `<`
//! or `…` stands for a file to be made, and is left alone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's top-level folders a name may start with.
const ROOTS: [&str; 9] = [
    "host/",
    "tests/",
    "plugins/",
    "wit/",
    "migrations/",
    "docs/",
    ".ci/",
    ".cargo/",
    "target/",
];

/// Extensions of the files a bare code span may name.
const EXTENSIONS: [&str; 10] = [
    ".rs", ".md", ".sql", ".toml", ".json", ".sh", ".wit", ".cfg", ".wasm", ".lock",
];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file and folder of the repository, as paths relative to it with `/`, folders ending in
/// `/`; build outputs and version control left out.
fn tree(root: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&relative)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), ".git" | "target" | "var" | "node_modules") {
                continue;
            }
            let path = relative.join(&name);
            let shown = path.to_string_lossy().replace('\\', "/");
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                found.insert(format!("{shown}/"));
                pending.push(path);
            } else {
                found.insert(shown);
            }
        }
    }
    found
}

/// The documents checked: README.md and every page of docs/.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is read")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
}

/// A name as written, cleaned of what follows the path: a line number, an anchor, a trailing
/// comma or full stop.
fn clean(word: &str) -> &str {
    let word = word.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ';' | '"' | '\''));
    let word = word.split(['#', '`']).next().unwrap_or(word);
    let word = match word.find(':') {
        Some(at) if word[at + 1..].starts_with(|c: char| c.is_ascii_digit()) => &word[..at],
        _ => word,
    };
    word.trim_end_matches('.')
}

fn stands_for_a_new_file(name: &str) -> bool {
    name.contains("NNNN") || name.contains('<') || name.contains('…') || name.contains('*')
}

/// The names in one document: `(line, name, whether it may be found by its ending)`.
fn names_in(text: &str) -> Vec<(usize, String, bool)> {
    let mut names = Vec::new();
    let mut in_block = false;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        let spans: Vec<&str> = if in_block {
            vec![line]
        } else {
            line.split('`').skip(1).step_by(2).collect()
        };
        for span in spans {
            for word in span.split_whitespace() {
                let name = clean(word);
                // URL paths (`/v1/jobs`), bare extensions (`.wasm`) and URLs name no file here.
                let not_a_file = name.starts_with('/')
                    || (name.starts_with('.') && !name.contains('/'))
                    || name.contains("://");
                if name.is_empty() || stands_for_a_new_file(name) || not_a_file {
                    continue;
                }
                if ROOTS.iter().any(|root| name.starts_with(root)) || name.starts_with("../") {
                    names.push((number, name.to_owned(), false));
                } else if !in_block
                    && span.split_whitespace().count() == 1
                    && EXTENSIONS.iter().any(|e| name.ends_with(e))
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
                {
                    names.push((number, name.to_owned(), true));
                }
            }
        }
        if !in_block {
            // Relative links: [text](target).
            for (at, _) in line.match_indices("](") {
                let rest = &line[at + 2..];
                let Some(end) = rest.find(')') else { continue };
                let target = rest[..end].split('#').next().unwrap_or("");
                if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                    names.push((number, format!("link:{target}"), false));
                }
            }
        }
    }
    names
}

/// The migration numbers a document cites: in migration file names and after "migration".
fn migrations_cited(text: &str) -> Vec<(usize, String)> {
    let mut cited = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, word) in words.iter().enumerate() {
            let word = word.rsplit('/').next().unwrap_or(word);
            let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_');
            let digits: String = word.chars().take_while(char::is_ascii_digit).collect();
            let file_name =
                digits.len() == 4 && word[4..].starts_with('_') && word.ends_with("sql");
            let after_the_word = digits.len() == 4
                && digits.len() == word.len()
                && i > 0
                && words[i - 1]
                    .trim_matches(|c: char| !c.is_ascii_alphabetic())
                    .to_ascii_lowercase()
                    .starts_with("migration");
            if file_name || after_the_word {
                cited.push((number + 1, digits));
            }
        }
    }
    cited
}

#[test]
fn every_file_folder_link_and_migration_the_docs_name_exists() {
    let root = repository();
    let tree = tree(&root);
    let migrations: BTreeSet<String> = tree
        .iter()
        .filter_map(|p| p.strip_prefix("migrations/"))
        .filter_map(|name| name.get(..4).map(str::to_owned))
        .collect();
    let mut missing = Vec::new();
    for document in documents(&root) {
        let text = std::fs::read_to_string(&document).expect("the document is read");
        let shown = document
            .strip_prefix(&root)
            .unwrap_or(&document)
            .display()
            .to_string();
        let folder = document.parent().expect("a document has a folder");
        for (line, name, by_ending) in names_in(&text) {
            let exists = if let Some(target) = name.strip_prefix("link:") {
                folder.join(target).exists()
            } else if name.starts_with("../") {
                // Beside the repository: the shared spec and data.
                root.join(&name).exists()
            } else if by_ending {
                // As the docs write a crate's files: `api/state.rs` is `host/api/src/state.rs`.
                let ending = format!("/{name}");
                tree.iter().any(|p| {
                    p == &name || p.ends_with(&ending) || p.replace("/src/", "/").ends_with(&ending)
                })
            } else {
                tree.contains(&name)
                    || tree.contains(&format!("{name}/"))
                    || (name.ends_with('/') && tree.contains(&name))
            };
            // Build outputs are made by the commands the documents describe.
            let built = name.starts_with("target/") || name.contains("/target");
            if !exists && !built {
                missing.push(format!("{shown}:{line}: {name}"));
            }
        }
        for (line, number) in migrations_cited(&text) {
            if !migrations.contains(&number) {
                missing.push(format!("{shown}:{line}: migration {number}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the documents name what does not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn names_are_found_in_spans_blocks_and_links() {
    let text = "See `host/store/src/jobs.rs:12`, `api/state.rs` and [errors](errors.md#codes).\n\
                ```\nmigrations/0110_bookings_written_at_once.sql  the booking\n```\n\
                Migration 0120 and `migrations/NNNN_new.sql` and `cargo test -p courier`.";
    let names: Vec<(String, bool)> = names_in(text).into_iter().map(|(_, n, e)| (n, e)).collect();
    assert_eq!(
        names,
        [
            ("host/store/src/jobs.rs".to_owned(), false),
            ("api/state.rs".to_owned(), true),
            ("link:errors.md".to_owned(), false),
            (
                "migrations/0110_bookings_written_at_once.sql".to_owned(),
                false
            ),
        ]
    );
    let numbers: Vec<String> = migrations_cited(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(numbers, ["0110", "0120"]);
}
