//! The shape of src/ (docs/architecture.md): no import cycle between the top-level
//! modules, and the environment read in at most three files.
//!
//! An import is any `crate::NAME` path in a module's code (comments left out), `use`
//! lines and paths inside expressions alike.
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<_> = fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for e in entries {
            rust_files(&e, out);
        }
    } else if p.extension().is_some_and(|x| x == "rs") {
        out.push(p.to_path_buf());
    }
}

/// The code of a file without its comments (line comments and doc comments).
fn code(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Top-level module -> the top-level modules its code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeMap::new();
    for e in fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib"
            || name == "bin"
            || (p.is_file() && p.extension().is_none_or(|x| x != "rs"))
        {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&p, &mut files);
        modules.insert(name, files);
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut g = BTreeMap::new();
    for (m, files) in &modules {
        let mut deps = BTreeSet::new();
        for f in files {
            let text = code(f);
            let mut rest = text.as_str();
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + 7..];
                let dep: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if names.contains(&dep) && dep != *m {
                    deps.insert(dep);
                }
            }
        }
        g.insert(m.clone(), deps);
    }
    g
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in &t.g[v] {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let g = graph();
    assert!(g.len() > 10, "found only {} modules in src/", g.len());
    for (m, deps) in &g {
        println!(
            "{m} -> {}",
            deps.iter().cloned().collect::<Vec<_>>().join(" ")
        );
    }
    let c = cycles(&g);
    assert!(
        c.is_empty(),
        "import cycles between top-level modules of src: {c:?}"
    );
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g = BTreeMap::new();
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    g.insert("a".to_string(), set(&["b"]));
    g.insert("b".to_string(), set(&["c"]));
    g.insert("c".to_string(), set(&["a"]));
    g.insert("d".to_string(), set(&["a"]));
    assert_eq!(cycles(&g), vec![vec!["a", "b", "c"]]);
    g.insert("c".to_string(), set(&[]));
    assert!(cycles(&g).is_empty());
}

#[test]
fn environment_read_in_at_most_three_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let readers: Vec<String> = files
        .iter()
        .filter(|f| {
            let c = code(f);
            c.contains("env::var") || c.contains("var_os(") || c.contains("getenv")
        })
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    println!("files of src that read the environment: {readers:?}");
    assert!(
        readers.len() <= 3,
        "the environment is read in {} files of src (settings.rs, the launcher and the \
         wrappers only): {readers:?}",
        readers.len()
    );
}
