//! The `.f` parser: every built-in, a user file with each supported construct, and bad files
//! refused with file:line and the keyword.

use fsage_workload::{DataOp, FileOp, FlowopKind, SizeDist, Workload, BUILTINS};

#[test]
fn every_builtin_parses_with_its_published_parameters() {
    for (name, _, _) in BUILTINS {
        let w = Workload::builtin(name).unwrap();
        assert_eq!(w.model().run_secs, Some(60), "{name}");
        // Printing and parsing again gives the same model.
        let again = Workload::parse(&w.to_f_text(), name).unwrap();
        assert_eq!(again.model(), w.model(), "{name}");
    }
    let fs = Workload::builtin("fileserver").unwrap();
    let m = fs.model();
    let b = &m.filesets[0];
    assert_eq!((b.entries, b.dirwidth, b.prealloc), (10_000, 20, 80));
    assert_eq!(
        b.size,
        SizeDist::Gamma {
            mean: 131072.0,
            shape: 1.5
        }
    );
    assert_eq!(m.threads[0].instances, 50);
    assert_eq!(m.threads[0].flowops.len(), 11);
    assert_eq!(m.threads[0].flowops[1].iosize, Some(1 << 20));
    assert_eq!(m.threads[0].flowops[4].iosize, Some(16 << 10));

    let vm = Workload::builtin("varmail").unwrap();
    assert_eq!(vm.model().threads[0].instances, 16);
    assert_eq!(vm.model().filesets[0].entries, 1000);
    let fsyncs = vm.model().threads[0]
        .flowops
        .iter()
        .filter(|f| f.kind == FlowopKind::File(FileOp::Fsync))
        .count();
    assert_eq!(fsyncs, 2);

    let ws = Workload::builtin("webserver").unwrap();
    let m = ws.model();
    assert_eq!(m.threads[0].instances, 100);
    assert_eq!(m.filesets.len(), 2);
    assert!(m.filesets[0].readonly);
    assert_eq!(m.filesets[1].entries, 1);
    assert_eq!(m.filesets[1].prealloc, 100);
    let reads = m.threads[0]
        .flowops
        .iter()
        .filter(|f| f.kind == FlowopKind::Data(DataOp::ReadWholeFile))
        .count();
    assert_eq!(reads, 10);
    assert_eq!(
        m.threads[0].flowops.last().unwrap().kind,
        FlowopKind::Data(DataOp::AppendFileRand)
    );

    let wp = Workload::builtin("webproxy").unwrap();
    let m = wp.model();
    assert_eq!(
        (m.filesets[0].entries, m.threads[0].instances),
        (10_000, 100)
    );
    let reads = m.threads[0]
        .flowops
        .iter()
        .filter(|f| f.kind == FlowopKind::Data(DataOp::ReadWholeFile))
        .count();
    assert_eq!(reads, 5);
}

#[test]
fn set_overrides_a_variable_and_show_prints_it() {
    let w = Workload::builtin("fileserver")
        .unwrap()
        .with_vars(&[("nfiles", "50000"), ("iosize", "64k")])
        .unwrap();
    assert_eq!(w.model().filesets[0].entries, 50_000);
    assert_eq!(w.model().threads[0].flowops[1].iosize, Some(65536));
    let text = w.to_f_text();
    assert!(text.contains("set $nfiles=50000\n"), "{text}");
    let err = Workload::builtin("fileserver")
        .unwrap()
        .with_vars(&[("nosuch", "1")])
        .unwrap_err();
    assert!(err.to_string().contains("no variable $nosuch"), "{err}");
    let err = Workload::builtin("fileserver")
        .unwrap()
        .with_vars(&[("nfiles", "lots")])
        .unwrap_err();
    assert!(err.to_string().starts_with("fileserver:"), "{err}");
    assert!(err.to_string().contains("entries"), "{err}");
}

const USER: &str = r#"
# Every construct fsage reads.
set $dir=/tmp
set $n=200
set $w=10
set $sz=cvar(type=cvar-gamma,parameters=mean:8k;gamma:2)
set $io=4k
echo "a user workload"

define fileset name=data,path=$dir,size=$sz,entries=$n,dirwidth=$w,prealloc=60,reuse
define fileset name=logs,path=$dir,size=64k,entries=2,dirwidth=$w,prealloc,readonly=false

define process name=p,instances=2
{
  thread name=worker,memsize=1m,instances=3
  {
    flowop createfile name=c,filesetname=data,fd=1
    flowop writewholefile name=ww,srcfd=1,fd=1,iosize=$io,dsync
    flowop write name=w1,fd=1,iosize=$io,random
    flowop fsync name=s,fd=1
    flowop closefile name=cl,fd=1
    flowop openfile name=o,filesetname=data,fd=3
    flowop read name=r,fd=3,iosize=$io,random,iters=4
    flowop read name=rs,fd=3,iosize=$io
    flowop readwholefile name=rw,fd=3,iosize=$io
    flowop appendfile name=a,fd=3,iosize=1k
    flowop closefile name=cl2,fd=3
    flowop statfile name=st,filesetname=data
    flowop deletefile name=d,filesetname=data
    flowop appendfilerand name=log,filesetname=logs,fd=5,iosize=2k
  }
  thread name=other,instances=1 {
    flowop statfile name=st2,filesetname=logs
  }
}

run 5
"#;

