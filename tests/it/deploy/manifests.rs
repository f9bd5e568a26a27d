//! The committed deploy manifests (`fly.toml`, `render.yaml`, `railway.toml`, `heroku.yml`,
//! `app.json`, `docker-compose.yml`, Dokku's `app.json`) and the `Dockerfile`, read as their
//! hosts read them, held to what Bindery depends on: the release command and each command a
//! host runs (run here with the real binary, as the image's ENTRYPOINT would take it), the
//! health path, the port, the volume at the data directory, the direct database URL, and
//! variables Bindery knows. The hosts' own schemas are not reachable from here; these checks
//! stand in for them. `scripts/container` runs the same commands in the built image.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;
use yaml_rust2::{Yaml, YamlLoader};

use crate::common::{BIN, command};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn toml_file(path: &str) -> toml::Table {
    read(path)
        .parse::<toml::Table>()
        .unwrap_or_else(|e| panic!("{path} is not TOML: {e}"))
}

fn yaml_file(path: &str) -> Yaml {
    let mut docs = YamlLoader::load_from_str(&read(path))
        .unwrap_or_else(|e| panic!("{path} is not YAML: {e}"));
    assert_eq!(docs.len(), 1, "{path} holds one document");
    docs.remove(0)
}

fn json_file(path: &str) -> Json {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"))
}

/// A TOML value by dotted path.
fn at<'a>(table: &'a toml::Table, path: &str) -> &'a toml::Value {
    let mut parts = path.split('.');
    let first = parts.next().expect("a path");
    let mut value = table
        .get(first)
        .unwrap_or_else(|| panic!("no {path}: no {first}"));
    for part in parts {
        value = value
            .get(part)
            .unwrap_or_else(|| panic!("no {path}: no {part}"));
    }
    value
}

fn str_at<'a>(table: &'a toml::Table, path: &str) -> &'a str {
    at(table, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not a string"))
}

/// The image's data directory (its working directory's `./data`), where volumes go.
const IMAGE_DATA_DIR: &str = "/data";
/// The port the image listens on unless the host sets PORT.
const IMAGE_PORT: i64 = 8080;

/// Runs a command line as a host hands it to the image: the ENTRYPOINT (the binary) with the
/// manifest's words after it. `migrate` runs for real, on a fresh data directory; anything
/// else is asked for its `--help`, which names the subcommand it resolved to.
fn run_as_the_image_would(line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = command(dir.path());
    cmd.args(&words);
    let migrate = words.last() == Some(&"migrate");
    if !migrate {
        cmd.arg("--help");
    }
    let out = cmd.output().expect("run bindery");
    assert!(
        out.status.success(),
        "{line:?} as the image's command exits {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    if migrate {
        assert!(
            dir.path().join("bindery.db").exists(),
            "{line:?} did not migrate"
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The same, for a host that hands the whole command line over as one argument.
fn run_as_one_argument(line: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = command(dir.path()).arg(line).output().expect("run bindery");
    assert!(
        out.status.success(),
        "{line:?} as one argument exits {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Dockerfile's instructions, continuation lines joined, comments dropped.
fn dockerfile() -> Vec<String> {
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in read("Dockerfile").lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                if !current.trim().is_empty() {
                    instructions.push(current.trim().to_owned());
                }
                current.clear();
            }
        }
    }
    instructions
}

fn instruction<'a>(instructions: &'a [String], keyword: &str) -> Vec<&'a str> {
    instructions
        .iter()
        .filter_map(|i| i.strip_prefix(keyword).filter(|rest| rest.starts_with(' ')))
        .map(str::trim)
        .collect()
}

