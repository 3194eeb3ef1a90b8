# Multi-line statements, arithmetic, a variable as a fileset name, define file, every fileset
# attribute, whole-file I/O on a define file, and the run commands fsage accepts.
set $dir=/tmp
set $n = 10
set $per = 4
set $total = $n * $per + 2 - 2
set $setname = data
debug 1
define fileset name=$setname,
               path=$dir,
               size=8k,
               entries=$total,
               dirwidth=8,
               dirgamma=1500,
               prealloc=50,
               paralloc,
               trusttree,
               reuse=false,
               readonly=false,
               cached=false
define file name=single,path=$dir,size=64k,prealloc,reuse
define file name=copy,path=$dir,size=64k,prealloc
define process name=p,
               instances=1
{
  thread name=t,
         memsize=1m,
         instances=2
  {
    flowop openfile name=o1,filesetname=single,fd=1
    flowop readwholefile name=rwf,fd=1,iosize=16k
    flowop openfile name=o2,filesetname=copy,fd=2
    flowop writewholefile name=wwf,fd=2,srcfd=1,iosize=16k
    flowop closefile name=c1,fd=1
    flowop closefile name=c2,fd=2
    flowop createfile name=cr,filesetname=$setname,fd=3
    flowop appendfile name=ap,fd=3,iosize=4k
    flowop closefile name=c3,fd=3
    flowop deletefile name=del,filesetname=$setname
  }
}
echo "multiline loaded"
psrun -10 1
