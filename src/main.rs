fn main() {
    std::process::exit(opentiger::cli::main());
}