/// A Dockerfile ARG's default.
fn arg_default(instructions: &[String], name: &str) -> String {
    instruction(instructions, "ARG")
        .into_iter()
        .find_map(|a| a.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no ARG {name}=…"))
        .to_owned()
}

/// The release that rust-toolchain.toml pins.
fn pinned_rust() -> String {
    str_at(&toml_file("rust-toolchain.toml"), "toolchain.channel").to_owned()
}

#[test]
fn the_dockerfile_builds_on_every_hosts_builder_and_keeps_the_image_contract() {
    let text = read("Dockerfile");
    let instructions = dockerfile();
    // Nothing only BuildKit understands: `az acr build` and others use the classic builder.
    assert!(
        !instructions.iter().any(|i| i.contains("--mount")),
        "RUN --mount needs BuildKit"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("# syntax=")),
        "a syntax directive asks BuildKit for a frontend"
    );
    assert!(
        !instructions
            .iter()
            .any(|i| i.starts_with("RUN") && i.contains("<<")),
        "heredocs need BuildKit"
    );
    // Railway's builder refuses VOLUME and Heroku ignores it; compose mounts the volume.
    assert!(instruction(&instructions, "VOLUME").is_empty());

    // Current bases: Debian 13 for both stages, the Rust release of rust-toolchain.toml.
    let rust = arg_default(&instructions, "RUST_IMAGE");
    let runtime = arg_default(&instructions, "RUNTIME_IMAGE");
    assert!(
        rust.ends_with(&format!("rust:{}-slim-trixie", pinned_rust())),
        "{rust}"
    );
    assert_eq!(runtime, "gcr.io/distroless/cc-debian13:nonroot");

    // The contract: the ENTRYPOINT is the binary, the command its arguments, `bindery` on PATH.
    assert_eq!(
        instruction(&instructions, "ENTRYPOINT"),
        [r#"["/usr/local/bin/bindery"]"#]
    );
    assert_eq!(instruction(&instructions, "CMD"), [r#"["serve"]"#]);
    let env = instruction(&instructions, "ENV").join(" ");
    let path = env
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("PATH="))
        .expect("ENV PATH");
    assert!(path.split(':').any(|d| d == "/usr/local/bin"), "{path}");
    assert!(env.contains(&format!("PORT={IMAGE_PORT}")), "{env}");
    assert_eq!(
        instruction(&instructions, "EXPOSE"),
        [IMAGE_PORT.to_string()]
    );
    assert_eq!(instruction(&instructions, "WORKDIR").last(), Some(&"/"));
    assert!(
        instructions
            .iter()
            .any(|i| i.contains(&format!("--chown=65532:65532 /out/data {IMAGE_DATA_DIR}"))),
        "the data directory belongs to the image's user"
    );
    // The default command, the way the image runs it.
    let help = run_as_the_image_would("serve");
    assert!(help.contains("Run the web server and its worker"), "{help}");
}

#[test]
fn the_toolchain_is_pinned_once_for_every_build() {
    let pinned = pinned_rust();
    assert!(
        pinned.split('.').count() == 3,
        "rust-toolchain.toml pins a release: {pinned}"
    );
    // The Heroku/Dokku buildpack reads RustConfig (a shell file it sources).
    let config = read("RustConfig");
    let value = |name: &str| {
        config
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(|v| v.trim_matches('"').to_owned())
            .unwrap_or_else(|| panic!("RustConfig sets no {name}"))
    };
    assert_eq!(value("VERSION"), pinned);
    let flags = value("RUST_CARGO_BUILD_FLAGS");
    assert!(
        flags.split_whitespace().any(|f| f == "--release")
            && flags.split_whitespace().any(|f| f == "--locked"),
        "{flags}"
    );
    // The release the machine building this test has is the one pinned.
    let out = Command::new("rustc")
        .arg("--version")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("rustc --version");
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        version.starts_with(&format!("rustc {pinned} ")),
        "{version}"
    );
}

#[test]
fn fly_toml_releases_checks_and_stops_as_bindery_needs() {
    let fly = toml_file("fly.toml");
    // The release command, as Fly hands it to the image's ENTRYPOINT.
    let release = str_at(&fly, "deploy.release_command");
    run_as_the_image_would(release);
    run_as_one_argument(release);
    assert!(repo(str_at(&fly, "build.dockerfile")).is_file());
    assert_eq!(
        at(&fly, "http_service.internal_port").as_integer(),
        Some(IMAGE_PORT)
    );
    assert_eq!(str_at(&fly, "http_service.auto_stop_machines"), "off");
    let checks = at(&fly, "http_service.checks").as_array().expect("checks");
    assert!(
        checks
            .iter()
            .any(|c| c.get("path").and_then(|p| p.as_str()) == Some("/readyz")),
        "{checks:?}"
    );
    assert_eq!(str_at(&fly, "kill_signal"), "SIGTERM");
    assert!(at(&fly, "kill_timeout").as_integer() > Some(25));
    // The volume variant, commented out in the file: the volume goes at the data directory.
    let text = read("fly.toml");
    assert!(
        text.contains(&format!("#   destination = \"{IMAGE_DATA_DIR}\"")),
        "the volume variant mounts {IMAGE_DATA_DIR}"
    );
}

#[test]
fn heroku_yml_builds_the_image_and_releases_with_migrate() {
    let heroku = yaml_file("heroku.yml");
    assert_eq!(
        heroku["build"]["docker"]["web"].as_str(),
        Some("Dockerfile")
    );
    assert_eq!(heroku["release"]["image"].as_str(), Some("web"));
    let commands = heroku["release"]["command"]
        .as_vec()
        .expect("release command");
    assert_eq!(commands.len(), 1);
    let release = commands[0].as_str().expect("a string");
    run_as_the_image_would(release);
    run_as_one_argument(release);
    // No run section: the image's own command (serve) on Heroku's PORT.
    assert!(heroku["run"].is_badvalue(), "{:?}", heroku["run"]);
}

#[test]
fn app_json_deploys_the_container_with_a_first_admin() {
    let app = json_file("app.json");
    assert_eq!(app["stack"], "container", "built from heroku.yml");
    assert!(app.get("buildpacks").is_none());
    assert!(repo("heroku.yml").is_file());
    let addons = app["addons"].as_array().expect("addons");
    assert!(
        addons.iter().any(|a| a["plan"]
            .as_str()
            .is_some_and(|p| p.starts_with("heroku-postgresql"))
            && a["as"] == "DATABASE"),
        "the database add-on sets DATABASE_URL (direct, not a pooler's): {addons:?}"
    );
    let env = app["env"].as_object().expect("env");
    assert_eq!(env["BINDERY_ADMIN_TOKEN"]["generator"], "secret");
    assert_eq!(
        env["BLOB_URL"]["required"], true,
        "Heroku's disk is thrown away"
    );
    for name in env.keys() {
        assert!(
            known_variable(name),
            "app.json sets {name}, which Bindery does not read"
        );
    }
    assert!(app["formation"]["web"].is_object());
}

#[test]
fn render_yaml_is_a_docker_web_service_on_the_direct_database_url() {
    let render = yaml_file("render.yaml");
    let services = render["services"].as_vec().expect("services");
    assert_eq!(services.len(), 1);
    let web = &services[0];
    assert_eq!(web["type"].as_str(), Some("web"));
    assert_eq!(web["runtime"].as_str(), Some("docker"));
    assert!(repo(web["dockerfilePath"].as_str().expect("dockerfilePath")).is_file());
    assert_eq!(web["healthCheckPath"].as_str(), Some("/readyz"));
    let vars = web["envVars"].as_vec().expect("envVars");
    let var = |key: &str| {
        vars.iter()
            .find(|v| v["key"].as_str() == Some(key))
            .unwrap_or_else(|| panic!("render.yaml sets no {key}"))
    };
    let database = &var("DATABASE_URL")["fromDatabase"];
    // connectionString is the internal URL, straight to the server.
    assert_eq!(database["property"].as_str(), Some("connectionString"));
    let databases = render["databases"].as_vec().expect("databases");
    assert!(databases.iter().any(|d| d["name"] == database["name"]));
    assert_eq!(
        var("BINDERY_ADMIN_TOKEN")["generateValue"].as_bool(),
        Some(true)
    );
    assert_eq!(var("BLOB_URL")["sync"].as_bool(), Some(false));
    for v in vars {
        let key = v["key"].as_str().expect("key");
        assert!(
            known_variable(key),
            "render.yaml sets {key}, which Bindery does not read"
        );
    }
}

#[test]
fn railway_toml_builds_the_dockerfile_and_checks_readyz() {
    let railway = toml_file("railway.toml");
    assert_eq!(str_at(&railway, "build.builder"), "DOCKERFILE");
    assert!(repo(str_at(&railway, "build.dockerfilePath")).is_file());
    assert_eq!(str_at(&railway, "deploy.healthcheckPath"), "/readyz");
    assert_eq!(str_at(&railway, "deploy.restartPolicyType"), "ON_FAILURE");
    // No start command: the image's own (serve). `railway run`-style overrides are commands
    // for the image, as below.
    assert!(
        railway
            .get("deploy")
            .and_then(|d| d.get("startCommand"))
            .is_none()
    );
    run_as_the_image_would("bindery token create alice");
}

#[test]
fn docker_compose_runs_migrate_then_serve_on_postgres_with_volumes() {
    let compose = yaml_file("docker-compose.yml");
    let services = &compose["services"];
    let bindery = &services["bindery"];
    let migrate = &services["migrate"];
    let postgres = &services["postgres"];

    // Each service's `command:`, as compose hands it to the image's ENTRYPOINT.
    let serve = bindery["command"].as_str().expect("bindery's command");
    let help = run_as_the_image_would(serve);
    assert!(help.contains("Run the web server and its worker"), "{help}");
    run_as_the_image_would(migrate["command"].as_str().expect("migrate's command"));
    assert_eq!(
        bindery["depends_on"]["migrate"]["condition"].as_str(),
        Some("service_completed_successfully")
    );
    assert_eq!(
        migrate["depends_on"]["postgres"]["condition"].as_str(),
        Some("service_healthy")
    );

    // The port and the volume at the data directory.
    let ports = bindery["ports"].as_vec().expect("ports");
    assert!(
        ports
            .iter()
            .filter_map(Yaml::as_str)
            .any(|p| p.ends_with(&format!(":{IMAGE_PORT}"))),
        "{ports:?}"
    );
    for service in [bindery, migrate] {
        let volumes = service["volumes"].as_vec().expect("volumes");
        assert!(
            volumes
                .iter()
                .filter_map(Yaml::as_str)
                .any(|v| v == format!("bindery-data:{IMAGE_DATA_DIR}")),
            "{volumes:?}"
        );
    }
    let postgres_volumes = postgres["volumes"].as_vec().expect("postgres volumes");
    assert!(
        postgres_volumes
            .iter()
            .filter_map(Yaml::as_str)
            .any(|v| v.ends_with(":/var/lib/postgresql/data"))
    );
    let named = compose["volumes"].as_hash().expect("volumes");
    assert!(named.contains_key(&Yaml::String("bindery-data".into())));
    assert!(named.contains_key(&Yaml::String("postgres-data".into())));

    // The direct database URL: the postgres service itself, its user and database.
    let env = &bindery["environment"];
    let url = env["DATABASE_URL"].as_str().expect("DATABASE_URL");
    let pg = &postgres["environment"];
    let user = pg["POSTGRES_USER"].as_str().expect("POSTGRES_USER");
    let db = pg["POSTGRES_DB"].as_str().expect("POSTGRES_DB");
    assert!(
        url.starts_with(&format!("postgres://{user}:"))
            && url.ends_with(&format!("@postgres:5432/{db}")),
        "{url}"
    );
    assert_eq!(migrate["environment"], bindery["environment"]);
    assert!(env["BINDERY_ADMIN_TOKEN"].as_str().is_some());
    for (key, _) in env.as_hash().expect("environment") {
        let key = key.as_str().expect("a name");
        assert!(
            known_variable(key),
            "docker-compose.yml sets {key}, which Bindery does not read"
        );
    }
    let grace = bindery["stop_grace_period"]
        .as_str()
        .expect("stop_grace_period");
    let seconds: u64 = grace.trim_end_matches('s').parse().expect("seconds");
    assert!(seconds > 25, "longer than SHUTDOWN_TIMEOUT: {grace}");

    // .env.example names what the file asks for.
    let example = read(".env.example");
    for needed in ["POSTGRES_PASSWORD=", "BINDERY_ADMIN_TOKEN="] {
        assert!(example.lines().any(|l| l.starts_with(needed)), "{needed}");
    }
}

#[test]
fn dokkus_app_json_checks_readyz() {
    let app = json_file("docs/deploy/dokku/app.json");
    let checks = app["healthchecks"]["web"].as_array().expect("web checks");
    assert!(checks.iter().any(|c| c["path"] == "/readyz"), "{checks:?}");
}

/// Whether Bindery reads `name` (a variable of its own, or one a host sets that it uses).
fn known_variable(name: &str) -> bool {
    bindery::config::VARIABLES.iter().any(|v| v.name == name)
}

/// The same words, as `dokku run APP …`, `railway run …` or `docker run IMAGE …` would hand
/// them over, each to its subcommand.
#[test]
fn one_off_commands_run_with_or_without_the_program_name() {
    for line in [
        "bindery token list",
        "token list",
        "/usr/local/bin/bindery token list",
        "./target/release/bindery token list",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = command(dir.path())
            .args(line.split_whitespace())
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{line:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(listed.starts_with("NAME"), "{line:?}: {listed}");
    }
    // And a command line that is no command still says so, with clap's usage error.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .env_clear()
        .args(["bindery", "bindery", "migrate"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}
