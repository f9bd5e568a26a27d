//! The README's table of variables, made from their declarations. The test fails when the
//! README has drifted; `scripts/readme-variables` rewrites the table (`UPDATE_README=1`).

use super::VARIABLES;

const HEADER: &str = "| variable | default | meaning |\n|---|---|---|\n";

/// One row per variable, in declaration order.
fn table() -> String {
    let mut table = String::from(HEADER);
    for v in VARIABLES {
        let default = match v.default {
            "" => "—".to_owned(),
            prose if prose.starts_with("from ") => prose.to_owned(),
            value => format!("`{value}`"),
        };
        let secret = if v.secret {
            " (secret: never logged)"
        } else {
            ""
        };
        table.push_str(&format!(
            "| `{}` | {default} | {}{secret} |\n",
            v.name, v.help
        ));
    }
    table
}

#[test]
fn the_readme_table_is_made_from_the_declarations() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let start = readme
        .find(HEADER)
        .expect("the README has a table of variables");
    let end = readme[start..]
        .find("\n\n")
        .map_or(readme.len(), |n| start + n + 1);
    let expected = table();
    if std::env::var_os("UPDATE_README").is_some() {
        let updated = format!("{}{expected}{}", &readme[..start], &readme[end..]);
        std::fs::write(path, updated).expect("write README.md");
        return;
    }
    assert!(
        readme[start..end] == expected,
        "README.md's table of variables differs from config::variables; run scripts/readme-variables"
    );
}
