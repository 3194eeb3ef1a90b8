# A small user workload in Filebench's language (read by the workload engine).
set $dir=/tmp
set $nfiles=200
set $meanfilesize=16k
define fileset name=small,path=$dir,size=$meanfilesize,entries=$nfiles,dirwidth=20,prealloc=80
define process name=worker,instances=1
{
  thread name=w,memsize=10m,instances=4
  {
    flowop openfile name=open,filesetname=small,fd=1
    flowop readwholefile name=read,fd=1,iosize=1m
    flowop closefile name=close,fd=1
  }
}
run 10
