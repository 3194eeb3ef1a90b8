//! Parses each `.f` file given on the command line and prints `ok` or the error: how the
//! README's table of Filebench's own workload files was made.

fn main() {
    let mut bad = 0;
    for path in std::env::args().skip(1) {
        match fsage_workload::Workload::from_file(std::path::Path::new(&path)) {
            Ok(w) => println!(
                "ok    {path} ({} filesets, {} threads)",
                w.model().filesets.len(),
                w.model().threads.len()
            ),
            Err(e) => {
                bad += 1;
                println!("error {e}")
            }
        }
    }
    std::process::exit(i32::from(bad > 0));
}
