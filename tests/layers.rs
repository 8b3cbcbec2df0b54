//! The shape of src/ (docs/architecture.md): no import cycle between the top-level
//! modules, the environment read in at most three files, and every `unsafe` explained
//! (a SAFETY comment on each block, a `# Safety` section on each unsafe fn).
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

/// Whether the `unsafe {` on line `i` of `lines` has a `SAFETY` comment: on its line, on
/// one of the 3 lines above it, or in a comment block that ends on one of them.
fn has_safety_comment(lines: &[&str], i: usize) -> bool {
    if lines[i].contains("SAFETY") {
        return true;
    }
    for k in 1..=3.min(i) {
        let mut j = i - k;
        if lines[j].contains("SAFETY") {
            return true;
        }
        while lines[j].trim_start().starts_with("//") {
            if lines[j].contains("SAFETY") {
                return true;
            }
            if j == 0 {
                break;
            }
            j -= 1;
        }
    }
    false
}

/// The lines before line `i` that belong to its item: doc comments, comments and
/// attributes, up to a blank line or the end of the previous item or statement.
fn item_head<'a>(lines: &[&'a str], i: usize) -> Vec<&'a str> {
    let mut head = Vec::new();
    let mut j = i;
    while j > 0 {
        j -= 1;
        let t = lines[j].trim();
        let comment = t.starts_with("//");
        if t.is_empty() || (!comment && (t.ends_with('}') || t.ends_with(';') || t.ends_with('{')))
        {
            break;
        }
        head.push(t);
    }
    head
}

#[test]
fn every_unsafe_is_explained() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut missing = Vec::new();
    let (mut blocks, mut fns) = (0, 0);
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let name = f.strip_prefix(&src).unwrap().display().to_string();
        for (i, l) in lines.iter().enumerate() {
            let code = l.find("//").map_or(*l, |k| &l[..k]);
            if code.contains("unsafe {") {
                blocks += 1;
                if !has_safety_comment(&lines, i) {
                    missing.push(format!(
                        "{name}:{}: unsafe block without a SAFETY comment",
                        i + 1
                    ));
                }
            }
            // (the `extern "C"` entry points that ffi's macros generate are exempt)
            if code.contains("unsafe fn ") && !code.contains("extern \"C\"") {
                fns += 1;
                if !item_head(&lines, i)
                    .iter()
                    .any(|h| h.starts_with("///") && h.contains("# Safety"))
                {
                    missing.push(format!(
                        "{name}:{}: unsafe fn without a # Safety section",
                        i + 1
                    ));
                }
            }
        }
    }
    println!("src: {blocks} unsafe blocks, {fns} unsafe fns");
    assert!(
        missing.is_empty(),
        "unexplained unsafe code:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_unsafe_check_sees_comments_and_docs() {
    let lines = [
        "// SAFETY: a reason",
        "// that goes on",
        "// and on",
        "let x = 1;",
        "unsafe { f() }",
        "",
        "unsafe { g() }",
    ];
    assert!(has_safety_comment(&lines, 4));
    assert!(!has_safety_comment(&lines, 6));
    let lines = [
        "}",
        "/// Does it.",
        "///",
        "/// # Safety",
        "/// The caller's part.",
        "#[inline]",
        "pub unsafe fn f() {}",
        "/// No section.",
        "unsafe fn g() {}",
    ];
    assert!(item_head(&lines, 6).iter().any(|h| h.contains("# Safety")));
    assert!(!item_head(&lines, 8).iter().any(|h| h.contains("# Safety")));
}
