# Composite flowops with parameters, nested, with iters.
set $dir=/tmp
set $io=8k
define fileset name=a,path=$dir,size=16k,entries=100,dirwidth=10,prealloc=80
define fileset name=b,path=$dir,size=16k,entries=100,dirwidth=10,prealloc=80
define flowop name=readone, $fs
{
  flowop openfile name=open,filesetname=$fs,fd=1
  flowop readwholefile name=readall,fd=1,iosize=$io
  flowop closefile name=close,fd=1
}
define flowop name=churn, $set, $reads
{
  flowop createfile name=create,filesetname=$set,fd=2
  flowop appendfilerand name=append,iosize=$io,fd=2
  flowop closefile name=close2,fd=2
  flowop readone name=inner, iters=$reads, $fs=$set
  flowop deletefile name=delete,filesetname=$set
}
define process name=p
{
  thread name=ta
  {
    flowop churn name=ca, iters=1, $reads=3, $set=a
  }
  thread name=tb
  {
    flowop churn name=cb, iters=2, $reads=1, $set=b
  }
}
run 1
