//! Compiles every `#[cutile::module]` of the Rust files given, reporting what fails (a
//! survey of unsupported constructs; never part of the test suite).
fn main() {
    let mut ok = 0;
    let mut failed = 0;
    for path in std::env::args().skip(1) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        for item in file.items {
            let syn::Item::Mod(m) = item else { continue };
            let is_tile = m.attrs.iter().any(|a| {
                a.path()
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "module")
            });
            if !is_tile || m.content.is_none() {
                continue;
            }
            let r = std::panic::catch_unwind(|| cuprum_tile_front::compile_module(&m));
            match r {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => {
                    failed += 1;
                    for e in e {
                        let s = e.span().start();
                        println!("{path}:{}:{}: {e}", s.line, s.column + 1);
                    }
                }
                Err(_) => println!("{path}: PANIC in module {}", m.ident),
            }
        }
    }
    println!("{ok} modules compiled, {failed} failed");
}
