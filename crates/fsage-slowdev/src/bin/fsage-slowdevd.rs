//! The slow device's daemon on its own (`fsage dev serve DIR` does the same): serves the device
//! whose registry directory is DIR. Started by `SlowDevice::create`, never by hand.

fn main() -> std::process::ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: fsage-slowdevd DEVICE_DIR (started by fsage dev create)");
        return std::process::ExitCode::from(2);
    };
    match fsage_slowdev::serve(std::path::Path::new(&dir)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fsage-slowdevd: error: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