#[test]
fn a_user_file_with_every_construct() {
    let w = Workload::parse(USER, "user.f").unwrap();
    let m = w.model();
    assert_eq!(m.run_secs, Some(5));
    assert_eq!(m.filesets.len(), 2);
    let d = &m.filesets[0];
    assert_eq!(
        (d.entries, d.dirwidth, d.prealloc, d.reuse),
        (200, 10, 60, true)
    );
    assert_eq!(
        d.size,
        SizeDist::Gamma {
            mean: 8192.0,
            shape: 2.0
        }
    );
    assert_eq!(m.filesets[1].size, SizeDist::Fixed(65536));
    assert_eq!(m.filesets[1].prealloc, 100);
    assert!(!m.filesets[1].readonly);
    // Process instances multiply thread instances.
    assert_eq!(m.threads[0].instances, 6);
    assert_eq!(m.threads[1].instances, 2);
    let f = &m.threads[0].flowops;
    assert_eq!(f.len(), 14);
    assert!(f[1].dsync && f[1].srcfd == Some(1));
    assert!(f[2].random);
    assert_eq!(f[6].iters, 4);
    assert_eq!(f[9].iosize, Some(1024));
    assert_eq!(f[13].fileset, Some(1));
    assert_eq!(f[13].fd, 5);
}

fn parse_err(text: &str) -> String {
    Workload::parse(text, "bad.f").unwrap_err().to_string()
}

/// A process of no instances is refused at its attribute (it ran its threads once); a file that
/// is not UTF-8 is bad input at the line of its first bad byte, not a failed read.
#[test]
fn zero_process_instances_and_non_utf8_files_are_refused() {
    let e = parse_err(
        "define process name=p,\n  instances=0\n{\n thread name=t {\n  flowop hog name=h,value=1\n }\n}\n",
    );
    assert!(
        e.starts_with("bad.f:2:") && e.contains("process instances must be 1 to 10000"),
        "{e}"
    );
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("latin1.f");
    std::fs::write(&f, b"set $a=1\n# caf\xe9\nrun 1\n").unwrap();
    let e = Workload::from_file(&f).unwrap_err();
    assert_eq!(fsage_sys::Blamed::blame(&e), fsage_sys::Blame::Input);
    let e = e.to_string();
    assert!(
        e.ends_with("latin1.f:2: not UTF-8 text (a workload file is Filebench's text language)"),
        "{e}"
    );
}

#[test]
fn bad_files_are_refused_with_file_line_and_keyword() {
    let base = "set $n=10\ndefine fileset name=f,size=1k,entries=$n,prealloc=50\n";
    let thread = |flowops: &str| {
        format!("{base}define process name=p {{\n thread name=t {{\n{flowops}\n }}\n}}\nrun 1\n")
    };
    // Unknown flowop (line 5).
    let e = parse_err(&thread(
        "  flowop openfile name=o,filesetname=f\n  flowop frobnicate name=x",
    ));
    assert!(
        e.starts_with("bad.f:6:") && e.contains("unknown flowop \"frobnicate\""),
        "{e}"
    );
    // Undefined variable.
    let e = parse_err("set $a=1\ndefine fileset name=f,size=$nosuch,entries=3\n");
    assert!(
        e.starts_with("bad.f:2:") && e.contains("undefined variable $nosuch"),
        "{e}"
    );
    // Bad size.
    let e = parse_err(&thread("  flowop read name=r,fd=1,iosize=12q"));
    assert!(
        e.starts_with("bad.f:5:") && e.contains("iosize") && e.contains("12q"),
        "{e}"
    );
    let e = parse_err("define fileset name=f,size=huge,entries=3\n");
    assert!(
        e.starts_with("bad.f:1:") && e.contains("bad size \"huge\""),
        "{e}"
    );
    // Unsupported keywords and attributes.
    let e = parse_err("set $a=1\n\ncreate files\n");
    assert!(e.starts_with("bad.f:3:") && e.contains("\"create\""), "{e}");
    // An unbalanced `}` says so, at its line.
    let e = parse_err(&format!("{base}}}\n"));
    assert!(
        e.starts_with("bad.f:3:") && e.contains("unbalanced `}`"),
        "{e}"
    );
    let e = parse_err(&thread("  flowop read name=r,fd=1,iosize=4k,lathist=1"));
    assert!(
        e.starts_with("bad.f:5:") && e.contains("\"lathist\""),
        "{e}"
    );
    let e = parse_err(&thread("  flowop openfile name=o,filesetname=nosuch"));
    assert!(
        e.starts_with("bad.f:5:") && e.contains("undefined fileset \"nosuch\""),
        "{e}"
    );
    let e = parse_err("set $s=cvar(type=cvar-zipf,parameters=mean:1)\n");
    assert!(e.starts_with("bad.f:1:") && e.contains("cvar-zipf"), "{e}");
    let e = parse_err(&format!("{base}system \"rm -rf /\"\n"));
    assert!(e.starts_with("bad.f:3:") && e.contains("system"), "{e}");
    let e = parse_err(&thread("  flowop sempost name=p,value=1,target=nosuch"));
    assert!(
        e.starts_with("bad.f:5:") && e.contains("target \"nosuch\""),
        "{e}"
    );
    let e = parse_err(&thread("  flowop finishoncount name=f"));
    assert!(e.contains("needs value="), "{e}");
    let e = parse_err("set $a = $b * 2\n");
    assert!(
        e.starts_with("bad.f:1:") && e.contains("undefined variable $b"),
        "{e}"
    );
    let e = parse_err("set $a = big * 2\n");
    assert!(
        e.starts_with("bad.f:1:") && e.contains("needs two numbers"),
        "{e}"
    );
    let e = parse_err(&thread("  flowop read name=r,fd=1"));
    assert!(e.contains("needs iosize"), "{e}");
    let e = parse_err("define fileset name=f,size=1k,entries=3,prealloc=150\n");
    assert!(e.starts_with("bad.f:1:") && e.contains("prealloc"), "{e}");
}
