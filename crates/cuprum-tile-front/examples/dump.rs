//! Prints the tile IR of a module read from a file (for looking at what the front end makes).
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: dump <file.rs>");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let module: syn::ItemMod = match syn::parse_str(&text) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    match cuprum_tile_front::compile_module(&module) {
        Ok(m) => print!("{}", cuprum_tile_ir::print_module(&m)),
        Err(e) => {
            for e in e {
                let s = e.span().start();
                eprintln!("{path}:{}:{}: {e}", s.line, s.column + 1);
            }
            std::process::exit(1);
        }
    }
}
