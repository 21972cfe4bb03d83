fn main() -> std::process::ExitCode {
    wattcounts::cli::main()
}
