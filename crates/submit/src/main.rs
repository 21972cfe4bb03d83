fn main() -> std::process::ExitCode {
    wattcounts_submit::cli::main()
}
