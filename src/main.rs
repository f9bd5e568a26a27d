fn main() -> std::process::ExitCode {
    bindery::cli::main()
}
