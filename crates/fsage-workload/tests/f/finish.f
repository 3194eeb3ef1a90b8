# finishoncount and finishonbytes (with a target) end the run when reached.
set $dir=/tmp
define file name=log,path=$dir,size=0,prealloc
define process name=p
{
  thread name=w
  {
    flowop appendfile name=app,filename=log,iosize=4k,dsync=false
    flowop finishonbytes name=fb,value=1m,target=app
  }
  thread name=c
  {
    flowop statfile name=st,filesetname=log
    flowop finishoncount name=fc,value=1000000000
  }
}
run 30
