# Semaphores, block/wakeup, hog, delay, asynchronous writes, working sets, opennext and a
# deletefile by fd.
set $dir=/tmp
set $nshadows=3
define fileset name=data,path=$dir,size=1m,entries=4,dirwidth=4,prealloc=100,reuse
define fileset name=churn,path=$dir,size=4k,entries=40,dirwidth=10,prealloc=50
define process name=writer
{
  thread name=lg
  {
    flowop aiowrite name=aw,filesetname=data,iosize=8k,random,workingset=256k,iters=4,opennext
    flowop aiowait name=awt
    flowop semblock name=blk,value=4,highwater=16
  }
}
define process name=shadow,instances=$nshadows
{
  thread name=sh
  {
    flowop read name=rd,filesetname=data,iosize=8k,random,workingset=512k,fd=3
    flowop hog name=hg,value=1000
    flowop sempost name=post,value=1,target=blk,blocking
  }
}
define process name=pingpong
{
  thread name=a
  {
    flowop openfile name=op,filesetname=churn,fd=1
    flowop closefile name=cl,fd=1
    flowop deletefile name=delfd,fd=1
    flowop createfile name=cr,filesetname=churn,fd=2
    flowop closefile name=cl2,fd=2
    flowop wakeup name=wk,target=bk
    flowop delay name=dl,value=0
  }
  thread name=b
  {
    flowop block name=bk
    flowop statfile name=st,filesetname=churn
  }
}
run 1
