# An event generator and every rate limit.
set $dir=/tmp
set $rate=200
eventgen rate=$rate
define fileset name=f,path=$dir,size=32k,entries=50,dirwidth=10,prealloc=100
define process name=p
{
  thread name=ev
  {
    flowop statfile name=st1,filesetname=f
    flowop eventlimit name=el
  }
  thread name=ops
  {
    flowop statfile name=st2,filesetname=f
    flowop opslimit name=ol
  }
  thread name=iops
  {
    flowop openfile name=o,filesetname=f,fd=1
    flowop read name=rd,fd=1,iosize=4k
    flowop closefile name=c,fd=1
    flowop iopslimit name=il,target=rd
  }
  thread name=bw
  {
    flowop read name=big,filesetname=f,iosize=32k,fd=2
    flowop bwlimit name=bl,target=big
  }
}
run 1
